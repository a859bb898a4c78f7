//! The exclusive lock driven by hand-written replies: the protocol's exact
//! sequence of requests, with no server at all.

use herdless_core::lock::{GiveUp, Lock, LockEvent, LockState};
use herdless_core::naming::Guid;
use herdless_core::{
    Children, CreateMode, Instant, Recipe, Reply, RequestId, SessionEvent, Stat, WatchEvent,
    WatchKind, ZkError,
};

mod support;
use support::by_hand::{drain, events, texts};

/// The no-op write a search by GUID goes behind, as `drain` shows it.
const CATCH_UP: &str = "Check { path: \"/locks/a\", version: Any }";
const GUID: Guid = Guid([0x11; 16]);
const OWN: &str = "11111111-1111-1111-1111-111111111111-lock-0000000005";

/// The stat of an ephemeral node of the lock's session (the first owner a
/// lock sees names its session, when no `Connected` told it).
fn ephemeral() -> Stat {
    Stat {
        ephemeral_owner: 1,
        ..Stat::default()
    }
}

fn children(lock: &mut Lock, id: RequestId, names: &[&str]) {
    lock.handle_reply(Instant::ZERO, id, Reply::Children(Children::new(&names)));
}

fn created(lock: &mut Lock, id: RequestId, name: &str) {
    let path = format!("/locks/a/{name}");
    lock.handle_reply(Instant::ZERO, id, Reply::Created { path: &path });
}

/// The own node's prefix under `GUID`.
const PREFIX: &str = "11111111-1111-1111-1111-111111111111-lock-";
/// The same under the next GUID (the last four bytes plus one), which a
/// waiter whose node went queues again under, so that a search for a lost
/// create can only find the new node.
const NEXT_PREFIX: &str = "11111111-1111-1111-1111-111111111112-lock-";

/// The lock sends a new create (of a node named `prefix`) and listing,
/// reporting nothing: it is back in line.
fn assert_back_in_line(lock: &mut Lock, prefix: &str) {
    assert_eq!(
        texts(&drain(lock)),
        [
            format!("create /locks/a/{prefix} EphemeralSequential"),
            "children /locks/a watch=false".to_string(),
        ]
    );
    assert!(events(lock).is_empty());
    assert_eq!(lock.state(), LockState::Acquiring);
}

/// A lock that holds after one round trip, with its requests drained.
fn held() -> Lock {
    let mut lock: Lock = Lock::new("/locks/a").unwrap();
    lock.acquire(GUID).unwrap();
    let sent = drain(&mut lock);
    created(&mut lock, sent[0].0, OWN);
    children(&mut lock, sent[1].0, &[OWN]);
    assert_eq!(events(&mut lock), vec![LockEvent::Acquired]);
    lock
}

#[test]
fn uncontended_acquire_is_one_round_trip_and_release_one_delete() {
    let mut lock: Lock = Lock::new("/locks/a").unwrap();
    lock.acquire(GUID).unwrap();
    let sent = drain(&mut lock);
    assert_eq!(sent.len(), 2, "create and listing leave together: {sent:?}");
    assert_eq!(
        sent[0].1,
        format!(
            "create /locks/a/{} {:?}",
            &OWN[..OWN.len() - 10],
            CreateMode::EphemeralSequential
        )
    );
    assert_eq!(sent[1].1, "children /locks/a watch=false");
    created(&mut lock, sent[0].0, OWN);
    // The own node is watched from the create's answer on, while the
    // listing is still in flight: a holder hears of its node's deletion.
    let own_watch = drain(&mut lock);
    assert_eq!(own_watch.len(), 1);
    assert_eq!(own_watch[0].1, format!("getData /locks/a/{OWN} watch=true"));
    children(&mut lock, sent[1].0, &[OWN, "unrelated", "sub-lock"]);
    assert_eq!(events(&mut lock), vec![LockEvent::Acquired]);
    assert!(lock.is_held());
    assert!(drain(&mut lock).is_empty());
    let stat = ephemeral();
    let own_data = Reply::Data { data: b"", stat };
    lock.handle_reply(Instant::ZERO, own_watch[0].0, own_data);
    assert!(events(&mut lock).is_empty());

    lock.release().unwrap();
    let sent = drain(&mut lock);
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].1, format!("delete /locks/a/{OWN}"));
    assert!(
        events(&mut lock).is_empty(),
        "released only once the delete is confirmed"
    );
    lock.handle_reply(Instant::ZERO, sent[0].0, Reply::Deleted);
    assert_eq!(events(&mut lock), vec![LockEvent::Released]);
    assert_eq!(lock.state(), LockState::Idle);
}

#[test]
fn waiter_watches_only_its_predecessor_with_get_data_and_takes_over_without_listing() {
    let mut lock: Lock = Lock::new("/locks/a").unwrap();
    lock.acquire(GUID).unwrap();
    let sent = drain(&mut lock);
    created(&mut lock, sent[0].0, OWN);
    // Another library's node is lowest; sorting is by suffix, not by name.
    let kazoo = "ffffffffffffffffffffffffffffffff__lock__0000000003";
    children(&mut lock, sent[1].0, &["zzz-lock-0000000009", OWN, kazoo]);
    let sent = drain(&mut lock);
    assert_eq!(sent.len(), 2);
    // The own node's watch is set first, so its deletion is heard first.
    assert_eq!(sent[0].1, format!("getData /locks/a/{OWN} watch=true"));
    let stat = ephemeral();
    lock.handle_reply(Instant::ZERO, sent[0].0, Reply::Data { data: b"", stat });
    let sent = &sent[1..];
    assert_eq!(sent[0].1, format!("getData /locks/a/{kazoo} watch=true"));
    lock.handle_reply(
        Instant::ZERO,
        sent[0].0,
        Reply::Data {
            data: b"",
            stat: ephemeral(),
        },
    );
    assert!(events(&mut lock).is_empty());
    let path = format!("/locks/a/{kazoo}");
    lock.handle_watch(
        Instant::ZERO,
        WatchEvent {
            kind: WatchKind::NodeDeleted,
            path: &path,
        },
    );
    assert!(
        drain(&mut lock).is_empty(),
        "the lowest predecessor's deletion needs no new listing"
    );
    assert_eq!(events(&mut lock), vec![LockEvent::Acquired]);
}

/// The node ahead of `OWN` in [`behind_one`].
const AHEAD: &str = "ffffffffffffffffffffffffffffffff__lock__0000000003";

/// A waiter behind [`AHEAD`] alone, its own node read (watched); returns
/// the lock and the id of the predecessor's read, still unanswered.
fn behind_one() -> (Lock, RequestId) {
    behind(&[OWN, AHEAD], AHEAD)
}

/// A waiter whose listing of `names` puts `ahead` next before `OWN`, its
/// own node read (watched); returns the lock and the id of the
/// predecessor's read, still unanswered.
fn behind(names: &[&str], ahead: &str) -> (Lock, RequestId) {
    let mut lock: Lock = Lock::new("/locks/a").unwrap();
    lock.acquire(GUID).unwrap();
    let sent = drain(&mut lock);
    created(&mut lock, sent[0].0, OWN);
    children(&mut lock, sent[1].0, names);
    let sent = drain(&mut lock);
    assert_eq!(sent[0].1, format!("getData /locks/a/{OWN} watch=true"));
    assert_eq!(sent[1].1, format!("getData /locks/a/{ahead} watch=true"));
    let stat = ephemeral();
    lock.handle_reply(Instant::ZERO, sent[0].0, Reply::Data { data: b"", stat });
    (lock, sent[1].0)
}

/// The own node's data was written: its watch fires and the waiter reads
/// it again, setting it again. Returns that read's id.
fn own_data_changed(lock: &mut Lock) -> RequestId {
    let rearm = write_to_own_node(lock);
    assert_eq!(
        texts(&rearm),
        [format!("getData /locks/a/{OWN} watch=true")]
    );
    rearm[0].0
}

/// Someone wrote to the own node: its watch fires. Returns what the lock
/// sends then.
fn write_to_own_node(lock: &mut Lock) -> Vec<(RequestId, String)> {
    let own_path = format!("/locks/a/{OWN}");
    lock.handle_watch(
        Instant::ZERO,
        WatchEvent {
            kind: WatchKind::NodeDataChanged,
            path: &own_path,
        },
    );
    drain(lock)
}

/// A waiter back on `session`, another than its node's: it reads its own
/// node again and lists, in one flight (both returned, unanswered).
fn moved_to_session(lock: &mut Lock, session: i64) -> Vec<(RequestId, String)> {
    lock.handle_session(
        Instant::ZERO,
        SessionEvent::Connected {
            session_id: session,
        },
    );
    let sent = drain(lock);
    assert_eq!(
        texts(&sent),
        [
            format!("getData /locks/a/{OWN} watch=true"),
            "children /locks/a watch=false".to_string(),
        ]
    );
    sent
}

/// The own node's `read` answered `refusal`, which says nothing of whose
/// it is: returns the id of the `exists` that asks.
fn owner_asked(lock: &mut Lock, read: RequestId, refusal: ZkError) -> RequestId {
    lock.handle_reply(Instant::ZERO, read, Reply::Error(refusal));
    let ask = drain(lock);
    assert_eq!(texts(&ask), [format!("exists /locks/a/{OWN} watch=false")]);
    ask[0].0
}

/// The predecessor's data is larger than an embedded driver's receive
/// buffer (another library's contender, or anyone's `setData`): its read
/// is answered `ReplyTooLarge`. The server read the node, so it exists and
/// the watch is set, as with its data: the waiter keeps waiting, and its
/// deletion hands the lock over. Failing left an embedded waiter unable to
/// queue behind such a node.
#[test]
fn a_predecessor_whose_data_is_too_large_to_read_is_waited_for() {
    let (mut lock, read) = behind_one();
    lock.handle_reply(Instant::ZERO, read, Reply::Error(ZkError::ReplyTooLarge));
    assert!(events(&mut lock).is_empty());
    assert!(drain(&mut lock).is_empty());
    assert_eq!(lock.state(), LockState::Acquiring);
    let path = format!("/locks/a/{AHEAD}");
    lock.handle_watch(
        Instant::ZERO,
        WatchEvent {
            kind: WatchKind::NodeDeleted,
            path: &path,
        },
    );
    assert_eq!(events(&mut lock), vec![LockEvent::Acquired]);
}

/// A waiter whose own node's watch fired (its data was written: a
/// revocation request) and is being set again when its predecessor goes:
/// the predecessor's deletion says nothing about the own node, which an
/// operator may have deleted meanwhile, unwatched. `Acquired` waits for the
/// own node's read; the sim once had a reader report it without its node,
/// beside a writer.
#[test]
fn a_waiter_whose_own_watch_is_being_set_again_acquires_only_once_its_node_is_read() {
    let stat = ephemeral();
    for own_still_there in [true, false] {
        let (mut lock, watch_pred) = behind_one();
        let rearm = own_data_changed(&mut lock);
        // The predecessor's read, sent before, answers first: it is gone.
        lock.handle_reply(Instant::ZERO, watch_pred, Reply::Error(ZkError::NoNode));
        assert!(
            events(&mut lock).is_empty(),
            "not before the own node is read"
        );
        assert_eq!(lock.state(), LockState::Acquiring);
        if own_still_there {
            lock.handle_reply(Instant::ZERO, rearm, Reply::Data { data: b"", stat });
            assert_eq!(events(&mut lock), vec![LockEvent::Acquired]);
        } else {
            lock.handle_reply(Instant::ZERO, rearm, Reply::Error(ZkError::NoNode));
            assert!(
                !events(&mut lock).contains(&LockEvent::Acquired),
                "acquired without its node"
            );
            assert_ne!(lock.state(), LockState::Held);
            // It queues again at the back, with a new node.
            let sent = drain(&mut lock);
            assert!(sent[0].1.starts_with("create /locks/a/"), "{sent:?}");
        }
    }
}

/// As above, but the own node's read is refused (an ACL set by someone
/// else, or chosen without read): the refused read set no watch, and no
/// watch can tell this client of a node it may not read (ZooKeeper filters
/// notifications by the node's ACL, CVE-2024-23944), so the node's
/// deletion could go unheard and the waiter hold without it. It gives up:
/// its node deleted, the attempt fails with the refusal.
#[test]
fn a_confirming_waiter_whose_own_read_is_refused_gives_up() {
    let (mut lock, watch_pred) = behind_one();
    let rearm = own_data_changed(&mut lock);
    lock.handle_reply(Instant::ZERO, watch_pred, Reply::Error(ZkError::NoNode));
    assert!(events(&mut lock).is_empty());
    lock.handle_reply(Instant::ZERO, rearm, Reply::Error(ZkError::NoAuth));
    let delete = drain(&mut lock);
    assert_eq!(texts(&delete), [format!("delete /locks/a/{OWN}")]);
    assert!(events(&mut lock).is_empty(), "not before the delete");
    assert_ne!(lock.state(), LockState::Held);
    lock.handle_reply(Instant::ZERO, delete[0].0, Reply::Deleted);
    let failed = LockEvent::Failed(herdless_core::Error::Zk(ZkError::NoAuth));
    assert_eq!(events(&mut lock), [failed]);
    assert_eq!(lock.state(), LockState::Idle);
}

/// The `exists` that asks the owner refused (no server refuses one, but a
/// transport may answer anything): the attempt fails with that error. It
/// is no `Lost`, which only a holder hears.
#[test]
fn a_waiter_whose_owner_question_is_refused_fails_with_the_refusal() {
    let (mut lock, _) = behind_one();
    let rearm = own_data_changed(&mut lock);
    let ask = owner_asked(&mut lock, rearm, ZkError::ReplyTooLarge);
    let refusal = ZkError::Unimplemented;
    lock.handle_reply(Instant::ZERO, ask, Reply::Error(refusal));
    let delete = drain(&mut lock);
    assert_eq!(texts(&delete), [format!("delete /locks/a/{OWN}")]);
    lock.handle_reply(Instant::ZERO, delete[0].0, Reply::Deleted);
    let failed = LockEvent::Failed(herdless_core::Error::Zk(refusal));
    assert_eq!(events(&mut lock), [failed]);
}

/// CURATOR-696 with the own node's data over an embedded driver's receive
/// buffer (anyone can `setData` it): a waiter back on another session
/// reads its node again, and that read, answered `ReplyTooLarge`, cannot
/// say whose the node is. An `exists` asks before the lock is held, and
/// the node is the old session's, which the server is about to delete:
/// the attempt ends as an expiry ends it. Taking the listing alone held
/// the lock on that node (found by the simulator's answers too large).
#[test]
fn a_waiter_whose_own_node_is_too_large_to_read_learns_its_owner_before_holding() {
    let own_path = format!("/locks/a/{OWN}");
    let (mut lock, _) = behind_one();
    // Back on session 2; the own node, read above, is session 1's.
    let sent = moved_to_session(&mut lock, 2);
    let ask = owner_asked(&mut lock, sent[0].0, ZkError::ReplyTooLarge);
    // The one ahead has gone: first in line, but not held yet.
    children(&mut lock, sent[1].0, &[OWN]);
    assert!(events(&mut lock).is_empty());
    assert!(!lock.is_held());
    assert!(drain(&mut lock).is_empty());
    let stat = ephemeral();
    lock.handle_reply(Instant::ZERO, ask, Reply::Exists { stat });
    assert!(!lock.is_held());
    let delete = drain(&mut lock);
    assert_eq!(texts(&delete), [format!("delete {own_path}")]);
    lock.handle_reply(Instant::ZERO, delete[0].0, Reply::Deleted);
    assert_eq!(
        events(&mut lock),
        vec![LockEvent::Failed(herdless_core::Error::SessionEnded)]
    );
}

/// A reconnect the driver never reported as a loss (`Connected` while
/// connected): the watches set again by it fire in no particular order, so
/// the predecessor's deletion can come before the own node's (an operator
/// deleted both while the connection was down). A fresh listing decides;
/// the sim once had a writer report `Acquired` on the first notification.
#[test]
fn after_an_unreported_reconnect_a_waiter_lists_before_it_believes_a_notification() {
    let pred = format!("/locks/a/{AHEAD}");
    let own_path = format!("/locks/a/{OWN}");
    let (mut lock, watch_pred) = behind_one();
    let stat = ephemeral();
    lock.handle_reply(Instant::ZERO, watch_pred, Reply::Data { data: b"", stat });
    assert_eq!(lock.predecessor(), Some(pred.as_str()));
    lock.handle_session(Instant::ZERO, SessionEvent::Connected { session_id: 1 });
    let relist = drain(&mut lock);
    assert_eq!(relist.len(), 1, "{relist:?}");
    assert_eq!(relist[0].1, "children /locks/a watch=false");
    lock.handle_watch(
        Instant::ZERO,
        WatchEvent {
            kind: WatchKind::NodeDeleted,
            path: &pred,
        },
    );
    assert!(
        events(&mut lock).is_empty(),
        "not on the notification alone"
    );
    lock.handle_watch(
        Instant::ZERO,
        WatchEvent {
            kind: WatchKind::NodeDeleted,
            path: &own_path,
        },
    );
    assert!(!events(&mut lock).contains(&LockEvent::Acquired));
    assert_ne!(lock.state(), LockState::Held);
    // A holder is not disturbed by such a `Connected`.
    let mut lock = held();
    drain(&mut lock);
    lock.handle_session(Instant::ZERO, SessionEvent::Connected { session_id: 1 });
    assert!(drain(&mut lock).is_empty());
    assert!(lock.is_held());
}

#[test]
fn waiter_further_back_lists_again_and_vanished_predecessor_leaves_no_watch() {
    let mut lock: Lock = Lock::new("/locks/a").unwrap();
    lock.acquire(GUID).unwrap();
    let sent = drain(&mut lock);
    created(&mut lock, sent[0].0, OWN);
    children(
        &mut lock,
        sent[1].0,
        &["a-lock-0000000001", "b-lock-0000000004", OWN],
    );
    let sent = drain(&mut lock);
    assert_eq!(sent[0].1, format!("getData /locks/a/{OWN} watch=true"));
    let sent = &sent[1..];
    assert_eq!(sent[0].1, "getData /locks/a/b-lock-0000000004 watch=true");
    // Gone before the watch was set: getData registers nothing, list again.
    lock.handle_reply(Instant::ZERO, sent[0].0, Reply::Error(ZkError::NoNode));
    let sent = drain(&mut lock);
    assert_eq!(sent[0].1, "children /locks/a watch=false");
    children(&mut lock, sent[0].0, &["a-lock-0000000001", OWN]);
    let sent = drain(&mut lock);
    assert_eq!(sent[0].1, "getData /locks/a/a-lock-0000000001 watch=true");
}

#[test]
fn lost_create_reply_adopts_the_node_found_by_guid() {
    let mut lock: Lock = Lock::new("/locks/a").unwrap();
    lock.acquire(GUID).unwrap();
    let sent = drain(&mut lock);
    lock.handle_session(Instant::ZERO, SessionEvent::Suspended);
    // Late answers from the lost connection are ignored.
    created(&mut lock, sent[0].0, OWN);
    assert!(lock.own_node().is_none());
    assert!(
        drain(&mut lock).is_empty(),
        "nothing is sent while disconnected"
    );
    lock.handle_session(Instant::ZERO, SessionEvent::Connected { session_id: 1 });
    let sent = drain(&mut lock);
    // No second create before looking, and the search goes behind a no-op
    // write: the server now may not have applied the lost create yet.
    assert_eq!(texts(&sent), [CATCH_UP, "children /locks/a watch=false"]);
    lock.handle_reply(Instant::ZERO, sent[0].0, Reply::Checked);
    children(&mut lock, sent[1].0, &["x-lock-0000000007", OWN]);
    assert_eq!(lock.own_node(), Some(OWN));
    // The listing searched was read before the node was known: a new one
    // says where it stands (the same pass cannot, in parts).
    let sent = drain(&mut lock);
    let own_path = format!("/locks/a/{OWN}");
    assert_eq!(
        texts(&sent),
        [
            format!("getData {own_path} watch=true"),
            "children /locks/a watch=false".to_string(),
        ]
    );
    children(&mut lock, sent[1].0, &["x-lock-0000000007", OWN]);
    assert_eq!(events(&mut lock), vec![LockEvent::Acquired]);
}

/// A create whose answer (the node's path) did not fit the embedded
/// transport's receive buffer was applied: the node is found by GUID and
/// deleted before the attempt fails (the notifications about the node
/// would not fit either). Failing at once left the node ahead of every
/// contender for as long as the session lived (6 of 6 for a tester).
#[test]
fn a_create_answer_too_large_to_read_deletes_the_node_then_fails() {
    let mut lock: Lock = Lock::new("/locks/a").unwrap();
    lock.acquire(GUID).unwrap();
    let sent = drain(&mut lock);
    lock.handle_reply(
        Instant::ZERO,
        sent[0].0,
        Reply::Error(ZkError::ReplyTooLarge),
    );
    children(&mut lock, sent[1].0, &[OWN]);
    assert!(events(&mut lock).is_empty(), "not before the node is gone");
    let sent = drain(&mut lock);
    assert_eq!(texts(&sent), [CATCH_UP, "children /locks/a watch=false"]);
    lock.handle_reply(Instant::ZERO, sent[0].0, Reply::Checked);
    children(&mut lock, sent[1].0, &["x-lock-0000000007", OWN]);
    let sent = drain(&mut lock);
    assert_eq!(texts(&sent), [format!("delete /locks/a/{OWN}")]);
    assert!(events(&mut lock).is_empty(), "not before the node is gone");
    lock.handle_reply(Instant::ZERO, sent[0].0, Reply::Deleted);
    assert_eq!(
        events(&mut lock),
        vec![LockEvent::Failed(herdless_core::Error::Zk(
            ZkError::ReplyTooLarge
        ))]
    );
    assert_eq!(lock.state(), LockState::Idle);
}

#[test]
fn connection_loss_reply_on_release_retries_the_delete_after_reconnect() {
    let mut lock = held();
    lock.release().unwrap();
    let sent = drain(&mut lock);
    lock.handle_reply(
        Instant::ZERO,
        sent[0].0,
        Reply::Error(ZkError::ConnectionLoss),
    );
    assert!(events(&mut lock).is_empty(), "not released until confirmed");
    lock.handle_session(Instant::ZERO, SessionEvent::Connected { session_id: 1 });
    let sent = drain(&mut lock);
    assert_eq!(sent[0].1, format!("delete /locks/a/{OWN}"));
    lock.handle_reply(Instant::ZERO, sent[0].0, Reply::Error(ZkError::NoNode));
    assert_eq!(events(&mut lock), vec![LockEvent::Released]);
}

#[test]
fn holder_hears_suspended_then_lost_on_expiry() {
    let mut lock = held();
    lock.handle_session(Instant::ZERO, SessionEvent::Suspended);
    assert_eq!(events(&mut lock), vec![LockEvent::Suspended]);
    assert!(!lock.is_held());
    lock.handle_session(Instant::ZERO, SessionEvent::Expired);
    assert_eq!(events(&mut lock), vec![LockEvent::Lost]);
    assert_eq!(lock.state(), LockState::Idle);
}

/// An `acquire` between an expiry and the transport's next session (both
/// transports renew one) waits for that session, as after a disconnect;
/// after a close, which no session follows, it is refused.
#[test]
fn acquire_after_an_expiry_waits_for_the_next_session_and_after_a_close_is_refused() {
    let mut lock = held();
    lock.handle_session(Instant::ZERO, SessionEvent::Expired);
    assert_eq!(events(&mut lock), vec![LockEvent::Lost]);
    lock.acquire(GUID).unwrap();
    assert!(drain(&mut lock).is_empty(), "nothing without a session");
    assert_eq!(lock.state(), LockState::Acquiring);
    lock.handle_session(Instant::ZERO, SessionEvent::Connected { session_id: 2 });
    let sent = drain(&mut lock);
    assert_eq!(
        sent.len(),
        2,
        "create and listing on the new session: {sent:?}"
    );
    assert!(sent[0].1.starts_with("create /locks/a/"), "{sent:?}");
    created(&mut lock, sent[0].0, OWN);
    children(&mut lock, sent[1].0, &[OWN]);
    assert_eq!(events(&mut lock), vec![LockEvent::Acquired]);

    lock.handle_session(Instant::ZERO, SessionEvent::Closed);
    assert_eq!(events(&mut lock), vec![LockEvent::Lost]);
    assert_eq!(
        lock.acquire(GUID),
        Err(herdless_core::lock::Error::SessionEnded)
    );
    lock.handle_session(Instant::ZERO, SessionEvent::Expired);
    assert_eq!(
        lock.try_acquire(GUID),
        Err(herdless_core::lock::Error::SessionEnded),
        "a close is not undone by a later expiry"
    );
}

/// A waiter whose session ends fails with `SessionEnded`, as every other
/// recipe reports it, however the end is heard: an expiry or a close from
/// the transport, or a request answered `SessionExpired`. (It once carried
/// `Zk(SessionExpired)`, a close included.) After an expiry it may start
/// again and waits for the next session.
#[test]
fn a_waiter_whose_session_ends_fails_with_session_ended() {
    let ended = [LockEvent::Failed(herdless_core::lock::Error::SessionEnded)];
    for event in [SessionEvent::Expired, SessionEvent::Closed] {
        let (mut lock, _) = behind_one();
        lock.handle_session(Instant::ZERO, event);
        assert_eq!(events(&mut lock), ended, "{event:?}");
        assert_eq!(lock.state(), LockState::Idle);
    }
    let (mut lock, watch_pred) = behind_one();
    lock.handle_reply(
        Instant::ZERO,
        watch_pred,
        Reply::Error(ZkError::SessionExpired),
    );
    assert_eq!(
        events(&mut lock),
        ended,
        "a request answered SessionExpired"
    );
    lock.acquire(GUID).unwrap();
    assert!(drain(&mut lock).is_empty(), "nothing without a session");
    lock.handle_session(Instant::ZERO, SessionEvent::Connected { session_id: 2 });
    assert_eq!(drain(&mut lock).len(), 2, "create and listing again");
}

#[test]
fn reconnect_while_holding_confirms_the_node_before_resuming() {
    let mut lock = held();
    lock.handle_session(Instant::ZERO, SessionEvent::Suspended);
    lock.handle_session(Instant::ZERO, SessionEvent::Connected { session_id: 1 });
    let sent = drain(&mut lock);
    assert_eq!(sent[0].1, format!("exists /locks/a/{OWN} watch=false"));
    lock.handle_reply(
        Instant::ZERO,
        sent[0].0,
        Reply::Exists { stat: ephemeral() },
    );
    assert_eq!(
        events(&mut lock),
        vec![LockEvent::Suspended, LockEvent::Resumed]
    );
    assert!(lock.is_held());
}

#[test]
fn reconnect_finding_the_node_gone_reports_lost() {
    let mut lock = held();
    lock.handle_session(Instant::ZERO, SessionEvent::Suspended);
    lock.handle_session(Instant::ZERO, SessionEvent::Connected { session_id: 1 });
    let sent = drain(&mut lock);
    lock.handle_reply(Instant::ZERO, sent[0].0, Reply::Error(ZkError::NoNode));
    assert_eq!(
        events(&mut lock),
        vec![LockEvent::Suspended, LockEvent::Lost]
    );
    assert_eq!(lock.state(), LockState::Idle);
}

#[test]
fn try_acquire_on_a_held_lock_removes_its_node_before_answering() {
    let mut lock: Lock = Lock::new("/locks/a").unwrap();
    lock.try_acquire(GUID).unwrap();
    let sent = drain(&mut lock);
    created(&mut lock, sent[0].0, OWN);
    children(&mut lock, sent[1].0, &["a-lock-0000000001", OWN]);
    let sent = drain(&mut lock);
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].1, format!("delete /locks/a/{OWN}"));
    assert!(events(&mut lock).is_empty());
    lock.handle_reply(Instant::ZERO, sent[0].0, Reply::Deleted);
    assert_eq!(
        events(&mut lock),
        vec![LockEvent::NotAcquired(GiveUp::Busy)]
    );
}

#[test]
fn deadline_gives_up_and_deletes() {
    let mut lock: Lock = Lock::new("/locks/a").unwrap();
    lock.acquire_until(GUID, Instant::from_millis(500)).unwrap();
    assert_eq!(lock.poll_timeout(), Some(Instant::from_millis(500)));
    let sent = drain(&mut lock);
    created(&mut lock, sent[0].0, OWN);
    children(&mut lock, sent[1].0, &["a-lock-0000000001", OWN]);
    drain(&mut lock);
    lock.handle_timeout(Instant::from_millis(499));
    assert!(drain(&mut lock).is_empty());
    lock.handle_timeout(Instant::from_millis(500));
    let sent = drain(&mut lock);
    assert_eq!(sent[0].1, format!("delete /locks/a/{OWN}"));
    lock.handle_reply(Instant::ZERO, sent[0].0, Reply::Deleted);
    assert_eq!(
        events(&mut lock),
        vec![LockEvent::NotAcquired(GiveUp::TimedOut)]
    );
    assert_eq!(lock.poll_timeout(), None);
}

/// Curator and Kazoo look at the listing that follows their create however
/// long it took: a deadline shorter than the round trips still takes a
/// free lock.
#[test]
fn a_deadline_passed_during_the_create_lets_its_listing_take_a_free_lock() {
    let mut lock: Lock = Lock::new("/locks/a").unwrap();
    lock.acquire_until(GUID, Instant::from_millis(1)).unwrap();
    let sent = drain(&mut lock);
    lock.handle_timeout(Instant::from_millis(1));
    assert!(
        events(&mut lock).is_empty(),
        "the listing in flight decides"
    );
    assert_eq!(lock.poll_timeout(), None, "no timer while it is awaited");
    created(&mut lock, sent[0].0, OWN);
    drain(&mut lock);
    children(&mut lock, sent[1].0, &[OWN]);
    assert_eq!(events(&mut lock), vec![LockEvent::Acquired]);
    assert_eq!(lock.poll_timeout(), None);
}

#[test]
fn a_deadline_passed_during_the_create_gives_up_when_the_listing_shows_a_holder() {
    let mut lock: Lock = Lock::new("/locks/a").unwrap();
    lock.acquire_until(GUID, Instant::from_millis(1)).unwrap();
    let sent = drain(&mut lock);
    created(&mut lock, sent[0].0, OWN);
    drain(&mut lock);
    lock.handle_timeout(Instant::from_millis(2));
    children(&mut lock, sent[1].0, &["a-lock-0000000001", OWN]);
    let sent = drain(&mut lock);
    assert_eq!(
        texts(&sent),
        [format!("delete /locks/a/{OWN}")],
        "no watch on the holder: it gives up at once"
    );
    lock.handle_reply(Instant::ZERO, sent[0].0, Reply::Deleted);
    assert_eq!(
        events(&mut lock),
        vec![LockEvent::NotAcquired(GiveUp::TimedOut)]
    );
}

/// A listing lost with the connection will not decide: a deadline that
/// passed while it was in flight gives up at once, as if nothing were.
#[test]
fn a_deadline_passed_during_the_create_gives_up_when_the_connection_goes() {
    let mut lock: Lock = Lock::new("/locks/a").unwrap();
    lock.acquire_until(GUID, Instant::from_millis(1)).unwrap();
    let sent = drain(&mut lock);
    created(&mut lock, sent[0].0, OWN);
    drain(&mut lock);
    lock.handle_timeout(Instant::from_millis(1));
    assert_eq!(lock.poll_timeout(), None);
    lock.handle_session(Instant::from_millis(2), SessionEvent::Suspended);
    let due = lock.poll_timeout().expect("due once the listing is lost");
    assert!(due <= Instant::from_millis(2));
    lock.handle_timeout(Instant::from_millis(2));
    assert_eq!(lock.poll_timeout(), None);
    assert_eq!(lock.state(), LockState::Releasing);
    lock.handle_session(
        Instant::from_millis(3),
        SessionEvent::Connected { session_id: 1 },
    );
    let sent = drain(&mut lock);
    assert_eq!(texts(&sent), [format!("delete /locks/a/{OWN}")]);
    lock.handle_reply(Instant::ZERO, sent[0].0, Reply::Deleted);
    assert_eq!(
        events(&mut lock),
        vec![LockEvent::NotAcquired(GiveUp::TimedOut)]
    );
}

#[test]
fn cancel_during_create_waits_for_the_name_then_deletes() {
    let mut lock: Lock = Lock::new("/locks/a").unwrap();
    lock.acquire(GUID).unwrap();
    let sent = drain(&mut lock);
    lock.cancel().unwrap();
    assert!(drain(&mut lock).is_empty());
    created(&mut lock, sent[0].0, OWN);
    let del = drain(&mut lock);
    assert_eq!(del[0].1, format!("delete /locks/a/{OWN}"));
    children(&mut lock, sent[1].0, &[OWN]);
    assert!(
        events(&mut lock).is_empty(),
        "the listing after cancel is ignored"
    );
    lock.handle_reply(Instant::ZERO, del[0].0, Reply::Deleted);
    assert_eq!(
        events(&mut lock),
        vec![LockEvent::NotAcquired(GiveUp::Cancelled)]
    );
}

#[test]
fn cancel_while_suspended_deletes_after_reconnect() {
    let mut lock: Lock = Lock::new("/locks/a").unwrap();
    lock.acquire(GUID).unwrap();
    let sent = drain(&mut lock);
    created(&mut lock, sent[0].0, OWN);
    children(&mut lock, sent[1].0, &["a-lock-0000000001", OWN]);
    drain(&mut lock);
    lock.handle_session(Instant::ZERO, SessionEvent::Suspended);
    lock.cancel().unwrap();
    assert!(drain(&mut lock).is_empty());
    assert!(
        events(&mut lock).is_empty(),
        "not reported before the node is gone"
    );
    lock.handle_session(Instant::ZERO, SessionEvent::Connected { session_id: 1 });
    let sent = drain(&mut lock);
    assert_eq!(sent[0].1, format!("delete /locks/a/{OWN}"));
    lock.handle_reply(Instant::ZERO, sent[0].0, Reply::Deleted);
    assert_eq!(
        events(&mut lock),
        vec![LockEvent::NotAcquired(GiveUp::Cancelled)]
    );
}

#[test]
fn missing_directory_is_created_with_its_ancestors_pipelined() {
    let mut lock: Lock = Lock::new("/locks/a").unwrap();
    lock.acquire(GUID).unwrap();
    let sent = drain(&mut lock);
    lock.handle_reply(Instant::ZERO, sent[0].0, Reply::Error(ZkError::NoNode));
    lock.handle_reply(Instant::ZERO, sent[1].0, Reply::Error(ZkError::NoNode));
    let sent = drain(&mut lock);
    let texts: Vec<_> = sent.iter().map(|s| s.1.as_str()).collect();
    assert_eq!(texts.len(), 4, "{texts:?}");
    assert_eq!(texts[0], "create /locks Persistent");
    assert_eq!(texts[1], "create /locks/a Persistent");
    assert!(texts[2].starts_with("create /locks/a/11111111-"));
    assert_eq!(texts[3], "children /locks/a watch=false");
    lock.handle_reply(Instant::ZERO, sent[0].0, Reply::Error(ZkError::NodeExists));
    lock.handle_reply(
        Instant::ZERO,
        sent[1].0,
        Reply::Created { path: "/locks/a" },
    );
    created(&mut lock, sent[2].0, OWN);
    children(&mut lock, sent[3].0, &[OWN]);
    assert_eq!(events(&mut lock), vec![LockEvent::Acquired]);
}

#[test]
fn refuses_bad_paths_and_too_long_names() {
    assert!(Lock::<128>::new("locks").is_err());
    assert!(Lock::<128>::new("/locks/").is_err());
    assert!(Lock::<128>::new("/").is_err());
    assert!(matches!(
        Lock::<40>::new("/locks/a"),
        Err(herdless_core::lock::Error::Path(
            herdless_core::path::PathError::TooLong { .. }
        ))
    ));
}

#[test]
fn unexpected_reply_shapes_fail_cleanly_instead_of_panicking() {
    let mut lock: Lock = Lock::new("/locks/a").unwrap();
    lock.acquire(GUID).unwrap();
    let sent = drain(&mut lock);
    // A create answered with a name that has no sequence suffix.
    lock.handle_reply(
        Instant::ZERO,
        sent[0].0,
        Reply::Created { path: "/locks/a/x" },
    );
    lock.handle_reply(Instant::ZERO, sent[1].0, Reply::Deleted);
    // Recovery looks for the node by GUID, finds none, and reports.
    let sent = drain(&mut lock);
    assert_eq!(texts(&sent), [CATCH_UP, "children /locks/a watch=false"]);
    children(&mut lock, sent[1].0, &[]);
    assert_eq!(
        events(&mut lock),
        vec![LockEvent::Failed(herdless_core::lock::Error::BadReply)]
    );
    assert_eq!(lock.state(), LockState::Idle);
}

#[test]
fn lock_state_machine_size_is_bounded_by_its_path_buffers() {
    let size = std::mem::size_of::<Lock>();
    println!(
        "size_of::<Lock<128>>() = {size} bytes; Lock<64> = {} bytes",
        std::mem::size_of::<Lock<64>>()
    );
    // Four path buffers of N bytes plus small fixed state: no hidden growth.
    assert!(size < 4 * 128 + 512, "{size}");
}

/// What a lock was made with and where it stands, as an application (or
/// herdless-std) reads it.
#[test]
fn accessors_report_what_the_lock_was_made_with() {
    use herdless_core::lock::{Contender, Error};
    use herdless_core::naming::Flavour;
    let plain: Lock = Lock::with_contender("/locks/x", Contender::Reader, Flavour::Kazoo).unwrap();
    assert_eq!(plain.dir(), "/locks/x");
    assert_eq!(plain.flavour(), Flavour::Kazoo);
    assert_eq!(plain.contender(), Contender::Reader);
    assert!(!plain.is_revocable());
    let revocable: Lock = Lock::new("/locks/x").unwrap().revocable();
    assert!(revocable.is_revocable());
    let mut lock = held();
    assert_eq!(lock.own_node(), Some(OWN));
    assert_eq!(lock.own_sequence().map(|s| s.value()), Some(5));
    let path: heapless::String<128> = lock.own_path().unwrap().unwrap();
    assert_eq!(path.as_str(), format!("/locks/a/{OWN}"));
    assert_eq!(lock.predecessor(), None);
    lock.release().unwrap();
    let texts = [
        (Error::Zk(ZkError::NoAuth), "ZooKeeper error"),
        (Error::BadReply, "malformed reply"),
        (Error::SessionEnded, "session has ended"),
        (Error::InvalidState, "current state"),
    ];
    for (e, words) in texts {
        assert!(e.to_string().contains(words), "{e:?}: {e}");
    }
}

/// Suspended is a held lock whose connection is gone, nothing else.
#[test]
fn is_suspended_only_while_held_and_disconnected() {
    let mut lock = held();
    let own_read = drain(&mut lock);
    assert!(!lock.is_suspended() && lock.is_held());
    lock.handle_session(Instant::ZERO, SessionEvent::Suspended);
    assert_eq!(events(&mut lock), vec![LockEvent::Suspended]);
    assert!(lock.is_suspended() && !lock.is_held());
    lock.handle_session(Instant::ZERO, SessionEvent::Connected { session_id: 1 });
    // Still in doubt until the own node is confirmed.
    let sent = drain(&mut lock);
    assert!(lock.is_suspended(), "{own_read:?} {sent:?}");
    let verify = sent.iter().find(|s| s.1.starts_with("exists")).unwrap().0;
    lock.handle_reply(Instant::ZERO, verify, Reply::Exists { stat: ephemeral() });
    assert_eq!(events(&mut lock), vec![LockEvent::Resumed]);
    assert!(!lock.is_suspended() && lock.is_held());

    // A waiter whose connection drops is not a suspended holder.
    let mut waiter: Lock = Lock::new("/locks/a").unwrap();
    waiter.acquire(GUID).unwrap();
    drain(&mut waiter);
    waiter.handle_session(Instant::ZERO, SessionEvent::Suspended);
    assert!(!waiter.is_suspended() && !waiter.is_held());
    let idle: Lock = Lock::new("/locks/a").unwrap();
    assert!(!idle.is_suspended());
}

/// The own node's path must fit the lock's capacity, with room for the
/// widest suffix the server writes (eleven characters): a lock whose node
/// could never fit is refused when made, not at its first acquire.
#[test]
fn an_own_path_that_would_not_fit_is_refused_when_the_lock_is_made() {
    use herdless_core::lock::Error;
    use herdless_core::path::PathError;
    // "/locks/aa" (9) + "/" + a 36-character GUID + "-lock-" + 11.
    let needed = 9 + 1 + 36 + 6 + 11;
    let mut tight: Lock<63> = Lock::new("/locks/aa").unwrap();
    assert!(tight.acquire(GUID).is_ok());
    assert_eq!(
        Lock::<62>::new("/locks/aa").err(),
        Some(Error::Path(PathError::TooLong {
            needed,
            capacity: 62
        }))
    );
    assert_eq!(needed, 63);
    // A reader's and a writer's names are as long ("-read-", "-write-"
    // with one more character).
    assert!(Lock::<62>::reader("/locks/aa").is_err());
    assert!(Lock::<63>::reader("/locks/aa").is_ok());
    assert!(Lock::<63>::writer("/locks/aa").is_err());
    assert!(Lock::<64>::writer("/locks/aa").is_ok());
}

/// A release whose delete is refused (an ACL set by someone else) fails
/// once instead of retrying for ever.
#[test]
fn a_refused_delete_fails_the_release_once() {
    let mut lock = held();
    drain(&mut lock);
    lock.release().unwrap();
    let sent = drain(&mut lock);
    assert_eq!(sent[0].1, format!("delete /locks/a/{OWN}"));
    lock.handle_reply(Instant::ZERO, sent[0].0, Reply::Error(ZkError::NoAuth));
    assert_eq!(
        events(&mut lock),
        vec![LockEvent::Failed(herdless_core::lock::Error::Zk(
            ZkError::NoAuth
        ))]
    );
    assert!(drain(&mut lock).is_empty(), "no delete sent again");
    assert_eq!(lock.state(), LockState::Idle);
}

/// After a reconnect, a holder that cannot confirm its node (the check is
/// refused) treats the lock as lost and cleans up; so does one whose read
/// of its node is refused, as it could no longer hear of the node's
/// deletion. Either way it hears `Lost` (not the refusal, which only an
/// attempt hears) once the node is gone: it stopped its work when it was
/// suspended.
#[test]
fn a_refused_check_or_read_after_a_reconnect_loses_the_lock() {
    for refused in ["exists", "getData"] {
        let mut lock = held();
        drain(&mut lock);
        lock.handle_session(Instant::ZERO, SessionEvent::Suspended);
        lock.handle_session(Instant::ZERO, SessionEvent::Connected { session_id: 1 });
        assert_eq!(events(&mut lock), vec![LockEvent::Suspended]);
        let sent = drain(&mut lock);
        let verify = sent.iter().find(|s| s.1.starts_with(refused)).unwrap().0;
        lock.handle_reply(Instant::ZERO, verify, Reply::Error(ZkError::NoAuth));
        assert!(events(&mut lock).is_empty(), "{refused}: said when gone");
        let sent = drain(&mut lock);
        let delete = sent.iter().find(|s| s.1.starts_with("delete")).unwrap().0;
        lock.handle_reply(Instant::ZERO, delete, Reply::Deleted);
        assert_eq!(events(&mut lock), vec![LockEvent::Lost], "{refused}");
    }
}

/// A holder whose own node's read is refused (an ACL without read for
/// this client) can no longer be told of the node's deletion, which would
/// let the next contender in beside it: it gives the lock up. `Lost` comes
/// at once, while the node still keeps the next contender out, and
/// nothing after the delete, whatever its answer (`end`). A read over an
/// embedded driver's receive buffer did set its watch, and the holder
/// keeps the lock.
#[test]
fn a_holder_whose_own_read_is_refused_gives_the_lock_up() {
    let ends = [
        Reply::Deleted,
        Reply::Error(ZkError::NoNode),
        Reply::Error(ZkError::NoAuth),
    ];
    for end in ends {
        let mut lock = held();
        let own_read = drain(&mut lock);
        let refused = Reply::Error(ZkError::NoAuth);
        lock.handle_reply(Instant::ZERO, own_read[0].0, refused);
        assert_eq!(
            events(&mut lock),
            vec![LockEvent::Lost],
            "before the delete"
        );
        assert!(!lock.is_held());
        let sent = drain(&mut lock);
        assert_eq!(texts(&sent), [format!("delete /locks/a/{OWN}")]);
        let what = format!("{end:?}");
        lock.handle_reply(Instant::ZERO, sent[0].0, end);
        assert!(events(&mut lock).is_empty(), "{what}: said already");
        assert_eq!(lock.state(), LockState::Idle);
    }
    // Over the buffer: the server read the node and set the watch.
    let mut lock = held();
    let own_read = drain(&mut lock);
    let too_large = Reply::Error(ZkError::ReplyTooLarge);
    lock.handle_reply(Instant::ZERO, own_read[0].0, too_large);
    assert!(drain(&mut lock).is_empty());
    assert!(events(&mut lock).is_empty());
    assert!(lock.is_held());
}

/// A holder that gave the lock up when its own read was refused, and whose
/// session ends before the delete is answered, says nothing more: `Lost`
/// was its last word.
#[test]
fn a_holder_that_gave_up_on_a_refused_read_is_quiet_when_its_session_ends() {
    let mut lock = held();
    let own_read = drain(&mut lock);
    assert_eq!(
        texts(&own_read),
        [format!("getData /locks/a/{OWN} watch=true")]
    );
    lock.handle_reply(Instant::ZERO, own_read[0].0, Reply::Error(ZkError::NoAuth));
    assert_eq!(events(&mut lock), vec![LockEvent::Lost]);
    lock.handle_session(Instant::ZERO, SessionEvent::Expired);
    assert!(events(&mut lock).is_empty());
    assert_eq!(lock.state(), LockState::Idle);
}

/// An acquisition whose directory is missing, for at most `rounds` rounds:
/// the own node's create is refused `NoNode` every time, and each ancestor's
/// create is answered `ancestors` (after a connection loss, the session is
/// back before the next round). The own node's creates, and the events.
fn missing_directory(ancestors: ZkError, rounds: usize) -> (usize, Vec<LockEvent>) {
    let mut lock: Lock = Lock::new("/locks/a").unwrap();
    lock.acquire(GUID).unwrap();
    let mut creates = 0;
    let mut outcome = Vec::new();
    for _ in 0..rounds {
        let sent = drain(&mut lock);
        if sent.is_empty() {
            break;
        }
        for (id, text) in sent {
            let reply = if text.starts_with("create /locks/a/") {
                creates += 1;
                Reply::Error(ZkError::NoNode)
            } else if text.starts_with("create") {
                Reply::Error(ancestors)
            } else {
                Reply::Error(ZkError::NoNode)
            };
            lock.handle_reply(Instant::ZERO, id, reply);
        }
        if ancestors.is_connection_loss() {
            lock.handle_session(Instant::ZERO, SessionEvent::Connected { session_id: 1 });
        }
        outcome.extend(events(&mut lock));
    }
    (creates, outcome)
}

/// A directory that keeps vanishing is created again eight times, then the
/// acquisition fails instead of looping.
#[test]
fn a_directory_that_keeps_vanishing_is_retried_eight_times() {
    let (creates, outcome) = missing_directory(ZkError::NodeExists, 100);
    assert_eq!(creates, 9, "the first attempt and eight retries");
    assert_eq!(
        outcome,
        vec![LockEvent::Failed(herdless_core::lock::Error::Zk(
            ZkError::NoNode
        ))]
    );
}

/// Ancestors whose creates are lost with the connection, time and again,
/// say nothing of a deleter: the directory may just not be made yet. The
/// lock makes them again after every loss, past the eight retries a
/// vanishing directory gets, and never fails on a flaky connection.
#[test]
fn ancestors_lost_with_the_connection_are_made_again_every_time() {
    let (creates, outcome) = missing_directory(ZkError::ConnectionLoss, 40);
    assert!(creates > 9, "{creates} creates");
    assert!(outcome.is_empty(), "{outcome:?}");
}

/// The Debug form names the directory and where the lock stands.
#[test]
fn debug_shows_the_directory_and_state() {
    let lock = held();
    let text = format!("{lock:?}");
    assert!(text.contains("/locks/a") && text.contains("Held"), "{text}");
    assert!(text.contains(OWN), "{text}");
}

/// A create whose answer was lost is looked for by GUID, and once found
/// nothing is in doubt any more: a waiter whose node an operator then
/// deletes, and whose connection drops before its new create leaves,
/// creates again on reconnecting (no create of it is in flight or lost),
/// without first listing to look for one.
#[test]
fn a_node_found_by_guid_settles_the_lost_create() {
    let own_path = format!("/locks/a/{OWN}");
    let mut lock: Lock = Lock::new("/locks/a").unwrap();
    lock.acquire(GUID).unwrap();
    assert_eq!(drain(&mut lock).len(), 2, "create and listing");
    // Both answers are lost with the connection: the create may be applied.
    lock.handle_session(Instant::ZERO, SessionEvent::Suspended);
    lock.handle_session(Instant::ZERO, SessionEvent::Connected { session_id: 1 });
    let find = drain(&mut lock);
    assert_eq!(texts(&find), [CATCH_UP, "children /locks/a watch=false"]);
    children(&mut lock, find[1].0, &[OWN, AHEAD]);
    assert_eq!(lock.own_node(), Some(OWN));
    let sent = drain(&mut lock);
    assert_eq!(
        texts(&sent),
        [
            format!("getData {own_path} watch=true"),
            "children /locks/a watch=false".to_string(),
        ]
    );
    children(&mut lock, sent[1].0, &[OWN, AHEAD]);
    let sent = drain(&mut lock);
    assert_eq!(
        texts(&sent),
        [format!("getData /locks/a/{AHEAD} watch=true")]
    );
    // An operator deletes the waiter's node: it queues again at the back.
    lock.handle_watch(
        Instant::ZERO,
        WatchEvent {
            kind: WatchKind::NodeDeleted,
            path: &own_path,
        },
    );
    // The connection drops before the new create is sent.
    lock.handle_session(Instant::ZERO, SessionEvent::Suspended);
    lock.handle_session(Instant::ZERO, SessionEvent::Connected { session_id: 1 });
    let again = drain(&mut lock);
    assert_eq!(
        texts(&again),
        [
            format!("create /locks/a/{NEXT_PREFIX} EphemeralSequential"),
            "children /locks/a watch=false".to_string(),
        ]
    );
}

/// A waiter whose node is gone queues again under the next GUID: its old
/// node may still be listed (a server behind the delete, or behind the old
/// node's session's end after a move to a new session), and when the new
/// create's answer is lost, the search must find the new node, not the old
/// one. Under one GUID for both, the lock adopted the old node; once that
/// went, the new one stayed, ahead of everyone, for its session's life
/// (`lock_sim` on lagging servers, seed 400057403).
#[test]
fn a_waiter_queued_again_finds_its_new_node_not_the_old_one() {
    let (mut lock, _) = behind_one();
    lock.handle_watch(
        Instant::ZERO,
        WatchEvent {
            kind: WatchKind::NodeDeleted,
            path: &format!("/locks/a/{OWN}"),
        },
    );
    let again = drain(&mut lock);
    assert_eq!(again.len(), 2, "create and listing");
    let prefix = again[0]
        .1
        .split(' ')
        .nth(1)
        .unwrap()
        .trim_start_matches("/locks/a/");
    let new = format!("{prefix}0000000007");
    // Both answers are lost with the connection: the create may be applied.
    lock.handle_session(Instant::ZERO, SessionEvent::Suspended);
    lock.handle_session(Instant::ZERO, SessionEvent::Connected { session_id: 1 });
    let find = drain(&mut lock);
    assert_eq!(texts(&find), [CATCH_UP, "children /locks/a watch=false"]);
    // The old node is still listed, ahead of the new one.
    children(&mut lock, find[1].0, &[OWN, AHEAD, &new]);
    assert_eq!(lock.own_node(), Some(new.as_str()));
}

/// A create whose answer was lost, looked for in a directory that is gone
/// by then (an operator removed it, and the create with it): the listing's
/// `NoNode` says nothing is left to find, so the lock creates again rather
/// than wait for an answer that will not come.
#[test]
fn a_lost_create_whose_directory_is_gone_is_made_again() {
    let mut lock: Lock = Lock::new("/locks/a").unwrap();
    lock.acquire(GUID).unwrap();
    assert_eq!(drain(&mut lock).len(), 2, "create and listing");
    lock.handle_session(Instant::ZERO, SessionEvent::Suspended);
    lock.handle_session(Instant::ZERO, SessionEvent::Connected { session_id: 1 });
    let find = drain(&mut lock);
    assert_eq!(texts(&find), [CATCH_UP, "children /locks/a watch=false"]);
    // The check finds no directory either; the listing decides.
    lock.handle_reply(Instant::ZERO, find[0].0, Reply::Error(ZkError::NoNode));
    lock.handle_reply(Instant::ZERO, find[1].0, Reply::Error(ZkError::NoNode));
    // No node of this GUID can be left: the same one again.
    assert_back_in_line(&mut lock, PREFIX);
}

/// The own node and its directory are gone (an operator clearing the lock)
/// between the create's answer and the listing's: the listing's `NoNode`
/// puts the waiter back in line with a new node, forgetting the old one.
#[test]
fn a_listing_without_its_directory_after_the_create_queues_again() {
    let mut lock: Lock = Lock::new("/locks/a").unwrap();
    lock.acquire(GUID).unwrap();
    let sent = drain(&mut lock);
    created(&mut lock, sent[0].0, OWN);
    let own_read = drain(&mut lock);
    assert_eq!(
        texts(&own_read),
        [format!("getData /locks/a/{OWN} watch=true")]
    );
    lock.handle_reply(Instant::ZERO, sent[1].0, Reply::Error(ZkError::NoNode));
    assert_eq!(lock.own_node(), None, "the old node is forgotten");
    assert_back_in_line(&mut lock, NEXT_PREFIX);
}

/// Creating a missing ancestor is refused (an ACL on `/locks`): the
/// acquisition fails with that error, and the own create and the listing
/// queued behind it are forgotten, their answers ignored.
#[test]
fn a_refused_ancestor_fails_the_acquisition() {
    let mut lock: Lock = Lock::new("/locks/a").unwrap();
    lock.acquire(GUID).unwrap();
    let sent = drain(&mut lock);
    lock.handle_reply(Instant::ZERO, sent[0].0, Reply::Error(ZkError::NoNode));
    lock.handle_reply(Instant::ZERO, sent[1].0, Reply::Error(ZkError::NoNode));
    let sent = drain(&mut lock);
    assert_eq!(sent.len(), 4, "{:?}", texts(&sent));
    lock.handle_reply(Instant::ZERO, sent[0].0, Reply::Error(ZkError::NoAuth));
    assert_eq!(
        events(&mut lock),
        vec![LockEvent::Failed(herdless_core::Error::Zk(ZkError::NoAuth))]
    );
    assert_eq!(lock.state(), LockState::Idle);
    lock.handle_reply(Instant::ZERO, sent[1].0, Reply::Error(ZkError::NoNode));
    created(&mut lock, sent[2].0, OWN);
    children(&mut lock, sent[3].0, &[OWN]);
    assert!(
        events(&mut lock).is_empty(),
        "answers of forgotten requests"
    );
    assert!(drain(&mut lock).is_empty());
}

fn part(lock: &mut Lock, id: RequestId, names: &[&str], last: bool) {
    lock.handle_listing_part(Instant::ZERO, id, Children::new(&names), last);
}

/// A listing in parts says what the same listing whole says, however it is
/// cut, and only once its last part came.
#[test]
fn a_listing_in_parts_decides_only_at_its_last_part() {
    for cut in 0..=2 {
        let mut lock: Lock = Lock::new("/locks/a").unwrap();
        assert!(lock.takes_listing_in_parts());
        lock.acquire(GUID).unwrap();
        let sent = drain(&mut lock);
        created(&mut lock, sent[0].0, OWN);
        drain(&mut lock);
        let names = [OWN, AHEAD];
        part(&mut lock, sent[1].0, &names[..cut], false);
        part(&mut lock, sent[1].0, &[], false);
        assert!(drain(&mut lock).is_empty(), "nothing before the last part");
        part(&mut lock, sent[1].0, &names[cut..], true);
        assert_eq!(
            texts(&drain(&mut lock)),
            [format!("getData /locks/a/{AHEAD} watch=true")],
            "cut at {cut}"
        );
        // The listing is over: a late part of it is ignored.
        part(&mut lock, sent[1].0, &[], true);
        assert!(drain(&mut lock).is_empty());
    }
}

/// Whatever moves the lock on between two parts voids the listing: its
/// last part is not read.
#[test]
fn a_cancel_or_a_lost_connection_between_parts_voids_the_listing() {
    let start = || {
        let mut lock: Lock = Lock::new("/locks/a").unwrap();
        lock.acquire(GUID).unwrap();
        let sent = drain(&mut lock);
        created(&mut lock, sent[0].0, OWN);
        drain(&mut lock);
        part(&mut lock, sent[1].0, &[AHEAD], false);
        (lock, sent[1].0)
    };
    let (mut lock, list) = start();
    lock.cancel().unwrap();
    let own = format!("/locks/a/{OWN}");
    assert_eq!(texts(&drain(&mut lock)), [format!("delete {own}")]);
    part(&mut lock, list, &[OWN], true);
    assert!(drain(&mut lock).is_empty(), "the last part is not read");
    assert!(events(&mut lock).is_empty(), "not acquired");

    let (mut lock, list) = start();
    lock.handle_session(Instant::ZERO, SessionEvent::Suspended);
    part(&mut lock, list, &[OWN], true);
    lock.handle_session(Instant::ZERO, SessionEvent::Connected { session_id: 1 });
    assert!(events(&mut lock).is_empty(), "not acquired");
    let sent = drain(&mut lock);
    assert!(
        texts(&sent).contains(&"children /locks/a watch=false"),
        "listed again: {sent:?}"
    );
}

/// A search for a lost create whose listing is cut off by a lost
/// connection after the part naming the own node (a server dying while it
/// sends a listing larger than the embedded driver's receive buffer) has
/// found nothing: the create stays in doubt and the search starts over.
/// Adopting the node from the part read took a lock cancelled during the
/// search for one to acquire, found by the simulator's listings cut in
/// parts.
#[test]
fn a_search_cut_off_after_the_part_naming_the_own_node_starts_over() {
    let mut lock: Lock = Lock::new("/locks/a").unwrap();
    lock.acquire(GUID).unwrap();
    drain(&mut lock);
    lock.handle_session(Instant::ZERO, SessionEvent::Suspended);
    lock.cancel().unwrap();
    lock.handle_session(Instant::ZERO, SessionEvent::Connected { session_id: 1 });
    let sent = drain(&mut lock);
    assert_eq!(texts(&sent), [CATCH_UP, "children /locks/a watch=false"]);
    lock.handle_reply(Instant::ZERO, sent[0].0, Reply::Checked);
    part(&mut lock, sent[1].0, &[OWN], false);
    assert_eq!(lock.own_node(), None, "adopted before the listing ended");
    lock.handle_session(Instant::ZERO, SessionEvent::Suspended);
    assert!(events(&mut lock).is_empty());
    lock.handle_session(Instant::ZERO, SessionEvent::Connected { session_id: 1 });
    let sent = drain(&mut lock);
    assert_eq!(texts(&sent), [CATCH_UP, "children /locks/a watch=false"]);
    lock.handle_reply(Instant::ZERO, sent[0].0, Reply::Checked);
    part(&mut lock, sent[1].0, &["x-lock-0000000001"], false);
    part(&mut lock, sent[1].0, &[OWN], true);
    let sent = drain(&mut lock);
    assert_eq!(texts(&sent), [format!("delete /locks/a/{OWN}")]);
    lock.handle_reply(Instant::ZERO, sent[0].0, Reply::Deleted);
    assert_eq!(
        events(&mut lock),
        vec![LockEvent::NotAcquired(GiveUp::Cancelled)]
    );
    assert_eq!(lock.state(), LockState::Idle);
}

/// A search for a lost create whose listing is refused every time (a
/// directory this session may create in but not list, or a name over the
/// embedded driver's receive buffer) ends in the failure after eight more
/// searches, rather than being sent again for ever at the server's pace
/// with nothing reported; the next attempt searches as often again.
#[test]
fn a_search_refused_again_and_again_is_given_up_after_eight_more() {
    for refusal in [ZkError::NoAuth, ZkError::ReplyTooLarge] {
        let mut lock: Lock = Lock::new("/locks/a").unwrap();
        for attempt in 0..2 {
            lock.acquire(GUID).unwrap();
            let sent = drain(&mut lock);
            lock.handle_reply(
                Instant::ZERO,
                sent[0].0,
                Reply::Error(ZkError::ReplyTooLarge),
            );
            lock.handle_reply(Instant::ZERO, sent[1].0, Reply::Error(refusal));
            let mut searches = 0;
            loop {
                let sent = drain(&mut lock);
                if sent.is_empty() {
                    break;
                }
                assert_eq!(texts(&sent), [CATCH_UP, "children /locks/a watch=false"]);
                assert!(events(&mut lock).is_empty(), "{refusal:?}: reported early");
                searches += 1;
                assert!(searches <= 9, "{refusal:?}: searched for ever");
                lock.handle_reply(Instant::ZERO, sent[0].0, Reply::Checked);
                lock.handle_reply(Instant::ZERO, sent[1].0, Reply::Error(refusal));
            }
            assert_eq!(searches, 1 + 8, "{refusal:?}, attempt {attempt}");
            assert_eq!(
                events(&mut lock),
                vec![LockEvent::Failed(herdless_core::Error::Zk(refusal))]
            );
            assert_eq!(lock.state(), LockState::Idle);
        }
    }
}

/// A node another client named by hand with the own node's sequence (a
/// server never gives two children one): Curator and Kazoo sort such a
/// pair in listing order, so either may put it first. It counts as ahead:
/// the lock waits for it rather than risk holding beside its owner.
#[test]
fn a_node_named_by_hand_with_the_own_sequence_is_waited_for() {
    let tie = "ffffffffffffffffffffffffffffffff__lock__0000000005";
    for listing in [[OWN, tie], [tie, OWN]] {
        let (mut lock, read) = behind(&listing, tie);
        assert!(events(&mut lock).is_empty(), "{listing:?}");
        assert_eq!(lock.state(), LockState::Acquiring);
        let stat = ephemeral();
        lock.handle_reply(Instant::ZERO, read, Reply::Data { data: b"", stat });
        assert!(events(&mut lock).is_empty());
        let path = format!("/locks/a/{tie}");
        lock.handle_watch(
            Instant::ZERO,
            WatchEvent {
                kind: WatchKind::NodeDeleted,
                path: &path,
            },
        );
        assert_eq!(events(&mut lock), vec![LockEvent::Acquired], "{listing:?}");
    }
}

/// Whatever ends a holding, the holder hears `Lost`: an answer of the wrong
/// shape to a holder at work ends it at once, before the node's delete
/// lets the next contender in, and nothing follows the delete.
#[test]
fn a_holder_at_work_whose_protocol_fails_hears_lost_before_the_delete() {
    let mut lock = held();
    let own_read = drain(&mut lock);
    let none: &[&str] = &[];
    let wrong = Reply::Children(Children::new(&none));
    lock.handle_reply(Instant::ZERO, own_read[0].0, wrong);
    assert_eq!(events(&mut lock), vec![LockEvent::Lost]);
    let delete = drain(&mut lock);
    assert_eq!(texts(&delete), [format!("delete /locks/a/{OWN}")]);
    lock.handle_reply(Instant::ZERO, delete[0].0, Reply::Deleted);
    assert!(events(&mut lock).is_empty());
    assert_eq!(lock.state(), LockState::Idle);
}

/// A waiter moved to a new session, whose node (read again) is the old
/// session's: the node is deleted, and if the delete is refused, the node
/// still dies with the old session. The attempt ends as that session's end
/// ends it, with `SessionEnded`, not with the refusal: the election's
/// candidate, built on this lock, volunteers again on exactly that.
#[test]
fn a_refused_delete_of_an_earlier_sessions_node_ends_the_attempt_as_its_session_end() {
    let (mut lock, _predecessor) = behind_one();
    let again = moved_to_session(&mut lock, 9);
    let stat = ephemeral();
    lock.handle_reply(Instant::ZERO, again[0].0, Reply::Data { data: b"", stat });
    let delete = drain(&mut lock);
    assert_eq!(texts(&delete), [format!("delete /locks/a/{OWN}")]);
    lock.handle_reply(Instant::ZERO, delete[0].0, Reply::Error(ZkError::NoAuth));
    assert_eq!(
        events(&mut lock),
        [LockEvent::Failed(herdless_core::Error::SessionEnded)]
    );
    assert_eq!(lock.state(), LockState::Idle);
}

/// A write to the node of a lock that is giving up is no reason to read it
/// again: its delete is on its way.
#[test]
fn a_lock_giving_up_ignores_a_write_to_its_node() {
    let (mut lock, _predecessor) = behind_one();
    lock.cancel().unwrap();
    let delete = drain(&mut lock);
    assert_eq!(texts(&delete), [format!("delete /locks/a/{OWN}")]);
    assert!(write_to_own_node(&mut lock).is_empty());
    lock.handle_reply(Instant::ZERO, delete[0].0, Reply::Deleted);
    assert_eq!(
        events(&mut lock),
        [LockEvent::NotAcquired(GiveUp::Cancelled)]
    );
}
