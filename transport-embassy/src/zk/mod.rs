//! The driver: one ZooKeeper session over a [`Transport`], running several
//! recipes.

use core::future::Future;
use core::marker::PhantomData;

use embassy_futures::select::{select, Either};
use embassy_time::{Duration, Timer};
use heapless::Vec;
use herdless_core::wire::{
    AuthError, ConnectionId, Session, SessionConfig, State, DEFAULT_PENDING, DEFAULT_WATCHES,
    DEFAULT_WATCH_BYTES,
};
use herdless_core::{Instant, Recipe, RequestId};

use crate::erased::ErasedRecipe;
use crate::error::{Error, Fault};
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
///
/// `WATCHES` and `WATCH_BYTES` size the session's watch table, which sets
/// the session's watches again after it moves to another server (see
/// [`Session`](herdless_core::wire::Session)). A device that runs only
/// recipes can do without it, `Zk<'_, T, K, 0, 0>`: every recipe reads
/// again what it watches when its session resumes, and the table's code
/// (about 1.6 KB on a Cortex-M4) and RAM (1,288 B) are left out.
pub struct Zk<
    'a,
    T: Transport,
    const K: usize = 4,
    const WATCHES: usize = DEFAULT_WATCHES,
    const WATCH_BYTES: usize = DEFAULT_WATCH_BYTES,
> {
    transport: T,
    session: Session<Tag, DEFAULT_PENDING, WATCHES, WATCH_BYTES>,
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
    /// The transport must be closed before any other I/O: set when a
    /// connection is dropped or an attempt failed, cleared only once
    /// `disconnect` returns, so a call dropped meanwhile closes it again.
    closing: bool,
    /// The frame in `tx` is written; the transport is still to be flushed.
    flush_due: bool,
    /// A frame too large for `rx`, being read off the connection.
    large: Option<Large>,
    /// The recipes' clock starts here: their `Instant` 0.
    origin: embassy_time::Instant,
    /// When timers were last fired: every timer due then was handled, so
    /// one still at or before it breaks the [`Recipe::poll_timeout`]
    /// contract and waits a millisecond rather than firing again at once.
    fired_at: Instant,
    /// Timers were last fired without a wait (they were overdue): the
    /// next wait waits, so that the executor gets a turn.
    fired_unwaited: bool,
    faults: u32,
    last_fault: Option<Fault>,
}

mod drive;
mod large;
mod receive;

pub(crate) use drive::Until;
use large::Large;

impl<'a, T: Transport, const K: usize, const WATCHES: usize, const WATCH_BYTES: usize>
    Zk<'a, T, K, WATCHES, WATCH_BYTES>
{
    /// A driver for a session with `config` over `transport`. Nothing is
    /// sent before the first async call.
    ///
    /// Frames that fit `buffers.rx` are accepted up to the session's
    /// `max_frame`; larger ones, of any length, are read through it (see
    /// [`Buffers`]).
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
            closing: false,
            flush_due: false,
            large: None,
            origin,
            fired_at: Instant::ZERO,
            fired_unwaited: false,
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

    /// The index, in the transport's list, of the server of the current
    /// or last connection attempt (where
    /// [`SessionConfig::with_server_seed`](crate::wire::SessionConfig::with_server_seed)
    /// spreads a fleet).
    pub fn server(&self) -> usize {
        self.session.server()
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
    pub fn connect(
        &mut self,
    ) -> impl Future<Output = Result<(), Error>> + use<'_, 'a, T, K, WATCHES, WATCH_BYTES> {
        self.drive(Until::Connected)
    }

    /// Drives the session while `work` runs and returns its output; the
    /// recipes' events wait in the recipes for the application to read.
    ///
    /// Fails only when the session is over for good; `work` is dropped
    /// then.
    pub async fn run<F: Future>(&mut self, work: F) -> Result<F::Output, Error> {
        match select(work, self.drive(Until::Done(&mut |_| false))).await {
            Either::First(output) => Ok(output),
            Either::Second(Err(e)) => Err(e),
            // `drive` ends well only once `done` says so, which this one
            // never does; a value rather than a panic all the same.
            Either::Second(Ok(())) => Err(Error::Lost),
        }
    }

    /// Drives the session for `duration`.
    pub fn run_for(
        &mut self,
        duration: Duration,
    ) -> impl Future<Output = Result<(), Error>> + use<'_, 'a, T, K, WATCHES, WATCH_BYTES> {
        self.run(Timer::after(duration))
    }

    /// Ends the session cleanly (closeSession): its ephemeral nodes go at
    /// once, and every recipe hears `Closed`.
    pub async fn close(&mut self) -> Result<(), Error> {
        let now = self.now();
        self.session.close(now);
        let result = self.drive(Until::Closed).await;
        self.drop_connection();
        self.closing = true;
        // Whatever the outcome: the session is over either way.
        let _ = self.drive(Until::Settled).await;
        match result {
            Err(Error::SessionOver(State::Closed)) => Ok(()),
            other => other,
        }
    }
}
