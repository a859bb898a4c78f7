//! `herdless queue`: put, take and peek items of a queue any library
//! shares (herdless, the recipes page, Curator, Kazoo).

use std::io::Write;

use clap::{Args, Subcommand};
use herdless_std::queue::{Item, Queue};

use crate::common::{seconds, Common};
use crate::exit::Exit;
use crate::fail::{Fail, Outcome};
use crate::signals::Interrupts;
use crate::wait::{waiting, Waited};

/// `herdless queue put|take|peek DIR`
#[derive(Args, Debug)]
#[command(after_help = "\
Examples:
  herdless queue put /jobs 'resize img-7'
  herdless queue put --priority 0 /jobs urgent      # priority queue: lower first
  herdless queue take /jobs                         # waits for an item, prints it
  herdless queue take -w 5 /jobs || echo empty      # exit 66 if none within 5 s
  herdless queue peek /jobs")]
pub struct QueueArgs {
    #[command(subcommand)]
    action: QueueAction,
}

#[derive(Subcommand, Debug)]
enum QueueAction {
    /// Add an item; prints its node's name.
    Put {
        /// The queue's directory.
        dir: String,
        /// The item.
        data: String,
        /// A priority from 0 (first) to 99; without it the item counts as
        /// priority 0, taken in the order put among the other 0s.
        #[arg(long, value_name = "P", value_parser = clap::value_parser!(u8).range(0..=99))]
        priority: Option<u8>,
    },
    /// Take the head item (waiting for one); prints its data.
    Take {
        /// The queue's directory.
        dir: String,
        /// Wait this long at most (exit 66 if no item came); 0 takes an item
        /// already there, or exits 66 at once.
        #[arg(short, long, value_name = "SECS")]
        wait: Option<f64>,
    },
    /// Print the head item without taking it (exit 66 if empty).
    Peek {
        /// The queue's directory.
        dir: String,
    },
}

/// Runs `herdless queue`.
pub async fn run(common: &Common, args: QueueArgs) -> Outcome {
    let client = common.connect().await?;
    match args.action {
        QueueAction::Put {
            dir,
            data,
            priority,
        } => {
            let queue = Queue::new(&client, &dir)
                .await
                .map_err(|e| Fail::of(&dir, e))?;
            let put = match priority {
                Some(p) => queue.put_with_priority(data.as_bytes(), p).await,
                None => queue.put(data.as_bytes()).await,
            };
            let node = put.map_err(|e| Fail::of(&dir, e))?;
            if common.json {
                println!("{}", serde_json::json!({ "node": node }));
            } else {
                println!("{node}");
            }
            Ok(Exit::Success)
        }
        QueueAction::Take { dir, wait } => {
            let wait = wait.map(|w| seconds(w, "--wait")).transpose()?;
            let mut interrupts = Interrupts::catch()?;
            let queue = Queue::new(&client, &dir)
                .await
                .map_err(|e| Fail::of(&dir, e))?;
            let take = async {
                match wait {
                    Some(wait) => queue.take_timeout(wait).await,
                    None => queue.take().await.map(Some),
                }
            };
            let taken = match waiting(&dir, take, &mut interrupts).await {
                Waited::Done(taken) => taken.map_err(|e| Fail::of(&dir, e))?,
                Waited::Interrupted(signal) => return Ok(Exit::interrupted(signal)),
            };
            Ok(show(common, &dir, taken.as_ref()))
        }
        QueueAction::Peek { dir } => {
            let queue = Queue::new(&client, &dir)
                .await
                .map_err(|e| Fail::of(&dir, e))?;
            let head = queue.peek().await.map_err(|e| Fail::of(&dir, e))?;
            Ok(show(common, &dir, head.as_ref()))
        }
    }
}

/// Prints an item (its data as it is, or as JSON); `NotFound` without one.
fn show(common: &Common, dir: &str, item: Option<&Item>) -> Exit {
    let Some(item) = item else {
        eprintln!("herdless: {dir} is empty");
        return Exit::NotFound;
    };
    if common.json {
        println!(
            "{}",
            serde_json::json!({
                "node": item.node,
                "data": String::from_utf8_lossy(&item.data),
                "certain": item.certain,
            })
        );
    } else {
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(&item.data);
        let _ = out.write_all(b"\n");
    }
    Exit::Success
}
