//! ACLs the tests give recipes' nodes.

use herdless_core::{perms, Acl, AclEntry};

/// Everyone may do everything to the node but read it: a recipe that
/// creates its nodes so cannot read its own (`getData` is refused `NoAuth`
/// and sets no watch), though `exists`, which no ACL guards, still answers,
/// and no change of the node is told to it (CVE-2024-23944).
pub static UNREADABLE: Acl<'static> = Acl(&[AclEntry {
    perms: perms::ALL & !perms::READ,
    scheme: "world",
    id: "anyone",
}]);
