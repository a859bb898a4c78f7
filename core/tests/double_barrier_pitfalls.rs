//! Bugs other double barriers shipped (prior-art's addendum), each
//! replayed on the in-memory ZooKeeper. Every test fails on the buggy
//! behaviour.

mod conn_loss;
mod double_barrier_rounds;

use conn_loss::Driver;
use double_barrier_rounds::{
    all_inside, entered, process, process_nodes, ready_path, run_all, DIR,
};
use herdless_core::double_barrier::{DoubleBarrier, DoubleBarrierEvent};
use herdless_core::sim::SimZk;
use herdless_core::{Error, Instant, Recipe, SessionEvent, WatchEvent, WatchKind, ZkError};

fn events(ps: &[Driver<DoubleBarrier>]) -> Vec<Vec<DoubleBarrierEvent>> {
    ps.iter().map(|p| p.events.clone()).collect()
}

/// CURATOR-80: an enter that failed left its node. Here reading `ready`
/// is refused (an ACL on a `ready` an operator made): the enter fails,
/// and its node, created in the same flight, is gone before it says so.
#[test]
fn curator_80_an_enter_that_fails_leaves_no_node() {
    let mut zk = SimZk::new(80);
    zk.refuse(&ready_path(), Some(ZkError::NoAuth));
    let mut p = process(&mut zk, "a");
    p.act(&mut zk, |p| p.enter(2)).unwrap();
    p.run(&mut zk);
    assert_eq!(
        p.take_events(),
        [DoubleBarrierEvent::Failed(Error::Zk(ZkError::NoAuth))]
    );
    assert!(p.recipe.is_idle());
    assert!(
        process_nodes(&zk).is_empty(),
        "left {:?}",
        process_nodes(&zk)
    );
}

/// CURATOR-318: two processes gave up entering at their timeout and left
/// their nodes, so a third, arriving later, counted them, opened the
/// barrier and entered alone. Here the two time out, and so do two more
/// whose enter fails; the fifth waits for the count.
#[test]
fn curator_318_a_late_process_does_not_enter_with_processes_that_gave_up() {
    let mut zk = SimZk::new(318);
    let mut most = 0;
    let deadline = Instant::from_millis(5_000);
    let mut ps = vec![process(&mut zk, "a"), process(&mut zk, "b")];
    for p in ps.iter_mut() {
        p.act(&mut zk, |p| p.enter_until(3, deadline)).unwrap();
    }
    run_all(&mut zk, &mut ps, 3, &mut most);
    for p in ps.iter_mut() {
        p.act(&mut zk, |p| p.handle_timeout(deadline));
    }
    run_all(&mut zk, &mut ps, 3, &mut most);
    for p in &ps {
        assert_eq!(p.events, [DoubleBarrierEvent::TimedOut]);
    }
    zk.refuse(&ready_path(), Some(ZkError::NoAuth));
    let mut failing = vec![process(&mut zk, "c"), process(&mut zk, "d")];
    for p in failing.iter_mut() {
        p.act(&mut zk, |p| p.enter(3)).unwrap();
    }
    run_all(&mut zk, &mut failing, 3, &mut most);
    for p in &failing {
        assert_eq!(
            p.events,
            [DoubleBarrierEvent::Failed(Error::Zk(ZkError::NoAuth))]
        );
    }
    zk.refuse(&ready_path(), None);
    let mut late = vec![process(&mut zk, "e")];
    late[0].act(&mut zk, |p| p.enter(3)).unwrap();
    run_all(&mut zk, &mut late, 3, &mut 0);
    assert!(
        !entered(&late[0]),
        "entered with processes that gave up: {:?}",
        process_nodes(&zk)
    );
    assert!(zk.node(&ready_path()).is_none());
}

/// Netflix/curator#99: `ready` was counted as a process, so the barrier
/// opened one process early, and a late process saw more processes than
/// the count and threw. Here `ready` of an earlier round is there: two of
/// three do not enter, the third opens the barrier, and a fourth enters
/// the open barrier.
#[test]
fn netflix_curator_99_ready_is_not_counted_and_a_late_process_is_welcome() {
    let mut zk = SimZk::new(99);
    zk.create_persistent("/app", b"").unwrap();
    zk.create_persistent(DIR, b"").unwrap();
    zk.create_persistent(&ready_path(), b"").unwrap();
    let mut most = 0;
    let mut ps: Vec<_> = ["a", "b"].iter().map(|n| process(&mut zk, n)).collect();
    for p in ps.iter_mut() {
        p.act(&mut zk, |p| p.enter(3)).unwrap();
    }
    run_all(&mut zk, &mut ps, 3, &mut most);
    assert!(!ps.iter().any(entered), "entered with `ready` counted");
    for name in ["c", "d"] {
        ps.push(process(&mut zk, name));
        let last = ps.len() - 1;
        ps[last].act(&mut zk, |p| p.enter(3)).unwrap();
        run_all(&mut zk, &mut ps, 3, &mut most);
    }
    assert!(ps.iter().all(entered), "{:?}", events(&ps));
    assert!(
        ps.iter().all(|p| p.events == [DoubleBarrierEvent::Entered]),
        "{:?}",
        events(&ps)
    );
}

/// CURATOR-233 and CURATOR-536: a leave returned before every process had
/// left, or looped for ever. Here two of three leave and wait, however
/// often they are woken, until the third leaves; then all three are done,
/// with nothing left in the barrier.
#[test]
fn curator_233_536_leave_ends_once_and_only_when_everyone_left() {
    let mut zk = SimZk::new(233);
    let mut most = 0;
    let mut ps = all_inside(&mut zk, &["a", "b", "c"], &mut most);
    for p in ps.iter_mut().take(2) {
        p.act(&mut zk, |p| p.leave()).unwrap();
    }
    run_all(&mut zk, &mut ps, 3, &mut most);
    // Woken for nothing: the listing decides, and "c" is still there.
    for p in ps.iter_mut().take(2) {
        p.act(&mut zk, |p| {
            p.handle_watch(
                Instant::ZERO,
                WatchEvent {
                    kind: WatchKind::NodeDataChanged,
                    path: "/app/double/c",
                },
            )
        });
    }
    run_all(&mut zk, &mut ps, 3, &mut most);
    for p in ps.iter().take(2) {
        assert_eq!(p.events, [DoubleBarrierEvent::Entered], "left before c");
    }
    assert_eq!(process_nodes(&zk).last().map(String::as_str), Some("c"));
    ps[2].act(&mut zk, |p| p.leave()).unwrap();
    run_all(&mut zk, &mut ps, 3, &mut most);
    for p in &ps {
        assert_eq!(
            p.events,
            [DoubleBarrierEvent::Entered, DoubleBarrierEvent::Left]
        );
        assert!(p.recipe.is_idle());
    }
    assert!(process_nodes(&zk).is_empty());
    assert!(zk.node(&ready_path()).is_none());
}

/// apache/curator#1290 (PR #1291): a spurious wakeup, or a session event
/// handed to the enter's watcher, let a process through without the
/// count. Here a lone process of two hears its connection lost and back
/// on the same session, and every notification about `ready` but its
/// creation, and about the directory: it stays outside until the second
/// process comes.
#[test]
fn curator_1290_no_wakeup_but_the_count_opens_the_barrier() {
    let mut zk = SimZk::new(1290);
    let mut most = 0;
    let mut ps = vec![process(&mut zk, "a")];
    ps[0].act(&mut zk, |p| p.enter(2)).unwrap();
    run_all(&mut zk, &mut ps, 2, &mut most);
    let session = ps[0].session;
    let ready = ready_path();
    let stray = [
        (WatchKind::NodeDataChanged, ready.as_str()),
        (WatchKind::NodeDeleted, ready.as_str()),
        (WatchKind::NodeChildrenChanged, DIR),
        (WatchKind::NodeDataChanged, "/app/double/a"),
    ];
    for (kind, path) in stray {
        ps[0].act(&mut zk, |p| {
            p.handle_watch(Instant::ZERO, WatchEvent { kind, path })
        });
        run_all(&mut zk, &mut ps, 2, &mut most);
    }
    ps[0].act(&mut zk, |p| {
        p.handle_session(Instant::ZERO, SessionEvent::Suspended);
        p.handle_session(
            Instant::ZERO,
            SessionEvent::Connected {
                session_id: session,
            },
        );
    });
    run_all(&mut zk, &mut ps, 2, &mut most);
    assert!(!entered(&ps[0]), "through alone: {:?}", ps[0].recipe);
    ps[0].break_connection(&mut zk);
    ps[0].restore(&mut zk);
    run_all(&mut zk, &mut ps, 2, &mut most);
    assert!(!entered(&ps[0]), "through alone after a reconnect");
    ps.push(process(&mut zk, "b"));
    ps[1].act(&mut zk, |p| p.enter(2)).unwrap();
    run_all(&mut zk, &mut ps, 2, &mut most);
    assert!(ps.iter().all(entered), "{:?}", events(&ps));
}
