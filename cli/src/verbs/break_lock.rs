//! `herdless break`: delete a holder's node so the next contender goes in.
//! The holder is told its lock is lost (its guard sees the node go).

use std::io::{BufRead, Write};

use clap::Args;
use herdless_std::inspect;

use crate::common::Common;
use crate::exit::Exit;
use crate::fail::{Fail, Outcome};

/// `herdless break PATH [--node NAME] [--yes]`
#[derive(Args, Debug)]
#[command(after_help = "\
Examples:
  herdless break /locks/printer
      show the holder and ask before deleting its node
  herdless break --yes --node 0b4c1e57-6c6e-4b39-a0a2-2f7f3f5cf3a1-lock-0000000007 /locks/printer")]
pub struct BreakArgs {
    /// The lock's (or election's) directory.
    pub path: String,
    /// Delete this child instead of the holder.
    #[arg(long, value_name = "NAME")]
    pub node: Option<String>,
    /// Do not ask for confirmation.
    #[arg(short, long)]
    pub yes: bool,
}

/// Runs `herdless break`.
pub async fn run(common: &Common, args: BreakArgs) -> Outcome {
    let client = common.connect().await?;
    let seen = inspect::inspect(&client, &args.path)
        .await
        .map_err(|e| Fail::of(&args.path, e))?;
    let target = match &args.node {
        Some(name) => seen.contenders.iter().find(|c| &c.node.name == name),
        None => seen.holders().next(),
    };
    let Some(target) = target else {
        let what = args.node.as_deref().unwrap_or("holder");
        return Err(Fail::new(
            Exit::NotFound,
            format!("no {what} in {}", args.path),
        ));
    };
    let session = target
        .node
        .owner_session
        .map_or_else(|| "none".to_owned(), |s| format!("0x{s:x}"));
    let about = format!(
        "{} (session {session}, {:.0} s old, data {:?})",
        target.node.path,
        target.node.age().as_secs_f64(),
        String::from_utf8_lossy(&target.node.data)
    );
    if !args.yes && !confirm(&format!("delete {about}? [y/N] ")) {
        eprintln!("herdless: nothing deleted");
        return Ok(Exit::Declined);
    }
    match client.delete(&target.node.path, None).await {
        Ok(()) => {
            eprintln!("herdless: deleted {about}");
            Ok(Exit::Success)
        }
        Err(e) => Err(Fail::of(
            &target.node.path,
            herdless_std::Error::from_client(&e),
        )),
    }
}

/// Asks on stderr, reads a line from stdin: only `y` or `yes` agree.
fn confirm(question: &str) -> bool {
    eprint!("{question}");
    let _ = std::io::stderr().flush();
    let mut answer = String::new();
    if std::io::stdin().lock().read_line(&mut answer).is_err() {
        return false;
    }
    matches!(answer.trim().to_ascii_lowercase().as_str(), "y" | "yes")
}
