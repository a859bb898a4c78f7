//! CURATOR-696 as a fault of the seeded schedules: a peer's connection
//! drops and its client comes back on a *new* session, while the old one
//! (and its ephemeral nodes) lives on until the server gets round to
//! expiring it.

use herdless_core::sim::World;
use herdless_core::Recipe;
use rand::Rng;

/// Drops peer `i`'s connection and delivers what its session had for it,
/// so that it hears the loss. Returns that session, unless it was over
/// already (then nothing is done).
pub fn cut<R: Recipe>(world: &mut World<R>, i: usize) -> Option<i64> {
    let old = world.peers[i].session();
    if !world.zk.is_live(old) {
        return None;
    }
    world.zk.disconnect(old);
    while world.peers[i].deliver_one(&mut world.zk) {}
    Some(old)
}

/// The sessions left behind, each with the peer that left it and the step
/// at which the server expires it.
#[derive(Debug, Default)]
pub struct Abandoned(Vec<(usize, i64, usize)>);

impl Abandoned {
    /// Moves peer `i`, whose session `old` was [`cut`], to a new session,
    /// telling it `Connected`; `old` expires within 60 steps of `step`.
    pub fn move_on<R: Recipe>(&mut self, world: &mut World<R>, i: usize, old: i64, step: usize) {
        world.renew_session(i);
        let expire_at = step + world.rng().gen_range(0..60);
        self.0.push((i, old, expire_at));
    }

    /// Whether peer `i` left `session`, which lives on: only then can a
    /// node of it still be there.
    pub fn left_by(&self, i: usize, session: i64) -> bool {
        self.0
            .iter()
            .any(|(peer, s, _)| *peer == i && *s == session)
    }

    /// Expires the sessions due by `step`, or all of them.
    pub fn expire_due<R: Recipe>(&mut self, world: &mut World<R>, step: usize, all: bool) {
        let (due, later): (Vec<_>, Vec<_>) =
            self.0.iter().partition(|(_, _, at)| all || *at <= step);
        self.0 = later;
        for (_, session, _) in due {
            world.zk.expire(session);
        }
    }
}
