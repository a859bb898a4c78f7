//! The observer's side of a leader election: who leads now.

use core::fmt;

use heapless::{String, Vec};

use super::{Acknowledgement, ACK_NAME, DEFAULT_DATA_CAPACITY, DEFAULT_PATH_CAPACITY};
use crate::engine::event_queue::EventQueue;
use crate::engine::link::{Link, Reconnect};
use crate::engine::pipeline::Pipeline;
use crate::path::{self, PathError};
use crate::{
    Error, Instant, Outgoing, Recipe, Reply, Request, RequestId, SessionEvent, WatchEvent, ZkError,
};

/// What an observer reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum ObserverEvent {
    /// The leader changed (or was read for the first time): read it with
    /// [`Observer::leader`]; `None` there means nobody leads (an election
    /// in progress, or no candidate).
    Changed,
    /// The connection dropped: the leader read last may be out of date
    /// until [`ObserverEvent::Changed`] or [`ObserverEvent::Current`].
    Stale,
    /// After [`ObserverEvent::Stale`], the acknowledgement was read again and
    /// had not changed.
    Current,
    /// The acknowledgement node holds something that is not an
    /// acknowledgement, or more than the buffer holds; [`Observer::leader`]
    /// is `None` until it changes.
    Unreadable {
        /// The data's length; `None` if it was over the transport's receive
        /// buffer (herdless-embassy's `ReplyTooLarge`), which only says it
        /// is longer than that.
        len: Option<usize>,
    },
    /// Reading failed for another reason.
    Failed(Error),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    /// getData with a watch on the acknowledgement.
    Read,
    /// exists with a watch, while it is missing.
    Await,
}

/// Follows who leads an election, by reading the acknowledgement node the
/// leader writes: one watch, one notification per change of leader, however
/// many candidates there are.
///
/// `N` is the capacity of the acknowledgement's path, `D` of its data.
///
/// ```
/// use herdless_core::election::{Observer, ObserverEvent};
/// use herdless_core::{Recipe, Reply, Stat};
/// let now = herdless_core::Instant::ZERO; // the driver's clock
///
/// let mut observer: Observer = Observer::new("/election/gateway").unwrap();
/// observer.watch();
/// let read = observer.poll_request().unwrap().id;
/// observer.handle_reply(now, read, Reply::Data { data: b"x-n_0000000003\nedge-2", stat: Stat::default() });
/// assert_eq!(observer.poll_event(), Some(ObserverEvent::Changed));
/// assert_eq!(observer.leader().unwrap().data, b"edge-2");
/// ```
pub struct Observer<const N: usize = DEFAULT_PATH_CAPACITY, const D: usize = DEFAULT_DATA_CAPACITY>
{
    ack_path: String<N>,
    ops: Pipeline<Op, 4, 4>,
    watching: bool,
    /// The acknowledgement's raw data, if it exists and fits.
    current: Option<Vec<u8, D>>,
    unreadable: bool,
    known: bool,
    stale: bool,
    read_lost: bool,
    link: Link,
    // One input reports one change at most; the newest describe the state.
    events: EventQueue<ObserverEvent, 4>,
}

impl<const N: usize, const D: usize> Observer<N, D> {
    /// An observer of the election in `dir`.
    ///
    /// ```
    /// # use herdless_core::election::Observer;
    /// let observer: Observer = Observer::new("/election/gateway").unwrap();
    /// assert_eq!(observer.ack_path(), "/election/gateway/leader");
    /// ```
    pub fn new(dir: &str) -> Result<Self, PathError> {
        path::validate(dir)?;
        Ok(Observer {
            ack_path: path::join(dir, ACK_NAME)?,
            ops: Pipeline::new(),
            watching: false,
            current: None,
            unreadable: false,
            known: false,
            stale: false,
            read_lost: false,
            link: Link::Up,
            events: EventQueue::new(),
        })
    }

    /// The acknowledgement node's path.
    ///
    /// ```
    /// # use herdless_core::election::Observer;
    /// let observer: Observer = Observer::new("/e").unwrap();
    /// assert_eq!(observer.ack_path(), "/e/leader");
    /// ```
    pub fn ack_path(&self) -> &str {
        &self.ack_path
    }

    /// Starts watching; [`ObserverEvent::Changed`] follows with the first
    /// read.
    ///
    /// ```
    /// # use herdless_core::election::Observer;
    /// # use herdless_core::Recipe;
    /// let mut observer: Observer = Observer::new("/e").unwrap();
    /// observer.watch();
    /// assert_eq!(observer.poll_request().unwrap().request.path(), "/e/leader");
    /// ```
    pub fn watch(&mut self) {
        if !self.watching {
            self.watching = true;
            self.ops.queue(Op::Read);
        }
    }

    /// The leader as last read: `None` if nobody leads (or the
    /// acknowledgement is unreadable, or nothing was read yet).
    ///
    /// ```
    /// # use herdless_core::election::Observer;
    /// let observer: Observer = Observer::new("/e").unwrap();
    /// assert!(observer.leader().is_none());
    /// ```
    pub fn leader(&self) -> Option<Acknowledgement<'_>> {
        self.current
            .as_ref()
            .and_then(|raw| Acknowledgement::parse(raw))
    }

    /// Whether the acknowledgement was read at least once.
    ///
    /// ```
    /// # use herdless_core::election::Observer;
    /// let observer: Observer = Observer::new("/e").unwrap();
    /// assert!(!observer.is_known());
    /// ```
    pub fn is_known(&self) -> bool {
        self.known
    }

    /// Whether the connection dropped since the last read.
    ///
    /// ```
    /// # use herdless_core::election::Observer;
    /// let observer: Observer = Observer::new("/e").unwrap();
    /// assert!(!observer.is_stale());
    /// ```
    pub fn is_stale(&self) -> bool {
        self.stale
    }

    /// Takes in a read of the acknowledgement (`None`: it does not exist;
    /// `Some(Err(()))`: its data was over the receive buffer).
    fn update(&mut self, raw: Option<Result<&[u8], ()>>) {
        let first = !self.known;
        self.known = true;
        let was_stale = self.stale;
        self.stale = false;
        let same = match (raw, &self.current) {
            (None, None) => !self.unreadable,
            (Some(Ok(new)), Some(old)) => new == old.as_slice(),
            _ => false,
        };
        if same && !first {
            if was_stale {
                self.events.emit(ObserverEvent::Current);
            }
            return;
        }
        match raw {
            None => {
                self.current = None;
                self.unreadable = false;
                self.events.emit(ObserverEvent::Changed);
            }
            Some(read) => {
                let ack = read
                    .ok()
                    .filter(|new| Acknowledgement::parse(new).is_some())
                    .and_then(|new| Vec::from_slice(new).ok());
                if let Some(stored) = ack {
                    self.current = Some(stored);
                    self.unreadable = false;
                    self.events.emit(ObserverEvent::Changed);
                } else {
                    if !self.unreadable || self.current.is_some() {
                        let len = read.ok().map(<[u8]>::len);
                        self.events.emit(ObserverEvent::Unreadable { len });
                    }
                    self.current = None;
                    self.unreadable = true;
                }
            }
        }
    }

    fn connection_lost(&mut self, also: Option<Op>) {
        if !self.link.lose() {
            return;
        }
        if !self.ops.lose().is_empty() || also.is_some() {
            self.read_lost = true;
        }
        if self.watching && !self.stale {
            self.stale = true;
            self.events.emit(ObserverEvent::Stale);
        }
    }
}

impl<const N: usize, const D: usize> Recipe for Observer<N, D> {
    type Event = ObserverEvent;

    fn poll_request(&mut self) -> Option<Outgoing<'_>> {
        if !self.link.is_up() {
            return None;
        }
        let (id, op) = self.ops.next()?;
        let path = self.ack_path.as_str();
        let request = match op {
            Op::Read => Request::GetData { path, watch: true },
            // The creation watch is wanted here: it is how the observer
            // hears of the next leader, and that creation spends it.
            Op::Await => Request::Exists { path, watch: true },
        };
        Some(Outgoing { id, request })
    }

    fn handle_reply(&mut self, _now: Instant, id: RequestId, reply: Reply<'_>) {
        let Some(op) = self.ops.take(id) else {
            return;
        };
        match (op, reply) {
            (Op::Read, Reply::Data { data, .. }) => self.update(Some(Ok(data))),
            // Over an embedded driver's receive buffer: no acknowledgement
            // a candidate writes is, and the watch is set.
            (Op::Read, Reply::Error(ZkError::ReplyTooLarge)) => self.update(Some(Err(()))),
            // getData on a missing node leaves no watch: wait for it.
            (Op::Read, Reply::Error(ZkError::NoNode)) => {
                self.update(None);
                self.ops.queue(Op::Await);
            }
            (Op::Await, Reply::Exists { .. }) => self.ops.queue(Op::Read),
            (Op::Await, Reply::Error(ZkError::NoNode)) => {}
            (op, Reply::Error(e)) if e.is_connection_loss() => self.connection_lost(Some(op)),
            (_, Reply::Error(e)) if e.is_session_gone() => {
                self.connection_lost(None);
                self.link.end(SessionEvent::Expired);
            }
            (_, Reply::Error(e)) => self.events.emit(ObserverEvent::Failed(Error::Zk(e))),
            (_, _) => self.events.emit(ObserverEvent::Failed(Error::BadReply)),
        }
    }

    fn handle_watch(&mut self, _now: Instant, event: WatchEvent<'_>) {
        if !self.watching || event.path != self.ack_path.as_str() {
            return;
        }
        if self.link.is_up() {
            self.ops.queue(Op::Read);
        } else {
            self.read_lost = true;
        }
    }

    fn handle_session(&mut self, _now: Instant, event: SessionEvent) {
        match event {
            SessionEvent::Connected { .. } => {
                let reconnect = self.link.connected();
                let new_session = reconnect == Reconnect::New;
                if reconnect != Reconnect::Same {
                    self.ops.unqueue(|op| op != Op::Read); // watch() asked for it while down
                    if self.watching && (new_session || self.read_lost || self.stale) {
                        self.ops.queue(Op::Read);
                    }
                    self.read_lost = false;
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
}

impl<const N: usize, const D: usize> fmt::Debug for Observer<N, D> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Observer")
            .field("ack_path", &self.ack_path.as_str())
            .field("leader", &self.leader())
            .field("stale", &self.stale)
            .field("link", &self.link)
            .finish()
    }
}
