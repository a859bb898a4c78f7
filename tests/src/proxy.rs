//! A loopback TCP proxy that can cut a client off from its server.
//!
//! Cutting closes every proxied connection and refuses new ones until
//! [`Proxy::restore`]; a client behind it sees the network fail, and if the
//! cut lasts longer than its session timeout, the server expires the
//! session, which the client learns when it reconnects. That is a real
//! expiry, with nothing in the client faked.
//!
//! Stalling ([`Proxy::stall`]) is the half-open link: the connections open at
//! that moment stay open but carry nothing more in either direction, so
//! neither end hears of a failure; the client must notice through its own
//! deadline and reconnect, which new connections let it do.
//!
//! A slow link ([`Proxy::delay`]) holds every chunk of traffic back for a
//! random time in a range, in order (a TCP stream is not reordered), and
//! [`Proxy::reset`] closes the connections open now while still accepting
//! new ones, as a router that drops its state does.
//!
//! A deaf link ([`Proxy::deafen`]) loses what the client sends and still
//! carries what the server sends, as a broken transmit path or an
//! asymmetric route does.
//!
//! A link that fails just after the same request each time
//! ([`Proxy::close_each_after`]) closes each connection once it has passed
//! so many bytes to the server.
//!
//! A forgetful server ([`Proxy::forget_sessions`]) hands out a new session
//! where a reconnecting client asks to resume its own, as ClickHouse Keeper
//! does (ClickHouse#116690): the proxy blanks the session id of each
//! client's handshake, so the real server behind it starts a new session
//! and the old one expires in its own time.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

/// A proxy from a free loopback port to `127.0.0.1:target`.
pub struct Proxy {
    port: u16,
    cut: Arc<AtomicBool>,
    stop: Arc<AtomicBool>,
    /// The client's and the server's stream of each connection.
    live: Arc<Mutex<Vec<(TcpStream, TcpStream)>>>,
    links: Arc<Links>,
}

/// Which connections are stalled (those numbered below `stalled_below`),
/// and how long traffic is held back.
#[derive(Default)]
struct Links {
    opened: AtomicU64,
    stalled_below: AtomicU64,
    /// Connections numbered below this lose what the client sends.
    deaf_below: AtomicU64,
    /// The shortest and longest delay of a chunk, in milliseconds (0, 0:
    /// none).
    delay_ms: Mutex<(u64, u64)>,
    /// Whether handshakes ask for a new session whatever they name.
    forget_sessions: AtomicBool,
    /// Bytes passed on to the server so far, over every connection.
    to_server: AtomicU64,
    /// After how many bytes to the server each connection is closed (0:
    /// never).
    close_after: AtomicU64,
    /// Connections a client reset (sent an RST), as its side of the proxy
    /// read it.
    resets_by_clients: AtomicU64,
    /// Connections numbered below this were closed by the proxy: a client
    /// that answers the close with an RST is not counted.
    closed_below: AtomicU64,
}

impl Links {
    /// When a chunk read now may be passed on.
    fn due(&self) -> Instant {
        let (min, max) = *self.delay_ms.lock().expect("proxy lock");
        Instant::now() + Duration::from_millis(fastrand::u64(min..=max.max(min)))
    }
}

impl Proxy {
    /// Starts proxying to `target_port` on 127.0.0.1.
    pub fn start(target_port: u16) -> Proxy {
        Proxy::start_listening_on(Ipv4Addr::LOCALHOST, target_port)
    }

    /// Starts proxying to `target_port` on 127.0.0.1, listening on
    /// `listen` instead of loopback, as [`Proxy::start`] does otherwise.
    ///
    /// Only for tests running inside a [`Netns`](crate::netns::Netns) they
    /// created (where `0.0.0.0` makes it reachable on the bridge): anywhere
    /// else a non-loopback address would expose it to a real network.
    /// Panics when asked for a non-loopback address outside a namespace.
    pub fn start_listening_on(listen: Ipv4Addr, target_port: u16) -> Proxy {
        assert!(
            listen.is_loopback() || std::env::var_os(crate::netns::INSIDE_ENV).is_some(),
            "a test's proxy listens on {listen} only inside a test's own network namespace"
        );
        let listener = TcpListener::bind((listen, 0)).expect("bind the proxy");
        let port = listener.local_addr().expect("proxy address").port();
        let cut = Arc::new(AtomicBool::new(false));
        let stop = Arc::new(AtomicBool::new(false));
        let live = Arc::new(Mutex::new(Vec::new()));
        let links = Arc::new(Links::default());
        let (c, s, l, n) = (cut.clone(), stop.clone(), live.clone(), links.clone());
        thread::spawn(move || {
            for incoming in listener.incoming() {
                if s.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(client) = incoming else { continue };
                if c.load(Ordering::SeqCst) {
                    drop(client);
                    continue;
                }
                let Ok(server) = TcpStream::connect((Ipv4Addr::LOCALHOST, target_port)) else {
                    continue;
                };
                let mut live = l.lock().expect("proxy lock");
                if let (Ok(to_client), Ok(to_server)) = (client.try_clone(), server.try_clone()) {
                    live.push((to_client, to_server));
                }
                let number = n.opened.fetch_add(1, Ordering::SeqCst);
                pipe(&client, &server, number, n.clone(), true);
                pipe(&server, &client, number, n.clone(), false);
            }
        });
        Proxy {
            port,
            cut,
            stop,
            live,
            links,
        }
    }

    /// Makes every connection open now a half-open link: it stays open, and
    /// whatever either end sends from now on is swallowed. Connections
    /// opened later carry traffic as usual.
    pub fn stall(&self) {
        let opened = self.links.opened.load(Ordering::SeqCst);
        self.links.stalled_below.store(opened, Ordering::SeqCst);
    }

    /// Holds every chunk of traffic, both ways, for between `min` and `max`
    /// before passing it on (in order); `Duration::ZERO` twice for none.
    pub fn delay(&self, min: Duration, max: Duration) {
        *self.links.delay_ms.lock().expect("proxy lock") =
            (min.as_millis() as u64, max.as_millis() as u64);
    }

    /// From now on, every client's handshake asks the server for a new
    /// session, whichever session it names: a reconnecting client is handed
    /// another session than its own, without being told its own is gone.
    pub fn forget_sessions(&self) {
        self.links.forget_sessions.store(true, Ordering::SeqCst);
    }

    /// From now on, closes each connection once it has passed `bytes` to
    /// the server (counted from its opening): a link that fails every time
    /// just after the same request has left, however often the client
    /// reconnects. 0 for never.
    pub fn close_each_after(&self, bytes: u64) {
        self.links.close_after.store(bytes, Ordering::SeqCst);
    }

    /// Closes every connection open now; new ones are accepted.
    pub fn reset(&self) {
        let opened = self.links.opened.load(Ordering::SeqCst);
        self.links.closed_below.store(opened, Ordering::SeqCst);
        for (client, server) in self.live.lock().expect("proxy lock").drain(..) {
            let _ = client.shutdown(Shutdown::Both);
            let _ = server.shutdown(Shutdown::Both);
        }
    }

    /// Sends `bytes` to the client of every connection open now, as if
    /// its server had (a corrupt frame, say). Not in step with what the
    /// server sends: call it while the connections are quiet.
    pub fn send_to_clients(&self, bytes: &[u8]) {
        for (client, _) in self.live.lock().expect("proxy lock").iter() {
            let _ = (&*client).write_all(bytes);
        }
    }

    /// How many bytes the proxy has passed on to the server so far, over
    /// every connection: what tells a test that a request has left (a
    /// delayed link's answer is then still on its way).
    pub fn bytes_to_server(&self) -> u64 {
        self.links.to_server.load(Ordering::SeqCst)
    }

    /// How many connections a client has reset (an RST rather than a
    /// close) that the proxy had not closed itself: a client may answer
    /// the close of [`reset`](Proxy::reset) or [`cut`](Proxy::cut) with an
    /// RST, which is not counted.
    pub fn resets_by_clients(&self) -> u64 {
        self.links.resets_by_clients.load(Ordering::SeqCst)
    }

    /// How many connections the proxy has accepted and passed on so far.
    pub fn connections(&self) -> u64 {
        self.links.opened.load(Ordering::SeqCst)
    }

    /// The port the proxy listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `127.0.0.1:PORT` of the proxy: give this to the client.
    pub fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// Closes every connection and refuses new ones.
    pub fn cut(&self) {
        self.cut.store(true, Ordering::SeqCst);
        self.reset();
    }

    /// Cuts every client off without a word: what is sent on the
    /// connections open now is swallowed (no reset, as when a cable is
    /// pulled) and new connections are refused.
    pub fn silence(&self) {
        self.stall();
        self.cut.store(true, Ordering::SeqCst);
    }

    /// Makes the link one-way on the connections open now: what the
    /// client sends is swallowed (its writes succeed), what the server
    /// sends still reaches it, and new connections are refused. The
    /// server hears nothing more from the client, which keeps hearing the
    /// server's notifications, and its close once it expires the session.
    pub fn deafen(&self) {
        let opened = self.links.opened.load(Ordering::SeqCst);
        self.links.deaf_below.store(opened, Ordering::SeqCst);
        self.cut.store(true, Ordering::SeqCst);
    }

    /// Accepts connections again.
    pub fn restore(&self) {
        self.cut.store(false, Ordering::SeqCst);
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        self.cut();
        // Wake the accept loop so it sees `stop`.
        let _ = TcpStream::connect((Ipv4Addr::LOCALHOST, self.port));
    }
}

/// Where a handshake names the session to resume: after the frame's length
/// (4 bytes), the protocol version (4), the last zxid seen (8) and the
/// timeout (4), the session id (8).
const SESSION_ID: std::ops::Range<usize> = 20..28;

/// Copies `from` to `to` until either closes: one thread reads and stamps
/// each chunk with the moment it may go on, another writes it then, so a
/// delay slows the link without stopping the reads. On the way to the
/// server (`to_server`), a handshake's session id is blanked while the
/// proxy forgets sessions.
fn pipe(from: &TcpStream, to: &TcpStream, number: u64, links: Arc<Links>, to_server: bool) {
    let (Ok(mut from), Ok(mut to)) = (from.try_clone(), to.try_clone()) else {
        return;
    };
    let (chunks, pending) = mpsc::channel::<(Instant, Vec<u8>)>();
    let reader = from.try_clone();
    let counted = links.clone();
    thread::spawn(move || {
        let mut buf = [0u8; 16 * 1024];
        // The due times never go back, so the chunks stay in order.
        let mut last = Instant::now();
        // The handshake's first bytes, held back until its session id is in.
        let mut head = (to_server && links.forget_sessions.load(Ordering::SeqCst)).then(Vec::new);
        loop {
            match from.read(&mut buf) {
                Err(e) if to_server && e.kind() == std::io::ErrorKind::ConnectionReset => {
                    if number >= links.closed_below.load(Ordering::SeqCst) {
                        links.resets_by_clients.fetch_add(1, Ordering::SeqCst);
                    }
                    break;
                }
                Ok(0) | Err(_) => break,
                // A stalled link keeps reading so that the sender's writes
                // succeed and it sees no failure, as behind a dead router.
                Ok(_) if number < links.stalled_below.load(Ordering::SeqCst) => {}
                Ok(_) if to_server && number < links.deaf_below.load(Ordering::SeqCst) => {}
                Ok(n) => {
                    let mut chunk = buf[..n].to_vec();
                    if let Some(mut held) = head.take() {
                        held.extend_from_slice(&chunk);
                        if held.len() < SESSION_ID.end {
                            head = Some(held);
                            continue;
                        }
                        held[SESSION_ID].fill(0);
                        chunk = held;
                    }
                    last = last.max(links.due());
                    if chunks.send((last, chunk)).is_err() {
                        break;
                    }
                }
            }
        }
    });
    thread::spawn(move || {
        let mut passed = 0u64;
        for (due, chunk) in pending {
            thread::sleep(due.saturating_duration_since(Instant::now()));
            if to.write_all(&chunk).is_err() {
                break;
            }
            if to_server {
                counted
                    .to_server
                    .fetch_add(chunk.len() as u64, Ordering::SeqCst);
                passed += chunk.len() as u64;
                let limit = counted.close_after.load(Ordering::SeqCst);
                if limit > 0 && passed >= limit {
                    break;
                }
            }
        }
        // The reader ended (or the writer failed): close both ways, which
        // also ends a reader still blocked on `from`.
        let _ = to.shutdown(Shutdown::Both);
        if let Ok(from) = reader {
            let _ = from.shutdown(Shutdown::Both);
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An echo server on a free loopback port.
    fn echo() -> u16 {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        let port = listener.local_addr().unwrap().port();
        thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { break };
                thread::spawn(move || {
                    let mut buf = [0u8; 4096];
                    while let Ok(n @ 1..) = stream.read(&mut buf) {
                        if stream.write_all(&buf[..n]).is_err() {
                            break;
                        }
                    }
                });
            }
        });
        port
    }

    #[test]
    fn bytes_sent_to_clients_reach_them_as_if_from_the_server() {
        let proxy = Proxy::start(echo());
        let mut client = TcpStream::connect(proxy.addr()).unwrap();
        client.write_all(b"ping").unwrap();
        let mut echoed = [0u8; 4];
        client.read_exact(&mut echoed).unwrap();
        proxy.send_to_clients(b"junk");
        let mut injected = [0u8; 4];
        client.read_exact(&mut injected).unwrap();
        assert_eq!((&echoed, &injected), (b"ping", b"junk"));
    }

    #[test]
    fn a_client_reset_is_counted_and_a_close_or_the_proxy_s_own_is_not() {
        let proxy = Proxy::start(echo());
        let closed = TcpStream::connect(proxy.addr()).unwrap();
        drop(closed);
        let reset = TcpStream::connect(proxy.addr()).unwrap();
        // Closing with unread data makes the kernel send an RST.
        (&reset).write_all(b"echo").unwrap();
        thread::sleep(Duration::from_millis(200));
        drop(reset);
        let deadline = Instant::now() + Duration::from_secs(5);
        while proxy.resets_by_clients() == 0 && Instant::now() < deadline {
            thread::sleep(Duration::from_millis(10));
        }
        thread::sleep(Duration::from_millis(100));
        assert_eq!(proxy.resets_by_clients(), 1);
        // One the proxy closed, which its client then resets.
        let answered = TcpStream::connect(proxy.addr()).unwrap();
        (&answered).write_all(b"echo").unwrap();
        thread::sleep(Duration::from_millis(200));
        proxy.reset();
        drop(answered);
        thread::sleep(Duration::from_millis(200));
        assert_eq!(
            proxy.resets_by_clients(),
            1,
            "the proxy's own close counted"
        );
    }

    #[test]
    #[should_panic(expected = "only inside a test's own network namespace")]
    fn a_proxy_refuses_a_non_loopback_address_outside_a_namespace() {
        // The test binary never runs inside a namespace of its own here.
        assert!(std::env::var_os(crate::netns::INSIDE_ENV).is_none());
        let _ = Proxy::start_listening_on(Ipv4Addr::UNSPECIFIED, echo());
    }

    #[test]
    fn a_slow_link_holds_traffic_back_both_ways_and_keeps_it_in_order() {
        let proxy = Proxy::start(echo());
        proxy.delay(Duration::from_millis(100), Duration::from_millis(100));
        let mut client = TcpStream::connect(proxy.addr()).unwrap();
        let sent = Instant::now();
        client.write_all(b"ping").unwrap();
        let mut buf = [0u8; 4];
        client.read_exact(&mut buf).unwrap();
        assert!(
            sent.elapsed() >= Duration::from_millis(200),
            "{:?}",
            sent.elapsed()
        );
        assert_eq!(&buf, b"ping");
        // Counted once passed on, only towards the server.
        assert_eq!(proxy.bytes_to_server(), 4);

        // Random delays per chunk still deliver the bytes in order.
        proxy.delay(Duration::ZERO, Duration::from_millis(20));
        let message: Vec<u8> = (0..200u8).collect();
        for chunk in message.chunks(10) {
            client.write_all(chunk).unwrap();
            thread::sleep(Duration::from_millis(2));
        }
        let mut back = vec![0u8; message.len()];
        client.read_exact(&mut back).unwrap();
        assert_eq!(back, message);
        assert_eq!(proxy.bytes_to_server(), 4 + 200);
    }

    #[test]
    fn a_connection_is_closed_once_it_passed_the_bytes_asked_and_the_next_too() {
        let proxy = Proxy::start(echo());
        proxy.close_each_after(6);
        for _ in 0..2 {
            let mut client = TcpStream::connect(proxy.addr()).unwrap();
            client.write_all(b"abc").unwrap();
            let mut buf = [0u8; 3];
            client.read_exact(&mut buf).unwrap();
            assert_eq!(&buf, b"abc", "open below the limit");
            client.write_all(b"defgh").unwrap();
            client
                .set_read_timeout(Some(Duration::from_secs(5)))
                .unwrap();
            // Closed: whatever came back before, then the end, not a wait.
            let ended = client.read_to_end(&mut Vec::new());
            assert!(
                !matches!(&ended, Err(e) if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                )),
                "still open: {ended:?}"
            );
        }
        assert_eq!(proxy.connections(), 2);
    }

    #[test]
    fn a_forgetful_server_is_asked_for_a_new_session_whatever_the_handshake_names() {
        let proxy = Proxy::start(echo());
        let handshake: Vec<u8> = (1..=40).collect();
        let mut seen = vec![0u8; handshake.len()];
        let mut before = TcpStream::connect(proxy.addr()).unwrap();
        before.write_all(&handshake).unwrap();
        before.read_exact(&mut seen).unwrap();
        assert_eq!(seen, handshake, "a proxy that remembers passes it on");

        proxy.forget_sessions();
        let mut forgetful = TcpStream::connect(proxy.addr()).unwrap();
        // In pieces, as a socket may deliver it.
        for piece in handshake.chunks(9) {
            forgetful.write_all(piece).unwrap();
            thread::sleep(Duration::from_millis(5));
        }
        forgetful.read_exact(&mut seen).unwrap();
        let mut blanked = handshake.clone();
        blanked[SESSION_ID].fill(0);
        assert_eq!(seen, blanked);
        // Only the handshake: what follows goes through as it is.
        forgetful.write_all(&handshake).unwrap();
        forgetful.read_exact(&mut seen).unwrap();
        assert_eq!(seen, handshake);
    }

    #[test]
    fn a_reset_closes_the_open_connections_and_accepts_new_ones() {
        let proxy = Proxy::start(echo());
        let mut old = TcpStream::connect(proxy.addr()).unwrap();
        old.write_all(b"x").unwrap();
        old.read_exact(&mut [0u8; 1]).unwrap();
        proxy.reset();
        let mut buf = [0u8; 1];
        assert!(matches!(old.read(&mut buf), Ok(0) | Err(_)), "still open");
        let mut new = TcpStream::connect(proxy.addr()).unwrap();
        new.write_all(b"y").unwrap();
        new.read_exact(&mut buf).unwrap();
        assert_eq!(&buf, b"y");
    }
}
