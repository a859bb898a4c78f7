//! A double barrier's one pass over its directory's listing: how many
//! processes, whether the own node is among them, and the lowest and
//! highest names.
//!
//! The pass is a fold kept between calls, so that a listing handed over in
//! parts (herdless-embassy's, when the reply is larger than its receive
//! buffer) is taken name by name: memory bounds the length of a name, not
//! the number of processes. A whole listing goes through the same fold.

use core::cmp::Ordering;

use heapless::Vec;

use super::READY;
use crate::path::{self, PathError};
use crate::{Children, RequestId};

/// What a listing showed, once all of it was read.
#[derive(Clone, Debug, Default)]
pub(super) struct RollCall<const N: usize> {
    /// The listing being read: a part of another one starts afresh.
    listing: Option<RequestId>,
    /// Process nodes (every name but `ready`).
    pub(super) count: u32,
    pub(super) own_present: bool,
    pub(super) lowest: Option<Kept<N>>,
    pub(super) highest: Option<Kept<N>>,
}

impl<const N: usize> RollCall<N> {
    /// Starts reading the listing emitted with `id`, unless that one is
    /// being read already. A listing cut short ends without its last part,
    /// and is asked again under another id, so what its parts held is
    /// dropped here.
    pub(super) fn reading(&mut self, id: RequestId) {
        if self.listing != Some(id) {
            *self = RollCall {
                listing: Some(id),
                ..RollCall::default()
            };
        }
    }

    /// Takes in the names of a part of the listing, or of all of it.
    pub(super) fn take(&mut self, names: Children<'_>, own: &str) {
        for name in names {
            self.take_name(name, own);
        }
    }

    fn take_name(&mut self, name: &str, own: &str) {
        if name == READY {
            return;
        }
        self.count = self.count.saturating_add(1);
        self.own_present |= name == own;
        if self
            .lowest
            .as_ref()
            .is_none_or(|l| l.order(name) == Ordering::Less)
        {
            self.lowest = Some(Kept::new(name));
        }
        if self
            .highest
            .as_ref()
            .is_none_or(|h| h.order(name) == Ordering::Greater)
        {
            self.highest = Some(Kept::new(name));
        }
    }

    /// Whether the lowest name is the own one.
    pub(super) fn own_is_lowest(&self, own: &str) -> bool {
        self.lowest.as_ref().is_some_and(|l| l.is(own))
    }
}

/// A name kept past the part that held it: its first `N` bytes, and its
/// length.
#[derive(Clone, Debug, Default)]
pub(super) struct Kept<const N: usize> {
    bytes: Vec<u8, N>,
    len: usize,
}

impl<const N: usize> Kept<N> {
    fn new(name: &str) -> Self {
        let whole = name.as_bytes();
        let mut bytes = Vec::new();
        // Cut on a byte, not a character: a cut name is only ever compared
        // as bytes, and never read back as a string.
        let _ = bytes.extend_from_slice(whole.get(..N).unwrap_or(whole));
        Kept {
            bytes,
            len: whole.len(),
        }
    }

    /// Whether all of the name is kept.
    fn whole(&self) -> bool {
        self.bytes.len() == self.len
    }

    fn is(&self, name: &str) -> bool {
        self.whole() && self.bytes == name.as_bytes()
    }

    /// How `name` orders against the kept name, as `str`s order (by their
    /// bytes). Against a name longer than `N`, whose kept bytes are a
    /// prefix of it, a name that starts with those bytes too and is longer
    /// than `N` is told `Equal`: which of the two is lower cannot be known,
    /// and neither fits a path of `N` bytes, so a process that would wait
    /// on either fails the same way.
    fn order(&self, name: &str) -> Ordering {
        let name = name.as_bytes();
        match name.cmp(&self.bytes) {
            order if self.whole() => order,
            // A prefix of a longer name is lower than it.
            Ordering::Equal => Ordering::Less,
            Ordering::Greater if name.starts_with(&self.bytes) => Ordering::Equal,
            order => order,
        }
    }

    /// The path of the name in `dir`, into `out`: refused as
    /// [`path::join_into`] refuses it when the name is too long for `N`.
    pub(super) fn join_into(
        &self,
        out: &mut heapless::String<N>,
        dir: &str,
    ) -> Result<(), PathError> {
        match core::str::from_utf8(&self.bytes) {
            Ok(name) if self.whole() => path::join_into(out, dir, name),
            _ => Err(PathError::TooLong {
                // The joined length of an empty name is the directory and
                // its separator.
                needed: path::joined_len(dir, "") + self.len,
                capacity: N,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call<const N: usize>(names: &[&str], own: &str) -> RollCall<N> {
        let mut call = RollCall::default();
        call.reading(RequestId::new(0, 1));
        call.take(Children::new(&names), own);
        call
    }

    fn joined<const N: usize>(kept: &Option<Kept<N>>) -> Result<heapless::String<N>, PathError> {
        let mut out = heapless::String::new();
        kept.as_ref().unwrap().join_into(&mut out, "/b")?;
        Ok(out)
    }

    #[test]
    fn counts_processes_and_finds_the_extremes_and_the_own_name() {
        let c = call::<32>(&["p3", READY, "p1", "p7", "p2"], "p2");
        assert_eq!(c.count, 4);
        assert!(c.own_present);
        assert_eq!(joined(&c.lowest).unwrap(), "/b/p1");
        assert_eq!(joined(&c.highest).unwrap(), "/b/p7");
        assert!(!c.own_is_lowest("p2"));
        assert!(call::<32>(&["p3", "p1"], "p1").own_is_lowest("p1"));
        let absent = call::<32>(&["p3", READY], "p1");
        assert_eq!(absent.count, 1);
        assert!(!absent.own_present);
    }

    #[test]
    fn a_listing_of_ready_alone_has_no_process() {
        let c = call::<32>(&[READY], "p1");
        assert_eq!(c.count, 0);
        assert!(c.lowest.is_none() && c.highest.is_none());
    }

    #[test]
    fn a_part_of_another_listing_starts_afresh_and_the_same_listing_goes_on() {
        let mut c = call::<32>(&["p1", "p2"], "p1");
        c.reading(RequestId::new(0, 1));
        c.take(Children::new(&&["p3"][..]), "p1");
        assert_eq!(c.count, 3);
        c.reading(RequestId::new(0, 2));
        assert_eq!(c.count, 0);
        assert!(!c.own_present && c.lowest.is_none() && c.highest.is_none());
        c.take(Children::new(&&["p9"][..]), "p1");
        assert_eq!(joined(&c.lowest).unwrap(), "/b/p9");
    }

    #[test]
    fn names_order_as_strings_do_and_a_prefix_is_lower() {
        let c = call::<32>(&["ab", "a", "b", "aa", "é", "z"], "x");
        assert_eq!(joined(&c.lowest).unwrap(), "/b/a");
        assert_eq!(joined(&c.highest).unwrap(), "/b/é");
    }

    #[test]
    fn a_name_longer_than_the_capacity_is_ordered_by_its_kept_bytes() {
        // Kept: "abcd" of "abcdef".
        let long = Kept::<4>::new("abcdef");
        assert!(!long.whole());
        assert_eq!(long.order("abc"), Ordering::Less);
        assert_eq!(long.order("abcd"), Ordering::Less);
        assert_eq!(long.order("abca"), Ordering::Less);
        assert_eq!(long.order("abce"), Ordering::Greater);
        assert_eq!(long.order("b"), Ordering::Greater);
        assert_eq!(long.order("abcdzz"), Ordering::Equal);
        assert_eq!(long.order("abcda"), Ordering::Equal);
        assert!(!long.is("abcd"));
        let short = Kept::<4>::new("abcd");
        assert!(short.whole() && short.is("abcd"));
        assert_eq!(short.order("abcd"), Ordering::Equal);
        assert_eq!(short.order("abcde"), Ordering::Greater);
    }

    #[test]
    fn a_name_too_long_to_wait_on_is_refused_as_a_join_refuses_it() {
        let c = call::<8>(&["p1", "a-long-name"], "p1");
        assert_eq!(joined(&c.highest).unwrap(), "/b/p1");
        assert_eq!(joined(&c.lowest), path::join::<8>("/b", "a-long-name"));
        assert!(joined(&c.lowest).is_err());
    }
}
