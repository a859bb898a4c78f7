//! Group membership across a session change: the member's name may still be
//! held by its own previous session, which the server has not expired yet
//! (the client gave it up first). The member must wait for that node to go
//! and join then; a name held by a live *other* session stays a clash.
//! Scripted on the in-memory ZooKeeper.

mod conn_loss;

use conn_loss::{Driver, Operator};
use herdless_core::member::{Error, Member, MemberEvent};
use herdless_core::owned::OwnedReply;
use herdless_core::sim::SimZk;
use herdless_core::Instant;
use herdless_core::{CreateMode, Recipe, SessionEvent, WatchEvent, WatchKind, ZkError};

const GROUP: &str = "/fleet";
const NODE: &str = "/fleet/edge-1";

fn member(zk: &mut SimZk, announce: bool) -> Driver<Member> {
    let mut m: Driver<Member> = Driver::open(zk, Member::new(GROUP, "edge-1").unwrap());
    if announce {
        let s = m.session;
        m.act(zk, |r| {
            r.handle_session(Instant::ZERO, SessionEvent::Connected { session_id: s })
        });
    }
    m.act(zk, |r| r.join(b"10.0.0.1")).unwrap();
    m.run(zk);
    assert_eq!(m.take_events(), [MemberEvent::Joined]);
    m
}

/// The client gives its session up (as a driver whose own expiry timer ran
/// out does) while the server still holds it, and moves to a new one.
fn move_on(zk: &mut SimZk, m: &mut Driver<Member>) -> i64 {
    let old = m.session;
    m.act(zk, |r| {
        r.handle_session(Instant::ZERO, SessionEvent::Expired)
    });
    let new = zk.open_session();
    m.session = new;
    m.act(zk, |r| {
        r.handle_session(Instant::ZERO, SessionEvent::Connected { session_id: new })
    });
    m.run(zk);
    old
}

fn rejoins_once_the_old_session_lets_go(announce: bool) {
    let mut zk = SimZk::new(1);
    let mut m = member(&mut zk, announce);
    let old = move_on(&mut zk, &mut m);
    assert_eq!(zk.node(NODE).unwrap().stat.ephemeral_owner, old);
    let events = m.take_events();
    assert!(
        !events.iter().any(|e| matches!(e, MemberEvent::Failed(_))),
        "its own dying session's node is no clash: {events:?}"
    );
    assert_eq!(events, [MemberEvent::Out]);
    assert!(!m.recipe.is_idle(), "gave up: {:?}", m.recipe);
    // The server expires the old session: the node goes, the member joins.
    zk.expire(old);
    m.run(&mut zk);
    assert_eq!(m.take_events(), [MemberEvent::Rejoined]);
    assert_eq!(zk.node(NODE).unwrap().stat.ephemeral_owner, m.session);
    assert!(m.recipe.is_in());
}

#[test]
fn a_name_held_by_the_own_previous_session_is_waited_for() {
    rejoins_once_the_old_session_lets_go(true);
}

/// Without any session id reported, the owner read from the own node
/// tells the member which session was its own.
#[test]
fn a_name_held_by_the_own_previous_session_is_waited_for_without_session_ids() {
    rejoins_once_the_old_session_lets_go(false);
}

/// The wait survives a connection loss: the watch is set again.
#[test]
fn waiting_for_the_old_node_survives_a_connection_loss() {
    let mut zk = SimZk::new(2);
    let mut m = member(&mut zk, true);
    let old = move_on(&mut zk, &mut m);
    m.take_events();
    m.break_connection(&mut zk);
    zk.expire(old); // fires while disconnected; the watch is not resent
    m.restore(&mut zk);
    m.run(&mut zk);
    assert_eq!(m.take_events(), [MemberEvent::Rejoined]);
    assert!(m.recipe.is_in());
}

/// After the move, the name is held by a live session that was never the
/// member's: a clash, reported.
#[test]
fn a_name_held_by_a_live_other_session_after_a_move_is_taken() {
    let mut zk = SimZk::new(3);
    let mut m = member(&mut zk, true);
    let old = move_on(&mut zk, &mut m);
    m.take_events();
    // The old session goes, and someone else takes the name at once.
    zk.expire(old);
    let mut other = Operator::open(&mut zk);
    // The member's pending work first notices the deletion; make the
    // other's create land before the member's.
    other.create(&mut zk, NODE, b"other", CreateMode::Ephemeral);
    m.run(&mut zk);
    assert_eq!(
        m.take_events(),
        [MemberEvent::Failed(Error::NameTaken)],
        "{:?}",
        m.recipe
    );
    assert_eq!(zk.node(NODE).unwrap().stat.ephemeral_owner, other.session);
}

/// A first join onto a name a live other session holds is a clash.
#[test]
fn a_first_join_onto_a_name_held_by_another_is_taken() {
    let mut zk = SimZk::new(4);
    let mut other = Operator::open(&mut zk);
    other.create(&mut zk, "/fleet", b"", CreateMode::Persistent);
    other.create(&mut zk, NODE, b"other", CreateMode::Ephemeral);
    let mut m: Driver<Member> = Driver::open(&mut zk, Member::new(GROUP, "edge-1").unwrap());
    let s = m.session;
    m.act(&mut zk, |r| {
        r.handle_session(Instant::ZERO, SessionEvent::Connected { session_id: s })
    });
    m.act(&mut zk, |r| r.join(b"x")).unwrap();
    m.run(&mut zk);
    assert_eq!(m.take_events(), [MemberEvent::Failed(Error::NameTaken)]);
    assert!(m.recipe.is_idle());
}

#[test]
fn a_name_held_by_another_member_on_the_same_session_is_taken() {
    // Its node is the session's own, but no create of this member's can
    // have made it: its create was answered `NodeExists`, not lost.
    for announce in [true, false] {
        let mut zk = SimZk::new(4);
        let first = member(&mut zk, announce);
        let mut second: Driver<Member> =
            Driver::on(Member::new(GROUP, "edge-1").unwrap(), first.session);
        if announce {
            let s = second.session;
            second.act(&mut zk, |r| {
                r.handle_session(Instant::ZERO, SessionEvent::Connected { session_id: s })
            });
        }
        second.act(&mut zk, |r| r.join(b"second")).unwrap();
        second.run(&mut zk);
        assert_eq!(
            second.take_events(),
            [MemberEvent::Failed(Error::NameTaken)],
            "announce {announce}"
        );
        assert!(second.recipe.is_idle());
    }
}

/// The kinds of the requests sent from index `from` on.
fn kinds_since(m: &Driver<Member>, from: usize) -> Vec<&'static str> {
    m.sent[from..].iter().map(|(k, _)| *k).collect()
}

/// The waiting member creates its node as soon as the old one is gone:
/// the deletion notification says so, no read needed.
#[test]
fn the_old_node_gone_is_recreated_at_once() {
    let mut zk = SimZk::new(5);
    let mut m = member(&mut zk, true);
    let old = move_on(&mut zk, &mut m);
    m.take_events();
    let before = m.sent.len();
    zk.expire(old);
    m.run(&mut zk);
    assert_eq!(m.take_events(), [MemberEvent::Rejoined]);
    // The create, then the read that watches the new node.
    assert_eq!(kinds_since(&m, before), ["create", "getData"]);
}

/// A driver may report a new session without an `Expired` first (it moved
/// on by itself): the member is out until its node is back.
#[test]
fn a_new_session_reported_without_expiry_puts_the_member_out_and_back() {
    let mut zk = SimZk::new(6);
    let mut m = member(&mut zk, true);
    let old = m.session;
    let new = zk.open_session();
    m.session = new;
    m.act(&mut zk, |r| {
        r.handle_session(Instant::ZERO, SessionEvent::Connected { session_id: new })
    });
    m.run(&mut zk);
    // The old session still holds the node: the member waits for it.
    assert_eq!(m.take_events(), [MemberEvent::Out]);
    assert!(!m.recipe.is_in());
    zk.expire(old);
    m.run(&mut zk);
    assert_eq!(m.take_events(), [MemberEvent::Rejoined]);
    assert_eq!(zk.node(NODE).unwrap().stat.ephemeral_owner, new);
}

/// Without ever having read its own node, the member still knows the
/// session it was told of before as its own.
#[test]
fn the_session_reported_before_is_known_as_the_members_own() {
    let mut zk = SimZk::new(7);
    let mut m: Driver<Member> = Driver::open(&mut zk, Member::new(GROUP, "edge-1").unwrap());
    let old = m.session;
    m.act(&mut zk, |r| {
        r.handle_session(Instant::ZERO, SessionEvent::Connected { session_id: old })
    });
    // The read of the own node after joining is never answered.
    m.intercept = Some(("getData", NODE.to_owned()));
    m.act(&mut zk, |r| r.join(b"10.0.0.1")).unwrap();
    m.run(&mut zk);
    assert_eq!(m.take_events(), [MemberEvent::Joined]);
    m.intercept = None;
    // The connection dies with the read unanswered; the driver answers it
    // and moves to a new session.
    m.answer_connection_loss();
    m.pump(&mut zk);
    assert_eq!(m.take_events(), [MemberEvent::Suspended]);
    let new = zk.open_session();
    m.session = new;
    m.act(&mut zk, |r| {
        r.handle_session(Instant::ZERO, SessionEvent::Connected { session_id: new })
    });
    m.run(&mut zk);
    assert_eq!(m.take_events(), [MemberEvent::Out], "{:?}", m.recipe);
    zk.expire(old);
    m.run(&mut zk);
    assert_eq!(m.take_events(), [MemberEvent::Rejoined]);
    assert_eq!(zk.node(NODE).unwrap().stat.ephemeral_owner, new);
}

/// Without a session id, a node of the name owned by anyone is no proof
/// that it is this member's.
#[test]
fn a_first_join_without_session_ids_onto_a_name_held_by_another_is_taken() {
    let mut zk = SimZk::new(8);
    let mut other = Operator::open(&mut zk);
    zk.create_persistent(GROUP, b"").unwrap();
    other.create(&mut zk, NODE, b"other", CreateMode::Ephemeral);
    let mut m: Driver<Member> = Driver::open(&mut zk, Member::new(GROUP, "edge-1").unwrap());
    m.act(&mut zk, |r| r.join(b"x")).unwrap();
    m.run(&mut zk);
    assert_eq!(m.take_events(), [MemberEvent::Failed(Error::NameTaken)]);
    assert!(m.recipe.is_idle());
    assert_eq!(zk.node(NODE).unwrap().stat.ephemeral_owner, other.session);
}

/// Deleted after the create and before the read that would watch it: the
/// read finds nothing, and that is news too.
#[test]
fn a_node_deleted_before_its_watch_was_set_is_recreated() {
    let mut zk = SimZk::new(9);
    zk.create_persistent(GROUP, b"").unwrap();
    let mut m: Driver<Member> = Driver::open(&mut zk, Member::new(GROUP, "edge-1").unwrap());
    m.act(&mut zk, |r| r.join(b"x")).unwrap();
    assert!(zk.apply_next(m.session));
    assert!(m.deliver_one(&mut zk));
    assert_eq!(m.take_events(), [MemberEvent::Joined]);
    zk.delete_node(NODE).unwrap();
    m.run(&mut zk);
    assert_eq!(m.take_events(), [MemberEvent::Out, MemberEvent::Rejoined]);
    assert_eq!(zk.node(NODE).unwrap().stat.ephemeral_owner, m.session);
    assert!(m.recipe.is_in());
}

/// A deletion notification is enough: the member creates its node again
/// at once.
#[test]
fn a_node_deleted_by_an_operator_is_recreated_at_once() {
    let mut zk = SimZk::new(10);
    let mut m = member(&mut zk, true);
    let before = m.sent.len();
    zk.delete_node(NODE).unwrap();
    m.run(&mut zk);
    assert_eq!(m.take_events(), [MemberEvent::Out, MemberEvent::Rejoined]);
    assert_eq!(kinds_since(&m, before), ["create", "getData"]);
}

#[test]
fn a_create_that_landed_but_whose_answer_was_lost_is_read_back_not_sent_again() {
    let mut zk = SimZk::new(11);
    zk.create_persistent(GROUP, b"").unwrap();
    let mut m: Driver<Member> = Driver::open(&mut zk, Member::new(GROUP, "edge-1").unwrap());
    m.act(&mut zk, |r| r.join(b"x")).unwrap();
    assert!(zk.apply_next(m.session));
    m.break_connection(&mut zk);
    m.restore(&mut zk);
    m.run(&mut zk);
    assert_eq!(m.take_events(), [MemberEvent::Joined]);
    assert_eq!(m.sent_of("create"), [NODE]);
    assert_eq!(zk.node(NODE).unwrap().stat.ephemeral_owner, m.session);
}

#[test]
fn a_joined_member_hears_of_the_suspension_and_the_resumption() {
    let mut zk = SimZk::new(12);
    let mut m = member(&mut zk, true);
    let creates = m.sent_of("create").len();
    m.break_connection(&mut zk);
    assert_eq!(m.take_events(), [MemberEvent::Suspended]);
    assert!(!m.recipe.is_in());
    m.restore(&mut zk);
    m.run(&mut zk);
    assert_eq!(m.take_events(), [MemberEvent::Resumed]);
    assert!(m.recipe.is_in());
    // The node was there all along: never recreated.
    assert_eq!(m.sent_of("create").len(), creates);
}

/// The own node's data over an embedded driver's receive buffer (anyone
/// can `setData` it): the read after the reconnect is answered
/// `ReplyTooLarge`, so its `Stat` is asked with an `exists` (which always
/// fits), and the member resumes. It stayed suspended for good.
#[test]
fn a_member_whose_node_is_too_large_to_read_resumes_all_the_same() {
    let mut zk = SimZk::new(13);
    zk.set_listing_part(Some(4)); // reads through a receive buffer
    let mut m = member(&mut zk, true);
    let mut op = Operator::open(&mut zk);
    zk.set_oversized_writes(1.0);
    op.set(&mut zk, NODE, b"written over the buffer");
    zk.set_oversized_writes(0.0);
    m.run(&mut zk);
    m.break_connection(&mut zk);
    assert_eq!(m.take_events(), [MemberEvent::Suspended]);
    m.restore(&mut zk);
    m.run(&mut zk);
    assert_eq!(m.take_events(), [MemberEvent::Resumed]);
    assert!(m.recipe.is_in());
    assert!(!m.sent_of("exists").is_empty());
}

/// A failed read of the own node (say, no permission) is no reason to
/// leave the group: the node is there.
#[test]
fn a_failed_read_of_the_own_node_keeps_the_member_in() {
    let mut zk = SimZk::new(13);
    zk.create_persistent(GROUP, b"").unwrap();
    let mut m: Driver<Member> = Driver::open(&mut zk, Member::new(GROUP, "edge-1").unwrap());
    m.intercept = Some(("getData", NODE.to_owned()));
    m.act(&mut zk, |r| r.join(b"x")).unwrap();
    m.run(&mut zk);
    assert_eq!(m.take_events(), [MemberEvent::Joined]);
    assert!(m.answer_intercepted(&mut zk, OwnedReply::Error(ZkError::NoAuth)));
    m.run(&mut zk);
    assert_eq!(m.take_events(), []);
    assert!(m.recipe.is_in());
    assert!(zk.node(NODE).is_some());
}

#[test]
fn a_malformed_answer_fails_a_join_but_not_a_member_in_the_group() {
    let mut zk = SimZk::new(14);
    zk.create_persistent(GROUP, b"").unwrap();
    let mut joining: Driver<Member> = Driver::open(&mut zk, Member::new(GROUP, "edge-1").unwrap());
    joining.intercept = Some(("create", NODE.to_owned()));
    joining.act(&mut zk, |r| r.join(b"x")).unwrap();
    assert!(joining.answer_intercepted(&mut zk, OwnedReply::Deleted));
    assert_eq!(
        joining.take_events(),
        [MemberEvent::Failed(Error::BadReply)]
    );
    assert!(joining.recipe.is_idle());

    let mut m: Driver<Member> = Driver::open(&mut zk, Member::new(GROUP, "edge-2").unwrap());
    m.intercept = Some(("getData", "/fleet/edge-2".to_owned()));
    m.act(&mut zk, |r| r.join(b"y")).unwrap();
    m.run(&mut zk);
    assert_eq!(m.take_events(), [MemberEvent::Joined]);
    assert!(m.answer_intercepted(&mut zk, OwnedReply::Deleted));
    assert_eq!(m.take_events(), []);
    assert!(m.recipe.is_in());
}

#[test]
fn leave_is_refused_unless_joined_and_not_yet_leaving() {
    let mut zk = SimZk::new(15);
    let mut fresh: Driver<Member> = Driver::open(&mut zk, Member::new(GROUP, "edge-2").unwrap());
    assert_eq!(fresh.act(&mut zk, |r| r.leave()), Err(Error::InvalidState));
    assert!(fresh.sent.is_empty());

    let mut m = member(&mut zk, true);
    let before = m.sent.len();
    assert_eq!(m.act(&mut zk, |r| r.leave()), Ok(()));
    assert_eq!(m.act(&mut zk, |r| r.leave()), Err(Error::InvalidState));
    m.run(&mut zk);
    assert_eq!(m.take_events(), [MemberEvent::Left]);
    // In the group, the node is known to be its own: deleted straight away.
    assert_eq!(kinds_since(&m, before), ["delete"]);
    assert_eq!(m.sent_of("delete"), [NODE]);
    assert!(zk.node(NODE).is_none());
    assert_eq!(m.act(&mut zk, |r| r.leave()), Err(Error::InvalidState));
}

/// The session took the node with it: nothing to delete, left at once.
#[test]
fn leaving_after_the_session_ended_is_done_at_once() {
    let mut zk = SimZk::new(16);
    let mut m = member(&mut zk, true);
    zk.expire(m.session);
    m.run(&mut zk);
    assert_eq!(m.take_events(), [MemberEvent::Out]);
    assert_eq!(m.act(&mut zk, |r| r.leave()), Ok(()));
    assert_eq!(m.take_events(), [MemberEvent::Left]);
    assert!(m.recipe.is_idle());
    assert!(m.sent_of("delete").is_empty());
}

/// Leaving while the group directory is being created and an operator
/// removes it again: the member leaves, nothing of it is left behind.
#[test]
fn leaving_while_the_directory_is_being_created_leaves() {
    let mut zk = SimZk::new(17);
    let mut m: Driver<Member> = Driver::open(&mut zk, Member::new("/a/b", "m").unwrap());
    m.act(&mut zk, |r| r.join(b"x")).unwrap();
    // The create fails for want of the directory; its ancestors and the
    // create again go out.
    assert!(zk.apply_next(m.session));
    assert!(m.deliver_one(&mut zk));
    assert!(zk.apply_next(m.session)); // "/a"
    zk.delete_node("/a").unwrap();
    m.act(&mut zk, |r| r.leave()).unwrap();
    m.run(&mut zk);
    assert_eq!(m.take_events(), [MemberEvent::Left]);
    assert!(zk.node("/a").is_none());
}

/// Leaving while the first create is still on its way to a group that does
/// not exist: the member leaves and creates nothing.
#[test]
fn leaving_while_a_create_into_a_missing_group_is_in_flight_creates_nothing() {
    let mut zk = SimZk::new(18);
    let mut m: Driver<Member> = Driver::open(&mut zk, Member::new(GROUP, "edge-1").unwrap());
    m.act(&mut zk, |r| r.join(b"x")).unwrap();
    m.act(&mut zk, |r| r.leave()).unwrap();
    m.run(&mut zk);
    assert_eq!(m.take_events(), [MemberEvent::Left]);
    assert!(zk.node(GROUP).is_none());
    assert!(m.recipe.is_idle());
}

#[test]
fn a_group_directory_that_cannot_hold_members_fails_the_join() {
    let mut zk = SimZk::new(19);
    let mut other = Operator::open(&mut zk);
    other.create(&mut zk, GROUP, b"", CreateMode::Ephemeral);
    let mut m: Driver<Member> = Driver::open(&mut zk, Member::new(GROUP, "edge-1").unwrap());
    m.act(&mut zk, |r| r.join(b"x")).unwrap();
    m.run(&mut zk);
    assert_eq!(
        m.take_events(),
        [MemberEvent::Failed(Error::Zk(
            ZkError::NoChildrenForEphemerals
        ))]
    );
    assert!(m.recipe.is_idle());
}

/// How often the member re-creates a group directory that keeps vanishing
/// before it gives up.
const DIRECTORY_RETRIES: usize = 8;

#[test]
fn a_directory_that_keeps_vanishing_is_given_up_on() {
    let mut zk = SimZk::new(20);
    let mut m: Driver<Member> = Driver::open(&mut zk, Member::new("/g", "m").unwrap());
    m.act(&mut zk, |r| r.join(b"x")).unwrap();
    for _ in 0..1_000 {
        let applied = zk.apply_next(m.session);
        // An operator removes the directory as soon as it is made.
        if zk.node("/g").is_some() {
            zk.delete_node("/g").unwrap();
        }
        let delivered = m.deliver_one(&mut zk);
        if !applied && !delivered {
            break;
        }
    }
    assert_eq!(
        m.take_events(),
        [MemberEvent::Failed(Error::Zk(ZkError::NoNode))]
    );
    assert_eq!(
        m.sent_of("create").iter().filter(|p| *p == "/g/m").count(),
        1 + DIRECTORY_RETRIES
    );
    assert_eq!(
        m.sent_of("create").iter().filter(|p| *p == "/g").count(),
        DIRECTORY_RETRIES
    );
}

#[test]
fn each_missing_ancestor_is_created_once() {
    let mut zk = SimZk::new(21);
    let mut m: Driver<Member> = Driver::open(&mut zk, Member::new("/a/b", "m").unwrap());
    m.act(&mut zk, |r| r.join(b"x")).unwrap();
    m.run(&mut zk);
    assert_eq!(m.take_events(), [MemberEvent::Joined]);
    assert_eq!(m.sent_of("create"), ["/a/b/m", "/a", "/a/b", "/a/b/m"]);
}

/// A driver running several recipes on one session hands every
/// notification to each; one disconnected hears nothing it should act on.
/// (The seed is one whose break the driver reports.)
#[test]
fn notifications_that_are_not_its_own_are_ignored() {
    let mut zk = SimZk::new(23);
    let mut m = member(&mut zk, true);
    let before = m.sent.len();
    m.act(&mut zk, |r| {
        r.handle_watch(
            Instant::ZERO,
            WatchEvent {
                kind: WatchKind::NodeDeleted,
                path: "/fleet/edge-2",
            },
        )
    });
    m.run(&mut zk);
    assert_eq!(m.take_events(), []);
    assert_eq!(m.sent.len(), before);
    assert!(m.recipe.is_in());

    m.break_connection(&mut zk);
    assert_eq!(m.take_events(), [MemberEvent::Suspended]);
    // A notification read before the break, handed over late.
    m.act(&mut zk, |r| {
        r.handle_watch(
            Instant::ZERO,
            WatchEvent {
                kind: WatchKind::NodeDeleted,
                path: NODE,
            },
        )
    });
    assert_eq!(m.take_events(), []);
}

/// Leaving while the join is still finding out whose the name is (its
/// create, or the read after a refused create, on the way): the node of
/// that name belongs to another live session and must stay.
#[test]
fn leaving_during_a_clashing_join_leaves_the_other_sessions_node_alone() {
    for (announce, checking) in [(true, false), (true, true), (false, false), (false, true)] {
        let mut zk = SimZk::new(23);
        let mut other = Operator::open(&mut zk);
        zk.create_persistent(GROUP, b"").unwrap();
        other.create(&mut zk, NODE, b"other", CreateMode::Ephemeral);
        let mut m: Driver<Member> = Driver::open(&mut zk, Member::new(GROUP, "edge-1").unwrap());
        if announce {
            let s = m.session;
            m.act(&mut zk, |r| {
                r.handle_session(Instant::ZERO, SessionEvent::Connected { session_id: s })
            });
        }
        m.act(&mut zk, |r| r.join(b"x")).unwrap();
        if checking {
            // The create is refused; the read of the name is on its way.
            assert!(zk.apply_next(m.session));
            assert!(m.deliver_one(&mut zk));
            assert_eq!(m.sent_of("getData"), [NODE]);
        }
        m.act(&mut zk, |r| r.leave()).unwrap();
        m.run(&mut zk);
        let case = format!("announce {announce}, checking {checking}");
        assert_eq!(m.take_events(), [MemberEvent::Left], "{case}");
        assert!(m.recipe.is_idle(), "{case}");
        assert_eq!(
            zk.node(NODE).map(|n| n.stat.ephemeral_owner),
            Some(other.session),
            "{case}: the other session's node was deleted"
        );
    }
}

/// Leaving while the create is on its way: what it makes is removed.
#[test]
fn leaving_while_the_create_is_in_flight_removes_what_it_made() {
    for announce in [true, false] {
        let mut zk = SimZk::new(24);
        zk.create_persistent(GROUP, b"").unwrap();
        let mut m: Driver<Member> = Driver::open(&mut zk, Member::new(GROUP, "edge-1").unwrap());
        if announce {
            let s = m.session;
            m.act(&mut zk, |r| {
                r.handle_session(Instant::ZERO, SessionEvent::Connected { session_id: s })
            });
        }
        m.act(&mut zk, |r| r.join(b"x")).unwrap();
        m.act(&mut zk, |r| r.leave()).unwrap();
        m.run(&mut zk);
        assert_eq!(m.take_events(), [MemberEvent::Left], "announce {announce}");
        assert!(zk.node(NODE).is_none(), "announce {announce}");
        assert!(m.recipe.is_idle());
    }
}

/// Leaving while the create's answer was lost: the node is read back and
/// removed if the create landed.
#[test]
fn leaving_after_a_lost_create_removes_it_if_it_landed() {
    for landed in [true, false] {
        let mut zk = SimZk::new(25);
        zk.create_persistent(GROUP, b"").unwrap();
        let mut m: Driver<Member> = Driver::open(&mut zk, Member::new(GROUP, "edge-1").unwrap());
        m.act(&mut zk, |r| r.join(b"x")).unwrap();
        if landed {
            assert!(zk.apply_next(m.session));
        }
        m.break_connection(&mut zk);
        m.act(&mut zk, |r| r.leave()).unwrap();
        m.restore(&mut zk);
        m.run(&mut zk);
        assert_eq!(m.take_events(), [MemberEvent::Left], "landed {landed}");
        assert!(zk.node(NODE).is_none(), "landed {landed}");
    }
}

/// Once the create answers Created the node is known to be ours: the read
/// of its owner sent behind it no longer matters, even if it fails.
#[test]
fn leaving_after_the_create_landed_ignores_the_owner_read() {
    let mut zk = SimZk::new(26);
    zk.create_persistent(GROUP, b"").unwrap();
    let mut m: Driver<Member> = Driver::open(&mut zk, Member::new(GROUP, "edge-1").unwrap());
    m.intercept = Some(("exists", NODE.to_owned()));
    m.act(&mut zk, |r| r.join(b"x")).unwrap();
    m.act(&mut zk, |r| r.leave()).unwrap();
    assert!(zk.apply_next(m.session));
    assert!(m.deliver_one(&mut zk));
    assert_eq!(m.sent_of("delete"), [NODE]);
    assert!(m.answer_intercepted(&mut zk, OwnedReply::Error(ZkError::NoAuth)));
    m.run(&mut zk);
    assert_eq!(m.take_events(), [MemberEvent::Left]);
    assert!(zk.node(NODE).is_none());
}
