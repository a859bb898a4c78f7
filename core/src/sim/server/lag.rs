//! Reads from a server behind the quorum.
//!
//! ZooKeeper answers a read from the server the session is connected to,
//! which may not yet have applied writes that other clients have seen
//! succeed; all it promises is that one session never sees the tree go
//! back (a server refuses a client that has seen a later zxid than it has,
//! and serves a session's requests in order, so a read behind the session's
//! own write sees that write). A `sync` catches a follower up with the
//! leader, but on the leader itself it is answered at once, while the
//! leader applies a transaction after telling its followers to: a client of
//! the leader can miss a write that a follower's client already saw
//! succeed. This module models the weakest server those rules allow: each
//! session reads the tree as of its own `view`, which moves forward only
//! on the session's writes, on notifications (the server applied the
//! change), at random on reads, and never on a `sync`. A new session
//! starts up to date, and a reconnected one as far back as what its client
//! has read.

use alloc::collections::VecDeque;
use alloc::string::String;

use rand::Rng;

use super::{ClientWatch, SessionId, SimZk};
use crate::sim::owned::OwnedRequest;
use crate::sim::tree::Tree;
use crate::wire::WatchClass;
use crate::WatchKind;

/// How many past states of the tree a lagging server can be at.
const DEPTH: usize = 64;

/// The tree as of each recent zxid, oldest first: `(zxid, tree)` is the
/// tree once transactions up to `zxid` are applied.
pub(super) type History = VecDeque<(i64, Tree)>;

impl SimZk {
    /// Serves reads as a server behind the quorum may (see the module's
    /// documentation): a session's reads can miss other sessions' recent
    /// writes, however they were synced. Off by default; turn it on before
    /// the writes whose staleness the test is about.
    pub fn set_lagging_reads(&mut self, on: bool) {
        self.lag = on.then(History::new);
    }

    /// Moves to the next zxid, remembering the tree as of the current one
    /// while reads lag.
    pub(super) fn next_zxid(&mut self) -> i64 {
        if let Some(history) = &mut self.lag {
            history.push_back((self.zxid, self.tree.clone()));
            if history.len() > DEPTH {
                history.pop_front();
            }
        }
        self.zxid += 1;
        self.zxid
    }

    /// The zxid as of which `session`'s server answers `request`: the
    /// current one for writes (which go through the leader and are applied
    /// before their answer) and when reads do not lag; otherwise the
    /// session's view, caught up at random on a read and never on a `sync`.
    pub(super) fn view_for(&mut self, session: SessionId, request: &OwnedRequest) -> i64 {
        let current = self.zxid;
        if self.lag.is_none() {
            return current;
        }
        let catch_up = match request {
            OwnedRequest::Exists { .. }
            | OwnedRequest::GetData { .. }
            | OwnedRequest::GetChildren { .. } => self.rng.gen_bool(0.5),
            OwnedRequest::Sync { .. } => false,
            _ => return current,
        };
        self.sessions.get_mut(&session).map_or(current, |s| {
            if catch_up {
                s.view = current;
            }
            s.view
        })
    }

    /// Moves `session`'s server to at least `zxid`.
    pub(super) fn see(&mut self, session: SessionId, zxid: i64) {
        if let Some(s) = self.sessions.get_mut(&session) {
            s.view = s.view.max(zxid);
        }
    }

    /// The tree as a server that has applied every transaction up to
    /// `zxid` has it (or a later one, when that state is no longer
    /// remembered: a server may always be further ahead).
    pub(super) fn tree_as_of(&self, zxid: i64) -> &Tree {
        match &self.lag {
            Some(history) if zxid < self.zxid => history
                .iter()
                .rev()
                .find(|(at, _)| *at <= zxid)
                .or(history.front())
                .map_or(&self.tree, |(_, tree)| tree),
            _ => &self.tree,
        }
    }

    /// The notification a watch set by a read as of `view` owes at once:
    /// the server that set it applies the later transactions next, and
    /// fires it on the first that touches it.
    pub(super) fn owed_by(&self, view: i64, watch: &ClientWatch) -> Option<(WatchKind, String)> {
        let (class, path) = watch;
        let then = self.tree_as_of(view).get(path).map(|n| n.stat);
        let now = self.tree.get(path).map(|n| n.stat);
        let kind = match (class, then, now) {
            (WatchClass::Exist, None, Some(_)) => WatchKind::NodeCreated,
            (WatchClass::Data | WatchClass::Child, Some(_), None) => WatchKind::NodeDeleted,
            (WatchClass::Data | WatchClass::Child, Some(a), Some(b)) if a.czxid != b.czxid => {
                WatchKind::NodeDeleted
            }
            (WatchClass::Data, Some(a), Some(b)) if a.mzxid != b.mzxid => {
                WatchKind::NodeDataChanged
            }
            (WatchClass::Child, Some(a), Some(b)) if a.pzxid != b.pzxid => {
                WatchKind::NodeChildrenChanged
            }
            _ => return None,
        };
        Some((kind, path.clone()))
    }
}
