//! The requests of a contender: the lock's and, in the same pipeline, the
//! acknowledgement's of the election's candidate built on the lock.
//!
//! One type for both, so that the candidate's requests travel in the
//! lock's [`Pipeline`](crate::engine::pipeline::Pipeline), in one order
//! with the lock's (the acknowledgement's delete ahead of the own node's),
//! and the bookkeeping is compiled once.

/// A request to be emitted, materialised at `poll_request` time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Op {
    /// Create the `level`-th ancestor of the directory (1 = topmost).
    Ensure(u8),
    /// Create the own node.
    Create,
    /// List the directory.
    List,
    /// The no-op write ahead of a search by GUID.
    CatchUp,
    /// `getData` with a watch on the node waited for.
    WatchPredecessor,
    /// `getData` with a watch on the own node: its owner, its deletion,
    /// and a revocable lock's requests.
    WatchOwn,
    /// `exists` on the own node: is it still there after a reconnect?
    CheckOwn,
    /// Delete the own node.
    Delete,
    /// The candidate's: create the acknowledgement.
    Ack,
    /// The candidate's: `getData` with a watch on the acknowledgement.
    ReadAck,
    /// The candidate's: delete an acknowledgement that names another
    /// node.
    ReplaceAck,
    /// The candidate's: delete the own acknowledgement (resigning).
    DeleteAck,
    /// The candidate's, after a loss: read the acknowledgement (no
    /// watch), to delete it if it still names this candidate.
    ClearAck,
    /// The candidate's: delete the acknowledgement read by `ClearAck`, at
    /// the version read.
    DropAck,
}

crate::engine::ancestors::ancestor_op!(Op);
