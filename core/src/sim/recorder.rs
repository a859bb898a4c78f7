//! For the simulator's own tests: a recipe that lists what it is told to
//! and writes down every input, so a test reads what a driver handed it
//! and in which order.

use alloc::collections::VecDeque;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use crate::{Children, Instant, Outgoing, Recipe, Reply, Request, RequestId, SessionEvent};
use crate::{RequestIds, WatchEvent};

/// Sends a `getChildren` for each path in `to_list`, logs every input.
#[derive(Default)]
pub(crate) struct Recorder {
    /// Whether it takes listings in parts.
    pub(crate) in_parts: bool,
    /// Paths still to list, in order.
    pub(crate) to_list: VecDeque<String>,
    /// Lists `/` again on every part of a listing but the last.
    pub(crate) list_on_part: bool,
    /// What it was handed and what it sent, in order.
    pub(crate) log: Vec<String>,
    /// Every name of every part of a listing it was handed.
    pub(crate) names: Vec<String>,
    /// Events to hand out, one per `poll_event`.
    pub(crate) events: VecDeque<u32>,
    /// Its timer.
    pub(crate) timer: Option<Instant>,
    /// Keeps its timer when it fires, as a recipe breaking the contract.
    pub(crate) keep_timer: bool,
    /// The path of the listing sent last.
    pub(crate) listing: String,
    /// Where its request ids come from.
    pub(crate) ids: RequestIds,
}

impl Recipe for Recorder {
    type Event = u32;

    fn poll_request(&mut self) -> Option<Outgoing<'_>> {
        self.listing = self.to_list.pop_front()?;
        self.log.push(format!("sent {}", self.listing));
        Some(Outgoing {
            id: self.ids.next_id(),
            request: Request::GetChildren {
                path: &self.listing,
                watch: false,
            },
        })
    }

    fn handle_reply(&mut self, _: Instant, _: RequestId, reply: Reply<'_>) {
        self.log.push(format!("reply {reply:?}"));
    }

    fn handle_watch(&mut self, _: Instant, event: WatchEvent<'_>) {
        self.log.push(format!("watch {event:?}"));
    }

    fn handle_session(&mut self, _: Instant, event: SessionEvent) {
        self.log.push(format!("session {event:?}"));
    }

    fn handle_timeout(&mut self, now: Instant) {
        if !self.keep_timer {
            self.timer = None;
        }
        self.log.push(format!("timeout at {}", now.as_millis()));
    }

    fn poll_timeout(&self) -> Option<Instant> {
        self.timer
    }

    fn poll_event(&mut self) -> Option<u32> {
        self.events.pop_front()
    }

    fn takes_listing_in_parts(&self) -> bool {
        self.in_parts
    }

    fn handle_listing_part(&mut self, _: Instant, _: RequestId, names: Children<'_>, last: bool) {
        let before = self.names.len();
        self.names.extend(names.map(String::from));
        let count = self.names.len() - before;
        self.log.push(format!("part of {count} last {last}"));
        if self.list_on_part && !last {
            self.to_list.push_back("/".into());
        }
    }
}
