//! The double barrier when a round ends badly: a `ready` node left behind
//! (every process died inside, or the last one out lost its session between
//! its two deletes) must not let the next round's first process in alone;
//! and faults while leaving. Scripted step by step on the in-memory
//! ZooKeeper; the oracle counts process nodes on the server.

mod conn_loss;
mod double_barrier_rounds;

use conn_loss::Driver;
use double_barrier_rounds::{
    all_inside, entered, process, process_nodes, ready_path, run_all, DIR,
};
use herdless_core::double_barrier::{DoubleBarrier, DoubleBarrierEvent};
use herdless_core::owned::OwnedReply;
use herdless_core::path::PathError;
use herdless_core::sim::{DriverOrder, SimZk};
use herdless_core::Instant;
use herdless_core::{
    Error, Recipe, Reply, Request, SessionEvent, Version, WatchEvent, WatchKind, ZkError,
};

/// A first process alone, then a second: the first must wait for the
/// second although a `ready` of an earlier round is there.
fn next_round_waits_for_the_count(zk: &mut SimZk) {
    let mut most = 0;
    let mut ps = vec![process(zk, "n1")];
    ps[0].act(zk, |p| p.enter(2)).unwrap();
    run_all(zk, &mut ps, 2, &mut most);
    assert!(
        !entered(&ps[0]),
        "the next round's first process entered alone: {:?}",
        ps[0].recipe
    );
    ps.push(process(zk, "n2"));
    ps[1].act(zk, |p| p.enter(2)).unwrap();
    run_all(zk, &mut ps, 2, &mut most);
    assert!(
        entered(&ps[0]) && entered(&ps[1]),
        "{ps:?}",
        ps = ps
            .iter()
            .map(|p| format!("{:?}", p.recipe))
            .collect::<Vec<_>>()
    );
    // And they leave together, leaving nothing behind.
    for p in ps.iter_mut() {
        p.act(zk, |p| p.leave()).unwrap();
    }
    run_all(zk, &mut ps, 2, &mut most);
    for p in &ps {
        assert_eq!(p.events.last(), Some(&DoubleBarrierEvent::Left));
    }
    assert!(process_nodes(zk).is_empty());
    assert!(zk.node(&ready_path()).is_none(), "ready left behind");
}

#[test]
fn a_ready_left_by_a_round_that_died_inside_does_not_open_the_next() {
    let mut zk = SimZk::new(1);
    let mut most = 0;
    let mut ps = vec![process(&mut zk, "a"), process(&mut zk, "b")];
    for p in ps.iter_mut() {
        p.act(&mut zk, |p| p.enter(2)).unwrap();
    }
    run_all(&mut zk, &mut ps, 2, &mut most);
    assert!(entered(&ps[0]) && entered(&ps[1]));
    // Everyone dies inside.
    for p in ps.iter_mut() {
        zk.expire(p.session);
        p.deliver_all(&mut zk);
    }
    assert!(process_nodes(&zk).is_empty());
    assert!(
        zk.node(&ready_path()).is_some(),
        "the scenario: ready stays"
    );
    next_round_waits_for_the_count(&mut zk);
}

#[test]
fn a_ready_left_by_a_last_leaver_that_expired_does_not_open_the_next() {
    let mut zk = SimZk::new(2);
    let mut most = 0;
    let mut ps = vec![process(&mut zk, "a")];
    ps[0].act(&mut zk, |p| p.enter(1)).unwrap();
    run_all(&mut zk, &mut ps, 1, &mut most);
    assert!(entered(&ps[0]));
    ps[0].act(&mut zk, |p| p.leave()).unwrap();
    let s = ps[0].session;
    // The listing, behind its no-op write: only the own node is left, so
    // delete it, then ready.
    zk.apply_next(s);
    zk.apply_next(s);
    ps[0].deliver_all(&mut zk);
    assert_eq!(zk.pending_requests(s), 2, "delete own, delete ready");
    zk.apply_next(s); // the own node goes
    zk.expire(s); // and the session with the delete of ready
    ps[0].deliver_all(&mut zk);
    assert!(
        zk.node(&ready_path()).is_some(),
        "the scenario: ready stays"
    );
    next_round_waits_for_the_count(&mut zk);
}

/// A process arriving after the barrier opened, while the others are still
/// inside, enters at once: the count is on the server.
#[test]
fn a_late_process_enters_an_open_barrier() {
    let mut zk = SimZk::new(3);
    let mut most = 0;
    let mut ps = vec![process(&mut zk, "a"), process(&mut zk, "b")];
    for p in ps.iter_mut() {
        p.act(&mut zk, |p| p.enter(2)).unwrap();
    }
    run_all(&mut zk, &mut ps, 2, &mut most);
    ps.push(process(&mut zk, "c"));
    ps[2].act(&mut zk, |p| p.enter(2)).unwrap();
    run_all(&mut zk, &mut ps, 2, &mut most);
    assert!(ps.iter().all(entered));
}

/// A process that waits on an old `ready` hears when the process that
/// completes the count opens the barrier for this round.
#[test]
fn waiters_on_an_old_ready_wake_when_the_count_is_reached() {
    let mut zk = SimZk::new(4);
    zk.create_persistent(&ready_path(), b"").unwrap();
    let mut most = 0;
    let mut ps: Vec<_> = ["a", "b", "c"]
        .iter()
        .map(|n| process(&mut zk, n))
        .collect();
    for i in 0..3 {
        ps[i].act(&mut zk, |p| p.enter(3)).unwrap();
        run_all(&mut zk, &mut ps, 3, &mut most);
        let inside = ps.iter().filter(|p| entered(p)).count();
        assert_eq!(
            inside,
            if i == 2 { 3 } else { 0 },
            "after {} arrived",
            i + 1
        );
    }
    // The waiters read `ready` again after the refresh and, finding it
    // fresh, set no new watch on it: one left on the opening `ready` would
    // only fire for nothing when the last leaver deletes it.
    let ready_reads = |p: &Driver<DoubleBarrier>| {
        p.sent
            .iter()
            .filter(|(kind, path)| *kind == "exists" && *path == ready_path())
            .count()
    };
    assert_eq!(ready_reads(&ps[0]), 2, "a: {:?}", ps[0].sent);
    assert_eq!(ready_reads(&ps[1]), 2, "b: {:?}", ps[1].sent);
}

/// A process that saw `ready` missing after its own node was created
/// enters on the creation notification itself, without reading `ready`
/// again: that creation can only be this round's.
#[test]
fn a_ready_created_after_it_was_seen_missing_opens_at_once() {
    let mut zk = SimZk::new(5);
    zk.create_persistent(DIR, b"").unwrap();
    let mut most = 0;
    let mut ps = vec![process(&mut zk, "a"), process(&mut zk, "b")];
    ps[0].act(&mut zk, |p| p.enter(2)).unwrap();
    run_all(&mut zk, &mut ps, 2, &mut most);
    assert!(!entered(&ps[0]));
    ps[1].act(&mut zk, |p| p.enter(2)).unwrap();
    run_all(&mut zk, &mut ps, 2, &mut most);
    assert!(ps.iter().all(entered));
    let ready_requests: Vec<_> = ps[0]
        .sent
        .iter()
        .filter(|(_, path)| *path == ready_path())
        .collect();
    assert_eq!(
        ready_requests,
        [&("exists", ready_path())],
        "only the enter flight's watch"
    );
}

/// Connection losses while leaving (a delete applied, its answer lost):
/// everyone still leaves, and only once nobody is inside.
#[test]
fn leaving_survives_connection_losses_and_lost_answers() {
    for cut_after in 0..4 {
        let mut zk = SimZk::new(5 + cut_after as u64);
        let mut most = 0;
        let mut ps: Vec<_> = ["a", "b", "c"]
            .iter()
            .map(|n| process(&mut zk, n))
            .collect();
        for p in ps.iter_mut() {
            p.act(&mut zk, |p| p.enter(3)).unwrap();
        }
        run_all(&mut zk, &mut ps, 3, &mut most);
        assert!(ps.iter().all(entered));
        for p in ps.iter_mut() {
            p.act(&mut zk, |p| p.leave()).unwrap();
        }
        // Process "a" applies some of its leave, then loses its connection.
        for _ in 0..cut_after {
            zk.apply_next(ps[0].session);
            ps[0].deliver_all(&mut zk);
        }
        zk.apply_next(ps[0].session);
        ps[0].break_connection(&mut zk);
        for p in ps.iter_mut().skip(1) {
            // Nobody may finish leaving while a process node is there.
            p.run(&mut zk);
            if p.events.contains(&DoubleBarrierEvent::Left) {
                assert_eq!(
                    process_nodes(&zk),
                    Vec::<String>::new(),
                    "left while inside"
                );
            }
        }
        ps[0].restore(&mut zk);
        run_all(&mut zk, &mut ps, 3, &mut most);
        for p in &ps {
            assert_eq!(
                p.events.last(),
                Some(&DoubleBarrierEvent::Left),
                "cut after {cut_after}: {:?}",
                p.recipe
            );
        }
        assert!(process_nodes(&zk).is_empty());
        assert!(
            zk.node(&ready_path()).is_none(),
            "cut after {cut_after}: ready left"
        );
    }
}

/// The session of a process inside expires: it hears `Lost`, the others
/// leave without it.
#[test]
fn a_process_that_expires_while_leaving_does_not_hold_the_others() {
    let mut zk = SimZk::new(9);
    let mut most = 0;
    let mut ps: Vec<_> = ["a", "b"].iter().map(|n| process(&mut zk, n)).collect();
    for p in ps.iter_mut() {
        p.act(&mut zk, |p| p.enter(2)).unwrap();
    }
    run_all(&mut zk, &mut ps, 2, &mut most);
    for p in ps.iter_mut() {
        p.act(&mut zk, |p| p.leave()).unwrap();
    }
    zk.expire(ps[0].session);
    run_all(&mut zk, &mut ps, 2, &mut most);
    assert_eq!(ps[0].events.last(), Some(&DoubleBarrierEvent::Lost));
    assert_eq!(ps[1].events.last(), Some(&DoubleBarrierEvent::Left));
    assert!(process_nodes(&zk).is_empty());
}

/// What the accessors say through one round: idle, entering, inside,
/// leaving (waiting for whom), idle again.
#[test]
fn accessors_follow_the_round() {
    let mut zk = SimZk::new(10);
    let mut most = 0;
    let mut ps = vec![process(&mut zk, "a"), process(&mut zk, "b")];
    assert_eq!(ps[0].recipe.name(), "a");
    assert_eq!(ps[1].recipe.name(), "b");
    for p in &ps {
        assert!(p.recipe.is_idle() && !p.recipe.is_inside());
        assert_eq!(p.recipe.waiting_for(), None);
    }
    for p in ps.iter_mut() {
        p.act(&mut zk, |p| p.enter(2)).unwrap();
        assert!(!p.recipe.is_idle() && !p.recipe.is_inside(), "entering");
        assert_eq!(p.recipe.waiting_for(), None);
    }
    run_all(&mut zk, &mut ps, 2, &mut most);
    for p in &ps {
        assert!(entered(p));
        assert!(p.recipe.is_inside() && !p.recipe.is_idle(), "inside");
        assert_eq!(p.recipe.waiting_for(), None);
    }
    // "b" leaves first: not the lowest, it deletes its node and waits for
    // the lowest, "a".
    ps[1].act(&mut zk, |p| p.leave()).unwrap();
    assert!(!ps[1].recipe.is_inside() && !ps[1].recipe.is_idle());
    assert_eq!(ps[1].recipe.waiting_for(), None, "before the listing");
    ps[1].run(&mut zk);
    assert_eq!(ps[1].recipe.waiting_for(), Some("a"));
    assert_eq!(process_nodes(&zk), ["a"]);
    assert!(ps[0].recipe.is_inside(), "still inside while b leaves");
    ps[0].act(&mut zk, |p| p.leave()).unwrap();
    run_all(&mut zk, &mut ps, 2, &mut most);
    for p in &ps {
        assert_eq!(p.events.last(), Some(&DoubleBarrierEvent::Left));
        assert!(p.recipe.is_idle() && !p.recipe.is_inside());
        assert_eq!(p.recipe.waiting_for(), None);
    }
    // The deletion of "a" sent "b" to the listing, without reading "a"
    // again.
    assert_eq!(ps[1].sent_of("getData"), [format!("{DIR}/a")]);
}

/// The lowest process, leaving while others are inside, waits for the
/// highest and keeps its own node meanwhile.
#[test]
fn the_lowest_leaver_waits_for_the_highest() {
    let mut zk = SimZk::new(11);
    let mut most = 0;
    let mut ps = all_inside(&mut zk, &["a", "b", "c"], &mut most);
    ps[0].act(&mut zk, |p| p.leave()).unwrap();
    ps[0].run(&mut zk);
    assert_eq!(ps[0].recipe.waiting_for(), Some("c"));
    assert_eq!(process_nodes(&zk), ["a", "b", "c"]);
}

/// `enter` while already in a round is refused; after an expiry it waits
/// for the next session (as both transports renew one); after a close,
/// which no session follows, it is refused.
#[test]
fn enter_waits_for_the_next_session_after_an_expiry_and_is_refused_in_a_round_or_after_a_close() {
    let mut zk = SimZk::new(12);
    let mut p = process(&mut zk, "a");
    p.act(&mut zk, |p| p.enter(2)).unwrap();
    assert_eq!(p.recipe.enter(2), Err(Error::InvalidState), "entering");
    p.run(&mut zk);
    zk.expire(p.session);
    p.deliver_all(&mut zk);
    assert_eq!(p.take_events(), [DoubleBarrierEvent::Lost]);
    assert!(p.recipe.is_idle());
    p.act(&mut zk, |p| p.enter(1)).unwrap();
    assert!(
        p.recipe.poll_request().is_none(),
        "nothing is sent without a session"
    );
    p.session = zk.open_session();
    p.recipe.handle_session(
        Instant::ZERO,
        SessionEvent::Connected {
            session_id: p.session,
        },
    );
    p.pump(&mut zk);
    p.run(&mut zk);
    assert_eq!(p.take_events(), [DoubleBarrierEvent::Entered]);
    assert_eq!(process_nodes(&zk), ["a"], "entered in the new session");
    assert_eq!(p.recipe.enter(1), Err(Error::InvalidState), "inside");
    zk.close(p.session);
    p.deliver_all(&mut zk);
    assert_eq!(p.take_events(), [DoubleBarrierEvent::Lost]);
    assert_eq!(p.recipe.enter(1), Err(Error::SessionEnded), "closed");
}

/// A node another client put in the directory whose path does not fit the
/// process's buffers: leaving cannot wait on it, and says so.
#[test]
fn a_foreign_name_too_long_to_wait_on_fails_the_leave() {
    const CAP: usize = 32;
    let long = format!("z{}", "x".repeat(CAP - DIR.len()));
    assert!(long.len() <= CAP && DIR.len() + 1 + long.len() > CAP);
    let mut zk = SimZk::new(13);
    zk.create_persistent("/app", b"").unwrap();
    zk.create_persistent(DIR, b"").unwrap();
    zk.create_persistent(&format!("{DIR}/{long}"), b"").unwrap();
    let mut p = Driver::open(&mut zk, DoubleBarrier::<CAP>::new(DIR, "a").unwrap());
    p.act(&mut zk, |p| p.enter(1)).unwrap();
    p.run(&mut zk);
    assert_eq!(p.take_events(), [DoubleBarrierEvent::Entered]);
    p.act(&mut zk, |p| p.leave()).unwrap();
    p.run(&mut zk);
    assert_eq!(
        p.take_events(),
        [DoubleBarrierEvent::Failed(Error::Path(
            PathError::TooLong {
                needed: DIR.len() + 1 + long.len(),
                capacity: CAP
            }
        ))]
    );
    assert!(p.sent_of("getData").is_empty(), "waited on a cut name");
    assert!(p.recipe.is_idle());
    assert_eq!(process_nodes(&zk), [long], "the own node left behind");
}

/// The barrier directory two levels deep, none of it there: each level is
/// created once, shallowest first, then the own node again.
#[test]
fn enter_creates_each_missing_level_of_the_directory_once() {
    let mut zk = SimZk::new(14);
    let mut p = process(&mut zk, "a");
    p.act(&mut zk, |p| p.enter(1)).unwrap();
    p.run(&mut zk);
    assert_eq!(p.take_events(), [DoubleBarrierEvent::Entered]);
    let own = format!("{DIR}/a");
    assert_eq!(
        p.sent_of("create"),
        [own.as_str(), "/app", DIR, own.as_str(), &ready_path()]
    );
    assert_eq!(process_nodes(&zk), ["a"]);
}

/// The directory deleted by an operator while the process is inside:
/// leaving finds nobody, and is done.
#[test]
fn leaving_a_directory_an_operator_deleted_is_done() {
    let mut zk = SimZk::new(15);
    let mut p = process(&mut zk, "a");
    p.act(&mut zk, |p| p.enter(1)).unwrap();
    p.run(&mut zk);
    assert_eq!(p.take_events(), [DoubleBarrierEvent::Entered]);
    zk.delete_recursive(DIR).unwrap();
    p.act(&mut zk, |p| p.leave()).unwrap();
    p.run(&mut zk);
    assert_eq!(p.take_events(), [DoubleBarrierEvent::Left]);
    assert!(p.recipe.is_idle());
}

/// An old `ready` deleted between the `NodeExists` of the create that
/// completes the count and the write that would refresh it: `ready` is
/// created after all, and the process enters.
#[test]
fn a_ready_deleted_before_its_refresh_is_created_again() {
    let mut zk = SimZk::new(16);
    zk.create_persistent("/app", b"").unwrap();
    zk.create_persistent(DIR, b"").unwrap();
    zk.create_persistent(&ready_path(), b"old").unwrap();
    let mut p = process(&mut zk, "a");
    p.intercept = Some(("setData", ready_path()));
    p.act(&mut zk, |p| p.enter(1)).unwrap();
    p.run(&mut zk);
    assert!(p.take_events().is_empty(), "entered on an old ready");
    zk.delete_node(&ready_path()).unwrap();
    p.run(&mut zk);
    assert!(p.answer_intercepted(&mut zk, OwnedReply::Error(ZkError::NoNode)));
    p.run(&mut zk);
    assert_eq!(p.take_events(), [DoubleBarrierEvent::Entered]);
    assert!(zk.node(&ready_path()).is_some());
    assert!(p.recipe.is_inside());
}

/// Errors that are neither a lost connection nor a gone session fail the
/// round, once the own node is deleted: a create of the same attempt sent
/// before a lost connection may have been applied.
#[test]
fn a_refused_own_create_fails_the_enter() {
    let mut p: DoubleBarrier = DoubleBarrier::new(DIR, "a").unwrap();
    p.enter(2).unwrap();
    let create = p.poll_request().unwrap().id;
    p.handle_reply(Instant::ZERO, create, Reply::Error(ZkError::NoAuth));
    assert_eq!(p.poll_event(), None, "failed before its node was deleted");
    let delete = p.poll_request().unwrap();
    assert_eq!(
        delete.request,
        Request::Delete {
            path: "/app/double/a",
            version: Version::Any
        }
    );
    let delete = delete.id;
    assert!(p.poll_request().is_none());
    p.handle_reply(Instant::ZERO, delete, Reply::Error(ZkError::NoNode));
    assert_eq!(
        p.poll_event(),
        Some(DoubleBarrierEvent::Failed(Error::Zk(ZkError::NoAuth)))
    );
    assert!(p.is_idle());
    assert!(p.poll_request().is_none());
    p.handle_session(Instant::ZERO, SessionEvent::Connected { session_id: 1 });
    assert!(p.poll_request().is_none(), "a failed round resumed");
}

/// An answer saying the session expired is no failure of its own: the
/// round ends with `Lost` when the expiry is heard.
#[test]
fn a_session_expired_answer_ends_the_round_as_lost() {
    let mut p: DoubleBarrier = DoubleBarrier::new(DIR, "a").unwrap();
    p.enter(2).unwrap();
    let create = p.poll_request().unwrap().id;
    p.handle_reply(Instant::ZERO, create, Reply::Error(ZkError::SessionExpired));
    assert_eq!(p.poll_event(), None);
    assert!(!p.is_idle());
    assert!(p.poll_request().is_none(), "sent on a gone session");
    p.handle_session(Instant::ZERO, SessionEvent::Expired);
    assert_eq!(p.poll_event(), Some(DoubleBarrierEvent::Lost));
    assert_eq!(p.poll_event(), None);
    assert!(p.is_idle());
}

/// An old `ready` deleted by an operator while a process waits for the
/// count: no reason to enter.
#[test]
fn an_old_ready_deleted_while_entering_does_not_open_the_barrier() {
    let mut zk = SimZk::new(17);
    zk.create_persistent("/app", b"").unwrap();
    zk.create_persistent(DIR, b"").unwrap();
    zk.create_persistent(&ready_path(), b"old").unwrap();
    let mut p = process(&mut zk, "a");
    p.act(&mut zk, |p| p.enter(2)).unwrap();
    p.run(&mut zk);
    assert!(p.take_events().is_empty(), "entered on an old ready");
    zk.delete_node(&ready_path()).unwrap();
    p.run(&mut zk);
    assert!(p.take_events().is_empty(), "entered alone of 2");
    assert!(!p.recipe.is_inside());
}

/// Notifications of other nodes (a driver hands a session's notifications
/// to every recipe on it) send nothing, while entering or while leaving.
#[test]
fn notifications_of_other_nodes_are_ignored() {
    let mut zk = SimZk::new(18);
    let mut most = 0;
    let mut ps = vec![process(&mut zk, "a"), process(&mut zk, "b")];
    ps[0].act(&mut zk, |p| p.enter(2)).unwrap();
    ps[0].run(&mut zk);
    let others = [
        format!("{DIR}/b"),
        format!("{DIR}/a"),
        DIR.to_owned(),
        "/app/doubles/ready".to_owned(),
    ];
    let sent = ps[0].sent.len();
    // `ready` was seen missing: a creation, but of another node, must not
    // open the barrier.
    for kind in [
        WatchKind::NodeCreated,
        WatchKind::NodeDeleted,
        WatchKind::NodeDataChanged,
    ] {
        for path in &others {
            ps[0]
                .recipe
                .handle_watch(Instant::ZERO, WatchEvent { kind, path });
            ps[0].pump(&mut zk);
        }
    }
    assert_eq!(ps[0].sent[sent..], [], "entering");
    assert!(!entered(&ps[0]));

    ps[1].act(&mut zk, |p| p.enter(2)).unwrap();
    run_all(&mut zk, &mut ps, 2, &mut most);
    assert!(ps.iter().all(entered));
    // "b" leaves and waits for "a".
    ps[1].act(&mut zk, |p| p.leave()).unwrap();
    ps[1].run(&mut zk);
    assert_eq!(ps[1].recipe.waiting_for(), Some("a"));
    let sent = ps[1].sent.len();
    // (A notification on `ready` while leaving lists again: the round may
    // be over, see `a_leaver_whose_waited_node_is_replaced_between_its_reads_leaves`.)
    let others = [format!("{DIR}/b"), format!("{DIR}/c")];
    for kind in [WatchKind::NodeDeleted, WatchKind::NodeDataChanged] {
        for path in &others {
            ps[1]
                .recipe
                .handle_watch(Instant::ZERO, WatchEvent { kind, path });
            ps[1].pump(&mut zk);
        }
    }
    assert_eq!(ps[1].sent[sent..], [], "leaving");
    assert_eq!(ps[1].recipe.waiting_for(), Some("a"));
}

/// No timer: a driver would wake for nothing. And Debug names the process.
#[test]
fn no_timer_is_asked_for_and_debug_names_the_process() {
    let mut zk = SimZk::new(19);
    let mut p = process(&mut zk, "a");
    assert_eq!(p.recipe.poll_timeout(), None);
    p.act(&mut zk, |p| p.enter(2)).unwrap();
    assert_eq!(p.recipe.poll_timeout(), None, "entering");
    p.run(&mut zk);
    assert_eq!(p.recipe.poll_timeout(), None, "waiting for the count");
    let shown = format!("{:?}", p.recipe);
    assert!(shown.contains(DIR) && shown.contains("\"a\""), "{shown}");
}

/// A `NodeCreated` of `ready` proves nothing about the own node: the watch
/// may be older than the create still in flight. Here a process waits for
/// the count, an operator wipes the directory, the connection breaks and
/// comes back (the watch on `ready` is re-registered, the own create sent
/// again and answered `NoNode`), and another client creates the directory
/// and `ready` before that answer is read. With herdless-std's order the
/// notification overtakes the answer: the process must not enter on it, as
/// its node is not in the barrier; it waits for the count instead. (The
/// seed is one whose break the driver reports: unreported, the enter is not
/// sent again.)
#[test]
fn a_ready_created_before_the_own_node_does_not_open_the_barrier() {
    let mut zk = SimZk::new(21);
    zk.set_driver_order(DriverOrder::NotificationsFirst);
    zk.create_persistent(DIR, b"").unwrap();
    let mut p = process(&mut zk, "a");
    p.act(&mut zk, |p| p.enter(2)).unwrap();
    p.run(&mut zk);
    assert!(p.take_events().is_empty(), "entered alone of 2");
    // The exists on `ready` left a creation watch.
    zk.delete_recursive(DIR).unwrap();
    p.break_connection(&mut zk);
    p.restore(&mut zk);
    let own = format!("{DIR}/a");
    assert_eq!(p.sent_of("create").last(), Some(&own), "the enter resent");
    // The own create reaches the server while the directory is missing...
    assert!(zk.apply_next(p.session));
    // ...and the directory and `ready` appear before its answer is read.
    zk.create_persistent(&ready_path(), b"").unwrap();
    let mut most = 0;
    let mut ps = vec![p];
    for _ in 0..10_000 {
        let p = &mut ps[0];
        let busy = zk.apply_next(p.session) | p.deliver_one(&mut zk);
        if entered(p) {
            assert!(
                zk.node(&own).is_some(),
                "entered without its node in the barrier: {:?}",
                p.events
            );
        }
        if !busy {
            break;
        }
    }
    assert_eq!(ps[0].events, [], "entered alone of 2, or failed");
    assert_eq!(process_nodes(&zk), ["a"], "the own node is back");
    // The count is reached: both enter.
    ps.push(process(&mut zk, "b"));
    ps[1].act(&mut zk, |p| p.enter(2)).unwrap();
    run_all(&mut zk, &mut ps, 2, &mut most);
    assert!(ps.iter().all(entered), "{:?}", ps[0].events);
    assert!(ps.iter().all(|p| p.events == [DoubleBarrierEvent::Entered]));
}

/// Processes a and b of a barrier for 2, both inside; b (not the lowest)
/// has started to leave: it deleted its node and waits on a's. Also returns
/// the most process nodes seen, for `run_all`.
fn b_leaving_behind_a(seed: u64) -> (SimZk, Vec<Driver<DoubleBarrier>>, usize) {
    let mut zk = SimZk::new(seed);
    let mut most = 0;
    let mut ps = all_inside(&mut zk, &["a", "b"], &mut most);
    ps[0].take_events();
    ps[1].take_events();
    ps[1].act(&mut zk, |p| p.leave()).unwrap();
    ps[1].run(&mut zk);
    assert!(ps[1].take_events().is_empty());
    assert_eq!(ps[1].recipe.waiting_for(), Some("a"));
    (zk, ps, most)
}

/// The process b waits on holds more data than an embedded driver's
/// receive buffer (another library's process node): b's read is answered
/// `ReplyTooLarge`. The server read the node, so it is there and the watch
/// is set: b keeps waiting, and leaves once the node goes.
#[test]
fn a_leaver_waits_on_a_node_whose_data_is_too_large_to_read() {
    let mut zk = SimZk::new(17);
    let mut most = 0;
    let mut ps = all_inside(&mut zk, &["a", "b"], &mut most);
    ps[1].take_events();
    let a = format!("{DIR}/a");
    ps[1].intercept = Some(("getData", a.clone()));
    ps[1].act(&mut zk, |p| p.leave()).unwrap();
    ps[1].run(&mut zk);
    assert!(ps[1].answer_intercepted(&mut zk, OwnedReply::Error(ZkError::ReplyTooLarge)));
    ps[1].run(&mut zk);
    assert!(ps[1].take_events().is_empty(), "{:?}", ps[1].recipe);
    assert_eq!(ps[1].recipe.waiting_for(), Some("a"));
    // a leaves; the watch the server set for b's read fires.
    ps[0].act(&mut zk, |p| p.leave()).unwrap();
    ps[0].run(&mut zk);
    assert_eq!(ps[0].events.last(), Some(&DoubleBarrierEvent::Left));
    ps[1].intercept = None;
    ps[1].act(&mut zk, |p| {
        p.handle_watch(
            Instant::ZERO,
            WatchEvent {
                kind: WatchKind::NodeDeleted,
                path: &a,
            },
        )
    });
    ps[1].run(&mut zk);
    assert_eq!(ps[1].take_events(), [DoubleBarrierEvent::Left]);
}

/// A process slow to hear that the others left (its connection was down,
/// or its notification late) finds the next round's nodes when it lists:
/// the fast processes left and entered again, under the same names. It must
/// still leave (the round's `ready` is gone, so everyone of its round has
/// left), or the next round waits for it while it waits for them. Found on
/// a three-server ensemble with servers killed (`ensemble_real`).
#[test]
fn a_slow_leaver_is_not_held_by_the_next_rounds_nodes() {
    let (mut zk, mut ps, mut most) = b_leaving_behind_a(7);
    // a is the last out, leaves, and enters the next round at once; b has
    // not heard yet.
    ps[0].act(&mut zk, |p| p.leave()).unwrap();
    ps[0].run(&mut zk);
    assert_eq!(ps[0].take_events(), vec![DoubleBarrierEvent::Left]);
    ps[0].act(&mut zk, |p| p.enter(2)).unwrap();
    ps[0].run(&mut zk);
    assert_eq!(process_nodes(&zk), vec!["a".to_string()]);
    // b hears of a's deletion, lists, and sees a's node of the next round.
    ps[1].run(&mut zk);
    assert_eq!(
        ps[1].take_events(),
        vec![DoubleBarrierEvent::Left],
        "held by the next round: {:?}",
        ps[1].recipe
    );
    ps[1].act(&mut zk, |p| p.enter(2)).unwrap();
    run_all(&mut zk, &mut ps, 2, &mut most);
    assert!(
        ps[0].take_events().contains(&DoubleBarrierEvent::Entered)
            && ps[1].take_events().contains(&DoubleBarrierEvent::Entered),
        "the next round opens: {:?} {:?}",
        ps[0].recipe,
        ps[1].recipe
    );
}

/// A leaver waits on a node of its round; its connection breaks, and its
/// driver reconnects before it looked, so the recipe hears no `Suspended`
/// (zookeeper-client's state watcher keeps only the latest state). Meanwhile
/// the waited-on process left and entered the next round under the same
/// name. The reconnect's `SetWatches` reports that node as *changed*, not
/// deleted (it exists again, written after the last zxid the client read):
/// the leaver must not wait on the next round's node. Found on a
/// three-server ensemble with servers killed (`ensemble_real`).
#[test]
fn a_leaver_whose_waited_node_came_back_in_the_next_round_leaves() {
    let (mut zk, mut ps, mut most) = b_leaving_behind_a(11);
    // b's connection breaks; nothing was in flight, and its driver misses
    // the `Suspended`.
    let b = ps[1].session;
    zk.disconnect(b);
    assert!(matches!(
        zk.next_delivery(b),
        Some(herdless_core::sim::Delivery::Session(
            SessionEvent::Suspended
        ))
    ));
    // a is the last out, and enters the next round.
    ps[0].act(&mut zk, |p| p.leave()).unwrap();
    ps[0].run(&mut zk);
    assert_eq!(ps[0].take_events(), vec![DoubleBarrierEvent::Left]);
    ps[0].act(&mut zk, |p| p.enter(2)).unwrap();
    ps[0].run(&mut zk);
    assert_eq!(process_nodes(&zk), vec!["a".to_string()]);
    zk.reconnect(b);
    ps[1].run(&mut zk);
    assert_eq!(
        ps[1].take_events(),
        vec![DoubleBarrierEvent::Left],
        "waits on the next round's node: {:?}",
        ps[1].recipe
    );
    ps[1].act(&mut zk, |p| p.enter(2)).unwrap();
    run_all(&mut zk, &mut ps, 2, &mut most);
    assert!(entered(&ps[0]) && entered(&ps[1]), "the next round opens");
}

/// Three processes; b deleted its node and waits on a's; c deleted its node
/// and read a's with a watch, but its connection broke before the answers,
/// so it lists again: a is still there, so it checks `ready` (still
/// standing) and reads a's node to wait on it. Between those two reads the round ends (a leaves
/// last, deleting `ready`; b leaves) and a and b enter the next round, so
/// the read finds a's node of the next round. c must still leave when the
/// round's `ready` goes, or the next round waits for it while it waits for
/// a. Found by the soak run of the double barrier on a three-server
/// ensemble (`ensemble_real` with `HERDLESS_CHAOS_SECS=200`, round 6,500).
#[test]
fn a_leaver_whose_waited_node_is_replaced_between_its_reads_leaves() {
    let mut zk = SimZk::new(31);
    let mut most = 0;
    let mut ps = all_inside(&mut zk, &["a", "b", "c"], &mut most);
    for p in ps.iter_mut() {
        p.take_events();
    }
    ps[1].act(&mut zk, |p| p.leave()).unwrap();
    ps[1].run(&mut zk);
    assert_eq!(ps[1].recipe.waiting_for(), Some("a"));
    // c deletes its node and reads a's with a watch, but the connection
    // breaks before the answers come: the watch is gone with them.
    let c = ps[2].session;
    ps[2].act(&mut zk, |p| p.leave()).unwrap();
    assert!(zk.apply_next(c), "c's no-op write");
    assert!(ps[2].deliver_one(&mut zk));
    assert!(zk.apply_next(c), "c's listing");
    assert!(ps[2].deliver_one(&mut zk));
    while zk.apply_next(c) {}
    assert_eq!(process_nodes(&zk), vec!["a".to_string()]);
    ps[2].break_connection(&mut zk);
    // Back, c lists again: a is still there, so it looks at `ready`
    // (standing) and is to read a's node.
    zk.reconnect(c);
    assert!(ps[2].deliver_one(&mut zk), "Connected");
    assert!(zk.apply_next(c), "c's no-op write");
    assert!(ps[2].deliver_one(&mut zk));
    assert!(zk.apply_next(c), "c's listing");
    assert!(ps[2].deliver_one(&mut zk));
    assert!(zk.apply_next(c), "c's look at ready, which stands");
    // The round ends, and a and b enter the next one.
    for i in [0, 1] {
        if i == 0 {
            ps[0].act(&mut zk, |p| p.leave()).unwrap();
        }
        ps[i].run(&mut zk);
        assert_eq!(ps[i].take_events(), vec![DoubleBarrierEvent::Left], "{i}");
    }
    for i in [0, 1] {
        ps[i].act(&mut zk, |p| p.enter(3)).unwrap();
        ps[i].run(&mut zk);
    }
    assert_eq!(process_nodes(&zk), vec!["a".to_string(), "b".to_string()]);
    // c's read of a finds the next round's a.
    ps[2].run(&mut zk);
    assert_eq!(
        ps[2].take_events(),
        vec![DoubleBarrierEvent::Left],
        "held by the next round: {:?}",
        ps[2].recipe
    );
    ps[2].act(&mut zk, |p| p.enter(3)).unwrap();
    run_all(&mut zk, &mut ps, 3, &mut most);
    assert!(ps.iter().all(entered), "the next round opens");
}

#[test]
fn a_process_name_given_twice_is_taken_for_the_second_not_counted_for_both() {
    // Two sessions enter as `a` into a barrier of two: without the check,
    // the second would count the first's node as its own and both would
    // wait for ever for a second node.
    let mut zk = SimZk::new(11);
    let mut ps = vec![process(&mut zk, "a"), process(&mut zk, "a")];
    for p in ps.iter_mut() {
        let s = p.session;
        p.act(&mut zk, |r| {
            r.handle_session(Instant::ZERO, SessionEvent::Connected { session_id: s })
        });
    }
    ps[0].act(&mut zk, |r| r.enter(2)).unwrap();
    run_all(&mut zk, &mut ps, 2, &mut 0);
    ps[1].act(&mut zk, |r| r.enter(2)).unwrap();
    run_all(&mut zk, &mut ps, 2, &mut 0);
    assert_eq!(
        ps[1].take_events(),
        [DoubleBarrierEvent::Failed(Error::NameTaken)]
    );
    assert_eq!(process_nodes(&zk), ["a"], "the first's node, untouched");
    assert!(ps[0].take_events().is_empty(), "the first still waits");
    // A process of another name completes the count.
    let mut b = process(&mut zk, "b");
    let s = b.session;
    b.act(&mut zk, |r| {
        r.handle_session(Instant::ZERO, SessionEvent::Connected { session_id: s })
    });
    b.act(&mut zk, |r| r.enter(2)).unwrap();
    ps.push(b);
    run_all(&mut zk, &mut ps, 2, &mut 0);
    assert_eq!(ps[0].take_events(), [DoubleBarrierEvent::Entered]);
    assert_eq!(ps[2].take_events(), [DoubleBarrierEvent::Entered]);
}

#[test]
fn the_node_of_the_processs_own_earlier_session_is_not_taken_for_another_process() {
    // The client gave its session up (its own timer ran out) while the
    // server still holds it, with the node: entering on the next session
    // is not refused as a name held by someone else.
    let mut zk = SimZk::new(12);
    let mut a = process(&mut zk, "a");
    let s = a.session;
    a.act(&mut zk, |r| {
        r.handle_session(Instant::ZERO, SessionEvent::Connected { session_id: s })
    });
    a.act(&mut zk, |r| r.enter(2)).unwrap();
    a.run(&mut zk);
    assert_eq!(process_nodes(&zk), ["a"]);
    a.act(&mut zk, |r| {
        r.handle_session(Instant::ZERO, SessionEvent::Expired)
    });
    assert_eq!(a.take_events(), [DoubleBarrierEvent::Lost]);
    let next = zk.open_session();
    a.session = next;
    a.act(&mut zk, |r| {
        r.handle_session(Instant::ZERO, SessionEvent::Connected { session_id: next })
    });
    a.act(&mut zk, |r| r.enter(2)).unwrap();
    a.run(&mut zk);
    assert!(a.take_events().is_empty(), "waiting, not refused");
}

/// A process that is not in a round has nothing to lose: an expiry while
/// idle says nothing, and the next enter waits for the next session.
#[test]
fn an_expiry_while_idle_says_nothing() {
    let mut p: DoubleBarrier = DoubleBarrier::new(DIR, "a").unwrap();
    p.handle_session(Instant::ZERO, SessionEvent::Connected { session_id: 1 });
    p.handle_session(Instant::ZERO, SessionEvent::Expired);
    assert_eq!(p.poll_event(), None);
    assert!(p.is_idle());
}

/// A leave lists behind a no-op write of its own, and lists so again after
/// a reconnect: a server behind the quorum could otherwise leave out a
/// process that entered the open barrier after this one last read, and
/// this one would finish leaving while it is inside (the give-up schedules
/// of `barrier_sim` on lagging servers, seed 900,000,787).
#[test]
fn a_leave_lists_behind_a_no_op_write() {
    let mut zk = SimZk::new(17);
    let mut p = process(&mut zk, "a");
    p.act(&mut zk, |p| p.enter(1)).unwrap();
    p.run(&mut zk);
    let before = p.sent.len();
    p.act(&mut zk, |p| p.leave()).unwrap();
    let leave: Vec<_> = p.sent[before..].to_vec();
    assert_eq!(
        leave,
        [("check", DIR.to_owned()), ("getChildren", DIR.to_owned())]
    );
    p.break_connection(&mut zk);
    let before = p.sent.len();
    p.restore(&mut zk);
    assert_eq!(
        p.sent[before..].to_vec(),
        [("check", DIR.to_owned()), ("getChildren", DIR.to_owned())],
        "after the reconnect"
    );
    p.run(&mut zk);
    assert_eq!(
        p.take_events(),
        [DoubleBarrierEvent::Entered, DoubleBarrierEvent::Left]
    );
}
