//! Owned replies, for drivers that receive answers as owned values
//! (feature `alloc`).

use alloc::string::String;
use alloc::vec::Vec;

use crate::{Children, Reply, Stat, ZkError};

/// A reply held by a driver (or the simulator) until the recipe takes it.
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
