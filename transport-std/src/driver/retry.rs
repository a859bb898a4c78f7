//! Requests the driver or the API sends outside a recipe (opening a queue,
//! reading the current leader or a group's members, setting a lost watch
//! again), sent again across connection losses.
//!
//! Each of them is idempotent (a read, or a create whose `NodeExists` is
//! success), so after a connection loss (a server killed, a connection reset,
//! a half-open link) it is simply sent again once the client has reconnected;
//! the end of the session stops it with that error.

use std::future::Future;
use std::time::Duration;

use zookeeper_client as zk;

use crate::driver::convert;

/// How long to wait before sending a request again after a connection loss.
const PAUSE: Duration = Duration::from_millis(100);

/// `request()` until its answer is not a connection loss.
pub(crate) async fn across_connection_losses<T, F, Fut>(mut request: F) -> Result<T, zk::Error>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, zk::Error>>,
{
    loop {
        match request().await {
            Err(e) if convert::error(&e).is_connection_loss() => tokio::time::sleep(PAUSE).await,
            answer => return answer,
        }
    }
}
