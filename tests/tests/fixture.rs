//! The real-server fixture itself: servers start, answer, run side by side,
//! and an ensemble fails over.

use std::time::{Duration, Instant};

use herdless_tests::{ZkEnsemble, ZkServer};

#[test]
fn standalone_server_answers_and_counts_packets() {
    let server = ZkServer::start();
    assert_eq!(server.four_letter("ruok").unwrap(), "imok");
    assert_eq!(
        server.mntr().get("zk_server_state").map(String::as_str),
        Some("standalone")
    );
    let before = server.packets_received();
    let after = server.packets_received();
    assert!(after > before, "each mntr connection counts a packet");
}

#[test]
fn servers_run_side_by_side_on_different_ports() {
    let a = ZkServer::start();
    let b = ZkServer::start();
    assert_ne!(a.port(), b.port());
    assert_eq!(b.four_letter("ruok").unwrap(), "imok");
}

#[test]
fn ensemble_elects_a_new_leader_after_the_leader_dies() {
    let mut ensemble = ZkEnsemble::start();
    let leader = ensemble.leader().expect("a leader");
    ensemble.kill(leader);
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(new) = ensemble.leader() {
            assert_ne!(new, leader);
            break;
        }
        assert!(Instant::now() < deadline, "no new leader within 20 s");
        std::thread::sleep(Duration::from_millis(100));
    }
}
