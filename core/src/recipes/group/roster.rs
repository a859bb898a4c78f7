//! The group observer's roster: the member names it holds, and its one pass
//! over a listing of the group.
//!
//! The pass is a fold kept between calls, so that a listing handed over in
//! parts (herdless-embassy's, when the reply is larger than its receive
//! buffer) is taken name by name: the receive buffer bounds the length of
//! a name, not the size of the group. A whole listing goes through the
//! same fold.
//!
//! Each held name carries a mark saying whether this listing showed it.
//! A name the listing holds and the roster does not is put in its place at
//! once; the names no part showed are the members that left, and are only
//! known at the last part. When the roster is full, the largest held name
//! makes room for a smaller one, so that the roster ends as the group's
//! first names in name order. A member that left can take room until the
//! last part, though: when it did, and a name of the group was left out
//! for want of room, the roster cannot tell which, and the group is listed
//! again ([`Outcome::ReadAgain`]) with those members gone.

use core::fmt;

use heapless::{String, Vec};

use crate::{Children, RequestId};

/// What the listing being read showed of a held name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mark {
    /// Held before this listing, and not in any of its parts yet.
    Unseen,
    /// Held before this listing, and in it.
    Seen,
    /// Put in the roster by this listing.
    New,
}

/// What a whole listing made of the roster.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Outcome {
    /// The roster holds the group's names, in name order, up to its room:
    /// all of them if `complete`.
    Exact {
        /// Members in the listing.
        count: u32,
        /// Whether every member is held (none left out for want of room,
        /// or for a name over the room of one).
        complete: bool,
    },
    /// Members that left took room that others needed until the last part:
    /// read the group again, now without them.
    ReadAgain,
}

/// Up to `M` member names of up to `K` bytes, sorted, and the listing being
/// read.
#[derive(Clone, Default)]
pub(super) struct Roster<const M: usize, const K: usize> {
    /// Sorted, unique.
    names: Vec<String<K>, M>,
    /// One for each of `names`, at the same index.
    marks: Vec<Mark, M>,
    /// The listing being read: a part of another one starts afresh.
    listing: Option<RequestId>,
    /// Members in the listing so far.
    count: u32,
    /// A name of the listing is over `K` bytes.
    too_long: bool,
    /// A name of the listing is not held for want of room.
    crowded: bool,
    /// Names that came into the roster since the counts were last taken.
    joined: u32,
    /// Names that went out of it since then.
    left: u32,
}

impl<const M: usize, const K: usize> Roster<M, K> {
    /// The held names, in name order.
    pub(super) fn names(&self) -> impl Iterator<Item = &str> + '_ {
        self.names.iter().map(|n| n.as_str())
    }

    /// Number of names held.
    pub(super) fn len(&self) -> usize {
        self.names.len()
    }

    /// Whether `name` is held.
    pub(super) fn contains(&self, name: &str) -> bool {
        self.find(name).is_ok()
    }

    fn find(&self, name: &str) -> Result<usize, usize> {
        self.names.binary_search_by(|n| n.as_str().cmp(name))
    }

    /// Starts reading the listing emitted with `id`, unless that one is
    /// being read already. A listing cut short ends without its last part
    /// and is asked again under another id: what its parts put in the
    /// roster stays (they were members when it was read), and the next
    /// listing marks all of it afresh.
    pub(super) fn reading(&mut self, id: RequestId) {
        if self.listing == Some(id) {
            return;
        }
        self.listing = Some(id);
        self.count = 0;
        self.too_long = false;
        self.crowded = false;
        for mark in self.marks.iter_mut() {
            *mark = Mark::Unseen;
        }
    }

    /// Whether a listing's parts were taken and its last part was not.
    pub(super) fn is_reading(&self) -> bool {
        self.listing.is_some()
    }

    /// Takes in the names of a part of the listing, or of all of it.
    pub(super) fn take(&mut self, names: Children<'_>) {
        for name in names {
            self.take_name(name);
        }
    }

    fn take_name(&mut self, name: &str) {
        self.count = self.count.saturating_add(1);
        let at = match self.find(name) {
            Ok(i) => {
                if let Some(mark @ Mark::Unseen) = self.marks.get_mut(i) {
                    *mark = Mark::Seen;
                }
                return;
            }
            Err(at) => at,
        };
        let Ok(owned) = String::<K>::try_from(name) else {
            self.too_long = true;
            return;
        };
        if self.names.is_full() {
            if at >= self.names.len() {
                self.crowded = true;
                return;
            }
            // The largest held name makes room.
            self.names.pop();
            match self.marks.pop() {
                // Put in by this listing: it never came in after all.
                Some(Mark::New) => {
                    self.joined = self.joined.saturating_sub(1);
                    self.crowded = true;
                }
                Some(Mark::Seen) => {
                    self.left = self.left.saturating_add(1);
                    self.crowded = true;
                }
                // Whether it is still a member, a later part may say (and
                // put it back, or leave it out for want of room).
                _ => self.left = self.left.saturating_add(1),
            }
        }
        // Room was made, or there was some.
        let _ = self.names.insert(at, owned);
        let _ = self.marks.insert(at, Mark::New);
        self.joined = self.joined.saturating_add(1);
    }

    /// The listing's last part was taken: the names it did not show go.
    pub(super) fn conclude(&mut self) -> Outcome {
        self.listing = None;
        let marks = &self.marks;
        let mut index = 0;
        self.names.retain(|_| {
            let stays = marks.get(index) != Some(&Mark::Unseen);
            index += 1;
            stays
        });
        let held = self.marks.len();
        self.marks.retain(|mark| *mark != Mark::Unseen);
        let gone = held - self.marks.len();
        self.left = self
            .left
            .saturating_add(u32::try_from(gone).unwrap_or(u32::MAX));
        if self.crowded && gone > 0 {
            return Outcome::ReadAgain;
        }
        Outcome::Exact {
            count: self.count,
            complete: !self.crowded && !self.too_long,
        }
    }

    /// The group is gone, and its members with it.
    pub(super) fn clear(&mut self) {
        let gone = u32::try_from(self.names.len()).unwrap_or(u32::MAX);
        self.left = self.left.saturating_add(gone);
        self.names.clear();
        self.marks.clear();
        self.listing = None;
    }

    /// The names that came in and went out since the last call.
    pub(super) fn take_counts(&mut self) -> (u32, u32) {
        let counts = (self.joined, self.left);
        self.joined = 0;
        self.left = 0;
        counts
    }
}

/// The held names, as a list: the marks and the fold are the pass's own.
impl<const M: usize, const K: usize> fmt::Debug for Roster<M, K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.names()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(n: u32) -> RequestId {
        RequestId::new(0, n)
    }

    fn read<const M: usize>(roster: &mut Roster<M, 8>, listing: u32, parts: &[&[&str]]) -> Outcome {
        roster.reading(id(listing));
        for part in parts {
            roster.take(Children::new(part));
        }
        roster.conclude()
    }

    fn exact(count: u32, complete: bool) -> Outcome {
        Outcome::Exact { count, complete }
    }

    fn held<const M: usize>(roster: &Roster<M, 8>) -> std::vec::Vec<&str> {
        roster.names().collect()
    }

    #[test]
    fn a_listing_in_parts_is_held_sorted_and_counted() {
        let mut r: Roster<8, 8> = Roster::default();
        let outcome = read(&mut r, 1, &[&["c", "a"], &["b"]]);
        assert_eq!(outcome, exact(3, true));
        assert_eq!(held(&r), ["a", "b", "c"]);
        assert_eq!(r.take_counts(), (3, 0));
        assert!(r.contains("b") && !r.contains("d"));
    }

    #[test]
    fn names_no_part_showed_leave_at_the_last_part() {
        let mut r: Roster<8, 8> = Roster::default();
        read(&mut r, 1, &[&["a", "b", "c"]]);
        r.take_counts();
        r.reading(id(2));
        r.take(Children::new(&&["d", "a"][..]));
        // Not before the last part: "b" may be in one still to come.
        assert_eq!(held(&r), ["a", "b", "c", "d"]);
        r.take(Children::new(&&["b"][..]));
        assert_eq!(r.conclude(), exact(3, true));
        assert_eq!(held(&r), ["a", "b", "d"]);
        assert_eq!(r.take_counts(), (1, 1));
    }

    #[test]
    fn a_full_roster_keeps_the_first_names_and_says_it_is_incomplete() {
        let mut r: Roster<2, 8> = Roster::default();
        let outcome = read(&mut r, 1, &[&["c"], &["a", "b"]]);
        assert_eq!(outcome, exact(3, false));
        assert_eq!(held(&r), ["a", "b"]);
        // "c" came in and was pushed out by "a": it never came in.
        assert_eq!(r.take_counts(), (2, 0));
    }

    #[test]
    fn a_held_name_pushed_out_by_a_smaller_one_has_left_the_roster() {
        let mut r: Roster<2, 8> = Roster::default();
        read(&mut r, 1, &[&["b", "c"]]);
        r.take_counts();
        let outcome = read(&mut r, 2, &[&["c", "b"], &["a"]]);
        assert_eq!(outcome, exact(3, false));
        assert_eq!(held(&r), ["a", "b"]);
        assert_eq!(r.take_counts(), (1, 1));
    }

    #[test]
    fn a_member_that_left_holding_room_another_needed_makes_it_read_again() {
        let mut r: Roster<2, 8> = Roster::default();
        read(&mut r, 1, &[&["b", "c"]]);
        r.take_counts();
        // "b" and "c" left, "d" and "e" joined: both are turned away while
        // the two that left still hold the room.
        assert_eq!(read(&mut r, 2, &[&["d", "e"]]), Outcome::ReadAgain);
        assert!(r.names().next().is_none());
        assert_eq!(read(&mut r, 3, &[&["e"], &["d"]]), exact(2, true));
        assert_eq!(held(&r), ["d", "e"]);
        assert_eq!(r.take_counts(), (2, 2));
    }

    #[test]
    fn room_a_leaver_gave_up_to_a_smaller_name_needs_no_second_read() {
        let mut r: Roster<2, 8> = Roster::default();
        read(&mut r, 1, &[&["a", "c"]]);
        r.take_counts();
        // "c" left and "b" joined: "b" takes the place "c" had.
        let outcome = read(&mut r, 2, &[&["b", "a"]]);
        assert_eq!(outcome, exact(2, true));
        assert_eq!(held(&r), ["a", "b"]);
        assert_eq!(r.take_counts(), (1, 1));
    }

    #[test]
    fn a_name_over_its_room_is_left_out_and_said_so() {
        let mut r: Roster<4, 8> = Roster::default();
        let outcome = read(&mut r, 1, &[&["a", "far-too-long"]]);
        assert_eq!(outcome, exact(2, false));
        assert_eq!(held(&r), ["a"]);
    }

    #[test]
    fn a_listing_cut_short_keeps_what_it_brought_and_the_next_marks_afresh() {
        let mut r: Roster<8, 8> = Roster::default();
        read(&mut r, 1, &[&["a", "b"]]);
        r.take_counts();
        r.reading(id(2));
        r.take(Children::new(&&["c"][..]));
        // Cut short: the next listing, without "a" and "c".
        let outcome = read(&mut r, 3, &[&["b"], &["d"]]);
        assert_eq!(outcome, exact(2, true));
        assert_eq!(held(&r), ["b", "d"]);
        // "c" came in with the listing cut short and left with the next.
        assert_eq!(r.take_counts(), (2, 2));
    }

    #[test]
    fn parts_of_the_same_listing_go_on_counting() {
        let mut r: Roster<8, 8> = Roster::default();
        r.reading(id(1));
        r.take(Children::new(&&["a"][..]));
        r.reading(id(1));
        r.take(Children::new(&&["b"][..]));
        assert_eq!(r.conclude(), exact(2, true));
    }

    #[test]
    fn a_group_gone_takes_every_held_name_with_it() {
        let mut r: Roster<8, 8> = Roster::default();
        read(&mut r, 1, &[&["a", "b"]]);
        r.take_counts();
        r.clear();
        assert_eq!(r.len(), 0);
        assert_eq!(r.take_counts(), (0, 2));
    }
}
