//! Four workers start a phase together behind a double barrier and finish
//! it together; a plain barrier holds them until a coordinator lowers it.

use std::time::{Duration, Instant};

use herdless_core::barrier::{Barrier, BarrierEvent};
use herdless_core::double_barrier::{DoubleBarrier, DoubleBarrierEvent};
use herdless_core::sim::World;
use herdless_std::barrier::{Barrier as StdBarrier, DoubleBarrier as StdDouble};

use super::title;

const GATE: &str = "/herdless-demo/barriers/gate";
const PHASE: &str = "/herdless-demo/barriers/phase";
const WORKERS: usize = 4;

/// The scene on the in-memory ZooKeeper.
pub fn simulated(seed: u64) {
    title("barriers: a gate held by a coordinator, then a double barrier around a phase");
    let mut gate: World<Barrier> = World::new(seed);
    let coordinator = gate.add_peer(Barrier::new(GATE).expect("a valid path"));
    gate.act(coordinator, |b| b.set());
    gate.run_until_quiet(10_000);
    for _ in 0..WORKERS {
        let w = gate.add_peer(Barrier::new(GATE).expect("a valid path"));
        gate.act(w, |b| b.wait());
    }
    gate.run_until_quiet(10_000);
    println!("coordinator raised {GATE}; {WORKERS} workers wait on it (one watch each)");
    gate.act(coordinator, |b| b.remove());
    gate.run_until_quiet(10_000);
    let passed = (1..=WORKERS)
        .filter(|&w| gate.peers[w].take_events().contains(&BarrierEvent::Passed))
        .count();
    println!(
        "coordinator lowered it: {passed} workers passed, watches left: {}",
        gate.zk.watch_count()
    );

    let mut phase: World<DoubleBarrier> = World::new(seed);
    for i in 0..WORKERS {
        let p = phase.add_peer(
            DoubleBarrier::new(PHASE, &format!("worker-{}", i + 1)).expect("a valid name"),
        );
        phase.act(p, |d| d.enter(WORKERS as u32)).expect("enter");
        phase.run_until_quiet(10_000);
        let entered = (0..=i)
            .filter(|&j| {
                phase.peers[j]
                    .events()
                    .contains(&DoubleBarrierEvent::Entered)
            })
            .count();
        println!("worker-{} arrives; inside so far: {entered}", i + 1);
    }
    for i in 0..WORKERS {
        phase.act(i, |d| d.leave()).expect("leave");
        phase.run_until_quiet(10_000);
        let left = (0..WORKERS)
            .filter(|&j| phase.peers[j].events().contains(&DoubleBarrierEvent::Left))
            .count();
        println!("worker-{} is done and leaves; out so far: {left}", i + 1);
    }
}

/// The scene against a real server.
pub async fn real(addr: &str) -> Result<(), herdless_std::Error> {
    title("barriers: a gate held by a coordinator, then a double barrier around a phase");
    let start = Instant::now();
    let coordinator = herdless_std::connect(addr, Duration::from_secs(10)).await?;
    let gate = StdBarrier::new(&coordinator, GATE)?;
    gate.set().await?;
    let mut workers = Vec::new();
    for i in 1..=WORKERS {
        let client = herdless_std::connect(addr, Duration::from_secs(10)).await?;
        workers.push(tokio::spawn(async move {
            StdBarrier::new(&client, GATE)?.wait().await?;
            println!(
                "  [{:>4} ms] worker-{i} passed the gate",
                start.elapsed().as_millis()
            );
            let phase = StdDouble::new(&client, PHASE, &format!("worker-{i}"))?;
            let inside = phase.enter(WORKERS as u32).await?;
            println!(
                "  [{:>4} ms] worker-{i} entered the phase",
                start.elapsed().as_millis()
            );
            tokio::time::sleep(Duration::from_millis(50 * i as u64)).await;
            inside.leave().await?;
            println!(
                "  [{:>4} ms] worker-{i} left (all are done)",
                start.elapsed().as_millis()
            );
            Ok::<_, herdless_std::Error>(())
        }));
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    println!(
        "  [{:>4} ms] coordinator lowers the gate",
        start.elapsed().as_millis()
    );
    gate.remove().await?;
    for w in workers {
        w.await.map_err(|_| herdless_std::Error::DriverGone)??;
    }
    Ok(())
}
