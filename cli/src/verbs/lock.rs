//! `herdless lock`: a distributed `flock(1)`. The command runs only while
//! the lock is held and is stopped when it is lost.

use clap::Args;
use herdless_std::{Lock, ReadWriteLock};

use crate::common::{seconds, warn_beside_other_libraries, Common};
use crate::exit::{self, Exit};
use crate::fail::{Fail, Outcome};
use crate::signals::Interrupts;
use crate::supervise::{run_while_held, Policy};
use crate::wait::acquiring;

/// `herdless lock PATH [options] -- CMD [ARGS...]`
#[derive(Args, Debug)]
#[command(after_help = "\
Examples:
  herdless lock /locks/backup -- ./backup.sh
      run backup.sh while holding the lock, waiting for it as long as it takes
  herdless lock -n /locks/backup -- ./backup.sh || echo busy
      give up at once if someone holds it (exit 73)
  herdless lock -w 30 -E 1 /locks/backup -- ./backup.sh
      wait 30 s at most; exit 1 if it did not come
  herdless lock -s /locks/catalog -- ./read-catalog.sh
      share the lock with other readers; writers (no -s) exclude everyone
  herdless lock --mutex /locks/printer -- ./print.sh
      the lock Curator's InterProcessMutex takes on that path
  herdless lock --mutex --flavour kazoo /locks/printer -- ./print.sh
      the same beside Kazoo's Lock, which sees only nodes named its way

Without -s or --mutex the lock is the write side of a shared lock: it waits
for readers and writers alike, and Curator's InterProcessReadWriteLock and
Kazoo's WriteLock/ReadLock share it (--flavour curator or kazoo). Kazoo
counts only the nodes named its way: beside Kazoo, always give --flavour
kazoo, or Kazoo's holders will not wait for herdless's.

-w 0 tries once, as -n does, and exits as -w does (74, or -E's code).

The command gets HERDLESS_LOCK_NODE (its node's path) and HERDLESS_FENCE_TOKEN
(the node's sequence number, larger for every later holder) in its
environment.")]
pub struct LockArgs {
    /// The lock's directory.
    pub path: String,
    /// Shared (read) lock: held together with other shared holders, never
    /// with an exclusive one.
    #[arg(short, long)]
    pub shared: bool,
    /// A plain exclusive lock (`…lock-N` nodes), as Curator's
    /// InterProcessMutex and Kazoo's Lock take (with --flavour kazoo beside
    /// Kazoo): it waits for every node ahead of it, shared (-s) holders
    /// included, as Curator's does.
    #[arg(long, conflicts_with = "shared")]
    pub mutex: bool,
    /// Fail at once (exit 73, or -E's code) if the lock is held.
    #[arg(short = 'n', long = "nonblock", conflicts_with = "wait")]
    pub nonblock: bool,
    /// Wait this long at most (exit 74, or -E's code, when it runs out);
    /// 0 tries once.
    #[arg(short, long, value_name = "SECS")]
    pub wait: Option<f64>,
    /// Exit status when -n finds the lock held or -w runs out.
    #[arg(short = 'E', long = "conflict-exit-code", value_name = "CODE")]
    pub conflict_exit_code: Option<u8>,
    /// Seconds between SIGTERM and SIGKILL when the lock is lost. The stop starts
    /// this much earlier in a lost connection, so that it ends before
    /// the session can expire (half the session timeout in).
    #[arg(long, value_name = "SECS", default_value_t = 2.0)]
    pub grace: f64,
    /// Stop the command as soon as the connection is lost, not only when
    /// the lock is (the lock may still be held; it cannot be known).
    #[arg(long)]
    pub kill_on_suspend: bool,
    /// The command and its arguments.
    #[arg(last = true, required = true, value_name = "CMD")]
    pub command: Vec<String>,
}

/// Runs `herdless lock`.
pub async fn run(common: &Common, args: LockArgs) -> Outcome {
    let grace = seconds(args.grace, "--grace")?;
    let wait = args.wait.map(|w| seconds(w, "--wait")).transpose()?;
    let mut interrupts = Interrupts::catch()?;
    let client = common.connect().await?;
    let flavour = common.flavour.into();
    let lock = if args.mutex {
        Lock::with_flavour(&client, &args.path, flavour)
    } else {
        let locks = ReadWriteLock::with_flavour(&client, &args.path, flavour);
        locks.map(|l| if args.shared { l.read() } else { l.write() }.clone())
    }
    .map_err(|e| Fail::of(&args.path, e))?;
    warn_beside_other_libraries(&client, &args.path, common.flavour, args.mutex).await;

    let attempt = async {
        if args.nonblock {
            lock.try_acquire().await
        } else if let Some(wait) = wait.filter(|w| !w.is_zero()) {
            lock.acquire_timeout(wait).await
        } else if wait.is_some() {
            // As `flock -w 0`: one try. A deadline already past would give
            // up before the server could say the lock is free.
            lock.try_acquire().await
        } else {
            lock.acquire().await.map(Some)
        }
    };
    let guard = match acquiring(&client, &args.path, attempt, &mut interrupts).await? {
        Ok(Some(guard)) => guard,
        Ok(None) => {
            let code = args.conflict_exit_code;
            return Ok(if args.nonblock {
                eprintln!("herdless: {} is held by someone else", args.path);
                Exit::Conflict(code.unwrap_or(exit::CONFLICT))
            } else {
                eprintln!("herdless: {} did not come within the wait", args.path);
                Exit::Timeout(code.unwrap_or(exit::TIMEOUT))
            });
        }
        Err(interrupted) => return Ok(interrupted),
    };
    let policy = Policy::new(grace, args.kill_on_suspend, client.session_timeout());
    run_while_held(guard, &args.command, &common.zk, policy, &mut interrupts).await
}
