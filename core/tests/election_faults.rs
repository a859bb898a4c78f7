//! The election candidate under faults, scripted step by step on the
//! in-memory ZooKeeper: errors answered to single requests (every branch of
//! the candidate's error handling), a leader that fails, operators deleting
//! candidates' nodes, and a sequence counter that wraps.
//!
//! Oracles are computed here: the server's tree, the order in which the
//! test created the candidates, and the events reported.

mod conn_loss;

use conn_loss::{Driver, Operator};
use herdless_core::election::{Acknowledgement, Election, ElectionEvent, ElectionState, Error};
use herdless_core::naming::Guid;
use herdless_core::owned::OwnedReply;
use herdless_core::sim::SimZk;
use herdless_core::{Recipe, SessionEvent, ZkError};

const DIR: &str = "/election/p";
const ACK: &str = "/election/p/leader";

fn g(n: u8) -> Guid {
    Guid::from_random_bytes([n; 16])
}

/// A candidate on its own session, whose id it was told.
fn candidate(zk: &mut SimZk) -> Driver<Election> {
    let mut d: Driver<Election> = Driver::open(zk, Election::new(DIR).unwrap());
    let s = d.session;
    d.act(zk, |e| {
        e.handle_session(SessionEvent::Connected { session_id: s })
    });
    d
}

/// The node name the acknowledgement names, if any.
fn acknowledged(zk: &SimZk) -> Option<String> {
    let ack = zk.node(ACK)?;
    Acknowledgement::parse(&ack.data).map(|a| a.node.to_owned())
}

fn own_path(d: &Driver<Election>) -> String {
    d.recipe.own_path().unwrap().to_owned()
}

/// Runs every candidate until nothing is queued anywhere. After every
/// delivery: a candidate that just reported `Leading` or `Resumed` has its
/// own node on the server, owned by its session; and no two candidates
/// with live sessions lead.
fn settle(zk: &mut SimZk, ds: &mut [Driver<Election>]) {
    let mut seen: Vec<usize> = ds.iter().map(|d| d.events.len()).collect();
    for _ in 0..10_000 {
        let mut busy = false;
        for i in 0..ds.len() {
            busy |= zk.apply_next(ds[i].session);
            busy |= ds[i].deliver_one(zk);
            for event in &ds[i].events[seen[i]..] {
                if matches!(event, ElectionEvent::Leading | ElectionEvent::Resumed) {
                    let path = ds[i].recipe.own_path().expect("leads without a node");
                    let node = zk.node(path);
                    assert!(
                        node.is_some_and(|n| n.stat.ephemeral_owner == ds[i].session),
                        "candidate {i} reported {event:?} without a node of its own"
                    );
                }
            }
            seen[i] = ds[i].events.len();
            let leaders = ds
                .iter()
                .filter(|d| d.recipe.is_leading() && zk.is_live(d.session))
                .count();
            assert!(leaders <= 1, "two leaders");
        }
        if !busy {
            return;
        }
    }
    panic!(
        "never quiet: {:?} nodes {:?} sent by the last: {:?}",
        ds.iter()
            .map(|d| format!("{:?}", d.recipe))
            .collect::<Vec<_>>(),
        zk.children(DIR),
        ds.last()
            .map(|d| d.sent.iter().rev().take(6).collect::<Vec<_>>())
    );
}

/// `n` candidates, campaigning one after the other.
fn election(zk: &mut SimZk, n: usize) -> Vec<Driver<Election>> {
    let mut ds = Vec::new();
    for i in 0..n {
        ds.push(candidate(zk));
        let data = format!("c{i}").into_bytes();
        ds[i]
            .act(zk, |e| e.campaign(g(i as u8 + 1), &data))
            .unwrap();
        settle(zk, &mut ds);
    }
    ds
}

// ---- Item 6: a leader that fails takes its acknowledgement with it ----

/// The leader's read of its own node is refused (an error that is no
/// connection loss): it fails while leading. Alone in the election, the
/// acknowledgement naming it must go with its node.
#[test]
fn a_leader_that_fails_deletes_the_acknowledgement_naming_it() {
    let mut zk = SimZk::new(1);
    let mut ds = election(&mut zk, 1);
    assert!(ds[0].recipe.is_leading());
    let own = own_path(&ds[0]);
    ds[0].intercept = Some(("getData", own.clone()));
    // A data change on the own node makes the leader read it again.
    Operator::open(&mut zk).set(&mut zk, &own, b"poke");
    settle(&mut zk, &mut ds);
    assert!(ds[0].answer_intercepted(&mut zk, OwnedReply::Error(ZkError::NoAuth)));
    settle(&mut zk, &mut ds);
    assert_eq!(ds[0].events.last(), Some(&ElectionEvent::Lost));
    assert_eq!(ds[0].recipe.state(), ElectionState::Idle);
    assert!(zk.node(&own).is_none(), "its node is deleted");
    assert_eq!(
        acknowledged(&zk),
        None,
        "the acknowledgement still names the candidate that failed"
    );
}

/// The same with a successor: the successor leads and its acknowledgement
/// survives the failed leader's clean-up.
#[test]
fn a_failed_leaders_clean_up_spares_the_successors_acknowledgement() {
    let mut zk = SimZk::new(2);
    let mut ds = election(&mut zk, 2);
    let own = own_path(&ds[0]);
    ds[0].intercept = Some(("getData", own.clone()));
    Operator::open(&mut zk).set(&mut zk, &own, b"poke");
    settle(&mut zk, &mut ds);
    ds[0].answer_intercepted(&mut zk, OwnedReply::Error(ZkError::NoAuth));
    settle(&mut zk, &mut ds);
    assert_eq!(ds[0].events.last(), Some(&ElectionEvent::Lost));
    assert!(ds[1].recipe.is_leading());
    let successor = ds[1].recipe.own_node().unwrap().to_owned();
    assert_eq!(acknowledged(&zk), Some(successor));
}

/// A leader whose node an operator deletes is told it lost, and the
/// acknowledgement naming it goes (there is no successor to replace it).
#[test]
fn a_leader_whose_node_is_deleted_loses_and_its_acknowledgement_goes() {
    let mut zk = SimZk::new(3);
    let mut ds = election(&mut zk, 1);
    let own = own_path(&ds[0]);
    Operator::open(&mut zk).delete(&mut zk, &own);
    settle(&mut zk, &mut ds);
    assert_eq!(
        ds[0].events,
        [ElectionEvent::Leading, ElectionEvent::Lost],
        "the leader must hear that its node went"
    );
    assert!(!ds[0].recipe.is_leading());
    assert_eq!(
        acknowledged(&zk),
        None,
        "an acknowledgement names a gone node"
    );
}

/// Same, with a successor that takes over: its acknowledgement stays.
#[test]
fn a_deleted_leaders_clean_up_spares_the_successors_acknowledgement() {
    for seed in 0..20 {
        let mut zk = SimZk::new(100 + seed);
        let mut ds = election(&mut zk, 3);
        let own = own_path(&ds[0]);
        Operator::open(&mut zk).delete(&mut zk, &own);
        settle(&mut zk, &mut ds);
        assert_eq!(ds[0].events.last(), Some(&ElectionEvent::Lost));
        assert!(ds[1].recipe.is_leading());
        assert_eq!(
            acknowledged(&zk),
            Some(ds[1].recipe.own_node().unwrap().to_owned())
        );
    }
}

// ---- Item 8: the own node is watched while waiting and while leading ----

#[test]
fn the_own_node_is_watched_while_waiting_and_while_leading() {
    let mut zk = SimZk::new(4);
    let mut ds = election(&mut zk, 2);
    for d in &ds {
        let watches = zk.watches_of(d.session);
        assert!(
            watches.contains(&("data", own_path(d))),
            "{:?} does not watch its own node: {watches:?}",
            d.recipe
        );
    }
    // Re-armed after a notification (a data change) ...
    for i in 0..2 {
        let own = own_path(&ds[i]);
        Operator::open(&mut zk).set(&mut zk, &own, b"poke");
        settle(&mut zk, &mut ds);
        assert!(zk.watches_of(ds[i].session).contains(&("data", own)));
    }
    // ... and after a reconnect.
    for i in 0..2 {
        ds[i].break_connection(&mut zk);
        ds[i].restore(&mut zk);
        settle(&mut zk, &mut ds);
        assert!(zk
            .watches_of(ds[i].session)
            .contains(&("data", own_path(&ds[i]))));
    }
    assert!(ds[0].recipe.is_leading());
}

/// A waiting candidate whose node an operator deletes learns it at once and
/// volunteers again, before it hears its predecessor go.
#[test]
fn a_waiting_candidate_whose_node_is_deleted_volunteers_again() {
    let mut zk = SimZk::new(5);
    let mut ds = election(&mut zk, 2);
    let old = own_path(&ds[1]);
    Operator::open(&mut zk).delete(&mut zk, &old);
    // Its predecessor goes in the same moment.
    ds[0].act(&mut zk, |e| e.resign()).unwrap();
    settle(&mut zk, &mut ds);
    let new = own_path(&ds[1]);
    assert_ne!(new, old);
    assert!(zk.node(&new).is_some());
    assert!(ds[1].recipe.is_leading());
    assert_eq!(acknowledged(&zk).as_deref(), ds[1].recipe.own_node());

    // Without the predecessor going, it comes back into the election too.
    let mut zk = SimZk::new(6);
    let mut ds = election(&mut zk, 2);
    let old = own_path(&ds[1]);
    Operator::open(&mut zk).delete(&mut zk, &old);
    settle(&mut zk, &mut ds);
    let new = ds[1].recipe.own_path().map(str::to_owned);
    assert!(
        new.as_ref()
            .is_some_and(|n| *n != old && zk.node(n).is_some()),
        "a candidate without a node waits as if it were in the election: {:?}",
        ds[1].recipe
    );
    assert_eq!(ds[1].recipe.state(), ElectionState::Campaigning);
}

// ---- Item 7: every branch of the candidate's error handling ----

/// A connection-loss answer while waiting: nothing sent until `Connected`,
/// no failure, and the candidate is back in its place afterwards.
#[test]
fn a_connection_loss_answer_waits_for_connected() {
    let mut zk = SimZk::new(7);
    let mut ds = election(&mut zk, 2);
    let own = own_path(&ds[1]);
    ds[1].intercept = Some(("getData", own.clone()));
    Operator::open(&mut zk).set(&mut zk, &own, b"poke");
    settle(&mut zk, &mut ds);
    let sent = ds[1].sent.len();
    let events = ds[1].events.len();
    ds[1].answer_intercepted(&mut zk, OwnedReply::Error(ZkError::ConnectionLoss));
    assert_eq!(ds[1].sent.len(), sent, "sent before Connected");
    assert_eq!(
        ds[1].events.len(),
        events,
        "a connection loss is no failure"
    );
    assert_eq!(ds[1].recipe.state(), ElectionState::Campaigning);
    ds[1].intercept = None;
    let s = ds[1].session;
    ds[1].act(&mut zk, |e| {
        e.handle_session(SessionEvent::Connected { session_id: s })
    });
    assert!(ds[1].sent.len() > sent, "nothing sent after Connected");
    settle(&mut zk, &mut ds);
    assert_eq!(own_path(&ds[1]), own, "kept its node");
    ds[0].act(&mut zk, |e| e.resign()).unwrap();
    settle(&mut zk, &mut ds);
    assert!(ds[1].recipe.is_leading());
}

/// A connection-loss answer while leading: `Suspended` at once, then
/// `Resumed` after `Connected`.
#[test]
fn a_connection_loss_answer_suspends_the_leader() {
    let mut zk = SimZk::new(8);
    let mut ds = election(&mut zk, 1);
    let own = own_path(&ds[0]);
    ds[0].intercept = Some(("getData", own.clone()));
    Operator::open(&mut zk).set(&mut zk, &own, b"poke");
    settle(&mut zk, &mut ds);
    ds[0].answer_intercepted(&mut zk, OwnedReply::Error(ZkError::ConnectionLoss));
    assert_eq!(ds[0].events.last(), Some(&ElectionEvent::Suspended));
    assert!(!ds[0].recipe.is_leading());
    ds[0].intercept = None;
    let s = ds[0].session;
    ds[0].act(&mut zk, |e| {
        e.handle_session(SessionEvent::Connected { session_id: s })
    });
    settle(&mut zk, &mut ds);
    assert_eq!(ds[0].events.last(), Some(&ElectionEvent::Resumed));
    assert!(ds[0].recipe.is_leading());
}

/// A `SessionExpired` answer ends the campaign (`Failed(NoSession)`) or
/// the leadership (`Lost`).
#[test]
fn a_session_expired_answer_ends_the_campaign_or_the_leadership() {
    let mut zk = SimZk::new(9);
    let mut ds = election(&mut zk, 2);
    for (i, expected) in [
        (1, ElectionEvent::Failed(Error::NoSession)),
        (0, ElectionEvent::Lost),
    ] {
        let own = own_path(&ds[i]);
        ds[i].intercept = Some(("getData", own.clone()));
        Operator::open(&mut zk).set(&mut zk, &own, b"poke");
        settle(&mut zk, &mut ds);
        ds[i].answer_intercepted(&mut zk, OwnedReply::Error(ZkError::SessionExpired));
        assert_eq!(ds[i].events.last(), Some(&expected), "candidate {i}");
        assert_eq!(ds[i].recipe.state(), ElectionState::Idle);
        assert!(ds[i].recipe.poll_request().is_none());
    }
}

/// Any other error while campaigning fails the campaign and deletes the
/// own node.
#[test]
fn another_error_while_waiting_fails_and_deletes_the_node() {
    let mut zk = SimZk::new(10);
    let mut ds = election(&mut zk, 2);
    let own = own_path(&ds[1]);
    ds[1].intercept = Some(("getData", own.clone()));
    Operator::open(&mut zk).set(&mut zk, &own, b"poke");
    settle(&mut zk, &mut ds);
    ds[1].answer_intercepted(&mut zk, OwnedReply::Error(ZkError::NoAuth));
    settle(&mut zk, &mut ds);
    assert_eq!(
        ds[1].events.last(),
        Some(&ElectionEvent::Failed(Error::Zk(ZkError::NoAuth)))
    );
    assert_eq!(ds[1].recipe.state(), ElectionState::Idle);
    assert!(zk.node(&own).is_none(), "the failed candidate's node stays");
    assert!(ds[0].recipe.is_leading());
}

/// The own node's delete refused while resigning: reported as a failure,
/// not as a resignation nor a hang.
#[test]
fn a_refused_delete_of_the_own_node_is_reported() {
    let mut zk = SimZk::new(11);
    let mut ds = election(&mut zk, 2);
    let own = own_path(&ds[1]);
    ds[1].intercept = Some(("delete", own.clone()));
    ds[1].act(&mut zk, |e| e.resign()).unwrap();
    settle(&mut zk, &mut ds);
    ds[1].answer_intercepted(&mut zk, OwnedReply::Error(ZkError::NoAuth));
    assert_eq!(
        ds[1].events.last(),
        Some(&ElectionEvent::Failed(Error::Zk(ZkError::NoAuth)))
    );
    assert_eq!(ds[1].recipe.state(), ElectionState::Idle);
}

/// The acknowledgement's delete refused while the leader resigns: the own
/// node is still deleted, and the resignation completes.
#[test]
fn a_refused_delete_of_the_acknowledgement_still_resigns() {
    let mut zk = SimZk::new(12);
    let mut ds = election(&mut zk, 2);
    let own = own_path(&ds[0]);
    ds[0].intercept = Some(("delete", ACK.to_owned()));
    ds[0].act(&mut zk, |e| e.resign()).unwrap();
    settle(&mut zk, &mut ds);
    ds[0].answer_intercepted(&mut zk, OwnedReply::Error(ZkError::NoAuth));
    settle(&mut zk, &mut ds);
    assert_eq!(ds[0].events.last(), Some(&ElectionEvent::Resigned));
    assert!(zk.node(&own).is_none());
    assert!(ds[1].recipe.is_leading(), "the next candidate leads");
}

/// Resigning leader, connection lost during the deletes, the check of the
/// own node after the reconnect refused: the node is deleted anyway.
#[test]
fn a_refused_check_of_the_own_node_while_resigning_still_deletes_it() {
    let mut zk = SimZk::new(13);
    let mut ds = election(&mut zk, 1);
    let own = own_path(&ds[0]);
    ds[0].act(&mut zk, |e| e.resign()).unwrap();
    ds[0].break_connection(&mut zk);
    ds[0].intercept = Some(("exists", own.clone()));
    ds[0].restore(&mut zk);
    settle(&mut zk, &mut ds);
    assert!(ds[0].answer_intercepted(&mut zk, OwnedReply::Error(ZkError::NoAuth)));
    settle(&mut zk, &mut ds);
    assert!(zk.node(&own).is_none(), "{:?}", ds[0].recipe);
    assert_eq!(ds[0].events.last(), Some(&ElectionEvent::Resigned));
}

/// A refused re-read of the acknowledgement while leading is no reason to
/// stop leading.
#[test]
fn a_refused_read_of_the_acknowledgement_while_leading_keeps_leading() {
    let mut zk = SimZk::new(14);
    let mut ds = election(&mut zk, 1);
    ds[0].intercept = Some(("getData", ACK.to_owned()));
    Operator::open(&mut zk).set(&mut zk, ACK, ds[0].recipe.own_node().unwrap().as_bytes());
    settle(&mut zk, &mut ds);
    let events = ds[0].events.len();
    assert!(ds[0].answer_intercepted(&mut zk, OwnedReply::Error(ZkError::NoAuth)));
    settle(&mut zk, &mut ds);
    assert_eq!(ds[0].events.len(), events, "{:?}", ds[0].events);
    assert!(ds[0].recipe.is_leading());
}

/// A node of an earlier session whose delete is refused does not keep the
/// candidate from its campaign.
#[test]
fn a_refused_delete_of_a_stale_node_does_not_block_the_campaign() {
    let mut zk = SimZk::new(15);
    let mut ds = election(&mut zk, 2);
    let old_session = ds[1].session;
    let old = own_path(&ds[1]);
    // The client moves to a new session while the old one lives on.
    let new = zk.open_session();
    ds[1].session = new;
    ds[1].intercept = Some(("delete", old.clone()));
    ds[1].act(&mut zk, |e| {
        e.handle_session(SessionEvent::Connected { session_id: new })
    });
    assert!(ds[1].answer_intercepted(&mut zk, OwnedReply::Error(ZkError::NoAuth)));
    settle(&mut zk, &mut ds);
    assert!(
        !ds[1]
            .events
            .iter()
            .any(|e| matches!(e, ElectionEvent::Failed(_))),
        "{:?}",
        ds[1].events
    );
    assert_eq!(ds[1].recipe.state(), ElectionState::Campaigning);
    assert_ne!(own_path(&ds[1]), old, "volunteered again");
    // Once the old session is gone and the leader resigns, it leads.
    zk.expire(old_session);
    ds[0].act(&mut zk, |e| e.resign()).unwrap();
    settle(&mut zk, &mut ds);
    assert!(ds[1].recipe.is_leading());
}

// ---- Item 9: the sequence counter wraps ----

/// The directory's child counter near `i32::MAX`: names wrap to negative
/// suffixes, and leadership still follows creation order. The oracle is the
/// order in which the test created the candidates.
#[test]
fn leadership_follows_creation_order_across_the_sequence_wrap() {
    for start in [i32::MAX - 3, i32::MAX - 1, i32::MAX] {
        let mut zk = SimZk::new(16);
        zk.create_persistent(DIR, b"").unwrap();
        zk.set_cversion(DIR, start).unwrap();
        let mut ds = election(&mut zk, 6);
        let created: Vec<String> = ds
            .iter()
            .map(|d| d.recipe.own_node().unwrap().to_owned())
            .collect();
        assert!(
            created.iter().any(|n| n.contains("n_-")) && created[0].contains("n_2"),
            "the counter did not wrap: {created:?}"
        );
        // A candidate in the middle leaves: the order is kept around the gap.
        ds[2].act(&mut zk, |e| e.resign()).unwrap();
        settle(&mut zk, &mut ds);
        let mut order: Vec<usize> = vec![0, 1, 3, 4, 5];
        while let Some(&first) = order.first() {
            let leaders: Vec<usize> = (0..ds.len())
                .filter(|&i| ds[i].recipe.is_leading())
                .collect();
            assert_eq!(leaders, [first], "start {start}, nodes {created:?}");
            assert_eq!(acknowledged(&zk).as_deref(), Some(created[first].as_str()));
            ds[first].act(&mut zk, |e| e.resign()).unwrap();
            settle(&mut zk, &mut ds);
            order.remove(0);
        }
    }
}
