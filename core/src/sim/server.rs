//! The simulated server: sessions, per-session FIFO queues, and faults.

use alloc::collections::{BTreeMap, BTreeSet, VecDeque};
use alloc::string::{String, ToString};
use alloc::vec::Vec;

use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::{perms, Request, RequestId, SessionEvent, Version, WatchKind, ZkError};

use super::acl::{self, Identity};
use super::owned::{Delivery, OwnedRequest};
use super::tree::{parent_of, Change, Node, Tree};
use super::watches::Watches;
use super::SessionId;
use crate::owned::OwnedReply;
use crate::wire::WatchClass;

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

/// A watch as a client knows it: set by a request whose reply it read.
type ClientWatch = (WatchClass, String);

/// Something on its way to a client, with the zxid it tells the client of
/// and, for a reply, the watch its request set on the server.
#[derive(Debug)]
struct Outbound {
    delivery: Delivery,
    zxid: i64,
    watch: Option<ClientWatch>,
}

impl Outbound {
    /// A state change or a lost answer: tells the client of no zxid.
    fn without_zxid(delivery: Delivery) -> Self {
        Outbound {
            delivery,
            zxid: 0,
            watch: None,
        }
    }
}

#[derive(Debug)]
struct Session {
    status: SessionStatus,
    /// Submitted, not yet applied by the server. While disconnected,
    /// requests wait here and go out on the next connection, as the
    /// drivers' clients queue them.
    inbound: VecDeque<(RequestId, OwnedRequest)>,
    /// Applied; replies and notifications on their way to the client.
    outbound: VecDeque<Outbound>,
    /// The watches the client believes armed: their setting reply was read,
    /// their notification not yet. A reconnect re-registers exactly these
    /// (the clients' `SetWatches`).
    client_watches: BTreeSet<ClientWatch>,
    /// The last zxid the client read, sent with `SetWatches`.
    last_zxid: i64,
    /// The zxid up to which the session's server has applied transactions,
    /// when reads lag (see [`lag`]).
    view: i64,
    notifications_delivered: u64,
    /// Who the session is, for the nodes' ACLs: its address and the
    /// identities it authenticated as.
    ids: Vec<Identity>,
}

/// In which order a driver hands a session's replies and notifications to
/// its recipes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DriverOrder {
    /// As the server sent them (herdless-embassy's wire session).
    #[default]
    Wire,
    /// A notification that is waiting is handed over before replies that
    /// wait ahead of it (herdless-std, whose driver polls the client's
    /// notifications before its replies, so a notification may overtake an
    /// earlier reply, never a later one).
    NotificationsFirst,
}

/// The first notification that may overtake the replies queued ahead of
/// it: only replies are overtaken (a session event is a barrier, as the
/// driver reports them from the client's state in order), and never the
/// reply that set a watch on the notification's path (the driver only
/// listens for a watch once that reply is in).
fn overtaking(outbound: &VecDeque<Outbound>) -> Option<usize> {
    let queued = || {
        outbound
            .iter()
            .take_while(|o| !matches!(o.delivery, Delivery::Session(_)))
    };
    queued().enumerate().find_map(|(i, o)| match &o.delivery {
        Delivery::Watch(_, path) => {
            let set_here = queued()
                .take(i)
                .any(|r| r.watch.as_ref().is_some_and(|(_, p)| p == path));
            (!set_here).then_some(i)
        }
        _ => None,
    })
}

/// Where a driver reports a lost connection relative to the
/// `ConnectionLoss` answers of the requests that were in flight.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum LossReport {
    SuspendedFirst,
    AnswersFirst,
    /// The client reconnected before the driver looked at its state: the
    /// answers alone tell the recipe, and with nothing in flight, nothing
    /// does (zookeeper-client's state watcher keeps only the latest state);
    /// the reconnect's `SetWatches` notifications are then all it hears.
    AnswersOnly,
}

/// Why [`SimZk::apply_multi`] changed nothing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MultiFailure {
    /// The position in the multi of the op that failed (0 when the session
    /// could not send the multi at all).
    pub index: usize,
    /// Why it failed.
    pub error: ZkError,
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
    order: DriverOrder,
    listing_part: Option<usize>,
    /// Past states of the tree, while reads lag.
    lag: Option<lag::History>,
    /// Path prefixes whose requests are refused, and with what.
    refusals: Vec<(String, ZkError)>,
    /// Whether a reconnect re-registers the client's watches.
    watch_reset: bool,
    /// How often a write's data is over an embedded driver's receive
    /// buffer.
    oversized_writes: f64,
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
            order: DriverOrder::Wire,
            listing_part: None,
            lag: None,
            refusals: Vec::new(),
            watch_reset: true,
            oversized_writes: 0.0,
        }
    }

    /// Opens a new, connected session. Ids count up, so a later session
    /// has a larger id.
    pub fn open_session(&mut self) -> SessionId {
        self.next_session += 1;
        let view = self.zxid;
        self.sessions.insert(
            self.next_session,
            Session {
                status: SessionStatus::Connected,
                inbound: VecDeque::new(),
                outbound: VecDeque::new(),
                client_watches: BTreeSet::new(),
                last_zxid: 0,
                view,
                notifications_delivered: 0,
                // Every simulated client connects over loopback.
                ids: alloc::vec![("ip".to_string(), "127.0.0.1".to_string())],
            },
        );
        self.next_session
    }

    /// Adds an identity the session authenticated as (ZooKeeper's
    /// `addauth`), as the server's auth provider makes it: for `digest`,
    /// `user:` and the base64 SHA-1 of `user:password` (what
    /// `herdless_std::digest_id` computes). From then on the session is
    /// allowed what the nodes' ACLs grant that identity, and a create it
    /// asks with an `auth` entry gives it to this identity too.
    pub fn add_auth(&mut self, session: SessionId, scheme: &str, id: &str) {
        if let Some(s) = self.sessions.get_mut(&session) {
            let identity = (scheme.to_string(), id.to_string());
            if !s.ids.contains(&identity) {
                s.ids.push(identity);
            }
        }
    }

    /// The identities of a session, empty for an unknown one.
    fn ids(&self, session: SessionId) -> Vec<Identity> {
        self.sessions
            .get(&session)
            .map(|s| s.ids.clone())
            .unwrap_or_default()
    }

    /// Sets the order in which replies and notifications reach clients.
    pub fn set_driver_order(&mut self, order: DriverOrder) {
        self.order = order;
    }

    /// Whether a reconnect re-registers the watches the client knows of
    /// (`SetWatches`, the default). Without it, as from a wire session that
    /// keeps no watch table (`Session<T, PENDING, 0, 0>`, a
    /// herdless-embassy `Zk` built so) or a Java client with
    /// `zookeeper.disableAutoWatchReset`, a resumed session holds none of
    /// the watches it had, and a recipe must read again what it watches.
    pub fn set_watch_reset(&mut self, reset: bool) {
        self.watch_reset = reset;
    }

    /// Whether a reconnect re-registers the client's watches (see
    /// [`set_watch_reset`](Self::set_watch_reset)).
    pub fn watch_reset(&self) -> bool {
        self.watch_reset
    }

    /// Hands listings to recipes that take them in parts
    /// ([`Recipe::takes_listing_in_parts`](crate::Recipe::takes_listing_in_parts))
    /// `names` names at a time, as the embedded driver does when its
    /// receive buffer is smaller than the reply; `None` (the default) hands
    /// every listing over whole.
    pub fn set_listing_part(&mut self, names: Option<usize>) {
        self.listing_part = names.map(|n| n.max(1));
    }

    /// How many names a part of a listing holds, if listings go in parts.
    pub fn listing_part(&self) -> Option<usize> {
        self.listing_part
    }

    /// From now on, answers every request on a path that starts with
    /// `prefix` with `error`, applying nothing, as a server answers a
    /// session that a node's ACL denies (`NoAuth`), or with whatever other
    /// error a test wants a recipe to meet; `None` lifts the refusal. A
    /// multi fails at the first op it refuses. A sequential create is
    /// judged by the prefix it sends: refuse `/dir/` to refuse every child
    /// of `/dir` and nothing of `/dir` itself.
    pub fn refuse(&mut self, prefix: &str, error: Option<ZkError>) {
        self.refusals.retain(|(p, _)| p != prefix);
        if let Some(error) = error {
            self.refusals.push((prefix.to_string(), error));
        }
    }

    /// The error a request on `path` is refused with, if any.
    fn refusal(&self, path: &str) -> Option<ZkError> {
        self.refusals
            .iter()
            .find(|(prefix, _)| path.starts_with(prefix.as_str()))
            .map(|(_, error)| *error)
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

    /// Queues a request from a session's client. Requests sent while the
    /// session is disconnected wait for the next connection, as the
    /// drivers' clients keep them; on an expired or closed session they are
    /// answered with `SessionExpired`.
    pub fn submit(&mut self, session: SessionId, id: RequestId, request: &Request<'_>) {
        let Some(s) = self.sessions.get_mut(&session) else {
            return;
        };
        match s.status {
            SessionStatus::Connected | SessionStatus::Disconnected => s
                .inbound
                .push_back((id, OwnedRequest::from_request(request))),
            SessionStatus::Expired | SessionStatus::Closed => {
                s.outbound.push_back(Outbound::without_zxid(Delivery::Reply(
                    id,
                    OwnedReply::Error(ZkError::SessionExpired),
                )))
            }
        }
    }

    /// Requests of a session waiting to be applied (or, while it is
    /// disconnected, to be sent on its next connection).
    pub fn pending_requests(&self, session: SessionId) -> usize {
        self.sessions.get(&session).map_or(0, |s| s.inbound.len())
    }

    /// Whether the server can apply a request of the session now: one is
    /// queued and the session is connected.
    pub fn can_apply(&self, session: SessionId) -> bool {
        self.sessions
            .get(&session)
            .is_some_and(|s| s.status == SessionStatus::Connected && !s.inbound.is_empty())
    }

    /// Deliveries waiting for a session's client.
    pub fn pending_deliveries(&self, session: SessionId) -> usize {
        self.sessions.get(&session).map_or(0, |s| s.outbound.len())
    }

    /// Whether the clients read as herdless-embassy's driver does, through
    /// a receive buffer: listings go in parts (see
    /// [`set_listing_part`](Self::set_listing_part)), deliveries in the
    /// server's order.
    fn embedded_reads(&self) -> bool {
        self.listing_part.is_some() && self.order == DriverOrder::Wire
    }

    /// Makes a share `rate` of the writes that follow (creates and
    /// `setData`s, in a multi too) carry data over an embedded driver's
    /// receive buffer, as another client's or an operator's write might:
    /// that version of the node is [`oversized`](Node::oversized), and
    /// reading it is answered `ReplyTooLarge`, its watch set, as long as
    /// the node holds it. Only where the clients read as the embedded
    /// driver does (listings in parts, deliveries in the server's order):
    /// herdless-std's client reads any frame whole. A rate of 0 (the
    /// default) draws nothing, so schedules stay as they were.
    pub fn set_oversized_writes(&mut self, rate: f64) {
        self.oversized_writes = rate;
    }

    /// Whether a write just applied is to carry data over the buffer.
    fn draw_oversized(&mut self) -> bool {
        self.oversized_writes > 0.0
            && self.embedded_reads()
            && self.rng.gen_bool(self.oversized_writes.min(1.0))
    }

    /// Whether a session's next delivery is a listing that the embedded
    /// driver could be unable to read: the clients read as it does
    /// (listings go in parts, see
    /// [`set_listing_part`](Self::set_listing_part), and deliveries in the
    /// server's order), and the one first in line answers a `getChildren`.
    pub fn next_is_embedded_listing(&self, session: SessionId) -> bool {
        self.embedded_reads()
            && self.sessions.get(&session).is_some_and(|s| {
                matches!(
                    s.outbound.front().map(|o| &o.delivery),
                    Some(Delivery::Reply(_, OwnedReply::Children(_)))
                )
            })
    }

    /// Applies a connected session's oldest queued request. Returns whether
    /// there was one.
    pub fn apply_next(&mut self, session: SessionId) -> bool {
        if !self.can_apply(session) {
            return false;
        }
        let Some((id, request)) = self
            .sessions
            .get_mut(&session)
            .and_then(|s| s.inbound.pop_front())
        else {
            return false;
        };
        *self.stats.requests.entry(request.kind()).or_default() += 1;
        let before = self.zxid;
        let view = self.view_for(session, &request);
        let (reply, watch) = self.apply(session, &request, view);
        let current = self.zxid;
        // A read as of the present, and any write, tell of the present.
        let told = if view == before { current } else { view };
        // A lagging server's watch owes the changes it has not applied.
        let owed = watch.as_ref().and_then(|w| self.owed_by(view, w));
        let owes = owed.is_some();
        if let (None, Some((table, path))) = (&owed, &watch) {
            self.watches.add(*table, path, session);
        }
        if let Some(s) = self.sessions.get_mut(&session) {
            s.outbound.push_back(Outbound {
                delivery: Delivery::Reply(id, reply),
                zxid: told,
                watch,
            });
            if let Some((kind, path)) = owed {
                s.outbound.push_back(Outbound {
                    delivery: Delivery::Watch(kind, path),
                    zxid: current,
                    watch: None,
                });
            }
        }
        if owes || told == current {
            self.see(session, current);
        }
        true
    }

    /// The next thing a session's client receives: in the server's order,
    /// or with a waiting notification first under
    /// [`DriverOrder::NotificationsFirst`].
    pub fn next_delivery(&mut self, session: SessionId) -> Option<Delivery> {
        self.next_delivery_and_watch(session)
            .map(|(delivery, _)| delivery)
    }

    /// As [`next_delivery`](Self::next_delivery), with the watch a reply
    /// set on the server (its class and path), which the client now knows
    /// to be armed: a client model that hands out watchers takes them from
    /// here rather than restating the server's rules.
    pub fn next_delivery_and_watch(
        &mut self,
        session: SessionId,
    ) -> Option<(Delivery, Option<(WatchClass, String)>)> {
        let order = self.order;
        let s = self.sessions.get_mut(&session)?;
        let index = match order {
            DriverOrder::Wire => 0,
            DriverOrder::NotificationsFirst => overtaking(&s.outbound).unwrap_or(0),
        };
        let out = s.outbound.remove(index)?;
        s.last_zxid = s.last_zxid.max(out.zxid);
        match &out.delivery {
            Delivery::Watch(kind, path) => {
                s.notifications_delivered += 1;
                self.stats.notifications += 1;
                s.client_watches
                    .retain(|(class, p)| !(p == path && class.is_fired_by(*kind)));
            }
            Delivery::Reply(..) => {
                if let Some(watch) = &out.watch {
                    s.client_watches.insert(watch.clone());
                }
            }
            Delivery::Session(_) => {}
        }
        Some((out.delivery, out.watch))
    }

    /// Breaks a session's connection, as a real server and client see it:
    ///
    /// * every request in flight is answered with `ConnectionLoss`, both
    ///   those the server applied (their replies are lost) and those it never
    ///   read;
    /// * the server drops the connection's watches, and notifications on
    ///   their way are lost; a watch whose setting reply was lost is gone
    ///   for good, the others are re-registered by the reconnect;
    /// * the client hears `Suspended` before the answers, after them, or
    ///   (a client that reconnected before its driver looked) not at all:
    ///   chosen at random, as the drivers can deliver each.
    pub fn disconnect(&mut self, session: SessionId) {
        // A wire session, the only client without a watch reset here,
        // always reports the loss.
        let reports = if self.watch_reset { 3 } else { 2 };
        let report = match self.rng.gen_range(0..reports) {
            0 => LossReport::SuspendedFirst,
            1 => LossReport::AnswersFirst,
            _ => LossReport::AnswersOnly,
        };
        let Some(s) = self.sessions.get_mut(&session) else {
            return;
        };
        if s.status != SessionStatus::Connected {
            return;
        }
        s.status = SessionStatus::Disconnected;
        let lost = |id| {
            Outbound::without_zxid(Delivery::Reply(
                id,
                OwnedReply::Error(ZkError::ConnectionLoss),
            ))
        };
        let mut kept: VecDeque<Outbound> = VecDeque::new();
        let mut answers: Vec<Outbound> = Vec::new();
        for out in s.outbound.drain(..) {
            match out.delivery {
                Delivery::Reply(id, _) => answers.push(lost(id)),
                Delivery::Watch(..) => {}
                Delivery::Session(_) => kept.push_back(out),
            }
        }
        answers.extend(s.inbound.drain(..).map(|(id, _)| lost(id)));
        let suspended = Outbound::without_zxid(Delivery::Session(SessionEvent::Suspended));
        match report {
            LossReport::AnswersOnly => kept.extend(answers),
            LossReport::AnswersFirst => {
                kept.extend(answers);
                kept.push_back(suspended);
            }
            _ => {
                kept.push_back(suspended);
                kept.extend(answers);
            }
        }
        s.outbound = kept;
        self.watches.drop_session(session);
    }

    /// Applies the session's next request, then breaks the connection before
    /// its reply can be read: the write happened, the client cannot know.
    pub fn lose_reply_after_apply(&mut self, session: SessionId) {
        self.apply_next(session);
        self.disconnect(session);
    }

    /// Re-establishes a disconnected session: the client hears `Connected`,
    /// then the server re-registers the watches the client knows of
    /// (`SetWatches` with the last zxid it read) and fires at once those
    /// whose node changed meanwhile, as ZooKeeper does. Requests the client
    /// queued while disconnected go out now.
    pub fn reconnect(&mut self, session: SessionId) {
        let zxid = self.zxid;
        let Some(s) = self.sessions.get_mut(&session) else {
            return;
        };
        if s.status != SessionStatus::Disconnected {
            return;
        }
        s.status = SessionStatus::Connected;
        // The new server may be behind the old one, though not behind what
        // the client has read (it would refuse the client).
        s.view = s.last_zxid;
        s.outbound
            .push_back(Outbound::without_zxid(Delivery::Session(
                SessionEvent::Connected {
                    session_id: session,
                },
            )));
        if !self.watch_reset {
            // The server dropped the watches with the connection, and
            // nothing sets them again.
            s.client_watches.clear();
            return;
        }
        let known: Vec<ClientWatch> = s.client_watches.iter().cloned().collect();
        let since = s.last_zxid;
        for (class, path) in known {
            let node = self.tree.get(&path).map(|n| n.stat);
            let fired = match (class, node) {
                (WatchClass::Data | WatchClass::Child, None) => Some(WatchKind::NodeDeleted),
                (WatchClass::Data, Some(stat)) if stat.mzxid > since => {
                    Some(WatchKind::NodeDataChanged)
                }
                (WatchClass::Child, Some(stat)) if stat.pzxid > since => {
                    Some(WatchKind::NodeChildrenChanged)
                }
                (WatchClass::Exist, Some(_)) => Some(WatchKind::NodeCreated),
                _ => None,
            };
            match fired {
                Some(kind) => {
                    if let Some(s) = self.sessions.get_mut(&session) {
                        s.outbound.push_back(Outbound {
                            delivery: Delivery::Watch(kind, path),
                            zxid,
                            watch: None,
                        });
                        // `SetWatches` was judged on the present tree: the
                        // new server has applied what fired it.
                        s.view = zxid;
                    }
                }
                None => self.watches.add(class, &path, session),
            }
        }
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
                s.client_watches.clear();
                s.outbound
                    .push_back(Outbound::without_zxid(Delivery::Session(event)));
            }
            _ => return,
        }
        self.watches.drop_session(session);
        for path in self.tree.ephemerals_of(session) {
            self.next_zxid();
            if let Ok(acl) = self.tree.delete(&path, Version::Any, self.zxid) {
                self.notify(Change::Deleted { path, acl });
            }
        }
    }

    fn notify(&mut self, change: Change) {
        let zxid = self.zxid;
        for (session, kind, path) in self.watches.trigger(&change) {
            // ZooKeeper (3.8.4, 3.9.2, and distributions' patched 3.8.0:
            // CVE-2024-23944) tells a change only to a session the node's
            // ACL lets read, the deleted node's for a deletion, the
            // parent's for its children. A watch set by an `exists`, which
            // no ACL guards, on a node the session may not read never
            // fires: a recipe that cannot read its own node cannot hear of
            // its deletion.
            if !self.may_hear(session, &change, &path) {
                continue;
            }
            if let Some(s) = self.sessions.get_mut(&session) {
                // Only connected sessions have watches on the server.
                if s.status == SessionStatus::Connected {
                    s.outbound.push_back(Outbound {
                        delivery: Delivery::Watch(kind, path),
                        zxid,
                        watch: None,
                    });
                    // Its server fires the watch as it applies the change.
                    s.view = s.view.max(zxid);
                }
            }
        }
    }

    /// Whether `session` is told of `change` through its watch on `path`:
    /// only if the ACL of the node the event names lets it read (the
    /// deleted node's, as it was; a parent's for its children).
    fn may_hear(&self, session: SessionId, change: &Change, path: &str) -> bool {
        let acl = match change {
            Change::Deleted { path: deleted, acl } if deleted == path => acl.as_slice(),
            _ => match self.tree.get(path) {
                Some(node) => node.acl.as_slice(),
                // Gone again within the same `multi`, whose changes are
                // told after it: no ACL is left to judge by, and the
                // event is told, as it is with no ACLs at all.
                None => return true,
            },
        };
        acl::check(acl, &self.ids(session), perms::READ).is_ok()
    }

    /// Applies a request, reading the tree as of `view`; returns the reply
    /// and the watch it asks for (which the caller registers).
    fn apply(
        &mut self,
        session: SessionId,
        request: &OwnedRequest,
        view: i64,
    ) -> (OwnedReply, Option<ClientWatch>) {
        if let Some(error) = self.refusal(request.path()) {
            return (OwnedReply::Error(error), None);
        }
        let read =
            |class: WatchClass, path: &str, watch: bool| watch.then(|| (class, path.to_string()));
        let ids = self.ids(session);
        let embedded = self.embedded_reads();
        let tree = self.tree_as_of(view);
        // A read the ACL refuses sets no watch; `exists` is never refused.
        let readable = |node: &Node| acl::check(&node.acl, &ids, perms::READ);
        match request {
            OwnedRequest::Create { .. }
            | OwnedRequest::Delete { .. }
            | OwnedRequest::SetData { .. }
            | OwnedRequest::Check { .. } => (self.apply_write(session, request), None),
            OwnedRequest::Exists { path, watch } => match tree.get(path) {
                Some(node) => (
                    OwnedReply::Exists(node.stat),
                    read(WatchClass::Data, path, *watch),
                ),
                // The real server keeps a creation watch on a missing node:
                // the leak recipes avoid by watching with getData.
                None => (
                    OwnedReply::Error(ZkError::NoNode),
                    read(WatchClass::Exist, path, *watch),
                ),
            },
            OwnedRequest::GetData { path, watch } => match tree.get(path) {
                Some(node) => match readable(node) {
                    // The server answers; the driver finds the frame over
                    // its buffer.
                    Ok(()) if embedded && node.oversized => (
                        OwnedReply::Error(ZkError::ReplyTooLarge),
                        read(WatchClass::Data, path, *watch),
                    ),
                    Ok(()) => (
                        OwnedReply::Data(node.data.clone(), node.stat),
                        read(WatchClass::Data, path, *watch),
                    ),
                    Err(e) => (OwnedReply::Error(e), None),
                },
                None => (OwnedReply::Error(ZkError::NoNode), None),
            },
            OwnedRequest::GetChildren { path, watch } => match tree.children_of(path) {
                Some(_) if tree.get(path).is_some_and(|node| readable(node).is_err()) => {
                    (OwnedReply::Error(ZkError::NoAuth), None)
                }
                Some(mut names) => {
                    names.shuffle(&mut self.rng);
                    (
                        OwnedReply::Children(names),
                        read(WatchClass::Child, path, *watch),
                    )
                }
                None => (OwnedReply::Error(ZkError::NoNode), None),
            },
            OwnedRequest::Sync { .. } => (OwnedReply::Synced, None),
        }
    }

    /// Applies one write or check as a transaction of its own.
    fn apply_write(&mut self, session: SessionId, request: &OwnedRequest) -> OwnedReply {
        // A failed write still takes a zxid, as the server logs an error
        // transaction for it; a check alone changes nothing and takes none.
        if !matches!(request, OwnedRequest::Check { .. }) {
            self.next_zxid();
        }
        match self.write(session, request) {
            Ok((reply, change)) => {
                if let Some(change) = change {
                    self.notify(change);
                }
                reply
            }
            Err(e) => OwnedReply::Error(e),
        }
    }

    /// Applies a write or check to the tree at the current zxid, firing no
    /// watch: the caller fires them for the returned change once the
    /// transaction holds, so a multi that fails fires none. Any other
    /// request is `BadArguments`, as a multi may hold nothing else.
    fn write(
        &mut self,
        session: SessionId,
        request: &OwnedRequest,
    ) -> Result<(OwnedReply, Option<Change>), ZkError> {
        let ids = self.ids(session);
        // As the server checks: the parent's CREATE or DELETE, the node's
        // WRITE; a missing node is the tree's to report.
        let allowed = |tree: &Tree, path: &str, perm: u32| match tree.get(path) {
            Some(node) => acl::check(&node.acl, &ids, perm),
            None => Ok(()),
        };
        match request {
            OwnedRequest::Create {
                path,
                data,
                mode,
                acl: asked,
            } => {
                let acl = acl::fix_up(asked, &ids)?;
                allowed(&self.tree, parent_of(path), perms::CREATE)?;
                let full = self
                    .tree
                    .create(path, data, *mode, session, self.zxid, self.now_ms)?;
                let oversized = self.draw_oversized();
                if let Some(node) = self.tree.get_mut(&full) {
                    node.acl = acl;
                    node.oversized = oversized;
                }
                let change = Change::Created { path: full.clone() };
                Ok((OwnedReply::Created(full), Some(change)))
            }
            OwnedRequest::Delete { path, version } => {
                allowed(&self.tree, parent_of(path), perms::DELETE)?;
                let acl = self.tree.delete(path, *version, self.zxid)?;
                let change = Change::Deleted {
                    path: path.clone(),
                    acl,
                };
                Ok((OwnedReply::Deleted, Some(change)))
            }
            OwnedRequest::SetData {
                path,
                data,
                version,
            } => {
                allowed(&self.tree, path, perms::WRITE)?;
                let stat = self
                    .tree
                    .set_data(path, data, *version, self.zxid, self.now_ms)?;
                if self.draw_oversized() {
                    if let Some(node) = self.tree.get_mut(path) {
                        node.oversized = true;
                    }
                }
                let change = Change::DataChanged { path: path.clone() };
                Ok((OwnedReply::DataSet(stat), Some(change)))
            }
            OwnedRequest::Check { path, version } => {
                allowed(&self.tree, path, perms::READ)?;
                match self.tree.get(path) {
                    Some(node) if version.matches(node.stat.version) => {
                        Ok((OwnedReply::Checked, None))
                    }
                    Some(_) => Err(ZkError::BadVersion),
                    None => Err(ZkError::NoNode),
                }
            }
            OwnedRequest::Exists { .. }
            | OwnedRequest::GetData { .. }
            | OwnedRequest::GetChildren { .. }
            | OwnedRequest::Sync { .. } => Err(ZkError::BadArguments),
        }
    }

    /// Applies `ops` at once as one transaction (ZooKeeper's `multi`), from
    /// a connected session, ahead of the requests it has queued; the
    /// replies come back here, not through
    /// [`next_delivery`](SimZk::next_delivery).
    ///
    /// Each op (`Create`, `Delete`, `SetData` or `Check`) sees the effects
    /// of those before it, and all share one zxid, as on a real server. If
    /// one fails, nothing changes (tree, zxid, sequence counters, watches)
    /// and the failure names it; otherwise every watch the changes trigger
    /// fires, as the same ops applied one by one would fire them. Any other
    /// op fails with `BadArguments`. A session that is disconnected fails
    /// with `ConnectionLoss` at index 0, one that is expired, closed or
    /// unknown with `SessionExpired`. Counted in [`stats`](SimZk::stats) as
    /// one `"multi"`, whether it commits or not.
    pub fn apply_multi(
        &mut self,
        session: SessionId,
        ops: &[OwnedRequest],
    ) -> Result<Vec<OwnedReply>, MultiFailure> {
        let refused = |error| Err(MultiFailure { index: 0, error });
        match self.status(session) {
            Some(SessionStatus::Connected) => {}
            Some(SessionStatus::Disconnected) => return refused(ZkError::ConnectionLoss),
            _ => return refused(ZkError::SessionExpired),
        }
        *self.stats.requests.entry("multi").or_default() += 1;
        // Watches are only touched by firing, which waits for the commit:
        // the tree and zxid are all a failure has to put back. (A real
        // server gives the failed multi an error transaction's zxid; here
        // nothing moves, so tests can compare before and after.)
        let (saved_tree, saved_zxid) = (self.tree.clone(), self.zxid);
        self.next_zxid();
        let mut replies = Vec::with_capacity(ops.len());
        let mut changes = Vec::new();
        for (index, op) in ops.iter().enumerate() {
            let written = match self.refusal(op.path()) {
                Some(error) => Err(error),
                None => self.write(session, op),
            };
            match written {
                Ok((reply, change)) => {
                    replies.push(reply);
                    changes.extend(change);
                }
                Err(error) => {
                    self.tree = saved_tree;
                    self.zxid = saved_zxid;
                    return Err(MultiFailure { index, error });
                }
            }
        }
        // The session's `last_zxid` stays: notifications queued before this
        // reply are still unread, and a reconnect must not count them seen.
        self.see(session, self.zxid);
        for change in changes {
            self.notify(change);
        }
        Ok(replies)
    }

    /// A node, if it exists.
    pub fn node(&self, path: &str) -> Option<&Node> {
        self.tree.get(path)
    }

    /// The names of a node's children, sorted (`None` if it does not exist).
    pub fn children(&self, path: &str) -> Option<Vec<String>> {
        self.tree.children_of(path)
    }

    /// Every node's path but `/`, in byte order (a parent before its
    /// children), including the reserved `/zookeeper` that every tree
    /// holds, as [`children`](SimZk::children) of `/` lists it too.
    pub fn tree_paths(&self) -> Vec<String> {
        self.tree.paths()
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
        self.next_zxid();
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
        self.next_zxid();
        let acl = self.tree.delete(path, Version::Any, self.zxid)?;
        self.notify(Change::Deleted {
            path: path.to_string(),
            acl,
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
        self.next_zxid();
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
                    WatchClass::Data => "data",
                    WatchClass::Exist => "exist",
                    WatchClass::Child => "child",
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

mod lag;
#[cfg(test)]
mod tests;
