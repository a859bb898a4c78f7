//! Recipes on a three-server ensemble whose servers are killed with SIGKILL
//! one at a time (the quorum leader and the server a client is connected
//! to, in turn) and restarted, while herdless-std and herdless-embassy
//! clients work side by side. Each test checks its recipe's invariant on
//! the way, that the applications see no error, and that every client acts
//! again within its session timeout plus 2 s of every kill. One test puts
//! loopback proxies between the clients and the servers and misbehaves the
//! network instead (slow links, resets, half-open connections).
//!
//! `HERDLESS_CHAOS_SECS` sets how long the kills go on (30 s by default; the
//! soak mode runs the same tests for longer). The tests of this file run one
//! at a time: each has three servers of its own.

use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use herdless_core::member::MemberEvent;
use herdless_core::naming::{Flavour, Guid};
use herdless_embassy::wire::SessionConfig;
use herdless_embassy::{Buffers, RecipeId, Zk};
use herdless_tests::chaos::{self, Kill, Progress};
use herdless_tests::journal::{self, unix_ms, Journal};
use herdless_tests::peers::{self, Peer};
use herdless_tests::tokio_transport::TokioTransport;
use herdless_tests::ZkEnsemble;

/// The clients' session timeout.
const SESSION: Duration = Duration::from_secs(8);
/// How long a killed server stays down (and how long the ensemble stays
/// whole between kills).
const DOWN: Duration = Duration::from_secs(2);

/// The STM32 firmware's driver: no watch table.
type Device<'a> = Zk<'a, TokioTransport, 4, 0, 0>;

/// One test of this file at a time: each runs three servers.
async fn serial() -> tokio::sync::MutexGuard<'static, ()> {
    static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
    SERIAL.lock().await
}

fn guid() -> Guid {
    Guid::from_random_bytes(uuid::Uuid::new_v4().into_bytes())
}

/// The creation zxid of `path` as the server has it (`None`: no such node),
/// asked again across connection losses for up to two session timeouts.
async fn czxid(client: &herdless_std::Client, path: &str) -> Result<Option<i64>, String> {
    let deadline = Instant::now() + 2 * SESSION;
    loop {
        match client.check_stat(path).await {
            Ok(stat) => return Ok(stat.map(|s| s.czxid)),
            Err(_) if Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(e) => return Err(e.to_string()),
        }
    }
}

/// A short critical section: 0 to 5 ms.
fn work() -> Duration {
    Duration::from_micros(u64::from(uuid::Uuid::new_v4().as_bytes()[0]) * 20)
}

/// What the clients of one run share.
struct Run {
    progress: Progress,
    sessions: Vec<AtomicI64>,
    stop: AtomicBool,
    /// What each client is doing, for the report of a stuck one.
    doing: Vec<Mutex<String>>,
}

impl Run {
    fn new(names: &[&str]) -> Arc<Run> {
        Arc::new(Run {
            progress: Progress::new(names),
            sessions: names.iter().map(|_| AtomicI64::new(0)).collect(),
            stop: AtomicBool::new(false),
            doing: names.iter().map(|_| Mutex::new(String::new())).collect(),
        })
    }

    fn doing(&self, k: usize, what: impl Into<String>) {
        *self.doing[k].lock().unwrap() = what.into();
    }

    fn stopped(&self) -> bool {
        self.stop.load(Ordering::SeqCst)
    }

    /// Notes client `k`'s session (the kills look for its server) and says
    /// whether it is to do another round.
    fn carry_on(&self, k: usize, session_id: i64) -> bool {
        self.sessions[k].store(session_id, Ordering::SeqCst);
        !self.stopped()
    }
}

/// Runs the kills on a blocking thread while the clients work, then stops
/// the clients and gives them `SESSION` to finish their last operation.
async fn with_kills(
    mut ensemble: ZkEnsemble,
    run: &Arc<Run>,
    clients: Vec<std::thread::JoinHandle<()>>,
) -> (Vec<Kill>, ZkEnsemble) {
    let sessions = run.clone();
    let duration = chaos::duration(Duration::from_secs(30));
    let (kills, ensemble) = tokio::task::spawn_blocking(move || {
        let kills = chaos::kill_in_turn(&mut ensemble, duration, DOWN, || {
            sessions
                .sessions
                .iter()
                .map(|s| s.load(Ordering::SeqCst))
                .collect()
        });
        (kills, ensemble)
    })
    .await
    .expect("the kills ran");
    finish(run, clients).await;
    (kills, ensemble)
}

/// Stops the clients and gives them `SESSION` (and `DOWN`) to finish their
/// last operation; a client still busy then is reported stuck.
async fn finish(run: &Arc<Run>, clients: Vec<std::thread::JoinHandle<()>>) {
    run.stop.store(true, Ordering::SeqCst);
    let deadline = std::time::Instant::now() + SESSION + DOWN;
    for (i, client) in clients.into_iter().enumerate() {
        while !client.is_finished() && std::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        if client.is_finished() {
            client.join().expect("a client panicked");
        } else {
            let doing = run.doing[i].lock().unwrap().clone();
            run.progress
                .error(i, format!("stuck in its last operation: {doing}"));
        }
    }
}

/// Runs `f` on a thread of its own with a current-thread runtime (the
/// embedded driver borrows its buffers, so it runs where they live).
fn client_thread<F, Fut>(f: F) -> std::thread::JoinHandle<()>
where
    F: FnOnce() -> Fut + Send + 'static,
    Fut: Future<Output = ()>,
{
    std::thread::spawn(move || {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime")
            .block_on(f())
    })
}

/// Runs `body` with a herdless-std client of the ensemble at `connect`, on
/// a thread of its own.
fn std_client<F>(connect: &str, body: F) -> std::thread::JoinHandle<()>
where
    F: AsyncFnOnce(herdless_std::Client) + Send + 'static,
{
    let connect = connect.to_owned();
    client_thread(move || async move {
        let client = herdless_std::connect(&connect, SESSION)
            .await
            .expect("connect");
        body(client).await;
    })
}

/// Runs `body` with a herdless-embassy driver holding `recipe`, connected
/// to the ensemble's servers `addrs` in the order client `k`'s seed draws,
/// on a thread of its own; closes the session once `body` returns.
fn embassy_client<R, F>(
    addrs: Vec<String>,
    k: usize,
    recipe: R,
    body: F,
) -> std::thread::JoinHandle<()>
where
    R: herdless_core::Recipe + Send + 'static,
    F: AsyncFnOnce(&mut Zk<'_, TokioTransport>, RecipeId<R>) + Send + 'static,
{
    driver_client(addrs, k, recipe, body)
}

/// The same with the STM32 firmware's driver, which keeps no watch table:
/// after a move to another server its recipes read again what they watch.
fn device_client<R, F>(
    addrs: Vec<String>,
    k: usize,
    recipe: R,
    body: F,
) -> std::thread::JoinHandle<()>
where
    R: herdless_core::Recipe + Send + 'static,
    F: AsyncFnOnce(&mut Device<'_>, RecipeId<R>) + Send + 'static,
{
    driver_client(addrs, k, recipe, body)
}

/// [`embassy_client`] and [`device_client`], for a driver with a watch
/// table of `W` watches and `WB` bytes.
fn driver_client<R, F, const W: usize, const WB: usize>(
    addrs: Vec<String>,
    k: usize,
    mut recipe: R,
    body: F,
) -> std::thread::JoinHandle<()>
where
    R: herdless_core::Recipe + Send + 'static,
    F: AsyncFnOnce(&mut Zk<'_, TokioTransport, 4, W, WB>, RecipeId<R>) + Send + 'static,
{
    client_thread(move || async move {
        let (mut rx, mut tx) = ([0u8; 4096], [0u8; 1024]);
        let mut zk = embassy_zk::<W, WB>(addrs, &mut rx, &mut tx, k as u32);
        let id = zk.add(&mut recipe).unwrap();
        zk.connect().await.expect("connect");
        body(&mut zk, id).await;
        let _ = zk.close().await;
    })
}

/// A herdless-embassy driver for the ensemble's servers `addrs`, trying
/// them in the order `seed` draws, with a watch table of `W` watches and
/// `WB` bytes; not yet connected.
fn embassy_zk<'a, const W: usize, const WB: usize>(
    addrs: Vec<String>,
    rx: &'a mut [u8],
    tx: &'a mut [u8],
    seed: u32,
) -> Zk<'a, TokioTransport, 4, W, WB> {
    let config = embassy_config(addrs.len(), seed);
    Zk::new(TokioTransport::new(addrs), Buffers::new(rx, tx), config)
}

/// The session of an embassy driver of `servers` servers, tried in the
/// order `seed` draws.
fn embassy_config(servers: usize, seed: u32) -> SessionConfig {
    // The session must know every server: with fewer it never moves on to
    // the others, and a connect stuck on a stalled link may use up its whole
    // timeout (connect timeout = session timeout / servers).
    SessionConfig::new(servers, SESSION.as_millis() as u32)
        .with_retry_delay_ms(200)
        .with_server_seed(seed)
}

/// Checks that the recipe's directory holds no node any more.
async fn assert_no_node_left(ensemble: &ZkEnsemble, dir: &str) {
    let client = herdless_std::connect(&ensemble.connect_string(), SESSION)
        .await
        .unwrap();
    // A fresh session may land on a server that has not yet applied the
    // last deletions: reads are served from each server's own copy.
    client.sync(dir).await.unwrap();
    let left = client.list_children(dir).await.unwrap();
    assert!(left.is_empty(), "nodes left behind: {left:?}");
}

/// The names in `dir` as each server has them, each asked on its own.
async fn listings_per_server(ensemble: &ZkEnsemble, dir: &str) -> Vec<Vec<String>> {
    let mut views = Vec::new();
    for addr in addrs(ensemble) {
        let client = herdless_std::connect(&addr, SESSION).await.unwrap();
        // Sorted: each server lists in its own hash order.
        let mut names = client.list_children(dir).await.unwrap();
        names.sort();
        views.push(names);
    }
    views
}

fn addrs(ensemble: &ZkEnsemble) -> Vec<String> {
    (0..ensemble.len())
        .map(|i| ensemble.client_addr(i))
        .collect()
}

/// Who holds: readers together, a writer alone (an exclusive lock's holder
/// and a leader hold as writers). Counts who is inside, and every entry
/// that breaks that.
#[derive(Default)]
struct Holders {
    inside: Mutex<journal::Inside>,
    violations: AtomicUsize,
    /// Entries in which another reader was inside (sharing happened).
    shared: AtomicUsize,
}

/// Where contender `k` says it entered and left its critical section
/// (alone if `writer`): an oracle in this process ([`Holders`]), or a
/// journal shared with contenders of other processes ([`Journal`]).
trait Witness: Send + Sync + 'static {
    fn enter(&self, k: usize, writer: bool);
    fn leave(&self, k: usize, writer: bool);
}

impl Witness for Holders {
    fn enter(&self, _: usize, writer: bool) {
        let entered = self.inside.lock().unwrap().enter(!writer);
        if entered.violation {
            self.violations.fetch_add(1, Ordering::SeqCst);
        }
        if entered.shared {
            self.shared.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn leave(&self, _: usize, writer: bool) {
        self.inside.lock().unwrap().leave(!writer);
    }
}

/// One round of a herdless-std contender of client `k`: acquire `lock`,
/// hold it for a short critical section (alone if `writer`), release.
async fn std_lock_round(
    run: &Run,
    k: usize,
    lock: &herdless_std::Lock,
    writer: bool,
    witness: &impl Witness,
) {
    match lock.acquire().await {
        Ok(guard) => {
            run.progress.ok(k);
            witness.enter(k, writer);
            tokio::time::sleep(work()).await;
            witness.leave(k, writer);
            match guard.release().await {
                Ok(()) => run.progress.ok(k),
                Err(e) => run.progress.error(k, format!("release: {e}")),
            }
        }
        Err(e) => run.progress.error(k, format!("acquire: {e}")),
    }
}

/// The same on a herdless-embassy driver holding the lock recipe `id`.
async fn embassy_lock_round<const W: usize, const WB: usize>(
    run: &Run,
    k: usize,
    zk: &mut Zk<'_, TokioTransport, 4, W, WB>,
    id: RecipeId<herdless_core::lock::Lock>,
    writer: bool,
    witness: &impl Witness,
) {
    let mut pump = zk.handle(id);
    match pump.acquire(guid()).await {
        Ok(()) => {
            run.progress.ok(k);
            witness.enter(k, writer);
            let held = pump.hold_while(tokio::time::sleep(work())).await;
            witness.leave(k, writer);
            if let Err(e) = held {
                run.progress.error(k, format!("hold: {e:?}"));
            }
            match pump.release().await {
                Ok(()) => run.progress.ok(k),
                Err(e) => run.progress.error(k, format!("release: {e:?}")),
            }
        }
        Err(e) => run.progress.error(k, format!("acquire: {e:?}")),
    }
}

/// Two herdless-std and two herdless-embassy contenders (clients 0 to 3) of
/// the exclusive lock `dir`, naming their nodes in `flavour`, taking turns
/// until the run stops.
fn lock_contenders(
    connect: &str,
    addrs: Vec<String>,
    dir: &'static str,
    flavour: Flavour,
    run: &Arc<Run>,
    witness: &Arc<impl Witness>,
) -> Vec<std::thread::JoinHandle<()>> {
    let mut clients = Vec::new();
    for k in 0..2 {
        let (run, witness) = (run.clone(), witness.clone());
        clients.push(std_client(connect, async move |client| {
            let lock = herdless_std::Lock::with_flavour(&client, dir, flavour).unwrap();
            while run.carry_on(k, client.session_id().0) {
                std_lock_round(&run, k, &lock, true, &*witness).await;
            }
        }));
    }
    for k in 2..4 {
        let (run, witness) = (run.clone(), witness.clone());
        let lock: herdless_core::lock::Lock =
            herdless_core::lock::Lock::with_flavour(dir, flavour).unwrap();
        // One driver as the firmware's, one with a watch table.
        clients.push(if k == 2 {
            embassy_client(addrs.clone(), k, lock, async move |zk, id| {
                while run.carry_on(k, zk.session_id()) {
                    embassy_lock_round(&run, k, zk, id, true, &*witness).await;
                }
            })
        } else {
            device_client(addrs.clone(), k, lock, async move |zk, id| {
                while run.carry_on(k, zk.session_id()) {
                    embassy_lock_round(&run, k, zk, id, true, &*witness).await;
                }
            })
        });
    }
    clients
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_lock_keeps_one_holder_and_progress_while_servers_are_killed() {
    let _serial = serial().await;
    const DIR: &str = "/chaos/lock";
    let ensemble = ZkEnsemble::start();
    let run = Run::new(&["std-0", "std-1", "embassy-0", "embassy-1"]);
    let holders = Arc::new(Holders::default());
    let clients = lock_contenders(
        &ensemble.connect_string(),
        addrs(&ensemble),
        DIR,
        Flavour::Recipes,
        &run,
        &holders,
    );
    let (kills, ensemble) = with_kills(ensemble, &run, clients).await;
    let overlaps = holders.violations.load(Ordering::SeqCst);
    println!("lock: overlaps {overlaps}");
    run.progress.check("lock", &kills, SESSION + DOWN);
    assert_eq!(overlaps, 0, "two holders at once");
    assert_no_node_left(&ensemble, DIR).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_shared_lock_keeps_writers_alone_while_servers_are_killed() {
    let _serial = serial().await;
    const DIR: &str = "/chaos/rwlock";
    let ensemble = ZkEnsemble::start();
    let connect = ensemble.connect_string();
    let run = Run::new(&["std-0", "std-1", "embassy-reader", "embassy-writer"]);
    let holders = Arc::new(Holders::default());
    let mut clients = Vec::new();
    for k in 0..2 {
        let (run, holders) = (run.clone(), holders.clone());
        clients.push(std_client(&connect, async move |client| {
            let lock = herdless_std::ReadWriteLock::new(&client, DIR).unwrap();
            let mut round = 0usize;
            while run.carry_on(k, client.session_id().0) {
                // Mostly reads, every third round a write.
                let writer = (round + k).is_multiple_of(3);
                round += 1;
                let side = if writer { lock.write() } else { lock.read() };
                std_lock_round(&run, k, side, writer, &*holders).await;
            }
        }));
    }
    for k in 2..4 {
        let (run, holders) = (run.clone(), holders.clone());
        let writer = k == 3;
        let lock: herdless_core::lock::Lock = if writer {
            herdless_core::lock::Lock::writer(DIR).unwrap()
        } else {
            herdless_core::lock::Lock::reader(DIR).unwrap()
        };
        clients.push(embassy_client(
            addrs(&ensemble),
            k,
            lock,
            async move |zk, id| {
                while run.carry_on(k, zk.session_id()) {
                    embassy_lock_round(&run, k, zk, id, writer, &*holders).await;
                }
            },
        ));
    }
    let (kills, ensemble) = with_kills(ensemble, &run, clients).await;
    let violations = holders.violations.load(Ordering::SeqCst);
    let shared = holders.shared.load(Ordering::SeqCst);
    println!(
        "shared lock: {violations} writers not alone, {shared} reads shared with another reader"
    );
    run.progress.check("shared lock", &kills, SESSION + DOWN);
    assert_eq!(violations, 0, "a writer beside another holder");
    assert!(
        shared > 0,
        "readers never held together: the test shows nothing"
    );
    assert_no_node_left(&ensemble, DIR).await;
}

/// What the compare-and-set writers of a counter were told.
#[derive(Default)]
struct Writes {
    /// Versions reported `Updated`.
    updated: Mutex<Vec<i32>>,
    /// Writes reported `Unknown` (may or may not have landed).
    unknown: AtomicUsize,
    /// Versions a watcher saw go backwards.
    backwards: AtomicUsize,
}

impl Writes {
    /// The counter after `value`, as one increment writes it.
    fn next(value: &[u8]) -> Vec<u8> {
        let n: u64 = std::str::from_utf8(value).unwrap().parse().unwrap();
        (n + 1).to_string().into_bytes()
    }

    fn updated(&self, version: i32) {
        self.updated.lock().unwrap().push(version);
    }

    fn unknown(&self) {
        self.unknown.fetch_add(1, Ordering::SeqCst);
    }

    fn seen(&self, last: &mut i32, version: i32) {
        if version < *last {
            self.backwards.fetch_add(1, Ordering::SeqCst);
        }
        *last = version;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn config_writes_are_reported_truly_and_watchers_end_on_the_last_version_while_servers_are_killed(
) {
    let _serial = serial().await;
    const NODE: &str = "/chaos/config";
    let ensemble = ZkEnsemble::start();
    let connect = ensemble.connect_string();
    {
        let client = herdless_std::connect(&connect, SESSION).await.unwrap();
        let open = zookeeper_client::CreateMode::Persistent
            .with_acls(zookeeper_client::Acls::anyone_all());
        client.create("/chaos", b"", &open).await.unwrap();
        client.create(NODE, b"0", &open).await.unwrap();
    }
    let run = Run::new(&[
        "std-writer",
        "std-watcher",
        "embassy-writer",
        "embassy-watcher",
    ]);
    let writes = Arc::new(Writes::default());
    // The last version each watcher saw, once the run stops.
    let last_seen = Arc::new(Mutex::new(vec![None::<i32>; 4]));
    let mut clients = Vec::new();
    for k in 0..2 {
        let (run, writes, last_seen) = (run.clone(), writes.clone(), last_seen.clone());
        clients.push(std_client(&connect, async move |client| {
            let mut config = herdless_std::config::Config::watch(&client, NODE).unwrap();
            let mut last = -1;
            while run.carry_on(k, client.session_id().0) {
                if k == 0 {
                    let Some(now) = config.value().present().cloned() else {
                        tokio::time::sleep(Duration::from_millis(10)).await;
                        continue;
                    };
                    match config
                        .set(&Writes::next(&now.data), Some(now.version))
                        .await
                    {
                        Ok(herdless_std::config::Written::Updated { version }) => {
                            writes.updated(version);
                            run.progress.ok(k);
                        }
                        Ok(herdless_std::config::Written::Unknown) => {
                            writes.unknown();
                            run.progress.ok(k);
                        }
                        Ok(_) => run.progress.ok(k),
                        Err(e) => run.progress.error(k, format!("set: {e}")),
                    }
                    // Let the watcher catch up before the next increment.
                    let _ = tokio::time::timeout(Duration::from_millis(50), config.changed()).await;
                } else {
                    match tokio::time::timeout(Duration::from_millis(200), config.changed()).await {
                        Ok(Ok(value)) => {
                            if let Some(v) = value.present() {
                                writes.seen(&mut last, v.version);
                            }
                            run.progress.ok(k);
                        }
                        Ok(Err(e)) => run.progress.error(k, format!("changed: {e}")),
                        Err(_) => run.progress.ok(k),
                    }
                }
            }
            // After the kills: the watcher reaches the last version.
            let deadline = tokio::time::Instant::now() + SESSION;
            loop {
                let version = config.value().present().map(|v| v.version);
                last_seen.lock().unwrap()[k] = version;
                if tokio::time::Instant::now() > deadline {
                    break;
                }
                if tokio::time::timeout(Duration::from_millis(500), config.changed())
                    .await
                    .is_err()
                {
                    // Quiet for half a second: the last version has come.
                    let version = config.value().present().map(|v| v.version);
                    last_seen.lock().unwrap()[k] = version;
                    break;
                }
            }
        }));
    }
    for k in 2..4 {
        let (run, writes, last_seen) = (run.clone(), writes.clone(), last_seen.clone());
        let config: herdless_core::config::Config<64> =
            herdless_core::config::Config::new(NODE).unwrap();
        clients.push(embassy_client(
            addrs(&ensemble),
            k,
            config,
            async move |zk, id| {
                let mut last = -1;
                while run.carry_on(k, zk.session_id()) {
                    let mut pump = zk.handle(id);
                    if k == 2 {
                        let (Some(data), Some(version)) =
                            (pump.value().map(<[u8]>::to_vec), pump.version())
                        else {
                            let _ =
                                tokio::time::timeout(Duration::from_millis(200), pump.changed())
                                    .await;
                            continue;
                        };
                        match pump
                            .set(
                                &Writes::next(&data),
                                herdless_core::Version::Exactly(version),
                            )
                            .await
                        {
                            Ok(herdless_embassy::Written::Updated { version }) => {
                                writes.updated(version);
                                run.progress.ok(k);
                            }
                            Ok(herdless_embassy::Written::Unknown) => {
                                writes.unknown();
                                run.progress.ok(k);
                            }
                            Ok(_) => run.progress.ok(k),
                            Err(e) => run.progress.error(k, format!("set: {e:?}")),
                        }
                        let _ =
                            tokio::time::timeout(Duration::from_millis(50), pump.changed()).await;
                    } else {
                        match tokio::time::timeout(Duration::from_millis(200), pump.changed()).await
                        {
                            Ok(Ok(Some(version))) => {
                                writes.seen(&mut last, version);
                                run.progress.ok(k);
                            }
                            Ok(Ok(None)) => run.progress.error(k, "the node vanished".to_owned()),
                            Ok(Err(e)) => run.progress.error(k, format!("changed: {e:?}")),
                            Err(_) => run.progress.ok(k),
                        }
                    }
                }
                let deadline = tokio::time::Instant::now() + SESSION;
                loop {
                    let mut pump = zk.handle(id);
                    last_seen.lock().unwrap()[k] = pump.version();
                    if tokio::time::Instant::now() > deadline {
                        break;
                    }
                    if tokio::time::timeout(Duration::from_millis(500), pump.changed())
                        .await
                        .is_err()
                    {
                        last_seen.lock().unwrap()[k] = pump.version();
                        break;
                    }
                }
            },
        ));
    }
    let (kills, ensemble) = with_kills(ensemble, &run, clients).await;
    let client = herdless_std::connect(&ensemble.connect_string(), SESSION)
        .await
        .unwrap();
    // Its server may not have applied the last writes yet.
    client.sync(NODE).await.unwrap();
    let (data, stat) = client.get_data(NODE).await.unwrap();
    let counter: i32 = std::str::from_utf8(&data).unwrap().parse().unwrap();
    let mut updated = writes.updated.lock().unwrap().clone();
    let unknown = writes.unknown.load(Ordering::SeqCst);
    updated.sort();
    let reported = updated.len();
    updated.dedup();
    let last_seen = last_seen.lock().unwrap().clone();
    println!(
        "config: final version {} (counter {counter}), {reported} writes reported updated, \
         {unknown} unknown; watchers ended on {last_seen:?}",
        stat.version
    );
    run.progress.check("config", &kills, SESSION + DOWN);
    assert_eq!(counter, stat.version, "an increment lost or doubled");
    assert_eq!(
        updated.len(),
        reported,
        "two writes reported the same version"
    );
    assert!(
        reported <= stat.version as usize && stat.version as usize <= reported + unknown,
        "{reported} reported updated and {unknown} unknown, but {} landed",
        stat.version
    );
    assert_eq!(
        writes.backwards.load(Ordering::SeqCst),
        0,
        "a watcher went back"
    );
    assert!(
        last_seen.iter().all(|v| *v == Some(stat.version)),
        "a watcher did not end on version {}: {last_seen:?}",
        stat.version
    );
}

/// How long a leader leads before it resigns.
const TERM: Duration = Duration::from_millis(20);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_election_keeps_one_leader_and_progress_while_servers_are_killed() {
    let _serial = serial().await;
    const DIR: &str = "/chaos/election";
    let ensemble = ZkEnsemble::start();
    let connect = ensemble.connect_string();
    let run = Run::new(&["std-0", "std-1", "embassy-0", "embassy-1"]);
    let holders = Arc::new(Holders::default());
    let mut clients = Vec::new();
    for k in 0..2 {
        let (run, holders) = (run.clone(), holders.clone());
        clients.push(std_client(&connect, async move |client| {
            let election = herdless_std::Election::new(&client, DIR).unwrap();
            while run.carry_on(k, client.session_id().0) {
                match election.campaign().await {
                    Ok(leadership) => {
                        run.progress.ok(k);
                        holders.enter(k, true);
                        tokio::time::sleep(TERM).await;
                        holders.leave(k, true);
                        match leadership.resign().await {
                            Ok(()) => run.progress.ok(k),
                            Err(e) => run.progress.error(k, format!("resign: {e}")),
                        }
                    }
                    Err(e) => run.progress.error(k, format!("campaign: {e}")),
                }
            }
        }));
    }
    for k in 2..4 {
        let (run, holders) = (run.clone(), holders.clone());
        let election: herdless_core::election::Election =
            herdless_core::election::Election::new(DIR).unwrap();
        // One driver as the firmware's, one with a watch table.
        clients.push(if k == 2 {
            embassy_client(addrs(&ensemble), k, election, async move |zk, id| {
                embassy_terms(&run, k, zk, id, &holders).await
            })
        } else {
            device_client(addrs(&ensemble), k, election, async move |zk, id| {
                embassy_terms(&run, k, zk, id, &holders).await
            })
        });
    }
    let (kills, ensemble) = with_kills(ensemble, &run, clients).await;
    let overlaps = holders.violations.load(Ordering::SeqCst);
    println!("election: overlaps {overlaps}");
    run.progress.check("election", &kills, SESSION + DOWN);
    assert_eq!(overlaps, 0, "two leaders at once");
    assert_no_node_left(&ensemble, DIR).await;
}

/// Client `k`'s terms as leader on a herdless-embassy driver holding the
/// election `id`, until the run stops.
async fn embassy_terms<const W: usize, const WB: usize>(
    run: &Run,
    k: usize,
    zk: &mut Zk<'_, TokioTransport, 4, W, WB>,
    id: RecipeId<herdless_core::election::Election>,
    holders: &Holders,
) {
    while run.carry_on(k, zk.session_id()) {
        let mut pump = zk.handle(id);
        match pump.campaign(guid(), b"embassy").await {
            Ok(()) => {
                run.progress.ok(k);
                holders.enter(k, true);
                let led = pump.lead_while(tokio::time::sleep(TERM)).await;
                holders.leave(k, true);
                match led {
                    // How the embedded API says `Suspended` (and `Lost`):
                    // the term stops, which is its point.
                    Ok(()) | Err(herdless_embassy::Error::Suspended) => {}
                    Err(herdless_embassy::Error::Lost) => {}
                    Err(e) => run.progress.error(k, format!("lead: {e:?}")),
                }
                match pump.resign().await {
                    Ok(()) => run.progress.ok(k),
                    Err(e) => run.progress.error(k, format!("resign: {e:?}")),
                }
            }
            Err(e) => run.progress.error(k, format!("campaign: {e:?}")),
        }
    }
}

/// What the queue's clients put and took.
#[derive(Default)]
struct Ledger {
    /// Payloads of the puts that returned (each payload is unique).
    put: Mutex<Vec<String>>,
    /// Payload, node and whether the take was certain.
    taken: Mutex<Vec<(String, String, bool)>>,
}

/// What a queue run's ledger shows.
#[derive(Debug)]
struct Balance {
    /// Puts whose payload was never taken.
    lost: Vec<String>,
    /// Nodes taken by two certain takes.
    taken_twice: Vec<String>,
    /// Payloads that were in two nodes: a put whose create's answer was lost
    /// and whose item was taken before the producer could find it again
    /// (at least once, as documented for `put`).
    put_twice: Vec<String>,
}

impl Ledger {
    fn put(&self, payload: String) {
        self.put.lock().unwrap().push(payload);
    }

    fn taken(&self, payload: &[u8], node: &str, certain: bool) {
        let payload = String::from_utf8_lossy(payload).into_owned();
        self.taken
            .lock()
            .unwrap()
            .push((payload, node.to_owned(), certain));
    }

    fn balance(&self) -> Balance {
        let put = self.put.lock().unwrap().clone();
        let taken = self.taken.lock().unwrap().clone();
        let lost = put
            .iter()
            .filter(|p| !taken.iter().any(|(t, _, _)| t == *p))
            .cloned()
            .collect();
        let mut taken_twice: Vec<String> = taken
            .iter()
            .filter(|(_, n, _)| taken.iter().filter(|(_, m, c)| m == n && *c).count() > 1)
            .map(|(_, n, _)| n.clone())
            .collect();
        taken_twice.sort();
        taken_twice.dedup();
        let mut put_twice: Vec<String> = taken
            .iter()
            .filter(|(p, n, _)| taken.iter().any(|(q, m, _)| q == p && m != n))
            .map(|(p, _, _)| p.clone())
            .collect();
        put_twice.sort();
        put_twice.dedup();
        Balance {
            lost,
            taken_twice,
            put_twice,
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_queue_loses_nothing_and_takes_nothing_twice_while_servers_are_killed() {
    let _serial = serial().await;
    const DIR: &str = "/chaos/queue";
    let ensemble = ZkEnsemble::start();
    let connect = ensemble.connect_string();
    let run = Run::new(&[
        "std-producer",
        "std-consumer",
        "embassy-producer",
        "embassy-consumer",
    ]);
    let ledger = Arc::new(Ledger::default());
    let mut clients = Vec::new();
    {
        let (run, ledger) = (run.clone(), ledger.clone());
        clients.push(std_client(&connect, async move |client| {
            let queue = match herdless_std::queue::Queue::new(&client, DIR).await {
                Ok(q) => q,
                Err(e) => return run.progress.error(0, format!("open: {e}")),
            };
            let mut n = 0;
            while run.carry_on(0, client.session_id().0) {
                let payload = format!("std-{n}");
                n += 1;
                run.doing(0, format!("put {payload}"));
                match queue.put(payload.as_bytes()).await {
                    Ok(_) => {
                        ledger.put(payload);
                        run.progress.ok(0);
                    }
                    Err(e) => run.progress.error(0, format!("put: {e}")),
                }
            }
        }));
    }
    {
        let (run, ledger) = (run.clone(), ledger.clone());
        clients.push(std_client(&connect, async move |client| {
            let queue = match herdless_std::queue::Queue::new(&client, DIR).await {
                Ok(q) => q,
                Err(e) => return run.progress.error(1, format!("open: {e}")),
            };
            while run.carry_on(1, client.session_id().0) {
                run.doing(1, "take");
                match queue.take_timeout(Duration::from_millis(500)).await {
                    Ok(Some(item)) => {
                        ledger.taken(&item.data, &item.node, item.certain);
                        run.progress.ok(1);
                    }
                    Ok(None) => run.progress.ok(1),
                    Err(e) => run.progress.error(1, format!("take: {e}")),
                }
            }
        }));
    }
    {
        let (run, ledger) = (run.clone(), ledger.clone());
        let producer: herdless_core::queue::Producer<64> =
            herdless_core::queue::Producer::new(DIR).unwrap();
        clients.push(embassy_client(
            addrs(&ensemble),
            2,
            producer,
            async move |zk, id| {
                let mut n = 0;
                while run.carry_on(2, zk.session_id()) {
                    let payload = format!("embassy-{n}");
                    n += 1;
                    // With the driver's faults so far: a put stuck after
                    // one says which.
                    run.doing(
                        2,
                        format!(
                            "put {payload} after {} faults, the last {:?}",
                            zk.faults(),
                            zk.last_fault()
                        ),
                    );
                    match zk.handle(id).put(guid(), payload.as_bytes(), None).await {
                        Ok(_) => {
                            ledger.put(payload);
                            run.progress.ok(2);
                        }
                        Err(e) => run.progress.error(2, format!("put: {e:?}")),
                    }
                }
            },
        ));
    }
    {
        let (run, ledger) = (run.clone(), ledger.clone());
        let consumer: herdless_core::queue::Consumer<4, 64> =
            herdless_core::queue::Consumer::new(DIR).unwrap();
        clients.push(embassy_client(
            addrs(&ensemble),
            3,
            consumer,
            async move |zk, id| {
                while run.carry_on(3, zk.session_id()) {
                    run.doing(
                        3,
                        format!(
                            "take after {} faults, the last {:?}",
                            zk.faults(),
                            zk.last_fault()
                        ),
                    );
                    let took = zk
                        .handle(id)
                        .take_timeout(embassy_time::Duration::from_millis(500))
                        .await;
                    match took {
                        Ok(Some(item)) => {
                            ledger.taken(item.data, item.node, item.certain);
                            run.progress.ok(3);
                        }
                        Ok(None) => run.progress.ok(3),
                        // The server expired the session during the take
                        // (an outage longer than the session timeout, which
                        // the issue allows to surface). The next take waits
                        // for the session the driver renews; not counted as
                        // progress, so a session that never comes back
                        // still fails the recovery bound.
                        Err(herdless_embassy::Error::Recipe(
                            herdless_core::Error::SessionEnded,
                        )) => {
                            eprintln!("embassy-consumer: session {:x} ended", zk.session_id());
                        }
                        Err(e) => run.progress.error(3, format!("take: {e:?}")),
                    }
                }
            },
        ));
    }
    let (kills, ensemble) = with_kills(ensemble, &run, clients).await;
    // What is still queued is taken by a last consumer, until the queue is
    // empty: a take that times out on a long queue (a busy machine lists
    // thousands of items slowly) is no sign that it is drained.
    let client = herdless_std::connect(&ensemble.connect_string(), SESSION)
        .await
        .unwrap();
    let queue = herdless_std::queue::Queue::new(&client, DIR).await.unwrap();
    let drain_by = Instant::now() + Duration::from_secs(120);
    loop {
        match queue
            .take_timeout(Duration::from_millis(500))
            .await
            .unwrap()
        {
            Some(item) => ledger.taken(&item.data, &item.node, item.certain),
            None if queue.peek().await.unwrap().is_none() => break,
            None if Instant::now() > drain_by => {
                let views = listings_per_server(&ensemble, DIR).await;
                if views.windows(2).any(|pair| pair[0] != pair[1]) {
                    // Seen once in some hundred runs: after the kills, the
                    // followers still held an item the leader had deleted
                    // (its delete was never applied on them; their logs say
                    // "Digests are not matching"). A consumer on a follower
                    // then lists an item whose delete answers NoNode, for
                    // ever. ZooKeeper's replicas disagree, so nothing the
                    // queue holds can be judged.
                    eprintln!(
                        "queue: the servers disagree on {DIR} after the run ({views:?}): \
                         ZooKeeper's replicas diverged; the balance is not checked"
                    );
                    return;
                }
                panic!("the queue was not drained in 120 s; every server lists {views:?}");
            }
            None => {}
        }
    }
    let balance = ledger.balance();
    let uncertain = ledger.taken.lock().unwrap().iter().filter(|t| !t.2).count();
    println!(
        "queue: {} put, {} taken ({uncertain} uncertain), {} put twice (at least once); {balance:?}",
        ledger.put.lock().unwrap().len(),
        ledger.taken.lock().unwrap().len(),
        balance.put_twice.len()
    );
    run.progress.check("queue", &kills, SESSION + DOWN);
    assert!(balance.lost.is_empty(), "items lost: {balance:?}");
    assert!(
        balance.taken_twice.is_empty(),
        "items taken twice: {balance:?}"
    );
}

/// Rounds of a double barrier: who arrived and who started leaving in
/// which round, and the round after which everyone stops.
#[derive(Default)]
struct Rounds {
    /// Per round: processes that called enter, processes that called leave.
    counts: Mutex<Vec<(usize, usize)>>,
    /// The highest round any process started, and the first round nobody
    /// starts (set once the run stops).
    plan: Mutex<(usize, Option<usize>)>,
    early: AtomicUsize,
}

impl Rounds {
    /// Whether `round` is to be run; if so, it counts as started.
    fn start(&self, round: usize, stopped: bool) -> bool {
        let mut plan = self.plan.lock().unwrap();
        if stopped && plan.1.is_none() {
            plan.1 = Some(plan.0 + 1);
        }
        if plan.1.is_some_and(|last| round >= last) {
            return false;
        }
        plan.0 = plan.0.max(round);
        true
    }

    fn arrive(&self, round: usize) {
        let mut counts = self.counts.lock().unwrap();
        if counts.len() <= round {
            counts.resize(round + 1, (0, 0));
        }
        counts[round].0 += 1;
    }

    fn depart(&self, round: usize) {
        self.counts.lock().unwrap()[round].1 += 1;
    }

    /// Checks, once `enter` (or `leave`) returned, that all `n` processes
    /// had arrived (or started leaving) in `round`.
    fn check(&self, round: usize, n: usize, leaving: bool) {
        let (arrived, departed) = self.counts.lock().unwrap()[round];
        if (if leaving { departed } else { arrived }) < n {
            self.early.fetch_add(1, Ordering::SeqCst);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_double_barrier_never_opens_early_while_servers_are_killed() {
    let _serial = serial().await;
    const DIR: &str = "/chaos/double";
    const N: usize = 4;
    let ensemble = ZkEnsemble::start();
    let connect = ensemble.connect_string();
    let run = Run::new(&["std-0", "std-1", "embassy-0", "embassy-1"]);
    let rounds = Arc::new(Rounds::default());
    let mut clients = Vec::new();
    for k in 0..2 {
        let (run, rounds) = (run.clone(), rounds.clone());
        clients.push(std_client(&connect, async move |client| {
            let barrier =
                herdless_std::barrier::DoubleBarrier::new(&client, DIR, &format!("std-{k}"))
                    .unwrap();
            let mut round = 0;
            while rounds.start(round, !run.carry_on(k, client.session_id().0)) {
                rounds.arrive(round);
                run.doing(k, format!("enter {round}"));
                let inside = match barrier.enter(N as u32).await {
                    Ok(inside) => inside,
                    Err(e) => return run.progress.error(k, format!("enter: {e}")),
                };
                rounds.check(round, N, false);
                run.progress.ok(k);
                rounds.depart(round);
                run.doing(k, format!("leave {round}"));
                if let Err(e) = inside.leave().await {
                    return run.progress.error(k, format!("leave: {e}"));
                }
                rounds.check(round, N, true);
                run.progress.ok(k);
                round += 1;
            }
        }));
    }
    for k in 2..4 {
        let (run, rounds) = (run.clone(), rounds.clone());
        let barrier: herdless_core::double_barrier::DoubleBarrier =
            herdless_core::double_barrier::DoubleBarrier::new(DIR, &format!("embassy-{k}"))
                .unwrap();
        clients.push(embassy_client(
            addrs(&ensemble),
            k,
            barrier,
            async move |zk, id| {
                let mut round = 0;
                while rounds.start(round, !run.carry_on(k, zk.session_id())) {
                    rounds.arrive(round);
                    run.doing(k, format!("enter {round}"));
                    if let Err(e) = zk.handle(id).enter(N as u32).await {
                        return run.progress.error(k, format!("enter: {e:?}"));
                    }
                    rounds.check(round, N, false);
                    run.progress.ok(k);
                    rounds.depart(round);
                    run.doing(k, format!("leave {round}"));
                    if let Err(e) = zk.handle(id).leave().await {
                        return run.progress.error(k, format!("leave: {e:?}"));
                    }
                    rounds.check(round, N, true);
                    run.progress.ok(k);
                    round += 1;
                }
            },
        ));
    }
    let (kills, ensemble) = with_kills(ensemble, &run, clients).await;
    let early = rounds.early.load(Ordering::SeqCst);
    let played = rounds.counts.lock().unwrap().len();
    println!(
        "double barrier: {played} rounds, opened early {early} times; last rounds (arrived, left): {:?}",
        rounds.counts.lock().unwrap().iter().rev().take(3).collect::<Vec<_>>()
    );
    run.progress.check("double barrier", &kills, SESSION + DOWN);
    assert_eq!(
        early, 0,
        "the barrier opened before everyone arrived or left"
    );
    assert_no_node_left(&ensemble, DIR).await;
}

/// The barrier as its controller last left it: `(generation, up)`. A
/// generation is one `set` that returned; `up` turns false just before the
/// controller calls `remove`, so a wait that began while `up` and passed
/// while the same generation is still up passed a barrier that stood.
#[derive(Default)]
struct Gate {
    state: Mutex<(u64, bool)>,
    early: AtomicUsize,
    /// Waits that began while the barrier stood (and so had to wait).
    held: AtomicUsize,
}

impl Gate {
    fn raised(&self) {
        let mut state = self.state.lock().unwrap();
        *state = (state.0 + 1, true);
    }

    fn lowering(&self) {
        self.state.lock().unwrap().1 = false;
    }

    fn now(&self) -> (u64, bool) {
        *self.state.lock().unwrap()
    }

    /// A wait of client `who` that began at `before` passed now.
    fn passed(&self, before: (u64, bool), who: &str) {
        if before.1 {
            self.held.fetch_add(1, Ordering::SeqCst);
            if self.now() == before {
                self.early.fetch_add(1, Ordering::SeqCst);
                // Which client, and when: to match with the kills and the
                // client's session log.
                println!(
                    "barrier: {who} passed generation {} early at {:?}",
                    before.0,
                    Instant::now()
                );
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_barrier_never_lets_a_waiter_pass_while_it_stands_while_servers_are_killed() {
    let _serial = serial().await;
    const NODE: &str = "/chaos/barrier/gate";
    let ensemble = ZkEnsemble::start();
    let connect = ensemble.connect_string();
    let run = Run::new(&["std-controller", "std-waiter", "embassy-0", "embassy-1"]);
    let gate = Arc::new(Gate::default());
    let mut clients = Vec::new();
    let (r, g) = (run.clone(), gate.clone());
    clients.push(std_client(&connect, async move |client| {
        let barrier = herdless_std::barrier::Barrier::new(&client, NODE).unwrap();
        while r.carry_on(0, client.session_id().0) {
            r.doing(0, "set");
            if let Err(e) = barrier.set().await {
                return r.progress.error(0, format!("set: {e}"));
            }
            g.raised();
            r.progress.ok(0);
            tokio::time::sleep(work() * 4).await;
            g.lowering();
            r.doing(0, "remove");
            if let Err(e) = barrier.remove().await {
                return r.progress.error(0, format!("remove: {e}"));
            }
            r.progress.ok(0);
            tokio::time::sleep(work()).await;
        }
    }));
    let (r, g) = (run.clone(), gate.clone());
    clients.push(std_client(&connect, async move |client| {
        let barrier = herdless_std::barrier::Barrier::new(&client, NODE).unwrap();
        while r.carry_on(1, client.session_id().0) {
            let before = g.now();
            r.doing(1, format!("wait {before:?}"));
            if let Err(e) = barrier.wait().await {
                return r.progress.error(1, format!("wait: {e}"));
            }
            g.passed(before, "std-waiter");
            r.progress.ok(1);
            tokio::time::sleep(work()).await;
        }
    }));
    for k in 2..4 {
        let (r, g) = (run.clone(), gate.clone());
        let barrier: herdless_core::barrier::Barrier =
            herdless_core::barrier::Barrier::new(NODE).unwrap();
        clients.push(embassy_client(
            addrs(&ensemble),
            k,
            barrier,
            async move |zk, id| {
                while r.carry_on(k, zk.session_id()) {
                    let before = g.now();
                    r.doing(k, format!("wait {before:?}"));
                    if let Err(e) = zk.handle(id).wait().await {
                        return r.progress.error(k, format!("wait: {e:?}"));
                    }
                    g.passed(before, if k == 2 { "embassy-0" } else { "embassy-1" });
                    r.progress.ok(k);
                    let _ = zk.run(tokio::time::sleep(work())).await;
                }
            },
        ));
    }
    let (kills, _ensemble) = with_kills(ensemble, &run, clients).await;
    let (early, held) = (
        gate.early.load(Ordering::SeqCst),
        gate.held.load(Ordering::SeqCst),
    );
    println!(
        "barrier: {} raised, {held} waits began while it stood, {early} passed it early",
        gate.now().0
    );
    run.progress.check("barrier", &kills, SESSION + DOWN);
    assert_eq!(early, 0, "a waiter passed a barrier that stood");
    assert!(held > 0, "no wait ever began while the barrier stood");
}

/// The three ways a transaction's votes travel, in turn.
const VARIANTS: [herdless_core::two_phase::Variant; 3] = [
    herdless_core::two_phase::Variant::AllWatch,
    herdless_core::two_phase::Variant::Coordinated {
        ephemeral_votes: false,
    },
    herdless_core::two_phase::Variant::Coordinated {
        ephemeral_votes: true,
    },
];

/// One transaction: the votes the sites cast and the outcome each
/// participant learned.
#[derive(Default)]
struct Ballot {
    votes: Vec<herdless_core::two_phase::Vote>,
    outcomes: Vec<(String, herdless_core::two_phase::Outcome)>,
    /// Sites done with it.
    sites_done: usize,
}

/// The transactions of a run, opened one at a time by the coordinator.
#[derive(Default)]
struct Ballots {
    /// The last transaction opened, and whether the coordinator is done.
    open: Mutex<(Option<usize>, bool)>,
    ballots: Mutex<Vec<Ballot>>,
}

impl Ballots {
    fn opened(&self, round: usize) {
        self.ballots.lock().unwrap().push(Ballot::default());
        self.open.lock().unwrap().0 = Some(round);
    }

    fn close(&self) {
        self.open.lock().unwrap().1 = true;
    }

    /// Waits until transaction `round` is open; `false` if it never will be.
    async fn wait_open(&self, round: usize) -> bool {
        loop {
            match *self.open.lock().unwrap() {
                (Some(open), _) if open >= round => return true,
                (_, true) => return false,
                _ => {}
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    }

    /// A site's vote, at random: one in four aborts.
    fn cast(&self, round: usize) -> herdless_core::two_phase::Vote {
        let vote = if uuid::Uuid::new_v4().as_bytes()[0] < 64 {
            herdless_core::two_phase::Vote::Abort
        } else {
            herdless_core::two_phase::Vote::Commit
        };
        self.ballots.lock().unwrap()[round].votes.push(vote);
        vote
    }

    fn learned(
        &self,
        round: usize,
        who: &str,
        outcome: herdless_core::two_phase::Outcome,
        site: bool,
    ) {
        let mut ballots = self.ballots.lock().unwrap();
        ballots[round].outcomes.push((who.to_owned(), outcome));
        if site {
            ballots[round].sites_done += 1;
        }
    }

    fn sites_done(&self, round: usize) -> usize {
        self.ballots.lock().unwrap()[round].sites_done
    }
}

fn tx_path(dir: &str, round: usize) -> String {
    format!("{dir}/tx-{round:06}")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_phase_commit_has_one_outcome_per_transaction_while_servers_are_killed() {
    use herdless_core::two_phase::{Outcome, Vote};
    use herdless_std::two_phase::{Coordinator, Site};
    let _serial = serial().await;
    const DIR: &str = "/chaos/2pc";
    const SITES: [&str; 3] = ["std-site", "embassy-0", "embassy-1"];
    let ensemble = ZkEnsemble::start();
    let connect = ensemble.connect_string();
    let run = Run::new(&["std-coordinator", "std-site", "embassy-0", "embassy-1"]);
    let ballots = Arc::new(Ballots::default());
    let mut clients = Vec::new();
    let (r, b) = (run.clone(), ballots.clone());
    clients.push(std_client(&connect, async move |client| {
        let mut round = 0;
        while r.carry_on(0, client.session_id().0) {
            let variant = VARIANTS[round % VARIANTS.len()];
            r.doing(0, format!("start {round} {variant:?}"));
            let tx = tx_path(DIR, round);
            let started = Coordinator::start(
                &client,
                &tx,
                b"move 10 from a to b",
                &SITES,
                variant,
                Duration::from_secs(120),
            )
            .await;
            let coordinator = match started {
                Ok(c) => c,
                Err(e) => {
                    r.progress.error(0, format!("start: {e}"));
                    break;
                }
            };
            r.progress.ok(0);
            b.opened(round);
            r.doing(0, format!("outcome {round}"));
            match coordinator.outcome().await {
                Ok(outcome) => b.learned(round, "coordinator", outcome, false),
                Err(e) => {
                    r.progress.error(0, format!("outcome: {e}"));
                    break;
                }
            }
            r.progress.ok(0);
            r.doing(0, format!("sites of {round}"));
            while b.sites_done(round) < SITES.len() && !r.stopped() {
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
            round += 1;
        }
        b.close();
    }));
    let (r, b) = (run.clone(), ballots.clone());
    clients.push(std_client(&connect, async move |client| {
        let mut round = 0;
        while b.wait_open(round).await {
            r.carry_on(1, client.session_id().0);
            let variant = VARIANTS[round % VARIANTS.len()];
            r.doing(1, format!("join {round}"));
            let site = match Site::join(&client, &tx_path(DIR, round), SITES[0], variant).await {
                Ok(site) => site,
                Err(e) => return r.progress.error(1, format!("join: {e}")),
            };
            r.progress.ok(1);
            if site.decided().is_none() {
                r.doing(1, format!("vote {round}"));
                match site.vote(b.cast(round)).await {
                    // The outcome was decided before the vote got in.
                    Ok(()) | Err(herdless_std::Error::InvalidState) => {}
                    Err(e) => return r.progress.error(1, format!("vote: {e}")),
                }
            }
            r.doing(1, format!("outcome {round}"));
            match site.outcome().await {
                Ok(outcome) => b.learned(round, SITES[0], outcome, true),
                Err(e) => return r.progress.error(1, format!("outcome: {e}")),
            }
            r.progress.ok(1);
            round += 1;
        }
    }));
    for k in 2..4 {
        let (r, b, addrs) = (run.clone(), ballots.clone(), addrs(&ensemble));
        let name = SITES[k - 1];
        // A device takes part in one transaction per session: the driver
        // holds its recipes for as long as it lives.
        clients.push(client_thread(move || async move {
            let mut round = 0;
            while b.wait_open(round).await {
                let variant = VARIANTS[round % VARIANTS.len()];
                let (mut rx, mut tx) = ([0u8; 4096], [0u8; 1024]);
                let mut site: herdless_core::two_phase::TwoPhase =
                    herdless_core::two_phase::TwoPhase::new(&tx_path(DIR, round)).unwrap();
                let mut zk: Zk<'_, TokioTransport> =
                    embassy_zk(addrs.clone(), &mut rx, &mut tx, round as u32);
                let id = zk.add(&mut site).unwrap();
                r.doing(k, format!("connect for {round}"));
                if let Err(e) = zk.connect().await {
                    return r.progress.error(k, format!("connect: {e:?}"));
                }
                r.carry_on(k, zk.session_id());
                r.doing(k, format!("participate {round}"));
                let decided = match zk.handle(id).participate(name, variant).await {
                    Ok(decided) => decided,
                    Err(e) => return r.progress.error(k, format!("participate: {e:?}")),
                };
                r.progress.ok(k);
                if decided.is_none() {
                    r.doing(k, format!("vote {round}"));
                    if let Err(e) = zk.handle(id).vote(b.cast(round)).await {
                        return r.progress.error(k, format!("vote: {e:?}"));
                    }
                }
                r.doing(k, format!("outcome {round}"));
                match zk.handle(id).outcome().await {
                    Ok(outcome) => b.learned(round, name, outcome, true),
                    Err(e) => return r.progress.error(k, format!("outcome: {e:?}")),
                }
                r.progress.ok(k);
                let _ = zk.close().await;
                round += 1;
            }
        }));
    }
    let (kills, ensemble) = with_kills(ensemble, &run, clients).await;

    let reader = herdless_std::connect(&ensemble.connect_string(), SESSION)
        .await
        .unwrap();
    // Its server may not have applied the last decisions yet.
    reader.sync(DIR).await.unwrap();
    let ballots = std::mem::take(&mut *ballots.ballots.lock().unwrap());
    let (mut split, mut commit_with_abort, mut abort_without, mut unrecorded) = (0, 0, 0, 0);
    let (mut commits, mut aborts) = (0, 0);
    for (round, ballot) in ballots.iter().enumerate() {
        let Some(&(_, first)) = ballot.outcomes.first() else {
            continue;
        };
        let (decision, _) = reader
            .get_data(&format!("{}/decision", tx_path(DIR, round)))
            .await
            .expect("a decided transaction has its decision node");
        let recorded = Outcome::from_bytes(&decision);
        if ballot.outcomes.iter().any(|&(_, o)| o != first) {
            split += 1;
            eprintln!(
                "transaction {round}: outcomes differ: {:?}",
                ballot.outcomes
            );
        }
        if recorded != first {
            unrecorded += 1;
            eprintln!("transaction {round}: learned {first:?}, recorded {recorded:?}");
        }
        let all_commit =
            ballot.votes.len() == SITES.len() && ballot.votes.iter().all(|&v| v == Vote::Commit);
        match first {
            Outcome::Commit if !all_commit => {
                commit_with_abort += 1;
                eprintln!("transaction {round}: committed on votes {:?}", ballot.votes);
            }
            Outcome::Abort if all_commit => {
                abort_without += 1;
                eprintln!("transaction {round}: aborted though every site voted commit");
            }
            Outcome::Commit => commits += 1,
            Outcome::Abort => aborts += 1,
        }
    }
    println!(
        "two-phase: {} transactions, {commits} committed, {aborts} aborted; split {split}, \
         committed with an abort {commit_with_abort}, aborted on all-commit {abort_without}, \
         learned != recorded {unrecorded}",
        ballots.len()
    );
    run.progress
        .check("two-phase commit", &kills, SESSION + DOWN);
    assert_eq!(split, 0, "participants learned different outcomes");
    assert_eq!(unrecorded, 0, "an outcome differs from the decision node");
    assert_eq!(commit_with_abort, 0, "committed despite an abort vote");
    assert_eq!(abort_without, 0, "aborted though every site voted commit");
    assert!(commits > 0 && aborts > 0, "both outcomes happen");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn group_members_and_their_observers_follow_joins_and_leaves_while_servers_are_killed() {
    let _serial = serial().await;
    const DIR: &str = "/chaos/group";
    let ensemble = ZkEnsemble::start();
    let connect = ensemble.connect_string();
    let names = ["std-0", "std-1", "embassy-0", "embassy-1"];
    let run = Run::new(&names);
    // Rounds in which a member found itself out of the group on its own.
    let dropped = Arc::new(AtomicUsize::new(0));
    let mut clients = Vec::new();
    for (k, name) in names.into_iter().enumerate().take(2) {
        let (r, dropped) = (run.clone(), dropped.clone());
        clients.push(std_client(&connect, async move |client| {
            let mut view = herdless_std::group::GroupObserver::start(&client, DIR).unwrap();
            let sees = |view: &herdless_std::group::GroupObserver| {
                view.members().iter().any(|m| m == name)
            };
            let mut round = 0u32;
            while r.carry_on(k, client.session_id().0) {
                r.doing(k, format!("join {round}"));
                let mut member =
                    match herdless_std::GroupMember::join(&client, DIR, name, &round.to_be_bytes())
                        .await
                    {
                        Ok(member) => member,
                        Err(e) => return r.progress.error(k, format!("join: {e}")),
                    };
                r.progress.ok(k);
                r.doing(k, format!("see itself in {round}"));
                while !sees(&view) {
                    if let Err(e) = view.changed().await {
                        return r.progress.error(k, format!("watch: {e}"));
                    }
                }
                r.progress.ok(k);
                let node = format!("{DIR}/{name}");
                let joined = match czxid(&client, &node).await {
                    Ok(z) => z,
                    Err(e) => return r.progress.error(k, format!("stat: {e}")),
                };
                tokio::time::sleep(work()).await;
                // The server's word: the node this round joined with is
                // still there, not gone or made again (a fall-out and a
                // re-join between the two reads).
                match czxid(&client, &node).await {
                    Ok(now) if now.is_some() && now == joined => {}
                    Ok(_) => {
                        dropped.fetch_add(1, Ordering::SeqCst);
                    }
                    Err(e) => return r.progress.error(k, format!("stat: {e}")),
                }
                // Out of the group, not merely suspended: `is_in` is also
                // false while the connection is down, which a kill causes.
                while let Ok(Some(event)) =
                    tokio::time::timeout(Duration::ZERO, member.next_event()).await
                {
                    if event == herdless_std::MembershipEvent::Out {
                        dropped.fetch_add(1, Ordering::SeqCst);
                    }
                }
                r.doing(k, format!("leave {round}"));
                if let Err(e) = member.leave().await {
                    return r.progress.error(k, format!("leave: {e}"));
                }
                r.progress.ok(k);
                r.doing(k, format!("see itself gone in {round}"));
                while sees(&view) {
                    if let Err(e) = view.changed().await {
                        return r.progress.error(k, format!("watch: {e}"));
                    }
                }
                r.progress.ok(k);
                round += 1;
            }
        }));
    }
    for (k, name) in names.into_iter().enumerate().skip(2) {
        let (r, dropped, addrs) = (run.clone(), dropped.clone(), addrs(&ensemble));
        clients.push(client_thread(move || async move {
            let (mut rx, mut tx) = ([0u8; 4096], [0u8; 1024]);
            let mut member: herdless_core::member::Member =
                herdless_core::member::Member::new(DIR, name).unwrap();
            let mut view: herdless_core::members::Observer =
                herdless_core::members::Observer::new(DIR).unwrap();
            let mut zk: Zk<'_, TokioTransport> = embassy_zk(addrs, &mut rx, &mut tx, k as u32);
            let me = zk.add(&mut member).unwrap();
            let seen = zk.add(&mut view).unwrap();
            zk.connect().await.expect("connect");
            let mut round = 0u32;
            while r.carry_on(k, zk.session_id()) {
                r.doing(k, format!("join {round}"));
                if let Err(e) = zk.handle(me).join(&round.to_be_bytes()).await {
                    return r.progress.error(k, format!("join: {e:?}"));
                }
                r.progress.ok(k);
                r.doing(k, format!("see itself in {round}"));
                while !zk.handle(seen).contains(name) {
                    if let Err(e) = zk.handle(seen).changed().await {
                        return r.progress.error(k, format!("watch: {e:?}"));
                    }
                }
                r.progress.ok(k);
                let _ = zk.run(tokio::time::sleep(work())).await;
                r.doing(k, format!("leave {round}"));
                // The events of the whole round, read here: an `Out` is a
                // fall-out, where `is_in` would also count a suspension.
                match zk.handle(me).recipe().map(|m| m.leave()) {
                    Ok(Ok(())) => {}
                    e => return r.progress.error(k, format!("leave: {e:?}")),
                }
                loop {
                    match zk.handle(me).next_event().await {
                        Ok(MemberEvent::Left) => break,
                        Ok(MemberEvent::Out) => {
                            dropped.fetch_add(1, Ordering::SeqCst);
                        }
                        Ok(MemberEvent::Failed(e)) => {
                            return r.progress.error(k, format!("leave: {e:?}"));
                        }
                        Ok(_) => {}
                        Err(e) => return r.progress.error(k, format!("leave: {e:?}")),
                    }
                }
                r.progress.ok(k);
                r.doing(k, format!("see itself gone in {round}"));
                while zk.handle(seen).contains(name) {
                    if let Err(e) = zk.handle(seen).changed().await {
                        return r.progress.error(k, format!("watch: {e:?}"));
                    }
                }
                r.progress.ok(k);
                round += 1;
            }
            let _ = zk.close().await;
        }));
    }
    let (kills, ensemble) = with_kills(ensemble, &run, clients).await;
    let dropped = dropped.load(Ordering::SeqCst);
    println!("membership: members out of the group on their own {dropped}");
    run.progress.check("membership", &kills, SESSION + DOWN);
    assert_eq!(
        dropped, 0,
        "a member fell out of the group without an expiry"
    );
    assert_no_node_left(&ensemble, DIR).await;
}

/// The lock on an ensemble reached through proxies that misbehave in storms:
/// links slowed by 100–500 ms per chunk, connections reset, and connections
/// left half-open (each client must notice through its own deadline). No fault
/// lasts as long as a session timeout, so every session must survive: the
/// session each client ends on is the one it started with, and no
/// application saw an error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_lock_keeps_one_holder_and_every_session_on_a_misbehaving_network() {
    use herdless_tests::chaos::NetFaultKind;
    let _serial = serial().await;
    const DIR: &str = "/chaos/net-lock";
    let ensemble = ZkEnsemble::start();
    let proxies: Vec<herdless_tests::Proxy> = (0..ensemble.len())
        .map(|i| herdless_tests::Proxy::start(ensemble.client_port(i)))
        .collect();
    let addrs: Vec<String> = proxies.iter().map(|p| p.addr()).collect();
    let run = Run::new(&["std-0", "std-1", "embassy-0", "embassy-1"]);
    let holders = Arc::new(Holders::default());
    let clients = lock_contenders(
        &addrs.join(","),
        addrs,
        DIR,
        Flavour::Recipes,
        &run,
        &holders,
    );
    // The session each client started on, once all have one.
    while run.sessions.iter().any(|s| s.load(Ordering::SeqCst) == 0) {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let first: Vec<i64> = run
        .sessions
        .iter()
        .map(|s| s.load(Ordering::SeqCst))
        .collect();
    let seed = std::env::var("HERDLESS_NET_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| u64::from(uuid::Uuid::new_v4().as_bytes()[0]));
    println!("network faults from seed {seed} (HERDLESS_NET_SEED to replay the schedule)");
    let duration = chaos::duration(Duration::from_secs(30));
    let (faults, proxies) = tokio::task::spawn_blocking(move || {
        let storm = Duration::from_secs(6);
        let faults = chaos::misbehave(&proxies, duration, storm, SESSION + DOWN, seed);
        (faults, proxies)
    })
    .await
    .expect("the network misbehaved");
    finish(&run, clients).await;
    let last: Vec<i64> = run
        .sessions
        .iter()
        .map(|s| s.load(Ordering::SeqCst))
        .collect();
    let count = |kind| faults.iter().filter(|f| f.what == kind).count();
    let what = format!(
        "{} slowed, {} sped up, {} resets, {} stalls (seed {seed})",
        count(NetFaultKind::Slow),
        count(NetFaultKind::Fast),
        count(NetFaultKind::Reset),
        count(NetFaultKind::Stall)
    );
    // Breaks in quick succession add up (a holder stalled again while it
    // recovers keeps its waiters waiting): the bound holds from each break
    // not followed by another within it, the last of each storm.
    let bound = SESSION + DOWN;
    let all_breaks: Vec<std::time::Instant> = faults
        .iter()
        .filter(|f| matches!(f.what, NetFaultKind::Reset | NetFaultKind::Stall))
        .map(|f| f.at)
        .collect();
    let breaks: Vec<std::time::Instant> = all_breaks
        .iter()
        .copied()
        .filter(|&at| !all_breaks.iter().any(|&b| b > at && b - at < bound))
        .collect();
    let overlaps = holders.violations.load(Ordering::SeqCst);
    println!(
        "lock on a misbehaving network: overlaps {overlaps}; sessions {first:x?} -> {last:x?}"
    );
    let what = format!("{what}, {} of the breaks isolated", breaks.len());
    run.progress
        .check_after("lock, misbehaving network", &what, &breaks, bound);
    for (name, done) in run.progress.counts() {
        assert!(done >= 10, "{name} acted only {done} times");
    }
    assert_eq!(overlaps, 0, "two holders at once");
    assert_eq!(
        first, last,
        "a session did not survive faults shorter than its timeout"
    );
    drop(proxies);
    assert_no_node_left(&ensemble, DIR).await;
}

/// The herdless contenders of the tests beside a peer, as `lock_contenders`
/// numbers them; the peer writes itself under its own name.
const HERDLESS_NAMES: [&str; 4] = ["std-0", "std-1", "embassy-0", "embassy-1"];

/// An exclusive lock's journal: whether a contender says it is a writer
/// does not matter, everyone is alone or wrong.
impl Witness for Journal {
    fn enter(&self, k: usize, _: bool) {
        self.note("enter", HERDLESS_NAMES[k]);
    }

    fn leave(&self, k: usize, _: bool) {
        self.note("leave", HERDLESS_NAMES[k]);
    }
}

/// The scenario, side by side with Curator: two herdless-std and
/// two herdless-embassy contenders and a Curator `InterProcessMutex` in
/// another process loop on one lock while servers are killed. The order of
/// everyone's critical sections comes from one journal; nobody may enter
/// while another is inside. Prints each contender's critical sections and
/// longest time from a kill to its next entry, Curator's included.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_lock_shared_with_a_curator_contender_keeps_one_holder_while_servers_are_killed() {
    lock_shared_with_a_peer(Peer::Curator, "mutex", "/chaos/curator-lock").await;
}

/// The same beside a Kazoo `Lock` (herdless naming its nodes Kazoo's way,
/// as Kazoo counts no other).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_lock_shared_with_a_kazoo_contender_keeps_one_holder_while_servers_are_killed() {
    lock_shared_with_a_peer(Peer::Kazoo, "lock", "/chaos/kazoo-lock").await;
}

/// The herdless contenders of `lock_contenders`, naming their nodes
/// `peer`'s way, and `peer`'s program in `mode` (its exclusive lock) loop
/// on the lock `dir` while servers are killed.
async fn lock_shared_with_a_peer(peer: Peer, mode: &str, dir: &'static str) {
    let _serial = serial().await;
    let ensemble = ZkEnsemble::start();
    let connect = ensemble.connect_string();
    let scratch = tempfile::tempdir().expect("a scratch directory");
    let journal = Arc::new(Journal::create(scratch.path().join("journal")));
    let duration = chaos::duration(Duration::from_secs(30));
    let mut program = peer.spawn(&connect, dir, &journal, duration.as_secs() + 4, mode);
    // As the programs journal their exclusive locks.
    let name = format!("{peer:?}").to_lowercase();
    let name = name.as_str();
    let run = Run::new(&HERDLESS_NAMES);
    let clients = lock_contenders(
        &connect,
        addrs(&ensemble),
        dir,
        peer.flavour(),
        &run,
        &journal,
    );
    let (kills, _ensemble) = with_kills(ensemble, &run, clients).await;
    // Ours (the child we started): it ends by itself once its time is up.
    let said = peers::said(&mut program, Duration::from_secs(20)).await;
    let lines = journal.read();
    let overlaps = journal::overlaps(&lines, |_| false).violations;
    let now = (std::time::Instant::now(), std::time::SystemTime::now());
    let kills_ms: Vec<u64> = kills
        .iter()
        .map(|k| unix_ms(now.1 - (now.0 - k.at)))
        .collect();
    let mut figures = Vec::new();
    for who in HERDLESS_NAMES.iter().chain(&[name]) {
        let entries: Vec<u64> = lines
            .iter()
            .filter(|(_, enter, w)| *enter && w == who)
            .map(|(at, _, _)| *at)
            .collect();
        let longest = kills_ms
            .iter()
            .filter_map(|&k| entries.iter().find(|&&t| t > k).map(|t| t - k))
            .max();
        figures.push(format!(
            "{who}: {} entries, longest kill-to-entry {longest:?} ms",
            entries.len()
        ));
    }
    println!(
        "lock with {name}: {overlaps} overlaps; {}; {name} said {:?}",
        figures.join("; "),
        said
    );
    run.progress
        .check(&format!("lock with {name}"), &kills, SESSION + DOWN);
    assert_eq!(overlaps, 0, "two holders at once");
    assert!(
        said.contains("entries") && !said.contains("entries 0 "),
        "the {name} contender took the lock: {said:?}"
    );
}

/// A fleet given server seeds starts spread over the ensemble, and the
/// devices of a server that dies go on to different servers, each keeping
/// its session. Where each device is connected is asked of the servers
/// (`cons`), and must match what its driver says.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embassy_devices_spread_over_the_ensemble_and_leave_a_dead_server_for_different_ones() {
    let _serial = serial().await;
    let mut ensemble = ZkEnsemble::start();
    // Seed s: first server s % 3, then a step of 1 (s < 3) or 2 (s >= 3).
    const DEVICES: usize = 6;
    let sessions: Arc<Vec<AtomicI64>> = Arc::new((0..DEVICES).map(|_| AtomicI64::new(0)).collect());
    let servers: Arc<Vec<AtomicUsize>> =
        Arc::new((0..DEVICES).map(|_| AtomicUsize::new(usize::MAX)).collect());
    let stop = Arc::new(AtomicBool::new(false));
    let devices: Vec<_> = (0..DEVICES)
        .map(|k| {
            let (addrs, sessions, servers, stop) = (
                addrs(&ensemble),
                sessions.clone(),
                servers.clone(),
                stop.clone(),
            );
            client_thread(move || async move {
                let (mut rx, mut tx) = ([0u8; 4096], [0u8; 1024]);
                let mut zk: Zk<'_, TokioTransport> = embassy_zk(addrs, &mut rx, &mut tx, k as u32);
                zk.connect().await.expect("connect");
                while !stop.load(Ordering::SeqCst) {
                    sessions[k].store(zk.session_id(), Ordering::SeqCst);
                    if matches!(zk.state(), herdless_embassy::wire::State::Connected { .. }) {
                        servers[k].store(zk.server(), Ordering::SeqCst);
                    }
                    zk.run(tokio::time::sleep(Duration::from_millis(50)))
                        .await
                        .expect("the session carries on");
                }
                let _ = zk.close().await;
            })
        })
        .collect();

    // Where the servers say each device is, once all of them are there and
    // agree with the drivers.
    let placed = |ensemble: &ZkEnsemble, want: &dyn Fn(usize, usize) -> bool| {
        let deadline = Instant::now() + 2 * SESSION;
        loop {
            let at: Vec<Option<usize>> = (0..DEVICES)
                .map(|k| match sessions[k].load(Ordering::SeqCst) {
                    0 => None,
                    sid => ensemble.server_of_session(sid),
                })
                .collect();
            let agreed = (0..DEVICES).all(|k| {
                at[k].is_some_and(|s| s == servers[k].load(Ordering::SeqCst) && want(k, s))
            });
            if agreed {
                return at.into_iter().map(Option::unwrap).collect::<Vec<_>>();
            }
            assert!(
                Instant::now() < deadline,
                "devices at {at:?}, drivers say {servers:?}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    };
    let first = placed(&ensemble, &|_, _| true);
    println!("fleet: devices on servers {first:?}");
    assert_eq!(first, [0, 1, 2, 0, 1, 2], "each device where its seed says");
    let before: Vec<i64> = sessions.iter().map(|s| s.load(Ordering::SeqCst)).collect();

    // A follower dies: a leader's death would make the others drop their
    // clients too while the quorum elects.
    let leader = ensemble.leader().expect("a leader");
    let dead = (0..3).find(|&i| i != leader).unwrap();
    let killed_at = Instant::now();
    ensemble.kill(dead);
    let after = placed(&ensemble, &|_, s| s != dead);
    println!(
        "fleet: server {dead} killed, devices on {after:?} after {:?}",
        killed_at.elapsed()
    );
    let moved: Vec<usize> = (0..DEVICES)
        .filter(|&k| first[k] == dead)
        .map(|k| after[k])
        .collect();
    assert_eq!(moved.len(), 2);
    assert_ne!(
        moved[0], moved[1],
        "the dead server's devices went on to the same server"
    );
    for k in (0..DEVICES).filter(|&k| first[k] != dead) {
        assert_eq!(after[k], first[k], "device {k} left a live server");
    }
    let kept: Vec<i64> = sessions.iter().map(|s| s.load(Ordering::SeqCst)).collect();
    assert_eq!(kept, before, "every session kept");

    stop.store(true, Ordering::SeqCst);
    for device in devices {
        device.join().expect("a device panicked");
    }
}

/// A lock waiter and an election candidate on herdless-embassy drivers with
/// no watch table, each waiting behind a herdless-std holder, are moved to
/// another server when theirs dies. Their resumed sessions hold none of
/// the watches they had, so only their own reads after the resume can tell
/// them the holder is gone: once it releases and resigns, both must take
/// their turn, in the sessions they had.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tableless_embassy_waiters_take_their_turn_after_a_move_to_another_server() {
    let _serial = serial().await;
    const LOCK: &str = "/tableless/lock";
    const ELECTION: &str = "/tableless/election";
    let mut ensemble = ZkEnsemble::start();
    let all = addrs(&ensemble);
    let leader = ensemble.leader().expect("a leader");
    // A follower dies: the devices begin on it (seed = its index), the
    // herdless-std holder is kept off it.
    let dead = (0..3).find(|&i| i != leader).unwrap();
    let others: Vec<String> = (0..3)
        .filter(|&i| i != dead)
        .map(|i| all[i].clone())
        .collect();
    let holder = herdless_std::connect(&others.join(","), SESSION)
        .await
        .unwrap();
    let lock = herdless_std::Lock::new(&holder, LOCK).unwrap();
    let guard = lock.acquire().await.unwrap();
    let election = herdless_std::Election::new(&holder, ELECTION).unwrap();
    let leadership = election.campaign().await.unwrap();

    // Device 0 waits for the lock, device 1 stands in the election.
    let sessions: Arc<Vec<AtomicI64>> = Arc::new((0..2).map(|_| AtomicI64::new(0)).collect());
    let turns: Arc<Vec<AtomicI64>> = Arc::new((0..2).map(|_| AtomicI64::new(0)).collect());
    let device = |k: usize| {
        let (all, sessions, turns) = (all.clone(), sessions.clone(), turns.clone());
        client_thread(move || async move {
            let mut lock: herdless_core::lock::Lock = herdless_core::lock::Lock::new(LOCK).unwrap();
            let mut election: herdless_core::election::Election =
                herdless_core::election::Election::new(ELECTION).unwrap();
            let (mut rx, mut tx) = ([0u8; 2048], [0u8; 512]);
            let mut zk: Device<'_> = embassy_zk(all, &mut rx, &mut tx, dead as u32);
            let lock = zk.add(&mut lock).unwrap();
            let election = zk.add(&mut election).unwrap();
            zk.connect().await.expect("connect");
            sessions[k].store(zk.session_id(), Ordering::SeqCst);
            // Bounded: a device that missed the release would wait for
            // good.
            let bound = embassy_time::Duration::from_millis(3 * SESSION.as_millis() as u64);
            let waited = if k == 0 {
                zk.handle(lock).acquire_timeout(guid(), bound).await
            } else {
                zk.handle(election)
                    .campaign_timeout(guid(), b"device", bound)
                    .await
            };
            assert!(waited.expect("no error"), "device {k}: the turn never came");
            // The session it took its turn in.
            turns[k].store(zk.session_id(), Ordering::SeqCst);
            let done = if k == 0 {
                zk.handle(lock).release().await
            } else {
                zk.handle(election).resign().await
            };
            done.expect("release");
            let _ = zk.close().await;
        })
    };
    let devices = [device(0), device(1)];

    // Both wait on the dead-to-be server, their nodes behind the holder's.
    let waiting = |ensemble: &ZkEnsemble, on: &dyn Fn(usize) -> bool| {
        let deadline = Instant::now() + 2 * SESSION;
        loop {
            let at: Vec<Option<usize>> = (0..2)
                .map(|k| match sessions[k].load(Ordering::SeqCst) {
                    0 => None,
                    sid => ensemble.server_of_session(sid),
                })
                .collect();
            if at.iter().all(|s| s.is_some_and(on)) {
                return at;
            }
            assert!(Instant::now() < deadline, "devices at {at:?}");
            std::thread::sleep(Duration::from_millis(100));
        }
    };
    waiting(&ensemble, &|s| s == dead);
    for dir in [LOCK, ELECTION] {
        let deadline = Instant::now() + SESSION;
        while holder.list_children(dir).await.unwrap().len() < 2 {
            assert!(Instant::now() < deadline, "no device node in {dir}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    let before: Vec<i64> = sessions.iter().map(|s| s.load(Ordering::SeqCst)).collect();

    ensemble.kill(dead);
    let moved = waiting(&ensemble, &|s| s != dead);
    println!("tableless: server {dead} killed, devices resumed on {moved:?}");
    // Whatever they read on resuming, the holder's nodes were there: only
    // a watch set by a read after the resume can wake them now.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(turns.iter().all(|t| t.load(Ordering::SeqCst) == 0));
    let released = Instant::now();
    guard.release().await.unwrap();
    leadership.resign().await.unwrap();
    // Bounded here too: a device whose watch was lost may never reach its
    // own timeout (a listing it waits for is never sent).
    let deadline = released + 2 * SESSION;
    for (k, d) in devices.into_iter().enumerate() {
        while !d.is_finished() {
            assert!(
                Instant::now() < deadline,
                "device {k} did not take its turn within {:?} of the release",
                2 * SESSION
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        d.join().expect("a device failed");
    }
    println!(
        "tableless: both took their turn {:?} after the release",
        released.elapsed()
    );
    let took: Vec<i64> = turns.iter().map(|t| t.load(Ordering::SeqCst)).collect();
    assert_eq!(took, before, "each took its turn in the session it had");
    assert_no_node_left(&ensemble, LOCK).await;
    assert_no_node_left(&ensemble, ELECTION).await;
}
