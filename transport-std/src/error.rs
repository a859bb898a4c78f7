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
