//! One generic driver: runs any core [`Recipe`] over a `zookeeper_client::Client`.
//!
//! The driver is a tokio task owning the recipe. It sends each request the
//! moment the recipe emits it (so a create and a listing leave back to back,
//! as the recipe intends), hands replies back strictly in request order,
//! routes the one-shot watchers' notifications, maps the client's session
//! states onto [`SessionEvent`]s, and arms the recipe's timer. After every
//! input it drains requests, then events, then the timer, as the [`Recipe`]
//! contract says.

pub(crate) mod convert;
pub(crate) mod hold;
pub(crate) mod own_node;
pub(crate) mod retry;
pub(crate) mod undo;
pub(crate) mod watch_loss;

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use futures::future::BoxFuture;
use futures::stream::{FuturesOrdered, FuturesUnordered};
use futures::StreamExt;
use herdless_core::{Outgoing, Recipe, Request, RequestId, SessionEvent, WatchEvent, ZkError};
use tokio::sync::{mpsc, oneshot, watch};
use tokio::time::Instant as TokioInstant;
use tracing::{debug, trace, warn};
use zookeeper_client as zk;

use crate::Error;
use herdless_core::owned::OwnedReply;
use watch_loss::{Armed, Heard, Rearmed, Seen, WatchSet};

/// A change to apply to the recipe inside its task.
pub(crate) type Command<R> = Box<dyn FnOnce(&mut R) + Send>;

type Answer = (RequestId, OwnedReply, Option<Armed>);
type ReplyFuture = BoxFuture<'static, Answer>;

/// How long to wait, after a `ConnectionLoss` answer, before telling the
/// recipe the connection is back when the client already claims to be
/// connected (it reconnects by itself, possibly before its state watcher
/// says so); avoids spinning on a flapping connection.
const RECONNECT_SETTLE: Duration = Duration::from_millis(50);

/// Counters shared by the drivers a handle spawns, for tests and metrics.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub(crate) notifications: AtomicU64,
    pub(crate) requests: AtomicU64,
}

/// What the spawner keeps: the command channel into the task.
pub(crate) struct DriverHandle<R> {
    commands: mpsc::UnboundedSender<Command<R>>,
    /// The driver's clock starts here: the recipe's `Instant` 0.
    origin: TokioInstant,
}

impl<R> DriverHandle<R> {
    /// The recipe's instant `after` from now, for deadlines.
    pub(crate) fn deadline_in(&self, after: Duration) -> herdless_core::Instant {
        millis_up(self.origin.elapsed() + after)
    }

    /// Runs `f` on the recipe in its task, without waiting for it.
    pub(crate) fn command(&self, f: impl FnOnce(&mut R) + Send + 'static) -> Result<(), Error> {
        self.commands
            .send(Box::new(f))
            .map_err(|_| Error::DriverGone)
    }

    /// Runs `f` on the recipe in its task and returns what it returned:
    /// the one way an API call starts work in its recipe and hears whether
    /// the recipe took it.
    pub(crate) async fn call<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut R) -> T + Send + 'static,
    ) -> Result<T, Error> {
        let (answer_tx, answer_rx) = oneshot::channel();
        self.command(move |recipe| {
            let _ = answer_tx.send(f(recipe));
        })?;
        answer_rx.await.map_err(|_| Error::DriverGone)
    }
}

/// A deadline `after` from now for a recipe whose driver is about to be
/// spawned: started before its driver, the recipe sees a clock that starts
/// at 0 when the driver does.
pub(crate) fn deadline_at_start(after: Duration) -> herdless_core::Instant {
    millis_up(after)
}

/// Rounded up: a deadline truncated to the millisecond fired up to a
/// millisecond before its time had passed.
fn millis_up(at: Duration) -> herdless_core::Instant {
    let millis = at.as_micros().div_ceil(1000);
    herdless_core::Instant::from_millis(u64::try_from(millis).unwrap_or(u64::MAX))
}

/// The recipe's time at this moment: milliseconds since `origin`, the
/// moment the driver started (the recipe's `Instant` 0).
fn recipe_time(origin: TokioInstant) -> herdless_core::Instant {
    herdless_core::Instant::from_millis(
        u64::try_from(origin.elapsed().as_millis()).unwrap_or(u64::MAX),
    )
}

/// Where a driver gets its client from.
#[derive(Clone)]
pub enum Source {
    /// One client: when its session ends, the recipe hears so and stays on
    /// it.
    Fixed(zk::Client),
    /// A [`Session`](crate::Session)'s current client: when the session
    /// ends, the driver moves the recipe to the next one.
    Renewing(watch::Receiver<zk::Client>),
}

impl Source {
    /// The current client, without marking it seen.
    pub(crate) fn client(&self) -> zk::Client {
        match self {
            Source::Fixed(client) => client.clone(),
            Source::Renewing(clients) => clients.borrow().clone(),
        }
    }

    fn current(&mut self) -> zk::Client {
        match self {
            Source::Fixed(client) => client.clone(),
            Source::Renewing(clients) => clients.borrow_and_update().clone(),
        }
    }
}

/// Spawns a task running `recipe` on the clients of `source`, telling it
/// first the id of the session it starts on.
///
/// `on_event` receives every event the recipe emits, with the recipe as it
/// is right after the event (to read a value the event announces). Once
/// every [`DriverHandle`] is dropped, the task keeps running until
/// `finished` says the recipe has nothing left to do (e.g. its node is
/// deleted), so cleanup outlives the handle.
///
/// The recipe lives on the heap from here on: some hold buffers of tens of
/// KiB, and a caller can pass one boxed to keep it off its stack.
pub(crate) fn spawn_on<R, E, D>(
    mut source: Source,
    recipe: impl Into<Box<R>>,
    counters: Arc<Counters>,
    on_event: E,
    finished: D,
) -> DriverHandle<R>
where
    R: Recipe + Send + 'static,
    E: FnMut(&R, R::Event) + Send + 'static,
    D: Fn(&R) -> bool + Send + 'static,
{
    let mut recipe: Box<R> = recipe.into();
    let (tx, rx) = mpsc::unbounded_channel();
    let client = source.current();
    // The session id, from the client the driver runs on: recipes that
    // check whose their nodes are (`ephemeralOwner`) need it from the
    // start. Recipes assume a connected session until told otherwise, so
    // for them this changes nothing else.
    let origin = TokioInstant::now();
    recipe.handle_session(
        recipe_time(origin),
        SessionEvent::Connected {
            session_id: client.session_id().0,
        },
    );
    let driver = Driver {
        client,
        source,
        recipe,
        counters,
        on_event,
        origin,
        replies: FuturesOrdered::new(),
        watches: FuturesUnordered::new(),
        rearms: FuturesUnordered::new(),
        reconnect_pending: false,
        away: false,
        terminal: false,
    };
    tokio::spawn(driver.run(rx, finished));
    DriverHandle {
        commands: tx,
        origin,
    }
}

struct Driver<R, E> {
    client: zk::Client,
    source: Source,
    recipe: Box<R>,
    counters: Arc<Counters>,
    on_event: E,
    origin: TokioInstant,
    replies: FuturesOrdered<ReplyFuture>,
    watches: FuturesUnordered<BoxFuture<'static, Heard>>,
    /// Lost watches being set again (see [`watch_loss`]).
    rearms: FuturesUnordered<BoxFuture<'static, Rearmed>>,
    /// A `ConnectionLoss` answer reached the recipe: it waits for `Connected`.
    reconnect_pending: bool,
    /// The recipe was told of a lost connection (`Suspended` or a
    /// `ConnectionLoss` answer) and not yet of its return.
    away: bool,
    /// The session ended: no more state changes will come.
    terminal: bool,
}

impl<R, E> Driver<R, E>
where
    R: Recipe + Send + 'static,
    E: FnMut(&R, R::Event) + Send + 'static,
{
    fn now(&self) -> herdless_core::Instant {
        recipe_time(self.origin)
    }

    async fn run(
        mut self,
        mut commands: mpsc::UnboundedReceiver<Command<R>>,
        finished: impl Fn(&R) -> bool,
    ) {
        let mut states = self.client.state_watcher();
        let mut commands_open = true;
        self.drain();
        loop {
            if !commands_open && finished(&self.recipe) {
                break;
            }
            let renewing = matches!(self.source, Source::Renewing(_));
            if self.terminal && self.replies.is_empty() && !commands_open && !renewing {
                break;
            }
            let timer = self
                .recipe
                .poll_timeout()
                .map(|t| self.origin + Duration::from_millis(t.as_millis()));
            let settle = self
                .reconnect_pending
                .then(|| tokio::time::sleep(RECONNECT_SETTLE));
            // Notifications before replies: a notification that came before a
            // reply on the wire must reach the recipe first (a lock waiter
            // must hear of its own node's deletion before it acts on an
            // answer about its predecessor). The client wakes watchers in
            // the order the server sent their notifications, and the set of
            // watchers yields them in wake order; a notification may thus
            // overtake an earlier reply that is waiting, never a later one
            // (the simulator's `DriverOrder::NotificationsFirst`).
            tokio::select! {
                biased;
                Some(heard) = self.watches.next(), if !self.watches.is_empty() => match heard {
                    Ok(event) => self.on_watch(event),
                    Err(lost) => self.rearms.push(watch_loss::rearm(self.client.clone(), lost)),
                },
                Some(rearmed) = self.rearms.next(), if !self.rearms.is_empty() => {
                    self.on_rearmed(rearmed);
                }
                Some((id, reply, watcher)) = self.replies.next(), if !self.replies.is_empty() => {
                    self.on_reply(id, reply, watcher);
                }
                state = states.changed(), if !self.terminal => {
                    self.on_state(state);
                }
                Some(client) = next_client(&mut self.source), if self.terminal && renewing => {
                    if client.session_id() != self.client.session_id() {
                        debug!(session_id = client.session_id().0, "moving to a new session");
                        self.client = client;
                        states = self.client.state_watcher();
                        // Answers and watches of the old session are void.
                        self.replies = FuturesOrdered::new();
                        self.watches = FuturesUnordered::new();
                        self.rearms = FuturesUnordered::new();
                        self.terminal = false;
                        self.connected();
                    }
                }
                command = commands.recv(), if commands_open => match command {
                    Some(f) => f(&mut self.recipe),
                    None => commands_open = false,
                },
                () = async { settle.unwrap().await }, if self.reconnect_pending => {
                    if matches!(self.client.state(), zk::SessionState::SyncConnected | zk::SessionState::ConnectedReadOnly) {
                        self.connected();
                    }
                }
                () = async { tokio::time::sleep_until(timer.unwrap()).await }, if timer.is_some() => {
                    let now = self.now();
                    self.recipe.handle_timeout(now);
                }
            }
            self.drain();
        }
        trace!("driver finished");
    }

    fn connected(&mut self) {
        self.reconnect_pending = false;
        self.away = false;
        let session_id = self.client.session_id().0;
        debug!(session_id, "connected");
        let now = self.now();
        self.recipe
            .handle_session(now, SessionEvent::Connected { session_id });
    }

    fn on_reply(&mut self, id: RequestId, reply: OwnedReply, armed: Option<Armed>) {
        trace!(%id, ?reply, "reply");
        if let Some(armed) = armed {
            self.watches.push(watch_loss::wait(armed));
        }
        if matches!(reply, OwnedReply::Error(e) if e.is_connection_loss()) {
            self.reconnect_pending = true;
            self.away = true;
        }
        let now = self.now();
        reply.with_reply(|r| self.recipe.handle_reply(now, id, r));
    }

    /// A lost watch is set again: the recipe hears what it missed, if
    /// anything, as the notification it would have had.
    fn on_rearmed(&mut self, rearmed: Rearmed) {
        if let Some(armed) = rearmed.armed {
            self.watches.push(watch_loss::wait(armed));
        }
        if let Some(kind) = rearmed.missed {
            self.notify(kind, &rearmed.path);
        }
    }

    fn on_watch(&mut self, event: zk::WatchedEvent) {
        match convert::watch_kind(event.event_type) {
            Some(kind) => self.notify(kind, &event.path),
            // A watcher ends with the session's terminal state.
            None => self.on_state(event.session_state),
        }
    }

    fn notify(&mut self, kind: herdless_core::WatchKind, path: &str) {
        // A notification travels on a live connection: a recipe still
        // waiting to hear so hears `Connected` first, so that it acts on the
        // notification instead of dropping it.
        let live = matches!(
            self.client.state(),
            zk::SessionState::SyncConnected | zk::SessionState::ConnectedReadOnly
        );
        if self.away && live {
            self.connected();
        }
        self.counters.notifications.fetch_add(1, Ordering::Relaxed);
        debug!(%path, ?kind, "watch fired");
        let now = self.now();
        self.recipe.handle_watch(now, WatchEvent { kind, path });
    }

    fn on_state(&mut self, state: zk::SessionState) {
        if self.terminal {
            return;
        }
        use zk::SessionState as S;
        let now = self.now();
        match state {
            S::Disconnected => {
                warn!("connection lost: suspended");
                self.recipe.handle_session(now, SessionEvent::Suspended);
                self.reconnect_pending = false;
                self.away = true;
            }
            S::SyncConnected | S::ConnectedReadOnly => self.connected(),
            S::Expired | S::AuthFailed => {
                warn!("session expired");
                self.terminal = true;
                self.recipe.handle_session(now, SessionEvent::Expired);
            }
            S::Closed => {
                self.terminal = true;
                self.recipe.handle_session(now, SessionEvent::Closed);
            }
        }
    }

    /// Requests, then events: the contract's drain order. (The timer is
    /// re-read at the top of the loop.)
    fn drain(&mut self) {
        while let Some(out) = self.recipe.poll_request() {
            let future = send(&self.client, out);
            self.counters.requests.fetch_add(1, Ordering::Relaxed);
            self.replies.push_back(future);
        }
        while let Some(event) = self.recipe.poll_event() {
            (self.on_event)(&self.recipe, event);
        }
    }
}

/// The next client of a renewing source, once it changes; never for a
/// fixed one.
async fn next_client(source: &mut Source) -> Option<zk::Client> {
    match source {
        Source::Fixed(_) => std::future::pending().await,
        Source::Renewing(clients) => {
            clients.changed().await.ok()?;
            Some(clients.borrow_and_update().clone())
        }
    }
}

/// Polls a future once, right now, so the request inside it goes on the
/// wire in call order; the rest of the future is awaited later.
fn send_now<F>(future: F) -> ReplyFuture
where
    F: Future<Output = Answer> + Send + 'static,
{
    let mut future = Box::pin(future);
    let mut cx = Context::from_waker(futures::task::noop_waker_ref());
    match future.as_mut().poll(&mut cx) {
        Poll::Ready(out) => Box::pin(std::future::ready(out)),
        Poll::Pending => future as Pin<Box<_>>,
    }
}

fn failed(id: RequestId, e: &zk::Error) -> Answer {
    let code = convert::error(e);
    if code == ZkError::SystemError {
        warn!(%id, error = %e, "client error without a ZooKeeper code");
    }
    (id, OwnedReply::Error(code), None)
}

fn armed(watcher: zk::OneshotWatcher, path: String, seen: Seen) -> Armed {
    Armed {
        watcher,
        set: WatchSet { path, seen },
    }
}

/// Issues one core request on the client.
fn send(client: &zk::Client, out: Outgoing<'_>) -> ReplyFuture {
    let id = out.id;
    let client = client.clone();
    debug!(%id, request = ?out.request, "request");
    match out.request {
        Request::Create {
            path,
            data,
            acl,
            mode,
        } => {
            let (path, data, acls) = (path.to_owned(), data.to_vec(), convert::acl(acl));
            let mode = convert::create_mode(mode);
            send_now(async move {
                let options = mode.with_acls(zk::Acls::new(&acls));
                match client.create(&path, &data, &options).await {
                    Ok((_, sequence)) => {
                        let full = if mode == zk::CreateMode::EphemeralSequential
                            || mode == zk::CreateMode::PersistentSequential
                        {
                            format!("{path}{sequence}")
                        } else {
                            path
                        };
                        (id, OwnedReply::Created(full), None)
                    }
                    Err(e) => failed(id, &e),
                }
            })
        }
        Request::Delete { path, version } => {
            let path = path.to_owned();
            send_now(async move {
                let expected = convert::expected_version(version);
                match client.delete(&path, expected).await {
                    Ok(()) => (id, OwnedReply::Deleted, None),
                    Err(e) => failed(id, &e),
                }
            })
        }
        Request::Exists { path, watch } => {
            let path = path.to_owned();
            send_now(async move {
                let result = if watch {
                    client.check_and_watch_stat(&path).await.map(|(s, w)| {
                        let seen = Seen::Node(s.as_ref().map(|s| s.mzxid));
                        (s, Some(armed(w, path, seen)))
                    })
                } else {
                    client.check_stat(&path).await.map(|s| (s, None))
                };
                match result {
                    Ok((Some(stat), w)) => (id, OwnedReply::Exists(convert::stat(&stat)), w),
                    Ok((None, w)) => (id, OwnedReply::Error(ZkError::NoNode), w),
                    Err(e) => failed(id, &e),
                }
            })
        }
        Request::GetData { path, watch } => {
            let path = path.to_owned();
            send_now(async move {
                let result = if watch {
                    client.get_and_watch_data(&path).await.map(|(d, s, w)| {
                        let seen = Seen::Node(Some(s.mzxid));
                        (d, s, Some(armed(w, path, seen)))
                    })
                } else {
                    client.get_data(&path).await.map(|(d, s)| (d, s, None))
                };
                match result {
                    Ok((data, stat, w)) => (id, OwnedReply::Data(data, convert::stat(&stat)), w),
                    Err(e) => failed(id, &e),
                }
            })
        }
        Request::SetData {
            path,
            data,
            version,
        } => {
            let (path, data) = (path.to_owned(), data.to_vec());
            send_now(async move {
                let expected = convert::expected_version(version);
                match client.set_data(&path, &data, expected).await {
                    Ok(stat) => (id, OwnedReply::DataSet(convert::stat(&stat)), None),
                    Err(e) => failed(id, &e),
                }
            })
        }
        Request::GetChildren { path, watch } => {
            let path = path.to_owned();
            send_now(async move {
                let result = if watch {
                    client.list_and_watch_children(&path).await.map(|(c, w)| {
                        let seen = Seen::Children(watch_loss::digest(&c));
                        (c, Some(armed(w, path, seen)))
                    })
                } else {
                    client.list_children(&path).await.map(|c| (c, None))
                };
                match result {
                    Ok((children, w)) => (id, OwnedReply::Children(children), w),
                    Err(e) => failed(id, &e),
                }
            })
        }
        Request::Check { path, version } => {
            let path = path.to_owned();
            send_now(async move {
                // A top-level check is only defined inside a multi on 3.8.
                let mut writer = client.new_multi_writer();
                if let Err(e) = writer.add_check_version(&path, version.wire()) {
                    return failed(id, &e);
                }
                match writer.commit().await {
                    Ok(_) => (id, OwnedReply::Checked, None),
                    Err(zk::MultiWriteError::OperationFailed { source, .. }) => failed(id, &source),
                    Err(zk::MultiWriteError::RequestFailed { source }) => failed(id, &source),
                }
            })
        }
        Request::Sync { path } => {
            let path = path.to_owned();
            send_now(async move {
                match client.sync(&path).await {
                    Ok(()) => (id, OwnedReply::Synced, None),
                    Err(e) => failed(id, &e),
                }
            })
        }
        // Requests added to the core later are refused rather than guessed.
        _ => {
            let reply = (id, OwnedReply::Error(ZkError::Unimplemented), None);
            Box::pin(std::future::ready(reply))
        }
    }
}
