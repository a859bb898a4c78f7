//! The locks of the ZooKeeper recipes page as one state machine: the
//! exclusive lock, the shared (read/write) lock, and their revocable form.
//!
//! Protocol (the recipes page's "Locks", with its GUID rule):
//!
//! 1. create `<dir>/<guid>-lock-` ephemeral and sequential, and, in the same
//!    flight, list `<dir>` without a watch (ZooKeeper answers in order, so
//!    the listing already contains the new node: one round trip when
//!    uncontended);
//! 2. if the own node has the lowest sequence number among the contenders,
//!    the lock is held;
//! 3. otherwise watch only the next-lower contender (no herd) and, when it
//!    goes, list again; except that a waiter whose predecessor was the
//!    lowest contender takes the lock on the deletion notification directly,
//!    since sequence numbers only grow and no lower node can have appeared.
//!
//! From the create's answer on, the own node is read with a watch, in the
//! same flight as the listing and before the predecessor watch is set. A
//! holder whose node is deleted by anyone (an operator breaking the lock)
//! therefore hears [`LockEvent::Lost`], and a waiter whose node is deleted
//! learns it before it can act on its predecessor's deletion: ZooKeeper
//! delivers one session's notifications in the order the changes happened.
//! A waiter whose node is deleted queues again with a new node. This costs
//! one request per acquisition (four per uncontended acquire and release:
//! create, list, read own node, delete) and no round trip. A lock that may
//! not read its own node (an ACL without read for its client) gives up as
//! soon as that read is refused: ZooKeeper tells a change of a node only
//! to sessions that may read it (CVE-2024-23944), so no watch could tell
//! it of its node's deletion.
//!
//! The own node only counts while its `ephemeralOwner` is the current
//! session. A `Connected` naming another session than the one before, with
//! no expiry heard, is taken as the old session's connection lost
//! (`Suspended` for a holder); the own node is then read again, and a node
//! of the old session, which may outlive the reconnect until the server
//! expires it, is deleted and never taken for the lock (CURATOR-696): a
//! holder hears [`LockEvent::Lost`], an attempt fails with
//! [`Error::SessionEnded`], as after an expiry.
//!
//! After a connection loss while creating, the listing is searched for the
//! node carrying the GUID before anything is created again, so a create
//! whose reply was lost never leaves an orphan. The listing goes behind a
//! no-op write on the directory (a `check`, answered `Reply::Checked`) in
//! the same flight: the server reconnected to may not have applied the
//! create yet, and a listing without it would have the lock create again. Giving up (cancel, deadline,
//! try-acquire that found the lock held) and releasing delete the own node
//! and are only reported once the delete is confirmed or the session is
//! gone (CURATOR-79, CURATOR-678, kazoo#732).
//!
//! # Shared locks
//!
//! The recipes page's "Shared Locks" change only two things, and the
//! [`Contender`] a lock is made with selects them: the node's name
//! (`<guid>-read-` or `<guid>-write-`), and which lower node it waits for.
//!
//! * A **reader** ([`Lock::reader`]) holds once no *writer* has a lower
//!   sequence number; otherwise it watches only the next-lower writer. All
//!   readers queued behind one writer watch that writer, so its release
//!   wakes them all at once: the one herd the recipe allows, and exactly the
//!   readers that may now go in.
//! * A **writer** ([`Lock::writer`]) holds once no node of either kind has a
//!   lower sequence number; otherwise it watches the next-lower node,
//!   whichever kind it is.
//!
//! Readers and writers of every flavour (Curator's `__READ__`/`__WRIT__`,
//! Kazoo's `__rlock__`/`__lock__`) are recognised, and exclusive-lock nodes
//! in the directory count as writers.
//!
//! ```
//! use herdless_core::lock::{Lock, LockEvent};
//! use herdless_core::naming::Guid;
//! use herdless_core::sim::World;
//!
//! let mut world: World<Lock> = World::new(1);
//! let writer = world.add_peer(Lock::writer("/rw").unwrap());
//! let r1 = world.add_peer(Lock::reader("/rw").unwrap());
//! let r2 = world.add_peer(Lock::reader("/rw").unwrap());
//! world.act(writer, |l| l.acquire(Guid::from_random_bytes([1; 16]))).unwrap();
//! world.run_until_quiet(1_000);
//! for (i, r) in [r1, r2].into_iter().enumerate() {
//!     world.act(r, |l| l.acquire(Guid::from_random_bytes([2 + i as u8; 16]))).unwrap();
//! }
//! world.run_until_quiet(1_000);
//! assert!(!world.peers[r1].recipe.is_held() && !world.peers[r2].recipe.is_held());
//!
//! world.act(writer, |l| l.release()).unwrap();
//! world.run_until_quiet(1_000);
//! // Both readers hold at once, each woken by the writer's deletion.
//! assert!(world.peers[r1].recipe.is_held() && world.peers[r2].recipe.is_held());
//! ```
//!
//! # Revocation
//!
//! A lock made [`revocable`](Lock::revocable) reads its own node with a
//! watch right after creating it (the recipes page's "Revocable Shared
//! Locks"). Anyone may then ask the holder to give the lock up by writing
//! `unlock` to that node (see [`revoke`](crate::revoke)); the lock reports
//! [`LockEvent::RevocationRequested`] once, and the application releases
//! when its work allows (consent). If the requester loses patience and
//! deletes the node, the holder hears [`LockEvent::Lost`] (a waiter:
//! [`GiveUp::Revoked`]) as soon as the watch fires. Curator's message,
//! `__REVOKE__`, is honoured too.

use core::fmt;

use heapless::String;

use crate::engine::ancestors;
use crate::engine::contender_op::Op;
use crate::engine::contention::{Contention, Own, Standing};
use crate::engine::contention_flow::{AsFlow, ContentionFlow, MAX_IN_FLIGHT, QUEUED};
use crate::engine::deadline::Deadline;
use crate::engine::event_queue::EventQueue;
use crate::engine::link::{Link, Reconnect};
use crate::engine::pipeline::Pipeline;
use crate::engine::sessions::Current;
use crate::naming::{contender_sequence, shared_contender, Flavour, Guid, NodeKind};
use crate::path::{self, PathError};
use crate::{
    Acl, Children, Instant, Outgoing, Recipe, Reply, Request, RequestId, Sequence, SessionEvent,
    WatchEvent, WatchKind, ZkError,
};

/// Default capacity, in bytes, of the paths a [`Lock`] stores.
pub const DEFAULT_PATH_CAPACITY: usize = 128;

/// What the lock tells the application.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum LockEvent {
    /// The lock is held.
    Acquired,
    /// The acquisition ended without the lock, and the own node is gone.
    NotAcquired(GiveUp),
    /// The acquisition failed; the own node is gone (deleted, or it died
    /// with the session). [`Error::SessionEnded`] when the session ended
    /// while the attempt waited: after an expiry the transport opens the
    /// next session by itself, so start again there, with a fresh GUID.
    Failed(Error),
    /// The lock was held and the connection was lost: it may have been lost.
    /// Stop work that needs exclusivity until [`LockEvent::Resumed`].
    Suspended,
    /// After [`LockEvent::Suspended`], the same session came back and the own
    /// node is confirmed to still exist: the lock is held.
    Resumed,
    /// The lock was held and is lost (the session ended or the node was
    /// deleted).
    Lost,
    /// A release completed: the own node is confirmed deleted.
    Released,
    /// Someone wrote a revocation request (`unlock`) to the own node of a
    /// [`revocable`](Lock::revocable) lock: release when the work allows.
    /// Reported once per acquisition, whether it comes while waiting or
    /// while holding.
    RevocationRequested,
}

/// Why an acquisition was given up.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum GiveUp {
    /// A try-acquire found another holder.
    Busy,
    /// The deadline passed.
    TimedOut,
    /// The application cancelled.
    Cancelled,
    /// The own node of a [`revocable`](Lock::revocable) lock was deleted by
    /// someone else while it was waiting (a forced revocation).
    Revoked,
}

/// Which kind of contender a [`Lock`] is: what its node is called and which
/// lower node it waits for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Contender {
    /// The exclusive lock: `<guid>-lock-`; waits for the next-lower
    /// contender of any kind (lock, reader or writer, in every flavour).
    #[default]
    Exclusive,
    /// A reader of a shared lock: `<guid>-read-`; waits only for the
    /// next-lower writer, and holds together with other readers.
    Reader,
    /// A writer of a shared lock: `<guid>-write-`; waits for the next-lower
    /// node of either kind, and holds alone.
    Writer,
}

impl Contender {
    /// The kind of node this contender creates.
    ///
    /// ```
    /// use herdless_core::lock::Contender;
    /// use herdless_core::naming::NodeKind;
    ///
    /// assert_eq!(Contender::Reader.node_kind(), NodeKind::Read);
    /// ```
    pub const fn node_kind(self) -> NodeKind {
        match self {
            Contender::Exclusive => NodeKind::Lock,
            Contender::Reader => NodeKind::Read,
            Contender::Writer => NodeKind::Write,
        }
    }

    /// The sequence number of `name` if a node of that name, when lower than
    /// the own one, keeps this contender waiting.
    ///
    /// ```
    /// use herdless_core::lock::Contender;
    ///
    /// let reader = "0c1d-read-0000000001";
    /// assert!(Contender::Reader.waits_for(reader).is_none());
    /// assert!(Contender::Writer.waits_for(reader).is_some());
    /// ```
    pub fn waits_for(self, name: &str) -> Option<Sequence> {
        match self {
            Contender::Reader => contender_sequence(NodeKind::Write, name),
            // An exclusive contender excludes like a writer: it waits for
            // every lower node of a lock or of a shared lock, whoever wrote it.
            Contender::Exclusive | Contender::Writer => shared_contender(name).map(|(_, seq)| seq),
        }
    }
}

/// Errors of this recipe: the one error type of every recipe.
pub use crate::Error;

/// Where the lock is, as the application sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum LockState {
    /// Neither held nor wanted.
    Idle,
    /// Acquisition in progress (waiting for a predecessor, or recovering).
    Acquiring,
    /// Held (possibly suspended: see [`Lock::is_suspended`]).
    Held,
    /// Releasing or giving up: the own node is being deleted.
    Releasing,
}

/// The internal protocol step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    Idle,
    /// Create (and the pipelined listing) in flight.
    Creating,
    /// The outcome of a create is unknown: list and look for the GUID.
    Finding,
    /// Listing to find the predecessor.
    Listing,
    /// Watching the predecessor.
    Watching,
    /// First in line, but a read of the own node is on its way: its watch
    /// was spent (its data was written) and is being set again, or its
    /// owner is still to be told (its data could not be read).
    /// `Acquired` waits for that read to show the node still exists, as
    /// the predecessor's deletion proves nothing about it, and is the
    /// current session's.
    Confirming,
    Held,
    /// Held when the connection was lost: waiting for `Connected`, then
    /// `Resumed` or `Lost`.
    Suspended,
    /// Held (still suspended), after a reconnect: confirming the own node
    /// still exists.
    Verifying,
    /// Deleting the own node (release or give-up).
    Deleting,
}

/// The reads of an acquisition or a holding: nothing to act on once the
/// own node is being deleted or replaced.
const ACQUISITION_READS: [Op; 4] = [Op::List, Op::WatchPredecessor, Op::CheckOwn, Op::WatchOwn];

/// A lock on one directory: exclusive, or one side of a shared lock (see
/// [`Contender`]), optionally [`revocable`](Lock::revocable).
///
/// `N` is the capacity in bytes of each stored path (directory, own node,
/// predecessor); longer paths are refused with [`PathError::TooLong`].
/// See the [module docs](self) for the protocol.
///
/// ```
/// use herdless_core::lock::{Lock, LockEvent};
/// use herdless_core::{naming::Guid, Recipe};
///
/// let mut lock: Lock = Lock::new("/locks/printer").unwrap();
/// lock.acquire(Guid::from_random_bytes([7; 16])).unwrap();
/// // The create and the listing leave together:
/// let first = lock.poll_request().unwrap();
/// assert!(first.request.path().starts_with("/locks/printer/"));
/// let second = lock.poll_request().unwrap();
/// assert_eq!(second.request.path(), "/locks/printer");
/// assert!(lock.poll_request().is_none());
/// assert_eq!(lock.poll_event(), None::<LockEvent>);
/// ```
pub struct Lock<const N: usize = DEFAULT_PATH_CAPACITY> {
    /// The own node and the node it waits for.
    line: Contention<N>,
    contender: Contender,
    revocation: Revocation,
    step: Step,
    give_up: Option<Outcome>,
    /// Anyone ahead means giving up (`try_acquire`).
    try_only: bool,
    deadline: Deadline,
    link: Link,
    /// The session the own node must belong to.
    session: Current,
    ops: Pipeline<Op, QUEUED, MAX_IN_FLIGHT>,
    events: EventQueue<LockEvent, 4>,
    scratch: String<N>,
    /// The ACL of every node it creates.
    pub(crate) acl: Acl<'static>,
    /// The lowest sequence among the contenders the last listing showed
    /// ahead: who leads, for an election's candidate built on this lock.
    lowest: Option<Sequence>,
}

/// Whether the lock watches its own node's data for revocation requests.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Revocation {
    /// Not revocable.
    Off,
    /// Revocable; no request reported in this acquisition.
    Watching,
    /// Revocable, and a request was reported in this acquisition.
    Requested,
}

/// How an acquisition that is being abandoned will be reported.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Outcome {
    GiveUp(GiveUp),
    Failed(Error),
    Release,
    /// The held node vanished or could not be confirmed.
    Lost,
    /// Already reported (`Lost`, before the node's delete): nothing more
    /// to say.
    Quiet,
}

impl Outcome {
    /// How the application hears of it, if at all.
    fn event(self) -> Option<LockEvent> {
        match self {
            Outcome::GiveUp(reason) => Some(LockEvent::NotAcquired(reason)),
            Outcome::Failed(e) => Some(LockEvent::Failed(e)),
            Outcome::Release => Some(LockEvent::Released),
            Outcome::Lost => Some(LockEvent::Lost),
            Outcome::Quiet => None,
        }
    }
}

impl<const N: usize> Lock<N> {
    /// A lock on `dir` (which is created, with its ancestors, if missing),
    /// naming its nodes as the recipes page does.
    pub fn new(dir: &str) -> Result<Self, Error> {
        Self::with_flavour(dir, Flavour::Recipes)
    }

    /// A lock on `dir` whose nodes are named in `flavour`. Contenders of
    /// every flavour are recognised whatever this one is.
    pub fn with_flavour(dir: &str, flavour: Flavour) -> Result<Self, Error> {
        Self::with_contender(dir, Contender::Exclusive, flavour)
    }

    /// The read side of the shared lock on `dir`: holds together with other
    /// readers, never with a writer. Nodes are named as the recipes page
    /// does (`<guid>-read-`).
    ///
    /// ```
    /// use herdless_core::lock::{Contender, Lock};
    ///
    /// let reader: Lock = Lock::reader("/locks/catalog").unwrap();
    /// assert_eq!(reader.contender(), Contender::Reader);
    /// ```
    pub fn reader(dir: &str) -> Result<Self, Error> {
        Self::with_contender(dir, Contender::Reader, Flavour::Recipes)
    }

    /// The write side of the shared lock on `dir`: holds alone. Nodes are
    /// named as the recipes page does (`<guid>-write-`).
    ///
    /// ```
    /// use herdless_core::lock::{Contender, Lock};
    ///
    /// let writer: Lock = Lock::writer("/locks/catalog").unwrap();
    /// assert_eq!(writer.contender(), Contender::Writer);
    /// ```
    pub fn writer(dir: &str) -> Result<Self, Error> {
        Self::with_contender(dir, Contender::Writer, Flavour::Recipes)
    }

    /// A lock on `dir` of any [`Contender`] kind, its nodes named in
    /// `flavour`.
    ///
    /// ```
    /// use herdless_core::lock::{Contender, Lock};
    /// use herdless_core::naming::Flavour;
    ///
    /// // Names a Curator InterProcessReadWriteLock's readers would recognise.
    /// let reader: Lock = Lock::with_contender("/rw", Contender::Reader, Flavour::Curator).unwrap();
    /// assert_eq!(reader.flavour(), Flavour::Curator);
    /// ```
    pub fn with_contender(
        dir: &str,
        contender: Contender,
        flavour: Flavour,
    ) -> Result<Self, Error> {
        Ok(Self::on_line(
            Contention::new(dir, flavour, contender.node_kind())?,
            contender,
        ))
    }

    fn on_line(line: Contention<N>, contender: Contender) -> Self {
        Lock {
            acl: Acl::OPEN,
            line,
            contender,
            revocation: Revocation::Off,
            step: Step::Idle,
            give_up: None,
            try_only: false,
            deadline: Deadline::None,
            link: Link::Up,
            session: Current::default(),
            ops: Pipeline::new(),
            events: EventQueue::new(),
            scratch: String::new(),
            lowest: None,
        }
    }

    /// The contender of a leader election in `dir` (see
    /// [`Election`](crate::election::Election)): a `-n_` node, waiting for
    /// the next-lower candidate; held means leading.
    pub(crate) fn candidate(dir: &str, flavour: Flavour) -> Result<Self, Error> {
        let line = Contention::new(dir, flavour, NodeKind::Candidate)?;
        Ok(Self::on_line(line, Contender::Exclusive))
    }

    /// Starts an attempt with `deadline` (an election's campaign).
    pub(crate) fn acquire_by(&mut self, guid: Guid, deadline: Deadline) -> Result<(), Error> {
        self.start(guid, false, deadline)
    }

    /// Starts a new attempt under the next GUID of the last one (an
    /// election's candidate volunteering again on a new session), so that
    /// the last attempt's node is never taken for the new one's
    /// (CURATOR-498).
    pub(crate) fn acquire_again(&mut self, deadline: Deadline) -> Result<(), Error> {
        self.line.next_guid();
        self.start(self.line.guid(), false, deadline)
    }

    /// The longest name the own node can get.
    pub(crate) fn name_len(&self) -> usize {
        self.line.name_len()
    }

    /// The lowest sequence ahead, while waiting behind a predecessor.
    pub(crate) fn lowest_ahead(&self) -> Option<Sequence> {
        self.lowest.filter(|_| self.step == Step::Watching)
    }

    /// Whether requests may be sent.
    pub(crate) fn is_up(&self) -> bool {
        self.link.is_up()
    }

    /// The next request to send, if any may go.
    pub(crate) fn next_op(&mut self) -> Option<(RequestId, Op)> {
        if !self.link.is_up() {
            return None;
        }
        self.ops
            .next_creating_ancestors(ancestors::depth(self.line.dir()))
    }

    /// The request for `op`, a create of the own node holding `data`.
    pub(crate) fn request<'a>(&'a mut self, op: Op, data: &'a [u8]) -> Request<'a> {
        self.line.request(op, &mut self.scratch, data, self.acl)
    }

    /// A request of a recipe built on this lock was answered `e`, which
    /// says the connection or the session is gone.
    pub(crate) fn lose_with(&mut self, e: ZkError) {
        self.flow().connection_or_session_lost(e);
    }

    /// Whether the session is over (expired or closed).
    pub(crate) fn is_over(&self) -> bool {
        self.link.is_over()
    }

    /// The session the own node must belong to, once told.
    pub(crate) fn session_id(&self) -> Option<i64> {
        self.session.id()
    }

    /// Whether a node whose `ephemeralOwner` is `owner` belongs to the
    /// current session.
    pub(crate) fn owns(&mut self, owner: i64) -> bool {
        self.session.owns(owner)
    }

    /// The own node's full path, once known.
    pub(crate) fn own_full_path(&self) -> Option<&str> {
        self.line.own_path()
    }

    crate::engine::acl_option::acl_option!();

    /// Makes the lock revocable: from its next acquisition on, it reports
    /// [`LockEvent::RevocationRequested`] when someone writes `unlock` to it
    /// (see the [module docs](self#revocation)).
    ///
    /// ```
    /// use herdless_core::lock::Lock;
    ///
    /// let lock: Lock = Lock::writer("/locks/catalog").unwrap().revocable();
    /// assert!(lock.is_revocable());
    /// ```
    pub fn revocable(mut self) -> Self {
        self.revocation = Revocation::Watching;
        self
    }

    /// Whether the lock watches its own node for revocation requests.
    pub fn is_revocable(&self) -> bool {
        self.revocation != Revocation::Off
    }

    /// Whether a revocation was requested during the current acquisition.
    ///
    /// ```
    /// use herdless_core::lock::Lock;
    ///
    /// let lock: Lock = Lock::reader("/locks/catalog").unwrap().revocable();
    /// assert!(!lock.revocation_requested());
    /// ```
    pub fn revocation_requested(&self) -> bool {
        self.revocation == Revocation::Requested
    }

    /// Which kind of contender this lock is.
    ///
    /// ```
    /// use herdless_core::lock::{Contender, Lock};
    ///
    /// let lock: Lock = Lock::new("/locks/printer").unwrap();
    /// assert_eq!(lock.contender(), Contender::Exclusive);
    /// ```
    pub fn contender(&self) -> Contender {
        self.contender
    }

    /// The lock directory.
    pub fn dir(&self) -> &str {
        self.line.dir()
    }

    /// The naming flavour of the nodes this lock creates.
    pub fn flavour(&self) -> Flavour {
        self.line.flavour()
    }

    /// The own node's name (the last component, not the path: see
    /// [`own_path`](Self::own_path)), once the server has named it.
    pub fn own_node(&self) -> Option<&str> {
        self.line.own_name()
    }

    /// The own node's full path into `out` (for fencing writes with a
    /// `check`), if the node exists.
    pub fn own_path<const M: usize>(&self) -> Option<Result<String<M>, PathError>> {
        self.own_node()
            .map(|name| path::join(self.line.dir(), name))
    }

    /// The own node's sequence number, once known.
    pub fn own_sequence(&self) -> Option<Sequence> {
        self.line.own_sequence()
    }

    /// The full path of the predecessor being waited for, if any.
    pub fn predecessor(&self) -> Option<&str> {
        (self.step == Step::Watching).then_some(self.line.predecessor())
    }

    /// The application-level state.
    pub fn state(&self) -> LockState {
        match self.step {
            Step::Idle => LockState::Idle,
            Step::Creating | Step::Finding | Step::Listing | Step::Watching | Step::Confirming => {
                LockState::Acquiring
            }
            Step::Held | Step::Suspended | Step::Verifying => LockState::Held,
            Step::Deleting => LockState::Releasing,
        }
    }

    /// Whether the lock is held and the connection is up (not suspended).
    pub fn is_held(&self) -> bool {
        self.step == Step::Held && self.link.is_up()
    }

    /// Whether the lock is held but the connection was lost.
    pub fn is_suspended(&self) -> bool {
        matches!(self.step, Step::Suspended | Step::Verifying)
            || (self.step == Step::Held && !self.link.is_up())
    }

    /// Starts acquiring; [`LockEvent::Acquired`] follows when held.
    ///
    /// `guid` must be fresh random bytes for every call.
    pub fn acquire(&mut self, guid: Guid) -> Result<(), Error> {
        self.start(guid, false, Deadline::None)
    }

    /// Starts acquiring, giving up with [`GiveUp::TimedOut`] at `deadline`.
    ///
    /// As with Curator and Kazoo, the listing that follows the create
    /// decides however long the create took: a free lock is taken even
    /// with a deadline shorter than the round trips, and a lock with
    /// anyone ahead is given up as soon as that listing shows them.
    pub fn acquire_until(&mut self, guid: Guid, deadline: Instant) -> Result<(), Error> {
        self.start(guid, false, Deadline::At(deadline))
    }

    /// Acquires only if nobody holds or waits for the lock (for a reader:
    /// no writer holds or waits ahead of it): otherwise the own node is
    /// removed and [`GiveUp::Busy`] reported.
    pub fn try_acquire(&mut self, guid: Guid) -> Result<(), Error> {
        self.start(guid, true, Deadline::None)
    }

    fn start(&mut self, guid: Guid, try_only: bool, deadline: Deadline) -> Result<(), Error> {
        if self.step != Step::Idle {
            return Err(Error::InvalidState);
        }
        if !self.link.accepts_work() {
            return Err(Error::SessionEnded);
        }
        // The own node's path fits: `Contention::new` measured it.
        self.line.begin(guid);
        self.try_only = try_only;
        self.deadline = deadline;
        self.give_up = None;
        if self.revocation == Revocation::Requested {
            self.revocation = Revocation::Watching;
        }
        self.create();
        Ok(())
    }

    /// Releases a held lock; [`LockEvent::Released`] follows once the node is
    /// confirmed deleted. Retried across connection losses until confirmed
    /// or the session is gone (CURATOR-678).
    pub fn release(&mut self) -> Result<(), Error> {
        match self.step {
            Step::Held | Step::Suspended | Step::Verifying => {
                self.give_up = Some(Outcome::Release);
                self.start_delete();
                Ok(())
            }
            _ => Err(Error::InvalidState),
        }
    }

    /// Stops waiting; [`GiveUp::Cancelled`] follows once the own node is
    /// gone. Cancelling after the lock was acquired releases it.
    pub fn cancel(&mut self) -> Result<(), Error> {
        match self.state() {
            LockState::Acquiring => {
                self.abandon(Outcome::GiveUp(GiveUp::Cancelled));
                Ok(())
            }
            LockState::Held => self.release(),
            LockState::Releasing => Ok(()),
            LockState::Idle => Err(Error::InvalidState),
        }
    }

    /// Abandons the acquisition: delete the own node (once its name is
    /// known), then report `outcome`. Whatever ends a holding, a holder
    /// hears `Lost`: one at work (not suspended) at once, while its node
    /// still keeps the next contender out (told after the delete, it would
    /// still be at work when the next holder is in); a suspended one, which
    /// stopped its work, once the node is gone.
    fn abandon(&mut self, outcome: Outcome) {
        let outcome = match self.step {
            Step::Held => {
                self.events.emit(LockEvent::Lost);
                Outcome::Quiet
            }
            Step::Suspended | Step::Verifying => Outcome::Lost,
            _ => outcome,
        };
        self.give_up = Some(outcome);
        self.deadline = Deadline::None;
        self.flow().wind_up(&ACQUISITION_READS);
    }

    fn reset(&mut self) {
        self.step = Step::Idle;
        self.line.forget_own();
        self.deadline = Deadline::None;
        self.ops.clear();
    }

    /// The attempt is over, `event` (if any) its last word.
    fn end_with(&mut self, event: Option<LockEvent>) {
        self.reset();
        if let Some(event) = event {
            self.events.emit(event);
        }
    }

    fn acquired(&mut self) {
        self.step = Step::Held;
        self.deadline = Deadline::None;
        self.flow().forget(&[Op::List, Op::WatchPredecessor]);
        self.events.emit(LockEvent::Acquired);
    }

    /// The same session is usable again: rebuild what to send from the step.
    fn resume(&mut self) {
        self.ops.clear_queued();
        match self.step {
            Step::Idle => {}
            Step::Creating | Step::Finding | Step::Listing | Step::Watching | Step::Confirming => {
                self.flow().regain_place();
            }
            Step::Held | Step::Suspended | Step::Verifying => {
                self.step = Step::Verifying;
                self.ops.queue(Op::CheckOwn);
                // A request written while disconnected is read here.
                self.watch_own();
            }
            Step::Deleting => match self.line.own() {
                Own::Known(_) => self.ops.queue(Op::Delete),
                Own::InDoubt => self.find(),
                Own::Absent => self.finish(),
            },
        }
    }

    /// The own node, read again, belongs to a session before the current
    /// one: the client is on a new session with no expiry heard (a
    /// transport that reconnected onto a new session without saying so, or
    /// one that told the session id only then). That node dies with its
    /// session, which the server may not have ended yet, so it is no claim
    /// to the lock (CURATOR-696): a holder (suspended since the old
    /// session's connection went) has lost it (`abandon` says so), and an
    /// attempt ends as an expiry ends it. The node is deleted now rather
    /// than left to the old session's end, so that the next in line need
    /// not wait that long.
    fn not_ours(&mut self) {
        self.abandon(Outcome::Failed(Error::SessionEnded));
    }

    fn on_error(&mut self, op: Op, e: ZkError) {
        // The connection's and the session's ends were taken by the shared
        // flow.
        match op {
            Op::Delete => {
                // Our own ephemeral node refused to go (an ACL set by
                // someone else): report it rather than spin, unless the
                // holder was already told it lost the lock, or the node is
                // an earlier session's, which dies with that session: the
                // attempt ends as that session's end ends it.
                if !matches!(
                    self.give_up,
                    Some(Outcome::Quiet | Outcome::Failed(Error::SessionEnded))
                ) {
                    self.give_up = Some(Outcome::Failed(Error::Zk(e)));
                }
                self.finish();
            }
            // The own node was read, but its data is over an embedded
            // driver's receive buffer: the server read it, so the node is
            // there and its watch is set. Until the lock is held, its
            // owner must still be shown to be the current session
            // (CURATOR-696): an `exists` asks, which always fits.
            Op::WatchOwn if e == ZkError::ReplyTooLarge => {
                if self.step != Step::Held {
                    self.ops.queue(Op::CheckOwn);
                }
            }
            // Anything else gives the lock up, its node deleted: an attempt
            // fails with the refusal, a holder hears `Lost` (`abandon`).
            // That includes the own node's read refused otherwise (an ACL
            // that does not let this client read it): it set no watch, and
            // none can be set, as ZooKeeper tells a change of a node only
            // to sessions that may read it, whatever set the watch
            // (CVE-2024-23944). The node's deletion by anyone would go
            // unheard: a waiter would take its predecessor's deletion for
            // its turn, a holder would go on, either with no node and
            // beside the next holder. It also includes a reconnect's check
            // of a held node refused: the node is not confirmed.
            _ => self.fail(Error::Zk(e)),
        }
    }

    /// Reads the own node with a watch: its deletion by anyone ends the
    /// holding (or the wait), and its data carries revocation requests.
    fn watch_own(&mut self) {
        if self.line.has_own() {
            self.ops.queue(Op::WatchOwn);
        }
    }

    /// The own node's data, read with a watch.
    fn on_own_data(&mut self, data: &[u8]) {
        if self.revocation == Revocation::Watching
            && crate::revoke::is_request(data)
            && matches!(self.state(), LockState::Acquiring | LockState::Held)
        {
            self.revocation = Revocation::Requested;
            self.events.emit(LockEvent::RevocationRequested);
        }
    }

    /// The own node was deleted by someone else (an operator breaking the
    /// lock, a forced revocation), as a watch or a listing shows.
    fn own_node_deleted(&mut self) {
        if self.give_up.is_some() || !self.line.has_own() {
            // Releasing or giving up anyway: the delete's answer decides.
            return;
        }
        self.line.forget_own();
        if self.state() == LockState::Held {
            self.give_up = Some(Outcome::Lost);
            self.finish();
        } else if self.is_revocable() {
            // Deleting a revocable lock's node is how revocation is forced.
            self.give_up = Some(Outcome::GiveUp(GiveUp::Revoked));
            self.finish();
        } else {
            // A waiter queues again at the back, with a new node; what it
            // waited for before is of no concern any more. Under a new
            // GUID: the old node may still be there (a listing from a
            // server behind its create, after a move to a new session),
            // and a search for a lost create must find the new one, never
            // that (CURATOR-498).
            self.flow().forget(&ACQUISITION_READS);
            self.line.next_guid();
            self.create();
        }
    }

    /// Lists the directory afresh: the listing decides where the own node
    /// stands.
    fn list_again(&mut self) {
        self.step = Step::Listing;
        self.ops.queue(Op::List);
    }

    fn predecessor_gone(&mut self) {
        self.flow().forget(&[Op::WatchPredecessor]);
        if self.line.predecessor_is_lowest() {
            // It was the only contender ahead of us, and sequence numbers
            // only grow: nobody can have slipped in ahead since. Unless the
            // own node went meanwhile: with its watch set, that would have
            // been heard first; with the watch being set again, its read
            // decides.
            self.first_in_line(&[Op::WatchOwn, Op::CheckOwn]);
        } else {
            self.list_again();
        }
    }

    /// First in line: held, unless one of `reads` of the own node is on
    /// its way to show that the node is still there and the current
    /// session's.
    fn first_in_line(&mut self, reads: &[Op]) {
        if reads.iter().any(|&op| self.ops.is_pending(op)) {
            self.step = Step::Confirming;
        } else {
            self.acquired();
        }
    }
}

impl<const N: usize> ContentionFlow<N> for Lock<N> {
    fn line(&mut self) -> &mut Contention<N> {
        &mut self.line
    }

    fn ops(&mut self) -> &mut Pipeline<Op, QUEUED, MAX_IN_FLIGHT> {
        &mut self.ops
    }

    fn winding_up(&self) -> bool {
        self.give_up.is_some()
    }

    fn finding(&self) -> bool {
        self.step == Step::Finding
    }

    fn fail_with(&mut self, e: Error) {
        self.give_up.get_or_insert(Outcome::Failed(e));
    }

    fn fail(&mut self, e: Error) {
        self.abandon(Outcome::Failed(e));
    }

    /// Reports the pending outcome and returns to idle.
    fn finish(&mut self) {
        let event = self
            .give_up
            .take()
            .map_or(Some(LockEvent::Released), Outcome::event);
        self.end_with(event);
    }

    fn start_delete(&mut self) {
        self.step = Step::Deleting;
        self.flow().forget(&ACQUISITION_READS);
        self.ops.queue(Op::Delete);
    }

    fn create(&mut self) {
        self.step = Step::Creating;
        self.ops.clear_queued();
        self.ops.push(Op::Create);
        self.ops.push(Op::List);
    }

    fn find(&mut self) {
        self.step = Step::Finding;
        self.flow().queue_search();
    }

    fn placed(&mut self) {
        self.step = Step::Listing;
        self.watch_own();
    }

    fn own_node_vanished(&mut self) {
        self.own_node_deleted();
    }

    /// A request's answer says the connection is gone: stop sending until
    /// the driver reports `Connected`, then resume from the current step.
    fn connection_lost(&mut self) {
        if !self.link.lose() {
            return;
        }
        if self.ops.lose().contains(&Op::Create) {
            // Sent, it may have been applied: only the GUID can tell.
            self.line.create_lost();
        }
        if self.step == Step::Held {
            self.step = Step::Suspended;
            self.events.emit(LockEvent::Suspended);
        }
    }

    /// The session is gone and its ephemeral nodes with it. An attempt
    /// still waiting fails with [`Error::SessionEnded`], however the end
    /// was heard (an expiry, a close, a request refused with
    /// `SessionExpired`), as every other recipe reports it.
    fn session_ended(&mut self, how: SessionEvent) {
        self.ops.lose();
        self.link.end(how);
        let event = match (self.step, self.give_up.take()) {
            (Step::Idle, _) => None,
            (_, Some(outcome)) => outcome.event(),
            (Step::Held | Step::Suspended | Step::Verifying, None) => Some(LockEvent::Lost),
            (_, None) => Some(LockEvent::Failed(Error::SessionEnded)),
        };
        self.end_with(event);
    }

    fn on_created(&mut self, full_path: &str) {
        if self.flow().adopt_created(full_path) {
            self.watch_own();
        }
    }

    fn listing_stands(&self) -> bool {
        matches!(self.step, Step::Creating | Step::Listing)
    }

    /// For a reader, only writers count; for a candidate, candidates.
    fn waits_for(&self, name: &str) -> Option<Sequence> {
        if self.line.kind() == NodeKind::Candidate {
            return contender_sequence(NodeKind::Candidate, name);
        }
        self.contender.waits_for(name)
    }

    fn on_standing(&mut self, standing: Standing) {
        if !standing.present {
            return self.own_node_deleted();
        }
        match standing.predecessor {
            // The listing shows the own node there; whose it is, a read
            // of it may still have to say. A candidate waits for its read
            // even straight after the create: an election promises that
            // its leader's node is the session's when `Leading` is told,
            // and the node listed may have been replaced by hand since
            // the create (a node of that name made by another session).
            None if self.line.kind() == NodeKind::Candidate => {
                self.first_in_line(&[Op::CheckOwn, Op::WatchOwn]);
            }
            None => self.first_in_line(&[Op::CheckOwn]),
            Some(_) if self.try_only => self.abandon(Outcome::GiveUp(GiveUp::Busy)),
            Some(_) if self.deadline.passed() => self.abandon(Outcome::GiveUp(GiveUp::TimedOut)),
            Some(Err(e)) => self.fail(Error::Path(e)),
            Some(Ok(only_lower)) => {
                self.line.wait_behind(only_lower);
                self.step = Step::Watching;
                self.lowest = Some(standing.lowest);
                self.ops.queue(Op::WatchPredecessor);
            }
        }
    }
}

impl<const N: usize> Recipe for Lock<N> {
    type Event = LockEvent;

    fn poll_request(&mut self) -> Option<Outgoing<'_>> {
        let (id, op) = self.next_op()?;
        let request = self.request(op, &[]);
        Some(Outgoing { id, request })
    }

    fn handle_reply(&mut self, _now: Instant, id: RequestId, reply: Reply<'_>) {
        let Some(op) = self.ops.take(id) else {
            return;
        };
        let Some(reply) = self.flow().on_line_reply(id, op, reply) else {
            return;
        };
        match (op, reply) {
            // Data too large for an embedded driver's buffer: the node
            // was read, so it is there and the watch is set.
            (Op::WatchPredecessor, Reply::Data { .. } | Reply::Error(ZkError::ReplyTooLarge)) => {}
            (Op::WatchPredecessor, Reply::Error(ZkError::NoNode)) => self.predecessor_gone(),
            (Op::Delete, Reply::Deleted | Reply::Error(ZkError::NoNode)) => self.finish(),
            (Op::CheckOwn, Reply::Exists { stat }) => {
                if !self.session.owns(stat.ephemeral_owner) {
                    return self.not_ours();
                }
                match self.step {
                    Step::Verifying => {
                        self.step = Step::Held;
                        self.events.emit(LockEvent::Resumed);
                    }
                    Step::Confirming => self.acquired(),
                    _ => {}
                }
            }
            (Op::WatchOwn, Reply::Data { data, stat }) => {
                if !self.session.owns(stat.ephemeral_owner) {
                    return self.not_ours();
                }
                self.on_own_data(data);
                if self.step == Step::Confirming {
                    self.acquired();
                }
            }
            (Op::WatchOwn | Op::CheckOwn, Reply::Error(ZkError::NoNode)) => {
                self.own_node_deleted();
            }
            (op, Reply::Error(e)) => self.on_error(op, e),
            // An answer of the wrong shape for the request.
            (_, _) => self.fail(Error::BadReply),
        }
    }

    fn handle_watch(&mut self, _now: Instant, event: WatchEvent<'_>) {
        // While disconnected, nothing is acted on: `Connected` re-lists anyway.
        if !self.link.is_up() {
            return;
        }
        if self.line.is_own_path(event.path) {
            return match event.kind {
                WatchKind::NodeDeleted => self.own_node_deleted(),
                // Winding up: the node's delete is on its way, and its
                // reads are forgotten.
                _ if self.give_up.is_some() => {}
                // Read the new data, re-arming the one-shot watch.
                _ => self.ops.queue(Op::WatchOwn),
            };
        }
        if self.step != Step::Watching || event.path != self.line.predecessor() {
            return;
        }
        match event.kind {
            WatchKind::NodeDeleted => self.predecessor_gone(),
            // The one-shot watch is spent without the node going: re-arm it.
            _ => self.ops.queue(Op::WatchPredecessor),
        }
    }

    fn handle_session(&mut self, _now: Instant, event: SessionEvent) {
        match event {
            SessionEvent::Connected { session_id } => {
                if self.session.connected(session_id).is_some() {
                    // Another session than the one before. With no expiry
                    // heard, the old one's connection is gone, and what
                    // was in flight with it (after an expiry, nothing is
                    // left to lose). Resuming reads the own node again,
                    // and its owner tells whether it is ours.
                    self.connection_lost();
                }
                if self.link.connected() != Reconnect::Same {
                    self.resume();
                } else if matches!(self.step, Step::Watching | Step::Confirming) {
                    // A reconnect the driver never reported as a loss. The
                    // watches it set again fire in no particular order
                    // (ZooKeeper's `SetWatches`), so the predecessor's
                    // deletion may be heard before the own node's: a fresh
                    // listing, answered after them, decides.
                    self.flow().forget(&[Op::WatchPredecessor]);
                    self.list_again();
                }
            }
            SessionEvent::Suspended => self.connection_lost(),
            SessionEvent::Expired | SessionEvent::Closed => self.session_ended(event),
        }
    }

    fn handle_timeout(&mut self, now: Instant) {
        // The create's listing, or the read of the own node once first in
        // line, says where it stands.
        let deciding =
            self.link.is_up() && (self.listing_stands() || self.step == Step::Confirming);
        if self.deadline.expired(now, deciding) {
            self.abandon(Outcome::GiveUp(GiveUp::TimedOut));
        }
    }

    fn poll_timeout(&self) -> Option<Instant> {
        // A deadline is kept only while acquiring (acquired, abandoned
        // and idle forget it).
        self.deadline.poll(self.link.is_up())
    }

    fn poll_event(&mut self) -> Option<LockEvent> {
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
        self.flow().listing_part(id, names, last);
    }
}

impl<const N: usize> fmt::Debug for Lock<N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Lock")
            .field("dir", &self.dir())
            .field("contender", &self.contender)
            .field("revocable", &self.is_revocable())
            .field("state", &self.state())
            .field("own", &self.own_node())
            .field("predecessor", &self.predecessor())
            .field("link", &self.link)
            .field("session", &self.session.id())
            .finish()
    }
}
