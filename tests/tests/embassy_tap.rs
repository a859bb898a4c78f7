//! The whole embedded stack end to end: three "devices", each an
//! embassy-executor running embassy-net (smoltcp) on its own TAP device,
//! elect a gateway leader through a real ZooKeeper 3.8 with
//! `herdless-embassy` over `TcpTransport`.
//!
//! Everything runs inside a network namespace the test creates (a bridge at
//! 10.42.0.1 with the server, the devices at 10.42.0.2–4) and deletes
//! afterwards, so no packet reaches a real network. The test re-runs itself
//! inside the namespace through `ip netns exec`.
//!
//! A second test has one device reopen its socket: past a server that
//! never answers, after a reset connection, and after a corrupt frame. A
//! third has the three devices elect against a three-server ensemble whose
//! servers are killed one at a time; a fourth does the same with each
//! killed server's address leaving the network with it, and a fifth has
//! the devices share a lock that way. A sixth cuts a lock holder off the
//! network while others wait, and a seventh changes the server's MAC
//! address under the devices.
//!
//! Creating a namespace needs root and `/dev/net/tun`. The test is
//! `#[ignore]`d in a plain `cargo test`; `scripts/test.sh` runs it when the
//! machine can, and otherwise says loudly that it was skipped. Run
//! explicitly where it cannot work, it fails rather than pass.

use std::net::Ipv4Addr;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use embassy_executor::{Executor, SpawnError, SpawnToken, Spawner};
use embassy_net::tcp::TcpSocket;
use embassy_net::{IpAddress, IpEndpoint, Ipv4Cidr, Runner, Stack, StackResources};
use embassy_net_tuntap::TunTapDevice;
use embassy_time::Timer;
use herdless_core::election::Election;
use herdless_core::lock::Lock;
use herdless_core::naming::Guid;
use herdless_core::Recipe;
use herdless_embassy::wire::{SessionConfig, State};
use herdless_embassy::{Buffers, Error, RecipeId, TcpTransport, Zk};
use herdless_tests::chaos::{self, Progress};
use herdless_tests::netns::{self, Netns};
use herdless_tests::{Proxy, ZkEnsemble, ZkServer};

const TEST: &str = "embassy_net_devices_elect_a_gateway_over_tap";
const DEVICES: usize = 3;
const SESSION_MS: u32 = 4_000;

#[test]
#[ignore = "needs root and /dev/net/tun: run by scripts/test.sh, which reports it as skipped otherwise"]
fn embassy_net_devices_elect_a_gateway_over_tap() {
    namespace_test(TEST, DEVICES, |_| {}, inside_the_namespace);
}

const RECONNECT_TEST: &str = "embassy_net_device_moves_past_a_dead_server_and_reconnects_over_tap";

/// An address on the namespace's subnet where no host answers: a connect
/// to it never completes (smoltcp waits for the neighbour), as to a
/// server that is down with its link.
const NOBODY: Ipv4Addr = Ipv4Addr::new(10, 42, 0, 200);

/// Long enough that a reconnect which first waits out the dead server's
/// connect timeout (half of it, with two servers) resumes the session
/// well before the device's local expiry.
const RECONNECT_SESSION_MS: u32 = 12_000;

/// How long the server side waits before it sends unacknowledged bytes
/// again: a device's stack answers such a resend on a connection it has
/// dropped with an RST of its own, which must come well after the one the
/// transport is to send when it gives the connection up.
const RESEND_DELAY_MS: u32 = 2_000;

/// `TcpTransport` reopening its socket on embassy-net: the first server of
/// two never answers, and the driver's calls are dropped every 30 ms in
/// the middle of its connect, so the transport is asked to connect again
/// over an attempt still under way, until the session's connect timeout
/// moves it to the second server. Then the leader's connection is reset
/// under it: the device must reconnect and resume, still leading, without
/// an error reaching the application. Last, a corrupt frame: the
/// connection the driver gives up must be reset (an RST), so that the
/// server does not keep it.
///
/// Against the transport as it was, which waited for the RST without
/// bound, the device never got past the dead server: the RST of a socket
/// whose peer's address never resolves never leaves.
#[test]
#[ignore = "needs root and /dev/net/tun: run by scripts/test.sh, which reports it as skipped otherwise"]
fn embassy_net_device_moves_past_a_dead_server_and_reconnects_over_tap() {
    namespace_test(
        RECONNECT_TEST,
        1,
        |netns| {
            netns
                .set_resend_delay_ms(RESEND_DELAY_MS)
                .expect("set the namespace's resend delay");
        },
        reconnect_inside_the_namespace,
    );
}

fn reconnect_inside_the_namespace() {
    let server = ZkServer::start();
    // The proxy alone faces the bridge; the server stays on loopback.
    let proxy = Proxy::start_listening_on(Ipv4Addr::UNSPECIFIED, server.port());
    let (reports, inbox) = mpsc::channel();
    let port = proxy.port();
    std::thread::spawn(move || run_device(0, |stack| reconnecting_task(stack, port, reports)));

    let started = Instant::now();
    let expect = |what: &str| -> Instant {
        let report = inbox
            .recv_timeout(Duration::from_secs(60))
            .unwrap_or_else(|_| panic!("the device stalled waiting for {what}"));
        report.print(started);
        assert_eq!(report.what, what, "the device's next step");
        report.at
    };
    let connected = expect("connected");
    assert!(
        connected - started >= Duration::from_millis(u64::from(RECONNECT_SESSION_MS) / 2 - 500),
        "connected before the dead server's connect timeout: server 0 was not tried"
    );
    expect("leading");
    let connections = proxy.connections();
    proxy.reset();
    let reset = Instant::now();
    expect("suspended");
    let reconnected = expect("resumed");
    expect("still leading");
    assert!(
        proxy.connections() > connections,
        "the device did not open a new connection"
    );
    assert_eq!(
        proxy.resets_by_clients(),
        0,
        "the device's answer to the proxy's own close counted as a reset"
    );
    // A frame of negative length, which no server sends: the driver gives
    // the connection up at once, and only the transport's reset can end it
    // on the server's side before the frame's resend (the device's stack
    // may not have acknowledged it) draws an RST from the stack itself.
    // Not a link gone silent: there, the ACK of a ping sent just as the
    // session gives up draws such an RST from the stack at once.
    proxy.send_to_clients(&[0xff; 4]);
    let corrupted = Instant::now();
    expect("suspended");
    let deadline = corrupted + Duration::from_millis(u64::from(RESEND_DELAY_MS) / 2);
    while proxy.resets_by_clients() == 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(
        proxy.resets_by_clients(),
        1,
        "the connection the device gave up was not reset: the server would keep it"
    );
    let given_up = corrupted.elapsed();
    println!(
        "embassy-net: past a dead server after {:?}; reconnected {:?} after its connection was reset; \
         the connection reset by the device {:?} after a corrupt frame ({} ms session)",
        connected - started,
        reconnected - reset,
        given_up,
        RECONNECT_SESSION_MS
    );
}

#[embassy_executor::task]
async fn reconnecting_task(stack: Stack<'static>, zk_port: u16, reports: mpsc::Sender<Report>) {
    let report = reporter(0, reports);
    stack.wait_config_up().await;
    let (mut zk, id) = device_driver(
        stack,
        0,
        vec![
            IpEndpoint::new(IpAddress::Ipv4(NOBODY), zk_port),
            IpEndpoint::new(IpAddress::Ipv4(Netns::HOST_ADDR), zk_port),
        ],
        candidate("/plant/reconnect"),
        RECONNECT_SESSION_MS,
    );
    // Calls far shorter than a connect to server 0, each dropped while it
    // waits, as an application's `select` on its own work would.
    while !matches!(zk.state(), State::Connected { .. }) {
        zk.run_for(embassy_time::Duration::from_millis(30))
            .await
            .expect("the session goes on");
    }
    report("connected");
    zk.handle(id)
        .campaign(guid(), b"reconnecting")
        .await
        .expect("campaign");
    report("leading");
    // Leads until its connection is reset: the election suspends the
    // leader's work on the lost connection, and the same session must
    // come back, still leading.
    match zk
        .handle(id)
        .lead_while(core::future::pending::<()>())
        .await
    {
        Err(Error::Suspended) => report("suspended"),
        other => {
            eprintln!("leading ended otherwise: {other:?}");
            return report("not suspended");
        }
    }
    match zk.handle(id).resumed().await {
        Ok(()) => report("resumed"),
        Err(e) => {
            eprintln!("not resumed: {e:?}");
            return report("lost");
        }
    }
    let held = zk.handle(id).lead_while(Timer::after_millis(1_000)).await;
    report(if held.is_ok() {
        "still leading"
    } else {
        "lost"
    });
    // Then a corrupt frame: the driver gives the connection up, and the
    // transport resets it.
    let corrupt = zk
        .handle(id)
        .lead_while(core::future::pending::<()>())
        .await;
    report(if corrupt == Err(Error::Suspended) {
        "suspended"
    } else {
        "not suspended"
    });
    let _ = zk.run(core::future::pending::<()>()).await;
}

#[test]
fn tcp_errors_say_what_failed() {
    use embassy_net::tcp::{ConnectError, Error as SocketError};
    use herdless_embassy::TcpError;
    assert_eq!(
        TcpError::Connect(ConnectError::TimedOut).to_string(),
        "TCP connect failed: TimedOut"
    );
    assert_eq!(
        TcpError::Socket(SocketError::ConnectionReset).to_string(),
        "TCP connection failed: ConnectionReset"
    );
    assert_eq!(
        TcpError::NoSuchServer.to_string(),
        "no server with that index"
    );
}

/// The kill tests' session.
const KILLS_SESSION_MS: u32 = 6_000;
/// How long each killed server stays down: longer than the session, as a
/// server machine that dies stays down, so that a device which keeps
/// trying a dead server rather than moving on loses its session.
const KILL_DOWN: Duration = Duration::from_secs(7);
/// How long the kills go on: three kills at least, each down for
/// [`KILL_DOWN`], restarted and left serving for as long again.
const KILLS_FOR: Duration = Duration::from_secs(40);
/// A leader's term or a holder's work, after which it resigns or
/// releases and starts again.
const KILLS_TERM_MS: u64 = 200;

#[test]
#[ignore = "needs root and /dev/net/tun: run by scripts/test.sh, which reports it as skipped otherwise"]
fn embassy_net_devices_keep_one_leader_while_ensemble_servers_are_killed_over_tap() {
    kill_test(
        "embassy_net_devices_keep_one_leader_while_ensemble_servers_are_killed_over_tap",
        Contest::Election,
        Death::Process,
    );
}

#[test]
#[ignore = "needs root and /dev/net/tun: run by scripts/test.sh, which reports it as skipped otherwise"]
fn embassy_net_devices_keep_one_leader_while_ensemble_machines_vanish_over_tap() {
    kill_test(
        "embassy_net_devices_keep_one_leader_while_ensemble_machines_vanish_over_tap",
        Contest::Election,
        Death::Machine,
    );
}

#[test]
#[ignore = "needs root and /dev/net/tun: run by scripts/test.sh, which reports it as skipped otherwise"]
fn embassy_net_devices_keep_one_lock_holder_while_ensemble_machines_vanish_over_tap() {
    kill_test(
        "embassy_net_devices_keep_one_lock_holder_while_ensemble_machines_vanish_over_tap",
        Contest::Lock,
        Death::Machine,
    );
}

/// Kill test `test`: the devices contend as `contest` says while servers
/// die as `death` says.
fn kill_test(test: &str, contest: Contest, death: Death) {
    namespace_test(
        test,
        DEVICES,
        |_| {},
        || kills_inside_the_namespace(contest, death),
    );
}

/// What the devices contend for.
#[derive(Clone, Copy, Debug)]
enum Contest {
    /// Leadership: campaign, lead for a term, resign.
    Election,
    /// The lock: acquire, work while holding it, release.
    Lock,
}

/// How a killed server dies.
#[derive(Clone, Copy, Debug)]
enum Death {
    /// Its process is killed on a machine that stays up: the devices'
    /// connections to it are closed by that machine, their connects to it
    /// refused.
    Process,
    /// Its machine leaves the network with it: its address (one of its
    /// own) answers nothing, not even ARP, so the devices' connections to
    /// it go silent and their connects to it time out.
    Machine,
}

/// What the devices of a kill test and the test itself share.
struct KillRun {
    progress: Progress,
    /// Each device's session id, for the kills to find its server.
    sessions: [AtomicI64; DEVICES],
    witness: Witness,
    stop: AtomicBool,
    /// Devices that finished their last round and closed their session.
    finished: AtomicUsize,
}

impl KillRun {
    /// A run for the devices' `'static` tasks.
    fn leak() -> &'static KillRun {
        Box::leak(Box::new(KillRun {
            progress: Progress::new(&["device-0", "device-1", "device-2"]),
            sessions: Default::default(),
            witness: Witness::default(),
            stop: AtomicBool::new(false),
            finished: AtomicUsize::new(0),
        }))
    }

    /// Starts the devices, each on a thread of its own, contending as
    /// `contest` says on `servers`.
    fn spawn_devices(&'static self, servers: &[IpEndpoint], contest: Contest) {
        for device in 0..DEVICES {
            let servers = servers.to_vec();
            std::thread::spawn(move || {
                run_device(device, |stack| {
                    killed_servers_task(stack, device, servers, contest, self)
                })
            });
        }
    }

    /// Waits up to `within` for every device to have acted once: the kills
    /// fall on a fleet at work, not on its first connects.
    fn wait_until_all_acted(&self, within: Duration) {
        let deadline = Instant::now() + within;
        while self.progress.counts().iter().any(|(_, n)| *n == 0) {
            let counts = self.progress.counts();
            assert!(
                Instant::now() < deadline,
                "a device never acted: {counts:?}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Stops the devices and waits up to `within` for all to finish their
    /// last round; returns how many did.
    fn stop_within(&self, within: Duration) -> usize {
        self.stop.store(true, Ordering::SeqCst);
        let deadline = Instant::now() + within;
        while self.finished.load(Ordering::SeqCst) < DEVICES && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        self.finished.load(Ordering::SeqCst)
    }
}

/// Who works as leader or holder: the devices doing so now, and every
/// piece of work begun beside another's.
#[derive(Default)]
struct Witness {
    inside: AtomicUsize,
    overlaps: AtomicUsize,
}

impl Witness {
    fn overlaps(&self) -> usize {
        self.overlaps.load(Ordering::SeqCst)
    }
}

/// A device's work as leader or holder, from its first poll until it ends
/// or is dropped (stopped by the recipe).
struct Inside<'w>(&'w Witness);

impl<'w> Inside<'w> {
    fn enter(witness: &'w Witness) -> Self {
        if witness.inside.fetch_add(1, Ordering::SeqCst) > 0 {
            witness.overlaps.fetch_add(1, Ordering::SeqCst);
        }
        Inside(witness)
    }
}

impl Drop for Inside<'_> {
    fn drop(&mut self) {
        self.0.inside.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The work of one term or one holding.
async fn work(run: &KillRun) {
    let _inside = Inside::enter(&run.witness);
    Timer::after_millis(KILLS_TERM_MS).await;
}

/// Three embassy-net devices contend as `contest` says, round after round,
/// against a three-server ensemble on the namespace's bridge, while its
/// servers are killed with SIGKILL one at a time (the quorum leader and a
/// device's own server in turn, each down for [`KILL_DOWN`]), dying as
/// `death` says.
fn kills_inside_the_namespace(contest: Contest, death: Death) {
    let ensemble = ZkEnsemble::start_listening_on(Ipv4Addr::UNSPECIFIED);
    // Each server on an address of its own, or all on the bridge's.
    let addr = |i: usize| match death {
        Death::Process => Netns::HOST_ADDR,
        Death::Machine => Netns::server_addr(i),
    };
    let machine = |i: usize, up: bool| {
        if let Death::Machine = death {
            netns::set_bridge_addr(addr(i), up).expect("change a server's address");
        }
    };
    (0..ensemble.len()).for_each(|i| machine(i, true));
    let run = KillRun::leak();
    let servers: Vec<IpEndpoint> = (0..ensemble.len())
        .map(|i| IpEndpoint::new(IpAddress::Ipv4(addr(i)), ensemble.client_port(i)))
        .collect();
    run.spawn_devices(&servers, contest);
    run.wait_until_all_acted(Duration::from_secs(30));
    let mut ensemble = ensemble;
    let kills = chaos::kill_in_turn_with(
        &mut ensemble,
        chaos::duration(KILLS_FOR),
        KILL_DOWN,
        || {
            run.sessions
                .iter()
                .map(|s| s.load(Ordering::SeqCst))
                .collect()
        },
        machine,
    );
    let session = Duration::from_millis(u64::from(KILLS_SESSION_MS));
    let bound = session + KILL_DOWN;
    let finished = run.stop_within(bound);
    let overlaps = run.witness.overlaps();
    let what = format!("embassy-net {contest:?}, each killed server's {death:?} gone");
    println!("{what}: {overlaps} pieces of work begun beside another's");
    // ZooKeeper's own election may leave the ensemble serving no client for
    // longer than a session outlives (once 5.6 s: the new leader could not
    // sync its follower at first, and gave up its term): then the sessions'
    // ends are the ensemble's, and only they are forgiven. Normally a
    // leader serves again within half a second.
    let outage = kills
        .iter()
        .map(|k| k.outage(KILL_DOWN))
        .max()
        .unwrap_or_default();
    if outage > session / 3 {
        let forgiven = run.progress.forgive(of_a_session_that_ended);
        println!(
            "{what}: the ensemble served no client for {outage:?} after a kill, over a third \
             of the {session:?} session; the session ends forgiven: {forgiven:?}"
        );
    }
    run.progress.check(&what, &kills, bound);
    assert_eq!(
        overlaps, 0,
        "two devices worked as leader or holder at once"
    );
    assert_eq!(
        finished, DEVICES,
        "a device was still in its last round {bound:?} after the kills"
    );
}

#[embassy_executor::task(pool_size = 3)]
async fn killed_servers_task(
    stack: Stack<'static>,
    device: usize,
    servers: Vec<IpEndpoint>,
    contest: Contest,
    run: &'static KillRun,
) {
    stack.wait_config_up().await;
    match contest {
        Contest::Election => {
            let recipe = candidate("/plant/killed");
            let (zk, id) = device_driver(stack, device, servers, recipe, KILLS_SESSION_MS);
            rounds(zk, device, run, async |zk| {
                election_round(zk, id, device, run).await
            })
            .await;
        }
        Contest::Lock => {
            let recipe = Lock::new("/plant/killed-lock").expect("a valid lock path");
            let (zk, id) = device_driver(stack, device, servers, recipe, KILLS_SESSION_MS);
            rounds(zk, device, run, async |zk| {
                lock_round(zk, id, device, run).await
            })
            .await;
        }
    }
    run.finished.fetch_add(1, Ordering::SeqCst);
}

/// Connects `device`'s driver and runs `round` until the test stops,
/// checking that the session lasted, then closes it.
async fn rounds(
    mut zk: Device,
    device: usize,
    run: &KillRun,
    mut round: impl AsyncFnMut(&mut Device),
) {
    match zk.connect().await {
        Ok(()) => {
            let first = zk.session_id();
            while !run.stop.load(Ordering::SeqCst) {
                run.sessions[device].store(zk.session_id(), Ordering::SeqCst);
                round(&mut zk).await;
            }
            // No server stays down for long: each move to another must
            // keep the session, not let it expire and open a new one.
            if zk.session_id() != first {
                run.progress.error(device, "its session was replaced");
            }
        }
        Err(e) => run.progress.error(device, format!("connect: {e:?}")),
    }
    let _ = zk.close().await;
}

/// A fresh GUID for an attempt.
fn guid() -> Guid {
    Guid::from_random_bytes(uuid::Uuid::new_v4().into_bytes())
}

/// One campaign, term and resignation of `device`, its successes and the
/// errors its application sees noted in `run`.
async fn election_round(zk: &mut Device, id: RecipeId<Election>, device: usize, run: &KillRun) {
    if let Err(e) = zk.handle(id).campaign(guid(), b"device").await {
        return run.progress.error(device, format!("campaign: {e:?}"));
    }
    run.progress.ok(device);
    match zk.handle(id).lead_while(work(run)).await {
        // The term stops when leadership is in doubt or gone: the point
        // of the embedded API's `Suspended` and `Lost`.
        Ok(()) | Err(Error::Suspended | Error::Lost) => {}
        Err(e) => run.progress.error(device, format!("lead: {e:?}")),
    }
    match zk.handle(id).resign().await {
        Ok(()) => run.progress.ok(device),
        Err(e) => run.progress.error(device, format!("resign: {e:?}")),
    }
}

/// One acquisition, holding and release of the lock by `device`, noted in
/// `run` as [`election_round`] notes its rounds.
async fn lock_round(zk: &mut Device, id: RecipeId<Lock>, device: usize, run: &KillRun) {
    if let Err(e) = zk.handle(id).acquire(guid()).await {
        return run.progress.error(device, format!("acquire: {e:?}"));
    }
    run.progress.ok(device);
    match zk.handle(id).hold_while(work(run)).await {
        // The work stops when the lock is gone.
        Ok(()) | Err(Error::Lost) => {}
        Err(e) => run.progress.error(device, format!("hold: {e:?}")),
    }
    match zk.handle(id).release().await {
        Ok(()) => run.progress.ok(device),
        Err(e) => run.progress.error(device, format!("release: {e:?}")),
    }
}

const CUT_TEST: &str = "embassy_net_lock_holder_cut_off_stops_before_the_next_holder_over_tap";

/// The cut-off test's session.
const CUT_SESSION_MS: u32 = 6_000;

#[test]
#[ignore = "needs root and /dev/net/tun: run by scripts/test.sh, which reports it as skipped otherwise"]
fn embassy_net_lock_holder_cut_off_stops_before_the_next_holder_over_tap() {
    namespace_test(CUT_TEST, DEVICES, |_| {}, cut_inside_the_namespace);
}

/// Who works under the cut-off test's lock.
static CUT_WITNESS: Witness = Witness {
    inside: AtomicUsize::new(0),
    overlaps: AtomicUsize::new(0),
};

/// Device 0 takes the lock and works under it without end; devices 1 and
/// 2 queue behind it. Then device 0's TAP device is detached from the
/// bridge: cut off, its stack up, its session driven. Its work must stop
/// (`Lost`, at the driver's local expiry) before the server expires its
/// session and lets the next device in. Attached again, it must take the
/// lock again on a new session, with no error on the way.
fn cut_inside_the_namespace() {
    let server = ZkServer::start_listening_on(Ipv4Addr::UNSPECIFIED);
    let (reports, inbox) = mpsc::channel();
    let port = server.port();
    let spawn = |device: usize| {
        let reports = reports.clone();
        std::thread::spawn(move || {
            run_device(device, |stack| cut_task(stack, device, port, reports))
        })
    };
    let started = Instant::now();
    let mut timeline = Vec::new();
    let mut expect = |who: &[usize], what: &str, within: Duration| -> Report {
        let report = inbox
            .recv_timeout(within)
            .unwrap_or_else(|_| panic!("no {what} within {within:?}; so far: {timeline:#?}"));
        report.print(started);
        assert!(
            who.contains(&report.device) && report.what == what,
            "expected {what} from {who:?}, got {report:?}; so far: {timeline:#?}"
        );
        timeline.push(format!("{} {}", report.device, report.what));
        report
    };
    spawn(0);
    expect(&[0], "working", Duration::from_secs(30));
    spawn(1);
    spawn(2);
    expect(&[1, 2], "acquiring", Duration::from_secs(30));
    expect(&[1, 2], "acquiring", Duration::from_secs(30));
    // Time for both to queue their nodes behind device 0's.
    std::thread::sleep(Duration::from_secs(1));
    netns::set_tap_attached(0, false).expect("cut device 0 off");
    let cut = Instant::now();
    let session = Duration::from_millis(u64::from(CUT_SESSION_MS));
    let lost = expect(&[0], "lost", session * 2);
    let next = expect(&[1, 2], "working", session * 2);
    netns::set_tap_attached(0, true).expect("attach device 0 again");
    let attached = Instant::now();
    // Device 0 waits its turn behind the one still queued.
    expect(&[1, 2], "released", session);
    expect(&[1, 2], "working", session);
    expect(&[1, 2], "released", session);
    let again = expect(&[0], "working again", session * 3);
    println!(
        "embassy-net lock holder cut off: its work stopped {:?} after the cut, the next holder's began {:?} after it ({:?} later); \
         attached again, it held the lock again {:?} later ({} ms session)",
        lost.at - cut,
        next.at - cut,
        next.at - lost.at,
        again.at - attached,
        CUT_SESSION_MS
    );
    assert_eq!(
        CUT_WITNESS.overlaps(),
        0,
        "two devices worked under the lock at once"
    );
    assert!(
        lost.at < next.at,
        "the next holder began before the cut-off one stopped"
    );
}

#[embassy_executor::task(pool_size = 3)]
async fn cut_task(stack: Stack<'static>, device: usize, port: u16, reports: mpsc::Sender<Report>) {
    let report = reporter(device, reports);
    stack.wait_config_up().await;
    let lock: Lock = Lock::new("/plant/cut").expect("a valid lock path");
    let servers = vec![IpEndpoint::new(IpAddress::Ipv4(Netns::HOST_ADDR), port)];
    let (mut zk, id) = device_driver(stack, device, servers, lock, CUT_SESSION_MS);
    zk.connect().await.expect("connect to ZooKeeper");
    if device != 0 {
        report("acquiring");
    }
    let session = zk.session_id();
    if let Err(e) = zk.handle(id).acquire(guid()).await {
        panic!(
            "device {device}: acquire: {e:?} (session {session:#x}, now {:#x}, state {:?}, {} faults, the last {:?})",
            zk.session_id(),
            zk.state(),
            zk.faults(),
            zk.last_fault()
        );
    }
    let held = zk
        .handle(id)
        .hold_while(async {
            let _inside = Inside::enter(&CUT_WITNESS);
            report("working");
            if device == 0 {
                core::future::pending::<()>().await;
            }
            Timer::after_millis(1_000).await;
        })
        .await;
    if device != 0 {
        held.expect("the work runs to its end");
        zk.handle(id).release().await.expect("release");
        report("released");
        let _ = zk.run(core::future::pending::<()>()).await;
        return;
    }
    match held {
        // Reported after the work was dropped.
        Err(Error::Lost) => report("lost"),
        other => return report(if other.is_ok() { "not lost" } else { "failed" }),
    }
    // Back on the network, on a new session: the lock again, after the
    // others.
    zk.handle(id).acquire(guid()).await.expect("acquire again");
    report("working again");
    let _ = zk.run(core::future::pending::<()>()).await;
}

const MAC_TEST: &str = "embassy_net_devices_recover_when_the_server_mac_changes_over_tap";

/// How long the devices go on after the server's MAC address changed.
const AFTER_MAC_CHANGE: Duration = Duration::from_secs(25);

#[test]
#[ignore = "needs root and /dev/net/tun: run by scripts/test.sh, which reports it as skipped otherwise"]
fn embassy_net_devices_recover_when_the_server_mac_changes_over_tap() {
    namespace_test(MAC_TEST, DEVICES, |_| {}, mac_change_inside_the_namespace);
}

/// Three devices share a lock on one server, whose MAC address then
/// changes under its IP address, as when a machine is replaced. smoltcp
/// keeps the old one (it takes no gratuitous ARP, and a neighbour entry
/// lives a minute unless a frame aimed at the device brings the new one),
/// so the devices are cut off until the server's host asks for theirs:
/// their sessions may expire meanwhile, but each must act again, with no
/// error other than the documented ones of a session that ended, and no
/// two holders.
fn mac_change_inside_the_namespace() {
    let server = ZkServer::start_listening_on(Ipv4Addr::UNSPECIFIED);
    let run = KillRun::leak();
    let servers = [IpEndpoint::new(
        IpAddress::Ipv4(Netns::HOST_ADDR),
        server.port(),
    )];
    run.spawn_devices(&servers, Contest::Lock);
    std::thread::sleep(Duration::from_secs(3));
    netns::set_bridge_mac("02:00:00:00:42:fd").expect("change the server's MAC address");
    let changed = Instant::now();
    std::thread::sleep(AFTER_MAC_CHANGE);
    let finished = run.stop_within(Duration::from_secs(10));
    let recoveries = run.progress.recoveries(&[changed]);
    let errors = run.progress.errors();
    // Nothing but a session's end may reach the application.
    let unexpected: Vec<&String> = errors
        .iter()
        .filter(|e| !of_a_session_that_ended(e))
        .collect();
    println!(
        "embassy-net lock after the server's MAC address changed: acted again after {recoveries:?}; \
         {} errors, all of a session that ended: {errors:?}; {} pieces of work begun beside another's",
        errors.len(),
        run.witness.overlaps()
    );
    assert_eq!(
        run.witness.overlaps(),
        0,
        "two devices worked under the lock at once"
    );
    assert!(
        unexpected.is_empty(),
        "errors beyond a session's end: {unexpected:?}"
    );
    for (device, recovery) in recoveries {
        assert!(
            recovery.is_some(),
            "{device} never acted again in the {AFTER_MAC_CHANGE:?} after the MAC address changed"
        );
    }
    assert_eq!(
        finished, DEVICES,
        "a device was still in its last round 10 s after the end"
    );
}

/// Whether a device's error `e` is one a session that ended brings: a
/// waiting `acquire` or `campaign` fails with `SessionEnded` (call again),
/// and the driver replaces the session.
fn of_a_session_that_ended(e: &str) -> bool {
    e.ends_with("acquire: Recipe(SessionEnded)")
        || e.ends_with("campaign: Recipe(SessionEnded)")
        || e.ends_with("its session was replaced")
}

/// Test `test` of this binary: run inside its namespace, `inside`; run
/// anywhere else, re-runs itself inside a namespace of its own with
/// `devices` TAP devices, set up further by `setup`, and fails if it fails
/// there.
fn namespace_test(test: &str, devices: usize, setup: impl FnOnce(&Netns), inside: impl FnOnce()) {
    if std::env::var_os(netns::INSIDE_ENV).is_some() {
        return inside();
    }
    if let Some(why) = Netns::unavailable() {
        panic!("cannot run {test} here: {why} (scripts/test.sh reports it as skipped)");
    }
    let netns = Netns::create(devices).expect("create the test's network namespace");
    setup(&netns);
    let exe = std::env::current_exe().expect("the test binary");
    let out = netns
        .run_inside(&exe, &[test, "--exact", "--ignored", "--nocapture"])
        .expect("run the test inside the namespace");
    let stdout = String::from_utf8_lossy(&out.stdout);
    println!("{stdout}");
    eprintln!("{}", String::from_utf8_lossy(&out.stderr));
    assert!(
        out.status.success(),
        "the devices' run inside {} failed",
        netns.name()
    );
    assert!(stdout.contains("1 passed"), "the inner test did not run");
}

/// What a device tells the test.
#[derive(Debug)]
struct Report {
    device: usize,
    what: &'static str,
    at: Instant,
}

impl Report {
    /// Prints this report on the timeline of a test that began at
    /// `started`.
    fn print(&self, started: Instant) {
        println!(
            "{:>8.3} s  device {}  {}",
            (self.at - started).as_secs_f64(),
            self.device,
            self.what
        );
    }
}

/// How many devices act as leader right now, and the most ever at once.
static LEADERS: AtomicUsize = AtomicUsize::new(0);
static MOST_LEADERS: AtomicUsize = AtomicUsize::new(0);
/// The first leader "crashes" (stops running its session) to force a
/// fail-over.
static CRASHED: AtomicBool = AtomicBool::new(false);

fn inside_the_namespace() {
    let server = ZkServer::start_listening_on(std::net::Ipv4Addr::UNSPECIFIED);
    let (reports, inbox) = mpsc::channel();
    for device in 0..DEVICES {
        let reports = reports.clone();
        let port = server.port();
        std::thread::spawn(move || {
            run_device(device, |stack| device_task(stack, device, port, reports))
        });
    }

    let started = Instant::now();
    let mut timeline: Vec<Report> = Vec::new();
    let mut crashed_at = None;
    let mut fail_over = None;
    let mut leading_after_crash = 0;
    while leading_after_crash < 3 {
        let left = Duration::from_secs(90).saturating_sub(started.elapsed());
        let report = inbox
            .recv_timeout(left)
            .unwrap_or_else(|_| panic!("the devices stalled; so far: {timeline:#?}"));
        match report.what {
            "crashed" => crashed_at = Some(report.at),
            "leading" => {
                if let Some(crash) = crashed_at {
                    leading_after_crash += 1;
                    fail_over.get_or_insert(report.at - crash);
                }
            }
            _ => {}
        }
        timeline.push(report);
    }
    for report in &timeline {
        report.print(started);
    }
    let leaders: std::collections::BTreeSet<usize> = timeline
        .iter()
        .filter(|r| r.what == "leading")
        .map(|r| r.device)
        .collect();
    println!(
        "gateway election over embassy-net/TAP: {} devices led, fail-over after the leader crashed: {:?} ({} ms session)",
        leaders.len(),
        fail_over.expect("a fail-over"),
        SESSION_MS
    );
    assert_eq!(
        MOST_LEADERS.load(Ordering::SeqCst),
        1,
        "two devices led at once"
    );
    assert!(leaders.len() >= 2, "leadership never moved: {timeline:#?}");
}

/// Runs device `device` (its TAP device, embassy-net stack and executor)
/// on this thread, with the task `spawn` makes on its stack.
fn run_device<S>(
    device: usize,
    spawn: impl FnOnce(Stack<'static>) -> Result<SpawnToken<S>, SpawnError>,
) {
    let mut tap = TunTapDevice::new(&Netns::tap_name(device)).expect("open the TAP device");
    let last = u8::try_from(device).expect("few devices");
    tap.set_hardware_address([0x02, 0x00, 0x00, 0x00, 0x42, last]);
    let address = Netns::device_addr(device);
    let config = embassy_net::Config::ipv4_static(embassy_net::StaticConfigV4 {
        address: Ipv4Cidr::new(address, Netns::PREFIX_LEN),
        gateway: None,
        dns_servers: Default::default(),
    });
    let resources = Box::leak(Box::new(StackResources::<4>::new()));
    let seed = 0x5eed_0000 + u64::from(last);
    let (stack, runner) = embassy_net::new(tap, config, resources, seed);
    let executor = Box::leak(Box::new(Executor::new()));
    executor.run(move |spawner: Spawner| {
        spawner.spawn(net_task(runner).expect("spawn the network task"));
        spawner.spawn(spawn(stack).expect("spawn the device task"));
    });
}

/// What device `device` tells the test, sent at the moment it says it.
fn reporter(device: usize, reports: mpsc::Sender<Report>) -> impl Fn(&'static str) {
    move |what| {
        let _ = reports.send(Report {
            device,
            what,
            at: Instant::now(),
        });
    }
}

/// A device's driver, as the STM32 firmware has it: no watch table, so
/// the recipes' own reads after a resume are what keeps them going through
/// the kills here.
type Device = Zk<'static, TcpTransport<'static, 'static>, 4, 0, 0>;

/// Device `device`'s driver over embassy-net to `servers` (a session of
/// `session_ms`), with `recipe` added; the recipe, its socket and frame
/// buffers are leaked for the executor's `'static` task. As a fleet's
/// devices should, each tries the servers in an order of its own (its
/// index as the seed: device `k` of three begins with server `k`).
fn device_driver<R: Recipe + 'static>(
    stack: Stack<'static>,
    device: usize,
    servers: Vec<IpEndpoint>,
    recipe: R,
    session_ms: u32,
) -> (Device, RecipeId<R>) {
    let socket = TcpSocket::new(
        stack,
        Box::leak(Box::new([0u8; 4096])),
        Box::leak(Box::new([0u8; 1024])),
    );
    let servers: &'static [IpEndpoint] = servers.leak();
    let count = servers.len();
    let buffers = Buffers::new(
        Box::leak(Box::new([0u8; 2048])),
        Box::leak(Box::new([0u8; 512])),
    );
    let mut zk = Zk::new(
        TcpTransport::new(socket, servers),
        buffers,
        SessionConfig::new(count, session_ms).with_server_seed(device as u32),
    );
    let id = zk
        .add(Box::leak(Box::new(recipe)))
        .expect("room for the recipe");
    (zk, id)
}

/// A candidate of the election in `dir`.
fn candidate(dir: &str) -> Election {
    Election::new(dir).expect("a valid election path")
}

#[embassy_executor::task(pool_size = 3)]
async fn net_task(mut runner: Runner<'static, TunTapDevice>) -> ! {
    runner.run().await
}

#[embassy_executor::task(pool_size = 3)]
async fn device_task(
    stack: Stack<'static>,
    device: usize,
    zk_port: u16,
    reports: mpsc::Sender<Report>,
) {
    let report = reporter(device, reports);
    stack.wait_config_up().await;
    let (mut zk, id) = device_driver(
        stack,
        device,
        vec![IpEndpoint::new(IpAddress::Ipv4(Netns::HOST_ADDR), zk_port)],
        candidate("/plant/gateway"),
        SESSION_MS,
    );
    zk.connect().await.expect("connect to ZooKeeper");
    report("connected");
    let name = format!("device-{device}");
    loop {
        zk.handle(id)
            .campaign(guid(), name.as_bytes())
            .await
            .expect("campaign");
        let now = LEADERS.fetch_add(1, Ordering::SeqCst) + 1;
        MOST_LEADERS.fetch_max(now, Ordering::SeqCst);
        report("leading");
        if !CRASHED.swap(true, Ordering::SeqCst) {
            // Stop running the session while leading, as a device that
            // hangs would: no more pings, so the ensemble expires it.
            Timer::after_millis(500).await;
            LEADERS.fetch_sub(1, Ordering::SeqCst);
            report("crashed");
            core::future::pending::<()>().await;
        }
        let outcome = zk.handle(id).lead_while(Timer::after_millis(1_500)).await;
        LEADERS.fetch_sub(1, Ordering::SeqCst);
        report(if outcome.is_ok() { "resigning" } else { "lost" });
        let _ = zk.handle(id).resign().await;
        Timer::after_millis(300).await;
    }
}
