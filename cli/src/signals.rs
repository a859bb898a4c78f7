//! SIGINT and SIGTERM, caught so that nothing is left in ZooKeeper when an
//! operator interrupts a wait, and passed on to a running command.

use tokio::signal::unix::{signal, Signal, SignalKind};

use crate::exit::Exit;
use crate::fail::Fail;

/// The two signals that ask `herdless` to stop.
pub struct Interrupts {
    int: Signal,
    term: Signal,
}

impl Interrupts {
    /// Starts catching them (from now on they no longer end the process).
    pub fn catch() -> Result<Interrupts, Fail> {
        let caught = |kind| {
            signal(kind)
                .map_err(|e| Fail::new(Exit::Unavailable, format!("cannot catch signals: {e}")))
        };
        Ok(Interrupts {
            int: caught(SignalKind::interrupt())?,
            term: caught(SignalKind::terminate())?,
        })
    }

    /// The next one that arrives: its number.
    pub async fn recv(&mut self) -> i32 {
        tokio::select! {
            _ = self.int.recv() => nix::libc::SIGINT,
            _ = self.term.recv() => nix::libc::SIGTERM,
        }
    }
}
