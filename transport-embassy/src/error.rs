//! What can go wrong: errors of a call, and faults the driver recovers from.

use core::fmt;

use embedded_io_async::ErrorKind;
use herdless_core::wire::{EncodeError, FrameError, SendError, SessionError, State};

/// Why a call on the driver or a recipe handle failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum Error {
    /// The session is over for good (closed, expired without renewal, or
    /// credentials refused) and the call's outcome cannot come any more.
    SessionOver(State),
    /// The recipe table is full: raise the driver's `K`.
    TooManyRecipes,
    /// The [`RecipeId`](crate::RecipeId) does not name a recipe of this
    /// driver.
    UnknownRecipe,
    /// A recipe refused the call or failed: the core's error, unchanged.
    Recipe(herdless_core::Error),
    /// The lock was not acquired (busy, timed out or cancelled).
    NotAcquired,
    /// The lock, leadership or a place inside a double barrier was lost
    /// while the call waited.
    Lost,
    /// Someone asked this revocable lock's holder to release.
    RevocationRequested,
    /// The connection was lost while leading: leadership is in doubt
    /// until the session is back (or lost).
    Suspended,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::SessionOver(state) => write!(f, "the ZooKeeper session is over ({state:?})"),
            Error::TooManyRecipes => f.write_str("the driver's recipe table is full"),
            Error::UnknownRecipe => f.write_str("no such recipe on this driver"),
            Error::Recipe(e) => write!(f, "{e}"),
            Error::NotAcquired => f.write_str("not acquired"),
            Error::Lost => f.write_str("lost while waiting"),
            Error::RevocationRequested => f.write_str("revocation requested"),
            Error::Suspended => f.write_str("connection lost: leadership in doubt"),
        }
    }
}

impl core::error::Error for Error {}

impl From<herdless_core::Error> for Error {
    fn from(e: herdless_core::Error) -> Self {
        Error::Recipe(e)
    }
}

/// Something that went wrong on a connection and that the driver recovered
/// from by itself (by dropping the connection and resuming the session on
/// the next one): kept for inspection through
/// [`Zk::last_fault`](crate::Zk::last_fault) and logged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum Fault {
    /// Opening a connection failed.
    Connect(ErrorKind),
    /// A read or write failed.
    Io(ErrorKind),
    /// The server closed the connection.
    ClosedByServer,
    /// The server sent a frame the driver refuses (negative or oversize
    /// length).
    Frame(FrameError),
    /// The server sent something the session cannot accept (malformed or
    /// truncated frame, a reply out of order, ...).
    Session(SessionError),
    /// A request of a recipe could not be sent; the recipe was answered
    /// with an error.
    Send(SendError),
    /// One of the session's own frames did not fit the transmit buffer.
    Encode(EncodeError),
}
