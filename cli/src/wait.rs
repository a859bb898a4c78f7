//! Waiting for a lock or leadership the way an operator expects: told on
//! stderr if it takes more than a moment, and given up on Ctrl-C.

use std::future::Future;
use std::time::Duration;

use crate::signals::Interrupts;

/// How a wait ended.
pub enum Waited<T> {
    /// It finished.
    Done(T),
    /// SIGINT or SIGTERM came first (its number).
    Interrupted(i32),
}

/// Awaits `work`, saying on stderr that it waits for `path` once half a
/// second has gone by, and giving up on SIGINT or SIGTERM (dropping
/// `work`).
pub async fn waiting<T>(
    path: &str,
    work: impl Future<Output = T>,
    interrupts: &mut Interrupts,
) -> Waited<T> {
    let mut work = std::pin::pin!(work);
    let mut told = false;
    loop {
        tokio::select! {
            done = &mut work => return Waited::Done(done),
            signal = interrupts.recv() => return Waited::Interrupted(signal),
            _ = tokio::time::sleep(Duration::from_millis(500)), if !told => {
                eprintln!("herdless: waiting for {path} ...");
                told = true;
            }
        }
    }
}
