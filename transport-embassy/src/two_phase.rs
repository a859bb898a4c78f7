//! Two-phase commit on the driver: a site that reads the transaction,
//! votes and learns the outcome.

use herdless_core::two_phase::{Outcome, TwoPhase, TxEvent, Variant, Vote};

use crate::error::Error;
use crate::handle::Handle;
use crate::transport::Transport;

impl<
        T: Transport,
        const K: usize,
        const WATCHES: usize,
        const WATCH_BYTES: usize,
        const S: usize,
        const L: usize,
        const B: usize,
        const N: usize,
    > Handle<'_, '_, T, TwoPhase<S, L, B, N>, K, WATCHES, WATCH_BYTES>
{
    /// Takes part in the transaction as the site `name` and waits until
    /// its body is read (`Ok(None)`: read it with [`body`](Self::body),
    /// then [`vote`](Self::vote)), or until the outcome is known
    /// (`Ok(Some(outcome))`: a site that comes after the decision learns
    /// it at once and has nothing to vote on). Events of an earlier
    /// attempt still unread (one that failed) are dropped.
    pub async fn participate(
        &mut self,
        name: &str,
        variant: Variant,
    ) -> Result<Option<Outcome>, Error> {
        self.forget_past_rounds(TwoPhase::is_idle)?;
        self.recipe()?.participate(name, variant)?;
        loop {
            match self.next_event().await? {
                TxEvent::Transaction => return Ok(None),
                TxEvent::Decided(outcome) => return Ok(Some(outcome)),
                TxEvent::Failed(e) => return Err(Error::Recipe(e)),
                _ => continue,
            }
        }
    }

    /// The transaction body, once read.
    pub fn body(&mut self) -> Option<&[u8]> {
        self.recipe().ok()?.body()
    }

    /// Votes and waits until the vote is written, or the outcome is decided
    /// meanwhile (then [`outcome`](Self::outcome) returns at once).
    pub async fn vote(&mut self, vote: Vote) -> Result<(), Error> {
        self.recipe()?.vote(vote)?;
        loop {
            match self.next_event().await? {
                TxEvent::Voted | TxEvent::Decided(_) => return Ok(()),
                TxEvent::Failed(e) => return Err(Error::Recipe(e)),
                _ => continue,
            }
        }
    }

    /// Waits for the outcome (recorded in the transaction's `decision`
    /// node, so every participant learns the same one). Cancel-safe.
    pub async fn outcome(&mut self) -> Result<Outcome, Error> {
        loop {
            if let Some(outcome) = self.recipe()?.decision() {
                return Ok(outcome);
            }
            if let TxEvent::Failed(e) = self.next_event().await? {
                return Err(Error::Recipe(e));
            }
        }
    }
}
