//! What is in a recipe's directory, for operators and tools: the
//! contenders of a lock, shared lock or election in their order, with the
//! library that wrote each one, its owner session, age and data, and who
//! holds or leads; a queue's depth and head; a barrier, a double
//! barrier's processes, a transaction's votes and decision, a group's
//! members. Like Curator's
//! `getParticipantNodes` and Kazoo's `contenders()`, for every library's
//! names at once.
//!
//! Reading a directory is not atomic: a node listed and gone before its
//! data is read is left out, so an inspection is a recent picture, not a
//! consistent snapshot.
//!
//! ```no_run
//! # async fn run(client: herdless_std::Client) -> Result<(), herdless_std::Error> {
//! let seen = herdless_std::inspect::inspect(&client, "/locks/printer").await?;
//! for c in &seen.contenders {
//!     println!("{} {:?} {:?} holds={}", c.node.name, c.kind, c.flavour, c.holds);
//! }
//! # Ok(()) }
//! ```

use std::cmp::Ordering;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use herdless_core::double_barrier::READY;
use herdless_core::election::{Acknowledgement, ACK_NAME};
use herdless_core::naming::{recognise, Flavour, NodeKind};
use herdless_core::queue::ItemKey;
use herdless_core::two_phase::{Outcome, DECISION};
use herdless_core::{Sequence, ZkError};

use crate::backend::Backend;
use crate::connection::Connection;
use crate::Error;

/// Which recipe a directory holds, as told by its children's names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum RecipeKind {
    /// Exclusive-lock contenders only (`…lock-N`, `…__lock__N`).
    Lock,
    /// Readers or writers of a shared lock (`read-`/`write-`,
    /// `__READ__`/`__WRIT__`, `__rlock__`), exclusive contenders counting as
    /// writers.
    SharedLock,
    /// Election candidates (`n_`, `latch-`) or an acknowledgement node
    /// (`leader`).
    Election,
    /// Queue items of any library (`qn-`, `queue-`, `entry-`, herdless's).
    Queue,
    /// No children.
    Empty,
    /// Children none of the above recognises.
    Other,
}

/// One child node as read from the server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Node {
    /// Its name in the directory.
    pub name: String,
    /// Its full path.
    pub path: String,
    /// The session that owns it if it is ephemeral (`ephemeralOwner`).
    pub owner_session: Option<i64>,
    /// The zxid of its creation: a fencing token that only grows.
    pub czxid: i64,
    /// When it was created, by the server's clock.
    pub created: SystemTime,
    /// Its data.
    pub data: Vec<u8>,
}

impl Node {
    /// How long ago it was created (zero if the clocks disagree).
    pub fn age(&self) -> Duration {
        SystemTime::now()
            .duration_since(self.created)
            .unwrap_or_default()
    }
}

/// A contender of a lock, shared lock or election.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Contender {
    /// The node.
    pub node: Node,
    /// Its role by its marker (Kazoo's `__lock__` reads as a lock).
    pub kind: NodeKind,
    /// The library layout of its name; `None` when it has no GUID.
    pub flavour: Option<Flavour>,
    /// The sequence number the server gave it.
    pub sequence: i32,
    /// Whether it holds the lock (for a shared lock, one of the holders)
    /// or is first in line to lead.
    pub holds: bool,
}

/// A queue item.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Item {
    /// The node.
    pub node: Node,
    /// Its priority (lower first; 0 without one).
    pub priority: i32,
    /// Its sequence number.
    pub sequence: i32,
}

/// What [`inspect`] found in a directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Inspection {
    /// The directory.
    pub path: String,
    /// The recipe its children show.
    pub recipe: RecipeKind,
    /// Contenders in the order they are served (empty for a queue).
    pub contenders: Vec<Contender>,
    /// An election's acknowledgement (`leader`): the leader's node name
    /// and data as the leader wrote them.
    pub acknowledgement: Option<(String, Vec<u8>)>,
    /// Queue items, head first (empty for anything else).
    pub items: Vec<Item>,
    /// Children that are none of the above, by name.
    pub others: Vec<String>,
}

impl Inspection {
    /// The contenders that hold: the lock's holder, a shared lock's
    /// holders, the candidate first in line to lead.
    pub fn holders(&self) -> impl Iterator<Item = &Contender> {
        self.contenders.iter().filter(|c| c.holds)
    }
}

/// Reads the directory `path` and what each child holds, recognising the
/// recipe from the children's names.
///
/// Sent again across connection losses; a directory that does not exist
/// is `Err(Error::Zk(ZkError::NoNode))`.
pub async fn inspect(conn: &impl Connection, path: &str) -> Result<Inspection, Error> {
    let nodes = children(conn, path).await?;
    let mut seen = Inspection {
        path: path.to_owned(),
        recipe: RecipeKind::Empty,
        contenders: Vec::new(),
        acknowledgement: None,
        items: Vec::new(),
        others: Vec::new(),
    };
    for node in nodes {
        if let Some(r) = recognise(&node.name) {
            seen.contenders.push(Contender {
                kind: r.kind,
                flavour: r.flavour,
                sequence: r.sequence.value(),
                node,
                holds: false,
            });
        } else if let Some(key) = ItemKey::parse(&node.name) {
            seen.items.push(Item {
                priority: key.priority,
                sequence: key.sequence.value(),
                node,
            });
        } else if node.name == ACK_NAME {
            let ack = Acknowledgement::parse(&node.data)
                .map(|ack| (ack.node.to_owned(), ack.data.to_vec()));
            match ack {
                Some(ack) => seen.acknowledgement = Some(ack),
                None => seen.others.push(node.name),
            }
        } else {
            seen.others.push(node.name);
        }
    }
    seen.recipe = recipe_of(&seen);
    by_sequence(&mut seen.contenders);
    seen.items.sort_by(|a, b| {
        a.priority
            .cmp(&b.priority)
            .then_with(|| Sequence::new(a.sequence).order(Sequence::new(b.sequence)))
    });
    mark_holders(seen.recipe, &mut seen.contenders);
    Ok(seen)
}

/// The child `name` of `dir`, or `None` if it went meanwhile.
async fn read(backend: &Backend, dir: &str, name: String) -> Result<Option<Node>, Error> {
    let path = if dir == "/" {
        format!("/{name}")
    } else {
        format!("{dir}/{name}")
    };
    read_path(backend, path, name).await
}

/// The node at `path` (named `name`), or `None` if there is none.
async fn read_path(backend: &Backend, path: String, name: String) -> Result<Option<Node>, Error> {
    Ok(backend.read(&path).await?.map(|(data, stat)| Node {
        name,
        path,
        owner_session: (stat.ephemeral_owner != 0).then_some(stat.ephemeral_owner),
        czxid: stat.czxid,
        created: UNIX_EPOCH + Duration::from_millis(u64::try_from(stat.ctime).unwrap_or(0)),
        data,
    }))
}

/// Every child of `dir` with its data and owner, by name: a group's
/// members, a double barrier's processes, a transaction's votes.
pub async fn children(conn: &impl Connection, dir: &str) -> Result<Vec<Node>, Error> {
    herdless_core::path::validate(dir)?;
    let source = conn.source();
    source
        .across(None, |backend| async move {
            let Some(mut names) = backend.list(dir).await? else {
                return Err(Error::Zk(ZkError::NoNode));
            };
            names.sort();
            // All reads in one flight: the client pipelines them on its
            // connection, so a large directory costs one round trip, not one per
            // child.
            let reads = names.into_iter().map(|name| read(&backend, dir, name));
            let nodes = futures::future::try_join_all(reads).await?;
            Ok(nodes.into_iter().flatten().collect())
        })
        .await
}

/// The barrier node `node` if the barrier is set, `None` if it is not.
pub async fn barrier(conn: &impl Connection, node: &str) -> Result<Option<Node>, Error> {
    read_node(conn, node).await
}

/// The node at `path`, or `None` if there is none.
async fn read_node(conn: &impl Connection, path: &str) -> Result<Option<Node>, Error> {
    herdless_core::path::validate(path)?;
    let name = herdless_core::path::basename(path);
    let source = conn.source();
    source
        .across(None, |backend| async move {
            read_path(&backend, path.to_owned(), name.to_owned()).await
        })
        .await
}

/// A double barrier's state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DoubleBarrier {
    /// The processes inside (or entering or leaving), by name.
    pub processes: Vec<Node>,
    /// The `ready` node, once the count was reached in this round.
    pub ready: Option<Node>,
}

/// Reads the double barrier at `dir`.
pub async fn double_barrier(conn: &impl Connection, dir: &str) -> Result<DoubleBarrier, Error> {
    let mut processes = children(conn, dir).await?;
    let ready = processes
        .iter()
        .position(|n| n.name == READY)
        .map(|i| processes.remove(i));
    Ok(DoubleBarrier { processes, ready })
}

/// A site's vote as its node holds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VoteState {
    /// Not voted yet (empty).
    Pending,
    /// `commit`.
    Commit,
    /// `abort`, or anything else (which counts as `abort`).
    Abort,
}

/// A two-phase commit transaction's state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Transaction {
    /// The transaction body.
    pub body: Vec<u8>,
    /// Each site's vote node and its vote, by name.
    pub votes: Vec<(Node, VoteState)>,
    /// The decision, once recorded.
    pub decision: Option<Outcome>,
}

/// Reads the transaction at `tx`.
pub async fn transaction(conn: &impl Connection, tx: &str) -> Result<Transaction, Error> {
    let body = read_node(conn, tx)
        .await?
        .ok_or(Error::Zk(herdless_core::ZkError::NoNode))?
        .data;
    let mut votes = Vec::new();
    let mut decision = None;
    for node in children(conn, tx).await? {
        if node.name == DECISION {
            decision = Some(Outcome::from_bytes(&node.data));
        } else {
            let vote = match node.data.as_slice() {
                b"" => VoteState::Pending,
                b"commit" => VoteState::Commit,
                _ => VoteState::Abort,
            };
            votes.push((node, vote));
        }
    }
    Ok(Transaction {
        body,
        votes,
        decision,
    })
}

fn recipe_of(seen: &Inspection) -> RecipeKind {
    let has = |kinds: &[NodeKind]| seen.contenders.iter().any(|c| kinds.contains(&c.kind));
    if has(&[NodeKind::Read, NodeKind::Write]) {
        RecipeKind::SharedLock
    } else if has(&[NodeKind::Candidate]) || seen.acknowledgement.is_some() {
        RecipeKind::Election
    } else if has(&[NodeKind::Lock]) {
        RecipeKind::Lock
    } else if !seen.items.is_empty() {
        RecipeKind::Queue
    } else if seen.others.is_empty() {
        RecipeKind::Empty
    } else {
        RecipeKind::Other
    }
}

/// Creation order, as the recipes serve contenders (a counter that
/// wrapped still sorts newer after older).
fn by_sequence(contenders: &mut [Contender]) {
    contenders.sort_by(
        |a, b| match Sequence::new(a.sequence).order(Sequence::new(b.sequence)) {
            Ordering::Equal => a.node.name.cmp(&b.node.name),
            other => other,
        },
    );
}

/// Who holds, contenders in order: the first of a lock or an election;
/// for a shared lock, a leading writer alone or every reader before the
/// first writer (an exclusive contender counts as a writer).
fn mark_holders(recipe: RecipeKind, contenders: &mut [Contender]) {
    match recipe {
        RecipeKind::Lock | RecipeKind::Election => {
            if let Some(first) = contenders.first_mut() {
                first.holds = true;
            }
        }
        RecipeKind::SharedLock => {
            for (i, c) in contenders.iter_mut().enumerate() {
                if c.kind != NodeKind::Read {
                    c.holds = i == 0;
                    break;
                }
                c.holds = true;
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn contender(kind: NodeKind, sequence: i32) -> Contender {
        Contender {
            node: Node {
                name: format!("n{sequence}"),
                path: String::new(),
                owner_session: None,
                czxid: 0,
                created: UNIX_EPOCH,
                data: Vec::new(),
            },
            kind,
            flavour: None,
            sequence,
            holds: false,
        }
    }

    fn holders(recipe: RecipeKind, kinds: &[(NodeKind, i32)]) -> Vec<i32> {
        let mut cs: Vec<_> = kinds.iter().map(|&(k, s)| contender(k, s)).collect();
        by_sequence(&mut cs);
        mark_holders(recipe, &mut cs);
        cs.iter().filter(|c| c.holds).map(|c| c.sequence).collect()
    }

    #[test]
    fn holders_follow_each_recipes_rule() {
        use NodeKind::{Candidate, Lock, Read, Write};
        assert_eq!(
            holders(RecipeKind::Lock, &[(Lock, 9), (Lock, 3), (Lock, 5)]),
            [3]
        );
        assert_eq!(
            holders(
                RecipeKind::SharedLock,
                &[(Read, 1), (Read, 2), (Write, 3), (Read, 4)]
            ),
            [1, 2]
        );
        assert_eq!(
            holders(RecipeKind::SharedLock, &[(Write, 1), (Read, 2)]),
            [1]
        );
        assert_eq!(
            holders(RecipeKind::SharedLock, &[(Read, 2), (Lock, 1)]),
            [1]
        );
        assert_eq!(
            holders(RecipeKind::SharedLock, &[(Read, 2), (Read, 7)]),
            [2, 7]
        );
        assert_eq!(
            holders(RecipeKind::Election, &[(Candidate, 8), (Candidate, 4)]),
            [4]
        );
        // After the counter wrapped, the newest nodes have negative numbers.
        assert_eq!(
            holders(RecipeKind::Lock, &[(Lock, i32::MIN), (Lock, i32::MAX)]),
            [i32::MAX]
        );
    }
}
