//! Barriers on the driver: a barrier to set, remove and wait on, and a
//! double barrier to enter and leave together.

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
    /// barrier directory if missing); a `count` of 0 counts as 1.
    ///
    /// Not cancel-safe: a dropped call leaves this process's node until its
    /// session ends.
    pub async fn enter(&mut self, count: u32) -> Result<(), Error> {
        self.recipe()?.enter(count).map_err(Error::Recipe)?;
        self.until(DoubleBarrierEvent::Entered).await
    }

    /// Leaves, and waits until every process has left.
    pub async fn leave(&mut self) -> Result<(), Error> {
        self.recipe()?.leave().map_err(Error::Recipe)?;
        self.until(DoubleBarrierEvent::Left).await
    }

    async fn until(&mut self, done: DoubleBarrierEvent) -> Result<(), Error> {
        loop {
            match self.next_event().await? {
                DoubleBarrierEvent::Lost => return Err(Error::Lost),
                DoubleBarrierEvent::Failed(e) => return Err(e.into()),
                event if event == done => return Ok(()),
                _ => continue,
            }
        }
    }
}
