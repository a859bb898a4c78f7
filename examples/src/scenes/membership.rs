//! Four devices join the fleet; one loses its session and comes back by
//! itself; an observer follows who is in.

use std::time::{Duration, Instant};

use herdless_core::member::{Member, MemberEvent};
use herdless_core::members;
use herdless_core::sim::{Either, World};
use herdless_std::group::GroupObserver;
use herdless_std::{GroupMember, Session};

use super::title;

const FLEET: &str = "/herdless-demo/fleet";

type Node = Either<Member, members::Observer>;

/// The scene on the in-memory ZooKeeper.
pub fn simulated(seed: u64) {
    title("group membership: a device whose session expires comes back by itself");
    let mut world: World<Node> = World::new(seed);
    let observer = world.add_peer(Either::B(
        members::Observer::new(FLEET).expect("a valid path"),
    ));
    world.act(observer, |n| {
        if let Either::B(o) = n {
            o.watch();
        }
    });
    for i in 1..=4 {
        let name = format!("edge-{i}");
        let p = world.add_peer(Either::A(Member::new(FLEET, &name).expect("a valid name")));
        let addr = format!("10.0.0.{i}");
        world.act(p, |n| {
            if let Either::A(m) = n {
                m.join(addr.as_bytes()).expect("join");
            }
        });
    }
    world.run_until_quiet(10_000);
    report(&mut world);
    println!("edge-3's session expires (a long network partition)");
    let session = world.peers[3].session();
    world.zk.expire(session);
    world.run_until_quiet(10_000);
    report(&mut world);
    println!("edge-3 reaches ZooKeeper again with a new session");
    world.renew_session(3);
    world.run_until_quiet(10_000);
    report(&mut world);
}

fn report(world: &mut World<Node>) {
    for i in 0..world.peers.len() {
        let events = world.peers[i].take_events();
        for event in events {
            match event {
                Either::A(e) => {
                    let who = format!("edge-{i}");
                    match e {
                        MemberEvent::Joined => println!("  {who} joined"),
                        MemberEvent::Out => println!("  {who} is told: OUT of the group"),
                        MemberEvent::Rejoined => println!("  {who} is back in, by itself"),
                        other => println!("  {who}: {other:?}"),
                    }
                }
                Either::B(members::ObserverEvent::Changed { joined, left }) => {
                    if let Either::B(o) = &world.peers[i].recipe {
                        let members: Vec<&str> = o.members().collect();
                        println!("  observer: +{joined} -{left}, members now {members:?}");
                    }
                }
                Either::B(members::ObserverEvent::NoGroup) => {
                    println!("  observer: the fleet directory does not exist yet")
                }
                Either::B(other) => println!("  observer: {other:?}"),
            }
        }
    }
}

/// The scene against a real server: members on self-renewing sessions
/// join, one leaves, an observer follows.
pub async fn real(addr: &str) -> Result<(), herdless_std::Error> {
    title("group membership: devices join and leave, an observer follows");
    let observer = herdless_std::connect(addr, Duration::from_secs(10)).await?;
    let mut watch = GroupObserver::start(&observer, FLEET)?;
    let start = Instant::now();
    let mut members = Vec::new();
    for i in 1..=3 {
        // A Session re-joins its members by itself after an expiry.
        let session = Session::connect(addr, Duration::from_secs(10)).await?;
        let data = format!("10.0.0.{i}");
        let member =
            GroupMember::join(&session, FLEET, &format!("edge-{i}"), data.as_bytes()).await?;
        members.push((session, member));
    }
    // Each answer of `changed` is relative to the previous one, so count
    // what it reports rather than look at the latest snapshot.
    let mut seen = 0;
    while seen < 3 {
        let change = watch.changed().await?;
        seen += change.joined.len();
        println!(
            "  [{:>4} ms] observer: joined {:?}",
            start.elapsed().as_millis(),
            change.joined
        );
    }
    println!("edge-3 leaves");
    if let Some((_, member)) = members.pop() {
        member.leave().await?;
    }
    loop {
        let change = watch.changed().await?;
        println!(
            "  [{:>4} ms] observer: left {:?}, members now {:?}",
            start.elapsed().as_millis(),
            change.left,
            watch.members()
        );
        if change.left.iter().any(|name| name == "edge-3") {
            break;
        }
    }
    for (_, member) in members {
        member.leave().await?;
    }
    Ok(())
}
