//! A recipe as the driver holds it: any [`Recipe`], its event type erased.
//!
//! The driver keeps recipes of different types in one fixed-size table and
//! feeds them all from one session; only the typed
//! [`RecipeId`](crate::RecipeId) that [`Zk::add`](crate::Zk::add) hands out
//! gets a recipe back as its own type (through [`Any`]).

use core::any::Any;

use herdless_core::{
    Children, Instant, Outgoing, Recipe, Reply, RequestId, SessionEvent, WatchEvent,
};

/// The object-safe part of [`Recipe`] (everything but `poll_event`, whose
/// type differs per recipe), plus a way back to the concrete type.
pub(crate) trait ErasedRecipe {
    fn poll_request(&mut self) -> Option<Outgoing<'_>>;
    fn handle_reply(&mut self, now: Instant, id: RequestId, reply: Reply<'_>);
    fn takes_listing_in_parts(&self) -> bool;
    fn handle_listing_part(&mut self, now: Instant, id: RequestId, names: Children<'_>, last: bool);
    fn handle_watch(&mut self, now: Instant, event: WatchEvent<'_>);
    fn handle_session(&mut self, now: Instant, event: SessionEvent);
    fn handle_timeout(&mut self, now: Instant);
    fn poll_timeout(&self) -> Option<Instant>;
    fn as_any(&mut self) -> &mut dyn Any;
}

impl<R: Recipe + 'static> ErasedRecipe for R {
    fn poll_request(&mut self) -> Option<Outgoing<'_>> {
        Recipe::poll_request(self)
    }

    fn handle_reply(&mut self, now: Instant, id: RequestId, reply: Reply<'_>) {
        Recipe::handle_reply(self, now, id, reply);
    }

    fn takes_listing_in_parts(&self) -> bool {
        Recipe::takes_listing_in_parts(self)
    }

    fn handle_listing_part(
        &mut self,
        now: Instant,
        id: RequestId,
        names: Children<'_>,
        last: bool,
    ) {
        Recipe::handle_listing_part(self, now, id, names, last);
    }

    fn handle_watch(&mut self, now: Instant, event: WatchEvent<'_>) {
        Recipe::handle_watch(self, now, event);
    }

    fn handle_session(&mut self, now: Instant, event: SessionEvent) {
        Recipe::handle_session(self, now, event);
    }

    fn handle_timeout(&mut self, now: Instant) {
        Recipe::handle_timeout(self, now);
    }

    fn poll_timeout(&self) -> Option<Instant> {
        Recipe::poll_timeout(self)
    }

    fn as_any(&mut self) -> &mut dyn Any {
        self
    }
}
