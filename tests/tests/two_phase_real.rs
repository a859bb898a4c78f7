//! Two-phase commit against a real ZooKeeper 3.8: all commit, one aborts,
//! one site crashes before voting, a site that comes after the decision.

use std::time::{Duration, Instant};

use herdless_std::two_phase::{Coordinator, Outcome, Site, Variant, Vote};
use herdless_std::Client;
use herdless_tests::{Proxy, ZkServer};

const SESSION: Duration = Duration::from_secs(30);
const SHORT_SESSION: Duration = Duration::from_secs(2);
const EPHEMERAL: Variant = Variant::Coordinated {
    ephemeral_votes: true,
};

async fn client(server: &ZkServer) -> Client {
    herdless_std::connect(&server.addr(), SESSION)
        .await
        .expect("connect to the test server")
}

async fn run_sites(server: &ZkServer, tx: &str, variant: Variant, votes: &[Vote]) -> Vec<Outcome> {
    let mut tasks = Vec::new();
    for (i, vote) in votes.iter().enumerate() {
        let c = client(server).await;
        let (tx, vote) = (tx.to_owned(), *vote);
        tasks.push(tokio::spawn(async move {
            let site = Site::join(&c, &tx, &format!("site-{i}"), variant)
                .await
                .unwrap();
            // A site whose join found the outcome already decided (another
            // site's abort can decide it before this one connects) is not
            // handed the body, as `Site::body` documents.
            match site.body() {
                None => assert!(
                    site.decided().is_some(),
                    "no body only for a site that joined after the decision"
                ),
                Some(body) => assert_eq!(body, b"move 10 from a to b"),
            }
            match site.vote(vote).await {
                Ok(()) | Err(herdless_std::Error::InvalidState) => {}
                Err(e) => panic!("vote failed: {e}"),
            }
            site.outcome().await.unwrap()
        }));
    }
    let mut outcomes = Vec::new();
    for t in tasks {
        outcomes.push(
            tokio::time::timeout(Duration::from_secs(20), t)
                .await
                .expect("the site learns the outcome")
                .unwrap(),
        );
    }
    outcomes
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn all_commit_commits_everywhere_in_every_variant() {
    let server = ZkServer::start();
    let c = client(&server).await;
    for (n, variant) in [
        Variant::AllWatch,
        Variant::Coordinated {
            ephemeral_votes: false,
        },
        EPHEMERAL,
    ]
    .into_iter()
    .enumerate()
    {
        let tx = format!("/tx/all-commit-{n}");
        let names = ["site-0", "site-1", "site-2"];
        let started = Instant::now();
        let coordinator = Coordinator::start(
            &c,
            &tx,
            b"move 10 from a to b",
            &names,
            variant,
            Duration::from_secs(30),
        )
        .await
        .unwrap();
        let outcomes = run_sites(&server, &tx, variant, &[Vote::Commit; 3]).await;
        assert_eq!(outcomes, [Outcome::Commit; 3]);
        assert_eq!(coordinator.outcome().await.unwrap(), Outcome::Commit);
        let (record, _) = c.get_data(&format!("{tx}/decision")).await.unwrap();
        assert_eq!(record, b"commit");
        println!("{variant:?}: 3 sites committed in {:?}", started.elapsed());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_abort_aborts_everywhere() {
    let server = ZkServer::start();
    let c = client(&server).await;
    for (n, variant) in [Variant::AllWatch, EPHEMERAL].into_iter().enumerate() {
        let tx = format!("/tx/one-aborts-{n}");
        let coordinator = Coordinator::start(
            &c,
            &tx,
            b"move 10 from a to b",
            &["site-0", "site-1", "site-2"],
            variant,
            Duration::from_secs(30),
        )
        .await
        .unwrap();
        let outcomes = run_sites(
            &server,
            &tx,
            variant,
            &[Vote::Commit, Vote::Abort, Vote::Commit],
        )
        .await;
        assert_eq!(outcomes, [Outcome::Abort; 3]);
        assert_eq!(coordinator.outcome().await.unwrap(), Outcome::Abort);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_site_that_crashes_before_voting_aborts_instead_of_hanging() {
    let server = ZkServer::start();
    let c = client(&server).await;
    let tx = "/tx/crash";
    let coordinator = Coordinator::start(
        &c,
        tx,
        b"move 10 from a to b",
        &["steady", "crashing"],
        EPHEMERAL,
        // Far beyond the crash's detection: the abort must come from the
        // vanished ephemeral vote node, not from the deadline.
        Duration::from_secs(60),
    )
    .await
    .unwrap();
    let steady_client = client(&server).await;
    let steady = Site::join(&steady_client, tx, "steady", EPHEMERAL)
        .await
        .unwrap();
    steady.vote(Vote::Commit).await.unwrap();

    let proxy = Proxy::start(server.port());
    let crashing_client = herdless_std::connect(&proxy.addr(), SHORT_SESSION)
        .await
        .unwrap();
    let crashing = Site::join(&crashing_client, tx, "crashing", EPHEMERAL)
        .await
        .unwrap();
    // Its node exists; then the host vanishes before voting.
    let deadline = Instant::now() + Duration::from_secs(10);
    while c
        .check_stat(&format!("{tx}/crashing"))
        .await
        .unwrap()
        .is_none()
    {
        assert!(
            Instant::now() < deadline,
            "the crashing site's node never appeared"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let crashed_at = Instant::now();
    proxy.cut();
    std::mem::forget(crashing);
    let outcome = tokio::time::timeout(Duration::from_secs(20), coordinator.outcome())
        .await
        .expect("decided long before the deadline")
        .unwrap();
    assert_eq!(outcome, Outcome::Abort);
    assert_eq!(steady.outcome().await.unwrap(), Outcome::Abort);
    println!(
        "a crashed site aborted the transaction {:?} after it vanished (session timeout {SHORT_SESSION:?})",
        crashed_at.elapsed()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_site_is_aborted_by_the_deadline_and_a_late_site_learns_the_outcome() {
    let server = ZkServer::start();
    let c = client(&server).await;
    let tx = "/tx/silent";
    let variant = Variant::Coordinated {
        ephemeral_votes: false,
    };
    let started = Instant::now();
    let coordinator = Coordinator::start(
        &c,
        tx,
        b"move 10 from a to b",
        &["voter", "silent"],
        variant,
        Duration::from_secs(2),
    )
    .await
    .unwrap();
    let voter_client = client(&server).await;
    let voter = Site::join(&voter_client, tx, "voter", variant)
        .await
        .unwrap();
    voter.vote(Vote::Commit).await.unwrap();
    assert_eq!(
        tokio::time::timeout(Duration::from_secs(10), coordinator.outcome())
            .await
            .expect("the deadline decides")
            .unwrap(),
        Outcome::Abort
    );
    assert!(started.elapsed() >= Duration::from_secs(2));

    // The silent site shows up after the decision: it learns it at once
    // and may not vote any more.
    let late_client = client(&server).await;
    let late = Site::join(&late_client, tx, "silent", variant)
        .await
        .unwrap();
    assert_eq!(late.decided(), Some(Outcome::Abort));
    assert_eq!(
        late.vote(Vote::Commit).await.unwrap_err(),
        herdless_std::Error::InvalidState
    );
}
