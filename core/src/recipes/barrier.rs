//! The barrier of the recipes page: a node whose existence holds processes
//! back.
//!
//! [`Barrier::set`] creates the node (and its ancestors), [`Barrier::remove`]
//! deletes it, [`Barrier::wait`] waits until it is gone. Waiting reads the
//! node with `getData` and a watch: a data change fires the one-shot watch
//! too, so it is re-armed after every notification, and a deletion ends the
//! wait. `getData`, not the recipe's `exists`: on a node that is already
//! gone it leaves no watch behind, where `exists` would leave a creation
//! watch on the server for as long as the session lives (the leak of
//! CURATOR-654). The first read of a wait goes out behind a no-op write in
//! the same flight (see `engine::catch_up`): ZooKeeper orders one client's
//! view, not two clients', and a waiter on a server that has not yet
//! applied another client's `set` would otherwise pass a barrier that is
//! up. A `sync` is not enough: it does nothing on the leader.

use core::fmt;

use heapless::String;

use crate::engine::ancestors;
use crate::engine::catch_up;
use crate::engine::event_queue::EventQueue;
use crate::engine::link::{Link, Reconnect};
use crate::engine::pipeline::Pipeline;
use crate::path::{self, PathError};
use crate::{
    Acl, CreateMode, Error, Instant, Outgoing, Recipe, Reply, Request, RequestId, SessionEvent,
    Version, WatchEvent, WatchKind, ZkError,
};

/// Default capacity, in bytes, of the barrier node's path.
pub const DEFAULT_PATH_CAPACITY: usize = 128;

/// What the barrier tells the application.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum BarrierEvent {
    /// The barrier node exists (created now, or it already did).
    Set,
    /// The barrier node is gone (deleted now, or it already was).
    Removed,
    /// A wait ended: the barrier is down.
    Passed,
    /// An operation failed.
    Failed(Error),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    /// Create the `level`-th ancestor of the barrier node.
    Ensure(u8),
    Create,
    Delete,
    /// The no-op write ahead of a wait's first read, in the same flight.
    CatchUp,
    /// getData with a watch, while waiting.
    Watch,
}

ancestors::ancestor_op!(Op);

/// A barrier: one node that processes wait on until it is removed.
///
/// ```
/// use herdless_core::barrier::{Barrier, BarrierEvent};
/// use herdless_core::{Recipe, Reply, ZkError};
/// let now = herdless_core::Instant::ZERO; // the driver's clock
///
/// let mut barrier: Barrier = Barrier::new("/jobs/start").unwrap();
/// barrier.wait();
/// let check = barrier.poll_request().unwrap().id; // a no-op write: catch up
/// let read = barrier.poll_request().unwrap().id; // in the same flight
/// barrier.handle_reply(now, check, Reply::Checked);
/// // The barrier was never set (or is already removed): pass at once.
/// barrier.handle_reply(now, read, Reply::Error(ZkError::NoNode));
/// assert_eq!(barrier.poll_event(), Some(BarrierEvent::Passed));
/// ```
pub struct Barrier<const N: usize = DEFAULT_PATH_CAPACITY> {
    node: String<N>,
    ops: Pipeline<Op, 8, 8>,
    waiting: bool,
    /// A read of the current wait saw the node, so the server holds a watch
    /// this wait set. Only then does a deletion notification end the wait:
    /// the path is reused by every generation of the barrier, and a
    /// notification from an earlier wait's watch can arrive after this wait
    /// began (herdless-std sets a watch that zookeeper-client lost again in
    /// the background, and hands its news over when that read returns).
    armed: bool,
    /// The write of the last `set` or `remove`, kept until no write is
    /// queued or in flight: it is the state the barrier must end in. After
    /// a connection loss it alone is sent again (both writes are
    /// idempotent: NodeExists and NoNode count as done), so a lost earlier
    /// call can never land after it.
    pending_write: Option<Op>,
    /// The first refusal of an ancestor's create in the current chain. The
    /// create of the node behind it reports it: that create, answered
    /// `NoNode`, would otherwise start the chain again, for ever.
    ancestor_refused: Option<ZkError>,
    link: Link,
    events: EventQueue<BarrierEvent, 4>,
    scratch: String<N>,
    /// The ACL of every node it creates.
    acl: Acl<'static>,
}

impl<const N: usize> Barrier<N> {
    /// The barrier at `node`.
    pub fn new(node: &str) -> Result<Self, PathError> {
        path::validate(node)?;
        if node == "/" {
            return Err(PathError::BadName);
        }
        let mut stored = String::new();
        path::concat_into(&mut stored, &[node])?;
        Ok(Barrier {
            acl: Acl::OPEN,
            node: stored,
            ops: Pipeline::new(),
            waiting: false,
            armed: false,
            pending_write: None,
            ancestor_refused: None,
            link: Link::Up,
            events: EventQueue::new(),
            scratch: String::new(),
        })
    }

    crate::engine::acl_option::acl_option!();

    /// The barrier node's path.
    pub fn node(&self) -> &str {
        &self.node
    }

    /// Whether a wait is in progress.
    pub fn is_waiting(&self) -> bool {
        self.waiting
    }

    /// Whether nothing is in progress.
    pub fn is_idle(&self) -> bool {
        !self.waiting && self.pending_write.is_none()
    }

    /// Raises the barrier; [`BarrierEvent::Set`] follows.
    ///
    /// Calls may overlap: the barrier ends in the state of the last one.
    /// A call overtaken by a later one before its answer came (after a
    /// connection loss, say) may report nothing.
    pub fn set(&mut self) {
        self.write(Op::Create);
    }

    /// Lowers the barrier; [`BarrierEvent::Removed`] follows, and every
    /// waiter passes. Calls may overlap, as for [`set`](Barrier::set).
    pub fn remove(&mut self) {
        self.write(Op::Delete);
    }

    fn write(&mut self, op: Op) {
        self.pending_write = Some(op);
        // Pushed even if the same write is in flight: an answer to the
        // earlier one says nothing about the calls since.
        self.ops.push(op);
    }

    /// Whether a write is queued or in flight.
    fn writing(&self) -> bool {
        self.ops.is_pending(Op::Create)
            || self.ops.is_pending(Op::Delete)
            || (1..=self.depth()).any(|level| self.ops.is_pending(Op::Ensure(level)))
    }

    /// Waits until the barrier is down; [`BarrierEvent::Passed`] follows
    /// (at once if it is not set).
    pub fn wait(&mut self) {
        if !self.waiting {
            self.waiting = true;
            self.armed = false;
            self.read_caught_up();
        }
    }

    /// Reads the node behind a no-op write: the server a waiter is
    /// connected to may lag behind the quorum, and without it a wait begun
    /// after another client's `set` returned could read the node as missing
    /// and pass. The read follows in the same flight (the server keeps one
    /// session's requests in order), so it costs no round trip of its own.
    fn read_caught_up(&mut self) {
        self.ops.queue(Op::CatchUp);
        self.ops.queue(Op::Watch);
    }

    /// Stops waiting (no event follows). A watch already on the server
    /// stays until the node changes: ZooKeeper 3.8 clients cannot take one
    /// back.
    pub fn cancel_wait(&mut self) {
        self.waiting = false;
        self.ops.forget(|op| matches!(op, Op::CatchUp | Op::Watch));
    }

    fn write_done(&mut self, event: BarrierEvent) {
        if !self.writing() {
            self.pending_write = None;
        }
        self.events.emit(event);
    }

    fn passed(&mut self) {
        if self.waiting {
            self.waiting = false;
            self.ops.forget(|op| matches!(op, Op::CatchUp | Op::Watch));
            self.events.emit(BarrierEvent::Passed);
        }
    }

    fn lost(&mut self) {
        self.link.lose();
        self.ops.lose();
    }

    fn depth(&self) -> u8 {
        ancestors::depth(path::parent(&self.node).unwrap_or("/"))
    }
}

impl<const N: usize> Recipe for Barrier<N> {
    type Event = BarrierEvent;

    fn poll_request(&mut self) -> Option<Outgoing<'_>> {
        if !self.link.is_up() {
            return None;
        }
        let depth = self.depth();
        let (id, op) = self.ops.next_creating_ancestors(depth)?;
        let node = self.node.as_str();
        let request = match op {
            Op::Ensure(level) => {
                let parent = path::parent(node).unwrap_or("/");
                ancestors::create(parent, level, &mut self.scratch, self.acl)
            }
            Op::Create => Request::Create {
                path: node,
                data: &[],
                acl: self.acl,
                mode: CreateMode::Persistent,
            },
            Op::Delete => Request::Delete {
                path: node,
                version: Version::Any,
            },
            Op::CatchUp => catch_up::request(node),
            Op::Watch => Request::GetData {
                path: node,
                watch: true,
            },
        };
        Some(Outgoing { id, request })
    }

    fn handle_reply(&mut self, _now: Instant, id: RequestId, reply: Reply<'_>) {
        let Some(op) = self.ops.take(id) else {
            return;
        };
        // Whatever the create's answer, the chain it followed is over.
        let refused = if op == Op::Create {
            self.ancestor_refused.take()
        } else {
            None
        };
        match (op, reply) {
            (Op::Ensure(_), Reply::Created { .. } | Reply::Error(ZkError::NodeExists)) => {}
            (Op::Create, Reply::Created { .. } | Reply::Error(ZkError::NodeExists)) => {
                self.write_done(BarrierEvent::Set)
            }
            // The parent is missing: create the ancestors, then the node,
            // unless a later call overtook this one (the node must not be
            // created after a later remove).
            (Op::Create, Reply::Error(ZkError::NoNode)) if self.depth() > 0 => {
                if let Some(e) = refused {
                    self.write_done(BarrierEvent::Failed(Error::Zk(e)));
                } else if !self.writing() {
                    self.ops.queue(Op::Ensure(1));
                    self.ops.push(Op::Create);
                }
            }
            (Op::Delete, Reply::Deleted | Reply::Error(ZkError::NoNode)) => {
                self.write_done(BarrierEvent::Removed)
            }
            (Op::CatchUp, Reply::Checked) => {}
            // Up: the watch is armed. Also when the node's data is too
            // large for an embedded driver's buffer: the server read it.
            (Op::Watch, Reply::Data { .. } | Reply::Error(ZkError::ReplyTooLarge)) => {
                self.armed = self.waiting
            }
            (Op::Watch, Reply::Error(ZkError::NoNode)) => self.passed(),
            // `pending_write` already holds the last call: the writes in
            // flight are settled by sending it alone again.
            (_, Reply::Error(e)) if e.is_connection_loss() => self.lost(),
            (_, Reply::Error(e)) if e.is_session_gone() => {
                self.link.end(SessionEvent::Expired);
                self.lost();
            }
            // Reported by the create queued behind (the deeper ancestors'
            // `NoNode` follows from this refusal).
            (Op::Ensure(_), Reply::Error(e)) => {
                self.ancestor_refused.get_or_insert(e);
            }
            (Op::Create | Op::Delete, Reply::Error(e)) => {
                self.write_done(BarrierEvent::Failed(Error::Zk(e)))
            }
            // The read queued behind it answers for the wait (`NoNode`
            // here only says the barrier is down; the read says it too).
            (Op::CatchUp, Reply::Error(_)) => {}
            (Op::Watch, Reply::Error(e)) => {
                self.waiting = false;
                self.events.emit(BarrierEvent::Failed(Error::Zk(e)));
            }
            (_, _) => self.events.emit(BarrierEvent::Failed(Error::BadReply)),
        }
    }

    fn handle_watch(&mut self, _now: Instant, event: WatchEvent<'_>) {
        if !self.waiting || event.path != self.node.as_str() {
            return;
        }
        match event.kind {
            WatchKind::NodeDeleted if self.armed => self.passed(),
            // A deletion this wait cannot vouch for: its own read has not
            // seen the node yet, and that read is on its way (a wait starts
            // with one, a data change and a new connection queue one), so
            // it decides.
            WatchKind::NodeDeleted => {}
            // A data change spends the one-shot watch: arm it again.
            _ => {
                self.armed = false;
                if self.link.is_up() {
                    self.ops.queue(Op::Watch);
                }
            }
        }
    }

    fn handle_session(&mut self, _now: Instant, event: SessionEvent) {
        match event {
            SessionEvent::Connected { .. } => {
                let how = self.link.connected();
                // A new session holds none of the last one's watches; a
                // resumed one had them set again by its client.
                if how == Reconnect::New {
                    self.armed = false;
                }
                if how != Reconnect::Same {
                    self.ops.clear_queued();
                    // Writes whose answer was lost are idempotent: send
                    // again. A wait reads again (its watch may be gone).
                    if let Some(op) = self.pending_write {
                        self.ops.queue(op);
                    }
                    // The first read may not have been answered, and the
                    // new server may lag behind the quorum: catch up again.
                    if self.waiting {
                        self.read_caught_up();
                    }
                }
            }
            SessionEvent::Suspended => self.lost(),
            SessionEvent::Expired | SessionEvent::Closed => {
                self.link.end(event);
                self.lost();
            }
        }
    }

    fn poll_event(&mut self) -> Option<BarrierEvent> {
        self.events.pop()
    }
}

impl<const N: usize> fmt::Debug for Barrier<N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Barrier")
            .field("node", &self.node.as_str())
            .field("waiting", &self.waiting)
            .field("pending_write", &self.pending_write)
            .field("link", &self.link)
            .finish()
    }
}
