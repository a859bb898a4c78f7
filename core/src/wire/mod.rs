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
//!
//! The protocol facts (framing, jute, opcodes, reserved xids, handshake,
//! error codes, multi, setWatches) follow ZooKeeper 3.8.
//!
#![deny(clippy::indexing_slicing)]

pub mod decode;
pub mod encode;
mod error;
pub mod frame;
mod jute;
mod op;
pub mod opcode;
mod records;
mod response;
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
