//! The shared (read/write) lock and revocation driven by hand-written
//! replies: the exact requests of the protocol, with no server at all.

use herdless_core::lock::{Contender, GiveUp, Lock, LockEvent, LockState};
use herdless_core::naming::{Flavour, Guid};
use herdless_core::revoke::{Revoke, RevokeEvent};
use herdless_core::{
    Children, CreateMode, Instant, Recipe, Reply, RequestId, SessionEvent, Stat, WatchEvent,
    WatchKind, ZkError,
};

mod support;
use support::by_hand::{drain, events};

const GUID: Guid = Guid([0x11; 16]);
const READ: &str = "11111111-1111-1111-1111-111111111111-read-0000000005";
const WRITE: &str = "11111111-1111-1111-1111-111111111111-write-0000000005";
const DIR: &str = "/rw/a";

fn children(lock: &mut Lock, id: RequestId, names: &[&str]) {
    lock.handle_reply(Instant::ZERO, id, Reply::Children(Children::new(&names)));
}

fn created(lock: &mut Lock, id: RequestId, name: &str) {
    let path = format!("{DIR}/{name}");
    lock.handle_reply(Instant::ZERO, id, Reply::Created { path: &path });
}

/// A contender's node: ephemeral, as every lock's is.
fn ephemeral() -> Stat {
    Stat {
        ephemeral_owner: 0x1234,
        ..Stat::default()
    }
}

fn data(recipe: &mut impl Recipe, id: RequestId, bytes: &[u8]) {
    recipe.handle_reply(
        Instant::ZERO,
        id,
        Reply::Data {
            data: bytes,
            stat: ephemeral(),
        },
    );
}

fn watch(recipe: &mut impl Recipe, kind: WatchKind, path: &str) {
    recipe.handle_watch(Instant::ZERO, WatchEvent { kind, path });
}

/// Starts `lock`, answers its create with `own` and its listing with
/// `others` plus `own`; returns what it sends next.
fn queue_up(lock: &mut Lock, own: &str, others: &[&str]) -> Vec<(RequestId, String)> {
    lock.acquire(GUID).unwrap();
    let sent = drain(lock);
    assert_eq!(sent.len(), 2, "create and listing leave together: {sent:?}");
    created(lock, sent[0].0, own);
    // Every lock watches its own node from the create's answer on.
    let own_watch = drain(lock);
    assert_eq!(own_watch.len(), 1, "{own_watch:?}");
    assert_eq!(own_watch[0].1, format!("getData {DIR}/{own} watch=true"));
    let mut names: Vec<&str> = others.to_vec();
    names.push(own);
    children(lock, sent[1].0, &names);
    let next = drain(lock);
    // Answered in the order sent, as a server does: the own node's read
    // before anything the listing led to.
    data(lock, own_watch[0].0, b"");
    next
}

#[test]
fn nodes_are_named_read_and_write_as_on_the_recipes_page() {
    for (mut lock, marker) in [
        (Lock::reader(DIR).unwrap(), "-read-"),
        (Lock::writer(DIR).unwrap(), "-write-"),
    ] {
        let lock: &mut Lock = &mut lock;
        lock.acquire(GUID).unwrap();
        let sent = drain(lock);
        assert_eq!(
            sent[0].1,
            format!(
                "create {DIR}/11111111-1111-1111-1111-111111111111{marker} {:?}",
                CreateMode::EphemeralSequential
            )
        );
        assert_eq!(sent[1].1, format!("children {DIR} watch=false"));
    }
}

#[test]
fn a_reader_behind_only_readers_holds_in_one_round_trip() {
    let mut lock: Lock = Lock::reader(DIR).unwrap();
    let next = queue_up(
        &mut lock,
        READ,
        &[
            "a-read-0000000001",
            "b-read-0000000003",
            "c-write-0000000007",
        ],
    );
    assert!(next.is_empty(), "{next:?}");
    assert_eq!(events(&mut lock), vec![LockEvent::Acquired]);
    assert!(lock.is_held());
}

#[test]
fn a_reader_watches_only_the_next_lower_writer_and_takes_over_on_its_deletion() {
    let mut lock: Lock = Lock::reader(DIR).unwrap();
    let next = queue_up(
        &mut lock,
        READ,
        &[
            "w1-write-0000000001",
            "r2-read-0000000002",
            "w3-write-0000000003",
            "r4-read-0000000004",
            "w9-write-0000000009",
        ],
    );
    assert_eq!(next.len(), 1, "{next:?}");
    assert_eq!(
        next[0].1,
        format!("getData {DIR}/w3-write-0000000003 watch=true"),
        "the next-lower writer, not the lower reader nor the later writer"
    );
    assert_eq!(lock.predecessor(), Some("/rw/a/w3-write-0000000003"));
    data(&mut lock, next[0].0, b"");
    // w3 goes, but w1 is still ahead: list again.
    watch(
        &mut lock,
        WatchKind::NodeDeleted,
        "/rw/a/w3-write-0000000003",
    );
    let sent = drain(&mut lock);
    assert_eq!(sent[0].1, format!("children {DIR} watch=false"));
    children(
        &mut lock,
        sent[0].0,
        &["w1-write-0000000001", "r2-read-0000000002", READ],
    );
    let sent = drain(&mut lock);
    assert_eq!(
        sent[0].1,
        format!("getData {DIR}/w1-write-0000000001 watch=true")
    );
    // w1 was the only writer ahead: its deletion is enough, no listing.
    watch(
        &mut lock,
        WatchKind::NodeDeleted,
        "/rw/a/w1-write-0000000001",
    );
    assert!(drain(&mut lock).is_empty());
    assert_eq!(events(&mut lock), vec![LockEvent::Acquired]);
}

#[test]
fn a_writer_watches_its_next_lower_node_of_either_kind() {
    let mut lock: Lock = Lock::writer(DIR).unwrap();
    let next = queue_up(
        &mut lock,
        WRITE,
        &[
            "w1-write-0000000001",
            "r2-read-0000000002",
            "r4-read-0000000004",
            "r6-read-0000000006",
        ],
    );
    assert_eq!(
        next[0].1,
        format!("getData {DIR}/r4-read-0000000004 watch=true")
    );
    // A lower reader's deletion is not its business: no notification for
    // it ever arrives, and a spurious one for another path is ignored.
    watch(
        &mut lock,
        WatchKind::NodeDeleted,
        "/rw/a/r2-read-0000000002",
    );
    assert!(drain(&mut lock).is_empty());
    assert!(events(&mut lock).is_empty());
}

#[test]
fn other_libraries_readers_and_writers_are_told_apart() {
    // Curator's __WRIT__ and Kazoo's __lock__ keep a reader waiting;
    // Curator's __READ__ and Kazoo's __rlock__ do not; exclusive-lock nodes
    // count as writers.
    for (blocker, blocks) in [
        ("_c_0c1d-__WRIT__0000000001", true),
        ("0c1d__lock__0000000001", true),
        ("_c_0c1d-lock-0000000001", true),
        ("_c_0c1d-__READ__0000000001", false),
        ("0c1d__rlock__0000000001", false),
        ("sub-write-dir", false),
    ] {
        let mut lock: Lock = Lock::reader(DIR).unwrap();
        let next = queue_up(&mut lock, READ, &[blocker]);
        let held = events(&mut lock) == vec![LockEvent::Acquired];
        assert_eq!(held, !blocks, "{blocker}");
        if blocks {
            assert_eq!(next[0].1, format!("getData {DIR}/{blocker} watch=true"));
        }
    }
}

#[test]
fn curator_and_kazoo_flavoured_contenders_write_their_names() {
    for (flavour, contender, marker) in [
        (Flavour::Curator, Contender::Reader, "-__READ__"),
        (Flavour::Curator, Contender::Writer, "-__WRIT__"),
        (Flavour::Kazoo, Contender::Reader, "__rlock__"),
        (Flavour::Kazoo, Contender::Writer, "__lock__"),
    ] {
        let mut lock: Lock = Lock::with_contender(DIR, contender, flavour).unwrap();
        lock.acquire(GUID).unwrap();
        let sent = drain(&mut lock);
        assert!(
            sent[0].1.contains(&format!("{marker} EphemeralSequential")),
            "{sent:?}"
        );
    }
}

/// kazoo#649: a reader waited on a *later* writer.
#[test]
fn kazoo_649_a_reader_never_waits_for_a_later_writer() {
    let mut lock: Lock = Lock::reader(DIR).unwrap();
    let next = queue_up(
        &mut lock,
        READ,
        &["w6-write-0000000006", "w7-write-0000000007"],
    );
    assert!(next.is_empty());
    assert_eq!(events(&mut lock), vec![LockEvent::Acquired]);
}

#[test]
fn try_acquire_of_a_reader_is_busy_only_behind_a_writer() {
    let mut lock: Lock = Lock::reader(DIR).unwrap();
    lock.try_acquire(GUID).unwrap();
    let sent = drain(&mut lock);
    created(&mut lock, sent[0].0, READ);
    children(&mut lock, sent[1].0, &["r-read-0000000001", READ]);
    assert_eq!(events(&mut lock), vec![LockEvent::Acquired]);

    let mut lock: Lock = Lock::reader(DIR).unwrap();
    lock.try_acquire(GUID).unwrap();
    let sent = drain(&mut lock);
    created(&mut lock, sent[0].0, READ);
    children(&mut lock, sent[1].0, &["w-write-0000000001", READ]);
    let sent = drain(&mut lock);
    assert_eq!(sent[0].1, format!("delete {DIR}/{READ}"));
    lock.handle_reply(Instant::ZERO, sent[0].0, Reply::Deleted);
    assert_eq!(
        events(&mut lock),
        vec![LockEvent::NotAcquired(GiveUp::Busy)]
    );
}

#[test]
fn a_lost_create_reply_is_recovered_by_guid_for_readers_too() {
    let mut lock: Lock = Lock::reader(DIR).unwrap();
    lock.acquire(GUID).unwrap();
    drain(&mut lock);
    lock.handle_session(Instant::ZERO, SessionEvent::Suspended);
    lock.handle_session(Instant::ZERO, SessionEvent::Connected { session_id: 1 });
    let sent = drain(&mut lock);
    // No second create before looking: a no-op write, then the search.
    assert_eq!(sent.len(), 2, "{sent:?}");
    assert_eq!(
        sent[0].1,
        format!("Check {{ path: \"{DIR}\", version: Any }}")
    );
    // A writer node with the same GUID is not ours: only the reader is.
    let writer_same_guid = "11111111-1111-1111-1111-111111111111-write-0000000002";
    children(&mut lock, sent[1].0, &[writer_same_guid, READ]);
    assert_eq!(lock.own_node(), Some(READ));
    let sent = drain(&mut lock);
    assert_eq!(sent[0].1, format!("getData {DIR}/{READ} watch=true"));
    // A new listing says where the node found stands.
    assert_eq!(sent[1].1, format!("children {DIR} watch=false"));
    children(&mut lock, sent[1].0, &[writer_same_guid, READ]);
    let sent = drain(&mut lock);
    assert_eq!(
        sent[0].1,
        format!("getData {DIR}/{writer_same_guid} watch=true")
    );
}

// ---- revocation: the holder's side ----

/// A revocable writer that holds, with the own-node watch answered.
fn revocable_holder() -> (Lock, RequestId) {
    let mut lock: Lock = Lock::writer(DIR).unwrap().revocable();
    lock.acquire(GUID).unwrap();
    let sent = drain(&mut lock);
    created(&mut lock, sent[0].0, WRITE);
    let next = drain(&mut lock);
    assert_eq!(
        next.len(),
        1,
        "the own node is read right after its create: {next:?}"
    );
    assert_eq!(next[0].1, format!("getData {DIR}/{WRITE} watch=true"));
    children(&mut lock, sent[1].0, &[WRITE]);
    assert_eq!(events(&mut lock), vec![LockEvent::Acquired]);
    (lock, next[0].0)
}

#[test]
fn a_revocable_holder_hears_the_request_once_and_releases_by_consent() {
    let (mut lock, own_read) = revocable_holder();
    data(&mut lock, own_read, b"");
    assert!(events(&mut lock).is_empty());
    let own = format!("{DIR}/{WRITE}");
    watch(&mut lock, WatchKind::NodeDataChanged, &own);
    let sent = drain(&mut lock);
    assert_eq!(sent[0].1, format!("getData {own} watch=true"), "re-armed");
    data(&mut lock, sent[0].0, b"unlock");
    assert_eq!(events(&mut lock), vec![LockEvent::RevocationRequested]);
    assert!(lock.revocation_requested());
    assert!(lock.is_held(), "revocation is a request, not a loss");
    // A second request is not reported again.
    watch(&mut lock, WatchKind::NodeDataChanged, &own);
    let sent = drain(&mut lock);
    data(&mut lock, sent[0].0, b"unlock");
    assert!(events(&mut lock).is_empty());
    // Consent: the holder releases; its own delete fires its own watch,
    // which changes nothing.
    lock.release().unwrap();
    let sent = drain(&mut lock);
    assert_eq!(sent[0].1, format!("delete {own}"));
    watch(&mut lock, WatchKind::NodeDeleted, &own);
    assert!(events(&mut lock).is_empty());
    lock.handle_reply(Instant::ZERO, sent[0].0, Reply::Deleted);
    assert_eq!(events(&mut lock), vec![LockEvent::Released]);
}

#[test]
fn curators_revoke_message_is_honoured() {
    let (mut lock, own_read) = revocable_holder();
    data(&mut lock, own_read, b"__REVOKE__");
    assert_eq!(events(&mut lock), vec![LockEvent::RevocationRequested]);
}

#[test]
fn a_revocable_holder_whose_node_is_deleted_hears_lost_at_once() {
    let (mut lock, own_read) = revocable_holder();
    data(&mut lock, own_read, b"unlock");
    assert_eq!(events(&mut lock), vec![LockEvent::RevocationRequested]);
    watch(&mut lock, WatchKind::NodeDeleted, &format!("{DIR}/{WRITE}"));
    assert_eq!(events(&mut lock), vec![LockEvent::Lost]);
    assert_eq!(lock.state(), LockState::Idle);
    assert!(drain(&mut lock).is_empty(), "nothing to delete any more");
}

#[test]
fn a_revocable_waiter_whose_node_is_deleted_gives_up_as_revoked() {
    let mut lock: Lock = Lock::reader(DIR).unwrap().revocable();
    lock.acquire(GUID).unwrap();
    let sent = drain(&mut lock);
    created(&mut lock, sent[0].0, READ);
    let own_read = drain(&mut lock);
    children(&mut lock, sent[1].0, &["w-write-0000000001", READ]);
    let watch_pred = drain(&mut lock);
    assert_eq!(watch_pred.len(), 1);
    // The request reaches a waiter too: it may cancel.
    data(&mut lock, own_read[0].0, b"unlock");
    assert_eq!(events(&mut lock), vec![LockEvent::RevocationRequested]);
    watch(&mut lock, WatchKind::NodeDeleted, &format!("{DIR}/{READ}"));
    assert_eq!(
        events(&mut lock),
        vec![LockEvent::NotAcquired(GiveUp::Revoked)]
    );
    // It did not create a new node behind the requester's back.
    assert!(drain(&mut lock).is_empty());
}

#[test]
fn a_non_revocable_lock_ignores_unlock_but_hears_its_node_deleted() {
    let mut lock: Lock = Lock::writer(DIR).unwrap();
    lock.acquire(GUID).unwrap();
    let sent = drain(&mut lock);
    created(&mut lock, sent[0].0, WRITE);
    let own_watch = drain(&mut lock);
    assert_eq!(own_watch[0].1, format!("getData {DIR}/{WRITE} watch=true"));
    children(&mut lock, sent[1].0, &[WRITE]);
    assert_eq!(events(&mut lock), vec![LockEvent::Acquired]);
    // A revocation request means nothing to a lock that is not revocable.
    data(&mut lock, own_watch[0].0, b"unlock");
    assert!(events(&mut lock).is_empty());
    watch(
        &mut lock,
        WatchKind::NodeDataChanged,
        &format!("{DIR}/{WRITE}"),
    );
    let rearm = drain(&mut lock);
    assert_eq!(rearm[0].1, format!("getData {DIR}/{WRITE} watch=true"));
    data(&mut lock, rearm[0].0, b"unlock");
    assert!(events(&mut lock).is_empty());
    assert!(lock.is_held());
    // Its deletion by someone else ends the holding.
    watch(&mut lock, WatchKind::NodeDeleted, &format!("{DIR}/{WRITE}"));
    assert_eq!(events(&mut lock), vec![LockEvent::Lost]);
    assert!(!lock.is_held());
}

#[test]
fn after_a_reconnect_a_revocable_holder_reads_its_node_again() {
    let (mut lock, _) = revocable_holder();
    lock.handle_session(Instant::ZERO, SessionEvent::Suspended);
    // The same session: the one that owns the node.
    let session_id = ephemeral().ephemeral_owner;
    lock.handle_session(Instant::ZERO, SessionEvent::Connected { session_id });
    let sent = drain(&mut lock);
    let texts: Vec<&str> = sent.iter().map(|s| s.1.as_str()).collect();
    assert_eq!(
        texts,
        [
            format!("exists {DIR}/{WRITE} watch=false"),
            format!("getData {DIR}/{WRITE} watch=true")
        ]
    );
    lock.handle_reply(
        Instant::ZERO,
        sent[0].0,
        Reply::Exists { stat: ephemeral() },
    );
    // The request was written while the connection was down.
    data(&mut lock, sent[1].0, b"unlock");
    assert_eq!(
        events(&mut lock),
        vec![
            LockEvent::Suspended,
            LockEvent::Resumed,
            LockEvent::RevocationRequested
        ]
    );
}

// ---- revocation: the requester's side ----

const NODE: &str = "/rw/a/11111111-1111-1111-1111-111111111111-write-0000000005";

/// A forced revocation of `NODE` with its deadline at `deadline_ms`, and
/// what it sent first (the write, then the watch).
fn forced(deadline_ms: u64) -> (Revoke, Vec<(RequestId, String)>) {
    let mut revoke: Revoke = Revoke::new(NODE).unwrap();
    revoke
        .request_forced(Instant::from_millis(deadline_ms))
        .unwrap();
    let sent = drain(&mut revoke);
    (revoke, sent)
}

/// Answers the revocation's write of `unlock` as done.
fn written(revoke: &mut Revoke, id: RequestId) {
    revoke.handle_reply(Instant::ZERO, id, Reply::DataSet { stat: ephemeral() });
}

#[test]
fn only_a_lock_contenders_node_is_revoked() {
    let curator = "/rw/_c_0b4c1e57-6c6e-4b39-a0a2-2f7f3f5cf3a1-__WRIT__0000000004";
    let kazoo = "/rw/0b4c1e576c6e4b39a0a22f7f3f5cf3a1__lock__0000000005";
    for node in [NODE, curator, kazoo, "/rw/x-read-0000000001"] {
        assert!(Revoke::<128>::new(node).is_ok(), "{node}");
    }
    let candidate = "/e/11111111-1111-1111-1111-111111111111-n_0000000002";
    for node in ["/app/config", "/rw/a", "/q/qn-0000000001", candidate] {
        assert_eq!(
            Revoke::<128>::new(node).err(),
            Some(herdless_core::Error::NotALockNode),
            "{node}"
        );
    }
}

#[test]
fn a_persistent_node_named_like_a_lock_is_never_deleted() {
    // Told by the write's answer: the revocation ends there.
    let (mut revoke, sent) = forced(500);
    revoke.handle_reply(
        Instant::ZERO,
        sent[0].0,
        Reply::DataSet {
            stat: Stat::default(),
        },
    );
    assert_eq!(
        events(&mut revoke),
        vec![RevokeEvent::Failed(herdless_core::Error::NotALockNode)]
    );
    assert!(!revoke.is_running());
    revoke.handle_timeout(Instant::from_millis(500));
    assert!(drain(&mut revoke).is_empty(), "nothing deleted");

    // Told by the watch's answer, the write's lost with the connection.
    let (mut revoke, sent) = forced(500);
    revoke.handle_reply(
        Instant::ZERO,
        sent[1].0,
        Reply::Data {
            data: b"unlock",
            stat: Stat::default(),
        },
    );
    assert_eq!(
        events(&mut revoke),
        vec![RevokeEvent::Failed(herdless_core::Error::NotALockNode)]
    );
    revoke.handle_timeout(Instant::from_millis(500));
    assert!(drain(&mut revoke).is_empty(), "nothing deleted");
}

#[test]
fn a_plain_request_writes_unlock_and_ends() {
    let mut revoke: Revoke = Revoke::new(NODE).unwrap();
    revoke.request().unwrap();
    let sent = drain(&mut revoke);
    assert_eq!(sent.len(), 1, "no watch for a plain request: {sent:?}");
    assert_eq!(sent[0].1, format!("setData {NODE} unlock"));
    assert!(revoke.request().is_err(), "one revocation at a time");
    written(&mut revoke, sent[0].0);
    assert_eq!(events(&mut revoke), vec![RevokeEvent::Requested]);
    assert!(!revoke.is_running());
    assert_eq!(revoke.poll_timeout(), None);
}

#[test]
fn a_request_for_a_node_already_gone_says_so() {
    let (mut revoke, sent) = forced(100);
    revoke.handle_reply(Instant::ZERO, sent[0].0, Reply::Error(ZkError::NoNode));
    revoke.handle_reply(Instant::ZERO, sent[1].0, Reply::Error(ZkError::NoNode));
    assert_eq!(events(&mut revoke), vec![RevokeEvent::NotFound]);
    assert_eq!(revoke.poll_timeout(), None);
}

#[test]
fn a_forced_request_reports_the_holders_consent_within_the_grace_period() {
    let (mut revoke, sent) = forced(500);
    assert_eq!(sent[0].1, format!("setData {NODE} unlock"));
    assert_eq!(sent[1].1, format!("getData {NODE} watch=true"));
    written(&mut revoke, sent[0].0);
    data(&mut revoke, sent[1].0, b"unlock");
    assert_eq!(events(&mut revoke), vec![RevokeEvent::Requested]);
    revoke.handle_timeout(Instant::from_millis(499));
    assert!(drain(&mut revoke).is_empty());
    watch(&mut revoke, WatchKind::NodeDeleted, NODE);
    assert_eq!(events(&mut revoke), vec![RevokeEvent::Released]);
    assert_eq!(revoke.poll_timeout(), None);
    assert!(drain(&mut revoke).is_empty(), "nothing left to delete");
}

#[test]
fn a_forced_request_deletes_the_node_at_the_deadline() {
    let (mut revoke, sent) = forced(500);
    written(&mut revoke, sent[0].0);
    data(&mut revoke, sent[1].0, b"unlock");
    events(&mut revoke);
    // Another requester's write re-arms the watch.
    watch(&mut revoke, WatchKind::NodeDataChanged, NODE);
    let rearm = drain(&mut revoke);
    assert_eq!(rearm[0].1, format!("getData {NODE} watch=true"));
    assert_eq!(revoke.poll_timeout(), Some(Instant::from_millis(500)));
    revoke.handle_timeout(Instant::from_millis(500));
    let sent = drain(&mut revoke);
    assert_eq!(sent[0].1, format!("delete {NODE}"));
    // The answer to the re-armed watch is no longer wanted; our own delete
    // fires our own watch before its reply, which decides nothing.
    data(&mut revoke, rearm[0].0, b"unlock");
    watch(&mut revoke, WatchKind::NodeDeleted, NODE);
    assert!(events(&mut revoke).is_empty());
    revoke.handle_reply(Instant::ZERO, sent[0].0, Reply::Deleted);
    assert_eq!(events(&mut revoke), vec![RevokeEvent::Forced]);
}

#[test]
fn a_holder_releasing_just_before_the_delete_lands_counts_as_consent() {
    let (mut revoke, sent) = forced(10);
    written(&mut revoke, sent[0].0);
    revoke.handle_timeout(Instant::from_millis(10));
    let del = drain(&mut revoke);
    revoke.handle_reply(Instant::ZERO, del[0].0, Reply::Error(ZkError::NoNode));
    assert_eq!(
        events(&mut revoke),
        vec![RevokeEvent::Requested, RevokeEvent::Released]
    );
}

#[test]
fn a_delete_lost_with_the_connection_is_sent_again() {
    let (mut revoke, sent) = forced(10);
    written(&mut revoke, sent[0].0);
    revoke.handle_timeout(Instant::from_millis(10));
    let del = drain(&mut revoke);
    revoke.handle_reply(
        Instant::ZERO,
        del[0].0,
        Reply::Error(ZkError::ConnectionLoss),
    );
    assert!(drain(&mut revoke).is_empty(), "nothing while disconnected");
    revoke.handle_session(Instant::ZERO, SessionEvent::Connected { session_id: 1 });
    let again = drain(&mut revoke);
    assert_eq!(again[0].1, format!("delete {NODE}"));
    revoke.handle_reply(Instant::ZERO, again[0].0, Reply::Error(ZkError::NoNode));
    assert_eq!(
        events(&mut revoke),
        vec![RevokeEvent::Requested, RevokeEvent::Forced]
    );
}

#[test]
fn a_request_lost_with_the_connection_is_written_again_and_an_expiry_fails() {
    let mut revoke: Revoke = Revoke::new(NODE).unwrap();
    revoke.request().unwrap();
    drain(&mut revoke);
    revoke.handle_session(Instant::ZERO, SessionEvent::Suspended);
    revoke.handle_session(Instant::ZERO, SessionEvent::Connected { session_id: 1 });
    let sent = drain(&mut revoke);
    assert_eq!(sent[0].1, format!("setData {NODE} unlock"));
    revoke.handle_session(Instant::ZERO, SessionEvent::Expired);
    assert_eq!(
        events(&mut revoke),
        vec![RevokeEvent::Failed(
            herdless_core::revoke::Error::SessionEnded
        )]
    );
}

#[test]
fn a_revocation_asked_for_after_an_expiry_waits_for_the_next_session_and_after_a_close_is_refused()
{
    let mut revoke: Revoke = Revoke::new(NODE).unwrap();
    revoke.handle_session(Instant::ZERO, SessionEvent::Expired);
    revoke.request().unwrap();
    assert!(
        drain(&mut revoke).is_empty(),
        "nothing goes out on the session that ended"
    );
    revoke.handle_session(Instant::ZERO, SessionEvent::Connected { session_id: 2 });
    let sent = drain(&mut revoke);
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(sent[0].1, format!("setData {NODE} unlock"));
    written(&mut revoke, sent[0].0);
    assert_eq!(events(&mut revoke), vec![RevokeEvent::Requested]);

    // An expiry answered to a request counts the same.
    revoke.request().unwrap();
    let sent = drain(&mut revoke);
    revoke.handle_reply(
        Instant::ZERO,
        sent[0].0,
        Reply::Error(ZkError::SessionExpired),
    );
    assert_eq!(
        events(&mut revoke),
        vec![RevokeEvent::Failed(
            herdless_core::revoke::Error::SessionEnded
        )]
    );
    revoke.request().unwrap();
    assert!(drain(&mut revoke).is_empty());
    revoke.cancel();

    revoke.handle_session(Instant::ZERO, SessionEvent::Closed);
    assert_eq!(
        revoke.request(),
        Err(herdless_core::revoke::Error::SessionEnded),
        "no session follows a close"
    );
}

#[test]
fn a_refused_write_fails_cleanly() {
    let mut revoke: Revoke = Revoke::new(NODE).unwrap();
    revoke.request().unwrap();
    let sent = drain(&mut revoke);
    revoke.handle_reply(Instant::ZERO, sent[0].0, Reply::Error(ZkError::NoAuth));
    assert_eq!(
        events(&mut revoke),
        vec![RevokeEvent::Failed(herdless_core::revoke::Error::Zk(
            ZkError::NoAuth
        ))]
    );
    // A reply of the wrong shape does not panic either.
    revoke.request().unwrap();
    let sent = drain(&mut revoke);
    revoke.handle_reply(Instant::ZERO, sent[0].0, Reply::Deleted);
    assert_eq!(
        events(&mut revoke),
        vec![RevokeEvent::Failed(herdless_core::revoke::Error::BadReply)]
    );
}

#[test]
fn a_revocation_says_what_it_revokes_and_whether_it_runs() {
    let mut revoke: Revoke = Revoke::new(NODE).unwrap();
    assert_eq!(revoke.node(), NODE);
    assert!(!revoke.is_running());
    revoke.request_forced(Instant::from_millis(10)).unwrap();
    assert!(revoke.is_running());
    let debug = format!("{revoke:?}");
    assert!(debug.contains("Revoke") && debug.contains(NODE), "{debug}");
    // Cancelled: nothing more is sent, no deadline, answers are ignored.
    let sent = drain(&mut revoke);
    revoke.cancel();
    assert!(!revoke.is_running());
    assert_eq!(revoke.poll_timeout(), None);
    revoke.handle_timeout(Instant::from_millis(10));
    assert!(drain(&mut revoke).is_empty(), "no delete after a cancel");
    revoke.handle_reply(Instant::ZERO, sent[0].0, Reply::Error(ZkError::NoNode));
    assert!(events(&mut revoke).is_empty());
    // And it can run again.
    revoke.request().unwrap();
    assert_eq!(drain(&mut revoke)[0].1, format!("setData {NODE} unlock"));
}

#[test]
fn revocation_errors_read_as_sentences() {
    use herdless_core::revoke::Error;
    assert_eq!(
        Error::InvalidState.to_string(),
        "not allowed in the recipe's current state (another operation may be in progress)"
    );
    assert_eq!(Error::SessionEnded.to_string(), "the session has ended");
    assert_eq!(
        Error::BadReply.to_string(),
        "malformed reply from the server"
    );
    assert!(Error::Zk(ZkError::NoAuth)
        .to_string()
        .starts_with("ZooKeeper error"));
}

#[test]
fn a_deadline_reached_before_the_write_leaves_sends_the_write_then_the_delete() {
    let mut revoke: Revoke = Revoke::new(NODE).unwrap();
    revoke.request_forced(Instant::from_millis(10)).unwrap();
    revoke.handle_timeout(Instant::from_millis(10));
    let sent: Vec<String> = drain(&mut revoke).into_iter().map(|(_, s)| s).collect();
    assert_eq!(
        sent,
        vec![format!("setData {NODE} unlock"), format!("delete {NODE}")],
        "the watch is dropped, the write is not"
    );
}

#[test]
fn a_write_answered_after_the_deadline_leaves_the_delete_to_decide() {
    let (mut revoke, sent) = forced(10);
    revoke.handle_timeout(Instant::from_millis(10));
    let del = drain(&mut revoke);
    assert_eq!(del[0].1, format!("delete {NODE}"));
    written(&mut revoke, sent[0].0);
    // Our own delete fires our watch before its answer: not a consent.
    watch(&mut revoke, WatchKind::NodeDeleted, NODE);
    revoke.handle_reply(Instant::ZERO, del[0].0, Reply::Deleted);
    assert_eq!(
        events(&mut revoke),
        vec![RevokeEvent::Requested, RevokeEvent::Forced]
    );
}

#[test]
fn a_write_lost_with_the_connection_does_not_make_a_later_absence_forced() {
    let (mut revoke, sent) = forced(10);
    revoke.handle_reply(
        Instant::ZERO,
        sent[0].0,
        Reply::Error(ZkError::ConnectionLoss),
    );
    revoke.handle_reply(
        Instant::ZERO,
        sent[1].0,
        Reply::Error(ZkError::ConnectionLoss),
    );
    revoke.handle_session(Instant::ZERO, SessionEvent::Connected { session_id: 1 });
    let again = drain(&mut revoke);
    written(&mut revoke, again[0].0);
    revoke.handle_timeout(Instant::from_millis(10));
    let del = drain(&mut revoke);
    assert_eq!(del.last().unwrap().1, format!("delete {NODE}"));
    // Gone before our only delete: the holder released in time.
    revoke.handle_reply(
        Instant::ZERO,
        del.last().unwrap().0,
        Reply::Error(ZkError::NoNode),
    );
    assert_eq!(
        events(&mut revoke),
        vec![RevokeEvent::Requested, RevokeEvent::Released]
    );
}

#[test]
fn a_notification_about_another_node_is_not_the_holders_consent() {
    let (mut revoke, sent) = forced(500);
    written(&mut revoke, sent[0].0);
    data(&mut revoke, sent[1].0, b"unlock");
    watch(
        &mut revoke,
        WatchKind::NodeDeleted,
        "/rw/a/other-write-0000000004",
    );
    assert_eq!(events(&mut revoke), vec![RevokeEvent::Requested]);
    assert!(revoke.is_running());
}
