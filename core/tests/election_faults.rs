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
use herdless_core::Instant;
use herdless_core::{Recipe, SessionEvent, ZkError};

mod support;
use support::by_hand::g;

const DIR: &str = "/election/p";
const ACK: &str = "/election/p/leader";

/// A candidate on its own session, whose id it was told.
fn candidate(zk: &mut SimZk) -> Driver<Election> {
    let mut d: Driver<Election> = Driver::open(zk, Election::new(DIR).unwrap());
    let s = d.session;
    d.act(zk, |e| {
        e.handle_session(Instant::ZERO, SessionEvent::Connected { session_id: s })
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
        e.handle_session(Instant::ZERO, SessionEvent::Connected { session_id: s })
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
        e.handle_session(Instant::ZERO, SessionEvent::Connected { session_id: s })
    });
    settle(&mut zk, &mut ds);
    assert_eq!(ds[0].events.last(), Some(&ElectionEvent::Resumed));
    assert!(ds[0].recipe.is_leading());
}

/// A `SessionExpired` answer ends the campaign (`Failed(SessionEnded)`) or
/// the leadership (`Lost`).
#[test]
fn a_session_expired_answer_ends_the_campaign_or_the_leadership() {
    let mut zk = SimZk::new(9);
    let mut ds = election(&mut zk, 2);
    for (i, expected) in [
        (1, ElectionEvent::Failed(Error::SessionEnded)),
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

/// A campaign asked for between an expiry and the transport's next
/// session waits for it and leads on it; after a close, which no session
/// follows, a campaign is refused.
#[test]
fn a_campaign_after_an_expiry_leads_on_the_next_session_and_after_a_close_is_refused() {
    let mut zk = SimZk::new(11);
    let mut ds = election(&mut zk, 1);
    assert!(ds[0].recipe.is_leading());
    zk.expire(ds[0].session);
    ds[0].deliver_all(&mut zk);
    assert_eq!(ds[0].events.last(), Some(&ElectionEvent::Lost));
    ds[0].act(&mut zk, |e| e.campaign(g(7), b"again")).unwrap();
    assert!(ds[0].recipe.poll_request().is_none(), "no session yet");
    let s = zk.open_session();
    ds[0].session = s;
    ds[0].act(&mut zk, |e| {
        e.handle_session(Instant::ZERO, SessionEvent::Connected { session_id: s })
    });
    settle(&mut zk, &mut ds);
    assert_eq!(ds[0].events.last(), Some(&ElectionEvent::Leading));
    let own = own_path(&ds[0]);
    assert_eq!(zk.node(&own).map(|n| n.stat.ephemeral_owner), Some(s));
    assert_eq!(acknowledged(&zk).as_deref(), own.rsplit('/').next());

    zk.close(s);
    ds[0].deliver_all(&mut zk);
    assert_eq!(ds[0].events.last(), Some(&ElectionEvent::Lost));
    assert_eq!(
        ds[0].act(&mut zk, |e| e.campaign(g(8), b"closed")),
        Err(Error::SessionEnded)
    );
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

/// A garbled answer to the acknowledgement's delete while the leader
/// resigns, its own node's delete still in flight: the resignation goes on
/// with what is in flight, sending nothing more (no check of the own node,
/// no second delete), and completes as a resignation.
#[test]
fn a_garbled_answer_while_resigning_adds_no_request() {
    let mut zk = SimZk::new(15);
    let mut ds = election(&mut zk, 1);
    let own = own_path(&ds[0]);
    ds[0].intercept = Some(("delete", ACK.to_owned()));
    ds[0].act(&mut zk, |e| e.resign()).unwrap();
    let sent = ds[0].sent.len();
    assert!(ds[0].answer_intercepted(&mut zk, OwnedReply::Created("/garbled".into())));
    assert_eq!(ds[0].sent[sent..], [], "{:?}", ds[0].recipe);
    settle(&mut zk, &mut ds);
    assert!(zk.node(&own).is_none());
    assert_eq!(ds[0].events.last(), Some(&ElectionEvent::Resigned));
}

/// Resigning leader, connection lost during the deletes: after the
/// reconnect the acknowledgement is read before the own node goes (its
/// delete may have landed, and a successor written its own since), and
/// that read refused, the node is deleted anyway.
#[test]
fn a_refused_read_of_the_acknowledgement_while_resigning_still_deletes_the_node() {
    let mut zk = SimZk::new(13);
    let mut ds = election(&mut zk, 1);
    let own = own_path(&ds[0]);
    ds[0].act(&mut zk, |e| e.resign()).unwrap();
    ds[0].break_connection(&mut zk);
    ds[0].intercept = Some(("getData", ACK.to_owned()));
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
        e.handle_session(Instant::ZERO, SessionEvent::Connected { session_id: new })
    });
    step_until(&mut zk, &mut ds[1], |d| d.has_intercepted());
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

// ---- Paths the mutation run found untested ----

/// Applies the driver's requests and delivers its answers one at a time
/// until `done` holds after a delivery.
fn step_until(zk: &mut SimZk, d: &mut Driver<Election>, done: impl Fn(&Driver<Election>) -> bool) {
    for _ in 0..1_000 {
        let applied = zk.apply_next(d.session);
        let delivered = d.deliver_one(zk);
        if done(d) {
            return;
        }
        assert!(
            applied || delivered,
            "quiet before the step: {:?}",
            d.recipe
        );
    }
    panic!("never got there: {:?}", d.recipe);
}

/// Steps `d` until it leads and the acknowledgement naming it is written
/// (`Leading` is reported as the acknowledgement is sent).
fn step_until_acknowledged(zk: &mut SimZk, d: &mut Driver<Election>) {
    for _ in 0..1_000 {
        if d.recipe.is_leading() && acknowledged(zk).as_deref() == d.recipe.own_node() {
            return;
        }
        let applied = zk.apply_next(d.session);
        let delivered = d.deliver_one(zk);
        assert!(
            applied || delivered,
            "quiet before acknowledging: {:?}",
            d.recipe
        );
    }
    panic!("never acknowledged: {:?}", d.recipe);
}

/// Whether the driver has sent `kind` on `path`.
fn has_sent(d: &Driver<Election>, kind: &str, path: &str) -> bool {
    d.sent.iter().any(|(k, p)| *k == kind && p == path)
}

/// The operator deletes `path` and creates it again on its own session: the
/// same name, another owner.
fn replace_node(zk: &mut SimZk, path: &str, mode: herdless_core::CreateMode) -> Operator {
    let mut op = Operator::open(zk);
    op.delete(zk, path);
    op.create(zk, path, b"squat", mode);
    op
}

/// `<guid>-n_` as the Recipes flavour names a candidate: the GUID's bytes in
/// hex, hyphenated 8-4-4-4-12.
fn recipes_prefix(guid: Guid) -> String {
    let hex: String = guid.0.iter().map(|b| format!("{b:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}-n_",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    )
}

#[test]
fn the_own_node_holds_exactly_the_candidates_data() {
    let mut zk = SimZk::new(30);
    let ds = election(&mut zk, 2);
    for (i, d) in ds.iter().enumerate() {
        let node = zk.node(&own_path(d)).unwrap();
        assert_eq!(node.data, format!("c{i}").into_bytes());
    }
}

#[test]
fn a_missing_directory_is_created_once_per_level() {
    let mut zk = SimZk::new(31);
    let ds = election(&mut zk, 1);
    assert!(ds[0].recipe.is_leading());
    let creates = ds[0].sent_of("create");
    let count = |p: &str| creates.iter().filter(|c| *c == p).count();
    assert_eq!((count("/election"), count(DIR)), (1, 1), "{creates:?}");
}

/// An operator removes the directory just before every create of the own
/// node: it is re-created eight times (`MAX_DIRECTORY_RETRIES`), then the
/// campaign fails with the error.
#[test]
fn a_directory_that_keeps_vanishing_fails_the_campaign_after_eight_retries() {
    let mut zk = SimZk::new(32);
    let mut op = Operator::open(&mut zk);
    let mut d = candidate(&mut zk);
    let create = format!("{DIR}/{}", recipes_prefix(g(1)));
    d.act(&mut zk, |e| e.campaign(g(1), b"")).unwrap();
    // The session applies its requests in the order they were sent.
    let mut applied = 0;
    for _ in 0..1_000 {
        let next = d.sent.get(applied).cloned();
        if next == Some(("create", create.clone())) && zk.node(DIR).is_some() {
            op.delete(&mut zk, DIR);
        }
        if zk.apply_next(d.session) {
            applied += 1;
        } else if !d.deliver_one(&mut zk) {
            break;
        }
    }
    assert_eq!(
        d.sent_of("create").iter().filter(|p| **p == create).count(),
        1 + 8
    );
    assert_eq!(
        d.events,
        [ElectionEvent::Failed(Error::Zk(ZkError::NoNode))]
    );
    assert_eq!(d.recipe.state(), ElectionState::Idle);
}

/// Someone re-creates a foreign acknowledgement as soon as it is deleted:
/// replaced eight times (`MAX_ACK_REPLACEMENTS`), then the candidate gives
/// up the leadership it took (as its node became the lowest).
#[test]
fn a_contended_acknowledgement_gives_up_leadership_after_eight_replacements() {
    const FOREIGN: &[u8] = b"squatter-n_0000000099\nsquatter";
    let mut zk = SimZk::new(33);
    zk.create_persistent("/election", b"").unwrap();
    zk.create_persistent(DIR, b"").unwrap();
    let mut op = Operator::open(&mut zk);
    let persistent = herdless_core::CreateMode::Persistent;
    op.create(&mut zk, ACK, FOREIGN, persistent);
    let mut d = candidate(&mut zk);
    d.act(&mut zk, |e| e.campaign(g(1), b"")).unwrap();
    for _ in 0..1_000 {
        let applied = zk.apply_next(d.session);
        if zk.node(ACK).is_none() {
            op.create(&mut zk, ACK, FOREIGN, persistent);
        }
        let delivered = d.deliver_one(&mut zk);
        if !applied && !delivered {
            break;
        }
    }
    // Eight replacements; the clean-up reads the squatter's and leaves it.
    assert_eq!(d.sent_of("delete").iter().filter(|p| *p == ACK).count(), 8);
    assert_eq!(d.events, [ElectionEvent::Leading, ElectionEvent::Lost]);
    assert_eq!(d.recipe.state(), ElectionState::Idle);
    assert_eq!(zk.children(DIR).unwrap(), ["leader"], "its node is deleted");
}

/// The delete of a foreign acknowledgement is refused once: the candidate
/// reads it again and replaces it, and leads.
#[test]
fn a_refused_replacement_of_a_foreign_acknowledgement_is_tried_again() {
    let mut zk = SimZk::new(34);
    zk.create_persistent("/election", b"").unwrap();
    zk.create_persistent(DIR, b"").unwrap();
    let mut op = Operator::open(&mut zk);
    op.create(
        &mut zk,
        ACK,
        b"gone-n_0000000042\nold leader",
        herdless_core::CreateMode::Persistent,
    );
    let mut ds = vec![candidate(&mut zk)];
    ds[0].intercept = Some(("delete", ACK.to_owned()));
    ds[0].act(&mut zk, |e| e.campaign(g(1), b"")).unwrap();
    // Answered as soon as it is held: before anything sent after it.
    for _ in 0..100 {
        if ds[0].answer_intercepted(&mut zk, OwnedReply::Error(ZkError::NoAuth)) {
            break;
        }
        zk.apply_next(ds[0].session);
        ds[0].deliver_one(&mut zk);
    }
    ds[0].intercept = None;
    settle(&mut zk, &mut ds);
    assert_eq!(ds[0].events, [ElectionEvent::Leading]);
    assert_eq!(acknowledged(&zk).as_deref(), ds[0].recipe.own_node());
}

/// The acknowledgement's create refused: the leadership taken as it was
/// sent is given up, and the node goes.
#[test]
fn a_refused_acknowledgement_write_gives_up_leadership() {
    let mut zk = SimZk::new(35);
    let mut ds = vec![candidate(&mut zk)];
    ds[0].intercept = Some(("create", ACK.to_owned()));
    ds[0].act(&mut zk, |e| e.campaign(g(1), b"")).unwrap();
    settle(&mut zk, &mut ds);
    let own = own_path(&ds[0]);
    assert!(ds[0].answer_intercepted(&mut zk, OwnedReply::Error(ZkError::NoAuth)));
    settle(&mut zk, &mut ds);
    assert_eq!(ds[0].events, [ElectionEvent::Leading, ElectionEvent::Lost]);
    assert_eq!(ds[0].recipe.state(), ElectionState::Idle);
    assert!(zk.node(&own).is_none());
}

/// A failed leader's read of the acknowledgement (to clear it) is refused:
/// its node is deleted all the same, and it is done.
#[test]
fn a_refused_read_of_the_acknowledgement_after_a_loss_still_deletes_the_node() {
    let mut zk = SimZk::new(36);
    let mut ds = election(&mut zk, 1);
    let own = own_path(&ds[0]);
    ds[0].intercept = Some(("getData", own.clone()));
    Operator::open(&mut zk).set(&mut zk, &own, b"poke");
    settle(&mut zk, &mut ds);
    ds[0].intercept = Some(("getData", ACK.to_owned()));
    assert!(ds[0].answer_intercepted(&mut zk, OwnedReply::Error(ZkError::NoAuth)));
    assert_eq!(ds[0].events.last(), Some(&ElectionEvent::Lost));
    settle(&mut zk, &mut ds);
    assert!(ds[0].answer_intercepted(&mut zk, OwnedReply::Error(ZkError::NoAuth)));
    settle(&mut zk, &mut ds);
    assert!(zk.node(&own).is_none(), "{:?}", ds[0].recipe);
    assert_eq!(ds[0].recipe.state(), ElectionState::Idle);
    assert_eq!(ds[0].events, [ElectionEvent::Leading, ElectionEvent::Lost]);
}

/// Resigning leader: the acknowledgement's delete is refused (best effort),
/// then the connection breaks before the own node's delete: after the
/// reconnect only the own node is deleted.
#[test]
fn a_refused_acknowledgement_delete_is_not_tried_again_after_a_reconnect() {
    let mut zk = SimZk::new(37);
    let mut ds = election(&mut zk, 1);
    let own = own_path(&ds[0]);
    ds[0].intercept = Some(("delete", ACK.to_owned()));
    ds[0].act(&mut zk, |e| e.resign()).unwrap();
    assert!(ds[0].answer_intercepted(&mut zk, OwnedReply::Error(ZkError::NoAuth)));
    ds[0].break_connection(&mut zk);
    assert!(zk.node(&own).is_some(), "the own node's delete was applied");
    let mark = ds[0].sent.len();
    ds[0].restore(&mut zk);
    settle(&mut zk, &mut ds);
    assert_eq!(ds[0].sent[mark..], [("delete", own.clone())]);
    assert_eq!(ds[0].events.last(), Some(&ElectionEvent::Resigned));
    assert!(zk.node(&own).is_none());
}

/// The own node deleted and re-created by an operator (same name, another
/// owner) before the candidate reads it: at every step, a node that is not
/// its session's is no claim to lead.
#[test]
fn a_node_replaced_by_an_operator_is_no_claim() {
    use herdless_core::CreateMode::Ephemeral;
    // Lowest, checking its node: volunteers again with a new one.
    let mut zk = SimZk::new(38);
    let mut ds = vec![candidate(&mut zk)];
    ds[0].act(&mut zk, |e| e.campaign(g(1), b"")).unwrap();
    step_until(&mut zk, &mut ds[0], |d| {
        d.recipe
            .own_path()
            .is_some_and(|own| has_sent(d, "getData", own))
    });
    let old = own_path(&ds[0]);
    let _op = replace_node(&mut zk, &old, Ephemeral);
    settle(&mut zk, &mut ds);
    assert_ne!(own_path(&ds[0]), old);
    assert_eq!(ds[0].events, [ElectionEvent::Leading]);
    // Under the campaign's next GUID (CURATOR-498), which no other
    // candidate's campaign has.
    let mut next = g(1);
    next.0[15] += 1;
    let mut prefix = String::new();
    herdless_core::naming::Flavour::Recipes
        .write_prefix(
            herdless_core::naming::NodeKind::Candidate,
            &next,
            &mut prefix,
        )
        .unwrap();
    let own = ds[0].recipe.own_node().unwrap();
    assert!(own.starts_with(&prefix), "{own} under {prefix}");

    // Waiting: volunteers again at once, before its predecessor goes.
    let mut zk = SimZk::new(39);
    let mut ds = election(&mut zk, 2);
    let old = own_path(&ds[1]);
    Operator::open(&mut zk).set(&mut zk, &old, b"poke");
    assert!(ds[1].deliver_one(&mut zk), "the own node's notification");
    let _op = replace_node(&mut zk, &old, Ephemeral);
    settle(&mut zk, &mut ds);
    assert!(ds[0].recipe.is_leading());
    assert_ne!(own_path(&ds[1]), old, "waits on a node it does not own");
    assert!(zk
        .node(&own_path(&ds[1]))
        .is_some_and(|n| n.stat.ephemeral_owner == ds[1].session));

    // Leading: lost.
    let mut zk = SimZk::new(40);
    let mut ds = election(&mut zk, 1);
    let old = own_path(&ds[0]);
    Operator::open(&mut zk).set(&mut zk, &old, b"poke");
    assert!(ds[0].deliver_one(&mut zk), "the own node's notification");
    let _op = replace_node(&mut zk, &old, Ephemeral);
    settle(&mut zk, &mut ds);
    assert_eq!(ds[0].events, [ElectionEvent::Leading, ElectionEvent::Lost]);
    assert!(!ds[0].recipe.is_leading());

    // Suspended, then back on the same session: lost, not resumed.
    let mut zk = SimZk::new(41);
    let mut ds = election(&mut zk, 1);
    let old = own_path(&ds[0]);
    ds[0].break_connection(&mut zk);
    // The session's watches went with the connection: no notification.
    let _op = replace_node(&mut zk, &old, Ephemeral);
    ds[0].restore(&mut zk);
    settle(&mut zk, &mut ds);
    assert_eq!(
        ds[0].events,
        [
            ElectionEvent::Leading,
            ElectionEvent::Suspended,
            ElectionEvent::Lost
        ]
    );
    assert_eq!(ds[0].recipe.state(), ElectionState::Idle);
}

/// No `Connected` heard yet, so the session is learned from the own node's
/// owner: a node an operator re-created as persistent (no owner) is not
/// taken for it.
#[test]
fn a_node_re_created_persistent_is_no_claim_before_the_session_is_known() {
    let mut zk = SimZk::new(42);
    let mut ds: Vec<Driver<Election>> = vec![Driver::open(&mut zk, Election::new(DIR).unwrap())];
    ds[0].act(&mut zk, |e| e.campaign(g(1), b"")).unwrap();
    step_until(&mut zk, &mut ds[0], |d| {
        d.recipe
            .own_path()
            .is_some_and(|own| has_sent(d, "getData", own))
    });
    let old = own_path(&ds[0]);
    let _op = replace_node(&mut zk, &old, herdless_core::CreateMode::Persistent);
    settle(&mut zk, &mut ds);
    assert_eq!(ds[0].events, [ElectionEvent::Leading]);
    assert_ne!(own_path(&ds[0]), old);
}

/// A node of an earlier session outlives a refused delete; the new node's
/// create is lost with the connection. Looking for the new node by its GUID
/// must not find the old one (CURATOR-498).
#[test]
fn a_node_of_an_earlier_session_is_never_taken_for_the_new_one() {
    let mut zk = SimZk::new(43);
    let mut ds = election(&mut zk, 2);
    let old = own_path(&ds[1]);
    let new = zk.open_session();
    ds[1].session = new;
    ds[1].intercept = Some(("delete", old.clone()));
    ds[1].act(&mut zk, |e| {
        e.handle_session(Instant::ZERO, SessionEvent::Connected { session_id: new })
    });
    // Read again, the node shows the old session as its owner.
    step_until(&mut zk, &mut ds[1], |d| d.has_intercepted());
    assert!(ds[1].answer_intercepted(&mut zk, OwnedReply::Error(ZkError::NoAuth)));
    ds[1].intercept = None;
    // The create and the listing never reach the server.
    ds[1].break_connection(&mut zk);
    ds[1].restore(&mut zk);
    loop {
        let mut busy = false;
        for d in ds.iter_mut() {
            busy |= zk.apply_next(d.session);
            busy |= d.deliver_one(&mut zk);
        }
        assert_ne!(
            ds[1].recipe.own_path(),
            Some(old.as_str()),
            "took the old node for its own"
        );
        if !busy {
            break;
        }
    }
    assert!(zk
        .node(&own_path(&ds[1]))
        .is_some_and(|n| n.stat.ephemeral_owner == new));
}

/// A waiting candidate reconnects on the same session: it lists again, and
/// sends nothing malformed (there is no stale node to delete). (The seed is
/// one whose break the driver reports.)
#[test]
fn a_waiting_candidate_reconnecting_only_lists_and_watches() {
    let mut zk = SimZk::new(45);
    let mut ds = election(&mut zk, 2);
    ds[1].break_connection(&mut zk);
    let mark = ds[1].sent.len();
    ds[1].restore(&mut zk);
    settle(&mut zk, &mut ds);
    let after = &ds[1].sent[mark..];
    assert!(
        after
            .iter()
            .all(|(k, p)| matches!(*k, "getChildren" | "getData") && p.starts_with(DIR)),
        "{after:?}"
    );
    assert!(after.iter().any(|(k, _)| *k == "getChildren"));
}

/// The lowest candidate goes: the one behind it confirms at once, without
/// listing again or reading the gone node (sequence numbers only grow). One
/// further back lists again.
#[test]
fn the_follower_of_the_lowest_confirms_at_once_when_it_goes() {
    let mut zk = SimZk::new(45);
    let mut ds = election(&mut zk, 3);
    let lowest = own_path(&ds[0]);
    let marks: Vec<usize> = ds.iter().map(|d| d.sent.len()).collect();
    ds[0].act(&mut zk, |e| e.resign()).unwrap();
    settle(&mut zk, &mut ds);
    assert!(ds[1].recipe.is_leading());
    let after = &ds[1].sent[marks[1]..];
    assert!(
        !after
            .iter()
            .any(|(k, p)| *k == "getChildren" || *p == lowest),
        "{after:?}"
    );
    let second = own_path(&ds[1]);
    ds[1].act(&mut zk, |e| e.resign()).unwrap();
    settle(&mut zk, &mut ds);
    assert!(ds[2].recipe.is_leading());
    let after = &ds[2].sent[marks[2]..];
    assert!(
        !after.iter().any(|(_, p)| *p == second),
        "read the gone predecessor again: {after:?}"
    );
}

/// The own node's deletion is acted on at its notification: a leader
/// reports `Lost` at once, a waiting candidate creates a new node without
/// reading the gone one.
#[test]
fn the_own_nodes_deletion_is_acted_on_at_its_notification() {
    let mut zk = SimZk::new(46);
    let mut ds = election(&mut zk, 2);
    let waiting = own_path(&ds[1]);
    let mark = ds[1].sent.len();
    Operator::open(&mut zk).delete(&mut zk, &waiting);
    assert!(ds[1].deliver_one(&mut zk));
    assert_eq!(ds[1].sent[mark].0, "create", "{:?}", &ds[1].sent[mark..]);
    assert!(!ds[1].sent[mark..].iter().any(|(_, p)| *p == waiting));

    let leader = own_path(&ds[0]);
    Operator::open(&mut zk).delete(&mut zk, &leader);
    assert!(ds[0].deliver_one(&mut zk));
    assert_eq!(ds[0].events.last(), Some(&ElectionEvent::Lost));
}

/// A deleted acknowledgement is written again at once, not read first.
#[test]
fn a_deleted_acknowledgement_is_written_again_at_once() {
    let mut zk = SimZk::new(47);
    let mut ds = election(&mut zk, 1);
    let mark = ds[0].sent.len();
    Operator::open(&mut zk).delete(&mut zk, ACK);
    assert!(ds[0].deliver_one(&mut zk));
    assert_eq!(ds[0].sent[mark..], [("create", ACK.to_owned())]);
    settle(&mut zk, &mut ds);
    assert_eq!(acknowledged(&zk).as_deref(), ds[0].recipe.own_node());
}

/// A write to the node of a candidate that is resigning is no reason to read
/// it again.
#[test]
fn a_resigning_candidate_ignores_a_write_to_its_node() {
    let mut zk = SimZk::new(48);
    let mut ds = election(&mut zk, 2);
    let own = own_path(&ds[1]);
    let mark = ds[1].sent.len();
    ds[1].act(&mut zk, |e| e.resign()).unwrap();
    Operator::open(&mut zk).set(&mut zk, &own, b"poke");
    settle(&mut zk, &mut ds);
    assert_eq!(ds[1].sent[mark..], [("delete", own)]);
    assert_eq!(ds[1].events.last(), Some(&ElectionEvent::Resigned));
}

/// A leader that comes back on a new session while the old one lives on
/// reports `Lost` and deletes nothing: its node and acknowledgement are
/// ephemerals of the old session, and go with it (as a crashed leader's
/// do).
#[test]
fn a_leader_on_a_new_session_leaves_the_old_acknowledgement_to_the_old_session() {
    let mut zk = SimZk::new(49);
    let mut ds = election(&mut zk, 1);
    let old_session = ds[0].session;
    let mark = ds[0].sent.len();
    let new = zk.open_session();
    ds[0].session = new;
    ds[0].act(&mut zk, |e| {
        e.handle_session(Instant::ZERO, SessionEvent::Connected { session_id: new })
    });
    settle(&mut zk, &mut ds);
    assert_eq!(ds[0].events, [ElectionEvent::Leading, ElectionEvent::Lost]);
    assert_eq!(ds[0].recipe.state(), ElectionState::Idle);
    assert!(
        !has_sent(&ds[0], "delete", ACK),
        "{:?}",
        &ds[0].sent[mark..]
    );
    assert!(zk.is_live(old_session));
    zk.expire(old_session);
    assert_eq!(acknowledged(&zk), None, "gone with the old session");
}

/// The same leader resigning at once, while its node is still being read
/// again: `Lost` was told, the candidate is on its way out, and resigning
/// adds `Resigned` at the end, but still deletes no acknowledgement (it
/// is the old session's, and a successor's may stand in its place by the
/// time a delete lands).
#[test]
fn a_leader_on_a_new_session_that_resigns_deletes_no_acknowledgement() {
    let mut zk = SimZk::new(52);
    let mut ds = election(&mut zk, 1);
    let mark = ds[0].sent.len();
    let new = zk.open_session();
    ds[0].session = new;
    ds[0].act(&mut zk, |e| {
        e.handle_session(Instant::ZERO, SessionEvent::Connected { session_id: new })
    });
    assert_eq!(ds[0].events, [ElectionEvent::Leading, ElectionEvent::Lost]);
    assert!(!ds[0].recipe.is_leading());
    assert_eq!(ds[0].recipe.state(), ElectionState::Resigning);
    ds[0].act(&mut zk, |e| e.resign()).unwrap();
    settle(&mut zk, &mut ds);
    assert_eq!(
        ds[0].events,
        [
            ElectionEvent::Leading,
            ElectionEvent::Lost,
            ElectionEvent::Resigned
        ]
    );
    assert_eq!(ds[0].recipe.state(), ElectionState::Idle);
    assert!(
        !has_sent(&ds[0], "delete", ACK),
        "{:?}",
        &ds[0].sent[mark..]
    );
}

/// The old session's end reaches the server after the leader is on its new
/// session, and a successor writes its acknowledgement in between (all are
/// written at version 0 under one name). The old leader must not delete
/// it: a delete of "its" acknowledgement, read before the old session
/// ended, once landed on the successor's, which then led unacknowledged.
#[test]
fn a_leader_on_a_new_session_never_deletes_a_successors_acknowledgement() {
    let mut zk = SimZk::new(51);
    let mut ds = election(&mut zk, 2);
    assert!(ds[0].recipe.is_leading());
    let old_session = ds[0].session;
    let new = zk.open_session();
    ds[0].session = new;
    ds[0].act(&mut zk, |e| {
        e.handle_session(Instant::ZERO, SessionEvent::Connected { session_id: new })
    });
    // Whatever the old leader reads first is read while the old session,
    // and its acknowledgement, still exist.
    zk.apply_next(new);
    ds[0].deliver_one(&mut zk);
    zk.expire(old_session);
    step_until_acknowledged(&mut zk, &mut ds[1]);
    let successor = ds[1].recipe.own_node().unwrap().to_owned();
    assert_eq!(acknowledged(&zk).as_deref(), Some(successor.as_str()));
    let czxid = zk.node(ACK).unwrap().stat.czxid;
    settle(&mut zk, &mut ds);
    assert!(!has_sent(&ds[0], "delete", ACK), "{:?}", ds[0].sent);
    assert_eq!(acknowledged(&zk).as_deref(), Some(successor.as_str()));
    assert_eq!(zk.node(ACK).unwrap().stat.czxid, czxid, "never deleted");
    assert!(ds[1].recipe.is_leading());
}

/// A leader whose node is deleted reads the acknowledgement to clear it;
/// by then the successor has replaced it: it is left alone.
#[test]
fn a_lost_leader_leaves_the_successors_acknowledgement_alone() {
    let mut zk = SimZk::new(50);
    let mut ds = election(&mut zk, 2);
    let mark = ds[0].sent.len();
    let own = own_path(&ds[0]);
    Operator::open(&mut zk).delete(&mut zk, &own);
    assert!(ds[0].deliver_one(&mut zk));
    assert_eq!(ds[0].events.last(), Some(&ElectionEvent::Lost));
    // The successor takes over before the lost leader's read is applied.
    step_until_acknowledged(&mut zk, &mut ds[1]);
    let successor = ds[1].recipe.own_node().unwrap().to_owned();
    assert_eq!(acknowledged(&zk).as_deref(), Some(successor.as_str()));
    let czxid = zk.node(ACK).unwrap().stat.czxid;
    settle(&mut zk, &mut ds);
    assert!(
        !has_sent(&ds[0], "delete", ACK),
        "{:?}",
        &ds[0].sent[mark..]
    );
    assert_eq!(zk.node(ACK).unwrap().stat.czxid, czxid, "written again");
    assert_eq!(ds[0].recipe.state(), ElectionState::Idle);
}

/// The acknowledgement was written but its reply lost; back on the same
/// session the leader is verifying when it resigns: the acknowledgement it
/// wrote is deleted.
#[test]
fn resigning_after_the_acknowledgements_reply_was_lost_deletes_it() {
    let mut zk = SimZk::new(51);
    let mut ds = vec![candidate(&mut zk)];
    ds[0].act(&mut zk, |e| e.campaign(g(1), b"")).unwrap();
    step_until(&mut zk, &mut ds[0], |d| has_sent(d, "create", ACK));
    assert!(zk.apply_next(ds[0].session));
    assert!(acknowledged(&zk).is_some());
    ds[0].break_connection(&mut zk);
    ds[0].restore(&mut zk);
    assert_eq!(ds[0].recipe.state(), ElectionState::Leading);
    ds[0].act(&mut zk, |e| e.resign()).unwrap();
    settle(&mut zk, &mut ds);
    assert_eq!(ds[0].events.last(), Some(&ElectionEvent::Resigned));
    assert!(
        zk.node(ACK).is_none(),
        "the acknowledgement outlives the resignation"
    );
    assert_eq!(zk.children(DIR).unwrap(), Vec::<String>::new());
}

/// A read of the predecessor in flight when the own node is deleted: the
/// candidate volunteers again, and the old read's refusal (it no longer
/// matters) does not fail the new campaign.
#[test]
fn a_refusal_of_a_forgotten_read_does_not_fail_the_campaign() {
    let mut zk = SimZk::new(52);
    let mut ds = election(&mut zk, 2);
    let leader = own_path(&ds[0]);
    let old = own_path(&ds[1]);
    ds[1].intercept = Some(("getData", leader.clone()));
    Operator::open(&mut zk).set(&mut zk, &leader, b"poke");
    assert!(ds[1].deliver_one(&mut zk), "the predecessor's notification");
    ds[1].intercept = None;
    Operator::open(&mut zk).delete(&mut zk, &old);
    assert!(ds[1].deliver_one(&mut zk), "the own node's notification");
    // Its answer comes before those of the requests sent after it.
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
    assert_ne!(own_path(&ds[1]), old);
    ds[0].act(&mut zk, |e| e.resign()).unwrap();
    settle(&mut zk, &mut ds);
    assert!(ds[1].recipe.is_leading());
}

/// `is_suspended`: only a leader that does not know whether it still leads.
#[test]
fn only_a_leader_unsure_of_its_lead_is_suspended() {
    let mut zk = SimZk::new(53);
    let mut ds = election(&mut zk, 2);
    assert!(!ds[0].recipe.is_suspended(), "leading, connected");
    ds[1].break_connection(&mut zk);
    assert!(!ds[1].recipe.is_suspended(), "waiting, disconnected");
    ds[0].break_connection(&mut zk);
    assert!(ds[0].recipe.is_suspended());
    // Back, but its node not checked yet.
    ds[0].restore(&mut zk);
    assert!(ds[0].recipe.is_suspended(), "{:?}", ds[0].recipe);
    assert!(!ds[0].recipe.is_leading());
    ds[1].restore(&mut zk);
    settle(&mut zk, &mut ds);
    assert_eq!(ds[0].events.last(), Some(&ElectionEvent::Resumed));
    assert!(!ds[0].recipe.is_suspended());
}

/// A leader whose node an operator deletes reports `Lost`, and is on its
/// way out until its acknowledgement is settled: resigning, a new campaign
/// refused (its create would race the acknowledgement's delete), idle once
/// the acknowledgement naming it is gone.
#[test]
fn a_leader_whose_node_is_deleted_is_resigning_until_its_acknowledgement_is_gone() {
    let mut zk = SimZk::new(53);
    let mut ds = election(&mut zk, 1);
    let own = own_path(&ds[0]);
    assert_eq!(acknowledged(&zk).as_deref(), ds[0].recipe.own_node());
    Operator::open(&mut zk).delete(&mut zk, &own);
    step_until(&mut zk, &mut ds[0], |d| {
        d.events.contains(&ElectionEvent::Lost)
    });
    assert_eq!(ds[0].recipe.state(), ElectionState::Resigning);
    assert_eq!(
        ds[0].act(&mut zk, |e| e.campaign(g(2), b"")),
        Err(Error::InvalidState)
    );
    settle(&mut zk, &mut ds);
    assert_eq!(ds[0].recipe.state(), ElectionState::Idle);
    assert_eq!(acknowledged(&zk), None);
    assert_eq!(ds[0].events, [ElectionEvent::Leading, ElectionEvent::Lost]);
}

/// A leader back on its session whose own node's check is refused cannot
/// confirm that it leads: it has lost, and says so at once, not once its
/// node is deleted; the acknowledgement naming it is settled (read behind
/// a no-op write) before the node goes.
#[test]
fn a_leader_whose_check_after_a_reconnect_is_refused_loses_at_once() {
    let mut zk = SimZk::new(54);
    let mut ds = election(&mut zk, 1);
    let own = own_path(&ds[0]);
    let session = ds[0].session;
    ds[0].act(&mut zk, |e| {
        e.handle_session(Instant::ZERO, SessionEvent::Suspended)
    });
    ds[0].intercept = Some(("exists", own.clone()));
    ds[0].act(&mut zk, |e| {
        e.handle_session(
            Instant::ZERO,
            SessionEvent::Connected {
                session_id: session,
            },
        )
    });
    assert!(ds[0].has_intercepted());
    ds[0].intercept = None;
    let mark = ds[0].sent.len();
    assert!(ds[0].answer_intercepted(&mut zk, OwnedReply::Error(ZkError::NoAuth)));
    assert_eq!(
        ds[0].events,
        [
            ElectionEvent::Leading,
            ElectionEvent::Suspended,
            ElectionEvent::Lost
        ]
    );
    assert_eq!(
        ds[0].sent[mark..],
        [("check", DIR.to_owned()), ("getData", ACK.to_owned())]
    );
    settle(&mut zk, &mut ds);
    assert!(zk.node(&own).is_none());
    assert_eq!(acknowledged(&zk), None);
    assert_eq!(ds[0].recipe.state(), ElectionState::Idle);
}
