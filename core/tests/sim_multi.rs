//! `SimZk::apply_multi`: ZooKeeper's `multi`, all or nothing, with watches
//! firing only for a transaction that commits.

use herdless_core::sim::{
    Delivery, MultiFailure, Node, OwnedReply, OwnedRequest, SessionId, SimZk,
};
use herdless_core::{CreateMode, Request, RequestId, Version, WatchKind, ZkError};

fn create(path: &str, data: &[u8], mode: CreateMode) -> OwnedRequest {
    OwnedRequest::create_open(path, data, mode)
}

fn delete(path: &str, version: Version) -> OwnedRequest {
    OwnedRequest::Delete {
        path: path.to_string(),
        version,
    }
}

fn set_data(path: &str, data: &[u8], version: Version) -> OwnedRequest {
    OwnedRequest::SetData {
        path: path.to_string(),
        data: data.to_vec(),
        version,
    }
}

fn check(path: &str, version: Version) -> OwnedRequest {
    OwnedRequest::Check {
        path: path.to_string(),
        version,
    }
}

/// Sets a watch from `session` with a read, applied and its reply read, so
/// the watch is armed on the server and known to the client.
fn watch_with(zk: &mut SimZk, session: SessionId, serial: u32, request: &Request<'_>) {
    zk.submit(session, RequestId::new(0, serial), request);
    assert!(zk.apply_next(session));
    assert!(matches!(
        zk.next_delivery(session),
        Some(Delivery::Reply(..))
    ));
}

fn drain(zk: &mut SimZk, session: SessionId) -> Vec<Delivery> {
    core::iter::from_fn(|| zk.next_delivery(session)).collect()
}

/// Every node with its data and stat, for "nothing changed" comparisons.
fn snapshot(zk: &SimZk) -> Vec<(String, Node)> {
    let mut nodes: Vec<(String, Node)> = zk
        .tree_paths()
        .into_iter()
        .map(|p| {
            let node = zk.node(&p).unwrap().clone();
            (p, node)
        })
        .collect();
    nodes.push(("/".to_string(), zk.node("/").unwrap().clone()));
    nodes
}

/// `/app` with `/app/b` (data "old") and `/app/c`, a writer session and a
/// watcher session.
fn server() -> (SimZk, SessionId, SessionId) {
    let mut zk = SimZk::new(11);
    zk.create_persistent("/app/b", b"old").unwrap();
    zk.create_persistent("/app/c", b"").unwrap();
    let writer = zk.open_session();
    let watcher = zk.open_session();
    (zk, writer, watcher)
}

#[test]
fn a_multi_applies_every_op_in_order_and_answers_each() {
    let (mut zk, writer, _) = server();
    let replies = zk
        .apply_multi(
            writer,
            &[
                create("/app/a", b"new", CreateMode::Persistent),
                set_data("/app/b", b"changed", Version::Exactly(0)),
                delete("/app/c", Version::Exactly(0)),
                // Sees the node created two ops before, and the new version.
                check("/app/a", Version::Exactly(0)),
                check("/app/b", Version::Exactly(1)),
            ],
        )
        .unwrap();

    let a = zk.node("/app/a").expect("created").clone();
    let b = zk.node("/app/b").unwrap().clone();
    assert_eq!(
        replies,
        vec![
            OwnedReply::Created("/app/a".to_string()),
            OwnedReply::DataSet(b.stat),
            OwnedReply::Deleted,
            OwnedReply::Checked,
            OwnedReply::Checked,
        ]
    );
    assert_eq!(a.data, b"new");
    assert_eq!(b.data, b"changed");
    assert_eq!(b.stat.version, 1);
    assert!(zk.node("/app/c").is_none());
    assert_eq!(
        zk.tree_paths(),
        vec!["/app", "/app/a", "/app/b", "/zookeeper"]
    );
    // One transaction, one zxid, as on a real server.
    assert_eq!(a.stat.czxid, b.stat.mzxid);
    assert_eq!(zk.node("/app").unwrap().stat.pzxid, a.stat.czxid);
    // Counted once, as a multi, not per op.
    assert_eq!(zk.stats().count("multi"), 1);
    for op in ["create", "setData", "delete", "check"] {
        assert_eq!(zk.stats().count(op), 0, "{op}");
    }
}

#[test]
fn a_failing_op_undoes_the_ops_before_it_and_fires_no_watch() {
    let (mut zk, writer, watcher) = server();
    let data_watch = Request::GetData {
        path: "/app/b",
        watch: true,
    };
    watch_with(&mut zk, watcher, 1, &data_watch);
    let child_watch = Request::GetChildren {
        path: "/app",
        watch: true,
    };
    watch_with(&mut zk, watcher, 2, &child_watch);
    let creation_watch = Request::Exists {
        path: "/app/e",
        watch: true,
    };
    watch_with(&mut zk, watcher, 3, &creation_watch);
    // The last transaction before the multi, to measure zxids against.
    zk.set_node_data("/app/c", b"probe").unwrap();
    let last_zxid = zk.node("/app/c").unwrap().stat.mzxid;
    let nodes = snapshot(&zk);
    let watches = zk.watches_of(watcher);

    let failure = zk.apply_multi(
        writer,
        &[
            create("/app/e", b"", CreateMode::EphemeralSequential),
            set_data("/app/b", b"changed", Version::Any),
            delete("/app/missing", Version::Any),
            create("/app/never", b"", CreateMode::Persistent),
        ],
    );

    assert_eq!(
        failure,
        Err(MultiFailure {
            index: 2,
            error: ZkError::NoNode
        })
    );
    // The tree, the parent's cversion and pzxid, ephemeral owners: all as
    // before.
    assert_eq!(snapshot(&zk), nodes);
    assert_eq!(zk.watches_of(watcher), watches);
    assert_eq!(zk.pending_deliveries(watcher), 0);
    assert_eq!(zk.next_delivery(watcher), None);
    assert_eq!(zk.pending_deliveries(writer), 0);
    // The zxid did not move: the next transaction takes the next one.
    zk.set_node_data("/app/b", b"later").unwrap();
    assert_eq!(zk.node("/app/b").unwrap().stat.mzxid, last_zxid + 1);
    // The watch was armed all along, and fires now.
    assert_eq!(
        drain(&mut zk, watcher),
        vec![Delivery::Watch(
            WatchKind::NodeDataChanged,
            "/app/b".to_string()
        )]
    );
    assert_eq!(zk.stats().count("multi"), 1);
}

/// The watcher's watches on the changes of [`changes`], read replies drained.
fn watched_server() -> (SimZk, SessionId, SessionId) {
    let (mut zk, writer, watcher) = server();
    let reads = [
        Request::GetData {
            path: "/app/b",
            watch: true,
        },
        Request::GetData {
            path: "/app/c",
            watch: true,
        },
        Request::GetChildren {
            path: "/app",
            watch: true,
        },
        Request::Exists {
            path: "/app/new",
            watch: true,
        },
    ];
    for (serial, read) in (1..).zip(&reads) {
        watch_with(&mut zk, watcher, serial, read);
    }
    (zk, writer, watcher)
}

fn changes() -> Vec<OwnedRequest> {
    vec![
        create("/app/new", b"", CreateMode::Persistent),
        set_data("/app/b", b"changed", Version::Any),
        delete("/app/c", Version::Any),
        set_data("/app/new", b"again", Version::Any),
    ]
}

#[test]
fn a_multi_that_commits_fires_the_watches_the_ops_one_by_one_would() {
    let (mut zk, writer, watcher) = watched_server();
    zk.apply_multi(writer, &changes()).unwrap();
    let fired = drain(&mut zk, watcher);

    let watch = |kind, path: &str| Delivery::Watch(kind, path.to_string());
    assert_eq!(
        fired,
        vec![
            watch(WatchKind::NodeCreated, "/app/new"),
            watch(WatchKind::NodeChildrenChanged, "/app"),
            watch(WatchKind::NodeDataChanged, "/app/b"),
            watch(WatchKind::NodeDeleted, "/app/c"),
        ]
    );
    assert_eq!(zk.watch_count(), 0);

    let (mut one_by_one, writer, watcher) = watched_server();
    for (serial, op) in (100..).zip(changes()) {
        let request = match &op {
            OwnedRequest::Create {
                path, data, mode, ..
            } => Request::Create {
                path,
                data,
                mode: *mode,
                acl: herdless_core::Acl::OPEN,
            },
            OwnedRequest::SetData {
                path,
                data,
                version,
            } => Request::SetData {
                path,
                data,
                version: *version,
            },
            OwnedRequest::Delete { path, version } => Request::Delete {
                path,
                version: *version,
            },
            _ => unreachable!(),
        };
        one_by_one.submit(writer, RequestId::new(0, serial), &request);
        assert!(one_by_one.apply_next(writer));
    }
    assert_eq!(drain(&mut one_by_one, watcher), fired);
}

#[test]
fn the_writers_own_watches_fire_too() {
    let (mut zk, writer, _) = server();
    let read = Request::GetData {
        path: "/app/b",
        watch: true,
    };
    watch_with(&mut zk, writer, 1, &read);
    zk.apply_multi(writer, &[set_data("/app/b", b"x", Version::Any)])
        .unwrap();
    assert_eq!(
        drain(&mut zk, writer),
        vec![Delivery::Watch(
            WatchKind::NodeDataChanged,
            "/app/b".to_string()
        )]
    );
}

#[test]
fn sequential_creates_in_a_multi_number_in_order_and_a_failed_one_spends_none() {
    let mut zk = SimZk::new(3);
    zk.create_persistent("/q", b"").unwrap();
    let s = zk.open_session();

    let failed = zk.apply_multi(
        s,
        &[
            create("/q/item-", b"", CreateMode::PersistentSequential),
            check("/q", Version::Exactly(7)),
        ],
    );
    assert_eq!(
        failed,
        Err(MultiFailure {
            index: 1,
            error: ZkError::BadVersion
        })
    );

    let replies = zk
        .apply_multi(
            s,
            &[
                create("/q/item-", b"a", CreateMode::PersistentSequential),
                create("/q/item-", b"b", CreateMode::PersistentSequential),
                create("/q/e-", b"", CreateMode::EphemeralSequential),
            ],
        )
        .unwrap();
    assert_eq!(
        replies,
        vec![
            OwnedReply::Created("/q/item-0000000000".to_string()),
            OwnedReply::Created("/q/item-0000000001".to_string()),
            OwnedReply::Created("/q/e-0000000002".to_string()),
        ]
    );
    assert_eq!(zk.node("/q/item-0000000001").unwrap().data, b"b");
    assert_eq!(
        zk.node("/q/item-0000000000").unwrap().stat.ephemeral_owner,
        0
    );
    assert_eq!(zk.node("/q/e-0000000002").unwrap().stat.ephemeral_owner, s);
    assert_eq!(zk.node("/q").unwrap().stat.cversion, 3);

    // The session's ephemeral goes with it, as any other would.
    zk.expire(s);
    assert_eq!(
        zk.children("/q").unwrap(),
        vec!["item-0000000000", "item-0000000001"]
    );
}

#[test]
fn check_needs_the_node_and_its_version() {
    let (mut zk, writer, _) = server();
    let before = snapshot(&zk);
    let fails = |zk: &mut SimZk, ops: &[OwnedRequest]| zk.apply_multi(writer, ops).unwrap_err();

    assert_eq!(
        fails(&mut zk, &[check("/app/missing", Version::Any)]),
        MultiFailure {
            index: 0,
            error: ZkError::NoNode
        }
    );
    assert_eq!(
        fails(
            &mut zk,
            &[
                check("/app/b", Version::Exactly(0)),
                check("/app/b", Version::Exactly(1)),
            ]
        ),
        MultiFailure {
            index: 1,
            error: ZkError::BadVersion
        }
    );
    // A node deleted earlier in the multi is gone for the check.
    assert_eq!(
        fails(
            &mut zk,
            &[
                delete("/app/c", Version::Any),
                check("/app/c", Version::Any),
            ]
        ),
        MultiFailure {
            index: 1,
            error: ZkError::NoNode
        }
    );
    assert_eq!(snapshot(&zk), before);
    assert_eq!(
        zk.apply_multi(writer, &[check("/app/b", Version::Any)]),
        Ok(vec![OwnedReply::Checked])
    );
}

#[test]
fn reads_are_not_allowed_in_a_multi() {
    let (mut zk, writer, _) = server();
    let before = snapshot(&zk);
    let ops = [
        create("/app/a", b"", CreateMode::Persistent),
        OwnedRequest::GetData {
            path: "/app/a".to_string(),
            watch: true,
        },
    ];
    assert_eq!(
        zk.apply_multi(writer, &ops),
        Err(MultiFailure {
            index: 1,
            error: ZkError::BadArguments
        })
    );
    assert_eq!(snapshot(&zk), before);
    assert_eq!(zk.watch_count(), 0);
}

#[test]
fn a_multi_needs_a_connected_session() {
    let (mut zk, writer, _) = server();
    let ops = [create("/app/a", b"", CreateMode::Persistent)];

    zk.disconnect(writer);
    assert_eq!(
        zk.apply_multi(writer, &ops),
        Err(MultiFailure {
            index: 0,
            error: ZkError::ConnectionLoss
        })
    );
    assert!(zk.node("/app/a").is_none());

    zk.expire(writer);
    assert_eq!(
        zk.apply_multi(writer, &ops),
        Err(MultiFailure {
            index: 0,
            error: ZkError::SessionExpired
        })
    );
    assert!(zk.node("/app/a").is_none());
    assert_eq!(zk.stats().count("multi"), 0);

    let back = zk.open_session();
    zk.disconnect(back);
    zk.reconnect(back);
    assert!(zk.apply_multi(back, &ops).is_ok());
    assert!(zk.node("/app/a").is_some());
}

#[test]
fn tree_paths_lists_every_node_but_the_root() {
    let mut zk = SimZk::new(1);
    assert_eq!(zk.tree_paths(), vec!["/zookeeper"]);
    zk.create_persistent("/a/b", b"").unwrap();
    zk.create_persistent("/a-b", b"").unwrap();
    assert_eq!(zk.tree_paths(), vec!["/a", "/a-b", "/a/b", "/zookeeper"]);
}
