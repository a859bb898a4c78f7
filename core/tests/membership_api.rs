//! Group membership's plain API on the in-memory ZooKeeper, without faults:
//! the member's name and errors, and what the observer counts and holds as
//! members come and go (each change checked against the group the test
//! itself built).

mod conn_loss;

use conn_loss::Driver;
use herdless_core::member::{Error, Member};
use herdless_core::members::{self, ObserverEvent};
use herdless_core::owned::OwnedReply;
use herdless_core::sim::SimZk;
use herdless_core::Instant;
use herdless_core::{Children, Recipe, Reply, SessionEvent, WatchEvent, WatchKind, ZkError};

#[test]
fn a_member_is_named_by_the_last_part_of_its_path() {
    let m: Member = Member::new("/fleet/gateways", "edge-7").unwrap();
    assert_eq!(m.name(), "edge-7");
    assert_eq!(m.node_path(), "/fleet/gateways/edge-7");
    let top: Member = Member::new("/", "solo").unwrap();
    assert_eq!(top.name(), "solo");
}

#[test]
fn member_errors_say_what_went_wrong() {
    let mut m: Member<4> = Member::new("/fleet", "edge-1").unwrap();
    let big = m.join(b"123456789").unwrap_err();
    assert_eq!(
        big,
        Error::TooLarge {
            len: 9,
            capacity: 4
        }
    );
    let text = big.to_string();
    assert!(text.contains('9') && text.contains('4'), "{text}");
    let taken = Error::NameTaken.to_string();
    assert!(taken.contains("session"), "{taken}");
    let state = m.leave().unwrap_err();
    assert_eq!(state, Error::InvalidState);
    assert!(state.to_string().contains("state"), "{state}");
}

type Observer = Driver<members::Observer<4>>;

fn observer(zk: &mut SimZk, group: &str) -> Observer {
    let mut o: Observer = Driver::open(zk, members::Observer::new(group).unwrap());
    o.act(zk, |o| o.watch());
    o.run(zk);
    o
}

fn held(o: &Observer) -> Vec<&str> {
    o.recipe.members().collect()
}

#[test]
fn an_empty_group_is_reported_once_read() {
    let mut zk = SimZk::new(1);
    zk.create_persistent("/g", b"").unwrap();
    let mut o = observer(&mut zk, "/g");
    assert_eq!(o.recipe.group(), "/g");
    assert_eq!(
        o.take_events(),
        [ObserverEvent::Changed { joined: 0, left: 0 }]
    );
    assert!(o.recipe.is_empty());
    assert_eq!(o.recipe.len(), 0);
    assert!(o.recipe.is_complete());
}

#[test]
fn joins_and_departures_are_counted_and_held() {
    let mut zk = SimZk::new(2);
    for n in ["c", "a", "b"] {
        zk.create_persistent(&format!("/g/{n}"), b"").unwrap();
    }
    let mut o = observer(&mut zk, "/g");
    assert_eq!(
        o.take_events(),
        [ObserverEvent::Changed { joined: 3, left: 0 }]
    );
    assert_eq!(held(&o), ["a", "b", "c"]);
    assert_eq!(o.recipe.len(), 3);
    assert!(!o.recipe.is_empty());
    assert!(o.recipe.is_complete());
    assert!(o.recipe.contains("b"));
    assert!(!o.recipe.contains("d"));

    // One leaves, one joins, before the observer lists again.
    zk.delete_node("/g/b").unwrap();
    zk.create_persistent("/g/d", b"").unwrap();
    o.run(&mut zk);
    assert_eq!(
        o.take_events(),
        [ObserverEvent::Changed { joined: 1, left: 1 }]
    );
    assert_eq!(held(&o), ["a", "c", "d"]);
    assert!(!o.recipe.contains("b"));
    assert!(o.recipe.contains("d"));

    // A departure alone.
    zk.delete_node("/g/a").unwrap();
    o.run(&mut zk);
    assert_eq!(
        o.take_events(),
        [ObserverEvent::Changed { joined: 0, left: 1 }]
    );
    assert_eq!(held(&o), ["c", "d"]);
    assert_eq!(o.recipe.len(), 2);

    // A join alone.
    zk.create_persistent("/g/e", b"").unwrap();
    o.run(&mut zk);
    assert_eq!(
        o.take_events(),
        [ObserverEvent::Changed { joined: 1, left: 0 }]
    );
    assert_eq!(held(&o), ["c", "d", "e"]);
}

#[test]
fn a_smaller_name_pushing_an_old_one_out_of_a_full_buffer_counts_it_as_left() {
    let mut zk = SimZk::new(3);
    for n in ["b", "c", "d", "e"] {
        zk.create_persistent(&format!("/g/{n}"), b"").unwrap();
    }
    let mut o = observer(&mut zk, "/g");
    assert_eq!(
        o.take_events(),
        [ObserverEvent::Changed { joined: 4, left: 0 }]
    );
    assert!(o.recipe.is_complete());
    // A fifth does not fit: the four smallest names are held, so "a" is
    // in and "e" is pushed out.
    zk.create_persistent("/g/a", b"").unwrap();
    o.run(&mut zk);
    assert_eq!(
        o.take_events(),
        [
            ObserverEvent::Overflow { count: 5 },
            ObserverEvent::Changed { joined: 1, left: 1 }
        ]
    );
    assert_eq!(held(&o), ["a", "b", "c", "d"]);
    assert!(!o.recipe.is_complete());
}

/// Members that left held the room of a full buffer while the names that
/// joined were turned away: only the listing's end shows it, so the
/// observer lists again before it reports, and ends holding the group.
#[test]
fn members_gone_from_a_full_buffer_make_room_through_a_second_listing() {
    let mut zk = SimZk::new(10);
    for n in ["b", "c", "d", "e"] {
        zk.create_persistent(&format!("/g/{n}"), b"").unwrap();
    }
    let mut o = observer(&mut zk, "/g");
    assert_eq!(
        o.take_events(),
        [ObserverEvent::Changed { joined: 4, left: 0 }]
    );
    // One notification for all four changes: the observer lists once.
    zk.delete_node("/g/d").unwrap();
    zk.delete_node("/g/e").unwrap();
    zk.create_persistent("/g/f", b"").unwrap();
    zk.create_persistent("/g/g", b"").unwrap();
    let listings_before = listings(&o);
    o.run(&mut zk);
    assert_eq!(listings(&o) - listings_before, 2);
    assert_eq!(
        o.take_events(),
        [ObserverEvent::Changed { joined: 2, left: 2 }]
    );
    assert_eq!(held(&o), ["b", "c", "f", "g"]);
    assert!(o.recipe.is_complete());
}

/// Until that second listing is answered, the held list lacks members the
/// group has, and the observer says so.
#[test]
fn an_observer_awaiting_its_second_listing_is_not_complete() {
    let now = Instant::ZERO;
    let mut o: members::Observer<2> = members::Observer::new("/g").unwrap();
    o.watch();
    let first = o.poll_request().unwrap().id;
    o.handle_reply(now, first, Reply::Children(Children::new(&&["b", "c"][..])));
    assert!(o.poll_event().is_some() && o.is_complete());
    let changed = WatchEvent {
        kind: WatchKind::NodeChildrenChanged,
        path: "/g",
    };
    o.handle_watch(now, changed);
    let second = o.poll_request().unwrap().id;
    let now_in = ["e", "d"];
    o.handle_listing_part(now, second, Children::new(&&now_in[..]), true);
    assert_eq!(o.poll_event(), None);
    assert!(!o.is_complete());
    let third = o
        .poll_request()
        .map(|out| (out.id, out.request.path() == "/g"));
    let (third, listing_again) = third.unwrap();
    assert!(listing_again);
    o.handle_reply(now, third, Reply::Children(Children::new(&&now_in[..])));
    assert_eq!(
        o.poll_event(),
        Some(ObserverEvent::Changed { joined: 2, left: 2 })
    );
    assert!(o.is_complete());
    assert_eq!(o.members().collect::<Vec<_>>(), ["d", "e"]);
}

/// A listing refused after some of its parts (herdless-embassy answers
/// so a name over its receive buffer) leaves the names they brought, and
/// the observer says its list may lack members; the next listing mends it.
#[test]
fn a_listing_refused_after_some_parts_leaves_the_list_incomplete() {
    let now = Instant::ZERO;
    let mut o: members::Observer<4> = members::Observer::new("/g").unwrap();
    o.watch();
    let list = o.poll_request().unwrap().id;
    o.handle_listing_part(now, list, Children::new(&&["b", "a"][..]), false);
    o.handle_reply(now, list, Reply::Error(ZkError::ReplyTooLarge));
    assert_eq!(
        o.poll_event(),
        Some(ObserverEvent::Failed(herdless_core::Error::Zk(
            ZkError::ReplyTooLarge
        )))
    );
    assert_eq!(o.members().collect::<Vec<_>>(), ["a", "b"]);
    assert!(!o.is_complete());
    // Refused whole, a listing leaves the list as complete as it was.
    let mut whole: members::Observer<4> = members::Observer::new("/g").unwrap();
    whole.watch();
    let first = whole.poll_request().unwrap().id;
    whole.handle_reply(now, first, Reply::Error(ZkError::NoAuth));
    assert!(whole.is_complete());

    o.handle_watch(
        now,
        WatchEvent {
            kind: WatchKind::NodeChildrenChanged,
            path: "/g",
        },
    );
    let again = o.poll_request().unwrap().id;
    o.handle_reply(now, again, Reply::Children(Children::new(&&["a"][..])));
    assert_eq!(
        o.poll_event(),
        Some(ObserverEvent::Changed { joined: 2, left: 1 })
    );
    assert!(o.is_complete());
}

fn listings(o: &Observer) -> usize {
    o.sent.iter().filter(|(op, _)| *op == "getChildren").count()
}

/// A listing handed over in parts (herdless-embassy's, over its receive
/// buffer) is reported at its last part; parts of a listing not in flight
/// are ignored.
#[test]
fn a_listing_in_parts_is_reported_at_its_last_part() {
    let now = Instant::ZERO;
    let mut o: members::Observer<4> = members::Observer::new("/g").unwrap();
    assert!(o.takes_listing_in_parts());
    o.watch();
    let list = o.poll_request().unwrap().id;
    let stray = herdless_core::RequestId::new(7, 7);
    o.handle_listing_part(now, stray, Children::new(&&["x"][..]), true);
    o.handle_listing_part(now, list, Children::new(&&["c", "a"][..]), false);
    assert_eq!(o.poll_event(), None);
    assert!(o.contains("a"), "names are held as they come");
    o.handle_listing_part(now, list, Children::new(&&["b"][..]), true);
    assert_eq!(
        o.poll_event(),
        Some(ObserverEvent::Changed { joined: 3, left: 0 })
    );
    assert_eq!(o.members().collect::<Vec<_>>(), ["a", "b", "c"]);
    assert!(!o.contains("x"));
    // The last part took the listing off the requests in flight.
    o.handle_listing_part(now, list, Children::new(&&["d"][..]), true);
    assert_eq!(o.poll_event(), None);
    assert_eq!(o.len(), 3);
}

#[test]
fn a_group_that_goes_away_takes_its_members_with_it() {
    let mut zk = SimZk::new(4);
    zk.create_persistent("/top", b"").unwrap();
    let mut o = observer(&mut zk, "/top/g");
    assert_eq!(o.take_events(), [ObserverEvent::NoGroup]);
    zk.create_persistent("/top/g/a", b"").unwrap();
    zk.create_persistent("/top/g/b", b"").unwrap();
    o.run(&mut zk);
    let events = o.take_events();
    assert_eq!(
        events.last(),
        Some(&ObserverEvent::Changed { joined: 2, left: 0 }),
        "{events:?}"
    );
    assert_eq!(held(&o), ["a", "b"]);

    assert_eq!(zk.delete_recursive("/top/g"), Ok(3));
    o.run(&mut zk);
    assert_eq!(
        o.take_events(),
        [
            ObserverEvent::Changed { joined: 0, left: 2 },
            ObserverEvent::NoGroup
        ]
    );
    assert!(o.recipe.is_empty());
}

#[test]
fn a_list_read_again_after_a_break_without_change_is_current() {
    let mut zk = SimZk::new(5);
    zk.create_persistent("/g/a", b"").unwrap();
    let mut o = observer(&mut zk, "/g");
    assert_eq!(
        o.take_events(),
        [ObserverEvent::Changed { joined: 1, left: 0 }]
    );
    o.break_connection(&mut zk);
    assert_eq!(o.take_events(), [ObserverEvent::Stale]);
    o.restore(&mut zk);
    o.run(&mut zk);
    assert_eq!(o.take_events(), [ObserverEvent::Current]);
    assert_eq!(held(&o), ["a"]);
}

#[test]
fn an_observer_that_does_not_watch_stays_silent_across_a_break() {
    let mut zk = SimZk::new(6);
    zk.create_persistent("/g/a", b"").unwrap();
    let mut o: Observer = Driver::open(&mut zk, members::Observer::new("/g").unwrap());
    o.break_connection(&mut zk);
    o.restore(&mut zk);
    o.run(&mut zk);
    assert_eq!(o.take_events(), []);
    assert!(o.sent.is_empty(), "{:?}", o.sent);
    // Nor on a new session.
    zk.expire(o.session);
    o.run(&mut zk);
    let new = zk.open_session();
    o.session = new;
    o.act(&mut zk, |o| {
        o.handle_session(Instant::ZERO, SessionEvent::Connected { session_id: new })
    });
    o.run(&mut zk);
    assert_eq!(o.take_events(), []);
    assert!(o.sent.is_empty(), "{:?}", o.sent);
}

/// A driver running several recipes on one session hands every
/// notification to each.
#[test]
fn notifications_that_are_not_its_own_are_ignored() {
    let mut zk = SimZk::new(7);
    zk.create_persistent("/g/a", b"").unwrap();
    let mut o = observer(&mut zk, "/g");
    o.take_events();
    let lists = o.sent_of("getChildren").len();
    o.act(&mut zk, |o| {
        o.handle_watch(
            Instant::ZERO,
            WatchEvent {
                kind: WatchKind::NodeChildrenChanged,
                path: "/other",
            },
        )
    });
    o.run(&mut zk);
    assert_eq!(o.sent_of("getChildren").len(), lists);

    let mut idle: Observer = Driver::open(&mut zk, members::Observer::new("/g").unwrap());
    idle.act(&mut zk, |o| {
        o.handle_watch(
            Instant::ZERO,
            WatchEvent {
                kind: WatchKind::NodeChildrenChanged,
                path: "/g",
            },
        )
    });
    idle.run(&mut zk);
    assert!(idle.sent.is_empty(), "{:?}", idle.sent);
    assert_eq!(idle.take_events(), []);
}

/// A listing refused for a reason other than the connection or the session
/// is reported; the observer stays connected.
#[test]
fn a_refused_listing_is_reported() {
    let mut zk = SimZk::new(8);
    zk.create_persistent("/g/a", b"").unwrap();
    let mut o: Observer = Driver::open(&mut zk, members::Observer::new("/g").unwrap());
    o.intercept = Some(("getChildren", "/g".to_owned()));
    o.act(&mut zk, |o| o.watch());
    assert!(o.answer_intercepted(&mut zk, OwnedReply::Error(ZkError::NoAuth)));
    assert_eq!(
        o.take_events(),
        [ObserverEvent::Failed(herdless_core::Error::Zk(
            ZkError::NoAuth
        ))]
    );
    // Still connected: the next notification lists again.
    o.intercept = None;
    o.act(&mut zk, |o| {
        o.handle_watch(
            Instant::ZERO,
            WatchEvent {
                kind: WatchKind::NodeChildrenChanged,
                path: "/g",
            },
        )
    });
    o.run(&mut zk);
    assert_eq!(
        o.take_events(),
        [ObserverEvent::Changed { joined: 1, left: 0 }]
    );
}

/// A listing answered `SessionExpired` ends the session without a word;
/// the next session lists again.
#[test]
fn a_listing_lost_with_the_session_is_read_again_on_the_next() {
    let mut zk = SimZk::new(9);
    zk.create_persistent("/g/a", b"").unwrap();
    let mut o = observer(&mut zk, "/g");
    assert_eq!(
        o.take_events(),
        [ObserverEvent::Changed { joined: 1, left: 0 }]
    );
    o.intercept = Some(("getChildren", "/g".to_owned()));
    zk.create_persistent("/g/b", b"").unwrap();
    o.run(&mut zk);
    assert!(o.answer_intercepted(&mut zk, OwnedReply::Error(ZkError::SessionExpired)));
    assert_eq!(o.take_events(), []);
    o.intercept = None;
    let new = zk.open_session();
    o.session = new;
    o.act(&mut zk, |o| {
        o.handle_session(Instant::ZERO, SessionEvent::Connected { session_id: new })
    });
    o.run(&mut zk);
    assert_eq!(
        o.take_events(),
        [ObserverEvent::Changed { joined: 1, left: 0 }]
    );
    assert_eq!(held(&o), ["a", "b"]);
}

/// The Debug forms name the group (and the member's name).
#[test]
fn debug_names_the_group_and_the_member() {
    let member: Member = Member::new("/fleet/gateways", "edge-7").unwrap();
    let text = format!("{member:?}");
    assert!(
        text.contains("/fleet/gateways") && text.contains("edge-7"),
        "{text}"
    );
    let mut observer: members::Observer = members::Observer::new("/fleet/gateways").unwrap();
    observer.watch();
    let list = observer.poll_request().unwrap().id;
    let names = ["edge-7", "edge-2"];
    observer.handle_reply(
        Instant::ZERO,
        list,
        Reply::Children(Children::new(&&names[..])),
    );
    let text = format!("{observer:?}");
    assert!(
        text.contains("/fleet/gateways") && text.contains(r#"members: ["edge-2", "edge-7"]"#),
        "{text}"
    );
}
