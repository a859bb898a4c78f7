//! Driving the session: the decisions that need no I/O, and the few
//! await points that carry out the I/O they ask for.

use core::future::{poll_fn, Future};
use core::pin::{pin, Pin};
use core::task::Poll;

use embassy_time::{Duration, Timer};
use embedded_io_async::{Error as _, ErrorKind};
use herdless_core::wire::{Action, ConnectionId, Event, SendError, State};
use herdless_core::{Instant, Reply, ZkError};

use super::receive::Wait;
use super::Zk;
use crate::error::{Error, Fault};
use crate::log::{log_debug, log_warn};
use crate::transport::Transport;

/// I/O the driver's logic asks for, carried out by [`Zk::perform`].
pub(super) enum Io {
    /// Close the transport.
    Disconnect,
    /// Open a connection to this server, giving up at the session's
    /// timer (the connect timeout) if there is one.
    Connect(usize, Option<Instant>),
    /// Write the rest of the frame in `tx`.
    Write,
    /// Flush the transport.
    Flush,
}

/// What ends a [`drive`](Zk::drive) that returns.
///
/// The session's own states are named rather than given as closures so
/// that the calls waiting for them can return the drive's future itself,
/// which a closure they made (and would lend) does not outlive.
pub(crate) enum Until<'d, Z> {
    /// The session is connected.
    Connected,
    /// The session is closed.
    Closed,
    /// Nothing is left to do but wait: every connection to open or
    /// close, frame and event due is carried out.
    Settled,
    /// `done` returns `true`.
    Done(&'d mut dyn FnMut(&mut Z) -> bool),
}

/// What came of an [`Io`].
pub(super) enum Outcome {
    Disconnected,
    /// `None`: the connect timeout came first.
    Connected(Option<Result<(), ErrorKind>>),
    Wrote(Result<usize, ErrorKind>),
    Flushed(Result<(), ErrorKind>),
    /// A timer came before a write or a flush ended, which the next call
    /// takes up again unless the timer ended the connection.
    Timer,
}

/// `io`'s output, or `None` when `wake` comes first. `io` is polled
/// first, so one that is ready at once (a write the socket takes) never
/// arms a timer; an overdue timer that must win over a ready read is
/// [`wait_for`](Zk::wait_for)'s to fire.
///
/// A plain function around one `poll_fn`, `io` pinned by the caller: an
/// `async fn` racing the two with `select` made a state machine for each
/// of its four kinds of I/O, 348 B more herdless code in the STM32
/// firmware (scripts/firmware-size.sh).
pub(super) fn unless_due<F: Future>(
    mut io: Pin<&mut F>,
    wake: Option<embassy_time::Instant>,
) -> impl Future<Output = Option<F::Output>> + use<'_, F> {
    let mut timer = wake.map(Timer::at);
    poll_fn(move |cx| {
        if let Poll::Ready(output) = io.as_mut().poll(cx) {
            return Poll::Ready(Some(output));
        }
        match timer.as_mut().map(|timer| Pin::new(timer).poll(cx)) {
            Some(Poll::Ready(())) => Poll::Ready(None),
            _ => Poll::Pending,
        }
    })
}

impl<T: Transport, const K: usize, const WATCHES: usize, const WATCH_BYTES: usize>
    Zk<'_, T, K, WATCHES, WATCH_BYTES>
{
    /// Runs the session until `until` holds, checking after every input
    /// (the recipes' events are read inside an [`Until::Done`] closure,
    /// which keeps what it found for its caller).
    ///
    /// The closure is a trait object and the output stays with the caller
    /// so that this future is one type: a generic one, with an output of
    /// each caller's type, had a copy of the loop in every caller, 313 B
    /// more herdless code in the STM32 firmware (scripts/firmware-size.sh).
    ///
    /// A frame being written is finished first, so that what a recipe
    /// asked for is on the wire before its caller goes on. Opening or
    /// closing a connection is not: where the network has gone silent it
    /// takes up to the connect timeout, attempt after attempt, and what
    /// the recipes heard before it (a leader's doubt) must reach the
    /// caller first.
    ///
    /// The decisions are made by [`next_io`](Self::next_io), which never
    /// awaits; this only performs the I/O it asks for. A call dropped
    /// inside that I/O leaves the driver's state saying what is still to
    /// do, so the next call takes it up. Fails once the session is over,
    /// instead of waiting.
    ///
    /// One `async fn` for the whole loop, each await point once: a turn
    /// of it as an `async fn` of its own measured 107 B more herdless code
    /// in the STM32 firmware (scripts/firmware-size.sh), although the
    /// image as a whole did not shrink: LLVM inlined more of the HAL into
    /// the firmware's task.
    pub(crate) async fn drive(&mut self, mut until: Until<'_, Self>) -> Result<(), Error> {
        // The I/O to perform first: a connection to open or close, held
        // back until `until` was asked, or a write or a flush due.
        let mut io = None;
        // Whether the last turn left nothing to do but wait.
        let mut idle = false;
        loop {
            if idle {
                if let state @ (State::Closed | State::Expired | State::AuthFailed) =
                    self.session.state()
                {
                    return Err(Error::SessionOver(state));
                }
                // The wait's await points are the loop's own: as an
                // `async fn` of its own the wait measured 137 B more herdless
                // code in the STM32 firmware (scripts/firmware-size.sh).
                match self.wait_for() {
                    Wait::Nothing => {}
                    Wait::Timer(at) => {
                        Timer::at(at).await;
                        self.waited(None);
                    }
                    Wait::Read(wake) => {
                        let room = self.rx.get_mut(self.filled..).unwrap_or_default();
                        let read = unless_due(pin!(self.transport.read(room)), wake).await;
                        self.waited(read.map(|r| r.map_err(|e| e.kind())));
                    }
                }
            }
            loop {
                if let Some(io) = io.take() {
                    let outcome = self.perform(io).await;
                    self.io_done(outcome);
                }
                match self.next_io() {
                    None => {
                        idle = true;
                        break;
                    }
                    Some(next @ (Io::Write | Io::Flush)) => io = Some(next),
                    Some(next) => {
                        io = Some(next);
                        idle = false;
                        break;
                    }
                }
            }
            let done = match &mut until {
                Until::Connected => matches!(self.session.state(), State::Connected { .. }),
                Until::Closed => matches!(self.session.state(), State::Closed),
                Until::Settled => idle,
                Until::Done(done) => done(self),
            };
            if done {
                return Ok(());
            }
        }
    }

    /// The I/O due next, after doing every step that needs none; `None`
    /// once nothing is left to do but wait.
    fn next_io(&mut self) -> Option<Io> {
        loop {
            if self.closing {
                return Some(Io::Disconnect);
            }
            if let Some((server, conn)) = self.opening {
                // Unless the session has given up on that attempt meanwhile
                // (its connect timeout), in which case it asks anew.
                if self.session.connection() == conn {
                    return Some(Io::Connect(server, self.session.poll_timeout()));
                }
                self.opening = None;
            }
            // The session's news never waits behind a frame being written,
            // which a silent network may hold up for good.
            if self.session_step() {
                continue;
            }
            if self.conn.is_some() {
                if self.tx_sent < self.tx_len {
                    return Some(Io::Write);
                }
                if self.flush_due {
                    return Some(Io::Flush);
                }
            }
            if !self.transmit_step() {
                return None;
            }
        }
    }

    /// One of the session's events for the recipes, or else one of its
    /// connection actions; returns whether there was one.
    ///
    /// Events first: a lost connection is followed at once by attempts to
    /// open the next, and where connects hang (the network gone silent)
    /// each takes up to the connect timeout; a `Suspended` waiting behind
    /// them would reach a leader only when the session had expired, with
    /// the next leader already working.
    fn session_step(&mut self) -> bool {
        let now = self.now();
        if let Some(event) = self.session.poll_event() {
            if let Event::Session(event) = event {
                log_debug!("session: {:?}", event);
                for recipe in self.recipes.iter_mut() {
                    recipe.handle_session(now, event);
                }
            }
            // `Event::Lost` needs nothing: the recipes hear `Suspended`,
            // which voids their requests in flight.
            return true;
        }
        if let Some(action) = self.session.poll_action() {
            match action {
                Action::Connect { server, conn } => {
                    self.drop_connection();
                    log_debug!("connecting to server {:?} ({:?})", server, conn);
                    self.opening = Some((server, conn));
                }
                Action::Close { conn } => {
                    if self.conn == Some(conn) {
                        self.drop_connection();
                    }
                }
            }
            return true;
        }
        false
    }

    /// One of the session's own frames, or else one request of a recipe,
    /// into the send buffer (which holds no frame); returns whether there
    /// was one.
    fn transmit_step(&mut self) -> bool {
        let now = self.now();
        if let Some(conn) = self.conn {
            match self.session.poll_transmit(self.tx, now) {
                Ok(Some(n)) => {
                    self.start_write(n);
                    return true;
                }
                Ok(None) => {}
                Err(e) => {
                    // The buffer cannot hold the frame; dropping the
                    // connection at least lets the session try again
                    // rather than stall with the frame due.
                    self.lose(conn, Fault::Encode(e));
                    return true;
                }
            }
        }
        self.send_request(now)
    }

    /// Encodes the first request a recipe wants sent, if the session can
    /// take one; returns whether there was one.
    fn send_request(&mut self, now: Instant) -> bool {
        if self.conn.is_none() || !self.session.can_send() {
            return false;
        }
        for (index, recipe) in self.recipes.iter_mut().enumerate() {
            let Some(out) = recipe.poll_request() else {
                continue;
            };
            let id = out.id;
            let tag = (u8::try_from(index).unwrap_or(u8::MAX), id);
            match self.session.send_request(tag, &out.request, self.tx, now) {
                Ok(n) => self.start_write(n),
                Err(e) => {
                    let error = match e {
                        SendError::NotConnected | SendError::Busy => ZkError::ConnectionLoss,
                        _ => ZkError::MarshallingError,
                    };
                    recipe.handle_reply(now, id, Reply::Error(error));
                    self.fault(Fault::Send(e));
                }
            }
            return true;
        }
        false
    }

    /// Makes `tx[..n]` the frame to write next.
    fn start_write(&mut self, n: usize) {
        self.tx_sent = 0;
        self.tx_len = n.min(self.tx.len());
    }

    /// Carries out `io` on the transport: the driver's only await points
    /// besides the wait for input.
    ///
    /// A write or a flush gives way to the next timer: a transport that
    /// stops taking bytes (its peer gone silent, its buffer full) must not
    /// keep the session from noticing that nothing has been heard.
    async fn perform(&mut self, io: Io) -> Outcome {
        let wake = match io {
            Io::Disconnect => None,
            Io::Connect(_, deadline) => deadline,
            Io::Write | Io::Flush => self.next_wake(),
        }
        .map(|at| self.origin_plus(at));
        match io {
            Io::Disconnect => {
                self.transport.disconnect().await;
                Outcome::Disconnected
            }
            Io::Connect(server, _) => {
                let connected = unless_due(pin!(self.transport.connect(server)), wake).await;
                Outcome::Connected(connected.map(|r| r.map_err(|e| e.kind())))
            }
            Io::Write => {
                let rest = self.tx.get(self.tx_sent..self.tx_len).unwrap_or_default();
                match unless_due(pin!(self.transport.write(rest)), wake).await {
                    Some(wrote) => Outcome::Wrote(wrote.map_err(|e| e.kind())),
                    None => Outcome::Timer,
                }
            }
            Io::Flush => match unless_due(pin!(self.transport.flush()), wake).await {
                Some(flushed) => Outcome::Flushed(flushed.map_err(|e| e.kind())),
                None => Outcome::Timer,
            },
        }
    }

    /// Takes in what came of the I/O [`next_io`](Self::next_io) asked for.
    fn io_done(&mut self, outcome: Outcome) {
        let now = self.now();
        match outcome {
            Outcome::Timer => self.fire_timers(),
            Outcome::Disconnected => self.closing = false,
            Outcome::Connected(result) => {
                let Some((_, conn)) = self.opening.take() else {
                    return;
                };
                match result {
                    Some(Ok(())) => {
                        self.conn = Some(conn);
                        self.filled = 0;
                        self.large = None;
                        self.session.handle_connected(conn, now);
                    }
                    // Failed, or still not open when the session's timer
                    // came (its connect timeout, or its local expiry,
                    // which the session checks first): the attempt is over.
                    failed => {
                        if let Some(Err(kind)) = failed {
                            self.fault(Fault::Connect(kind));
                        }
                        self.session.handle_disconnected(conn, now);
                        self.closing = true;
                    }
                }
            }
            Outcome::Wrote(result) => {
                let Some(conn) = self.conn else {
                    return;
                };
                match result {
                    Ok(0) => {
                        self.lose(conn, Fault::Io(ErrorKind::WriteZero));
                    }
                    Ok(k) => {
                        self.tx_sent += k;
                        if self.tx_sent >= self.tx_len {
                            self.tx_sent = 0;
                            self.tx_len = 0;
                            self.flush_due = true;
                        }
                    }
                    Err(kind) => {
                        self.lose(conn, Fault::Io(kind));
                    }
                }
            }
            Outcome::Flushed(result) => {
                self.flush_due = false;
                if let (Err(kind), Some(conn)) = (result, self.conn) {
                    self.lose(conn, Fault::Io(kind));
                }
            }
        }
    }

    /// The connection is gone for `fault`: record it, tell the session and
    /// have the transport closed.
    pub(super) fn lose(&mut self, conn: ConnectionId, fault: Fault) {
        self.fault(fault);
        let now = self.now();
        self.session.handle_disconnected(conn, now);
        self.drop_connection();
    }

    /// Forgets the open connection, if any, and has the transport closed
    /// before any other I/O.
    pub(super) fn drop_connection(&mut self) {
        // A frame half-written to the old connection must not continue on
        // the next one.
        self.tx_sent = 0;
        self.tx_len = 0;
        self.flush_due = false;
        if self.conn.take().is_some() {
            self.closing = true;
        }
        self.filled = 0;
        self.large = None;
    }

    /// Calls the session's and the recipes' timers that are due.
    pub(crate) fn fire_timers(&mut self) {
        let now = self.now();
        self.fired_at = now;
        if self.session.poll_timeout().is_some_and(|at| at <= now) {
            self.session.handle_timeout(now);
        }
        for recipe in self.recipes.iter_mut() {
            if recipe.poll_timeout().is_some_and(|at| at <= now) {
                recipe.handle_timeout(now);
            }
        }
    }

    /// The earliest timer, but never again the millisecond timers were
    /// last fired in: a recipe whose timer stays due after firing (a user's
    /// recipe breaking the contract) would otherwise have the driver loop
    /// without ever yielding, and the executor's network stack, which
    /// brings the bytes the driver waits for, would never run.
    pub(super) fn next_wake(&self) -> Option<Instant> {
        // A loop rather than an iterator chain ending in `min`, which
        // measured 108 B more herdless code in the STM32 firmware
        // (scripts/firmware-size.sh).
        let mut next = self.session.poll_timeout();
        for recipe in self.recipes.iter() {
            next = Instant::earliest(next, recipe.poll_timeout());
        }
        next.map(|at| at.max(self.fired_at + 1))
    }

    pub(super) fn origin_plus(&self, at: Instant) -> embassy_time::Instant {
        self.origin + Duration::from_millis(at.as_millis())
    }

    pub(super) fn fault(&mut self, fault: Fault) {
        log_warn!("connection fault: {:?}", fault);
        self.faults = self.faults.saturating_add(1);
        self.last_fault = Some(fault);
    }
}
