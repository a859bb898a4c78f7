//! ACLs on the in-memory ZooKeeper and on a real server, with the same
//! recipes and the same assertions: a service that secures its nodes and
//! is tested without a network meets the `NoAuth` and `InvalidAcl` a real
//! server gives, at the same places.

use std::time::Duration;

use herdless_std::queue::Queue;
use herdless_std::sim::SimServer;
use herdless_std::{
    perms, Acl, AclEntry, ConnectOptions, Connection, Error, Lock, WithAcl, ZkError,
};
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

/// Everything but reading, for everyone: a lock whose nodes carry it
/// cannot read its own node (`getData` is refused and sets no watch), and
/// no watch tells it of a change to that node (ZooKeeper 3.8.4 and 3.9.2
/// tell a change only to sessions that may read the node, CVE-2024-23944).
static UNREADABLE: Acl<'static> = Acl(&[AclEntry {
    perms: perms::ALL & !perms::READ,
    scheme: "world",
    id: "anyone",
}]);

const UNREADABLE_LOCK: &str = "/app/locks/unreadable";

/// Such a lock gives itself up rather than hold a lock whose breaking it
/// could not hear of: the attempt fails with `NoAuth`, or, if the listing
/// made it the holder before its read was refused, the guard is lost at
/// once. Its node is deleted either way.
async fn unreadable_lock_gives_up<C: Connection + Clone>(conn: &C) {
    // The directory made readable first, by a lock with the open ACL: one
    // made with `UNREADABLE` could not be listed.
    let opener = Lock::new(conn, UNREADABLE_LOCK).unwrap().acquire().await;
    opener.expect("the open lock").release().await.unwrap();
    let unreadable = WithAcl::new(conn.clone(), UNREADABLE);
    let outcome = tokio::time::timeout(
        Duration::from_secs(20),
        Lock::new(&unreadable, UNREADABLE_LOCK).unwrap().acquire(),
    )
    .await
    .expect("the unreadable lock answers");
    match outcome {
        Err(Error::Zk(ZkError::NoAuth)) => {}
        Ok(guard) => {
            tokio::time::timeout(Duration::from_secs(20), guard.lost())
                .await
                .expect("a holder that may not read its node gives the lock up");
            assert!(!guard.is_held());
        }
        Err(other) => panic!("expected NoAuth or a lost guard, got {other:?}"),
    }
    // `Lost` comes before the delete (the node keeps the next contender
    // out until then), so the node may still be going.
    let gone = async {
        loop {
            let left = herdless_std::inspect::children(conn, UNREADABLE_LOCK).await;
            if left.unwrap().is_empty() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(20), gone)
        .await
        .expect("its node deleted");
}

#[tokio::test(start_paused = true)]
async fn a_lock_that_may_not_read_its_node_gives_it_up_on_the_in_memory_zookeeper() {
    let zk = SimServer::new();
    unreadable_lock_gives_up(&zk.connect()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lock_that_may_not_read_its_node_gives_it_up_on_a_real_server() {
    let server = ZkServer::start();
    let addr = server.addr();
    let timeout = Duration::from_secs(10);
    let conn = ConnectOptions::new(timeout).connect(&addr).await.unwrap();
    unreadable_lock_gives_up(&conn).await;
    // Why, on this server: a watch that `exists` set on a node the session
    // may not read, which the in-memory ZooKeeper copies, never fires.
    let operator = ConnectOptions::new(timeout).connect(&addr).await.unwrap();
    let mode = zookeeper_client::CreateMode::Ephemeral;
    let no_read = [zookeeper_client::Acl::new(
        zookeeper_client::Permission::WRITE
            | zookeeper_client::Permission::CREATE
            | zookeeper_client::Permission::DELETE
            | zookeeper_client::Permission::ADMIN,
        zookeeper_client::AuthId::anyone(),
    )];
    let options = mode.with_acls(zookeeper_client::Acls::new(&no_read));
    conn.create("/app/probe", b"", &options).await.unwrap();
    assert!(matches!(
        conn.get_data("/app/probe").await,
        Err(zookeeper_client::Error::NoAuth)
    ));
    let (stat, watcher) = conn.check_and_watch_stat("/app/probe").await.unwrap();
    assert!(stat.is_some(), "an exists is answered");
    operator.delete("/app/probe", None).await.unwrap();
    let told = tokio::time::timeout(Duration::from_secs(2), watcher.changed()).await;
    assert!(told.is_err(), "the deletion was told: {told:?}");
}
