//! The shared (read/write) lock on tokio: many readers or one writer.

use herdless_core::lock::Contender;
use herdless_core::naming::Flavour;

use crate::{Connection, Error, Lock};

/// A read/write lock on a ZooKeeper directory (the recipes page's "Shared
/// Locks"): readers hold together, a writer holds alone.
///
/// [`read`](ReadWriteLock::read) and [`write`](ReadWriteLock::write) are
/// plain [`Lock`]s, with the same `acquire`, `try_acquire`,
/// `acquire_timeout` and `acquire_revocable`, and the same guards
/// (`fenced()`, `lost()`, `suspended()`, `release()`). A reader waits only
/// for the next-lower writer; a writer for the next-lower node of either
/// kind; each waiter watches one node, so a writer's release wakes exactly
/// the readers queued behind it, and a reader's release at most the one
/// writer behind it.
///
/// Not reentrant, and no upgrade or downgrade: a read requested while the
/// same process holds the write lock queues behind every writer already
/// waiting (CURATOR-621).
///
/// ```no_run
/// use std::time::Duration;
/// use herdless_std::ReadWriteLock;
///
/// # async fn run() -> Result<(), herdless_std::Error> {
/// let client = herdless_std::connect("127.0.0.1:2181", Duration::from_secs(10)).await?;
/// let catalog = ReadWriteLock::new(&client, "/locks/catalog")?;
///
/// // Many readers at once...
/// let reading = catalog.read().acquire().await?;
/// // ... read the catalog ...
/// reading.release().await?;
///
/// // ... or one writer, alone.
/// let writing = catalog.write().acquire().await?;
/// let mut batch = writing.fenced();
/// batch.set_data("/catalog/version", b"42", None)?;
/// batch.commit().await?;
/// writing.release().await?;
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct ReadWriteLock {
    read: Lock,
    write: Lock,
}

impl ReadWriteLock {
    /// A read/write lock on `dir` (created with its ancestors when first
    /// needed), with nodes named as the recipes page does (`<guid>-read-`,
    /// `<guid>-write-`).
    pub fn new(conn: &impl Connection, dir: &str) -> Result<ReadWriteLock, Error> {
        Self::with_flavour(conn, dir, Flavour::Recipes)
    }

    /// A read/write lock whose nodes are named in `flavour` (Curator's
    /// `__READ__`/`__WRIT__`, Kazoo's `__rlock__`/`__lock__`). Readers and
    /// writers of every flavour are recognised whichever one this lock
    /// writes.
    pub fn with_flavour(
        conn: &impl Connection,
        dir: &str,
        flavour: Flavour,
    ) -> Result<ReadWriteLock, Error> {
        Ok(ReadWriteLock {
            read: Lock::with_contender(conn, dir, Contender::Reader, flavour)?,
            write: Lock::with_contender(conn, dir, Contender::Writer, flavour)?,
        })
    }

    /// The read side: holds together with other readers, never with a
    /// writer.
    pub fn read(&self) -> &Lock {
        &self.read
    }

    /// The write side: holds alone.
    pub fn write(&self) -> &Lock {
        &self.write
    }

    /// The lock directory.
    pub fn dir(&self) -> &str {
        self.read.dir()
    }
}
