//! The election's accessors, errors and observer, driven by hand: what an
//! application reads off a candidate or an observer, and the observer's
//! report of changes, staleness and unreadable acknowledgements.

use herdless_core::election::{
    Acknowledgement, Election, ElectionEvent, ElectionState, Error, Observer, ObserverEvent,
};
use herdless_core::naming::{Flavour, Guid, NodeKind};
use herdless_core::owned::OwnedReply;
use herdless_core::Instant;
use herdless_core::{Recipe, Reply, Request, SessionEvent, Stat, Version, ZkError};

mod support;
use support::by_hand::events;

#[test]
fn a_candidate_says_where_it_runs_and_what_it_carries() {
    let mut e: Election = Election::new("/app/e").unwrap();
    assert_eq!(e.dir(), "/app/e");
    assert_eq!(e.ack_path(), "/app/e/leader");
    assert_eq!(e.flavour(), Flavour::Recipes);
    let curator: Election = Election::with_flavour("/app/e", Flavour::Curator).unwrap();
    assert_eq!(curator.flavour(), Flavour::Curator);
    e.campaign(Guid([7; 16]), b"edge-42").unwrap();
    assert_eq!(e.data(), b"edge-42");
    assert!(!e.is_suspended(), "not leading, so not a suspended leader");
    let debug = format!("{e:?}");
    assert!(
        debug.contains("Election") && debug.contains("/app/e"),
        "{debug}"
    );
}

#[test]
fn data_that_leaves_no_room_for_the_node_name_is_refused() {
    let mut e: Election<128, 64> = Election::new("/e").unwrap();
    let err = e.campaign(Guid([1; 16]), &[b'x'; 64]).unwrap_err();
    assert!(matches!(err, Error::TooLarge { len: 64, .. }), "{err:?}");
    let Error::TooLarge { capacity, .. } = err else {
        unreachable!()
    };
    // The rest fits exactly.
    let mut ok: Election<128, 64> = Election::new("/e").unwrap();
    ok.campaign(Guid([1; 16]), &vec![b'y'; capacity]).unwrap();
    assert_eq!(ok.data().len(), capacity);
}

#[test]
fn election_errors_read_as_sentences() {
    assert_eq!(Error::SessionEnded.to_string(), "the session has ended");
    assert_eq!(
        Error::BadReply.to_string(),
        "malformed reply from the server"
    );
    assert!(Error::AckContended.to_string().contains("acknowledgement"));
    assert!(Error::Zk(ZkError::NoAuth)
        .to_string()
        .starts_with("ZooKeeper error"));
    assert!(Error::TooLarge {
        len: 9,
        capacity: 3
    }
    .to_string()
    .contains("9 bytes"));
    let state = Error::InvalidState.to_string();
    assert!(state.contains("current state"), "{state}");
}

#[test]
fn an_acknowledgement_needs_a_node_name_and_a_newline() {
    let ack = Acknowledgement::parse(b"n_0000000003\nhello").unwrap();
    assert_eq!(ack.node, "n_0000000003");
    assert_eq!(ack.data, b"hello");
    assert_eq!(ack.sequence().map(|s| s.value()), Some(3));
    assert!(Acknowledgement::parse(b"no newline").is_none());
    assert!(Acknowledgement::parse(b"\nempty name").is_none());
    assert!(Acknowledgement::parse(b"a/b\nslash").is_none());
    assert!(Acknowledgement::parse(b"\xff\nnot utf-8").is_none());
}

/// Answers everything the observer sends as a server holding `ack` (or no
/// acknowledgement) would.
fn serve(o: &mut Observer, ack: Option<&[u8]>) {
    while let Some(out) = o.poll_request() {
        let (id, request) = (out.id, out.request);
        let reply = match (request, ack) {
            (_, None) => Reply::Error(ZkError::NoNode),
            (herdless_core::Request::GetData { .. }, Some(raw)) => Reply::Data {
                data: raw,
                stat: Stat::default(),
            },
            (_, Some(_)) => Reply::Exists {
                stat: Stat::default(),
            },
        };
        o.handle_reply(Instant::ZERO, id, reply);
    }
}

fn notify(o: &mut Observer, kind: herdless_core::WatchKind) {
    o.handle_watch(
        Instant::ZERO,
        herdless_core::WatchEvent {
            kind,
            path: "/e/leader",
        },
    );
}

#[test]
fn an_observer_reports_the_first_read_changes_and_staleness() {
    let mut o: Observer = Observer::new("/e").unwrap();
    assert_eq!(o.ack_path(), "/e/leader");
    assert!(!o.is_known() && !o.is_stale());
    o.watch();
    // Nobody leads yet: the first read is a change all the same.
    serve(&mut o, None);
    assert!(o.is_known());
    assert_eq!(events(&mut o), vec![ObserverEvent::Changed]);
    assert!(o.leader().is_none());

    // The connection drops: stale; read again, unchanged: current.
    o.handle_session(Instant::ZERO, SessionEvent::Suspended);
    assert!(o.is_stale());
    assert_eq!(events(&mut o), vec![ObserverEvent::Stale]);
    o.handle_session(Instant::ZERO, SessionEvent::Connected { session_id: 1 });
    serve(&mut o, None);
    assert!(!o.is_stale());
    assert_eq!(events(&mut o), vec![ObserverEvent::Current]);

    // A leader appears: changed; the same again after a drop: current.
    const ALPHA: &[u8] = b"n_0000000001\nalpha";
    notify(&mut o, herdless_core::WatchKind::NodeCreated);
    serve(&mut o, Some(ALPHA));
    assert_eq!(events(&mut o), vec![ObserverEvent::Changed]);
    assert_eq!(o.leader().unwrap().data, b"alpha");
    o.handle_session(Instant::ZERO, SessionEvent::Suspended);
    o.handle_session(Instant::ZERO, SessionEvent::Connected { session_id: 1 });
    serve(&mut o, Some(ALPHA));
    assert_eq!(
        events(&mut o),
        vec![ObserverEvent::Stale, ObserverEvent::Current]
    );
    // Another leader while stale: changed, not current.
    o.handle_session(Instant::ZERO, SessionEvent::Suspended);
    o.handle_session(Instant::ZERO, SessionEvent::Connected { session_id: 1 });
    serve(&mut o, Some(b"n_0000000002\nbeta"));
    assert_eq!(
        events(&mut o),
        vec![ObserverEvent::Stale, ObserverEvent::Changed]
    );
    assert_eq!(o.leader().unwrap().data, b"beta");
}

#[test]
fn an_observer_reports_an_unreadable_acknowledgement_once_and_its_repair() {
    const GARBAGE: &[u8] = b"garbage without newline";
    let mut o: Observer = Observer::new("/e").unwrap();
    o.watch();
    serve(&mut o, Some(GARBAGE));
    assert_eq!(
        events(&mut o),
        vec![ObserverEvent::Unreadable { len: Some(23) }]
    );
    assert!(o.leader().is_none());
    // The same garbage again after a notification: nothing new.
    notify(&mut o, herdless_core::WatchKind::NodeDataChanged);
    serve(&mut o, Some(GARBAGE));
    assert!(events(&mut o).is_empty());
    // Deleted: nobody leads, a change.
    notify(&mut o, herdless_core::WatchKind::NodeDeleted);
    serve(&mut o, None);
    assert_eq!(events(&mut o), vec![ObserverEvent::Changed]);
}

/// An acknowledgement over an embedded driver's receive buffer (anyone can
/// write one) is unreadable like any other that is not an
/// acknowledgement: reported once, with no length, and nobody leads until
/// a readable one comes. It was reported as a failure, with the leader
/// read before it still given.
#[test]
fn an_observer_takes_an_acknowledgement_too_large_to_read_as_unreadable() {
    let mut o: Observer = Observer::new("/e").unwrap();
    o.watch();
    serve(&mut o, Some(b"n_0000000001\nalpha"));
    assert_eq!(events(&mut o), vec![ObserverEvent::Changed]);
    for _ in 0..2 {
        notify(&mut o, herdless_core::WatchKind::NodeDataChanged);
        let read = o.poll_request().unwrap().id;
        o.handle_reply(Instant::ZERO, read, Reply::Error(ZkError::ReplyTooLarge));
        assert!(o.leader().is_none());
    }
    assert_eq!(
        events(&mut o),
        vec![ObserverEvent::Unreadable { len: None }],
        "reported once"
    );
    notify(&mut o, herdless_core::WatchKind::NodeDataChanged);
    serve(&mut o, Some(b"n_0000000002\nbeta"));
    assert_eq!(events(&mut o), vec![ObserverEvent::Changed]);
    assert_eq!(o.leader().unwrap().data, b"beta");
}

fn answer<R: Recipe>(r: &mut R, id: herdless_core::RequestId, reply: OwnedReply) {
    reply.with_reply(|reply| r.handle_reply(Instant::ZERO, id, reply));
}

/// The name a server gives a Recipes-flavour candidate of `guid`: the
/// requested prefix, which carries the GUID, and the sequence.
fn candidate_name(guid: Guid, seq: u32) -> String {
    let mut name = String::new();
    Flavour::Recipes
        .write_prefix(NodeKind::Candidate, &guid, &mut name)
        .unwrap();
    name.push_str(&format!("{seq:010}"));
    name
}

/// Every request the recipe wants sent now, as `(id, kind, path)`.
fn sent<R: Recipe>(r: &mut R) -> Vec<(herdless_core::RequestId, &'static str, String)> {
    let mut out = Vec::new();
    while let Some(o) = r.poll_request() {
        let kind = herdless_core::sim::OwnedRequest::from_request(&o.request).kind();
        out.push((o.id, kind, o.request.path().to_owned()));
    }
    out
}

/// The kind and path of each request [`sent`] returned.
fn kinds<'a>(
    sent: &'a [(herdless_core::RequestId, &'static str, String)],
) -> Vec<(&'static str, &'a str)> {
    sent.iter().map(|(_, k, p)| (*k, p.as_str())).collect()
}

// A Recipes-flavour candidate's name is the hyphenated GUID (36 characters),
// `-n_` and a sequence suffix of at most eleven characters ("-2147483648"):
// 50 characters at most. Under "/e" its path takes 3 + 50 = 53 bytes, and
// the acknowledgement's data holds the name, a newline and the data.
const WIDEST_PATH: usize = 53;
const NAME_AND_NEWLINE: usize = 51;

#[test]
fn the_own_path_must_fit_its_widest_name_and_no_more_is_asked() {
    // Refused when made, before any campaign could be asked for.
    assert_eq!(
        Election::<{ WIDEST_PATH - 1 }>::new("/e").err(),
        Some(Error::Path(herdless_core::path::PathError::TooLong {
            needed: WIDEST_PATH,
            capacity: WIDEST_PATH - 1
        }))
    );

    // The exact fit is taken, and the candidate leads with it.
    let mut w: herdless_core::sim::World<Election<WIDEST_PATH>> = herdless_core::sim::World::new(3);
    let a = w.add_peer(Election::new("/e").unwrap());
    w.act(a, |e| e.campaign(Guid::from_random_bytes([2; 16]), b"x"))
        .unwrap();
    assert!(w.run_until_quiet(1_000));
    assert_eq!(
        w.peers[a].take_events(),
        [herdless_core::election::ElectionEvent::Leading]
    );
}

#[test]
fn the_data_may_fill_what_the_name_leaves_of_the_acknowledgement() {
    const D: usize = 64;
    let room = D - NAME_AND_NEWLINE;
    let mut big: Election<128, D> = Election::new("/e").unwrap();
    assert_eq!(
        big.campaign(Guid([1; 16]), &vec![b'z'; room + 1]),
        Err(Error::TooLarge {
            len: room + 1,
            capacity: room
        })
    );
    assert_eq!(big.state(), ElectionState::Idle);

    // The data that just fits is carried into the node and the
    // acknowledgement.
    let data = vec![b'y'; room];
    let mut w: herdless_core::sim::World<Election<128, D>> = herdless_core::sim::World::new(4);
    let a = w.add_peer(Election::new("/e").unwrap());
    w.act(a, |e| e.campaign(Guid::from_random_bytes([3; 16]), &data))
        .unwrap();
    assert!(w.run_until_quiet(1_000));
    assert_eq!(
        w.peers[a].take_events(),
        [herdless_core::election::ElectionEvent::Leading]
    );
    let ack = w.zk.node("/e/leader").unwrap();
    assert_eq!(Acknowledgement::parse(&ack.data).unwrap().data, &data[..]);
}

#[test]
fn resigning_while_idle_is_refused_and_reports_nothing() {
    let mut e: Election = Election::new("/e").unwrap();
    assert_eq!(e.resign(), Err(Error::InvalidState));
    assert_eq!(e.state(), ElectionState::Idle);
    assert!(events(&mut e).is_empty());
    assert!(e.poll_request().is_none());
    assert_eq!(e.state(), ElectionState::Idle);
}

#[test]
fn a_deadline_not_yet_reached_does_not_end_the_campaign() {
    use herdless_core::election::ElectionEvent;
    use herdless_core::Instant;
    let mut e: Election = Election::new("/e").unwrap();
    e.campaign_until(Guid([5; 16]), b"", Instant::from_millis(1_000))
        .unwrap();
    // A driver may wake the recipe early (another timer, a spurious wake).
    e.handle_timeout(Instant::from_millis(999));
    assert!(events(&mut e).is_empty());
    assert_eq!(e.state(), ElectionState::Campaigning);
    // At the deadline, with nothing sent yet, the create and its listing
    // still go, and decide (as Curator's and Kazoo's timed waits do).
    e.handle_timeout(Instant::from_millis(1_000));
    assert!(events(&mut e).is_empty());
    let first = sent(&mut e);
    assert_eq!(first.len(), 2, "{first:?}");
    let own = candidate_name(Guid([5; 16]), 1);
    answer(&mut e, first[0].0, OwnedReply::Created(format!("/e/{own}")));
    let ahead = candidate_name(Guid([9; 16]), 0);
    answer(
        &mut e,
        first[1].0,
        OwnedReply::Children(vec![ahead, own.clone()]),
    );
    let delete = sent(&mut e);
    assert_eq!(
        kinds(&delete),
        [("delete", format!("/e/{own}").as_str())],
        "someone ahead: it gives up without watching them"
    );
    answer(&mut e, delete[0].0, OwnedReply::Deleted);
    assert_eq!(events(&mut e), [ElectionEvent::TimedOut]);
    assert_eq!(e.state(), ElectionState::Idle);
}

/// A deadline that passes while the create and its listing are in flight
/// lets them decide: a vacant election is led.
#[test]
fn a_deadline_passed_during_the_create_still_leads_a_vacant_election() {
    use herdless_core::election::ElectionEvent;
    let mut e: Election = Election::new("/e").unwrap();
    e.handle_session(Instant::ZERO, SessionEvent::Connected { session_id: 7 });
    e.campaign_until(Guid([4; 16]), b"", Instant::from_millis(1))
        .unwrap();
    let first = sent(&mut e);
    e.handle_timeout(Instant::from_millis(5));
    assert_eq!(e.poll_timeout(), None, "no timer while they are awaited");
    let name = candidate_name(Guid([4; 16]), 0);
    answer(
        &mut e,
        first[0].0,
        OwnedReply::Created(format!("/e/{name}")),
    );
    answer(&mut e, first[1].0, OwnedReply::Children(vec![name.clone()]));
    let confirm = sent(&mut e);
    assert_eq!(confirm.len(), 1, "{confirm:?}");
    e.handle_timeout(Instant::from_millis(6));
    let stat = Stat {
        ephemeral_owner: 7,
        ..Stat::default()
    };
    answer(
        &mut e,
        confirm[0].0,
        OwnedReply::Data(name.into_bytes(), stat),
    );
    assert_eq!(events(&mut e), [ElectionEvent::Leading]);
    assert_eq!(e.state(), ElectionState::Leading);
    assert_eq!(e.poll_timeout(), None);
}

/// The candidate's confirmed own node, by hand: create and listing
/// answered, the lowest, confirmed on session 7; the acknowledgement's
/// create is queued, not yet polled.
fn confirmed(e: &mut Election) -> String {
    e.handle_session(Instant::ZERO, SessionEvent::Connected { session_id: 7 });
    e.campaign(Guid([4; 16]), b"data").unwrap();
    let first = sent(e);
    assert_eq!(first.len(), 2, "{first:?}");
    let name = candidate_name(Guid([4; 16]), 0);
    let own = format!("/e/{name}");
    answer(e, first[0].0, OwnedReply::Created(own.clone()));
    answer(e, first[1].0, OwnedReply::Children(vec![name.to_owned()]));
    let confirm = sent(e);
    assert_eq!(confirm.len(), 1);
    assert_eq!(
        (confirm[0].1, confirm[0].2.as_str()),
        ("getData", own.as_str())
    );
    let stat = Stat {
        ephemeral_owner: 7,
        ..Stat::default()
    };
    answer(e, confirm[0].0, OwnedReply::Data(b"data".to_vec(), stat));
    own
}

/// An answer to the acknowledgement's own request that says the connection
/// or the session is gone reaches the lock's machine as any other answer
/// does: the leader is suspended at once (CURATOR-460), or has lost.
#[test]
fn a_lost_connection_or_session_answered_to_the_acknowledgement_reaches_the_leader() {
    for (answered, told, state) in [
        (
            ZkError::ConnectionLoss,
            ElectionEvent::Suspended,
            ElectionState::Leading,
        ),
        (
            ZkError::SessionExpired,
            ElectionEvent::Lost,
            ElectionState::Idle,
        ),
    ] {
        let mut e: Election = Election::new("/e").unwrap();
        confirmed(&mut e);
        assert_eq!(events(&mut e), [ElectionEvent::Leading]);
        let ack = sent(&mut e);
        assert_eq!(kinds(&ack), [("create", "/e/leader")]);
        answer(&mut e, ack[0].0, OwnedReply::Error(answered));
        assert_eq!(events(&mut e), [told], "{answered:?}");
        assert!(!e.is_leading());
        assert_eq!(e.state(), state);
        assert!(sent(&mut e).is_empty(), "{answered:?}");
    }
}

/// Resigning between the confirmation and the acknowledgement's send: the
/// acknowledgement is never written, only deleted in case.
#[test]
fn resigning_before_the_acknowledgement_is_sent_never_writes_it() {
    let mut e: Election = Election::new("/e").unwrap();
    let own = confirmed(&mut e);
    e.resign().unwrap();
    let after: Vec<(&str, String)> = sent(&mut e).into_iter().map(|(_, k, p)| (k, p)).collect();
    assert_eq!(
        after,
        [("delete", "/e/leader".to_owned()), ("delete", own)],
        "resigning wrote the acknowledgement"
    );
}

/// A confirmed candidate whose acknowledgement's create was answered: it
/// leads and watches its acknowledgement. Returns its own node's path and
/// the id of that read.
fn acknowledged(e: &mut Election) -> (String, herdless_core::RequestId) {
    let own = confirmed(e);
    let ack = sent(e);
    answer(e, ack[0].0, OwnedReply::Created("/e/leader".into()));
    assert_eq!(events(e), [ElectionEvent::Leading]);
    let read = sent(e);
    assert_eq!(kinds(&read), [("getData", "/e/leader")]);
    (own, read[0].0)
}

/// A confirmed candidate whose acknowledgement's create met one already
/// there, read and answered `reply`: what it sends next.
fn meets_an_acknowledgement(
    e: &mut Election,
    reply: Reply<'_>,
) -> Vec<(herdless_core::RequestId, &'static str, String)> {
    confirmed(e);
    let ack = sent(e);
    assert_eq!(kinds(&ack), [("create", "/e/leader")]);
    answer(e, ack[0].0, OwnedReply::Error(ZkError::NodeExists));
    ack_read_answered(e, reply)
}

/// The one request sent now, a read of the acknowledgement, answered
/// `reply`: what the candidate sends next.
fn ack_read_answered(
    e: &mut Election,
    reply: Reply<'_>,
) -> Vec<(herdless_core::RequestId, &'static str, String)> {
    let read = sent(e);
    assert_eq!(kinds(&read), [("getData", "/e/leader")]);
    e.handle_reply(Instant::ZERO, read[0].0, reply);
    sent(e)
}

/// An acknowledgement over an embedded driver's receive buffer (anyone can
/// write one) cannot say whom it names, so it is none this candidate
/// wrote: the leader replaces it, as one naming another, and leads. It gave
/// up leadership instead, and so did every embedded leader after it for as
/// long as the acknowledgement stood.
#[test]
fn a_leader_replaces_an_acknowledgement_too_large_to_read() {
    let mut e: Election = Election::new("/e").unwrap();
    let replace = meets_an_acknowledgement(&mut e, Reply::Error(ZkError::ReplyTooLarge));
    assert_eq!(
        kinds(&replace),
        [("delete", "/e/leader"), ("create", "/e/leader")]
    );
    answer(&mut e, replace[0].0, OwnedReply::Deleted);
    answer(
        &mut e,
        replace[1].0,
        OwnedReply::Created("/e/leader".into()),
    );
    assert_eq!(events(&mut e), [ElectionEvent::Leading]);
    assert!(e.is_leading());
    assert_eq!(kinds(&sent(&mut e)), [("getData", "/e/leader")], "watched");
}

/// Resigning while that replacement is in flight still deletes the
/// candidate's own acknowledgement, which the create in flight writes: the
/// replacement's delete, sent before it, cannot stand for that one. Sent
/// as the delete resigning sends, it did, and the acknowledgement stayed
/// (found by the simulator, on lagging servers).
#[test]
fn resigning_during_the_replacement_of_one_too_large_deletes_its_own() {
    let mut e: Election = Election::new("/e").unwrap();
    let replace = meets_an_acknowledgement(&mut e, Reply::Error(ZkError::ReplyTooLarge));
    assert_eq!(replace.len(), 2);
    e.resign().unwrap();
    let name = candidate_name(Guid([4; 16]), 0);
    assert_eq!(
        kinds(&sent(&mut e)),
        [
            ("delete", "/e/leader"),
            ("delete", format!("/e/{name}").as_str())
        ]
    );
}

/// One too large to read again and again (its own data over the buffer,
/// say) is replaced a bounded number of times, then given up on, as any
/// acknowledgement contended.
#[test]
fn an_acknowledgement_too_large_every_time_is_given_up_on() {
    let mut e: Election = Election::new("/e").unwrap();
    let mut next = meets_an_acknowledgement(&mut e, Reply::Error(ZkError::ReplyTooLarge));
    let mut replaced = 0;
    while kinds(&next) == [("delete", "/e/leader"), ("create", "/e/leader")] {
        replaced += 1;
        assert!(replaced <= 8, "replaced without end");
        answer(&mut e, next[0].0, OwnedReply::Deleted);
        answer(&mut e, next[1].0, OwnedReply::Error(ZkError::NodeExists));
        next = ack_read_answered(&mut e, Reply::Error(ZkError::ReplyTooLarge));
    }
    assert_eq!(replaced, 8);
    assert!(!e.is_leading());
    assert_eq!(
        events(&mut e),
        [ElectionEvent::Leading, ElectionEvent::Lost]
    );
}

/// The candidate's own acknowledgement, written and answered, then read
/// as too large (its data over its own receive buffer, or overwritten so
/// by someone): kept, as an acknowledgement once written is kept, best
/// effort; who leads does not depend on it. Replacing it would only write
/// it again, too large again, until leadership was given up.
#[test]
fn a_leaders_own_acknowledgement_read_as_too_large_is_kept() {
    let mut e: Election = Election::new("/e").unwrap();
    let (_, read) = acknowledged(&mut e);
    e.handle_reply(Instant::ZERO, read, Reply::Error(ZkError::ReplyTooLarge));
    assert!(sent(&mut e).is_empty());
    assert!(events(&mut e).is_empty());
    assert!(e.is_leading());
}

/// An acknowledged leader whose node someone deleted: `Lost`, and the
/// acknowledgement, which may still name it, read behind a no-op write
/// (its create's answer may have been lost, and a server behind it would
/// not show it yet), the write answered. Returns the own node's path and
/// the read's id.
fn lost_with_its_acknowledgement_in_question(
    e: &mut Election,
) -> (String, herdless_core::RequestId) {
    let (own, _) = acknowledged(e);
    e.handle_watch(
        Instant::ZERO,
        herdless_core::WatchEvent {
            kind: herdless_core::WatchKind::NodeDeleted,
            path: &own,
        },
    );
    assert_eq!(events(e), [ElectionEvent::Lost]);
    let clear = sent(e);
    assert_eq!(kinds(&clear), [("check", "/e"), ("getData", "/e/leader")]);
    e.handle_reply(Instant::ZERO, clear[0].0, Reply::Checked);
    (own, clear[1].0)
}

/// Leadership lost while the acknowledgement may still name the candidate
/// (its own node deleted by someone), and that acknowledgement is over the
/// receive buffer: whether it is this session's is asked (`exists`), and
/// only then is it deleted, at the version seen. Another session's is left
/// to it. It was left standing either way.
#[test]
fn an_acknowledgement_too_large_to_read_after_a_loss_is_deleted_only_if_this_sessions() {
    for (owner, deleted) in [(7, true), (9, false)] {
        let mut e: Election = Election::new("/e").unwrap();
        let (_, read) = lost_with_its_acknowledgement_in_question(&mut e);
        e.handle_reply(Instant::ZERO, read, Reply::Error(ZkError::ReplyTooLarge));
        let ask = sent(&mut e);
        assert_eq!(kinds(&ask), [("exists", "/e/leader")]);
        let stat = Stat {
            ephemeral_owner: owner,
            version: 3,
            ..Stat::default()
        };
        e.handle_reply(Instant::ZERO, ask[0].0, Reply::Exists { stat });
        match e.poll_request().map(|o| (o.id, o.request)) {
            Some((id, Request::Delete { path, version })) if deleted => {
                assert_eq!((path, version), ("/e/leader", Version::Exactly(3)));
                answer(&mut e, id, OwnedReply::Deleted);
            }
            None if !deleted => {}
            other => panic!("owner {owner}: {other:?}"),
        }
        assert_eq!(e.state(), ElectionState::Idle, "owner {owner}");
        assert!(events(&mut e).is_empty());
    }
}

/// After a loss, the acknowledgement read as this candidate's is deleted
/// at the version read. Written again in between (the delete answered
/// `BadVersion`), it is read again rather than deleted blind, and left to
/// the writer that now names someone else.
#[test]
fn an_acknowledgement_written_again_after_a_loss_is_read_again_before_its_delete() {
    let mut e: Election = Election::new("/e").unwrap();
    let (own, read) = lost_with_its_acknowledgement_in_question(&mut e);
    let name = own.rsplit('/').next().unwrap();
    let ours = format!("{name}\ndata");
    let stat = Stat {
        version: 2,
        ..Stat::default()
    };
    let data = ours.as_bytes();
    e.handle_reply(Instant::ZERO, read, Reply::Data { data, stat });
    let (id, path, version) = match e.poll_request() {
        Some(out) => match out.request {
            Request::Delete { path, version } => (out.id, path.to_owned(), version),
            other => panic!("{other:?}"),
        },
        None => panic!("no delete"),
    };
    assert_eq!((path.as_str(), version), ("/e/leader", Version::Exactly(2)));
    e.handle_reply(Instant::ZERO, id, Reply::Error(ZkError::BadVersion));
    let again = sent(&mut e);
    assert_eq!(kinds(&again), [("getData", "/e/leader")]);
    let theirs: &[u8] = b"someone-n_0000000009\nx";
    let stat = Stat::default();
    e.handle_reply(
        Instant::ZERO,
        again[0].0,
        Reply::Data { data: theirs, stat },
    );
    assert!(sent(&mut e).is_empty());
    assert_eq!(e.state(), ElectionState::Idle);
    assert!(events(&mut e).is_empty());
}

#[test]
fn an_observer_that_does_not_watch_stays_silent() {
    let mut o: Observer = Observer::new("/e").unwrap();
    o.handle_session(Instant::ZERO, SessionEvent::Suspended);
    assert!(!o.is_stale(), "stale without ever watching");
    o.handle_session(Instant::ZERO, SessionEvent::Connected { session_id: 1 });
    o.handle_session(Instant::ZERO, SessionEvent::Expired);
    o.handle_session(Instant::ZERO, SessionEvent::Connected { session_id: 2 });
    notify(&mut o, herdless_core::WatchKind::NodeCreated);
    assert!(events(&mut o).is_empty());
    assert!(
        sent(&mut o).is_empty(),
        "reads without being asked to watch"
    );
}

#[test]
fn an_observer_ignores_notifications_of_other_paths() {
    let mut o: Observer = Observer::new("/e").unwrap();
    o.watch();
    serve(&mut o, Some(b"n_0000000001\nalpha"));
    assert_eq!(events(&mut o), [ObserverEvent::Changed]);
    o.handle_watch(
        Instant::ZERO,
        herdless_core::WatchEvent {
            kind: herdless_core::WatchKind::NodeDeleted,
            path: "/e/n_0000000001",
        },
    );
    assert!(sent(&mut o).is_empty(), "read again for another node");
}

#[test]
fn an_observer_reports_one_stale_per_outage_until_read_again() {
    let mut o: Observer = Observer::new("/e").unwrap();
    o.watch();
    serve(&mut o, None);
    assert_eq!(events(&mut o), [ObserverEvent::Changed]);
    o.handle_session(Instant::ZERO, SessionEvent::Suspended);
    o.handle_session(Instant::ZERO, SessionEvent::Connected { session_id: 1 });
    let read = sent(&mut o);
    assert_eq!(read.len(), 1);
    // Lost again before the read is answered: still the same staleness.
    o.handle_session(Instant::ZERO, SessionEvent::Suspended);
    assert_eq!(events(&mut o), [ObserverEvent::Stale]);
    o.handle_session(Instant::ZERO, SessionEvent::Connected { session_id: 1 });
    serve(&mut o, None);
    assert_eq!(events(&mut o), [ObserverEvent::Current]);
}

#[test]
fn an_observer_reports_a_refused_read_and_rides_out_an_expired_session() {
    let mut o: Observer = Observer::new("/e").unwrap();
    o.watch();
    let read = sent(&mut o);
    answer(&mut o, read[0].0, OwnedReply::Error(ZkError::NoAuth));
    assert_eq!(
        events(&mut o),
        [ObserverEvent::Failed(herdless_core::Error::Zk(
            ZkError::NoAuth
        ))]
    );
    assert!(!o.is_stale());
    // Still connected: the next notification is read at once.
    notify(&mut o, herdless_core::WatchKind::NodeDataChanged);
    let read = sent(&mut o);
    assert_eq!(read.len(), 1, "{read:?}");

    // The session is gone: stale, and read again on the next session.
    answer(
        &mut o,
        read[0].0,
        OwnedReply::Error(ZkError::SessionExpired),
    );
    assert_eq!(events(&mut o), [ObserverEvent::Stale]);
    assert!(sent(&mut o).is_empty(), "sent before Connected");
    o.handle_session(Instant::ZERO, SessionEvent::Connected { session_id: 2 });
    serve(&mut o, Some(b"n_0000000004\ndelta"));
    assert_eq!(events(&mut o), [ObserverEvent::Changed]);
    assert_eq!(o.leader().unwrap().data, b"delta");
}

#[test]
fn an_observer_prints_its_path() {
    let o: Observer = Observer::new("/app/e").unwrap();
    let debug = format!("{o:?}");
    assert!(
        debug.contains("Observer") && debug.contains("/app/e/leader"),
        "{debug}"
    );
}

/// `watch()` while the connection is down: the first read goes out once it
/// is back.
#[test]
fn an_observer_told_to_watch_while_disconnected_reads_on_reconnect() {
    let mut o: Observer = Observer::new("/e").unwrap();
    o.handle_session(Instant::ZERO, SessionEvent::Suspended);
    o.watch();
    assert!(sent(&mut o).is_empty(), "sent while disconnected");
    o.handle_session(Instant::ZERO, SessionEvent::Connected { session_id: 1 });
    serve(&mut o, Some(b"n_0000000002\nbeta"));
    assert_eq!(events(&mut o), [ObserverEvent::Changed]);
    assert_eq!(o.leader().unwrap().data, b"beta");
}

/// The create answered `NoNode` (the directory is missing), and the
/// connection lost before the retry was sent: nothing can have been created,
/// so after the reconnect the candidate creates again at once instead of
/// searching for a node by its GUID.
#[test]
fn a_create_never_sent_again_is_not_searched_for_after_a_reconnect() {
    let mut e: Election = Election::new("/e").unwrap();
    e.handle_session(Instant::ZERO, SessionEvent::Connected { session_id: 7 });
    e.campaign(Guid([4; 16]), b"").unwrap();
    let first = sent(&mut e);
    assert_eq!(first[0].1, "create");
    answer(&mut e, first[0].0, OwnedReply::Error(ZkError::NoNode));
    e.handle_session(Instant::ZERO, SessionEvent::Suspended);
    e.handle_session(Instant::ZERO, SessionEvent::Connected { session_id: 7 });
    let again = sent(&mut e);
    assert_eq!(
        again.first().map(|(_, k, p)| (*k, p.starts_with("/e/"))),
        Some(("create", true)),
        "{again:?}"
    );
}

/// The server names a created node with the prefix it was asked for, which
/// carries the GUID: a created name without it is a malformed answer, not
/// the candidate's node (the lock checks the same).
#[test]
fn a_created_node_without_the_candidates_guid_is_a_bad_reply() {
    use herdless_core::election::ElectionEvent;
    let mut e: Election = Election::new("/e").unwrap();
    e.campaign(Guid([4; 16]), b"data").unwrap();
    let first = sent(&mut e);
    answer(
        &mut e,
        first[0].0,
        OwnedReply::Created("/e/someone-else-n_0000000000".to_owned()),
    );
    // Its create may have been applied under the real name: it is looked
    // for by GUID before the campaign fails.
    let find = sent(&mut e);
    assert_eq!(kinds(&find), [("check", "/e"), ("getChildren", "/e")]);
    answer(&mut e, find[1].0, OwnedReply::Children(vec![]));
    assert_eq!(
        events(&mut e),
        [ElectionEvent::Failed(herdless_core::Error::BadReply)]
    );
    assert_eq!(e.state(), ElectionState::Idle);
}

/// A create whose answer was lost, looked for in a directory that is gone
/// by then: the listing's `NoNode` says nothing is left to find, so the
/// candidate volunteers again rather than wait for an answer that will not
/// come.
#[test]
fn a_lost_create_whose_directory_is_gone_is_made_again() {
    let mut e: Election = Election::new("/e").unwrap();
    e.campaign(Guid([4; 16]), b"data").unwrap();
    assert_eq!(sent(&mut e).len(), 2, "create and listing");
    e.handle_session(Instant::ZERO, SessionEvent::Suspended);
    e.handle_session(Instant::ZERO, SessionEvent::Connected { session_id: 7 });
    let find = sent(&mut e);
    // The search goes behind a no-op write: the server now may not have
    // applied the lost create yet.
    assert_eq!(kinds(&find), [("check", "/e"), ("getChildren", "/e")]);
    answer(&mut e, find[0].0, OwnedReply::Error(ZkError::NoNode));
    answer(&mut e, find[1].0, OwnedReply::Error(ZkError::NoNode));
    let again = sent(&mut e);
    assert_eq!(
        again.iter().map(|(_, k, _)| *k).collect::<Vec<_>>(),
        ["create", "getChildren"]
    );
    assert!(events(&mut e).is_empty());
    assert_eq!(e.state(), ElectionState::Campaigning);
}

/// The own node and its directory are gone (an operator clearing the
/// election) between the create's answer and the listing's: the listing's
/// `NoNode` sends the candidate back in line with a new node, instead of
/// leaving it waiting on nothing.
#[test]
fn a_listing_without_its_directory_after_the_create_volunteers_again() {
    let mut e: Election = Election::new("/e").unwrap();
    e.handle_session(Instant::ZERO, SessionEvent::Connected { session_id: 7 });
    e.campaign(Guid([4; 16]), b"data").unwrap();
    let first = sent(&mut e);
    assert_eq!(first.len(), 2, "{first:?}");
    let name = candidate_name(Guid([4; 16]), 0);
    answer(
        &mut e,
        first[0].0,
        OwnedReply::Created(format!("/e/{name}")),
    );
    answer(&mut e, first[1].0, OwnedReply::Error(ZkError::NoNode));
    let again = sent(&mut e);
    assert_eq!(
        again.iter().map(|(_, k, _)| *k).collect::<Vec<_>>(),
        ["create", "getChildren"],
        "{again:?}"
    );
    assert!(
        !again[0].2.contains(&name[..name.len() - 10]),
        "a new node, under a new GUID"
    );
    assert!(events(&mut e).is_empty());
    assert_eq!(e.state(), ElectionState::Campaigning);
}

/// A candidate second in line, its requests in flight: the create and the
/// listing answered, then waiting on its predecessor with its own node read
/// in the same flight. Returns the ids of the predecessor's and the own
/// node's reads.
fn second_in_line(e: &mut Election) -> (herdless_core::RequestId, herdless_core::RequestId) {
    let ahead = candidate_name(Guid([9; 16]), 0);
    let own = candidate_name(Guid([4; 16]), 1);
    waiting_behind(e, &ahead, vec![ahead.clone(), own])
}

/// A candidate of GUID 4 and sequence 1, its requests in flight, whose
/// listing of `names` puts `ahead` next before it: waiting on `ahead`, its
/// own node read in the same flight. Returns the ids of the
/// predecessor's and the own node's reads.
fn waiting_behind(
    e: &mut Election,
    ahead: &str,
    names: Vec<String>,
) -> (herdless_core::RequestId, herdless_core::RequestId) {
    e.handle_session(Instant::ZERO, SessionEvent::Connected { session_id: 7 });
    e.campaign(Guid([4; 16]), b"data").unwrap();
    let first = sent(e);
    let own = candidate_name(Guid([4; 16]), 1);
    answer(e, first[0].0, OwnedReply::Created(format!("/e/{own}")));
    answer(e, first[1].0, OwnedReply::Children(names));
    let waiting = sent(e);
    assert_eq!(
        kinds(&waiting),
        [
            ("getData", format!("/e/{own}").as_str()),
            ("getData", format!("/e/{ahead}").as_str())
        ],
        "the own node (read from its create's answer on) and the predecessor, in one flight"
    );
    (waiting[1].0, waiting[0].0)
}

/// The hand-off takes no round trip: the own node was read (owned by this
/// session, watched) while waiting, with no loss since, so the predecessor's
/// deletion is `Leading` at once, with the acknowledgement sent in the same
/// instant (its answer changes nothing). The same when the predecessor's
/// data is larger than an embedded driver's receive buffer: its read,
/// answered `ReplyTooLarge`, still shows the node there and set the watch
/// (failing there left an embedded candidate unable to wait behind it).
#[test]
fn a_confirmed_waiter_writes_the_acknowledgement_on_its_predecessors_deletion() {
    for ahead_read in [
        OwnedReply::Data(Vec::new(), Stat::default()),
        OwnedReply::Error(ZkError::ReplyTooLarge),
    ] {
        let mut e: Election = Election::new("/e").unwrap();
        let (predecessor, own) = second_in_line(&mut e);
        let stat = Stat {
            ephemeral_owner: 7,
            ..Stat::default()
        };
        answer(&mut e, predecessor, ahead_read);
        answer(&mut e, own, OwnedReply::Data(b"data".to_vec(), stat));
        assert!(matches!(
            events(&mut e)[..],
            [ElectionEvent::Following { .. }]
        ));
        let ahead = format!("/e/{}", candidate_name(Guid([9; 16]), 0));
        e.handle_watch(
            Instant::ZERO,
            herdless_core::WatchEvent {
                kind: herdless_core::WatchKind::NodeDeleted,
                path: &ahead,
            },
        );
        let ack = sent(&mut e);
        assert_eq!(kinds(&ack), [("create", "/e/leader")]);
        assert_eq!(events(&mut e), [ElectionEvent::Leading]);
        answer(&mut e, ack[0].0, OwnedReply::Created("/e/leader".into()));
        assert_eq!(events(&mut e), []);
        assert!(e.is_leading());
    }
}

/// The same deletion before the own node's read was answered: the owner is
/// not known yet, so the candidate waits for that read (already in flight,
/// not sent twice) before it leads and acknowledges.
#[test]
fn an_unconfirmed_waiter_waits_for_its_nodes_read_before_leading() {
    let mut e: Election = Election::new("/e").unwrap();
    let (predecessor, own) = second_in_line(&mut e);
    answer(
        &mut e,
        predecessor,
        OwnedReply::Data(Vec::new(), Stat::default()),
    );
    let ahead = format!("/e/{}", candidate_name(Guid([9; 16]), 0));
    e.handle_watch(
        Instant::ZERO,
        herdless_core::WatchEvent {
            kind: herdless_core::WatchKind::NodeDeleted,
            path: &ahead,
        },
    );
    assert!(sent(&mut e).is_empty(), "the own node's read is in flight");
    assert!(!events(&mut e).contains(&ElectionEvent::Leading));
    let stat = Stat {
        ephemeral_owner: 7,
        ..Stat::default()
    };
    answer(&mut e, own, OwnedReply::Data(b"data".to_vec(), stat));
    let ack = sent(&mut e);
    assert_eq!(kinds(&ack), [("create", "/e/leader")]);
    assert_eq!(events(&mut e), [ElectionEvent::Leading]);
}

/// A candidate takes its directory's listing in parts (as the embedded
/// driver hands over a directory larger than its receive buffer) and, as
/// with the listing whole, decides only once the last part came: here, to
/// watch the candidate ahead.
#[test]
fn a_listing_in_parts_decides_only_at_its_last_part() {
    use herdless_core::Children;
    let ahead = candidate_name(Guid([9; 16]), 0);
    let own = candidate_name(Guid([4; 16]), 1);
    for cut in 0..=2 {
        let mut e: Election = Election::new("/e").unwrap();
        assert!(e.takes_listing_in_parts());
        e.handle_session(Instant::ZERO, SessionEvent::Connected { session_id: 7 });
        e.campaign(Guid([4; 16]), b"data").unwrap();
        let first = sent(&mut e);
        assert_eq!(first.len(), 2, "{first:?}");
        answer(&mut e, first[0].0, OwnedReply::Created(format!("/e/{own}")));
        sent(&mut e);
        let names = [own.as_str(), ahead.as_str()];
        let mut part = |names: &[&str], last| {
            e.handle_listing_part(Instant::ZERO, first[1].0, Children::new(&names), last);
        };
        part(&names[..cut], false);
        part(&[], false);
        assert!(sent(&mut e).is_empty(), "nothing before the last part");
        e.handle_listing_part(
            Instant::ZERO,
            first[1].0,
            Children::new(&&names[cut..]),
            true,
        );
        let after = sent(&mut e);
        assert!(
            after
                .iter()
                .any(|(_, _, path)| *path == format!("/e/{ahead}")),
            "cut at {cut}: {after:?}"
        );
    }
}

/// A search for a lost create whose listing is cut off by a lost
/// connection after the part naming the own node (a server dying while it
/// sends a listing larger than the embedded driver's receive buffer) has
/// found nothing: the search starts over, and the resignation asked for
/// meanwhile deletes the node it finds. Adopting the node from the part
/// read made the resigning candidate lead, found by the simulator's
/// listings cut in parts (seed 210).
#[test]
fn a_search_cut_off_after_the_part_naming_the_own_node_starts_over() {
    use herdless_core::Children;
    let guid = Guid([4; 16]);
    let own = candidate_name(guid, 0);
    let search = [("check", "/e"), ("getChildren", "/e")];
    let mut e: Election = Election::new("/e").unwrap();
    e.handle_session(Instant::ZERO, SessionEvent::Connected { session_id: 7 });
    e.campaign(guid, b"data").unwrap();
    sent(&mut e);
    e.handle_session(Instant::ZERO, SessionEvent::Suspended);
    e.resign().unwrap();
    e.handle_session(Instant::ZERO, SessionEvent::Connected { session_id: 7 });
    let find = sent(&mut e);
    assert_eq!(kinds(&find), search);
    answer(&mut e, find[0].0, OwnedReply::Checked);
    let names = [own.as_str()];
    e.handle_listing_part(Instant::ZERO, find[1].0, Children::new(&&names[..]), false);
    assert_eq!(e.own_node(), None, "adopted before the listing ended");
    e.handle_session(Instant::ZERO, SessionEvent::Suspended);
    e.handle_session(Instant::ZERO, SessionEvent::Connected { session_id: 7 });
    let find = sent(&mut e);
    assert_eq!(kinds(&find), search);
    answer(&mut e, find[0].0, OwnedReply::Checked);
    e.handle_listing_part(Instant::ZERO, find[1].0, Children::new(&&names[..]), true);
    let delete = sent(&mut e);
    assert_eq!(kinds(&delete), [("delete", format!("/e/{own}").as_str())]);
    answer(&mut e, delete[0].0, OwnedReply::Deleted);
    assert_eq!(events(&mut e), [ElectionEvent::Resigned]);
    assert_eq!(e.state(), ElectionState::Idle);
}

/// A search for a lost create whose listing is refused every time ends in
/// the failure after eight more searches, as the lock's does, rather than
/// going on for ever at the server's pace with nothing reported.
#[test]
fn a_search_refused_again_and_again_is_given_up_after_eight_more() {
    let mut e: Election = Election::new("/e").unwrap();
    e.campaign(Guid([4; 16]), b"data").unwrap();
    let first = sent(&mut e);
    answer(
        &mut e,
        first[0].0,
        OwnedReply::Error(ZkError::ReplyTooLarge),
    );
    answer(&mut e, first[1].0, OwnedReply::Error(ZkError::NoAuth));
    let mut searches = 0;
    loop {
        let find = sent(&mut e);
        if find.is_empty() {
            break;
        }
        assert_eq!(
            find.iter().map(|(_, k, _)| *k).collect::<Vec<_>>(),
            ["check", "getChildren"]
        );
        assert!(events(&mut e).is_empty(), "reported early");
        searches += 1;
        assert!(searches <= 9, "searched for ever");
        answer(&mut e, find[0].0, OwnedReply::Checked);
        answer(&mut e, find[1].0, OwnedReply::Error(ZkError::NoAuth));
    }
    assert_eq!(searches, 1 + 8);
    assert_eq!(
        events(&mut e),
        [ElectionEvent::Failed(Error::Zk(ZkError::NoAuth))]
    );
    assert_eq!(e.state(), ElectionState::Idle);
}

/// A node another client named by hand with the own node's sequence (a
/// server never gives two children one) counts as ahead, wherever the
/// listing puts it: the candidate follows it rather than lead beside a
/// library that may sort it first.
#[test]
fn a_candidate_follows_a_node_named_by_hand_with_its_own_sequence() {
    let own = candidate_name(Guid([4; 16]), 1);
    let tie = candidate_name(Guid([9; 16]), 1);
    for listing in [
        vec![own.clone(), tie.clone()],
        vec![tie.clone(), own.clone()],
    ] {
        let mut e: Election = Election::new("/e").unwrap();
        let (ahead_read, own_read) = waiting_behind(&mut e, &tie, listing.clone());
        let stat = Stat {
            ephemeral_owner: 7,
            ..Stat::default()
        };
        answer(
            &mut e,
            ahead_read,
            OwnedReply::Data(Vec::new(), Stat::default()),
        );
        answer(&mut e, own_read, OwnedReply::Data(b"data".to_vec(), stat));
        assert!(
            matches!(events(&mut e)[..], [ElectionEvent::Following { .. }]),
            "{listing:?}"
        );
        assert!(!e.is_leading());
    }
}
