//! What a client can send after the handshake: the requests recipes emit,
//! plus `create2` and `multi`.

use crate::{Acl, CreateMode, Request, Version, WatchKind};

/// One request to encode with [`encode::request`](super::encode::request)
/// or send through a [`Session`](super::Session): a [`Request`] a recipe
/// emits, or one of the two only a client sends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum Op<'a> {
    /// What a recipe emits (`Op::from` wraps it). A [`Request::Check`] is
    /// sent as a `multi` holding one `check`: how a 3.8 server answers a
    /// top-level `check` (opcode 13) is not established, and the Java
    /// client never sends one.
    Request(Request<'a>),
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
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum WatchClass {
    /// A data watch (`getData`, or `exists` on a node that exists).
    Data,
    /// A creation watch (`exists` on a missing node).
    Exist,
    /// A child watch (`getChildren`).
    Child,
}

impl WatchClass {
    /// Whether a notification of `kind` on the watch's path fires it (and
    /// so spends it): the server's triggering rules, which every client
    /// must follow to know which of its watches are still armed.
    pub const fn is_fired_by(self, kind: WatchKind) -> bool {
        match kind {
            WatchKind::NodeCreated | WatchKind::NodeDataChanged => {
                matches!(self, WatchClass::Data | WatchClass::Exist)
            }
            WatchKind::NodeChildrenChanged => matches!(self, WatchClass::Child),
            WatchKind::NodeDeleted => true,
        }
    }
}

impl<'a> From<Request<'a>> for Op<'a> {
    fn from(r: Request<'a>) -> Self {
        Op::Request(r)
    }
}

impl<'a> Op<'a> {
    /// The opcode of the request header.
    pub const fn opcode(&self) -> i32 {
        use super::opcode::op;
        match self {
            Op::Request(request) => request_opcode(request),
            Op::Create2 { .. } => op::CREATE2,
            Op::Multi(_) => op::MULTI,
        }
    }

    /// The watch the request leaves, on which path, if it asks for one.
    /// For `exists` the class is [`WatchClass::Data`]; it becomes
    /// [`WatchClass::Exist`] if the node turns out to be missing.
    pub const fn watch(&self) -> Option<(WatchClass, &'a str)> {
        match self {
            Op::Request(request) => request_watch(request),
            _ => None,
        }
    }

    /// What the reply to this request holds, for decoding it.
    pub fn expect(&self) -> super::Expect {
        use super::Expect;
        match self {
            Op::Request(request) => request_expect(request),
            Op::Create2 { .. } => Expect::Create2,
            Op::Multi(ops) => Expect::Multi { ops: ops.len() },
        }
    }
}

// A recipe's request on its own, without the rest of `Op`: the embedded
// driver sends only these, so what only `create2` and `multi` need is
// never linked into its firmware.

/// The opcode of `request`'s frame.
pub(crate) const fn request_opcode(request: &Request<'_>) -> i32 {
    use super::opcode::op;
    match request {
        Request::Create { .. } => op::CREATE,
        Request::Delete { .. } => op::DELETE,
        Request::Exists { .. } => op::EXISTS,
        Request::GetData { .. } => op::GET_DATA,
        Request::SetData { .. } => op::SET_DATA,
        Request::GetChildren { .. } => op::GET_CHILDREN,
        Request::Check { .. } => op::MULTI,
        Request::Sync { .. } => op::SYNC,
    }
}

/// The watch `request` leaves, as [`Op::watch`].
pub(crate) const fn request_watch<'a>(request: &Request<'a>) -> Option<(WatchClass, &'a str)> {
    match *request {
        Request::Exists { path, watch: true } | Request::GetData { path, watch: true } => {
            Some((WatchClass::Data, path))
        }
        Request::GetChildren { path, watch: true } => Some((WatchClass::Child, path)),
        _ => None,
    }
}

/// What the reply to `request` holds, as [`Op::expect`].
pub(crate) const fn request_expect(request: &Request<'_>) -> super::Expect {
    use super::Expect;
    match request {
        Request::Create { .. } => Expect::Create,
        Request::Delete { .. } => Expect::Delete,
        Request::Exists { .. } => Expect::Exists,
        Request::GetData { .. } => Expect::GetData,
        Request::SetData { .. } => Expect::SetData,
        Request::GetChildren { .. } => Expect::GetChildren,
        Request::Check { .. } => Expect::Check,
        Request::Sync { .. } => Expect::Sync,
    }
}

#[cfg(test)]
mod tests {
    use super::WatchClass::{self, Child, Data, Exist};
    use crate::WatchKind::{self, *};

    /// ZooKeeper's client rules (`ZKWatchManager.materialize`): creation
    /// and data changes spend data and creation watches, a child change
    /// child watches, a deletion all three.
    #[test]
    fn each_notification_fires_exactly_the_classes_zookeeper_fires() {
        let table: [(WatchKind, [WatchClass; 3], usize); 4] = [
            (NodeCreated, [Data, Exist, Child], 2),
            (NodeDataChanged, [Data, Exist, Child], 2),
            (NodeChildrenChanged, [Child, Data, Exist], 1),
            (NodeDeleted, [Data, Exist, Child], 3),
        ];
        for (kind, classes, fired) in table {
            for (i, class) in classes.into_iter().enumerate() {
                assert_eq!(class.is_fired_by(kind), i < fired, "{kind:?} on {class:?}");
            }
        }
    }
}
