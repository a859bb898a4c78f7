//! Queues under faults placed by hand: a connection break answered with
//! `ConnectionLoss` (applied or not), a session that expires, an operator
//! who deletes the queue directory, items of other libraries, and the
//! sequence counter wrapping past `i32::MAX`. Every item carries a unique
//! payload, so a loss or a duplicate is counted.

mod faults;

use faults::{Link, Operator};
use herdless_core::naming::Guid;
use herdless_core::queue::{Consumer, ConsumerEvent, Producer, ProducerEvent};
use herdless_core::sim::SimZk;
use herdless_core::Instant;
use herdless_core::{CreateMode, Recipe, SessionEvent};

const QUEUE: &str = "/app/queue";

type Cons = Consumer<4, 64>;
type Prod = Producer<64>;

/// Both kinds of consumer: every scenario runs on each.
type NewConsumer = fn() -> Cons;

fn consumers() -> [(&'static str, NewConsumer); 2] {
    [
        ("plain", || Consumer::new(QUEUE).unwrap()),
        ("priority", || Consumer::priority(QUEUE).unwrap()),
    ]
}

fn items(zk: &SimZk) -> Vec<Vec<u8>> {
    let mut names = zk.children(QUEUE).unwrap_or_default();
    names.sort();
    names
        .iter()
        .map(|n| zk.node(&format!("{QUEUE}/{n}")).unwrap().data.clone())
        .collect()
}

/// Applies and delivers one request at a time until the recipe has sent a
/// request of `kind`, which is left unapplied.
fn advance_to<R: Recipe>(link: &mut Link<R>, zk: &mut SimZk, kind: &str) {
    let before = link.count(kind);
    for _ in 0..100 {
        if link.count(kind) > before {
            return;
        }
        assert!(link.apply_one(zk), "stuck before a {kind}: {:?}", link.sent);
        link.deliver(zk);
    }
    panic!("no {kind} sent");
}

fn with_two_items(zk: &mut SimZk) {
    zk.create_persistent(&format!("{QUEUE}/a-queue-0000000001"), b"one")
        .unwrap();
    zk.create_persistent(&format!("{QUEUE}/b-queue-0000000002"), b"two")
        .unwrap();
}

#[test]
fn a_delete_answered_connection_loss_that_never_landed_is_sent_again() {
    for (kind, consumer) in consumers() {
        let mut zk = SimZk::new(1);
        with_two_items(&mut zk);
        let mut c = Link::new(&mut zk, consumer());
        c.act(&mut zk, |c| c.take(None)).unwrap();
        advance_to(&mut c, &mut zk, "delete");
        c.connection_loss(&mut zk, 0);
        c.settle(&mut zk);
        assert_eq!(c.events, [ConsumerEvent::Taken { certain: true }], "{kind}");
        assert_eq!(c.recipe.item(), b"one", "{kind}");
        assert_eq!(items(&zk), [b"two".to_vec()], "{kind}: item one stays");
    }
}

#[test]
fn a_delete_that_landed_but_whose_answer_was_lost_is_reported_not_lost() {
    for (kind, consumer) in consumers() {
        let mut zk = SimZk::new(2);
        with_two_items(&mut zk);
        let mut c = Link::new(&mut zk, consumer());
        c.act(&mut zk, |c| c.take(None)).unwrap();
        advance_to(&mut c, &mut zk, "delete");
        c.connection_loss(&mut zk, 1);
        c.settle(&mut zk);
        // Re-deleting blindly gets NoNode, reads as "taken by someone
        // else", and item one is lost (the take moves on to item two).
        assert_eq!(
            c.events,
            [ConsumerEvent::Taken { certain: false }],
            "{kind}"
        );
        assert_eq!(c.recipe.item(), b"one", "{kind}");
        assert_eq!(items(&zk), [b"two".to_vec()], "{kind}");
    }
}

#[test]
fn an_item_another_consumer_took_while_our_delete_was_lost_is_never_claimed_certain() {
    for (kind, consumer) in consumers() {
        let mut zk = SimZk::new(3);
        with_two_items(&mut zk);
        let mut a = Link::new(&mut zk, consumer());
        let mut b = Link::new(&mut zk, Cons::new(QUEUE).unwrap());
        a.act(&mut zk, |c| c.take(None)).unwrap();
        advance_to(&mut a, &mut zk, "delete");
        b.act(&mut zk, |c| c.take(None)).unwrap();
        b.settle(&mut zk);
        assert_eq!(b.events, [ConsumerEvent::Taken { certain: true }]);
        assert_eq!(b.recipe.item(), b"one");
        a.connection_loss(&mut zk, 0);
        a.settle(&mut zk);
        // Gone after a lost delete: ours or b's removed it, nothing tells
        // which. Never a second certain take of item one.
        assert_eq!(
            a.events,
            [ConsumerEvent::Taken { certain: false }],
            "{kind}"
        );
        assert_eq!(a.recipe.item(), b"one", "{kind}");
        assert_eq!(items(&zk), [b"two".to_vec()], "{kind}");
    }
}

#[test]
fn a_take_waiting_on_an_empty_queue_survives_the_directory_being_deleted_and_recreated() {
    for (kind, consumer) in consumers() {
        let mut zk = SimZk::new(4);
        zk.create_persistent(QUEUE, b"").unwrap();
        let mut op = Operator::open(&mut zk);
        let mut c = Link::new(&mut zk, consumer());
        c.act(&mut zk, |c| c.take(None)).unwrap();
        c.settle(&mut zk);
        assert!(c.events.is_empty(), "{kind}: waits");
        op.delete_all(&mut zk, QUEUE);
        c.settle(&mut zk);
        op.create(&mut zk, QUEUE, b"", CreateMode::Persistent);
        c.settle(&mut zk);
        op.create(
            &mut zk,
            &format!("{QUEUE}/x-queue-"),
            b"new-1",
            CreateMode::PersistentSequential,
        );
        c.settle(&mut zk);
        assert_eq!(
            c.events,
            [ConsumerEvent::Taken { certain: true }],
            "{kind}: the item of the re-created queue"
        );
        assert_eq!(c.recipe.item(), b"new-1", "{kind}");
        assert!(items(&zk).is_empty(), "{kind}");
    }
}

#[test]
fn a_take_on_a_missing_directory_waits_for_it() {
    for (kind, consumer) in consumers() {
        let mut zk = SimZk::new(5);
        zk.create_persistent("/app", b"").unwrap();
        let mut op = Operator::open(&mut zk);
        let mut c = Link::new(&mut zk, consumer());
        c.act(&mut zk, |c| c.take(None)).unwrap();
        c.settle(&mut zk);
        assert!(c.events.is_empty(), "{kind}: waits, {:?}", c.events);
        op.create(&mut zk, QUEUE, b"", CreateMode::Persistent);
        c.settle(&mut zk);
        op.create(
            &mut zk,
            &format!("{QUEUE}/x-queue-"),
            b"first",
            CreateMode::PersistentSequential,
        );
        c.settle(&mut zk);
        assert_eq!(c.events, [ConsumerEvent::Taken { certain: true }], "{kind}");
        assert_eq!(c.recipe.item(), b"first", "{kind}");
        // A peek of a missing queue finds it empty, as Curator's does.
        op.delete_all(&mut zk, QUEUE);
        c.events.clear();
        c.act(&mut zk, |c| c.peek()).unwrap();
        c.settle(&mut zk);
        assert_eq!(c.events, [ConsumerEvent::Empty], "{kind}");
    }
}

/// Takes until the queue is empty (a take with a deadline of 0 ends on an
/// empty queue) and returns the payloads in the order taken.
fn take_all(c: &mut Link<Cons>, zk: &mut SimZk) -> Vec<Vec<u8>> {
    let mut taken = Vec::new();
    for _ in 0..100 {
        c.events.clear();
        c.act(zk, |c| c.take(Some(herdless_core::Instant::from_millis(0))))
            .unwrap();
        c.settle(zk);
        if c.events.is_empty() {
            // Waiting on an empty queue: the deadline has passed.
            c.act(zk, |r| {
                r.handle_timeout(herdless_core::Instant::from_millis(1))
            });
        }
        match c.events[..] {
            [ConsumerEvent::Taken { certain: true }] => taken.push(c.recipe.item().to_vec()),
            [ConsumerEvent::Empty] => return taken,
            ref other => panic!("{other:?}"),
        }
    }
    panic!("the queue never emptied");
}

#[test]
fn items_named_by_other_libraries_are_taken_in_sequence_order() {
    for (kind, consumer) in consumers() {
        let mut zk = SimZk::new(6);
        zk.create_persistent(QUEUE, b"").unwrap();
        let mut op = Operator::open(&mut zk);
        // Creation order is the order expected out.
        let prefixes = [
            "queue-",          // the recipes page, Curator's DistributedQueue
            "qn-", // ZooKeeper's recipes DistributedQueue, Curator's SimpleDistributedQueue
            "0a1b2c3d-queue-", // herdless
            "entry-000-", // Kazoo's Queue, priority 0
            "queue-",
            "qn-",
        ];
        let mut expected = Vec::new();
        for (n, prefix) in prefixes.iter().enumerate() {
            let data = format!("item-{n}-{prefix}").into_bytes();
            op.create(
                &mut zk,
                &format!("{QUEUE}/{prefix}"),
                &data,
                CreateMode::PersistentSequential,
            );
            expected.push(data);
        }
        let mut c = Link::new(&mut zk, consumer());
        let taken = take_all(&mut c, &mut zk);
        let show = |v: &[Vec<u8>]| {
            v.iter()
                .map(|d| String::from_utf8_lossy(d).into_owned())
                .collect::<Vec<_>>()
        };
        assert_eq!(show(&taken), show(&expected), "{kind}");
    }
}

#[test]
fn priorities_of_other_libraries_order_items_lowest_first() {
    for (kind, consumer) in consumers() {
        let mut zk = SimZk::new(7);
        zk.create_persistent(QUEUE, b"").unwrap();
        let mut op = Operator::open(&mut zk);
        // (prefix, priority): created in this order, expected out by
        // priority, then creation.
        let items = [
            ("entry-005-", 5),       // Kazoo, priority 5
            ("0a1b-queue-03-", 3),   // herdless, priority 3
            ("queue-100000004", 4),  // Curator DistributedPriorityQueue, 4
            ("queue-0FFFFFFFF", -1), // Curator, priority -1
            ("entry-003-", 3),       // Kazoo, priority 3
            ("0a1b-queue-", 0),      // herdless, no priority
            ("queue-10000000A", 10), // Curator, priority 10
        ];
        let mut expected: Vec<(i32, usize, Vec<u8>)> = Vec::new();
        for (n, (prefix, priority)) in items.iter().enumerate() {
            let data = format!("item-{n}-p{priority}").into_bytes();
            op.create(
                &mut zk,
                &format!("{QUEUE}/{prefix}"),
                &data,
                CreateMode::PersistentSequential,
            );
            expected.push((*priority, n, data));
        }
        expected.sort();
        let expected: Vec<String> = expected
            .into_iter()
            .map(|(_, _, d)| String::from_utf8(d).unwrap())
            .collect();
        let mut c = Link::new(&mut zk, consumer());
        let taken: Vec<String> = take_all(&mut c, &mut zk)
            .into_iter()
            .map(|d| String::from_utf8(d).unwrap())
            .collect();
        assert_eq!(taken, expected, "{kind}");
    }
}

#[test]
fn items_come_out_in_creation_order_across_the_sequence_wrap() {
    for (kind, consumer) in consumers() {
        for priority in [None, Some(7)] {
            let mut zk = SimZk::new(8);
            zk.create_persistent(QUEUE, b"").unwrap();
            zk.set_cversion(QUEUE, i32::MAX - 3).unwrap();
            let mut p = Link::new(&mut zk, Prod::new(QUEUE).unwrap());
            let mut expected = Vec::new();
            for n in 0..8u8 {
                let data = format!("item-{n}").into_bytes();
                p.act(&mut zk, |p| {
                    p.put(Guid::from_random_bytes([n; 16]), &data, priority, false)
                })
                .unwrap();
                p.settle(&mut zk);
                expected.push(data);
            }
            assert_eq!(p.events, [ProducerEvent::Put; 8]);
            // The test covers the wrap: some names end in a negative
            // sequence, eleven characters wide.
            let names = zk.children(QUEUE).unwrap();
            assert!(
                names.iter().any(|n| n.ends_with("--2147483647")),
                "{names:?}"
            );
            let mut c = Link::new(&mut zk, consumer());
            assert_eq!(take_all(&mut c, &mut zk), expected, "{kind} {priority:?}");
        }
    }
}

#[test]
fn a_put_whose_create_is_answered_connection_loss_finds_its_item() {
    for applied in [1, 0] {
        let mut zk = SimZk::new(9);
        zk.create_persistent(QUEUE, b"").unwrap();
        let mut p = Link::new(&mut zk, Prod::new(QUEUE).unwrap());
        p.act(&mut zk, |p| {
            p.put(Guid::from_random_bytes([9; 16]), b"only", None, false)
        })
        .unwrap();
        p.connection_loss(&mut zk, applied);
        p.settle(&mut zk);
        assert_eq!(p.events, [ProducerEvent::Put], "applied {applied}");
        assert_eq!(items(&zk), [b"only".to_vec()], "applied {applied}");
        let expected_creates = if applied == 1 { 1 } else { 2 };
        assert_eq!(p.count("create"), expected_creates, "applied {applied}");
        let name = zk.children(QUEUE).unwrap().remove(0);
        assert_eq!(p.recipe.item(), format!("{QUEUE}/{name}"));
    }
}

#[test]
fn a_put_cut_by_session_expiry_finds_its_item_on_the_new_session() {
    for applied in [1, 0] {
        let mut zk = SimZk::new(10);
        zk.create_persistent(QUEUE, b"").unwrap();
        let mut p = Link::new(&mut zk, Prod::new(QUEUE).unwrap());
        p.act(&mut zk, |p| {
            p.put(Guid::from_random_bytes([10; 16]), b"only", None, false)
        })
        .unwrap();
        p.expire_and_renew(&mut zk, applied);
        p.settle(&mut zk);
        assert_eq!(p.events, [ProducerEvent::Put], "applied {applied}");
        assert_eq!(items(&zk), [b"only".to_vec()], "applied {applied}");
        let name = zk.children(QUEUE).unwrap().remove(0);
        assert_eq!(p.recipe.item(), format!("{QUEUE}/{name}"));
    }
}

#[test]
fn an_ephemeral_put_cut_by_session_expiry_fails() {
    let mut zk = SimZk::new(11);
    zk.create_persistent(QUEUE, b"").unwrap();
    let mut p = Link::new(&mut zk, Prod::new(QUEUE).unwrap());
    p.act(&mut zk, |p| {
        p.put(Guid::from_random_bytes([11; 16]), b"gone", None, true)
    })
    .unwrap();
    p.expire_and_renew(&mut zk, 1);
    p.settle(&mut zk);
    assert_eq!(
        p.events,
        [ProducerEvent::Failed(
            herdless_core::queue::Error::SessionEnded
        )]
    );
    assert!(items(&zk).is_empty(), "died with its session");
}

#[test]
fn a_delete_cut_by_session_expiry_is_checked_on_the_new_session() {
    for (kind, consumer) in consumers() {
        for applied in [0, 1] {
            let mut zk = SimZk::new(12);
            with_two_items(&mut zk);
            let mut c = Link::new(&mut zk, consumer());
            c.act(&mut zk, |c| c.take(None)).unwrap();
            advance_to(&mut c, &mut zk, "delete");
            c.expire_and_renew(&mut zk, applied);
            c.settle(&mut zk);
            // Never landed: the item is still there, and reporting it taken
            // would have another consumer take it a second time.
            let certain = applied == 0;
            assert_eq!(
                c.events,
                [ConsumerEvent::Taken { certain }],
                "{kind}, applied {applied}"
            );
            assert_eq!(c.recipe.item(), b"one", "{kind}");
            assert_eq!(items(&zk), [b"two".to_vec()], "{kind}, applied {applied}");
        }
    }
}

/// A take's deadline that passes while its delete is on its way, or lost
/// with the connection or with the session, cannot end the take (the item
/// may be taken), and is not reported due either: a driver calls
/// `handle_timeout` whenever `poll_timeout` is due, and a timer that stays
/// due after the call spins the driver (on an embedded executor it starves
/// the network stack that would bring the answer). Once the delete is
/// resolved the take is reported as usual.
#[test]
fn a_deadline_passing_while_a_delete_is_unresolved_is_not_due() {
    for (kind, consumer) in consumers() {
        for cut in ["none", "connection", "session"] {
            let mut zk = SimZk::new(13);
            with_two_items(&mut zk);
            let mut c = Link::new(&mut zk, consumer());
            c.act(&mut zk, |c| c.take(Some(Instant::from_millis(100))))
                .unwrap();
            advance_to(&mut c, &mut zk, "delete");
            match cut {
                "connection" => zk.disconnect(c.session),
                "session" => zk.expire(c.session),
                _ => {}
            }
            c.deliver(&mut zk);
            let late = Instant::from_millis(500);
            c.recipe.handle_timeout(late);
            c.pump(&mut zk);
            assert!(c.events.is_empty(), "{kind}, {cut}: {:?}", c.events);
            let due = c.recipe.poll_timeout();
            assert!(
                due.is_none_or(|at| at > late),
                "{kind}, {cut}: the timer stays due at {due:?} after firing at {late:?}"
            );
            match cut {
                "connection" => zk.reconnect(c.session),
                "session" => {
                    c.session = zk.open_session();
                    let session_id = c.session;
                    c.recipe
                        .handle_session(late, SessionEvent::Connected { session_id });
                    c.pump(&mut zk);
                }
                _ => {}
            }
            c.settle(&mut zk);
            assert_eq!(
                c.events,
                [ConsumerEvent::Taken { certain: true }],
                "{kind}, {cut}"
            );
            assert_eq!(items(&zk), [b"two".to_vec()], "{kind}, {cut}");
        }
    }
}

/// Drains a consumer's requests as `(id, "kind path")`.
fn sent(c: &mut Cons) -> Vec<(herdless_core::RequestId, String)> {
    use herdless_core::Request;
    let mut out = Vec::new();
    while let Some(o) = c.poll_request() {
        let text = match o.request {
            Request::GetChildren { path, watch } => format!("list {path} watch={watch}"),
            Request::GetData { path, .. } => format!("read {path}"),
            Request::Delete { path, .. } => format!("delete {path}"),
            Request::Exists { path, .. } => format!("exists {path}"),
            other => format!("{other:?}"),
        };
        out.push((o.id, text));
    }
    out
}

/// A take on session 1 whose watching listing answered `[one, two]` while
/// a notification had a second (plain) listing sent: `one` is being read,
/// the plain listing is still in flight. Returns the plain listing's and
/// the read's ids.
fn reading_one_with_a_second_listing_in_flight(
    c: &mut Cons,
    one: &str,
    two: &str,
) -> (herdless_core::RequestId, herdless_core::RequestId) {
    use herdless_core::{Children, Reply, WatchEvent, WatchKind};
    c.handle_session(
        Instant::ZERO,
        herdless_core::SessionEvent::Connected { session_id: 1 },
    );
    c.take(None).unwrap();
    let s = sent(c);
    assert_eq!(s[0].1, format!("list {QUEUE} watch=false"));
    c.handle_reply(
        Instant::ZERO,
        s[0].0,
        Reply::Children(Children::new(&(&[] as &[&str]))),
    );
    let s = sent(c);
    assert_eq!(s[0].1, format!("list {QUEUE} watch=true"));
    let watching = s[0].0;
    // The old watch fires for a put before the watching listing is answered.
    c.handle_watch(
        Instant::ZERO,
        WatchEvent {
            kind: WatchKind::NodeChildrenChanged,
            path: QUEUE,
        },
    );
    let s = sent(c);
    assert_eq!(s.len(), 1, "{s:?}");
    let plain = s[0].0;
    c.handle_reply(
        Instant::ZERO,
        watching,
        Reply::Children(Children::new(&&[one, two][..])),
    );
    let s = sent(c);
    assert_eq!(s[0].1, format!("read {QUEUE}/{one}"));
    let read = s[0].0;
    (plain, read)
}

/// After a reconnect the server keeps the child watch a waiting take set
/// before (SetWatches), so a put can notify the consumer while its new
/// listing is still on its way: two listings are then in flight. The later
/// one, answered after the first has started work on an item, must not
/// change which item that work is on: the data read is reported with the
/// node it came from, and the delete goes to that node.
#[test]
fn a_second_listing_answered_mid_take_does_not_change_the_item_being_taken() {
    use herdless_core::{Children, Reply, Stat};
    let one = "a-queue-0000000001";
    let two = "a-queue-0000000002";
    for (later_listing, in_parts) in [
        (vec![], false),
        (vec![two], false),
        (vec![], true),
        (vec![two], true),
    ] {
        let mut c: Cons = Consumer::new(QUEUE).unwrap();
        let (plain, read) = reading_one_with_a_second_listing_in_flight(&mut c, one, two);
        // Another consumer took `one` meanwhile: the later listing lacks it.
        if in_parts {
            // As the embedded driver hands it over: in parts, an empty one
            // first.
            let none: &[&str] = &[];
            c.handle_listing_part(Instant::ZERO, plain, Children::new(&none), false);
            let rest = later_listing.as_slice();
            c.handle_listing_part(Instant::ZERO, plain, Children::new(&rest), true);
        } else {
            c.handle_reply(
                Instant::ZERO,
                plain,
                Reply::Children(Children::new(&later_listing.as_slice())),
            );
        }
        c.handle_reply(
            Instant::ZERO,
            read,
            Reply::Data {
                data: b"payload of one",
                stat: Stat::default(),
            },
        );
        let s = sent(&mut c);
        assert_eq!(
            s.iter().map(|(_, t)| t.as_str()).collect::<Vec<_>>(),
            [format!("delete {QUEUE}/{one}")],
            "listing {later_listing:?}: the delete must go to the node read"
        );
        c.handle_reply(
            Instant::ZERO,
            s[0].0,
            Reply::Error(herdless_core::ZkError::NoNode),
        );
        // `one` was taken by the other consumer: ours moves on, and never
        // reports `one`'s payload under another name.
        assert_eq!(c.poll_event(), None, "listing {later_listing:?}");
    }
}

/// A take started while the connection is down works from the batch the
/// last listing left (a read of its first item, queued); the reconnect
/// then lists afresh, as a notification may have been missed. The read
/// queued for the old batch must go with it: sent after the batch was
/// dropped, it named no item at all (`<dir>/`, `BadArguments`, seen on a
/// three-server ensemble with servers killed).
#[test]
fn a_take_started_while_disconnected_reads_no_item_of_a_dropped_batch() {
    use herdless_core::{Children, Reply, SessionEvent, Stat};
    let one = "a-queue-0000000001";
    let two = "a-queue-0000000002";
    let mut c: Cons = Consumer::new(QUEUE).unwrap();
    c.handle_session(Instant::ZERO, SessionEvent::Connected { session_id: 1 });
    c.take(None).unwrap();
    let s = sent(&mut c);
    c.handle_reply(
        Instant::ZERO,
        s[0].0,
        Reply::Children(Children::new(&&[one, two][..])),
    );
    let s = sent(&mut c);
    c.handle_reply(
        Instant::ZERO,
        s[0].0,
        Reply::Data {
            data: b"first",
            stat: Stat::default(),
        },
    );
    let s = sent(&mut c);
    assert_eq!(s[0].1, format!("delete {QUEUE}/{one}"));
    c.handle_reply(Instant::ZERO, s[0].0, Reply::Deleted);
    assert!(matches!(c.poll_event(), Some(ConsumerEvent::Taken { .. })));
    // The connection breaks between two takes; the next take starts at once.
    c.handle_session(Instant::ZERO, SessionEvent::Suspended);
    c.take(None).unwrap();
    assert!(
        sent(&mut c).is_empty(),
        "nothing goes out while disconnected"
    );
    c.handle_session(Instant::ZERO, SessionEvent::Connected { session_id: 1 });
    let s = sent(&mut c);
    assert!(
        s.iter().all(|(_, t)| !t.ends_with('/')),
        "a request on no item: {s:?}"
    );
    assert_eq!(
        s.iter().map(|(_, t)| t.as_str()).collect::<Vec<_>>(),
        [format!("list {QUEUE} watch=false")],
        "a fresh listing, and nothing of the old batch"
    );
    c.handle_reply(
        Instant::ZERO,
        s[0].0,
        Reply::Children(Children::new(&&[two][..])),
    );
    let s = sent(&mut c);
    assert_eq!(s[0].1, format!("read {QUEUE}/{two}"));
}

/// The requests a link sent from `from` on, as `"kind path"`.
fn requests_from(sent: &[herdless_core::sim::OwnedRequest], from: usize) -> Vec<String> {
    use herdless_core::sim::OwnedRequest;
    sent[from..]
        .iter()
        .map(|r| match r {
            OwnedRequest::GetChildren { path, .. }
            | OwnedRequest::GetData { path, .. }
            | OwnedRequest::Delete { path, .. }
            | OwnedRequest::Exists { path, .. }
            | OwnedRequest::Create { path, .. } => format!("{} {path}", r.kind()),
            other => format!("{other:?}"),
        })
        .collect()
}

/// An item taken, certainly or after a lost delete, leaves the batch: the
/// next take goes to the next item and never asks for the taken one again.
#[test]
fn a_taken_item_is_never_asked_for_again() {
    let one = format!("{QUEUE}/a-queue-0000000001");
    for (kind, consumer) in consumers() {
        // None: the delete answered; Some(1): applied, its answer lost.
        for lost_after in [None, Some(1)] {
            let mut zk = SimZk::new(13);
            with_two_items(&mut zk);
            let mut c = Link::new(&mut zk, consumer());
            c.act(&mut zk, |c| c.take(None)).unwrap();
            advance_to(&mut c, &mut zk, "delete");
            if let Some(applied) = lost_after {
                c.connection_loss(&mut zk, applied);
            }
            c.settle(&mut zk);
            let certain = lost_after.is_none();
            assert_eq!(c.events, [ConsumerEvent::Taken { certain }], "{kind}");
            assert_eq!(c.recipe.item(), b"one", "{kind}");
            let first_take_ended = c.sent.len();
            c.events.clear();
            c.act(&mut zk, |c| c.take(None)).unwrap();
            c.settle(&mut zk);
            assert_eq!(c.events, [ConsumerEvent::Taken { certain: true }], "{kind}");
            assert_eq!(c.recipe.item(), b"two", "{kind}");
            let second = requests_from(&c.sent, first_take_ended);
            assert!(
                second.iter().all(|r| !r.ends_with(&one)),
                "{kind}, lost after {lost_after:?}: {second:?}"
            );
        }
    }
}

/// A put whose create was answered `ConnectionLoss` before the server got
/// it looks for its GUID: another producer's item is not its own, however
/// alike the names are.
#[test]
fn a_put_whose_lost_create_never_landed_does_not_claim_another_producers_item() {
    let mut zk = SimZk::new(14);
    zk.create_persistent(QUEUE, b"").unwrap();
    let mut other = Link::new(&mut zk, Prod::new(QUEUE).unwrap());
    other
        .act(&mut zk, |p| {
            p.put(Guid::from_random_bytes([0x21; 16]), b"theirs", None, false)
        })
        .unwrap();
    other.settle(&mut zk);
    // A name of another library that only starts like a GUID item.
    zk.create_persistent(&format!("{QUEUE}/queue-0000000001"), b"plain")
        .unwrap();
    let mut p = Link::new(&mut zk, Prod::new(QUEUE).unwrap());
    p.act(&mut zk, |p| {
        p.put(Guid::from_random_bytes([0x22; 16]), b"ours", None, false)
    })
    .unwrap();
    p.connection_loss(&mut zk, 0);
    p.settle(&mut zk);
    assert_eq!(p.events, [ProducerEvent::Put]);
    assert_eq!(p.count("getChildren"), 1, "looked for its GUID");
    assert_eq!(p.count("create"), 2, "not found: created again");
    // Hyphenated GUID of [0x22; 16], version and variant bits set.
    let own = "22222222-2222-4222-a222-222222222222-queue-";
    assert!(
        p.recipe.item().starts_with(&format!("{QUEUE}/{own}")),
        "{}",
        p.recipe.item()
    );
    assert_eq!(
        zk.node(p.recipe.item()).map(|n| n.data.clone()),
        Some(b"ours".to_vec())
    );
    assert_eq!(zk.children(QUEUE).unwrap().len(), 3);
}

/// While a lost delete is checked, a child notification (the watch the
/// server kept across the reconnect fires for a new item) must not drop the
/// item being checked: the delete sent again goes to that item, and no
/// listing goes out meanwhile.
#[test]
fn a_notification_while_a_lost_delete_is_checked_keeps_the_item() {
    use herdless_core::{Children, Reply, SessionEvent, Stat, WatchEvent, WatchKind, ZkError};
    let one = format!("{QUEUE}/a-queue-0000000001");
    for (kind, consumer) in consumers() {
        let mut c = consumer();
        c.handle_session(Instant::ZERO, SessionEvent::Connected { session_id: 1 });
        c.take(None).unwrap();
        let s = sent(&mut c);
        let names: &[&str] = &["a-queue-0000000001", "b-queue-0000000002"];
        c.handle_reply(
            Instant::ZERO,
            s[0].0,
            Reply::Children(Children::new(&names)),
        );
        let s = sent(&mut c);
        assert_eq!(s[0].1, format!("read {one}"), "{kind}");
        c.handle_reply(
            Instant::ZERO,
            s[0].0,
            Reply::Data {
                data: b"one",
                stat: Stat::default(),
            },
        );
        let s = sent(&mut c);
        assert_eq!(s[0].1, format!("delete {one}"), "{kind}");
        c.handle_reply(Instant::ZERO, s[0].0, Reply::Error(ZkError::ConnectionLoss));
        c.handle_session(Instant::ZERO, SessionEvent::Connected { session_id: 1 });
        let s = sent(&mut c);
        assert_eq!(
            s.iter().map(|(_, t)| t.as_str()).collect::<Vec<_>>(),
            [
                format!("Check {{ path: {one:?}, version: Any }}"),
                format!("exists {one}")
            ],
            "{kind}: the check goes behind a no-op write"
        );
        let check = s[1].0;
        c.handle_watch(
            Instant::ZERO,
            WatchEvent {
                kind: WatchKind::NodeChildrenChanged,
                path: QUEUE,
            },
        );
        assert_eq!(sent(&mut c), [], "{kind}: the check goes on alone");
        // Still there: our delete never landed, and is sent again to it.
        c.handle_reply(
            Instant::ZERO,
            check,
            Reply::Exists {
                stat: Stat::default(),
            },
        );
        let s = sent(&mut c);
        assert_eq!(
            s.iter().map(|(_, t)| t.as_str()).collect::<Vec<_>>(),
            [format!("delete {one}")],
            "{kind}"
        );
        c.handle_reply(Instant::ZERO, s[0].0, Reply::Deleted);
        assert_eq!(
            c.poll_event(),
            Some(ConsumerEvent::Taken { certain: true }),
            "{kind}"
        );
        assert_eq!(c.item(), b"one", "{kind}");
        assert_eq!(c.item_name(), one, "{kind}");
    }
}

/// A put whose create was lost looks for its item by GUID in a listing
/// that may come in parts (the embedded driver, with a queue longer than
/// its buffer): it creates again only once the last part lacked the item,
/// and stops at the part that holds it.
#[test]
fn a_put_finds_its_item_in_a_listing_in_parts_and_creates_only_after_the_last() {
    use herdless_core::{Children, Reply, SessionEvent, ZkError};
    let guid = Guid::from_random_bytes([7; 16]);
    let mut hyphenated = String::new();
    guid.write_hyphenated(&mut hyphenated).unwrap();
    let own = format!("{hyphenated}-queue-0000000009");
    let others = ["a-queue-0000000001", "b-queue-0000000002"];
    let describe = |p: &mut Prod| -> Vec<(herdless_core::RequestId, String)> {
        std::iter::from_fn(|| p.poll_request().map(|o| (o.id, format!("{:?}", o.request))))
            .collect()
    };
    for own_at in [None, Some(0), Some(1)] {
        let mut p = Prod::new(QUEUE).unwrap();
        assert!(p.takes_listing_in_parts());
        p.put(guid, b"item", None, false).unwrap();
        let create = describe(&mut p);
        p.handle_reply(
            Instant::ZERO,
            create[0].0,
            Reply::Error(ZkError::ConnectionLoss),
        );
        p.handle_session(Instant::ZERO, SessionEvent::Connected { session_id: 1 });
        let find = describe(&mut p);
        assert_eq!(find.len(), 2, "{find:?}");
        assert!(
            find[0].1.starts_with("Check"),
            "a no-op write first: {find:?}"
        );
        assert!(find[1].1.starts_with("GetChildren"), "{find:?}");
        let find = &find[1..];
        let mut parts: Vec<Vec<&str>> = vec![vec![others[0]], vec![others[1]]];
        if let Some(at) = own_at {
            parts[at].push(&own);
        }
        for (i, part) in parts.iter().enumerate() {
            let last = i + 1 == parts.len();
            p.handle_listing_part(
                Instant::ZERO,
                find[0].0,
                Children::new(&part.as_slice()),
                last,
            );
            let sent = describe(&mut p);
            let found_by_now = own_at.is_some_and(|at| at <= i);
            if last && !found_by_now {
                assert_eq!(sent.len(), 1, "created again: {sent:?}");
                assert!(sent[0].1.starts_with("Create"), "{sent:?}");
            } else {
                assert!(sent.is_empty(), "own at {own_at:?}, part {i}: {sent:?}");
            }
        }
        let events: Vec<_> = std::iter::from_fn(|| p.poll_event()).collect();
        match own_at {
            Some(_) => {
                assert_eq!(events, [ProducerEvent::Put]);
                assert_eq!(p.item(), format!("{QUEUE}/{own}"));
            }
            None => assert!(events.is_empty(), "{events:?}"),
        }
    }
}

/// A take reads a listing in parts as one: the lowest item of all the
/// parts is the one read.
#[test]
fn a_take_reads_the_lowest_item_of_a_listing_in_parts() {
    use herdless_core::Children;
    let mut c: Cons = Consumer::new(QUEUE).unwrap();
    assert!(c.takes_listing_in_parts());
    c.take(None).unwrap();
    let s = sent(&mut c);
    let parts: [&[&str]; 3] = [
        &["c-queue-0000000007", "a-queue-0000000005"],
        &[],
        &["b-queue-0000000002", "d-queue-0000000009"],
    ];
    for (i, part) in parts.iter().enumerate() {
        c.handle_listing_part(Instant::ZERO, s[0].0, Children::new(part), i == 2);
        if i < 2 {
            assert!(sent(&mut c).is_empty(), "nothing before the last part");
        }
    }
    assert_eq!(
        sent(&mut c)[0].1,
        format!("read {QUEUE}/b-queue-0000000002")
    );
}

/// Wherever the lowest item comes in a listing read in parts (first,
/// middle or last part), it is the one read: a later part of the same
/// listing adds to what the earlier ones gave, never starts it anew.
#[test]
fn a_take_reads_the_lowest_item_wherever_it_comes_in_the_parts() {
    use herdless_core::Children;
    let lowest = "b-queue-0000000002";
    let others = [
        "c-queue-0000000007",
        "a-queue-0000000005",
        "d-queue-0000000009",
    ];
    for at in 0..others.len() {
        let mut c: Cons = Consumer::new(QUEUE).unwrap();
        c.take(None).unwrap();
        let listing = sent(&mut c)[0].0;
        let mut parts: Vec<Vec<&str>> = others.iter().map(|name| vec![*name]).collect();
        parts[at].push(lowest);
        for (i, part) in parts.iter().enumerate() {
            let names = part.as_slice();
            let last = i + 1 == parts.len();
            c.handle_listing_part(Instant::ZERO, listing, Children::new(&names), last);
        }
        assert_eq!(
            sent(&mut c)[0].1,
            format!("read {QUEUE}/{lowest}"),
            "the lowest item came in part {at}"
        );
    }
}

/// A listing cut short by a lost connection is over: the next listing,
/// after the reconnect, is read on its own terms. Here the cut one was
/// being skipped (an item was being read when it began); the next one must
/// still be read, or the take waits forever.
#[test]
fn a_listing_cut_by_a_lost_connection_does_not_decide_how_the_next_is_read() {
    use herdless_core::{Children, SessionEvent};
    let one = "a-queue-0000000001";
    let two = "a-queue-0000000002";
    let mut c: Cons = Consumer::new(QUEUE).unwrap();
    let (plain, _read) = reading_one_with_a_second_listing_in_flight(&mut c, one, two);
    let none: &[&str] = &[];
    c.handle_listing_part(Instant::ZERO, plain, Children::new(&none), false);
    assert!(sent(&mut c).is_empty());
    c.handle_session(Instant::ZERO, SessionEvent::Suspended);
    c.handle_session(Instant::ZERO, SessionEvent::Connected { session_id: 1 });
    let s = sent(&mut c);
    assert_eq!(
        s.iter().map(|(_, t)| t.as_str()).collect::<Vec<_>>(),
        [format!("list {QUEUE} watch=false")]
    );
    // Another consumer took `one` meanwhile.
    let rest = [two];
    c.handle_listing_part(Instant::ZERO, s[0].0, Children::new(&&rest[..]), true);
    assert_eq!(
        sent(&mut c)
            .iter()
            .map(|(_, t)| t.as_str())
            .collect::<Vec<_>>(),
        [format!("read {QUEUE}/{two}")]
    );
}
