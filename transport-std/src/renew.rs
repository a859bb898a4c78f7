//! Opening the next session each time the current one expires: what
//! [`Session`](crate::Session) and the in-memory `sim::SimSession` share.

use std::future::Future;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use tokio::sync::watch;
use tracing::{debug, error, info, warn};

use crate::backend::{Backend, State};
use crate::Error;

/// Longest wait between two attempts to open a new session.
const MAX_BACKOFF: Duration = Duration::from_secs(2);

/// Starts [`renew`] on a task of its own. The cell returned holds why it
/// stopped, set before `clients` is dropped: a recipe that hears no
/// session follows finds the reason already there.
pub(crate) fn spawn<T, F, Fut>(open: F, clients: watch::Sender<T>) -> Arc<OnceLock<Error>>
where
    T: Clone + Into<Backend> + Send + Sync + 'static,
    F: FnMut() -> Fut + Send + 'static,
    Fut: Future<Output = Result<T, Error>> + Send,
{
    let ended = Arc::new(OnceLock::new());
    let why = ended.clone();
    tokio::spawn(async move {
        let _ = why.set(renew(open, &clients).await);
    });
    ended
}

/// Opens a new session with `open` each time the current one expires,
/// while anyone still follows it; returns why it stopped.
///
/// It stops when the current session is closed by its client, when nobody
/// follows any more, when the server refuses the authentication of a new
/// session, and when the chroot is gone: the same credentials would be
/// refused on every attempt, a chroot someone deleted is not coming back by
/// itself, and trying for ever would only hide the failure from the
/// recipes waiting for a session.
async fn renew<T, F, Fut>(mut open: F, clients: &watch::Sender<T>) -> Error
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
                () = clients.closed() => return Error::SessionEnded,
            }
        };
        if ended != State::Expired {
            debug!(?ended, "session closed: not renewing");
            return Error::SessionEnded;
        }
        warn!(
            session_id = current.session_id(),
            "session expired: opening a new one"
        );
        let mut backoff = Duration::from_millis(50);
        let next = loop {
            if clients.is_closed() {
                return Error::SessionEnded;
            }
            match open().await {
                Ok(client) => break client,
                Err(e) if is_final(&e) => {
                    error!(error = %e, "cannot open a new session: no session will be opened");
                    return e;
                }
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

/// Whether every later attempt would fail the same way.
fn is_final(e: &Error) -> bool {
    matches!(
        e,
        Error::Connect(zookeeper_client::Error::AuthFailed) | Error::ChrootMissing(_)
    )
}
