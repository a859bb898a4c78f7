//! A transaction across three sites: once with one site crashing before
//! it votes (abort, without waiting for a deadline), once all committing.

use std::time::{Duration, Instant};

use herdless_core::sim::World;
use herdless_core::two_phase::{TwoPhase, TxEvent, Variant, Vote};
use herdless_std::two_phase::{Coordinator, Site};

use super::title;

const VARIANT: Variant = Variant::Coordinated {
    ephemeral_votes: true,
};
const SITES: [&str; 3] = ["bank-a", "bank-b", "bank-c"];

/// The scene on the in-memory ZooKeeper.
pub fn simulated(seed: u64) {
    title("two-phase commit: sites vote through ZooKeeper; a crashed site aborts");
    for (tx, crash) in [
        ("/herdless-demo/tx/t1", Some(1)),
        ("/herdless-demo/tx/t2", None),
    ] {
        println!(
            "transaction {tx}{}",
            if crash.is_some() {
                " (bank-b will crash before voting)"
            } else {
                ""
            }
        );
        let mut world: World<TwoPhase> = World::new(seed);
        let coordinator = world.add_peer(TwoPhase::new(tx).expect("a valid path"));
        world
            .act(coordinator, |t| {
                t.coordinate(b"move 10 from a to c", &SITES, VARIANT, None)
            })
            .expect("coordinate");
        world.run_until_quiet(10_000);
        for name in SITES {
            let p = world.add_peer(TwoPhase::new(tx).expect("a valid path"));
            world
                .act(p, |t| t.participate(name, VARIANT))
                .expect("participate");
        }
        world.run_until_quiet(10_000);
        for (i, name) in SITES.iter().enumerate() {
            let p = i + 1;
            if crash == Some(i) {
                println!(
                    "  {name} CRASHES before voting: its ephemeral vote node goes with its session"
                );
                let session = world.peers[p].session();
                world.zk.expire(session);
            } else if let Some(outcome) = world.peers[p].recipe.decision() {
                println!("  {name} need not vote: already decided {outcome:?}");
            } else {
                world.act(p, |t| t.vote(Vote::Commit)).expect("vote");
                println!("  {name} votes commit");
            }
            world.run_until_quiet(10_000);
        }
        for (p, who) in [
            (0, "coordinator"),
            (1, SITES[0]),
            (2, SITES[1]),
            (3, SITES[2]),
        ] {
            for event in world.peers[p].take_events() {
                if let TxEvent::Decided(outcome) = event {
                    println!("  {who} learns: {outcome:?}");
                }
            }
        }
        let record = world
            .zk
            .node(&format!("{tx}/decision"))
            .map(|n| String::from_utf8_lossy(&n.data).into_owned());
        println!("  {tx}/decision holds {record:?}\n");
    }
}

/// The scene against a real server.
pub async fn real(addr: &str) -> Result<(), herdless_std::Error> {
    title("two-phase commit: three sites vote through ZooKeeper");
    let client = herdless_std::connect(addr, Duration::from_secs(10)).await?;
    let tx = format!(
        "/herdless-demo/tx/t-{}",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis())
            .unwrap_or_default()
    );
    let start = Instant::now();
    let coordinator = Coordinator::start(
        &client,
        &tx,
        b"move 10 from a to c",
        &SITES,
        VARIANT,
        Duration::from_secs(10),
    )
    .await?;
    println!(
        "  [{:>4} ms] coordinator created {tx}",
        start.elapsed().as_millis()
    );
    let mut sites = Vec::new();
    for name in SITES {
        let c = herdless_std::connect(addr, Duration::from_secs(10)).await?;
        let site = Site::join(&c, &tx, name, VARIANT).await?;
        site.vote(Vote::Commit).await?;
        println!(
            "  [{:>4} ms] {name} voted commit",
            start.elapsed().as_millis()
        );
        sites.push((c, site));
    }
    let outcome = coordinator.outcome().await?;
    println!(
        "  [{:>4} ms] decided: {outcome:?}",
        start.elapsed().as_millis()
    );
    for (_, site) in &sites {
        site.outcome().await?;
    }
    Ok(())
}
