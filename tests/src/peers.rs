//! Curator's and Kazoo's own programs (`tests/curator`, `tests/kazoo`),
//! run beside herdless's contenders on one path, each journalling its
//! critical sections into a [`Journal`].

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use herdless_core::naming::Flavour;

use crate::journal::Journal;
use crate::CURATOR_CLASSPATH;

/// The library whose own program takes part.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Peer {
    /// Curator 5.4, in Java's source-file mode.
    Curator,
    /// Kazoo 2.8, with Debian's python3.
    Kazoo,
}

impl Peer {
    /// How herdless names its nodes beside it.
    pub fn flavour(self) -> Flavour {
        match self {
            Peer::Curator => Flavour::Curator,
            Peer::Kazoo => Flavour::Kazoo,
        }
    }

    /// Its program in `mode` (see the programs' headers) on `dir` for
    /// `seconds`, its stdout piped.
    pub fn spawn(
        self,
        connect: &str,
        dir: &str,
        journal: &Journal,
        seconds: u64,
        mode: &str,
    ) -> Child {
        let mut command = match self {
            Peer::Curator => {
                let mut c = Command::new("java");
                c.arg("-cp").arg(CURATOR_CLASSPATH.join(":")).arg(concat!(
                    env!("CARGO_MANIFEST_DIR"),
                    "/curator/CuratorLockContender.java"
                ));
                c
            }
            Peer::Kazoo => {
                let mut c = Command::new("/usr/bin/python3");
                c.arg(concat!(
                    env!("CARGO_MANIFEST_DIR"),
                    "/kazoo/kazoo_lock_contender.py"
                ));
                c
            }
        };
        command
            .args([connect, dir])
            .arg(&journal.path)
            .arg(seconds.to_string())
            .arg(mode)
            .stdout(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("the {self:?} program runs: {e}"))
    }
}

/// Waits for `program` (ours) to end by itself, killing it if it has not
/// within `patience`; what it printed.
pub async fn said(program: &mut Child, patience: Duration) -> String {
    let deadline = Instant::now() + patience;
    while program.try_wait().expect("a peer program").is_none() {
        if Instant::now() > deadline {
            let _ = program.kill();
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let mut out = String::new();
    if let Some(mut stdout) = program.stdout.take() {
        use std::io::Read;
        let _ = stdout.read_to_string(&mut out);
    }
    out.trim().to_owned()
}
