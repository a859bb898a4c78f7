//! What a recipe knows of its session's life, so that work started between
//! an expiry and the next session waits for that session instead of failing.

use crate::SessionEvent;

/// Whether the session a recipe works in is live, ended (expired, and
/// perhaps renewed by the transport), or closed for good.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum SessionLife {
    /// Connected, or disconnected in a session that may resume.
    #[default]
    Live,
    /// Expired (or answered as gone): its ephemeral nodes are gone. A
    /// transport that renews sessions (both of herdless') opens a new one,
    /// announced by `Connected`; one that does not reports the end itself.
    Ended,
    /// Closed: no session follows.
    Closed,
}

impl SessionLife {
    /// Whether the session is over (ended or closed).
    pub(crate) fn is_over(self) -> bool {
        self != SessionLife::Live
    }

    /// Whether new work may start: after an expiry it waits for the next
    /// session, as it waits for a reconnect; after a close nothing follows.
    pub(crate) fn accepts_work(self) -> bool {
        self != SessionLife::Closed
    }

    /// Records the end of the session; `Closed` is never undone by a later
    /// expiry answer.
    pub(crate) fn end(&mut self, how: SessionEvent) {
        if *self != SessionLife::Closed {
            *self = if how == SessionEvent::Closed {
                SessionLife::Closed
            } else {
                SessionLife::Ended
            };
        }
    }

    /// A session is connected; returns whether it is a new one (the last
    /// one was over).
    pub(crate) fn connected(&mut self) -> bool {
        let new = self.is_over();
        *self = SessionLife::Live;
        new
    }
}
