//! One in-memory ZooKeeper shared by the sessions of a test, and the
//! faults the test injects into it.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use herdless_core::owned::OwnedReply;
use herdless_core::sim::{Delivery, Node, OwnedRequest, SimZk};
use herdless_core::wire::WatchClass;
use herdless_core::{Request, RequestId, SessionEvent, ZkError};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::VecDeque;
use tokio::sync::{oneshot, watch};
use tracing::debug;

use super::faults::RandomFaults;
use super::{SimClient, SimSession};
use crate::backend::{Notice, State, Watcher};

/// How long a connection broken on a lost write reply stays down.
const LOST_REPLY_DOWN: Duration = Duration::from_millis(10);

/// The default session timeout of a [`SimServer`]'s sessions.
const DEFAULT_SESSION_TIMEOUT: Duration = Duration::from_secs(10);

/// Milliseconds since the Unix epoch, as ZooKeeper stamps nodes.
fn wall_clock_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// An in-memory ZooKeeper server; cheap to clone, every clone is the same
/// server.
///
/// Its methods that start timers (a disconnection that ends by itself,
/// random faults) must be called inside a tokio runtime.
#[derive(Clone)]
pub struct SimServer {
    world: Arc<Mutex<World>>,
}

impl std::fmt::Debug for SimServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let world = self.lock();
        f.debug_struct("SimServer")
            .field("sessions", &world.clients.keys().collect::<Vec<_>>())
            .finish()
    }
}

/// A watch the server holds: its kind (`"data"`, `"exist"`, `"child"`)
/// and path.
pub type WatchOf = (&'static str, String);

/// Where the answer to a request the client waits on goes: the reply, and
/// the watcher for the watch it set.
type Answer = oneshot::Sender<(OwnedReply, Option<Watcher>)>;

/// A session's client, as the zookeeper-client crate would be.
struct ClientSide {
    pending: HashMap<RequestId, Answer>,
    watchers: Vec<(WatchClass, String, oneshot::Sender<Notice>)>,
    state: watch::Sender<State>,
}

pub(super) struct World {
    zk: SimZk,
    clients: BTreeMap<i64, ClientSide>,
    session_timeout: Duration,
    serial: u32,
    held: BTreeSet<i64>,
    lose_next_write: BTreeSet<i64>,
    /// Whether each request a session has queued on the server is a write,
    /// oldest first (the server's queue holds them as opaque requests).
    queued_writes: BTreeMap<i64, VecDeque<bool>>,
    /// Each session's latest disconnection: a timer started for an earlier
    /// one (its reconnect, its expiry) does nothing once another began.
    outages: BTreeMap<i64, u64>,
    random: Option<(ChaCha8Rng, RandomFaults)>,
    /// The GUIDs recipes name their nodes with, drawn from the seed (a
    /// stream of their own, so that they change no other draw): a seed
    /// gives the same tree, names included.
    guids: ChaCha8Rng,
    /// Whether a renewing session's attempts to open its next session fail.
    refusing: bool,
    /// The users whose credentials are refused from now on.
    refused_users: BTreeSet<String>,
}

impl Default for SimServer {
    fn default() -> Self {
        SimServer::new()
    }
}

impl SimServer {
    /// An empty server (seed 0: children are listed in an order drawn from
    /// the seed, as a real server lists them in hash order).
    pub fn new() -> SimServer {
        SimServer::with_seed(0)
    }

    /// An empty server whose random choices all come from `seed`.
    pub fn with_seed(seed: u64) -> SimServer {
        SimServer {
            world: Arc::new(Mutex::new(World {
                zk: SimZk::new(seed),
                clients: BTreeMap::new(),
                session_timeout: DEFAULT_SESSION_TIMEOUT,
                serial: 0,
                held: BTreeSet::new(),
                lose_next_write: BTreeSet::new(),
                queued_writes: BTreeMap::new(),
                outages: BTreeMap::new(),
                random: None,
                guids: {
                    let mut guids = ChaCha8Rng::seed_from_u64(seed);
                    guids.set_stream(1);
                    guids
                },
                refusing: false,
                refused_users: BTreeSet::new(),
            })),
        }
    }

    /// The timeout of the sessions opened from now on (10 s unless set): a
    /// session disconnected for longer expires.
    pub fn with_session_timeout(self, timeout: Duration) -> SimServer {
        self.lock().session_timeout = timeout;
        self
    }

    /// Lets `world` move (see `World::flush`), then starts the reconnects
    /// it asks for.
    fn settle(&self, mut world: MutexGuard<'_, World>) {
        let broken = world.flush();
        self.reconnect_broken(world, broken);
    }

    /// Releases `world`, then reconnects soon the sessions whose
    /// connection broke on a lost write reply.
    fn reconnect_broken(&self, mut world: MutexGuard<'_, World>, broken: Vec<i64>) {
        let outages: Vec<(i64, u64)> = broken
            .into_iter()
            .map(|session| (session, world.outage(session)))
            .collect();
        drop(world);
        for (session, outage) in outages {
            self.end_outage_after(session, outage, LOST_REPLY_DOWN, false);
        }
    }

    /// After `down`, unless another disconnection of `session` began
    /// meanwhile: reconnects it, or (`expire`) expires it.
    fn end_outage_after(&self, session: i64, outage: u64, down: Duration, expire: bool) {
        let server = self.clone();
        tokio::spawn(async move {
            tokio::time::sleep(down).await;
            let mut world = server.lock();
            if world.outages.get(&session) != Some(&outage) {
                return;
            }
            if expire {
                world.zk.expire(session);
            } else {
                world.zk.reconnect(session);
            }
            server.settle(world);
        });
    }

    pub(super) fn lock(&self) -> MutexGuard<'_, World> {
        // A test that panicked while holding the lock poisons it; the world
        // is still consistent (every change is made whole under the lock).
        let mut world = self.world.lock().unwrap_or_else(|p| p.into_inner());
        // Every change is made under the lock: a node created or written
        // now carries the wall clock as `ctime`/`mtime`, as a real server's
        // do (an inspection's ages would otherwise start in 1970).
        world.zk.set_time(wall_clock_ms());
        world
    }

    /// Opens a new session, connected: what
    /// [`herdless_std::connect`](crate::connect) gives on a real server.
    pub fn connect(&self) -> SimClient {
        let mut world = self.lock();
        let session = world.zk.open_session();
        let (state, _) = watch::channel(State::Connected);
        world.clients.insert(
            session,
            ClientSide {
                pending: HashMap::new(),
                watchers: Vec::new(),
                state,
            },
        );
        let timeout = world.session_timeout;
        SimClient::new(self.clone(), session, timeout)
    }

    /// Opens a new session authenticated as `user` with `password`
    /// (ZooKeeper's `digest` scheme): what
    /// [`ConnectOptions::digest`](crate::ConnectOptions::digest) gives on a
    /// real server. Nodes it creates with
    /// [`Acl::CREATOR_ALL`](herdless_core::Acl::CREATOR_ALL) belong to
    /// [`digest_id`](crate::digest_id)`(user, password)`.
    pub fn connect_as(&self, user: &str, password: &str) -> SimClient {
        let client = self.connect();
        let id = crate::digest_id(user, password);
        self.lock().zk.add_auth(client.session_id(), "digest", &id);
        client
    }

    /// Opens a session that renews itself after an expiry, as a
    /// [`Session`](crate::Session) does.
    pub fn session(&self) -> SimSession {
        SimSession::open(self.clone(), None)
    }

    /// Opens a session authenticated as `user` with `password` that
    /// renews itself after an expiry, each new session authenticated the
    /// same way: what [`ConnectOptions::session`](crate::ConnectOptions::session)
    /// with [`digest`](crate::ConnectOptions::digest) gives.
    pub fn session_as(&self, user: &str, password: &str) -> SimSession {
        SimSession::open(self.clone(), Some((user.to_owned(), password.to_owned())))
    }

    // ---- faults ----

    /// Breaks `session`'s connection for `down`: requests in flight are
    /// answered `ConnectionLoss`, the client hears it is disconnected, and
    /// after `down` it reconnects (the watches it knew are set again, and
    /// fire if their node changed meanwhile). If `down` reaches the session
    /// timeout, the session expires instead, when the timeout has passed.
    pub fn disconnect(&self, session: i64, down: Duration) {
        let mut world = self.lock();
        let timeout = world.session_timeout;
        let outage = world.outage(session);
        world.zk.disconnect(session);
        // The server may let the client miss the state (a client that
        // reconnected before its driver looked); a disconnection the test
        // asked for lasts, and the client sees it.
        if let Some(client) = world.clients.get(&session) {
            client.state.send_if_modified(|state| {
                let connected = *state == State::Connected;
                if connected {
                    *state = State::Disconnected;
                }
                connected
            });
        }
        self.settle(world);
        if down < timeout {
            self.end_outage_after(session, outage, down, false);
        } else {
            self.end_outage_after(session, outage, timeout, true);
        }
    }

    /// The next write `session` sends (create, delete, setData, or a
    /// fenced batch) is applied, and its answer lost with the connection:
    /// the client hears `ConnectionLoss` and cannot know the write landed.
    /// The session reconnects 10 ms later.
    pub fn lose_next_write_reply(&self, session: i64) {
        self.lock().lose_next_write.insert(session);
    }

    /// Stops answering `session`: its requests stay in flight until
    /// [`release`](SimServer::release) or
    /// [`fail_in_flight`](SimServer::fail_in_flight). (A fenced batch sent
    /// meanwhile is answered `ConnectionLoss` without being applied.)
    pub fn hold(&self, session: i64) {
        self.lock().held.insert(session);
    }

    /// Answers `session`'s held requests, and the ones after them.
    pub fn release(&self, session: i64) {
        let mut world = self.lock();
        world.held.remove(&session);
        self.settle(world);
    }

    /// How many requests of `session` are waiting to be applied.
    pub fn in_flight(&self, session: i64) -> usize {
        self.lock().zk.pending_requests(session)
    }

    /// Answers every request `session` has in flight with
    /// `ConnectionLoss`, none of them applied, and reconnects at once: a
    /// connection reset.
    pub fn fail_in_flight(&self, session: i64) {
        let mut world = self.lock();
        world.held.remove(&session);
        world.outage(session);
        world.zk.disconnect(session);
        world.zk.reconnect(session);
        self.settle(world);
    }

    /// Drops every watcher `session`'s client holds without an event, as
    /// zookeeper-client does when it loses a watcher's channel (README:
    /// "Design notes"); the server keeps its watches. Returns how many
    /// watchers went. The driver must notice and set the watches again.
    pub fn lose_watchers(&self, session: i64) -> usize {
        let mut world = self.lock();
        world
            .clients
            .get_mut(&session)
            .map_or(0, |client| std::mem::take(&mut client.watchers).len())
    }

    /// Expires `session` now: its ephemeral nodes go (other sessions'
    /// watches fire), its client hears `Expired`.
    pub fn expire(&self, session: i64) {
        let mut world = self.lock();
        world.zk.expire(session);
        self.settle(world);
    }

    /// Deletes the node at `path`, as an operator would (`NoNode`,
    /// `NotEmpty` as ZooKeeper answers them).
    pub fn delete(&self, path: &str) -> Result<(), ZkError> {
        let mut world = self.lock();
        let done = world.zk.delete_node(path);
        self.settle(world);
        done
    }

    /// Creates a persistent node at `path` with `data`, as an operator
    /// would.
    pub fn create(&self, path: &str, data: &[u8]) -> Result<(), ZkError> {
        let mut world = self.lock();
        let done = world.zk.create_persistent(path, data);
        self.settle(world);
        done
    }

    /// Replaces the data of the node at `path`, as an operator would.
    pub fn set_data(&self, path: &str, data: &[u8]) -> Result<(), ZkError> {
        let mut world = self.lock();
        let done = world.zk.set_node_data(path, data);
        self.settle(world);
        done
    }

    /// From now on, answers every request on a path that starts with
    /// `prefix` with `error` and applies nothing, as a real server answers
    /// a client that a node's ACL denies (`NoAuth`); `None` lifts it. A
    /// sequential create is judged by the prefix it sends: `"/jobs/"`
    /// refuses every child of `/jobs` and nothing of `/jobs` itself. A
    /// read refused sets no watch.
    pub fn refuse(&self, prefix: &str, error: Option<ZkError>) {
        self.lock().zk.refuse(prefix, error);
    }

    /// From now on, injects the faults of `faults` at random into every
    /// session's requests, drawn from `seed`.
    pub fn random_faults(&self, seed: u64, faults: RandomFaults) {
        self.lock().random = Some((ChaCha8Rng::seed_from_u64(seed), faults));
    }

    /// While `refuse` holds, a [`SimSession`] whose session expired cannot
    /// open its next one (as when no server is reachable): it retries with
    /// back-off until this is set back to `false`. [`connect`](SimServer::connect)
    /// is not affected.
    pub fn refuse_sessions(&self, refuse: bool) {
        self.lock().refusing = refuse;
    }

    /// Whether renewals are refused (see [`refuse_sessions`](SimServer::refuse_sessions)).
    pub(super) fn refusing(&self) -> bool {
        self.lock().refusing
    }

    /// From now on, refuses `user`'s credentials to a new session, as a
    /// real server refuses credentials revoked meanwhile
    /// (`Error::Connect(AuthFailed)`): a [`SimSession`] of theirs whose
    /// session expires opens no new one, and its recipes are told the
    /// session is over ([`SimSession::ended`] says why), as a
    /// [`Session`](crate::Session) does. The sessions open now, and
    /// [`connect_as`](SimServer::connect_as), are not affected.
    pub fn refuse_credentials(&self, user: &str) {
        self.lock().refused_users.insert(user.to_owned());
    }

    /// Whether `user`'s credentials are refused (see
    /// [`refuse_credentials`](SimServer::refuse_credentials)).
    pub(super) fn refuses_credentials_of(&self, user: &str) -> bool {
        self.lock().refused_users.contains(user)
    }

    /// Stops injecting random faults.
    pub fn no_random_faults(&self) {
        self.lock().random = None;
    }

    // ---- inspection ----

    /// Every node's path, sorted (`/zookeeper` and `/` left out).
    pub fn tree(&self) -> Vec<String> {
        let mut paths = self.lock().zk.tree_paths();
        paths.retain(|p| p != "/zookeeper" && !p.starts_with("/zookeeper/"));
        paths
    }

    /// The node at `path`: data and stat.
    pub fn node(&self, path: &str) -> Option<Node> {
        self.lock().zk.node(path).cloned()
    }

    /// The watches the server holds for `session`.
    pub fn watches(&self, session: i64) -> Vec<WatchOf> {
        self.lock().zk.watches_of(session)
    }

    /// Requests applied so far, by kind (`"create"`, `"getChildren"`,
    /// `"multi"`, ...).
    pub fn requests(&self) -> BTreeMap<&'static str, u64> {
        self.lock().zk.stats().requests.clone()
    }

    /// Watch notifications delivered so far, to every session.
    pub fn notifications(&self) -> u64 {
        self.lock().zk.stats().notifications
    }

    /// Sixteen random bytes for a recipe's GUID, from the seed.
    pub(super) fn guid_bytes(&self) -> [u8; 16] {
        self.lock().guids.gen()
    }

    /// Whether `session` is still alive (connected or not).
    pub fn is_live(&self, session: i64) -> bool {
        self.lock().zk.is_live(session)
    }

    // ---- for the clients ----

    /// Sends `request` from `session`'s client.
    pub(super) fn submit(
        &self,
        session: i64,
        request: Request<'_>,
    ) -> oneshot::Receiver<(OwnedReply, Option<Watcher>)> {
        let (answer, heard) = oneshot::channel();
        let mut world = self.lock();
        if !world.zk.is_live(session) {
            // As zookeeper-client fails every request once its session
            // has ended, rather than leave it unanswered.
            let _ = answer.send((OwnedReply::Error(ZkError::SessionExpired), None));
            return heard;
        }
        world.serial = world.serial.wrapping_add(1);
        let id = RequestId::new(0, world.serial);
        let write = matches!(
            request,
            Request::Create { .. } | Request::Delete { .. } | Request::SetData { .. }
        );
        if let Some(client) = world.clients.get_mut(&session) {
            client.pending.insert(id, answer);
        }
        world.zk.submit(session, id, &request);
        world
            .queued_writes
            .entry(session)
            .or_default()
            .push_back(write);
        let fault = world.roll(write);
        if let Some(Fault::LoseReply) = fault {
            world.lose_next_write.insert(session);
        }
        self.settle(world);
        self.inject(session, fault);
        heard
    }

    /// Applies a fenced batch from `session`: the multi of `ops`.
    pub(super) fn multi(
        &self,
        session: i64,
        ops: &[OwnedRequest],
    ) -> Result<Vec<OwnedReply>, (usize, ZkError)> {
        let mut world = self.lock();
        // Whatever the session sent before goes first.
        let broken = world.flush();
        if world.held.contains(&session) || !broken.is_empty() {
            self.reconnect_broken(world, broken);
            return Err((0, ZkError::ConnectionLoss));
        }
        let fault = world.roll(true);
        let lose =
            world.lose_next_write.remove(&session) || matches!(fault, Some(Fault::LoseReply));
        let result = world
            .zk
            .apply_multi(session, ops)
            .map_err(|f| (f.index, f.error));
        if lose {
            let outage = world.outage(session);
            world.zk.disconnect(session);
            self.settle(world);
            self.end_outage_after(session, outage, LOST_REPLY_DOWN, false);
            return Err((0, ZkError::ConnectionLoss));
        }
        self.settle(world);
        self.inject(session, fault);
        result
    }

    fn inject(&self, session: i64, fault: Option<Fault>) {
        match fault {
            Some(Fault::Disconnect(down)) => self.disconnect(session, down),
            Some(Fault::Expire) => self.expire(session),
            Some(Fault::LoseReply) | None => {}
        }
    }

    pub(super) fn state(&self, session: i64) -> watch::Receiver<State> {
        let world = self.lock();
        match world.clients.get(&session) {
            Some(client) => client.state.subscribe(),
            None => watch::channel(State::Closed).1,
        }
    }

    pub(super) fn close(&self, session: i64) {
        let mut world = self.lock();
        world.zk.close(session);
        self.settle(world);
    }
}

/// A fault drawn for a request.
enum Fault {
    /// A write's answer is lost with the connection.
    LoseReply,
    /// The connection breaks once the request is answered.
    Disconnect(Duration),
    /// The session expires once the request is answered.
    Expire,
}

impl World {
    /// Begins a disconnection of `session`: its number.
    fn outage(&mut self, session: i64) -> u64 {
        let outage = self.outages.entry(session).or_default();
        *outage += 1;
        *outage
    }

    /// Draws the random faults of one request (`write`: a write, whose
    /// reply may be lost).
    fn roll(&mut self, write: bool) -> Option<Fault> {
        let (rng, faults) = self.random.as_mut()?;
        if write && rng.gen_bool(faults.lose_reply) {
            return Some(Fault::LoseReply);
        }
        if rng.gen_bool(faults.disconnect) {
            let most = faults.max_down.as_millis().max(1) as u64;
            return Some(Fault::Disconnect(Duration::from_millis(
                rng.gen_range(1..=most),
            )));
        }
        rng.gen_bool(faults.expire).then_some(Fault::Expire)
    }

    /// Applies what can be applied and hands every reply, notification and
    /// state change to its client, until nothing moves. Returns the
    /// sessions whose connection broke on a lost write reply: they
    /// reconnect soon.
    #[must_use]
    fn flush(&mut self) -> Vec<i64> {
        let mut broken = Vec::new();
        loop {
            let mut moved = false;
            let sessions: Vec<i64> = self.clients.keys().copied().collect();
            for session in sessions {
                if !self.held.contains(&session) {
                    while self.zk.can_apply(session) {
                        moved = true;
                        if self.next_is_write(session) && self.lose_next_write.remove(&session) {
                            // Applied; the connection breaks before its
                            // answer is read.
                            self.zk.lose_reply_after_apply(session);
                            broken.push(session);
                        } else {
                            self.zk.apply_next(session);
                        }
                    }
                }
                while let Some((delivery, watch)) = self.zk.next_delivery_and_watch(session) {
                    moved = true;
                    self.deliver(session, delivery, watch);
                }
            }
            if !moved {
                return broken;
            }
        }
    }

    /// Whether the oldest request `session` has queued is a write, and
    /// takes it off the record (it is about to be applied).
    fn next_is_write(&mut self, session: i64) -> bool {
        let queued = self.zk.pending_requests(session);
        let writes = self.queued_writes.entry(session).or_default();
        // A broken connection answers the whole queue at once: what the
        // server no longer holds is gone from the front.
        while writes.len() > queued {
            writes.pop_front();
        }
        writes.pop_front().unwrap_or(false)
    }

    /// Hands `delivery` to `session`'s client; `watch` is what a reply set
    /// on the server, for which the client hands out a watcher.
    fn deliver(&mut self, session: i64, delivery: Delivery, watch: Option<(WatchClass, String)>) {
        let Some(client) = self.clients.get_mut(&session) else {
            return;
        };
        match delivery {
            Delivery::Reply(id, reply) => {
                let Some(answer) = client.pending.remove(&id) else {
                    return;
                };
                let watcher = watch.map(|(class, path)| {
                    let (tx, rx) = oneshot::channel();
                    client.watchers.push((class, path, tx));
                    Watcher::Sim(rx)
                });
                let _ = answer.send((reply, watcher));
            }
            Delivery::Watch(kind, path) => {
                let (fired, kept) = std::mem::take(&mut client.watchers)
                    .into_iter()
                    .partition(|(class, p, _)| *p == path && class.is_fired_by(kind));
                client.watchers = kept;
                for (_, path, tx) in fired {
                    let _ = tx.send(Notice {
                        kind: Some(kind),
                        path,
                        state: State::Connected,
                    });
                }
            }
            Delivery::Session(event) => {
                let state = match event {
                    SessionEvent::Connected { .. } => State::Connected,
                    SessionEvent::Suspended => State::Disconnected,
                    SessionEvent::Expired => State::Expired,
                    // Closed, and whatever the core adds later: over.
                    _ => State::Closed,
                };
                debug!(session, ?state, "in-memory session");
                if state.is_terminal() {
                    for (_, answer) in std::mem::take(&mut client.pending) {
                        let _ = answer.send((OwnedReply::Error(ZkError::SessionExpired), None));
                    }
                    for (_, path, tx) in client.watchers.drain(..) {
                        let _ = tx.send(Notice {
                            kind: None,
                            path,
                            state,
                        });
                    }
                }
                client.state.send_replace(state);
            }
        }
    }
}
