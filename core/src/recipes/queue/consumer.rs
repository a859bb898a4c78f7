//! Taking items from a queue.

use core::cmp::Ordering;
use core::fmt;

use heapless::{String, Vec};

use super::{Error, ItemKey};
use crate::engine::catch_up;
use crate::engine::deadline::Deadline;
use crate::engine::event_queue::EventQueue;
use crate::engine::link::{Link, Reconnect};
use crate::engine::pipeline::Pipeline;
use crate::path;
use crate::Sequence;
use crate::{
    Children, Instant, Outgoing, Recipe, Reply, Request, RequestId, SessionEvent, Version,
    WatchEvent, WatchKind, ZkError,
};

/// What a consumer tells the application.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum ConsumerEvent {
    /// An item was taken: its data is [`Consumer::item`]. `certain` is
    /// false when the delete's answer was lost and the item was gone
    /// afterwards: another consumer may have taken it too (see the
    /// [module docs](super)).
    Taken {
        /// Whether this consumer's delete is known to have removed it.
        certain: bool,
    },
    /// A peek found an item: its data is [`Consumer::item`] (it stays in the
    /// queue).
    Peeked,
    /// A peek or a take with a deadline found the queue empty.
    Empty,
    /// The operation failed.
    Failed(Error),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Take,
    Peek,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    /// getChildren, with or without the child watch.
    List { watch: bool },
    /// getData of the batch's first item.
    Read,
    /// delete of the batch's first item.
    Delete,
    /// A delete's answer was lost: is the item still there?
    Check,
    /// The no-op write ahead of a [`Check`](Op::Check), in the same flight.
    CatchUp,
    /// The directory is missing: exists with a watch, to hear of its
    /// creation.
    AwaitDir,
}

/// Takes items from the queue at a directory, lowest first.
///
/// `B` is how many of the lowest items one listing keeps (the batch worked
/// through before listing again), `D` the capacity of an item's data, `N`
/// of a path. A priority consumer (see [`Consumer::priority`]) drops its
/// batch on every change of the queue.
///
/// ```
/// use herdless_core::queue::{Consumer, ConsumerEvent};
/// use herdless_core::{Children, Recipe, Reply, Stat};
/// let now = herdless_core::Instant::ZERO; // the driver's clock
///
/// let mut consumer: Consumer = Consumer::new("/jobs").unwrap();
/// consumer.take(None).unwrap();
/// let list = consumer.poll_request().unwrap().id;
/// let names = ["b-queue-0000000002", "a-queue-0000000001"];
/// consumer.handle_reply(now, list, Reply::Children(Children::new(&&names[..])));
/// let read = consumer.poll_request().unwrap();
/// assert_eq!(read.request.path(), "/jobs/a-queue-0000000001"); // lowest first
/// let read = read.id;
/// consumer.handle_reply(now, read, Reply::Data { data: b"resize img-7", stat: Stat::default() });
/// let delete = consumer.poll_request().unwrap().id;
/// consumer.handle_reply(now, delete, Reply::Deleted);
/// assert_eq!(consumer.poll_event(), Some(ConsumerEvent::Taken { certain: true }));
/// assert_eq!(consumer.item(), b"resize img-7");
/// ```
pub struct Consumer<const B: usize = 16, const D: usize = 256, const N: usize = 128> {
    dir: String<N>,
    ops: Pipeline<Op, 4, 4>,
    priority: bool,
    mode: Option<Mode>,
    deadline: Deadline,
    /// The lowest items of the last listing, in queue order.
    batch: Vec<(String<N>, ItemKey), B>,
    /// A child notification came: the batch is out of date.
    stale: bool,
    data: Vec<u8, D>,
    item_name: String<N>,
    link: Link,
    events: EventQueue<ConsumerEvent, 4>,
    scratch: String<N>,
    /// The listing coming in parts, and whether it is read (or ignored,
    /// as a whole listing would be).
    listing: Option<(RequestId, bool)>,
    /// Items too large for `D`, left in the queue and left out of the
    /// batches that follow, each with whether the listing being read holds
    /// it: one that has left the queue is forgotten, so that a directory
    /// made anew, whose sequence numbers start again, loses no item.
    oversized: Vec<(ItemKey, bool), OVERSIZED>,
    /// Once more are passed over than `oversized` holds: left out too.
    floor: Option<Floor>,
    /// The latest sequence of the listing being read, and of the one the
    /// batch came from.
    latest: Option<Sequence>,
    batch_latest: Option<Sequence>,
    /// The full path of the last item passed over as too large.
    passed_over: String<N>,
}

/// How many items too large to take a consumer remembers one by one, so as
/// not to read them again on every listing.
const OVERSIZED: usize = 4;

/// Items left out past the few remembered one by one: `key`, passed over
/// once those were full, and every item below it that was in the listing
/// it came from (sequence no later than `latest`). Items are read lowest
/// first, so each of those was read before it and passed over too (or
/// had gone); none can be taken, as an item's data never changes. A later
/// item, however urgent, has a later sequence. Reading them all again on
/// every listing kept a consumer listing and reading without end, its
/// deadline never reached, once a queue held more than `OVERSIZED` items
/// too large.
#[derive(Clone, Copy, Debug)]
struct Floor {
    key: ItemKey,
    latest: Sequence,
    /// Whether the listing being read holds `key`: once it has left the
    /// queue, the floor goes (the items below it are read once more).
    seen: bool,
}

impl Floor {
    /// Whether the item `key` is left out.
    fn covers(self, key: ItemKey) -> bool {
        key.order(self.key) == Ordering::Less && !self.latest.precedes(key.sequence)
    }
}

impl<const B: usize, const D: usize, const N: usize> Consumer<B, D, N> {
    /// A consumer of the queue at `dir`.
    pub fn new(dir: &str) -> Result<Self, Error> {
        path::validate(dir)?;
        let mut stored = String::new();
        path::concat_into(&mut stored, &[dir])?;
        Ok(Consumer {
            dir: stored,
            ops: Pipeline::new(),
            priority: false,
            mode: None,
            deadline: Deadline::None,
            batch: Vec::new(),
            stale: false,
            data: Vec::new(),
            item_name: String::new(),
            link: Link::Up,
            events: EventQueue::new(),
            scratch: String::new(),
            listing: None,
            oversized: Vec::new(),
            floor: None,
            latest: None,
            batch_latest: None,
            passed_over: String::new(),
        })
    }

    /// A consumer of the priority queue at `dir`: it keeps the child watch
    /// while it works and drops its batch on every notification.
    pub fn priority(dir: &str) -> Result<Self, Error> {
        let mut consumer = Self::new(dir)?;
        consumer.priority = true;
        Ok(consumer)
    }

    /// The data of the last item taken or peeked.
    pub fn item(&self) -> &[u8] {
        &self.data
    }

    /// The full path of the last item taken or peeked.
    pub fn item_name(&self) -> &str {
        &self.item_name
    }

    /// The full path of the last item passed over because its data is
    /// larger than `D` (empty if none was). Such an item is neither taken
    /// nor reported as an error: it stays in the queue for a consumer that
    /// can hold it (another library's, or an operator), and this one goes
    /// on to the next item, rather than stalling every take behind it.
    ///
    /// ```
    /// use herdless_core::queue::{Consumer, ConsumerEvent};
    /// use herdless_core::{Children, Recipe, Reply, Stat};
    /// let now = herdless_core::Instant::ZERO;
    ///
    /// let mut consumer: Consumer<16, 4> = Consumer::new("/jobs").unwrap();
    /// consumer.take(None).unwrap();
    /// let list = consumer.poll_request().unwrap().id;
    /// let names = ["a-queue-0000000001", "b-queue-0000000002"];
    /// consumer.handle_reply(now, list, Reply::Children(Children::new(&&names[..])));
    /// let read = consumer.poll_request().unwrap().id;
    /// consumer.handle_reply(now, read, Reply::Data { data: b"too big", stat: Stat::default() });
    /// assert_eq!(consumer.passed_over(), "/jobs/a-queue-0000000001");
    /// let next = consumer.poll_request().unwrap();
    /// assert_eq!(next.request.path(), "/jobs/b-queue-0000000002");
    /// ```
    pub fn passed_over(&self) -> &str {
        &self.passed_over
    }

    /// Whether a take or peek is in progress.
    pub fn is_busy(&self) -> bool {
        self.mode.is_some()
    }

    /// Takes the lowest item, waiting for one if the queue is empty (until
    /// `deadline`, then [`ConsumerEvent::Empty`]). As with Curator's timed
    /// `poll`, a listing or read in flight at the deadline still decides:
    /// an item already there is taken however short the deadline.
    pub fn take(&mut self, deadline: Option<Instant>) -> Result<(), Error> {
        self.start(Mode::Take, deadline.map_or(Deadline::None, Deadline::At))
    }

    /// Reads the lowest item without taking it; [`ConsumerEvent::Empty`] if
    /// there is none.
    pub fn peek(&mut self) -> Result<(), Error> {
        self.start(Mode::Peek, Deadline::None)
    }

    /// Stops a take that is waiting; no event follows. A take whose delete
    /// is on its way cannot be stopped (the item may be taken).
    pub fn cancel(&mut self) -> bool {
        if self.mode.is_some() && !self.deleting() {
            self.mode = None;
            self.deadline = Deadline::None;
            self.ops.clear();
            true
        } else {
            false
        }
    }

    fn start(&mut self, mode: Mode, deadline: Deadline) -> Result<(), Error> {
        if self.mode.is_some() {
            return Err(Error::InvalidState);
        }
        if !self.link.accepts_work() {
            return Err(Error::SessionEnded);
        }
        self.mode = Some(mode);
        self.deadline = deadline;
        self.next_item();
        Ok(())
    }

    /// Works on the batch's first item, or lists when the batch is used up
    /// (or out of date).
    fn next_item(&mut self) {
        if self.stale {
            self.stale = false;
            self.batch.clear();
            // A read queued for the old batch's first item (a take started
            // while disconnected) would name no item now.
            self.ops.unqueue(|op| op == Op::Read);
        }
        if self.batch.is_empty() {
            self.ops.queue(Op::List {
                watch: self.priority,
            });
        } else {
            self.ops.queue(Op::Read);
        }
    }

    fn finish(&mut self, event: ConsumerEvent) {
        self.mode = None;
        self.deadline = Deadline::None;
        self.events.emit(event);
    }

    /// Keeps the `B` lowest items of one listing, in one pass.
    fn on_children(&mut self, children: Children<'_>, watched: bool) {
        self.begin_listing(watched);
        for name in children {
            self.consider(name);
        }
        self.end_listing(watched);
    }

    /// A listing begins: the batch is made anew from it.
    fn begin_listing(&mut self, watched: bool) {
        self.batch.clear();
        for seen in self.oversized.iter_mut() {
            seen.1 = false;
        }
        if let Some(floor) = &mut self.floor {
            floor.seen = false;
        }
        self.latest = None;
        if watched {
            self.stale = false;
        }
    }

    /// Keeps `name` in the batch if it is among the `B` lowest items so far.
    fn consider(&mut self, name: &str) {
        let Some(key) = ItemKey::parse(name) else {
            return;
        };
        if self
            .latest
            .is_none_or(|latest| latest.precedes(key.sequence))
        {
            self.latest = Some(key.sequence);
        }
        if let Some(seen) = self.oversized.iter_mut().find(|(k, _)| *k == key) {
            seen.1 = true;
            return;
        }
        if let Some(floor) = &mut self.floor {
            if floor.key == key {
                floor.seen = true;
                return;
            }
            if floor.covers(key) {
                return;
            }
        }
        // Names whose full path would not fit are not ours to take.
        if path::joined_len(&self.dir, name) > N {
            return;
        }
        let Ok(stored) = String::<N>::try_from(name) else {
            return;
        };
        let at = self
            .batch
            .iter()
            .position(|(_, k)| key.order(*k) == Ordering::Less)
            .unwrap_or(self.batch.len());
        if self.batch.is_full() {
            if at >= self.batch.len() {
                return;
            }
            self.batch.pop();
        }
        let _ = self.batch.insert(at, (stored, key));
    }

    /// The listing is read: work on its lowest item, or wait for one.
    fn end_listing(&mut self, watched: bool) {
        self.oversized.retain(|(_, seen)| *seen);
        if self.floor.is_some_and(|floor| !floor.seen) {
            self.floor = None;
        }
        self.batch_latest = self.latest;
        if !self.batch.is_empty() {
            return self.ops.queue(Op::Read);
        }
        match self.mode {
            Some(Mode::Peek) => self.finish(ConsumerEvent::Empty),
            Some(Mode::Take) if self.deadline.passed() => self.finish(ConsumerEvent::Empty),
            // Empty: list again with the child watch, and wait on it.
            Some(Mode::Take) if !watched => self.ops.queue(Op::List { watch: true }),
            _ => {}
        }
    }

    /// The batch's first item is too large to hold: left in the queue, and
    /// out of the batches to come, while the take or peek goes on.
    fn pass_over(&mut self) {
        if let Some((name, key)) = self.batch.first() {
            let key = *key;
            let mut passed = String::new();
            // Fits: the batch holds only names whose path fits `N`.
            let _ = path::join_into(&mut passed, &self.dir, name);
            self.passed_over = passed;
            if self.oversized.is_full() {
                self.floor = Some(Floor {
                    key,
                    latest: self.batch_latest.unwrap_or(key.sequence),
                    seen: true,
                });
            } else {
                let _ = self.oversized.push((key, true));
            }
        }
        self.skip();
    }

    /// The batch's first item is gone (taken by someone else): the next.
    fn skip(&mut self) {
        if !self.batch.is_empty() {
            self.batch.remove(0);
        }
        self.next_item();
    }

    /// Whether a listing answered now is read: a take or peek is on, and
    /// no item is being worked on (a listing answered while an item is
    /// read or deleted, two having been in flight, must not change which
    /// item that work is on).
    fn reads_listing(&self) -> bool {
        self.mode.is_some() && !self.on_item()
    }

    /// Whether the item's delete is queued, on its way, or being checked:
    /// the item may be taken, so the take can neither be cancelled nor run
    /// out of time.
    fn deleting(&self) -> bool {
        self.ops.is_pending(Op::Delete) || self.ops.is_pending(Op::Check)
    }

    /// Whether the batch's first item is being read, deleted or checked.
    fn on_item(&self) -> bool {
        self.ops.is_pending(Op::Read) || self.deleting()
    }

    fn first_path(&mut self) -> &str {
        let name = self.batch.first().map(|(n, _)| n.as_str()).unwrap_or("");
        // Cannot fail: names whose path would not fit never enter the batch.
        let _ = path::join_into(&mut self.scratch, &self.dir, name);
        &self.scratch
    }

    fn lost(&mut self, also: Option<Op>) {
        if !self.link.lose() {
            return;
        }
        // A check still queued is dropped with the rest.
        let checking = self.ops.is_pending(Op::Check);
        let lost = self.ops.lose();
        let unsure = |op: &Op| matches!(op, Op::Delete | Op::Check);
        if checking || lost.iter().any(unsure) || also.as_ref().is_some_and(unsure) {
            // Whether our delete removed it is unknown (a check lost on its
            // way leaves it just as unknown): check after the reconnect.
            self.check_again();
        }
    }

    /// Asks whether the item our lost delete was for is still there,
    /// behind a no-op write in the same flight (`engine::catch_up`): the
    /// server asked may not have applied the delete yet, and an item it
    /// still shows would be deleted again, answered `NoNode`, and skipped,
    /// taken by us and delivered to nobody.
    fn check_again(&mut self) {
        self.ops.forget(|op| matches!(op, Op::CatchUp | Op::Check));
        self.ops.queue(Op::CatchUp);
        self.ops.queue(Op::Check);
    }
}

impl<const B: usize, const D: usize, const N: usize> Recipe for Consumer<B, D, N> {
    type Event = ConsumerEvent;

    fn poll_request(&mut self) -> Option<Outgoing<'_>> {
        if !self.link.is_up() {
            return None;
        }
        let (id, op) = self.ops.next()?;
        let request = match op {
            Op::List { watch } => Request::GetChildren {
                path: &self.dir,
                watch,
            },
            Op::Read => Request::GetData {
                path: self.first_path(),
                watch: false,
            },
            Op::Delete => Request::Delete {
                path: self.first_path(),
                version: Version::Any,
            },
            Op::Check => Request::Exists {
                path: self.first_path(),
                watch: false,
            },
            Op::AwaitDir => Request::Exists {
                path: &self.dir,
                watch: true,
            },
            Op::CatchUp => catch_up::request(self.first_path()),
        };
        Some(Outgoing { id, request })
    }

    fn handle_reply(&mut self, _now: Instant, id: RequestId, reply: Reply<'_>) {
        let Some(op) = self.ops.take(id) else {
            return;
        };
        if self.listing.is_some_and(|(listing, _)| listing == id) {
            // Answered after some of its parts (`ReplyTooLarge`: a name
            // over an embedded driver's receive buffer): the lowest items
            // may be in the rest, so the parts read make no batch.
            self.listing = None;
            self.batch.clear();
        }
        if self.mode.is_none() {
            return;
        }
        match (op, reply) {
            // The notification that sent a listing ignored here left the
            // batch stale for the next item.
            (Op::List { .. }, _) if !self.reads_listing() => {}
            (Op::List { watch }, Reply::Children(children)) => self.on_children(children, watch),
            (Op::Read, Reply::Data { data, .. }) => {
                let Ok(stored) = Vec::from_slice(data) else {
                    return self.pass_over();
                };
                self.data = stored;
                let name = self.first_path();
                let mut item_name = String::new();
                let _ = item_name.push_str(name);
                self.item_name = item_name;
                match self.mode {
                    Some(Mode::Peek) => self.finish(ConsumerEvent::Peeked),
                    _ => self.ops.queue(Op::Delete),
                }
            }
            (Op::Read, Reply::Error(ZkError::NoNode)) => self.skip(),
            // Too large for the transport's receive buffer (embedded).
            (Op::Read, Reply::Error(ZkError::ReplyTooLarge)) => self.pass_over(),
            // No directory, no items: nothing to peek. A take waits for the directory to be
            // (re-)created: an operator's `deleteall`, or a container
            // reaped when empty, must not leave it waiting on a watch that
            // is gone with the node.
            (Op::List { .. }, Reply::Error(ZkError::NoNode)) => {
                self.batch.clear();
                match self.mode {
                    Some(Mode::Peek) => self.finish(ConsumerEvent::Empty),
                    _ if self.deadline.passed() => self.finish(ConsumerEvent::Empty),
                    _ => self.ops.queue(Op::AwaitDir),
                }
            }
            // Created between the listing and the exists: list again.
            (Op::AwaitDir, Reply::Exists { .. }) => self.ops.queue(Op::List { watch: true }),
            // The creation watch is set: wait for it.
            (Op::AwaitDir, Reply::Error(ZkError::NoNode)) => {}
            (Op::Delete, Reply::Deleted) => {
                if !self.batch.is_empty() {
                    self.batch.remove(0);
                }
                self.finish(ConsumerEvent::Taken { certain: true })
            }
            (Op::Delete, Reply::Error(ZkError::NoNode)) => self.skip(),
            // The check behind it answers (`NoNode`: our delete landed).
            (Op::CatchUp, Reply::Checked | Reply::Error(ZkError::NoNode)) => {}
            // Still there: our delete never landed. Send it again.
            (Op::Check, Reply::Exists { .. }) => self.ops.queue(Op::Delete),
            (Op::Check, Reply::Error(ZkError::NoNode)) => {
                if !self.batch.is_empty() {
                    self.batch.remove(0);
                }
                self.finish(ConsumerEvent::Taken { certain: false })
            }
            (op, Reply::Error(e)) if e.is_connection_loss() => self.lost(Some(op)),
            (op, Reply::Error(e)) if e.is_session_gone() => {
                let deleting = matches!(op, Op::Delete | Op::Check)
                    || self.ops.is_in_flight(Op::Delete)
                    || self.ops.is_pending(Op::Check);
                self.link.end(SessionEvent::Expired);
                self.ops.lose();
                if deleting {
                    // As on `Expired`: checked on the next session.
                    self.check_again();
                }
                // Otherwise, as on `Expired`, the work waits for the next
                // session.
            }
            (_, Reply::Error(e)) => self.finish(ConsumerEvent::Failed(Error::Zk(e))),
            (_, _) => self.finish(ConsumerEvent::Failed(Error::BadReply)),
        }
    }

    fn handle_watch(&mut self, _now: Instant, event: WatchEvent<'_>) {
        // A child watch also fires when the directory itself is deleted
        // (NodeDeleted); the creation watch of `AwaitDir` fires with
        // NodeCreated. Each calls for a fresh listing.
        let relevant = matches!(
            event.kind,
            WatchKind::NodeChildrenChanged | WatchKind::NodeDeleted | WatchKind::NodeCreated
        );
        if event.path != self.dir.as_str() || !relevant {
            return;
        }
        // Any cached batch may now miss a lower item.
        self.stale = true;
        if self.link.is_up() && self.mode.is_some() && !self.on_item() {
            self.next_item();
        }
    }

    fn handle_session(&mut self, _now: Instant, event: SessionEvent) {
        match event {
            SessionEvent::Connected { .. } => {
                let back = self.link.connected() != Reconnect::Same;
                if back && self.mode.is_some() && !self.ops.is_pending(Op::Check) {
                    // The watch may have fired unseen: start from a fresh
                    // listing.
                    self.stale = true;
                    self.next_item();
                }
            }
            SessionEvent::Suspended => self.lost(None),
            SessionEvent::Expired | SessionEvent::Closed => {
                // A delete on its way (or one already lost) may have
                // landed; one still queued has not.
                let deleting = self.ops.is_in_flight(Op::Delete) || self.ops.is_pending(Op::Check);
                self.link.end(event);
                self.ops.lose();
                if self.mode.is_some() {
                    if deleting && event == SessionEvent::Expired {
                        // Items outlive the session: the next one checks
                        // whether the delete landed (and deletes again if
                        // not), rather than report an item still in the
                        // queue as taken, for another consumer to take too.
                        self.check_again();
                    } else if deleting {
                        // Closed: no session follows to check on.
                        self.finish(ConsumerEvent::Taken { certain: false });
                    } else if event == SessionEvent::Closed {
                        self.finish(ConsumerEvent::Failed(Error::SessionEnded));
                    }
                    // Expired with nothing on its way: the work goes on on
                    // the next session, as work asked now would (a client
                    // that opens none says `Closed` next).
                }
            }
        }
    }

    fn handle_timeout(&mut self, now: Instant) {
        if self.mode != Some(Mode::Take) || self.deleting() {
            return;
        }
        // A listing, or the read of the batch's first item, may yet hand
        // over an item.
        let deciding = self.link.is_up()
            && [
                Op::List { watch: false },
                Op::List { watch: true },
                Op::Read,
            ]
            .into_iter()
            .any(|op| self.ops.is_pending(op));
        if self.deadline.expired(now, deciding) {
            self.ops.clear();
            self.finish(ConsumerEvent::Empty);
        }
    }

    /// The take's deadline, except while its delete is on its way or being
    /// checked: the item may be taken, so the deadline cannot end the take
    /// then, and a timer reported due would stay due (which the `Recipe`
    /// contract forbids: drivers would spin on it).
    fn poll_timeout(&self) -> Option<Instant> {
        match self.mode {
            Some(Mode::Take) if !self.deleting() => self.deadline.poll(self.link.is_up()),
            _ => None,
        }
    }

    fn poll_event(&mut self) -> Option<ConsumerEvent> {
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
        let Some(Op::List { watch }) = self.ops.op_of(id) else {
            return;
        };
        let read = match self.listing {
            Some((current, read)) if current == id => read,
            _ => {
                let read = self.reads_listing();
                if read {
                    self.begin_listing(watch);
                }
                self.listing = Some((id, read));
                read
            }
        };
        if read {
            for name in names {
                self.consider(name);
            }
        }
        if last {
            self.ops.take(id);
            self.listing = None;
            if read && self.mode.is_some() {
                self.end_listing(watch);
            }
        }
    }
}

impl<const B: usize, const D: usize, const N: usize> fmt::Debug for Consumer<B, D, N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Consumer")
            .field("dir", &self.dir.as_str())
            .field("mode", &self.mode)
            .field("batch", &self.batch.len())
            .field("stale", &self.stale)
            .field("link", &self.link)
            .finish()
    }
}
