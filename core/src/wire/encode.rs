//! Encoding client frames into a caller's buffer.
//!
//! Every function writes one whole frame (length prefix included) and
//! returns its length, or fails with the buffer untouched:
//! [`EncodeError::BufferTooSmall`] says how many bytes the frame needs.
//! Frames longer than the server's default `jute.maxbuffer`
//! ([`DEFAULT_MAX_FRAME`]) are refused as [`EncodeError::TooLong`], since
//! the server would close the connection on them.

use super::error::EncodeError;
use super::jute::{frame, Writer, DEFAULT_MAX_FRAME};
use super::op::{request_opcode, MultiOp, Op, WatchClass};
use super::opcode::{op, xid};
use super::records::ConnectRequest;
use crate::Request;
use crate::{Acl, CreateMode, Version};

/// The `ConnectRequest` that opens (or resumes) a session, followed by the
/// read-only byte.
pub fn connect(req: &ConnectRequest<'_>, buf: &mut [u8]) -> Result<usize, EncodeError> {
    frame(buf, DEFAULT_MAX_FRAME, &|w| {
        w.int(0); // protocol version
        w.long(req.last_zxid_seen);
        w.int(req.timeout_ms);
        w.long(req.session_id);
        w.buffer(req.password)?;
        w.boolean(req.read_only);
        Ok(())
    })
}

/// A ping (xid -2, no body).
pub fn ping(buf: &mut [u8]) -> Result<usize, EncodeError> {
    frame(buf, DEFAULT_MAX_FRAME, &|w| {
        header(w, xid::PING, op::PING);
        Ok(())
    })
}

/// `closeSession` with an ordinary xid; the server answers, then closes.
pub fn close_session(xid: i32, buf: &mut [u8]) -> Result<usize, EncodeError> {
    frame(buf, DEFAULT_MAX_FRAME, &|w| {
        header(w, xid, op::CLOSE_SESSION);
        Ok(())
    })
}

/// An `AuthPacket` (xid -4) adding `credential` under `scheme` to the
/// connection. Authentication is per connection: send it again after every
/// reconnect.
pub fn auth(scheme: &str, credential: &[u8], buf: &mut [u8]) -> Result<usize, EncodeError> {
    frame(buf, DEFAULT_MAX_FRAME, &|w| {
        header(w, xid::AUTH, op::AUTH);
        w.int(0); // type
        w.ustring(scheme)?;
        w.buffer(credential)
    })
}

/// Digest authentication with `user:password` (sent in plain text; the
/// server hashes it).
pub fn digest_auth(user_password: &str, buf: &mut [u8]) -> Result<usize, EncodeError> {
    auth("digest", user_password.as_bytes(), buf)
}

/// `setWatches` (xid -8): re-registers watches after the session was
/// resumed on a new connection. Watches whose node changed since
/// `relative_zxid` (the last zxid seen) fire at once instead.
pub fn set_watches(
    relative_zxid: i64,
    data: &[&str],
    exist: &[&str],
    child: &[&str],
    buf: &mut [u8],
) -> Result<usize, EncodeError> {
    set_watches_from(relative_zxid, &SliceLists { data, exist, child }, buf)
}

/// The three path lists of a `setWatches`, however they are stored.
pub(crate) trait WatchLists {
    /// Calls `f` with each path of the list of `class`, stopping at its
    /// first error.
    fn each(
        &self,
        class: WatchClass,
        f: &mut dyn FnMut(&str) -> Result<(), EncodeError>,
    ) -> Result<(), EncodeError>;
}

struct SliceLists<'s, 'a> {
    data: &'s [&'a str],
    exist: &'s [&'a str],
    child: &'s [&'a str],
}

impl WatchLists for SliceLists<'_, '_> {
    fn each(
        &self,
        class: WatchClass,
        f: &mut dyn FnMut(&str) -> Result<(), EncodeError>,
    ) -> Result<(), EncodeError> {
        self.list(class).iter().try_for_each(|p| f(p))
    }
}

impl<'a> SliceLists<'_, 'a> {
    fn list(&self, class: WatchClass) -> &[&'a str] {
        match class {
            WatchClass::Data => self.data,
            WatchClass::Exist => self.exist,
            WatchClass::Child => self.child,
        }
    }
}

pub(crate) fn set_watches_from(
    relative_zxid: i64,
    lists: &dyn WatchLists,
    buf: &mut [u8],
) -> Result<usize, EncodeError> {
    frame(buf, DEFAULT_MAX_FRAME, &|w| {
        header(w, xid::SET_WATCHES, op::SET_WATCHES);
        w.long(relative_zxid);
        // The record's order: data, exist, child.
        for class in [WatchClass::Data, WatchClass::Exist, WatchClass::Child] {
            // Counted by a first pass over the list rather than asked of
            // it, so that each store of paths walks its list one way only.
            let mut count = 0;
            lists.each(class, &mut |_| {
                count += 1;
                Ok(())
            })?;
            w.count(count)?;
            lists.each(class, &mut |path| w.ustring(path))?;
        }
        Ok(())
    })
}

/// The frame of `op` with request xid `xid` (a positive number the caller
/// allocates; a [`Session`](super::Session) does it for you).
pub fn request(xid: i32, op: &Op<'_>, buf: &mut [u8]) -> Result<usize, EncodeError> {
    if let Op::Multi([]) = op {
        return Err(EncodeError::EmptyMulti);
    }
    frame(buf, DEFAULT_MAX_FRAME, &|w| {
        header(w, xid, op.opcode());
        body(w, op)
    })
}

/// The frame of a recipe's `request`, as [`request`] writes it for
/// `Op::Request`, without `Op`'s other kinds: the embedded driver calls
/// this one, so that the code only `create2` and `multi` need stays out of
/// its firmware.
pub(crate) fn request_frame(
    xid: i32,
    request: &Request<'_>,
    buf: &mut [u8],
) -> Result<usize, EncodeError> {
    frame(buf, DEFAULT_MAX_FRAME, &|w| {
        header(w, xid, request_opcode(request));
        request_body(w, request)
    })
}

/// The size in bytes of the frame [`request`] would write.
pub fn request_len(op: &Op<'_>) -> Result<usize, EncodeError> {
    match request(0, op, &mut []) {
        Err(EncodeError::BufferTooSmall { needed, .. }) => Ok(needed),
        Err(e) => Err(e),
        Ok(n) => Ok(n),
    }
}

fn header(w: &mut Writer<'_>, xid: i32, opcode: i32) {
    w.int(xid);
    w.int(opcode);
}

fn body(w: &mut Writer<'_>, op: &Op<'_>) -> Result<(), EncodeError> {
    match *op {
        Op::Request(ref request) => request_body(w, request),
        Op::Create2 {
            path,
            data,
            acl,
            mode,
        } => create(w, path, data, acl, mode),
        Op::Multi(ops) => multi(w, ops),
    }
}

fn request_body(w: &mut Writer<'_>, request: &Request<'_>) -> Result<(), EncodeError> {
    match *request {
        Request::Create {
            path,
            data,
            acl,
            mode,
        } => create(w, path, data, acl, mode),
        Request::Delete { path, version } => path_version(w, path, version),
        Request::Exists { path, watch }
        | Request::GetData { path, watch }
        | Request::GetChildren { path, watch } => {
            w.ustring(path)?;
            w.boolean(watch);
            Ok(())
        }
        Request::SetData {
            path,
            data,
            version,
        } => set_data(w, path, data, version),
        Request::Sync { path } => w.ustring(path),
        // A multi of one check, written out rather than through `multi`,
        // whose other kinds a recipe never sends.
        Request::Check { path, version } => {
            multi_header(w, op::CHECK, false);
            path_version(w, path, version)?;
            multi_end(w);
            Ok(())
        }
    }
}

fn create(
    w: &mut Writer<'_>,
    path: &str,
    data: &[u8],
    acl: Acl<'_>,
    mode: CreateMode,
) -> Result<(), EncodeError> {
    w.ustring(path)?;
    w.buffer(data)?;
    w.count(acl.entries().len())?;
    for entry in acl.entries() {
        // The permission bits are a Java int; only the low five are used.
        w.int(entry.perms as i32);
        w.ustring(entry.scheme)?;
        w.ustring(entry.id)?;
    }
    w.int(mode.flags());
    Ok(())
}

fn path_version(w: &mut Writer<'_>, path: &str, version: Version) -> Result<(), EncodeError> {
    w.ustring(path)?;
    w.int(version.wire());
    Ok(())
}

fn set_data(
    w: &mut Writer<'_>,
    path: &str,
    data: &[u8],
    version: Version,
) -> Result<(), EncodeError> {
    w.ustring(path)?;
    w.buffer(data)?;
    w.int(version.wire());
    Ok(())
}

/// `MultiOperationRecord`: a header and a record per operation, then the
/// closing header; no count.
fn multi(w: &mut Writer<'_>, ops: &[MultiOp<'_>]) -> Result<(), EncodeError> {
    for sub in ops {
        let kind = match sub {
            MultiOp::Create { .. } => op::CREATE,
            MultiOp::Create2 { .. } => op::CREATE2,
            MultiOp::Delete { .. } => op::DELETE,
            MultiOp::SetData { .. } => op::SET_DATA,
            MultiOp::Check { .. } => op::CHECK,
        };
        multi_header(w, kind, false);
        match *sub {
            MultiOp::Create {
                path,
                data,
                acl,
                mode,
            }
            | MultiOp::Create2 {
                path,
                data,
                acl,
                mode,
            } => create(w, path, data, acl, mode)?,
            MultiOp::Delete { path, version } | MultiOp::Check { path, version } => {
                path_version(w, path, version)?
            }
            MultiOp::SetData {
                path,
                data,
                version,
            } => set_data(w, path, data, version)?,
        }
    }
    multi_end(w);
    Ok(())
}

fn multi_end(w: &mut Writer<'_>) {
    multi_header(w, op::MULTI_END, true);
}

fn multi_header(w: &mut Writer<'_>, kind: i32, done: bool) {
    w.int(kind);
    w.boolean(done);
    w.int(-1); // err, unused in requests
}
