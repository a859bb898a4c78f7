//! [`Transport`] over an embassy-net TCP socket.

use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll};

use embassy_net::tcp::{ConnectError, Error as SocketError, TcpSocket};
use embassy_net::IpEndpoint;
use embassy_time::{with_deadline, Duration, Instant};
use embedded_io_async::{ErrorKind, ErrorType, Read, Write};

use crate::transport::Transport;

/// How long a disconnect waits at most for its RST to leave: on a link
/// that works it leaves at the network stack's next poll.
const RST_WAIT: Duration = Duration::from_millis(200);

/// An embassy-net [`TcpSocket`] that connects to one of a list of
/// ZooKeeper servers at a time.
///
/// The socket's own settings (buffers, timeout, keep-alive) are the
/// caller's; one socket is reused for every connection.
pub struct TcpTransport<'s, 'd> {
    socket: TcpSocket<'d>,
    servers: &'s [IpEndpoint],
    /// Until when the disconnect under way waits for its RST (in the
    /// past when none is).
    rst_until: Instant,
}

impl<'s, 'd> TcpTransport<'s, 'd> {
    /// A transport over `socket` to `servers` (the ensemble; the session
    /// moves through them by index after failures).
    ///
    /// Give the session the same count, `SessionConfig::new(servers.len(),
    /// ..)`: a smaller one leaves the servers past it unused, so the driver
    /// keeps reconnecting to the first ones while others would serve it.
    pub fn new(socket: TcpSocket<'d>, servers: &'s [IpEndpoint]) -> Self {
        TcpTransport {
            socket,
            servers,
            rst_until: Instant::MIN,
        }
    }

    /// The socket, for its state and settings.
    pub fn socket(&mut self) -> &mut TcpSocket<'d> {
        &mut self.socket
    }
}

/// Why the TCP transport failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum TcpError {
    /// Connecting failed.
    Connect(ConnectError),
    /// The connection was reset.
    Socket(SocketError),
    /// The server index is not in the list.
    NoSuchServer,
}

impl core::fmt::Display for TcpError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            TcpError::Connect(e) => write!(f, "TCP connect failed: {e:?}"),
            TcpError::Socket(e) => write!(f, "TCP connection failed: {e:?}"),
            TcpError::NoSuchServer => f.write_str("no server with that index"),
        }
    }
}

impl core::error::Error for TcpError {}

impl embedded_io_async::Error for TcpError {
    fn kind(&self) -> ErrorKind {
        match self {
            TcpError::Connect(ConnectError::ConnectionReset) => ErrorKind::ConnectionRefused,
            TcpError::Connect(ConnectError::TimedOut) => ErrorKind::TimedOut,
            TcpError::Connect(ConnectError::NoRoute) => ErrorKind::AddrNotAvailable,
            TcpError::Connect(_) => ErrorKind::Other,
            TcpError::Socket(_) => ErrorKind::ConnectionReset,
            TcpError::NoSuchServer => ErrorKind::InvalidInput,
        }
    }
}

/// A read of the socket into `buf`: the socket's own read made anew at
/// every poll, its error mapped. That read is cancel-safe (bytes are only
/// taken when it is ready), so a fresh one at each poll is the same read;
/// an `async fn` around it instead measured 94 B more herdless code in the
/// STM32 firmware (scripts/firmware-size.sh), and holding the socket's
/// future here cannot be written (it borrows the socket and the buffer
/// for one lifetime, which the trait's two cannot name).
struct Reading<'a, 'b, 'd> {
    socket: &'a mut TcpSocket<'d>,
    buf: &'b mut [u8],
}

impl Future for Reading<'_, '_, '_> {
    type Output = Result<usize, TcpError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let mut read = this.socket.read(this.buf);
        Pin::new(&mut read).poll(cx).map_err(TcpError::Socket)
    }
}

/// A write of `buf` to the socket, made as [`Reading`] is (the socket's
/// write takes bytes only when it is ready).
struct Writing<'a, 'b, 'd> {
    socket: &'a mut TcpSocket<'d>,
    buf: &'b [u8],
}

impl Future for Writing<'_, '_, '_> {
    type Output = Result<usize, TcpError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let mut write = this.socket.write(this.buf);
        Pin::new(&mut write).poll(cx).map_err(TcpError::Socket)
    }
}

impl ErrorType for TcpTransport<'_, '_> {
    type Error = TcpError;
}

impl<'s, 'd> Read for TcpTransport<'s, 'd> {
    fn read(&mut self, buf: &mut [u8]) -> impl Future<Output = Result<usize, TcpError>> {
        Reading {
            socket: &mut self.socket,
            buf,
        }
    }
}

impl<'s, 'd> Write for TcpTransport<'s, 'd> {
    fn write(&mut self, buf: &[u8]) -> impl Future<Output = Result<usize, TcpError>> {
        Writing {
            socket: &mut self.socket,
            buf,
        }
    }

    /// Returns at once: the network stack sends what was written by itself,
    /// and the socket's own `flush` would wait for the server's ACK,
    /// stalling the driver for a round trip after every request.
    async fn flush(&mut self) -> Result<(), TcpError> {
        Ok(())
    }
}

impl Transport for TcpTransport<'_, '_> {
    async fn connect(&mut self, server: usize) -> Result<(), TcpError> {
        let endpoint = *self.servers.get(server).ok_or(TcpError::NoSuchServer)?;
        // The driver disconnects (letting the RST leave) before it opens
        // the next connection; what is left here is at most an attempt a
        // dropped call began, which the abort gives up. Awaiting the
        // disconnect here as well measured 41 B more herdless code in the
        // STM32 firmware (scripts/firmware-size.sh).
        self.socket.abort();
        self.socket
            .connect(endpoint)
            .await
            .map_err(TcpError::Connect)
    }

    async fn disconnect(&mut self) {
        self.socket.abort();
        // Lets the RST leave before the socket is reused (a server never
        // told keeps the connection, which counts against its
        // `maxClientCnxns`), but only until a deadline: the RST of a
        // socket whose peer's address never resolves (a server down on
        // the local link) never leaves, and waiting for it stalled the
        // driver for good. One deadline across calls, not a timeout per
        // call: an application driving the session in slices shorter than
        // the wait drops each call, and each would start the wait anew.
        let now = Instant::now();
        if self.rst_until <= now {
            self.rst_until = now + RST_WAIT;
        }
        let _ = with_deadline(self.rst_until, self.socket.flush()).await;
    }
}
