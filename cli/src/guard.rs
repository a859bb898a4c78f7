//! The guard: a small process between `herdless` and the command, which
//! stops the command and everything it started when `herdless` dies.
//!
//! Linux's parent-death signal reaches only a process's own children: with
//! the command started by `herdless` directly, a `herdless` killed with
//! SIGKILL (or by the OOM killer) took the command's own process with it,
//! but a script's children went on working while the session timed out and
//! the next contender took the lock: two holders. The guard is that own
//! child. It is told of `herdless`'s death ([`STOP`] as its parent-death
//! signal) and is the subreaper of the whole tree, so it can stop all of
//! it, as `herdless` does when the lock is lost.
//!
//! It is `herdless` itself, run again (`/proc/self/exe`) with [`ARG`]
//! first: one binary, and the same one even if it was replaced on disk.

use std::ffi::{OsStr, OsString};
use std::process::{Command, ExitCode};
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, SigSet, Signal};
use nix::unistd::Pid;

use crate::exit::{status_code, Exit};
use crate::tree;

/// The first argument that makes `herdless` a guard.
pub const ARG: &str = "__guard";

/// What tells the guard to stop the tree: `herdless`'s death (its
/// parent-death signal), or `herdless` on a lost lock.
pub const STOP: Signal = Signal::SIGUSR1;

/// How long the guard may take past the grace period to SIGKILL what is
/// left and exit, before `herdless` does it itself.
pub const MARGIN: Duration = Duration::from_millis(500);

/// The guard's command line for running `argv` with `grace` between
/// SIGTERM and SIGKILL, below the `herdless` whose pid is `parent`.
pub fn command(argv: &[String], grace: Duration, parent: u32) -> Command {
    use std::os::unix::process::CommandExt;
    let mut command = Command::new("/proc/self/exe");
    command
        .arg0("herdless")
        .arg(ARG)
        .arg(grace.as_millis().to_string())
        .arg(parent.to_string())
        .arg("--")
        .args(argv);
    die_with_parent(&mut command, STOP, parent);
    command
}

/// Whether `herdless` was run as a guard.
pub fn is_guard(first: Option<&OsStr>) -> bool {
    first == Some(OsStr::new(ARG))
}

/// The guard's main: runs the command given after `--`, passes SIGINT and
/// SIGTERM on to it, reaps what it leaves, and exits with its status; or,
/// told to [`STOP`], stops the whole tree and exits with [`Exit::Lost`].
pub fn run(args: &[OsString]) -> ExitCode {
    let Some((grace, parent, argv)) = parse(args) else {
        eprintln!("herdless: {ARG} is for herdless's own use");
        return Exit::Usage.into();
    };
    // Named as what it is in `ps -e` (run as /proc/self/exe, it would be
    // `exe`).
    let _ = nix::sys::prctl::set_name(c"herdless");
    // Blocked before the command is started, so that none of them is lost
    // or acted on by default in between; the command starts with none
    // blocked ([`die_with_parent`] clears the mask).
    let mut caught = SigSet::empty();
    for signal in [Signal::SIGCHLD, STOP, Signal::SIGINT, Signal::SIGTERM] {
        caught.add(signal);
    }
    if caught.thread_block().is_err() {
        eprintln!("herdless: guard: cannot block signals");
        return Exit::Unavailable.into();
    }
    // `herdless` died before the guard could hear of it: nothing to run.
    if nix::unistd::getppid().as_raw() as u32 != parent {
        return Exit::Lost.into();
    }
    tree::adopt_orphans();
    let Some((program, rest)) = argv.split_first() else {
        return Exit::Usage.into();
    };
    let mut command = Command::new(program);
    command.args(rest);
    die_with_parent(&mut command, Signal::SIGKILL, std::process::id());
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(e) => {
            let code = if e.kind() == std::io::ErrorKind::NotFound {
                127
            } else {
                126
            };
            eprintln!("herdless: cannot run {}: {e}", program.to_string_lossy());
            return Exit::CannotRun(code).into();
        }
    };
    loop {
        match caught.wait() {
            Ok(Signal::SIGCHLD) => {
                if let Ok(Some(status)) = child.try_wait() {
                    return Exit::Child(status_code(status)).into();
                }
                tree::reap_ended(Some(child.id()));
            }
            Ok(signal) if signal == STOP => {
                stop(grace);
                return Exit::Lost.into();
            }
            Ok(signal) => {
                let _ = kill(Pid::from_raw(child.id() as i32), signal);
            }
            Err(_) => {}
        }
    }
}

/// `<grace ms> <parent pid> -- <argv...>`.
fn parse(args: &[OsString]) -> Option<(Duration, u32, &[OsString])> {
    let [grace, parent, dashes, argv @ ..] = args else {
        return None;
    };
    let grace = Duration::from_millis(grace.to_str()?.parse().ok()?);
    let parent = parent.to_str()?.parse().ok()?;
    (dashes == "--" && !argv.is_empty()).then_some((grace, parent, argv))
}

/// SIGTERM to every process below the guard, then SIGKILL to those left
/// after `grace`; every one reaped.
fn stop(grace: Duration) {
    tree::signal_all(Signal::SIGTERM);
    let deadline = Instant::now() + grace;
    while !tree::descendants().is_empty() && Instant::now() < deadline {
        tree::reap_ended(None);
        std::thread::sleep(Duration::from_millis(20));
    }
    if !tree::descendants().is_empty() {
        eprintln!("herdless: the command did not stop within {grace:?}: killing it");
        tree::signal_all(Signal::SIGKILL);
        let end = Instant::now() + MARGIN;
        while !tree::descendants().is_empty() && Instant::now() < end {
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    tree::reap_ended(None);
}

/// Has `signal` sent to the process `command` starts when its parent (the
/// process `parent`) dies, and has it not start at all if that parent
/// died before the signal was set up (its parent is then another).
///
/// Linux's parent-death signal is tied to the thread that forks: both
/// `herdless` and the guard spawn from their main thread, which lives as
/// long as the process.
fn die_with_parent(command: &mut Command, signal: Signal, parent: u32) {
    use std::os::unix::process::CommandExt;
    let parent = Pid::from_raw(parent as i32);
    let setup = move || -> std::io::Result<()> {
        // The standard library leaves the signal mask as it was: the
        // guard's blocked signals would stay blocked in the command.
        SigSet::empty().thread_set_mask()?;
        nix::sys::prctl::set_pdeathsig(signal)?;
        if nix::unistd::getppid() != parent {
            return Err(std::io::Error::from(std::io::ErrorKind::BrokenPipe));
        }
        Ok(())
    };
    // SAFETY: the closure runs in the child between fork and exec, where
    // only async-signal-safe calls are allowed: it makes three system
    // calls (pthread_sigmask, prctl, getppid) and allocates nothing (an io::Error from a kind
    // or an errno holds no heap data).
    #[allow(unsafe_code)]
    unsafe {
        command.pre_exec(setup);
    }
}
