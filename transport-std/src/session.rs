//! A ZooKeeper session that is replaced by a new one when it expires.
//!
//! A `zookeeper_client::Client` is one session: once the server expires it,
//! the client is done for good. Recipes that must come back by themselves
//! after an expiry (a group member, a registered name, a configuration
//! watch) need someone to open the next session; [`Session`] does, and the
//! drivers of recipes started on it move to the new session and tell their
//! recipe `Connected` with the new session id.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tracing::{debug, info, warn};
use zookeeper_client as zk;

use crate::driver::Source;
use crate::Error;

/// Longest wait between two attempts to open a new session.
const MAX_BACKOFF: Duration = Duration::from_secs(2);

/// A ZooKeeper session that renews itself after expiry.
///
/// Cheap to clone; every clone follows the same current session. The
/// renewing task stops once every clone, and every recipe started on it, is
/// gone, or when the current client is closed.
///
/// ```no_run
/// use std::time::Duration;
/// # async fn run() -> Result<(), herdless_std::Error> {
/// let session = herdless_std::Session::connect("127.0.0.1:2181", Duration::from_secs(10)).await?;
/// let member = herdless_std::GroupMember::join(&session, "/fleet", "edge-7", b"10.0.0.7").await?;
/// // If the session expires, the member re-joins on the next one by itself.
/// # drop(member); Ok(()) }
/// ```
#[derive(Clone)]
pub struct Session {
    inner: Arc<Inner>,
}

struct Inner {
    addr: String,
    timeout: Duration,
    clients: watch::Receiver<zk::Client>,
}

impl fmt::Debug for Session {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Session")
            .field("addr", &self.inner.addr)
            .field("timeout", &self.inner.timeout)
            .field("session_id", &self.session_id())
            .finish()
    }
}

impl Session {
    /// Connects the first session to `addr` (`host:port[,host:port...]`)
    /// with the given session timeout, and starts renewing it.
    ///
    /// Not cancel-safe in a useful sense: a dropped connect leaves nothing
    /// behind, but must simply be retried.
    pub async fn connect(addr: &str, session_timeout: Duration) -> Result<Session, Error> {
        let first = crate::connect(addr, session_timeout).await?;
        let (tx, rx) = watch::channel(first);
        tokio::spawn(renew(addr.to_owned(), session_timeout, tx));
        Ok(Session {
            inner: Arc::new(Inner {
                addr: addr.to_owned(),
                timeout: session_timeout,
                clients: rx,
            }),
        })
    }

    /// The current session's client.
    pub fn client(&self) -> zk::Client {
        self.inner.clients.borrow().clone()
    }

    /// The current session's id.
    pub fn session_id(&self) -> i64 {
        self.inner.clients.borrow().session_id().0
    }

    /// Resolves once a session other than `session_id` is current.
    /// Cancel-safe.
    pub async fn renewed(&self, session_id: i64) {
        let mut clients = self.inner.clients.clone();
        let _ = clients.wait_for(|c| c.session_id().0 != session_id).await;
    }

    pub(crate) fn source(&self) -> Source {
        Source::Renewing(self.inner.clients.clone())
    }
}

/// Opens a new session each time the current one expires, while anyone
/// still follows it.
async fn renew(addr: String, timeout: Duration, clients: watch::Sender<zk::Client>) {
    loop {
        let current = clients.borrow().clone();
        let mut states = current.state_watcher();
        let ended = loop {
            let state = states.state();
            if state.is_terminated() {
                break state;
            }
            tokio::select! {
                _ = states.changed() => {}
                () = clients.closed() => return,
            }
        };
        if ended != zk::SessionState::Expired && ended != zk::SessionState::AuthFailed {
            debug!(?ended, "session closed: not renewing");
            return;
        }
        warn!(
            session_id = current.session_id().0,
            "session expired: opening a new one"
        );
        let mut backoff = Duration::from_millis(50);
        let next = loop {
            if clients.is_closed() {
                return;
            }
            match crate::connect(&addr, timeout).await {
                Ok(client) => break client,
                Err(e) => {
                    warn!(error = %e, "could not open a new session yet");
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(MAX_BACKOFF);
                }
            }
        };
        info!(session_id = next.session_id().0, "new session");
        clients.send_replace(next);
    }
}

/// What a recipe can run on: a plain client (one session), or a
/// [`Session`] that renews itself after expiry.
pub trait Connection: sealed::Sealed {
    /// The client of the current session.
    fn client(&self) -> zk::Client;
}

impl Connection for zk::Client {
    fn client(&self) -> zk::Client {
        self.clone()
    }
}

impl Connection for Session {
    fn client(&self) -> zk::Client {
        Session::client(self)
    }
}

pub(crate) mod sealed {
    use crate::driver::Source;

    /// Where a driver gets its clients from; not for implementing outside.
    pub trait Sealed {
        fn source(&self) -> Source;
    }

    impl Sealed for zookeeper_client::Client {
        fn source(&self) -> Source {
            Source::Fixed(self.clone())
        }
    }

    impl Sealed for super::Session {
        fn source(&self) -> Source {
            super::Session::source(self)
        }
    }
}
