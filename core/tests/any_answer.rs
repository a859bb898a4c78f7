//! Whatever a server answers and whatever other clients put in a
//! recipe's directory, no recipe panics, and each keeps its side of the
//! [`Recipe`] contract: its requests and events run dry, it sends nothing
//! between a loss or an end it was told of and the next `Connected`, and a
//! timer it was woken for is no longer due.
//!
//! The driver here keeps the contract (it answers only what was asked,
//! each request once, with a reply of the kind the request asks for, and
//! reports the session's changes as the real drivers do), but the
//! answers' contents are arbitrary: any error code for any request, nodes
//! created under a path other than the one asked for or with any sequence
//! suffix (ZooKeeper's counter goes negative past 2^31), listings of any
//! names (other libraries' nodes, names too long for the recipe's
//! buffers, stale nodes of the recipe's own GUID, duplicates), any data
//! and any stat. The user calls each recipe's methods at any moment,
//! reusing GUIDs, with arguments a recipe must refuse.
//!
//! `PROPTEST_CASES` sets the number of scripts per recipe (default 2,000,
//! a second or so in all).

use std::fmt::Debug;

use herdless_core::barrier::Barrier;
use herdless_core::config::Config;
use herdless_core::double_barrier::DoubleBarrier;
use herdless_core::election::{Election, Observer as Leaders};
use herdless_core::lock::Lock;
use herdless_core::member::Member;
use herdless_core::members::Observer as Members;
use herdless_core::naming::{Flavour, Guid};
use herdless_core::queue::{Consumer, Producer};
use herdless_core::revoke::Revoke;
use herdless_core::two_phase::{TwoPhase, Variant, Vote};
use herdless_core::{
    Children, Instant, Recipe, Reply, Request, RequestId, SessionEvent, Stat, Version, WatchEvent,
    WatchKind, ZkError,
};
use proptest::prelude::*;

/// A user call: what the application may do to the recipe at any moment.
type Call<R> = fn(&mut R, Instant);

/// What the driver keeps of a request until it answers it.
#[derive(Clone, Debug)]
struct Asked {
    id: RequestId,
    kind: Kind,
    path: String,
    sequential: bool,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    Create,
    Delete,
    Exists,
    GetData,
    SetData,
    GetChildren,
    Check,
    Sync,
}

fn asked(id: RequestId, request: &Request<'_>) -> (Asked, Option<String>) {
    let (kind, path, sequential, watch) = match *request {
        Request::Create { path, mode, .. } => (Kind::Create, path, mode.is_sequential(), false),
        Request::Delete { path, .. } => (Kind::Delete, path, false, false),
        Request::Exists { path, watch } => (Kind::Exists, path, false, watch),
        Request::GetData { path, watch } => (Kind::GetData, path, false, watch),
        Request::SetData { path, .. } => (Kind::SetData, path, false, false),
        Request::GetChildren { path, watch } => (Kind::GetChildren, path, false, watch),
        Request::Check { path, .. } => (Kind::Check, path, false, false),
        Request::Sync { path } => (Kind::Sync, path, false, false),
        ref other => panic!("a request this test does not know: {other:?}"),
    };
    let asked = Asked {
        id,
        kind,
        path: path.to_owned(),
        sequential,
    };
    (asked, watch.then(|| path.to_owned()))
}

/// One step of a script: an opcode and two operands, read by [`Driver::step`].
type Step = (u8, u16, u16);

/// Names other clients (and earlier attempts) leave in a directory.
const FOREIGN: &[&str] = &[
    "",
    "x",
    "ready",
    "decision",
    "a",
    "m",
    "lock-0000000001",
    "n_0000000002",
    "-lock-0000000003",
    "_c_0c0c0c0c-0c0c-4c0c-8c0c-0c0c0c0c0c0c-lock-0000000004",
    "_c_0c0c0c0c-0c0c-4c0c-8c0c-0c0c0c0c0c0c-__READ__0000000005",
    "_c_0c0c0c0c-0c0c-4c0c-8c0c-0c0c0c0c0c0c-__WRIT__0000000006",
    "_c_0c0c0c0c-0c0c-4c0c-8c0c-0c0c0c0c0c0c-latch-0000000007",
    "0c0c0c0c0c0c4c0c8c0c0c0c0c0c0c0c__lock__0000000008",
    "0c0c0c0c0c0c4c0c8c0c0c0c0c0c0c0c__rlock__0000000009",
    "0c0c0c0c-0c0c-4c0c-8c0c-0c0c0c0c0c0c-read-0000000010",
    "0c0c0c0c-0c0c-4c0c-8c0c-0c0c0c0c0c0c-write-0000000011",
    "0c0c0c0c-0c0c-4c0c-8c0c-0c0c0c0c0c0c-n_0000000012",
    "0c0c0c0c-0c0c-4c0c-8c0c-0c0c0c0c0c0c-lock--2147483648",
    "0c0c0c0c-0c0c-4c0c-8c0c-0c0c0c0c0c0c-lock-2147483647",
    "0c0c0c0c-0c0c-4c0c-8c0c-0c0c0c0c0c0c-lock-99999999999",
    "01010101-0101-4101-8101-010101010101-lock-0000000013",
    "02020202-0202-4202-8202-020202020202-n_0000000014",
    "01010101-0101-4101-8101-010101010101-queue-0000000015",
    "01010101-0101-4101-8101-010101010101-queue-03-0000000016",
    "qn-0000000017",
    "x-queue-99-0000000018",
    "x-queue--1-0000000019",
    "entry-0000000020",
    "bank-a",
    "bank-b",
    "é-lock-0000000021",
];

/// Sequence suffixes a server may append (its counter is a signed 32-bit
/// number printed as `%010d`), and a few it never would.
const SUFFIXES: &[&str] = &[
    "0000000000",
    "0000000001",
    "0000000002",
    "0000000009",
    "0000000100",
    "2147483647",
    "-2147483648",
    "-000000001",
    "",
    "12",
    "abcdefghij",
    "00000000001",
];

const ERRORS: &[i32] = &[
    -1, -2, -3, -4, -5, -6, -7, -8, -13, -14, -15, -100, -101, -102, -103, -108, -110, -111, -112,
    -113, -114, -115, -118, -119, -120, -121, -122, -123, -124, -125, -999,
];

const STAT_LONGS: &[i64] = &[0, 1, 2, 7, 100, -1, i64::MAX, i64::MIN];
const STAT_INTS: &[i32] = &[0, 1, 2, -1, i32::MAX, i32::MIN];

struct Driver<R: Recipe + 'static> {
    recipe: R,
    calls: &'static [Call<R>],
    now: u64,
    asked: Vec<Asked>,
    /// Paths the recipe set a watch on.
    watched: Vec<String>,
    /// Names seen in its created paths, besides [`FOREIGN`].
    own: Vec<String>,
    /// Data a read may answer: its own writes, and some of the pools.
    data: Vec<Vec<u8>>,
    session: i64,
    connected: bool,
    /// Whether the recipe was told of a loss or an end and not yet of
    /// `Connected`: it must send nothing meanwhile.
    silenced: bool,
    ended: bool,
}

impl<R: Recipe + 'static> Driver<R>
where
    R::Event: Debug,
{
    fn new(recipe: R, calls: &'static [Call<R>]) -> Self {
        Driver {
            recipe,
            calls,
            now: 0,
            asked: Vec::new(),
            watched: Vec::new(),
            own: Vec::new(),
            data: vec![
                b"".to_vec(),
                b"commit".to_vec(),
                b"abort".to_vec(),
                vec![0xab; 300],
            ],
            session: 1,
            connected: true,
            silenced: false,
            ended: false,
        }
    }

    fn at(&self) -> Instant {
        Instant::from_millis(self.now)
    }

    /// Hands over a reply. A `ConnectionLoss` answer does not silence the
    /// recipe here: one answering a request it no longer waits for is
    /// ignored, and what it sends meanwhile waits in the driver for the
    /// `Connected` that must follow.
    fn reply(&mut self, id: RequestId, reply: Reply<'_>) {
        self.recipe.handle_reply(self.at(), id, reply);
    }

    /// Hands over a session event: after any but `Connected` the recipe
    /// sends nothing until `Connected` (work asked for meanwhile waits for
    /// the connection, or for the next session).
    fn session_event(&mut self, event: SessionEvent) {
        self.silenced = !matches!(event, SessionEvent::Connected { .. });
        self.recipe.handle_session(self.at(), event);
    }

    /// Takes every request and event, as a driver must after each input.
    fn drain(&mut self) {
        for sent in 0.. {
            assert!(sent < 10_000, "poll_request never runs dry");
            let Some(out) = self.recipe.poll_request() else {
                break;
            };
            assert!(
                !self.silenced,
                "a request before Connected: {:?}",
                out.request
            );
            if let Request::Create { data, .. } | Request::SetData { data, .. } = out.request {
                self.data.push(data.to_vec());
            }
            let (asked, watch) = asked(out.id, &out.request);
            self.asked.push(asked);
            self.watched.extend(watch);
        }
        for told in 0.. {
            assert!(told < 10_000, "poll_event never runs dry");
            if self.recipe.poll_event().is_none() {
                break;
            }
        }
    }

    fn name(&self, pick: u16) -> &str {
        let pick = usize::from(pick);
        if pick % 3 == 0 && !self.own.is_empty() {
            &self.own[pick / 3 % self.own.len()]
        } else {
            FOREIGN[pick % FOREIGN.len()]
        }
    }

    fn stat(&self, pick: u16) -> Stat {
        let long = |shift: u16| STAT_LONGS[usize::from(pick >> shift) % STAT_LONGS.len()];
        let int = |shift: u16| STAT_INTS[usize::from(pick >> shift) % STAT_INTS.len()];
        let owner = [0, self.session, self.session + 1, -1][usize::from(pick >> 3) % 4];
        Stat {
            czxid: long(0),
            mzxid: long(2),
            ctime: 0,
            mtime: 0,
            version: int(4),
            cversion: int(6),
            aversion: 0,
            ephemeral_owner: owner,
            data_length: int(8),
            num_children: int(10),
            pzxid: long(12),
        }
    }

    fn error(pick: u16) -> ZkError {
        let code = ERRORS[usize::from(pick) % ERRORS.len()];
        ZkError::from_code(code).unwrap_or(ZkError::Unknown(code))
    }

    /// Answers the request at `index` of those asked: with an error when
    /// `how` says so, otherwise with a success of its kind.
    fn answer(&mut self, index: usize, how: u16, pick: u16) {
        let asked = self.asked.remove(index);
        if how % 4 == 0 {
            let error = Self::error(pick);
            self.reply(asked.id, Reply::Error(error));
            if matches!(error, ZkError::ConnectionLoss) {
                self.lost(how);
            } else if matches!(error, ZkError::SessionExpired) {
                self.end(how, true);
            }
            return;
        }
        let stat = self.stat(pick);
        match asked.kind {
            Kind::Create => {
                let path = if how % 16 == 1 {
                    ["/", "", "/elsewhere/x-0000000001", "/d"][usize::from(pick) % 4].to_owned()
                } else if asked.sequential {
                    format!(
                        "{}{}",
                        asked.path,
                        SUFFIXES[usize::from(pick) % SUFFIXES.len()]
                    )
                } else {
                    asked.path.clone()
                };
                if let Some((_, name)) = path.rsplit_once('/') {
                    self.own.push(name.to_owned());
                }
                self.reply(asked.id, Reply::Created { path: &path });
            }
            Kind::Delete => self.reply(asked.id, Reply::Deleted),
            Kind::Exists => self.reply(asked.id, Reply::Exists { stat }),
            Kind::GetData => {
                let data = self.read_data(pick);
                self.reply(asked.id, Reply::Data { data: &data, stat });
            }
            Kind::SetData => self.reply(asked.id, Reply::DataSet { stat }),
            Kind::GetChildren => {
                let names = self.listing(how, pick);
                if self.recipe.takes_listing_in_parts() && how % 3 == 0 {
                    self.in_parts(asked.id, &names, pick);
                } else {
                    let list = &names[..];
                    self.reply(asked.id, Reply::Children(Children::new(&list)));
                }
            }
            Kind::Check => self.reply(asked.id, Reply::Checked),
            Kind::Sync => self.reply(asked.id, Reply::Synced),
        }
    }

    /// Data a read answers: a write the recipe made, one of the pools, a
    /// listed name (an election's acknowledgement names a node, then its
    /// data), or bytes that are not UTF-8.
    fn read_data(&self, pick: u16) -> Vec<u8> {
        let pick = usize::from(pick);
        match pick % 4 {
            0 | 1 => self.data[pick / 4 % self.data.len()].clone(),
            2 => format!("{}\nleader", self.name(pick as u16 / 4)).into_bytes(),
            _ => vec![0xff, b'\n', 0xfe],
        }
    }

    fn listing(&self, how: u16, pick: u16) -> Vec<String> {
        let count = usize::from(how >> 4) % 12;
        (0..count)
            .map(|i| {
                let spread = pick
                    .wrapping_mul(31)
                    .wrapping_add((i as u16).wrapping_mul(7919));
                if how & (1 << 2) != 0 && i % 4 == 3 {
                    "y".repeat(300)
                } else {
                    self.name(spread).to_owned()
                }
            })
            .collect()
    }

    /// A listing in parts, as the embedded driver hands over one larger
    /// than its buffer; cut short (the connection lost, or the reply
    /// refused) when `pick` says so.
    fn in_parts(&mut self, id: RequestId, names: &[String], pick: u16) {
        let now = self.at();
        let size = 1 + usize::from(pick) % 3;
        let cut = pick % 7 == 0;
        let parts: Vec<&[String]> = names.chunks(size).collect();
        let whole = parts.len();
        for (i, part) in parts.into_iter().enumerate() {
            if cut && i + 1 == whole {
                break;
            }
            let last = !cut && i + 1 == whole;
            self.recipe
                .handle_listing_part(now, id, Children::new(&part), last);
        }
        if whole == 0 && !cut {
            let none: &[String] = &[];
            self.recipe
                .handle_listing_part(now, id, Children::new(&none), true);
        }
        if cut {
            if pick % 2 == 0 {
                self.reply(id, Reply::Error(ZkError::MarshallingError));
            } else {
                self.lose_connection(pick);
            }
        }
    }

    /// The connection broke: every request in flight is answered
    /// `ConnectionLoss`, and `Suspended` is reported before those answers,
    /// after them, or not at all (the real drivers do each).
    fn lose_connection(&mut self, how: u16) {
        if how % 3 == 0 {
            self.session_event(SessionEvent::Suspended);
        }
        for asked in std::mem::take(&mut self.asked) {
            self.reply(asked.id, Reply::Error(ZkError::ConnectionLoss));
        }
        if how % 3 == 1 {
            self.session_event(SessionEvent::Suspended);
        }
        self.connected = false;
    }

    /// A `ConnectionLoss` answer was given on its own: the rest of the
    /// connection's requests go with it.
    fn lost(&mut self, how: u16) {
        if self.connected {
            self.lose_connection(how);
        }
    }

    /// The session ended: requests in flight are answered with its end.
    fn end(&mut self, how: u16, expired: bool) {
        for asked in std::mem::take(&mut self.asked) {
            let error = if how % 2 == 0 {
                ZkError::SessionExpired
            } else {
                ZkError::ConnectionLoss
            };
            self.reply(asked.id, Reply::Error(error));
        }
        let event = if expired {
            SessionEvent::Expired
        } else {
            SessionEvent::Closed
        };
        self.session_event(event);
        self.connected = false;
        self.ended = true;
    }

    fn step(&mut self, (op, a, b): Step) {
        let now = self.at();
        match op % 10 {
            0 => (self.calls[usize::from(a) % self.calls.len()])(&mut self.recipe, now),
            1..=3 if !self.asked.is_empty() => {
                // Mostly the oldest (ZooKeeper answers in order), sometimes
                // any (a driver may hand over late answers of an old epoch).
                let index = if a % 5 == 0 {
                    usize::from(a) % self.asked.len()
                } else {
                    0
                };
                self.answer(index, a, b);
            }
            4 => {
                let kind = [
                    WatchKind::NodeCreated,
                    WatchKind::NodeDeleted,
                    WatchKind::NodeDataChanged,
                    WatchKind::NodeChildrenChanged,
                ][usize::from(b) % 4];
                let path = if self.watched.is_empty() || a % 4 == 0 {
                    format!("/d/{}", self.name(a))
                } else {
                    self.watched[usize::from(a) % self.watched.len()].clone()
                };
                self.recipe
                    .handle_watch(now, WatchEvent { kind, path: &path });
            }
            5 if self.connected => self.lose_connection(b),
            6 if !self.connected => {
                if self.ended {
                    self.session += 1;
                    self.ended = false;
                }
                self.connected = true;
                let session_id = self.session;
                self.session_event(SessionEvent::Connected { session_id });
            }
            7 | 8 => {
                self.now += u64::from(b % 5000);
                self.fire();
            }
            // Mostly an expiry: a close ends the script's interest.
            9 if !self.ended && a % 4 == 0 => self.end(b, a % 32 != 0),
            _ => {}
        }
        self.drain();
    }

    /// Wakes the recipe if its timer is due, and checks that one call was
    /// enough (a driver would call it again and again).
    fn fire(&mut self) {
        let now = self.at();
        if self.recipe.poll_timeout().is_some_and(|at| at <= now) {
            self.recipe.handle_timeout(now);
            self.drain();
            let again = self.recipe.poll_timeout();
            assert!(
                again.is_none_or(|at| at > now),
                "the timer is still due at {now:?} after handle_timeout: {again:?}"
            );
        }
    }
}

fn script() -> impl Strategy<Value = Vec<Step>> {
    proptest::collection::vec((any::<u8>(), any::<u16>(), any::<u16>()), 0..400)
}

fn run<R: Recipe + 'static>(recipe: R, calls: &'static [Call<R>], steps: Vec<Step>)
where
    R::Event: Debug,
{
    let mut driver = Driver::new(recipe, calls);
    driver.drain();
    for step in steps {
        driver.step(step);
    }
}

fn guid(n: u8) -> Guid {
    Guid::from_random_bytes([n; 16])
}

/// A call's outcome, which may be a refusal: here only a panic counts.
fn outcome<T>(_: T) {}

fn later(now: Instant, ms: u64) -> Instant {
    Instant::from_millis(now.as_millis() + ms)
}

const LOCK_CALLS: &[Call<Lock<64>>] = &[
    |l, _| outcome(l.acquire(guid(1))),
    |l, now| outcome(l.acquire_until(guid(2), later(now, 100))),
    |l, _| outcome(l.try_acquire(guid(1))),
    |l, _| outcome(l.release()),
    |l, _| outcome(l.cancel()),
    |l, _| outcome(l.acquire(guid(3))),
];

const ELECTION_CALLS: &[Call<Election<64, 128>>] = &[
    |e, _| outcome(e.campaign(guid(2), b"me")),
    |e, now| outcome(e.campaign_until(guid(4), &[0xab; 100], later(now, 100))),
    |e, _| outcome(e.resign()),
    |e, _| e.set_lost_after(Some(50)),
    |e, _| outcome(e.campaign(guid(5), &[0xcd; 200])),
];

const LEADERS_CALLS: &[Call<Leaders<64, 128>>] = &[|o, _| o.watch()];

const REVOKE_CALLS: &[Call<Revoke<64>>] = &[
    |r, _| outcome(r.request()),
    |r, now| outcome(r.request_forced(later(now, 100))),
    |r, _| r.cancel(),
];

const CONFIG_CALLS: &[Call<Config<16, 64>>] = &[
    |c, _| c.watch(),
    |c, _| outcome(c.set(b"v1", Version::Any)),
    |c, _| outcome(c.set(b"v2", Version::Exactly(0))),
    |c, _| outcome(c.set(&[1; 40], Version::Exactly(-1))),
    |c, _| outcome(c.create(b"v0")),
];

const BARRIER_CALLS: &[Call<Barrier<64>>] = &[
    |b, _| b.wait(),
    |b, _| b.set(),
    |b, _| b.remove(),
    |b, _| b.cancel_wait(),
];

const DOUBLE_BARRIER_CALLS: &[Call<DoubleBarrier<64>>] = &[
    |b, _| outcome(b.enter(1)),
    |b, _| outcome(b.enter(3)),
    |b, _| outcome(b.enter(0)),
    |b, _| outcome(b.leave()),
];

const PRODUCER_CALLS: &[Call<Producer<16, 64>>] = &[
    |p, _| outcome(p.put(guid(1), b"item", None, false)),
    |p, _| outcome(p.put(guid(1), b"urgent", Some(3), true)),
    |p, _| outcome(p.put(guid(6), &[7; 40], Some(255), false)),
];

const CONSUMER_CALLS: &[Call<Consumer<4, 16, 64>>] = &[
    |c, _| outcome(c.take(None)),
    |c, now| outcome(c.take(Some(later(now, 100)))),
    |c, _| outcome(c.peek()),
    |c, _| outcome(c.cancel()),
];

const MEMBER_CALLS: &[Call<Member<16, 64>>] = &[
    |m, _| outcome(m.join(b"x")),
    |m, _| outcome(m.join(&[9; 40])),
    |m, _| outcome(m.leave()),
];

const MEMBERS_CALLS: &[Call<Members<4, 16, 64>>] = &[|o, _| o.watch()];

const TWO_PHASE_CALLS: &[Call<TwoPhase<4, 16, 64, 64>>] = &[
    |t, now| {
        let variant = Variant::AllWatch;
        outcome(t.coordinate(
            b"body",
            &["bank-a", "bank-b"],
            variant,
            Some(later(now, 100)),
        ));
    },
    |t, _| {
        let variant = Variant::Coordinated {
            ephemeral_votes: true,
        };
        outcome(t.coordinate(b"body", &["bank-a"], variant, None));
    },
    |t, _| outcome(t.participate("bank-a", Variant::AllWatch)),
    |t, _| {
        let variant = Variant::Coordinated {
            ephemeral_votes: false,
        };
        outcome(t.participate("bank-b", variant));
    },
    |t, _| outcome(t.vote(Vote::Commit)),
    |t, _| outcome(t.vote(Vote::Abort)),
];

/// 2,000 scripts per recipe unless `PROPTEST_CASES` says otherwise: a
/// script takes microseconds.
fn config() -> ProptestConfig {
    let mut config = ProptestConfig::default();
    if std::env::var_os("PROPTEST_CASES").is_none() {
        config.cases = 2_000;
    }
    config
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn a_lock(steps in script(), flavour in 0..3u8, revocable: bool) {
        let flavour = [Flavour::Recipes, Flavour::Curator, Flavour::Kazoo][usize::from(flavour)];
        let lock = Lock::with_flavour("/d/lock", flavour).unwrap();
        run(if revocable { lock.revocable() } else { lock }, LOCK_CALLS, steps);
    }

    #[test]
    fn a_read_write_lock(steps in script(), reader: bool) {
        let lock = if reader { Lock::reader("/d/rw") } else { Lock::writer("/d/rw") };
        run(lock.unwrap(), LOCK_CALLS, steps);
    }

    #[test]
    fn a_revocation(steps in script()) {
        run(Revoke::new("/d/rw/x-write-0000000001").unwrap(), REVOKE_CALLS, steps);
    }

    #[test]
    fn an_election(steps in script(), flavour in 0..3u8) {
        let flavour = [Flavour::Recipes, Flavour::Curator, Flavour::Kazoo][usize::from(flavour)];
        run(Election::with_flavour("/d/e", flavour).unwrap(), ELECTION_CALLS, steps);
    }

    #[test]
    fn an_election_observer(steps in script()) {
        run(Leaders::new("/d/e").unwrap(), LEADERS_CALLS, steps);
    }

    #[test]
    fn a_config(steps in script()) {
        run(Config::new("/d/c").unwrap(), CONFIG_CALLS, steps);
    }

    #[test]
    fn a_barrier(steps in script()) {
        run(Barrier::new("/d/b").unwrap(), BARRIER_CALLS, steps);
    }

    #[test]
    fn a_double_barrier(steps in script()) {
        run(DoubleBarrier::new("/d/db", "p").unwrap(), DOUBLE_BARRIER_CALLS, steps);
    }

    #[test]
    fn a_producer(steps in script()) {
        run(Producer::new("/d/q").unwrap(), PRODUCER_CALLS, steps);
    }

    #[test]
    fn a_consumer(steps in script(), priority: bool) {
        let consumer = if priority { Consumer::priority("/d/q") } else { Consumer::new("/d/q") };
        run(consumer.unwrap(), CONSUMER_CALLS, steps);
    }

    #[test]
    fn a_member(steps in script()) {
        run(Member::new("/d/g", "m").unwrap(), MEMBER_CALLS, steps);
    }

    #[test]
    fn a_group_observer(steps in script()) {
        run(Members::new("/d/g").unwrap(), MEMBERS_CALLS, steps);
    }

    #[test]
    fn a_two_phase_commit(steps in script()) {
        run(TwoPhase::new("/d/tx").unwrap(), TWO_PHASE_CALLS, steps);
    }
}

/// Paths and names as a user or an operator types them: `/`-led or not,
/// empty segments, `.` and `..`, the reserved `/zookeeper`, characters
/// ZooKeeper refuses, any Unicode, and lengths past every buffer.
fn typed() -> impl Strategy<Value = String> {
    prop_oneof![
        "[/a.z\u{0}\u{1f}\u{7f}\u{e000}-\u{fff0}é-]{0,12}".prop_map(String::from),
        "(/[a-z.]{0,3}){0,6}/?",
        Just("/zookeeper/quota".to_owned()),
        "/[a-z]{100,300}",
        any::<String>(),
    ]
}

proptest! {
    #![proptest_config(config())]

    /// Every constructor and every call that takes a path or a name gives
    /// a typed answer, whatever it is given.
    #[test]
    fn any_path_or_name_is_taken_or_refused(dir in typed(), name in typed()) {
        let _ = Lock::<64>::new(&dir);
        let _ = Lock::<64>::reader(&dir);
        let _ = Lock::<64>::writer(&dir);
        let _ = Lock::<64>::with_flavour(&dir, Flavour::Kazoo);
        let _ = Revoke::<64>::new(&dir);
        let _ = Election::<64, 128>::with_flavour(&dir, Flavour::Curator);
        let _ = Leaders::<64, 128>::new(&dir);
        let _ = Config::<16, 64>::new(&dir);
        let _ = Barrier::<64>::new(&dir);
        let _ = DoubleBarrier::<64>::new(&dir, &name);
        let _ = Producer::<16, 64>::new(&dir);
        let _ = Consumer::<4, 16, 64>::priority(&dir);
        let _ = Member::<16, 64>::new(&dir, &name);
        let _ = Members::<4, 16, 64>::new(&dir);
        if let Ok(mut tx) = TwoPhase::<4, 16, 64, 64>::new(&dir) {
            let _ = tx.coordinate(b"body", &[name.as_str(), "b"], Variant::AllWatch, None);
        }
        if let Ok(mut tx) = TwoPhase::<4, 16, 64, 64>::new(&dir) {
            let _ = tx.participate(&name, Variant::AllWatch);
        }
    }
}
