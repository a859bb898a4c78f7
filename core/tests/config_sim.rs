//! The configuration watch and its compare-and-set writes under seeded
//! random schedules and faults, on the in-memory ZooKeeper.
//!
//! Writers increment a counter kept in the node by compare-and-set against
//! the version they last saw; watchers only watch. Every peer watches. With
//! connections dropping, replies of applied writes lost and sessions
//! expiring, on every step:
//!
//! * every version a peer reports is newer than the one before, and the
//!   value it reports is exactly what the node held at that version;
//! * every `Updated { version }` a writer hears names a version that holds
//!   exactly what that writer wrote (a lost reply is resolved, never
//!   guessed);
//!
//! * a `TooLarge { version }` names a version whose data was over the
//!   embedded driver's receive buffer (the faults make some writes so), and
//!   versions reported that way count in the order too;
//!
//! and once faults stop and everything is quiet: every peer holds the node's
//! current value (or, if it is over the buffer, knows its version and holds
//! none), and the counter equals the number of `Updated` events (no
//! increment lost, none applied twice).
//!
//! Replay a failing seed with
//! `HERDLESS_SEED=<seed> cargo test -p herdless-core --test config_sim`; run
//! more with `HERDLESS_SCHEDULES=<n>`.

mod support;

use std::collections::BTreeMap;

use herdless_core::config::{Config, ConfigEvent};
use herdless_core::sim::{Faults, World};
use herdless_core::Version;
use rand::Rng;

const PATH: &str = "/app/config";
const DEFAULT_SCHEDULES: u64 = 10_000;

type Cfg = Config<64>;

struct Run {
    world: World<Cfg>,
    writers: usize,
    /// Version -> data, as the server held them, and whether it was over
    /// the embedded driver's receive buffer.
    history: BTreeMap<i32, (Vec<u8>, bool)>,
    /// Last version each peer reported.
    reported: Vec<Option<i32>>,
    /// What each writer's pending write carries.
    pending: Vec<Option<Vec<u8>>>,
    sequence: Vec<u32>,
    updates: u64,
    /// Writes reported `Unknown`, and how many of them did land.
    unknown: u64,
    unknown_landed: u64,
    step: usize,
    /// Reads may come from a server behind the quorum.
    lagging: bool,
}

fn counter(data: &[u8]) -> Result<u64, String> {
    let text = std::str::from_utf8(data).map_err(|e| e.to_string())?;
    text.split('|')
        .next()
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| format!("malformed value {text:?}"))
}

impl Run {
    fn new(seed: u64) -> Self {
        let mut world: World<Cfg> = World::new(seed);
        world
            .zk
            .create_persistent(PATH, b"0|init|0")
            .expect("create the config node");
        let writers = world.rng().gen_range(1..=5);
        let watchers = world.rng().gen_range(1..=3);
        for _ in 0..writers + watchers {
            let i = world.add_peer(Config::new(PATH).expect("valid path"));
            world.act(i, |c| c.watch());
        }
        let n = writers + watchers;
        let mut run = Run {
            world,
            writers,
            history: BTreeMap::new(),
            reported: vec![None; n],
            pending: vec![None; n],
            sequence: vec![0; n],
            updates: 0,
            unknown: 0,
            unknown_landed: 0,
            step: 0,
            lagging: false,
        };
        run.record();
        run
    }

    fn n(&self) -> usize {
        self.reported.len()
    }

    /// Every write takes one step, so sampling after each step sees every
    /// version the node ever had.
    fn record(&mut self) {
        if let Some(node) = self.world.zk.node(PATH) {
            self.history
                .entry(node.stat.version)
                .or_insert_with(|| (node.data.clone(), node.oversized));
        }
    }

    fn absorb_events(&mut self) -> Result<(), String> {
        for i in 0..self.n() {
            for event in self.world.peers[i].take_events() {
                if support::tracing() {
                    println!("  peer {i}: {event:?} {:?}", self.world.peers[i].recipe);
                }
                match event {
                    ConfigEvent::Changed { version } => {
                        if self.reported[i].is_some_and(|v| version <= v) {
                            return Err(format!(
                                "peer {i}: version {version} reported after {:?}",
                                self.reported[i]
                            ));
                        }
                        self.reported[i] = Some(version);
                        let held = self.history.get(&version).map(|(data, _)| data);
                        let value = self.world.peers[i].recipe.value();
                        // The value shown is the newest; it may be newer
                        // than this event if several arrived in one batch.
                        let newest = self.world.peers[i].recipe.version();
                        if newest == Some(version) && value != held.map(|v| &v[..]) {
                            return Err(format!(
                                "peer {i}: version {version} shows {value:?}, server had {held:?}"
                            ));
                        }
                    }
                    ConfigEvent::TooLarge { version, .. } => {
                        if self.reported[i].is_some_and(|v| version <= v) {
                            return Err(format!(
                                "peer {i}: version {version} reported too large after {:?}",
                                self.reported[i]
                            ));
                        }
                        self.reported[i] = Some(version);
                        if !self.history.get(&version).is_some_and(|(_, over)| *over) {
                            return Err(format!(
                                "peer {i}: version {version} reported too large, the server had {:?}",
                                self.history.get(&version)
                            ));
                        }
                        if self.world.peers[i].recipe.version() == Some(version)
                            && self.world.peers[i].recipe.value().is_some()
                        {
                            return Err(format!("peer {i}: version {version} too large but shown"));
                        }
                    }
                    ConfigEvent::Updated { version } => {
                        let wrote = self.pending[i]
                            .take()
                            .ok_or_else(|| format!("peer {i}: Updated without a write"))?;
                        let held = self.history.get(&version).map(|(data, _)| data);
                        if held != Some(&wrote) {
                            return Err(format!(
                                "peer {i}: Updated at version {version} but the server had {:?} there, not {:?}",
                                held.map(|d| String::from_utf8_lossy(d)),
                                String::from_utf8_lossy(&wrote)
                            ));
                        }
                        self.updates += 1;
                    }
                    ConfigEvent::Conflict | ConfigEvent::WriteFailed(_) => {
                        let wrote = self.pending[i]
                            .take()
                            .ok_or_else(|| format!("peer {i}: {event:?} without a write"))?;
                        // A refusal is certain: the data never landed.
                        if self.history.values().any(|(d, _)| *d == wrote) {
                            return Err(format!(
                                "peer {i}: {event:?} but {:?} landed",
                                String::from_utf8_lossy(&wrote)
                            ));
                        }
                    }
                    ConfigEvent::Unknown => {
                        let wrote = self.pending[i]
                            .take()
                            .ok_or_else(|| format!("peer {i}: Unknown without a write"))?;
                        self.unknown += 1;
                        if self.history.values().any(|(d, _)| *d == wrote) {
                            self.unknown_landed += 1;
                        }
                    }
                    ConfigEvent::SessionEnded => {}
                    // A server that has not applied the node's creation
                    // (the setup's) says it is missing.
                    ConfigEvent::Missing if self.lagging => {}
                    other => return Err(format!("peer {i}: unexpected {other:?}")),
                }
            }
        }
        Ok(())
    }

    fn write_sometimes(&mut self, may_start: bool) -> Result<(), String> {
        for i in 0..self.writers {
            if !may_start || self.pending[i].is_some() || !self.world.rng().gen_bool(0.1) {
                continue;
            }
            let recipe = &self.world.peers[i].recipe;
            let (Some(value), Some(version)) = (recipe.value(), recipe.version()) else {
                continue;
            };
            let next = counter(value)? + 1;
            self.sequence[i] += 1;
            let data = format!("{next}|w{i}|{}", self.sequence[i]).into_bytes();
            let sent = data.clone();
            self.world
                .act(i, |c| c.set(&sent, Version::Exactly(version)))
                .map_err(|e| format!("writer {i}: set refused: {e}"))?;
            self.pending[i] = Some(data);
        }
        Ok(())
    }

    fn one_step(&mut self, may_start: bool) -> Result<bool, String> {
        self.write_sometimes(may_start)?;
        let taken = self.world.step();
        support::stuck::timers_settle(&self.world)?;
        if support::tracing() {
            println!("step {}: {taken:?}", self.step);
        }
        let stepped = taken.is_some();
        self.step += 1;
        self.record();
        self.absorb_events()?;
        self.world.renew_ended_sessions();
        self.record();
        self.absorb_events()?;
        Ok(stepped)
    }

    fn settle(&mut self) -> Result<(), String> {
        self.world.faults = Faults::NONE;
        for _ in 0..100_000 {
            let stepped = self.one_step(false)?;
            if !stepped && !self.world.busy() && self.pending.iter().all(Option::is_none) {
                return self.check_converged();
            }
        }
        Err(format!(
            "no quiet after faults stopped: pending {:?}, peers {:?}",
            self.pending,
            self.world
                .peers
                .iter()
                .map(|p| format!("{:?}", p.recipe))
                .collect::<Vec<_>>()
        ))
    }

    fn check_converged(&self) -> Result<(), String> {
        let node = self.world.zk.node(PATH).ok_or("the config node is gone")?;
        // Over the embedded driver's buffer, the value cannot be read.
        let shown = (!node.oversized).then_some(&node.data[..]);
        for (i, p) in self.world.peers.iter().enumerate() {
            if p.recipe.value() != shown || p.recipe.version() != Some(node.stat.version) {
                return Err(format!(
                    "peer {i} holds {:?} v{:?}, the node {:?} v{}",
                    p.recipe.value().map(String::from_utf8_lossy),
                    p.recipe.version(),
                    String::from_utf8_lossy(&node.data),
                    node.stat.version
                ));
            }
        }
        // Every increment that landed was reported Updated, except those
        // honestly reported Unknown.
        let count = counter(&node.data)?;
        if count != self.updates + self.unknown_landed {
            return Err(format!(
                "counter is {count} but {} increments were reported and {} unknown ones landed",
                self.updates, self.unknown_landed
            ));
        }
        Ok(())
    }
}

fn run_schedule(seed: u64) -> Result<(u64, u64), String> {
    run_with(seed, false)
}

fn run_with(seed: u64, lagging: bool) -> Result<(u64, u64), String> {
    let mut run = Run::new(seed);
    run.lagging = lagging;
    run.world.zk.set_lagging_reads(lagging);
    run.world.faults = Faults::FREQUENT;
    let steps = run.world.rng().gen_range(50..400);
    for _ in 0..steps {
        run.one_step(true)?;
    }
    run.settle()?;
    Ok((run.updates, run.unknown))
}

/// The same schedules with every read served by a server that may be
/// behind the quorum: a write whose answer was lost is judged by the node
/// as read after the reconnect, and a server that has not applied it yet
/// would show the version it was aimed at: sent again, refused, and
/// reported a conflict though it landed.
#[test]
fn a_lost_writes_outcome_is_told_truly_on_lagging_servers() {
    let (runs, secs) = support::for_each_seed("config_sim", DEFAULT_SCHEDULES / 5, |seed| {
        run_with(seed, true)
    });
    let updates: u64 = runs.iter().map(|(u, _)| u).sum();
    println!(
        "{} seeded schedules on lagging servers ({updates} increments) in {secs:.1} s",
        runs.len()
    );
}

#[test]
fn config_delivers_every_latest_version_and_loses_no_update_under_faults() {
    let (runs, secs) = support::for_each_seed("config_sim", DEFAULT_SCHEDULES, run_schedule);
    let updates: u64 = runs.iter().map(|(u, _)| u).sum();
    let unknown: u64 = runs.iter().map(|(_, k)| k).sum();
    println!(
        "{} seeded schedules ({updates} compare-and-set increments under faults, {unknown} outcomes unknown) in {secs:.1} s",
        runs.len()
    );
}

#[test]
fn a_missing_node_is_reported_then_its_creation() {
    let mut world: World<Cfg> = World::new(5);
    let watcher = world.add_peer(Config::new("/app/late").unwrap());
    let writer = world.add_peer(Config::new("/app/late").unwrap());
    world.zk.create_persistent("/app", b"").unwrap();
    world.act(watcher, |c| c.watch());
    assert!(world.run_until_quiet(1_000));
    assert_eq!(
        world.peers[watcher].take_events(),
        vec![ConfigEvent::Missing]
    );
    // The creation watch is the only watch left, and the intended one.
    assert_eq!(world.zk.watch_count(), 1);

    world.act(writer, |c| c.create(b"v1")).unwrap();
    assert!(world.run_until_quiet(1_000));
    assert_eq!(
        world.peers[writer].take_events(),
        vec![ConfigEvent::Updated { version: 0 }]
    );
    assert_eq!(
        world.peers[watcher].take_events(),
        vec![ConfigEvent::Changed { version: 0 }]
    );
    assert_eq!(world.peers[watcher].recipe.value(), Some(&b"v1"[..]));

    // A second create conflicts; a stale compare-and-set too.
    world.act(writer, |c| c.create(b"v2")).unwrap();
    assert!(world.run_until_quiet(1_000));
    assert_eq!(
        world.peers[writer].take_events(),
        vec![ConfigEvent::Conflict]
    );
    world
        .act(writer, |c| c.set(b"v2", Version::Exactly(7)))
        .unwrap();
    assert!(world.run_until_quiet(1_000));
    assert_eq!(
        world.peers[writer].take_events(),
        vec![ConfigEvent::Conflict]
    );
    assert_eq!(world.peers[watcher].take_events(), vec![]);
}

#[test]
fn a_value_larger_than_the_buffer_is_reported_not_truncated() {
    let mut world: World<Config<4>> = World::new(9);
    world.zk.create_persistent("/app/big", b"small").unwrap();
    let watcher = world.add_peer(Config::new("/app/big").unwrap());
    world.act(watcher, |c| c.watch());
    assert!(world.run_until_quiet(1_000));
    assert_eq!(
        world.peers[watcher].take_events(),
        vec![ConfigEvent::TooLarge { version: 0, len: 5 }]
    );
    assert_eq!(world.peers[watcher].recipe.value(), None);
    assert_eq!(
        world.act(watcher, |c| c.set(b"12345", Version::Any)),
        Err(herdless_core::config::Error::TooLarge {
            len: 5,
            capacity: 4
        })
    );
}
