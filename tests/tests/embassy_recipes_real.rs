//! Every other recipe of the core on the embedded driver (`herdless-embassy`)
//! against a real ZooKeeper 3.8, each beside `herdless-std` peers: the
//! configuration value, group membership (member and observer), the
//! barrier and double barrier, the queue and priority queue, and two-phase
//! commit; and several of them at once on one embedded session. The
//! driver runs over tokio's `TcpStream` (see `herdless_tests::tokio_transport`),
//! with the same session state machine and wire codec a microcontroller
//! runs.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use herdless_core::barrier::Barrier;
use herdless_core::config::Config;
use herdless_core::double_barrier::DoubleBarrier;
use herdless_core::member::Member;
use herdless_core::members;
use herdless_core::naming::Guid;
use herdless_core::queue::{Consumer, Producer};
use herdless_core::two_phase::{Outcome, TwoPhase, Variant, Vote};
use herdless_core::Version;
use herdless_embassy::wire::SessionConfig;
use herdless_embassy::{Buffers, Error, Written, Zk};
use herdless_std::config::Written as StdWritten;
use herdless_tests::tokio_transport::{drive_until, driver, TokioTransport};
use herdless_tests::{Proxy, ZkServer};

/// How long any one step may take before the test fails instead of hanging.
const STEP: Duration = Duration::from_secs(10);

async fn std_client(server: &ZkServer) -> herdless_std::Client {
    herdless_std::connect(&server.addr(), Duration::from_secs(30))
        .await
        .expect("connect a herdless-std client")
}

async fn mkdir(client: &herdless_std::Client, path: &str) {
    let open =
        zookeeper_client::CreateMode::Persistent.with_acls(zookeeper_client::Acls::anyone_all());
    client.create(path, b"", &open).await.unwrap();
}

/// Creates `path` with an ACL that lets anyone read it and change its ACL,
/// and nothing else: no creating or deleting below it, no writing it.
async fn closed(client: &herdless_std::Client, path: &str, data: &[u8]) {
    use zookeeper_client::{Acl, Acls, AuthId, CreateMode, Permission};
    let acl = [Acl::new(
        Permission::READ | Permission::ADMIN,
        AuthId::anyone(),
    )];
    let mode = CreateMode::Persistent.with_acls(Acls::new(&acl));
    client.create(path, data, &mode).await.unwrap();
}

fn guid() -> Guid {
    Guid::from_random_bytes(uuid::Uuid::new_v4().into_bytes())
}

/// The session timeout every embedded driver here asks for.
const TIMEOUT_MS: u32 = 10_000;

/// Fails the test if `fut` takes longer than [`STEP`].
async fn step<F: std::future::Future>(what: &str, fut: F) -> F::Output {
    tokio::time::timeout(STEP, fut)
        .await
        .unwrap_or_else(|_| panic!("timed out: {what}"))
}

fn stats(name: &str, mut samples: Vec<Duration>) {
    samples.sort();
    let median = samples[samples.len() / 2];
    let max = samples[samples.len() - 1];
    println!(
        "{name}: {} samples, median {median:?}, max {max:?}",
        samples.len()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embassy_config_watcher_sees_every_std_version_and_its_compare_and_set_conflicts_with_std()
{
    let server = ZkServer::start();
    let client = std_client(&server).await;
    mkdir(&client, "/plant").await;
    let writer = Arc::new(herdless_std::config::Config::watch(&client, "/plant/config").unwrap());

    let (mut rx, mut tx) = ([0u8; 4096], [0u8; 1024]);
    let mut config: Config = Config::new("/plant/config").unwrap();
    let mut zk = driver(server.addr(), &mut rx, &mut tx, TIMEOUT_MS);
    let id = zk.add(&mut config).unwrap();
    zk.connect().await.unwrap();
    assert_eq!(
        step("missing", zk.handle(id).changed()).await.unwrap(),
        None,
        "the node does not exist yet"
    );

    // Lockstep: the std writer sets the next version only once the device
    // has reported the previous one, so every version must be seen.
    const LOCKSTEP: i32 = 20;
    let (seen_tx, mut seen_rx) = tokio::sync::mpsc::unbounded_channel::<i32>();
    let w = writer.clone();
    let lockstep = tokio::spawn(async move {
        assert_eq!(
            w.create(b"rate=0").await.unwrap(),
            StdWritten::Updated { version: 0 }
        );
        assert_eq!(seen_rx.recv().await, Some(0));
        let mut latencies = Vec::new();
        for version in 1..=LOCKSTEP {
            let started = Instant::now();
            let written = w
                .set(format!("rate={version}").as_bytes(), Some(version - 1))
                .await
                .unwrap();
            assert_eq!(written, StdWritten::Updated { version });
            assert_eq!(seen_rx.recv().await, Some(version));
            latencies.push(started.elapsed());
        }
        latencies
    });
    let mut seen = Vec::new();
    while seen.last() != Some(&LOCKSTEP) {
        let version = step("the next version", zk.handle(id).changed())
            .await
            .unwrap()
            .expect("the value exists");
        let value = zk.handle(id).value().expect("a value").to_vec();
        assert_eq!(value, format!("rate={version}").into_bytes());
        seen.push(version);
        seen_tx.send(version).unwrap();
    }
    assert_eq!(seen, (0..=LOCKSTEP).collect::<Vec<_>>());
    stats(
        "config, std set() to the embassy watcher reporting it (round trip)",
        lockstep.await.unwrap(),
    );

    // A burst: versions may coalesce, but they only grow and end on the
    // latest.
    const LAST: i32 = LOCKSTEP + 40;
    let w = writer.clone();
    let burst = tokio::spawn(async move {
        for version in LOCKSTEP + 1..=LAST {
            w.set(format!("rate={version}").as_bytes(), None)
                .await
                .unwrap();
        }
    });
    let mut burst_seen = Vec::new();
    while burst_seen.last() != Some(&LAST) {
        let version = step("the burst's versions", zk.handle(id).changed())
            .await
            .unwrap()
            .expect("the value exists");
        assert_eq!(
            zk.handle(id).value().unwrap(),
            format!("rate={version}").as_bytes()
        );
        assert!(
            burst_seen.last().is_none_or(|last| *last < version) && version > LOCKSTEP,
            "versions went back: {burst_seen:?} then {version}"
        );
        burst_seen.push(version);
    }
    burst.await.unwrap();
    println!(
        "config burst of {} std writes: the embassy watcher reported {} versions, ending on {LAST}",
        LAST - LOCKSTEP,
        burst_seen.len()
    );

    // A compare-and-set against a stale version is refused and changes
    // nothing.
    let current = zk.handle(id).version().unwrap();
    assert_eq!(current, LAST);
    assert_eq!(
        zk.handle(id)
            .set(b"stale", Version::Exactly(current - 1))
            .await
            .unwrap(),
        Written::Conflict
    );
    assert_eq!(
        client.get_data("/plant/config").await.unwrap().0,
        format!("rate={LAST}").into_bytes()
    );

    // Concurrent compare-and-set from both sides against the same version:
    // exactly one wins, and both watchers end on the winner's data.
    let (mut device_wins, mut std_wins) = (0, 0);
    for round in 0..10 {
        let base = zk.handle(id).version().unwrap();
        let go = Arc::new(tokio::sync::Barrier::new(2));
        let (w, g) = (writer.clone(), go.clone());
        let std_data = format!("std-{round}");
        let std_write = tokio::spawn(async move {
            g.wait().await;
            w.set(std_data.as_bytes(), Some(base)).await.unwrap()
        });
        go.wait().await;
        let device_data = format!("device-{round}");
        let device = step(
            "the device's write",
            zk.handle(id)
                .set(device_data.as_bytes(), Version::Exactly(base)),
        )
        .await
        .unwrap();
        let std = std_write.await.unwrap();
        let winner = match (device, std) {
            (Written::Updated { version }, StdWritten::Conflict) => {
                assert_eq!(version, base + 1);
                device_wins += 1;
                device_data
            }
            (Written::Conflict, StdWritten::Updated { version }) => {
                assert_eq!(version, base + 1);
                std_wins += 1;
                format!("std-{round}")
            }
            other => panic!("round {round}: not exactly one winner: {other:?}"),
        };
        while zk.handle(id).version() != Some(base + 1) {
            step("the winner's version", zk.handle(id).changed())
                .await
                .unwrap();
        }
        assert_eq!(zk.handle(id).value().unwrap(), winner.as_bytes());
        let (data, stat) = client.get_data("/plant/config").await.unwrap();
        assert_eq!((data, stat.version), (winner.into_bytes(), base + 1));
    }
    println!(
        "config compare-and-set races: embassy won {device_wins}, std won {std_wins} of 10, always exactly one"
    );
    zk.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embassy_member_is_seen_by_std_and_embassy_observer_follows_std_members() {
    let server = ZkServer::start();
    let client = std_client(&server).await;
    let mut group = herdless_std::group::GroupObserver::start(&client, "/plant/devices").unwrap();

    let (mut rx, mut tx) = ([0u8; 4096], [0u8; 1024]);
    let mut member: Member = Member::new("/plant/devices", "dev-7").unwrap();
    let mut observer: members::Observer = members::Observer::new("/plant/devices").unwrap();
    let mut zk = driver(server.addr(), &mut rx, &mut tx, TIMEOUT_MS);
    let me = zk.add(&mut member).unwrap();
    let view = zk.add(&mut observer).unwrap();
    zk.connect().await.unwrap();

    // The device joins; std sees it with its data.
    let started = Instant::now();
    step("join", zk.handle(me).join(b"10.0.0.7:502"))
        .await
        .unwrap();
    assert!(zk.handle(me).is_in());
    assert_eq!(
        herdless_std::group::members(&client, "/plant/devices")
            .await
            .unwrap(),
        ["dev-7"]
    );
    assert_eq!(
        herdless_std::group::lookup(&client, "/plant/devices", "dev-7")
            .await
            .unwrap()
            .as_deref(),
        Some(&b"10.0.0.7:502"[..])
    );
    let change = step("the std watch sees the device", group.changed())
        .await
        .unwrap();
    assert_eq!(change.joined, ["dev-7"]);
    println!(
        "embassy member joined, std GroupObserver saw it {:?} after the join started",
        started.elapsed()
    );

    // The embassy observer sees the device itself, then a std member come
    // and go.
    while !zk.handle(view).contains("dev-7") {
        step("the observer's first list", zk.handle(view).changed())
            .await
            .unwrap();
    }
    let other = std_client(&server).await;
    let started = Instant::now();
    let plc = herdless_std::GroupMember::join(&other, "/plant/devices", "plc-1", b"10.0.0.1")
        .await
        .unwrap();
    let (joined, left) = step("the observer sees plc-1", zk.handle(view).changed())
        .await
        .unwrap();
    let join_seen = started.elapsed();
    assert_eq!((joined, left), (1, 0));
    assert_eq!(
        zk.handle(view)
            .recipe()
            .unwrap()
            .members()
            .collect::<Vec<_>>(),
        ["dev-7", "plc-1"]
    );
    let started = Instant::now();
    plc.leave().await.unwrap();
    let (joined, left) = step("the observer sees plc-1 leave", zk.handle(view).changed())
        .await
        .unwrap();
    let leave_seen = started.elapsed();
    assert_eq!((joined, left), (0, 1));
    assert!(!zk.handle(view).contains("plc-1"));
    println!(
        "embassy observer: a std member's join seen {join_seen:?} after it started, its leave {leave_seen:?}"
    );

    // The device leaves; std and its own observer see it go.
    let started = Instant::now();
    step("leave", zk.handle(me).leave()).await.unwrap();
    assert!(!zk.handle(me).is_in());
    // The watch reports changes relative to its last answer, so plc-1's
    // visit may show up first (its join, its leave, or both netted out).
    loop {
        let change = step("the std watch sees the device leave", group.changed())
            .await
            .unwrap();
        let only_plc = |names: &[String]| names.iter().all(|n| n == "plc-1");
        assert!(only_plc(&change.joined), "unexpected change {change:?}");
        if change.left.iter().any(|n| n == "dev-7") {
            assert!(change.left.len() <= 2, "unexpected change {change:?}");
            break;
        }
        assert!(only_plc(&change.left), "unexpected change {change:?}");
    }
    println!(
        "embassy member left, std GroupObserver saw it {:?} after the leave started",
        started.elapsed()
    );
    assert!(herdless_std::group::members(&client, "/plant/devices")
        .await
        .unwrap()
        .is_empty());
    let (_, left) = step(
        "the observer sees the device leave",
        zk.handle(view).changed(),
    )
    .await
    .unwrap();
    assert_eq!(left, 1);
    assert!(zk.handle(view).recipe().unwrap().is_empty());
    zk.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embassy_barrier_waiter_passes_only_when_std_removes_it_and_the_other_way_round() {
    let server = ZkServer::start();
    let client = std_client(&server).await;
    let std_barrier =
        Arc::new(herdless_std::barrier::Barrier::new(&client, "/plant/start").unwrap());
    std_barrier.set().await.unwrap();

    let (mut rx, mut tx) = ([0u8; 4096], [0u8; 1024]);
    let mut barrier: Barrier = Barrier::new("/plant/start").unwrap();
    let mut zk = driver(server.addr(), &mut rx, &mut tx, TIMEOUT_MS);
    let id = zk.add(&mut barrier).unwrap();
    zk.connect().await.unwrap();

    // Held while the barrier stands.
    let early = tokio::time::timeout(Duration::from_millis(500), zk.handle(id).wait()).await;
    assert!(early.is_err(), "passed a barrier that stands: {early:?}");

    // Released when std removes it (the wait above goes on in the recipe).
    let removed_at = Arc::new(Mutex::new(None::<Instant>));
    let (b, at) = (std_barrier.clone(), removed_at.clone());
    let remover = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        *at.lock().unwrap() = Some(Instant::now());
        b.remove().await.unwrap();
    });
    step("the wait", zk.handle(id).wait()).await.unwrap();
    let removed = removed_at
        .lock()
        .unwrap()
        .expect("passed before std removed the barrier");
    println!(
        "barrier: embassy waiter passed {:?} after std started removing it",
        removed.elapsed()
    );
    remover.await.unwrap();

    // The other way round: the device raises it, a std process waits.
    step("set", zk.handle(id).set()).await.unwrap();
    let other = std_client(&server).await;
    let std_waiter = herdless_std::barrier::Barrier::new(&other, "/plant/start").unwrap();
    let waiting = tokio::spawn(async move {
        std_waiter.wait().await.unwrap();
        Instant::now()
    });
    zk.run_for(embassy_time::Duration::from_millis(500))
        .await
        .unwrap();
    assert!(
        !waiting.is_finished(),
        "the std waiter passed a standing barrier"
    );
    let removing = Instant::now();
    step("remove", zk.handle(id).remove()).await.unwrap();
    let passed = step("the std waiter", waiting).await.unwrap();
    println!(
        "barrier: std waiter passed {:?} after the embassy device started removing it",
        passed - removing
    );
    assert!(!zk.handle(id).recipe().unwrap().is_waiting());
    zk.close().await.unwrap();
}

/// Arrival and departure counts shared by the double barrier's processes.
#[derive(Default)]
struct Crowd {
    arrived: AtomicU32,
    leaving: AtomicU32,
    last_arrival: Mutex<Option<Instant>>,
    entered_after: Mutex<Vec<(String, Duration)>>,
}

impl Crowd {
    fn arrive(&self) {
        if self.arrived.fetch_add(1, Ordering::SeqCst) + 1 == 4 {
            *self.last_arrival.lock().unwrap() = Some(Instant::now());
        }
    }

    fn entered(&self, name: &str) {
        assert_eq!(
            self.arrived.load(Ordering::SeqCst),
            4,
            "{name} entered before all four had arrived"
        );
        let last = self.last_arrival.lock().unwrap().expect("the last arrival");
        self.entered_after
            .lock()
            .unwrap()
            .push((name.to_owned(), last.elapsed()));
    }

    fn left(&self, name: &str) {
        assert_eq!(
            self.leaving.load(Ordering::SeqCst),
            4,
            "{name} was let out before all four were leaving"
        );
    }
}

async fn embassy_process(server: &ZkServer, name: &str, delay: Duration, crowd: &Crowd) {
    let (mut rx, mut tx) = ([0u8; 4096], [0u8; 1024]);
    let mut process: DoubleBarrier = DoubleBarrier::new("/plant/batch", name).unwrap();
    let mut zk = driver(server.addr(), &mut rx, &mut tx, TIMEOUT_MS);
    let id = zk.add(&mut process).unwrap();
    zk.connect().await.unwrap();
    zk.run(tokio::time::sleep(delay)).await.unwrap();
    crowd.arrive();
    step("enter", zk.handle(id).enter(4)).await.unwrap();
    crowd.entered(name);
    assert!(zk.handle(id).recipe().unwrap().is_inside());
    // The work, then leave after the others started leaving.
    zk.run(tokio::time::sleep(delay)).await.unwrap();
    crowd.leaving.fetch_add(1, Ordering::SeqCst);
    step("leave", zk.handle(id).leave()).await.unwrap();
    crowd.left(name);
    zk.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_embassy_and_two_std_processes_enter_and_leave_a_double_barrier_together() {
    let server = ZkServer::start();
    let crowd = Arc::new(Crowd::default());
    let mut std_processes = Vec::new();
    for (name, delay) in [("std-1", 0), ("std-2", 300)] {
        let client = std_client(&server).await;
        let crowd = crowd.clone();
        std_processes.push(tokio::spawn(async move {
            let delay = Duration::from_millis(delay);
            let process =
                herdless_std::barrier::DoubleBarrier::new(&client, "/plant/batch", name).unwrap();
            tokio::time::sleep(delay).await;
            crowd.arrive();
            let inside = step("enter", process.enter(4)).await.unwrap();
            crowd.entered(name);
            tokio::time::sleep(delay).await;
            crowd.leaving.fetch_add(1, Ordering::SeqCst);
            step("leave", inside.leave()).await.unwrap();
            crowd.left(name);
        }));
    }
    tokio::join!(
        embassy_process(&server, "dev-1", Duration::from_millis(150), &crowd),
        embassy_process(&server, "dev-2", Duration::from_millis(450), &crowd),
    );
    for process in std_processes {
        process.await.unwrap();
    }
    let entered = crowd.entered_after.lock().unwrap().clone();
    assert_eq!(entered.len(), 4);
    println!("double barrier (arrivals at 0, 150, 300, 450 ms), entered after the last arrival: {entered:?}");
    let client = std_client(&server).await;
    let left = client.list_children("/plant/batch").await.unwrap();
    assert!(left.is_empty(), "nodes left behind: {left:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embassy_consumer_takes_each_std_item_once_in_order() {
    let server = ZkServer::start();
    let client = std_client(&server).await;
    let queue = Arc::new(
        herdless_std::queue::Queue::new(&client, "/plant/jobs")
            .await
            .unwrap(),
    );
    // Ten items wait before the device starts; ten more come while it
    // takes.
    for i in 0..10 {
        queue.put(format!("job-{i}").as_bytes()).await.unwrap();
    }

    let (mut rx, mut tx) = ([0u8; 4096], [0u8; 1024]);
    let mut consumer: Consumer<4, 64> = Consumer::new("/plant/jobs").unwrap();
    let mut producer: Producer<64> = Producer::new("/plant/reports").unwrap();
    let mut zk = driver(server.addr(), &mut rx, &mut tx, TIMEOUT_MS);
    let id = zk.add(&mut consumer).unwrap();
    let reports = zk.add(&mut producer).unwrap();
    zk.connect().await.unwrap();

    let put_at = Arc::new(Mutex::new(Vec::new()));
    let (q, times) = (queue.clone(), put_at.clone());
    let producer = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        for i in 10..20 {
            times.lock().unwrap().push(Instant::now());
            q.put(format!("job-{i}").as_bytes()).await.unwrap();
            tokio::time::sleep(Duration::from_millis(30)).await;
        }
    });
    let mut latencies = Vec::new();
    let mut nodes = Vec::new();
    for i in 0..20 {
        let item = step("a take", zk.handle(id).take()).await.unwrap();
        assert_eq!(
            std::str::from_utf8(item.data).unwrap(),
            format!("job-{i}"),
            "out of order"
        );
        assert!(item.certain);
        nodes.push(item.node.to_owned());
        if i >= 10 {
            latencies.push(put_at.lock().unwrap()[i - 10].elapsed());
        }
    }
    producer.await.unwrap();
    let mut unique = nodes.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), 20, "an item taken twice: {nodes:?}");
    stats(
        "queue, std put() started to the embassy take() returning",
        latencies,
    );

    // Nothing left, for the device or for std.
    let none = zk
        .handle(id)
        .take_timeout(embassy_time::Duration::from_millis(300))
        .await
        .unwrap();
    assert_eq!(none, None);
    assert_eq!(queue.peek().await.unwrap(), None);
    // A zero timeout still takes an item already there (as Curator's
    // timed poll makes one attempt), and finds an empty queue empty.
    queue.put(b"last").await.unwrap();
    let zero = embassy_time::Duration::from_ticks(0);
    let last = zk.handle(id).take_timeout(zero).await.unwrap();
    assert_eq!(last.map(|item| item.data.to_vec()), Some(b"last".to_vec()));
    assert_eq!(zk.handle(id).take_timeout(zero).await.unwrap(), None);

    // The other way: the device puts, a std consumer takes.
    let std_reports = herdless_std::queue::Queue::new(&client, "/plant/reports")
        .await
        .unwrap();
    let node = step(
        "the device's put",
        zk.handle(reports).put(guid(), b"batch 7 done", None),
    )
    .await
    .unwrap()
    .to_owned();
    let report = step("the std take", std_reports.take()).await.unwrap();
    assert_eq!(
        (report.data.as_slice(), report.node),
        (&b"batch 7 done"[..], node)
    );
    zk.close().await.unwrap();
}

/// A take waiting on an empty queue when the device's session expires
/// (cut off for longer than the session) goes on on the session the driver
/// opens next, and gets the item std puts then: an expiry is not the end
/// of a session that renews.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embassy_take_waiting_through_an_expiry_gets_the_next_item() {
    let server = ZkServer::start();
    let client = std_client(&server).await;
    let queue = herdless_std::queue::Queue::new(&client, "/plant/renewed")
        .await
        .unwrap();
    let proxy = Proxy::start(server.port());
    let (mut rx, mut tx) = ([0u8; 4096], [0u8; 1024]);
    let mut consumer: Consumer<4, 64> = Consumer::new("/plant/renewed").unwrap();
    let mut zk: Zk<'_, _> = Zk::new(
        TokioTransport::new(vec![proxy.addr()]),
        Buffers::new(&mut rx, &mut tx),
        SessionConfig::new(1, 2_000).with_retry_delay_ms(200),
    );
    let id = zk.add(&mut consumer).unwrap();
    zk.connect().await.unwrap();
    let first = zk.session_id();

    let cut_off_then_put = async {
        tokio::time::sleep(Duration::from_millis(500)).await;
        proxy.cut();
        tokio::time::sleep(Duration::from_secs(4)).await;
        proxy.restore();
        tokio::time::sleep(Duration::from_secs(2)).await;
        queue.put(b"after the expiry").await.unwrap();
    };
    let handle = zk.handle(id);
    let (taken, ()) = tokio::join!(tokio::time::timeout(STEP, handle.take()), cut_off_then_put);
    let item = taken
        .expect("take() answers")
        .expect("the take carries over");
    assert_eq!(item.data, b"after the expiry");
    assert!(item.certain);
    assert_ne!(zk.session_id(), first, "the session was renewed");
    zk.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embassy_priority_consumer_takes_an_urgent_std_item_put_later_first() {
    let server = ZkServer::start();
    let client = std_client(&server).await;
    let queue = herdless_std::queue::Queue::priority(&client, "/plant/urgent")
        .await
        .unwrap();
    for i in 1..=3 {
        queue
            .put_with_priority(format!("routine-{i}").as_bytes(), 50)
            .await
            .unwrap();
    }

    let (mut rx, mut tx) = ([0u8; 4096], [0u8; 1024]);
    let mut consumer: Consumer<8, 64> = Consumer::priority("/plant/urgent").unwrap();
    let mut zk = driver(server.addr(), &mut rx, &mut tx, TIMEOUT_MS);
    let id = zk.add(&mut consumer).unwrap();
    zk.connect().await.unwrap();

    // The first take lists all three routine items into the batch.
    let first = step("the first take", zk.handle(id).take()).await.unwrap();
    assert_eq!(first.data, b"routine-1");
    // While the device works on it, std puts an urgent item.
    let started = Instant::now();
    zk.run(async {
        queue.put_with_priority(b"stop-line-3", 0).await.unwrap();
        tokio::time::sleep(Duration::from_millis(100)).await;
    })
    .await
    .unwrap();
    let urgent = step("the urgent take", zk.handle(id).take()).await.unwrap();
    assert_eq!(
        urgent.data, b"stop-line-3",
        "the urgent item was not taken first"
    );
    println!(
        "priority queue: urgent std item taken by the embassy consumer {:?} after its put started (incl. 100 ms of work)",
        started.elapsed()
    );
    for i in 2..=3 {
        let item = step("a routine take", zk.handle(id).take()).await.unwrap();
        assert_eq!(item.data, format!("routine-{i}").as_bytes());
    }
    assert_eq!(queue.peek().await.unwrap(), None);
    zk.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embassy_consumer_passes_over_an_item_over_its_receive_buffer_and_takes_the_next() {
    use herdless_std::zookeeper_client::{Acls, CreateMode};
    let server = ZkServer::start();
    let client = std_client(&server).await;
    let queue = herdless_std::queue::Queue::new(&client, "/plant/big")
        .await
        .unwrap();
    queue.put(b"first").await.unwrap();
    let sequential = CreateMode::PersistentSequential.with_acls(Acls::anyone_all());
    client
        .create("/plant/big/x-queue-", &[b'x'; 3_000], &sequential)
        .await
        .unwrap();
    queue.put(b"after").await.unwrap();

    // 2 KiB: the large item's reply does not fit and is skipped.
    let (mut rx, mut tx) = ([0u8; 2048], [0u8; 1024]);
    let mut consumer: Consumer<8, 64> = Consumer::new("/plant/big").unwrap();
    let mut zk = driver(server.addr(), &mut rx, &mut tx, TIMEOUT_MS);
    let id = zk.add(&mut consumer).unwrap();
    zk.connect().await.unwrap();
    for expected in [&b"first"[..], b"after"] {
        let item = step("a take", zk.handle(id).take()).await.unwrap();
        assert_eq!(item.data, expected);
    }
    assert!(zk
        .recipe(id)
        .unwrap()
        .passed_over()
        .starts_with("/plant/big/x-queue-"));
    zk.close().await.unwrap();
    let left = client.list_children("/plant/big").await.unwrap();
    assert_eq!(
        left.len(),
        1,
        "left for a consumer that can hold it: {left:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embassy_site_votes_in_a_std_coordinators_transaction_and_learns_the_outcome() {
    let server = ZkServer::start();
    let client = std_client(&server).await;
    let ephemeral = Variant::Coordinated {
        ephemeral_votes: true,
    };
    let cases = [
        (ephemeral, Vote::Commit, Vote::Commit, Outcome::Commit),
        (
            Variant::AllWatch,
            Vote::Commit,
            Vote::Commit,
            Outcome::Commit,
        ),
        (ephemeral, Vote::Abort, Vote::Commit, Outcome::Abort),
        (Variant::AllWatch, Vote::Commit, Vote::Abort, Outcome::Abort),
        (
            Variant::Coordinated {
                ephemeral_votes: false,
            },
            Vote::Commit,
            Vote::Abort,
            Outcome::Abort,
        ),
    ];
    for (n, (variant, device_vote, std_vote, expected)) in cases.into_iter().enumerate() {
        let tx_path = format!("/plant/tx/batch-{n}");
        let body = format!("release batch {n}");
        let coordinator = herdless_std::two_phase::Coordinator::start(
            &client,
            &tx_path,
            body.as_bytes(),
            &["device", "mes"],
            variant,
            Duration::from_secs(30),
        )
        .await
        .unwrap();

        // The std site votes only after the device did, so the device
        // always has something to vote on.
        let (voted_tx, voted_rx) = tokio::sync::oneshot::channel::<()>();
        let site_client = std_client(&server).await;
        let path = tx_path.clone();
        let std_site = tokio::spawn(async move {
            let site = herdless_std::two_phase::Site::join(&site_client, &path, "mes", variant)
                .await
                .unwrap();
            voted_rx.await.unwrap();
            // Refused when the device's abort already decided it.
            match site.vote(std_vote).await {
                Ok(()) | Err(herdless_std::Error::InvalidState) => {}
                Err(e) => panic!("the std site's vote failed: {e}"),
            }
            site.outcome().await.unwrap()
        });

        let (mut rx, mut tx) = ([0u8; 4096], [0u8; 1024]);
        let mut site: TwoPhase = TwoPhase::new(&tx_path).unwrap();
        let mut zk = driver(server.addr(), &mut rx, &mut tx, TIMEOUT_MS);
        let id = zk.add(&mut site).unwrap();
        zk.connect().await.unwrap();
        let decided = step("participate", zk.handle(id).participate("device", variant))
            .await
            .unwrap();
        assert_eq!(decided, None, "decided before the device voted");
        assert_eq!(zk.handle(id).body(), Some(body.as_bytes()));
        step("vote", zk.handle(id).vote(device_vote)).await.unwrap();
        let voted = Instant::now();
        voted_tx.send(()).unwrap();
        let outcome = step("the outcome", zk.handle(id).outcome()).await.unwrap();
        let learned = voted.elapsed();
        assert_eq!(outcome, expected, "case {n}: {variant:?}");
        assert_eq!(step("the std site", std_site).await.unwrap(), expected);
        assert_eq!(coordinator.outcome().await.unwrap(), expected);
        let (decision, _) = client
            .get_data(&format!("{tx_path}/decision"))
            .await
            .unwrap();
        assert_eq!(decision, expected.as_bytes());
        println!(
            "two-phase {variant:?}: device {device_vote:?}, std {std_vote:?} -> {outcome:?}, learned {learned:?} after the device's vote"
        );
        zk.close().await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_embassy_session_runs_a_member_an_observer_a_config_watcher_and_a_consumer_at_once() {
    let server = ZkServer::start();
    let client = std_client(&server).await;
    mkdir(&client, "/plant").await;
    let config = herdless_std::config::Config::watch(&client, "/plant/config").unwrap();
    assert_eq!(
        config.create(b"mode=idle").await.unwrap(),
        StdWritten::Updated { version: 0 }
    );
    let queue = herdless_std::queue::Queue::new(&client, "/plant/jobs")
        .await
        .unwrap();
    let mut group = herdless_std::group::GroupObserver::start(&client, "/plant/devices").unwrap();
    let controller =
        herdless_std::GroupMember::join(&client, "/plant/devices", "controller", b"ctl")
            .await
            .unwrap();

    let (mut rx, mut tx) = ([0u8; 4096], [0u8; 1024]);
    let mut member: Member = Member::new("/plant/devices", "dev-1").unwrap();
    let mut peers: members::Observer = members::Observer::new("/plant/devices").unwrap();
    let mut settings: Config<64> = Config::new("/plant/config").unwrap();
    let mut jobs: Consumer<4, 64> = Consumer::new("/plant/jobs").unwrap();
    let mut zk: Zk<'_, _, 8> = Zk::new(
        TokioTransport::new(vec![server.addr()]),
        Buffers::new(&mut rx, &mut tx),
        SessionConfig::new(1, TIMEOUT_MS),
    );
    let me = zk.add(&mut member).unwrap();
    let view = zk.add(&mut peers).unwrap();
    let cfg = zk.add(&mut settings).unwrap();
    let work = zk.add(&mut jobs).unwrap();
    zk.connect().await.unwrap();

    step("join", zk.handle(me).join(b"10.0.0.21"))
        .await
        .unwrap();
    assert_eq!(
        step("the first config", zk.handle(cfg).changed())
            .await
            .unwrap(),
        Some(0)
    );
    while !zk.handle(view).contains("controller") || !zk.handle(view).contains("dev-1") {
        step("the peers", zk.handle(view).changed()).await.unwrap();
    }
    let mut joined = Vec::new();
    while !joined.contains(&"dev-1".to_owned()) {
        joined.extend(
            step("std sees the device", group.changed())
                .await
                .unwrap()
                .joined,
        );
    }

    // The control plane sets config k, then puts job k; the device takes
    // the jobs, and each one finds config k or newer already applied
    // (ZooKeeper delivers the config's notification first, and the take
    // needs round trips behind the config's re-read).
    const JOBS: i32 = 8;
    let control = tokio::spawn(async move {
        for k in 1..=JOBS {
            tokio::time::sleep(Duration::from_millis(40)).await;
            let written = config
                .set(format!("mode=run-{k}").as_bytes(), None)
                .await
                .unwrap();
            assert_eq!(written, StdWritten::Updated { version: k });
            queue.put(format!("job-{k}").as_bytes()).await.unwrap();
        }
        (config, queue)
    });
    let mut config_at_take = Vec::new();
    for k in 1..=JOBS {
        let item = step("a job", zk.handle(work).take()).await.unwrap();
        assert_eq!(item.data, format!("job-{k}").as_bytes());
        let version = zk.handle(cfg).version().expect("a config version");
        assert!(version >= k, "job {k} taken with config {version}");
        assert_eq!(
            zk.handle(cfg).value().unwrap(),
            format!("mode=run-{version}").as_bytes()
        );
        config_at_take.push(version);
        assert!(zk.handle(me).is_in(), "the device dropped out of the group");
    }
    let (config, queue) = control.await.unwrap();
    println!(
        "one embassy session, 4 recipes: config version at each job's take {config_at_take:?}"
    );

    // Nobody saw the device leave meanwhile; it leaves now.
    assert!(group.members().contains(&"dev-1".to_owned()));
    step("leave", zk.handle(me).leave()).await.unwrap();
    let change = step("std sees the device leave", group.changed())
        .await
        .unwrap();
    assert_eq!(change.left, ["dev-1"]);
    let (_, left) = step("the device's own view", zk.handle(view).changed())
        .await
        .unwrap();
    assert_eq!(left, 1);
    assert_eq!(
        zk.handle(view)
            .recipe()
            .unwrap()
            .members()
            .collect::<Vec<_>>(),
        ["controller"]
    );
    assert_eq!(queue.peek().await.unwrap(), None);
    assert_eq!(config.value().present().unwrap().version, JOBS);
    controller.leave().await.unwrap();
    zk.close().await.unwrap();
}

/// Outcomes of earlier calls nobody read (a take or a put dropped once on
/// its way, a join that failed while nobody listened) are not taken for
/// the next call's: the next put returns its own item, the next join waits
/// for its own node, and the item the dropped take took is what the next
/// take hands out, with nothing taken behind the application's back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embassy_calls_are_not_answered_by_unread_outcomes_of_earlier_ones() {
    let server = ZkServer::start();
    let client = std_client(&server).await;
    let queue = herdless_std::queue::Queue::new(&client, "/plant/backlog")
        .await
        .unwrap();
    for i in 0..2 {
        queue.put(format!("job-{i}").as_bytes()).await.unwrap();
    }
    // Nobody may create in /closed until its ACL is opened.
    closed(&client, "/closed", b"").await;

    let (mut rx, mut tx) = ([0u8; 4096], [0u8; 1024]);
    let mut consumer: Consumer<4, 64> = Consumer::new("/plant/backlog").unwrap();
    let mut producer: Producer<64> = Producer::new("/plant/outbox").unwrap();
    let mut member: Member = Member::new("/closed/crew", "device-7").unwrap();
    let mut zk = driver(server.addr(), &mut rx, &mut tx, TIMEOUT_MS);
    let taker = zk.add(&mut consumer).unwrap();
    let putter = zk.add(&mut producer).unwrap();
    let joiner = zk.add(&mut member).unwrap();
    zk.connect().await.unwrap();

    // As if the calls had been dropped on their way: started on the
    // recipes, run to their end, their outcomes left unread.
    zk.recipe(taker).unwrap().take(None).unwrap();
    zk.recipe(putter)
        .unwrap()
        .put(guid(), b"first", None, false)
        .unwrap();
    zk.recipe(joiner).unwrap().join(b"").unwrap();
    drive_until(&mut zk, "the calls never ended", STEP, |zk| {
        !zk.recipe(taker).unwrap().is_busy()
            && !zk.recipe(putter).unwrap().is_busy()
            && zk.recipe(joiner).unwrap().is_idle()
    })
    .await;

    let item = step("the take", zk.handle(taker).take()).await.unwrap();
    assert_eq!(item.data, b"job-0");
    zk.run_for(embassy_time::Duration::from_millis(300))
        .await
        .unwrap();
    let next = queue.peek().await.unwrap().map(|item| item.data);
    assert_eq!(next.as_deref(), Some(&b"job-1"[..]), "taken unseen");
    zk.recipe(taker).unwrap().take(None).unwrap();
    drive_until(&mut zk, "the take never ended", STEP, |zk| {
        !zk.recipe(taker).unwrap().is_busy()
    })
    .await;
    let wait = embassy_time::Duration::from_millis(300);
    let item = step("the take", zk.handle(taker).take_timeout(wait)).await;
    assert_eq!(item.unwrap().map(|item| item.data), Some(&b"job-1"[..]));

    // A peek that saw an item since taken by someone else is not the
    // next peek's answer.
    queue.put(b"job-2").await.unwrap();
    zk.recipe(taker).unwrap().peek().unwrap();
    drive_until(&mut zk, "the peek never ended", STEP, |zk| {
        !zk.recipe(taker).unwrap().is_busy()
    })
    .await;
    queue.take().await.unwrap();
    queue.put(b"job-3").await.unwrap();
    let item = step("the peek", zk.handle(taker).peek()).await.unwrap();
    assert_eq!(item.map(|item| item.data), Some(&b"job-3"[..]));

    let node = step("the put", zk.handle(putter).put(guid(), b"second", None))
        .await
        .unwrap()
        .to_owned();
    let (data, _) = client.get_data(&node).await.unwrap();
    assert_eq!(data, b"second", "put() answered with an earlier item");

    client
        .set_acl("/closed", &zookeeper_client::Acls::anyone_all(), None)
        .await
        .unwrap();
    step("the join", zk.handle(joiner).join(b"")).await.unwrap();
    assert!(zk.handle(joiner).is_in());
    zk.close().await.unwrap();
}

/// A barrier's calls end with the recipe's error when the server refuses
/// them, and each waits for its own outcome: a `remove` while a dropped
/// wait still waits, then a `set`, return only once the node is gone and
/// there again, not on the passing wait's event.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embassy_barrier_fails_when_refused_and_each_call_waits_for_its_own_outcome() {
    let server = ZkServer::start();
    let client = std_client(&server).await;
    closed(&client, "/closed", b"").await;
    let (mut rx, mut tx) = ([0u8; 4096], [0u8; 1024]);
    let mut refused: Barrier = Barrier::new("/closed/gate").unwrap();
    let mut barrier: Barrier = Barrier::new("/plant/gate").unwrap();
    let mut zk = driver(server.addr(), &mut rx, &mut tx, TIMEOUT_MS);
    let refused = zk.add(&mut refused).unwrap();
    let id = zk.add(&mut barrier).unwrap();
    zk.connect().await.unwrap();

    let outcome = step("the refused set", zk.handle(refused).set()).await;
    assert!(matches!(outcome, Err(Error::Recipe(_))), "{outcome:?}");

    step("set", zk.handle(id).set()).await.unwrap();
    zk.recipe(id).unwrap().wait();
    zk.run_for(embassy_time::Duration::from_millis(200))
        .await
        .unwrap();
    step("remove", zk.handle(id).remove()).await.unwrap();
    step("set again", zk.handle(id).set()).await.unwrap();
    // The recipe's own view first: whether the server already applied a
    // create the driver merely sent is a race another client's read may
    // win or lose, while the recipe knows when the answer came.
    assert!(
        zk.recipe(id).unwrap().is_idle(),
        "set() returned before its create was answered"
    );
    assert!(
        client.check_stat("/plant/gate").await.unwrap().is_some(),
        "set() returned before the barrier stood"
    );
    zk.close().await.unwrap();
}

/// A double barrier's calls end with the recipe's error when the server
/// refuses them, with `Lost` when the session expires while waiting, and
/// `leave` waits for its own outcome, not an unread `Entered`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embassy_double_barrier_fails_when_refused_hears_its_loss_and_leaves_for_real() {
    let server = ZkServer::start();
    let client = std_client(&server).await;
    closed(&client, "/closed", b"").await;
    let proxy = Proxy::start(server.port());
    let (mut rx, mut tx) = ([0u8; 4096], [0u8; 1024]);
    let mut refused: DoubleBarrier = DoubleBarrier::new("/closed/batch", "a").unwrap();
    let mut alone: DoubleBarrier = DoubleBarrier::new("/plant/solo", "a").unwrap();
    let mut stranded: DoubleBarrier = DoubleBarrier::new("/plant/pair", "a").unwrap();
    let mut zk: Zk<'_, _> = Zk::new(
        TokioTransport::new(vec![proxy.addr()]),
        Buffers::new(&mut rx, &mut tx),
        SessionConfig::new(1, 2_000).with_retry_delay_ms(200),
    );
    let refused = zk.add(&mut refused).unwrap();
    let alone = zk.add(&mut alone).unwrap();
    let stranded = zk.add(&mut stranded).unwrap();
    zk.connect().await.unwrap();

    let outcome = step("the refused enter", zk.handle(refused).enter(1)).await;
    assert!(matches!(outcome, Err(Error::Recipe(_))), "{outcome:?}");

    // Entered, as if by a dropped call, its `Entered` unread.
    zk.recipe(alone).unwrap().enter(1).unwrap();
    drive_until(&mut zk, "never entered", STEP, |zk| {
        zk.recipe(alone).unwrap().is_inside()
    })
    .await;
    step("leave", zk.handle(alone).leave()).await.unwrap();
    assert!(
        zk.recipe(alone).unwrap().is_idle(),
        "leave() returned inside"
    );
    assert!(client
        .list_children("/plant/solo")
        .await
        .unwrap()
        .is_empty());

    // Waiting for a second process that never comes, cut off for longer
    // than the session lasts.
    let cut_off = async {
        tokio::time::sleep(Duration::from_millis(500)).await;
        proxy.cut();
        tokio::time::sleep(Duration::from_secs(4)).await;
        proxy.restore();
    };
    let mut handle = zk.handle(stranded);
    let (outcome, ()) = tokio::join!(tokio::time::timeout(STEP, handle.enter(2)), cut_off);
    assert_eq!(outcome.expect("enter() answers"), Err(Error::Lost));
}

/// An embedded process that gives up leaves no node for anyone to count
/// or wait for: an enter that times out, a leave that times out, and a
/// process inside that withdraws while a std process waits to leave.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embassy_double_barrier_gives_up_leaving_no_node() {
    const DIR: &str = "/plant/give-up";
    let server = ZkServer::start();
    let client = std_client(&server).await;
    let names = || async {
        let mut names = client.list_children(DIR).await.unwrap_or_default();
        names.retain(|n| n != "ready");
        names
    };
    let (mut rx, mut tx) = ([0u8; 4096], [0u8; 1024]);
    let mut process: DoubleBarrier = DoubleBarrier::new(DIR, "a").unwrap();
    let mut zk: Zk<'_, _> = Zk::new(
        TokioTransport::new(vec![server.addr()]),
        Buffers::new(&mut rx, &mut tx),
        SessionConfig::new(1, 10_000),
    );
    let id = zk.add(&mut process).unwrap();
    zk.connect().await.unwrap();
    let other = std_client(&server).await;
    let other = herdless_std::barrier::DoubleBarrier::new(&other, DIR, "b").unwrap();

    let alone = step(
        "a timed enter",
        zk.handle(id)
            .enter_timeout(2, embassy_time::Duration::from_millis(300)),
    )
    .await;
    assert_eq!(alone, Ok(false));
    assert!(names().await.is_empty(), "a timed-out enter left its node");

    let mut handle = zk.handle(id);
    let (inside, entered) = tokio::join!(
        other.enter(2),
        handle.enter_timeout(2, embassy_time::Duration::from_secs(10))
    );
    let inside = inside.unwrap();
    assert_eq!(entered, Ok(true));
    // "a", the lowest, keeps its node while it waits for "b", which stays.
    let left = step(
        "a timed leave",
        zk.handle(id)
            .leave_timeout(embassy_time::Duration::from_millis(300)),
    )
    .await;
    assert_eq!(left, Ok(false));
    assert_eq!(names().await, ["b"], "a timed-out leave left its node");
    step("the std leave", inside.leave()).await.unwrap();

    let mut handle = zk.handle(id);
    let (inside, entered) = tokio::join!(other.enter(2), handle.enter(2));
    let inside = inside.unwrap();
    entered.unwrap();
    step("a withdrawal", zk.handle(id).cancel()).await.unwrap();
    assert_eq!(names().await, ["b"]);
    step("the std leave, waiting for nobody", inside.leave())
        .await
        .unwrap();
    assert!(client.list_children(DIR).await.unwrap().is_empty());
}

/// A configuration value's calls end with a typed error when the value
/// does not fit or the server refuses a read or a write, and a write whose
/// answer was lost with the connection is reported as `Unknown`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embassy_config_reports_too_large_refused_and_unknown_outcomes() {
    use zookeeper_client::{Acl, Acls, AuthId, CreateMode, Permission};
    let server = ZkServer::start();
    let client = std_client(&server).await;
    mkdir(&client, "/plant").await;
    let open = CreateMode::Persistent.with_acls(Acls::anyone_all());
    client
        .create("/plant/big", &[7u8; 100], &open)
        .await
        .unwrap();
    client
        .create("/plant/rate", b"rate=1", &open)
        .await
        .unwrap();
    closed(&client, "/plant/frozen", b"rate=1").await;
    let unreadable = [Acl::new(Permission::ADMIN, AuthId::anyone())];
    let unreadable = CreateMode::Persistent.with_acls(Acls::new(&unreadable));
    client
        .create("/plant/secret", b"k", &unreadable)
        .await
        .unwrap();

    let proxy = Proxy::start(server.port());
    let (mut rx, mut tx) = ([0u8; 4096], [0u8; 1024]);
    let mut big: Config<16> = Config::new("/plant/big").unwrap();
    let mut frozen: Config = Config::new("/plant/frozen").unwrap();
    let mut secret: Config = Config::new("/plant/secret").unwrap();
    let mut rate: Config = Config::new("/plant/rate").unwrap();
    let mut zk: Zk<'_, _> = Zk::new(
        TokioTransport::new(vec![proxy.addr()]),
        Buffers::new(&mut rx, &mut tx),
        SessionConfig::new(1, TIMEOUT_MS).with_retry_delay_ms(200),
    );
    let big = zk.add(&mut big).unwrap();
    let frozen = zk.add(&mut frozen).unwrap();
    let secret = zk.add(&mut secret).unwrap();
    let rate = zk.add(&mut rate).unwrap();
    zk.connect().await.unwrap();

    let outcome = step("the big value", zk.handle(big).changed()).await;
    assert!(
        matches!(
            outcome,
            Err(Error::Recipe(herdless_core::Error::TooLarge {
                len: 100,
                ..
            }))
        ),
        "{outcome:?}"
    );
    let outcome = step("the unreadable value", zk.handle(secret).changed()).await;
    assert!(matches!(outcome, Err(Error::Recipe(_))), "{outcome:?}");
    let written = step(
        "the refused write",
        zk.handle(frozen).set(b"rate=2", Version::Exactly(0)),
    )
    .await;
    assert!(matches!(written, Err(Error::Recipe(_))), "{written:?}");

    // The write reaches the server, its answer is held back by the link,
    // and the connection drops before it arrives.
    assert_eq!(step("read", zk.handle(rate).changed()).await, Ok(Some(0)));
    let held = Duration::from_millis(800);
    proxy.delay(held, held);
    let drop_the_answer = async {
        tokio::time::sleep(held + held / 2).await;
        proxy.delay(Duration::ZERO, Duration::ZERO);
        proxy.reset();
    };
    let mut handle = zk.handle(rate);
    let (written, ()) = tokio::join!(
        tokio::time::timeout(STEP, handle.set(b"rate=2", Version::Exactly(0))),
        drop_the_answer
    );
    assert_eq!(written.expect("set() answers"), Ok(Written::Unknown));
    let (data, stat) = client.get_data("/plant/rate").await.unwrap();
    assert_eq!((data.as_slice(), stat.version), (&b"rate=2"[..], 1));
    zk.close().await.unwrap();
}

/// A member's join and leave end with the recipe's error when the server
/// refuses them (no right to create, then to delete, in the group).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embassy_member_fails_when_refused_to_join_or_leave() {
    let server = ZkServer::start();
    let client = std_client(&server).await;
    closed(&client, "/closed", b"").await;
    let (mut rx, mut tx) = ([0u8; 4096], [0u8; 1024]);
    let mut refused: Member = Member::new("/closed/crew", "device-7").unwrap();
    let mut member: Member = Member::new("/plant/crew", "device-7").unwrap();
    let mut zk = driver(server.addr(), &mut rx, &mut tx, TIMEOUT_MS);
    let refused = zk.add(&mut refused).unwrap();
    let id = zk.add(&mut member).unwrap();
    zk.connect().await.unwrap();

    let outcome = step("the refused join", zk.handle(refused).join(b"")).await;
    assert!(matches!(outcome, Err(Error::Recipe(_))), "{outcome:?}");

    step("join", zk.handle(id).join(b"")).await.unwrap();
    client
        .set_acl("/plant/crew", &zookeeper_client::Acls::anyone_read(), None)
        .await
        .unwrap();
    let outcome = step("the refused leave", zk.handle(id).leave()).await;
    assert!(matches!(outcome, Err(Error::Recipe(_))), "{outcome:?}");
    let members = client.list_children("/plant/crew").await.unwrap();
    assert_eq!(members, ["device-7"]);
    zk.close().await.unwrap();
}

/// A site's attempt that failed while nobody read its events (the
/// transaction was unreadable to it) does not fail the next attempt, once
/// the transaction can be read; a vote the server refuses fails the call.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embassy_site_takes_part_again_after_an_unread_failure() {
    use zookeeper_client::{Acl, AuthId, Permission};
    let server = ZkServer::start();
    let client = std_client(&server).await;
    let variant = Variant::Coordinated {
        ephemeral_votes: true,
    };
    let _coordinator = herdless_std::two_phase::Coordinator::start(
        &client,
        "/plant/tx/hidden",
        b"release batch 9",
        &["device"],
        variant,
        Duration::from_secs(30),
    )
    .await
    .unwrap();
    let admin_only = [Acl::new(Permission::ADMIN, AuthId::anyone())];
    client
        .set_acl("/plant/tx/hidden", &admin_only, None)
        .await
        .unwrap();

    let (mut rx, mut tx) = ([0u8; 4096], [0u8; 1024]);
    let mut site: TwoPhase = TwoPhase::new("/plant/tx/hidden").unwrap();
    let mut zk = driver(server.addr(), &mut rx, &mut tx, TIMEOUT_MS);
    let id = zk.add(&mut site).unwrap();
    zk.connect().await.unwrap();
    zk.recipe(id)
        .unwrap()
        .participate("device", variant)
        .unwrap();
    drive_until(
        &mut zk,
        "the unreadable transaction did not fail",
        STEP,
        |zk| zk.recipe(id).unwrap().is_done(),
    )
    .await;

    client
        .set_acl(
            "/plant/tx/hidden",
            &zookeeper_client::Acls::anyone_all(),
            None,
        )
        .await
        .unwrap();
    let outcome = step(
        "the second attempt",
        zk.handle(id).participate("device", variant),
    )
    .await;
    assert_eq!(outcome, Ok(None));
    assert_eq!(zk.handle(id).body(), Some(&b"release batch 9"[..]));

    // A vote the server refuses (its vote node made read-only) fails.
    let started = Instant::now();
    let own = loop {
        let votes = client.list_children("/plant/tx/hidden").await.unwrap();
        if let Some(own) = votes.into_iter().find(|name| name.contains("device")) {
            break own;
        }
        assert!(started.elapsed() < STEP, "the vote node never came");
        zk.run_for(embassy_time::Duration::from_millis(20))
            .await
            .unwrap();
    };
    client
        .set_acl(
            &format!("/plant/tx/hidden/{own}"),
            &zookeeper_client::Acls::anyone_read(),
            None,
        )
        .await
        .unwrap();
    let voted = step("the refused vote", zk.handle(id).vote(Vote::Commit)).await;
    assert!(matches!(voted, Err(Error::Recipe(_))), "{voted:?}");
    zk.close().await.unwrap();
}

/// An observer reports a group that does not exist as `(0, 0)` and one it
/// may not read with the recipe's error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embassy_observer_reports_a_missing_group_and_a_refused_read() {
    use zookeeper_client::{Acl, Acls, AuthId, CreateMode, Permission};
    let server = ZkServer::start();
    let client = std_client(&server).await;
    let admin_only = [Acl::new(Permission::ADMIN, AuthId::anyone())];
    let mode = CreateMode::Persistent.with_acls(Acls::new(&admin_only));
    client.create("/hidden", b"", &mode).await.unwrap();

    let (mut rx, mut tx) = ([0u8; 4096], [0u8; 1024]);
    let mut missing: members::Observer = members::Observer::new("/plant/nobody").unwrap();
    let mut hidden: members::Observer = members::Observer::new("/hidden").unwrap();
    let mut zk = driver(server.addr(), &mut rx, &mut tx, TIMEOUT_MS);
    let missing = zk.add(&mut missing).unwrap();
    let hidden = zk.add(&mut hidden).unwrap();
    zk.connect().await.unwrap();

    let outcome = step("the missing group", zk.handle(missing).changed()).await;
    assert_eq!(outcome, Ok((0, 0)));
    let outcome = step("the hidden group", zk.handle(hidden).changed()).await;
    assert!(matches!(outcome, Err(Error::Recipe(_))), "{outcome:?}");
    zk.close().await.unwrap();
}

/// A put, a take and a site's participation end with the recipe's error
/// when the server refuses them, and a site that comes after the decision
/// learns it at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embassy_queue_and_site_fail_when_refused_and_a_late_site_learns_the_outcome() {
    use zookeeper_client::{Acl, Acls, AuthId, CreateMode, Permission};
    let server = ZkServer::start();
    let client = std_client(&server).await;
    closed(&client, "/closed", b"").await;
    let admin_only = [Acl::new(Permission::ADMIN, AuthId::anyone())];
    let hidden = CreateMode::Persistent.with_acls(Acls::new(&admin_only));
    client.create("/hidden", b"", &hidden).await.unwrap();
    let variant = Variant::Coordinated {
        ephemeral_votes: true,
    };
    let coordinator = herdless_std::two_phase::Coordinator::start(
        &client,
        "/plant/tx/done",
        b"release batch 10",
        &["mes"],
        variant,
        Duration::from_secs(30),
    )
    .await
    .unwrap();
    let mes = herdless_std::two_phase::Site::join(&client, "/plant/tx/done", "mes", variant)
        .await
        .unwrap();
    mes.vote(Vote::Commit).await.unwrap();
    assert_eq!(coordinator.outcome().await.unwrap(), Outcome::Commit);

    let (mut rx, mut tx) = ([0u8; 4096], [0u8; 1024]);
    let mut producer: Producer<64> = Producer::new("/closed/outbox").unwrap();
    let mut consumer: Consumer<4, 64> = Consumer::new("/hidden").unwrap();
    let mut refused: TwoPhase = TwoPhase::new("/hidden").unwrap();
    let mut late: TwoPhase = TwoPhase::new("/plant/tx/done").unwrap();
    let mut zk = driver(server.addr(), &mut rx, &mut tx, TIMEOUT_MS);
    let producer = zk.add(&mut producer).unwrap();
    let consumer = zk.add(&mut consumer).unwrap();
    let refused = zk.add(&mut refused).unwrap();
    let late = zk.add(&mut late).unwrap();
    zk.connect().await.unwrap();

    let put = step(
        "the refused put",
        zk.handle(producer).put(guid(), b"x", None),
    )
    .await;
    assert!(matches!(put, Err(Error::Recipe(_))), "{put:?}");
    let taken = step("the refused take", zk.handle(consumer).take()).await;
    assert!(matches!(taken, Err(Error::Recipe(_))), "{taken:?}");
    let joined = step(
        "the refused site",
        zk.handle(refused).participate("device", variant),
    )
    .await;
    assert!(matches!(joined, Err(Error::Recipe(_))), "{joined:?}");
    let joined = step(
        "the late site",
        zk.handle(late).participate("device", variant),
    )
    .await;
    assert_eq!(joined, Ok(Some(Outcome::Commit)));
    zk.close().await.unwrap();
}

/// Fills `dir` with `n` queue items put by std clients, `n` creates in
/// flight at a time, so that its listing takes more than ZooKeeper's
/// default `jute.maxbuffer`.
async fn fill_queue(client: &herdless_std::Client, dir: &str, n: usize) {
    let mode = zookeeper_client::CreateMode::PersistentSequential
        .with_acls(zookeeper_client::Acls::anyone_all());
    let mut puts = tokio::task::JoinSet::new();
    for i in 0..n {
        let (client, path, mode) = (
            client.clone(),
            format!("{dir}/{}-queue-", uuid::Uuid::new_v4()),
            mode.clone(),
        );
        puts.spawn(async move {
            client
                .create(&path, format!("filler-{i}").as_bytes(), &mode)
                .await
                .map(|_| ())
        });
        if puts.len() >= 500 {
            puts.join_next().await.unwrap().unwrap().unwrap();
        }
    }
    while let Some(put) = puts.join_next().await {
        put.unwrap().unwrap();
    }
}

/// The bytes of `dir`'s listing as the server sends it: a count, then
/// each name with its length.
async fn listing_bytes(client: &herdless_std::Client, dir: &str) -> usize {
    let names = client.list_children(dir).await.unwrap();
    4 + names.iter().map(|n| 4 + n.len()).sum::<usize>()
}

/// A queue of some twenty thousand items lists in more than a megabyte
/// (ZooKeeper's default `jute.maxbuffer`, and the session's `max_frame`).
/// The embedded driver reads a listing through its 4 KB buffer, so no
/// length of one is too large for it: a consumer takes the head of such a
/// queue, and a producer whose create was cut with its connection finds
/// its item in it. (Found in the ensemble chaos test: a producer cut while
/// the queue was that long reconnected and listed again for ever.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embassy_queue_works_on_a_queue_listing_more_than_a_megabyte() {
    const DIR: &str = "/plant/backlog";
    let server = ZkServer::start();
    let client = std_client(&server).await;
    let queue = herdless_std::queue::Queue::new(&client, DIR).await.unwrap();
    queue.put(b"first").await.unwrap();
    fill_queue(&client, DIR, 20_000).await;
    let bytes = listing_bytes(&client, DIR).await;
    assert!(
        bytes > herdless_core::wire::DEFAULT_MAX_FRAME,
        "the listing is only {bytes} bytes"
    );

    let proxy = Proxy::start(server.port());
    let (mut rx, mut tx) = ([0u8; 4096], [0u8; 1024]);
    let mut consumer: Consumer<4, 64> = Consumer::new(DIR).unwrap();
    let mut producer: Producer<64> = Producer::new(DIR).unwrap();
    let mut zk = driver(proxy.addr(), &mut rx, &mut tx, TIMEOUT_MS);
    let consumer = zk.add(&mut consumer).unwrap();
    let producer = zk.add(&mut producer).unwrap();
    zk.connect().await.unwrap();

    let item = step("the take", zk.handle(consumer).take()).await.unwrap();
    assert_eq!(item.data, b"first");

    // The create reaches the server; its reply is held back, and the
    // connection reset under it: the put must look for its item.
    proxy.delay(Duration::from_millis(300), Duration::from_millis(300));
    zk.recipe(producer)
        .unwrap()
        .put(guid(), b"late", None, false)
        .unwrap();
    zk.run_for(embassy_time::Duration::from_millis(100))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(250)).await;
    proxy.reset();
    proxy.delay(Duration::ZERO, Duration::ZERO);
    let faults = zk.faults();
    drive_until(&mut zk, "the put after the reset", STEP, |zk| {
        !zk.recipe(producer).unwrap().is_busy()
    })
    .await;
    assert!(zk.faults() > faults, "the reset was not seen");
    let landed = zk.recipe(producer).unwrap().item().to_owned();
    assert!(landed.starts_with(DIR), "{landed:?}");
    let names = client.list_children(DIR).await.unwrap();
    let own = names
        .iter()
        .filter(|n| format!("{DIR}/{n}") == landed)
        .count();
    assert_eq!(own, 1, "the item {landed} is not in the queue once");
    zk.close().await.unwrap();
}
