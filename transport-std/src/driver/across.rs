//! Calls carried over a renewing session's expiry. On a
//! [`Session`](crate::Session), [`Error::SessionEnded`] means that no
//! session follows; a call whose session expired while a next one was on
//! its way waits for that one and is made again there.

use std::future::Future;

use tokio::time::Instant as TokioInstant;
use tracing::debug;

use super::{Backend, Source};
use crate::Error;

/// What followed the end of a session, on its source.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Next {
    /// Another session is current: make the call again on it.
    Renewed,
    /// None will follow (a fixed source, or a renewing one closed or
    /// refused for good).
    Never,
    /// The deadline passed first.
    DeadlinePassed,
}

impl Source {
    /// Waits, after the session `ended` ended, for the one that follows it,
    /// until `deadline` if there is one.
    async fn after_end(&self, ended: i64, deadline: Option<TokioInstant>) -> Next {
        let Some(renewed) = self.renewal(ended) else {
            return Next::Never;
        };
        let renewed = match deadline {
            Some(at) => match tokio::time::timeout_at(at, renewed).await {
                Ok(renewed) => renewed,
                Err(_) => return Next::DeadlinePassed,
            },
            None => renewed.await,
        };
        if renewed {
            Next::Renewed
        } else {
            Next::Never
        }
    }

    /// `attempt` on the current session, and again on the next one each
    /// time it fails because its session ended while a next session
    /// follows: a recipe's attempt (a waiter's node went with its session,
    /// so it queues anew), or an idempotent request outside any recipe.
    /// `T::default()`, no answer, if `deadline` passes while waiting for
    /// that session.
    pub(crate) async fn across<T, F, Fut>(
        &self,
        deadline: Option<TokioInstant>,
        mut attempt: F,
    ) -> Result<T, Error>
    where
        T: Default,
        F: FnMut(Backend) -> Fut,
        Fut: Future<Output = Result<T, Error>>,
    {
        loop {
            let backend = self.backend();
            let session_id = backend.session_id();
            // The outcome goes before the wait for the next session: kept
            // beside it (as a `match` with the wait in an arm keeps it),
            // it would add its size, a whole guard, to every waiting
            // contender (the carry-over added 496 B to a waiting
            // `Lock::acquire` that way, 272 B this way).
            match attempt(backend).await {
                Err(Error::SessionEnded) => {}
                other => return other,
            }
            match self.after_end(session_id, deadline).await {
                Next::Renewed => debug!(session_id, "again on the next session"),
                Next::DeadlinePassed => return Ok(T::default()),
                Next::Never => return Err(Error::SessionEnded),
            }
        }
    }
}
