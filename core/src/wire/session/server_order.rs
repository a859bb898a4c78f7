//! The order a session tries the ensemble's servers in.
//!
//! ZooKeeper's own clients shuffle their server lists, so that a fleet
//! started together does not all connect to the first server, and so that
//! the clients of a server that dies go on to different servers rather
//! than all to the same next one. A session has no allocator to shuffle a
//! list in and no random numbers of its own, so its order is a cycle
//! through every server, `first, first + step, first + 2·step, ...` modulo
//! their number, with a `step` that shares no factor with it: each round
//! visits every server once, and devices that share a first server but
//! not a step leave it for different ones. Both come from a seed the
//! application gives ([`SessionConfig::with_server_seed`]); seed 0 is
//! server 0 first, then 1, 2, ...
//!
//! [`SessionConfig::with_server_seed`]: super::SessionConfig::with_server_seed

/// How a session moves from one server to the next. The number of
/// servers is not kept here: the session's configuration holds it, and
/// every call takes it from there, so that there is one copy of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ServerOrder {
    step: usize,
}

impl ServerOrder {
    /// The order for `servers` servers from `seed`, and the server it
    /// begins with. `servers` must be at least one.
    pub(crate) fn new(servers: usize, seed: u32) -> (ServerOrder, usize) {
        // A `u32` fits every target herdless builds for (32 and 64 bits);
        // on a narrower one, the seed's high bits are merely not used.
        let seed = seed as usize;
        let first = seed % servers;
        let mut step = 1;
        if servers > 2 {
            // Steps run over 1..servers; those sharing a factor with the
            // count would skip servers, so the next one that does not is
            // taken (1 always qualifies).
            step = 1 + (seed / servers) % (servers - 1);
            while gcd(step, servers) != 1 {
                step = step % (servers - 1) + 1;
            }
        }
        (ServerOrder { step }, first)
    }

    /// The server after `server`, of `servers` (the count this order was
    /// made for).
    pub(crate) fn after(self, server: usize, servers: usize) -> usize {
        // Written so that no sum can overflow, whatever the count.
        let room = servers - server;
        if self.step < room {
            server + self.step
        } else {
            self.step - room
        }
    }

    /// The server before `server`, of `servers`: the one whose successor
    /// it is.
    pub(crate) fn before(self, server: usize, servers: usize) -> usize {
        if server >= self.step {
            server - self.step
        } else {
            server + (servers - self.step)
        }
    }
}

fn gcd(mut a: usize, mut b: usize) -> usize {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

#[cfg(test)]
#[allow(clippy::indexing_slicing)]
mod tests {
    extern crate std;

    use super::*;

    /// The servers a session tries, from its first, for one round.
    fn round(servers: usize, seed: u32) -> std::vec::Vec<usize> {
        let (order, first) = ServerOrder::new(servers, seed);
        let mut tried = std::vec![first];
        for _ in 1..servers {
            let next = order.after(*tried.last().unwrap(), servers);
            tried.push(next);
        }
        // The round closes: the server after the last is the first again,
        // and `before` undoes `after`.
        assert_eq!(order.after(*tried.last().unwrap(), servers), first);
        for &s in &tried {
            assert_eq!(order.before(order.after(s, servers), servers), s);
        }
        tried
    }

    #[test]
    fn every_round_tries_every_server_once() {
        for servers in 1..=16 {
            for seed in (0..2_000).chain([u32::MAX - 1, u32::MAX]) {
                let mut tried = round(servers, seed);
                tried.sort_unstable();
                assert_eq!(
                    tried,
                    (0..servers).collect::<std::vec::Vec<_>>(),
                    "{servers} servers, seed {seed}"
                );
            }
        }
    }

    #[test]
    fn seed_zero_is_the_list_in_order() {
        assert_eq!(round(5, 0), [0, 1, 2, 3, 4]);
        assert_eq!(round(1, 0), [0]);
        assert_eq!(round(1, 7), [0]);
    }

    #[test]
    fn seeds_spread_the_first_server_evenly() {
        for servers in 1..=7 {
            let mut count = std::vec![0u32; servers];
            for seed in 0..(servers as u32 * 100) {
                count[ServerOrder::new(servers, seed).1] += 1;
            }
            assert!(count.iter().all(|&c| c == 100), "{servers}: {count:?}");
        }
    }

    /// What a fleet does when a server dies: those on it must go on to
    /// every other server, not all to one.
    #[test]
    fn the_clients_of_a_server_leave_it_for_every_other_server() {
        for servers in [2usize, 3, 4, 5, 7] {
            for dead in 0..servers {
                let mut next = std::vec![0u32; servers];
                for seed in 0..10_000u32 {
                    let (order, first) = ServerOrder::new(servers, seed);
                    if first == dead {
                        next[order.after(dead, servers)] += 1;
                    }
                }
                assert_eq!(next[dead], 0, "{servers}, {dead}: {next:?}");
                let others = next.iter().enumerate().filter(|&(s, _)| s != dead);
                // With a prime count every step is possible and each
                // survivor gets an even share; with 4 the step is 1 or 3,
                // so the server opposite gets none first, and 2 and 3
                // survivors still share.
                let expect_all = servers != 4;
                let reached = others.clone().filter(|&(_, &c)| c > 0).count();
                if expect_all {
                    assert_eq!(reached, servers - 1, "{servers}, {dead}: {next:?}");
                    let (lo, hi) =
                        others.fold((u32::MAX, 0), |(lo, hi), (_, &c)| (lo.min(c), hi.max(c)));
                    assert!(hi - lo <= hi / 10 + 1, "{servers}, {dead}: {next:?}");
                } else {
                    assert_eq!(reached, 2, "{servers}, {dead}: {next:?}");
                }
            }
        }
    }

    #[test]
    fn no_count_overflows() {
        let (order, first) = ServerOrder::new(usize::MAX, u32::MAX);
        assert!(first < usize::MAX);
        let next = order.after(usize::MAX - 1, usize::MAX);
        assert!(next < usize::MAX);
        assert_eq!(order.before(next, usize::MAX), usize::MAX - 1);
    }
}
