//! herdless-std's lock, election and fence on the in-memory ZooKeeper,
//! through the faults a test injects. Every test runs on tokio's paused
//! clock: timeouts pass in virtual time.

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use herdless_std::election::LeaderState;
use herdless_std::sim::{SimServer, SimSession};
use herdless_std::{CreateMode, Election, Error, Fenced, Holding, Lock};

mod support;
use support::{acquiring, faults, seeds, under, within};

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
    let waiting = acquiring(&b, DIR);
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
    let nodes = under(&zk, DIR);
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
    // Longer than half the session timeout: presumed lost, before the
    // server can have expired the session (and anyone else can hold).
    zk.disconnect(a.session_id(), Duration::from_secs(10));
    let cut = tokio::time::Instant::now();
    tokio::time::timeout(Duration::from_secs(5), guard.lost())
        .await
        .expect("lost once half the session timeout passed");
    assert_eq!(cut.elapsed(), Duration::from_secs(2));
    assert_eq!(guard.holding(), Holding::Lost);
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(!zk.is_live(a.session_id()));
}

#[tokio::test(start_paused = true)]
async fn requests_held_in_flight_are_answered_connection_loss_and_retried() {
    let zk = SimServer::new();
    let a = zk.connect();
    zk.hold(a.session_id());
    let acquiring = acquiring(&a, DIR);
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
    for seed in seeds(7, 4) {
        never_two_at_once(seed, |session, room| async move {
            let lock = Lock::new(&session, DIR).unwrap();
            for _ in 0..10 {
                let guard = lock.acquire().await.expect("a renewing session's acquire");
                room.occupy(guard.lost()).await;
                let _ = guard.release().await;
            }
        })
        .await;
    }
}

/// The same for leadership: candidates campaign in turn, and no two lead
/// at once.
#[tokio::test(start_paused = true)]
async fn random_faults_never_give_two_leaders() {
    for seed in seeds(7, 4) {
        never_two_at_once(seed, |session, room| async move {
            let election = Election::new(&session, "/election").unwrap();
            for _ in 0..10 {
                let leading = election
                    .campaign()
                    .await
                    .expect("a renewing session's campaign");
                room.occupy(leading.lost()).await;
                let _ = leading.resign().await;
            }
        })
        .await;
    }
}

/// Who is inside at every moment, kept by the test rather than the
/// library.
#[derive(Default)]
struct Room {
    inside: AtomicUsize,
    most: AtomicUsize,
    stays: AtomicUsize,
}

impl Room {
    /// Stays inside for a few milliseconds, or until `lost` says the right
    /// to be there is gone.
    async fn occupy(&self, lost: impl Future<Output = ()>) {
        let now = self.inside.fetch_add(1, Ordering::SeqCst) + 1;
        self.most.fetch_max(now, Ordering::SeqCst);
        tokio::select! {
            () = tokio::time::sleep(Duration::from_millis(5)) => {}
            () = lost => {}
        }
        self.inside.fetch_sub(1, Ordering::SeqCst);
        self.stays.fetch_add(1, Ordering::SeqCst);
    }
}

/// Runs four `worker`s on renewing sessions of a server with random lost
/// replies and disconnections (no expiries: an expired holder may still
/// believe it holds, so a count could not be the oracle), and checks that
/// the [`Room`] they share never held two.
async fn never_two_at_once<F>(seed: u64, worker: impl Fn(SimSession, Arc<Room>) -> F)
where
    F: Future<Output = ()> + Send + 'static,
{
    let zk = SimServer::with_seed(seed).with_session_timeout(Duration::from_secs(2));
    zk.random_faults(seed, faults(false));
    let room = Arc::new(Room::default());
    let workers: Vec<_> = (0..4)
        .map(|_| tokio::spawn(worker(zk.session(), room.clone())))
        .collect();
    for w in workers {
        within(Duration::from_secs(600), "the workers finish", w)
            .await
            .unwrap();
    }
    assert_eq!(
        room.most.load(Ordering::SeqCst),
        1,
        "seed {seed}: two at once"
    );
    let stays = room.stays.load(Ordering::SeqCst);
    assert!(stays >= 20, "seed {seed}: too few turns ({stays})");
    let requests = zk.requests();
    assert!(
        requests.values().sum::<u64>() > 100,
        "seed {seed}: {requests:?}"
    );
    zk.no_random_faults();
}

/// Under random faults that include expiries, workers on renewing sessions
/// take the lock in turn and append to a ledger under its fence. See
/// [`fenced_ledger`] for the oracle.
#[tokio::test(start_paused = true)]
async fn random_faults_with_expiries_never_let_an_earlier_holder_write_after_a_later() {
    for seed in seeds(1, 4) {
        fenced_ledger(seed, |session| async move {
            let lock = Lock::new(&session, DIR).unwrap();
            let mut written = 0;
            for _ in 0..10 {
                let guard = lock.acquire().await.expect("a renewing session's acquire");
                written += append_twice(guard.node_path(), || guard.fenced()).await;
                let _ = guard.release().await;
            }
            written
        })
        .await;
    }
}

/// The same for leadership: candidates campaign in turn and append under
/// the leadership's fence.
#[tokio::test(start_paused = true)]
async fn random_faults_with_expiries_never_let_an_earlier_leader_write_after_a_later() {
    for seed in seeds(1, 4) {
        fenced_ledger(seed, |session| async move {
            let election = Election::new(&session, "/election").unwrap();
            let mut written = 0;
            for _ in 0..10 {
                let leading = election
                    .campaign()
                    .await
                    .expect("a renewing session's campaign");
                written += append_twice(leading.node_path(), || leading.fenced()).await;
                let _ = leading.resign().await;
            }
            written
        })
        .await;
    }
}

const LEDGER: &str = "/ledger";

/// Runs four `worker`s on renewing sessions of a server with random lost
/// replies, disconnections and expiries, where an expired holder may still
/// believe it holds while the next one takes over (as on a real ensemble).
/// The oracle is the server's ledger itself, in commit order: no holder's
/// write comes after a later holder's. `worker` returns how many of its
/// writes were answered OK, which the ledger must all hold.
async fn fenced_ledger<F>(seed: u64, worker: impl Fn(SimSession) -> F)
where
    F: Future<Output = usize> + Send + 'static,
{
    let zk = SimServer::with_seed(seed).with_session_timeout(Duration::from_secs(2));
    zk.create(LEDGER, b"").unwrap();
    zk.random_faults(seed, faults(true));
    let workers: Vec<_> = (0..4).map(|_| tokio::spawn(worker(zk.session()))).collect();
    let mut written = 0;
    for w in workers {
        written += within(Duration::from_secs(600), "the workers finish", w)
            .await
            .unwrap();
    }
    zk.no_random_faults();
    let mut ledger = under(&zk, LEDGER);
    ledger.sort();
    assert!(
        ledger.len() >= written,
        "seed {seed}: a write answered OK is missing"
    );
    assert!(written >= 20, "seed {seed}: too few writes ({written})");
    let tokens: Vec<String> = ledger
        .iter()
        .map(|p| String::from_utf8(zk.node(p).unwrap().data).unwrap())
        .collect();
    for pair in tokens.windows(2) {
        assert!(
            pair[0] <= pair[1],
            "seed {seed}: holder {} wrote after holder {}: {tokens:?}",
            pair[0],
            pair[1],
        );
    }
}

/// Two appends to the ledger under `fenced`'s fence, a little apart, each
/// naming the holder by its node's sequence number (zero-padded, so the
/// strings order as the numbers). Returns how many were answered OK.
async fn append_twice(node: &str, fenced: impl Fn() -> Fenced) -> usize {
    let token = &node[node.len() - 10..];
    let mut written = 0;
    for _ in 0..2 {
        let mut batch = fenced();
        batch
            .create(
                &format!("{LEDGER}/w-"),
                token.as_bytes(),
                CreateMode::PersistentSequential,
            )
            .unwrap();
        if batch.commit().await.is_ok() {
            written += 1;
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    written
}

/// A waiting lock, a candidate behind a leader and a queue item: the tree
/// the in-memory server holds, names included.
async fn seeded_tree(seed: u64) -> Vec<String> {
    let zk = SimServer::with_seed(seed);
    let (a, b) = (zk.connect(), zk.connect());
    let _held = Lock::new(&a, DIR).unwrap().acquire().await.unwrap();
    let waiting = Lock::new(&b, DIR).unwrap();
    let waiting = tokio::spawn(async move { waiting.acquire().await.map(|_| ()) });
    let _leading = Election::new(&a, "/e").unwrap().campaign().await.unwrap();
    let behind = Election::new(&b, "/e").unwrap();
    let behind = tokio::spawn(async move { behind.campaign().await.map(|_| ()) });
    let queue = herdless_std::queue::Queue::new(&a, "/q").await.unwrap();
    queue.put(b"item").await.unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    let tree = zk.tree();
    waiting.abort();
    behind.abort();
    tree
}

/// A seed gives the same run, the names of the recipes' nodes (their
/// GUIDs) included: a test may compare trees whole.
#[tokio::test(start_paused = true)]
async fn a_seed_gives_the_same_tree_names_included() {
    let first = seeded_tree(7).await;
    assert!(first.len() >= 8, "{first:?}");
    assert_eq!(seeded_tree(7).await, first);
    assert_ne!(seeded_tree(8).await, first, "another seed, other GUIDs");
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

/// A leadership's state follows its connection: `Leading`, `Suspended`
/// while disconnected (not `is_leading`), `Leading` again when the same
/// session is back, `Lost` once it expired.
#[tokio::test(start_paused = true)]
async fn a_leaders_state_follows_its_connection() {
    let zk = SimServer::new().with_session_timeout(Duration::from_secs(4));
    let a = zk.connect();
    let leadership = Election::new(&a, "/election/state")
        .unwrap()
        .campaign()
        .await
        .unwrap();
    assert_eq!(leadership.state(), LeaderState::Leading);
    assert!(leadership.is_leading());
    assert!(
        tokio::time::timeout(Duration::from_secs(1), leadership.suspended())
            .await
            .is_err(),
        "suspended while connected"
    );
    zk.disconnect(a.session_id(), Duration::from_secs(1));
    tokio::time::timeout(Duration::from_millis(100), leadership.suspended())
        .await
        .expect("the leader hears the disconnection");
    assert_eq!(leadership.state(), LeaderState::Suspended);
    assert!(!leadership.is_leading());
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(
        leadership.state(),
        LeaderState::Leading,
        "the session is back"
    );
    assert!(leadership.is_leading());
    zk.expire(a.session_id());
    tokio::time::timeout(Duration::from_millis(100), leadership.lost())
        .await
        .expect("lost with the session");
    assert_eq!(leadership.state(), LeaderState::Lost);
    assert!(!leadership.is_leading());
    assert!(leadership.fenced().commit().await == Err(Error::Fenced));
}

/// `settled` answers at once while leading, waits out a suspension, and
/// tells which way it ended: leading again when the session came back,
/// lost when it expired.
#[tokio::test(start_paused = true)]
async fn a_leaders_settled_state_waits_out_a_suspension() {
    let zk = SimServer::new().with_session_timeout(Duration::from_secs(4));
    let a = zk.connect();
    let election = Election::new(&a, "/election/settled").unwrap();
    let leadership = election.campaign().await.unwrap();
    let now = Duration::from_millis(1);
    let at_once = within(now, "settled while leading", leadership.settled());
    assert_eq!(at_once.await, LeaderState::Leading);

    zk.disconnect(a.session_id(), Duration::from_secs(1));
    within(
        Duration::from_millis(100),
        "suspended",
        leadership.suspended(),
    )
    .await;
    assert!(
        tokio::time::timeout(Duration::from_millis(500), leadership.settled())
            .await
            .is_err(),
        "settled while the connection is still down"
    );
    let back = within(
        Duration::from_secs(2),
        "settled after the reconnect",
        leadership.settled(),
    );
    assert_eq!(back.await, LeaderState::Leading);

    zk.disconnect(a.session_id(), Duration::from_secs(10));
    within(
        Duration::from_millis(100),
        "suspended again",
        leadership.suspended(),
    )
    .await;
    let end = within(
        Duration::from_secs(6),
        "settled by the expiry",
        leadership.settled(),
    );
    assert_eq!(end.await, LeaderState::Lost);
}

/// `campaign_timeout` leads at once when nobody does, gives up with
/// `None` (its node gone) when someone leads for longer, and a dropped
/// leadership resigns so that the next candidate leads.
#[tokio::test(start_paused = true)]
async fn campaign_timeout_leads_or_gives_up_and_a_dropped_leadership_resigns() {
    const ELECTION: &str = "/election/timeout";
    let zk = SimServer::new();
    let (a, b) = (zk.connect(), zk.connect());
    let election_a = Election::new(&a, ELECTION).unwrap();
    assert_eq!(election_a.dir(), ELECTION);
    assert!(format!("{election_a:?}").contains(ELECTION));
    let leading = election_a
        .campaign_timeout(Duration::from_secs(1))
        .await
        .unwrap()
        .expect("nobody leads: a leads at once");
    assert!(format!("{leading:?}").contains(leading.node_path()));
    let election_b = Election::new(&b, ELECTION).unwrap();
    let started = tokio::time::Instant::now();
    let gave_up = tokio::time::timeout(
        Duration::from_secs(2),
        election_b.campaign_timeout(Duration::from_millis(300)),
    )
    .await
    .expect("campaign_timeout returns");
    assert!(gave_up.unwrap().is_none(), "a leads: b gives up");
    assert!(started.elapsed() >= Duration::from_millis(300));
    // The candidates' nodes, not the leader's record.
    let candidates = |zk: &SimServer| {
        under(zk, ELECTION)
            .iter()
            .filter(|p| p.contains("-n_"))
            .count()
    };
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(candidates(&zk), 1, "b's node went with its campaign");
    assert!(election_b.requests_sent() > 1);
    // Its own node's deletion, as it gave up.
    let heard = election_b.notifications();
    let next = tokio::spawn(async move {
        let leading = election_b.campaign().await;
        (election_b, leading)
    });
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(!next.is_finished());
    drop(leading);
    let (election_b, second) = tokio::time::timeout(Duration::from_secs(1), next)
        .await
        .expect("b leads once a's dropped leadership resigned")
        .unwrap();
    let second = second.unwrap();
    assert!(election_b.notifications() > heard, "b heard a's node go");
    assert_eq!(candidates(&zk), 1);
    second.resign().await.unwrap();
    assert_eq!(candidates(&zk), 0);
}

/// A batch fenced on any node: it counts its writes, names its fence, and
/// lands only while the fence exists.
#[tokio::test(start_paused = true)]
async fn a_batch_fenced_on_any_node_counts_its_writes() {
    let zk = SimServer::new();
    zk.create("/job", b"v0").unwrap();
    let (a, b) = (zk.connect(), zk.connect());
    let guard = Lock::new(&a, DIR).unwrap().acquire().await.unwrap();
    let mut batch = herdless_std::Fenced::on(&b, guard.node_path()).unwrap();
    assert_eq!(batch.fence_path(), guard.node_path());
    assert!(batch.is_empty());
    assert_eq!(batch.len(), 0);
    batch.check("/job", Some(0)).unwrap();
    batch.set_data("/job", b"v1", Some(0)).unwrap();
    assert!(!batch.is_empty());
    assert_eq!(batch.len(), 2);
    assert!(format!("{batch:?}").contains(guard.node_path()));
    assert!(matches!(
        batch.delete("/", None),
        Err(Error::Zk(herdless_std::ZkError::BadArguments))
    ));
    assert_eq!(batch.len(), 2, "the refused delete was not added");
    let results = batch.commit().await.unwrap();
    assert_eq!(results[0], herdless_std::FencedResult::Checked);
    let mut late = herdless_std::Fenced::on(&b, guard.node_path()).unwrap();
    late.set_data("/job", b"late", None).unwrap();
    guard.release().await.unwrap();
    assert_eq!(late.commit().await, Err(Error::Fenced));
    assert_eq!(zk.node("/job").unwrap().data, b"v1");
}

/// The lock's other ways in: `try_acquire` and `acquire_timeout` take a
/// free lock and give up on a held one (taking their node away), the
/// revocable ones likewise; a guard says whether it holds.
#[tokio::test(start_paused = true)]
async fn try_and_timed_acquisitions_take_a_free_lock_and_give_up_on_a_held_one() {
    let zk = SimServer::new();
    let (a, b) = (zk.connect(), zk.connect());
    let lock_a = Lock::new(&a, DIR).unwrap();
    assert_eq!(lock_a.dir(), DIR);
    assert!(format!("{lock_a:?}").contains(DIR));
    assert_eq!(
        herdless_std::ReadWriteLock::new(&a, DIR)
            .unwrap()
            .read()
            .contender(),
        herdless_core::lock::Contender::Reader
    );
    let lock_b = Lock::new(&b, DIR).unwrap();
    let nodes = |zk: &SimServer| under(zk, DIR).len();

    let guard = lock_a.try_acquire().await.unwrap().expect("free: taken");
    assert!(guard.is_held());
    assert!(format!("{guard:?}").contains(guard.node_path()));
    assert!(lock_b.try_acquire().await.unwrap().is_none());
    assert!(lock_b
        .acquire_timeout(Duration::from_millis(200))
        .await
        .unwrap()
        .is_none());
    assert!(lock_b.try_acquire_revocable().await.unwrap().is_none());
    assert!(lock_b
        .acquire_revocable_timeout(Duration::from_millis(200))
        .await
        .unwrap()
        .is_none());
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(nodes(&zk), 1, "every attempt that gave up took its node");
    assert!(lock_b.requests_sent() > 4);
    assert!(
        lock_b.notifications() > 1,
        "each attempt heard its own node go"
    );
    zk.expire(a.session_id());
    guard.lost().await;
    assert!(!guard.is_held());

    let timed = lock_b
        .acquire_timeout(Duration::from_secs(1))
        .await
        .unwrap()
        .expect("free: taken before the deadline");
    timed.release().await.unwrap();
    let revocable = lock_b
        .try_acquire_revocable()
        .await
        .unwrap()
        .expect("free: taken");
    let node = revocable.node_path().to_owned();
    revocable.release().await.unwrap();
    assert!(zk.node(&node).is_none(), "release waits for the delete");
    let revocable = lock_b
        .acquire_revocable_timeout(Duration::from_secs(1))
        .await
        .unwrap()
        .expect("free: taken");
    assert!(format!("{revocable:?}").contains(revocable.node_path()));
    assert!(
        tokio::time::timeout(Duration::from_secs(1), revocable.revocation_requested())
            .await
            .is_err(),
        "nobody asked"
    );
    revocable.release().await.unwrap();
    assert_eq!(nodes(&zk), 0);
}

/// A revocable waiter whose node is deleted by a forced revocation gives
/// up with `Revoked`.
#[tokio::test(start_paused = true)]
async fn a_revocable_waiter_revoked_by_force_gives_up() {
    let zk = SimServer::new();
    let (a, b, c) = (zk.connect(), zk.connect(), zk.connect());
    let guard = Lock::new(&a, DIR).unwrap().acquire().await.unwrap();
    let waiting = tokio::spawn({
        let b = b.clone();
        async move { Lock::new(&b, DIR).unwrap().acquire_revocable().await }
    });
    tokio::time::sleep(Duration::from_millis(20)).await;
    let waiter = under(&zk, DIR)
        .into_iter()
        .find(|p| p != guard.node_path())
        .expect("b queued");
    herdless_std::revoke_forced(&c, &waiter, Duration::from_millis(10))
        .await
        .unwrap();
    let outcome = tokio::time::timeout(Duration::from_secs(1), waiting)
        .await
        .expect("the waiter gives up")
        .unwrap();
    assert!(matches!(outcome, Err(Error::Revoked)), "{outcome:?}");
    guard.release().await.unwrap();
}

/// One `Lock` shared by tasks of one process: each acquire is a contender
/// of its own, so they exclude one another as separate processes do (a
/// Curator `InterProcessMutex` would re-enter on one thread instead).
#[tokio::test(start_paused = true)]
async fn tasks_sharing_one_lock_exclude_one_another() {
    let zk = SimServer::new();
    let client = zk.connect();
    let lock = Arc::new(Lock::new(&client, "/locks/shared-handle").unwrap());
    let inside = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for _ in 0..4 {
        let (lock, inside) = (lock.clone(), inside.clone());
        tasks.push(tokio::spawn(async move {
            for _ in 0..5 {
                let guard = lock.acquire().await.unwrap();
                assert_eq!(inside.fetch_add(1, Ordering::SeqCst), 0, "two holders");
                tokio::time::sleep(Duration::from_millis(3)).await;
                inside.fetch_sub(1, Ordering::SeqCst);
                guard.release().await.unwrap();
            }
        }));
    }
    for task in tasks {
        within(Duration::from_secs(30), "the tasks", task)
            .await
            .unwrap();
    }
    let left: Vec<_> = zk
        .tree()
        .into_iter()
        .filter(|p| p.starts_with("/locks/shared-handle/"))
        .collect();
    assert!(left.is_empty(), "nodes left behind: {left:?}");
}
