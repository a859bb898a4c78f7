//! Taking back what a cancelled future asked of a recipe.
//!
//! Every waiting call of herdless-std is cancel-safe the same way: it asks
//! the recipe for something (acquire, campaign, take, wait, revoke), and if
//! its future is dropped before the answer, the recipe is told to stop
//! (cancel, resign, cancel the take or the wait). [`Undo`] is that one
//! mechanism.

use crate::driver::DriverHandle;

/// Runs `undo` on the recipe when dropped, unless [`disarm`](Undo::disarm)ed.
pub(crate) struct Undo<'a, R: 'static> {
    handle: &'a DriverHandle<R>,
    undo: Option<fn(&mut R)>,
}

impl<'a, R: 'static> Undo<'a, R> {
    pub(crate) fn new(handle: &'a DriverHandle<R>, undo: fn(&mut R)) -> Self {
        Undo {
            handle,
            undo: Some(undo),
        }
    }

    /// The call got its answer: nothing to take back.
    pub(crate) fn disarm(mut self) {
        self.undo = None;
    }
}

impl<R: 'static> Drop for Undo<'_, R> {
    fn drop(&mut self) {
        if let Some(undo) = self.undo.take() {
            // Gone already: the recipe went with it.
            let _ = self.handle.command(undo);
        }
    }
}
