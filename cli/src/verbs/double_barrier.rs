//! `herdless barrier enter`: a command run by a set number of processes
//! together (a double barrier): it starts once all have entered, and
//! `herdless` returns once all have finished.

use std::time::Duration;

use clap::Args;
use herdless_std::barrier::DoubleBarrier;
use herdless_std::Client;

use crate::common::{seconds, Common};
use crate::exit::{self, Exit};
use crate::fail::{Fail, Outcome};
use crate::signals::Interrupts;
use crate::supervise::{run_while_held, Held, Policy, Standing};
use crate::wait::{waiting, Waited};

/// Between SIGTERM and SIGKILL for the command if `herdless` dies.
const GRACE: Duration = Duration::from_secs(2);

/// `herdless barrier enter DIR -c N [--name NAME] [-w SECS] -- CMD [ARGS...]`
#[derive(Args, Debug)]
#[command(after_help = "\
Examples:
  herdless barrier enter /barriers/migrate -c 3 -- ./migrate-shard.sh
      on each of three hosts: the three scripts start together, and each
      herdless returns once all three have ended
  herdless barrier enter /barriers/migrate -c 3 -w 60 -- ./migrate-shard.sh
      give up (exit 74) if the three are not in within 60 s

The command gets HERDLESS_BARRIER_NODE (this process's node) in its
environment, and herdless exits with its status once every process has
left. Every process must give the same count; the barrier's processes must
all be herdless's (Curator's and Kazoo's double barriers count differently).
A process whose session ends is no longer counted: the others do not wait
for it to leave.")]
pub struct EnterArgs {
    /// The double barrier's directory.
    pub dir: String,
    /// How many processes enter together.
    #[arg(short, long, value_name = "N")]
    pub count: u32,
    /// This process's name in the barrier, unique among them [default:
    /// HOSTNAME-PID].
    #[arg(long)]
    pub name: Option<String>,
    /// Wait this long at most for the others to enter (exit 74, or -E's
    /// code, when it runs out); nothing of this process is left then.
    #[arg(short, long, value_name = "SECS")]
    pub wait: Option<f64>,
    /// Exit status when -w runs out.
    #[arg(short = 'E', long = "timeout-exit-code", value_name = "CODE")]
    pub timeout_exit_code: Option<u8>,
    /// The command and its arguments.
    #[arg(last = true, required = true, value_name = "CMD")]
    pub command: Vec<String>,
}

/// Runs `herdless barrier enter`.
pub async fn run(common: &Common, args: EnterArgs) -> Outcome {
    let wait = args.wait.map(|w| seconds(w, "--wait")).transpose()?;
    let name = args.name.clone().unwrap_or_else(default_name);
    let mut interrupts = Interrupts::catch()?;
    let client = common.connect().await?;
    let barrier =
        DoubleBarrier::new(&client, &args.dir, &name).map_err(|e| Fail::of(&args.dir, e))?;
    // Both checked by the barrier: the directory a path, the name one
    // segment.
    let node = format!("{}/{name}", args.dir.trim_end_matches('/'));

    let entering = async {
        match wait {
            Some(wait) => barrier.enter_timeout(args.count, wait).await,
            None => barrier.enter(args.count).await.map(Some),
        }
    };
    let inside = match waiting(&args.dir, entering, &mut interrupts).await {
        Waited::Done(Ok(Some(inside))) => inside,
        Waited::Done(Ok(None)) => {
            eprintln!(
                "herdless: {} processes did not enter {} within the wait",
                args.count, args.dir
            );
            let code = args.timeout_exit_code.unwrap_or(exit::TIMEOUT);
            return Ok(Exit::Timeout(code));
        }
        Waited::Done(Err(e)) => return Err(Fail::of(&args.dir, e)),
        Waited::Interrupted(signal) => {
            // The dropped enter withdraws in the background, which would
            // not outlive this process.
            delete_own(&client, &node).await;
            return Ok(Exit::interrupted(signal));
        }
    };

    // Nothing held can be lost: the command runs to its end. The grace
    // is the guard's, should herdless itself be killed.
    let policy = Policy::new(GRACE, false, client.session_timeout());
    let ended = run_while_held(
        Entered(node.clone()),
        &args.command,
        &common.zk,
        policy,
        &mut interrupts,
    )
    .await?;
    match waiting(&args.dir, inside.leave(), &mut interrupts).await {
        Waited::Done(Ok(())) => Ok(ended),
        Waited::Done(Err(e)) => Err(Fail::of(&args.dir, e)),
        Waited::Interrupted(signal) => {
            // Leaving without the others: nobody waits for this process.
            delete_own(&client, &node).await;
            Ok(Exit::interrupted(signal))
        }
    }
}

/// `HOSTNAME-PID`: unique among processes of different hosts, and of one.
fn default_name() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    let host: String = host
        .trim()
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_'))
        .collect();
    let host = if host.is_empty() { "host" } else { &host };
    format!("{host}-{}", std::process::id())
}

/// Deletes `node` if this session holds it. Best effort: the session's end
/// removes it anyway.
async fn delete_own(client: &Client, node: &str) {
    let me = client.session_id().0;
    if let Ok(Some(stat)) = client.check_stat(node).await {
        if stat.ephemeral_owner == me {
            let _ = client.delete(node, Some(stat.version)).await;
        }
    }
}

/// Inside the barrier, as the supervisor sees it: held until the command
/// ends, never lost (nothing the barrier does stops the command).
struct Entered(String);

impl Held for Entered {
    const WHAT: &'static str = "double barrier";
    const NODE_VAR: &'static str = "HERDLESS_BARRIER_NODE";
    fn node_path(&self) -> &str {
        &self.0
    }
    /// Leaving waits for the others, so it is done after the supervisor
    /// returns, where SIGINT can cut it short.
    async fn give_up(self) -> Result<(), herdless_std::Error> {
        Ok(())
    }
    fn standing(&self) -> Standing {
        Standing::Held
    }
    async fn lost(&self) {
        std::future::pending().await
    }
    async fn suspended(&self) {
        std::future::pending().await
    }
}
