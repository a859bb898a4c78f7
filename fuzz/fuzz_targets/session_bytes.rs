//! A session driven by arbitrary input: the bytes are a script of frames
//! (arbitrary payloads, some dressed as valid replies), clock ticks,
//! connections opening and closing, requests, closes and auth. The
//! session must never panic, and its bookkeeping must stay within bounds.
#![no_main]

use herdless_core::wire::{frame, Action, Event, MultiOp, Op, Session, SessionConfig, State};
use herdless_core::{Acl, CreateMode, Instant, Request, Version};
use libfuzzer_sys::fuzz_target;

const PENDING: usize = 4;

struct Driver {
    session: Session<u8, PENDING, 4, 32>,
    now: u64,
    conn: Option<herdless_core::wire::ConnectionId>,
    tx: [u8; 256],
}

impl Driver {
    fn drain(&mut self) {
        while let Some(action) = self.session.poll_action() {
            match action {
                Action::Connect { server, conn } => {
                    assert!(server < 3);
                    self.conn = Some(conn);
                }
                Action::Close { .. } => {}
            }
        }
        let at = Instant::from_millis(self.now);
        let mut frames = 0;
        while let Ok(Some(n)) = self.session.poll_transmit(&mut self.tx, at) {
            // Every frame written is a whole, well-formed frame.
            let f = frame::split(&self.tx[..n], usize::MAX).unwrap().unwrap();
            assert_eq!(f.consumed, n);
            frames += 1;
            assert!(frames < 64, "poll_transmit must run dry");
        }
        let mut events = 0;
        while let Some(e) = self.session.poll_event() {
            if let Event::Lost(tag) = e {
                assert!(tag < 16);
            }
            events += 1;
            assert!(events < 64, "poll_event must run dry");
        }
        assert!(self.session.pending() <= PENDING);
        if let Some(t) = self.session.poll_timeout() {
            assert!(t.as_millis() >= self.now || self.session.state() != State::Closed);
        }
    }
}

fuzz_target!(|data: &[u8]| {
    // The first byte picks the order the session tries its servers in.
    let (seed, data) = data
        .split_first()
        .map_or((0, data), |(&s, rest)| (u32::from(s), rest));
    let config = SessionConfig::new(3, 6000).with_server_seed(seed);
    let mut d = Driver {
        session: Session::new(config, Instant::from_millis(0)),
        now: 0,
        conn: None,
        tx: [0; 256],
    };
    d.drain();
    let mut rest = data;
    while let Some((&command, tail)) = rest.split_first() {
        rest = tail;
        let at = Instant::from_millis(d.now);
        let conn = d.conn;
        match command % 8 {
            // A frame: a 1-byte length, then that many payload bytes.
            0 | 1 => {
                let Some((&len, tail)) = rest.split_first() else {
                    break;
                };
                let len = usize::from(len).min(tail.len());
                let (payload, tail) = tail.split_at(len);
                rest = tail;
                if let Some(c) = conn {
                    if let Ok(incoming) = d.session.handle_frame(c, payload, at) {
                        if let herdless_core::wire::Incoming::Reply { response, .. } = incoming {
                            if let herdless_core::wire::Response::Children(c) = response {
                                let _ = c.count();
                            }
                        }
                    }
                }
            }
            // A valid connect response, to get past the handshake often.
            2 => {
                let mut frame = [0u8; 37];
                frame[4..8].copy_from_slice(&4000i32.to_be_bytes());
                frame[8..16].copy_from_slice(&0x55i64.to_be_bytes());
                frame[16..20].copy_from_slice(&16i32.to_be_bytes());
                if let Some(c) = conn {
                    let _ = d.session.handle_frame(c, &frame, at);
                }
            }
            3 => {
                let Some((&step, tail)) = rest.split_first() else {
                    break;
                };
                rest = tail;
                d.now += u64::from(step) * 50;
                d.session.handle_timeout(Instant::from_millis(d.now));
            }
            4 => {
                if let Some(c) = conn {
                    d.session.handle_connected(c, at);
                }
            }
            5 => {
                if let Some(c) = conn {
                    d.session.handle_disconnected(c, at);
                }
            }
            6 => {
                let Some((&which, tail)) = rest.split_first() else {
                    break;
                };
                rest = tail;
                const MULTI: [MultiOp<'static>; 2] = [
                    MultiOp::Check {
                        path: "/e",
                        version: Version::Any,
                    },
                    MultiOp::Delete {
                        path: "/f",
                        version: Version::Any,
                    },
                ];
                let op = match which % 8 {
                    0 => Op::Request(Request::GetChildren {
                        path: "/a",
                        watch: true,
                    }),
                    1 => Op::Request(Request::Exists {
                        path: "/b",
                        watch: true,
                    }),
                    2 => Op::Request(Request::GetData {
                        path: "/c",
                        watch: which > 128,
                    }),
                    3 => Op::Request(Request::Create {
                        path: "/d",
                        data: b"x",
                        acl: Acl::OPEN,
                        mode: CreateMode::EphemeralSequential,
                    }),
                    4 => Op::Request(Request::Check {
                        path: "/e",
                        version: Version::Exactly(1),
                    }),
                    5 => Op::Request(Request::Delete {
                        path: "/f",
                        version: Version::Any,
                    }),
                    6 => Op::Multi(&MULTI),
                    _ => Op::Create2 {
                        path: "/g",
                        data: b"",
                        acl: Acl::OPEN,
                        mode: CreateMode::Persistent,
                    },
                };
                let mut buf = [0u8; 128];
                // A recipe's request as the embedded driver sends it, or
                // through the general entry.
                let _ = match op {
                    Op::Request(request) if which & 8 != 0 => {
                        d.session.send_request(which % 16, &request, &mut buf, at)
                    }
                    _ => d.session.send(which % 16, &op, &mut buf, at),
                };
            }
            _ => {
                let Some((&which, tail)) = rest.split_first() else {
                    break;
                };
                rest = tail;
                if which % 4 == 0 {
                    d.session.close(at);
                } else {
                    let _ = d.session.add_auth("digest", b"u:p");
                }
            }
        }
        d.drain();
    }
});
