//! Leader election on the driver: campaign, lead while working, resign.

use core::future::Future;

use embassy_time::Duration;
use herdless_core::election::{Election, ElectionEvent, ElectionState};
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
        const D: usize,
    > Handle<'z, 'a, T, Election<N, D>, K, WATCHES, WATCH_BYTES>
{
    /// Volunteers with `data` (a device id, an address) and waits until
    /// this candidate leads; `guid` must be fresh random bytes for every
    /// campaign.
    ///
    /// Events of an earlier campaign still unread are dropped; one still
    /// cleaning up (after a loss, its acknowledgement being deleted) is
    /// waited for first.
    ///
    /// Fails with `Error::Recipe(SessionEnded)` when the session ends
    /// before this candidate leads (cut off past the session timeout): its
    /// node went with the session. Call again: after an expiry the driver
    /// opens the next session by itself and the call goes on there (with
    /// a fresh `guid`); where no session follows (renewal off, credentials
    /// refused) it fails with [`Error::SessionOver`].
    ///
    /// Not cancel-safe: a dropped call leaves the candidate in the
    /// election; call [`resign`](Self::resign) to leave it.
    pub async fn campaign(&mut self, guid: Guid, data: &[u8]) -> Result<(), Error> {
        self.start_round(Self::idle, Self::winding_up, Self::failure)
            .await?;
        self.recipe()?.campaign(guid, data)?;
        self.until_leading().await
    }

    /// Volunteers for at most `timeout`; `Ok(false)` when this candidate
    /// did not lead by then (its node is removed). The listing that
    /// follows the create decides however long the create took: a vacant
    /// election is led even with a zero timeout. An earlier campaign is
    /// dealt with as by [`campaign`](Self::campaign).
    pub async fn campaign_timeout(
        &mut self,
        guid: Guid,
        data: &[u8],
        timeout: Duration,
    ) -> Result<bool, Error> {
        self.start_round(Self::idle, Self::winding_up, Self::failure)
            .await?;
        let deadline = self.zk.deadline_in(timeout);
        self.recipe()?.campaign_until(guid, data, deadline)?;
        granted(self.until_leading().await)
    }

    /// Whether this candidate leads and its session is not in doubt, as of
    /// the last time the session was driven: after a pause longer than the
    /// read timeout (two thirds of the session timeout) it may still say
    /// `true` of a leadership the server has ended. Drive the session first
    /// ([`lead_while`](Self::lead_while) does, before the work runs).
    pub fn is_leading(&mut self) -> bool {
        self.recipe()
            .is_ok_and(|e| e.is_leading() && !e.is_suspended())
    }

    /// Runs `work` while leading, driving the session meanwhile. Stops
    /// `work` as soon as leadership is in doubt: [`Error::Suspended`] when
    /// the connection is lost (wait with [`resumed`](Self::resumed) before
    /// acting as leader again), [`Error::Lost`] when leadership is gone.
    pub async fn lead_while<F: Future>(&mut self, work: F) -> Result<F::Output, Error> {
        // No gate: a leadership in doubt is `Suspended`, which stops it.
        self.work_unless(
            work,
            |_| false,
            |event| match event {
                ElectionEvent::Suspended => Some(Error::Suspended),
                ElectionEvent::Lost => Some(Error::Lost),
                _ => None,
            },
        )
        .await
    }

    /// After [`Error::Suspended`]: waits until the same session is back
    /// and the candidate's node is confirmed to be its own (`Ok`), or
    /// leadership is lost ([`Error::Lost`]).
    pub async fn resumed(&mut self) -> Result<(), Error> {
        if self.is_leading() {
            return Ok(());
        }
        loop {
            match self.next_event().await? {
                ElectionEvent::Resumed | ElectionEvent::Leading => return Ok(()),
                ElectionEvent::Lost => return Err(Error::Lost),
                ElectionEvent::Failed(e) => return Err(Error::Recipe(e)),
                _ => continue,
            }
        }
    }

    /// Leaves the election and waits until the candidate's node (and the
    /// acknowledgement, when leading) is deleted.
    ///
    /// The candidate is told to resign when this is called; the future
    /// only waits.
    pub fn resign(
        &mut self,
    ) -> impl Future<Output = Result<(), Error>> + use<'_, 'z, 'a, T, K, WATCHES, WATCH_BYTES, N, D>
    {
        let asked = self.recipe().and_then(|election| Ok(election.resign()?));
        self.until_wound_up(asked, Self::idle, Self::failure)
    }

    fn idle(election: &Election<N, D>) -> bool {
        election.state() == ElectionState::Idle
    }

    /// Cleaning up after a resignation, a deadline or a loss.
    fn winding_up(election: &Election<N, D>) -> bool {
        election.state() == ElectionState::Resigning
    }

    /// How a wound-up campaign's last event fails the call: only `Failed`
    /// (its node refused to go). `Resigned`, `TimedOut` (a deadline met on
    /// the way out) and `Lost` (the session took the node with it) all
    /// leave nothing behind.
    fn failure(event: ElectionEvent) -> Option<Error> {
        match event {
            ElectionEvent::Failed(e) => Some(Error::Recipe(e)),
            _ => None,
        }
    }

    async fn until_leading(&mut self) -> Result<(), Error> {
        loop {
            match self.next_event().await? {
                ElectionEvent::Leading | ElectionEvent::Resumed => return Ok(()),
                ElectionEvent::Lost => return Err(Error::Lost),
                ElectionEvent::TimedOut | ElectionEvent::Resigned => {
                    return Err(Error::NotAcquired)
                }
                ElectionEvent::Failed(e) => return Err(Error::Recipe(e)),
                _ => continue,
            }
        }
    }
}
