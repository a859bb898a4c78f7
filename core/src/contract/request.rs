//! Typed, borrowed ZooKeeper requests and the ids that tag them.

use core::fmt;

/// Identifies one request of one recipe.
///
/// Opaque to drivers: they hand it back with the reply. It carries the
/// recipe's session epoch, which moves on every connection loss, so a reply
/// that belongs to a connection that has since been lost is recognised and
/// ignored instead of being mistaken for an answer on the new connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct RequestId {
    epoch: u32,
    serial: u32,
}

impl RequestId {
    /// The id with this epoch and serial (for drivers and tests that need to
    /// fabricate one; recipes allocate theirs with [`RequestIds`]).
    pub const fn new(epoch: u32, serial: u32) -> Self {
        RequestId { epoch, serial }
    }

    /// The session epoch the request was sent in.
    pub const fn epoch(self) -> u32 {
        self.epoch
    }

    /// The serial number within the recipe.
    pub const fn serial(self) -> u32 {
        self.serial
    }
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.epoch, self.serial)
    }
}

/// Allocates [`RequestId`]s and keeps the current session epoch.
#[derive(Clone, Debug, Default)]
pub struct RequestIds {
    epoch: u32,
    serial: u32,
}

impl RequestIds {
    /// A fresh allocator at epoch 0.
    pub const fn new() -> Self {
        RequestIds {
            epoch: 0,
            serial: 0,
        }
    }

    /// The next id in the current epoch.
    pub fn next_id(&mut self) -> RequestId {
        self.serial = self.serial.wrapping_add(1);
        RequestId::new(self.epoch, self.serial)
    }

    /// Moves to a new epoch: every id handed out so far becomes stale.
    pub fn new_epoch(&mut self) {
        self.epoch = self.epoch.wrapping_add(1);
    }

    /// Whether `id` belongs to the current epoch.
    pub fn is_current(&self, id: RequestId) -> bool {
        id.epoch == self.epoch
    }
}

/// How a node is created.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum CreateMode {
    /// Stays until deleted.
    Persistent,
    /// Stays until deleted; the server appends a sequence number.
    PersistentSequential,
    /// Deleted when the creating session ends.
    Ephemeral,
    /// Deleted when the creating session ends; the server appends a sequence
    /// number.
    EphemeralSequential,
}

impl CreateMode {
    /// The `flags` value of the wire protocol.
    pub const fn flags(self) -> i32 {
        match self {
            CreateMode::Persistent => 0,
            CreateMode::Ephemeral => 1,
            CreateMode::PersistentSequential => 2,
            CreateMode::EphemeralSequential => 3,
        }
    }

    /// Whether the server appends a sequence suffix.
    pub const fn is_sequential(self) -> bool {
        matches!(
            self,
            CreateMode::PersistentSequential | CreateMode::EphemeralSequential
        )
    }

    /// Whether the node dies with its session.
    pub const fn is_ephemeral(self) -> bool {
        matches!(
            self,
            CreateMode::Ephemeral | CreateMode::EphemeralSequential
        )
    }
}

/// Permission bits of an ACL entry.
pub mod perms {
    /// May read data and list children.
    pub const READ: u32 = 1;
    /// May set data.
    pub const WRITE: u32 = 2;
    /// May create children.
    pub const CREATE: u32 = 4;
    /// May delete children.
    pub const DELETE: u32 = 8;
    /// May change the ACL.
    pub const ADMIN: u32 = 16;
    /// All of the above.
    pub const ALL: u32 = 31;
}

/// One ACL entry: permissions granted to an identity.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct AclEntry<'a> {
    /// Bits from [`perms`].
    pub perms: u32,
    /// The scheme (`world`, `auth`, `digest`, `ip`, ...).
    pub scheme: &'a str,
    /// The identity within the scheme.
    pub id: &'a str,
}

/// An access control list.
///
/// # The ACL of a recipe's nodes
///
/// Every recipe that creates nodes gives them [`Acl::OPEN`] unless told
/// otherwise with its `with_acl` (its own nodes, its directory and the
/// ancestors it creates). ZooKeeper checks `CREATE` and `DELETE` on the
/// *parent* of a node, so it is the directory's ACL that keeps others from
/// adding or deleting the recipe's nodes; a directory that already exists
/// keeps the ACL it was created with. [`Acl::CREATOR_ALL`] (scheme `auth`)
/// gives everything to the identities the session authenticated with
/// (digest auth) and nothing to anyone else; a session with no identity is
/// refused it with [`ZkError::InvalidAcl`](crate::ZkError::InvalidAcl). A
/// create the server refuses (`NoAuth`, `InvalidAcl`) ends the operation
/// with that error; it is never retried.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Acl<'a>(pub &'a [AclEntry<'a>]);

impl Acl<'static> {
    /// Everyone may do everything (`OPEN_ACL_UNSAFE`).
    pub const OPEN: Acl<'static> = Acl(&[AclEntry {
        perms: perms::ALL,
        scheme: "world",
        id: "anyone",
    }]);
    /// Everything for the identities authenticated on the connection
    /// (`CREATOR_ALL_ACL`).
    pub const CREATOR_ALL: Acl<'static> = Acl(&[AclEntry {
        perms: perms::ALL,
        scheme: "auth",
        id: "",
    }]);
    /// Everyone may read (`READ_ACL_UNSAFE`).
    pub const READ: Acl<'static> = Acl(&[AclEntry {
        perms: perms::READ,
        scheme: "world",
        id: "anyone",
    }]);
}

impl<'a> Acl<'a> {
    /// The entries.
    pub fn entries(&self) -> &'a [AclEntry<'a>] {
        self.0
    }
}

/// A node version for conditional writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Version {
    /// Whatever the current version is (`-1` on the wire).
    Any,
    /// Only if the node has exactly this version.
    Exactly(i32),
}

impl Version {
    /// The wire value.
    pub const fn wire(self) -> i32 {
        match self {
            Version::Any => -1,
            Version::Exactly(v) => v,
        }
    }

    /// Whether a node at `current` satisfies this condition.
    pub const fn matches(self, current: i32) -> bool {
        match self {
            Version::Any => true,
            Version::Exactly(v) => v == current,
        }
    }
}

/// A request a recipe wants sent. Everything is borrowed from the recipe, so
/// the driver encodes or copies it before asking for the next one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum Request<'a> {
    /// Create a node. For sequential modes `path` is the prefix.
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
    /// Delete a node.
    Delete {
        /// Path of the node.
        path: &'a str,
        /// Condition on the data version.
        version: Version,
    },
    /// Stat a node, optionally leaving a watch. Beware: with `watch` on a
    /// missing node the server keeps a creation watch.
    Exists {
        /// Path of the node.
        path: &'a str,
        /// Leave a data/exists watch.
        watch: bool,
    },
    /// Read a node's data and stat, optionally watching it. On a missing node
    /// nothing is registered, which is why recipes watch with this call.
    GetData {
        /// Path of the node.
        path: &'a str,
        /// Leave a data watch.
        watch: bool,
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
    /// List a node's children, optionally watching them.
    GetChildren {
        /// Path of the node.
        path: &'a str,
        /// Leave a child watch.
        watch: bool,
    },
    /// Check a node's version (useful inside multi; a no-op write).
    Check {
        /// Path of the node.
        path: &'a str,
        /// The version it must have.
        version: Version,
    },
    /// Wait until the server the session is connected to has caught up with
    /// the leader.
    Sync {
        /// Path (echoed back).
        path: &'a str,
    },
}

impl<'a> Request<'a> {
    /// The path the request is about.
    pub fn path(&self) -> &'a str {
        match *self {
            Request::Create { path, .. }
            | Request::Delete { path, .. }
            | Request::Exists { path, .. }
            | Request::GetData { path, .. }
            | Request::SetData { path, .. }
            | Request::GetChildren { path, .. }
            | Request::Check { path, .. }
            | Request::Sync { path } => path,
        }
    }

    /// Whether the request changes the tree (and so may have been applied
    /// even though its reply was lost).
    pub fn is_write(&self) -> bool {
        matches!(
            self,
            Request::Create { .. } | Request::Delete { .. } | Request::SetData { .. }
        )
    }

    /// Whether the request leaves a watch on the server.
    pub fn sets_watch(&self) -> bool {
        matches!(
            self,
            Request::Exists { watch: true, .. }
                | Request::GetData { watch: true, .. }
                | Request::GetChildren { watch: true, .. }
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_count_up_and_a_new_epoch_makes_earlier_ones_stale() {
        let mut ids = RequestIds::new();
        let first = ids.next_id();
        let second = ids.next_id();
        assert_eq!((first.epoch(), first.serial()), (0, 1));
        assert_eq!((second.epoch(), second.serial()), (0, 2));
        assert!(ids.is_current(first));
        ids.new_epoch();
        assert!(!ids.is_current(first), "sent before the loss");
        assert!(!ids.is_current(RequestId::new(2, 1)), "from no epoch yet");
        let third = ids.next_id();
        assert_eq!((third.epoch(), third.serial()), (1, 3));
        assert!(ids.is_current(third));
    }

    #[test]
    fn an_id_shows_as_epoch_dot_serial() {
        assert_eq!(crate::shown::shown(&RequestId::new(3, 14)), "3.14");
    }

    #[test]
    fn a_version_condition_matches_only_its_version() {
        assert!(Version::Any.matches(7));
        assert!(Version::Exactly(7).matches(7));
        assert!(!Version::Exactly(7).matches(8));
        assert_eq!((Version::Any.wire(), Version::Exactly(7).wire()), (-1, 7));
    }

    #[test]
    fn writes_are_the_requests_that_change_the_tree() {
        let create = Request::Create {
            path: "/a",
            data: b"",
            acl: Acl::OPEN,
            mode: CreateMode::Ephemeral,
        };
        let delete = Request::Delete {
            path: "/a",
            version: Version::Any,
        };
        let set = Request::SetData {
            path: "/a",
            data: b"x",
            version: Version::Any,
        };
        let read = Request::GetData {
            path: "/a",
            watch: true,
        };
        let check = Request::Check {
            path: "/a",
            version: Version::Exactly(1),
        };
        for request in [create, delete, set] {
            assert!(request.is_write(), "{request:?}");
        }
        for request in [read, check, Request::Sync { path: "/a" }] {
            assert!(!request.is_write(), "{request:?}");
        }
    }
}
