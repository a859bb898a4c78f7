//! `herdless revoke`: ask a revocable lock's holder to give it up, or
//! force it after a grace period.

use clap::Args;
use herdless_std::{revoke, revoke_forced, Revocation};

use crate::common::{seconds, Common};
use crate::exit::Exit;
use crate::fail::{Fail, Outcome};

/// `herdless revoke NODE [--force [--grace SECS]]`
#[derive(Args, Debug)]
#[command(after_help = "\
Examples:
  herdless revoke /locks/printer/0b4c1e57-6c6e-4b39-a0a2-2f7f3f5cf3a1-lock-0000000007
      write `unlock` on the holder's node: a revocable holder releases
  herdless revoke --force --grace 10 /locks/printer/...-lock-0000000007
      and delete the node if it has not gone within 10 s")]
pub struct RevokeArgs {
    /// The holder's node (see `herdless inspect`).
    pub node: String,
    /// Delete the node if the holder has not released within the grace.
    #[arg(long)]
    pub force: bool,
    /// Seconds the holder has to release before --force deletes its node.
    #[arg(long, value_name = "SECS", default_value_t = 5.0, requires = "force")]
    pub grace: f64,
}

/// Runs `herdless revoke`.
pub async fn run(common: &Common, args: RevokeArgs) -> Outcome {
    let grace = seconds(args.grace, "--grace")?;
    let client = common.connect().await?;
    let outcome = if args.force {
        revoke_forced(&client, &args.node, grace).await
    } else {
        revoke(&client, &args.node).await
    }
    .map_err(|e| Fail::of(&args.node, e))?;
    let (said, exit) = match outcome {
        Revocation::Requested => ("requested", Exit::Success),
        Revocation::Released => ("released", Exit::Success),
        Revocation::Forced => ("forced", Exit::Success),
        Revocation::NotHeld => ("not-held", Exit::NotFound),
        _ => ("unknown", Exit::Success),
    };
    if common.json {
        println!(
            "{}",
            serde_json::json!({ "node": args.node, "revocation": said })
        );
    } else {
        println!("{said}");
    }
    Ok(exit)
}
