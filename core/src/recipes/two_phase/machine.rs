//! The two-phase commit participant: coordinator or site, one state machine.

use core::fmt;

use heapless::{Deque, String, Vec};

use crate::engine::ancestors;
use crate::engine::catch_up;
use crate::engine::event_queue::EventQueue;
use crate::engine::link::{Link, Reconnect};
use crate::engine::pipeline::Pipeline;

use super::{Error, Outcome, TxEvent, Variant, Vote, DECISION};
use crate::path::{self, PathError};
use crate::{
    Acl, Children, CreateMode, Instant, Outgoing, Recipe, Reply, Request, RequestId, SessionEvent,
    Version, WatchEvent, WatchKind, ZkError,
};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    Idle,
    Coordinator,
    Site,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SiteState {
    /// Its vote node was not seen yet.
    Unknown,
    /// Its vote node exists without a vote.
    Present,
    Voted(Vote),
    /// Its vote node vanished after being seen: the site is gone.
    Gone,
}

#[derive(Clone, Debug)]
struct Site<const K: usize> {
    name: String<K>,
    state: SiteState,
    /// The coordinator's create of this vote node is not confirmed yet.
    need_create: bool,
    need_read: bool,
}

/// A site's vote.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ballot {
    /// Not cast yet.
    Blank,
    /// Cast, its write not confirmed.
    Cast(Vote),
    /// Written to the vote node.
    Written(Vote),
}

impl Ballot {
    fn vote(self) -> Option<Vote> {
        match self {
            Ballot::Blank => None,
            Ballot::Cast(vote) | Ballot::Written(vote) => Some(vote),
        }
    }
}

/// A site's own ephemeral vote node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum OwnVote {
    /// Not (known to be) made.
    Absent,
    Made,
    /// Died with a session: never made again, the coordinator may already
    /// have counted the site as gone.
    Lost,
}

/// The coordinator's transaction node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum TxNode {
    Unmade,
    /// Its create's answer was lost: applied or not, only the next answer
    /// can tell.
    InDoubt,
    Made,
}

/// The coordinator's way to [`TxEvent::Started`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Setup {
    /// The body is not confirmed written yet.
    BodyPending,
    BodySet,
    /// The body and every vote node are made: `Started` was reported.
    Started,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    /// Create the `level`-th ancestor of the transaction node.
    Ensure(u8),
    CreateTx,
    CreateVote(u16),
    SetBody,
    /// getChildren of the transaction node, with a watch.
    List,
    /// getData of a vote node, with a watch.
    ReadVote(u16),
    /// getData of the decision node, with a watch.
    ReadDecision,
    /// exists of the decision node, with a watch (sites that wait for it).
    AwaitDecision,
    CreateDecision,
    /// getData of the transaction node, with a watch.
    ReadBody,
    CreateOwn,
    WriteVote,
    /// The no-op write on the transaction node (`engine::catch_up`),
    /// before a site reads again what a read found missing (see
    /// [`TwoPhase::site_missed_tx`]).
    CatchUp,
}

ancestors::ancestor_op!(Op);

/// One participant of a two-phase commit: the coordinator, or one site.
///
/// `S` is the most sites it tracks, `K` the capacity of a site name, `B` of
/// the body, `N` of a path. See the [module docs](super).
///
/// ```
/// use herdless_core::two_phase::{TwoPhase, TxEvent, Variant, Vote};
/// use herdless_core::{Recipe, Reply, Stat};
/// let now = herdless_core::Instant::ZERO; // the driver's clock
///
/// // A site of a coordinated transaction, with ephemeral votes.
/// let mut site: TwoPhase = TwoPhase::new("/tx/42").unwrap();
/// site.participate("s1", Variant::Coordinated { ephemeral_votes: true }).unwrap();
/// let decision = site.poll_request().unwrap().id;    // is it decided already?
/// let body = site.poll_request().unwrap().id;        // read the body
/// let own = site.poll_request().unwrap().id;         // own ephemeral vote node
/// let stat = Stat { version: 1, ..Stat::default() };
/// site.handle_reply(now, decision, Reply::Error(herdless_core::ZkError::NoNode));
/// site.handle_reply(now, body, Reply::Data { data: b"debit 10", stat });
/// site.handle_reply(now, own, Reply::Created { path: "/tx/42/s1" });
/// assert_eq!(site.poll_event(), Some(TxEvent::Transaction));
/// assert_eq!(site.body(), Some(&b"debit 10"[..]));
/// site.vote(Vote::Commit).unwrap();
/// ```
pub struct TwoPhase<
    const S: usize = 16,
    const K: usize = 32,
    const B: usize = 256,
    const N: usize = 128,
> {
    tx: String<N>,
    variant: Variant,
    role: Role,
    own: String<K>,
    body: Vec<u8, B>,
    body_known: bool,
    /// The no-op write answered on the current session: its reads are at
    /// least as recent as the quorum was then, so a missing transaction
    /// node is really gone.
    caught_up: bool,
    sites: Vec<Site<K>, S>,
    /// Whether this participant decides (coordinator, or an all-watch site).
    decider: bool,
    /// A vote node whose name does not fit `K` was listed: its vote cannot
    /// be read, so it counts as `abort` (never as absent, which would let
    /// the others' votes commit without it).
    unreadable: bool,
    /// The listing being read: a part of another one starts afresh.
    listing: Option<RequestId>,
    /// The sites (by index) whose vote nodes its parts showed so far.
    listed: [bool; S],
    tallying: bool,
    decision: Option<Outcome>,
    proposal: Option<Outcome>,
    /// The site's vote, and whether it is written.
    ballot: Ballot,
    /// The site's own ephemeral vote node (when sites create theirs).
    own_vote: OwnVote,
    /// The coordinator's transaction node.
    tx_node: TxNode,
    /// The coordinator's progress to `Started`.
    setup: Setup,
    directory_retries: ancestors::Retries,
    deadline: Option<Instant>,
    link: Link,
    ops: Pipeline<Op, 16, 48>,
    /// Ops that must follow the per-site creates on the wire.
    late: Deque<Op, 2>,
    events: EventQueue<TxEvent, 8>,
    scratch: String<N>,
    /// The ACL of every node it creates.
    acl: Acl<'static>,
}

impl<const S: usize, const K: usize, const B: usize, const N: usize> TwoPhase<S, K, B, N> {
    /// A participant of the transaction at node `tx`.
    pub fn new(tx: &str) -> Result<Self, Error> {
        path::validate(tx)?;
        if tx == "/" {
            return Err(Error::Path(PathError::BadName));
        }
        // Every path the participant builds must fit: `<tx>/decision` and
        // `<tx>/<site>` with the longest name.
        let needed = tx.len() + 1 + DECISION.len().max(K);
        if needed > N {
            return Err(Error::Path(PathError::TooLong {
                needed,
                capacity: N,
            }));
        }
        let mut stored = String::new();
        path::concat_into(&mut stored, &[tx])?;
        Ok(TwoPhase {
            acl: Acl::OPEN,
            tx: stored,
            variant: Variant::AllWatch,
            role: Role::Idle,
            own: String::new(),
            body: Vec::new(),
            body_known: false,
            caught_up: false,
            sites: Vec::new(),
            decider: false,
            unreadable: false,
            listing: None,
            listed: [false; S],
            tallying: false,
            decision: None,
            proposal: None,
            ballot: Ballot::Blank,
            own_vote: OwnVote::Absent,
            tx_node: TxNode::Unmade,
            setup: Setup::BodyPending,
            directory_retries: ancestors::Retries::default(),
            deadline: None,
            link: Link::Up,
            ops: Pipeline::new(),
            late: Deque::new(),
            events: EventQueue::new(),
            scratch: String::new(),
        })
    }

    crate::engine::acl_option::acl_option!();

    /// The transaction node's path.
    pub fn tx(&self) -> &str {
        &self.tx
    }

    /// The transaction body, once read (site) or written (coordinator).
    pub fn body(&self) -> Option<&[u8]> {
        self.body_known.then_some(&self.body[..])
    }

    /// The outcome, once decided.
    pub fn decision(&self) -> Option<Outcome> {
        self.decision
    }

    /// The votes seen so far (deciders only): `(site, vote)`, `None` for a
    /// site that has not voted.
    pub fn votes(&self) -> impl Iterator<Item = (&str, Option<Vote>)> + '_ {
        self.sites.iter().map(|s| {
            let vote = match s.state {
                SiteState::Voted(v) => Some(v),
                // A vanished site counts as an abort.
                SiteState::Gone => Some(Vote::Abort),
                SiteState::Unknown | SiteState::Present => None,
            };
            (s.name.as_str(), vote)
        })
    }

    /// Whether the participant has nothing left to do (idle, decided, or
    /// failed).
    pub fn is_done(&self) -> bool {
        self.is_idle() || self.decision.is_some()
    }

    /// Whether this participant has no part in a transaction (never took
    /// one, or failed): only then may it coordinate or take part again. A
    /// decided participant is done but not idle.
    pub fn is_idle(&self) -> bool {
        self.role == Role::Idle
    }

    /// Starts the transaction as its coordinator: creates `<tx>` (and its
    /// ancestors) with the vote nodes of `sites` as the variant wants, then
    /// writes `body`. If `deadline` passes before the decision, decides
    /// `abort`.
    pub fn coordinate(
        &mut self,
        body: &[u8],
        sites: &[&str],
        variant: Variant,
        deadline: Option<Instant>,
    ) -> Result<(), Error> {
        if !self.is_idle() {
            return Err(Error::InvalidState);
        }
        if sites.is_empty() {
            return Err(Error::TooManySites);
        }
        let mut table: Vec<Site<K>, S> = Vec::new();
        for (i, name) in sites.iter().enumerate() {
            let name = site_name::<K>(name)?;
            if sites[..i].iter().any(|other| *other == name.as_str()) {
                return Err(Error::Path(PathError::BadName));
            }
            table
                .push(Site {
                    name,
                    state: SiteState::Unknown,
                    need_create: variant.coordinator_creates_votes(),
                    need_read: false,
                })
                .map_err(|_| Error::TooManySites)?;
        }
        if u16::try_from(table.len()).is_err() {
            return Err(Error::TooManySites);
        }
        self.body = Vec::from_slice(body).map_err(|_| Error::TooLarge {
            len: body.len(),
            capacity: B,
        })?;
        self.sites = table;
        self.role = Role::Coordinator;
        self.variant = variant;
        self.decider = true;
        self.tallying = true;
        self.body_known = true;
        self.deadline = deadline;
        self.ops.queue(Op::CreateTx);
        let _ = self.late.push_back(Op::SetBody);
        self.ops.queue(Op::List);
        self.ops.queue(Op::ReadDecision);
        Ok(())
    }

    /// Takes part in the transaction as the site `name`: reads the body
    /// ([`TxEvent::Transaction`] follows), learns the decision, and in the
    /// ephemeral variant creates its own vote node.
    pub fn participate(&mut self, name: &str, variant: Variant) -> Result<(), Error> {
        if !self.is_idle() {
            return Err(Error::InvalidState);
        }
        self.own = site_name::<K>(name)?;
        self.role = Role::Site;
        self.variant = variant;
        self.decider = variant == Variant::AllWatch;
        // The decision first: a late site learns the outcome before it is
        // offered a transaction it may no longer vote on.
        self.ops.queue(Op::ReadDecision);
        self.ops.queue(Op::ReadBody);
        if !variant.coordinator_creates_votes() {
            self.ops.queue(Op::CreateOwn);
        }
        Ok(())
    }

    /// Votes (sites only, once, after [`TxEvent::Transaction`] and before
    /// the decision); [`TxEvent::Voted`] follows once written.
    pub fn vote(&mut self, vote: Vote) -> Result<(), Error> {
        if self.role != Role::Site
            || !self.body_known
            || self.ballot != Ballot::Blank
            || self.decision.is_some()
        {
            return Err(Error::InvalidState);
        }
        if self.own_vote == OwnVote::Lost {
            return Err(Error::SessionEnded);
        }
        self.ballot = Ballot::Cast(vote);
        if self.variant.coordinator_creates_votes() || self.own_vote == OwnVote::Made {
            self.ops.queue(Op::WriteVote);
        }
        Ok(())
    }

    fn fail(&mut self, e: Error) {
        self.role = Role::Idle;
        self.ops.clear();
        self.late.clear();
        self.deadline = None;
        self.events.emit(TxEvent::Failed(e));
    }

    fn decide(&mut self, outcome: Outcome) {
        if self.decision.is_some() {
            return;
        }
        self.decision = Some(outcome);
        self.deadline = None;
        self.tallying = false;
        // Nothing read from here on matters; a vote still on its way may
        // land, which is harmless, and the answers in flight still finish
        // the coordinator's start.
        self.ops.unqueue(|op| op != Op::WriteVote);
        for site in self.sites.iter_mut() {
            site.need_read = false;
        }
        self.events.emit(TxEvent::Decided(outcome));
    }

    fn propose(&mut self, outcome: Outcome) {
        if self.decision.is_none() && self.proposal.is_none() {
            self.proposal = Some(outcome);
            self.ops.queue(Op::CreateDecision);
        }
    }

    /// Decides as soon as the votes allow: `abort` at the first abort or
    /// vanished site, `commit` when every site voted `commit`.
    fn evaluate(&mut self) {
        if !self.decider || !self.tallying || self.decision.is_some() {
            return;
        }
        let abort = self.unreadable
            || self
                .sites
                .iter()
                .any(|s| matches!(s.state, SiteState::Voted(Vote::Abort) | SiteState::Gone));
        let commit = !self.sites.is_empty()
            && self
                .sites
                .iter()
                .all(|s| s.state == SiteState::Voted(Vote::Commit));
        if abort {
            self.propose(Outcome::Abort);
        } else if commit {
            self.propose(Outcome::Commit);
        }
    }

    /// The body is written (or found to be ours).
    fn body_set(&mut self) {
        if self.setup == Setup::BodyPending {
            self.setup = Setup::BodySet;
        }
        self.check_started();
    }

    fn check_started(&mut self) {
        if self.role == Role::Coordinator
            && self.setup == Setup::BodySet
            && self.sites.iter().all(|s| !s.need_create)
        {
            self.setup = Setup::Started;
            self.events.emit(TxEvent::Started);
        }
    }

    fn site_of(&self, name: &str) -> Option<usize> {
        self.sites.iter().position(|s| s.name.as_str() == name)
    }

    /// A part of a listing of the transaction node, or all of it (`last`).
    ///
    /// A listing larger than herdless-embassy's receive buffer comes in
    /// parts, name by name. What a part shows holds however the listing
    /// ends (a site it names exists, the decision too); only the last part
    /// can say which sites are gone. A listing cut short is asked again
    /// under another id, and its parts count for nothing then.
    fn on_listing(&mut self, id: RequestId, names: Children<'_>, last: bool) {
        if self.listing != Some(id) {
            self.listing = Some(id);
            self.listed = [false; S];
        }
        for name in names {
            if name == DECISION {
                self.ops.queue(Op::ReadDecision);
                continue;
            }
            let index = match self.site_of(name) {
                Some(i) => i,
                // An all-watch site learns the sites from the listing (every
                // vote node exists once the body is written).
                None if self.role == Role::Site => {
                    let Ok(name) = site_name::<K>(name) else {
                        self.unreadable = true;
                        continue;
                    };
                    let site = Site {
                        name,
                        state: SiteState::Unknown,
                        need_create: false,
                        need_read: false,
                    };
                    if self.sites.push(site).is_err() {
                        return self.fail(Error::TooManySites);
                    }
                    self.sites.len() - 1
                }
                None => continue,
            };
            if let Some(flag) = self.listed.get_mut(index) {
                *flag = true;
            }
            if let Some(site) = self.sites.get_mut(index) {
                if site.state == SiteState::Unknown {
                    site.state = SiteState::Present;
                    site.need_read = true;
                }
            }
        }
        if !last {
            return;
        }
        self.listing = None;
        for (i, site) in self.sites.iter_mut().enumerate() {
            let seen_before = matches!(site.state, SiteState::Present | SiteState::Voted(_));
            if seen_before && !self.listed.get(i).copied().unwrap_or(true) && !site.need_create {
                site.state = SiteState::Gone;
                site.need_read = false;
            }
        }
        self.evaluate();
    }

    fn on_vote(&mut self, index: usize, reply: Reply<'_>) {
        let Some(site) = self.sites.get_mut(index) else {
            return;
        };
        match reply {
            Reply::Data { data, .. } => {
                site.state = if data.is_empty() {
                    SiteState::Present
                } else if data == Vote::Commit.as_bytes() {
                    SiteState::Voted(Vote::Commit)
                } else {
                    // Only an explicit `commit` commits.
                    SiteState::Voted(Vote::Abort)
                };
            }
            Reply::Error(ZkError::NoNode) => {
                if site.state != SiteState::Unknown {
                    site.state = SiteState::Gone;
                }
            }
            Reply::Error(e) => return self.on_error(Op::ReadVote(index as u16), e),
            _ => return self.fail(Error::BadReply),
        }
        self.evaluate();
    }

    fn on_body(&mut self, data: &[u8], version: i32) {
        if self.body_known {
            return;
        }
        // Version 0 is the coordinator's empty placeholder: the vote nodes
        // may not exist yet. The watch set by this read tells when the body
        // is written.
        if version < 1 {
            return;
        }
        match Vec::from_slice(data) {
            Ok(body) => self.body = body,
            Err(()) => {
                return self.fail(Error::TooLarge {
                    len: data.len(),
                    capacity: B,
                })
            }
        }
        self.body_known = true;
        if self.decision.is_none() {
            self.events.emit(TxEvent::Transaction);
        }
        if self.decider && self.decision.is_none() {
            self.tallying = true;
            self.ops.queue(Op::List);
        }
    }

    fn connection_lost(&mut self, also: Option<Op>) {
        if !self.link.lose() {
            return;
        }
        if self
            .ops
            .lose()
            .into_iter()
            .chain(also)
            .any(|op| op == Op::CreateTx)
        {
            self.tx_in_doubt();
        }
        self.late.clear();
    }

    fn session_ended(&mut self, how: SessionEvent) {
        self.link.end(how);
        // A catch-up holds for its session only: ZooKeeper keeps one
        // session from reading older than what it saw, and a new session
        // has seen nothing, so its server may still lack the transaction.
        self.caught_up = false;
        let lost = self.ops.lose();
        if lost.contains(&Op::CreateTx) {
            self.tx_in_doubt();
        }
        let own_may_exist = self.own_vote == OwnVote::Made || lost.contains(&Op::CreateOwn);
        self.late.clear();
        if self.role == Role::Site && !self.variant.coordinator_creates_votes() && own_may_exist {
            // The ephemeral vote node died with the session, and the
            // coordinator may already have counted the site as gone.
            self.own_vote = OwnVote::Lost;
        }
    }

    /// The transaction node's create was lost in flight.
    fn tx_in_doubt(&mut self) {
        if self.tx_node != TxNode::Made {
            self.tx_node = TxNode::InDoubt;
        }
    }

    /// Rebuilds what to send after a reconnect or on a new session: every
    /// write not confirmed, and every read (watches may be gone).
    fn resync(&mut self) {
        self.ops.clear_queued();
        self.late.clear();
        if self.role == Role::Idle {
            return;
        }
        if self.role == Role::Coordinator && self.tx_node != TxNode::Made {
            self.ops.queue(Op::CreateTx);
        }
        if self.role == Role::Coordinator && self.setup == Setup::BodyPending {
            let _ = self.late.push_back(Op::SetBody);
        }
        if self.decision.is_none() {
            self.ops.queue(Op::ReadDecision);
            if self.proposal.is_some() {
                self.ops.queue(Op::CreateDecision);
            }
        }
        if self.role == Role::Site && self.own_vote == OwnVote::Lost && self.decision.is_none() {
            // Our ephemeral vote node died with a session: we can never
            // vote, and the coordinator may never have seen us. Abort is
            // always a valid outcome until a decision is recorded, so record
            // it ourselves rather than leave everyone to a deadline.
            self.proposal = Some(Outcome::Abort);
            self.ops.queue(Op::CreateDecision);
        }
        if self.role == Role::Site {
            if !self.body_known {
                self.ops.queue(Op::ReadBody);
            }
            if !self.variant.coordinator_creates_votes() && self.own_vote == OwnVote::Absent {
                self.ops.queue(Op::CreateOwn);
            }
            let can_write =
                self.variant.coordinator_creates_votes() || self.own_vote == OwnVote::Made;
            if matches!(self.ballot, Ballot::Cast(_)) && can_write && self.own_vote != OwnVote::Lost
            {
                self.ops.queue(Op::WriteVote);
            }
        }
        if self.tallying && self.decision.is_none() {
            self.ops.queue(Op::List);
            for site in self.sites.iter_mut() {
                if site.state != SiteState::Unknown && site.state != SiteState::Gone {
                    site.need_read = true;
                }
            }
        }
    }

    /// A site's read (`op`) found no transaction node. The site learned of
    /// the transaction from someone else, and the server it reads from may
    /// not have applied the create yet (reads are served locally; only
    /// writes go through the quorum): before believing it, catch up and
    /// read again, in one flight. Once caught up, missing means gone.
    fn site_missed_tx(&mut self, op: Op) {
        if self.caught_up {
            self.fail(Error::NoTransaction);
        } else {
            self.ops.queue(Op::CatchUp);
            self.ops.queue(op);
        }
    }

    fn on_error(&mut self, op: Op, e: ZkError) {
        if e.is_connection_loss() {
            self.connection_lost(Some(op));
        } else if e.is_session_gone() {
            self.session_ended(SessionEvent::Expired);
        } else {
            self.fail(Error::Zk(e));
        }
    }

    fn on_create_tx(&mut self, reply: Reply<'_>) {
        match reply {
            Reply::Created { .. } => self.tx_node = TxNode::Made,
            // Our own create, applied before its reply was lost.
            Reply::Error(ZkError::NodeExists) if self.tx_node == TxNode::InDoubt => {
                self.tx_node = TxNode::Made;
            }
            Reply::Error(ZkError::NodeExists) => self.fail(Error::TransactionExists),
            Reply::Error(ZkError::NoNode) if self.directory_retries.take() => {
                // A missing parent: create the ancestors, then everything
                // again. The pipelined vote creates and body write fail with
                // NoNode too and are re-queued as their answers come in.
                self.ops.queue_first(Op::CreateTx);
                self.ops.queue_first(Op::Ensure(1));
            }
            Reply::Error(e) => self.on_error(Op::CreateTx, e),
            _ => self.fail(Error::BadReply),
        }
    }

    fn depth(&self) -> u8 {
        ancestors::depth(path::parent(&self.tx).unwrap_or("/"))
    }

    /// The next op to send: early ops, then per-site work, then the ops
    /// that must follow the vote creates.
    fn next_op(&mut self) -> Option<Op> {
        if let Some(op) = self.ops.pop_queued() {
            let depth = self.depth();
            self.ops.follow_ancestor(op, depth);
            return Some(op);
        }
        for (i, site) in self.sites.iter_mut().enumerate() {
            let index = u16::try_from(i).ok()?;
            if site.need_create {
                // Cleared when the create is confirmed.
                let op = Op::CreateVote(index);
                if !self.ops.is_in_flight(op) {
                    return Some(op);
                }
            }
            if site.need_read {
                site.need_read = false;
                return Some(Op::ReadVote(index));
            }
        }
        self.late.pop_front()
    }

    fn site_path(&mut self, index: u16) -> &str {
        let name = self
            .sites
            .get(usize::from(index))
            .map(|s| s.name.as_str())
            .unwrap_or("");
        // Cannot fail: sized in `new` for the longest site name.
        let _ = path::join_into(&mut self.scratch, &self.tx, name);
        &self.scratch
    }
}

/// Validates a site name and stores it.
fn site_name<const K: usize>(name: &str) -> Result<String<K>, Error> {
    path::validate_name(name)?;
    if name == DECISION {
        return Err(Error::Path(PathError::BadName));
    }
    String::try_from(name).map_err(|_| {
        Error::Path(PathError::TooLong {
            needed: name.len(),
            capacity: K,
        })
    })
}

impl<const S: usize, const K: usize, const B: usize, const N: usize> Recipe
    for TwoPhase<S, K, B, N>
{
    type Event = TxEvent;

    fn poll_request(&mut self) -> Option<Outgoing<'_>> {
        if !self.link.is_up() || !self.ops.has_room() || self.role == Role::Idle {
            return None;
        }
        let op = self.next_op()?;
        let id = self.ops.record(op);
        let acl = self.acl;
        let request = match op {
            Op::Ensure(level) => {
                let parent = path::parent(&self.tx).unwrap_or("/");
                ancestors::create(parent, level, &mut self.scratch, acl)
            }
            Op::CreateTx => Request::Create {
                path: &self.tx,
                data: &[],
                acl,
                mode: CreateMode::Persistent,
            },
            Op::CreateVote(i) => Request::Create {
                path: self.site_path(i),
                data: &[],
                acl,
                mode: CreateMode::Persistent,
            },
            // Only onto the empty placeholder: never over another
            // coordinator's body, and a resend after a lost reply is
            // refused instead of applied twice.
            Op::SetBody => Request::SetData {
                path: &self.tx,
                data: &self.body,
                version: Version::Exactly(0),
            },
            Op::List => Request::GetChildren {
                path: &self.tx,
                watch: true,
            },
            Op::ReadVote(i) => Request::GetData {
                path: self.site_path(i),
                watch: true,
            },
            Op::ReadDecision | Op::AwaitDecision | Op::CreateDecision => {
                let _ = path::join_into(&mut self.scratch, &self.tx, DECISION);
                match op {
                    Op::ReadDecision => Request::GetData {
                        path: &self.scratch,
                        watch: true,
                    },
                    // Waiting for the decision's creation is the point of
                    // this watch, and the decision always comes (by vote or
                    // by the coordinator's deadline) and spends it.
                    Op::AwaitDecision => Request::Exists {
                        path: &self.scratch,
                        watch: true,
                    },
                    _ => Request::Create {
                        path: &self.scratch,
                        data: self.proposal.unwrap_or(Outcome::Abort).as_bytes(),
                        acl,
                        mode: CreateMode::Persistent,
                    },
                }
            }
            Op::ReadBody => Request::GetData {
                path: &self.tx,
                watch: true,
            },
            Op::CatchUp => catch_up::request(&self.tx),
            Op::CreateOwn | Op::WriteVote => {
                let _ = path::join_into(&mut self.scratch, &self.tx, &self.own);
                if op == Op::CreateOwn {
                    Request::Create {
                        path: &self.scratch,
                        data: &[],
                        acl,
                        mode: CreateMode::Ephemeral,
                    }
                } else {
                    Request::SetData {
                        path: &self.scratch,
                        data: self.ballot.vote().unwrap_or(Vote::Abort).as_bytes(),
                        version: Version::Any,
                    }
                }
            }
        };
        Some(Outgoing { id, request })
    }

    fn handle_reply(&mut self, _now: Instant, id: RequestId, reply: Reply<'_>) {
        if self.role == Role::Idle {
            return;
        }
        let Some(op) = self.ops.take(id) else {
            return;
        };
        match (op, reply) {
            // Made: a later `NoNode` is the directory vanishing again,
            // which counts against the retries (a create lost with the
            // connection does not).
            (Op::Ensure(_), Reply::Created { .. } | Reply::Error(ZkError::NodeExists)) => {
                self.directory_retries.answered();
            }
            (Op::CreateTx, reply) => self.on_create_tx(reply),
            (Op::CreateVote(i), Reply::Created { .. } | Reply::Error(ZkError::NodeExists)) => {
                if let Some(site) = self.sites.get_mut(usize::from(i)) {
                    site.need_create = false;
                }
                self.check_started();
            }
            // The transaction node was not there yet: sent again after it.
            (Op::CreateVote(_), Reply::Error(ZkError::NoNode)) => {}
            (Op::SetBody, Reply::DataSet { .. }) => self.body_set(),
            // Applied before, its reply lost: the body is ours.
            (Op::SetBody, Reply::Error(ZkError::BadVersion)) if self.tx_node == TxNode::Made => {
                self.body_set();
            }
            (Op::SetBody, Reply::Error(ZkError::NoNode)) if self.tx_node != TxNode::Made => {
                let _ = self.late.push_back(Op::SetBody);
            }
            (Op::SetBody, Reply::Error(ZkError::BadVersion)) => {
                // Someone else's transaction (our create failed): the
                // create's answer already reported it.
            }
            (Op::List, Reply::Children(names)) => {
                if self.tallying {
                    self.on_listing(id, names, true);
                }
            }
            (Op::List, Reply::Error(ZkError::NoNode)) => {
                if self.role == Role::Coordinator && self.tx_node != TxNode::Made {
                    // Pipelined behind a create that found no parent: list
                    // again behind the create that follows the ancestors.
                    self.ops.queue(Op::List);
                } else if self.decision.is_none() {
                    self.site_missed_tx(Op::List);
                }
            }
            (Op::ReadVote(i), reply) => {
                if self.tallying {
                    self.on_vote(usize::from(i), reply);
                }
            }
            (Op::ReadDecision, Reply::Data { data, .. }) => self.decide(Outcome::from_bytes(data)),
            (Op::ReadDecision, Reply::Error(ZkError::NoNode)) => {
                // Deciders hear of the decision through their child watch;
                // the others wait for it directly.
                if !self.decider && self.decision.is_none() {
                    self.ops.queue(Op::AwaitDecision);
                }
            }
            (Op::AwaitDecision, Reply::Exists { .. }) => self.ops.queue(Op::ReadDecision),
            (Op::AwaitDecision, Reply::Error(ZkError::NoNode)) => {}
            (Op::CreateDecision, Reply::Created { .. }) => {
                if let Some(outcome) = self.proposal {
                    self.decide(outcome);
                }
            }
            // Someone decided first: adopt what they recorded.
            (Op::CreateDecision, Reply::Error(ZkError::NodeExists)) => {
                self.ops.queue(Op::ReadDecision)
            }
            // Decided (by the deadline) before the transaction node was
            // created: record it behind the create.
            (Op::CreateDecision, Reply::Error(ZkError::NoNode))
                if self.role == Role::Coordinator && self.tx_node != TxNode::Made =>
            {
                self.ops.queue(Op::CreateDecision)
            }
            (Op::CreateDecision, Reply::Error(ZkError::NoNode)) => self.fail(Error::NoTransaction),
            (Op::ReadBody, Reply::Data { data, stat }) => self.on_body(data, stat.version),
            (Op::ReadBody, Reply::Error(ZkError::NoNode)) => {
                if self.decision.is_none() {
                    self.site_missed_tx(Op::ReadBody);
                }
            }
            (Op::CatchUp, Reply::Checked) => self.caught_up = true,
            // `NoNode`: gone at that point, as the read will say. Otherwise
            // there is nothing better to do than trust the next read.
            (Op::CatchUp, Reply::Error(e)) if !e.is_connection_loss() && !e.is_session_gone() => {
                self.caught_up = true;
            }
            (Op::CreateOwn, Reply::Created { .. })
            | (Op::CreateOwn, Reply::Error(ZkError::NodeExists)) => {
                self.own_vote = OwnVote::Made;
                if matches!(self.ballot, Ballot::Cast(_)) {
                    self.ops.queue(Op::WriteVote);
                }
            }
            (Op::CreateOwn, Reply::Error(ZkError::NoNode)) => {
                if self.decision.is_none() {
                    self.fail(Error::NoTransaction);
                }
            }
            (Op::WriteVote, Reply::DataSet { .. }) => {
                if let Ballot::Cast(vote) = self.ballot {
                    self.ballot = Ballot::Written(vote);
                    self.events.emit(TxEvent::Voted);
                }
            }
            (Op::WriteVote, Reply::Error(ZkError::NoNode)) => {
                // The own vote node is gone: with ephemeral votes that is
                // the session's end, which aborts; otherwise the
                // transaction was removed.
                if self.variant.coordinator_creates_votes() && self.decision.is_none() {
                    self.fail(Error::NoTransaction);
                }
            }
            (op, Reply::Error(e)) => self.on_error(op, e),
            (_, _) => self.fail(Error::BadReply),
        }
    }

    fn handle_watch(&mut self, _now: Instant, event: WatchEvent<'_>) {
        if self.role == Role::Idle || self.decision.is_some() {
            return;
        }
        if !self.link.is_up() {
            // `Connected` re-reads everything.
            return;
        }
        let tx = self.tx.as_str();
        if event.path == tx {
            match event.kind {
                WatchKind::NodeDataChanged if !self.body_known => self.ops.queue(Op::ReadBody),
                WatchKind::NodeChildrenChanged if self.tallying => self.ops.queue(Op::List),
                WatchKind::NodeDeleted => self.fail(Error::NoTransaction),
                _ => {}
            }
            return;
        }
        let Some(name) = event
            .path
            .strip_prefix(tx)
            .and_then(|rest| rest.strip_prefix('/'))
        else {
            return;
        };
        if name == DECISION {
            self.ops.queue(Op::ReadDecision);
            return;
        }
        if !self.tallying {
            return;
        }
        let Some(index) = self.site_of(name) else {
            return;
        };
        if let Some(site) = self.sites.get_mut(index) {
            match event.kind {
                WatchKind::NodeDeleted => {
                    site.state = SiteState::Gone;
                    site.need_read = false;
                }
                _ => site.need_read = true,
            }
        }
        self.evaluate();
    }

    fn handle_session(&mut self, _now: Instant, event: SessionEvent) {
        match event {
            SessionEvent::Connected { .. } => {
                if self.link.connected() != Reconnect::Same {
                    self.resync();
                }
            }
            SessionEvent::Suspended => self.connection_lost(None),
            SessionEvent::Expired | SessionEvent::Closed => self.session_ended(event),
        }
    }

    fn handle_timeout(&mut self, now: Instant) {
        if let Some(deadline) = self.deadline {
            if now >= deadline && self.decision.is_none() && self.role == Role::Coordinator {
                self.deadline = None;
                self.propose(Outcome::Abort);
            }
        }
    }

    fn poll_timeout(&self) -> Option<Instant> {
        if self.decision.is_none() && self.proposal.is_none() {
            self.deadline
        } else {
            None
        }
    }

    fn poll_event(&mut self) -> Option<TxEvent> {
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
        if self.ops.listing_part_of(id, Op::List, last) && self.tallying {
            self.on_listing(id, names, last);
        }
    }
}

impl<const S: usize, const K: usize, const B: usize, const N: usize> fmt::Debug
    for TwoPhase<S, K, B, N>
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TwoPhase")
            .field("tx", &self.tx.as_str())
            .field("role", &self.role)
            .field("own", &self.own.as_str())
            .field("decision", &self.decision)
            .field("proposal", &self.proposal)
            .field("ballot", &self.ballot)
            .field("sites", &self.sites)
            .field("link", &self.link)
            .finish()
    }
}
