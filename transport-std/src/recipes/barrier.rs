//! Barriers on tokio: a barrier to wait on, and a double barrier to enter
//! and leave together.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

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

/// Inside a double barrier; [`leave`](Inside::leave) to get out with the
/// others, or [`withdraw`](Inside::withdraw) to go without them.
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

    /// Starts the work and waits for `until` (or a deadline's end).
    async fn run(
        &self,
        start: impl FnOnce(&mut CoreD) -> Result<(), herdless_core::Error> + Send + 'static,
        until: DoubleBarrierEvent,
    ) -> Result<Ended, Error> {
        let mut events = self.events.lock().await;
        // What a dropped call left going ends first (an enter withdrawn, a
        // leave carrying on); what it said is then of no concern here.
        while !self.handle.call(|d| d.is_idle() || d.is_inside()).await? {
            events.next().await.ok_or(Error::DriverGone)?;
        }
        while events.try_recv().is_ok() {}
        self.handle.call(start).await??;
        loop {
            match events.next().await.ok_or(Error::DriverGone)? {
                event if event == until => return Ok(Ended::Done),
                DoubleBarrierEvent::Lost => return Ok(Ended::Lost),
                DoubleBarrierEvent::TimedOut => return Ok(Ended::TimedOut),
                DoubleBarrierEvent::Failed(e) => return Err(e.into()),
                _ => {}
            }
        }
    }

    /// Enters, returning once `count` processes have (creating the barrier
    /// directory if missing).
    ///
    /// Cancel-safe: a dropped enter (say under `tokio::time::timeout`) is
    /// withdrawn in the background and this process's node deleted, so no
    /// process counts it (see [`enter_timeout`](Self::enter_timeout)).
    ///
    /// Fails with [`Error::NameTaken`] when another session's process
    /// already holds this name in the barrier: counted once for two, both
    /// would wait for ever. Every process must give the same `count`; one
    /// that expects more than will come waits until the others leave. A
    /// `count` of 0 counts as 1 and enters at once. An enter that fails
    /// deletes this process's node before it returns the error.
    ///
    /// On a renewing [`Session`](crate::Session), an enter whose session
    /// expires enters again on the next one (its node went with the
    /// session); `SessionEnded` only when no session follows.
    pub async fn enter(&self, count: u32) -> Result<Inside<'_>, Error> {
        self.enter_with(move |d| d.enter(count))
            .await?
            .ok_or(Error::InvalidState)
    }

    /// Enters as [`enter`](Self::enter) does, waiting at most `timeout`;
    /// `None` when it passed, once this process's node is deleted. The
    /// answers awaited when it passes decide first, as for
    /// [`Lock::acquire_timeout`](crate::Lock::acquire_timeout): a count
    /// already reached enters even with a zero timeout.
    ///
    /// A process that times out as the count is reached may have been
    /// counted by one that read the directory just before its node went:
    /// the others enter without it (no timed barrier can rule that out).
    /// A later process never counts it (Curator's CURATOR-318).
    pub async fn enter_timeout(
        &self,
        count: u32,
        timeout: Duration,
    ) -> Result<Option<Inside<'_>>, Error> {
        let deadline = self.handle.deadline_in(timeout);
        self.enter_with(move |d| d.enter_until(count, deadline))
            .await
    }

    async fn enter_with(
        &self,
        start: impl Fn(&mut CoreD) -> Result<(), herdless_core::Error> + Copy + Send + 'static,
    ) -> Result<Option<Inside<'_>>, Error> {
        let undo = Undo::new(&self.handle, |d: &mut CoreD| {
            let _ = d.cancel();
        });
        // Asked again at once: the core waits for the next session after
        // an expiry, and refuses the work when none follows (a close).
        let ended = loop {
            match self.run(start, DoubleBarrierEvent::Entered).await? {
                Ended::Lost => continue,
                ended => break ended,
            }
        };
        undo.disarm();
        Ok((ended == Ended::Done).then_some(Inside { barrier: self }))
    }
}

/// How a call of a [`DoubleBarrier`] ended, short of an error.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ended {
    /// What it waited for came.
    Done,
    /// The session ended, taking this process's node with it.
    Lost,
    /// Its deadline passed; this process's node is gone.
    TimedOut,
}

impl Inside<'_> {
    /// Leaves, returning once every process has.
    ///
    /// Cancel-safe: a dropped leave carries on in the background (a later
    /// [`enter`](DoubleBarrier::enter) waits for it to end).
    pub async fn leave(self) -> Result<(), Error> {
        match self
            .barrier
            .run(|d| d.leave(), DoubleBarrierEvent::Left)
            .await?
        {
            Ended::Done => Ok(()),
            // A leave has no deadline.
            Ended::Lost | Ended::TimedOut => Err(Error::SessionEnded),
        }
    }

    /// Leaves as [`leave`](Self::leave) does, waiting at most `timeout`
    /// for the others; `false` when it passed, once this process's node is
    /// deleted (nobody waits for this process any more).
    pub async fn leave_timeout(self, timeout: Duration) -> Result<bool, Error> {
        let deadline = self.barrier.handle.deadline_in(timeout);
        let left = self
            .barrier
            .run(move |d| d.leave_until(deadline), DoubleBarrierEvent::Left);
        match left.await? {
            Ended::Done => Ok(true),
            Ended::TimedOut => Ok(false),
            Ended::Lost => Err(Error::SessionEnded),
        }
    }

    /// Withdraws from the barrier without waiting for the others: this
    /// process's node is deleted (nobody waits for it any more), and this
    /// returns once it is.
    pub async fn withdraw(self) -> Result<(), Error> {
        let done = self
            .barrier
            .run(|d| d.cancel(), DoubleBarrierEvent::Cancelled);
        match done.await? {
            Ended::Done => Ok(()),
            Ended::Lost | Ended::TimedOut => Err(Error::SessionEnded),
        }
    }
}
