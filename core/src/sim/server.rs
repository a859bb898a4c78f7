//! The simulated server: sessions, per-session FIFO queues, and faults.

use alloc::collections::{BTreeMap, VecDeque};
use alloc::string::{String, ToString};
use alloc::vec::Vec;

use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use crate::{Request, RequestId, SessionEvent, Version, ZkError};

use super::owned::{Delivery, OwnedRequest};
use super::tree::{Change, Node, Tree};
use super::watches::{Table, Watches};
use super::SessionId;
use crate::owned::OwnedReply;

/// Where a session stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SessionStatus {
    /// Connected: requests flow.
    Connected,
    /// The connection is lost; the session lives on (its ephemerals and
    /// watches stay) until it reconnects or expires.
    Disconnected,
    /// Expired: its ephemerals are gone; it can never be used again.
    Expired,
    /// Closed by its client: likewise gone for good.
    Closed,
}

#[derive(Debug)]
struct Session {
    status: SessionStatus,
    /// Submitted, not yet applied by the server.
    inbound: VecDeque<(RequestId, OwnedRequest)>,
    /// Applied; replies and notifications on their way to the client.
    outbound: VecDeque<Delivery>,
    /// Notifications that fired while disconnected: delivered on reconnect,
    /// as the real clients' SetWatches re-registration does.
    held: Vec<Delivery>,
    notifications_delivered: u64,
}

/// Counters for assertions.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Requests applied, by operation name (`"create"`, `"getChildren"`, ...).
    pub requests: BTreeMap<&'static str, u64>,
    /// Watch notifications delivered to clients.
    pub notifications: u64,
}

impl Stats {
    /// Requests of one kind applied so far.
    pub fn count(&self, kind: &str) -> u64 {
        self.requests.get(kind).copied().unwrap_or(0)
    }
}

/// An in-memory ZooKeeper server.
///
/// Requests are queued per session ([`submit`](SimZk::submit)), applied in
/// order when the test says so ([`apply_next`](SimZk::apply_next)), and their
/// replies and watch notifications delivered in order
/// ([`next_delivery`](SimZk::next_delivery)). Between those steps faults can
/// be injected. Children lists come back in a seeded random order, as a real
/// server returns them in hash order.
#[derive(Debug)]
pub struct SimZk {
    tree: Tree,
    watches: Watches,
    sessions: BTreeMap<SessionId, Session>,
    next_session: SessionId,
    zxid: i64,
    now_ms: i64,
    rng: ChaCha8Rng,
    stats: Stats,
}

impl SimZk {
    /// An empty tree (with `/zookeeper`), deterministic from `seed`.
    pub fn new(seed: u64) -> Self {
        SimZk {
            tree: Tree::new(),
            watches: Watches::default(),
            sessions: BTreeMap::new(),
            next_session: 0x1000,
            zxid: 1,
            now_ms: 0,
            rng: ChaCha8Rng::seed_from_u64(seed),
            stats: Stats::default(),
        }
    }

    /// Opens a new, connected session.
    pub fn open_session(&mut self) -> SessionId {
        self.next_session += 1;
        self.sessions.insert(
            self.next_session,
            Session {
                status: SessionStatus::Connected,
                inbound: VecDeque::new(),
                outbound: VecDeque::new(),
                held: Vec::new(),
                notifications_delivered: 0,
            },
        );
        self.next_session
    }

    /// Sets the clock used for `ctime`/`mtime`.
    pub fn set_time(&mut self, now_ms: i64) {
        self.now_ms = now_ms;
    }

    /// The status of a session (`None` if it was never opened).
    pub fn status(&self, session: SessionId) -> Option<SessionStatus> {
        self.sessions.get(&session).map(|s| s.status)
    }

    /// Whether the session still exists (connected or not).
    pub fn is_live(&self, session: SessionId) -> bool {
        matches!(
            self.status(session),
            Some(SessionStatus::Connected | SessionStatus::Disconnected)
        )
    }

    /// Queues a request from a session's client. Requests sent on a session
    /// that is not connected are lost, as on a broken socket; on an expired
    /// or closed session they are answered with `SessionExpired`.
    pub fn submit(&mut self, session: SessionId, id: RequestId, request: &Request<'_>) {
        let Some(s) = self.sessions.get_mut(&session) else {
            return;
        };
        match s.status {
            SessionStatus::Connected => s
                .inbound
                .push_back((id, OwnedRequest::from_request(request))),
            SessionStatus::Disconnected => {}
            SessionStatus::Expired | SessionStatus::Closed => s.outbound.push_back(
                Delivery::Reply(id, OwnedReply::Error(ZkError::SessionExpired)),
            ),
        }
    }

    /// Requests of a session waiting to be applied.
    pub fn pending_requests(&self, session: SessionId) -> usize {
        self.sessions.get(&session).map_or(0, |s| s.inbound.len())
    }

    /// Deliveries waiting for a session's client.
    pub fn pending_deliveries(&self, session: SessionId) -> usize {
        self.sessions.get(&session).map_or(0, |s| s.outbound.len())
    }

    /// Applies a session's oldest queued request. Returns whether there was one.
    pub fn apply_next(&mut self, session: SessionId) -> bool {
        let Some((id, request)) = self
            .sessions
            .get_mut(&session)
            .and_then(|s| s.inbound.pop_front())
        else {
            return false;
        };
        *self.stats.requests.entry(request.kind()).or_default() += 1;
        let reply = self.apply(session, &request);
        if let Some(s) = self.sessions.get_mut(&session) {
            s.outbound.push_back(Delivery::Reply(id, reply));
        }
        true
    }

    /// The next thing a session's client receives, in order.
    pub fn next_delivery(&mut self, session: SessionId) -> Option<Delivery> {
        let s = self.sessions.get_mut(&session)?;
        let delivery = s.outbound.pop_front()?;
        if matches!(delivery, Delivery::Watch(..)) {
            s.notifications_delivered += 1;
            self.stats.notifications += 1;
        }
        Some(delivery)
    }

    /// Breaks a session's connection: queued requests are never applied,
    /// replies of applied ones are lost, and the client hears `Suspended`.
    /// Watches stay registered; what fires meanwhile comes after reconnect.
    pub fn disconnect(&mut self, session: SessionId) {
        let Some(s) = self.sessions.get_mut(&session) else {
            return;
        };
        if s.status != SessionStatus::Connected {
            return;
        }
        s.status = SessionStatus::Disconnected;
        s.inbound.clear();
        // Replies in flight are lost with the connection. Notifications the
        // server already sent are lost too, but a real client re-registers
        // its watches with `SetWatches` and its last zxid on reconnect, and
        // the server fires them again for every change since: so they come
        // after the reconnect, ahead of anything that fired meanwhile.
        let mut resent: Vec<Delivery> = s
            .outbound
            .drain(..)
            .filter(|d| matches!(d, Delivery::Watch(..)))
            .collect();
        resent.append(&mut s.held);
        s.held = resent;
        s.outbound
            .push_back(Delivery::Session(SessionEvent::Suspended));
    }

    /// Applies the session's next request, then breaks the connection before
    /// its reply can be read: the write happened, the client cannot know.
    pub fn lose_reply_after_apply(&mut self, session: SessionId) {
        self.apply_next(session);
        self.disconnect(session);
    }

    /// Re-establishes a disconnected session: the client hears `Connected`,
    /// then the notifications that fired while it was away.
    pub fn reconnect(&mut self, session: SessionId) {
        let Some(s) = self.sessions.get_mut(&session) else {
            return;
        };
        if s.status != SessionStatus::Disconnected {
            return;
        }
        s.status = SessionStatus::Connected;
        s.outbound
            .push_back(Delivery::Session(SessionEvent::Connected {
                session_id: session,
            }));
        let held: Vec<Delivery> = s.held.drain(..).collect();
        s.outbound.extend(held);
    }

    /// Expires a session: its ephemerals are deleted (other sessions'
    /// watches fire), its watches and queues dropped, its client hears
    /// `Expired`.
    pub fn expire(&mut self, session: SessionId) {
        self.end_session(session, SessionStatus::Expired, SessionEvent::Expired);
    }

    /// Closes a session at its client's request, with the same effects as
    /// expiry; the client hears `Closed`.
    pub fn close(&mut self, session: SessionId) {
        self.end_session(session, SessionStatus::Closed, SessionEvent::Closed);
    }

    fn end_session(&mut self, session: SessionId, status: SessionStatus, event: SessionEvent) {
        match self.sessions.get_mut(&session) {
            Some(s)
                if matches!(
                    s.status,
                    SessionStatus::Connected | SessionStatus::Disconnected
                ) =>
            {
                s.status = status;
                s.inbound.clear();
                s.outbound.clear();
                s.held.clear();
                s.outbound.push_back(Delivery::Session(event));
            }
            _ => return,
        }
        self.watches.drop_session(session);
        for path in self.tree.ephemerals_of(session) {
            self.zxid += 1;
            if self.tree.delete(&path, Version::Any, self.zxid).is_ok() {
                self.notify(Change::Deleted { path });
            }
        }
    }

    fn notify(&mut self, change: Change) {
        for (session, kind, path) in self.watches.trigger(&change) {
            if let Some(s) = self.sessions.get_mut(&session) {
                let delivery = Delivery::Watch(kind, path);
                match s.status {
                    SessionStatus::Connected => s.outbound.push_back(delivery),
                    SessionStatus::Disconnected => s.held.push(delivery),
                    SessionStatus::Expired | SessionStatus::Closed => {}
                }
            }
        }
    }

    fn apply(&mut self, session: SessionId, request: &OwnedRequest) -> OwnedReply {
        match request {
            OwnedRequest::Create { path, data, mode } => {
                self.zxid += 1;
                match self
                    .tree
                    .create(path, data, *mode, session, self.zxid, self.now_ms)
                {
                    Ok(full) => {
                        self.notify(Change::Created { path: full.clone() });
                        OwnedReply::Created(full)
                    }
                    Err(e) => OwnedReply::Error(e),
                }
            }
            OwnedRequest::Delete { path, version } => {
                self.zxid += 1;
                match self.tree.delete(path, *version, self.zxid) {
                    Ok(()) => {
                        self.notify(Change::Deleted { path: path.clone() });
                        OwnedReply::Deleted
                    }
                    Err(e) => OwnedReply::Error(e),
                }
            }
            OwnedRequest::SetData {
                path,
                data,
                version,
            } => {
                self.zxid += 1;
                match self
                    .tree
                    .set_data(path, data, *version, self.zxid, self.now_ms)
                {
                    Ok(stat) => {
                        self.notify(Change::DataChanged { path: path.clone() });
                        OwnedReply::DataSet(stat)
                    }
                    Err(e) => OwnedReply::Error(e),
                }
            }
            OwnedRequest::Exists { path, watch } => match self.tree.get(path) {
                Some(node) => {
                    let stat = node.stat;
                    if *watch {
                        self.watches.add(Table::Data, path, session);
                    }
                    OwnedReply::Exists(stat)
                }
                None => {
                    // The real server keeps a creation watch on a missing
                    // node: the leak recipes avoid by watching with getData.
                    if *watch {
                        self.watches.add(Table::Exist, path, session);
                    }
                    OwnedReply::Error(ZkError::NoNode)
                }
            },
            OwnedRequest::GetData { path, watch } => match self.tree.get(path) {
                Some(node) => {
                    let reply = OwnedReply::Data(node.data.clone(), node.stat);
                    if *watch {
                        self.watches.add(Table::Data, path, session);
                    }
                    reply
                }
                None => OwnedReply::Error(ZkError::NoNode),
            },
            OwnedRequest::GetChildren { path, watch } => match self.tree.children_of(path) {
                Some(mut names) => {
                    names.shuffle(&mut self.rng);
                    if *watch {
                        self.watches.add(Table::Child, path, session);
                    }
                    OwnedReply::Children(names)
                }
                None => OwnedReply::Error(ZkError::NoNode),
            },
            OwnedRequest::Check { path, version } => match self.tree.get(path) {
                Some(node) if version.matches(node.stat.version) => OwnedReply::Checked,
                Some(_) => OwnedReply::Error(ZkError::BadVersion),
                None => OwnedReply::Error(ZkError::NoNode),
            },
            OwnedRequest::Sync { .. } => OwnedReply::Synced,
        }
    }

    /// A node, if it exists.
    pub fn node(&self, path: &str) -> Option<&Node> {
        self.tree.get(path)
    }

    /// The names of a node's children, sorted (`None` if it does not exist).
    pub fn children(&self, path: &str) -> Option<Vec<String>> {
        self.tree.children_of(path)
    }

    /// Creates a persistent node and its missing ancestors, outside any
    /// session (test setup).
    pub fn create_persistent(&mut self, path: &str, data: &[u8]) -> Result<(), ZkError> {
        let mut end = 0;
        while let Some(i) = path[end + 1..].find('/') {
            end += i + 1;
            self.create_setup(&path[..end], &[])?;
        }
        self.create_setup(path, data)
    }

    fn create_setup(&mut self, path: &str, data: &[u8]) -> Result<(), ZkError> {
        self.zxid += 1;
        match self.tree.create(
            path,
            data,
            crate::CreateMode::Persistent,
            0,
            self.zxid,
            self.now_ms,
        ) {
            Ok(full) => {
                self.notify(Change::Created { path: full });
                Ok(())
            }
            Err(ZkError::NodeExists) => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Deletes a node outside any recipe, as an operator's session would
    /// (`delete` in zkCli): watches fire as for any deletion. Fails as the
    /// server does (`NoNode`, `NotEmpty`).
    pub fn delete_node(&mut self, path: &str) -> Result<(), ZkError> {
        self.zxid += 1;
        self.tree.delete(path, Version::Any, self.zxid)?;
        self.notify(Change::Deleted {
            path: path.to_string(),
        });
        Ok(())
    }

    /// Deletes a node and everything below it, deepest first, as zkCli's
    /// `deleteall` does. Returns how many nodes were deleted.
    pub fn delete_recursive(&mut self, path: &str) -> Result<usize, ZkError> {
        let children = self.tree.children_of(path).ok_or(ZkError::NoNode)?;
        let mut deleted = 0;
        for child in children {
            let child_path = if path == "/" {
                alloc::format!("/{child}")
            } else {
                alloc::format!("{path}/{child}")
            };
            deleted += self.delete_recursive(&child_path)?;
        }
        self.delete_node(path)?;
        Ok(deleted + 1)
    }

    /// Writes a node's data outside any recipe, as an operator would
    /// (`set` in zkCli), with any version.
    pub fn set_node_data(&mut self, path: &str, data: &[u8]) -> Result<(), ZkError> {
        self.zxid += 1;
        self.tree
            .set_data(path, data, Version::Any, self.zxid, self.now_ms)?;
        self.notify(Change::DataChanged {
            path: path.to_string(),
        });
        Ok(())
    }

    /// Sets a node's child counter (`cversion`), e.g. near `i32::MAX` to
    /// test sequence numbers wrapping to negative values.
    pub fn set_cversion(&mut self, path: &str, cversion: i32) -> Result<(), ZkError> {
        self.tree
            .get_mut(path)
            .map(|n| n.stat.cversion = cversion)
            .ok_or(ZkError::NoNode)
    }

    /// Number of registered watches (path and session pairs), like the
    /// server's `zk_watch_count`.
    pub fn watch_count(&self) -> usize {
        self.watches.count()
    }

    /// The paths a session watches, with the kind of watch
    /// (`"data"`, `"exist"` or `"child"`).
    pub fn watches_of(&self, session: SessionId) -> Vec<(&'static str, String)> {
        self.watches
            .of_session(session)
            .into_iter()
            .map(|(t, p)| {
                let kind = match t {
                    Table::Data => "data",
                    Table::Exist => "exist",
                    Table::Child => "child",
                };
                (kind, p)
            })
            .collect()
    }

    /// Watch notifications delivered to a session's client so far.
    pub fn notifications_delivered(&self, session: SessionId) -> u64 {
        self.sessions
            .get(&session)
            .map_or(0, |s| s.notifications_delivered)
    }

    /// Counters of applied requests and delivered notifications.
    pub fn stats(&self) -> &Stats {
        &self.stats
    }
}
