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
//! Creating a namespace needs root and `/dev/net/tun`. The test is
//! `#[ignore]`d in a plain `cargo test`; `scripts/test.sh` runs it when the
//! machine can, and otherwise says loudly that it was skipped. Run
//! explicitly where it cannot work, it fails rather than pass.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use embassy_executor::{Executor, Spawner};
use embassy_net::tcp::TcpSocket;
use embassy_net::{IpAddress, IpEndpoint, Ipv4Cidr, Runner, Stack, StackResources};
use embassy_net_tuntap::TunTapDevice;
use embassy_time::Timer;
use herdless_core::election::Election;
use herdless_core::naming::Guid;
use herdless_embassy::wire::SessionConfig;
use herdless_embassy::{Buffers, TcpTransport, Zk};
use herdless_tests::netns::{self, Netns};
use herdless_tests::ZkServer;

const TEST: &str = "embassy_net_devices_elect_a_gateway_over_tap";
const DEVICES: usize = 3;
const SESSION_MS: u32 = 4_000;

#[test]
#[ignore = "needs root and /dev/net/tun: run by scripts/test.sh, which reports it as skipped otherwise"]
fn embassy_net_devices_elect_a_gateway_over_tap() {
    if std::env::var_os(netns::INSIDE_ENV).is_some() {
        return inside_the_namespace();
    }
    if let Some(why) = Netns::unavailable() {
        panic!("cannot run {TEST} here: {why} (scripts/test.sh reports it as skipped)");
    }
    let netns = Netns::create(DEVICES).expect("create the test's network namespace");
    let exe = std::env::current_exe().expect("the test binary");
    let out = netns
        .run_inside(&exe, &[TEST, "--exact", "--ignored", "--nocapture"])
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
        std::thread::spawn(move || run_device(device, port, reports));
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
    for r in &timeline {
        println!(
            "{:>8.3} s  device {}  {}",
            (r.at - started).as_secs_f64(),
            r.device,
            r.what
        );
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

fn run_device(device: usize, zk_port: u16, reports: mpsc::Sender<Report>) {
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
        spawner.spawn(device_task(stack, device, zk_port, reports).expect("spawn the device task"));
    });
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
    let report = |what| {
        let _ = reports.send(Report {
            device,
            what,
            at: Instant::now(),
        });
    };
    stack.wait_config_up().await;
    let socket = TcpSocket::new(
        stack,
        Box::leak(Box::new([0u8; 4096])),
        Box::leak(Box::new([0u8; 1024])),
    );
    let servers: &'static [IpEndpoint] = Box::leak(Box::new([IpEndpoint::new(
        IpAddress::Ipv4(Netns::HOST_ADDR),
        zk_port,
    )]));
    let transport = TcpTransport::new(socket, servers);
    let election: &'static mut Election = Box::leak(Box::new(
        Election::new("/plant/gateway").expect("a valid election path"),
    ));
    let buffers = Buffers::new(
        Box::leak(Box::new([0u8; 2048])),
        Box::leak(Box::new([0u8; 512])),
    );
    let mut zk: Zk<'static, _> = Zk::new(transport, buffers, SessionConfig::new(1, SESSION_MS));
    let id = zk.add(election).expect("room for the election");
    zk.connect().await.expect("connect to ZooKeeper");
    report("connected");
    let name = format!("device-{device}");
    loop {
        let guid = Guid::from_random_bytes(uuid::Uuid::new_v4().into_bytes());
        zk.handle(id)
            .campaign(guid, name.as_bytes())
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
