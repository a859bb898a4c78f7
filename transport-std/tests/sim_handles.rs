//! herdless-std's recipe handles other than the lock and the election, on
//! the in-memory ZooKeeper, for what the recipe tests in sim_recipes.rs do
//! not reach: a server that refuses a path (a node whose ACL denies this
//! client), the observers that must say so rather than wait, a member's
//! connection loss and drop, the documented size limits, ephemeral items,
//! a revocation the holder consents to, and the tasks a handle leaves
//! behind. Every test runs on tokio's paused clock.

use std::time::Duration;

use futures::StreamExt;
use herdless_core::path::PathError;
use herdless_std::barrier::{Barrier, DoubleBarrier};
use herdless_std::config::{self, Config, Value, Versioned, Written};
use herdless_std::election::watch_leader;
use herdless_std::group::{self, GroupObserver};
use herdless_std::queue::{self, Queue};
use herdless_std::sim::{SimClient, SimServer};
use herdless_std::two_phase::{self, Coordinator, Outcome, Site, Variant, Vote};
use herdless_std::{
    revoke, revoke_forced, Election, Error, GroupMember, Lock, MembershipEvent, Presence,
    ReadWriteLock, Revocation, ZkError,
};
use tokio::time::{sleep, timeout};

mod support;
use support::{alive_tasks, within, MS};

const NO_AUTH: Error = Error::Zk(ZkError::NoAuth);

const VOTES: Variant = Variant::Coordinated {
    ephemeral_votes: true,
};

/// Asserts that `fut` is still waiting after `limit` of virtual time.
async fn still_waiting<T: std::fmt::Debug>(
    limit: Duration,
    what: &str,
    fut: impl std::future::Future<Output = T>,
) {
    if let Ok(done) = timeout(limit, fut).await {
        panic!("{what}: returned {done:?}, expected it to wait");
    }
}

/// Breaks `client`'s connection for a moment: the observers read again
/// when it is back.
async fn reconnect(zk: &SimServer, client: &SimClient) {
    zk.disconnect(client.session_id(), 10 * MS);
    sleep(50 * MS).await;
}

// ---- observers: a refused read is an error, reported once ----

#[tokio::test(start_paused = true)]
async fn a_config_watcher_reports_a_refused_read_once_and_reads_again_after() {
    const PATH: &str = "/app/secret";
    let zk = SimServer::new();
    zk.create("/app", b"").unwrap();
    zk.create(PATH, b"v0").unwrap();
    zk.refuse(PATH, Some(ZkError::NoAuth));
    let c = zk.connect();
    // Nobody asks this one until its read succeeds: no failure is left.
    let mut unasked = Config::watch(&c, PATH).unwrap();
    let mut waiting = Config::watch(&c, PATH).unwrap();
    assert_eq!(
        within(100 * MS, "wait_present", waiting.wait_present()).await,
        Err(NO_AUTH)
    );
    let mut watching = Config::watch(&c, PATH).unwrap();
    assert_eq!(
        within(100 * MS, "changed", watching.changed()).await,
        Err(NO_AUTH)
    );
    assert_eq!(watching.value(), Value::Unknown);
    // Reported: the next calls wait rather than fail again (no busy loop
    // for a caller that retries on error).
    still_waiting(Duration::from_secs(1), "changed", watching.changed()).await;
    still_waiting(
        Duration::from_secs(1),
        "wait_present",
        waiting.wait_present(),
    )
    .await;
    // Read again on the next connection and refused again: a new failure.
    reconnect(&zk, &c).await;
    assert_eq!(
        within(100 * MS, "changed", watching.changed()).await,
        Err(NO_AUTH)
    );
    zk.refuse(PATH, None);
    reconnect(&zk, &c).await;
    let v0 = Versioned {
        data: b"v0".to_vec(),
        version: 0,
    };
    assert_eq!(
        within(100 * MS, "read again", watching.changed()).await,
        Ok(Value::Present(v0.clone()))
    );
    assert_eq!(
        within(100 * MS, "read again", waiting.wait_present()).await,
        Ok(v0.clone())
    );
    assert_eq!(unasked.changed().await, Ok(Value::Present(v0)));
}

#[tokio::test(start_paused = true)]
async fn a_group_observer_reports_a_refused_listing_once_and_lists_again_after() {
    const GROUP: &str = "/fleet/private";
    let zk = SimServer::new();
    zk.create("/fleet", b"").unwrap();
    zk.create(GROUP, b"").unwrap();
    zk.create(&format!("{GROUP}/edge-1"), b"").unwrap();
    zk.refuse(GROUP, Some(ZkError::NoAuth));
    let c = zk.connect();
    let mut unasked = GroupObserver::start(&c, GROUP).unwrap();
    let mut observer = GroupObserver::start(&c, GROUP).unwrap();
    assert_eq!(
        within(100 * MS, "changed", observer.changed()).await,
        Err(NO_AUTH)
    );
    still_waiting(Duration::from_secs(1), "changed", observer.changed()).await;
    reconnect(&zk, &c).await;
    assert_eq!(
        within(100 * MS, "changed", observer.changed()).await,
        Err(NO_AUTH)
    );
    zk.refuse(GROUP, None);
    reconnect(&zk, &c).await;
    let change = within(100 * MS, "listed again", observer.changed())
        .await
        .unwrap();
    assert_eq!(change.joined, ["edge-1"]);
    assert_eq!(observer.members(), ["edge-1"]);
    assert_eq!(unasked.changed().await.unwrap().joined, ["edge-1"]);
}

#[tokio::test(start_paused = true)]
async fn a_name_joined_twice_on_one_session_is_taken_the_second_time() {
    let zk = SimServer::new();
    let c = zk.connect();
    let first = GroupMember::join(&c, "/fleet/twice", "same", b"one")
        .await
        .unwrap();
    assert_eq!(
        GroupMember::join(&c, "/fleet/twice", "same", b"two")
            .await
            .err(),
        Some(Error::NameTaken)
    );
    assert_eq!(
        group::register(&c, "/fleet/twice", "same", b"three")
            .await
            .err(),
        Some(Error::NameTaken)
    );
    sleep(100 * MS).await;
    assert_eq!(
        group::lookup(&c, "/fleet/twice", "same").await.unwrap(),
        Some(b"one".to_vec())
    );
    assert!(first.is_in());
    first.leave().await.unwrap();
    assert_eq!(
        group::lookup(&c, "/fleet/twice", "same").await.unwrap(),
        None
    );
}

#[tokio::test(start_paused = true)]
async fn a_group_observer_leaves_out_a_name_too_long_to_follow_and_reports_the_others() {
    use herdless_std::group::MAX_NAME;
    const GROUP: &str = "/fleet/long";
    let zk = SimServer::new();
    let c = zk.connect();
    let long = "n".repeat(MAX_NAME + 1);
    assert_eq!(
        GroupMember::join(&c, GROUP, &long, b"").await.err(),
        Some(Error::Path(PathError::TooLong {
            needed: MAX_NAME + 1,
            capacity: MAX_NAME
        })),
        "herdless writes no member its observers cannot follow"
    );
    let longest = "n".repeat(MAX_NAME);
    let at_the_limit = GroupMember::join(&c, "/fleet/limit", &longest, b"")
        .await
        .expect("a name of MAX_NAME bytes is one an observer follows");
    at_the_limit.leave().await.unwrap();
    // Another client's.
    zk.create("/fleet", b"").unwrap();
    zk.create(GROUP, b"").unwrap();
    zk.create(&format!("{GROUP}/{long}"), b"").unwrap();
    let mut observer = GroupObserver::start(&c, GROUP).unwrap();
    assert!(
        observer.is_complete(),
        "nothing is known missing before a listing"
    );
    let _short = GroupMember::join(&c, GROUP, "short", b"").await.unwrap();
    let change = within(100 * MS, "changed", observer.changed())
        .await
        .unwrap();
    assert_eq!(change.joined, ["short"]);
    assert_eq!(observer.members(), ["short"]);
    assert!(!observer.is_complete());
    // Nothing more to report: it waits, rather than failing again.
    still_waiting(Duration::from_secs(1), "changed", observer.changed()).await;
    zk.delete(&format!("{GROUP}/{long}")).unwrap();
    let _other = GroupMember::join(&c, GROUP, "other", b"").await.unwrap();
    let change = within(100 * MS, "changed", observer.changed())
        .await
        .unwrap();
    assert_eq!(change.joined, ["other"]);
    assert!(observer.is_complete());
}

#[tokio::test(start_paused = true)]
async fn a_leader_observer_reports_a_refused_read_and_its_stream_skips_it() {
    const DIR: &str = "/election/private";
    let zk = SimServer::new();
    let (a, o) = (zk.connect(), zk.connect());
    let _leading = Election::new(&a, DIR)
        .unwrap()
        .with_data(b"edge-a")
        .unwrap()
        .campaign()
        .await
        .unwrap();
    zk.refuse(DIR, Some(ZkError::NoAuth));
    let mut unasked = watch_leader(&o, DIR).unwrap();
    let mut observer = watch_leader(&o, DIR).unwrap();
    assert_eq!(
        within(100 * MS, "changed", observer.changed()).await,
        Err(NO_AUTH)
    );
    still_waiting(Duration::from_secs(1), "changed", observer.changed()).await;
    let mut stream = watch_leader(&o, DIR).unwrap().into_stream();
    still_waiting(Duration::from_secs(1), "the stream", stream.next()).await;
    zk.refuse(DIR, None);
    reconnect(&zk, &o).await;
    let leader = within(100 * MS, "read again", observer.changed())
        .await
        .unwrap()
        .expect("a leads");
    assert_eq!(leader.data, b"edge-a");
    let streamed = within(100 * MS, "the stream goes on", stream.next())
        .await
        .expect("the stream did not end")
        .expect("a leads");
    assert_eq!(streamed.data, b"edge-a");
    let leader = unasked.changed().await.unwrap().expect("a leads");
    assert_eq!(leader.data, b"edge-a");
    // It ends with its session, failures skipped or not.
    zk.expire(o.session_id());
    assert!(within(100 * MS, "the stream ends", stream.next())
        .await
        .is_none());
    assert_eq!(
        within(100 * MS, "changed", observer.changed()).await,
        Err(Error::SessionEnded)
    );
}

// ---- every other handle: a refused request is a typed error ----

#[tokio::test(start_paused = true)]
async fn refused_requests_reach_every_handle_as_typed_errors() {
    let zk = SimServer::new();
    let c = zk.connect();
    for dir in ["/jobs", "/app", "/gate", "/tx", "/locks"] {
        zk.create(dir, b"").unwrap();
    }

    let queue = Queue::new(&c, "/jobs").await.unwrap();
    queue.put(b"first").await.unwrap();
    zk.refuse("/jobs", Some(ZkError::NoAuth));
    assert_eq!(queue.put(b"x").await, Err(NO_AUTH));
    assert_eq!(queue.put_ephemeral(b"x").await, Err(NO_AUTH));
    assert_eq!(queue.take().await, Err(NO_AUTH));
    assert_eq!(
        queue.take_timeout(Duration::from_secs(1)).await,
        Err(NO_AUTH)
    );
    assert_eq!(queue.peek().await, Err(NO_AUTH));
    zk.refuse("/jobs", None);
    assert_eq!(queue.take().await.unwrap().data, b"first", "nothing lost");

    let config = Config::watch(&c, "/app/limits").unwrap();
    zk.refuse("/app/limits", Some(ZkError::NoAuth));
    assert_eq!(config.create(b"v0").await, Err(NO_AUTH));
    assert_eq!(config.set(b"v1", None).await, Err(NO_AUTH));
    zk.refuse("/app/limits", None);
    assert_eq!(
        config.create(b"v0").await,
        Ok(Written::Updated { version: 0 })
    );

    zk.refuse("/gate/", Some(ZkError::NoAuth));
    let barrier = Barrier::new(&c, "/gate/barrier").unwrap();
    assert_eq!(barrier.set().await, Err(NO_AUTH));
    assert_eq!(barrier.wait().await, Err(NO_AUTH));
    assert_eq!(barrier.remove().await, Err(NO_AUTH));
    let double = DoubleBarrier::new(&c, "/gate/double", "p0").unwrap();
    assert_eq!(double.enter(1).await.map(|_| ()), Err(NO_AUTH));

    zk.refuse("/tx/", Some(ZkError::NoAuth));
    let started = Coordinator::start(&c, "/tx/t1", b"body", &["s"], VOTES, Duration::from_secs(5));
    assert_eq!(started.await.map(|_| ()), Err(NO_AUTH));
    assert_eq!(
        Site::join(&c, "/tx/t1", "s", VOTES).await.map(|_| ()),
        Err(NO_AUTH)
    );

    let held = Lock::new(&c, "/locks/r").unwrap().acquire().await.unwrap();
    zk.refuse("/locks/r/", Some(ZkError::NoAuth));
    assert_eq!(revoke(&c, held.node_path()).await, Err(NO_AUTH));
    assert_eq!(
        revoke_forced(&c, held.node_path(), Duration::from_secs(1)).await,
        Err(NO_AUTH)
    );
    zk.refuse("/locks/r/", None);
    held.release().await.unwrap();
}

// ---- membership ----

#[tokio::test(start_paused = true)]
async fn a_member_is_suspended_while_disconnected_and_resumes_on_the_same_session() {
    let zk = SimServer::new();
    let c = zk.connect();
    let mut member = GroupMember::join(&c, "/fleet/edge", "edge-1", b"")
        .await
        .unwrap();
    assert!(member.is_in());
    zk.disconnect(c.session_id(), Duration::from_secs(1));
    assert_eq!(
        within(100 * MS, "Suspended", member.next_event()).await,
        Some(MembershipEvent::Suspended)
    );
    assert_eq!(member.presence(), Presence::Suspended);
    assert!(!member.is_in(), "in doubt is not in");
    assert_eq!(
        within(Duration::from_secs(2), "Resumed", member.next_event()).await,
        Some(MembershipEvent::Resumed)
    );
    assert!(member.is_in());
    assert_eq!(
        zk.node(member.node_path()).unwrap().stat.ephemeral_owner,
        c.session_id()
    );
}

#[tokio::test(start_paused = true)]
async fn a_dropped_member_leaves_the_group() {
    let zk = SimServer::new();
    let c = zk.connect();
    let member = GroupMember::join(&c, "/fleet/edge", "edge-2", b"")
        .await
        .unwrap();
    let node = member.node_path().to_owned();
    assert!(zk.node(&node).is_some());
    drop(member);
    sleep(50 * MS).await;
    assert!(zk.node(&node).is_none(), "the node outlived its member");
    assert!(zk.is_live(c.session_id()), "left, not by the session's end");
}

#[tokio::test(start_paused = true)]
async fn a_group_that_does_not_exist_has_no_members_and_a_refused_one_fails() {
    let zk = SimServer::new();
    let c = zk.connect();
    assert_eq!(group::members(&c, "/fleet/none").await, Ok(Vec::new()));
    zk.create("/fleet", b"").unwrap();
    zk.create("/fleet/secret", b"").unwrap();
    zk.refuse("/fleet/secret", Some(ZkError::NoAuth));
    assert_eq!(group::members(&c, "/fleet/secret").await, Err(NO_AUTH));
}

// ---- queues, barriers ----

#[tokio::test(start_paused = true)]
async fn an_ephemeral_item_goes_with_its_session_and_an_empty_queue_says_so() {
    const DIR: &str = "/jobs/ephemeral";
    let zk = SimServer::new();
    let (p, q) = (zk.connect(), zk.connect());
    let consumer = Queue::new(&q, DIR).await.unwrap();
    assert_eq!(consumer.peek().await, Ok(None));
    assert_eq!(consumer.take_timeout(100 * MS).await, Ok(None));
    let producer = Queue::new(&p, DIR).await.unwrap();
    let node = producer.put_ephemeral(b"while I live").await.unwrap();
    assert_eq!(zk.node(&node).unwrap().stat.ephemeral_owner, p.session_id());
    let peeked = consumer.peek().await.unwrap().expect("the item");
    assert_eq!(
        (peeked.node.as_str(), peeked.data.as_slice()),
        (node.as_str(), &b"while I live"[..])
    );
    zk.expire(p.session_id());
    sleep(10 * MS).await;
    assert_eq!(consumer.peek().await, Ok(None), "gone with its session");
    let urgent = Queue::priority(&q, "/jobs/urgent").await.unwrap();
    let later = urgent.put_with_priority(b"later", 9).await.unwrap();
    let first = urgent.put_with_priority(b"first", 1).await.unwrap();
    assert_ne!(later, first);
    assert_eq!(urgent.take().await.unwrap().node, first);
    assert_eq!(urgent.take().await.unwrap().node, later);
}

#[tokio::test(start_paused = true)]
async fn a_process_entering_a_double_barrier_whose_session_expires_hears_it() {
    let zk = SimServer::new();
    let c = zk.connect();
    let barrier = DoubleBarrier::new(&c, "/gate/lost", "p0").unwrap();
    let expiring = async {
        sleep(50 * MS).await;
        zk.expire(c.session_id());
        std::future::pending::<()>().await;
    };
    let entered = tokio::select! {
        entered = barrier.enter(2) => entered.map(|_| ()),
        () = expiring => unreachable!(),
    };
    assert_eq!(entered, Err(Error::SessionEnded));
}

// ---- limits ----

#[tokio::test(start_paused = true)]
async fn values_up_to_the_documented_limits_go_through_whole() {
    let zk = SimServer::new();
    let c = zk.connect();
    let big = |n: usize| (0..n).map(|i| (i % 251) as u8).collect::<Vec<u8>>();
    // The limits the handles document: 64 KiB items, 32 KiB values,
    // 16 KiB transaction bodies.
    assert_eq!(
        (queue::MAX_ITEM, config::MAX_VALUE, two_phase::MAX_BODY),
        (64 * 1024, 32 * 1024, 16 * 1024)
    );

    let queue = Queue::new(&c, "/jobs/big").await.unwrap();
    queue.put(&big(queue::MAX_ITEM)).await.unwrap();
    assert_eq!(queue.take().await.unwrap().data, big(queue::MAX_ITEM));

    zk.create("/app", b"").unwrap();
    let mut config = Config::watch(&c, "/app/big").unwrap();
    config.create(&big(config::MAX_VALUE)).await.unwrap();
    assert_eq!(
        config.wait_present().await.unwrap().data,
        big(config::MAX_VALUE)
    );
    zk.set_data("/app/big", &big(config::MAX_VALUE + 1))
        .unwrap();
    assert_eq!(
        within(100 * MS, "the larger value", config.changed()).await,
        Ok(Value::TooLarge {
            version: 1,
            len: config::MAX_VALUE + 1
        })
    );

    let body = big(two_phase::MAX_BODY);
    let coordinator =
        Coordinator::start(&c, "/tx/big", &body, &["s"], VOTES, Duration::from_secs(5))
            .await
            .unwrap();
    let site = Site::join(&c, "/tx/big", "s", VOTES).await.unwrap();
    assert_eq!(site.body(), Some(body.as_slice()));
    assert_eq!((coordinator.decided(), site.decided()), (None, None));
    site.vote(Vote::Commit).await.unwrap();
    assert_eq!(coordinator.outcome().await, Ok(Outcome::Commit));
    assert_eq!(site.outcome().await, Ok(Outcome::Commit));
    assert_eq!(
        (coordinator.decided(), site.decided()),
        (Some(Outcome::Commit), Some(Outcome::Commit))
    );
}

// ---- revocation ----

#[tokio::test(start_paused = true)]
async fn a_forced_revocation_the_holder_consents_to_in_time_is_released() {
    const DIR: &str = "/locks/consenting";
    let zk = SimServer::new();
    let (a, c) = (zk.connect(), zk.connect());
    let guard = Lock::new(&a, DIR)
        .unwrap()
        .acquire_revocable()
        .await
        .unwrap();
    let node = guard.node_path().to_owned();
    let revoking = tokio::spawn({
        let (c, node) = (c.clone(), node.clone());
        async move { revoke_forced(&c, &node, Duration::from_secs(10)).await }
    });
    within(100 * MS, "the holder hears", guard.revocation_requested()).await;
    guard.release().await.unwrap();
    assert_eq!(
        within(100 * MS, "the revocation ends", revoking)
            .await
            .unwrap(),
        Ok(Revocation::Released)
    );
    assert!(zk.node(&node).is_none());
}

// ---- what the handles show, and leave behind ----

#[tokio::test(start_paused = true)]
async fn each_handle_names_what_it_is_on() {
    let zk = SimServer::new();
    let c = zk.connect();
    zk.create("/app", b"").unwrap();
    let debug = |what: &dyn std::fmt::Debug| format!("{what:?}");
    let queue = Queue::new(&c, "/jobs/named").await.unwrap();
    assert!(debug(&queue).contains("/jobs/named"), "{queue:?}");
    let config = Config::watch(&c, "/app/named").unwrap();
    assert_eq!(config.path(), "/app/named");
    assert!(debug(&config).contains("/app/named"), "{config:?}");
    let barrier = Barrier::new(&c, "/gate/named").unwrap();
    assert!(debug(&barrier).contains("/gate/named"), "{barrier:?}");
    let double = DoubleBarrier::new(&c, "/gate/double-named", "p-named").unwrap();
    assert!(debug(&double).contains("p-named"), "{double:?}");
    let observer = GroupObserver::start(&c, "/fleet/named").unwrap();
    assert!(debug(&observer).contains("/fleet/named"), "{observer:?}");
    let member = GroupMember::join(&c, "/fleet/named", "m-named", b"")
        .await
        .unwrap();
    assert!(
        debug(&member).contains("/fleet/named/m-named"),
        "{member:?}"
    );
    let rw = ReadWriteLock::new(&c, "/locks/rw-named").unwrap();
    assert_eq!(rw.dir(), "/locks/rw-named");
    let coordinator = Coordinator::start(
        &c,
        "/tx/named",
        b"",
        &["s-named"],
        VOTES,
        Duration::from_secs(5),
    )
    .await
    .unwrap();
    assert_eq!(coordinator.tx(), "/tx/named");
    assert!(debug(&coordinator).contains("/tx/named"), "{coordinator:?}");
    let site = Site::join(&c, "/tx/named", "s-named", VOTES).await.unwrap();
    assert!(debug(&site).contains("s-named"), "{site:?}");
    let present = Value::Present(Versioned {
        data: b"x".to_vec(),
        version: 3,
    });
    assert_eq!(present.present().map(|v| v.version), Some(3));
    assert_eq!(Value::Missing.present(), None);
}

#[tokio::test(start_paused = true)]
async fn finished_and_dropped_handles_leave_no_task_behind() {
    let zk = SimServer::new();
    let c = zk.connect();
    let before = alive_tasks();
    let queue = Queue::new(&c, "/jobs/tasks").await.unwrap();
    queue.put(b"x").await.unwrap();
    queue.take().await.unwrap();
    assert!(alive_tasks() > before);
    drop(queue);
    sleep(50 * MS).await;
    assert_eq!(alive_tasks(), before, "a dropped idle queue's tasks");
    assert_eq!(
        revoke(&c, "/locks/none/x-lock-0000000001").await,
        Ok(Revocation::NotHeld)
    );
    sleep(50 * MS).await;
    assert_eq!(alive_tasks(), before, "a finished revocation's task");
}

// ---- a session over for good ----

/// On a plain client whose session expires no news can come: every wait
/// for some ends, after what the expiry itself caused (a member hears
/// that it is out, then that nothing follows).
#[tokio::test(start_paused = true)]
async fn waits_for_news_end_when_the_session_is_over_for_good() {
    let zk = SimServer::new();
    let (c, other) = (zk.connect(), zk.connect());
    zk.create("/app", b"").unwrap();
    zk.create("/app/present", b"v").unwrap();
    let mut config = Config::watch(&c, "/app/present").unwrap();
    config.wait_present().await.unwrap();
    let mut missing = Config::watch(&c, "/app/missing").unwrap();
    let mut member = GroupMember::join(&c, "/fleet/over", "m", b"")
        .await
        .unwrap();
    let mut group = GroupObserver::start(&c, "/fleet/over").unwrap();
    assert_eq!(group.changed().await.unwrap().joined, ["m"]);
    let mut leaders = watch_leader(&c, "/election/over").unwrap();
    assert_eq!(leaders.changed().await, Ok(None));
    let mut stream = watch_leader(&c, "/election/over").unwrap().into_stream();
    assert_eq!(stream.next().await, Some(None));
    let queue = Queue::new(&c, "/jobs/over").await.unwrap();
    let raised = Barrier::new(&other, "/gate/over").unwrap();
    raised.set().await.unwrap();
    let barrier = Barrier::new(&c, "/gate/over").unwrap();
    let _coordinator = Coordinator::start(
        &other,
        "/tx/over",
        b"",
        &["s"],
        VOTES,
        Duration::from_secs(60),
    )
    .await
    .unwrap();
    let site = Site::join(&c, "/tx/over", "s", VOTES).await.unwrap();

    let expiring = async {
        sleep(50 * MS).await;
        zk.expire(c.session_id());
    };
    let ended = Err(Error::SessionEnded);
    let limit = Duration::from_secs(1);
    let (changed, present, listed, led, next, taken, passed, outcome, events, ()) = tokio::join!(
        within(limit, "config.changed", config.changed()),
        within(limit, "wait_present", missing.wait_present()),
        within(limit, "group.changed", group.changed()),
        within(limit, "leaders.changed", leaders.changed()),
        within(limit, "the stream", stream.next()),
        within(limit, "queue.take", queue.take()),
        within(limit, "barrier.wait", barrier.wait()),
        within(limit, "site.outcome", site.outcome()),
        within(limit, "the member's events", async {
            vec![member.next_event().await, member.next_event().await]
        }),
        expiring,
    );
    assert_eq!(changed, ended.clone().map(|()| Value::Missing));
    assert_eq!(present.map(|_| ()), ended);
    assert_eq!(listed.map(|_| ()), ended);
    assert_eq!(led.map(|_| ()), ended);
    assert_eq!(next, None);
    assert_eq!(taken.map(|_| ()), ended);
    assert_eq!(passed, ended);
    assert_eq!(outcome.map(|_| ()), ended);
    assert_eq!(events, [Some(MembershipEvent::Out), None]);
}

/// Likewise for a configuration write and a coordinator's outcome waiting
/// on requests in flight when the session expires: they end with it.
#[tokio::test(start_paused = true)]
async fn work_in_flight_ends_when_the_session_is_over_for_good() {
    let zk = SimServer::new();
    let c = zk.connect();
    zk.create("/app", b"").unwrap();
    let config = Config::watch(&c, "/app/held").unwrap();
    let coordinator =
        Coordinator::start(&c, "/tx/held", b"", &["s"], VOTES, Duration::from_secs(60))
            .await
            .unwrap();
    zk.hold(c.session_id());
    let expiring = async {
        sleep(50 * MS).await;
        zk.expire(c.session_id());
    };
    let limit = Duration::from_secs(1);
    let (written, outcome, ()) = tokio::join!(
        within(limit, "config.set", config.set(b"v", None)),
        within(limit, "coordinator.outcome", coordinator.outcome()),
        expiring,
    );
    assert_eq!(written, Err(Error::SessionEnded));
    assert_eq!(outcome, Err(Error::SessionEnded));
}
