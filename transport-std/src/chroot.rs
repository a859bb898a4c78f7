//! Refusing a session whose chroot is malformed or does not exist.
//!
//! Under a missing chroot the server accepts the session and then answers
//! every request with `NoNode`, naming the recipe's own path: a user who
//! mistyped `host:2181/ap` sees their lock fail with "node does not
//! exist" and looks in the wrong place. Creating the chroot instead (what
//! Curator does for a namespace) would let that typo put part of a fleet
//! in a lock namespace of its own, two holders of one lock, so the
//! session is refused with the cause named.

use std::time::Duration;

use herdless_core::ZkError;
use tokio::time::Instant;
use zookeeper_client as zk;

use crate::driver::convert;
use crate::Error;

/// Refuses a connect string whose chroot (from its first `/`) is not a
/// valid path, before anything is sent: zookeeper-client would pass
/// `/app/..` on, and the session would be refused later as a chroot that
/// does not exist, naming no typo.
pub(crate) fn validate(addr: &str) -> Result<(), Error> {
    let Some(at) = addr.find('/') else {
        return Ok(());
    };
    let chroot = &addr[at..];
    herdless_core::path::validate(chroot).map_err(|error| Error::InvalidChroot {
        chroot: chroot.to_owned(),
        error,
    })
}

/// How long to wait between two checks while the connection is down.
const RETRY: Duration = Duration::from_millis(50);

/// Whether `client`'s chroot exists, asked for as long as `patience`
/// while the connection drops (the client reconnects by itself, and a
/// session just opened may lose its server at once).
pub(crate) async fn check(client: &zk::Client, patience: Duration) -> Result<(), Error> {
    if client.path() == "/" {
        return Ok(());
    }
    let deadline = Instant::now() + patience;
    loop {
        match client.check_stat("/").await {
            Ok(Some(_)) => return Ok(()),
            Ok(None) => return Err(Error::ChrootMissing(client.path().to_owned())),
            // zookeeper-client's own errors for a connection that died
            // (an IO error, a request timed out) count as lost, as for
            // the recipes.
            Err(e)
                if convert::error(&e) == ZkError::ConnectionLoss && Instant::now() < deadline =>
            {
                tokio::time::sleep(RETRY).await;
            }
            Err(e) => return Err(Error::Connect(e)),
        }
    }
}
