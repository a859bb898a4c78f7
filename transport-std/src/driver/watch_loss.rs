//! Watches that the client loses: contained, then set again as ZooKeeper
//! sets them again after a reconnect.
//!
//! zookeeper-client 0.11.2 unwraps the channel of a one-shot watcher when it
//! waits for its event (`session/watch.rs:120`); when the client drops the
//! sending side without an event, the waiting future panics (seen on a
//! three-server ensemble with servers killed, and when a runtime shuts down
//! while a watcher is awaited: README, design notes). The vendored copy
//! (`vendor/`) ends such a watcher with a `Disconnected` session event
//! instead, which a one-shot watcher never hears otherwise; the driver
//! still waits on [`contain`]ed watchers, should a panic come some other
//! way. Either is a lost watch ([`lost`]). Nothing tells the recipe that
//! its watch is gone, so the driver sets it again by
//! itself ([`rearm`]) with the read that set it, and compares what it reads
//! now with what the first read saw: the recipe hears a notification only if
//! the node changed in between (what the server does with a reconnecting
//! client's `SetWatches`), and nothing otherwise.
//!
//! Unlike `SetWatches`, that read may return after the recipe has started
//! new work on the same path: the recipe may hear an old watch's news after
//! a later command. Recipes that reuse a path (the barrier) act on a
//! deletion only once a read of their current operation has seen the node.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::panic::AssertUnwindSafe;

use futures::future::BoxFuture;
use futures::FutureExt;
use herdless_core::owned::OwnedReply;
use herdless_core::{Request, WatchKind, ZkError};
use tracing::{debug, warn};

use crate::backend::{Backend, Notice, Watcher};

/// A watch as the read that set it saw the node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct WatchSet {
    /// The watched path.
    pub(crate) path: String,
    /// What the read saw.
    pub(crate) seen: Seen,
}

/// What a watching read saw of its node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Seen {
    /// A data watch (exists or getData): the node's `mzxid`, or `None` if it
    /// did not exist.
    Node(Option<i64>),
    /// A child watch: a digest of the names listed.
    Children(u64),
}

/// A watcher with the watch it stands for.
pub(crate) struct Armed {
    pub(crate) watcher: Watcher,
    pub(crate) set: WatchSet,
}

/// What waiting on a watcher gave: the client's event, or the watch that
/// was lost when the watcher failed inside the client.
pub(crate) type Heard = Result<Notice, WatchSet>;

/// What a watching read's answer saw of its node (`None`: an answer that
/// sets no watch).
pub(crate) fn seen(reply: &OwnedReply) -> Option<Seen> {
    match reply {
        OwnedReply::Exists(stat) | OwnedReply::Data(_, stat) => Some(Seen::Node(Some(stat.mzxid))),
        // An `exists` that found nothing leaves a creation watch.
        OwnedReply::Error(ZkError::NoNode) => Some(Seen::Node(None)),
        OwnedReply::Children(names) => Some(Seen::Children(digest(names))),
        _ => None,
    }
}

/// The result of setting a lost watch again.
pub(crate) struct Rearmed {
    /// The watched path.
    pub(crate) path: String,
    /// The notification the recipe missed, if the node changed.
    pub(crate) missed: Option<WatchKind>,
    /// The new watcher, when nothing was missed (after a missed change the
    /// recipe reads and watches again itself).
    pub(crate) armed: Option<Armed>,
}

/// A digest of a child list, whatever order the server lists it in.
pub(crate) fn digest(children: &[String]) -> u64 {
    children
        .iter()
        .map(|name| {
            let mut h = DefaultHasher::new();
            name.hash(&mut h);
            h.finish()
        })
        .fold(children.len() as u64, u64::wrapping_add)
}

/// Waits on a watcher's `event`; a panic inside it is the loss of `set`.
pub(crate) fn contain<F>(event: F, set: WatchSet) -> BoxFuture<'static, Result<F::Output, WatchSet>>
where
    F: std::future::Future + Send + 'static,
    F::Output: Send,
{
    AssertUnwindSafe(event)
        .catch_unwind()
        .map(move |outcome| {
            outcome.map_err(|_| {
                warn!(path = %set.path, "a watcher failed inside zookeeper-client: setting the watch again");
                set
            })
        })
        .boxed()
}

/// Waits on an armed watcher, contained.
pub(crate) fn wait(armed: Armed) -> BoxFuture<'static, Heard> {
    match armed.watcher {
        Watcher::Real(watcher) => {
            let set = armed.set.clone();
            let heard = contain(watcher.changed().map(Notice::from), armed.set);
            heard
                .map(|heard| heard.and_then(|notice| lost(notice, set)))
                .boxed()
        }
        // The in-memory server ends every watcher with a notice; a watcher
        // dropped without one is lost like a real one that panics.
        #[cfg(feature = "sim")]
        Watcher::Sim(notice) => {
            let set = armed.set;
            notice.map(move |heard| heard.map_err(|_| set)).boxed()
        }
    }
}

/// A watcher's `notice`, unless it says the watch `set` is lost: a session
/// event whose state is not the session's end, which one-shot watchers
/// hear only from the vendored client's dropped channel.
fn lost(notice: Notice, set: WatchSet) -> Heard {
    if notice.kind.is_none() && !notice.state.is_terminal() {
        debug!(path = %set.path, "a watcher's channel closed inside zookeeper-client: setting the watch again");
        Err(set)
    } else {
        Ok(notice)
    }
}

/// The notification a watch would have given between `before` and `now`
/// (`None`: the node is gone), as the server computes it for `SetWatches`.
pub(crate) fn missed(before: Seen, now: Option<Seen>) -> Option<WatchKind> {
    use WatchKind::*;
    match (before, now) {
        (Seen::Node(Some(a)), Some(Seen::Node(Some(b)))) => (a != b).then_some(NodeDataChanged),
        (Seen::Node(Some(_)), _) => Some(NodeDeleted),
        (Seen::Node(None), Some(Seen::Node(Some(_)))) => Some(NodeCreated),
        (Seen::Node(None), _) => None,
        (Seen::Children(a), Some(Seen::Children(b))) => (a != b).then_some(NodeChildrenChanged),
        (Seen::Children(_), _) => Some(NodeDeleted),
    }
}

/// Sets a lost watch again with the read that set it, retrying across
/// connection losses; gives up (nothing missed, no watcher) once the session
/// is gone, which the recipe hears of by itself.
pub(crate) fn rearm(backend: Backend, set: WatchSet) -> BoxFuture<'static, Rearmed> {
    async move {
        let (now, watcher) = read_watching(&backend, &set).await;
        let Some(now) = now else {
            return Rearmed {
                path: set.path,
                missed: None,
                armed: None,
            };
        };
        let change = missed(set.seen, now);
        let armed = match (change, watcher, now) {
            (None, Some(watcher), Some(seen)) => Some(Armed {
                watcher,
                set: WatchSet {
                    path: set.path.clone(),
                    seen,
                },
            }),
            // After a missed change the recipe reads and watches again
            // itself; a second watcher would give it every later
            // notification twice.
            _ => None,
        };
        Rearmed {
            path: set.path,
            missed: change,
            armed,
        }
    }
    .boxed()
}

/// The read that sets `set`'s kind of watch, sent until answered: what it
/// sees now (`Some(None)`: the node is gone; `None`: the session is) and
/// the watcher it set.
async fn read_watching(
    backend: &Backend,
    set: &WatchSet,
) -> (Option<Option<Seen>>, Option<Watcher>) {
    let path = set.path.as_str();
    let request = match set.seen {
        Seen::Node(_) => Request::Exists { path, watch: true },
        Seen::Children(_) => Request::GetChildren { path, watch: true },
    };
    let (reply, watcher) = backend.call_until_answered(request).await;
    match (&reply, set.seen) {
        // The node is gone, and any child watch on it.
        (OwnedReply::Error(ZkError::NoNode), Seen::Children(_)) => (Some(None), None),
        (OwnedReply::Error(e), _) if *e != ZkError::NoNode => (None, None),
        _ => (Some(seen(&reply)), watcher),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(seen: Seen) -> WatchSet {
        WatchSet {
            path: "/locks/a/x-0000000001".into(),
            seen,
        }
    }

    #[test]
    fn a_watcher_ended_without_the_session_is_a_lost_watch() {
        use crate::backend::State;
        let ended = |kind, state| Notice {
            kind,
            path: String::new(),
            state,
        };
        let watch = set(Seen::Children(3));
        // What the vendored client gives for a channel dropped without an
        // event.
        let dropped = Notice::from(zookeeper_client::WatchedEvent::new_session(
            zookeeper_client::SessionState::Disconnected,
        ));
        assert_eq!(lost(dropped, watch.clone()), Err(watch.clone()));
        for state in [State::Expired, State::Closed] {
            let end = ended(None, state);
            assert_eq!(lost(end.clone(), watch.clone()), Ok(end));
        }
        let fired = ended(Some(WatchKind::NodeChildrenChanged), State::Connected);
        assert_eq!(lost(fired.clone(), watch), Ok(fired));
    }

    #[tokio::test]
    async fn a_watcher_that_panics_is_a_lost_watch() {
        // What zookeeper-client does with a canceled oneshot receiver.
        let (sender, receiver) = tokio::sync::oneshot::channel::<u32>();
        drop(sender);
        let panicking = async move { receiver.await.unwrap() };
        let heard = contain(panicking, set(Seen::Node(Some(7)))).await;
        assert_eq!(heard, Err(set(Seen::Node(Some(7)))));
    }

    #[tokio::test]
    async fn a_watcher_that_fires_is_heard() {
        let heard = contain(std::future::ready(9u32), set(Seen::Node(Some(7)))).await;
        assert_eq!(heard, Ok(9));
    }

    #[test]
    fn only_a_change_is_a_missed_notification() {
        use WatchKind::*;
        let node = |z| Seen::Node(Some(z));
        assert_eq!(missed(node(5), Some(node(5))), None);
        assert_eq!(missed(node(5), Some(node(6))), Some(NodeDataChanged));
        assert_eq!(missed(node(5), Some(Seen::Node(None))), Some(NodeDeleted));
        assert_eq!(missed(Seen::Node(None), Some(Seen::Node(None))), None);
        assert_eq!(missed(Seen::Node(None), Some(node(6))), Some(NodeCreated));
        let a = digest(&["x".into(), "y".into()]);
        let same = digest(&["y".into(), "x".into()]);
        let b = digest(&["x".into()]);
        assert_eq!(a, same, "the server's order does not matter");
        assert_eq!(missed(Seen::Children(a), Some(Seen::Children(same))), None);
        assert_eq!(
            missed(Seen::Children(a), Some(Seen::Children(b))),
            Some(NodeChildrenChanged)
        );
        assert_eq!(missed(Seen::Children(a), None), Some(NodeDeleted));
    }
}
