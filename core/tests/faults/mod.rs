//! A scripted link between one recipe and the in-memory ZooKeeper, for
//! tests that place faults by hand where the simulator cannot yet: a
//! connection break answered the way the real drivers answer it (every
//! request in flight gets `ConnectionLoss`, then the same session is back),
//! and an operator session that deletes, creates and writes nodes.

#![allow(dead_code)] // each test file uses its own part

mod operator;
#[allow(unused_imports)] // not every test file has an operator
pub use operator::Operator;

use herdless_core::sim::{Delivery, OwnedRequest, SimZk};
use herdless_core::Instant;
use herdless_core::{Recipe, RequestId, SessionEvent};

/// One recipe on one session, driven step by step.
pub struct Link<R: Recipe> {
    pub recipe: R,
    pub session: i64,
    /// Requests sent whose answer has not reached the recipe.
    outstanding: Vec<RequestId>,
    /// Every request the recipe sent, in order.
    pub sent: Vec<OwnedRequest>,
    pub events: Vec<R::Event>,
}

impl<R: Recipe> Link<R> {
    pub fn new(zk: &mut SimZk, recipe: R) -> Self {
        let session = zk.open_session();
        Link {
            recipe,
            session,
            outstanding: Vec::new(),
            sent: Vec::new(),
            events: Vec::new(),
        }
    }

    /// Sends what the recipe wants sent, collects what it tells.
    pub fn pump(&mut self, zk: &mut SimZk) {
        while let Some(out) = self.recipe.poll_request() {
            zk.submit(self.session, out.id, &out.request);
            self.outstanding.push(out.id);
            self.sent.push(OwnedRequest::from_request(&out.request));
        }
        while let Some(event) = self.recipe.poll_event() {
            self.events.push(event);
        }
    }

    pub fn act<T>(&mut self, zk: &mut SimZk, f: impl FnOnce(&mut R) -> T) -> T {
        let out = f(&mut self.recipe);
        self.pump(zk);
        out
    }

    /// Hands everything the server has sent to the recipe.
    pub fn deliver(&mut self, zk: &mut SimZk) -> bool {
        let mut any = false;
        while let Some(delivery) = zk.next_delivery(self.session) {
            any = true;
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
                Delivery::Session(event) => self.recipe.handle_session(Instant::ZERO, *event),
            }
            self.pump(zk);
        }
        any
    }

    /// Applies the session's next request; its answer stays on its way.
    pub fn apply_one(&mut self, zk: &mut SimZk) -> bool {
        zk.apply_next(self.session)
    }

    /// Applies and delivers until nothing moves.
    pub fn settle(&mut self, zk: &mut SimZk) {
        for _ in 0..10_000 {
            let mut moved = false;
            while zk.apply_next(self.session) {
                moved = true;
            }
            moved |= self.deliver(zk);
            if !moved {
                return;
            }
        }
        panic!("the recipe never settled");
    }

    /// The connection breaks after the server applied `applied` of the
    /// requests waiting for it: every request in flight (applied or not)
    /// is answered `ConnectionLoss`, as the real drivers answer them, and
    /// the same session is back (`Connected`, then the notifications the
    /// server fired meanwhile).
    pub fn connection_loss(&mut self, zk: &mut SimZk, applied: usize) {
        self.connection_loss_with(zk, applied, |_| {});
    }

    /// As [`connection_loss`](Self::connection_loss), with `meanwhile`
    /// run on the server while this client is away.
    pub fn connection_loss_with(
        &mut self,
        zk: &mut SimZk,
        applied: usize,
        meanwhile: impl FnOnce(&mut SimZk),
    ) {
        for _ in 0..applied {
            assert!(zk.apply_next(self.session), "nothing to apply");
        }
        zk.disconnect(self.session);
        // The simulator answers every request in flight with
        // `ConnectionLoss`, with `Suspended` before, after or instead.
        self.deliver(zk);
        assert!(
            self.outstanding.is_empty(),
            "unanswered: {:?}",
            self.outstanding
        );
        meanwhile(zk);
        zk.reconnect(self.session);
    }

    /// Runs `f` on the recipe and loses the connection before the driver
    /// drains it (a driver may tell a session event first): whatever `f`
    /// queued is dropped unsent. Then the same session is back.
    pub fn act_then_lose<T>(&mut self, zk: &mut SimZk, f: impl FnOnce(&mut R) -> T) -> T {
        let out = f(&mut self.recipe);
        self.recipe
            .handle_session(Instant::ZERO, SessionEvent::Suspended);
        self.connection_loss(zk, 0);
        out
    }

    /// The session expires (after the server applied `applied` of the
    /// requests waiting); the recipe hears `Expired`, then `Connected` on a
    /// new session.
    pub fn expire_and_renew(&mut self, zk: &mut SimZk, applied: usize) {
        for _ in 0..applied {
            assert!(zk.apply_next(self.session), "nothing to apply");
        }
        zk.expire(self.session);
        self.deliver(zk);
        self.outstanding.clear();
        self.session = zk.open_session();
        self.recipe.handle_session(
            Instant::ZERO,
            SessionEvent::Connected {
                session_id: self.session,
            },
        );
        self.pump(zk);
    }

    /// How many requests of one kind (`"create"`, `"delete"`, ...) the
    /// recipe sent.
    pub fn count(&self, kind: &str) -> usize {
        self.sent.iter().filter(|r| r.kind() == kind).count()
    }
}
