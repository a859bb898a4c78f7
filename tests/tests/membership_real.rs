//! Group membership and the name service against a real ZooKeeper 3.8.

use std::time::{Duration, Instant};

use herdless_std::group::{self, GroupObserver};
use herdless_std::{Client, Error, GroupMember, MembershipEvent, Presence, Session};
use herdless_tests::{Proxy, ZkServer};

const SESSION: Duration = Duration::from_secs(30);
const SHORT_SESSION: Duration = Duration::from_secs(2);

async fn client(server: &ZkServer) -> Client {
    herdless_std::connect(&server.addr(), SESSION)
        .await
        .expect("connect to the test server")
}

/// Cuts `proxy` for longer than the session timeout: the session expires.
async fn expire_behind(proxy: &Proxy) {
    proxy.cut();
    tokio::time::sleep(SHORT_SESSION + Duration::from_millis(1500)).await;
    proxy.restore();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crashed_member_disappears_and_a_member_whose_session_expired_rejoins_by_itself() {
    let server = ZkServer::start();
    let observer_client = client(&server).await;
    let mut watch = GroupObserver::start(&observer_client, "/fleet/edge").unwrap();

    // A member on a self-renewing session, behind a proxy we can cut.
    let proxy = Proxy::start(server.port());
    let session = Session::connect(&proxy.addr(), SHORT_SESSION)
        .await
        .unwrap();
    let mut resilient = GroupMember::join(&session, "/fleet/edge", "resilient", b"10.0.0.1")
        .await
        .unwrap();
    // A member on a plain client behind another proxy: it will crash.
    let crash_proxy = Proxy::start(server.port());
    let crashing_client = herdless_std::connect(&crash_proxy.addr(), SHORT_SESSION)
        .await
        .unwrap();
    let crashing = GroupMember::join(&crashing_client, "/fleet/edge", "crashing", b"10.0.0.2")
        .await
        .unwrap();

    let first = watch.changed().await.unwrap();
    let mut joined = first.joined.clone();
    if joined.len() < 2 {
        joined.extend(watch.changed().await.unwrap().joined);
    }
    joined.sort();
    assert_eq!(joined, ["crashing", "resilient"]);

    // The crashing member's host vanishes: its session expires, the group
    // sees it leave.
    crash_proxy.cut();
    let change = tokio::time::timeout(Duration::from_secs(20), watch.changed())
        .await
        .expect("the crashed member leaves the group")
        .unwrap();
    assert_eq!(change.left, ["crashing"]);
    std::mem::forget(crashing);

    // The resilient member's session expires: it says it is out, then comes
    // back by itself on a new session and reports the gap.
    let old_session = session.session_id();
    let cut_at = Instant::now();
    expire_behind(&proxy).await;
    let mut saw_out = false;
    let gap = loop {
        let event = tokio::time::timeout(Duration::from_secs(30), resilient.next_event())
            .await
            .expect("the member reports what happened")
            .expect("events go on");
        match event {
            MembershipEvent::Suspended => {}
            MembershipEvent::Out => saw_out = true,
            MembershipEvent::Rejoined { gap } => break gap,
            other => panic!("unexpected {other:?}"),
        }
    };
    assert!(saw_out, "the member said it was out before coming back");
    assert_ne!(session.session_id(), old_session, "it is on a new session");
    assert_eq!(resilient.presence(), Presence::In);
    println!(
        "member back {:?} after the cut, out for {gap:?}",
        cut_at.elapsed()
    );
    let (data, stat) = observer_client
        .get_data("/fleet/edge/resilient")
        .await
        .unwrap();
    assert_eq!(data, b"10.0.0.1");
    assert_eq!(stat.ephemeral_owner, session.session_id());
    // The observer followed: it ends with the resilient member in.
    let deadline = Instant::now() + Duration::from_secs(10);
    while watch.members() != ["resilient"] {
        assert!(
            Instant::now() < deadline,
            "observer sees {:?}",
            watch.members()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    resilient.leave().await.unwrap();
    assert!(group::members(&observer_client, "/fleet/edge")
        .await
        .unwrap()
        .is_empty());
}

#[tokio::test]
async fn a_taken_name_is_refused_and_names_resolve_to_addresses() {
    let server = ZkServer::start();
    let a = client(&server).await;
    let b = client(&server).await;
    let registration = group::register(&a, "/services", "billing", b"10.0.0.5:443")
        .await
        .unwrap();
    assert_eq!(
        group::lookup(&b, "/services", "billing").await.unwrap(),
        Some(b"10.0.0.5:443".to_vec())
    );
    assert_eq!(
        group::lookup(&b, "/services", "nobody").await.unwrap(),
        None
    );
    assert_eq!(
        group::register(&b, "/services", "billing", b"10.9.9.9:443")
            .await
            .unwrap_err(),
        Error::NameTaken
    );
    assert!(matches!(
        group::lookup(&b, "/services", "a/b").await,
        Err(Error::Path(_))
    ));
    registration.leave().await.unwrap();
    assert_eq!(
        group::lookup(&b, "/services", "billing").await.unwrap(),
        None
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_is_in_the_moment_join_returns() {
    let server = ZkServer::start();
    let c = client(&server).await;
    for i in 0..100 {
        let member = GroupMember::join(&c, &format!("/presence/g{i}"), "m", b"")
            .await
            .unwrap();
        assert_eq!(member.presence(), Presence::In, "join {i}");
        assert!(member.is_in(), "join {i}");
        member.leave().await.unwrap();
    }
}
