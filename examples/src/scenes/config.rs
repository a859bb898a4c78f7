//! Three devices follow a configuration value; an operator updates it by
//! compare-and-set, and a stale update is refused.

use std::time::Duration;

use herdless_core::config::{Config, ConfigEvent};
use herdless_core::sim::World;
use herdless_core::Version;
use herdless_std::config::{Config as StdConfig, Value, Written};

use super::title;

const PATH: &str = "/herdless-demo/config/gateway";

/// The scene on the in-memory ZooKeeper.
pub fn simulated(seed: u64) {
    title("configuration: three devices watch one value, updated by compare-and-set");
    let mut world: World<Config> = World::new(seed);
    world
        .zk
        .create_persistent(PATH, b"uplink=eth0")
        .expect("set up the config node");
    for _ in 0..3 {
        let i = world.add_peer(Config::new(PATH).expect("a valid path"));
        world.act(i, |c| c.watch());
    }
    let operator = world.add_peer(Config::new(PATH).expect("a valid path"));
    world.act(operator, |c| c.watch());
    world.run_until_quiet(10_000);
    report(&mut world);
    for (value, note) in [
        (&b"uplink=lte0"[..], "switch the uplink to LTE"),
        (&b"uplink=eth1"[..], "and back to a second Ethernet port"),
    ] {
        let version = world.peers[operator].recipe.version().unwrap_or(0);
        println!("operator: {note} (compare-and-set against version {version})");
        world
            .act(operator, |c| c.set(value, Version::Exactly(version)))
            .expect("set");
        world.run_until_quiet(10_000);
        report(&mut world);
    }
    println!("operator: a stale write against version 0");
    world
        .act(operator, |c| c.set(b"uplink=wifi0", Version::Exactly(0)))
        .expect("set");
    world.run_until_quiet(10_000);
    report(&mut world);
}

fn report(world: &mut World<Config>) {
    let devices = world.peers.len() - 1;
    for i in 0..world.peers.len() {
        for event in world.peers[i].take_events() {
            let who = if i == devices {
                "operator".to_owned()
            } else {
                format!("device-{}", i + 1)
            };
            match event {
                ConfigEvent::Changed { version } => {
                    if i < devices {
                        let value = world.peers[i].recipe.value().unwrap_or_default();
                        println!(
                            "  {who} sees version {version}: {}",
                            String::from_utf8_lossy(value)
                        );
                    }
                }
                ConfigEvent::Updated { version } => {
                    println!("  {who}: written as version {version}")
                }
                ConfigEvent::Conflict => {
                    println!("  {who}: REFUSED, the value moved on (nothing written)")
                }
                other => println!("  {who}: {other:?}"),
            }
        }
    }
}

/// The scene against a real server.
pub async fn real(addr: &str) -> Result<(), herdless_std::Error> {
    title("configuration: three devices watch one value, updated by compare-and-set");
    let operator_client = herdless_std::connect(addr, Duration::from_secs(10)).await?;
    let operator = StdConfig::watch(&operator_client, PATH)?;
    // Made with its parents, or already there from an earlier run.
    let _ = operator.create(b"uplink=eth0").await?;
    let mut watchers = Vec::new();
    for i in 1..=3 {
        let client = herdless_std::connect(addr, Duration::from_secs(10)).await?;
        let mut config = StdConfig::watch(&client, PATH)?;
        watchers.push(tokio::spawn(async move {
            let _client = client;
            while let Ok(value) = config.changed().await {
                if let Value::Present(v) = value {
                    println!(
                        "  device-{i} sees version {}: {}",
                        v.version,
                        String::from_utf8_lossy(&v.data)
                    );
                    if v.data == b"uplink=eth1" {
                        break;
                    }
                }
            }
        }));
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut operator = operator;
    for value in [&b"uplink=lte0"[..], b"uplink=eth1"] {
        let current = operator.wait_present().await?;
        match operator.set(value, Some(current.version)).await? {
            Written::Updated { version } => println!("operator: written as version {version}"),
            other => println!("operator: {other:?}"),
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    match operator.set(b"uplink=wifi0", Some(0)).await? {
        Written::Conflict => println!("operator: a stale write against version 0 is REFUSED"),
        other => println!("operator: stale write gave {other:?}"),
    }
    for w in watchers {
        let _ = tokio::time::timeout(Duration::from_secs(5), w).await;
    }
    // Leave the server as we found it.
    let _ = operator_client.delete(PATH, None).await;
    Ok(())
}
