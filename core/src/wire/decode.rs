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
use super::response::{Expect, MultiResult, MultiResults, Response};
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
    if let Some(e) = ZkError::from_code(err) {
        return Ok(Response::Error(e));
    }
    let mut r = Reader::new(body);
    Ok(match expect {
        Expect::Create => Response::Created { path: r.ustring()? },
        Expect::Create2 => Response::Created2 {
            path: r.ustring()?,
            stat: r.stat()?,
        },
        Expect::Delete => Response::Deleted,
        Expect::Exists => Response::Exists { stat: r.stat()? },
        Expect::GetData => Response::Data {
            data: r.buffer()?,
            stat: r.stat()?,
        },
        Expect::SetData => Response::DataSet { stat: r.stat()? },
        Expect::GetChildren => Response::Children(r.names()?),
        Expect::Sync => {
            r.ustring()?;
            Response::Synced
        }
        Expect::Check => match MultiResults::parse(body, 1)?.iter().next() {
            Some(MultiResult::Checked) => Response::Checked,
            Some(MultiResult::Error(e)) => Response::Error(e),
            Some(other) => return Err(unexpected(other)),
            None => return Err(DecodeError::MultiMismatch),
        },
        Expect::Multi { ops } => Response::Multi(MultiResults::parse(body, ops)?),
    })
}

/// A one-check multi answered with a result of another kind.
fn unexpected(result: MultiResult<'_>) -> DecodeError {
    match result {
        MultiResult::Created { .. } => DecodeError::UnexpectedMultiType(1),
        MultiResult::Created2 { .. } => DecodeError::UnexpectedMultiType(15),
        MultiResult::Deleted => DecodeError::UnexpectedMultiType(2),
        MultiResult::DataSet { .. } => DecodeError::UnexpectedMultiType(5),
        _ => DecodeError::MultiMismatch,
    }
}

/// A whole reply frame (header and body) to a request whose answer holds
/// `expect`.
pub fn reply(expect: Expect, payload: &[u8]) -> Result<(ReplyHeader, Response<'_>), DecodeError> {
    let (header, body) = reply_header(payload)?;
    Ok((header, response(expect, header.err, body)?))
}
