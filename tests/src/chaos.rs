//! Killing an ensemble's servers one at a time while recipes run, and
//! measuring how soon each client acts again.
//!
//! [`kill_in_turn`] alternates between the quorum leader and the server a
//! client's session is connected to, kills it with SIGKILL, leaves it down
//! for a moment, restarts it and waits until it serves again before the next
//! kill, so a quorum always remains. [`Progress`] records each client's
//! successful operations and the errors its application saw; from both,
//! [`Progress::recoveries`] gives the longest time from a kill to each
//! client's next success.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::ZkEnsemble;

/// How long the tests run their kills: `HERDLESS_CHAOS_SECS` (the soak mode,
/// e.g. 1800), or `default`.
pub fn duration(default: Duration) -> Duration {
    std::env::var("HERDLESS_CHAOS_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .map(Duration::from_secs)
        .unwrap_or(default)
}

/// Which server a kill chose.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// The quorum leader.
    Leader,
    /// The server a client's session was connected to (index of the client).
    ClientServer(usize),
}

/// One kill of one server.
#[derive(Debug, Clone)]
pub struct Kill {
    /// The server killed (0-based).
    pub server: usize,
    /// Why it was chosen.
    pub target: Target,
    /// When it was killed.
    pub at: Instant,
    /// Whether it served again after its restart.
    pub back: bool,
    /// How soon after the kill a leader served clients again (at once when
    /// a follower died); `None` if none did while the server was down. An
    /// election can take seconds of ZooKeeper's own, and no client keeps a
    /// session through an outage longer than its timeout.
    pub quorum_back: Option<Duration>,
}

impl Kill {
    /// How long the ensemble served no client after this kill, as far as
    /// was watched: [`quorum_back`](Self::quorum_back), or the whole time
    /// the server was down.
    pub fn outage(&self, down: Duration) -> Duration {
        self.quorum_back.unwrap_or(down)
    }
}

/// Kills servers of `ensemble` one at a time for `duration`: the leader, then
/// the server of client 0's session, then the leader, then client 1's, ...
/// (`sessions` gives the clients' current session ids; 0 for none yet).
/// Each stays down for `down`, then is restarted and waited for.
pub fn kill_in_turn(
    ensemble: &mut ZkEnsemble,
    duration: Duration,
    down: Duration,
    sessions: impl Fn() -> Vec<i64>,
) -> Vec<Kill> {
    kill_in_turn_with(ensemble, duration, down, sessions, |_, _| {})
}

/// As [`kill_in_turn`], calling `machine(server, false)` just before each
/// kill and `machine(server, true)` just before the restart: to take the
/// server's machine off the network with it, say.
pub fn kill_in_turn_with(
    ensemble: &mut ZkEnsemble,
    duration: Duration,
    down: Duration,
    sessions: impl Fn() -> Vec<i64>,
    mut machine: impl FnMut(usize, bool),
) -> Vec<Kill> {
    let started = Instant::now();
    let mut kills = Vec::new();
    let mut turn = 0usize;
    while started.elapsed() < duration {
        let clients = sessions();
        let target = if turn.is_multiple_of(2) || clients.is_empty() {
            Target::Leader
        } else {
            Target::ClientServer((turn / 2) % clients.len())
        };
        turn += 1;
        let server = match target {
            Target::Leader => ensemble.leader(),
            Target::ClientServer(c) => ensemble.server_of_session(clients[c]),
        };
        let Some(server) = server else {
            // No leader elected yet, or the client is between servers.
            std::thread::sleep(Duration::from_millis(200));
            continue;
        };
        let at = Instant::now();
        machine(server, false);
        ensemble.kill(server);
        let quorum_back = serving_within(ensemble, at, down);
        std::thread::sleep(down.saturating_sub(at.elapsed()));
        machine(server, true);
        let back = ensemble.restart(server, Duration::from_secs(60));
        kills.push(Kill {
            server,
            target,
            at,
            back,
            quorum_back,
        });
        // Let the clients work on a whole ensemble for a moment.
        std::thread::sleep(down);
    }
    kills
}

/// How long after `since` a leader of `ensemble` served clients, watched
/// until `within` after it (`mntr` shows no state while a server does not
/// serve, as a leader without its quorum does not).
fn serving_within(ensemble: &ZkEnsemble, since: Instant, within: Duration) -> Option<Duration> {
    while since.elapsed() < within {
        if ensemble.leader().is_some() {
            return Some(since.elapsed());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    None
}

/// What the clients of a run did.
#[derive(Debug)]
pub struct Progress {
    names: Vec<String>,
    successes: Vec<Mutex<Vec<Instant>>>,
    errors: Mutex<Vec<String>>,
}

impl Progress {
    /// Progress of clients with these names.
    pub fn new(names: &[&str]) -> Progress {
        Progress {
            names: names.iter().map(|n| n.to_string()).collect(),
            successes: names.iter().map(|_| Mutex::new(Vec::new())).collect(),
            errors: Mutex::new(Vec::new()),
        }
    }

    /// Client `client` completed an operation.
    pub fn ok(&self, client: usize) {
        self.successes[client]
            .lock()
            .expect("progress lock")
            .push(Instant::now());
    }

    /// Client `client`'s application saw an error.
    pub fn error(&self, client: usize, what: impl std::fmt::Display) {
        let line = format!("{}: {what}", self.names[client]);
        eprintln!("application error: {line}");
        self.errors.lock().expect("progress lock").push(line);
    }

    /// Takes out the errors `forgiven` accepts and returns them: for a run
    /// whose ensemble served no client for longer than a session outlives,
    /// the ends of the sessions are the ensemble's doing, not the clients'.
    pub fn forgive(&self, forgiven: impl Fn(&str) -> bool) -> Vec<String> {
        let mut errors = self.errors.lock().expect("progress lock");
        let (taken, kept) = errors.drain(..).partition(|e| forgiven(e));
        *errors = kept;
        taken
    }

    /// The errors the applications saw.
    pub fn errors(&self) -> Vec<String> {
        self.errors.lock().expect("progress lock").clone()
    }

    /// Operations each client completed.
    pub fn counts(&self) -> Vec<(String, usize)> {
        self.names
            .iter()
            .zip(&self.successes)
            .map(|(n, s)| (n.clone(), s.lock().expect("progress lock").len()))
            .collect()
    }

    /// For each client, the longest time from a fault (at one of `faults`)
    /// to its next success (`None` if a fault was never followed by one).
    pub fn recoveries(&self, faults: &[Instant]) -> Vec<(String, Option<Duration>)> {
        self.names
            .iter()
            .zip(&self.successes)
            .map(|(name, s)| {
                let s = s.lock().expect("progress lock");
                let longest = faults
                    .iter()
                    .map(|&at| s.iter().find(|&&t| t > at).map(|&t| t - at))
                    .try_fold(Duration::ZERO, |acc, r| r.map(|r| acc.max(r)));
                (name.clone(), longest)
            })
            .collect()
    }

    /// Prints the figures of a run and checks them: kills happened and all
    /// servers came back, no application error, every client acted again
    /// within `bound` of every kill.
    pub fn check(&self, recipe: &str, kills: &[Kill], bound: Duration) {
        let servers: Vec<String> = kills
            .iter()
            .map(|k| match k.quorum_back {
                Some(q) => format!(
                    "{}({:?}, served again after {:.2} s)",
                    k.server,
                    k.target,
                    q.as_secs_f64()
                ),
                None => format!(
                    "{}({:?}, no leader served while it was down)",
                    k.server, k.target
                ),
            })
            .collect();
        let at: Vec<Instant> = kills.iter().map(|k| k.at).collect();
        let what = format!("{} kills [{}]", kills.len(), servers.join(" "));
        self.check_after(recipe, &what, &at, bound);
        assert!(kills.len() >= 3, "too few kills: {kills:?}");
        assert!(
            kills.iter().all(|k| k.back),
            "a server did not come back: {kills:?}"
        );
        assert!(
            kills.iter().any(|k| k.target == Target::Leader)
                && kills.iter().any(|k| k.target != Target::Leader),
            "both the leader and a client's server were killed: {kills:?}"
        );
    }

    /// Prints the figures of a run with faults at `faults` (described by
    /// `what`) and checks them: no application error, and every client
    /// acted again within `bound` of every fault.
    pub fn check_after(&self, recipe: &str, what: &str, faults: &[Instant], bound: Duration) {
        let recoveries = self.recoveries(faults);
        println!(
            "{recipe}: {what}; operations {:?}; longest fault-to-next-success {:?}; errors {:?}",
            self.counts(),
            recoveries,
            self.errors()
        );
        assert_eq!(
            self.errors(),
            Vec::<String>::new(),
            "{recipe}: application errors"
        );
        for (name, longest) in recoveries {
            let longest = longest
                .unwrap_or_else(|| panic!("{recipe}: {name} never acted again after a fault"));
            assert!(
                longest <= bound,
                "{recipe}: {name} took {longest:?} to act again after a fault (bound {bound:?})"
            );
        }
    }
}

/// One thing done to the network by [`misbehave`].
#[derive(Debug, Clone)]
pub struct NetFault {
    /// The proxy it was done to.
    pub proxy: usize,
    /// What was done.
    pub what: NetFaultKind,
    /// When.
    pub at: Instant,
}

/// What [`misbehave`] does to a proxy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NetFaultKind {
    /// Traffic held back 100–500 ms per chunk from now on.
    Slow,
    /// Traffic passed on at once again.
    Fast,
    /// The connections open now closed (new ones accepted).
    Reset,
    /// The connections open now made half-open.
    Stall,
}

/// Misbehaves the network behind `proxies` for `duration`, from `seed`, in
/// storms of `storm` each followed by a calm of `calm`: during a storm,
/// every 0.2–1.2 s one proxy, chosen at random, becomes slow (100–500 ms per
/// chunk each way), fast again, has its connections reset, or stalled
/// (half-open, to be noticed by the client's own deadline); slow links stay
/// slow through the calm. Returns what was done, with the delays switched
/// off again at the end.
pub fn misbehave(
    proxies: &[crate::Proxy],
    duration: Duration,
    storm: Duration,
    calm: Duration,
    seed: u64,
) -> Vec<NetFault> {
    let mut rng = fastrand::Rng::with_seed(seed);
    let started = Instant::now();
    let mut storm_began = started;
    let mut faults = Vec::new();
    while started.elapsed() < duration {
        if storm_began.elapsed() >= storm {
            std::thread::sleep(calm);
            storm_began = Instant::now();
            continue;
        }
        std::thread::sleep(Duration::from_millis(rng.u64(200..1200)));
        let proxy = rng.usize(..proxies.len());
        let what = match rng.u8(..20) {
            0..=6 => NetFaultKind::Slow,
            7..=11 => NetFaultKind::Fast,
            12..=17 => NetFaultKind::Reset,
            _ => NetFaultKind::Stall,
        };
        match what {
            NetFaultKind::Slow => {
                proxies[proxy].delay(Duration::from_millis(100), Duration::from_millis(500))
            }
            NetFaultKind::Fast => proxies[proxy].delay(Duration::ZERO, Duration::ZERO),
            NetFaultKind::Reset => proxies[proxy].reset(),
            NetFaultKind::Stall => proxies[proxy].stall(),
        }
        faults.push(NetFault {
            proxy,
            what,
            at: Instant::now(),
        });
    }
    for proxy in proxies {
        proxy.delay(Duration::ZERO, Duration::ZERO);
    }
    faults
}

#[cfg(test)]
mod unit {
    use super::*;

    #[test]
    fn forgiving_takes_out_only_the_errors_forgiven() {
        let progress = Progress::new(&["a", "b"]);
        progress.error(0, "campaign: Recipe(SessionEnded)");
        progress.error(1, "lead: Recipe(Other)");
        progress.error(1, "its session was replaced");
        let forgiven =
            progress.forgive(|e| e.ends_with("(SessionEnded)") || e.ends_with("replaced"));
        assert_eq!(
            forgiven,
            [
                "a: campaign: Recipe(SessionEnded)",
                "b: its session was replaced"
            ]
        );
        assert_eq!(progress.errors(), ["b: lead: Recipe(Other)"]);
    }

    #[test]
    fn an_outage_not_seen_to_end_lasts_the_whole_downtime() {
        let kill = |quorum_back| Kill {
            server: 0,
            target: Target::Leader,
            at: Instant::now(),
            back: true,
            quorum_back,
        };
        let down = Duration::from_secs(7);
        assert_eq!(
            kill(Some(Duration::from_millis(300))).outage(down),
            Duration::from_millis(300)
        );
        assert_eq!(kill(None).outage(down), down);
    }
}
