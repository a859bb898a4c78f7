//! Authenticated sessions on the in-memory ZooKeeper: whose nodes a
//! `connect_as` session creates, and a renewing `session_as` that is the
//! same user on every session it opens, and ends once the server refuses
//! the user's credentials. (`tests/tests/acl_both.rs` runs the ACL rules
//! themselves on both backends.)

use std::time::Duration;

use herdless_std::config::Config;
use herdless_std::sim::SimServer;
use herdless_std::{digest_id, perms, Acl, Error, GroupMember, Lock, WithAcl, ZkError};

#[tokio::test(start_paused = true)]
async fn creator_all_gives_a_node_to_the_users_digest_identity() {
    let zk = SimServer::new();
    let alice = zk.connect_as("alice", "secret");
    let secured = WithAcl::new(alice.clone(), Acl::CREATOR_ALL);
    let config = Config::watch(&secured, "/settings").unwrap();
    config.create(b"v1").await.unwrap();
    let acl = zk.node("/settings").unwrap().acl;
    assert_eq!(acl.len(), 1, "{acl:?}");
    assert_eq!(
        (acl[0].perms, acl[0].scheme.as_str(), acl[0].id.as_str()),
        (perms::ALL, "digest", digest_id("alice", "secret").as_str())
    );
    // The same user on another session is alice; the wrong password is not.
    let again = zk.connect_as("alice", "secret");
    let guessed = zk.connect_as("alice", "guess");
    let read = |conn| async move { Config::watch(conn, "/settings")?.wait_present().await };
    assert!(read(&again).await.is_ok());
    match read(&guessed).await {
        Err(Error::Zk(ZkError::NoAuth)) => {}
        other => panic!("the wrong password reads: {other:?}"),
    }
}

#[tokio::test(start_paused = true)]
async fn a_renewing_session_is_its_user_on_every_session() {
    let zk = SimServer::new();
    let session = zk.session_as("alice", "secret");
    let secured = WithAcl::new(session.clone(), Acl::CREATOR_ALL);
    let lock = Lock::new(&secured, "/app/locks/printer").unwrap();
    lock.acquire().await.unwrap().release().await.unwrap();
    let first = session.session_id();
    zk.expire(first);
    session.renewed(first).await;
    assert_ne!(session.session_id(), first);
    // Still alice: her directory takes her node, and CREATOR_ALL still
    // names someone.
    let guard = lock.try_acquire().await.unwrap().expect("free");
    guard.release().await.unwrap();
    // An anonymous renewing session is nobody on its next session too.
    let anonymous = zk.session();
    let nobody = WithAcl::new(anonymous.clone(), Acl::CREATOR_ALL);
    match Lock::new(&nobody, "/other/lock")
        .unwrap()
        .try_acquire()
        .await
    {
        Err(Error::Zk(ZkError::InvalidAcl)) => {}
        other => panic!("an anonymous CREATOR_ALL lock: {other:?}"),
    }
}

/// Credentials the server stops accepting end a renewing session at its
/// next expiry, as on a real server (`security_real`'s
/// `credentials_refused_*`): its recipes hear that no session follows
/// instead of waiting for one, it says why, and other users renew as
/// before.
#[tokio::test(start_paused = true)]
async fn a_renewing_session_whose_credentials_are_refused_ends() {
    let zk = SimServer::new();
    let alice = zk.session_as("alice", "secret");
    let bob = zk.session_as("bob", "pw");
    let mut member = GroupMember::join(&alice, "/fleet", "edge-1", b"")
        .await
        .unwrap();
    let mut config = Config::watch(&alice, "/settings").unwrap();
    let lock = Lock::new(&alice, "/app/lock").unwrap();
    let guard = lock.acquire().await.unwrap();

    zk.refuse_credentials("alice");
    let (first, bobs) = (alice.session_id(), bob.session_id());
    zk.expire(first);
    zk.expire(bobs);
    let limit = Duration::from_secs(60);
    tokio::time::timeout(limit, bob.renewed(bobs))
        .await
        .expect("bob's session is renewed");
    tokio::time::timeout(limit, guard.lost())
        .await
        .expect("the holder hears its lock is lost");
    tokio::time::timeout(limit, async {
        while member.next_event().await.is_some() {}
    })
    .await
    .expect("the member hears no session follows");
    match tokio::time::timeout(limit, config.wait_present()).await {
        Ok(Err(Error::SessionEnded)) => {}
        other => panic!("the configuration watcher: {other:?}"),
    }
    match tokio::time::timeout(limit, lock.acquire()).await {
        Ok(Err(Error::SessionEnded)) => {}
        other => panic!(
            "a lock on the refused session: {:?}",
            other.map(|r| r.map(|_| ()))
        ),
    }
    assert_eq!(
        alice.ended(),
        Some(Error::Connect(zookeeper_client::Error::AuthFailed))
    );
    assert_eq!(alice.session_id(), first, "no new session for alice");
    assert_eq!(bob.ended(), None);
}
