//! The shared (read/write) lock and revocation through `herdless-std`
//! against a real ZooKeeper 3.8.
//!
//! Each test starts its own server on a free loopback port.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use herdless_core::naming::Flavour;
use herdless_std::{revoke, revoke_forced, Client, Error, Holding, ReadWriteLock, Revocation};
use herdless_tests::ZkServer;

const SESSION: Duration = Duration::from_secs(30);

async fn client(server: &ZkServer) -> Client {
    herdless_std::connect(&server.addr(), SESSION)
        .await
        .expect("connect to the test server")
}

async fn children(client: &Client, dir: &str) -> Vec<String> {
    client.list_children(dir).await.unwrap_or_default()
}

async fn wait_until<F, Fut>(what: &str, timeout: Duration, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + timeout;
    while !check().await {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The paths each session watches, from the server's `wchc` report.
fn watches_by_session(server: &ZkServer) -> BTreeMap<i64, Vec<String>> {
    let text = server.four_letter("wchc").expect("wchc");
    let mut out: BTreeMap<i64, Vec<String>> = BTreeMap::new();
    let mut session = None;
    for line in text.lines() {
        if let Some(hex) = line.trim().strip_prefix("0x") {
            if !line.starts_with(char::is_whitespace) {
                session = i64::from_str_radix(hex, 16).ok();
                out.entry(session.unwrap_or(0)).or_default();
                continue;
            }
        }
        if let (Some(s), path) = (session, line.trim()) {
            if path.starts_with('/') {
                out.entry(s).or_default().push(path.to_owned());
            }
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_readers_queued_behind_a_writer_all_get_in_on_its_release() {
    const DIR: &str = "/rw/ten";
    let server = ZkServer::start();
    let writer_client = client(&server).await;
    let writer = ReadWriteLock::new(&writer_client, DIR).unwrap();
    let guard = writer.write().acquire().await.unwrap();
    // Its watch on its own node is answered just after `Acquired`.
    wait_until(
        "the writer watching its node",
        Duration::from_secs(10),
        || async { server.watch_count() == 1 },
    )
    .await;
    let watches_before = server.watch_count();

    let inside = Arc::new(AtomicUsize::new(0));
    let (stop_tx, _) = tokio::sync::broadcast::channel::<()>(1);
    let (in_tx, mut in_rx) = tokio::sync::mpsc::unbounded_channel::<Instant>();
    let mut readers = Vec::new();
    for _ in 0..10 {
        let c = client(&server).await;
        let lock = ReadWriteLock::new(&c, DIR).unwrap();
        let (inside, in_tx, mut stop) = (inside.clone(), in_tx.clone(), stop_tx.subscribe());
        let l = lock.clone();
        readers.push((
            lock,
            c,
            tokio::spawn(async move {
                let guard = l.read().acquire().await.unwrap();
                inside.fetch_add(1, Ordering::SeqCst);
                let _ = in_tx.send(Instant::now());
                let _ = stop.recv().await;
                guard.release().await.unwrap();
            }),
        ));
    }
    wait_until(
        "10 readers watching the writer",
        Duration::from_secs(20),
        // Each reader watches the writer and its own node.
        || async { server.watch_count() == watches_before + 20 },
    )
    .await;
    assert_eq!(
        inside.load(Ordering::SeqCst),
        0,
        "nobody reads while it writes"
    );
    let writer_node = guard.node_path().to_owned();
    let by_session = watches_by_session(&server);
    for (_, c, _) in &readers {
        let watched = by_session
            .get(&c.session_id().0)
            .cloned()
            .unwrap_or_default();
        let others: Vec<&String> = watched.iter().filter(|p| !p.contains("-read-")).collect();
        assert_eq!(
            others,
            vec![&writer_node],
            "each reader watches the writer and, of the rest, only its own node"
        );
        assert_eq!(watched.len(), 2, "{watched:?}");
    }
    let notified = |rs: &[(ReadWriteLock, Client, _)]| -> u64 {
        rs.iter().map(|(l, _, _)| l.read().notifications()).sum()
    };
    let sent = |rs: &[(ReadWriteLock, Client, _)]| -> u64 {
        rs.iter().map(|(l, _, _)| l.read().requests_sent()).sum()
    };
    let (notified_before, sent_before) = (notified(&readers), sent(&readers));

    let released_at = Instant::now();
    guard.release().await.unwrap();
    let mut last = released_at;
    for _ in 0..10 {
        let at = tokio::time::timeout(Duration::from_secs(10), in_rx.recv())
            .await
            .expect("every reader gets in")
            .unwrap();
        last = last.max(at);
    }
    let all_in = last - released_at;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let notifications = notified(&readers) - notified_before;
    let requests = sent(&readers) - sent_before;
    println!(
        "writer's release with 10 readers queued: all 10 in after {all_in:?}, \
         {notifications} notifications, {requests} further requests from the readers"
    );
    assert_eq!(inside.load(Ordering::SeqCst), 10, "all 10 hold at once");
    assert_eq!(notifications, 10, "one per reader, each from the writer");
    assert_eq!(requests, 0, "no reader lists the directory again");
    // The writer's watch on its own node and the ten on it are spent; the
    // readers' on their own nodes stay.
    assert_eq!(server.watch_count(), watches_before + 9);

    let _ = stop_tx.send(());
    drop(stop_tx);
    for (_, _, task) in readers {
        task.await.unwrap();
    }
    assert!(children(&writer_client, DIR).await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_writer_queued_behind_readers_waits_for_exactly_its_predecessor() {
    const DIR: &str = "/rw/pred";
    let server = ZkServer::start();
    let mut readers = Vec::new();
    for _ in 0..3 {
        let c = client(&server).await;
        let guard = ReadWriteLock::new(&c, DIR)
            .unwrap()
            .read()
            .acquire()
            .await
            .unwrap();
        readers.push((c, guard));
    }
    let w = client(&server).await;
    let writer = ReadWriteLock::new(&w, DIR).unwrap();
    let acquired = Arc::new(AtomicBool::new(false));
    let task = {
        let (writer, acquired) = (writer.clone(), acquired.clone());
        tokio::spawn(async move {
            let guard = writer.write().acquire().await.unwrap();
            acquired.store(true, Ordering::SeqCst);
            guard
        })
    };
    // What the writer watches besides its own node (the only `-write-`
    // node here), which it watches too.
    let watched = |server: &ZkServer| {
        let all = watches_by_session(server)
            .remove(&w.session_id().0)
            .unwrap_or_default();
        let own = all.iter().filter(|p| p.contains("-write-")).count();
        let others: Vec<String> = all.into_iter().filter(|p| !p.contains("-write-")).collect();
        if others.is_empty() {
            others
        } else {
            assert_eq!(own, 1, "the writer watches its own node");
            others
        }
    };
    let r3 = readers[2].1.node_path().to_owned();
    wait_until("the writer watching", Duration::from_secs(10), || async {
        !watched(&server).is_empty()
    })
    .await;
    assert_eq!(watched(&server), vec![r3.clone()], "its predecessor only");

    // A release further down the queue does not concern it.
    let (_, r1) = readers.remove(0);
    r1.release().await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(writer.write().notifications(), 0);
    assert!(!acquired.load(Ordering::SeqCst));
    assert_eq!(watched(&server), vec![r3.clone()]);

    // Its predecessor goes: one notification, and it moves to the next.
    let (_, r2) = readers.remove(0);
    let r2_path = r2.node_path().to_owned();
    let (_, r3_guard) = readers.remove(0);
    r3_guard.release().await.unwrap();
    wait_until(
        "the writer watching r2",
        Duration::from_secs(10),
        || async { watched(&server) == vec![r2_path.clone()] },
    )
    .await;
    assert_eq!(writer.write().notifications(), 1);
    assert!(!acquired.load(Ordering::SeqCst), "r2 still reads");

    let released_at = Instant::now();
    r2.release().await.unwrap();
    let guard = tokio::time::timeout(Duration::from_secs(10), task)
        .await
        .expect("the writer gets in")
        .unwrap();
    println!(
        "writer behind 3 readers: woken twice (once per predecessor), in {:?} after the last \
         reader's release",
        released_at.elapsed()
    );
    assert_eq!(writer.write().notifications(), 2);
    guard.release().await.unwrap();
    assert!(children(&w, DIR).await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readers_and_writers_of_every_flavour_exclude_each_other_across_sessions() {
    const DIR: &str = "/rw/mx";
    let server = ZkServer::start();
    let readers_inside = Arc::new(AtomicUsize::new(0));
    let most_readers = Arc::new(AtomicUsize::new(0));
    let writer_inside = Arc::new(AtomicBool::new(false));
    let sections = Arc::new(AtomicUsize::new(0));
    let flavours = [Flavour::Recipes, Flavour::Curator, Flavour::Kazoo];
    let started = Instant::now();
    let mut tasks = Vec::new();
    for i in 0..8 {
        let c = client(&server).await;
        let is_writer = i % 4 == 0;
        let flavour = flavours[i % 3];
        let (readers_inside, most_readers, writer_inside, sections) = (
            readers_inside.clone(),
            most_readers.clone(),
            writer_inside.clone(),
            sections.clone(),
        );
        tasks.push(tokio::spawn(async move {
            let lock = ReadWriteLock::with_flavour(&c, DIR, flavour).unwrap();
            for _ in 0..25 {
                if is_writer {
                    let guard = lock.write().acquire().await.unwrap();
                    assert!(!writer_inside.swap(true, Ordering::SeqCst), "two writers");
                    assert_eq!(
                        readers_inside.load(Ordering::SeqCst),
                        0,
                        "a writer among readers"
                    );
                    tokio::time::sleep(Duration::from_millis(2)).await;
                    writer_inside.store(false, Ordering::SeqCst);
                    guard.release().await.unwrap();
                } else {
                    let guard = lock.read().acquire().await.unwrap();
                    let now = readers_inside.fetch_add(1, Ordering::SeqCst) + 1;
                    most_readers.fetch_max(now, Ordering::SeqCst);
                    assert!(
                        !writer_inside.load(Ordering::SeqCst),
                        "a reader beside a writer"
                    );
                    tokio::time::sleep(Duration::from_millis(5)).await;
                    readers_inside.fetch_sub(1, Ordering::SeqCst);
                    guard.release().await.unwrap();
                }
                sections.fetch_add(1, Ordering::SeqCst);
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let most = most_readers.load(Ordering::SeqCst);
    println!(
        "8 sessions (2 writers, 6 readers, three naming flavours): {} critical sections in \
         {:?}, up to {most} readers at once, never a writer with anyone",
        sections.load(Ordering::SeqCst),
        started.elapsed()
    );
    assert_eq!(sections.load(Ordering::SeqCst), 200);
    assert!(most >= 2, "readers did share");
    let c = client(&server).await;
    assert!(children(&c, DIR).await.is_empty(), "no node left");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revocable_holder_hears_the_request_and_releases_by_consent() {
    const DIR: &str = "/rw/consent";
    let server = ZkServer::start();
    let (a, b, c) = (
        client(&server).await,
        client(&server).await,
        client(&server).await,
    );
    let holder = ReadWriteLock::new(&a, DIR).unwrap();
    let guard = holder.write().acquire_revocable().await.unwrap();
    assert!(!guard.is_revocation_requested());
    let node = guard.node_path().to_owned();
    let waiter = ReadWriteLock::new(&b, DIR).unwrap();
    let waiting = tokio::spawn(async move { waiter.read().acquire().await });
    wait_until("the reader queued", Duration::from_secs(10), || async {
        children(&c, DIR).await.len() == 2
    })
    .await;

    let asked = Instant::now();
    assert_eq!(revoke(&c, &node).await.unwrap(), Revocation::Requested);
    tokio::time::timeout(Duration::from_secs(5), guard.revocation_requested())
        .await
        .expect("the holder hears the request");
    let heard = asked.elapsed();
    assert!(guard.is_held(), "a request is not a loss");
    let (data, _) = c.get_data(&node).await.unwrap();
    assert_eq!(data, b"unlock", "the recipes page's word");
    guard.release().await.unwrap();
    let reading = tokio::time::timeout(Duration::from_secs(10), waiting)
        .await
        .expect("the reader gets in")
        .unwrap()
        .unwrap();
    println!("consent: the holder heard the request {heard:?} after it was asked");
    assert_eq!(
        revoke(&c, &node).await.unwrap(),
        Revocation::NotHeld,
        "the released node is gone"
    );
    reading.release().await.unwrap();
    assert!(children(&c, DIR).await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forced_revocation_deletes_a_holder_that_never_consents_and_it_hears_lost() {
    const DIR: &str = "/rw/forced";
    let server = ZkServer::start();
    let (a, b, c) = (
        client(&server).await,
        client(&server).await,
        client(&server).await,
    );
    // A reader that never consents.
    let stubborn = ReadWriteLock::new(&a, DIR).unwrap();
    let guard = stubborn.read().acquire_revocable().await.unwrap();
    let node = guard.node_path().to_owned();
    let waiter = ReadWriteLock::new(&b, DIR).unwrap();
    let waiting = tokio::spawn(async move { waiter.write().acquire().await });
    wait_until("the writer queued", Duration::from_secs(10), || async {
        children(&c, DIR).await.len() == 2
    })
    .await;

    let grace = Duration::from_millis(500);
    let asked = Instant::now();
    let outcome = revoke_forced(&c, &node, grace).await.unwrap();
    let took = asked.elapsed();
    assert_eq!(outcome, Revocation::Forced);
    assert!(
        took >= grace,
        "the node was deleted after {took:?}, before the grace period"
    );
    assert!(guard.is_revocation_requested(), "it was asked first");
    tokio::time::timeout(Duration::from_secs(5), guard.lost())
        .await
        .expect("the holder hears that its lock is lost");
    let lost_after = asked.elapsed();
    assert_eq!(guard.holding(), Holding::Lost);
    assert!(
        matches!(guard.fenced().commit().await, Err(Error::Fenced)),
        "its fenced writes are refused"
    );
    let writing = tokio::time::timeout(Duration::from_secs(10), waiting)
        .await
        .expect("the writer gets in")
        .unwrap()
        .unwrap();
    println!(
        "forced: node deleted {took:?} after asking (grace {grace:?}), holder told lost after \
         {lost_after:?}"
    );
    guard.release().await.unwrap();
    writing.release().await.unwrap();
    assert!(children(&c, DIR).await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forced_revocation_is_released_in_time_by_a_consenting_holder_and_revokes_a_waiter() {
    const DIR: &str = "/rw/grace";
    let server = ZkServer::start();
    let (a, b, c) = (
        client(&server).await,
        client(&server).await,
        client(&server).await,
    );
    let holder = ReadWriteLock::new(&a, DIR).unwrap();
    let guard = holder.write().acquire_revocable().await.unwrap();
    let node = guard.node_path().to_owned();
    let consenting = tokio::spawn(async move {
        guard.revocation_requested().await;
        tokio::time::sleep(Duration::from_millis(100)).await; // finish the work
        guard.release().await
    });
    // A revocable waiter behind it.
    let waiter = ReadWriteLock::new(&b, DIR).unwrap();
    let waiting = tokio::spawn(async move { waiter.write().acquire_revocable().await });
    wait_until("the waiter queued", Duration::from_secs(10), || async {
        children(&c, DIR).await.len() == 2
    })
    .await;
    let outcome = revoke_forced(&c, &node, Duration::from_secs(10))
        .await
        .unwrap();
    assert_eq!(
        outcome,
        Revocation::Released,
        "consent within the grace period"
    );
    consenting.await.unwrap().unwrap();

    // The waiter took over; now force it out while something else waits.
    let second = tokio::time::timeout(Duration::from_secs(10), waiting)
        .await
        .expect("the waiter gets in")
        .unwrap()
        .unwrap();
    let late = ReadWriteLock::new(&a, DIR).unwrap();
    let late_waiting = tokio::spawn(async move { late.read().acquire_revocable().await });
    wait_until(
        "the late reader queued",
        Duration::from_secs(10),
        || async { children(&c, DIR).await.len() == 2 },
    )
    .await;
    // Forcing out a *waiting* revocable contender fails its acquisition.
    let queued: Vec<String> = children(&c, DIR)
        .await
        .into_iter()
        .filter(|n| !second.node_path().ends_with(n.as_str()))
        .collect();
    assert_eq!(queued.len(), 1);
    let queued_path = format!("{DIR}/{}", queued[0]);
    assert_eq!(
        revoke_forced(&c, &queued_path, Duration::from_millis(50))
            .await
            .unwrap(),
        Revocation::Forced
    );
    let result = tokio::time::timeout(Duration::from_secs(10), late_waiting)
        .await
        .expect("the revoked waiter hears it")
        .unwrap();
    assert!(matches!(result, Err(Error::Revoked)), "{result:?}");
    assert!(second.is_held());
    second.release().await.unwrap();
    assert!(children(&c, DIR).await.is_empty());
}
