//! Creating a recipe's missing ancestors: one persistent node per level,
//! from the topmost down, each create queued when the one above goes out,
//! so the whole chain travels in one flight (`NodeExists` counts as done).

use heapless::String;

use crate::engine::pipeline::Pipeline;
use crate::path;
use crate::{Acl, CreateMode, Request, RequestId};

/// A recipe's op that can stand for "create the `level`-th ancestor"
/// (level 1 is the topmost).
pub(crate) trait AncestorOp: Copy + PartialEq {
    /// The level this op creates, if it creates an ancestor.
    fn ancestor_level(self) -> Option<u8>;
    /// The op that creates the `level`-th ancestor.
    fn ancestor(level: u8) -> Self;
}

/// Implements [`AncestorOp`] for a recipe's `Op`, whose `Ensure(level)`
/// creates the `level`-th ancestor.
macro_rules! ancestor_op {
    ($op:ident) => {
        impl $crate::engine::ancestors::AncestorOp for $op {
            fn ancestor_level(self) -> Option<u8> {
                match self {
                    $op::Ensure(level) => Some(level),
                    _ => None,
                }
            }

            fn ancestor(level: u8) -> Self {
                $op::Ensure(level)
            }
        }
    };
}
pub(crate) use ancestor_op;

/// How many ancestors `dir` has to create: its own components (`/a/b` has
/// 2), none for the root.
pub(crate) fn depth(dir: &str) -> u8 {
    if dir == "/" {
        0
    } else {
        path::depth(dir)
    }
}

/// How often a recipe re-creates its vanished directory before it gives
/// up: each time, someone deleted it again since, and a bound ends a fight
/// with a deleter. A `NoNode` while the last re-creation was never answered
/// (its creates lost with the connection) says nothing of a deleter and is
/// not counted: the directory may simply not have been made yet.
///
/// One byte: the count, and in its top bit whether the last re-creation is
/// still unanswered (the lock and the election hold one each, in RAM that
/// a microcontroller counts).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Retries(u8);

impl Retries {
    const MAX: u8 = 8;
    const UNANSWERED: u8 = 0x80;

    /// Counts one more re-creation; false once the bound is reached.
    pub(crate) fn take(&mut self) -> bool {
        if self.0 & Self::UNANSWERED != 0 {
            return true;
        }
        let allowed = self.0 < Self::MAX;
        if allowed {
            self.0 = (self.0 + 1) | Self::UNANSWERED;
        }
        allowed
    }

    /// An ancestor's create was answered: the directory was made (or found),
    /// so a later `NoNode` means it vanished again.
    pub(crate) fn answered(&mut self) {
        self.0 &= !Self::UNANSWERED;
    }

    /// The directory is there (again): the count starts over.
    pub(crate) fn reset(&mut self) {
        self.0 = 0;
    }
}

/// The create of `dir`'s `level`-th ancestor, its path written into
/// `scratch` (a prefix of a path that fits it, so the write cannot fail).
pub(crate) fn create<'a, const N: usize>(
    dir: &str,
    level: u8,
    scratch: &'a mut String<N>,
    acl: Acl<'a>,
) -> Request<'a> {
    let end = path::nth_ancestor_end(dir, level);
    scratch.clear();
    // `get`, not an index: the end is always at a `/` or the end of
    // `dir`, and an index would link in core's panic for a cut inside a
    // character, whose message needs `char`'s `Debug` and the Unicode
    // tables (5 KB of flash on the STM32 firmware).
    let _ = scratch.push_str(dir.get(..end).unwrap_or(dir));
    Request::Create {
        path: scratch,
        data: &[],
        acl,
        mode: CreateMode::Persistent,
    }
}

impl<Op: AncestorOp, const QUEUED: usize, const IN_FLIGHT: usize> Pipeline<Op, QUEUED, IN_FLIGHT> {
    /// The next op to send, as [`Pipeline::next`]; an ancestor's create
    /// queues the next level's first, down to `depth`.
    pub(crate) fn next_creating_ancestors(&mut self, depth: u8) -> Option<(RequestId, Op)> {
        let (id, op) = self.next()?;
        self.follow_ancestor(op, depth);
        Some((id, op))
    }

    /// After `op` went out: if it creates an ancestor above `depth`, the
    /// next level's create goes first.
    pub(crate) fn follow_ancestor(&mut self, op: Op, depth: u8) {
        if let Some(level) = op.ancestor_level() {
            if level < depth {
                self.queue_first(Op::ancestor(level + 1));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Retries;

    #[test]
    fn only_a_directory_made_and_gone_again_counts() {
        let mut r = Retries::default();
        // Made, then gone again, eight times: then no more.
        for _ in 0..8 {
            assert!(r.take());
            r.answered();
        }
        assert!(!r.take());
        // Unanswered re-creations (lost with the connection) count once.
        let mut r = Retries::default();
        for _ in 0..100 {
            assert!(r.take());
        }
        r.answered();
        for _ in 0..7 {
            assert!(r.take());
            r.answered();
        }
        assert!(!r.take(), "the first counted too");
        r.reset();
        assert!(r.take());
    }
}
