//! Group membership on tokio: a member that stays in the group, and comes
//! back by itself after its session expired.

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use herdless_core::member::{Member as CoreMember, MemberEvent};
use herdless_core::path::PathError;
use tokio::sync::watch;
use tracing::{info, warn};

use crate::driver::channel;
use crate::driver::session_over::SessionOver;
use crate::driver::{self, Counters, DriverHandle};
use crate::{Connection, Error};

/// Largest member data, in bytes.
pub const MAX_DATA: usize = 4096;

type Core = CoreMember<MAX_DATA, 256>;

/// Where a member stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Presence {
    /// In the group, connection up.
    In,
    /// In the group when the connection dropped: others may see it gone if
    /// the session expires meanwhile.
    Suspended,
    /// Out of the group (session expired, or node deleted): re-joining.
    Out,
    /// Left at the application's request.
    Left,
}

/// What happened to a member, for applications that follow it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum MembershipEvent {
    /// The connection dropped while in the group.
    Suspended,
    /// The same session came back; the node is confirmed.
    Resumed,
    /// The member is out of the group (session expired or node deleted).
    Out,
    /// The member is back in the group after being out for `gap`.
    Rejoined {
        /// How long it was out, from the moment it learnt it was out.
        gap: Duration,
    },
}

/// A member of a group: an ephemeral node `<group>/<name>` holding `data`.
///
/// Started on a [`Session`](crate::Session), the member re-joins by itself
/// on the next session after its session expired, and reports the gap
/// ([`MembershipEvent::Rejoined`]), as Curator's `PersistentNode` does. On a
/// plain client it reports [`MembershipEvent::Out`] and stays out, since
/// that client's session is gone for good. Dropping the member leaves the
/// group in the background.
///
/// ```no_run
/// # async fn run(session: herdless_std::Session) -> Result<(), herdless_std::Error> {
/// use herdless_std::GroupMember;
///
/// let mut member = GroupMember::join(&session, "/fleet/gateways", "edge-7", b"10.0.0.7:8080").await?;
/// while let Some(event) = member.next_event().await {
///     println!("membership: {event:?}");
/// }
/// # Ok(()) }
/// ```
#[must_use = "dropping the member leaves the group at once"]
pub struct GroupMember {
    handle: Option<DriverHandle<Core>>,
    over: SessionOver,
    presence: watch::Receiver<Presence>,
    events: channel::Receiver<MembershipEvent>,
    left: channel::Receiver<Result<(), Error>>,
    node_path: String,
}

impl fmt::Debug for GroupMember {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GroupMember")
            .field("node_path", &self.node_path)
            .field("presence", &*self.presence.borrow())
            .finish()
    }
}

impl GroupMember {
    /// Joins `group` as `name` with `data`, creating the group directory
    /// (and its ancestors) if missing; returns once the node exists.
    ///
    /// Fails with [`Error::NameTaken`] if another live session holds the
    /// name, or another member on this same connection does, and with `Error::Path(TooLong)` for a name longer than
    /// [`MAX_NAME`](crate::group::MAX_NAME) bytes, which no
    /// [`GroupObserver`](crate::group::GroupObserver) would follow. Cancel-safe: a dropped join leaves the group in the background.
    pub async fn join(
        conn: &impl Connection,
        group: &str,
        name: &str,
        data: &[u8],
    ) -> Result<GroupMember, Error> {
        if name.len() > crate::group::MAX_NAME {
            // Not one a GroupObserver could follow.
            return Err(Error::Path(PathError::TooLong {
                needed: name.len(),
                capacity: crate::group::MAX_NAME,
            }));
        }
        let mut core = Core::new(group, name)?.with_acl(conn.acl());
        core.join(data)?;
        let node_path = core.node_path().to_owned();
        let (presence_tx, presence_rx) = watch::channel(Presence::Out);
        let (events_tx, events_rx) = channel::unbounded();
        let (joined_tx, mut joined_rx) = channel::unbounded();
        let (left_tx, left_rx) = channel::unbounded();
        let mut out_since: Option<Instant> = None;
        let path = node_path.clone();
        let on_event = move |_: &Core, event: MemberEvent| {
            // The presence is set before `join` or `leave` is woken, so
            // that it reads `In` (or `Left`) the moment either returns.
            let mut joined = None;
            let mut left = None;
            let (presence, app) = match event {
                MemberEvent::Joined => {
                    joined = Some(Ok(()));
                    (Some(Presence::In), None)
                }
                MemberEvent::Suspended => {
                    (Some(Presence::Suspended), Some(MembershipEvent::Suspended))
                }
                MemberEvent::Resumed => (Some(Presence::In), Some(MembershipEvent::Resumed)),
                MemberEvent::Out => {
                    warn!(node = %path, "out of the group");
                    out_since = Some(Instant::now());
                    (Some(Presence::Out), Some(MembershipEvent::Out))
                }
                MemberEvent::Rejoined => {
                    let gap = out_since.take().map(|t| t.elapsed()).unwrap_or_default();
                    info!(node = %path, ?gap, "back in the group");
                    (Some(Presence::In), Some(MembershipEvent::Rejoined { gap }))
                }
                MemberEvent::Left => {
                    left = Some(Ok(()));
                    (Some(Presence::Left), None)
                }
                MemberEvent::Failed(e) => {
                    joined = Some(Err(Error::from(e)));
                    left = Some(Err(Error::from(e)));
                    (Some(Presence::Left), None)
                }
                _ => (None, None),
            };
            if let Some(p) = presence {
                presence_tx.send_replace(p);
            }
            if let Some(e) = app {
                let _ = events_tx.unbounded_send(e);
            }
            if let Some(result) = joined {
                let _ = joined_tx.unbounded_send(result);
            }
            if let Some(result) = left {
                let _ = left_tx.unbounded_send(result);
            }
        };
        let handle = driver::spawn_on(
            conn.source(),
            core,
            Arc::new(Counters::default()),
            on_event,
            |m: &Core| m.is_idle(),
        );
        let mut member = GroupMember {
            over: handle.over(),
            handle: Some(handle),
            presence: presence_rx,
            events: events_rx,
            left: left_rx,
            node_path,
        };
        match joined_rx.next().await {
            Some(Ok(())) => Ok(member),
            Some(Err(e)) => {
                // The core is idle after a failure: nothing to leave.
                member.handle = None;
                Err(e)
            }
            None => Err(Error::DriverGone),
        }
    }

    /// The member node's full path.
    pub fn node_path(&self) -> &str {
        &self.node_path
    }

    /// Where the member stands now.
    pub fn presence(&self) -> Presence {
        *self.presence.borrow()
    }

    /// Whether the member is in the group with the connection up.
    pub fn is_in(&self) -> bool {
        self.presence() == Presence::In
    }

    /// The next membership event; `None` once the member left, or once no
    /// event can come: its session is over for good (a plain client's
    /// session expired, after [`MembershipEvent::Out`], or the
    /// [`Session`](crate::Session) closed). Cancel-safe.
    pub async fn next_event(&mut self) -> Option<MembershipEvent> {
        let over = self.over.clone();
        over.unless(async { Ok(self.events.next().await) })
            .await
            .ok()
            .flatten()
    }

    /// Leaves the group and waits until the node is confirmed gone
    /// (retried across connection losses). If this future is dropped, the
    /// leave still completes in the background.
    pub async fn leave(mut self) -> Result<(), Error> {
        let Some(handle) = self.handle.take() else {
            return Ok(());
        };
        handle.command(|m: &mut Core| {
            let _ = m.leave();
        })?;
        drop(handle);
        self.left.next().await.unwrap_or(Ok(()))
    }
}

impl Drop for GroupMember {
    fn drop(&mut self) {
        if let Some(handle) = self.handle.take() {
            let _ = handle.command(|m: &mut Core| {
                let _ = m.leave();
            });
        }
    }
}
