//! What a recipe knows of its link to ZooKeeper: whether requests can be
//! sent now, and whether the session behind them lives on, so that work
//! started between an expiry and the next session waits for that session
//! instead of failing.

use crate::SessionEvent;

/// The connection and the session a recipe works in, as one state: a
/// session that is over has no connection either.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum Link {
    /// Connected: requests may be sent.
    #[default]
    Up,
    /// Disconnected in a session that may resume: nothing is sent until
    /// `Connected`.
    Down,
    /// Expired (or answered as gone): its ephemeral nodes are gone. A
    /// transport that renews sessions (herdless-std on a `Session`) opens a
    /// new one, announced by `Connected`; one that does not reports the end
    /// itself (herdless-std on a plain client follows with `Closed`,
    /// herdless-embassy ends every call with the session).
    Ended,
    /// Closed: no session follows.
    Closed,
}

/// What a `Connected` report means for a recipe.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Reconnect {
    /// It was connected already (a report nobody lost anything over).
    Same,
    /// The same session is back after a disconnection.
    Resumed,
    /// A new session: the last one was over.
    New,
}

impl Link {
    /// Whether requests may be sent.
    pub(crate) fn is_up(self) -> bool {
        self == Link::Up
    }

    /// Whether the session is over (ended or closed).
    pub(crate) fn is_over(self) -> bool {
        matches!(self, Link::Ended | Link::Closed)
    }

    /// Whether new work may start: after an expiry it waits for the next
    /// session, as it waits for a reconnect; after a close nothing follows.
    pub(crate) fn accepts_work(self) -> bool {
        self != Link::Closed
    }

    /// The connection is gone; returns whether it was up (so a loss is
    /// acted on once).
    pub(crate) fn lose(&mut self) -> bool {
        let was_up = self.is_up();
        if was_up {
            *self = Link::Down;
        }
        was_up
    }

    /// Records the end of the session; `Closed` is never undone by a later
    /// expiry answer.
    pub(crate) fn end(&mut self, how: SessionEvent) {
        if *self != Link::Closed {
            *self = if how == SessionEvent::Closed {
                Link::Closed
            } else {
                Link::Ended
            };
        }
    }

    /// A session is connected: what that means, given what came before.
    pub(crate) fn connected(&mut self) -> Reconnect {
        let how = match self {
            Link::Up => Reconnect::Same,
            Link::Down => Reconnect::Resumed,
            Link::Ended | Link::Closed => Reconnect::New,
        };
        *self = Link::Up;
        how
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_loss_is_reported_once_and_an_ended_session_stays_ended() {
        let mut link = Link::Up;
        assert!(link.lose());
        assert!(!link.lose());
        assert!(!link.is_up() && !link.is_over() && link.accepts_work());
        assert_eq!(link.connected(), Reconnect::Resumed);
        assert_eq!(link.connected(), Reconnect::Same);
        link.end(SessionEvent::Expired);
        assert!(!link.lose(), "an ended session has no connection to lose");
        assert_eq!(link, Link::Ended);
        assert!(link.is_over() && link.accepts_work());
        assert_eq!(link.connected(), Reconnect::New);
        link.end(SessionEvent::Closed);
        link.end(SessionEvent::Expired);
        assert_eq!(link, Link::Closed);
        assert!(!link.accepts_work());
    }
}
