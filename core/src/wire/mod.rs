//! ZooKeeper's client wire protocol, sans-IO and without allocation: the
//! jute codec and the session state machine an embedded transport needs.
//!
//! * [`encode`]: requests (everything recipes emit, plus `create2` and
//!   `multi`), the connect request, ping, closeSession, auth and
//!   setWatches, each written as one frame into a caller's buffer; a
//!   buffer too small is reported with the size needed and left untouched.
//! * [`frame`]: splitting length-prefixed frames out of a receive buffer,
//!   refusing oversize lengths before waiting for them.
//! * [`decode`]: the connect response, reply headers, notifications and
//!   reply bodies, borrowed from the frame: strings, data and child names
//!   point into the receive buffer, and a child list is a
//!   [`Children`](crate::Children) iterator that decodes one name per step.
//!   Malformed, truncated or oversize input is a typed error, never a panic
//!   or a read out of bounds.
//! * [`Session`]: handshake, resume over a list of servers, FIFO matching
//!   of replies to tagged requests, pings, expiry (told by the server or
//!   found locally), watches re-armed after a reconnect, credentials
//!   re-sent, clean close.
//!
//! The protocol facts (framing, jute, opcodes, reserved xids, handshake,
//! error codes, multi, setWatches) follow ZooKeeper 3.8.
//!
//! ## A driver loop
//!
//! One session, several recipes multiplexed on it; the tag of a request is
//! the recipe's index and its [`RequestId`](crate::RequestId).
//!
//! ```no_run
//! use herdless_core::wire::{frame, Action, Event, Incoming, Session, SessionConfig};
//! use herdless_core::{Instant, Recipe, RequestId};
//!
//! # fn now() -> Instant { Instant::from_millis(0) }
//! # fn open(_server: usize) {}
//! # fn close() {}
//! # fn write(_bytes: &[u8]) {}
//! # fn read_into(_buf: &mut [u8]) -> usize { 0 }
//! fn run<R: Recipe>(recipes: &mut [R]) {
//!     let mut session: Session<(usize, RequestId)> =
//!         Session::new(SessionConfig::new(3, 10_000), now());
//!     let (mut tx, mut rx, mut filled) = ([0u8; 1024], [0u8; 4096], 0);
//!     let mut conn = None;
//!     loop {
//!         while let Some(action) = session.poll_action() {
//!             match action {
//!                 Action::Connect { server, conn: c } => {
//!                     open(server); // then, once open (or on failure):
//!                     session.handle_connected(c, now());
//!                     conn = Some(c);
//!                 }
//!                 Action::Close { .. } => close(),
//!                 _ => {}
//!             }
//!         }
//!         while let Ok(Some(n)) = session.poll_transmit(&mut tx, now()) {
//!             write(&tx[..n]);
//!         }
//!         while let Some(event) = session.poll_event() {
//!             if let Event::Session(e) = event {
//!                 recipes.iter_mut().for_each(|r| r.handle_session(now(), e));
//!             }
//!         }
//!         for (i, recipe) in recipes.iter_mut().enumerate() {
//!             while session.can_send() {
//!                 let Some(out) = recipe.poll_request() else { break };
//!                 if let Ok(n) = session.send_request((i, out.id), &out.request, &mut tx, now()) {
//!                     write(&tx[..n]);
//!                 }
//!             }
//!         }
//!         // Wait for bytes or for session.poll_timeout(), then:
//!         filled += read_into(&mut rx[filled..]);
//!         let mut start = 0;
//!         while let Ok(Some(f)) = frame::split(&rx[start..filled], session.max_frame()) {
//!             match session.handle_frame(conn.unwrap(), f.payload, now()) {
//!                 Ok(Incoming::Reply { tag: (i, id), response }) => {
//!                     if let Some(reply) = response.into_reply() {
//!                         recipes[i].handle_reply(now(), id, reply);
//!                     }
//!                 }
//!                 Ok(Incoming::Watch(w)) => recipes.iter_mut().for_each(|r| r.handle_watch(now(), w)),
//!                 _ => {}
//!             }
//!             start += f.consumed;
//!         }
//!         rx.copy_within(start..filled, 0);
//!         filled -= start;
//!         session.handle_timeout(now());
//!     }
//! }
//! ```
//!
//! ## Fuzzing
//!
//! `fuzz/` (outside the workspace) holds two `cargo fuzz` targets:
//! `decode_frame` feeds arbitrary bytes to the frame splitter and every
//! decoder, `session_bytes` drives a session through a handshake and then
//! feeds it arbitrary frames and timer ticks. From the repository root:
//!
//! ```text
//! cargo +nightly fuzz run decode_frame --fuzz-dir fuzz -- -max_total_time=300
//! cargo +nightly fuzz run session_bytes --fuzz-dir fuzz -- -max_total_time=300
//! ```
#![deny(clippy::indexing_slicing)]

pub mod decode;
pub mod encode;
mod error;
pub mod frame;
mod jute;
pub mod listing;
mod op;
pub mod opcode;
mod records;
mod response;
pub mod session;
#[cfg(test)]
mod testing;
#[cfg(test)]
mod tests;

pub use error::{DecodeError, EncodeError, FrameError};
pub use jute::DEFAULT_MAX_FRAME;
pub use op::{MultiOp, Op, WatchClass};
pub use records::{
    ConnectRequest, ConnectResponse, Notification, ReplyHeader, NEW_SESSION_PASSWORD,
};
pub use response::{Expect, MultiIter, MultiResult, MultiResults, Response};
pub use session::{
    Action, AuthError, ConnectionId, Event, Incoming, LargeFrame, SendError, Session,
    SessionConfig, SessionError, State, DEFAULT_PENDING, DEFAULT_WATCHES, DEFAULT_WATCH_BYTES,
};
