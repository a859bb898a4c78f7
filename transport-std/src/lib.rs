//! # herdless-std: ZooKeeper recipes on tokio
//!
//! The recipes of [`herdless_core`] run here over the
//! [`zookeeper-client`](zookeeper_client) crate: one generic driver task per
//! recipe instance turns the sans-IO state machine's requests into client
//! calls (sent in the order the recipe emits them, so pipelining survives),
//! and its replies, watch notifications and session changes back into
//! inputs. On top sits the API Curator and Kazoo users expect.
//!
//! ```no_run
//! use std::time::Duration;
//! use herdless_std::Lock;
//!
//! # async fn run() -> Result<(), herdless_std::Error> {
//! let client = herdless_std::connect("127.0.0.1:2181", Duration::from_secs(10)).await?;
//! let lock = Lock::new(&client, "/locks/printer")?;
//! let guard = lock.acquire().await?;
//! tokio::select! {
//!     _ = do_work() => {}
//!     _ = guard.lost() => eprintln!("lock lost: stop"),
//! }
//! guard.release().await?;
//! # Ok(()) }
//! # async fn do_work() {}
//! ```
//!
//! The shared lock is a pair of such locks on one directory:
//! [`ReadWriteLock::read`] and [`ReadWriteLock::write`]. Any lock can be
//! held revocably ([`Lock::acquire_revocable`]), and [`revoke()`] /
//! [`revoke_forced`] ask its holder to give it up.
//!
//! With the feature `sim`, the `sim` module runs every recipe on the in-memory
//! ZooKeeper instead, with faults on demand: application code written
//! against `&impl Connection` is tested in a `#[tokio::test]` with no
//! server.
//!
//! [`inspect`] reads any recipe's directory for operators and tools (the
//! contenders in order with their library, session, age and data, who
//! holds, an election's leader, a queue's head): what `herdless inspect`
//! prints.
//!
//! Every async method states whether it is cancel-safe. Acquisitions are:
//! dropping the future deletes the attempt's node in the background.

mod backend;
mod chroot;
mod connect;
mod connection;
mod driver;
mod error;
pub mod fence;
pub mod inspect;
mod recipes;
mod renew;
mod session;
#[cfg(feature = "sim")]
pub mod sim;

pub use recipes::{
    barrier, config, election, group, lock, member, queue, revoke, rwlock, two_phase,
};

use std::time::Duration;

pub use connect::{digest_acl, digest_id, ConnectOptions};
pub use connection::{Connection, WithAcl};
pub use driver::hold::presumed_lost_after;
pub use election::{Election, LeaderState, Leadership};
pub use error::Error;
pub use fence::{Fenced, FencedResult};
/// The sans-IO core the handles run, for its types that appear here
/// (the recipe errors in [`Error::Recipe`], names taken apart by
/// `herdless_core::naming::recognise`) without a dependency of your own on
/// a second copy of it.
pub use herdless_core;
pub use herdless_core::naming::{Flavour, NodeKind};
pub use herdless_core::path::PathError;
pub use herdless_core::{perms, Acl, AclEntry, CreateMode, ZkError};
pub use lock::{Holding, Lock, LockGuard, RevocableGuard};
pub use member::{GroupMember, MembershipEvent, Presence};
pub use revoke::{revoke, revoke_forced, Revocation};
pub use rwlock::ReadWriteLock;
pub use session::Session;
/// The ZooKeeper client crate herdless-std runs on, for its types
/// ([`Client`]'s methods, the error in [`Error::Connect`]). It is the
/// 0.11.2 release with its reconnection wait capped at 1 s (see
/// `vendor/README.md` in the repository); reach it through this path
/// rather than adding `zookeeper-client` from crates.io to your own
/// dependencies, which would be a second, different crate.
pub use zookeeper_client;
pub use zookeeper_client::Client;
#[cfg(feature = "tls")]
pub use zookeeper_client::TlsOptions;

/// Connects a new session to `addr` (`host:port[,host:port...][/chroot]`)
/// with the given session timeout. Fails with [`Error::InvalidChroot`]
/// under a chroot that is not a valid path, and with
/// [`Error::ChrootMissing`] under one that does not exist.
///
/// Not cancel-safe in a useful sense: a dropped connect leaves nothing
/// behind, but must simply be retried.
pub async fn connect(addr: &str, session_timeout: Duration) -> Result<Client, Error> {
    ConnectOptions::new(session_timeout).connect(addr).await
}

/// The README's examples, compiled (and run where they need no server) as
/// doctests so the README stays true.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
struct ReadmeExamples;
