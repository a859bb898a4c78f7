//! Opening the next session each time the current one expires: what
//! [`Session`](crate::Session) and the in-memory `sim::SimSession` share.

use std::future::Future;
use std::time::Duration;

use tokio::sync::watch;
use tracing::{debug, info, warn};

use crate::backend::{Backend, State};
use crate::Error;

/// Longest wait between two attempts to open a new session.
const MAX_BACKOFF: Duration = Duration::from_secs(2);

/// Opens a new session with `open` each time the current one expires,
/// while anyone still follows it.
pub(crate) async fn renew<T, F, Fut>(mut open: F, clients: watch::Sender<T>)
where
    T: Clone + Into<Backend>,
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, Error>>,
{
    loop {
        let current: Backend = clients.borrow().clone().into();
        let mut states = current.states();
        let ended = loop {
            let state = states.state();
            if state.is_terminal() {
                break state;
            }
            tokio::select! {
                _ = states.changed() => {}
                () = clients.closed() => return,
            }
        };
        if ended != State::Expired {
            debug!(?ended, "session closed: not renewing");
            return;
        }
        warn!(
            session_id = current.session_id(),
            "session expired: opening a new one"
        );
        let mut backoff = Duration::from_millis(50);
        let next = loop {
            if clients.is_closed() {
                return;
            }
            match open().await {
                Ok(client) => break client,
                Err(e) => {
                    warn!(error = %e, "could not open a new session yet");
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(MAX_BACKOFF);
                }
            }
        };
        let backend: Backend = next.clone().into();
        info!(session_id = backend.session_id(), "new session");
        clients.send_replace(next);
    }
}
