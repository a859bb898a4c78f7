//! The configuration watch and its compare-and-set writes under faults
//! placed by hand: an operator who deletes the node and creates it again
//! (its version starts over at 0), and writes answered with
//! `ConnectionLoss` whether or not the server applied them.

mod faults;

use faults::{Link, Operator};
use herdless_core::config::{Config, ConfigEvent};
use herdless_core::sim::SimZk;
use herdless_core::{CreateMode, Version, ZkError};

const PATH: &str = "/app/config";

type Cfg = Config<64>;

fn data(zk: &SimZk) -> Vec<u8> {
    zk.node(PATH).expect("the node").data.clone()
}

/// A watcher that has seen the node at version 3 ("v3").
fn watcher_at_v3(zk: &mut SimZk, op: &mut Operator) -> Link<Cfg> {
    zk.create_persistent(PATH, b"v0").unwrap();
    for v in 1..=3 {
        op.set(zk, PATH, format!("v{v}").as_bytes());
    }
    let mut c = Link::new(zk, Cfg::new(PATH).unwrap());
    c.act(zk, |c| c.watch());
    c.settle(zk);
    assert_eq!(c.events, [ConfigEvent::Changed { version: 3 }]);
    c.events.clear();
    c
}

#[test]
fn a_node_recreated_before_the_reread_is_reported_and_writable() {
    let mut zk = SimZk::new(1);
    let mut op = Operator::open(&mut zk);
    let mut c = watcher_at_v3(&mut zk, &mut op);
    // The notification of the delete reaches the watcher; its re-read is
    // applied only after the node is back, at version 0.
    op.delete(&mut zk, PATH);
    op.create(&mut zk, PATH, b"fresh", CreateMode::Persistent);
    c.settle(&mut zk);
    assert_eq!(c.events, [ConfigEvent::Changed { version: 0 }]);
    assert_eq!(c.recipe.value(), Some(&b"fresh"[..]));
    // A compare-and-set from the value reported works.
    let version = c.recipe.version().unwrap();
    c.events.clear();
    c.act(&mut zk, |c| c.set(b"next", Version::Exactly(version)))
        .unwrap();
    c.settle(&mut zk);
    assert_eq!(
        c.events,
        [
            ConfigEvent::Updated { version: 1 },
            ConfigEvent::Changed { version: 1 }
        ]
    );
    assert_eq!(data(&zk), b"next");
}

#[test]
fn a_node_recreated_while_the_watcher_was_away_is_reported() {
    let mut zk = SimZk::new(2);
    let mut op = Operator::open(&mut zk);
    let mut c = watcher_at_v3(&mut zk, &mut op);
    zk.disconnect(c.session);
    op.delete(&mut zk, PATH);
    op.create(&mut zk, PATH, b"fresh", CreateMode::Persistent);
    op.set(&mut zk, PATH, b"fresh-1");
    zk.reconnect(c.session);
    c.settle(&mut zk);
    assert_eq!(c.events, [ConfigEvent::Changed { version: 1 }]);
    assert_eq!(c.recipe.value(), Some(&b"fresh-1"[..]));
}

#[test]
fn a_compare_and_set_that_landed_but_whose_answer_was_lost_is_not_sent_again() {
    let mut zk = SimZk::new(3);
    let mut op = Operator::open(&mut zk);
    let mut c = watcher_at_v3(&mut zk, &mut op);
    c.act(&mut zk, |c| c.set(b"mine", Version::Exactly(3)))
        .unwrap();
    c.connection_loss(&mut zk, 1);
    c.settle(&mut zk);
    // Sent again, it would get BadVersion: a spurious Conflict. The node
    // holds our data, which an identical write could have put there:
    // `Unknown`, never a claim the server did not make.
    assert_eq!(c.count("setData"), 1);
    assert!(c.events.contains(&ConfigEvent::Unknown), "{:?}", c.events);
    assert!(!c.events.contains(&ConfigEvent::Conflict));
    assert_eq!(data(&zk), b"mine");
}

/// Two writers bump a counter from the same value, so they write the same
/// bytes; one wins, and the other's refusal is lost with its connection.
/// Reading back finds "its" data at the next version, but only one
/// increment happened: the loser must not be told `Updated`.
#[test]
fn an_identical_write_by_another_client_is_not_taken_for_ours() {
    let mut zk = SimZk::new(12);
    let mut op = Operator::open(&mut zk);
    let mut c = watcher_at_v3(&mut zk, &mut op);
    c.act(&mut zk, |c| c.set(b"count=4", Version::Exactly(3)))
        .unwrap();
    // The other writer's identical compare-and-set lands first; ours is
    // refused (BadVersion) and that answer is lost.
    op.set(&mut zk, PATH, b"count=4");
    c.connection_loss(&mut zk, 1);
    c.settle(&mut zk);
    assert_eq!(c.count("setData"), 1);
    assert!(
        !c.events
            .iter()
            .any(|e| matches!(e, ConfigEvent::Updated { .. })),
        "told Updated for the other writer's increment: {:?}",
        c.events
    );
    assert!(c.events.contains(&ConfigEvent::Unknown), "{:?}", c.events);
    assert_eq!(data(&zk), b"count=4");
}

#[test]
fn a_compare_and_set_lost_before_it_landed_is_sent_again() {
    let mut zk = SimZk::new(4);
    let mut op = Operator::open(&mut zk);
    let mut c = watcher_at_v3(&mut zk, &mut op);
    c.act(&mut zk, |c| c.set(b"mine", Version::Exactly(3)))
        .unwrap();
    c.connection_loss(&mut zk, 0);
    c.settle(&mut zk);
    assert_eq!(c.count("setData"), 2);
    assert!(c.events.contains(&ConfigEvent::Updated { version: 4 }));
    assert_eq!(data(&zk), b"mine");
}

#[test]
fn a_plain_set_whose_answer_was_lost_never_overwrites_a_later_write() {
    let mut zk = SimZk::new(5);
    let mut op = Operator::open(&mut zk);
    let mut c = watcher_at_v3(&mut zk, &mut op);
    c.act(&mut zk, |c| c.set(b"mine", Version::Any)).unwrap();
    // Ours lands, its answer is lost, someone writes after it.
    c.connection_loss_with(&mut zk, 1, |zk| {
        op.set(zk, PATH, b"theirs");
    });
    c.settle(&mut zk);
    assert_eq!(c.count("setData"), 1, "sent again blindly");
    assert_eq!(data(&zk), b"theirs");
    assert!(c.events.contains(&ConfigEvent::Unknown), "{:?}", c.events);
}

#[test]
fn a_compare_and_set_lost_while_the_node_was_recreated_is_not_applied_to_the_new_node() {
    let mut zk = SimZk::new(6);
    let mut op = Operator::open(&mut zk);
    zk.create_persistent(PATH, b"old").unwrap();
    let mut c = Link::new(&mut zk, Cfg::new(PATH).unwrap());
    c.act(&mut zk, |c| c.watch());
    c.settle(&mut zk);
    c.events.clear();
    // A compare-and-set against version 0 of the old node lands; its
    // answer is lost; the node is deleted and created again, at version 0.
    c.act(&mut zk, |c| c.set(b"mine", Version::Exactly(0)))
        .unwrap();
    c.connection_loss_with(&mut zk, 1, |zk| {
        op.delete(zk, PATH);
        op.create(zk, PATH, b"new", CreateMode::Persistent);
    });
    c.settle(&mut zk);
    // Ours landed, on a node that is gone: sending it again would write
    // into a node it was never meant for.
    assert_eq!(c.count("setData"), 1, "sent again to the new node");
    assert_eq!(data(&zk), b"new");
    assert!(c.events.contains(&ConfigEvent::Unknown), "{:?}", c.events);
    assert_eq!(c.recipe.value(), Some(&b"new"[..]));
}

#[test]
fn a_compare_and_set_beaten_while_its_answer_was_lost_is_a_conflict() {
    let mut zk = SimZk::new(7);
    let mut op = Operator::open(&mut zk);
    let mut c = watcher_at_v3(&mut zk, &mut op);
    c.act(&mut zk, |c| c.set(b"mine", Version::Exactly(3)))
        .unwrap();
    // Someone else's write takes the node to version 4 first; ours is then
    // refused (BadVersion), and that answer is lost.
    op.set(&mut zk, PATH, b"theirs");
    c.connection_loss(&mut zk, 1);
    c.settle(&mut zk);
    // Version 4 is the only one a write from 3 could make, and it holds
    // other data: ours was refused, for certain.
    assert_eq!(c.count("setData"), 1);
    assert!(c.events.contains(&ConfigEvent::Conflict), "{:?}", c.events);
    assert!(!c.events.contains(&ConfigEvent::Unknown), "{:?}", c.events);
    assert_eq!(data(&zk), b"theirs");
}

/// A watcher of a node that does not exist yet (its parent does).
fn watcher_of_missing_node(zk: &mut SimZk) -> Link<Cfg> {
    zk.create_persistent("/app", b"").unwrap();
    let mut c = Link::new(zk, Cfg::new(PATH).unwrap());
    c.act(zk, |c| c.watch());
    c.settle(zk);
    assert_eq!(c.events, [ConfigEvent::Missing]);
    c.events.clear();
    c
}

#[test]
fn a_create_lost_before_it_landed_is_sent_again() {
    let mut zk = SimZk::new(8);
    let mut c = watcher_of_missing_node(&mut zk);
    c.act(&mut zk, |c| c.create(b"mine")).unwrap();
    c.connection_loss(&mut zk, 0);
    c.settle(&mut zk);
    // The read-back finds no node: the create never landed.
    assert_eq!(c.count("create"), 2);
    assert_eq!(
        c.events,
        [
            ConfigEvent::Updated { version: 0 },
            ConfigEvent::Changed { version: 0 }
        ]
    );
    assert_eq!(data(&zk), b"mine");
}

#[test]
fn ancestors_lost_with_the_connection_are_made_again() {
    // The seed decides whether `Suspended` comes before the `ConnectionLoss`
    // answers, after them or not at all: an ancestor's create answered
    // `ConnectionLoss` is a loss, never the refusal that fails the write.
    for seed in 0..32 {
        let mut zk = SimZk::new(seed);
        let mut c = Link::new(&mut zk, Cfg::new("/a/b/config").unwrap());
        c.act(&mut zk, |c| c.create(b"mine")).unwrap();
        // The create is refused for want of its parent; the ancestors and
        // the create again go out in one flight, and the connection breaks
        // once the first ancestor is made.
        assert!(c.apply_one(&mut zk));
        c.deliver(&mut zk);
        c.connection_loss(&mut zk, 1);
        c.settle(&mut zk);
        assert!(
            c.events.contains(&ConfigEvent::Updated { version: 0 }),
            "seed {seed}: {:?}",
            c.events
        );
        assert_eq!(data_at(&zk, "/a/b/config"), b"mine", "seed {seed}");
    }
}

fn data_at(zk: &SimZk, path: &str) -> Vec<u8> {
    zk.node(path).expect("the node").data.clone()
}

#[test]
fn a_create_that_landed_but_whose_answer_was_lost_is_unknown_not_sent_again() {
    let mut zk = SimZk::new(9);
    let mut c = watcher_of_missing_node(&mut zk);
    c.act(&mut zk, |c| c.create(b"mine")).unwrap();
    c.connection_loss(&mut zk, 1);
    c.settle(&mut zk);
    // Sent again, it would get NodeExists: a spurious Conflict. Another
    // client could have created it with the same data.
    assert_eq!(c.count("create"), 1);
    assert!(c.events.contains(&ConfigEvent::Unknown), "{:?}", c.events);
    assert!(!c.events.contains(&ConfigEvent::Conflict), "{:?}", c.events);
    assert_eq!(data(&zk), b"mine");
}

#[test]
fn a_create_beaten_by_another_creator_while_its_answer_was_lost_is_a_conflict() {
    let mut zk = SimZk::new(10);
    let mut op = Operator::open(&mut zk);
    let mut c = watcher_of_missing_node(&mut zk);
    c.act(&mut zk, |c| c.create(b"mine")).unwrap();
    // Another client creates the node first; ours is refused (NodeExists)
    // and that answer is lost.
    op.create(&mut zk, PATH, b"theirs", CreateMode::Persistent);
    c.connection_loss(&mut zk, 1);
    c.settle(&mut zk);
    // A node at version 0 with other data: someone else created it.
    assert_eq!(c.count("create"), 1);
    assert!(c.events.contains(&ConfigEvent::Conflict), "{:?}", c.events);
    assert!(!c.events.contains(&ConfigEvent::Unknown), "{:?}", c.events);
    assert_eq!(data(&zk), b"theirs");
    assert_eq!(c.recipe.value(), Some(&b"theirs"[..]));
}

#[test]
fn a_plain_set_that_landed_but_whose_answer_was_lost_is_unknown_not_sent_again() {
    let mut zk = SimZk::new(11);
    let mut op = Operator::open(&mut zk);
    let mut c = watcher_at_v3(&mut zk, &mut op);
    c.act(&mut zk, |c| c.set(b"mine", Version::Any)).unwrap();
    c.connection_loss(&mut zk, 1);
    c.settle(&mut zk);
    // The node holds our data at the next version and nothing came after;
    // an identical write could have put it there.
    assert_eq!(c.count("setData"), 1);
    assert!(c.events.contains(&ConfigEvent::Unknown), "{:?}", c.events);
    assert_eq!(data(&zk), b"mine");
}

#[test]
fn a_writer_that_does_not_watch_sets_no_watch_across_a_reconnect() {
    let mut zk = SimZk::new(12);
    zk.create_persistent(PATH, b"v0").unwrap();
    let mut c = Link::new(&mut zk, Cfg::new(PATH).unwrap());
    c.act(&mut zk, |c| c.set(b"v1", Version::Exactly(0)))
        .unwrap();
    c.settle(&mut zk);
    assert_eq!(c.events, [ConfigEvent::Updated { version: 1 }]);
    // The connection breaks with nothing in flight.
    c.connection_loss(&mut zk, 0);
    c.settle(&mut zk);
    // Nothing to read back: a writer that never asked to watch reads
    // nothing and leaves no watch on the server.
    assert_eq!(c.count("getData"), 0);
    let watches = zk.watches_of(c.session);
    assert!(watches.is_empty(), "{watches:?}");
    assert_eq!(c.events, [ConfigEvent::Updated { version: 1 }]);
    // Nor on a new session.
    c.expire_and_renew(&mut zk, 0);
    c.settle(&mut zk);
    assert_eq!(c.count("getData"), 0);
    let watches = zk.watches_of(c.session);
    assert!(watches.is_empty(), "{watches:?}");
}

#[test]
fn a_watcher_reads_again_after_a_reconnect_whether_or_not_its_watch_was_set_again() {
    for reset in [true, false] {
        let mut zk = SimZk::new(13);
        zk.set_watch_reset(reset);
        let mut op = Operator::open(&mut zk);
        let mut c = watcher_at_v3(&mut zk, &mut op);
        let reads = c.count("getData");
        // The connection breaks with nothing in flight: a client that sets
        // its watches again keeps the watch, one without a watch table
        // (`reset` false) loses it, and the recipe cannot tell which.
        c.connection_loss(&mut zk, 0);
        c.settle(&mut zk);
        assert_eq!(c.count("getData"), reads + 1, "reset {reset}");
        assert_eq!(
            zk.watches_of(c.session),
            [("data", PATH.to_owned())],
            "reset {reset}"
        );
        // The read found what was known: no event. A later change is heard.
        assert!(c.events.is_empty(), "reset {reset}: {:?}", c.events);
        op.set(&mut zk, PATH, b"v4");
        c.settle(&mut zk);
        assert_eq!(
            c.events,
            [ConfigEvent::Changed { version: 4 }],
            "reset {reset}"
        );
    }
}

/// A read the server refuses (the node's ACL denies this client) sets no
/// watch: the watcher reads again on its next connection, which is the
/// only thing that can tell it the refusal is over.
#[test]
fn a_refused_read_is_sent_again_on_the_next_connection() {
    let mut zk = SimZk::new(9);
    zk.create_persistent(PATH, b"v0").unwrap();
    zk.refuse(PATH, Some(ZkError::NoAuth));
    let mut c = Link::new(&mut zk, Cfg::new(PATH).unwrap());
    c.act(&mut zk, |c| c.watch());
    c.settle(&mut zk);
    assert_eq!(
        c.events,
        [ConfigEvent::Failed(herdless_core::Error::Zk(
            ZkError::NoAuth
        ))]
    );
    c.events.clear();
    zk.refuse(PATH, None);
    zk.disconnect(c.session);
    zk.reconnect(c.session);
    c.settle(&mut zk);
    assert_eq!(c.events, [ConfigEvent::Changed { version: 0 }]);
    assert_eq!(c.recipe.value(), Some(&b"v0"[..]));
}

/// A watch and a write begun before the driver first drains, with the
/// connection lost in between (a driver starting on a client that is
/// already disconnected): once connected again the read and the write go
/// out. The queue goes with the connection, and the read went with it: a
/// watch that never read heard nothing for as long as its session lived.
/// The write was never sent, so it goes again as it is, not as a write
/// whose outcome is unknown.
#[test]
fn work_queued_when_the_connection_is_lost_goes_out_once_it_is_back() {
    use herdless_core::{Instant, Recipe, Request, SessionEvent};
    let now = Instant::ZERO;
    let mut c = Cfg::new(PATH).unwrap();
    c.handle_session(now, SessionEvent::Connected { session_id: 1 });
    c.watch();
    c.set(b"v1", Version::Exactly(0)).unwrap();
    c.handle_session(now, SessionEvent::Suspended);
    assert!(
        c.poll_request().is_none(),
        "nothing goes out while disconnected"
    );
    c.handle_session(now, SessionEvent::Connected { session_id: 1 });
    let mut sent = Vec::new();
    while let Some(out) = c.poll_request() {
        sent.push(format!("{:?}", out.request));
    }
    let read = format!(
        "{:?}",
        Request::GetData {
            path: PATH,
            watch: true
        }
    );
    let write = format!(
        "{:?}",
        Request::SetData {
            path: PATH,
            data: b"v1",
            version: Version::Exactly(0)
        }
    );
    assert_eq!(sent, [read, write]);
}
