//! Adding items to a queue.

use core::fmt::{self, Write};

use heapless::{String, Vec};

use super::{Error, MARKER};
use crate::engine::ancestors;
use crate::engine::catch_up;
use crate::engine::event_queue::EventQueue;
use crate::engine::link::{Link, Reconnect};
use crate::engine::pipeline::Pipeline;
use crate::naming::Guid;
use crate::path;
use crate::{
    Acl, Children, CreateMode, Instant, Outgoing, Recipe, Reply, Request, RequestId, SessionEvent,
    WatchEvent, ZkError,
};

/// What a producer tells the application.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum ProducerEvent {
    /// The item is in the queue ([`Producer::item`] names it).
    Put,
    /// The put failed; nothing was added, except with
    /// [`Error::SessionEnded`]: the session was closed while the create was
    /// on its way, and a persistent item may have landed, or it expired
    /// while an ephemeral item's create was on its way, and a consumer may
    /// have taken it. (A persistent put cut by an expiry goes on on the
    /// next session: it looks for its item before creating it again.)
    Failed(Error),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Ensure(u8),
    Create,
    /// A create's outcome is unknown: look for the GUID.
    Find,
    /// The no-op write ahead of a [`Find`](Op::Find), in the same flight.
    CatchUp,
}

/// Whether `op`, lost with the connection, leaves the put's create in
/// doubt: the create itself, or the search for it.
fn in_doubt(op: Op) -> bool {
    matches!(op, Op::Create | Op::Find | Op::CatchUp)
}

ancestors::ancestor_op!(Op);

/// Adds items to the queue at a directory, one at a time.
///
/// `D` is the capacity of an item's data, `N` of a path.
///
/// ```
/// use herdless_core::naming::Guid;
/// use herdless_core::queue::{Producer, ProducerEvent};
/// use herdless_core::{Recipe, Reply};
/// let now = herdless_core::Instant::ZERO; // the driver's clock
///
/// let mut producer: Producer = Producer::new("/jobs").unwrap();
/// producer.put(Guid::from_random_bytes([3; 16]), b"resize img-7", None, false).unwrap();
/// let create = producer.poll_request().unwrap();
/// assert!(create.request.path().ends_with("-queue-"));
/// let id = create.id;
/// producer.handle_reply(now, id, Reply::Created {
///     path: "/jobs/03030303-0303-4303-8303-030303030303-queue-0000000000",
/// });
/// assert_eq!(producer.poll_event(), Some(ProducerEvent::Put));
/// ```
pub struct Producer<const D: usize = 256, const N: usize = 128> {
    dir: String<N>,
    ops: Pipeline<Op, 8, 8>,
    data: Vec<u8, D>,
    guid: Guid,
    priority: Option<u8>,
    mode: CreateMode,
    busy: bool,
    item: String<N>,
    link: Link,
    events: EventQueue<ProducerEvent, 4>,
    scratch: String<N>,
    /// The ACL of every node it creates.
    acl: Acl<'static>,
}

impl<const D: usize, const N: usize> Producer<D, N> {
    /// A producer for the queue at `dir` (created with its ancestors when
    /// missing).
    pub fn new(dir: &str) -> Result<Self, Error> {
        path::validate(dir)?;
        if dir == "/" {
            return Err(Error::Path(path::PathError::BadName));
        }
        let mut stored = String::new();
        path::concat_into(&mut stored, &[dir])?;
        Ok(Producer {
            acl: Acl::OPEN,
            dir: stored,
            ops: Pipeline::new(),
            data: Vec::new(),
            guid: Guid::default(),
            priority: None,
            mode: CreateMode::PersistentSequential,
            busy: false,
            item: String::new(),
            link: Link::Up,
            events: EventQueue::new(),
            scratch: String::new(),
        })
    }

    crate::engine::acl_option::acl_option!();

    /// The full path of the last item put.
    pub fn item(&self) -> &str {
        &self.item
    }

    /// Whether a put is in progress.
    pub fn is_busy(&self) -> bool {
        self.busy
    }

    /// Puts `data` into the queue, with a priority (0 first, 99 last) for a
    /// priority queue, as an ephemeral item if `ephemeral` (it goes with this
    /// session). `guid` must be fresh random bytes for every put.
    /// [`ProducerEvent::Put`] follows.
    pub fn put(
        &mut self,
        guid: Guid,
        data: &[u8],
        priority: Option<u8>,
        ephemeral: bool,
    ) -> Result<(), Error> {
        if self.busy {
            return Err(Error::InvalidState);
        }
        if !self.link.accepts_work() {
            return Err(Error::SessionEnded);
        }
        if priority.is_some_and(|p| p > 99) {
            return Err(Error::BadPriority);
        }
        self.data = Vec::from_slice(data).map_err(|_| Error::TooLarge {
            len: data.len(),
            capacity: D,
        })?;
        // The item's full path must fit: dir, '/', guid (36), marker,
        // "YY-", and the 10-digit sequence.
        let needed = self.dir.len() + 1 + 36 + MARKER.len() + 3 + 11;
        if needed > N {
            return Err(Error::Path(path::PathError::TooLong {
                needed,
                capacity: N,
            }));
        }
        self.guid = guid;
        self.priority = priority;
        self.mode = if ephemeral {
            CreateMode::EphemeralSequential
        } else {
            CreateMode::PersistentSequential
        };
        self.busy = true;
        self.ops.queue(Op::Create);
        Ok(())
    }

    fn done(&mut self, event: ProducerEvent) {
        self.busy = false;
        self.ops.clear();
        self.events.emit(event);
    }

    fn is_own(&self, name: &str) -> bool {
        let mut prefix: String<64> = String::new();
        let _ = self.guid.write_hyphenated(&mut prefix);
        name.strip_prefix(prefix.as_str())
            .is_some_and(|rest| rest.starts_with(MARKER))
    }

    /// Looks for the item by GUID in names of the listing (the whole, or
    /// a part: finding it ends the search, and the rest is ignored).
    fn on_children(&mut self, children: Children<'_>, last: bool) {
        for name in children {
            if self.is_own(name) {
                if path::join_into(&mut self.item, &self.dir, name).is_err() {
                    return self.done(ProducerEvent::Failed(Error::BadReply));
                }
                return self.done(ProducerEvent::Put);
            }
        }
        if last {
            // Not there: never created, or already taken by a consumer
            // (then this second create adds it again: at least once).
            self.ops.queue(Op::Create);
        }
    }

    /// The session is gone. A persistent item whose create may have landed
    /// (one in flight, `also` whose answer says so, or one already being
    /// looked for) outlives the session: the put stays busy and looks for
    /// its GUID on the next session before creating again, so a put is not
    /// doubled by an expiry. An ephemeral item died with the session, or a
    /// consumer took it: nothing tells which, so the put fails.
    fn session_ended(&mut self, also: bool, how: SessionEvent) {
        let unsure = also || self.ops.is_in_flight(Op::Create) || self.ops.is_pending(Op::Find);
        self.link.end(how);
        self.ops.lose();
        if self.busy && unsure && self.mode == CreateMode::PersistentSequential {
            self.search();
        }
    }

    /// The session expired (`also`: with a request in doubt). A put in
    /// progress goes on on the next session (its create, or the search for
    /// one in doubt, is sent there), as one asked now would; a client that
    /// opens none says `Closed` next. An ephemeral item lives and dies with
    /// its session, so its put ends with it.
    fn expired(&mut self, also: bool) {
        self.session_ended(also, SessionEvent::Expired);
        if self.busy && self.mode != CreateMode::PersistentSequential {
            self.done(ProducerEvent::Failed(Error::SessionEnded));
        }
    }

    /// Looks for the item by GUID, behind a no-op write in the same flight
    /// (`engine::catch_up`): the create's answer was lost, so the server
    /// asked may not have applied it yet, and a listing from there would
    /// miss the item and put it twice.
    fn search(&mut self) {
        self.ops.forget(|op| matches!(op, Op::CatchUp | Op::Find));
        self.ops.queue(Op::CatchUp);
        self.ops.queue(Op::Find);
    }
}

impl<const D: usize, const N: usize> Recipe for Producer<D, N> {
    type Event = ProducerEvent;

    fn poll_request(&mut self) -> Option<Outgoing<'_>> {
        if !self.link.is_up() {
            return None;
        }
        let (id, op) = self
            .ops
            .next_creating_ancestors(ancestors::depth(&self.dir))?;
        let request = match op {
            Op::Ensure(level) => ancestors::create(&self.dir, level, &mut self.scratch, self.acl),
            Op::Create => {
                self.scratch.clear();
                // Cannot fail: sized in `put`.
                let _ = write!(self.scratch, "{}/", self.dir);
                let _ = self.guid.write_hyphenated(&mut self.scratch);
                let _ = self.scratch.push_str(MARKER);
                if let Some(p) = self.priority {
                    let _ = write!(self.scratch, "{p:02}-");
                }
                Request::Create {
                    path: &self.scratch,
                    data: &self.data,
                    acl: self.acl,
                    mode: self.mode,
                }
            }
            Op::CatchUp => catch_up::request(&self.dir),
            Op::Find => Request::GetChildren {
                path: &self.dir,
                watch: false,
            },
        };
        Some(Outgoing { id, request })
    }

    fn handle_reply(&mut self, _now: Instant, id: RequestId, reply: Reply<'_>) {
        let Some(op) = self.ops.take(id) else {
            return;
        };
        match (op, reply) {
            (Op::Ensure(_), Reply::Created { .. } | Reply::Error(ZkError::NodeExists)) => {}
            (Op::Create, Reply::Created { path }) => {
                self.item.clear();
                if self.item.push_str(path).is_err() {
                    return self.done(ProducerEvent::Failed(Error::BadReply));
                }
                self.done(ProducerEvent::Put)
            }
            (Op::Create, Reply::Error(ZkError::NoNode)) => {
                self.ops.queue(Op::Ensure(1));
                self.ops.push(Op::Create);
            }
            (Op::Find, Reply::Children(children)) => self.on_children(children, true),
            (Op::Find, Reply::Error(ZkError::NoNode)) => self.ops.queue(Op::Create),
            // The listing behind it answers, a missing directory too.
            (Op::CatchUp, Reply::Checked | Reply::Error(ZkError::NoNode)) => {}
            (op, Reply::Error(e)) if e.is_connection_loss() => {
                self.link.lose();
                if self.ops.lose().into_iter().chain([op]).any(in_doubt) {
                    // Applied or not: the GUID tells, after the reconnect.
                    self.search();
                }
            }
            (op, Reply::Error(e)) if e.is_session_gone() => self.expired(in_doubt(op)),
            (_, Reply::Error(e)) => self.done(ProducerEvent::Failed(Error::Zk(e))),
            (_, _) => self.done(ProducerEvent::Failed(Error::BadReply)),
        }
    }

    fn handle_watch(&mut self, _now: Instant, _event: WatchEvent<'_>) {}

    fn handle_session(&mut self, _now: Instant, event: SessionEvent) {
        match event {
            SessionEvent::Connected { .. } => {
                let back = self.link.connected() != Reconnect::Same;
                if back && self.busy && !self.ops.is_pending(Op::Find) {
                    // Nothing was in flight: the create was never sent, or
                    // its answer already came.
                    self.ops.queue(Op::Create);
                }
            }
            SessionEvent::Suspended => {
                // Once per loss: the requests in flight are lost with it.
                if self.link.lose() && self.ops.lose().into_iter().any(in_doubt) {
                    self.search();
                }
            }
            SessionEvent::Expired => self.expired(false),
            SessionEvent::Closed => {
                self.session_ended(false, event);
                if self.busy {
                    // No session follows a close: nobody will look.
                    self.done(ProducerEvent::Failed(Error::SessionEnded));
                }
            }
        }
    }

    fn poll_event(&mut self) -> Option<ProducerEvent> {
        self.events.pop()
    }

    fn takes_listing_in_parts(&self) -> bool {
        true
    }

    fn handle_listing_part(
        &mut self,
        _now: Instant,
        id: RequestId,
        names: Children<'_>,
        last: bool,
    ) {
        if self.ops.listing_part_of(id, Op::Find, last) {
            self.on_children(names, last);
        }
    }
}

impl<const D: usize, const N: usize> fmt::Debug for Producer<D, N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Producer")
            .field("dir", &self.dir.as_str())
            .field("busy", &self.busy)
            .field("item", &self.item.as_str())
            .field("link", &self.link)
            .finish()
    }
}
