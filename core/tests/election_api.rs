//! The election's accessors, errors and observer, driven by hand: what an
//! application reads off a candidate or an observer, and the observer's
//! report of changes, staleness and unreadable acknowledgements.

use herdless_core::election::{
    Acknowledgement, Election, ElectionState, Error, Observer, ObserverEvent,
};
use herdless_core::naming::{Flavour, Guid};
use herdless_core::{Recipe, Reply, SessionEvent, Stat, ZkError};

fn events<R: Recipe>(r: &mut R) -> Vec<R::Event> {
    std::iter::from_fn(|| r.poll_event()).collect()
}

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
    assert_eq!(Error::NoSession.to_string(), "the session has ended");
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
    let state = Error::InvalidState {
        state: ElectionState::Idle,
    }
    .to_string();
    assert!(state.contains("Idle"), "{state}");
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
        o.handle_reply(id, reply);
    }
}

fn notify(o: &mut Observer, kind: herdless_core::WatchKind) {
    o.handle_watch(herdless_core::WatchEvent {
        kind,
        path: "/e/leader",
    });
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
    o.handle_session(SessionEvent::Suspended);
    assert!(o.is_stale());
    assert_eq!(events(&mut o), vec![ObserverEvent::Stale]);
    o.handle_session(SessionEvent::Connected { session_id: 1 });
    serve(&mut o, None);
    assert!(!o.is_stale());
    assert_eq!(events(&mut o), vec![ObserverEvent::Current]);

    // A leader appears: changed; the same again after a drop: current.
    const ALPHA: &[u8] = b"n_0000000001\nalpha";
    notify(&mut o, herdless_core::WatchKind::NodeCreated);
    serve(&mut o, Some(ALPHA));
    assert_eq!(events(&mut o), vec![ObserverEvent::Changed]);
    assert_eq!(o.leader().unwrap().data, b"alpha");
    o.handle_session(SessionEvent::Suspended);
    o.handle_session(SessionEvent::Connected { session_id: 1 });
    serve(&mut o, Some(ALPHA));
    assert_eq!(
        events(&mut o),
        vec![ObserverEvent::Stale, ObserverEvent::Current]
    );
    // Another leader while stale: changed, not current.
    o.handle_session(SessionEvent::Suspended);
    o.handle_session(SessionEvent::Connected { session_id: 1 });
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
    assert_eq!(events(&mut o), vec![ObserverEvent::Unreadable { len: 23 }]);
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
