//! ACLs on the nodes every recipe creates, and what each recipe does when
//! the server refuses it (`NoAuth`, `InvalidAcl`).
//!
//! The simulator does not model ACLs, so each recipe runs here under a
//! small driver of the test's own: it records the ACL of every create the
//! recipe sends, applies the requests on a `SimZk` one by one in the order
//! they were sent, and answers those a refusal rule picks with the
//! server's error instead, in their place in that order (a real server
//! answers a session's requests in order, refused or not).
//!
//! What must hold, whatever is refused: the recipe never panics, never
//! loops (a bounded number of requests), reports its operation's end with
//! an event, and, when the refusal kept the operation from completing,
//! names the server's error in that event.

use std::fmt::Debug;

use herdless_core::barrier::{Barrier, BarrierEvent};
use herdless_core::config::{Config, ConfigEvent};
use herdless_core::double_barrier::{DoubleBarrier, DoubleBarrierEvent};
use herdless_core::election::{Election, ElectionEvent};
use herdless_core::lock::{Lock, LockEvent};
use herdless_core::member::{Member, MemberEvent};
use herdless_core::naming::Guid;
use herdless_core::queue::{Consumer, ConsumerEvent, Producer};
use herdless_core::sim::{Delivery, OwnedReply, SimZk};
use herdless_core::two_phase::{TwoPhase, TxEvent, Variant, Vote};
use herdless_core::Instant;
use herdless_core::{perms, Acl, AclEntry, Recipe, Request, Version, ZkError};

/// More requests than any of these operations needs: reaching it means a
/// retry loop.
const LIMIT: usize = 200;

/// An ACL no recipe would choose by itself: a digest identity with every
/// permission, and reading for everyone.
static ALICE: Acl<'static> = Acl(&[
    AclEntry {
        perms: perms::ALL,
        scheme: "digest",
        id: "alice:QM8TnvPLTkn+7EPz/dMSJQ6vmTE=",
    },
    AclEntry {
        perms: perms::READ,
        scheme: "world",
        id: "anyone",
    },
]);

/// Directories two levels below nodes that do not exist yet, so that every
/// recipe creates ancestors as well as its own nodes.
const ROOT: &str = "/acl";
const PARENT: &str = "/acl/deep";

/// One request as the recipe sent it.
#[derive(Debug)]
struct Sent {
    kind: &'static str,
    path: String,
    /// For a create: its ACL entries as `(perms, scheme, id)`.
    acl: Option<Vec<(u32, String, String)>>,
    refused: bool,
}

fn kind(request: &Request<'_>) -> &'static str {
    match request {
        Request::Create { .. } => "create",
        Request::Delete { .. } => "delete",
        Request::Exists { .. } => "exists",
        Request::GetData { .. } => "getData",
        Request::SetData { .. } => "setData",
        Request::GetChildren { .. } => "getChildren",
        Request::Check { .. } => "check",
        Request::Sync { .. } => "sync",
        _ => "other",
    }
}

/// What one run of a recipe showed.
#[derive(Debug)]
struct Run {
    sent: Vec<Sent>,
    events: Vec<String>,
    /// Whether the recipe stopped sending by itself (no loop).
    settled: bool,
}

impl Run {
    fn creates(&self) -> impl Iterator<Item = &Sent> {
        self.sent.iter().filter(|s| s.kind == "create")
    }

    fn refused(&self) -> usize {
        self.sent.iter().filter(|s| s.refused).count()
    }
}

/// Which requests the server refuses, and with what.
type Refuse = fn(&Request<'_>) -> Option<ZkError>;

fn refuse_nothing(_: &Request<'_>) -> Option<ZkError> {
    None
}

/// Runs one recipe's scenario under a refusal rule.
type Runner = Box<dyn FnOnce(Refuse) -> Run>;

/// One recipe and the operation it runs.
struct Scenario<R: Recipe> {
    recipe: R,
    /// Nodes that exist before the recipe starts (path, data).
    setup: Vec<(&'static str, &'static [u8])>,
    start: fn(&mut R),
    /// The next step once an event arrives (release after acquiring, ...).
    react: fn(&mut R, &R::Event),
    /// Whether an event ends the operation.
    end: fn(&R::Event) -> bool,
}

/// Runs the scenario on a fresh simulated server.
fn drive<R: Recipe>(mut scenario: Scenario<R>, refuse: Refuse) -> Run
where
    R::Event: Debug,
{
    let mut zk = SimZk::new(7);
    for (path, data) in &scenario.setup {
        zk.create_persistent(path, data).expect("set up a node");
    }
    let s = zk.open_session();
    let r = &mut scenario.recipe;
    (scenario.start)(r);
    let mut run = Run {
        sent: Vec::new(),
        events: Vec::new(),
        settled: true,
    };
    loop {
        let mut inbox = Vec::new();
        let mut polled = false;
        while let Some(out) = r.poll_request() {
            polled = true;
            let request = out.request;
            let refusal = refuse(&request);
            run.sent.push(Sent {
                kind: kind(&request),
                path: request.path().to_owned(),
                acl: match request {
                    Request::Create { acl, .. } => Some(
                        acl.entries()
                            .iter()
                            .map(|e| (e.perms, e.scheme.to_owned(), e.id.to_owned()))
                            .collect(),
                    ),
                    _ => None,
                },
                refused: refusal.is_some(),
            });
            if run.sent.len() > LIMIT {
                run.settled = false;
                return run;
            }
            match refusal {
                Some(e) => inbox.push(Delivery::Reply(out.id, OwnedReply::Error(e))),
                None => {
                    zk.submit(s, out.id, &request);
                    zk.apply_next(s);
                    while let Some(d) = zk.next_delivery(s) {
                        inbox.push(d);
                    }
                }
            }
        }
        let mut ended = false;
        while let Some(event) = r.poll_event() {
            run.events.push(format!("{event:?}"));
            ended |= (scenario.end)(&event);
            (scenario.react)(r, &event);
        }
        if ended && inbox.is_empty() {
            return run;
        }
        if inbox.is_empty() && !polled {
            return run;
        }
        for delivery in inbox {
            match &delivery {
                Delivery::Reply(id, reply) => {
                    reply.with_reply(|reply| r.handle_reply(Instant::ZERO, *id, reply))
                }
                Delivery::Watch(..) => {
                    if let Some(event) = delivery.as_watch() {
                        r.handle_watch(Instant::ZERO, event);
                    }
                }
                Delivery::Session(event) => r.handle_session(Instant::ZERO, *event),
            }
        }
    }
}

fn guid(b: u8) -> Guid {
    Guid::from_random_bytes([b; 16])
}

fn no_reaction<E>(_: &mut impl Recipe, _: &E) {}

/// Every recipe that creates nodes, each running an operation that creates
/// them, with its nodes (and the ancestors it creates) given `acl`.
fn creating_scenarios(acl: Option<Acl<'static>>) -> Vec<(&'static str, Runner)> {
    let pick = move || acl.unwrap_or(Acl::OPEN);
    let mut all: Vec<(&'static str, Runner)> = Vec::new();
    let a = pick();
    all.push((
        "lock",
        Box::new(move |refuse| {
            drive(
                Scenario {
                    recipe: <Lock>::new("/acl/deep/lock").unwrap().with_acl(a),
                    setup: vec![],
                    start: |l| l.acquire(guid(1)).unwrap(),
                    react: |l, e| {
                        if *e == LockEvent::Acquired {
                            l.release().unwrap();
                        }
                    },
                    end: |e| !matches!(e, LockEvent::Acquired),
                },
                refuse,
            )
        }),
    ));
    all.push((
        "election",
        Box::new(move |refuse| {
            drive(
                Scenario {
                    recipe: <Election>::new("/acl/deep/election").unwrap().with_acl(a),
                    setup: vec![],
                    start: |e| e.campaign(guid(2), b"me").unwrap(),
                    react: |c, e| {
                        if *e == ElectionEvent::Leading {
                            c.resign().unwrap();
                        }
                    },
                    end: |e| !matches!(e, ElectionEvent::Leading | ElectionEvent::Following { .. }),
                },
                refuse,
            )
        }),
    ));
    all.push((
        "barrier",
        Box::new(move |refuse| {
            drive(
                Scenario {
                    recipe: <Barrier>::new("/acl/deep/barrier").unwrap().with_acl(a),
                    setup: vec![],
                    start: |b| b.set(),
                    react: |b, e| {
                        if *e == BarrierEvent::Set {
                            b.remove();
                        }
                    },
                    end: |e| *e != BarrierEvent::Set,
                },
                refuse,
            )
        }),
    ));
    all.push((
        "double barrier",
        Box::new(move |refuse| {
            drive(
                Scenario {
                    recipe: <DoubleBarrier>::new("/acl/deep/double", "p1")
                        .unwrap()
                        .with_acl(a),
                    setup: vec![],
                    start: |b| b.enter(1).unwrap(),
                    react: |b, e| {
                        if *e == DoubleBarrierEvent::Entered {
                            b.leave().unwrap();
                        }
                    },
                    end: |e| *e != DoubleBarrierEvent::Entered,
                },
                refuse,
            )
        }),
    ));
    all.push((
        "config",
        Box::new(move |refuse| {
            drive(
                Scenario {
                    recipe: <Config>::new("/acl/deep/config").unwrap().with_acl(a),
                    setup: vec![(PARENT, b"")],
                    start: |c| c.create(b"v1").unwrap(),
                    react: no_reaction,
                    end: |e| {
                        matches!(
                            e,
                            ConfigEvent::Updated { .. }
                                | ConfigEvent::Conflict
                                | ConfigEvent::Unknown
                                | ConfigEvent::WriteFailed(_)
                        )
                    },
                },
                refuse,
            )
        }),
    ));
    all.push((
        "member",
        Box::new(move |refuse| {
            drive(
                Scenario {
                    recipe: <Member>::new("/acl/deep/group", "m1").unwrap().with_acl(a),
                    setup: vec![],
                    start: |m| m.join(b"here").unwrap(),
                    react: |m, e| {
                        if *e == MemberEvent::Joined {
                            m.leave().unwrap();
                        }
                    },
                    end: |e| matches!(e, MemberEvent::Left | MemberEvent::Failed(_)),
                },
                refuse,
            )
        }),
    ));
    all.push((
        "queue producer",
        Box::new(move |refuse| {
            drive(
                Scenario {
                    recipe: <Producer>::new("/acl/deep/queue").unwrap().with_acl(a),
                    setup: vec![],
                    start: |p| p.put(guid(3), b"item", None, false).unwrap(),
                    react: no_reaction,
                    end: |_| true,
                },
                refuse,
            )
        }),
    ));
    all.push((
        "two-phase coordinator",
        Box::new(move |refuse| {
            drive(
                Scenario {
                    recipe: <TwoPhase>::new("/acl/deep/tx").unwrap().with_acl(a),
                    setup: vec![],
                    start: |t| {
                        t.coordinate(
                            b"body",
                            &["s1"],
                            Variant::Coordinated {
                                ephemeral_votes: false,
                            },
                            None,
                        )
                        .unwrap()
                    },
                    react: no_reaction,
                    end: |e| !matches!(e, TxEvent::Voted | TxEvent::Transaction),
                },
                refuse,
            )
        }),
    ));
    all.push((
        "two-phase site",
        Box::new(move |refuse| {
            drive(
                Scenario {
                    recipe: <TwoPhase>::new("/acl/deep/tx2").unwrap().with_acl(a),
                    // A coordinator's transaction, open to everyone, in
                    // which the site creates its own (ephemeral) vote.
                    setup: vec![("/acl/deep/tx2", b"body")],
                    start: |t| {
                        t.participate(
                            "s1",
                            Variant::Coordinated {
                                ephemeral_votes: true,
                            },
                        )
                        .unwrap()
                    },
                    react: |t, e| {
                        if *e == TxEvent::Transaction {
                            t.vote(Vote::Commit).unwrap();
                        }
                    },
                    end: |e| !matches!(e, TxEvent::Transaction),
                },
                refuse,
            )
        }),
    ));
    all
}

fn entries(acl: Acl<'_>) -> Vec<(u32, String, String)> {
    acl.entries()
        .iter()
        .map(|e| (e.perms, e.scheme.to_owned(), e.id.to_owned()))
        .collect()
}

#[test]
fn every_node_a_recipe_creates_carries_the_chosen_acl() {
    let alice = vec![
        (
            31,
            "digest".to_owned(),
            "alice:QM8TnvPLTkn+7EPz/dMSJQ6vmTE=".to_owned(),
        ),
        (1, "world".to_owned(), "anyone".to_owned()),
    ];
    assert_eq!(entries(ALICE), alice, "the test's own ACL");
    for (name, run) in creating_scenarios(Some(ALICE)) {
        let run = run(refuse_nothing);
        assert!(run.settled, "{name}: {run:?}");
        let creates: Vec<&Sent> = run.creates().collect();
        assert!(!creates.is_empty(), "{name} created nothing: {run:?}");
        for sent in &creates {
            assert_eq!(sent.acl.as_ref(), Some(&alice), "{name}: {sent:?}");
        }
        // The ancestors it had to create carry it too (the two-phase site
        // found its transaction and ancestors in place, and a configuration
        // value is only ever created where its parent exists).
        if name != "two-phase site" && name != "config" {
            for ancestor in [ROOT, PARENT] {
                assert!(
                    creates.iter().any(|s| s.path == ancestor),
                    "{name} did not create {ancestor}: {run:?}"
                );
            }
        }
    }
}

#[test]
fn without_a_choice_every_node_is_open() {
    let open = vec![(31, "world".to_owned(), "anyone".to_owned())];
    for (name, run) in creating_scenarios(None) {
        let run = run(refuse_nothing);
        assert!(run.creates().count() > 0, "{name}: {run:?}");
        for sent in run.creates() {
            assert_eq!(sent.acl.as_ref(), Some(&open), "{name}: {sent:?}");
        }
    }
}

/// Runs every creating scenario with `refuse`, and checks the refusal ends
/// the operation with `error` named in its last event, without a loop.
fn refused_with(refuse: Refuse, error: &str, must_refuse: bool) {
    for (name, run) in creating_scenarios(Some(ALICE)) {
        let run = run(refuse);
        assert!(run.settled, "{name} loops on a refusal: {:?}", run.sent);
        if run.refused() == 0 {
            assert!(!must_refuse, "{name} sent nothing to refuse: {run:?}");
            continue;
        }
        let last = run.events.last().map(String::as_str).unwrap_or("");
        assert!(
            last.contains(error),
            "{name}: the refusal is not reported ({error} expected in the last event): {run:?}"
        );
    }
}

fn refuse_creates(request: &Request<'_>) -> Option<ZkError> {
    matches!(request, Request::Create { .. }).then_some(ZkError::NoAuth)
}

#[test]
fn a_refused_create_ends_the_operation_with_no_auth() {
    refused_with(refuse_creates, "NoAuth", true);
}

fn refuse_creates_invalid_acl(request: &Request<'_>) -> Option<ZkError> {
    matches!(request, Request::Create { .. }).then_some(ZkError::InvalidAcl)
}

#[test]
fn an_acl_the_server_cannot_apply_ends_the_operation_with_invalid_acl() {
    refused_with(refuse_creates_invalid_acl, "InvalidAcl", true);
}

/// The directory exists but is closed to this session: only the recipe's
/// own nodes (not the ancestors, which exist) are refused.
fn refuse_own_creates(request: &Request<'_>) -> Option<ZkError> {
    match request {
        Request::Create { path, .. } if *path != ROOT && *path != PARENT => Some(ZkError::NoAuth),
        _ => None,
    }
}

#[test]
fn a_refused_own_node_ends_the_operation_with_no_auth() {
    refused_with(refuse_own_creates, "NoAuth", true);
}

fn refuse_deletes(request: &Request<'_>) -> Option<ZkError> {
    matches!(request, Request::Delete { .. }).then_some(ZkError::NoAuth)
}

#[test]
fn a_refused_delete_is_reported_not_retried() {
    // The config, producer and two-phase scenarios delete nothing.
    refused_with(refuse_deletes, "NoAuth", false);
}

fn refuse_writes(request: &Request<'_>) -> Option<ZkError> {
    matches!(request, Request::SetData { .. }).then_some(ZkError::NoAuth)
}

#[test]
fn a_refused_write_is_reported_not_retried() {
    refused_with(refuse_writes, "NoAuth", false);
}

fn refuse_reads(request: &Request<'_>) -> Option<ZkError> {
    matches!(
        request,
        Request::GetData { .. } | Request::GetChildren { .. } | Request::Exists { .. }
    )
    .then_some(ZkError::NoAuth)
}

/// Reads a recipe needs (listing its directory, reading a node it waits on)
/// end the operation with the error; a lock's read of its own node, which
/// serves only revocation, is allowed to fail quietly, so only settling is
/// checked for every recipe.
#[test]
fn refused_reads_never_loop() {
    for (name, run) in creating_scenarios(Some(ALICE)) {
        let run = run(refuse_reads);
        assert!(run.settled, "{name} loops on refused reads: {:?}", run.sent);
        assert!(!run.events.is_empty(), "{name} went silent: {run:?}");
    }
}

#[test]
fn a_consumer_whose_take_is_refused_reports_it() {
    for refuse in [refuse_deletes as Refuse, refuse_reads] {
        let run = drive(
            Scenario {
                recipe: <Consumer>::new("/acl/deep/queue").unwrap(),
                setup: vec![("/acl/deep/queue/qn-0000000000", b"x")],
                start: |c| c.take(None).unwrap(),
                react: no_reaction,
                end: |_| true,
            },
            refuse,
        );
        assert!(run.settled, "{run:?}");
        assert!(run.refused() > 0, "{run:?}");
        assert_eq!(
            run.events,
            vec![format!(
                "{:?}",
                ConsumerEvent::Failed(herdless_core::queue::Error::Zk(ZkError::NoAuth))
            )],
            "{run:?}"
        );
    }
}

#[test]
fn a_config_write_refused_is_a_write_failure() {
    let run = drive(
        Scenario {
            recipe: <Config>::new("/acl/deep/config").unwrap(),
            setup: vec![("/acl/deep/config", b"v0")],
            start: |c| c.set(b"v1", Version::Any).unwrap(),
            react: no_reaction,
            end: |_| true,
        },
        refuse_writes,
    );
    assert!(run.settled, "{run:?}");
    let expected = ConfigEvent::WriteFailed(herdless_core::config::Error::Zk(ZkError::NoAuth));
    assert_eq!(run.events, vec![format!("{expected:?}")], "{run:?}");
}
