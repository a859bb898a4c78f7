//! What a recipe runs on: the sealed [`Connection`] trait, its
//! implementations for a plain client and a renewing session, and
//! [`WithAcl`].

use herdless_core::Acl;
use zookeeper_client as zk;

use crate::Session;

/// What a recipe can run on: a plain client (one session), a [`Session`]
/// that renews itself after expiry, their in-memory counterparts
/// (`sim::SimClient`, `sim::SimSession`; feature `sim`), or any of them
/// [`WithAcl`]. Code written against `&impl Connection` runs unchanged on
/// each.
pub trait Connection: sealed::Sealed {
    /// The id of the current session, as every herdless type gives it
    /// (the `ephemeralOwner` of the session's nodes).
    ///
    /// On a plain [`Client`](zk::Client), `client.session_id()` finds the
    /// client's own method first, which returns zookeeper-client's
    /// `SessionId`; `Connection::session_id(&client)` is this one:
    ///
    /// ```no_run
    /// use herdless_std::Connection;
    /// # async fn run(client: herdless_std::Client) {
    /// let id: i64 = Connection::session_id(&client);
    /// assert_eq!(id, client.session_id().0);
    /// # }
    /// ```
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
