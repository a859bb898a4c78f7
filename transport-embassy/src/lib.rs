//! # herdless-embassy: ZooKeeper recipes on embassy, with no heap
//!
//! The recipes of [`herdless_core`] on a microcontroller: [`Zk`] runs one
//! ZooKeeper session (the core's sans-IO [`wire::Session`]) over any
//! [`Transport`] — an `embassy_net::tcp::TcpSocket` through
//! `TcpTransport` (feature `embassy-net`), or anything else that is
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
//! Every recipe of the core runs on the driver ([`Zk::add`] takes any
//! [`Recipe`](herdless_core::Recipe)); [`Handle`] has async calls for
//! each, so an application rarely reads raw events:
//!
//! | recipe | calls on its [`Handle`] |
//! |---|---|
//! | `lock::Lock` (exclusive, reader, writer, revocable) | `acquire`, `acquire_timeout`, `try_acquire`, `hold_while`, `release`, `cancel` |
//! | `election::Election` | `campaign`, `campaign_timeout`, `lead_while`, `resumed`, `resign` |
//! | `config::Config` | `changed`, `value`, `version`, `set`, `create` |
//! | `member::Member` | `join`, `is_in`, `leave` |
//! | `members::Observer` | `changed`, `contains` |
//! | `barrier::Barrier` | `set`, `remove`, `wait` |
//! | `double_barrier::DoubleBarrier` | `enter`, `leave` |
//! | `queue::Producer` | `put` |
//! | `queue::Consumer` (plain or priority) | `take`, `take_timeout`, `peek` |
//! | `two_phase::TwoPhase` (a site) | `participate`, `body`, `vote`, `outcome` |
//!
//! [`Handle::next_event`] reads any recipe's events while the session runs,
//! and [`Handle::recipe`] reaches its own methods and state.
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
//! [`Zk::last_fault`]. A server that stops answering is not a fault of
//! the connection but the session's read timeout: it is not counted
//! there, and the recipes' `Suspended` is how it shows.
//!
//! A fleet of devices sharing an ensemble should give each device's
//! session its own order of servers,
//! [`SessionConfig::with_server_seed`](wire::SessionConfig::with_server_seed)
//! with a random number, as ZooKeeper's own clients shuffle their server
//! lists: otherwise every device begins with the first server, and the
//! devices of a server that dies all go on to the same next one.
//!
//! A device that runs only recipes can also leave out the session's watch
//! table, `Zk<'_, T, K, 0, 0>` (see [`Zk`]): every recipe reads again what
//! it watches when its session resumes, so nothing needs setting again, and
//! some 1.6 KB of code and 1.3 KB of RAM go.
#![no_std]
// The transport trait uses `async fn`: embassy executors are
// single-threaded, so the futures need no `Send` bound.
#![allow(async_fn_in_trait)]

mod barrier;
mod config;
mod election;
mod erased;
mod error;
mod handle;
mod lock;
mod log;
mod member;
mod queue;
#[cfg(feature = "embassy-net")]
mod tcp;
mod transport;
mod two_phase;
mod zk;

pub use config::Written;
pub use error::{Error, Fault};
pub use handle::Handle;
pub use herdless_core::wire;
pub use queue::Item;
#[cfg(feature = "embassy-net")]
pub use tcp::{TcpError, TcpTransport};
pub use transport::Transport;
pub use zk::{Buffers, RecipeId, Zk};
