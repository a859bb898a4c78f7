//! Site settings: everything an integrator changes to put the device on
//! another plant network. The values here are placeholders.

use embassy_net::{IpAddress, IpEndpoint, Ipv4Address, Ipv4Cidr};
use embassy_time::Duration;

/// The ZooKeeper ensemble, in the order the session tries them after a
/// failure. List every voting member: a device that only knows one server
/// cannot ride out that server's restart, and the session resumes on any of
/// them with the same id and ephemeral nodes.
pub const ZK_SERVERS: [IpEndpoint; 3] = [
    zk_server(10, 20, 0, 11),
    zk_server(10, 20, 0, 12),
    zk_server(10, 20, 0, 13),
];

const fn zk_server(a: u8, b: u8, c: u8, d: u8) -> IpEndpoint {
    IpEndpoint::new(IpAddress::Ipv4(Ipv4Address::new(a, b, c, d)), 2181)
}

/// The session timeout asked for, in milliseconds. A device cut off from
/// the ensemble declares the connection dead after two thirds of it and
/// stops the conveyor, while the others get the lock only once the server
/// expires the session, after all of it: that margin keeps two devices from
/// driving the conveyor at once. Shorter hands over sooner after a crash,
/// longer rides out longer network hiccups; the servers clamp it to
/// 4..40 s by default.
pub const SESSION_TIMEOUT_MS: u32 = 6_000;

/// The lock on the shared conveyor. Every device that can drive it contends
/// here; Curator or Kazoo clients on the same path take part in the same
/// queue.
pub const CONVEYOR_LOCK: &str = "/plant/locks/conveyor";

/// The election for the cell's gateway. Observers (a dashboard, the
/// upstream systems) read `<dir>/leader` to find the gateway.
pub const GATEWAY_ELECTION: &str = "/plant/election/gateway";

/// How long the device drives the conveyor once it holds the lock.
pub const SHIFT: Duration = Duration::from_secs(10);

/// How often the device checks, while working, that the lock is not in
/// doubt (the conveyor stops within this long of a connection loss), and
/// reads the gateway election's news while busy with the conveyor.
pub const TICK: Duration = Duration::from_millis(250);

/// The pause between shifts, so that waiting devices get their turn and the
/// log shows the hand-over.
pub const REST: Duration = Duration::from_secs(5);

/// How long to wait before retrying after a failed round.
pub const BACK_OFF: Duration = Duration::from_secs(2);

/// A fixed address for networks without DHCP; `None` asks DHCP. The values
/// in the comment show the shape.
pub const STATIC_IPV4: Option<StaticIpv4> = None;
// pub const STATIC_IPV4: Option<StaticIpv4> = Some(StaticIpv4 {
//     address: Ipv4Cidr::new(Ipv4Address::new(10, 20, 1, 50), 16),
//     gateway: Some(Ipv4Address::new(10, 20, 0, 1)),
// });

/// A fixed IPv4 configuration (the servers are reached by address, so no
/// DNS).
pub struct StaticIpv4 {
    /// The device's address and the subnet's prefix length.
    pub address: Ipv4Cidr,
    /// The router towards the ensemble, if it is on another subnet.
    pub gateway: Option<Ipv4Address>,
}
