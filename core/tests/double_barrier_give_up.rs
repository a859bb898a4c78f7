//! Giving up on a double barrier: an enter or a leave with a deadline, and
//! one cancelled. Whichever way, the own node goes before the process says
//! it gave up, so nobody counts it or waits for it; and the answers awaited
//! when a deadline passes decide first, as for a timed lock.

mod conn_loss;
mod double_barrier_rounds;

use conn_loss::Driver;
use double_barrier_rounds::{
    all_inside, entered, process, process_nodes, ready_path, run_all, DIR,
};
use herdless_core::double_barrier::{DoubleBarrier, DoubleBarrierEvent};
use herdless_core::sim::SimZk;
use herdless_core::{Error, Instant, Recipe};

const DEADLINE: Instant = Instant::from_millis(100);

fn with_dir(seed: u64) -> SimZk {
    let mut zk = SimZk::new(seed);
    zk.create_persistent("/app", b"").unwrap();
    zk.create_persistent(DIR, b"").unwrap();
    zk
}

fn fire(p: &mut Driver<DoubleBarrier>, zk: &mut SimZk, now: Instant) {
    p.act(zk, |p| p.handle_timeout(now));
}

#[test]
fn an_enter_that_times_out_deletes_its_node_then_says_so() {
    let mut zk = SimZk::new(1);
    let mut p = process(&mut zk, "a");
    p.act(&mut zk, |p| p.enter_until(2, DEADLINE)).unwrap();
    p.run(&mut zk);
    assert!(p.take_events().is_empty());
    assert_eq!(p.recipe.poll_timeout(), Some(DEADLINE));
    fire(&mut p, &mut zk, Instant::from_millis(99));
    assert!(p.sent_of("delete").is_empty(), "gave up early");
    fire(&mut p, &mut zk, DEADLINE);
    assert!(p.take_events().is_empty(), "told before its node went");
    p.run(&mut zk);
    assert_eq!(p.take_events(), [DoubleBarrierEvent::TimedOut]);
    assert!(process_nodes(&zk).is_empty());
    assert!(p.recipe.is_idle());
    assert_eq!(p.recipe.poll_timeout(), None);
}

/// The deadline passes with the enter's answers on their way, the count
/// reached: they decide, and the process enters (a timed lock takes a
/// free lock however long the round trips; so does a barrier).
#[test]
fn answers_awaited_at_the_deadline_decide() {
    let mut zk = SimZk::new(2);
    let mut most = 0;
    let mut ps = vec![process(&mut zk, "a")];
    ps[0].act(&mut zk, |p| p.enter(2)).unwrap();
    run_all(&mut zk, &mut ps, 2, &mut most);
    ps.push(process(&mut zk, "b"));
    ps[1].act(&mut zk, |p| p.enter_until(2, DEADLINE)).unwrap();
    fire(&mut ps[1], &mut zk, DEADLINE);
    assert_eq!(
        ps[1].recipe.poll_timeout(),
        None,
        "a last look needs no timer"
    );
    run_all(&mut zk, &mut ps, 2, &mut most);
    assert!(ps.iter().all(entered), "{:?}", ps[1].events);
    assert_eq!(ps[1].events, [DoubleBarrierEvent::Entered]);
    assert_eq!(process_nodes(&zk), ["a", "b"]);
    assert_eq!(
        ps[1].recipe.poll_timeout(),
        None,
        "inside: no deadline left"
    );
}

/// The last look finds the count short: the process gives up then.
#[test]
fn a_last_look_that_finds_the_count_short_gives_up() {
    let mut zk = SimZk::new(3);
    let mut p = process(&mut zk, "a");
    p.act(&mut zk, |p| p.enter_until(2, DEADLINE)).unwrap();
    fire(&mut p, &mut zk, DEADLINE);
    assert!(
        p.sent_of("delete").is_empty(),
        "did not wait for the answers"
    );
    p.run(&mut zk);
    assert_eq!(p.take_events(), [DoubleBarrierEvent::TimedOut]);
    assert!(process_nodes(&zk).is_empty());
}

/// The connection goes while the answers awaited at the deadline are on
/// their way: they will not come, so the process gives up at once, and its
/// node goes once the connection is back.
#[test]
fn a_last_look_cut_off_by_a_lost_connection_deletes_the_node_on_reconnect() {
    let mut zk = with_dir(4);
    let mut p = process(&mut zk, "a");
    p.act(&mut zk, |p| p.enter_until(2, DEADLINE)).unwrap();
    fire(&mut p, &mut zk, DEADLINE);
    assert!(zk.apply_next(p.session)); // the create is applied, its answer lost
    p.break_connection(&mut zk);
    assert_eq!(
        p.recipe.poll_timeout(),
        None,
        "gave up with the answers lost"
    );
    assert!(p.take_events().is_empty(), "told before its node went");
    assert_eq!(process_nodes(&zk), ["a"]);
    p.restore(&mut zk);
    p.run(&mut zk);
    assert_eq!(p.take_events(), [DoubleBarrierEvent::TimedOut]);
    assert!(process_nodes(&zk).is_empty());
}

/// The deadline passes while the connection is down: nothing awaited can
/// decide any more, so the process gives up then, its node going once the
/// connection is back.
#[test]
fn a_deadline_passed_while_disconnected_gives_up_then() {
    let mut zk = SimZk::new(7);
    let mut p = process(&mut zk, "a");
    p.act(&mut zk, |p| p.enter_until(2, DEADLINE)).unwrap();
    p.run(&mut zk);
    p.break_connection(&mut zk);
    assert_eq!(p.recipe.poll_timeout(), Some(DEADLINE));
    fire(&mut p, &mut zk, DEADLINE);
    assert_eq!(p.recipe.poll_timeout(), None);
    assert!(p.take_events().is_empty(), "told before its node went");
    assert_eq!(process_nodes(&zk), ["a"]);
    p.restore(&mut zk);
    p.run(&mut zk);
    assert_eq!(p.take_events(), [DoubleBarrierEvent::TimedOut]);
    assert!(process_nodes(&zk).is_empty());
}

/// A process giving up whose session expires before its node is deleted:
/// the node went with the session, and the outcome stands.
#[test]
fn a_session_that_expires_while_giving_up_reports_the_outcome() {
    let mut zk = SimZk::new(8);
    let mut p = process(&mut zk, "a");
    p.act(&mut zk, |p| p.enter(2)).unwrap();
    p.run(&mut zk);
    p.break_connection(&mut zk);
    p.act(&mut zk, |p| p.cancel()).unwrap();
    zk.expire(p.session);
    p.restore(&mut zk);
    p.deliver_all(&mut zk);
    assert_eq!(p.take_events(), [DoubleBarrierEvent::Cancelled]);
    assert!(process_nodes(&zk).is_empty());
    assert!(p.recipe.is_idle());
}

#[test]
fn cancel_withdraws_an_enter_and_its_node() {
    let mut zk = SimZk::new(5);
    let mut p = process(&mut zk, "a");
    assert_eq!(p.recipe.cancel(), Err(Error::InvalidState), "idle");
    p.act(&mut zk, |p| p.enter(2)).unwrap();
    p.run(&mut zk);
    assert_eq!(process_nodes(&zk), ["a"]);
    p.act(&mut zk, |p| p.cancel()).unwrap();
    assert_eq!(p.recipe.cancel(), Ok(()), "a second cancel changes nothing");
    p.run(&mut zk);
    assert_eq!(p.take_events(), [DoubleBarrierEvent::Cancelled]);
    assert!(process_nodes(&zk).is_empty());
    assert!(zk.node(&ready_path()).is_none());
    // And it can enter again.
    p.act(&mut zk, |p| p.enter(1)).unwrap();
    p.run(&mut zk);
    assert_eq!(p.take_events(), [DoubleBarrierEvent::Entered]);
}

/// A process inside withdraws without leaving with the others: its node
/// goes, and the others leave without waiting for it.
#[test]
fn cancel_inside_withdraws_without_holding_the_others() {
    let mut zk = SimZk::new(9);
    let mut most = 0;
    let mut ps = all_inside(&mut zk, &["a", "b"], &mut most);
    ps[0].act(&mut zk, |p| p.cancel()).unwrap();
    run_all(&mut zk, &mut ps, 2, &mut most);
    assert_eq!(
        ps[0].events,
        [DoubleBarrierEvent::Entered, DoubleBarrierEvent::Cancelled]
    );
    assert_eq!(process_nodes(&zk), ["b"]);
    ps[1].act(&mut zk, |p| p.leave()).unwrap();
    run_all(&mut zk, &mut ps, 2, &mut most);
    assert_eq!(
        ps[1].events,
        [DoubleBarrierEvent::Entered, DoubleBarrierEvent::Left]
    );
    assert!(process_nodes(&zk).is_empty());
    assert!(zk.node(&ready_path()).is_none());
}

/// Three inside; the lowest and the middle leave, the highest stays. The
/// lowest, which keeps its node while it waits for the highest, gives up
/// at its deadline: its node goes, and the middle one, which waited for
/// it, now waits for the highest alone; all that stay leave together
/// once it goes.
#[test]
fn a_leave_that_times_out_deletes_the_own_node_and_holds_nobody_up() {
    let mut zk = SimZk::new(6);
    let mut most = 0;
    let mut ps = all_inside(&mut zk, &["a", "b", "c"], &mut most);
    ps[0].act(&mut zk, |p| p.leave_until(DEADLINE)).unwrap();
    ps[1].act(&mut zk, |p| p.leave()).unwrap();
    run_all(&mut zk, &mut ps, 3, &mut most);
    assert_eq!(process_nodes(&zk), ["a", "c"], "the lowest keeps its node");
    fire(&mut ps[0], &mut zk, DEADLINE);
    run_all(&mut zk, &mut ps, 3, &mut most);
    assert_eq!(
        ps[0].events,
        [DoubleBarrierEvent::Entered, DoubleBarrierEvent::TimedOut]
    );
    assert_eq!(process_nodes(&zk), ["c"]);
    assert_eq!(ps[1].events, [DoubleBarrierEvent::Entered], "left before c");
    ps[2].act(&mut zk, |p| p.leave()).unwrap();
    run_all(&mut zk, &mut ps, 3, &mut most);
    for p in &ps[1..] {
        assert_eq!(
            p.events,
            [DoubleBarrierEvent::Entered, DoubleBarrierEvent::Left]
        );
    }
    assert!(process_nodes(&zk).is_empty());
    assert!(zk.node(&ready_path()).is_none());
}
