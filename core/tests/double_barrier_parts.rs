//! A double barrier's listing taken in parts, as herdless-embassy hands
//! over one larger than its receive buffer: the count, the own node and
//! the lowest and highest names are gathered across the parts, and only
//! the last part decides; a listing cut short counts for nothing.

mod support;

use herdless_core::double_barrier::{DoubleBarrier, DoubleBarrierEvent};
use herdless_core::{Children, Instant, Recipe, Reply, RequestId, SessionEvent, Stat, ZkError};
use support::by_hand::{drain, events, texts};

const NOW: Instant = Instant::ZERO;
const SESSION: i64 = 0x51;

fn part(p: &mut DoubleBarrier, id: RequestId, names: &[&str], last: bool) {
    p.handle_listing_part(NOW, id, Children::new(&names), last);
}

/// The connection lost mid-listing, and the same session back (on another
/// server): the listing is asked again. Returns its id.
fn listed_again(p: &mut DoubleBarrier) -> RequestId {
    p.handle_session(NOW, SessionEvent::Suspended);
    p.handle_session(
        NOW,
        SessionEvent::Connected {
            session_id: SESSION,
        },
    );
    let sent = drain(p);
    sent.iter()
        .find(|(_, text)| text == "children /b watch=false")
        .unwrap_or_else(|| panic!("not listed again: {sent:?}"))
        .0
}

/// Process `me` of `/b`, connected, with its enter's flight answered up to
/// the listing: its node created (czxid 10) and `ready` missing. Returns
/// the listing's id.
fn entering(me: &str, count: u32) -> (DoubleBarrier, RequestId) {
    let mut p: DoubleBarrier = DoubleBarrier::new("/b", me).unwrap();
    assert!(p.takes_listing_in_parts());
    p.handle_session(
        NOW,
        SessionEvent::Connected {
            session_id: SESSION,
        },
    );
    p.enter(count).unwrap();
    let own = format!("/b/{me}");
    let sent = drain(&mut p);
    assert_eq!(
        texts(&sent),
        [
            format!("create {own} Ephemeral").as_str(),
            &format!("exists {own} watch=false"),
            "exists /b/ready watch=true",
            "children /b watch=false",
        ]
    );
    let stat = Stat {
        czxid: 10,
        ephemeral_owner: SESSION,
        ..Stat::default()
    };
    p.handle_reply(NOW, sent[0].0, Reply::Created { path: &own });
    p.handle_reply(NOW, sent[1].0, Reply::Exists { stat });
    p.handle_reply(NOW, sent[2].0, Reply::Error(ZkError::NoNode));
    (p, sent[3].0)
}

/// Process `me`, inside the barrier with the others, its leave's listing
/// sent. Returns that listing's id.
fn leaving(me: &str) -> (DoubleBarrier, RequestId) {
    let (mut p, list) = entering(me, 1);
    part(&mut p, list, &[me], true);
    let sent = drain(&mut p);
    assert_eq!(texts(&sent), ["create /b/ready Persistent"]);
    p.handle_reply(NOW, sent[0].0, Reply::Created { path: "/b/ready" });
    assert_eq!(events(&mut p), [DoubleBarrierEvent::Entered]);
    p.leave().unwrap();
    let sent = drain(&mut p);
    assert_eq!(texts(&sent)[1], "children /b watch=false");
    p.handle_reply(NOW, sent[0].0, Reply::Checked);
    (p, sent[1].0)
}

#[test]
fn the_count_is_reached_across_parts_and_only_the_last_part_decides() {
    let (mut p, list) = entering("p", 3);
    part(&mut p, list, &["a", "ready"], false);
    part(&mut p, list, &["p"], false);
    part(&mut p, list, &["c"], false);
    assert!(drain(&mut p).is_empty(), "decided before the last part");
    part(&mut p, list, &[], true);
    assert_eq!(texts(&drain(&mut p)), ["create /b/ready Persistent"]);
}

#[test]
fn a_count_short_across_parts_waits() {
    let (mut p, list) = entering("p", 4);
    part(&mut p, list, &["a", "ready"], false);
    part(&mut p, list, &["p", "c"], true);
    assert!(drain(&mut p).is_empty());
    assert!(events(&mut p).is_empty());
}

#[test]
fn leaving_waits_on_the_lowest_of_all_the_parts() {
    let (mut p, list) = leaving("m");
    part(&mut p, list, &["x", "m"], false);
    part(&mut p, list, &["ready", "c"], false);
    part(&mut p, list, &["d"], true);
    assert_eq!(
        texts(&drain(&mut p)),
        [
            "delete /b/m",
            "exists /b/ready watch=true",
            "getData /b/c watch=true"
        ]
    );
    assert_eq!(p.waiting_for(), Some("c"));
}

#[test]
fn the_lowest_leaving_waits_on_the_highest_of_all_the_parts() {
    let (mut p, list) = leaving("a");
    part(&mut p, list, &["k"], false);
    part(&mut p, list, &["a", "z"], false);
    part(&mut p, list, &["q"], true);
    assert_eq!(texts(&drain(&mut p)), ["getData /b/z watch=true"]);
    assert_eq!(p.waiting_for(), Some("z"));
}

#[test]
fn the_last_out_deletes_its_node_and_ready_after_the_parts() {
    let (mut p, list) = leaving("a");
    part(&mut p, list, &["ready"], false);
    part(&mut p, list, &["a"], true);
    assert_eq!(texts(&drain(&mut p)), ["delete /b/a", "delete /b/ready"]);
}

#[test]
fn a_listing_cut_short_counts_for_nothing_in_the_next_one() {
    let (mut p, list) = entering("p", 3);
    part(&mut p, list, &["a", "p"], false);
    let again = listed_again(&mut p);
    assert_ne!(again, list);
    part(&mut p, again, &["a"], false);
    part(&mut p, again, &["p"], true);
    assert!(
        !texts(&drain(&mut p)).contains(&"create /b/ready Persistent"),
        "two processes counted as four"
    );
}

#[test]
fn a_listing_refused_after_some_parts_fails_the_leave() {
    let (mut p, list) = leaving("m");
    part(&mut p, list, &["a", "b"], false);
    // A name longer than the receive buffer: the rest is skipped and the
    // listing answered with the error, which fails the leave.
    p.handle_reply(NOW, list, Reply::Error(ZkError::ReplyTooLarge));
    assert_eq!(texts(&drain(&mut p)), ["delete /b/m"]);
}

#[test]
fn parts_of_another_request_are_not_taken_for_the_listing() {
    let (mut p, list) = entering("p", 2);
    let other = RequestId::new(7, 7);
    part(&mut p, other, &["a", "p", "c"], true);
    assert!(drain(&mut p).is_empty());
    part(&mut p, list, &["p"], true);
    assert!(drain(&mut p).is_empty(), "a stray part was counted");
}

#[test]
fn a_whole_listing_after_parts_of_a_lost_one_is_read_from_its_first_name() {
    let (mut p, list) = entering("p", 3);
    part(&mut p, list, &["a", "b"], false);
    let again = listed_again(&mut p);
    let names = ["p"];
    p.handle_reply(NOW, again, Reply::Children(Children::new(&&names[..])));
    assert!(drain(&mut p).is_empty(), "one process counted as three");
}
