//! The flow around a [`Contention`] that the lock runs (and with it the
//! election's candidate, which is built on the lock): answering a create,
//! a refused create or ancestor, a search by GUID, a vanished directory,
//! and finding the way back after a reconnect or when winding up.
//!
//! The lock keeps its steps and outcomes and says, through the required
//! methods, what "create again", "find by GUID" or "finish" mean for it;
//! the decisions between them are written here.

use crate::engine::ancestors::AncestorOp;
use crate::engine::contender_op::Op;
use crate::engine::contention::{Contention, CreateRefusal, Own, ScanMode, Scanned, Standing};
use crate::engine::pipeline::Pipeline;
use crate::{path, Children, Error, Reply, RequestId, Sequence, SessionEvent, ZkError};

/// Requests a contender may have in flight at once.
pub(crate) const MAX_IN_FLIGHT: usize = 8;

/// Requests a contender queues to send at most.
pub(crate) const QUEUED: usize = 12;

/// A recipe whose protocol is built on a [`Contention`].
pub(crate) trait ContentionFlow<const N: usize> {
    /// The contender's place in the directory.
    fn line(&mut self) -> &mut Contention<N>;
    /// The recipe's requests.
    fn ops(&mut self) -> &mut Pipeline<Op, QUEUED, MAX_IN_FLIGHT>;
    /// An outcome (give-up, release, resignation, failure) is pending: a
    /// node found or made is to be deleted, not used.
    fn winding_up(&self) -> bool;
    /// Searching the directory by GUID for a create in doubt.
    fn finding(&self) -> bool;
    /// Records `e` as the outcome, unless one is pending already.
    fn fail_with(&mut self, e: Error);
    /// Gives up on `e` as the recipe does for any failure.
    fn fail(&mut self, e: Error);
    /// Reports the pending outcome and goes idle.
    fn finish(&mut self);
    /// Deletes the own node, then finishes.
    fn start_delete(&mut self);
    /// Sends the create and the listing (again).
    fn create(&mut self);
    /// Lists the directory to find the own node by GUID.
    fn find(&mut self);
    /// The own node is known: from now on listings say where it stands.
    fn placed(&mut self);
    /// The own node is gone while contending (an operator, a listing
    /// without its directory).
    fn own_node_vanished(&mut self);
    /// A request's answer says the connection is gone.
    fn connection_lost(&mut self);
    /// The session is gone (`how`), and the own node with it.
    fn session_ended(&mut self, how: SessionEvent);
    /// The create answered with the own node's path.
    fn on_created(&mut self, full_path: &str);
    /// A listing now says where the own node stands (the recipe is
    /// creating its node or listing).
    fn listing_stands(&self) -> bool;
    /// The sequence of `name` if it is a node this contender waits for.
    fn waits_for(&self, name: &str) -> Option<Sequence>;
    /// A whole listing said where the own node stands.
    fn on_standing(&mut self, standing: Standing);
}

/// A contender as a trait object, for the shared flow below.
pub(crate) trait AsFlow<const N: usize> {
    /// This contender as the one type the shared flow is compiled for.
    fn flow(&mut self) -> &mut dyn ContentionFlow<N>;
}

impl<const N: usize, C: ContentionFlow<N>> AsFlow<N> for C {
    fn flow(&mut self) -> &mut dyn ContentionFlow<N> {
        self
    }
}

// The flow is written on the trait object, not as provided methods, which
// would be compiled once for every type that implements the trait: it is
// compiled once whatever does.
impl<const N: usize> dyn ContentionFlow<N> + '_ {
    /// The connection or the session is gone, as the answer `e` says.
    pub(crate) fn connection_or_session_lost(&mut self, e: ZkError) {
        if e.is_connection_loss() {
            self.connection_lost();
        } else {
            self.session_ended(SessionEvent::Expired);
        }
    }

    /// Forgets requests of these kinds: their answers are ignored.
    pub(crate) fn forget(&mut self, ops: &[Op]) {
        self.ops().forget(|op| ops.contains(&op));
    }

    /// Lists the directory.
    fn queue_listing(&mut self) {
        self.ops().queue(Op::List);
    }

    /// Lists the directory to search for a create in doubt, behind a
    /// no-op write in the same flight (`engine::catch_up`). The create's
    /// answer was lost, so the client has not seen its zxid, and the
    /// server it reconnected to may not have applied it yet: a listing
    /// from there would miss the node, and the contender would create a
    /// second one that nobody deletes, every later contender stuck behind
    /// it. The write is ordered after the create on every server (a
    /// create from the old connection is refused once the session has
    /// moved), so the listing behind it shows the node if it was made.
    pub(crate) fn queue_search(&mut self) {
        self.ops().queue(Op::CatchUp);
        self.ops().queue(Op::List);
    }

    /// Creates the directory's ancestors, then the own node and the
    /// listing.
    fn create_with_ancestors(&mut self) {
        let ops = self.ops();
        ops.clear_queued();
        ops.push(Op::ancestor(1));
        ops.push(Op::Create);
        ops.push(Op::List);
    }

    /// Answers a reply to a request every contender sends (an ancestor's
    /// create, the own node's create, the listing), and any answer that
    /// says the connection or the session is gone. Hands back any other
    /// reply, and a listing's refusal other than `NoNode`.
    pub(crate) fn on_line_reply<'r>(
        &mut self,
        id: RequestId,
        op: Op,
        reply: Reply<'r>,
    ) -> Option<Reply<'r>> {
        if op == Op::Create {
            match reply {
                Reply::Created { path } => self.on_created(path),
                Reply::Error(e) => self.on_create_refused(e),
                _ => self.fail(Error::BadReply),
            }
        } else if let Some(e) = reply
            .error()
            .filter(|e| e.is_connection_loss() || e.is_session_gone())
        {
            // Whatever else was asked, the connection or the session is
            // gone: the contender's requests go with it.
            self.connection_or_session_lost(e);
        } else if op.ancestor_level().is_some() {
            match reply {
                Reply::Created { .. } | Reply::Error(ZkError::NodeExists) => {
                    self.line().directory_answered();
                }
                Reply::Error(e) => self.on_ancestor_refused(e),
                _ => self.fail(Error::BadReply),
            }
        } else if op == Op::List {
            match reply {
                Reply::Children(children) => self.read_listing(id, children, true),
                Reply::Error(ZkError::NoNode) => self.on_directory_gone(),
                other => return Some(other),
            }
        } else if op != Op::CatchUp {
            // The catch-up's listing answers, a missing directory too.
            return Some(reply);
        }
        None
    }

    /// Part of the listing `id` ([`Recipe::handle_listing_part`](crate::Recipe::handle_listing_part)):
    /// the request stays in flight until the last part.
    pub(crate) fn listing_part(&mut self, id: RequestId, names: Children<'_>, last: bool) {
        // Written out rather than through `Pipeline::listing_part_of`, which
        // costs the firmware 8 B more here.
        if self.ops().op_of(id) != Some(Op::List) {
            return;
        }
        if last {
            self.ops().take(id);
        }
        self.read_listing(id, names, last);
    }

    /// Reads names of the listing `id`, the whole of it or a part, in one
    /// pass; after the last, acts on what it said.
    fn read_listing(&mut self, id: RequestId, names: Children<'_>, last: bool) {
        if !self.line().is_scanning(id) {
            let mode = if self.finding() {
                ScanMode::Find
            } else if self.listing_stands() {
                ScanMode::Stand
            } else {
                ScanMode::Ignore
            };
            self.line().begin_scan(id, mode);
        }
        for name in names {
            let waits = self.waits_for(name);
            self.line().scan_name(name, waits);
        }
        if !last {
            return;
        }
        // The step chosen at the first part still holds: whatever moves
        // the recipe on between parts (a cancel, a deadline, a
        // resignation) forgets the listing, and a lost connection voids it
        // with the epoch, so its last part is not read.
        match self.line().end_scan() {
            Scanned::Found(found) => {
                if self.on_found(found) {
                    self.queue_listing();
                }
            }
            Scanned::Stood(standing) => self.on_standing(standing),
            Scanned::Ignored => {}
        }
    }

    /// A create answered with the own node's path. Returns whether the
    /// contender goes on with it (it is not winding up).
    pub(crate) fn adopt_created(&mut self, full_path: &str) -> bool {
        if !self.line().store_own(path::basename(full_path)) {
            self.line().doubt_create();
            self.fail(Error::BadReply);
            return false;
        }
        if self.winding_up() {
            self.start_delete();
            return false;
        }
        true
    }

    /// A create was refused.
    fn on_create_refused(&mut self, e: ZkError) {
        match self.line().create_refused(e) {
            CreateRefusal::NoDirectory => {
                self.forget(&[Op::List]);
                if self.winding_up() {
                    return self.finish();
                }
                self.create_with_ancestors();
            }
            CreateRefusal::Lost => self.connection_or_session_lost(e),
            // A transport that cannot read the node's path cannot read
            // the notifications about it either: fail, but only once the
            // node is found (by GUID) and deleted. Failing at once left it
            // ahead of every other contender for as long as the session
            // lived.
            CreateRefusal::Unread => {
                self.forget(&[Op::List]);
                self.fail_with(Error::Zk(e));
                self.find();
            }
            CreateRefusal::Refused(e) => {
                self.forget(&[Op::List]);
                self.fail_with(Error::Zk(e));
                self.finish();
            }
        }
    }

    /// Creating an ancestor of the directory was refused (other than with
    /// `NodeExists`, which is success, or for a connection or session
    /// gone).
    fn on_ancestor_refused(&mut self, e: ZkError) {
        self.forget(&[Op::Create, Op::List]);
        self.fail_with(Error::Zk(e));
        self.finish();
    }

    /// A listing was answered `NoNode`: the directory vanished, with the
    /// own node in it.
    fn on_directory_gone(&mut self) {
        if self.finding() {
            self.line().settle();
            if self.winding_up() {
                self.finish();
            } else {
                self.create();
            }
        } else if self.line().has_own() && !self.winding_up() {
            self.own_node_vanished();
        }
    }

    /// While finding, a listing's answer: adopts the own node if it was
    /// `found` there. Returns whether a listing is to say where the node
    /// stands (the one searched was read before the node was known).
    fn on_found(&mut self, found: bool) -> bool {
        self.line().settle();
        if self.winding_up() {
            if found {
                self.start_delete();
            } else {
                self.finish();
            }
            return false;
        }
        if !found {
            self.create();
            return false;
        }
        self.placed();
        true
    }

    /// After a reconnect, while contending: list with the own node, search
    /// for one in doubt, or create it.
    pub(crate) fn regain_place(&mut self) {
        match self.line().own() {
            Own::Known(_) => {
                self.placed();
                self.queue_listing();
            }
            Own::InDoubt => self.find(),
            Own::Absent => self.create(),
        }
    }

    /// Winding up, the round's `reads` dropped: delete the own node once
    /// it is known, found, or made by the create in flight; with none,
    /// finish.
    pub(crate) fn wind_up(&mut self, reads: &[Op]) {
        self.forget(reads);
        let create_in_flight = self.ops().is_in_flight(Op::Create);
        if self.line().has_own() {
            self.start_delete();
        } else if create_in_flight {
            // Its answer sees the outcome pending and deletes what it made
            // (the step is Creating whenever a create is in flight).
        } else {
            self.finish_or_find();
        }
    }

    /// Finishes, unless a create in doubt must first be found (to delete).
    /// Searches that keep failing (a directory this session may not list,
    /// a name over an embedded driver's receive buffer) end in the failure
    /// after eight of them rather than repeat at the server's pace; a node
    /// the lost create made is then left until the session ends.
    pub(crate) fn finish_or_find(&mut self) {
        // Finishing forgets the doubt with the own node.
        if self.line().search_again() {
            self.find();
        } else {
            self.finish();
        }
    }
}
