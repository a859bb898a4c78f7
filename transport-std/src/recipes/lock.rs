//! Locks on tokio: `acquire().await` gives a guard that releases.
//!
//! [`Lock`] is the exclusive lock, and also each side of a
//! [`ReadWriteLock`](crate::ReadWriteLock). Any of them can be acquired
//! revocably ([`Lock::acquire_revocable`]), giving a [`RevocableGuard`] that
//! hears when someone asks for the lock with
//! [`revoke`](crate::revoke::revoke).

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use herdless_core::lock::{Contender, GiveUp, Lock as CoreLock, LockEvent, LockState};
use herdless_core::naming::Flavour;
use herdless_core::Acl;
use tokio::sync::watch;
use tokio::time::Instant as TokioInstant;
use tracing::{info, warn};

use crate::driver::channel;
use crate::driver::hold::{presumed_lost_after, Hold, PresumeLost, Standing};
use crate::driver::own_node::OwnNode;
use crate::driver::undo::Undo;
use crate::driver::{self, Counters, Source};
use crate::fence::Fenced;
use crate::Connection;
use crate::Error;

/// Where a held lock stands, as seen by its guard.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Holding {
    /// Held, connection up.
    Held,
    /// Held when the connection dropped: it may have been lost. Pause work
    /// that needs exclusivity until it is `Held` again (or `Lost`).
    Suspended,
    /// Lost: the session ended or the node was deleted. Stop at once.
    Lost,
    /// Released by this guard.
    Released,
}

/// An exclusive lock on a ZooKeeper directory (the recipes page's lock).
///
/// Cheap to create; each acquisition runs the core state machine in its own
/// task over the shared client, so one session can hold many locks.
#[derive(Clone)]
pub struct Lock {
    source: Source,
    dir: String,
    flavour: Flavour,
    contender: Contender,
    acl: Acl<'static>,
    counters: Arc<Counters>,
}

impl std::fmt::Debug for Lock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lock")
            .field("dir", &self.dir)
            .field("flavour", &self.flavour)
            .field("contender", &self.contender)
            .finish()
    }
}

impl Lock {
    /// A lock on `dir` (created with its ancestors when first needed), with
    /// nodes named as the recipes page does (`<guid>-lock-`).
    ///
    /// On a [`Session`](crate::Session), a lock lost to an expired session
    /// can be acquired again on the next one.
    pub fn new(conn: &impl Connection, dir: &str) -> Result<Lock, Error> {
        Self::with_flavour(conn, dir, Flavour::Recipes)
    }

    /// A lock whose nodes are named in `flavour` (e.g. Curator's), to share a
    /// directory with services in other languages. Contenders of every
    /// flavour are recognised whichever one this lock writes.
    pub fn with_flavour(
        conn: &impl Connection,
        dir: &str,
        flavour: Flavour,
    ) -> Result<Lock, Error> {
        Self::with_contender(conn, dir, Contender::Exclusive, flavour)
    }

    /// A lock of any [`Contender`] kind: the exclusive lock, or one side of
    /// a shared lock (which [`ReadWriteLock`](crate::ReadWriteLock) makes
    /// for you).
    pub fn with_contender(
        conn: &impl Connection,
        dir: &str,
        contender: Contender,
        flavour: Flavour,
    ) -> Result<Lock, Error> {
        CoreLock::<{ herdless_core::lock::DEFAULT_PATH_CAPACITY }>::with_contender(
            dir, contender, flavour,
        )?;
        Ok(Lock {
            source: conn.source(),
            dir: dir.to_owned(),
            flavour,
            contender,
            acl: conn.acl(),
            counters: Arc::default(),
        })
    }

    /// Which kind of contender this lock is (exclusive, reader, writer).
    pub fn contender(&self) -> Contender {
        self.contender
    }

    /// The lock directory.
    pub fn dir(&self) -> &str {
        &self.dir
    }

    /// Watch notifications received by this lock's acquisitions so far.
    pub fn notifications(&self) -> u64 {
        self.counters.notifications.load(Ordering::Relaxed)
    }

    /// Requests sent by this lock's acquisitions so far.
    pub fn requests_sent(&self) -> u64 {
        self.counters.requests.load(Ordering::Relaxed)
    }

    /// Waits until the lock is held.
    ///
    /// Cancel-safe: if the future is dropped (say under
    /// `tokio::time::timeout`), the acquisition is cancelled in the
    /// background and its node deleted, retried across connection losses.
    pub async fn acquire(&self) -> Result<LockGuard, Error> {
        match self.run(Attempt::Wait, false).await? {
            Some(guard) => Ok(guard),
            // Only `try_acquire` and deadlines give up without an error.
            None => Err(Error::InvalidState),
        }
    }

    /// Takes the lock if nobody holds or waits for it; `None` otherwise, after
    /// this attempt's node has been deleted. Cancel-safe like
    /// [`acquire`](Lock::acquire).
    pub async fn try_acquire(&self) -> Result<Option<LockGuard>, Error> {
        self.run(Attempt::Try, false).await
    }

    /// Waits at most `timeout` for the lock; `None` when it passed, after
    /// this attempt's node has been deleted. As with Curator and Kazoo, the
    /// listing that follows the create decides however long the create
    /// took: a free lock is taken even with a zero timeout. Cancel-safe
    /// like [`acquire`](Lock::acquire).
    pub async fn acquire_timeout(&self, timeout: Duration) -> Result<Option<LockGuard>, Error> {
        self.run(Attempt::until(timeout), false).await
    }

    /// Waits until the lock is held, revocably: the guard hears when
    /// someone asks for the lock by writing `unlock` to its node
    /// ([`revoke`](crate::revoke::revoke)), and the holder releases when its
    /// work allows. If the requester forces the revocation
    /// ([`revoke_forced`](crate::revoke::revoke_forced)) and deletes the
    /// node, the guard hears [`Holding::Lost`]; while still waiting, the
    /// acquisition fails with [`Error::Revoked`].
    ///
    /// Cancel-safe like [`acquire`](Lock::acquire).
    ///
    /// ```no_run
    /// # async fn run(lock: herdless_std::Lock) -> Result<(), herdless_std::Error> {
    /// let guard = lock.acquire_revocable().await?;
    /// tokio::select! {
    ///     _ = guard.revocation_requested() => { /* wrap up quickly */ }
    ///     _ = guard.lost() => { /* forced: stop at once */ }
    /// }
    /// guard.release().await?;
    /// # Ok(()) }
    /// ```
    pub async fn acquire_revocable(&self) -> Result<RevocableGuard, Error> {
        match self.run(Attempt::Wait, true).await? {
            Some(guard) => RevocableGuard::new(guard),
            None => Err(Error::InvalidState),
        }
    }

    /// Like [`try_acquire`](Lock::try_acquire), revocably (see
    /// [`acquire_revocable`](Lock::acquire_revocable)).
    pub async fn try_acquire_revocable(&self) -> Result<Option<RevocableGuard>, Error> {
        self.run(Attempt::Try, true)
            .await?
            .map(RevocableGuard::new)
            .transpose()
    }

    /// Like [`acquire_timeout`](Lock::acquire_timeout), revocably (see
    /// [`acquire_revocable`](Lock::acquire_revocable)).
    pub async fn acquire_revocable_timeout(
        &self,
        timeout: Duration,
    ) -> Result<Option<RevocableGuard>, Error> {
        self.run(Attempt::until(timeout), true)
            .await?
            .map(RevocableGuard::new)
            .transpose()
    }

    /// One attempt, made again on the next session each time its session
    /// expires while a renewing one follows: a waiter's node went with its
    /// session, so it queues anew there, as a campaign does.
    async fn run(&self, attempt: Attempt, revocable: bool) -> Result<Option<LockGuard>, Error> {
        let deadline = match attempt {
            Attempt::Until(at) => Some(at),
            Attempt::Wait | Attempt::Try => None,
        };
        let attempt_on = |_| self.attempt(attempt, revocable);
        self.source.across(deadline, attempt_on).await
    }

    /// The core lock an attempt drives, on the heap: built in the
    /// attempt's future, a `CoreLock` (952 B) would take its room there for
    /// as long as the attempt waits, although it moves to the driver before
    /// the first await.
    fn core(&self, attempt: Attempt, revocable: bool) -> Result<Box<CoreLock>, Error> {
        let mut core: CoreLock =
            CoreLock::with_contender(&self.dir, self.contender, self.flavour)?.with_acl(self.acl);
        if revocable {
            core = core.revocable();
        }
        let guid = self.source.backend().guid();
        match attempt {
            Attempt::Wait => core.acquire(guid)?,
            Attempt::Try => core.try_acquire(guid)?,
            Attempt::Until(at) => core.acquire_until(guid, driver::deadline_at_start_until(at))?,
        }
        Ok(Box::new(core))
    }

    async fn attempt(&self, attempt: Attempt, revocable: bool) -> Result<Option<LockGuard>, Error> {
        let core = self.core(attempt, revocable)?;
        let (events_tx, mut events) = channel::unbounded();
        let (holding_tx, holding) = watch::channel(Holding::Held);
        let holding_tx = Arc::new(holding_tx);
        // Only a revocable guard hears requests: the channel would be a
        // few hundred bytes more per waiting contender for nothing.
        let (requested_tx, requested) = revocable.then(|| watch::channel(false)).unzip();
        let on_event = {
            let holding_tx = holding_tx.clone();
            move |event: LockEvent| {
                if let (LockEvent::RevocationRequested, Some(requested_tx)) = (event, &requested_tx)
                {
                    requested_tx.send_replace(true);
                }
                let state = match event {
                    LockEvent::Suspended => Some(Holding::Suspended),
                    LockEvent::Resumed => Some(Holding::Held),
                    LockEvent::Lost => Some(Holding::Lost),
                    LockEvent::Released => Some(Holding::Released),
                    _ => None,
                };
                // Presumed lost in a long suspension, it stays lost: the
                // session coming back does not undo what the holder was
                // told (its node is given up then).
                if let Some(state) = state {
                    holding_tx.send_if_modified(|now| {
                        let changed = *now != Holding::Lost && *now != state;
                        if changed {
                            *now = state;
                        }
                        changed
                    });
                }
                let _ = events_tx.unbounded_send(event);
            }
        };
        let own_node = OwnNode::default();
        let recorded = own_node.clone();
        let handle = driver::spawn_on(
            self.source.clone(),
            core,
            self.counters.clone(),
            move |l: &CoreLock, event| {
                if event == LockEvent::Acquired {
                    recorded.record(
                        l.own_path::<512>()
                            .and_then(Result::ok)
                            .map(|p| p.to_string()),
                    );
                }
                on_event(event)
            },
            |l: &CoreLock| l.state() == LockState::Idle,
        );
        // Until a guard exists, dropping this future cancels the attempt.
        let undo = Undo::new(&handle, |l: &mut CoreLock| {
            let _ = l.cancel();
        });
        loop {
            let Some(event) = events.next().await else {
                return Err(Error::DriverGone);
            };
            match event {
                LockEvent::Acquired => {
                    undo.disarm();
                    info!(dir = %self.dir, "lock acquired");
                    let node_path = own_node.take()?;
                    let hold = Hold::new(
                        self.source.backend(),
                        node_path,
                        holding,
                        handle,
                        |l: &mut CoreLock| {
                            let _ = l.release();
                        },
                        Some(PresumeLost {
                            after: presumed_lost_after(self.source.backend().session_timeout()),
                            state: holding_tx.clone(),
                        }),
                    );
                    return Ok(Some(LockGuard {
                        hold,
                        events,
                        revocation: requested.clone(),
                    }));
                }
                LockEvent::RevocationRequested => {
                    info!(dir = %self.dir, "revocation requested while waiting");
                }
                LockEvent::NotAcquired(GiveUp::Busy | GiveUp::TimedOut) => return Ok(None),
                LockEvent::NotAcquired(GiveUp::Cancelled) => return Ok(None),
                LockEvent::NotAcquired(GiveUp::Revoked) => return Err(Error::Revoked),
                LockEvent::Failed(e) => return Err(e.into()),
                _ => {}
            }
        }
    }
}

#[derive(Clone, Copy)]
enum Attempt {
    Wait,
    Try,
    Until(TokioInstant),
}

impl Attempt {
    /// Until `timeout` from now: one deadline for every session the attempt
    /// is made on.
    fn until(timeout: Duration) -> Attempt {
        driver::deadline_after(timeout).map_or(Attempt::Wait, Attempt::Until)
    }
}

/// A held lock. Dropping it releases the lock in the background; call
/// [`release`](LockGuard::release) to wait until the node is deleted.
#[must_use = "dropping the guard releases the lock at once"]
pub struct LockGuard {
    hold: Hold<CoreLock, Holding>,
    events: channel::Receiver<LockEvent>,
    /// Whether a revocation was requested (revocable acquisitions only).
    revocation: Option<watch::Receiver<bool>>,
}

impl Standing for Holding {
    const HELD: Self = Holding::Held;
    const SUSPENDED: Self = Holding::Suspended;
    const LOST: Self = Holding::Lost;
}

impl std::fmt::Debug for LockGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LockGuard")
            .field("node_path", &self.node_path())
            .field("holding", &self.holding())
            .finish()
    }
}

impl LockGuard {
    /// The full path of this holder's node: put it in a `check` to fence
    /// writes on still holding the lock.
    pub fn node_path(&self) -> &str {
        self.hold.node_path()
    }

    /// A batch of writes that lands only while this guard's node exists,
    /// that is, only while the lock is held: see [`Fenced`]. Fails at once
    /// with [`Error::Fenced`] if the guard already knows the lock is gone.
    pub fn fenced(&self) -> Fenced {
        self.hold.fenced()
    }

    /// Where the lock stands now.
    pub fn holding(&self) -> Holding {
        self.hold.now()
    }

    /// Whether the lock is held with the connection up.
    pub fn is_held(&self) -> bool {
        self.holding() == Holding::Held
    }

    /// Resolves when the lock is lost (the session ended or the node went).
    /// Cancel-safe.
    pub async fn lost(&self) {
        self.hold.lost().await
    }

    /// Resolves when the lock becomes uncertain (`Suspended`) or lost.
    /// Cancel-safe.
    pub async fn suspended(&self) {
        self.hold.suspended().await
    }

    /// Resolves once the lock is not in doubt, with where it stands: at
    /// once unless [`Suspended`](Holding::Suspended); after a dropped
    /// connection, `Held` when the reconnected session found the node
    /// still there, or `Lost`. Cancel-safe.
    ///
    /// ```no_run
    /// # async fn run(lock: herdless_std::Lock) -> Result<(), herdless_std::Error> {
    /// use herdless_std::lock::Holding;
    ///
    /// let guard = lock.acquire().await?;
    /// guard.suspended().await; // pause work that needs exclusivity
    /// if guard.settled().await == Holding::Held {
    ///     // the same session came back with the node: carry on
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn settled(&self) -> Holding {
        self.hold.settled().await
    }

    /// Releases the lock and waits until its node is confirmed deleted
    /// (retried across connection losses until confirmed or the session is
    /// gone). If this future is dropped, the release still completes in the
    /// background.
    pub async fn release(mut self) -> Result<(), Error> {
        if !self.hold.give_up() {
            return Ok(());
        }
        loop {
            match self.events.next().await {
                Some(LockEvent::Released) => {
                    info!(node = %self.node_path(), "lock released");
                    return Ok(());
                }
                Some(LockEvent::Lost) => {
                    warn!(node = %self.node_path(), "lock was lost before its release");
                    return Ok(());
                }
                Some(LockEvent::Failed(e)) => return Err(e.into()),
                Some(_) => {}
                // The driver only stops once the lock is idle.
                None => return Ok(()),
            }
        }
    }
}

/// A lock held revocably (see [`Lock::acquire_revocable`]): a [`LockGuard`]
/// (through `Deref`: [`node_path`](LockGuard::node_path),
/// [`fenced`](LockGuard::fenced), [`lost`](LockGuard::lost), ...) that also
/// hears revocation requests.
///
/// Dropping it releases the lock in the background, like a [`LockGuard`].
///
/// ```no_run
/// # async fn run(lock: herdless_std::Lock) -> Result<(), herdless_std::Error> {
/// let guard = lock.acquire_revocable().await?;
/// println!("revoke me with: {}", guard.node_path());  // a LockGuard method
/// guard.revocation_requested().await;
/// assert!(guard.is_revocation_requested());
/// guard.release().await?;
/// # Ok(()) }
/// ```
#[must_use = "dropping the guard releases the lock at once"]
pub struct RevocableGuard {
    guard: LockGuard,
    requested: watch::Receiver<bool>,
}

impl std::fmt::Debug for RevocableGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RevocableGuard")
            .field("guard", &self.guard)
            .field("revocation_requested", &self.is_revocation_requested())
            .finish()
    }
}

impl RevocableGuard {
    fn new(mut guard: LockGuard) -> Result<RevocableGuard, Error> {
        let requested = guard.revocation.take().ok_or(Error::DriverGone)?;
        Ok(RevocableGuard { guard, requested })
    }

    /// Resolves once someone has asked for the lock (at once if they did so
    /// while this guard's acquisition was still waiting). Release when the
    /// work allows: that is the consent the recipe asks for. Cancel-safe.
    pub async fn revocation_requested(&self) {
        let mut requested = self.requested.clone();
        if requested.wait_for(|r| *r).await.is_err() {
            // The driver is gone, so the lock is no longer held: nothing
            // will ever be requested.
            std::future::pending::<()>().await;
        }
    }

    /// Whether someone has asked for the lock.
    pub fn is_revocation_requested(&self) -> bool {
        *self.requested.borrow()
    }

    /// Releases the lock; see [`LockGuard::release`].
    pub async fn release(self) -> Result<(), Error> {
        self.guard.release().await
    }

    /// The plain guard, no longer listening for requests (the lock stays
    /// revocable on the server: a forced revocation still makes it lost).
    pub fn into_guard(self) -> LockGuard {
        self.guard
    }
}

impl std::ops::Deref for RevocableGuard {
    type Target = LockGuard;

    fn deref(&self) -> &LockGuard {
        &self.guard
    }
}

#[cfg(test)]
mod tests {
    #![allow(unreachable_code, unused_variables, clippy::diverging_sub_expression)]
    use super::{Attempt, CoreLock, Lock};
    use crate::recipes::future_size::size_of_output;

    /// A waiting contender's memory is mostly its `acquire` future. Making
    /// the attempt again on the next session must add little to it: the
    /// carry-over once kept the attempt's outcome, a whole guard, beside
    /// the wait for that session (496 B more than the attempt, against
    /// 272 B now, on the toolchain of this commit).
    #[test]
    fn carrying_an_attempt_over_adds_little_to_a_waiting_acquire() {
        let attempt = size_of_output(|| {
            let lock: &Lock = unreachable!("never called: only its type is used");
            lock.attempt(Attempt::Wait, false)
        });
        let acquire = size_of_output(|| {
            let lock: &Lock = unreachable!("never called: only its type is used");
            lock.run(Attempt::Wait, false)
        });
        assert!(
            acquire <= attempt + 320,
            "a waiting acquire's future is {acquire} B for an attempt of {attempt} B"
        );
    }

    /// A waiting contender's future holds handles, not the core lock: the
    /// lock lives on the heap with its driver, and a copy of it left in
    /// the future (built there, then moved out) was 952 B more per waiter
    /// for as long as it waited.
    #[test]
    fn a_waiting_acquire_does_not_hold_the_core_lock() {
        let acquire = size_of_output(|| {
            let lock: &Lock = unreachable!("never called: only its type is used");
            lock.acquire()
        });
        let core = std::mem::size_of::<CoreLock>();
        assert!(
            acquire < core,
            "a waiting acquire's future is {acquire} B, the core lock {core} B"
        );
    }
}
