//! Runnable demos of herdless. See `src/bin/demo.rs`.
