//! Taking in what the server sent: reads, whole frames, and timers.

use embedded_io_async::ErrorKind;
use herdless_core::wire::{frame, ConnectionId, Incoming};

use super::large::LARGE_HEAD;
use super::Zk;
use crate::error::Fault;
use crate::transport::Transport;

/// What the driver waits for while idle, from [`Zk::wait_for`].
pub(super) enum Wait {
    /// Nothing: timers due were fired instead, or the session is over.
    Nothing,
    /// Bytes from the connection, or the timer at this instant if it comes
    /// first.
    Read(Option<embassy_time::Instant>),
    /// The timer at this instant, with no connection to read from.
    Timer(embassy_time::Instant),
}

impl<T: Transport, const K: usize, const WATCHES: usize, const WATCH_BYTES: usize>
    Zk<'_, T, K, WATCHES, WATCH_BYTES>
{
    /// What to wait for while idle: bytes (or the earliest timer first),
    /// a timer alone, or nothing.
    ///
    /// A timer already due is fired at once, before any read: after a long
    /// pause in driving (the application busy, the device asleep), bytes
    /// read now would count as heard now, and a session the server has
    /// expired meanwhile would look alive to the recipes for another read
    /// timeout (an embassy `Timer` at a past instant still waits for one
    /// poll, in which a read that is ready would win). Not twice in a
    /// row, though: timers that keep falling due must still let the
    /// executor run the network stack.
    pub(super) fn wait_for(&mut self) -> Wait {
        let wake = self.next_wake().map(|at| self.origin_plus(at));
        let overdue = wake.is_some_and(|at| at <= embassy_time::Instant::now());
        if overdue && !core::mem::replace(&mut self.fired_unwaited, true) {
            self.fire_timers();
            return Wait::Nothing;
        }
        self.fired_unwaited = false;
        match (self.conn, wake) {
            (Some(_), wake) => Wait::Read(wake),
            (None, Some(at)) => Wait::Timer(at),
            // Nothing can happen without a connection or a timer; the
            // session always has one of them unless it is over.
            (None, None) => Wait::Nothing,
        }
    }

    /// Takes in what came of a [`Wait`]: the read's result, unless a timer
    /// came first, then the timers due.
    pub(super) fn waited(&mut self, read: Option<Result<usize, ErrorKind>>) {
        if let (Some(result), Some(conn)) = (read, self.conn) {
            self.read_done(conn, result);
        }
        self.fire_timers();
    }

    /// Takes in what a read on `conn` brought.
    fn read_done(&mut self, conn: ConnectionId, result: Result<usize, ErrorKind>) {
        match result {
            Ok(0) => {
                self.lose(conn, Fault::ClosedByServer);
            }
            Ok(n) => {
                self.filled = (self.filled + n).min(self.rx.len());
                self.take_frames(conn);
            }
            Err(kind) => {
                self.lose(conn, Fault::Io(kind));
            }
        }
    }

    /// Hands every whole frame in the receive buffer to the session and
    /// the recipes, and what has come of a frame too large for the buffer,
    /// keeping a partial one for the next read.
    fn take_frames(&mut self, conn: ConnectionId) {
        let now = self.now();
        let max = self.session.max_frame();
        let mut start = 0;
        let mut broken = None;
        loop {
            if self.large.is_some() {
                match self.take_large(start, now) {
                    Ok(0) => break,
                    Ok(used) => {
                        start += used;
                        continue;
                    }
                    Err(fault) => {
                        broken = Some(fault);
                        break;
                    }
                }
            }
            let pending = self.rx.get(start..self.filled).unwrap_or_default();
            // A frame larger than `rx` is never held whole, so its bound
            // is the session's larger one: a queue of twenty thousand
            // items lists in more than `max_frame`, and refusing that
            // listing would have the recipe reconnect and list again for
            // ever. `max` bounds the frames held.
            match frame::total_len(pending, self.session.max_large_frame()) {
                Ok(Some(total)) if total > self.rx.len() => {
                    let Some(head) = pending.get(4..LARGE_HEAD) else {
                        break;
                    };
                    match self.session.handle_large_frame(conn, head, now) {
                        Ok(large) => self.begin_large(large, total - LARGE_HEAD, now),
                        Err(e) => {
                            broken = Some(Fault::Session(e));
                            break;
                        }
                    }
                    start += LARGE_HEAD;
                    continue;
                }
                Ok(_) => {}
                Err(e) => {
                    broken = Some(Fault::Frame(e));
                    break;
                }
            }
            let frame = match frame::split(pending, max) {
                Ok(Some(frame)) => frame,
                Ok(None) => break,
                Err(e) => {
                    broken = Some(Fault::Frame(e));
                    break;
                }
            };
            start += frame.consumed;
            match self.session.handle_frame(conn, frame.payload, now) {
                Ok(Incoming::Reply { tag, response }) => {
                    let (index, id) = tag;
                    if let Some(reply) = response.into_reply() {
                        if let Some(recipe) = self.recipes.get_mut(usize::from(index)) {
                            recipe.handle_reply(now, id, reply);
                        }
                    }
                }
                Ok(Incoming::Watch(event)) => {
                    for recipe in self.recipes.iter_mut() {
                        recipe.handle_watch(now, event);
                    }
                }
                Ok(_) => {}
                Err(e) => {
                    broken = Some(Fault::Session(e));
                    break;
                }
            }
        }
        // The session has dropped the connection already when it refused
        // a frame (a Close action follows), and then hears of its loss
        // again to no effect; what is left in the buffer is from it.
        if let Some(fault) = broken {
            self.lose(conn, fault);
            return;
        }
        self.rx.copy_within(start..self.filled, 0);
        self.filled -= start;
    }
}
