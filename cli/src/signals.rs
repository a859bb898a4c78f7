//! SIGINT and SIGTERM, caught so that nothing is left in ZooKeeper when an
//! operator interrupts a wait, and passed on to a running command.

use tokio::signal::unix::{signal, Signal, SignalKind};

/// The two signals that ask `herdless` to stop.
pub struct Interrupts {
    int: Signal,
    term: Signal,
}

impl Interrupts {
    /// Starts catching them (from now on they no longer end the process).
    pub fn catch() -> std::io::Result<Interrupts> {
        Ok(Interrupts {
            int: signal(SignalKind::interrupt())?,
            term: signal(SignalKind::terminate())?,
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
