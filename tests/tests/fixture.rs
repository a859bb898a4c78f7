//! The real-server fixture itself: servers start, answer, run side by side,
//! go away with their tests (even panicking ones), and an ensemble fails
//! over.

use std::time::{Duration, Instant};

use herdless_tests::{four_letter, zookeeper_available, ZkEnsemble, ZkServer};

/// Whether something still answers four-letter words on `port`.
fn answers(port: u16) -> bool {
    four_letter(port, "ruok").is_ok_and(|a| a == "imok")
}

#[test]
fn zookeeper_is_installed() {
    assert!(zookeeper_available());
}

#[test]
fn standalone_server_answers_and_counts_packets() {
    let server = ZkServer::start();
    assert_eq!(server.addr(), format!("127.0.0.1:{}", server.port()));
    assert_eq!(server.four_letter("ruok").unwrap(), "imok");
    assert_eq!(
        server.mntr().get("zk_server_state").map(String::as_str),
        Some("standalone")
    );
    let before = server.packets_received();
    let after = server.packets_received();
    assert!(
        after > before,
        "each mntr connection counts a packet: {before} then {after}"
    );
    assert_eq!(server.watch_count(), 0);
    assert_eq!(server.ephemerals_count(), 0);
    assert!(server.znode_count() >= 1, "at least the root");
    assert!(server.mntr_value("zk_no_such_key").is_none());
    assert!(server.log().contains("binding to port"), "{}", server.log());
}

#[test]
fn servers_started_in_parallel_get_their_own_ports_and_dirs() {
    let servers: Vec<ZkServer> = (0..3)
        .map(|_| std::thread::spawn(ZkServer::start))
        .collect::<Vec<_>>()
        .into_iter()
        .map(|h| h.join().expect("a server starts"))
        .collect();
    for (i, a) in servers.iter().enumerate() {
        assert_eq!(a.four_letter("ruok").unwrap(), "imok");
        let conf = a.four_letter("conf").unwrap();
        assert!(
            conf.contains(&a.dir().join("data").display().to_string()),
            "{conf}"
        );
        for b in &servers[i + 1..] {
            assert_ne!(a.port(), b.port());
            assert_ne!(a.dir(), b.dir());
        }
    }
}

#[test]
fn stop_is_idempotent_and_drop_removes_the_directory() {
    let mut server = ZkServer::start();
    let port = server.port();
    let dir = server.dir().to_owned();
    assert!(server.is_running());
    server.stop();
    assert!(!server.is_running());
    assert!(!answers(port), "the server still answers after stop");
    server.stop();
    assert!(dir.exists(), "the directory stays until drop");
    drop(server);
    assert!(!dir.exists(), "the directory outlives the server");
}

#[test]
fn a_panicking_test_leaves_no_server_behind() {
    let (tx, rx) = std::sync::mpsc::channel();
    let result = std::thread::spawn(move || {
        let server = ZkServer::start();
        tx.send((server.port(), server.dir().to_owned())).unwrap();
        panic!("the test fails while its server runs");
    })
    .join();
    assert!(result.is_err());
    let (port, dir) = rx.recv().unwrap();
    assert!(!answers(port), "the server survived the panic");
    assert!(!dir.exists(), "the directory survived the panic");
}

#[test]
fn ensemble_elects_a_new_leader_after_the_leader_dies() {
    let mut ensemble = ZkEnsemble::start();
    assert_eq!(ensemble.len(), 3);
    let addrs: Vec<String> = (0..3).map(|i| ensemble.client_addr(i)).collect();
    assert_eq!(ensemble.connect_string(), addrs.join(","));
    for i in 0..3 {
        assert_eq!(ensemble.four_letter(i, "ruok").unwrap(), "imok");
    }

    let states = ensemble.states();
    let leaders: Vec<usize> = (0..3)
        .filter(|&i| states[i].as_deref() == Some("leader"))
        .collect();
    assert_eq!(leaders.len(), 1, "exactly one leader: {states:?}");
    let followers = states
        .iter()
        .filter(|s| s.as_deref() == Some("follower"))
        .count();
    assert_eq!(followers, 2, "{states:?}");
    let leader = ensemble.leader().expect("a leader");
    assert_eq!(leader, leaders[0]);

    let started = Instant::now();
    let leader_port = ensemble.client_port(leader);
    ensemble.kill(leader);
    assert!(!answers(leader_port), "the killed leader still answers");
    ensemble.kill(leader);
    assert_eq!(ensemble.server_state(leader), None);

    let new_leader = loop {
        if let Some(new) = ensemble.leader() {
            break new;
        }
        assert!(
            started.elapsed() < Duration::from_secs(15),
            "no new leader within 15 s: {:?}",
            ensemble.states()
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_ne!(new_leader, leader);
    let survivor = (0..3).find(|&i| i != leader && i != new_leader).unwrap();
    let deadline = Instant::now() + Duration::from_secs(15);
    while ensemble.server_state(survivor).as_deref() != Some("follower") {
        assert!(
            Instant::now() < deadline,
            "the survivor does not follow: {:?}",
            ensemble.states()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(
        ensemble
            .mntr(new_leader)
            .get("zk_server_state")
            .map(String::as_str),
        Some("leader")
    );
}
