//! A rival for a lock holder whose standing a test puts in doubt: it takes
//! the lock as soon as it is free and says when, the moment a second holder
//! would have begun.

use std::time::Instant;

use herdless_std::{Client, Lock};
use tokio::task::JoinHandle;

/// Spawns a herdless-std contender on `dir` through `client`: it acquires
/// the lock once it is free, releases it at once, and returns when it
/// acquired.
pub fn rival_acquires(client: Client, dir: &'static str) -> JoinHandle<Instant> {
    tokio::spawn(async move {
        let lock = Lock::new(&client, dir).expect("the rival's lock");
        let guard = lock.acquire().await.expect("the rival acquires");
        let acquired = Instant::now();
        guard.release().await.expect("the rival releases");
        acquired
    })
}
