//! Replies as recipes receive them: borrowed, typed, with child lists streamed.

use crate::children::Children;
use crate::ZkError;

/// A node's metadata (ZooKeeper's `Stat`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Stat {
    /// zxid of the create.
    pub czxid: i64,
    /// zxid of the last data change.
    pub mzxid: i64,
    /// Creation time, ms since the Unix epoch.
    pub ctime: i64,
    /// Last modification time, ms since the Unix epoch.
    pub mtime: i64,
    /// Data version.
    pub version: i32,
    /// Child version (bumped by every child creation and deletion).
    pub cversion: i32,
    /// ACL version.
    pub aversion: i32,
    /// Owning session id for ephemeral nodes, 0 otherwise.
    pub ephemeral_owner: i64,
    /// Length of the data.
    pub data_length: i32,
    /// Number of children.
    pub num_children: i32,
    /// zxid of the last child change.
    pub pzxid: i64,
}

/// The answer to one [`Request`](crate::Request).
#[derive(Debug)]
#[non_exhaustive]
pub enum Reply<'a> {
    /// A create succeeded; `path` is the node's full path (with the sequence
    /// suffix for sequential modes).
    Created {
        /// Full path of the new node.
        path: &'a str,
    },
    /// A delete succeeded.
    Deleted,
    /// An exists found the node.
    Exists {
        /// The node's stat.
        stat: Stat,
    },
    /// A getData succeeded.
    Data {
        /// The node's data.
        data: &'a [u8],
        /// The node's stat.
        stat: Stat,
    },
    /// A setData succeeded.
    DataSet {
        /// The node's new stat.
        stat: Stat,
    },
    /// A getChildren succeeded; the names are streamed, in server order.
    Children(Children<'a>),
    /// A check succeeded.
    Checked,
    /// A sync completed.
    Synced,
    /// The request failed (a `NoNode` answer to `exists` lands here too).
    Error(ZkError),
}

impl Reply<'_> {
    /// The error, if the request failed.
    pub fn error(&self) -> Option<ZkError> {
        match self {
            Reply::Error(e) => Some(*e),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_failed_request_has_an_error() {
        assert_eq!(Reply::Error(ZkError::NoNode).error(), Some(ZkError::NoNode));
        assert_eq!(Reply::Checked.error(), None);
    }
}
