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
    pub const fn plus_millis(self, millis: u64) -> Self {
        Instant(self.0.saturating_add(millis))
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
}
