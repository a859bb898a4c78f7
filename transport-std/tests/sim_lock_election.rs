//! herdless-std's lock, election and fence on the in-memory ZooKeeper,
//! through the faults a test injects. Every test runs on tokio's paused
//! clock: timeouts pass in virtual time.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use herdless_std::sim::{RandomFaults, SimServer};
use herdless_std::{CreateMode, Election, Error, Lock};

const DIR: &str = "/locks/job";

#[tokio::test(start_paused = true)]
async fn one_holder_at_a_time_and_the_lock_passes_on_release() {
    let zk = SimServer::new();
    let (a, b) = (zk.connect(), zk.connect());
    let guard = Lock::new(&a, DIR).unwrap().acquire().await.unwrap();
    assert!(Lock::new(&b, DIR)
        .unwrap()
        .try_acquire()
        .await
        .unwrap()
        .is_none());
    let waiting = tokio::spawn({
        let b = b.clone();
        async move { Lock::new(&b, DIR).unwrap().acquire().await }
    });
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(!waiting.is_finished(), "acquired while held");
    guard.release().await.unwrap();
    let second = waiting.await.unwrap().unwrap();
    assert_eq!(zk.tree().iter().filter(|p| p.starts_with(DIR)).count(), 2);
    second.release().await.unwrap();
    assert_eq!(zk.tree(), ["/locks", DIR], "no node left");
    assert!(zk.watches(a.session_id()).is_empty());
    assert!(zk.watches(b.session_id()).is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_lost_create_reply_leaves_one_node_and_the_lock_is_taken_once() {
    let zk = SimServer::new();
    zk.create(DIR, b"").unwrap();
    let a = zk.connect();
    zk.lose_next_write_reply(a.session_id());
    let guard = Lock::new(&a, DIR).unwrap().acquire().await.unwrap();
    assert_eq!(
        zk.requests()["create"],
        1,
        "one create applied: the GUID found it, no second node"
    );
    let nodes: Vec<String> = zk
        .tree()
        .into_iter()
        .filter(|p| p.starts_with(&format!("{DIR}/")))
        .collect();
    assert_eq!(
        nodes,
        [guard.node_path().to_owned()],
        "the GUID found the applied create"
    );
    guard.release().await.unwrap();
    assert_eq!(zk.tree(), ["/locks", DIR]);
}

#[tokio::test(start_paused = true)]
async fn an_expired_holder_hears_it_and_its_fenced_write_fails() {
    let zk = SimServer::new();
    let (a, b) = (zk.connect(), zk.connect());
    zk.create("/job", b"none").unwrap();
    let guard = Lock::new(&a, DIR).unwrap().acquire().await.unwrap();
    zk.expire(a.session_id());
    guard.lost().await;
    let mut late = guard.fenced();
    late.set_data("/job", b"stale", None).unwrap();
    assert!(matches!(
        late.commit().await,
        Err(Error::Fenced | Error::SessionEnded)
    ));
    let next = Lock::new(&b, DIR).unwrap().acquire().await.unwrap();
    let mut batch = next.fenced();
    batch.set_data("/job", b"b", None).unwrap();
    batch.commit().await.unwrap();
    assert_eq!(zk.node("/job").unwrap().data, b"b");
}

#[tokio::test(start_paused = true)]
async fn a_disconnection_shorter_than_the_session_suspends_and_resumes() {
    let zk = SimServer::new().with_session_timeout(Duration::from_secs(4));
    let a = zk.connect();
    let guard = Lock::new(&a, DIR).unwrap().acquire().await.unwrap();
    zk.disconnect(a.session_id(), Duration::from_secs(1));
    tokio::time::timeout(Duration::from_millis(100), guard.suspended())
        .await
        .expect("the holder hears the disconnection");
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(zk.is_live(a.session_id()));
    let mut batch = guard.fenced();
    batch.create("/done", b"", CreateMode::Persistent).unwrap();
    batch
        .commit()
        .await
        .expect("still held after the session resumed");
    // Longer than the session timeout: expired.
    zk.disconnect(a.session_id(), Duration::from_secs(10));
    tokio::time::timeout(Duration::from_secs(5), guard.lost())
        .await
        .expect("lost once the session timeout passed");
    assert!(!zk.is_live(a.session_id()));
}

#[tokio::test(start_paused = true)]
async fn requests_held_in_flight_are_answered_connection_loss_and_retried() {
    let zk = SimServer::new();
    let a = zk.connect();
    zk.hold(a.session_id());
    let acquiring = tokio::spawn({
        let a = a.clone();
        async move { Lock::new(&a, DIR).unwrap().acquire().await }
    });
    while zk.in_flight(a.session_id()) == 0 {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    zk.fail_in_flight(a.session_id());
    let guard = acquiring.await.unwrap().unwrap();
    assert_eq!(zk.tree().len(), 3, "one lock node: {:?}", zk.tree());
    guard.release().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_leader_that_expires_is_followed_by_the_next() {
    let zk = SimServer::new();
    let (a, b) = (zk.connect(), zk.connect());
    let leading = Election::new(&a, "/election")
        .unwrap()
        .campaign()
        .await
        .unwrap();
    let next = tokio::spawn({
        let b = b.clone();
        async move { Election::new(&b, "/election").unwrap().campaign().await }
    });
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert!(!next.is_finished());
    zk.expire(a.session_id());
    leading.lost().await;
    let second = next.await.unwrap().unwrap();
    second.resign().await.unwrap();
}

/// Under random faults, many workers take the lock in turn; an oracle
/// outside the library counts holders at every moment.
#[tokio::test(start_paused = true)]
async fn random_faults_never_give_two_holders() {
    let zk = SimServer::with_seed(7).with_session_timeout(Duration::from_secs(2));
    zk.random_faults(
        11,
        RandomFaults {
            lose_reply: 0.1,
            disconnect: 0.05,
            expire: 0.0,
            max_down: Duration::from_millis(300),
        },
    );
    let holders = Arc::new(AtomicUsize::new(0));
    let most = Arc::new(AtomicUsize::new(0));
    let rounds = Arc::new(AtomicUsize::new(0));
    let mut workers = Vec::new();
    for _ in 0..4 {
        let session = zk.session();
        let (holders, most, rounds) = (holders.clone(), most.clone(), rounds.clone());
        workers.push(tokio::spawn(async move {
            let lock = Lock::new(&session, DIR).unwrap();
            for _ in 0..10 {
                let Ok(guard) = lock.acquire().await else {
                    continue;
                };
                let now = holders.fetch_add(1, Ordering::SeqCst) + 1;
                most.fetch_max(now, Ordering::SeqCst);
                tokio::select! {
                    () = tokio::time::sleep(Duration::from_millis(5)) => {}
                    () = guard.lost() => {}
                }
                holders.fetch_sub(1, Ordering::SeqCst);
                let _ = guard.release().await;
                rounds.fetch_add(1, Ordering::SeqCst);
            }
        }));
    }
    for w in workers {
        w.await.unwrap();
    }
    assert_eq!(most.load(Ordering::SeqCst), 1, "two holders at once");
    assert!(rounds.load(Ordering::SeqCst) >= 20, "too few rounds");
    let faults = zk.requests();
    assert!(faults.values().sum::<u64>() > 100, "{faults:?}");
    zk.no_random_faults();
}

/// A fleet in one process: 200 devices on one in-memory server elect a
/// gateway; each leader's session expires in turn and the next in line
/// takes over, never two at once.
#[tokio::test(start_paused = true)]
async fn a_fleet_of_two_hundred_elects_a_gateway_and_survives_its_leaders() {
    let zk = SimServer::with_seed(3);
    let leaders = Arc::new(AtomicUsize::new(0));
    let terms = Arc::new(AtomicUsize::new(0));
    let mut devices = Vec::new();
    for _ in 0..200 {
        let (client, zk) = (zk.connect(), zk.clone());
        let (leaders, terms) = (leaders.clone(), terms.clone());
        devices.push(tokio::spawn(async move {
            let election = Election::new(&client, "/fleet/gateway").unwrap();
            let Ok(leading) = election.campaign().await else {
                return;
            };
            assert_eq!(leaders.fetch_add(1, Ordering::SeqCst), 0, "two gateways");
            terms.fetch_add(1, Ordering::SeqCst);
            tokio::time::sleep(Duration::from_millis(10)).await;
            leaders.fetch_sub(1, Ordering::SeqCst);
            zk.expire(client.session_id());
            leading.lost().await;
        }));
    }
    for d in devices {
        d.await.unwrap();
    }
    assert_eq!(terms.load(Ordering::SeqCst), 200, "every device led once");
    assert_eq!(zk.tree(), ["/fleet", "/fleet/gateway"], "no candidate left");
}

/// A fenced batch's results come back per write, in order; a refused write
/// is named by its position among the writes (the fence's own check not
/// counted), and nothing of the batch lands.
#[tokio::test(start_paused = true)]
async fn a_fenced_batch_reports_each_write_and_names_the_one_refused() {
    let zk = SimServer::new();
    zk.create("/job/old", b"").unwrap();
    let a = zk.connect();
    let guard = Lock::new(&a, DIR).unwrap().acquire().await.unwrap();
    let mut batch = guard.fenced();
    batch
        .set_data("/job", b"running", None)
        .unwrap()
        .create("/job/step-", b"", CreateMode::PersistentSequential)
        .unwrap()
        .delete("/job/old", None)
        .unwrap();
    let results = batch.commit().await.unwrap();
    assert!(matches!(
        results[0],
        herdless_std::FencedResult::DataSet { .. }
    ));
    assert!(
        matches!(&results[1], herdless_std::FencedResult::Created { path } if path.starts_with("/job/step-"))
    );
    assert_eq!(results[2], herdless_std::FencedResult::Deleted);
    let mut refused = guard.fenced();
    refused
        .set_data("/job", b"again", None)
        .unwrap()
        .delete("/job/missing", None)
        .unwrap();
    assert_eq!(
        refused.commit().await.unwrap_err(),
        Error::FencedWrite {
            index: 1,
            error: herdless_std::ZkError::NoNode
        }
    );
    assert_eq!(
        zk.node("/job").unwrap().data,
        b"running",
        "nothing of it landed"
    );
}
