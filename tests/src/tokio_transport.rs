//! `herdless_embassy::Transport` over tokio's `TcpStream`, so the embedded
//! driver can be tested against real servers on loopback.

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use embedded_io_adapters::tokio_1::FromTokio;
use embedded_io_async::{ErrorType, Read, Write};
use herdless_embassy::Transport;
use tokio::net::TcpStream;

/// Connects to `addrs[server]`; one connection at a time.
pub struct TokioTransport {
    addrs: Vec<String>,
    stream: Option<FromTokio<TcpStream>>,
    /// Connections opened so far.
    pub connects: usize,
    /// Write one byte per call, after a millisecond: frames take long
    /// enough to be cut by a driver call that ends half-way.
    pub trickle: bool,
    /// How long opening a connection takes (a slow network).
    pub connect_delay: std::time::Duration,
    /// Bytes one read hands over at most: small values cut every frame,
    /// header, count and name at every place a slow link would.
    pub max_read: usize,
    /// Reads started so far: a driver that waits starts one per wake-up,
    /// one that polls (a timer always due) thousands a second.
    pub reads: usize,
    /// Reads that brought bytes: the driver fires the timers due after
    /// each, whether or not it fired them in the same millisecond.
    pub reads_done: usize,
    /// Set, the network has gone silent (a route lost, a cable pulled):
    /// reads, writes and connects wait for ever, and bytes that arrive
    /// are never handed over, as on a device whose peer no longer
    /// answers. Shared, so a test can set it while the driver runs.
    pub silent: Arc<AtomicBool>,
    /// Bytes read so far, over every connection.
    pub bytes_read: u64,
    /// Once [`bytes_read`](Self::bytes_read) reaches this count, the
    /// connection breaks (the read fails with `ConnectionReset` and the
    /// stream is dropped) and this is cleared: a test places the break
    /// inside a frame, where a server dying or a link failing would.
    pub break_at: Option<u64>,
    /// The server of each connection broken by `break_at`, in order.
    pub broken: Vec<usize>,
    /// The server of the open connection.
    server: usize,
    /// Set, what the device sends is lost on the way (a one-way failure:
    /// a broken transmit path, an asymmetric route): writes and flushes
    /// succeed but reach nobody, connects wait for ever, and what the
    /// server sends on the open connection still arrives. Shared, so a
    /// test can set it while the driver runs.
    pub deaf: Arc<AtomicBool>,
}

impl TokioTransport {
    /// A transport to the servers at `addrs` (`host:port`), unconnected.
    pub fn new(addrs: Vec<String>) -> Self {
        TokioTransport {
            addrs,
            stream: None,
            connects: 0,
            trickle: false,
            connect_delay: std::time::Duration::ZERO,
            max_read: usize::MAX,
            reads: 0,
            reads_done: 0,
            bytes_read: 0,
            break_at: None,
            broken: Vec::new(),
            server: 0,
            silent: Arc::default(),
            deaf: Arc::default(),
        }
    }

    /// Waits for ever once the network is silent.
    async fn unless_silent(&self) {
        if self.silent.load(Ordering::SeqCst) {
            std::future::pending::<()>().await;
        }
    }

    /// Whether a connection is open.
    pub fn is_open(&self) -> bool {
        self.stream.is_some()
    }

    fn stream(&mut self) -> io::Result<&mut FromTokio<TcpStream>> {
        self.stream
            .as_mut()
            .ok_or_else(|| io::Error::from(io::ErrorKind::NotConnected))
    }
}

impl ErrorType for TokioTransport {
    type Error = io::Error;
}

impl Read for TokioTransport {
    async fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.reads += 1;
        self.unless_silent().await;
        let mut limit = buf.len().min(self.max_read);
        if let Some(at) = self.break_at {
            let left = at.saturating_sub(self.bytes_read);
            if left == 0 {
                self.break_at = None;
                self.stream = None;
                self.broken.push(self.server);
                return Err(io::ErrorKind::ConnectionReset.into());
            }
            limit = limit.min(usize::try_from(left).unwrap_or(usize::MAX));
        }
        let buf = buf.get_mut(..limit).unwrap_or_default();
        let read = self.stream()?.read(buf).await;
        // Bytes that arrive once the network is silent are lost with it.
        self.unless_silent().await;
        if let Ok(n) = read {
            if n > 0 {
                self.reads_done += 1;
            }
            self.bytes_read += n as u64;
        }
        read
    }
}

impl Write for TokioTransport {
    async fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.unless_silent().await;
        if self.deaf.load(Ordering::SeqCst) {
            return Ok(buf.len());
        }
        if self.trickle {
            tokio::time::sleep(std::time::Duration::from_millis(1)).await;
            let one = buf.get(..1).unwrap_or_default();
            return self.stream()?.write(one).await;
        }
        self.stream()?.write(buf).await
    }

    async fn flush(&mut self) -> io::Result<()> {
        self.unless_silent().await;
        if self.deaf.load(Ordering::SeqCst) {
            return Ok(());
        }
        self.stream()?.flush().await
    }
}

impl Transport for TokioTransport {
    async fn connect(&mut self, server: usize) -> io::Result<()> {
        self.stream = None;
        let addr = self
            .addrs
            .get(server)
            .ok_or_else(|| io::Error::from(io::ErrorKind::InvalidInput))?;
        self.unless_silent().await;
        if self.deaf.load(Ordering::SeqCst) {
            // The handshake's first packet never arrives.
            std::future::pending::<()>().await;
        }
        tokio::time::sleep(self.connect_delay).await;
        let stream = TcpStream::connect(addr.as_str()).await?;
        stream.set_nodelay(true)?;
        self.stream = Some(FromTokio::new(stream));
        self.server = server;
        self.connects += 1;
        Ok(())
    }

    async fn disconnect(&mut self) {
        self.stream = None;
    }
}

/// Runs `zk` until `done` holds, failing the test with `what` after
/// `limit`; returns how long it took.
pub async fn drive_until<'a, const K: usize, const W: usize, const WB: usize>(
    zk: &mut herdless_embassy::Zk<'a, TokioTransport, K, W, WB>,
    what: &str,
    limit: std::time::Duration,
    mut done: impl FnMut(&mut herdless_embassy::Zk<'a, TokioTransport, K, W, WB>) -> bool,
) -> std::time::Duration {
    let started = std::time::Instant::now();
    while !done(zk) {
        assert!(started.elapsed() < limit, "{what}");
        zk.run_for(embassy_time::Duration::from_millis(20))
            .await
            .unwrap();
    }
    started.elapsed()
}

/// The embedded driver to `addr` on `rx` and `tx`, asking for a session
/// of `timeout_ms`.
pub fn driver<'a>(
    addr: String,
    rx: &'a mut [u8],
    tx: &'a mut [u8],
    timeout_ms: u32,
) -> herdless_embassy::Zk<'a, TokioTransport> {
    herdless_embassy::Zk::new(
        TokioTransport::new(vec![addr]),
        herdless_embassy::Buffers::new(rx, tx),
        herdless_embassy::wire::SessionConfig::new(1, timeout_ms),
    )
}
