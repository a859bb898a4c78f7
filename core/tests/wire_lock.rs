//! Two locks multiplexed on one `wire::Session`, the test playing the
//! ZooKeeper server byte for byte: requests are read off the frames the
//! session wrote, replies and notifications are written as a server
//! writes them, and the recipes see only what the session decoded.

use herdless_core::lock::{Lock, LockEvent};
use herdless_core::naming::Guid;
use herdless_core::wire::{Action, Event, Incoming, Op, Session, SessionConfig};
use herdless_core::{Instant, Recipe, RequestId};

fn int(b: &mut Vec<u8>, v: i32) {
    b.extend_from_slice(&v.to_be_bytes());
}

fn string(b: &mut Vec<u8>, s: &str) {
    int(b, s.len() as i32);
    b.extend_from_slice(s.as_bytes());
}

/// A reply payload: header (xid, zxid, err 0) and body.
fn reply(xid: i32, zxid: i64, body: &[u8]) -> Vec<u8> {
    let mut p = Vec::new();
    int(&mut p, xid);
    p.extend_from_slice(&zxid.to_be_bytes());
    int(&mut p, 0);
    p.extend_from_slice(body);
    p
}

/// A request as the server reads it: xid, opcode, first string (the path).
#[derive(Debug)]
struct Seen {
    xid: i32,
    opcode: i32,
    path: String,
}

fn read_request(frame: &[u8]) -> Seen {
    let field = |at: usize| i32::from_be_bytes(frame[at..at + 4].try_into().unwrap());
    assert_eq!(field(0) as usize, frame.len() - 4);
    let len = field(12) as usize;
    Seen {
        xid: field(4),
        opcode: field(8),
        path: String::from_utf8(frame[16..16 + len].to_vec()).unwrap(),
    }
}

struct Client {
    session: Session<(usize, RequestId)>,
    locks: [Lock; 2],
    events: Vec<(usize, LockEvent)>,
    sent: Vec<Seen>,
}

impl Client {
    /// Drains the session and the recipes, in the documented order.
    fn drain(&mut self, now: Instant) {
        let mut tx = [0u8; 512];
        while let Ok(Some(n)) = self.session.poll_transmit(&mut tx, now) {
            self.sent.push(read_request(&tx[..n]));
        }
        while let Some(event) = self.session.poll_event() {
            if let Event::Session(e) = event {
                self.locks.iter_mut().for_each(|l| l.handle_session(now, e));
            }
        }
        for (i, lock) in self.locks.iter_mut().enumerate() {
            while self.session.can_send() {
                let Some(out) = lock.poll_request() else {
                    break;
                };
                let n = self
                    .session
                    .send((i, out.id), &Op::from(out.request), &mut tx, now)
                    .unwrap();
                self.sent.push(read_request(&tx[..n]));
            }
            while let Some(e) = lock.poll_event() {
                self.events.push((i, e));
            }
        }
    }

    fn receive(&mut self, payload: &[u8], now: Instant) {
        let conn = self.session.connection();
        match self.session.handle_frame(conn, payload, now).unwrap() {
            Incoming::Reply {
                tag: (i, id),
                response,
            } => self.locks[i].handle_reply(now, id, response.into_reply().unwrap()),
            Incoming::Watch(w) => self.locks.iter_mut().for_each(|l| l.handle_watch(now, w)),
            _ => {}
        }
        self.drain(now);
    }
}

#[test]
fn two_locks_contend_over_one_wire_session() {
    let now = Instant::from_millis(0);
    let mut c = Client {
        session: Session::new(SessionConfig::new(1, 10_000), now),
        locks: [
            Lock::new("/locks/p").unwrap(),
            Lock::new("/locks/p").unwrap(),
        ],
        events: Vec::new(),
        sent: Vec::new(),
    };
    let Some(Action::Connect { conn, .. }) = c.session.poll_action() else {
        panic!("no connection asked for")
    };
    c.session.handle_connected(conn, now);
    c.drain(now);
    assert_eq!(c.sent.len(), 1, "the connect request alone");
    c.sent.clear();
    let mut handshake = Vec::new();
    int(&mut handshake, 0);
    int(&mut handshake, 10_000);
    handshake.extend_from_slice(&0x77i64.to_be_bytes());
    string(&mut handshake, "0123456789abcdef");
    handshake.push(0);
    c.receive(&handshake, now);
    assert_eq!(c.session.session_id(), 0x77);

    // Both contenders create their node and list the directory in one flight.
    c.locks[0]
        .acquire(Guid::from_random_bytes([1; 16]))
        .unwrap();
    c.locks[1]
        .acquire(Guid::from_random_bytes([2; 16]))
        .unwrap();
    c.drain(now);
    let ops: Vec<i32> = c.sent.iter().map(|s| s.opcode).collect();
    assert_eq!(ops, [1, 8, 1, 8]);
    let prefix_a = c.sent[0].path.clone();
    let prefix_b = c.sent[2].path.clone();
    let name_a = format!("{}0000000000", prefix_a.trim_start_matches("/locks/p/"));
    let name_b = format!("{}0000000001", prefix_b.trim_start_matches("/locks/p/"));
    let xids: Vec<i32> = c.sent.iter().map(|s| s.xid).collect();
    c.sent.clear();

    let children = |names: &[&str]| {
        let mut b = Vec::new();
        int(&mut b, names.len() as i32);
        for n in names {
            string(&mut b, n);
        }
        b
    };
    let mut created = Vec::new();
    string(&mut created, &format!("/locks/p/{name_a}"));
    c.receive(&reply(xids[0], 10, &created), now);
    c.receive(&reply(xids[1], 10, &children(&[&name_a])), now);
    created.clear();
    string(&mut created, &format!("/locks/p/{name_b}"));
    c.receive(&reply(xids[2], 11, &created), now);
    // The server lists in no particular order.
    c.receive(&reply(xids[3], 11, &children(&[&name_b, &name_a])), now);
    assert_eq!(c.events, [(0, LockEvent::Acquired)]);

    // Each contender watches its own node from its create's answer on, and
    // the waiter its predecessor, all with getData.
    let watched: Vec<(i32, &str)> = c.sent.iter().map(|s| (s.opcode, s.path.as_str())).collect();
    let (path_a, path_b) = (format!("/locks/p/{name_a}"), format!("/locks/p/{name_b}"));
    assert_eq!(
        watched,
        [
            (4, path_a.as_str()),
            (4, path_b.as_str()),
            (4, path_a.as_str())
        ]
    );
    // Empty data, and a stat whose only field set is `ephemeralOwner`,
    // after the zxids, times and versions: the session's, as an
    // ephemeral node's is.
    let mut data = Vec::new();
    int(&mut data, 0);
    data.extend_from_slice(&[0u8; 44]);
    data.extend_from_slice(&0x77i64.to_be_bytes());
    data.extend_from_slice(&[0u8; 16]);
    for watch in std::mem::take(&mut c.sent) {
        c.receive(&reply(watch.xid, 11, &data), now);
    }
    // A's node is watched by A (its own) and by B (its predecessor): the
    // session keeps one watch for both, as the server does.
    assert_eq!(c.session.watches().count(), 2);

    // The holder releases: delete, then the waiter's watch fires.
    c.locks[0].release().unwrap();
    c.drain(now);
    let delete = c.sent.remove(0);
    assert_eq!(delete.opcode, 2);
    let mut notification = Vec::new();
    int(&mut notification, 2);
    int(&mut notification, 3);
    string(&mut notification, &format!("/locks/p/{name_a}"));
    c.receive(&reply(-1, -1, &notification), now);
    c.receive(&reply(delete.xid, 12, &[]), now);
    assert_eq!(
        c.events,
        [
            (0, LockEvent::Acquired),
            (1, LockEvent::Acquired),
            (0, LockEvent::Released)
        ]
    );
    // B's watch on its own node is left.
    assert_eq!(c.session.watches().count(), 1);

    // A lost connection suspends both recipes through the session.
    c.session.handle_disconnected(conn, now);
    c.drain(now);
    assert!(c.events.contains(&(1, LockEvent::Suspended)));
    assert!(matches!(
        c.session.poll_action(),
        Some(Action::Connect { .. })
    ));
}
