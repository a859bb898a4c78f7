//! The processes below `herdless`: what a command started, however deep,
//! and the orphans it left, which come back to their nearest subreaper
//! (the guard, or `herdless` itself) rather than to init.

use nix::sys::signal::{kill, Signal};
use nix::sys::wait::{waitpid, WaitPidFlag};
use nix::unistd::Pid;

/// Makes this process the subreaper of what it starts: a process whose
/// parent has died is re-parented here rather than to init, so
/// [`descendants`] still finds it.
pub fn adopt_orphans() {
    let _ = nix::sys::prctl::set_child_subreaper(true);
}

/// Every live process below this one. Zombies are left out.
pub fn descendants() -> Vec<i32> {
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

/// Sends `signal` to every live process below this one.
pub fn signal_all(signal: Signal) {
    for pid in descendants() {
        let _ = kill(Pid::from_raw(pid), signal);
    }
}

/// Reaps this process's children that have ended, except `keep` (whose
/// status is waited for through its handle), so that orphans left by a
/// long-running command (a daemon's double fork) do not fill the process
/// table with zombies.
pub fn reap_ended(keep: Option<u32>) {
    let me = std::process::id() as i32;
    let keep = keep.map(|pid| pid as i32);
    for stat in processes() {
        if stat.ppid == me && stat.state == 'Z' && Some(stat.pid) != keep {
            let _ = waitpid(Pid::from_raw(stat.pid), Some(WaitPidFlag::WNOHANG));
        }
    }
}

/// The status line of every process on the machine that can be read now
/// (one may end while it is listed).
fn processes() -> impl Iterator<Item = procfs::process::Stat> {
    procfs::process::all_processes()
        .into_iter()
        .flatten()
        .filter_map(|p| p.ok()?.stat().ok())
}
