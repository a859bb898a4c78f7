//! Queues and priority queues (the recipes page's "Queues" and "Priority
//! Queues").
//!
//! Producers add items as sequential nodes under the queue directory,
//! persistent by default (ephemeral as the recipes page describes, as an
//! option); consumers take the lowest item. Item names carry the producer's
//! GUID, so a create whose reply was lost is found again instead of added
//! twice:
//!
//! * plain: `<guid>-queue-<sequence>`;
//! * with a priority: `<guid>-queue-<YY>-<sequence>`, `YY` from `00`
//!   (first) to `99`, "lower numbers representing higher priority (just like
//!   UNIX)". Items are taken by priority, then by sequence; an item without
//!   a priority counts as priority 00.
//!
//! Consumers also take the items other libraries put, in the same order (see
//! [`ItemKey::parse`]): the recipes page's and Curator's `queue-<seq>`,
//! Curator's priority names, ZooKeeper's and Curator's `qn-<seq>`, and
//! Kazoo's `entry-<ppp>-<seq>`. Sequence numbers are compared by their
//! wrapped distance, so items keep their creation order after the
//! directory's counter passes `i32::MAX` and goes negative.
//!
//! A consumer lists the directory once and works through the lowest items of
//! that one listing (a caller-sized batch) before listing again: read an
//! item's data, then delete it; the delete decides who took it, so two
//! consumers never both take one item (a `NoNode` means someone else did:
//! the next item). When the queue is empty it waits on the directory's child
//! watch; when the directory itself is missing (never created, deleted by an
//! operator, or a container reaped when empty), a take waits for its
//! creation and goes on with the new directory's items. A priority consumer
//! keeps that watch while it works, and drops its batch on every
//! notification, so an item of higher priority added later is taken first.
//!
//! **The one ambiguity ZooKeeper leaves**: a delete whose reply is lost with
//! the connection. If the item is still there afterwards, the delete is sent
//! again; if it is gone, either this consumer's delete or another's removed
//! it, and nothing on the server tells which. The consumer then delivers the
//! item marked `certain: false` (at least once: another consumer may have
//! taken it too), rather than drop it (at most once: it may be lost). A
//! delete cut by a session expiry is checked the same way on the next
//! session (items outlive sessions). A producer whose create reply was lost
//! looks for its GUID (on the next session, if its session expired
//! meanwhile: persistent items outlive it); if a consumer took the item
//! meanwhile, it cannot be found and is added again, so puts are at least
//! once under connection loss too.

mod consumer;
mod producer;

pub use consumer::{Consumer, ConsumerEvent};
pub use producer::{Producer, ProducerEvent};

use core::cmp::Ordering;

use crate::Sequence;

/// The marker between the GUID and the rest of an item's name.
pub const MARKER: &str = "-queue-";

/// Errors of this recipe: the one error type of every recipe.
pub use crate::Error;

/// Where an item stands in the queue: priority first, then creation order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ItemKey {
    /// Lower first. This library's items go from 0 to 99, Kazoo's from 0
    /// to 999, Curator's over all of `i32`; an item without a priority
    /// counts as 0.
    pub priority: i32,
    /// The server's sequence number.
    pub sequence: Sequence,
}

impl ItemKey {
    /// The key of an item named `name`, if it is a queue item, whichever
    /// library put it:
    ///
    /// * this library: `<guid>-queue-<seq>`, `<guid>-queue-<YY>-<seq>`;
    /// * the recipes page and Curator's `DistributedQueue`: `queue-<seq>`;
    /// * Curator's `DistributedPriorityQueue`: `queue-<s><XXXXXXXX><seq>`
    ///   (`s` is `1` for a priority of 0 or more, `0` below; then the
    ///   priority's 32 bits in hex);
    /// * ZooKeeper's recipes `DistributedQueue` and Curator's
    ///   `SimpleDistributedQueue`: `qn-<seq>`;
    /// * Kazoo's `Queue`: `entry-<ppp>-<seq>`, priority `ppp` 000 to 999.
    ///
    /// Curator's delay and id queues (`queue-|…|<seq>`) are not taken: a
    /// delayed item must not come out early. The sequence is read exactly as
    /// the server writes it (`%010d`), so one that wrapped negative and is
    /// eleven characters wide (`-2147483647`) is read whole.
    pub fn parse(name: &str) -> Option<ItemKey> {
        if let Some(rest) = name.strip_prefix("qn-") {
            return Some(ItemKey {
                priority: 0,
                sequence: Sequence::from_suffix(rest)?,
            });
        }
        if let Some(rest) = name.strip_prefix("entry-") {
            let (priority, seq) = rest.split_at_checked(4)?;
            let priority = match priority.as_bytes() {
                [a, b, c, b'-'] if [a, b, c].iter().all(|d| d.is_ascii_digit()) => {
                    i32::from(a - b'0') * 100 + i32::from(b - b'0') * 10 + i32::from(c - b'0')
                }
                _ => return None,
            };
            return Some(ItemKey {
                priority,
                sequence: Sequence::from_suffix(seq)?,
            });
        }
        let at = name.rfind(ITEM_PREFIX)?;
        // `queue-` starts the name or follows a GUID and its hyphen.
        if at > 0 && !name[..at].ends_with('-') {
            return None;
        }
        let rest = &name[at + ITEM_PREFIX.len()..];
        // A sequence is 10 characters, or 11 when wrapped far negative: the
        // length alone tells which form this is.
        let (priority, seq) = match rest.len() {
            10 | 11 => (0, rest),
            13 | 14 => {
                let (p, seq) = rest.split_at_checked(3)?;
                match p.as_bytes() {
                    [a @ b'0'..=b'9', b @ b'0'..=b'9', b'-'] => {
                        (i32::from(a - b'0') * 10 + i32::from(b - b'0'), seq)
                    }
                    _ => return None,
                }
            }
            19 | 20 => {
                let (p, seq) = rest.split_at_checked(9)?;
                let (sign, hex) = p.split_at_checked(1)?;
                if !hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'A'..=b'F')) {
                    return None;
                }
                let bits = u32::from_str_radix(hex, 16).ok()?;
                let priority = bits as i32;
                // The sign digit must agree with the bits (Curator writes
                // `1` for 0 and above, `0` below).
                match (sign, priority >= 0) {
                    ("1", true) | ("0", false) => (priority, seq),
                    _ => return None,
                }
            }
            _ => return None,
        };
        Some(ItemKey {
            priority,
            sequence: Sequence::from_suffix(seq)?,
        })
    }

    /// Queue order.
    pub fn order(self, other: ItemKey) -> Ordering {
        self.priority
            .cmp(&other.priority)
            .then(self.sequence.order(other.sequence))
    }
}

/// The text every library's queue item name ends with before its sequence
/// (and priority), except ZooKeeper's `qn-` and Kazoo's `entry-`.
const ITEM_PREFIX: &str = "queue-";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn item_names_parse_to_priority_and_sequence() {
        let plain = ItemKey::parse("0a1b-queue-0000000042").unwrap();
        let seq = |name| ItemKey::parse(name).map(|k| (k.priority, k.sequence.value()));
        assert_eq!(seq("0a1b-queue--2147483647"), Some((0, -2_147_483_647)));
        assert_eq!(seq("0a1b-queue--2147483648"), Some((0, i32::MIN)));
        assert_eq!(seq("0a1b-queue--000000001"), Some((0, -1)));
        assert_eq!(seq("0a1b-queue-07--999999999"), Some((7, -999_999_999)));
        assert_eq!(seq("queue-0000000005"), Some((0, 5)));
        assert_eq!(seq("qn-0000000006"), Some((0, 6)));
        assert_eq!(seq("entry-250-0000000007"), Some((250, 7)));
        assert_eq!(seq("queue-0FFFFFFFE0000000008"), Some((-2, 8)));
        assert_eq!(seq("queue-1000000200000000009"), Some((32, 9)));
        // Not what %010d prints, or not a queue item.
        assert_eq!(seq("x-queue--000000000"), None);
        assert_eq!(seq("x-queue--0999999999"), None);
        assert_eq!(seq("x-queue-2147483648"), None);
        assert_eq!(seq("queue-1FFFFFFFF0000000001"), None);
        assert_eq!(seq("queue-|5F000000|0000000001"), None);
        assert_eq!(seq("myqueue-0000000001"), None);
        assert_eq!(seq("entry-25-0000000001"), None);
        assert_eq!((plain.priority, plain.sequence.value()), (0, 42));
        let urgent = ItemKey::parse("0a1b-queue-03-0000000043").unwrap();
        assert_eq!((urgent.priority, urgent.sequence.value()), (3, 43));
        assert_eq!(ItemKey::parse("lock-0000000001"), None);
        assert_eq!(ItemKey::parse("x-queue-3-0000000001"), None);
        assert_eq!(ItemKey::parse("x-queue-"), None);
        let low = ItemKey::parse("g-queue-10-0000000001").unwrap();
        assert_eq!(urgent.order(low), Ordering::Less);
        assert_eq!(plain.order(urgent), Ordering::Less);
    }
}
