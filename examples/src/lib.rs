//! Runnable demos of herdless. See `src/bin/demo.rs`; the scenes beyond the
//! lock live in [`scenes`], each on the in-memory ZooKeeper and against a
//! real server.

pub mod scenes;
