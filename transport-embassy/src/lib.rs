//! # herdless-embassy: ZooKeeper recipes on embassy, with no heap
//!
//! The recipes of [`herdless_core`] on a microcontroller: [`Zk`] runs one
//! ZooKeeper session (the core's sans-IO [`wire::Session`]) over any
//! [`Transport`] — an `embassy_net::tcp::TcpSocket` through
//! [`TcpTransport`] (feature `embassy-net`), or anything else that is
//! `embedded_io_async::{Read, Write}` and can reconnect — and feeds up to
//! `K` recipes at once from it. Buffers are the caller's ([`Buffers`]),
//! timers come from `embassy-time`, and logging goes to `defmt` behind the
//! `defmt` feature.
//!
//! ```no_run
//! # async fn example<T: herdless_embassy::Transport>(transport: T, guid: [u8; 16]) -> Result<(), herdless_embassy::Error> {
//! use embassy_time::Duration;
//! use herdless_core::lock::Lock;
//! use herdless_core::naming::Guid;
//! use herdless_core::wire::SessionConfig;
//! use herdless_embassy::{Buffers, Zk};
//!
//! let (mut rx, mut tx) = ([0u8; 2048], [0u8; 512]);
//! let mut pump_lock: Lock = Lock::new("/locks/pump").unwrap();
//!
//! let mut zk: Zk<'_, T> = Zk::new(transport, Buffers::new(&mut rx, &mut tx), SessionConfig::new(1, 10_000));
//! let pump = zk.add(&mut pump_lock)?;
//! zk.connect().await?;
//!
//! let mut lock = zk.handle(pump);
//! lock.acquire(Guid::from_random_bytes(guid)).await?;   // guid: from the hardware RNG
//! lock.hold_while(embassy_time::Timer::after(Duration::from_secs(1))).await?; // the work
//! lock.release().await?;
//! # Ok(()) }
//! ```
//!
//! Nothing runs in the background: the session advances while one of the
//! driver's async calls runs (a recipe call, [`Zk::run`] around the
//! application's own work, [`Handle::hold_while`]). Keep one of them
//! running at least every third of the session timeout, or the server
//! sees no pings.
//!
//! Faults on a connection — a server that closes it, sends a malformed or
//! oversize frame, or stops answering — never panic: the driver drops the
//! connection, resumes the session on the next one (the recipes see
//! `Suspended`, then `Connected`), and keeps the fault for
//! [`Zk::last_fault`].
#![no_std]
// The transport trait uses `async fn`: embassy executors are
// single-threaded, so the futures need no `Send` bound.
#![allow(async_fn_in_trait)]

mod election;
mod error;
mod handle;
mod lock;
mod log;
mod slot;
#[cfg(feature = "embassy-net")]
mod tcp;
mod transport;
mod zk;

pub use error::{Error, Fault};
pub use handle::Handle;
pub use herdless_core::wire;
#[cfg(feature = "embassy-net")]
pub use tcp::{TcpError, TcpTransport};
pub use transport::Transport;
pub use zk::{Buffers, RecipeId, Zk};
