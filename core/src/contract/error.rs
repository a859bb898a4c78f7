//! The one error type of every recipe.
//!
//! Recipes fail for few reasons, and most are shared: ZooKeeper refused a
//! request, a path does not fit, a call came in the wrong state, the session
//! ended, the server answered nonsense. One type for all of them lets a
//! transport carry any recipe's error without translating it, and an
//! application match the same variant whichever recipe raised it.

use core::fmt;

use crate::path::PathError;
use crate::ZkError;

/// Why a recipe refused a call or failed.
///
/// ```
/// use herdless_core::lock::Lock;
/// use herdless_core::Error;
///
/// let mut lock: Lock = Lock::new("/locks/printer").unwrap();
/// // Releasing a lock that was never acquired is refused; the lock's own
/// // state says why.
/// assert_eq!(lock.release(), Err(Error::InvalidState));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum Error {
    /// ZooKeeper refused a request.
    Zk(ZkError),
    /// A path or name was invalid or did not fit the recipe's buffers.
    Path(PathError),
    /// Data does not fit the recipe's buffer.
    TooLarge {
        /// Its length.
        len: usize,
        /// The buffer's capacity.
        capacity: usize,
    },
    /// The call needs another state (say, `acquire` while held, or a second
    /// write while one is in progress); the recipe's `state()` tells which
    /// it is in.
    InvalidState,
    /// The session ended (expired or closed) before the recipe could finish,
    /// or was closed before the call. (Work asked for after an expiry waits
    /// for the next session, as after a disconnect.)
    SessionEnded,
    /// The server's answer did not make sense for the request (say, a
    /// created node without a sequence suffix).
    BadReply,
    /// A queue priority above 99.
    BadPriority,
    /// Another live session holds a node of this name (group membership).
    NameTaken,
    /// Someone other than the leader keeps writing the election's
    /// acknowledgement node.
    AckContended,
    /// More two-phase commit sites than the participant can track.
    TooManySites,
    /// The two-phase commit transaction node already exists (coordinator).
    TransactionExists,
    /// The two-phase commit transaction node does not exist (site; checked
    /// after a `sync`), or was deleted before the decision.
    NoTransaction,
    /// A revocation's node is not a lock contender's: its name has no
    /// lock, read or write marker and sequence number (herdless's,
    /// Curator's or Kazoo's), or the node is not ephemeral. Nothing is
    /// deleted; a revocation aimed at a configuration node or a lock's
    /// directory would otherwise destroy it.
    NotALockNode,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Zk(e) => write!(f, "ZooKeeper error: {e}"),
            Error::Path(e) => write!(f, "invalid path: {e}"),
            Error::TooLarge { len, capacity } => {
                write!(f, "data of {len} bytes exceeds the {capacity}-byte buffer")
            }
            Error::InvalidState => f.write_str(
                "not allowed in the recipe's current state (another operation may be in progress)",
            ),
            Error::SessionEnded => f.write_str("the session has ended"),
            Error::BadReply => f.write_str("malformed reply from the server"),
            Error::BadPriority => f.write_str("priorities go from 0 (first) to 99 (last)"),
            Error::NameTaken => f.write_str("another session holds a node of this name"),
            Error::AckContended => {
                f.write_str("someone other than the leader keeps writing the acknowledgement")
            }
            Error::TooManySites => f.write_str("more sites than the participant can track"),
            Error::TransactionExists => f.write_str("the transaction node already exists"),
            Error::NoTransaction => f.write_str("the transaction node does not exist"),
            Error::NotALockNode => {
                f.write_str("not a lock contender's node (an ephemeral lock, read or write node)")
            }
        }
    }
}

impl core::error::Error for Error {}

impl From<PathError> for Error {
    fn from(e: PathError) -> Self {
        Error::Path(e)
    }
}

impl From<ZkError> for Error {
    fn from(e: ZkError) -> Self {
        Error::Zk(e)
    }
}
