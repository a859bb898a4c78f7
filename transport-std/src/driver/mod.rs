//! One generic driver: runs any core [`Recipe`] over a session (a real
//! server's, through `zookeeper-client`, or the in-memory ZooKeeper's).
//!
//! The driver is a tokio task owning the recipe. It sends each request the
//! moment the recipe emits it (so a create and a listing leave back to back,
//! as the recipe intends), hands replies back strictly in request order,
//! routes the one-shot watchers' notifications, maps the client's session
//! states onto [`SessionEvent`]s, and arms the recipe's timer. After every
//! input it drains requests, then events, then the timer, as the [`Recipe`]
//! contract says.

pub(crate) mod across;
pub(crate) mod channel;
pub(crate) mod convert;
pub(crate) mod hold;
pub(crate) mod own_node;
pub(crate) mod session_over;
pub(crate) mod undo;
pub(crate) mod watch_loss;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use futures::stream::{FuturesOrdered, FuturesUnordered};
use futures::StreamExt;
use herdless_core::{Outgoing, Recipe, RequestId, SessionEvent, WatchEvent};
use tokio::sync::{oneshot, watch};
use tokio::time::Instant as TokioInstant;
use tracing::{debug, trace, warn};
use zookeeper_client as zk;

use crate::backend::{Backend, Notice, State, States};
use crate::Error;
use herdless_core::owned::OwnedReply;
use session_over::SessionOver;
use watch_loss::{Armed, Heard, Rearmed, WatchSet};

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
    commands: channel::Sender<Command<R>>,
    /// The driver's clock starts here: the recipe's `Instant` 0.
    origin: TokioInstant,
    over: SessionOver,
}

impl<R> Clone for DriverHandle<R> {
    fn clone(&self) -> Self {
        DriverHandle {
            commands: self.commands.clone(),
            origin: self.origin,
            over: self.over.clone(),
        }
    }
}

impl<R> DriverHandle<R> {
    /// The recipe's instant `after` from now, for deadlines.
    pub(crate) fn deadline_in(&self, after: Duration) -> herdless_core::Instant {
        millis_up(self.origin.elapsed().saturating_add(after))
    }

    /// Whether the recipe's session is over for good, for waits that no
    /// command of theirs would end.
    pub(crate) fn over(&self) -> SessionOver {
        self.over.clone()
    }

    /// Runs `f` on the recipe in its task, without waiting for it.
    pub(crate) fn command(&self, f: impl FnOnce(&mut R) + Send + 'static) -> Result<(), Error> {
        self.commands
            .unbounded_send(Box::new(f))
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

/// The deadline `at` for a recipe whose driver is about to be spawned (see
/// [`deadline_at_start`]), for an attempt made again on a later session
/// within the same deadline.
pub(crate) fn deadline_at_start_until(at: TokioInstant) -> herdless_core::Instant {
    deadline_at_start(at.saturating_duration_since(TokioInstant::now()))
}

/// The moment `timeout` from now; `None` past the end of the clock (a
/// timeout of `Duration::MAX`, say), which is no deadline at all.
pub(crate) fn deadline_after(timeout: Duration) -> Option<TokioInstant> {
    TokioInstant::now().checked_add(timeout)
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

/// Where a driver gets its session from.
#[derive(Clone)]
pub enum Source {
    /// One session: when it ends, the recipe hears so and stays on it.
    Fixed(Backend),
    /// A [`Session`](crate::Session)'s current client: when the session
    /// ends, the driver moves the recipe to the next one.
    Renewing(watch::Receiver<zk::Client>),
    /// A [`SimSession`](crate::sim::SimSession)'s current session, likewise.
    #[cfg(feature = "sim")]
    SimRenewing(watch::Receiver<crate::sim::SimClient>),
}

impl Source {
    /// The current session, without marking it seen.
    pub(crate) fn backend(&self) -> Backend {
        match self {
            Source::Fixed(backend) => backend.clone(),
            Source::Renewing(clients) => clients.borrow().clone().into(),
            #[cfg(feature = "sim")]
            Source::SimRenewing(clients) => clients.borrow().clone().into(),
        }
    }

    fn current(&mut self) -> Backend {
        match self {
            Source::Fixed(backend) => backend.clone(),
            Source::Renewing(clients) => clients.borrow_and_update().clone().into(),
            #[cfg(feature = "sim")]
            Source::SimRenewing(clients) => clients.borrow_and_update().clone().into(),
        }
    }

    fn renews(&self) -> bool {
        !matches!(self, Source::Fixed(_))
    }

    /// Resolves once a session other than `session_id` is current (`false`
    /// if none ever will be); `None` for a fixed source, which never moves.
    pub(crate) fn renewal(&self, session_id: i64) -> Option<BoxFuture<'static, bool>> {
        match self {
            Source::Fixed(_) => None,
            Source::Renewing(clients) => Some(renewed(clients, session_id, |c| c.session_id().0)),
            #[cfg(feature = "sim")]
            Source::SimRenewing(clients) => Some(renewed(clients, session_id, |c| c.session_id())),
        }
    }
}

/// Resolves once the client `clients` holds has a session other than
/// `session_id` (`false` if the sender is gone), whatever kind of client.
fn renewed<C: Send + Sync + 'static>(
    clients: &watch::Receiver<C>,
    session_id: i64,
    id_of: fn(&C) -> i64,
) -> BoxFuture<'static, bool> {
    let mut clients = clients.clone();
    Box::pin(async move {
        let renewed = clients.wait_for(|c| id_of(c) != session_id);
        renewed.await.is_ok()
    })
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
    let (tx, rx) = channel::unbounded();
    let client = source.current();
    // The session id, from the client the driver runs on: recipes that
    // check whose their nodes are (`ephemeralOwner`) need it from the
    // start. Recipes assume a connected session until told otherwise, so
    // for them this changes nothing else.
    let origin = TokioInstant::now();
    let (over_tx, over) = SessionOver::channel();
    recipe.handle_session(
        recipe_time(origin),
        SessionEvent::Connected {
            session_id: client.session_id(),
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
        closed: false,
        over: over_tx,
    };
    tokio::spawn(driver.run(rx, finished));
    DriverHandle {
        commands: tx,
        origin,
        over,
    }
}

struct Driver<R, E> {
    client: Backend,
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
    /// The recipe was told `Closed`: no session follows.
    closed: bool,
    over: watch::Sender<bool>,
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
        mut commands: channel::Receiver<Command<R>>,
        finished: impl Fn(&R) -> bool,
    ) {
        let mut states = self.client.states();
        self.start_from(&mut states);
        let mut commands_open = true;
        self.drain();
        loop {
            if !commands_open && finished(&self.recipe) {
                break;
            }
            let renewing = self.source.renews();
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
                next = next_client(&mut self.source), if self.terminal && renewing && !self.closed => {
                    match next {
                        Some(client) => self.move_to(client, &mut states),
                        // The session stopped renewing (its authentication
                        // was refused): work waiting for the next session
                        // would wait for ever.
                        None => {
                            let now = self.now();
                            self.close(now);
                        }
                    }
                }
                command = commands.next(), if commands_open => match command {
                    Some(f) => f(&mut self.recipe),
                    None => commands_open = false,
                },
                () = async { settle.unwrap().await }, if self.reconnect_pending => {
                    if self.client.state() == State::Connected {
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

    /// Takes in the state `states` starts from: their `changed` reports
    /// only later ones, and the session may have lost its connection or
    /// ended before this task first ran (a recipe started on a client
    /// whose session has just expired would otherwise wait for ever).
    fn start_from(&mut self, states: &mut States) {
        let state = states.state();
        if state != State::Connected {
            self.on_state(state);
        }
    }

    /// Moves the recipe to the renewing source's new session `client`.
    fn move_to(&mut self, client: Backend, states: &mut States) {
        if client.session_id() == self.client.session_id() {
            return;
        }
        debug!(session_id = client.session_id(), "moving to a new session");
        self.client = client;
        *states = self.client.states();
        // Answers and watches of the old session are void.
        self.replies = FuturesOrdered::new();
        self.watches = FuturesUnordered::new();
        self.rearms = FuturesUnordered::new();
        self.terminal = false;
        self.connected();
        self.start_from(states);
    }

    fn connected(&mut self) {
        self.reconnect_pending = false;
        self.away = false;
        let session_id = self.client.session_id();
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

    fn on_watch(&mut self, notice: Notice) {
        match notice.kind {
            Some(kind) => self.notify(kind, &notice.path),
            // A watcher ends with the session's terminal state.
            None => self.on_state(notice.state),
        }
    }

    fn notify(&mut self, kind: herdless_core::WatchKind, path: &str) {
        // A notification travels on a live connection: a recipe still
        // waiting to hear so hears `Connected` first, so that it acts on the
        // notification instead of dropping it.
        let live = self.client.state() == State::Connected;
        if self.away && live {
            self.connected();
        }
        self.counters.notifications.fetch_add(1, Ordering::Relaxed);
        debug!(%path, ?kind, "watch fired");
        let now = self.now();
        self.recipe.handle_watch(now, WatchEvent { kind, path });
    }

    fn on_state(&mut self, state: State) {
        if self.terminal {
            return;
        }
        let now = self.now();
        match state {
            State::Disconnected => {
                warn!("connection lost: suspended");
                self.recipe.handle_session(now, SessionEvent::Suspended);
                self.reconnect_pending = false;
                self.away = true;
            }
            State::Connected => self.connected(),
            State::Expired => {
                warn!("session expired");
                self.terminal = true;
                self.recipe.handle_session(now, SessionEvent::Expired);
                if !self.source.renews() {
                    // No session follows on a fixed client: work asked of
                    // the recipe from now on fails at once instead of
                    // waiting for one (a recipe treats a `Closed` session
                    // as one with no successor).
                    self.close(now);
                }
            }
            State::Closed => {
                self.terminal = true;
                self.close(now);
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
        // After the events: a waiter hears what the end caused first.
        if self.closed {
            self.over
                .send_if_modified(|over| !std::mem::replace(over, true));
        }
    }

    /// Tells the recipe that no session follows.
    fn close(&mut self, now: herdless_core::Instant) {
        self.closed = true;
        self.recipe.handle_session(now, SessionEvent::Closed);
    }
}

/// The next session of a renewing source, once it changes; never for a
/// fixed one.
async fn next_client(source: &mut Source) -> Option<Backend> {
    match source {
        Source::Fixed(_) => std::future::pending().await,
        Source::Renewing(clients) => {
            clients.changed().await.ok()?;
            Some(clients.borrow_and_update().clone().into())
        }
        #[cfg(feature = "sim")]
        Source::SimRenewing(clients) => {
            clients.changed().await.ok()?;
            Some(clients.borrow_and_update().clone().into())
        }
    }
}

/// Issues one recipe request on the backend: its answer, with the watch it
/// set as the driver tracks it.
fn send(backend: &Backend, out: Outgoing<'_>) -> ReplyFuture {
    let id = out.id;
    debug!(%id, request = ?out.request, "request");
    let path = out.request.path().to_owned();
    let call = backend.call(out.request);
    Box::pin(async move {
        let (reply, watcher) = call.await;
        let armed = watcher.and_then(|watcher| {
            let seen = watch_loss::seen(&reply)?;
            Some(Armed {
                watcher,
                set: WatchSet { path, seen },
            })
        });
        (id, reply, armed)
    })
}
