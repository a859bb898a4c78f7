//! The exclusive lock through `herdless-std` against a real ZooKeeper 3.8.
//!
//! Each test starts its own server on a free loopback port.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use herdless_std::{Client, Holding, Lock, LockGuard};
use herdless_tests::{Proxy, ZkServer};

const SESSION: Duration = Duration::from_secs(30);

async fn client(server: &ZkServer) -> Client {
    herdless_std::connect(&server.addr(), SESSION)
        .await
        .expect("connect to the test server")
}

/// Session timeout of the clients a test makes expire.
const SHORT_SESSION: Duration = Duration::from_secs(2);

/// A client connected through a proxy that can cut it off, with a short
/// session timeout.
async fn client_behind_proxy(server: &ZkServer) -> (Client, Proxy) {
    let proxy = Proxy::start(server.port());
    let client = herdless_std::connect(&proxy.addr(), SHORT_SESSION)
        .await
        .expect("connect through the proxy");
    (client, proxy)
}

/// Expires the session for real: the client is cut off for longer than its
/// session timeout, then learns of the expiry when it reconnects.
async fn expire(client: &Client, proxy: &Proxy) {
    proxy.cut();
    tokio::time::sleep(SHORT_SESSION + Duration::from_millis(1500)).await;
    proxy.restore();
    let deadline = Instant::now() + Duration::from_secs(20);
    while !client.state().is_terminated() {
        assert!(
            Instant::now() < deadline,
            "the client never heard of its expiry"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn children(client: &Client, dir: &str) -> Vec<String> {
    client.list_children(dir).await.unwrap_or_default()
}

async fn wait_until<F, Fut>(what: &str, timeout: Duration, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + timeout;
    while !check().await {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eight_sessions_keep_mutual_exclusion_over_hundreds_of_acquisitions() {
    let server = ZkServer::start();
    let inside = Arc::new(AtomicBool::new(false));
    let total = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for _ in 0..8 {
        let c = client(&server).await;
        let (inside, total) = (inside.clone(), total.clone());
        tasks.push(tokio::spawn(async move {
            let lock = Lock::new(&c, "/locks/mx").unwrap();
            for _ in 0..40 {
                let guard = lock.acquire().await.unwrap();
                assert!(!inside.swap(true, Ordering::SeqCst), "two holders at once");
                tokio::task::yield_now().await;
                inside.store(false, Ordering::SeqCst);
                total.fetch_add(1, Ordering::SeqCst);
                guard.release().await.unwrap();
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    assert_eq!(total.load(Ordering::SeqCst), 320);
    let c = client(&server).await;
    assert!(children(&c, "/locks/mx").await.is_empty(), "no node left");
}

#[tokio::test]
async fn uncontended_acquire_and_release_is_create_get_children_delete_on_the_wire() {
    let server = ZkServer::start();
    let c = client(&server).await;
    let lock = Lock::new(&c, "/locks/wire").unwrap();
    // Warm up: the first cycle also creates the directory.
    lock.acquire().await.unwrap().release().await.unwrap();
    let mut best = i64::MAX;
    for _ in 0..5 {
        let before = server.packets_received();
        let sent_before = lock.requests_sent();
        lock.acquire().await.unwrap().release().await.unwrap();
        let after = server.packets_received();
        assert_eq!(lock.requests_sent() - sent_before, 4);
        // The second mntr connection counts one packet itself.
        best = best.min(after - before - 1);
    }
    println!("packets per uncontended acquire+release: {best}");
    assert_eq!(
        best, 4,
        "one create, one getChildren, one getData watching the own node, one delete"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_release_with_twenty_waiters_sends_exactly_one_notification() {
    let server = ZkServer::start();
    let holder_client = client(&server).await;
    let holder = Lock::new(&holder_client, "/locks/herd").unwrap();
    let guard = holder.acquire().await.unwrap();
    // Its watch on its own node is answered just after `Acquired`.
    wait_until(
        "the holder watching its node",
        Duration::from_secs(10),
        || async { server.watch_count() == 1 },
    )
    .await;
    let watches_before = server.watch_count();

    let acquired = Arc::new(AtomicUsize::new(0));
    let mut waiters = Vec::new();
    let (stop_tx, _) = tokio::sync::broadcast::channel::<()>(1);
    for _ in 0..20 {
        let c = client(&server).await;
        let lock = Lock::new(&c, "/locks/herd").unwrap();
        let acquired = acquired.clone();
        let mut stop = stop_tx.subscribe();
        let l = lock.clone();
        waiters.push((
            lock,
            c,
            tokio::spawn(async move {
                let guard = l.acquire().await.unwrap();
                acquired.fetch_add(1, Ordering::SeqCst);
                let _ = stop.recv().await;
                guard.release().await.unwrap();
            }),
        ));
    }
    // Each waiter watches its predecessor and its own node.
    wait_until("20 waiters watching", Duration::from_secs(20), || async {
        server.watch_count() == watches_before + 40
    })
    .await;
    assert_eq!(children(&holder_client, "/locks/herd").await.len(), 21);
    let notified_before: u64 = waiters.iter().map(|(l, _, _)| l.notifications()).sum();
    guard.release().await.unwrap();
    wait_until("the next holder", Duration::from_secs(10), || async {
        acquired.load(Ordering::SeqCst) == 1
    })
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let notified: u64 = waiters
        .iter()
        .map(|(l, _, _)| l.notifications())
        .sum::<u64>()
        - notified_before;
    println!("notifications for one release with 20 waiters: {notified}");
    assert_eq!(notified, 1, "one release wakes exactly one waiter");
    assert_eq!(acquired.load(Ordering::SeqCst), 1);
    // Spent: the old holder's watch on its own node, the next holder's on
    // its predecessor.
    assert_eq!(server.watch_count(), watches_before + 38);

    let _ = stop_tx.send(());
    drop(stop_tx);
    for (_, _, task) in waiters {
        task.await.unwrap();
    }
    assert!(children(&holder_client, "/locks/herd").await.is_empty());
}

#[tokio::test]
async fn a_waiter_whose_session_ends_leaves_no_node() {
    let server = ZkServer::start();
    let a = client(&server).await;
    let (b, proxy) = client_behind_proxy(&server).await;
    let guard = Lock::new(&a, "/locks/closed")
        .unwrap()
        .acquire()
        .await
        .unwrap();
    let lock_b = Lock::new(&b, "/locks/closed").unwrap();
    let waiting = tokio::spawn(async move { lock_b.acquire().await });
    wait_until("b's node", Duration::from_secs(10), || async {
        children(&a, "/locks/closed").await.len() == 2
    })
    .await;
    expire(&b, &proxy).await;
    let result = tokio::time::timeout(Duration::from_secs(10), waiting)
        .await
        .expect("the waiter hears its session end")
        .unwrap();
    assert!(
        matches!(result, Err(herdless_std::Error::SessionEnded)),
        "{result:?}"
    );
    assert_eq!(children(&a, "/locks/closed").await.len(), 1);
    guard.release().await.unwrap();
    assert!(children(&a, "/locks/closed").await.is_empty());
}

#[tokio::test]
async fn dropped_acquire_timeout_and_try_acquire_leave_no_node() {
    let server = ZkServer::start();
    let a = client(&server).await;
    let b = client(&server).await;
    let guard = Lock::new(&a, "/locks/drop")
        .unwrap()
        .acquire()
        .await
        .unwrap();
    let lock_b = Lock::new(&b, "/locks/drop").unwrap();

    // CURATOR-79: an acquire abandoned under tokio::time::timeout.
    let dropped = tokio::time::timeout(Duration::from_millis(300), lock_b.acquire()).await;
    assert!(dropped.is_err(), "still held by a");
    wait_until(
        "the abandoned node to go",
        Duration::from_secs(5),
        || async { children(&a, "/locks/drop").await.len() == 1 },
    )
    .await;

    // try_acquire answers only once its node is gone.
    assert!(lock_b.try_acquire().await.unwrap().is_none());
    assert_eq!(children(&a, "/locks/drop").await.len(), 1);

    // The core's deadline, likewise.
    let started = Instant::now();
    assert!(lock_b
        .acquire_timeout(Duration::from_millis(200))
        .await
        .unwrap()
        .is_none());
    assert!(started.elapsed() >= Duration::from_millis(200));
    assert_eq!(children(&a, "/locks/drop").await.len(), 1);

    // A guard dropped without release still releases.
    drop(guard);
    let g = tokio::time::timeout(Duration::from_secs(5), lock_b.acquire())
        .await
        .expect("b gets the lock after a's guard is dropped")
        .unwrap();
    g.release().await.unwrap();
    assert!(children(&a, "/locks/drop").await.is_empty());
}

/// As with Curator's `acquire(0, ms)` and Kazoo's `acquire(timeout=0)`:
/// the listing that follows the create decides however long it took, so a
/// timeout shorter than a round trip takes a free lock and leads a vacant
/// election, and gives up on a held one without leaving a node.
#[tokio::test]
async fn a_zero_timeout_takes_a_free_lock_and_leads_a_vacant_election() {
    let server = ZkServer::start();
    let a = client(&server).await;
    let b = client(&server).await;
    let lock_a = Lock::new(&a, "/locks/zero").unwrap();
    let lock_b = Lock::new(&b, "/locks/zero").unwrap();
    for _ in 0..5 {
        let guard = lock_a
            .acquire_timeout(Duration::ZERO)
            .await
            .unwrap()
            .expect("a free lock is taken with a zero timeout");
        assert!(lock_b
            .acquire_timeout(Duration::ZERO)
            .await
            .unwrap()
            .is_none());
        assert_eq!(children(&a, "/locks/zero").await.len(), 1);
        guard.release().await.unwrap();
    }

    let dir = "/election/zero";
    let leadership = herdless_std::Election::new(&a, dir)
        .unwrap()
        .campaign_timeout(Duration::ZERO)
        .await
        .unwrap()
        .expect("a vacant election is led with a zero timeout");
    let other = herdless_std::Election::new(&b, dir).unwrap();
    assert!(other
        .campaign_timeout(Duration::ZERO)
        .await
        .unwrap()
        .is_none());
    let left = children(&a, dir).await;
    assert_eq!(
        left.len(),
        2,
        "the leader's node and its acknowledgement: {left:?}"
    );
    leadership.resign().await.unwrap();
}

#[tokio::test]
async fn expiry_of_the_holder_hands_over_and_its_guard_hears_lost() {
    let server = ZkServer::start();
    let (a, proxy) = client_behind_proxy(&server).await;
    let b = client(&server).await;
    let guard_a = Lock::new(&a, "/locks/expiry")
        .unwrap()
        .acquire()
        .await
        .unwrap();
    assert_eq!(guard_a.holding(), Holding::Held);
    let lock_b = Lock::new(&b, "/locks/expiry").unwrap();
    let waiting = tokio::spawn(async move { lock_b.acquire().await });
    wait_until("b's node", Duration::from_secs(10), || async {
        children(&b, "/locks/expiry").await.len() == 2
    })
    .await;

    let expiring = tokio::spawn(async move {
        expire(&a, &proxy).await;
    });
    tokio::time::timeout(Duration::from_secs(10), guard_a.suspended())
        .await
        .expect("a's guard hears Suspended as soon as the connection drops");
    assert_eq!(guard_a.holding(), Holding::Suspended);
    expiring.await.unwrap();
    let guard_b = tokio::time::timeout(Duration::from_secs(10), waiting)
        .await
        .expect("b takes over")
        .unwrap()
        .unwrap();
    tokio::time::timeout(Duration::from_secs(10), guard_a.lost())
        .await
        .expect("a's guard hears that the lock is lost");
    assert_eq!(guard_a.holding(), Holding::Lost);
    assert!(guard_b.is_held());
    guard_b.release().await.unwrap();
}

/// `a` takes the lock on `dir` and `b` queues behind it; returns `a`'s
/// guard and `b`'s wait, which ends with the moment `b` got the lock,
/// once `b`'s node is in line.
async fn held_with_a_waiter(
    a: &Client,
    b: &Client,
    dir: &str,
) -> (LockGuard, tokio::task::JoinHandle<(Instant, LockGuard)>) {
    let guard_a = Lock::new(a, dir).unwrap().acquire().await.unwrap();
    let lock_b = Lock::new(b, dir).unwrap();
    let waiting = tokio::spawn(async move {
        let guard = lock_b.acquire().await.unwrap();
        (Instant::now(), guard)
    });
    wait_until("b's node", Duration::from_secs(10), || async {
        children(b, dir).await.len() == 2
    })
    .await;
    (guard_a, waiting)
}

/// `a` hears its lock is lost, then `b` takes over: when each happened.
async fn lost_then_taken_over(
    guard_a: &LockGuard,
    waiting: tokio::task::JoinHandle<(Instant, LockGuard)>,
) -> (Instant, Instant, LockGuard) {
    tokio::time::timeout(Duration::from_secs(20), guard_a.lost())
        .await
        .expect("a hears its lock is lost");
    let lost = Instant::now();
    let (held, guard_b) = tokio::time::timeout(Duration::from_secs(20), waiting)
        .await
        .expect("b takes over")
        .unwrap();
    (lost, held, guard_b)
}

/// Cut off without a word (its packets swallowed, no reset), a holder
/// cannot hear its session expire: it is told the lock is lost before the
/// server can have expired the session, so before anyone else holds it,
/// and it stays lost when the session comes back. Before, it heard so
/// only when its client gave the session up, 7/5 of the timeout after
/// the last answer: after the next holder was in.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_holder_cut_off_silently_is_told_lost_before_anyone_else_holds() {
    const TIMEOUT: Duration = Duration::from_secs(4);
    let server = ZkServer::start();
    let b = client(&server).await;
    for round in 0..3 {
        let dir = format!("/locks/silent{round}");
        let proxy = Proxy::start(server.port());
        let a = herdless_std::connect(&proxy.addr(), TIMEOUT).await.unwrap();
        let (guard_a, waiting) = held_with_a_waiter(&a, &b, &dir).await;
        proxy.silence();
        let cut = Instant::now();
        let (lost, held, guard_b) = lost_then_taken_over(&guard_a, waiting).await;
        println!(
            "round {round}: a told lost {:?} after the cut, b in after {:?}",
            lost - cut,
            held - cut
        );
        assert!(lost < held, "round {round}: b held before a was told");
        proxy.restore();
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert_eq!(guard_a.holding(), Holding::Lost, "round {round}");
        drop(guard_a);
        guard_b.release().await.unwrap();
    }
}

/// A holder whose sends are lost while what the server sends still comes
/// (a one-way failure), and which hears notifications meanwhile (its
/// session watches three nodes that another client changes one after the
/// other), is told the lock is lost before the next holder is in: a
/// notification says nothing of what the server last heard from it.
/// Before, each one put off the client's read timeout, and the holder
/// heard `Lost` some two seconds after the next one was in.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_holder_whose_sends_are_lost_is_told_lost_before_anyone_else_holds() {
    use herdless_std::zookeeper_client::{Acls, CreateMode, EventType};
    const TIMEOUT: Duration = Duration::from_secs(4);
    let server = ZkServer::start();
    let b = client(&server).await;
    let proxy = Proxy::start(server.port());
    let a = herdless_std::connect(&proxy.addr(), TIMEOUT).await.unwrap();
    let open = CreateMode::Persistent.with_acls(Acls::anyone_all());
    let mut watchers = Vec::new();
    for i in 0..3 {
        let path = format!("/deaf-touch-{i}");
        b.create(&path, b"", &open).await.unwrap();
        let (_, _, watcher) = a.get_and_watch_data(&path).await.unwrap();
        watchers.push(watcher);
    }
    let (guard_a, waiting) = held_with_a_waiter(&a, &b, "/locks/deaf").await;

    proxy.deafen();
    let cut = Instant::now();
    let toucher = b.clone();
    // The first before a can have noticed anything (0.8 s at the
    // earliest), each next one before the last would have let it notice.
    let touch = tokio::spawn(async move {
        for i in 0..3u64 {
            let at = cut + Duration::from_millis(500 + 1_400 * i);
            tokio::time::sleep_until(at.into()).await;
            let path = format!("/deaf-touch-{i}");
            toucher.set_data(&path, b"x", None).await.unwrap();
        }
    });
    let first = watchers.remove(0);
    let heard = tokio::spawn(async move { first.changed().await.event_type });
    let (lost, held, guard_b) = lost_then_taken_over(&guard_a, waiting).await;
    touch.await.unwrap();
    let heard = tokio::time::timeout(Duration::from_secs(1), heard)
        .await
        .expect("a's first watch ended")
        .unwrap();
    assert_eq!(
        heard,
        EventType::NodeDataChanged,
        "a heard the first notification after its sends were lost"
    );
    println!(
        "a was told lost {:?} after its sends were lost, b in after {:?}",
        lost - cut,
        held - cut
    );
    assert!(lost < held, "b held {:?} before a was told", lost - held);
    drop(guard_a);
    guard_b.release().await.unwrap();
}

/// A holder whose client is never idle (a read every 20 ms) keeps its one
/// connection: with the read timeout counted from answered pings, the
/// client pings on schedule however busy it is. Pinging only after a
/// pause in sending, as zookeeper-client did, it would drop the
/// connection, and suspend the lock, every 2/5 of the timeout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_busy_holder_keeps_its_connection() {
    const TIMEOUT: Duration = Duration::from_secs(2);
    let server = ZkServer::start();
    let proxy = Proxy::start(server.port());
    let a = herdless_std::connect(&proxy.addr(), TIMEOUT).await.unwrap();
    let guard = Lock::new(&a, "/locks/busy")
        .unwrap()
        .acquire()
        .await
        .unwrap();
    let started = Instant::now();
    while started.elapsed() < TIMEOUT * 3 {
        a.get_data("/locks/busy").await.unwrap();
        assert_eq!(guard.holding(), Holding::Held, "{:?} in", started.elapsed());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(proxy.connections(), 1, "the connection was dropped");
    guard.release().await.unwrap();
}

#[tokio::test]
async fn a_lock_on_a_session_is_acquired_again_after_its_session_expired() {
    let server = ZkServer::start();
    let proxy = Proxy::start(server.port());
    let session = herdless_std::Session::connect(&proxy.addr(), SHORT_SESSION)
        .await
        .unwrap();
    let lock = Lock::new(&session, "/locks/renewed").unwrap();
    let guard = lock.acquire().await.unwrap();
    let first_session = session.session_id();
    proxy.cut();
    tokio::time::sleep(SHORT_SESSION + Duration::from_millis(1500)).await;
    proxy.restore();
    tokio::time::timeout(Duration::from_secs(20), guard.lost())
        .await
        .expect("the guard hears that the lock is lost");
    tokio::time::timeout(Duration::from_secs(20), session.renewed(first_session))
        .await
        .expect("a new session is opened");
    let again = tokio::time::timeout(Duration::from_secs(10), lock.acquire())
        .await
        .expect("acquired on the new session")
        .unwrap();
    let observer = client(&server).await;
    let (_, stat) = observer.get_data(again.node_path()).await.unwrap();
    assert_eq!(stat.ephemeral_owner, session.session_id());
    again.release().await.unwrap();
}

/// Handles on a client whose session has expired (a plain `Client`, which
/// no session follows) answer `SessionEnded` at once, whether they were
/// made before the expiry or after: none waits for a session that will
/// never come, and neither do observers waiting for news.
#[tokio::test]
async fn handles_on_an_expired_client_fail_at_once() {
    let server = ZkServer::start();
    let (a, proxy) = client_behind_proxy(&server).await;
    let queue = herdless_std::queue::Queue::new(&a, "/expired/queue")
        .await
        .unwrap();
    // Observers made before the expiry, which send nothing after it.
    let mut config = herdless_std::config::Config::watch(&a, "/expired/config").unwrap();
    let mut group = herdless_std::group::GroupObserver::start(&a, "/expired/group").unwrap();
    assert_eq!(
        config.changed().await,
        Ok(herdless_std::config::Value::Missing)
    );
    expire(&a, &proxy).await;
    let limit = Duration::from_secs(2);
    let changed = tokio::time::timeout(limit, config.changed()).await;
    assert!(
        matches!(changed, Ok(Err(herdless_std::Error::SessionEnded))),
        "{changed:?}"
    );
    let listed = tokio::time::timeout(limit, group.changed()).await;
    assert!(
        matches!(listed, Ok(Err(herdless_std::Error::SessionEnded))),
        "{listed:?}"
    );
    let put = tokio::time::timeout(limit, queue.put(b"late")).await;
    assert!(
        matches!(put, Ok(Err(herdless_std::Error::SessionEnded))),
        "{put:?}"
    );
    let made_after =
        tokio::time::timeout(limit, herdless_std::queue::Queue::new(&a, "/expired/other")).await;
    assert!(
        matches!(made_after, Ok(Err(herdless_std::Error::SessionEnded))),
        "{made_after:?}"
    );
    let acquire =
        tokio::time::timeout(limit, Lock::new(&a, "/expired/lock").unwrap().acquire()).await;
    assert!(
        matches!(acquire, Ok(Err(herdless_std::Error::SessionEnded))),
        "{acquire:?}"
    );
}
