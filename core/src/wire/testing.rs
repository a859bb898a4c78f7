//! Frames as a server writes them, for the unit tests of the decoders and
//! the session.
#![allow(clippy::indexing_slicing)]

extern crate std;

use std::vec::Vec;

use super::error::EncodeError;
use super::jute::{frame, Writer, DEFAULT_MAX_FRAME};
use crate::Stat;

/// A whole frame whose payload `body` writes.
pub(crate) fn server_frame(body: impl Fn(&mut Writer<'_>) -> Result<(), EncodeError>) -> Vec<u8> {
    let mut buf = std::vec![0u8; 1 << 16];
    let n = frame(&mut buf, DEFAULT_MAX_FRAME, &body).unwrap();
    buf.truncate(n);
    buf
}

/// The payload of a frame (without its length prefix).
pub(crate) fn payload(frame: &[u8]) -> &[u8] {
    &frame[4..]
}

/// A connect response with the read-only byte.
pub(crate) fn connect_response(
    timeout_ms: i32,
    session_id: i64,
    password: &[u8],
    read_only: bool,
) -> Vec<u8> {
    server_frame(|w| {
        w.int(0);
        w.int(timeout_ms);
        w.long(session_id);
        w.buffer(password)?;
        w.boolean(read_only);
        Ok(())
    })
}

/// A reply header followed by what `body` writes.
pub(crate) fn reply(
    xid: i32,
    zxid: i64,
    err: i32,
    body: impl Fn(&mut Writer<'_>) -> Result<(), EncodeError>,
) -> Vec<u8> {
    server_frame(|w| {
        w.int(xid);
        w.long(zxid);
        w.int(err);
        body(w)
    })
}

/// A reply with no body.
pub(crate) fn empty_reply(xid: i32, zxid: i64, err: i32) -> Vec<u8> {
    reply(xid, zxid, err, |_| Ok(()))
}

/// A watch notification as a 3.8 server sends it.
pub(crate) fn notification(event_type: i32, path: &str) -> Vec<u8> {
    reply(-1, -1, 0, |w| {
        w.int(event_type);
        w.int(3);
        w.ustring(path)
    })
}

/// A stat whose every field differs.
pub(crate) fn sample_stat() -> Stat {
    Stat {
        czxid: 1,
        mzxid: 2,
        ctime: 3,
        mtime: 4,
        version: 5,
        cversion: 6,
        aversion: 7,
        ephemeral_owner: 8,
        data_length: 9,
        num_children: 10,
        pzxid: 11,
    }
}
