//! Opening sessions with authentication and TLS, and ZooKeeper's digest
//! identities.

use std::fmt;
use std::time::Duration;

use base64::Engine as _;
use herdless_core::{perms, Acl, AclEntry};
use sha1::{Digest as _, Sha1};
use zookeeper_client as zk;

use crate::{Error, Session};

/// How to open a session: its timeout, the identities it authenticates
/// with, and (feature `tls`) TLS.
///
/// Authentication is sent on every connection of the session, the first
/// and every reconnect (zookeeper-client re-sends it before any request),
/// and a [`Session`] opened with these options authenticates each session
/// it opens after an expiry the same way.
///
/// ```no_run
/// use std::time::Duration;
/// use herdless_std::ConnectOptions;
/// # async fn run() -> Result<(), herdless_std::Error> {
/// let options = ConnectOptions::new(Duration::from_secs(10)).digest("app", "secret");
/// let client = options.connect("127.0.0.1:2181").await?;
/// let session = options.session("127.0.0.1:2181").await?;
/// # drop((client, session)); Ok(()) }
/// ```
#[derive(Clone)]
pub struct ConnectOptions {
    session_timeout: Duration,
    /// `(scheme, auth data)`, in the order given.
    auth: Vec<(String, Vec<u8>)>,
    #[cfg(feature = "tls")]
    tls: Option<zk::TlsOptions>,
}

impl fmt::Debug for ConnectOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never the credentials.
        let schemes: Vec<&str> = self.auth.iter().map(|(s, _)| s.as_str()).collect();
        let mut d = f.debug_struct("ConnectOptions");
        d.field("session_timeout", &self.session_timeout)
            .field("auth_schemes", &schemes);
        #[cfg(feature = "tls")]
        d.field("tls", &self.tls.is_some());
        d.finish()
    }
}

impl ConnectOptions {
    /// Plain TCP, no authentication, sessions of `session_timeout`.
    pub fn new(session_timeout: Duration) -> Self {
        ConnectOptions {
            session_timeout,
            auth: Vec::new(),
            #[cfg(feature = "tls")]
            tls: None,
        }
    }

    /// The session timeout asked for.
    pub fn session_timeout(&self) -> Duration {
        self.session_timeout
    }

    /// Authenticates as `user` with `password` (ZooKeeper's `digest`
    /// scheme). Nodes created with [`Acl::CREATOR_ALL`] on such a session
    /// belong to `digest:user:<hash>` (see [`digest_id`]).
    ///
    /// The password travels in clear text unless the connection is TLS.
    pub fn digest(self, user: &str, password: &str) -> Self {
        self.auth("digest", format!("{user}:{password}").as_bytes())
    }

    /// Authenticates with any scheme the server knows (`addauth` in
    /// ZooKeeper's CLI).
    pub fn auth(mut self, scheme: &str, data: &[u8]) -> Self {
        self.auth.push((scheme.to_owned(), data.to_vec()));
        self
    }

    /// Connects over TLS (to the servers' `secureClientPort`) with these
    /// options: the CA that signed the servers' certificates, and a client
    /// certificate if the servers ask for one (`ssl.clientAuth`).
    ///
    /// Every server of the connect string is then spoken to over TLS,
    /// except one written `tcp://host:port`.
    #[cfg(feature = "tls")]
    pub fn tls(mut self, options: zk::TlsOptions) -> Self {
        self.tls = Some(options);
        self
    }

    /// [`tls`](Self::tls) trusting the certificates of `ca_pem` (PEM), the
    /// servers' names verified.
    #[cfg(feature = "tls")]
    pub fn tls_ca_pem(self, ca_pem: &str) -> Result<Self, Error> {
        let options = zk::TlsOptions::new()
            .with_pem_ca(ca_pem)
            .map_err(Error::Connect)?;
        Ok(self.tls(options))
    }

    /// Whether the connections are TLS.
    pub fn is_tls(&self) -> bool {
        #[cfg(feature = "tls")]
        {
            self.tls.is_some()
        }
        #[cfg(not(feature = "tls"))]
        {
            false
        }
    }

    /// Opens one session (a [`Client`](zk::Client)) to `addr`
    /// (`host:port[,host:port...][/chroot]`).
    ///
    /// Under a chroot, fails with [`Error::InvalidChroot`] when the chroot
    /// is not a valid path (nothing is sent), and with
    /// [`Error::ChrootMissing`] when it does not exist (the session just
    /// opened is closed): create it first.
    ///
    /// Not cancel-safe in a useful sense: a dropped connect leaves nothing
    /// behind, but must simply be retried.
    pub async fn connect(&self, addr: &str) -> Result<zk::Client, Error> {
        crate::chroot::validate(addr)?;
        let client = self.open(addr).await?;
        crate::chroot::check(&client, self.session_timeout).await?;
        Ok(client)
    }

    async fn open(&self, addr: &str) -> Result<zk::Client, Error> {
        let mut connector = zk::Client::connector().with_session_timeout(self.session_timeout);
        for (scheme, data) in &self.auth {
            connector = connector.with_auth(scheme, data);
        }
        #[cfg(feature = "tls")]
        if let Some(tls) = &self.tls {
            return connector
                .with_tls(tls.clone())
                .secure_connect(addr)
                .await
                .map_err(Error::Connect);
        }
        connector.connect(addr).await.map_err(Error::Connect)
    }

    /// Opens a [`Session`] that renews itself after expiry, each new
    /// session with these options.
    pub async fn session(&self, addr: &str) -> Result<Session, Error> {
        Session::connect_with(addr, self.clone()).await
    }
}

/// ZooKeeper's identity for `user` and `password` in the `digest` scheme:
/// `user:base64(sha1("user:password"))`, what an ACL entry names and what
/// `getAcl` shows for a node created with [`Acl::CREATOR_ALL`] by a session
/// authenticated with [`ConnectOptions::digest`].
///
/// ```
/// // The example of ZooKeeper's documentation.
/// assert_eq!(
///     herdless_std::digest_id("super", "test"),
///     "super:D/InIHSb7yEEbrWz8b9l71RjZJU="
/// );
/// ```
pub fn digest_id(user: &str, password: &str) -> String {
    let hash = Sha1::digest(format!("{user}:{password}").as_bytes());
    format!(
        "{user}:{}",
        base64::engine::general_purpose::STANDARD.encode(hash)
    )
}

/// An ACL giving `permissions` (bits of [`perms`]) to the digest identity of
/// `user`/`password` and nothing to anyone else, for
/// [`WithAcl`](crate::WithAcl) when the nodes must belong to a user other
/// than the one the session authenticates as (an administrator creating
/// directories for an application, say).
///
/// Recipes keep their ACL as `Acl<'static>` (the core allocates nothing),
/// so the entry is allocated once and never freed: build it once, at
/// start-up, not per operation. To give the nodes to the session's own
/// user, use [`Acl::CREATOR_ALL`], which needs no allocation.
pub fn digest_acl(user: &str, password: &str, permissions: u32) -> Acl<'static> {
    let id: &'static str = Box::leak(digest_id(user, password).into_boxed_str());
    let entries: &'static [AclEntry<'static>] = Box::leak(Box::new([AclEntry {
        perms: permissions & perms::ALL,
        scheme: "digest",
        id,
    }]));
    Acl(entries)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digest_ids_are_zookeepers() {
        // From ZooKeeper's DigestAuthenticationProvider: generateDigest.
        assert_eq!(
            digest_id("super", "test"),
            "super:D/InIHSb7yEEbrWz8b9l71RjZJU="
        );
        let acl = digest_acl("super", "test", perms::READ | perms::WRITE);
        assert_eq!(
            acl.entries(),
            [AclEntry {
                perms: 3,
                scheme: "digest",
                id: "super:D/InIHSb7yEEbrWz8b9l71RjZJU=",
            }]
        );
    }

    #[test]
    fn debug_never_shows_credentials() {
        let options = ConnectOptions::new(Duration::from_secs(1)).digest("u", "hunter2");
        let shown = format!("{options:?}");
        assert!(!shown.contains("hunter2"), "{shown}");
        assert!(shown.contains("digest"), "{shown}");
    }
}
