//! The recipes of the ZooKeeper recipes page, each a state machine that
//! implements [`Recipe`](crate::Recipe). Re-exported at the crate root
//! (`herdless_core::lock`, `herdless_core::election`, ...).

pub mod barrier;
pub mod config;
pub mod double_barrier;
pub mod election;
pub mod group;
pub mod lock;
pub mod queue;
pub mod revoke;
pub mod two_phase;

pub use group::member;
pub use group::observer as members;
