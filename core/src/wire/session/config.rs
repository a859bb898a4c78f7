//! How a session connects: the ensemble's size, the timeout asked for, and
//! the limits the driver's buffers set.

use crate::wire::jute::DEFAULT_MAX_FRAME;

/// Settings of a [`Session`](super::Session).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub struct SessionConfig {
    /// How many servers the driver can connect to; the session names them
    /// by index `0..servers` and moves to the next one after a failure, in
    /// the order [`server_seed`](Self::server_seed) sets. It also sets the
    /// connect timeout (the session timeout divided by it), so it must be
    /// the transport's whole list of servers.
    pub servers: usize,
    /// The session timeout asked for, in milliseconds (the server clamps it
    /// to its own bounds, by default 4 to 40 s).
    pub timeout_ms: u32,
    /// Whether a read-only server (one cut off from its quorum) is
    /// acceptable. Reads work there; writes fail with `NotReadOnly`.
    pub read_only: bool,
    /// The longest frame payload the driver holds whole (at most its
    /// receive buffer less 4); larger frames are refused by
    /// [`frame::split`](crate::wire::frame::split). A driver that reads
    /// larger replies through its buffer
    /// ([`Session::handle_large_frame`](super::Session::handle_large_frame))
    /// takes listings of any length: a directory of twenty thousand
    /// queue items lists in more than the default.
    pub max_frame: usize,
    /// Whether to open a new session by itself when the old one expired
    /// (recipes then see `Expired` followed by `Connected` with a new id).
    /// When false, an expired session stays [`State::Expired`](super::State::Expired).
    pub renew_after_expiry: bool,
    /// How long to wait before a new round of connection attempts once
    /// every server failed in a row, in milliseconds.
    pub retry_delay_ms: u32,
    /// Which server the session tries first, and in which order it goes
    /// on to the others: see [`with_server_seed`](Self::with_server_seed).
    /// 0, the default, is server 0 first, then 1, 2, and so on.
    pub server_seed: u32,
}

impl SessionConfig {
    /// Settings for `servers` servers and a session timeout of
    /// `timeout_ms`: read-only servers refused, frames up to the server's
    /// default `jute.maxbuffer`, renewal after expiry on, one second
    /// between rounds of attempts, and the servers tried in the order
    /// given. A device that shares an ensemble with others should also
    /// give [`with_server_seed`](Self::with_server_seed) a random number.
    pub const fn new(servers: usize, timeout_ms: u32) -> Self {
        SessionConfig {
            servers,
            timeout_ms,
            read_only: false,
            max_frame: DEFAULT_MAX_FRAME,
            renew_after_expiry: true,
            retry_delay_ms: 1000,
            server_seed: 0,
        }
    }

    /// The same settings accepting read-only servers.
    pub const fn with_read_only(mut self, read_only: bool) -> Self {
        self.read_only = read_only;
        self
    }

    /// The same settings with another frame limit.
    pub const fn with_max_frame(mut self, max_frame: usize) -> Self {
        self.max_frame = max_frame;
        self
    }

    /// The same settings with renewal after expiry on or off.
    pub const fn with_renew_after_expiry(mut self, renew: bool) -> Self {
        self.renew_after_expiry = renew;
        self
    }

    /// The same settings with another pause between rounds of attempts.
    pub const fn with_retry_delay_ms(mut self, retry_delay_ms: u32) -> Self {
        self.retry_delay_ms = retry_delay_ms;
        self
    }

    /// The same settings with the servers tried in an order drawn from
    /// `seed`: give each device a random number (from its RNG, or its
    /// unique id), as ZooKeeper's own clients shuffle their server lists.
    ///
    /// Without it every device of a fleet connects to server 0 first and,
    /// when a server dies, all of its devices go on to the same next one,
    /// which then carries twice its share while another carries none. With
    /// it, devices begin evenly spread over the ensemble, and those of a
    /// server that dies go on to the other servers in even shares (with
    /// three or any prime number of servers; with four, to two of the
    /// three). Each round of attempts still tries every server once.
    ///
    /// ```
    /// use herdless_core::wire::SessionConfig;
    ///
    /// # let device_random_u32 = || 0x5eed_1234;
    /// let config = SessionConfig::new(3, 10_000).with_server_seed(device_random_u32());
    /// # assert_eq!(config.server_seed, 0x5eed_1234);
    /// ```
    pub const fn with_server_seed(mut self, seed: u32) -> Self {
        self.server_seed = seed;
        self
    }
}
