//! One recipe bound to one simulated session.

use alloc::string::String;
use alloc::vec::Vec;

use crate::owned::OwnedReply;
use crate::{Children, Instant, Recipe, RequestId};

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
        match (&delivery, zk.listing_part()) {
            (Delivery::Reply(id, OwnedReply::Children(names)), Some(size))
                if self.recipe.takes_listing_in_parts() =>
            {
                self.hand_over_in_parts(zk, *id, names, size);
            }
            _ => self.handle(&delivery),
        }
        self.pump(zk);
        true
    }

    /// Hands a listing over `size` names at a time, draining after every
    /// part as the embedded driver may (its parts come with separate reads,
    /// and requests go out in between).
    fn hand_over_in_parts(&mut self, zk: &mut SimZk, id: RequestId, names: &[String], size: usize) {
        let now = self.now;
        let mut parts = names.chunks(size).peekable();
        if parts.peek().is_none() {
            let none: &[String] = &[];
            self.recipe
                .handle_listing_part(now, id, Children::new(&none), true);
        }
        while let Some(part) = parts.next() {
            let last = parts.peek().is_none();
            self.recipe
                .handle_listing_part(now, id, Children::new(&part), last);
            if !last {
                self.pump(zk);
            }
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
        }
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
