//! ZooKeeper's error codes (`KeeperException.Code`) as one enum.

use core::fmt;

/// Declares [`ZkError`] and everything read by a known variant's index from
/// one list, so that a code, a variant, its message and its `defmt` name
/// cannot fall out of step.
macro_rules! zk_errors {
    ($($(#[$doc:meta])* $name:ident = $code:literal, $text:literal;)*) => {
        /// An error code sent by a ZooKeeper server (or produced by a client
        /// for a lost connection), as carried in a reply header.
        ///
        /// Codes this crate does not know map to [`ZkError::Unknown`] with
        /// the raw value, so a newer server never makes the core panic.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        pub enum ZkError {
            $($(#[$doc])* $name,)*
            /// A code this crate does not know, with its raw value.
            Unknown(i32),
        }

        /// The known errors without their payload, in declaration order:
        /// `as usize` is a variant's index into [`CODES`] and [`TEXTS`].
        // Its derived `defmt::Format` is what `ZkError`'s prints: a
        // fieldless enum's compiles to writing the index alone, where
        // `ZkError`'s own (one arm per variant, for `Unknown`'s payload)
        // was 144 B more of the STM32 firmware (scripts/firmware-size.sh).
        #[derive(Clone, Copy)]
        #[cfg_attr(feature = "defmt", derive(defmt::Format))]
        enum Known {
            $($name,)*
        }

        /// The known variants by index, for [`ZkError::from_code`] (its
        /// length counted from the codes: `macro_rules!` cannot count).
        const KNOWN: [Known; [$($code),*].len()] = [$(Known::$name),*];

        /// The code of each known error, by index.
        const CODES: [i16; KNOWN.len()] = [$($code),*];

        /// The message of each known error, by index.
        const TEXTS: [&str; KNOWN.len()] = [$($text),*];

        impl Known {
            // This and `ZkError::known` compile to no code at all: the
            // variants of both enums are in the same order.
            const fn error(self) -> ZkError {
                match self {
                    $(Known::$name => ZkError::$name,)*
                }
            }
        }

        impl ZkError {
            /// The known error, or `None` for [`ZkError::Unknown`].
            // An `Option` (a byte, `None` the value after the last known
            // variant) compiles to no code; a `Result` carrying the
            // unknown code compiled to a branch per variant.
            const fn known(self) -> Option<Known> {
                match self {
                    $(ZkError::$name => Some(Known::$name),)*
                    ZkError::Unknown(_) => None,
                }
            }

            /// The raw code as it appears on the wire.
            pub const fn code(self) -> i32 {
                // The index, then the table: a match on the codes
                // themselves compiled to a branch per code.
                let index = match self {
                    $(ZkError::$name => Known::$name as usize,)*
                    ZkError::Unknown(code) => return code,
                };
                CODES[index] as i32
            }
        }
    };
}

zk_errors! {
    // The answers that leave a request's outcome unknown, then those that
    // end the session, come first and in one run: `is_connection_loss`,
    // `is_session_gone` and the two together (asked in most recipes'
    // error paths) are then range checks of the discriminant, not bit
    // tests of scattered ones. The rest follow in code order.
    /// -4: the connection to the server was lost; the request may or may not
    /// have been applied.
    ConnectionLoss = -4, "connection to the server lost";
    /// -7: the operation timed out.
    OperationTimeout = -7, "operation timed out";
    /// -122: the client's request timed out.
    RequestTimeout = -122, "request timed out";
    /// -112: the session has expired.
    SessionExpired = -112, "session expired";
    /// -118: the session moved to another server.
    SessionMoved = -118, "session moved to another server";
    /// -115: authentication failed.
    AuthFailed = -115, "authentication failed";
    /// -1: range marker, never sent by a server.
    SystemError = -1, "system error";
    /// -2: an operation of a multi after the one that failed.
    RuntimeInconsistency = -2, "a previous operation of the multi failed";
    /// -3: the data is inconsistent.
    DataInconsistency = -3, "data inconsistency";
    /// -5: the server could not decode the request.
    MarshallingError = -5, "the server could not decode the request";
    /// -6: the operation is not implemented by this server.
    Unimplemented = -6, "operation not implemented by the server";
    /// -8: invalid arguments (bad path, flags or TTL).
    BadArguments = -8, "bad arguments";
    /// -12: unknown session (server-internal).
    UnknownSession = -12, "unknown session";
    /// -13: a reconfiguration has no quorum.
    NewConfigNoQuorum = -13, "new configuration has no quorum";
    /// -14: a reconfiguration is already in progress.
    ReconfigInProgress = -14, "reconfiguration in progress";
    /// -100: range marker, never sent by a server.
    ApiError = -100, "API error";
    /// -101: the node does not exist.
    NoNode = -101, "node does not exist";
    /// -102: not authorised.
    NoAuth = -102, "not authorised";
    /// -103: the version did not match.
    BadVersion = -103, "version mismatch";
    /// -108: ephemeral nodes may not have children.
    NoChildrenForEphemerals = -108, "ephemeral nodes cannot have children";
    /// -110: the node already exists.
    NodeExists = -110, "node already exists";
    /// -111: the node has children.
    NotEmpty = -111, "node has children";
    /// -113: invalid callback (client-side).
    InvalidCallback = -113, "invalid callback";
    /// -114: invalid ACL.
    InvalidAcl = -114, "invalid ACL";
    /// -119: a write was sent to a read-only server.
    NotReadOnly = -119, "write sent to a read-only server";
    /// -120: an ephemeral node on a local session.
    EphemeralOnLocalSession = -120, "ephemeral node on a local session";
    /// -121: no such watcher.
    NoWatcher = -121, "no such watcher";
    /// -123: reconfiguration is disabled.
    ReconfigDisabled = -123, "reconfiguration disabled";
    /// -124: the session is closed because it requires SASL authentication.
    SessionClosedRequireSaslAuth = -124, "session closed: SASL authentication required";
    /// -125: a quota was exceeded.
    QuotaExceeded = -125, "quota exceeded";
    /// -127: the request was throttled; retry with backoff.
    ThrottledOp = -127, "request throttled by the server";
    /// -1000, produced by the client, never sent by a server: the answer
    /// did not fit the driver's receive buffer and was skipped (the server
    /// carried the request out, and a watch it asked for is set). The
    /// embedded driver answers so a `getData` of more than its buffer, and
    /// a listing to a recipe that does not take listings in parts.
    ReplyTooLarge = -1000, "the reply does not fit the receive buffer";
}

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
                return Some(KNOWN[index].error());
            }
            index += 1;
        }
        Some(ZkError::Unknown(code))
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
        match self.known() {
            Some(known) => f.write_str(TEXTS[known as usize]),
            None => write!(f, "unknown ZooKeeper error code {}", self.code()),
        }
    }
}

#[cfg(feature = "defmt")]
impl defmt::Format for ZkError {
    fn format(&self, f: defmt::Formatter) {
        match self.known() {
            Some(known) => defmt::write!(f, "{}", known),
            None => defmt::write!(f, "Unknown({=i32})", self.code()),
        }
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

    /// What `ZkError`'s `defmt::Format` writes, with the string index the
    /// first interning took (defmt's host capture hands them out in turn).
    #[cfg(feature = "defmt")]
    fn logged(error: ZkError) -> (u16, std::vec::Vec<u8>) {
        let first = defmt::export::fetch_string_index();
        defmt::Format::format(&error, defmt::export::make_formatter());
        (first, defmt::export::fetch_bytes())
    }

    #[cfg(feature = "defmt")]
    #[test]
    fn defmt_writes_a_known_errors_place_and_an_unknown_ones_code() {
        let index = |i: u16| i.to_le_bytes();
        for (error, place) in [
            (ZkError::ConnectionLoss, 0),
            (ZkError::NoNode, 16),
            (ZkError::ReplyTooLarge, 31),
        ] {
            let (first, bytes) = logged(error);
            // "{}", then the known names' tag, then the error's place in
            // it: the order the names are declared in, as a derive writes.
            let expected = [&index(first)[..], &index(first + 1), &[place]].concat();
            assert_eq!(bytes, expected, "{error:?}");
        }
        let (first, bytes) = logged(ZkError::Unknown(-9));
        assert_eq!(bytes, [&index(first)[..], &(-9i32).to_le_bytes()].concat());
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
