//! What a seeded simulation says when recovery did not finish: how each
//! peer stands, and which nodes were left behind.

use std::fmt::Debug;

use herdless_core::sim::World;
use herdless_core::Recipe;

/// Fails, naming every peer `stuck` picks with its application state (from
/// `app`), recipe, session and watches, and the nodes left in `dir`.
pub fn not_recovered<R: Recipe + Debug, A: Debug>(
    world: &World<R>,
    dir: &str,
    what: &str,
    stuck: impl Fn(usize) -> bool,
    app: impl Fn(usize) -> A,
) -> Result<(), String> {
    let peers: Vec<String> = (0..world.peers.len())
        .filter(|&i| stuck(i))
        .map(|i| {
            let p = &world.peers[i];
            format!(
                "peer {i} ({:?}): {:?}, session {:?}, watches {:?}",
                app(i),
                p.recipe,
                world.zk.status(p.session()),
                world.zk.watches_of(p.session())
            )
        })
        .collect();
    // Each node with its owner and the owner's state: a node nobody
    // deletes is usually a session's nobody ends.
    let nodes: Vec<String> = world
        .zk
        .children(dir)
        .unwrap_or_default()
        .into_iter()
        .map(|name| {
            let owner = world
                .zk
                .node(&format!("{dir}/{name}"))
                .map_or(0, |n| n.stat.ephemeral_owner);
            format!("{name} (session {owner}: {:?})", world.zk.status(owner))
        })
        .collect();
    Err(format!(
        "{what} once faults stopped: {peers:?}; nodes {nodes:?}"
    ))
}

/// Fails with `what` and the names if `dir` has children left.
pub fn nothing_left<R: Recipe>(world: &World<R>, dir: &str, what: &str) -> Result<(), String> {
    let left = world.zk.children(dir).unwrap_or_default();
    if !left.is_empty() {
        return Err(format!("{what}: {left:?}"));
    }
    Ok(())
}

/// Fails once a peer's timer has fired and stayed due: the `Recipe`
/// contract drivers rely on not to spin (see `World::stuck_timer`).
pub fn timers_settle<R: Recipe>(world: &World<R>) -> Result<(), String> {
    match world.stuck_timer() {
        Some((peer, at)) => Err(format!(
            "peer {peer}'s timer fired at {at:?} and was still due after handle_timeout"
        )),
        None => Ok(()),
    }
}
