//! Nanoseconds per input of the lock and the election candidate, on traces
//! recorded on the in-memory ZooKeeper with other contenders beside them
//! (`tests/support/trace.rs`): a fresh recipe replays the whole trace each
//! iteration, drained after every input as a transport drains it. Divan
//! reports the throughput in inputs per second (its inverse is the time per
//! input) and, with its allocation profiler, the heap allocations per
//! iteration, which must be 0 (`tests/no_heap.rs` asserts it).
//!
//! `cargo bench -p herdless-core --bench recipe_inputs`

#[path = "../tests/support/trace.rs"]
mod trace;

use divan::counter::ItemsCount;
use divan::{AllocProfiler, Bencher};
use herdless_core::Recipe;
use trace::{Command, Trace};

#[global_allocator]
static ALLOC: AllocProfiler = AllocProfiler::system();

fn main() {
    divan::main();
}

/// Contenders in each traced directory, the traced one included.
const CONTENDERS: usize = 4;
/// Commands of the traced recipe (acquire and release, campaign and
/// resign).
const ROUNDS: usize = 200;

fn bench_replay<R: Recipe, C: Command<R>>(
    bencher: Bencher,
    trace: &Trace<R, C>,
    fresh: impl Fn() -> R,
) {
    let inputs = &trace.inputs;
    let (sent, events) = (trace.sent.len(), trace.events.len());
    bencher
        .counter(ItemsCount::new(inputs.len()))
        .with_inputs(|| {
            (
                fresh(),
                Vec::with_capacity(sent + 1),
                Vec::with_capacity(events + 1),
            )
        })
        .bench_local_refs(|(recipe, sent, events)| {
            sent.clear();
            events.clear();
            trace::replay(recipe, inputs, sent, events);
        });
}

#[divan::bench]
fn lock(bencher: Bencher) {
    let trace = trace::lock_trace(CONTENDERS, ROUNDS);
    bench_replay(bencher, &trace, trace::new_lock);
}

#[divan::bench]
fn election(bencher: Bencher) {
    let trace = trace::election_trace(CONTENDERS, ROUNDS);
    bench_replay(bencher, &trace, trace::new_candidate);
}
