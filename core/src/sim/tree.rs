//! The znode tree: data, stats, modes and sequential naming.

use alloc::collections::{BTreeMap, BTreeSet};
use alloc::string::{String, ToString};
use alloc::vec::Vec;

use crate::path;
use crate::{CreateMode, Stat, Version, ZkError};

use super::SessionId;

/// One znode.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Node {
    /// The node's data.
    pub data: Vec<u8>,
    /// The node's metadata.
    pub stat: Stat,
    pub(crate) children: BTreeSet<String>,
}

/// What a write changed, for watch triggering.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Change {
    Created { path: String },
    Deleted { path: String },
    DataChanged { path: String },
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

    pub(crate) fn delete(
        &mut self,
        path: &str,
        version: Version,
        zxid: i64,
    ) -> Result<(), ZkError> {
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
        self.nodes.remove(path);
        if let Some(parent) = self.nodes.get_mut(parent_of(path)) {
            parent.children.remove(path::basename(path));
            // Deletion moves pzxid, not cversion (ZooKeeper 3.8 DataTree).
            parent.stat.num_children -= 1;
            parent.stat.pzxid = zxid;
        }
        Ok(())
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
