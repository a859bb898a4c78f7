//! A session on the in-memory ZooKeeper that renews itself after expiry.

use std::fmt;
use std::sync::{Arc, OnceLock};

use tokio::sync::watch;

use super::{SimClient, SimServer};
use crate::driver::Source;
use crate::renew;
use crate::Error;

/// The in-memory counterpart of a [`Session`](crate::Session): when its
/// session expires it opens the next one, and the recipes started on it
/// move there. Cheap to clone; clones follow the same current session.
#[derive(Clone)]
pub struct SimSession {
    clients: watch::Receiver<SimClient>,
    ended: Arc<OnceLock<Error>>,
}

impl fmt::Debug for SimSession {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SimSession")
            .field("session_id", &self.session_id())
            .finish()
    }
}

impl SimSession {
    /// Must be called inside a tokio runtime (the renewing task). Each
    /// session is authenticated as `user` (name, password) if given.
    pub(super) fn open(server: SimServer, user: Option<(String, String)>) -> SimSession {
        let name = user.as_ref().map(|(name, _)| name.clone());
        let connect = move |server: &SimServer| match &user {
            Some((name, password)) => server.connect_as(name, password),
            None => server.connect(),
        };
        let (tx, rx) = watch::channel(connect(&server));
        let open = move || {
            let (server, connect, name) = (server.clone(), connect.clone(), name.clone());
            async move {
                if name.is_some_and(|name| server.refuses_credentials_of(&name)) {
                    Err(Error::Connect(zookeeper_client::Error::AuthFailed))
                } else if server.refusing() {
                    Err(Error::Zk(herdless_core::ZkError::ConnectionLoss))
                } else {
                    Ok(connect(&server))
                }
            }
        };
        SimSession {
            clients: rx,
            ended: renew::spawn(open, tx),
        }
    }

    /// The current session.
    pub fn client(&self) -> SimClient {
        self.clients.borrow().clone()
    }

    /// The current session's id.
    pub fn session_id(&self) -> i64 {
        self.clients.borrow().session_id()
    }

    /// Why no new session follows the current one, once none will; `None`
    /// while it renews. As [`Session::ended`](crate::Session::ended):
    /// `Error::Connect(AuthFailed)` once the server refused the credentials
    /// of a new session ([`SimServer::refuse_credentials`]).
    pub fn ended(&self) -> Option<Error> {
        self.ended.get().cloned()
    }

    /// Resolves once a session other than `session_id` is current.
    /// Cancel-safe.
    pub async fn renewed(&self, session_id: i64) {
        let mut clients = self.clients.clone();
        let _ = clients.wait_for(|c| c.session_id() != session_id).await;
    }
}

impl crate::Connection for SimSession {}

impl crate::connection::sealed::Sealed for SimSession {
    fn source(&self) -> Source {
        Source::SimRenewing(self.clients.clone())
    }
}
