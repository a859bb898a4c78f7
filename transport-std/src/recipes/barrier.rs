//! Barriers on tokio: a barrier to wait on, and a double barrier to enter
//! and leave together.

use std::fmt;
use std::sync::Arc;

use futures::StreamExt;
use herdless_core::barrier::{Barrier as CoreBarrier, BarrierEvent};
use herdless_core::double_barrier::{DoubleBarrier as CoreDouble, DoubleBarrierEvent};

use crate::driver::channel;
use crate::driver::undo::Undo;
use crate::driver::{self, Counters, DriverHandle};
use crate::{Connection, Error};

type CoreB = CoreBarrier<512>;
type CoreD = CoreDouble<512>;

/// A barrier: a node that processes wait on until it is removed.
///
/// Operations on one handle run one at a time: a process that waits and
/// one that removes each use their own handle.
///
/// ```no_run
/// # async fn run(client: herdless_std::Client) -> Result<(), herdless_std::Error> {
/// use herdless_std::barrier::Barrier;
///
/// let barrier = Barrier::new(&client, "/jobs/start")?;
/// barrier.set().await?;
/// // elsewhere: Barrier::new(&other, "/jobs/start")?.wait().await?;
/// barrier.remove().await?;
/// # Ok(()) }
/// ```
pub struct Barrier {
    handle: DriverHandle<CoreB>,
    events: tokio::sync::Mutex<channel::Receiver<BarrierEvent>>,
    node: String,
}

impl fmt::Debug for Barrier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Barrier").field("node", &self.node).finish()
    }
}

impl Barrier {
    /// The barrier at `node`.
    pub fn new(conn: &impl Connection, node: &str) -> Result<Barrier, Error> {
        let core = CoreB::new(node)?.with_acl(conn.acl());
        let (tx, rx) = channel::unbounded();
        let handle = driver::spawn_on(
            conn.source(),
            core,
            Arc::new(Counters::default()),
            move |_: &CoreB, event| {
                let _ = tx.unbounded_send(event);
            },
            |b: &CoreB| b.is_idle(),
        );
        Ok(Barrier {
            handle,
            events: tokio::sync::Mutex::new(rx),
            node: node.to_owned(),
        })
    }

    async fn run(
        &self,
        start: impl FnOnce(&mut CoreB) + Send + 'static,
        until: BarrierEvent,
    ) -> Result<(), Error> {
        let mut events = self.events.lock().await;
        self.handle.command(start)?;
        self.handle
            .over()
            .unless(async {
                loop {
                    match events.next().await.ok_or(Error::DriverGone)? {
                        event if event == until => return Ok(()),
                        BarrierEvent::Failed(e) => return Err(e.into()),
                        _ => {}
                    }
                }
            })
            .await
    }

    /// Raises the barrier (creating missing ancestors).
    pub async fn set(&self) -> Result<(), Error> {
        self.run(|b| b.set(), BarrierEvent::Set).await
    }

    /// Lowers the barrier; every waiter passes.
    pub async fn remove(&self) -> Result<(), Error> {
        self.run(|b| b.remove(), BarrierEvent::Removed).await
    }

    /// Waits until the barrier is down (at once if it is not set).
    ///
    /// Cancel-safe: a dropped wait stops waiting; its watch stays on the
    /// server until the node changes (a 3.8 client cannot take it back).
    pub async fn wait(&self) -> Result<(), Error> {
        let undo = Undo::new(&self.handle, CoreB::cancel_wait);
        let result = self.run(|b| b.wait(), BarrierEvent::Passed).await;
        undo.disarm();
        result
    }
}

/// One process of a double barrier.
///
/// ```no_run
/// # async fn run(client: herdless_std::Client) -> Result<(), herdless_std::Error> {
/// use herdless_std::barrier::DoubleBarrier;
///
/// let barrier = DoubleBarrier::new(&client, "/barriers/job-7", "worker-3")?;
/// let inside = barrier.enter(10).await?;   // returns once 10 have entered
/// // ... the computation ...
/// inside.leave().await?;                    // returns once all 10 have left
/// # Ok(()) }
/// ```
pub struct DoubleBarrier {
    handle: DriverHandle<CoreD>,
    events: tokio::sync::Mutex<channel::Receiver<DoubleBarrierEvent>>,
    name: String,
}

impl fmt::Debug for DoubleBarrier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DoubleBarrier")
            .field("name", &self.name)
            .finish()
    }
}

/// Inside a double barrier; [`leave`](Inside::leave) to get out.
///
/// Dropping it does not leave: this process's node stays until its session
/// ends, and every other process's `leave` waits for it until then.
#[derive(Debug)]
#[must_use = "the others cannot leave until this process calls `leave` (or its session ends)"]
pub struct Inside<'a> {
    barrier: &'a DoubleBarrier,
}

impl DoubleBarrier {
    /// Process `name` (unique in the barrier) of the double barrier at
    /// `dir`.
    pub fn new(conn: &impl Connection, dir: &str, name: &str) -> Result<DoubleBarrier, Error> {
        let core = CoreD::new(dir, name)?.with_acl(conn.acl());
        let (tx, rx) = channel::unbounded();
        let handle = driver::spawn_on(
            conn.source(),
            core,
            Arc::new(Counters::default()),
            move |_: &CoreD, event| {
                let _ = tx.unbounded_send(event);
            },
            |d: &CoreD| d.is_idle(),
        );
        Ok(DoubleBarrier {
            handle,
            events: tokio::sync::Mutex::new(rx),
            name: name.to_owned(),
        })
    }

    /// Starts the work and waits for `until`; `Ok(false)` if the session
    /// ended first, taking this process's node with it.
    async fn run(
        &self,
        start: impl FnOnce(&mut CoreD) -> Result<(), herdless_core::Error> + Send + 'static,
        until: DoubleBarrierEvent,
    ) -> Result<bool, Error> {
        let mut events = self.events.lock().await;
        self.handle.call(start).await??;
        loop {
            match events.next().await.ok_or(Error::DriverGone)? {
                event if event == until => return Ok(true),
                DoubleBarrierEvent::Lost => return Ok(false),
                DoubleBarrierEvent::Failed(e) => return Err(e.into()),
                _ => {}
            }
        }
    }

    /// Enters, returning once `count` processes have (creating the barrier
    /// directory if missing). Not cancel-safe: a dropped enter leaves this
    /// process's node until its session ends.
    ///
    /// Fails with [`Error::NameTaken`] when another session's process
    /// already holds this name in the barrier: counted once for two, both
    /// would wait for ever. Every process must give the same `count`; one
    /// that expects more than will come waits until the others leave. A
    /// `count` of 0 counts as 1 and enters at once.
    ///
    /// On a renewing [`Session`](crate::Session), an enter whose session
    /// expires enters again on the next one (its node went with the
    /// session); `SessionEnded` only when no session follows.
    pub async fn enter(&self, count: u32) -> Result<Inside<'_>, Error> {
        // Asked again at once: the core waits for the next session after
        // an expiry, and refuses the work when none follows (a close).
        while !self
            .run(move |d| d.enter(count), DoubleBarrierEvent::Entered)
            .await?
        {}
        Ok(Inside { barrier: self })
    }
}

impl Inside<'_> {
    /// Leaves, returning once every process has left.
    pub async fn leave(self) -> Result<(), Error> {
        let left = self.barrier.run(|d| d.leave(), DoubleBarrierEvent::Left);
        if left.await? {
            Ok(())
        } else {
            Err(Error::SessionEnded)
        }
    }
}
