//! The sequence suffix ZooKeeper appends to sequential nodes.
//!
//! The server appends `String.format("%010d", parentCversion)`: ten
//! zero-padded digits, or after the signed 32-bit counter wraps, a minus sign
//! and nine digits (`-000000001`), or eleven characters from `-1000000000`
//! to `-2147483648`. An eleven-character suffix below `-2147483648` also
//! reads as ten digits after a prefix ending in `-`: only the prefix a
//! caller expects can tell, so [`Sequence::readings`] gives both.
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
}

impl fmt::Display for SequenceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SequenceError::TooShort => f.write_str("name too short for a sequence suffix"),
            SequenceError::NotANumber => {
                f.write_str("name does not end in a %010d sequence number")
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
    pub fn split(name: &str) -> Result<(&str, Sequence), SequenceError> {
        let bytes = name.as_bytes();
        if bytes.len() < SUFFIX_LEN {
            return Err(SequenceError::TooShort);
        }
        let tail = &bytes[bytes.len() - SUFFIX_LEN..];
        if tail.iter().all(u8::is_ascii_digit) {
            let value = tail
                .iter()
                .fold(0u64, |acc, d| acc * 10 + u64::from(d - b'0'));
            if let Ok(v) = i32::try_from(value) {
                return Ok((&name[..name.len() - SUFFIX_LEN], Sequence(v)));
            }
            // Only i32::MIN prints wider than ten characters: "-2147483648".
            if value == 2_147_483_648
                && bytes.len() > SUFFIX_LEN
                && bytes[bytes.len() - SUFFIX_LEN - 1] == b'-'
            {
                return Ok((&name[..name.len() - SUFFIX_LEN - 1], Sequence(i32::MIN)));
            }
            return Err(SequenceError::NotANumber);
        }
        if tail[0] == b'-' && tail[1..].iter().all(u8::is_ascii_digit) {
            let magnitude = tail[1..]
                .iter()
                .fold(0i32, |acc, d| acc * 10 + i32::from(d - b'0'));
            // "-000000000" is not something %010d prints.
            if magnitude == 0 {
                return Err(SequenceError::NotANumber);
            }
            return Ok((&name[..name.len() - SUFFIX_LEN], Sequence(-magnitude)));
        }
        Err(SequenceError::NotANumber)
    }

    /// The eleven-character negative reading of `name` (`-1000000000` to
    /// `-2147483647`): the ten last characters are digits, the first of
    /// them not zero, after a `-`. [`split`](Sequence::split) reads such a
    /// name as a positive number after a prefix ending in `-`.
    pub fn split_wide_negative(name: &str) -> Option<(&str, Sequence)> {
        let bytes = name.as_bytes();
        let start = bytes.len().checked_sub(SUFFIX_LEN + 1)?;
        let digits = &bytes[start + 1..];
        if bytes[start] != b'-' || digits[0] == b'0' || !digits.iter().all(u8::is_ascii_digit) {
            return None;
        }
        let value = digits
            .iter()
            .fold(0i64, |acc, d| acc * 10 + i64::from(d - b'0'));
        let seq = i32::try_from(-value).ok()?;
        Some((&name[..start], Sequence(seq)))
    }

    /// Every way `name` reads as a prefix and a suffix: the one of
    /// [`split`](Sequence::split), then the eleven-character negative one
    /// if it has that form. A caller keeps the first whose prefix it
    /// recognises.
    pub fn readings(name: &str) -> impl Iterator<Item = (&str, Sequence)> {
        Sequence::split(name)
            .ok()
            .into_iter()
            .chain(Sequence::split_wide_negative(name))
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
    }

    #[test]
    fn eleven_character_negative_suffixes_read_both_ways() {
        // What the server writes for -1234567890 after "x-n_".
        let name = "x-n_-1234567890";
        assert_eq!(
            Sequence::split(name),
            Ok(("x-n_-", Sequence(1_234_567_890)))
        );
        assert_eq!(
            Sequence::split_wide_negative(name),
            Some(("x-n_", Sequence(-1_234_567_890)))
        );
        assert_eq!(
            Sequence::readings(name).collect::<heapless::Vec<_, 2>>(),
            [
                ("x-n_-", Sequence(1_234_567_890)),
                ("x-n_", Sequence(-1_234_567_890))
            ]
        );
        assert_eq!(
            Sequence::split_wide_negative("lock--2147483647"),
            Some(("lock-", Sequence(-2_147_483_647)))
        );
        assert_eq!(
            Sequence::split_wide_negative("lock--1000000000"),
            Some(("lock-", Sequence(-1_000_000_000)))
        );
        // Ten characters with a leading zero are printed without the extra
        // width; and no minus, no negative reading.
        assert_eq!(Sequence::split_wide_negative("lock--0123456789"), None);
        assert_eq!(
            Sequence::split_wide_negative("lock-1234567890"),
            Some(("lock", Sequence(-1_234_567_890)))
        );
        assert_eq!(Sequence::split_wide_negative("lockx1234567890"), None);
        assert_eq!(Sequence::split_wide_negative("1234567890"), None);
        assert_eq!(Sequence::split_wide_negative("-9999999999"), None);
    }

    #[test]
    fn formats_like_java() {
        use core::fmt::Write;
        let mut s: heapless::String<16> = heapless::String::new();
        write!(s, "{}", Sequence(7)).unwrap();
        assert_eq!(s.as_str(), "0000000007");
        s.clear();
        write!(s, "{}", Sequence(-1)).unwrap();
        assert_eq!(s.as_str(), "-000000001");
    }

    #[test]
    fn order_survives_wrap_around() {
        assert!(Sequence(1).precedes(Sequence(2)));
        assert!(Sequence(i32::MAX).precedes(Sequence(i32::MIN)));
        assert!(Sequence(i32::MAX - 5).precedes(Sequence(-2_147_483_600)));
        assert!(!Sequence(3).precedes(Sequence(3)));
    }
}
