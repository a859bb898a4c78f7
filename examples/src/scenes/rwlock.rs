//! Dashboards read a catalog together while a publisher writes it alone;
//! then an operator revokes the lock: a nightly job consents, a stubborn
//! dashboard is forced out.

use std::time::{Duration, Instant};

use herdless_core::lock::{Lock, LockEvent};
use herdless_core::naming::Guid;
use herdless_core::revoke::{Revoke, RevokeEvent};
use herdless_core::sim::{Either, World};
use herdless_std::{revoke, revoke_forced, ReadWriteLock};
use rand::Rng;

use super::title;

const CATALOG: &str = "/herdless-demo/rwlock/catalog";
const DASHBOARDS: usize = 4;
const TITLE: &str =
    "shared lock: dashboards read together, writers alone; revocation by consent and by force";

type Node = Either<Lock, Revoke>;

fn acquire(world: &mut World<Node>, i: usize) {
    let guid = Guid::from_random_bytes(world.rng().gen());
    world
        .act(i, |n| n.a_mut().expect("a lock").acquire(guid))
        .expect("acquire");
}

fn release(world: &mut World<Node>, i: usize) {
    world
        .act(i, |n| n.a_mut().expect("a lock").release())
        .expect("release");
}

fn held(world: &World<Node>, i: usize) -> bool {
    world.peers[i].recipe.a().is_some_and(Lock::is_held)
}

fn node_of(world: &World<Node>, i: usize) -> String {
    world.peers[i]
        .recipe
        .a()
        .and_then(|l| l.own_path::<128>())
        .and_then(Result::ok)
        .map(|p| p.to_string())
        .unwrap_or_default()
}

/// The scene on the in-memory ZooKeeper.
pub fn simulated(seed: u64) {
    title(TITLE);
    let mut world: World<Node> = World::new(seed);
    world
        .zk
        .create_persistent(CATALOG, b"")
        .expect("create the lock directory");
    let publisher = world.add_peer(Either::A(Lock::writer(CATALOG).expect("a valid path")));
    let dashboards: Vec<usize> = (0..DASHBOARDS)
        .map(|_| world.add_peer(Either::A(Lock::reader(CATALOG).expect("a valid path"))))
        .collect();
    let job = world.add_peer(Either::A(
        Lock::writer(CATALOG).expect("a valid path").revocable(),
    ));

    acquire(&mut world, publisher);
    world.run_until_quiet(10_000);
    println!("publisher holds the write lock");
    for &d in &dashboards {
        acquire(&mut world, d);
        world.run_until_quiet(10_000);
    }
    let reading = dashboards.iter().filter(|&&d| held(&world, d)).count();
    println!(
        "{DASHBOARDS} dashboards ask to read; reading now: {reading} (each watches the publisher)"
    );
    // Notifications to the dashboards (the publisher also hears its own
    // node go: every lock watches its own node).
    let woken = |world: &World<Node>| -> u64 {
        dashboards
            .iter()
            .map(|&d| world.zk.notifications_delivered(world.peers[d].session()))
            .sum()
    };
    let before = world.zk.stats().clone();
    let woken_before = woken(&world);
    release(&mut world, publisher);
    world.run_until_quiet(10_000);
    let reading = dashboards.iter().filter(|&&d| held(&world, d)).count();
    let after = world.zk.stats();
    println!(
        "publisher releases: {reading} readers hold at once ({} notifications, {} listings)",
        woken(&world) - woken_before,
        after.count("getChildren") - before.count("getChildren")
    );

    acquire(&mut world, job);
    world.run_until_quiet(10_000);
    println!(
        "nightly-job asks to write (revocably): holds {}, waits for the last dashboard",
        held(&world, job)
    );
    for &d in &dashboards {
        release(&mut world, d);
        world.run_until_quiet(10_000);
    }
    println!(
        "dashboards release one by one; nightly-job writes: {}",
        held(&world, job)
    );

    let operator = world.add_peer(Either::B(
        Revoke::new(&node_of(&world, job)).expect("a valid path"),
    ));
    world
        .act(operator, |n| n.b_mut().expect("a revoker").request())
        .expect("request");
    world.run_until_quiet(10_000);
    if world.peers[job]
        .take_events()
        .contains(&Either::A(LockEvent::RevocationRequested))
    {
        println!("operator writes \"unlock\" on its node; nightly-job hears RevocationRequested");
        release(&mut world, job);
        world.run_until_quiet(10_000);
        println!("nightly-job releases by consent");
    }

    // A stubborn dashboard that never consents.
    let stubborn = world.add_peer(Either::A(
        Lock::reader(CATALOG).expect("a valid path").revocable(),
    ));
    acquire(&mut world, stubborn);
    world.run_until_quiet(10_000);
    let node = node_of(&world, stubborn);
    world.peers[operator].recipe = Either::B(Revoke::new(&node).expect("a valid path"));
    let grace = world.now() + 200;
    world
        .act(operator, |n| {
            n.b_mut().expect("a revoker").request_forced(grace)
        })
        .expect("request");
    world.run_until_quiet(10_000);
    let forced = world.peers[operator]
        .take_events()
        .contains(&Either::B(RevokeEvent::Forced));
    let lost = world.peers[stubborn]
        .take_events()
        .contains(&Either::A(LockEvent::Lost));
    println!(
        "a stubborn dashboard ignores the request; after a 200 ms grace the operator deletes its node (forced: {forced})"
    );
    if lost {
        println!("the stubborn dashboard is told the lock is LOST");
    }
    println!(
        "nodes left: {:?}",
        world.zk.children(CATALOG).unwrap_or_default()
    );
}

/// The scene against a real server.
pub async fn real(addr: &str) -> Result<(), herdless_std::Error> {
    title(TITLE);
    let start = Instant::now();
    let ms = move || start.elapsed().as_millis();
    let connect = || herdless_std::connect(addr, Duration::from_secs(10));
    let publisher_client = connect().await?;
    let publisher = ReadWriteLock::new(&publisher_client, CATALOG)?;
    let writing = publisher.write().acquire().await?;
    println!("  [{:>4} ms] publisher holds the write lock", ms());

    let (in_tx, mut in_rx) = tokio::sync::mpsc::unbounded_channel();
    let (done_tx, _) = tokio::sync::broadcast::channel::<()>(1);
    let mut dashboards = Vec::new();
    for i in 1..=DASHBOARDS {
        let client = connect().await?;
        let (in_tx, mut done) = (in_tx.clone(), done_tx.subscribe());
        dashboards.push(tokio::spawn(async move {
            let lock = ReadWriteLock::new(&client, CATALOG)?;
            let reading = lock.read().acquire().await?;
            let _ = in_tx.send(i);
            let _ = done.recv().await;
            reading.release().await
        }));
    }
    drop(in_tx);
    tokio::time::sleep(Duration::from_millis(200)).await;
    println!(
        "  [{:>4} ms] {DASHBOARDS} dashboards ask to read; they wait for the publisher",
        ms()
    );
    writing.release().await?;
    for _ in 0..DASHBOARDS {
        in_rx.recv().await;
    }
    println!(
        "  [{:>4} ms] publisher releases: {DASHBOARDS} readers hold at once",
        ms()
    );

    let job_client = connect().await?;
    let job = ReadWriteLock::new(&job_client, CATALOG)?;
    let job_task = tokio::spawn(async move { job.write().acquire_revocable().await });
    tokio::time::sleep(Duration::from_millis(200)).await;
    println!(
        "  [{:>4} ms] nightly-job asks to write (revocably); it waits for the readers",
        ms()
    );
    let _ = done_tx.send(());
    for d in dashboards {
        d.await.map_err(|_| herdless_std::Error::DriverGone)??;
    }
    let job_guard = job_task
        .await
        .map_err(|_| herdless_std::Error::DriverGone)??;
    println!("  [{:>4} ms] dashboards released; nightly-job writes", ms());

    let operator = connect().await?;
    revoke(&operator, job_guard.node_path()).await?;
    job_guard.revocation_requested().await;
    println!(
        "  [{:>4} ms] operator writes \"unlock\"; nightly-job hears the request",
        ms()
    );
    job_guard.release().await?;
    println!("  [{:>4} ms] nightly-job releases by consent", ms());

    let stubborn_client = connect().await?;
    let stubborn = ReadWriteLock::new(&stubborn_client, CATALOG)?;
    let guard = stubborn.read().acquire_revocable().await?;
    let outcome = revoke_forced(&operator, guard.node_path(), Duration::from_millis(300)).await?;
    println!(
        "  [{:>4} ms] a stubborn dashboard ignores the request; after a 300 ms grace: {outcome:?}",
        ms()
    );
    tokio::time::timeout(Duration::from_secs(5), guard.lost())
        .await
        .map_err(|_| herdless_std::Error::InvalidState)?;
    println!(
        "  [{:>4} ms] the stubborn dashboard is told the lock is LOST",
        ms()
    );
    guard.release().await?;
    Ok(())
}
