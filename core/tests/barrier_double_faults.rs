//! The double barrier when a round ends badly: a `ready` node left behind
//! (every process died inside, or the last one out lost its session between
//! its two deletes) must not let the next round's first process in alone;
//! and faults while leaving. Scripted step by step on the in-memory
//! ZooKeeper; the oracle counts process nodes on the server.

mod conn_loss;

use conn_loss::Driver;
use herdless_core::double_barrier::{DoubleBarrier, DoubleBarrierEvent, READY};
use herdless_core::sim::SimZk;

const DIR: &str = "/app/double";

fn ready_path() -> String {
    format!("{DIR}/{READY}")
}

fn process_nodes(zk: &SimZk) -> Vec<String> {
    zk.children(DIR)
        .unwrap_or_default()
        .into_iter()
        .filter(|n| n != READY)
        .collect()
}

fn process(zk: &mut SimZk, name: &str) -> Driver<DoubleBarrier> {
    Driver::open(zk, DoubleBarrier::new(DIR, name).unwrap())
}

/// Runs every process until nothing is queued anywhere, checking after
/// every delivery that nobody entered with fewer than `count` process
/// nodes seen on the server so far.
fn run_all(zk: &mut SimZk, ps: &mut [Driver<DoubleBarrier>], count: usize, most: &mut usize) {
    for _ in 0..10_000 {
        let mut busy = false;
        for p in ps.iter_mut() {
            busy |= zk.apply_next(p.session);
            *most = (*most).max(process_nodes(zk).len());
            busy |= p.deliver_one(zk);
            if p.events.contains(&DoubleBarrierEvent::Entered) {
                assert!(
                    *most >= count,
                    "{} entered with at most {} of {count} processes on the server",
                    p.recipe.name(),
                    *most
                );
            }
        }
        if !busy {
            return;
        }
    }
    panic!("never quiet");
}

fn entered(p: &Driver<DoubleBarrier>) -> bool {
    p.events.contains(&DoubleBarrierEvent::Entered)
}

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
    // The listing: only the own node is left, so delete it, then ready.
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
