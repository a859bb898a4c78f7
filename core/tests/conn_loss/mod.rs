//! A driver for one recipe on one simulated session, stepped by hand: it
//! remembers which requests await an answer, can hold a chosen request back
//! from the server and answer it with a scripted error, and breaks and
//! restores the connection (the simulator answers every request in flight
//! with `ConnectionLoss`, applied or not).

#![allow(dead_code)] // each test file uses a different part

#[path = "../faults/operator.rs"]
mod operator;
#[allow(unused_imports)] // not every test file has an operator
pub use operator::Operator;

use herdless_core::owned::OwnedReply;
use herdless_core::sim::{Delivery, SessionId, SimZk};
use herdless_core::Instant;
use herdless_core::{Recipe, RequestId, SessionEvent, ZkError};

/// A recipe bound to a session, remembering which requests await a reply.
pub struct Driver<R: Recipe> {
    /// The recipe under test.
    pub recipe: R,
    /// Its session.
    pub session: SessionId,
    outstanding: Vec<RequestId>,
    /// Events collected so far.
    pub events: Vec<R::Event>,
    /// Every request sent, as `(kind, path)`.
    pub sent: Vec<(&'static str, String)>,
    /// Requests of this `(kind, path)` are kept from the server, to be
    /// answered by the test ([`Driver::answer_intercepted`]).
    pub intercept: Option<(&'static str, String)>,
    intercepted: Vec<RequestId>,
}

impl<R: Recipe> Driver<R> {
    /// Binds `recipe` to a new session of `zk`.
    pub fn open(zk: &mut SimZk, recipe: R) -> Self {
        let session = zk.open_session();
        Self::on(recipe, session)
    }

    /// Binds `recipe` to `session`.
    pub fn on(recipe: R, session: SessionId) -> Self {
        Driver {
            recipe,
            session,
            outstanding: Vec::new(),
            events: Vec::new(),
            sent: Vec::new(),
            intercept: None,
            intercepted: Vec::new(),
        }
    }

    /// Calls `f` on the recipe, then drains.
    pub fn act<T>(&mut self, zk: &mut SimZk, f: impl FnOnce(&mut R) -> T) -> T {
        let out = f(&mut self.recipe);
        self.pump(zk);
        out
    }

    /// Sends what the recipe wants sent, then collects its events.
    pub fn pump(&mut self, zk: &mut SimZk) {
        while let Some(out) = self.recipe.poll_request() {
            let owned = herdless_core::sim::OwnedRequest::from_request(&out.request);
            let sent = (owned.kind(), out.request.path().to_owned());
            if self.intercept.as_ref() == Some(&sent) {
                self.intercepted.push(out.id);
            } else {
                zk.submit(self.session, out.id, &out.request);
                self.outstanding.push(out.id);
            }
            self.sent.push(sent);
        }
        while let Some(event) = self.recipe.poll_event() {
            self.events.push(event);
        }
    }

    /// Hands the next delivery to the recipe; on `Suspended`, first answers
    /// every request in flight with `ConnectionLoss`. Returns whether there
    /// was one.
    pub fn deliver_one(&mut self, zk: &mut SimZk) -> bool {
        let Some(delivery) = zk.next_delivery(self.session) else {
            return false;
        };
        match &delivery {
            Delivery::Reply(id, reply) => {
                self.outstanding.retain(|o| o != id);
                reply.with_reply(|r| self.recipe.handle_reply(Instant::ZERO, *id, r));
            }
            Delivery::Watch(..) => {
                if let Some(event) = delivery.as_watch() {
                    self.recipe.handle_watch(Instant::ZERO, event);
                }
            }
            Delivery::Session(SessionEvent::Suspended) => {
                self.answer_connection_loss();
                self.pump(zk);
                self.recipe
                    .handle_session(Instant::ZERO, SessionEvent::Suspended);
            }
            Delivery::Session(event) => {
                if matches!(event, SessionEvent::Expired | SessionEvent::Closed) {
                    self.outstanding.clear();
                }
                self.recipe.handle_session(Instant::ZERO, *event);
            }
        }
        self.pump(zk);
        true
    }

    /// Whether a request is held back for the test to answer.
    pub fn has_intercepted(&self) -> bool {
        !self.intercepted.is_empty()
    }

    /// Answers the oldest intercepted request with `reply`, then drains.
    /// Returns whether there was one.
    pub fn answer_intercepted(&mut self, zk: &mut SimZk, reply: OwnedReply) -> bool {
        if self.intercepted.is_empty() {
            return false;
        }
        let id = self.intercepted.remove(0);
        reply.with_reply(|r| self.recipe.handle_reply(Instant::ZERO, id, r));
        self.pump(zk);
        true
    }

    /// Answers every request in flight with `ConnectionLoss`, in order.
    pub fn answer_connection_loss(&mut self) {
        let mut ids = std::mem::take(&mut self.outstanding);
        ids.append(&mut self.intercepted);
        for id in ids {
            OwnedReply::Error(ZkError::ConnectionLoss)
                .with_reply(|r| self.recipe.handle_reply(Instant::ZERO, id, r));
        }
    }

    /// Delivers everything queued for the session.
    pub fn deliver_all(&mut self, zk: &mut SimZk) {
        while self.deliver_one(zk) {}
    }

    /// Applies the session's queued requests and delivers everything, until
    /// nothing is left.
    pub fn run(&mut self, zk: &mut SimZk) {
        for _ in 0..10_000 {
            let applied = zk.apply_next(self.session);
            let delivered = self.deliver_one(zk);
            if !applied && !delivered {
                return;
            }
        }
        panic!("never quiet");
    }

    /// Breaks the connection (requests not yet applied are dropped, replies
    /// of applied ones lost) and delivers the `ConnectionLoss` answers and
    /// `Suspended`.
    pub fn break_connection(&mut self, zk: &mut SimZk) {
        zk.disconnect(self.session);
        self.deliver_all(zk);
    }

    /// Restores the connection and delivers `Connected` and what follows.
    pub fn restore(&mut self, zk: &mut SimZk) {
        zk.reconnect(self.session);
        self.deliver_all(zk);
    }

    /// Takes the events collected so far.
    pub fn take_events(&mut self) -> Vec<R::Event> {
        std::mem::take(&mut self.events)
    }

    /// The requests sent so far, of one kind, as paths.
    pub fn sent_of(&self, kind: &str) -> Vec<String> {
        self.sent
            .iter()
            .filter(|(k, _)| *k == kind)
            .map(|(_, p)| p.clone())
            .collect()
    }
}
