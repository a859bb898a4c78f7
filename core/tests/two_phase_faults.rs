//! Two-phase commit, all-watch variant: a vote a site cannot read (its
//! node's name is longer than the site's name capacity) is never counted as
//! absent. Scripted on the in-memory ZooKeeper; the oracle is the votes the
//! test itself cast and the decision node's content.

mod conn_loss;

use conn_loss::Driver;
use herdless_core::sim::SimZk;
use herdless_core::two_phase::{Outcome, TwoPhase, TxEvent, Variant, Vote, DECISION};

const TX: &str = "/app/tx/t1";
const LONG: &str = "a-site-with-a-long-name";

/// A site that can only store names of up to 8 bytes.
type Small = TwoPhase<16, 8, 256, 128>;

fn decision(zk: &SimZk) -> Option<Vec<u8>> {
    zk.node(&format!("{TX}/{DECISION}")).map(|n| n.data.clone())
}

fn run(zk: &mut SimZk, c: &mut Driver<TwoPhase>, s: &mut Driver<Small>) {
    for _ in 0..100 {
        c.run(zk);
        s.run(zk);
        if zk.pending_requests(c.session) == 0 && zk.pending_requests(s.session) == 0 {
            return;
        }
    }
}

#[test]
fn a_vote_whose_name_does_not_fit_is_never_counted_as_absent() {
    let mut zk = SimZk::new(1);
    let mut c = Driver::open(&mut zk, TwoPhase::new(TX).unwrap());
    c.act(&mut zk, |t| {
        t.coordinate(b"body", &["s1", LONG], Variant::AllWatch, None)
    })
    .unwrap();
    c.run(&mut zk);
    assert_eq!(c.take_events(), [TxEvent::Started]);

    let mut s: Driver<Small> = Driver::open(&mut zk, Small::new(TX).unwrap());
    s.act(&mut zk, |t| t.participate("s1", Variant::AllWatch))
        .unwrap();
    run(&mut zk, &mut c, &mut s);
    let mut events = s.take_events();
    assert_eq!(events.first(), Some(&TxEvent::Transaction));
    // Refused if the site already decided (abort): that is allowed.
    let _ = s.act(&mut zk, |t| t.vote(Vote::Commit));
    run(&mut zk, &mut c, &mut s);
    events.extend(s.take_events());
    // The long-named site never voted: nobody may decide commit.
    assert_ne!(
        decision(&zk).as_deref(),
        Some(&b"commit"[..]),
        "committed without the vote of {LONG}"
    );
    assert!(
        !events.contains(&TxEvent::Decided(Outcome::Commit)),
        "the site decided commit without a vote it cannot read: {events:?}"
    );
    assert_ne!(s.recipe.decision(), Some(Outcome::Commit));
}

/// The same site with every name fitting: it decides commit once both
/// voted commit (so the test above fails for the right reason).
#[test]
fn a_site_that_can_read_every_vote_commits_on_unanimous_commit() {
    let mut zk = SimZk::new(2);
    let mut c = Driver::open(&mut zk, TwoPhase::new(TX).unwrap());
    c.act(&mut zk, |t| {
        t.coordinate(b"body", &["s1", "s2"], Variant::AllWatch, None)
    })
    .unwrap();
    c.run(&mut zk);
    let mut s: Driver<Small> = Driver::open(&mut zk, Small::new(TX).unwrap());
    s.act(&mut zk, |t| t.participate("s1", Variant::AllWatch))
        .unwrap();
    run(&mut zk, &mut c, &mut s);
    s.act(&mut zk, |t| t.vote(Vote::Commit)).unwrap();
    run(&mut zk, &mut c, &mut s);
    assert_eq!(s.recipe.decision(), None, "s2 has not voted");
    let mut s2: Driver<Small> = Driver::open(&mut zk, Small::new(TX).unwrap());
    s2.act(&mut zk, |t| t.participate("s2", Variant::AllWatch))
        .unwrap();
    s2.run(&mut zk);
    s2.act(&mut zk, |t| t.vote(Vote::Commit)).unwrap();
    for _ in 0..10 {
        s2.run(&mut zk);
        run(&mut zk, &mut c, &mut s);
    }
    assert_eq!(decision(&zk).as_deref(), Some(&b"commit"[..]));
    assert_eq!(s.recipe.decision(), Some(Outcome::Commit));
}
