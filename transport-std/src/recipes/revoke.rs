//! Asking a revocable lock's holder to give the lock up, or forcing it.
//!
//! A holder that acquired with [`Lock::acquire_revocable`](crate::Lock::acquire_revocable)
//! watches its own node. [`revoke`] writes `unlock` to that node and returns;
//! the holder's [`RevocableGuard::revocation_requested`](crate::RevocableGuard::revocation_requested)
//! resolves, and it releases when its work allows. [`revoke_forced`] also
//! waits: if the node is still there after the grace period, it deletes
//! it, and the holder's guard hears [`Holding::Lost`](crate::Holding::Lost).
//!
//! ```no_run
//! use std::time::Duration;
//! use herdless_std::revoke::{revoke_forced, Revocation};
//!
//! # async fn run(client: herdless_std::Client, node: &str) -> Result<(), herdless_std::Error> {
//! match revoke_forced(&client, node, Duration::from_secs(5)).await? {
//!     Revocation::Released => println!("the holder gave the lock up"),
//!     Revocation::Forced => println!("the holder did not answer: its node is deleted"),
//!     Revocation::NotHeld => println!("nobody held it with that node"),
//!     _ => {}
//! }
//! # Ok(()) }
//! ```

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use herdless_core::revoke::{Revoke, RevokeEvent};
use tracing::info;

use crate::driver;
use crate::driver::channel;
use crate::driver::undo::Undo;
use crate::{Connection, Error};

/// How a revocation ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Revocation {
    /// `unlock` is written on the holder's node ([`revoke`]).
    Requested,
    /// The node did not exist: nobody holds (or waits) with it.
    NotHeld,
    /// The holder released within the grace period ([`revoke_forced`]).
    Released,
    /// The grace period passed and the node was deleted ([`revoke_forced`]).
    Forced,
}

/// Asks the holder of the lock node at `node_path` (say, from
/// [`LockGuard::node_path`](crate::LockGuard::node_path)) to release it, by
/// writing `unlock` to the node. Returns once written:
/// [`Revocation::Requested`], or [`Revocation::NotHeld`] when the node is
/// gone.
///
/// Only a revocable holder hears it; any holder is free to ignore it.
///
/// Fails with `Error::Recipe(NotALockNode)` before writing anything when
/// `node_path` does not name a lock contender's node (a lock, read or write
/// node of herdless, Curator or Kazoo): a typo must not overwrite a
/// configuration value or delete a directory. A persistent node named like
/// one is written to but never deleted (the same error).
/// Cancel-safe: a dropped future writes nothing more (a write already sent
/// may still land).
///
/// ```no_run
/// use herdless_std::{revoke, Revocation};
///
/// # async fn run(client: herdless_std::Client) -> Result<(), herdless_std::Error> {
/// let node = "/locks/catalog/0c1d-write-0000000007";
/// if revoke(&client, node).await? == Revocation::NotHeld {
///     println!("nobody holds with {node} any more");
/// }
/// # Ok(()) }
/// ```
pub async fn revoke(conn: &impl Connection, node_path: &str) -> Result<Revocation, Error> {
    run(conn, node_path, None).await
}

/// Asks the holder of `node_path` to release, waits up to `grace` for its
/// node to go, and deletes the node if it is still there then. Returns
/// [`Revocation::Released`] (the holder consented in time),
/// [`Revocation::Forced`] (deleted), or [`Revocation::NotHeld`].
///
/// The holder hears [`Holding::Lost`](crate::Holding::Lost) when its node
/// is deleted, revocable or not (every lock watches its own node); only a
/// revocable holder hears the request before, so force only revocable
/// locks if the holder is to have its grace period.
///
/// Cancel-safe: if the future is dropped before the grace period ends, the
/// node is not deleted.
pub async fn revoke_forced(
    conn: &impl Connection,
    node_path: &str,
    grace: Duration,
) -> Result<Revocation, Error> {
    run(conn, node_path, Some(grace)).await
}

async fn run(
    conn: &impl Connection,
    node_path: &str,
    grace: Option<Duration>,
) -> Result<Revocation, Error> {
    let mut core: Revoke = Revoke::new(node_path)?;
    match grace {
        Some(grace) => core.request_forced(driver::deadline_at_start(grace))?,
        None => core.request()?,
    }
    let (events_tx, mut events) = channel::unbounded();
    let handle = driver::spawn_on(
        conn.source(),
        core,
        Arc::default(),
        move |_: &Revoke, event| {
            let _ = events_tx.unbounded_send(event);
        },
        |r: &Revoke| !r.is_running(),
    );
    // Also after the outcome: cancelling a finished revocation is a no-op.
    let _cancel = Undo::new(&handle, Revoke::cancel);
    loop {
        let Some(event) = events.next().await else {
            return Err(Error::DriverGone);
        };
        let outcome = match event {
            RevokeEvent::Requested => {
                if grace.is_none() {
                    Revocation::Requested
                } else {
                    info!(
                        node = node_path,
                        "revocation requested; waiting for the holder"
                    );
                    continue;
                }
            }
            RevokeEvent::NotFound => Revocation::NotHeld,
            RevokeEvent::Released => Revocation::Released,
            RevokeEvent::Forced => Revocation::Forced,
            RevokeEvent::Failed(e) => return Err(e.into()),
            _ => continue,
        };
        info!(node = node_path, ?outcome, "revocation ended");
        return Ok(outcome);
    }
}
