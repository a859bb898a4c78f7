//! The one contract every recipe implements.

use crate::{Children, Instant, Reply, Request, RequestId, SessionEvent, WatchEvent};

/// A request a recipe wants sent, with the id its reply must carry back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Outgoing<'a> {
    /// Hand this back to [`Recipe::handle_reply`] with the reply.
    pub id: RequestId,
    /// What to send.
    pub request: Request<'a>,
}

/// A coordination recipe as a pure state machine.
///
/// A recipe never touches a socket, a clock or an allocator. A driver (the
/// tokio transport, the embassy transport, the in-memory simulator, a unit
/// test) tells it what happened through the `handle_*` methods and asks what
/// to do through the `poll_*` methods.
///
/// # The four inputs
///
/// Every input carries the driver's current time, `now`, on one monotonic
/// clock of the driver's choosing (a driver's clock usually starts at 0
/// when it starts the recipe). A recipe never reads a clock of its own:
/// what it does with time (a deadline passed, a suspension too long) it
/// decides from the `now` of its inputs.
///
/// * [`handle_reply`](Recipe::handle_reply): the answer to a request the
///   recipe emitted, with the [`RequestId`] it was emitted with. Replies
///   whose id belongs to an earlier session epoch are ignored by the recipe,
///   so a driver may deliver late answers without harm.
/// * [`handle_watch`](Recipe::handle_watch): a watch set by one of the
///   recipe's requests fired.
/// * [`handle_session`](Recipe::handle_session): the connection was lost,
///   came back, or the session ended. A driver reports
///   [`SessionEvent::Suspended`] once per loss and [`SessionEvent::Connected`]
///   when the same session is usable again. A reply carrying
///   [`ZkError::ConnectionLoss`](crate::ZkError::ConnectionLoss) counts as a
///   loss by itself (the recipe stops sending until it hears `Connected`), so
///   a driver that delivers one must follow it with `Connected` once the
///   session is usable, even if it never saw the connection drop.
/// * [`handle_timeout`](Recipe::handle_timeout): the time given by
///   [`poll_timeout`](Recipe::poll_timeout) has come.
///
/// A recipe that says so ([`takes_listing_in_parts`](Recipe::takes_listing_in_parts))
/// may get a `getChildren` answer through
/// [`handle_listing_part`](Recipe::handle_listing_part) instead of
/// `handle_reply`: the same reply, cut into parts by a driver whose receive
/// buffer is smaller than it.
///
/// # The three outputs, and the drain order
///
/// After every `handle_*` call (and after calling one of the recipe's own
/// methods such as `acquire` or `release`), the driver drains, in this order:
///
/// 1. [`poll_request`](Recipe::poll_request) until `None`, sending each
///    request in the order returned (ZooKeeper answers one session's
///    requests in order, and recipes rely on it to pipeline);
/// 2. [`poll_event`](Recipe::poll_event) until `None`, handing each event to
///    the application;
/// 3. [`poll_timeout`](Recipe::poll_timeout), re-arming its timer.
///
/// Requests before events, so that an event the application reacts to (say,
/// "acquired", followed by a release) finds the requests that led to it
/// already on the wire.
///
/// A driver may report a session event before it has drained the recipe:
/// one started on a client whose connection is already down hears
/// `Suspended` before its first requests go out. Its queued requests are
/// dropped with the connection, and the recipe makes again, once
/// `Connected`, whatever work they stood for.
///
/// Until the first [`SessionEvent`] the recipe assumes a connected session.
pub trait Recipe {
    /// What the recipe tells the application.
    type Event;

    /// The next request to send, if any. The request borrows from the
    /// recipe: encode or copy it before calling again.
    fn poll_request(&mut self) -> Option<Outgoing<'_>>;

    /// The reply to the request emitted with `id`, received at `now`.
    fn handle_reply(&mut self, now: Instant, id: RequestId, reply: Reply<'_>);

    /// A watch notification for a path this recipe watched, received at
    /// `now`.
    fn handle_watch(&mut self, now: Instant, event: WatchEvent<'_>);

    /// A change of the session's state, seen at `now`.
    fn handle_session(&mut self, now: Instant, event: SessionEvent);

    /// The current time, at or after what [`poll_timeout`](Recipe::poll_timeout) asked for.
    /// A recipe without timers keeps the default, which does nothing.
    fn handle_timeout(&mut self, now: Instant) {
        let _ = now;
    }

    /// When the recipe wants [`handle_timeout`](Recipe::handle_timeout)
    /// called. A recipe without timers keeps the default, `None`.
    ///
    /// After `handle_timeout(now)` it must not be `now` or earlier: drivers
    /// call `handle_timeout` as soon as this instant is due, so a timer
    /// that stays due would make them spin (and an embedded executor, which
    /// does not yield on a timer already due, starve its network stack).
    /// herdless-embassy's driver, which runs recipes of the user's, paces
    /// such a timer instead: it fires it again a millisecond later at the
    /// earliest, which costs CPU but starves nothing. A deadline the recipe
    /// cannot act on yet is not reported until it can.
    fn poll_timeout(&self) -> Option<Instant> {
        None
    }

    /// The next event for the application, if any.
    fn poll_event(&mut self) -> Option<Self::Event>;

    /// Whether the recipe takes a `getChildren` answer in parts, through
    /// [`handle_listing_part`](Recipe::handle_listing_part).
    ///
    /// A driver whose receive buffer cannot hold a whole listing (the
    /// embedded one, with a few KiB) hands it over name by name to a recipe
    /// that does, and answers the listing with
    /// [`ZkError::ReplyTooLarge`](crate::ZkError::ReplyTooLarge) to one
    /// that does not (the default). The lock, the election candidate, the
    /// double barrier and the queue take their directory's listing in
    /// parts, so the receive buffer bounds the length of one name, not the
    /// number of contenders, processes or items.
    fn takes_listing_in_parts(&self) -> bool {
        false
    }

    /// Some of the names answering the listing emitted with `id`, in server
    /// order, received at `now`; `last` on the final part (which may hold
    /// no name). Parts of one listing come one after another, with no other
    /// reply or notification between them: together they are what
    /// [`Reply::Children`] would have held. A listing cut short (its
    /// connection lost, a name longer than the buffer) ends without a
    /// `last` part: a [`SessionEvent::Suspended`] follows, or a
    /// [`handle_reply`](Recipe::handle_reply) with the error for `id`.
    ///
    /// Called only if [`takes_listing_in_parts`](Recipe::takes_listing_in_parts)
    /// says so; the default does nothing.
    fn handle_listing_part(
        &mut self,
        now: Instant,
        id: RequestId,
        names: Children<'_>,
        last: bool,
    ) {
        let _ = (now, id, names, last);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A recipe that implements only what it must.
    struct Bare;

    impl Recipe for Bare {
        type Event = ();
        fn poll_request(&mut self) -> Option<Outgoing<'_>> {
            None
        }
        fn handle_reply(&mut self, _: Instant, _: RequestId, _: Reply<'_>) {}
        fn handle_watch(&mut self, _: Instant, _: WatchEvent<'_>) {}
        fn handle_session(&mut self, _: Instant, _: SessionEvent) {}
        fn poll_event(&mut self) -> Option<()> {
            None
        }
    }

    #[test]
    fn a_recipe_without_timers_or_parts_asks_for_neither() {
        assert_eq!(
            Bare.poll_timeout(),
            None,
            "a driver would wake it for nothing"
        );
        assert!(
            !Bare.takes_listing_in_parts(),
            "a driver would send it parts it ignores"
        );
    }
}
