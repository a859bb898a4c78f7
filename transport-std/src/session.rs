//! A ZooKeeper session that is replaced by a new one when it expires.
//!
//! A `zookeeper_client::Client` is one session: once the server expires it,
//! the client is done for good. Recipes that must come back by themselves
//! after an expiry (a group member, a registered name, a configuration
//! watch) need someone to open the next session; [`Session`] does, and the
//! drivers of recipes started on it move to the new session and tell their
//! recipe `Connected` with the new session id.

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use herdless_core::Acl;
use tokio::sync::watch;
use tracing::{debug, info, warn};
use zookeeper_client as zk;

use crate::backend::{Backend, State};
use crate::driver::Source;
use crate::{ConnectOptions, Error};

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
    options: ConnectOptions,
    clients: watch::Receiver<zk::Client>,
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
    /// Connects the first session to `addr` (`host:port[,host:port...]`)
    /// with the given session timeout, and starts renewing it.
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
        tokio::spawn(renew(open, tx));
        Ok(Session {
            inner: Arc::new(Inner {
                addr: addr.to_owned(),
                options,
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

/// Opens a new session with `open` each time the current one expires,
/// while anyone still follows it. Shared by [`Session`] and the in-memory
/// [`SimSession`](crate::sim::SimSession).
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

/// What a recipe can run on: a plain client (one session), a [`Session`]
/// that renews itself after expiry, their in-memory counterparts
/// ([`SimClient`](crate::sim::SimClient),
/// [`SimSession`](crate::sim::SimSession); feature `sim`), or any of them
/// [`WithAcl`]. Code written against `&impl Connection` runs unchanged on
/// each.
pub trait Connection: sealed::Sealed {
    /// The id of the current session.
    fn session_id(&self) -> i64 {
        self.source().backend().session_id()
    }
}

impl Connection for zk::Client {}

impl Connection for Session {}

/// A connection whose recipes create every node (their own, their
/// directories, the ancestors they create) with a chosen ACL instead of
/// [`Acl::OPEN`].
///
/// Wraps a [`Client`](zk::Client) or a [`Session`]; every recipe made on it
/// uses the ACL. With digest authentication on the client
/// ([`ConnectOptions::digest`](crate::ConnectOptions::digest)),
/// [`Acl::CREATOR_ALL`] lets only sessions authenticated as the same user
/// create, delete, read or write the recipes' nodes. What guards a
/// recipe's nodes (the directory's ACL, since ZooKeeper checks creation and
/// deletion on the parent) is told on [`Acl`].
///
/// A create refused by the server (`NoAuth`, or `InvalidAcl` when the
/// session has no identity for `CREATOR_ALL`) fails the recipe's
/// operation with [`Error::Zk`](crate::Error::Zk) or the recipe's error
/// carrying that code; it is not retried.
///
/// ```no_run
/// use std::time::Duration;
/// use herdless_std::{Acl, ConnectOptions, Lock, WithAcl};
/// # async fn run() -> Result<(), herdless_std::Error> {
/// let client = ConnectOptions::new(Duration::from_secs(10))
///     .digest("app", "secret")
///     .connect("127.0.0.1:2181")
///     .await?;
/// let secured = WithAcl::new(client, Acl::CREATOR_ALL);
/// let lock = Lock::new(&secured, "/locks/printer")?;
/// # drop(lock); Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct WithAcl<C> {
    conn: C,
    acl: Acl<'static>,
}

impl<C: Connection> WithAcl<C> {
    /// `conn`, whose recipes create their nodes with `acl`.
    pub fn new(conn: C, acl: Acl<'static>) -> Self {
        WithAcl { conn, acl }
    }

    /// The ACL the recipes give their nodes.
    pub fn acl(&self) -> Acl<'static> {
        self.acl
    }

    /// The wrapped connection.
    pub fn inner(&self) -> &C {
        &self.conn
    }
}

impl<C: Connection> Connection for WithAcl<C> {}

pub(crate) mod sealed {
    use herdless_core::Acl;

    use crate::driver::Source;

    /// Where a driver gets its clients from, and the ACL its recipes give
    /// their nodes; not for implementing outside.
    pub trait Sealed {
        fn source(&self) -> Source;

        fn acl(&self) -> Acl<'static> {
            Acl::OPEN
        }
    }

    impl<C: super::Connection> Sealed for super::WithAcl<C> {
        fn source(&self) -> Source {
            self.conn.source()
        }

        fn acl(&self) -> Acl<'static> {
            self.acl
        }
    }

    impl Sealed for zookeeper_client::Client {
        fn source(&self) -> Source {
            Source::Fixed(self.clone().into())
        }
    }

    impl Sealed for super::Session {
        fn source(&self) -> Source {
            super::Session::source(self)
        }
    }
}
