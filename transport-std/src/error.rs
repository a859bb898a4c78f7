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
    /// The recipe refused the operation (wrong state, bad server reply).
    #[error("{0}")]
    Recipe(herdless_core::lock::Error),
    /// The session expired or was closed: nothing more can happen on it.
    #[error("the ZooKeeper session has ended")]
    SessionEnded,
    /// Connecting to ZooKeeper failed.
    #[error("could not connect to ZooKeeper: {0}")]
    Connect(zookeeper_client::Error),
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

impl From<herdless_core::lock::Error> for Error {
    fn from(e: herdless_core::lock::Error) -> Self {
        use herdless_core::lock::Error as L;
        match e {
            L::Zk(z) if z.is_session_gone() => Error::SessionEnded,
            L::Zk(z) => Error::Zk(z),
            L::Path(p) => Error::Path(p),
            L::NoSession => Error::SessionEnded,
            other => Error::Recipe(other),
        }
    }
}

impl From<PathError> for Error {
    fn from(e: PathError) -> Self {
        Error::Path(e)
    }
}

impl From<herdless_core::config::Error> for Error {
    fn from(e: herdless_core::config::Error) -> Self {
        use herdless_core::config::Error as C;
        match e {
            C::Zk(z) if z.is_session_gone() => Error::SessionEnded,
            C::Zk(z) => Error::Zk(z),
            C::Path(p) => Error::Path(p),
            C::TooLarge { len, capacity } => Error::TooLarge { len, capacity },
            C::WriteInProgress => Error::InvalidState,
            _ => Error::Zk(ZkError::MarshallingError),
        }
    }
}

impl From<herdless_core::member::Error> for Error {
    fn from(e: herdless_core::member::Error) -> Self {
        use herdless_core::member::Error as M;
        match e {
            M::Zk(z) if z.is_session_gone() => Error::SessionEnded,
            M::Zk(z) => Error::Zk(z),
            M::Path(p) => Error::Path(p),
            M::TooLarge { len, capacity } => Error::TooLarge { len, capacity },
            M::NameTaken => Error::NameTaken,
            M::InvalidState => Error::InvalidState,
            _ => Error::Zk(ZkError::MarshallingError),
        }
    }
}

impl From<herdless_core::revoke::Error> for Error {
    fn from(e: herdless_core::revoke::Error) -> Self {
        use herdless_core::revoke::Error as R;
        match e {
            R::Zk(z) if z.is_session_gone() => Error::SessionEnded,
            R::Zk(z) => Error::Zk(z),
            R::Path(p) => Error::Path(p),
            R::NoSession => Error::SessionEnded,
            R::Busy => Error::InvalidState,
            _ => Error::Zk(ZkError::MarshallingError),
        }
    }
}

impl From<herdless_core::election::Error> for Error {
    fn from(e: herdless_core::election::Error) -> Self {
        use herdless_core::election::Error as E;
        match e {
            E::Zk(z) if z.is_session_gone() => Error::SessionEnded,
            E::Zk(z) => Error::Zk(z),
            E::Path(p) => Error::Path(p),
            E::TooLarge { len, capacity } => Error::TooLarge { len, capacity },
            E::NoSession => Error::SessionEnded,
            E::InvalidState { .. } => Error::InvalidState,
            _ => Error::Zk(ZkError::MarshallingError),
        }
    }
}
