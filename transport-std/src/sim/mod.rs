//! The in-memory ZooKeeper for tests (feature `sim`): run a service
//! written against herdless-std in a `#[tokio::test]`, with no server, and
//! inject the faults real ensembles produce.
//!
//! A [`SimServer`] is one ZooKeeper (the core's [`SimZk`](herdless_core::sim::SimZk)).
//! [`SimServer::connect`] opens a session on it, a [`SimClient`], which every
//! recipe accepts wherever it accepts a `zookeeper_client::Client`;
//! [`SimServer::session`] opens a [`SimSession`], which renews itself after
//! an expiry as a [`Session`](crate::Session) does. Open as many as the test
//! needs: a whole fleet runs in one process.
//!
//! ```
//! use herdless_std::sim::SimServer;
//! use herdless_std::Lock;
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), herdless_std::Error> {
//! let zk = SimServer::new();
//! let (a, b) = (zk.connect(), zk.connect());
//! let guard = Lock::new(&a, "/locks/printer")?.acquire().await?;
//! assert!(Lock::new(&b, "/locks/printer")?.try_acquire().await?.is_none());
//! zk.expire(a.session_id()); // as if `a` had been cut off too long
//! guard.lost().await;
//! assert!(Lock::new(&b, "/locks/printer")?.try_acquire().await?.is_some());
//! # Ok(()) }
//! ```
//!
//! Faults, on demand ([`SimServer::disconnect`],
//! [`SimServer::lose_next_write_reply`], [`SimServer::fail_in_flight`],
//! [`SimServer::hold`], [`SimServer::expire`], [`SimServer::delete`]) or at
//! random from a seed ([`SimServer::random_faults`]). Timers (reconnects,
//! session timeouts, the recipes' deadlines) are tokio's: under
//! `#[tokio::test(start_paused = true)]` they run in virtual time, in
//! milliseconds, and the same seed gives the same run.
//!
//! What the server holds is open to the test: [`SimServer::tree`],
//! [`SimServer::node`], [`SimServer::watches`], [`SimServer::requests`],
//! [`SimServer::notifications`].
//!
//! ACLs are enforced as a real server enforces them: a node keeps the ACL
//! it was created with, and a session opened with
//! [`SimServer::connect_as`] or [`SimServer::session_as`] is the digest
//! identity of its user (every session is `ip:127.0.0.1` too), so a recipe
//! meets the `NoAuth` and `InvalidAcl` it would meet on a server.
//! [`SimServer::refuse`] refuses a path whatever its ACL.

mod client;
mod faults;
mod server;
mod session;
#[cfg(test)]
mod tests;

pub use client::SimClient;
pub use faults::RandomFaults;
pub use herdless_core::sim::Node;
pub use server::{SimServer, WatchOf};
pub use session::SimSession;
