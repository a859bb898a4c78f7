//! Running a command only while a lock or leadership is held: started once
//! held, stopped (SIGTERM, then SIGKILL after a grace period) the moment
//! it is lost, warned about while it is in doubt.

use std::process::ExitStatus;
use std::time::Duration;

use herdless_core::naming::recognise;
use herdless_core::path::basename;
use herdless_std::election::LeaderState;
use herdless_std::lock::Holding;
use herdless_std::{Leadership, LockGuard};
use nix::sys::signal::{kill, Signal};
use nix::sys::wait::WaitPidFlag;
use nix::unistd::Pid;
use tokio::process::{Child, Command};

use crate::exit::Exit;
use crate::fail::{Fail, Outcome};
use crate::signals::Interrupts;

/// Where something held stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Standing {
    /// Held, connection up.
    Held,
    /// Held when the connection dropped: in doubt.
    Suspended,
    /// Gone.
    Lost,
}

/// A lock guard or a leadership, as the supervisor watches it.
pub trait Held {
    /// What it is, for messages ("lock", "leadership").
    const WHAT: &'static str;
    /// The environment variable that gives the command its node's path.
    const NODE_VAR: &'static str;
    /// Its node's path.
    fn node_path(&self) -> &str;
    /// Releases or resigns, waiting until the node is gone.
    async fn give_up(self) -> Result<(), herdless_std::Error>;
    /// Where it stands now.
    fn standing(&self) -> Standing;
    /// Resolves once it is lost.
    async fn lost(&self);
    /// Resolves once it is in doubt or lost.
    async fn suspended(&self);
}

impl Held for LockGuard {
    const WHAT: &'static str = "lock";
    const NODE_VAR: &'static str = "HERDLESS_LOCK_NODE";
    fn node_path(&self) -> &str {
        LockGuard::node_path(self)
    }
    async fn give_up(self) -> Result<(), herdless_std::Error> {
        self.release().await
    }
    fn standing(&self) -> Standing {
        match self.holding() {
            Holding::Held => Standing::Held,
            Holding::Suspended => Standing::Suspended,
            Holding::Lost | Holding::Released => Standing::Lost,
        }
    }
    async fn lost(&self) {
        LockGuard::lost(self).await
    }
    async fn suspended(&self) {
        LockGuard::suspended(self).await
    }
}

impl Held for Leadership {
    const WHAT: &'static str = "leadership";
    const NODE_VAR: &'static str = "HERDLESS_LEADER_NODE";
    fn node_path(&self) -> &str {
        Leadership::node_path(self)
    }
    async fn give_up(self) -> Result<(), herdless_std::Error> {
        self.resign().await
    }
    fn standing(&self) -> Standing {
        match self.state() {
            LeaderState::Leading => Standing::Held,
            LeaderState::Suspended => Standing::Suspended,
            LeaderState::Lost | LeaderState::Resigned => Standing::Lost,
        }
    }
    async fn lost(&self) {
        Leadership::lost(self).await
    }
    async fn suspended(&self) {
        Leadership::suspended(self).await
    }
}

/// How to treat the command.
#[derive(Clone, Copy, Debug)]
pub struct Policy {
    /// Between SIGTERM and SIGKILL when the lock is lost.
    pub grace: Duration,
    /// Treat a suspension (connection lost) as a loss.
    pub kill_on_suspend: bool,
}

/// How long a lost lock or leadership is given to clean up after itself.
const LOST_CLEANUP: Duration = Duration::from_secs(2);

/// Runs `argv` while `held` is held: with its node's path
/// ([`Held::NODE_VAR`]), the node's sequence as `HERDLESS_FENCE_TOKEN` and
/// `HERDLESS_ZK` in its environment, stopped if `held` is lost, and
/// `held` given up once the command has ended.
pub async fn run_while_held<H: Held>(
    held: H,
    argv: &[String],
    zk: &str,
    policy: Policy,
    interrupts: &mut Interrupts,
) -> Outcome {
    let node = held.node_path().to_owned();
    let mut env = vec![(H::NODE_VAR, node.clone()), ("HERDLESS_ZK", zk.to_owned())];
    if let Some(r) = recognise(basename(&node)) {
        env.push(("HERDLESS_FENCE_TOKEN", r.sequence.value().to_string()));
    }
    adopt_orphans();
    let child = match spawn(argv, &env) {
        Ok(child) => child,
        Err(fail) => {
            let _ = held.give_up().await;
            return Err(fail);
        }
    };
    let ended = supervise(&held, child, policy, interrupts).await;
    if ended == Exit::Lost {
        // What is left of it on a session still live (a leader's
        // acknowledgement, after an operator deleted its node) goes now,
        // rather than at the session's expiry, where it would name a
        // leader that is gone. Nothing to report: it is lost either way.
        let _ = tokio::time::timeout(LOST_CLEANUP, held.give_up()).await;
    } else if let Err(e) = held.give_up().await {
        eprintln!("herdless: giving up the {} at {node}: {e}", H::WHAT);
    }
    Ok(ended)
}

/// Starts `argv` with `env` added to its environment.
fn spawn(argv: &[String], env: &[(&str, String)]) -> Result<Child, Fail> {
    let Some((program, args)) = argv.split_first() else {
        return Err(Fail::new(Exit::Usage, "no command given (after --)"));
    };
    let mut command = Command::new(program);
    command
        .args(args)
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())));
    die_with_parent(&mut command);
    command.spawn().map_err(|e| {
        let code = if e.kind() == std::io::ErrorKind::NotFound {
            127
        } else {
            126
        };
        Fail::new(Exit::CannotRun(code), format!("cannot run {program}: {e}"))
    })
}

/// Has the command killed (SIGKILL) when `herdless` dies.
///
/// Otherwise a `herdless` killed with SIGKILL (or by the OOM killer) would
/// leave its command running while its session times out and the next
/// contender takes the lock: two holders. Linux's parent-death signal is
/// tied to the thread that forks; the command is spawned from the thread
/// that runs `block_on`, the main thread, which lives as long as the
/// process. If `herdless` died before the child set it up, the child's
/// parent is no longer `herdless` and it does not start the command.
fn die_with_parent(command: &mut Command) {
    let parent = nix::unistd::getpid();
    let setup = move || -> std::io::Result<()> {
        nix::sys::prctl::set_pdeathsig(Signal::SIGKILL)?;
        if nix::unistd::getppid() != parent {
            return Err(std::io::Error::from(std::io::ErrorKind::BrokenPipe));
        }
        Ok(())
    };
    // SAFETY: the closure runs in the child between fork and exec, where
    // only async-signal-safe calls are allowed: it makes two system calls
    // (prctl, getppid) and allocates nothing (an io::Error from a kind
    // or an errno holds no heap data).
    #[allow(unsafe_code)]
    unsafe {
        command.pre_exec(setup);
    }
}

/// Runs until the command ends or `held` is lost: the command's status
/// (`Exit::Child`), or `Exit::Lost` once the command was stopped. SIGINT
/// and SIGTERM are passed on to the command, whose end then decides.
async fn supervise<H: Held>(
    held: &H,
    mut child: Child,
    policy: Policy,
    interrupts: &mut Interrupts,
) -> Exit {
    let mut in_doubt = false;
    loop {
        tokio::select! {
            status = child.wait() => {
                return match status {
                    Ok(status) => Exit::Child(status_code(status)),
                    Err(_) => Exit::Child(1),
                };
            }
            _ = held.lost() => {
                eprintln!("herdless: {} lost: stopping the command", H::WHAT);
                stop(&mut child, policy.grace).await;
                return Exit::Lost;
            }
            _ = held.suspended(), if !in_doubt => {
                if held.standing() == Standing::Suspended {
                    if policy.kill_on_suspend {
                        eprintln!("herdless: connection lost, {} in doubt: stopping the command (--kill-on-suspend)", H::WHAT);
                        stop(&mut child, policy.grace).await;
                        return Exit::Lost;
                    }
                    eprintln!("herdless: warning: connection to ZooKeeper lost; the {} is in doubt until it is back", H::WHAT);
                    in_doubt = true;
                }
            }
            _ = tokio::time::sleep(Duration::from_millis(100)), if in_doubt => {
                if held.standing() == Standing::Held {
                    eprintln!("herdless: connection back; the {} is still held", H::WHAT);
                    in_doubt = false;
                }
            }
            _ = tokio::time::sleep(REAP_EVERY) => reap_orphans(&child),
            signal = interrupts.recv() => {
                if let (Some(pid), Ok(signal)) = (child.id(), Signal::try_from(signal)) {
                    let _ = kill(pid_of(pid), signal);
                }
            }
        }
    }
}

/// SIGTERM, then SIGKILL if the command has not ended after `grace`: the
/// command and every process it started, however deep, which would
/// otherwise go on working without the lock (a script's own children).
async fn stop(child: &mut Child, grace: Duration) {
    signal_all(child, Signal::SIGTERM);
    let deadline = tokio::time::Instant::now() + grace;
    let _ = tokio::time::timeout_at(deadline, child.wait()).await;
    while !descendants().is_empty() && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    if child.try_wait().ok().flatten().is_none() || !descendants().is_empty() {
        eprintln!("herdless: the command did not stop within {grace:?}: killing it");
        signal_all(child, Signal::SIGKILL);
        let _ = child.kill().await;
    }
}

/// Sends `signal` to the command and to every live process under
/// `herdless` (see [`descendants`]).
fn signal_all(child: &Child, signal: Signal) {
    if let Some(pid) = child.id() {
        let _ = kill(pid_of(pid), signal);
    }
    for pid in descendants() {
        let _ = kill(Pid::from_raw(pid), signal);
    }
}

/// Every live process below this one: the command's children and theirs,
/// and those whose parent died before them, which come back to `herdless`
/// as it is their subreaper ([`adopt_orphans`]). Zombies are left out.
fn descendants() -> Vec<i32> {
    let stats: Vec<_> = processes()
        .filter(|stat| stat.state != 'Z' && stat.state != 'X')
        .collect();
    let mut found = vec![std::process::id() as i32];
    let mut at = 0;
    while at < found.len() {
        let parent = found[at];
        found.extend(stats.iter().filter(|s| s.ppid == parent).map(|s| s.pid));
        at += 1;
    }
    found.remove(0);
    found
}

/// The status line of every process on the machine that can be read now
/// (one may end while it is listed).
fn processes() -> impl Iterator<Item = procfs::process::Stat> {
    procfs::process::all_processes()
        .into_iter()
        .flatten()
        .filter_map(|p| p.ok()?.stat().ok())
}

/// How often orphans that ended are reaped while the command runs.
const REAP_EVERY: Duration = Duration::from_secs(1);

/// Reaps the processes re-parented to `herdless` ([`adopt_orphans`]) that
/// have ended, so that a long-running command that leaves orphans behind
/// (a daemon's double fork) does not fill the process table with zombies.
/// The command's own process is tokio's to reap.
fn reap_orphans(child: &Child) {
    let me = std::process::id() as i32;
    let command = child.id().map(|id| id as i32);
    for stat in processes() {
        if stat.ppid == me && stat.state == 'Z' && Some(stat.pid) != command {
            let _ = nix::sys::wait::waitpid(Pid::from_raw(stat.pid), Some(WaitPidFlag::WNOHANG));
        }
    }
}

/// Makes `herdless` the subreaper of what the command starts: a process
/// whose parent has died is re-parented to `herdless` rather than to init,
/// so [`stop`] still finds it.
fn adopt_orphans() {
    let _ = nix::sys::prctl::set_child_subreaper(true);
}

fn pid_of(id: u32) -> Pid {
    Pid::from_raw(i32::try_from(id).unwrap_or(i32::MAX))
}

/// A shell's view of a status: the exit code, or 128 + the signal.
fn status_code(status: ExitStatus) -> u8 {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => u8::try_from(code & 0xff).unwrap_or(1),
        (None, Some(signal)) => u8::try_from(128 + signal).unwrap_or(255),
        (None, None) => 1,
    }
}
