//! Authenticated sessions on the in-memory ZooKeeper: whose nodes a
//! `connect_as` session creates, and a renewing `session_as` that is the
//! same user on every session it opens. (`tests/tests/acl_both.rs` runs
//! the ACL rules themselves on both backends.)

use herdless_std::config::Config;
use herdless_std::sim::SimServer;
use herdless_std::{digest_id, perms, Acl, Error, Lock, WithAcl, ZkError};

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
