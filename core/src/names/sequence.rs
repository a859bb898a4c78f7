//! The sequence suffix ZooKeeper appends to sequential nodes.
//!
//! The server appends `String.format("%010d", parentCversion)`: ten
//! zero-padded digits, or after the signed 32-bit counter wraps, a minus sign
//! and nine digits (`-000000001`), or eleven characters from `-1000000000`
//! to `-2147483648`. An eleven-character suffix also reads as ten digits
//! after a prefix ending in `-`: only the prefix a caller expects can tell
//! ([`Sequence::split_where`]).
//! Recipes order contenders by this number only, never by the whole name
//! (ZOOKEEPER-2931: sorting whole names gave two lock holders).

use core::cmp::Ordering;
use core::fmt;

/// Width of the suffix the server writes for non-negative values.
pub const SUFFIX_LEN: usize = 10;

/// A parsed sequence number.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Sequence(i32);

/// Why a name has no sequence suffix.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum SequenceError {
    /// The name is shorter than a suffix.
    TooShort,
    /// The last ten characters are not a `%010d` number.
    NotANumber,
    /// The name ends in a number, but not after the expected text.
    Unexpected,
}

/// The value of a ten-character suffix: ten digits, or a minus sign and
/// nine digits.
fn short_reading(bytes: &[u8]) -> Option<Sequence> {
    let tail = bytes.get(bytes.len().checked_sub(SUFFIX_LEN)?..)?;
    match tail.split_first()? {
        // "-000000000" is not something %010d prints.
        (b'-', rest) => match magnitude(rest)? {
            0 => None,
            m => Some(negative(m)),
        },
        _ => i32::try_from(magnitude(tail)?).ok().map(Sequence),
    }
}

/// The value of an eleven-character suffix: a minus sign and ten digits,
/// which `%010d` writes for -1,000,000,000 to -2,147,483,648.
fn long_reading(bytes: &[u8]) -> Option<Sequence> {
    let tail = bytes.get(bytes.len().checked_sub(SUFFIX_LEN + 1)?..)?;
    match tail.split_first()? {
        (b'-', digits) => match magnitude(digits)? {
            m @ 1_000_000_000..=2_147_483_648 => Some(negative(m)),
            _ => None,
        },
        _ => None,
    }
}

/// The number `digits` (ASCII digits only) spell, if it fits a `u32`
/// (which holds every magnitude a suffix can have, 2^31 included). One
/// loop in 32-bit arithmetic for both readings: two in 64-bit cost more
/// code on a 32-bit microcontroller.
fn magnitude(digits: &[u8]) -> Option<u32> {
    digits.iter().try_fold(0u32, |value, &b| {
        let digit = b.wrapping_sub(b'0');
        if digit > 9 {
            return None;
        }
        value.checked_mul(10)?.checked_add(u32::from(digit))
    })
}

/// The sequence `-magnitude`, for a magnitude of at most 2^31.
fn negative(magnitude: u32) -> Sequence {
    Sequence(0i32.wrapping_sub_unsigned(magnitude))
}

impl fmt::Display for SequenceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SequenceError::TooShort => f.write_str("name too short for a sequence suffix"),
            SequenceError::NotANumber => {
                f.write_str("name does not end in a %010d sequence number")
            }
            SequenceError::Unexpected => {
                f.write_str("name does not end in the expected text and a sequence number")
            }
        }
    }
}

impl Sequence {
    /// The sequence with this value.
    pub const fn new(value: i32) -> Self {
        Sequence(value)
    }

    /// The numeric value.
    pub const fn value(self) -> i32 {
        self.0
    }

    /// Splits `name` into the text before the suffix and the parsed suffix.
    ///
    /// `%010d` writes values from -1,000,000,000 down with eleven
    /// characters, so `…-1000000005` is either 1000000005 after a `-` or
    /// -1000000005: this reads the ten-character form where it can. Where
    /// the text before the suffix is known, [`split_where`](Self::split_where)
    /// tells the two apart.
    pub fn split(name: &str) -> Result<(&str, Sequence), SequenceError> {
        Sequence::split_where(name, |_| true)
    }

    /// Splits `name` as [`split`](Self::split) does, taking the first
    /// reading of its suffix whose preceding text `accept`s: the
    /// ten-character form first, then the eleven-character negative form.
    ///
    /// ```
    /// use herdless_core::Sequence;
    ///
    /// let ends_in_marker = |prefix: &str| prefix.ends_with("lock-");
    /// let (_, positive) = Sequence::split_where("g-lock-1000000005", ends_in_marker).unwrap();
    /// assert_eq!(positive.value(), 1_000_000_005);
    /// let (_, negative) = Sequence::split_where("g-lock--1000000005", ends_in_marker).unwrap();
    /// assert_eq!(negative.value(), -1_000_000_005);
    /// ```
    pub fn split_where(
        name: &str,
        accept: impl Fn(&str) -> bool,
    ) -> Result<(&str, Sequence), SequenceError> {
        Sequence::split_accepted(name, &accept)
    }

    /// [`split_where`](Self::split_where) in one copy for every `accept`:
    /// the recipes call it with several, and on a microcontroller each
    /// copy costs flash.
    fn split_accepted<'n>(
        name: &'n str,
        accept: &dyn Fn(&str) -> bool,
    ) -> Result<(&'n str, Sequence), SequenceError> {
        let bytes = name.as_bytes();
        if bytes.len() < SUFFIX_LEN {
            return Err(SequenceError::TooShort);
        }
        // A reading is ASCII, so the prefix ends on a character boundary;
        // `get` rather than an index keeps core's panic message for a cut
        // inside a character (and the formatting it uses) out of firmware.
        // Each reading tried in turn from an array of pairs, rather than
        // the two chained as an iterator that skips the absent one, which
        // measured 46 B more herdless code in the STM32 firmware.
        let mut error = SequenceError::NotANumber;
        let readings = [
            (SUFFIX_LEN, short_reading(bytes)),
            (SUFFIX_LEN + 1, long_reading(bytes)),
        ];
        for (len, reading) in readings {
            let Some(seq) = reading else {
                continue;
            };
            let prefix = name.get(..bytes.len() - len).unwrap_or_default();
            if accept(prefix) {
                return Ok((prefix, seq));
            }
            error = SequenceError::Unexpected;
        }
        Err(error)
    }

    /// `text` read as one whole suffix, exactly as `%010d` prints it (ten
    /// characters, or eleven from -1,000,000,000 down), for names whose
    /// layout already says where the suffix starts.
    ///
    /// ```
    /// use herdless_core::Sequence;
    ///
    /// assert_eq!(Sequence::from_suffix("-1000000005").map(|s| s.value()), Some(-1_000_000_005));
    /// assert_eq!(Sequence::from_suffix("-0999999999"), None);
    /// ```
    pub fn from_suffix(text: &str) -> Option<Sequence> {
        match text.len() {
            SUFFIX_LEN => short_reading(text.as_bytes()),
            len if len == SUFFIX_LEN + 1 => long_reading(text.as_bytes()),
            _ => None,
        }
    }

    /// The suffix of `name`.
    pub fn parse(name: &str) -> Result<Sequence, SequenceError> {
        Sequence::split(name).map(|(_, seq)| seq)
    }

    /// Creation order between two sequence numbers of one parent.
    ///
    /// The comparison is on the wrapped distance, so a counter that overflowed
    /// from 2147483647 to -2147483648 still orders newer nodes after older
    /// ones, as long as the live nodes span fewer than 2^31 creations.
    pub fn order(self, other: Sequence) -> Ordering {
        (self.0.wrapping_sub(other.0)).cmp(&0)
    }

    /// Whether `self` was created before `other`.
    pub fn precedes(self, other: Sequence) -> bool {
        self.order(other) == Ordering::Less
    }
}

impl fmt::Display for Sequence {
    /// Formats as the server does (`%010d`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:010}", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_width_of_the_suffix_reads_back_after_its_marker() {
        extern crate std;
        use std::format;
        let values = [
            0,
            1,
            999_999_999,
            1_000_000_000,
            i32::MAX,
            i32::MIN,
            i32::MIN + 1,
            -1_000_000_000,
            -999_999_999,
            -1,
        ];
        for marker in ["lock-", "__lock__", "n_"] {
            for v in values {
                let name = format!("guid-{marker}{v:010}");
                let (prefix, seq) = Sequence::split_where(&name, |p| p.ends_with(marker)).unwrap();
                assert_eq!(
                    (prefix, seq.value()),
                    (&*format!("guid-{marker}"), v),
                    "{name}"
                );
            }
        }
    }

    #[test]
    fn the_characters_beside_the_digits_are_not_digits() {
        // '/' and ':' stand just before '0' and after '9' in ASCII.
        for name in [
            "lock-000000000:",
            "lock-/000000000",
            "lock--00000000:",
            "lock--:000000000",
            "lock--100000000/",
        ] {
            assert_eq!(
                Sequence::parse(name),
                Err(SequenceError::NotANumber),
                "{name}"
            );
        }
        assert_eq!(Sequence::from_suffix("-10000000:0"), None);
    }

    #[test]
    fn parses_what_the_server_writes() {
        assert_eq!(
            Sequence::split("x-lock-0000000042"),
            Ok(("x-lock-", Sequence(42)))
        );
        assert_eq!(Sequence::parse("2147483647"), Ok(Sequence(i32::MAX)));
        assert_eq!(
            Sequence::split("lock--000000001"),
            Ok(("lock-", Sequence(-1)))
        );
        assert_eq!(
            Sequence::split("lock--2147483648"),
            Ok(("lock-", Sequence(i32::MIN)))
        );
        // Only i32::MIN is wider than ten characters, so this reads as prefix "lock".
        assert_eq!(
            Sequence::split("lock-2147483648"),
            Ok(("lock", Sequence(i32::MIN)))
        );
        assert_eq!(
            Sequence::parse("x12147483648"),
            Err(SequenceError::NotANumber)
        );
        assert_eq!(
            Sequence::parse("lock-12345"),
            Err(SequenceError::NotANumber)
        );
        assert_eq!(Sequence::parse("short"), Err(SequenceError::TooShort));
        assert_eq!(
            Sequence::parse("lock-00000x0001"),
            Err(SequenceError::NotANumber)
        );
        assert_eq!(
            Sequence::parse("-000000000"),
            Err(SequenceError::NotANumber)
        );
        assert_eq!(
            Sequence::parse("lock--0000x0001"),
            Err(SequenceError::NotANumber),
            "a minus sign, then not only digits"
        );
    }

    #[test]
    fn a_suffix_alone_is_ten_or_eleven_characters() {
        assert_eq!(Sequence::from_suffix("0000000042"), Some(Sequence(42)));
        assert_eq!(
            Sequence::from_suffix("-1000000005"),
            Some(Sequence(-1_000_000_005))
        );
        assert_eq!(
            Sequence::from_suffix("x-1000000005"),
            None,
            "a name, not a suffix"
        );
        assert_eq!(Sequence::from_suffix("000000042"), None);
    }

    #[test]
    fn errors_say_what_the_name_lacks() {
        let shown = |e: SequenceError| crate::shown::shown(&e);
        assert_eq!(
            shown(SequenceError::TooShort),
            "name too short for a sequence suffix"
        );
        assert_eq!(
            shown(SequenceError::NotANumber),
            "name does not end in a %010d sequence number"
        );
        assert_eq!(
            shown(SequenceError::Unexpected),
            "name does not end in the expected text and a sequence number"
        );
    }

    #[test]
    fn formats_like_java() {
        assert_eq!(crate::shown::shown(&Sequence(7)), "0000000007");
        assert_eq!(crate::shown::shown(&Sequence(-1)), "-000000001");
    }

    #[test]
    fn order_survives_wrap_around() {
        assert!(Sequence(1).precedes(Sequence(2)));
        assert!(Sequence(i32::MAX).precedes(Sequence(i32::MIN)));
        assert!(Sequence(i32::MAX - 5).precedes(Sequence(-2_147_483_600)));
        assert!(!Sequence(3).precedes(Sequence(3)));
    }
}
