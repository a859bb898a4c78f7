//! Two kinds of recipe in one simulated world.

use crate::{Children, Instant, Outgoing, Recipe, Reply, RequestId, SessionEvent, WatchEvent};

/// Either of two recipes, so one [`World`](super::World) runs both (say,
/// producers and consumers of a queue, or members and an observer).
///
/// ```
/// use herdless_core::member::Member;
/// use herdless_core::members;
/// use herdless_core::sim::{Either, World};
///
/// let mut world: World<Either<Member, members::Observer>> = World::new(1);
/// let member = world.add_peer(Either::A(Member::new("/g", "m1").unwrap()));
/// let observer = world.add_peer(Either::B(members::Observer::new("/g").unwrap()));
/// # let _ = (member, observer);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Either<A, B> {
    /// The first kind.
    A(A),
    /// The second kind.
    B(B),
}

impl<A, B> Either<A, B> {
    /// The first kind, if it is one.
    pub fn a(&self) -> Option<&A> {
        match self {
            Either::A(a) => Some(a),
            Either::B(_) => None,
        }
    }

    /// The second kind, if it is one.
    pub fn b(&self) -> Option<&B> {
        match self {
            Either::A(_) => None,
            Either::B(b) => Some(b),
        }
    }

    /// The first kind, mutably, if it is one.
    pub fn a_mut(&mut self) -> Option<&mut A> {
        match self {
            Either::A(a) => Some(a),
            Either::B(_) => None,
        }
    }

    /// The second kind, mutably, if it is one.
    pub fn b_mut(&mut self) -> Option<&mut B> {
        match self {
            Either::A(_) => None,
            Either::B(b) => Some(b),
        }
    }
}

impl<A: Recipe, B: Recipe> Recipe for Either<A, B> {
    type Event = Either<A::Event, B::Event>;

    fn poll_request(&mut self) -> Option<Outgoing<'_>> {
        match self {
            Either::A(a) => a.poll_request(),
            Either::B(b) => b.poll_request(),
        }
    }

    fn handle_reply(&mut self, now: Instant, id: RequestId, reply: Reply<'_>) {
        match self {
            Either::A(a) => a.handle_reply(now, id, reply),
            Either::B(b) => b.handle_reply(now, id, reply),
        }
    }

    fn handle_watch(&mut self, now: Instant, event: WatchEvent<'_>) {
        match self {
            Either::A(a) => a.handle_watch(now, event),
            Either::B(b) => b.handle_watch(now, event),
        }
    }

    fn handle_session(&mut self, now: Instant, event: SessionEvent) {
        match self {
            Either::A(a) => a.handle_session(now, event),
            Either::B(b) => b.handle_session(now, event),
        }
    }

    fn handle_timeout(&mut self, now: Instant) {
        match self {
            Either::A(a) => a.handle_timeout(now),
            Either::B(b) => b.handle_timeout(now),
        }
    }

    fn poll_timeout(&self) -> Option<Instant> {
        match self {
            Either::A(a) => a.poll_timeout(),
            Either::B(b) => b.poll_timeout(),
        }
    }

    fn poll_event(&mut self) -> Option<Self::Event> {
        match self {
            Either::A(a) => a.poll_event().map(Either::A),
            Either::B(b) => b.poll_event().map(Either::B),
        }
    }

    // Forwarded too, or a world of mixed recipes would hand every listing
    // over whole and never take the path the embedded driver takes.
    fn takes_listing_in_parts(&self) -> bool {
        match self {
            Either::A(a) => a.takes_listing_in_parts(),
            Either::B(b) => b.takes_listing_in_parts(),
        }
    }

    fn handle_listing_part(
        &mut self,
        now: Instant,
        id: RequestId,
        names: Children<'_>,
        last: bool,
    ) {
        match self {
            Either::A(a) => a.handle_listing_part(now, id, names, last),
            Either::B(b) => b.handle_listing_part(now, id, names, last),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::recorder::Recorder;
    use super::*;

    type Two = Either<Recorder, Recorder>;

    #[test]
    fn the_accessors_find_the_kind_held() {
        let mut a = Two::A(Recorder::default());
        let mut b = Two::B(Recorder::default());
        assert!(a.a().is_some() && a.b().is_none());
        assert!(b.b().is_some() && b.a().is_none());
        assert!(a.a_mut().is_some() && a.b_mut().is_none());
        assert!(b.b_mut().is_some() && b.a_mut().is_none());
    }

    #[test]
    fn timers_and_listings_in_parts_reach_the_recipe_held() {
        let timer = Some(Instant::from_millis(5));
        for mut either in [
            Two::A(Recorder {
                in_parts: true,
                timer,
                ..Recorder::default()
            }),
            Two::B(Recorder {
                in_parts: true,
                timer,
                ..Recorder::default()
            }),
        ] {
            assert!(either.takes_listing_in_parts());
            assert_eq!(either.poll_timeout(), timer);
            let names: &[&str] = &["x"];
            either.handle_listing_part(
                Instant::ZERO,
                RequestId::new(0, 1),
                Children::new(&names),
                true,
            );
            either.handle_timeout(Instant::from_millis(5));
            let held = match &either {
                Either::A(r) | Either::B(r) => r,
            };
            assert_eq!(held.log, ["part of 1 last true", "timeout at 5"]);
        }
        assert!(!Two::B(Recorder::default()).takes_listing_in_parts());
    }
}
