#![allow(dead_code)] // each test file uses a different part
//! What every seeded simulation test shares: which seeds to run, and how a
//! failure names its seed so it can be replayed.

pub mod acls;
pub mod by_hand;
pub mod oracle;
pub mod session_moves;
pub mod stuck;
pub mod trace;

use std::time::Instant;

fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.parse().ok())
}

/// Runs `run` for every seed: `HERDLESS_SEED` alone if set, else
/// `HERDLESS_SCHEDULES` seeds (default `default`) from `HERDLESS_FIRST_SEED`
/// (default 0), so a long run can go past the seeds already tried. Panics on the
/// first failure with the command that replays it. Returns the results and
/// the seconds it took.
pub fn for_each_seed<T>(
    test: &str,
    default: u64,
    mut run: impl FnMut(u64) -> Result<T, String>,
) -> (Vec<T>, f64) {
    let seeds: Vec<u64> = match env_u64("HERDLESS_SEED") {
        Some(seed) => vec![seed],
        None => {
            let first = env_u64("HERDLESS_FIRST_SEED").unwrap_or(0);
            let count = env_u64("HERDLESS_SCHEDULES").unwrap_or(default);
            (first..first.saturating_add(count)).collect()
        }
    };
    let started = Instant::now();
    let mut results = Vec::with_capacity(seeds.len());
    for seed in seeds {
        match run(seed) {
            Ok(r) => results.push(r),
            Err(why) => panic!(
                "schedule with seed {seed} failed: {why}\n\
                 replay: HERDLESS_SEED={seed} cargo test -p herdless-core --test {test}"
            ),
        }
    }
    (results, started.elapsed().as_secs_f64())
}

/// Whether tracing of every step was asked for (`HERDLESS_TRACE`).
#[allow(dead_code)] // not every test traces
pub fn tracing() -> bool {
    std::env::var_os("HERDLESS_TRACE").is_some()
}
