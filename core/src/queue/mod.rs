//! Queues and priority queues (the recipes page's "Queues" and "Priority
//! Queues").
//!
//! Producers add items as sequential nodes under the queue directory,
//! persistent by default (ephemeral as the recipes page describes, as an
//! option); consumers take the lowest item. Item names carry the
//! producer's GUID, so a create whose reply was lost is found again instead
//! of added twice:
//!
//! * plain: `<guid>-queue-<sequence>`;
//! * with a priority: `<guid>-queue-<YY>-<sequence>`, `YY` from `00`
//!   (first) to `99`, "lower numbers representing higher priority (just like
//!   UNIX)". Items are taken by priority, then by sequence; an item without
//!   a priority counts as priority 00.
//!
//! A consumer lists the directory once and works through the lowest items
//! of that one listing (a caller-sized batch) before listing again: read an
//! item's data, then delete it; the delete decides who took it, so two
//! consumers never both take one item (a `NoNode` means someone else did:
//! the next item). When the queue is empty it waits on the directory's child
//! watch. A priority consumer keeps that watch while it works, and drops its
//! batch on every notification, so an item of higher priority added later
//! is taken first.
//!
//! **The one ambiguity ZooKeeper leaves**: a delete whose reply is lost with
//! the connection. If the item is still there afterwards, the delete is sent
//! again; if it is gone, either this consumer's delete or another's removed
//! it, and nothing on the server tells which. The consumer then delivers the
//! item marked `certain: false` (at least once: another consumer may have
//! taken it too), rather than drop it (at most once: it may be lost). A
//! producer whose create reply was lost looks for its GUID; if a consumer
//! took the item meanwhile, it cannot be found and is added again, so puts
//! are at least once under connection loss too.

mod consumer;
mod producer;

pub use consumer::{Consumer, ConsumerEvent};
pub use producer::{Producer, ProducerEvent};

use core::cmp::Ordering;
use core::fmt;

use crate::path::PathError;
use crate::{Sequence, ZkError};

/// The marker between the GUID and the rest of an item's name.
pub const MARKER: &str = "-queue-";

/// Errors of queue operations.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum Error {
    /// ZooKeeper refused a request.
    Zk(ZkError),
    /// The queue path is invalid or too long.
    Path(PathError),
    /// An item's data does not fit the buffer.
    TooLarge {
        /// Its length.
        len: usize,
        /// The buffer's capacity.
        capacity: usize,
    },
    /// A priority above 99.
    BadPriority,
    /// The operation needs another state (say, a second take while one is
    /// in progress).
    InvalidState,
    /// The session ended.
    SessionEnded,
    /// The server's answer did not make sense for the request.
    BadReply,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Zk(e) => write!(f, "ZooKeeper error: {e}"),
            Error::Path(e) => write!(f, "invalid path: {e}"),
            Error::TooLarge { len, capacity } => {
                write!(f, "item of {len} bytes exceeds the {capacity}-byte buffer")
            }
            Error::BadPriority => f.write_str("priorities go from 0 to 99"),
            Error::InvalidState => f.write_str("not allowed in the current state"),
            Error::SessionEnded => f.write_str("the session ended"),
            Error::BadReply => f.write_str("malformed reply from the server"),
        }
    }
}

impl From<PathError> for Error {
    fn from(e: PathError) -> Self {
        Error::Path(e)
    }
}

/// Where an item stands in the queue: priority first, then creation order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ItemKey {
    /// 0 (first) to 99.
    pub priority: u8,
    /// The server's sequence number.
    pub sequence: Sequence,
}

impl ItemKey {
    /// The key of an item named `name`, if it is a queue item.
    pub fn parse(name: &str) -> Option<ItemKey> {
        let (prefix, sequence) = Sequence::split(name).ok()?;
        let at = prefix.rfind(MARKER)?;
        let rest = &prefix[at + MARKER.len()..];
        let priority = match rest.as_bytes() {
            [] => 0,
            [a @ b'0'..=b'9', b @ b'0'..=b'9', b'-'] => (a - b'0') * 10 + (b - b'0'),
            _ => return None,
        };
        Some(ItemKey { priority, sequence })
    }

    /// Queue order.
    pub fn order(self, other: ItemKey) -> Ordering {
        self.priority
            .cmp(&other.priority)
            .then(self.sequence.order(other.sequence))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn item_names_parse_to_priority_and_sequence() {
        let plain = ItemKey::parse("0a1b-queue-0000000042").unwrap();
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
