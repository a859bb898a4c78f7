//! Operation codes and the reserved xids of ZooKeeper's client protocol.

/// The `type` of a request header (`ZooDefs.OpCode`), for the operations
/// this client speaks.
pub mod op {
    /// Create a node (reply: path).
    pub const CREATE: i32 = 1;
    /// Delete a node.
    pub const DELETE: i32 = 2;
    /// Stat a node.
    pub const EXISTS: i32 = 3;
    /// Read data and stat.
    pub const GET_DATA: i32 = 4;
    /// Write data.
    pub const SET_DATA: i32 = 5;
    /// List children.
    pub const GET_CHILDREN: i32 = 8;
    /// Catch up with the leader.
    pub const SYNC: i32 = 9;
    /// Keep the session alive.
    pub const PING: i32 = 11;
    /// Version check (inside a multi).
    pub const CHECK: i32 = 13;
    /// Atomic batch of writes.
    pub const MULTI: i32 = 14;
    /// Create a node (reply: path and stat).
    pub const CREATE2: i32 = 15;
    /// Add credentials to the connection.
    pub const AUTH: i32 = 100;
    /// Re-register watches after a reconnect.
    pub const SET_WATCHES: i32 = 101;
    /// End the session.
    pub const CLOSE_SESSION: i32 = -11;
    /// The type of the header that closes a multi's list.
    pub const MULTI_END: i32 = -1;
    /// The type of a multi result that carries an error.
    pub const MULTI_ERROR: i32 = -1;
}

/// Reserved xids (the `xid` of request and reply headers).
pub mod xid {
    /// A watch notification (server to client only).
    pub const NOTIFICATION: i32 = -1;
    /// A ping and its reply.
    pub const PING: i32 = -2;
    /// An auth packet and its reply (a client convention, echoed).
    pub const AUTH: i32 = -4;
    /// A setWatches request and its reply (a client convention, echoed).
    pub const SET_WATCHES: i32 = -8;
}
