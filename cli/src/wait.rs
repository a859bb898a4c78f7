//! Waiting for a lock or leadership the way an operator expects: told on
//! stderr if it takes more than a moment, and given up on Ctrl-C.

use std::future::Future;
use std::time::Duration;

use herdless_std::{Client, Error};

use crate::common::leave_nothing;
use crate::exit::Exit;
use crate::fail::Fail;
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

/// Awaits an acquisition in `dir` (a lock, a campaign) as [`waiting`]
/// does: `Ok(Ok(_))` once it came, `Ok(Err(exit))` when SIGINT or SIGTERM
/// came first, after this session's nodes in `dir` were deleted (the
/// dropped acquisition would delete its node in the background, which
/// does not outlive the process).
pub async fn acquiring<T>(
    client: &Client,
    dir: &str,
    work: impl Future<Output = Result<T, Error>>,
    interrupts: &mut Interrupts,
) -> Result<Result<T, Exit>, Fail> {
    match waiting(dir, work, interrupts).await {
        Waited::Done(Ok(acquired)) => Ok(Ok(acquired)),
        Waited::Done(Err(e)) => Err(Fail::of(dir, e)),
        Waited::Interrupted(signal) => {
            leave_nothing(client, dir).await;
            Ok(Err(Exit::interrupted(signal)))
        }
    }
}
