//! The engine of `scripts/bench.sh`: herdless against Curator, Kazoo and a
//! raw client, side by side on one warm ZooKeeper server.
//!
//! Starts its own server on a free loopback port, warms it, then runs every
//! client in turn on that server, one mode at a time: herdless-std,
//! herdless-embassy over tokio, a Curator 5.4 program (`tests/bench/
//! CuratorBench.java`), a Kazoo 2.8 program (`tests/bench/kazoo_bench.py`)
//! and the floor: no client library at all, the core's sans-IO wire session
//! over a `TcpStream`, sending the create and the listing in one flight,
//! then the delete. Prints the figures as a markdown table with ratios.
//! Nothing here asserts a time.
//!
//! `bench [--quick] [--only MODE,...] [--current-thread]`: `--quick` runs
//! few cycles (a smoke run, not figures); `--only` runs the modes named
//! (uncontended, contended, turns, handoff, failover, waiters);
//! `--current-thread` runs herdless's clients on a single-threaded tokio
//! runtime instead of two worker threads.

use std::alloc::System;
use std::collections::BTreeMap;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use cap::Cap;
use herdless_core::naming::Guid;
use herdless_core::wire::session::{Action, ConnectionId, Incoming, Session, State};
use herdless_core::wire::{frame, Op, Response, DEFAULT_MAX_FRAME};
use herdless_core::Recipe;
use herdless_core::{Acl, CreateMode, Request, Version};
use herdless_embassy::wire::SessionConfig;
use herdless_embassy::{Buffers, RecipeId, Zk};
use herdless_tests::tokio_transport::TokioTransport;
use herdless_tests::{ZkServer, CURATOR_CLASSPATH};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use zookeeper_client as zk;

/// Requests sent to a fresh server before measuring: its round trips
/// shrink by ~40 % over its first ~50k requests.
const WARM_UP_REQUESTS: usize = 30_000;

/// How long a hand-off waits, once the next candidate's node is there, for
/// it to set its watches (the same in every client's program).
const SETTLE: Duration = Duration::from_millis(10);

/// Sessions the waiters of the `waiters` mode are spread over, in every
/// client's program.
const WAITER_SESSIONS: usize = 10;

/// Counts the bytes the benchmark holds on the heap, to tell the memory of
/// a waiting herdless-std contender.
#[global_allocator]
static ALLOCATOR: Cap<System> = Cap::new(System, usize::MAX);

/// The clients, in the table's column order.
const CLIENTS: [&str; 6] = [
    "herdless-std",
    "herdless-embassy",
    "zookeeper-client",
    "Curator",
    "Kazoo",
    "floor",
];

/// How much of each mode to run.
#[derive(Clone, Copy)]
struct Plan {
    warmup: usize,
    cycles: usize,
    seconds: u64,
    rounds: usize,
    sessions: &'static [usize],
    turns: usize,
    waiters: &'static [usize],
}

/// One client's figures for one mode, by name (`median_us`, `per_s`, ...).
type Figures = BTreeMap<String, f64>;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let quick = args.iter().any(|a| a == "--quick");
    // `--only MODE,...`: run those modes alone (uncontended, contended,
    // turns, handoff, failover, waiters).
    let only: Option<Vec<String>> = args
        .iter()
        .position(|a| a == "--only")
        .and_then(|i| args.get(i + 1))
        .map(|modes| modes.split(',').map(str::to_owned).collect());
    let wants = |mode: &str| only.as_ref().is_none_or(|m| m.iter().any(|o| o == mode));
    let plan = if quick {
        Plan {
            warmup: 100,
            cycles: 300,
            seconds: 1,
            rounds: 10,
            sessions: &[4],
            turns: 50,
            waiters: &[100],
        }
    } else {
        Plan {
            warmup: 2_000,
            cycles: 10_000,
            seconds: 10,
            rounds: 200,
            sessions: &[4, 8, 32],
            turns: 2_000,
            waiters: &[100, 1_000],
        }
    };
    // `--current-thread`: herdless's clients on a single-threaded runtime,
    // to tell what moving between worker threads costs them.
    let runtime = if args.iter().any(|a| a == "--current-thread") {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
    } else {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
    }
    .expect("a tokio runtime");
    let server = ZkServer::start();
    let addr = server.addr();
    eprintln!("bench: ZooKeeper at {addr}, warming it with {WARM_UP_REQUESTS} requests");
    runtime.block_on(warm_up(&addr));

    let mut results: BTreeMap<(String, &str), Figures> = BTreeMap::new();
    let mut record = |mode: String, client: &'static str, figures: Option<Figures>| match figures {
        Some(f) => {
            eprintln!("bench: {mode:<14} {client:<17} {f:?}");
            results.insert((mode, client), f);
        }
        None => eprintln!("bench: {mode:<14} {client:<17} not run"),
    };

    if wants("uncontended") {
        for client in CLIENTS {
            let path = format!("/bench/uncontended-{}", slug(client));
            let before = server.packets_received();
            let figures = match client {
                "herdless-std" => Some(runtime.block_on(std_uncontended(&addr, &path, &plan))),
                "herdless-embassy" => {
                    Some(runtime.block_on(embassy_uncontended(&addr, &path, &plan)))
                }
                "zookeeper-client" => {
                    Some(runtime.block_on(zkclient_uncontended(&addr, &path, &plan)))
                }
                "floor" => Some(runtime.block_on(floor_uncontended(&addr, &path, &plan))),
                peer => run_peer(
                    peer,
                    &[
                        "uncontended",
                        &addr,
                        &path,
                        &plan.warmup.to_string(),
                        &plan.cycles.to_string(),
                    ],
                ),
            };
            let figures = figures.map(|mut f| {
                // Everything the client sent (handshake, pings and close
                // included) over the cycles it ran.
                let sent = server.packets_received() - before;
                f.insert(
                    "requests".into(),
                    sent as f64 / (plan.warmup + plan.cycles) as f64,
                );
                f
            });
            record("uncontended".into(), client, figures);
        }
    }

    if wants("contended") {
        for &sessions in plan.sessions {
            for client in CLIENTS {
                let path = format!("/bench/contended-{sessions}-{}", slug(client));
                let args = [
                    "contended".to_string(),
                    addr.clone(),
                    path.clone(),
                    sessions.to_string(),
                    plan.seconds.to_string(),
                ];
                let figures = match client {
                    "herdless-std" => {
                        Some(runtime.block_on(std_contended(&addr, &path, sessions, plan.seconds)))
                    }
                    // One embedded driver is one device: contention is the
                    // herdless-std column's.
                    "herdless-embassy" | "zookeeper-client" | "floor" => None,
                    peer => run_peer(peer, &args.each_ref().map(String::as_str)),
                };
                record(format!("contended {sessions}"), client, figures);
            }
        }
    }

    if wants("turns") {
        for client in CLIENTS {
            let path = format!("/bench/turns-{}", slug(client));
            let before = server.packets_received();
            let figures = match client {
                "herdless-std" => Some(runtime.block_on(std_turns(&addr, &path, &plan))),
                "herdless-embassy" => Some(runtime.block_on(embassy_turns(&addr, &path, &plan))),
                "zookeeper-client" | "floor" => None,
                peer => run_peer(
                    peer,
                    &[
                        "turns",
                        &addr,
                        &path,
                        &turns_plan(&plan).warmup.to_string(),
                        &plan.turns.to_string(),
                    ],
                ),
            };
            let figures = figures.map(|mut f| {
                let sent = server.packets_received() - before;
                let turns = turns_plan(&plan);
                let turns = turns.warmup + turns.cycles;
                f.insert("requests".into(), sent as f64 / turns as f64);
                f
            });
            record("turns".into(), client, figures);
        }
    }

    for mode in ["handoff", "failover"] {
        if !wants(mode) {
            continue;
        }
        for client in CLIENTS {
            let path = format!("/bench/{mode}-{}", slug(client));
            let figures = match client {
                "herdless-std" if mode == "handoff" => {
                    Some(runtime.block_on(std_handoff(&addr, &path, plan.rounds)))
                }
                "herdless-std" => Some(runtime.block_on(std_failover(&addr, &path, plan.rounds))),
                "herdless-embassy" | "zookeeper-client" | "floor" => None,
                peer => run_peer(peer, &[mode, &addr, &path, &plan.rounds.to_string()]),
            };
            record(mode.into(), client, figures);
        }
    }

    if wants("waiters") {
        for &n in plan.waiters {
            for client in CLIENTS {
                let path = format!("/bench/waiters-{n}-{}", slug(client));
                let before = server.notifications_sent();
                let figures = match client {
                    "herdless-std" => Some(runtime.block_on(std_waiters(&addr, &path, n))),
                    "herdless-embassy" | "zookeeper-client" | "floor" => None,
                    peer => run_peer(
                        peer,
                        &[
                            "waiters",
                            &addr,
                            &path,
                            &n.to_string(),
                            &WAITER_SESSIONS.to_string(),
                        ],
                    ),
                };
                let figures = figures.map(|mut f| {
                    // The holder's release and every waiter's.
                    let notified = server.notifications_sent() - before;
                    f.insert("notes".into(), notified as f64 / (n + 1) as f64);
                    f
                });
                record(format!("waiters {n}"), client, figures);
            }
        }
    }

    print_table(&results, &plan);
}

fn slug(client: &str) -> String {
    client.to_lowercase().replace('-', "")
}

/// Creates and deletes nodes, 100 in flight, until the server has seen
/// [`WARM_UP_REQUESTS`] of them.
async fn warm_up(addr: &str) {
    let client = connect(addr).await;
    let options = zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all());
    let _ = client.create("/warm", b"", &options).await;
    let names: Vec<String> = (0..100).map(|i| format!("/warm/n{i}")).collect();
    let mut sent = 0;
    while sent < WARM_UP_REQUESTS {
        let creates: Vec<_> = names
            .iter()
            .map(|name| client.create(name, b"", &options))
            .collect();
        for create in creates {
            create.await.expect("a warm-up create");
        }
        let deletes: Vec<_> = names.iter().map(|name| client.delete(name, None)).collect();
        for delete in deletes {
            delete.await.expect("a warm-up delete");
        }
        sent += 200;
    }
}

async fn connect(addr: &str) -> zk::Client {
    herdless_std::connect(addr, Duration::from_secs(30))
        .await
        .expect("connect to the benchmark's server")
}

/// Median and 99th percentile of `samples`, in microseconds.
fn latencies(mut samples: Vec<Duration>) -> Figures {
    samples.sort();
    let at = |q: f64| {
        let i = ((samples.len() as f64 * q).ceil() as usize).clamp(1, samples.len()) - 1;
        samples[i].as_secs_f64() * 1e6
    };
    Figures::from([("median_us".into(), at(0.5)), ("p99_us".into(), at(0.99))])
}

/// Runs `cycle` `plan.warmup + plan.cycles` times, timing the last
/// `plan.cycles`.
async fn timed_cycles(plan: &Plan, mut cycle: impl AsyncFnMut()) -> Figures {
    for _ in 0..plan.warmup {
        cycle().await;
    }
    let mut samples = Vec::with_capacity(plan.cycles);
    let started = Instant::now();
    for _ in 0..plan.cycles {
        let t = Instant::now();
        cycle().await;
        samples.push(t.elapsed());
    }
    let per_s = plan.cycles as f64 / started.elapsed().as_secs_f64();
    let mut figures = latencies(samples);
    figures.insert("per_s".into(), per_s);
    figures
}

/// An embedded driver over tokio's `TcpStream` to `addr`, with `recipe` on
/// it, connected.
async fn embedded<'a, R: Recipe + 'static>(
    addr: &str,
    buffers: Buffers<'a>,
    recipe: &'a mut R,
) -> (Zk<'a, TokioTransport>, RecipeId<R>) {
    let mut zk: Zk<'_, _> = Zk::new(
        TokioTransport::new(vec![addr.to_string()]),
        buffers,
        SessionConfig::new(1, 30_000),
    );
    let id = zk.add(recipe).expect("room for the recipe");
    zk.connect().await.expect("connect the embedded driver");
    (zk, id)
}

/// The plan of the election turns: `plan.turns` timed, after as many
/// untimed (at most `plan.warmup`).
fn turns_plan(plan: &Plan) -> Plan {
    Plan {
        warmup: plan.warmup.min(plan.turns),
        cycles: plan.turns,
        ..*plan
    }
}

async fn std_uncontended(addr: &str, path: &str, plan: &Plan) -> Figures {
    let client = connect(addr).await;
    let lock = herdless_std::Lock::new(&client, path).expect("a lock");
    timed_cycles(plan, async || {
        let guard = lock.acquire().await.expect("acquire");
        guard.release().await.expect("release");
    })
    .await
}

async fn embassy_uncontended(addr: &str, path: &str, plan: &Plan) -> Figures {
    let (mut rx, mut tx) = (vec![0u8; 4096], vec![0u8; 1024]);
    let mut lock: herdless_core::lock::Lock = herdless_core::lock::Lock::new(path).expect("a lock");
    let (mut zk, id) = embedded(addr, Buffers::new(&mut rx, &mut tx), &mut lock).await;
    let figures = timed_cycles(plan, async || {
        let mut lock = zk.handle(id);
        lock.acquire(guid()).await.expect("acquire");
        lock.release().await.expect("release");
    })
    .await;
    let _ = zk.close().await;
    figures
}

/// zookeeper-client alone, no herdless: the floor's requests (the create
/// and the listing in one flight, then the delete) through the client
/// herdless-std runs on, which tells that client's share of herdless-std's
/// time.
async fn zkclient_uncontended(addr: &str, path: &str, plan: &Plan) -> Figures {
    let client = connect(addr).await;
    let persistent = zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all());
    let _ = client.create("/bench", b"", &persistent).await;
    let _ = client.create(path, b"", &persistent).await;
    let prefix = format!("{path}/lock-");
    let ephemeral = zk::CreateMode::EphemeralSequential.with_acls(zk::Acls::anyone_all());
    timed_cycles(plan, async || {
        let create = client.create(&prefix, b"", &ephemeral);
        let list = client.list_children(path);
        let (_, sequence) = create.await.expect("create");
        list.await.expect("list");
        client
            .delete(&format!("{prefix}{sequence}"), None)
            .await
            .expect("delete");
    })
    .await
}

/// The floor: what every acquire+release must send at the least (the
/// create and the listing in one flight, then the delete) with no client
/// library, only the core's sans-IO wire session over a `TcpStream`.
async fn floor_uncontended(addr: &str, path: &str, plan: &Plan) -> Figures {
    let setup = connect(addr).await;
    let persistent = zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all());
    let _ = setup.create("/bench", b"", &persistent).await;
    let _ = setup.create(path, b"", &persistent).await;
    let prefix = format!("{path}/lock-");
    let mut raw = RawWire::connect(addr).await;
    timed_cycles(plan, async || {
        let create = Request::Create {
            path: &prefix,
            data: &[],
            acl: Acl::OPEN,
            mode: CreateMode::EphemeralSequential,
        };
        let list = Request::GetChildren { path, watch: false };
        raw.send(&[create, list]).await;
        let created = raw.reply().await.expect("create");
        raw.reply().await;
        let delete = Request::Delete {
            path: &created,
            version: Version::Any,
        };
        raw.send(&[delete]).await;
        raw.reply().await;
    })
    .await
}

/// A ZooKeeper session with no client library: the core's wire session
/// over one `TcpStream`, driven by hand.
struct RawWire {
    session: Session<u32>,
    conn: ConnectionId,
    stream: tokio::net::TcpStream,
    origin: Instant,
    rx: Vec<u8>,
    filled: usize,
    tx: Vec<u8>,
}

impl RawWire {
    async fn connect(addr: &str) -> RawWire {
        let mut session = Session::new(SessionConfig::new(1, 30_000), herdless_core::Instant::ZERO);
        let Some(Action::Connect { conn, .. }) = session.poll_action() else {
            panic!("a new session opens a connection first");
        };
        let stream = tokio::net::TcpStream::connect(addr)
            .await
            .expect("connect the raw client");
        stream.set_nodelay(true).expect("TCP_NODELAY");
        let mut raw = RawWire {
            session,
            conn,
            stream,
            origin: Instant::now(),
            rx: vec![0; 1 << 20],
            filled: 0,
            tx: vec![0; 1 << 16],
        };
        let now = raw.now();
        raw.session.handle_connected(conn, now);
        raw.flush_own().await;
        while !matches!(raw.session.state(), State::Connected { .. }) {
            raw.next_frame().await;
        }
        raw
    }

    fn now(&self) -> herdless_core::Instant {
        herdless_core::Instant::from_millis(self.origin.elapsed().as_millis() as u64)
    }

    /// Writes the session's own frames (handshake, pings).
    async fn flush_own(&mut self) {
        let now = self.now();
        while let Some(n) = self
            .session
            .poll_transmit(&mut self.tx, now)
            .expect("room for the session's frames")
        {
            self.stream
                .write_all(&self.tx[..n])
                .await
                .expect("write to the server");
        }
    }

    /// Sends `requests` in one write: one flight.
    async fn send(&mut self, requests: &[Request<'_>]) {
        self.flush_own().await;
        let now = self.now();
        let mut end = 0;
        for request in requests {
            end += self
                .session
                .send(0, &Op::from(*request), &mut self.tx[end..], now)
                .expect("send a request");
        }
        self.stream
            .write_all(&self.tx[..end])
            .await
            .expect("write to the server");
    }

    /// The next reply: the created path for a create.
    async fn reply(&mut self) -> Option<String> {
        loop {
            if let Some(reply) = self.next_frame().await {
                return reply;
            }
        }
    }

    /// Reads one frame; `Some` if it was a reply (with a create's path).
    async fn next_frame(&mut self) -> Option<Option<String>> {
        loop {
            if let Some(frame) = frame::split(&self.rx[..self.filled], DEFAULT_MAX_FRAME)
                .expect("a well-formed frame")
            {
                let consumed = frame.consumed;
                let now = self.now();
                let incoming = self
                    .session
                    .handle_frame(self.conn, frame.payload, now)
                    .expect("a reply the session understands");
                let out = match incoming {
                    Incoming::Reply { response, .. } => Some(match response {
                        Response::Created { path } => Some(path.to_string()),
                        Response::Error(e) => panic!("the floor's request failed: {e}"),
                        _ => None,
                    }),
                    _ => None,
                };
                self.rx.copy_within(consumed..self.filled, 0);
                self.filled -= consumed;
                return out;
            }
            let n = self
                .stream
                .read(&mut self.rx[self.filled..])
                .await
                .expect("read from the server");
            assert!(n > 0, "the server closed the connection");
            self.filled += n;
        }
    }
}

async fn std_contended(addr: &str, path: &str, sessions: usize, seconds: u64) -> Figures {
    let mut clients = Vec::new();
    for _ in 0..sessions {
        clients.push(connect(addr).await);
    }
    let deadline = tokio::time::Instant::now() + Duration::from_secs(seconds);
    let tasks: Vec<_> = clients
        .into_iter()
        .map(|client| {
            let path = path.to_string();
            tokio::spawn(async move {
                let lock = herdless_std::Lock::new(&client, &path).expect("a lock");
                let mut count = 0u64;
                while tokio::time::Instant::now() < deadline {
                    let guard = lock.acquire().await.expect("acquire");
                    count += 1;
                    guard.release().await.expect("release");
                }
                count
            })
        })
        .collect();
    let mut counts = Vec::new();
    for task in tasks {
        counts.push(task.await.expect("a contender"));
    }
    spread(&counts, seconds)
}

fn spread(counts: &[u64], seconds: u64) -> Figures {
    let total: u64 = counts.iter().sum();
    Figures::from([
        ("per_s".into(), total as f64 / seconds as f64),
        (
            "min".into(),
            counts.iter().copied().min().unwrap_or(0) as f64,
        ),
        (
            "max".into(),
            counts.iter().copied().max().unwrap_or(0) as f64,
        ),
    ])
}

/// Two candidates on their own sessions; the leader resigns and the time
/// until the other leads is one sample.
async fn std_handoff(addr: &str, path: &str, rounds: usize) -> Figures {
    let clients = [connect(addr).await, connect(addr).await];
    let observer = connect(addr).await;
    let first = herdless_std::Election::new(&clients[0], path).expect("an election");
    let mut leadership = Some(first.campaign().await.expect("the first leads"));
    let mut leader = 0;
    let mut samples = Vec::with_capacity(rounds);
    for _ in 0..rounds {
        let next = 1 - leader;
        let election = herdless_std::Election::new(&clients[next], path).expect("an election");
        let waiting = tokio::spawn(async move {
            let leads = election.campaign().await.expect("the next leads");
            (leads, Instant::now())
        });
        // The hand-off of a candidate already waiting.
        wait_for_candidates(&observer, path, 2).await;
        let t0 = Instant::now();
        let old = leadership.take().expect("a leader");
        old.resign().await.expect("resign");
        let (leads, at) = waiting.await.expect("the next candidate");
        samples.push(at - t0);
        leadership = Some(leads);
        leader = next;
    }
    if let Some(leads) = leadership {
        let _ = leads.resign().await;
    }
    latencies(samples)
}

/// One uncontended election turn: campaign, lead, resign.
async fn std_turns(addr: &str, path: &str, plan: &Plan) -> Figures {
    let client = connect(addr).await;
    let election = herdless_std::Election::new(&client, path).expect("an election");
    timed_cycles(&turns_plan(plan), async || {
        let leads = election.campaign().await.expect("campaign");
        leads.resign().await.expect("resign");
    })
    .await
}

async fn embassy_turns(addr: &str, path: &str, plan: &Plan) -> Figures {
    let (mut rx, mut tx) = (vec![0u8; 4096], vec![0u8; 1024]);
    let mut election: herdless_core::election::Election =
        herdless_core::election::Election::new(path).expect("an election");
    let (mut zk, id) = embedded(addr, Buffers::new(&mut rx, &mut tx), &mut election).await;
    let figures = timed_cycles(&turns_plan(plan), async || {
        let mut candidate = zk.handle(id);
        candidate.campaign(guid(), b"").await.expect("campaign");
        candidate.resign().await.expect("resign");
    })
    .await;
    let _ = zk.close().await;
    figures
}

/// Failover: the leader's session is closed, and the time until the next
/// candidate (herdless-std) leads is one sample. herdless-std cannot close
/// a session under a live recipe (dropping a leadership resigns it), so
/// the leader is a herdless candidate on the embedded driver, whose
/// session closes with `close`: its node and acknowledgement go at once.
async fn std_failover(addr: &str, path: &str, rounds: usize) -> Figures {
    let client = connect(addr).await;
    let mut samples = Vec::with_capacity(rounds);
    for _ in 0..rounds {
        let (mut rx, mut tx) = (vec![0u8; 4096], vec![0u8; 1024]);
        let mut leader: herdless_core::election::Election =
            herdless_core::election::Election::new(path).expect("an election");
        let (mut zk, id) = embedded(addr, Buffers::new(&mut rx, &mut tx), &mut leader).await;
        zk.handle(id)
            .campaign(guid(), b"")
            .await
            .expect("the leader leads");
        let election = herdless_std::Election::new(&client, path).expect("an election");
        let waiting = tokio::spawn(async move {
            let leads = election.campaign().await.expect("the next leads");
            (leads, Instant::now())
        });
        wait_for_candidates(&client, path, 2).await;
        let t0 = Instant::now();
        zk.close().await.expect("close the leader's session");
        let (leads, at) = waiting.await.expect("the next candidate");
        samples.push(at - t0);
        leads.resign().await.expect("resign");
    }
    latencies(samples)
}

/// Waits until `n` candidates' nodes are in `path` (the acknowledgement
/// aside), then a moment for the last one to set its watches: the same
/// in every client's program.
async fn wait_for_candidates(client: &zk::Client, path: &str, n: usize) {
    while client
        .list_children(path)
        .await
        .map_or(0, |c| c.iter().filter(|name| *name != "leader").count())
        < n
    {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    tokio::time::sleep(SETTLE).await;
}

/// `n` contenders, spread over [`WAITER_SESSIONS`] sessions, wait on one
/// lock behind a holder; once all wait, the holder releases, and each
/// acquires and releases once in turn. Gives the time until every one
/// acquired and the heap bytes a waiting contender holds.
async fn std_waiters(addr: &str, path: &str, n: usize) -> Figures {
    let holder_client = connect(addr).await;
    let holder = herdless_std::Lock::new(&holder_client, path)
        .expect("a lock")
        .acquire()
        .await
        .expect("the holder acquires");
    let mut clients = Vec::new();
    for _ in 0..WAITER_SESSIONS {
        clients.push(connect(addr).await);
    }
    let live_before = ALLOCATOR.allocated();
    let acquired = Arc::new(std::sync::Mutex::new(Vec::with_capacity(n)));
    let tasks: Vec<_> = (0..n)
        .map(|i| {
            let client = clients[i % WAITER_SESSIONS].clone();
            let path = path.to_string();
            let acquired = acquired.clone();
            tokio::spawn(async move {
                let lock = herdless_std::Lock::new(&client, &path).expect("a lock");
                let guard = lock.acquire().await.expect("acquire");
                acquired.lock().expect("not poisoned").push(Instant::now());
                guard.release().await.expect("release");
            })
        })
        .collect();
    while holder_client
        .list_children(path)
        .await
        .map_or(0, |c| c.len())
        < n + 1
    {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    tokio::time::sleep(SETTLE).await;
    let per_waiter = (ALLOCATOR.allocated() as f64 - live_before as f64) / n as f64;
    let t0 = Instant::now();
    holder.release().await.expect("the holder releases");
    for task in tasks {
        task.await.expect("a waiter");
    }
    let last = acquired
        .lock()
        .expect("not poisoned")
        .iter()
        .max()
        .copied()
        .expect("every waiter acquired");
    Figures::from([
        ("all_ms".into(), (last - t0).as_secs_f64() * 1e3),
        ("bytes".into(), per_waiter),
    ])
}

fn guid() -> Guid {
    Guid::from_random_bytes(uuid::Uuid::new_v4().into_bytes())
}

/// Runs the Curator or Kazoo program for one mode and reads its `result`
/// line; `None` (with the reason on stderr) if it did not run.
fn run_peer(peer: &str, args: &[&str]) -> Option<Figures> {
    let root = env!("CARGO_MANIFEST_DIR");
    let mut command = match peer {
        "Curator" => {
            let mut c = Command::new("java");
            c.arg("-cp")
                .arg(CURATOR_CLASSPATH.join(":"))
                .arg(format!("{root}/bench/CuratorBench.java"));
            c
        }
        "Kazoo" => {
            // Debian's python3-kazoo is for the system interpreter.
            let mut c = Command::new("/usr/bin/python3");
            c.arg(format!("{root}/bench/kazoo_bench.py"));
            c
        }
        other => {
            eprintln!("bench: {other} has no program of its own");
            return None;
        }
    };
    let output = match command.args(args).output() {
        Ok(output) => output,
        Err(e) => {
            eprintln!("bench: {peer} did not start: {e}");
            return None;
        }
    };
    let stdout = String::from_utf8_lossy(&output.stdout);
    let Some(line) = stdout.lines().rev().find(|l| l.starts_with("result ")) else {
        eprintln!(
            "bench: {peer} {args:?} gave no result ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
        return None;
    };
    Some(
        line.split_whitespace()
            .skip(1)
            .filter_map(|kv| {
                let (k, v) = kv.split_once('=')?;
                Some((k.to_string(), v.parse().ok()?))
            })
            .collect(),
    )
}

/// One row: a measure of one mode for every client, and herdless-std's
/// ratio to each other client (`lower_is_better` says which way is ahead).
fn print_table(results: &BTreeMap<(String, &str), Figures>, plan: &Plan) {
    let mut rows: Vec<(String, String, &str, bool)> = vec![
        (
            "uncontended".into(),
            "acquire+release, median (µs)".into(),
            "median_us",
            true,
        ),
        (
            "uncontended".into(),
            "acquire+release, p99 (µs)".into(),
            "p99_us",
            true,
        ),
        (
            "uncontended".into(),
            "acquire+release cycles/s".into(),
            "per_s",
            false,
        ),
        (
            "uncontended".into(),
            "requests per acquire+release".into(),
            "requests",
            true,
        ),
    ];
    for s in plan.sessions {
        rows.push((
            format!("contended {s}"),
            format!("contended, {s} sessions (acq/s)"),
            "per_s",
            false,
        ));
    }
    rows.push((
        "turns".into(),
        "election turn (campaign, lead, resign), median (µs)".into(),
        "median_us",
        true,
    ));
    rows.push((
        "turns".into(),
        "election turn, p99 (µs)".into(),
        "p99_us",
        true,
    ));
    rows.push((
        "turns".into(),
        "requests per election turn".into(),
        "requests",
        true,
    ));
    for (mode, what) in [
        ("handoff", "election hand-off"),
        ("failover", "election failover"),
    ] {
        rows.push((
            mode.into(),
            format!("{what}, median (µs)"),
            "median_us",
            true,
        ));
        rows.push((mode.into(), format!("{what}, p99 (µs)"), "p99_us", true));
    }
    for n in plan.waiters {
        let mode = format!("waiters {n}");
        rows.push((
            mode.clone(),
            format!("{n} waiters on one lock: until each acquired once (ms)"),
            "all_ms",
            true,
        ));
        rows.push((
            mode.clone(),
            format!("{n} waiters: notifications per release"),
            "notes",
            true,
        ));
        rows.push((
            mode,
            format!("{n} waiters: heap bytes per waiting contender"),
            "bytes",
            true,
        ));
    }
    println!();
    println!(
        "| measure | {} | std ÷ Curator | std ÷ Kazoo | std ÷ floor |",
        CLIENTS.join(" | ")
    );
    println!("|---|{}---|---|---|", "---|".repeat(CLIENTS.len()));
    for (mode, what, key, _lower_is_better) in rows {
        let value = |client: &str| {
            results
                .get(&(mode.clone(), client))
                .and_then(|f| f.get(key))
                .copied()
        };
        let cell = |client: &str| {
            let v = value(client);
            let spread = results
                .get(&(mode.clone(), client))
                .and_then(|f| Some((f.get("min")?, f.get("max")?)));
            match (v, spread) {
                (Some(v), Some((lo, hi))) if key == "per_s" => {
                    let secs = plan.seconds as f64;
                    format!("{v:.0} ({:.0}–{:.0} per session)", lo / secs, hi / secs)
                }
                (Some(v), _) if key == "requests" || key == "notes" => format!("{v:.2}"),
                (Some(v), _) => format!("{v:.0}"),
                (None, _) => "–".into(),
            }
        };
        let ratio = |other: &str| match (value("herdless-std"), value(other)) {
            (Some(a), Some(b)) if b > 0.0 => format!("{:.2}×", a / b),
            _ => "–".into(),
        };
        let cells: Vec<String> = CLIENTS.iter().map(|c| cell(c)).collect();
        println!(
            "| {what} | {} | {} | {} | {} |",
            cells.join(" | "),
            ratio("Curator"),
            ratio("Kazoo"),
            ratio("floor")
        );
    }
    println!();
    println!(
        "Ratios are herdless-std's figure over the other's: below 1× is faster for times and \
         requests, above 1× is more for rates. Contended runs give the total and, in \
         brackets, the slowest and the fastest session's own rate. The floor is the \
         core's wire session over a TcpStream, no client library: create and listing \
         in one flight, then the delete."
    );
}
