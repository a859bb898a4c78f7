//! `herdless barrier`: set, remove or wait for a barrier.

use clap::{Args, Subcommand};
use herdless_std::barrier::Barrier;

use crate::common::Common;
use crate::exit::Exit;
use crate::fail::{Fail, Outcome};
use crate::signals::Interrupts;
use crate::wait::{waiting, Waited};

/// `herdless barrier set|remove|wait NODE`
#[derive(Args, Debug)]
#[command(after_help = "\
Examples:
  herdless barrier set /barriers/deploy      # hold everyone at the barrier
  herdless barrier wait /barriers/deploy && ./start.sh
  herdless barrier remove /barriers/deploy   # let them through")]
pub struct BarrierArgs {
    #[command(subcommand)]
    action: BarrierAction,
}

#[derive(Subcommand, Debug)]
enum BarrierAction {
    /// Create the barrier node: waiters block until it is removed.
    Set {
        /// The barrier node.
        node: String,
    },
    /// Delete the barrier node: every waiter goes on.
    Remove {
        /// The barrier node.
        node: String,
    },
    /// Wait until the barrier node is gone (at once if it is not set).
    Wait {
        /// The barrier node.
        node: String,
    },
}

/// Runs `herdless barrier`.
pub async fn run(common: &Common, args: BarrierArgs) -> Outcome {
    let client = common.connect().await?;
    let (BarrierAction::Set { node }
    | BarrierAction::Remove { node }
    | BarrierAction::Wait { node }) = &args.action;
    let barrier = Barrier::new(&client, node).map_err(|e| Fail::of(node, e))?;
    let done = match &args.action {
        BarrierAction::Set { .. } => barrier.set().await,
        BarrierAction::Remove { .. } => barrier.remove().await,
        BarrierAction::Wait { .. } => {
            let mut interrupts = Interrupts::catch()?;
            match waiting(node, barrier.wait(), &mut interrupts).await {
                Waited::Done(done) => done,
                Waited::Interrupted(signal) => return Ok(Exit::interrupted(signal)),
            }
        }
    };
    done.map_err(|e| Fail::of(node, e))?;
    Ok(Exit::Success)
}
