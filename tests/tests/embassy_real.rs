//! The embedded driver (`herdless-embassy`) against a real ZooKeeper 3.8,
//! over tokio's `TcpStream` through `embedded-io-adapters`: the same
//! session state machine and wire codec a microcontroller runs, with a
//! loopback network that the tests can cut.

#[path = "embassy/tokio_transport.rs"]
mod tokio_transport;

use std::io::{Read, Write};
use std::net::{Ipv4Addr, TcpListener};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use herdless_core::lock::{Lock, LockEvent};
use herdless_core::naming::Guid;
use herdless_embassy::wire::{SessionConfig, SessionError, State};
use herdless_embassy::{Buffers, Error, Fault, Zk};
use herdless_tests::{Proxy, ZkServer};
use tokio_transport::TokioTransport;

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
        assert_ne!(event, LockEvent::Lost, "the lock was lost: {seen:?}");
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embassy_expiry_is_reported_as_loss() {
    let server = ZkServer::start();
    let proxy = Arc::new(Proxy::start(server.port()));
    let (mut rx, mut tx) = ([0u8; 4096], [0u8; 1024]);
    let mut lock: Lock = Lock::new("/locks/expiry").unwrap();
    let transport = TokioTransport::new(vec![proxy.addr()]);
    let session_timeout = Duration::from_secs(2);
    let mut zk: Zk<'_, _> = Zk::new(
        transport,
        Buffers::new(&mut rx, &mut tx),
        SessionConfig::new(1, millis(session_timeout)).with_retry_delay_ms(200),
    );
    let id = zk.add(&mut lock).unwrap();
    zk.connect().await.unwrap();
    zk.handle(id).acquire(guid()).await.unwrap();

    let cutter = proxy.clone();
    let cut_for = session_timeout + Duration::from_millis(1_500);
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

    // The renewed session works: the lock can be taken again.
    zk.connect().await.unwrap();
    zk.handle(id).acquire(guid()).await.unwrap();
    zk.handle(id).release().await.unwrap();
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
