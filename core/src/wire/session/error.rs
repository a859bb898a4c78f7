//! Why the session refused a request or dropped a connection.

use core::fmt;

use crate::wire::error::{DecodeError, EncodeError};
use crate::ZkError;

/// Why [`Session::send`](super::Session::send) refused a request. Nothing
/// was written or recorded.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum SendError {
    /// No connection is established (or the session is closing or over).
    NotConnected,
    /// The session has its own frames to write first (auth, setWatches):
    /// drain [`poll_transmit`](super::Session::poll_transmit).
    Busy,
    /// The table of requests awaiting a reply is full (lost requests not
    /// yet drained with [`poll_event`](super::Session::poll_event) count
    /// too).
    TooManyPending,
    /// The request sets a watch and the table of watches is full: as many
    /// watches as it counts, or no room left for the path's bytes.
    TooManyWatches,
    /// The request sets a watch on a path longer than the watch table
    /// holds in all.
    WatchPathTooLong,
    /// The request could not be encoded into the buffer.
    Encode(EncodeError),
}

impl fmt::Display for SendError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SendError::NotConnected => f.write_str("not connected"),
            SendError::Busy => f.write_str("session frames must be transmitted first"),
            SendError::TooManyPending => f.write_str("too many requests awaiting a reply"),
            SendError::TooManyWatches => f.write_str("watch table full"),
            SendError::WatchPathTooLong => f.write_str("watched path too long for the watch table"),
            SendError::Encode(e) => write!(f, "cannot encode: {e}"),
        }
    }
}

/// Why a received frame made the session drop its connection (it has
/// already asked for the connection to be closed and, unless the session
/// is over, for the next one to be opened).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum SessionError {
    /// The frame is malformed or truncated.
    Decode(DecodeError),
    /// A reply's xid is not the one of the oldest request awaiting a reply
    /// (`expected` is `None` when none awaits one): replies and requests
    /// can no longer be matched.
    XidOutOfOrder {
        /// The xid the FIFO order called for.
        expected: Option<i32>,
        /// The xid received.
        got: i32,
    },
    /// The server refused the connection's credentials (it closes the
    /// connection); the session is over ([`State::AuthFailed`](super::State::AuthFailed)).
    AuthFailed,
    /// The server answered setWatches with an error, so the watches may not
    /// be re-armed: the connection is dropped to try again.
    SetWatchesFailed(ZkError),
    /// The server's session password is longer than the session stores.
    PasswordTooLong,
    /// A frame larger than the driver's buffer that is not a reply to a
    /// request (a handshake, a notification, a ping): it cannot be answered
    /// with an error and skipped.
    FrameTooLarge,
}

impl fmt::Display for SessionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SessionError::Decode(e) => write!(f, "malformed frame: {e}"),
            SessionError::XidOutOfOrder { expected, got } => {
                write!(f, "reply xid {got} out of order (expected {expected:?})")
            }
            SessionError::AuthFailed => f.write_str("authentication failed"),
            SessionError::SetWatchesFailed(e) => write!(f, "setWatches failed: {e}"),
            SessionError::PasswordTooLong => f.write_str("session password too long"),
            SessionError::FrameTooLarge => f.write_str("a frame too large for the buffer"),
        }
    }
}

/// Why [`Session::add_auth`](super::Session::add_auth) refused credentials.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum AuthError {
    /// The session already keeps as many credentials as it can.
    TooMany,
    /// The scheme or credential is longer than the session stores.
    TooLong,
}

impl fmt::Display for AuthError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AuthError::TooMany => f.write_str("too many credentials"),
            AuthError::TooLong => f.write_str("scheme or credential too long"),
        }
    }
}
