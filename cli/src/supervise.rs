//! Running a command only while a lock or leadership is held: started once
//! held, stopped (SIGTERM, then SIGKILL after a grace period) the moment
//! it is lost, warned about while it is in doubt.

use std::time::Duration;

use herdless_core::naming::recognise;
use herdless_core::path::basename;
use herdless_std::election::LeaderState;
use herdless_std::lock::Holding;
use herdless_std::{Leadership, LockGuard};
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use tokio::process::{Child, Command};

use crate::exit::{status_code, Exit};
use crate::fail::{Fail, Outcome};
use crate::signals::Interrupts;
use crate::{guard, tree};

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
    /// How long a suspension may last before the command is stopped: the
    /// session may have expired on the server once the stop, grace period
    /// included, would end ([`Policy::new`]).
    pub doubt_limit: Duration,
}

impl Policy {
    /// The policy for a session of `session_timeout` (as the server
    /// granted it).
    pub fn new(grace: Duration, kill_on_suspend: bool, session_timeout: Duration) -> Policy {
        Policy {
            grace,
            kill_on_suspend,
            doubt_limit: herdless_std::presumed_lost_after(session_timeout).saturating_sub(grace),
        }
    }
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
    // Should the guard die before the command, what the command started
    // comes back here to be stopped rather than to init.
    tree::adopt_orphans();
    let child = match spawn(argv, &env, policy.grace) {
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

/// Starts `argv` with `env` added to its environment, below a guard
/// ([`guard`]) that stops it and all it started if
/// `herdless` dies.
fn spawn(argv: &[String], env: &[(&str, String)], grace: Duration) -> Result<Child, Fail> {
    if argv.is_empty() {
        return Err(Fail::new(Exit::Usage, "no command given (after --)"));
    }
    let mut command = Command::from(guard::command(argv, grace, std::process::id()));
    command.envs(env.iter().map(|(k, v)| (*k, v.as_str())));
    command
        .spawn()
        .map_err(|e| Fail::new(Exit::CannotRun(126), format!("cannot start the guard: {e}")))
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
    let mut doubt_ends = tokio::time::Instant::now();
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
                    doubt_ends = tokio::time::Instant::now() + policy.doubt_limit;
                }
            }
            _ = tokio::time::sleep_until(doubt_ends), if in_doubt => {
                if held.standing() == Standing::Held {
                    eprintln!("herdless: connection back; the {} is still held", H::WHAT);
                    in_doubt = false;
                } else {
                    eprintln!(
                        "herdless: connection lost for {:?}: the session may expire before the command could be stopped; stopping it",
                        policy.doubt_limit
                    );
                    stop(&mut child, policy.grace).await;
                    return Exit::Lost;
                }
            }
            _ = tokio::time::sleep(Duration::from_millis(100)), if in_doubt => {
                if held.standing() == Standing::Held {
                    eprintln!("herdless: connection back; the {} is still held", H::WHAT);
                    in_doubt = false;
                }
            }
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
/// The guard does it; what is left once it should have (the guard stopped
/// or killed itself) is killed here.
async fn stop(guard: &mut Child, grace: Duration) {
    if let Some(pid) = guard.id() {
        let _ = kill(pid_of(pid), guard::STOP);
    }
    let deadline = tokio::time::Instant::now() + grace + guard::MARGIN;
    let _ = tokio::time::timeout_at(deadline, guard.wait()).await;
    while !tree::descendants().is_empty() && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    if guard.try_wait().ok().flatten().is_none() || !tree::descendants().is_empty() {
        eprintln!("herdless: the guard did not stop the command: killing it");
        tree::signal_all(Signal::SIGKILL);
        let _ = guard.kill().await;
    }
}

fn pid_of(id: u32) -> Pid {
    Pid::from_raw(i32::try_from(id).unwrap_or(i32::MAX))
}
