//! Group membership, the observer's side: who is in the group now.
//!
//! The observer lists the group directory with a child watch and lists it
//! again on every notification, so it always ends up with the current
//! members: a change made between a notification and the new listing is in
//! that listing, and any later one fires the new watch. The member names are
//! kept sorted in a caller-sized buffer (`M` names of at most `K` bytes);
//! a group larger than that is reported, never silently cut.
//!
//! A listing larger than herdless-embassy's receive buffer reaches the
//! observer name by name, in parts (see the roster's pass), so the buffer
//! bounds the length of a name, not the size of the group. When members
//! that left held room in a full buffer that members still in needed, only
//! the last part shows it: the group is then listed once more, and the
//! change reported after that listing.

use core::fmt;

use heapless::String;

use super::roster::{self, Roster};
use crate::engine::event_queue::EventQueue;
use crate::engine::link::{Link, Reconnect};
use crate::engine::pipeline::Pipeline;
use crate::path::{self, PathError};
use crate::{
    Children, Error, Instant, Outgoing, Recipe, Reply, Request, RequestId, SessionEvent,
    WatchEvent, WatchKind, ZkError,
};

/// Default number of member names an observer keeps.
pub const DEFAULT_MAX_MEMBERS: usize = 32;

/// Default capacity, in bytes, of one member name.
pub const DEFAULT_NAME_CAPACITY: usize = 64;

/// Default capacity, in bytes, of the group directory's path.
pub const DEFAULT_PATH_CAPACITY: usize = 128;

/// What the observer reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum ObserverEvent {
    /// The member list changed (or was read for the first time): read it
    /// with [`Observer::members`]. While the group has more members than
    /// the buffer holds, the counts are of names that came into and went
    /// out of the held list (a name pushed out by a smaller one has left
    /// it); `joined - left` is always the change in
    /// [`Observer::len`].
    Changed {
        /// Members that joined since the last report.
        joined: u32,
        /// Members that left since the last report.
        left: u32,
    },
    /// The group has more members, or longer names, than the buffer holds:
    /// [`Observer::members`] holds the first that fit, in name order.
    Overflow {
        /// Members in the group.
        count: u32,
    },
    /// The group directory does not exist (yet); the observer waits for it.
    NoGroup,
    /// The connection dropped: the list may be out of date until
    /// [`ObserverEvent::Changed`] or [`ObserverEvent::Current`].
    Stale,
    /// After [`ObserverEvent::Stale`], the list was read again and did not
    /// change.
    Current,
    /// Listing failed for another reason.
    Failed(Error),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    /// getChildren with a watch.
    List,
    /// exists with a watch, while the group directory is missing.
    AwaitGroup,
}

/// Watches a group directory's members.
///
/// ```
/// use herdless_core::members::{Observer, ObserverEvent};
/// use herdless_core::{Children, Recipe, Reply};
/// let now = herdless_core::Instant::ZERO; // the driver's clock
///
/// let mut group: Observer = Observer::new("/fleet/gateways").unwrap();
/// group.watch();
/// let list = group.poll_request().unwrap().id;
/// let names = ["edge-2", "edge-1"];
/// group.handle_reply(now, list, Reply::Children(Children::new(&&names[..])));
/// assert_eq!(group.poll_event(), Some(ObserverEvent::Changed { joined: 2, left: 0 }));
/// assert_eq!(group.members().collect::<Vec<_>>(), ["edge-1", "edge-2"]);
/// ```
pub struct Observer<
    const M: usize = DEFAULT_MAX_MEMBERS,
    const K: usize = DEFAULT_NAME_CAPACITY,
    const N: usize = DEFAULT_PATH_CAPACITY,
> {
    dir: String<N>,
    ops: Pipeline<Op, 2, 2>,
    watching: bool,
    roster: Roster<M, K>,
    /// Whether the current list is complete.
    complete: bool,
    /// Whether anything was ever read.
    known: bool,
    stale: bool,
    list_lost: bool,
    link: Link,
    events: EventQueue<ObserverEvent, 8>,
}

/// The observer's name before the observer roles were named alike.
#[deprecated(note = "renamed `members::Observer`")]
pub type Members<
    const M: usize = DEFAULT_MAX_MEMBERS,
    const K: usize = DEFAULT_NAME_CAPACITY,
    const N: usize = DEFAULT_PATH_CAPACITY,
> = Observer<M, K, N>;

/// The observer's events' name before the observer roles were named alike.
#[deprecated(note = "renamed `members::ObserverEvent`")]
pub type MembersEvent = ObserverEvent;

impl<const M: usize, const K: usize, const N: usize> Observer<M, K, N> {
    /// An observer of the group directory `group`.
    pub fn new(group: &str) -> Result<Self, PathError> {
        path::validate(group)?;
        let mut dir = String::new();
        path::concat_into(&mut dir, &[group])?;
        Ok(Observer {
            dir,
            ops: Pipeline::new(),
            watching: false,
            roster: Roster::default(),
            complete: true,
            known: false,
            stale: false,
            list_lost: false,
            link: Link::Up,
            events: EventQueue::new(),
        })
    }

    /// The group directory.
    pub fn group(&self) -> &str {
        &self.dir
    }

    /// Starts watching; [`ObserverEvent::Changed`] (or
    /// [`ObserverEvent::NoGroup`]) follows with the first list.
    pub fn watch(&mut self) {
        if !self.watching {
            self.watching = true;
            self.ops.queue(Op::List);
        }
    }

    /// The members, in name order.
    pub fn members(&self) -> impl Iterator<Item = &str> + '_ {
        self.roster.names()
    }

    /// Number of members held (all of them unless [`Observer::is_complete`]
    /// is false).
    pub fn len(&self) -> usize {
        self.roster.len()
    }

    /// Whether no member is held.
    pub fn is_empty(&self) -> bool {
        self.roster.len() == 0
    }

    /// Whether `name` is a member.
    pub fn contains(&self, name: &str) -> bool {
        self.roster.contains(name)
    }

    /// Whether the held list has every member: it did not overflow, and
    /// the last listing was read to its end (one refused after some of its
    /// parts may have left members out).
    pub fn is_complete(&self) -> bool {
        self.complete
    }

    /// A part of a listing, or all of it (`last`): the roster takes its
    /// names, and the last part reports.
    fn on_listing(&mut self, id: RequestId, names: Children<'_>, last: bool) {
        self.roster.reading(id);
        self.roster.take(names);
        if !last {
            return;
        }
        let (count, complete) = match self.roster.conclude() {
            roster::Outcome::Exact { count, complete } => (count, complete),
            roster::Outcome::ReadAgain => {
                // Reported once the listing read again shows which.
                self.complete = false;
                return self.ops.queue(Op::List);
            }
        };
        self.complete = complete;
        let first = !self.known;
        self.known = true;
        let was_stale = self.stale;
        self.stale = false;
        if !complete {
            self.events.emit(ObserverEvent::Overflow { count });
        }
        let (joined, left) = self.roster.take_counts();
        if joined > 0 || left > 0 || first {
            self.events.emit(ObserverEvent::Changed { joined, left });
        } else if was_stale {
            self.events.emit(ObserverEvent::Current);
        }
    }

    fn on_no_group(&mut self) {
        self.roster.clear();
        let (joined, left) = self.roster.take_counts();
        self.complete = true;
        self.known = true;
        self.stale = false;
        // Names that came in were cleared too: `left` counts them.
        if left > 0 {
            self.events.emit(ObserverEvent::Changed { joined, left });
        }
        self.events.emit(ObserverEvent::NoGroup);
        self.ops.queue(Op::AwaitGroup);
    }

    fn connection_lost(&mut self, also: Option<Op>) {
        if !self.link.lose() {
            return;
        }
        if !self.ops.lose().is_empty() || also.is_some() {
            self.list_lost = true;
        }
        if self.watching && !self.stale {
            self.stale = true;
            self.events.emit(ObserverEvent::Stale);
        }
    }
}

impl<const M: usize, const K: usize, const N: usize> Recipe for Observer<M, K, N> {
    type Event = ObserverEvent;

    fn poll_request(&mut self) -> Option<Outgoing<'_>> {
        if !self.link.is_up() {
            return None;
        }
        let (id, op) = self.ops.next()?;
        let path = self.dir.as_str();
        let request = match op {
            Op::List => Request::GetChildren { path, watch: true },
            // The creation watch is wanted here: it is how the observer
            // hears of the group's creation, and that creation spends it.
            Op::AwaitGroup => Request::Exists { path, watch: true },
        };
        Some(Outgoing { id, request })
    }

    fn handle_reply(&mut self, _now: Instant, id: RequestId, reply: Reply<'_>) {
        let Some(op) = self.ops.take(id) else {
            return;
        };
        match (op, reply) {
            (Op::List, Reply::Children(names)) => self.on_listing(id, names, true),
            // getChildren on a missing node leaves no watch.
            (Op::List, Reply::Error(ZkError::NoNode)) => self.on_no_group(),
            (Op::AwaitGroup, Reply::Exists { .. }) => self.ops.queue(Op::List),
            (Op::AwaitGroup, Reply::Error(ZkError::NoNode)) => {}
            (op, Reply::Error(e)) if e.is_connection_loss() => self.connection_lost(Some(op)),
            (_, Reply::Error(e)) if e.is_session_gone() => {
                self.link.end(SessionEvent::Expired);
                self.ops.lose();
            }
            (_, Reply::Error(e)) => {
                // A listing refused after some of its parts (a name over
                // herdless-embassy's receive buffer): the names they put
                // in are members, but room they took from others, and the
                // members that left, only the last part would have shown.
                if self.roster.is_reading() {
                    self.complete = false;
                }
                self.events.emit(ObserverEvent::Failed(Error::Zk(e)));
            }
            (_, _) => self.events.emit(ObserverEvent::Failed(Error::BadReply)),
        }
    }

    fn handle_watch(&mut self, _now: Instant, event: WatchEvent<'_>) {
        if !self.watching || event.path != self.dir.as_str() {
            return;
        }
        match event.kind {
            WatchKind::NodeChildrenChanged | WatchKind::NodeCreated | WatchKind::NodeDeleted => {
                if self.link.is_up() {
                    self.ops.queue(Op::List);
                } else {
                    self.list_lost = true;
                }
            }
            WatchKind::NodeDataChanged => {}
        }
    }

    fn handle_session(&mut self, _now: Instant, event: SessionEvent) {
        match event {
            SessionEvent::Connected { .. } => {
                let reconnect = self.link.connected();
                let new_session = reconnect == Reconnect::New;
                if reconnect != Reconnect::Same {
                    self.ops.clear_queued();
                    if self.watching && (new_session || self.list_lost || self.stale) {
                        self.ops.queue(Op::List);
                    }
                    self.list_lost = false;
                }
            }
            SessionEvent::Suspended => self.connection_lost(None),
            SessionEvent::Expired | SessionEvent::Closed => {
                self.connection_lost(None);
                self.link.end(event);
            }
        }
    }

    fn poll_event(&mut self) -> Option<ObserverEvent> {
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
        if self.ops.listing_part_of(id, Op::List, last) {
            self.on_listing(id, names, last);
        }
    }
}

impl<const M: usize, const K: usize, const N: usize> fmt::Debug for Observer<M, K, N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("members::Observer")
            .field("group", &self.dir.as_str())
            .field("members", &self.roster)
            .field("complete", &self.complete)
            .field("link", &self.link)
            .finish()
    }
}
