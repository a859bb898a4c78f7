//! Leader election under seeded random schedules and faults, on the
//! in-memory ZooKeeper.
//!
//! Every schedule runs 2 to 12 candidates and 0 to 2 observers through three
//! phases:
//!
//! 1. faults on: candidates campaign (some with a deadline), lead for a
//!    while and resign, or resign while waiting, while connections drop,
//!    replies of applied writes are lost and sessions expire (expired
//!    candidates get a new session). Some candidates declare leadership lost
//!    once suspended longer than a "session timeout" of their own;
//! 2. faults off: nobody starts anew, leaders resign, and every waiting
//!    candidate must come to lead; afterwards no candidate node and no
//!    acknowledgement may remain, and observers see nobody leading;
//! 3. a fault-free succession: all candidates volunteer, then each leader
//!    resigns in turn; every resignation wakes exactly one other candidate
//!    (counted in watch notifications delivered), the next in line leads,
//!    and the acknowledgement and every observer name it.
//!
//! On every step of phases 1 and 2: at most one candidate whose session is
//! live believes it leads; that candidate's node is the lowest candidate
//! node on the server and belongs to its session; the acknowledgement node
//! names it; events come in an order an application can follow.
//!
//! A failure names its seed. Replay one with
//! `HERDLESS_SEED=<seed> cargo test -p herdless-core --features sim --test election_sim`, and
//! run more with `HERDLESS_SCHEDULES=<n>`.

mod support;

use herdless_core::election::{
    Acknowledgement, Election, ElectionEvent, ElectionState, Observer, ObserverEvent,
};
use herdless_core::naming::{contender_sequence, Guid, NodeKind};
use herdless_core::sim::{Either, Faults, World};
use herdless_core::Instant;
use herdless_core::{Recipe, SessionEvent};
use rand::Rng;
use support::session_moves::{self, Abandoned};
use support::stuck;

const DIR: &str = "/election/sim";
const ACK: &str = "/election/sim/leader";
const DEFAULT_SCHEDULES: u64 = 4_000;

type Role = Either<Election, Observer>;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum App {
    Idle,
    Campaigning,
    Leading { resign_at: usize },
    Resigning,
}

struct Run {
    world: World<Role>,
    candidates: usize,
    app: Vec<App>,
    step: usize,
    leaderships: usize,
    /// Sessions left behind by a move to a new one, and when they expire.
    abandoned: Abandoned,
}

fn candidate(world: &World<Role>, i: usize) -> &Election {
    world.peers[i].recipe.a().expect("a candidate")
}

fn guid(world: &mut World<Role>) -> Guid {
    Guid::from_random_bytes(world.rng().gen())
}

/// The lowest candidate node on the server, and its owner.
fn lowest_candidate(world: &World<Role>) -> Option<(String, i64)> {
    let names = world.zk.children(DIR)?;
    let (name, _) = names
        .into_iter()
        .filter_map(|n| contender_sequence(NodeKind::Candidate, &n).map(|s| (n, s)))
        .reduce(|a, b| if b.1.precedes(a.1) { b } else { a })?;
    let owner = world
        .zk
        .node(&format!("{DIR}/{name}"))
        .map_or(0, |n| n.stat.ephemeral_owner);
    Some((name, owner))
}

impl Run {
    fn new(seed: u64) -> Self {
        let mut world: World<Role> = World::new(seed);
        let candidates = world.rng().gen_range(2..=12);
        let observers = world.rng().gen_range(0..=2);
        for _ in 0..candidates {
            let mut election: Election = Election::new(DIR).expect("valid path");
            if world.rng().gen_bool(0.3) {
                let limit = world.rng().gen_range(20..300);
                election.set_lost_after(Some(limit));
            }
            let p = world.add_peer(Either::A(election));
            // Half the candidates are told their session id up front, as the
            // tokio driver does; the others learn it from their own node.
            if world.rng().gen_bool(0.5) {
                let session_id = world.peers[p].session();
                world.act(p, |r| {
                    r.handle_session(Instant::ZERO, SessionEvent::Connected { session_id })
                });
            }
        }
        for _ in 0..observers {
            let p = world.add_peer(Either::B(Observer::new(DIR).expect("valid path")));
            world.act(p, |r| {
                if let Either::B(o) = r {
                    o.watch();
                }
            });
        }
        Run {
            world,
            candidates,
            app: vec![App::Idle; candidates],
            step: 0,
            leaderships: 0,
            abandoned: Abandoned::default(),
        }
    }

    /// Application-level reactions to the events, checking their order.
    fn absorb_events(&mut self) -> Result<(), String> {
        for i in 0..self.world.peers.len() {
            for event in self.world.peers[i].take_events() {
                let event = match event {
                    Either::A(e) => e,
                    // Observers are checked against the server once quiet.
                    Either::B(ObserverEvent::Failed(e)) => {
                        return Err(format!("observer {i}: failed with {e}"))
                    }
                    Either::B(_) => continue,
                };
                let before = self.app[i];
                let state = candidate(&self.world, i).state();
                if support::tracing() {
                    println!("  event {i}: {event:?}");
                }
                self.app[i] = match (event, before) {
                    (ElectionEvent::Following { .. }, App::Campaigning) => before,
                    (ElectionEvent::Leading, App::Campaigning) => {
                        self.leaderships += 1;
                        let hold = self.world.rng().gen_range(1..40);
                        App::Leading {
                            resign_at: self.step + hold,
                        }
                    }
                    (ElectionEvent::Suspended | ElectionEvent::Resumed, App::Leading { .. }) => {
                        before
                    }
                    (ElectionEvent::Lost, App::Leading { .. }) => App::Idle,
                    (ElectionEvent::Resigned, App::Resigning)
                    | (ElectionEvent::TimedOut | ElectionEvent::Failed(_), App::Campaigning) => {
                        App::Idle
                    }
                    // The session ended while waiting.
                    (ElectionEvent::Failed(_), App::Resigning) => App::Idle,
                    _ => return Err(format!("candidate {i}: {event:?} while {before:?}")),
                };
                let ends = matches!(
                    event,
                    ElectionEvent::Resigned | ElectionEvent::TimedOut | ElectionEvent::Failed(_)
                );
                if ends && state != ElectionState::Idle {
                    return Err(format!(
                        "candidate {i}: {event:?} but the state is {state:?}"
                    ));
                }
            }
        }
        Ok(())
    }

    /// At most one leader, and it is the one the server says; once its
    /// session is quiet, the acknowledgement names it.
    fn check_leadership(&self) -> Result<(), String> {
        let zk = &self.world.zk;
        let mut leader = None;
        for i in 0..self.candidates {
            let p = &self.world.peers[i];
            let c = candidate(&self.world, i);
            if !(c.is_leading() && zk.is_live(p.session())) {
                continue;
            }
            if let Some(other) = leader {
                return Err(format!(
                    "step {}: candidates {other} and {i} both believe they lead",
                    self.step
                ));
            }
            leader = Some(i);
            let own = c.own_node().map(str::to_owned);
            let lowest = lowest_candidate(&self.world);
            if own.is_none() || lowest.as_ref().map(|(n, _)| n) != own.as_ref() {
                return Err(format!(
                    "step {}: candidate {i} leads with {own:?} but the lowest is {lowest:?}",
                    self.step
                ));
            }
            if lowest.map(|(_, owner)| owner) != Some(p.session()) {
                return Err(format!(
                    "step {}: candidate {i} leads with a node of another session",
                    self.step
                ));
            }
            let ack = zk.node(ACK).map(|n| n.data.clone());
            let named = ack
                .as_deref()
                .and_then(Acknowledgement::parse)
                .map(|a| a.node.to_owned());
            // `Leading` is reported as the acknowledgement is sent: it may
            // lag while the leader's requests or their answers are on the
            // way, never once its session is quiet.
            let quiet =
                zk.pending_requests(p.session()) == 0 && zk.pending_deliveries(p.session()) == 0;
            if named != own && quiet {
                return Err(format!(
                    "step {}: candidate {i} leads with {own:?} but the acknowledgement names {named:?}",
                    self.step
                ));
            }
        }
        Ok(())
    }

    /// Gives candidates whose session ended a new one, as both transports
    /// do, after a random delay: a campaign in between waits for it.
    fn renew_ended_sessions(&mut self) {
        for i in 0..self.world.peers.len() {
            if self.world.session_ended(i) && self.world.rng().gen_bool(0.3) {
                self.world.renew_session(i);
            }
        }
    }

    fn start_or_stop_work(&mut self, may_start: bool) -> Result<(), String> {
        for i in 0..self.candidates {
            let state = candidate(&self.world, i).state();
            match self.app[i] {
                App::Idle
                    if may_start
                        && state == ElectionState::Idle
                        && self.world.rng().gen_bool(0.05) =>
                {
                    let g = guid(&mut self.world);
                    let timed = self.world.rng().gen_bool(0.3);
                    let deadline = self.world.now() + self.world.rng().gen_range(1..200);
                    let data = format!("c{i}").into_bytes();
                    let result = self.world.act(i, |r| {
                        let c = r.a_mut().expect("a candidate");
                        if timed {
                            c.campaign_until(g, &data, deadline)
                        } else {
                            c.campaign(g, &data)
                        }
                    });
                    match result {
                        Ok(()) => self.app[i] = App::Campaigning,
                        // No session is ever closed here: one that expired
                        // is renewed, and work started meanwhile waits for it.
                        Err(e) => return Err(format!("candidate {i}: campaign refused: {e}")),
                    }
                }
                App::Campaigning if may_start && self.world.rng().gen_bool(0.005) => {
                    self.resign(i)?;
                }
                App::Leading { resign_at }
                    if (self.step >= resign_at || !may_start)
                        && state == ElectionState::Leading =>
                {
                    self.resign(i)?;
                }
                _ => {}
            }
        }
        self.absorb_events()
    }

    fn resign(&mut self, i: usize) -> Result<(), String> {
        self.world
            .act(i, |r| r.a_mut().expect("a candidate").resign())
            .map_err(|e| format!("candidate {i}: resign refused: {e}"))?;
        self.app[i] = App::Resigning;
        Ok(())
    }

    /// CURATOR-696: a candidate's connection drops and its client comes
    /// back on a *new* session, while the old one (and its nodes) lives on
    /// until the server gets round to expiring it.
    fn move_to_new_session(&mut self) -> Result<(), String> {
        let i = self.world.rng().gen_range(0..self.candidates);
        let Some(old) = session_moves::cut(&mut self.world, i) else {
            return Ok(());
        };
        self.absorb_events()?;
        self.abandoned.move_on(&mut self.world, i, old, self.step);
        self.absorb_events()
    }

    fn one_step(&mut self, may_start: bool) -> Result<bool, String> {
        self.start_or_stop_work(may_start)?;
        if may_start && self.world.rng().gen_bool(0.003) {
            self.move_to_new_session()?;
        }
        self.abandoned
            .expire_due(&mut self.world, self.step, !may_start);
        let taken = self.world.step();
        support::stuck::timers_settle(&self.world)?;
        let stepped = taken.is_some();
        self.step += 1;
        if support::tracing() {
            println!("step {} {taken:?}", self.step);
            for (i, p) in self.world.peers.iter().enumerate() {
                if let Some(c) = p.recipe.a() {
                    println!("  {i} s{:x} {:?} {c:?}", p.session(), self.app[i]);
                }
            }
            println!(
                "  ack {:?}",
                self.world
                    .zk
                    .node(ACK)
                    .map(|n| String::from_utf8_lossy(&n.data).into_owned())
            );
        }
        self.absorb_events()?;
        self.renew_ended_sessions();
        self.absorb_events()?;
        self.check_leadership()?;
        Ok(stepped)
    }

    fn faulty_phase(&mut self, steps: usize) -> Result<(), String> {
        self.world.faults = Faults::FREQUENT;
        for _ in 0..steps {
            self.one_step(true)?;
        }
        Ok(())
    }

    /// Faults off: every campaign ends in leadership (then a resignation),
    /// and nothing is left behind.
    fn settle(&mut self) -> Result<(), String> {
        self.world.faults = Faults::NONE;
        for _ in 0..200_000 {
            let stepped = self.one_step(false)?;
            let all_idle = self.app.iter().all(|a| *a == App::Idle)
                && (0..self.candidates)
                    .all(|i| candidate(&self.world, i).state() == ElectionState::Idle);
            let renewed = (0..self.world.peers.len()).all(|i| !self.world.session_ended(i));
            if !stepped && renewed && all_idle && !self.world.busy() {
                self.check_nothing_left()?;
                return self.check_observers(None);
            }
        }
        stuck::not_recovered(
            &self.world,
            DIR,
            "not every campaign ended",
            |i| self.app.get(i).is_some_and(|a| *a != App::Idle),
            |i| self.app.get(i),
        )
    }

    fn check_nothing_left(&self) -> Result<(), String> {
        stuck::nothing_left(&self.world, DIR, "nodes left after everyone resigned")
    }

    /// Every observer names `leader` (a node name), or nobody.
    fn check_observers(&self, leader: Option<&str>) -> Result<(), String> {
        for i in self.candidates..self.world.peers.len() {
            let o = self.world.peers[i].recipe.b().expect("an observer");
            let seen = o.leader().map(|a| a.node);
            if seen != leader {
                return Err(format!(
                    "observer {i} sees {seen:?} as leader, not {leader:?}"
                ));
            }
        }
        Ok(())
    }

    /// Fault-free succession: each resignation wakes exactly one candidate.
    fn succession(&mut self) -> Result<(), String> {
        let n = self.candidates;
        for i in 0..n {
            let g = guid(&mut self.world);
            self.world
                .act(i, |r| r.a_mut().expect("a candidate").campaign(g, b"next"))
                .map_err(|e| format!("candidate {i}: {e}"))?;
            self.world.run_until_quiet(10_000);
        }
        let mut order: Vec<(usize, herdless_core::Sequence)> = (0..n)
            .map(|i| {
                let seq = candidate(&self.world, i)
                    .own_sequence()
                    .ok_or(format!("candidate {i} has no node"))?;
                Ok((i, seq))
            })
            .collect::<Result<_, String>>()?;
        order.sort_by(|a, b| a.1.order(b.1));
        for (k, &(leader, _)) in order.iter().enumerate() {
            let leaders: Vec<usize> = (0..n)
                .filter(|&i| candidate(&self.world, i).is_leading())
                .collect();
            if leaders != [leader] {
                return Err(format!(
                    "succession {k}: leaders {leaders:?}, expected [{leader}]"
                ));
            }
            self.check_observers(candidate(&self.world, leader).own_node())?;
            let sessions: Vec<i64> = (0..n)
                .filter(|&i| i != leader)
                .map(|i| self.world.peers[i].session())
                .collect();
            let before: u64 = sessions
                .iter()
                .map(|s| self.world.zk.notifications_delivered(*s))
                .sum();
            self.world
                .act(leader, |r| r.a_mut().expect("a candidate").resign())
                .map_err(|e| e.to_string())?;
            self.world.run_until_quiet(10_000);
            let woken = sessions
                .iter()
                .map(|s| self.world.zk.notifications_delivered(*s))
                .sum::<u64>()
                - before;
            let waiting = n - k - 1;
            let expected = u64::from(waiting > 0);
            if woken != expected {
                return Err(format!(
                    "resignation {k} woke {woken} candidates with {waiting} waiting (expected {expected})"
                ));
            }
            if candidate(&self.world, leader).state() != ElectionState::Idle {
                return Err(format!("succession {k}: the resigned leader is not idle"));
            }
        }
        self.check_nothing_left()?;
        self.check_observers(None)
    }
}

fn run_schedule(seed: u64) -> Result<usize, String> {
    run_with(seed, false)
}

fn run_with(seed: u64, lagging: bool) -> Result<usize, String> {
    let mut run = Run::new(seed);
    run.world.zk.set_lagging_reads(lagging);
    let steps = run.world.rng().gen_range(50..300);
    run.faulty_phase(steps)?;
    run.settle()?;
    for p in &mut run.world.peers {
        p.take_events();
    }
    run.succession()?;
    Ok(run.leaderships)
}

/// A schedule on lagging servers in which a candidate must act on the
/// lost-connection answer of the no-op write ahead of its search: ignoring
/// it (leaving the answer to the listing behind) leaves campaigns that
/// never end. Pinned, as the mutation runs use fewer schedules than the
/// seed it takes.
#[test]
fn a_lost_catch_up_write_is_a_lost_connection() {
    run_with(473, true).unwrap();
}

/// The same schedules with every read served by a server that may be
/// behind the quorum: a candidate whose create's answer was lost must find
/// its node though its new server has not applied the create yet.
#[test]
fn one_leader_at_a_time_and_progress_on_lagging_servers() {
    let (leaderships, secs) =
        support::for_each_seed("election_sim", DEFAULT_SCHEDULES / 4, |seed| {
            run_with(seed, true)
        });
    println!(
        "{} seeded schedules on lagging servers ({} leaderships) in {secs:.1} s",
        leaderships.len(),
        leaderships.iter().sum::<usize>()
    );
}

#[test]
fn one_leader_at_a_time_acknowledged_and_herd_free_under_seeded_faults() {
    let (leaderships, secs) =
        support::for_each_seed("election_sim", DEFAULT_SCHEDULES, run_schedule);
    println!(
        "{} seeded schedules ({} leaderships under faults) in {secs:.1} s",
        leaderships.len(),
        leaderships.iter().sum::<usize>()
    );
}
