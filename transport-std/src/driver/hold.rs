//! What a lock guard and a leadership share: the node they hold by, where
//! the holding stands, the waits and the fence built on that, and giving
//! the holding up when dropped.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::backend::Backend;
use crate::driver::DriverHandle;
use crate::fence::Fenced;

/// The states of a holding that [`Hold`] acts on ([`Holding`](crate::lock::Holding),
/// [`LeaderState`](crate::election::LeaderState)).
pub(crate) trait Standing: Copy + PartialEq + Send + Sync + 'static {
    /// Held, connection up.
    const HELD: Self;
    /// Held when the connection dropped: maybe no more.
    const SUSPENDED: Self;
    /// Gone: the session ended or the node was deleted.
    const LOST: Self;
}

/// A holding of the recipe `R` by the node `node_path`, on `backend`'s
/// session, reported by the driver through `state`.
pub(crate) struct Hold<R: 'static, S> {
    /// The session the node is on: a fence over a later session fails, as
    /// it must.
    backend: Backend,
    node_path: String,
    state: watch::Receiver<S>,
    handle: Option<DriverHandle<R>>,
    /// What dropping the holding tells the recipe (release, resign).
    give_up: fn(&mut R),
    /// The task that presumes the holding lost after a long suspension.
    presumption: Option<JoinHandle<()>>,
}

/// How a holding is presumed lost while its connection is down: after
/// `after` in doubt, the server may have expired the session (its clock
/// started at the last packet it had from us, before we noticed), and
/// another contender may hold. The state channel's sender, to say so.
pub(crate) struct PresumeLost<S> {
    pub(crate) after: Duration,
    pub(crate) state: Arc<watch::Sender<S>>,
}

/// How long a lock or leadership may stay suspended (its connection down)
/// before the session may have expired on the server, for a session
/// timeout `timeout`: a [`LockGuard`](crate::LockGuard) or
/// [`Leadership`](crate::Leadership) suspended that long is lost for its
/// holder, as another contender may hold by then. A holder whose work
/// takes time to stop must start stopping earlier (the `herdless` command
/// line stops its command this long minus `--grace` into a suspension).
///
/// zookeeper-client (as vendored: see `vendor/README.md`) notices a
/// silent connection once no ping sent in the last 2/5 of the timeout has
/// been answered, checked every 1/20. The server had the last answered
/// ping by the time it answered, so it last heard from us at least 2/5 of
/// the timeout before we notice (9/20 with the check's granularity); it
/// expires the session a whole timeout after that, 11/20 of it after the
/// notice at the earliest. Half the timeout leaves 1/20 of it for the
/// clocks and for the task that acts on the news. A notification, which
/// the server sends whatever it last heard from us, counts for nothing
/// here.
pub fn presumed_lost_after(timeout: Duration) -> Duration {
    timeout / 2
}

impl<R: 'static, S: Standing> Hold<R, S> {
    pub(crate) fn new(
        backend: Backend,
        node_path: String,
        state: watch::Receiver<S>,
        handle: DriverHandle<R>,
        give_up: fn(&mut R),
        presume: Option<PresumeLost<S>>,
    ) -> Self {
        let presumption = presume.map(|p| tokio::spawn(presume_lost(p, handle.clone(), give_up)));
        Hold {
            backend,
            node_path,
            state,
            handle: Some(handle),
            give_up,
            presumption,
        }
    }

    pub(crate) fn node_path(&self) -> &str {
        &self.node_path
    }

    pub(crate) fn now(&self) -> S {
        *self.state.borrow()
    }

    /// Resolves once the holding is lost. A closed channel means the driver
    /// is gone, which only happens once nothing is held.
    pub(crate) async fn lost(&self) {
        let mut state = self.state.clone();
        let _ = state.wait_for(|s| *s == S::LOST).await;
    }

    /// Resolves once the holding is in doubt or lost.
    pub(crate) async fn suspended(&self) {
        let mut state = self.state.clone();
        let _ = state
            .wait_for(|s| *s == S::SUSPENDED || *s == S::LOST)
            .await;
    }

    /// Resolves with the state once the holding is not in doubt: at once
    /// unless suspended. A closed channel means the driver is gone, which
    /// only happens once nothing is held.
    pub(crate) async fn settled(&self) -> S {
        let mut state = self.state.clone();
        let settled = state.wait_for(|s| *s != S::SUSPENDED).await;
        settled.map_or(S::LOST, |s| *s)
    }

    /// Writes that land only while the node exists; failing at once if the
    /// holding is known to be gone.
    pub(crate) fn fenced(&self) -> Fenced {
        let held = matches!(self.now(), s if s == S::HELD || s == S::SUSPENDED);
        Fenced::new(self.backend.clone(), self.node_path.clone(), held)
    }

    /// Gives the holding up now; the driver's events tell when it is done.
    /// `false` if there is nothing left to give up: given up before, or the
    /// driver is gone, which it only is once nothing is held.
    pub(crate) fn give_up(&mut self) -> bool {
        self.handle
            .take()
            .is_some_and(|handle| handle.command(self.give_up).is_ok())
    }
}

impl<R: 'static, S> Drop for Hold<R, S> {
    fn drop(&mut self) {
        if let Some(presumption) = self.presumption.take() {
            presumption.abort();
        }
        if let Some(handle) = self.handle.take() {
            let _ = handle.command(self.give_up);
        }
    }
}

/// Each time the holding is suspended, waits `presume.after` for it to be
/// held again; if it is still suspended then, it is lost for the holder
/// (the state says so, and never goes back) and given up, so that its
/// node goes if the same session comes back after all.
async fn presume_lost<R: 'static, S: Standing>(
    presume: PresumeLost<S>,
    handle: DriverHandle<R>,
    give_up: fn(&mut R),
) {
    let mut state = presume.state.subscribe();
    loop {
        let Ok(now) = state
            .wait_for(|s| *s == S::SUSPENDED || *s == S::LOST)
            .await
            .map(|s| *s)
        else {
            return;
        };
        if now == S::LOST {
            return;
        }
        let back = tokio::time::timeout(presume.after, state.wait_for(|s| *s != S::SUSPENDED));
        match back.await {
            Ok(Ok(_)) => continue,
            Ok(Err(_)) => return,
            Err(_) => {}
        }
        let presumed = presume.state.send_if_modified(|s| {
            let suspended = *s == S::SUSPENDED;
            if suspended {
                *s = S::LOST;
            }
            suspended
        });
        if presumed {
            tracing::warn!(
                "suspended for {:?}: presumed lost (the session may have expired)",
                presume.after
            );
            let _ = handle.command(give_up);
        }
        return;
    }
}
