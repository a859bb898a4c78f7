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

use std::io::{Read, Write};
use std::net::{Ipv4Addr, Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;

/// A proxy from a free loopback port to `127.0.0.1:target`.
pub struct Proxy {
    port: u16,
    cut: Arc<AtomicBool>,
    stop: Arc<AtomicBool>,
    live: Arc<Mutex<Vec<TcpStream>>>,
    links: Arc<Links>,
}

/// Which connections are stalled: those numbered below `stalled_below`.
#[derive(Default)]
struct Links {
    opened: AtomicU64,
    stalled_below: AtomicU64,
}

impl Proxy {
    /// Starts proxying to `target_port` on 127.0.0.1.
    pub fn start(target_port: u16) -> Proxy {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("bind the proxy");
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
                for stream in [&client, &server] {
                    if let Ok(clone) = stream.try_clone() {
                        live.push(clone);
                    }
                }
                let number = n.opened.fetch_add(1, Ordering::SeqCst);
                pipe(&client, &server, number, n.clone());
                pipe(&server, &client, number, n.clone());
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

    /// `127.0.0.1:PORT` of the proxy: give this to the client.
    pub fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// Closes every connection and refuses new ones.
    pub fn cut(&self) {
        self.cut.store(true, Ordering::SeqCst);
        for stream in self.live.lock().expect("proxy lock").drain(..) {
            let _ = stream.shutdown(Shutdown::Both);
        }
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

fn pipe(from: &TcpStream, to: &TcpStream, number: u64, links: Arc<Links>) {
    let (Ok(mut from), Ok(mut to)) = (from.try_clone(), to.try_clone()) else {
        return;
    };
    thread::spawn(move || {
        let mut buf = [0u8; 16 * 1024];
        loop {
            match from.read(&mut buf) {
                Ok(0) | Err(_) => break,
                // A stalled link keeps reading so that the sender's writes
                // succeed and it sees no failure, as behind a dead router.
                Ok(_) if number < links.stalled_below.load(Ordering::SeqCst) => {}
                Ok(n) => {
                    if to.write_all(&buf[..n]).is_err() {
                        break;
                    }
                }
            }
        }
        let _ = to.shutdown(Shutdown::Both);
        let _ = from.shutdown(Shutdown::Both);
    });
}
