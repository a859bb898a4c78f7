//! Two devices produce jobs, two consume them; then a priority queue takes
//! an urgent job ahead of routine ones.

use std::time::Duration;

use herdless_core::naming::Guid;
use herdless_core::queue::{Consumer, ConsumerEvent, Producer};
use herdless_core::sim::{Either, World};
use herdless_std::queue::Queue;
use rand::Rng;

use super::title;

const JOBS: &str = "/herdless-demo/queues/jobs";
const URGENT: &str = "/herdless-demo/queues/priority";

type Node = Either<Producer, Consumer>;

/// The scene on the in-memory ZooKeeper.
pub fn simulated(seed: u64) {
    title("queues: each job taken by one consumer only; an urgent job jumps the priority queue");
    let mut world: World<Node> = World::new(seed);
    world
        .zk
        .create_persistent(JOBS, b"")
        .expect("create the queue");
    world
        .zk
        .create_persistent(URGENT, b"")
        .expect("create the queue");
    let producer = world.add_peer(Either::A(Producer::new(JOBS).expect("a valid path")));
    let consumers = [
        world.add_peer(Either::B(Consumer::new(JOBS).expect("a valid path"))),
        world.add_peer(Either::B(Consumer::new(JOBS).expect("a valid path"))),
    ];
    for n in 1..=4 {
        let guid = Guid::from_random_bytes(world.rng().gen());
        world.act(producer, |r| {
            if let Either::A(p) = r {
                p.put(guid, format!("job-{n}").as_bytes(), None, false)
                    .expect("put");
            }
        });
        world.run_until_quiet(10_000);
    }
    println!("producer put job-1 .. job-4");
    for _ in 0..2 {
        for &c in &consumers {
            world.act(c, |r| {
                if let Either::B(c) = r {
                    c.take(None).expect("take");
                }
            });
        }
        world.run_until_quiet(10_000);
        for (k, &c) in consumers.iter().enumerate() {
            let took = world.peers[c]
                .take_events()
                .iter()
                .any(|e| matches!(e, Either::B(ConsumerEvent::Taken { .. })));
            if let (true, Either::B(consumer)) = (took, &world.peers[c].recipe) {
                println!(
                    "  consumer-{} took {}",
                    k + 1,
                    String::from_utf8_lossy(consumer.item())
                );
            }
        }
    }

    let urgent_producer = world.add_peer(Either::A(Producer::new(URGENT).expect("a valid path")));
    let urgent_consumer =
        world.add_peer(Either::B(Consumer::priority(URGENT).expect("a valid path")));
    for (job, priority) in [("routine-1", 50), ("routine-2", 50), ("routine-3", 50)] {
        let guid = Guid::from_random_bytes(world.rng().gen());
        world.act(urgent_producer, |r| {
            if let Either::A(p) = r {
                p.put(guid, job.as_bytes(), Some(priority), false)
                    .expect("put");
            }
        });
        world.run_until_quiet(10_000);
    }
    println!("priority queue: routine-1 .. routine-3 at priority 50");
    for round in 0..4 {
        if round == 1 {
            let guid = Guid::from_random_bytes(world.rng().gen());
            world.act(urgent_producer, |r| {
                if let Either::A(p) = r {
                    p.put(guid, b"URGENT", Some(1), false).expect("put");
                }
            });
            world.run_until_quiet(10_000);
            println!("  URGENT arrives at priority 1");
        }
        world.act(urgent_consumer, |r| {
            if let Either::B(c) = r {
                c.take(None).expect("take");
            }
        });
        world.run_until_quiet(10_000);
        world.peers[urgent_consumer].take_events();
        if let Either::B(c) = &world.peers[urgent_consumer].recipe {
            println!("  consumer took {}", String::from_utf8_lossy(c.item()));
        }
    }
}

/// The scene against a real server.
pub async fn real(addr: &str) -> Result<(), herdless_std::Error> {
    title("queues: each job taken by one consumer only; an urgent job jumps the priority queue");
    let producer_client = herdless_std::connect(addr, Duration::from_secs(10)).await?;
    let producer = Queue::new(&producer_client, JOBS).await?;
    for n in 1..=4 {
        producer.put(format!("job-{n}").as_bytes()).await?;
    }
    println!("producer put job-1 .. job-4");
    let mut consumers = Vec::new();
    for k in 1..=2 {
        let client = herdless_std::connect(addr, Duration::from_secs(10)).await?;
        consumers.push(tokio::spawn(async move {
            let queue = Queue::new(&client, JOBS).await?;
            while let Some(item) = queue.take_timeout(Duration::from_millis(300)).await? {
                println!(
                    "  consumer-{k} took {}",
                    String::from_utf8_lossy(&item.data)
                );
            }
            Ok::<_, herdless_std::Error>(())
        }));
    }
    for c in consumers {
        c.await.map_err(|_| herdless_std::Error::DriverGone)??;
    }
    let urgent = Queue::priority(&producer_client, URGENT).await?;
    for n in 1..=3 {
        urgent
            .put_with_priority(format!("routine-{n}").as_bytes(), 50)
            .await?;
    }
    let consumer_client = herdless_std::connect(addr, Duration::from_secs(10)).await?;
    let consumer = Queue::priority(&consumer_client, URGENT).await?;
    println!(
        "  consumer took {}",
        String::from_utf8_lossy(&consumer.take().await?.data)
    );
    urgent.put_with_priority(b"URGENT", 1).await?;
    println!("  URGENT arrives at priority 1");
    tokio::time::sleep(Duration::from_millis(100)).await;
    for _ in 0..3 {
        println!(
            "  consumer took {}",
            String::from_utf8_lossy(&consumer.take().await?.data)
        );
    }
    Ok(())
}
