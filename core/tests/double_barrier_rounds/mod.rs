//! Processes of one double barrier on the in-memory ZooKeeper, run
//! together, with the oracle the barrier's tests share: nobody enters
//! before the count of process nodes was on the server.

#![allow(dead_code)] // each test file uses a different part

use crate::conn_loss::Driver;
use herdless_core::double_barrier::{DoubleBarrier, DoubleBarrierEvent, READY};
use herdless_core::sim::SimZk;

pub const DIR: &str = "/app/double";

pub fn ready_path() -> String {
    format!("{DIR}/{READY}")
}

pub fn process_nodes(zk: &SimZk) -> Vec<String> {
    zk.children(DIR)
        .unwrap_or_default()
        .into_iter()
        .filter(|n| n != READY)
        .collect()
}

pub fn process(zk: &mut SimZk, name: &str) -> Driver<DoubleBarrier> {
    Driver::open(zk, DoubleBarrier::new(DIR, name).unwrap())
}

/// Runs every process until nothing is queued anywhere, checking after
/// every delivery that nobody entered with fewer than `count` process
/// nodes seen on the server so far.
pub fn run_all(zk: &mut SimZk, ps: &mut [Driver<DoubleBarrier>], count: usize, most: &mut usize) {
    for _ in 0..10_000 {
        let mut busy = false;
        for p in ps.iter_mut() {
            busy |= zk.apply_next(p.session);
            *most = (*most).max(process_nodes(zk).len());
            busy |= p.deliver_one(zk);
            if p.events.contains(&DoubleBarrierEvent::Entered) {
                assert!(
                    *most >= count,
                    "{} entered with at most {} of {count} processes on the server",
                    p.recipe.name(),
                    *most
                );
            }
        }
        if !busy {
            return;
        }
    }
    panic!("never quiet");
}

pub fn entered(p: &Driver<DoubleBarrier>) -> bool {
    p.events.contains(&DoubleBarrierEvent::Entered)
}
