//! Five edge devices contend for one lock; one crashes while holding it.
//!
//! By default everything runs on the in-memory ZooKeeper of
//! `herdless-core` (deterministic, no network). With `--zk HOST:PORT` the
//! same scenario runs against a real server through `herdless-std`, and the
//! crash is a real one: the device's runtime dies without closing its
//! session, so the server expires it.

use std::time::{Duration, Instant};

use clap::Parser;
use herdless_core::lock::{Lock, LockEvent};
use herdless_core::naming::Guid;
use herdless_core::sim::World;
use herdless_examples::scenes;
use rand::{Rng, SeedableRng};

const DEVICES: usize = 5;
/// The device that crashes while holding the lock (0-based).
const CRASHER: usize = 1;
const LOCK_DIR: &str = "/herdless-demo/locks/gateway-config";

#[derive(Parser)]
#[command(about = "Five edge devices share a lock; one of them crashes while holding it")]
struct Args {
    /// A real ZooKeeper server (HOST:PORT); the in-memory one when absent.
    #[arg(long)]
    zk: Option<String>,
    /// Seed of the simulated run.
    #[arg(long, default_value_t = 7)]
    seed: u64,
}

fn main() {
    let args = Args::parse();
    match args.zk {
        None => {
            simulated(args.seed);
            scenes::config::simulated(args.seed);
            scenes::membership::simulated(args.seed);
            scenes::names::simulated(args.seed);
            scenes::barrier::simulated(args.seed);
            scenes::queue::simulated(args.seed);
            scenes::two_phase::simulated(args.seed);
            scenes::rwlock::simulated(args.seed);
            scenes::election::simulated(args.seed);
        }
        Some(addr) => {
            let runtime = tokio::runtime::Runtime::new().expect("a tokio runtime");
            let result = runtime.block_on(async {
                real(&addr).await?;
                scenes::config::real(&addr).await?;
                scenes::membership::real(&addr).await?;
                scenes::names::real(&addr).await?;
                scenes::barrier::real(&addr).await?;
                scenes::queue::real(&addr).await?;
                scenes::two_phase::real(&addr).await?;
                scenes::rwlock::real(&addr).await?;
                scenes::election::real(&addr).await
            });
            if let Err(e) = result {
                eprintln!("demo failed: {e}");
                std::process::exit(1);
            }
        }
    }
}

fn name(i: usize) -> String {
    format!("edge-{}", i + 1)
}

/// The scenario on the in-memory ZooKeeper: time is the scheduler's step.
fn simulated(seed: u64) {
    println!("herdless demo on the in-memory ZooKeeper (seed {seed})");
    println!(
        "{DEVICES} edge devices want {LOCK_DIR}; {} will crash while holding it\n",
        name(CRASHER)
    );
    println!(
        "(each device runs the sans-IO lock: {} bytes of state, no allocation)\n",
        std::mem::size_of::<Lock>()
    );
    let mut world: World<Lock> = World::new(seed);
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    for _ in 0..DEVICES {
        world.add_peer(Lock::new(LOCK_DIR).expect("a valid path"));
    }
    world
        .zk
        .create_persistent(LOCK_DIR, b"")
        .expect("set up the lock directory");
    let mut release_at: Vec<Option<usize>> = vec![None; DEVICES];
    let mut served = [false; DEVICES];
    let mut step = 0usize;
    for i in 0..DEVICES {
        world
            .act(i, |l| l.acquire(Guid::from_random_bytes(rng.gen())))
            .expect("acquire");
        println!("[{step:>4}] {} asks for the lock", name(i));
        // Let each request land before the next device asks, so the queue
        // order is the order of asking.
        for _ in 0..4 {
            step += 1;
            world.step();
        }
    }
    while step < 100_000 {
        step += 1;
        if world.step().is_none()
            && release_at.iter().all(Option::is_none)
            && served.iter().all(|s| *s)
        {
            break;
        }
        for i in 0..DEVICES {
            for event in world.peers[i].take_events() {
                match event {
                    LockEvent::Acquired => {
                        let node = world.peers[i].recipe.own_node().unwrap_or("?").to_owned();
                        println!(
                            "[{step:>4}] {} ACQUIRED the lock (node …{})",
                            name(i),
                            &node[node.len() - 15..]
                        );
                        served[i] = true;
                        release_at[i] = Some(step + 40);
                    }
                    LockEvent::Released => {
                        println!("[{step:>4}] {} released; its node is gone", name(i))
                    }
                    LockEvent::Lost => {
                        println!(
                            "[{step:>4}] {} is told: lock LOST (session expired)",
                            name(i)
                        );
                        // A crashed device comes back later with a new session.
                        world.renew_session(i);
                    }
                    other => println!("[{step:>4}] {}: {other:?}", name(i)),
                }
            }
            if let Some(at) = release_at[i].filter(|at| *at <= step) {
                release_at[i] = None;
                if i == CRASHER {
                    println!("[{step:>4}] {} CRASHES while holding the lock", name(i));
                    world.zk.expire(world.peers[i].session());
                    println!(
                        "[{step:>4}] ZooKeeper expires its session and deletes its ephemeral node"
                    );
                } else {
                    println!("[{step:>4}] {} releases after its work", name(i));
                    world.act(i, |l| l.release()).expect("release");
                }
                let _ = at;
            }
        }
    }
    let st = world.zk.stats();
    println!(
        "\nall {DEVICES} devices served; {} creates, {} listings, {} watches set, {} deletes, {} notifications (each hand-off wakes one waiter; a release also fires the holder's watch on its own node)",
        st.count("create"),
        st.count("getChildren"),
        st.count("getData"),
        st.count("delete"),
        st.notifications
    );
    println!(
        "nodes left: {:?}",
        world.zk.children(LOCK_DIR).unwrap_or_default()
    );
}

/// The scenario against a real server.
async fn real(addr: &str) -> Result<(), herdless_std::Error> {
    println!("herdless demo against ZooKeeper at {addr}");
    println!(
        "{DEVICES} edge devices want {LOCK_DIR}; {} will crash while holding it\n",
        name(CRASHER)
    );
    let start = Instant::now();
    let ms = move || start.elapsed().as_millis();
    let (done_tx, mut done_rx) = tokio::sync::mpsc::unbounded_channel::<usize>();
    let mut crash_thread = None;
    for i in 0..DEVICES {
        if i == CRASHER {
            crash_thread = Some(spawn_crasher(addr.to_owned(), i, start));
            continue;
        }
        let client = herdless_std::connect(addr, Duration::from_secs(10)).await?;
        let done = done_tx.clone();
        tokio::spawn(async move {
            let lock = herdless_std::Lock::new(&client, LOCK_DIR).expect("a valid path");
            println!("[{:>5} ms] {} asks for the lock", ms(), name(i));
            let guard = lock.acquire().await.expect("acquire");
            println!(
                "[{:>5} ms] {} ACQUIRED the lock ({})",
                ms(),
                name(i),
                guard.node_path()
            );
            tokio::time::sleep(Duration::from_millis(300)).await;
            guard.release().await.expect("release");
            println!("[{:>5} ms] {} released", ms(), name(i));
            let _ = done.send(i);
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    drop(done_tx);
    let mut finished = 0;
    while done_rx.recv().await.is_some() {
        finished += 1;
    }
    if let Some(t) = crash_thread {
        let _ = t.join();
    }
    println!(
        "\n{finished} devices finished; {} crashed and its session expired",
        name(CRASHER)
    );
    Ok(())
}

/// A device on its own runtime, which dies without closing its session.
fn spawn_crasher(addr: String, i: usize, start: Instant) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Runtime::new().expect("a tokio runtime");
        runtime.block_on(async {
            let ms = || start.elapsed().as_millis();
            let client = herdless_std::connect(&addr, Duration::from_secs(2))
                .await
                .expect("connect");
            let lock = herdless_std::Lock::new(&client, LOCK_DIR).expect("a valid path");
            println!("[{:>5} ms] {} asks for the lock (session timeout 2 s)", ms(), name(i));
            let guard = lock.acquire().await.expect("acquire");
            println!("[{:>5} ms] {} ACQUIRED the lock ({})", ms(), name(i), guard.node_path());
            tokio::time::sleep(Duration::from_millis(300)).await;
            println!("[{:>5} ms] {} CRASHES while holding the lock; the others wait for its session to expire", ms(), name(i));
            std::mem::forget(guard);
        });
        // The runtime dies with its connection, and no close-session is sent.
        runtime.shutdown_background();
    })
}
