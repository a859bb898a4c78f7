//! Decoding server frames from a receive buffer without copying: strings,
//! data and child names in the results borrow the frame's payload.
//!
//! Every function takes a payload as [`frame::split`](super::frame::split)
//! returns it and fails with a [`DecodeError`] on anything malformed or
//! truncated. Bytes after the fields a record defines are ignored, as the
//! Java client does, so newer servers that append fields still work.

use super::error::DecodeError;
use super::jute::Reader;
use super::records::{ConnectResponse, Notification, ReplyHeader};
use super::response::{check_result, Expect, MultiResults, Response};
use crate::ZkError;

/// The server's answer to the connect request (the first frame it sends).
pub fn connect_response(payload: &[u8]) -> Result<ConnectResponse<'_>, DecodeError> {
    let mut r = Reader::new(payload);
    let protocol_version = r.int()?;
    let timeout_ms = r.int()?;
    let session_id = r.long()?;
    let password = r.buffer()?;
    // The read-only byte is outside the jute record and optional.
    let read_only = r.rest().first().map(|b| *b != 0);
    Ok(ConnectResponse {
        protocol_version,
        timeout_ms,
        session_id,
        password,
        read_only,
    })
}

/// The reply header of any later frame, and the body after it.
pub fn reply_header(payload: &[u8]) -> Result<(ReplyHeader, &[u8]), DecodeError> {
    let mut r = Reader::new(payload);
    let header = ReplyHeader {
        xid: r.int()?,
        zxid: r.long()?,
        err: r.int()?,
    };
    Ok((header, r.rest()))
}

/// The body of a watch notification (a frame whose header has xid -1).
pub fn notification(body: &[u8]) -> Result<Notification<'_>, DecodeError> {
    let mut r = Reader::new(body);
    Ok(Notification {
        event_type: r.int()?,
        state: r.int()?,
        path: r.ustring()?,
    })
}

/// The body of a reply to a request whose answer holds `expect`, given the
/// error code of its header.
///
/// A non-zero `err` gives [`Response::Error`] whatever follows: the server
/// sometimes appends a body to an error, which is not to be read.
pub fn response(expect: Expect, err: i32, body: &[u8]) -> Result<Response<'_>, DecodeError> {
    response_with(expect, err, body, Some(extended))
}

/// Decodes the answers only `create2` and `multi` get.
pub(crate) type Extended = for<'a> fn(Expect, &'a [u8]) -> Result<Response<'a>, DecodeError>;

/// [`response`], with the decoder of `create2`'s and `multi`'s answers
/// passed in rather than called: a session hands it over only from
/// [`Session::send`](super::Session::send), the one way to send those, so
/// a program that never calls it (the embedded driver) never refers to
/// the decoder, and it is not linked. `None` with such an
/// answer expected is a mismatch.
pub(crate) fn response_with(
    expect: Expect,
    err: i32,
    body: &[u8],
    extended: Option<Extended>,
) -> Result<Response<'_>, DecodeError> {
    if let Some(e) = ZkError::from_code(err) {
        return Ok(Response::Error(e));
    }
    let mut r = Reader::new(body);
    Ok(match expect {
        Expect::Create => Response::Created { path: r.ustring()? },
        Expect::Delete => Response::Deleted,
        Expect::GetData => Response::Data {
            data: r.buffer()?,
            stat: r.stat()?,
        },
        // One read for the two answers that are a `Stat` alone: 40 B less
        // herdless code in the STM32 firmware (scripts/firmware-size.sh).
        Expect::Exists | Expect::SetData => {
            let stat = r.stat()?;
            if expect == Expect::Exists {
                Response::Exists { stat }
            } else {
                Response::DataSet { stat }
            }
        }
        Expect::GetChildren => Response::Children(r.names()?),
        Expect::Sync => {
            r.ustring()?;
            Response::Synced
        }
        Expect::Check => check_result(&mut r)?,
        Expect::Create2 | Expect::Multi { .. } => match extended {
            Some(decode) => return decode(expect, body),
            None => return Err(DecodeError::MultiMismatch),
        },
    })
}

/// The answers of `create2` and `multi`, as [`Extended`].
pub(crate) fn extended(expect: Expect, body: &[u8]) -> Result<Response<'_>, DecodeError> {
    let mut r = Reader::new(body);
    Ok(match expect {
        Expect::Create2 => Response::Created2 {
            path: r.ustring()?,
            stat: r.stat()?,
        },
        Expect::Multi { ops } => Response::Multi(MultiResults::parse(body, ops)?),
        _ => return Err(DecodeError::MultiMismatch),
    })
}

/// A whole reply frame (header and body) to a request whose answer holds
/// `expect`.
pub fn reply(expect: Expect, payload: &[u8]) -> Result<(ReplyHeader, Response<'_>), DecodeError> {
    let (header, body) = reply_header(payload)?;
    Ok((header, response(expect, header.err, body)?))
}
