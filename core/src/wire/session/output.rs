//! What the session tells its driver: connections to open and close,
//! decoded frames, and events.

use crate::wire::response::Response;
use crate::{SessionEvent, WatchEvent};

/// Names one connection attempt. Every attempt gets a new one, so input
/// from a connection the session has already given up on is recognised
/// and ignored.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct ConnectionId(pub(crate) u32);

impl ConnectionId {
    /// The attempt's number (1 for the first).
    pub const fn generation(self) -> u32 {
        self.0
    }
}

/// Something the driver must do with its sockets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Action {
    /// Open a TCP connection to server `server`, then report
    /// [`handle_connected`](super::Session::handle_connected) or
    /// [`handle_disconnected`](super::Session::handle_disconnected).
    Connect {
        /// Index of the server, `0..SessionConfig::servers`.
        server: usize,
        /// The id to report this connection's input with.
        conn: ConnectionId,
    },
    /// Close this connection (no need to report the close).
    Close {
        /// The connection to close.
        conn: ConnectionId,
    },
}

/// Something for the driver to pass on, from [`poll_event`](super::Session::poll_event).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum Event<T> {
    /// The session changed: hand it to every recipe's `handle_session`.
    Session(SessionEvent),
    /// The request sent with this tag will get no reply: its connection
    /// was lost. Recipes need not be told (a `Suspended` follows, which
    /// voids their requests in flight); other callers answer it with
    /// `ZkError::ConnectionLoss`.
    Lost(T),
}

/// What a received frame held, from [`handle_frame`](super::Session::handle_frame).
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum Incoming<'a, T> {
    /// The reply to the request sent with `tag`.
    Reply {
        /// The tag given to [`send`](super::Session::send).
        tag: T,
        /// The decoded reply, borrowing the frame.
        response: Response<'a>,
    },
    /// A watch fired: hand it to every recipe's `handle_watch` (each one
    /// ignores paths it does not watch).
    Watch(WatchEvent<'a>),
    /// Nothing for the recipes (a handshake, a ping, auth or setWatches
    /// reply, a frame from a stale connection); look at
    /// [`poll_event`](super::Session::poll_event) and
    /// [`poll_action`](super::Session::poll_action).
    Nothing,
}

/// What a frame too large for the driver's buffer is, from
/// [`handle_large_frame`](super::Session::handle_large_frame). In every case
/// the rest of the frame is to be read off the connection (and, but for a
/// listing, dropped).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum LargeFrame<T> {
    /// A successful `getChildren` reply to the request sent with `tag`: the
    /// rest of the frame is its names, for a
    /// [`ListingDecoder`](crate::wire::listing::ListingDecoder) (to hand to a
    /// recipe in parts), or to drop and answer as
    /// [`TooLarge`](LargeFrame::TooLarge).
    Listing {
        /// The tag given to [`send`](super::Session::send).
        tag: T,
    },
    /// Any other reply to the request sent with `tag`: answer it with
    /// [`ZkError::ReplyTooLarge`](crate::ZkError::ReplyTooLarge). The server
    /// carried it out, and a watch it asked for is set.
    TooLarge {
        /// The tag given to [`send`](super::Session::send).
        tag: T,
    },
    /// A frame of a connection the session has given up on.
    Stale,
}

/// Where the session stands, from [`state`](super::Session::state).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum State {
    /// Opening a connection or waiting for the handshake.
    Connecting,
    /// Established: requests can be sent.
    Connected {
        /// Whether the server is read-only.
        read_only: bool,
    },
    /// closeSession asked for; replies still arrive.
    Closing,
    /// Closed by this client.
    Closed,
    /// Expired, and not renewed ([`SessionConfig::renew_after_expiry`](super::SessionConfig::renew_after_expiry) off).
    Expired,
    /// The server refused the credentials.
    AuthFailed,
}
