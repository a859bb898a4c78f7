//! The request bookkeeping every recipe shares: what to send next, what is
//! in flight, and which session epoch its answers belong to.
//!
//! A recipe names its requests with a small `Copy` enum of its own (`Op`)
//! and materialises the actual [`Request`](crate::Request) only when the
//! driver polls, so nothing here borrows or allocates.

use heapless::Vec;

use crate::{RequestId, RequestIds};

/// Queued and in-flight operations of one recipe, tagged with epochs.
#[derive(Debug)]
pub(crate) struct Pipeline<Op, const QUEUED: usize, const IN_FLIGHT: usize> {
    ids: RequestIds,
    /// In order, the next to send first: a `Vec` rather than a ring
    /// buffer, whose index arithmetic measured 56 B more herdless code
    /// and 156 B more flash in the STM32 firmware (the queue is a handful
    /// of ops long, so shifting it costs nothing worth counting).
    queued: Vec<Op, QUEUED>,
    in_flight: Vec<(RequestId, Op), IN_FLIGHT>,
}

impl<Op: Copy + PartialEq, const QUEUED: usize, const IN_FLIGHT: usize>
    Pipeline<Op, QUEUED, IN_FLIGHT>
{
    pub(crate) const fn new() -> Self {
        Pipeline {
            ids: RequestIds::new(),
            queued: Vec::new(),
            in_flight: Vec::new(),
        }
    }

    /// Queues `op` unless it is already queued or in flight (a second copy
    /// would only fetch the same answer twice).
    pub(crate) fn queue(&mut self, op: Op) {
        if !self.is_pending(op) {
            let _ = self.queued.push(op);
        }
    }

    /// Queues `op` even if it is already queued or in flight (an answer to
    /// a newer copy is then wanted).
    pub(crate) fn push(&mut self, op: Op) {
        let _ = self.queued.push(op);
    }

    /// Queues `op` ahead of everything queued.
    pub(crate) fn queue_first(&mut self, op: Op) {
        let _ = self.queued.insert(0, op);
    }

    /// Whether nothing is queued or in flight.
    pub(crate) fn is_empty(&self) -> bool {
        self.queued.is_empty() && self.in_flight.is_empty()
    }

    /// Whether `op` is queued or in flight.
    pub(crate) fn is_pending(&self, op: Op) -> bool {
        self.is_queued(op) || self.is_in_flight(op)
    }

    /// Whether `op` is queued, not yet sent.
    pub(crate) fn is_queued(&self, op: Op) -> bool {
        self.queued.contains(&op)
    }

    /// Whether `op` is in flight.
    pub(crate) fn is_in_flight(&self, op: Op) -> bool {
        self.in_flight.iter().any(|(_, o)| *o == op)
    }

    /// Whether another request may go out.
    pub(crate) fn has_room(&self) -> bool {
        !self.in_flight.is_full()
    }

    /// The next queued op, not yet recorded as sent.
    pub(crate) fn pop_queued(&mut self) -> Option<Op> {
        if self.queued.is_empty() {
            return None;
        }
        Some(self.queued.remove(0))
    }

    /// Records `op` as sent and gives the id its answer will carry.
    pub(crate) fn record(&mut self, op: Op) -> RequestId {
        let id = self.ids.next_id();
        let _ = self.in_flight.push((id, op));
        id
    }

    /// The next queued op, recorded as sent, if there is room.
    pub(crate) fn next(&mut self) -> Option<(RequestId, Op)> {
        if !self.has_room() {
            return None;
        }
        let op = self.pop_queued()?;
        Some((self.record(op), op))
    }

    /// The op in flight with `id`, left there (a listing read in parts is
    /// taken with its last part); `None` as for [`take`](Self::take).
    pub(crate) fn op_of(&self, id: RequestId) -> Option<Op> {
        if !self.ids.is_current(id) {
            return None;
        }
        self.in_flight
            .iter()
            .find_map(|(i, op)| (*i == id).then_some(*op))
    }

    /// Whether a part of the listing answering `id`
    /// ([`Recipe::handle_listing_part`](crate::Recipe::handle_listing_part))
    /// belongs to `op`, a request in flight; the last part takes it off
    /// the in-flight list, as a whole answer does.
    pub(crate) fn listing_part_of(&mut self, id: RequestId, op: Op, last: bool) -> bool {
        if self.op_of(id) != Some(op) {
            return false;
        }
        if last {
            self.take(id);
        }
        true
    }

    /// The op an answer belongs to, removed from the in-flight list; `None`
    /// for an answer from an earlier epoch or to a forgotten request.
    pub(crate) fn take(&mut self, id: RequestId) -> Option<Op> {
        if !self.ids.is_current(id) {
            return None;
        }
        let position = self.in_flight.iter().position(|(i, _)| *i == id)?;
        Some(self.in_flight.remove(position).1)
    }

    /// Drops the queued ops `drop` selects; those in flight stay.
    pub(crate) fn unqueue(&mut self, drop: impl Fn(Op) -> bool) {
        keep(&mut self.queued, |op| !drop(*op));
    }

    /// Drops the queued and in-flight ops `drop` selects; answers to the
    /// latter are then ignored.
    pub(crate) fn forget(&mut self, drop: impl Fn(Op) -> bool) {
        self.unqueue(&drop);
        keep(&mut self.in_flight, |entry| !drop(entry.1));
    }

    /// Empties the queue (the in-flight ops stay).
    pub(crate) fn clear_queued(&mut self) {
        self.queued.clear();
    }

    /// Forgets everything, queued and in flight, in the same epoch.
    pub(crate) fn clear(&mut self) {
        self.queued.clear();
        self.in_flight.clear();
    }

    /// The connection is gone: moves to a new epoch (so late answers are
    /// ignored), empties the queue and the in-flight list, and hands back
    /// the ops that were in flight, whose answers will never come.
    pub(crate) fn lose(&mut self) -> Vec<Op, IN_FLIGHT> {
        self.ids.new_epoch();
        self.queued.clear();
        // Pushed one by one: `collect` would carry heapless's overflow
        // panic, which cannot happen here (both hold `IN_FLIGHT`).
        let mut lost = Vec::new();
        for (_, op) in self.in_flight.iter() {
            let _ = lost.push(*op);
        }
        self.in_flight.clear();
        lost
    }
}

/// Keeps the items of `items` that `wanted` selects, in order.
///
/// Copied into a new `Vec` rather than `Vec::retain`, whose in-place
/// shifting (with its guard against a panicking predicate) measured 92 B
/// more herdless code and 152 B more flash in the STM32 firmware
/// (scripts/firmware-size.sh); these lists are a dozen bytes.
fn keep<T: Copy, const N: usize>(items: &mut Vec<T, N>, wanted: impl Fn(&T) -> bool) {
    let mut kept = Vec::new();
    for item in items.iter().filter(|item| wanted(item)) {
        let _ = kept.push(*item);
    }
    *items = kept;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    enum Op {
        A,
        B,
        C,
    }

    #[test]
    fn answers_match_their_op_and_stale_epochs_are_ignored() {
        let mut p: Pipeline<Op, 4, 2> = Pipeline::new();
        p.queue(Op::A);
        p.queue(Op::A);
        p.queue(Op::B);
        p.queue(Op::C);
        let (a, op_a) = p.next().unwrap();
        let (b, op_b) = p.next().unwrap();
        assert_eq!((op_a, op_b), (Op::A, Op::B));
        assert!(p.next().is_none(), "two in flight at most");
        assert_eq!(p.op_of(b), Some(Op::B));
        assert_eq!(p.op_of(b), Some(Op::B), "left in flight");
        assert_eq!(p.take(b), Some(Op::B));
        assert_eq!(p.op_of(b), None);
        assert_eq!(p.take(b), None);
        let (_, op_c) = p.next().unwrap();
        assert_eq!(op_c, Op::C);
        assert_eq!(p.lose(), [Op::A, Op::C]);
        assert!(!p.is_in_flight(Op::A));
        assert_eq!(p.take(a), None, "from the lost epoch");
        let (c, _) = {
            p.queue(Op::C);
            p.next().unwrap()
        };
        assert_eq!(p.op_of(c), Some(Op::C));
        p.lose();
        assert_eq!(p.op_of(c), None, "from the lost epoch");
    }

    #[test]
    fn forget_drops_queued_and_in_flight() {
        let mut p: Pipeline<Op, 4, 4> = Pipeline::new();
        p.queue(Op::A);
        let (a, _) = p.next().unwrap();
        p.queue(Op::B);
        p.queue(Op::C);
        p.forget(|op| op != Op::C);
        assert_eq!(p.take(a), None);
        assert_eq!(p.pop_queued(), Some(Op::C));
        assert_eq!(p.pop_queued(), None);
    }

    #[test]
    fn what_is_kept_stays_in_order() {
        let mut p: Pipeline<Op, 6, 4> = Pipeline::new();
        for op in [Op::A, Op::B, Op::C] {
            p.push(op);
        }
        let (a, _) = p.next().unwrap();
        let (b, _) = p.next().unwrap();
        for op in [Op::B, Op::A, Op::B] {
            p.push(op);
        }
        p.forget(|op| op == Op::A);
        assert_eq!((p.op_of(a), p.op_of(b)), (None, Some(Op::B)));
        assert_eq!(p.pop_queued(), Some(Op::C));
        p.unqueue(|op| op == Op::B);
        assert_eq!(p.pop_queued(), None);
        assert_eq!(p.op_of(b), Some(Op::B), "unqueue leaves what is in flight");
    }
}
