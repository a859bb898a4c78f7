//! The znode tree: data, stats, modes and sequential naming.

use alloc::collections::{BTreeMap, BTreeSet};
use alloc::string::{String, ToString};
use alloc::vec::Vec;

use crate::path;
use crate::{CreateMode, Stat, Version, ZkError};

use super::acl::OwnedAclEntry;
use super::SessionId;

/// One znode.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Node {
    /// The node's data.
    pub data: Vec<u8>,
    /// The node's metadata.
    pub stat: Stat,
    /// Who may do what to it.
    pub acl: Vec<OwnedAclEntry>,
    /// Whether its data stands for more than an embedded driver's receive
    /// buffer: where that driver reads, a read of it is answered
    /// `ReplyTooLarge` (see [`SimZk::set_oversized_writes`]).
    ///
    /// [`SimZk::set_oversized_writes`]: super::SimZk::set_oversized_writes
    pub oversized: bool,
    pub(crate) children: BTreeSet<String>,
}

/// What a write changed, for watch triggering.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Change {
    Created {
        path: String,
    },
    /// With the deleted node's ACL: only sessions it lets read hear of it.
    Deleted {
        path: String,
        acl: Vec<OwnedAclEntry>,
    },
    DataChanged {
        path: String,
    },
}

/// All znodes, by full path.
#[derive(Clone, Debug)]
pub(crate) struct Tree {
    nodes: BTreeMap<String, Node>,
}

impl Tree {
    pub(crate) fn new() -> Self {
        let mut tree = Tree {
            nodes: BTreeMap::new(),
        };
        tree.nodes
            .insert("/".to_string(), Self::fresh(Vec::new(), 0, 0, 0));
        // The reserved tree is always there, as on a real server.
        let _ = tree.create("/zookeeper", &[], CreateMode::Persistent, 0, 0, 0);
        tree
    }

    fn fresh(data: Vec<u8>, zxid: i64, now: i64, owner: SessionId) -> Node {
        let data_length = i32::try_from(data.len()).unwrap_or(i32::MAX);
        Node {
            data,
            stat: Stat {
                czxid: zxid,
                mzxid: zxid,
                ctime: now,
                mtime: now,
                version: 0,
                cversion: 0,
                aversion: 0,
                ephemeral_owner: owner,
                data_length,
                num_children: 0,
                pzxid: zxid,
            },
            children: BTreeSet::new(),
            acl: super::acl::open(),
            oversized: false,
        }
    }

    pub(crate) fn get(&self, path: &str) -> Option<&Node> {
        self.nodes.get(path)
    }

    pub(crate) fn get_mut(&mut self, path: &str) -> Option<&mut Node> {
        self.nodes.get_mut(path)
    }

    /// Creates a node; returns its full path (with the sequence suffix).
    pub(crate) fn create(
        &mut self,
        requested: &str,
        data: &[u8],
        mode: CreateMode,
        owner: SessionId,
        zxid: i64,
        now: i64,
    ) -> Result<String, ZkError> {
        let valid = if mode.is_sequential() {
            path::validate_sequential_prefix(requested)
        } else {
            path::validate(requested)
        };
        if valid.is_err() || requested == "/" {
            return Err(ZkError::BadArguments);
        }
        let parent_path = parent_of(requested);
        let parent = self.nodes.get_mut(parent_path).ok_or(ZkError::NoNode)?;
        if parent.stat.ephemeral_owner != 0 {
            return Err(ZkError::NoChildrenForEphemerals);
        }
        let full = if mode.is_sequential() {
            // `%010d` of the parent's cversion before this create; Rust's
            // `{:010}` pads negative numbers the same way Java does.
            alloc::format!("{requested}{:010}", parent.stat.cversion)
        } else {
            requested.to_string()
        };
        let name = path::basename(&full).to_string();
        if parent.children.contains(&name) {
            return Err(ZkError::NodeExists);
        }
        parent.children.insert(name);
        parent.stat.cversion = parent.stat.cversion.wrapping_add(1);
        parent.stat.num_children += 1;
        parent.stat.pzxid = zxid;
        let owner = if mode.is_ephemeral() { owner } else { 0 };
        self.nodes
            .insert(full.clone(), Self::fresh(data.to_vec(), zxid, now, owner));
        Ok(full)
    }

    /// Deletes the node at `path`; returns its ACL, which judges who
    /// hears of the deletion.
    pub(crate) fn delete(
        &mut self,
        path: &str,
        version: Version,
        zxid: i64,
    ) -> Result<Vec<OwnedAclEntry>, ZkError> {
        if path::validate(path).is_err() || path == "/" {
            return Err(ZkError::BadArguments);
        }
        let node = self.nodes.get(path).ok_or(ZkError::NoNode)?;
        if !version.matches(node.stat.version) {
            return Err(ZkError::BadVersion);
        }
        if !node.children.is_empty() {
            return Err(ZkError::NotEmpty);
        }
        let removed = self.nodes.remove(path).map(|node| node.acl);
        if let Some(parent) = self.nodes.get_mut(parent_of(path)) {
            parent.children.remove(path::basename(path));
            // Deletion moves pzxid, not cversion (ZooKeeper 3.8 DataTree).
            parent.stat.num_children -= 1;
            parent.stat.pzxid = zxid;
        }
        Ok(removed.unwrap_or_default())
    }

    pub(crate) fn set_data(
        &mut self,
        path: &str,
        data: &[u8],
        version: Version,
        zxid: i64,
        now: i64,
    ) -> Result<Stat, ZkError> {
        let node = self.nodes.get_mut(path).ok_or(ZkError::NoNode)?;
        if !version.matches(node.stat.version) {
            return Err(ZkError::BadVersion);
        }
        node.data = data.to_vec();
        node.oversized = false;
        node.stat.version = node.stat.version.wrapping_add(1);
        node.stat.mzxid = zxid;
        node.stat.mtime = now;
        node.stat.data_length = i32::try_from(data.len()).unwrap_or(i32::MAX);
        Ok(node.stat)
    }

    /// Ephemeral nodes owned by `session`.
    pub(crate) fn ephemerals_of(&self, session: SessionId) -> Vec<String> {
        self.nodes
            .iter()
            .filter(|(_, n)| n.stat.ephemeral_owner == session)
            .map(|(p, _)| p.clone())
            .collect()
    }

    /// Every path but the root's, sorted.
    pub(crate) fn paths(&self) -> Vec<String> {
        self.nodes.keys().filter(|p| *p != "/").cloned().collect()
    }

    pub(crate) fn children_of(&self, path: &str) -> Option<Vec<String>> {
        self.nodes
            .get(path)
            .map(|n| n.children.iter().cloned().collect())
    }
}

/// The parent path of a (possibly sequential-prefix) path.
pub(crate) fn parent_of(p: &str) -> &str {
    match p.rfind('/') {
        Some(0) | None => "/",
        Some(i) => &p[..i],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ZXID: i64 = 7;
    const NOW: i64 = 1_000;

    fn tree_with(paths: &[(&str, CreateMode, SessionId)]) -> Tree {
        let mut tree = Tree::new();
        for (path, mode, owner) in paths {
            tree.create(path, b"", *mode, *owner, 1, 1).unwrap();
        }
        tree
    }

    #[test]
    fn a_new_tree_has_the_root_and_the_reserved_node() {
        let tree = Tree::new();
        assert!(tree.get("/").is_some());
        assert!(tree.get("/zookeeper").is_some());
        assert_eq!(tree.paths(), ["/zookeeper"]);
    }

    #[test]
    fn a_created_node_and_its_parent_carry_the_servers_stats() {
        let mut tree = tree_with(&[("/d", CreateMode::Persistent, 0)]);
        let path = tree
            .create("/d/n", b"abc", CreateMode::Ephemeral, 42, ZXID, NOW)
            .unwrap();
        assert_eq!(path, "/d/n");
        let stat = tree.get("/d/n").unwrap().stat;
        assert_eq!((stat.czxid, stat.mzxid, stat.pzxid), (ZXID, ZXID, ZXID));
        assert_eq!((stat.ctime, stat.mtime), (NOW, NOW));
        assert_eq!((stat.version, stat.data_length), (0, 3));
        assert_eq!(stat.ephemeral_owner, 42);
        let parent = tree.get("/d").unwrap().stat;
        assert_eq!(
            (parent.cversion, parent.num_children, parent.pzxid),
            (1, 1, ZXID)
        );
        assert_eq!(tree.children_of("/d").unwrap(), ["n"]);
        assert_eq!(tree.ephemerals_of(42), ["/d/n"]);
        let persistent = tree
            .create("/d/p", b"", CreateMode::Persistent, 42, ZXID, NOW)
            .unwrap();
        assert_eq!(tree.get(&persistent).unwrap().stat.ephemeral_owner, 0);
        assert_eq!(tree.ephemerals_of(42), ["/d/n"], "only the ephemeral one");
    }

    #[test]
    fn sequential_names_count_the_parents_creations() {
        let mut tree = tree_with(&[("/q", CreateMode::Persistent, 0)]);
        let create = |tree: &mut Tree| {
            tree.create("/q/x-", b"", CreateMode::PersistentSequential, 0, ZXID, NOW)
                .unwrap()
        };
        assert_eq!(create(&mut tree), "/q/x-0000000000");
        tree.delete("/q/x-0000000000", Version::Any, ZXID).unwrap();
        // A deletion does not move cversion: the next number is still new.
        assert_eq!(create(&mut tree), "/q/x-0000000001");
        tree.get_mut("/q").unwrap().stat.cversion = -1;
        assert_eq!(
            create(&mut tree),
            "/q/x--000000001",
            "Java's %010d after the wrap"
        );
    }

    #[test]
    fn creates_the_server_refuses() {
        let mut tree = tree_with(&[
            ("/e", CreateMode::Ephemeral, 5),
            ("/d", CreateMode::Persistent, 0),
        ]);
        let mut create = |path: &str| tree.create(path, b"", CreateMode::Persistent, 0, ZXID, NOW);
        assert_eq!(create("/e/c"), Err(ZkError::NoChildrenForEphemerals));
        assert_eq!(create("/missing/c"), Err(ZkError::NoNode));
        assert_eq!(create("/d"), Err(ZkError::NodeExists));
        assert_eq!(create("/"), Err(ZkError::BadArguments));
        assert_eq!(create("d/c"), Err(ZkError::BadArguments));
        assert_eq!(create("/d/"), Err(ZkError::BadArguments));
    }

    #[test]
    fn a_delete_checks_version_and_children_and_moves_the_parents_pzxid() {
        let mut tree = tree_with(&[
            ("/d", CreateMode::Persistent, 0),
            ("/d/n", CreateMode::Persistent, 0),
        ]);
        assert_eq!(
            tree.delete("/d", Version::Any, ZXID),
            Err(ZkError::NotEmpty)
        );
        assert_eq!(
            tree.delete("/d/n", Version::Exactly(1), ZXID),
            Err(ZkError::BadVersion)
        );
        assert_eq!(
            tree.delete("/d/x", Version::Any, ZXID),
            Err(ZkError::NoNode)
        );
        assert_eq!(
            tree.delete("/", Version::Any, ZXID),
            Err(ZkError::BadArguments)
        );
        // The deleted node's ACL comes back, to judge who hears of it.
        let acl = tree.get("/d/n").unwrap().acl.clone();
        assert_eq!(tree.delete("/d/n", Version::Exactly(0), ZXID), Ok(acl));
        assert!(tree.get("/d/n").is_none());
        let parent = tree.get("/d").unwrap().stat;
        assert_eq!(
            (parent.num_children, parent.pzxid, parent.cversion),
            (0, ZXID, 1)
        );
        assert!(tree.children_of("/d").unwrap().is_empty());
        assert!(tree.delete("/d", Version::Any, ZXID).is_ok(), "empty now");
    }

    #[test]
    fn set_data_checks_the_version_and_moves_it() {
        let mut tree = tree_with(&[("/c", CreateMode::Persistent, 0)]);
        assert_eq!(
            tree.set_data("/c", b"x", Version::Exactly(3), ZXID, NOW),
            Err(ZkError::BadVersion)
        );
        assert_eq!(
            tree.set_data("/missing", b"x", Version::Any, ZXID, NOW),
            Err(ZkError::NoNode)
        );
        let stat = tree
            .set_data("/c", b"xy", Version::Exactly(0), ZXID, NOW)
            .unwrap();
        assert_eq!(
            (stat.version, stat.mzxid, stat.mtime, stat.data_length),
            (1, ZXID, NOW, 2)
        );
        assert_eq!((stat.czxid, stat.ctime), (1, 1), "creation stays");
        assert_eq!(tree.get("/c").unwrap().data, b"xy");
        assert_eq!(tree.get("/c").unwrap().stat, stat);
    }

    #[test]
    fn parents_of_paths_and_prefixes() {
        assert_eq!(parent_of("/a"), "/");
        assert_eq!(parent_of("/a/b"), "/a");
        assert_eq!(parent_of("/a/"), "/a", "a sequential prefix ending in '/'");
    }
}
