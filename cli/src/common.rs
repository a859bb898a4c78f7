//! What every verb shares: the options that say where ZooKeeper is and
//! how to name nodes, the connection, and the cleanup that leaves nothing
//! of this process behind.

use std::time::Duration;

use clap::{Args, ValueEnum};
use herdless_core::naming::{Flavour, NodeKind};
use herdless_std::{Client, ConnectOptions, Error};

use crate::exit::Exit;
use crate::fail::Fail;

/// Options every verb takes.
// clap prints these doc comments as the help text, where brackets mean
// "optional" rather than a link.
#[allow(rustdoc::broken_intra_doc_links)]
#[derive(Args, Debug, Clone)]
pub struct Common {
    /// ZooKeeper servers: host:port[,host:port...][/chroot]
    #[arg(
        long = "zk",
        env = "HERDLESS_ZK",
        default_value = "127.0.0.1:2181",
        global = true
    )]
    pub zk: String,
    /// Session timeout in seconds: how long after this process (or its
    /// connection) dies its nodes go.
    #[arg(long, value_name = "SECS", default_value_t = 10.0, global = true)]
    pub session_timeout: f64,
    /// How to name the nodes this process creates, to share a lock or an
    /// election with Curator or Kazoo clients.
    #[arg(long, value_enum, default_value_t = FlavourArg::Herdless, global = true)]
    pub flavour: FlavourArg,
    /// Print machine-readable JSON instead of text.
    #[arg(long, global = true)]
    pub json: bool,
    /// Digest credentials for the session.
    #[arg(
        long,
        value_name = "USER:PASSWORD",
        env = "HERDLESS_DIGEST",
        global = true
    )]
    pub digest: Option<String>,
}

/// `--flavour`'s values.
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlavourArg {
    /// The ZooKeeper recipes page's names (`<guid>-lock-N`).
    Herdless,
    /// Curator's (`_c_<guid>-lock-N`).
    Curator,
    /// Kazoo's (`<hex>__lock__N`).
    Kazoo,
}

impl From<FlavourArg> for Flavour {
    fn from(f: FlavourArg) -> Flavour {
        match f {
            FlavourArg::Herdless => Flavour::Recipes,
            FlavourArg::Curator => Flavour::Curator,
            FlavourArg::Kazoo => Flavour::Kazoo,
        }
    }
}

impl Common {
    /// A session to the servers.
    pub async fn connect(&self) -> Result<Client, Fail> {
        if !(self.session_timeout.is_finite() && self.session_timeout > 0.0) {
            return Err(Fail::new(Exit::Usage, "--session-timeout must be above 0"));
        }
        let mut options = ConnectOptions::new(Duration::from_secs_f64(self.session_timeout));
        if let Some(digest) = &self.digest {
            let Some((user, password)) = digest.split_once(':') else {
                return Err(Fail::new(Exit::Usage, "--digest takes USER:PASSWORD"));
            };
            options = options.digest(user, password);
        }
        // The library refuses a chroot that does not exist (every request
        // would fail with "node does not exist" on the recipe's own path);
        // the operator is told how to make it.
        options.connect(&self.zk).await.map_err(|e| match &e {
            Error::ChrootMissing(chroot) => Fail::new(
                Exit::NotFound,
                format!("{}: {e} (zkCli.sh create {chroot})", self.zk),
            ),
            // A malformed chroot is the operator's typo, not a server away.
            Error::InvalidChroot { .. } => Fail::new(Exit::Usage, format!("{}: {e}", self.zk)),
            // An address that is not one (a port over 65535, say).
            Error::Connect(herdless_std::zookeeper_client::Error::BadArguments(_)) => {
                Fail::new(Exit::Usage, format!("cannot connect to {}: {e}", self.zk))
            }
            e => Fail::new(
                Exit::Unavailable,
                format!("cannot connect to {}: {e}", self.zk),
            ),
        })
    }
}

/// Warns on stderr when `dir` holds nodes another library wrote whose
/// recipes would not see this process's node, so that its holders would
/// not wait for it and both would hold at once: Kazoo counts only nodes
/// named its way, and Curator orders nodes by what follows its own marker
/// (`__READ__`/`__WRIT__`, `latch-`, `lock-`), so a node of another shape
/// sorts after all of its. Only a `--mutex` node named the default way
/// (`<guid>-lock-N`) is ordered rightly by Curator's `lock-` nodes. Best
/// effort: a directory that cannot be listed (missing, not readable) says
/// nothing here.
pub async fn warn_beside_other_libraries(
    client: &Client,
    dir: &str,
    flavour: FlavourArg,
    mutex: bool,
) {
    let mine = Flavour::from(flavour);
    let Ok(names) = client.list_children(dir).await else {
        return;
    };
    let mut blind = Vec::new();
    for name in &names {
        let Some(node) = herdless_core::naming::recognise(name) else {
            continue;
        };
        let Some(theirs) = node.flavour else {
            continue;
        };
        let sees_mine = theirs == mine
            || theirs == Flavour::Recipes
            || (theirs == Flavour::Curator
                && node.kind == NodeKind::Lock
                && mutex
                && mine == Flavour::Recipes);
        if !sees_mine && !blind.contains(&theirs) {
            blind.push(theirs);
        }
    }
    for theirs in blind {
        let (library, flag) = match theirs {
            Flavour::Curator => ("Curator", "curator"),
            Flavour::Kazoo => ("Kazoo", "kazoo"),
            _ => continue,
        };
        eprintln!(
            "herdless: warning: {dir} holds nodes named {library}'s way; {library} does not \
             see this process's node, so its holders will not wait for it: give --flavour {flag}"
        );
    }
}

/// Deletes every node of `dir` this session owns: what an interrupted
/// acquisition or campaign may have created, whose background deletion
/// would not outlive this process. Best effort: the session's end
/// removes whatever is left.
pub async fn leave_nothing(client: &Client, dir: &str) {
    let me = client.session_id().0;
    let Ok(seen) = herdless_std::inspect::inspect(client, dir).await else {
        return;
    };
    for c in seen.contenders {
        if c.node.owner_session == Some(me) {
            let _ = client.delete(&c.node.path, None).await;
        }
    }
}

/// Seconds from the command line as a duration, refusing what is not one.
pub fn seconds(secs: f64, what: &str) -> Result<Duration, Fail> {
    Duration::try_from_secs_f64(secs).map_err(|_| {
        Fail::new(
            Exit::Usage,
            format!("{what} must be a number of seconds, 0 or more"),
        )
    })
}
