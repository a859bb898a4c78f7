//! The faults a [`SimServer`](super::SimServer) injects by itself.

use std::time::Duration;

/// How often each fault strikes, per request, in
/// [`SimServer::random_faults`](super::SimServer::random_faults). Each rate
/// is a probability from 0 to 1.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RandomFaults {
    /// A write is applied and its answer lost with the connection (the
    /// client hears `ConnectionLoss`).
    pub lose_reply: f64,
    /// The connection breaks once the request is answered, for up to
    /// `max_down`.
    pub disconnect: f64,
    /// The session expires once the request is answered.
    pub expire: f64,
    /// The longest disconnection.
    pub max_down: Duration,
}

impl Default for RandomFaults {
    /// Connection faults on about one request in twenty, no expiry.
    fn default() -> Self {
        RandomFaults {
            lose_reply: 0.05,
            disconnect: 0.05,
            expire: 0.0,
            max_down: Duration::from_millis(500),
        }
    }
}
