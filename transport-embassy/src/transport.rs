//! What the driver needs from the network: a byte stream it can reopen.

use embedded_io_async::{Read, Write};

/// A byte stream to one ZooKeeper server at a time, which the driver can
/// close and open again (to the same or another server of the ensemble).
///
/// The driver reads and writes through [`Read`] and [`Write`] only while a
/// connection is open (after [`connect`](Transport::connect) succeeded and
/// before [`disconnect`](Transport::disconnect)); a read returning `Ok(0)`
/// means the server closed the connection.
///
/// # Cancellation
///
/// The driver races [`Read::read`] against its timers and drops the losing
/// future, so `read` must lose no bytes when dropped before it completes
/// (true of `embassy_net::tcp::TcpSocket` and of tokio's `TcpStream`
/// through `embedded-io-adapters`). Likewise a dropped [`Write::write`]
/// must have written nothing: the driver tracks how much of a frame went
/// out and finishes it on its next call. `connect` may be dropped half-way too,
/// after which the driver calls `connect` again: it must give up whatever
/// the dropped call began. Otherwise the driver calls `disconnect` before
/// every `connect` after the first.
pub trait Transport: Read + Write {
    /// Opens a connection to server `server`, an index into the list of
    /// servers the transport was made with (`0..SessionConfig::servers`),
    /// replacing any connection still open.
    async fn connect(&mut self, server: usize) -> Result<(), Self::Error>;

    /// Closes the current connection, if any. Cannot fail: a transport that
    /// cannot close cleanly aborts the connection.
    ///
    /// Must end by itself whatever the network does: the driver awaits it
    /// without racing a timer, and does nothing else meanwhile. A wait for
    /// the peer (an acknowledgement, a reset leaving) needs a bound of its
    /// own, kept across calls that are dropped, as `TcpTransport`'s has.
    async fn disconnect(&mut self);
}
