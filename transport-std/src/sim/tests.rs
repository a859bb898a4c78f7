//! The faults themselves, seen from a session's raw requests: what each
//! one does to the server and what the client hears.

use std::time::Duration;

use herdless_core::owned::OwnedReply;
use herdless_core::{Acl, CreateMode, Request, ZkError};

use super::SimServer;
use crate::backend::State;

fn create(path: &str) -> Request<'_> {
    Request::Create {
        path,
        data: b"",
        acl: Acl::OPEN,
        mode: CreateMode::Persistent,
    }
}

#[tokio::test(start_paused = true)]
async fn a_lost_write_reply_is_applied_and_answered_connection_loss() {
    let zk = SimServer::new();
    let a = zk.connect();
    zk.lose_next_write_reply(a.session_id());
    // A read first: only a write loses its reply.
    let (read, _) = a
        .call(Request::Exists {
            path: "/x",
            watch: false,
        })
        .await;
    assert_eq!(read, OwnedReply::Error(ZkError::NoNode));
    let (reply, _) = a.call(create("/x")).await;
    assert_eq!(reply, OwnedReply::Error(ZkError::ConnectionLoss));
    assert!(zk.node("/x").is_some(), "the write was applied");
    // Whether the client saw `Disconnected` is drawn from the seed (a
    // client may reconnect before its driver looks at its state).
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert_eq!(a.state(), State::Connected, "back soon");
    let (again, _) = a.call(create("/y")).await;
    assert!(
        matches!(again, OwnedReply::Created(_)),
        "only one reply is lost"
    );
}

#[tokio::test(start_paused = true)]
async fn held_requests_stay_in_flight_and_fail_unapplied() {
    let zk = SimServer::new();
    let a = zk.connect();
    zk.hold(a.session_id());
    let pending = a.call(create("/x"));
    assert_eq!(zk.in_flight(a.session_id()), 1);
    assert!(zk.node("/x").is_none());
    zk.fail_in_flight(a.session_id());
    assert_eq!(pending.await.0, OwnedReply::Error(ZkError::ConnectionLoss));
    assert!(zk.node("/x").is_none(), "a failed request was not applied");
    zk.hold(a.session_id());
    let pending = a.call(create("/x"));
    zk.release(a.session_id());
    assert!(matches!(pending.await.0, OwnedReply::Created(_)));
}

#[tokio::test(start_paused = true)]
async fn a_disconnection_ends_after_its_time_or_in_expiry() {
    let zk = SimServer::new().with_session_timeout(Duration::from_secs(3));
    let (a, b) = (zk.connect(), zk.connect());
    zk.disconnect(a.session_id(), Duration::from_secs(1));
    assert_eq!(a.state(), State::Disconnected);
    tokio::time::sleep(Duration::from_millis(1100)).await;
    assert_eq!(a.state(), State::Connected);
    zk.disconnect(b.session_id(), Duration::from_secs(3));
    tokio::time::sleep(Duration::from_millis(2900)).await;
    assert!(zk.is_live(b.session_id()), "expired before its timeout");
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!zk.is_live(b.session_id()));
    assert_eq!(b.state(), State::Expired);
}

#[tokio::test(start_paused = true)]
async fn a_watch_fires_once_for_its_session_and_is_counted() {
    let zk = SimServer::new();
    let (a, b) = (zk.connect(), zk.connect());
    zk.create("/x", b"1").unwrap();
    let (_, watcher) = a
        .call(Request::GetData {
            path: "/x",
            watch: true,
        })
        .await;
    assert_eq!(zk.watches(a.session_id()), [("data", "/x".to_owned())]);
    assert!(zk.watches(b.session_id()).is_empty());
    let before = zk.notifications();
    zk.set_data("/x", b"2").unwrap();
    let Some(crate::backend::Watcher::Sim(notice)) = watcher else {
        panic!("no watcher");
    };
    let notice = notice.await.unwrap();
    assert_eq!(notice.kind, Some(herdless_core::WatchKind::NodeDataChanged));
    assert_eq!(zk.notifications(), before + 1);
    assert!(zk.watches(a.session_id()).is_empty(), "one-shot");
    assert_eq!(zk.requests()["getData"], 1);
}

#[tokio::test(start_paused = true)]
async fn a_later_disconnection_overrides_the_timers_of_an_earlier_one() {
    let zk = SimServer::new().with_session_timeout(Duration::from_secs(3));
    let (a, b) = (zk.connect(), zk.connect());
    zk.disconnect(a.session_id(), Duration::from_secs(1));
    tokio::time::sleep(Duration::from_millis(500)).await;
    zk.disconnect(a.session_id(), Duration::from_secs(2));
    tokio::time::sleep(Duration::from_millis(700)).await;
    assert_eq!(
        a.state(),
        State::Disconnected,
        "the first timer ended the second outage"
    );
    tokio::time::sleep(Duration::from_millis(1400)).await;
    assert_eq!(a.state(), State::Connected);
    // An outage bound to expire, ended early by a reset: no expiry.
    zk.disconnect(b.session_id(), Duration::from_secs(10));
    tokio::time::sleep(Duration::from_secs(1)).await;
    zk.fail_in_flight(b.session_id());
    assert_eq!(b.state(), State::Connected);
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert!(
        zk.is_live(b.session_id()),
        "an outage that ended still expired the session"
    );
}

#[tokio::test(start_paused = true)]
async fn a_session_keeps_its_timeout_and_closing_it_removes_its_ephemerals() {
    let zk = SimServer::new().with_session_timeout(Duration::from_secs(7));
    let a = zk.connect();
    assert_eq!(a.session_timeout(), Duration::from_secs(7));
    let (reply, _) = a
        .call(Request::Create {
            path: "/e",
            data: b"",
            acl: Acl::OPEN,
            mode: CreateMode::Ephemeral,
        })
        .await;
    assert!(matches!(reply, OwnedReply::Created(_)));
    assert!(format!("{a:?}").contains(&a.session_id().to_string()));
    assert!(format!("{zk:?}").contains(&a.session_id().to_string()));
    a.close();
    assert!(!zk.is_live(a.session_id()));
    assert!(
        zk.node("/e").is_none(),
        "the ephemeral outlived its session"
    );
    assert_eq!(a.state(), State::Closed);
}

#[tokio::test(start_paused = true)]
async fn every_request_held_is_counted_in_flight() {
    let zk = SimServer::new();
    let a = zk.connect();
    zk.hold(a.session_id());
    let first = a.call(create("/x"));
    let second = a.call(create("/y"));
    assert_eq!(zk.in_flight(a.session_id()), 2);
    zk.release(a.session_id());
    assert_eq!(zk.in_flight(a.session_id()), 0);
    assert!(matches!(first.await.0, OwnedReply::Created(_)));
    assert!(matches!(second.await.0, OwnedReply::Created(_)));
}

/// The watcher `request` sets (it must set one).
async fn watch_set_by(
    client: &super::SimClient,
    request: Request<'_>,
) -> tokio::sync::oneshot::Receiver<crate::backend::Notice> {
    match client.call(request).await.1 {
        Some(crate::backend::Watcher::Sim(notice)) => notice,
        _ => panic!("no watch set"),
    }
}

/// Which watches a change fires, by the server's rules: a data change fires
/// data watches only, a child's creation child watches only, a deletion
/// both.
#[tokio::test(start_paused = true)]
async fn each_change_fires_the_watches_the_server_fires() {
    let zk = SimServer::new();
    let a = zk.connect();
    zk.create("/x", b"").unwrap();
    let watch = |request| watch_set_by(&a, request);
    let get_data = |path| Request::GetData { path, watch: true };
    let get_children = |path| Request::GetChildren { path, watch: true };
    let exists = |path| Request::Exists { path, watch: true };
    let mut data = watch(get_data("/x")).await;
    let mut child = watch(get_children("/x")).await;
    zk.set_data("/x", b"1").unwrap();
    assert!(data.try_recv().is_ok(), "a data change fires a data watch");
    assert!(
        child.try_recv().is_err(),
        "a data change fired a child watch"
    );
    zk.create("/x/c", b"").unwrap();
    assert!(child.try_recv().is_ok(), "a new child fires a child watch");
    let mut data = watch(get_data("/x")).await;
    let mut child = watch(get_children("/x")).await;
    let mut created = watch(exists("/y")).await;
    zk.create("/x/d", b"").unwrap();
    assert!(data.try_recv().is_err(), "a new child fired a data watch");
    child.try_recv().unwrap();
    zk.create("/y", b"").unwrap();
    assert_eq!(
        created.try_recv().unwrap().kind,
        Some(herdless_core::WatchKind::NodeCreated)
    );
    // An `exists` that finds the node sets a data watch.
    let mut found = watch(exists("/y")).await;
    zk.set_data("/y", b"1").unwrap();
    assert_eq!(
        found.try_recv().unwrap().kind,
        Some(herdless_core::WatchKind::NodeDataChanged)
    );
    let mut child = watch(get_children("/x/c")).await;
    let mut data = watch(get_data("/x/c")).await;
    zk.delete("/x/c").unwrap();
    assert_eq!(
        child.try_recv().unwrap().kind,
        Some(herdless_core::WatchKind::NodeDeleted),
        "a deletion fires a child watch on the node"
    );
    assert!(data.try_recv().is_ok(), "a deletion fires a data watch");
}

/// A request dropped by a reset leaves no trace in which request is the
/// next write: the lost reply goes to the create sent after it, not to the
/// read sent first.
#[tokio::test(start_paused = true)]
async fn a_lost_reply_goes_to_the_next_write_after_a_reset() {
    let zk = SimServer::new();
    let a = zk.connect();
    zk.hold(a.session_id());
    let dropped = a.call(create("/x"));
    zk.fail_in_flight(a.session_id());
    assert_eq!(dropped.await.0, OwnedReply::Error(ZkError::ConnectionLoss));
    zk.lose_next_write_reply(a.session_id());
    let read = a.call(Request::Exists {
        path: "/x",
        watch: false,
    });
    assert_eq!(
        read.await.0,
        OwnedReply::Error(ZkError::NoNode),
        "a read lost its reply"
    );
    assert_eq!(
        a.call(create("/y")).await.0,
        OwnedReply::Error(ZkError::ConnectionLoss)
    );
    assert!(zk.node("/y").is_some());
}

fn fence_batch(a: &super::SimClient) -> crate::Fenced {
    let mut batch = crate::Fenced::on(a, "/fence").unwrap();
    batch.set_data("/job", b"new", None).unwrap();
    batch
}

#[tokio::test(start_paused = true)]
async fn a_fenced_batch_is_held_back_or_loses_its_reply_like_any_write() {
    let zk = SimServer::new();
    zk.create("/fence", b"").unwrap();
    zk.create("/job", b"old").unwrap();
    let a = zk.connect();
    zk.hold(a.session_id());
    assert_eq!(
        fence_batch(&a).commit().await.unwrap_err(),
        crate::Error::Zk(ZkError::ConnectionLoss)
    );
    assert_eq!(zk.node("/job").unwrap().data, b"old", "applied while held");
    zk.release(a.session_id());
    zk.lose_next_write_reply(a.session_id());
    assert_eq!(
        fence_batch(&a).commit().await.unwrap_err(),
        crate::Error::Zk(ZkError::ConnectionLoss)
    );
    assert_eq!(zk.node("/job").unwrap().data, b"new", "the batch landed");
    tokio::time::sleep(Duration::from_millis(20)).await;
    zk.set_data("/job", b"old").unwrap();
    fence_batch(&a).commit().await.unwrap();
    assert_eq!(zk.node("/job").unwrap().data, b"new", "only one reply lost");
}

/// Random faults strike at their rates: at 1 every request draws them.
#[tokio::test(start_paused = true)]
async fn random_faults_are_injected() {
    let faults = |lose_reply, disconnect, expire| super::RandomFaults {
        lose_reply,
        disconnect,
        expire,
        max_down: Duration::from_millis(100),
    };
    let zk = SimServer::new();
    let (a, b, c) = (zk.connect(), zk.connect(), zk.connect());
    zk.random_faults(1, faults(1.0, 0.0, 0.0));
    assert_eq!(
        a.call(create("/x")).await.0,
        OwnedReply::Error(ZkError::ConnectionLoss)
    );
    assert!(zk.node("/x").is_some(), "a lost reply's write is applied");
    zk.random_faults(1, faults(0.0, 1.0, 0.0));
    b.call(Request::Exists {
        path: "/x",
        watch: false,
    })
    .await;
    assert_eq!(b.state(), State::Disconnected);
    zk.random_faults(1, faults(0.0, 0.0, 1.0));
    c.call(Request::Exists {
        path: "/x",
        watch: false,
    })
    .await;
    assert!(!zk.is_live(c.session_id()));
    zk.no_random_faults();
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(b.state(), State::Connected);
    assert!(matches!(
        b.call(create("/z")).await.0,
        OwnedReply::Created(_)
    ));
    assert!(
        zk.is_live(b.session_id()),
        "faults drawn after they were stopped"
    );
}
