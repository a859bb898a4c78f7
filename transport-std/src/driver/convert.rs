//! Mapping between the core's borrowed types and `zookeeper-client`'s.

use herdless_core::{perms, Acl, CreateMode, Stat, WatchKind, ZkError};
use zookeeper_client as zk;

/// `zookeeper-client`'s "expected version" (`None` for any).
pub(crate) fn expected_version(version: herdless_core::Version) -> Option<i32> {
    match version {
        herdless_core::Version::Any => None,
        herdless_core::Version::Exactly(v) => Some(v),
    }
}

pub(crate) fn stat(s: &zk::Stat) -> Stat {
    Stat {
        czxid: s.czxid,
        mzxid: s.mzxid,
        ctime: s.ctime,
        mtime: s.mtime,
        version: s.version,
        cversion: s.cversion,
        aversion: s.aversion,
        ephemeral_owner: s.ephemeral_owner,
        data_length: s.data_length,
        num_children: s.num_children,
        pzxid: s.pzxid,
    }
}

pub(crate) fn create_mode(mode: CreateMode) -> zk::CreateMode {
    match mode {
        CreateMode::Persistent => zk::CreateMode::Persistent,
        CreateMode::PersistentSequential => zk::CreateMode::PersistentSequential,
        CreateMode::Ephemeral => zk::CreateMode::Ephemeral,
        CreateMode::EphemeralSequential => zk::CreateMode::EphemeralSequential,
    }
}

fn permission(bits: u32) -> zk::Permission {
    [
        (perms::READ, zk::Permission::READ),
        (perms::WRITE, zk::Permission::WRITE),
        (perms::CREATE, zk::Permission::CREATE),
        (perms::DELETE, zk::Permission::DELETE),
        (perms::ADMIN, zk::Permission::ADMIN),
    ]
    .into_iter()
    .filter(|(bit, _)| bits & bit != 0)
    .fold(zk::Permission::NONE, |acc, (_, p)| acc | p)
}

/// The core's ACL as `zookeeper-client` entries.
pub(crate) fn acl(acl: Acl<'_>) -> Vec<zk::Acl> {
    acl.entries()
        .iter()
        .map(|e| zk::Acl::new(permission(e.perms), zk::AuthId::new(e.scheme, e.id)))
        .collect()
}

pub(crate) fn watch_kind(event: zk::EventType) -> Option<WatchKind> {
    match event {
        zk::EventType::NodeCreated => Some(WatchKind::NodeCreated),
        zk::EventType::NodeDeleted => Some(WatchKind::NodeDeleted),
        zk::EventType::NodeDataChanged => Some(WatchKind::NodeDataChanged),
        zk::EventType::NodeChildrenChanged => Some(WatchKind::NodeChildrenChanged),
        zk::EventType::Session => None,
    }
}

/// The core's error code for a `zookeeper-client` error.
///
/// The client reports a broken connection to the requests in flight with the
/// error that broke it: an IO error (`Connection reset by peer`, a refused
/// or timed-out socket) arrives as [`zk::Error::Custom`], a reply it could
/// not decode as `UnexpectedError` or `UnmarshalError`. For each of them the
/// server may or may not have applied the request and the session may well
/// live on: that is ZooKeeper's `ConnectionLoss`, which every recipe
/// recovers from, not a terminal error.
pub(crate) fn error(e: &zk::Error) -> ZkError {
    use zk::Error as E;
    match e {
        E::NoNode => ZkError::NoNode,
        E::NoAuth => ZkError::NoAuth,
        E::BadVersion => ZkError::BadVersion,
        E::NoChildrenForEphemerals => ZkError::NoChildrenForEphemerals,
        E::NodeExists => ZkError::NodeExists,
        E::NotEmpty => ZkError::NotEmpty,
        E::SessionExpired | E::ClientClosed => ZkError::SessionExpired,
        E::InvalidAcl => ZkError::InvalidAcl,
        E::AuthFailed => ZkError::AuthFailed,
        E::SessionMoved => ZkError::SessionMoved,
        E::NotReadOnly => ZkError::NotReadOnly,
        E::NoWatcher => ZkError::NoWatcher,
        E::QuotaExceeded => ZkError::QuotaExceeded,
        E::Throttled => ZkError::ThrottledOp,
        E::MarshallingError => ZkError::MarshallingError,
        E::Unimplemented => ZkError::Unimplemented,
        E::ConnectionLoss | E::Timeout | E::NoHosts => ZkError::ConnectionLoss,
        E::Custom(_) | E::UnexpectedError(_) | E::UnmarshalError { .. } => ZkError::ConnectionLoss,
        E::ReconfigDisabled => ZkError::ReconfigDisabled,
        E::BadArguments(_) => ZkError::BadArguments,
        E::RuntimeInconsistent => ZkError::RuntimeInconsistency,
        E::UnexpectedErrorCode(code) => ZkError::from_code(*code).unwrap_or(ZkError::SystemError),
        _ => ZkError::SystemError,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn acls_keep_their_permissions() {
        let open = acl(Acl::OPEN);
        assert_eq!(open.len(), 1);
        assert_eq!(open[0].permission(), zk::Permission::ALL);
        assert_eq!(open[0].scheme(), "world");
        let read = acl(Acl::READ);
        assert_eq!(read[0].permission(), zk::Permission::READ);
    }

    /// What the client hands the requests in flight when their connection
    /// breaks: a connection loss, never a terminal `SystemError`. (IO errors
    /// arrive as `Error::Custom`, which only the client can build: the
    /// half-open link tests of `herdless-tests` produce them for real.)
    #[test]
    fn broken_connections_are_connection_losses() {
        let garbled =
            zk::Error::UnexpectedError("recv response with xid 7 but no pending request".into());
        assert_eq!(error(&garbled), ZkError::ConnectionLoss);
        assert_eq!(error(&zk::Error::Timeout), ZkError::ConnectionLoss);
    }

    /// Every server error the client names keeps its code. The codes are
    /// ZooKeeper's (`KeeperException.Code`), written out here rather than
    /// read from either crate.
    #[test]
    fn every_named_server_error_keeps_its_code() {
        use zk::Error as E;
        let table = [
            (E::RuntimeInconsistent, -2),
            (E::MarshallingError, -5),
            (E::Unimplemented, -6),
            (E::BadArguments(&"a bad path"), -8),
            (E::NoNode, -101),
            (E::NoAuth, -102),
            (E::BadVersion, -103),
            (E::NoChildrenForEphemerals, -108),
            (E::NodeExists, -110),
            (E::NotEmpty, -111),
            (E::SessionExpired, -112),
            (E::InvalidAcl, -114),
            (E::AuthFailed, -115),
            (E::SessionMoved, -118),
            (E::NotReadOnly, -119),
            (E::NoWatcher, -121),
            (E::ReconfigDisabled, -123),
            (E::QuotaExceeded, -125),
            (E::Throttled, -127),
        ];
        for (e, code) in table {
            assert_eq!(error(&e).code(), code, "{e:?}");
        }
        // A client closed by its owner has no session left to act on.
        assert_eq!(error(&zk::Error::ClientClosed), ZkError::SessionExpired);
    }

    /// ZooKeeper's event codes (`Watcher.Event.EventType`); a session
    /// event is not a node's notification.
    #[test]
    fn notifications_keep_their_kind() {
        use zk::EventType as T;
        let table = [
            (T::NodeCreated, 1),
            (T::NodeDeleted, 2),
            (T::NodeDataChanged, 3),
            (T::NodeChildrenChanged, 4),
        ];
        for (event, code) in table {
            assert_eq!(
                watch_kind(event).map(WatchKind::code),
                Some(code),
                "{event}"
            );
        }
        assert_eq!(watch_kind(T::Session), None);
    }

    #[test]
    fn a_version_is_passed_on_and_any_version_is_none() {
        assert_eq!(expected_version(herdless_core::Version::Any), None);
        assert_eq!(
            expected_version(herdless_core::Version::Exactly(0)),
            Some(0)
        );
        assert_eq!(
            expected_version(herdless_core::Version::Exactly(7)),
            Some(7)
        );
    }

    /// Each field lands in its own place: the values differ, so a swap
    /// shows.
    #[test]
    fn a_stat_keeps_every_field() {
        let s = zk::Stat {
            czxid: 1,
            mzxid: 2,
            pzxid: 3,
            ctime: 4,
            mtime: 5,
            version: 6,
            cversion: 7,
            aversion: 8,
            ephemeral_owner: 9,
            data_length: 10,
            num_children: 11,
        };
        let expected = Stat {
            czxid: 1,
            mzxid: 2,
            pzxid: 3,
            ctime: 4,
            mtime: 5,
            version: 6,
            cversion: 7,
            aversion: 8,
            ephemeral_owner: 9,
            data_length: 10,
            num_children: 11,
        };
        assert_eq!(stat(&s), expected);
    }

    #[test]
    fn errors_map_to_their_codes() {
        assert_eq!(error(&zk::Error::NoNode), ZkError::NoNode);
        assert_eq!(error(&zk::Error::ConnectionLoss), ZkError::ConnectionLoss);
        assert_eq!(
            error(&zk::Error::UnexpectedErrorCode(-9)),
            ZkError::Unknown(-9)
        );
    }
}
