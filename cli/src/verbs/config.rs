//! `herdless config`: read, write (compare-and-set) and follow a
//! configuration node.

use clap::{Args, Subcommand};
use herdless_std::config::{Config, Value, Written};
use herdless_std::{Error, ZkError};

use crate::common::Common;
use crate::exit::{self, Exit};
use crate::fail::{Fail, Outcome};
use crate::signals::Interrupts;

/// `herdless config get|set|watch PATH`
#[derive(Args, Debug)]
#[command(after_help = "\
Examples:
  herdless config set /config/db 'host=db-2'          # creates it if missing
  herdless --json config get /config/db               # {\"data\": ..., \"version\": 3}
  herdless config set --version 3 /config/db 'host=db-3' || echo changed meanwhile
  herdless config watch /config/db                    # one line per change")]
pub struct ConfigArgs {
    #[command(subcommand)]
    action: ConfigAction,
}

#[derive(Subcommand, Debug)]
enum ConfigAction {
    /// Print the value (exit 66 if the node is missing).
    Get {
        /// The configuration node.
        path: String,
    },
    /// Write the value; with --version only if the node is still at that
    /// version (exit 73 if it is not).
    Set {
        /// The configuration node.
        path: String,
        /// The new value.
        data: String,
        /// The version the node must be at (from `get --json`).
        #[arg(long)]
        version: Option<i32>,
    },
    /// Print the value now and after every change, until Ctrl-C.
    Watch {
        /// The configuration node.
        path: String,
    },
}

/// Runs `herdless config`.
pub async fn run(common: &Common, args: ConfigArgs) -> Outcome {
    let client = common.connect().await?;
    match args.action {
        ConfigAction::Get { path } => {
            let mut config = Config::watch(&client, &path).map_err(|e| Fail::of(&path, e))?;
            let value = config.changed().await.map_err(|e| Fail::of(&path, e))?;
            Ok(show(common, &path, &value))
        }
        ConfigAction::Set {
            path,
            data,
            version,
        } => {
            let config = Config::watch(&client, &path).map_err(|e| Fail::of(&path, e))?;
            let fail = |e| Fail::of(&path, e);
            let missing = Written::Conflict;
            let mut written = match config.set(data.as_bytes(), version).await {
                Err(Error::Zk(ZkError::NoNode)) if version.is_none() => missing,
                other => other.map_err(fail)?,
            };
            if written == missing && version.is_none() {
                // Missing: create it (the recipe makes its parents);
                // created meanwhile by someone else: set.
                written = config.create(data.as_bytes()).await.map_err(fail)?;
                if written == Written::Conflict {
                    written = config.set(data.as_bytes(), None).await.map_err(fail)?;
                }
            }
            match written {
                Written::Updated { version } => {
                    if common.json {
                        println!(
                            "{}",
                            serde_json::json!({ "path": path, "version": version })
                        );
                    } else {
                        println!("{version}");
                    }
                    Ok(Exit::Success)
                }
                Written::Conflict => {
                    let expected = version.map(|v| v.to_string()).unwrap_or_default();
                    eprintln!("herdless: {path} is not at version {expected}: nothing written");
                    Ok(Exit::Conflict(exit::CONFLICT))
                }
                _ => Err(Fail::new(
                    Exit::Unavailable,
                    format!(
                        "{path}: the connection was lost and whether the write landed is unknown"
                    ),
                )),
            }
        }
        ConfigAction::Watch { path } => {
            let mut interrupts = Interrupts::catch()?;
            let mut config = Config::watch(&client, &path).map_err(|e| Fail::of(&path, e))?;
            loop {
                tokio::select! {
                    value = config.changed() => {
                        let value = value.map_err(|e| Fail::of(&path, e))?;
                        show(common, &path, &value);
                    }
                    _ = interrupts.recv() => return Ok(Exit::Success),
                }
            }
        }
    }
}

/// Prints a value: its data, or JSON with its version.
fn show(common: &Common, path: &str, value: &Value) -> Exit {
    let (json, text, exit) = match value {
        Value::Present(v) => (
            serde_json::json!({ "path": path, "data": String::from_utf8_lossy(&v.data), "version": v.version }),
            String::from_utf8_lossy(&v.data).into_owned(),
            Exit::Success,
        ),
        Value::TooLarge { version, len } => (
            serde_json::json!({ "path": path, "too_large": len, "version": version }),
            format!("(too large: {len} bytes)"),
            Exit::Unavailable,
        ),
        _ => (
            serde_json::json!({ "path": path, "data": null }),
            "(missing)".to_owned(),
            Exit::NotFound,
        ),
    };
    if common.json {
        println!("{json}");
    } else {
        println!("{text}");
    }
    exit
}
