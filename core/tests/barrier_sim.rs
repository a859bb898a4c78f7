//! The barrier and the double barrier under seeded random schedules and
//! faults, on the in-memory ZooKeeper.
//!
//! Barrier: waiters never pass while the barrier node exists; once it is
//! removed every waiter passes, and no watch is left behind.
//!
//! Double barrier: nobody enters before the count of processes was reached
//! on the server; nobody finishes leaving while another process node is
//! still there; with one process killed inside, the others still leave;
//! leaving costs about one notification per deletion, not a herd. A
//! process that gives up (its deadline passed, or it cancelled) has no node
//! on the server when it says so, nor ever after, so nobody counts it.
//!
//! Replay a failing seed with
//! `HERDLESS_SEED=<seed> cargo test -p herdless-core --test barrier_sim`.

mod support;

use herdless_core::barrier::{Barrier, BarrierEvent};
use herdless_core::double_barrier::{DoubleBarrier, DoubleBarrierEvent, READY};
use herdless_core::sim::{Faults, World};
use herdless_core::Instant;
use rand::Rng;

const BARRIER: &str = "/app/barrier";
const DOUBLE: &str = "/app/double";
const DEFAULT_SCHEDULES: u64 = 5_000;

/// Connections drop and replies are lost, but sessions survive. On the
/// seeds where the driver reads as the embedded one does, the double
/// barrier's listings come in parts (it takes them so), and a connection
/// lost cuts one short. No listing holds a name too large to read: that
/// refuses the listing, and a process refused fails, which these schedules
/// do not expect (`barrier_faults` and `barrier_double_faults` refuse
/// requests by hand). Some writes carry data over the receive buffer: a
/// barrier node or a process node read too large is there all the same,
/// and waited on.
const FLAKY: Faults = Faults {
    disconnect: 0.02,
    lose_reply: 0.02,
    expire: 0.0,
    reconnect: 0.2,
    cut_before_drain: 0.02,
    too_large: 0.0,
    oversized: 0.05,
};

fn barrier_schedule(seed: u64) -> Result<usize, String> {
    let mut world: World<Barrier> = World::new(seed);
    let owner = world.add_peer(Barrier::new(BARRIER).unwrap());
    world.act(owner, |b| b.set());
    if !world.run_until_quiet(10_000) {
        return Err("setting never finished".into());
    }
    let waiters = world.rng().gen_range(1..=8);
    for _ in 0..waiters {
        let w = world.add_peer(Barrier::new(BARRIER).unwrap());
        world.act(w, |b| b.wait());
    }
    world.faults = Faults::FREQUENT;
    let remove_at = world.rng().gen_range(0..200);
    let mut removed = false;
    let mut passed = vec![false; waiters + 1];
    for step in 0..100_000 {
        if step == remove_at {
            world.act(owner, |b| b.remove());
        }
        if step == 300 {
            world.faults = Faults::NONE;
        }
        let stepped = world.step().is_some();
        removed |= world.zk.node(BARRIER).is_none();
        for (i, was_passed) in passed.iter_mut().enumerate() {
            if world.session_ended(i) {
                world.renew_session(i);
            }
            for event in world.peers[i].take_events() {
                match event {
                    BarrierEvent::Passed if !removed => {
                        return Err(format!("step {step}: waiter {i} passed a standing barrier"))
                    }
                    BarrierEvent::Passed => *was_passed = true,
                    BarrierEvent::Set | BarrierEvent::Removed => {}
                    other => return Err(format!("peer {i}: {other:?}")),
                }
            }
        }
        if step > 300 && !stepped && !world.busy() {
            break;
        }
    }
    if !passed[1..].iter().all(|p| *p) {
        return Err(format!("not every waiter passed: {passed:?}"));
    }
    if world.zk.watch_count() != 0 {
        return Err(format!("watches left behind: {}", world.zk.watch_count()));
    }
    Ok(waiters)
}

#[test]
fn barrier_waiters_pass_only_once_removed_and_leave_no_watch() {
    let (waiters, secs) =
        support::for_each_seed("barrier_sim", DEFAULT_SCHEDULES, barrier_schedule);
    println!(
        "{} seeded barrier schedules ({} waiters) in {secs:.1} s",
        waiters.len(),
        waiters.iter().sum::<usize>()
    );
}

/// Runs `world` until `done`, failing if a waiter in `standing` passes
/// (its wait began while the barrier stood, and the owner has not asked
/// for the barrier's removal since).
fn run_lagging(
    world: &mut World<Barrier>,
    standing: &[bool],
    passed: &mut [bool],
    mut done: impl FnMut(&mut World<Barrier>) -> bool,
) -> Result<(), String> {
    for _ in 0..100_000 {
        if done(world) {
            return Ok(());
        }
        let stepped = world.step().is_some();
        for (i, was_passed) in passed.iter_mut().enumerate() {
            for event in world.peers[i].take_events() {
                match event {
                    BarrierEvent::Passed if standing[i] => {
                        return Err(format!("waiter {i} passed a barrier that stands"))
                    }
                    BarrierEvent::Passed => *was_passed = true,
                    BarrierEvent::Set | BarrierEvent::Removed => {}
                    other => return Err(format!("peer {i}: {other:?}")),
                }
            }
        }
        if !stepped && !world.busy() && !done(world) {
            return Err("quiet before the end of the round".into());
        }
    }
    Err("the round never ended".into())
}

/// Rounds of set, waits, remove, with every read served by a server that
/// may be behind the quorum (and a `sync` proving nothing, as on the
/// leader). Returns how many waits began while the barrier stood.
fn lagging_schedule(seed: u64) -> Result<usize, String> {
    let mut world: World<Barrier> = World::new(seed);
    world.zk.set_lagging_reads(true);
    let waiters = world.rng().gen_range(1..=4);
    for _ in 0..waiters {
        world.add_peer(Barrier::new(BARRIER).unwrap());
    }
    let owner = world.add_peer(Barrier::new(BARRIER).unwrap());
    let mut held = 0;
    for _round in 0..6 {
        let mut standing = vec![false; waiters + 1];
        let mut passed = vec![false; waiters + 1];
        world.act(owner, |b| b.set());
        run_lagging(&mut world, &standing, &mut passed, |w| {
            w.act(owner, |b| b.is_idle())
        })?;
        // The owner's `set` has returned: every wait from now on must hold.
        for (i, stands) in standing.iter_mut().enumerate().take(waiters) {
            if !world.act(i, |b| b.is_waiting()) {
                world.act(i, |b| b.wait());
                *stands = true;
                held += 1;
            }
        }
        let steps = world.rng().gen_range(0..60);
        let mut taken = 0;
        run_lagging(&mut world, &standing, &mut passed, |w| {
            taken += 1;
            taken > steps || !w.busy()
        })?;
        world.act(owner, |b| b.remove());
        let standing = vec![false; waiters + 1];
        run_lagging(&mut world, &standing, &mut passed, |w| {
            !w.busy() && (0..waiters).all(|i| !w.act(i, |b| b.is_waiting()))
        })?;
    }
    Ok(held)
}

/// ZooKeeper orders what one session sees, not what two sessions see: a
/// waiter's server may not yet have applied the owner's `set` when the wait
/// begins, and a `sync` does not catch it up when that server is the
/// leader (seen on a real ensemble: a waiter on the leader passed a
/// barrier that stood). The wait's first read goes behind a no-op write
/// of its own, which every server applies after the `set`.
#[test]
fn a_wait_begun_after_the_set_returned_holds_on_a_lagging_server() {
    let (held, secs) =
        support::for_each_seed("barrier_sim", DEFAULT_SCHEDULES / 5, lagging_schedule);
    println!(
        "{} seeded schedules on lagging servers ({} waits began while the barrier stood) in {secs:.1} s",
        held.len(),
        held.iter().sum::<usize>()
    );
}

struct Double {
    world: World<DoubleBarrier>,
    n: usize,
    entered: Vec<bool>,
    left: Vec<bool>,
    dead: Vec<bool>,
    /// Most process nodes seen on the server at once so far.
    most_present: usize,
    ready_seen_with: Option<usize>,
    step: usize,
}

/// The process nodes of the double barrier on the server.
fn process_nodes<R: herdless_core::Recipe>(world: &World<R>) -> Vec<String> {
    world
        .zk
        .children(DOUBLE)
        .unwrap_or_default()
        .into_iter()
        .filter(|n| n != READY)
        .collect()
}

impl Double {
    fn process_nodes(&self) -> Vec<String> {
        process_nodes(&self.world)
    }

    fn observe(&mut self) -> Result<(), String> {
        let present = self.process_nodes().len();
        self.most_present = self.most_present.max(present);
        if self.ready_seen_with.is_none()
            && self.world.zk.node(&format!("{DOUBLE}/{READY}")).is_some()
        {
            self.ready_seen_with = Some(self.most_present);
        }
        for i in 0..self.n {
            for event in self.world.peers[i].take_events() {
                match event {
                    DoubleBarrierEvent::Entered => {
                        if self.most_present < self.n {
                            return Err(format!(
                                "step {}: process {i} entered with at most {} of {} present",
                                self.step, self.most_present, self.n
                            ));
                        }
                        self.entered[i] = true;
                    }
                    DoubleBarrierEvent::Left => {
                        let others = self.process_nodes();
                        if !others.is_empty() {
                            return Err(format!(
                                "step {}: process {i} left while {others:?} are inside",
                                self.step
                            ));
                        }
                        self.left[i] = true;
                    }
                    DoubleBarrierEvent::Lost if self.dead[i] => {}
                    other => return Err(format!("process {i}: {other:?}")),
                }
            }
        }
        Ok(())
    }

    fn run_until(&mut self, what: &str, done: impl Fn(&Double) -> bool) -> Result<(), String> {
        for _ in 0..100_000 {
            if done(self) {
                return Ok(());
            }
            let stepped = self.world.step().is_some();
            support::stuck::timers_settle(&self.world)?;
            self.step += 1;
            self.observe()?;
            if !stepped && !self.world.busy() && !done(self) {
                return Err(format!(
                    "quiet before {what}: {:?}",
                    self.world
                        .peers
                        .iter()
                        .map(|p| format!("{:?}", p.recipe))
                        .collect::<Vec<_>>()
                ));
            }
        }
        Err(format!("{what} never happened"))
    }
}

fn double_schedule(seed: u64) -> Result<u64, String> {
    double_schedule_with(seed, false)
}

fn double_schedule_with(seed: u64, lagging: bool) -> Result<u64, String> {
    let mut world: World<DoubleBarrier> = World::new(seed);
    world.zk.set_lagging_reads(lagging);
    let n = world.rng().gen_range(2..=8);
    for i in 0..n {
        world.add_peer(DoubleBarrier::new(DOUBLE, &format!("p{i}")).unwrap());
    }
    let mut d = Double {
        world,
        n,
        entered: vec![false; n],
        left: vec![false; n],
        dead: vec![false; n],
        most_present: 0,
        ready_seen_with: None,
        step: 0,
    };
    // Processes arrive one by one, with connections dropping.
    d.world.faults = FLAKY;
    for i in 0..n {
        d.world
            .act(i, |p| p.enter(u32::try_from(n).unwrap()))
            .map_err(|e| e.to_string())?;
        let pause = d.world.rng().gen_range(0..20);
        for _ in 0..pause {
            d.world.step();
            d.step += 1;
            d.observe()?;
        }
    }
    d.run_until("everyone entered", |d| d.entered.iter().all(|e| *e))?;
    // Notifications of the enter phase still on their way (say, fired again
    // by a reconnect) are not the leave phase's to count.
    d.world.faults = Faults::NONE;
    d.run_until("the enter phase settled", |d| !d.world.busy())?;
    // One process may be killed inside: the others must not wait for it.
    if d.world.rng().gen_bool(0.5) {
        let victim = d.world.rng().gen_range(0..n);
        d.dead[victim] = true;
        let session = d.world.peers[victim].session();
        d.world.zk.expire(session);
    }
    // Everyone else leaves, at different moments.
    let leavers: Vec<usize> = (0..n).filter(|&i| !d.dead[i]).collect();
    let before = d.world.zk.stats().notifications;
    d.world.faults = Faults::NONE;
    for &i in &leavers {
        d.world
            .act(i, |p| p.leave())
            .map_err(|e| format!("process {i}: {e}"))?;
        let pause = d.world.rng().gen_range(0..10);
        for _ in 0..pause {
            d.world.step();
            d.step += 1;
            d.observe()?;
        }
    }
    d.run_until("everyone left", |d| leavers.iter().all(|&i| d.left[i]))?;
    let notifications = d.world.zk.stats().notifications - before;
    // One wake per deletion, the last one waking every waiter, and the
    // deletion of `ready` waking every leaver whose own node went (it
    // watches `ready` to learn that the round is over even if the node it
    // waits on is already the next round's): O(n), no herd per step.
    let bound = 3 * u64::try_from(n).unwrap();
    if notifications > bound {
        return Err(format!(
            "{notifications} notifications to leave with {n} processes (bound {bound})"
        ));
    }
    if !d.process_nodes().is_empty() || d.world.zk.node(&format!("{DOUBLE}/{READY}")).is_some() {
        return Err(format!("left behind: {:?}", d.world.zk.children(DOUBLE)));
    }
    Ok(notifications)
}

/// The same schedules with every read served by a server that may be
/// behind the quorum.
#[test]
fn double_barrier_enters_and_leaves_together_on_lagging_servers() {
    let (runs, secs) = support::for_each_seed("barrier_sim", DEFAULT_SCHEDULES / 5, |seed| {
        double_schedule_with(seed, true)
    });
    println!(
        "{} seeded double-barrier schedules on lagging servers in {secs:.1} s",
        runs.len()
    );
}

#[test]
fn double_barrier_enters_at_the_count_and_leaves_together_under_faults() {
    let (notifications, secs) =
        support::for_each_seed("barrier_sim", DEFAULT_SCHEDULES, double_schedule);
    println!(
        "{} seeded double-barrier schedules ({} notifications to leave in all) in {secs:.1} s",
        notifications.len(),
        notifications.iter().sum::<u64>()
    );
}

/// How a process of the give-up schedules stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Giving {
    /// Waits to enter, or is inside, for good.
    Stays,
    /// Enters with a deadline, or cancels at a random step.
    Quits,
    /// Said it gave up (`TimedOut` or `Cancelled`).
    GaveUp,
}

/// What the give-up schedules saw so far.
struct Seen {
    /// The processes that stay: the count.
    stay: usize,
    giving: Vec<Giving>,
    entered: Vec<bool>,
    left: Vec<bool>,
    /// Most process nodes seen on the server at once so far.
    most_present: usize,
    step: usize,
}

impl Seen {
    fn observe(&mut self, world: &mut World<DoubleBarrier>) -> Result<(), String> {
        self.step += 1;
        let step = self.step;
        let present = process_nodes(world);
        self.most_present = self.most_present.max(present.len());
        for i in 0..self.giving.len() {
            for event in world.peers[i].take_events() {
                match event {
                    DoubleBarrierEvent::Entered if self.most_present < self.stay => {
                        return Err(format!(
                            "step {step}: p{i} entered with at most {} of {}",
                            self.most_present, self.stay
                        ));
                    }
                    DoubleBarrierEvent::Entered => self.entered[i] = true,
                    DoubleBarrierEvent::TimedOut | DoubleBarrierEvent::Cancelled
                        if self.giving[i] == Giving::Quits =>
                    {
                        self.giving[i] = Giving::GaveUp;
                    }
                    DoubleBarrierEvent::Left if self.giving[i] == Giving::Stays => {
                        if !present.is_empty() {
                            return Err(format!(
                                "step {step}: p{i} left while {present:?} are inside"
                            ));
                        }
                        self.left[i] = true;
                    }
                    other => return Err(format!("step {step}: p{i}: {other:?}")),
                }
            }
            if self.giving[i] == Giving::GaveUp && present.contains(&format!("p{i}")) {
                return Err(format!(
                    "step {step}: p{i} gave up and its node is on the server"
                ));
            }
        }
        Ok(())
    }
}

/// Processes that give up among processes that stay: `stay` of them stay,
/// which is the count, and 1 to 3 more enter with a deadline or cancel,
/// with connections dropping and replies lost. Whoever says it gave up has
/// no node on the server then, nor ever after (a node left behind is
/// counted by the next process: CURATOR-318); the ones that stay enter
/// once the count was on the server, then leave together, leaving
/// nothing behind. A quitter the barrier opened for before it gave up
/// enters (the race no timed barrier can rule out) and withdraws.
fn give_up_schedule(seed: u64) -> Result<usize, String> {
    give_up_schedule_with(seed, false)
}

fn give_up_schedule_with(seed: u64, lagging: bool) -> Result<usize, String> {
    let mut world: World<DoubleBarrier> = World::new(seed);
    world.zk.set_lagging_reads(lagging);
    let stay = world.rng().gen_range(2..=5);
    let quit = world.rng().gen_range(1..=3);
    let n = stay + quit;
    let mut giving = vec![Giving::Stays; stay];
    giving.extend(vec![Giving::Quits; quit]);
    let mut order: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        let j = world.rng().gen_range(0..=i);
        order.swap(i, j);
    }
    for i in 0..n {
        world.add_peer(DoubleBarrier::new(DOUBLE, &format!("p{i}")).unwrap());
    }
    let count = u32::try_from(stay).unwrap();
    let mut seen = Seen {
        stay,
        giving,
        entered: vec![false; n],
        left: vec![false; n],
        most_present: 0,
        step: 0,
    };
    world.faults = FLAKY;
    for &i in &order {
        let now = world.now().as_millis();
        if seen.giving[i] == Giving::Quits && world.rng().gen_bool(0.5) {
            let deadline = Instant::from_millis(now + world.rng().gen_range(0..50));
            world
                .act(i, |p| p.enter_until(count, deadline))
                .map_err(|e| e.to_string())?;
        } else {
            world
                .act(i, |p| p.enter(count))
                .map_err(|e| e.to_string())?;
        }
        for _ in 0..world.rng().gen_range(0..20) {
            world.step();
            seen.observe(&mut world)?;
            // A quitter may cancel at any step (one inside withdraws).
            let i = world.rng().gen_range(0..n);
            if seen.giving[i] == Giving::Quits && world.rng().gen_bool(0.05) {
                let _ = world.act(i, |p| p.cancel());
            }
        }
    }
    // Everyone who stays inside, every quitter done.
    let settled = |seen: &Seen| {
        (seen.giving.iter().zip(&seen.entered)).all(|(giving, entered)| match giving {
            Giving::Stays => *entered,
            Giving::Quits => false,
            Giving::GaveUp => true,
        })
    };
    while !settled(&seen) {
        if seen.step > 100_000 {
            return Err(format!("never settled: {:?}", seen.giving));
        }
        // Once the ones that stay are inside, every quitter still there
        // gives up, whatever its state.
        if (0..n).all(|i| seen.giving[i] != Giving::Stays || seen.entered[i]) {
            for i in 0..n {
                if seen.giving[i] == Giving::Quits {
                    let _ = world.act(i, |p| p.cancel());
                }
            }
        }
        let stepped = world.step().is_some();
        support::stuck::timers_settle(&world)?;
        seen.observe(&mut world)?;
        if !stepped && !world.busy() && !settled(&seen) {
            return Err(format!(
                "quiet before everyone entered or gave up: {:?}",
                seen.giving
            ));
        }
    }
    world.faults = Faults::NONE;
    for i in 0..n {
        if seen.giving[i] == Giving::Stays {
            world
                .act(i, |p| p.leave())
                .map_err(|e| format!("p{i}: {e}"))?;
        }
    }
    while !(0..n).all(|i| seen.giving[i] != Giving::Stays || seen.left[i]) {
        if seen.step > 200_000 {
            return Err(format!("never left: {:?}", process_nodes(&world)));
        }
        let stepped = world.step().is_some();
        seen.observe(&mut world)?;
        if !stepped && !world.busy() {
            return Err(format!(
                "quiet before everyone left: {:?}",
                process_nodes(&world)
            ));
        }
    }
    if !process_nodes(&world).is_empty() || world.zk.node(&format!("{DOUBLE}/{READY}")).is_some() {
        return Err(format!("left behind: {:?}", world.zk.children(DOUBLE)));
    }
    Ok(quit)
}

/// The same schedules with every read served by a server that may be
/// behind the quorum.
#[test]
fn double_barrier_processes_that_give_up_leave_no_node_to_count_on_lagging_servers() {
    let (quitters, secs) = support::for_each_seed("barrier_sim", DEFAULT_SCHEDULES / 5, |seed| {
        give_up_schedule_with(seed, true)
    });
    println!(
        "{} seeded double-barrier schedules on lagging servers with {} processes giving up in {secs:.1} s",
        quitters.len(),
        quitters.iter().sum::<usize>()
    );
}

#[test]
fn double_barrier_processes_that_give_up_leave_no_node_to_count() {
    let (quitters, secs) =
        support::for_each_seed("barrier_sim", DEFAULT_SCHEDULES, give_up_schedule);
    println!(
        "{} seeded double-barrier schedules with {} processes giving up in {secs:.1} s",
        quitters.len(),
        quitters.iter().sum::<usize>()
    );
}

/// A count of 0 or 1 lets a process in alone, at once, as Curator's and
/// Kazoo's double barriers do; it leaves as alone.
#[test]
fn a_double_barrier_of_zero_or_one_enters_alone_at_once() {
    for count in [0, 1] {
        let mut world: World<DoubleBarrier> = World::new(1);
        let p = world.add_peer(DoubleBarrier::new(DOUBLE, "alone").unwrap());
        world.act(p, |d| d.enter(count)).unwrap();
        world.run_until_quiet(1_000);
        assert_eq!(world.peers[p].take_events(), [DoubleBarrierEvent::Entered]);
        world.act(p, |d| d.leave()).unwrap();
        world.run_until_quiet(1_000);
        assert_eq!(world.peers[p].take_events(), [DoubleBarrierEvent::Left]);
        assert_eq!(world.zk.children(DOUBLE), Some(Vec::<String>::new()));
    }
}
