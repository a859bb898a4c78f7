//! The ZooKeeper session as a sans-IO state machine.
//!
//! A [`Session`] never touches a socket or a clock. The driver tells it
//! what happened:
//!
//! * [`handle_connected`](Session::handle_connected) /
//!   [`handle_disconnected`](Session::handle_disconnected): a connection it
//!   asked for opened, failed or closed;
//! * [`handle_frame`](Session::handle_frame): a frame arrived (split from
//!   the receive buffer with [`frame::split`](crate::wire::frame::split));
//! * [`handle_timeout`](Session::handle_timeout): the time
//!   [`poll_timeout`](Session::poll_timeout) asked for has come;
//! * [`send`](Session::send), [`close`](Session::close),
//!   [`add_auth`](Session::add_auth): the application's wishes.
//!
//! and drains, after each of those, in this order:
//!
//! 1. [`poll_action`](Session::poll_action): connections to open or close;
//! 2. [`poll_transmit`](Session::poll_transmit): the session's own frames
//!    (connect request, auth, setWatches, ping, closeSession) to write;
//! 3. [`poll_event`](Session::poll_event): session events for the recipes,
//!    and requests whose connection was lost;
//! 4. [`poll_timeout`](Session::poll_timeout): when to call
//!    [`handle_timeout`](Session::handle_timeout) next.
//!
//! What the session does for the driver:
//!
//! * the handshake, with the read-only byte, and its refusal: a session the
//!   server calls expired (timeout or id 0) is reported as
//!   [`SessionEvent::Expired`];
//! * after a lost connection, the next server (in the order
//!   [`SessionConfig::server_seed`] sets), resuming with
//!   the session id and password; once every server failed in a row, a
//!   pause of [`SessionConfig::retry_delay_ms`] before the next round;
//! * expiry presumed locally when no server could be reached, a
//!   twentieth of the session timeout before the server can have expired
//!   the session (counted as below);
//! * xids allocated and replies matched to requests in FIFO order: each
//!   reply comes back with the caller's tag (a recipe index and its
//!   [`RequestId`](crate::RequestId), say) and is decoded by the kind of
//!   request it answers, which ZooKeeper replies do not carry;
//! * a ping after a third of the negotiated timeout without sending, at
//!   most one in flight, and the connection declared dead two thirds of it
//!   after the server last proved it had heard from us;
//! * the credentials of [`add_auth`](Session::add_auth) sent again on every
//!   new connection, and the watches set so far re-armed with setWatches
//!   (relative to the last zxid seen) after a resume;
//! * a clean close: closeSession, its reply, then
//!   [`SessionEvent::Closed`].
//!
//! What proves that the server heard from us, and so restarted its expiry
//! clock, is an answer: a reply (to a request or a ping) proves that its
//! request reached the server, which it cannot have done before it was
//! sent. A notification proves nothing of the kind (the
//! server sends it whatever it last heard from us), and neither does the
//! time an answer arrives (a reply held up behind a slow write arrives
//! long after the request reset the server's clock). The read timeout and
//! the local expiry therefore count from the moment the latest answered
//! request was *sent*: on a link that loses only what the client sends,
//! notifications would otherwise keep a session the server has expired
//! looking alive, and a lock holder working beside the next one.
//!
//! Every table is fixed-size: `PENDING` requests awaiting replies,
//! `WATCHES` watches whose paths take `WATCH_BYTES` bytes together; running
//! out is a typed [`SendError`].

mod auth;
mod config;
mod error;
mod output;
mod server_order;
#[cfg(test)]
mod tests;
mod watches;

pub use auth::{MAX_AUTHS, MAX_AUTH_CREDENTIAL, MAX_AUTH_SCHEME};
pub use config::SessionConfig;
pub use error::{AuthError, SendError, SessionError};
pub use output::{Action, ConnectionId, Event, Incoming, LargeFrame, State};

use crate::Request;
use heapless::{Deque, Vec};

use self::auth::AuthList;
use self::server_order::ServerOrder;
use self::watches::WatchTable;
use super::jute::DEFAULT_MAX_FRAME;
use super::op::{request_expect, request_watch, Op, WatchClass};
use super::opcode::xid;
use super::records::{ConnectRequest, NEW_SESSION_PASSWORD};
use super::response::Expect;
use super::{decode, encode, EncodeError};
use crate::{Instant, SessionEvent, ZkError};

/// Longest session password kept (servers send 16 bytes).
pub const MAX_PASSWORD: usize = 64;

/// How many requests a [`Session`] holds awaiting replies unless told
/// otherwise (its `PENDING`).
pub const DEFAULT_PENDING: usize = 16;

/// How many watches a [`Session`] keeps for re-arming unless told
/// otherwise (its `WATCHES`).
pub const DEFAULT_WATCHES: usize = 16;

/// The bytes of watched paths a [`Session`] keeps for re-arming unless
/// told otherwise (its `WATCH_BYTES`).
pub const DEFAULT_WATCH_BYTES: usize = 1024;

/// Session events kept until drained; the oldest goes first when full.
const EVENTS: usize = 8;

/// A request awaiting its reply.
#[derive(Clone, Copy, Debug)]
struct Pending<T> {
    xid: i32,
    expect: Expect,
    tag: T,
    watch: bool,
    /// When it was sent, as the low 32 bits of its milliseconds: four
    /// bytes, not eight, in each of the `PENDING` entries, read back
    /// relative to the time its reply comes (49 days of range).
    sent: u32,
}

/// `now`'s milliseconds as a [`Pending::sent`] stamp.
fn stamp(now: Instant) -> u32 {
    // Truncation is the point: `sent_at` reads it back modulo 2^32.
    now.as_millis() as u32
}

/// When a request stamped `sent` was sent, read at `now`.
fn sent_at(sent: u32, now: Instant) -> Instant {
    let ago = stamp(now).wrapping_sub(sent);
    Instant::from_millis(now.as_millis().saturating_sub(u64::from(ago)))
}

/// Where the session is with its connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// No connection; the next attempt starts at `at`.
    Idle { at: Instant },
    /// The driver is opening the connection.
    Opening { since: Instant },
    /// Open; the connect request is due or awaits its answer.
    Handshake { since: Instant },
    /// The session is usable on this connection.
    Established,
    /// closeSession is due or sent; the session ends at `until` at the
    /// latest.
    Closing { until: Instant },
    /// Nothing more will happen.
    Over(State),
}

/// A ZooKeeper session over a list of servers, as a state machine.
///
/// `T` is the caller's tag for a request (copied back with its reply);
/// `PENDING` bounds the requests awaiting replies; `WATCHES` and
/// `WATCH_BYTES` the watches kept for re-arming: how many, and the bytes
/// of all their paths together (one pool, so a few long paths or many
/// short ones fit; the default holds sixteen paths of 64 bytes).
///
/// With `WATCHES` = 0 the session keeps no watches: it sets them on the
/// server as ever but sends no setWatches after a reconnect, so a resumed
/// session holds none of the watches it had (as a Java client with
/// `zookeeper.disableAutoWatchReset`), [`watches`](Self::watches) is
/// empty, and the table's code and RAM are left out. Every recipe of
/// herdless reads again what it watches when its session resumes, so a
/// device that runs only recipes loses nothing by it; code of your own
/// that sets watches must then do the same.
#[derive(Debug)]
pub struct Session<
    T,
    const PENDING: usize = DEFAULT_PENDING,
    const WATCHES: usize = DEFAULT_WATCHES,
    const WATCH_BYTES: usize = DEFAULT_WATCH_BYTES,
> {
    config: SessionConfig,
    phase: Phase,
    conn: ConnectionId,
    order: ServerOrder,
    server: usize,
    attempts: usize,
    session_id: i64,
    password: Vec<u8, MAX_PASSWORD>,
    negotiated_ms: u32,
    read_only: bool,
    last_zxid: i64,
    next_xid: i32,
    pending: Deque<Pending<T>, PENDING>,
    lost: Deque<T, PENDING>,
    lost_pushed: u32,
    lost_popped: u32,
    /// Each event with the value of `lost_pushed` when it happened, so lost
    /// requests and events come out in the order they happened.
    events: Deque<(SessionEvent, u32), EVENTS>,
    actions: Deque<Action, 4>,
    watches: WatchTable<WATCHES, WATCH_BYTES>,
    /// The decoder of `create2`'s and `multi`'s answers, once
    /// [`send`](Self::send) was called, the only way such a request is
    /// sent: see [`decode::response_with`].
    extended: Option<decode::Extended>,
    auths: AuthList,
    connect_due: bool,
    next_auth: usize,
    ping_due: bool,
    ping_in_flight: bool,
    close_due: bool,
    close_xid: Option<i32>,
    last_send: Instant,
    /// When the latest request the server answered was sent: the server
    /// had heard from us by then, and cannot expire the session before a
    /// timeout after it.
    acked: Instant,
    /// When the ping in flight was sent.
    ping_sent: Instant,
}

impl<T: Copy, const PENDING: usize, const WATCHES: usize, const WATCH_BYTES: usize>
    Session<T, PENDING, WATCHES, WATCH_BYTES>
{
    /// A new session; its first connection attempt (to server 0, or the
    /// one [`SessionConfig::server_seed`] draws) is already in
    /// [`poll_action`](Self::poll_action).
    pub fn new(config: SessionConfig, now: Instant) -> Self {
        // No servers at all is taken as one, so that the order has a
        // server to name.
        let servers = config.servers.max(1);
        let (order, first) = ServerOrder::new(servers, config.server_seed);
        let mut session = Session {
            config: SessionConfig { servers, ..config },
            phase: Phase::Idle { at: now },
            conn: ConnectionId(0),
            order,
            // So that the first attempt goes to `first`.
            server: order.before(first, servers),
            attempts: 0,
            session_id: 0,
            password: Vec::new(),
            negotiated_ms: 0,
            read_only: false,
            last_zxid: 0,
            next_xid: 1,
            pending: Deque::new(),
            lost: Deque::new(),
            lost_pushed: 0,
            lost_popped: 0,
            events: Deque::new(),
            actions: Deque::new(),
            watches: WatchTable::new(),
            extended: None,
            auths: AuthList::new(),
            connect_due: false,
            next_auth: 0,
            ping_due: false,
            ping_in_flight: false,
            close_due: false,
            close_xid: None,
            last_send: now,
            acked: now,
            ping_sent: now,
        };
        session.begin_attempt(now);
        session
    }

    // ---- what the driver is told ----

    /// The next connection to open or close.
    pub fn poll_action(&mut self) -> Option<Action> {
        self.actions.pop_front()
    }

    /// The next frame of the session's own to write on the current
    /// connection, encoded into `buf`; its length, or `None` when there is
    /// none. On [`EncodeError::BufferTooSmall`] nothing changed: call again
    /// with a larger buffer.
    pub fn poll_transmit(
        &mut self,
        buf: &mut [u8],
        now: Instant,
    ) -> Result<Option<usize>, EncodeError> {
        let n = match self.phase {
            Phase::Handshake { .. } if self.connect_due => {
                let password: &[u8] = if self.session_id == 0 {
                    &NEW_SESSION_PASSWORD
                } else {
                    &self.password
                };
                let req = ConnectRequest {
                    last_zxid_seen: self.last_zxid,
                    timeout_ms: i32::try_from(self.config.timeout_ms).unwrap_or(i32::MAX),
                    session_id: self.session_id,
                    password,
                    read_only: self.config.read_only,
                };
                let n = encode::connect(&req, buf)?;
                self.connect_due = false;
                n
            }
            Phase::Established | Phase::Closing { .. } => {
                if let Some(c) = self.auths.get(self.next_auth) {
                    let n = encode::auth(&c.scheme, &c.credential, buf)?;
                    self.next_auth += 1;
                    n
                } else if self.watches.needs_rearm() {
                    let room = buf.len().min(DEFAULT_MAX_FRAME + 4);
                    let count = self.watches.rearm_batch(room)?;
                    let n =
                        encode::set_watches_from(self.last_zxid, &self.watches.batch(count), buf)?;
                    self.watches.rearmed(count);
                    n
                } else if self.ping_due && !self.ping_in_flight {
                    let n = encode::ping(buf)?;
                    self.ping_due = false;
                    self.ping_in_flight = true;
                    self.ping_sent = now;
                    n
                } else if self.close_due {
                    let n = encode::close_session(self.next_xid, buf)?;
                    self.close_xid = Some(self.take_xid());
                    self.close_due = false;
                    n
                } else {
                    return Ok(None);
                }
            }
            _ => return Ok(None),
        };
        self.last_send = now;
        Ok(Some(n))
    }

    /// The next session event or lost request, in the order they happened.
    pub fn poll_event(&mut self) -> Option<Event<T>> {
        let lost_first = match self.events.front() {
            Some((_, after)) => *after != self.lost_popped,
            None => true,
        };
        if lost_first {
            if let Some(tag) = self.lost.pop_front() {
                self.lost_popped = self.lost_popped.wrapping_add(1);
                return Some(Event::Lost(tag));
            }
        }
        self.events.pop_front().map(|(e, _)| Event::Session(e))
    }

    /// When to call [`handle_timeout`](Self::handle_timeout) next.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let local_expiry = self.local_expiry();
        let at = match self.phase {
            Phase::Idle { at } => at,
            Phase::Opening { since } | Phase::Handshake { since } => self.attempt_ends(since),
            Phase::Established => {
                let dead = self.dead_at();
                if self.ping_due || self.ping_in_flight {
                    dead
                } else {
                    dead.min(self.ping_at())
                }
            }
            Phase::Closing { until } => until,
            Phase::Over(_) => return None,
        };
        Some(match local_expiry {
            Some(expiry) if !matches!(self.phase, Phase::Established | Phase::Closing { .. }) => {
                at.min(expiry)
            }
            _ => at,
        })
    }

    // ---- what the driver tells ----

    /// The connection `conn` is open: the connect request is now due.
    pub fn handle_connected(&mut self, conn: ConnectionId, now: Instant) {
        if conn != self.conn {
            return;
        }
        if let Phase::Opening { .. } = self.phase {
            self.phase = Phase::Handshake { since: now };
            self.connect_due = true;
        }
    }

    /// The connection `conn` failed to open, or closed (EOF, reset, a
    /// frame [`frame::split`](crate::wire::frame::split) refused, a write
    /// error). Reports about connections the session already gave up on are
    /// ignored.
    pub fn handle_disconnected(&mut self, conn: ConnectionId, now: Instant) {
        if conn == self.conn {
            self.connection_gone(now);
        }
    }

    /// The current connection is gone (closed, or dropped by the session):
    /// the phase it served moves on. In `Idle` and `Over` it already has:
    /// what arrives from it then is left over from before.
    fn connection_gone(&mut self, now: Instant) {
        match self.phase {
            Phase::Opening { .. } | Phase::Handshake { .. } => {
                if !self.expire_if_unreachable(now) {
                    self.begin_attempt(now);
                }
            }
            Phase::Established => self.lose_connection(now),
            // The server closes after answering closeSession; EOF counts as
            // the answer.
            Phase::Closing { .. } => self.finish_close(false),
            Phase::Idle { .. } | Phase::Over(_) => {}
        }
    }

    /// A frame arrived on `conn` (its payload, without the length prefix).
    ///
    /// A reply comes back with the tag of its request, a notification as a
    /// watch event; both borrow `payload`. On `Err` the session has dropped
    /// the connection (see [`poll_action`](Self::poll_action)).
    pub fn handle_frame<'a>(
        &mut self,
        conn: ConnectionId,
        payload: &'a [u8],
        now: Instant,
    ) -> Result<Incoming<'a, T>, SessionError> {
        if conn != self.conn {
            return Ok(Incoming::Nothing);
        }
        let incoming = match self.phase {
            Phase::Handshake { since } => self.handshake(payload, since, now),
            Phase::Established | Phase::Closing { .. } => self.reply(payload, now),
            _ => Ok(Incoming::Nothing),
        };
        match incoming {
            Err(e) => self.fail(now, e),
            incoming => incoming,
        }
    }

    /// The time is `now`: pings, dead connections, connection attempts
    /// that take too long, local expiry, retries.
    pub fn handle_timeout(&mut self, now: Instant) {
        match self.phase {
            Phase::Idle { at } => {
                if !self.expire_if_unreachable(now) && now >= at {
                    self.begin_attempt(now);
                }
            }
            Phase::Opening { since } | Phase::Handshake { since } => {
                if !self.expire_if_unreachable(now) && now >= self.attempt_ends(since) {
                    self.push_action(Action::Close { conn: self.conn });
                    self.begin_attempt(now);
                }
            }
            Phase::Established => {
                if now >= self.dead_at() {
                    self.push_action(Action::Close { conn: self.conn });
                    self.lose_connection(now);
                } else if !self.ping_in_flight && now >= self.ping_at() {
                    self.ping_due = true;
                }
            }
            Phase::Closing { until } => {
                if now >= until {
                    self.finish_close(true);
                }
            }
            Phase::Over(_) => {}
        }
    }

    /// Encodes `op` into `buf` with a fresh xid and records it, with `tag`,
    /// as awaiting a reply; returns the frame's length. On `Err` nothing was
    /// recorded (and the buffer's contents are not a frame).
    pub fn send(
        &mut self,
        tag: T,
        op: &Op<'_>,
        buf: &mut [u8],
        now: Instant,
    ) -> Result<usize, SendError> {
        let encode = |xid, buf: &mut [u8]| encode::request(xid, op, buf);
        // Whether or not this op needs it: decoding never asks for it
        // unless such an answer is expected.
        self.extended = Some(decode::extended);
        self.record(tag, op.expect(), op.watch(), buf, now, encode)
    }

    /// [`send`](Self::send) for a recipe's request (`Op::Request`). A
    /// driver that sends nothing else calls this one, so that what only
    /// `create2` and `multi` need stays out of its program (some 400 bytes
    /// of a microcontroller's flash).
    pub fn send_request(
        &mut self,
        tag: T,
        request: &Request<'_>,
        buf: &mut [u8],
        now: Instant,
    ) -> Result<usize, SendError> {
        let (expect, watch) = (request_expect(request), request_watch(request));
        let encode = |xid, buf: &mut [u8]| encode::request_frame(xid, request, buf);
        self.record(tag, expect, watch, buf, now, encode)
    }

    /// Encodes a request with `encode` under a fresh xid and records it as
    /// awaiting a reply of kind `expect`; `watch` is the watch it leaves.
    fn record(
        &mut self,
        tag: T,
        expect: Expect,
        watch: Option<(WatchClass, &str)>,
        buf: &mut [u8],
        now: Instant,
        encode: impl FnOnce(i32, &mut [u8]) -> Result<usize, EncodeError>,
    ) -> Result<usize, SendError> {
        if self.phase != Phase::Established || self.close_due {
            return Err(SendError::NotConnected);
        }
        if self.has_own_frames() {
            return Err(SendError::Busy);
        }
        if self.pending.len() + self.lost.len() >= PENDING {
            return Err(SendError::TooManyPending);
        }
        let xid = self.next_xid;
        if let Some((class, path)) = watch {
            // Only an `exists` expects that reply, and its watch becomes a
            // creation watch when the node is missing.
            let exists = matches!(expect, Expect::Exists);
            self.watches.reserve(class, path, xid, exists)?;
        }
        let recorded = encode(xid, buf).map_err(SendError::Encode).and_then(|n| {
            let entry = Pending {
                xid,
                expect,
                tag,
                watch: watch.is_some(),
                sent: stamp(now),
            };
            self.pending
                .push_back(entry)
                .map(|()| n)
                .map_err(|_| SendError::TooManyPending)
        });
        match recorded {
            Ok(n) => {
                self.take_xid();
                self.last_send = now;
                // Any frame keeps the session alive.
                self.ping_due = false;
                Ok(n)
            }
            Err(e) => {
                self.watches.unreserve(xid);
                Err(e)
            }
        }
    }

    /// Ends the session: closeSession on an established connection (its
    /// reply, or the connection's end, then gives [`SessionEvent::Closed`]),
    /// at once otherwise (the server then expires the session after its
    /// timeout).
    pub fn close(&mut self, now: Instant) {
        match self.phase {
            Phase::Established => {
                self.phase = Phase::Closing {
                    until: now.plus_millis(self.read_timeout()),
                };
                self.close_due = true;
            }
            Phase::Opening { .. } | Phase::Handshake { .. } => self.finish_close(true),
            Phase::Idle { .. } => self.finish_close(false),
            Phase::Closing { .. } | Phase::Over(_) => {}
        }
    }

    /// Adds credentials (for example `digest`, `user:password`), sent at
    /// once if connected and again on every new connection.
    pub fn add_auth(&mut self, scheme: &str, credential: &[u8]) -> Result<(), AuthError> {
        self.auths.add(scheme, credential)
    }

    // ---- what the driver can ask ----

    /// Where the session stands.
    pub fn state(&self) -> State {
        match self.phase {
            Phase::Idle { .. } | Phase::Opening { .. } | Phase::Handshake { .. } => {
                State::Connecting
            }
            Phase::Established => State::Connected {
                read_only: self.read_only,
            },
            Phase::Closing { .. } => State::Closing,
            Phase::Over(state) => state,
        }
    }

    /// Whether [`send`](Self::send) would take a request now (connected,
    /// the session's own frames written, room in the pending table). Poll
    /// a recipe for a request only then: a request taken from it that the
    /// session then refuses is lost.
    pub fn can_send(&self) -> bool {
        self.phase == Phase::Established
            && !self.close_due
            && !self.has_own_frames()
            && self.pending.len() + self.lost.len() < PENDING
    }

    /// The current session id (0 before the first handshake).
    pub const fn session_id(&self) -> i64 {
        self.session_id
    }

    /// The negotiated session timeout in milliseconds (0 before the first
    /// handshake).
    pub const fn negotiated_timeout_ms(&self) -> u32 {
        self.negotiated_ms
    }

    /// The highest zxid seen in replies.
    pub const fn last_zxid(&self) -> i64 {
        self.last_zxid
    }

    /// The server of the current or last connection attempt.
    pub const fn server(&self) -> usize {
        self.server
    }

    /// The current connection attempt.
    pub const fn connection(&self) -> ConnectionId {
        self.conn
    }

    /// Requests awaiting a reply.
    pub fn pending(&self) -> usize {
        self.pending.len()
    }

    /// Whether a ping awaits its reply.
    pub const fn ping_in_flight(&self) -> bool {
        self.ping_in_flight
    }

    /// The watches the server holds for this session, as far as the
    /// session knows (set by a reply, not yet fired).
    pub fn watches(&self) -> impl Iterator<Item = (WatchClass, &str)> {
        self.watches.armed()
    }

    /// The frame limit to pass to [`frame::split`](crate::wire::frame::split).
    pub const fn max_frame(&self) -> usize {
        self.config.max_frame
    }

    /// The frame limit for a frame the driver reads through its buffer
    /// rather than holds whole (see
    /// [`handle_large_frame`](Self::handle_large_frame)): once the session
    /// is established, any length a frame can announce, since a listing
    /// (handed over name by name) may be longer than `max_frame` and costs
    /// no memory; before, `max_frame`, as nothing that large can answer a
    /// handshake.
    pub const fn max_large_frame(&self) -> usize {
        match self.phase {
            Phase::Established | Phase::Closing { .. } => i32::MAX as usize,
            _ => self.config.max_frame,
        }
    }

    // ---- inside ----

    fn timeout_ms(&self) -> u64 {
        u64::from(if self.negotiated_ms > 0 {
            self.negotiated_ms
        } else {
            self.config.timeout_ms
        })
    }

    fn ping_interval(&self) -> u64 {
        (self.timeout_ms() / 3).max(1)
    }

    fn read_timeout(&self) -> u64 {
        (self.timeout_ms() * 2 / 3).max(1)
    }

    fn connect_timeout(&self) -> u64 {
        (self.timeout_ms() / (self.config.servers as u64).max(1)).max(1)
    }

    // The three deadlines below, each asked by both `poll_timeout` and
    // `handle_timeout`: computed in place in both, they measured 50 B more
    // herdless code in the STM32 firmware (scripts/firmware-size.sh).

    /// When an attempt begun `since` gives up.
    fn attempt_ends(&self, since: Instant) -> Instant {
        since.plus_millis(self.connect_timeout())
    }

    /// When the connection counts as dead if nothing is answered.
    fn dead_at(&self) -> Instant {
        self.acked.plus_millis(self.read_timeout())
    }

    /// When a ping is due if nothing else is sent.
    fn ping_at(&self) -> Instant {
        self.last_send.plus_millis(self.ping_interval())
    }

    /// When the session is presumed lost if no server answers before then:
    /// a twentieth of the timeout before the server can expire it (it had
    /// heard from us at `acked` at the latest), which leaves room for the
    /// two clocks' rates and for the driver to stop a holder's work.
    fn local_expiry(&self) -> Option<Instant> {
        let timeout = self.timeout_ms();
        (self.session_id != 0).then(|| self.acked.plus_millis(timeout - timeout / 20))
    }

    /// The server answered a request sent at `sent`.
    fn answered(&mut self, sent: Instant) {
        self.acked = self.acked.max(sent);
    }

    /// The request awaiting the first reply has its reply, arrived `now`.
    fn answer_front(&mut self, now: Instant) {
        if let Some(p) = self.pending.pop_front() {
            self.answered(sent_at(p.sent, now));
        }
    }

    fn has_own_frames(&self) -> bool {
        self.connect_due || self.next_auth < self.auths.len() || self.watches.needs_rearm()
    }

    fn take_xid(&mut self) -> i32 {
        let xid = self.next_xid;
        // Ordinary xids are positive: wrap to 1, as the Java client.
        self.next_xid = xid.checked_add(1).unwrap_or(1);
        xid
    }

    fn push_action(&mut self, action: Action) {
        if self.actions.is_full() {
            let _ = self.actions.pop_front();
        }
        let _ = self.actions.push_back(action);
    }

    fn push_event(&mut self, event: SessionEvent) {
        if self.events.is_full() {
            let _ = self.events.pop_front();
        }
        let _ = self.events.push_back((event, self.lost_pushed));
    }

    fn push_lost(&mut self, tag: T) {
        // Cannot be full: `send` keeps pending + lost within PENDING.
        if self.lost.push_back(tag).is_ok() {
            self.lost_pushed = self.lost_pushed.wrapping_add(1);
        }
    }

    /// Every request awaiting a reply is lost.
    fn lose_pending(&mut self) {
        while let Some(p) = self.pending.pop_front() {
            self.push_lost(p.tag);
        }
        self.watches.drop_pending();
        self.ping_due = false;
        self.ping_in_flight = false;
        self.close_xid = None;
    }

    /// Opens the next connection, or pauses once every server failed in a
    /// row.
    fn begin_attempt(&mut self, now: Instant) {
        if self.attempts >= self.config.servers {
            self.attempts = 0;
            self.phase = Phase::Idle {
                at: now.plus_millis(u64::from(self.config.retry_delay_ms)),
            };
            return;
        }
        self.attempts += 1;
        self.server = self.order.after(self.server, self.config.servers);
        self.conn = ConnectionId(self.conn.0.wrapping_add(1));
        self.connect_due = false;
        self.phase = Phase::Opening { since: now };
        self.push_action(Action::Connect {
            server: self.server,
            conn: self.conn,
        });
    }

    /// The established connection is gone; the session may live on.
    fn lose_connection(&mut self, now: Instant) {
        self.lose_pending();
        self.push_event(SessionEvent::Suspended);
        self.attempts = 0;
        self.begin_attempt(now);
    }

    /// Expires the session if it cannot have survived: no server heard
    /// from for a whole session timeout.
    fn expire_if_unreachable(&mut self, now: Instant) -> bool {
        match self.local_expiry() {
            Some(expiry) if now >= expiry => {
                self.expire(now);
                true
            }
            _ => false,
        }
    }

    /// The session is gone: everything tied to it goes, and a new one is
    /// opened if so configured.
    fn expire(&mut self, now: Instant) {
        if matches!(
            self.phase,
            Phase::Opening { .. } | Phase::Handshake { .. } | Phase::Established
        ) {
            self.push_action(Action::Close { conn: self.conn });
        }
        self.end_session(SessionEvent::Expired);
        self.session_id = 0;
        self.password.clear();
        // A new session starts as a new client would.
        self.last_zxid = 0;
        if self.config.renew_after_expiry {
            self.attempts = 0;
            self.begin_attempt(now);
        } else {
            self.phase = Phase::Over(State::Expired);
        }
    }

    fn finish_close(&mut self, close_connection: bool) {
        if close_connection {
            self.push_action(Action::Close { conn: self.conn });
        }
        self.end_session(SessionEvent::Closed);
        self.close_due = false;
        self.phase = Phase::Over(State::Closed);
    }

    /// The session is over (`how`): its requests are lost, its watches
    /// gone.
    fn end_session(&mut self, how: SessionEvent) {
        self.lose_pending();
        self.watches.clear();
        self.push_event(how);
    }

    /// A frame whose payload is longer than the driver's buffer began on
    /// `conn`: `head` is its first bytes (at least the 16-byte reply
    /// header). A reply is matched to its request as
    /// [`handle_frame`](Self::handle_frame) would, and the driver learns
    /// what to do with the rest of the frame, which it reads off the
    /// connection without holding it whole: a listing can be handed to the
    /// recipe in parts, any other reply is answered with an error, and the
    /// session and the connection carry on.
    ///
    /// On `Err` (a frame that is not a reply, or out of order) the session
    /// has dropped the connection.
    pub fn handle_large_frame(
        &mut self,
        conn: ConnectionId,
        head: &[u8],
        now: Instant,
    ) -> Result<LargeFrame<T>, SessionError> {
        if conn != self.conn {
            return Ok(LargeFrame::Stale);
        }
        let large = self.large_frame(head, now);
        match large {
            Err(e) => self.fail(now, e).map(|_| LargeFrame::Stale),
            large => large,
        }
    }

    /// [`handle_large_frame`](Self::handle_large_frame) on the current
    /// connection; on `Err`, the connection is still to be dropped.
    fn large_frame(&mut self, head: &[u8], now: Instant) -> Result<LargeFrame<T>, SessionError> {
        if !matches!(self.phase, Phase::Established | Phase::Closing { .. }) {
            return Err(SessionError::FrameTooLarge);
        }
        let header = match decode::reply_header(head) {
            Ok((header, _)) => header,
            Err(e) => return Err(SessionError::Decode(e)),
        };
        if header.xid < 0 {
            return Err(SessionError::FrameTooLarge);
        }
        self.see_zxid(header.zxid);
        match self.pending.front().copied() {
            Some(p) if p.xid == header.xid => {
                self.answer_front(now);
                let error = header.error();
                if p.watch {
                    self.watches.confirm(header.xid, error);
                }
                Ok(match (p.expect, error) {
                    (Expect::GetChildren, None) => LargeFrame::Listing { tag: p.tag },
                    _ => LargeFrame::TooLarge { tag: p.tag },
                })
            }
            front => {
                let expected = front.map(|p| p.xid).or(self.close_xid);
                Err(SessionError::XidOutOfOrder {
                    expected,
                    got: header.xid,
                })
            }
        }
    }

    /// Drops the current connection for `error` and moves on.
    fn fail<'a>(
        &mut self,
        now: Instant,
        error: SessionError,
    ) -> Result<Incoming<'a, T>, SessionError> {
        self.push_action(Action::Close { conn: self.conn });
        self.connection_gone(now);
        Err(error)
    }

    /// The answer to the connect request, sent on a connection opened at
    /// `since`.
    fn handshake<'a>(
        &mut self,
        payload: &[u8],
        since: Instant,
        now: Instant,
    ) -> Result<Incoming<'a, T>, SessionError> {
        let response = match decode::connect_response(payload) {
            Ok(r) => r,
            Err(e) => return Err(SessionError::Decode(e)),
        };
        if response.is_expired() {
            if self.session_id != 0 {
                self.expire(now);
            } else {
                // A new session refused: nothing to lose; try elsewhere.
                self.push_action(Action::Close { conn: self.conn });
                self.begin_attempt(now);
            }
            return Ok(Incoming::Nothing);
        }
        let Ok(password) = Vec::from_slice(response.password) else {
            return Err(SessionError::PasswordTooLong);
        };
        let resumed = self.session_id != 0 && response.session_id == self.session_id;
        if self.session_id != 0 && !resumed {
            // Another session than the one asked for: the old one is gone.
            if !self.config.renew_after_expiry {
                // None may follow it: the one handed out is left to expire.
                self.expire(now);
                return Ok(Incoming::Nothing);
            }
            self.end_session(SessionEvent::Expired);
        }
        self.session_id = response.session_id;
        self.password = password;
        self.negotiated_ms = u32::try_from(response.timeout_ms).unwrap_or(0);
        self.read_only = response.read_only == Some(true);
        self.phase = Phase::Established;
        self.attempts = 0;
        self.answered(since);
        self.next_auth = 0;
        self.ping_due = false;
        self.ping_in_flight = false;
        if resumed {
            self.watches.mark_rearm();
        }
        self.push_event(SessionEvent::Connected {
            session_id: self.session_id,
        });
        Ok(Incoming::Nothing)
    }

    fn reply<'a>(
        &mut self,
        payload: &'a [u8],
        now: Instant,
    ) -> Result<Incoming<'a, T>, SessionError> {
        let (header, body) = match decode::reply_header(payload) {
            Ok(h) => h,
            Err(e) => return Err(SessionError::Decode(e)),
        };
        match header.xid {
            xid::NOTIFICATION => {
                let notification = match decode::notification(body) {
                    Ok(n) => n,
                    Err(e) => return Err(SessionError::Decode(e)),
                };
                Ok(match notification.watch_event() {
                    Some(event) => {
                        self.watches.fire(&event);
                        Incoming::Watch(event)
                    }
                    None => Incoming::Nothing,
                })
            }
            xid::PING => {
                self.ping_in_flight = false;
                self.answered(self.ping_sent);
                Ok(Incoming::Nothing)
            }
            xid::AUTH => {
                if header.err == ZkError::AuthFailed.code() {
                    // Over as after a close, but for this reason; the
                    // connection is dropped with the error.
                    self.finish_close(false);
                    self.phase = Phase::Over(State::AuthFailed);
                    return Err(SessionError::AuthFailed);
                }
                Ok(Incoming::Nothing)
            }
            xid::SET_WATCHES => {
                self.see_zxid(header.zxid);
                match header.error() {
                    // Try again on a new connection (which re-arms every
                    // watch) rather than leave recipes waiting on watches
                    // the server may not hold.
                    Some(e) => Err(SessionError::SetWatchesFailed(e)),
                    None => Ok(Incoming::Nothing),
                }
            }
            got => {
                self.see_zxid(header.zxid);
                match self.pending.front().copied() {
                    Some(p) if p.xid == got => {
                        self.answer_front(now);
                        match decode::response_with(p.expect, header.err, body, self.extended) {
                            Ok(response) => {
                                if p.watch {
                                    self.watches.confirm(got, response.error());
                                }
                                Ok(Incoming::Reply {
                                    tag: p.tag,
                                    response,
                                })
                            }
                            Err(e) => {
                                self.push_lost(p.tag);
                                Err(SessionError::Decode(e))
                            }
                        }
                    }
                    None if self.close_xid == Some(got) => {
                        self.finish_close(true);
                        Ok(Incoming::Nothing)
                    }
                    front => {
                        let expected = front.map(|p| p.xid).or(self.close_xid);
                        Err(SessionError::XidOutOfOrder { expected, got })
                    }
                }
            }
        }
    }

    fn see_zxid(&mut self, zxid: i64) {
        if zxid > self.last_zxid {
            self.last_zxid = zxid;
        }
    }
}
