//! The barrier under the faults a real server and driver produce, scripted
//! step by step: requests answered `ConnectionLoss` (applied or not), calls
//! that overlap, and errors that are not connection losses.
//!
//! The oracle is the server's tree and the waiters' events: the barrier ends
//! in the state of the last call, and a waiter passes exactly when the node
//! is gone.

mod conn_loss;

use conn_loss::Driver;
use herdless_core::barrier::{Barrier, BarrierEvent};
use herdless_core::owned::OwnedReply;
use herdless_core::sim::SimZk;
use herdless_core::Instant;
use herdless_core::{Recipe, Reply, SessionEvent, Stat, WatchEvent, WatchKind, ZkError};

const NODE: &str = "/app/gate";

fn barrier() -> Barrier {
    Barrier::new(NODE).unwrap()
}

/// A waiter on its own session, already waiting on a standing barrier.
fn waiting(zk: &mut SimZk) -> Driver<Barrier> {
    let mut w = Driver::open(zk, barrier());
    w.act(zk, |b| b.wait());
    w.run(zk);
    assert!(w.take_events().is_empty(), "the barrier stands");
    w
}

fn passed(w: &mut Driver<Barrier>) -> bool {
    w.take_events().contains(&BarrierEvent::Passed)
}

#[test]
fn set_raises_the_node_and_holds_waiters_until_removed() {
    let mut zk = SimZk::new(1);
    let mut owner = Driver::open(&mut zk, barrier());
    owner.act(&mut zk, |b| b.set());
    owner.run(&mut zk);
    assert_eq!(owner.take_events(), [BarrierEvent::Set]);
    assert!(zk.node(NODE).is_some(), "set creates the node");
    assert!(owner.recipe.is_idle());

    let mut w = waiting(&mut zk);
    w.run(&mut zk);
    assert!(!passed(&mut w), "a waiter passed a standing barrier");

    owner.act(&mut zk, |b| b.remove());
    owner.run(&mut zk);
    assert_eq!(owner.take_events(), [BarrierEvent::Removed]);
    w.run(&mut zk);
    assert!(passed(&mut w));
}

/// Item 1: `set` and `remove` both in flight, the set applied, then the
/// connection breaks: both are answered `ConnectionLoss`. The last call was
/// `remove`: the node must end gone and the waiter pass.
#[test]
fn set_and_remove_both_lost_end_removed_and_release_waiters() {
    let mut zk = SimZk::new(2);
    zk.create_persistent(NODE, b"").unwrap();
    let mut w = waiting(&mut zk);
    let mut owner = Driver::open(&mut zk, barrier());
    owner.act(&mut zk, |b| {
        b.set();
        b.remove();
    });
    assert_eq!(zk.pending_requests(owner.session), 2, "both in flight");
    zk.apply_next(owner.session); // the create: NodeExists, reply lost
    owner.break_connection(&mut zk);
    owner.restore(&mut zk);
    owner.run(&mut zk);
    w.run(&mut zk);
    assert!(
        zk.node(NODE).is_none(),
        "remove was the last call, the node stands: {:?}",
        owner.recipe
    );
    assert!(
        passed(&mut w),
        "the waiter hangs on a barrier that should be down"
    );
    assert!(owner.take_events().contains(&BarrierEvent::Removed));
    assert!(owner.recipe.is_idle());
}

/// The same with the barrier down at first and the create applied: the
/// node the lost create made must not outlive the lost remove.
#[test]
fn a_lost_remove_is_not_undone_by_the_lost_set_before_it() {
    let mut zk = SimZk::new(3);
    zk.create_persistent("/app", b"").unwrap();
    let mut owner = Driver::open(&mut zk, barrier());
    owner.act(&mut zk, |b| {
        b.set();
        b.remove();
    });
    zk.apply_next(owner.session); // created, reply lost
    owner.break_connection(&mut zk);
    assert!(zk.node(NODE).is_some());
    owner.restore(&mut zk);
    owner.run(&mut zk);
    assert!(zk.node(NODE).is_none(), "ends set: {:?}", owner.recipe);
    assert!(owner.recipe.is_idle());
}

/// `remove` then `set` both lost: the barrier ends set.
#[test]
fn remove_then_set_both_lost_end_set() {
    let mut zk = SimZk::new(4);
    zk.create_persistent(NODE, b"").unwrap();
    let mut owner = Driver::open(&mut zk, barrier());
    owner.act(&mut zk, |b| {
        b.remove();
        b.set();
    });
    zk.apply_next(owner.session); // deleted, reply lost
    owner.break_connection(&mut zk);
    owner.restore(&mut zk);
    owner.run(&mut zk);
    assert!(zk.node(NODE).is_some(), "ends removed: {:?}", owner.recipe);
    assert!(owner.take_events().contains(&BarrierEvent::Set));
}

/// `set`, `remove`, `set` in one flight without faults: the last `set`
/// must not be swallowed because an earlier create is still in flight.
#[test]
fn set_remove_set_ends_set() {
    let mut zk = SimZk::new(5);
    zk.create_persistent("/app", b"").unwrap();
    let mut owner = Driver::open(&mut zk, barrier());
    owner.act(&mut zk, |b| {
        b.set();
        b.remove();
        b.set();
    });
    owner.run(&mut zk);
    assert!(
        zk.node(NODE).is_some(),
        "the last call was set: {:?}",
        owner.recipe
    );
    assert!(owner.recipe.is_idle());
}

/// `set` then `remove` while the parent is missing: the create that comes
/// back after the ancestors must not land after the remove.
#[test]
fn set_then_remove_with_a_missing_parent_ends_removed() {
    let mut zk = SimZk::new(6);
    let mut owner = Driver::open(&mut zk, barrier());
    owner.act(&mut zk, |b| {
        b.set();
        b.remove();
    });
    owner.run(&mut zk);
    assert!(
        zk.node(NODE).is_none(),
        "the last call was remove: {:?}",
        owner.recipe
    );
    assert!(owner.recipe.is_idle());
    assert_eq!(owner.take_events().last(), Some(&BarrierEvent::Removed));
}

/// Item 2: a create answered `ConnectionLoss` before the server saw it is
/// sent again once connected, and reported `Set`, never `Failed`.
#[test]
fn a_set_lost_before_the_server_saw_it_is_sent_again() {
    let mut zk = SimZk::new(7);
    zk.create_persistent("/app", b"").unwrap();
    let mut owner = Driver::open(&mut zk, barrier());
    owner.act(&mut zk, |b| b.set());
    owner.break_connection(&mut zk);
    assert!(zk.node(NODE).is_none());
    assert!(
        owner.take_events().is_empty(),
        "a connection loss is no failure"
    );
    assert!(!owner.recipe.is_idle());
    owner.restore(&mut zk);
    owner.run(&mut zk);
    assert_eq!(owner.take_events(), [BarrierEvent::Set]);
    assert!(zk.node(NODE).is_some());
    assert!(owner.recipe.is_idle());
}

/// A create applied whose answer was `ConnectionLoss`: sent again, its
/// `NodeExists` counts as done.
#[test]
fn a_set_applied_then_lost_is_confirmed_after_reconnect() {
    let mut zk = SimZk::new(8);
    zk.create_persistent("/app", b"").unwrap();
    let mut owner = Driver::open(&mut zk, barrier());
    owner.act(&mut zk, |b| b.set());
    zk.apply_next(owner.session);
    owner.break_connection(&mut zk);
    assert!(owner.take_events().is_empty());
    owner.restore(&mut zk);
    owner.run(&mut zk);
    assert_eq!(owner.take_events(), [BarrierEvent::Set]);
    assert!(owner.recipe.is_idle());
}

/// A delete answered `ConnectionLoss` is sent again, and the waiter passes.
#[test]
fn a_remove_lost_before_the_server_saw_it_is_sent_again() {
    let mut zk = SimZk::new(9);
    zk.create_persistent(NODE, b"").unwrap();
    let mut w = waiting(&mut zk);
    let mut owner = Driver::open(&mut zk, barrier());
    owner.act(&mut zk, |b| b.remove());
    owner.break_connection(&mut zk);
    assert!(
        owner.take_events().is_empty(),
        "a connection loss is no failure"
    );
    owner.restore(&mut zk);
    owner.run(&mut zk);
    assert_eq!(owner.take_events(), [BarrierEvent::Removed]);
    assert!(zk.node(NODE).is_none());
    w.run(&mut zk);
    assert!(passed(&mut w));
}

/// A wait whose read was answered `ConnectionLoss` keeps waiting, reads
/// again after the reconnect, and passes only once the node is gone.
#[test]
fn a_wait_whose_read_is_lost_reads_again_and_keeps_waiting() {
    let mut zk = SimZk::new(10);
    zk.create_persistent(NODE, b"").unwrap();
    let mut w = Driver::open(&mut zk, barrier());
    w.act(&mut zk, |b| b.wait());
    w.break_connection(&mut zk);
    assert!(
        w.take_events().is_empty(),
        "a connection loss is no failure"
    );
    assert!(w.recipe.is_waiting());
    w.restore(&mut zk);
    w.run(&mut zk);
    assert!(w.take_events().is_empty(), "passed a standing barrier");
    assert!(w.recipe.is_waiting());
    assert_eq!(zk.watches_of(w.session), [("data", NODE.to_owned())]);
    let mut owner = Driver::open(&mut zk, barrier());
    owner.act(&mut zk, |b| b.remove());
    owner.run(&mut zk);
    w.run(&mut zk);
    assert_eq!(w.take_events(), [BarrierEvent::Passed]);
}

/// A read's answer: the barrier node is there.
fn up() -> Reply<'static> {
    Reply::Data {
        data: b"",
        stat: Stat::default(),
    }
}

fn watch_event(kind: WatchKind) -> WatchEvent<'static> {
    WatchEvent { kind, path: NODE }
}

/// The ids of a wait's no-op write and read, in the order it sends them.
fn check_and_read(b: &mut Barrier) -> (herdless_core::RequestId, herdless_core::RequestId) {
    (b.poll_request().unwrap().id, b.poll_request().unwrap().id)
}

/// Answers a wait's no-op write and read: the barrier stands, the watch is set.
fn found_up(b: &mut Barrier) {
    let (check, read) = check_and_read(b);
    b.handle_reply(Instant::ZERO, check, Reply::Checked);
    b.handle_reply(Instant::ZERO, read, up());
    assert_eq!(b.poll_event(), None, "the barrier stands");
}

/// The deletion notification of an earlier wait's watch, handed over after
/// the next wait began (herdless-std sets a watch zookeeper-client lost
/// again in the background, and tells what it missed when that read
/// returns; the barrier was down then, and has been set again since). The
/// path is the same for every generation: the notification says nothing of
/// the barrier this wait found standing, and must not let it pass.
#[test]
fn a_deletion_heard_before_the_waits_own_read_does_not_pass_it() {
    let now = Instant::ZERO;
    let deleted = watch_event(WatchKind::NodeDeleted);
    let mut b = barrier();
    b.wait();
    let (check, read) = check_and_read(&mut b);
    b.handle_watch(now, deleted);
    assert_eq!(b.poll_event(), None, "passed on an earlier wait's news");
    assert!(b.poll_request().is_none(), "the read on its way decides");
    b.handle_reply(now, check, Reply::Checked);
    b.handle_reply(now, read, up());
    assert_eq!(b.poll_event(), None, "the barrier stands");
    // The watch this wait set fires: now a deletion ends the wait.
    b.handle_watch(now, deleted);
    assert_eq!(b.poll_event(), Some(BarrierEvent::Passed));

    // The same news while the read that re-arms the watch after a data
    // change is on its way: that read decides.
    b.wait();
    found_up(&mut b);
    b.handle_watch(now, watch_event(WatchKind::NodeDataChanged));
    let again = b.poll_request().unwrap().id;
    b.handle_watch(now, deleted);
    assert_eq!(b.poll_event(), None, "the re-armed read has not answered");
    b.handle_reply(now, again, Reply::Error(ZkError::NoNode));
    assert_eq!(b.poll_event(), Some(BarrierEvent::Passed));
}

/// A new session holds none of the last one's watches: a deletion heard
/// after an expiry, before the new session's read, does not pass the wait.
#[test]
fn after_an_expiry_only_the_new_sessions_read_can_vouch_for_a_deletion() {
    let now = Instant::ZERO;
    let mut b = barrier();
    b.wait();
    found_up(&mut b);
    b.handle_session(now, SessionEvent::Expired);
    b.handle_session(now, SessionEvent::Connected { session_id: 2 });
    let (check, read) = check_and_read(&mut b);
    b.handle_watch(now, watch_event(WatchKind::NodeDeleted));
    assert_eq!(b.poll_event(), None, "the old session's watch is gone");
    b.handle_reply(now, check, Reply::Checked);
    b.handle_reply(now, read, up());
    assert_eq!(b.poll_event(), None, "the barrier stands");
    assert!(b.is_waiting());
}

/// Errors that are not connection losses are reported, not retried: a
/// barrier that retried a refused create forever would never say so.
#[test]
fn other_errors_fail_the_operation_without_retry() {
    let mut b = barrier();
    b.set();
    let create = b.poll_request().unwrap().id;
    b.handle_reply(Instant::ZERO, create, Reply::Error(ZkError::NoAuth));
    assert_eq!(
        b.poll_event(),
        Some(BarrierEvent::Failed(herdless_core::Error::Zk(
            ZkError::NoAuth
        )))
    );
    assert!(b.is_idle());
    b.handle_session(Instant::ZERO, SessionEvent::Connected { session_id: 1 });
    assert!(
        b.poll_request().is_none(),
        "a refused create is not sent again"
    );

    b.remove();
    let delete = b.poll_request().unwrap().id;
    b.handle_reply(Instant::ZERO, delete, Reply::Error(ZkError::NotEmpty));
    assert_eq!(
        b.poll_event(),
        Some(BarrierEvent::Failed(herdless_core::Error::Zk(
            ZkError::NotEmpty
        )))
    );
    assert!(b.is_idle());

    b.wait();
    let sent = sent_now(&mut b);
    assert_eq!(sent.len(), 2, "the no-op write, then the read: {sent:?}");
    let (check, read) = (sent[0].0, sent[1].0);
    b.handle_reply(Instant::ZERO, check, Reply::Checked);
    b.handle_reply(Instant::ZERO, read, Reply::Error(ZkError::NoAuth));
    assert_eq!(
        b.poll_event(),
        Some(BarrierEvent::Failed(herdless_core::Error::Zk(
            ZkError::NoAuth
        )))
    );
    assert!(!b.is_waiting());
    assert!(b.poll_request().is_none());
}

/// A barrier node whose data is larger than an embedded driver's receive
/// buffer (set by another client): the wait's read is answered
/// `ReplyTooLarge`. The server read the node, so the barrier stands and
/// the watch is set: the wait goes on, and the node's deletion passes it.
#[test]
fn a_barrier_whose_data_is_too_large_to_read_stands() {
    let now = Instant::ZERO;
    let mut b = barrier();
    b.wait();
    let (check, read) = check_and_read(&mut b);
    b.handle_reply(now, check, Reply::Checked);
    b.handle_reply(now, read, Reply::Error(ZkError::ReplyTooLarge));
    assert_eq!(b.poll_event(), None, "the barrier stands");
    assert!(b.is_waiting());
    assert!(b.poll_request().is_none());
    b.handle_watch(now, watch_event(WatchKind::NodeDeleted));
    assert_eq!(b.poll_event(), Some(BarrierEvent::Passed));
}

/// Scripted by hand: each connection-loss answer stops the barrier from
/// sending until `Connected`, then the same operation goes out again.
#[test]
fn each_connection_loss_answer_waits_for_connected_and_retries() {
    for (start, kinds) in [
        ("set", &["create"][..]),
        ("remove", &["delete"][..]),
        ("wait", &["check", "getData"][..]),
    ] {
        let mut b = barrier();
        match start {
            "set" => b.set(),
            "remove" => b.remove(),
            _ => b.wait(),
        }
        let first = sent_now(&mut b);
        let sent: Vec<_> = first.iter().map(|(_, kind, _)| *kind).collect();
        assert_eq!(sent, kinds, "{start}");
        for (id, _, _) in &first {
            b.handle_reply(Instant::ZERO, *id, Reply::Error(ZkError::ConnectionLoss));
        }
        assert_eq!(
            b.poll_event(),
            None,
            "{start}: a connection loss is no failure"
        );
        assert!(b.poll_request().is_none(), "{start}: sent before Connected");
        b.handle_session(Instant::ZERO, SessionEvent::Connected { session_id: 1 });
        let again = sent_now(&mut b);
        let kinds_again: Vec<_> = again.iter().map(|(_, kind, _)| *kind).collect();
        assert_eq!(kinds_again, kinds, "{start}: sent again after Connected");
        assert!(again.iter().all(|(_, _, path)| path == NODE));
    }
}

/// Three ancestors deep, none of them there.
const DEEP: &str = "/org/team/jobs/gate";

fn deep() -> Barrier {
    Barrier::new(DEEP).unwrap()
}

/// The paths of `path`'s ancestors below the root, shallowest first.
fn ancestors(path: &str) -> Vec<String> {
    let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
    (1..parts.len())
        .map(|n| format!("/{}", parts[..n].join("/")))
        .collect()
}

/// Every request the barrier sends now, as `(id, kind, path)`.
fn sent_now(b: &mut Barrier) -> Vec<(herdless_core::RequestId, &'static str, String)> {
    let mut sent = Vec::new();
    while let Some(out) = b.poll_request() {
        let kind = herdless_core::sim::OwnedRequest::from_request(&out.request).kind();
        sent.push((out.id, kind, out.request.path().to_owned()));
    }
    sent
}

#[test]
fn node_is_the_path_given() {
    assert_eq!(barrier().node(), NODE);
    assert_eq!(deep().node(), DEEP);
}

#[test]
fn debug_shows_the_node_and_the_wait() {
    let mut b = barrier();
    b.wait();
    let shown = format!("{b:?}");
    assert!(shown.contains(NODE), "{shown}");
    assert!(shown.contains("waiting: true"), "{shown}");
}

/// The create answered `NoNode` creates every missing ancestor, shallowest
/// first, each once, then the node.
#[test]
fn set_on_a_deep_path_creates_each_missing_ancestor_once_in_order() {
    let mut zk = SimZk::new(11);
    let mut owner = Driver::open(&mut zk, deep());
    owner.act(&mut zk, |b| b.set());
    owner.run(&mut zk);
    assert_eq!(owner.take_events(), [BarrierEvent::Set]);
    assert!(owner.recipe.is_idle());
    assert!(zk.node(DEEP).is_some(), "{:?}", owner.recipe);
    let mut expected = vec![DEEP.to_owned()];
    expected.extend(ancestors(DEEP));
    expected.push(DEEP.to_owned());
    assert_eq!(owner.sent_of("create"), expected);
}

/// The directory deleted by an operator under a standing barrier: the
/// waiter passes, and the next `set` rebuilds the whole path.
#[test]
fn set_again_after_the_directory_vanished_rebuilds_the_path() {
    let mut zk = SimZk::new(12);
    let mut owner = Driver::open(&mut zk, deep());
    owner.act(&mut zk, |b| b.set());
    owner.run(&mut zk);
    assert_eq!(owner.take_events(), [BarrierEvent::Set]);
    let mut w = Driver::open(&mut zk, deep());
    w.act(&mut zk, |b| b.wait());
    w.run(&mut zk);
    assert!(w.take_events().is_empty(), "the barrier stands");

    zk.delete_recursive("/org/team").unwrap();
    w.run(&mut zk);
    assert_eq!(w.take_events(), [BarrierEvent::Passed]);

    owner.sent.clear();
    owner.act(&mut zk, |b| b.set());
    owner.run(&mut zk);
    assert_eq!(owner.take_events(), [BarrierEvent::Set]);
    for path in ancestors(DEEP).iter().map(String::as_str).chain([DEEP]) {
        assert!(zk.node(path).is_some(), "{path} missing");
    }
    assert!(owner.recipe.is_idle());
    w.act(&mut zk, |b| b.wait());
    w.run(&mut zk);
    assert!(w.take_events().is_empty(), "passed the barrier set again");
}

/// A top-level node answered `NoNode` (under a chroot that was deleted, the
/// server's root is gone): there is no ancestor to create, the root least of
/// all; the failure is reported.
#[test]
fn a_top_level_create_answered_no_node_fails_without_creating_the_root() {
    let mut zk = SimZk::new(13);
    let mut owner = Driver::open(&mut zk, Barrier::<128>::new("/gate").unwrap());
    owner.intercept = Some(("create", "/gate".to_owned()));
    owner.act(&mut zk, |b| b.set());
    assert!(owner.answer_intercepted(&mut zk, OwnedReply::Error(ZkError::NoNode)));
    owner.run(&mut zk);
    assert_eq!(
        owner.take_events(),
        [BarrierEvent::Failed(herdless_core::Error::Zk(
            ZkError::NoNode
        ))]
    );
    assert_eq!(owner.sent_of("create"), ["/gate"]);
    assert!(owner.recipe.is_idle());
}

/// An ancestor the server refuses to create (no permission on the node
/// above it): the failure is reported once and nothing is sent again, where
/// creating the ancestors again after each `NoNode` would loop for ever.
/// Scripted by hand: the simulator has no ACLs.
#[test]
fn a_refused_ancestor_fails_the_set_once_without_retrying() {
    let mut b = deep();
    b.set();
    let first = sent_now(&mut b);
    assert_eq!(first.len(), 1);
    b.handle_reply(Instant::ZERO, first[0].0, Reply::Error(ZkError::NoNode));
    let chain = sent_now(&mut b);
    let paths: Vec<&str> = chain.iter().map(|(_, _, p)| p.as_str()).collect();
    assert_eq!(paths, ["/org", "/org/team", "/org/team/jobs", DEEP]);
    // In order, as the server answers: the first ancestor is created, the
    // second refused, and what follows finds its parent missing.
    b.handle_reply(Instant::ZERO, chain[0].0, Reply::Created { path: "/org" });
    b.handle_reply(Instant::ZERO, chain[1].0, Reply::Error(ZkError::NoAuth));
    b.handle_reply(Instant::ZERO, chain[2].0, Reply::Error(ZkError::NoNode));
    b.handle_reply(Instant::ZERO, chain[3].0, Reply::Error(ZkError::NoNode));
    let events: Vec<_> = core::iter::from_fn(|| b.poll_event()).collect();
    assert_eq!(
        events,
        [BarrierEvent::Failed(herdless_core::Error::Zk(
            ZkError::NoAuth
        ))]
    );
    assert_eq!(sent_now(&mut b), [], "the refused path is created again");
    assert!(b.is_idle());
}

/// The same refusal, then the ancestor made creatable: the next `set` is not
/// failed by the refusal of the last one.
#[test]
fn a_set_after_a_refused_ancestor_tries_the_ancestors_again() {
    let mut b = barrier();
    b.set();
    let first = sent_now(&mut b);
    b.handle_reply(Instant::ZERO, first[0].0, Reply::Error(ZkError::NoNode));
    let chain = sent_now(&mut b);
    assert_eq!(chain.len(), 2);
    b.handle_reply(Instant::ZERO, chain[0].0, Reply::Error(ZkError::NoAuth));
    b.handle_reply(Instant::ZERO, chain[1].0, Reply::Error(ZkError::NoNode));
    assert_eq!(
        b.poll_event(),
        Some(BarrierEvent::Failed(herdless_core::Error::Zk(
            ZkError::NoAuth
        )))
    );
    // Another client created the parent meanwhile.
    b.set();
    let again = sent_now(&mut b);
    assert_eq!(again.len(), 1);
    b.handle_reply(Instant::ZERO, again[0].0, Reply::Created { path: NODE });
    assert_eq!(b.poll_event(), Some(BarrierEvent::Set));
    assert!(b.is_idle());
    // The directory deleted since: the ancestors are created again.
    b.set();
    let third = sent_now(&mut b);
    b.handle_reply(Instant::ZERO, third[0].0, Reply::Error(ZkError::NoNode));
    let paths: Vec<String> = sent_now(&mut b).into_iter().map(|(_, _, p)| p).collect();
    assert_eq!(paths, ["/app", NODE]);
    assert_eq!(b.poll_event(), None);
}

/// The create behind a refused ancestor created the node after all (another
/// client made the parent in between): `Set`, and the refusal is forgotten.
#[test]
fn a_create_that_lands_despite_a_refused_ancestor_reports_set() {
    let mut b = barrier();
    b.set();
    let first = sent_now(&mut b);
    b.handle_reply(Instant::ZERO, first[0].0, Reply::Error(ZkError::NoNode));
    let chain = sent_now(&mut b);
    b.handle_reply(Instant::ZERO, chain[0].0, Reply::Error(ZkError::NoAuth));
    b.handle_reply(Instant::ZERO, chain[1].0, Reply::Created { path: NODE });
    assert_eq!(b.poll_event(), Some(BarrierEvent::Set));
    assert_eq!(b.poll_event(), None);
    assert!(b.is_idle());
    b.remove();
    let delete = sent_now(&mut b);
    b.handle_reply(Instant::ZERO, delete[0].0, Reply::Deleted);
    assert_eq!(b.poll_event(), Some(BarrierEvent::Removed));
    b.set();
    let create = sent_now(&mut b);
    b.handle_reply(Instant::ZERO, create[0].0, Reply::Error(ZkError::NoNode));
    assert_eq!(
        sent_now(&mut b).len(),
        2,
        "a refusal already settled failed a later set"
    );
    assert_eq!(b.poll_event(), None);
}

/// `cancel_wait` before the read went out: no read is sent, and a `set`
/// queued with it still goes out and is reported.
#[test]
fn cancel_wait_drops_the_read_but_not_the_write_queued_with_it() {
    let mut zk = SimZk::new(14);
    zk.create_persistent("/app", b"").unwrap();
    let mut b = Driver::open(&mut zk, barrier());
    b.act(&mut zk, |b| {
        b.set();
        b.wait();
        b.cancel_wait();
    });
    assert!(!b.recipe.is_waiting());
    b.run(&mut zk);
    assert_eq!(b.take_events(), [BarrierEvent::Set]);
    assert!(zk.node(NODE).is_some());
    assert!(b.sent_of("getData").is_empty(), "read after cancel_wait");
    assert!(b.recipe.is_idle());
}

/// A cancelled wait's watch stays on the server (it cannot be taken back):
/// what it reports later neither re-arms it nor passes anyone.
#[test]
fn a_cancelled_wait_ignores_its_leftover_watch() {
    let mut zk = SimZk::new(15);
    zk.create_persistent(NODE, b"").unwrap();
    let mut w = waiting(&mut zk);
    w.act(&mut zk, |b| b.cancel_wait());
    assert!(!w.recipe.is_waiting());
    assert!(w.recipe.is_idle());
    zk.set_node_data(NODE, b"changed").unwrap();
    w.run(&mut zk);
    assert_eq!(w.sent_of("getData"), [NODE], "a cancelled wait re-armed");
    assert!(zk.watches_of(w.session).is_empty());
    zk.delete_node(NODE).unwrap();
    w.run(&mut zk);
    assert!(w.take_events().is_empty(), "a cancelled wait passed");
}

/// The same with the node deleted while the cancelled wait's read is in
/// flight: its `NoNode` answer passes nobody.
#[test]
fn a_wait_cancelled_with_its_read_in_flight_reports_nothing() {
    let mut zk = SimZk::new(16);
    let mut w = Driver::open(&mut zk, barrier());
    w.act(&mut zk, |b| b.wait());
    assert_eq!(
        zk.pending_requests(w.session),
        2,
        "the no-op write and the read"
    );
    w.act(&mut zk, |b| b.cancel_wait());
    w.run(&mut zk);
    assert!(w.take_events().is_empty(), "a cancelled wait passed");
    assert!(!w.recipe.is_waiting());
}

/// A wait that passes (the node is not there) while a `set` of the same
/// barrier is in flight: the set is still reported.
#[test]
fn passing_keeps_the_write_in_flight() {
    let mut zk = SimZk::new(17);
    zk.create_persistent("/app", b"").unwrap();
    let mut b = Driver::open(&mut zk, barrier());
    b.act(&mut zk, |b| {
        b.wait();
        b.set();
    });
    assert_eq!(zk.pending_requests(b.session), 3, "all in flight");
    b.run(&mut zk);
    assert_eq!(b.take_events(), [BarrierEvent::Passed, BarrierEvent::Set]);
    assert!(zk.node(NODE).is_some());
    assert!(b.recipe.is_idle());
}

/// The deletion's notification passes the waiter at once, without reading
/// the node again.
#[test]
fn a_deletion_notification_passes_without_another_read() {
    let mut zk = SimZk::new(18);
    zk.create_persistent(NODE, b"").unwrap();
    let mut w = waiting(&mut zk);
    zk.delete_node(NODE).unwrap();
    assert!(w.deliver_one(&mut zk), "the notification");
    assert_eq!(w.take_events(), [BarrierEvent::Passed]);
    w.run(&mut zk);
    assert_eq!(w.sent_of("getData"), [NODE]);
    assert!(!w.recipe.is_waiting());
}

/// A data change spends the one-shot watch: the wait reads again, holds,
/// and still passes when the node is deleted afterwards.
#[test]
fn a_data_change_rearms_the_wait() {
    let mut zk = SimZk::new(19);
    zk.create_persistent(NODE, b"").unwrap();
    let mut w = waiting(&mut zk);
    zk.set_node_data(NODE, b"changed").unwrap();
    w.run(&mut zk);
    assert!(w.take_events().is_empty(), "passed a standing barrier");
    assert!(w.recipe.is_waiting());
    assert_eq!(zk.watches_of(w.session), [("data", NODE.to_owned())]);
    zk.delete_node(NODE).unwrap();
    w.run(&mut zk);
    assert_eq!(w.take_events(), [BarrierEvent::Passed]);
    assert_eq!(zk.watch_count(), 0);
}

/// Notifications of other nodes (a driver hands a session's notifications
/// to every recipe on it) do not concern the wait.
#[test]
fn notifications_of_other_nodes_do_not_pass_or_rearm_the_wait() {
    let mut zk = SimZk::new(20);
    zk.create_persistent(NODE, b"").unwrap();
    let mut w = waiting(&mut zk);
    for kind in [WatchKind::NodeDeleted, WatchKind::NodeDataChanged] {
        for path in ["/app", "/app/gate2", "/app/gate/child"] {
            w.recipe
                .handle_watch(Instant::ZERO, WatchEvent { kind, path });
            w.pump(&mut zk);
        }
    }
    w.run(&mut zk);
    assert!(w.take_events().is_empty(), "passed a standing barrier");
    assert!(w.recipe.is_waiting());
    assert_eq!(w.sent_of("getData"), [NODE]);
}

/// An answer saying the session is gone is no failure: the operation waits
/// for the next session and goes out again on it.
#[test]
fn a_session_gone_answer_is_retried_on_the_next_session() {
    for error in [ZkError::SessionExpired, ZkError::SessionMoved] {
        let mut b = barrier();
        b.set();
        b.wait();
        let sent = sent_now(&mut b);
        assert_eq!(sent.len(), 3);
        for (id, _, _) in &sent {
            b.handle_reply(Instant::ZERO, *id, Reply::Error(error));
        }
        assert_eq!(b.poll_event(), None, "{error:?} reported as a failure");
        assert!(b.is_waiting());
        assert!(!b.is_idle());
        assert_eq!(sent_now(&mut b), [], "{error:?}: sent on the gone session");
        b.handle_session(Instant::ZERO, SessionEvent::Connected { session_id: 2 });
        let again: Vec<_> = sent_now(&mut b)
            .into_iter()
            .map(|(_, kind, path)| (kind, path))
            .collect();
        assert_eq!(
            again,
            [
                ("create", NODE.to_owned()),
                ("check", NODE.to_owned()),
                ("getData", NODE.to_owned())
            ],
            "{error:?}"
        );
    }
}

/// A waiter's server may lag behind the quorum: every wait, and every read
/// after a reconnect, goes out behind a no-op write (a `check`) in the same
/// flight, so a wait begun after another session's `set` returned cannot
/// read the node as missing. A `sync` would not do: on the leader it is
/// answered at once, and the leader applies a write after its followers may
/// have. A data change's re-read needs none (the server that told of the
/// change has it).
#[test]
fn every_wait_and_every_reconnect_read_goes_out_behind_a_no_op_write() {
    let mut b = barrier();
    b.wait();
    let kinds = |sent: &[(herdless_core::RequestId, &'static str, String)]| {
        sent.iter().map(|(_, k, _)| *k).collect::<Vec<_>>()
    };
    let first = sent_now(&mut b);
    assert_eq!(kinds(&first), ["check", "getData"], "one flight");
    b.handle_reply(Instant::ZERO, first[0].0, Reply::Checked);
    b.handle_reply(
        Instant::ZERO,
        first[1].0,
        Reply::Data {
            data: b"",
            stat: Default::default(),
        },
    );
    assert!(b.is_waiting());
    b.handle_watch(
        Instant::ZERO,
        WatchEvent {
            kind: WatchKind::NodeDataChanged,
            path: NODE,
        },
    );
    let rearm = sent_now(&mut b);
    assert_eq!(kinds(&rearm), ["getData"], "a re-arm needs no catching up");
    b.handle_session(Instant::ZERO, SessionEvent::Suspended);
    b.handle_session(Instant::ZERO, SessionEvent::Connected { session_id: 1 });
    let again = sent_now(&mut b);
    assert_eq!(kinds(&again), ["check", "getData"], "after a reconnect");
    // A refused check leaves the answer to the read queued behind it.
    b.handle_reply(Instant::ZERO, again[0].0, Reply::Error(ZkError::NoAuth));
    assert_eq!(b.poll_event(), None);
    b.handle_reply(Instant::ZERO, again[1].0, Reply::Error(ZkError::NoNode));
    assert_eq!(b.poll_event(), Some(BarrierEvent::Passed));
}
