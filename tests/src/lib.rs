//! Real ZooKeeper servers for herdless's integration tests.
//!
//! [`ZkServer::start`] runs a standalone ZooKeeper 3.8 (the Debian package's
//! jar) on a free loopback port, with its own data directory, and stops it
//! when dropped, even when the test panics. [`ZkEnsemble::start`] does the
//! same for a three-server ensemble. Tests run in parallel, so nothing is
//! fixed: ports are picked free (and retried on a collision), each server has
//! its own temporary directory, the AdminServer is off and everything listens
//! on 127.0.0.1 only.
//!
//! The API is blocking `std` code, usable from any test, async or not.
//!
//! Each server is also watched by a tiny `sh` process that kills it should
//! the test process die without unwinding (SIGKILL, a harness timeout), so
//! no JVM outlives its test.
//!
//! Install the server with the README's test command (`./scripts/test.sh`).

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use tempfile::TempDir;

pub mod chaos;
pub mod journal;
pub mod netns;
pub mod peers;
mod proxy;
mod rival;
pub mod tokio_transport;
pub use netns::Netns;
pub use proxy::Proxy;
pub use rival::rival_acquires;

/// The class path of a Curator 5.4 program, from Debian's
/// `libcurator-recipes-java` and its dependencies.
pub const CURATOR_CLASSPATH: [&str; 8] = [
    "/usr/share/java/curator-client.jar",
    "/usr/share/java/curator-framework.jar",
    "/usr/share/java/curator-recipes.jar",
    "/usr/share/java/zookeeper.jar",
    "/usr/share/java/zookeeper-jute.jar",
    "/usr/share/java/guava.jar",
    "/usr/share/java/slf4j-api.jar",
    "/usr/share/java/slf4j-nop.jar",
];

/// The server jar of Debian's `zookeeper` package.
pub const ZOOKEEPER_JAR: &str = "/usr/share/java/zookeeper.jar";

/// The logging binding put on the class path when present, so that the
/// server's log (`server.log` in its directory) says why it failed.
const SLF4J_SIMPLE_JAR: &str = "/usr/share/java/slf4j-simple.jar";

/// Netty jars of Debian's packages that the Netty connection factory needs
/// beyond those the server's manifest names.
const NETTY_TLS_JARS: [&str; 3] = [
    "/usr/share/java/netty-codec.jar",
    "/usr/share/java/netty-resolver.jar",
    "/usr/share/java/netty-transport-native-unix-common.jar",
];

/// Configuration directories of the Debian package (log configuration).
const CONF_DIRS: [&str; 2] = ["/etc/zookeeper/conf_example", "/etc/zookeeper/conf"];

/// How long [`ZkServer::start`] tries, over all its attempts.
const SERVER_START_TIMEOUT: Duration = Duration::from_secs(30);

/// How long [`ZkEnsemble::start`] tries, over all its attempts.
const ENSEMBLE_START_TIMEOUT: Duration = Duration::from_secs(60);

/// Attempts (fresh ports each) before giving up on a start.
const START_ATTEMPTS: usize = 5;

/// Whether a ZooKeeper server can be started here: the jar exists and `java`
/// runs. Checked once per test process.
pub fn zookeeper_available() -> bool {
    static AVAILABLE: OnceLock<bool> = OnceLock::new();
    *AVAILABLE.get_or_init(|| check_installed(Path::new(ZOOKEEPER_JAR)).is_ok())
}

/// `Ok` if `jar` exists and `java` runs, else the message to panic with.
fn check_installed(jar: &Path) -> Result<(), String> {
    let java_runs = || {
        Command::new("java")
            .arg("-version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    if jar.exists() && java_runs() {
        Ok(())
    } else {
        Err(format!(
            "ZooKeeper is not installed ({} or a working `java` is missing): \
             run the README's test command, ./scripts/test.sh, which installs it",
            jar.display()
        ))
    }
}

fn require_zookeeper() {
    if !zookeeper_available() {
        if let Err(message) = check_installed(Path::new(ZOOKEEPER_JAR)) {
            panic!("{message}");
        }
    }
}

/// `n` distinct free loopback ports. All are held until all are picked, so
/// they differ; they are released on return for the server to bind.
fn free_ports(n: usize) -> Vec<u16> {
    let listeners: Vec<TcpListener> = (0..n)
        .map(|_| {
            TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("bind an ephemeral loopback port")
        })
        .collect();
    listeners
        .iter()
        .map(|l| l.local_addr().expect("local address").port())
        .collect()
}

/// Sends a four-letter word (`ruok`, `mntr`, `conf`, `cons`, `wchc`, ...) to
/// `127.0.0.1:port` and reads the answer to the end.
pub fn four_letter(port: u16, cmd: &str) -> std::io::Result<String> {
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(2))?;
    stream.set_read_timeout(Some(Duration::from_secs(5)))?;
    stream.set_write_timeout(Some(Duration::from_secs(5)))?;
    stream.write_all(cmd.as_bytes())?;
    let mut out = String::new();
    stream.read_to_string(&mut out)?;
    Ok(out)
}

/// Parses a `mntr` answer (`zk_key\tvalue` lines).
fn parse_mntr(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .filter_map(|l| l.split_once('\t'))
        .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
        .collect()
}

/// The last `n` lines of a file, or a note that it cannot be read.
fn tail(path: &Path, n: usize) -> String {
    match std::fs::read_to_string(path) {
        Ok(text) => {
            let lines: Vec<&str> = text.lines().collect();
            lines[lines.len().saturating_sub(n)..].join("\n")
        }
        Err(e) => format!("(cannot read {}: {e})", path.display()),
    }
}

/// The JVM's class path: the package's configuration directory, the server
/// jar (its manifest pulls the other jars) and a logging binding.
fn class_path() -> String {
    let mut parts: Vec<&str> = Vec::new();
    if let Some(conf) = CONF_DIRS.iter().find(|d| {
        let d = Path::new(d);
        d.join("log4j.properties").exists() || d.join("logback.xml").exists()
    }) {
        parts.push(conf);
    }
    parts.push(ZOOKEEPER_JAR);
    if Path::new(SLF4J_SIMPLE_JAR).exists() {
        parts.push(SLF4J_SIMPLE_JAR);
    }
    // The Netty connection factory (TLS) needs jars the server's manifest
    // does not name; loaded only by a server that uses it.
    for jar in NETTY_TLS_JARS {
        if Path::new(jar).exists() {
            parts.push(jar);
        }
    }
    parts.join(":")
}

/// The settings shared by standalone and ensemble servers.
/// Refuses (panics) to have a server listen on `listen` unless it is
/// loopback or the test runs inside a network namespace it created, where
/// nothing it serves reaches a real network.
fn assert_listen_allowed(listen: Ipv4Addr) {
    assert!(
        listen.is_loopback() || std::env::var_os(netns::INSIDE_ENV).is_some(),
        "a ZooKeeper for tests listens on {listen} only inside a test's own network namespace"
    );
}

fn config_listening_on(data: &Path, client_port: u16, listen: Ipv4Addr) -> String {
    format!(
        "tickTime=500\n\
         minSessionTimeout=1000\n\
         maxSessionTimeout=60000\n\
         dataDir={}\n\
         clientPort={client_port}\n\
         clientPortAddress={listen}\n\
         admin.enableServer=false\n\
         4lw.commands.whitelist=*\n\
         forceSync=no\n",
        data.display()
    )
}

/// A temporary directory, canonicalized so that the path in the server's
/// configuration is the one its `conf` word reports.
fn temp_dir(prefix: &str) -> (TempDir, PathBuf) {
    let dir = tempfile::Builder::new()
        .prefix(prefix)
        .tempdir()
        .expect("create a temporary directory");
    let path = std::fs::canonicalize(dir.path()).expect("canonicalize the temporary directory");
    (dir, path)
}

/// One ZooKeeper server process, killed (by its pid) when dropped.
struct Process {
    child: Child,
    /// `sh` that kills the server when its stdin (our pipe) closes, i.e.
    /// when this test process dies without running destructors.
    watchdog: Option<Child>,
    home: PathBuf,
    data: PathBuf,
    client_port: u16,
}

impl Process {
    /// Writes `home/zoo.cfg` and starts the server, its output going to
    /// `home/server.log`.
    fn spawn(home: &Path, data: &Path, config: &str, client_port: u16) -> Process {
        let cfg = home.join("zoo.cfg");
        std::fs::write(&cfg, config).expect("write zoo.cfg");
        // Appended to, so a restarted server's log follows its first life's.
        let log = std::fs::File::options()
            .create(true)
            .append(true)
            .open(home.join("server.log"))
            .expect("open server.log");
        let child = Command::new("java")
            .arg("-Xmx256m")
            .arg("-XX:+UseSerialGC")
            .arg("-XX:TieredStopAtLevel=1")
            .arg("-Djava.net.preferIPv4Stack=true")
            .arg(format!("-Dzookeeper.log.dir={}", home.display()))
            .arg("-Dorg.slf4j.simpleLogger.showDateTime=true")
            .arg("-Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS")
            .arg("-cp")
            .arg(class_path())
            .arg("org.apache.zookeeper.server.quorum.QuorumPeerMain")
            .arg(&cfg)
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("clone the log file handle"))
            .stderr(log)
            .spawn()
            .expect("spawn java for ZooKeeper");
        // The server is our unreaped child until `kill` waits for it, so its
        // pid cannot be reused while the watchdog may still use it; `kill`
        // stops the watchdog first.
        let watchdog = Command::new("sh")
            .arg("-c")
            .arg(r#"read -r _; kill -9 "$1" 2>/dev/null"#)
            .arg("herdless-zk-watchdog")
            .arg(child.id().to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .ok();
        Process {
            child,
            watchdog,
            home: home.to_owned(),
            data: data.to_owned(),
            client_port,
        }
    }

    fn exited(&mut self) -> bool {
        !matches!(self.child.try_wait(), Ok(None))
    }

    /// `zk_server_state` from `mntr`, once the server serves.
    fn state(&self) -> Option<String> {
        let text = four_letter(self.client_port, "mntr").ok()?;
        parse_mntr(&text).remove("zk_server_state")
    }

    /// Whether the server answering on the client port is this one (and
    /// not another test's server that took the port first).
    fn answers_as_itself(&self) -> bool {
        four_letter(self.client_port, "conf")
            .is_ok_and(|conf| conf.contains(&format!("dataDir={}", self.data.display())))
    }

    fn log_tail(&self) -> String {
        tail(&self.home.join("server.log"), 40)
    }

    /// SIGKILL and reap; idempotent.
    fn kill(&mut self) {
        if let Some(mut watchdog) = self.watchdog.take() {
            let _ = watchdog.kill();
            let _ = watchdog.wait();
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A standalone ZooKeeper server on a free loopback port.
///
/// Dropping it kills the server and removes its directory.
pub struct ZkServer {
    process: Option<Process>,
    port: u16,
    home: PathBuf,
    /// For a server started with [`ZkServer::start_tls`]: its secure client
    /// port, and the certificates its key store was made from.
    tls: Option<(u16, TlsFiles)>,
    // Dropped after the process (fields drop in order): the directory goes
    // once the server is dead.
    _dir: TempDir,
}

impl ZkServer {
    /// Starts a server and waits until it serves (`mntr` reports its state).
    ///
    /// Retries on fresh ports when the server exits early (a port taken in
    /// between). Panics, with the tail of the server's log, if it does not
    /// serve within about 30 s, and with the command to run if ZooKeeper is
    /// not installed.
    pub fn start() -> ZkServer {
        ZkServer::start_listening_on(Ipv4Addr::LOCALHOST)
    }

    /// Starts a server listening on `listen` instead of loopback, as
    /// [`ZkServer::start`] does otherwise.
    ///
    /// Only for tests running inside a [`Netns`] they created (where
    /// `0.0.0.0` makes it reachable on the bridge and on loopback): anywhere else a
    /// non-loopback address would expose the server to a real network.
    /// Panics when asked for a non-loopback address outside a namespace.
    pub fn start_listening_on(listen: Ipv4Addr) -> ZkServer {
        ZkServer::start_with(listen, None, "")
    }

    /// Starts a server with `extra` appended to its `zoo.cfg`, as
    /// [`ZkServer::start`] does otherwise.
    ///
    /// A line ZooKeeper does not know becomes the system property
    /// `zookeeper.<key>`: `authProvider.1=<class>` registers an
    /// authentication provider, say.
    pub fn start_configured(extra: &str) -> ZkServer {
        ZkServer::start_with(Ipv4Addr::LOCALHOST, None, extra)
    }

    /// Starts a server that also serves TLS on a second port
    /// ([`ZkServer::secure_addr`]), as [`ZkServer::start`] does otherwise.
    ///
    /// Its key store is made now with `keytool` (from the JDK of the
    /// `zookeeper` package): a CA, and a server certificate it signs for
    /// `127.0.0.1` and `localhost`. The CA's certificate
    /// ([`ZkServer::ca_pem`]) is what a client trusts. The server uses the
    /// Netty connection factory (the only one that speaks TLS) for both
    /// ports, and asks clients for no certificate (`ssl.clientAuth=none`).
    pub fn start_tls() -> ZkServer {
        require_zookeeper();
        let (dir, path) = temp_dir("herdless-tls-");
        let files = TlsFiles::generate(dir, path);
        ZkServer::start_with(Ipv4Addr::LOCALHOST, Some(files), "")
    }

    fn start_with(listen: Ipv4Addr, tls: Option<TlsFiles>, extra: &str) -> ZkServer {
        assert_listen_allowed(listen);
        require_zookeeper();
        let deadline = Instant::now() + SERVER_START_TIMEOUT;
        let mut failures = Vec::new();
        for attempt in 1..=START_ATTEMPTS {
            let (dir, home) = temp_dir("herdless-zk-");
            let data = home.join("data");
            std::fs::create_dir_all(&data).expect("create the data directory");
            let ports = free_ports(if tls.is_some() { 2 } else { 1 });
            let port = ports[0];
            let mut config = config_listening_on(&data, port, listen);
            if let Some(files) = &tls {
                config.push_str(&files.server_config(ports[1], listen));
            }
            config.push_str(extra);
            let mut process = Process::spawn(&home, &data, &config, port);
            while Instant::now() < deadline && !process.exited() {
                if process.state().is_some() && process.answers_as_itself() {
                    return ZkServer {
                        process: Some(process),
                        port,
                        home,
                        tls: tls.map(|files| (ports[1], files)),
                        _dir: dir,
                    };
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            let exited = process.exited();
            failures.push(format!(
                "attempt {attempt} on port {port}: {}; server log tail:\n{}",
                if exited {
                    "the server exited"
                } else {
                    "not serving in time"
                },
                process.log_tail()
            ));
            process.kill();
            if !exited || Instant::now() >= deadline {
                break;
            }
        }
        panic!(
            "ZooKeeper did not start within {SERVER_START_TIMEOUT:?}:\n{}",
            failures.join("\n---\n")
        );
    }

    /// `127.0.0.1:PORT`, the connect string.
    pub fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// The client port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `127.0.0.1:PORT` of the TLS port of a server started with
    /// [`ZkServer::start_tls`] (`None` otherwise).
    pub fn secure_addr(&self) -> Option<String> {
        self.tls
            .as_ref()
            .map(|(port, _)| format!("127.0.0.1:{port}"))
    }

    /// The PEM certificate of the CA that signed the TLS port's certificate
    /// (`None` for a server without TLS).
    pub fn ca_pem(&self) -> Option<String> {
        self.tls.as_ref().map(|(_, files)| files.ca_pem.clone())
    }

    /// The server's directory: `zoo.cfg`, `data/` and `server.log`. Removed
    /// when the server is dropped.
    pub fn dir(&self) -> &Path {
        &self.home
    }

    /// The server's log so far (useful in a failing test's message).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.home.join("server.log")).unwrap_or_default()
    }

    /// Whether the server process is still running (not stopped, not
    /// crashed).
    pub fn is_running(&mut self) -> bool {
        self.process.as_mut().is_some_and(|p| !p.exited())
    }

    /// Sends a four-letter word (`ruok`, `mntr`, `cons`, `wchc`, ...).
    pub fn four_letter(&self, cmd: &str) -> std::io::Result<String> {
        four_letter(self.port, cmd)
    }

    /// The `mntr` report as key/value pairs. Panics if the server does not
    /// answer.
    pub fn mntr(&self) -> BTreeMap<String, String> {
        let text = self
            .four_letter("mntr")
            .unwrap_or_else(|e| panic!("mntr on {}: {e}", self.addr()));
        parse_mntr(&text)
    }

    /// One numeric `mntr` value (`None` if absent or not an integer).
    pub fn mntr_value(&self, key: &str) -> Option<i64> {
        self.mntr().get(key).and_then(|v| v.parse().ok())
    }

    fn counter(&self, key: &str) -> i64 {
        self.mntr_value(key)
            .unwrap_or_else(|| panic!("mntr on {} has no {key}", self.addr()))
    }

    /// `zk_packets_received`: packets received by the server. The `mntr`
    /// connection asking counts one itself.
    pub fn packets_received(&self) -> i64 {
        self.counter("zk_packets_received")
    }

    /// `zk_packets_sent`: packets sent by the server (replies and watch
    /// notifications).
    pub fn packets_sent(&self) -> i64 {
        self.counter("zk_packets_sent")
    }

    /// Watch notifications the server has sent: the sums of its four
    /// `zk_sum_node_*_watch_count` counters (watchers triggered by a
    /// create, delete, data change and children change).
    pub fn notifications_sent(&self) -> i64 {
        let mntr = self.mntr();
        ["created", "deleted", "changed", "children"]
            .iter()
            .map(|kind| {
                let key = format!("zk_sum_node_{kind}_watch_count");
                mntr.get(&key)
                    .and_then(|v| v.parse::<i64>().ok())
                    .unwrap_or_else(|| panic!("mntr on {} has no {key}", self.addr()))
            })
            .sum()
    }

    /// `zk_watch_count`: registered watches.
    pub fn watch_count(&self) -> i64 {
        self.counter("zk_watch_count")
    }

    /// `zk_ephemerals_count`: ephemeral nodes.
    pub fn ephemerals_count(&self) -> i64 {
        self.counter("zk_ephemerals_count")
    }

    /// `zk_znode_count`: all nodes, including `/`, `/zookeeper` and its
    /// children.
    pub fn znode_count(&self) -> i64 {
        self.counter("zk_znode_count")
    }

    /// Kills the server (SIGKILL by its pid) and reaps it; idempotent. The
    /// directory stays until the value is dropped.
    pub fn stop(&mut self) {
        if let Some(mut process) = self.process.take() {
            process.kill();
        }
    }
}

impl Drop for ZkServer {
    fn drop(&mut self) {
        self.stop();
    }
}

impl std::fmt::Debug for ZkServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ZkServer")
            .field("addr", &self.addr())
            .field("dir", &self.home)
            .finish()
    }
}

/// The key store of a TLS server, made with `keytool` in a directory of its
/// own, removed when the server is dropped.
struct TlsFiles {
    keystore: PathBuf,
    ca_pem: String,
    _dir: TempDir,
}

/// The key stores' password (the files live in a private temporary
/// directory for the length of one test).
const STORE_PASSWORD: &str = "herdless-test";

impl TlsFiles {
    /// A CA (`ca.p12`, exported as `ca.pem`) and a server key pair
    /// (`server.p12`) whose certificate the CA signs for 127.0.0.1 and
    /// localhost, stored with the CA's certificate as its chain.
    fn generate(dir: TempDir, path: PathBuf) -> TlsFiles {
        let ca = path.join("ca.p12");
        let keystore = path.join("server.p12");
        let file = |name: &str| path.join(name).display().to_string();
        let store = |p: &Path| p.display().to_string();
        let common = ["-storetype", "PKCS12", "-storepass", STORE_PASSWORD];
        keytool(&[
            &[
                "-genkeypair",
                "-alias",
                "ca",
                "-keyalg",
                "EC",
                "-groupname",
                "secp256r1",
            ],
            &[
                "-dname",
                "CN=herdless test CA",
                "-validity",
                "2",
                "-ext",
                "bc:c",
            ],
            &["-keystore", &store(&ca)],
            &common,
        ]);
        keytool(&[
            &[
                "-exportcert",
                "-rfc",
                "-alias",
                "ca",
                "-file",
                &file("ca.pem"),
            ],
            &["-keystore", &store(&ca)],
            &common,
        ]);
        keytool(&[
            &[
                "-genkeypair",
                "-alias",
                "server",
                "-keyalg",
                "EC",
                "-groupname",
                "secp256r1",
            ],
            &["-dname", "CN=localhost", "-validity", "2"],
            &["-keystore", &store(&keystore)],
            &common,
        ]);
        keytool(&[
            &["-certreq", "-alias", "server", "-file", &file("server.csr")],
            &["-keystore", &store(&keystore)],
            &common,
        ]);
        keytool(&[
            &["-gencert", "-alias", "ca", "-rfc", "-validity", "2"],
            &[
                "-infile",
                &file("server.csr"),
                "-outfile",
                &file("server.pem"),
            ],
            &[
                "-ext",
                "SAN=ip:127.0.0.1,dns:localhost",
                "-ext",
                "EKU=serverAuth",
            ],
            &["-keystore", &store(&ca)],
            &common,
        ]);
        keytool(&[
            &[
                "-importcert",
                "-noprompt",
                "-alias",
                "ca",
                "-file",
                &file("ca.pem"),
            ],
            &["-keystore", &store(&keystore)],
            &common,
        ]);
        keytool(&[
            &[
                "-importcert",
                "-alias",
                "server",
                "-file",
                &file("server.pem"),
            ],
            &["-keystore", &store(&keystore)],
            &common,
        ]);
        let ca_pem = std::fs::read_to_string(path.join("ca.pem")).expect("read ca.pem");
        TlsFiles {
            keystore,
            ca_pem,
            _dir: dir,
        }
    }

    /// The lines of `zoo.cfg` that serve TLS on `port`. ZooKeeper passes
    /// unknown keys on as `zookeeper.`-prefixed system properties, which is
    /// where its TLS settings are read from.
    fn server_config(&self, port: u16, listen: Ipv4Addr) -> String {
        format!(
            "secureClientPort={port}\n\
             secureClientPortAddress={listen}\n\
             serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory\n\
             ssl.keyStore.location={}\n\
             ssl.keyStore.password={STORE_PASSWORD}\n\
             ssl.keyStore.type=PKCS12\n\
             ssl.clientAuth=none\n",
            self.keystore.display()
        )
    }
}

/// Runs `keytool` with the argument groups concatenated; panics with its
/// output if it fails.
fn keytool(groups: &[&[&str]]) {
    let args: Vec<&str> = groups.iter().flat_map(|g| g.iter().copied()).collect();
    let out = Command::new("keytool")
        .args(&args)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| {
            panic!("run keytool (it comes with the JDK of the zookeeper package): {e}")
        });
    assert!(
        out.status.success(),
        "keytool {args:?} failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A three-server ensemble on loopback: servers `0`, `1` and `2` (ZooKeeper
/// ids 1, 2 and 3), each with its own data directory and client, quorum and
/// election ports.
///
/// Dropping it kills every server and removes the directories.
pub struct ZkEnsemble {
    servers: Vec<Option<Process>>,
    client_ports: Vec<u16>,
    /// Each server's home, data directory and configuration, to restart it.
    specs: Vec<(PathBuf, PathBuf, String)>,
    // Dropped after the processes.
    _dir: TempDir,
}

/// Servers in an ensemble.
const ENSEMBLE_SIZE: usize = 3;

impl ZkEnsemble {
    /// Starts three servers and waits until all serve (one leader, two
    /// followers).
    ///
    /// Retries on fresh ports when a server exits early. Panics, with the
    /// tails of the servers' logs, if the ensemble does not form within
    /// about 60 s, and with the command to run if ZooKeeper is not
    /// installed.
    pub fn start() -> ZkEnsemble {
        ZkEnsemble::start_listening_on(Ipv4Addr::LOCALHOST)
    }

    /// Starts three servers whose client ports listen on `listen` instead
    /// of loopback, as [`ZkEnsemble::start`] does otherwise; their quorum
    /// ports stay on loopback.
    ///
    /// Only for tests running inside a [`Netns`] they created, as
    /// [`ZkServer::start_listening_on`]. Panics when asked for a
    /// non-loopback address outside a namespace.
    pub fn start_listening_on(listen: Ipv4Addr) -> ZkEnsemble {
        assert_listen_allowed(listen);
        require_zookeeper();
        let deadline = Instant::now() + ENSEMBLE_START_TIMEOUT;
        let mut failures = Vec::new();
        for attempt in 1..=START_ATTEMPTS {
            let mut ensemble = ZkEnsemble::spawn(listen);
            let mut exited = false;
            while Instant::now() < deadline {
                exited = ensemble.servers.iter_mut().flatten().any(Process::exited);
                if exited {
                    break;
                }
                if ensemble.formed() {
                    return ensemble;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            let logs: Vec<String> = ensemble
                .servers
                .iter()
                .flatten()
                .enumerate()
                .map(|(i, p)| format!("server {i} log tail:\n{}", p.log_tail()))
                .collect();
            failures.push(format!(
                "attempt {attempt} (client ports {:?}): {}\n{}",
                ensemble.client_ports,
                if exited {
                    "a server exited"
                } else {
                    "not formed in time"
                },
                logs.join("\n")
            ));
            drop(ensemble);
            if !exited || Instant::now() >= deadline {
                break;
            }
        }
        panic!(
            "the ZooKeeper ensemble did not form within {ENSEMBLE_START_TIMEOUT:?}:\n{}",
            failures.join("\n---\n")
        );
    }

    /// Writes the configurations and starts the three servers, their
    /// client ports on `listen`.
    fn spawn(listen: Ipv4Addr) -> ZkEnsemble {
        let (dir, root) = temp_dir("herdless-ensemble-");
        let ports = free_ports(3 * ENSEMBLE_SIZE);
        let (client_ports, peer_ports) = ports.split_at(ENSEMBLE_SIZE);
        let peers: String = peer_ports
            .chunks(2)
            .enumerate()
            .map(|(i, qe)| format!("server.{}=127.0.0.1:{}:{}\n", i + 1, qe[0], qe[1]))
            .collect();
        let specs: Vec<(PathBuf, PathBuf, String)> = client_ports
            .iter()
            .enumerate()
            .map(|(i, &client)| {
                let home = root.join(format!("server{}", i + 1));
                let data = home.join("data");
                std::fs::create_dir_all(&data).expect("create a data directory");
                std::fs::write(data.join("myid"), format!("{}\n", i + 1)).expect("write myid");
                let config = format!(
                    "{}initLimit=10\nsyncLimit=5\n{peers}",
                    config_listening_on(&data, client, listen)
                );
                (home, data, config)
            })
            .collect();
        let servers = specs
            .iter()
            .zip(client_ports)
            .map(|((home, data, config), &client)| Some(Process::spawn(home, data, config, client)))
            .collect();
        ZkEnsemble {
            servers,
            client_ports: client_ports.to_vec(),
            specs,
            _dir: dir,
        }
    }

    /// All servers serve, one as leader, and each port answers as its own
    /// server.
    fn formed(&self) -> bool {
        let states = self.states();
        states
            .iter()
            .all(|s| matches!(s.as_deref(), Some("leader" | "follower")))
            && states.iter().flatten().filter(|s| *s == "leader").count() == 1
            && self
                .servers
                .iter()
                .flatten()
                .all(Process::answers_as_itself)
    }

    /// Each server's `zk_server_state` (`None` when killed or not serving).
    pub fn states(&self) -> Vec<Option<String>> {
        (0..self.len()).map(|i| self.server_state(i)).collect()
    }

    /// The `zk_server_state` of server `i` (`leader`, `follower`), or `None`
    /// when it is killed or not serving (e.g. during an election).
    pub fn server_state(&self, i: usize) -> Option<String> {
        self.servers[i].as_ref().and_then(Process::state)
    }

    /// The number of servers (3, killed ones included).
    pub fn len(&self) -> usize {
        self.servers.len()
    }

    /// Always `false`: an ensemble has servers.
    pub fn is_empty(&self) -> bool {
        self.servers.is_empty()
    }

    /// `127.0.0.1:C1,127.0.0.1:C2,127.0.0.1:C3`.
    pub fn connect_string(&self) -> String {
        let addrs: Vec<String> = (0..self.len()).map(|i| self.client_addr(i)).collect();
        addrs.join(",")
    }

    /// The client address of server `i` (0-based), `127.0.0.1:PORT`.
    pub fn client_addr(&self, i: usize) -> String {
        format!("127.0.0.1:{}", self.client_ports[i])
    }

    /// The client port of server `i` (0-based).
    pub fn client_port(&self, i: usize) -> u16 {
        self.client_ports[i]
    }

    /// Sends a four-letter word to server `i`.
    pub fn four_letter(&self, i: usize, cmd: &str) -> std::io::Result<String> {
        four_letter(self.client_ports[i], cmd)
    }

    /// The `mntr` report of server `i` (empty if it does not answer).
    pub fn mntr(&self, i: usize) -> BTreeMap<String, String> {
        self.four_letter(i, "mntr")
            .map(|text| parse_mntr(&text))
            .unwrap_or_default()
    }

    /// The index of the server reporting itself `leader`, if one does.
    pub fn leader(&self) -> Option<usize> {
        self.states()
            .iter()
            .position(|s| s.as_deref() == Some("leader"))
    }

    /// Kills server `i` (SIGKILL by its pid) and reaps it; idempotent.
    pub fn kill(&mut self, i: usize) {
        if let Some(mut process) = self.servers[i].take() {
            process.kill();
        }
    }

    /// Starts killed server `i` again on its ports and data, and waits (up
    /// to `timeout`) until it serves as leader or follower. Returns whether
    /// it does; a running server is left alone.
    pub fn restart(&mut self, i: usize, timeout: Duration) -> bool {
        if self.servers[i].is_none() {
            let (home, data, config) = &self.specs[i];
            self.servers[i] = Some(Process::spawn(home, data, config, self.client_ports[i]));
        }
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            if matches!(self.server_state(i).as_deref(), Some("leader" | "follower")) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        false
    }

    /// The server (0-based) that holds a connection of session `session_id`
    /// (from each server's `cons`), if any.
    pub fn server_of_session(&self, session_id: i64) -> Option<usize> {
        let needle = format!("sid=0x{session_id:x}");
        (0..self.len()).find(|&i| {
            self.servers[i].is_some()
                && self
                    .four_letter(i, "cons")
                    .is_ok_and(|cons| cons.contains(&needle))
        })
    }
}

impl Drop for ZkEnsemble {
    fn drop(&mut self) {
        for i in 0..self.len() {
            self.kill(i);
        }
    }
}

impl std::fmt::Debug for ZkEnsemble {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ZkEnsemble")
            .field("connect_string", &self.connect_string())
            .finish()
    }
}

#[cfg(test)]
mod unit {
    use super::*;

    #[test]
    fn missing_install_names_the_test_script() {
        let message = check_installed(Path::new("/nonexistent/zookeeper.jar")).unwrap_err();
        assert!(message.contains("./scripts/test.sh"), "{message}");
    }

    #[test]
    fn mntr_lines_parse() {
        let m = parse_mntr("zk_version\t3.8.0\nzk_server_state\tstandalone\nnoise\n");
        assert_eq!(m["zk_server_state"], "standalone");
        assert_eq!(m.len(), 2);
    }

    #[test]
    fn free_ports_differ() {
        let ports = free_ports(9);
        let mut unique = ports.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), ports.len());
    }

    // The guard runs before anything is installed or started, so these
    // need no ZooKeeper. The test binary never runs inside a namespace of
    // its own here.

    #[test]
    #[should_panic(expected = "only inside a test's own network namespace")]
    fn a_server_refuses_a_non_loopback_address_outside_a_namespace() {
        assert!(std::env::var_os(netns::INSIDE_ENV).is_none());
        let _ = ZkServer::start_listening_on(Ipv4Addr::UNSPECIFIED);
    }

    #[test]
    #[should_panic(expected = "only inside a test's own network namespace")]
    fn an_ensemble_refuses_a_non_loopback_address_outside_a_namespace() {
        assert!(std::env::var_os(netns::INSIDE_ENV).is_none());
        let _ = ZkEnsemble::start_listening_on(Ipv4Addr::UNSPECIFIED);
    }
}
