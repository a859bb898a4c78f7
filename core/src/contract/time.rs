//! Time as the core sees it: milliseconds handed in by the caller.

use core::ops::Add;

/// A point in time, in milliseconds since an origin the caller chooses.
///
/// The core never reads a clock: the driver passes the current time with
/// every input of the [`Recipe`](crate::Recipe) contract and compares it
/// with [`Recipe::poll_timeout`](crate::Recipe::poll_timeout). Any monotonic
/// millisecond counter works (tokio's `Instant` against a start point,
/// `embassy_time::Instant::as_millis`, a simulated clock).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Instant(u64);

impl Instant {
    /// The origin: where a driver's clock usually starts.
    pub const ZERO: Instant = Instant(0);

    /// The instant `millis` milliseconds after the origin.
    pub const fn from_millis(millis: u64) -> Self {
        Instant(millis)
    }

    /// Milliseconds since the origin.
    pub const fn as_millis(self) -> u64 {
        self.0
    }

    /// This instant plus `millis`, saturating instead of wrapping.
    // Out of line: inlined, the 64-bit saturating add was repeated in
    // every timer computation (the STM32 firmware's herdless code
    // measured 83 B less this way, scripts/firmware-size.sh).
    #[inline(never)]
    pub const fn plus_millis(self, millis: u64) -> Self {
        Instant(self.0.saturating_add(millis))
    }

    /// The earlier of two optional timers (`None` is no timer), as a
    /// driver merges the [`Recipe::poll_timeout`](crate::Recipe::poll_timeout)s
    /// it must wake for.
    ///
    /// ```
    /// use herdless_core::Instant;
    /// let (a, b) = (Instant::from_millis(5), Instant::from_millis(9));
    /// assert_eq!(Instant::earliest(Some(b), Some(a)), Some(a));
    /// assert_eq!(Instant::earliest(None, Some(b)), Some(b));
    /// assert_eq!(Instant::earliest(None, None), None);
    /// ```
    // A match rather than an iterator over the two ending in `min`: with
    // the candidate's `poll_timeout` and the embedded driver's
    // `next_wake` on it, the STM32 firmware's herdless code measured 95 B
    // less (scripts/firmware-size.sh).
    pub const fn earliest(a: Option<Self>, b: Option<Self>) -> Option<Self> {
        match (a, b) {
            (Some(a), Some(b)) => Some(if a.0 <= b.0 { a } else { b }),
            (Some(t), None) | (None, Some(t)) => Some(t),
            (None, None) => None,
        }
    }
}

impl Add<u64> for Instant {
    type Output = Instant;

    fn add(self, millis: u64) -> Instant {
        self.plus_millis(millis)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adding_milliseconds_saturates() {
        let start = Instant::from_millis(5);
        assert_eq!(start + 10, Instant::from_millis(15));
        assert_eq!((start + 10).as_millis(), 15);
        assert_eq!(
            Instant::from_millis(u64::MAX) + 1,
            Instant::from_millis(u64::MAX),
            "a far deadline does not wrap to the past"
        );
    }

    #[test]
    fn earliest_is_the_sooner_timer_whichever_side_it_is_on() {
        let (soon, late) = (Instant::from_millis(3), Instant::from_millis(4));
        assert_eq!(Instant::earliest(Some(soon), Some(late)), Some(soon));
        assert_eq!(Instant::earliest(Some(late), Some(soon)), Some(soon));
        assert_eq!(Instant::earliest(Some(late), None), Some(late));
        assert_eq!(Instant::earliest(None, Some(late)), Some(late));
        assert_eq!(Instant::earliest(None, None), None);
    }
}
