//! The bounded queue of events a recipe has for its application.

use heapless::Deque;

/// Events waiting for [`poll_event`](crate::Recipe::poll_event). When the
/// application does not drain it, the oldest event goes: the newest ones
/// describe the current state.
#[derive(Debug)]
pub(crate) struct EventQueue<E, const N: usize>(Deque<E, N>);

impl<E, const N: usize> EventQueue<E, N> {
    pub(crate) const fn new() -> Self {
        EventQueue(Deque::new())
    }

    pub(crate) fn emit(&mut self, event: E) {
        if self.0.is_full() {
            let _ = self.0.pop_front();
        }
        let _ = self.0.push_back(event);
    }

    pub(crate) fn pop(&mut self) -> Option<E> {
        self.0.pop_front()
    }
}
