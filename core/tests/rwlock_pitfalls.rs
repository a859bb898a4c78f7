//! Bugs other read/write lock implementations shipped, each replayed on the
//! in-memory ZooKeeper. Every test fails on the buggy behaviour.

use herdless_core::lock::{Lock, LockEvent};
use herdless_core::sim::World;

mod support;
use support::by_hand::g;

const DIR: &str = "/locks/rwp";

fn acquire(w: &mut World<Lock>, i: usize, n: u8) {
    w.act(i, |l| l.acquire(g(n))).unwrap();
    assert!(w.run_until_quiet(10_000));
}

fn held(w: &World<Lock>, i: usize) -> bool {
    w.peers[i].recipe.is_held()
}

/// CURATOR-307: a read/write lock threw on a connection loss during its
/// acquisition. Here the reader's listing is lost with the connection
/// after its create was applied: it finds its node by GUID, waits behind
/// the writer, and gets in once the writer goes, with one node only.
#[test]
fn curator_307_connection_loss_while_a_reader_queues_is_recovered() {
    let mut w: World<Lock> = World::new(1);
    let writer = w.add_peer(Lock::writer(DIR).unwrap());
    let reader = w.add_peer(Lock::reader(DIR).unwrap());
    w.zk.create_persistent(DIR, b"").unwrap();
    acquire(&mut w, writer, 1);
    w.act(reader, |l| l.acquire(g(2))).unwrap();
    let s = w.peers[reader].session();
    w.zk.lose_reply_after_apply(s); // the create applied, its reply lost
    assert!(w.run_until_quiet(10_000));
    assert!(!held(&w, reader));
    assert_eq!(w.zk.children(DIR).unwrap().len(), 2, "no second create");
    w.act(writer, |l| l.release()).unwrap();
    assert!(w.run_until_quiet(10_000));
    assert!(held(&w, reader));
    assert_eq!(
        w.zk.stats().count("create"),
        2,
        "the writer's and the reader's"
    );
}

/// CURATOR-621: taking the read lock while holding the write lock let a
/// waiting writer in. Here the read comes after the waiting writer and
/// queues behind it: the waiting writer is never inside with a reader.
#[test]
fn curator_621_a_read_taken_while_holding_the_write_lock_does_not_admit_a_writer_beside_it() {
    let mut w: World<Lock> = World::new(2);
    let holder_w = w.add_peer(Lock::writer(DIR).unwrap());
    let other_w = w.add_peer(Lock::writer(DIR).unwrap());
    let holder_r = w.add_peer(Lock::reader(DIR).unwrap());
    acquire(&mut w, holder_w, 1);
    acquire(&mut w, other_w, 2);
    acquire(&mut w, holder_r, 3);
    assert!(held(&w, holder_w) && !held(&w, other_w) && !held(&w, holder_r));
    w.act(holder_w, |l| l.release()).unwrap();
    assert!(w.run_until_quiet(10_000));
    assert!(held(&w, other_w), "the waiting writer is next");
    assert!(!held(&w, holder_r), "and the later read waits for it");
    w.act(other_w, |l| l.release()).unwrap();
    assert!(w.run_until_quiet(10_000));
    assert!(held(&w, holder_r));
}

/// etcd#16221: a read/write mutex granted the lock to two writers after a
/// holder's lease was revoked.
#[test]
fn etcd_16221_an_expired_writer_hands_over_to_one_writer_only() {
    let mut w: World<Lock> = World::new(3);
    let writers: Vec<usize> = (0..4)
        .map(|_| w.add_peer(Lock::writer(DIR).unwrap()))
        .collect();
    for (k, &i) in writers.iter().enumerate() {
        acquire(&mut w, i, k as u8 + 1);
    }
    w.zk.expire(w.peers[writers[0]].session());
    assert!(w.run_until_quiet(10_000));
    let holding: Vec<usize> = writers.iter().copied().filter(|&i| held(&w, i)).collect();
    assert_eq!(holding, vec![writers[1]]);
    assert_eq!(
        w.peers[writers[0]].take_events(),
        vec![LockEvent::Acquired, LockEvent::Lost]
    );
}

/// A writer whose predecessor (a waiting reader) dies waits for the next
/// one down instead of taking the lock while an older reader still holds.
#[test]
fn a_writer_whose_waiting_predecessor_dies_moves_down_the_queue() {
    let mut w: World<Lock> = World::new(4);
    let r1 = w.add_peer(Lock::reader(DIR).unwrap());
    let w1 = w.add_peer(Lock::writer(DIR).unwrap());
    let r2 = w.add_peer(Lock::reader(DIR).unwrap());
    let w2 = w.add_peer(Lock::writer(DIR).unwrap());
    acquire(&mut w, r1, 1);
    acquire(&mut w, w1, 2);
    acquire(&mut w, r2, 3);
    acquire(&mut w, w2, 4);
    assert!(held(&w, r1));
    assert!(!held(&w, w1) && !held(&w, r2) && !held(&w, w2));
    w.zk.expire(w.peers[r2].session());
    assert!(w.run_until_quiet(10_000));
    assert!(!held(&w, w2), "w1 and r1 are still ahead");
    let pred = w.peers[w2].recipe.predecessor().unwrap().to_owned();
    assert_eq!(Some(&pred[DIR.len() + 1..]), w.peers[w1].recipe.own_node());
    w.act(r1, |l| l.release()).unwrap();
    assert!(w.run_until_quiet(10_000));
    assert!(held(&w, w1) && !held(&w, w2));
}

/// CURATOR-43 for shared locks: other children of the directory take no
/// part, for readers and writers alike.
#[test]
fn curator_43_unrelated_children_block_neither_readers_nor_writers() {
    let mut w: World<Lock> = World::new(5);
    w.zk.create_persistent("/locks/rwp/sub/write-0000000000", b"")
        .unwrap();
    w.zk.create_persistent("/locks/rwp/leases", b"").unwrap();
    w.zk.create_persistent("/locks/rwp/foo-0000000001", b"")
        .unwrap();
    let reader = w.add_peer(Lock::reader(DIR).unwrap());
    acquire(&mut w, reader, 1);
    assert!(held(&w, reader));
    w.act(reader, |l| l.release()).unwrap();
    assert!(w.run_until_quiet(10_000));
    let writer = w.add_peer(Lock::writer(DIR).unwrap());
    acquire(&mut w, writer, 2);
    assert!(held(&w, writer));
}

/// An exclusive lock and a shared lock on one directory: the exclusive
/// holder keeps a reader out, as a writer would.
#[test]
fn an_exclusive_lock_node_keeps_readers_out_like_a_writer() {
    let mut w: World<Lock> = World::new(6);
    let exclusive = w.add_peer(Lock::new(DIR).unwrap());
    let reader = w.add_peer(Lock::reader(DIR).unwrap());
    acquire(&mut w, exclusive, 1);
    acquire(&mut w, reader, 2);
    assert!(!held(&w, reader));
    w.act(exclusive, |l| l.release()).unwrap();
    assert!(w.run_until_quiet(10_000));
    assert!(held(&w, reader));
}
