//! The configuration recipe's plain API on the in-memory ZooKeeper, without
//! faults: what it reports of the node and of its own write, the writes the
//! server refuses, and the notifications that are not its business.

mod faults;

use faults::{Link, Operator};
use herdless_core::config::{Config, ConfigEvent, Error};
use herdless_core::sim::SimZk;
use herdless_core::Instant;
use herdless_core::{CreateMode, Recipe, Reply, Version, WatchEvent, WatchKind, ZkError};

const PATH: &str = "/app/config";

type Cfg = Config<8>;

#[test]
fn the_path_is_the_one_given() {
    let c = Cfg::new(PATH).unwrap();
    assert_eq!(c.path(), PATH);
    let other = Cfg::new("/a").unwrap();
    assert_eq!(other.path(), "/a");
}

#[test]
fn errors_say_what_went_wrong() {
    let mut zk = SimZk::new(1);
    zk.create_persistent(PATH, b"v0").unwrap();
    let mut c = Link::new(&mut zk, Cfg::new(PATH).unwrap());
    c.act(&mut zk, |c| c.set(b"v1", Version::Any)).unwrap();
    let busy = c.act(&mut zk, |c| c.set(b"v2", Version::Any)).unwrap_err();
    assert_eq!(busy, Error::InvalidState);
    assert!(busy.to_string().contains("in progress"), "{busy}");

    let mut idle = Cfg::new(PATH).unwrap();
    let big = idle.set(b"123456789", Version::Any).unwrap_err();
    assert_eq!(
        big,
        Error::TooLarge {
            len: 9,
            capacity: 8
        }
    );
    let text = big.to_string();
    assert!(text.contains('9') && text.contains('8'), "{text}");

    let bad = Cfg::new("no-slash").unwrap_err();
    assert!(matches!(bad, Error::Path(_)), "{bad:?}");
    assert!(bad.to_string().contains("path"), "{bad}");

    let zk_error = Error::Zk(ZkError::NoNode);
    assert!(!zk_error.to_string().is_empty());
}

#[test]
fn missing_and_writing_follow_the_node_and_the_write() {
    let mut zk = SimZk::new(2);
    zk.create_persistent("/app", b"").unwrap();
    let mut c = Link::new(&mut zk, Cfg::new(PATH).unwrap());
    // Nothing read yet: not known to be missing.
    assert!(!c.recipe.is_missing());
    assert!(!c.recipe.is_writing());
    c.act(&mut zk, |c| c.watch());
    c.settle(&mut zk);
    assert_eq!(c.events, [ConfigEvent::Missing]);
    assert!(c.recipe.is_missing());

    c.act(&mut zk, |c| c.create(b"v0")).unwrap();
    assert!(c.recipe.is_writing());
    c.settle(&mut zk);
    assert_eq!(
        c.events,
        [
            ConfigEvent::Missing,
            ConfigEvent::Updated { version: 0 },
            ConfigEvent::Changed { version: 0 }
        ]
    );
    assert!(!c.recipe.is_writing());
    assert!(!c.recipe.is_missing());
}

#[test]
fn a_set_on_a_missing_node_is_a_conflict() {
    let mut zk = SimZk::new(3);
    zk.create_persistent("/app", b"").unwrap();
    let mut c = Link::new(&mut zk, Cfg::new(PATH).unwrap());
    c.act(&mut zk, |c| c.set(b"v", Version::Exactly(0)))
        .unwrap();
    c.settle(&mut zk);
    // The node was deleted under the writer: a lost race, not a failure.
    assert_eq!(c.events, [ConfigEvent::Conflict]);
    assert!(!c.recipe.is_writing());
    assert!(zk.node(PATH).is_none());
}

#[test]
fn a_create_under_missing_parents_makes_them_first() {
    let mut zk = SimZk::new(4);
    let mut c = Link::new(&mut zk, Cfg::new("/a/b/config").unwrap());
    c.act(&mut zk, |c| c.create(b"v")).unwrap();
    c.settle(&mut zk);
    // As every recipe makes its directory: the create refused, the two
    // ancestors, the create again.
    assert_eq!(c.events, [ConfigEvent::Updated { version: 0 }]);
    assert_eq!(c.count("create"), 4);
    assert!(zk.node("/a").is_some() && zk.node("/a/b").is_some());
    assert_eq!(zk.node("/a/b/config").unwrap().data, b"v");
    assert!(!c.recipe.is_writing());
}

/// Only a missing chroot makes ZooKeeper refuse a create at the top for
/// want of its parent: there is no ancestor to make.
#[test]
fn a_create_at_the_top_refused_for_want_of_its_parent_fails() {
    let mut c = Cfg::new("/x").unwrap();
    c.create(b"v").unwrap();
    let id = c.poll_request().unwrap().id;
    c.handle_reply(Instant::ZERO, id, Reply::Error(ZkError::NoNode));
    assert_eq!(
        c.poll_event(),
        Some(ConfigEvent::WriteFailed(Error::Zk(ZkError::NoNode)))
    );
    assert!(c.poll_request().is_none());
    assert!(!c.is_writing());
}

#[test]
fn a_create_whose_ancestor_is_refused_fails_with_that_refusal() {
    let mut zk = SimZk::new(4);
    let mut op = Operator::open(&mut zk);
    op.create(&mut zk, "/eph", b"", CreateMode::Ephemeral);
    let mut c = Link::new(&mut zk, Cfg::new("/eph/sub/config").unwrap());
    c.act(&mut zk, |c| c.create(b"v")).unwrap();
    c.settle(&mut zk);
    // The cause, not the `NoNode` of the create behind it.
    assert_eq!(
        c.events,
        [ConfigEvent::WriteFailed(Error::Zk(
            ZkError::NoChildrenForEphemerals
        ))]
    );
    assert!(!c.recipe.is_writing());
    assert!(zk.node("/eph/sub").is_none());
    // The next create starts a chain of its own.
    op.delete(&mut zk, "/eph");
    c.events.clear();
    c.act(&mut zk, |c| c.create(b"w")).unwrap();
    c.settle(&mut zk);
    assert_eq!(c.events, [ConfigEvent::Updated { version: 0 }]);
}

#[test]
fn a_create_whose_parent_is_deleted_each_time_it_is_made_gives_up() {
    let mut zk = SimZk::new(4);
    let mut op = Operator::open(&mut zk);
    let mut c = Link::new(&mut zk, Cfg::new("/a/config").unwrap());
    c.act(&mut zk, |c| c.create(b"v")).unwrap();
    for _ in 0..200 {
        if !c.events.is_empty() {
            break;
        }
        if c.apply_one(&mut zk) {
            // Someone deletes the directory as soon as it is made.
            if zk.node("/a").is_some() {
                op.delete(&mut zk, "/a");
            }
        } else {
            c.deliver(&mut zk);
        }
    }
    assert_eq!(
        c.events,
        [ConfigEvent::WriteFailed(Error::Zk(ZkError::NoNode))]
    );
    // The first create, then eight rounds of the directory and the node.
    assert_eq!(c.count("create"), 1 + 8 * 2);
    assert!(!c.recipe.is_writing());
    // A later create has its own eight.
    c.events.clear();
    c.act(&mut zk, |c| c.create(b"w")).unwrap();
    c.settle(&mut zk);
    assert_eq!(c.events, [ConfigEvent::Updated { version: 0 }]);
}

#[test]
fn a_write_refused_for_another_reason_fails_and_ends() {
    let mut zk = SimZk::new(5);
    let mut op = Operator::open(&mut zk);
    op.create(&mut zk, "/eph", b"", CreateMode::Ephemeral);
    let mut c = Link::new(&mut zk, Cfg::new("/eph/config").unwrap());
    c.act(&mut zk, |c| c.create(b"v")).unwrap();
    c.settle(&mut zk);
    assert_eq!(
        c.events,
        [ConfigEvent::WriteFailed(Error::Zk(
            ZkError::NoChildrenForEphemerals
        ))]
    );
    // The write is over: the next one is accepted.
    assert!(!c.recipe.is_writing());
    assert_eq!(c.recipe.create(b"w"), Ok(()));
}

/// A driver that runs several recipes on one session hands every
/// notification to each of them.
#[test]
fn notifications_that_are_not_its_own_are_ignored() {
    let mut zk = SimZk::new(6);
    zk.create_persistent(PATH, b"v0").unwrap();
    let mut watcher = Link::new(&mut zk, Cfg::new(PATH).unwrap());
    watcher.act(&mut zk, |c| c.watch());
    watcher.settle(&mut zk);
    assert_eq!(watcher.events, [ConfigEvent::Changed { version: 0 }]);
    let reads = watcher.count("getData");
    let other = WatchEvent {
        kind: WatchKind::NodeDataChanged,
        path: "/app/other",
    };
    watcher.act(&mut zk, |c| c.handle_watch(Instant::ZERO, other));
    watcher.settle(&mut zk);
    assert_eq!(watcher.count("getData"), reads);

    // One that does not watch ignores even its own node's notifications.
    let mut writer = Link::new(&mut zk, Cfg::new(PATH).unwrap());
    let own = WatchEvent {
        kind: WatchKind::NodeDataChanged,
        path: PATH,
    };
    writer.act(&mut zk, |c| c.handle_watch(Instant::ZERO, own));
    writer.settle(&mut zk);
    assert!(writer.sent.is_empty(), "{:?}", writer.sent);
    assert!(writer.events.is_empty(), "{:?}", writer.events);
}

/// The Debug form names the watched path.
#[test]
fn debug_names_the_path() {
    let config: Config = Config::new("/app/config").unwrap();
    let text = format!("{config:?}");
    assert!(text.contains("/app/config"), "{text}");
}

/// The end of a session is reported when it happens, once: a second end
/// (an expiry answer after the expiry itself) says nothing more.
#[test]
fn an_ended_session_is_reported_once_when_it_ends() {
    let mut c = Cfg::new(PATH).unwrap();
    c.watch();
    let drain = |c: &mut Cfg| std::iter::from_fn(|| c.poll_event()).collect::<Vec<_>>();
    c.handle_session(Instant::ZERO, herdless_core::SessionEvent::Expired);
    assert_eq!(drain(&mut c), [ConfigEvent::SessionEnded]);
    c.handle_session(Instant::ZERO, herdless_core::SessionEvent::Expired);
    assert_eq!(drain(&mut c), []);
}

/// A server whose clients read as the embedded driver does (through a
/// receive buffer), with the config node at version 0 and a watcher
/// that has read it.
fn watched_on_an_embedded_reader() -> (SimZk, Link<Cfg>, Operator) {
    let mut zk = SimZk::new(8);
    zk.set_listing_part(Some(8));
    zk.create_persistent(PATH, b"v0").unwrap();
    let mut watcher = Link::new(&mut zk, Cfg::new(PATH).unwrap());
    watcher.act(&mut zk, |c| c.watch());
    watcher.settle(&mut zk);
    assert_eq!(watcher.events, [ConfigEvent::Changed { version: 0 }]);
    let op = Operator::open(&mut zk);
    (zk, watcher, op)
}

/// `data` written by another client over the embedded driver's receive
/// buffer (the simulator marks the version so; its data stays short).
fn write_over_the_buffer(zk: &mut SimZk, op: &mut Operator, data: &[u8]) {
    zk.set_oversized_writes(1.0);
    op.set(zk, PATH, data);
    zk.set_oversized_writes(0.0);
}

/// A value over the receive buffer (`ReplyTooLarge`, the read's watch set)
/// is reported as one over the value buffer, with its version and length
/// asked with an `exists`; the next that fits is delivered. It was
/// reported as a failure, the old value still shown as current.
#[test]
fn a_value_over_the_receive_buffer_is_reported_too_large_and_the_next_is_read() {
    let (mut zk, mut watcher, mut op) = watched_on_an_embedded_reader();
    write_over_the_buffer(&mut zk, &mut op, b"big");
    watcher.settle(&mut zk);
    assert_eq!(watcher.count("exists"), 1);
    assert_eq!(
        watcher.events[1..],
        [ConfigEvent::TooLarge { version: 1, len: 3 }]
    );
    assert_eq!(watcher.recipe.value(), None);
    assert_eq!(watcher.recipe.version(), Some(1));
    op.set(&mut zk, PATH, b"v2");
    watcher.settle(&mut zk);
    assert_eq!(watcher.events[2..], [ConfigEvent::Changed { version: 2 }]);
    assert_eq!(watcher.recipe.value(), Some(&b"v2"[..]));
}

/// Written again between the read too large and the `exists` after it:
/// the notification comes first, and the version the `exists` sees is
/// left to the read it queued, so no version that fits is called too
/// large.
#[test]
fn a_value_written_again_before_its_size_is_asked_is_read_not_called_too_large() {
    let (mut zk, mut watcher, mut op) = watched_on_an_embedded_reader();
    write_over_the_buffer(&mut zk, &mut op, b"big");
    assert!(watcher.deliver(&mut zk), "the notification");
    assert!(watcher.apply_one(&mut zk), "the read");
    assert!(watcher.deliver(&mut zk), "answered ReplyTooLarge");
    op.set(&mut zk, PATH, b"v2");
    assert!(watcher.apply_one(&mut zk), "the exists, after the write");
    watcher.settle(&mut zk);
    assert_eq!(watcher.count("exists"), 1);
    assert_eq!(
        watcher.events[1..],
        [ConfigEvent::Changed { version: 2 }],
        "version 2 fits"
    );
}

/// A write whose reply was lost, read back over the receive buffer: its
/// data cannot be compared, so at the version it would have made its
/// outcome is `Unknown`, never a conflict; still at the version it was
/// aimed at, it is sent again. It failed the read and left the write
/// waiting.
#[test]
fn a_lost_write_read_back_over_the_receive_buffer_is_unknown_or_sent_again() {
    let (mut zk, mut writer, _) = watched_on_an_embedded_reader();
    writer
        .act(&mut zk, |c| c.set(b"w", Version::Exactly(0)))
        .unwrap();
    zk.set_oversized_writes(1.0);
    writer.connection_loss(&mut zk, 1);
    zk.set_oversized_writes(0.0);
    writer.settle(&mut zk);
    assert_eq!(
        writer.events[1..],
        [
            ConfigEvent::Unknown,
            ConfigEvent::TooLarge { version: 1, len: 1 }
        ]
    );
    assert!(!writer.recipe.is_writing());

    let (mut zk, mut writer, mut op) = watched_on_an_embedded_reader();
    write_over_the_buffer(&mut zk, &mut op, b"big");
    writer.settle(&mut zk);
    writer
        .act(&mut zk, |c| c.set(b"w", Version::Exactly(1)))
        .unwrap();
    writer.connection_loss(&mut zk, 0);
    writer.settle(&mut zk);
    assert_eq!(writer.count("setData"), 2, "sent again");
    assert!(
        writer.events.contains(&ConfigEvent::Updated { version: 2 }),
        "{:?}",
        writer.events
    );
}

/// A read answered with a version older than the one already read (a
/// server that went back, say) changes nothing: the value and version
/// stay the newer ones, and nothing is reported.
#[test]
fn an_older_version_read_after_a_newer_one_changes_nothing() {
    let mut c = Cfg::new(PATH).unwrap();
    c.watch();
    let stat = |version| herdless_core::Stat {
        version,
        ..herdless_core::Stat::default()
    };
    let read = c.poll_request().unwrap().id;
    let newer = Reply::Data {
        data: b"v1",
        stat: stat(1),
    };
    c.handle_reply(Instant::ZERO, read, newer);
    assert_eq!(c.poll_event(), Some(ConfigEvent::Changed { version: 1 }));
    let changed = WatchEvent {
        kind: WatchKind::NodeDataChanged,
        path: PATH,
    };
    c.handle_watch(Instant::ZERO, changed);
    let read = c.poll_request().unwrap().id;
    let older = Reply::Data {
        data: b"v0",
        stat: stat(0),
    };
    c.handle_reply(Instant::ZERO, read, older);
    assert_eq!(c.value(), Some(&b"v1"[..]));
    assert_eq!(c.version(), Some(1));
    assert_eq!(c.poll_event(), None);
}
