//! The watches the server holds for this session, so they can be re-armed
//! with setWatches after the session moves to a new connection.
//!
//! A watch is recorded when the request that sets it is sent (that is when
//! its path is at hand) and counts once its reply says it was set: a
//! successful `getData`/`getChildren`, an `exists` that found the node (a
//! data watch) or did not (a creation watch). A notification removes what
//! it fired, by the server's rules: created and data-changed events fire
//! data and creation watches, children-changed events child watches, and
//! deleted events all three.
//!
//! A table of no watches (`N` = 0) keeps none: watches are set on the
//! server as ever, and a resumed session holds none of them, as with a
//! Java client's `zookeeper.disableAutoWatchReset`. Every recipe of herdless
//! reads again what it watches when its session resumes, so a device
//! running only recipes can leave the table's code and RAM out.

use heapless::Vec;

use super::error::SendError;
use crate::wire::encode::WatchLists;
use crate::wire::error::EncodeError;
use crate::wire::op::WatchClass;
use crate::{WatchEvent, ZkError};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Status {
    /// The request that sets it is awaiting its reply.
    Pending {
        xid: i32,
        /// Set by `exists`, which leaves a creation watch on a missing node.
        exists: bool,
    },
    /// Set on the server; `rearm` while it still has to go into a
    /// setWatches on the current connection.
    Armed { rearm: bool },
}

/// A watch; its path is `paths[start..start + len]` of its table.
#[derive(Clone, Copy, Debug)]
struct Watch {
    class: WatchClass,
    status: Status,
    start: u16,
    len: u16,
}

/// Up to `N` watches whose paths take up to `BYTES` bytes together.
///
/// The paths share one pool rather than each having room for the longest
/// path: a device watches a handful of paths of some tens of bytes, and
/// room for sixteen 128-byte paths was most of the driver's RAM.
#[derive(Clone, Debug)]
pub(crate) struct WatchTable<const N: usize, const BYTES: usize> {
    watches: Vec<Watch, N>,
    paths: Vec<u8, BYTES>,
}

impl<const N: usize, const BYTES: usize> WatchTable<N, BYTES> {
    /// Whether watches are kept at all: with `N` = 0 every method below
    /// folds away when the session is compiled.
    const KEEPS: bool = N > 0;

    pub(crate) const fn new() -> Self {
        WatchTable {
            watches: Vec::new(),
            paths: Vec::new(),
        }
    }

    /// The path of `watch`: always whole UTF-8, as it was stored from a
    /// `&str`.
    fn path(&self, watch: &Watch) -> &str {
        let start = usize::from(watch.start);
        self.paths
            .get(start..start + usize::from(watch.len))
            .and_then(|bytes| core::str::from_utf8(bytes).ok())
            .unwrap_or("")
    }

    /// Records the watch the request with `xid` asks for (`exists`: the
    /// request is an `exists`).
    pub(crate) fn reserve(
        &mut self,
        class: WatchClass,
        path: &str,
        xid: i32,
        exists: bool,
    ) -> Result<(), SendError> {
        if !Self::KEEPS {
            return Ok(());
        }
        if path.len() > BYTES {
            return Err(SendError::WatchPathTooLong);
        }
        if self.watches.is_full() {
            return Err(SendError::TooManyWatches);
        }
        let (Ok(start), Ok(len)) = (u16::try_from(self.paths.len()), u16::try_from(path.len()))
        else {
            return Err(SendError::WatchPathTooLong);
        };
        // No room left in the pool for this path: as full as a table with
        // no slot left.
        self.paths
            .extend_from_slice(path.as_bytes())
            .map_err(|_| SendError::TooManyWatches)?;
        let watch = Watch {
            class,
            status: Status::Pending { xid, exists },
            start,
            len,
        };
        // Cannot fail (a slot is free, checked above); should it, the path
        // goes too.
        self.watches.push(watch).map_err(|_| {
            self.paths.truncate(usize::from(start));
            SendError::TooManyWatches
        })
    }

    /// Removes the watch at `index` and its path, closing the gap in the
    /// pool.
    fn remove(&mut self, index: usize) {
        if index >= self.watches.len() {
            return;
        }
        let gone = self.watches.swap_remove(index);
        let (start, len) = (usize::from(gone.start), usize::from(gone.len));
        self.paths.copy_within(start + len.., start);
        self.paths.truncate(self.paths.len() - len);
        for w in self.watches.iter_mut() {
            if w.start > gone.start {
                w.start -= gone.len;
            }
        }
    }

    /// Removes every watch `drop` says to.
    fn remove_where(&mut self, mut drop: impl FnMut(&Self, &Watch) -> bool) {
        if !Self::KEEPS {
            return;
        }
        let mut index = 0;
        while let Some(w) = self.watches.get(index).copied() {
            if drop(self, &w) {
                self.remove(index);
            } else {
                index += 1;
            }
        }
    }

    /// Forgets the watch of a request that was never sent.
    pub(crate) fn unreserve(&mut self, xid: i32) {
        self.remove_where(|_, w| matches!(w.status, Status::Pending { xid: x, .. } if x == xid));
    }

    /// The reply to the request with `xid` arrived: keeps its watch if the
    /// server set one.
    pub(crate) fn confirm(&mut self, xid: i32, error: Option<ZkError>) {
        if !Self::KEEPS {
            return;
        }
        let Some((index, exists)) =
            self.watches
                .iter()
                .enumerate()
                .find_map(|(i, w)| match w.status {
                    Status::Pending { xid: x, exists } if x == xid => Some((i, exists)),
                    _ => None,
                })
        else {
            return;
        };
        let set = match error {
            // Only `exists` leaves a watch on a missing node.
            Some(ZkError::NoNode) if exists => Some(WatchClass::Exist),
            Some(_) => None,
            None => self.watches.get(index).map(|w| w.class),
        };
        self.settle(index, set);
    }

    /// Arms the watch at `index` as `class`, or drops it; a duplicate of a
    /// watch already armed is dropped too (the server keeps one).
    fn settle(&mut self, index: usize, class: Option<WatchClass>) {
        let Some(class) = class else {
            self.remove(index);
            return;
        };
        let duplicate = match self.watches.get(index) {
            Some(w) => self.watches.iter().any(|o| {
                matches!(o.status, Status::Armed { .. })
                    && o.class == class
                    && self.path(o) == self.path(w)
            }),
            None => return,
        };
        if duplicate {
            self.remove(index);
        } else if let Some(w) = self.watches.get_mut(index) {
            w.class = class;
            w.status = Status::Armed { rearm: false };
        }
    }

    /// A notification arrived: removes the watches it fired.
    pub(crate) fn fire(&mut self, event: &WatchEvent<'_>) {
        self.remove_where(|table, w| {
            matches!(w.status, Status::Armed { .. })
                && table.path(w) == event.path
                && w.class.is_fired_by(event.kind)
        });
    }

    /// The connection was lost: requests in flight set nothing we know of.
    pub(crate) fn drop_pending(&mut self) {
        self.remove_where(|_, w| !matches!(w.status, Status::Armed { .. }));
    }

    /// The session resumed on a new connection: every watch must go into a
    /// setWatches.
    pub(crate) fn mark_rearm(&mut self) {
        if !Self::KEEPS {
            return;
        }
        for w in self.watches.iter_mut() {
            if let Status::Armed { .. } = w.status {
                w.status = Status::Armed { rearm: true };
            }
        }
    }

    /// The session is gone, and its watches with it.
    pub(crate) fn clear(&mut self) {
        self.watches.clear();
        self.paths.clear();
    }

    /// Armed watches (for tests and introspection).
    pub(crate) fn armed(&self) -> impl Iterator<Item = (WatchClass, &str)> {
        self.watches
            .iter()
            .filter(|w| matches!(w.status, Status::Armed { .. }))
            .map(|w| (w.class, self.path(w)))
    }

    fn awaiting_rearm(&self) -> impl Iterator<Item = &Watch> {
        self.watches
            .iter()
            .filter(|w| w.status == Status::Armed { rearm: true })
    }

    /// Whether some watch still has to be re-armed.
    pub(crate) fn needs_rearm(&self) -> bool {
        Self::KEEPS && self.awaiting_rearm().next().is_some()
    }

    /// How many of the watches awaiting re-arming fit, in order, into a
    /// setWatches frame of at most `room` bytes; `Err` with the size the
    /// first one alone needs if even that does not fit.
    pub(crate) fn rearm_batch(&self, room: usize) -> Result<usize, EncodeError> {
        // Length prefix, header, relativeZxid, three list counts.
        const FIXED: usize = 4 + 8 + 8 + 3 * 4;
        let mut size = FIXED;
        let mut fit = 0;
        for w in self.awaiting_rearm() {
            size = size.saturating_add(4 + usize::from(w.len));
            if size > room {
                if fit == 0 {
                    return Err(EncodeError::BufferTooSmall {
                        needed: size,
                        capacity: room,
                    });
                }
                break;
            }
            fit += 1;
        }
        Ok(fit)
    }

    /// The first `count` watches awaiting re-arming, as setWatches lists.
    pub(crate) fn batch(&self, count: usize) -> Batch<'_, N, BYTES> {
        Batch { table: self, count }
    }

    /// The first `count` watches awaiting re-arming went out.
    pub(crate) fn rearmed(&mut self, count: usize) {
        let mut left = count;
        for w in self.watches.iter_mut() {
            if left == 0 {
                break;
            }
            if w.status == (Status::Armed { rearm: true }) {
                w.status = Status::Armed { rearm: false };
                left -= 1;
            }
        }
    }
}

/// A prefix of the watches awaiting re-arming, split by class.
pub(crate) struct Batch<'t, const N: usize, const BYTES: usize> {
    table: &'t WatchTable<N, BYTES>,
    count: usize,
}

impl<const N: usize, const BYTES: usize> WatchLists for Batch<'_, N, BYTES> {
    fn each(
        &self,
        class: WatchClass,
        f: &mut dyn FnMut(&str) -> Result<(), EncodeError>,
    ) -> Result<(), EncodeError> {
        self.table
            .awaiting_rearm()
            .take(self.count)
            .filter(|w| w.class == class)
            .try_for_each(|w| f(self.table.path(w)))
    }
}
