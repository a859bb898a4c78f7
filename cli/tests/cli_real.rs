//! The `herdless` binary against a real ZooKeeper server: every verb is run
//! as an operator's shell would run it, and checked by its exit status, its
//! output and what it leaves in ZooKeeper.

use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use herdless_std::Client;
use herdless_tests::{Proxy, ZkServer, CURATOR_CLASSPATH};
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

fn herdless(zk: &str) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_herdless"));
    command.arg("--zk").arg(zk).kill_on_drop(true);
    command
}

/// Runs to the end (a minute at most): status, stdout, stderr.
async fn run(command: &mut Command) -> (i32, String, String) {
    let out = tokio::time::timeout(Duration::from_secs(60), command.output())
        .await
        .expect("herdless ended within a minute")
        .expect("herdless ran");
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    let code = out.status.code().unwrap_or(-1);
    (code, text(&out.stdout), text(&out.stderr))
}

fn start(command: &mut Command) -> Child {
    command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("herdless started")
}

async fn finish(child: Child) -> (i32, String, String) {
    let out = tokio::time::timeout(Duration::from_secs(60), child.wait_with_output())
        .await
        .expect("herdless ended within a minute")
        .expect("herdless ran");
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (
        out.status.code().unwrap_or(-1),
        text(&out.stdout),
        text(&out.stderr),
    )
}

fn signal(child: &Child, signal: Signal) {
    let pid = i32::try_from(child.id().expect("running")).unwrap();
    kill(Pid::from_raw(pid), signal).unwrap();
}

async fn client(server: &ZkServer) -> Client {
    herdless_std::connect(&server.addr(), Duration::from_secs(10))
        .await
        .unwrap()
}

async fn children(client: &Client, dir: &str) -> Vec<String> {
    match client.get_children(dir).await {
        Ok((mut names, _)) => {
            names.sort();
            names
        }
        Err(herdless_std::zookeeper_client::Error::NoNode) => Vec::new(),
        Err(e) => panic!("listing {dir}: {e}"),
    }
}

/// Waits (20 s at most) until `dir` has `n` children.
async fn until_children(client: &Client, dir: &str, n: usize) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let names = children(client, dir).await;
        if names.len() == n {
            return names;
        }
        assert!(
            Instant::now() < deadline,
            "{dir} has {names:?}, not {n} children"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A child's stdout, line by line (one reader for its whole life: a
/// buffered reader dropped between calls would lose what it read ahead).
struct Lines(tokio::io::Lines<BufReader<tokio::process::ChildStdout>>);

impl Lines {
    fn of(child: &mut Child) -> Lines {
        Lines(BufReader::new(child.stdout.take().expect("piped stdout")).lines())
    }

    /// Reads lines until one contains `text` (20 s at most).
    async fn until(&mut self, text: &str) -> String {
        let found = tokio::time::timeout(Duration::from_secs(20), async {
            while let Some(line) = self.0.next_line().await.unwrap() {
                if line.contains(text) {
                    return line;
                }
            }
            panic!("stdout ended without {text:?}");
        });
        found
            .await
            .unwrap_or_else(|_| panic!("no {text:?} within 20 s"))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lock_runs_the_command_with_its_node_and_token_and_passes_its_status() {
    let server = ZkServer::start();
    let zk = client(&server).await;
    let (code, out, _) = run(herdless(&server.addr()).args([
        "lock",
        "/locks/job",
        "--",
        "sh",
        "-c",
        "echo \"$HERDLESS_LOCK_NODE $HERDLESS_FENCE_TOKEN\"; exit 7",
    ]))
    .await;
    assert_eq!(code, 7, "the command's status");
    let (node, token) = out.trim().split_once(' ').expect("node and token");
    assert!(
        node.starts_with("/locks/job/") && node.contains("-write-"),
        "{node}"
    );
    assert!(token.parse::<i32>().is_ok(), "{token}");
    assert_eq!(
        children(&zk, "/locks/job").await,
        Vec::<String>::new(),
        "released"
    );

    // The token grows with every holder.
    let (_, again, _) = run(herdless(&server.addr()).args([
        "lock",
        "/locks/job",
        "--",
        "sh",
        "-c",
        "echo $HERDLESS_FENCE_TOKEN",
    ]))
    .await;
    assert!(again.trim().parse::<i32>().unwrap() > token.parse::<i32>().unwrap());

    // Named as the other libraries name their nodes.
    for (flavour, mutex, marker) in [
        ("kazoo", true, "__lock__"),
        ("curator", true, "/_c_"),
        ("curator", false, "-__WRIT__"),
        ("herdless", true, "-lock-"),
    ] {
        let mut command = herdless(&server.addr());
        command.args(["--flavour", flavour, "lock"]);
        if mutex {
            command.arg("--mutex");
        }
        command.args(["/locks/job", "--", "sh", "-c", "echo $HERDLESS_LOCK_NODE"]);
        let (code, node, _) = run(&mut command).await;
        assert_eq!(code, 0);
        assert!(node.contains(marker), "{flavour}: {node}");
    }

    // A command killed by a signal: 128 + the signal, as shells say.
    let (code, _, _) =
        run(herdless(&server.addr()).args(["lock", "/locks/job", "--", "sh", "-c", "kill -9 $$"]))
            .await;
    assert_eq!(code, 137);
    // A command that does not exist: 127, and nothing left behind.
    let (code, _, err) =
        run(herdless(&server.addr()).args(["lock", "/locks/job", "--", "/no/such/command"])).await;
    assert_eq!(code, 127, "{err}");
    assert_eq!(children(&zk, "/locks/job").await, Vec::<String>::new());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lock_n_and_w_give_their_codes_and_shared_holders_share() {
    let server = ZkServer::start();
    let zk = client(&server).await;
    let addr = server.addr();
    let holder = start(herdless(&addr).args(["lock", "/locks/busy", "--", "sleep", "30"]));
    until_children(&zk, "/locks/busy", 1).await;

    let (code, _, err) =
        run(herdless(&addr).args(["lock", "-n", "/locks/busy", "--", "true"])).await;
    assert_eq!(code, 73, "{err}");
    let (code, _, _) =
        run(herdless(&addr).args(["lock", "-n", "-E", "1", "/locks/busy", "--", "true"])).await;
    assert_eq!(code, 1, "-E sets the conflict code");
    let started = Instant::now();
    let (code, _, err) =
        run(herdless(&addr).args(["lock", "-w", "1", "/locks/busy", "--", "true"])).await;
    assert_eq!(code, 74, "{err}");
    assert!(started.elapsed() >= Duration::from_secs(1));
    assert!(
        err.contains("waiting for /locks/busy"),
        "told while waiting: {err}"
    );
    let (code, _, _) =
        run(herdless(&addr).args(["lock", "-w", "0.5", "-E", "9", "/locks/busy", "--", "true"]))
            .await;
    assert_eq!(code, 9);
    // -w 0 tries once, as `flock -w 0` does: a deadline already past must
    // not give up on a free lock before the server answers.
    let (code, _, err) =
        run(herdless(&addr).args(["lock", "-w", "0", "/locks/busy", "--", "true"])).await;
    assert_eq!(code, 74, "{err}");
    for _ in 0..3 {
        let (code, _, err) =
            run(herdless(&addr).args(["lock", "-w", "0", "/locks/free", "--", "true"])).await;
        assert_eq!(code, 0, "a free lock is taken with -w 0: {err}");
        // A wait shorter than the round trips, likewise.
        let (code, _, err) =
            run(herdless(&addr).args(["lock", "-w", "0.0001", "/locks/free", "--", "true"])).await;
        assert_eq!(code, 0, "a free lock is taken with -w 0.0001: {err}");
    }
    let (code, _, err) =
        run(herdless(&addr).args(["lock", "-w", "0.0001", "/locks/busy", "--", "true"])).await;
    assert_eq!(code, 74, "{err}");
    assert_eq!(
        children(&zk, "/locks/busy").await.len(),
        1,
        "the attempts left nothing"
    );

    // SIGTERM to herdless goes on to the command: sleep dies of it.
    signal(&holder, Signal::SIGTERM);
    let (code, _, _) = finish(holder).await;
    assert_eq!(code, 128 + 15);
    until_children(&zk, "/locks/busy", 0).await;

    // Two shared holders at once; an exclusive one waits for both.
    let readers: Vec<Child> = (0..2)
        .map(|_| start(herdless(&addr).args(["lock", "-s", "/locks/busy", "--", "sleep", "30"])))
        .collect();
    until_children(&zk, "/locks/busy", 2).await;
    let (code, _, _) = run(herdless(&addr).args(["lock", "-n", "/locks/busy", "--", "true"])).await;
    assert_eq!(code, 73, "readers exclude a writer");
    let (code, _, _) =
        run(herdless(&addr).args(["lock", "-s", "-n", "/locks/busy", "--", "true"])).await;
    assert_eq!(code, 0, "readers share");
    for reader in readers {
        signal(&reader, Signal::SIGTERM);
        finish(reader).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signal_while_waiting_leaves_no_node() {
    let server = ZkServer::start();
    let zk = client(&server).await;
    let addr = server.addr();
    let holder = start(herdless(&addr).args(["lock", "/locks/wait", "--", "sleep", "30"]));
    let held = until_children(&zk, "/locks/wait", 1).await;
    for (sig, code) in [(Signal::SIGINT, 130), (Signal::SIGTERM, 143)] {
        let waiter = start(herdless(&addr).args(["lock", "/locks/wait", "--", "true"]));
        until_children(&zk, "/locks/wait", 2).await;
        signal(&waiter, sig);
        let (got, _, err) = finish(waiter).await;
        assert_eq!(got, code, "{sig:?}: {err}");
        // At once, not after the waiter's session times out.
        assert_eq!(
            children(&zk, "/locks/wait").await,
            held,
            "{sig:?} left a node"
        );
    }
    signal(&holder, Signal::SIGTERM);
    finish(holder).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lock_lost_with_its_session_stops_the_command() {
    let server = ZkServer::start();
    let zk = client(&server).await;
    let dir = tempfile::tempdir().unwrap();
    let journal = dir.path().join("journal");
    let proxy = Arc::new(Proxy::start(server.port()));

    // A command that notes SIGTERM and stops; then one that ignores it and
    // must be killed after the grace period.
    let polite = format!(
        "trap 'echo stopped >> {j}; exit 0' TERM; echo running >> {j}; while :; do sleep 0.05; done",
        j = journal.display()
    );
    let stubborn = format!(
        "trap '' TERM; echo stubborn >> {j}; while :; do sleep 0.05; done",
        j = journal.display()
    );
    for (script, grace) in [(polite, "5"), (stubborn, "1")] {
        let holder = start(herdless(&proxy.addr()).args([
            "--session-timeout",
            "2",
            "lock",
            "--grace",
            grace,
            "/locks/lost",
            "--",
            "sh",
            "-c",
            &script,
        ]));
        until_children(&zk, "/locks/lost", 1).await;
        let wait = Instant::now() + Duration::from_secs(10);
        while !journal.exists() {
            assert!(Instant::now() < wait, "the command started");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        proxy.cut();
        let cut = Instant::now();
        let (code, _, err) = finish(holder).await;
        println!(
            "lock lost after {:?} of a 2 s session cut off",
            cut.elapsed()
        );
        proxy.restore();
        assert_eq!(code, 75, "{err}");
        // Half the 2 s session is shorter than either grace period: the
        // stop starts as soon as the connection is lost.
        assert!(err.contains("may expire"), "{err}");
        let noted = std::fs::read_to_string(&journal).unwrap();
        if grace == "5" {
            assert_eq!(noted, "running\nstopped\n", "the command heard SIGTERM");
        } else {
            assert!(
                err.contains("did not stop within"),
                "killed after the grace: {err}"
            );
        }
        std::fs::remove_file(&journal).ok();
    }
    until_children(&zk, "/locks/lost", 0).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn elect_runs_the_command_while_leading_and_listen_follows_the_leader() {
    let server = ZkServer::start();
    let zk = client(&server).await;
    let addr = server.addr();
    let mut listener = start(herdless(&addr).args(["elect", "-l", "/election/gw"]));
    let mut listener_out = Lines::of(&mut listener);
    listener_out.until("no leader").await;

    let first = start(herdless(&addr).args([
        "elect",
        "/election/gw",
        "--data",
        "gw-1",
        "--",
        "sh",
        "-c",
        "echo \"$HERDLESS_LEADER_NODE\"; sleep 30",
    ]));
    listener_out.until("gw-1").await;
    // The second leader's command ends once the test has seen it lead: the
    // observer reports the latest leader, so a term shorter than a
    // notification's round trip could go unseen.
    let dir = tempfile::tempdir().unwrap();
    let seen = dir.path().join("seen");
    let second = start(herdless(&addr).args([
        "elect",
        "/election/gw",
        "--data",
        "gw-2",
        "--",
        "sh",
        "-c",
        &format!(
            "while [ ! -e {} ]; do sleep 0.05; done; exit 4",
            seen.display()
        ),
    ]));
    // Two candidates and the acknowledgement.
    until_children(&zk, "/election/gw", 3).await;
    signal(&first, Signal::SIGTERM);
    let (code, out, _) = finish(first).await;
    assert_eq!(code, 143);
    assert!(out.trim().starts_with("/election/gw/"), "{out}");
    listener_out.until("gw-2").await;
    std::fs::write(&seen, b"").unwrap();
    let (code, _, _) = finish(second).await;
    assert_eq!(code, 4, "the second leader's command's status");
    listener_out.until("no leader").await;
    signal(&listener, Signal::SIGINT);
    let (code, _, _) = finish(listener).await;
    assert_eq!(code, 0);
}

/// Beside a node named Kazoo's way, `lock` and `elect` warn that Kazoo will
/// not wait for herdless-named nodes, unless told `--flavour kazoo`; beside
/// Curator's read/write lock, likewise unless told `--flavour curator`; a
/// `--mutex` named the default way beside Curator's mutex, and a directory
/// without another library's nodes, say nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lock_and_elect_warn_beside_other_libraries_nodes() {
    use herdless_std::zookeeper_client::{Acls, CreateMode};
    let server = ZkServer::start();
    let zk = client(&server).await;
    let addr = server.addr();
    let warning = "named Kazoo's way";
    let (code, _, err) = run(herdless(&addr).args("lock -n /locks/kz -- true".split(' '))).await;
    assert_eq!(code, 0, "{err}");
    assert!(!err.contains(warning), "{err}");

    let persistent = CreateMode::Persistent.with_acls(Acls::anyone_all());
    for dir in ["/election", "/election/kz"] {
        zk.create(dir, b"", &persistent).await.unwrap();
    }
    let ephemeral = CreateMode::EphemeralSequential.with_acls(Acls::anyone_all());
    for dir in ["/locks/kz", "/election/kz"] {
        zk.create(
            &format!("{dir}/0b4c1e576c6e4b39a0a22f7f3f5cf3a1__lock__"),
            b"",
            &ephemeral,
        )
        .await
        .unwrap();
    }
    let (code, _, err) = run(herdless(&addr).args("lock -n /locks/kz -- true".split(' '))).await;
    assert_eq!(code, 73, "herdless still waits for Kazoo's node: {err}");
    assert!(err.contains(warning), "{err}");
    let (code, _, err) =
        run(herdless(&addr).args("--flavour kazoo lock --mutex -n /locks/kz -- true".split(' ')))
            .await;
    assert_eq!(code, 73, "{err}");
    assert!(!err.contains(warning), "{err}");

    let elect = start(herdless(&addr).args("elect /election/kz -- true".split(' ')));
    until_children(&zk, "/election/kz", 2).await;
    // SIGTERM while it waits: its node is deleted before it exits.
    signal(&elect, Signal::SIGTERM);
    let (_, _, err) = finish(elect).await;
    assert!(err.contains(warning), "{err}");

    // Curator: its read/write lock orders only its own names.
    let curator = "named Curator's way";
    let uuid = "0b4c1e57-6c6e-4b39-a0a2-2f7f3f5cf3a1";
    zk.create(&format!("/locks/kz/_c_{uuid}-__WRIT__"), b"", &ephemeral)
        .await
        .unwrap();
    let (code, _, err) = run(herdless(&addr).args("lock -n /locks/kz -- true".split(' '))).await;
    assert_eq!(code, 73, "{err}");
    assert!(err.contains(curator) && err.contains(warning), "{err}");
    let (code, _, err) =
        run(herdless(&addr).args("--flavour curator lock -n /locks/kz -- true".split(' '))).await;
    assert_eq!(code, 73, "{err}");
    assert!(!err.contains(curator) && err.contains(warning), "{err}");
    // Its mutex orders `<guid>-lock-N` rightly: a --mutex says nothing.
    let (code, _, err) = run(herdless(&addr).args("lock -n /locks/mutex -- true".split(' '))).await;
    assert_eq!(code, 0, "{err}");
    zk.create(&format!("/locks/mutex/_c_{uuid}-lock-"), b"", &ephemeral)
        .await
        .unwrap();
    let (code, _, err) =
        run(herdless(&addr).args("lock --mutex -n /locks/mutex -- true".split(' '))).await;
    assert_eq!(code, 73, "{err}");
    assert!(!err.contains(curator), "{err}");
    let (code, _, err) = run(herdless(&addr).args("lock -n /locks/mutex -- true".split(' '))).await;
    assert_eq!(code, 73, "{err}");
    assert!(
        err.contains(curator),
        "the write side is not ordered by Curator: {err}"
    );
}

/// A directory shared by a herdless holder, a Curator InterProcessMutex and
/// a Kazoo Lock waiting behind it: `inspect` names each library, orders
/// them, and says who holds; `break` deletes the holder's node, the
/// holder's command is stopped, and the next in line goes in.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inspect_and_break_a_lock_shared_with_curator_and_kazoo() {
    let server = ZkServer::start();
    let zk = client(&server).await;
    let addr = server.addr();
    let holder =
        start(herdless(&addr).args(["lock", "--mutex", "/locks/mixed", "--", "sleep", "60"]));
    until_children(&zk, "/locks/mixed", 1).await;
    let peers = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/peers");
    let mut curator = Command::new("java")
        .arg("-cp")
        .arg(CURATOR_CLASSPATH.join(":"))
        .arg(format!("{peers}/CuratorMutexWaiter.java"))
        .args([addr.as_str(), "/locks/mixed"])
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("java runs");
    let mut curator_out = Lines::of(&mut curator);
    until_children(&zk, "/locks/mixed", 2).await;
    let mut kazoo = Command::new("/usr/bin/python3")
        .arg(format!("{peers}/kazoo_lock_waiter.py"))
        .args([addr.as_str(), "/locks/mixed"])
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("python3 runs");
    let mut kazoo_out = Lines::of(&mut kazoo);
    until_children(&zk, "/locks/mixed", 3).await;

    let (code, out, err) = run(herdless(&addr).args(["--json", "inspect", "/locks/mixed"])).await;
    assert_eq!(code, 0, "{err}");
    let seen: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(seen["recipe"], "lock");
    let flavours: Vec<&str> = seen["contenders"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["flavour"].as_str().unwrap())
        .collect();
    assert_eq!(
        flavours,
        ["herdless", "curator", "kazoo"],
        "in the order they queued"
    );
    let holds: Vec<bool> = seen["contenders"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["holds"].as_bool().unwrap())
        .collect();
    assert_eq!(holds, [true, false, false]);
    assert_eq!(seen["contenders"][2]["data"], "kazoo-waiter");
    assert!(seen["contenders"][0]["session"]
        .as_str()
        .unwrap()
        .starts_with("0x"));

    let (code, table, _) = run(herdless(&addr).args(["inspect", "/locks/mixed"])).await;
    assert_eq!(code, 0);
    println!("{table}");
    assert!(table.starts_with("/locks/mixed (lock)"), "{table}");
    assert!(
        table.contains("curator") && table.contains("kazoo"),
        "{table}"
    );

    // `break` asks first: "no" deletes nothing, "y" deletes the holder's.
    async fn answer(addr: &str, reply: &[u8]) -> (i32, String, String) {
        use tokio::io::AsyncWriteExt;
        let mut asking = herdless(addr);
        asking.args(["break", "/locks/mixed"]).stdin(Stdio::piped());
        let mut asked = start(&mut asking);
        let mut stdin = asked.stdin.take().unwrap();
        stdin.write_all(reply).await.unwrap();
        drop(stdin);
        finish(asked).await
    }
    let (code, _, err) = answer(&addr, b"n\n").await;
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("delete /locks/mixed/"), "it asked: {err}");
    assert_eq!(children(&zk, "/locks/mixed").await.len(), 3);
    let (code, _, err) = answer(&addr, b"y\n").await;
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = finish(holder).await;
    assert_eq!(code, 75, "the holder hears its lock is lost: {err}");
    curator_out.until("acquired").await;
    let _ = curator.kill().await;
    kazoo_out.until("acquired").await;
    let _ = kazoo.kill().await;

    let (code, _, _) = run(herdless(&addr).args(["break", "--yes", "/locks/nothing-here"])).await;
    assert_eq!(code, 66, "no holder to break");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn revoke_asks_a_revocable_holder_and_force_deletes_its_node() {
    let server = ZkServer::start();
    let zk = client(&server).await;
    let addr = server.addr();
    let lock = herdless_std::Lock::new(&zk, "/locks/revocable").unwrap();
    let guard = lock.acquire_revocable().await.unwrap();
    let node = guard.node_path().to_owned();
    let (code, out, err) = run(herdless(&addr).args(["revoke", &node])).await;
    assert_eq!((code, out.trim()), (0, "requested"), "{err}");
    tokio::time::timeout(Duration::from_secs(10), guard.revocation_requested())
        .await
        .expect("the holder heard the request");
    // It does not release: forced after the grace period.
    let (code, out, _) =
        run(herdless(&addr).args(["revoke", "--force", "--grace", "0.5", &node])).await;
    assert_eq!((code, out.trim()), (0, "forced"));
    assert!(children(&zk, "/locks/revocable").await.is_empty());
    let (code, out, _) = run(herdless(&addr).args(["revoke", &node])).await;
    assert_eq!((code, out.trim()), (66, "not-held"));

    // A mistyped path, to a configuration node or to the lock's own
    // directory, is refused before anything is written or deleted.
    use herdless_std::zookeeper_client::{Acls, CreateMode};
    let persistent = CreateMode::Persistent.with_acls(Acls::anyone_all());
    zk.create("/app", b"", &persistent).await.unwrap();
    zk.create("/app/config", b"keep me", &persistent)
        .await
        .unwrap();
    for target in ["/app/config", "/locks/revocable"] {
        let (code, _, err) =
            run(herdless(&addr).args(["revoke", "--force", "--grace", "0.1", target])).await;
        assert_eq!(code, 64, "{target}: {err}");
        assert!(err.contains("not a lock contender's node"), "{err}");
    }
    let (data, _) = zk.get_data("/app/config").await.unwrap();
    assert_eq!(data, b"keep me");
    assert!(zk.check_stat("/locks/revocable").await.unwrap().is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn barrier_set_wait_remove() {
    let server = ZkServer::start();
    let addr = server.addr();
    let (code, _, _) = run(herdless(&addr).args(["barrier", "wait", "/barriers/b"])).await;
    assert_eq!(code, 0, "not set: no wait");
    let (code, _, _) = run(herdless(&addr).args(["barrier", "set", "/barriers/b"])).await;
    assert_eq!(code, 0);
    let (_, out, _) =
        run(herdless(&addr).args(["--json", "inspect", "--as", "barrier", "/barriers/b"])).await;
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&out).unwrap()["set"],
        true
    );
    let waiter = start(herdless(&addr).args(["barrier", "wait", "/barriers/b"]));
    tokio::time::sleep(Duration::from_millis(500)).await;
    let (code, _, _) = run(herdless(&addr).args(["barrier", "remove", "/barriers/b"])).await;
    assert_eq!(code, 0);
    let (code, _, _) = finish(waiter).await;
    assert_eq!(code, 0, "the waiter went on");
}

/// `barrier enter`: three processes' commands start only once all three
/// have entered, each `herdless` returns only once every command has
/// ended, with its own command's status, and nothing is left.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn barrier_enter_runs_the_commands_together_and_returns_once_all_left() {
    let server = ZkServer::start();
    let zk = client(&server).await;
    let addr = server.addr();
    let files = tempfile::tempdir().unwrap();
    let dir = files.path().to_str().unwrap().to_owned();
    // Process i writes its node's path when its command starts, sleeps i
    // tenths of a second, says it ended, and exits with status i.
    let process = |i: u32| {
        let script = format!(
            "echo \"$HERDLESS_BARRIER_NODE\" > {dir}/start-{i}; sleep 0.{i}; touch {dir}/end-{i}; exit {i}"
        );
        let name = format!("p{i}");
        start(herdless(&addr).args([
            "barrier",
            "enter",
            "/barriers/round",
            "-c",
            "3",
            "--name",
            &name,
            "--",
            "sh",
            "-c",
            &script,
        ]))
    };
    let started = |i: u32| files.path().join(format!("start-{i}")).exists();
    let first = [process(0), process(2)];
    until_children(&zk, "/barriers/round", 2).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        !started(0) && !started(2),
        "a command ran before all three entered"
    );
    let last = process(1);
    let [p0, p2] = first;
    let (code, _, err) = finish(p0).await;
    assert_eq!(code, 0, "{err}");
    // p0's command ended at once, p2's after 0.2 s: p0 returned after it.
    assert!(
        files.path().join("end-2").exists(),
        "p0 left before p2's command ended"
    );
    assert_eq!(finish(last).await.0, 1, "the command's status");
    assert_eq!(finish(p2).await.0, 2);
    for i in 0..3 {
        let node = std::fs::read_to_string(files.path().join(format!("start-{i}"))).unwrap();
        assert_eq!(node.trim(), format!("/barriers/round/p{i}"));
    }
    let left: Vec<String> = children(&zk, "/barriers/round")
        .await
        .into_iter()
        .filter(|n| n.starts_with('p'))
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

/// `barrier enter -w` gives up when the others do not come (74, or -E's
/// code), and a signal while waiting exits 128 + N: each time at once,
/// with this process's node deleted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn barrier_enter_gives_up_on_its_wait_or_a_signal_leaving_no_node() {
    let server = ZkServer::start();
    let zk = client(&server).await;
    let addr = server.addr();
    let enter = ["barrier", "enter", "/barriers/few", "-c", "2"];
    let (code, _, err) = run(herdless(&addr)
        .args(enter)
        .args(["-w", "0.5", "--", "true"]))
    .await;
    assert_eq!(code, 74, "{err}");
    assert!(err.contains("within the wait"), "{err}");
    assert!(children(&zk, "/barriers/few")
        .await
        .iter()
        .all(|n| n == "ready"));
    let (code, _, _) = run(herdless(&addr)
        .args(enter)
        .args(["-w", "0.5", "-E", "9", "--", "true"]))
    .await;
    assert_eq!(code, 9);
    let waiter = start(
        herdless(&addr)
            .args(enter)
            .args(["--name", "w", "--", "true"]),
    );
    until_children(&zk, "/barriers/few", 1).await;
    signal(&waiter, Signal::SIGINT);
    let (code, _, err) = finish(waiter).await;
    assert_eq!(code, 130, "{err}");
    assert!(
        children(&zk, "/barriers/few").await.is_empty(),
        "the interrupted process's node stayed"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queue_put_take_peek_with_priorities() {
    let server = ZkServer::start();
    let addr = server.addr();
    let (code, _, _) = run(herdless(&addr).args(["queue", "peek", "/jobs"])).await;
    assert_eq!(code, 66, "empty");
    for (data, priority) in [("later", "50"), ("first", "0")] {
        let (code, out, err) =
            run(herdless(&addr).args(["queue", "put", "--priority", priority, "/jobs", data]))
                .await;
        assert_eq!(code, 0, "{err}");
        assert!(!out.trim().is_empty(), "the node's name");
    }
    let (_, head, _) = run(herdless(&addr).args(["queue", "peek", "/jobs"])).await;
    assert_eq!(head.trim(), "first");
    let (code, _, err) =
        run(herdless(&addr).args(["queue", "put", "--priority", "100", "/jobs", "x"])).await;
    assert_eq!(code, 64, "priorities end at 99: {err}");
    assert!(err.contains("0..=99"), "the range is told: {err}");
    let (_, depth, _) = run(herdless(&addr).args(["--json", "inspect", "/jobs"])).await;
    let depth: serde_json::Value = serde_json::from_str(&depth).unwrap();
    assert_eq!(
        (depth["recipe"].as_str(), depth["depth"].as_u64()),
        (Some("queue"), Some(2))
    );
    let (_, one, _) = run(herdless(&addr).args(["queue", "take", "/jobs"])).await;
    let (_, two, _) = run(herdless(&addr).args(["queue", "take", "/jobs"])).await;
    assert_eq!((one.trim(), two.trim()), ("first", "later"));
    let (code, _, _) = run(herdless(&addr).args(["queue", "take", "-w", "0.3", "/jobs"])).await;
    assert_eq!(code, 66, "nothing within the wait");
    // -w 0 takes an item already there, and exits 66 on an empty queue.
    run(herdless(&addr).args(["queue", "put", "/jobs", "now"])).await;
    let (code, out, err) = run(herdless(&addr).args(["queue", "take", "-w", "0", "/jobs"])).await;
    assert_eq!((code, out.trim()), (0, "now"), "{err}");
    let (code, _, _) = run(herdless(&addr).args(["queue", "take", "-w", "0", "/jobs"])).await;
    assert_eq!(code, 66);
    // A take waits for the next put.
    let taker = start(herdless(&addr).args(["queue", "take", "/jobs"]));
    tokio::time::sleep(Duration::from_millis(300)).await;
    run(herdless(&addr).args(["queue", "put", "/jobs", "late"])).await;
    let (code, out, _) = finish(taker).await;
    assert_eq!((code, out.trim()), (0, "late"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn config_get_set_with_versions_and_watch() {
    let server = ZkServer::start();
    let addr = server.addr();
    let (code, out, _) = run(herdless(&addr).args(["config", "get", "/config/db"])).await;
    assert_eq!((code, out.trim()), (66, "(missing)"));
    let (code, out, err) =
        run(herdless(&addr).args(["config", "set", "/config/db", "host=a"])).await;
    assert_eq!((code, out.trim()), (0, "0"), "created at version 0: {err}");
    let mut watcher = start(herdless(&addr).args(["config", "watch", "/config/db"]));
    let mut watcher_out = Lines::of(&mut watcher);
    watcher_out.until("host=a").await;
    let (_, got, _) = run(herdless(&addr).args(["--json", "config", "get", "/config/db"])).await;
    let got: serde_json::Value = serde_json::from_str(&got).unwrap();
    assert_eq!(
        (got["data"].as_str(), got["version"].as_i64()),
        (Some("host=a"), Some(0))
    );
    let (code, out, _) =
        run(herdless(&addr).args(["config", "set", "--version", "0", "/config/db", "host=b"]))
            .await;
    assert_eq!((code, out.trim()), (0, "1"));
    watcher_out.until("host=b").await;
    let (code, _, err) =
        run(herdless(&addr).args(["config", "set", "--version", "0", "/config/db", "host=c"]))
            .await;
    assert_eq!(code, 73, "a stale version is refused: {err}");
    let (_, out, _) = run(herdless(&addr).args(["config", "get", "/config/db"])).await;
    assert_eq!(out.trim(), "host=b");
    signal(&watcher, Signal::SIGINT);
    assert_eq!(finish(watcher).await.0, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn members_join_list_watch() {
    let server = ZkServer::start();
    let zk = client(&server).await;
    let addr = server.addr();
    let mut watcher = start(herdless(&addr).args(["members", "watch", "/fleet"]));
    let mut watcher_out = Lines::of(&mut watcher);
    let member =
        start(herdless(&addr).args(["members", "join", "/fleet", "gw-1", "--data", "10.0.0.1"]));
    watcher_out.until("+ gw-1").await;
    let (code, out, _) = run(herdless(&addr).args(["members", "list", "/fleet"])).await;
    assert_eq!((code, out.trim()), (0, "gw-1"));
    let (_, json, _) = run(herdless(&addr).args(["--json", "members", "list", "/fleet"])).await;
    let json: serde_json::Value = serde_json::from_str(json.trim()).unwrap();
    assert_eq!(json["data"], "10.0.0.1");
    signal(&member, Signal::SIGINT);
    assert_eq!(finish(member).await.0, 0);
    watcher_out.until("- gw-1").await;
    assert!(children(&zk, "/fleet").await.is_empty(), "left at once");
    signal(&watcher, Signal::SIGTERM);
    assert_eq!(finish(watcher).await.0, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tx_status_shows_votes_and_the_decision() {
    use herdless_std::two_phase::{Coordinator, Site, Variant, Vote};
    let server = ZkServer::start();
    let zk = client(&server).await;
    let addr = server.addr();
    let coordinator = Coordinator::start(
        &zk,
        "/tx/t1",
        b"move 5",
        &["a", "b"],
        Variant::AllWatch,
        Duration::from_secs(30),
    )
    .await
    .unwrap();
    let a = Site::join(&zk, "/tx/t1", "a", Variant::AllWatch)
        .await
        .unwrap();
    a.vote(Vote::Commit).await.unwrap();
    let (code, out, err) = run(herdless(&addr).args(["--json", "tx", "status", "/tx/t1"])).await;
    assert_eq!(code, 0, "{err}");
    let seen: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(seen["body"], "move 5");
    assert_eq!(seen["decision"], serde_json::Value::Null);
    let votes: Vec<(&str, &str)> = seen["votes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| (v["name"].as_str().unwrap(), v["vote"].as_str().unwrap()))
        .collect();
    assert_eq!(votes, [("a", "commit"), ("b", "pending")]);
    let b = Site::join(&zk, "/tx/t1", "b", Variant::AllWatch)
        .await
        .unwrap();
    b.vote(Vote::Commit).await.unwrap();
    coordinator.outcome().await.unwrap();
    let (_, out, _) = run(herdless(&addr).args(["tx", "status", "/tx/t1"])).await;
    assert!(out.contains("decision: commit"), "{out}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn usage_and_connection_errors_have_their_codes() {
    let (code, _, err) =
        run(herdless("127.0.0.1:1").args(["lock", "not-a-path", "--", "true"])).await;
    assert!(code == 64 || code == 69, "{code}: {err}");
    let (code, _, _) = run(herdless("127.0.0.1:1").args(["lock", "/x"])).await;
    assert_eq!(code, 64, "no command");
    let (code, _, _) = run(herdless("127.0.0.1:1").args(["no-such-verb"])).await;
    assert_eq!(code, 64);
    let (code, out, _) = run(herdless("127.0.0.1:1").args(["lock", "--help"])).await;
    assert_eq!(code, 0);
    assert!(out.contains("Examples:"), "{out}");
    // Nothing listens on port 1.
    let (code, _, err) =
        run(herdless("127.0.0.1:1").args(["--session-timeout", "2", "inspect", "/x"])).await;
    assert_eq!(code, 69, "{err}");
    let server = ZkServer::start();
    let (code, _, err) =
        run(herdless(&server.addr()).args(["lock", "not-a-path", "--", "true"])).await;
    assert_eq!(code, 64, "an invalid path is a usage error: {err}");
    // The README's limits: a lock's directory of 73 bytes (68 named
    // Curator's way, 74 and 71 for a mutex) leaves room for its node in
    // 128; one more byte is a usage error before anything is created.
    let client = client(&server).await;
    for (mode, flavour, longest) in [
        ("write", "herdless", 73),
        ("write", "curator", 68),
        ("mutex", "herdless", 74),
        ("mutex", "curator", 71),
    ] {
        let lock = |dir: &str| {
            let mut command = herdless(&server.addr());
            command.args(["lock", "--flavour", flavour]);
            if mode == "mutex" {
                command.arg("--mutex");
            }
            command.args([dir, "--", "true"]);
            command
        };
        let fits = format!("/{}", "l".repeat(longest - 1));
        let (code, _, err) = run(&mut lock(&fits)).await;
        assert_eq!(code, 0, "{mode} {flavour}, {longest} bytes: {err}");
        let over = format!("{fits}l");
        let (code, _, err) = run(&mut lock(&over)).await;
        assert_eq!(code, 64, "{mode} {flavour}, {} bytes: {err}", longest + 1);
        assert!(err.contains("needs 129 bytes"), "{err}");
        assert_eq!(
            client.check_stat(&over).await.unwrap(),
            None,
            "nothing is created"
        );
    }
}

/// A lost connection puts the lock in doubt: a warning on stderr while the
/// command keeps running, and word when it is back; with
/// `--kill-on-suspend` the command is stopped at once instead.
/// Cut off without a word, a holder cannot hear its session expire: its
/// command is stopped, grace period included, before the server can have
/// expired the session, so before the next holder's command starts. It
/// was stopped only once the session was known lost, after the next
/// holder's command had started (16 runs of 16 for a tester).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_holder_cut_off_silently_stops_its_command_before_the_next_holder_starts() {
    let server = ZkServer::start();
    let zk = client(&server).await;
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("marker");
    let proxy = Proxy::start(server.port());
    let first = format!(
        "trap 'rm -f {m}; exit 0' TERM; set -C; echo a > {m} || exit 9; while :; do sleep 0.05; done",
        m = marker.display()
    );
    let holder = start(herdless(&proxy.addr()).args([
        "--session-timeout",
        "4",
        "lock",
        "--grace",
        "0.5",
        "/locks/silent",
        "--",
        "sh",
        "-c",
        &first,
    ]));
    until_children(&zk, "/locks/silent", 1).await;
    while !marker.exists() {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let second = format!(
        "set -C; echo b > {m} || {{ echo overlap; exit 9; }}; rm -f {m}",
        m = marker.display()
    );
    let next =
        start(herdless(&server.addr()).args(["lock", "/locks/silent", "--", "sh", "-c", &second]));
    until_children(&zk, "/locks/silent", 2).await;
    proxy.silence();
    let (code, out, err) = finish(next).await;
    assert_eq!(
        (code, out.as_str()),
        (0, ""),
        "the next holder overlapped: {err}"
    );
    let (code, _, err) = finish(holder).await;
    assert_eq!(code, 75, "{err}");
    assert!(err.contains("may expire"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_suspended_lock_warns_or_with_kill_on_suspend_stops_the_command() {
    let server = ZkServer::start();
    let zk = client(&server).await;
    let proxy = Proxy::start(server.port());
    let holder = start(herdless(&proxy.addr()).args(["lock", "/locks/doubt", "--", "sleep", "60"]));
    until_children(&zk, "/locks/doubt", 1).await;
    proxy.cut();
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    proxy.restore();
    // Back well within the 10 s session: still held, still running.
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(children(&zk, "/locks/doubt").await.len(), 1);
    signal(&holder, Signal::SIGTERM);
    let (code, _, err) = finish(holder).await;
    assert_eq!(code, 143, "it ran until stopped: {err}");
    assert!(err.contains("connection to ZooKeeper lost"), "{err}");
    assert!(err.contains("connection back"), "{err}");

    let holder = start(herdless(&proxy.addr()).args([
        "lock",
        "--kill-on-suspend",
        "/locks/doubt",
        "--",
        "sleep",
        "60",
    ]));
    until_children(&zk, "/locks/doubt", 1).await;
    let cut = Instant::now();
    proxy.cut();
    let (code, _, err) = finish(holder).await;
    assert_eq!(code, 75, "{err}");
    assert!(
        cut.elapsed() < Duration::from_secs(5),
        "stopped at once: {:?}",
        cut.elapsed()
    );
    proxy.restore();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inspect_shows_a_double_barrier_and_a_group() {
    use herdless_std::barrier::DoubleBarrier;
    let server = ZkServer::start();
    let zk = client(&server).await;
    let addr = server.addr();
    let barrier = DoubleBarrier::new(&zk, "/barriers/round", "p1").unwrap();
    let entering = tokio::spawn(async move { barrier.enter(2).await.map(|_| ()) });
    until_children(&zk, "/barriers/round", 1).await;
    let (code, out, err) = run(herdless(&addr).args([
        "--json",
        "inspect",
        "--as",
        "double-barrier",
        "/barriers/round",
    ]))
    .await;
    assert_eq!(code, 0, "{err}");
    let seen: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(seen["processes"][0]["name"], "p1");
    assert_eq!(seen["ready"], false, "one of two arrived");
    entering.abort();

    let member = start(herdless(&addr).args(["members", "join", "/fleet", "gw-9", "--data", "x"]));
    until_children(&zk, "/fleet", 1).await;
    let (_, out, _) = run(herdless(&addr).args(["inspect", "--as", "group", "/fleet"])).await;
    assert!(
        out.starts_with("/fleet (group)") && out.contains("gw-9"),
        "{out}"
    );
    signal(&member, Signal::SIGTERM);
    finish(member).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_verb_has_help_with_examples() {
    for verb in [
        "lock", "elect", "inspect", "break", "revoke", "barrier", "queue", "config", "members",
        "tx",
    ] {
        let (code, out, _) = run(herdless("127.0.0.1:1").args([verb, "--help"])).await;
        assert_eq!(code, 0, "{verb}");
        assert!(
            out.contains("Example"),
            "{verb} --help has examples:\n{out}"
        );
    }
    let (_, out, _) = run(herdless("127.0.0.1:1").arg("--help")).await;
    assert!(out.contains("Exit status"), "{out}");
}

/// A lock whose directory only its user may read: `inspect` is refused
/// without credentials (exit 69) and works with `--digest`; `break
/// --node NAME` deletes that node and its holder hears the lock is lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn digest_credentials_and_break_by_node_name() {
    use herdless_std::{Acl, ConnectOptions, WithAcl};
    let server = ZkServer::start();
    let addr = server.addr();
    let app = ConnectOptions::new(Duration::from_secs(10))
        .digest("app", "secret")
        .connect(&addr)
        .await
        .unwrap();
    let app = WithAcl::new(app, Acl::CREATOR_ALL);
    let guard = herdless_std::Lock::new(&app, "/private/lock")
        .unwrap()
        .acquire()
        .await
        .unwrap();
    let name = guard.node_path().rsplit('/').next().unwrap().to_owned();

    let (code, _, err) = run(herdless(&addr).args(["inspect", "/private/lock"])).await;
    assert_eq!(code, 69, "no credentials, no listing: {err}");
    let (code, out, err) = run(herdless(&addr).args([
        "--digest",
        "app:secret",
        "--json",
        "inspect",
        "/private/lock",
    ]))
    .await;
    assert_eq!(code, 0, "{err}");
    let seen: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(seen["contenders"][0]["name"], name.as_str());

    let (code, _, _) = run(herdless(&addr).args([
        "--digest",
        "app:secret",
        "break",
        "--yes",
        "--node",
        "no-such-node",
        "/private/lock",
    ]))
    .await;
    assert_eq!(code, 66);
    let (code, _, err) = run(herdless(&addr).args([
        "--digest",
        "app:secret",
        "break",
        "--yes",
        "--node",
        &name,
        "/private/lock",
    ]))
    .await;
    assert_eq!(code, 0, "{err}");
    tokio::time::timeout(Duration::from_secs(10), guard.lost())
        .await
        .expect("the holder is told its lock is lost");
    let (code, _, _) = run(herdless(&addr).args(["--digest", "no-colon", "inspect", "/"])).await;
    assert_eq!(code, 64);
}

/// `herdless` killed outright (SIGKILL, the OOM killer) cannot stop its
/// command, and its session's end soon lets the next contender in: the
/// command must die with it, or there would be two holders.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_herdless_takes_its_command_with_it() {
    let server = ZkServer::start();
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("pid");
    let holder = start(herdless(&server.addr()).args([
        "lock",
        "/locks/killed",
        "--",
        "sh",
        "-c",
        &format!("echo $$ > {}; exec sleep 60", pidfile.display()),
    ]));
    let deadline = Instant::now() + Duration::from_secs(20);
    let pid = loop {
        if let Some(pid) = std::fs::read_to_string(&pidfile)
            .ok()
            .and_then(|p| p.trim().parse::<u32>().ok())
        {
            break pid;
        }
        assert!(Instant::now() < deadline, "the command started");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    signal(&holder, Signal::SIGKILL);
    // Not its output: the command, if it lived on, would hold the pipe.
    let mut holder = holder;
    holder.wait().await.unwrap();
    // Gone, or a zombie waiting for whoever adopted it to reap it.
    let alive = || {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .map(|stat| {
                !stat
                    .rsplit(')')
                    .next()
                    .unwrap_or("")
                    .trim_start()
                    .starts_with('Z')
            })
            .unwrap_or(false)
    };
    let deadline = Instant::now() + Duration::from_secs(5);
    while alive() {
        assert!(Instant::now() < deadline, "the command outlived herdless");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// While the command runs, `herdless` only waits: it must not spin on the
/// lock's state (a flock that burns a core is a bug of its own).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_lock_costs_no_cpu() {
    let server = ZkServer::start();
    let zk = client(&server).await;
    let holder = start(herdless(&server.addr()).args(["lock", "/locks/idle", "--", "sleep", "60"]));
    until_children(&zk, "/locks/idle", 1).await;
    let pid = holder.id().unwrap();
    // utime + stime, in clock ticks (fields 14 and 15 of /proc/PID/stat).
    let cpu = || {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
        let fields: Vec<u64> = stat
            .rsplit(')')
            .next()
            .unwrap()
            .split_whitespace()
            .skip(11)
            .take(2)
            .map(|f| f.parse().unwrap())
            .collect();
        fields.iter().sum::<u64>()
    };
    let before = cpu();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let spent = cpu() - before;
    // A tick is 10 ms: a spinning loop would spend close to 200.
    assert!(spent < 30, "{spent} ticks of CPU in 2 s while holding");
    signal(&holder, Signal::SIGTERM);
    finish(holder).await;
}

/// A chroot that does not exist is named as the cause, with what to do,
/// rather than every verb failing with "node does not exist" on its own
/// path; once it exists, the verbs work under it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_chroot_is_named_and_an_existing_one_is_used() {
    let server = ZkServer::start();
    let chrooted = format!("{}/apps/billing", server.addr());
    for verb in [
        &["lock", "/locks/l", "--", "true"][..],
        &["config", "get", "/c"],
        &["inspect", "/"],
    ] {
        let (code, out, err) = run(herdless(&chrooted).args(verb)).await;
        assert_eq!(code, 66, "{verb:?}: {out} {err}");
        assert!(
            err.contains("the chroot /apps/billing does not exist"),
            "{verb:?}: {err}"
        );
    }
    let root = client(&server).await;
    assert_eq!(children(&root, "/").await, ["zookeeper"], "nothing created");

    for node in ["/apps", "/apps/billing"] {
        root.create(
            node,
            b"",
            &herdless_std::zookeeper_client::CreateMode::Persistent
                .with_acls(herdless_std::zookeeper_client::Acls::anyone_all()),
        )
        .await
        .unwrap();
    }
    let (code, out, err) =
        run(herdless(&chrooted).args(["lock", "/locks/l", "--", "echo", "in"])).await;
    assert_eq!((code, out.trim()), (0, "in"), "{err}");
    assert_eq!(children(&root, "/apps/billing/locks").await, ["l"]);

    // A malformed chroot or address is a usage error, at once, not a
    // server unavailable after the session timeout.
    let port = server.port();
    for zk in [
        format!("127.0.0.1:{port}/apps/"),
        format!("127.0.0.1:{port}/apps//billing"),
        format!("127.0.0.1:{port}/apps/.."),
        "127.0.0.1:99999".to_owned(),
    ] {
        let started = Instant::now();
        let (code, _, err) = run(herdless(&zk).args(["config", "get", "/x"])).await;
        assert_eq!(code, 64, "{zk}: {err}");
        assert!(started.elapsed() < Duration::from_secs(5), "{zk}");
    }
}

/// The `count` pids a command's script writes to `file`, one a line, once
/// it has written them all.
async fn pids_written(file: &std::path::Path, count: usize) -> Vec<i32> {
    let started = Instant::now();
    loop {
        let text = std::fs::read_to_string(file).unwrap_or_default();
        let listed: Vec<i32> = text.lines().filter_map(|l| l.trim().parse().ok()).collect();
        if listed.len() == count {
            return listed;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "the script ran"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Every process: its pid, state and parent's pid.
fn process_table() -> Vec<(i32, String, i32)> {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| {
            let entry = e.ok()?;
            let pid: i32 = entry.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(entry.path().join("stat")).ok()?;
            let (_, rest) = stat.rsplit_once(')')?;
            let fields: Vec<&str> = rest.split_whitespace().collect();
            Some((
                pid,
                fields.first()?.to_string(),
                fields.get(1)?.parse().ok()?,
            ))
        })
        .collect()
}

/// Whether the process `pid` is gone (or a zombie waiting to be reaped).
fn gone(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_lock_stops_every_process_the_command_started_not_only_the_command() {
    let server = ZkServer::start();
    let zk = client(&server).await;
    let addr = server.addr();
    let dir = tempfile::tempdir().unwrap();
    let pids = dir.path().join("pids");
    // A script's child, and a grandchild whose parent (a subshell) has
    // already exited: an orphan. Neither holds herdless's output open, so
    // its end is not waited for by reading it.
    let script = format!(
        "sleep 60 >/dev/null 2>&1 & echo $! > {p}; (sleep 60 >/dev/null 2>&1 & echo $! >> {p}); wait",
        p = pids.display()
    );
    let holder = start(herdless(&addr).args(["lock", "/locks/tree", "--", "sh", "-c", &script]));
    let listed = pids_written(&pids, 2).await;
    let (code, _, err) = run(herdless(&addr).args(["break", "--yes", "/locks/tree"])).await;
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = finish(holder).await;
    assert_eq!(code, 75, "{err}");
    for pid in listed {
        let deadline = Instant::now() + Duration::from_secs(5);
        while !gone(pid) && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(gone(pid), "process {pid} the command started still runs");
    }
    assert!(children(&zk, "/locks/tree").await.is_empty());
}

/// herdless killed with SIGKILL (or by the OOM killer) cannot stop
/// anything itself: its guard hears of its death and stops the whole tree
/// within the grace period, before the session expires and the next
/// contender goes in. Only the command's own process died with it before.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn herdless_killed_with_sigkill_takes_everything_the_command_started_with_it() {
    let server = ZkServer::start();
    let addr = server.addr();
    let dir = tempfile::tempdir().unwrap();
    let pids = dir.path().join("pids");
    // The script's own pid, a child that ignores SIGTERM (killed after the
    // grace period) and an orphaned grandchild.
    let script = format!(
        "echo $$ > {p}; sh -c 'trap \"\" TERM; sleep 60' >/dev/null 2>&1 & echo $! >> {p}; \
         (sleep 60 >/dev/null 2>&1 & echo $! >> {p}); wait",
        p = pids.display()
    );
    let mut holder = start(herdless(&addr).args([
        "lock",
        "--grace",
        "1",
        "/locks/killed",
        "--",
        "sh",
        "-c",
        &script,
    ]));
    let listed = pids_written(&pids, 3).await;
    holder.start_kill().unwrap();
    let _ = holder.wait().await;
    let killed = Instant::now();
    for pid in listed {
        while !gone(pid) && killed.elapsed() < Duration::from_secs(5) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(
            gone(pid),
            "process {pid} the command started outlived herdless"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leader_whose_node_an_operator_deleted_takes_its_acknowledgement_with_it() {
    let server = ZkServer::start();
    let zk = client(&server).await;
    let addr = server.addr();
    // Rounds: the acknowledgement's delete raced herdless's exit before.
    for round in 0..6 {
        let dir = format!("/election/op{round}");
        let leader = start(herdless(&addr).args(["elect", &dir, "--", "sleep", "30"]));
        // The candidate and the acknowledgement.
        let names = until_children(&zk, &dir, 2).await;
        let candidate = names.iter().find(|n| *n != "leader").unwrap();
        zk.delete(&format!("{dir}/{candidate}"), None)
            .await
            .unwrap();
        let (code, _, err) = finish(leader).await;
        assert_eq!(code, 75, "{err}");
        // At once, not at the session's expiry 10 s later: no leader is
        // named that is gone.
        let left = children(&zk, &dir).await;
        assert!(left.is_empty(), "round {round}: {left:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn orphans_the_command_leaves_are_reaped_while_it_runs() {
    let server = ZkServer::start();
    let addr = server.addr();
    // Three orphans that end at once, while the command goes on.
    let script = "for i in 1 2 3; do (sleep 0.1 >/dev/null 2>&1 &); done; sleep 4";
    let holder = start(herdless(&addr).args(["lock", "/locks/orphans", "--", "sh", "-c", script]));
    let me = holder.id().expect("running") as i32;
    tokio::time::sleep(Duration::from_millis(2_500)).await;
    // Orphans come back to the nearest subreaper below herdless (its
    // guard), or to herdless.
    let stats = process_table();
    let mut below = vec![me];
    let mut at = 0;
    while at < below.len() {
        let parent = below[at];
        below.extend(stats.iter().filter(|s| s.2 == parent).map(|s| s.0));
        at += 1;
    }
    let zombies: Vec<_> = stats
        .iter()
        .filter(|(_, state, ppid)| state == "Z" && below.contains(ppid))
        .collect();
    assert!(zombies.is_empty(), "unreaped: {zombies:?}");
    let (code, _, err) = finish(holder).await;
    assert_eq!(code, 0, "{err}");
}
