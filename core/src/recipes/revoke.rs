//! Asking a lock holder to give the lock up: the requester's side of the
//! recipes page's "Revocable Shared Locks".
//!
//! A [`revocable`](crate::lock::Lock::revocable) lock reads its own node with
//! a watch. [`Revoke`] writes `unlock` to that node, which the holder hears
//! as [`LockEvent::RevocationRequested`](crate::lock::LockEvent::RevocationRequested);
//! the holder releases when its work allows (consent).
//!
//! The forced variant ([`Revoke::request_forced`]) also watches the node and
//! gives the holder a grace period of the requester's choosing: if the node
//! is still there at the deadline, the requester deletes it. The holder
//! hears [`LockEvent::Lost`](crate::lock::LockEvent::Lost) as soon as its
//! watch fires: every lock watches its own node, revocable or not; only a
//! revocable one also hears the request to release.
//!
//! Only a lock contender's node is revoked: [`Revoke::new`] refuses a path
//! whose name is not a lock's, read or write node's (herdless's, Curator's
//! or Kazoo's), and a node found persistent ends the revocation with
//! [`Error::NotALockNode`] before anything is deleted.
//!
//! Protocol, with the requests as they go on the wire:
//!
//! 1. `setData(node, "unlock")`: [`RevokeEvent::Requested`], or
//!    [`RevokeEvent::NotFound`] if the node is already gone;
//! 2. forced only, pipelined with 1: `getData(node, watch)`, whose deletion
//!    notification means the holder released: [`RevokeEvent::Released`];
//! 3. forced only, at the deadline: `delete(node)`:
//!    [`RevokeEvent::Forced`].
//!
//! Every step is idempotent, so after a connection loss it is simply sent
//! again.
//!
//! ```
//! use herdless_core::lock::{Lock, LockEvent};
//! use herdless_core::naming::Guid;
//! use herdless_core::revoke::{Revoke, RevokeEvent};
//! use herdless_core::sim::{Either, World};
//!
//! let mut world: World<Either<Lock, Revoke>> = World::new(3);
//! let holder = world.add_peer(Either::A(Lock::writer("/rw").unwrap().revocable()));
//! world
//!     .act(holder, |r| r.a_mut().unwrap().acquire(Guid::from_random_bytes([1; 16])))
//!     .unwrap();
//! world.run_until_quiet(1_000);
//! let lock = world.peers[holder].recipe.a().unwrap();
//! let node: heapless::String<128> = lock.own_path().unwrap().unwrap();
//!
//! let requester = world.add_peer(Either::B(Revoke::new(&node).unwrap()));
//! world.act(requester, |r| r.b_mut().unwrap().request()).unwrap();
//! world.run_until_quiet(1_000);
//! assert_eq!(world.peers[requester].take_events(), vec![Either::B(RevokeEvent::Requested)]);
//! assert_eq!(
//!     world.peers[holder].take_events(),
//!     vec![Either::A(LockEvent::Acquired), Either::A(LockEvent::RevocationRequested)]
//! );
//! ```

use core::fmt;

use heapless::String;

use crate::engine::event_queue::EventQueue;
use crate::engine::link::{Link, Reconnect};
use crate::engine::pipeline::Pipeline;
use crate::naming::{recognise, NodeKind};
use crate::path::{self, PathError};
use crate::{
    Instant, Outgoing, Recipe, Reply, Request, RequestId, SessionEvent, Version, WatchEvent,
    WatchKind, ZkError,
};

/// What a requester writes to a holder's node: the recipes page's word.
pub const UNLOCK: &[u8] = b"unlock";

/// What Curator's `Revoker` writes; a revocable herdless lock honours it too.
pub const CURATOR_REVOKE: &[u8] = b"__REVOKE__";

/// Whether `data`, read from a lock node, asks its holder to release.
///
/// ```
/// use herdless_core::revoke::is_request;
///
/// assert!(is_request(b"unlock"));
/// assert!(is_request(b"__REVOKE__"));
/// assert!(!is_request(b""));
/// ```
pub fn is_request(data: &[u8]) -> bool {
    data == UNLOCK || data == CURATOR_REVOKE
}

/// Default capacity, in bytes, of the node path a [`Revoke`] stores.
pub const DEFAULT_PATH_CAPACITY: usize = 128;

/// What a [`Revoke`] tells the application.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum RevokeEvent {
    /// `unlock` is written to the holder's node. Ends a plain
    /// [`request`](Revoke::request); a forced one goes on.
    Requested,
    /// The node was already gone when asked: nobody holds with it. Ends the
    /// revocation.
    NotFound,
    /// Forced variant: the holder released within the grace period (its node
    /// was deleted by someone else than this requester). Ends the
    /// revocation.
    Released,
    /// Forced variant: the grace period passed and this requester deleted
    /// the node. Ends the revocation.
    ///
    /// If the delete's reply was lost with the connection and the node was
    /// then found gone, the holder may have released in the same moment;
    /// the node is gone either way, and this is reported.
    Forced,
    /// The revocation failed (say, an ACL forbids writing the node). Ends
    /// the revocation.
    Failed(Error),
}

/// Errors of this recipe: the one error type of every recipe.
pub use crate::Error;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    Idle,
    /// `unlock` being written (forced: and the node watched).
    Requesting,
    /// Forced: written, waiting for the node to go or the deadline.
    Waiting,
    /// Forced: deleting the node after the deadline.
    Deleting,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Write,
    Watch,
    Delete,
}

/// The requester of a revocation: writes `unlock` to a lock holder's node
/// and, in the forced variant, deletes it after a grace period. See the
/// [module docs](self).
///
/// `N` is the capacity in bytes of the stored node path.
///
/// ```
/// use herdless_core::revoke::{Revoke, RevokeEvent};
/// use herdless_core::{Instant, Recipe, Reply, Stat, WatchEvent, WatchKind};
/// let now = herdless_core::Instant::ZERO; // the driver's clock
///
/// let node = "/rw/abc-write-0000000001";
/// let mut revoke: Revoke = Revoke::new(node).unwrap();
/// assert_eq!(revoke.node(), node);
/// revoke.request_forced(Instant::from_millis(1_000)).unwrap();
/// let write = revoke.poll_request().unwrap().id;
/// let _watch = revoke.poll_request().unwrap().id;
/// // The holder's node: ephemeral, as every lock's is.
/// let stat = Stat { ephemeral_owner: 7, ..Stat::default() };
/// revoke.handle_reply(now, write, Reply::DataSet { stat });
/// assert_eq!(revoke.poll_event(), Some(RevokeEvent::Requested));
/// // The holder releases within the grace period.
/// revoke.handle_watch(now, WatchEvent { kind: WatchKind::NodeDeleted, path: node });
/// assert_eq!(revoke.poll_event(), Some(RevokeEvent::Released));
/// assert!(!revoke.is_running());
/// ```
pub struct Revoke<const N: usize = DEFAULT_PATH_CAPACITY> {
    node: String<N>,
    step: Step,
    forced: bool,
    deadline: Option<Instant>,
    /// A delete was sent and its answer lost with the connection.
    delete_lost: bool,
    link: Link,
    ops: Pipeline<Op, 4, 4>,
    events: EventQueue<RevokeEvent, 4>,
}

impl<const N: usize> Revoke<N> {
    /// A revocation of the lock node at `node` (a full path, as
    /// [`Lock::own_path`](crate::lock::Lock::own_path) gives it).
    ///
    /// Fails with [`Error::NotALockNode`] unless the node's name is a
    /// lock contender's (a lock, read or write marker and a sequence
    /// number, as herdless, Curator and Kazoo write them): writing
    /// `unlock` to any other node, or deleting it, would destroy data.
    ///
    /// ```
    /// use herdless_core::revoke::Revoke;
    /// use herdless_core::Error;
    ///
    /// assert!(Revoke::<128>::new("/rw/abc-write-0000000001").is_ok());
    /// assert!(Revoke::<128>::new("not/absolute").is_err());
    /// assert_eq!(Revoke::<128>::new("/app/config").err(), Some(Error::NotALockNode));
    /// assert_eq!(Revoke::<128>::new("/rw").err(), Some(Error::NotALockNode));
    /// ```
    pub fn new(node: &str) -> Result<Self, Error> {
        path::validate(node)?;
        if node == "/" {
            return Err(Error::Path(PathError::BadName));
        }
        match recognise(path::basename(node)) {
            Some(r) if matches!(r.kind, NodeKind::Lock | NodeKind::Read | NodeKind::Write) => {}
            _ => return Err(Error::NotALockNode),
        }
        let mut stored = String::new();
        path::concat_into(&mut stored, &[node])?;
        Ok(Revoke {
            node: stored,
            step: Step::Idle,
            forced: false,
            deadline: None,
            delete_lost: false,
            link: Link::Up,
            ops: Pipeline::new(),
            events: EventQueue::new(),
        })
    }

    /// The node being revoked.
    pub fn node(&self) -> &str {
        &self.node
    }

    /// Whether a revocation is running.
    pub fn is_running(&self) -> bool {
        self.step != Step::Idle
    }

    /// Asks the holder to release: writes `unlock` to its node.
    /// [`RevokeEvent::Requested`] (or [`RevokeEvent::NotFound`]) follows.
    ///
    /// ```
    /// use herdless_core::revoke::Revoke;
    /// use herdless_core::{Recipe, Request};
    ///
    /// let mut revoke: Revoke = Revoke::new("/rw/abc-write-0000000001").unwrap();
    /// revoke.request().unwrap();
    /// let out = revoke.poll_request().unwrap();
    /// assert!(matches!(out.request, Request::SetData { data: b"unlock", .. }));
    /// assert!(revoke.poll_request().is_none());
    /// ```
    pub fn request(&mut self) -> Result<(), Error> {
        self.start(None)
    }

    /// Asks the holder to release, and deletes its node if it is still there
    /// at `deadline` (the end of the grace period, on the caller's clock).
    /// [`RevokeEvent::Requested`] follows, then [`RevokeEvent::Released`] or
    /// [`RevokeEvent::Forced`] (or [`RevokeEvent::NotFound`] at once).
    ///
    /// ```
    /// use herdless_core::revoke::Revoke;
    /// use herdless_core::{Instant, Recipe, Request};
    ///
    /// let mut revoke: Revoke = Revoke::new("/rw/abc-write-0000000001").unwrap();
    /// revoke.request_forced(Instant::from_millis(5_000)).unwrap();
    /// let write = revoke.poll_request().unwrap();
    /// assert!(matches!(write.request, Request::SetData { .. }));
    /// let watch = revoke.poll_request().unwrap();
    /// assert!(matches!(watch.request, Request::GetData { watch: true, .. }));
    /// assert_eq!(revoke.poll_timeout(), Some(Instant::from_millis(5_000)));
    /// ```
    pub fn request_forced(&mut self, deadline: Instant) -> Result<(), Error> {
        self.start(Some(deadline))
    }

    /// Abandons a running revocation without an event: nothing more is
    /// sent (a forced revocation no longer deletes the node), and answers
    /// to what was sent are ignored. A request already written stays
    /// written.
    ///
    /// ```
    /// use herdless_core::revoke::Revoke;
    /// use herdless_core::{Instant, Recipe};
    ///
    /// let mut revoke: Revoke = Revoke::new("/rw/abc-write-0000000001").unwrap();
    /// revoke.request_forced(Instant::from_millis(10)).unwrap();
    /// revoke.cancel();
    /// assert!(!revoke.is_running());
    /// assert!(revoke.poll_request().is_none());
    /// assert_eq!(revoke.poll_timeout(), None);
    /// ```
    pub fn cancel(&mut self) {
        self.step = Step::Idle;
        self.deadline = None;
        self.ops.clear();
    }

    fn start(&mut self, deadline: Option<Instant>) -> Result<(), Error> {
        if self.step != Step::Idle {
            return Err(Error::InvalidState);
        }
        if !self.link.accepts_work() {
            return Err(Error::SessionEnded);
        }
        self.forced = deadline.is_some();
        self.deadline = deadline;
        self.delete_lost = false;
        self.step = Step::Requesting;
        self.queue_step();
        Ok(())
    }

    /// Queues what the current step sends.
    fn queue_step(&mut self) {
        self.ops.clear_queued();
        match self.step {
            Step::Idle => {}
            Step::Requesting => {
                self.ops.queue(Op::Write);
                if self.forced {
                    self.ops.queue(Op::Watch);
                }
            }
            Step::Waiting => self.ops.queue(Op::Watch),
            Step::Deleting => self.ops.queue(Op::Delete),
        }
    }

    fn finish(&mut self, event: RevokeEvent) {
        self.step = Step::Idle;
        self.deadline = None;
        self.ops.clear();
        self.events.emit(event);
    }

    fn connection_lost(&mut self) {
        if !self.link.lose() {
            return;
        }
        if self.ops.lose().contains(&Op::Delete) {
            self.delete_lost = true;
        }
    }

    /// The node is gone, seen by the watch before the deadline.
    fn node_gone(&mut self) {
        match self.step {
            Step::Requesting | Step::Waiting => self.finish(RevokeEvent::Released),
            // Our own delete fires our own watch too: its answer decides.
            Step::Idle | Step::Deleting => {}
        }
    }

    fn fail(&mut self, e: ZkError) {
        if e.is_connection_loss() {
            self.connection_lost();
        } else if e.is_session_gone() {
            self.session_ended(SessionEvent::Expired);
        } else {
            self.finish(RevokeEvent::Failed(Error::Zk(e)));
        }
    }

    /// The session is over: a revocation running fails, and one asked for
    /// later waits for the next session (or, after a close, is refused),
    /// as every recipe's work does.
    fn session_ended(&mut self, how: SessionEvent) {
        self.link.end(how);
        self.ops.lose();
        if self.step != Step::Idle {
            self.finish(RevokeEvent::Failed(Error::SessionEnded));
        }
    }
}

impl<const N: usize> Recipe for Revoke<N> {
    type Event = RevokeEvent;

    fn poll_request(&mut self) -> Option<Outgoing<'_>> {
        if !self.link.is_up() {
            return None;
        }
        let (id, op) = self.ops.next()?;
        let path = self.node.as_str();
        let request = match op {
            Op::Write => Request::SetData {
                path,
                data: UNLOCK,
                version: Version::Any,
            },
            // getData, not exists: on a node already gone it leaves no
            // creation watch behind (CURATOR-107).
            Op::Watch => Request::GetData { path, watch: true },
            Op::Delete => Request::Delete {
                path,
                version: Version::Any,
            },
        };
        Some(Outgoing { id, request })
    }

    fn handle_reply(&mut self, _now: Instant, id: RequestId, reply: Reply<'_>) {
        let Some(op) = self.ops.take(id) else {
            return;
        };
        match (op, reply) {
            // A persistent node whose name looks like a lock's: nobody
            // holds with it, and a forced revocation must not delete it.
            (Op::Write, Reply::DataSet { stat }) | (Op::Watch, Reply::Data { stat, .. })
                if stat.ephemeral_owner == 0 =>
            {
                self.finish(RevokeEvent::Failed(Error::NotALockNode));
            }
            (Op::Write, Reply::DataSet { .. }) => {
                self.events.emit(RevokeEvent::Requested);
                if self.forced {
                    if self.step == Step::Requesting {
                        self.step = Step::Waiting;
                    }
                } else {
                    self.step = Step::Idle;
                    self.ops.clear();
                }
            }
            (Op::Write, Reply::Error(ZkError::NoNode)) => self.finish(RevokeEvent::NotFound),
            (Op::Watch, Reply::Data { .. }) => {}
            (Op::Watch, Reply::Error(ZkError::NoNode)) => self.node_gone(),
            (Op::Delete, Reply::Deleted) => self.finish(RevokeEvent::Forced),
            (Op::Delete, Reply::Error(ZkError::NoNode)) => {
                // Gone before this delete: the holder released just in time,
                // unless an earlier copy of this delete did it.
                let event = if self.delete_lost {
                    RevokeEvent::Forced
                } else {
                    RevokeEvent::Released
                };
                self.finish(event);
            }
            (op, Reply::Error(e)) => {
                if op == Op::Delete && e.is_connection_loss() {
                    // It may have been applied.
                    self.delete_lost = true;
                }
                self.fail(e);
            }
            (_, _) => self.finish(RevokeEvent::Failed(Error::BadReply)),
        }
    }

    fn handle_watch(&mut self, _now: Instant, event: WatchEvent<'_>) {
        if !self.link.is_up() || event.path != self.node.as_str() {
            return;
        }
        match (self.step, event.kind) {
            (Step::Idle, _) => {}
            (_, WatchKind::NodeDeleted) => self.node_gone(),
            // Another write to the node (a second requester): re-arm.
            (Step::Requesting | Step::Waiting, _) => self.ops.queue(Op::Watch),
            (Step::Deleting, _) => {}
        }
    }

    fn handle_session(&mut self, _now: Instant, event: SessionEvent) {
        match event {
            SessionEvent::Connected { .. } => {
                if self.link.connected() != Reconnect::Same {
                    self.queue_step();
                }
            }
            SessionEvent::Suspended => self.connection_lost(),
            SessionEvent::Expired | SessionEvent::Closed => self.session_ended(event),
        }
    }

    fn handle_timeout(&mut self, now: Instant) {
        if let Some(deadline) = self.deadline {
            if now >= deadline && matches!(self.step, Step::Requesting | Step::Waiting) {
                self.deadline = None;
                self.step = Step::Deleting;
                // A write still queued goes first; the watch is no longer
                // needed (the delete's answer decides).
                self.ops.forget(|op| op == Op::Watch);
                self.ops.queue(Op::Delete);
            }
        }
    }

    fn poll_timeout(&self) -> Option<Instant> {
        match self.step {
            Step::Requesting | Step::Waiting => self.deadline,
            _ => None,
        }
    }

    fn poll_event(&mut self) -> Option<RevokeEvent> {
        self.events.pop()
    }
}

impl<const N: usize> fmt::Debug for Revoke<N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Revoke")
            .field("node", &self.node.as_str())
            .field("step", &self.step)
            .field("forced", &self.forced)
            .field("deadline", &self.deadline)
            .field("link", &self.link)
            .finish()
    }
}
