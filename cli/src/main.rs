//! `herdless`: ZooKeeper coordination from the shell. A distributed
//! `flock(1)`, leader election around a command, and the inspection and
//! repair of every recipe's directory, whichever library (herdless,
//! Curator, Kazoo) wrote it. See `herdless --help` and the README.

mod common;
mod exit;
mod fail;
mod guard;
mod signals;
mod supervise;
mod tree;
mod verbs;
mod wait;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::common::Common;
use crate::exit::Exit;

/// ZooKeeper coordination from the shell: locks, elections, queues,
/// barriers and more, shared with herdless, Curator and Kazoo programs.
#[derive(Parser, Debug)]
#[command(name = "herdless", version)]
#[command(after_help = "\
Exit status: the command's own under `lock`, `elect` and `barrier enter`;
73 lock busy (-n),
74 wait timed out (-w), 75 lock or leadership lost (the command was stopped),
64 usage, 66 nothing found, 69 ZooKeeper unavailable, 126/127 command not
runnable/not found, 128+N interrupted by signal N while waiting.")]
struct Cli {
    #[command(flatten)]
    common: Common,
    #[command(subcommand)]
    verb: Verb,
}

#[derive(Subcommand, Debug)]
enum Verb {
    /// Run a command while holding a lock (a distributed flock).
    Lock(verbs::lock::LockArgs),
    /// Run a command while leading an election, or (-l) follow its leader.
    Elect(verbs::elect::ElectArgs),
    /// Show a recipe's directory: contenders, holders, leader, items...
    Inspect(verbs::inspect::InspectArgs),
    /// Delete a lock holder's node so the next contender goes in.
    Break(verbs::break_lock::BreakArgs),
    /// Ask a revocable lock's holder to release, or force it.
    Revoke(verbs::revoke::RevokeArgs),
    /// Set, remove or wait for a barrier, or run a command in a double barrier.
    Barrier(verbs::barrier::BarrierArgs),
    /// Put, take or peek queue items.
    Queue(verbs::queue::QueueArgs),
    /// Get, set (compare-and-set) or watch a configuration node.
    Config(verbs::config::ConfigArgs),
    /// List, join or watch a group's members.
    Members(verbs::members::MembersArgs),
    /// A two-phase commit transaction's status.
    Tx(verbs::tx::TxArgs),
}

fn main() -> ExitCode {
    let args: Vec<_> = std::env::args_os().collect();
    if guard::is_guard(args.get(1).map(|a| a.as_os_str())) {
        return guard::run(&args[2..]);
    }
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => {
            let usage = e.use_stderr();
            let _ = e.print();
            return if usage { Exit::Usage } else { Exit::Success }.into();
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("herdless: cannot start: {e}");
            return Exit::Unavailable.into();
        }
    };
    let outcome = runtime.block_on(async {
        match cli.verb {
            Verb::Lock(args) => verbs::lock::run(&cli.common, args).await,
            Verb::Elect(args) => verbs::elect::run(&cli.common, args).await,
            Verb::Inspect(args) => verbs::inspect::run(&cli.common, args).await,
            Verb::Break(args) => verbs::break_lock::run(&cli.common, args).await,
            Verb::Revoke(args) => verbs::revoke::run(&cli.common, args).await,
            Verb::Barrier(args) => verbs::barrier::run(&cli.common, args).await,
            Verb::Queue(args) => verbs::queue::run(&cli.common, args).await,
            Verb::Config(args) => verbs::config::run(&cli.common, args).await,
            Verb::Members(args) => verbs::members::run(&cli.common, args).await,
            Verb::Tx(args) => verbs::tx::run(&cli.common, args).await,
        }
    });
    // Background work (a release, a session close) must not hold the exit.
    runtime.shutdown_timeout(std::time::Duration::from_secs(2));
    match outcome {
        Ok(exit) => exit.into(),
        Err(fail) => {
            eprintln!("herdless: {}", fail.message);
            fail.exit.into()
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    /// clap's own consistency checks of every verb's options (a clash such
    /// as two `--version`s only shows up when that verb is parsed).
    #[test]
    fn the_command_line_is_consistent() {
        super::Cli::command().debug_assert();
    }
}
