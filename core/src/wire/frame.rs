//! Length-prefixed framing: every message is a 4-byte big-endian length
//! followed by that many payload bytes.
//!
//! TCP delivers frames split across reads or several in one read; a driver
//! appends what it reads to its receive buffer and calls [`split`] until it
//! returns `Ok(None)`, then moves the unconsumed tail to the front.

use super::error::FrameError;

/// A complete frame at the start of a receive buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Frame<'a> {
    /// The payload (without the length prefix).
    pub payload: &'a [u8],
    /// Bytes the frame takes in the buffer, prefix included: where the
    /// next frame starts.
    pub consumed: usize,
}

/// The first frame of `buf`, `Ok(None)` if it has not fully arrived yet.
///
/// A length above `max` is refused before any payload is awaited, so a
/// hostile or corrupt length never makes the driver wait for (or allocate)
/// a gigabyte. Such a connection cannot be resynchronised: close it.
///
/// ```
/// use herdless_core::wire::frame::{split, Frame};
/// let buf = [0, 0, 0, 2, 7, 8, 0, 0];
/// let frame = split(&buf, 1024).unwrap().unwrap();
/// assert_eq!(frame, Frame { payload: &[7, 8], consumed: 6 });
/// assert_eq!(split(&buf[6..], 1024), Ok(None)); // a prefix still incomplete
/// ```
pub fn split(buf: &[u8], max: usize) -> Result<Option<Frame<'_>>, FrameError> {
    let Some(total) = total_len(buf, max)? else {
        return Ok(None);
    };
    Ok(buf.get(4..total).map(|payload| Frame {
        payload,
        consumed: total,
    }))
}

/// How many bytes the frame starting at `buf` takes in all (prefix
/// included), once its length prefix has arrived; for drivers that read
/// exactly one frame at a time.
pub fn total_len(buf: &[u8], max: usize) -> Result<Option<usize>, FrameError> {
    let Some(prefix) = buf.first_chunk::<4>() else {
        return Ok(None);
    };
    let announced = i32::from_be_bytes(*prefix);
    let len = usize::try_from(announced).map_err(|_| FrameError::NegativeLength(announced))?;
    if len > max {
        return Err(FrameError::TooLarge { len, max });
    }
    Ok(Some(len + 4))
}

#[cfg(test)]
#[allow(clippy::indexing_slicing)]
mod tests {
    use super::*;

    #[test]
    fn frames_packed_together_come_out_one_by_one() {
        let buf = [0, 0, 0, 1, 9, 0, 0, 0, 0, 0, 0, 0, 2, 1];
        let a = split(&buf, 16).unwrap().unwrap();
        assert_eq!((a.payload, a.consumed), (&[9][..], 5));
        let b = split(&buf[5..], 16).unwrap().unwrap();
        assert_eq!((b.payload, b.consumed), (&[][..], 4));
        assert_eq!(split(&buf[9..], 16), Ok(None));
        assert_eq!(total_len(&buf[9..], 16), Ok(Some(6)));
    }

    #[test]
    fn every_truncation_waits_and_never_fails() {
        let buf = [0, 0, 0, 3, 1, 2, 3];
        for cut in 0..buf.len() {
            assert_eq!(split(&buf[..cut], 16), Ok(None), "cut at {cut}");
        }
        assert!(split(&buf, 16).unwrap().is_some());
    }

    #[test]
    fn bad_lengths_are_refused_up_front() {
        assert_eq!(
            split(&[0xff, 0xff, 0xff, 0xff], 16),
            Err(FrameError::NegativeLength(-1))
        );
        assert_eq!(
            split(&[0, 0, 0, 17], 16),
            Err(FrameError::TooLarge { len: 17, max: 16 })
        );
        assert_eq!(total_len(&[0, 0, 0, 16], 16), Ok(Some(20)), "at the limit");
        assert_eq!(split(&[0, 0, 0, 0], 0).unwrap().unwrap().consumed, 4);
        assert_eq!(
            total_len(&[0x80, 0, 0, 0], 16),
            Err(FrameError::NegativeLength(i32::MIN))
        );
    }
}
