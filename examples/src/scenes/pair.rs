//! Two kinds of recipe in one simulated world.

use herdless_core::{Instant, Outgoing, Recipe, Reply, RequestId, SessionEvent, WatchEvent};

/// Either recipe, so one `World` runs both (members and an observer, say).
pub enum Pair<A, B> {
    /// The first kind.
    A(A),
    /// The second kind.
    B(B),
}

/// An event of either recipe.
#[derive(Debug)]
pub enum PairEvent<A, B> {
    /// From the first kind.
    A(A),
    /// From the second kind.
    B(B),
}

impl<A: Recipe, B: Recipe> Recipe for Pair<A, B> {
    type Event = PairEvent<A::Event, B::Event>;

    fn poll_request(&mut self) -> Option<Outgoing<'_>> {
        match self {
            Pair::A(a) => a.poll_request(),
            Pair::B(b) => b.poll_request(),
        }
    }

    fn handle_reply(&mut self, id: RequestId, reply: Reply<'_>) {
        match self {
            Pair::A(a) => a.handle_reply(id, reply),
            Pair::B(b) => b.handle_reply(id, reply),
        }
    }

    fn handle_watch(&mut self, event: WatchEvent<'_>) {
        match self {
            Pair::A(a) => a.handle_watch(event),
            Pair::B(b) => b.handle_watch(event),
        }
    }

    fn handle_session(&mut self, event: SessionEvent) {
        match self {
            Pair::A(a) => a.handle_session(event),
            Pair::B(b) => b.handle_session(event),
        }
    }

    fn handle_timeout(&mut self, now: Instant) {
        match self {
            Pair::A(a) => a.handle_timeout(now),
            Pair::B(b) => b.handle_timeout(now),
        }
    }

    fn poll_timeout(&self) -> Option<Instant> {
        match self {
            Pair::A(a) => a.poll_timeout(),
            Pair::B(b) => b.poll_timeout(),
        }
    }

    fn poll_event(&mut self) -> Option<Self::Event> {
        match self {
            Pair::A(a) => a.poll_event().map(PairEvent::A),
            Pair::B(b) => b.poll_event().map(PairEvent::B),
        }
    }
}
