//! The candidate's side of a leader election.

use core::fmt;

use heapless::{String, Vec};

use super::{Acknowledgement, Error, ACK_NAME, DEFAULT_DATA_CAPACITY, DEFAULT_PATH_CAPACITY};
use crate::engine::ancestors;
use crate::engine::contender_op::Op;
use crate::engine::contention::{Contention, Standing};
use crate::engine::contention_flow::{AsFlow, ContentionFlow, MAX_IN_FLIGHT, QUEUED};
use crate::engine::deadline::Deadline;
use crate::engine::event_queue::EventQueue;
use crate::engine::link::{Link, Reconnect};
use crate::engine::pipeline::Pipeline;
use crate::engine::sessions::Current;
use crate::naming::{contender_sequence, Flavour, Guid, NodeKind};
use crate::path;
use crate::{
    Acl, Children, CreateMode, Instant, Outgoing, Recipe, Reply, Request, RequestId, Sequence,
    SessionEvent, Stat, Version, WatchEvent, WatchKind, ZkError,
};

/// How often in a row a foreign acknowledgement is replaced before giving up.
const MAX_ACK_REPLACEMENTS: u8 = 8;

/// What a candidate tells the application.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum ElectionEvent {
    /// Another candidate is ahead; this one waits. `leader` is the lowest
    /// candidate's sequence number when this one last listed the directory
    /// (a follower only watches its predecessor, so for the current leader
    /// use an [`Observer`](super::Observer)). Reported when the lowest
    /// candidate seen changes.
    Following {
        /// Sequence number of the lowest candidate seen.
        leader: Sequence,
    },
    /// This candidate leads: its node is the lowest and belongs to the
    /// current session. The acknowledgement naming it is written in the
    /// same instant (other sessions see it once the server applied it).
    Leading,
    /// Leading when the connection was lost: not sure it still leads. Stop
    /// work that needs leadership until [`ElectionEvent::Resumed`].
    Suspended,
    /// After [`ElectionEvent::Suspended`], the same session came back, the
    /// own node is confirmed to belong to it, and the acknowledgement names
    /// it: leading again.
    Resumed,
    /// Leadership is lost (the session ended, moved to another one, was
    /// suspended longer than the session timeout, or the node was deleted).
    /// Stop at once. The candidate is no longer in the election.
    Lost,
    /// A resignation (while leading or waiting) completed: the own node and
    /// the acknowledgement are confirmed deleted.
    Resigned,
    /// The campaign's deadline passed before it led; the own node is
    /// confirmed deleted.
    TimedOut,
    /// The campaign failed; the own node is gone. [`Error::SessionEnded`]
    /// when the session ended before this candidate led: after an expiry
    /// the transport opens the next session by itself, so campaign again
    /// there, with a fresh GUID.
    Failed(Error),
}

/// Where a candidate is, as the application sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum ElectionState {
    /// Not in the election.
    Idle,
    /// Volunteered, not (yet) leading.
    Campaigning,
    /// Leading (possibly suspended: see [`Election::is_suspended`]).
    Leading,
    /// Resigning, giving up or cleaning up after a loss: the own node is
    /// being deleted.
    Resigning,
}

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
    /// Lowest: checking the own node's owner.
    Confirming,
    Leading,
    /// Leading, after a reconnect: checking the own node and the
    /// acknowledgement again.
    Verifying,
    /// Deleting the acknowledgement and the own node.
    Deleting,
}

/// The reads of a campaign under way: nothing to act on once it winds up.
const CAMPAIGN_READS: [Op; 5] = [
    Op::List,
    Op::WatchPredecessor,
    Op::WatchOwn,
    Op::ReadAck,
    Op::ReplaceAck,
];

/// What the application was told of leadership.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Leadership {
    /// Not leading: `Leading` was never reported, or `Lost` or the end of
    /// a resignation was reported since.
    None,
    /// `Leading` was reported (or `Resumed` since a suspension).
    Leading,
    /// Leading when the connection was lost: waiting for `Resumed` or
    /// `Lost`. `since` is when, while it counts towards `lost_after` (not
    /// after a reconnect).
    Suspended { since: Option<Instant> },
}

/// Whether an answer showed the acknowledgement naming the current own
/// node. Until then a refusal to write it gives leadership up; after, the
/// rewrites are best effort.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum AckWrite {
    /// Not written yet, or not known to be.
    Unconfirmed,
    /// An answer showed it naming the own node.
    Named,
}

/// What becomes of the acknowledgement when the candidate winds up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum AckCleanup {
    /// Nothing: it is not this candidate's, or it is dealt with.
    None,
    /// It may be ours, written in this session with the own node still
    /// there: delete it before the own node.
    Delete,
    /// Leadership was lost while an acknowledgement naming this candidate
    /// may exist: read it and delete it if it still names us.
    Clear,
}

/// How a campaign that is being wound up will be reported.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Outcome {
    Resign,
    TimedOut,
    Failed(Error),
    /// Already reported (`Lost`): nothing more to say.
    Quiet,
}

impl Outcome {
    /// How the application hears of it, if at all.
    fn event(self) -> Option<ElectionEvent> {
        match self {
            Outcome::Resign => Some(ElectionEvent::Resigned),
            Outcome::TimedOut => Some(ElectionEvent::TimedOut),
            Outcome::Failed(e) => Some(ElectionEvent::Failed(e)),
            Outcome::Quiet => None,
        }
    }
}

/// A candidate of the leader election in one directory.
///
/// `N` is the capacity in bytes of each stored path, `D` that of the
/// acknowledgement's data (own node name, newline, candidate data). See the
/// [module docs](super) for the protocol.
///
/// ```
/// use herdless_core::election::{Election, ElectionEvent};
/// use herdless_core::sim::World;
/// use herdless_core::naming::Guid;
///
/// let mut world: World<Election> = World::new(1);
/// let a = world.add_peer(Election::new("/election/gateway").unwrap());
/// let b = world.add_peer(Election::new("/election/gateway").unwrap());
/// world.act(a, |e| e.campaign(Guid::from_random_bytes([1; 16]), b"edge-1")).unwrap();
/// world.run_until_quiet(1_000);
/// world.act(b, |e| e.campaign(Guid::from_random_bytes([2; 16]), b"edge-2")).unwrap();
/// world.run_until_quiet(1_000);
/// assert_eq!(world.peers[a].take_events(), [ElectionEvent::Leading]);
/// assert!(matches!(world.peers[b].take_events()[..], [ElectionEvent::Following { .. }]));
///
/// // The acknowledgement names the leader's node.
/// let ack = world.zk.node("/election/gateway/leader").unwrap();
/// assert!(ack.data.starts_with(world.peers[a].recipe.own_node().unwrap().as_bytes()));
///
/// world.act(a, |e| e.resign()).unwrap();
/// world.run_until_quiet(1_000);
/// assert_eq!(world.peers[a].take_events(), [ElectionEvent::Resigned]);
/// assert_eq!(world.peers[b].take_events(), [ElectionEvent::Leading]);
/// ```
pub struct Election<const N: usize = DEFAULT_PATH_CAPACITY, const D: usize = DEFAULT_DATA_CAPACITY>
{
    /// The own node and the node it waits for.
    line: Contention<N>,
    ack_path: String<N>,
    step: Step,
    /// A node of an earlier session, to delete.
    stale: String<N>,
    /// The lowest candidate last reported in `Following`.
    leader_seen: Option<Sequence>,
    give_up: Option<Outcome>,
    deadline: Deadline,
    link: Link,
    /// The session the own node must belong to.
    session: Current,
    leadership: Leadership,
    /// What to do with the acknowledgement when winding up.
    ack_cleanup: AckCleanup,
    /// Whether the acknowledgement is known to name the own node.
    ack_write: AckWrite,
    /// Version of a foreign acknowledgement being replaced (any, for one
    /// too large to read).
    foreign_ack_version: Version,
    /// Version of the acknowledgement `ClearAck` found naming us.
    clear_ack_version: i32,
    ack_replacements: u8,
    /// `ClearAck` found the acknowledgement over the receive buffer: it
    /// asks whose it is (`exists`) rather than what it says.
    ack_unreadable: bool,
    /// Report `Lost` once suspended this long (ms).
    lost_after: Option<u64>,
    /// The time of the latest input: when a suspension starts.
    now: Instant,
    ops: Pipeline<Op, QUEUED, MAX_IN_FLIGHT>,
    events: EventQueue<ElectionEvent, 8>,
    scratch: String<N>,
    /// `<own name>\n<data>`; before the own node is named, `\n<data>`.
    ack: Vec<u8, D>,
    /// Length of the own name at the start of `ack`.
    name_len: usize,
    /// The ACL of every node it creates.
    acl: Acl<'static>,
}

impl<const N: usize, const D: usize> Election<N, D> {
    /// A candidate in the election directory `dir` (created, with its
    /// ancestors, if missing), naming its node as the recipes page does.
    ///
    /// ```
    /// use herdless_core::election::Election;
    ///
    /// let election: Election = Election::new("/election/gateway").unwrap();
    /// assert_eq!(election.ack_path(), "/election/gateway/leader");
    /// assert!(Election::<128>::new("relative").is_err());
    /// ```
    pub fn new(dir: &str) -> Result<Self, Error> {
        Self::with_flavour(dir, Flavour::Recipes)
    }

    /// A candidate whose node is named in `flavour` (`_c_<guid>-latch-` for
    /// Curator's `LeaderLatch`, `<hex>__lock__` for Kazoo's `Election`).
    /// Candidates of every flavour are recognised whatever this one is.
    ///
    /// ```
    /// use herdless_core::election::Election;
    /// use herdless_core::naming::Flavour;
    ///
    /// let election: Election = Election::with_flavour("/e", Flavour::Curator).unwrap();
    /// assert_eq!(election.flavour(), Flavour::Curator);
    /// ```
    pub fn with_flavour(dir: &str, flavour: Flavour) -> Result<Self, Error> {
        let line = Contention::new(dir, flavour, NodeKind::Candidate)?;
        let mut ack_path = String::new();
        // Cannot fail: a candidate's node path in `dir` is longer, and fits.
        let _ = path::join_into(&mut ack_path, dir, ACK_NAME);
        Ok(Election {
            acl: Acl::OPEN,
            line,
            ack_path,
            step: Step::Idle,
            stale: String::new(),
            leader_seen: None,
            give_up: None,
            deadline: Deadline::None,
            link: Link::Up,
            session: Current::default(),
            leadership: Leadership::None,
            ack_cleanup: AckCleanup::None,
            ack_write: AckWrite::Unconfirmed,
            foreign_ack_version: Version::Any,
            clear_ack_version: 0,
            ack_replacements: 0,
            ack_unreadable: false,
            lost_after: None,
            now: Instant::ZERO,
            ops: Pipeline::new(),
            events: EventQueue::new(),
            scratch: String::new(),
            ack: Vec::new(),
            name_len: 0,
        })
    }

    crate::engine::acl_option::acl_option!();

    /// The election directory.
    ///
    /// ```
    /// # use herdless_core::election::Election;
    /// let election: Election = Election::new("/e").unwrap();
    /// assert_eq!(election.dir(), "/e");
    /// ```
    pub fn dir(&self) -> &str {
        self.line.dir()
    }

    /// The acknowledgement node's path, `<dir>/leader`.
    ///
    /// ```
    /// # use herdless_core::election::Election;
    /// let election: Election = Election::new("/e").unwrap();
    /// assert_eq!(election.ack_path(), "/e/leader");
    /// ```
    pub fn ack_path(&self) -> &str {
        &self.ack_path
    }

    /// The naming flavour of the node this candidate creates.
    ///
    /// ```
    /// # use herdless_core::election::Election;
    /// # use herdless_core::naming::Flavour;
    /// let election: Election = Election::new("/e").unwrap();
    /// assert_eq!(election.flavour(), Flavour::Recipes);
    /// ```
    pub fn flavour(&self) -> Flavour {
        self.line.flavour()
    }

    /// Reports [`ElectionEvent::Lost`] once leadership has been suspended
    /// for `millis` without the same session coming back: after the session
    /// timeout the server has expired the session for certain, whether or
    /// not the client ever hears so (CURATOR-220). `None` (the default)
    /// waits for the expiry to be reported.
    ///
    /// ```
    /// # use herdless_core::election::Election;
    /// let mut election: Election = Election::new("/e").unwrap();
    /// election.set_lost_after(Some(10_000));
    /// ```
    pub fn set_lost_after(&mut self, millis: Option<u64>) {
        self.lost_after = millis;
    }

    /// The own node's name, once the server has named it.
    ///
    /// ```
    /// # use herdless_core::election::Election;
    /// let election: Election = Election::new("/e").unwrap();
    /// assert_eq!(election.own_node(), None);
    /// ```
    pub fn own_node(&self) -> Option<&str> {
        self.line.own_name()
    }

    /// The own node's full path (to fence writes on it with a `check`), once
    /// named.
    ///
    /// ```
    /// # use herdless_core::election::Election;
    /// let election: Election = Election::new("/e").unwrap();
    /// assert_eq!(election.own_path(), None);
    /// ```
    pub fn own_path(&self) -> Option<&str> {
        self.line.own_path()
    }

    /// The own node's sequence number, once known.
    ///
    /// ```
    /// # use herdless_core::election::Election;
    /// let election: Election = Election::new("/e").unwrap();
    /// assert_eq!(election.own_sequence(), None);
    /// ```
    pub fn own_sequence(&self) -> Option<Sequence> {
        self.line.own_sequence()
    }

    /// The candidate's data (written into its node and the acknowledgement).
    ///
    /// ```
    /// # use herdless_core::election::Election;
    /// # use herdless_core::naming::Guid;
    /// let mut election: Election = Election::new("/e").unwrap();
    /// election.campaign(Guid([1; 16]), b"edge-1").unwrap();
    /// assert_eq!(election.data(), b"edge-1");
    /// ```
    pub fn data(&self) -> &[u8] {
        self.ack.get(self.name_len + 1..).unwrap_or(&[])
    }

    /// The predecessor being watched, if any.
    ///
    /// ```
    /// # use herdless_core::election::Election;
    /// let election: Election = Election::new("/e").unwrap();
    /// assert_eq!(election.predecessor(), None);
    /// ```
    pub fn predecessor(&self) -> Option<&str> {
        (self.step == Step::Watching).then_some(self.line.predecessor())
    }

    /// The application-level state.
    ///
    /// ```
    /// # use herdless_core::election::{Election, ElectionState};
    /// let election: Election = Election::new("/e").unwrap();
    /// assert_eq!(election.state(), ElectionState::Idle);
    /// ```
    pub fn state(&self) -> ElectionState {
        match self.step {
            Step::Idle => ElectionState::Idle,
            Step::Creating | Step::Finding | Step::Listing | Step::Watching | Step::Confirming => {
                ElectionState::Campaigning
            }
            Step::Leading | Step::Verifying => ElectionState::Leading,
            Step::Deleting => ElectionState::Resigning,
        }
    }

    /// Whether this candidate leads with the connection up (not suspended).
    /// This is the only state in which to do the leader's work.
    ///
    /// ```
    /// # use herdless_core::election::Election;
    /// let election: Election = Election::new("/e").unwrap();
    /// assert!(!election.is_leading());
    /// ```
    pub fn is_leading(&self) -> bool {
        // `Leading` is reported only at the step of that name, and a lost
        // connection (or anything that leaves the step) moves it on.
        self.leadership == Leadership::Leading
    }

    /// Whether this candidate led when the connection was lost and does not
    /// know yet whether it still does.
    ///
    /// ```
    /// # use herdless_core::election::Election;
    /// let election: Election = Election::new("/e").unwrap();
    /// assert!(!election.is_suspended());
    /// ```
    pub fn is_suspended(&self) -> bool {
        self.state() == ElectionState::Leading
            && (matches!(self.leadership, Leadership::Suspended { .. }) || !self.link.is_up())
    }

    /// Volunteers with `data` (a participant id, an address); events follow.
    ///
    /// `data` shares the acknowledgement's `D` bytes with the own node's
    /// name and a newline: longer than what is left (141 bytes for the
    /// default `Election<128, 192>` with herdless names), it is refused
    /// with [`Error::TooLarge`], which names that room.
    ///
    /// `guid` must be fresh random bytes for every campaign.
    ///
    /// ```
    /// # use herdless_core::election::Election;
    /// # use herdless_core::naming::Guid;
    /// # use herdless_core::Recipe;
    /// let mut election: Election = Election::new("/e").unwrap();
    /// election.campaign(Guid::from_random_bytes([9; 16]), b"me").unwrap();
    /// // The create and the listing leave together.
    /// assert!(election.poll_request().unwrap().request.path().starts_with("/e/"));
    /// assert_eq!(election.poll_request().unwrap().request.path(), "/e");
    /// ```
    pub fn campaign(&mut self, guid: Guid, data: &[u8]) -> Result<(), Error> {
        self.start(guid, data, Deadline::None)
    }

    /// Volunteers until `deadline`: [`ElectionEvent::TimedOut`] follows if it
    /// passes before this candidate leads, once its node is deleted. The
    /// listing that follows the create decides however long the create
    /// took, so a vacant election is led even with a deadline shorter than
    /// the round trips.
    ///
    /// ```
    /// # use herdless_core::election::Election;
    /// # use herdless_core::naming::Guid;
    /// # use herdless_core::{Instant, Recipe};
    /// let mut election: Election = Election::new("/e").unwrap();
    /// election.campaign_until(Guid([3; 16]), b"", Instant::from_millis(500)).unwrap();
    /// assert_eq!(election.poll_timeout(), Some(Instant::from_millis(500)));
    /// ```
    pub fn campaign_until(
        &mut self,
        guid: Guid,
        data: &[u8],
        deadline: Instant,
    ) -> Result<(), Error> {
        self.start(guid, data, Deadline::At(deadline))
    }

    fn start(&mut self, guid: Guid, data: &[u8], deadline: Deadline) -> Result<(), Error> {
        if self.step != Step::Idle {
            return Err(Error::InvalidState);
        }
        if !self.link.accepts_work() {
            return Err(Error::SessionEnded);
        }
        // The acknowledgement must fit before anything is created (the own
        // node's path fits: `Contention::new` measured it).
        let name_len = self.line.name_len();
        let room = D.saturating_sub(name_len + 1);
        if data.len() > room {
            return Err(Error::TooLarge {
                len: data.len(),
                capacity: room,
            });
        }
        self.ack.clear();
        let _ = self.ack.push(b'\n');
        let _ = self.ack.extend_from_slice(data);
        self.name_len = 0;
        self.line.begin(guid);
        self.deadline = deadline;
        self.stale.clear();
        self.leader_seen = None;
        self.give_up = None;
        self.leadership = Leadership::None;
        self.ack_cleanup = AckCleanup::None;
        self.ack_replacements = 0;
        self.ack_unreadable = false;
        self.create();
        Ok(())
    }

    /// Leaves the election: while leading, the acknowledgement and then the
    /// own node are deleted; while waiting, the own node. Either way
    /// [`ElectionEvent::Resigned`] follows once they are confirmed gone
    /// (retried across connection losses until confirmed or the session is
    /// gone).
    ///
    /// ```
    /// # use herdless_core::election::{Election, ElectionEvent};
    /// # use herdless_core::naming::Guid;
    /// # use herdless_core::Recipe;
    /// let mut election: Election = Election::new("/e").unwrap();
    /// assert!(election.resign().is_err(), "not campaigning");
    /// election.campaign(Guid([1; 16]), b"").unwrap();
    /// election.resign().unwrap();
    /// ```
    pub fn resign(&mut self) -> Result<(), Error> {
        match self.step {
            Step::Idle => Err(Error::InvalidState),
            Step::Deleting => {
                // Already on its way out (timed out, or cleaning up after a
                // loss): report the resignation when done.
                if matches!(self.give_up, Some(Outcome::TimedOut | Outcome::Quiet)) {
                    self.give_up = Some(Outcome::Resign);
                }
                Ok(())
            }
            _ => {
                self.abandon(Outcome::Resign);
                Ok(())
            }
        }
    }

    /// Whether the acknowledgement may exist and be this candidate's.
    fn may_hold_ack(&self) -> bool {
        matches!(self.step, Step::Leading | Step::Verifying)
    }

    /// A reconnect stops counting the suspension towards `lost_after`: the
    /// checks after it decide.
    fn stop_suspension_clock(&mut self) {
        if let Leadership::Suspended { since } = &mut self.leadership {
            *since = None;
        }
    }

    /// When a suspension that is being counted turns into `Lost`.
    fn suspension_deadline(&self) -> Option<Instant> {
        match (self.leadership, self.lost_after) {
            (Leadership::Suspended { since: Some(at) }, Some(limit)) => Some(at + limit),
            _ => None,
        }
    }

    /// Winds the campaign up: delete the acknowledgement (if it may be
    /// ours) and the own node (once its name is known), then report
    /// `outcome`.
    fn abandon(&mut self, outcome: Outcome) {
        if self.step == Step::Deleting {
            // Already on the way out (a failure met while deleting): keep
            // the deletes going, checking the node before the
            // acknowledgement as after a reconnect.
            self.give_up.get_or_insert(outcome);
            let pending = [
                Op::CheckOwn,
                Op::DeleteAck,
                Op::Delete,
                Op::ClearAck,
                Op::DropAck,
            ];
            if !pending.iter().any(|op| self.ops.is_pending(*op)) {
                self.delete_again();
            }
            return;
        }
        // The acknowledgement is only ever written while leading (the
        // steps of `may_hold_ack`).
        if self.may_hold_ack() {
            self.ack_cleanup = AckCleanup::Delete;
        }
        // Whatever happens next, the outcome asked for is what is reported.
        self.leadership = Leadership::None;
        self.give_up = Some(outcome);
        self.deadline = Deadline::None;
        self.flow().wind_up(&CAMPAIGN_READS);
    }

    /// The acknowledgement read after a loss: delete it if it is this
    /// candidate's (`ours`, at the version read), else leave it to its
    /// writer.
    fn on_clear_ack_read(&mut self, ours: bool, stat: Stat) {
        if ours {
            self.clear_ack_version = stat.version;
            self.ops.queue(Op::DropAck);
        } else {
            self.ack_cleared();
        }
    }

    /// No acknowledgement names this candidate any more (or trying to
    /// delete it failed): go on with the own node.
    fn ack_cleared(&mut self) {
        self.ack_cleanup = AckCleanup::None;
        self.ack_unreadable = false;
        if self.step != Step::Deleting {
            return;
        }
        if self.line.has_own() {
            self.ops.queue(Op::Delete);
        } else {
            self.finish();
        }
    }

    fn reset(&mut self) {
        self.step = Step::Idle;
        self.line.forget_own();
        self.stale.clear();
        self.deadline = Deadline::None;
        self.leadership = Leadership::None;
        self.ack_cleanup = AckCleanup::None;
        self.ack_write = AckWrite::Unconfirmed;
        self.ops.clear();
    }

    /// The campaign is over, `event` (if any) its last word.
    fn end_with(&mut self, event: Option<ElectionEvent>) {
        self.reset();
        if let Some(event) = event {
            self.events.emit(event);
        }
    }

    /// Leadership is gone: say so at once, then delete the acknowledgement
    /// if it still names this candidate and was written in this session
    /// (`same_session`), and the own node if it may still exist
    /// (`node_may_exist`), and leave the election.
    fn lost(&mut self, node_may_exist: bool, same_session: bool) {
        // Leadership is only ever lost while leading (`Leading` or
        // `Verifying`), where the acknowledgement may be ours.
        let ack_may_be_ours = same_session;
        if self.leadership != Leadership::None {
            self.events.emit(ElectionEvent::Lost);
        }
        self.leadership = Leadership::None;
        self.deadline = Deadline::None;
        // An acknowledgement naming us would tell observers we lead until
        // the session dies (forever, without another candidate): read it
        // and delete it only if it still names us. With the own node still
        // there, nobody else can have replaced it in between (it goes
        // first, see `start_delete`). With the own node gone, a successor
        // may replace it between the read and the delete, and all its
        // acknowledgements have version 0: the delete may then remove the
        // successor's, whose watch makes it write it again at once; it
        // never makes anyone believe a candidate leads that does not.
        self.ack_cleanup = if ack_may_be_ours && self.name_len > 0 {
            AckCleanup::Clear
        } else {
            AckCleanup::None
        };
        self.give_up = Some(Outcome::Quiet);
        if node_may_exist && self.line.has_own() {
            self.start_delete();
        } else if self.ack_cleanup == AckCleanup::Clear {
            // No node to delete: nothing queued or acknowledging matters
            // any more, only the acknowledgement.
            self.ops.clear_queued();
            self.flow().forget(&[Op::Ack]);
            self.start_delete();
        } else {
            self.finish();
        }
    }

    /// The own node is gone (or not ours) while campaigning: volunteer again
    /// with a new node.
    fn volunteer_again(&mut self) {
        self.flow().forget(&[
            Op::List,
            Op::WatchPredecessor,
            Op::WatchOwn,
            Op::Ack,
            Op::ReadAck,
            Op::ReplaceAck,
        ]);
        self.line.forget_own();
        let _ = rename_ack(&mut self.ack, &mut self.name_len, "");
        // An acknowledgement naming the old node is stale: the next leader
        // replaces it.
        self.ack_write = AckWrite::Unconfirmed;
        self.line.next_guid();
        self.create();
    }

    /// The same session is usable again: rebuild what to send from the step.
    fn resume(&mut self) {
        self.ops.clear_queued();
        self.stop_suspension_clock();
        if !self.stale.is_empty() {
            self.ops.queue(Op::DeleteStale);
        }
        match self.step {
            Step::Idle => {}
            Step::Creating | Step::Finding | Step::Listing | Step::Watching => {
                self.flow().regain_place();
            }
            // Nothing is written before leading: reading the own node
            // again decides.
            Step::Confirming => self.ops.queue(Op::WatchOwn),
            Step::Leading | Step::Verifying => {
                self.step = Step::Verifying;
                self.ops.queue(Op::WatchOwn);
            }
            Step::Deleting => self.delete_again(),
        }
    }

    /// Deleting, after a reconnect or a failure: the deletes in flight may
    /// or may not have landed. Settle the acknowledgement, then the own
    /// node, as far as they are left.
    fn delete_again(&mut self) {
        if self.ack_cleanup == AckCleanup::Clear {
            self.ops.queue(Op::ClearAck);
        } else if self.line.has_own() && self.ack_cleanup == AckCleanup::Delete {
            // The acknowledgement's delete always leaves before the
            // node's, so if the node is gone, so is our acknowledgement,
            // and the one there now is the next leader's: look before
            // deleting it again.
            self.ops.queue(Op::CheckOwn);
        } else if self.line.has_own() {
            self.ops.queue(Op::Delete);
        } else {
            self.flow().finish_or_find();
        }
    }

    /// Connected on a session other than the one the own node was made on:
    /// that node (and any acknowledgement it wrote) dies with the old
    /// session or is already gone. It is deleted, never adopted
    /// (CURATOR-696, CURATOR-498).
    fn on_new_session(&mut self) {
        self.ops.lose();
        self.stop_suspension_clock();
        // A create of the old session dies with it.
        self.line.settle();
        // The acknowledgement belonged to the old session.
        self.ack_cleanup = AckCleanup::None;
        self.ack_write = AckWrite::Unconfirmed;
        match self.step {
            Step::Idle => {}
            // The acknowledgement went with the old session: on with the
            // own node.
            Step::Deleting => self.ack_cleared(),
            // The old session may live on a while (its expiry not yet
            // processed): its node is deleted, so the next candidate need
            // not wait for that (CURATOR-696). Its acknowledgement is left
            // to die with it: every leader writes it at version 0 under one
            // name, so a delete of "ours" could land after the old session
            // ended and a successor wrote its own.
            Step::Leading | Step::Verifying => self.lost(true, false),
            Step::Creating | Step::Finding | Step::Listing | Step::Watching | Step::Confirming => {
                self.retire_own();
                self.volunteer_again();
            }
        }
    }

    /// Suspended for longer than the session timeout: the session is
    /// expired whether or not the client hears so.
    fn suspended_too_long(&mut self) {
        self.events.emit(ElectionEvent::Lost);
        self.leadership = Leadership::None;
        self.give_up = Some(Outcome::Quiet);
        // Should the same session come back after all, the node and the
        // acknowledgement are still ours: delete both.
        self.ack_cleanup = AckCleanup::Delete;
        self.step = Step::Deleting;
        self.ops.clear_queued();
    }

    fn on_error(&mut self, op: Op, e: ZkError) {
        // The connection's and the session's ends were taken by the shared
        // flow.
        match op {
            Op::Delete => {
                // Our own ephemeral node refused to go (an ACL set by
                // someone else): report it rather than spin.
                if !matches!(self.give_up, Some(Outcome::Quiet)) {
                    self.give_up = Some(Outcome::Failed(Error::Zk(e)));
                }
                self.finish();
            }
            // Best effort: the acknowledgement dies with the session.
            Op::DeleteAck => self.ack_cleanup = AckCleanup::None,
            Op::ClearAck | Op::DropAck => self.ack_cleared(),
            Op::CheckOwn => {
                self.ack_cleanup = AckCleanup::None;
                self.ops.queue(Op::Delete);
            }
            Op::DeleteStale => self.stale.clear(),
            // The create that follows settles it.
            Op::ReplaceAck => {}
            // Once written, keeping it is best effort: who leads does
            // not depend on it.
            Op::Ack | Op::ReadAck
                if self.step == Step::Leading && self.ack_write == AckWrite::Named => {}
            _ => self.fail(Error::Zk(e)),
        }
    }

    /// The own node (of a campaign being left or of an earlier session)
    /// is to be deleted before the next create.
    fn retire_own(&mut self) {
        if let Some(old) = self.line.take_own_path() {
            self.stale = old;
        }
    }

    fn predecessor_gone(&mut self) {
        self.flow().forget(&[Op::WatchPredecessor]);
        if self.line.predecessor_is_lowest() {
            // It was the only candidate ahead, and sequence numbers only
            // grow: nobody can have slipped in ahead since.
            self.now_lowest();
        } else {
            self.step = Step::Listing;
            self.ops.queue(Op::List);
        }
    }

    /// The own node is the lowest: confirm it is ours on this session, or,
    /// when that is already known, write the acknowledgement at once.
    fn now_lowest(&mut self) {
        // While watching, the own node was read (with a watch) in the same
        // flight as the predecessor, and found owned by this session: a
        // node of another session would have sent the candidate back in
        // line. Since then no connection was lost (a loss leaves Watching)
        // and no notification came for it (one queues a new read): nothing
        // about it can have changed, so reading it again would only cost a
        // round trip of the hand-off.
        let confirmed = self.step == Step::Watching && !self.ops.is_pending(Op::WatchOwn);
        self.flow().forget(&[Op::List, Op::WatchPredecessor]);
        if confirmed {
            self.lead();
        } else {
            self.step = Step::Confirming;
            self.ops.queue(Op::WatchOwn);
        }
    }

    fn on_confirm(&mut self, stat: Stat) {
        let ours = self.session.owns(stat.ephemeral_owner);
        match self.step {
            Step::Confirming if ours => self.lead(),
            Step::Confirming => {
                // A node of an earlier session: it is about to die with it.
                // Delete it and volunteer again on this session.
                self.retire_own();
                self.volunteer_again();
            }
            Step::Verifying if ours => self.ops.queue(Op::ReadAck),
            // Waiting: the watch is armed.
            Step::Listing | Step::Watching if ours => {}
            Step::Listing | Step::Watching => {
                self.retire_own();
                self.volunteer_again();
            }
            Step::Leading | Step::Verifying if !ours => {
                if self.leadership != Leadership::None {
                    self.lost(true, true);
                } else {
                    self.retire_own();
                    self.volunteer_again();
                }
            }
            _ => {}
        }
    }

    fn on_own_node_gone(&mut self) {
        match self.step {
            Step::Listing | Step::Watching | Step::Confirming => self.volunteer_again(),
            Step::Leading | Step::Verifying => {
                self.line.forget_own();
                self.lost(false, true);
            }
            _ => {}
        }
    }

    /// The own node is the lowest and belongs to this session: lead, and
    /// write the acknowledgement in the same instant. Nothing learnt from
    /// its answer could change who leads (the lowest node does; the
    /// acknowledgement only tells observers, and only ever names a
    /// candidate that already knows it leads), so waiting for it would only
    /// add a round trip to every hand-off. Should the write be refused,
    /// leadership is given up (`on_error`).
    fn lead(&mut self) {
        self.step = Step::Leading;
        self.leadership = Leadership::Leading;
        self.deadline = Deadline::None;
        self.ops.queue(Op::Ack);
        self.events.emit(ElectionEvent::Leading);
    }

    /// The acknowledgement names the own node.
    fn acknowledged(&mut self) {
        self.ack_replacements = 0;
        self.ack_write = AckWrite::Named;
        if self.step == Step::Verifying {
            self.step = Step::Leading;
            self.leadership = Leadership::Leading;
            self.events.emit(ElectionEvent::Resumed);
        }
    }

    fn on_ack_read(&mut self, data: &[u8], stat: Stat) {
        if !self.may_hold_ack() {
            return;
        }
        let own = self.own_node().unwrap_or("");
        if Acknowledgement::names(data, own.as_bytes()) {
            return self.acknowledged();
        }
        // Written by an earlier leader (or a lost write of one): this
        // candidate is the lowest, so that one no longer leads.
        self.replace_ack(Version::Exactly(stat.version));
    }

    /// Replaces an acknowledgement that does not name this candidate,
    /// deleting it at `version`, unless someone keeps writing it. Not with
    /// `DeleteAck`: resigning queues that one to delete the candidate's
    /// own, which a replacement still in flight must not stand for.
    fn replace_ack(&mut self, version: Version) {
        if self.ack_replacements >= MAX_ACK_REPLACEMENTS {
            return self.fail(Error::AckContended);
        }
        self.ack_replacements += 1;
        self.foreign_ack_version = version;
        self.ops.queue(Op::ReplaceAck);
        self.ops.queue(Op::Ack);
    }

    /// Writes the request for `op` into the scratch buffer and returns it.
    ///
    /// Cannot fail: every path was sized when stored (the directory and the
    /// acknowledgement in `with_flavour`, the own node's prefix in `start`,
    /// its name in `store_own`, the predecessor in `scan_name`).
    fn materialise(&mut self, op: Op) -> Request<'_> {
        match op {
            Op::Ack => Request::Create {
                path: &self.ack_path,
                data: &self.ack,
                acl: self.acl,
                mode: CreateMode::Ephemeral,
            },
            Op::ReadAck => Request::GetData {
                path: &self.ack_path,
                watch: true,
            },
            Op::ReplaceAck => Request::Delete {
                path: &self.ack_path,
                version: self.foreign_ack_version,
            },
            Op::DeleteAck => Request::Delete {
                path: &self.ack_path,
                version: Version::Any,
            },
            Op::ClearAck if self.ack_unreadable => Request::Exists {
                path: &self.ack_path,
                watch: false,
            },
            Op::ClearAck => Request::GetData {
                path: &self.ack_path,
                watch: false,
            },
            Op::DropAck => Request::Delete {
                path: &self.ack_path,
                version: Version::Exactly(self.clear_ack_version),
            },
            Op::DeleteStale => Request::Delete {
                path: &self.stale,
                version: Version::Any,
            },
            // The contender's own requests, with the candidate's data in
            // its node.
            _ => self.line.request(
                op,
                &mut self.scratch,
                self.ack.get(self.name_len + 1..).unwrap_or(&[]),
                self.acl,
            ),
        }
    }
}

/// Rewrites `ack` (`<name>\n<data>`, its name `name_len` long) to name
/// `name`, keeping the data. A function of the two fields, not a method, so
/// that the name can be borrowed from elsewhere in the candidate.
fn rename_ack<const D: usize>(
    ack: &mut Vec<u8, D>,
    name_len: &mut usize,
    name: &str,
) -> Result<(), ()> {
    let mut rebuilt: Vec<u8, D> = Vec::new();
    rebuilt.extend_from_slice(name.as_bytes())?;
    rebuilt.push(b'\n').map_err(|_| ())?;
    rebuilt.extend_from_slice(ack.get(*name_len + 1..).unwrap_or(&[]))?;
    *ack = rebuilt;
    *name_len = name.len();
    Ok(())
}

impl<const N: usize, const D: usize> ContentionFlow<N> for Election<N, D> {
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
        if self.leadership != Leadership::None {
            self.lost(true, true);
        } else {
            self.abandon(Outcome::Failed(e));
        }
    }

    /// Reports the pending outcome and returns to idle.
    fn finish(&mut self) {
        let event = self
            .give_up
            .take()
            .map_or(Some(ElectionEvent::Resigned), Outcome::event);
        self.end_with(event);
    }

    fn start_delete(&mut self) {
        self.step = Step::Deleting;
        self.flow().forget(&CAMPAIGN_READS);
        self.ops.unqueue(|op| op == Op::Ack);
        if self.ack_cleanup == AckCleanup::Clear {
            // The own node goes once the acknowledgement is settled: while
            // it exists no other candidate can lead, so an acknowledgement
            // read naming us is still ours when it is deleted.
            self.ops.queue(Op::ClearAck);
            return;
        }
        if self.ack_cleanup == AckCleanup::Delete {
            self.ops.queue(Op::DeleteAck);
        }
        self.ops.queue(Op::Delete);
    }

    fn create(&mut self) {
        self.step = Step::Creating;
        self.ops.clear_queued();
        // A node of an earlier session goes first.
        if !self.stale.is_empty() {
            self.ops.push(Op::DeleteStale);
        }
        self.ops.push(Op::Create);
        self.ops.push(Op::List);
    }

    fn find(&mut self) {
        self.step = Step::Finding;
        self.flow().queue_search();
    }

    fn placed(&mut self) {
        self.step = Step::Listing;
    }

    fn own_node_vanished(&mut self) {
        self.volunteer_again();
    }

    /// The connection is gone: stop sending until `Connected`, then resume.
    fn connection_lost(&mut self) {
        if !self.link.lose() {
            return;
        }
        if self.ops.lose().contains(&Op::Create) {
            // Sent, it may have been applied: only the GUID can tell.
            self.line.create_lost();
        }
        if self.leadership == Leadership::Leading {
            self.leadership = Leadership::Suspended {
                since: self.lost_after.map(|_| self.now),
            };
            self.events.emit(ElectionEvent::Suspended);
        }
    }

    /// The session is gone and its ephemeral nodes with it.
    fn session_ended(&mut self, how: SessionEvent) {
        self.ops.lose();
        self.link.end(how);
        let event = match self.give_up.take() {
            Some(outcome) => outcome.event(),
            None if self.step == Step::Idle => None,
            None if self.leadership != Leadership::None => Some(ElectionEvent::Lost),
            None => Some(ElectionEvent::Failed(Error::SessionEnded)),
        };
        self.end_with(event);
    }

    fn on_created(&mut self, full_path: &str) {
        self.flow().adopt_created(full_path);
    }

    fn listing_stands(&self) -> bool {
        matches!(self.step, Step::Creating | Step::Listing)
    }

    fn waits_for(&self, name: &str) -> Option<Sequence> {
        contender_sequence(NodeKind::Candidate, name)
    }

    fn on_standing(&mut self, standing: Standing) {
        if !standing.present {
            // The own node vanished (deleted by an operator): volunteer
            // again with a new node.
            return self.volunteer_again();
        }
        let lowest = standing.lowest;
        match standing.predecessor {
            None => self.now_lowest(),
            Some(Err(e)) => self.fail(Error::Path(e)),
            Some(_) if self.deadline.passed() => self.abandon(Outcome::TimedOut),
            Some(Ok(only_lower)) => {
                self.line.wait_behind(only_lower);
                self.step = Step::Watching;
                self.ops.queue(Op::WatchPredecessor);
                // In the same flight, watch the own node: if an operator
                // deletes it, that notification comes before the
                // predecessor's (one session's notifications are ordered),
                // and the candidate volunteers again at once.
                self.ops.queue(Op::WatchOwn);
                if self.leader_seen != Some(lowest) {
                    self.leader_seen = Some(lowest);
                    self.events
                        .emit(ElectionEvent::Following { leader: lowest });
                }
            }
        }
    }

    /// Writes the own node's name, just stored, into the acknowledgement;
    /// forgets the node if it does not fit.
    fn accept_own(&mut self) -> bool {
        let fits = self
            .line
            .own_name()
            .is_some_and(|name| rename_ack(&mut self.ack, &mut self.name_len, name).is_ok());
        if !fits {
            self.line.forget_own();
        }
        fits
    }
}

impl<const N: usize, const D: usize> Recipe for Election<N, D> {
    type Event = ElectionEvent;

    fn poll_request(&mut self) -> Option<Outgoing<'_>> {
        if !self.link.is_up() {
            return None;
        }
        let (id, op) = self
            .ops
            .next_creating_ancestors(ancestors::depth(self.line.dir()))?;
        let request = self.materialise(op);
        Some(Outgoing { id, request })
    }

    fn handle_reply(&mut self, now: Instant, id: RequestId, reply: Reply<'_>) {
        self.now = now;
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
            (Op::WatchPredecessor, Reply::Error(ZkError::NoNode)) => {
                if self.step == Step::Watching {
                    self.predecessor_gone();
                }
            }
            (Op::WatchOwn, Reply::Data { stat, .. }) => self.on_confirm(stat),
            (Op::WatchOwn, Reply::Error(ZkError::NoNode)) => self.on_own_node_gone(),
            (Op::Ack, Reply::Created { .. }) => {
                if self.may_hold_ack() {
                    self.acknowledged();
                    // Watch it: if someone deletes it, it is written again.
                    self.ops.queue(Op::ReadAck);
                }
            }
            (Op::Ack, Reply::Error(ZkError::NodeExists)) => {
                if self.may_hold_ack() {
                    self.ops.queue(Op::ReadAck);
                }
            }
            // The directory is gone, and the own node with it.
            (Op::Ack, Reply::Error(ZkError::NoNode)) => {
                if self.may_hold_ack() {
                    self.ops.queue(Op::WatchOwn);
                }
            }
            (Op::ReadAck, Reply::Data { data, stat }) => self.on_ack_read(data, stat),
            // Over the receive buffer, so it is no acknowledgement this
            // candidate wrote (it would fit; one of its own that did not
            // is replaced, then given up on, as one contended): replaced
            // as one naming another, whatever its version, which was not
            // read. Left as it was, it kept every embedded leader from
            // writing its own.
            (Op::ReadAck, Reply::Error(ZkError::ReplyTooLarge))
                if self.ack_write != AckWrite::Named =>
            {
                if self.may_hold_ack() {
                    self.replace_ack(Version::Any);
                }
            }
            (Op::ReadAck, Reply::Error(ZkError::NoNode)) => {
                if self.may_hold_ack() {
                    self.ops.queue(Op::Ack);
                }
            }
            (
                Op::ReplaceAck,
                Reply::Deleted | Reply::Error(ZkError::NoNode | ZkError::BadVersion),
            ) => {}
            (Op::DeleteAck, Reply::Deleted | Reply::Error(ZkError::NoNode)) => {
                self.ack_cleanup = AckCleanup::None;
            }
            (Op::ClearAck, Reply::Data { data, stat }) => {
                let name = self.ack.get(..self.name_len).unwrap_or_default();
                self.on_clear_ack_read(Acknowledgement::names(data, name), stat);
            }
            // Too large to read what it says: whether this session wrote
            // it (this candidate, then) is asked instead.
            (Op::ClearAck, Reply::Error(ZkError::ReplyTooLarge)) => {
                self.ack_unreadable = true;
                self.ops.queue(Op::ClearAck);
            }
            (Op::ClearAck, Reply::Exists { stat }) => {
                let ours = self.session.owns(stat.ephemeral_owner);
                self.on_clear_ack_read(ours, stat);
            }
            (Op::ClearAck, Reply::Error(ZkError::NoNode))
            | (Op::DropAck, Reply::Deleted | Reply::Error(ZkError::NoNode)) => self.ack_cleared(),
            // Written since the read: read again.
            (Op::DropAck, Reply::Error(ZkError::BadVersion)) => self.ops.queue(Op::ClearAck),
            // Still there: this session's node is the lowest, so the
            // acknowledgement can only be ours (or a stale one).
            (Op::CheckOwn, Reply::Exists { .. }) => {
                self.ops.queue(Op::DeleteAck);
                self.ops.queue(Op::Delete);
            }
            (Op::CheckOwn, Reply::Error(ZkError::NoNode)) => {
                self.ack_cleanup = AckCleanup::None;
                self.finish();
            }
            (Op::Delete, Reply::Deleted | Reply::Error(ZkError::NoNode)) => self.finish(),
            (Op::DeleteStale, Reply::Deleted | Reply::Error(ZkError::NoNode)) => {
                self.stale.clear();
            }
            (op, Reply::Error(e)) => self.on_error(op, e),
            // Best effort, as for its errors.
            (Op::ClearAck | Op::DropAck, _) => self.ack_cleared(),
            // An answer of the wrong shape for the request.
            (_, _) => self.fail(Error::BadReply),
        }
    }

    fn handle_watch(&mut self, now: Instant, event: WatchEvent<'_>) {
        self.now = now;
        // While disconnected, nothing is acted on: `Connected` re-checks.
        if !self.link.is_up() {
            return;
        }
        if self.step == Step::Watching && event.path == self.line.predecessor() {
            match event.kind {
                WatchKind::NodeDeleted => self.predecessor_gone(),
                // The one-shot watch is spent without the node going.
                _ => self.ops.queue(Op::WatchPredecessor),
            }
        } else if self.own_path() == Some(event.path) {
            let watched = matches!(
                self.step,
                Step::Listing | Step::Watching | Step::Confirming | Step::Leading | Step::Verifying
            );
            match event.kind {
                _ if !watched => {}
                WatchKind::NodeDeleted => self.on_own_node_gone(),
                _ => self.ops.queue(Op::WatchOwn),
            }
        } else if event.path == self.ack_path.as_str() && self.may_hold_ack() {
            match event.kind {
                WatchKind::NodeDeleted => self.ops.queue(Op::Ack),
                _ => self.ops.queue(Op::ReadAck),
            }
        }
    }

    fn handle_session(&mut self, now: Instant, event: SessionEvent) {
        self.now = now;
        match event {
            SessionEvent::Connected { session_id } => {
                let moved = self.session.connected(session_id).is_some();
                let reconnect = self.link.connected();
                if reconnect == Reconnect::New || moved {
                    self.on_new_session();
                } else if reconnect == Reconnect::Resumed {
                    self.resume();
                }
            }
            SessionEvent::Suspended => self.connection_lost(),
            SessionEvent::Expired | SessionEvent::Closed => self.session_ended(event),
        }
    }

    fn handle_timeout(&mut self, now: Instant) {
        self.now = now;
        if let Some(at) = self.suspension_deadline() {
            if now >= at {
                self.suspended_too_long();
            }
        }
        // The create's listing, or the read of the own node once lowest,
        // says where it stands.
        let deciding =
            self.link.is_up() && (self.listing_stands() || self.step == Step::Confirming);
        if self.deadline.expired(now, deciding) {
            self.abandon(Outcome::TimedOut);
        }
    }

    fn poll_timeout(&self) -> Option<Instant> {
        Instant::earliest(
            self.suspension_deadline(),
            self.deadline.poll(self.link.is_up()),
        )
    }

    fn poll_event(&mut self) -> Option<ElectionEvent> {
        self.events.pop()
    }

    fn takes_listing_in_parts(&self) -> bool {
        true
    }

    fn handle_listing_part(
        &mut self,
        now: Instant,
        id: RequestId,
        names: Children<'_>,
        last: bool,
    ) {
        self.now = now;
        self.flow().listing_part(id, names, last);
    }
}

impl<const N: usize, const D: usize> fmt::Debug for Election<N, D> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Election")
            .field("dir", &self.dir())
            .field("step", &self.step)
            .field("own", &self.own_node())
            .field("predecessor", &self.predecessor())
            .field("leadership", &self.leadership)
            .field("link", &self.link)
            .field("session", &self.session.id())
            .finish()
    }
}
