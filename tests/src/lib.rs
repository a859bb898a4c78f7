//! Real ZooKeeper servers for herdless's integration tests.
//!
//! [`ZkServer::start`] runs a standalone ZooKeeper 3.8 (the Debian package's
//! jar) on a free loopback port, with its own data directory, and stops it
//! when dropped, even when the test panics. Tests run in parallel, so nothing
//! is fixed: ports are picked free (and retried on a collision), each server
//! has its own temporary directory, and the AdminServer is off.
//!
//! Install the server with the README's test command (`./scripts/test.sh`).

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use tempfile::TempDir;

/// The server jar of Debian's `zookeeper` package.
pub const ZOOKEEPER_JAR: &str = "/usr/share/java/zookeeper.jar";

/// Whether a ZooKeeper server can be started here (the jar and `java`).
pub fn zookeeper_available() -> bool {
    Path::new(ZOOKEEPER_JAR).exists()
        && Command::new("java")
            .arg("-version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
}

fn free_port() -> u16 {
    TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("bind an ephemeral loopback port")
}

/// Sends a four-letter word to `127.0.0.1:port` and reads the answer.
pub fn four_letter(port: u16, cmd: &str) -> std::io::Result<String> {
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(2))?;
    stream.set_read_timeout(Some(Duration::from_secs(5)))?;
    stream.write_all(cmd.as_bytes())?;
    let mut out = String::new();
    stream.read_to_string(&mut out)?;
    Ok(out)
}

fn parse_mntr(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .filter_map(|l| l.split_once('\t'))
        .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
        .collect()
}

/// One ZooKeeper server process.
struct Process {
    child: Child,
    dir: PathBuf,
    client_port: u16,
}

impl Process {
    fn spawn(dir: &Path, config: &str, client_port: u16) -> std::io::Result<Process> {
        let cfg = dir.join("zoo.cfg");
        std::fs::write(&cfg, config)?;
        let log = std::fs::File::create(dir.join("server.log"))?;
        let child = Command::new("java")
            .arg("-Xmx256m")
            .arg("-XX:+UseSerialGC")
            .arg(format!("-Dzookeeper.log.dir={}", dir.display()))
            .arg("-cp")
            .arg(format!("/etc/zookeeper/conf_example:{ZOOKEEPER_JAR}"))
            .arg("org.apache.zookeeper.server.quorum.QuorumPeerMain")
            .arg(&cfg)
            .stdout(log.try_clone()?)
            .stderr(log)
            .stdin(Stdio::null())
            .spawn()?;
        Ok(Process {
            child,
            dir: dir.to_owned(),
            client_port,
        })
    }

    fn exited(&mut self) -> bool {
        !matches!(self.child.try_wait(), Ok(None))
    }

    fn state(&self) -> Option<String> {
        let text = four_letter(self.client_port, "mntr").ok()?;
        parse_mntr(&text).remove("zk_server_state")
    }

    fn log_tail(&self) -> String {
        let log = std::fs::read_to_string(self.dir.join("server.log")).unwrap_or_default();
        let lines: Vec<&str> = log.lines().collect();
        lines[lines.len().saturating_sub(30)..].join("\n")
    }

    fn kill(&mut self) {
        if !self.exited() {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        self.kill();
    }
}

fn base_config(data: &Path, client_port: u16) -> String {
    format!(
        "tickTime=500\n\
         minSessionTimeout=1000\n\
         maxSessionTimeout=60000\n\
         dataDir={}\n\
         clientPort={client_port}\n\
         clientPortAddress=127.0.0.1\n\
         admin.enableServer=false\n\
         4lw.commands.whitelist=*\n\
         forceSync=no\n",
        data.display()
    )
}

fn require_zookeeper() {
    assert!(
        zookeeper_available(),
        "ZooKeeper is not installed ({ZOOKEEPER_JAR} or java missing): \
         run the README's test command, ./scripts/test.sh, which installs it"
    );
}

/// A standalone ZooKeeper server on a free loopback port.
pub struct ZkServer {
    process: Option<Process>,
    port: u16,
    // Dropped after the process (fields drop in order): the directory goes
    // once the server is dead.
    _dir: TempDir,
}

impl ZkServer {
    /// Starts a server and waits until it serves. Panics, with the server's
    /// log, if it cannot start after a few attempts on different ports.
    pub fn start() -> ZkServer {
        require_zookeeper();
        let mut last_log = String::new();
        for _attempt in 0..4 {
            let dir = tempfile::Builder::new()
                .prefix("herdless-zk-")
                .tempdir()
                .expect("create a temporary directory");
            let data = dir.path().join("data");
            std::fs::create_dir_all(&data).expect("create the data directory");
            let port = free_port();
            let mut process = Process::spawn(dir.path(), &base_config(&data, port), port)
                .expect("spawn java for ZooKeeper");
            let deadline = Instant::now() + Duration::from_secs(30);
            while Instant::now() < deadline && !process.exited() {
                if process.state().is_some() {
                    return ZkServer {
                        process: Some(process),
                        port,
                        _dir: dir,
                    };
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            last_log = process.log_tail();
            process.kill();
        }
        panic!("ZooKeeper did not start; last server log:\n{last_log}");
    }

    /// `127.0.0.1:PORT`, the connect string.
    pub fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// The client port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Sends a four-letter word (`ruok`, `mntr`, `cons`, `wchc`, ...).
    pub fn four_letter(&self, cmd: &str) -> std::io::Result<String> {
        four_letter(self.port, cmd)
    }

    /// The `mntr` report as key/value pairs.
    pub fn mntr(&self) -> BTreeMap<String, String> {
        parse_mntr(&self.four_letter("mntr").expect("mntr answers"))
    }

    /// One numeric `mntr` value.
    pub fn mntr_value(&self, key: &str) -> Option<i64> {
        self.mntr().get(key).and_then(|v| v.parse().ok())
    }

    /// `zk_packets_received`: frames received by the server. The `mntr`
    /// connection asking counts one itself.
    pub fn packets_received(&self) -> i64 {
        self.mntr_value("zk_packets_received")
            .expect("zk_packets_received")
    }

    /// `zk_packets_sent`: frames sent by the server (replies and watch
    /// notifications).
    pub fn packets_sent(&self) -> i64 {
        self.mntr_value("zk_packets_sent").expect("zk_packets_sent")
    }

    /// `zk_watch_count`: registered watches.
    pub fn watch_count(&self) -> i64 {
        self.mntr_value("zk_watch_count").expect("zk_watch_count")
    }

    /// `zk_ephemerals_count`: ephemeral nodes.
    pub fn ephemerals_count(&self) -> i64 {
        self.mntr_value("zk_ephemerals_count")
            .expect("zk_ephemerals_count")
    }

    /// `zk_znode_count`: all nodes.
    pub fn znode_count(&self) -> i64 {
        self.mntr_value("zk_znode_count").expect("zk_znode_count")
    }

    /// Stops the server (by its pid); idempotent.
    pub fn stop(&mut self) {
        if let Some(mut p) = self.process.take() {
            p.kill();
        }
    }
}

impl Drop for ZkServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A three-server ensemble on loopback ports.
pub struct ZkEnsemble {
    servers: Vec<Option<Process>>,
    client_ports: Vec<u16>,
    _dir: TempDir,
}

impl ZkEnsemble {
    /// Starts three servers and waits until all serve (one leader, two
    /// followers).
    pub fn start() -> ZkEnsemble {
        require_zookeeper();
        let dir = tempfile::Builder::new()
            .prefix("herdless-ensemble-")
            .tempdir()
            .expect("create a temporary directory");
        let ports: Vec<[u16; 3]> = (0..3)
            .map(|_| [free_port(), free_port(), free_port()])
            .collect();
        let peers: String = ports
            .iter()
            .enumerate()
            .map(|(i, [_, q, e])| format!("server.{}=127.0.0.1:{q}:{e}\n", i + 1))
            .collect();
        let mut servers = Vec::new();
        for (i, [client, _, _]) in ports.iter().enumerate() {
            let home = dir.path().join(format!("s{}", i + 1));
            let data = home.join("data");
            std::fs::create_dir_all(&data).expect("create a data directory");
            std::fs::write(data.join("myid"), format!("{}\n", i + 1)).expect("write myid");
            let config = format!(
                "{}initLimit=10\nsyncLimit=5\n{peers}",
                base_config(&data, *client)
            );
            servers.push(Some(
                Process::spawn(&home, &config, *client).expect("spawn java for ZooKeeper"),
            ));
        }
        let ensemble = ZkEnsemble {
            servers,
            client_ports: ports.iter().map(|p| p[0]).collect(),
            _dir: dir,
        };
        let deadline = Instant::now() + Duration::from_secs(60);
        while Instant::now() < deadline {
            let states: Vec<Option<String>> = ensemble.states();
            if states
                .iter()
                .all(|s| matches!(s.as_deref(), Some("leader" | "follower")))
            {
                return ensemble;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        let logs: Vec<String> = ensemble
            .servers
            .iter()
            .flatten()
            .map(Process::log_tail)
            .collect();
        panic!("the ensemble did not form; logs:\n{}", logs.join("\n---\n"));
    }

    fn states(&self) -> Vec<Option<String>> {
        self.servers
            .iter()
            .map(|p| p.as_ref().and_then(Process::state))
            .collect()
    }

    /// `127.0.0.1:C1,127.0.0.1:C2,127.0.0.1:C3`.
    pub fn connect_string(&self) -> String {
        let addrs: Vec<String> = (0..3).map(|i| self.client_addr(i)).collect();
        addrs.join(",")
    }

    /// The client address of server `i` (0-based).
    pub fn client_addr(&self, i: usize) -> String {
        format!("127.0.0.1:{}", self.client_ports[i])
    }

    /// Sends a four-letter word to server `i`.
    pub fn four_letter(&self, i: usize, cmd: &str) -> std::io::Result<String> {
        four_letter(self.client_ports[i], cmd)
    }

    /// The index of the current leader, if one answers.
    pub fn leader(&self) -> Option<usize> {
        self.states()
            .iter()
            .position(|s| s.as_deref() == Some("leader"))
    }

    /// Kills server `i` (by its pid).
    pub fn kill(&mut self, i: usize) {
        if let Some(mut p) = self.servers[i].take() {
            p.kill();
        }
    }
}
