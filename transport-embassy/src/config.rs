//! A watched configuration value on the driver: the latest version, and
//! compare-and-set writes.

use herdless_core::config::{Config, ConfigEvent};
use herdless_core::Version;

use crate::error::Error;
use crate::handle::Handle;
use crate::transport::Transport;

/// How a write of a configuration value ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Written {
    /// It landed; the node's new data version.
    Updated {
        /// The version the write produced.
        version: i32,
    },
    /// It was refused: the version did not match (or the node existed,
    /// for a create, or no longer did, for a set). Nothing was written.
    Conflict,
    /// Its reply was lost with the connection and the node read back cannot say
    /// whether it landed: other writes moved it on first, or it holds this
    /// write's data, which an identical write by another client could have put
    /// there. It may or may not have landed. Read the value and decide
    /// (retrying a write that is not idempotent, such as a counter's
    /// increment, could apply it twice).
    Unknown,
}

impl<
        T: Transport,
        const K: usize,
        const WATCHES: usize,
        const WATCH_BYTES: usize,
        const D: usize,
        const N: usize,
    > Handle<'_, '_, T, Config<D, N>, K, WATCHES, WATCH_BYTES>
{
    /// Waits until the watcher reports a value (the first call starts the
    /// watch and gets the current one): `Some(version)`, with the data in
    /// [`value`](Self::value), or `None` when the node does not exist.
    /// Versions only grow; versions written faster than a round trip may
    /// be coalesced into the latest, as ZooKeeper's watches do.
    ///
    /// Cancel-safe. It passes over the outcomes of writes, so call it
    /// only while no [`set`](Self::set) or [`create`](Self::create) is
    /// waiting for its outcome.
    pub async fn changed(&mut self) -> Result<Option<i32>, Error> {
        self.recipe()?.watch();
        loop {
            match self.next_event().await? {
                ConfigEvent::Changed { version } => return Ok(Some(version)),
                ConfigEvent::Missing => return Ok(None),
                ConfigEvent::TooLarge { len, .. } => {
                    return Err(Error::Recipe(herdless_core::Error::TooLarge {
                        len,
                        capacity: D,
                    }))
                }
                ConfigEvent::Failed(e) => return Err(Error::Recipe(e)),
                _ => continue,
            }
        }
    }

    /// The latest value read, if the node exists and its data fits.
    pub fn value(&mut self) -> Option<&[u8]> {
        self.recipe().ok()?.value()
    }

    /// The version of the latest value read, if the node exists.
    pub fn version(&mut self) -> Option<i32> {
        self.recipe().ok()?.version()
    }

    /// Replaces the value if the node is at `version` and waits for the
    /// outcome. Value changes reported meanwhile are passed over: the
    /// latest stays readable through [`value`](Self::value).
    ///
    /// Not cancel-safe: a dropped call leaves the write going (its outcome
    /// is then passed over by the next write or `changed`).
    pub async fn set(&mut self, data: &[u8], version: Version) -> Result<Written, Error> {
        self.recipe()?.set(data, version)?;
        self.until_written().await
    }

    /// Creates the node (persistent) with `data`, and its missing
    /// ancestors, and waits for the outcome: [`Written::Conflict`] if it
    /// exists.
    pub async fn create(&mut self, data: &[u8]) -> Result<Written, Error> {
        self.recipe()?.create(data)?;
        self.until_written().await
    }

    async fn until_written(&mut self) -> Result<Written, Error> {
        loop {
            match self.next_event().await? {
                ConfigEvent::Updated { version } => return Ok(Written::Updated { version }),
                ConfigEvent::Conflict => return Ok(Written::Conflict),
                ConfigEvent::Unknown => return Ok(Written::Unknown),
                ConfigEvent::WriteFailed(e) => return Err(Error::Recipe(e)),
                _ => continue,
            }
        }
    }
}
