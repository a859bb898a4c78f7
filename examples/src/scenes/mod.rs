//! Short scenes of the demo, one per recipe: `simulated(seed)` on the
//! in-memory ZooKeeper, `real(addr)` against a server through
//! `herdless-std`.

pub mod barrier;
pub mod config;
pub mod election;
pub mod membership;
pub mod names;
pub mod queue;
pub mod rwlock;
pub mod two_phase;

/// Prints a scene's title.
fn title(text: &str) {
    println!("\n=== {text} ===\n");
}
