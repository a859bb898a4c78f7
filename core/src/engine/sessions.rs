//! Which ZooKeeper sessions a recipe has worked in, to tell its own
//! ephemeral nodes from another process's: a node left by the session
//! before this one (which the server may not have expired yet) is this
//! recipe's, on its way out, and must not be taken for a name someone else
//! holds.

/// The session a recipe works in, and the two before it (session ids are
/// never reused, so a node owned by one of them can only be the recipe's
/// own).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Sessions {
    current: Option<i64>,
    /// Newest first.
    earlier: [Option<i64>; 2],
}

impl Sessions {
    /// Records the session a `Connected` report names. Returns whether it
    /// differs from the last one told (a first report is not a change).
    pub(crate) fn connected(&mut self, id: i64) -> bool {
        match self.current {
            Some(old) if old != id => {
                self.earlier = [Some(old), self.earlier[0]];
                self.current = Some(id);
                true
            }
            Some(_) => false,
            None => {
                self.current = Some(id);
                false
            }
        }
    }

    /// The session now, once told.
    pub(crate) fn current(&self) -> Option<i64> {
        self.current
    }

    /// Whether `owner` (an `ephemeralOwner`) is one of the sessions before
    /// the current one. Never true of 0 (a persistent node).
    pub(crate) fn is_earlier(&self, owner: i64) -> bool {
        owner != 0 && Some(owner) != self.current && self.earlier.contains(&Some(owner))
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
}
