//! Scripted behaviours of the session: a test plays the server and the
//! clock.
#![allow(clippy::indexing_slicing)]

extern crate std;

use std::borrow::ToOwned;
use std::vec::Vec;

use super::*;
use crate::wire::jute::Reader;
use crate::wire::testing::{
    connect_response, empty_reply, notification, payload, reply, sample_stat,
};
use crate::wire::{MultiOp, MultiResult, Op, Response};
use crate::{Acl, CreateMode, Version, WatchKind};

type S = Session<u32, 4, 4, 32>;

const PASSWORD: [u8; 16] = [0xAB; 16];
const SID: i64 = 0x0102_0304_0506_0708;

/// A session driven by hand, with a watch table of `W` watches in `B`
/// bytes (by default that of `S`).
struct Script<const W: usize = 4, const B: usize = 32> {
    s: Session<u32, 4, W, B>,
    now: u64,
    conn: ConnectionId,
}

/// What a client frame says, as a server reads it.
#[derive(Debug, PartialEq)]
struct Connect {
    last_zxid: i64,
    timeout: i32,
    session_id: i64,
    password: Vec<u8>,
    read_only: bool,
}

fn parse_connect(frame: &[u8]) -> Connect {
    let mut r = Reader::new(payload(frame));
    assert_eq!(r.int().unwrap(), 0);
    let c = Connect {
        last_zxid: r.long().unwrap(),
        timeout: r.int().unwrap(),
        session_id: r.long().unwrap(),
        password: r.buffer().unwrap().to_vec(),
        read_only: r.boolean().unwrap(),
    };
    assert!(r.rest().is_empty());
    c
}

/// The (xid, opcode) of a request frame.
fn header(frame: &[u8]) -> (i32, i32) {
    let mut r = Reader::new(payload(frame));
    (r.int().unwrap(), r.int().unwrap())
}

/// The lists of a setWatches frame.
fn parse_set_watches(frame: &[u8]) -> (i64, [Vec<std::string::String>; 3]) {
    let mut r = Reader::new(payload(frame));
    assert_eq!((r.int().unwrap(), r.int().unwrap()), (-8, 101));
    let zxid = r.long().unwrap();
    let mut list = || {
        r.names()
            .unwrap()
            .map(std::string::String::from)
            .collect::<Vec<_>>()
    };
    let lists = [list(), list(), list()];
    (zxid, lists)
}

impl Script {
    fn new(config: SessionConfig) -> Self {
        Self::start(config)
    }

    /// Three servers, 9 s asked for.
    fn three() -> Self {
        Script::new(SessionConfig::new(3, 9000))
    }
}

impl Script<0, 0> {
    /// Three servers, 9 s asked for, and no watch table.
    fn three_without_watch_table() -> Self {
        Self::start(SessionConfig::new(3, 9000))
    }
}

impl<const W: usize, const B: usize> Script<W, B> {
    fn start(config: SessionConfig) -> Self {
        let mut s = Session::new(config, Instant::from_millis(0));
        let conn = match s.poll_action() {
            Some(Action::Connect { server: 0, conn }) => conn,
            other => panic!("{other:?}"),
        };
        assert_eq!(s.poll_action(), None);
        Script { s, now: 0, conn }
    }

    fn at(&self) -> Instant {
        Instant::from_millis(self.now)
    }

    fn advance(&mut self, to: u64) {
        self.now = to;
        self.s.handle_timeout(self.at());
    }

    fn transmit(&mut self) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        let mut buf = [0u8; 512];
        while let Some(n) = self.s.poll_transmit(&mut buf, self.at()).unwrap() {
            out.push(buf[..n].to_vec());
        }
        out
    }

    fn events(&mut self) -> Vec<Event<u32>> {
        core::iter::from_fn(|| self.s.poll_event()).collect()
    }

    fn actions(&mut self) -> Vec<Action> {
        core::iter::from_fn(|| self.s.poll_action()).collect()
    }

    fn frame(&mut self, frame: &[u8]) -> Result<Incoming<'static, u32>, SessionError> {
        // The tests keep the frames alive; leak them to ease borrowing.
        let frame: &'static [u8] = std::boxed::Box::leak(frame.to_vec().into_boxed_slice());
        self.s.handle_frame(self.conn, payload(frame), self.at())
    }

    /// Opens the connection and returns the connect request sent on it.
    fn open(&mut self) -> Connect {
        self.s.handle_connected(self.conn, self.at());
        let frames = self.transmit();
        assert_eq!(
            frames.len(),
            1,
            "only the connect request before its answer"
        );
        parse_connect(&frames[0])
    }

    /// Opens the connection and completes the handshake.
    fn establish(&mut self, negotiated: i32) -> Connect {
        let sent = self.open();
        assert!(matches!(
            self.frame(&connect_response(negotiated, SID, &PASSWORD, false)),
            Ok(Incoming::Nothing)
        ));
        assert_eq!(self.s.state(), State::Connected { read_only: false });
        sent
    }

    /// The connection is lost; returns the server of the next attempt.
    fn drop_connection(&mut self) -> usize {
        self.s.handle_disconnected(self.conn, self.at());
        self.next_attempt()
    }

    fn next_attempt(&mut self) -> usize {
        let mut server = None;
        for action in self.actions() {
            if let Action::Connect { server: s, conn } = action {
                self.conn = conn;
                server = Some(s);
            }
        }
        server.expect("a new connection asked for")
    }

    /// Sends `op` and returns the session's answer, refusals included: a
    /// recipe's request through `send_request`, as the embedded driver
    /// sends it, anything else through `send`.
    fn try_send(&mut self, tag: u32, op: Op<'_>) -> Result<usize, SendError> {
        let mut buf = [0u8; 512];
        self.try_send_into(tag, op, &mut buf)
    }

    fn try_send_into(&mut self, tag: u32, op: Op<'_>, buf: &mut [u8]) -> Result<usize, SendError> {
        match op {
            Op::Request(request) => self.s.send_request(tag, &request, buf, self.at()),
            _ => self.s.send(tag, &op, buf, self.at()),
        }
    }

    fn send(&mut self, tag: u32, op: Op<'_>) -> i32 {
        let mut buf = [0u8; 512];
        let n = self.try_send_into(tag, op, &mut buf).unwrap();
        header(&buf[..n]).0
    }
}

#[test]
fn handshake_asks_for_a_new_session_and_waits_for_the_answer() {
    let mut t = Script::new(SessionConfig::new(1, 9000).with_read_only(true));
    assert_eq!(t.s.state(), State::Connecting);
    let mut buf = [0u8; 64];
    assert_eq!(
        t.s.send(
            1,
            &Op::Request(Request::Sync { path: "/" }),
            &mut buf,
            t.at()
        ),
        Err(SendError::NotConnected)
    );
    let sent = t.open();
    assert_eq!(
        sent,
        Connect {
            last_zxid: 0,
            timeout: 9000,
            session_id: 0,
            password: std::vec![0; 16],
            read_only: true
        }
    );
    assert!(
        !t.s.can_send(),
        "nothing pipelined behind the connect request"
    );
    t.frame(&connect_response(6000, SID, &PASSWORD, true))
        .unwrap();
    assert_eq!(t.s.state(), State::Connected { read_only: true });
    assert_eq!(t.s.session_id(), SID);
    assert_eq!(t.s.negotiated_timeout_ms(), 6000);
    assert_eq!(
        t.events(),
        [Event::Session(SessionEvent::Connected { session_id: SID })]
    );
    assert!(t.s.can_send());
}

#[test]
fn replies_come_back_in_fifo_order_with_their_tags_and_decoded_by_kind() {
    let mut t = Script::three();
    t.establish(9000);
    let a = t.send(
        10,
        Op::Request(Request::Create {
            path: "/a",
            data: b"",
            acl: Acl::OPEN,
            mode: CreateMode::Persistent,
        }),
    );
    let b = t.send(
        11,
        Op::Request(Request::GetChildren {
            path: "/a",
            watch: false,
        }),
    );
    assert_eq!((a, b), (1, 2));
    assert_eq!(t.s.pending(), 2);
    match t.frame(&reply(a, 100, 0, |w| w.ustring("/a"))) {
        Ok(Incoming::Reply {
            tag: 10,
            response: Response::Created { path: "/a" },
        }) => {}
        other => panic!("{other:?}"),
    }
    // A notification may come between any two replies.
    match t.frame(&notification(4, "/a")) {
        Ok(Incoming::Watch(e)) => {
            assert_eq!((e.kind, e.path), (WatchKind::NodeChildrenChanged, "/a"))
        }
        other => panic!("{other:?}"),
    }
    let children = reply(b, 101, 0, |w| {
        w.int(1);
        w.ustring("x")
    });
    match t.frame(&children) {
        Ok(Incoming::Reply {
            tag: 11,
            response: Response::Children(c),
        }) => {
            assert_eq!(c.collect::<Vec<_>>(), ["x"])
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(t.s.last_zxid(), 101);
    assert_eq!(t.s.pending(), 0);
}

#[test]
fn a_reply_out_of_order_drops_the_connection() {
    let mut t = Script::three();
    t.establish(9000);
    t.send(1, Op::Request(Request::Sync { path: "/" }));
    let old = t.conn;
    assert_eq!(
        t.frame(&empty_reply(7, 1, 0)).err(),
        Some(SessionError::XidOutOfOrder {
            expected: Some(1),
            got: 7
        })
    );
    assert_eq!(t.s.poll_action(), Some(Action::Close { conn: old }));
    assert_eq!(t.next_attempt(), 1);
    assert_eq!(
        t.events(),
        [
            Event::Session(SessionEvent::Connected { session_id: SID }),
            Event::Lost(1),
            Event::Session(SessionEvent::Suspended)
        ]
    );
    // The old connection is forgotten: its frames and its end are ignored.
    let late = empty_reply(1, 1, 0);
    assert!(matches!(
        t.s.handle_frame(old, payload(&late), t.at()),
        Ok(Incoming::Nothing)
    ));
    t.s.handle_disconnected(old, t.at());
    assert_eq!(t.actions(), []);
}

#[test]
fn a_reply_nobody_waits_for_drops_the_connection_not_the_session() {
    let mut t = Script::three();
    t.establish(9000);
    t.events();
    let old = t.conn;
    // No request pending and no close sent: the reply answers nothing.
    assert_eq!(
        t.frame(&empty_reply(5, 1, 0)).err(),
        Some(SessionError::XidOutOfOrder {
            expected: None,
            got: 5
        })
    );
    assert_eq!(t.s.poll_action(), Some(Action::Close { conn: old }));
    assert_eq!(t.next_attempt(), 1);
    assert_eq!(t.s.state(), State::Connecting);
    assert_eq!(t.events(), [Event::Session(SessionEvent::Suspended)]);
}

#[test]
fn a_malformed_reply_is_a_typed_error_and_its_request_is_lost() {
    let mut t = Script::three();
    t.establish(9000);
    t.events();
    t.send(
        5,
        Op::Request(Request::GetData {
            path: "/a",
            watch: false,
        }),
    );
    let truncated = reply(1, 1, 0, |w| w.buffer(b"abc"));
    assert_eq!(
        t.frame(&truncated).err(),
        Some(SessionError::Decode(crate::wire::DecodeError::Truncated))
    );
    assert_eq!(
        t.events(),
        [Event::Lost(5), Event::Session(SessionEvent::Suspended)]
    );
}

#[test]
fn pings_after_a_third_of_the_timeout_one_at_a_time() {
    let mut t = Script::three();
    t.establish(9000);
    assert_eq!(t.s.poll_timeout(), Some(Instant::from_millis(3000)));
    t.advance(2999);
    assert!(t.transmit().is_empty());
    t.advance(3000);
    // Due, not yet sent: the timer is no longer the ping's, which has
    // passed (a driver would spin on it), but the dead line.
    assert_eq!(t.s.poll_timeout(), Some(Instant::from_millis(6000)));
    let frames = t.transmit();
    assert_eq!(frames.len(), 1);
    assert_eq!(header(&frames[0]), (-2, 11));
    assert!(t.s.ping_in_flight());
    // Unanswered: no second ping; the next deadline is the dead line.
    assert_eq!(t.s.poll_timeout(), Some(Instant::from_millis(6000)));
    t.advance(5999);
    assert!(t.transmit().is_empty());
    t.frame(&empty_reply(-2, 0, 0)).unwrap();
    assert!(!t.s.ping_in_flight());
    assert_eq!(t.s.poll_timeout(), Some(Instant::from_millis(6000)));
    t.advance(6000);
    assert_eq!(t.transmit().len(), 1);
}

#[test]
fn a_request_sent_puts_the_ping_off() {
    let mut t = Script::three();
    t.establish(9000);
    t.now = 2000;
    t.send(1, Op::Request(Request::Sync { path: "/" }));
    assert_eq!(t.s.poll_timeout(), Some(Instant::from_millis(5000)));
    t.advance(4000);
    assert!(t.transmit().is_empty());
}

#[test]
fn silence_for_two_thirds_of_the_timeout_kills_the_connection() {
    let mut t = Script::three();
    t.establish(9000);
    t.events();
    t.advance(3000);
    t.transmit();
    let old = t.conn;
    t.advance(6000);
    assert_eq!(t.s.poll_action(), Some(Action::Close { conn: old }));
    assert_eq!(t.next_attempt(), 1);
    assert_eq!(t.events(), [Event::Session(SessionEvent::Suspended)]);
    assert!(!t.s.ping_in_flight());
}

#[test]
fn resumes_on_the_next_server_with_id_password_and_last_zxid() {
    let mut t = Script::three();
    t.establish(9000);
    t.send(1, Op::Request(Request::Sync { path: "/" }));
    t.frame(&reply(1, 0x42, 0, |w| w.ustring("/"))).unwrap();
    t.now = 100;
    assert_eq!(t.drop_connection(), 1);
    assert_eq!(t.s.state(), State::Connecting);
    let sent = t.open();
    assert_eq!(
        sent,
        Connect {
            last_zxid: 0x42,
            timeout: 9000,
            session_id: SID,
            password: PASSWORD.to_vec(),
            read_only: false
        }
    );
    // Server 1 refuses silently; server 2 takes it.
    assert_eq!(t.drop_connection(), 2);
    t.open();
    t.frame(&connect_response(9000, SID, &PASSWORD, false))
        .unwrap();
    assert_eq!(
        t.events(),
        [
            Event::Session(SessionEvent::Connected { session_id: SID }),
            Event::Session(SessionEvent::Suspended),
            Event::Session(SessionEvent::Connected { session_id: SID }),
        ]
    );
    assert_eq!(t.s.server(), 2);
}

#[test]
fn a_malformed_handshake_answer_tries_the_next_server() {
    let mut t = Script::three();
    t.open();
    let old = t.conn;
    // A connect response cut short, for a new session.
    assert!(matches!(
        t.frame(&[0, 0, 0, 3, 0, 0, 0]),
        Err(SessionError::Decode(_))
    ));
    assert_eq!(t.s.poll_action(), Some(Action::Close { conn: old }));
    assert_eq!(t.next_attempt(), 1);
    t.establish(9000);
    // And again while resuming it: the session is not given up.
    t.now = 100;
    assert_eq!(t.drop_connection(), 2);
    t.open();
    assert!(matches!(
        t.frame(&[0, 0, 0, 3, 0, 0, 0]),
        Err(SessionError::Decode(_))
    ));
    assert_eq!(t.next_attempt(), 0);
    assert_eq!(t.s.state(), State::Connecting);
    t.open();
    t.frame(&connect_response(9000, SID, &PASSWORD, false))
        .unwrap();
    assert_eq!(t.s.state(), State::Connected { read_only: false });
}

#[test]
fn the_frame_limit_is_the_configured_one() {
    let at = Instant::from_millis(0);
    let s = S::new(SessionConfig::new(1, 9000), at);
    assert_eq!(s.max_frame(), DEFAULT_MAX_FRAME);
    let s = S::new(SessionConfig::new(1, 9000).with_max_frame(4096), at);
    assert_eq!(s.max_frame(), 4096);
}

#[test]
fn a_frame_read_through_is_bounded_only_once_established() {
    let mut t = Script::new(SessionConfig::new(1, 9000).with_max_frame(4096));
    assert_eq!(t.s.max_large_frame(), 4096, "before any connection");
    t.open();
    assert_eq!(t.s.max_large_frame(), 4096, "during the handshake");
    t.frame(&connect_response(9000, SID, &PASSWORD, false))
        .unwrap();
    assert_eq!(t.s.max_large_frame(), i32::MAX as usize);
    t.s.close(t.at());
    assert_eq!(t.s.max_large_frame(), i32::MAX as usize, "while closing");
    t.s.handle_disconnected(t.conn, t.at());
    assert_eq!(t.s.max_large_frame(), 4096, "after the connection");
}

#[test]
fn every_server_failing_pauses_before_the_next_round() {
    let mut t = Script::new(SessionConfig::new(2, 9000).with_retry_delay_ms(500));
    assert_eq!(t.drop_connection(), 1);
    t.s.handle_disconnected(t.conn, t.at());
    assert_eq!(t.actions(), []);
    assert_eq!(t.s.poll_timeout(), Some(Instant::from_millis(500)));
    t.advance(499);
    assert_eq!(t.actions(), []);
    t.advance(500);
    assert_eq!(t.next_attempt(), 0);
}

/// A device's seed picks its first server and its order through the
/// rest; a round still tries each server once before the pause.
#[test]
fn a_seeded_session_tries_the_servers_in_its_own_order() {
    // Five servers, seed 5·3 + 2: server 2 first, then a step of 1 + 3.
    let config = SessionConfig::new(5, 9000)
        .with_retry_delay_ms(500)
        .with_server_seed(5 * 3 + 2);
    let mut s = S::new(config, Instant::from_millis(0));
    let attempt = |s: &mut S, at: u64| match s.poll_action() {
        Some(Action::Connect { server, conn }) => {
            s.handle_disconnected(conn, Instant::from_millis(at));
            Some(server)
        }
        None => None,
        other => panic!("{other:?}"),
    };
    let round: Vec<_> = core::iter::from_fn(|| attempt(&mut s, 0)).collect();
    assert_eq!(round, [2, 1, 0, 4, 3]);
    assert_eq!(s.poll_timeout(), Some(Instant::from_millis(500)));
    s.handle_timeout(Instant::from_millis(500));
    assert_eq!(attempt(&mut s, 500), Some(2), "the next round as the first");
}

#[test]
fn a_connection_attempt_that_hangs_is_given_up() {
    let mut t = Script::three();
    // 9 s over 3 servers: 3 s per attempt.
    assert_eq!(t.s.poll_timeout(), Some(Instant::from_millis(3000)));
    let first = t.conn;
    t.advance(2999);
    assert_eq!(t.actions(), [], "not given up before its time");
    t.advance(3000);
    assert_eq!(t.s.poll_action(), Some(Action::Close { conn: first }));
    assert_eq!(t.next_attempt(), 1);
    // A handshake with no answer too.
    t.open();
    let second = t.conn;
    t.advance(5999);
    assert_eq!(t.actions(), [], "not given up before its time");
    t.advance(6000);
    assert_eq!(t.s.poll_action(), Some(Action::Close { conn: second }));
    assert_eq!(t.next_attempt(), 2);
}

#[test]
fn the_server_saying_expired_ends_the_session_and_a_new_one_starts() {
    let mut t = Script::three();
    t.establish(9000);
    t.send(3, Op::Request(Request::Sync { path: "/" }));
    t.drop_connection();
    t.open();
    let old = t.conn;
    t.frame(&connect_response(0, 0, &[0; 16], false)).unwrap();
    assert_eq!(t.s.poll_action(), Some(Action::Close { conn: old }));
    assert_eq!(
        t.events(),
        [
            Event::Session(SessionEvent::Connected { session_id: SID }),
            Event::Lost(3),
            Event::Session(SessionEvent::Suspended),
            Event::Session(SessionEvent::Expired),
        ]
    );
    t.next_attempt();
    let sent = t.open();
    assert_eq!(
        (sent.session_id, sent.password, sent.last_zxid),
        (0, std::vec![0; 16], 0)
    );
    t.frame(&connect_response(9000, SID + 1, &PASSWORD, false))
        .unwrap();
    assert_eq!(
        t.events(),
        [Event::Session(SessionEvent::Connected {
            session_id: SID + 1
        })]
    );
}

#[test]
fn a_resume_answered_with_another_session_is_the_old_ones_expiry() {
    let mut t = Script::three();
    t.establish(9000);
    three_watches(&mut t);
    t.drop_connection();
    t.events();
    t.open();
    t.frame(&connect_response(9000, SID + 1, &PASSWORD, false))
        .unwrap();
    assert_eq!(
        t.events(),
        [
            Event::Session(SessionEvent::Expired),
            Event::Session(SessionEvent::Connected {
                session_id: SID + 1
            }),
        ]
    );
    // The old session's watches are not carried to the new one.
    assert_eq!(t.s.watches().count(), 0);
    assert!(t.transmit().is_empty());
}

#[test]
fn expiry_without_renewal_is_final() {
    let mut t = Script::new(SessionConfig::new(1, 9000).with_renew_after_expiry(false));
    t.establish(9000);
    t.drop_connection();
    t.open();
    // Only the timeout says it: enough.
    t.frame(&connect_response(0, SID, &[0; 16], false)).unwrap();
    assert_eq!(t.s.state(), State::Expired);
    assert_eq!(t.actions(), [Action::Close { conn: t.conn }]);
    assert_eq!(t.s.poll_timeout(), None);
}

#[test]
fn a_resume_answered_with_another_session_without_renewal_is_final() {
    let mut t = Script::new(SessionConfig::new(1, 9000).with_renew_after_expiry(false));
    t.establish(9000);
    t.drop_connection();
    t.events();
    t.open();
    t.frame(&connect_response(9000, SID + 1, &PASSWORD, false))
        .unwrap();
    assert_eq!(t.events(), [Event::Session(SessionEvent::Expired)]);
    assert_eq!(t.s.state(), State::Expired);
    assert_eq!(t.actions(), [Action::Close { conn: t.conn }]);
    assert_eq!(t.s.poll_timeout(), None);
}

#[test]
fn no_server_reachable_within_the_timeout_expires_locally() {
    let mut t = Script::new(SessionConfig::new(2, 9000).with_retry_delay_ms(1000));
    t.establish(6000);
    t.advance(2000); // a third of the timeout without sending
    assert_eq!(t.transmit().len(), 1, "a ping");
    t.now = 2300;
    // The server had heard from us at 2000, when the ping it answers left.
    t.frame(&empty_reply(-2, 0, 0)).unwrap();
    t.events();
    t.drop_connection();
    assert_eq!(t.events(), [Event::Session(SessionEvent::Suspended)]);
    // Every attempt fails at once, round after round, until the session
    // cannot have survived.
    let mut attempts = 0;
    loop {
        while let Phase::Opening { .. } = t.s.phase {
            for action in t.actions() {
                if let Action::Connect { conn, .. } = action {
                    t.conn = conn;
                }
            }
            attempts += 1;
            t.s.handle_disconnected(t.conn, t.at());
        }
        let events = t.events();
        if !events.is_empty() {
            assert_eq!(events, [Event::Session(SessionEvent::Expired)]);
            break;
        }
        let next = t.s.poll_timeout().unwrap().as_millis();
        assert!(next <= 7700, "no expiry by 7700");
        t.advance(next);
    }
    assert_eq!(
        t.now, 7700,
        "presumed expired a twentieth of the timeout before the server can have expired it"
    );
    assert!(attempts >= 6, "kept trying every server: {attempts}");
    assert_eq!(t.s.session_id(), 0);
}

#[test]
fn local_expiry_is_exact_at_the_deadline() {
    let mut t = Script::new(SessionConfig::new(1, 9000).with_retry_delay_ms(60_000));
    t.establish(6000);
    t.events();
    t.drop_connection();
    t.s.handle_disconnected(t.conn, t.at()); // the only server is down
    assert_eq!(t.s.poll_timeout(), Some(Instant::from_millis(5700)));
    t.advance(5699);
    assert_eq!(t.events(), [Event::Session(SessionEvent::Suspended)]);
    t.advance(5700);
    assert_eq!(t.events(), [Event::Session(SessionEvent::Expired)]);
    // Renewal: a new session is attempted at once.
    assert_eq!(t.next_attempt(), 0);
    assert_eq!(t.open().session_id, 0);
}

/// Plays a server that has heard nothing from the client since
/// `heard_at`, one timeout of whose clock can expire the session: drives
/// the session (whose every new connection fails) until that moment, and
/// returns when it was suspended and when it was presumed expired.
fn suspended_and_expired_before_the_server_can_expire(
    t: &mut Script,
    heard_at: u64,
    timeout: u64,
) -> (u64, u64) {
    let server_may_expire = heard_at + timeout;
    let (mut suspended, mut expired) = (None, None);
    while t.now < server_may_expire && expired.is_none() {
        let next = t.s.poll_timeout().unwrap().as_millis();
        t.advance(next.min(server_may_expire));
        loop {
            for event in t.events() {
                match event {
                    Event::Session(SessionEvent::Suspended) => suspended = Some(t.now),
                    Event::Session(SessionEvent::Expired) => expired = Some(t.now),
                    _ => {}
                }
            }
            let Phase::Opening { .. } = t.s.phase else {
                break;
            };
            t.next_attempt();
            t.s.handle_disconnected(t.conn, t.at());
        }
    }
    let suspended = suspended.expect("suspended before the server can expire the session");
    let expired = expired.expect("presumed expired before the server can expire the session");
    assert!(expired < server_may_expire);
    (suspended, expired)
}

/// On a link that loses what the client sends, notifications still come:
/// the server sends them whatever it last heard from the client, so they
/// must not put off the read timeout or the local expiry past the moment
/// the server can expire the session (one timeout after the last ping
/// that reached it). A lock holder would otherwise work on beside the
/// next one.
#[test]
fn notifications_do_not_keep_alive_a_session_the_server_no_longer_hears() {
    let mut t = Script::new(SessionConfig::new(1, 9000).with_retry_delay_ms(500));
    t.establish(6000);
    t.send(1, watched_read("/w"));
    t.now = 10;
    t.frame(&data_reply(1, 5)).unwrap();
    t.advance(2010);
    assert_eq!(t.transmit().len(), 1, "a ping, which reaches the server");
    t.now = 2020;
    t.frame(&empty_reply(-2, 5, 0)).unwrap();
    t.events();
    // From here on nothing the client sends arrives: the next ping is
    // lost, but a notification comes at 4500.
    t.advance(4010);
    assert_eq!(t.transmit().len(), 1, "the next ping, lost");
    t.now = 4500;
    t.frame(&notification(2, "/w")).unwrap();
    let (suspended, expired) =
        suspended_and_expired_before_the_server_can_expire(&mut t, 2010, 6000);
    assert_eq!((suspended, expired), (6010, 7710));
}

/// A reply held up behind a slow write arrives long after the server heard
/// the request, and a ping sent meanwhile may have been the last thing to
/// reach it: the server's clock restarted when that ping arrived, not
/// when the reply did. Counting from the reply's arrival would put the
/// presumed expiry after the server's.
#[test]
fn a_late_reply_counts_from_when_its_request_was_sent() {
    let mut t = Script::new(SessionConfig::new(1, 9000).with_retry_delay_ms(500));
    t.establish(6000);
    t.now = 1000;
    t.send(
        1,
        Op::Request(Request::Create {
            path: "/slow",
            data: b"",
            acl: Acl::OPEN,
            mode: CreateMode::Persistent,
        }),
    );
    t.advance(3000);
    assert_eq!(t.transmit().len(), 1, "a ping, which reaches the server");
    // The create's answer comes at 3500, the ping's never.
    t.now = 3500;
    t.frame(&reply(1, 7, 0, |w| w.ustring("/slow"))).unwrap();
    t.events();
    let (suspended, expired) =
        suspended_and_expired_before_the_server_can_expire(&mut t, 1000, 6000);
    assert_eq!((suspended, expired), (5000, 6700));
}

#[test]
fn a_request_sent_as_an_op_or_on_its_own_is_the_same_frame_and_record() {
    let requests = [
        Request::Exists {
            path: "/e",
            watch: true,
        },
        Request::GetChildren {
            path: "/c",
            watch: true,
        },
        Request::Check {
            path: "/k",
            version: Version::Exactly(3),
        },
    ];
    let mut as_op = Script::new(SessionConfig::new(1, 9000));
    let mut alone = Script::new(SessionConfig::new(1, 9000));
    for t in [&mut as_op, &mut alone] {
        t.establish(9000);
    }
    for (tag, request) in (1..).zip(requests) {
        let (mut a, mut b) = ([0u8; 128], [0u8; 128]);
        let n = as_op.s.send(tag, &Op::Request(request), &mut a, as_op.at());
        let m = alone.s.send_request(tag, &request, &mut b, alone.at());
        assert_eq!(n, m);
        let n = n.unwrap();
        assert_eq!(a[..n], b[..n], "{request:?}");
    }
    // The same watches come of the same answers, and the same replies.
    for t in [&mut as_op, &mut alone] {
        t.frame(&empty_reply(1, 10, ZkError::NoNode.code()))
            .unwrap();
        t.frame(&reply(2, 11, 0, |w| {
            w.int(0);
            Ok(())
        }))
        .unwrap();
    }
    let watches = |t: &Script| {
        t.s.watches()
            .map(|(c, p)| (c, p.to_owned()))
            .collect::<Vec<_>>()
    };
    assert_eq!(watches(&as_op), watches(&alone));
    assert_eq!(
        watches(&alone),
        [
            (WatchClass::Exist, "/e".to_owned()),
            (WatchClass::Child, "/c".to_owned())
        ]
    );
}

#[test]
fn create2_and_multi_answers_are_decoded_once_sent() {
    let mut t = Script::new(SessionConfig::new(1, 9000));
    t.establish(9000);
    let ops = [
        MultiOp::Check {
            path: "/k",
            version: Version::Any,
        },
        MultiOp::Delete {
            path: "/d",
            version: Version::Any,
        },
    ];
    let multi = t.send(1, Op::Multi(&ops));
    let create2 = t.send(
        2,
        Op::Create2 {
            path: "/c",
            data: b"",
            acl: Acl::OPEN,
            mode: CreateMode::Persistent,
        },
    );
    let answer = t.frame(&reply(multi, 10, 0, |w| {
        for kind in [13, 2] {
            w.int(kind);
            w.boolean(false);
            w.int(0);
        }
        w.int(-1);
        w.boolean(true);
        w.int(-1);
        Ok(())
    }));
    let Ok(Incoming::Reply {
        tag: 1,
        response: Response::Multi(results),
    }) = answer
    else {
        panic!("{answer:?}");
    };
    assert_eq!(
        results.iter().collect::<Vec<_>>(),
        [MultiResult::Checked, MultiResult::Deleted]
    );
    let answer = t.frame(&reply(create2, 11, 0, |w| {
        w.ustring("/c")?;
        w.stat(&sample_stat());
        Ok(())
    }));
    assert!(
        matches!(
            answer,
            Ok(Incoming::Reply {
                tag: 2,
                response: Response::Created2 { path: "/c", .. }
            })
        ),
        "{answer:?}"
    );
}

/// A getData that sets a data watch on `path`.
fn watched_read(path: &str) -> Op<'_> {
    Op::Request(Request::GetData { path, watch: true })
}

/// A getData's answer: one byte of data and a stat.
fn data_reply(xid: i32, zxid: i64) -> Vec<u8> {
    reply(xid, zxid, 0, |w| {
        w.buffer(b"v")?;
        w.stat(&sample_stat());
        Ok(())
    })
}

/// Sets a data watch on /d, a creation watch on /e and a child watch on /c.
fn three_watches<const W: usize, const B: usize>(t: &mut Script<W, B>) {
    let d = t.send(1, watched_read("/d"));
    let e = t.send(
        2,
        Op::Request(Request::Exists {
            path: "/e",
            watch: true,
        }),
    );
    let c = t.send(
        3,
        Op::Request(Request::GetChildren {
            path: "/c",
            watch: true,
        }),
    );
    t.frame(&data_reply(d, 50)).unwrap();
    t.frame(&empty_reply(e, 51, ZkError::NoNode.code()))
        .unwrap();
    t.frame(&reply(c, 52, 0, |w| {
        w.int(0);
        Ok(())
    }))
    .unwrap();
}

#[test]
fn watches_are_re_armed_after_a_resume_relative_to_the_last_zxid() {
    let mut t = Script::three();
    t.establish(9000);
    three_watches(&mut t);
    let mut watches = t.s.watches().collect::<Vec<_>>();
    watches.sort_by_key(|(_, p)| *p);
    assert_eq!(
        watches,
        [
            (WatchClass::Child, "/c"),
            (WatchClass::Data, "/d"),
            (WatchClass::Exist, "/e")
        ]
    );
    t.drop_connection();
    t.open();
    t.frame(&connect_response(9000, SID, &PASSWORD, false))
        .unwrap();
    let mut buf = [0u8; 256];
    assert_eq!(
        t.s.send(
            9,
            &Op::Request(Request::Sync { path: "/" }),
            &mut buf,
            t.at()
        ),
        Err(SendError::Busy)
    );
    let frames = t.transmit();
    assert_eq!(frames.len(), 1);
    let (zxid, lists) = parse_set_watches(&frames[0]);
    assert_eq!(zxid, 52);
    assert_eq!(lists, [std::vec!["/d"], std::vec!["/e"], std::vec!["/c"]]);
    assert!(t.s.can_send());
    // The catch-up notification, then the setWatches reply.
    t.frame(&notification(1, "/e")).unwrap();
    t.frame(&empty_reply(-8, 60, 0)).unwrap();
    assert_eq!(t.s.last_zxid(), 60);
    assert_eq!(t.s.watches().count(), 2);
}

#[test]
fn a_session_without_a_watch_table_sets_watches_but_not_again_after_a_resume() {
    let mut t = Script::three_without_watch_table();
    t.establish(9000);
    // Each request still asks the server for its watch (its last byte),
    // and each answer is read as ever.
    let mut buf = [0u8; 64];
    let n = t.try_send_into(7, watched_read("/w"), &mut buf).unwrap();
    assert_eq!(buf[n - 1], 1, "the watch flag");
    let w = header(&buf[..n]).0;
    t.frame(&data_reply(w, 40)).unwrap();
    three_watches(&mut t);
    assert_eq!(t.s.watches().count(), 0, "none kept");
    // A notification fires as ever.
    match t.frame(&notification(3, "/d")) {
        Ok(Incoming::Watch(e)) => assert_eq!((e.kind, e.path), (WatchKind::NodeDataChanged, "/d")),
        other => panic!("{other:?}"),
    }
    // Resumed: no setWatches, and requests go at once.
    t.drop_connection();
    t.open();
    t.frame(&connect_response(9000, SID, &PASSWORD, false))
        .unwrap();
    assert!(t.transmit().is_empty());
    assert!(t.s.can_send());
    assert!(t.events().iter().any(|e| matches!(
        e,
        Event::Session(SessionEvent::Connected { session_id: SID })
    )));
}

#[test]
fn notifications_spend_the_watches_they_fire() {
    let mut t = Script::three();
    t.establish(9000);
    three_watches(&mut t);
    t.frame(&notification(3, "/d")).unwrap();
    t.frame(&notification(4, "/c")).unwrap();
    assert_eq!(
        t.s.watches().collect::<Vec<_>>(),
        [(WatchClass::Exist, "/e")]
    );
    t.frame(&notification(2, "/e")).unwrap();
    assert_eq!(t.s.watches().count(), 0);
    // Nothing to re-arm: no setWatches after a resume.
    t.drop_connection();
    t.open();
    t.frame(&connect_response(9000, SID, &PASSWORD, false))
        .unwrap();
    assert!(t.transmit().is_empty());
}

#[test]
fn a_reply_settles_its_own_requests_watch_when_the_table_has_moved() {
    let mut t = Script::three();
    t.establish(9000);
    let a = t.send(1, watched_read("/a"));
    t.frame(&data_reply(a, 5)).unwrap();
    let b = t.send(2, watched_read("/b"));
    let c = t.send(3, watched_read("/c"));
    // /a fires and leaves the table, which puts /c's entry before /b's.
    t.frame(&notification(3, "/a")).unwrap();
    t.frame(&empty_reply(b, 6, ZkError::NoNode.code())).unwrap();
    t.frame(&data_reply(c, 7)).unwrap();
    assert_eq!(
        t.s.watches().collect::<Vec<_>>(),
        [(WatchClass::Data, "/c")]
    );
}

#[test]
fn a_failed_watching_read_sets_no_watch_and_duplicates_count_once() {
    let mut t = Script::three();
    t.establish(9000);
    let a = t.send(1, watched_read("/gone"));
    t.frame(&empty_reply(a, 5, ZkError::NoNode.code())).unwrap();
    assert_eq!(t.s.watches().count(), 0);
    for _ in 0..2 {
        let x = t.send(
            2,
            Op::Request(Request::Exists {
                path: "/x",
                watch: true,
            }),
        );
        t.frame(&reply(x, 6, 0, |w| {
            w.stat(&sample_stat());
            Ok(())
        }))
        .unwrap();
    }
    assert_eq!(
        t.s.watches().collect::<Vec<_>>(),
        [(WatchClass::Data, "/x")]
    );
}

#[test]
fn set_watches_is_split_to_fit_the_buffer() {
    let mut t = Script::three();
    t.establish(9000);
    three_watches(&mut t);
    t.drop_connection();
    t.open();
    t.frame(&connect_response(9000, SID, &PASSWORD, false))
        .unwrap();
    // Room for the fixed part and one 2-byte path.
    let mut small = [0u8; 32 + 6];
    let mut frames = Vec::new();
    while let Some(n) = t.s.poll_transmit(&mut small, t.at()).unwrap() {
        frames.push(parse_set_watches(&small[..n]).1);
    }
    assert_eq!(frames.len(), 3);
    let mut tiny = [0u8; 16];
    t.drop_connection();
    t.open();
    t.frame(&connect_response(9000, SID, &PASSWORD, false))
        .unwrap();
    assert_eq!(
        t.s.poll_transmit(&mut tiny, t.at()),
        Err(EncodeError::BufferTooSmall {
            needed: 38,
            capacity: 16
        })
    );
    assert_eq!(t.transmit().len(), 1, "nothing lost by the refusal");
}

#[test]
fn a_set_watches_error_drops_the_connection_to_try_again() {
    let mut t = Script::three();
    t.establish(9000);
    three_watches(&mut t);
    t.drop_connection();
    t.open();
    t.frame(&connect_response(9000, SID, &PASSWORD, false))
        .unwrap();
    t.transmit();
    assert_eq!(
        t.frame(&empty_reply(-8, 0, ZkError::MarshallingError.code()))
            .err(),
        Some(SessionError::SetWatchesFailed(ZkError::MarshallingError))
    );
    t.next_attempt();
    t.open();
    t.frame(&connect_response(9000, SID, &PASSWORD, false))
        .unwrap();
    assert_eq!(parse_set_watches(&t.transmit()[0]).1[0], ["/d"]);
}

#[test]
fn credentials_are_sent_first_on_every_connection() {
    let mut t = Script::three();
    t.s.add_auth("digest", b"user:password").unwrap();
    t.establish(9000);
    let mut buf = [0u8; 64];
    assert_eq!(
        t.s.send(
            9,
            &Op::Request(Request::Sync { path: "/" }),
            &mut buf,
            t.at()
        ),
        Err(SendError::Busy)
    );
    assert_eq!(header(&t.transmit()[0]), (-4, 100));
    three_watches(&mut t);
    t.drop_connection();
    t.open();
    t.frame(&connect_response(9000, SID, &PASSWORD, false))
        .unwrap();
    let frames = t.transmit();
    assert_eq!(frames.len(), 2);
    assert_eq!(header(&frames[0]), (-4, 100));
    let mut r = Reader::new(&payload(&frames[0])[8..]);
    assert_eq!(
        (r.int().unwrap(), r.ustring().unwrap(), r.buffer().unwrap()),
        (0, "digest", &b"user:password"[..])
    );
    assert_eq!(header(&frames[1]), (-8, 101));
    // The auth reply is matched by its xid, out of the FIFO.
    assert!(matches!(
        t.frame(&empty_reply(-4, 0, 0)),
        Ok(Incoming::Nothing)
    ));
    // Credentials added while connected go out at once.
    t.s.add_auth("digest", b"other:pw").unwrap();
    assert_eq!(header(&t.transmit()[0]), (-4, 100));
    assert_eq!(t.s.add_auth("digest", b"third:pw"), Err(AuthError::TooMany));
}

#[test]
fn refused_credentials_end_the_session() {
    let mut t = Script::three();
    t.s.add_auth("nosuch", b"x").unwrap();
    t.establish(9000);
    t.transmit();
    t.send(4, Op::Request(Request::Sync { path: "/" }));
    assert_eq!(
        t.frame(&empty_reply(-4, 0, ZkError::AuthFailed.code()))
            .err(),
        Some(SessionError::AuthFailed)
    );
    assert_eq!(t.s.state(), State::AuthFailed);
    assert_eq!(t.actions(), [Action::Close { conn: t.conn }]);
    assert_eq!(
        t.events(),
        [
            Event::Session(SessionEvent::Connected { session_id: SID }),
            Event::Lost(4),
            Event::Session(SessionEvent::Closed)
        ]
    );
}

#[test]
fn close_sends_close_session_and_waits_for_its_reply() {
    let mut t = Script::three();
    t.establish(9000);
    t.events();
    let a = t.send(
        1,
        Op::Request(Request::Delete {
            path: "/a",
            version: Version::Any,
        }),
    );
    t.s.close(t.at());
    assert_eq!(t.s.state(), State::Closing);
    let mut buf = [0u8; 64];
    assert_eq!(
        t.s.send(
            2,
            &Op::Request(Request::Sync { path: "/" }),
            &mut buf,
            t.at()
        ),
        Err(SendError::NotConnected)
    );
    let frames = t.transmit();
    assert_eq!(frames.len(), 1);
    assert_eq!(header(&frames[0]), (a + 1, -11));
    // Replies to earlier requests still arrive, in order.
    assert!(matches!(
        t.frame(&empty_reply(a, 9, 0)),
        Ok(Incoming::Reply {
            tag: 1,
            response: Response::Deleted
        })
    ));
    t.frame(&empty_reply(a + 1, 10, 0)).unwrap();
    assert_eq!(t.s.state(), State::Closed);
    assert_eq!(t.actions(), [Action::Close { conn: t.conn }]);
    assert_eq!(t.events(), [Event::Session(SessionEvent::Closed)]);
    assert_eq!(t.s.poll_timeout(), None);
}

#[test]
fn close_completes_on_eof_or_after_a_while() {
    let mut t = Script::three();
    t.establish(9000);
    t.s.close(t.at());
    t.transmit();
    t.s.handle_disconnected(t.conn, t.at());
    assert_eq!(t.s.state(), State::Closed);

    let mut t = Script::three();
    t.establish(9000);
    t.s.close(t.at());
    t.transmit();
    assert_eq!(t.s.poll_timeout(), Some(Instant::from_millis(6000)));
    t.advance(6000);
    assert_eq!(t.s.state(), State::Closed);

    // A connection failing while closing ends the close; no new
    // connection is opened for a session being closed.
    let mut t = Script::three();
    t.establish(9000);
    t.s.close(t.at());
    t.transmit();
    let xid = t.s.close_xid.unwrap();
    assert!(t.frame(&empty_reply(xid + 1, 1, 0)).is_err());
    assert_eq!(t.s.state(), State::Closed);
    assert_eq!(t.actions(), [Action::Close { conn: t.conn }]);

    // Closing late in a silence: the close's own wait, not the session's
    // expiry (which would come first and change nothing), is the timer.
    let mut t = Script::three();
    t.establish(9000);
    t.advance(3500);
    t.s.close(t.at());
    t.transmit();
    assert_eq!(t.s.poll_timeout(), Some(Instant::from_millis(9500)));
    t.advance(9500);
    assert_eq!(t.s.state(), State::Closed);

    let mut t = Script::three();
    t.s.close(t.at());
    assert_eq!(t.s.state(), State::Closed);
    assert_eq!(t.actions(), [Action::Close { conn: t.conn }]);
}

#[test]
fn bounded_tables_refuse_with_typed_errors_and_consume_nothing() {
    let mut t = Script::three();
    t.establish(9000);
    let mut buf = [0u8; 512];
    for i in 0..4 {
        t.s.send(i, &watched_read("/w"), &mut buf, t.at()).unwrap();
    }
    assert!(!t.s.can_send());
    assert_eq!(
        t.try_send(9, Op::Request(Request::Sync { path: "/" })),
        Err(SendError::TooManyPending)
    );
    for xid in 1..=4 {
        t.frame(&reply(xid, 1, 0, |w| {
            w.buffer(b"")?;
            w.stat(&sample_stat());
            Ok(())
        }))
        .unwrap();
    }
    assert_eq!(t.s.watches().count(), 1, "one data watch on /w");
    let long = "/0123456789012345678901234567890123456789";
    assert_eq!(
        t.s.send(
            9,
            &Op::Request(Request::Exists {
                path: long,
                watch: true
            }),
            &mut buf,
            t.at()
        ),
        Err(SendError::WatchPathTooLong)
    );
    for (i, path) in ["/x", "/y", "/z"].into_iter().enumerate() {
        t.s.send(
            i as u32,
            &Op::Request(Request::GetChildren { path, watch: true }),
            &mut buf,
            t.at(),
        )
        .unwrap();
    }
    assert_eq!(
        t.s.send(
            9,
            &Op::Request(Request::Exists {
                path: "/v",
                watch: true
            }),
            &mut buf,
            t.at()
        ),
        Err(SendError::TooManyWatches)
    );
    assert_eq!(
        t.s.send(
            9,
            &Op::Request(Request::Exists {
                path: long,
                watch: false
            }),
            &mut [0u8; 8],
            t.at()
        ),
        Err(SendError::Encode(EncodeError::BufferTooSmall {
            needed: 58,
            capacity: 8
        }))
    );
    // The refusals used no xid: the next request gets 8.
    t.frame(&reply(5, 1, 0, |w| {
        w.int(0);
        Ok(())
    }))
    .unwrap();
    assert_eq!(
        t.send(
            9,
            Op::Request(Request::Exists {
                path: long,
                watch: false
            })
        ),
        8
    );
}

#[test]
fn xids_wrap_to_one_and_never_go_non_positive() {
    let mut t = Script::three();
    t.establish(9000);
    t.s.next_xid = i32::MAX;
    assert_eq!(
        t.send(1, Op::Request(Request::Sync { path: "/" })),
        i32::MAX
    );
    assert_eq!(t.send(2, Op::Request(Request::Sync { path: "/" })), 1);
}

#[test]
fn lost_requests_drain_before_the_event_that_lost_them() {
    let mut t = Script::three();
    t.establish(9000);
    t.send(1, Op::Request(Request::Sync { path: "/" }));
    t.send(2, Op::Request(Request::Sync { path: "/" }));
    t.drop_connection();
    assert_eq!(
        t.events(),
        [
            Event::Session(SessionEvent::Connected { session_id: SID }),
            Event::Lost(1),
            Event::Lost(2),
            Event::Session(SessionEvent::Suspended),
        ]
    );
}

#[test]
fn lost_requests_not_yet_reported_count_against_the_pending_bound() {
    let mut t = Script::three();
    t.establish(9000);
    for tag in 1..=3 {
        t.send(tag, Op::Request(Request::Sync { path: "/" }));
    }
    t.drop_connection();
    t.establish(9000);
    // Three lost, not yet reported, and one in flight fill the four
    // places, so that the next loss has room for every one of them.
    assert!(t.s.can_send());
    t.send(4, Op::Request(Request::Sync { path: "/" }));
    assert!(!t.s.can_send());
    assert_eq!(
        t.try_send(5, Op::Request(Request::Sync { path: "/" })),
        Err(SendError::TooManyPending)
    );
    t.drop_connection();
    let lost: Vec<_> = t
        .events()
        .into_iter()
        .filter(|e| matches!(e, Event::Lost(_)))
        .collect();
    assert_eq!(
        lost,
        [
            Event::Lost(1),
            Event::Lost(2),
            Event::Lost(3),
            Event::Lost(4)
        ]
    );
}

/// A zero-length path takes no room in the pool and so shares its start
/// with the next path; removing that one leaves it as it was.
#[test]
fn an_empty_watched_path_survives_its_neighbours_removal() {
    let mut t = Script::three();
    t.establish(9000);
    let empty = t.send(1, watched_read(""));
    let b = t.send(2, watched_read("/b"));
    t.frame(&data_reply(empty, 5)).unwrap();
    t.frame(&data_reply(b, 6)).unwrap();
    t.frame(&notification(3, "/b")).unwrap();
    assert_eq!(t.s.watches().collect::<Vec<_>>(), [(WatchClass::Data, "")]);
    let c = t.send(3, watched_read("/c"));
    t.frame(&data_reply(c, 7)).unwrap();
    let mut watches = t.s.watches().collect::<Vec<_>>();
    watches.sort_by_key(|(_, p)| *p);
    assert_eq!(watches, [(WatchClass::Data, ""), (WatchClass::Data, "/c")]);
}

/// The watches' paths share one pool (32 bytes here): it bounds their total
/// length, and a path spent by a notification leaves room that the next
/// watch takes, with every remaining path intact for the next setWatches.
#[test]
fn watched_paths_share_one_pool_that_closes_its_gaps() {
    let mut t = Script::three();
    t.establish(9000);
    let paths = ["/aaaaaaaaaa", "/bbbbbbbbbb", "/cccccccc"];
    let xids: Vec<i32> = paths
        .iter()
        .enumerate()
        .map(|(i, path)| t.send(i as u32, watched_read(path)))
        .collect();
    for (i, xid) in xids.into_iter().enumerate() {
        t.frame(&data_reply(xid, 50 + i as i64)).unwrap();
    }
    let mut buf = [0u8; 256];
    let watch_dd = watched_read("/dd");
    // Three watches of the four counted, but 31 of the 32 bytes taken.
    assert_eq!(
        t.s.send(9, &watch_dd, &mut buf, t.at()),
        Err(SendError::TooManyWatches)
    );
    t.frame(&notification(3, "/bbbbbbbbbb")).unwrap();
    let dd = t.send(9, watch_dd);
    t.frame(&data_reply(dd, 60)).unwrap();
    let mut watched: Vec<&str> = t.s.watches().map(|(_, p)| p).collect();
    watched.sort_unstable();
    assert_eq!(watched, ["/aaaaaaaaaa", "/cccccccc", "/dd"]);
    t.drop_connection();
    t.open();
    t.frame(&connect_response(9000, SID, &PASSWORD, false))
        .unwrap();
    let frames = t.transmit();
    let (_, [mut data, exist, child]) = parse_set_watches(&frames[0]);
    data.sort_unstable();
    assert_eq!(data, ["/aaaaaaaaaa", "/cccccccc", "/dd"]);
    assert!(exist.is_empty() && child.is_empty());
}

/// A path exactly the pool's size fits an empty table; and a watching
/// request that fails to encode gives its reservation back, slot and bytes.
#[test]
fn the_pool_fits_a_path_of_its_size_and_a_failed_send_leaves_it_whole() {
    let mut t = Script::three();
    t.establish(9000);
    let mut tiny = [0u8; 8];
    let full = "/0123456789012345678901234567890";
    assert_eq!(full.len(), 32);
    assert!(matches!(
        t.s.send(1, &watched_read(full), &mut tiny, t.at()),
        Err(SendError::Encode(_))
    ));
    // Had the failed send kept its reservation, no path would fit now.
    let xid = t.send(2, watched_read(full));
    t.frame(&data_reply(xid, 50)).unwrap();
    assert_eq!(
        t.s.watches().collect::<Vec<_>>(),
        [(WatchClass::Data, full)]
    );
}

/// Watching requests lost with their connection set nothing the session
/// can count on: their reservations go, slots and bytes, so a full table
/// is free again after the resume.
#[test]
fn reservations_lost_with_the_connection_free_the_table() {
    let mut t = Script::three();
    t.establish(9000);
    let paths = ["/p00000", "/p11111", "/p22222", "/p33333"];
    for (i, path) in paths.iter().enumerate() {
        t.send(i as u32, watched_read(path));
    }
    t.drop_connection();
    t.open();
    t.frame(&connect_response(9000, SID, &PASSWORD, false))
        .unwrap();
    let _ = t.events();
    assert!(t.transmit().is_empty(), "nothing was armed to set again");
    for (i, path) in paths.iter().enumerate() {
        t.send(10 + i as u32, watched_read(path));
    }
}

/// The watches of an expired session die with it: none is set again on
/// the next session, and its table starts empty.
#[test]
fn an_expired_sessions_watches_are_not_carried_to_the_next() {
    let mut t = Script::three();
    t.establish(9000);
    three_watches(&mut t);
    t.drop_connection();
    t.open();
    t.frame(&connect_response(0, 0, &[0; 16], false)).unwrap();
    let _ = t.s.poll_action();
    let _ = t.events();
    assert_eq!(t.s.watches().count(), 0);
    t.next_attempt();
    t.open();
    t.frame(&connect_response(9000, SID + 1, &PASSWORD, false))
        .unwrap();
    assert!(
        t.transmit().is_empty(),
        "no setWatches for the old session's watches"
    );
}

/// The first 16 bytes of a reply's payload: what a driver whose buffer
/// cannot hold the frame hands over.
fn head(xid: i32, zxid: i64, err: i32) -> Vec<u8> {
    payload(&empty_reply(xid, zxid, err)).to_vec()
}

#[test]
fn a_large_listing_is_matched_and_its_watch_kept_and_the_session_carries_on() {
    let mut t = Script::three();
    t.establish(9000);
    let list = t.send(
        1,
        Op::Request(Request::GetChildren {
            path: "/big",
            watch: true,
        }),
    );
    let read = t.send(2, watched_read("/blob"));
    let sync = t.send(3, Op::Request(Request::Sync { path: "/" }));
    let at = t.at();
    assert_eq!(
        t.s.handle_large_frame(t.conn, &head(list, 70, 0), at),
        Ok(LargeFrame::Listing { tag: 1 })
    );
    assert_eq!(
        t.s.handle_large_frame(t.conn, &head(read, 71, 0), at),
        Ok(LargeFrame::TooLarge { tag: 2 })
    );
    assert_eq!(t.s.last_zxid(), 71);
    let mut watches = t.s.watches().collect::<Vec<_>>();
    watches.sort_by_key(|(_, path)| *path);
    assert_eq!(
        watches,
        [(WatchClass::Child, "/big"), (WatchClass::Data, "/blob")],
        "the server set both watches"
    );
    // The next reply is matched as usual, on the same connection.
    assert!(matches!(
        t.frame(&reply(sync, 72, 0, |w| w.ustring("/"))),
        Ok(Incoming::Reply { tag: 3, .. })
    ));
    assert!(t.actions().is_empty(), "the connection stays");
    assert_eq!(t.s.state(), State::Connected { read_only: false });
}

#[test]
fn a_large_frame_that_is_no_reply_or_out_of_order_drops_the_connection() {
    let mut t = Script::three();
    t.establish(9000);
    let at = t.at();
    assert_eq!(
        t.s.handle_large_frame(t.conn, &head(-1, -1, 0), at),
        Err(SessionError::FrameTooLarge),
        "a notification cannot be skipped"
    );
    assert!(t.actions().contains(&Action::Close { conn: t.conn }));
    let mut t = Script::three();
    t.establish(9000);
    let xid = t.send(1, Op::Request(Request::Sync { path: "/" }));
    let at = t.at();
    assert_eq!(
        t.s.handle_large_frame(t.conn, &head(xid + 1, 1, 0), at),
        Err(SessionError::XidOutOfOrder {
            expected: Some(xid),
            got: xid + 1
        })
    );
    assert!(t.actions().contains(&Action::Close { conn: t.conn }));
    assert_eq!(
        t.s.handle_large_frame(t.conn, &[0, 0, 0], at),
        Ok(LargeFrame::Stale),
        "the connection was dropped: its frames are stale"
    );
    // xid 0 is no server's own frame (those are negative) and no
    // request's (they start at 1): a reply out of order.
    let mut t = Script::three();
    t.establish(9000);
    let at = t.at();
    assert_eq!(
        t.s.handle_large_frame(t.conn, &head(0, 1, 0), at),
        Err(SessionError::XidOutOfOrder {
            expected: None,
            got: 0
        })
    );
    assert!(t.actions().contains(&Action::Close { conn: t.conn }));
}

/// Frames that follow, in the same read, the one that ended the session
/// or the connection's attempt (a closeSession's answer, a refused
/// handshake) are the old connection's: a large one among them neither
/// reopens a closed session nor starts the next attempt before its
/// pause.
#[test]
fn a_large_frame_after_the_end_reopens_nothing() {
    let mut t = Script::three();
    t.establish(9000);
    t.s.close(t.at());
    t.transmit();
    let xid = t.s.close_xid.unwrap();
    t.frame(&empty_reply(xid, 10, 0)).unwrap();
    assert_eq!(t.s.state(), State::Closed);
    t.actions();
    t.events();
    let at = t.at();
    assert!(t
        .s
        .handle_large_frame(t.conn, &head(xid + 1, 11, 0), at)
        .is_err());
    assert_eq!(t.s.state(), State::Closed, "a closed session stays closed");
    assert!(
        !t.actions()
            .iter()
            .any(|a| matches!(a, Action::Connect { .. })),
        "no connection is opened for a closed session"
    );
    assert_eq!(t.s.poll_timeout(), None);

    // Every server refused the handshake: the session pauses, on the last
    // attempt's connection, before the next round.
    let mut t = Script::new(SessionConfig::new(1, 9000).with_retry_delay_ms(500));
    t.open();
    assert!(t.frame(&[0, 0, 0, 1, 0]).is_err(), "a malformed answer");
    assert!(t.actions().contains(&Action::Close { conn: t.conn }));
    assert_eq!(t.s.poll_timeout(), Some(Instant::from_millis(500)));
    let at = t.at();
    assert!(t.s.handle_large_frame(t.conn, &head(1, 1, 0), at).is_err());
    assert!(
        !t.actions()
            .iter()
            .any(|a| matches!(a, Action::Connect { .. })),
        "the pause is kept"
    );
    assert_eq!(t.s.poll_timeout(), Some(Instant::from_millis(500)));
}

/// A driver may report the loss of a connection whose frame the session
/// refused (the embedded one does, dropping it the same way whatever was
/// wrong): by then the session has dropped it and moved on, in every
/// phase, and the report changes nothing.
#[test]
fn the_loss_of_a_connection_dropped_for_its_frame_changes_nothing() {
    fn check(mut t: Script, refused: Result<(), SessionError>, case: &str) {
        assert!(refused.is_err(), "{case}: the frame is refused");
        let (state, timeout) = (t.s.state(), t.s.poll_timeout());
        assert!(
            t.actions().contains(&Action::Close { conn: t.conn }),
            "{case}: the session dropped the connection"
        );
        t.events();
        let at = t.at();
        t.s.handle_disconnected(t.conn, at);
        assert_eq!(t.actions(), [], "{case}");
        assert_eq!(t.events(), [], "{case}");
        assert_eq!(
            (t.s.state(), t.s.poll_timeout()),
            (state, timeout),
            "{case}"
        );
    }
    let refuse = |t: &mut Script, frame: &[u8]| t.frame(frame).map(|_| ());

    let mut t = Script::three();
    t.establish(9000);
    t.send(1, Op::Request(Request::Sync { path: "/" }));
    let r = refuse(&mut t, &empty_reply(7, 1, 0));
    check(t, r, "established, a reply out of order");

    let mut t = Script::three();
    t.establish(9000);
    let at = t.at();
    let r =
        t.s.handle_large_frame(t.conn, &head(-1, -1, 0), at)
            .map(|_| ());
    check(t, r, "established, a large notification");

    let mut t = Script::three();
    t.open();
    let r = refuse(&mut t, &[0, 0, 0, 3, 0, 0, 0]);
    check(t, r, "handshake, the next server");

    let mut t = Script::new(SessionConfig::new(1, 9000).with_retry_delay_ms(500));
    t.open();
    let r = refuse(&mut t, &[0, 0, 0, 3, 0, 0, 0]);
    check(t, r, "handshake, every server failed: the pause");

    let mut t = Script::three();
    t.establish(9000);
    t.s.close(t.at());
    t.transmit();
    let xid = t.s.close_xid.unwrap();
    let r = refuse(&mut t, &empty_reply(xid + 1, 1, 0));
    check(t, r, "closing");

    let mut t = Script::three();
    t.s.add_auth("nosuch", b"x").unwrap();
    t.establish(9000);
    t.transmit();
    let r = refuse(&mut t, &empty_reply(-4, 0, ZkError::AuthFailed.code()));
    check(t, r, "credentials refused");
}

#[test]
fn connection_attempts_are_numbered_from_one() {
    let mut t = Script::three();
    assert_eq!(t.conn.generation(), 1);
    assert_eq!(t.drop_connection(), 1);
    assert_eq!(t.conn.generation(), 2);
}

/// Each error says what went wrong in words, with its details.
#[test]
fn errors_display_their_cause() {
    use std::string::ToString;
    assert_eq!(SendError::NotConnected.to_string(), "not connected");
    assert_eq!(SendError::TooManyWatches.to_string(), "watch table full");
    let encode = SendError::Encode(EncodeError::TooLong).to_string();
    assert!(encode.starts_with("cannot encode: "), "{encode}");
    let order = SessionError::XidOutOfOrder {
        expected: Some(3),
        got: 7,
    };
    assert_eq!(
        order.to_string(),
        "reply xid 7 out of order (expected Some(3))"
    );
    let rearm = SessionError::SetWatchesFailed(ZkError::NoAuth).to_string();
    assert!(rearm.starts_with("setWatches failed: "), "{rearm}");
    assert_eq!(AuthError::TooMany.to_string(), "too many credentials");
    assert_eq!(
        AuthError::TooLong.to_string(),
        "scheme or credential too long"
    );
}

proptest::proptest! {
    /// The timer contract drivers rely on not to spin: whatever happened
    /// before, once `handle_timeout(now)` ran, the next timer is later than
    /// `now` (or there is none). Any mix of timers fired when due,
    /// connections opened, answered, dropped and written to, requests
    /// sent, pings answered, and a close.
    #[test]
    fn a_timer_that_fired_is_never_still_due(steps in proptest::collection::vec(0u8..9, 0..120)) {
        let mut t = Script::three();
        let mut xid = 0;
        for step in steps {
            match step {
                0 | 1 => {
                    if let Some(at) = t.s.poll_timeout() {
                        t.now = t.now.max(at.as_millis());
                        t.s.handle_timeout(t.at());
                        let next = t.s.poll_timeout();
                        proptest::prop_assert!(
                            next.is_none_or(|n| n > t.at()),
                            "still due at {next:?} after firing at {} in {:?}",
                            t.now,
                            t.s.state()
                        );
                    }
                }
                2 => t.s.handle_connected(t.conn, t.at()),
                3 => {
                    let _ = t.frame(&connect_response(9000, SID, &PASSWORD, false));
                }
                4 => t.s.handle_disconnected(t.conn, t.at()),
                5 => {
                    let mut buf = [0u8; 512];
                    while let Ok(Some(n)) = t.s.poll_transmit(&mut buf, t.at()) {
                        // A ping's answer, as a server sends it at once.
                        if header(&buf[..n]).0 == -2 {
                            let _ = t.frame(&empty_reply(-2, 1, 0));
                        }
                    }
                }
                6 => {
                    if t.try_send(1, Op::Request(Request::Exists { path: "/a", watch: false })).is_ok() {
                        xid += 1;
                    }
                }
                7 => {
                    if xid > 0 {
                        let _ = t.frame(&empty_reply(xid, 2, -101));
                    }
                }
                _ => t.s.close(t.at()),
            }
            for action in t.actions() {
                if let Action::Connect { conn, .. } = action {
                    t.conn = conn;
                }
            }
            while t.s.poll_event().is_some() {}
        }
    }
}
