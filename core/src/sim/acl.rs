//! Access control as a ZooKeeper server applies it: the ACL a create is
//! given (with `auth` replaced by the creator's identities), and whether an
//! identity may do an operation on a node.

use alloc::string::{String, ToString};
use alloc::vec::Vec;

use crate::{Acl, ZkError};

/// One ACL entry as a node keeps it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct OwnedAclEntry {
    /// Bits from [`perms`](crate::perms).
    pub perms: u32,
    /// The scheme (`world`, `digest`, `ip`, ...).
    pub scheme: String,
    /// The identity within the scheme.
    pub id: String,
}

/// An identity a session authenticated as: `(scheme, id)`, as the server's
/// auth provider makes it (for `digest`, `user:` and the base64 SHA-1 of
/// `user:password`).
pub type Identity = (String, String);

/// Copies a borrowed ACL as the create asked for it.
pub fn owned(acl: Acl<'_>) -> Vec<OwnedAclEntry> {
    acl.0
        .iter()
        .map(|e| OwnedAclEntry {
            perms: e.perms,
            scheme: e.scheme.to_string(),
            id: e.id.to_string(),
        })
        .collect()
}

/// `world:anyone` may do everything: what the operator's nodes and the
/// root get.
pub(crate) fn open() -> Vec<OwnedAclEntry> {
    owned(Acl::OPEN)
}

/// The ACL a node is created with, from the one asked for, as ZooKeeper's
/// `fixupACL` makes it: an `auth` entry stands for every identity the
/// session authenticated as (not its address), and none is `InvalidAcl`;
/// so are an empty ACL, a `world` entry for anyone but `anyone`, and a
/// `digest` entry that is not `user:hash`.
pub(crate) fn fix_up(
    asked: &[OwnedAclEntry],
    ids: &[Identity],
) -> Result<Vec<OwnedAclEntry>, ZkError> {
    if asked.is_empty() {
        return Err(ZkError::InvalidAcl);
    }
    let mut fixed = Vec::new();
    for entry in asked {
        match entry.scheme.as_str() {
            "auth" => {
                let mut any = false;
                for (scheme, id) in ids.iter().filter(|(scheme, _)| scheme != "ip") {
                    any = true;
                    fixed.push(OwnedAclEntry {
                        perms: entry.perms,
                        scheme: scheme.clone(),
                        id: id.clone(),
                    });
                }
                if !any {
                    return Err(ZkError::InvalidAcl);
                }
            }
            "world" if entry.id != "anyone" => return Err(ZkError::InvalidAcl),
            "digest" if entry.id.split(':').count() != 2 => return Err(ZkError::InvalidAcl),
            _ => fixed.push(entry.clone()),
        }
    }
    fixed.dedup();
    Ok(fixed)
}

/// Whether a session with identities `ids` may do `perm` on a node with
/// `acl`: an entry granting it names `world:anyone` or one of them.
pub(crate) fn permits(acl: &[OwnedAclEntry], ids: &[Identity], perm: u32) -> bool {
    acl.iter().filter(|e| e.perms & perm != 0).any(|e| {
        (e.scheme == "world" && e.id == "anyone")
            || ids
                .iter()
                .any(|(scheme, id)| *scheme == e.scheme && *id == e.id)
    })
}

/// `Ok` if `permits`, else `NoAuth`.
pub(crate) fn check(acl: &[OwnedAclEntry], ids: &[Identity], perm: u32) -> Result<(), ZkError> {
    if permits(acl, ids, perm) {
        Ok(())
    } else {
        Err(ZkError::NoAuth)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{perms, AclEntry};

    fn ids(list: &[(&str, &str)]) -> Vec<Identity> {
        list.iter()
            .map(|(s, i)| (s.to_string(), i.to_string()))
            .collect()
    }

    #[test]
    fn auth_becomes_the_creators_identities_and_needs_one() {
        let alice = ids(&[("ip", "127.0.0.1"), ("digest", "alice:h1")]);
        let fixed = fix_up(&owned(Acl::CREATOR_ALL), &alice).unwrap();
        assert_eq!(
            fixed,
            [OwnedAclEntry {
                perms: perms::ALL,
                scheme: "digest".into(),
                id: "alice:h1".into()
            }]
        );
        let nobody = ids(&[("ip", "127.0.0.1")]);
        assert_eq!(
            fix_up(&owned(Acl::CREATOR_ALL), &nobody),
            Err(ZkError::InvalidAcl)
        );
    }

    #[test]
    fn malformed_acls_are_refused() {
        let bad = |scheme, id| {
            fix_up(
                &owned(Acl(&[AclEntry {
                    perms: perms::ALL,
                    scheme,
                    id,
                }])),
                &[],
            )
        };
        assert_eq!(fix_up(&[], &[]), Err(ZkError::InvalidAcl));
        assert_eq!(bad("world", "everyone"), Err(ZkError::InvalidAcl));
        assert_eq!(bad("digest", "alice"), Err(ZkError::InvalidAcl));
        assert!(bad("digest", "alice:h1").is_ok());
        assert!(bad("ip", "10.0.0.1").is_ok());
    }

    #[test]
    fn only_an_entry_granting_the_permission_to_an_identity_permits() {
        let acl = owned(Acl(&[
            AclEntry {
                perms: perms::READ,
                scheme: "world",
                id: "anyone",
            },
            AclEntry {
                perms: perms::WRITE | perms::DELETE,
                scheme: "digest",
                id: "alice:h1",
            },
        ]));
        let (alice, bob) = (ids(&[("digest", "alice:h1")]), ids(&[("digest", "bob:h2")]));
        assert!(permits(&acl, &bob, perms::READ));
        assert!(permits(&acl, &alice, perms::WRITE));
        assert!(permits(&acl, &alice, perms::DELETE));
        assert!(!permits(&acl, &bob, perms::WRITE));
        assert!(!permits(&acl, &alice, perms::CREATE));
        assert_eq!(check(&acl, &bob, perms::DELETE), Err(ZkError::NoAuth));
        assert_eq!(check(&acl, &alice, perms::DELETE), Ok(()));
        // Only `world` makes `anyone` everyone: a user of another scheme
        // may have that name.
        let sasl_anyone = owned(Acl(&[AclEntry {
            perms: perms::ALL,
            scheme: "sasl",
            id: "anyone",
        }]));
        assert!(!permits(&sasl_anyone, &bob, perms::READ));
    }
}
