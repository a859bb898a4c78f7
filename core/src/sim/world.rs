//! A seeded scheduler: many peers, one server, random interleavings and faults.

use alloc::vec::Vec;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::{Instant, Recipe};

use super::peer::Peer;
use super::server::{DriverOrder, SessionStatus, SimZk};
use super::SessionId;

/// Probabilities, per step, of each fault. All zero is a fault-free run.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Faults {
    /// Break a connected session's connection (queued requests are lost,
    /// replies of applied ones too).
    pub disconnect: f64,
    /// Apply a session's next request and break the connection before its
    /// reply arrives.
    pub lose_reply: f64,
    /// Expire a session.
    pub expire: f64,
    /// Reconnect a disconnected session.
    pub reconnect: f64,
    /// Hand a session its next delivery and break its connection before
    /// the driver drains: the recipe hears of the loss with the requests
    /// that delivery made it queue still unsent, as herdless-embassy's
    /// driver may tell it (it hands session events over between a
    /// recipe's requests) and herdless-std's when it starts a recipe on a
    /// client already down. A listing handed over in parts breaks off
    /// after a random number of them, as under herdless-embassy when a
    /// server dies while sending a listing larger than the receive buffer.
    pub cut_before_drain: f64,
    /// Hand a session its next delivery, a listing, as herdless-embassy's
    /// driver does when a name in it is larger than its receive buffer:
    /// the parts before that name (a random number of them), then
    /// `ReplyTooLarge` for the request, the connection kept. Only where
    /// listings go in parts and in the server's order (even seeds, see
    /// [`World::new`]): herdless-std's client reads any frame whole.
    pub too_large: f64,
    /// Make a write (a create or a `setData`) carry data over the embedded
    /// driver's receive buffer, as another client's or an operator's may:
    /// every read of that version of the node is answered `ReplyTooLarge`,
    /// its watch set, until the node is written again. Only where the
    /// embedded driver reads, as for `too_large` (see
    /// [`SimZk::set_oversized_writes`]).
    pub oversized: f64,
}

impl Faults {
    /// No faults.
    pub const NONE: Faults = Faults {
        disconnect: 0.0,
        lose_reply: 0.0,
        expire: 0.0,
        reconnect: 1.0,
        cut_before_drain: 0.0,
        too_large: 0.0,
        oversized: 0.0,
    };

    /// Frequent enough to hit every recovery path in short schedules.
    pub const FREQUENT: Faults = Faults {
        disconnect: 0.02,
        lose_reply: 0.02,
        expire: 0.005,
        reconnect: 0.2,
        cut_before_drain: 0.02,
        too_large: 0.02,
        oversized: 0.05,
    };
}

/// One step the scheduler took, for logs and replay.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// The server applied peer `i`'s next request.
    Apply(usize),
    /// Peer `i` received its next delivery.
    Deliver(usize),
    /// Time advanced to this many ms.
    Time(u64),
    /// Peer `i`'s connection broke.
    Disconnect(usize),
    /// Peer `i`'s next request was applied and its reply lost.
    LoseReply(usize),
    /// Peer `i`'s session expired.
    Expire(usize),
    /// Peer `i` reconnected.
    Reconnect(usize),
    /// Peer `i` received its next delivery, and its connection broke before
    /// its driver drained. A listing handed over in parts may break off
    /// after any of them (see [`Peer::deliver_one_cutting_listing`]).
    CutBeforeDrain(usize),
    /// Peer `i` received its next delivery, a listing, cut short by a name
    /// over the receive buffer and answered `ReplyTooLarge` (see
    /// [`Peer::deliver_one_too_large`]).
    TooLarge(usize),
}

/// Several peers running the same kind of recipe against one [`SimZk`],
/// interleaved by a seeded random scheduler.
///
/// An oracle reads the server's truth: a peer whose session the server
/// expired may not have heard it yet (its `Lost` is still on its way, as on
/// a real network), so a check of who holds counts only the peers whose
/// session [`SimZk::is_live`].
pub struct World<R: Recipe> {
    /// The server.
    pub zk: SimZk,
    /// The peers, each on its own session.
    pub peers: Vec<Peer<R>>,
    /// The faults injected by [`step`](World::step).
    pub faults: Faults,
    now: Instant,
    rng: ChaCha8Rng,
}

impl<R: Recipe> World<R> {
    /// An empty world, deterministic from `seed`. Odd seeds deliver as
    /// herdless-std's driver does, even seeds as herdless-embassy's (see
    /// [`DriverOrder`]), so every seeded test covers both; even seeds also
    /// hand listings over in parts of one to three names, as the embedded
    /// driver does with a receive buffer smaller than the listing, and
    /// half of them (seeds 2, 6, 10, ...) resume sessions without their
    /// watches, as a herdless-embassy driver whose session keeps no watch
    /// table (see [`SimZk::set_watch_reset`]).
    pub fn new(seed: u64) -> Self {
        let mut zk = SimZk::new(seed ^ 0x9e37_79b9_7f4a_7c15);
        if seed % 2 == 1 {
            zk.set_driver_order(DriverOrder::NotificationsFirst);
        } else {
            zk.set_driver_order(DriverOrder::Wire);
            zk.set_listing_part(usize::try_from(1 + seed / 2 % 3).ok());
            zk.set_watch_reset(seed % 4 == 0);
        }
        World {
            zk,
            peers: Vec::new(),
            faults: Faults::NONE,
            now: Instant::from_millis(0),
            rng: ChaCha8Rng::seed_from_u64(seed),
        }
    }

    /// Adds a peer on a new session; returns its index.
    pub fn add_peer(&mut self, recipe: R) -> usize {
        let session = self.zk.open_session();
        self.peers.push(Peer::new(recipe, session));
        self.peers.len() - 1
    }

    /// The simulated time.
    pub fn now(&self) -> Instant {
        self.now
    }

    /// The scheduler's random number generator, for the test's own choices
    /// (so one seed replays the whole run).
    pub fn rng(&mut self) -> &mut ChaCha8Rng {
        &mut self.rng
    }

    /// Calls `f` on peer `i`'s recipe, then drains its requests and events.
    pub fn act<T>(&mut self, i: usize, f: impl FnOnce(&mut R) -> T) -> T {
        self.peers[i].act(&mut self.zk, f)
    }

    /// Gives peer `i` a new session and tells it `Connected`: after its old
    /// one ended, or while that one lives on (a client back on a new
    /// session before the server expired the old one, CURATOR-696).
    pub fn renew_session(&mut self, i: usize) {
        let session = self.zk.open_session();
        self.peers[i].move_to_session(&mut self.zk, session);
    }

    /// Gives every peer whose session has ended (see
    /// [`session_ended`](World::session_ended)) a new one, as both
    /// transports do; returns how many there were.
    pub fn renew_ended_sessions(&mut self) -> usize {
        let mut renewed = 0;
        for i in 0..self.peers.len() {
            if self.session_ended(i) {
                self.renew_session(i);
                renewed += 1;
            }
        }
        renewed
    }

    /// Whether peer `i`'s session has ended (expired or closed) and the peer
    /// has read everything it delivered, so it knows: the moment to give it
    /// a new one with [`renew_session`](World::renew_session).
    pub fn session_ended(&self, i: usize) -> bool {
        let session = self.peers[i].session();
        matches!(
            self.zk.status(session),
            Some(SessionStatus::Expired | SessionStatus::Closed)
        ) && self.zk.pending_deliveries(session) == 0
    }

    /// Whether any request or delivery is queued, or a session is
    /// disconnected.
    pub fn busy(&self) -> bool {
        self.peers.iter().any(|p| {
            let s = p.session();
            self.zk.pending_requests(s) > 0
                || self.zk.pending_deliveries(s) > 0
                || self.zk.status(s) == Some(SessionStatus::Disconnected)
        })
    }

    /// Takes one random step (work, time, or a fault). Returns it, or `None`
    /// when nothing is queued and no timer is pending.
    pub fn step(&mut self) -> Option<Step> {
        let mut work: Vec<Step> = Vec::new();
        for (i, p) in self.peers.iter().enumerate() {
            let s = p.session();
            if self.zk.can_apply(s) {
                work.push(Step::Apply(i));
            }
            if self.zk.pending_deliveries(s) > 0 {
                work.push(Step::Deliver(i));
            }
        }
        let timer = self
            .peers
            .iter()
            .filter_map(|p| p.recipe.poll_timeout())
            .min();
        let faults = self.faults;
        self.zk.set_oversized_writes(faults.oversized);
        let n = self.peers.len();
        let step = if n > 0 && self.rng.gen_bool(faults.disconnect.clamp(0.0, 1.0)) {
            Step::Disconnect(self.rng.gen_range(0..n))
        } else if n > 0 && self.rng.gen_bool(faults.lose_reply.clamp(0.0, 1.0)) {
            Step::LoseReply(self.rng.gen_range(0..n))
        } else if n > 0 && self.rng.gen_bool(faults.expire.clamp(0.0, 1.0)) {
            Step::Expire(self.rng.gen_range(0..n))
        } else if let Some(i) = self.peer_to_cut_before_drain(faults.cut_before_drain) {
            Step::CutBeforeDrain(i)
        } else if let Some(i) = self.peer_with_listing_too_large(faults.too_large) {
            Step::TooLarge(i)
        } else if let Some(i) =
            self.disconnected_peer_to_reconnect(faults.reconnect, work.is_empty())
        {
            Step::Reconnect(i)
        } else if !work.is_empty() && (timer.is_none() || !self.rng.gen_bool(0.05)) {
            work[self.rng.gen_range(0..work.len())]
        } else if let Some(t) = timer {
            Step::Time(t.max(self.now).as_millis())
        } else {
            return None;
        };
        self.apply(step);
        Some(step)
    }

    /// A connected peer with a delivery waiting, at rate `p` (no draw at
    /// rate 0, so that runs without this fault keep their schedules).
    fn peer_to_cut_before_drain(&mut self, p: f64) -> Option<usize> {
        if p <= 0.0 || !self.rng.gen_bool(p.min(1.0)) {
            return None;
        }
        let ready = self.connected_peers(|zk, s| zk.pending_deliveries(s) > 0);
        if ready.is_empty() {
            return None;
        }
        Some(ready[self.rng.gen_range(0..ready.len())])
    }

    /// A connected peer whose next delivery is a listing the embedded
    /// driver reads in parts, at rate `p`: drawn only when there is one,
    /// so that schedules without such a listing (every odd seed's) stay as
    /// they were.
    fn peer_with_listing_too_large(&mut self, p: f64) -> Option<usize> {
        if p <= 0.0 {
            return None;
        }
        let ready = self.connected_peers(SimZk::next_is_embedded_listing);
        if ready.is_empty() || !self.rng.gen_bool(p.min(1.0)) {
            return None;
        }
        Some(ready[self.rng.gen_range(0..ready.len())])
    }

    /// The peers whose session is connected and passes `test`.
    fn connected_peers(&self, test: impl Fn(&SimZk, SessionId) -> bool) -> Vec<usize> {
        (0..self.peers.len())
            .filter(|&i| {
                let s = self.peers[i].session();
                self.zk.status(s) == Some(SessionStatus::Connected) && test(&self.zk, s)
            })
            .collect()
    }

    fn disconnected_peer_to_reconnect(&mut self, p: f64, idle: bool) -> Option<usize> {
        let disconnected: Vec<usize> = (0..self.peers.len())
            .filter(|&i| {
                self.zk.status(self.peers[i].session()) == Some(SessionStatus::Disconnected)
            })
            .collect();
        if disconnected.is_empty() || !(idle || self.rng.gen_bool(p.clamp(0.0, 1.0))) {
            return None;
        }
        Some(disconnected[self.rng.gen_range(0..disconnected.len())])
    }

    /// Performs a given step (for replaying or scripting).
    pub fn apply(&mut self, step: Step) {
        match step {
            Step::Apply(i) => {
                self.zk.apply_next(self.peers[i].session());
            }
            Step::Deliver(i) => {
                self.peers[i].deliver_one(&mut self.zk);
            }
            Step::Time(ms) => {
                self.now = Instant::from_millis(ms);
                self.zk.set_time(i64::try_from(ms).unwrap_or(i64::MAX));
                for p in &mut self.peers {
                    p.tick(&mut self.zk, self.now);
                }
            }
            Step::Disconnect(i) => self.zk.disconnect(self.peers[i].session()),
            Step::LoseReply(i) => self.zk.lose_reply_after_apply(self.peers[i].session()),
            Step::Expire(i) => self.zk.expire(self.peers[i].session()),
            Step::Reconnect(i) => self.zk.reconnect(self.peers[i].session()),
            Step::CutBeforeDrain(i) => {
                // Where a listing in parts breaks off is drawn only for one
                // of several parts, so that schedules without such a
                // listing draw as they did before the cut could fall there.
                let rng = &mut self.rng;
                self.peers[i].deliver_one_cutting_listing(&mut self.zk, |parts| {
                    if parts > 1 {
                        rng.gen_range(1..=parts)
                    } else {
                        parts
                    }
                });
            }
            Step::TooLarge(i) => {
                let rng = &mut self.rng;
                self.peers[i].deliver_one_too_large(&mut self.zk, |parts| rng.gen_range(0..parts));
            }
        }
    }

    /// Runs without faults (reconnecting every disconnected session) until
    /// nothing is queued and no timer is pending, or `max_steps` ran out.
    /// Returns whether it became quiet; never once a recipe's timer got
    /// stuck (see [`stuck_timer`](World::stuck_timer)), now or earlier.
    pub fn run_until_quiet(&mut self, max_steps: usize) -> bool {
        let saved = self.faults;
        self.faults = Faults::NONE;
        let mut quiet = false;
        for _ in 0..max_steps {
            if self.stuck_timer().is_some() {
                break;
            }
            if self.step().is_none() {
                quiet = true;
                break;
            }
        }
        self.faults = saved;
        quiet
    }

    /// The first peer whose recipe's timer fired and stayed due (see
    /// [`Peer::stuck_timer`]), and when.
    pub fn stuck_timer(&self) -> Option<(usize, Instant)> {
        self.peers
            .iter()
            .enumerate()
            .find_map(|(i, p)| Some((i, p.stuck_timer()?)))
    }
}

#[cfg(test)]
mod tests {
    use super::super::recorder::Recorder;
    use super::*;

    #[test]
    fn a_quarter_of_the_seeds_resume_without_their_watches() {
        let reset: Vec<bool> = (0..8)
            .map(|seed| World::<Recorder>::new(seed).zk.watch_reset())
            .collect();
        assert_eq!(reset, [true, true, false, true, true, true, false, true]);
    }

    #[test]
    fn time_moves_to_the_earliest_timer_and_fires_it() {
        let mut world: World<Recorder> = World::new(1);
        let p = world.add_peer(Recorder {
            timer: Some(Instant::from_millis(50)),
            ..Recorder::default()
        });
        assert_eq!(world.now(), Instant::ZERO);
        assert!(world.run_until_quiet(10));
        assert_eq!(world.now(), Instant::from_millis(50));
        assert_eq!(world.peers[p].recipe.log.last().unwrap(), "timeout at 50");
        assert_eq!(world.stuck_timer(), None);
    }

    #[test]
    fn a_timer_that_stays_due_after_firing_is_reported_and_never_quiet() {
        let mut world: World<Recorder> = World::new(1);
        world.add_peer(Recorder::default());
        let p = world.add_peer(Recorder {
            timer: Some(Instant::from_millis(50)),
            keep_timer: true,
            ..Recorder::default()
        });
        assert!(!world.run_until_quiet(1_000));
        assert_eq!(world.stuck_timer(), Some((p, Instant::from_millis(50))));
        assert_eq!(world.peers[p].stuck_timer(), Some(Instant::from_millis(50)));
        assert_eq!(world.peers[0].stuck_timer(), None);
        assert_eq!(
            world.peers[p]
                .recipe
                .log
                .iter()
                .filter(|l| l.starts_with("timeout"))
                .count(),
            1,
            "stopped at the first fire that changed nothing"
        );
        // Sticky: the run that saw it is never called quiet.
        world.peers[p].recipe.timer = None;
        assert!(!world.run_until_quiet(1_000));
    }

    #[test]
    fn every_ended_session_and_only_those_are_renewed() {
        let mut world: World<Recorder> = World::new(1);
        for _ in 0..3 {
            world.add_peer(Recorder::default());
        }
        let (kept, expired) = (world.peers[0].session(), world.peers[1].session());
        world.zk.expire(expired);
        world.zk.close(world.peers[2].session());
        assert_eq!(world.renew_ended_sessions(), 0, "the ends are not read yet");
        assert!(world.run_until_quiet(100));
        assert_eq!(world.renew_ended_sessions(), 2);
        assert_eq!(world.peers[0].session(), kept);
        assert!(world.peers[1].session() > expired);
        assert!((0..3).all(|i| !world.session_ended(i)));
        assert_eq!(world.renew_ended_sessions(), 0);
    }

    fn only(fault: impl FnOnce(&mut Faults)) -> Faults {
        let mut faults = Faults {
            disconnect: 0.0,
            lose_reply: 0.0,
            expire: 0.0,
            reconnect: 0.0,
            cut_before_drain: 0.0,
            too_large: 0.0,
            oversized: 0.0,
        };
        fault(&mut faults);
        faults
    }

    /// Two peers, each with a listing queued on the server.
    fn two_listing_peers(seed: u64) -> World<Recorder> {
        let mut world: World<Recorder> = World::new(seed);
        for _ in 0..2 {
            let p = world.add_peer(Recorder::default());
            world.act(p, |r| r.to_list.push_back("/".into()));
        }
        world
    }

    #[test]
    fn a_certain_fault_is_the_step_taken() {
        for seed in 0..8 {
            let mut world = two_listing_peers(seed);
            world.faults = only(|f| f.disconnect = 1.0);
            let Some(Step::Disconnect(i)) = world.step() else {
                panic!("seed {seed}: no disconnect");
            };
            let session = world.peers[i].session();
            assert_eq!(world.zk.status(session), Some(SessionStatus::Disconnected));

            let mut world = two_listing_peers(seed);
            world.faults = only(|f| f.lose_reply = 1.0);
            let Some(Step::LoseReply(i)) = world.step() else {
                panic!("seed {seed}: no lost reply");
            };
            let session = world.peers[i].session();
            assert_eq!(world.zk.status(session), Some(SessionStatus::Disconnected));
            assert_eq!(world.zk.stats().count("getChildren"), 1);

            let mut world = two_listing_peers(seed);
            world.apply(Step::Apply(0));
            world.faults = only(|f| f.cut_before_drain = 1.0);
            assert_eq!(world.step(), Some(Step::CutBeforeDrain(0)), "seed {seed}");
            let session = world.peers[0].session();
            assert_eq!(world.zk.status(session), Some(SessionStatus::Disconnected));
            assert_eq!(world.zk.pending_deliveries(session), 0, "all handed over");
            let log = &world.peers[0].recipe.log;
            assert!(log.iter().any(|l| l.starts_with("reply")), "{log:?}");
            assert_eq!(
                log.iter().filter(|l| *l == "session Suspended").count(),
                1,
                "told of the loss once: {log:?}"
            );

            let mut world = two_listing_peers(seed);
            world.faults = only(|f| f.expire = 1.0);
            let Some(Step::Expire(i)) = world.step() else {
                panic!("seed {seed}: no expiry");
            };
            assert!(!world.zk.is_live(world.peers[i].session()));
        }
    }

    /// A world of `seed` with one peer, whose listing of `/d` (three names,
    /// handed over one at a time) is applied and waiting to be delivered.
    fn listing_of_three_applied(seed: u64) -> World<Recorder> {
        let mut world: World<Recorder> = World::new(seed);
        world.zk.set_listing_part(Some(1));
        world.zk.create_persistent("/d", b"").unwrap();
        for i in 0..3 {
            world
                .zk
                .create_persistent(&alloc::format!("/d/{i}"), b"")
                .unwrap();
        }
        let p = world.add_peer(Recorder {
            in_parts: true,
            ..Recorder::default()
        });
        world.act(p, |r| r.to_list.push_back("/d".into()));
        world.apply(Step::Apply(0));
        world
    }

    /// Cut before its drain, a listing handed over in parts breaks off
    /// after a random number of them: over the seeds, after every one of
    /// its parts, the last included; one of a single part never breaks
    /// off early.
    #[test]
    fn a_cut_breaks_a_listing_in_parts_off_after_any_of_them() {
        let mut cut_after = alloc::collections::BTreeSet::new();
        for seed in (0..400).map(|k| 2 * k) {
            let mut world = listing_of_three_applied(seed);
            world.faults = only(|f| f.cut_before_drain = 1.0);
            assert_eq!(world.step(), Some(Step::CutBeforeDrain(0)), "seed {seed}");
            let log = &world.peers[0].recipe.log;
            let parts = log.iter().filter(|l| l.starts_with("part of 1")).count();
            let last = log.iter().any(|l| l == "part of 1 last true");
            assert_eq!(last, parts == 3, "seed {seed}: {log:?}");
            assert_eq!(
                log.last().map(alloc::string::String::as_str),
                Some("session Suspended")
            );
            cut_after.insert(parts);
        }
        assert_eq!(cut_after.into_iter().collect::<Vec<_>>(), [1, 2, 3]);

        let mut world: World<Recorder> = World::new(0);
        world.zk.set_listing_part(Some(5));
        world.zk.create_persistent("/d", b"").unwrap();
        let p = world.add_peer(Recorder {
            in_parts: true,
            ..Recorder::default()
        });
        world.act(p, |r| r.to_list.push_back("/".into()));
        world.apply(Step::Apply(0));
        world.apply(Step::CutBeforeDrain(0));
        let log = &world.peers[0].recipe.log;
        let parts: Vec<_> = log.iter().filter(|l| l.starts_with("part")).collect();
        assert_eq!(parts, ["part of 2 last true"], "{log:?}");
        // Nothing was drawn for it: schedules without a listing of several
        // parts to cut are those of before the cut could fall inside one.
        let next: u64 = world.rng().gen();
        assert_eq!(next, World::<Recorder>::new(0).rng().gen::<u64>());
    }

    /// A cut falls only on a connected session: one already cut off, with
    /// what it is owed still on its way, is never cut a second time (a
    /// real connection breaks once; a second cut would tell the recipe of
    /// the one loss twice).
    #[test]
    fn a_cut_never_falls_on_a_session_already_cut_off() {
        for seed in 0..200 {
            let mut world = listing_of_three_applied(seed);
            world.apply(Step::Disconnect(0));
            let session = world.peers[0].session();
            assert!(world.zk.pending_deliveries(session) > 0, "seed {seed}");
            world.faults = only(|f| f.cut_before_drain = 1.0);
            let step = world.step();
            assert!(
                !matches!(step, Some(Step::CutBeforeDrain(_))),
                "seed {seed}: {step:?}"
            );
        }
    }

    /// Too large, a listing handed over in parts stops before any of them
    /// but the last (before the first, too: the first name is the one over
    /// the buffer), and its request is answered `ReplyTooLarge` on a
    /// connection that stays up.
    #[test]
    fn a_listing_too_large_stops_before_any_of_its_parts_but_the_last() {
        let mut stopped_after = alloc::collections::BTreeSet::new();
        for seed in (0..400).map(|k| 2 * k) {
            let mut world = listing_of_three_applied(seed);
            world.faults = only(|f| f.too_large = 1.0);
            assert_eq!(world.step(), Some(Step::TooLarge(0)), "seed {seed}");
            let log = &world.peers[0].recipe.log;
            let parts = log.iter().filter(|l| l.starts_with("part of 1")).count();
            assert!(!log.iter().any(|l| l.ends_with("last true")), "{log:?}");
            assert_eq!(
                log.last().map(alloc::string::String::as_str),
                Some("reply Error(ReplyTooLarge)")
            );
            let session = world.peers[0].session();
            assert_eq!(world.zk.status(session), Some(SessionStatus::Connected));
            assert_eq!(world.zk.pending_deliveries(session), 0);
            stopped_after.insert(parts);
        }
        assert_eq!(stopped_after.into_iter().collect::<Vec<_>>(), [0, 1, 2]);
    }

    /// Only the embedded driver meets a listing too large, and only a
    /// listing: on an odd seed (herdless-std's order) or with listings
    /// handed over whole, the fault draws nothing and the schedule is the
    /// one without it; on an even seed, only the deliveries of listings
    /// are too large.
    #[test]
    fn a_listing_is_too_large_only_where_the_embedded_driver_reads_it() {
        let steps = |seed: u64, parts: Option<usize>, too_large: f64| {
            let mut world = listing_of_three_applied(seed);
            world.zk.set_listing_part(parts);
            world.act(0, |r| r.to_list.push_back("/".into()));
            world.faults = only(|f| f.too_large = too_large);
            let mut steps = Vec::new();
            while let Some(step) = world.step() {
                steps.push(step);
            }
            steps
        };
        for (seed, parts) in [(1, Some(1)), (3, Some(2)), (0, None), (2, None)] {
            let taken = steps(seed, parts, 1.0);
            assert!(!taken.iter().any(|s| matches!(s, Step::TooLarge(_))));
            assert_eq!(taken, steps(seed, parts, 0.0), "seed {seed}");
        }
        assert_eq!(
            steps(0, Some(1), 1.0),
            [Step::TooLarge(0), Step::Apply(0), Step::TooLarge(0)]
        );
    }

    #[test]
    fn without_peers_there_is_nothing_to_break() {
        let mut world: World<Recorder> = World::new(1);
        world.faults = Faults {
            disconnect: 1.0,
            lose_reply: 1.0,
            expire: 1.0,
            reconnect: 1.0,
            cut_before_drain: 1.0,
            too_large: 1.0,
            oversized: 1.0,
        };
        assert_eq!(world.step(), None);
    }

    #[test]
    fn a_disconnected_peer_reconnects_at_its_rate_or_when_nothing_else_can_happen() {
        let mut world = two_listing_peers(3);
        world.apply(Step::Disconnect(0));
        world.faults = only(|f| f.reconnect = 1.0);
        assert_eq!(world.step(), Some(Step::Reconnect(0)));

        // At rate 0 the other peer's work comes first, then the reconnect.
        let mut world = two_listing_peers(3);
        world.apply(Step::Disconnect(0));
        world.faults = only(|_| {});
        let mut steps = Vec::new();
        while let Some(step) = world.step() {
            steps.push(step);
            if step == Step::Reconnect(0) {
                break;
            }
        }
        assert_eq!(steps.last(), Some(&Step::Reconnect(0)), "{steps:?}");
        assert!(steps[..steps.len() - 1]
            .iter()
            .all(|s| matches!(s, Step::Apply(1) | Step::Deliver(_))));
    }

    #[test]
    fn busy_while_requests_or_deliveries_wait_or_a_session_is_disconnected() {
        let mut world: World<Recorder> = World::new(1);
        let p = world.add_peer(Recorder::default());
        assert!(!world.busy());
        world.act(p, |r| r.to_list.push_back("/".into()));
        assert!(world.busy()); // a request waits
        world.apply(Step::Apply(p));
        assert!(world.busy()); // its reply waits
        world.apply(Step::Deliver(p));
        assert!(!world.busy());
        world.apply(Step::Disconnect(p));
        world.apply(Step::Deliver(p)); // `Suspended`, if reported
        assert!(world.busy());
        world.apply(Step::Reconnect(p));
        assert!(world.run_until_quiet(10));
        assert!(!world.busy());
    }
}
