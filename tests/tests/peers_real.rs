//! herdless beside Curator's and Kazoo's own recipes on one path, against a
//! real ZooKeeper 3.8: each library's program (`tests/curator`,
//! `tests/kazoo`) and herdless-std contenders naming their nodes that
//! library's way take the recipe in turn, and everyone journals their
//! critical sections in one file (`herdless_tests::journal`). A writer, a
//! lock holder or a leader must be alone; readers may share.
//!
//! Each test starts its own server on a free loopback port.

use std::process::Child;
use std::sync::Arc;
use std::time::{Duration, Instant};

use herdless_core::naming::Flavour;
use herdless_std::{Election, ReadWriteLock};
use herdless_tests::journal::{self, Journal};
use herdless_tests::peers::{self, Peer};
use herdless_tests::ZkServer;

/// How long the herdless contenders take turns.
const RUN: Duration = Duration::from_secs(8);
/// How long a peer program does: a little more, as a JVM takes a moment
/// to start.
const PEER_SECONDS: u64 = 10;

/// What a herdless contender takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    Read,
    Write,
    Lead,
}

/// Rounds of one herdless-std contender, on a session of its own, until
/// `RUN` is over: the entries it made.
async fn herdless_rounds(
    addr: String,
    dir: &'static str,
    flavour: Flavour,
    role: Role,
    who: String,
    journal: Arc<Journal>,
) -> usize {
    let client = herdless_std::connect(&addr, Duration::from_secs(10))
        .await
        .expect("connect to the test server");
    let until = Instant::now() + RUN;
    let wait = Duration::from_secs(1);
    let mut entries = 0;
    let rw = ReadWriteLock::with_flavour(&client, dir, flavour).unwrap();
    let election = Election::with_flavour(&client, dir, flavour).unwrap();
    while Instant::now() < until {
        let work = Duration::from_millis(entries as u64 % 6);
        if role == Role::Lead {
            let Some(leadership) = election.campaign_timeout(wait).await.unwrap() else {
                continue;
            };
            journal.note("enter", &who);
            tokio::time::sleep(work).await;
            journal.note("leave", &who);
            leadership.resign().await.unwrap();
        } else {
            let lock = if role == Role::Read {
                rw.read()
            } else {
                rw.write()
            };
            let Some(guard) = lock.acquire_timeout(wait).await.unwrap() else {
                continue;
            };
            journal.note("enter", &who);
            tokio::time::sleep(work).await;
            journal.note("leave", &who);
            guard.release().await.unwrap();
        }
        entries += 1;
    }
    entries
}

/// `peer`'s programs in `modes` and herdless contenders in `roles` on
/// `dir` of one server: nobody may be inside beside a writer, and everyone
/// must get in.
async fn beside(peer: Peer, dir: &'static str, modes: &[&str], roles: &[Role]) {
    let server = ZkServer::start();
    let scratch = tempfile::tempdir().expect("a scratch directory");
    let journal = Arc::new(Journal::create(scratch.path().join("journal")));
    let mut programs: Vec<Child> = modes
        .iter()
        .map(|mode| peer.spawn(&server.addr(), dir, &journal, PEER_SECONDS, mode))
        .collect();
    let contenders: Vec<_> = roles
        .iter()
        .enumerate()
        .map(|(k, &role)| {
            let who = format!("herdless-{k}-{role:?}").to_lowercase();
            let task = herdless_rounds(
                server.addr(),
                dir,
                peer.flavour(),
                role,
                who.clone(),
                journal.clone(),
            );
            (who, tokio::spawn(task))
        })
        .collect();
    let mut figures = Vec::new();
    for (who, task) in contenders {
        let entries = task.await.expect("a herdless contender");
        figures.push(format!("{who}: {entries}"));
        assert!(entries > 0, "{who} never got in");
    }
    // Ours (the children we started): they end by themselves once their
    // time is up.
    let mut said = Vec::new();
    for program in &mut programs {
        said.push(peers::said(program, Duration::from_secs(PEER_SECONDS + 20)).await);
    }
    let lines = journal.read();
    let found = journal::overlaps(&lines, |who| who.ends_with("read"));
    println!(
        "{dir} beside {peer:?} {modes:?}: {} violations, {} shared entries; herdless {}; {peer:?} said {said:?}",
        found.violations,
        found.shared,
        figures.join(", "),
    );
    assert_eq!(found.violations, 0, "a writer or leader was not alone");
    for (mode, said) in modes.iter().zip(&said) {
        assert!(
            said.contains("entries") && !said.contains("entries 0 "),
            "the {peer:?} {mode} program got in: {said:?}"
        );
    }
}

/// Curator's `InterProcessReadWriteLock`, both sides, beside herdless's
/// shared lock named Curator's way.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_shared_lock_beside_curators_read_write_lock_keeps_writers_alone() {
    beside(
        Peer::Curator,
        "/peers/curator-rw",
        &["read", "write"],
        &[Role::Read, Role::Write],
    )
    .await;
}

/// Kazoo's `WriteLock` beside herdless's readers and writer named Kazoo's
/// way. Not Kazoo 2.8's `ReadLock`: it waits for the highest write node
/// in the directory, one that queued after it included (kazoo#649), so
/// beside any later writer, Kazoo's own too, it stalls until its timeout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_shared_lock_beside_kazoos_write_lock_keeps_writers_alone() {
    beside(
        Peer::Kazoo,
        "/peers/kazoo-rw",
        &["write"],
        &[Role::Read, Role::Read, Role::Write],
    )
    .await;
}

/// Curator's `LeaderLatch` beside herdless candidates named its way.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_election_beside_curators_leader_latch_keeps_one_leader() {
    beside(
        Peer::Curator,
        "/peers/curator-election",
        &["latch"],
        &[Role::Lead, Role::Lead],
    )
    .await;
}

/// Kazoo's `Election` beside herdless candidates named its way.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_election_beside_kazoos_election_keeps_one_leader() {
    beside(
        Peer::Kazoo,
        "/peers/kazoo-election",
        &["election"],
        &[Role::Lead, Role::Lead],
    )
    .await;
}
