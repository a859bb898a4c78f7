//! One recipe bound to one simulated session.

use alloc::string::String;
use alloc::vec::Vec;

use crate::owned::OwnedReply;
use crate::{Children, Instant, Recipe, Reply, RequestId, ZkError};

use super::owned::Delivery;
use super::server::SimZk;
use super::SessionId;

/// A recipe and the session it runs on, with the driver loop the transports
/// implement: after every input, requests are sent, then events collected.
pub struct Peer<R: Recipe> {
    /// The recipe under test.
    pub recipe: R,
    session: SessionId,
    events: Vec<R::Event>,
    /// The time of the last `tick`: what every input carries.
    now: Instant,
    /// The first instant at which the recipe's timer fired and stayed due.
    stuck_at: Option<Instant>,
}

impl<R: Recipe> Peer<R> {
    /// Binds `recipe` to an open session of `zk` and tells it the session's
    /// id, as both drivers do before anything else: a recipe can then tell
    /// a move to another session from a reconnect of its own.
    pub fn new(mut recipe: R, session: SessionId) -> Self {
        let now = Instant::ZERO;
        recipe.handle_session(
            now,
            crate::SessionEvent::Connected {
                session_id: session,
            },
        );
        Peer {
            recipe,
            session,
            events: Vec::new(),
            now,
            stuck_at: None,
        }
    }

    /// The session the recipe runs on.
    pub fn session(&self) -> SessionId {
        self.session
    }

    /// Moves the recipe to a new session (after its old one ended) and tells
    /// it `Connected`.
    pub fn move_to_session(&mut self, zk: &mut SimZk, session: SessionId) {
        self.session = session;
        self.recipe.handle_session(
            self.now,
            crate::SessionEvent::Connected {
                session_id: session,
            },
        );
        self.pump(zk);
    }

    /// Calls `f` on the recipe (to acquire, release, ...), then drains.
    pub fn act<T>(&mut self, zk: &mut SimZk, f: impl FnOnce(&mut R) -> T) -> T {
        let out = f(&mut self.recipe);
        self.pump(zk);
        out
    }

    /// Sends every request the recipe wants sent, then collects its events.
    pub fn pump(&mut self, zk: &mut SimZk) {
        while let Some(out) = self.recipe.poll_request() {
            zk.submit(self.session, out.id, &out.request);
        }
        while let Some(event) = self.recipe.poll_event() {
            self.events.push(event);
        }
    }

    /// Hands the session's next delivery to the recipe. Returns whether there
    /// was one.
    pub fn deliver_one(&mut self, zk: &mut SimZk) -> bool {
        let Some(delivery) = zk.next_delivery(self.session) else {
            return false;
        };
        self.take_in(zk, &delivery, |parts| parts);
        self.pump(zk);
        true
    }

    /// Hands the session's next delivery to the recipe, then breaks the
    /// connection before draining: the recipe hears of the loss (the
    /// server's `ConnectionLoss` answers, and `Suspended` if the server did
    /// not report it) while what the delivery made it queue is unsent.
    /// Returns whether there was a delivery.
    pub fn deliver_one_then_cut(&mut self, zk: &mut SimZk) -> bool {
        self.deliver_one_cutting_listing(zk, |parts| parts)
    }

    /// [`deliver_one_then_cut`](Self::deliver_one_then_cut), except that a
    /// listing handed over in parts is cut after `parts_read(n)` of its `n`
    /// parts (at least one, at most all): the connection breaks with the
    /// rest of the frame unread, as it does under herdless-embassy's driver
    /// when a server dies while sending a listing larger than the receive
    /// buffer. The listing's request was answered when its frame began, so
    /// the recipe hears no `ConnectionLoss` for it: it must forget the
    /// parts it read on its own.
    pub fn deliver_one_cutting_listing(
        &mut self,
        zk: &mut SimZk,
        parts_read: impl FnOnce(usize) -> usize,
    ) -> bool {
        let Some(delivery) = zk.next_delivery(self.session) else {
            return false;
        };
        self.take_in(zk, &delivery, parts_read);
        zk.disconnect(self.session);
        let mut suspended = false;
        while let Some(loss) = zk.next_delivery(self.session) {
            suspended |= matches!(loss, Delivery::Session(crate::SessionEvent::Suspended));
            self.handle(&loss);
        }
        if !suspended {
            self.recipe
                .handle_session(self.now, crate::SessionEvent::Suspended);
        }
        self.pump(zk);
        true
    }

    /// Hands the session's next delivery to the recipe as herdless-embassy's
    /// driver does when that delivery is a listing holding a name larger
    /// than its receive buffer: the parts before that name, `parts_read(n)`
    /// of the `n` parts (fewer than `n`, none at all if the name is the
    /// first), then `ReplyTooLarge` for the request, the rest of the frame
    /// skipped and the connection kept. A recipe that does not take
    /// listings in parts hears the error alone. Any other delivery is
    /// handed over as it is. Returns whether there was a delivery.
    pub fn deliver_one_too_large(
        &mut self,
        zk: &mut SimZk,
        parts_read: impl FnOnce(usize) -> usize,
    ) -> bool {
        let Some(delivery) = zk.next_delivery(self.session) else {
            return false;
        };
        match (&delivery, zk.listing_part()) {
            (Delivery::Reply(id, OwnedReply::Children(names)), Some(size)) => {
                if self.recipe.takes_listing_in_parts() {
                    let parts = parts_of(names, size);
                    let read = parts_read(parts).min(parts - 1);
                    if read > 0 {
                        self.hand_over_in_parts(zk, *id, names, size, read);
                        self.pump(zk);
                    }
                }
                self.recipe
                    .handle_reply(self.now, *id, Reply::Error(ZkError::ReplyTooLarge));
            }
            _ => self.handle(&delivery),
        }
        self.pump(zk);
        true
    }

    /// Hands `delivery` over as the driver would (a listing in parts to a
    /// recipe that takes them, where the server cuts listings), a listing
    /// only as far as its first `parts_read(n)` of `n` parts.
    fn take_in(
        &mut self,
        zk: &mut SimZk,
        delivery: &Delivery,
        parts_read: impl FnOnce(usize) -> usize,
    ) {
        match (delivery, zk.listing_part()) {
            (Delivery::Reply(id, OwnedReply::Children(names)), Some(size))
                if self.recipe.takes_listing_in_parts() =>
            {
                let parts = parts_of(names, size);
                let read = parts_read(parts).clamp(1, parts);
                self.hand_over_in_parts(zk, *id, names, size, read);
            }
            _ => self.handle(delivery),
        }
    }

    /// Hands a listing over `size` names at a time, draining after every
    /// part as the embedded driver may (its parts come with separate reads,
    /// and requests go out in between); stops after `read` parts, which
    /// leaves the listing unfinished if there are more.
    fn hand_over_in_parts(
        &mut self,
        zk: &mut SimZk,
        id: RequestId,
        names: &[String],
        size: usize,
        read: usize,
    ) {
        let now = self.now;
        let mut parts = names.chunks(size).peekable();
        if parts.peek().is_none() {
            let none: &[String] = &[];
            self.recipe
                .handle_listing_part(now, id, Children::new(&none), true);
        }
        let mut handed = 0;
        while let Some(part) = parts.next() {
            let last = parts.peek().is_none();
            self.recipe
                .handle_listing_part(now, id, Children::new(&part), last);
            handed += 1;
            if last || handed == read {
                break;
            }
            self.pump(zk);
        }
    }

    fn handle(&mut self, delivery: &Delivery) {
        let now = self.now;
        match delivery {
            Delivery::Reply(id, reply) => {
                reply.with_reply(|r| self.recipe.handle_reply(now, *id, r))
            }
            Delivery::Watch(..) => {
                if let Some(event) = delivery.as_watch() {
                    self.recipe.handle_watch(now, event);
                }
            }
            Delivery::Session(event) => self.recipe.handle_session(now, *event),
        }
    }

    /// Calls `handle_timeout` if the recipe's timer is due at `now`.
    pub fn tick(&mut self, zk: &mut SimZk, now: Instant) {
        self.now = now;
        if self.recipe.poll_timeout().is_some_and(|t| t <= now) {
            self.recipe.handle_timeout(now);
            self.pump(zk);
            if self.stuck_at.is_none() && self.recipe.poll_timeout().is_some_and(|t| t <= now) {
                self.stuck_at = Some(now);
            }
        }
    }

    /// The first instant at which the recipe's timer fired and was still
    /// due after `handle_timeout`, breaking the [`Recipe`] contract: a
    /// driver calls `handle_timeout` whenever the timer is due, so it would
    /// call it again and again, and an embedded executor, which does not
    /// yield on a timer already due, would starve the network stack.
    pub fn stuck_timer(&self) -> Option<Instant> {
        self.stuck_at
    }

    /// Takes the events collected so far.
    pub fn take_events(&mut self) -> Vec<R::Event> {
        core::mem::take(&mut self.events)
    }

    /// The events collected so far, without taking them.
    pub fn events(&self) -> &[R::Event] {
        &self.events
    }
}

/// How many parts a listing of `names` goes over in, `size` names each:
/// one, empty, for no names.
fn parts_of(names: &[String], size: usize) -> usize {
    names.len().div_ceil(size).max(1)
}

#[cfg(test)]
mod tests {
    use alloc::string::ToString;
    use alloc::vec;

    use super::super::recorder::Recorder;
    use super::super::server::SessionStatus;
    use super::*;

    /// A peer whose recorder asked to list `/d` (holding `children`
    /// nodes) on a server that hands listings over two names at a time,
    /// and the server, which applied the request: the listing waits to be
    /// delivered. The recorder's log starts after `Connected`, which is
    /// checked on its own.
    fn listing_queued(children: usize, recorder: Recorder) -> (SimZk, Peer<Recorder>) {
        let mut zk = SimZk::new(1);
        zk.set_listing_part(Some(2));
        zk.create_persistent("/d", b"").unwrap();
        for i in 0..children {
            zk.create_persistent(&alloc::format!("/d/{i}"), b"")
                .unwrap();
        }
        let session = zk.open_session();
        let mut peer = Peer::new(recorder, session);
        peer.recipe.log.clear();
        peer.recipe.to_list.push_back("/d".to_string());
        peer.pump(&mut zk);
        assert!(zk.apply_next(session));
        (zk, peer)
    }

    /// [`listing_queued`], with the listing delivered.
    fn listing_of(children: usize, recorder: Recorder) -> Peer<Recorder> {
        let (mut zk, mut peer) = listing_queued(children, recorder);
        assert!(peer.deliver_one(&mut zk));
        peer
    }

    fn in_parts() -> Recorder {
        Recorder {
            in_parts: true,
            ..Recorder::default()
        }
    }

    #[test]
    fn a_recipe_hears_its_session_first() {
        let peer = Peer::new(Recorder::default(), 0x42);
        assert_eq!(peer.recipe.log, ["session Connected { session_id: 66 }"]);
        assert_eq!(peer.session(), 0x42);
    }

    #[test]
    fn a_listing_goes_over_in_parts_with_requests_sent_in_between() {
        let recorder = Recorder {
            in_parts: true,
            list_on_part: true,
            ..Recorder::default()
        };
        let peer = listing_of(5, recorder);
        assert_eq!(
            peer.recipe.log,
            [
                "sent /d",
                "part of 2 last false",
                "sent /",
                "part of 2 last false",
                "sent /",
                "part of 1 last true",
            ]
        );
        let mut names = peer.recipe.names.clone();
        names.sort();
        assert_eq!(names, ["0", "1", "2", "3", "4"]);
    }

    #[test]
    fn a_listing_cut_after_a_part_hands_over_no_more_and_no_last_part() {
        let (mut zk, mut peer) = listing_queued(5, in_parts());
        let mut asked = None;
        assert!(peer.deliver_one_cutting_listing(&mut zk, |parts| {
            asked = Some(parts);
            2
        }));
        assert_eq!(asked, Some(3), "five names in parts of two");
        assert_eq!(
            peer.recipe.log,
            [
                "sent /d",
                "part of 2 last false",
                "part of 2 last false",
                "session Suspended",
            ]
        );
        assert_eq!(zk.status(peer.session()), Some(SessionStatus::Disconnected));
    }

    #[test]
    fn a_cut_after_a_delivery_hands_the_whole_listing_over_first() {
        let (mut zk, mut peer) = listing_queued(3, in_parts());
        assert!(peer.deliver_one_then_cut(&mut zk));
        assert_eq!(
            peer.recipe.log,
            [
                "sent /d",
                "part of 2 last false",
                "part of 1 last true",
                "session Suspended",
            ]
        );
        assert_eq!(zk.status(peer.session()), Some(SessionStatus::Disconnected));
        assert!(
            !peer.deliver_one_then_cut(&mut zk),
            "nothing left to deliver"
        );
    }

    #[test]
    fn a_listing_too_large_hands_over_the_parts_before_the_name_then_the_error() {
        let (mut zk, mut peer) = listing_queued(5, in_parts());
        let mut asked = None;
        assert!(peer.deliver_one_too_large(&mut zk, |parts| {
            asked = Some(parts);
            2
        }));
        assert_eq!(asked, Some(3), "five names in parts of two");
        assert_eq!(
            peer.recipe.log,
            [
                "sent /d",
                "part of 2 last false",
                "part of 2 last false",
                "reply Error(ReplyTooLarge)",
            ]
        );
        assert_eq!(
            zk.status(peer.session()),
            Some(SessionStatus::Connected),
            "the connection is kept"
        );
    }

    #[test]
    fn a_listing_too_large_never_hands_over_its_last_part() {
        let (mut zk, mut peer) = listing_queued(3, in_parts());
        assert!(peer.deliver_one_too_large(&mut zk, |parts| parts));
        assert_eq!(
            peer.recipe.log,
            [
                "sent /d",
                "part of 2 last false",
                "reply Error(ReplyTooLarge)",
            ]
        );
    }

    #[test]
    fn a_first_name_too_large_hands_over_the_error_alone() {
        let (mut zk, mut peer) = listing_queued(3, in_parts());
        assert!(peer.deliver_one_too_large(&mut zk, |_| 0));
        assert_eq!(peer.recipe.log, ["sent /d", "reply Error(ReplyTooLarge)"]);
    }

    #[test]
    fn a_recipe_that_takes_listings_whole_hears_the_error_alone() {
        let (mut zk, mut peer) = listing_queued(3, Recorder::default());
        assert!(peer.deliver_one_too_large(&mut zk, |parts| parts));
        assert_eq!(peer.recipe.log, ["sent /d", "reply Error(ReplyTooLarge)"]);
    }

    #[test]
    fn a_delivery_other_than_a_listing_is_handed_over_as_it_is() {
        let (mut zk, mut peer) = listing_queued(3, in_parts());
        // The listing's answer becomes `ConnectionLoss`, and the loss is
        // reported, as a session without watch reset always reports it.
        zk.set_watch_reset(false);
        zk.disconnect(peer.session());
        while peer.deliver_one_too_large(&mut zk, |parts| parts) {}
        let mut log = peer.recipe.log.clone();
        log.sort();
        assert_eq!(
            log,
            [
                "reply Error(ConnectionLoss)",
                "sent /d",
                "session Suspended"
            ]
        );
    }

    #[test]
    fn an_empty_listing_is_one_empty_last_part() {
        let peer = listing_of(0, in_parts());
        assert_eq!(peer.recipe.log, ["sent /d", "part of 0 last true"]);
    }

    #[test]
    fn a_recipe_that_takes_listings_whole_gets_them_whole() {
        let peer = listing_of(3, Recorder::default());
        assert_eq!(peer.recipe.log.len(), 2);
        assert!(
            peer.recipe.log[1].starts_with("reply Children"),
            "{:?}",
            peer.recipe.log
        );
    }

    #[test]
    fn events_are_kept_until_taken() {
        let mut zk = SimZk::new(1);
        let session = zk.open_session();
        let mut peer = Peer::new(Recorder::default(), session);
        peer.act(&mut zk, |r| r.events.extend([7, 8]));
        assert_eq!(peer.events(), [7, 8]);
        assert_eq!(peer.take_events(), vec![7, 8]);
        assert!(peer.events().is_empty());
    }
}
