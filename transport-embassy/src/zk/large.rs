//! Frames too large for the receive buffer: listings read in parts,
//! anything else answered with `ReplyTooLarge` and skipped.

use herdless_core::wire::listing::ListingDecoder;
use herdless_core::wire::{DecodeError, LargeFrame, SessionError};
use herdless_core::{Instant, Reply, RequestId, ZkError};

use super::{Tag, Zk};
use crate::error::Fault;
use crate::log::log_warn;
use crate::transport::Transport;

/// The rest of a frame too large for the receive buffer.
pub(super) struct Large {
    /// Payload bytes not yet read.
    left: usize,
    /// The listing they hold, for the recipe at this index with this
    /// request id; `None` once the names are read, or for a frame to skip.
    listing: Option<(u8, RequestId, ListingDecoder)>,
}

/// Bytes of a frame's start the session reads to match a large frame: the
/// length prefix and the reply header.
pub(super) const LARGE_HEAD: usize = 4 + 16;

impl<T: Transport, const K: usize, const WATCHES: usize, const WATCH_BYTES: usize>
    Zk<'_, T, K, WATCHES, WATCH_BYTES>
{
    /// A frame too large for the receive buffer began, `left` payload
    /// bytes still to come: a listing goes to its recipe in parts if it
    /// takes them; any other reply is answered with `ReplyTooLarge`.
    pub(super) fn begin_large(&mut self, large: LargeFrame<Tag>, left: usize, now: Instant) {
        let (listing, tag) = match large {
            LargeFrame::Listing { tag } => (true, tag),
            LargeFrame::TooLarge { tag } => (false, tag),
            _ => {
                self.large = Some(Large {
                    left,
                    listing: None,
                });
                return;
            }
        };
        let (index, id) = tag;
        let recipe = self.recipes.get_mut(usize::from(index));
        let in_parts = listing && recipe.as_ref().is_some_and(|r| r.takes_listing_in_parts());
        if !in_parts {
            log_warn!(
                "a reply of {:?} bytes skipped: over the receive buffer",
                left
            );
            if let Some(recipe) = recipe {
                recipe.handle_reply(now, id, Reply::Error(ZkError::ReplyTooLarge));
            }
        }
        self.large = Some(Large {
            left,
            listing: in_parts.then(|| (index, id, ListingDecoder::new())),
        });
    }

    /// Reads what has come of a large frame from `rx[start..filled]`:
    /// returns the bytes used (0: wait for more), or the fault that makes
    /// the connection unusable (a corrupt listing).
    pub(super) fn take_large(&mut self, start: usize, now: Instant) -> Result<usize, Fault> {
        let Some(large) = self.large.as_mut() else {
            return Ok(0);
        };
        let pending = self.rx.get(start..self.filled).unwrap_or_default();
        let window = pending.get(..large.left).unwrap_or(pending);
        let used = match large.listing.as_mut() {
            None => window.len(),
            Some((index, id, decoder)) => {
                let part = decoder
                    .decode(window)
                    .map_err(|e| Fault::Session(SessionError::Decode(e)))?;
                let last = decoder.is_done();
                let recipe = self.recipes.get_mut(usize::from(*index));
                let used = if part.consumed > 0 || last {
                    if let Some(recipe) = recipe {
                        recipe.handle_listing_part(now, *id, part.names, last);
                    }
                    part.consumed
                } else if window.len() == large.left {
                    // The frame ends inside a name.
                    return Err(Fault::Session(SessionError::Decode(DecodeError::Truncated)));
                } else if pending.len() >= self.rx.len() {
                    // One name fills the whole buffer: the listing cannot
                    // be read here; the recipe hears so, the rest is skipped.
                    log_warn!("a name over the receive buffer: listing skipped");
                    if let Some(recipe) = recipe {
                        recipe.handle_reply(now, *id, Reply::Error(ZkError::ReplyTooLarge));
                    }
                    large.listing = None;
                    window.len()
                } else {
                    part.consumed
                };
                if last {
                    large.listing = None;
                }
                used
            }
        };
        large.left -= used;
        if large.left == 0 {
            self.large = None;
        }
        Ok(used)
    }
}
