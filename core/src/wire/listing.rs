//! A `getChildren` reply decoded as it arrives, name by name, for a driver
//! whose receive buffer is smaller than the reply.
//!
//! The session reads the reply's header
//! ([`Session::handle_large_frame`](super::Session::handle_large_frame));
//! what follows is the jute `vector<ustring>` of names (and, for
//! `getChildren2`, a stat the recipes do not read). The driver hands the
//! bytes it has to [`ListingDecoder::decode`], passes the whole names to the
//! recipe as one part, drops the bytes consumed, reads more, and repeats
//! until [`is_done`](ListingDecoder::is_done). Its buffer then bounds the
//! length of one name, not the number of names.

use super::error::DecodeError;
use super::jute::Reader;
use crate::Children;

/// Where the decoding of one listing stands: how many names are left (once
/// the count has arrived).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ListingDecoder {
    left: Option<usize>,
}

/// The whole names at the start of the bytes given to
/// [`ListingDecoder::decode`].
#[derive(Clone, Debug)]
pub struct ListingPart<'a> {
    /// The names, checked (lengths and UTF-8), in server order.
    pub names: Children<'a>,
    /// Bytes they took (with the count, in the first part): drop them
    /// before the next call.
    pub consumed: usize,
}

impl ListingDecoder {
    /// A decoder for a listing whose header has been read.
    pub const fn new() -> Self {
        ListingDecoder { left: None }
    }

    /// Decodes the whole names at the start of `bytes`, the next unread
    /// bytes of the reply (never more than the reply holds). A name cut
    /// off at the end of `bytes` is left for the next call, once more of
    /// it has arrived; no part may come back empty while a name is
    /// incomplete, so a caller whose buffer is full and gets no name has a
    /// name longer than its buffer.
    ///
    /// Fails on a negative length or count, or a name that is not UTF-8:
    /// the frame is corrupt and the connection cannot be trusted.
    pub fn decode<'a>(&mut self, bytes: &'a [u8]) -> Result<ListingPart<'a>, DecodeError> {
        let mut reader = Reader::new(bytes);
        let left = match self.left {
            Some(left) => left,
            None => match reader.length() {
                Ok(count) => count,
                Err(DecodeError::Truncated) => return Ok(Self::nothing()),
                Err(e) => return Err(e),
            },
        };
        let names_start = reader;
        let mut decoded = 0;
        while decoded < left {
            let mut attempt = reader;
            match attempt.ustring() {
                Ok(_) => {
                    reader = attempt;
                    decoded += 1;
                }
                Err(DecodeError::Truncated) => break,
                Err(e) => return Err(e),
            }
        }
        self.left = Some(left - decoded);
        let names_len = names_start.rest().len() - reader.rest().len();
        let elements = names_start
            .rest()
            .get(..names_len)
            .ok_or(DecodeError::Truncated)?;
        Ok(ListingPart {
            names: Children::from_validated_jute(elements, decoded),
            consumed: bytes.len() - reader.rest().len(),
        })
    }

    /// Whether every name has been decoded (bytes after them, a
    /// `getChildren2` stat, are not part of the listing).
    pub fn is_done(&self) -> bool {
        self.left == Some(0)
    }

    fn nothing<'a>() -> ListingPart<'a> {
        ListingPart {
            names: Children::from_validated_jute(&[], 0),
            consumed: 0,
        }
    }
}

#[cfg(test)]
#[allow(clippy::indexing_slicing)]
mod tests {
    use super::*;
    use std::string::String;
    use std::vec::Vec;

    /// A jute vector of `names` followed by `tail`.
    fn listing(names: &[&str], tail: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        out.extend_from_slice(&i32::try_from(names.len()).unwrap().to_be_bytes());
        for name in names {
            out.extend_from_slice(&i32::try_from(name.len()).unwrap().to_be_bytes());
            out.extend_from_slice(name.as_bytes());
        }
        out.extend_from_slice(tail);
        out
    }

    /// Feeds `bytes` through a buffer of `window` bytes, as a driver with
    /// that buffer would; returns the names and the bytes left after them.
    fn through_window(bytes: &[u8], window: usize) -> (Vec<String>, usize) {
        let mut decoder = ListingDecoder::new();
        let mut names = Vec::new();
        let mut at = 0;
        while !decoder.is_done() {
            let filled = (at + window).min(bytes.len());
            let part = decoder.decode(&bytes[at..filled]).unwrap();
            assert!(part.consumed > 0, "stuck at {at} with a window of {window}");
            names.extend(part.names.map(String::from));
            at += part.consumed;
        }
        (names, bytes.len() - at)
    }

    #[test]
    fn any_window_that_holds_the_longest_name_gives_every_name_in_order() {
        let names = ["a", "", "bc", "x-lock-0000000001", "ü"];
        let bytes = listing(&names, &[9; 7]);
        for window in 4 + 17..bytes.len() + 2 {
            let (got, left) = through_window(&bytes, window);
            assert_eq!(got, names, "window {window}");
            assert_eq!(left, 7, "the stat after the names is not read");
        }
    }

    #[test]
    fn a_cut_name_waits_for_the_rest_and_a_cut_count_for_all_four_bytes() {
        let bytes = listing(&["abc", "de"], &[]);
        let mut d = ListingDecoder::new();
        assert_eq!(d.decode(&bytes[..3]).unwrap().consumed, 0);
        let first = d.decode(&bytes[..9]).unwrap();
        assert_eq!((first.consumed, first.names.count()), (4, 0));
        let second = d.decode(&bytes[4..11]).unwrap();
        assert_eq!(second.names.collect::<Vec<_>>(), ["abc"]);
        assert!(!d.is_done());
        let third = d.decode(&bytes[11..]).unwrap();
        assert_eq!(third.names.collect::<Vec<_>>(), ["de"]);
        assert!(d.is_done());
        assert_eq!(d.decode(&[1, 2, 3]).unwrap().consumed, 0, "done");
    }

    #[test]
    fn null_and_empty_listings_are_done_at_once() {
        for count in [[0, 0, 0, 0], [0xff; 4]] {
            let mut d = ListingDecoder::new();
            let part = d.decode(&count).unwrap();
            assert_eq!((part.consumed, part.names.count()), (4, 0));
            assert!(d.is_done());
        }
    }

    #[test]
    fn corrupt_lengths_and_text_are_refused() {
        let mut d = ListingDecoder::new();
        assert_eq!(
            d.decode(&[0xff, 0xff, 0xff, 0xfe]).map(|p| p.consumed),
            Err(DecodeError::NegativeLength(-2))
        );
        let mut bytes = listing(&["ab"], &[]);
        bytes[8] = 0xff;
        assert_eq!(
            ListingDecoder::new().decode(&bytes).map(|p| p.consumed),
            Err(DecodeError::InvalidUtf8)
        );
        let bytes = [0, 0, 0, 1, 0x80, 0, 0, 0];
        assert_eq!(
            ListingDecoder::new().decode(&bytes).map(|p| p.consumed),
            Err(DecodeError::NegativeLength(i32::MIN))
        );
    }

    /// The whole-frame decoder's names for `body`, if it reads them.
    fn whole(body: &[u8]) -> Option<Vec<String>> {
        match crate::wire::decode::response(crate::wire::Expect::GetChildren, 0, body) {
            Ok(crate::wire::Response::Children(c)) => Some(c.map(String::from).collect()),
            _ => None,
        }
    }

    /// What reading `body` through `window` bytes gave: the names, and
    /// whether it was read to the end (`Some(true)`), stopped at a name
    /// over the window or the end of the body (`Some(false)`), or refused.
    fn streamed(body: &[u8], window: usize) -> (Vec<String>, Option<bool>) {
        let mut decoder = ListingDecoder::new();
        let mut names = Vec::new();
        let mut at = 0;
        while !decoder.is_done() {
            let end = (at + window).min(body.len());
            let Ok(part) = decoder.decode(&body[at..end]) else {
                return (names, None);
            };
            names.extend(part.names.map(String::from));
            if part.consumed == 0 {
                return (names, Some(false));
            }
            at += part.consumed;
        }
        (names, Some(true))
    }

    proptest::proptest! {
        /// Differential: through any window, the names are the whole
        /// decoder's, and a corrupt body is refused by both.
        #[test]
        fn through_any_window_the_names_are_the_whole_decoders(
            names in proptest::collection::vec("[a-z0-9_ü-]{0,40}", 0..40),
            tail in proptest::collection::vec(proptest::num::u8::ANY, 0..90),
            window in 8usize..300,
            flip in proptest::option::of((proptest::num::usize::ANY, proptest::num::u8::ANY)),
        ) {
            let names: Vec<&str> = names.iter().map(String::as_str).collect();
            let mut body = listing(&names, &tail);
            if let Some((at, byte)) = flip {
                let at = at % body.len();
                body[at] = byte;
            }
            let (got, outcome) = streamed(&body, window);
            match (whole(&body), outcome) {
                (Some(expected), Some(true)) => proptest::prop_assert_eq!(got, expected),
                (Some(expected), Some(false)) => {
                    proptest::prop_assert!(expected.iter().any(|n| n.len() + 4 > window));
                    proptest::prop_assert_eq!(&got[..], &expected[..got.len()]);
                }
                (Some(_), None) => proptest::prop_assert!(false, "refused what the whole decoder reads"),
                (None, Some(true)) => proptest::prop_assert!(false, "read a corrupt listing"),
                (None, _) => {}
            }
        }
    }
}
