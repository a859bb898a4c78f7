//! The double barrier of the recipes page: processes enter together once
//! enough have arrived, and leave together once all are done.
//!
//! **Enter**: in one flight, create the own ephemeral node `<b>/<name>`,
//! read its stat (`exists`), watch `<b>/ready` with `exists`, and list `<b>`.
//! If the listing holds the chosen number of processes, create `<b>/ready`
//! (or, if it exists, write it); otherwise wait for the watch, so nobody
//! wakes before the count is reached. (`exists` on a missing node leaves a
//! creation watch: here that is the point, and the creation of `ready`
//! spends it.)
//!
//! **Which `ready` counts.** A `ready` can outlive its round: every process
//! died inside, or the last one out lost its session between deleting its
//! own node and `ready`. So `ready` opens the barrier for a process only if
//! it was created or last written *after* that process's own node was
//! created (`ready.mzxid > own.czxid`, zxids being the server's total
//! order). Every write of `ready` follows a listing, taken after the
//! writer's own node was created, that held the count: so a `ready` this
//! fresh proves the count was reached while this process was there. An
//! older `ready` is ignored; the process that completes the count finds it
//! (`NodeExists`) and writes it, which fires the data watch every waiter set
//! on it, and they read it again, now fresh. Every notification about
//! `ready`, a creation too, is only a reason to read it again: the watch may
//! be older than the own node, whose create may still be in flight.
//!
//! **Leave**, with the recipe's optimisation: list `<b>` (behind a no-op
//! write, so that a server behind the quorum cannot leave out a process
//! that entered the open barrier late); no process nodes
//! left: done; only the own: delete it, done; the own is the lowest: wait on
//! the highest; otherwise delete the own and wait on the lowest; list again
//! when the watched node goes. Each deletion wakes one process, except the
//! last. Names order processes (they are unique in the barrier); the last
//! to leave deletes `ready`, so the barrier can be used again once everyone
//! has left. A process whose own node is gone (or going, in the same
//! flight) also checks `ready`, with a watch: once it is gone, the round is
//! over, and the nodes it listed or waits on may be the next round's
//! (processes that left and entered again under the same names between its
//! reads), which it must not wait for.
//!
//! A process that dies inside the barrier does not block the others: its
//! ephemeral node goes with its session, and whoever waited on it lists
//! again.
//!
//! **A fleet's listing.** Each listing is read in one pass (the count, the
//! own node, the lowest and highest names), which the recipe keeps between
//! the parts of a listing handed over in parts
//! ([`Recipe::takes_listing_in_parts`]): on herdless-embassy the receive
//! buffer then bounds the length of a name, not the number of processes.

mod roll_call;

use core::fmt;

use heapless::String;

use self::roll_call::RollCall;

use crate::engine::ancestors;
use crate::engine::catch_up;
use crate::engine::deadline::Deadline;
use crate::engine::event_queue::EventQueue;
use crate::engine::link::{Link, Reconnect};
use crate::engine::pipeline::Pipeline;
use crate::engine::sessions::Sessions;
use crate::path::{self, PathError};
use crate::{
    Acl, Children, CreateMode, Error, Instant, Outgoing, Recipe, Reply, Request, RequestId,
    SessionEvent, Version, WatchEvent, WatchKind, ZkError,
};

/// Default capacity, in bytes, of the paths a [`DoubleBarrier`] keeps.
pub const DEFAULT_PATH_CAPACITY: usize = 128;

/// Name of the node that opens the barrier; no process may use it.
pub const READY: &str = "ready";

/// What the double barrier tells the application.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum DoubleBarrierEvent {
    /// Enough processes arrived: the computation may start.
    Entered,
    /// Every process has left: the computation is over everywhere.
    Left,
    /// The session ended while inside: this process's node is gone, the
    /// others no longer wait for it.
    Lost,
    /// Entering or leaving failed. The own node was deleted first (unless
    /// it is another session's: [`Error::NameTaken`]), so the others
    /// neither count this process nor wait for it to leave.
    Failed(Error),
    /// The deadline of [`enter_until`](DoubleBarrier::enter_until) or
    /// [`leave_until`](DoubleBarrier::leave_until) passed first; the own
    /// node was deleted first, as for `Failed`.
    TimedOut,
    /// [`cancel`](DoubleBarrier::cancel) withdrew this process; the own
    /// node was deleted first, as for `Failed`.
    Cancelled,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    Idle,
    Entering,
    Inside,
    Leaving,
    /// Entering or leaving was given up (failed, timed out or
    /// cancelled): the own node goes before this event is reported.
    Abandoning(DoubleBarrierEvent),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Ensure(u8),
    /// exists on `ready` with a watch.
    WatchReady,
    /// exists on `ready` without a watch, after a notification: a watch
    /// set again only if needed (one left on an opening `ready` would fire
    /// for nothing when it is deleted).
    StatReady,
    CreateOwn,
    /// exists on the own node, for its czxid.
    StatOwn,
    List,
    CreateReady,
    /// setData on a `ready` that was already there (maybe of an earlier
    /// round), once the count is reached.
    RefreshReady,
    DeleteOwn,
    DeleteReady,
    /// exists on `ready` while leaving with the own node gone: absent, the
    /// round is over (its last process deleted it after everyone else's
    /// node), whatever nodes the next round has made since.
    ReadyGone,
    /// getData with a watch on the process node being waited for.
    WatchOther,
    /// The no-op write ahead of a leave's first listing (see
    /// `engine::catch_up`).
    CatchUp,
}

ancestors::ancestor_op!(Op);

/// One process of a double barrier.
///
/// ```
/// use herdless_core::double_barrier::{DoubleBarrier, DoubleBarrierEvent};
/// use herdless_core::{Children, Recipe, Reply, Stat, ZkError};
/// let now = herdless_core::Instant::ZERO; // the driver's clock
///
/// let mut p: DoubleBarrier = DoubleBarrier::new("/barriers/job-7", "worker-1").unwrap();
/// p.enter(1).unwrap();
/// let create = p.poll_request().unwrap().id;  // the own node
/// let stat = p.poll_request().unwrap().id;    // its czxid
/// let watch = p.poll_request().unwrap().id;   // exists(ready, watch)
/// let list = p.poll_request().unwrap().id;    // who is here
/// p.handle_reply(now, create, Reply::Created { path: "/barriers/job-7/worker-1" });
/// p.handle_reply(now, stat, Reply::Exists { stat: Stat { czxid: 9, ..Stat::default() } });
/// p.handle_reply(now, watch, Reply::Error(ZkError::NoNode));
/// let names = ["worker-1"];
/// p.handle_reply(now, list, Reply::Children(Children::new(&&names[..])));
/// let ready = p.poll_request().unwrap().id;   // the count is reached: open
/// p.handle_reply(now, ready, Reply::Created { path: "/barriers/job-7/ready" });
/// assert_eq!(p.poll_event(), Some(DoubleBarrierEvent::Entered));
/// ```
pub struct DoubleBarrier<const N: usize = DEFAULT_PATH_CAPACITY> {
    dir: String<N>,
    own: String<N>,
    ops: Pipeline<Op, 8, 8>,
    step: Step,
    /// When entering or leaving gives up.
    deadline: Deadline,
    count: u32,
    /// The process node being waited for while leaving (a name).
    other: String<N>,
    /// The listing being read, whole or in parts.
    roll_call: RollCall<N>,
    /// The own node's creation zxid, once read: a `ready` not written
    /// since is of an earlier round.
    own_czxid: Option<i64>,
    /// A watched `exists` on this connection found no `ready` after the
    /// own czxid was read: a creation notified since is of this round (a
    /// notification never comes after a reply the server sent later).
    absent_since_own: bool,
    /// The sessions told: the own node must be the current one's, or an
    /// earlier one's that the server has not expired yet.
    sessions: Sessions,
    link: Link,
    events: EventQueue<DoubleBarrierEvent, 4>,
    scratch: String<N>,
    /// The ACL of every node it creates.
    acl: Acl<'static>,
}

impl<const N: usize> DoubleBarrier<N> {
    /// Process `name` of the double barrier at `dir`.
    pub fn new(dir: &str, name: &str) -> Result<Self, PathError> {
        path::validate(dir)?;
        path::validate_name(name)?;
        if name == READY || dir == "/" {
            return Err(PathError::BadName);
        }
        // Every path built later must fit: `<dir>/<name>` and `<dir>/ready`
        // and `<dir>/<any other process>` of the same length budget.
        let mut own = String::new();
        path::concat_into(&mut own, &[name])?;
        let _probe: String<N> = path::join(dir, name)?;
        let _ready: String<N> = path::join(dir, READY)?;
        let mut stored = String::new();
        path::concat_into(&mut stored, &[dir])?;
        Ok(DoubleBarrier {
            acl: Acl::OPEN,
            dir: stored,
            own,
            ops: Pipeline::new(),
            step: Step::Idle,
            deadline: Deadline::None,
            count: 0,
            other: String::new(),
            roll_call: RollCall::default(),
            own_czxid: None,
            absent_since_own: false,
            sessions: Sessions::default(),
            link: Link::Up,
            events: EventQueue::new(),
            scratch: String::new(),
        })
    }

    crate::engine::acl_option::acl_option!();

    /// This process's name.
    pub fn name(&self) -> &str {
        &self.own
    }

    /// Whether this process has entered and not yet left.
    pub fn is_inside(&self) -> bool {
        self.step == Step::Inside
    }

    /// Whether nothing is in progress.
    pub fn is_idle(&self) -> bool {
        self.step == Step::Idle
    }

    /// The process node this process waits for while leaving.
    pub fn waiting_for(&self) -> Option<&str> {
        (self.step == Step::Leaving && !self.other.is_empty()).then_some(self.other.as_str())
    }

    /// Enters, waiting until `count` processes have;
    /// [`DoubleBarrierEvent::Entered`] follows. A `count` of 0 counts as
    /// 1 (this process alone), which enters at once, as Curator's and
    /// Kazoo's double barriers do.
    pub fn enter(&mut self, count: u32) -> Result<(), Error> {
        self.start_entering(count, Deadline::None)
    }

    /// Enters as [`enter`](Self::enter) does, giving up at `deadline`:
    /// the own node is deleted, then [`DoubleBarrierEvent::TimedOut`]. The
    /// answers awaited when the deadline passes decide first, so a count
    /// already reached enters even with a deadline shorter than the round
    /// trips, and a process that is opening the barrier for the others
    /// enters with them.
    ///
    /// A process that gives up as the count is reached may have been
    /// counted by one that read the directory just before its node went:
    /// the others enter and this one does not (no timed barrier can rule
    /// that out). What cannot happen is Curator's CURATOR-318, a later
    /// process counting one that gave up long before.
    pub fn enter_until(&mut self, count: u32, deadline: Instant) -> Result<(), Error> {
        self.start_entering(count, Deadline::At(deadline))
    }

    fn start_entering(&mut self, count: u32, deadline: Deadline) -> Result<(), Error> {
        if self.step != Step::Idle {
            return Err(Error::InvalidState);
        }
        if !self.link.accepts_work() {
            return Err(Error::SessionEnded);
        }
        self.count = count.max(1);
        self.deadline = deadline;
        self.step = Step::Entering;
        self.own_czxid = None;
        self.absent_since_own = false;
        self.queue_enter();
        Ok(())
    }

    /// Leaves, waiting until every process has;
    /// [`DoubleBarrierEvent::Left`] follows.
    pub fn leave(&mut self) -> Result<(), Error> {
        self.start_leaving(Deadline::None)
    }

    /// Leaves as [`leave`](Self::leave) does, giving up waiting for the
    /// others at `deadline`: the own node is deleted (so nobody waits for
    /// this process any more), then [`DoubleBarrierEvent::TimedOut`].
    pub fn leave_until(&mut self, deadline: Instant) -> Result<(), Error> {
        self.start_leaving(Deadline::At(deadline))
    }

    fn start_leaving(&mut self, deadline: Deadline) -> Result<(), Error> {
        if self.step != Step::Inside {
            return Err(Error::InvalidState);
        }
        self.deadline = deadline;
        self.step = Step::Leaving;
        self.other.clear();
        self.queue_leave();
        Ok(())
    }

    /// Withdraws from the barrier: the own node is deleted, then
    /// [`DoubleBarrierEvent::Cancelled`]. While entering, the enter is
    /// given up; a process that cancels as the count is reached may have
    /// been counted, as with a deadline ([`enter_until`](Self::enter_until)).
    /// Inside or leaving, the process goes without waiting for the others,
    /// and nobody waits for it. Refused when idle; nothing more to do
    /// while already giving up.
    pub fn cancel(&mut self) -> Result<(), Error> {
        match self.step {
            Step::Entering | Step::Inside | Step::Leaving => {
                self.abandon(DoubleBarrierEvent::Cancelled);
                Ok(())
            }
            Step::Abandoning(_) => Ok(()),
            Step::Idle => Err(Error::InvalidState),
        }
    }

    /// What an answer to `op`, sent as `id`, means.
    fn on_reply(&mut self, id: RequestId, op: Op, reply: Reply<'_>) {
        match (op, reply) {
            (Op::Ensure(_), Reply::Created { .. } | Reply::Error(ZkError::NodeExists)) => {}
            // The listing behind it answers either way.
            (Op::CatchUp, Reply::Checked | Reply::Error(ZkError::NoNode)) => {}
            // `ready` exists: the barrier is open if it is of this round.
            (Op::WatchReady, Reply::Exists { stat }) => self.on_ready(stat.mzxid),
            (Op::WatchReady, Reply::Error(ZkError::NoNode)) => {
                self.absent_since_own = self.own_czxid.is_some();
            }
            // Read after a notification: if it does not open the barrier,
            // watch it again. A `WatchReady` still pending was sent after
            // this read, so its answer is as fresh.
            (Op::StatReady, Reply::Exists { stat }) => {
                self.on_ready(stat.mzxid);
                if self.step == Step::Entering {
                    self.ops.queue(Op::WatchReady);
                }
            }
            (Op::StatReady, Reply::Error(ZkError::NoNode)) => self.ops.queue(Op::WatchReady),
            (Op::CreateOwn, Reply::Created { .. } | Reply::Error(ZkError::NodeExists)) => {}
            (Op::StatOwn, Reply::Exists { stat }) => {
                if self.step == Step::Entering {
                    // Another session's node of this name (a process name
                    // given twice): counting it as ours would count one
                    // process for two. The node of this process's earlier
                    // session, which the server has not expired yet, is
                    // counted as before.
                    let owner = stat.ephemeral_owner;
                    let foreign = |id| owner != id && !self.sessions.is_earlier(owner);
                    if self.sessions.current().is_some_and(foreign) {
                        return self.finish(DoubleBarrierEvent::Failed(Error::NameTaken));
                    }
                    self.own_czxid = Some(stat.czxid);
                }
            }
            // The create failed: its answer decided what follows.
            (Op::StatOwn, Reply::Error(ZkError::NoNode)) => {}
            // The barrier directory is missing: create it, then everything
            // of the enter again, in order.
            (Op::CreateOwn, Reply::Error(ZkError::NoNode)) if self.step == Step::Entering => {
                self.ops.forget(|op| {
                    matches!(op, Op::StatOwn | Op::WatchReady | Op::StatReady | Op::List)
                });
                self.ops.queue(Op::Ensure(1));
                self.ops.push(Op::CreateOwn);
                self.ops.push(Op::StatOwn);
                self.ops.push(Op::WatchReady);
                self.ops.push(Op::List);
            }
            (Op::List, Reply::Children(children)) => self.on_listing(id, children, true),
            (Op::List, Reply::Error(ZkError::NoNode)) => {
                if self.step == Step::Leaving {
                    self.finish(DoubleBarrierEvent::Left);
                }
            }
            (Op::CreateReady, Reply::Created { .. }) => self.entered(),
            // Maybe of an earlier round, and maybe watched by processes
            // that ignored it: write it, which wakes them.
            (Op::CreateReady, Reply::Error(ZkError::NodeExists)) => {
                if self.step == Step::Entering {
                    self.ops.queue(Op::RefreshReady);
                }
            }
            (Op::RefreshReady, Reply::DataSet { .. }) => self.entered(),
            (Op::RefreshReady, Reply::Error(ZkError::NoNode)) => {
                if self.step == Step::Entering {
                    self.ops.queue(Op::CreateReady);
                }
            }
            (Op::DeleteOwn, Reply::Deleted | Reply::Error(ZkError::NoNode)) => {
                if let Step::Abandoning(event) = self.step {
                    self.finish(event);
                }
            }
            (Op::DeleteReady, Reply::Deleted | Reply::Error(ZkError::NoNode)) => {
                self.finish(DoubleBarrierEvent::Left)
            }
            (Op::ReadyGone, Reply::Error(ZkError::NoNode)) => {
                if self.step == Step::Leaving {
                    self.finish(DoubleBarrierEvent::Left);
                }
            }
            (Op::ReadyGone, Reply::Exists { .. }) => {}
            // Still there: wait for its deletion. Also when its data is
            // too large for an embedded driver's buffer: the server read
            // it, and set the watch.
            (Op::WatchOther, Reply::Data { .. } | Reply::Error(ZkError::ReplyTooLarge)) => {}
            (Op::WatchOther, Reply::Error(ZkError::NoNode)) => self.ops.queue(Op::List),
            (_, Reply::Error(e)) if e.is_connection_loss() => self.lost(),
            (_, Reply::Error(e)) if e.is_session_gone() => {
                self.link.end(SessionEvent::Expired);
                self.lost();
            }
            (_, Reply::Error(e)) => self.fail(Error::Zk(e)),
            (_, _) => self.fail(Error::BadReply),
        }
    }

    /// The enter flight, in this order: the own node's czxid is known when
    /// the answer about `ready` comes.
    fn queue_enter(&mut self) {
        self.ops.queue(Op::CreateOwn);
        self.ops.queue(Op::StatOwn);
        self.ops.queue(Op::WatchReady);
        self.ops.queue(Op::List);
    }

    /// The leave's listing, behind a no-op write: a process that entered
    /// the open barrier after this one last read the tree would otherwise
    /// be missing from a listing served by a server behind the quorum, and
    /// this process would finish leaving while it is inside. (The enter's
    /// listing needs none: the own create ahead of it is a write.)
    fn queue_leave(&mut self) {
        self.ops.queue(Op::CatchUp);
        self.ops.queue(Op::List);
    }

    /// `ready` as read: it opens the barrier only if written after the own
    /// node was created (see the module docs).
    fn on_ready(&mut self, mzxid: i64) {
        if self.own_czxid.is_some_and(|own| mzxid > own) {
            self.entered();
        }
    }

    fn finish(&mut self, event: DoubleBarrierEvent) {
        self.step = Step::Idle;
        self.deadline = Deadline::None;
        self.ops.clear();
        self.other.clear();
        self.events.emit(event);
    }

    /// Entering or leaving failed. The own node goes first (CURATOR-80):
    /// left until the session ends, the others would count a process that
    /// gave up (CURATOR-318, where a late process entered "with" two that
    /// had timed out) and wait for it to leave.
    fn fail(&mut self, e: Error) {
        match self.step {
            Step::Entering | Step::Leaving => self.abandon(DoubleBarrierEvent::Failed(e)),
            // The delete itself failed: the node goes with the session.
            Step::Abandoning(first) => self.finish(first),
            Step::Idle | Step::Inside => self.finish(DoubleBarrierEvent::Failed(e)),
        }
    }

    /// Gives entering or leaving up: the own node goes, then `event`.
    fn abandon(&mut self, event: DoubleBarrierEvent) {
        self.ops.clear();
        self.other.clear();
        self.deadline = Deadline::None;
        self.step = Step::Abandoning(event);
        self.ops.queue(Op::DeleteOwn);
    }

    /// A deadline that passed while answers were awaited gives up once
    /// they are in and did not decide.
    fn after_last_look(&mut self) {
        if self.deadline.passed() && self.ops.is_empty() {
            self.abandon(DoubleBarrierEvent::TimedOut);
        }
    }

    fn entered(&mut self) {
        if self.step == Step::Entering {
            self.step = Step::Inside;
            self.deadline = Deadline::None;
            self.ops.forget(|op| {
                matches!(
                    op,
                    Op::List
                        | Op::StatOwn
                        | Op::WatchReady
                        | Op::StatReady
                        | Op::CreateReady
                        | Op::RefreshReady
                )
            });
            self.events.emit(DoubleBarrierEvent::Entered);
        }
    }

    /// Names of the listing `id`, the whole of it or a part: read into
    /// the roll call, which a new `id` starts afresh, and acted on after
    /// the last.
    fn on_listing(&mut self, id: RequestId, names: Children<'_>, last: bool) {
        self.roll_call.reading(id);
        self.roll_call.take(names, &self.own);
        if last {
            self.on_roll_call();
        }
    }

    /// What the listing, all of it read, shows (see [`RollCall`]).
    fn on_roll_call(&mut self) {
        let call = core::mem::take(&mut self.roll_call);
        match self.step {
            Step::Entering => {
                if !call.own_present {
                    // Our create has not landed (a lost answer resent): the
                    // listing that follows it decides.
                    return;
                }
                if call.count >= self.count {
                    self.ops.queue(Op::CreateReady);
                }
            }
            Step::Leaving => {
                let others = call.count - u32::from(call.own_present);
                if call.count == 0 {
                    return self.last_out(false);
                }
                if call.own_present && others == 0 {
                    return self.last_out(true);
                }
                let target = if call.own_present && call.own_is_lowest(&self.own) {
                    call.highest
                } else {
                    if call.own_present {
                        self.ops.queue(Op::DeleteOwn);
                    }
                    // With the own node gone, the round can end without
                    // this process: the others listed, or the one read to
                    // wait on, may already be the next round's, made by
                    // processes that left and entered again under the same
                    // names. The round ends when `ready` goes: look, and
                    // watch it.
                    self.ops.queue(Op::ReadyGone);
                    call.lowest
                };
                let Some(target) = target else {
                    return;
                };
                // A name written by another client may not fit our paths:
                // say so rather than wait on a truncated name.
                if let Err(e) = target.join_into(&mut self.scratch, &self.dir) {
                    return self.fail(Error::Path(e));
                }
                self.other.clear();
                // Its full path fits in `N`, so the name alone does.
                let _ = self.other.push_str(path::basename(&self.scratch));
                self.ops.queue(Op::WatchOther);
            }
            _ => {}
        }
    }

    /// Nobody else is left: delete the own node if still there, and
    /// `ready` so the barrier can be used again.
    fn last_out(&mut self, own_present: bool) {
        if own_present {
            self.ops.queue(Op::DeleteOwn);
        }
        self.ops.queue(Op::DeleteReady);
    }

    fn lost(&mut self) {
        self.link.lose();
        // A reconnect may fire the watch for a creation of any time.
        self.absent_since_own = false;
        self.ops.lose();
    }

    fn resync(&mut self) {
        self.ops.clear_queued();
        match self.step {
            Step::Idle => {}
            // The own create is idempotent (NodeExists counts as done). A
            // new session creates the node anew: the czxid read before may
            // be older, and would let an old `ready` in.
            Step::Entering => {
                self.own_czxid = None;
                self.queue_enter();
            }
            Step::Inside => {}
            // A new server may lag behind the one before.
            Step::Leaving => self.queue_leave(),
            Step::Abandoning(_) => self.ops.queue(Op::DeleteOwn),
        }
    }
}

impl<const N: usize> Recipe for DoubleBarrier<N> {
    type Event = DoubleBarrierEvent;

    fn poll_request(&mut self) -> Option<Outgoing<'_>> {
        if !self.link.is_up() {
            return None;
        }
        let (id, op) = self
            .ops
            .next_creating_ancestors(ancestors::depth(&self.dir))?;
        if let Op::Ensure(level) = op {
            let request = ancestors::create(&self.dir, level, &mut self.scratch, self.acl);
            return Some(Outgoing { id, request });
        }
        // Cannot fail: every path was sized in `new` or when stored.
        let _ = match op {
            Op::Ensure(_) | Op::List | Op::CatchUp => Ok(()),
            Op::WatchReady
            | Op::StatReady
            | Op::CreateReady
            | Op::RefreshReady
            | Op::DeleteReady
            | Op::ReadyGone => path::join_into(&mut self.scratch, &self.dir, READY).map_err(|_| ()),
            Op::CreateOwn | Op::StatOwn | Op::DeleteOwn => {
                path::join_into(&mut self.scratch, &self.dir, &self.own).map_err(|_| ())
            }
            Op::WatchOther => {
                path::join_into(&mut self.scratch, &self.dir, &self.other).map_err(|_| ())
            }
        };
        let path = self.scratch.as_str();
        let request = match op {
            Op::CatchUp => catch_up::request(&self.dir),
            Op::Ensure(_) | Op::CreateReady => Request::Create {
                path,
                data: &[],
                acl: self.acl,
                mode: CreateMode::Persistent,
            },
            Op::WatchReady => Request::Exists { path, watch: true },
            Op::StatOwn | Op::StatReady => Request::Exists { path, watch: false },
            Op::ReadyGone => Request::Exists { path, watch: true },
            Op::RefreshReady => Request::SetData {
                path,
                data: &[],
                version: Version::Any,
            },
            Op::CreateOwn => Request::Create {
                path,
                data: &[],
                acl: self.acl,
                mode: CreateMode::Ephemeral,
            },
            Op::List => Request::GetChildren {
                path: &self.dir,
                watch: false,
            },
            Op::DeleteOwn | Op::DeleteReady => Request::Delete {
                path,
                version: Version::Any,
            },
            Op::WatchOther => Request::GetData { path, watch: true },
        };
        Some(Outgoing { id, request })
    }

    fn handle_reply(&mut self, _now: Instant, id: RequestId, reply: Reply<'_>) {
        let Some(op) = self.ops.take(id) else {
            return;
        };
        self.on_reply(id, op, reply);
        self.after_last_look();
    }

    fn handle_watch(&mut self, _now: Instant, event: WatchEvent<'_>) {
        if !self.link.is_up() {
            // `Connected` lists again.
            return;
        }
        let Some(name) = event
            .path
            .strip_prefix(self.dir.as_str())
            .and_then(|rest| rest.strip_prefix('/'))
        else {
            return;
        };
        match self.step {
            // Created after it was seen missing, with the own node there.
            // Otherwise a creation proves nothing by itself: the watch may
            // be older than the own node (set by an earlier flight, or
            // re-registered on a reconnect), and a driver may hand the
            // notification over before the answer of an own create still
            // in flight, maybe `NoNode`. So `ready` created, written or
            // deleted: read it again, and let its mzxid decide. A fresh
            // request, as one in flight may have been answered before the
            // change; one queued and not yet sent will be read after it.
            Step::Entering
                if name == READY
                    && event.kind == WatchKind::NodeCreated
                    && self.absent_since_own =>
            {
                self.entered()
            }
            Step::Entering if name == READY && !self.ops.is_queued(Op::StatReady) => {
                self.ops.push(Op::StatReady)
            }
            // The waited node deleted, or changed: process nodes are never
            // written, so a change is a node deleted and made again under
            // the same name by the next round (what a reconnect's
            // `SetWatches` reports when it happened while the connection
            // was down). `ready` gone (or made anew): the round may be
            // over. Either way the listing decides afresh.
            Step::Leaving if name == self.other.as_str() || name == READY => {
                self.ops.queue(Op::List)
            }
            _ => {}
        }
    }

    fn handle_session(&mut self, _now: Instant, event: SessionEvent) {
        match event {
            SessionEvent::Connected { session_id } => {
                self.sessions.connected(session_id);
                if self.link.connected() != Reconnect::Same {
                    self.resync();
                }
            }
            SessionEvent::Suspended => self.lost(),
            SessionEvent::Expired | SessionEvent::Closed => {
                self.link.end(event);
                self.lost();
                match self.step {
                    Step::Idle => {}
                    // The node went with the session; the outcome stands.
                    Step::Abandoning(event) => self.finish(event),
                    _ => self.finish(DoubleBarrierEvent::Lost),
                }
            }
        }
    }

    fn handle_timeout(&mut self, now: Instant) {
        // Whatever is awaited may open the barrier, or end the leave.
        let deciding = self.link.is_up() && !self.ops.is_empty();
        if self.deadline.expired(now, deciding) {
            self.abandon(DoubleBarrierEvent::TimedOut);
        }
    }

    fn poll_timeout(&self) -> Option<Instant> {
        // Kept only while entering or leaving.
        self.deadline.poll(self.link.is_up())
    }

    fn poll_event(&mut self) -> Option<DoubleBarrierEvent> {
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
        if !self.ops.listing_part_of(id, Op::List, last) {
            return;
        }
        self.on_listing(id, names, last);
        if last {
            self.after_last_look();
        }
    }
}

impl<const N: usize> fmt::Debug for DoubleBarrier<N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DoubleBarrier")
            .field("dir", &self.dir.as_str())
            .field("own", &self.own.as_str())
            .field("step", &self.step)
            .field("waiting_for", &self.waiting_for())
            .field("link", &self.link)
            .finish()
    }
}
