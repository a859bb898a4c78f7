//! One session on the in-memory ZooKeeper.

use std::fmt;
use std::time::Duration;

use herdless_core::owned::OwnedReply;
use herdless_core::sim::OwnedRequest;
use herdless_core::{Request, Version, ZkError};
use tokio::sync::watch;

use super::SimServer;
use crate::backend::{Backend, Call, State};
use crate::fence::{FenceOp, FencedResult};
use crate::Error;

/// A session on a [`SimServer`]: the in-memory counterpart of a
/// `zookeeper_client::Client`, accepted by every recipe. Cheap to clone;
/// clones are the same session.
#[derive(Clone)]
pub struct SimClient {
    server: SimServer,
    session: i64,
    timeout: Duration,
}

impl fmt::Debug for SimClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SimClient")
            .field("session", &self.session)
            .finish()
    }
}

impl SimClient {
    pub(super) fn new(server: SimServer, session: i64, timeout: Duration) -> SimClient {
        SimClient {
            server,
            session,
            timeout,
        }
    }

    /// The session's id: the handle the server's fault and inspection
    /// methods take.
    pub fn session_id(&self) -> i64 {
        self.session
    }

    /// The session timeout.
    pub fn session_timeout(&self) -> Duration {
        self.timeout
    }

    /// Closes the session: its ephemeral nodes go at once.
    pub fn close(&self) {
        self.server.close(self.session);
    }

    /// Sixteen random bytes for a recipe's GUID, from the server's seed.
    pub(crate) fn guid_bytes(&self) -> [u8; 16] {
        self.server.guid_bytes()
    }

    pub(crate) fn state(&self) -> State {
        *self.server.state(self.session).borrow()
    }

    pub(crate) fn states(&self) -> watch::Receiver<State> {
        self.server.state(self.session)
    }

    pub(crate) fn call(&self, request: Request<'_>) -> Call {
        let heard = self.server.submit(self.session, request);
        Box::pin(async move {
            // The server answers every request it took, unless it is gone
            // with the whole test.
            heard
                .await
                .unwrap_or((OwnedReply::Error(ZkError::ConnectionLoss), None))
        })
    }

    pub(crate) fn fenced(
        &self,
        fence: &str,
        ops: &[FenceOp],
    ) -> futures::future::BoxFuture<'static, Result<Vec<FencedResult>, Error>> {
        let mut multi = vec![OwnedRequest::Check {
            path: fence.to_owned(),
            version: Version::Any,
        }];
        multi.extend(ops.iter().map(owned));
        let answer = match self.server.multi(self.session, &multi) {
            Ok(replies) => Ok(replies.into_iter().skip(1).map(result).collect()),
            Err((0, ZkError::NoNode | ZkError::BadVersion)) => Err(Error::Fenced),
            Err((0, e)) => Err(Error::from(herdless_core::Error::Zk(e))),
            Err((index, error)) => Err(Error::FencedWrite {
                index: index - 1,
                error,
            }),
        };
        Box::pin(std::future::ready(answer))
    }
}

fn owned(op: &FenceOp) -> OwnedRequest {
    match op.clone() {
        // Fenced creates are open, as the real backend sends them.
        FenceOp::Create { path, data, mode } => OwnedRequest::create_open(&path, &data, mode),
        FenceOp::SetData {
            path,
            data,
            version,
        } => OwnedRequest::SetData {
            path,
            data,
            version,
        },
        FenceOp::Delete { path, version } => OwnedRequest::Delete { path, version },
        FenceOp::Check { path, version } => OwnedRequest::Check { path, version },
    }
}

fn result(reply: OwnedReply) -> FencedResult {
    match reply {
        OwnedReply::Created(path) => FencedResult::Created { path },
        OwnedReply::DataSet(stat) => FencedResult::DataSet { stat },
        OwnedReply::Deleted => FencedResult::Deleted,
        _ => FencedResult::Checked,
    }
}

impl From<SimClient> for Backend {
    fn from(client: SimClient) -> Self {
        Backend::Sim(client)
    }
}

impl crate::Connection for SimClient {}

impl crate::connection::sealed::Sealed for SimClient {
    fn source(&self) -> crate::driver::Source {
        crate::driver::Source::Fixed(self.clone().into())
    }
}
