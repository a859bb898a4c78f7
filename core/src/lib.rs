//! # herdless-core: ZooKeeper recipes as sans-IO state machines
//!
//! Every recipe here is a plain struct that never touches a socket, a clock
//! or an allocator. It is told what happened through `handle_*` methods and
//! says what to do through `poll_*` methods, as described once on the
//! [`Recipe`] trait. The same object therefore runs under tokio
//! (`herdless-std`), on a microcontroller, and in a unit test that feeds it
//! hand-written replies, or against the in-memory ZooKeeper of the `sim`
//! feature.
//!
//! The crate is `#![no_std]` and allocates nothing (outside `sim`): paths live
//! in caller-sized `heapless::String<N>`s, child lists are streamed in one
//! pass, and GUIDs come from the caller's random bytes.
//!
//! ## The run loop
//!
//! A driver owns a connection and one or more recipes. After each input it
//! drains requests, then events, then the timer:
//!
//! ```no_run
//! use herdless_core::lock::{Lock, LockEvent};
//! use herdless_core::naming::Guid;
//! use herdless_core::{Instant, Outgoing, Recipe, Reply, RequestId, SessionEvent, WatchEvent};
//!
//! // What your transport provides (a socket and a clock, or a test script).
//! enum Input<'a> {
//!     Reply(RequestId, Reply<'a>),
//!     Watch(WatchEvent<'a>),
//!     Session(SessionEvent),
//!     Tick,
//! }
//! fn send(_request: Outgoing<'_>) { /* encode and write to the session */ }
//! // The next input, and the time it came (`Tick` once `wake_at` is reached).
//! fn next_input(_wake_at: Option<Instant>) -> (Instant, Input<'static>) { unimplemented!() }
//!
//! let mut lock: Lock = Lock::new("/locks/printer").unwrap();
//! lock.acquire(Guid::from_random_bytes([42; 16])).unwrap();
//! loop {
//!     // 1. requests, in order (ZooKeeper answers one session in order)
//!     while let Some(out) = lock.poll_request() {
//!         send(out);
//!     }
//!     // 2. events for the application
//!     while let Some(event) = lock.poll_event() {
//!         match event {
//!             LockEvent::Acquired => { /* critical section */ lock.release().unwrap(); }
//!             LockEvent::Released => return,
//!             LockEvent::Suspended => { /* pause: the lock may be lost */ }
//!             LockEvent::Lost => { /* stop at once */ }
//!             _ => {}
//!         }
//!     }
//!     // 3. the timer, then wait for the next input
//!     // Every input carries the time: the recipe never reads a clock.
//!     let (now, input) = next_input(lock.poll_timeout());
//!     match input {
//!         Input::Reply(id, reply) => lock.handle_reply(now, id, reply),
//!         Input::Watch(event) => lock.handle_watch(now, event),
//!         Input::Session(event) => lock.handle_session(now, event),
//!         Input::Tick => lock.handle_timeout(now),
//!     }
//! }
//! ```
//!
//! ## Modules
//!
//! * [`Error`]: the one error type of every recipe.
//! * [`lock`]: the exclusive lock, the shared (read/write) lock
//!   ([`Lock::reader`](lock::Lock::reader), [`Lock::writer`](lock::Lock::writer))
//!   and their revocable form ([`Lock::revocable`](lock::Lock::revocable)).
//! * [`revoke`]: asking a revocable lock's holder to release, or forcing it
//!   after a grace period.
//! * [`election`]: leader election, with the leader's acknowledgement node
//!   and an observer for non-candidates.
//! * [`config`]: a watched configuration value with compare-and-set.
//! * [`barrier`], [`double_barrier`]: barriers.
//! * [`queue`]: queues and priority queues.
//! * [`two_phase`]: two-phase commit, both variants of the recipes page.
//! * [`member`], [`members`]: group membership (a member that re-joins by
//!   itself after its session expired, and an observer of the group).
//! * [`path`], [`sequence`], [`naming`]: paths, sequence suffixes and node
//!   names (GUIDs, flavours compatible with Curator and Kazoo).
//! * [`wire`]: ZooKeeper's wire protocol (jute codec and session state
//!   machine) for transports that speak to servers themselves.
//! * `sim` (feature `sim`): an in-memory ZooKeeper with fault injection, for
//!   testing your own code against the recipes without a network.
#![no_std]
#![cfg_attr(docsrs, feature(doc_auto_cfg))]

#[cfg(feature = "alloc")]
extern crate alloc;
#[cfg(feature = "sim")]
extern crate std;

mod contract;
mod engine;
mod names;
mod recipes;
#[cfg(test)]
mod shown;
#[cfg(feature = "sim")]
pub mod sim;
pub mod wire;

#[cfg(feature = "alloc")]
pub use contract::owned;
pub use contract::{input, recipe, reply, request, time, zk_error};
pub use names::{children, naming, path, sequence};
pub use recipes::{
    barrier, config, double_barrier, election, lock, member, members, queue, revoke, two_phase,
};

pub use children::{Children, NameList};
pub use contract::error::Error;
pub use input::{SessionEvent, WatchEvent, WatchKind};
pub use recipe::{Outgoing, Recipe};
pub use reply::{Reply, Stat};
pub use request::{perms, Acl, AclEntry, CreateMode, Request, RequestId, RequestIds, Version};
pub use sequence::Sequence;
pub use time::Instant;
pub use zk_error::ZkError;
