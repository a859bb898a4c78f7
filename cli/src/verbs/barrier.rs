//! `herdless barrier`: set, remove or wait for a barrier, or enter a
//! double barrier (`verbs::double_barrier`).

use clap::{Args, Subcommand};
use herdless_std::barrier::Barrier;

use crate::common::Common;
use crate::exit::Exit;
use crate::fail::{Fail, Outcome};
use crate::signals::Interrupts;
use crate::verbs::double_barrier::{self, EnterArgs};
use crate::wait::{waiting, Waited};

/// `herdless barrier set|remove|wait NODE`, `herdless barrier enter DIR -c N -- CMD`
#[derive(Args, Debug)]
#[command(after_help = "\
Examples:
  herdless barrier set /barriers/deploy      # hold everyone at the barrier
  herdless barrier wait /barriers/deploy && ./start.sh
  herdless barrier remove /barriers/deploy   # let them through
  herdless barrier enter /barriers/round -c 3 -- ./step.sh
      run step.sh together with two other processes (a double barrier)")]
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
    /// Enter a double barrier: run a command once COUNT processes have
    /// entered, and return once all have left.
    Enter(EnterArgs),
}

/// Runs `herdless barrier`.
pub async fn run(common: &Common, args: BarrierArgs) -> Outcome {
    let (node, action) = match args.action {
        BarrierAction::Enter(enter) => return double_barrier::run(common, enter).await,
        BarrierAction::Set { node } => (node, Single::Set),
        BarrierAction::Remove { node } => (node, Single::Remove),
        BarrierAction::Wait { node } => (node, Single::Wait),
    };
    let node = node.as_str();
    let client = common.connect().await?;
    let barrier = Barrier::new(&client, node).map_err(|e| Fail::of(node, e))?;
    let done = match action {
        Single::Set => barrier.set().await,
        Single::Remove => barrier.remove().await,
        Single::Wait => {
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

/// What is done to a (single) barrier's node.
enum Single {
    Set,
    Remove,
    Wait,
}
