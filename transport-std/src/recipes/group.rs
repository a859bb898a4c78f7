//! Group membership on tokio, the observer's side: who is in a group, and a
//! stream of who joined and left.

use std::collections::BTreeSet;
use std::fmt;
use std::sync::Arc;

use herdless_core::members::{Observer as CoreObserver, ObserverEvent};
use tokio::sync::watch;
use tracing::warn;

use super::observed::{next_news, Observed};
use super::read_failure::ReadFailure;
use crate::driver::{self, Counters, DriverHandle};
use crate::{Connection, Error, GroupMember};

/// Most members a [`GroupObserver`] follows: in a larger group it follows
/// the first in name order (see [`GroupObserver::is_complete`]).
pub const MAX_MEMBERS: usize = 1024;

/// Longest member name, in bytes, a [`GroupObserver`] follows, and that
/// [`GroupMember::join`] and [`register`] accept: a longer name written
/// by another client is not followed (see [`GroupObserver::is_complete`]).
pub const MAX_NAME: usize = 128;

type Core = CoreObserver<MAX_MEMBERS, MAX_NAME, 256>;

/// The members of `group` now, in name order (empty if the group does not
/// exist). One round trip.
pub async fn members(conn: &impl Connection, group: &str) -> Result<Vec<String>, Error> {
    herdless_core::path::validate(group)?;
    let source = conn.source();
    let listed = source.across(None, |backend| async move { backend.list(group).await });
    let mut names = listed.await?.unwrap_or_default();
    names.sort();
    Ok(names)
}

impl Observed for Snapshot {
    /// Always: an empty listing is no news to a caller, so there is no
    /// need to tell the first read from the empty start.
    fn known(&self) -> bool {
        true
    }

    fn failure(&self) -> &ReadFailure {
        &self.failure
    }
}

/// A change of a group's members.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MembershipChange {
    /// Names that joined, in name order.
    pub joined: Vec<String>,
    /// Names that left, in name order.
    pub left: Vec<String>,
}

#[derive(Clone, Debug, Default)]
struct Snapshot {
    members: BTreeSet<String>,
    /// Whether every member is followed: none beyond [`MAX_MEMBERS`] or
    /// with a name over [`MAX_NAME`].
    complete: bool,
    failure: ReadFailure,
}

/// Follows the members of a group.
///
/// A listing the server refuses (the group's ACL denies this client, say)
/// is reported by [`changed`](GroupObserver::changed) as an error rather
/// than waited out; the listing is tried again on the next reconnect.
///
/// ```no_run
/// # async fn run(client: herdless_std::Client) -> Result<(), herdless_std::Error> {
/// use herdless_std::group::GroupObserver;
///
/// let mut group = GroupObserver::start(&client, "/fleet/gateways")?;
/// loop {
///     let change = group.changed().await?;
///     println!("joined {:?}, left {:?}; now {:?}", change.joined, change.left, group.members());
/// }
/// # }
/// ```
pub struct GroupObserver {
    handle: DriverHandle<Core>,
    snapshot: watch::Receiver<Snapshot>,
    seen: BTreeSet<String>,
    /// Listing failures reported so far (see [`ReadFailure`]).
    reported: u64,
    group: String,
}

/// The observer's name before the observer roles were named alike.
#[deprecated(note = "renamed `GroupObserver`")]
pub type GroupWatch = GroupObserver;

impl fmt::Debug for GroupObserver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GroupObserver")
            .field("group", &self.group)
            .field("members", &self.snapshot.borrow().members)
            .finish()
    }
}

impl GroupObserver {
    /// Starts following `group` (which may not exist yet).
    pub fn start(conn: &impl Connection, group: &str) -> Result<GroupObserver, Error> {
        let mut core = Core::new(group)?;
        core.watch();
        let (tx, rx) = watch::channel(Snapshot {
            complete: true,
            ..Snapshot::default()
        });
        let name = group.to_owned();
        let on_event = move |core: &Core, event: ObserverEvent| match event {
            ObserverEvent::Changed { .. } | ObserverEvent::NoGroup | ObserverEvent::Current => {
                tx.send_modify(|s| {
                    s.members = core.members().map(str::to_owned).collect();
                    s.complete = core.is_complete();
                    s.failure.clear();
                });
            }
            ObserverEvent::Overflow { count } => {
                warn!(
                    group = %name,
                    count,
                    max_members = MAX_MEMBERS,
                    max_name = MAX_NAME,
                    "not every member is followed: too many, or names too long"
                );
            }
            ObserverEvent::Failed(e) => {
                warn!(group = %name, error = %e, "listing failed");
                tx.send_modify(|s| s.failure.fail(e.into()));
            }
            _ => {}
        };
        let handle = driver::spawn_on(
            conn.source(),
            core,
            Arc::new(Counters::default()),
            on_event,
            |_: &Core| true,
        );
        Ok(GroupObserver {
            handle,
            snapshot: rx,
            seen: BTreeSet::new(),
            reported: 0,
            group: group.to_owned(),
        })
    }

    /// The members as last read, in name order.
    pub fn members(&self) -> Vec<String> {
        self.snapshot.borrow().members.iter().cloned().collect()
    }

    /// Whether [`members`](Self::members) holds every member of the group
    /// as last read. It does not when the group has more than
    /// [`MAX_MEMBERS`] (the first in name order are followed), or members
    /// whose names are longer than [`MAX_NAME`] bytes, which another client
    /// may write: those are left out of `members` and of the changes, and a
    /// `tracing` warning says so at each listing.
    pub fn is_complete(&self) -> bool {
        self.snapshot.borrow().complete
    }

    /// Waits for the next change relative to what the previous call (or
    /// the start) returned, and returns it. The first call returns every
    /// current member as joined. Only members followed count (see
    /// [`is_complete`](Self::is_complete)). Fails with the error when a
    /// listing fails first (each failure once), and with
    /// [`Error::SessionEnded`] once the session is over for good (a plain
    /// client's session expired, or the [`Session`](crate::Session) closed).
    /// Cancel-safe.
    pub async fn changed(&mut self) -> Result<MembershipChange, Error> {
        let seen = &mut self.seen;
        let news = next_news(&mut self.snapshot, &mut self.reported, |snapshot| {
            let change = MembershipChange {
                joined: snapshot.members.difference(seen).cloned().collect(),
                left: seen.difference(&snapshot.members).cloned().collect(),
            };
            *seen = snapshot.members;
            let news = !change.joined.is_empty() || !change.left.is_empty();
            news.then_some(Ok(change))
        });
        self.handle.over().unless(news).await
    }
}

/// Registers `name` under the name-service directory `root` with its
/// `address` (the recipes page's name service): a [`GroupMember`] whose
/// data is the address, so the name disappears with its owner's session
/// and, on a [`Session`](crate::Session), comes back with the next one.
///
/// ```no_run
/// # async fn run(session: herdless_std::Session) -> Result<(), herdless_std::Error> {
/// use herdless_std::group::{lookup, register};
///
/// let _registration = register(&session, "/services", "billing", b"10.0.0.5:443").await?;
/// assert_eq!(lookup(&session, "/services", "billing").await?, Some(b"10.0.0.5:443".to_vec()));
/// # Ok(()) }
/// ```
pub async fn register(
    conn: &impl Connection,
    root: &str,
    name: &str,
    address: &[u8],
) -> Result<GroupMember, Error> {
    GroupMember::join(conn, root, name, address).await
}

/// Looks up a registered name: the data of `<root>/<name>`, if registered.
pub async fn lookup(
    conn: &impl Connection,
    root: &str,
    name: &str,
) -> Result<Option<Vec<u8>>, Error> {
    herdless_core::path::validate_name(name)?;
    let path = herdless_core::path::join::<1024>(root, name)?;
    let (path, source) = (path.as_str(), conn.source());
    let read = source.across(None, |backend| async move { backend.read(path).await });
    Ok(read.await?.map(|(data, _)| data))
}
