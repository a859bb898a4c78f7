//! Jute, ZooKeeper's binary record format: big-endian integers, one-byte
//! booleans, length-prefixed strings, buffers and vectors (`-1` is null),
//! records as their fields back to back.
//!
//! Writing goes through a [`Sink`] so that one encoding function serves
//! twice: once into a [`Counter`] to learn the size, once into the caller's
//! buffer, which is touched only when the whole frame fits. Reading goes
//! through a [`Reader`] whose every step checks the bytes left first.

use super::error::{DecodeError, EncodeError};
use crate::children::Children;
use crate::Stat;

/// The largest frame payload the server accepts by default
/// (`jute.maxbuffer`, `0xfffff`); also the default limit for frames read.
pub const DEFAULT_MAX_FRAME: usize = 0xfffff;

/// Where encoded bytes go.
pub(crate) trait Sink {
    fn put(&mut self, bytes: &[u8]);
}

/// Counts bytes without storing them (the sizing pass).
pub(crate) struct Counter(pub(crate) usize);

impl Sink for Counter {
    fn put(&mut self, bytes: &[u8]) {
        self.0 = self.0.saturating_add(bytes.len());
    }
}

/// Writes into a slice that the sizing pass proved large enough.
pub(crate) struct SliceWriter<'b> {
    buf: &'b mut [u8],
    pos: usize,
}

impl Sink for SliceWriter<'_> {
    fn put(&mut self, bytes: &[u8]) {
        let end = self.pos.saturating_add(bytes.len());
        // Cannot miss after the sizing pass; if it ever did, the length
        // prefix would disagree and the caller sees a short frame, not a
        // panic.
        if let Some(dst) = self.buf.get_mut(self.pos..end) {
            dst.copy_from_slice(bytes);
            self.pos = end;
        }
    }
}

/// Jute primitives over any sink.
pub(crate) struct Writer<'s> {
    sink: &'s mut dyn Sink,
}

impl Writer<'_> {
    // Out of line: inlined, each of its many uses carried the byte swap
    // and the sink's dynamic call, 31 B more herdless code in the STM32
    // firmware (scripts/firmware-size.sh). The reader's `int` stays
    // inline: in a fixed-size record its checks fold away.
    #[inline(never)]
    pub(crate) fn int(&mut self, v: i32) {
        self.sink.put(&v.to_be_bytes());
    }

    pub(crate) fn long(&mut self, v: i64) {
        self.sink.put(&v.to_be_bytes());
    }

    pub(crate) fn boolean(&mut self, v: bool) {
        self.sink.put(&[u8::from(v)]);
    }

    /// A length or count as jute's signed 32-bit int.
    pub(crate) fn count(&mut self, n: usize) -> Result<(), EncodeError> {
        self.int(i32::try_from(n).map_err(|_| EncodeError::TooLong)?);
        Ok(())
    }

    pub(crate) fn buffer(&mut self, bytes: &[u8]) -> Result<(), EncodeError> {
        self.count(bytes.len())?;
        self.sink.put(bytes);
        Ok(())
    }

    pub(crate) fn ustring(&mut self, s: &str) -> Result<(), EncodeError> {
        self.buffer(s.as_bytes())
    }

    #[cfg(test)]
    pub(crate) fn stat(&mut self, s: &Stat) {
        self.long(s.czxid);
        self.long(s.mzxid);
        self.long(s.ctime);
        self.long(s.mtime);
        self.int(s.version);
        self.int(s.cversion);
        self.int(s.aversion);
        self.long(s.ephemeral_owner);
        self.int(s.data_length);
        self.int(s.num_children);
        self.long(s.pzxid);
    }
}

/// Encodes one frame (length prefix, then what `body` writes) into `buf`.
///
/// `body` runs twice: into a counter, then into `buf`, so `buf` is written
/// only when the frame fits and is no longer than `max` payload bytes. It
/// is a trait object so that one copy of this serves every kind of frame:
/// on a microcontroller the copies per frame kind cost 420 bytes of flash.
/// Returns the frame's total length.
pub(crate) fn frame(
    buf: &mut [u8],
    max: usize,
    body: &dyn Fn(&mut Writer<'_>) -> Result<(), EncodeError>,
) -> Result<usize, EncodeError> {
    let mut counter = Counter(0);
    body(&mut Writer { sink: &mut counter })?;
    let payload = counter.0;
    if payload > max {
        return Err(EncodeError::TooLong);
    }
    let needed = payload.checked_add(4).ok_or(EncodeError::TooLong)?;
    let out = match buf.get_mut(..needed) {
        Some(out) => out,
        None => {
            return Err(EncodeError::BufferTooSmall {
                needed,
                capacity: buf.len(),
            })
        }
    };
    let mut sink = SliceWriter { buf: out, pos: 0 };
    let mut w = Writer { sink: &mut sink };
    w.count(payload)?;
    body(&mut w)?;
    Ok(needed)
}

/// The bytes of a `Stat` record: six longs and five ints.
const STAT_LEN: usize = 6 * 8 + 5 * 4;

/// Reads jute values from a byte slice, front to back, checking the bytes
/// left before every step.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Reader<'a> {
    rest: &'a [u8],
}

impl<'a> Reader<'a> {
    pub(crate) const fn new(bytes: &'a [u8]) -> Self {
        Reader { rest: bytes }
    }

    /// The bytes not read yet.
    pub(crate) const fn rest(&self) -> &'a [u8] {
        self.rest
    }

    pub(crate) fn take(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        let (taken, rest) = self
            .rest
            .split_at_checked(n)
            .ok_or(DecodeError::Truncated)?;
        self.rest = rest;
        Ok(taken)
    }

    fn chunk<const N: usize>(&mut self) -> Result<&'a [u8; N], DecodeError> {
        let (taken, rest) = self
            .rest
            .split_first_chunk::<N>()
            .ok_or(DecodeError::Truncated)?;
        self.rest = rest;
        Ok(taken)
    }

    pub(crate) fn int(&mut self) -> Result<i32, DecodeError> {
        self.chunk().map(|b| i32::from_be_bytes(*b))
    }

    pub(crate) fn long(&mut self) -> Result<i64, DecodeError> {
        self.chunk().map(|b| i64::from_be_bytes(*b))
    }

    /// Any non-zero byte is true, as the Java reader has it.
    pub(crate) fn boolean(&mut self) -> Result<bool, DecodeError> {
        self.chunk::<1>().map(|[b]| *b != 0)
    }

    /// A length or count: `-1` (null) reads as 0, other negatives fail.
    pub(crate) fn length(&mut self) -> Result<usize, DecodeError> {
        match self.int()? {
            -1 => Ok(0),
            n => usize::try_from(n).map_err(|_| DecodeError::NegativeLength(n)),
        }
    }

    /// A buffer; null reads as empty.
    pub(crate) fn buffer(&mut self) -> Result<&'a [u8], DecodeError> {
        let len = self.length()?;
        self.take(len)
    }

    /// A string; null reads as empty.
    pub(crate) fn ustring(&mut self) -> Result<&'a str, DecodeError> {
        core::str::from_utf8(self.buffer()?).map_err(|_| DecodeError::InvalidUtf8)
    }

    /// A `vector<ustring>`, every element checked now and streamed later.
    pub(crate) fn names(&mut self) -> Result<Children<'a>, DecodeError> {
        let count = self.length()?;
        let start = self.rest;
        // Each element takes at least its 4-byte length, so a count the
        // bytes cannot hold fails within `rest.len() / 4` steps.
        for _ in 0..count {
            self.ustring()?;
        }
        let used = start.len() - self.rest.len();
        let elements = start.get(..used).ok_or(DecodeError::Truncated)?;
        Ok(Children::from_validated_jute(elements, count))
    }

    pub(crate) fn stat(&mut self) -> Result<Stat, DecodeError> {
        // One length check for the whole record: the reads of its fields
        // from a fixed-size chunk cannot fail, and the compiler drops their
        // checks (a check and an error path per field cost flash). Read in
        // place: a copy of the chunk on the stack measured 72 B more
        // herdless code in the STM32 firmware (scripts/firmware-size.sh).
        let record: &[u8; STAT_LEN] = self.chunk()?;
        let mut fields = Reader::new(record);
        Ok(Stat {
            czxid: fields.long()?,
            mzxid: fields.long()?,
            ctime: fields.long()?,
            mtime: fields.long()?,
            version: fields.int()?,
            cversion: fields.int()?,
            aversion: fields.int()?,
            ephemeral_owner: fields.long()?,
            data_length: fields.int()?,
            num_children: fields.int()?,
            pzxid: fields.long()?,
        })
    }
}

#[cfg(test)]
#[allow(clippy::indexing_slicing)]
mod tests {
    use super::*;

    #[test]
    fn a_frame_that_does_not_fit_leaves_the_buffer_alone() {
        let mut buf = [0xAAu8; 9];
        let err = frame(&mut buf, DEFAULT_MAX_FRAME, &|w| {
            w.long(1);
            w.boolean(true);
            Ok(())
        });
        assert_eq!(
            err,
            Err(EncodeError::BufferTooSmall {
                needed: 13,
                capacity: 9
            })
        );
        assert_eq!(buf, [0xAA; 9]);
    }

    #[test]
    fn a_frame_over_the_limit_is_refused() {
        let mut buf = [0u8; 64];
        let body = |w: &mut Writer<'_>| w.buffer(&[1; 20]);
        assert_eq!(frame(&mut buf, 23, &body), Err(EncodeError::TooLong));
        assert_eq!(frame(&mut buf, 24, &body), Ok(28));
    }

    #[test]
    fn primitives_are_big_endian_and_null_reads_as_empty() {
        let mut buf = [0u8; 64];
        let n = frame(&mut buf, DEFAULT_MAX_FRAME, &|w| {
            w.int(-2);
            w.long(0x0102_0304_0506_0708);
            w.boolean(true);
            w.ustring("ab")?;
            w.int(-1);
            Ok(())
        })
        .unwrap();
        assert_eq!(
            &buf[..n],
            &[
                0, 0, 0, 23, 0xff, 0xff, 0xff, 0xfe, 1, 2, 3, 4, 5, 6, 7, 8, 1, 0, 0, 0, 2, b'a',
                b'b', 0xff, 0xff, 0xff, 0xff
            ]
        );
        let mut r = Reader::new(&buf[4..n]);
        assert_eq!(r.int(), Ok(-2));
        assert_eq!(r.long(), Ok(0x0102_0304_0506_0708));
        assert_eq!(r.boolean(), Ok(true));
        assert_eq!(r.ustring(), Ok("ab"));
        assert_eq!(r.buffer(), Ok(&[][..]));
        assert_eq!(r.int(), Err(DecodeError::Truncated));
    }

    #[test]
    fn bad_lengths_are_typed_errors() {
        assert_eq!(
            Reader::new(&[0xff, 0xff, 0xff, 0xfe]).buffer(),
            Err(DecodeError::NegativeLength(-2))
        );
        assert_eq!(
            Reader::new(&[0, 0, 0, 3, b'a']).buffer(),
            Err(DecodeError::Truncated)
        );
        assert_eq!(
            Reader::new(&[0, 0, 0, 1, 0xff]).ustring(),
            Err(DecodeError::InvalidUtf8)
        );
        // A count far beyond what the bytes can hold fails fast.
        assert_eq!(
            Reader::new(&[0x7f, 0xff, 0xff, 0xff, 0, 0, 0, 0])
                .names()
                .map(|c| c.count()),
            Err(DecodeError::Truncated)
        );
    }

    #[test]
    fn names_are_checked_then_streamed() {
        let bytes = [0, 0, 0, 2, 0, 0, 0, 1, b'a', 0, 0, 0, 2, b'b', b'c', 9];
        let mut r = Reader::new(&bytes);
        let names = r.names().unwrap();
        assert_eq!(r.rest(), &[9]);
        assert_eq!(names.count_all(), 2);
        assert_eq!(
            names.collect::<heapless::Vec<_, 2>>().as_slice(),
            &["a", "bc"]
        );
        let mut bad = bytes;
        bad[13] = 0xff;
        assert_eq!(
            Reader::new(&bad).names().map(|c| c.count()),
            Err(DecodeError::InvalidUtf8)
        );
    }
}
