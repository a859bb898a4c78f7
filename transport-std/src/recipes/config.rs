//! A watched configuration value on tokio, with compare-and-set writes.

use std::fmt;
use std::sync::Arc;

use futures::StreamExt;
use herdless_core::config::{Config as CoreConfig, ConfigEvent};
use herdless_core::Version;
use tokio::sync::{watch, Mutex};
use tracing::{debug, warn};

use super::read_failure::ReadFailure;
use crate::driver::channel;
use crate::driver::{self, Counters, DriverHandle};
use crate::{Connection, Error};

/// Largest value, in bytes (32 KiB), a [`Config`] holds; a larger one is
/// reported as [`Value::TooLarge`] rather than cut.
pub const MAX_VALUE: usize = 32 * 1024;

type Core = CoreConfig<MAX_VALUE, 256>;

/// One version of the value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Versioned {
    /// The node's data.
    pub data: Vec<u8>,
    /// The node's data version (for compare-and-set).
    pub version: i32,
}

/// What the watcher knows of the value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Value {
    /// Nothing read yet.
    Unknown,
    /// The node does not exist.
    Missing,
    /// The latest version.
    Present(Versioned),
    /// The latest version does not fit [`MAX_VALUE`].
    TooLarge {
        /// Its version.
        version: i32,
        /// Its length.
        len: usize,
    },
}

impl Value {
    /// The value, if present.
    pub fn present(&self) -> Option<&Versioned> {
        match self {
            Value::Present(v) => Some(v),
            _ => None,
        }
    }
}

/// How a write ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Written {
    /// It landed; the node's new version.
    Updated {
        /// The version the write produced.
        version: i32,
    },
    /// It was refused: the version did not match (or the node existed, for a
    /// create; or was missing, for a set). Nothing was written.
    Conflict,
    /// Its reply was lost with the connection and the node read back cannot say
    /// whether it landed: other writes moved it on first, or it holds this
    /// write's data, which an identical write by another client could have put
    /// there. It may or may not have landed. Read the value and decide
    /// (retrying a write that is not idempotent, such as a counter's
    /// increment, could apply it twice).
    Unknown,
}

/// What the watcher knows: the value, and whether reading it failed since.
#[derive(Clone, Debug)]
struct Seen {
    value: Value,
    failure: ReadFailure,
}

/// A configuration value in one node, always showing its latest version.
///
/// The watch is re-armed by every read, so an update is never missed
/// between a notification and the re-read; versions only grow; versions
/// written faster than a round trip may be coalesced into the last one (as
/// ZooKeeper's watches do). On a [`Session`](crate::Session) the watch
/// survives session expiry. A read the server refuses (the node's ACL
/// denies this client, say) is reported by [`changed`](Config::changed) and
/// [`wait_present`](Config::wait_present) as an error rather than waited
/// out; the watch is tried again on the next reconnect.
///
/// ```no_run
/// # async fn run(client: herdless_std::Client) -> Result<(), herdless_std::Error> {
/// use herdless_std::config::{Config, Written};
///
/// let mut config = Config::watch(&client, "/app/config")?;
/// let current = config.wait_present().await?;
/// // Compare-and-set against what was read:
/// match config.set(b"level=info", Some(current.version)).await? {
///     Written::Updated { version } => println!("now at version {version}"),
///     Written::Conflict | Written::Unknown => { /* re-read and retry */ }
/// }
/// # Ok(()) }
/// ```
pub struct Config {
    handle: DriverHandle<Core>,
    seen: watch::Receiver<Seen>,
    /// Read failures reported so far (see [`ReadFailure`]).
    reported: u64,
    writes: Mutex<channel::Receiver<Result<Written, Error>>>,
    path: String,
}

impl fmt::Debug for Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Config")
            .field("path", &self.path)
            .field("value", &self.seen.borrow().value)
            .finish()
    }
}

impl Config {
    /// Starts watching the node at `path`. The first value (or
    /// [`Value::Missing`]) arrives after one round trip.
    pub fn watch(conn: &impl Connection, path: &str) -> Result<Config, Error> {
        let mut core = Core::new(path)?.with_acl(conn.acl());
        core.watch();
        let (seen_tx, seen_rx) = watch::channel(Seen {
            value: Value::Unknown,
            failure: ReadFailure::default(),
        });
        let (writes_tx, writes_rx) = channel::unbounded();
        let on_event = move |core: &Core, event: ConfigEvent| {
            debug!(?event, "config");
            let value = match event {
                ConfigEvent::Changed { version } => core.value().map(|data| {
                    Value::Present(Versioned {
                        data: data.to_vec(),
                        version,
                    })
                }),
                ConfigEvent::Missing => Some(Value::Missing),
                ConfigEvent::TooLarge { version, len } => Some(Value::TooLarge { version, len }),
                ConfigEvent::Updated { version } => {
                    let _ = writes_tx.unbounded_send(Ok(Written::Updated { version }));
                    None
                }
                ConfigEvent::Conflict => {
                    let _ = writes_tx.unbounded_send(Ok(Written::Conflict));
                    None
                }
                ConfigEvent::Unknown => {
                    let _ = writes_tx.unbounded_send(Ok(Written::Unknown));
                    None
                }
                ConfigEvent::WriteFailed(e) => {
                    let _ = writes_tx.unbounded_send(Err(e.into()));
                    None
                }
                ConfigEvent::Failed(e) => {
                    warn!(path = %core.path(), error = %e, "reading the config failed");
                    seen_tx.send_modify(|s| s.failure.fail(e.into()));
                    None
                }
                _ => None,
            };
            if let Some(value) = value {
                seen_tx.send_modify(|s| {
                    s.value = value;
                    s.failure.clear();
                });
            }
        };
        let handle = driver::spawn_on(
            conn.source(),
            core,
            Arc::new(Counters::default()),
            on_event,
            // The watch ends with its handle.
            |_: &Core| true,
        );
        Ok(Config {
            handle,
            seen: seen_rx,
            reported: 0,
            writes: Mutex::new(writes_rx),
            path: path.to_owned(),
        })
    }

    /// The node's path.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// What is known now.
    pub fn value(&self) -> Value {
        self.seen.borrow().value.clone()
    }

    /// Waits until something newer than what this method or
    /// [`wait_present`](Config::wait_present) last returned arrives (at
    /// first, anything after the watch began), and returns it.
    /// [`value`](Config::value) only peeks: what it shows still counts as
    /// new here. Fails with the error when the latest read failed (each
    /// failure once; the next call waits for what comes after it), and with
    /// [`Error::SessionEnded`] once the session is over for good (a plain
    /// client's session expired, or the [`Session`](crate::Session) closed).
    /// Cancel-safe.
    pub async fn changed(&mut self) -> Result<Value, Error> {
        let over = self.handle.over();
        over.unless(async {
            self.seen.changed().await.map_err(|_| Error::DriverGone)?;
            let seen = self.seen.borrow_and_update();
            match seen.failure.take_new(&mut self.reported) {
                Some(e) => Err(e),
                None => Ok(seen.value.clone()),
            }
        })
        .await
    }

    /// Waits until the node exists with a value that fits, and returns it.
    /// Fails with the error when a read fails first (each failure once),
    /// and with [`Error::SessionEnded`] once the session is over for good (a plain
    /// client's session expired, or the [`Session`](crate::Session) closed).
    /// Cancel-safe.
    pub async fn wait_present(&mut self) -> Result<Versioned, Error> {
        let over = self.handle.over();
        over.unless(async {
            let reported = &mut self.reported;
            let seen = self
                .seen
                .wait_for(|s| matches!(s.value, Value::Present(_)) || s.failure.is_new(*reported))
                .await
                .map_err(|_| Error::DriverGone)?;
            if let Some(e) = seen.failure.take_new(reported) {
                return Err(e);
            }
            match &seen.value {
                Value::Present(v) => Ok(v.clone()),
                _ => Err(Error::DriverGone),
            }
        })
        .await
    }

    /// Replaces the value if the node is at `version` (`None`: any version).
    ///
    /// Writes on one handle are serialised. Cancel-safe in that a dropped
    /// future leaves the handle usable, but the write may still land.
    pub async fn set(&self, data: &[u8], version: Option<i32>) -> Result<Written, Error> {
        let data = data.to_vec();
        let version = version.map_or(Version::Any, Version::Exactly);
        self.write(move |c: &mut Core| c.set(&data, version)).await
    }

    /// Creates the node (persistent) with `data`, and its missing
    /// ancestors as every recipe makes its directory; [`Written::Conflict`]
    /// if it exists.
    pub async fn create(&self, data: &[u8]) -> Result<Written, Error> {
        let data = data.to_vec();
        self.write(move |c: &mut Core| c.create(&data)).await
    }

    async fn write(
        &self,
        start: impl FnOnce(&mut Core) -> Result<(), herdless_core::Error> + Send + 'static,
    ) -> Result<Written, Error> {
        let mut writes = self.writes.lock().await;
        // Outcomes of writes whose futures were dropped are stale.
        while writes.try_recv().is_ok() {}
        self.handle.call(start).await??;
        self.handle
            .over()
            .unless(async { writes.next().await.ok_or(Error::DriverGone)? })
            .await
    }
}
