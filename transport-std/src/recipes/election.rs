//! Leader election on tokio: `campaign().await` gives a [`Leadership`];
//! [`current_leader`] and [`watch_leader`] are for everyone else.
//!
//! ```no_run
//! use std::time::Duration;
//! use herdless_std::{Election, Session};
//!
//! # async fn serve() {}
//! # async fn run() -> Result<(), herdless_std::Error> {
//! let session = Session::connect("127.0.0.1:2181", Duration::from_secs(10)).await?;
//! let election = Election::new(&session, "/election/gateway")?.with_data(b"edge-7")?;
//! loop {
//!     let leadership = election.campaign().await?;
//!     tokio::select! {
//!         _ = serve() => {}
//!         // "Not sure I lead any more" comes at once, not at expiry.
//!         _ = leadership.suspended() => eprintln!("leadership in doubt: stop"),
//!     }
//!     leadership.resign().await?;
//! }
//! # }
//! ```

use std::fmt;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use futures::{Stream, StreamExt};
use herdless_core::election::{
    Acknowledgement, Election as CoreElection, ElectionEvent, ElectionState,
    Observer as CoreObserver, ObserverEvent, ACK_NAME,
};
use herdless_core::naming::{Flavour, Guid};
use tokio::sync::watch;
use tokio::time::Instant as TokioInstant;
use tracing::{info, warn};

use super::observed::{next_news, Observed};
use super::read_failure::ReadFailure;
use crate::driver::channel;
use crate::driver::hold::{presumed_lost_after, Hold, Standing};
use crate::driver::own_node::OwnNode;
use crate::driver::undo::Undo;
use crate::driver::{self, Counters, DriverHandle, Source};
use crate::fence::Fenced;
use crate::{Connection, Error};

/// Longest path (directory and candidate node) an election handles.
pub const MAX_PATH: usize = 256;

/// Most bytes of acknowledgement an election handles: the leader's node
/// name, a newline and the candidate's data (so the data may be up to
/// about 940 bytes).
pub const MAX_ACK: usize = 1024;

type Core = CoreElection<MAX_PATH, MAX_ACK>;
type CoreWatch = CoreObserver<MAX_PATH, MAX_ACK>;

/// Where a leadership stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LeaderState {
    /// Leading, connection up: do the leader's work.
    Leading,
    /// Leading when the connection dropped: not sure it still leads. Pause
    /// the leader's work until it is `Leading` again (or `Lost`).
    Suspended,
    /// Lost: the session ended, was suspended longer than its timeout, or
    /// the node was deleted. Stop at once.
    Lost,
    /// Resigned by this handle.
    Resigned,
}

/// Who leads an election, as the acknowledgement node says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Leader {
    /// The leader's candidate node name (under the election directory).
    pub node: String,
    /// The leader's data (what it campaigned with).
    pub data: Vec<u8>,
}

impl Leader {
    fn from_ack(ack: Acknowledgement<'_>) -> Leader {
        Leader {
            node: ack.node.to_owned(),
            data: ack.data.to_vec(),
        }
    }
}

/// A leader election in one ZooKeeper directory (the recipes page's).
///
/// Cheap to create and clone; each campaign runs the core state machine in
/// its own task over the shared client, so one session can campaign in
/// many elections.
#[derive(Clone)]
pub struct Election {
    source: Source,
    dir: String,
    flavour: Flavour,
    data: Vec<u8>,
    acl: herdless_core::Acl<'static>,
    counters: Arc<Counters>,
}

impl fmt::Debug for Election {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Election")
            .field("dir", &self.dir)
            .field("flavour", &self.flavour)
            .finish()
    }
}

impl Election {
    /// An election in `dir` (created with its ancestors when first needed),
    /// with candidate nodes named as the recipes page does (`<guid>-n_`).
    ///
    /// On a [`Session`](crate::Session), a campaign whose session expires
    /// while it waits volunteers again on the next session by itself.
    ///
    /// ```no_run
    /// # async fn run(client: herdless_std::Client) -> Result<(), herdless_std::Error> {
    /// let election = herdless_std::Election::new(&client, "/election/gateway")?;
    /// # Ok(()) }
    /// ```
    pub fn new(conn: &impl Connection, dir: &str) -> Result<Election, Error> {
        Self::with_flavour(conn, dir, Flavour::Recipes)
    }

    /// An election whose candidate nodes are named in `flavour`
    /// (`_c_<uuid>-latch-` beside Curator's `LeaderLatch`, `<hex>__lock__`
    /// beside Kazoo's `Election`). Candidates of every flavour are
    /// recognised whichever one this writes.
    ///
    /// ```no_run
    /// # async fn run(client: herdless_std::Client) -> Result<(), herdless_std::Error> {
    /// use herdless_std::Flavour;
    /// let election = herdless_std::Election::with_flavour(&client, "/latch", Flavour::Curator)?;
    /// # Ok(()) }
    /// ```
    pub fn with_flavour(
        conn: &impl Connection,
        dir: &str,
        flavour: Flavour,
    ) -> Result<Election, Error> {
        Core::with_flavour(dir, flavour)?;
        Ok(Election {
            source: conn.source(),
            dir: dir.to_owned(),
            flavour,
            data: Vec::new(),
            acl: conn.acl(),
            counters: Arc::default(),
        })
    }

    /// Sets the data this candidate campaigns with (its participant id, an
    /// address): it is the candidate node's data and, once leading, part of
    /// the acknowledgement others read with [`current_leader`].
    ///
    /// ```no_run
    /// # async fn run(client: herdless_std::Client) -> Result<(), herdless_std::Error> {
    /// let election = herdless_std::Election::new(&client, "/e")?.with_data(b"10.0.0.7:8080")?;
    /// # Ok(()) }
    /// ```
    pub fn with_data(mut self, data: &[u8]) -> Result<Election, Error> {
        // Checked now, with a GUID of the real length, rather than at the
        // first campaign.
        let mut probe = Core::with_flavour(&self.dir, self.flavour)?;
        probe.campaign(Guid::default(), data)?;
        self.data = data.to_vec();
        Ok(self)
    }

    /// The election directory.
    ///
    /// ```no_run
    /// # async fn run(client: herdless_std::Client) -> Result<(), herdless_std::Error> {
    /// let election = herdless_std::Election::new(&client, "/e")?;
    /// assert_eq!(election.dir(), "/e");
    /// # Ok(()) }
    /// ```
    pub fn dir(&self) -> &str {
        &self.dir
    }

    /// Watch notifications received by this election's campaigns so far.
    ///
    /// ```no_run
    /// # async fn run(client: herdless_std::Client) -> Result<(), herdless_std::Error> {
    /// let election = herdless_std::Election::new(&client, "/e")?;
    /// assert_eq!(election.notifications(), 0);
    /// # Ok(()) }
    /// ```
    pub fn notifications(&self) -> u64 {
        self.counters.notifications.load(Ordering::Relaxed)
    }

    /// Requests sent by this election's campaigns so far.
    ///
    /// ```no_run
    /// # async fn run(client: herdless_std::Client) -> Result<(), herdless_std::Error> {
    /// let election = herdless_std::Election::new(&client, "/e")?;
    /// assert_eq!(election.requests_sent(), 0);
    /// # Ok(()) }
    /// ```
    pub fn requests_sent(&self) -> u64 {
        self.counters.requests.load(Ordering::Relaxed)
    }

    /// Volunteers and waits until this candidate leads: its node is the
    /// lowest and belongs to the current session. The acknowledgement
    /// naming it is sent as it returns, not waited for: [`current_leader`]
    /// on another session may name the previous leader (or none) for a
    /// round trip.
    ///
    /// Cancel-safe: if the future is dropped (say under
    /// `tokio::time::timeout`), the candidate resigns in the background and
    /// its node is deleted, retried across connection losses.
    ///
    /// ```no_run
    /// # async fn run(election: herdless_std::Election) -> Result<(), herdless_std::Error> {
    /// let leadership = election.campaign().await?;
    /// println!("leading with {}", leadership.node_path());
    /// # Ok(()) }
    /// ```
    pub async fn campaign(&self) -> Result<Leadership, Error> {
        match self.campaign_until(None).await? {
            Some(leadership) => Ok(leadership),
            // Only a deadline gives up without an error.
            None => Err(Error::InvalidState),
        }
    }

    /// Volunteers for at most `timeout`; `None` if it passed first, once
    /// this candidate's node is deleted. The listing that follows the
    /// create decides however long the create took: a vacant election is
    /// led even with a zero timeout. Cancel-safe like
    /// [`campaign`](Election::campaign).
    ///
    /// ```no_run
    /// # async fn run(election: herdless_std::Election) -> Result<(), herdless_std::Error> {
    /// use std::time::Duration;
    /// match election.campaign_timeout(Duration::from_secs(5)).await? {
    ///     Some(leadership) => leadership.resign().await?,
    ///     None => println!("someone else leads"),
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn campaign_timeout(&self, timeout: Duration) -> Result<Option<Leadership>, Error> {
        self.campaign_until(driver::deadline_after(timeout)).await
    }

    async fn campaign_until(
        &self,
        deadline: Option<TokioInstant>,
    ) -> Result<Option<Leadership>, Error> {
        // On a renewing session, volunteer again on the next one.
        self.source.across(deadline, |_| self.run(deadline)).await
    }

    /// The core candidate a campaign drives, on the heap: built in the
    /// campaign's future, a `Core` (3,208 B) would take its room there for
    /// as long as the candidate waits, although it moves to the driver
    /// before the first await.
    fn core(&self, deadline: Option<TokioInstant>) -> Result<Box<Core>, Error> {
        let mut core: Core = Core::with_flavour(&self.dir, self.flavour)?.with_acl(self.acl);
        let client = self.source.backend();
        // Suspended for that long, the session may have expired on the
        // server, and another candidate may lead: lost, whether the expiry
        // is heard or not (CURATOR-220).
        let after = presumed_lost_after(client.session_timeout());
        core.set_lost_after(Some(u64::try_from(after.as_millis()).unwrap_or(u64::MAX)));
        let guid = client.guid();
        match deadline {
            None => core.campaign(guid, &self.data)?,
            Some(at) => {
                core.campaign_until(guid, &self.data, driver::deadline_at_start_until(at))?
            }
        }
        Ok(Box::new(core))
    }

    async fn run(&self, deadline: Option<TokioInstant>) -> Result<Option<Leadership>, Error> {
        let core = self.core(deadline)?;
        let (events_tx, mut events) = channel::unbounded();
        let (state_tx, state) = watch::channel(LeaderState::Leading);
        let own_node = OwnNode::default();
        let recorded = own_node.clone();
        let on_event = move |c: &Core, event: ElectionEvent| {
            if event == ElectionEvent::Leading {
                recorded.record(c.own_path().map(str::to_owned));
            }
            let next = match event {
                ElectionEvent::Leading | ElectionEvent::Resumed => Some(LeaderState::Leading),
                ElectionEvent::Suspended => Some(LeaderState::Suspended),
                ElectionEvent::Lost => Some(LeaderState::Lost),
                ElectionEvent::Resigned => Some(LeaderState::Resigned),
                _ => None,
            };
            // `Resigned` comes only after `resign` took the leadership, and
            // with it every reader of the state: what it replaces is never
            // read again.
            if let Some(next) = next {
                state_tx.send_replace(next);
            }
            let _ = events_tx.unbounded_send(event);
        };
        let handle = driver::spawn_on(
            self.source.clone(),
            core,
            self.counters.clone(),
            on_event,
            |c: &Core| c.state() == ElectionState::Idle,
        );
        // Until a leadership exists, dropping this future resigns.
        let undo = Undo::new(&handle, |c: &mut Core| {
            let _ = c.resign();
        });
        loop {
            let Some(event) = events.next().await else {
                return Err(Error::DriverGone);
            };
            match event {
                ElectionEvent::Leading => {
                    undo.disarm();
                    let node_path = own_node.take()?;
                    info!(dir = %self.dir, node = %node_path, "leading");
                    let hold = Hold::new(
                        self.source.backend(),
                        node_path,
                        state,
                        handle,
                        |c: &mut Core| {
                            let _ = c.resign();
                        },
                        None,
                    );
                    return Ok(Some(Leadership { hold, events }));
                }
                ElectionEvent::TimedOut => return Ok(None),
                ElectionEvent::Failed(e) => return Err(e.into()),
                _ => {}
            }
        }
    }
}

/// This candidate's leadership. Dropping it resigns in the background; call
/// [`resign`](Leadership::resign) to wait until the node and the
/// acknowledgement are deleted.
#[must_use = "dropping the leadership resigns at once"]
pub struct Leadership {
    hold: Hold<Core, LeaderState>,
    events: channel::Receiver<ElectionEvent>,
}

impl Standing for LeaderState {
    const HELD: Self = LeaderState::Leading;
    const SUSPENDED: Self = LeaderState::Suspended;
    const LOST: Self = LeaderState::Lost;
}

impl fmt::Debug for Leadership {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Leadership")
            .field("node_path", &self.node_path())
            .field("state", &self.state())
            .finish()
    }
}

impl Leadership {
    /// The full path of this leader's candidate node: a `check` on it fences
    /// writes on still leading (see [`fenced`](Leadership::fenced)).
    ///
    /// ```no_run
    /// # async fn run(election: herdless_std::Election) -> Result<(), herdless_std::Error> {
    /// let leadership = election.campaign().await?;
    /// assert!(leadership.node_path().starts_with("/election/gateway/"));
    /// # Ok(()) }
    /// ```
    pub fn node_path(&self) -> &str {
        self.hold.node_path()
    }

    /// Where the leadership stands now.
    ///
    /// ```no_run
    /// # async fn run(election: herdless_std::Election) -> Result<(), herdless_std::Error> {
    /// use herdless_std::election::LeaderState;
    /// let leadership = election.campaign().await?;
    /// assert_eq!(leadership.state(), LeaderState::Leading);
    /// # Ok(()) }
    /// ```
    pub fn state(&self) -> LeaderState {
        self.hold.now()
    }

    /// Whether this candidate leads with the connection up: the only state
    /// in which to do the leader's work.
    ///
    /// ```no_run
    /// # async fn run(election: herdless_std::Election) -> Result<(), herdless_std::Error> {
    /// let leadership = election.campaign().await?;
    /// while leadership.is_leading() { /* one unit of the leader's work */ }
    /// # Ok(()) }
    /// ```
    pub fn is_leading(&self) -> bool {
        self.state() == LeaderState::Leading
    }

    /// Resolves when leadership is lost (the session ended, was suspended
    /// longer than its timeout, or the node went). Cancel-safe.
    ///
    /// ```no_run
    /// # async fn run(election: herdless_std::Election) -> Result<(), herdless_std::Error> {
    /// let leadership = election.campaign().await?;
    /// leadership.lost().await;
    /// # Ok(()) }
    /// ```
    pub async fn lost(&self) {
        self.hold.lost().await
    }

    /// Resolves as soon as leadership is in doubt (`Suspended`: the
    /// connection dropped) or lost. Cancel-safe.
    ///
    /// ```no_run
    /// # async fn run(election: herdless_std::Election) -> Result<(), herdless_std::Error> {
    /// let leadership = election.campaign().await?;
    /// leadership.suspended().await;
    /// # Ok(()) }
    /// ```
    pub async fn suspended(&self) {
        self.hold.suspended().await
    }

    /// Resolves once leadership is not in doubt, with where it stands: at
    /// once unless [`Suspended`](LeaderState::Suspended); after a dropped
    /// connection, `Leading` when the reconnected session found the
    /// candidate's node still there, or `Lost`. Cancel-safe.
    ///
    /// ```no_run
    /// # async fn run(election: herdless_std::Election) -> Result<(), herdless_std::Error> {
    /// use herdless_std::election::LeaderState;
    ///
    /// let leadership = election.campaign().await?;
    /// leadership.suspended().await; // stop acting as the leader
    /// if leadership.settled().await == LeaderState::Leading {
    ///     // the same session came back with the node: lead on
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn settled(&self) -> LeaderState {
        self.hold.settled().await
    }

    /// A batch of writes that lands only while this leader's candidate node
    /// exists, that is, only while it leads: see [`Fenced`]. Fails at once
    /// with [`Error::Fenced`] if this handle already knows leadership is
    /// gone.
    ///
    /// ```no_run
    /// # async fn run(election: herdless_std::Election) -> Result<(), herdless_std::Error> {
    /// let leadership = election.campaign().await?;
    /// let mut batch = leadership.fenced();
    /// batch.set_data("/config/primary", b"edge-7", None)?;
    /// batch.commit().await?;
    /// # Ok(()) }
    /// ```
    pub fn fenced(&self) -> Fenced {
        self.hold.fenced()
    }

    /// Resigns and waits until the acknowledgement and the candidate node
    /// are confirmed deleted (retried across connection losses until
    /// confirmed or the session is gone). If this future is dropped, the
    /// resignation still completes in the background.
    ///
    /// ```no_run
    /// # async fn run(election: herdless_std::Election) -> Result<(), herdless_std::Error> {
    /// let leadership = election.campaign().await?;
    /// leadership.resign().await?;
    /// # Ok(()) }
    /// ```
    pub async fn resign(mut self) -> Result<(), Error> {
        if !self.hold.give_up() {
            return Ok(());
        }
        loop {
            match self.events.next().await {
                Some(ElectionEvent::Resigned) => {
                    info!(node = %self.node_path(), "resigned");
                    return Ok(());
                }
                Some(ElectionEvent::Failed(e)) => return Err(e.into()),
                Some(_) => {}
                // The driver only stops once the candidate is idle (after a
                // loss, say, when there was nothing left to resign).
                None => return Ok(()),
            }
        }
    }
}

/// Who leads the election in `dir` now, as its acknowledgement node says:
/// one read, no watch. `None` while nobody leads (or the node holds
/// something else than an acknowledgement).
///
/// ```no_run
/// # async fn run(client: herdless_std::Client) -> Result<(), herdless_std::Error> {
/// if let Some(leader) = herdless_std::election::current_leader(&client, "/election/gateway").await? {
///     println!("{} leads", String::from_utf8_lossy(&leader.data));
/// }
/// # Ok(()) }
/// ```
pub async fn current_leader(conn: &impl Connection, dir: &str) -> Result<Option<Leader>, Error> {
    herdless_core::path::validate(dir)?;
    let path = herdless_core::path::join::<MAX_PATH>(dir, ACK_NAME)?;
    let path = path.as_str();
    let source = conn.source();
    let read = source.across(None, |backend| async move { backend.read(path).await });
    let Some((data, _)) = read.await? else {
        return Ok(None);
    };
    let leader = Acknowledgement::parse(&data).map(Leader::from_ack);
    if leader.is_none() {
        warn!(%path, "not an acknowledgement: ignored");
    }
    Ok(leader)
}

#[derive(Clone, Debug, Default)]
struct Snapshot {
    leader: Option<Leader>,
    /// Whether the acknowledgement was read at least once.
    known: bool,
    failure: ReadFailure,
}

impl Observed for Snapshot {
    fn known(&self) -> bool {
        self.known
    }

    fn failure(&self) -> &ReadFailure {
        &self.failure
    }
}

impl Snapshot {
    /// The acknowledgement was read: `leader` leads.
    fn read(&mut self, leader: Option<Leader>) {
        self.leader = leader;
        self.known = true;
        self.failure.clear();
    }
}

/// Follows who leads an election: one watch on its acknowledgement node,
/// one notification per change of leader, however many candidates there
/// are. Start it with [`watch_leader`].
///
/// A read the server refuses (the node's ACL denies this client, say) is
/// reported by [`changed`](LeaderObserver::changed) as an error rather than
/// waited out; the watch is tried again on the next reconnect.
pub struct LeaderObserver {
    handle: DriverHandle<CoreWatch>,
    snapshot: watch::Receiver<Snapshot>,
    seen: Option<Option<Leader>>,
    /// Read failures reported so far (see [`ReadFailure`]).
    reported: u64,
    dir: String,
}

/// The observer's name before the observer roles were named alike.
#[deprecated(note = "renamed `LeaderObserver`")]
pub type LeaderWatch = LeaderObserver;

impl fmt::Debug for LeaderObserver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LeaderObserver")
            .field("dir", &self.dir)
            .field("leader", &self.snapshot.borrow().leader)
            .finish()
    }
}

/// Starts following who leads the election in `dir` (which may not exist
/// yet).
///
/// ```no_run
/// # async fn run(client: herdless_std::Client) -> Result<(), herdless_std::Error> {
/// let mut leaders = herdless_std::election::watch_leader(&client, "/election/gateway")?;
/// loop {
///     match leaders.changed().await? {
///         Some(leader) => println!("now led by {}", String::from_utf8_lossy(&leader.data)),
///         None => println!("nobody leads"),
///     }
/// }
/// # }
/// ```
pub fn watch_leader(conn: &impl Connection, dir: &str) -> Result<LeaderObserver, Error> {
    let mut core = CoreWatch::new(dir)?;
    core.watch();
    let (tx, rx) = watch::channel(Snapshot::default());
    let name = dir.to_owned();
    let on_event = move |core: &CoreWatch, event: ObserverEvent| match event {
        ObserverEvent::Changed => {
            let leader = core.leader().map(Leader::from_ack);
            tx.send_modify(|s| s.read(leader));
        }
        ObserverEvent::Unreadable { len } => {
            warn!(dir = %name, len = ?len, "the acknowledgement is unreadable");
            tx.send_modify(|s| s.read(None));
        }
        ObserverEvent::Failed(e) => {
            warn!(dir = %name, error = %e, "reading the leader failed");
            tx.send_modify(|s| s.failure.fail(e.into()));
        }
        _ => {}
    };
    let handle = driver::spawn_on(
        conn.source(),
        core,
        Arc::new(Counters::default()),
        on_event,
        |_: &CoreWatch| true,
    );
    Ok(LeaderObserver {
        handle,
        snapshot: rx,
        seen: None,
        reported: 0,
        dir: dir.to_owned(),
    })
}

impl LeaderObserver {
    /// The leader as last read (`None`: nobody leads, or not read yet).
    ///
    /// ```no_run
    /// # async fn run(client: herdless_std::Client) -> Result<(), herdless_std::Error> {
    /// let leaders = herdless_std::election::watch_leader(&client, "/e")?;
    /// let now = leaders.current();
    /// # Ok(()) }
    /// ```
    pub fn current(&self) -> Option<Leader> {
        self.snapshot.borrow().leader.clone()
    }

    /// Waits until the leader differs from what the previous call returned
    /// (the first call returns the first read) and returns it. Changes in
    /// between may be skipped: the answer is always the latest. Fails with
    /// the error when a read fails first (each failure once), and with
    /// [`Error::SessionEnded`] once the session is over for good (a plain
    /// client's session expired, or the [`Session`](crate::Session) closed).
    /// Cancel-safe.
    ///
    /// ```no_run
    /// # async fn run(client: herdless_std::Client) -> Result<(), herdless_std::Error> {
    /// let mut leaders = herdless_std::election::watch_leader(&client, "/e")?;
    /// let first = leaders.changed().await?;
    /// let next = leaders.changed().await?;
    /// assert_ne!(first, next);
    /// # Ok(()) }
    /// ```
    pub async fn changed(&mut self) -> Result<Option<Leader>, Error> {
        let seen = &mut self.seen;
        let news = next_news(&mut self.snapshot, &mut self.reported, |snapshot| {
            if seen.as_ref() == Some(&snapshot.leader) {
                return None;
            }
            *seen = Some(snapshot.leader.clone());
            Some(Ok(snapshot.leader))
        });
        self.handle.over().unless(news).await
    }

    /// The changes as a stream: each item is the leader after a change.
    /// Read failures are logged and skipped (the stream goes on at the
    /// next read); it ends with the session (a plain client's session
    /// expired, or the [`Session`](crate::Session) closed).
    ///
    /// ```no_run
    /// # async fn run(client: herdless_std::Client) -> Result<(), herdless_std::Error> {
    /// use futures::StreamExt;
    /// let mut changes = herdless_std::election::watch_leader(&client, "/e")?.into_stream();
    /// while let Some(leader) = changes.next().await {
    ///     println!("{leader:?}");
    /// }
    /// # Ok(()) }
    /// ```
    pub fn into_stream(self) -> Pin<Box<dyn Stream<Item = Option<Leader>> + Send>> {
        Box::pin(futures::stream::unfold(self, |mut watch| async move {
            loop {
                match watch.changed().await {
                    Ok(leader) => return Some((leader, watch)),
                    Err(Error::SessionEnded | Error::DriverGone) => return None,
                    Err(_) => continue,
                }
            }
        }))
    }
}

#[cfg(test)]
mod tests {
    #![allow(unreachable_code, unused_variables, clippy::diverging_sub_expression)]
    use super::{Core, Election};
    use crate::recipes::future_size::size_of_output;

    /// A waiting candidate's future holds handles, not the core candidate:
    /// it lives on the heap with its driver, and a copy of it left in the
    /// future (built there, then moved out) was 3,208 B more per candidate
    /// for as long as it waited.
    #[test]
    fn a_waiting_campaign_does_not_hold_the_core_candidate() {
        let campaign = size_of_output(|| {
            let election: &Election = unreachable!("never called: only its type is used");
            election.campaign()
        });
        let core = std::mem::size_of::<Core>();
        assert!(
            campaign < core,
            "a waiting campaign's future is {campaign} B, the core candidate {core} B"
        );
    }
}
