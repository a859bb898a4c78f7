//! The embedded driver in a fleet, against a real ZooKeeper 3.8: child
//! lists far larger than its 2 KiB receive buffer reach the lock, the
//! election, the double barrier, the group observer and two-phase commit
//! name by name, and a reply too large for the buffer is answered with a
//! typed error while the session carries on; on an ensemble, a listing
//! broken off half-way, its server killed, is read again from another
//! server.

use std::time::{Duration, Instant};

use herdless_core::double_barrier::{DoubleBarrier, DoubleBarrierEvent};
use herdless_core::election::{Election, ElectionEvent, ElectionState};
use herdless_core::lock::{Lock, LockEvent, LockState};
use herdless_core::members::{self, ObserverEvent};
use herdless_core::naming::Guid;
use herdless_core::two_phase::{Outcome, TwoPhase, Variant, Vote};
use herdless_core::{Children, Outgoing, Recipe, Reply, Request, RequestId, RequestIds, Sequence};
use herdless_core::{Instant as CoreInstant, SessionEvent, WatchEvent, ZkError};
use herdless_embassy::wire::SessionConfig;
use herdless_embassy::{Buffers, Zk};
use herdless_tests::tokio_transport::{drive_until, TokioTransport};
use herdless_tests::{ZkEnsemble, ZkServer};
use zookeeper_client::{Acls, CreateMode};

/// The receive buffer of the embedded driver in every test here.
const RX: usize = 2048;

fn guid() -> Guid {
    Guid::from_random_bytes(uuid::Uuid::new_v4().into_bytes())
}

async fn std_client(server: &ZkServer) -> herdless_std::Client {
    herdless_std::connect(&server.addr(), Duration::from_secs(30))
        .await
        .expect("connect a herdless-std client")
}

/// The embedded driver as the STM32 firmware has it (no watch table), on
/// `rx` and `tx`.
type Device<'a> = Zk<'a, TokioTransport, 4, 0, 0>;

/// The embedded driver on `rx` and `tx`, to `server`, reading at most
/// `max_read` bytes per read.
fn driver<'a>(
    server: &ZkServer,
    rx: &'a mut [u8],
    tx: &'a mut [u8],
    max_read: usize,
) -> Device<'a> {
    let mut transport = TokioTransport::new(vec![server.addr()]);
    transport.max_read = max_read;
    Zk::new(
        transport,
        Buffers::new(rx, tx),
        SessionConfig::new(1, 10_000),
    )
}

/// Bytes of the jute vector a listing of `names` takes on the wire.
fn listing_bytes(names: &[String]) -> usize {
    4 + names.iter().map(|n| 4 + n.len()).sum::<usize>()
}

/// Polls `dir` until `count` of its children are candidates (the leader's
/// acknowledgement sits beside them); returns every child.
async fn wait_for_candidates(
    client: &herdless_std::Client,
    dir: &str,
    count: usize,
) -> Vec<String> {
    let started = Instant::now();
    loop {
        let names = client.list_children(dir).await.unwrap_or_default();
        let candidates = names.iter().filter(|n| is_candidate(n)).count();
        if candidates == count {
            return names;
        }
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "{dir} has {candidates} candidates, not {count}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn is_candidate(name: &str) -> bool {
    herdless_core::naming::contender_sequence(herdless_core::naming::NodeKind::Candidate, name)
        .is_some()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embassy_candidate_with_a_2_kib_buffer_leads_in_an_election_of_1000() {
    const DIR: &str = "/fleet/gateway";
    const OTHERS: usize = 999;
    let server = ZkServer::start();
    // The other candidates: herdless-std campaigns on three sessions. Each
    // holds its campaign, waiting or leading, until its task is aborted
    // (which resigns it in the background).
    let mut sessions = Vec::new();
    for _ in 0..3 {
        sessions.push(std_client(&server).await);
    }
    let mut campaigns = Vec::new();
    for i in 0..OTHERS {
        let election = herdless_std::Election::new(&sessions[i % 3], DIR).unwrap();
        campaigns.push(tokio::spawn(async move {
            let leadership = election.campaign().await;
            std::future::pending::<()>().await;
            drop(leadership);
        }));
    }
    let admin = std_client(&server).await;
    let others = wait_for_candidates(&admin, DIR, OTHERS).await;

    let (mut rx, mut tx) = ([0u8; RX], [0u8; 512]);
    let mut election: Election = Election::new(DIR).unwrap();
    let mut zk = driver(&server, &mut rx, &mut tx, usize::MAX);
    let id = zk.add(&mut election).unwrap();
    zk.connect().await.unwrap();
    let session = zk.session_id();
    zk.recipe(id).unwrap().campaign(guid(), b"device").unwrap();
    // It reads the whole directory, 1,000 names, and waits behind the
    // highest of the others.
    let last_other = others
        .iter()
        .filter(|n| is_candidate(n))
        .max_by_key(|n| &n[n.len() - 10..])
        .unwrap();
    drive_until(&mut zk, "never followed", Duration::from_secs(30), |zk| {
        zk.recipe(id).unwrap().predecessor().is_some()
    })
    .await;
    // The driver runs while the test waits: between its calls the server
    // hears no pings.
    let all = zk
        .run(wait_for_candidates(&admin, DIR, OTHERS + 1))
        .await
        .unwrap();
    let listing = listing_bytes(&all);
    assert!(
        listing > 20 * RX,
        "the listing ({listing} B) is not over the buffer"
    );
    assert_eq!(
        zk.recipe(id).unwrap().predecessor(),
        Some(format!("{DIR}/{last_other}").as_str())
    );
    assert!(!zk.handle(id).is_leading());

    // Its turn comes when the others resign, lowest first.
    for campaign in campaigns {
        campaign.abort();
    }
    let started = Instant::now();
    let mut events = Vec::new();
    while !zk.handle(id).is_leading() {
        while let Some(event) = zk.recipe(id).unwrap().poll_event() {
            events.push(event);
        }
        if started.elapsed() > Duration::from_secs(60) {
            let left = admin.list_children(DIR).await.unwrap_or_default();
            let candidate = zk.recipe(id).unwrap();
            let (predecessor, state) =
                (candidate.predecessor().map(String::from), candidate.state());
            let log = server.log();
            let lines: Vec<&str> = log
                .lines()
                .filter(|l| l.contains("ession") || l.contains("WARN") || l.contains("rror"))
                .collect();
            eprintln!(
                "server log (warnings):\n{}",
                lines[lines.len().saturating_sub(30)..].join("\n")
            );
            panic!(
                "never led: {} nodes left, waiting behind {predecessor:?}, {state:?}, events {events:?}; session {:#x} (was {session:#x}), {} faults, last {:?}",
                left.len(),
                zk.session_id(),
                zk.faults(),
                zk.last_fault()
            );
        }
        zk.run_for(embassy_time::Duration::from_millis(20))
            .await
            .unwrap();
    }
    println!(
        "embassy candidate with a {RX} B receive buffer: read a listing of {} names ({listing} B), led {:?} after the others left",
        all.len(),
        started.elapsed()
    );
    assert_eq!(zk.faults(), 0, "last fault: {:?}", zk.last_fault());
    assert_eq!(zk.session_id(), session);
    zk.handle(id).resign().await.unwrap();
    zk.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embassy_process_with_a_2_kib_buffer_opens_and_closes_a_double_barrier_of_400() {
    const DIR: &str = "/fleet/update-window";
    const OTHERS: usize = 399;
    const COUNT: u32 = OTHERS as u32 + 1;
    let server = ZkServer::start();
    // The others: herdless-std processes on three sessions. Each enters,
    // then waits for the word to leave.
    let (go, leave) = tokio::sync::watch::channel(false);
    let mut sessions = Vec::new();
    for _ in 0..3 {
        sessions.push(std_client(&server).await);
    }
    let mut processes = Vec::new();
    for i in 0..OTHERS {
        let name = format!("fleet-member-std-{i:04}");
        let process =
            herdless_std::barrier::DoubleBarrier::new(&sessions[i % 3], DIR, &name).unwrap();
        let mut leave = leave.clone();
        processes.push(tokio::spawn(async move {
            let inside = process.enter(COUNT).await.unwrap();
            leave.wait_for(|go| *go).await.unwrap();
            inside.leave().await.unwrap();
        }));
    }
    let admin = std_client(&server).await;
    let started = Instant::now();
    while admin.list_children(DIR).await.unwrap_or_default().len() < OTHERS {
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "the others never arrived"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    // The device arrives last: its listing of all 400 decides, and it
    // opens the barrier. Its name is the lowest, so it leaves last,
    // waiting on the highest.
    let (mut rx, mut tx) = ([0u8; RX], [0u8; 512]);
    let mut process: DoubleBarrier = DoubleBarrier::new(DIR, "a-device").unwrap();
    let mut zk = driver(&server, &mut rx, &mut tx, usize::MAX);
    let id = zk.add(&mut process).unwrap();
    zk.connect().await.unwrap();
    let session = zk.session_id();
    zk.recipe(id).unwrap().enter(COUNT).unwrap();
    let took = drive_until(&mut zk, "never entered", Duration::from_secs(60), |zk| {
        zk.recipe(id).unwrap().is_inside()
    })
    .await;
    assert_eq!(
        zk.recipe(id).unwrap().poll_event(),
        Some(DoubleBarrierEvent::Entered)
    );
    let all = zk.run(admin.list_children(DIR)).await.unwrap().unwrap();
    let listing = listing_bytes(&all);
    assert!(
        listing > 4 * RX,
        "the listing ({listing} B) is not over the buffer"
    );
    println!(
        "embassy double barrier process with a {RX} B receive buffer: read a listing of {} names ({listing} B), opened the barrier in {took:?}",
        all.len()
    );

    zk.recipe(id).unwrap().leave().unwrap();
    drive_until(&mut zk, "never waited", Duration::from_secs(60), |zk| {
        zk.recipe(id).unwrap().waiting_for().is_some()
    })
    .await;
    assert_eq!(
        zk.recipe(id).unwrap().waiting_for(),
        Some(format!("fleet-member-std-{:04}", OTHERS - 1).as_str())
    );
    go.send(true).unwrap();
    let took = drive_until(&mut zk, "never left", Duration::from_secs(120), |zk| {
        zk.recipe(id).unwrap().is_idle()
    })
    .await;
    assert_eq!(
        zk.recipe(id).unwrap().poll_event(),
        Some(DoubleBarrierEvent::Left)
    );
    println!("the device left last, {took:?} after the others were told to leave");
    for process in processes {
        zk.run(process).await.unwrap().unwrap();
    }
    let left = zk.run(admin.list_children(DIR)).await.unwrap().unwrap();
    assert!(left.is_empty(), "nodes left behind: {left:?}");
    assert_eq!(zk.faults(), 0, "last fault: {:?}", zk.last_fault());
    assert_eq!(zk.session_id(), session);
    zk.close().await.unwrap();
}

/// The joins minus the departures `observer` reported, and whether it said
/// the group overflowed it.
fn tally<const M: usize>(observer: &mut members::Observer<M, 24>, net: &mut i64) -> bool {
    let mut overflow = false;
    while let Some(event) = observer.poll_event() {
        match event {
            ObserverEvent::Changed { joined, left } => {
                *net += i64::from(joined) - i64::from(left);
            }
            ObserverEvent::Overflow { .. } => overflow = true,
            other => panic!("unexpected {other:?}"),
        }
    }
    overflow
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embassy_observer_with_a_2_kib_buffer_follows_a_group_of_500() {
    const GROUP: &str = "/fleet/gateways";
    let server = ZkServer::start();
    // 300 members on one session, 200 on another.
    let _a = others(&server, GROUP, "edge-a-", 300).await;
    let _b = others(&server, GROUP, "edge-b-", 200).await;
    let admin = std_client(&server).await;

    // Two observers on one device: one with room for the whole group, one
    // with room for 100 names, which holds the first 100.
    let (mut rx, mut tx) = ([0u8; RX], [0u8; 512]);
    let mut all: Box<members::Observer<1024, 24>> =
        Box::new(members::Observer::new(GROUP).unwrap());
    let mut first: members::Observer<100, 24> = members::Observer::new(GROUP).unwrap();
    let mut zk = driver(&server, &mut rx, &mut tx, usize::MAX);
    let all_id = zk.add(&mut *all).unwrap();
    let first_id = zk.add(&mut first).unwrap();
    zk.connect().await.unwrap();
    let session = zk.session_id();
    zk.recipe(all_id).unwrap().watch();
    zk.recipe(first_id).unwrap().watch();
    let took = drive_until(
        &mut zk,
        "never read the group",
        Duration::from_secs(60),
        |zk| zk.recipe(all_id).unwrap().len() == 500 && zk.recipe(first_id).unwrap().len() == 100,
    )
    .await;
    let (mut net_all, mut net_first) = (0, 0);
    let on_server = zk.run(admin.list_children(GROUP)).await.unwrap().unwrap();
    let listing = listing_bytes(&on_server);
    assert!(
        listing > 4 * RX,
        "the listing ({listing} B) is not over the buffer"
    );
    let check = |zk: &mut Device<'_>, expected: &mut Vec<String>| {
        expected.sort();
        let held: Vec<String> = zk
            .recipe(all_id)
            .unwrap()
            .members()
            .map(str::to_owned)
            .collect();
        assert_eq!(&held, expected);
        assert!(zk.recipe(all_id).unwrap().is_complete());
        let held: Vec<String> = zk
            .recipe(first_id)
            .unwrap()
            .members()
            .map(str::to_owned)
            .collect();
        assert_eq!(held, expected[..100]);
        assert!(!zk.recipe(first_id).unwrap().is_complete());
    };
    let mut expected = on_server;
    check(&mut zk, &mut expected);
    assert!(!tally(zk.recipe(all_id).unwrap(), &mut net_all));
    assert!(tally(zk.recipe(first_id).unwrap(), &mut net_first));
    assert_eq!((net_all, net_first), (500, 100));
    println!(
        "embassy group observer with a {RX} B receive buffer: read a group of 500 ({listing} B) in {took:?}"
    );

    // While the device is not driven, the first 300 leave and 150 join
    // after the rest: one notification, then one listing shows it all. The
    // 100 names the small observer held are gone and the names that joined
    // sort after those it could hold: it must list again to find the first
    // 100 still in.
    let gone: Vec<String> = expected
        .iter()
        .filter(|n| n.starts_with("edge-a-"))
        .cloned()
        .collect();
    let deletes: Vec<_> = gone
        .iter()
        .map(|name| {
            let path = format!("{GROUP}/{name}");
            let admin = admin.clone();
            async move { admin.delete(&path, None).await }
        })
        .collect();
    for delete in deletes {
        delete.await.unwrap();
    }
    let _c = others(&server, GROUP, "edge-c-", 150).await;
    let took = drive_until(
        &mut zk,
        "never followed the change",
        Duration::from_secs(60),
        |zk| {
            zk.recipe(all_id).unwrap().len() == 350
                && zk
                    .recipe(first_id)
                    .unwrap()
                    .members()
                    .next()
                    .is_some_and(|n| n.starts_with("edge-b-"))
        },
    )
    .await;
    let mut expected = zk.run(admin.list_children(GROUP)).await.unwrap().unwrap();
    assert_eq!(expected.len(), 350);
    check(&mut zk, &mut expected);
    assert!(!tally(zk.recipe(all_id).unwrap(), &mut net_all));
    assert!(tally(zk.recipe(first_id).unwrap(), &mut net_first));
    assert_eq!((net_all, net_first), (350, 100));
    println!("300 left and 150 joined: followed in {took:?}");
    assert_eq!(zk.faults(), 0, "last fault: {:?}", zk.last_fault());
    assert_eq!(zk.session_id(), session);
    zk.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embassy_site_with_a_2_kib_buffer_decides_a_transaction_of_200_sites() {
    const TX: &str = "/fleet/tx/rollout";
    const SITES: usize = 200;
    let server = ZkServer::start();
    let names: Vec<String> = (0..SITES).map(|i| format!("fleet-site-{i:04}")).collect();
    let name_refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let admin = std_client(&server).await;
    // All-watch: every site lists the transaction node and decides.
    let variant = Variant::AllWatch;
    let _coordinator = herdless_std::two_phase::Coordinator::start(
        &admin,
        TX,
        b"firmware 2.4.1",
        &name_refs,
        variant,
        Duration::from_secs(120),
    )
    .await
    .unwrap();
    let listing = listing_bytes(&names);
    assert!(
        listing > RX,
        "the listing ({listing} B) is not over the buffer"
    );

    // The other 199 sites vote commit once the device has voted.
    let (voted, device_voted) = tokio::sync::watch::channel(false);
    let mut sessions = Vec::new();
    for _ in 0..3 {
        sessions.push(std_client(&server).await);
    }
    let mut others = Vec::new();
    for (i, name) in names.iter().enumerate().skip(1) {
        let (client, name, mut device_voted) =
            (sessions[i % 3].clone(), name.clone(), device_voted.clone());
        others.push(tokio::spawn(async move {
            let site = herdless_std::two_phase::Site::join(&client, TX, &name, variant)
                .await
                .unwrap();
            device_voted.wait_for(|v| *v).await.unwrap();
            site.vote(Vote::Commit).await.unwrap();
            site.outcome().await.unwrap()
        }));
    }

    let (mut rx, mut tx) = ([0u8; RX], [0u8; 512]);
    let mut site: Box<TwoPhase<256, 32>> = Box::new(TwoPhase::new(TX).unwrap());
    let mut zk = driver(&server, &mut rx, &mut tx, usize::MAX);
    let id = zk.add(&mut *site).unwrap();
    zk.connect().await.unwrap();
    let session = zk.session_id();
    let wait = Duration::from_secs(60);
    let decided = tokio::time::timeout(wait, zk.handle(id).participate(&names[0], variant))
        .await
        .expect("never read the transaction")
        .unwrap();
    assert_eq!(decided, None);
    tokio::time::timeout(wait, zk.handle(id).vote(Vote::Commit))
        .await
        .expect("never voted")
        .unwrap();
    let started = Instant::now();
    voted.send(true).unwrap();
    let outcome = tokio::time::timeout(wait, zk.handle(id).outcome())
        .await
        .expect("never learned the outcome")
        .unwrap();
    assert_eq!(outcome, Outcome::Commit);
    println!(
        "embassy two-phase site with a {RX} B receive buffer: listed {SITES} sites ({listing} B), decided commit {:?} after the others were told to vote",
        started.elapsed()
    );
    for other in others {
        assert_eq!(zk.run(other).await.unwrap().unwrap(), Outcome::Commit);
    }
    assert_eq!(zk.recipe(id).unwrap().votes().count(), SITES);
    assert_eq!(zk.faults(), 0, "last fault: {:?}", zk.last_fault());
    assert_eq!(zk.session_id(), session);
    zk.close().await.unwrap();
}

/// Creates `count` ephemeral sequential nodes `<dir>/<prefix>NNNNNNNNNN`
/// on a herdless-std session of their own (`dir` made first), pipelined;
/// returns the session, whose end removes them all.
async fn others(
    server: &ZkServer,
    dir: &'static str,
    prefix: &'static str,
    count: usize,
) -> herdless_std::Client {
    others_at(&server.addr(), dir, prefix, count, b"").await
}

/// [`others`] on the servers of `connect` (a connection string), each
/// node holding `data`.
async fn others_at(
    connect: &str,
    dir: &'static str,
    prefix: &'static str,
    count: usize,
    data: &[u8],
) -> herdless_std::Client {
    let session = herdless_std::connect(connect, Duration::from_secs(30))
        .await
        .expect("connect a herdless-std client");
    let open = CreateMode::Persistent.with_acls(Acls::anyone_all());
    let mut made = String::new();
    for part in dir.split('/').skip(1) {
        made.push('/');
        made.push_str(part);
        match session.create(&made, b"", &open).await {
            Ok(_) | Err(zookeeper_client::Error::NodeExists) => {}
            Err(e) => panic!("{made}: {e}"),
        }
    }
    let path: &'static str = Box::leak(format!("{dir}/{prefix}").into_boxed_str());
    let node = CreateMode::EphemeralSequential.with_acls(Acls::anyone_all());
    for chunk in 0..count.div_ceil(1_000) {
        let creates: Vec<_> = (chunk * 1_000..count.min((chunk + 1) * 1_000))
            .map(|_| session.create(path, data, &node))
            .collect();
        for create in creates {
            create.await.unwrap();
        }
    }
    session
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embassy_candidate_with_a_2_kib_buffer_leads_behind_9999_nodes() {
    const DIR: &str = "/fleet/gateway-10k";
    const AHEAD: usize = 9_999;
    let server = ZkServer::start();
    let holder = others(&server, DIR, "x-n_", AHEAD).await;
    let (mut rx, mut tx) = ([0u8; RX], [0u8; 512]);
    let mut election: Election = Election::new(DIR).unwrap();
    let mut zk = driver(&server, &mut rx, &mut tx, usize::MAX);
    let id = zk.add(&mut election).unwrap();
    zk.connect().await.unwrap();
    zk.recipe(id).unwrap().campaign(guid(), b"device").unwrap();
    drive_until(&mut zk, "never followed", Duration::from_secs(60), |zk| {
        zk.recipe(id).unwrap().predecessor().is_some()
    })
    .await;
    assert_eq!(
        zk.recipe(id).unwrap().predecessor(),
        Some(format!("{DIR}/x-n_{:010}", AHEAD - 1).as_str())
    );
    let admin = zk.run(std_client(&server)).await.unwrap();
    let listing = listing_bytes(&zk.run(admin.list_children(DIR)).await.unwrap().unwrap());
    drop(holder);
    let took = drive_until(&mut zk, "never led", Duration::from_secs(60), |zk| {
        zk.handle(id).is_leading()
    })
    .await;
    println!(
        "embassy candidate with a {RX} B receive buffer: read a listing of {} names ({listing} B), led {took:?} after the others' session ended",
        AHEAD + 1,
    );
    assert_eq!(zk.faults(), 0, "last fault: {:?}", zk.last_fault());
    zk.handle(id).resign().await.unwrap();
    zk.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embassy_lock_waiter_with_a_2_kib_buffer_acquires_behind_2000_and_10000_nodes() {
    let server = ZkServer::start();
    for (dir, ahead) in [("/fleet/lock-2k", 1_999), ("/fleet/lock-10k", 9_999)] {
        // Lock nodes of other contenders, held by one herdless-std session.
        let holder = others(&server, dir, "x-lock-", ahead).await;
        let (mut rx, mut tx) = ([0u8; RX], [0u8; 512]);
        let mut lock: Lock = Lock::new(dir).unwrap();
        let mut zk = driver(&server, &mut rx, &mut tx, usize::MAX);
        let id = zk.add(&mut lock).unwrap();
        zk.connect().await.unwrap();
        zk.recipe(id).unwrap().acquire(guid()).unwrap();
        drive_until(&mut zk, "never waited", Duration::from_secs(60), |zk| {
            zk.recipe(id).unwrap().predecessor().is_some()
        })
        .await;
        let admin = zk.run(std_client(&server)).await.unwrap();
        let all = zk.run(admin.list_children(dir)).await.unwrap().unwrap();
        assert_eq!(all.len(), ahead + 1);
        let listing = listing_bytes(&all);
        assert!(
            listing > 20 * RX,
            "the listing ({listing} B) is not over the buffer"
        );
        assert_eq!(
            zk.recipe(id).unwrap().predecessor(),
            Some(format!("{dir}/x-lock-{:010}", ahead - 1).as_str())
        );
        // The others' session ends: their nodes go, and the waiter goes in.
        drop(holder);
        let started = Instant::now();
        let event = loop {
            if let Some(event) = zk.recipe(id).unwrap().poll_event() {
                break event;
            }
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "never acquired"
            );
            zk.run_for(embassy_time::Duration::from_millis(20))
                .await
                .unwrap();
        };
        assert_eq!(event, LockEvent::Acquired);
        println!(
            "embassy lock waiter with a {RX} B receive buffer: read a listing of {} names ({listing} B), acquired {:?} after the others left",
            ahead + 1,
            started.elapsed()
        );
        assert_eq!(zk.faults(), 0, "last fault: {:?}", zk.last_fault());
        zk.handle(id).release().await.unwrap();
        zk.close().await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embassy_listings_read_through_a_160_byte_buffer_in_reads_of_any_size() {
    const DIR: &str = "/fleet/small";
    const AHEAD: usize = 300;
    let server = ZkServer::start();
    let holder = others(&server, DIR, "x-lock-", AHEAD).await;
    let node = CreateMode::EphemeralSequential.with_acls(Acls::anyone_all());
    // Reads of 1 to 160 bytes end inside the frame's length, its reply
    // header, the count and the names, and the buffer holds a few names at
    // most (160 bytes: the lock's other replies, a create's path or a
    // stat, must fit whole): every path of the incremental read is taken.
    for max_read in [1, 3, 7, 13, 20, 29, 64, 160] {
        let (mut rx, mut tx) = ([0u8; 160], [0u8; 512]);
        let mut lock: Lock = Lock::new(DIR).unwrap();
        let mut zk = driver(&server, &mut rx, &mut tx, max_read);
        let id = zk.add(&mut lock).unwrap();
        zk.connect().await.unwrap();
        let acquired = zk
            .handle(id)
            .acquire_timeout(guid(), embassy_time::Duration::from_millis(500))
            .await
            .unwrap();
        assert!(!acquired, "acquired behind {AHEAD} nodes");
        assert_eq!(zk.faults(), 0, "reads of {max_read}: {:?}", zk.last_fault());
        // The attempt waited behind the last node: it read every name.
        zk.recipe(id).unwrap().acquire(guid()).unwrap();
        let started = Instant::now();
        while zk.recipe(id).unwrap().predecessor().is_none() {
            assert!(started.elapsed() < Duration::from_secs(30), "never waited");
            zk.run_for(embassy_time::Duration::from_millis(10))
                .await
                .unwrap();
        }
        assert_eq!(
            zk.recipe(id).unwrap().predecessor(),
            Some(format!("{DIR}/x-lock-{:010}", AHEAD - 1).as_str()),
            "reads of {max_read}"
        );
        assert_eq!(zk.faults(), 0, "reads of {max_read}: {:?}", zk.last_fault());
        zk.close().await.unwrap();
    }
    // A name longer than the buffer cannot be read here: the lock fails
    // with the typed error, and the session carries on.
    let long = format!("{DIR}/{}-lock-", "y".repeat(160));
    holder.create(&long, b"", &node).await.unwrap();
    let (mut rx, mut tx) = ([0u8; 160], [0u8; 512]);
    let mut lock: Lock = Lock::new(DIR).unwrap();
    let mut zk = driver(&server, &mut rx, &mut tx, 7);
    let id = zk.add(&mut lock).unwrap();
    zk.connect().await.unwrap();
    let session = zk.session_id();
    let outcome = tokio::time::timeout(Duration::from_secs(30), zk.handle(id).acquire(guid()))
        .await
        .expect("the lock hears of the name over its buffer");
    assert!(
        matches!(
            outcome,
            Err(herdless_embassy::Error::Recipe(herdless_core::Error::Zk(
                ZkError::ReplyTooLarge
            )))
        ),
        "{outcome:?}"
    );
    assert_eq!(zk.faults(), 0, "{:?}", zk.last_fault());
    assert_eq!(zk.session_id(), session);
    let admin = std_client(&server).await;
    let left = admin.list_children(DIR).await.unwrap();
    assert_eq!(left.len(), AHEAD + 1, "the failed attempt left no node");
    zk.close().await.unwrap();
}

/// A recipe that reads one node (`getData`, or `getChildren` if `list`)
/// each time it is asked, and keeps the outcome: the size read or the
/// error. It does not take listings in parts.
struct Reader {
    path: &'static str,
    list: bool,
    ids: RequestIds,
    due: bool,
    sent: Option<RequestId>,
    outcome: Option<Result<usize, ZkError>>,
    /// Watch notifications heard for `path`.
    heard: u32,
}

impl Reader {
    fn new(path: &'static str, list: bool) -> Self {
        Reader {
            path,
            list,
            ids: RequestIds::new(),
            due: false,
            sent: None,
            outcome: None,
            heard: 0,
        }
    }

    fn read(&mut self) {
        self.due = true;
        self.outcome = None;
    }
}

impl Recipe for Reader {
    type Event = ();

    fn poll_request(&mut self) -> Option<Outgoing<'_>> {
        if !std::mem::take(&mut self.due) {
            return None;
        }
        let id = self.ids.next_id();
        self.sent = Some(id);
        let request = if self.list {
            Request::GetChildren {
                path: self.path,
                watch: false,
            }
        } else {
            Request::GetData {
                path: self.path,
                watch: true,
            }
        };
        Some(Outgoing { id, request })
    }

    fn handle_reply(&mut self, _now: CoreInstant, id: RequestId, reply: Reply<'_>) {
        if self.sent != Some(id) {
            return;
        }
        self.outcome = Some(match reply {
            Reply::Data { data, .. } => Ok(data.len()),
            Reply::Children(names) => Ok(names.count()),
            Reply::Error(e) => Err(e),
            other => panic!("unexpected {other:?}"),
        });
    }

    fn handle_watch(&mut self, _now: CoreInstant, event: WatchEvent<'_>) {
        if event.path == self.path {
            self.heard += 1;
        }
    }

    fn handle_session(&mut self, _now: CoreInstant, _event: SessionEvent) {}

    fn poll_event(&mut self) -> Option<()> {
        None
    }

    fn handle_listing_part(
        &mut self,
        _now: CoreInstant,
        _id: RequestId,
        _names: Children<'_>,
        _last: bool,
    ) {
        panic!("a recipe that does not take listings in parts was given one");
    }
}

/// Runs the driver until `read` has an outcome.
async fn outcome(
    zk: &mut Device<'_>,
    id: herdless_embassy::RecipeId<Reader>,
) -> Result<usize, ZkError> {
    zk.recipe(id).unwrap().read();
    let started = Instant::now();
    loop {
        if let Some(outcome) = zk.recipe(id).unwrap().outcome {
            return outcome;
        }
        assert!(started.elapsed() < Duration::from_secs(10), "no answer");
        zk.run_for(embassy_time::Duration::from_millis(10))
            .await
            .unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embassy_a_reply_over_the_buffer_is_a_typed_error_and_the_session_carries_on() {
    let server = ZkServer::start();
    let admin = std_client(&server).await;
    let open = CreateMode::Persistent.with_acls(Acls::anyone_all());
    let blob = vec![0x5a; 100 * 1024];
    admin.create("/blob", &blob, &open).await.unwrap();
    admin.create("/small", b"ok", &open).await.unwrap();
    admin.create("/many", b"", &open).await.unwrap();
    for i in 0..100 {
        let name = format!("/many/child-with-a-long-enough-name-{i:04}");
        admin.create(&name, b"", &open).await.unwrap();
    }

    let (mut rx, mut tx) = ([0u8; RX], [0u8; 512]);
    let mut big = Reader::new("/blob", false);
    let mut small = Reader::new("/small", false);
    let mut many = Reader::new("/many", true);
    let mut lock: Lock = Lock::new("/locks/after").unwrap();
    let mut zk = driver(&server, &mut rx, &mut tx, usize::MAX);
    let big = zk.add(&mut big).unwrap();
    let small = zk.add(&mut small).unwrap();
    let many = zk.add(&mut many).unwrap();
    let lock = zk.add(&mut lock).unwrap();
    zk.connect().await.unwrap();
    let session = zk.session_id();

    assert_eq!(outcome(&mut zk, big).await, Err(ZkError::ReplyTooLarge));
    assert_eq!(outcome(&mut zk, small).await, Ok(2), "the next reply reads");
    assert_eq!(
        outcome(&mut zk, many).await,
        Err(ZkError::ReplyTooLarge),
        "a listing over the buffer, for a recipe that wants it whole"
    );
    assert_eq!(outcome(&mut zk, big).await, Err(ZkError::ReplyTooLarge));
    // The watch the refused getData asked for is set: a change is heard.
    admin.set_data("/blob", b"smaller", None).await.unwrap();
    let started = Instant::now();
    while zk.recipe(big).unwrap().heard == 0 {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "no notification"
        );
        zk.run_for(embassy_time::Duration::from_millis(10))
            .await
            .unwrap();
    }
    assert_eq!(outcome(&mut zk, big).await, Ok(7));
    // And the session serves a recipe as before.
    zk.handle(lock).acquire(guid()).await.unwrap();
    zk.handle(lock).release().await.unwrap();
    assert_eq!(zk.faults(), 0, "last fault: {:?}", zk.last_fault());
    assert_eq!(zk.session_id(), session);
    zk.close().await.unwrap();
}

/// A contender ahead whose node holds more data than the receive buffer
/// (another library's, or a herdless-std candidate's with much data): the
/// embedded lock waiter and candidate read it with a watch, are answered
/// `ReplyTooLarge`, and wait behind it all the same, reporting nothing but
/// that they follow; its deletion lets them in.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embassy_waiters_queue_behind_a_node_whose_data_is_over_the_buffer() {
    let server = ZkServer::start();
    let blob = vec![0x5a; 8 * RX];

    const LOCKS: &str = "/fleet/lock-big-data";
    let holder = others_at(&server.addr(), LOCKS, "x-lock-", 1, &blob).await;
    let (mut rx, mut tx) = ([0u8; RX], [0u8; 512]);
    let mut lock: Lock = Lock::new(LOCKS).unwrap();
    let mut zk = driver(&server, &mut rx, &mut tx, usize::MAX);
    let id = zk.add(&mut lock).unwrap();
    zk.connect().await.unwrap();
    zk.recipe(id).unwrap().acquire(guid()).unwrap();
    drive_until(&mut zk, "never waited", Duration::from_secs(60), |zk| {
        let lock = zk.recipe(id).unwrap();
        lock.predecessor().is_some() || lock.state() != LockState::Acquiring
    })
    .await;
    // Time for the predecessor's read to be answered.
    zk.run_for(embassy_time::Duration::from_secs(1))
        .await
        .unwrap();
    assert_eq!(zk.recipe(id).unwrap().poll_event(), None);
    assert_eq!(zk.recipe(id).unwrap().state(), LockState::Acquiring);
    drop(holder);
    drive_until(&mut zk, "never acquired", Duration::from_secs(60), |zk| {
        zk.recipe(id).unwrap().state() == LockState::Held
    })
    .await;
    assert_eq!(
        zk.recipe(id).unwrap().poll_event(),
        Some(LockEvent::Acquired)
    );
    assert_eq!(zk.faults(), 0, "last fault: {:?}", zk.last_fault());
    zk.handle(id).release().await.unwrap();
    zk.close().await.unwrap();

    const GATEWAY: &str = "/fleet/gateway-big-data";
    let holder = others_at(&server.addr(), GATEWAY, "x-n_", 1, &blob).await;
    let (mut rx, mut tx) = ([0u8; RX], [0u8; 512]);
    let mut election: Election = Election::new(GATEWAY).unwrap();
    let mut zk = driver(&server, &mut rx, &mut tx, usize::MAX);
    let id = zk.add(&mut election).unwrap();
    zk.connect().await.unwrap();
    zk.recipe(id).unwrap().campaign(guid(), b"device").unwrap();
    drive_until(&mut zk, "never followed", Duration::from_secs(60), |zk| {
        let candidate = zk.recipe(id).unwrap();
        candidate.predecessor().is_some() || candidate.state() != ElectionState::Campaigning
    })
    .await;
    zk.run_for(embassy_time::Duration::from_secs(1))
        .await
        .unwrap();
    let event = zk.recipe(id).unwrap().poll_event();
    assert!(
        matches!(event, Some(ElectionEvent::Following { .. })),
        "{event:?}"
    );
    assert_eq!(zk.recipe(id).unwrap().poll_event(), None);
    assert_eq!(zk.recipe(id).unwrap().state(), ElectionState::Campaigning);
    drop(holder);
    drive_until(&mut zk, "never led", Duration::from_secs(60), |zk| {
        zk.handle(id).is_leading()
    })
    .await;
    assert_eq!(zk.faults(), 0, "last fault: {:?}", zk.last_fault());
    zk.handle(id).resign().await.unwrap();
    zk.close().await.unwrap();
}

/// The receive buffer's edge: a reply whose frame fills it exactly is read
/// whole; one byte more is over it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embassy_a_reply_that_fills_the_buffer_exactly_is_read_whole() {
    // A getData reply's frame: length prefix 4, reply header 16, data
    // length 4, the data, the stat 68.
    const AROUND_DATA: usize = 4 + 16 + 4 + 68;
    let server = ZkServer::start();
    let admin = std_client(&server).await;
    let open = CreateMode::Persistent.with_acls(Acls::anyone_all());
    let fits = RX - AROUND_DATA;
    admin.create("/edge", &vec![1; fits], &open).await.unwrap();
    admin
        .create("/past-edge", &vec![2; fits + 1], &open)
        .await
        .unwrap();

    let (mut rx, mut tx) = ([0u8; RX], [0u8; 512]);
    let mut edge = Reader::new("/edge", false);
    let mut past = Reader::new("/past-edge", false);
    let mut zk = driver(&server, &mut rx, &mut tx, usize::MAX);
    let edge = zk.add(&mut edge).unwrap();
    let past = zk.add(&mut past).unwrap();
    zk.connect().await.unwrap();
    assert_eq!(outcome(&mut zk, edge).await, Ok(fits));
    assert_eq!(outcome(&mut zk, past).await, Err(ZkError::ReplyTooLarge));
    assert_eq!(outcome(&mut zk, edge).await, Ok(fits), "and the next reads");
    assert_eq!(zk.faults(), 0, "last fault: {:?}", zk.last_fault());
    zk.close().await.unwrap();
}

/// A listing larger than the receive buffer, broken off half-way and its
/// server killed, on a three-server ensemble: the embedded candidate
/// reads it again from another server, with its session, and takes its
/// turn. Each round deletes the node the candidate waits behind, so that
/// it lists the directory (2,000 nodes, some 36 KB, 17 times its receive
/// buffer), breaks the connection when half of that listing has been
/// read, and kills the server it came from; the candidate must follow the
/// next node ahead on the same session, having reported nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embassy_candidate_rides_out_listings_broken_off_and_their_servers_killed() {
    const DIR: &str = "/fleet/ensemble";
    const AHEAD: usize = 2_000;
    const ROUNDS: usize = 3;
    let mut ensemble = ZkEnsemble::start();
    let connect = ensemble.connect_string();
    let holder = others_at(&connect, DIR, "x-n_", AHEAD, b"").await;
    let admin = herdless_std::connect(&connect, Duration::from_secs(30))
        .await
        .expect("connect the admin session");
    // The others were created through other servers.
    admin.sync(DIR).await.unwrap();
    let all = admin.list_children(DIR).await.unwrap();
    let listing = listing_bytes(&all) + listing_bytes(&[format!("{}-n_0000002000", guid())]);

    let (mut rx, mut tx) = ([0u8; RX], [0u8; 512]);
    let addrs = (0..ensemble.len())
        .map(|i| ensemble.client_addr(i))
        .collect();
    let mut election: Election = Election::new(DIR).unwrap();
    let mut zk: Device<'_> = Zk::new(
        TokioTransport::new(addrs),
        Buffers::new(&mut rx, &mut tx),
        SessionConfig::new(ensemble.len(), 10_000)
            .with_retry_delay_ms(200)
            .with_server_seed(7),
    );
    let id = zk.add(&mut election).unwrap();
    zk.connect().await.unwrap();
    let session = zk.session_id();
    zk.recipe(id).unwrap().campaign(guid(), b"device").unwrap();
    drive_until(&mut zk, "never followed", Duration::from_secs(60), |zk| {
        zk.recipe(id).unwrap().predecessor().is_some()
    })
    .await;
    assert_eq!(
        zk.recipe(id).unwrap().poll_event(),
        Some(ElectionEvent::Following {
            leader: Sequence::new(0)
        })
    );

    let mut events = Vec::new();
    for round in 0..ROUNDS {
        let ahead = zk.recipe(id).unwrap().predecessor().unwrap().to_owned();
        assert_eq!(
            ahead,
            format!("{DIR}/x-n_{:010}", AHEAD - 1 - round),
            "round {round}"
        );
        // Break the connection half-way through the listing the delete
        // sets off (a notification and a few short answers come first).
        let transport = zk.transport();
        transport.break_at = Some(transport.bytes_read + listing as u64 / 2);
        let broken = transport.broken.len();
        zk.run(admin.delete(&ahead, None)).await.unwrap().unwrap();
        drive_until(
            &mut zk,
            "the listing never broke",
            Duration::from_secs(30),
            |zk| zk.transport().broken.len() > broken,
        )
        .await;
        let server = zk.transport().broken[broken];
        ensemble.kill(server);
        let next = format!("{DIR}/x-n_{:010}", AHEAD - 2 - round);
        drive_until(
            &mut zk,
            "never followed the next node from another server",
            Duration::from_secs(60),
            |zk| {
                let candidate = zk.recipe(id).unwrap();
                while let Some(event) = candidate.poll_event() {
                    events.push(event);
                }
                candidate.predecessor() == Some(next.as_str())
            },
        )
        .await;
        assert_eq!(zk.session_id(), session, "round {round}: a new session");
        assert!(events.is_empty(), "round {round}: reported {events:?}");
        let up = tokio::task::block_in_place(|| ensemble.restart(server, Duration::from_secs(60)));
        assert!(up, "server {server} did not come back");
    }

    // The others' session ends: the candidate leads, on its own session.
    drop(holder);
    drive_until(&mut zk, "never led", Duration::from_secs(60), |zk| {
        zk.handle(id).is_leading()
    })
    .await;
    assert_eq!(zk.session_id(), session);
    println!(
        "embassy candidate with a {RX} B receive buffer: {ROUNDS} listings of {} names ({listing} B) broken off half-way and their servers killed; followed on from another server each time, then led, on one session",
        AHEAD + 1
    );
    zk.handle(id).resign().await.unwrap();
    zk.close().await.unwrap();
    // The admin's server may not have applied the resignation yet: reads
    // are served by each server from its own copy.
    admin.sync(DIR).await.unwrap();
    assert_eq!(
        admin.list_children(DIR).await.unwrap(),
        Vec::<String>::new()
    );
}
