//! What a lock guard and a leadership share: the node they hold by, where
//! the holding stands, the waits and the fence built on that, and giving
//! the holding up when dropped.

use tokio::sync::watch;

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
}

impl<R: 'static, S: Standing> Hold<R, S> {
    pub(crate) fn new(
        backend: Backend,
        node_path: String,
        state: watch::Receiver<S>,
        handle: DriverHandle<R>,
        give_up: fn(&mut R),
    ) -> Self {
        Hold {
            backend,
            node_path,
            state,
            handle: Some(handle),
            give_up,
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
        if let Some(handle) = self.handle.take() {
            let _ = handle.command(self.give_up);
        }
    }
}
