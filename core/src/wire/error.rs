//! What can go wrong turning values into bytes and bytes into values.
//!
//! Every failure on server input is one of these typed values: the codec
//! never panics and never reads outside the bytes it was given.

use core::fmt;

/// Why a frame could not be encoded. On any of these the caller's buffer is
/// left exactly as it was.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum EncodeError {
    /// The frame needs `needed` bytes (length prefix included) but the
    /// buffer has `capacity`.
    BufferTooSmall {
        /// Bytes the whole frame needs.
        needed: usize,
        /// Bytes the buffer has.
        capacity: usize,
    },
    /// A string, buffer or list is longer than jute's 32-bit length can say,
    /// or the frame is longer than the server accepts (`jute.maxbuffer`).
    TooLong,
    /// A multi with no operations (the server's answer to one is not
    /// known; clients never send it).
    EmptyMulti,
}

impl fmt::Display for EncodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EncodeError::BufferTooSmall { needed, capacity } => {
                write!(f, "frame needs {needed} bytes, buffer has {capacity}")
            }
            EncodeError::TooLong => f.write_str("field or frame too long for the wire"),
            EncodeError::EmptyMulti => f.write_str("a multi needs at least one operation"),
        }
    }
}

/// Why received bytes could not be decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum DecodeError {
    /// The record ends before the field it was reading.
    Truncated,
    /// A string, buffer or vector length is negative (other than -1, null).
    NegativeLength(i32),
    /// A string is not UTF-8.
    InvalidUtf8,
    /// A multi result carries an operation type this client never sends.
    UnexpectedMultiType(i32),
    /// A multi response has more or fewer results than operations sent, or
    /// does not end with the closing header.
    MultiMismatch,
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DecodeError::Truncated => f.write_str("record truncated"),
            DecodeError::NegativeLength(len) => write!(f, "negative length {len}"),
            DecodeError::InvalidUtf8 => f.write_str("string is not UTF-8"),
            DecodeError::UnexpectedMultiType(t) => write!(f, "unexpected multi result type {t}"),
            DecodeError::MultiMismatch => f.write_str("multi results do not match the request"),
        }
    }
}

/// Why the length prefix of a frame was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum FrameError {
    /// The length prefix is negative.
    NegativeLength(i32),
    /// The frame announces `len` payload bytes, more than the `max` allowed.
    TooLarge {
        /// Announced payload length.
        len: usize,
        /// The limit in force.
        max: usize,
    },
}

impl fmt::Display for FrameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FrameError::NegativeLength(len) => write!(f, "negative frame length {len}"),
            FrameError::TooLarge { len, max } => {
                write!(f, "frame of {len} bytes exceeds the limit of {max}")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shown::shown;

    #[test]
    fn messages_name_the_figures() {
        let small = EncodeError::BufferTooSmall {
            needed: 20,
            capacity: 16,
        };
        assert_eq!(shown(&small), "frame needs 20 bytes, buffer has 16");
        assert_eq!(
            shown(&EncodeError::TooLong),
            "field or frame too long for the wire"
        );
        assert_eq!(
            shown(&DecodeError::NegativeLength(-2)),
            "negative length -2"
        );
        assert_eq!(
            shown(&DecodeError::UnexpectedMultiType(8)),
            "unexpected multi result type 8"
        );
        assert_eq!(
            shown(&FrameError::NegativeLength(-1)),
            "negative frame length -1"
        );
        let large = FrameError::TooLarge { len: 17, max: 16 };
        assert_eq!(shown(&large), "frame of 17 bytes exceeds the limit of 16");
    }
}
