//! herdless-std under a chroot (`host:port/app`) against a real ZooKeeper:
//! a chroot that does not exist is refused at connect with its name,
//! rather than every recipe failing later with "node does not exist" on
//! its own path, and a renewing session whose chroot was deleted stops.
//!
//! Each test starts its own server on a free loopback port.

use std::time::{Duration, Instant};

use herdless_core::path::PathError;
use herdless_std::zookeeper_client as zk;
use herdless_std::{Client, ConnectOptions, Error, Lock, Session};
use herdless_tests::{Proxy, ZkServer};
use tokio::task::JoinHandle;

const SESSION: Duration = Duration::from_secs(10);

async fn root(server: &ZkServer) -> Client {
    herdless_std::connect(&server.addr(), SESSION)
        .await
        .expect("connect to the test server")
}

async fn create(client: &Client, path: &str) {
    let open = zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all());
    client.create(path, b"", &open).await.expect("create");
}

async fn children(client: &Client, path: &str) -> Vec<String> {
    let mut names = client.list_children(path).await.expect("list");
    names.sort();
    names
}

/// Deletes `path` and everything under it.
async fn delete_tree(client: &Client, path: &str) {
    for child in children(client, path).await {
        Box::pin(delete_tree(client, &format!("{path}/{child}"))).await;
    }
    client.delete(path, None).await.expect("delete");
}

/// How long traffic takes each way through the proxy while a check is
/// caught on its way: the check's answer is a hop away once its request
/// reached the server. Two round trips must fit in 2/5 of the shortest
/// session timeout here (4 s): the client proves that the server hears it
/// with one ping at a time, and drops a connection that cannot (see
/// vendor/README.md).
const HOP: Duration = Duration::from_millis(250);

/// What zookeeper-client sends on each connection before any request of
/// its user's: the handshake (its length, then the protocol version, the
/// last zxid seen, the timeout, the session id, the password and the
/// read-only flag) and, once that is answered, a ping (its length, xid and
/// type), whose answer it waits for.
const OPENING: u64 = (4 + 4 + 8 + 4 + 8 + 4 + 16 + 1) + (4 + 4 + 4);

/// A connect under the existing chroot `/app` through a proxy delaying
/// traffic by [`HOP`], once its chroot check has reached the server (its
/// answer is then a hop away).
async fn checking(timeout: Duration) -> (ZkServer, Proxy, JoinHandle<Result<Client, Error>>) {
    let server = ZkServer::start();
    create(&root(&server).await, "/app").await;
    let proxy = Proxy::start(server.port());
    proxy.delay(HOP, HOP);
    let addr = format!("{}/app", proxy.addr());
    let connecting = tokio::spawn(async move { herdless_std::connect(&addr, timeout).await });
    let deadline = Instant::now() + Duration::from_secs(20);
    while proxy.bytes_to_server() <= OPENING {
        assert!(Instant::now() < deadline, "the check never left");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert!(!connecting.is_finished(), "connected before the check");
    (server, proxy, connecting)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_chroot_is_refused_at_connect_and_an_existing_one_is_used() {
    let server = ZkServer::start();
    let root = root(&server).await;
    create(&root, "/apps").await;
    let chrooted = format!("{}/apps/billing", server.addr());

    // Its parent exists; it does not.
    match herdless_std::connect(&chrooted, SESSION).await {
        Err(e @ Error::ChrootMissing(_)) => {
            assert_eq!(e, Error::ChrootMissing("/apps/billing".into()));
            assert_eq!(
                e.to_string(),
                "the chroot /apps/billing does not exist: create it first"
            );
        }
        other => panic!("connect under a missing chroot: {:?}", other.map(|_| ())),
    }
    match Session::connect(&chrooted, SESSION).await {
        Err(Error::ChrootMissing(chroot)) => assert_eq!(chroot, "/apps/billing"),
        other => panic!("a session under a missing chroot: {:?}", other.map(|_| ())),
    }
    assert_eq!(children(&root, "/apps").await, Vec::<String>::new());

    create(&root, "/apps/billing").await;
    let client = herdless_std::connect(&chrooted, SESSION).await.unwrap();
    let guard = Lock::new(&client, "/locks/l")
        .unwrap()
        .acquire()
        .await
        .unwrap();
    assert_eq!(children(&root, "/apps/billing/locks").await, ["l"]);
    assert_eq!(children(&root, "/apps/billing/locks/l").await.len(), 1);
    guard.release().await.unwrap();
    let session = Session::connect(&chrooted, SESSION).await.unwrap();
    let guard = Lock::new(&session, "/locks/l")
        .unwrap()
        .acquire()
        .await
        .unwrap();
    guard.release().await.unwrap();
    // No chroot: nothing to check, as before.
    herdless_std::connect(&server.addr(), SESSION)
        .await
        .unwrap();
}

/// A malformed chroot is the user's typo: refused at once, naming it and
/// what is wrong, before anything is sent. Without the check `/apps/..`
/// reached the server and came back as a chroot that does not exist.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_chroot_is_refused_before_anything_is_sent() {
    let server = ZkServer::start();
    create(&root(&server).await, "/apps").await;
    let proxy = Proxy::start(server.port());
    for (chroot, error) in [
        ("/apps/", PathError::TrailingSlash),
        ("/apps//billing", PathError::EmptySegment { at: 6 }),
        ("/apps/..", PathError::RelativeSegment { at: 6 }),
    ] {
        let addr = format!("{}{chroot}", proxy.addr());
        let expected = Error::InvalidChroot {
            chroot: chroot.to_owned(),
            error,
        };
        let started = Instant::now();
        match herdless_std::connect(&addr, SESSION).await {
            Err(e) => assert_eq!(e, expected, "{addr}"),
            Ok(_) => panic!("connected under {chroot}"),
        }
        match Session::connect(&addr, SESSION).await {
            Err(e) => assert_eq!(e, expected, "{addr}"),
            Ok(_) => panic!("a session under {chroot}"),
        }
        assert!(started.elapsed() < Duration::from_secs(1), "{addr}");
        assert!(expected
            .to_string()
            .starts_with(&format!("invalid chroot {chroot}: ")));
    }
    assert_eq!(proxy.connections(), 0, "something was sent");
}

/// The connection drops while the chroot is being checked: the client
/// reconnects by itself, and the check is asked again there rather than
/// failing the connect.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_lost_while_the_chroot_is_checked_is_waited_out() {
    let (_server, proxy, connecting) = checking(SESSION).await;
    proxy.reset();
    let client = tokio::time::timeout(Duration::from_secs(20), connecting)
        .await
        .expect("the connect ends")
        .unwrap()
        .expect("connected once the connection is back");
    assert_eq!(proxy.connections(), 2, "the connect itself was cut short");
    proxy.delay(Duration::ZERO, Duration::ZERO);
    let guard = Lock::new(&client, "/l").unwrap().acquire().await.unwrap();
    guard.release().await.unwrap();
}

/// The connection drops while the chroot is being checked and never comes
/// back: the connect fails once zookeeper-client gives the session up
/// (about a second past its timeout), rather than asking again for ever.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_lost_for_good_while_the_chroot_is_checked_fails_the_connect() {
    // Long enough for zookeeper-client to wait out two hops for an answer.
    const TIMEOUT: Duration = Duration::from_secs(4);
    let (_server, proxy, connecting) = checking(TIMEOUT).await;
    let cut = Instant::now();
    proxy.cut();
    match tokio::time::timeout(TIMEOUT * 3, connecting).await {
        Ok(result) => match result.unwrap() {
            Err(Error::Connect(e)) => assert!(
                cut.elapsed() <= TIMEOUT * 2,
                "gave up {:?} after the cut: {e}",
                cut.elapsed()
            ),
            other => panic!("the connect: {:?}", other.map(|_| ())),
        },
        Err(_) => panic!("the connect still asks for the chroot"),
    }
    assert_eq!(proxy.connections(), 1, "the connect itself was cut short");
}

/// Every connection fails just after the check has left, for as long as
/// the client reconnects (its session stays alive): the connect gives up
/// once the session timeout has passed, rather than asking for ever.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_link_failing_at_every_check_fails_the_connect_in_time() {
    /// `exists` of `/app`: its length, xid, type, the path and the watch
    /// flag.
    const CHECK: u64 = 4 + 4 + 4 + (4 + 4) + 1;
    const TIMEOUT: Duration = Duration::from_secs(4);
    let server = ZkServer::start();
    create(&root(&server).await, "/app").await;
    let proxy = Proxy::start(server.port());
    // The server's answers are held back long enough for the close to
    // come first.
    proxy.delay(Duration::from_millis(100), Duration::from_millis(100));
    proxy.close_each_after(OPENING + CHECK);
    let begun = Instant::now();
    let addr = format!("{}/app", proxy.addr());
    let connecting = herdless_std::connect(&addr, TIMEOUT);
    match tokio::time::timeout(TIMEOUT * 3, connecting).await {
        Ok(Err(Error::Connect(e))) => {
            assert!(
                begun.elapsed() <= TIMEOUT + Duration::from_secs(2),
                "gave up after {:?}: {e}",
                begun.elapsed()
            );
        }
        Ok(other) => panic!("the connect: {:?}", other.map(|_| ())),
        Err(_) => panic!("the connect still asks for the chroot"),
    }
    assert!(proxy.connections() >= 2, "asked once only");
}

/// The session expires, and someone deletes its chroot before the next
/// one is opened: the [`Session`] stops there, says why, and its recipes
/// hear that no session follows, rather than it opening a session every
/// 2 s for ever on which every request would fail.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_whose_chroot_is_deleted_stops_renewing() {
    const SHORT: Duration = Duration::from_secs(2);
    let server = ZkServer::start();
    let root = root(&server).await;
    create(&root, "/app").await;
    let proxy = Proxy::start(server.port());
    let options = ConnectOptions::new(SHORT);
    let session = options
        .session(&format!("{}/app", proxy.addr()))
        .await
        .unwrap();
    let lock = Lock::new(&session, "/locks/l").unwrap();
    let guard = lock.acquire().await.unwrap();

    proxy.cut();
    tokio::time::sleep(SHORT + Duration::from_millis(1500)).await;
    // The expired session's node is gone with it; the rest is deleted.
    delete_tree(&root, "/app").await;
    proxy.restore();
    tokio::time::timeout(Duration::from_secs(10), guard.lost())
        .await
        .expect("the holder hears its lock is lost");
    let deadline = Instant::now() + Duration::from_secs(20);
    while session.ended().is_none() {
        assert!(Instant::now() < deadline, "the session still renews");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(session.ended(), Some(Error::ChrootMissing("/app".into())));
    match tokio::time::timeout(Duration::from_secs(10), lock.acquire()).await {
        Ok(Err(Error::SessionEnded)) => {}
        Ok(other) => panic!("a lock on the ended session: {:?}", other.map(|_| ())),
        Err(_) => panic!("a lock on the ended session waits"),
    }
    let connections = proxy.connections();
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(
        proxy.connections(),
        connections,
        "the session keeps connecting under a chroot that is gone"
    );
    assert_eq!(children(&root, "/").await, ["zookeeper"], "nothing created");
}
