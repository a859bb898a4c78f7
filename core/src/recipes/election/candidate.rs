//! The candidate's side of a leader election.
//!
//! A candidate is a lock on the election directory whose node is named as
//! a candidate's (`-n_`) and carries the candidate's data: its [`Lock`]
//! creates the node and lists the directory in one flight, waits behind
//! the next-lower candidate, makes sure the node is the current session's
//! (CURATOR-696), suspends, verifies and deletes it; held is leading. The
//! lock's machine is the one a firmware with locks carries anyway, so an
//! election costs only what is its own, written here over the lock's
//! events and in the lock's pipeline: the acknowledgement node,
//! `Following`, the suspension clock of `set_lost_after`, and volunteering
//! again when its node turns out to be another session's.

use core::fmt;

use heapless::{String, Vec};

use super::{Acknowledgement, Error, ACK_NAME, DEFAULT_DATA_CAPACITY, DEFAULT_PATH_CAPACITY};
use crate::engine::contender_op::Op;
// The lock's requests (`ops`), where the acknowledgement's travel too.
use crate::engine::contention_flow::ContentionFlow;
use crate::engine::deadline::Deadline;
use crate::engine::event_queue::EventQueue;
use crate::lock::{GiveUp, Lock, LockEvent, LockState};
use crate::naming::{Flavour, Guid};
use crate::path;
use crate::{
    Children, CreateMode, Instant, Outgoing, Recipe, Reply, Request, RequestId, Sequence,
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
    /// Resigning while leading: its delete leaves just ahead of the own
    /// node's, in the same flight.
    Delete,
    /// Leadership ended (or a resignation's delete may be lost) while an
    /// acknowledgement naming this candidate may exist: read it and delete
    /// it, at the version read, if it still names us; the own node's
    /// delete waits for that.
    Clear,
}

/// How the end of a campaign is reported, where the election decides it
/// rather than the lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Outcome {
    Resign,
    /// Already reported (`Lost`): nothing more to say.
    Quiet,
}

/// The requests that are the election's own: the acknowledgement's.
fn is_ack_op(op: Op) -> bool {
    matches!(
        op,
        Op::Ack | Op::ReadAck | Op::ReplaceAck | Op::DeleteAck | Op::ClearAck | Op::DropAck
    )
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
    /// The candidate's node and its place in line: held is leading.
    lock: Lock<N>,
    ack_path: String<N>,
    /// The lowest candidate last reported in `Following`.
    leader_seen: Option<Sequence>,
    leadership: Leadership,
    /// How the campaign's end is reported, when the election decided it.
    outcome: Option<Outcome>,
    /// The campaign's deadline, for volunteering again.
    until: Deadline,
    /// The own node's delete waits for the acknowledgement to be settled.
    delete_held: bool,
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
    events: EventQueue<ElectionEvent, 8>,
    /// `<own name>\n<data>`; before the candidate leads, `\n<data>`.
    ack: Vec<u8, D>,
    /// Length of the own name at the start of `ack`.
    name_len: usize,
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
        let lock = Lock::candidate(dir, flavour)?;
        let mut ack_path = String::new();
        // Cannot fail: a candidate's node path in `dir` is longer, and fits.
        let _ = path::join_into(&mut ack_path, dir, ACK_NAME);
        Ok(Election {
            lock,
            ack_path,
            leader_seen: None,
            leadership: Leadership::None,
            outcome: None,
            until: Deadline::None,
            delete_held: false,
            ack_cleanup: AckCleanup::None,
            ack_write: AckWrite::Unconfirmed,
            foreign_ack_version: Version::Any,
            clear_ack_version: 0,
            ack_replacements: 0,
            ack_unreadable: false,
            lost_after: None,
            now: Instant::ZERO,
            events: EventQueue::new(),
            ack: Vec::new(),
            name_len: 0,
        })
    }

    crate::engine::acl_option::acl_option!(lock.acl);

    /// The election directory.
    ///
    /// ```
    /// # use herdless_core::election::Election;
    /// let election: Election = Election::new("/e").unwrap();
    /// assert_eq!(election.dir(), "/e");
    /// ```
    pub fn dir(&self) -> &str {
        self.lock.dir()
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
        self.lock.flavour()
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
        self.lock.own_node()
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
        self.lock.own_full_path()
    }

    /// The own node's sequence number, once known.
    ///
    /// ```
    /// # use herdless_core::election::Election;
    /// let election: Election = Election::new("/e").unwrap();
    /// assert_eq!(election.own_sequence(), None);
    /// ```
    pub fn own_sequence(&self) -> Option<Sequence> {
        self.lock.own_sequence()
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
        self.lock.predecessor()
    }

    /// The application-level state.
    ///
    /// ```
    /// # use herdless_core::election::{Election, ElectionState};
    /// let election: Election = Election::new("/e").unwrap();
    /// assert_eq!(election.state(), ElectionState::Idle);
    /// ```
    pub fn state(&self) -> ElectionState {
        match self.lock.state() {
            // Clearing an acknowledgement after the own node went.
            LockState::Idle if self.ack_cleanup != AckCleanup::None => ElectionState::Resigning,
            LockState::Idle => ElectionState::Idle,
            LockState::Acquiring => ElectionState::Campaigning,
            // `Lost` was told (a move to another session) while the lock
            // is still confirming that its node is the old session's.
            LockState::Held if self.leadership == Leadership::None => ElectionState::Resigning,
            LockState::Held => ElectionState::Leading,
            LockState::Releasing => ElectionState::Resigning,
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
        // `Leading` is reported only when the lock is held, and a lost
        // connection (or anything that ends the holding) moves it on.
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
            && (matches!(self.leadership, Leadership::Suspended { .. }) || !self.lock.is_up())
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
        if self.state() != ElectionState::Idle {
            return Err(Error::InvalidState);
        }
        // The acknowledgement must fit before anything is created (the own
        // node's path fits: the lock measured it).
        let room = D.saturating_sub(self.lock.name_len() + 1);
        if data.len() > room {
            return Err(Error::TooLarge {
                len: data.len(),
                capacity: room,
            });
        }
        self.lock.acquire_by(guid, deadline)?;
        self.ack.clear();
        let _ = self.ack.push(b'\n');
        let _ = self.ack.extend_from_slice(data);
        self.name_len = 0;
        self.until = deadline;
        self.leader_seen = None;
        self.leadership = Leadership::None;
        self.outcome = None;
        self.delete_held = false;
        self.ack_cleanup = AckCleanup::None;
        self.ack_write = AckWrite::Unconfirmed;
        self.ack_replacements = 0;
        self.ack_unreadable = false;
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
        match self.state() {
            ElectionState::Idle => return Err(Error::InvalidState),
            // Already on its way out (timed out, failed, or cleaning up
            // after a loss): report the resignation when done, unless a
            // failure is to be reported.
            ElectionState::Resigning => self.outcome = Some(Outcome::Resign),
            ElectionState::Campaigning => {
                self.outcome = Some(Outcome::Resign);
                let _ = self.lock.cancel();
            }
            ElectionState::Leading => {
                self.leadership = Leadership::None;
                self.outcome = Some(Outcome::Resign);
                self.stop_acknowledging();
                // Ahead of the own node's delete, in the same flight: while
                // that node exists no other candidate leads, so the
                // acknowledgement there is ours or a stale one.
                self.ack_cleanup = AckCleanup::Delete;
                self.lock.ops().queue(Op::DeleteAck);
                let _ = self.lock.release();
            }
        }
        self.settle();
        Ok(())
    }

    /// Leading is over: the acknowledgement's reads and writes still to
    /// come are dropped, and the answers of those in flight ignored. A
    /// create in flight lands ahead of whatever settles the
    /// acknowledgement next (one session's requests are applied in order),
    /// so that sees it.
    fn stop_acknowledging(&mut self) {
        self.lock
            .ops()
            .forget(|op| matches!(op, Op::Ack | Op::ReadAck | Op::ReplaceAck));
    }

    /// Whether the acknowledgement may exist and be this candidate's: it
    /// leads (or did when the connection went). The lock is held then:
    /// whatever ends the holding ends leadership in the same input
    /// (`settle`).
    fn may_hold_ack(&self) -> bool {
        self.leadership != Leadership::None
    }

    /// When a suspension that is being counted turns into `Lost`.
    fn suspension_deadline(&self) -> Option<Instant> {
        match (self.leadership, self.lost_after) {
            (Leadership::Suspended { since: Some(at) }, Some(limit)) => Some(at + limit),
            _ => None,
        }
    }

    /// Acts on what the lock did with the last input, and keeps the
    /// acknowledgement's rules: called at the end of every input.
    fn settle(&mut self) {
        while let Some(event) = self.lock.poll_event() {
            self.on_lock_event(event);
        }
        // The lock gave a holding up by itself (a read of the own node
        // refused, the node found on another session): it deletes its
        // node, and the acknowledgement is settled first.
        if self.leadership != Leadership::None && self.lock.state() == LockState::Releasing {
            self.lost_leadership();
        }
        if let Some(leader) = self.lock.lowest_ahead() {
            if self.leader_seen != Some(leader) {
                self.leader_seen = Some(leader);
                self.events.emit(ElectionEvent::Following { leader });
            }
        }
        if self.ack_cleanup != AckCleanup::None && self.lock.is_over() {
            // The acknowledgement died with the session.
            self.ack_cleared();
        }
        if self.ack_cleanup == AckCleanup::Clear {
            if self.lock.ops().is_queued(Op::Delete) {
                self.lock.ops().unqueue(|op| op == Op::Delete);
                self.delete_held = true;
            }
            // Behind a no-op write, as a search by GUID is
            // (`engine::catch_up`): the acknowledgement's create or delete
            // may have been answered on a lost connection, so the client
            // has not seen it, and a server it reconnected to may not have
            // applied it yet. A read behind a write of this session shows
            // it.
            let ops = self.lock.ops();
            if !(ops.is_pending(Op::ClearAck) || ops.is_pending(Op::DropAck)) {
                ops.queue(Op::CatchUp);
                ops.queue(Op::ClearAck);
            }
        }
    }

    fn on_lock_event(&mut self, event: LockEvent) {
        let said = match event {
            LockEvent::Acquired => return self.lead(),
            LockEvent::Suspended => {
                if self.leadership == Leadership::Leading {
                    self.events.emit(ElectionEvent::Suspended);
                }
                if self.leadership != Leadership::None {
                    self.leadership = Leadership::Suspended {
                        since: self.lost_after.map(|_| self.now),
                    };
                }
                return;
            }
            // The own node is confirmed the session's again; the
            // acknowledgement is read before `Resumed`.
            LockEvent::Resumed => return self.lock.ops().queue(Op::ReadAck),
            LockEvent::Lost if self.leadership != Leadership::None => {
                return self.lost_leadership();
            }
            // The end of a holding whose loss was told already.
            LockEvent::Lost => ElectionEvent::Lost,
            LockEvent::RevocationRequested => return,
            LockEvent::Released | LockEvent::NotAcquired(GiveUp::Cancelled) => {
                ElectionEvent::Resigned
            }
            LockEvent::NotAcquired(_) => ElectionEvent::TimedOut,
            // The own node turned out another session's (an earlier one
            // of this client, or an operator's node put in its place) and
            // was deleted: volunteer again on this session, under a new
            // GUID (CURATOR-696, CURATOR-498). After a true end of the
            // session, the campaign has failed.
            LockEvent::Failed(Error::SessionEnded)
                if self.outcome.is_none() && !self.lock.is_over() =>
            {
                if self.lock.acquire_again(self.until).is_ok() {
                    return;
                }
                ElectionEvent::Failed(Error::SessionEnded)
            }
            LockEvent::Failed(e) => {
                // A failure is reported even over a resignation; after
                // `Lost`, nothing is.
                if self.outcome == Some(Outcome::Quiet) {
                    return;
                }
                self.outcome = None;
                ElectionEvent::Failed(e)
            }
        };
        match self.outcome.take() {
            Some(Outcome::Quiet) => {}
            Some(Outcome::Resign) => self.events.emit(ElectionEvent::Resigned),
            None => self.events.emit(said),
        }
    }

    /// The own node is the lowest and belongs to this session: lead, and
    /// write the acknowledgement in the same instant. Nothing learnt from
    /// its answer could change who leads (the lowest node does; the
    /// acknowledgement only tells observers, and only ever names a
    /// candidate that already knows it leads), so waiting for it would only
    /// add a round trip to every hand-off. Should the write be refused,
    /// leadership is given up.
    fn lead(&mut self) {
        let name = self.lock.own_node().unwrap_or("");
        // Fits: `start` measured the longest name.
        let _ = rename_ack(&mut self.ack, &mut self.name_len, name);
        self.leadership = Leadership::Leading;
        self.ack_write = AckWrite::Unconfirmed;
        self.ack_replacements = 0;
        self.lock.ops().queue(Op::Ack);
        self.events.emit(ElectionEvent::Leading);
    }

    /// Leadership is gone: say so at once. An acknowledgement naming us
    /// would tell observers we lead until the session dies (forever,
    /// without another candidate): it is read and deleted if it still
    /// names us, before the own node's delete (`settle`), unless it goes
    /// with the session (an expiry, `settle`, or a move to another,
    /// `handle_session`). With the own node still there, nobody else can
    /// have replaced it in between. With the own node gone, a successor may
    /// replace it between the read and the delete, and all acknowledgements
    /// have version 0: the delete may then remove the successor's, whose
    /// watch makes it write it again at once; it never makes anyone believe
    /// a candidate leads that does not.
    fn lost_leadership(&mut self) {
        if self.leadership == Leadership::None {
            return;
        }
        self.events.emit(ElectionEvent::Lost);
        self.leadership = Leadership::None;
        self.outcome = Some(Outcome::Quiet);
        self.stop_acknowledging();
        self.ack_cleanup = AckCleanup::Clear;
    }

    /// Leadership given up by the election itself (an acknowledgement it
    /// may not write, or suspended too long): `Lost`, then the
    /// acknowledgement and the own node deleted.
    fn give_up_leading(&mut self) {
        self.lost_leadership();
        let _ = self.lock.release();
    }

    /// No acknowledgement names this candidate any more (or trying to
    /// delete it failed): go on with the own node.
    fn ack_cleared(&mut self) {
        self.ack_cleanup = AckCleanup::None;
        self.ack_unreadable = false;
        if core::mem::take(&mut self.delete_held) {
            if self.lock.state() == LockState::Releasing {
                self.lock.ops().queue(Op::Delete);
            }
        } else if self.lock.state() == LockState::Idle {
            if let Some(Outcome::Resign) = self.outcome.take() {
                self.events.emit(ElectionEvent::Resigned);
            }
        }
    }

    /// The acknowledgement read after a loss: delete it if it is this
    /// candidate's (`ours`, at the version read), else leave it to its
    /// writer.
    fn on_clear_ack_read(&mut self, ours: bool, stat: Stat) {
        if ours {
            self.clear_ack_version = stat.version;
            self.lock.ops().queue(Op::DropAck);
        } else {
            self.ack_cleared();
        }
    }

    /// The acknowledgement names the own node.
    fn acknowledged(&mut self) {
        self.ack_replacements = 0;
        self.ack_write = AckWrite::Named;
        if matches!(self.leadership, Leadership::Suspended { .. }) && self.lock.is_held() {
            self.leadership = Leadership::Leading;
            self.events.emit(ElectionEvent::Resumed);
        }
    }

    /// Whether an acknowledgement's `data` names this candidate (as it
    /// named itself when it led last).
    fn named_by(&self, data: &[u8]) -> bool {
        Acknowledgement::names(data, self.ack.get(..self.name_len).unwrap_or_default())
    }

    fn on_ack_read(&mut self, data: &[u8], stat: Stat) {
        if self.named_by(data) {
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
            return self.give_up_leading();
        }
        self.ack_replacements += 1;
        self.foreign_ack_version = version;
        self.lock.ops().queue(Op::ReplaceAck);
        self.lock.ops().queue(Op::Ack);
    }

    /// An answer to one of the acknowledgement's requests.
    fn on_ack_reply(&mut self, op: Op, reply: Reply<'_>) {
        if let Some(e) = reply
            .error()
            .filter(|e| e.is_connection_loss() || e.is_session_gone())
        {
            return self.lock.lose_with(e);
        }
        // The acknowledgement's own requests are answered only while
        // leading: leadership's end forgets them (`stop_acknowledging`).
        match (op, reply) {
            (Op::Ack, Reply::Created { .. }) => {
                self.acknowledged();
                // Watch it: if someone deletes it, it is written again.
                self.lock.ops().queue(Op::ReadAck);
            }
            (Op::Ack, Reply::Error(ZkError::NodeExists)) => {
                self.lock.ops().queue(Op::ReadAck);
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
                self.replace_ack(Version::Any);
            }
            (Op::ReadAck, Reply::Error(ZkError::NoNode)) => {
                self.lock.ops().queue(Op::Ack);
            }
            (Op::ClearAck, Reply::Data { data, stat }) => {
                self.on_clear_ack_read(self.named_by(data), stat);
            }
            // Too large to read what it says: whether this session wrote
            // it (this candidate, then) is asked instead.
            (Op::ClearAck, Reply::Error(ZkError::ReplyTooLarge)) => {
                self.ack_unreadable = true;
                self.lock.ops().queue(Op::ClearAck);
            }
            (Op::ClearAck, Reply::Exists { stat }) => {
                let ours = self.lock.owns(stat.ephemeral_owner);
                self.on_clear_ack_read(ours, stat);
            }
            // Written since the read: read again.
            (Op::DropAck, Reply::Error(ZkError::BadVersion)) => {
                self.lock.ops().queue(Op::ClearAck);
            }
            // Settled, or best effort: the acknowledgement dies with the
            // session.
            (Op::ClearAck | Op::DropAck | Op::DeleteAck, _) => self.ack_cleared(),
            // A foreign one replaced (or someone else did).
            (Op::ReplaceAck, _) => {}
            // Once written, keeping it is best effort: who leads does not
            // depend on it.
            (_, Reply::Error(_)) if self.ack_write == AckWrite::Named => {}
            // Refused (an ACL; `NoNode`: the directory is gone, and the
            // own node with it), or an answer of the wrong shape: leading
            // without an acknowledgement is not leading.
            _ => self.give_up_leading(),
        }
    }

    /// The request for `op`: the acknowledgement's, or the lock's with the
    /// candidate's data in its node.
    fn materialise(&mut self, op: Op) -> Request<'_> {
        let path = self.ack_path.as_str();
        match op {
            Op::Ack => Request::Create {
                path,
                data: &self.ack,
                acl: self.lock.acl,
                mode: CreateMode::Ephemeral,
            },
            Op::ReadAck => Request::GetData { path, watch: true },
            Op::ReplaceAck => Request::Delete {
                path,
                version: self.foreign_ack_version,
            },
            Op::DeleteAck => Request::Delete {
                path,
                version: Version::Any,
            },
            Op::ClearAck if self.ack_unreadable => Request::Exists { path, watch: false },
            Op::ClearAck => Request::GetData { path, watch: false },
            Op::DropAck => Request::Delete {
                path,
                version: Version::Exactly(self.clear_ack_version),
            },
            _ => self
                .lock
                .request(op, self.ack.get(self.name_len + 1..).unwrap_or(&[])),
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

impl<const N: usize, const D: usize> Recipe for Election<N, D> {
    type Event = ElectionEvent;

    fn poll_request(&mut self) -> Option<Outgoing<'_>> {
        let (id, op) = self.lock.next_op()?;
        let request = self.materialise(op);
        Some(Outgoing { id, request })
    }

    fn handle_reply(&mut self, now: Instant, id: RequestId, reply: Reply<'_>) {
        self.now = now;
        match self.lock.ops().op_of(id) {
            Some(op) if is_ack_op(op) => {
                self.lock.ops().take(id);
                self.on_ack_reply(op, reply);
            }
            _ => self.lock.handle_reply(now, id, reply),
        }
        self.settle();
    }

    fn handle_watch(&mut self, now: Instant, event: WatchEvent<'_>) {
        self.now = now;
        if event.path != self.ack_path.as_str() {
            self.lock.handle_watch(now, event);
        } else if self.lock.is_up() && self.may_hold_ack() {
            let op = match event.kind {
                WatchKind::NodeDeleted => Op::Ack,
                _ => Op::ReadAck,
            };
            self.lock.ops().queue(op);
        }
        self.settle();
    }

    fn handle_session(&mut self, now: Instant, event: SessionEvent) {
        self.now = now;
        let was_up = self.lock.is_up();
        let before = self.lock.session_id();
        self.lock.handle_session(now, event);
        if let SessionEvent::Connected { session_id } = event {
            // A reconnect stops counting the suspension towards
            // `lost_after`: the checks after it decide.
            if let Leadership::Suspended { since } = &mut self.leadership {
                *since = None;
            }
            if before.is_some_and(|id| id != session_id) {
                // The own node and the acknowledgement belong to the old
                // session: a leader has lost (at once: no check can give
                // it back), the lock deletes the node, and the
                // acknowledgement is left to die with the session (every
                // leader writes it at version 0 under one name, so a
                // delete of "ours" could land after the old session ended
                // and a successor wrote its own).
                self.lost_leadership();
                self.ack_write = AckWrite::Unconfirmed;
                if self.ack_cleanup != AckCleanup::None {
                    self.ack_cleared();
                }
            } else if !was_up && self.ack_cleanup == AckCleanup::Delete {
                // The acknowledgement's delete may or may not have landed,
                // and the lock sends the node's again: if the node went,
                // a successor's acknowledgement may be there now. Look
                // before deleting it.
                self.ack_cleanup = AckCleanup::Clear;
            }
        }
        self.settle();
    }

    fn handle_timeout(&mut self, now: Instant) {
        self.now = now;
        if self.suspension_deadline().is_some_and(|at| now >= at) {
            // Suspended for longer than the session timeout: the session is
            // expired whether or not the client hears so. Should the same
            // session come back after all, the node and the
            // acknowledgement are still ours, and go.
            self.give_up_leading();
        }
        self.lock.handle_timeout(now);
        self.settle();
    }

    fn poll_timeout(&self) -> Option<Instant> {
        Instant::earliest(self.suspension_deadline(), self.lock.poll_timeout())
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
        self.lock.handle_listing_part(now, id, names, last);
        self.settle();
    }
}

impl<const N: usize, const D: usize> fmt::Debug for Election<N, D> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Election")
            .field("dir", &self.dir())
            .field("state", &self.state())
            .field("own", &self.own_node())
            .field("predecessor", &self.predecessor())
            .field("leadership", &self.leadership)
            .field("lock", &self.lock)
            .finish()
    }
}
