//! Bugs other lock implementations shipped, each replayed on the in-memory
//! ZooKeeper. Every test fails on the buggy behaviour.

use herdless_core::lock::{GiveUp, Lock, LockEvent};
use herdless_core::sim::World;
use herdless_core::{Error, Instant, Recipe, SessionEvent};

mod support;
use support::by_hand::g;
use support::session_moves;

const DIR: &str = "/locks/p";

fn world(n: usize) -> World<Lock> {
    let mut w: World<Lock> = World::new(42);
    for _ in 0..n {
        w.add_peer(Lock::new(DIR).unwrap());
    }
    w
}

/// Curator #3: the create succeeded but its reply was lost; the client must
/// adopt its node by GUID instead of creating a second one.
#[test]
fn curator_3_lost_create_reply_leaves_no_orphan() {
    let mut w = world(1);
    w.zk.create_persistent(DIR, b"").unwrap();
    w.act(0, |l| l.acquire(g(1))).unwrap();
    let s = w.peers[0].session();
    w.zk.lose_reply_after_apply(s); // the create is applied, its reply lost
    assert!(w.run_until_quiet(1_000));
    assert_eq!(w.peers[0].take_events(), vec![LockEvent::Acquired]);
    assert_eq!(w.zk.children(DIR).unwrap().len(), 1, "one node, adopted");
    assert_eq!(w.zk.stats().count("create"), 1, "never a second create");
}

/// CURATOR-79, zk-ruby#49: an acquire that times out leaves no waiter node.
#[test]
fn curator_79_timed_out_acquire_leaves_no_node() {
    let mut w = world(2);
    w.act(0, |l| l.acquire(g(1))).unwrap();
    w.run_until_quiet(1_000);
    let deadline = w.now() + 100;
    w.act(1, |l| l.acquire_until(g(2), deadline)).unwrap();
    assert!(w.run_until_quiet(1_000));
    assert_eq!(
        w.peers[1].take_events(),
        vec![LockEvent::NotAcquired(GiveUp::TimedOut)]
    );
    assert_eq!(w.zk.children(DIR).unwrap().len(), 1);
}

/// kazoo#732: a failed try-acquire whose cleanup meets a suspended
/// connection must still delete its node once reconnected.
#[test]
fn kazoo_732_cleanup_during_suspension_is_not_swallowed() {
    let mut w = world(2);
    w.act(0, |l| l.acquire(g(1))).unwrap();
    w.run_until_quiet(1_000);
    w.act(1, |l| l.try_acquire(g(2))).unwrap();
    let s1 = w.peers[1].session();
    // Create and listing applied and answered, then the delete is lost.
    for _ in 0..2 {
        w.zk.apply_next(s1);
    }
    while w.peers[1].deliver_one(&mut w.zk) {}
    // The own node's read (sent on the create's answer) and the delete.
    assert_eq!(w.zk.pending_requests(s1), 2, "the cleanup delete is queued");
    w.zk.disconnect(s1);
    while w.peers[1].deliver_one(&mut w.zk) {}
    assert_eq!(
        w.zk.children(DIR).unwrap().len(),
        2,
        "still there while suspended"
    );
    assert!(
        w.peers[1].take_events().is_empty(),
        "not reported before cleanup"
    );
    assert!(w.run_until_quiet(1_000)); // reconnects
    assert_eq!(
        w.peers[1].take_events(),
        vec![LockEvent::NotAcquired(GiveUp::Busy)]
    );
    assert_eq!(w.zk.children(DIR).unwrap().len(), 1);
}

/// CURATOR-678: a release that meets a connection loss keeps its promise.
#[test]
fn curator_678_release_retries_until_the_delete_is_confirmed() {
    let mut w = world(1);
    w.act(0, |l| l.acquire(g(1))).unwrap();
    w.run_until_quiet(1_000);
    w.peers[0].take_events();
    w.act(0, |l| l.release()).unwrap();
    w.zk.disconnect(w.peers[0].session()); // the delete never reaches the server
    assert!(w.run_until_quiet(1_000));
    // Released only once the retried delete is confirmed.
    assert_eq!(w.peers[0].take_events(), vec![LockEvent::Released]);
    assert!(w.zk.children(DIR).unwrap().is_empty());
}

/// CURATOR-206: the holder is told when its session expires.
#[test]
fn curator_206_holder_is_told_it_lost_the_lock() {
    let mut w = world(2);
    w.act(0, |l| l.acquire(g(1))).unwrap();
    w.run_until_quiet(1_000);
    w.act(1, |l| l.acquire(g(2))).unwrap();
    w.run_until_quiet(1_000);
    w.zk.expire(w.peers[0].session());
    assert!(w.run_until_quiet(1_000));
    assert_eq!(
        w.peers[0].take_events(),
        vec![LockEvent::Acquired, LockEvent::Lost]
    );
    assert_eq!(w.peers[1].take_events(), vec![LockEvent::Acquired]);
}

/// ZOOKEEPER-2931: order by sequence suffix, not by whole name, whoever
/// wrote the node.
#[test]
fn zookeeper_2931_foreign_prefixes_sort_by_sequence() {
    let mut w = world(1);
    w.zk.create_persistent(DIR, b"").unwrap();
    // A Kazoo contender with the lowest sequence, whose name sorts last.
    let s = w.zk.open_session();
    let kazoo = herdless_core::Request::Create {
        path: "/locks/p/ffffffffffffffffffffffffffffffff__lock__",
        data: b"",
        acl: herdless_core::Acl::OPEN,
        mode: herdless_core::CreateMode::EphemeralSequential,
    };
    w.zk.submit(s, herdless_core::RequestId::new(0, 1), &kazoo);
    w.zk.apply_next(s);
    w.act(0, |l| l.acquire(g(1))).unwrap();
    assert!(w.run_until_quiet(1_000));
    assert!(
        w.peers[0].take_events().is_empty(),
        "waits for the Kazoo holder"
    );
    w.zk.close(s);
    assert!(w.run_until_quiet(1_000));
    assert_eq!(w.peers[0].take_events(), vec![LockEvent::Acquired]);
}

/// CURATOR-43: other children of the lock directory are not contenders.
#[test]
fn curator_43_unrelated_children_do_not_block() {
    let mut w = world(1);
    w.zk.create_persistent("/locks/p/sub/lock-0000000000", b"")
        .unwrap();
    w.zk.create_persistent("/locks/p/leases", b"").unwrap();
    w.zk.create_persistent("/locks/p/foo-0000000001", b"")
        .unwrap();
    w.act(0, |l| l.acquire(g(1))).unwrap();
    assert!(w.run_until_quiet(1_000));
    assert_eq!(w.peers[0].take_events(), vec![LockEvent::Acquired]);
}

/// CURATOR-107: a predecessor gone before the watch is set leaves no watch.
#[test]
fn curator_107_no_watch_left_on_a_vanished_predecessor() {
    let mut w = world(2);
    w.act(0, |l| l.acquire(g(1))).unwrap();
    w.run_until_quiet(1_000);
    w.act(1, |l| l.acquire(g(2))).unwrap();
    let s1 = w.peers[1].session();
    // Peer 1's create and listing are answered: it will watch peer 0 next.
    w.zk.apply_next(s1);
    w.zk.apply_next(s1);
    while w.peers[1].deliver_one(&mut w.zk) {}
    // Peer 0 releases before peer 1's watch request reaches the server.
    w.act(0, |l| l.release()).unwrap();
    w.zk.apply_next(w.peers[0].session());
    assert!(w.run_until_quiet(1_000));
    assert!(w.peers[1].recipe.is_held());
    // Only the holder's watch on its own node.
    let own = format!("{DIR}/{}", w.peers[1].recipe.own_node().unwrap());
    assert_eq!(w.zk.watches_of(s1), vec![("data", own)]);
    assert_eq!(w.zk.watch_count(), 1, "no creation watch left behind");
}

/// CURATOR-498: every attempt has a fresh GUID, so a node of an earlier
/// attempt is never adopted.
#[test]
fn curator_498_an_earlier_attempts_node_is_not_adopted() {
    let mut w = world(2);
    w.act(0, |l| l.acquire(g(1))).unwrap();
    w.run_until_quiet(1_000);
    // Peer 1's first attempt leaves a node (its session dies later).
    w.act(1, |l| l.acquire(g(2))).unwrap();
    w.run_until_quiet(1_000);
    w.act(1, |l| l.cancel()).unwrap();
    w.run_until_quiet(1_000);
    // A new attempt whose create reply is lost must not pick an old node.
    w.act(1, |l| l.acquire(g(3))).unwrap();
    w.zk.lose_reply_after_apply(w.peers[1].session());
    assert!(w.run_until_quiet(1_000));
    let own = w.peers[1].recipe.own_node().unwrap().to_owned();
    assert!(own.starts_with("03030303-"), "{own}");
    assert_eq!(w.zk.children(DIR).unwrap().len(), 2);
}

/// Sequence numbers that wrapped past i32::MAX still order by age.
#[test]
fn wrapped_sequence_numbers_keep_creation_order() {
    let mut w = world(2);
    w.zk.create_persistent(DIR, b"").unwrap();
    w.zk.set_cversion(DIR, i32::MAX).unwrap();
    w.act(0, |l| l.acquire(g(1))).unwrap();
    w.run_until_quiet(1_000);
    w.act(1, |l| l.acquire(g(2))).unwrap();
    w.run_until_quiet(1_000);
    let names = w.zk.children(DIR).unwrap();
    assert!(
        names.iter().any(|n| n.ends_with("-2147483648")),
        "{names:?}"
    );
    assert!(
        w.peers[0].recipe.is_held(),
        "2147483647 is older than -2147483648"
    );
    assert!(!w.peers[1].recipe.is_held());
}

/// CURATOR-696 (LeaderLatch's bug, which a lock can share): after a
/// reconnect onto a *new* session, reusing the old node, which the server
/// is about to delete, keeps a holder that no longer holds. The own node's
/// `ephemeralOwner` must be the current session before the lock counts as
/// held again, even when no `Expired` came first.
#[test]
fn curator_696_a_holder_moved_to_a_new_session_does_not_hold_on_its_old_node() {
    let mut w = world(2);
    w.act(0, |l| l.acquire(g(1))).unwrap();
    assert!(w.run_until_quiet(1_000));
    w.act(1, |l| l.acquire(g(2))).unwrap();
    assert!(w.run_until_quiet(1_000));
    assert!(w.peers[0].recipe.is_held());
    let old_node = w.peers[0].recipe.own_node().unwrap().to_owned();
    // The connection drops; the client comes back on another session while
    // the old one is still alive on the server (its expiry not processed
    // yet), so the old node is still there. Peer 0 never learned its first
    // session id, so only the node's owner can tell.
    let s1 = session_moves::cut(&mut w, 0).expect("a live session");
    w.renew_session(0);
    assert!(w.zk.is_live(s1), "the old session lives on for now");
    for _ in 0..1_000 {
        if w.step().is_none() {
            break;
        }
        assert!(
            !w.peers[0].recipe.is_held(),
            "holds on a node owned by the old session"
        );
    }
    assert_eq!(
        w.peers[0].take_events(),
        [LockEvent::Acquired, LockEvent::Suspended, LockEvent::Lost]
    );
    assert!(
        !w.zk.children(DIR).unwrap().contains(&old_node),
        "the old node is deleted, not adopted"
    );
    // With the old node gone, the waiter holds.
    assert!(w.peers[1].recipe.is_held());
}

/// CURATOR-696 with the session id known from the start (as the tokio
/// driver reports it): a `Connected` with another id, no expiry heard, is
/// the old session's connection lost (`Suspended` at once), and the own
/// node, read again, is not the new session's: `Lost`.
#[test]
fn curator_696_a_reconnect_with_another_session_id_loses_the_lock() {
    let mut w = world(1);
    let s1 = w.peers[0].session();
    w.act(0, |l| {
        l.handle_session(Instant::ZERO, SessionEvent::Connected { session_id: s1 })
    });
    w.act(0, |l| l.acquire(g(1))).unwrap();
    assert!(w.run_until_quiet(1_000));
    w.renew_session(0);
    let s2 = w.peers[0].session();
    assert!(!w.peers[0].recipe.is_held());
    assert_eq!(
        w.peers[0].take_events(),
        [LockEvent::Acquired, LockEvent::Suspended]
    );
    assert!(w.run_until_quiet(1_000));
    assert!(w.zk.is_live(s1), "the old session lives on for now");
    assert_eq!(w.peers[0].take_events(), [LockEvent::Lost]);
    assert_eq!(w.zk.children(DIR).unwrap(), Vec::<String>::new());
    // Acquiring again on the new session holds with a node it owns.
    w.act(0, |l| l.acquire(g(2))).unwrap();
    assert!(w.run_until_quiet(1_000));
    let path = format!("{DIR}/{}", w.peers[0].recipe.own_node().unwrap());
    assert_eq!(w.zk.node(&path).unwrap().stat.ephemeral_owner, s2);
    assert!(w.peers[0].recipe.is_held());
}

/// CURATOR-498 for the lock: a waiter moved to a new session with no
/// expiry heard never adopts its old node: the attempt ends as an expiry
/// ends it, and the old node is deleted rather than left to its session.
#[test]
fn curator_498_a_waiter_moved_to_a_new_session_ends_its_attempt_and_leaves_no_node() {
    let mut w = world(2);
    let s1 = w.peers[1].session();
    w.act(1, |l| {
        l.handle_session(Instant::ZERO, SessionEvent::Connected { session_id: s1 })
    });
    w.act(0, |l| l.acquire(g(1))).unwrap();
    assert!(w.run_until_quiet(1_000));
    w.act(1, |l| l.acquire(g(2))).unwrap();
    assert!(w.run_until_quiet(1_000));
    let old_node = w.peers[1].recipe.own_node().unwrap().to_owned();
    w.renew_session(1);
    let s2 = w.peers[1].session();
    assert!(w.run_until_quiet(1_000));
    assert!(w.zk.is_live(s1), "the old session lives on for now");
    assert_eq!(
        w.peers[1].take_events(),
        [LockEvent::Failed(Error::SessionEnded)]
    );
    let nodes = w.zk.children(DIR).unwrap();
    assert_eq!(nodes.len(), 1, "only the holder's: {nodes:?}");
    assert!(!nodes.contains(&old_node));
    // A new attempt, on the new session, takes its turn with a node it owns.
    w.act(1, |l| l.acquire(g(3))).unwrap();
    assert!(w.run_until_quiet(1_000));
    w.act(0, |l| l.release()).unwrap();
    assert!(w.run_until_quiet(1_000));
    assert!(w.peers[1].recipe.is_held());
    let path = format!("{DIR}/{}", w.peers[1].recipe.own_node().unwrap());
    assert_eq!(w.zk.node(&path).unwrap().stat.ephemeral_owner, s2);
}

/// Reentrancy (curator#75 and #31, etcd#11364, zookeeper-client's
/// `new_shared`): a lock is not reentrant, and saying so must not cost the
/// holding. A second `acquire` while acquiring or holding is refused, and
/// the first attempt goes on as if it had not been asked: one node, held
/// once, released once.
#[test]
fn a_second_acquire_is_refused_and_leaves_the_first_as_it_was() {
    let mut w = world(1);
    w.act(0, |l| l.acquire(g(1))).unwrap();
    assert_eq!(w.act(0, |l| l.acquire(g(2))), Err(Error::InvalidState));
    assert_eq!(w.act(0, |l| l.try_acquire(g(2))), Err(Error::InvalidState));
    assert!(w.run_until_quiet(1_000));
    assert!(w.peers[0].recipe.is_held());
    let deadline = w.now() + 1_000;
    assert_eq!(
        w.act(0, |l| l.acquire_until(g(3), deadline)),
        Err(Error::InvalidState)
    );
    assert!(w.run_until_quiet(1_000));
    assert_eq!(w.zk.children(DIR).unwrap().len(), 1, "one node");
    assert!(w.peers[0].recipe.is_held());
    w.act(0, |l| l.release()).unwrap();
    assert!(w.run_until_quiet(1_000));
    assert_eq!(
        w.peers[0].take_events(),
        [LockEvent::Acquired, LockEvent::Released]
    );
    assert_eq!(w.zk.children(DIR).unwrap(), Vec::<String>::new());
}

/// etcd#22082: an unlock whose answer was lost, retried, deleted the key of
/// the same session's next lock (etcd's key is the lease's, the same for
/// every lock of a session). Here the release's delete is applied and its
/// answer lost: a new acquire is refused until the retried delete is
/// confirmed and `Released` told, and the next attempt's node (another
/// name) outlives every retry.
#[test]
fn etcd_22082_a_retried_release_never_deletes_the_next_attempts_node() {
    let mut w = world(1);
    w.act(0, |l| l.acquire(g(1))).unwrap();
    assert!(w.run_until_quiet(1_000));
    let first = w.peers[0].recipe.own_node().unwrap().to_owned();
    w.act(0, |l| l.release()).unwrap();
    w.zk.lose_reply_after_apply(w.peers[0].session());
    assert_eq!(w.act(0, |l| l.acquire(g(2))), Err(Error::InvalidState));
    assert!(w.run_until_quiet(1_000));
    assert_eq!(
        w.peers[0].take_events(),
        [LockEvent::Acquired, LockEvent::Released]
    );
    w.act(0, |l| l.acquire(g(3))).unwrap();
    assert!(w.run_until_quiet(1_000));
    let second = w.peers[0].recipe.own_node().unwrap().to_owned();
    assert_ne!(second, first);
    assert_eq!(w.zk.children(DIR).unwrap(), [second]);
    assert!(w.peers[0].recipe.is_held());
    assert_eq!(
        w.zk.stats().count("delete"),
        2,
        "the release's, and its retry"
    );
}
