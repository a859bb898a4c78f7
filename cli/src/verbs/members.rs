//! `herdless members`: list, join and follow a group's members.

use clap::{Args, Subcommand};
use herdless_std::group::GroupObserver;
use herdless_std::{inspect, GroupMember, MembershipEvent};

use crate::common::Common;
use crate::exit::Exit;
use crate::fail::{Fail, Outcome};
use crate::signals::Interrupts;

/// `herdless members list|join|watch DIR`
#[derive(Args, Debug)]
#[command(after_help = "\
Examples:
  herdless members list /fleet/gateways
  herdless members join /fleet/gateways gw-3 --data 10.0.0.3   # a member until Ctrl-C
  herdless members watch /fleet/gateways                        # `+ name` / `- name` lines")]
pub struct MembersArgs {
    #[command(subcommand)]
    action: MembersAction,
}

#[derive(Subcommand, Debug)]
enum MembersAction {
    /// Print the members, one per line (with --json, their data and session).
    List {
        /// The group's directory.
        dir: String,
    },
    /// Be a member (an ephemeral node) until SIGINT or SIGTERM.
    Join {
        /// The group's directory.
        dir: String,
        /// This member's name.
        name: String,
        /// This member's data.
        #[arg(long, default_value = "")]
        data: String,
    },
    /// Print the members, then `+ NAME` and `- NAME` at every change.
    Watch {
        /// The group's directory.
        dir: String,
    },
}

/// Runs `herdless members`.
pub async fn run(common: &Common, args: MembersArgs) -> Outcome {
    let client = common.connect().await?;
    match args.action {
        MembersAction::List { dir } => {
            let members = inspect::children(&client, &dir)
                .await
                .map_err(|e| Fail::of(&dir, e))?;
            for m in &members {
                if common.json {
                    let value = serde_json::json!({
                        "name": m.name,
                        "data": String::from_utf8_lossy(&m.data),
                        "session": m.owner_session.map(|s| format!("0x{s:x}")),
                    });
                    println!("{value}");
                } else {
                    println!("{}", m.name);
                }
            }
            Ok(Exit::Success)
        }
        MembersAction::Join { dir, name, data } => {
            let mut interrupts = Interrupts::catch()?;
            let mut member = GroupMember::join(&client, &dir, &name, data.as_bytes())
                .await
                .map_err(|e| Fail::of(&dir, e))?;
            eprintln!("herdless: joined {} (until Ctrl-C)", member.node_path());
            loop {
                tokio::select! {
                    event = member.next_event() => {
                        match event {
                            Some(event) => eprintln!("herdless: {}", told(event)),
                            None => return Err(Fail::new(Exit::Unavailable, "the membership ended")),
                        }
                    }
                    _ = interrupts.recv() => break,
                }
            }
            member.leave().await.map_err(|e| Fail::of(&dir, e))?;
            Ok(Exit::Success)
        }
        MembersAction::Watch { dir } => {
            let mut interrupts = Interrupts::catch()?;
            let mut group = GroupObserver::start(&client, &dir).map_err(|e| Fail::of(&dir, e))?;
            loop {
                tokio::select! {
                    change = group.changed() => {
                        let change = change.map_err(|e| Fail::of(&dir, e))?;
                        for name in &change.joined {
                            println!("+ {name}");
                        }
                        for name in &change.left {
                            println!("- {name}");
                        }
                    }
                    _ = interrupts.recv() => return Ok(Exit::Success),
                }
            }
        }
    }
}

/// What a member's event means, for the operator watching its stderr.
fn told(event: MembershipEvent) -> String {
    match event {
        MembershipEvent::Suspended => {
            "connection lost: still in the group unless the session expires".to_owned()
        }
        MembershipEvent::Resumed => "connection back: still in the group".to_owned(),
        MembershipEvent::Out => {
            "out of the group (session expired or node deleted): joining again".to_owned()
        }
        MembershipEvent::Rejoined { gap } => {
            format!("back in the group, after {:.1} s out", gap.as_secs_f64())
        }
        other => format!("{other:?}"),
    }
}
