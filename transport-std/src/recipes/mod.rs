//! The recipes on tokio, each a handle that spawns a driver task per
//! operation and turns the core recipe's events into futures. Re-exported
//! at the crate root (`herdless_std::lock`, `herdless_std::election`, ...).

pub mod barrier;
pub mod config;
pub mod election;
#[cfg(test)]
mod future_size;
pub mod group;
pub mod lock;
pub mod member;
mod observed;
pub mod queue;
mod read_failure;
pub mod revoke;
pub mod rwlock;
pub mod two_phase;
