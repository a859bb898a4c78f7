//! The shared (read/write) lock and revocation under seeded random
//! schedules and faults, on the in-memory ZooKeeper.
//!
//! Every schedule runs up to 16 contenders in one directory, each a reader,
//! a writer or an exclusive lock, named in any of the three flavours
//! (recipes page, Curator, Kazoo), some of them revocable (and of those,
//! some consent to a revocation request and some never do), up to two
//! requesters that revoke contenders' nodes, plainly or forced after a
//! random grace period, and an operator who now and then deletes a
//! contender's node. One schedule in four starts with the directory's
//! sequence counter just below its wrap. Three phases:
//!
//! 1. faults on: contenders acquire (blocking, try, with a deadline), hold,
//!    release and cancel while connections drop, replies of applied writes
//!    are lost, sessions expire (expired peers get a new session), the
//!    operator deletes nodes, and now and then a contender's client comes
//!    back on a new session while the old one, and its node, lives on a
//!    while (CURATOR-696);
//! 2. faults off: nobody starts anew, holders release, every waiter must be
//!    served, every revocation must end; afterwards no lock node remains;
//! 3. fault-free, readers share: a writer holds, every reader queues behind
//!    it, then a second writer; the first writer's release must let every
//!    reader in at once (woken by one notification each, with no listing),
//!    and the second writer only after the last reader is gone.
//!
//! On every step of phases 1 and 2, against the server's ground truth read
//! by the tests' own oracle (`support::oracle`, not the crate's naming):
//!
//! * every contender holding with a live session and an existing node is
//!   one of the nodes that may hold now (the lowest if it excludes, else
//!   the readers below the lowest excluder), and that node is its current
//!   session's;
//! * a contender reports `Acquired` only while its own node exists;
//! * a holder whose node is gone had it deleted by a forced revocation or
//!   by the operator;
//! * a waiter watches exactly its next-lower node of the kind it waits for
//!   (a reader: the next-lower writer), and the server holds no watch of a
//!   contender's session on anything else: a reader can only ever be woken
//!   by a writer (or its own node, when revocable); no creation and no
//!   child watches.
//!
//! A failure names its seed. Replay one with
//! `HERDLESS_SEED=<seed> cargo test -p herdless-core --test rwlock_sim`, and
//! run more with `HERDLESS_SCHEDULES=<n>`.

mod support;

use std::collections::BTreeSet;

use herdless_core::lock::{Contender, Lock, LockEvent, LockState};
use herdless_core::naming::{Flavour, Guid};
use herdless_core::revoke::{Revoke, RevokeEvent};
use herdless_core::sim::{Either, Faults, SessionStatus, World};
use herdless_core::Instant;
use rand::Rng;
use support::oracle::{self, created_before, Kind};
use support::session_moves::{self, Abandoned};
use support::stuck;

const DIR: &str = "/locks/rw";
const DEFAULT_SCHEDULES: u64 = 3_000;

type Peer = Either<Lock, Revoke>;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum App {
    Idle,
    Waiting,
    Holding {
        release_at: usize,
    },
    Releasing,
    /// `cancel` was called while waiting: the lock must not be acquired.
    Cancelling,
}

/// How a contender answers a revocation request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Manners {
    /// Not revocable at all.
    Plain,
    /// Revocable; releases (or cancels) soon after a request.
    Consents,
    /// Revocable; ignores requests (only a forced revocation removes it).
    Stubborn,
}

#[derive(Debug, Default)]
struct Totals {
    acquisitions: usize,
    shared_holds: usize,
    requested: usize,
    forced: usize,
    consented: usize,
}

struct Run {
    world: World<Peer>,
    /// Contenders are peers `0..contenders`; revokers follow.
    contenders: usize,
    app: Vec<App>,
    manners: Vec<Manners>,
    /// Nodes a forced revocation was started on.
    forced_targets: BTreeSet<String>,
    /// Nodes the operator deleted (while nothing was on its way to their
    /// owners).
    operator_deleted: BTreeSet<String>,
    /// Reads may come from a server behind the quorum.
    lagging: bool,
    step: usize,
    totals: Totals,
    /// Sessions left behind by a move to a new one, and the step at which
    /// the server gets round to expiring each.
    abandoned: Abandoned,
}

fn guid(world: &mut World<Peer>) -> Guid {
    Guid::from_random_bytes(world.rng().gen())
}

fn lock(world: &World<Peer>, i: usize) -> &Lock {
    world.peers[i].recipe.a().expect("a contender")
}

fn revoker(world: &World<Peer>, i: usize) -> &Revoke {
    world.peers[i].recipe.b().expect("a revoker")
}

fn name_of(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

impl Run {
    fn new(seed: u64) -> Self {
        let mut world: World<Peer> = World::new(seed);
        let n = world.rng().gen_range(2..=16);
        let writer_share = world.rng().gen_range(0.1..0.6);
        if world.rng().gen_bool(0.25) {
            // Just below the wrap: the counter passes 2147483647 and goes on
            // with eleven-character negative suffixes.
            let start = i32::MAX - world.rng().gen_range(0..20);
            world.zk.create_persistent(DIR, b"").expect("a directory");
            world.zk.set_cversion(DIR, start).expect("a directory");
        }
        let mut manners = Vec::new();
        for _ in 0..n {
            let contender = if world.rng().gen_bool(writer_share) {
                if world.rng().gen_bool(0.5) {
                    Contender::Writer
                } else {
                    Contender::Exclusive
                }
            } else {
                Contender::Reader
            };
            let flavour = match world.rng().gen_range(0..3) {
                0 => Flavour::Recipes,
                1 => Flavour::Curator,
                _ => Flavour::Kazoo,
            };
            let lock: Lock = Lock::with_contender(DIR, contender, flavour).expect("valid path");
            let m = match world.rng().gen_range(0..4) {
                0 | 1 => Manners::Plain,
                2 => Manners::Consents,
                _ => Manners::Stubborn,
            };
            let lock = if m == Manners::Plain {
                lock
            } else {
                lock.revocable()
            };
            world.add_peer(Either::A(lock));
            manners.push(m);
        }
        let revokers = world.rng().gen_range(0..=2);
        for _ in 0..revokers {
            // Re-targeted before each use.
            world.add_peer(Either::B(
                Revoke::new("/unused/x-lock-0000000001").expect("valid path"),
            ));
        }
        Run {
            world,
            contenders: n,
            app: vec![App::Idle; n],
            manners,
            forced_targets: BTreeSet::new(),
            operator_deleted: BTreeSet::new(),
            lagging: false,
            step: 0,
            totals: Totals::default(),
            abandoned: Abandoned::default(),
        }
    }

    fn absorb_events(&mut self) -> Result<(), String> {
        for i in 0..self.world.peers.len() {
            for event in self.world.peers[i].take_events() {
                match event {
                    Either::A(e) => self.contender_event(i, e)?,
                    Either::B(e) => self.revoker_event(i, e)?,
                }
            }
        }
        Ok(())
    }

    fn contender_event(&mut self, i: usize, event: LockEvent) -> Result<(), String> {
        let before = self.app[i];
        self.app[i] = match event {
            LockEvent::Acquired => {
                if before != App::Waiting {
                    return Err(format!("contender {i}: Acquired while {before:?}"));
                }
                // A forced revocation's delete may overtake an answer on its
                // way; the operator deletes only when nothing is.
                let own = lock(&self.world, i).own_node().unwrap_or("").to_owned();
                // A server behind the operator's delete answers as before it
                // (the notification follows, and the holder hears `Lost`).
                let stale = self.lagging && self.operator_deleted.contains(&own);
                if self.world.zk.node(&format!("{DIR}/{own}")).is_none()
                    && !self.forced_targets.contains(&own)
                    && !stale
                {
                    return Err(format!(
                        "step {}: contender {i} acquired without its node {own:?}",
                        self.step
                    ));
                }
                self.totals.acquisitions += 1;
                let hold = self.world.rng().gen_range(1..30);
                if lock(&self.world, i).revocation_requested()
                    && self.manners[i] == Manners::Consents
                {
                    App::Holding {
                        release_at: self.step,
                    }
                } else {
                    App::Holding {
                        release_at: self.step + hold,
                    }
                }
            }
            LockEvent::RevocationRequested => {
                if self.manners[i] == Manners::Plain {
                    return Err(format!(
                        "contender {i} is not revocable but heard {event:?}"
                    ));
                }
                match before {
                    App::Holding { release_at } if self.manners[i] == Manners::Consents => {
                        self.totals.consented += 1;
                        App::Holding {
                            release_at: release_at.min(self.step + 2),
                        }
                    }
                    App::Waiting
                        if self.manners[i] == Manners::Consents
                            && self.world.rng().gen_bool(0.5) =>
                    {
                        // Acquired already may follow in this batch: the
                        // cancel then releases, and the lock is not taken
                        // from a cancelled waiter.
                        let waiting = lock(&self.world, i).state() == LockState::Acquiring;
                        self.world
                            .act(i, |p| p.a_mut().expect("a contender").cancel())
                            .map_err(|e| format!("contender {i}: cancel refused: {e}"))?;
                        if waiting {
                            App::Cancelling
                        } else {
                            App::Waiting
                        }
                    }
                    other => other,
                }
            }
            LockEvent::Suspended | LockEvent::Resumed => before,
            LockEvent::NotAcquired(_)
            | LockEvent::Failed(_)
            | LockEvent::Lost
            | LockEvent::Released => App::Idle,
            other => return Err(format!("contender {i}: unexpected event {other:?}")),
        };
        let state = lock(&self.world, i).state();
        if self.app[i] == App::Idle && state != LockState::Idle {
            return Err(format!("contender {i}: {event:?} but lock is {state:?}"));
        }
        Ok(())
    }

    fn revoker_event(&mut self, i: usize, event: RevokeEvent) -> Result<(), String> {
        match event {
            RevokeEvent::Requested => self.totals.requested += 1,
            RevokeEvent::Forced => self.totals.forced += 1,
            RevokeEvent::NotFound | RevokeEvent::Released | RevokeEvent::Failed(_) => {}
            other => return Err(format!("revoker {i}: unexpected event {other:?}")),
        }
        Ok(())
    }

    /// The contender nodes on the server, as the oracle reads them: name,
    /// kind, number, owner.
    fn nodes(&self) -> Vec<(String, Kind, i32, i64)> {
        let zk = &self.world.zk;
        zk.children(DIR)
            .unwrap_or_default()
            .into_iter()
            .filter_map(|name| {
                let (kind, seq) = oracle::lock_contender(&name)?;
                let owner = zk
                    .node(&format!("{DIR}/{name}"))
                    .map_or(0, |n| n.stat.ephemeral_owner);
                Some((name, kind, seq, owner))
            })
            .collect()
    }

    /// The invariants of every step; see the module docs.
    fn check(&self) -> Result<(), String> {
        let zk = &self.world.zk;
        let nodes = self.nodes();
        let may_hold = oracle::lock_holders(&zk.children(DIR).unwrap_or_default());
        let step = self.step;
        for i in 0..self.contenders {
            let p = &self.world.peers[i];
            let l = lock(&self.world, i);
            if !(l.is_held() && zk.is_live(p.session())) {
                continue;
            }
            let own = l.own_node().unwrap_or("").to_owned();
            if !nodes.iter().any(|n| n.0 == own) {
                // Once everything on its way has arrived, a holder knows.
                let s = p.session();
                if zk.status(s) == Some(SessionStatus::Connected)
                    && zk.pending_requests(s) == 0
                    && zk.pending_deliveries(s) == 0
                {
                    return Err(format!(
                        "step {step}: contender {i} still holds, all answers in, with its \
                         node {own:?} gone"
                    ));
                }
                if !self.forced_targets.contains(&own) && !self.operator_deleted.contains(&own) {
                    return Err(format!(
                        "step {step}: contender {i} holds with node {own:?}, which is gone \
                         without a forced revocation or the operator"
                    ));
                }
                continue;
            }
            if !may_hold.contains(&own) {
                return Err(format!(
                    "step {step}: contender {i} ({:?}) holds with {own}, but only {may_hold:?} \
                     may hold (nodes {nodes:?})",
                    l.contender()
                ));
            }
            if let Some((_, _, _, owner)) = nodes.iter().find(|n| n.0 == own) {
                if *owner != p.session() {
                    return Err(format!(
                        "step {step}: contender {i} holds on session {} with {own}, a node \
                         of session {owner}",
                        p.session()
                    ));
                }
            }
        }
        self.check_watches(&nodes)
    }

    /// Waiters watch exactly their next-lower blocker; nothing else is
    /// watched by a contender's session.
    fn check_watches(&self, nodes: &[(String, Kind, i32, i64)]) -> Result<(), String> {
        let zk = &self.world.zk;
        let step = self.step;
        for i in 0..self.contenders {
            let p = &self.world.peers[i];
            let l = lock(&self.world, i);
            let waits_for = |k: Kind| l.contender() != Contender::Reader || k == Kind::Exclusive;
            let own_seq = l
                .own_node()
                .and_then(oracle::lock_contender)
                .map(|(_, s)| s);
            if let (Some(pred), Some(own_seq)) = (l.predecessor(), own_seq) {
                let pred_name = name_of(pred);
                let Some((kind, pred_seq)) = oracle::lock_contender(pred_name) else {
                    return Err(format!("step {step}: contender {i} watches {pred}"));
                };
                if !waits_for(kind) || !created_before(pred_seq, own_seq) {
                    return Err(format!(
                        "step {step}: contender {i} ({:?}, seq {own_seq}) waits for {pred_name}",
                        l.contender(),
                    ));
                }
                if nodes.iter().any(|n| n.0 == pred_name) {
                    if let Some(between) = nodes.iter().find(|(_, k, s, _)| {
                        waits_for(*k) && created_before(pred_seq, *s) && created_before(*s, own_seq)
                    }) {
                        return Err(format!(
                            "step {step}: contender {i} waits for {pred_name}, but {} is \
                             closer",
                            between.0
                        ));
                    }
                }
            }
            if !zk.is_live(p.session()) {
                continue;
            }
            // Its own node, even one of a session it left: read again
            // after the move, its owner is how it learns it is not ours.
            let own = |owner: i64| owner == p.session() || self.abandoned.left_by(i, owner);
            for (table, path) in zk.watches_of(p.session()) {
                let name = name_of(&path);
                let node = nodes.iter().find(|n| n.0 == name);
                let allowed = table == "data"
                    && node.is_some_and(|(_, k, _, owner)| own(*owner) || waits_for(*k));
                if !allowed {
                    return Err(format!(
                        "step {step}: contender {i} ({:?}) has a {table} watch on {path}",
                        l.contender()
                    ));
                }
            }
        }
        Ok(())
    }

    /// Gives peers whose session ended a new one, as both transports do,
    /// after a random delay: an `acquire` in between waits for it.
    fn renew_ended_sessions(&mut self) {
        for i in 0..self.world.peers.len() {
            if self.world.session_ended(i) && self.world.rng().gen_bool(0.3) {
                self.world.renew_session(i);
            }
        }
    }

    fn start_or_stop_work(&mut self, may_start: bool) -> Result<(), String> {
        for i in 0..self.contenders {
            match self.app[i] {
                App::Idle if may_start && self.world.rng().gen_bool(0.05) => {
                    let g = guid(&mut self.world);
                    let kind = self.world.rng().gen_range(0..10);
                    let deadline = self.world.now() + self.world.rng().gen_range(1..200);
                    let result = self.world.act(i, |p| {
                        let l = p.a_mut().expect("a contender");
                        match kind {
                            0 => l.try_acquire(g),
                            1 | 2 => l.acquire_until(g, deadline),
                            _ => l.acquire(g),
                        }
                    });
                    match result {
                        Ok(()) => self.app[i] = App::Waiting,
                        // No session is ever closed here: one that expired
                        // is renewed, and work started meanwhile waits for it.
                        Err(e) => return Err(format!("contender {i}: acquire refused: {e}")),
                    }
                }
                App::Waiting if may_start && self.world.rng().gen_bool(0.005) => {
                    self.world
                        .act(i, |p| p.a_mut().expect("a contender").cancel())
                        .map_err(|e| format!("contender {i}: cancel refused: {e}"))?;
                    self.app[i] = App::Cancelling;
                }
                App::Holding { release_at }
                    if (self.step >= release_at || !may_start)
                        && lock(&self.world, i).state() == LockState::Held =>
                {
                    self.world
                        .act(i, |p| p.a_mut().expect("a contender").release())
                        .map_err(|e| format!("contender {i}: release refused: {e}"))?;
                    self.app[i] = App::Releasing;
                }
                _ => {}
            }
        }
        if may_start {
            self.start_revocations();
        }
        self.absorb_events()
    }

    /// Idle revokers pick a revocable contender's node and revoke it.
    fn start_revocations(&mut self) {
        for r in self.contenders..self.world.peers.len() {
            let s = self.world.peers[r].session();
            let quiet = self.world.zk.pending_requests(s) == 0
                && self.world.zk.pending_deliveries(s) == 0
                && self.world.zk.status(s) == Some(SessionStatus::Connected);
            if revoker(&self.world, r).is_running() || !quiet || !self.world.rng().gen_bool(0.03) {
                continue;
            }
            let targets: Vec<String> = (0..self.contenders)
                .filter(|&i| self.manners[i] != Manners::Plain)
                .filter_map(|i| {
                    lock(&self.world, i)
                        .own_path::<128>()
                        .and_then(Result::ok)
                        .map(|p| p.to_string())
                })
                .collect();
            if targets.is_empty() {
                continue;
            }
            let node = targets[self.world.rng().gen_range(0..targets.len())].clone();
            let forced = self.world.rng().gen_bool(0.5);
            let deadline = self.world.now() + self.world.rng().gen_range(1..100);
            if forced {
                self.forced_targets.insert(name_of(&node).to_owned());
            }
            // A fresh requester per node, started only while its session is
            // quiet, so no answer meant for the previous one can reach it.
            self.world.peers[r].recipe = Either::B(Revoke::new(&node).expect("a valid path"));
            let started = self.world.act(r, |p| {
                let revoke = p.b_mut().expect("a revoker");
                if forced {
                    revoke.request_forced(deadline)
                } else {
                    revoke.request()
                }
            });
            assert!(started.is_ok());
        }
    }

    /// CURATOR-696: a contender's connection drops and its client comes
    /// back on a *new* session, while the old one (and its node) lives on
    /// until the server gets round to expiring it.
    fn move_to_new_session(&mut self) -> Result<(), String> {
        let n = self.contenders;
        let i = self.world.rng().gen_range(0..n);
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
        let stepped = self.world.step().is_some();
        support::stuck::timers_settle(&self.world)?;
        self.step += 1;
        self.absorb_events()?;
        self.renew_ended_sessions();
        self.absorb_events()?;
        self.check()?;
        Ok(stepped)
    }

    fn faulty_phase(&mut self, steps: usize) -> Result<(), String> {
        self.world.faults = Faults::FREQUENT;
        for _ in 0..steps {
            self.one_step(true)?;
            if self.world.rng().gen_bool(0.01) {
                self.operator_deletes_a_node();
            }
        }
        Ok(())
    }

    /// An operator breaks the lock: deletes any contender's node, a
    /// holder's or a waiter's. Only while nothing is on its way to the
    /// node's owner, so that everything the owner hears from then on was
    /// answered after the deletion: an `Acquired` without the node is then
    /// the recipe's fault, not an answer older than the deletion.
    fn operator_deletes_a_node(&mut self) {
        let zk = &self.world.zk;
        let nodes: Vec<_> = self
            .nodes()
            .into_iter()
            .filter(|(_, _, _, owner)| zk.pending_deliveries(*owner) == 0)
            .collect();
        if nodes.is_empty() {
            return;
        }
        let k = self.world.rng().gen_range(0..nodes.len());
        let name = nodes[k].0.clone();
        if self.world.zk.delete_node(&format!("{DIR}/{name}")).is_ok() {
            self.operator_deleted.insert(name);
        }
    }

    fn all_idle(&self) -> bool {
        self.app.iter().all(|a| *a == App::Idle)
            && (self.contenders..self.world.peers.len())
                .all(|r| !revoker(&self.world, r).is_running())
    }

    /// Faults off: every waiter served, every revocation ended, no node left.
    fn settle(&mut self) -> Result<(), String> {
        self.world.faults = Faults::NONE;
        for _ in 0..200_000 {
            let stepped = self.one_step(false)?;
            let renewed = (0..self.world.peers.len()).all(|i| !self.world.session_ended(i));
            if !stepped && renewed && self.all_idle() && !self.world.busy() {
                return self.check_no_orphans();
            }
        }
        stuck::not_recovered(
            &self.world,
            DIR,
            "not everyone was served",
            |i| i >= self.contenders || self.app[i] != App::Idle,
            |i| self.app.get(i),
        )
    }

    fn check_no_orphans(&self) -> Result<(), String> {
        stuck::nothing_left(&self.world, DIR, "orphaned lock nodes after recovery")
    }

    fn acquire_quietly(&mut self, i: usize) -> Result<(), String> {
        let g = guid(&mut self.world);
        self.world
            .act(i, |p| p.a_mut().expect("a contender").acquire(g))
            .map_err(|e| format!("contender {i}: {e}"))?;
        self.world.run_until_quiet(10_000);
        Ok(())
    }

    fn held(&self, i: usize) -> bool {
        lock(&self.world, i).is_held()
    }

    /// Releases contender `i` and runs until quiet; returns the watch
    /// notifications this caused for *other* sessions (a revocable lock's
    /// own delete also fires its own watch on its own node).
    fn release_quietly(&mut self, i: usize) -> Result<u64, String> {
        let own = self.world.peers[i].session();
        let total = self.world.zk.stats().notifications;
        let to_self = self.world.zk.notifications_delivered(own);
        self.world
            .act(i, |p| p.a_mut().expect("a contender").release())
            .map_err(|e| format!("contender {i}: {e}"))?;
        self.world.run_until_quiet(10_000);
        let total = self.world.zk.stats().notifications - total;
        let to_self = self.world.zk.notifications_delivered(own) - to_self;
        Ok(total - to_self)
    }

    /// Fault-free: readers queued behind one writer all get in on its
    /// release; a writer behind them waits for the last of them.
    fn readers_share(&mut self) -> Result<(), String> {
        let of = |run: &Run, c: Contender| -> Vec<usize> {
            (0..run.contenders)
                .filter(|&i| lock(&run.world, i).contender() == c)
                .collect()
        };
        let readers = of(self, Contender::Reader);
        // Exclusive locks exclude readers as writers do.
        let mut writers = of(self, Contender::Writer);
        writers.extend(of(self, Contender::Exclusive));
        if readers.is_empty() {
            return Ok(());
        }
        let first = writers.first().copied();
        let last = writers.get(1).copied();
        if let Some(w) = first {
            self.acquire_quietly(w)?;
            if !self.held(w) {
                return Err("the first writer does not hold an idle lock".into());
            }
        }
        for &r in &readers {
            self.acquire_quietly(r)?;
        }
        if let Some(w) = last {
            self.acquire_quietly(w)?;
        }
        if let Some(w) = first {
            if let Some(r) = readers.iter().find(|&&r| self.held(r)) {
                return Err(format!("reader {r} holds together with writer {w}"));
            }
            let listings = self.world.zk.stats().count("getChildren");
            let woken = self.release_quietly(w)?;
            let relisted = self.world.zk.stats().count("getChildren") - listings;
            if woken != readers.len() as u64 || relisted != 0 {
                return Err(format!(
                    "the writer's release with {} readers behind it caused {woken} \
                     notifications and {relisted} listings",
                    readers.len()
                ));
            }
        }
        let holding: Vec<usize> = readers.iter().copied().filter(|&r| self.held(r)).collect();
        if holding.len() != readers.len() {
            return Err(format!(
                "readers {readers:?} queued together, but only {holding:?} hold at once"
            ));
        }
        self.totals.shared_holds += holding.len();
        for (k, &r) in readers.iter().enumerate() {
            if let Some(w) = last {
                if self.held(w) {
                    return Err(format!(
                        "writer {w} holds while {} readers do",
                        readers.len() - k
                    ));
                }
            }
            let woken = self.release_quietly(r)?;
            if woken > 1 {
                return Err(format!("a reader's release caused {woken} notifications"));
            }
        }
        if let Some(w) = last {
            if !self.held(w) {
                return Err(format!("writer {w} does not hold after every reader left"));
            }
            self.release_quietly(w)?;
        }
        for i in 0..self.world.peers.len() {
            self.world.peers[i].take_events();
        }
        self.check_no_orphans()
    }
}

fn run_schedule(seed: u64) -> Result<Totals, String> {
    run_with(seed, false)
}

fn run_with(seed: u64, lagging: bool) -> Result<Totals, String> {
    let mut run = Run::new(seed);
    run.lagging = lagging;
    run.world.zk.set_lagging_reads(lagging);
    let steps = run.world.rng().gen_range(50..250);
    run.faulty_phase(steps)?;
    run.settle()?;
    run.readers_share()?;
    Ok(run.totals)
}

#[test]
fn shared_lock_excludes_writers_lets_readers_share_and_serves_everyone_under_seeded_faults() {
    let (totals, secs) = support::for_each_seed("rwlock_sim", DEFAULT_SCHEDULES, run_schedule);
    let sum = |f: fn(&Totals) -> usize| totals.iter().map(f).sum::<usize>();
    println!(
        "{} seeded schedules in {secs:.1} s: {} acquisitions under faults, {} revocations \
         requested ({} consented to while holding), {} forced; {} readers let in together \
         by a writer's release",
        totals.len(),
        sum(|t| t.acquisitions),
        sum(|t| t.requested),
        sum(|t| t.consented),
        sum(|t| t.forced),
        sum(|t| t.shared_holds),
    );
    // The schedules must actually exercise what they claim to.
    assert!(sum(|t| t.forced) > 0 && sum(|t| t.consented) > 0);
}

/// The same schedules with every read served by a server that may be
/// behind the quorum (a lost create searched for, a listing or a holder's
/// node read from a lagging server).
#[test]
fn shared_lock_keeps_writers_alone_and_serves_everyone_on_lagging_servers() {
    let (totals, secs) = support::for_each_seed("rwlock_sim", DEFAULT_SCHEDULES / 5, |seed| {
        run_with(seed, true)
    });
    println!(
        "{} seeded schedules on lagging servers ({} acquisitions) in {secs:.1} s",
        totals.len(),
        totals.iter().map(|t| t.acquisitions).sum::<usize>()
    );
}

#[test]
fn ten_readers_behind_a_writer_are_woken_by_its_release_alone() {
    let mut world: World<Lock> = World::new(5);
    let w = world.add_peer(Lock::writer(DIR).unwrap());
    world
        .act(w, |l| l.acquire(Guid::from_random_bytes([1; 16])))
        .unwrap();
    world.run_until_quiet(1_000);
    let readers: Vec<usize> = (0..10)
        .map(|k| {
            let r = world.add_peer(Lock::reader(DIR).unwrap());
            world
                .act(r, |l| l.acquire(Guid::from_random_bytes([k + 2; 16])))
                .unwrap();
            r
        })
        .collect();
    world.run_until_quiet(10_000);
    assert!(readers.iter().all(|&r| !world.peers[r].recipe.is_held()));
    let writer_node = format!("{DIR}/{}", world.peers[w].recipe.own_node().unwrap());
    for &r in &readers {
        let own = format!("{DIR}/{}", world.peers[r].recipe.own_node().unwrap());
        let mut watches = world.zk.watches_of(world.peers[r].session());
        watches.sort();
        let mut expected = vec![("data", own), ("data", writer_node.clone())];
        expected.sort();
        assert_eq!(
            watches, expected,
            "each reader watches the writer and itself"
        );
    }
    assert_eq!(world.zk.watch_count(), 21, "and the writer its own node");
    let before = world.zk.stats().clone();
    let writer_heard = world.zk.notifications_delivered(world.peers[w].session());
    world.act(w, |l| l.release()).unwrap();
    world.run_until_quiet(10_000);
    assert!(readers.iter().all(|&r| world.peers[r].recipe.is_held()));
    let after = world.zk.stats();
    let writer_heard = world.zk.notifications_delivered(world.peers[w].session()) - writer_heard;
    assert_eq!(writer_heard, 1, "the writer hears its own node go");
    assert_eq!(
        after.notifications - before.notifications - writer_heard,
        10
    );
    assert_eq!(
        after.count("getChildren"),
        before.count("getChildren"),
        "no reader lists again"
    );
    assert_eq!(
        world.zk.watch_count(),
        10,
        "each holder watches its own node"
    );
}

#[test]
fn a_forced_revocation_removes_a_stubborn_holder_and_lets_the_next_in() {
    let mut world: World<Peer> = World::new(9);
    let holder = world.add_peer(Either::A(Lock::writer(DIR).unwrap().revocable()));
    let waiter = world.add_peer(Either::A(Lock::reader(DIR).unwrap()));
    world
        .act(holder, |p| {
            p.a_mut().unwrap().acquire(Guid::from_random_bytes([1; 16]))
        })
        .unwrap();
    world.run_until_quiet(1_000);
    world
        .act(waiter, |p| {
            p.a_mut().unwrap().acquire(Guid::from_random_bytes([2; 16]))
        })
        .unwrap();
    world.run_until_quiet(1_000);
    let node: String = lock(&world, holder)
        .own_path::<128>()
        .unwrap()
        .unwrap()
        .to_string();
    let requester = world.add_peer(Either::B(Revoke::new(&node).unwrap()));
    let grace = Instant::from_millis(world.now().as_millis() + 250);
    world
        .act(requester, |p| p.b_mut().unwrap().request_forced(grace))
        .unwrap();
    assert!(world.run_until_quiet(10_000));
    assert_eq!(world.now(), grace, "the delete waited for the grace period");
    assert_eq!(
        world.peers[holder].take_events(),
        vec![
            Either::A(LockEvent::Acquired),
            Either::A(LockEvent::RevocationRequested),
            Either::A(LockEvent::Lost)
        ]
    );
    assert_eq!(
        world.peers[requester].take_events(),
        vec![
            Either::B(RevokeEvent::Requested),
            Either::B(RevokeEvent::Forced)
        ]
    );
    assert!(lock(&world, waiter).is_held());
    let own = lock(&world, waiter)
        .own_path::<128>()
        .unwrap()
        .unwrap()
        .to_string();
    assert_eq!(
        world.zk.watches_of(world.peers[waiter].session()),
        vec![("data", own)]
    );
    assert_eq!(world.zk.watch_count(), 1, "no watch left behind");
}

#[test]
fn a_consenting_holder_releases_before_the_grace_period_ends() {
    let mut world: World<Peer> = World::new(10);
    let holder = world.add_peer(Either::A(Lock::reader(DIR).unwrap().revocable()));
    world
        .act(holder, |p| {
            p.a_mut().unwrap().acquire(Guid::from_random_bytes([1; 16]))
        })
        .unwrap();
    world.run_until_quiet(1_000);
    let node: String = lock(&world, holder)
        .own_path::<128>()
        .unwrap()
        .unwrap()
        .to_string();
    let requester = world.add_peer(Either::B(Revoke::new(&node).unwrap()));
    world
        .act(requester, |p| {
            p.b_mut()
                .unwrap()
                .request_forced(Instant::from_millis(10_000))
        })
        .unwrap();
    for _ in 0..10_000 {
        world.step();
        if world.peers[holder]
            .events()
            .contains(&Either::A(LockEvent::RevocationRequested))
        {
            break;
        }
    }
    world.act(holder, |p| p.a_mut().unwrap().release()).unwrap();
    assert!(world.run_until_quiet(10_000));
    assert!(world.now() < Instant::from_millis(10_000));
    assert_eq!(
        world.peers[requester].take_events(),
        vec![
            Either::B(RevokeEvent::Requested),
            Either::B(RevokeEvent::Released)
        ]
    );
    assert_eq!(
        world.peers[holder].take_events(),
        vec![
            Either::A(LockEvent::Acquired),
            Either::A(LockEvent::RevocationRequested),
            Either::A(LockEvent::Released)
        ]
    );
}
