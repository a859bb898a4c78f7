//! Round trips of the wire codec, property-tested: requests encoded by the
//! crate are read back by an independent jute reader written here (a
//! server's view), replies written here are decoded by the crate, and
//! arbitrary or truncated bytes never make a decoder or the session panic.

use herdless_core::wire::{
    decode, encode, frame, ConnectRequest, EncodeError, Expect, MultiOp, MultiResult, Op, Response,
    Session, SessionConfig,
};
use herdless_core::{Acl, AclEntry, CreateMode, Instant, Request, Stat, Version, ZkError};
use proptest::prelude::*;

// ---- an independent jute writer and reader ----

#[derive(Default)]
struct W(Vec<u8>);

impl W {
    fn int(&mut self, v: i32) -> &mut Self {
        self.0.extend_from_slice(&v.to_be_bytes());
        self
    }
    fn long(&mut self, v: i64) -> &mut Self {
        self.0.extend_from_slice(&v.to_be_bytes());
        self
    }
    fn boolean(&mut self, v: bool) -> &mut Self {
        self.0.push(v as u8);
        self
    }
    fn buf(&mut self, b: &[u8]) -> &mut Self {
        self.int(b.len() as i32);
        self.0.extend_from_slice(b);
        self
    }
    fn string(&mut self, s: &str) -> &mut Self {
        self.buf(s.as_bytes())
    }
    fn stat(&mut self, s: &Stat) -> &mut Self {
        self.long(s.czxid).long(s.mzxid).long(s.ctime).long(s.mtime);
        self.int(s.version).int(s.cversion).int(s.aversion);
        self.long(s.ephemeral_owner)
            .int(s.data_length)
            .int(s.num_children);
        self.long(s.pzxid)
    }
    /// The payload as a frame: length prefix first.
    fn framed(&self) -> Vec<u8> {
        let mut f = (self.0.len() as i32).to_be_bytes().to_vec();
        f.extend_from_slice(&self.0);
        f
    }
}

struct R<'a>(&'a [u8]);

impl<'a> R<'a> {
    fn take(&mut self, n: usize) -> &'a [u8] {
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        a
    }
    fn int(&mut self) -> i32 {
        i32::from_be_bytes(self.take(4).try_into().unwrap())
    }
    fn long(&mut self) -> i64 {
        i64::from_be_bytes(self.take(8).try_into().unwrap())
    }
    fn boolean(&mut self) -> bool {
        match self.take(1)[0] {
            0 => false,
            1 => true,
            b => panic!("boolean byte {b}"),
        }
    }
    fn buf(&mut self) -> Vec<u8> {
        let n = self.int();
        assert!(n >= 0, "the client never sends null");
        self.take(n as usize).to_vec()
    }
    fn string(&mut self) -> String {
        String::from_utf8(self.buf()).unwrap()
    }
    fn strings(&mut self) -> Vec<String> {
        (0..self.int()).map(|_| self.string()).collect()
    }
}

// ---- owned models of what is sent and answered ----

type OwnedAcl = Vec<(u32, String, String)>;

#[derive(Clone, Debug, PartialEq)]
enum Sub {
    Create {
        two: bool,
        path: String,
        data: Vec<u8>,
        acl: OwnedAcl,
        flags: i32,
    },
    Delete {
        path: String,
        version: i32,
    },
    SetData {
        path: String,
        data: Vec<u8>,
        version: i32,
    },
    Check {
        path: String,
        version: i32,
    },
}

#[derive(Clone, Debug, PartialEq)]
enum Req {
    Create {
        two: bool,
        path: String,
        data: Vec<u8>,
        acl: OwnedAcl,
        flags: i32,
    },
    Delete {
        path: String,
        version: i32,
    },
    Read {
        opcode: i32,
        path: String,
        watch: bool,
    },
    SetData {
        path: String,
        data: Vec<u8>,
        version: i32,
    },
    Check {
        path: String,
        version: i32,
    },
    Sync {
        path: String,
    },
    Multi(Vec<Sub>),
}

fn mode(flags: i32) -> CreateMode {
    match flags {
        0 => CreateMode::Persistent,
        1 => CreateMode::Ephemeral,
        2 => CreateMode::PersistentSequential,
        _ => CreateMode::EphemeralSequential,
    }
}

fn version(v: i32) -> Version {
    if v == -1 {
        Version::Any
    } else {
        Version::Exactly(v)
    }
}

fn entries(acl: &OwnedAcl) -> Vec<AclEntry<'_>> {
    acl.iter()
        .map(|(perms, scheme, id)| AclEntry {
            perms: *perms,
            scheme,
            id,
        })
        .collect()
}

/// Calls `f` with the borrowed [`Op`] the model describes.
fn with_op<T>(req: &Req, f: impl FnOnce(&Op<'_>) -> T) -> T {
    match req {
        Req::Create {
            two,
            path,
            data,
            acl,
            flags,
        } => {
            let e = entries(acl);
            let (path, data, acl, mode) = (path.as_str(), data.as_slice(), Acl(&e), mode(*flags));
            f(&if *two {
                Op::Create2 {
                    path,
                    data,
                    acl,
                    mode,
                }
            } else {
                Op::Request(Request::Create {
                    path,
                    data,
                    acl,
                    mode,
                })
            })
        }
        Req::Delete { path, version: v } => f(&Op::Request(Request::Delete {
            path,
            version: version(*v),
        })),
        Req::Read {
            opcode,
            path,
            watch,
        } => f(&match opcode {
            3 => Op::Request(Request::Exists {
                path,
                watch: *watch,
            }),
            4 => Op::Request(Request::GetData {
                path,
                watch: *watch,
            }),
            _ => Op::Request(Request::GetChildren {
                path,
                watch: *watch,
            }),
        }),
        Req::SetData {
            path,
            data,
            version: v,
        } => f(&Op::Request(Request::SetData {
            path,
            data,
            version: version(*v),
        })),
        Req::Check { path, version: v } => f(&Op::Request(Request::Check {
            path,
            version: version(*v),
        })),
        Req::Sync { path } => f(&Op::Request(Request::Sync { path })),
        Req::Multi(subs) => {
            let acls: Vec<Vec<AclEntry<'_>>> = subs
                .iter()
                .map(|s| match s {
                    Sub::Create { acl, .. } => entries(acl),
                    _ => Vec::new(),
                })
                .collect();
            let ops: Vec<MultiOp<'_>> = subs
                .iter()
                .zip(&acls)
                .map(|(s, e)| match s {
                    Sub::Create {
                        two,
                        path,
                        data,
                        flags,
                        ..
                    } => {
                        let (path, data, acl, mode) =
                            (path.as_str(), data.as_slice(), Acl(e), mode(*flags));
                        if *two {
                            MultiOp::Create2 {
                                path,
                                data,
                                acl,
                                mode,
                            }
                        } else {
                            MultiOp::Create {
                                path,
                                data,
                                acl,
                                mode,
                            }
                        }
                    }
                    Sub::Delete { path, version: v } => MultiOp::Delete {
                        path,
                        version: version(*v),
                    },
                    Sub::SetData {
                        path,
                        data,
                        version: v,
                    } => MultiOp::SetData {
                        path,
                        data,
                        version: version(*v),
                    },
                    Sub::Check { path, version: v } => MultiOp::Check {
                        path,
                        version: version(*v),
                    },
                })
                .collect();
            f(&Op::Multi(&ops))
        }
    }
}

fn read_create(r: &mut R<'_>, two: bool) -> (bool, String, Vec<u8>, OwnedAcl, i32) {
    let path = r.string();
    let data = r.buf();
    let acl = (0..r.int())
        .map(|_| (r.int() as u32, r.string(), r.string()))
        .collect();
    (two, path, data, acl, r.int())
}

/// What a server reads from a request frame: its xid and the request.
fn parse_request(frame: &[u8]) -> (i32, Req) {
    let mut r = R(frame);
    assert_eq!(r.int() as usize, frame.len() - 4, "length prefix");
    let xid = r.int();
    let req = match r.int() {
        t @ (1 | 15) => {
            let (two, path, data, acl, flags) = read_create(&mut r, t == 15);
            Req::Create {
                two,
                path,
                data,
                acl,
                flags,
            }
        }
        2 => Req::Delete {
            path: r.string(),
            version: r.int(),
        },
        t @ (3 | 4 | 8) => Req::Read {
            opcode: t,
            path: r.string(),
            watch: r.boolean(),
        },
        5 => Req::SetData {
            path: r.string(),
            data: r.buf(),
            version: r.int(),
        },
        9 => Req::Sync { path: r.string() },
        14 => {
            let mut subs = Vec::new();
            loop {
                let (t, done, err) = (r.int(), r.boolean(), r.int());
                assert_eq!(err, -1);
                if done {
                    assert_eq!(t, -1);
                    break;
                }
                subs.push(match t {
                    1 | 15 => {
                        let (two, path, data, acl, flags) = read_create(&mut r, t == 15);
                        Sub::Create {
                            two,
                            path,
                            data,
                            acl,
                            flags,
                        }
                    }
                    2 => Sub::Delete {
                        path: r.string(),
                        version: r.int(),
                    },
                    5 => Sub::SetData {
                        path: r.string(),
                        data: r.buf(),
                        version: r.int(),
                    },
                    13 => Sub::Check {
                        path: r.string(),
                        version: r.int(),
                    },
                    t => panic!("sub-op {t}"),
                });
            }
            Req::Multi(subs)
        }
        t => panic!("opcode {t}"),
    };
    assert!(r.0.is_empty(), "trailing bytes");
    (xid, req)
}

// ---- strategies ----

fn path() -> impl Strategy<Value = String> {
    prop_oneof!["/[a-z0-9_-]{0,12}(/[a-z0-9_-]{1,12}){0,3}", any::<String>(),]
}

fn data() -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(any::<u8>(), 0..64)
}

fn acl() -> impl Strategy<Value = OwnedAcl> {
    proptest::collection::vec((0u32..32, "[a-z]{0,8}", any::<String>()), 0..3)
}

fn ver() -> impl Strategy<Value = i32> {
    prop_oneof![Just(-1), 0..i32::MAX]
}

fn sub() -> impl Strategy<Value = Sub> {
    prop_oneof![
        (any::<bool>(), path(), data(), acl(), 0..4).prop_map(|(two, path, data, acl, flags)| {
            Sub::Create {
                two,
                path,
                data,
                acl,
                flags,
            }
        }),
        (path(), ver()).prop_map(|(path, version)| Sub::Delete { path, version }),
        (path(), data(), ver()).prop_map(|(path, data, version)| Sub::SetData {
            path,
            data,
            version
        }),
        (path(), ver()).prop_map(|(path, version)| Sub::Check { path, version }),
    ]
}

fn req() -> impl Strategy<Value = Req> {
    prop_oneof![
        (any::<bool>(), path(), data(), acl(), 0..4).prop_map(|(two, path, data, acl, flags)| {
            Req::Create {
                two,
                path,
                data,
                acl,
                flags,
            }
        }),
        (path(), ver()).prop_map(|(path, version)| Req::Delete { path, version }),
        (
            prop_oneof![Just(3), Just(4), Just(8)],
            path(),
            any::<bool>()
        )
            .prop_map(|(opcode, path, watch)| Req::Read {
                opcode,
                path,
                watch
            }),
        (path(), data(), ver()).prop_map(|(path, data, version)| Req::SetData {
            path,
            data,
            version
        }),
        (path(), ver()).prop_map(|(path, version)| Req::Check { path, version }),
        path().prop_map(|path| Req::Sync { path }),
        proptest::collection::vec(sub(), 1..5).prop_map(Req::Multi),
    ]
}

fn stat() -> impl Strategy<Value = Stat> {
    (
        (any::<i64>(), any::<i64>(), any::<i64>(), any::<i64>()),
        (any::<i32>(), any::<i32>(), any::<i32>(), any::<i64>()),
        (any::<i32>(), any::<i32>(), any::<i64>()),
    )
        .prop_map(
            |((czxid, mzxid, ctime, mtime), (version, cversion, aversion, eo), (dl, nc, pzxid))| {
                Stat {
                    czxid,
                    mzxid,
                    ctime,
                    mtime,
                    version,
                    cversion,
                    aversion,
                    ephemeral_owner: eo,
                    data_length: dl,
                    num_children: nc,
                    pzxid,
                }
            },
        )
}

/// A reply body as the server writes it, with what it should decode to.
#[derive(Clone, Debug)]
enum Answer {
    Created(String),
    Created2(String, Stat),
    Deleted,
    Exists(Stat),
    Data(Vec<u8>, Stat),
    DataSet(Stat),
    Children(Vec<String>),
    Synced(String),
    Multi(Vec<Res>),
    Error(Expect, i32),
}

#[derive(Clone, Debug)]
enum Res {
    Created(String),
    Created2(String, Stat),
    Deleted,
    DataSet(Stat),
    Checked,
    NotApplied,
    Error(i32),
}

fn res() -> impl Strategy<Value = Res> {
    prop_oneof![
        path().prop_map(Res::Created),
        (path(), stat()).prop_map(|(p, s)| Res::Created2(p, s)),
        Just(Res::Deleted),
        stat().prop_map(Res::DataSet),
        Just(Res::Checked),
        Just(Res::NotApplied),
        any::<i32>()
            .prop_filter("an error", |c| *c != 0)
            .prop_map(Res::Error),
    ]
}

fn expect() -> impl Strategy<Value = Expect> {
    prop_oneof![
        Just(Expect::Create),
        Just(Expect::Create2),
        Just(Expect::Delete),
        Just(Expect::Exists),
        Just(Expect::GetData),
        Just(Expect::SetData),
        Just(Expect::GetChildren),
        Just(Expect::Check),
        Just(Expect::Sync),
        (0usize..4).prop_map(|ops| Expect::Multi { ops }),
    ]
}

fn answer() -> impl Strategy<Value = Answer> {
    prop_oneof![
        path().prop_map(Answer::Created),
        (path(), stat()).prop_map(|(p, s)| Answer::Created2(p, s)),
        Just(Answer::Deleted),
        stat().prop_map(Answer::Exists),
        (data(), stat()).prop_map(|(d, s)| Answer::Data(d, s)),
        stat().prop_map(Answer::DataSet),
        proptest::collection::vec(any::<String>(), 0..20).prop_map(Answer::Children),
        path().prop_map(Answer::Synced),
        proptest::collection::vec(res(), 0..6).prop_map(Answer::Multi),
        (expect(), any::<i32>().prop_filter("an error", |c| *c != 0))
            .prop_map(|(e, c)| Answer::Error(e, c)),
    ]
}

impl Answer {
    fn expect(&self) -> Expect {
        match self {
            Answer::Created(_) => Expect::Create,
            Answer::Created2(..) => Expect::Create2,
            Answer::Deleted => Expect::Delete,
            Answer::Exists(_) => Expect::Exists,
            Answer::Data(..) => Expect::GetData,
            Answer::DataSet(_) => Expect::SetData,
            Answer::Children(_) => Expect::GetChildren,
            Answer::Synced(_) => Expect::Sync,
            Answer::Multi(r) => Expect::Multi { ops: r.len() },
            Answer::Error(e, _) => *e,
        }
    }

    /// The reply frame: header with xid 7, zxid 9, then the body.
    fn frame(&self) -> Vec<u8> {
        let mut w = W::default();
        let err = if let Answer::Error(_, c) = self {
            *c
        } else {
            0
        };
        w.int(7).long(9).int(err);
        match self {
            Answer::Created(p) | Answer::Synced(p) => {
                w.string(p);
            }
            Answer::Created2(p, s) => {
                w.string(p).stat(s);
            }
            Answer::Deleted => {}
            Answer::Exists(s) | Answer::DataSet(s) => {
                w.stat(s);
            }
            Answer::Data(d, s) => {
                w.buf(d).stat(s);
            }
            Answer::Children(names) => {
                w.int(names.len() as i32);
                for n in names {
                    w.string(n);
                }
            }
            Answer::Multi(results) => {
                for r in results {
                    match r {
                        Res::Created(p) => {
                            w.int(1).boolean(false).int(0).string(p);
                        }
                        Res::Created2(p, s) => {
                            w.int(15).boolean(false).int(0).string(p).stat(s);
                        }
                        Res::Deleted => {
                            w.int(2).boolean(false).int(0);
                        }
                        Res::DataSet(s) => {
                            w.int(5).boolean(false).int(0).stat(s);
                        }
                        Res::Checked => {
                            w.int(13).boolean(false).int(0);
                        }
                        Res::NotApplied => {
                            w.int(-1).boolean(false).int(0).int(0);
                        }
                        Res::Error(c) => {
                            w.int(-1).boolean(false).int(*c).int(*c);
                        }
                    }
                }
                w.int(-1).boolean(true).int(-1);
            }
            // The server may append a body to an error; it must be skipped.
            Answer::Error(..) => {
                w.string("ignored");
            }
        }
        w.framed()
    }

    fn check(&self, got: &Response<'_>) {
        match (self, got) {
            (Answer::Created(p), Response::Created { path }) => assert_eq!(p, path),
            (Answer::Created2(p, s), Response::Created2 { path, stat }) => {
                assert_eq!((p.as_str(), s), (*path, stat))
            }
            (Answer::Deleted, Response::Deleted) => {}
            (Answer::Synced(_), Response::Synced) => {}
            (Answer::Exists(s), Response::Exists { stat }) => assert_eq!(s, stat),
            (Answer::DataSet(s), Response::DataSet { stat }) => assert_eq!(s, stat),
            (Answer::Data(d, s), Response::Data { data, stat }) => {
                assert_eq!((d.as_slice(), s), (*data, stat))
            }
            (Answer::Children(names), Response::Children(children)) => {
                assert_eq!(children.count_all(), names.len());
                assert!(children.clone().eq(names.iter().map(String::as_str)));
            }
            (Answer::Multi(results), Response::Multi(got)) => {
                assert_eq!(got.len(), results.len());
                for (want, got) in results.iter().zip(got.iter()) {
                    match (want, got) {
                        (Res::Created(p), MultiResult::Created { path }) => assert_eq!(p, path),
                        (Res::Created2(p, s), MultiResult::Created2 { path, stat }) => {
                            assert_eq!((p.as_str(), s), (path, &stat))
                        }
                        (Res::Deleted, MultiResult::Deleted)
                        | (Res::Checked, MultiResult::Checked)
                        | (Res::NotApplied, MultiResult::NotApplied) => {}
                        (Res::DataSet(s), MultiResult::DataSet { stat }) => assert_eq!(s, &stat),
                        (Res::Error(c), MultiResult::Error(e)) => assert_eq!(*c, e.code()),
                        (want, got) => panic!("{want:?} decoded as {got:?}"),
                    }
                }
            }
            (Answer::Error(_, c), Response::Error(e)) => {
                assert_eq!(*c, e.code());
                assert_eq!(ZkError::from_code(*c), Some(*e));
            }
            (want, got) => panic!("{want:?} decoded as {got:?}"),
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn requests_read_back_as_sent(xid in 1..i32::MAX, req in req()) {
        let mut buf = vec![0u8; 4096];
        let n = with_op(&req, |op| encode::request(xid, op, &mut buf)).unwrap();
        prop_assert_eq!(with_op(&req, encode::request_len), Ok(n));
        let (read_xid, read) = parse_request(&buf[..n]);
        prop_assert_eq!(read_xid, xid);
        // A check goes out as a multi of one check.
        let sent = match req {
            Req::Check { path, version } => Req::Multi(vec![Sub::Check { path, version }]),
            other => other,
        };
        prop_assert_eq!(read, sent);
    }

    #[test]
    fn a_short_buffer_is_reported_and_left_alone(req in req(), short in 0usize..4096) {
        let needed = with_op(&req, encode::request_len).unwrap();
        let len = short % needed;
        let mut buf = vec![0xA5u8; len];
        let result = with_op(&req, |op| encode::request(3, op, &mut buf));
        prop_assert_eq!(result, Err(EncodeError::BufferTooSmall { needed, capacity: len }));
        prop_assert!(buf.iter().all(|b| *b == 0xA5));
    }

    #[test]
    fn replies_decode_to_what_the_server_wrote(answer in answer()) {
        let framed = answer.frame();
        let f = frame::split(&framed, usize::MAX).unwrap().unwrap();
        prop_assert_eq!(f.consumed, framed.len());
        let (header, response) = decode::reply(answer.expect(), f.payload).unwrap();
        prop_assert_eq!((header.xid, header.zxid), (7, 9));
        answer.check(&response);
    }

    #[test]
    fn every_truncated_reply_is_an_error(answer in answer()) {
        let framed = answer.frame();
        let payload = &framed[4..];
        // Errors skip their body; everything else needs all of it.
        let needed = if let Answer::Error(..) = answer { 16 } else { payload.len() };
        for cut in 0..needed {
            prop_assert!(decode::reply(answer.expect(), &payload[..cut]).is_err());
            prop_assert_eq!(frame::split(&framed[..cut + 4], usize::MAX), Ok(None));
        }
    }

    #[test]
    fn notifications_round_trip(kind in 1..5i32, path in path()) {
        let mut w = W::default();
        w.int(-1).long(-1).int(0).int(kind).int(3).string(&path);
        let framed = w.framed();
        let (header, body) = decode::reply_header(&framed[4..]).unwrap();
        prop_assert_eq!(header.xid, -1);
        let event = decode::notification(body).unwrap().watch_event().unwrap();
        prop_assert_eq!((event.kind.code(), event.path), (kind, path.as_str()));
    }

    #[test]
    fn handshake_records_round_trip(
        zxid in any::<i64>(), timeout in any::<i32>(), session in any::<i64>(),
        password in proptest::collection::vec(any::<u8>(), 0..32), read_only in any::<bool>(),
    ) {
        let req = ConnectRequest { last_zxid_seen: zxid, timeout_ms: timeout, session_id: session, password: &password, read_only };
        let mut buf = [0u8; 128];
        let n = encode::connect(&req, &mut buf).unwrap();
        let mut r = R(&buf[4..n]);
        prop_assert_eq!((r.int(), r.long(), r.int(), r.long()), (0, zxid, timeout, session));
        prop_assert_eq!(r.buf(), password.clone());
        prop_assert_eq!(r.boolean(), read_only);
        prop_assert!(r.0.is_empty());

        let mut w = W::default();
        w.int(0).int(timeout).long(session).buf(&password).boolean(read_only);
        let framed = w.framed();
        let resp = decode::connect_response(&framed[4..]).unwrap();
        prop_assert_eq!((resp.timeout_ms, resp.session_id, resp.password, resp.read_only),
            (timeout, session, password.as_slice(), Some(read_only)));
        prop_assert_eq!(resp.is_expired(), timeout <= 0 || session == 0);
    }

    #[test]
    fn set_watches_round_trip(
        zxid in any::<i64>(),
        lists in proptest::array::uniform3(proptest::collection::vec(path(), 0..5)),
    ) {
        let refs: Vec<Vec<&str>> = lists.iter().map(|l| l.iter().map(String::as_str).collect()).collect();
        let mut buf = vec![0u8; 8192];
        let n = encode::set_watches(zxid, &refs[0], &refs[1], &refs[2], &mut buf).unwrap();
        let mut r = R(&buf[4..n]);
        prop_assert_eq!((r.int(), r.int(), r.long()), (-8, 101, zxid));
        for list in &lists {
            prop_assert_eq!(&r.strings(), list);
        }
        prop_assert!(r.0.is_empty());
    }

    #[test]
    fn arbitrary_bytes_never_panic_a_decoder(bytes in proptest::collection::vec(any::<u8>(), 0..256), expect in expect()) {
        let _ = frame::split(&bytes, 1 << 20);
        let _ = decode::connect_response(&bytes);
        let _ = decode::notification(&bytes);
        for err in [0, -101] {
            if let Ok(r) = decode::response(expect, err, &bytes) {
                match r {
                    Response::Children(c) => { let _ = c.count(); }
                    Response::Multi(m) => { prop_assert_eq!(m.iter().count(), m.len()); }
                    _ => {}
                }
            }
        }
    }

    #[test]
    fn arbitrary_frames_never_panic_the_session(
        script in proptest::collection::vec((0u8..6, proptest::collection::vec(any::<u8>(), 0..48)), 0..40),
        servers in 0usize..6,
        seed in any::<u32>(),
    ) {
        let config = SessionConfig::new(servers, 6000).with_server_seed(seed);
        let mut s: Session<u8, 4, 4, 32> = Session::new(config, Instant::from_millis(0));
        let mut now = 0u64;
        let mut conn = None;
        let mut tx = [0u8; 256];
        for (command, bytes) in script {
            let at = Instant::from_millis(now);
            while let Some(a) = s.poll_action() {
                if let herdless_core::wire::Action::Connect { conn: c, server } = a {
                    prop_assert!(server < servers.max(1));
                    conn = Some(c);
                }
            }
            let Some(c) = conn else { break };
            match command {
                0 => s.handle_connected(c, at),
                1 => {
                    // A well-formed handshake answer, so later frames reach the reply path.
                    let mut w = W::default();
                    w.int(0).int(6000).long(5).buf(&[1; 16]).boolean(false);
                    let _ = s.handle_frame(c, &w.0, at);
                }
                2 => { let _ = s.handle_frame(c, &bytes, at); }
                3 => { now += u64::from(bytes.first().copied().unwrap_or(1)) * 40; s.handle_timeout(Instant::from_millis(now)); }
                4 => s.handle_disconnected(c, at),
                _ => { let _ = s.send(bytes.len() as u8, &Op::Request(Request::GetChildren { path: "/a", watch: true }), &mut tx, at); }
            }
            while let Ok(Some(n)) = s.poll_transmit(&mut tx, at) {
                prop_assert!(n <= tx.len());
            }
            while s.poll_event().is_some() {}
            prop_assert!(s.pending() <= 4);
        }
    }
}
