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
            Change::Deleted { path, .. } => {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn created(path: &str) -> Change {
        Change::Created {
            path: path.to_string(),
        }
    }

    #[test]
    fn a_watch_fires_once_with_the_kind_of_change() {
        let mut w = Watches::default();
        w.add(WatchClass::Exist, "/n", 1);
        w.add(WatchClass::Data, "/n", 1);
        w.add(WatchClass::Child, "/", 2);
        w.add(WatchClass::Child, "/", 2);
        assert_eq!(w.count(), 3, "the same watch set twice is one");
        let fired = w.trigger(&created("/n"));
        assert_eq!(
            fired,
            [
                (1, WatchKind::NodeCreated, "/n".to_string()),
                (2, WatchKind::NodeChildrenChanged, "/".to_string()),
            ]
        );
        assert_eq!(w.count(), 0);
        assert!(w.trigger(&created("/n")).is_empty(), "one-shot");
    }

    #[test]
    fn a_deletion_reaches_every_table() {
        let mut w = Watches::default();
        w.add(WatchClass::Data, "/d", 1);
        w.add(WatchClass::Child, "/d", 2);
        w.add(WatchClass::Child, "/", 3);
        w.add(WatchClass::Data, "/other", 1);
        let fired = w.trigger(&Change::Deleted {
            path: "/d".to_string(),
            acl: Vec::new(),
        });
        assert_eq!(
            fired,
            [
                (1, WatchKind::NodeDeleted, "/d".to_string()),
                (2, WatchKind::NodeDeleted, "/d".to_string()),
                (3, WatchKind::NodeChildrenChanged, "/".to_string()),
            ]
        );
        let changed = w.trigger(&Change::DataChanged {
            path: "/other".to_string(),
        });
        assert_eq!(
            changed,
            [(1, WatchKind::NodeDataChanged, "/other".to_string())]
        );
    }

    #[test]
    fn a_session_that_ends_leaves_no_watch() {
        let mut w = Watches::default();
        w.add(WatchClass::Data, "/a", 1);
        w.add(WatchClass::Child, "/a", 1);
        w.add(WatchClass::Exist, "/b", 2);
        w.add(WatchClass::Data, "/a", 2);
        assert_eq!(
            w.of_session(1),
            [
                (WatchClass::Data, "/a".to_string()),
                (WatchClass::Child, "/a".to_string())
            ]
        );
        w.drop_session(1);
        assert_eq!(w.count(), 2);
        assert!(w.of_session(1).is_empty());
        assert_eq!(w.trigger(&created("/a/c")), [], "its child watch went too");
    }
}
