//! Reading at least what other clients saw written: the request a recipe
//! sends ahead of a read, in the same flight, when a missing node must mean
//! "gone" and not "not yet here".
//!
//! ZooKeeper serves a read from the server the session is connected to,
//! which may not yet have applied a write that another client has already
//! seen succeed. `sync` does not close that gap everywhere: a ZooKeeper 3.8
//! leader sends COMMIT to its followers before it applies the transaction
//! itself, and answers a `sync` from one of its own clients at once (its
//! `CommitProcessor` is built with `matchSyncs` false), so a client of the
//! leader can read the tree from before a write a follower's client saw
//! succeed. The ensemble test caught a barrier waiter passing that way.
//!
//! A write closes it on every server: the leader gives it a zxid after every
//! write that has already returned to anyone, each server applies
//! transactions in zxid order, and a server holds a session's later reads
//! until its write is applied. The write used here changes nothing: a
//! `check` of the node at any version (sent as a one-op `multi`), answered
//! `Checked` or `NoNode`. The read behind it answers for the recipe either
//! way. It costs a quorum round where a `sync` cost a leader round, which is
//! why recipes send it only where a stale read would be unsafe.

use crate::{Request, Version};

/// The no-op write to send ahead of a read of `path`.
pub(crate) fn request(path: &str) -> Request<'_> {
    Request::Check {
        path,
        version: Version::Any,
    }
}
