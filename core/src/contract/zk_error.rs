//! ZooKeeper's error codes (`KeeperException.Code`) as one enum.

use core::fmt;

/// An error code sent by a ZooKeeper server (or produced by a client for a lost
/// connection), as carried in a reply header.
///
/// Codes this crate does not know map to [`ZkError::Unknown`] with the raw
/// value, so a newer server never makes the core panic.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum ZkError {
    // The answers that leave a request's outcome unknown, then those that
    // end the session, come first and in one run: `is_connection_loss`,
    // `is_session_gone` and the two together (asked in most recipes'
    // error paths) are then range checks of the discriminant, not bit
    // tests of scattered ones. The rest follow in code order.
    /// -4: the connection to the server was lost; the request may or may not
    /// have been applied.
    ConnectionLoss,
    /// -7: the operation timed out.
    OperationTimeout,
    /// -122: the client's request timed out.
    RequestTimeout,
    /// -112: the session has expired.
    SessionExpired,
    /// -118: the session moved to another server.
    SessionMoved,
    /// -115: authentication failed.
    AuthFailed,
    /// -1: range marker, never sent by a server.
    SystemError,
    /// -2: an operation of a multi after the one that failed.
    RuntimeInconsistency,
    /// -3: the data is inconsistent.
    DataInconsistency,
    /// -5: the server could not decode the request.
    MarshallingError,
    /// -6: the operation is not implemented by this server.
    Unimplemented,
    /// -8: invalid arguments (bad path, flags or TTL).
    BadArguments,
    /// -12: unknown session (server-internal).
    UnknownSession,
    /// -13: a reconfiguration has no quorum.
    NewConfigNoQuorum,
    /// -14: a reconfiguration is already in progress.
    ReconfigInProgress,
    /// -100: range marker, never sent by a server.
    ApiError,
    /// -101: the node does not exist.
    NoNode,
    /// -102: not authorised.
    NoAuth,
    /// -103: the version did not match.
    BadVersion,
    /// -108: ephemeral nodes may not have children.
    NoChildrenForEphemerals,
    /// -110: the node already exists.
    NodeExists,
    /// -111: the node has children.
    NotEmpty,
    /// -113: invalid callback (client-side).
    InvalidCallback,
    /// -114: invalid ACL.
    InvalidAcl,
    /// -119: a write was sent to a read-only server.
    NotReadOnly,
    /// -120: an ephemeral node on a local session.
    EphemeralOnLocalSession,
    /// -121: no such watcher.
    NoWatcher,
    /// -123: reconfiguration is disabled.
    ReconfigDisabled,
    /// -124: the session is closed because it requires SASL authentication.
    SessionClosedRequireSaslAuth,
    /// -125: a quota was exceeded.
    QuotaExceeded,
    /// -127: the request was throttled; retry with backoff.
    ThrottledOp,
    /// -1000, produced by the client, never sent by a server: the answer
    /// did not fit the driver's receive buffer and was skipped (the server
    /// carried the request out, and a watch it asked for is set). The
    /// embedded driver answers so a `getData` of more than its buffer, and
    /// a listing to a recipe that does not take listings in parts.
    ReplyTooLarge,
    /// A code this crate does not know, with its raw value.
    Unknown(i32),
}

/// The code of each error [`ZkError::from_code`] knows, in the order the
/// variants are declared: the one list of the codes, which
/// [`code`](ZkError::code) reads by a variant's index.
const CODES: [i16; 32] = [
    -4, -7, -122, -112, -118, -115, -1, -2, -3, -5, -6, -8, -12, -13, -14, -100, -101, -102, -103,
    -108, -110, -111, -113, -114, -119, -120, -121, -123, -124, -125, -127, -1000,
];

impl ZkError {
    /// The error for a raw code, or `None` for `0` (OK).
    // A search of `CODES` rather than a match on the code: the match
    // compiled to a branch per code (the STM32 firmware's herdless code
    // measured 172 B less this way, and its flash 108 B less, the table
    // included; scripts/firmware-size.sh).
    pub const fn from_code(code: i32) -> Option<ZkError> {
        if code == 0 {
            return None;
        }
        let mut index = 0;
        while index < CODES.len() {
            if CODES[index] as i32 == code {
                return Some(Self::known(index));
            }
            index += 1;
        }
        Some(ZkError::Unknown(code))
    }

    /// The known error at `index` of [`CODES`]: the variants in
    /// declaration order, so that this compiles to no code at all.
    const fn known(index: usize) -> ZkError {
        use ZkError::*;
        match index {
            0 => ConnectionLoss,
            1 => OperationTimeout,
            2 => RequestTimeout,
            3 => SessionExpired,
            4 => SessionMoved,
            5 => AuthFailed,
            6 => SystemError,
            7 => RuntimeInconsistency,
            8 => DataInconsistency,
            9 => MarshallingError,
            10 => Unimplemented,
            11 => BadArguments,
            12 => UnknownSession,
            13 => NewConfigNoQuorum,
            14 => ReconfigInProgress,
            15 => ApiError,
            16 => NoNode,
            17 => NoAuth,
            18 => BadVersion,
            19 => NoChildrenForEphemerals,
            20 => NodeExists,
            21 => NotEmpty,
            22 => InvalidCallback,
            23 => InvalidAcl,
            24 => NotReadOnly,
            25 => EphemeralOnLocalSession,
            26 => NoWatcher,
            27 => ReconfigDisabled,
            28 => SessionClosedRequireSaslAuth,
            29 => QuotaExceeded,
            30 => ThrottledOp,
            _ => ReplyTooLarge,
        }
    }

    /// The raw code as it appears on the wire.
    pub const fn code(self) -> i32 {
        use ZkError::*;
        let index = match self {
            ConnectionLoss => 0,
            OperationTimeout => 1,
            RequestTimeout => 2,
            SessionExpired => 3,
            SessionMoved => 4,
            AuthFailed => 5,
            SystemError => 6,
            RuntimeInconsistency => 7,
            DataInconsistency => 8,
            MarshallingError => 9,
            Unimplemented => 10,
            BadArguments => 11,
            UnknownSession => 12,
            NewConfigNoQuorum => 13,
            ReconfigInProgress => 14,
            ApiError => 15,
            NoNode => 16,
            NoAuth => 17,
            BadVersion => 18,
            NoChildrenForEphemerals => 19,
            NodeExists => 20,
            NotEmpty => 21,
            InvalidCallback => 22,
            InvalidAcl => 23,
            NotReadOnly => 24,
            EphemeralOnLocalSession => 25,
            NoWatcher => 26,
            ReconfigDisabled => 27,
            SessionClosedRequireSaslAuth => 28,
            QuotaExceeded => 29,
            ThrottledOp => 30,
            ReplyTooLarge => 31,
            Unknown(code) => return code,
        };
        CODES[index] as i32
    }

    /// Whether the request's outcome is unknown and the recipe must find out
    /// what happened (the recipes page's "recoverable errors").
    pub const fn is_connection_loss(self) -> bool {
        matches!(
            self,
            ZkError::ConnectionLoss | ZkError::OperationTimeout | ZkError::RequestTimeout
        )
    }

    /// Whether the session is gone, with its ephemeral nodes and watches.
    pub const fn is_session_gone(self) -> bool {
        matches!(
            self,
            ZkError::SessionExpired | ZkError::SessionMoved | ZkError::AuthFailed
        )
    }
}

impl fmt::Display for ZkError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use ZkError::*;
        let text = match self {
            SystemError => "system error",
            RuntimeInconsistency => "a previous operation of the multi failed",
            DataInconsistency => "data inconsistency",
            ConnectionLoss => "connection to the server lost",
            MarshallingError => "the server could not decode the request",
            Unimplemented => "operation not implemented by the server",
            OperationTimeout => "operation timed out",
            BadArguments => "bad arguments",
            UnknownSession => "unknown session",
            NewConfigNoQuorum => "new configuration has no quorum",
            ReconfigInProgress => "reconfiguration in progress",
            ApiError => "API error",
            NoNode => "node does not exist",
            NoAuth => "not authorised",
            BadVersion => "version mismatch",
            NoChildrenForEphemerals => "ephemeral nodes cannot have children",
            NodeExists => "node already exists",
            NotEmpty => "node has children",
            SessionExpired => "session expired",
            InvalidCallback => "invalid callback",
            InvalidAcl => "invalid ACL",
            AuthFailed => "authentication failed",
            SessionMoved => "session moved to another server",
            NotReadOnly => "write sent to a read-only server",
            EphemeralOnLocalSession => "ephemeral node on a local session",
            NoWatcher => "no such watcher",
            RequestTimeout => "request timed out",
            ReconfigDisabled => "reconfiguration disabled",
            SessionClosedRequireSaslAuth => "session closed: SASL authentication required",
            QuotaExceeded => "quota exceeded",
            ThrottledOp => "request throttled by the server",
            ReplyTooLarge => "the reply does not fit the receive buffer",
            Unknown(code) => return write!(f, "unknown ZooKeeper error code {code}"),
        };
        f.write_str(text)
    }
}

#[cfg(test)]
mod tests {
    use super::ZkError;

    #[test]
    fn every_code_round_trips() {
        for code in -200..=0 {
            match ZkError::from_code(code) {
                None => assert_eq!(code, 0),
                Some(err) => assert_eq!(err.code(), code),
            }
        }
        assert_eq!(ZkError::from_code(-101), Some(ZkError::NoNode));
        assert_eq!(ZkError::from_code(-9), Some(ZkError::Unknown(-9)));
        let client_side = ZkError::ReplyTooLarge;
        assert_eq!(ZkError::from_code(client_side.code()), Some(client_side));
    }

    #[test]
    fn every_known_error_is_read_from_its_code() {
        use ZkError::*;
        // ZooKeeper's codes (`KeeperException.Code`), written out here so
        // that a slip in `CODES` or in either index cannot agree with
        // itself.
        let known = [
            (SystemError, -1),
            (RuntimeInconsistency, -2),
            (DataInconsistency, -3),
            (ConnectionLoss, -4),
            (MarshallingError, -5),
            (Unimplemented, -6),
            (OperationTimeout, -7),
            (BadArguments, -8),
            (UnknownSession, -12),
            (NewConfigNoQuorum, -13),
            (ReconfigInProgress, -14),
            (ApiError, -100),
            (NoNode, -101),
            (NoAuth, -102),
            (BadVersion, -103),
            (NoChildrenForEphemerals, -108),
            (NodeExists, -110),
            (NotEmpty, -111),
            (SessionExpired, -112),
            (InvalidCallback, -113),
            (InvalidAcl, -114),
            (AuthFailed, -115),
            (SessionMoved, -118),
            (NotReadOnly, -119),
            (EphemeralOnLocalSession, -120),
            (NoWatcher, -121),
            (RequestTimeout, -122),
            (ReconfigDisabled, -123),
            (SessionClosedRequireSaslAuth, -124),
            (QuotaExceeded, -125),
            (ThrottledOp, -127),
            (ReplyTooLarge, -1000),
        ];
        for (error, code) in known {
            assert_eq!(error.code(), code, "{error:?}");
            assert_eq!(ZkError::from_code(code), Some(error), "{error:?}");
        }
        assert_eq!(ZkError::from_code(-1001), Some(Unknown(-1001)));
        assert_eq!(ZkError::from_code(i32::MIN), Some(Unknown(i32::MIN)));
    }

    #[test]
    fn messages_say_what_the_server_refused() {
        let shown = |e: ZkError| crate::shown::shown(&e);
        assert_eq!(shown(ZkError::NoNode), "node does not exist");
        assert_eq!(shown(ZkError::NodeExists), "node already exists");
        assert_eq!(
            shown(ZkError::Unknown(-9)),
            "unknown ZooKeeper error code -9"
        );
        // Each known code has its own message.
        for a in -200..0 {
            for b in (a + 1)..0 {
                if let (Some(x), Some(y)) = (ZkError::from_code(a), ZkError::from_code(b)) {
                    if !matches!(x, ZkError::Unknown(_)) && !matches!(y, ZkError::Unknown(_)) {
                        assert_ne!(shown(x), shown(y), "{x:?} and {y:?}");
                    }
                }
            }
        }
    }
}
