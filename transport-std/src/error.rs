//! The one error type of the tokio transport.

use herdless_core::path::PathError;
use herdless_core::ZkError;

/// Why a herdless operation on tokio failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// ZooKeeper refused a request.
    #[error("ZooKeeper error: {0}")]
    Zk(ZkError),
    /// A path was invalid or too long.
    #[error("invalid path: {0}")]
    Path(PathError),
    /// A recipe failed for a reason of its own (a malformed server reply, a
    /// contended acknowledgement, a two-phase commit's missing transaction,
    /// ...): the core's error, unchanged.
    #[error("{0}")]
    Recipe(herdless_core::Error),
    /// The session expired or was closed: nothing more can happen on it.
    /// On a renewing [`Session`](crate::Session), whose recipes wait for
    /// the next session after an expiry (and whose calls are made again
    /// there), it means none will follow;
    /// [`Session::ended`](crate::Session::ended) says why (credentials the
    /// server refused, say). The one exception is a fenced batch's
    /// [`commit`](crate::Fenced::commit), bound to the session it was
    /// built on.
    #[error("the ZooKeeper session has ended")]
    SessionEnded,
    /// Connecting to ZooKeeper failed.
    #[error("could not connect to ZooKeeper: {0}")]
    Connect(zookeeper_client::Error),
    /// The chroot of the connect string (`host:port/app`) does not exist,
    /// so every request would fail with `NoNode` on its own path. It is
    /// not created for you: a mistyped chroot would give part of a fleet
    /// lock and election directories of its own. Create it (`zkCli.sh
    /// create /app`) and connect again.
    #[error("the chroot {0} does not exist: create it first")]
    ChrootMissing(String),
    /// The chroot of the connect string (`host:port/app/`, `/app//x`,
    /// `/app/..`) is not a valid path. Nothing was sent: the server would
    /// otherwise take some such strings for another node than the one
    /// meant.
    #[error("invalid chroot {chroot}: {error}")]
    InvalidChroot {
        /// The connect string's part from its first `/`.
        chroot: String,
        /// What is wrong with it.
        error: PathError,
    },
    /// A fenced batch was refused because its fence node is gone: the lock
    /// or leadership it was fenced on was lost. Nothing was written.
    #[error("fenced write refused: the lock or leadership is no longer held")]
    Fenced,
    /// A write of a fenced batch was refused (the fence itself held);
    /// nothing of the batch was written.
    #[error("write {index} of the fenced batch failed: {error}")]
    FencedWrite {
        /// Position of the failed write, counted from 0 in the order added.
        index: usize,
        /// ZooKeeper's answer to it.
        error: ZkError,
    },
    /// A value does not fit the recipe's buffer.
    #[error("value of {len} bytes exceeds the {capacity}-byte limit")]
    TooLarge {
        /// Its length.
        len: usize,
        /// The limit.
        capacity: usize,
    },
    /// A queue priority above 99.
    #[error("priorities go from 0 (first) to 99 (last)")]
    BadPriority,
    /// Another live session holds a node of this name.
    #[error("the name is held by another session")]
    NameTaken,
    /// The operation is not allowed in the current state (say, a second
    /// write while one is in flight on the same handle).
    #[error("not allowed in the current state")]
    InvalidState,
    /// A revocable lock's node was deleted by a forced revocation while the
    /// acquisition was still waiting.
    #[error("the lock attempt was revoked: its node was deleted")]
    Revoked,
    /// The task running the recipe is gone (the runtime is shutting down).
    #[error("the recipe's driver task has stopped")]
    DriverGone,
}

impl From<herdless_core::Error> for Error {
    /// Keeps the variants every recipe shares as this crate's own, so that
    /// `Err(Error::SessionEnded)` matches whichever recipe ended; anything
    /// else stays the recipe's error, unchanged.
    fn from(e: herdless_core::Error) -> Self {
        use herdless_core::Error as R;
        match e {
            R::Zk(z) if z.is_session_gone() => Error::SessionEnded,
            R::Zk(z) => Error::Zk(z),
            R::Path(p) => Error::Path(p),
            R::SessionEnded => Error::SessionEnded,
            R::TooLarge { len, capacity } => Error::TooLarge { len, capacity },
            R::BadPriority => Error::BadPriority,
            R::NameTaken => Error::NameTaken,
            R::InvalidState => Error::InvalidState,
            other => Error::Recipe(other),
        }
    }
}

impl Error {
    /// The error of a request sent through the client itself (not through
    /// a recipe): the session's end as [`Error::SessionEnded`], anything
    /// else as ZooKeeper's code.
    pub fn from_client(e: &zookeeper_client::Error) -> Error {
        Error::from(herdless_core::Error::Zk(crate::driver::convert::error(e)))
    }
}

impl From<PathError> for Error {
    fn from(e: PathError) -> Self {
        Error::Path(e)
    }
}
