//! What the driver and the API run on: a `zookeeper-client` session, or a
//! session of the in-memory ZooKeeper (feature `sim`). One enum rather than
//! a trait: the set is closed, and every call site stays a plain call.

mod reads;
mod real;
mod state;

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use futures::future::BoxFuture;
use herdless_core::naming::Guid;
use herdless_core::owned::OwnedReply;
use herdless_core::{Request, WatchKind};
use zookeeper_client as zk;

use crate::fence::{FenceOp, FencedResult};
use crate::Error;

pub(crate) use state::{State, States};

/// One request's answer, and the watcher it set, if it set one.
pub(crate) type Call = BoxFuture<'static, (OwnedReply, Option<Watcher>)>;

/// A one-shot watch as a backend hands it over.
pub(crate) enum Watcher {
    Real(zk::OneshotWatcher),
    #[cfg(feature = "sim")]
    Sim(tokio::sync::oneshot::Receiver<Notice>),
}

/// What a watcher heard: a notification on `path`, or (`kind` `None`) the
/// end of its session, in `state`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Notice {
    pub(crate) kind: Option<WatchKind>,
    pub(crate) path: String,
    pub(crate) state: State,
}

impl From<zk::WatchedEvent> for Notice {
    fn from(event: zk::WatchedEvent) -> Self {
        Notice {
            kind: crate::driver::convert::watch_kind(event.event_type),
            path: event.path,
            state: event.session_state.into(),
        }
    }
}

/// One session a recipe runs on.
#[derive(Clone)]
pub enum Backend {
    Real(zk::Client),
    #[cfg(feature = "sim")]
    Sim(crate::sim::SimClient),
}

impl From<zk::Client> for Backend {
    fn from(client: zk::Client) -> Self {
        Backend::Real(client)
    }
}

impl Backend {
    /// The session's id.
    pub(crate) fn session_id(&self) -> i64 {
        match self {
            Backend::Real(client) => client.session_id().0,
            #[cfg(feature = "sim")]
            Backend::Sim(client) => client.session_id(),
        }
    }

    /// A fresh GUID for a recipe's node: random on a real server; on the
    /// in-memory one drawn from its seed, so that a seeded run names its
    /// nodes the same every time.
    pub(crate) fn guid(&self) -> Guid {
        match self {
            Backend::Real(_) => Guid::from_random_bytes(uuid::Uuid::new_v4().into_bytes()),
            #[cfg(feature = "sim")]
            Backend::Sim(client) => Guid::from_random_bytes(client.guid_bytes()),
        }
    }

    /// The session timeout the server granted.
    pub(crate) fn session_timeout(&self) -> Duration {
        match self {
            Backend::Real(client) => client.session_timeout(),
            #[cfg(feature = "sim")]
            Backend::Sim(client) => client.session_timeout(),
        }
    }

    /// The session's state now.
    pub(crate) fn state(&self) -> State {
        match self {
            Backend::Real(client) => client.state().into(),
            #[cfg(feature = "sim")]
            Backend::Sim(client) => client.state(),
        }
    }

    /// The changes of the session's state from now on.
    pub(crate) fn states(&self) -> States {
        match self {
            Backend::Real(client) => States::Real(client.state_watcher()),
            #[cfg(feature = "sim")]
            Backend::Sim(client) => States::Sim(client.states()),
        }
    }

    /// Sends `request` now (requests leave in call order, so pipelining
    /// survives); the future gives its answer.
    pub(crate) fn call(&self, request: Request<'_>) -> Call {
        match self {
            Backend::Real(client) => real::call(client, request),
            #[cfg(feature = "sim")]
            Backend::Sim(client) => client.call(request),
        }
    }

    /// `request` until its answer is not a connection loss, for the
    /// idempotent requests sent outside a recipe (a read, a create whose
    /// `NodeExists` counts as done). The end of the session stops it with
    /// that error.
    pub(crate) async fn call_until_answered(
        &self,
        request: Request<'_>,
    ) -> (OwnedReply, Option<Watcher>) {
        loop {
            match self.call(request).await {
                (OwnedReply::Error(e), _) if e.is_connection_loss() => {
                    tokio::time::sleep(RETRY_PAUSE).await
                }
                answer => return answer,
            }
        }
    }

    /// Sends a fenced batch as one `multi`: the check of `fence`, then
    /// `ops`. See [`Fenced::commit`](crate::Fenced::commit).
    pub(crate) fn fenced(
        &self,
        fence: &str,
        ops: &[FenceOp],
    ) -> BoxFuture<'static, Result<Vec<FencedResult>, Error>> {
        match self {
            Backend::Real(client) => real::fenced(client, fence, ops),
            #[cfg(feature = "sim")]
            Backend::Sim(client) => client.fenced(fence, ops),
        }
    }
}

/// How long to wait before sending a request again after a connection loss.
const RETRY_PAUSE: Duration = Duration::from_millis(100);

/// Polls a future once, right now, so the request inside it goes on the
/// wire in call order; the rest of the future is awaited later.
pub(crate) fn send_now<F>(future: F) -> BoxFuture<'static, F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    let mut future = Box::pin(future);
    let mut cx = Context::from_waker(futures::task::noop_waker_ref());
    match future.as_mut().poll(&mut cx) {
        Poll::Ready(out) => Box::pin(std::future::ready(out)),
        Poll::Pending => future as Pin<Box<_>>,
    }
}
