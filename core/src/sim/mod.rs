//! An in-memory ZooKeeper for deterministic tests (feature `sim`).
//!
//! [`SimZk`] models what recipes depend on: znodes with data and stats,
//! persistent, ephemeral and sequential nodes named `%010d` from the
//! parent's `cversion`, one-shot data/exists/child watches with the real
//! server's triggering rules (including the creation watch `exists` leaves
//! on a missing node), sessions whose requests are applied and answered in
//! FIFO order with notifications ahead of the reply that caused them, and
//! children listed in random order.
//!
//! Faults are injected between steps, as real servers and the two drivers
//! produce them: [`SimZk::disconnect`] answers every request in flight with
//! `ConnectionLoss` (applied or not), reports `Suspended` before, after or
//! instead of those answers, and drops the connection's watches;
//! [`SimZk::reconnect`] re-registers only the watches whose setting reply
//! reached the client and fires those whose node changed meanwhile
//! (`SetWatches`); [`SimZk::lose_reply_after_apply`] applies a write and
//! loses its reply; [`SimZk::expire`] deletes the session's ephemerals;
//! [`Peer::deliver_one_then_cut`] breaks the connection after a delivery
//! and before the drain that would send what it made the recipe queue, and
//! [`Peer::deliver_one_cutting_listing`] in the middle of a listing handed
//! over in parts, as a server dying mid-frame does under the embedded
//! driver.
//! Outside actors: [`SimZk::delete_node`], [`SimZk::delete_recursive`] and
//! [`SimZk::set_node_data`] act as an operator's session would.
//! [`SimZk::apply_multi`] applies a transaction (`multi`) at once, all or
//! nothing.
//! ACLs are enforced as a server enforces them: a node keeps the ACL it
//! was created with (`auth` replaced by its creator's identities), and a
//! session, which is `ip:127.0.0.1` and whatever [`SimZk::add_auth`] adds,
//! is refused with `NoAuth` what no entry grants it.
//! [`DriverOrder`] selects the order in which a driver hands replies and
//! notifications over. Everything is deterministic from a seed.
//!
//! [`Peer`] binds a [`Recipe`](crate::Recipe) to a session with the same
//! drain loop the transports run; [`World`] interleaves many peers at random,
//! with [`Faults`] at chosen rates, for property-style tests of your own
//! protocol code.
//!
//! ```
//! use herdless_core::lock::{Lock, LockEvent};
//! use herdless_core::naming::Guid;
//! use herdless_core::sim::World;
//!
//! let mut world: World<Lock> = World::new(7);
//! let a = world.add_peer(Lock::new("/locks/demo").unwrap());
//! let b = world.add_peer(Lock::new("/locks/demo").unwrap());
//! world.act(a, |l| l.acquire(Guid::from_random_bytes([1; 16]))).unwrap();
//! world.run_until_quiet(1_000);
//! world.act(b, |l| l.acquire(Guid::from_random_bytes([2; 16]))).unwrap();
//! world.run_until_quiet(1_000);
//! assert_eq!(world.peers[a].take_events(), vec![LockEvent::Acquired]);
//! assert!(world.peers[b].take_events().is_empty()); // waiting on a
//!
//! world.act(a, |l| l.release()).unwrap();
//! world.run_until_quiet(1_000);
//! assert_eq!(world.peers[b].take_events(), vec![LockEvent::Acquired]);
//! // b was woken by exactly one notification
//! assert_eq!(world.zk.notifications_delivered(world.peers[b].session()), 1);
//! ```

mod acl;
mod either;
mod owned;
mod peer;
#[cfg(test)]
mod recorder;
mod server;
mod tree;
mod watches;
mod world;

pub use crate::owned::OwnedReply;
pub use acl::{Identity, OwnedAclEntry};
pub use either::Either;
pub use owned::{Delivery, OwnedRequest};
pub use peer::Peer;
pub use server::{DriverOrder, MultiFailure, SessionStatus, SimZk, Stats};
pub use tree::Node;
pub use world::{Faults, Step, World};

/// A simulated session's id (also the `ephemeral_owner` of its nodes).
pub type SessionId = i64;
