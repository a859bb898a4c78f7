//! herdless-core never allocates: a counting global allocator watches a
//! lock and an election candidate replay recorded traces (hundreds of
//! replies, notifications and commands, with other contenders ahead of
//! them), and must count no allocation at all while the recipes run.
//!
//! The count (allocation-counter's global allocator, linked into this test
//! binary alone) is kept per thread and only inside `measure`, so the test
//! harness's own threads and the recording on the in-memory ZooKeeper
//! (which allocates) do not count.

mod support;

use herdless_core::Recipe;
use support::trace::{self, Command, Input, Trace};

/// Allocations made on this thread while `f` runs.
fn allocations_in(f: impl FnOnce()) -> u64 {
    allocation_counter::measure(f).count_total
}

/// Replays `trace` into `recipe` under the counter; the replay must say what
/// the recording said (same requests, same events), or it measured
/// something else.
fn replay_counts<R, C>(mut recipe: R, trace: &Trace<R, C>) -> u64
where
    R: Recipe,
    R::Event: PartialEq + std::fmt::Debug,
    C: Command<R>,
{
    let mut sent = Vec::with_capacity(trace.sent.len() + 1);
    let mut events = Vec::with_capacity(trace.events.len() + 1);
    let allocations =
        allocations_in(|| trace::replay(&mut recipe, &trace.inputs, &mut sent, &mut events));
    assert_eq!(sent, trace.sent, "the replay sent other requests");
    assert_eq!(events, trace.events, "the replay reported other events");
    allocations
}

fn commands<C>(inputs: &[Input<C>]) -> usize {
    inputs
        .iter()
        .filter(|i| matches!(i, Input::Command(_)))
        .count()
}

#[test]
fn the_counter_sees_an_allocation() {
    // The oracle itself: an allocation while armed is counted.
    let n = allocations_in(|| {
        std::hint::black_box(Box::new(7u64));
    });
    assert!(n >= 1, "the counting allocator missed a Box");
}

#[test]
fn a_contended_lock_makes_no_allocation() {
    let trace = trace::lock_trace(4, 200);
    assert!(commands(&trace.inputs) >= 200, "the recording stalled");
    assert!(trace.inputs.len() > 600, "{} inputs", trace.inputs.len());
    assert_eq!(replay_counts(trace::new_lock(), &trace), 0);
}

#[test]
fn a_contested_election_makes_no_allocation() {
    let trace = trace::election_trace(4, 200);
    assert!(commands(&trace.inputs) >= 200, "the recording stalled");
    assert!(trace.inputs.len() > 600, "{} inputs", trace.inputs.len());
    assert_eq!(replay_counts(trace::new_candidate(), &trace), 0);
}
