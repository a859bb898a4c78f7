//! Work a recipe queued when the connection is lost before the driver
//! drained it (a driver may tell the recipe a session event first: one
//! started on a client whose connection is already down hears `Suspended`
//! before its first requests go out). The queue goes with the connection;
//! once it is back, the recipe makes the work again, and ends where it would
//! have ended without the loss: the same tree, the same outcome.

mod faults;

use std::fmt::Debug;

use faults::Link;
use herdless_core::barrier::Barrier;
use herdless_core::config::Config;
use herdless_core::double_barrier::DoubleBarrier;
use herdless_core::election::Election;
use herdless_core::lock::Lock;
use herdless_core::member::Member;
use herdless_core::naming::Guid;
use herdless_core::queue::{Consumer, Producer};
use herdless_core::sim::SimZk;
use herdless_core::{Recipe, Version};

fn guid(n: u8) -> Guid {
    Guid::from_random_bytes([n; 16])
}

/// What a run ends with: the tree, and what the recipe said after `act`,
/// without the news of the connection itself.
fn outcome<R: Recipe>(
    setup: &dyn Fn(&mut SimZk) -> Link<R>,
    act: &dyn Fn(&mut R),
    lose: bool,
) -> (Vec<String>, Vec<String>)
where
    R::Event: Debug,
{
    let mut zk = SimZk::new(7);
    zk.create_persistent("/d", b"").unwrap();
    let mut link = setup(&mut zk);
    link.settle(&mut zk);
    link.events.clear();
    if lose {
        link.act_then_lose(&mut zk, act);
    } else {
        link.act(&mut zk, act);
    }
    link.settle(&mut zk);
    let told = link
        .events
        .iter()
        .map(|e| format!("{e:?}"))
        .filter(|e| !["Suspended", "Resumed", "Stale"].contains(&e.as_str()))
        .collect();
    (zk.tree_paths(), told)
}

fn same_with_and_without_the_loss<R: Recipe>(
    setup: impl Fn(&mut SimZk) -> Link<R>,
    act: impl Fn(&mut R),
) where
    R::Event: Debug,
{
    let plain = outcome(&setup, &act, false);
    let lost = outcome(&setup, &act, true);
    assert!(!plain.1.is_empty(), "the work said nothing: {plain:?}");
    assert_eq!(lost, plain, "with the loss, then without");
}

#[test]
fn a_lock_acquired_and_released() {
    let new = |zk: &mut SimZk| Link::new(zk, Lock::<64>::new("/d/lock").unwrap());
    same_with_and_without_the_loss(new, |l| l.acquire(guid(1)).unwrap());
    let held = |zk: &mut SimZk| {
        let mut l = new(zk);
        l.act(zk, |l| l.acquire(guid(1)).unwrap());
        l
    };
    same_with_and_without_the_loss(held, |l| l.release().unwrap());
}

#[test]
fn an_election_campaigned_and_resigned() {
    let new = |zk: &mut SimZk| Link::new(zk, Election::<64, 128>::new("/d/e").unwrap());
    same_with_and_without_the_loss(new, |e| e.campaign(guid(2), b"me").unwrap());
    let leading = |zk: &mut SimZk| {
        let mut e = new(zk);
        e.act(zk, |e| e.campaign(guid(2), b"me").unwrap());
        e
    };
    same_with_and_without_the_loss(leading, |e| e.resign().unwrap());
}

#[test]
fn a_queue_put_and_taken() {
    let producer = |zk: &mut SimZk| Link::new(zk, Producer::<16, 64>::new("/d/q").unwrap());
    same_with_and_without_the_loss(producer, |p| p.put(guid(3), b"item", None, false).unwrap());
    let consumer = |zk: &mut SimZk| {
        zk.create_persistent("/d/q", b"").unwrap();
        zk.create_persistent("/d/q/qn-0000000000", b"item").unwrap();
        Link::new(zk, Consumer::<4, 16, 64>::new("/d/q").unwrap())
    };
    same_with_and_without_the_loss(consumer, |c| c.take(None).unwrap());
}

#[test]
fn a_member_joined_and_left() {
    let new = |zk: &mut SimZk| Link::new(zk, Member::<16, 64>::new("/d/g", "m").unwrap());
    same_with_and_without_the_loss(new, |m| m.join(b"x").unwrap());
    let joined = |zk: &mut SimZk| {
        let mut m = new(zk);
        m.act(zk, |m| m.join(b"x").unwrap());
        m
    };
    same_with_and_without_the_loss(joined, |m| m.leave().unwrap());
}

#[test]
fn barriers_waited_entered_and_left() {
    let open = |zk: &mut SimZk| Link::new(zk, Barrier::<64>::new("/d/b").unwrap());
    same_with_and_without_the_loss(open, |b| b.wait());
    let double = |zk: &mut SimZk| Link::new(zk, DoubleBarrier::<64>::new("/d/db", "p").unwrap());
    same_with_and_without_the_loss(double, |b| b.enter(1).unwrap());
    let inside = |zk: &mut SimZk| {
        let mut b = double(zk);
        b.act(zk, |b| b.enter(1).unwrap());
        b
    };
    same_with_and_without_the_loss(inside, |b| b.leave().unwrap());
}

#[test]
fn a_config_watched_and_written() {
    let new = |zk: &mut SimZk| {
        zk.create_persistent("/d/c", b"v0").unwrap();
        Link::new(zk, Config::<16, 64>::new("/d/c").unwrap())
    };
    same_with_and_without_the_loss(new, |c| c.watch());
    same_with_and_without_the_loss(new, |c| c.set(b"v1", Version::Exactly(0)).unwrap());
}
