//! ACLs on the in-memory ZooKeeper and on a real server, with the same
//! recipes and the same assertions: a service that secures its nodes and
//! is tested without a network meets the `NoAuth` and `InvalidAcl` a real
//! server gives, at the same places.

use std::time::Duration;

use herdless_std::queue::Queue;
use herdless_std::sim::SimServer;
use herdless_std::{Acl, ConnectOptions, Connection, Error, Lock, WithAcl, ZkError};
use herdless_tests::ZkServer;

/// `alice` authenticated as alice, `stranger` as mallory, `anonymous` as
/// nobody.
async fn scenario<C: Connection + Clone>(alice: &C, stranger: &C, anonymous: &C) {
    let secured = WithAcl::new(alice.clone(), Acl::CREATOR_ALL);
    let guard = Lock::new(&secured, "/app/locks/printer")
        .unwrap()
        .acquire()
        .await
        .expect("alice acquires");
    // Alice reads her own nodes; the others may not even list them.
    let nodes = herdless_std::inspect::children(alice, "/app/locks/printer")
        .await
        .expect("alice lists her lock");
    assert_eq!(nodes.len(), 1);
    assert_no_auth(
        "the stranger's lock",
        Lock::new(stranger, "/app/locks/printer")
            .unwrap()
            .try_acquire()
            .await,
    );
    assert_no_auth(
        "the stranger lists the lock",
        herdless_std::inspect::children(stranger, "/app/locks/printer").await,
    );

    // A queue of alice's: nobody else puts or opens it.
    let queue = Queue::new(&secured, "/app/queue").await.unwrap();
    let item = queue.put(b"job").await.unwrap();
    assert_no_auth(
        "the stranger's queue",
        Queue::new(stranger, "/app/queue").await,
    );
    let taken = queue.take().await.unwrap();
    assert_eq!(taken.node, item);

    // CREATOR_ALL names the session's identities: an anonymous session
    // has none, and nothing is created.
    let nobody = WithAcl::new(anonymous.clone(), Acl::CREATOR_ALL);
    let refused = tokio::time::timeout(
        Duration::from_secs(20),
        Lock::new(&nobody, "/nobody/lock").unwrap().acquire(),
    )
    .await
    .expect("the anonymous lock answers");
    match refused {
        Err(Error::Zk(ZkError::InvalidAcl)) => {}
        other => panic!("the anonymous CREATOR_ALL lock: expected InvalidAcl, got {other:?}"),
    }
    let top = herdless_std::inspect::children(alice, "/").await.unwrap();
    assert!(
        top.iter().all(|n| n.name != "nobody"),
        "a refused create left a node: {:?}",
        top.iter().map(|n| &n.name).collect::<Vec<_>>()
    );

    // An open node is everyone's, authenticated or not.
    let open = Lock::new(anonymous, "/open/lock").unwrap().acquire().await;
    let open = open.expect("an open lock");
    assert!(Lock::new(stranger, "/open/lock")
        .unwrap()
        .try_acquire()
        .await
        .unwrap()
        .is_none());
    open.release().await.unwrap();
    guard.release().await.unwrap();
}

fn assert_no_auth<T: std::fmt::Debug>(what: &str, result: Result<T, Error>) {
    match result {
        Err(Error::Zk(ZkError::NoAuth)) => {}
        other => panic!("{what}: expected NoAuth, got {other:?}"),
    }
}

#[tokio::test(start_paused = true)]
async fn acls_on_the_in_memory_zookeeper() {
    let zk = SimServer::new();
    let (alice, stranger, anonymous) = (
        zk.connect_as("alice", "secret"),
        zk.connect_as("mallory", "guess"),
        zk.connect(),
    );
    scenario(&alice, &stranger, &anonymous).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acls_on_a_real_server() {
    let server = ZkServer::start();
    let connect = |options: ConnectOptions| {
        let addr = server.addr();
        async move { options.connect(&addr).await.unwrap() }
    };
    let timeout = Duration::from_secs(10);
    let alice = connect(ConnectOptions::new(timeout).digest("alice", "secret")).await;
    let stranger = connect(ConnectOptions::new(timeout).digest("mallory", "guess")).await;
    let anonymous = connect(ConnectOptions::new(timeout)).await;
    scenario(&alice, &stranger, &anonymous).await;
    // The precedence the in-memory server copies (core/tests/sim_acl.rs):
    // a delete is refused on the parent's ACL before the node is looked
    // for.
    assert!(matches!(
        stranger.delete("/app/queue/missing", None).await,
        Err(zookeeper_client::Error::NoAuth)
    ));
    assert!(matches!(
        alice.delete("/app/queue/missing", None).await,
        Err(zookeeper_client::Error::NoNode)
    ));
    // And a create's ACL is judged before its parent is looked for.
    let creator_all =
        zookeeper_client::CreateMode::Persistent.with_acls(zookeeper_client::Acls::creator_all());
    assert!(matches!(
        anonymous.create("/no/parent", b"", &creator_all).await,
        Err(zookeeper_client::Error::InvalidAcl)
    ));
}
