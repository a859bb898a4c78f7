//! The name service: a service registers its name with its address,
//! clients look it up, a second instance cannot take a name a live one
//! holds, and the name goes with its owner's session.
//!
//! Both runs play the same story through herdless-std (`register` and
//! `lookup`), once on the in-memory ZooKeeper and once on a real server:
//! code written against `&impl Connection` runs unchanged on either.

use std::time::Duration;

use herdless_std::group::{lookup, register};
use herdless_std::sim::SimServer;
use herdless_std::{Connection, Error, GroupMember, MembershipEvent};

use super::title;

const ROOT: &str = "/herdless-demo/services";
const NAME: &str = "billing";

/// The scene on the in-memory ZooKeeper: the owner's session expires and
/// its renewing session registers the name again by itself.
pub fn simulated(seed: u64) {
    title("name service: a name goes with its owner's session and comes back with the next");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a tokio runtime");
    runtime
        .block_on(expiry(seed))
        .expect("the name-service scene on the in-memory ZooKeeper");
}

/// The simulated story: registered, refused to a rival, expired, back.
async fn expiry(seed: u64) -> Result<(), Error> {
    let server = SimServer::with_seed(seed);
    let owner = server.session();
    let (client, rival) = (server.connect(), server.connect());
    let mut registration = story(&owner, &client, &rival).await?;
    println!("billing's session expires (a long partition)");
    server.expire(owner.session_id());
    say(&client).await?;
    // The renewing session opens the next session and the member
    // registers the name on it.
    while let Some(event) = registration.next_event().await {
        if let MembershipEvent::Rejoined { .. } = event {
            println!("  billing is registered again on its next session");
            break;
        }
    }
    say(&client).await?;
    registration.leave().await
}

/// The scene against a real server: the owner leaves and the second
/// instance takes the name over.
pub async fn real(addr: &str) -> Result<(), Error> {
    title("name service: register, look up, a taken name refused, a hand-over");
    let timeout = Duration::from_secs(10);
    let owner = herdless_std::Session::connect(addr, timeout).await?;
    let client = herdless_std::connect(addr, timeout).await?;
    let rival = herdless_std::connect(addr, timeout).await?;
    let registration = story(&owner, &client, &rival).await?;
    println!("billing leaves (a clean shutdown)");
    registration.leave().await?;
    say(&client).await?;
    let standby = register(&rival, ROOT, NAME, b"10.0.0.6:443").await?;
    println!("  the standby instance registers billing at 10.0.0.6:443");
    say(&client).await?;
    standby.leave().await
}

/// Registers the name on `owner`, looks it up from `client`, and shows a
/// second instance on `rival` refused the same name.
async fn story(
    owner: &impl Connection,
    client: &impl Connection,
    rival: &impl Connection,
) -> Result<GroupMember, Error> {
    let registration = register(owner, ROOT, NAME, b"10.0.0.5:443").await?;
    println!("  billing registers at 10.0.0.5:443");
    say(client).await?;
    match register(rival, ROOT, NAME, b"10.0.0.6:443").await {
        Err(Error::NameTaken) => {
            println!("  a second billing instance is REFUSED: the name is taken")
        }
        Ok(_) => println!("  a second billing instance took the name (unexpected)"),
        Err(e) => return Err(e),
    }
    Ok(registration)
}

/// Prints what a client finds under the name.
async fn say(client: &impl Connection) -> Result<(), Error> {
    match lookup(client, ROOT, NAME).await? {
        Some(address) => println!(
            "  client looks up billing: {}",
            String::from_utf8_lossy(&address)
        ),
        None => println!("  client looks up billing: not registered"),
    }
    Ok(())
}
