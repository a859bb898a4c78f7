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

/// Processes named `names` enter a barrier of as many, together, and all
/// get in: the start of every test about leaving.
pub fn all_inside(zk: &mut SimZk, names: &[&str], most: &mut usize) -> Vec<Driver<DoubleBarrier>> {
    let count = names.len();
    let mut ps: Vec<_> = names.iter().map(|n| process(zk, n)).collect();
    for p in ps.iter_mut() {
        p.act(zk, |p| p.enter(u32::try_from(count).unwrap()))
            .unwrap();
    }
    run_all(zk, &mut ps, count, most);
    assert!(ps.iter().all(entered), "not all inside");
    ps
}
