//! ACLs, digest authentication and TLS against a real ZooKeeper 3.8.
//!
//! Alice's herdless-std client authenticates with a digest and makes her
//! recipes on [`WithAcl`] with [`Acl::CREATOR_ALL`]; a stranger's client,
//! unauthenticated, then tries what the ACLs must forbid: delete a holder's
//! node, add a contender, vote, put or take, write the configuration. Each
//! directory's ACL is read back with `getAcl` and compared with the digest
//! ZooKeeper itself computes for Alice's password
//! (`DigestAuthenticationProvider`, run from the server's jar).
//!
//! The TLS tests start a server whose key store is made at run time with
//! `keytool`, and run a lock over TLS.

use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

use herdless_std::barrier::Barrier;
use herdless_std::config::Config;
use herdless_std::election::watch_leader;
use herdless_std::group::GroupObserver;
use herdless_std::queue::Queue;
use herdless_std::two_phase::{Coordinator, Outcome, Site, Variant, Vote};
use herdless_std::{
    perms, Acl, Client, ConnectOptions, Connection, Election, GroupMember, Lock, WithAcl, ZkError,
};
use herdless_tests::{ZkServer, ZOOKEEPER_JAR};
use zookeeper_client as zk;

const SESSION: Duration = Duration::from_secs(30);
const USER: &str = "alice";
const PASSWORD: &str = "s3cret";

/// Alice's client: digest-authenticated.
async fn alice(server: &ZkServer) -> Client {
    ConnectOptions::new(SESSION)
        .digest(USER, PASSWORD)
        .connect(&server.addr())
        .await
        .expect("connect as alice")
}

/// A client with no credentials.
async fn stranger(server: &ZkServer) -> Client {
    herdless_std::connect(&server.addr(), SESSION)
        .await
        .expect("connect as a stranger")
}

/// `alice:<base64 sha1>` as ZooKeeper computes it: its
/// `DigestAuthenticationProvider` prints `user:password->user:digest`.
fn zookeeper_digest() -> &'static str {
    static DIGEST: OnceLock<String> = OnceLock::new();
    DIGEST.get_or_init(|| {
        let out = Command::new("java")
            .args(["-cp", ZOOKEEPER_JAR])
            .arg("org.apache.zookeeper.server.auth.DigestAuthenticationProvider")
            .arg(format!("{USER}:{PASSWORD}"))
            .output()
            .expect("run ZooKeeper's digest generator");
        let text = String::from_utf8_lossy(&out.stdout);
        let line = text
            .lines()
            .find_map(|l| l.split_once("->"))
            .unwrap_or_else(|| panic!("no digest in {text:?}"));
        line.1.trim().to_owned()
    })
}

/// Asserts that `path` belongs to Alice alone: everything to her digest
/// identity, nothing to anyone else.
async fn assert_alices(client: &Client, path: &str) {
    assert_alice_may(client, path, zk::Permission::ALL).await;
}

/// Asserts that `path`'s ACL gives Alice's digest identity `permission`,
/// and nobody anything.
async fn assert_alice_may(client: &Client, path: &str, permission: zk::Permission) {
    let (acls, _) = client
        .get_acl(path)
        .await
        .unwrap_or_else(|e| panic!("getAcl {path}: {e}"));
    let got: Vec<(zk::Permission, String, String)> = acls
        .iter()
        .map(|a| (a.permission(), a.scheme().to_owned(), a.id().to_owned()))
        .collect();
    assert_eq!(
        got,
        vec![(
            permission,
            "digest".to_owned(),
            zookeeper_digest().to_owned()
        )],
        "the ACL of {path}"
    );
}

/// Asserts the stranger's attempt was refused for want of permission.
#[track_caller]
fn assert_no_auth<T: std::fmt::Debug>(what: &str, result: Result<T, zk::Error>) {
    match result {
        Err(zk::Error::NoAuth) => {}
        other => panic!("{what}: expected NoAuth, got {other:?}"),
    }
}

/// An observer of a node the client may not read fails with `NoAuth`
/// within seconds rather than wait.
async fn assert_refused<T: std::fmt::Debug>(
    what: &str,
    observed: impl std::future::Future<Output = Result<T, herdless_std::Error>>,
) {
    match tokio::time::timeout(Duration::from_secs(5), observed).await {
        Ok(Err(herdless_std::Error::Zk(ZkError::NoAuth))) => {}
        other => panic!("{what}: expected NoAuth, got {other:?}"),
    }
}

fn open() -> zk::CreateOptions<'static> {
    zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lock_holders_node_is_alices_alone() {
    let server = ZkServer::start();
    let alice = alice(&server).await;
    let stranger = stranger(&server).await;
    let secured = WithAcl::new(alice.clone(), Acl::CREATOR_ALL);

    let lock = Lock::new(&secured, "/app/locks/printer").unwrap();
    let guard = lock.acquire().await.expect("alice acquires");
    for path in [
        "/app",
        "/app/locks",
        "/app/locks/printer",
        guard.node_path(),
    ] {
        assert_alices(&alice, path).await;
    }

    assert_no_auth(
        "the stranger deletes the holder's node",
        stranger.delete(guard.node_path(), None).await,
    );
    assert_no_auth(
        "the stranger adds a contender",
        stranger
            .create("/app/locks/printer/x-lock-", b"", &open())
            .await,
    );
    assert_no_auth(
        "the stranger lists the contenders",
        stranger.list_children("/app/locks/printer").await,
    );
    // The stranger's own lock on the directory is refused with a typed error.
    let theirs = Lock::new(&stranger, "/app/locks/printer").unwrap();
    match theirs.try_acquire().await {
        Err(herdless_std::Error::Zk(ZkError::NoAuth)) => {}
        other => panic!("the stranger's lock: expected NoAuth, got {other:?}"),
    }

    assert!(guard.is_held(), "alice still holds the lock");
    guard.release().await.expect("alice releases");
    let again = lock.acquire().await.expect("alice acquires again");
    again.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn creator_all_without_credentials_is_a_typed_error() {
    let server = ZkServer::start();
    let stranger = stranger(&server).await;
    // `auth` names the session's identities: it has none.
    let secured = WithAcl::new(stranger.clone(), Acl::CREATOR_ALL);
    let lock = Lock::new(&secured, "/nobody/lock").unwrap();
    match tokio::time::timeout(Duration::from_secs(20), lock.acquire()).await {
        Ok(Err(herdless_std::Error::Zk(ZkError::InvalidAcl))) => {}
        other => panic!("expected InvalidAcl, got {other:?}"),
    }
    assert!(matches!(stranger.check_stat("/nobody").await, Ok(None)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queue_items_cannot_be_put_or_taken_by_a_stranger() {
    let server = ZkServer::start();
    let alice = alice(&server).await;
    let stranger = stranger(&server).await;
    let secured = WithAcl::new(alice.clone(), Acl::CREATOR_ALL);

    let queue = Queue::new(&secured, "/app/queue").await.unwrap();
    let item = queue.put(b"job").await.unwrap();
    assert_alices(&alice, "/app").await;
    assert_alices(&alice, "/app/queue").await;
    assert_alices(&alice, &item).await;

    assert_no_auth(
        "the stranger puts",
        stranger
            .create(
                "/app/queue/qn-",
                b"evil",
                &zk::CreateMode::PersistentSequential.with_acls(zk::Acls::anyone_all()),
            )
            .await,
    );
    assert_no_auth("the stranger takes", stranger.delete(&item, None).await);
    assert_no_auth("the stranger reads", stranger.get_data(&item).await);
    match Queue::new(&stranger, "/app/queue").await {
        Err(herdless_std::Error::Zk(ZkError::NoAuth)) => {}
        other => panic!("the stranger's queue: expected NoAuth, got {other:?}"),
    }

    let taken = queue.take().await.unwrap();
    assert_eq!(
        (taken.data.as_slice(), taken.node.as_str()),
        (&b"job"[..], item.as_str())
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn election_membership_and_barrier_nodes_are_alices_alone() {
    let server = ZkServer::start();
    let alice = alice(&server).await;
    let stranger = stranger(&server).await;
    let secured = WithAcl::new(alice.clone(), Acl::CREATOR_ALL);

    let election = Election::new(&secured, "/app/election").unwrap();
    let leadership = election.campaign().await.unwrap();
    assert_alices(&alice, "/app/election").await;
    assert_alices(&alice, leadership.node_path()).await;
    assert_no_auth(
        "the stranger deletes the leader's node",
        stranger.delete(leadership.node_path(), None).await,
    );
    assert_no_auth(
        "the stranger volunteers",
        stranger.create("/app/election/x-n_", b"", &open()).await,
    );
    assert!(leadership.is_leading());

    let member = GroupMember::join(&secured, "/app/group", "m1", b"here")
        .await
        .unwrap();
    assert_alices(&alice, "/app/group").await;
    assert_alices(&alice, member.node_path()).await;
    assert_no_auth(
        "the stranger joins",
        stranger.create("/app/group/m2", b"", &open()).await,
    );
    assert_no_auth(
        "the stranger removes a member",
        stranger.delete(member.node_path(), None).await,
    );
    assert!(member.is_in());

    // The stranger's observers are refused, and say so rather than wait.
    let mut leaders = watch_leader(&stranger, "/app/election").unwrap();
    assert_refused("the stranger's leader observer", leaders.changed()).await;
    let mut members = GroupObserver::start(&stranger, "/app/group").unwrap();
    assert_refused("the stranger's group observer", members.changed()).await;

    let barrier = Barrier::new(&secured, "/app/gate/barrier").unwrap();
    barrier.set().await.unwrap();
    assert_alices(&alice, "/app/gate").await;
    assert_alices(&alice, "/app/gate/barrier").await;
    assert_no_auth(
        "the stranger lifts the barrier",
        stranger.delete("/app/gate/barrier", None).await,
    );
    barrier.remove().await.unwrap();

    member.leave().await.unwrap();
    leadership.resign().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn config_and_votes_cannot_be_written_by_a_stranger() {
    let server = ZkServer::start();
    let alice = alice(&server).await;
    let stranger = stranger(&server).await;
    let secured = WithAcl::new(alice.clone(), Acl::CREATOR_ALL);

    // The configuration's parent is Alice's too.
    alice
        .create(
            "/cfg",
            b"",
            &zk::CreateMode::Persistent.with_acls(zk::Acls::creator_all()),
        )
        .await
        .unwrap();
    let mut config = Config::watch(&secured, "/cfg/limits").unwrap();
    config.create(b"v1").await.unwrap();
    assert_alices(&alice, "/cfg/limits").await;
    assert_no_auth(
        "the stranger writes the configuration",
        stranger.set_data("/cfg/limits", b"evil", None).await,
    );
    let value = config.wait_present().await.unwrap();
    assert_eq!(value.data, b"v1");
    let mut strangers = Config::watch(&stranger, "/cfg/limits").unwrap();
    assert_refused("the stranger's config watcher", strangers.wait_present()).await;

    let coordinator = Coordinator::start(
        &secured,
        "/app/tx",
        b"body",
        &["s1"],
        Variant::Coordinated {
            ephemeral_votes: false,
        },
        Duration::from_secs(30),
    )
    .await
    .unwrap();
    assert_alices(&alice, "/app/tx").await;
    assert_alices(&alice, "/app/tx/s1").await;
    assert_no_auth(
        "the stranger votes",
        stranger.set_data("/app/tx/s1", b"commit", None).await,
    );
    assert_no_auth(
        "the stranger decides",
        stranger.create("/app/tx/decision", b"abort", &open()).await,
    );
    match Site::join(
        &stranger,
        "/app/tx",
        "s1",
        Variant::Coordinated {
            ephemeral_votes: false,
        },
    )
    .await
    {
        Err(e) => assert!(format!("{e:?}").contains("NoAuth"), "{e:?}"),
        Ok(_) => panic!("the stranger joined the transaction"),
    }
    let site = Site::join(
        &secured,
        "/app/tx",
        "s1",
        Variant::Coordinated {
            ephemeral_votes: false,
        },
    )
    .await
    .unwrap();
    site.vote(Vote::Commit).await.unwrap();
    assert_eq!(coordinator.outcome().await.unwrap(), Outcome::Commit);
}

/// Auth is sent again on every reconnect: after the connection breaks,
/// Alice's session still owns her nodes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn digest_auth_survives_a_reconnect() {
    let server = ZkServer::start();
    let proxy = herdless_tests::Proxy::start(server.port());
    let alice = ConnectOptions::new(Duration::from_secs(10))
        .digest(USER, PASSWORD)
        .connect(&proxy.addr())
        .await
        .unwrap();
    let secured = WithAcl::new(alice.clone(), Acl::CREATOR_ALL);
    let lock = Lock::new(&secured, "/app/reconnect").unwrap();
    let guard = lock.acquire().await.unwrap();
    let session = alice.session_id();

    proxy.cut();
    tokio::time::sleep(Duration::from_millis(500)).await;
    proxy.restore();
    tokio::time::timeout(Duration::from_secs(20), async {
        while !matches!(alice.state(), zk::SessionState::SyncConnected) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("alice reconnects");
    assert_eq!(alice.session_id(), session, "the same session came back");
    // Reading her node needs READ, which only her identity has.
    alice
        .get_data(guard.node_path())
        .await
        .expect("alice is authenticated on the new connection");
    guard.release().await.unwrap();
    // And she can still create under her directory.
    lock.acquire().await.unwrap().release().await.unwrap();
}

/// herdless-std's digest identity is the one ZooKeeper computes itself,
/// and `digest_acl` grants it the permissions asked and no bit beyond
/// ZooKeeper's five.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_digest_acl_is_zookeepers_identity_with_the_permissions_asked() {
    assert_eq!(herdless_std::digest_id(USER, PASSWORD), zookeeper_digest());
    let server = ZkServer::start();
    let alice = alice(&server).await;
    // ADMIN among them: ZooKeeper shows a digest's hash only to a session
    // that may administer the node (to others, `alice:x`).
    let asked = perms::READ | perms::WRITE | perms::CREATE | perms::ADMIN;
    let acl = herdless_std::digest_acl(USER, PASSWORD, asked | 1 << 7);
    assert_eq!(acl.entries()[0].perms, asked);
    let secured = WithAcl::new(alice.clone(), acl);
    Barrier::new(&secured, "/digest/gate")
        .unwrap()
        .set()
        .await
        .unwrap();
    let granted = zk::Permission::READ
        | zk::Permission::WRITE
        | zk::Permission::CREATE
        | zk::Permission::ADMIN;
    assert_alice_may(&alice, "/digest", granted).await;
    assert_alice_may(&alice, "/digest/gate", granted).await;
}

/// A [`Session`](herdless_std::Session) opened from options opens every
/// later session with them: after an expiry, the next session is Alice's
/// too, so her lock is acquired again under her creator-only directory
/// and its node is hers alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_renewed_session_authenticates_as_the_first() {
    const SHORT: Duration = Duration::from_secs(2);
    let server = ZkServer::start();
    let proxy = herdless_tests::Proxy::start(server.port());
    let options = ConnectOptions::new(SHORT).digest(USER, PASSWORD);
    assert_eq!(options.session_timeout(), SHORT);
    assert!(!options.is_tls());
    let shown = format!("{options:?}");
    assert!(
        shown.contains("digest") && !shown.contains(PASSWORD),
        "{shown}"
    );
    let session = options.session(&proxy.addr()).await.unwrap();
    let secured = WithAcl::new(session.clone(), Acl::CREATOR_ALL);
    let lock = Lock::new(&secured, "/app/renewed").unwrap();
    let guard = lock.acquire().await.unwrap();
    let first = session.session_id();

    proxy.cut();
    tokio::time::sleep(SHORT + Duration::from_millis(1500)).await;
    proxy.restore();
    tokio::time::timeout(Duration::from_secs(20), session.renewed(first))
        .await
        .expect("a new session is opened");
    assert_ne!(session.session_id(), first);
    fn current(conn: &impl Connection) -> i64 {
        conn.session_id()
    }
    assert_eq!(current(&secured), session.session_id());
    assert_eq!(current(&session.client()), session.session_id());
    drop(guard);
    let again = tokio::time::timeout(Duration::from_secs(10), lock.acquire())
        .await
        .expect("acquired on the new session")
        .expect("the new session may create under Alice's directory");
    let (_, stat) = session.client().get_data(again.node_path()).await.unwrap();
    assert_eq!(stat.ephemeral_owner, session.session_id());
    assert_alices(&alice(&server).await, again.node_path()).await;
    let shown = format!("{session:?}");
    assert!(shown.contains(&session.session_id().to_string()), "{shown}");
    assert!(!shown.contains(PASSWORD), "{shown}");
    again.release().await.unwrap();
}

/// ZooKeeper's `key` scheme (`KeyAuthenticationProvider`, in its jar): a
/// client authenticating with a number is accepted while `/key` is absent
/// or divides it, so writing `/key` revokes credentials that were good.
const KEY_PROVIDER: &str =
    "authProvider.1=org.apache.zookeeper.server.auth.KeyAuthenticationProvider\n";

/// Revokes the `key` credential `6`: 6 is not a multiple of 5.
async fn revoke_key(server: &ZkServer) {
    stranger(server)
        .await
        .create(
            "/key",
            b"5",
            &zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all()),
        )
        .await
        .expect("write /key");
}

/// A renewing session's member, configuration watcher and lock.
struct Recipes {
    member: GroupMember,
    config: Config,
    lock: Lock,
}

impl Recipes {
    async fn start(session: &herdless_std::Session) -> Recipes {
        Recipes {
            member: GroupMember::join(session, "/app/members", "edge-1", b"")
                .await
                .unwrap(),
            config: Config::watch(session, "/app/absent-config").unwrap(),
            lock: Lock::new(session, "/app/keyed").unwrap(),
        }
    }
}

/// What a renewing [`Session`](herdless_std::Session) whose authentication
/// was refused must show: its member and its configuration watcher hear
/// the end rather than waiting for a session that will never come, its
/// lock fails at once, it says why, and it stops connecting (the same
/// credentials would be refused again).
async fn assert_refused_for_good(
    session: &herdless_std::Session,
    recipes: Recipes,
    proxy: &herdless_tests::Proxy,
) {
    let Recipes {
        mut member,
        mut config,
        lock,
    } = recipes;
    let ended = tokio::time::timeout(Duration::from_secs(20), async {
        while member.next_event().await.is_some() {}
    })
    .await;
    assert!(ended.is_ok(), "the member still waits for a new session");
    match tokio::time::timeout(Duration::from_secs(10), config.wait_present()).await {
        Ok(Err(herdless_std::Error::SessionEnded)) => {}
        Ok(other) => panic!("the configuration watcher: {other:?}"),
        Err(_) => panic!("the configuration watcher still waits for a new session"),
    }
    match tokio::time::timeout(Duration::from_secs(10), lock.acquire()).await {
        Ok(Err(herdless_std::Error::SessionEnded)) => {}
        Ok(other) => panic!("a lock on the refused session: {:?}", other.map(|_| ())),
        Err(_) => panic!("a lock on the refused session waits"),
    }
    // Already there: the reason is recorded before the recipes hear no
    // session follows.
    assert!(
        matches!(
            session.ended(),
            Some(herdless_std::Error::Connect(zk::Error::AuthFailed))
        ),
        "ended: {:?}",
        session.ended()
    );
    let connections = proxy.connections();
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(
        proxy.connections(),
        connections,
        "the session keeps connecting with refused credentials"
    );
}

/// The server refuses a session's credentials when its client reconnects
/// (revoked meanwhile): zookeeper-client reports `AuthFailed`. The
/// [`Session`](herdless_std::Session) was renewing it as an expiry, for
/// ever, a new session refused every 2 s while its recipes waited.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn credentials_refused_on_a_reconnect_end_the_session() {
    let server = ZkServer::start_configured(KEY_PROVIDER);
    let proxy = herdless_tests::Proxy::start(server.port());
    let options = ConnectOptions::new(SESSION).auth("key", b"6");
    let session = options.session(&proxy.addr()).await.unwrap();
    let recipes = Recipes::start(&session).await;
    let guard = recipes.lock.acquire().await.unwrap();
    assert_eq!(session.ended(), None);

    revoke_key(&server).await;
    proxy.reset();
    tokio::time::timeout(Duration::from_secs(10), guard.lost())
        .await
        .expect("the holder hears its lock is lost");
    assert_refused_for_good(&session, recipes, &proxy).await;
    // A first connection with them is refused at once, with the same error.
    match options.connect(&server.addr()).await {
        Err(herdless_std::Error::Connect(zk::Error::AuthFailed)) => {}
        other => panic!(
            "a connect with refused credentials: {:?}",
            other.map(|_| ())
        ),
    }
}

/// The session expires, and the server refuses the credentials of the
/// next one: the [`Session`](herdless_std::Session) stops there rather
/// than trying again every 2 s for ever.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn credentials_refused_for_the_next_session_end_the_renewal() {
    const SHORT: Duration = Duration::from_secs(2);
    let server = ZkServer::start_configured(KEY_PROVIDER);
    let proxy = herdless_tests::Proxy::start(server.port());
    let options = ConnectOptions::new(SHORT).auth("key", b"6");
    let session = options.session(&proxy.addr()).await.unwrap();
    let recipes = Recipes::start(&session).await;

    proxy.cut();
    revoke_key(&server).await;
    tokio::time::sleep(SHORT + Duration::from_millis(1500)).await;
    proxy.restore();
    assert_refused_for_good(&session, recipes, &proxy).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lock_over_tls() {
    let server = ZkServer::start_tls();
    let secure = server.secure_addr().unwrap();
    let options = ConnectOptions::new(SESSION)
        .tls_ca_pem(&server.ca_pem().unwrap())
        .unwrap()
        .digest(USER, PASSWORD);
    assert!(options.is_tls());
    let client = options.connect(&secure).await.expect("connect over TLS");
    let secured = WithAcl::new(client.clone(), Acl::CREATOR_ALL);
    let lock = Lock::new(&secured, "/tls/lock").unwrap();
    let guard = lock.acquire().await.unwrap();
    assert_alices(&client, guard.node_path()).await;
    guard.release().await.unwrap();
    assert_eq!(
        client.list_children("/tls/lock").await.unwrap(),
        Vec::<String>::new()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plain_tcp_cannot_talk_to_the_secure_port() {
    let server = ZkServer::start_tls();
    let secure = server.secure_addr().unwrap();
    let plain = zk::Client::connector()
        .with_session_timeout(Duration::from_secs(2))
        .with_fail_eagerly()
        .connect(&secure);
    let attempt = tokio::time::timeout(Duration::from_secs(15), plain).await;
    assert!(
        !matches!(attempt, Ok(Ok(_))),
        "a plain client got a session on the TLS port"
    );
    // A client that does not trust the CA is refused too.
    let other_ca = ZkServer::start_tls();
    let wrong = ConnectOptions::new(Duration::from_secs(2))
        .tls_ca_pem(&other_ca.ca_pem().unwrap())
        .unwrap();
    let attempt = tokio::time::timeout(Duration::from_secs(15), wrong.connect(&secure)).await;
    assert!(
        !matches!(attempt, Ok(Ok(_))),
        "a client trusting another CA got a session"
    );
    // Over TLS, with the right CA, it works.
    let right = ConnectOptions::new(SESSION)
        .tls_ca_pem(&server.ca_pem().unwrap())
        .unwrap();
    let client = right.connect(&secure).await.unwrap();
    assert!(client.check_stat("/").await.unwrap().is_some());
}

/// The embedded driver sends its credentials again on every connection:
/// after a cut, the same session is still Alice and can create under her
/// directory (a create there without her identity is refused).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embassy_digest_auth_is_sent_again_after_a_reconnect() {
    use herdless_core::lock::{Lock as CoreLock, LockEvent};
    use herdless_core::naming::Guid;
    use herdless_embassy::wire::SessionConfig;
    use herdless_embassy::{Buffers, Zk};

    let server = ZkServer::start();
    let proxy = herdless_tests::Proxy::start(server.port());
    let (mut rx, mut tx) = ([0u8; 4096], [0u8; 1024]);
    let mut lock: CoreLock = CoreLock::new("/embedded/lock")
        .unwrap()
        .with_acl(Acl::CREATOR_ALL);
    let transport = herdless_tests::tokio_transport::TokioTransport::new(vec![proxy.addr()]);
    let mut zk: Zk<'_, _> = Zk::new(
        transport,
        Buffers::new(&mut rx, &mut tx),
        SessionConfig::new(1, 6_000).with_retry_delay_ms(200),
    );
    zk.add_auth("digest", format!("{USER}:{PASSWORD}").as_bytes())
        .unwrap();
    let id = zk.add(&mut lock).unwrap();
    zk.connect().await.unwrap();
    let session = zk.session_id();
    let guid = || Guid::from_random_bytes(uuid::Uuid::new_v4().into_bytes());
    zk.handle(id).acquire(guid()).await.unwrap();

    let alice = alice(&server).await;
    assert_alices(&alice, "/embedded").await;
    assert_alices(&alice, "/embedded/lock").await;

    proxy.cut();
    zk.run_for(embassy_time::Duration::from_millis(1_000))
        .await
        .unwrap();
    proxy.restore();
    loop {
        let event = tokio::time::timeout(Duration::from_secs(10), zk.handle(id).next_event())
            .await
            .expect("the lock resumes")
            .unwrap();
        assert_ne!(event, LockEvent::Lost);
        if event == LockEvent::Resumed {
            break;
        }
    }
    assert_eq!(zk.session_id(), session, "the same session resumed");
    zk.handle(id).release().await.unwrap();
    // A new contender node under Alice's directory: refused unless the new
    // connection authenticated as her.
    zk.handle(id).acquire(guid()).await.unwrap();
    let node: heapless::String<128> = zk.handle(id).node_path().unwrap();
    assert_alices(&alice, &node).await;
    zk.handle(id).release().await.unwrap();
    zk.close().await.unwrap();
}

/// The embedded driver whose credentials the server refuses on a reconnect
/// (ZooKeeper's `key` scheme, `/key` written meanwhile) ends the session
/// with a typed error: the lock holder hears its lock is lost, running the
/// driver fails with `SessionOver(AuthFailed)`, a new acquisition with the
/// recipe's `SessionEnded`, and the driver stops connecting (the same
/// credentials would be refused again).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embassy_refused_credentials_end_the_session() {
    use herdless_core::lock::{Lock as CoreLock, LockEvent};
    use herdless_core::naming::Guid;
    use herdless_embassy::wire::{SessionConfig, State};
    use herdless_embassy::{Buffers, Error as EmbassyError, Zk};

    let server = ZkServer::start_configured(KEY_PROVIDER);
    let proxy = herdless_tests::Proxy::start(server.port());
    let (mut rx, mut tx) = ([0u8; 4096], [0u8; 1024]);
    let mut lock: CoreLock = CoreLock::new("/embedded/keyed").unwrap();
    let transport = herdless_tests::tokio_transport::TokioTransport::new(vec![proxy.addr()]);
    let mut zk: Zk<'_, _> = Zk::new(
        transport,
        Buffers::new(&mut rx, &mut tx),
        SessionConfig::new(1, 10_000).with_retry_delay_ms(200),
    );
    zk.add_auth("key", b"6").unwrap();
    let id = zk.add(&mut lock).unwrap();
    zk.connect().await.unwrap();
    let guid = Guid::from_random_bytes(uuid::Uuid::new_v4().into_bytes());
    zk.handle(id).acquire(guid).await.unwrap();

    revoke_key(&server).await;
    proxy.reset();
    let refused = EmbassyError::SessionOver(State::AuthFailed);
    let lost = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            match zk.handle(id).next_event().await {
                Ok(LockEvent::Lost) => return Ok(()),
                Ok(_) => {}
                Err(e) => return Err(e),
            }
        }
    })
    .await
    .expect("the holder hears of the refusal");
    assert!(lost.is_ok() || lost == Err(refused), "the holder: {lost:?}");
    let connections = proxy.connections();
    assert_eq!(
        zk.run_for(embassy_time::Duration::from_millis(3_000)).await,
        Err(refused)
    );
    assert_eq!(zk.state(), State::AuthFailed);
    // The recipe itself knows no session follows.
    assert_eq!(
        zk.handle(id).acquire(guid).await,
        Err(EmbassyError::Recipe(herdless_core::Error::SessionEnded))
    );
    assert_eq!(
        proxy.connections(),
        connections,
        "the driver keeps connecting with refused credentials"
    );
}
