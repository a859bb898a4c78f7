//! How a handle hears that its recipe's session is over for good (closed,
//! or expired on a client that opens no other), so that a wait for news
//! from that session (a watcher's next value, a member's next event) ends
//! with an error instead of lasting for ever: an observer takes no
//! commands after it starts, so nothing else would tell it.

use std::future::Future;

use tokio::sync::watch;

use crate::Error;

/// Whether a driver's session is over for good. The driver marks it only
/// after handing out the events the end caused, so a waiter hears those
/// first.
#[derive(Clone, Debug)]
pub(crate) struct SessionOver(watch::Receiver<bool>);

impl SessionOver {
    /// The driver's side (marks the end) and the handles' side.
    pub(crate) fn channel() -> (watch::Sender<bool>, SessionOver) {
        let (tx, rx) = watch::channel(false);
        (tx, SessionOver(rx))
    }

    /// What `wait` answers, unless the session is over for good first:
    /// then `SessionEnded` (`DriverGone` if the driver ended). An answer
    /// `wait` has ready wins over the end.
    pub(crate) async fn unless<T>(
        &self,
        wait: impl Future<Output = Result<T, Error>>,
    ) -> Result<T, Error> {
        let mut over = self.0.clone();
        let ended = async move { over.wait_for(|over| *over).await.is_ok() };
        tokio::select! {
            biased;
            answer = wait => answer,
            ended = ended => Err(if ended { Error::SessionEnded } else { Error::DriverGone }),
        }
    }
}
