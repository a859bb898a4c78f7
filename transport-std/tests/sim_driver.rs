//! What herdless-std's driver owes every recipe, on the in-memory
//! ZooKeeper: a dropped guard releases, a dropped wait withdraws, a watch
//! the client loses is set again, a renewing session carries a campaign
//! over, a guard tells a suspension from a holding, and a recipe made while
//! its client is disconnected does its work once it is back. Every test runs on
//! tokio's paused clock: its limits pass in virtual time.

use std::future::Future;
use std::time::Duration;

use herdless_std::barrier::DoubleBarrier;
use herdless_std::queue::Queue;
use herdless_std::sim::{SimServer, SimSession};
use herdless_std::{Acl, Connection, Election, Error, GroupMember, Holding, Lock, WithAcl};
use tokio::time::{sleep, timeout};

mod support;
use support::{acquiring, alive_tasks, under, within, MS};

const DIR: &str = "/locks/driver";

// ---- handles dropped ----

#[tokio::test(start_paused = true)]
async fn a_dropped_guard_releases_the_lock() {
    let zk = SimServer::new();
    let (a, b) = (zk.connect(), zk.connect());
    let guard = Lock::new(&a, DIR).unwrap().acquire().await.unwrap();
    drop(guard);
    let next = within(
        Duration::from_secs(1),
        "b acquires after a dropped its guard",
        Lock::new(&b, DIR).unwrap().acquire(),
    )
    .await
    .unwrap();
    assert_eq!(under(&zk, DIR), [next.node_path().to_owned()]);
    next.release().await.unwrap();
    assert!(under(&zk, DIR).is_empty());
}

/// An `acquire` given up by dropping its future (here by a timeout around
/// it) takes its node away: it never acquires behind the caller's back
/// and blocks no one.
#[tokio::test(start_paused = true)]
async fn a_dropped_acquire_withdraws_and_blocks_no_one() {
    let zk = SimServer::new();
    let (a, b, c) = (zk.connect(), zk.connect(), zk.connect());
    let guard = Lock::new(&a, DIR).unwrap().acquire().await.unwrap();
    let lock_b = Lock::new(&b, DIR).unwrap();
    assert!(timeout(50 * MS, lock_b.acquire()).await.is_err());
    sleep(50 * MS).await;
    assert_eq!(
        under(&zk, DIR),
        [guard.node_path().to_owned()],
        "b's node is gone"
    );
    guard.release().await.unwrap();
    let next = within(
        Duration::from_secs(1),
        "c acquires",
        Lock::new(&c, DIR).unwrap().acquire(),
    )
    .await
    .unwrap();
    assert_eq!(under(&zk, DIR), [next.node_path().to_owned()]);
    next.release().await.unwrap();
}

// ---- a guard's standing ----

#[tokio::test(start_paused = true)]
async fn suspended_waits_for_a_disconnection_and_lost_for_the_end() {
    let zk = SimServer::new().with_session_timeout(Duration::from_secs(4));
    let a = zk.connect();
    let guard = Lock::new(&a, DIR).unwrap().acquire().await.unwrap();
    assert!(
        timeout(Duration::from_secs(1), guard.suspended())
            .await
            .is_err(),
        "suspended while connected"
    );
    assert_eq!(guard.holding(), Holding::Held);
    zk.disconnect(a.session_id(), Duration::from_secs(1));
    within(100 * MS, "suspended", guard.suspended()).await;
    assert_eq!(guard.holding(), Holding::Suspended);
    assert!(
        timeout(Duration::from_secs(2), guard.lost()).await.is_err(),
        "lost though the session came back"
    );
    assert_eq!(guard.holding(), Holding::Held, "held again");
    zk.expire(a.session_id());
    within(100 * MS, "lost", guard.lost()).await;
    assert_eq!(guard.holding(), Holding::Lost);
    within(100 * MS, "suspended once lost", guard.suspended()).await;
}

/// `settled` answers at once while held, waits out a suspension, and
/// tells which way it ended: held again when the session came back, lost
/// when it expired.
#[tokio::test(start_paused = true)]
async fn settled_waits_out_a_suspension_and_tells_its_end() {
    let zk = SimServer::new().with_session_timeout(Duration::from_secs(4));
    let a = zk.connect();
    let guard = Lock::new(&a, DIR).unwrap().acquire().await.unwrap();
    assert_eq!(
        within(MS, "settled while held", guard.settled()).await,
        Holding::Held
    );

    zk.disconnect(a.session_id(), Duration::from_secs(1));
    within(100 * MS, "suspended", guard.suspended()).await;
    assert!(
        timeout(500 * MS, guard.settled()).await.is_err(),
        "settled while the connection is still down"
    );
    let back = within(
        Duration::from_secs(2),
        "settled after the reconnect",
        guard.settled(),
    );
    assert_eq!(back.await, Holding::Held);

    zk.disconnect(a.session_id(), Duration::from_secs(10));
    within(100 * MS, "suspended again", guard.suspended()).await;
    let end = within(
        Duration::from_secs(6),
        "settled by the expiry",
        guard.settled(),
    );
    assert_eq!(end.await, Holding::Lost);
}

// ---- watches the client loses ----

/// The lost watch is set again: the node has not changed, so the waiter
/// hears nothing until the holder releases, and then it hears it.
#[tokio::test(start_paused = true)]
async fn a_waiter_whose_watch_was_lost_hears_the_next_release() {
    let zk = SimServer::new();
    let (a, b) = (zk.connect(), zk.connect());
    let guard = Lock::new(&a, DIR).unwrap().acquire().await.unwrap();
    let waiting = acquiring(&b, DIR);
    sleep(20 * MS).await;
    let listings = zk.requests()["getChildren"];
    assert!(zk.lose_watchers(b.session_id()) > 0, "b was watching");
    sleep(20 * MS).await;
    assert!(!waiting.is_finished(), "acquired while held");
    assert_eq!(
        zk.requests()["getChildren"],
        listings,
        "nothing changed, so b heard nothing and listed nothing"
    );
    guard.release().await.unwrap();
    let next = within(Duration::from_secs(1), "b acquires", waiting)
        .await
        .unwrap()
        .unwrap();
    next.release().await.unwrap();
    assert!(under(&zk, DIR).is_empty());
}

/// The release comes while the watch is being set again: the read that
/// sets it finds the node gone, and the waiter hears the deletion it
/// missed.
#[tokio::test(start_paused = true)]
async fn a_waiter_whose_watch_was_lost_hears_a_release_it_missed() {
    let zk = SimServer::new();
    let (a, b) = (zk.connect(), zk.connect());
    let guard = Lock::new(&a, DIR).unwrap().acquire().await.unwrap();
    let waiting = acquiring(&b, DIR);
    sleep(20 * MS).await;
    zk.hold(b.session_id());
    assert!(zk.lose_watchers(b.session_id()) > 0, "b was watching");
    sleep(20 * MS).await;
    assert!(
        zk.in_flight(b.session_id()) > 0,
        "the reads setting them again"
    );
    guard.release().await.unwrap();
    zk.release(b.session_id());
    let next = within(Duration::from_secs(1), "b acquires", waiting)
        .await
        .unwrap()
        .unwrap();
    next.release().await.unwrap();
}

/// A child watch likewise: a consumer waiting on an empty queue takes
/// the item put after its watch was lost, and the one put while the
/// watch was being set again.
#[tokio::test(start_paused = true)]
async fn a_consumer_whose_child_watch_was_lost_takes_what_comes() {
    const QUEUE: &str = "/app/driver-jobs";
    let zk = SimServer::new();
    let (p, c) = (zk.connect(), zk.connect());
    let producer = Queue::new(&p, QUEUE).await.unwrap();
    let mut consumer = Queue::new(&c, QUEUE).await.unwrap();
    for (n, missed) in [(0, false), (1, true)] {
        let taking = tokio::spawn(async move {
            let item = consumer.take().await;
            (consumer, item)
        });
        sleep(20 * MS).await;
        if missed {
            zk.hold(c.session_id());
        }
        assert!(
            zk.lose_watchers(c.session_id()) > 0,
            "the consumer was watching"
        );
        sleep(20 * MS).await;
        assert!(!taking.is_finished());
        producer.put(format!("job-{n}").as_bytes()).await.unwrap();
        if missed {
            zk.release(c.session_id());
        }
        let (back, item) = within(Duration::from_secs(1), "the take", taking)
            .await
            .unwrap();
        consumer = back;
        let item = item.unwrap();
        assert_eq!(item.data, format!("job-{n}").as_bytes());
    }
}

// ---- a renewing session ----

/// A candidate waiting its turn on a renewing session whose session
/// expires volunteers again on the next one, and leads when the leader
/// resigns.
#[tokio::test(start_paused = true)]
async fn a_campaign_carries_over_to_the_renewed_session() {
    const ELECTION: &str = "/election/driver";
    let zk = SimServer::new();
    let a = zk.connect();
    let session = zk.session();
    let leading = Election::new(&a, ELECTION)
        .unwrap()
        .campaign()
        .await
        .unwrap();
    let campaigning = tokio::spawn({
        let session = session.clone();
        async move { Election::new(&session, ELECTION).unwrap().campaign().await }
    });
    sleep(20 * MS).await;
    let old = session.session_id();
    zk.expire(old);
    within(Duration::from_secs(1), "the renewal", session.renewed(old)).await;
    sleep(50 * MS).await;
    assert!(!campaigning.is_finished(), "led while a leads");
    let mut nodes = under(&zk, ELECTION);
    // The candidates' nodes, not the leader's record.
    nodes.retain(|n| n.contains("-n_"));
    assert_eq!(
        nodes.len(),
        2,
        "a's node and one on the new session: {nodes:?}"
    );
    let owners: Vec<i64> = nodes
        .iter()
        .map(|n| zk.node(n).unwrap().stat.ephemeral_owner)
        .collect();
    assert!(owners.contains(&session.session_id()), "{owners:?}");
    leading.resign().await.unwrap();
    let second = within(Duration::from_secs(1), "the candidate leads", campaigning)
        .await
        .unwrap()
        .unwrap();
    second.resign().await.unwrap();
    assert!(under(&zk, ELECTION).is_empty());
}

/// A waiting acquire on a renewing session whose session expired queues
/// again on the next one, as a campaign does: `SessionEnded` there means no
/// session follows, and one does.
#[tokio::test(start_paused = true)]
async fn a_waiting_acquire_carries_over_to_the_renewed_session() {
    const DIR: &str = "/locks/renewal";
    let zk = SimServer::new();
    let a = zk.connect();
    let held = Lock::new(&a, DIR).unwrap().acquire().await.unwrap();
    let session = zk.session();
    let acquiring = tokio::spawn({
        let session = session.clone();
        async move { Lock::new(&session, DIR).unwrap().acquire().await }
    });
    sleep(20 * MS).await;
    let old = session.session_id();
    zk.expire(old);
    within(Duration::from_secs(1), "the renewal", session.renewed(old)).await;
    sleep(50 * MS).await;
    assert!(!acquiring.is_finished(), "ended while a holds the lock");
    let mut owners: Vec<i64> = under(&zk, DIR)
        .iter()
        .map(|n| zk.node(n).unwrap().stat.ephemeral_owner)
        .collect();
    owners.sort();
    let mut expected = [a.session_id(), session.session_id()];
    expected.sort();
    assert_eq!(owners, expected, "a's node and one on the new session");
    held.release().await.unwrap();
    let guard = within(Duration::from_secs(1), "the acquire", acquiring)
        .await
        .unwrap()
        .unwrap();
    guard.release().await.unwrap();
    assert!(under(&zk, DIR).is_empty());
}

/// A queue made while its session expires is made on the next one, and a
/// take waiting when its session expires goes on on the next one.
#[tokio::test(start_paused = true)]
async fn a_queue_carries_over_to_the_renewed_session() {
    const DIR: &str = "/app/renewal";
    let zk = SimServer::new();
    let session = zk.session();
    let first = session.session_id();
    zk.hold(first);
    let making = tokio::spawn({
        let session = session.clone();
        async move { Queue::new(&session, DIR).await }
    });
    sleep(20 * MS).await;
    assert!(zk.in_flight(first) > 0, "the directory's create is held");
    zk.expire(first);
    let queue = within(Duration::from_secs(1), "the queue", making)
        .await
        .unwrap()
        .unwrap();
    assert_ne!(session.session_id(), first);
    assert!(zk.node(DIR).is_some());

    let taking = tokio::spawn(async move { queue.take().await });
    sleep(20 * MS).await;
    let second = session.session_id();
    zk.expire(second);
    within(
        Duration::from_secs(1),
        "the renewal",
        session.renewed(second),
    )
    .await;
    sleep(50 * MS).await;
    assert!(!taking.is_finished(), "the take ended with its session");
    let other = zk.connect();
    Queue::new(&other, DIR)
        .await
        .unwrap()
        .put(b"job")
        .await
        .unwrap();
    let item = within(Duration::from_secs(1), "the take", taking)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(item.data, b"job");
    assert!(item.certain);
}

/// A process entering a double barrier on a renewing session whose
/// session expires enters again on the next one: its node went with the
/// session, and the barrier opens once the other process arrives.
#[tokio::test(start_paused = true)]
async fn an_enter_carries_over_to_the_renewed_session() {
    const DIR: &str = "/gate/renewal";
    let zk = SimServer::new();
    let session = zk.session();
    let entering = tokio::spawn({
        let session = session.clone();
        async move {
            let barrier = DoubleBarrier::new(&session, DIR, "p0").unwrap();
            barrier.enter(2).await.map(|_| ())
        }
    });
    sleep(20 * MS).await;
    let old = session.session_id();
    zk.expire(old);
    within(Duration::from_secs(1), "the renewal", session.renewed(old)).await;
    sleep(50 * MS).await;
    assert!(!entering.is_finished(), "the enter ended with its session");
    let owner = zk
        .node(&format!("{DIR}/p0"))
        .map(|n| n.stat.ephemeral_owner);
    assert_eq!(owner, Some(session.session_id()), "p0 entered again");
    let other = zk.connect();
    let second = DoubleBarrier::new(&other, DIR, "p1").unwrap();
    let (first, second) = tokio::join!(
        within(Duration::from_secs(1), "p0 enters", entering),
        within(Duration::from_secs(1), "p1 enters", second.enter(2)),
    );
    first.unwrap().unwrap();
    let _inside = second.unwrap();
}

/// A timeout past the end of the clock is no deadline, not a panic.
#[tokio::test(start_paused = true)]
async fn the_longest_timeouts_wait_without_a_deadline() {
    let zk = SimServer::new();
    let c = zk.connect();
    let guard = Lock::new(&c, "/locks/max")
        .unwrap()
        .acquire_timeout(Duration::MAX)
        .await
        .unwrap();
    assert!(guard.is_some());
    let leading = Election::new(&c, "/election/max")
        .unwrap()
        .campaign_timeout(Duration::MAX)
        .await
        .unwrap();
    assert!(leading.is_some());
}

// ---- nothing left behind ----

/// Recipes' tasks end once their handles are gone and their session is
/// over for good (a session that is not renewed): nothing lingers, whatever
/// the recipe was doing when the session ended.
#[tokio::test(start_paused = true)]
async fn recipes_on_an_ended_session_leave_no_task_behind() {
    let zk = SimServer::new();
    let (a, b) = (zk.connect(), zk.connect());
    let before = alive_tasks();
    let member = GroupMember::join(&a, "/fleet/driver", "edge-1", b"")
        .await
        .unwrap();
    // Inside a double barrier that waits for a second process.
    let entering = tokio::spawn({
        let a = a.clone();
        async move {
            let barrier = DoubleBarrier::new(&a, "/app/driver-phase", "p0").unwrap();
            let entered = barrier.enter(2).await.is_ok();
            entered
        }
    });
    // A lock waiter and a consumer waiting on an empty queue.
    let held = Lock::new(&b, DIR).unwrap().acquire().await.unwrap();
    let waiting = acquiring(&a, DIR);
    let consumer = Queue::new(&a, "/app/driver-queue").await.unwrap();
    sleep(50 * MS).await;
    assert!(alive_tasks() > before + 4, "the recipes run in tasks");
    zk.expire(a.session_id());
    sleep(100 * MS).await;
    drop((member, consumer));
    entering.abort();
    waiting.abort();
    held.release().await.unwrap();
    sleep(100 * MS).await;
    assert_eq!(alive_tasks(), before, "every recipe's task is gone");
}

/// A handle whose session is over for good (one that is not renewed)
/// answers every call with `SessionEnded` at once, as long as it lives:
/// nothing hangs, and its task is still there to answer.
#[tokio::test(start_paused = true)]
async fn calls_on_an_ended_session_fail_at_once() {
    let zk = SimServer::new();
    let a = zk.connect();
    let queue = Queue::new(&a, "/app/driver-queue").await.unwrap();
    zk.expire(a.session_id());
    sleep(100 * MS).await;
    for _ in 0..2 {
        assert!(matches!(
            within(100 * MS, "a put", queue.put(b"x")).await,
            Err(Error::SessionEnded)
        ));
        assert!(matches!(
            within(
                100 * MS,
                "a take",
                queue.take_timeout(Duration::from_secs(5))
            )
            .await,
            Err(Error::SessionEnded)
        ));
    }
    assert!(matches!(
        within(
            100 * MS,
            "an acquire",
            Lock::new(&a, DIR).unwrap().acquire()
        )
        .await,
        Err(Error::SessionEnded)
    ));
    let late = within(100 * MS, "a new queue", Queue::new(&a, "/app/late")).await;
    assert!(matches!(late, Err(Error::SessionEnded)), "{late:?}");
}

/// A timed campaign on a renewing session whose session expired waits for
/// the next session only until its deadline: `None` then, as for any
/// campaign that did not lead in time. On a session closed for good it
/// fails with `SessionEnded` at once, deadline or not.
#[tokio::test(start_paused = true)]
async fn a_timed_campaign_waits_for_a_renewal_only_until_its_deadline() {
    const ELECTION: &str = "/election/renewal-deadline";
    let zk = SimServer::new();
    let a = zk.connect();
    let _leading = Election::new(&a, ELECTION)
        .unwrap()
        .campaign()
        .await
        .unwrap();
    waits_for_a_renewal_only_until_its_deadline(&zk, |session, timeout| async move {
        let election = Election::new(&session, ELECTION).unwrap();
        election
            .campaign_timeout(timeout)
            .await
            .map(|l| l.is_some())
    })
    .await;
}

/// The same for a timed acquire, with one deadline across sessions.
#[tokio::test(start_paused = true)]
async fn a_timed_acquire_waits_for_a_renewal_only_until_its_deadline() {
    const DIR: &str = "/locks/renewal-deadline";
    let zk = SimServer::new();
    let a = zk.connect();
    let _held = Lock::new(&a, DIR).unwrap().acquire().await.unwrap();
    waits_for_a_renewal_only_until_its_deadline(&zk, |session, timeout| async move {
        let lock = Lock::new(&session, DIR).unwrap();
        lock.acquire_timeout(timeout).await.map(|g| g.is_some())
    })
    .await;
}

/// `attempt` (whether it got what it waited for, within a timeout) on a
/// renewing session while someone else holds: its session expires and the
/// server refuses the next one, so it gives up at its deadline and not
/// later; on a session closed, at once with `SessionEnded`.
async fn waits_for_a_renewal_only_until_its_deadline<F, Fut>(zk: &SimServer, attempt: F)
where
    F: Fn(SimSession, Duration) -> Fut,
    Fut: Future<Output = Result<bool, Error>> + Send + 'static,
{
    let session = zk.session();
    let started = tokio::time::Instant::now();
    let waiting = tokio::spawn(attempt(session.clone(), 500 * MS));
    sleep(20 * MS).await;
    zk.refuse_sessions(true);
    zk.expire(session.session_id());
    let outcome = within(Duration::from_secs(2), "the attempt", waiting)
        .await
        .unwrap();
    assert!(matches!(outcome, Ok(false)), "{outcome:?}");
    let waited = started.elapsed();
    assert!(waited >= 500 * MS, "gave up before its deadline");
    assert!(
        waited < 600 * MS,
        "one deadline across sessions: {waited:?}"
    );
    zk.refuse_sessions(false);

    let closing = zk.session();
    let waiting = tokio::spawn(attempt(closing.clone(), Duration::from_secs(5)));
    sleep(20 * MS).await;
    closing.client().close();
    let outcome = within(Duration::from_secs(1), "the attempt", waiting)
        .await
        .unwrap();
    assert!(matches!(outcome, Err(Error::SessionEnded)), "{outcome:?}");
}

/// A leadership dropped while its connection fails: the resignation is
/// retried on the reconnected session, so the next candidate leads.
#[tokio::test(start_paused = true)]
async fn a_leadership_dropped_during_a_connection_loss_still_resigns() {
    const ELECTION: &str = "/election/dropped";
    let zk = SimServer::new();
    let (a, b) = (zk.connect(), zk.connect());
    let leading = Election::new(&a, ELECTION)
        .unwrap()
        .campaign()
        .await
        .unwrap();
    let next = tokio::spawn({
        let b = b.clone();
        async move { Election::new(&b, ELECTION).unwrap().campaign().await }
    });
    sleep(20 * MS).await;
    zk.hold(a.session_id());
    drop(leading);
    sleep(20 * MS).await;
    assert!(
        zk.in_flight(a.session_id()) > 0,
        "the resignation is in flight"
    );
    zk.fail_in_flight(a.session_id());
    let second = within(Duration::from_secs(1), "b leads", next)
        .await
        .unwrap()
        .unwrap();
    second.resign().await.unwrap();
}

/// An acknowledgement an operator overwrote with something unreadable is
/// no leader: the observer reports `None` rather than keep the old one.
#[tokio::test(start_paused = true)]
async fn an_unreadable_acknowledgement_is_no_leader() {
    const ELECTION: &str = "/election/unreadable";
    let zk = SimServer::new();
    // Written by hand: a leader would write its acknowledgement again.
    zk.create("/election", b"").unwrap();
    zk.create(ELECTION, b"").unwrap();
    zk.create(&format!("{ELECTION}/leader"), b"n_0000000007\nedge-7")
        .unwrap();
    let o = zk.connect();
    let mut observer = herdless_std::election::watch_leader(&o, ELECTION).unwrap();
    assert!(format!("{observer:?}").contains(ELECTION));
    let first = within(Duration::from_secs(1), "the leader", observer.changed()).await;
    assert_eq!(first.unwrap().unwrap().data, b"edge-7");
    zk.set_data(&format!("{ELECTION}/leader"), b"not an acknowledgement")
        .unwrap();
    let next = within(Duration::from_secs(1), "the change", observer.changed()).await;
    assert_eq!(next.unwrap(), None);
    assert_eq!(observer.current(), None);
}

/// Code written against `&impl Connection` sees each connection's current
/// session: a client's own, a renewing session's latest, and the wrapped
/// one's through `WithAcl`.
#[tokio::test(start_paused = true)]
async fn every_connection_tells_its_current_session() {
    fn id(conn: &impl Connection) -> i64 {
        conn.session_id()
    }
    let zk = SimServer::new();
    let (_first, client) = (zk.connect(), zk.connect());
    assert_eq!(id(&client), client.session_id());
    let session = zk.session();
    let before = id(&session);
    assert_eq!(before, session.session_id());
    assert_ne!(before, client.session_id());
    let secured = WithAcl::new(session.clone(), Acl::CREATOR_ALL);
    assert_eq!((id(&secured), secured.acl()), (before, Acl::CREATOR_ALL));
    assert_eq!(secured.inner().session_id(), before);

    zk.expire(before);
    within(
        Duration::from_secs(1),
        "the renewal",
        session.renewed(before),
    )
    .await;
    assert_ne!(id(&secured), before);
    assert_eq!(id(&secured), session.session_id());
}

/// While the server refuses new sessions, a renewing session stays on the
/// expired one and keeps trying; once the server accepts, the next
/// session comes within the longest pause between attempts (2 s).
#[tokio::test(start_paused = true)]
async fn a_renewing_session_tries_again_until_the_server_accepts() {
    let zk = SimServer::new();
    let session = zk.session();
    let first = session.session_id();
    let shown = format!("{session:?}");
    assert!(shown.contains(&first.to_string()), "{shown}");
    zk.refuse_sessions(true);
    zk.expire(first);
    let renewed = timeout(Duration::from_secs(5), session.renewed(first)).await;
    assert!(
        renewed.is_err(),
        "renewed while the server refused sessions"
    );
    assert_eq!(session.session_id(), first);
    zk.refuse_sessions(false);
    within(
        Duration::from_millis(2100),
        "the renewal once the server accepts",
        session.renewed(first),
    )
    .await;
    assert_ne!(session.session_id(), first);
}

// ---- started while the connection is down ----

/// A recipe made while its client is disconnected (its server just went
/// away, say) does its work once the client is back: the driver hands the
/// recipe its first requests before it tells it the connection is down, so
/// the recipe counts them lost and sends them again. Told first, a
/// watcher's first read was dropped unsent and never made again: the
/// watcher heard nothing, for as long as the session lived.
#[tokio::test(start_paused = true)]
async fn recipes_started_while_disconnected_do_their_work_once_reconnected() {
    use herdless_std::config::Config;
    use herdless_std::election::watch_leader;
    use herdless_std::group::GroupObserver;
    let zk = SimServer::new().with_session_timeout(Duration::from_secs(4));
    zk.create("/cfg", b"v1").unwrap();
    let leader = zk.connect();
    let leading = Election::new(&leader, "/e")
        .unwrap()
        .campaign()
        .await
        .unwrap();
    let member = zk.connect();
    let _member = GroupMember::join(&member, "/g", "m1", b"").await.unwrap();
    let a = zk.connect();
    let down = Duration::from_secs(1);
    zk.disconnect(a.session_id(), down);
    let mut config = Config::watch(&a, "/cfg").unwrap();
    let mut leaders = watch_leader(&a, "/e").unwrap();
    let mut members = GroupObserver::start(&a, "/g").unwrap();
    let lock = Lock::new(&a, DIR).unwrap();
    let limit = down * 2;
    let value = within(limit, "the config's first value", config.wait_present())
        .await
        .unwrap();
    assert_eq!(value.data, b"v1");
    let seen = within(limit, "the leader", leaders.changed())
        .await
        .unwrap();
    let node = seen.expect("a leader").node;
    assert_eq!(leading.node_path(), format!("/e/{node}"));
    let change = within(limit, "the members", members.changed())
        .await
        .unwrap();
    assert_eq!(change.joined, ["m1"]);
    drop(within(limit, "the lock", lock.acquire()).await.unwrap());
}

/// The same for the recipes whose work starts with the call that makes
/// them: each is made while its client is down, and finishes once it is
/// back.
#[tokio::test(start_paused = true)]
async fn work_begun_while_disconnected_finishes_once_reconnected() {
    use herdless_std::barrier::Barrier;
    let zk = SimServer::new().with_session_timeout(Duration::from_secs(4));
    zk.create("/q", b"").unwrap();
    zk.create("/q/qn-0000000000", b"item").unwrap();
    let a = zk.connect();
    let down = Duration::from_secs(1);
    let limit = down * 2;
    zk.disconnect(a.session_id(), down);
    let campaign = Election::new(&a, "/e").unwrap();
    let member = GroupMember::join(&a, "/g", "m1", b"");
    let barrier = Barrier::new(&a, "/b").unwrap();
    let (leading, member, waited) = within(limit, "campaign, join and barrier", async {
        tokio::join!(campaign.campaign(), member, barrier.wait())
    })
    .await;
    drop(leading.unwrap());
    drop(member.unwrap());
    waited.unwrap();
    zk.disconnect(a.session_id(), down);
    let queue = Queue::new(&a, "/q");
    let queue = within(limit, "the queue", queue).await.unwrap();
    let item = within(limit, "the item", queue.take()).await.unwrap();
    assert_eq!(item.data, b"item");
    // A transaction: coordinator and site both made while down.
    use herdless_std::two_phase::{Coordinator, Outcome, Site, Variant, Vote};
    let variant = Variant::Coordinated {
        ephemeral_votes: false,
    };
    let b = zk.connect();
    zk.disconnect(a.session_id(), down);
    zk.disconnect(b.session_id(), down);
    let (coordinator, site) = within(limit, "coordinator and site", async {
        tokio::join!(
            Coordinator::start(&a, "/tx", b"body", &["s"], variant, Duration::from_secs(60)),
            Site::join(&b, "/tx", "s", variant)
        )
    })
    .await;
    let (coordinator, site) = (coordinator.unwrap(), site.unwrap());
    site.vote(Vote::Commit).await.unwrap();
    let outcome = within(limit, "the outcome", coordinator.outcome()).await;
    assert_eq!(outcome.unwrap(), Outcome::Commit);
}

/// Work carried over to a renewed session whose connection is down before
/// the driver moves onto it: the driver tells each recipe of the new
/// session, then of the lost connection, before the requests it re-made go
/// out. Once the connection is back, a config watch reads again and hears
/// what was written meanwhile (it heard nothing before it counted a queued
/// read as lost), and a waiting acquire and a campaign go on to hold and
/// lead.
#[tokio::test(start_paused = true)]
async fn work_carried_over_to_a_renewed_session_already_down_goes_on_once_it_is_back() {
    use herdless_std::config::Config;
    let zk = SimServer::new().with_session_timeout(Duration::from_secs(4));
    zk.create("/cfg", b"v1").unwrap();
    let holder = zk.connect();
    let held = Lock::new(&holder, DIR).unwrap().acquire().await.unwrap();
    let leading = Election::new(&holder, "/e")
        .unwrap()
        .campaign()
        .await
        .unwrap();
    let session = zk.session();
    let old = session.session_id();
    // Waiting for the renewal before the driver does, this task runs first
    // when it comes, and takes the new session's connection down.
    let takes_down = tokio::spawn({
        let (zk, session) = (zk.clone(), session.clone());
        async move {
            session.renewed(old).await;
            zk.disconnect(session.session_id(), Duration::from_secs(1));
        }
    });
    sleep(MS).await;
    let mut config = Config::watch(&session, "/cfg").unwrap();
    within(Duration::from_secs(1), "the value", config.wait_present())
        .await
        .unwrap();
    let acquiring = tokio::spawn({
        let session = session.clone();
        async move { Lock::new(&session, DIR).unwrap().acquire().await }
    });
    let campaigning = tokio::spawn({
        let session = session.clone();
        async move { Election::new(&session, "/e").unwrap().campaign().await }
    });
    sleep(20 * MS).await;
    zk.expire(old);
    within(Duration::from_secs(1), "the renewal", takes_down)
        .await
        .unwrap();
    zk.set_data("/cfg", b"v2").unwrap();
    within(Duration::from_secs(3), "the new value", async {
        loop {
            let value = config.changed().await.unwrap();
            if value.present().is_some_and(|v| v.data == b"v2") {
                return;
            }
        }
    })
    .await;
    held.release().await.unwrap();
    leading.resign().await.unwrap();
    let limit = Duration::from_secs(1);
    let guard = within(limit, "the lock", acquiring).await.unwrap().unwrap();
    let leadership = within(limit, "the lead", campaigning)
        .await
        .unwrap()
        .unwrap();
    guard.release().await.unwrap();
    leadership.resign().await.unwrap();
}
