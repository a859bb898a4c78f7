//! Bugs other leader elections shipped, each replayed on the in-memory
//! ZooKeeper. Every test fails on the buggy behaviour.

use herdless_core::election::{Acknowledgement, Election, ElectionEvent, ElectionState};
use herdless_core::sim::{SessionId, SessionStatus, Step, World};
use herdless_core::Instant;
use herdless_core::{Acl, CreateMode, Recipe, Request, RequestId, SessionEvent, Version};

mod support;
use support::acls::UNREADABLE;
use support::by_hand::g;
use support::session_moves;

const DIR: &str = "/election/p";
const ACK: &str = "/election/p/leader";

fn world(n: usize) -> World<Election> {
    let mut w: World<Election> = World::new(42);
    for _ in 0..n {
        w.add_peer(Election::new(DIR).unwrap());
    }
    w
}

/// Campaigns peer `i` and runs until quiet.
fn campaign(w: &mut World<Election>, i: usize) {
    let data = format!("peer-{i}").into_bytes();
    w.act(i, |e| e.campaign(g(i as u8 + 1), &data)).unwrap();
    assert!(w.run_until_quiet(10_000));
}

/// The node name the acknowledgement names, if any.
fn acknowledged(w: &World<Election>) -> Option<String> {
    let ack = w.zk.node(ACK)?;
    Acknowledgement::parse(&ack.data).map(|a| a.node.to_owned())
}

fn own(w: &World<Election>, i: usize) -> String {
    w.peers[i].recipe.own_node().unwrap().to_owned()
}

fn nodes(w: &World<Election>) -> Vec<String> {
    w.zk.children(DIR).unwrap_or_default()
}

/// A session of an "operator" (or of another library), for requests the
/// peers do not make.
struct Admin {
    session: i64,
    serial: u32,
}

impl Admin {
    fn open(w: &mut World<Election>) -> Admin {
        Admin {
            session: w.zk.open_session(),
            serial: 0,
        }
    }

    fn send(&mut self, w: &mut World<Election>, request: Request<'_>) {
        self.serial += 1;
        w.zk.submit(self.session, RequestId::new(0, self.serial), &request);
        w.zk.apply_next(self.session);
        while w.zk.next_delivery(self.session).is_some() {}
    }

    fn delete(&mut self, w: &mut World<Election>, path: &str) {
        self.send(
            w,
            Request::Delete {
                path,
                version: Version::Any,
            },
        );
    }
}

/// No two peers with live sessions believe they lead, counting only peers
/// that have heard everything the server sent them: a leader deposed by
/// someone deleting its node learns it from that node's watch, and the next
/// one may lead before that notification arrives (nothing in ZooKeeper
/// orders notifications to two sessions).
fn assert_one_leader(w: &World<Election>) {
    let leaders: Vec<usize> = (0..w.peers.len())
        .filter(|&i| {
            let s = w.peers[i].session();
            w.peers[i].recipe.is_leading() && w.zk.is_live(s) && w.zk.pending_deliveries(s) == 0
        })
        .collect();
    assert!(leaders.len() <= 1, "two leaders: {leaders:?}");
}

/// CURATOR-696 (also CURATOR-620, 644, 653, 504, bonifaido PR #69): after a
/// reconnect onto a *new* session, LeaderLatch reused its old node, which
/// the server was about to delete, and stayed leader. The own node's
/// `ephemeralOwner` must be the current session before leading again.
#[test]
fn curator_696_a_node_of_the_previous_session_is_no_claim_to_lead() {
    let mut w = world(2);
    campaign(&mut w, 0);
    campaign(&mut w, 1);
    assert!(w.peers[0].recipe.is_leading());
    let old_node = own(&w, 0);
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
            !w.peers[0].recipe.is_leading(),
            "leads on a node owned by the old session"
        );
    }
    assert_eq!(
        w.peers[0].take_events(),
        [
            ElectionEvent::Leading,
            ElectionEvent::Suspended,
            ElectionEvent::Lost
        ]
    );
    assert!(
        !nodes(&w).contains(&old_node),
        "the old node is deleted, not adopted"
    );
    // With the old node gone, the next candidate leads.
    assert!(w.peers[1].recipe.is_leading());
    assert_eq!(acknowledged(&w), Some(own(&w, 1)));
}

/// CURATOR-696 with the session id known from the start (as the tokio
/// driver reports it): a `Connected` with another id is a loss at once.
#[test]
fn curator_696_a_reconnect_with_another_session_id_is_a_loss() {
    let mut w = world(1);
    let s1 = w.peers[0].session();
    w.act(0, |e| {
        e.handle_session(Instant::ZERO, SessionEvent::Connected { session_id: s1 })
    });
    campaign(&mut w, 0);
    w.renew_session(0);
    let s2 = w.peers[0].session();
    assert!(!w.peers[0].recipe.is_leading());
    assert_eq!(
        w.peers[0].take_events(),
        [ElectionEvent::Leading, ElectionEvent::Lost]
    );
    assert!(w.run_until_quiet(1_000));
    assert!(nodes(&w).iter().all(|n| n == "leader"), "{:?}", nodes(&w));
    // Campaigning again on the new session leads with a node it owns.
    campaign(&mut w, 0);
    let path = w.peers[0].recipe.own_path().unwrap().to_owned();
    assert_eq!(w.zk.node(&path).unwrap().stat.ephemeral_owner, s2);
    assert!(w.peers[0].recipe.is_leading());
}

/// CURATOR-498: a candidate moved to a new session while waiting neither
/// adopts its old node nor leaves it behind; it volunteers again.
#[test]
fn curator_498_a_waiting_candidate_volunteers_again_on_a_new_session() {
    let mut w = world(2);
    // Told its session id at the start, as the tokio driver does.
    let s1 = w.peers[1].session();
    w.act(1, |e| {
        e.handle_session(Instant::ZERO, SessionEvent::Connected { session_id: s1 })
    });
    campaign(&mut w, 0);
    campaign(&mut w, 1);
    let old_node = own(&w, 1);
    w.renew_session(1);
    let s2 = w.peers[1].session();
    assert!(w.run_until_quiet(1_000));
    let new_node = own(&w, 1);
    assert_ne!(new_node, old_node);
    assert!(!nodes(&w).contains(&old_node), "{:?}", nodes(&w));
    w.act(0, |e| e.resign()).unwrap();
    assert!(w.run_until_quiet(1_000));
    assert!(w.peers[1].recipe.is_leading());
    let path = w.peers[1].recipe.own_path().unwrap().to_owned();
    assert_eq!(w.zk.node(&path).unwrap().stat.ephemeral_owner, s2);
}

/// CURATOR-460: with a policy that tolerated SUSPENDED, two leaders ran at
/// once. A leader whose connection drops stops believing it leads at once,
/// long before its session expires and the next candidate takes over.
#[test]
fn curator_460_suspension_is_reported_at_once_not_at_expiry() {
    let mut w = world(2);
    campaign(&mut w, 0);
    campaign(&mut w, 1);
    w.peers[0].take_events();
    let s0 = w.peers[0].session();
    w.zk.disconnect(s0);
    w.peers[0].deliver_one(&mut w.zk);
    assert_eq!(w.peers[0].take_events(), [ElectionEvent::Suspended]);
    assert!(!w.peers[0].recipe.is_leading());
    assert!(w.peers[0].recipe.is_suspended());
    // The session expires while the client is away; the next one leads.
    w.zk.expire(s0);
    for _ in 0..1_000 {
        assert_one_leader(&w);
        if w.step().is_none() {
            break;
        }
    }
    assert!(w.peers[1].recipe.is_leading());
    assert_eq!(w.peers[0].take_events(), [ElectionEvent::Lost]);
}

/// Peer 0 leads with `lost_after` of 1 s, peer 1 follows, and peer 0's
/// connection is cut: it has just said `Suspended`. Returns its session and
/// when it heard of the loss (ms), where its suspension clock starts.
fn leader_suspended_with_lost_after_1s() -> (World<Election>, SessionId, u64) {
    let mut w = world(2);
    w.peers[0].recipe.set_lost_after(Some(1_000));
    campaign(&mut w, 0);
    campaign(&mut w, 1);
    w.peers[0].take_events();
    let s0 = w.peers[0].session();
    w.zk.disconnect(s0);
    w.peers[0].deliver_one(&mut w.zk);
    assert_eq!(w.peers[0].take_events(), [ElectionEvent::Suspended]);
    let now = w.now().as_millis();
    (w, s0, now)
}

/// CURATOR-220: LOST was sometimes never delivered, so a leader that
/// ignored SUSPENDED stayed leader. Once suspended longer than the session
/// timeout, the session is expired for certain: `Lost`, heard or not.
#[test]
fn curator_220_lost_after_the_session_timeout_even_if_never_told() {
    let (mut w, s0, now) = leader_suspended_with_lost_after_1s();
    // The clock starts at the time the loss was heard.
    assert_eq!(
        w.peers[0].recipe.poll_timeout().map(|t| t.as_millis()),
        Some(now + 1_000)
    );
    w.apply(Step::Time(now + 999));
    assert!(w.peers[0].take_events().is_empty());
    w.apply(Step::Time(now + 1_000));
    assert_eq!(w.peers[0].take_events(), [ElectionEvent::Lost]);
    assert_eq!(w.peers[0].recipe.state(), ElectionState::Resigning);
    // Should the same session come back after all, its node and
    // acknowledgement go, and the next candidate leads.
    assert_eq!(w.zk.status(s0), Some(SessionStatus::Disconnected));
    assert!(w.run_until_quiet(1_000));
    assert_eq!(w.peers[0].recipe.state(), ElectionState::Idle);
    assert!(w.peers[1].recipe.is_leading());
    assert_eq!(acknowledged(&w), Some(own(&w, 1)));
    assert!(w.peers[0].take_events().is_empty(), "Lost is said once");
}

/// The other side of CURATOR-220: the clock counts only while the
/// connection is away. Once the same session is back, the checks of the
/// own node and the acknowledgement decide, however long they take: a
/// leader whose checks outlast `lost_after` counted from the loss is
/// `Resumed`, not `Lost`.
#[test]
fn a_reconnect_stops_the_suspension_clock() {
    let (mut w, s0, lost_at) = leader_suspended_with_lost_after_1s();
    w.apply(Step::Time(lost_at + 500));
    w.zk.reconnect(s0);
    // `Connected`: the leader checks its node again, and stops counting.
    assert!(w.peers[0].deliver_one(&mut w.zk));
    assert!(w.peers[0].recipe.is_suspended());
    assert_eq!(w.peers[0].recipe.poll_timeout(), None);
    // The checks are not answered before the clock would have run out.
    w.apply(Step::Time(lost_at + 1_500));
    assert!(w.peers[0].take_events().is_empty());
    assert!(w.run_until_quiet(1_000));
    assert_eq!(w.peers[0].take_events(), [ElectionEvent::Resumed]);
    assert!(w.peers[0].recipe.is_leading());
    assert_eq!(acknowledged(&w), Some(own(&w, 0)));
}

/// CURATOR-724 (kazoo#563, CURATOR-308): the latch did not reset after its
/// parent node vanished. A waiting candidate whose node and directory are
/// deleted under it re-creates both and leads.
#[test]
fn curator_724_a_vanished_directory_is_created_again() {
    let mut w = world(2);
    campaign(&mut w, 0);
    campaign(&mut w, 1);
    // While peer 1 waits: its node is deleted, the leader's session
    // expires (its node and acknowledgement go), and the directory is
    // deleted, all before peer 1 hears anything.
    let mut admin = Admin::open(&mut w);
    let waiting = format!("{DIR}/{}", own(&w, 1));
    admin.delete(&mut w, &waiting);
    w.zk.expire(w.peers[0].session());
    admin.delete(&mut w, DIR);
    assert!(w.zk.node(DIR).is_none());
    assert!(w.run_until_quiet(1_000));
    assert!(w.peers[1].recipe.is_leading(), "{:?}", w.peers[1].recipe);
    assert!(w.zk.node(DIR).is_some());
    assert_eq!(acknowledged(&w), Some(own(&w, 1)));
}

/// Curator #3: the create succeeded but its reply was lost; the candidate
/// finds its node by GUID instead of creating a second one.
#[test]
fn curator_3_lost_create_reply_leaves_no_orphan() {
    let mut w = world(1);
    w.zk.create_persistent(DIR, b"").unwrap();
    w.act(0, |e| e.campaign(g(1), b"x")).unwrap();
    w.zk.lose_reply_after_apply(w.peers[0].session());
    assert!(w.run_until_quiet(1_000));
    assert_eq!(w.peers[0].take_events(), [ElectionEvent::Leading]);
    assert_eq!(
        w.zk.stats().count("create"),
        2,
        "one candidate node, one ack"
    );
    assert_eq!(nodes(&w).len(), 2);
}

/// The acknowledgement's create may lose its reply too: it is adopted (it
/// names this candidate), not taken for someone else's.
#[test]
fn a_lost_acknowledgement_reply_is_adopted() {
    let mut w = world(1);
    w.zk.create_persistent(DIR, b"").unwrap();
    w.act(0, |e| e.campaign(g(1), b"x")).unwrap();
    let s = w.peers[0].session();
    // The create and the listing, then the check of the own node.
    for _ in 0..2 {
        while w.zk.apply_next(s) {}
        while w.peers[0].deliver_one(&mut w.zk) {}
    }
    assert_eq!(w.zk.pending_requests(s), 1, "the acknowledgement's create");
    w.zk.lose_reply_after_apply(s);
    let czxid =
        w.zk.node(ACK)
            .expect("the acknowledgement landed")
            .stat
            .czxid;
    assert_eq!(
        w.peers[0].take_events(),
        [ElectionEvent::Leading],
        "reported as the acknowledgement was sent"
    );
    assert!(w.run_until_quiet(1_000));
    assert_eq!(
        w.peers[0].take_events(),
        [ElectionEvent::Suspended, ElectionEvent::Resumed],
        "its own acknowledgement is adopted, not replaced"
    );
    assert_eq!(acknowledged(&w), Some(own(&w, 0)));
    assert_eq!(w.zk.node(ACK).unwrap().stat.czxid, czxid);
}

/// CURATOR-79, zk-ruby#49, aiozk#34: a candidate that gives up while
/// waiting (resigns, or its deadline passes) leaves no node behind.
#[test]
fn curator_79_resigned_and_timed_out_candidates_leave_no_node() {
    let mut w = world(3);
    campaign(&mut w, 0);
    campaign(&mut w, 1);
    w.act(1, |e| e.resign()).unwrap();
    assert!(w.run_until_quiet(1_000));
    assert!(matches!(
        w.peers[1].take_events()[..],
        [ElectionEvent::Following { .. }, ElectionEvent::Resigned]
    ));
    let deadline = w.now() + 100;
    w.act(2, |e| e.campaign_until(g(3), b"", deadline)).unwrap();
    // Its requests and answers before any time passes (a random schedule
    // may jump to the deadline first), so it waits before it times out.
    let s2 = w.peers[2].session();
    while w.zk.pending_requests(s2) + w.zk.pending_deliveries(s2) > 0 {
        w.apply(Step::Apply(2));
        w.apply(Step::Deliver(2));
    }
    assert!(w.run_until_quiet(1_000));
    assert!(matches!(
        w.peers[2].take_events()[..],
        [ElectionEvent::Following { .. }, ElectionEvent::TimedOut]
    ));
    let mut left = nodes(&w);
    left.sort();
    let mut expected = vec![own(&w, 0), "leader".to_owned()];
    expected.sort();
    assert_eq!(left, expected);
}

/// CURATOR-54, CURATOR-73, CURATOR-104: no reliable way to cancel or
/// restart leadership in edge cases. Resigning at any point of a campaign
/// leaves nothing behind, and campaigning again works.
#[test]
fn curator_54_resigning_at_any_step_of_a_campaign_is_clean() {
    for cut in 0..40 {
        let mut w = world(2);
        campaign(&mut w, 0);
        w.act(1, |e| e.campaign(g(2), b"")).unwrap();
        w.act(0, |e| e.resign()).unwrap();
        for _ in 0..cut {
            w.step();
        }
        if w.peers[1].recipe.state() != ElectionState::Idle {
            w.act(1, |e| e.resign()).unwrap();
        }
        assert!(w.run_until_quiet(1_000));
        assert!(nodes(&w).is_empty(), "cut {cut}: {:?}", nodes(&w));
        let events = w.peers[1].take_events();
        assert_eq!(events.last(), Some(&ElectionEvent::Resigned), "cut {cut}");
        campaign(&mut w, 1);
        assert!(w.peers[1].recipe.is_leading(), "cut {cut}");
    }
}

/// CURATOR-678 (for the acknowledgement): a resignation whose delete
/// landed but whose reply was lost is retried after the reconnect without
/// deleting the *next* leader's acknowledgement.
#[test]
fn a_retried_resignation_never_deletes_the_next_leaders_acknowledgement() {
    let mut w = world(2);
    campaign(&mut w, 0);
    campaign(&mut w, 1);
    let s0 = w.peers[0].session();
    w.act(0, |e| e.resign()).unwrap();
    // The acknowledgement's delete, then the node's, whose reply is lost.
    w.zk.apply_next(s0);
    w.zk.lose_reply_after_apply(s0);
    // Peer 1 leads and acknowledges before peer 0 reconnects.
    while w.peers[1].deliver_one(&mut w.zk) || w.zk.apply_next(w.peers[1].session()) {}
    assert!(w.peers[1].recipe.is_leading());
    assert!(w.run_until_quiet(1_000));
    assert_eq!(
        w.peers[0].take_events().last(),
        Some(&ElectionEvent::Resigned)
    );
    assert_eq!(acknowledged(&w), Some(own(&w, 1)));
}

/// CURATOR-107: a predecessor gone before the watch is set leaves no watch.
#[test]
fn curator_107_no_watch_left_on_a_vanished_predecessor() {
    let mut w = world(2);
    campaign(&mut w, 0);
    w.act(1, |e| e.campaign(g(2), b"")).unwrap();
    let s1 = w.peers[1].session();
    w.zk.apply_next(s1);
    w.zk.apply_next(s1);
    while w.peers[1].deliver_one(&mut w.zk) {}
    // Peer 0 resigns before peer 1's watch request reaches the server.
    w.act(0, |e| e.resign()).unwrap();
    while w.zk.apply_next(w.peers[0].session()) {}
    assert!(w.run_until_quiet(1_000));
    assert!(w.peers[1].recipe.is_leading());
    let leftover: Vec<_> =
        w.zk.watches_of(s1)
            .into_iter()
            .filter(|(_, path)| !path.ends_with(&own(&w, 1)) && path != ACK)
            .collect();
    assert!(leftover.is_empty(), "{leftover:?}");
    assert!(w.zk.watches_of(w.peers[0].session()).is_empty());
}

/// ZOOKEEPER-2931: order by sequence suffix, never whole names, whichever
/// library wrote the candidate: Curator's LeaderLatch and Kazoo's Election
/// nodes with lower sequences are waited for.
#[test]
fn zookeeper_2931_foreign_candidates_order_by_sequence() {
    let mut w = world(1);
    w.zk.create_persistent(DIR, b"").unwrap();
    let mut curator = Admin::open(&mut w);
    let mut kazoo = Admin::open(&mut w);
    for (admin, prefix) in [
        (
            &mut curator,
            "/election/p/_c_ffffffff-ffff-4fff-bfff-ffffffffffff-latch-",
        ),
        (
            &mut kazoo,
            "/election/p/ffffffffffffffffffffffffffffffff__lock__",
        ),
    ] {
        admin.send(
            &mut w,
            Request::Create {
                path: prefix,
                data: b"",
                acl: Acl::OPEN,
                mode: CreateMode::EphemeralSequential,
            },
        );
    }
    w.act(0, |e| e.campaign(g(1), b"")).unwrap();
    assert!(w.run_until_quiet(1_000));
    assert!(matches!(
        w.peers[0].take_events()[..],
        [ElectionEvent::Following { leader }] if leader.value() == 0
    ));
    w.zk.close(curator.session);
    assert!(w.run_until_quiet(1_000));
    assert!(
        !w.peers[0].recipe.is_leading(),
        "the Kazoo candidate is ahead"
    );
    w.zk.close(kazoo.session);
    assert!(w.run_until_quiet(1_000));
    assert_eq!(w.peers[0].take_events(), [ElectionEvent::Leading]);
}

/// "No library writes the leader-acknowledgement node": the leader writes
/// one naming its node and data, removes it when it resigns, and a stale
/// one (its leader's node deleted by an operator while its session lives)
/// is replaced by the next leader, never deleted by the stale leader.
#[test]
fn the_acknowledgement_names_the_leader_and_a_stale_one_is_replaced() {
    let mut w = world(2);
    campaign(&mut w, 0);
    let ack = Acknowledgement::parse(&w.zk.node(ACK).unwrap().data)
        .map(|a| (a.node.to_owned(), a.data.to_vec()))
        .unwrap();
    assert_eq!(ack, (own(&w, 0), b"peer-0".to_vec()));
    campaign(&mut w, 1);
    let mut admin = Admin::open(&mut w);
    let leader_node = format!("{DIR}/{}", own(&w, 0));
    admin.delete(&mut w, &leader_node);
    assert_eq!(
        acknowledged(&w).as_deref(),
        leader_node.strip_prefix("/election/p/")
    );
    for _ in 0..1_000 {
        assert_one_leader(&w);
        if w.step().is_none() {
            break;
        }
    }
    assert_eq!(
        w.peers[0].take_events(),
        [ElectionEvent::Leading, ElectionEvent::Lost]
    );
    assert!(w.peers[1].recipe.is_leading());
    assert_eq!(acknowledged(&w), Some(own(&w, 1)));
    w.act(1, |e| e.resign()).unwrap();
    assert!(w.run_until_quiet(1_000));
    assert!(w.zk.node(ACK).is_none(), "removed on resignation");
}

/// Herd effect (the recipes page, CURATOR-444): the leader's departure
/// notifies exactly one candidate, whatever their number.
#[test]
fn a_departing_leader_wakes_exactly_one_of_ten_candidates() {
    let mut w = world(10);
    for i in 0..10 {
        campaign(&mut w, i);
    }
    let before = w.zk.stats().notifications;
    w.zk.expire(w.peers[0].session());
    assert!(w.run_until_quiet(10_000));
    assert_eq!(w.zk.stats().notifications - before, 1);
    assert!(w.peers[1].recipe.is_leading());
    assert_eq!(acknowledged(&w), Some(own(&w, 1)));
}

/// CURATOR-206 for leadership: the leader is told when its session expires.
#[test]
fn curator_206_the_leader_is_told_it_lost() {
    let mut w = world(1);
    campaign(&mut w, 0);
    w.zk.expire(w.peers[0].session());
    assert!(w.run_until_quiet(1_000));
    assert_eq!(
        w.peers[0].take_events(),
        [ElectionEvent::Leading, ElectionEvent::Lost]
    );
    assert!(w.zk.node(ACK).is_none(), "the acknowledgement died with it");
}

/// The candidate's memory is its buffers (six paths and the
/// acknowledgement) plus small fixed state (request queue, events), whatever the number of
/// candidates: a child listing is streamed, never stored.
#[test]
fn the_state_machines_are_bounded_by_their_buffers() {
    use herdless_core::election::Observer;
    let candidate = std::mem::size_of::<Election>();
    let observer = std::mem::size_of::<Observer>();
    println!("size_of::<Election<128, 192>>() = {candidate} bytes, Observer = {observer} bytes");
    // 680: the fixed state includes the fold of a listing read in parts.
    assert!(candidate < 6 * 128 + 192 + 680, "{candidate}");
    assert!(observer < 128 + 192 + 320, "{observer}");
    let mut w = world(1);
    w.zk.create_persistent(DIR, b"").unwrap();
    // 300 other candidates in the directory: same state, one pass.
    let mut admin = Admin::open(&mut w);
    for _ in 0..300 {
        admin.send(
            &mut w,
            Request::Create {
                path: "/election/p/x-n_",
                data: b"",
                acl: Acl::OPEN,
                mode: CreateMode::EphemeralSequential,
            },
        );
    }
    w.act(0, |e| e.campaign(g(1), b"")).unwrap();
    assert!(w.run_until_quiet(1_000));
    assert_eq!(
        w.peers[0].recipe.predecessor(),
        Some("/election/p/x-n_0000000299")
    );
}

/// A candidate that may not read its own node (an ACL without read for its
/// client) fails rather than campaigns: the server tells a change only to
/// sessions that may read the node (CVE-2024-23944), so nothing could tell
/// it of its node's deletion, and it would lead beside the next leader.
/// Its node is deleted before it says so; a leader stays the one leader.
#[test]
fn a_candidate_that_may_not_read_its_own_node_fails_rather_than_campaigns() {
    for seed in 0..20 {
        let mut w: World<Election> = World::new(seed);
        let leader = w.add_peer(Election::new(DIR).unwrap());
        let blind = w.add_peer(Election::new(DIR).unwrap().with_acl(UNREADABLE));
        campaign(&mut w, leader);
        assert_eq!(w.peers[leader].take_events(), [ElectionEvent::Leading]);
        campaign(&mut w, blind);
        let refused =
            ElectionEvent::Failed(herdless_core::Error::Zk(herdless_core::ZkError::NoAuth));
        // `Following` may come first: the own node is read once it waits.
        let events = w.peers[blind].take_events();
        assert_eq!(events.last(), Some(&refused), "seed {seed}: {events:?}");
        assert!(!events.contains(&ElectionEvent::Leading), "seed {seed}");
        assert_eq!(w.peers[blind].recipe.state(), ElectionState::Idle);
        assert_eq!(
            nodes(&w),
            [own(&w, leader), "leader".to_owned()],
            "seed {seed}: its node deleted"
        );
        assert_one_leader(&w);
    }
}
