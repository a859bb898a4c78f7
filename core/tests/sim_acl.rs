//! The in-memory server enforces ACLs as a ZooKeeper server does: what a
//! node's ACL grants, to whom, and what each operation needs (a recipe
//! tested on it meets the `NoAuth` and `InvalidAcl` a real server gives).

use herdless_core::sim::{
    Delivery, MultiFailure, OwnedAclEntry, OwnedReply, OwnedRequest, SessionId, SimZk,
};
use herdless_core::{perms, Acl, AclEntry, CreateMode, Request, RequestId, Version, ZkError};

const ALICE: &str = "alice:hash-of-alice";
const BOB: &str = "bob:hash-of-bob";

/// Submits `request`, applies it and returns the reply.
fn call(zk: &mut SimZk, session: SessionId, request: &Request<'_>) -> OwnedReply {
    zk.submit(session, RequestId::new(0, 1), request);
    assert!(zk.apply_next(session));
    match zk.next_delivery(session) {
        Some(Delivery::Reply(_, reply)) => reply,
        other => panic!("no reply: {other:?}"),
    }
}

fn create<'a>(path: &'a str, acl: Acl<'a>) -> Request<'a> {
    Request::Create {
        path,
        data: b"secret",
        acl,
        mode: CreateMode::Persistent,
    }
}

/// A server with an `alice` and a `bob` session, each authenticated.
fn alice_and_bob() -> (SimZk, SessionId, SessionId) {
    let mut zk = SimZk::new(3);
    let (alice, bob) = (zk.open_session(), zk.open_session());
    zk.add_auth(alice, "digest", ALICE);
    zk.add_auth(bob, "digest", BOB);
    (zk, alice, bob)
}

#[test]
fn creator_all_keeps_a_node_to_its_creator() {
    let (mut zk, alice, bob) = alice_and_bob();
    let reply = call(&mut zk, alice, &create("/private", Acl::CREATOR_ALL));
    assert_eq!(reply, OwnedReply::Created("/private".into()));
    assert_eq!(
        zk.node("/private").unwrap().acl,
        [OwnedAclEntry {
            perms: perms::ALL,
            scheme: "digest".into(),
            id: ALICE.into()
        }],
        "auth stands for the creator's digest identity, not its address"
    );
    let read = Request::GetData {
        path: "/private",
        watch: true,
    };
    let peek = Request::GetData {
        path: "/private",
        watch: false,
    };
    assert!(matches!(call(&mut zk, alice, &peek), OwnedReply::Data(..)));
    assert_eq!(
        call(&mut zk, bob, &read),
        OwnedReply::Error(ZkError::NoAuth)
    );
    assert!(
        zk.watches_of(bob).is_empty(),
        "a refused read sets no watch: {:?}",
        zk.watches_of(bob)
    );
    let list = Request::GetChildren {
        path: "/private",
        watch: false,
    };
    assert_eq!(
        call(&mut zk, bob, &list),
        OwnedReply::Error(ZkError::NoAuth)
    );
    // exists is never refused.
    let exists = Request::Exists {
        path: "/private",
        watch: false,
    };
    assert!(matches!(call(&mut zk, bob, &exists), OwnedReply::Exists(_)));
    let write = Request::SetData {
        path: "/private",
        data: b"mine",
        version: Version::Any,
    };
    assert_eq!(
        call(&mut zk, bob, &write),
        OwnedReply::Error(ZkError::NoAuth)
    );
    assert_eq!(zk.node("/private").unwrap().data, b"secret");
    assert!(matches!(
        call(&mut zk, alice, &write),
        OwnedReply::DataSet(_)
    ));
    let child = create("/private/x", Acl::OPEN);
    assert_eq!(
        call(&mut zk, bob, &child),
        OwnedReply::Error(ZkError::NoAuth)
    );
    assert!(zk.node("/private/x").is_none());
    assert_eq!(
        call(&mut zk, alice, &child),
        OwnedReply::Created("/private/x".into())
    );
    let delete = Request::Delete {
        path: "/private/x",
        version: Version::Any,
    };
    assert_eq!(
        call(&mut zk, bob, &delete),
        OwnedReply::Error(ZkError::NoAuth)
    );
    assert!(zk.node("/private/x").is_some());
    assert_eq!(call(&mut zk, alice, &delete), OwnedReply::Deleted);
}

#[test]
fn a_session_without_identity_cannot_ask_for_creator_all() {
    let mut zk = SimZk::new(3);
    let anonymous = zk.open_session();
    let reply = call(&mut zk, anonymous, &create("/private", Acl::CREATOR_ALL));
    assert_eq!(reply, OwnedReply::Error(ZkError::InvalidAcl));
    assert!(zk.node("/private").is_none());
    // Judged before the parent is looked for, as on a server.
    let orphan = call(&mut zk, anonymous, &create("/no/parent", Acl::CREATOR_ALL));
    assert_eq!(orphan, OwnedReply::Error(ZkError::InvalidAcl));
    let empty = call(&mut zk, anonymous, &create("/none", Acl(&[])));
    assert_eq!(empty, OwnedReply::Error(ZkError::InvalidAcl));
}

#[test]
fn each_permission_guards_its_own_operations() {
    let (mut zk, alice, bob) = alice_and_bob();
    // Anyone reads and creates below it; only alice deletes below it and
    // writes it.
    const SHARED: Acl<'static> = Acl(&[
        AclEntry {
            perms: perms::READ | perms::CREATE,
            scheme: "world",
            id: "anyone",
        },
        AclEntry {
            perms: perms::ALL,
            scheme: "digest",
            id: ALICE,
        },
    ]);
    call(&mut zk, alice, &create("/jobs", SHARED));
    let job = Request::Create {
        path: "/jobs/job-",
        data: b"",
        acl: Acl::OPEN,
        mode: CreateMode::PersistentSequential,
    };
    assert_eq!(
        call(&mut zk, bob, &job),
        OwnedReply::Created("/jobs/job-0000000000".into())
    );
    let take = Request::Delete {
        path: "/jobs/job-0000000000",
        version: Version::Any,
    };
    assert_eq!(
        call(&mut zk, bob, &take),
        OwnedReply::Error(ZkError::NoAuth)
    );
    let write = Request::SetData {
        path: "/jobs",
        data: b"x",
        version: Version::Any,
    };
    assert_eq!(
        call(&mut zk, bob, &write),
        OwnedReply::Error(ZkError::NoAuth)
    );
    assert_eq!(call(&mut zk, alice, &take), OwnedReply::Deleted);
    // The parent's permission is checked first, as the server does: to
    // bob, a missing child is still refused; to alice, it is missing.
    assert_eq!(
        call(&mut zk, bob, &take),
        OwnedReply::Error(ZkError::NoAuth)
    );
    assert_eq!(
        call(&mut zk, alice, &take),
        OwnedReply::Error(ZkError::NoNode)
    );
}

#[test]
fn a_refused_op_fails_the_whole_multi() {
    let (mut zk, alice, bob) = alice_and_bob();
    call(&mut zk, alice, &create("/private", Acl::CREATOR_ALL));
    zk.create_persistent("/open", b"").unwrap();
    let ops = [
        OwnedRequest::create_open("/open/a", b"", CreateMode::Persistent),
        OwnedRequest::Check {
            path: "/private".into(),
            version: Version::Any,
        },
    ];
    assert_eq!(
        zk.apply_multi(bob, &ops),
        Err(MultiFailure {
            index: 1,
            error: ZkError::NoAuth
        })
    );
    assert!(zk.node("/open/a").is_none());
    assert!(zk.apply_multi(alice, &ops).is_ok());
}

#[test]
fn sessions_are_their_loopback_address_too() {
    let mut zk = SimZk::new(3);
    let s = zk.open_session();
    const LOCAL: Acl<'static> = Acl(&[AclEntry {
        perms: perms::ALL,
        scheme: "ip",
        id: "127.0.0.1",
    }]);
    const ELSEWHERE: Acl<'static> = Acl(&[AclEntry {
        perms: perms::ALL,
        scheme: "ip",
        id: "10.0.0.9",
    }]);
    call(&mut zk, s, &create("/local", LOCAL));
    call(&mut zk, s, &create("/elsewhere", ELSEWHERE));
    let read = |path| Request::GetData { path, watch: false };
    assert!(matches!(
        call(&mut zk, s, &read("/local")),
        OwnedReply::Data(..)
    ));
    assert_eq!(
        call(&mut zk, s, &read("/elsewhere")),
        OwnedReply::Error(ZkError::NoAuth)
    );
}

/// A change is told only to sessions the node's ACL lets read, as
/// ZooKeeper 3.8.4 and 3.9.2 do (CVE-2024-23944; the Debian 3.8.0 the
/// real-server tests run is patched so): a watch an `exists` set, which no
/// ACL guards, on a node the session may not read never fires, and a
/// deletion is judged by the deleted node's ACL.
#[test]
fn a_change_is_told_only_to_sessions_the_node_lets_read() {
    let (mut zk, alice, bob) = alice_and_bob();
    static NO_READ_FOR_OTHERS: Acl<'static> = Acl(&[
        AclEntry {
            perms: perms::ALL,
            scheme: "digest",
            id: ALICE,
        },
        AclEntry {
            perms: perms::ALL & !perms::READ,
            scheme: "world",
            id: "anyone",
        },
    ]);
    let reply = call(&mut zk, alice, &create("/guarded", NO_READ_FOR_OTHERS));
    assert_eq!(reply, OwnedReply::Created("/guarded".into()));
    let watch = |zk: &mut SimZk, session| {
        let exists = Request::Exists {
            path: "/guarded",
            watch: true,
        };
        assert!(matches!(call(zk, session, &exists), OwnedReply::Exists(_)));
    };
    watch(&mut zk, alice);
    watch(&mut zk, bob);
    let write = Request::SetData {
        path: "/guarded",
        data: b"new",
        version: Version::Any,
    };
    // Bob writes: a notification he were told would come before his reply.
    assert!(matches!(call(&mut zk, bob, &write), OwnedReply::DataSet(_)));
    assert_eq!(
        zk.next_delivery(alice),
        Some(Delivery::Watch(
            herdless_core::WatchKind::NodeDataChanged,
            "/guarded".into()
        ))
    );
    assert_eq!(zk.next_delivery(bob), None, "bob may not read it");
    watch(&mut zk, alice);
    watch(&mut zk, bob);
    let delete = Request::Delete {
        path: "/guarded",
        version: Version::Any,
    };
    assert_eq!(call(&mut zk, bob, &delete), OwnedReply::Deleted);
    assert_eq!(
        zk.next_delivery(alice),
        Some(Delivery::Watch(
            herdless_core::WatchKind::NodeDeleted,
            "/guarded".into()
        ))
    );
    assert_eq!(
        zk.next_delivery(bob),
        None,
        "bob deleted it, but was never told"
    );

    // A parent's children are judged by the parent's ACL: bob, who may
    // read `/`, hears that a child he may not read went.
    let reply = call(&mut zk, alice, &create("/guarded", NO_READ_FOR_OTHERS));
    assert_eq!(reply, OwnedReply::Created("/guarded".into()));
    let list = Request::GetChildren {
        path: "/",
        watch: true,
    };
    assert!(matches!(call(&mut zk, bob, &list), OwnedReply::Children(_)));
    assert_eq!(call(&mut zk, alice, &delete), OwnedReply::Deleted);
    assert_eq!(
        zk.next_delivery(bob),
        Some(Delivery::Watch(
            herdless_core::WatchKind::NodeChildrenChanged,
            "/".into()
        ))
    );
}
