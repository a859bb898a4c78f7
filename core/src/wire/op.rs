//! What a client can send after the handshake: the requests recipes emit,
//! plus `create2` and `multi`.

use crate::{Acl, CreateMode, Request, Version};

/// One request to encode with [`encode::request`](super::encode::request)
/// or send through a [`Session`](super::Session).
///
/// Every [`Request`] a recipe emits converts into one (`Op::from`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum Op<'a> {
    /// `create` (opcode 1): the reply carries the path.
    Create {
        /// Path, or prefix for sequential modes.
        path: &'a str,
        /// Initial data.
        data: &'a [u8],
        /// Access control.
        acl: Acl<'a>,
        /// Persistence and sequencing.
        mode: CreateMode,
    },
    /// `create2` (opcode 15): the reply carries the path and the stat.
    Create2 {
        /// Path, or prefix for sequential modes.
        path: &'a str,
        /// Initial data.
        data: &'a [u8],
        /// Access control.
        acl: Acl<'a>,
        /// Persistence and sequencing.
        mode: CreateMode,
    },
    /// `delete` (2).
    Delete {
        /// Path of the node.
        path: &'a str,
        /// Condition on the data version.
        version: Version,
    },
    /// `exists` (3).
    Exists {
        /// Path of the node.
        path: &'a str,
        /// Leave a data watch, or a creation watch on a missing node.
        watch: bool,
    },
    /// `getData` (4).
    GetData {
        /// Path of the node.
        path: &'a str,
        /// Leave a data watch.
        watch: bool,
    },
    /// `setData` (5).
    SetData {
        /// Path of the node.
        path: &'a str,
        /// New data.
        data: &'a [u8],
        /// Condition on the data version.
        version: Version,
    },
    /// `getChildren` (8).
    GetChildren {
        /// Path of the node.
        path: &'a str,
        /// Leave a child watch.
        watch: bool,
    },
    /// A version check. Sent as a `multi` holding one `check`: how a 3.8
    /// server answers a top-level `check` (opcode 13) is not established,
    /// and the Java client never sends one.
    Check {
        /// Path of the node.
        path: &'a str,
        /// The version it must have.
        version: Version,
    },
    /// `sync` (9).
    Sync {
        /// Path (echoed back).
        path: &'a str,
    },
    /// `multi` (14): the operations applied atomically, all or none.
    Multi(&'a [MultiOp<'a>]),
}

/// One operation of a [`Op::Multi`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum MultiOp<'a> {
    /// Create a node (result: its path).
    Create {
        /// Path, or prefix for sequential modes.
        path: &'a str,
        /// Initial data.
        data: &'a [u8],
        /// Access control.
        acl: Acl<'a>,
        /// Persistence and sequencing.
        mode: CreateMode,
    },
    /// Create a node (result: its path and stat).
    Create2 {
        /// Path, or prefix for sequential modes.
        path: &'a str,
        /// Initial data.
        data: &'a [u8],
        /// Access control.
        acl: Acl<'a>,
        /// Persistence and sequencing.
        mode: CreateMode,
    },
    /// Delete a node.
    Delete {
        /// Path of the node.
        path: &'a str,
        /// Condition on the data version.
        version: Version,
    },
    /// Replace a node's data.
    SetData {
        /// Path of the node.
        path: &'a str,
        /// New data.
        data: &'a [u8],
        /// Condition on the data version.
        version: Version,
    },
    /// Fail the whole multi unless the node has this version.
    Check {
        /// Path of the node.
        path: &'a str,
        /// The version it must have.
        version: Version,
    },
}

/// The kind of watch a request leaves when it succeeds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum WatchClass {
    /// A data watch (`getData`, or `exists` on a node that exists).
    Data,
    /// A creation watch (`exists` on a missing node).
    Exist,
    /// A child watch (`getChildren`).
    Child,
}

impl<'a> From<Request<'a>> for Op<'a> {
    fn from(r: Request<'a>) -> Self {
        match r {
            Request::Create {
                path,
                data,
                acl,
                mode,
            } => Op::Create {
                path,
                data,
                acl,
                mode,
            },
            Request::Delete { path, version } => Op::Delete { path, version },
            Request::Exists { path, watch } => Op::Exists { path, watch },
            Request::GetData { path, watch } => Op::GetData { path, watch },
            Request::SetData {
                path,
                data,
                version,
            } => Op::SetData {
                path,
                data,
                version,
            },
            Request::GetChildren { path, watch } => Op::GetChildren { path, watch },
            Request::Check { path, version } => Op::Check { path, version },
            Request::Sync { path } => Op::Sync { path },
        }
    }
}

impl<'a> Op<'a> {
    /// The opcode of the request header.
    pub const fn opcode(&self) -> i32 {
        use super::opcode::op;
        match self {
            Op::Create { .. } => op::CREATE,
            Op::Create2 { .. } => op::CREATE2,
            Op::Delete { .. } => op::DELETE,
            Op::Exists { .. } => op::EXISTS,
            Op::GetData { .. } => op::GET_DATA,
            Op::SetData { .. } => op::SET_DATA,
            Op::GetChildren { .. } => op::GET_CHILDREN,
            Op::Check { .. } | Op::Multi(_) => op::MULTI,
            Op::Sync { .. } => op::SYNC,
        }
    }

    /// The watch the request leaves, on which path, if it asks for one.
    /// For `exists` the class is [`WatchClass::Data`]; it becomes
    /// [`WatchClass::Exist`] if the node turns out to be missing.
    pub const fn watch(&self) -> Option<(WatchClass, &'a str)> {
        match *self {
            Op::Exists { path, watch: true } | Op::GetData { path, watch: true } => {
                Some((WatchClass::Data, path))
            }
            Op::GetChildren { path, watch: true } => Some((WatchClass::Child, path)),
            _ => None,
        }
    }

    /// What the reply to this request holds, for decoding it.
    pub fn expect(&self) -> super::Expect {
        use super::Expect;
        match self {
            Op::Create { .. } => Expect::Create,
            Op::Create2 { .. } => Expect::Create2,
            Op::Delete { .. } => Expect::Delete,
            Op::Exists { .. } => Expect::Exists,
            Op::GetData { .. } => Expect::GetData,
            Op::SetData { .. } => Expect::SetData,
            Op::GetChildren { .. } => Expect::GetChildren,
            Op::Check { .. } => Expect::Check,
            Op::Sync { .. } => Expect::Sync,
            Op::Multi(ops) => Expect::Multi { ops: ops.len() },
        }
    }
}
