//! Group membership, the member's side: an ephemeral node that stays
//! (the recipes page's "Group Membership"; also a name-service
//! registration, whose data is the address).
//!
//! Joining creates `<group>/<name>` ephemeral with the member's data (the
//! group directory and its ancestors are created when missing). The node
//! lives as long as the session, which is the point: a crashed member leaves
//! the group on its own. What other libraries get wrong is the other way
//! round: a member whose *own* session expired must come back by itself on
//! its next session, and say that it was out, instead of silently staying
//! out of the group (Curator's `PersistentNode` does this; plain ephemeral
//! nodes do not). So does a member whose node an operator deleted.
//!
//! A create whose reply was lost is resolved by reading the node: if it
//! exists and its `ephemeralOwner` is this session, it is ours. A node of
//! the same name owned by another live session is a name clash, reported
//! rather than taken over. On a new session, the node may still be held by
//! the member's own *previous* session, which the server has not expired
//! yet (the client gave it up first): that session is recognised by its id
//! (the session id reported before, or the owner read from the own node)
//! and the member waits, watching the node, and joins when it goes.

use core::fmt;

use heapless::{String, Vec};

use crate::engine::ancestors;
use crate::engine::event_queue::EventQueue;
use crate::engine::link::{Link, Reconnect};
use crate::engine::pipeline::Pipeline;
use crate::engine::sessions::Sessions;
use crate::path::{self};
use crate::{
    Acl, CreateMode, Instant, Outgoing, Recipe, Reply, Request, RequestId, SessionEvent, Stat,
    Version, WatchEvent, WatchKind, ZkError,
};

/// Default capacity, in bytes, of a member's data.
pub const DEFAULT_DATA_CAPACITY: usize = 128;

/// Default capacity, in bytes, of the member node's path.
pub const DEFAULT_PATH_CAPACITY: usize = 128;

/// What a member hears about its own membership.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum MemberEvent {
    /// The member node exists: this member is in the group.
    Joined,
    /// The connection dropped: others may already see this member as gone
    /// (if the session expires meanwhile).
    Suspended,
    /// The same session came back and the node is confirmed.
    Resumed,
    /// The member is out of the group: its session ended or its node was
    /// deleted. It re-joins by itself once it can
    /// ([`MemberEvent::Rejoined`]).
    Out,
    /// After [`MemberEvent::Out`], the node exists again (on a new session,
    /// or re-created after a deletion): the member was absent in between.
    Rejoined,
    /// The member left at its own request; the node is confirmed gone.
    Left,
    /// Joining failed; the member is not in the group.
    Failed(Error),
}

/// Errors of this recipe: the one error type of every recipe.
pub use crate::Error;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    Idle,
    /// Creating the node (first time or again).
    Creating,
    /// A create's outcome is unknown, or the name exists: read the node.
    Checking,
    /// The name is held by an earlier session of this member, which is
    /// dying: wait (watching the node) until it goes, then create.
    Waiting,
    /// In the group, watching the own node.
    In,
    /// Out of the group, waiting for a session to re-join on.
    Out,
    /// Asked to leave before the node was known to be this member's (a
    /// create or a read of the name on its way): learn whose it is, and
    /// delete it only if it is ours.
    Leaving,
    Deleting,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    /// Create the `level`-th ancestor of the group directory.
    Ensure(u8),
    Create,
    /// getData with a watch on the own node.
    Check,
    /// exists without a watch, for the own node's `Stat` when the check's
    /// answer was over the receive buffer (its watch is set).
    Stat,
    /// exists without a watch, to learn the node's owner while leaving.
    Owner,
    Delete,
}

ancestors::ancestor_op!(Op);

/// A member of a group: an ephemeral node `<group>/<name>` that comes back
/// by itself after its session expired.
///
/// `D` is the capacity of the member's data, `N` of the node's path.
///
/// ```
/// use herdless_core::member::{Member, MemberEvent};
/// use herdless_core::{Recipe, Reply};
/// let now = herdless_core::Instant::ZERO; // the driver's clock
///
/// let mut member: Member = Member::new("/fleet/gateways", "edge-7").unwrap();
/// member.join(b"10.0.0.7:8080").unwrap();
/// let create = member.poll_request().unwrap().id;
/// member.handle_reply(now, create, Reply::Created { path: "/fleet/gateways/edge-7" });
/// assert_eq!(member.poll_event(), Some(MemberEvent::Joined));
/// ```
pub struct Member<const D: usize = DEFAULT_DATA_CAPACITY, const N: usize = DEFAULT_PATH_CAPACITY> {
    node: String<N>,
    /// Length of the group directory prefix of `node`.
    dir_len: usize,
    data: Vec<u8, D>,
    ops: Pipeline<Op, 8, 8>,
    step: Step,
    /// Set once the member was out: the next `In` is a re-join.
    was_out: bool,
    /// Whether this join got in at least once (before that, a lost session
    /// only delays the first `Joined`).
    ever_in: bool,
    suspended: bool,
    link: Link,
    sessions: Sessions,
    /// The `ephemeralOwner` last read from the own node.
    own_owner: Option<i64>,
    /// A create was sent whose reply never came.
    create_unknown: bool,
    directory_retries: ancestors::Retries,
    events: EventQueue<MemberEvent, 8>,
    scratch: String<N>,
    /// The ACL of every node it creates.
    acl: Acl<'static>,
}

impl<const D: usize, const N: usize> Member<D, N> {
    /// A member called `name` of the group directory `group`.
    pub fn new(group: &str, name: &str) -> Result<Self, Error> {
        path::validate(group)?;
        path::validate_name(name)?;
        let node = path::join(group, name)?;
        let dir_len = if group == "/" { 0 } else { group.len() };
        Ok(Member {
            acl: Acl::OPEN,
            node,
            dir_len,
            data: Vec::new(),
            ops: Pipeline::new(),
            step: Step::Idle,
            was_out: false,
            ever_in: false,
            suspended: false,
            link: Link::Up,
            sessions: Sessions::default(),
            own_owner: None,
            create_unknown: false,
            directory_retries: ancestors::Retries::default(),
            events: EventQueue::new(),
            scratch: String::new(),
        })
    }

    crate::engine::acl_option::acl_option!();

    /// The member node's full path.
    pub fn node_path(&self) -> &str {
        &self.node
    }

    /// The member's name.
    pub fn name(&self) -> &str {
        path::basename(&self.node)
    }

    /// The member's data.
    pub fn data(&self) -> &[u8] {
        &self.data
    }

    /// Whether the node is known to exist and the connection is up.
    pub fn is_in(&self) -> bool {
        self.step == Step::In && self.link.is_up() && !self.suspended
    }

    /// Whether the member is idle (never joined, or left).
    pub fn is_idle(&self) -> bool {
        self.step == Step::Idle
    }

    /// Joins the group with `data`; [`MemberEvent::Joined`] follows.
    pub fn join(&mut self, data: &[u8]) -> Result<(), Error> {
        if self.step != Step::Idle {
            return Err(Error::InvalidState);
        }
        self.data = Vec::from_slice(data).map_err(|_| Error::TooLarge {
            len: data.len(),
            capacity: D,
        })?;
        self.was_out = false;
        self.ever_in = false;
        self.directory_retries.reset();
        self.start_create();
        Ok(())
    }

    /// Leaves the group; [`MemberEvent::Left`] follows once the node is
    /// confirmed deleted (retried across connection losses). A node of the
    /// name that turns out to be another session's is left alone.
    pub fn leave(&mut self) -> Result<(), Error> {
        match self.step {
            Step::Idle | Step::Leaving | Step::Deleting => Err(Error::InvalidState),
            Step::Out if self.link.is_over() => {
                // Nothing exists on the server: the session took it.
                self.finish(MemberEvent::Left);
                Ok(())
            }
            Step::In => {
                // The node is confirmed ours.
                self.step = Step::Deleting;
                self.ops.forget(|_| true);
                self.ops.queue(Op::Delete);
                Ok(())
            }
            _ => {
                // The name may be held by another live session (a clash
                // not yet told): a blind delete would remove its node. A
                // create still in flight is answered first, so the read
                // queued behind it sees what it made.
                self.step = Step::Leaving;
                self.ops.clear_queued();
                self.ops.forget(|op| op != Op::Create);
                self.ops.queue(Op::Owner);
                Ok(())
            }
        }
    }

    /// While leaving: delete the node if it is ours, else there is nothing
    /// of ours to remove.
    fn on_owner(&mut self, owner: Option<i64>) {
        if self.step != Step::Leaving {
            return;
        }
        let ours =
            owner.is_some_and(|o| Some(o) == self.sessions.current() || self.is_earlier_session(o));
        if ours {
            self.step = Step::Deleting;
            self.ops.queue(Op::Delete);
        } else {
            self.finish(MemberEvent::Left);
        }
    }

    fn start_create(&mut self) {
        self.step = Step::Creating;
        self.ops.clear_queued();
        self.ops.queue(Op::Create);
    }

    fn finish(&mut self, event: MemberEvent) {
        self.step = Step::Idle;
        self.ops.clear();
        self.create_unknown = false;
        self.suspended = false;
        self.events.emit(event);
    }

    fn now_in(&mut self) {
        self.step = Step::In;
        self.create_unknown = false;
        self.directory_retries.reset();
        let rejoined = self.was_out;
        self.was_out = false;
        self.ever_in = true;
        self.suspended = false;
        self.events.emit(if rejoined {
            MemberEvent::Rejoined
        } else {
            MemberEvent::Joined
        });
        // Watch the own node, to hear of a deletion by someone else.
        self.ops.queue(Op::Check);
    }

    fn now_out(&mut self) {
        if self.ever_in && !self.was_out {
            self.was_out = true;
            self.events.emit(MemberEvent::Out);
        }
    }

    /// Whether `owner` is a session this member had before the current
    /// one: one reported, or the owner last read from the own node (a
    /// session whose id was never reported).
    fn is_earlier_session(&self, owner: i64) -> bool {
        self.sessions.is_earlier(owner)
            || (owner != 0
                && self.own_owner == Some(owner)
                && Some(owner) != self.sessions.current())
    }

    fn on_node(&mut self, stat: Stat) {
        match self.step {
            Step::Checking | Step::Waiting => {
                let owner_matches = match self.sessions.current() {
                    // Our session's node is ours only if a create of ours
                    // may have made it (its reply lost): otherwise another
                    // member on the same session holds the name.
                    Some(id) => stat.ephemeral_owner == id && self.create_unknown,
                    // No session id was ever reported: only a create of ours
                    // whose reply was lost can explain the node.
                    None => self.create_unknown && !self.is_earlier_session(stat.ephemeral_owner),
                };
                if owner_matches {
                    self.own_owner = Some(stat.ephemeral_owner);
                    self.now_in();
                } else if self.is_earlier_session(stat.ephemeral_owner) {
                    // The read armed a watch on the node: its deletion
                    // comes as a notification.
                    self.step = Step::Waiting;
                } else {
                    self.finish(MemberEvent::Failed(Error::NameTaken));
                }
            }
            Step::In => {
                self.own_owner = Some(stat.ephemeral_owner);
                if self.suspended {
                    self.suspended = false;
                    self.events.emit(MemberEvent::Resumed);
                }
            }
            _ => {}
        }
    }

    fn on_node_missing(&mut self) {
        match self.step {
            // Our lost create never landed, or the clashing node went:
            // create it (again).
            Step::Checking | Step::Waiting => self.start_create(),
            Step::In => {
                self.now_out();
                self.start_create();
            }
            _ => {}
        }
    }

    fn connection_lost(&mut self, also: Option<Op>) {
        if !self.link.lose() {
            return;
        }
        // Sent or not, a create may have been applied: only reading the
        // node can tell.
        if self
            .ops
            .lose()
            .into_iter()
            .chain(also)
            .any(|op| op == Op::Create)
        {
            self.create_unknown = true;
        }
        if self.step == Step::In && !self.suspended {
            self.suspended = true;
            self.events.emit(MemberEvent::Suspended);
        }
    }

    fn session_ended(&mut self, how: SessionEvent) {
        self.link.end(how);
        self.ops.lose();
        self.create_unknown = false;
        self.suspended = false;
        match self.step {
            Step::Idle | Step::Out => {}
            // The node died with the session: the leave is done.
            Step::Leaving | Step::Deleting => self.finish(MemberEvent::Left),
            Step::Creating | Step::Checking | Step::Waiting | Step::In => {
                self.step = Step::Out;
                self.now_out();
            }
        }
    }

    fn resume(&mut self, new_session: bool) {
        self.ops.clear_queued();
        if new_session {
            // Whatever the old session created died with it.
            self.create_unknown = false;
            match self.step {
                Step::Idle => {}
                Step::Leaving | Step::Deleting => self.finish(MemberEvent::Left),
                Step::In | Step::Out | Step::Creating | Step::Checking | Step::Waiting => {
                    if self.step == Step::In {
                        self.now_out();
                    }
                    self.start_create();
                }
            }
            return;
        }
        match self.step {
            Step::Idle => {}
            Step::Out => self.start_create(),
            Step::Creating | Step::Checking => {
                if self.create_unknown {
                    self.step = Step::Checking;
                    self.ops.queue(Op::Check);
                } else {
                    self.start_create();
                }
            }
            // Confirm the node (and re-arm the watch the lost read carried).
            Step::In | Step::Waiting => self.ops.queue(Op::Check),
            // The read was lost, or the create before it: read again.
            Step::Leaving => self.ops.queue(Op::Owner),
            Step::Deleting => self.ops.queue(Op::Delete),
        }
    }

    fn on_error(&mut self, op: Op, e: ZkError) {
        if e.is_connection_loss() {
            self.connection_lost(Some(op));
        } else if e.is_session_gone() {
            self.session_ended(SessionEvent::Expired);
        } else if op == Op::Delete {
            self.finish(MemberEvent::Failed(Error::Zk(e)));
        } else if self.step == Step::In {
            // A failed re-check: try again after the next notification or
            // reconnect rather than leave the group.
        } else {
            self.finish(MemberEvent::Failed(Error::Zk(e)));
        }
    }

    fn on_create_error(&mut self, e: ZkError) {
        match e {
            ZkError::NodeExists if self.step == Step::Creating => {
                self.step = Step::Checking;
                self.ops.queue(Op::Check);
            }
            ZkError::NoNode if self.step == Step::Creating && self.directory_retries.take() => {
                self.ops.clear_queued();
                self.ops.queue(Op::Ensure(1));
                self.ops.queue(Op::Create);
            }
            _ if e.is_connection_loss() || e.is_session_gone() => self.on_error(Op::Create, e),
            _ if self.step == Step::Creating => self.finish(MemberEvent::Failed(Error::Zk(e))),
            _ => {}
        }
    }
}

impl<const D: usize, const N: usize> Recipe for Member<D, N> {
    type Event = MemberEvent;

    fn poll_request(&mut self) -> Option<Outgoing<'_>> {
        if !self.link.is_up() {
            return None;
        }
        let depth = ancestors::depth(&self.node[..self.dir_len]);
        let (id, op) = self.ops.next_creating_ancestors(depth)?;
        let node = self.node.as_str();
        let request = match op {
            Op::Ensure(level) => {
                ancestors::create(&node[..self.dir_len], level, &mut self.scratch, self.acl)
            }
            Op::Create => Request::Create {
                path: node,
                data: &self.data,
                acl: self.acl,
                mode: CreateMode::Ephemeral,
            },
            // getData, not exists: when the node is gone it leaves no
            // creation watch behind.
            Op::Check => Request::GetData {
                path: node,
                watch: true,
            },
            // Only the `Stat` is wanted, which always fits a receive
            // buffer, whatever the data.
            Op::Stat | Op::Owner => Request::Exists {
                path: node,
                watch: false,
            },
            Op::Delete => Request::Delete {
                path: node,
                version: Version::Any,
            },
        };
        Some(Outgoing { id, request })
    }

    fn handle_reply(&mut self, _now: Instant, id: RequestId, reply: Reply<'_>) {
        let Some(op) = self.ops.take(id) else {
            return;
        };
        match (op, reply) {
            (Op::Ensure(_), Reply::Created { .. } | Reply::Error(ZkError::NodeExists)) => {
                self.directory_retries.answered();
            }
            (Op::Ensure(_), Reply::Error(e)) => self.on_error(op, e),
            (Op::Create, Reply::Created { .. }) => match self.step {
                Step::Creating => self.now_in(),
                // Ours for certain: no need to read its owner.
                Step::Leaving => {
                    self.step = Step::Deleting;
                    self.ops.forget(|op| op == Op::Owner);
                    self.ops.queue(Op::Delete);
                }
                _ => {}
            },
            (Op::Create, Reply::Error(e)) => self.on_create_error(e),
            (Op::Check, Reply::Data { stat, .. }) => self.on_node(stat),
            (Op::Check, Reply::Error(ZkError::NoNode)) => self.on_node_missing(),
            // The data over an embedded driver's receive buffer (anyone can
            // write it): the node is there and watched, its `Stat` asked.
            (Op::Check, Reply::Error(ZkError::ReplyTooLarge)) => self.ops.queue(Op::Stat),
            (Op::Stat, Reply::Exists { stat }) => self.on_node(stat),
            // Deleted since: the check's watch tells.
            (Op::Stat, Reply::Error(ZkError::NoNode)) => {}
            (Op::Owner, Reply::Exists { stat }) => self.on_owner(Some(stat.ephemeral_owner)),
            (Op::Owner, Reply::Error(ZkError::NoNode)) => self.on_owner(None),
            (Op::Delete, Reply::Deleted | Reply::Error(ZkError::NoNode)) => {
                self.finish(MemberEvent::Left)
            }
            (op, Reply::Error(e)) => self.on_error(op, e),
            (_, _) => {
                if self.step != Step::In {
                    self.finish(MemberEvent::Failed(Error::BadReply));
                }
            }
        }
    }

    fn handle_watch(&mut self, _now: Instant, event: WatchEvent<'_>) {
        if event.path != self.node.as_str() || !self.link.is_up() {
            return;
        }
        if self.step == Step::Waiting {
            // The earlier session's node went: ours to create. Anything
            // else spent the watch: read again.
            match event.kind {
                WatchKind::NodeDeleted => self.start_create(),
                _ => self.ops.queue(Op::Check),
            }
            return;
        }
        if self.step != Step::In {
            return;
        }
        match event.kind {
            // Deleted by someone else: out, and back in.
            WatchKind::NodeDeleted => {
                self.now_out();
                self.start_create();
            }
            // Data changed by someone else: keep watching.
            _ => self.ops.queue(Op::Check),
        }
    }

    fn handle_session(&mut self, _now: Instant, event: SessionEvent) {
        match event {
            SessionEvent::Connected { session_id } => {
                let reconnect = self.link.connected();
                let changed = self.sessions.connected(session_id);
                let new_session = reconnect == Reconnect::New || changed;
                if reconnect != Reconnect::Same || new_session {
                    self.resume(new_session);
                }
            }
            SessionEvent::Suspended => self.connection_lost(None),
            SessionEvent::Expired | SessionEvent::Closed => self.session_ended(event),
        }
    }

    fn poll_event(&mut self) -> Option<MemberEvent> {
        self.events.pop()
    }
}

impl<const D: usize, const N: usize> fmt::Debug for Member<D, N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Member")
            .field("node", &self.node.as_str())
            .field("step", &self.step)
            .field("link", &self.link)
            .field("suspended", &self.suspended)
            .finish()
    }
}
