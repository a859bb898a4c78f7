//! The embedded driver when the network goes silent or the application
//! stops driving it, against a real ZooKeeper 3.8: an embedded leader
//! must stop before a herdless-std candidate waiting behind it can lead.
//!
//! A silent network is not a closed connection: reads, writes and connects
//! wait for ever (an embassy-net socket whose route is gone), so nothing
//! but the driver's own timers can tell the leader that it is cut off.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use herdless_core::election::Election;
use herdless_core::lock::Lock;
use herdless_core::naming::Guid;
use herdless_embassy::wire::SessionConfig;
use herdless_embassy::{Buffers, Error, RecipeId, Zk};
use herdless_tests::tokio_transport::{drive_until, TokioTransport};
use herdless_tests::ZkServer;

/// The session timeout asked for (the test servers grant it).
const SESSION_MS: u32 = 3_000;

fn guid() -> Guid {
    Guid::from_random_bytes(uuid::Uuid::new_v4().into_bytes())
}

/// A herdless-std candidate campaigning on `path` behind the device: the
/// moment it leads.
async fn std_candidate(server: &ZkServer, path: &'static str) -> tokio::task::JoinHandle<Instant> {
    let client = herdless_std::connect(&server.addr(), Duration::from_secs(30))
        .await
        .expect("connect a herdless-std client");
    tokio::spawn(async move {
        let candidate = herdless_std::Election::new(&client, path).unwrap();
        let leadership = candidate.campaign().await.unwrap();
        let at = Instant::now();
        leadership.resign().await.unwrap();
        at
    })
}

/// The device's driver, to three servers (the same one three times: each
/// attempt to open a connection may take a third of the session timeout,
/// as with an ensemble whose every member has gone out of reach).
fn device<'a>(server: &ZkServer, rx: &'a mut [u8], tx: &'a mut [u8]) -> Zk<'a, TokioTransport> {
    Zk::new(
        TokioTransport::new(vec![server.addr(); 3]),
        Buffers::new(rx, tx),
        SessionConfig::new(3, SESSION_MS),
    )
}

/// Leads until something stops the work (which never ends by itself),
/// failing after `limit`; what stopped it and whether the work ever ran.
async fn lead(
    zk: &mut Zk<'_, TokioTransport>,
    id: RecipeId<Election>,
    limit: Duration,
) -> (Error, bool) {
    let ran = AtomicBool::new(false);
    let work = async {
        ran.store(true, Ordering::SeqCst);
        std::future::pending::<()>().await
    };
    let outcome = tokio::time::timeout(limit, zk.handle(id).lead_while(work))
        .await
        .expect("the leader hears of its doubt or loss");
    (outcome.unwrap_err(), ran.load(Ordering::SeqCst))
}

/// The network goes silent under an embedded leader, connects and writes
/// hanging too: it is in doubt within the read timeout (two thirds of the
/// session's), before its session can expire and a candidate behind it
/// lead, although every attempt to reach a server meanwhile hangs until
/// its own timeout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embassy_leader_doubts_before_its_session_can_expire_when_the_network_goes_silent() {
    let server = ZkServer::start();
    let (mut rx, mut tx) = ([0u8; 1024], [0u8; 512]);
    let mut election: Election = Election::new("/silent/gateway").unwrap();
    let mut zk = device(&server, &mut rx, &mut tx);
    let silent = zk.transport().silent.clone();
    let id = zk.add(&mut election).unwrap();
    zk.connect().await.unwrap();
    zk.handle(id).campaign(guid(), b"device").await.unwrap();
    let next = std_candidate(&server, "/silent/gateway").await;

    let cut = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        silent.store(true, Ordering::SeqCst);
        Instant::now()
    });
    let (why, _) = lead(&mut zk, id, Duration::from_secs(20)).await;
    let doubted = Instant::now();
    let cut = cut.await.unwrap();
    assert_eq!(why, Error::Suspended);
    let after = doubted - cut;
    let next_leads = tokio::time::timeout(Duration::from_secs(30), next)
        .await
        .expect("the candidate behind leads once the session expired")
        .unwrap();
    println!(
        "in doubt {after:?} after the network went silent; the next led {:?} after",
        next_leads - cut
    );
    assert!(
        after < Duration::from_millis(u64::from(SESSION_MS)),
        "in doubt only {after:?} after the cut, past the {SESSION_MS} ms session"
    );
    assert!(doubted < next_leads, "the next candidate led first");
}

/// An application that stops driving its leader for longer than the read
/// timeout (busy elsewhere, asleep) gets its doubt before its work runs
/// again: a notification that arrived meanwhile is not taken as word from
/// the server that the session is still alive, which it may no longer be.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embassy_leader_left_undriven_doubts_before_working_again() {
    let server = ZkServer::start();
    let (mut rx, mut tx) = ([0u8; 1024], [0u8; 512]);
    let mut election: Election = Election::new("/undriven/gateway").unwrap();
    let mut zk = device(&server, &mut rx, &mut tx);
    let id = zk.add(&mut election).unwrap();
    zk.connect().await.unwrap();
    zk.handle(id).campaign(guid(), b"device").await.unwrap();
    // The candidate behind creates its node, whose creation the leader
    // hears nothing of, and then changes nothing: a write to the leader's
    // own node is what sends the leader a notification while it sleeps.
    let admin = herdless_std::connect(&server.addr(), Duration::from_secs(30))
        .await
        .unwrap();
    let own = zk.recipe(id).unwrap().own_path().unwrap().to_owned();

    // Two and a half seconds undriven: past the read timeout (2 s), short
    // of the session timeout.
    let nap = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(500)).await;
        admin.set_data(&own, b"touched", None).await.unwrap();
    });
    tokio::time::sleep(Duration::from_millis(2_500)).await;
    nap.await.unwrap();

    let (why, ran) = lead(&mut zk, id, Duration::from_secs(20)).await;
    assert!(!ran, "the work ran on a leadership in doubt");
    assert!(
        matches!(why, Error::Suspended | Error::Lost),
        "stopped by {why:?}"
    );
}

/// The device's transmit path fails under an embedded lock holder (what it
/// sends is lost, what the server sends still arrives), and halfway
/// through the session timeout a notification reaches it: its candidate's
/// predecessor resigns. That notification says nothing of what the server
/// last heard from the device, which is what the server expires the
/// session by; the holder's work must stop before the server can have
/// expired it and let the holder waiting behind in.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embassy_holder_stops_before_its_expiry_when_only_its_sends_are_lost() {
    let server = ZkServer::start();
    let leader_client = herdless_std::connect(&server.addr(), Duration::from_secs(30))
        .await
        .unwrap();
    let leader = herdless_std::Election::new(&leader_client, "/deaf/gateway").unwrap();
    let leadership = leader.campaign().await.unwrap();

    let (mut rx, mut tx) = ([0u8; 1024], [0u8; 512]);
    let mut lock: Lock = Lock::new("/deaf/conveyor").unwrap();
    let mut election: Election = Election::new("/deaf/gateway").unwrap();
    let mut zk = device(&server, &mut rx, &mut tx);
    let deaf = zk.transport().deaf.clone();
    let lock_id = zk.add(&mut lock).unwrap();
    let election_id = zk.add(&mut election).unwrap();
    zk.connect().await.unwrap();
    zk.recipe(election_id)
        .unwrap()
        .campaign(guid(), b"device")
        .unwrap();
    zk.handle(lock_id).acquire(guid()).await.unwrap();
    drive_until(
        &mut zk,
        "the device's candidate watches the leader",
        Duration::from_secs(10),
        |zk| zk.recipe(election_id).unwrap().predecessor().is_some(),
    )
    .await;

    let waiter_client = herdless_std::connect(&server.addr(), Duration::from_secs(30))
        .await
        .unwrap();
    let waiter = tokio::spawn(async move {
        let lock = herdless_std::Lock::new(&waiter_client, "/deaf/conveyor").unwrap();
        let guard = lock.acquire().await.unwrap();
        let at = Instant::now();
        guard.release().await.unwrap();
        at
    });
    // The waiter's node is in line, and the device has pinged since.
    zk.run_for(embassy_time::Duration::from_millis(1_200))
        .await
        .unwrap();

    let notified_before = server.notifications_sent();
    deaf.store(true, Ordering::SeqCst);
    let cut = Instant::now();
    let resigned = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(u64::from(SESSION_MS / 2))).await;
        leadership.resign().await.unwrap();
    });
    let mut holder = zk.handle(lock_id);
    let work = holder.hold_while(std::future::pending::<()>());
    let outcome = tokio::time::timeout(Duration::from_secs(20), work)
        .await
        .expect("the holder hears of its loss");
    let stopped = Instant::now();
    resigned.await.unwrap();
    assert_eq!(outcome.unwrap_err(), Error::Lost);
    assert!(
        server.notifications_sent() > notified_before,
        "the server sent the device no notification after the cut"
    );
    let next_in = tokio::time::timeout(Duration::from_secs(30), waiter)
        .await
        .expect("the waiter gets the lock once the device's session expired")
        .unwrap();
    println!(
        "the device's work stopped {:?} after its sends were lost; the next holder got in {:?} after",
        stopped - cut,
        next_in - cut
    );
    assert!(
        stopped < next_in,
        "the next holder got in {:?} before the device's work stopped",
        stopped - next_in
    );
}
