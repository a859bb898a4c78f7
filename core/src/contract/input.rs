//! The inputs of the [`Recipe`](crate::Recipe) contract besides replies and
//! the time: watch notifications and session changes, as drivers hand them
//! to recipes. (The `*Event` types of the recipes are their outputs.)

/// What happened to a watched node.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum WatchKind {
    /// The node was created (exists watch).
    NodeCreated,
    /// The node was deleted.
    NodeDeleted,
    /// The node's data changed.
    NodeDataChanged,
    /// A child was created or deleted.
    NodeChildrenChanged,
}

impl WatchKind {
    /// The wire value of the event type.
    pub const fn code(self) -> i32 {
        match self {
            WatchKind::NodeCreated => 1,
            WatchKind::NodeDeleted => 2,
            WatchKind::NodeDataChanged => 3,
            WatchKind::NodeChildrenChanged => 4,
        }
    }

    /// The kind for a wire value, if it is one the server sends.
    pub const fn from_code(code: i32) -> Option<WatchKind> {
        match code {
            1 => Some(WatchKind::NodeCreated),
            2 => Some(WatchKind::NodeDeleted),
            3 => Some(WatchKind::NodeDataChanged),
            4 => Some(WatchKind::NodeChildrenChanged),
            _ => None,
        }
    }
}

/// A one-shot watch fired.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct WatchEvent<'a> {
    /// What happened.
    pub kind: WatchKind,
    /// The watched node's full path.
    pub path: &'a str,
}

/// A change of the session the recipe runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum SessionEvent {
    /// The session is (again) connected. After [`SessionEvent::Suspended`]
    /// this means the same session survived: its ephemeral nodes and watches
    /// are intact, but replies to requests in flight at the loss are gone.
    Connected {
        /// The session id (the `ephemeralOwner` of its ephemeral nodes).
        session_id: i64,
    },
    /// The connection was lost. The session may still be alive (until its
    /// timeout) or not: anything held "may have been lost".
    Suspended,
    /// The session expired: its ephemeral nodes are gone.
    Expired,
    /// The session was closed by this client, or ended with no session to
    /// follow it (herdless-std reports it after `Expired` on a client that
    /// opens no other): its ephemeral nodes are gone.
    Closed,
}
