//! Which ZooKeeper sessions a recipe has worked in, to tell its own
//! ephemeral nodes from another process's, and from its own of a session
//! before this one: a node left by an earlier session (which the server
//! may not have expired yet) dies with that session, so it is no claim to
//! a lock or a leadership (CURATOR-696), and not a name someone else holds.

/// The session a recipe works in, as far as it was told: its id, or 0
/// until then (ZooKeeper never gives a session the id 0, which as an
/// `ephemeralOwner` means a persistent node). An `i64` rather than an
/// `Option`: on a 32-bit microcontroller every test of the option was a
/// test of its tag and both halves of the id.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Current(i64);

impl Current {
    /// Records the session a `Connected` report names. Returns the one it
    /// replaces, if it differs (a first report replaces none).
    pub(crate) fn connected(&mut self, id: i64) -> Option<i64> {
        let old = core::mem::replace(&mut self.0, id);
        (old != 0 && old != id).then_some(old)
    }

    /// The session now, once told.
    pub(crate) fn id(&self) -> Option<i64> {
        (self.0 != 0).then_some(self.0)
    }

    /// Whether a node whose `ephemeralOwner` is `owner` belongs to this
    /// session. With none told yet (no `Connected` before the first
    /// create), the node was made on this session, which it names: `owner`
    /// becomes it (0, a persistent node, belongs to none).
    pub(crate) fn owns(&mut self, owner: i64) -> bool {
        if self.0 == 0 {
            self.0 = owner;
        }
        owner != 0 && owner == self.0
    }
}

/// The session a recipe works in, and the two before it (session ids are
/// never reused, so a node owned by one of them can only be the recipe's
/// own).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Sessions {
    current: Current,
    /// Newest first.
    earlier: [Option<i64>; 2],
}

impl Sessions {
    /// Records the session a `Connected` report names. Returns whether it
    /// differs from the last one told (a first report is not a change).
    pub(crate) fn connected(&mut self, id: i64) -> bool {
        let Some(old) = self.current.connected(id) else {
            return false;
        };
        self.earlier = [Some(old), self.earlier[0]];
        true
    }

    /// The session now, once told.
    pub(crate) fn current(&self) -> Option<i64> {
        self.current.id()
    }

    /// Whether `owner` (an `ephemeralOwner`) is one of the sessions before
    /// the current one. Never true of 0 (a persistent node).
    pub(crate) fn is_earlier(&self, owner: i64) -> bool {
        owner != 0 && Some(owner) != self.current() && self.earlier.contains(&Some(owner))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_two_sessions_before_the_current_one_are_earlier() {
        let mut sessions = Sessions::default();
        assert!(!sessions.connected(1), "a first report is no change");
        assert!(!sessions.connected(1));
        assert_eq!(sessions.current(), Some(1));
        assert!(!sessions.is_earlier(1));
        assert!(sessions.connected(2));
        assert!(sessions.is_earlier(1));
        assert!(!sessions.is_earlier(2));
        assert!(sessions.connected(3));
        assert!(sessions.is_earlier(1) && sessions.is_earlier(2));
        assert!(sessions.connected(4));
        assert!(!sessions.is_earlier(1), "only two are kept");
        assert!(sessions.is_earlier(2) && sessions.is_earlier(3));
        assert!(!sessions.is_earlier(0));
        assert!(!sessions.is_earlier(5));
    }

    #[test]
    fn a_node_belongs_to_the_current_session_or_names_it_when_none_was_told() {
        let mut current = Current::default();
        assert!(!current.owns(0), "a persistent node is no session's");
        assert_eq!(current.id(), None);
        assert!(current.owns(7), "the first owner seen is the session");
        assert_eq!(current.id(), Some(7));
        assert!(current.owns(7));
        assert!(!current.owns(8));
        assert_eq!(current.connected(7), None, "learnt from a node, then told");
        assert_eq!(current.connected(9), Some(7));
        assert!(!current.owns(7), "a node of the session before");
        assert!(current.owns(9));
    }
}
