//! The wait every observer's `changed` makes: for its first read, then
//! for each later one, until one makes news for the caller, with a read
//! failure not reported yet first (see [`ReadFailure`]).

use tokio::sync::watch;

use super::read_failure::ReadFailure;
use crate::Error;

/// What an observer's driver publishes after each read.
pub(crate) trait Observed: Clone {
    /// Whether a read succeeded at least once.
    fn known(&self) -> bool;
    /// The read failure, if the latest read failed.
    fn failure(&self) -> &ReadFailure;
}

/// The first answer `news` draws from the snapshots `snapshots` receives,
/// starting from the latest: `news` returns `None` when a snapshot is no
/// news to the caller. `reported` counts the failures the caller has seen.
pub(crate) async fn next_news<S: Observed, T>(
    snapshots: &mut watch::Receiver<S>,
    reported: &mut u64,
    mut news: impl FnMut(S) -> Option<Result<T, Error>>,
) -> Result<T, Error> {
    loop {
        // `wait_for` marks only the value it returns as seen: one sent
        // since stays unseen, so the `changed` below cannot miss it.
        let snapshot = snapshots
            .wait_for(|s| s.known() || s.failure().is_new(*reported))
            .await
            .map_err(|_| Error::DriverGone)?
            .clone();
        if let Some(e) = snapshot.failure().take_new(reported) {
            return Err(e);
        }
        if let Some(answer) = news(snapshot) {
            return answer;
        }
        snapshots.changed().await.map_err(|_| Error::DriverGone)?;
    }
}
