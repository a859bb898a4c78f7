//! A session's state as the driver needs it, whatever the backend.

use zookeeper_client as zk;

/// Where a session stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum State {
    /// Connected (read-only counts: reads are served).
    Connected,
    /// The connection is lost; the session may resume.
    Disconnected,
    /// The server ended the session, or refused its authentication on a
    /// reconnect: either way it is over for this client, and a renewing
    /// session opens the next one (which stops if that is refused too).
    Expired,
    /// Closed by its client.
    Closed,
}

impl State {
    /// Whether no state follows.
    pub(crate) fn is_terminal(self) -> bool {
        matches!(self, State::Expired | State::Closed)
    }
}

impl From<zk::SessionState> for State {
    fn from(state: zk::SessionState) -> Self {
        use zk::SessionState as S;
        match state {
            S::SyncConnected | S::ConnectedReadOnly => State::Connected,
            S::Disconnected => State::Disconnected,
            S::Expired | S::AuthFailed => State::Expired,
            S::Closed => State::Closed,
        }
    }
}

/// The changes of one session's state.
pub(crate) enum States {
    Real(zk::StateWatcher),
    #[cfg(feature = "sim")]
    Sim(tokio::sync::watch::Receiver<State>),
}

impl States {
    /// The next state; never resolves once the session is over and no
    /// further state can come.
    pub(crate) async fn changed(&mut self) -> State {
        match self {
            States::Real(watcher) => watcher.changed().await.into(),
            #[cfg(feature = "sim")]
            States::Sim(states) => {
                if states.changed().await.is_err() {
                    std::future::pending::<()>().await;
                }
                *states.borrow_and_update()
            }
        }
    }

    /// The state now, marked seen: `changed` waits for a later one.
    pub(crate) fn state(&mut self) -> State {
        match self {
            States::Real(watcher) => watcher.state().into(),
            #[cfg(feature = "sim")]
            States::Sim(states) => *states.borrow_and_update(),
        }
    }
}
