//! The embedded driver (`herdless-embassy`) against a real ZooKeeper 3.8,
//! over tokio's `TcpStream` through `embedded-io-adapters`: the same
//! session state machine and wire codec a microcontroller runs, with a
//! loopback network that the tests can cut.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, TcpListener};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use herdless_core::lock::{Lock, LockEvent};
use herdless_core::naming::Guid;
use herdless_embassy::wire::{SessionConfig, SessionError, State};
use herdless_embassy::{Buffers, Error, Fault, Zk};
use herdless_tests::tokio_transport::{drive_until, driver, TokioTransport};

/// How long a step may take before the test fails instead of hanging.
const LIMIT: Duration = Duration::from_secs(10);
use herdless_tests::{rival_acquires, Proxy, ZkServer};

fn guid() -> Guid {
    Guid::from_random_bytes(uuid::Uuid::new_v4().into_bytes())
}

fn millis(d: Duration) -> u32 {
    u32::try_from(d.as_millis()).unwrap()
}

async fn std_client(server: &ZkServer) -> herdless_std::Client {
    herdless_std::connect(&server.addr(), Duration::from_secs(30))
        .await
        .expect("connect a herdless-std client")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embassy_lock_keeps_mutual_exclusion_with_herdless_std_contenders() {
    let server = ZkServer::start();
    let inside = Arc::new(AtomicBool::new(false));
    let mut tasks = Vec::new();
    for _ in 0..3 {
        let client = std_client(&server).await;
        let inside = inside.clone();
        tasks.push(tokio::spawn(async move {
            let lock = herdless_std::Lock::new(&client, "/locks/shared").unwrap();
            for _ in 0..20 {
                let guard = lock.acquire().await.unwrap();
                assert!(!inside.swap(true, Ordering::SeqCst), "two holders at once");
                tokio::time::sleep(Duration::from_millis(1)).await;
                inside.store(false, Ordering::SeqCst);
                guard.release().await.unwrap();
            }
        }));
    }

    let (mut rx, mut tx) = ([0u8; 4096], [0u8; 1024]);
    let mut lock: Lock = Lock::new("/locks/shared").unwrap();
    let transport = TokioTransport::new(vec![server.addr()]);
    let mut zk: Zk<'_, _> = Zk::new(
        transport,
        Buffers::new(&mut rx, &mut tx),
        SessionConfig::new(1, 10_000),
    );
    let id = zk.add(&mut lock).unwrap();
    zk.connect().await.unwrap();
    for _ in 0..20 {
        let mut pump = zk.handle(id);
        pump.acquire(guid()).await.unwrap();
        assert!(!inside.swap(true, Ordering::SeqCst), "two holders at once");
        pump.hold_while(tokio::time::sleep(Duration::from_millis(1)))
            .await
            .unwrap();
        inside.store(false, Ordering::SeqCst);
        pump.release().await.unwrap();
    }
    zk.close().await.unwrap();
    for task in tasks {
        task.await.unwrap();
    }
    let client = std_client(&server).await;
    let left = client.list_children("/locks/shared").await.unwrap();
    assert!(left.is_empty(), "nodes left behind: {left:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embassy_session_survives_a_cut_connection_and_keeps_its_lock() {
    let server = ZkServer::start();
    let proxy = Proxy::start(server.port());
    let (mut rx, mut tx) = ([0u8; 4096], [0u8; 1024]);
    let mut lock: Lock = Lock::new("/locks/cut").unwrap();
    let transport = TokioTransport::new(vec![proxy.addr()]);
    let mut zk: Zk<'_, _> = Zk::new(
        transport,
        Buffers::new(&mut rx, &mut tx),
        SessionConfig::new(1, 6_000).with_retry_delay_ms(200),
    );
    let id = zk.add(&mut lock).unwrap();
    zk.connect().await.unwrap();
    let session = zk.session_id();
    zk.handle(id).acquire(guid()).await.unwrap();

    proxy.cut();
    let cut_at = Instant::now();
    zk.run_for(embassy_time::Duration::from_millis(1_000))
        .await
        .unwrap();
    proxy.restore();
    let mut seen = Vec::new();
    while !matches!(seen.last(), Some(LockEvent::Resumed)) {
        let event = tokio::time::timeout(Duration::from_secs(10), zk.handle(id).next_event())
            .await
            .expect("the lock resumes")
            .unwrap();
        assert_ne!(
            event,
            LockEvent::Lost,
            "the lock was lost after {:?}: {seen:?}; state {:?}, session {:#x} (was {session:#x}), {} faults, last {:?}",
            cut_at.elapsed(),
            zk.state(),
            zk.session_id(),
            zk.faults(),
            zk.last_fault()
        );
        seen.push(event);
    }
    println!(
        "embassy driver: connection cut for 1 s, lock resumed {:?} after the cut; events {seen:?}; {} faults, last {:?}",
        cut_at.elapsed(),
        zk.faults(),
        zk.last_fault()
    );
    assert_eq!(seen.first(), Some(&LockEvent::Suspended));
    assert_eq!(zk.session_id(), session, "the same session resumed");
    assert!(zk.handle(id).is_held());
    assert!(zk.faults() > 0);

    let client = std_client(&server).await;
    assert_eq!(client.list_children("/locks/cut").await.unwrap().len(), 1);
    zk.handle(id).release().await.unwrap();
    assert!(client.list_children("/locks/cut").await.unwrap().is_empty());
    zk.close().await.unwrap();
}

/// A call made before `connect` opens the session itself, rather than
/// waiting for ever on a driver never started (kazoo#83: a Kazoo lock on a
/// client never started hangs).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embassy_calls_made_before_connect_open_the_session() {
    let server = ZkServer::start();
    let (mut rx, mut tx) = ([0u8; 4096], [0u8; 1024]);
    let mut lock: Lock = Lock::new("/locks/unstarted").unwrap();
    let mut zk: Zk<'_, _> = Zk::new(
        TokioTransport::new(vec![server.addr()]),
        Buffers::new(&mut rx, &mut tx),
        SessionConfig::new(1, 10_000),
    );
    let id = zk.add(&mut lock).unwrap();
    tokio::time::timeout(LIMIT, zk.handle(id).acquire(guid()))
        .await
        .expect("the acquire opens the session")
        .unwrap();
    assert_ne!(zk.session_id(), 0);
    zk.handle(id).release().await.unwrap();
    zk.close().await.unwrap();
}

/// A server that hands out a new session where the device asked to resume
/// its own (ClickHouse Keeper does: ClickHouse#116690) has not resumed it:
/// the lock's node goes when the server expires the old session. The
/// holder learns at the reconnect, a session timeout before the next holder
/// takes over, then goes on on the new session.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embassy_holder_handed_a_new_session_on_reconnect_loses_the_lock_at_once() {
    const SESSION: Duration = Duration::from_secs(6);
    let server = ZkServer::start();
    let proxy = Proxy::start(server.port());
    proxy.forget_sessions();
    let (mut rx, mut tx) = ([0u8; 4096], [0u8; 1024]);
    let mut lock: Lock = Lock::new("/locks/forgotten").unwrap();
    let mut zk: Zk<'_, _> = Zk::new(
        TokioTransport::new(vec![proxy.addr()]),
        Buffers::new(&mut rx, &mut tx),
        SessionConfig::new(1, millis(SESSION)).with_retry_delay_ms(200),
    );
    let id = zk.add(&mut lock).unwrap();
    zk.connect().await.unwrap();
    let first = zk.session_id();
    zk.handle(id).acquire(guid()).await.unwrap();
    let rival = rival_acquires(std_client(&server).await, "/locks/forgotten");

    let cut = Instant::now();
    proxy.reset();
    let outcome = tokio::time::timeout(
        SESSION / 2,
        zk.handle(id)
            .hold_while(tokio::time::sleep(Duration::from_secs(60))),
    )
    .await
    .expect("the holder learns at the reconnect that its lock is gone");
    let lost = Instant::now();
    println!("embassy driver: lost {:?} after the reconnect", lost - cut);
    assert_eq!(outcome, Err(Error::Lost));
    assert_ne!(zk.session_id(), first, "on the session handed out");
    // Driven meanwhile, as a device is, so that the new session lives.
    while !rival.is_finished() {
        assert!(
            cut.elapsed() < SESSION * 3,
            "the old session expires, and the rival acquires"
        );
        zk.run_for(embassy_time::Duration::from_millis(100))
            .await
            .unwrap();
    }
    let acquired = rival.await.unwrap();
    println!(
        "embassy driver: the rival acquired {:?} after the reconnect",
        acquired - cut
    );
    assert!(lost < acquired, "never two holders");
    zk.handle(id).acquire(guid()).await.unwrap();
    zk.handle(id).release().await.unwrap();
    zk.close().await.unwrap();
}

/// The same without renewal: the session handed out is not taken up, and
/// the device's session is over, as after an expiry the server reports.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embassy_handed_a_new_session_without_renewal_ends_its_session() {
    let server = ZkServer::start();
    let proxy = Proxy::start(server.port());
    proxy.forget_sessions();
    let (mut rx, mut tx) = ([0u8; 4096], [0u8; 1024]);
    let mut lock: Lock = Lock::new("/locks/forgotten-final").unwrap();
    let mut zk: Zk<'_, _> = Zk::new(
        TokioTransport::new(vec![proxy.addr()]),
        Buffers::new(&mut rx, &mut tx),
        SessionConfig::new(1, 6_000)
            .with_retry_delay_ms(200)
            .with_renew_after_expiry(false),
    );
    let id = zk.add(&mut lock).unwrap();
    zk.connect().await.unwrap();
    zk.handle(id).acquire(guid()).await.unwrap();
    proxy.reset();
    let outcome = tokio::time::timeout(
        LIMIT,
        zk.handle(id)
            .hold_while(tokio::time::sleep(Duration::from_secs(60))),
    )
    .await
    .expect("the loss is reported");
    assert_eq!(outcome, Err(Error::Lost));
    assert_eq!(zk.state(), State::Expired);
    assert_eq!(
        zk.handle(id).acquire(guid()).await,
        Err(Error::SessionOver(State::Expired))
    );
}

/// The session timeout of the tests that cut a device off past it.
const CUT_SESSION: Duration = Duration::from_secs(2);

/// A driver through `proxy` with a [`CUT_SESSION`] session, renewing it
/// after an expiry or not.
fn cut_off_driver<'a>(
    proxy: &Proxy,
    rx: &'a mut [u8],
    tx: &'a mut [u8],
    renew: bool,
) -> Zk<'a, TokioTransport> {
    Zk::new(
        TokioTransport::new(vec![proxy.addr()]),
        Buffers::new(rx, tx),
        SessionConfig::new(1, millis(CUT_SESSION))
            .with_retry_delay_ms(200)
            .with_renew_after_expiry(renew),
    )
}

/// Cuts `proxy` half a second from now for longer than [`CUT_SESSION`],
/// then restores it.
async fn cut_off_past_the_session(proxy: &Proxy) {
    tokio::time::sleep(Duration::from_millis(500)).await;
    proxy.cut();
    tokio::time::sleep(CUT_SESSION + Duration::from_millis(1_500)).await;
    proxy.restore();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embassy_expiry_is_reported_as_loss() {
    let server = ZkServer::start();
    let proxy = Arc::new(Proxy::start(server.port()));
    let (mut rx, mut tx) = ([0u8; 4096], [0u8; 1024]);
    let mut lock: Lock = Lock::new("/locks/expiry").unwrap();
    let mut jobs: herdless_core::queue::Consumer<4, 64> =
        herdless_core::queue::Consumer::new("/queues/expiry").unwrap();
    let mut zk = cut_off_driver(&proxy, &mut rx, &mut tx, true);
    let id = zk.add(&mut lock).unwrap();
    let queue = zk.add(&mut jobs).unwrap();
    zk.connect().await.unwrap();
    let expired = zk.session_id();
    zk.handle(id).acquire(guid()).await.unwrap();

    let cutter = proxy.clone();
    let cut_for = CUT_SESSION + Duration::from_millis(1_500);
    let cut = tokio::spawn(async move {
        cutter.cut();
        tokio::time::sleep(cut_for).await;
        cutter.restore();
    });
    let started = Instant::now();
    let outcome = tokio::time::timeout(
        Duration::from_secs(20),
        zk.handle(id)
            .hold_while(tokio::time::sleep(Duration::from_secs(60))),
    )
    .await
    .expect("the loss is reported");
    println!(
        "embassy driver: 2 s session cut off, loss reported after {:?}",
        started.elapsed()
    );
    assert_eq!(outcome, Err(Error::Lost));
    assert!(!zk.handle(id).is_held());
    cut.await.unwrap();

    // Work asked for right after the loss, before the driver has opened
    // the next session, waits for that session (it once failed at once
    // with `SessionEnded`/`NoSession`, and a loop retrying it never drove
    // the driver to open one).
    let peeked = tokio::time::timeout(Duration::from_secs(10), zk.handle(queue).peek())
        .await
        .expect("the peek is answered on the next session");
    assert_eq!(peeked.map(|item| item.is_none()), Ok(true));
    assert_ne!(zk.session_id(), expired, "a new session");
    zk.handle(id).acquire(guid()).await.unwrap();
    zk.handle(id).release().await.unwrap();
    zk.close().await.unwrap();
}

/// A holder not driven for longer than its session (the application busy
/// elsewhere) has lost its lock on the server, which a herdless-std
/// contender now holds: `hold_while` must not start the work. It did, in
/// the millisecond the holder woke (5 runs of 5 for a tester): the overdue
/// read timeout only put the lock in doubt, and `Lost` came after the
/// reconnect, with the work already running beside the other holder.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embassy_holder_woken_after_its_session_expired_does_not_start_work() {
    let server = ZkServer::start();
    let (mut rx, mut tx) = ([0u8; 4096], [0u8; 1024]);
    let mut lock: Lock = Lock::new("/locks/paused").unwrap();
    let mut zk = driver(server.addr(), &mut rx, &mut tx, 4_000);
    let id = zk.add(&mut lock).unwrap();
    zk.connect().await.unwrap();
    zk.handle(id).acquire(guid()).await.unwrap();

    let other = std_client(&server).await;
    let rival = herdless_std::Lock::new(&other, "/locks/paused").unwrap();
    let taken = tokio::spawn(async move { rival.acquire().await });
    // Not driven: no pings, and the server expires the session.
    let taken = tokio::time::timeout(Duration::from_secs(20), taken)
        .await
        .expect("the rival acquires once the paused session expired")
        .unwrap()
        .unwrap();
    let started = Arc::new(AtomicBool::new(false));
    let flag = started.clone();
    let outcome = tokio::time::timeout(
        Duration::from_secs(20),
        zk.handle(id).hold_while(async move {
            flag.store(true, Ordering::SeqCst);
            tokio::time::sleep(Duration::from_secs(60)).await;
        }),
    )
    .await
    .expect("the loss is reported");
    assert_eq!(outcome, Err(Error::Lost));
    assert!(
        !started.load(Ordering::SeqCst),
        "work began beside the rival"
    );
    assert!(taken.is_held());
    taken.release().await.unwrap();
}

/// A receive buffer too small for the create's answer (the node's path):
/// the create was applied, so the attempt finds its node by GUID and
/// deletes it before it fails with `ReplyTooLarge`; the session carries
/// on. It failed at once and left the node behind, ahead of every other
/// contender for as long as the session lived (6 of 6 for a tester).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embassy_lock_whose_create_answer_does_not_fit_leaves_no_node() {
    const DIR: &str = "/locks/a-directory-with-a-rather-long-name";
    let server = ZkServer::start();
    let other = std_client(&server).await;
    let (mut rx, mut tx) = ([0u8; 100], [0u8; 1024]);
    let mut lock: Lock = Lock::new(DIR).unwrap();
    let mut zk = driver(server.addr(), &mut rx, &mut tx, 10_000);
    let id = zk.add(&mut lock).unwrap();
    zk.connect().await.unwrap();
    let session = zk.session_id();
    for _ in 0..3 {
        let outcome = zk.handle(id).acquire(guid()).await;
        assert_eq!(
            outcome,
            Err(Error::Recipe(herdless_core::Error::Zk(
                herdless_core::ZkError::ReplyTooLarge
            )))
        );
        assert!(
            other.list_children(DIR).await.unwrap().is_empty(),
            "no node left"
        );
    }
    assert_eq!(zk.session_id(), session, "the same session");
    assert_eq!(zk.faults(), 0, "no connection dropped");
    zk.close().await.unwrap();
}

/// A waiter cut off past its session fails with `SessionEnded` (its node
/// went with the session; it once failed with `Zk(SessionExpired)`). With
/// renewal (the default) the driver opens the next session by itself, and
/// the next attempt queues there and acquires when the std holder
/// releases, leaving no node of the first attempt behind; without it, the
/// next attempt fails with `SessionOver(Expired)`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embassy_waiter_cut_off_past_its_session_fails_and_acquires_on_the_next() {
    for renew in [true, false] {
        waiter_cut_off_past_its_session(renew).await;
    }
}

async fn waiter_cut_off_past_its_session(renew: bool) {
    let server = ZkServer::start();
    let client = std_client(&server).await;
    let std_lock = herdless_std::Lock::new(&client, "/locks/waiter").unwrap();
    let held = std_lock.acquire().await.unwrap();
    let proxy = Proxy::start(server.port());
    let (mut rx, mut tx) = ([0u8; 4096], [0u8; 1024]);
    let mut lock: Lock = Lock::new("/locks/waiter").unwrap();
    let mut zk = cut_off_driver(&proxy, &mut rx, &mut tx, renew);
    let id = zk.add(&mut lock).unwrap();
    zk.connect().await.unwrap();
    let first = zk.session_id();

    let cut_off = cut_off_past_the_session(&proxy);
    let mut waiter = zk.handle(id);
    let (waited, ()) = tokio::join!(tokio::time::timeout(LIMIT, waiter.acquire(guid())), cut_off);
    assert_eq!(
        waited.expect("the waiter hears its session ended"),
        Err(Error::Recipe(herdless_core::Error::SessionEnded)),
        "renew: {renew}"
    );

    let release_later = async {
        tokio::time::sleep(Duration::from_millis(300)).await;
        held.release().await.unwrap();
    };
    let mut waiter = zk.handle(id);
    let (again, ()) = tokio::join!(
        tokio::time::timeout(LIMIT, waiter.acquire(guid())),
        release_later
    );
    let again = again.expect("the second attempt is answered");
    if !renew {
        assert_eq!(again, Err(Error::SessionOver(State::Expired)));
        return;
    }
    again.expect("the second attempt acquires");
    assert_ne!(zk.session_id(), first, "on the next session");
    let nodes = client.list_children("/locks/waiter").await.unwrap();
    assert_eq!(nodes.len(), 1, "only the holder's node: {nodes:?}");
    zk.handle(id).release().await.unwrap();
    zk.close().await.unwrap();
}

/// The same for a candidate behind a std leader: cut off past its
/// session, the campaign fails with `SessionEnded`; with renewal the next
/// campaign runs on the new session and leads when the std leader
/// resigns; without it, it fails with `SessionOver(Expired)`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embassy_candidate_cut_off_past_its_session_fails_and_leads_on_the_next() {
    for renew in [true, false] {
        candidate_cut_off_past_its_session(renew).await;
    }
}

async fn candidate_cut_off_past_its_session(renew: bool) {
    use herdless_core::election::Election;
    let server = ZkServer::start();
    let client = std_client(&server).await;
    let std_candidate = herdless_std::Election::new(&client, "/plant/cut-off").unwrap();
    let service = std_candidate.campaign().await.unwrap();
    let proxy = Proxy::start(server.port());
    let (mut rx, mut tx) = ([0u8; 4096], [0u8; 1024]);
    let mut election: Election = Election::new("/plant/cut-off").unwrap();
    let mut zk = cut_off_driver(&proxy, &mut rx, &mut tx, renew);
    let id = zk.add(&mut election).unwrap();
    zk.connect().await.unwrap();
    let first = zk.session_id();

    let cut_off = cut_off_past_the_session(&proxy);
    let mut candidate = zk.handle(id);
    let (campaigned, ()) = tokio::join!(
        tokio::time::timeout(LIMIT, candidate.campaign(guid(), b"device")),
        cut_off
    );
    assert_eq!(
        campaigned.expect("the candidate hears its session ended"),
        Err(Error::Recipe(herdless_core::Error::SessionEnded)),
        "renew: {renew}"
    );

    let resign_later = async {
        tokio::time::sleep(Duration::from_millis(300)).await;
        service.resign().await.unwrap();
    };
    let mut candidate = zk.handle(id);
    let (again, ()) = tokio::join!(
        tokio::time::timeout(LIMIT, candidate.campaign(guid(), b"device")),
        resign_later
    );
    let again = again.expect("the second campaign is answered");
    if !renew {
        assert_eq!(again, Err(Error::SessionOver(State::Expired)));
        return;
    }
    again.expect("the second campaign leads");
    assert_ne!(zk.session_id(), first, "on the next session");
    let nodes = client.list_children("/plant/cut-off").await.unwrap();
    assert_eq!(
        nodes.iter().filter(|n| n.as_str() != "leader").count(),
        1,
        "only the leader's node: {nodes:?}"
    );
    zk.handle(id).resign().await.unwrap();
    zk.close().await.unwrap();
}

/// A server that answers the first connection with `reply` (then closes it
/// if `close` is set), and every later one by closing it.
fn bad_server(reply: Vec<u8>, close: bool) -> String {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    std::thread::spawn(move || {
        let mut first = true;
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            if !std::mem::take(&mut first) {
                continue;
            }
            let mut request = [0u8; 64];
            let _ = stream.read(&mut request);
            let _ = stream.write_all(&reply);
            if close {
                drop(stream);
            } else {
                std::thread::sleep(Duration::from_secs(30));
            }
        }
    });
    addr
}

/// Connects a driver to `[bad, real]` and checks it recovers on the real
/// server after the fault `expected` accepts.
async fn recovers_from(reply: Vec<u8>, close: bool, expected: fn(Fault) -> bool) {
    let server = ZkServer::start();
    let bad = bad_server(reply, close);
    let (mut rx, mut tx) = ([0u8; 2048], [0u8; 512]);
    let mut lock: Lock = Lock::new("/locks/after-garbage").unwrap();
    let transport = TokioTransport::new(vec![bad, server.addr()]);
    let mut zk: Zk<'_, _> = Zk::new(
        transport,
        Buffers::new(&mut rx, &mut tx),
        SessionConfig::new(2, 10_000),
    );
    let id = zk.add(&mut lock).unwrap();
    tokio::time::timeout(Duration::from_secs(20), zk.connect())
        .await
        .expect("connected to the good server")
        .unwrap();
    let fault = zk.last_fault().expect("the bad server caused a fault");
    assert!(expected(fault), "unexpected fault {fault:?}");
    assert!(matches!(zk.state(), State::Connected { .. }));
    zk.handle(id).acquire(guid()).await.unwrap();
    zk.handle(id).release().await.unwrap();
    zk.close().await.unwrap();
}

fn frame(payload: &[u8]) -> Vec<u8> {
    let mut out = u32::try_from(payload.len()).unwrap().to_be_bytes().to_vec();
    out.extend_from_slice(payload);
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embassy_recovers_from_a_garbage_frame() {
    let garbage: Vec<u8> = (0..16u8).map(|i| i.wrapping_mul(37) | 0x80).collect();
    recovers_from(frame(&garbage), false, |f| {
        matches!(f, Fault::Session(SessionError::Decode(_)))
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embassy_recovers_from_a_truncated_frame_and_a_close_mid_frame() {
    let mut reply = 100u32.to_be_bytes().to_vec();
    reply.extend_from_slice(&[0u8; 10]);
    recovers_from(reply, true, |f| f == Fault::ClosedByServer).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embassy_recovers_from_an_oversize_and_a_negative_length() {
    recovers_from(0x7fff_ff00u32.to_be_bytes().to_vec(), false, |f| {
        matches!(f, Fault::Frame(_))
    })
    .await;
    recovers_from((-5i32).to_be_bytes().to_vec(), false, |f| {
        matches!(f, Fault::Frame(_))
    })
    .await;
}

/// A connection the driver gives up on is closed at once, not left open
/// until the next attempt replaces it: on a microcontroller sockets are
/// few, and a server counts open connections per client
/// (`maxClientCnxns`). Here the only server answers the handshake with
/// garbage, so the session pauses for its retry delay (3 s) before trying
/// again; the bad server times how long its connection stays open.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embassy_closes_a_connection_it_gives_up_at_once() {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let (open_for, measured) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let Ok((mut stream, _)) = listener.accept() else {
            return;
        };
        let mut request = [0u8; 64];
        let _ = stream.read(&mut request);
        let garbage: Vec<u8> = (0..16u8).map(|i| i.wrapping_mul(37) | 0x80).collect();
        let _ = stream.write_all(&frame(&garbage));
        let sent = Instant::now();
        let mut rest = [0u8; 64];
        // Until the driver closes its end (or 10 s).
        let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
        while matches!(stream.read(&mut rest), Ok(n) if n > 0) {}
        let _ = open_for.send(sent.elapsed());
    });
    let (mut rx, mut tx) = ([0u8; 512], [0u8; 512]);
    let mut zk: Zk<'_, _> = Zk::new(
        TokioTransport::new(vec![addr]),
        Buffers::new(&mut rx, &mut tx),
        SessionConfig::new(1, 10_000).with_retry_delay_ms(3_000),
    );
    let attempt = tokio::time::timeout(Duration::from_millis(2_000), zk.connect()).await;
    assert!(attempt.is_err(), "nothing to connect to");
    assert!(zk.last_fault().is_some(), "the garbage was a fault");
    let open_for =
        tokio::task::spawn_blocking(move || measured.recv_timeout(Duration::from_secs(15)))
            .await
            .unwrap()
            .expect("the bad server measured its connection");
    println!("embassy driver: a connection given up on was open {open_for:?} after the garbage");
    assert!(
        open_for < Duration::from_millis(1_000),
        "the connection stayed open {open_for:?}, until the next attempt"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embassy_candidate_takes_over_from_a_herdless_std_leader_and_doubts_at_once() {
    use herdless_core::election::Election;
    let server = ZkServer::start();
    let client = std_client(&server).await;
    let std_candidate = herdless_std::Election::new(&client, "/plant/gateway")
        .unwrap()
        .with_data(b"service")
        .unwrap();
    let service = std_candidate.campaign().await.unwrap();

    let proxy = Proxy::start(server.port());
    let (mut rx, mut tx) = ([0u8; 4096], [0u8; 1024]);
    let mut election: Election = Election::new("/plant/gateway").unwrap();
    let transport = TokioTransport::new(vec![proxy.addr()]);
    let mut zk: Zk<'_, _> = Zk::new(
        transport,
        Buffers::new(&mut rx, &mut tx),
        SessionConfig::new(1, 6_000).with_retry_delay_ms(200),
    );
    let id = zk.add(&mut election).unwrap();
    zk.connect().await.unwrap();
    let session = zk.session_id();

    // The device waits behind the service, then leads when it resigns.
    let waiting = zk
        .handle(id)
        .campaign_timeout(guid(), b"device", embassy_time::Duration::from_millis(300))
        .await
        .unwrap();
    assert!(!waiting, "led while the service still did");
    let resign = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        service.resign().await.unwrap();
    });
    let leads = zk
        .handle(id)
        .campaign_timeout(guid(), b"device", embassy_time::Duration::from_secs(10))
        .await
        .unwrap();
    assert!(leads, "leads within its timeout once the service resigned");
    resign.await.unwrap();
    // `Leading` is reported as the acknowledgement is written, not once it
    // is answered: other sessions see it a round trip later.
    let mut named = None;
    for _ in 0..500 {
        named = herdless_std::election::current_leader(&client, "/plant/gateway")
            .await
            .unwrap()
            .map(|leader| leader.data);
        if named.as_deref() == Some(b"device".as_slice()) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(named.as_deref(), Some(b"device".as_slice()));

    // A cut connection is doubt at once, not at expiry; the same session
    // coming back confirms leadership again.
    let cutter = Arc::new(proxy);
    let cut = cutter.clone();
    let started = Instant::now();
    let cutting = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        cut.cut();
        tokio::time::sleep(Duration::from_millis(1_000)).await;
        cut.restore();
    });
    let outcome = zk
        .handle(id)
        .lead_while(tokio::time::sleep(Duration::from_secs(30)))
        .await;
    let doubt_after = started.elapsed();
    assert_eq!(outcome, Err(Error::Suspended));
    zk.handle(id).resumed().await.unwrap();
    println!(
        "embassy candidate: in doubt {:?} after the cut began (100 ms in), leading again {:?} after",
        doubt_after,
        started.elapsed()
    );
    cutting.await.unwrap();
    assert_eq!(zk.session_id(), session);
    assert!(zk.handle(id).is_leading());
    zk.handle(id).resign().await.unwrap();
    let left = client.list_children("/plant/gateway").await.unwrap();
    assert!(left.is_empty(), "nodes left: {left:?}");
    zk.close().await.unwrap();
}

/// A timeout shorter than a round trip still takes a free lock and leads
/// a vacant election on the embedded driver: the listing that follows the
/// create decides, as in Curator and Kazoo.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embassy_zero_timeouts_take_a_free_lock_and_lead_a_vacant_election() {
    use herdless_core::election::Election;
    let server = ZkServer::start();
    let client = std_client(&server).await;
    let (mut rx, mut tx) = ([0u8; 4096], [0u8; 1024]);
    let mut lock: Lock = Lock::new("/plant/zero/lock").unwrap();
    let mut election: Election = Election::new("/plant/zero/gateway").unwrap();
    let transport = TokioTransport::new(vec![server.addr()]);
    let mut zk: Zk<'_, _> = Zk::new(
        transport,
        Buffers::new(&mut rx, &mut tx),
        SessionConfig::new(1, 10_000),
    );
    let lock_id = zk.add(&mut lock).unwrap();
    let election_id = zk.add(&mut election).unwrap();
    zk.connect().await.unwrap();
    let zero = embassy_time::Duration::from_ticks(0);
    for _ in 0..3 {
        assert!(zk
            .handle(lock_id)
            .acquire_timeout(guid(), zero)
            .await
            .unwrap());
        zk.handle(lock_id).release().await.unwrap();
    }
    assert!(zk
        .handle(election_id)
        .campaign_timeout(guid(), b"device", zero)
        .await
        .unwrap());
    zk.handle(election_id).resign().await.unwrap();

    // Held elsewhere: given up, with no node left behind.
    let guard = herdless_std::Lock::new(&client, "/plant/zero/lock")
        .unwrap()
        .acquire()
        .await
        .unwrap();
    assert!(!zk
        .handle(lock_id)
        .acquire_timeout(guid(), zero)
        .await
        .unwrap());
    assert_eq!(
        client
            .list_children("/plant/zero/lock")
            .await
            .unwrap()
            .len(),
        1
    );
    guard.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embassy_reader_shares_with_std_readers_and_excludes_std_writers() {
    let server = ZkServer::start();
    let client = std_client(&server).await;
    let rw = herdless_std::ReadWriteLock::new(&client, "/plant/recipe-book").unwrap();
    let writer = rw.write().acquire().await.unwrap();

    let (mut rx, mut tx) = ([0u8; 4096], [0u8; 1024]);
    let mut reader: Lock = Lock::reader("/plant/recipe-book").unwrap();
    let transport = TokioTransport::new(vec![server.addr()]);
    let mut zk: Zk<'_, _> = Zk::new(
        transport,
        Buffers::new(&mut rx, &mut tx),
        SessionConfig::new(1, 10_000),
    );
    let id = zk.add(&mut reader).unwrap();
    zk.connect().await.unwrap();
    let held = zk
        .handle(id)
        .acquire_timeout(guid(), embassy_time::Duration::from_millis(300))
        .await
        .unwrap();
    assert!(!held, "a reader got in beside a writer");

    let release_writer = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        writer.release().await.unwrap();
    });
    let held = zk
        .handle(id)
        .acquire_timeout(guid(), embassy_time::Duration::from_secs(10))
        .await
        .unwrap();
    assert!(
        held,
        "the reader gets in within its timeout once the writer left"
    );
    release_writer.await.unwrap();
    // Another reader shares at once; a writer waits for the device.
    let other = rw
        .read()
        .try_acquire()
        .await
        .unwrap()
        .expect("readers share");
    let rw2 = rw.clone();
    let writer_in = Arc::new(AtomicBool::new(false));
    let flag = writer_in.clone();
    let waiting_writer = tokio::spawn(async move {
        let guard = rw2.write().acquire().await.unwrap();
        flag.store(true, Ordering::SeqCst);
        guard.release().await.unwrap();
    });
    other.release().await.unwrap();
    zk.run_for(embassy_time::Duration::from_millis(300))
        .await
        .unwrap();
    assert!(
        !writer_in.load(Ordering::SeqCst),
        "the writer got in while the device read"
    );
    zk.handle(id).release().await.unwrap();
    tokio::time::timeout(Duration::from_secs(10), waiting_writer)
        .await
        .expect("the writer gets in once the device released")
        .unwrap();
    zk.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embassy_holder_hears_revocation_consents_and_can_be_forced() {
    let server = ZkServer::start();
    let client = std_client(&server).await;
    let (mut rx, mut tx) = ([0u8; 4096], [0u8; 1024]);
    let mut lock: Lock = Lock::new("/plant/locks/press").unwrap().revocable();
    let transport = TokioTransport::new(vec![server.addr()]);
    let mut zk: Zk<'_, _> = Zk::new(
        transport,
        Buffers::new(&mut rx, &mut tx),
        SessionConfig::new(1, 10_000),
    );
    let id = zk.add(&mut lock).unwrap();
    zk.connect().await.unwrap();

    // Consent: the holder stops its work and releases.
    zk.handle(id).acquire(guid()).await.unwrap();
    let node: heapless::String<128> = zk.handle(id).node_path().expect("a node");
    let requester = client.clone();
    let path = node.to_string();
    let asked = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        herdless_std::revoke(&requester, &path).await.unwrap()
    });
    let outcome = zk
        .handle(id)
        .hold_while(tokio::time::sleep(Duration::from_secs(30)))
        .await;
    assert_eq!(outcome, Err(Error::RevocationRequested));
    zk.handle(id).release().await.unwrap();
    println!(
        "revocation asked of the embassy holder: {:?}",
        asked.await.unwrap()
    );

    // Forced: the holder never consents and is told it lost the lock.
    zk.handle(id).acquire(guid()).await.unwrap();
    let node: heapless::String<128> = zk.handle(id).node_path().expect("a node");
    let requester = client.clone();
    let path = node.to_string();
    let forced = tokio::spawn(async move {
        herdless_std::revoke_forced(&requester, &path, Duration::from_millis(300))
            .await
            .unwrap()
    });
    let mut seen = Vec::new();
    while seen.last() != Some(&LockEvent::Lost) {
        let event = tokio::time::timeout(Duration::from_secs(10), zk.handle(id).next_event())
            .await
            .expect("the forced revocation arrives")
            .unwrap();
        seen.push(event);
    }
    assert!(seen.contains(&LockEvent::RevocationRequested), "{seen:?}");
    assert!(!zk.handle(id).is_held());
    println!(
        "forced revocation of a holder that never consents: {:?}",
        forced.await.unwrap()
    );
    assert!(client
        .list_children("/plant/locks/press")
        .await
        .unwrap()
        .is_empty());
    zk.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embassy_frames_cut_by_a_dropped_call_are_finished_not_interleaved() {
    let server = ZkServer::start();
    let (mut rx, mut tx) = ([0u8; 4096], [0u8; 1024]);
    let mut lock: Lock = Lock::new("/locks/trickle").unwrap();
    let mut transport = TokioTransport::new(vec![server.addr()]);
    transport.trickle = true;
    let mut zk: Zk<'_, _> = Zk::new(
        transport,
        Buffers::new(&mut rx, &mut tx),
        SessionConfig::new(1, 10_000),
    );
    let id = zk.add(&mut lock).unwrap();
    zk.connect().await.unwrap();
    let faults = zk.faults();
    let mut cut_calls = 0;
    for _ in 0..5 {
        // Every request takes about a millisecond per byte to write, and
        // each driver call lasts 3 ms: almost every frame is cut by the
        // end of a call and must be finished by the next one.
        zk.recipe(id).unwrap().acquire(guid()).unwrap();
        loop {
            zk.run_for(embassy_time::Duration::from_millis(3))
                .await
                .unwrap();
            cut_calls += 1;
            match zk.handle(id).poll_event().unwrap() {
                Some(LockEvent::Acquired) => break,
                Some(other) => panic!("unexpected {other:?}"),
                None => {}
            }
        }
        zk.recipe(id).unwrap().release().unwrap();
        loop {
            zk.run_for(embassy_time::Duration::from_millis(3))
                .await
                .unwrap();
            cut_calls += 1;
            if zk.handle(id).poll_event().unwrap() == Some(LockEvent::Released) {
                break;
            }
        }
    }
    println!("5 acquire/release rounds over {cut_calls} driver calls of 3 ms, 1 byte/ms writes");
    assert_eq!(
        zk.faults(),
        faults,
        "the server saw a corrupt stream: {:?}",
        zk.last_fault()
    );
    zk.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embassy_a_connect_cut_short_by_a_dropped_call_is_opened_again() {
    let server = ZkServer::start();
    let proxy = Proxy::start(server.port());
    let (mut rx, mut tx) = ([0u8; 4096], [0u8; 1024]);
    let mut lock: Lock = Lock::new("/locks/slow-connect").unwrap();
    let mut transport = TokioTransport::new(vec![proxy.addr()]);
    transport.connect_delay = Duration::from_millis(100);
    let mut zk: Zk<'_, _> = Zk::new(
        transport,
        Buffers::new(&mut rx, &mut tx),
        SessionConfig::new(1, 6_000).with_retry_delay_ms(50),
    );
    let id = zk.add(&mut lock).unwrap();
    zk.connect().await.unwrap();
    zk.handle(id).acquire(guid()).await.unwrap();

    proxy.cut();
    zk.run_for(embassy_time::Duration::from_millis(300))
        .await
        .unwrap();
    proxy.restore();
    // Calls of 30 ms end in the middle of 100 ms connects: the session must
    // not wait (for its 6 s connect timeout) for an outcome never told.
    for _ in 0..10 {
        zk.run_for(embassy_time::Duration::from_millis(30))
            .await
            .unwrap();
    }
    let restored = Instant::now();
    loop {
        let event = tokio::time::timeout(Duration::from_secs(3), zk.handle(id).next_event())
            .await
            .expect("resumed well before the 6 s connect timeout")
            .unwrap();
        assert_ne!(event, LockEvent::Lost);
        if event == LockEvent::Resumed {
            break;
        }
    }
    println!(
        "a connect cut short was opened again: resumed {:?} after the short calls",
        restored.elapsed()
    );
    zk.handle(id).release().await.unwrap();
    zk.close().await.unwrap();
}

/// A server that refuses the connection is a fault the driver records,
/// and the session goes on to the next server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embassy_a_refused_connect_is_recorded_and_the_next_server_tried() {
    let server = ZkServer::start();
    // A loopback port nobody listens on any more: connecting is refused.
    let refusing = {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        format!("127.0.0.1:{}", listener.local_addr().unwrap().port())
    };
    let (mut rx, mut tx) = ([0u8; 4096], [0u8; 1024]);
    let mut zk: Zk<'_, _> = Zk::new(
        TokioTransport::new(vec![refusing, server.addr()]),
        Buffers::new(&mut rx, &mut tx),
        SessionConfig::new(2, 10_000),
    );
    tokio::time::timeout(LIMIT, zk.connect())
        .await
        .expect("connected through the second server")
        .unwrap();
    assert_eq!(zk.faults(), 1, "{:?}", zk.last_fault());
    assert!(
        matches!(zk.last_fault(), Some(Fault::Connect(_))),
        "{:?}",
        zk.last_fault()
    );
    zk.close().await.unwrap();
}

/// What the driver says of itself and of its recipe table: the timeout
/// the server granted, a full table, ids from another driver, and how an
/// id prints.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embassy_driver_reports_its_timeout_and_guards_its_recipe_table() {
    use herdless_core::election::Election;

    let server = ZkServer::start();
    let (mut rx, mut tx) = ([0u8; 1024], [0u8; 512]);
    let mut lock: Lock = Lock::new("/table/lock").unwrap();
    let mut spare: Lock = Lock::new("/table/spare").unwrap();
    let mut zk: Zk<'_, _, 1> = Zk::new(
        TokioTransport::new(vec![server.addr()]),
        Buffers::new(&mut rx, &mut tx),
        // Within the test server's bounds (1 s to 60 s): granted as asked.
        SessionConfig::new(1, 7_000),
    );
    assert_eq!(zk.negotiated_timeout_ms(), 0, "nothing granted yet");
    let id = zk.add(&mut lock).unwrap();
    assert_eq!(format!("{id:?}"), "RecipeId(0)");
    let full = zk.add(&mut spare).unwrap_err();
    assert!(matches!(full, Error::TooManyRecipes));
    assert_eq!(full.to_string(), "the driver's recipe table is full");

    // Ids handed out by another driver: an index this one does not have,
    // and its own index 0 holding another kind of recipe.
    let (mut rx2, mut tx2) = ([0u8; 256], [0u8; 256]);
    let mut candidate: Election = Election::new("/table/election").unwrap();
    let mut other_lock: Lock = Lock::new("/table/other").unwrap();
    let mut other: Zk<'_, _, 2> = Zk::new(
        TokioTransport::new(vec![server.addr()]),
        Buffers::new(&mut rx2, &mut tx2),
        SessionConfig::new(2, 7_000),
    );
    let election_id = other.add(&mut candidate).unwrap();
    let second_lock = other.add(&mut other_lock).unwrap();
    assert_eq!(format!("{second_lock:?}"), "RecipeId(1)");
    assert!(matches!(zk.recipe(election_id), Err(Error::UnknownRecipe)));
    assert!(matches!(zk.recipe(second_lock), Err(Error::UnknownRecipe)));
    assert!(zk.recipe(id).is_ok());

    zk.connect().await.unwrap();
    assert_eq!(zk.negotiated_timeout_ms(), 7_000);
    zk.close().await.unwrap();
}

/// A recipe called before the session is connected waits for the
/// handshake: its request is not handed to a connection still opening
/// (the session would refuse it, and the recipe hear a connection loss).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embassy_lock_asked_for_before_connect_waits_for_the_handshake() {
    let server = ZkServer::start();
    let (mut rx, mut tx) = ([0u8; 1024], [0u8; 512]);
    let mut lock: Lock = Lock::new("/early/lock").unwrap();
    let mut zk = driver(server.addr(), &mut rx, &mut tx, 10_000);
    let id = zk.add(&mut lock).unwrap();
    tokio::time::timeout(Duration::from_secs(10), zk.handle(id).acquire(guid()))
        .await
        .expect("acquired without a connect() first")
        .unwrap();
    assert_eq!(zk.faults(), 0, "{:?}", zk.last_fault());
    zk.handle(id).release().await.unwrap();
    zk.close().await.unwrap();
}

/// An idle driver sleeps until bytes or its next timer (the session's
/// ping): it does not spin through reads started and dropped.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embassy_driver_waits_rather_than_polls_while_idle() {
    let server = ZkServer::start();
    let (mut rx, mut tx) = ([0u8; 1024], [0u8; 512]);
    // A recipe with no timer due: its timers are asked for too.
    let mut lock: Lock = Lock::new("/idle/lock").unwrap();
    // Pings every few seconds: none due in the second watched.
    let mut zk = driver(server.addr(), &mut rx, &mut tx, 20_000);
    zk.add(&mut lock).unwrap();
    zk.connect().await.unwrap();
    let before = zk.transport().reads;
    zk.run_for(embassy_time::Duration::from_secs(1))
        .await
        .unwrap();
    let reads = zk.transport().reads - before;
    assert!(reads <= 5, "{reads} reads started in an idle second");
    zk.close().await.unwrap();
    // The connection goes with the session, not only its requests.
    assert!(!zk.transport().is_open(), "the connection outlived close()");
}

/// A recipe of the user's whose timer stays due after it fired: it breaks
/// the `Recipe::poll_timeout` contract. Unstuck after a million firings,
/// so that a driver which loops on it ends and fails the test rather than
/// hanging it.
#[derive(Default)]
struct StuckTimer {
    fired: u64,
}

impl herdless_core::Recipe for StuckTimer {
    type Event = ();

    fn poll_request(&mut self) -> Option<herdless_core::Outgoing<'_>> {
        None
    }

    fn handle_reply(
        &mut self,
        _: herdless_core::Instant,
        _: herdless_core::RequestId,
        _: herdless_core::Reply<'_>,
    ) {
    }

    fn handle_watch(&mut self, _: herdless_core::Instant, _: herdless_core::WatchEvent<'_>) {}

    fn handle_session(&mut self, _: herdless_core::Instant, _: herdless_core::SessionEvent) {}

    fn handle_timeout(&mut self, _: herdless_core::Instant) {
        self.fired += 1;
    }

    fn poll_timeout(&self) -> Option<herdless_core::Instant> {
        (self.fired < 1_000_000).then_some(herdless_core::Instant::ZERO)
    }

    fn poll_event(&mut self) -> Option<()> {
        None
    }
}

/// The driver wakes such a recipe at most once a millisecond instead of
/// looping on it without yielding, which on a microcontroller would starve
/// the network stack; the lock beside it is acquired meanwhile.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embassy_driver_paces_a_recipe_whose_timer_stays_due() {
    let server = ZkServer::start();
    let (mut rx, mut tx) = ([0u8; 1024], [0u8; 512]);
    let mut stuck = StuckTimer::default();
    let mut lock: Lock = Lock::new("/paced/lock").unwrap();
    let mut zk = driver(server.addr(), &mut rx, &mut tx, 10_000);
    let stuck_id = zk.add(&mut stuck).unwrap();
    let lock_id = zk.add(&mut lock).unwrap();
    let start = Instant::now();
    zk.connect().await.unwrap();
    tokio::time::timeout(LIMIT, zk.handle(lock_id).acquire(guid()))
        .await
        .expect("acquired beside a recipe whose timer stays due")
        .unwrap();
    zk.run_for(embassy_time::Duration::from_millis(500))
        .await
        .unwrap();
    let fired = zk.recipe(stuck_id).unwrap().fired;
    let elapsed = u64::try_from(start.elapsed().as_millis()).unwrap();
    // Woken by its timer once per millisecond at most, and the first at
    // once. Bytes read also fire the timers due, as any input does, even
    // in a millisecond whose timers already fired: a read landing in one
    // such millisecond made this fail (528 firings in 525 ms). A driver
    // that loops on the timer fires it far more often than reads complete
    // (a read cut short by a timer brings nothing).
    let reads = u64::try_from(zk.transport().reads_done).unwrap();
    assert!(
        fired <= elapsed + 2 + reads,
        "{fired} firings in {elapsed} ms and {reads} reads"
    );
    assert!(fired >= 10, "woken only {fired} times in {elapsed} ms");
    zk.handle(lock_id).release().await.unwrap();
    zk.close().await.unwrap();
}

/// Runs the driver until the candidate is out of the election.
async fn until_idle(
    zk: &mut Zk<'_, TokioTransport>,
    id: herdless_embassy::RecipeId<herdless_core::election::Election>,
) {
    use herdless_core::election::ElectionState;
    drive_until(zk, "still in the election", LIMIT, |zk| {
        zk.recipe(id).unwrap().state() == ElectionState::Idle
    })
    .await;
}

/// Leads while 30 s of work run, failing after 10 s: what stopped it.
async fn lead_while_working(
    zk: &mut Zk<'_, TokioTransport>,
    id: herdless_embassy::RecipeId<herdless_core::election::Election>,
) -> Result<(), Error> {
    let work = tokio::time::sleep(Duration::from_secs(30));
    tokio::time::timeout(Duration::from_secs(10), zk.handle(id).lead_while(work))
        .await
        .expect("the work goes on: no loss or doubt heard")
}

/// A leader hears that its leadership is gone wherever it waits: working
/// (its node deleted by someone else), waiting to resume after a cut (the
/// node deleted meanwhile), and resigning while cut off for longer than
/// it may lead in doubt.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embassy_leader_hears_its_loss_while_working_resuming_and_resigning() {
    use herdless_core::election::Election;
    let server = ZkServer::start();
    let admin = std_client(&server).await;
    let proxy = Proxy::start(server.port());
    let (mut rx, mut tx) = ([0u8; 1024], [0u8; 512]);
    let mut election: Election = Election::new("/plant/lost").unwrap();
    let mut zk: Zk<'_, _> = Zk::new(
        TokioTransport::new(vec![proxy.addr()]),
        Buffers::new(&mut rx, &mut tx),
        SessionConfig::new(1, 6_000).with_retry_delay_ms(200),
    );
    let id = zk.add(&mut election).unwrap();
    zk.connect().await.unwrap();
    let campaign = embassy_time::Duration::from_secs(5);

    // Working.
    assert!(zk
        .handle(id)
        .campaign_timeout(guid(), b"d", campaign)
        .await
        .unwrap());
    let own = zk.recipe(id).unwrap().own_path().unwrap().to_owned();
    admin.delete(&own, None).await.unwrap();
    let working = lead_while_working(&mut zk, id).await;
    assert_eq!(working, Err(Error::Lost));
    until_idle(&mut zk, id).await;

    // Waiting to resume.
    assert!(zk
        .handle(id)
        .campaign_timeout(guid(), b"d", campaign)
        .await
        .unwrap());
    let own = zk.recipe(id).unwrap().own_path().unwrap().to_owned();
    proxy.cut();
    let working = lead_while_working(&mut zk, id).await;
    assert_eq!(working, Err(Error::Suspended));
    admin.delete(&own, None).await.unwrap();
    proxy.restore();
    let resumed = tokio::time::timeout(LIMIT, zk.handle(id).resumed())
        .await
        .expect("resumed() answers");
    assert_eq!(resumed, Err(Error::Lost));
    until_idle(&mut zk, id).await;

    // Resigning, cut off.
    assert!(zk
        .handle(id)
        .campaign_timeout(guid(), b"d", campaign)
        .await
        .unwrap());
    zk.recipe(id).unwrap().set_lost_after(Some(500));
    proxy.cut();
    let working = lead_while_working(&mut zk, id).await;
    assert_eq!(working, Err(Error::Suspended));
    tokio::time::timeout(LIMIT, zk.handle(id).resign())
        .await
        .expect("resign() answers once the doubt outlasts lost_after")
        .unwrap();
    proxy.restore();
    until_idle(&mut zk, id).await;
    zk.close().await.unwrap();
}

/// Campaigning or acquiring again at once after a loss (the node deleted
/// by someone else) waits for the last round's cleanup instead of being
/// refused: a program that starts again on `Lost` would otherwise spin on
/// the refusal without ever driving the session that finishes it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embassy_round_after_a_loss_waits_for_the_last_ones_cleanup() {
    use herdless_core::election::{Election, ElectionState};
    let server = ZkServer::start();
    let admin = std_client(&server).await;
    let (mut rx, mut tx) = ([0u8; 1024], [0u8; 512]);
    let mut election: Election = Election::new("/plant/again").unwrap();
    let mut lock: Lock = Lock::new("/locks/again").unwrap();
    let mut zk = driver(server.addr(), &mut rx, &mut tx, 10_000);
    let candidate = zk.add(&mut election).unwrap();
    let holder = zk.add(&mut lock).unwrap();
    zk.connect().await.unwrap();

    zk.handle(candidate).campaign(guid(), b"d").await.unwrap();
    let own = zk.recipe(candidate).unwrap().own_path().unwrap().to_owned();
    admin.delete(&own, None).await.unwrap();
    assert_eq!(
        lead_while_working(&mut zk, candidate).await,
        Err(Error::Lost)
    );
    // The case at hand: the loss is heard while the acknowledgement is
    // still being deleted.
    assert_eq!(
        zk.recipe(candidate).unwrap().state(),
        ElectionState::Resigning
    );
    tokio::time::timeout(LIMIT, zk.handle(candidate).campaign(guid(), b"d"))
        .await
        .expect("leads again")
        .unwrap();
    assert!(zk.handle(candidate).is_leading());

    zk.handle(holder).acquire(guid()).await.unwrap();
    let node: heapless::String<128> = zk.handle(holder).node_path().unwrap();
    admin.delete(&node, None).await.unwrap();
    let mut handle = zk.handle(holder);
    let held = handle.hold_while(tokio::time::sleep(Duration::from_secs(30)));
    assert_eq!(
        tokio::time::timeout(LIMIT, held)
            .await
            .expect("the loss is heard"),
        Err(Error::Lost)
    );
    tokio::time::timeout(LIMIT, zk.handle(holder).acquire(guid()))
        .await
        .expect("holds again")
        .unwrap();
    assert!(zk.handle(holder).is_held());

    // A release begun on the recipe itself, not yet through: the next
    // acquisition waits for its node to go instead of being refused.
    zk.recipe(holder).unwrap().release().unwrap();
    assert_eq!(
        zk.recipe(holder).unwrap().state(),
        herdless_core::lock::LockState::Releasing
    );
    tokio::time::timeout(LIMIT, zk.handle(holder).acquire(guid()))
        .await
        .expect("holds once the release is through")
        .unwrap();
    assert!(zk.handle(holder).is_held());

    zk.handle(candidate).resign().await.unwrap();
    zk.handle(holder).release().await.unwrap();
    zk.close().await.unwrap();
}

/// A campaign the server refuses (no right to create in the directory's
/// parent) ends the call with the recipe's error instead of waiting on,
/// whether the call is `campaign` or `resumed`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embassy_campaign_refused_by_an_acl_fails_the_call() {
    use herdless_core::election::Election;
    use zookeeper_client::{Acls, CreateMode};
    let server = ZkServer::start();
    let admin = std_client(&server).await;
    let read_only = CreateMode::Persistent.with_acls(Acls::anyone_read());
    admin.create("/closed", b"", &read_only).await.unwrap();

    let (mut rx, mut tx) = ([0u8; 1024], [0u8; 512]);
    let mut election: Election = Election::new("/closed/election").unwrap();
    let mut lock: Lock = Lock::new("/closed/lock").unwrap();
    let mut zk = driver(server.addr(), &mut rx, &mut tx, 10_000);
    let id = zk.add(&mut election).unwrap();
    let holder = zk.add(&mut lock).unwrap();
    zk.connect().await.unwrap();
    let outcome = tokio::time::timeout(
        Duration::from_secs(10),
        zk.handle(id).campaign(guid(), b"d"),
    )
    .await
    .expect("the refused campaign answers");
    assert!(matches!(outcome, Err(Error::Recipe(_))), "{outcome:?}");

    // Waiting to resume a campaign started on the recipe itself: the
    // refusal ends the wait too.
    zk.recipe(id).unwrap().campaign(guid(), b"d").unwrap();
    let outcome = tokio::time::timeout(Duration::from_secs(10), zk.handle(id).resumed())
        .await
        .expect("the refused campaign answers");
    assert!(matches!(outcome, Err(Error::Recipe(_))), "{outcome:?}");

    // A refusal nobody read belongs to its own round: once the directory
    // is open, the next campaign or acquisition goes in instead of
    // answering it.
    zk.recipe(id).unwrap().campaign(guid(), b"d").unwrap();
    until_idle(&mut zk, id).await;
    zk.recipe(holder).unwrap().acquire(guid()).unwrap();
    drive_until(&mut zk, "the refused lock is idle", LIMIT, |zk| {
        zk.recipe(holder).unwrap().state() == herdless_core::lock::LockState::Idle
    })
    .await;
    // Read-only for everyone, so replaced rather than opened.
    admin.delete("/closed", None).await.unwrap();
    tokio::time::timeout(LIMIT, zk.handle(id).campaign(guid(), b"d"))
        .await
        .expect("leads")
        .unwrap();
    tokio::time::timeout(LIMIT, zk.handle(holder).acquire(guid()))
        .await
        .expect("holds")
        .unwrap();
    zk.handle(id).resign().await.unwrap();
    zk.handle(holder).release().await.unwrap();
    zk.close().await.unwrap();
}

/// A loss the application never read (it checked `is_leading` or
/// `is_held` instead) belongs to the round it ended: the next campaign or
/// acquisition waits for its own outcome, rather than answering `Lost`
/// while it goes on to lead or hold unbeknownst to the application.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embassy_next_round_is_not_ended_by_an_unread_loss_of_the_last() {
    use herdless_core::election::Election;
    let server = ZkServer::start();
    let admin = std_client(&server).await;
    let (mut rx, mut tx) = ([0u8; 1024], [0u8; 512]);
    let mut election: Election = Election::new("/plant/rounds").unwrap();
    let mut lock: Lock = Lock::new("/locks/rounds").unwrap();
    let mut zk = driver(server.addr(), &mut rx, &mut tx, 10_000);
    let candidate = zk.add(&mut election).unwrap();
    let holder = zk.add(&mut lock).unwrap();
    zk.connect().await.unwrap();

    zk.handle(candidate).campaign(guid(), b"d").await.unwrap();
    zk.handle(holder).acquire(guid()).await.unwrap();
    let own = zk.recipe(candidate).unwrap().own_path().unwrap().to_owned();
    let node: heapless::String<128> = zk.handle(holder).node_path().unwrap();
    admin.delete(&own, None).await.unwrap();
    admin.delete(&node, None).await.unwrap();
    drive_until(&mut zk, "no loss seen", LIMIT, |zk| {
        !zk.handle(candidate).is_leading() && !zk.handle(holder).is_held()
    })
    .await;
    until_idle(&mut zk, candidate).await;
    drive_until(&mut zk, "still holding", LIMIT, |zk| {
        zk.recipe(holder).unwrap().state() == herdless_core::lock::LockState::Idle
    })
    .await;

    let again = tokio::time::timeout(LIMIT, zk.handle(candidate).campaign(guid(), b"d")).await;
    assert_eq!(again.expect("leads again"), Ok(()));
    assert!(zk.handle(candidate).is_leading());
    let again = tokio::time::timeout(LIMIT, zk.handle(holder).acquire(guid())).await;
    assert_eq!(again.expect("holds again"), Ok(()));
    assert!(zk.handle(holder).is_held());
    zk.handle(holder).release().await.unwrap();
    zk.handle(candidate).resign().await.unwrap();
    zk.close().await.unwrap();
}

/// `cancel` withdraws an attempt that waits behind a holder, and releases
/// a lock already held; either way the node is gone when it returns.
/// `try_acquire` takes only a free lock.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embassy_cancel_withdraws_a_waiting_attempt_and_releases_a_held_lock() {
    let server = ZkServer::start();
    let client = std_client(&server).await;
    let std_lock = herdless_std::Lock::new(&client, "/locks/cancel").unwrap();
    let guard = std_lock.acquire().await.unwrap();

    let (mut rx, mut tx) = ([0u8; 1024], [0u8; 512]);
    let mut lock: Lock = Lock::new("/locks/cancel").unwrap();
    let mut zk = driver(server.addr(), &mut rx, &mut tx, 10_000);
    let id = zk.add(&mut lock).unwrap();
    zk.connect().await.unwrap();
    let taken = zk.handle(id).try_acquire(guid()).await.unwrap();
    assert!(!taken, "try_acquire took a held lock");
    zk.recipe(id).unwrap().acquire(guid()).unwrap();
    let started = Instant::now();
    while client.list_children("/locks/cancel").await.unwrap().len() < 2 {
        assert!(started.elapsed() < Duration::from_secs(10), "no waiter");
        zk.run_for(embassy_time::Duration::from_millis(20))
            .await
            .unwrap();
    }
    tokio::time::timeout(LIMIT, zk.handle(id).cancel())
        .await
        .expect("the waiting attempt is withdrawn")
        .unwrap();
    assert_eq!(
        client.list_children("/locks/cancel").await.unwrap().len(),
        1
    );
    assert!(!zk.handle(id).is_held());

    guard.release().await.unwrap();
    zk.handle(id).acquire(guid()).await.unwrap();
    tokio::time::timeout(LIMIT, zk.handle(id).cancel())
        .await
        .expect("the held lock is released")
        .unwrap();
    assert!(client
        .list_children("/locks/cancel")
        .await
        .unwrap()
        .is_empty());
    assert!(zk.handle(id).try_acquire(guid()).await.unwrap(), "free");
    zk.handle(id).release().await.unwrap();
    zk.close().await.unwrap();
}

/// A loss reported while nobody read the candidate's events, with its
/// cleanup still to do (it was cut off for longer than it may lead in
/// doubt, and the same session comes back), does not end a later
/// `resign` early: `resign` returns once the node is gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embassy_resign_after_an_unread_loss_waits_for_the_cleanup() {
    use herdless_core::election::{Election, ElectionState};
    let server = ZkServer::start();
    let admin = std_client(&server).await;
    let proxy = Proxy::start(server.port());
    let (mut rx, mut tx) = ([0u8; 1024], [0u8; 512]);
    let mut election: Election = Election::new("/plant/unread").unwrap();
    let mut zk: Zk<'_, _> = Zk::new(
        TokioTransport::new(vec![proxy.addr()]),
        Buffers::new(&mut rx, &mut tx),
        SessionConfig::new(1, 8_000).with_retry_delay_ms(200),
    );
    let id = zk.add(&mut election).unwrap();
    zk.connect().await.unwrap();
    zk.handle(id).campaign(guid(), b"d").await.unwrap();
    zk.recipe(id).unwrap().set_lost_after(Some(500));

    proxy.cut();
    drive_until(&mut zk, "leadership outlived lost_after", LIMIT, |zk| {
        zk.recipe(id).unwrap().state() == ElectionState::Resigning
    })
    .await;
    proxy.restore();
    let resigned = tokio::time::timeout(Duration::from_secs(10), zk.handle(id).resign()).await;
    assert_eq!(resigned.expect("resign() answers"), Ok(()));
    assert_eq!(zk.recipe(id).unwrap().state(), ElectionState::Idle);
    let left = admin.list_children("/plant/unread").await.unwrap();
    assert!(
        left.is_empty(),
        "resign() returned before its node went: {left:?}"
    );
    zk.close().await.unwrap();
}

/// Takes every right to delete in `dir` away (reading stays).
async fn forbid_deletes(admin: &herdless_std::Client, dir: &str) {
    admin
        .set_acl(dir, &zookeeper_client::Acls::anyone_read(), None)
        .await
        .unwrap();
}

/// A wind-up whose delete the server refuses (someone took the right to
/// delete in the directory away) fails the call with the recipe's error,
/// rather than reporting a node gone that is still there: resigning, and
/// releasing or withdrawing a lock attempt.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embassy_wind_ups_refused_by_an_acl_fail_the_call() {
    use herdless_core::election::Election;
    let server = ZkServer::start();
    let admin = std_client(&server).await;
    let (mut rx, mut tx) = ([0u8; 1024], [0u8; 512]);
    let mut election: Election = Election::new("/plant/kept").unwrap();
    let mut held: Lock = Lock::new("/locks/kept").unwrap();
    let mut waiting: Lock = Lock::new("/locks/kept").unwrap();
    let mut zk = driver(server.addr(), &mut rx, &mut tx, 10_000);
    let candidate = zk.add(&mut election).unwrap();
    let holder = zk.add(&mut held).unwrap();
    let waiter = zk.add(&mut waiting).unwrap();
    zk.connect().await.unwrap();
    zk.handle(candidate).campaign(guid(), b"d").await.unwrap();
    zk.handle(holder).acquire(guid()).await.unwrap();
    zk.recipe(waiter).unwrap().acquire(guid()).unwrap();
    let started = Instant::now();
    while admin.list_children("/locks/kept").await.unwrap().len() < 2 {
        assert!(started.elapsed() < LIMIT, "no waiter");
        zk.run_for(embassy_time::Duration::from_millis(20))
            .await
            .unwrap();
    }
    let own = zk.recipe(candidate).unwrap().own_path().unwrap().to_owned();
    forbid_deletes(&admin, "/plant/kept").await;
    forbid_deletes(&admin, "/locks/kept").await;

    let refused = |outcome: Result<Result<(), Error>, _>, what: &str| match outcome {
        Ok(Err(Error::Recipe(herdless_core::Error::Zk(_)))) => {}
        other => panic!("{what}: {other:?}"),
    };
    refused(
        tokio::time::timeout(LIMIT, zk.handle(candidate).resign()).await,
        "resign",
    );
    refused(
        tokio::time::timeout(LIMIT, zk.handle(waiter).cancel()).await,
        "cancel",
    );
    refused(
        tokio::time::timeout(LIMIT, zk.handle(holder).release()).await,
        "release",
    );
    assert!(admin.check_stat(&own).await.unwrap().is_some());
    assert_eq!(admin.list_children("/locks/kept").await.unwrap().len(), 2);
    zk.close().await.unwrap();
}
