//! Barriers against a real ZooKeeper 3.8.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use herdless_std::barrier::{Barrier, DoubleBarrier};
use herdless_std::Client;
use herdless_tests::{Proxy, ZkServer};

const SESSION: Duration = Duration::from_secs(30);
const SHORT_SESSION: Duration = Duration::from_secs(2);

async fn client(server: &ZkServer) -> Client {
    herdless_std::connect(&server.addr(), SESSION)
        .await
        .expect("connect to the test server")
}

/// A wait reads the node behind a no-op write (a `check` sent as a one-op
/// `multi`): a server that lags behind the quorum must apply every write
/// that returned before it, so a wait begun after the owner's `set`
/// returned cannot read the node as missing. The write reaches the
/// server as a transaction of its own: between two creates of an
/// observer, the server's zxid moves by one more.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wait_reads_behind_a_write_of_its_own() {
    let server = ZkServer::start();
    let observer = client(&server).await;
    let waiter = client(&server).await;
    let create = |path: &'static str| {
        let observer = observer.clone();
        async move {
            let options = zookeeper_client::CreateMode::Persistent
                .with_acls(zookeeper_client::Acls::anyone_all());
            let (stat, _) = observer.create(path, b"", &options).await.unwrap();
            stat.czxid
        }
    };
    let before = create("/before").await;
    let after_nothing = create("/between").await;
    assert_eq!(after_nothing, before + 1, "nothing else writes");
    Barrier::new(&waiter, "/app/never-set")
        .unwrap()
        .wait()
        .await
        .unwrap();
    let after_wait = create("/after").await;
    assert_eq!(after_wait, after_nothing + 2, "one write ahead of the read");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiters_pass_when_the_barrier_is_removed_and_leave_no_watch() {
    let server = ZkServer::start();
    let owner_client = client(&server).await;
    let owner = Barrier::new(&owner_client, "/app/start").unwrap();
    owner.set().await.unwrap();
    let passed = Arc::new(AtomicUsize::new(0));
    let mut waiters = Vec::new();
    for _ in 0..5 {
        let c = client(&server).await;
        let passed = passed.clone();
        waiters.push(tokio::spawn(async move {
            Barrier::new(&c, "/app/start")
                .unwrap()
                .wait()
                .await
                .unwrap();
            passed.fetch_add(1, Ordering::SeqCst);
        }));
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        passed.load(Ordering::SeqCst),
        0,
        "nobody passes a standing barrier"
    );
    assert_eq!(server.watch_count(), 5, "one watch per waiter");
    owner.remove().await.unwrap();
    for w in waiters {
        tokio::time::timeout(Duration::from_secs(10), w)
            .await
            .expect("every waiter passes")
            .unwrap();
    }
    assert_eq!(server.watch_count(), 0, "no watch left behind");
    // A barrier that is not set lets a waiter through at once.
    Barrier::new(&owner_client, "/app/start")
        .unwrap()
        .wait()
        .await
        .unwrap();
    assert_eq!(server.watch_count(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_processes_enter_together_and_leave_together_despite_one_killed_inside() {
    let server = ZkServer::start();
    let started = Instant::now();
    let last_arrival = Arc::new(std::sync::Mutex::new(None::<Instant>));
    let mut tasks = Vec::new();
    // Process 0 runs behind a proxy and is killed inside the barrier.
    let proxy = Proxy::start(server.port());
    let victim = herdless_std::connect(&proxy.addr(), SHORT_SESSION)
        .await
        .unwrap();
    let (victim_in_tx, victim_in_rx) = tokio::sync::oneshot::channel();
    tasks.push(tokio::spawn(async move {
        let b = DoubleBarrier::new(&victim, "/app/phase", "p0").unwrap();
        // Inside, and never leaves: its host is cut off below.
        let _inside = b.enter(10).await.unwrap();
        let _ = victim_in_tx.send(());
        std::mem::forget(b);
        (Instant::now(), None)
    }));
    for i in 1..10 {
        let c = client(&server).await;
        let last_arrival = last_arrival.clone();
        // Arrivals are spread out; the last one comes 300 ms later.
        tokio::time::sleep(Duration::from_millis(if i == 9 { 300 } else { 20 })).await;
        tasks.push(tokio::spawn(async move {
            let b = DoubleBarrier::new(&c, "/app/phase", &format!("p{i}")).unwrap();
            *last_arrival.lock().unwrap() = Some(Instant::now());
            let inside = b.enter(10).await.unwrap();
            let entered = Instant::now();
            // Work of different lengths.
            tokio::time::sleep(Duration::from_millis(50 * i)).await;
            inside.leave().await.unwrap();
            (entered, Some(Instant::now()))
        }));
    }
    victim_in_rx.await.expect("the victim entered");
    proxy.cut();
    let mut entered = Vec::new();
    let mut left = Vec::new();
    for t in tasks {
        let (e, l) = tokio::time::timeout(Duration::from_secs(30), t)
            .await
            .expect("every process gets through")
            .unwrap();
        entered.push(e);
        left.extend(l);
    }
    let last = last_arrival.lock().unwrap().expect("arrivals");
    assert!(
        entered.iter().all(|e| *e >= last),
        "nobody entered before the tenth arrived"
    );
    // The longest worker (p9, 450 ms) leaves last; nobody finished leaving
    // before it started to.
    let first_left = left.iter().min().unwrap();
    assert!(
        *first_left >= last + Duration::from_millis(450),
        "nobody left before all had"
    );
    let observer = client(&server).await;
    assert!(observer
        .list_children("/app/phase")
        .await
        .unwrap()
        .is_empty());
    println!(
        "10 processes, one killed inside: all through in {:?}",
        started.elapsed()
    );
}

/// Giving up on a double barrier leaves no node for anyone to count or
/// wait for: an enter that times out, one dropped under
/// `tokio::time::timeout`, a leave that times out and a withdrawal.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_double_barrier_given_up_leaves_no_node() {
    const DIR: &str = "/app/give-up";
    let server = ZkServer::start();
    let observer = client(&server).await;
    let names = || async {
        let mut names = observer.list_children(DIR).await.unwrap_or_default();
        names.retain(|n| n != "ready");
        names.sort();
        names
    };
    let (ca, cb, cc, cd) = (
        client(&server).await,
        client(&server).await,
        client(&server).await,
        client(&server).await,
    );
    let a = DoubleBarrier::new(&ca, DIR, "a").unwrap();
    let b = DoubleBarrier::new(&cb, DIR, "b").unwrap();
    let c = DoubleBarrier::new(&cc, DIR, "c").unwrap();
    let d = DoubleBarrier::new(&cd, DIR, "d").unwrap();

    let started = Instant::now();
    let timed_out = a.enter_timeout(3, Duration::from_millis(300)).await;
    assert!(matches!(timed_out, Ok(None)), "{timed_out:?}");
    assert!(started.elapsed() >= Duration::from_millis(300));
    assert!(names().await.is_empty(), "a timed-out enter left its node");

    let dropped = tokio::time::timeout(Duration::from_millis(300), b.enter(3)).await;
    assert!(dropped.is_err(), "entered alone");
    let deadline = Instant::now() + Duration::from_secs(5);
    while !names().await.is_empty() {
        assert!(Instant::now() < deadline, "a dropped enter left its node");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    // Neither process that gave up counts (CURATOR-318): one more is not
    // three.
    let alone = c
        .enter_timeout(3, Duration::from_millis(300))
        .await
        .unwrap();
    assert!(alone.is_none(), "entered with processes that gave up");
    let (inside_c, inside_d) =
        tokio::join!(c.enter_timeout(2, Duration::from_secs(10)), d.enter(2));
    let (inside_c, inside_d) = (inside_c.unwrap().expect("c entered"), inside_d.unwrap());
    assert_eq!(names().await, ["c", "d"]);

    // "c", the lowest, keeps its node while it waits for "d", which stays.
    let left = inside_c.leave_timeout(Duration::from_millis(300)).await;
    assert!(matches!(left, Ok(false)), "{left:?}");
    assert_eq!(names().await, ["d"], "a timed-out leave left its node");
    tokio::time::timeout(Duration::from_secs(5), inside_d.withdraw())
        .await
        .expect("a withdrawal waits for nobody")
        .unwrap();
    assert!(names().await.is_empty());
    // And the barrier works on: "b" enters again after its dropped call.
    let (inside_b, inside_c) = tokio::join!(b.enter(2), c.enter(2));
    let (inside_b, inside_c) = (inside_b.unwrap(), inside_c.unwrap());
    let (left_b, left_c) = tokio::join!(inside_b.leave(), inside_c.leave());
    left_b.unwrap();
    left_c.unwrap();
    let left = observer.list_children(DIR).await.unwrap();
    assert!(left.is_empty(), "after the last leave: {left:?}");
}
