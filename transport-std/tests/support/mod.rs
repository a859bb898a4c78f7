//! What herdless-std's tests on the in-memory ZooKeeper share.

// Each test file is its own crate and uses only part of this.
#![allow(dead_code)]

use std::future::Future;
use std::time::Duration;

use herdless_std::sim::{RandomFaults, SimClient, SimServer};
use herdless_std::{Error, Lock, LockGuard};
use tokio::task::JoinHandle;
use tokio::time::timeout;

/// The seeds a randomised test runs, from the variables herdless-core's
/// seeded simulations read: `HERDLESS_SEED` alone if set, else
/// `HERDLESS_SCHEDULES` seeds (default `default`) from
/// `HERDLESS_FIRST_SEED` (default `first`). Each seed is printed as it
/// starts, so a failing test's output ends with the one to replay.
pub fn seeds(first: u64, default: u64) -> impl Iterator<Item = u64> {
    let var = |name| std::env::var(name).ok().and_then(|v| v.parse::<u64>().ok());
    let range = match var("HERDLESS_SEED") {
        Some(seed) => seed..seed.saturating_add(1),
        None => {
            let first = var("HERDLESS_FIRST_SEED").unwrap_or(first);
            first..first.saturating_add(var("HERDLESS_SCHEDULES").unwrap_or(default))
        }
    };
    range.inspect(|seed| println!("seed {seed} (replay with HERDLESS_SEED={seed})"))
}

/// Lost replies and short disconnections, with or without expiries (on a
/// renewing session a holder can then believe it holds while the next one
/// takes over, so a count of holders cannot be the oracle).
pub fn faults(expiries: bool) -> RandomFaults {
    RandomFaults {
        lose_reply: 0.1,
        disconnect: 0.05,
        expire: if expiries { 0.03 } else { 0.0 },
        max_down: Duration::from_millis(300),
    }
}

/// One millisecond, to write virtual time as `20 * MS`.
pub const MS: Duration = Duration::from_millis(1);

/// Tasks alive on the test's runtime: a handle's drivers among them.
pub fn alive_tasks() -> usize {
    tokio::runtime::Handle::current()
        .metrics()
        .num_alive_tasks()
}

/// Every node strictly under `dir`.
pub fn under(zk: &SimServer, dir: &str) -> Vec<String> {
    let prefix = format!("{dir}/");
    zk.tree()
        .into_iter()
        .filter(|p| p.starts_with(&prefix))
        .collect()
}

/// Awaits `fut`, failing the test if it takes longer than `limit` of
/// virtual time.
pub async fn within<T>(limit: Duration, what: &str, fut: impl Future<Output = T>) -> T {
    timeout(limit, fut)
        .await
        .unwrap_or_else(|_| panic!("{what}: not within {limit:?}"))
}

/// `client` acquiring the lock in `dir`, in a task of its own.
pub fn acquiring(client: &SimClient, dir: &'static str) -> JoinHandle<Result<LockGuard, Error>> {
    let client = client.clone();
    tokio::spawn(async move { Lock::new(&client, dir).unwrap().acquire().await })
}
