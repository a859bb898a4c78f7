//! Two-phase commit on tokio: a coordinator and its sites.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use herdless_core::two_phase::TwoPhase;
pub use herdless_core::two_phase::{Outcome, TxEvent, Variant, Vote};
use tokio::sync::watch;
use tracing::info;

use crate::driver::session_over::SessionOver;
use crate::driver::{self, Counters, DriverHandle};
use crate::{Connection, Error};

/// Most sites one transaction can have.
pub const MAX_SITES: usize = 256;

/// Largest transaction body, in bytes (16 KiB).
pub const MAX_BODY: usize = 16 * 1024;

type Core = TwoPhase<MAX_SITES, 128, MAX_BODY, 512>;

/// What a participant knows, as the driver reports it.
#[derive(Clone, Debug, Default)]
struct Progress {
    started: bool,
    body: Option<Vec<u8>>,
    voted: bool,
    decided: Option<Outcome>,
    failed: Option<Error>,
}

fn spawn(conn: &impl Connection, core: Core) -> (DriverHandle<Core>, watch::Receiver<Progress>) {
    let (tx, rx) = watch::channel(Progress::default());
    let on_event = move |core: &Core, event: TxEvent| {
        tx.send_modify(|p| match event {
            TxEvent::Started => p.started = true,
            TxEvent::Transaction => p.body = core.body().map(<[u8]>::to_vec),
            TxEvent::Voted => p.voted = true,
            TxEvent::Decided(outcome) => {
                info!(tx = %core.tx(), ?outcome, "decided");
                p.decided = Some(outcome);
            }
            TxEvent::Failed(e) => p.failed = Some(e.into()),
            _ => {}
        });
    };
    let handle = driver::spawn_on(
        conn.source(),
        core,
        Arc::new(Counters::default()),
        on_event,
        |t: &Core| t.is_done(),
    );
    (handle, rx)
}

/// The progress once `until` holds, or the failure that came first (the
/// session's end among them).
async fn wait(
    over: SessionOver,
    progress: &mut watch::Receiver<Progress>,
    until: impl Fn(&Progress) -> bool,
) -> Result<Progress, Error> {
    let p = over
        .unless(async {
            progress
                .wait_for(|p| p.failed.is_some() || until(p))
                .await
                .map(|p| p.clone())
                .map_err(|_| Error::DriverGone)
        })
        .await?;
    match p.failed {
        Some(e) => Err(e),
        None => Ok(p),
    }
}

/// The coordinator of one transaction.
///
/// ```no_run
/// # async fn run(client: herdless_std::Client) -> Result<(), herdless_std::Error> {
/// use std::time::Duration;
/// use herdless_std::two_phase::{Coordinator, Outcome, Variant};
///
/// let variant = Variant::Coordinated { ephemeral_votes: true };
/// let coordinator = Coordinator::start(
///     &client, "/tx/transfer-42", b"move 10 from a to b",
///     &["bank-a", "bank-b"], variant, Duration::from_secs(30),
/// ).await?;
/// // ... tell the sites to join "/tx/transfer-42" ...
/// match coordinator.outcome().await? {
///     Outcome::Commit => println!("committed"),
///     Outcome::Abort => println!("aborted"),
/// }
/// # Ok(()) }
/// ```
pub struct Coordinator {
    handle: DriverHandle<Core>,
    progress: watch::Receiver<Progress>,
    tx: String,
}

impl fmt::Debug for Coordinator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Coordinator")
            .field("tx", &self.tx)
            .field("decided", &self.progress.borrow().decided)
            .finish()
    }
}

impl Coordinator {
    /// Creates the transaction node `tx` (with missing ancestors) holding
    /// `body`, for `sites`, and returns once sites can join. If no decision
    /// is reached within `deadline`, the coordinator decides `abort`.
    pub async fn start(
        conn: &impl Connection,
        tx: &str,
        body: &[u8],
        sites: &[&str],
        variant: Variant,
        deadline: Duration,
    ) -> Result<Coordinator, Error> {
        let mut core = Core::new(tx)?.with_acl(conn.acl());
        core.coordinate(
            body,
            sites,
            variant,
            Some(driver::deadline_at_start(deadline)),
        )?;
        let (handle, mut progress) = spawn(conn, core);
        wait(handle.over(), &mut progress, |p| {
            p.started || p.decided.is_some()
        })
        .await?;
        Ok(Coordinator {
            handle,
            progress,
            tx: tx.to_owned(),
        })
    }

    /// The transaction node.
    pub fn tx(&self) -> &str {
        &self.tx
    }

    /// The outcome, if decided.
    pub fn decided(&self) -> Option<Outcome> {
        self.progress.borrow().decided
    }

    /// Waits for the outcome. Cancel-safe.
    pub async fn outcome(&self) -> Result<Outcome, Error> {
        let mut progress = self.progress.clone();
        let p = wait(self.handle.over(), &mut progress, |p| p.decided.is_some()).await?;
        p.decided.ok_or(Error::DriverGone)
    }
}

/// One site of a transaction.
///
/// ```no_run
/// # async fn run(client: herdless_std::Client) -> Result<(), herdless_std::Error> {
/// use herdless_std::two_phase::{Outcome, Site, Variant, Vote};
///
/// let variant = Variant::Coordinated { ephemeral_votes: true };
/// let site = Site::join(&client, "/tx/transfer-42", "bank-a", variant).await?;
/// if site.decided().is_none() {
///     let can_commit = site.body().is_some_and(|body| !body.is_empty()); // process the body
///     site.vote(if can_commit { Vote::Commit } else { Vote::Abort }).await?;
/// }
/// let outcome = site.outcome().await?;
/// # let _ = outcome; Ok(()) }
/// ```
pub struct Site {
    handle: DriverHandle<Core>,
    progress: watch::Receiver<Progress>,
    body: Option<Vec<u8>>,
    name: String,
}

impl fmt::Debug for Site {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Site")
            .field("name", &self.name)
            .field("decided", &self.progress.borrow().decided)
            .finish()
    }
}

impl Site {
    /// Joins the transaction at `tx` as `name` and returns once its body is
    /// read, or once the outcome is known (a site that comes late, after
    /// the decision, learns it at once).
    ///
    /// `name` is not checked against the coordinator's list of sites: a
    /// name it did not list votes for nothing, and the transaction aborts
    /// at the coordinator's deadline for want of the listed site's vote.
    pub async fn join(
        conn: &impl Connection,
        tx: &str,
        name: &str,
        variant: Variant,
    ) -> Result<Site, Error> {
        let mut core = Core::new(tx)?.with_acl(conn.acl());
        core.participate(name, variant)?;
        let (handle, mut progress) = spawn(conn, core);
        let p = wait(handle.over(), &mut progress, |p| {
            p.body.is_some() || p.decided.is_some()
        })
        .await?;
        Ok(Site {
            handle,
            progress,
            body: p.body,
            name: name.to_owned(),
        })
    }

    /// The transaction body, or `None` if the site joined after the
    /// decision without reading it.
    pub fn body(&self) -> Option<&[u8]> {
        self.body.as_deref()
    }

    /// The outcome, if decided.
    pub fn decided(&self) -> Option<Outcome> {
        self.progress.borrow().decided
    }

    /// Votes and waits until the vote is written (or the outcome is decided
    /// meanwhile). Fails with [`Error::InvalidState`] after the decision or a
    /// second vote.
    pub async fn vote(&self, vote: Vote) -> Result<(), Error> {
        self.handle.call(move |t: &mut Core| t.vote(vote)).await??;
        let mut progress = self.progress.clone();
        wait(self.handle.over(), &mut progress, |p| {
            p.voted || p.decided.is_some()
        })
        .await?;
        Ok(())
    }

    /// Waits for the outcome. Cancel-safe.
    ///
    /// With [`Variant::Coordinated`], only the coordinator decides: if it
    /// dies before deciding, this waits until someone does (a new
    /// coordinator, or an operator creating `<tx>/decision` with `commit`
    /// or `abort`, which every participant adopts). Bound it with
    /// `tokio::time::timeout` where that matters.
    pub async fn outcome(&self) -> Result<Outcome, Error> {
        let mut progress = self.progress.clone();
        let p = wait(self.handle.over(), &mut progress, |p| p.decided.is_some()).await?;
        p.decided.ok_or(Error::DriverGone)
    }
}
