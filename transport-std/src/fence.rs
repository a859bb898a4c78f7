//! Writes that land only while a lock or leadership is still held.
//!
//! A lock tells its holder "you held it when I last heard from the server".
//! Between that moment and a write, the session may expire and another
//! contender may take over, so a write made by a holder that has just lost
//! the lock can still land: the classic stale-holder bug (CURATOR-206,
//! ZOOKEEPER-91). A plain lock cannot prevent it. ZooKeeper can: a `multi`
//! whose first operation is a `check` of the holder's own node is applied
//! atomically, and only if that node still exists. The node is ephemeral and
//! sequential, so once it is gone it never comes back under the same name,
//! and the check can only pass while this holder holds.

use std::fmt;

use herdless_core::{path, CreateMode, Stat, Version, ZkError};
use tracing::debug;

use crate::backend::Backend;
use crate::{Connection, Error};

/// One write of a fenced batch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum FenceOp {
    Create {
        path: String,
        data: Vec<u8>,
        mode: CreateMode,
    },
    SetData {
        path: String,
        data: Vec<u8>,
        version: Version,
    },
    Delete {
        path: String,
        version: Version,
    },
    Check {
        path: String,
        version: Version,
    },
}

/// What one write of a committed batch did, in the order the writes were
/// added.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum FencedResult {
    /// A node was created, at this full path (with the sequence suffix for
    /// sequential modes).
    Created {
        /// Full path of the new node.
        path: String,
    },
    /// Data was replaced; the node's new stat.
    DataSet {
        /// The node's stat after the write.
        stat: Stat,
    },
    /// A node was deleted.
    Deleted,
    /// A version check passed.
    Checked,
}

/// A batch of writes that ZooKeeper applies atomically, and only while the
/// fence node (a lock holder's or a leader's own node) still exists.
///
/// Build it with [`LockGuard::fenced`](crate::LockGuard::fenced), add writes,
/// then [`commit`](Fenced::commit). Invalid paths are reported by the method
/// that adds them, so nothing is sent for a batch with a bad write.
///
/// ```no_run
/// # async fn run(lock: herdless_std::Lock) -> Result<(), herdless_std::Error> {
/// let guard = lock.acquire().await?;
/// let mut batch = guard.fenced();
/// batch.set_data("/jobs/42/state", b"done", None)?;
/// batch.delete("/jobs/42/claim", None)?;
/// match batch.commit().await {
///     Ok(_) => { /* both writes landed while the lock was held */ }
///     Err(herdless_std::Error::Fenced) => { /* lock lost: nothing was written */ }
///     Err(e) => return Err(e),
/// }
/// # Ok(()) }
/// ```
pub struct Fenced {
    backend: Backend,
    fence: String,
    held: bool,
    ops: Vec<FenceOp>,
}

impl fmt::Debug for Fenced {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Fenced")
            .field("fence", &self.fence)
            .field("held", &self.held)
            .field("ops", &self.ops)
            .finish()
    }
}

impl Fenced {
    /// A batch fenced on `fence`. `held` is the holder's own belief: when it
    /// already knows the lock is gone, the batch fails without a round trip.
    pub(crate) fn new(backend: Backend, fence: String, held: bool) -> Fenced {
        Fenced {
            backend,
            fence,
            held,
            ops: Vec::new(),
        }
    }

    /// A batch over `conn`'s current session fenced on `fence_path`, a
    /// lock or leadership node held by any session (say, a lock held by a
    /// coordinator while workers write over their own sessions).
    pub fn on(conn: &impl Connection, fence_path: &str) -> Result<Fenced, Error> {
        path::validate(fence_path)?;
        Ok(Fenced::new(
            conn.source().backend(),
            fence_path.to_owned(),
            true,
        ))
    }

    /// The node whose existence the batch is conditional on.
    pub fn fence_path(&self) -> &str {
        &self.fence
    }

    /// Number of writes added so far (the fence's own check not counted).
    pub fn len(&self) -> usize {
        self.ops.len()
    }

    /// Whether no write was added yet.
    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }

    /// Adds the creation of a node with open ACLs. For sequential modes
    /// `path` is the prefix the server appends the sequence number to.
    pub fn create(
        &mut self,
        path: &str,
        data: &[u8],
        mode: CreateMode,
    ) -> Result<&mut Self, Error> {
        if mode.is_sequential() {
            path::validate_sequential_prefix(path)?;
        } else {
            path::validate(path)?;
        }
        self.ops.push(FenceOp::Create {
            path: path.to_owned(),
            data: data.to_vec(),
            mode,
        });
        Ok(self)
    }

    /// Adds a replacement of a node's data, if its version is `version`
    /// (`None`: any version).
    pub fn set_data(
        &mut self,
        path: &str,
        data: &[u8],
        version: Option<i32>,
    ) -> Result<&mut Self, Error> {
        path::validate(path)?;
        self.ops.push(FenceOp::SetData {
            path: path.to_owned(),
            data: data.to_vec(),
            version: version.map_or(Version::Any, Version::Exactly),
        });
        Ok(self)
    }

    /// Adds the deletion of a node, if its version is `version` (`None`: any
    /// version).
    pub fn delete(&mut self, path: &str, version: Option<i32>) -> Result<&mut Self, Error> {
        path::validate(path)?;
        if path == "/" {
            return Err(Error::Zk(ZkError::BadArguments));
        }
        self.ops.push(FenceOp::Delete {
            path: path.to_owned(),
            version: version.map_or(Version::Any, Version::Exactly),
        });
        Ok(self)
    }

    /// Adds a further condition: `path` exists with version `version`
    /// (`None`: any version).
    pub fn check(&mut self, path: &str, version: Option<i32>) -> Result<&mut Self, Error> {
        path::validate(path)?;
        self.ops.push(FenceOp::Check {
            path: path.to_owned(),
            version: version.map_or(Version::Any, Version::Exactly),
        });
        Ok(self)
    }

    /// Sends the batch as one `multi`: the check of the fence node, then the
    /// writes in the order they were added.
    ///
    /// * `Ok`: every write landed, while the fence node existed.
    /// * [`Error::Fenced`]: the fence node is gone (the lock or leadership was
    ///   lost); nothing was written.
    /// * [`Error::FencedWrite`]: one of the writes was refused (say a
    ///   version mismatch); nothing was written.
    /// * [`Error::SessionEnded`]: the session is gone, and with it the fence
    ///   node; nothing was written.
    /// * [`Error::Zk`] with `ConnectionLoss`: the connection dropped before
    ///   the answer came; the batch may or may not have landed, but if it
    ///   did, it landed while the fence held.
    ///
    /// Not cancel-safe in the sense of an undo: once sent, a dropped future
    /// does not stop the server from applying the batch.
    pub async fn commit(self) -> Result<Vec<FencedResult>, Error> {
        if !self.held {
            debug!(fence = %self.fence, "fenced batch refused locally: not held");
            return Err(Error::Fenced);
        }
        self.backend.fenced(&self.fence, &self.ops).await
    }
}
