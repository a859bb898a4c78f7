//! The records that frame a session: the connect handshake, reply headers
//! and watch notifications.

use crate::{WatchEvent, WatchKind, ZkError};

/// The first frame a client sends on a connection (no request header).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct ConnectRequest<'a> {
    /// The highest zxid seen in replies so far (0 for a new client); a
    /// server that is behind it refuses the connection.
    pub last_zxid_seen: i64,
    /// The session timeout asked for, in milliseconds (the server clamps
    /// it).
    pub timeout_ms: i32,
    /// 0 for a new session, the session id to resume one.
    pub session_id: i64,
    /// The session password from the last [`ConnectResponse`] (16 zero
    /// bytes for a new session).
    pub password: &'a [u8],
    /// Whether a read-only server is acceptable. Always sent (as the byte
    /// after the record), so the server answers with its own read-only
    /// byte.
    pub read_only: bool,
}

/// The password a new session sends: 16 zero bytes, as the Java client.
pub const NEW_SESSION_PASSWORD: [u8; 16] = [0; 16];

/// The server's answer to a [`ConnectRequest`] (no reply header).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct ConnectResponse<'a> {
    /// Protocol version (0).
    pub protocol_version: i32,
    /// The negotiated session timeout in milliseconds; 0 when the session
    /// is expired or unknown.
    pub timeout_ms: i32,
    /// The session id; 0 when the session is expired or unknown.
    pub session_id: i64,
    /// The session password, needed to resume the session.
    pub password: &'a [u8],
    /// Whether the server is read-only; `None` from a server that did not
    /// send the byte.
    pub read_only: Option<bool>,
}

impl ConnectResponse<'_> {
    /// Whether the server refused the session as expired, unknown or with a
    /// wrong password (it closes the connection after this answer). The
    /// Java client looks at the timeout, kezhuw's client at the id: both
    /// are checked.
    pub const fn is_expired(&self) -> bool {
        self.timeout_ms <= 0 || self.session_id == 0
    }
}

/// The header of every reply after the handshake.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct ReplyHeader {
    /// The request's xid, or a reserved one (see [`xid`](super::opcode::xid)).
    pub xid: i32,
    /// The server's last processed zxid at reply time.
    pub zxid: i64,
    /// 0, or a ZooKeeper error code.
    pub err: i32,
}

impl ReplyHeader {
    /// The error the header carries, if any.
    pub const fn error(&self) -> Option<ZkError> {
        ZkError::from_code(self.err)
    }
}

/// A watch notification (`WatcherEvent`, the body of an xid -1 frame).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Notification<'a> {
    /// The event type (1 created, 2 deleted, 3 data changed, 4 children
    /// changed).
    pub event_type: i32,
    /// The keeper state (always 3, SyncConnected, from a server).
    pub state: i32,
    /// The full server-side path.
    pub path: &'a str,
}

impl<'a> Notification<'a> {
    /// The event as recipes take it; `None` for a type the server is not
    /// known to send, which a client skips rather than fails on.
    pub const fn watch_event(&self) -> Option<WatchEvent<'a>> {
        match WatchKind::from_code(self.event_type) {
            Some(kind) => Some(WatchEvent {
                kind,
                path: self.path,
            }),
            None => None,
        }
    }
}
