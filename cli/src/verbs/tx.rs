//! `herdless tx status`: a two-phase commit's votes and decision.

use clap::{Args, Subcommand};

use crate::common::Common;
use crate::fail::Outcome;
use crate::verbs::inspect::{self, AsRecipe, InspectArgs};

/// `herdless tx status TX`
#[derive(Args, Debug)]
#[command(after_help = "\
Example:
  herdless tx status /tx/transfer-17     # body, each site's vote, the decision")]
pub struct TxArgs {
    #[command(subcommand)]
    action: TxAction,
}

#[derive(Subcommand, Debug)]
enum TxAction {
    /// Print the transaction's body, votes and decision.
    Status {
        /// The transaction node.
        tx: String,
    },
}

/// Runs `herdless tx`.
pub async fn run(common: &Common, args: TxArgs) -> Outcome {
    let TxAction::Status { tx } = args.action;
    inspect::run(
        common,
        InspectArgs {
            path: tx,
            recipe: Some(AsRecipe::Tx),
        },
    )
    .await
}
