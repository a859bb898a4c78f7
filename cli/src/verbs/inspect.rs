//! `herdless inspect`: what is in a recipe's directory, as a table or as
//! JSON.

use clap::{Args, ValueEnum};
use herdless_core::naming::{Flavour, NodeKind};
use herdless_std::inspect::{self, Contender, Inspection, Node, RecipeKind, VoteState};
use serde_json::{json, Value};

use crate::common::Common;
use crate::exit::Exit;
use crate::fail::{Fail, Outcome};

/// `herdless inspect PATH [--as KIND]`
#[derive(Args, Debug)]
#[command(after_help = "\
Examples:
  herdless inspect /locks/printer
      the contenders in order, who holds, their library, session and age
  herdless inspect --json /election/gateway | jq .leader
  herdless inspect --as tx /tx/transfer-17
      a two-phase commit's votes and decision")]
pub struct InspectArgs {
    /// The recipe's directory (or node, for a barrier).
    pub path: String,
    /// Read it as this recipe instead of recognising it from its children.
    #[arg(long = "as", value_enum, value_name = "RECIPE")]
    pub recipe: Option<AsRecipe>,
}

/// `--as`'s values.
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum AsRecipe {
    /// A lock, shared lock, election or queue, recognised from the names.
    Auto,
    /// A barrier node: set or not.
    Barrier,
    /// A double barrier's processes and its `ready` node.
    DoubleBarrier,
    /// A two-phase commit transaction: votes and decision.
    Tx,
    /// A group's members.
    Group,
}

/// Runs `herdless inspect`.
pub async fn run(common: &Common, args: InspectArgs) -> Outcome {
    let client = common.connect().await?;
    let path = args.path.as_str();
    let fail = |e| Fail::of(path, e);
    let value = match args.recipe.unwrap_or(AsRecipe::Auto) {
        AsRecipe::Auto => recipe(&inspect::inspect(&client, path).await.map_err(fail)?),
        AsRecipe::Barrier => {
            let set = inspect::barrier(&client, path).await.map_err(fail)?;
            json!({ "path": path, "recipe": "barrier", "set": set.is_some() })
        }
        AsRecipe::DoubleBarrier => {
            let b = inspect::double_barrier(&client, path).await.map_err(fail)?;
            json!({
                "path": path,
                "recipe": "double-barrier",
                "processes": b.processes.iter().map(node).collect::<Vec<_>>(),
                "ready": b.ready.is_some(),
            })
        }
        AsRecipe::Tx => {
            let tx = inspect::transaction(&client, path).await.map_err(fail)?;
            json!({
                "path": path,
                "recipe": "tx",
                "body": String::from_utf8_lossy(&tx.body),
                "votes": tx.votes.iter().map(|(n, v)| {
                    let mut entry = node(n);
                    entry["vote"] = json!(match v {
                        VoteState::Pending => "pending",
                        VoteState::Commit => "commit",
                        VoteState::Abort => "abort",
                    });
                    entry
                }).collect::<Vec<_>>(),
                "decision": tx.decision.map(|d| String::from_utf8_lossy(d.as_bytes()).into_owned()),
            })
        }
        AsRecipe::Group => {
            let members = inspect::children(&client, path).await.map_err(fail)?;
            json!({
                "path": path,
                "recipe": "group",
                "members": members.iter().map(node).collect::<Vec<_>>(),
            })
        }
    };
    if common.json {
        println!("{value:#}");
    } else {
        print!("{}", table(&value));
    }
    Ok(Exit::Success)
}

fn recipe(seen: &Inspection) -> Value {
    let kind = match seen.recipe {
        RecipeKind::Lock => "lock",
        RecipeKind::SharedLock => "shared-lock",
        RecipeKind::Election => "election",
        RecipeKind::Queue => "queue",
        RecipeKind::Empty => "empty",
        _ => "other",
    };
    let mut value = json!({
        "path": seen.path,
        "recipe": kind,
        "contenders": seen.contenders.iter().map(contender).collect::<Vec<_>>(),
        "others": seen.others,
    });
    if seen.recipe == RecipeKind::Election {
        value["leader"] = match &seen.acknowledgement {
            Some((node, data)) => json!({ "node": node, "data": String::from_utf8_lossy(data) }),
            None => Value::Null,
        };
    }
    if seen.recipe == RecipeKind::Queue {
        value["depth"] = json!(seen.items.len());
        value["items"] = seen
            .items
            .iter()
            .map(|i| {
                let mut entry = node(&i.node);
                entry["priority"] = json!(i.priority);
                entry["sequence"] = json!(i.sequence);
                entry
            })
            .collect();
    }
    value
}

fn contender(c: &Contender) -> Value {
    let mut entry = node(&c.node);
    entry["kind"] = json!(match c.kind {
        NodeKind::Lock => "lock",
        NodeKind::Read => "read",
        NodeKind::Write => "write",
        NodeKind::Candidate => "candidate",
        _ => "other",
    });
    entry["flavour"] = json!(match c.flavour {
        Some(Flavour::Recipes) => "herdless",
        Some(Flavour::Curator) => "curator",
        Some(Flavour::Kazoo) => "kazoo",
        _ => "unknown",
    });
    entry["sequence"] = json!(c.sequence);
    entry["holds"] = json!(c.holds);
    entry
}

fn node(n: &Node) -> Value {
    json!({
        "name": n.name,
        "path": n.path,
        "session": n.owner_session.map(|s| format!("0x{s:x}")),
        "czxid": n.czxid,
        "age_s": n.age().as_secs_f64().round(),
        "data": String::from_utf8_lossy(&n.data),
    })
}

/// The JSON as an operator reads it: a header line, then one row per
/// contender, item, process, vote or member.
fn table(value: &Value) -> String {
    let text = |v: &Value| match v {
        Value::String(s) => s.clone(),
        Value::Null => "-".to_owned(),
        other => other.to_string(),
    };
    let mut out = format!("{} ({})\n", text(&value["path"]), text(&value["recipe"]));
    for key in ["leader", "set", "ready", "depth", "decision", "body"] {
        if let Some(v) = value.get(key) {
            let shown = match v {
                Value::Object(o) => format!(
                    "{} {}",
                    o.get("node").map(&text).unwrap_or_default(),
                    o.get("data").map(&text).unwrap_or_default()
                ),
                other => text(other),
            };
            out.push_str(&format!("{key}: {shown}\n"));
        }
    }
    for key in ["contenders", "items", "processes", "votes", "members"] {
        let Some(Value::Array(rows)) = value.get(key) else {
            continue;
        };
        if rows.is_empty() {
            out.push_str(&format!("{key}: none\n"));
            continue;
        }
        let columns: Vec<&str> = [
            "holds", "kind", "flavour", "vote", "priority", "name", "session", "age_s", "data",
        ]
        .into_iter()
        .filter(|c| rows.iter().any(|r| r.get(*c).is_some()))
        .collect();
        let cells: Vec<Vec<String>> = rows
            .iter()
            .map(|r| {
                columns
                    .iter()
                    .map(|c| match (c, r.get(*c)) {
                        (&"holds", Some(Value::Bool(true))) => "*".to_owned(),
                        (&"holds", _) => String::new(),
                        (_, Some(v)) => text(v),
                        (_, None) => String::new(),
                    })
                    .collect()
            })
            .collect();
        let widths: Vec<usize> = (0..columns.len())
            .map(|i| {
                cells
                    .iter()
                    .map(|r| r[i].len())
                    .chain([columns[i].len()])
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let line = |row: &[String]| {
            let mut l = row
                .iter()
                .zip(&widths)
                .map(|(c, w)| format!("{c:<w$}"))
                .collect::<Vec<_>>()
                .join("  ");
            l.truncate(l.trim_end().len());
            l + "\n"
        };
        out.push_str(&line(
            &columns.iter().map(|c| c.to_string()).collect::<Vec<_>>(),
        ));
        for row in &cells {
            out.push_str(&line(row));
        }
    }
    if let Some(Value::Array(others)) = value.get("others") {
        if !others.is_empty() {
            out.push_str(&format!(
                "other children: {}\n",
                others.iter().map(&text).collect::<Vec<_>>().join(", ")
            ));
        }
    }
    out
}
