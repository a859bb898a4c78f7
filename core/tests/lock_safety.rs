//! Safety of the lock against what its users and operators do to it: other
//! kinds of contender in the same directory, and nodes deleted by someone
//! else (the recipes page names breaking locks as an operator's tool).
//!
//! The expected holder is computed here from the raw names (the last ten
//! characters are the sequence number, as the server writes it), not with
//! the crate's naming functions.

use herdless_core::lock::{Contender, Lock, LockEvent};
use herdless_core::naming::Flavour;
use herdless_core::sim::World;

mod support;
use support::acls::UNREADABLE;
use support::by_hand::g;

const DIR: &str = "/locks/safety";

/// Every event the peers emit, after one step, paired with the peer; a peer
/// that reports `Acquired` must have its node in the tree at that moment.
fn step_checked(w: &mut World<Lock>) -> Option<()> {
    w.step()?;
    check_acquisitions(w);
    Some(())
}

fn check_acquisitions(w: &mut World<Lock>) {
    for i in 0..w.peers.len() {
        if w.peers[i].events().contains(&LockEvent::Acquired) {
            let name = w.peers[i].recipe.own_node().map(str::to_owned);
            let node = name
                .as_deref()
                .and_then(|n| w.zk.node(&format!("{DIR}/{n}")));
            assert!(
                node.is_some(),
                "peer {i} acquired without a node of its own (own: {name:?}, dir: {:?})",
                w.zk.children(DIR)
            );
        }
    }
}

fn run_checked(w: &mut World<Lock>, max: usize) -> Vec<Vec<LockEvent>> {
    let mut events = vec![Vec::new(); w.peers.len()];
    for _ in 0..max {
        let stepped = step_checked(w);
        for (i, e) in events.iter_mut().enumerate() {
            e.extend(w.peers[i].take_events());
        }
        if stepped.is_none() {
            return events;
        }
    }
    panic!("did not become quiet in {max} steps");
}

/// The sequence number the server appended, read from the name's last ten
/// characters.
fn seq_of(name: &str) -> i64 {
    name[name.len() - 10..].parse().expect("a sequence suffix")
}

fn lowest_child(w: &World<Lock>) -> Option<String> {
    w.zk.children(DIR)?.into_iter().min_by_key(|n| seq_of(n))
}

fn acquire(w: &mut World<Lock>, i: usize, n: u8) {
    w.act(i, |l| l.acquire(g(n))).unwrap();
}

const FLAVOURS: [Flavour; 3] = [Flavour::Recipes, Flavour::Curator, Flavour::Kazoo];

/// An exclusive contender waits for a reader, a writer or an exclusive
/// contender ahead of it, whichever library named it, and goes in once that
/// holder leaves.
#[test]
fn an_exclusive_lock_waits_for_any_lower_holder_of_any_kind_and_flavour() {
    for holder_kind in [Contender::Reader, Contender::Writer, Contender::Exclusive] {
        for holder_flavour in FLAVOURS {
            for flavour in FLAVOURS {
                let mut w: World<Lock> = World::new(3);
                let holder =
                    w.add_peer(Lock::with_contender(DIR, holder_kind, holder_flavour).unwrap());
                let exclusive = w.add_peer(Lock::with_flavour(DIR, flavour).unwrap());
                acquire(&mut w, holder, 1);
                assert!(w.run_until_quiet(1_000));
                assert!(w.peers[holder].recipe.is_held());
                acquire(&mut w, exclusive, 2);
                assert!(w.run_until_quiet(1_000));
                assert!(
                    !w.peers[exclusive].recipe.is_held(),
                    "{flavour:?} exclusive lock went in beside a {holder_flavour:?} {holder_kind:?}"
                );
                w.act(holder, |l| l.release()).unwrap();
                assert!(w.run_until_quiet(1_000));
                assert!(
                    w.peers[exclusive].recipe.is_held(),
                    "{flavour:?} exclusive lock not served after a {holder_flavour:?} {holder_kind:?}"
                );
            }
        }
    }
}

/// A holder whose node an operator deletes is told `Lost`, even with
/// nobody waiting.
#[test]
fn a_holder_whose_node_is_deleted_is_told_lost() {
    for contender in [Contender::Exclusive, Contender::Reader, Contender::Writer] {
        let mut w: World<Lock> = World::new(5);
        let a = w.add_peer(Lock::with_contender(DIR, contender, Flavour::Recipes).unwrap());
        acquire(&mut w, a, 1);
        assert!(w.run_until_quiet(1_000));
        assert_eq!(w.peers[a].take_events(), vec![LockEvent::Acquired]);
        let node = lowest_child(&w).unwrap();
        w.zk.delete_node(&format!("{DIR}/{node}")).unwrap();
        assert!(w.run_until_quiet(1_000));
        assert_eq!(
            w.peers[a].take_events(),
            vec![LockEvent::Lost],
            "{contender:?}"
        );
        assert!(!w.peers[a].recipe.is_held());
    }
}

/// Breaking a lock: A holds, B and C wait; an operator deletes B's node,
/// then A's. A is told `Lost`, B never believes it holds without a node of
/// its own (it queues again, behind C), C acquires: one holder.
#[test]
fn breaking_a_lock_leaves_one_holder() {
    for seed in 0..50 {
        let mut w: World<Lock> = World::new(seed);
        let (a, b, c) = (
            w.add_peer(Lock::new(DIR).unwrap()),
            w.add_peer(Lock::new(DIR).unwrap()),
            w.add_peer(Lock::new(DIR).unwrap()),
        );
        for (i, n) in [(a, 1), (b, 2), (c, 3)] {
            acquire(&mut w, i, n);
            assert!(w.run_until_quiet(1_000));
        }
        let mut names: Vec<String> = w.zk.children(DIR).unwrap();
        names.sort_by_key(|n| seq_of(n));
        assert_eq!(names.len(), 3);
        for i in [a, b, c] {
            w.peers[i].take_events();
        }
        w.zk.delete_node(&format!("{DIR}/{}", names[1])).unwrap();
        w.zk.delete_node(&format!("{DIR}/{}", names[0])).unwrap();
        let events = run_checked(&mut w, 10_000);
        assert_eq!(events[a], vec![LockEvent::Lost], "seed {seed}: A");
        assert_eq!(events[c], vec![LockEvent::Acquired], "seed {seed}: C");
        assert!(events[b].is_empty(), "seed {seed}: B {:?}", events[b]);
        assert!(w.peers[c].recipe.is_held());
        assert!(!w.peers[b].recipe.is_held());
        // B queued again: its new node is after C's.
        let lowest = lowest_child(&w).unwrap();
        assert_eq!(Some(lowest.as_str()), w.peers[c].recipe.own_node());
        assert_eq!(w.zk.children(DIR).unwrap().len(), 2, "seed {seed}");
        w.act(c, |l| l.release()).unwrap();
        let events = run_checked(&mut w, 10_000);
        assert_eq!(
            events[b],
            vec![LockEvent::Acquired],
            "seed {seed}: B at last"
        );
    }
}

/// A waiter whose own node is deleted queues again and is served in turn.
#[test]
fn a_waiter_whose_node_is_deleted_queues_again() {
    let mut w: World<Lock> = World::new(9);
    let (a, b) = (
        w.add_peer(Lock::writer(DIR).unwrap()),
        w.add_peer(Lock::reader(DIR).unwrap()),
    );
    acquire(&mut w, a, 1);
    assert!(w.run_until_quiet(1_000));
    acquire(&mut w, b, 2);
    assert!(w.run_until_quiet(1_000));
    let own = w.peers[b].recipe.own_node().unwrap().to_owned();
    w.zk.delete_node(&format!("{DIR}/{own}")).unwrap();
    assert!(w.run_until_quiet(1_000));
    let again = w.peers[b].recipe.own_node().unwrap().to_owned();
    assert_ne!(again, own, "a new node");
    assert!(seq_of(&again) > seq_of(&own));
    assert!(!w.peers[b].recipe.is_held());
    w.act(a, |l| l.release()).unwrap();
    assert!(w.run_until_quiet(1_000));
    assert!(w.peers[b].recipe.is_held());
    assert_eq!(w.zk.children(DIR).unwrap(), vec![again]);
}

/// The value `%010d` wrote, read back independently: ten digits, or a
/// minus sign and the digits after it (eleven characters below
/// -999,999,999).
fn written_value(name: &str, marker: &str) -> i64 {
    let at = name.rfind(marker).expect("marker") + marker.len();
    name[at..].parse().expect("a number after the marker")
}

/// Contenders created across the sequence counter's wrap (2147483647, then
/// -2147483648, written with eleven characters) are served in creation
/// order, readers together, writers alone: the order is the test's own
/// (the order of creation), not the crate's sequence arithmetic.
#[test]
fn contenders_across_the_sequence_wrap_are_served_in_creation_order() {
    for start in [i32::MAX - 2, -1_000_000_003, -3] {
        let kinds = [
            Contender::Writer,
            Contender::Reader,
            Contender::Reader,
            Contender::Exclusive,
            Contender::Writer,
        ];
        let mut w: World<Lock> = World::new(11);
        w.zk.create_persistent(DIR, b"").unwrap();
        w.zk.set_cversion(DIR, start).unwrap();
        let peers: Vec<usize> = kinds
            .iter()
            .map(|&k| w.add_peer(Lock::with_contender(DIR, k, Flavour::Recipes).unwrap()))
            .collect();
        for (n, &i) in peers.iter().enumerate() {
            acquire(&mut w, i, n as u8 + 1);
            assert!(w.run_until_quiet(1_000));
        }
        // The names carry what the server wrote, wrapped as i32 wraps.
        let written: Vec<i64> = peers
            .iter()
            .zip(kinds)
            .map(|(&i, k)| {
                let marker = match k {
                    Contender::Reader => "-read-",
                    Contender::Writer => "-write-",
                    Contender::Exclusive => "-lock-",
                };
                written_value(w.peers[i].recipe.own_node().unwrap(), marker)
            })
            .collect();
        let expected: Vec<i64> = (0..5).map(|k| i64::from(start.wrapping_add(k))).collect();
        assert_eq!(written, expected, "start {start}");
        let held = |w: &World<Lock>| -> Vec<usize> {
            (0..peers.len())
                .filter(|&i| w.peers[peers[i]].recipe.is_held())
                .collect()
        };
        // Writer alone; then both readers; then the exclusive lock; then
        // the last writer.
        for (now, release) in [
            (vec![0], vec![0]),
            (vec![1, 2], vec![1, 2]),
            (vec![3], vec![3]),
            (vec![4], vec![4]),
        ] {
            assert_eq!(held(&w), now, "start {start}");
            for r in release {
                w.act(peers[r], |l| l.release()).unwrap();
            }
            assert!(w.run_until_quiet(10_000));
        }
        assert!(held(&w).is_empty());
    }
}

/// A world whose lock directory exists and everyone may list: made by a
/// lock with the open ACL, which acquired and released (one made with
/// `UNREADABLE` could not be listed). Its peer 0 is that lock, idle.
fn with_readable_dir(seed: u64) -> World<Lock> {
    let mut w: World<Lock> = World::new(seed);
    let opener = w.add_peer(Lock::new(DIR).unwrap());
    acquire(&mut w, opener, 99);
    assert!(w.run_until_quiet(1_000));
    w.act(opener, |l| l.release()).unwrap();
    assert!(w.run_until_quiet(1_000));
    w.peers[opener].take_events();
    w
}

/// A waiter that may not read its own node fails rather than waits: the
/// refused read set no watch, and no watch would tell it of the node's
/// deletion (the server tells a change only to sessions that may read the
/// node, CVE-2024-23944), so it could take its predecessor's deletion for
/// its turn with its own node gone, and hold beside the next contender.
/// Its node is deleted before it says so.
#[test]
fn a_waiter_that_cannot_read_its_own_node_fails_rather_than_waits() {
    for seed in 0..20 {
        let mut w: World<Lock> = World::new(seed);
        let a = w.add_peer(Lock::new(DIR).unwrap());
        let b = w.add_peer(Lock::new(DIR).unwrap().with_acl(UNREADABLE));
        acquire(&mut w, a, 1);
        assert!(w.run_until_quiet(1_000));
        acquire(&mut w, b, 2);
        let events = run_checked(&mut w, 10_000);
        assert_eq!(events[a], vec![LockEvent::Acquired], "seed {seed}: A");
        let refused = LockEvent::Failed(herdless_core::Error::Zk(herdless_core::ZkError::NoAuth));
        assert_eq!(events[b], vec![refused], "seed {seed}: B");
        let a_node = w.peers[a].recipe.own_node().unwrap().to_owned();
        assert_eq!(w.zk.children(DIR).unwrap(), vec![a_node], "seed {seed}");
        w.act(a, |l| l.release()).unwrap();
        let events = run_checked(&mut w, 10_000);
        assert_eq!(events[a], vec![LockEvent::Released], "seed {seed}: A");
        assert!(events[b].is_empty(), "seed {seed}: B {:?}", events[b]);
    }
}

/// A lock that may not read its own node, uncontended, gives it up as soon
/// as its read is refused: `Lost` if the listing had already made it the
/// holder, the refusal otherwise, its node deleted either way.
#[test]
fn a_lock_that_cannot_read_its_own_node_gives_it_up() {
    for seed in 0..20 {
        let mut w = with_readable_dir(seed);
        let a = w.add_peer(Lock::new(DIR).unwrap().with_acl(UNREADABLE));
        acquire(&mut w, a, 1);
        let events = run_checked(&mut w, 10_000);
        let refused = LockEvent::Failed(herdless_core::Error::Zk(herdless_core::ZkError::NoAuth));
        assert!(
            events[a] == [LockEvent::Acquired, LockEvent::Lost] || events[a] == [refused],
            "seed {seed}: {:?}",
            events[a]
        );
        assert!(!w.peers[a].recipe.is_held());
        assert_eq!(
            w.zk.children(DIR).unwrap(),
            Vec::<String>::new(),
            "seed {seed}"
        );
    }
}

/// A holder that gives the lock up because it may not read its own node
/// says `Lost` before the node goes: the next contender, waiting behind
/// it, may hold only once the old holder has been told. Told after the
/// delete, the old holder was still at work while the next one held.
#[test]
fn a_holder_that_may_not_read_its_node_is_told_lost_before_the_next_holds() {
    for seed in 0..50 {
        let mut w = with_readable_dir(seed);
        // Its node may be read by the next contender's identity alone, so
        // that the next can wait behind it.
        static READ_BY_NEXT_ONLY: herdless_core::Acl<'static> = herdless_core::Acl(&[
            herdless_core::AclEntry {
                perms: herdless_core::perms::READ,
                scheme: "digest",
                id: NEXT,
            },
            herdless_core::AclEntry {
                perms: herdless_core::perms::ALL & !herdless_core::perms::READ,
                scheme: "world",
                id: "anyone",
            },
        ]);
        const NEXT: &str = "next:hash-of-next";
        let blind = w.add_peer(Lock::new(DIR).unwrap().with_acl(READ_BY_NEXT_ONLY));
        let next = w.add_peer(Lock::new(DIR).unwrap());
        let session = w.peers[next].session();
        w.zk.add_auth(session, "digest", NEXT);
        acquire(&mut w, blind, 1);
        acquire(&mut w, next, 2);
        let mut holding = [false; 3];
        for _ in 0..10_000 {
            let stepped = step_checked(&mut w);
            for (i, held) in holding.iter_mut().enumerate() {
                for event in w.peers[i].take_events() {
                    match event {
                        LockEvent::Acquired => *held = true,
                        LockEvent::Lost | LockEvent::Released => *held = false,
                        _ => {}
                    }
                }
            }
            let holders = holding.iter().filter(|h| **h).count();
            assert!(holders <= 1, "seed {seed}: two believe they hold");
            if stepped.is_none() {
                break;
            }
        }
        assert!(
            holding[next],
            "seed {seed}: the next contender holds at last"
        );
    }
}
