//! The few requests the API sends outside a recipe (reading the current
//! leader, a group's members, a directory for `inspect`; creating a queue's
//! directory), each sent again across connection losses: all are
//! idempotent.

use herdless_core::owned::OwnedReply;
use herdless_core::{Acl, CreateMode, Request, Stat, ZkError};

use super::Backend;
use crate::Error;

fn refused(e: ZkError) -> Error {
    Error::from(herdless_core::Error::Zk(e))
}

impl Backend {
    /// The data and stat of the node at `path`; `None` if there is none.
    pub(crate) async fn read(&self, path: &str) -> Result<Option<(Vec<u8>, Stat)>, Error> {
        let request = Request::GetData { path, watch: false };
        match self.call_until_answered(request).await.0 {
            OwnedReply::Data(data, stat) => Ok(Some((data, stat))),
            OwnedReply::Error(ZkError::NoNode) => Ok(None),
            OwnedReply::Error(e) => Err(refused(e)),
            _ => Err(Error::Recipe(herdless_core::Error::BadReply)),
        }
    }

    /// The names of the children of `path`, in the server's order; `None`
    /// if there is no such node.
    pub(crate) async fn list(&self, path: &str) -> Result<Option<Vec<String>>, Error> {
        let request = Request::GetChildren { path, watch: false };
        match self.call_until_answered(request).await.0 {
            OwnedReply::Children(names) => Ok(Some(names)),
            OwnedReply::Error(ZkError::NoNode) => Ok(None),
            OwnedReply::Error(e) => Err(refused(e)),
            _ => Err(Error::Recipe(herdless_core::Error::BadReply)),
        }
    }

    /// Creates `dir` and its ancestors where missing, with `acl`.
    pub(crate) async fn ensure_dir(&self, dir: &str, acl: Acl<'static>) -> Result<(), Error> {
        let mut at = 0;
        while at < dir.len() {
            let end = dir[at + 1..].find('/').map_or(dir.len(), |i| at + 1 + i);
            let request = Request::Create {
                path: &dir[..end],
                data: b"",
                acl,
                mode: CreateMode::Persistent,
            };
            match self.call_until_answered(request).await.0 {
                OwnedReply::Created(_) | OwnedReply::Error(ZkError::NodeExists) => {}
                OwnedReply::Error(e) => return Err(refused(e)),
                _ => return Err(Error::Recipe(herdless_core::Error::BadReply)),
            }
            at = end;
        }
        Ok(())
    }
}
