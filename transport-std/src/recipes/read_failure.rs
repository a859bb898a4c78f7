//! How an observer (a configuration, a group, a leader) tells its caller
//! that reading failed, rather than wait for a value that cannot come.
//!
//! A read the server refuses (a node whose ACL denies this client, say)
//! leaves no watch, so nothing arrives until the next reconnect: a caller
//! waiting for a change would wait for good with only a log line. Each
//! failure is reported once, to whichever waiting call sees it first; one
//! reported is not reported again, so a caller that retries on error does
//! not spin, and a successful read clears it.

use crate::Error;

/// The latest read failure of an observer, until a read succeeds.
#[derive(Clone, Debug, Default)]
pub(crate) struct ReadFailure {
    latest: Option<Error>,
    /// Failures so far: which ones a caller has seen.
    count: u64,
}

impl ReadFailure {
    /// A read failed with `error`.
    pub(crate) fn fail(&mut self, error: Error) {
        self.latest = Some(error);
        self.count += 1;
    }

    /// A read succeeded: nothing is left to report.
    pub(crate) fn clear(&mut self) {
        self.latest = None;
    }

    /// Whether a failure is waiting that the caller who has seen the first
    /// `reported` has not seen.
    pub(crate) fn is_new(&self, reported: u64) -> bool {
        self.latest.is_some() && self.count != reported
    }

    /// The failure waiting for the caller who has seen the first
    /// `reported`, marked seen.
    pub(crate) fn take_new(&self, reported: &mut u64) -> Option<Error> {
        if !self.is_new(*reported) {
            return None;
        }
        *reported = self.count;
        self.latest.clone()
    }
}
