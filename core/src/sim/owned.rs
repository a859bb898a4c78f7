//! Owned copies of requests and replies, for the simulator's queues.

use alloc::string::{String, ToString};
use alloc::vec::Vec;

use super::acl::OwnedAclEntry;
use crate::owned::OwnedReply;
use crate::{CreateMode, Request, RequestId, SessionEvent, Version, WatchEvent, WatchKind};

/// A request as the simulated server queues it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OwnedRequest {
    /// See [`Request::Create`].
    Create {
        /// Path or sequential prefix.
        path: String,
        /// Initial data.
        data: Vec<u8>,
        /// Mode.
        mode: CreateMode,
        /// The ACL asked for.
        acl: Vec<OwnedAclEntry>,
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
    /// A create giving the node the open ACL ([`Acl::OPEN`](crate::Acl::OPEN)).
    pub fn create_open(path: &str, data: &[u8], mode: CreateMode) -> Self {
        OwnedRequest::Create {
            path: path.to_string(),
            data: data.to_vec(),
            mode,
            acl: super::acl::open(),
        }
    }

    /// Copies a borrowed request.
    pub fn from_request(request: &Request<'_>) -> Self {
        match *request {
            Request::Create {
                path,
                data,
                mode,
                acl,
            } => OwnedRequest::Create {
                path: path.to_string(),
                data: data.to_vec(),
                mode,
                acl: super::acl::owned(acl),
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

    /// The node the operation names (a sequential create's prefix).
    pub fn path(&self) -> &str {
        match self {
            OwnedRequest::Create { path, .. }
            | OwnedRequest::Delete { path, .. }
            | OwnedRequest::Exists { path, .. }
            | OwnedRequest::GetData { path, .. }
            | OwnedRequest::SetData { path, .. }
            | OwnedRequest::GetChildren { path, .. }
            | OwnedRequest::Check { path, .. }
            | OwnedRequest::Sync { path } => path,
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
