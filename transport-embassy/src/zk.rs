//! The driver: one ZooKeeper session over a [`Transport`], running several
//! recipes.

use core::convert::Infallible;
use core::future::Future;
use core::marker::PhantomData;

use embassy_futures::select::{select, Either};
use embassy_time::{Duration, Timer};
use embedded_io_async::{Error as _, ErrorKind};
use heapless::Vec;
use herdless_core::wire::listing::ListingDecoder;
use herdless_core::wire::{
    frame, Action, AuthError, ConnectionId, Event, Incoming, LargeFrame, Op, SendError, Session,
    SessionConfig, State,
};
use herdless_core::wire::{DecodeError, SessionError};
use herdless_core::{Instant, Recipe, Reply, RequestId, ZkError};

use crate::erased::ErasedRecipe;
use crate::error::{Error, Fault};
use crate::log::{log_debug, log_warn};
use crate::transport::Transport;

/// A request's tag in the session: which recipe sent it, and its id there.
type Tag = (u8, RequestId);

/// The caller's memory for frames: `rx` holds received bytes until a whole
/// frame is there, `tx` one encoded request at a time.
///
/// A reply larger than `rx` does not drop the connection: a listing goes
/// to a recipe that takes it in parts (the lock, the election candidate,
/// the queue's consumer and producer) name by name as it arrives, so for
/// listings `rx` need only hold the longest name (plus 24 bytes); any
/// other reply larger than `rx` (a big `getData`, a listing for a recipe
/// that wants it whole, a name longer than `rx`) is read off the
/// connection and answered with
/// [`ZkError::ReplyTooLarge`](herdless_core::ZkError::ReplyTooLarge). Size
/// `rx` for the largest other reply the recipes read whole: a create's
/// path, or a node's data plus its 68-byte stat (160 bytes is enough for
/// the lock and the election with short directories). `tx` must hold the longest request (a
/// create: path and data plus about 64 bytes) and the setWatches that
/// re-arms every watch after a reconnect.
pub struct Buffers<'a> {
    rx: &'a mut [u8],
    tx: &'a mut [u8],
}

impl<'a> Buffers<'a> {
    /// Buffers from two caller slices (often `static` arrays).
    pub fn new(rx: &'a mut [u8], tx: &'a mut [u8]) -> Self {
        Buffers { rx, tx }
    }
}

/// Names a recipe added to a [`Zk`], with its type: handed out by
/// [`Zk::add`], used to reach the recipe again.
pub struct RecipeId<R> {
    index: u8,
    _recipe: PhantomData<fn() -> R>,
}

impl<R> Clone for RecipeId<R> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<R> Copy for RecipeId<R> {}

impl<R> core::fmt::Debug for RecipeId<R> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "RecipeId({})", self.index)
    }
}

/// A ZooKeeper session over `T`, running up to `K` recipes.
///
/// Nothing happens in the background: the session makes progress (pings,
/// replies, watch notifications, reconnects) while one of the driver's
/// async methods runs — a recipe call such as
/// [`Handle::acquire`](crate::Handle), [`connect`](Zk::connect), or
/// [`run`](Zk::run), which drives the session while the application's own
/// future does its work. Between calls the server sees no pings, so call
/// `run` (or another method) at least every third of the session timeout.
///
/// Every call may be dropped at any point (its work finished first, a
/// timeout): a frame half-written and a connection half-opened are taken
/// up by the next call. A connection being opened starts over then, so keep
/// calls longer than a connection takes to open.
///
/// Recipes are borrowed for `'a` and reached through their [`RecipeId`]
/// while the driver holds them.
pub struct Zk<'a, T: Transport, const K: usize = 4> {
    transport: T,
    session: Session<Tag>,
    recipes: Vec<&'a mut dyn ErasedRecipe, K>,
    rx: &'a mut [u8],
    filled: usize,
    tx: &'a mut [u8],
    /// `tx[tx_sent..tx_len]` is the rest of a frame not yet written: a
    /// driver call dropped in the middle of a write (its work finished,
    /// a timeout) leaves it for the next call to finish, so the server
    /// never sees half a frame followed by another one.
    tx_sent: usize,
    tx_len: usize,
    /// The connection open on the transport, if any.
    conn: Option<ConnectionId>,
    /// A connection being opened: set until its outcome is told to the
    /// session, so that a driver call dropped while connecting (its work
    /// finished first) has the next call open it again, instead of
    /// leaving the session waiting for an answer that never comes.
    opening: Option<(usize, ConnectionId)>,
    /// A frame too large for `rx`, being read off the connection.
    large: Option<Large>,
    /// The recipes' clock starts here: their `Instant` 0.
    origin: embassy_time::Instant,
    faults: u32,
    last_fault: Option<Fault>,
}

/// The rest of a frame too large for the receive buffer.
struct Large {
    /// Payload bytes not yet read.
    left: usize,
    /// The listing they hold, for the recipe at this index with this
    /// request id; `None` once the names are read, or for a frame to skip.
    listing: Option<(u8, RequestId, ListingDecoder)>,
}

/// Bytes of a frame's start the session reads to match a large frame: the
/// length prefix and the reply header.
const LARGE_HEAD: usize = 4 + 16;

impl<'a, T: Transport, const K: usize> Zk<'a, T, K> {
    /// A driver for a session with `config` over `transport`. Nothing is
    /// sent before the first async call.
    ///
    /// Frames up to the session's `max_frame` are accepted; those larger
    /// than `buffers.rx` are read through it (see [`Buffers`]).
    pub fn new(transport: T, buffers: Buffers<'a>, config: SessionConfig) -> Self {
        let origin = embassy_time::Instant::now();
        Zk {
            transport,
            session: Session::new(config, Instant::from_millis(0)),
            recipes: Vec::new(),
            rx: buffers.rx,
            filled: 0,
            tx: buffers.tx,
            tx_sent: 0,
            tx_len: 0,
            conn: None,
            opening: None,
            large: None,
            origin,
            faults: 0,
            last_fault: None,
        }
    }

    /// Adds a recipe; it hears every session change and watch notification
    /// from now on and sends its requests as the driver runs.
    pub fn add<R: Recipe + 'static>(&mut self, recipe: &'a mut R) -> Result<RecipeId<R>, Error> {
        let index = u8::try_from(self.recipes.len()).map_err(|_| Error::TooManyRecipes)?;
        self.recipes
            .push(recipe)
            .map_err(|_| Error::TooManyRecipes)?;
        Ok(RecipeId {
            index,
            _recipe: PhantomData,
        })
    }

    /// The recipe `id` names, to call its own methods or read its state.
    pub fn recipe<R: Recipe + 'static>(&mut self, id: RecipeId<R>) -> Result<&mut R, Error> {
        self.recipes
            .get_mut(usize::from(id.index))
            .and_then(|recipe| recipe.as_any().downcast_mut::<R>())
            .ok_or(Error::UnknownRecipe)
    }

    /// Credentials (for example `digest`, `user:password`), sent on every
    /// connection from now on.
    pub fn add_auth(&mut self, scheme: &str, credential: &[u8]) -> Result<(), AuthError> {
        self.session.add_auth(scheme, credential)
    }

    /// Where the session stands.
    pub fn state(&self) -> State {
        self.session.state()
    }

    /// The session id (the `ephemeralOwner` of this session's nodes), 0
    /// before the first handshake.
    pub fn session_id(&self) -> i64 {
        self.session.session_id()
    }

    /// The timeout the server granted, in milliseconds.
    pub fn negotiated_timeout_ms(&self) -> u32 {
        self.session.negotiated_timeout_ms()
    }

    /// How many connection faults the driver recovered from so far.
    pub fn faults(&self) -> u32 {
        self.faults
    }

    /// The most recent connection fault, if any.
    pub fn last_fault(&self) -> Option<Fault> {
        self.last_fault
    }

    /// The transport, for inspection (an embassy-net socket's state, say).
    pub fn transport(&mut self) -> &mut T {
        &mut self.transport
    }

    /// The recipes' current time (milliseconds since the driver was made),
    /// for deadlines passed to recipe methods.
    pub fn now(&self) -> Instant {
        let elapsed = embassy_time::Instant::now().saturating_duration_since(self.origin);
        Instant::from_millis(elapsed.as_millis())
    }

    /// The recipes' time `after` from now.
    pub fn deadline_in(&self, after: Duration) -> Instant {
        self.now().plus_millis(after.as_millis())
    }

    /// Runs the session until it is connected.
    ///
    /// Cancel-safe: dropping it leaves the session where it got to.
    pub async fn connect(&mut self) -> Result<(), Error> {
        self.drive_until(|zk| matches!(zk.session.state(), State::Connected { .. }).then_some(()))
            .await
    }

    /// Drives the session while `work` runs and returns its output; the
    /// recipes' events wait in the recipes for the application to read.
    ///
    /// Fails only when the session is over for good; `work` is dropped
    /// then.
    pub async fn run<F: Future>(&mut self, work: F) -> Result<F::Output, Error> {
        match select(work, self.drive_until(|_| None::<Infallible>)).await {
            Either::First(output) => Ok(output),
            Either::Second(Err(e)) => Err(e),
            Either::Second(Ok(never)) => match never {},
        }
    }

    /// Drives the session for `duration`.
    pub async fn run_for(&mut self, duration: Duration) -> Result<(), Error> {
        self.run(Timer::after(duration)).await
    }

    /// Ends the session cleanly (closeSession): its ephemeral nodes go at
    /// once, and every recipe hears `Closed`.
    pub async fn close(&mut self) -> Result<(), Error> {
        let now = self.now();
        self.session.close(now);
        let result = self
            .drive_until(|zk| matches!(zk.session.state(), State::Closed).then_some(()))
            .await;
        self.transport.disconnect().await;
        self.conn = None;
        match result {
            Err(Error::SessionOver(State::Closed)) => Ok(()),
            other => other,
        }
    }

    /// Runs the session until `done` returns something, checking after
    /// every input (the recipes' events are read inside `done`).
    pub(crate) async fn drive_until<O>(
        &mut self,
        mut done: impl FnMut(&mut Self) -> Option<O>,
    ) -> Result<O, Error> {
        loop {
            self.settle().await;
            if let Some(output) = done(self) {
                return Ok(output);
            }
            if let state @ (State::Closed | State::Expired | State::AuthFailed) =
                self.session.state()
            {
                return Err(Error::SessionOver(state));
            }
            self.wait().await;
        }
    }

    /// Carries out everything due until nothing changes: connections to
    /// open or close, the session's own frames, session events for the
    /// recipes, and the recipes' requests.
    async fn settle(&mut self) {
        if let Some((server, conn)) = self.opening.take() {
            // Unless the session has given up on that attempt meanwhile
            // (its connect timeout), in which case it asks anew.
            if self.session.connection() == conn {
                self.open(server, conn).await;
            }
        }
        if let Some(conn) = self.conn {
            if self.tx_sent < self.tx_len {
                self.finish_write(conn).await;
            }
        }
        loop {
            let mut progressed = false;
            while let Some(action) = self.session.poll_action() {
                progressed = true;
                match action {
                    Action::Connect { server, conn } => self.open(server, conn).await,
                    Action::Close { conn } => {
                        if self.conn == Some(conn) {
                            self.drop_connection().await;
                        }
                    }
                }
            }
            progressed |= self.transmit_own().await;
            while let Some(event) = self.session.poll_event() {
                progressed = true;
                if let Event::Session(event) = event {
                    log_debug!("session: {:?}", event);
                    let now = self.now();
                    for recipe in self.recipes.iter_mut() {
                        recipe.handle_session(now, event);
                    }
                }
                // `Event::Lost` needs nothing: the recipes hear `Suspended`,
                // which voids their requests in flight.
            }
            progressed |= self.send_requests().await;
            if !progressed {
                return;
            }
        }
    }

    /// Writes the session's own frames (handshake, auth, setWatches, ping,
    /// closeSession). Returns whether anything happened.
    async fn transmit_own(&mut self) -> bool {
        let mut progressed = false;
        while let Some(conn) = self.conn {
            let now = self.now();
            match self.session.poll_transmit(self.tx, now) {
                Ok(Some(n)) => {
                    progressed = true;
                    if !self.write(conn, n).await {
                        break;
                    }
                }
                Ok(None) => break,
                Err(e) => {
                    // The buffer cannot hold the frame; dropping the
                    // connection at least lets the session try again
                    // rather than stall with the frame due.
                    self.fault(Fault::Encode(e));
                    self.lose(conn).await;
                    return true;
                }
            }
        }
        progressed
    }

    /// Sends what the recipes want sent, while the session can take it.
    async fn send_requests(&mut self) -> bool {
        let mut progressed = false;
        for index in 0..self.recipes.len() {
            while self.session.can_send() {
                let Some(conn) = self.conn else {
                    return progressed;
                };
                let now = self.now();
                let Some(recipe) = self.recipes.get_mut(index) else {
                    break;
                };
                let Some(out) = recipe.poll_request() else {
                    break;
                };
                progressed = true;
                let id = out.id;
                let tag = (u8::try_from(index).unwrap_or(u8::MAX), id);
                let sent = self.session.send(tag, &Op::from(out.request), self.tx, now);
                match sent {
                    Ok(n) => {
                        if !self.write(conn, n).await {
                            return true;
                        }
                    }
                    Err(e) => {
                        self.fault(Fault::Send(e));
                        let error = match e {
                            SendError::NotConnected | SendError::Busy => ZkError::ConnectionLoss,
                            _ => ZkError::MarshallingError,
                        };
                        if let Some(recipe) = self.recipes.get_mut(index) {
                            recipe.handle_reply(now, id, Reply::Error(error));
                        }
                    }
                }
            }
        }
        progressed
    }

    /// Writes `tx[..n]` on `conn`; on failure the connection is dropped
    /// and `false` returned.
    async fn write(&mut self, conn: ConnectionId, n: usize) -> bool {
        self.tx_sent = 0;
        self.tx_len = n.min(self.tx.len());
        self.finish_write(conn).await
    }

    /// Writes what is left of the frame in `tx`, keeping track of every
    /// chunk so that a call dropped in between can be resumed.
    async fn finish_write(&mut self, conn: ConnectionId) -> bool {
        while self.tx_sent < self.tx_len {
            let rest = self.tx.get(self.tx_sent..self.tx_len).unwrap_or_default();
            match self.transport.write(rest).await {
                Ok(0) => {
                    self.fault(Fault::Io(ErrorKind::WriteZero));
                    self.lose(conn).await;
                    return false;
                }
                Ok(k) => self.tx_sent += k,
                Err(e) => {
                    self.fault(Fault::Io(e.kind()));
                    self.lose(conn).await;
                    return false;
                }
            }
        }
        self.tx_sent = 0;
        self.tx_len = 0;
        match self.transport.flush().await {
            Ok(()) => true,
            Err(e) => {
                self.fault(Fault::Io(e.kind()));
                self.lose(conn).await;
                false
            }
        }
    }

    /// Opens the connection the session asked for, giving up when the
    /// session's timer (the connect timeout) comes first.
    async fn open(&mut self, server: usize, conn: ConnectionId) {
        self.opening = Some((server, conn));
        self.drop_connection().await;
        log_debug!("connecting to server {:?} ({:?})", server, conn);
        let deadline = self.session.poll_timeout().map(|at| self.origin_plus(at));
        let result = match deadline {
            Some(at) => match select(self.transport.connect(server), Timer::at(at)).await {
                Either::First(result) => Some(result),
                Either::Second(()) => None,
            },
            None => Some(self.transport.connect(server).await),
        };
        // The session hears the outcome before anything else is awaited.
        self.opening = None;
        let now = self.now();
        match result {
            Some(Ok(())) => {
                self.conn = Some(conn);
                self.filled = 0;
                self.large = None;
                self.session.handle_connected(conn, now);
            }
            Some(Err(e)) => {
                self.fault(Fault::Connect(e.kind()));
                self.session.handle_disconnected(conn, now);
                self.transport.disconnect().await;
            }
            None => {
                self.session.handle_timeout(now);
                self.transport.disconnect().await;
            }
        }
    }

    /// Waits for bytes or for the earliest timer, and handles what came.
    async fn wait(&mut self) {
        let wake = self.next_wake();
        match self.conn {
            Some(conn) => {
                let timer = wake.map(|at| Timer::at(self.origin_plus(at)));
                let room = self.rx.get_mut(self.filled..).unwrap_or_default();
                let read = self.transport.read(room);
                let outcome = match timer {
                    Some(timer) => select(read, timer).await,
                    None => Either::First(read.await),
                };
                match outcome {
                    Either::First(Ok(0)) => {
                        self.fault(Fault::ClosedByServer);
                        self.lose(conn).await;
                    }
                    Either::First(Ok(n)) => {
                        self.filled = (self.filled + n).min(self.rx.len());
                        self.take_frames(conn).await;
                    }
                    Either::First(Err(e)) => {
                        self.fault(Fault::Io(e.kind()));
                        self.lose(conn).await;
                    }
                    Either::Second(()) => {}
                }
            }
            None => match wake {
                Some(at) => Timer::at(self.origin_plus(at)).await,
                // Nothing can happen without a connection or a timer; the
                // session always has one of them unless it is over.
                None => return,
            },
        }
        self.fire_timers();
    }

    /// Hands every whole frame in the receive buffer to the session and
    /// the recipes, and what has come of a frame too large for the buffer,
    /// keeping a partial one for the next read.
    async fn take_frames(&mut self, conn: ConnectionId) {
        let now = self.now();
        let max = self.session.max_frame();
        let mut start = 0;
        let mut broken = None;
        loop {
            if self.large.is_some() {
                match self.take_large(start, now) {
                    Ok(0) => break,
                    Ok(used) => {
                        start += used;
                        continue;
                    }
                    Err(fault) => {
                        broken = Some(fault);
                        break;
                    }
                }
            }
            let pending = self.rx.get(start..self.filled).unwrap_or_default();
            match frame::total_len(pending, max) {
                Ok(Some(total)) if total > self.rx.len() => {
                    let Some(head) = pending.get(4..LARGE_HEAD) else {
                        break;
                    };
                    match self.session.handle_large_frame(conn, head, now) {
                        Ok(large) => self.begin_large(large, total - LARGE_HEAD, now),
                        Err(e) => {
                            self.fault(Fault::Session(e));
                            self.filled = 0;
                            self.large = None;
                            return;
                        }
                    }
                    start += LARGE_HEAD;
                    continue;
                }
                Ok(_) => {}
                Err(e) => {
                    broken = Some(Fault::Frame(e));
                    break;
                }
            }
            let frame = match frame::split(pending, max) {
                Ok(Some(frame)) => frame,
                Ok(None) => break,
                Err(e) => {
                    broken = Some(Fault::Frame(e));
                    break;
                }
            };
            start += frame.consumed;
            match self.session.handle_frame(conn, frame.payload, now) {
                Ok(Incoming::Reply { tag, response }) => {
                    let (index, id) = tag;
                    if let Some(reply) = response.into_reply() {
                        if let Some(recipe) = self.recipes.get_mut(usize::from(index)) {
                            recipe.handle_reply(now, id, reply);
                        }
                    }
                }
                Ok(Incoming::Watch(event)) => {
                    for recipe in self.recipes.iter_mut() {
                        recipe.handle_watch(now, event);
                    }
                }
                Ok(_) => {}
                Err(e) => {
                    // The session dropped the connection (a Close action
                    // follows); what is left in the buffer is from it.
                    self.fault(Fault::Session(e));
                    self.filled = 0;
                    self.large = None;
                    return;
                }
            }
        }
        if let Some(fault) = broken {
            self.fault(fault);
            self.lose(conn).await;
            return;
        }
        self.rx.copy_within(start..self.filled, 0);
        self.filled -= start;
    }

    /// A frame too large for the receive buffer began, `left` payload
    /// bytes still to come: a listing goes to its recipe in parts if it
    /// takes them; any other reply is answered with `ReplyTooLarge`.
    fn begin_large(&mut self, large: LargeFrame<Tag>, left: usize, now: Instant) {
        let (listing, tag) = match large {
            LargeFrame::Listing { tag } => (true, tag),
            LargeFrame::TooLarge { tag } => (false, tag),
            _ => {
                self.large = Some(Large {
                    left,
                    listing: None,
                });
                return;
            }
        };
        let (index, id) = tag;
        let recipe = self.recipes.get_mut(usize::from(index));
        let in_parts = listing && recipe.as_ref().is_some_and(|r| r.takes_listing_in_parts());
        if !in_parts {
            log_warn!(
                "a reply of {:?} bytes skipped: over the receive buffer",
                left
            );
            if let Some(recipe) = recipe {
                recipe.handle_reply(now, id, Reply::Error(ZkError::ReplyTooLarge));
            }
        }
        self.large = Some(Large {
            left,
            listing: in_parts.then(|| (index, id, ListingDecoder::new())),
        });
    }

    /// Reads what has come of a large frame from `rx[start..filled]`:
    /// returns the bytes used (0: wait for more), or the fault that makes
    /// the connection unusable (a corrupt listing).
    fn take_large(&mut self, start: usize, now: Instant) -> Result<usize, Fault> {
        let Some(large) = self.large.as_mut() else {
            return Ok(0);
        };
        let pending = self.rx.get(start..self.filled).unwrap_or_default();
        let window = pending.get(..large.left).unwrap_or(pending);
        let used = match large.listing.as_mut() {
            None => window.len(),
            Some((index, id, decoder)) => {
                let part = decoder
                    .decode(window)
                    .map_err(|e| Fault::Session(SessionError::Decode(e)))?;
                let last = decoder.is_done();
                let recipe = self.recipes.get_mut(usize::from(*index));
                let used = if part.consumed > 0 || last {
                    if let Some(recipe) = recipe {
                        recipe.handle_listing_part(now, *id, part.names, last);
                    }
                    part.consumed
                } else if window.len() == large.left {
                    // The frame ends inside a name.
                    return Err(Fault::Session(SessionError::Decode(DecodeError::Truncated)));
                } else if pending.len() >= self.rx.len() {
                    // One name fills the whole buffer: the listing cannot
                    // be read here; the recipe hears so, the rest is skipped.
                    log_warn!("a name over the receive buffer: listing skipped");
                    if let Some(recipe) = recipe {
                        recipe.handle_reply(now, *id, Reply::Error(ZkError::ReplyTooLarge));
                    }
                    large.listing = None;
                    window.len()
                } else {
                    part.consumed
                };
                if last {
                    large.listing = None;
                }
                used
            }
        };
        large.left -= used;
        if large.left == 0 {
            self.large = None;
        }
        Ok(used)
    }

    /// The connection is gone: tell the session and close the transport.
    async fn lose(&mut self, conn: ConnectionId) {
        let now = self.now();
        // The session first: closing the transport may be cut short.
        self.session.handle_disconnected(conn, now);
        self.drop_connection().await;
    }

    async fn drop_connection(&mut self) {
        // A frame half-written to the old connection must not continue on
        // the next one.
        self.tx_sent = 0;
        self.tx_len = 0;
        if self.conn.take().is_some() {
            self.transport.disconnect().await;
        }
        self.filled = 0;
        self.large = None;
    }

    /// Calls the session's and the recipes' timers that are due.
    fn fire_timers(&mut self) {
        let now = self.now();
        if self.session.poll_timeout().is_some_and(|at| at <= now) {
            self.session.handle_timeout(now);
        }
        for recipe in self.recipes.iter_mut() {
            if recipe.poll_timeout().is_some_and(|at| at <= now) {
                recipe.handle_timeout(now);
            }
        }
    }

    fn next_wake(&self) -> Option<Instant> {
        self.recipes
            .iter()
            .filter_map(|recipe| recipe.poll_timeout())
            .chain(self.session.poll_timeout())
            .min()
    }

    fn origin_plus(&self, at: Instant) -> embassy_time::Instant {
        self.origin + Duration::from_millis(at.as_millis())
    }

    fn fault(&mut self, fault: Fault) {
        log_warn!("connection fault: {:?}", fault);
        self.faults = self.faults.saturating_add(1);
        self.last_fault = Some(fault);
    }
}
