//! The contract between a recipe and whatever drives it: the
//! [`Recipe`](crate::Recipe) trait, its inputs (replies, watch
//! notifications, session changes, each with the time) and outputs
//! (requests), the one error type, and ZooKeeper's own vocabulary
//! (requests, replies, error codes).
//!
//! Everything here is re-exported at the crate root; this module only
//! groups it.

pub mod error;
pub mod input;
#[cfg(feature = "alloc")]
pub mod owned;
pub mod recipe;
pub mod reply;
pub mod request;
pub mod time;
pub mod zk_error;
