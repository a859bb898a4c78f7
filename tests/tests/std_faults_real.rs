//! herdless-std on a network that fails without closing: a half-open link
//! (the proxy swallows traffic, nobody hears of a failure) while requests are
//! in flight. zookeeper-client fails those requests with its own errors (an
//! IO error, "no response from connection in …"), which carry no ZooKeeper
//! code; they are connection losses, and the recipes recover from them.
//!
//! Each test starts its own server on a free loopback port.

use std::time::{Duration, Instant};

use herdless_std::{Client, Lock};
use herdless_tests::{Proxy, ZkServer};

/// Long enough that the client's own deadline fires well before the server
/// expires the session: the session must survive the stall.
const SESSION: Duration = Duration::from_secs(8);

async fn direct(server: &ZkServer) -> Client {
    herdless_std::connect(&server.addr(), Duration::from_secs(30))
        .await
        .expect("connect to the test server")
}

async fn behind_proxy(server: &ZkServer) -> (Client, Proxy) {
    let proxy = Proxy::start(server.port());
    let client = herdless_std::connect(&proxy.addr(), SESSION)
        .await
        .expect("connect through the proxy");
    (client, proxy)
}

async fn children(client: &Client, dir: &str) -> Vec<String> {
    client.list_children(dir).await.unwrap_or_default()
}

#[tokio::test]
async fn a_release_in_flight_on_a_half_open_link_is_retried_until_confirmed() {
    let server = ZkServer::start();
    let (client, proxy) = behind_proxy(&server).await;
    let observer = direct(&server).await;
    let lock = Lock::new(&client, "/locks/stall-release").unwrap();
    let guard = lock.acquire().await.unwrap();
    let session = client.session_id();
    proxy.stall();
    let started = Instant::now();
    let released = tokio::time::timeout(SESSION * 2, guard.release()).await;
    println!(
        "release across a half-open link took {:?}",
        started.elapsed()
    );
    released
        .expect("the release finished")
        .expect("the release is retried, never an error");
    assert_eq!(client.session_id(), session, "the session survived");
    assert!(children(&observer, "/locks/stall-release").await.is_empty());
    // The lock is usable again on the same session.
    let again = tokio::time::timeout(SESSION, lock.acquire()).await;
    again.unwrap().unwrap().release().await.unwrap();
}

#[tokio::test]
async fn an_acquire_in_flight_on_a_half_open_link_acquires_once() {
    let server = ZkServer::start();
    let (client, proxy) = behind_proxy(&server).await;
    let observer = direct(&server).await;
    let lock = Lock::new(&client, "/locks/stall-acquire").unwrap();
    // The directory exists, so the first request out is the create.
    lock.acquire().await.unwrap().release().await.unwrap();
    proxy.stall();
    let started = Instant::now();
    let guard = tokio::time::timeout(SESSION * 2, lock.acquire())
        .await
        .expect("the acquire finished")
        .expect("the acquire recovers, never an error");
    println!(
        "acquire across a half-open link took {:?}",
        started.elapsed()
    );
    assert_eq!(
        children(&observer, "/locks/stall-acquire").await.len(),
        1,
        "one node: a create that may have been applied is found, not repeated"
    );
    guard.release().await.unwrap();
    assert!(children(&observer, "/locks/stall-acquire").await.is_empty());
}
