//! Barriers on the driver: a barrier to set, remove and wait on, and a
//! double barrier to enter and leave together.

use embassy_time::Duration;
use herdless_core::barrier::{Barrier, BarrierEvent};
use herdless_core::double_barrier::{DoubleBarrier, DoubleBarrierEvent};

use crate::error::Error;
use crate::handle::Handle;
use crate::transport::Transport;

impl<
        T: Transport,
        const K: usize,
        const WATCHES: usize,
        const WATCH_BYTES: usize,
        const N: usize,
    > Handle<'_, '_, T, Barrier<N>, K, WATCHES, WATCH_BYTES>
{
    /// Raises the barrier (creating missing ancestors) and waits until the
    /// node exists.
    pub async fn set(&mut self) -> Result<(), Error> {
        self.recipe()?.set();
        self.until(BarrierEvent::Set).await
    }

    /// Lowers the barrier and waits until the node is gone; every waiter
    /// passes.
    pub async fn remove(&mut self) -> Result<(), Error> {
        self.recipe()?.remove();
        self.until(BarrierEvent::Removed).await
    }

    /// Waits until the barrier is down (at once if it is not set).
    ///
    /// Cancel-safe: a dropped wait keeps waiting in the recipe, and the
    /// next call picks it up; call `cancel_wait()` on the
    /// [`recipe`](Self::recipe) to stop.
    pub async fn wait(&mut self) -> Result<(), Error> {
        self.recipe()?.wait();
        self.until(BarrierEvent::Passed).await
    }

    async fn until(&mut self, done: BarrierEvent) -> Result<(), Error> {
        loop {
            match self.next_event().await? {
                BarrierEvent::Failed(e) => return Err(e.into()),
                event if event == done => return Ok(()),
                _ => continue,
            }
        }
    }
}

impl<
        T: Transport,
        const K: usize,
        const WATCHES: usize,
        const WATCH_BYTES: usize,
        const N: usize,
    > Handle<'_, '_, T, DoubleBarrier<N>, K, WATCHES, WATCH_BYTES>
{
    /// Enters, and waits until `count` processes have (creating the
    /// barrier directory if missing); a `count` of 0 counts as 1. An enter
    /// that fails deletes this process's node before it returns the error.
    ///
    /// Not cancel-safe: a dropped call leaves the enter going; call
    /// [`cancel`](Self::cancel) to withdraw it.
    pub async fn enter(&mut self, count: u32) -> Result<(), Error> {
        self.recipe()?.enter(count).map_err(Error::Recipe)?;
        self.until(DoubleBarrierEvent::Entered).await.map(drop)
    }

    /// Enters as [`enter`](Self::enter) does, waiting at most `timeout`;
    /// `Ok(false)` when it passed, once this process's node is deleted, so
    /// that no process counts it. The answers awaited when it passes
    /// decide first: a count already reached enters even with a zero
    /// timeout. A process that times out as the count is reached may have
    /// been counted by one that read the directory just before its node
    /// went.
    pub async fn enter_timeout(&mut self, count: u32, timeout: Duration) -> Result<bool, Error> {
        let deadline = self.zk.deadline_in(timeout);
        self.recipe()?
            .enter_until(count, deadline)
            .map_err(Error::Recipe)?;
        self.until(DoubleBarrierEvent::Entered).await
    }

    /// Leaves, and waits until every process has left.
    pub async fn leave(&mut self) -> Result<(), Error> {
        self.recipe()?.leave().map_err(Error::Recipe)?;
        self.until(DoubleBarrierEvent::Left).await.map(drop)
    }

    /// Leaves as [`leave`](Self::leave) does, waiting at most `timeout`
    /// for the others; `Ok(false)` when it passed, once this process's
    /// node is deleted (nobody waits for it any more).
    pub async fn leave_timeout(&mut self, timeout: Duration) -> Result<bool, Error> {
        let deadline = self.zk.deadline_in(timeout);
        self.recipe()?
            .leave_until(deadline)
            .map_err(Error::Recipe)?;
        self.until(DoubleBarrierEvent::Left).await
    }

    /// Withdraws this process (an enter or a leave in progress, or a
    /// process inside, which then goes without waiting for the others),
    /// and waits until its node is deleted.
    pub async fn cancel(&mut self) -> Result<(), Error> {
        self.recipe()?.cancel().map_err(Error::Recipe)?;
        self.until(DoubleBarrierEvent::Cancelled).await.map(drop)
    }

    /// Waits for `done` (`true`) or the end of a deadline (`false`).
    async fn until(&mut self, done: DoubleBarrierEvent) -> Result<bool, Error> {
        loop {
            match self.next_event().await? {
                DoubleBarrierEvent::Lost => return Err(Error::Lost),
                DoubleBarrierEvent::Failed(e) => return Err(e.into()),
                event if event == done => return Ok(true),
                DoubleBarrierEvent::TimedOut => return Ok(false),
                _ => continue,
            }
        }
    }
}
