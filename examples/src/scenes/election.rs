//! Four devices elect a gateway; the gateway drops off the network, the
//! next takes over; a dashboard follows who the gateway is.

use std::time::{Duration, Instant};

use herdless_core::election::{Election, ElectionEvent, Observer, ObserverEvent};
use herdless_core::naming::Guid;
use herdless_core::sim::{Either, World};
use herdless_core::{Recipe, SessionEvent};
use rand::{Rng, SeedableRng};

use super::title;

const DIR: &str = "/herdless-demo/election/gateway";
const DEVICES: usize = 4;

type Node = Either<Election, Observer>;

fn name(i: usize) -> String {
    format!("edge-{}", i + 1)
}

/// The scene on the in-memory ZooKeeper.
pub fn simulated(seed: u64) {
    title("leader election: devices elect a gateway, the gateway drops off, the next takes over");
    let mut world: World<Node> = World::new(seed);
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let dashboard = world.add_peer(Either::B(Observer::new(DIR).expect("a valid path")));
    world.act(dashboard, |n| {
        if let Either::B(o) = n {
            o.watch();
        }
    });
    for i in 0..DEVICES {
        let mut device: Election = Election::new(DIR).expect("a valid path");
        // Lost, heard or not, once suspended for a session timeout.
        device.set_lost_after(Some(2_000));
        let p = world.add_peer(Either::A(device));
        // As the tokio driver does: the device knows its session id.
        let session_id = world.peers[p].session();
        let now = world.now();
        world.act(p, |n| {
            n.handle_session(now, SessionEvent::Connected { session_id })
        });
        let guid = Guid::from_random_bytes(rng.gen());
        let data = name(i).into_bytes();
        world.act(p, |n| {
            if let Either::A(e) = n {
                e.campaign(guid, &data).expect("campaign");
            }
        });
        // One after the other, so the line is the order of volunteering.
        run(&mut world);
    }

    println!("edge-1's uplink fails");
    let gateway = world.peers[1].session();
    world.zk.disconnect(gateway);
    if !world.peers[1].deliver_one(&mut world.zk) {
        // The device's own driver sees its link go down even with nothing
        // in flight (a client that reconnects by itself may not; the
        // simulator plays that case too).
        let now = world.now();
        world.act(1, |n| n.handle_session(now, SessionEvent::Suspended));
    }
    report(&mut world);
    println!("ZooKeeper expires edge-1's session");
    let before = woken(&world, 1);
    world.zk.expire(gateway);
    run(&mut world);
    println!(
        "  (edge-1's departure woke {} of the 3 waiting devices)",
        woken(&world, 1) - before
    );

    println!("edge-2 resigns for maintenance");
    let before = woken(&world, 2);
    world.act(2, |n| {
        if let Either::A(e) = n {
            e.resign().expect("resign");
        }
    });
    run(&mut world);
    println!(
        "  (edge-2's resignation woke {} of the 2 waiting devices)",
        woken(&world, 2) - before
    );
    for p in 3..=DEVICES {
        world.act(p, |n| {
            if let Either::A(e) = n {
                let _ = e.resign();
            }
        });
    }
    run(&mut world);
    println!(
        "election nodes left: {:?}",
        world.zk.children(DIR).unwrap_or_default()
    );
}

/// Runs until quiet, reporting after every step.
fn run(world: &mut World<Node>) {
    report(world);
    while world.step().is_some() {
        report(world);
    }
}

/// Watch notifications delivered to the devices other than peer `leaving`.
fn woken(world: &World<Node>, leaving: usize) -> u64 {
    (1..=DEVICES)
        .filter(|p| *p != leaving)
        .map(|p| world.zk.notifications_delivered(world.peers[p].session()))
        .sum()
}

fn report(world: &mut World<Node>) {
    for p in 0..world.peers.len() {
        for event in world.peers[p].take_events() {
            match event {
                Either::A(e) => {
                    let who = name(p - 1);
                    match e {
                        ElectionEvent::Leading => println!("  {who} LEADS: it is the gateway"),
                        ElectionEvent::Following { leader } => {
                            println!("  {who} follows (leader's node ends in {leader})")
                        }
                        ElectionEvent::Suspended => println!(
                            "  {who} is told: SUSPENDED, not sure it still leads: stops forwarding at once"
                        ),
                        ElectionEvent::Lost => println!("  {who} is told: leadership LOST"),
                        ElectionEvent::Resigned => println!("  {who} resigned; its nodes are gone"),
                        other => println!("  {who}: {other:?}"),
                    }
                }
                Either::B(ObserverEvent::Changed) => {
                    if let Either::B(o) = &world.peers[p].recipe {
                        match o.leader() {
                            Some(ack) => println!(
                                "  dashboard: gateway is {}",
                                String::from_utf8_lossy(ack.data)
                            ),
                            None => println!("  dashboard: no gateway right now"),
                        }
                    }
                }
                Either::B(other) => println!("  dashboard: {other:?}"),
            }
        }
    }
}

/// The scene against a real server: edge-1 leads and crashes (its runtime
/// dies without closing its session), edge-2 takes over once the server
/// expires it, then resigns to edge-3; a dashboard follows.
pub async fn real(addr: &str) -> Result<(), herdless_std::Error> {
    title("leader election: devices elect a gateway, the gateway crashes, the next takes over");
    let start = Instant::now();
    let ms = move || start.elapsed().as_millis();
    let dashboard_client = herdless_std::connect(addr, Duration::from_secs(10)).await?;
    let mut dashboard = herdless_std::election::watch_leader(&dashboard_client, DIR)?;
    let (crashed_tx, crashed_rx) = tokio::sync::oneshot::channel::<Instant>();
    let (led_tx, led_rx) = std::sync::mpsc::channel::<()>();
    let crasher = {
        let addr = addr.to_owned();
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Runtime::new().expect("a tokio runtime");
            runtime.block_on(async {
                let client = herdless_std::connect(&addr, Duration::from_secs(2))
                    .await
                    .expect("connect");
                let election = herdless_std::Election::new(&client, DIR)
                    .and_then(|e| e.with_data(b"edge-1"))
                    .expect("an election");
                let leadership = election.campaign().await.expect("campaign");
                println!(
                    "  [{:>5} ms] edge-1 LEADS (session timeout 2 s): {}",
                    ms(),
                    leadership.node_path()
                );
                let _ = led_tx.send(());
                tokio::time::sleep(Duration::from_millis(400)).await;
                println!("  [{:>5} ms] edge-1 CRASHES while leading", ms());
                let _ = crashed_tx.send(Instant::now());
                std::mem::forget(leadership);
            });
            // The runtime dies with its connection; no close-session is sent.
            runtime.shutdown_background();
        })
    };
    let _ = tokio::task::spawn_blocking(move || led_rx.recv()).await;
    let mut devices = Vec::new();
    for i in 1..3 {
        let client = herdless_std::connect(addr, Duration::from_secs(10)).await?;
        let election = herdless_std::Election::new(&client, DIR)?.with_data(name(i).as_bytes())?;
        println!("  [{:>5} ms] {} volunteers", ms(), name(i));
        let (tx, rx) = tokio::sync::oneshot::channel();
        tokio::spawn(async move {
            let leadership = election.campaign().await;
            let _ = tx.send((leadership, Instant::now()));
        });
        // The leadership keeps the session; the device keeps nothing else.
        drop(client);
        devices.push(rx);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // The dashboard follows until it sees edge-3 (changes in between may
    // be skipped: it always reports the latest).
    let follow = async {
        loop {
            match dashboard.changed().await? {
                Some(leader) => {
                    let who = String::from_utf8_lossy(&leader.data).into_owned();
                    println!("  [{:>5} ms] dashboard: gateway is {who}", ms());
                    if who == "edge-3" {
                        return Ok::<(), herdless_std::Error>(());
                    }
                }
                None => println!("  [{:>5} ms] dashboard: no gateway right now", ms()),
            }
        }
    };
    let handover = async {
        let crashed_at = crashed_rx.await.unwrap_or_else(|_| Instant::now());
        let mut devices = devices.into_iter();
        let (second, led_at) = devices.next().expect("edge-2").await.expect("edge-2 runs");
        let second = second?;
        println!(
            "  [{:>5} ms] edge-2 takes over as gateway after {} ms (edge-1's session expired)",
            ms(),
            (led_at - crashed_at).as_millis()
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
        println!("  [{:>5} ms] edge-2 resigns", ms());
        let resigned_at = Instant::now();
        second.resign().await?;
        let (third, led_at) = devices.next().expect("edge-3").await.expect("edge-3 runs");
        let third = third?;
        println!(
            "  [{:>5} ms] edge-3 takes over {:.1} ms after the resignation",
            ms(),
            (led_at - resigned_at).as_secs_f64() * 1e3
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
        third.resign().await
    };
    let (followed_result, handover_result) = tokio::join!(
        tokio::time::timeout(Duration::from_secs(30), follow),
        handover
    );
    handover_result?;
    if let Ok(result) = followed_result {
        result?;
    }
    let _ = crasher.join();
    Ok(())
}
