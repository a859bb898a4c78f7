//! The in-memory server's own rules: delivery orders, how a lost
//! connection is reported, `SetWatches` on reconnect, session ends, zxids
//! and the operator's helpers. Every simulated test stands on these, and
//! a recipe test only fails when one of them is wrong if a recipe happens
//! to depend on it.

use alloc::string::String;
use alloc::vec::Vec;
use alloc::{format, vec};

use super::*;
use crate::{Acl, CreateMode};

const FIRST: RequestId = RequestId::new(0, 1);
const SECOND: RequestId = RequestId::new(0, 2);

fn create(path: &str, mode: CreateMode) -> Request<'_> {
    Request::Create {
        path,
        data: b"",
        acl: Acl::OPEN,
        mode,
    }
}

const DATA_OF_N: Request<'static> = Request::GetData {
    path: "/n",
    watch: true,
};
const CHILDREN_OF_N: Request<'static> = Request::GetChildren {
    path: "/n",
    watch: true,
};

/// A session, on a server delivering in `order`, that has read the
/// replies to `watching` (requests setting watches on `/n`).
fn watching_n(order: DriverOrder, watching: &[Request<'_>]) -> (SimZk, SessionId) {
    let mut zk = SimZk::new(1);
    zk.set_driver_order(order);
    zk.create_persistent("/n", b"").unwrap();
    let s = zk.open_session();
    for request in watching {
        call(&mut zk, s, request);
    }
    (zk, s)
}

/// Submits `request`, applies it and hands back what the client reads.
fn call(zk: &mut SimZk, session: SessionId, request: &Request<'_>) -> Delivery {
    zk.submit(session, FIRST, request);
    assert!(zk.apply_next(session));
    zk.next_delivery(session).unwrap()
}

fn drain(zk: &mut SimZk, session: SessionId) -> Vec<Delivery> {
    core::iter::from_fn(|| zk.next_delivery(session)).collect()
}

/// The watch notifications among what the client reads now.
fn notifications(zk: &mut SimZk, session: SessionId) -> Vec<Delivery> {
    drain(zk, session)
        .into_iter()
        .filter(|d| matches!(d, Delivery::Watch(..)))
        .collect()
}

fn changed(path: &str) -> Delivery {
    Delivery::Watch(WatchKind::NodeDataChanged, path.into())
}

fn reply(id: RequestId, reply: OwnedReply) -> Delivery {
    Delivery::Reply(id, reply)
}

#[test]
fn sessions_get_ids_that_count_up() {
    let mut zk = SimZk::new(1);
    let a = zk.open_session();
    let b = zk.open_session();
    assert!(b > a, "{a:#x} then {b:#x}");
    assert_eq!(zk.status(b), Some(SessionStatus::Connected));
}

/// A notification and the reply queued ahead of it, for one session: the
/// reply answers an `exists` on `/other`, the notification is for `/n`,
/// whose data watch the client already knows of.
fn notification_behind_a_reply(order: DriverOrder) -> Vec<Delivery> {
    let (mut zk, s) = watching_n(order, &[DATA_OF_N]);
    zk.submit(
        s,
        SECOND,
        &Request::Exists {
            path: "/other",
            watch: false,
        },
    );
    zk.apply_next(s);
    zk.set_node_data("/n", b"new").unwrap();
    drain(&mut zk, s)
}

#[test]
fn in_wire_order_a_notification_waits_behind_earlier_replies() {
    assert_eq!(
        notification_behind_a_reply(DriverOrder::Wire),
        [
            reply(SECOND, OwnedReply::Error(ZkError::NoNode)),
            changed("/n")
        ]
    );
}

#[test]
fn notifications_first_lets_a_notification_overtake_earlier_replies() {
    assert_eq!(
        notification_behind_a_reply(DriverOrder::NotificationsFirst),
        [
            changed("/n"),
            reply(SECOND, OwnedReply::Error(ZkError::NoNode))
        ]
    );
}

#[test]
fn no_notification_overtakes_the_reply_that_set_its_watch() {
    let (mut zk, s) = watching_n(DriverOrder::NotificationsFirst, &[]);
    zk.submit(s, FIRST, &DATA_OF_N);
    zk.apply_next(s);
    zk.set_node_data("/n", b"new").unwrap();
    let first = zk.next_delivery(s).unwrap();
    assert!(
        matches!(first, Delivery::Reply(FIRST, OwnedReply::Data(..))),
        "{first:?}"
    );
    assert_eq!(zk.next_delivery(s), Some(changed("/n")));
}

#[test]
fn no_notification_overtakes_a_session_event() {
    let (mut zk, s) = watching_n(DriverOrder::NotificationsFirst, &[DATA_OF_N]);
    zk.disconnect(s);
    zk.set_node_data("/n", b"new").unwrap();
    zk.reconnect(s);
    let got = drain(&mut zk, s);
    let connected = Delivery::Session(SessionEvent::Connected { session_id: s });
    assert_eq!(got.last(), Some(&changed("/n")), "{got:?}");
    assert_eq!(got[got.len() - 2], connected, "{got:?}");
}

#[test]
fn listings_in_parts_hold_at_least_one_name() {
    let mut zk = SimZk::new(1);
    assert_eq!(zk.listing_part(), None);
    zk.set_listing_part(Some(3));
    assert_eq!(zk.listing_part(), Some(3));
    zk.set_listing_part(Some(0));
    assert_eq!(zk.listing_part(), Some(1));
    zk.set_listing_part(None);
    assert_eq!(zk.listing_part(), None);
}

#[test]
fn the_clock_stamps_what_is_written() {
    let mut zk = SimZk::new(1);
    zk.set_time(5_000);
    zk.create_persistent("/n", b"").unwrap();
    zk.set_time(7_000);
    zk.set_node_data("/n", b"x").unwrap();
    let stat = zk.node("/n").unwrap().stat;
    assert_eq!((stat.ctime, stat.mtime), (5_000, 7_000));
}

#[test]
fn applied_requests_are_counted_by_kind() {
    let mut zk = SimZk::new(1);
    let s = zk.open_session();
    call(&mut zk, s, &create("/a", CreateMode::Persistent));
    call(&mut zk, s, &create("/b", CreateMode::Persistent));
    call(
        &mut zk,
        s,
        &Request::Exists {
            path: "/a",
            watch: false,
        },
    );
    assert_eq!(zk.stats().count("create"), 2);
    assert_eq!(zk.stats().count("exists"), 1);
    assert_eq!(zk.stats().count("delete"), 0);
}

/// What the client reads after its connection broke with one request
/// applied and unanswered.
fn loss_report(zk: &mut SimZk) -> Vec<Delivery> {
    let s = zk.open_session();
    zk.submit(
        s,
        FIRST,
        &Request::Exists {
            path: "/",
            watch: false,
        },
    );
    zk.apply_next(s);
    zk.disconnect(s);
    drain(zk, s)
}

#[test]
fn a_lost_connection_is_reported_before_after_or_without_the_lost_answers() {
    let mut zk = SimZk::new(1);
    let lost = reply(FIRST, OwnedReply::Error(ZkError::ConnectionLoss));
    let suspended = Delivery::Session(SessionEvent::Suspended);
    let reports = [
        vec![suspended.clone(), lost.clone()],
        vec![lost.clone(), suspended],
        vec![lost],
    ];
    let mut seen = [0; 3];
    for _ in 0..60 {
        let report = loss_report(&mut zk);
        let which = reports
            .iter()
            .position(|r| *r == report)
            .unwrap_or_else(|| panic!("{report:?}"));
        seen[which] += 1;
    }
    assert!(seen.iter().all(|&n| n > 0), "{seen:?}");
}

#[test]
fn a_lost_reply_leaves_the_write_applied_and_the_client_in_doubt() {
    let mut zk = SimZk::new(1);
    let s = zk.open_session();
    zk.submit(s, FIRST, &create("/n", CreateMode::Persistent));
    zk.lose_reply_after_apply(s);
    assert!(zk.node("/n").is_some());
    assert_eq!(zk.status(s), Some(SessionStatus::Disconnected));
    let got = drain(&mut zk, s);
    assert!(
        got.contains(&reply(FIRST, OwnedReply::Error(ZkError::ConnectionLoss))),
        "{got:?}"
    );
    assert!(got
        .iter()
        .all(|d| !matches!(d, Delivery::Reply(_, OwnedReply::Created(_)))));
}

/// A session that sets a watch with `request` (reading its reply), loses
/// its connection, sees `meanwhile` done by an operator, and reconnects:
/// the notifications it reads, and the watches the server holds for it.
fn reconnect_after(
    request: &Request<'_>,
    meanwhile: impl FnOnce(&mut SimZk),
) -> (Vec<Delivery>, Vec<(&'static str, String)>) {
    reconnect_after_with(true, request, meanwhile)
}

/// The same, the client setting its watches again (`reset`) or not.
fn reconnect_after_with(
    reset: bool,
    request: &Request<'_>,
    meanwhile: impl FnOnce(&mut SimZk),
) -> (Vec<Delivery>, Vec<(&'static str, String)>) {
    let mut zk = SimZk::new(1);
    zk.set_watch_reset(reset);
    zk.create_persistent("/p/old", b"").unwrap();
    let s = zk.open_session();
    // The session's own write makes its last zxid that of /p's last
    // child change, the edge `SetWatches` compares against.
    call(&mut zk, s, &create("/p/mine", CreateMode::Persistent));
    call(&mut zk, s, request);
    zk.disconnect(s);
    drain(&mut zk, s);
    meanwhile(&mut zk);
    zk.reconnect(s);
    (notifications(&mut zk, s), zk.watches_of(s))
}

/// `request` sets a watch on `path`: a reconnect fires it as `kind` if an
/// operator created `created` meanwhile, and re-registers it as a `class`
/// watch if nothing changed.
fn fires_on_reconnect_only_after_a_change(
    request: Request<'_>,
    created: &str,
    kind: WatchKind,
    class: &str,
) {
    let path = request.path();
    let (fired, _) = reconnect_after(&request, |zk| {
        zk.create_persistent(created, b"").unwrap();
    });
    assert_eq!(fired, [Delivery::Watch(kind, path.into())]);
    let (fired, kept) = reconnect_after(&request, |_| {});
    assert_eq!(fired, []);
    assert_eq!(kept, [(class, String::from(path))]);
}

#[test]
fn without_a_watch_reset_a_reconnect_fires_and_keeps_no_watch() {
    let request = Request::GetChildren {
        path: "/p",
        watch: true,
    };
    let (fired, kept) = reconnect_after_with(false, &request, |zk| {
        zk.create_persistent("/p/new", b"").unwrap();
    });
    assert_eq!((fired, kept), (vec![], vec![]));
    let (fired, kept) = reconnect_after_with(false, &request, |_| {});
    assert_eq!((fired, kept), (vec![], vec![]));
}

#[test]
fn without_a_watch_reset_every_loss_is_reported() {
    // Only a wire session keeps no watch table, and it always reports the
    // loss; with the reset, some seeds' losses go unreported.
    let mut unreported = [0, 0];
    for seed in 0..60 {
        for (i, reset) in [false, true].into_iter().enumerate() {
            let mut zk = SimZk::new(seed);
            zk.set_watch_reset(reset);
            let s = zk.open_session();
            zk.disconnect(s);
            let reported = drain(&mut zk, s)
                .iter()
                .any(|d| matches!(d, Delivery::Session(SessionEvent::Suspended)));
            unreported[i] += u32::from(!reported);
        }
    }
    assert_eq!(unreported[0], 0);
    assert!(unreported[1] > 0);
}

#[test]
fn a_child_watch_fires_on_reconnect_only_if_the_children_changed() {
    fires_on_reconnect_only_after_a_change(
        Request::GetChildren {
            path: "/p",
            watch: true,
        },
        "/p/new",
        WatchKind::NodeChildrenChanged,
        "child",
    );
}

#[test]
fn an_exists_watch_on_a_missing_node_fires_on_reconnect_once_it_exists() {
    fires_on_reconnect_only_after_a_change(
        Request::Exists {
            path: "/e",
            watch: true,
        },
        "/e",
        WatchKind::NodeCreated,
        "exist",
    );
}

#[test]
fn a_client_forgets_only_the_watch_a_notification_fired() {
    let (mut zk, s) = watching_n(DriverOrder::Wire, &[DATA_OF_N, CHILDREN_OF_N]);
    zk.set_node_data("/n", b"x").unwrap();
    assert_eq!(drain(&mut zk, s), [changed("/n")]);
    // Still armed as the client knows it: a reconnect re-registers it and
    // fires it for the child created meanwhile.
    zk.disconnect(s);
    drain(&mut zk, s);
    zk.create_persistent("/n/c", b"").unwrap();
    zk.reconnect(s);
    assert_eq!(
        notifications(&mut zk, s),
        [Delivery::Watch(WatchKind::NodeChildrenChanged, "/n".into())]
    );
}

#[test]
fn the_watch_count_follows_watches_set_and_fired() {
    assert_eq!(SimZk::new(1).watch_count(), 0);
    let (mut zk, _) = watching_n(DriverOrder::Wire, &[DATA_OF_N, CHILDREN_OF_N]);
    assert_eq!(zk.watch_count(), 2);
    zk.set_node_data("/n", b"x").unwrap();
    assert_eq!(zk.watch_count(), 1);
}

#[test]
fn a_session_ends_once() {
    let mut zk = SimZk::new(1);
    let s = zk.open_session();
    zk.expire(s);
    zk.expire(s);
    zk.close(s);
    assert_eq!(zk.status(s), Some(SessionStatus::Expired));
    assert_eq!(
        drain(&mut zk, s),
        [Delivery::Session(SessionEvent::Expired)]
    );
}

#[test]
fn every_change_takes_a_zxid_above_all_before_it() {
    let mut zk = SimZk::new(1);
    let mut last = 0;
    let mut above = |zxid: i64, what: &str| {
        assert!(zxid > last, "{what}: zxid {zxid} after {last}");
        last = zxid;
    };
    zk.create_persistent("/a", b"").unwrap();
    above(zk.node("/a").unwrap().stat.czxid, "create_persistent");
    zk.create_persistent("/b", b"").unwrap();
    above(zk.node("/b").unwrap().stat.czxid, "create_persistent");
    zk.delete_node("/b").unwrap();
    above(zk.node("/").unwrap().stat.pzxid, "delete_node");
    zk.set_node_data("/a", b"x").unwrap();
    above(zk.node("/a").unwrap().stat.mzxid, "set_node_data");
    let s = zk.open_session();
    call(&mut zk, s, &create("/a/e", CreateMode::Ephemeral));
    above(zk.node("/a/e").unwrap().stat.czxid, "create");
    zk.expire(s);
    above(zk.node("/a").unwrap().stat.pzxid, "expiry");
    let t = zk.open_session();
    let ops = [OwnedRequest::create_open(
        "/a/m",
        b"",
        CreateMode::Persistent,
    )];
    zk.apply_multi(t, &ops).unwrap();
    above(zk.node("/a/m").unwrap().stat.czxid, "multi");
}

#[test]
fn delete_recursive_counts_every_node_it_deleted() {
    let mut zk = SimZk::new(1);
    for path in ["/a/b/c", "/a/d", "/z"] {
        zk.create_persistent(path, b"").unwrap();
    }
    assert_eq!(zk.delete_recursive("/a"), Ok(4));
    assert_eq!(zk.tree_paths(), ["/z", "/zookeeper"]);
    assert_eq!(zk.delete_recursive("/a"), Err(ZkError::NoNode));
    for i in 0..3 {
        zk.create_persistent(&format!("/y/{i}"), b"").unwrap();
    }
    assert_eq!(zk.delete_recursive("/y"), Ok(4));
}

/// A server behind the quorum (lagging reads), a reader whose server has
/// applied nothing past `/n`'s creation, and another session's write of
/// `/n/late` after it.
fn reader_behind_a_write() -> (SimZk, SessionId) {
    let mut zk = SimZk::new(7);
    zk.set_lagging_reads(true);
    zk.create_persistent("/n", b"").unwrap();
    let reader = zk.open_session();
    zk.create_persistent("/n/late", b"").unwrap();
    (zk, reader)
}

const LATE: Request<'static> = Request::GetData {
    path: "/n/late",
    watch: false,
};

/// How many of `tries` fresh lagging readers miss `/n/late` after
/// sending `first` (and reading its answer).
fn misses_after(first: Option<&Request<'_>>, tries: u64) -> usize {
    (0..tries)
        .filter(|&seed| {
            let (mut zk, reader) = reader_behind_a_write();
            zk.rng = ChaCha8Rng::seed_from_u64(seed);
            if let Some(first) = first {
                call(&mut zk, reader, first);
            }
            call(&mut zk, reader, &LATE) == reply(FIRST, OwnedReply::Error(ZkError::NoNode))
        })
        .count()
}

#[test]
fn a_lagging_read_can_miss_another_sessions_write_and_a_sync_does_not_help() {
    assert!(misses_after(None, 32) > 0, "never missed");
    let sync = Request::Sync { path: "/n/late" };
    assert!(misses_after(Some(&sync), 32) > 0, "a sync caught it up");
}

#[test]
fn a_write_of_the_session_catches_its_reads_up() {
    let check = Request::Check {
        path: "/n",
        version: Version::Any,
    };
    assert_eq!(misses_after(Some(&check), 32), 0);
    let failed = create("/n/late", CreateMode::Persistent);
    assert_eq!(
        misses_after(Some(&failed), 32),
        0,
        "an error transaction too"
    );
}

#[test]
fn without_lagging_reads_every_read_is_current() {
    let mut zk = SimZk::new(7);
    zk.create_persistent("/n", b"").unwrap();
    let reader = zk.open_session();
    zk.create_persistent("/n/late", b"").unwrap();
    assert!(matches!(
        call(&mut zk, reader, &LATE),
        Delivery::Reply(_, OwnedReply::Data(..))
    ));
}

/// A watch set by a stale read is on a server that still has to apply the
/// change the read missed: it fires as soon as that server does.
#[test]
fn a_watch_set_on_a_stale_read_fires_for_the_change_it_missed() {
    for seed in 0..32 {
        let mut zk = SimZk::new(seed);
        zk.set_lagging_reads(true);
        zk.create_persistent("/n", b"old").unwrap();
        let reader = zk.open_session();
        zk.set_node_data("/n", b"new").unwrap();
        zk.submit(reader, FIRST, &DATA_OF_N);
        zk.apply_next(reader);
        let got = drain(&mut zk, reader);
        match &got[..] {
            [Delivery::Reply(_, OwnedReply::Data(data, _))] => assert_eq!(data, b"new"),
            [Delivery::Reply(_, OwnedReply::Data(data, _)), notification] => {
                assert_eq!(data, b"old");
                assert_eq!(*notification, changed("/n"));
                // The notification came from a server that has the change.
                assert!(matches!(
                    call(&mut zk, reader, &DATA_OF_N),
                    Delivery::Reply(_, OwnedReply::Data(d, _)) if d == b"new"
                ));
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(zk.watch_count(), 1, "one watch armed after all");
    }
}

/// A lagging server can be as far back as 64 transactions: a reader that
/// has read nothing since 64 writes may still see the tree from before
/// them all.
#[test]
fn a_lagging_server_can_be_64_transactions_behind() {
    let read = Request::GetData {
        path: "/n",
        watch: false,
    };
    let oldest_seen = (0..32).any(|seed| {
        let mut zk = SimZk::new(seed);
        zk.set_lagging_reads(true);
        zk.create_persistent("/n", b"first").unwrap();
        let reader = zk.open_session();
        for i in 0..64 {
            zk.set_node_data("/n", format!("{i}").as_bytes()).unwrap();
        }
        matches!(call(&mut zk, reader, &read), Delivery::Reply(_, OwnedReply::Data(d, _)) if d == b"first")
    });
    assert!(oldest_seen, "never read the tree from before the 64 writes");
}

/// A node deleted and created again since a stale read set a watch on it:
/// the watch owes the deletion, not a data change.
#[test]
fn a_watch_on_a_node_since_made_again_owes_its_deletion() {
    for seed in 0..32 {
        let mut zk = SimZk::new(seed);
        zk.set_lagging_reads(true);
        zk.create_persistent("/n", b"old").unwrap();
        let reader = zk.open_session();
        zk.delete_node("/n").unwrap();
        zk.create_persistent("/n", b"new").unwrap();
        zk.submit(reader, FIRST, &DATA_OF_N);
        zk.apply_next(reader);
        let got = drain(&mut zk, reader);
        if let [Delivery::Reply(_, OwnedReply::Data(data, _)), notification] = &got[..] {
            assert_eq!(data, b"old");
            assert_eq!(
                *notification,
                Delivery::Watch(WatchKind::NodeDeleted, "/n".into())
            );
        }
    }
}

/// A refused prefix answers reads and writes on the paths under it with
/// its error, applies nothing and sets no watch; paths beside it and, once
/// lifted, it too, are served again.
#[test]
fn a_refused_prefix_is_answered_with_its_error_and_applies_nothing() {
    let mut zk = SimZk::new(1);
    zk.create_persistent("/n/a", b"").unwrap();
    zk.refuse("/n/", Some(ZkError::NoAuth));
    let s = zk.open_session();
    let refused = |zk: &mut SimZk, request: &Request<'_>| {
        call(zk, s, request) == Delivery::Reply(FIRST, OwnedReply::Error(ZkError::NoAuth))
    };
    assert!(refused(&mut zk, &create("/n/b", CreateMode::Persistent)));
    assert!(refused(
        &mut zk,
        &Request::GetData {
            path: "/n/a",
            watch: true
        }
    ));
    assert!(refused(
        &mut zk,
        &Request::Delete {
            path: "/n/a",
            version: Version::Any
        }
    ));
    assert_eq!(zk.tree_paths(), ["/n", "/n/a", "/zookeeper"]);
    assert!(zk.watches_of(s).is_empty(), "{:?}", zk.watches_of(s));
    // The directory itself is not under "/n/".
    assert!(matches!(
        call(&mut zk, s, &CHILDREN_OF_N),
        Delivery::Reply(_, OwnedReply::Children(_))
    ));
    let ops = [
        OwnedRequest::create_open("/m", b"", CreateMode::Persistent),
        OwnedRequest::Delete {
            path: "/n/a".into(),
            version: Version::Any,
        },
    ];
    assert_eq!(
        zk.apply_multi(s, &ops),
        Err(MultiFailure {
            index: 1,
            error: ZkError::NoAuth
        })
    );
    assert_eq!(
        zk.node("/m"),
        None,
        "a refused multi applies none of its ops"
    );
    zk.refuse("/n/", None);
    zk.submit(s, FIRST, &create("/n/b", CreateMode::Persistent));
    zk.apply_next(s);
    assert!(zk.node("/n/b").is_some(), "lifted, the create is applied");
}

/// A server whose clients read as the embedded driver does (`embedded`)
/// or as herdless-std's (`NotificationsFirst`, listings whole), with `/n`
/// created by a client while every write is over the receive buffer.
fn written_over_the_buffer(embedded: bool) -> (SimZk, SessionId) {
    let mut zk = SimZk::new(1);
    if embedded {
        zk.set_listing_part(Some(2));
    } else {
        zk.set_driver_order(DriverOrder::NotificationsFirst);
    }
    zk.set_oversized_writes(1.0);
    let s = zk.open_session();
    call(&mut zk, s, &create("/n", CreateMode::Persistent));
    zk.set_oversized_writes(0.0);
    (zk, s)
}

/// A version written over the buffer is read as `ReplyTooLarge`, its
/// watch set as the server sets it, while its `exists` says what it is; a
/// write that fits makes it readable.
#[test]
fn a_write_over_the_buffer_is_read_too_large_until_written_again() {
    let (mut zk, s) = written_over_the_buffer(true);
    assert!(zk.node("/n").unwrap().oversized);
    assert!(matches!(
        call(&mut zk, s, &DATA_OF_N),
        Delivery::Reply(_, OwnedReply::Error(ZkError::ReplyTooLarge))
    ));
    assert_eq!(zk.watches_of(s), [("data", "/n".to_string())]);
    let exists = Request::Exists {
        path: "/n",
        watch: false,
    };
    assert!(matches!(
        call(&mut zk, s, &exists),
        Delivery::Reply(_, OwnedReply::Exists(stat)) if stat.version == 0
    ));
    zk.set_node_data("/n", b"fits").unwrap();
    assert!(!zk.node("/n").unwrap().oversized);
    let read = drain(&mut zk, s);
    assert!(matches!(read[..], [Delivery::Watch(..)]), "{read:?}");
    assert!(matches!(
        call(&mut zk, s, &DATA_OF_N),
        Delivery::Reply(_, OwnedReply::Data(data, _)) if data == b"fits"
    ));
}

/// Only where the clients read through a receive buffer: herdless-std's
/// client reads any frame whole, so no write is drawn over it there.
#[test]
fn no_write_is_over_the_buffer_where_frames_are_read_whole() {
    let (mut zk, s) = written_over_the_buffer(false);
    assert!(!zk.node("/n").unwrap().oversized);
    assert!(matches!(
        call(&mut zk, s, &DATA_OF_N),
        Delivery::Reply(_, OwnedReply::Data(..))
    ));
}

/// `setData` draws too, as a create does; at rate 0 nothing is drawn.
#[test]
fn a_set_data_is_drawn_over_the_buffer_as_a_create_is() {
    let (mut zk, s) = written_over_the_buffer(true);
    let set = |data| Request::SetData {
        path: "/n",
        data,
        version: crate::Version::Any,
    };
    call(&mut zk, s, &set(b"fits"));
    assert!(!zk.node("/n").unwrap().oversized, "rate 0");
    zk.set_oversized_writes(1.0);
    call(&mut zk, s, &set(b"big"));
    assert!(zk.node("/n").unwrap().oversized);
}
