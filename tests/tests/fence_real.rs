//! Fenced writes against a real ZooKeeper 3.8: a write made after the lock
//! was lost fails instead of landing.

use std::time::{Duration, Instant};

use herdless_std::{Client, CreateMode, Error, Fenced, FencedResult, Holding, Lock};
use herdless_tests::{Proxy, ZkServer};

const SESSION: Duration = Duration::from_secs(30);
const SHORT_SESSION: Duration = Duration::from_secs(2);

async fn client(addr: &str, timeout: Duration) -> Client {
    herdless_std::connect(addr, timeout)
        .await
        .expect("connect to the test server")
}

async fn data(client: &Client, path: &str) -> String {
    let (data, _) = client.get_data(path).await.expect("read the node");
    String::from_utf8(data).expect("utf-8 data")
}

#[tokio::test]
async fn writes_fenced_on_a_lock_land_only_while_it_is_held() {
    let server = ZkServer::start();
    let proxy = Proxy::start(server.port());
    let holder = client(&proxy.addr(), SHORT_SESSION).await;
    let worker = client(&server.addr(), SESSION).await;
    let successor = client(&server.addr(), SESSION).await;
    worker
        .create(
            "/job",
            b"none",
            &zookeeper_client::CreateMode::Persistent
                .with_acls(zookeeper_client::Acls::anyone_all()),
        )
        .await
        .expect("create /job");

    let guard = Lock::new(&holder, "/locks/fenced")
        .unwrap()
        .acquire()
        .await
        .unwrap();

    // Over the holder's own session: the batch lands, results in order.
    let mut batch = guard.fenced();
    batch
        .set_data("/job", b"holder-1", None)
        .unwrap()
        .create("/job/step-", b"", CreateMode::PersistentSequential)
        .unwrap();
    let results = batch.commit().await.expect("fenced batch while held");
    assert!(matches!(results[0], FencedResult::DataSet { .. }));
    assert!(
        matches!(&results[1], FencedResult::Created { path } if path.starts_with("/job/step-"))
    );
    assert_eq!(data(&worker, "/job").await, "holder-1");
    let step = match &results[1] {
        FencedResult::Created { path } => path.clone(),
        other => panic!("{other:?}"),
    };
    // Each kind of write answers with its own result.
    let mut batch = guard.fenced();
    batch
        .check("/job", Some(1))
        .unwrap()
        .delete(&step, None)
        .unwrap();
    assert_eq!(
        batch
            .commit()
            .await
            .expect("a check and a delete while held"),
        [FencedResult::Checked, FencedResult::Deleted]
    );

    // A worker writing over its own session, fenced on the holder's node,
    // keeps writing while the holder's session expires underneath it.
    let fence = guard.node_path().to_owned();
    let work = {
        let worker = worker.clone();
        tokio::spawn(async move {
            let mut landed = 0u32;
            let deadline = Instant::now() + Duration::from_secs(30);
            loop {
                let mut batch = Fenced::on(&worker, &fence).unwrap();
                batch
                    .set_data("/job", format!("holder-work-{landed}").as_bytes(), None)
                    .unwrap();
                match batch.commit().await {
                    Ok(_) => landed += 1,
                    Err(Error::Fenced) => return landed,
                    Err(e) => panic!("unexpected error from a fenced write: {e}"),
                }
                assert!(Instant::now() < deadline, "the fence never closed");
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
    };

    proxy.cut();
    tokio::time::timeout(Duration::from_secs(10), guard.suspended())
        .await
        .expect("the holder hears Suspended");
    let successor_lock = Lock::new(&successor, "/locks/fenced").unwrap();
    let successor_guard = tokio::time::timeout(Duration::from_secs(20), successor_lock.acquire())
        .await
        .expect("the successor takes over once the holder's session expires")
        .unwrap();
    let landed = tokio::time::timeout(Duration::from_secs(10), work)
        .await
        .expect("the worker hits the fence")
        .unwrap();
    assert!(landed > 0, "the worker wrote while the lock was held");

    // The successor's write is the last word: nothing of the old holder's
    // work lands after it.
    let mut batch = successor_guard.fenced();
    batch.set_data("/job", b"successor", None).unwrap();
    batch.commit().await.expect("the successor's fenced write");
    let mut late = Fenced::on(&worker, guard.node_path()).unwrap();
    late.set_data("/job", b"late-holder-work", None).unwrap();
    assert_eq!(late.commit().await.unwrap_err(), Error::Fenced);
    assert_eq!(data(&worker, "/job").await, "successor");

    // The old holder learns it lost the lock; its own batch fails without
    // a round trip.
    proxy.restore();
    tokio::time::timeout(Duration::from_secs(20), guard.lost())
        .await
        .expect("the old guard hears Lost");
    assert_eq!(guard.holding(), Holding::Lost);
    let mut stale = guard.fenced();
    stale.set_data("/job", b"stale", None).unwrap();
    assert_eq!(stale.commit().await.unwrap_err(), Error::Fenced);
    assert_eq!(data(&worker, "/job").await, "successor");
    successor_guard.release().await.unwrap();
}

#[tokio::test]
async fn a_refused_write_in_a_fenced_batch_writes_nothing() {
    let server = ZkServer::start();
    let c = client(&server.addr(), SESSION).await;
    let guard = Lock::new(&c, "/locks/atomic")
        .unwrap()
        .acquire()
        .await
        .unwrap();
    let mut batch = guard.fenced();
    batch
        .create("/made", b"x", CreateMode::Persistent)
        .unwrap()
        .set_data("/does-not-exist", b"y", None)
        .unwrap();
    assert_eq!(
        batch.commit().await.unwrap_err(),
        Error::FencedWrite {
            index: 1,
            error: herdless_std::ZkError::NoNode
        }
    );
    assert!(
        c.check_stat("/made").await.unwrap().is_none(),
        "rolled back"
    );
    assert!(matches!(
        guard.fenced().delete("relative", None),
        Err(Error::Path(_))
    ));
    guard.release().await.unwrap();
}
