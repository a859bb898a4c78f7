//! Queues and priority queues against a real ZooKeeper 3.8.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use herdless_std::queue::Queue;
use herdless_std::Client;
use herdless_tests::ZkServer;

const SESSION: Duration = Duration::from_secs(30);

async fn client(server: &ZkServer) -> Client {
    herdless_std::connect(&server.addr(), SESSION)
        .await
        .expect("connect to the test server")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn producers_and_consumers_on_separate_sessions_move_every_item_once() {
    let server = ZkServer::start();
    let mut producers = Vec::new();
    for p in 0..4 {
        let c = client(&server).await;
        producers.push(tokio::spawn(async move {
            let queue = Queue::new(&c, "/app/jobs").await.unwrap();
            for n in 0..25 {
                queue.put(format!("p{p}-{n}").as_bytes()).await.unwrap();
            }
        }));
    }
    let (taken_tx, mut taken_rx) = tokio::sync::mpsc::unbounded_channel();
    let mut consumers = Vec::new();
    for _ in 0..3 {
        let c = client(&server).await;
        let taken_tx = taken_tx.clone();
        consumers.push(tokio::spawn(async move {
            let queue = Queue::new(&c, "/app/jobs").await.unwrap();
            while let Some(item) = queue.take_timeout(Duration::from_secs(2)).await.unwrap() {
                assert!(item.certain, "no connection was lost");
                let _ = taken_tx.send(String::from_utf8(item.data).unwrap());
            }
        }));
    }
    drop(taken_tx);
    for p in producers {
        p.await.unwrap();
    }
    let mut taken = Vec::new();
    while let Some(item) = taken_rx.recv().await {
        taken.push(item);
    }
    for c in consumers {
        c.await.unwrap();
    }
    let unique: BTreeSet<&String> = taken.iter().collect();
    assert_eq!(taken.len(), 100, "every item taken");
    assert_eq!(unique.len(), 100, "none taken twice");
    let observer = client(&server).await;
    assert!(observer
        .list_children("/app/jobs")
        .await
        .unwrap()
        .is_empty());
}

/// As Curator's timed `poll`, which makes one attempt whatever its
/// timeout: a zero timeout takes an item already there, and answers `None`
/// on an empty queue.
#[tokio::test]
async fn a_zero_timeout_takes_an_item_already_there() {
    let server = ZkServer::start();
    let c = client(&server).await;
    let queue = Queue::new(&c, "/app/zero").await.unwrap();
    for i in 0..3u8 {
        queue.put(&[i]).await.unwrap();
        let item = queue
            .take_timeout(Duration::ZERO)
            .await
            .unwrap()
            .expect("an item already there is taken with a zero timeout");
        assert_eq!(item.data, [i]);
    }
    assert_eq!(queue.take_timeout(Duration::ZERO).await.unwrap(), None);
}

#[tokio::test]
async fn an_item_over_the_limit_written_by_another_client_is_passed_over_not_jamming_the_queue() {
    use herdless_std::queue::MAX_ITEM;
    use herdless_std::zookeeper_client::{Acls, CreateMode};
    let server = ZkServer::start();
    let c = client(&server).await;
    let queue = Queue::new(&c, "/app/big").await.unwrap();
    queue.put(b"first").await.unwrap();
    // As zkCli.sh or another library writes one: no limit of ours.
    let sequential = CreateMode::PersistentSequential.with_acls(Acls::anyone_all());
    c.create(
        "/app/big/abc-queue-",
        &vec![b'x'; MAX_ITEM + 1],
        &sequential,
    )
    .await
    .unwrap();
    queue.put(b"after").await.unwrap();
    for expected in [&b"first"[..], b"after"] {
        let item = tokio::time::timeout(Duration::from_secs(10), queue.take())
            .await
            .expect("not stalled behind the large item")
            .unwrap();
        assert_eq!(item.data, expected);
    }
    assert_eq!(queue.peek().await.unwrap(), None, "nothing it can take");
    assert_eq!(
        queue
            .take_timeout(Duration::from_millis(200))
            .await
            .unwrap(),
        None
    );
    let left = c.list_children("/app/big").await.unwrap();
    assert_eq!(left.len(), 1, "left for another consumer: {left:?}");
    assert!(left[0].starts_with("abc-queue-"), "{left:?}");
}

#[tokio::test]
async fn a_take_waits_on_a_watch_not_by_polling_and_peek_leaves_the_item() {
    let server = ZkServer::start();
    let c = client(&server).await;
    let queue = Queue::new(&c, "/app/waiting").await.unwrap();
    assert_eq!(queue.peek().await.unwrap(), None);
    let started = Instant::now();
    assert_eq!(
        queue
            .take_timeout(Duration::from_millis(300))
            .await
            .unwrap(),
        None
    );
    assert!(started.elapsed() >= Duration::from_millis(300));

    let consumer_client = client(&server).await;
    let waiting = tokio::spawn(async move {
        let queue = Queue::new(&consumer_client, "/app/waiting").await.unwrap();
        queue.take().await.unwrap()
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    let before = server.packets_received();
    tokio::time::sleep(Duration::from_secs(1)).await;
    let idle = server.packets_received() - before;
    println!("{idle} packets reached the server in one second of a waiting take");
    // Pings only (three sessions, one every third of 30 s at most).
    assert!(idle <= 3, "{idle} packets in a second of waiting: polling?");
    assert!(
        server.watch_count() >= 1,
        "the waiting take holds a child watch"
    );

    queue.put(b"job-1").await.unwrap();
    let item = tokio::time::timeout(Duration::from_secs(5), waiting)
        .await
        .expect("the waiting take gets the item")
        .unwrap();
    assert_eq!(item.data, b"job-1");

    queue.put(b"job-2").await.unwrap();
    let peeked = queue.peek().await.unwrap().expect("an item to peek");
    assert_eq!(peeked.data, b"job-2");
    assert_eq!(queue.take().await.unwrap().data, b"job-2", "peek left it");
}

#[tokio::test]
async fn a_priority_queue_takes_an_urgent_item_added_later_first() {
    let server = ZkServer::start();
    let c = client(&server).await;
    let producer = Queue::priority(&c, "/app/urgent").await.unwrap();
    for n in 0..3 {
        producer
            .put_with_priority(format!("routine-{n}").as_bytes(), 50)
            .await
            .unwrap();
    }
    let consumer_client = client(&server).await;
    let consumer = Queue::priority(&consumer_client, "/app/urgent")
        .await
        .unwrap();
    // The first take lists the queue and caches the routine items.
    assert_eq!(consumer.take().await.unwrap().data, b"routine-0");
    producer.put_with_priority(b"urgent", 1).await.unwrap();
    // Give the notification time to reach the consumer.
    tokio::time::sleep(Duration::from_millis(100)).await;
    let order: Vec<Vec<u8>> = [
        consumer.take().await.unwrap().data,
        consumer.take().await.unwrap().data,
        consumer.take().await.unwrap().data,
    ]
    .into();
    assert_eq!(
        order,
        [
            b"urgent".to_vec(),
            b"routine-1".to_vec(),
            b"routine-2".to_vec()
        ]
    );
    assert!(matches!(
        producer.put_with_priority(b"x", 100).await,
        Err(herdless_std::Error::BadPriority)
    ));
}

/// A queue's item buffers (64 KiB each side) live on the heap: opening and
/// using one on a thread with a small stack works. (On a three-server
/// ensemble a client thread with the default 2 MiB stack overflowed while
/// `Queue::new` built its cores.)
#[test]
fn a_queue_opens_and_works_on_a_thread_with_a_small_stack() {
    let server = ZkServer::start();
    let addr = server.addr();
    let worker = std::thread::Builder::new()
        .stack_size(512 * 1024)
        .spawn(move || {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap()
                .block_on(Box::pin(async move {
                    let c = herdless_std::connect(&addr, SESSION).await.unwrap();
                    let queue = Queue::new(&c, "/app/small-stack").await.unwrap();
                    queue.put(b"one").await.unwrap();
                    let item = queue.take().await.unwrap();
                    item.data
                }))
        })
        .unwrap();
    assert_eq!(worker.join().expect("no stack overflow"), b"one");
}
