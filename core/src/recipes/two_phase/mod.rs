//! Two-phase commit (the recipes page's "Two-phased Commit").
//!
//! A coordinator creates the transaction node `<tx>` and, under it, one
//! vote node per site; each site reads the transaction and votes `commit`
//! or `abort` by writing its vote node; once every vote is in (or one
//! `abort`), the outcome is decided. Both variants the recipes page
//! discusses are here ([`Variant`]):
//!
//! * [`Variant::AllWatch`]: every site (and the coordinator) watches every
//!   vote and decides by itself: fast, but O(n²) notifications;
//!   a site that lists a vote node whose name is longer than its name
//!   capacity `K` cannot read that vote and counts it as `abort`;
//! * [`Variant::Coordinated`]: only the coordinator watches the votes; sites
//!   watch only the decision. Scales to large groups, one hop slower. With
//!   `ephemeral_votes`, each site creates its own vote node as an
//!   ephemeral node (the page's fix for failure detection): a site that
//!   crashes before the decision makes its node vanish, and that decides
//!   `abort` instead of leaving everyone waiting.
//!
//! # Layout and the decision record
//!
//! * `<tx>`: persistent, data = the transaction body. The coordinator
//!   creates it empty, creates the vote nodes, and only then writes the
//!   body, so a site that has read the body (data version 1) and lists the
//!   children sees every vote node.
//! * `<tx>/<site>`: the vote node; data empty until the site writes
//!   `commit` or `abort`. Any other content counts as `abort`: only an
//!   explicit `commit` commits.
//! * `<tx>/decision`: persistent, `commit` or `abort`, created once. Every
//!   decider creates it with its outcome; the first create wins and every
//!   participant adopts what it holds. Without this record, deciders could
//!   disagree (an ephemeral vote node vanishing after one site saw every
//!   `commit`), and a late site could not learn the outcome.
//!
//! The coordinator also has a deadline: a site that never shows up (or
//! never votes, in the variants without ephemeral votes) makes it decide
//! `abort` then, instead of a hang. A site whose ephemeral vote node died
//! with its session before the decision records `abort` itself once it has
//! a new session: it can never vote again, and the coordinator may never
//! have seen its node.
//!
//! A site learns of a transaction from someone else, and the server its
//! session reads from may not have applied the coordinator's create yet: a
//! site whose read finds no transaction node sends a `sync` and reads again
//! before it fails with [`Error::NoTransaction`].

mod machine;

pub use machine::TwoPhase;

/// Name of the decision node under the transaction node; no site may use it.
pub const DECISION: &str = "decision";

/// A site's vote.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Vote {
    /// The site can commit.
    Commit,
    /// The site cannot commit.
    Abort,
}

/// The outcome of a transaction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Outcome {
    /// Every site voted `commit`.
    Commit,
    /// Some site voted `abort`, crashed, or did not vote in time.
    Abort,
}

impl Outcome {
    /// The decision node's data.
    pub const fn as_bytes(self) -> &'static [u8] {
        match self {
            Outcome::Commit => b"commit",
            Outcome::Abort => b"abort",
        }
    }

    /// The outcome a decision node holds (anything but `commit` aborts).
    pub fn from_bytes(data: &[u8]) -> Outcome {
        if data == b"commit" {
            Outcome::Commit
        } else {
            Outcome::Abort
        }
    }
}

impl Vote {
    /// The vote node's data.
    pub const fn as_bytes(self) -> &'static [u8] {
        match self {
            Vote::Commit => b"commit",
            Vote::Abort => b"abort",
        }
    }
}

/// How votes travel (see the [module docs](self)).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Variant {
    /// Every participant watches every vote and decides.
    AllWatch,
    /// Only the coordinator watches votes and decides; sites watch the
    /// decision.
    Coordinated {
        /// Sites create their own vote nodes as ephemeral nodes, so a
        /// crashed site aborts the transaction.
        ephemeral_votes: bool,
    },
}

impl Variant {
    /// Whether the coordinator creates the vote nodes.
    pub const fn coordinator_creates_votes(self) -> bool {
        !matches!(
            self,
            Variant::Coordinated {
                ephemeral_votes: true
            }
        )
    }
}

/// What a participant tells the application.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum TxEvent {
    /// The coordinator's nodes exist and the body is written: sites can
    /// read it.
    Started,
    /// (Site) The transaction body is read ([`TwoPhase::body`]): process
    /// it and [`vote`](TwoPhase::vote).
    Transaction,
    /// (Site) The own vote is written.
    Voted,
    /// The outcome is decided (and recorded in `<tx>/decision`).
    Decided(Outcome),
    /// The participant failed; it is idle.
    Failed(Error),
}

/// Errors of this recipe: the one error type of every recipe.
pub use crate::Error;
