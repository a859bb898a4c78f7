//! Group membership across a session change: the member's name may still be
//! held by its own previous session, which the server has not expired yet
//! (the client gave it up first). The member must wait for that node to go
//! and join then; a name held by a live *other* session stays a clash.
//! Scripted on the in-memory ZooKeeper.

mod conn_loss;

use conn_loss::{Driver, Operator};
use herdless_core::member::{Error, Member, MemberEvent};
use herdless_core::sim::SimZk;
use herdless_core::{Acl, CreateMode, Recipe, Request, SessionEvent};

const GROUP: &str = "/fleet";
const NODE: &str = "/fleet/edge-1";

fn member(zk: &mut SimZk, announce: bool) -> Driver<Member> {
    let mut m: Driver<Member> = Driver::open(zk, Member::new(GROUP, "edge-1").unwrap());
    if announce {
        let s = m.session;
        m.act(zk, |r| {
            r.handle_session(SessionEvent::Connected { session_id: s })
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
    m.act(zk, |r| r.handle_session(SessionEvent::Expired));
    let new = zk.open_session();
    m.session = new;
    m.act(zk, |r| {
        r.handle_session(SessionEvent::Connected { session_id: new })
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
    other.send(
        &mut zk,
        Request::Create {
            path: NODE,
            data: b"other",
            acl: Acl::OPEN,
            mode: CreateMode::Ephemeral,
        },
    );
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
    other.send(
        &mut zk,
        Request::Create {
            path: "/fleet",
            data: b"",
            acl: Acl::OPEN,
            mode: CreateMode::Persistent,
        },
    );
    other.send(
        &mut zk,
        Request::Create {
            path: NODE,
            data: b"other",
            acl: Acl::OPEN,
            mode: CreateMode::Ephemeral,
        },
    );
    let mut m: Driver<Member> = Driver::open(&mut zk, Member::new(GROUP, "edge-1").unwrap());
    let s = m.session;
    m.act(&mut zk, |r| {
        r.handle_session(SessionEvent::Connected { session_id: s })
    });
    m.act(&mut zk, |r| r.join(b"x")).unwrap();
    m.run(&mut zk);
    assert_eq!(m.take_events(), [MemberEvent::Failed(Error::NameTaken)]);
    assert!(m.recipe.is_idle());
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
        other.send(
            &mut zk,
            Request::Create {
                path: NODE,
                data: b"other",
                acl: Acl::OPEN,
                mode: CreateMode::Ephemeral,
            },
        );
        let mut m: Driver<Member> = Driver::open(&mut zk, Member::new(GROUP, "edge-1").unwrap());
        if announce {
            let s = m.session;
            m.act(&mut zk, |r| {
                r.handle_session(SessionEvent::Connected { session_id: s })
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
                r.handle_session(SessionEvent::Connected { session_id: s })
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
