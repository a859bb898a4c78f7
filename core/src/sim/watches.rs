//! One-shot watches, held per session and path, in ZooKeeper's two tables.

use alloc::collections::{BTreeMap, BTreeSet};
use alloc::string::{String, ToString};
use alloc::vec::Vec;

use crate::wire::WatchClass;
use crate::WatchKind;

use super::tree::{parent_of, Change};
use super::SessionId;

/// The server's watch tables. Setting the same watch twice is one entry; a
/// watch is removed when it fires.
#[derive(Clone, Debug, Default)]
pub(crate) struct Watches {
    /// Set by getData, and by exists on an existing node.
    data: BTreeMap<String, BTreeSet<SessionId>>,
    /// Set by exists on a missing node: fires on creation.
    exist: BTreeMap<String, BTreeSet<SessionId>>,
    /// Set by getChildren.
    child: BTreeMap<String, BTreeSet<SessionId>>,
}

impl Watches {
    pub(crate) fn add(&mut self, class: WatchClass, path: &str, session: SessionId) {
        let map = match class {
            WatchClass::Data => &mut self.data,
            WatchClass::Exist => &mut self.exist,
            WatchClass::Child => &mut self.child,
        };
        map.entry(path.to_string()).or_default().insert(session);
    }

    /// Removes and returns the notifications a change causes, one per
    /// session and path (a deletion seen by both tables is one event).
    pub(crate) fn trigger(&mut self, change: &Change) -> Vec<(SessionId, WatchKind, String)> {
        let mut out = Vec::new();
        let fire = |map: &mut BTreeMap<String, BTreeSet<SessionId>>,
                    path: &str,
                    kind: WatchKind,
                    out: &mut Vec<_>| {
            if let Some(sessions) = map.remove(path) {
                for s in sessions {
                    let event = (s, kind, path.to_string());
                    if !out.contains(&event) {
                        out.push(event);
                    }
                }
            }
        };
        match change {
            Change::Created { path } => {
                fire(&mut self.exist, path, WatchKind::NodeCreated, &mut out);
                fire(&mut self.data, path, WatchKind::NodeCreated, &mut out);
                fire(
                    &mut self.child,
                    parent_of(path),
                    WatchKind::NodeChildrenChanged,
                    &mut out,
                );
            }
            Change::Deleted { path } => {
                fire(&mut self.data, path, WatchKind::NodeDeleted, &mut out);
                fire(&mut self.exist, path, WatchKind::NodeDeleted, &mut out);
                fire(&mut self.child, path, WatchKind::NodeDeleted, &mut out);
                fire(
                    &mut self.child,
                    parent_of(path),
                    WatchKind::NodeChildrenChanged,
                    &mut out,
                );
            }
            Change::DataChanged { path } => {
                fire(&mut self.data, path, WatchKind::NodeDataChanged, &mut out);
                fire(&mut self.exist, path, WatchKind::NodeDataChanged, &mut out);
            }
        }
        out
    }

    /// Drops every watch of a session (it expired or closed).
    pub(crate) fn drop_session(&mut self, session: SessionId) {
        for map in [&mut self.data, &mut self.exist, &mut self.child] {
            map.retain(|_, sessions| {
                sessions.remove(&session);
                !sessions.is_empty()
            });
        }
    }

    /// Number of (path, session) entries in all tables, like `zk_watch_count`.
    pub(crate) fn count(&self) -> usize {
        [&self.data, &self.exist, &self.child]
            .iter()
            .map(|m| m.values().map(BTreeSet::len).sum::<usize>())
            .sum()
    }

    /// The paths `session` watches, with their table.
    pub(crate) fn of_session(&self, session: SessionId) -> Vec<(WatchClass, String)> {
        let mut out = Vec::new();
        for (class, map) in [
            (WatchClass::Data, &self.data),
            (WatchClass::Exist, &self.exist),
            (WatchClass::Child, &self.child),
        ] {
            for (path, sessions) in map {
                if sessions.contains(&session) {
                    out.push((class, path.clone()));
                }
            }
        }
        out
    }
}
