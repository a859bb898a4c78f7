//! A watched configuration value with compare-and-set updates (the recipes
//! page's "Name Service and Configuration").
//!
//! The value lives in one node's data. Watching it means: read it with a
//! watch, and on every notification read it again with a new watch. Each
//! read both fetches the latest data and re-arms the watch in one request, so
//! a change made between the notification and the re-read is not missed: it
//! is already in what the re-read returns, and any later change fires the new
//! watch. Intermediate versions written faster than a round trip are
//! coalesced (ZooKeeper's one-shot watches never promise every version), but
//! the last version is always delivered and versions only ever grow, within
//! one incarnation of the node. A node deleted and created again (by an
//! operator, say) starts over at version 0: its later creation zxid
//! (`czxid`) tells it apart from a stale read, and its value is reported,
//! whether the watcher heard of the delete or not, so a compare-and-set
//! from the reported version works against the node as it is now.
//!
//! While the node does not exist, the watcher waits with `exists` and a
//! watch: here the creation watch that recipes otherwise avoid is the point
//! (it is the only way to hear of the creation), and it is spent by that
//! creation.
//!
//! Writes are compare-and-set by version ([`Version::Exactly`]) or plain
//! ([`Version::Any`]). A write whose reply was lost with the connection is
//! resolved by reading the node back, not by blindly sending it again, so a
//! compare-and-set is never applied twice and never reported wrongly: it is
//! sent again if the node is still at the expected version, `Conflict` if
//! the next version holds other data, and [`ConfigEvent::Unknown`] otherwise:
//! when the node holds its data (which an identical write by another client
//! could have put there: ZooKeeper records no writer, so two writers bumping
//! a counter from the same value cannot both be told `Updated`), when other
//! writes have moved the node on so far that ZooKeeper, which keeps no
//! history, cannot tell, or when the node was deleted and created again
//! meanwhile (a compare-and-set is never sent again into a new incarnation
//! of the node it was aimed at). `Updated` is only ever the server's own
//! answer.

use core::fmt;

use heapless::{String, Vec};

use crate::engine::ancestors::{self, Retries};
use crate::engine::catch_up;
use crate::engine::event_queue::EventQueue;
use crate::engine::link::{Link, Reconnect};
use crate::engine::pipeline::Pipeline;
use crate::path::{self};
use crate::{
    Acl, CreateMode, Instant, Outgoing, Recipe, Reply, Request, RequestId, SessionEvent, Stat,
    Version, WatchEvent, WatchKind, ZkError,
};

/// Default capacity, in bytes, of the value a [`Config`] keeps.
pub const DEFAULT_VALUE_CAPACITY: usize = 256;

/// Default capacity, in bytes, of the node path a [`Config`] keeps.
pub const DEFAULT_PATH_CAPACITY: usize = 128;

/// What the configuration watcher tells the application.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum ConfigEvent {
    /// A newer version of the value arrived; read it with [`Config::value`].
    /// After the node was deleted and created again, the version starts
    /// over (at 0).
    Changed {
        /// The node's data version.
        version: i32,
    },
    /// The node does not exist (any more).
    Missing,
    /// A newer version arrived that does not fit the value buffer, or the
    /// transport's receive buffer (herdless-embassy's `ReplyTooLarge`: the
    /// version and length are then read with an `exists`); the last value
    /// that fitted is no longer current ([`Config::value`] is `None`).
    TooLarge {
        /// The node's data version.
        version: i32,
        /// The data's length.
        len: usize,
    },
    /// This watcher's own write landed.
    Updated {
        /// The node's data version after the write.
        version: i32,
    },
    /// This watcher's own write was refused: the version did not match, or
    /// the node already existed (create), or no longer existed (set).
    Conflict,
    /// This watcher's own write was sent, its reply was lost with the
    /// connection, and the node read back cannot say whether it landed:
    /// other writes had moved it on, or it holds this write's data, which
    /// an identical write by another client could have put there. Read the
    /// value and decide (retrying a compare-and-set that is not idempotent,
    /// such as a counter's increment, could apply it twice).
    Unknown,
    /// This watcher's own write failed for another reason (say, no
    /// permission); nothing was written.
    WriteFailed(Error),
    /// Reading the value failed for another reason (say, no permission):
    /// it left no watch, so it is read again on the next connection.
    Failed(Error),
    /// The session ended; the watch resumes when a new session connects.
    SessionEnded,
}

/// Errors of this recipe: the one error type of every recipe.
pub use crate::Error;

/// What is known of the node. `czxid` (the zxid of its create) tells one
/// incarnation of the node from the next: deleted and created again, it
/// starts over at version 0.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Known {
    Unknown,
    Missing,
    Value {
        version: i32,
        czxid: i64,
    },
    TooLarge {
        version: i32,
        len: usize,
        czxid: i64,
    },
}

impl Known {
    /// (czxid, version) of a node that exists: later incarnations, then
    /// later versions, compare greater.
    fn position(self) -> Option<(i64, i32)> {
        match self {
            Known::Value { version, czxid } | Known::TooLarge { version, czxid, .. } => {
                Some((czxid, version))
            }
            Known::Unknown | Known::Missing => None,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    /// getData with a watch.
    Read,
    /// exists with a watch, while the node is missing.
    AwaitCreation,
    /// getData without a watch, to learn a lost write's outcome.
    Probe,
    /// exists without a watch, for the version and length of data too
    /// large to read (over an embedded driver's receive buffer).
    Size,
    Write,
    /// The no-op write ahead of the reads that learn a lost write's
    /// outcome, in the same flight (`engine::catch_up`).
    CatchUp,
    /// Create the `level`-th ancestor of the node, for a create refused
    /// for want of its parent.
    Ensure(u8),
}

ancestors::ancestor_op!(Op);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum WriteKind {
    Set(Version),
    Create,
}

/// A configuration value in one node: watched, and written by
/// compare-and-set.
///
/// `D` is the capacity of the value in bytes, `N` of the node's path.
///
/// ```
/// use herdless_core::config::{Config, ConfigEvent};
/// use herdless_core::{Recipe, Reply, Stat};
/// let now = herdless_core::Instant::ZERO; // the driver's clock
///
/// let mut config: Config = Config::new("/app/config").unwrap();
/// config.watch();
/// let read = config.poll_request().unwrap().id;
/// let stat = Stat { version: 3, ..Stat::default() };
/// config.handle_reply(now, read, Reply::Data { data: b"level=debug", stat });
/// assert_eq!(config.poll_event(), Some(ConfigEvent::Changed { version: 3 }));
/// assert_eq!(config.value(), Some(&b"level=debug"[..]));
///
/// // Compare-and-set against the version just read:
/// config.set(b"level=info", herdless_core::Version::Exactly(3)).unwrap();
/// assert!(config.poll_request().is_some());
/// ```
pub struct Config<const D: usize = DEFAULT_VALUE_CAPACITY, const N: usize = DEFAULT_PATH_CAPACITY> {
    path: String<N>,
    ops: Pipeline<Op, 6, 6>,
    watching: bool,
    known: Known,
    value: Vec<u8, D>,
    /// The last state reported, so a re-read of the same version is silent.
    reported: Known,
    write: Option<(WriteKind, Vec<u8, D>)>,
    /// The incarnation (czxid) the pending write was aimed at, if known:
    /// the one last read when it started.
    write_czxid: Option<i64>,
    /// The pending write was sent and its reply lost: read back to decide.
    write_unknown: bool,
    /// A read was lost with the connection (or a notification arrived while
    /// disconnected): read again once connected.
    read_lost: bool,
    link: Link,
    events: EventQueue<ConfigEvent, 8>,
    /// The ACL of every node it creates.
    acl: Acl<'static>,
    /// The path of an ancestor being created.
    scratch: String<N>,
    /// How often the create made its missing ancestors.
    retries: Retries,
    /// The first refusal of an ancestor's create in the current chain,
    /// reported by the create behind it (whose `NoNode` it caused).
    ancestor_refused: Option<ZkError>,
}

impl<const D: usize, const N: usize> Config<D, N> {
    /// A configuration value kept in the node at `path`.
    pub fn new(path: &str) -> Result<Self, Error> {
        path::validate(path)?;
        let mut stored = String::new();
        path::concat_into(&mut stored, &[path])?;
        Ok(Config {
            acl: Acl::OPEN,
            path: stored,
            ops: Pipeline::new(),
            watching: false,
            known: Known::Unknown,
            value: Vec::new(),
            reported: Known::Unknown,
            write: None,
            write_czxid: None,
            write_unknown: false,
            read_lost: false,
            link: Link::Up,
            events: EventQueue::new(),
            scratch: String::new(),
            retries: Retries::default(),
            ancestor_refused: None,
        })
    }

    crate::engine::acl_option::acl_option!();

    /// The node's path.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Starts watching: the current value (or [`ConfigEvent::Missing`])
    /// follows, then every newer version.
    pub fn watch(&mut self) {
        if !self.watching {
            self.watching = true;
            self.ops.queue(Op::Read);
        }
    }

    /// The latest value read, if the node exists and its data fits.
    pub fn value(&self) -> Option<&[u8]> {
        matches!(self.known, Known::Value { .. }).then_some(&self.value[..])
    }

    /// The version of the latest value read, if the node exists.
    pub fn version(&self) -> Option<i32> {
        match self.known {
            Known::Value { version, .. } | Known::TooLarge { version, .. } => Some(version),
            Known::Unknown | Known::Missing => None,
        }
    }

    /// Whether the node is known not to exist.
    pub fn is_missing(&self) -> bool {
        self.known == Known::Missing
    }

    /// Whether a write is waiting for its outcome.
    pub fn is_writing(&self) -> bool {
        self.write.is_some()
    }

    /// Replaces the value if the node's version matches `version`;
    /// [`ConfigEvent::Updated`] or [`ConfigEvent::Conflict`] follows.
    pub fn set(&mut self, data: &[u8], version: Version) -> Result<(), Error> {
        self.start_write(WriteKind::Set(version), data)
    }

    /// Creates the node (persistent) with `data`, and its missing
    /// ancestors as every recipe creates its directory;
    /// [`ConfigEvent::Conflict`] if it already exists.
    pub fn create(&mut self, data: &[u8]) -> Result<(), Error> {
        self.start_write(WriteKind::Create, data)
    }

    fn start_write(&mut self, kind: WriteKind, data: &[u8]) -> Result<(), Error> {
        if self.write.is_some() {
            return Err(Error::InvalidState);
        }
        let buffer = Vec::from_slice(data).map_err(|_| Error::TooLarge {
            len: data.len(),
            capacity: D,
        })?;
        self.write = Some((kind, buffer));
        self.write_czxid = self.known.position().map(|(czxid, _)| czxid);
        self.write_unknown = false;
        self.ops.queue(Op::Write);
        Ok(())
    }

    /// Reports the current knowledge if it differs from the last report.
    fn report(&mut self) {
        if self.known == self.reported || !self.watching {
            return;
        }
        // Versions only grow while the node lives, and a node created again
        // has a later czxid: an older read arriving after a newer one (a
        // probe and a watched read crossing) is stale.
        if let (Some(new), Some(old)) = (self.known.position(), self.reported.position()) {
            if new < old {
                return;
            }
        }
        self.reported = self.known;
        match self.known {
            Known::Value { version, .. } => self.events.emit(ConfigEvent::Changed { version }),
            Known::TooLarge { version, len, .. } => {
                self.events.emit(ConfigEvent::TooLarge { version, len })
            }
            Known::Missing => self.events.emit(ConfigEvent::Missing),
            Known::Unknown => {}
        }
    }

    fn on_data(&mut self, data: &[u8], stat: Stat) {
        if self.is_news(stat) {
            match Vec::from_slice(data) {
                Ok(v) => {
                    self.value = v;
                    self.known = Known::Value {
                        version: stat.version,
                        czxid: stat.czxid,
                    };
                }
                Err(()) => self.too_large(stat, data.len()),
            }
        }
        self.resolve_unknown_write(Some((Some(data), stat)));
        self.report();
    }

    /// The node's data was too large to read; `stat` is the node as asked
    /// after. A change between the two was notified before this answer,
    /// and its read tells the watch; otherwise the data read was this
    /// version's, reported as one over the value buffer.
    fn on_too_large(&mut self, stat: Stat) {
        if self.is_news(stat) && !self.ops.is_pending(Op::Read) {
            let len = usize::try_from(stat.data_length).unwrap_or(0);
            self.too_large(stat, len);
        }
        self.resolve_unknown_write(Some((None, stat)));
        self.report();
    }

    /// Whether the node as `stat` shows it is no older than what is known.
    /// A node deleted and created again (by an operator, say) starts over
    /// at version 0 with a later czxid: that is news, not a stale read.
    fn is_news(&self, stat: Stat) -> bool {
        self.known
            .position()
            .is_none_or(|known| (stat.czxid, stat.version) >= known)
    }

    /// The version `stat` shows holds `len` bytes, more than fit.
    fn too_large(&mut self, stat: Stat, len: usize) {
        self.value.clear();
        self.known = Known::TooLarge {
            version: stat.version,
            len,
            czxid: stat.czxid,
        };
    }

    fn on_missing(&mut self) {
        self.known = Known::Missing;
        self.value.clear();
        self.resolve_unknown_write(None);
        self.report();
    }

    /// Decides a write whose reply was lost from the node as it is now
    /// (its data `None` if too large to read).
    fn resolve_unknown_write(&mut self, node: Option<(Option<&[u8]>, Stat)>) {
        if !self.write_unknown {
            return;
        }
        let Some((kind, pending)) = self.write.as_ref() else {
            self.write_unknown = false;
            return;
        };
        self.write_unknown = false;
        // Data that could not be read may be ours or not.
        let other = node.is_some_and(|(data, _)| data.is_some_and(|d| d != &pending[..]));
        let version = node.map(|(_, stat)| stat.version);
        // The node was deleted and created again since the write started:
        // its versions say nothing of the node the write was aimed at, and
        // sending it again would write into a node it was never meant for.
        let recreated = matches!(
            (kind, self.write_czxid, node),
            (WriteKind::Set(_), Some(aimed), Some((_, stat))) if stat.czxid != aimed
        );
        let event = match (kind, version) {
            // Its versions say nothing of the node the write was aimed at.
            (WriteKind::Set(_), Some(_)) if recreated => ConfigEvent::Unknown,
            // Exactly one write moves a node from v to v + 1: if that
            // version holds other data, someone else's write won and ours
            // was refused.
            (WriteKind::Set(Version::Exactly(v)), Some(now))
                if now == v.wrapping_add(1) && other =>
            {
                ConfigEvent::Conflict
            }
            // Still at the expected version: it never landed; send it again.
            (WriteKind::Set(Version::Exactly(v)), Some(now)) if now == *v => {
                return self.ops.queue(Op::Write);
            }
            // Never created: create it now.
            (WriteKind::Create, None) => return self.ops.queue(Op::Write),
            // A new node at version 0 holding other data: created by someone
            // else, so our create was refused.
            (WriteKind::Create, Some(0)) if other => ConfigEvent::Conflict,
            // The node holds our data: our write, or an identical one by
            // another client (two counters bumped from the same value write
            // the same bytes), and ZooKeeper records no writer. Or the node
            // moved on past what our write could have produced, or went
            // away: it keeps no history to tell whether ours landed in
            // between. Say so rather than guess.
            _ => ConfigEvent::Unknown,
        };
        self.write_done(event);
    }

    fn write_done(&mut self, event: ConfigEvent) {
        self.write = None;
        self.write_czxid = None;
        self.write_unknown = false;
        self.retries.reset();
        self.ancestor_refused = None;
        self.events.emit(event);
    }

    /// A create refused for want of its parent: make the ancestors, then
    /// create again, unless an ancestor's create was refused (that is the
    /// cause) or the parent keeps vanishing (someone deletes it each time).
    fn create_ancestors(&mut self) {
        let depth = self.depth();
        match self.ancestor_refused.take() {
            Some(e) => self.write_done(ConfigEvent::WriteFailed(Error::Zk(e))),
            None if depth > 0 && self.retries.take() => {
                self.ops.queue(Op::Ensure(1));
                self.ops.queue(Op::Write);
            }
            None => self.write_done(ConfigEvent::WriteFailed(Error::Zk(ZkError::NoNode))),
        }
    }

    /// How many ancestors the node's parent has to create.
    fn depth(&self) -> u8 {
        ancestors::depth(path::parent(&self.path).unwrap_or("/"))
    }

    /// Moves to a new epoch and notes what the requests queued or in
    /// flight (and `also`, whose error answer just arrived) leave undone.
    fn mark_lost(&mut self, also: Option<Op>) {
        // The queue goes with the connection: a read still in it is lost
        // like one in flight (a driver may tell of the loss before it
        // drains, and a watch begun then would never read). A write still
        // in it was never sent, so its outcome is known, and `resume`
        // sends it again.
        let (mut read_lost, mut write_unknown) = (
            self.ops.is_queued(Op::Read) || self.ops.is_queued(Op::AwaitCreation),
            false,
        );
        for op in self.ops.lose().into_iter().chain(also) {
            match op {
                Op::Read | Op::AwaitCreation | Op::Size => read_lost = true,
                Op::Write => write_unknown = true,
                Op::Probe | Op::CatchUp | Op::Ensure(_) => {}
            }
        }
        self.read_lost |= read_lost;
        self.write_unknown |= write_unknown;
    }

    fn connection_lost(&mut self, also: Option<Op>) {
        if !self.link.lose() {
            return;
        }
        self.mark_lost(also);
    }

    fn session_ended(&mut self, also: Option<Op>, how: SessionEvent) {
        self.link.lose();
        self.mark_lost(also);
        if !self.link.is_over() {
            self.events.emit(ConfigEvent::SessionEnded);
        }
        self.link.end(how);
    }

    fn resume(&mut self) {
        self.ops.clear_queued();
        if self.write_unknown {
            // The next read decides the lost write, and the server now may
            // not have applied it yet: it would show the version the write
            // was aimed at, and the write, sent again and refused, would be
            // reported a conflict though it landed.
            self.ops.queue(Op::CatchUp);
        }
        if self.watching {
            // A new session has no watches, a lost read may have been the
            // one re-arming it, and a resumed one holds its watches only
            // if its client set them again (a wire session without a
            // watch table does not): read again in every case.
            self.ops.queue(Op::Read);
        }
        self.read_lost = false;
        if self.write.is_some() {
            if self.write_unknown {
                self.ops.queue(Op::Probe);
            } else {
                self.ops.queue(Op::Write);
            }
        }
    }

    fn on_error(&mut self, op: Op, e: ZkError) {
        if e.is_connection_loss() {
            self.connection_lost(Some(op));
        } else if e.is_session_gone() {
            self.session_ended(Some(op), SessionEvent::Expired);
        } else if op == Op::Write {
            self.write_done(ConfigEvent::WriteFailed(Error::Zk(e)));
        } else {
            // A refused read sets no watch: nothing will say the node
            // changed, so the read goes again on the next connection.
            self.read_lost |= matches!(op, Op::Read | Op::AwaitCreation);
            self.events.emit(ConfigEvent::Failed(Error::Zk(e)));
        }
    }
}

impl<const D: usize, const N: usize> Recipe for Config<D, N> {
    type Event = ConfigEvent;

    fn poll_request(&mut self) -> Option<Outgoing<'_>> {
        if !self.link.is_up() {
            return None;
        }
        let depth = self.depth();
        let (id, op) = self.ops.next_creating_ancestors(depth)?;
        let path = self.path.as_str();
        let request = match op {
            Op::Ensure(level) => {
                let parent = path::parent(path).unwrap_or("/");
                ancestors::create(parent, level, &mut self.scratch, self.acl)
            }
            Op::Read => Request::GetData { path, watch: true },
            Op::Probe => Request::GetData { path, watch: false },
            Op::Size => Request::Exists { path, watch: false },
            Op::AwaitCreation => Request::Exists { path, watch: true },
            Op::CatchUp => catch_up::request(path),
            Op::Write => {
                let (kind, data) = self.write.as_ref()?;
                match kind {
                    WriteKind::Set(version) => Request::SetData {
                        path,
                        data,
                        version: *version,
                    },
                    WriteKind::Create => Request::Create {
                        path,
                        data,
                        acl: self.acl,
                        mode: CreateMode::Persistent,
                    },
                }
            }
        };
        Some(Outgoing { id, request })
    }

    fn handle_reply(&mut self, _now: Instant, id: RequestId, reply: Reply<'_>) {
        let Some(op) = self.ops.take(id) else {
            return;
        };
        match (op, reply) {
            (Op::Read | Op::Probe, Reply::Data { data, stat }) => self.on_data(data, stat),
            (Op::Read, Reply::Error(ZkError::NoNode)) => {
                // getData on a missing node leaves no watch: wait for the
                // creation with exists, which does.
                self.ops.queue(Op::AwaitCreation);
                self.on_missing();
            }
            (Op::Probe, Reply::Error(ZkError::NoNode)) => self.on_missing(),
            // The data is over the receive buffer (a read's watch is set
            // all the same): its version and length are asked instead.
            (Op::Read | Op::Probe, Reply::Error(ZkError::ReplyTooLarge)) => {
                self.ops.queue(Op::Size);
            }
            (Op::Size, Reply::Exists { stat }) => self.on_too_large(stat),
            // Deleted since: its read's watch tells the watch; a lost
            // write's outcome is decided from the node gone.
            (Op::Size, Reply::Error(ZkError::NoNode)) => self.resolve_unknown_write(None),
            // Created between the read and the exists: the exists left a
            // data watch, read the value.
            (Op::AwaitCreation, Reply::Exists { .. }) => self.ops.queue(Op::Read),
            (Op::AwaitCreation, Reply::Error(ZkError::NoNode)) => {}
            // The reads behind it answer (`NoNode`: the node is missing).
            (Op::CatchUp, Reply::Checked | Reply::Error(ZkError::NoNode)) => {}
            (Op::Write, Reply::DataSet { stat }) => self.write_done(ConfigEvent::Updated {
                version: stat.version,
            }),
            // A new node starts at version 0.
            (Op::Write, Reply::Created { .. }) => {
                self.write_done(ConfigEvent::Updated { version: 0 })
            }
            (Op::Ensure(_), Reply::Created { .. } | Reply::Error(ZkError::NodeExists)) => {
                self.retries.answered()
            }
            (Op::Ensure(_), Reply::Error(e)) if !e.is_connection_loss() && !e.is_session_gone() => {
                self.retries.answered();
                self.ancestor_refused.get_or_insert(e);
            }
            // A create refused with NoNode is missing its parent.
            (Op::Write, Reply::Error(ZkError::NoNode))
                if matches!(self.write, Some((WriteKind::Create, _))) =>
            {
                self.create_ancestors()
            }
            (
                Op::Write,
                Reply::Error(ZkError::BadVersion | ZkError::NodeExists | ZkError::NoNode),
            ) => self.write_done(ConfigEvent::Conflict),
            (op, Reply::Error(e)) => self.on_error(op, e),
            (Op::Write, _) => self.write_done(ConfigEvent::WriteFailed(Error::BadReply)),
            (_, _) => self.events.emit(ConfigEvent::Failed(Error::BadReply)),
        }
    }

    fn handle_watch(&mut self, _now: Instant, event: WatchEvent<'_>) {
        if !self.watching || event.path != self.path.as_str() {
            return;
        }
        if event.kind == WatchKind::NodeChildrenChanged {
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
                if self.link.connected() != Reconnect::Same {
                    self.resume();
                }
            }
            SessionEvent::Suspended => self.connection_lost(None),
            SessionEvent::Expired | SessionEvent::Closed => self.session_ended(None, event),
        }
    }

    fn poll_event(&mut self) -> Option<ConfigEvent> {
        self.events.pop()
    }
}

impl<const D: usize, const N: usize> fmt::Debug for Config<D, N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Config")
            .field("path", &self.path.as_str())
            .field("version", &self.version())
            .field("writing", &self.is_writing())
            .field("link", &self.link)
            .finish()
    }
}
