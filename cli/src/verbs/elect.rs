//! `herdless elect`: run a command while this process leads an election,
//! or (`-l`) print every change of leader.

use clap::Args;
use herdless_std::election::{watch_leader, Leader};
use herdless_std::Election;

use crate::common::{seconds, warn_beside_other_libraries, Common};
use crate::exit::Exit;
use crate::fail::{Fail, Outcome};
use crate::signals::Interrupts;
use crate::supervise::{run_while_held, Policy};
use crate::wait::acquiring;

/// `herdless elect PATH [--data D] -- CMD [ARGS...]`, `herdless elect -l PATH`
#[derive(Args, Debug)]
#[command(after_help = "\
Examples:
  herdless elect /election/gateway --data gw-3 -- ./serve-gateway.sh
      campaign; run serve-gateway.sh while leading, stop it if leadership is lost
  herdless elect -l /election/gateway
      print the leader now and at every change (until Ctrl-C)

The command gets HERDLESS_LEADER_NODE and HERDLESS_FENCE_TOKEN (the candidate
node's sequence number) in its environment.")]
pub struct ElectArgs {
    /// The election's directory.
    pub path: String,
    /// Print the leader and every change of leader instead of campaigning.
    #[arg(short = 'l', long = "listen", conflicts_with_all = ["data", "command"])]
    pub listen: bool,
    /// What this candidate tells the others when it leads (its address, say).
    #[arg(long)]
    pub data: Option<String>,
    /// Seconds between SIGTERM and SIGKILL when leadership is lost. The stop starts
    /// this much earlier in a lost connection, so that it ends before
    /// the session can expire (half the session timeout in).
    #[arg(long, value_name = "SECS", default_value_t = 2.0)]
    pub grace: f64,
    /// Stop the command as soon as the connection is lost.
    #[arg(long)]
    pub kill_on_suspend: bool,
    /// The command and its arguments.
    #[arg(last = true, required_unless_present = "listen", value_name = "CMD")]
    pub command: Vec<String>,
}

/// Runs `herdless elect`.
pub async fn run(common: &Common, args: ElectArgs) -> Outcome {
    let grace = seconds(args.grace, "--grace")?;
    let mut interrupts = Interrupts::catch()?;
    let client = common.connect().await?;
    if args.listen {
        return listen(common, &client, &args.path, &mut interrupts).await;
    }
    let data = args.data.unwrap_or_default();
    let election = Election::with_flavour(&client, &args.path, common.flavour.into())
        .and_then(|e| e.with_data(data.as_bytes()))
        .map_err(|e| Fail::of(&args.path, e))?;
    warn_beside_other_libraries(&client, &args.path, common.flavour, false).await;
    let leadership =
        match acquiring(&client, &args.path, election.campaign(), &mut interrupts).await? {
            Ok(leadership) => leadership,
            Err(interrupted) => return Ok(interrupted),
        };
    let policy = Policy::new(grace, args.kill_on_suspend, client.session_timeout());
    run_while_held(
        leadership,
        &args.command,
        &common.zk,
        policy,
        &mut interrupts,
    )
    .await
}

/// Prints the leader, then every change, until SIGINT or SIGTERM.
async fn listen(
    common: &Common,
    client: &herdless_std::Client,
    path: &str,
    interrupts: &mut Interrupts,
) -> Outcome {
    let mut observer = watch_leader(client, path).map_err(|e| Fail::of(path, e))?;
    loop {
        tokio::select! {
            changed = observer.changed() => {
                let leader = changed.map_err(|e| Fail::of(path, e))?;
                print_leader(common.json, leader.as_ref());
            }
            _ = interrupts.recv() => return Ok(Exit::Success),
        }
    }
}

fn print_leader(json: bool, leader: Option<&Leader>) {
    if json {
        let value = match leader {
            Some(l) => serde_json::json!({
                "leader": { "node": l.node, "data": String::from_utf8_lossy(&l.data) }
            }),
            None => serde_json::json!({ "leader": null }),
        };
        println!("{value}");
    } else {
        match leader {
            Some(l) => println!("leader {} {}", l.node, String::from_utf8_lossy(&l.data)),
            None => println!("no leader"),
        }
    }
}
