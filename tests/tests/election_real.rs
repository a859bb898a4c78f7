//! Leader election through `herdless-std` against a real ZooKeeper 3.8.
//!
//! Each test starts its own server on a free loopback port; sessions that
//! must die are cut off by a proxy for longer than their timeout, so the
//! server expires them for real.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use herdless_std::election::{current_leader, watch_leader, LeaderState};
use herdless_std::{Client, Election, Error, Fenced, Session};
use herdless_tests::{Proxy, ZkServer};

const SESSION: Duration = Duration::from_secs(30);
const SHORT_SESSION: Duration = Duration::from_secs(2);

async fn client(server: &ZkServer) -> Client {
    herdless_std::connect(&server.addr(), SESSION)
        .await
        .expect("connect to the test server")
}

async fn client_behind_proxy(server: &ZkServer) -> (Client, Proxy) {
    let proxy = Proxy::start(server.port());
    let client = herdless_std::connect(&proxy.addr(), SHORT_SESSION)
        .await
        .expect("connect through the proxy");
    (client, proxy)
}

async fn children(client: &Client, dir: &str) -> Vec<String> {
    let mut names = client.list_children(dir).await.unwrap_or_default();
    names.sort();
    names
}

async fn wait_until<F, Fut>(what: &str, timeout: Duration, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + timeout;
    while !check().await {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// When each candidate believed it led: from `Leading` to the first
/// `Suspended`, `Lost` or resignation.
#[derive(Clone, Default)]
struct Beliefs(Arc<Mutex<Vec<Belief>>>);

/// Who, since when, until when.
type Belief = (String, Instant, Option<Instant>);

impl Beliefs {
    fn start(&self, who: &str) -> usize {
        let mut log = self.0.lock().unwrap();
        log.push((who.to_owned(), Instant::now(), None));
        log.len() - 1
    }

    fn end(&self, i: usize) {
        self.0.lock().unwrap()[i].2 = Some(Instant::now());
    }

    /// No two intervals overlap.
    fn assert_disjoint(&self) {
        let log = self.0.lock().unwrap();
        for (i, a) in log.iter().enumerate() {
            for b in &log[i + 1..] {
                let a_end = a.2.unwrap_or_else(Instant::now);
                let b_end = b.2.unwrap_or_else(Instant::now);
                assert!(
                    a_end <= b.1 || b_end <= a.1,
                    "{} and {} both believed they led at once",
                    a.0,
                    b.0
                );
            }
        }
    }
}

/// Campaigns, records the belief, says when it leads, and holds until in
/// doubt or told to stop.
fn spawn_candidate(
    name: &'static str,
    election: Election,
    beliefs: Beliefs,
    mut stop: tokio::sync::watch::Receiver<bool>,
) -> tokio::sync::oneshot::Receiver<Instant> {
    let (led_tx, led) = tokio::sync::oneshot::channel();
    tokio::spawn(async move {
        let leadership = election.campaign().await.expect("campaign");
        let _ = led_tx.send(Instant::now());
        let i = beliefs.start(name);
        let stopped = tokio::select! {
            _ = leadership.suspended() => false,
            _ = async { let _ = stop.wait_for(|s| *s).await; } => true,
        };
        beliefs.end(i);
        if stopped {
            leadership.resign().await.expect("resign");
        }
    });
    led
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_candidates_the_leaders_session_is_killed_and_the_next_one_leads() {
    let server = ZkServer::start();
    let (a, proxy) = client_behind_proxy(&server).await;
    let b = client(&server).await;
    let c = client(&server).await;
    let observer = client(&server).await;
    let dir = "/election/three";
    let beliefs = Beliefs::default();
    let (stop_tx, stop) = tokio::sync::watch::channel(false);

    let election_a = Election::new(&a, dir).unwrap().with_data(b"a").unwrap();
    let leadership_a = election_a.campaign().await.unwrap();
    let belief_a = beliefs.start("a");
    let mut leaders = watch_leader(&observer, dir).unwrap();
    // `campaign` returns as the acknowledgement is written: the observer
    // may first see no leader, for a round trip.
    let first = loop {
        if let Some(leader) = leaders.changed().await.unwrap() {
            break leader;
        }
    };
    assert_eq!(first.data, b"a");
    let task_b = spawn_candidate(
        "b",
        Election::new(&b, dir).unwrap().with_data(b"b").unwrap(),
        beliefs.clone(),
        stop.clone(),
    );
    wait_until("b's node", Duration::from_secs(10), || async {
        children(&observer, dir).await.len() == 3
    })
    .await;
    let task_c = spawn_candidate(
        "c",
        Election::new(&c, dir).unwrap().with_data(b"c").unwrap(),
        beliefs.clone(),
        stop.clone(),
    );
    wait_until("c's node", Duration::from_secs(10), || async {
        children(&observer, dir).await.len() == 4
    })
    .await;
    let leader = current_leader(&observer, dir).await.unwrap().unwrap();
    assert_eq!(leader.data, b"a");
    assert!(leadership_a.node_path().ends_with(&leader.node));

    // The observer's view, timed on its own.
    let observed = tokio::spawn(async move {
        loop {
            if let Some(leader) = leaders.changed().await.unwrap() {
                if leader.data == b"b" {
                    return Instant::now();
                }
            }
        }
    });

    // When a learns it lost, timed on its own.
    let leadership_a = Arc::new(leadership_a);
    let a_lost = {
        let l = leadership_a.clone();
        tokio::spawn(async move {
            l.lost().await;
            Instant::now()
        })
    };

    // Kill a's session: cut it off for good.
    let cut = Instant::now();
    proxy.cut();
    tokio::time::timeout(Duration::from_secs(5), leadership_a.suspended())
        .await
        .expect("a hears Suspended as soon as its connection drops");
    let doubt = cut.elapsed();
    beliefs.end(belief_a);
    assert_eq!(leadership_a.state(), LeaderState::Suspended);
    let led_at = tokio::time::timeout(Duration::from_secs(20), task_b)
        .await
        .expect("b leads once a's session expired")
        .unwrap();
    let takeover = led_at - cut;
    let observed = tokio::time::timeout(Duration::from_secs(5), observed)
        .await
        .expect("the observer sees b lead")
        .unwrap()
        - cut;
    // a cannot hear its expiry from the server (its connection stays cut),
    // yet after its session timeout it knows the session is gone.
    let lost = tokio::time::timeout(Duration::from_secs(10), a_lost)
        .await
        .expect("a declares leadership lost after its session timeout")
        .unwrap()
        - cut;
    println!(
        "leader's session killed (2 s timeout): old leader in doubt after {} ms, \
         declares itself lost after {} ms; next leader leads after {} ms, \
         observers see it after {} ms",
        doubt.as_millis(),
        lost.as_millis(),
        takeover.as_millis(),
        observed.as_millis()
    );
    assert!(doubt < Duration::from_millis(500), "{doubt:?}");
    assert!(takeover >= SHORT_SESSION - Duration::from_millis(200));
    assert_eq!(leadership_a.state(), LeaderState::Lost);
    assert!(!leadership_a.is_leading());

    // A clean resignation hands over in milliseconds.
    let resigned = Instant::now();
    stop_tx.send_replace(true);
    let led_at = tokio::time::timeout(Duration::from_secs(10), task_c)
        .await
        .expect("c leads after b resigns")
        .unwrap();
    println!(
        "a resignation hands over in {:.1} ms",
        (led_at - resigned).as_secs_f64() * 1e3
    );
    beliefs.assert_disjoint();
    wait_until("every node gone", Duration::from_secs(10), || async {
        children(&observer, dir).await.is_empty()
    })
    .await;
    assert_eq!(current_leader(&observer, dir).await.unwrap(), None);
    drop(leadership_a);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_two_candidates_both_believe_they_lead_while_connected() {
    let server = ZkServer::start();
    let dir = "/election/churn";
    let beliefs = Beliefs::default();
    let mut tasks = Vec::new();
    for k in 0..6 {
        // Half the candidates sit behind proxies that cut them off now and
        // then (shorter than the session timeout: suspensions, not expiry).
        let (client, proxy) = if k % 2 == 0 {
            let (c, p) = client_behind_proxy(&server).await;
            (c, Some(p))
        } else {
            (client(&server).await, None)
        };
        let beliefs = beliefs.clone();
        tasks.push(tokio::spawn(async move {
            let election = Election::new(&client, dir).unwrap();
            let (mut terms, mut cuts) = (0, 0);
            for round in 0..8 {
                let leadership = election.campaign().await.unwrap();
                let i = beliefs.start(&format!("candidate {k}"));
                terms += 1;
                if let Some(proxy) = &proxy {
                    if round % 3 == 0 {
                        cuts += 1;
                        proxy.cut();
                        leadership.suspended().await;
                        beliefs.end(i);
                        tokio::time::sleep(Duration::from_millis(300)).await;
                        proxy.restore();
                        leadership.resign().await.unwrap();
                        continue;
                    }
                }
                tokio::time::sleep(Duration::from_millis(5)).await;
                beliefs.end(i);
                leadership.resign().await.unwrap();
            }
            (terms, cuts)
        }));
    }
    let (mut terms, mut cuts) = (0, 0);
    for t in tasks {
        let (t, c) = tokio::time::timeout(Duration::from_secs(60), t)
            .await
            .expect("every candidate gets its terms")
            .unwrap();
        terms += t;
        cuts += c;
    }
    println!("{terms} terms of 6 candidates, {cuts} of them cut off mid-term");
    assert_eq!(terms, 48);
    beliefs.assert_disjoint();
    let c = client(&server).await;
    assert!(children(&c, dir).await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_candidate_that_gives_up_while_waiting_leaves_no_node() {
    let server = ZkServer::start();
    let a = client(&server).await;
    let b = client(&server).await;
    let dir = "/election/give-up";
    let leadership = Election::new(&a, dir).unwrap().campaign().await.unwrap();
    let election_b = Election::new(&b, dir).unwrap();

    // A campaign abandoned under tokio::time::timeout (CURATOR-79).
    let dropped = tokio::time::timeout(Duration::from_millis(300), election_b.campaign()).await;
    assert!(dropped.is_err(), "a still leads");
    wait_until(
        "the abandoned node to go",
        Duration::from_secs(5),
        || async { children(&a, dir).await.len() == 2 },
    )
    .await;

    // The core's deadline answers only once its node is gone.
    let started = Instant::now();
    let timed_out = election_b
        .campaign_timeout(Duration::from_millis(200))
        .await
        .unwrap();
    assert!(timed_out.is_none());
    assert!(started.elapsed() >= Duration::from_millis(200));
    let left = children(&a, dir).await;
    assert_eq!(left.len(), 2, "a's node and the acknowledgement: {left:?}");
    assert!(left.contains(&"leader".to_owned()));

    // A leadership dropped without resigning still resigns.
    drop(leadership);
    let next = tokio::time::timeout(Duration::from_secs(5), election_b.campaign())
        .await
        .expect("b leads after a's leadership is dropped")
        .unwrap();
    next.resign().await.unwrap();
    assert!(children(&a, dir).await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resignation_with_ten_candidates_waiting_wakes_exactly_one() {
    let server = ZkServer::start();
    let dir = "/election/herd";
    let a = client(&server).await;
    let leadership = Election::new(&a, dir).unwrap().campaign().await.unwrap();
    // The leader's own watches (its node, the acknowledgement) settle first.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let watches_before = server.watch_count();
    let mut waiting = Vec::new();
    for _ in 0..10 {
        let c = client(&server).await;
        let election = Election::new(&c, dir).unwrap();
        let e = election.clone();
        waiting.push((election, c, tokio::spawn(async move { e.campaign().await })));
    }
    wait_until(
        "10 candidates watching",
        Duration::from_secs(20),
        // Each candidate watches its predecessor and its own node.
        || async { server.watch_count() == watches_before + 20 },
    )
    .await;
    let before: u64 = waiting.iter().map(|(e, _, _)| e.notifications()).sum();
    let resigned = Instant::now();
    leadership.resign().await.unwrap();
    let mut next = None;
    wait_until("the next leader", Duration::from_secs(10), || {
        let done = waiting.iter().position(|(_, _, t)| t.is_finished());
        next = done;
        async move { done.is_some() }
    })
    .await;
    let handover = resigned.elapsed();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let woken = waiting
        .iter()
        .map(|(e, _, _)| e.notifications())
        .sum::<u64>()
        - before;
    println!(
        "one resignation with 10 candidates waiting: {woken} notification, next leader in {:.1} ms",
        handover.as_secs_f64() * 1e3
    );
    assert_eq!(woken, 1);
    let (_, _, task) = waiting.remove(next.unwrap());
    task.await.unwrap().unwrap().resign().await.unwrap();
    for (_, _, task) in waiting {
        task.await.unwrap().unwrap().resign().await.unwrap();
    }
    assert!(children(&a, dir).await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fenced_work_under_leadership_fails_once_the_leaders_session_expired() {
    let server = ZkServer::start();
    let (leader_client, proxy) = client_behind_proxy(&server).await;
    let worker = client(&server).await;
    let successor = client(&server).await;
    let dir = "/election/fenced";
    worker
        .create(
            "/primary",
            b"none",
            &zookeeper_client::CreateMode::Persistent
                .with_acls(zookeeper_client::Acls::anyone_all()),
        )
        .await
        .unwrap();
    let leadership = Election::new(&leader_client, dir)
        .unwrap()
        .campaign()
        .await
        .unwrap();

    // Over the leader's own session.
    let mut batch = leadership.fenced();
    batch.set_data("/primary", b"leader-1", None).unwrap();
    batch.commit().await.expect("fenced write while leading");

    // A worker keeps writing over its own session, fenced on the leader's
    // node, while the leader's session expires mid-work.
    let fence = leadership.node_path().to_owned();
    let work = {
        let worker = worker.clone();
        tokio::spawn(async move {
            let mut landed = 0u32;
            loop {
                let mut batch = Fenced::on(&worker, &fence).unwrap();
                batch
                    .set_data("/primary", format!("work-{landed}").as_bytes(), None)
                    .unwrap();
                match batch.commit().await {
                    Ok(_) => landed += 1,
                    Err(Error::Fenced) => return landed,
                    Err(e) => panic!("unexpected error from a fenced write: {e}"),
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
    };
    tokio::time::sleep(Duration::from_millis(200)).await;
    proxy.cut();
    let next = tokio::time::timeout(
        Duration::from_secs(20),
        Election::new(&successor, dir).unwrap().campaign(),
    )
    .await
    .expect("the successor leads once the old leader's session expired")
    .unwrap();
    let landed = tokio::time::timeout(Duration::from_secs(10), work)
        .await
        .expect("the worker hits the fence")
        .unwrap();
    assert!(landed > 0, "the worker wrote while the leader led");

    let mut batch = next.fenced();
    batch.set_data("/primary", b"successor", None).unwrap();
    batch.commit().await.unwrap();
    let mut late = Fenced::on(&worker, leadership.node_path()).unwrap();
    late.set_data("/primary", b"late", None).unwrap();
    assert_eq!(late.commit().await.unwrap_err(), Error::Fenced);

    // The old leader knows it lost (its session timeout passed while cut
    // off); its own batch fails without a round trip.
    tokio::time::timeout(Duration::from_secs(10), leadership.lost())
        .await
        .expect("the old leader hears Lost");
    let mut stale = leadership.fenced();
    stale.set_data("/primary", b"stale", None).unwrap();
    assert_eq!(stale.commit().await.unwrap_err(), Error::Fenced);
    let (data, _) = worker.get_data("/primary").await.unwrap();
    assert_eq!(data, b"successor");
    proxy.restore();
    next.resign().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiting_candidate_on_a_session_campaigns_on_after_its_session_expired() {
    let server = ZkServer::start();
    let a = client(&server).await;
    let proxy = Proxy::start(server.port());
    let session = Session::connect(&proxy.addr(), SHORT_SESSION)
        .await
        .unwrap();
    let dir = "/election/renewed";
    let leadership = Election::new(&a, dir).unwrap().campaign().await.unwrap();
    let election_b = Election::new(&session, dir).unwrap();
    let waiting = tokio::spawn(async move { election_b.campaign().await });
    wait_until("b's node", Duration::from_secs(10), || async {
        children(&a, dir).await.len() == 3
    })
    .await;
    let first = session.session_id();
    proxy.cut();
    tokio::time::sleep(SHORT_SESSION + Duration::from_millis(1500)).await;
    proxy.restore();
    tokio::time::timeout(Duration::from_secs(20), session.renewed(first))
        .await
        .expect("a new session is opened");
    wait_until(
        "b's node on the new session",
        Duration::from_secs(10),
        || async { children(&a, dir).await.len() == 3 },
    )
    .await;
    leadership.resign().await.unwrap();
    let led = tokio::time::timeout(Duration::from_secs(10), waiting)
        .await
        .expect("b leads on its new session")
        .unwrap()
        .unwrap();
    let (_, stat) = a.get_data(led.node_path()).await.unwrap();
    assert_eq!(stat.ephemeral_owner, session.session_id());
    assert_ne!(stat.ephemeral_owner, first);
    led.resign().await.unwrap();
    assert!(children(&a, dir).await.is_empty());
}
