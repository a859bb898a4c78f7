//! One module per verb.

pub mod barrier;
pub mod break_lock;
pub mod config;
pub mod double_barrier;
pub mod elect;
pub mod inspect;
pub mod lock;
pub mod members;
pub mod queue;
pub mod revoke;
pub mod tx;
