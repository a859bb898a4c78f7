//! The README's demo command, both ways: on the in-memory ZooKeeper, and
//! with `--zk` against a real server this test starts.

use std::process::Command;

use herdless_tests::ZkServer;

fn run_demo(args: &[&str]) -> String {
    let output = Command::new(env!("CARGO_BIN_EXE_demo"))
        .args(args)
        .output()
        .expect("run the demo");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "demo {args:?} failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

#[test]
fn the_demo_runs_on_the_simulator() {
    let out = run_demo(&[]);
    for expected in [
        "all 5 devices served",
        "nodes left: []",
        "REFUSED, the value moved on",
        "edge-3 is back in, by itself",
        "a second billing instance is REFUSED: the name is taken",
        "billing's session expires (a long partition)\n  client looks up billing: not registered",
        "billing is registered again on its next session\n  client looks up billing: 10.0.0.5:443",
        "decision holds Some(\"abort\")",
        "4 workers passed, watches left: 0",
        "worker-4 arrives; inside so far: 4",
        "consumer took URGENT",
        "decision holds Some(\"commit\")",
        "publisher releases: 4 readers hold at once (4 notifications, 0 listings)",
        "nightly-job releases by consent",
        "the stubborn dashboard is told the lock is LOST",
        "edge-1 is told: SUSPENDED",
        "edge-1's departure woke 1 of the 3 waiting devices",
        "edge-2's resignation woke 1 of the 2 waiting devices",
        "election nodes left: []",
    ] {
        assert!(out.contains(expected), "missing {expected:?} in:\n{out}");
    }
}

#[test]
fn the_demo_runs_against_a_real_server() {
    let server = ZkServer::start();
    let out = run_demo(&["--zk", &server.addr()]);
    for expected in [
        "devices finished",
        "CRASHES while holding the lock",
        "a stale write against version 0 is REFUSED",
        "observer: left [\"edge-3\"]",
        "a second billing instance is REFUSED: the name is taken",
        "billing leaves (a clean shutdown)\n  client looks up billing: not registered",
        "registers billing at 10.0.0.6:443\n  client looks up billing: 10.0.0.6:443",
        "decided: Commit",
        "worker-4 left (all are done)",
        "URGENT arrives at priority 1",
        "publisher releases: 4 readers hold at once",
        "nightly-job releases by consent",
        "after a 300 ms grace: Forced",
        "the stubborn dashboard is told the lock is LOST",
        "edge-2 takes over as gateway after",
        "dashboard: gateway is edge-3",
    ] {
        assert!(out.contains(expected), "missing {expected:?} in:\n{out}");
    }
}
