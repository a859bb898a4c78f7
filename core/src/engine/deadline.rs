//! When a waiter stops waiting: at its deadline, unless an answer in
//! flight is about to decide (where a contender's node stands, whether a
//! queue holds an item). Curator's and Kazoo's timed acquisitions look at
//! the listing that follows their create however long the create took,
//! and Curator's timed queue `poll` makes one attempt whatever its
//! timeout, so a free lock or a waiting item is taken even with a
//! deadline shorter than the round trips; giving up at the instant would
//! time out on them whenever the network is slower than the wait.

use crate::Instant;

/// A waiter's deadline, and whether it passed while an answer that
/// decides was in flight.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Deadline {
    /// It waits until it leads, holds or is cancelled.
    None,
    /// It gives up at this instant.
    At(Instant),
    /// The deadline passed while an answer that decides was in flight
    /// (for a contender: first in line wins, anyone ahead means giving up;
    /// for a consumer: an item is taken, none means giving up).
    LastLook,
}

impl Deadline {
    /// The instant to be woken at. A last look needs no timer while the
    /// connection is up; once it is down, the answer will not come, and
    /// the waiter is due to give up at once.
    pub(crate) fn poll(self, link_up: bool) -> Option<Instant> {
        match self {
            Deadline::None => None,
            Deadline::At(at) => Some(at),
            Deadline::LastLook if link_up => None,
            Deadline::LastLook => Some(Instant::ZERO),
        }
    }

    /// Whether to give up at `now`; `deciding` says that an answer in
    /// flight will decide, which turns a deadline just passed into a last
    /// look.
    pub(crate) fn expired(&mut self, now: Instant, deciding: bool) -> bool {
        match *self {
            Deadline::At(at) if now >= at => {
                if deciding {
                    *self = Deadline::LastLook;
                }
                !deciding
            }
            Deadline::LastLook => !deciding,
            _ => false,
        }
    }

    /// Whether the deadline passed: the answer awaited decides alone.
    pub(crate) fn passed(self) -> bool {
        self == Deadline::LastLook
    }
}

#[cfg(test)]
mod tests {
    use super::Deadline;
    use crate::Instant;

    const AT: Instant = Instant::from_millis(100);
    const BEFORE: Instant = Instant::from_millis(99);

    #[test]
    fn gives_up_at_the_deadline_when_nothing_decides() {
        let mut d = Deadline::At(AT);
        assert_eq!(d.poll(true), Some(AT));
        assert!(!d.expired(BEFORE, false));
        assert!(d.expired(AT, false));
    }

    #[test]
    fn a_deadline_passed_while_deciding_waits_for_the_answer() {
        let mut d = Deadline::At(AT);
        assert!(!d.expired(AT, true));
        assert!(d.passed());
        assert_eq!(d.poll(true), None);
        // The connection went: the answer will not come.
        assert_eq!(d.poll(false), Some(Instant::ZERO));
        assert!(d.expired(AT, false));
    }

    #[test]
    fn no_deadline_never_expires() {
        let mut d = Deadline::None;
        assert_eq!(d.poll(false), None);
        assert!(!d.expired(Instant::from_millis(u64::MAX), false));
        assert!(!d.passed());
    }
}
