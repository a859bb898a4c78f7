//! A ZooKeeper session that is replaced by a new one when it expires.
//!
//! A `zookeeper_client::Client` is one session: once the server expires it,
//! the client is done for good. Recipes that must come back by themselves
//! after an expiry (a group member, a registered name, a configuration
//! watch) need someone to open the next session; [`Session`] does, and the
//! drivers of recipes started on it move to the new session and tell their
//! recipe `Connected` with the new session id.

use std::fmt;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use tokio::sync::watch;
use zookeeper_client as zk;

use crate::driver::Source;
use crate::renew;
use crate::{ConnectOptions, Error};

/// A ZooKeeper session that renews itself after expiry.
///
/// Cheap to clone; every clone follows the same current session. The
/// renewing task stops once every clone, and every recipe started on it, is
/// gone, when the current client is closed, when the server refuses the
/// credentials of a new session, or when its chroot is gone (see
/// [`ended`](Self::ended)).
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
    options: ConnectOptions,
    clients: watch::Receiver<zk::Client>,
    ended: Arc<OnceLock<Error>>,
}

impl fmt::Debug for Session {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Session")
            .field("addr", &self.inner.addr)
            .field("options", &self.inner.options)
            .field("session_id", &self.session_id())
            .finish()
    }
}

impl Session {
    /// Connects the first session to `addr`
    /// (`host:port[,host:port...][/chroot]`) with the given session
    /// timeout, and starts renewing it. Fails with
    /// [`Error::InvalidChroot`] under a chroot that is not a valid path,
    /// and with [`Error::ChrootMissing`] under one that does not exist.
    ///
    /// Not cancel-safe in a useful sense: a dropped connect leaves nothing
    /// behind, but must simply be retried.
    pub async fn connect(addr: &str, session_timeout: Duration) -> Result<Session, Error> {
        Self::connect_with(addr, ConnectOptions::new(session_timeout)).await
    }

    /// Connects the first session to `addr` with `options` (authentication,
    /// TLS), and starts renewing it: every session it opens after an expiry
    /// is opened with the same options.
    ///
    /// Not cancel-safe in a useful sense: a dropped connect leaves nothing
    /// behind, but must simply be retried.
    pub async fn connect_with(addr: &str, options: ConnectOptions) -> Result<Session, Error> {
        let first = options.connect(addr).await?;
        let (tx, rx) = watch::channel(first);
        let (at, with) = (addr.to_owned(), options.clone());
        let open = move || {
            let (at, with) = (at.clone(), with.clone());
            async move { with.connect(&at).await }
        };
        let ended = renew::spawn(open, tx);
        Ok(Session {
            inner: Arc::new(Inner {
                addr: addr.to_owned(),
                options,
                clients: rx,
                ended,
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

    /// Why no new session follows the current one, once none will; `None`
    /// while this `Session` renews.
    ///
    /// A recipe on a session that has ended fails with
    /// [`Error::SessionEnded`]; this says why:
    /// [`Error::Connect`]`(AuthFailed)` when the server refused the
    /// credentials of a new session (one opened after an expiry, or after
    /// the server refused them on a reconnect of the current one): they
    /// would be refused on every attempt, so no more are made;
    /// [`Error::ChrootMissing`] when the chroot was deleted before a new
    /// session could be opened under it;
    /// [`Error::SessionEnded`] when the current client was closed.
    ///
    /// ```no_run
    /// # async fn run(session: herdless_std::Session) {
    /// use herdless_std::Error;
    /// use zookeeper_client as zk;
    /// if let Some(Error::Connect(zk::Error::AuthFailed)) = session.ended() {
    ///     eprintln!("our credentials were refused: no session will be opened");
    /// }
    /// # }
    /// ```
    pub fn ended(&self) -> Option<Error> {
        self.inner.ended.get().cloned()
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
