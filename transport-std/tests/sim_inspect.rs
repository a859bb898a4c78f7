//! What `herdless_std::inspect` shows operators, on the in-memory
//! ZooKeeper: each recipe's directory recognised from its names (herdless's,
//! Curator's and Kazoo's), contenders and items in their order, holders by
//! each recipe's rule, the nodes' owners, ages and data, and the errors a
//! missing or refused directory gives. Every test runs on tokio's paused
//! clock.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use herdless_std::inspect::{
    self, Contender, Inspection, Node, RecipeKind, Transaction, VoteState,
};
use herdless_std::queue::Queue;
use herdless_std::sim::{SimClient, SimServer};
use herdless_std::two_phase::Outcome;
use herdless_std::{Election, Error, Flavour, Lock, NodeKind, PathError, ZkError};
use tokio::task::JoinHandle;
use tokio::time::sleep;

mod support;
use support::{within, MS};

const GUID: &str = "0b4c1e57-6c6e-4b39-a0a2-2f7f3f5cf3a1";
const HEX: &str = "0b4c1e576c6e4b39a0a22f7f3f5cf3a1";

/// A server with `dir` and, under it, each of `children` (name, data).
fn server_with(dir: &str, children: &[(&str, &[u8])]) -> (SimServer, SimClient) {
    let zk = SimServer::new();
    let mut at = String::new();
    for segment in dir.split('/').skip(1) {
        at = format!("{at}/{segment}");
        zk.create(&at, b"").unwrap();
    }
    for (name, data) in children {
        zk.create(&format!("{dir}/{name}"), data).unwrap();
    }
    let client = zk.connect();
    (zk, client)
}

async fn inspect_ok(client: &SimClient, dir: &str) -> Inspection {
    within(
        Duration::from_secs(1),
        "inspect",
        inspect::inspect(client, dir),
    )
    .await
    .unwrap()
}

fn names(contenders: &[Contender]) -> Vec<&str> {
    contenders.iter().map(|c| c.node.name.as_str()).collect()
}

fn holders(seen: &Inspection) -> Vec<&str> {
    seen.holders().map(|c| c.node.name.as_str()).collect()
}

fn millis(t: SystemTime) -> u128 {
    t.duration_since(UNIX_EPOCH).unwrap().as_millis()
}

#[tokio::test(start_paused = true)]
async fn a_lock_shared_by_three_libraries_in_sequence_order() {
    const DIR: &str = "/locks/printer";
    let curator = format!("_c_{GUID}-lock-0000000007");
    let kazoo = format!("{HEX}__lock__0000000003");
    let (zk, client) = server_with(DIR, &[]);
    let before = millis(SystemTime::now());
    let guard = within(
        Duration::from_secs(1),
        "acquire",
        Lock::new(&client, DIR).unwrap().acquire(),
    )
    .await
    .unwrap();
    zk.create(&format!("{DIR}/{curator}"), b"curator's")
        .unwrap();
    zk.create(&format!("{DIR}/{kazoo}"), b"kazoo's").unwrap();
    zk.create(&format!("{DIR}/notes"), b"").unwrap();
    let after = millis(SystemTime::now());

    let seen = inspect_ok(&client, DIR).await;
    assert_eq!(seen.path, DIR);
    assert_eq!(seen.recipe, RecipeKind::Lock);
    let ours = guard.node_path().rsplit('/').next().unwrap();
    assert_eq!(names(&seen.contenders), [ours, &kazoo, &curator]);
    assert_eq!(holders(&seen), [ours]);
    let flavours: Vec<_> = seen.contenders.iter().map(|c| c.flavour).collect();
    assert_eq!(
        flavours,
        [
            Some(Flavour::Recipes),
            Some(Flavour::Kazoo),
            Some(Flavour::Curator)
        ]
    );
    assert!(seen.contenders.iter().all(|c| c.kind == NodeKind::Lock));
    let sequences: Vec<_> = seen.contenders.iter().map(|c| c.sequence).collect();
    assert_eq!(&sequences[1..], [3, 7]);
    assert_eq!(seen.others, ["notes"]);
    assert!(seen.items.is_empty() && seen.acknowledgement.is_none());

    let (mine, theirs) = (&seen.contenders[0].node, &seen.contenders[2].node);
    assert_eq!(mine.path, guard.node_path());
    assert_eq!(mine.owner_session, Some(client.session_id()));
    assert_eq!(theirs.path, format!("{DIR}/{curator}"));
    assert_eq!(theirs.owner_session, None, "a persistent node has no owner");
    assert_eq!(theirs.data, b"curator's");
    assert!(mine.czxid < theirs.czxid, "zxids follow creation");
    for c in &seen.contenders {
        let created = millis(c.node.created);
        assert!(
            (before..=after).contains(&created),
            "{} created at {created}, not within [{before}, {after}]",
            c.node.name
        );
    }
    // Ages run on the wall clock, as the nodes' creation times do.
    std::thread::sleep(20 * MS);
    let age = seen.contenders[0].node.age();
    assert!((20 * MS..Duration::from_secs(60)).contains(&age), "{age:?}");
    drop(guard);
}

#[tokio::test(start_paused = true)]
async fn a_shared_lock_is_held_by_the_readers_before_the_first_writer() {
    const DIR: &str = "/locks/table";
    let read = format!("{GUID}-read-0000000001");
    let kazoo_read = format!("{HEX}__rlock__0000000002");
    let write = format!("_c_{GUID}-__WRIT__0000000004");
    let late_read = format!("_c_{GUID}-__READ__0000000005");
    let (_zk, client) = server_with(
        DIR,
        &[
            (&late_read, b""),
            (&write, b""),
            (&kazoo_read, b""),
            (&read, b""),
        ],
    );
    let seen = inspect_ok(&client, DIR).await;
    assert_eq!(seen.recipe, RecipeKind::SharedLock);
    assert_eq!(
        names(&seen.contenders),
        [&read, &kazoo_read, &write, &late_read]
    );
    assert_eq!(holders(&seen), [&read, &kazoo_read]);
    let kinds: Vec<_> = seen.contenders.iter().map(|c| c.kind).collect();
    assert_eq!(
        kinds,
        [
            NodeKind::Read,
            NodeKind::Read,
            NodeKind::Write,
            NodeKind::Read
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn an_election_shows_its_leader_and_acknowledgement() {
    const DIR: &str = "/election/gateway";
    let (zk, a) = server_with(DIR, &[]);
    let b = zk.connect();
    let leading = within(
        Duration::from_secs(1),
        "campaign",
        Election::new(&a, DIR)
            .unwrap()
            .with_data(b"10.0.0.7")
            .unwrap()
            .campaign(),
    )
    .await
    .unwrap();
    let waiting = tokio::spawn({
        let b = b.clone();
        async move { Election::new(&b, DIR).unwrap().campaign().await }
    });
    let leader = leading.node_path().rsplit('/').next().unwrap().to_owned();
    let seen = within(Duration::from_secs(1), "the acknowledgement", async {
        loop {
            let seen = inspect_ok(&a, DIR).await;
            if seen.acknowledgement.is_some() && seen.contenders.len() == 2 {
                return seen;
            }
            sleep(10 * MS).await;
        }
    })
    .await;
    assert_eq!(seen.recipe, RecipeKind::Election);
    assert_eq!(holders(&seen), [leader.as_str()]);
    assert_eq!(seen.contenders[1].node.owner_session, Some(b.session_id()));
    assert!(seen
        .contenders
        .iter()
        .all(|c| c.kind == NodeKind::Candidate));
    assert_eq!(
        seen.acknowledgement,
        Some((leader.clone(), b"10.0.0.7".to_vec()))
    );
    assert!(seen.others.is_empty(), "{:?}", seen.others);
    waiting.abort();
    drop(leading);
}

#[tokio::test(start_paused = true)]
async fn an_acknowledgement_alone_is_an_election_and_a_malformed_one_is_other() {
    let candidate = format!("{GUID}-n_0000000009");
    let ack = format!("{candidate}\nhost-9");
    let (_zk, client) = server_with("/e", &[("leader", ack.as_bytes())]);
    let seen = inspect_ok(&client, "/e").await;
    assert_eq!(seen.recipe, RecipeKind::Election);
    assert_eq!(seen.acknowledgement, Some((candidate, b"host-9".to_vec())));
    assert!(seen.others.is_empty());

    let (_zk, client) = server_with("/e", &[("leader", b"no newline")]);
    let seen = inspect_ok(&client, "/e").await;
    assert_eq!(seen.recipe, RecipeKind::Other);
    assert_eq!(seen.acknowledgement, None);
    assert_eq!(seen.others, ["leader"]);
}

#[tokio::test(start_paused = true)]
async fn a_priority_queue_lists_its_items_in_the_order_they_are_taken() {
    const DIR: &str = "/jobs";
    let zk = SimServer::new();
    let client = zk.connect();
    let queue = Queue::priority(&client, DIR).await.unwrap();
    let mut put = Vec::new();
    for (data, priority) in [("b", 50), ("urgent", 1), ("c", 50), ("late", 90)] {
        let path = queue
            .put_with_priority(data.as_bytes(), priority)
            .await
            .unwrap();
        put.push((path, data));
    }
    let seen = inspect_ok(&client, DIR).await;
    assert_eq!(seen.recipe, RecipeKind::Queue);
    let order: Vec<_> = seen
        .items
        .iter()
        .map(|i| (i.priority, i.node.data.as_slice()))
        .collect();
    assert_eq!(
        order,
        [
            (1, b"urgent".as_slice()),
            (50, b"b"),
            (50, b"c"),
            (90, b"late")
        ]
    );
    assert!(seen.items[1].sequence < seen.items[2].sequence);
    for item in &seen.items {
        assert!(put.iter().any(|(path, _)| *path == item.node.path));
    }
    assert!(seen.contenders.is_empty() && seen.others.is_empty());
}

#[tokio::test(start_paused = true)]
async fn queue_items_past_the_counters_wrap_come_after_the_ones_before_it() {
    // Same priority: the one numbered just before the wrap is older.
    let (_zk, client) = server_with(
        "/q",
        &[("qn--2147483648", b"after"), ("qn-2147483647", b"before")],
    );
    let seen = inspect_ok(&client, "/q").await;
    let data: Vec<_> = seen.items.iter().map(|i| i.node.data.as_slice()).collect();
    assert_eq!(data, [b"before".as_slice(), b"after"]);
}

#[tokio::test(start_paused = true)]
async fn what_a_directory_is_taken_for() {
    let lock = format!("{GUID}-lock-0000000001");
    let read = format!("{GUID}-read-0000000002");
    let candidate = format!("{GUID}-n_0000000003");
    let cases: [(&[&str], RecipeKind); 7] = [
        (&[], RecipeKind::Empty),
        (&["stray"], RecipeKind::Other),
        (&[&lock], RecipeKind::Lock),
        (&[&lock, "qn-0000000004"], RecipeKind::Lock),
        (&["qn-0000000004", "stray"], RecipeKind::Queue),
        (&[&candidate, &lock], RecipeKind::Election),
        (&[&candidate, &read], RecipeKind::SharedLock),
    ];
    for (children, expected) in cases {
        let with_data: Vec<(&str, &[u8])> = children.iter().map(|c| (*c, &b""[..])).collect();
        let (_zk, client) = server_with("/d", &with_data);
        let seen = inspect_ok(&client, "/d").await;
        assert_eq!(seen.recipe, expected, "{children:?}");
    }
}

#[tokio::test(start_paused = true)]
async fn a_missing_directory_or_a_bad_path_is_a_typed_error() {
    let (_zk, client) = server_with("/d", &[]);
    assert_eq!(
        inspect::inspect(&client, "/nowhere").await,
        Err(Error::Zk(ZkError::NoNode))
    );
    assert_eq!(
        inspect::children(&client, "locks").await,
        Err(Error::Path(PathError::NotAbsolute))
    );
    assert_eq!(
        inspect::barrier(&client, "/d/").await,
        Err(Error::Path(PathError::TrailingSlash))
    );
    assert_eq!(
        inspect::transaction(&client, "/tx/none").await,
        Err(Error::Zk(ZkError::NoNode))
    );
}

#[tokio::test(start_paused = true)]
async fn the_root_lists_its_children_with_one_slash() {
    let (_zk, client) = server_with("/app", &[("x", b"")]);
    let nodes = inspect::children(&client, "/").await.unwrap();
    let app = nodes.iter().find(|n| n.name == "app").expect("/app listed");
    assert_eq!(app.path, "/app");
    assert!(nodes.iter().all(|n| n.path == format!("/{}", n.name)));
}

#[tokio::test(start_paused = true)]
async fn children_come_sorted_by_name_with_their_data() {
    let (_zk, client) = server_with("/g", &[("c", b"3"), ("a", b"1"), ("b", b"2")]);
    let nodes = inspect::children(&client, "/g").await.unwrap();
    let seen: Vec<_> = nodes
        .iter()
        .map(|n| (n.name.as_str(), n.path.as_str(), n.data.as_slice()))
        .collect();
    assert_eq!(
        seen,
        [
            ("a", "/g/a", b"1".as_slice()),
            ("b", "/g/b", b"2"),
            ("c", "/g/c", b"3")
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn a_barrier_node_is_shown_while_it_stands() {
    let (zk, client) = server_with("/b", &[("gate", b"closed")]);
    let node = inspect::barrier(&client, "/b/gate").await.unwrap().unwrap();
    assert_eq!(
        (node.name.as_str(), node.path.as_str(), node.data.as_slice()),
        ("gate", "/b/gate", b"closed".as_slice())
    );
    zk.delete("/b/gate").unwrap();
    assert_eq!(inspect::barrier(&client, "/b/gate").await, Ok(None));
}

#[tokio::test(start_paused = true)]
async fn a_double_barrier_shows_its_processes_and_the_ready_node_apart() {
    let (zk, client) = server_with("/db", &[("p2", b""), ("ready", b""), ("p1", b"")]);
    let seen = inspect::double_barrier(&client, "/db").await.unwrap();
    let processes: Vec<_> = seen.processes.iter().map(|n| n.name.as_str()).collect();
    assert_eq!(processes, ["p1", "p2"]);
    assert_eq!(seen.ready.map(|n| n.path), Some("/db/ready".to_owned()));
    zk.delete("/db/ready").unwrap();
    let seen = inspect::double_barrier(&client, "/db").await.unwrap();
    assert_eq!(seen.processes.len(), 2);
    assert_eq!(seen.ready, None);
}

#[tokio::test(start_paused = true)]
async fn a_transaction_shows_each_sites_vote_and_the_decision() {
    let (zk, client) = server_with(
        "/tx/t1",
        &[
            ("site-c", b"abort"),
            ("site-a", b""),
            ("site-b", b"commit"),
            ("site-d", b"something else"),
        ],
    );
    zk.set_data("/tx/t1", b"transfer 17").unwrap();
    let votes_of = |tx: &Transaction| -> Vec<(String, VoteState)> {
        tx.votes
            .iter()
            .map(|(node, vote)| (node.name.clone(), *vote))
            .collect()
    };
    let tx = inspect::transaction(&client, "/tx/t1").await.unwrap();
    assert_eq!(tx.body, b"transfer 17");
    assert_eq!(
        votes_of(&tx),
        [
            ("site-a".to_owned(), VoteState::Pending),
            ("site-b".to_owned(), VoteState::Commit),
            ("site-c".to_owned(), VoteState::Abort),
            ("site-d".to_owned(), VoteState::Abort),
        ]
    );
    assert_eq!(tx.decision, None);

    zk.create("/tx/t1/decision", b"commit").unwrap();
    let tx = inspect::transaction(&client, "/tx/t1").await.unwrap();
    assert_eq!(tx.decision, Some(Outcome::Commit));
    assert_eq!(tx.votes.len(), 4, "the decision is not a vote");
    zk.set_data("/tx/t1/decision", b"abort").unwrap();
    let tx = inspect::transaction(&client, "/tx/t1").await.unwrap();
    assert_eq!(tx.decision, Some(Outcome::Abort));
}

#[tokio::test(start_paused = true)]
async fn a_refused_directory_or_child_is_the_servers_error() {
    let (zk, client) = server_with("/locks/d", &[("a", b""), ("b", b"")]);
    zk.refuse("/locks/d/b", Some(ZkError::NoAuth));
    assert_eq!(
        inspect::inspect(&client, "/locks/d").await,
        Err(Error::Zk(ZkError::NoAuth)),
        "a child that cannot be read is not silently left out"
    );
    zk.refuse("/locks", Some(ZkError::NoAuth));
    assert_eq!(
        inspect::children(&client, "/locks/d").await,
        Err(Error::Zk(ZkError::NoAuth))
    );
    assert_eq!(
        inspect::barrier(&client, "/locks/d/a").await,
        Err(Error::Zk(ZkError::NoAuth))
    );
    zk.refuse("/locks", None);
    zk.refuse("/locks/d/b", None);
    assert_eq!(
        inspect::children(&client, "/locks/d").await.unwrap().len(),
        2
    );
}

/// `inspect::children(dir)` in a task of its own, its listing sent and
/// held by the server; and the client's session.
async fn listing_held(
    zk: &SimServer,
    client: &SimClient,
    dir: &'static str,
) -> (i64, JoinHandle<Result<Vec<Node>, Error>>) {
    let session = client.session_id();
    zk.hold(session);
    let inspecting = tokio::spawn({
        let client = client.clone();
        async move { inspect::children(&client, dir).await }
    });
    sleep(MS).await;
    assert_eq!(zk.in_flight(session), 1, "the listing was sent");
    (session, inspecting)
}

#[tokio::test(start_paused = true)]
async fn a_child_deleted_between_the_listing_and_its_read_is_left_out() {
    let (zk, client) = server_with("/d", &[("a", b""), ("b", b""), ("c", b"")]);
    let (session, inspecting) = listing_held(&zk, &client, "/d").await;
    // The listing is answered; the reads it leads to are held.
    zk.release(session);
    zk.hold(session);
    zk.delete("/d/b").unwrap();
    sleep(MS).await;
    assert!(zk.in_flight(session) > 0, "the reads were sent");
    zk.release(session);
    let nodes = inspecting.await.unwrap().unwrap();
    let names: Vec<_> = nodes.iter().map(|n| n.name.as_str()).collect();
    assert_eq!(names, ["a", "c"]);
}

#[tokio::test(start_paused = true)]
async fn an_inspection_goes_on_across_a_lost_connection() {
    let (zk, client) = server_with("/d", &[("a", b"1"), ("b", b"2")]);
    let (session, inspecting) = listing_held(&zk, &client, "/d").await;
    // The listing is lost with the connection, and sent again after it.
    zk.fail_in_flight(session);
    zk.release(session);
    let nodes = within(Duration::from_secs(1), "the inspection", inspecting)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(nodes.len(), 2);
    assert_eq!(nodes[1].data, b"2");
}
