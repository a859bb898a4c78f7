//! The exclusive lock on the driver: acquire, hold while working, release.

use core::future::Future;

use embassy_time::Duration;
use herdless_core::lock::{Lock, LockEvent, LockState};
use herdless_core::naming::Guid;

use crate::error::Error;
use crate::handle::{granted, Handle};
use crate::transport::Transport;

impl<
        'z,
        'a,
        T: Transport,
        const K: usize,
        const WATCHES: usize,
        const WATCH_BYTES: usize,
        const N: usize,
    > Handle<'z, 'a, T, Lock<N>, K, WATCHES, WATCH_BYTES>
{
    /// Waits for the lock; `guid` must be fresh random bytes for every
    /// attempt (the hardware RNG), so a node left by an earlier attempt is
    /// never mistaken for this one. Events of an earlier attempt still
    /// unread are dropped (so are those of the other two ways to acquire);
    /// one still deleting its node is waited for first.
    ///
    /// Fails with `Error::Recipe(SessionEnded)` when the session ends
    /// while it waits (cut off past the session timeout): the attempt's
    /// node went with the session. Call again: after an expiry the driver
    /// opens the next session by itself and the call goes on there (with
    /// a fresh `guid`); where no session follows (renewal off, credentials
    /// refused) it fails with [`Error::SessionOver`].
    ///
    /// Not cancel-safe: a dropped call leaves the attempt going; call
    /// [`cancel`](Self::cancel) to withdraw it.
    pub async fn acquire(&mut self, guid: Guid) -> Result<(), Error> {
        self.start_round(Self::idle, Self::winding_up, Self::failure)
            .await?;
        self.recipe()?.acquire(guid)?;
        self.until_acquired().await
    }

    /// Waits for the lock for at most `timeout`; `Ok(false)` when it did
    /// not come (the attempt's node is removed). The listing that follows
    /// the create decides however long the create took: a free lock is
    /// taken even with a zero timeout.
    pub async fn acquire_timeout(&mut self, guid: Guid, timeout: Duration) -> Result<bool, Error> {
        self.start_round(Self::idle, Self::winding_up, Self::failure)
            .await?;
        let deadline = self.zk.deadline_in(timeout);
        self.recipe()?.acquire_until(guid, deadline)?;
        granted(self.until_acquired().await)
    }

    /// Takes the lock only if nobody holds or waits for it; `Ok(false)`
    /// otherwise.
    pub async fn try_acquire(&mut self, guid: Guid) -> Result<bool, Error> {
        self.start_round(Self::idle, Self::winding_up, Self::failure)
            .await?;
        self.recipe()?.try_acquire(guid)?;
        granted(self.until_acquired().await)
    }

    /// Withdraws a pending attempt (or releases the lock if it was already
    /// acquired) and waits until its node is gone.
    ///
    /// The attempt is withdrawn when this is called; the future only waits.
    pub fn cancel(
        &mut self,
    ) -> impl Future<Output = Result<(), Error>> + use<'_, 'z, 'a, T, K, WATCHES, WATCH_BYTES, N>
    {
        let asked = self.recipe().and_then(|lock| Ok(lock.cancel()?));
        self.until_wound_up(asked, Self::idle, Self::failure)
    }

    /// Whether the lock is held (and the session not in doubt), as of the
    /// last time the session was driven: after a pause longer than the read
    /// timeout it may still say `true` of a lock the server has released.
    /// Drive the session first ([`hold_while`](Self::hold_while) does).
    pub fn is_held(&mut self) -> bool {
        self.recipe().is_ok_and(|lock| lock.is_held())
    }

    /// Runs `work` while holding the lock, driving the session meanwhile.
    /// Returns `work`'s output, or stops it (dropping `work`) with
    /// [`Error::Lost`] as soon as the lock is lost (the session expired or
    /// the node was deleted), or with [`Error::RevocationRequested`] when
    /// someone asks a revocable holder to release (consent is then
    /// [`release`](Self::release)). A connection lost while `work` runs
    /// does not stop it: check [`is_held`](Self::is_held) where doubt
    /// matters. But `work` does not start on a lock in doubt: after a
    /// pause longer than the read timeout (the application busy
    /// elsewhere), the server may have expired the session and let
    /// another holder in, so the session is driven until it answers
    /// first: `work` starts if the lock is still held, and `Err(Lost)`
    /// comes if not.
    pub fn hold_while<F: Future>(
        &mut self,
        work: F,
    ) -> impl Future<Output = Result<F::Output, Error>> + use<'_, 'z, 'a, T, K, WATCHES, WATCH_BYTES, N, F>
    {
        self.work_unless(work, Lock::is_suspended, |event| match event {
            LockEvent::Lost => Some(Error::Lost),
            LockEvent::RevocationRequested => Some(Error::RevocationRequested),
            _ => None,
        })
    }

    /// The own node's full path (what a requester passes to a revocation),
    /// while the lock has a node.
    pub fn node_path<const M: usize>(&mut self) -> Option<heapless::String<M>> {
        self.recipe().ok()?.own_path::<M>()?.ok()
    }

    /// Releases the lock and waits until its node is deleted.
    ///
    /// The lock is released when this is called (its node's delete is
    /// queued); the future only waits for it.
    pub fn release(
        &mut self,
    ) -> impl Future<Output = Result<(), Error>> + use<'_, 'z, 'a, T, K, WATCHES, WATCH_BYTES, N>
    {
        let asked = self.recipe().and_then(|lock| Ok(lock.release()?));
        self.until_wound_up(asked, Self::idle, Self::failure)
    }

    fn idle(lock: &Lock<N>) -> bool {
        lock.state() == LockState::Idle
    }

    /// Deleting its node after a release, a deadline or a loss.
    fn winding_up(lock: &Lock<N>) -> bool {
        lock.state() == LockState::Releasing
    }

    /// How a wound-up attempt's last event fails the call: only `Failed`
    /// (its node refused to go). `Released`, `NotAcquired` and `Lost` (the
    /// node went with the session) all leave nothing behind.
    fn failure(event: LockEvent) -> Option<Error> {
        match event {
            LockEvent::Failed(e) => Some(Error::Recipe(e)),
            _ => None,
        }
    }

    async fn until_acquired(&mut self) -> Result<(), Error> {
        loop {
            match self.next_event().await? {
                LockEvent::Acquired => return Ok(()),
                LockEvent::NotAcquired(_) => return Err(Error::NotAcquired),
                LockEvent::Failed(e) => return Err(Error::Recipe(e)),
                LockEvent::Lost => return Err(Error::Lost),
                _ => continue,
            }
        }
    }
}
