//! The own node's path, read from the recipe by the driver as it reports
//! the event that makes it matter (`Acquired`, `Leading`).
//!
//! Read then, not by a command sent after the event: by the time a command
//! runs, a notification may have taken the node away, and a guard must not
//! be handed out with a made-up path.

use std::sync::{Arc, Mutex, PoisonError};

use crate::Error;

/// Where the driver leaves the path for the task that awaits the event.
#[derive(Clone, Default)]
pub(crate) struct OwnNode(Arc<Mutex<Option<String>>>);

impl OwnNode {
    /// Called by the driver with the event.
    pub(crate) fn record(&self, path: Option<String>) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = path;
    }

    /// The path recorded with the event. A recipe reports holding only
    /// with its node known, so a missing path is a broken promise of the
    /// core: an error, never an empty path.
    pub(crate) fn take(&self) -> Result<String, Error> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
            .ok_or(Error::InvalidState)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_recorded_path_is_taken_once_and_a_missing_one_is_an_error() {
        let own = OwnNode::default();
        assert!(matches!(own.take(), Err(Error::InvalidState)));
        own.clone().record(Some("/locks/a/lock-0000000001".into()));
        assert_eq!(own.take().unwrap(), "/locks/a/lock-0000000001");
        assert!(matches!(own.take(), Err(Error::InvalidState)));
    }
}
