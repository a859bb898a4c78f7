//! Owned copies of requests and replies, for the simulator's queues.

use alloc::string::{String, ToString};
use alloc::vec::Vec;

use crate::{
    Children, CreateMode, Reply, Request, RequestId, SessionEvent, Stat, Version, WatchEvent,
    WatchKind, ZkError,
};

/// A request as the simulated server queues it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OwnedRequest {
    /// See [`Request::Create`] (the ACL is not modelled).
    Create {
        /// Path or sequential prefix.
        path: String,
        /// Initial data.
        data: Vec<u8>,
        /// Mode.
        mode: CreateMode,
    },
    /// See [`Request::Delete`].
    Delete {
        /// Path.
        path: String,
        /// Version condition.
        version: Version,
    },
    /// See [`Request::Exists`].
    Exists {
        /// Path.
        path: String,
        /// Watch flag.
        watch: bool,
    },
    /// See [`Request::GetData`].
    GetData {
        /// Path.
        path: String,
        /// Watch flag.
        watch: bool,
    },
    /// See [`Request::SetData`].
    SetData {
        /// Path.
        path: String,
        /// New data.
        data: Vec<u8>,
        /// Version condition.
        version: Version,
    },
    /// See [`Request::GetChildren`].
    GetChildren {
        /// Path.
        path: String,
        /// Watch flag.
        watch: bool,
    },
    /// See [`Request::Check`].
    Check {
        /// Path.
        path: String,
        /// Version condition.
        version: Version,
    },
    /// See [`Request::Sync`].
    Sync {
        /// Path.
        path: String,
    },
}

impl OwnedRequest {
    /// Copies a borrowed request.
    pub fn from_request(request: &Request<'_>) -> Self {
        match *request {
            Request::Create {
                path, data, mode, ..
            } => OwnedRequest::Create {
                path: path.to_string(),
                data: data.to_vec(),
                mode,
            },
            Request::Delete { path, version } => OwnedRequest::Delete {
                path: path.to_string(),
                version,
            },
            Request::Exists { path, watch } => OwnedRequest::Exists {
                path: path.to_string(),
                watch,
            },
            Request::GetData { path, watch } => OwnedRequest::GetData {
                path: path.to_string(),
                watch,
            },
            Request::SetData {
                path,
                data,
                version,
            } => OwnedRequest::SetData {
                path: path.to_string(),
                data: data.to_vec(),
                version,
            },
            Request::GetChildren { path, watch } => OwnedRequest::GetChildren {
                path: path.to_string(),
                watch,
            },
            Request::Check { path, version } => OwnedRequest::Check {
                path: path.to_string(),
                version,
            },
            Request::Sync { path } => OwnedRequest::Sync {
                path: path.to_string(),
            },
        }
    }

    /// The operation's name, as counted in [`Stats`](super::Stats).
    pub fn kind(&self) -> &'static str {
        match self {
            OwnedRequest::Create { .. } => "create",
            OwnedRequest::Delete { .. } => "delete",
            OwnedRequest::Exists { .. } => "exists",
            OwnedRequest::GetData { .. } => "getData",
            OwnedRequest::SetData { .. } => "setData",
            OwnedRequest::GetChildren { .. } => "getChildren",
            OwnedRequest::Check { .. } => "check",
            OwnedRequest::Sync { .. } => "sync",
        }
    }
}

/// A reply as the simulated server queues it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OwnedReply {
    /// See [`Reply::Created`].
    Created(String),
    /// See [`Reply::Deleted`].
    Deleted,
    /// See [`Reply::Exists`].
    Exists(Stat),
    /// See [`Reply::Data`].
    Data(Vec<u8>, Stat),
    /// See [`Reply::DataSet`].
    DataSet(Stat),
    /// See [`Reply::Children`].
    Children(Vec<String>),
    /// See [`Reply::Checked`].
    Checked,
    /// See [`Reply::Synced`].
    Synced,
    /// See [`Reply::Error`].
    Error(ZkError),
}

impl OwnedReply {
    /// Hands the reply to `f` in its borrowed form.
    pub fn with_reply<T>(&self, f: impl FnOnce(Reply<'_>) -> T) -> T {
        match self {
            OwnedReply::Created(path) => f(Reply::Created { path }),
            OwnedReply::Deleted => f(Reply::Deleted),
            OwnedReply::Exists(stat) => f(Reply::Exists { stat: *stat }),
            OwnedReply::Data(data, stat) => f(Reply::Data { data, stat: *stat }),
            OwnedReply::DataSet(stat) => f(Reply::DataSet { stat: *stat }),
            OwnedReply::Children(names) => {
                let slice: &[String] = names;
                f(Reply::Children(Children::new(&slice)))
            }
            OwnedReply::Checked => f(Reply::Checked),
            OwnedReply::Synced => f(Reply::Synced),
            OwnedReply::Error(e) => f(Reply::Error(*e)),
        }
    }
}

/// Something the simulated server sends to one session's client.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Delivery {
    /// The reply to a request.
    Reply(RequestId, OwnedReply),
    /// A watch notification.
    Watch(WatchKind, String),
    /// A change of the session's state, as the client library reports it.
    Session(SessionEvent),
}

impl Delivery {
    /// Hands a watch notification to `f` in its borrowed form.
    pub fn as_watch(&self) -> Option<WatchEvent<'_>> {
        match self {
            Delivery::Watch(kind, path) => Some(WatchEvent { kind: *kind, path }),
            _ => None,
        }
    }
}
