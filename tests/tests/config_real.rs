//! The configuration watch and compare-and-set against a real ZooKeeper 3.8.

use std::time::Duration;

use herdless_std::config::{Config, Value, Written};
use herdless_std::Client;
use herdless_tests::ZkServer;

const SESSION: Duration = Duration::from_secs(30);

async fn client(server: &ZkServer) -> Client {
    herdless_std::connect(&server.addr(), SESSION)
        .await
        .expect("connect to the test server")
}

fn counter(data: &[u8]) -> u64 {
    std::str::from_utf8(data)
        .unwrap()
        .split('|')
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_compare_and_set_loses_no_increment_and_watchers_see_the_last_version() {
    let server = ZkServer::start();
    let setup = client(&server).await;
    let open =
        zookeeper_client::CreateMode::Persistent.with_acls(zookeeper_client::Acls::anyone_all());
    setup.create("/app", b"", &open).await.unwrap();
    let creator = Config::watch(&setup, "/app/counter").unwrap();
    assert_eq!(
        creator.create(b"0|init").await.unwrap(),
        Written::Updated { version: 0 }
    );

    // Two watchers on their own sessions, recording every version they see.
    let mut watchers = Vec::new();
    for _ in 0..2 {
        let c = client(&server).await;
        let mut config = Config::watch(&c, "/app/counter").unwrap();
        watchers.push(tokio::spawn(async move {
            let mut versions = Vec::new();
            loop {
                match config.changed().await.unwrap() {
                    Value::Present(v) => {
                        versions.push(v.version);
                        if counter(&v.data) == 4 * 25 {
                            return (versions, v.data);
                        }
                    }
                    other => panic!("unexpected {other:?}"),
                }
            }
        }));
    }

    // Four writers on their own sessions, 25 increments each, by
    // compare-and-set with retries on conflict.
    let mut writers = Vec::new();
    for w in 0..4 {
        let c = client(&server).await;
        writers.push(tokio::spawn(async move {
            let mut config = Config::watch(&c, "/app/counter").unwrap();
            let (mut done, mut conflicts) = (0, 0);
            while done < 25 {
                let current = config.wait_present().await.unwrap();
                let next = counter(&current.data) + 1;
                let data = format!("{next}|w{w}");
                match config
                    .set(data.as_bytes(), Some(current.version))
                    .await
                    .unwrap()
                {
                    Written::Updated { .. } => done += 1,
                    Written::Conflict => {
                        conflicts += 1;
                        // Wait for the newer version before retrying.
                        let _ =
                            tokio::time::timeout(Duration::from_secs(5), config.changed()).await;
                    }
                    Written::Unknown => panic!("no connection was lost, nothing can be unknown"),
                }
            }
            conflicts
        }));
    }
    let mut conflicts = 0;
    for w in writers {
        conflicts += tokio::time::timeout(Duration::from_secs(60), w)
            .await
            .expect("writers finish")
            .unwrap();
    }
    let (data, stat) = setup.get_data("/app/counter").await.unwrap();
    assert_eq!(counter(&data), 100, "every increment landed exactly once");
    assert_eq!(stat.version, 100);
    for w in watchers {
        let (versions, last) = tokio::time::timeout(Duration::from_secs(10), w)
            .await
            .expect("watchers see the last version")
            .unwrap();
        assert!(
            versions.windows(2).all(|p| p[0] < p[1]),
            "versions only grow: {versions:?}"
        );
        assert_eq!(last, data);
        assert_eq!(versions.last(), Some(&100));
        println!(
            "a watcher saw {} of 101 versions ({conflicts} conflicts retried)",
            versions.len()
        );
    }
}

#[tokio::test]
async fn a_missing_value_is_reported_then_seen_when_created() {
    let server = ZkServer::start();
    let c = client(&server).await;
    let mut watcher = Config::watch(&c, "/app/late").unwrap();
    assert_eq!(watcher.changed().await.unwrap(), Value::Missing);
    let writer_client = client(&server).await;
    writer_client
        .create(
            "/app",
            b"",
            &zookeeper_client::CreateMode::Persistent
                .with_acls(zookeeper_client::Acls::anyone_all()),
        )
        .await
        .unwrap();
    let writer = Config::watch(&writer_client, "/app/late").unwrap();
    assert_eq!(
        writer.create(b"hello").await.unwrap(),
        Written::Updated { version: 0 }
    );
    let seen = tokio::time::timeout(Duration::from_secs(10), watcher.wait_present())
        .await
        .expect("the creation is seen")
        .unwrap();
    assert_eq!(seen.data, b"hello");
    assert_eq!(writer.create(b"again").await.unwrap(), Written::Conflict);
    // Its missing parents are made first, as every recipe's directory.
    let orphan = Config::watch(&writer_client, "/nowhere/deep/x").unwrap();
    assert_eq!(
        orphan.create(b"x").await.unwrap(),
        Written::Updated { version: 0 }
    );
    let (data, _) = writer_client.get_data("/nowhere/deep/x").await.unwrap();
    assert_eq!(data, b"x");
    assert_eq!(writer.set(b"x", Some(7)).await.unwrap(), Written::Conflict);
    assert!(matches!(
        writer
            .set(&vec![0u8; herdless_std::config::MAX_VALUE + 1], None)
            .await,
        Err(herdless_std::Error::TooLarge { .. })
    ));
}
