//! A private network for tests that run a real TCP/IP stack (embassy-net) on
//! TAP devices.
//!
//! [`Netns::create`] makes a network namespace of its own with a bridge at
//! [`Netns::HOST_ADDR`] and one persistent TAP device per simulated device,
//! attached to the bridge. A ZooKeeper server started inside the namespace
//! (see [`Netns::run_inside`]) listens on the bridge address (and loopback), and each
//! device's smoltcp stack talks to it through its TAP device. Nothing of this
//! is visible outside the namespace, so the 10.42.0.0/24 addresses never
//! reach a real network. Dropping the [`Netns`] deletes the namespace, which
//! removes its bridge and TAP devices with it.
//!
//! Creating one needs root (or `CAP_NET_ADMIN`), `/dev/net/tun` and the
//! `ip` tool of iproute2; [`Netns::create`] says which is missing instead of
//! failing half-way, so a test can report itself as skipped.

use std::net::Ipv4Addr;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};

/// The environment variable that tells a test it already runs inside the
/// namespace of the named [`Netns`].
pub const INSIDE_ENV: &str = "HERDLESS_NETNS";

/// The bridge's name inside each namespace.
const BRIDGE: &str = "hlbr0";

/// The bridge's MAC address: locally administered, apart from the
/// devices' `02:00:00:00:42:<device>`.
const BRIDGE_MAC: &str = "02:00:00:00:42:fe";

/// A network namespace with a bridge and TAP devices, deleted on drop.
#[derive(Debug)]
pub struct Netns {
    name: String,
    taps: usize,
}

impl Netns {
    /// The bridge's address inside the namespace, where servers listen.
    pub const HOST_ADDR: Ipv4Addr = Ipv4Addr::new(10, 42, 0, 1);

    /// The prefix length of the namespace's subnet.
    pub const PREFIX_LEN: u8 = 24;

    /// Why a namespace cannot be created on this machine, if it cannot.
    pub fn unavailable() -> Option<String> {
        if !Path::new("/dev/net/tun").exists() {
            return Some("/dev/net/tun does not exist".into());
        }
        match Command::new("id").arg("-u").output() {
            Ok(out) if String::from_utf8_lossy(&out.stdout).trim() == "0" => {}
            _ => return Some("not running as root (creating a namespace needs it)".into()),
        }
        if Command::new("ip")
            .arg("-V")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .map_or(true, |s| !s.success())
        {
            return Some("the `ip` tool of iproute2 is not installed".into());
        }
        None
    }

    /// Creates a namespace with `taps` TAP devices (`hltap0`, `hltap1`, ...)
    /// on a bridge at [`Netns::HOST_ADDR`], loopback up.
    ///
    /// Returns why not when the machine cannot (see [`Netns::unavailable`])
    /// or a step fails; a half-made namespace is removed again.
    pub fn create(taps: usize) -> Result<Netns, String> {
        if let Some(why) = Netns::unavailable() {
            return Err(why);
        }
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let name = format!(
            "herdless-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        ip(&["netns", "add", &name])?;
        // From here on, dropping removes whatever was made.
        let netns = Netns { name, taps };
        let host = format!("{}/{}", Netns::HOST_ADDR, Netns::PREFIX_LEN);
        netns.ip_in(&["link", "set", "lo", "up"])?;
        // A MAC address of its own: a bridge otherwise takes the lowest of
        // its ports', and detaching that port (`set_tap_attached`) would
        // change the server's MAC under the devices, whose smoltcp keeps
        // the old one for a minute (see the README's notes on smoltcp).
        netns.ip_in(&[
            "link", "add", BRIDGE, "address", BRIDGE_MAC, "type", "bridge",
        ])?;
        netns.ip_in(&["addr", "add", &host, "dev", BRIDGE])?;
        netns.ip_in(&["link", "set", BRIDGE, "up"])?;
        for i in 0..taps {
            let tap = Netns::tap_name(i);
            netns.ip_in(&["tuntap", "add", "dev", &tap, "mode", "tap"])?;
            netns.ip_in(&["link", "set", &tap, "master", BRIDGE])?;
            netns.ip_in(&["link", "set", &tap, "up"])?;
        }
        Ok(netns)
    }

    /// The namespace's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// How many TAP devices it has.
    pub fn taps(&self) -> usize {
        self.taps
    }

    /// The name of TAP device `i`.
    pub fn tap_name(i: usize) -> String {
        format!("hltap{i}")
    }

    /// The address device `i` uses on its TAP device.
    pub fn device_addr(i: usize) -> Ipv4Addr {
        let last = u8::try_from(i + 2).expect("fewer than 250 devices");
        Ipv4Addr::new(10, 42, 0, last)
    }

    /// A further address of the bridge for server `i`, added by
    /// [`set_bridge_addr`]: one per server, so that a server's machine can
    /// vanish from the network without the others.
    pub fn server_addr(i: usize) -> Ipv4Addr {
        let last = u8::try_from(i + 11).expect("fewer than 240 servers");
        Ipv4Addr::new(10, 42, 0, last)
    }

    /// Has the namespace's own TCP (the servers' side) wait at least
    /// `ms` milliseconds before it sends unacknowledged bytes to a device
    /// again (the route's `rto_min`; Linux's default is 200 ms), so that a
    /// test can tell a device's own reset of a connection from one its
    /// stack sends in answer to such a resend.
    pub fn set_resend_delay_ms(&self, ms: u32) -> Result<(), String> {
        let subnet = format!(
            "{}/{}",
            Ipv4Addr::from(u32::from(Netns::HOST_ADDR) & !(u32::MAX >> Netns::PREFIX_LEN)),
            Netns::PREFIX_LEN
        );
        let host = Netns::HOST_ADDR.to_string();
        let rto = format!("{ms}ms");
        self.ip_in(&[
            "route", "change", &subnet, "dev", BRIDGE, "proto", "kernel", "scope", "link", "src",
            &host, "rto_min", &rto,
        ])
    }

    /// `command` run inside the namespace (through `ip netns exec`), with
    /// [`INSIDE_ENV`] set to the namespace's name.
    pub fn run_inside(&self, program: &Path, args: &[&str]) -> std::io::Result<Output> {
        Command::new("ip")
            .args(["netns", "exec", &self.name])
            .arg(program)
            .args(args)
            .env(INSIDE_ENV, &self.name)
            .output()
    }

    fn ip_in(&self, args: &[&str]) -> Result<(), String> {
        let mut all = vec!["-n", self.name.as_str()];
        all.extend_from_slice(args);
        ip(&all)
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        // Deleting the namespace takes its bridge and TAP devices with it.
        let _ = ip(&["netns", "del", &self.name]);
    }
}

/// From a test running inside its namespace (through
/// [`Netns::run_inside`]): attaches TAP device `i` to that namespace's
/// bridge again, or detaches it (`attached` false). Detached, the device
/// is cut off: what it sends reaches nobody and nothing reaches it, while
/// its own side of the link stays up.
///
/// Fails outside a namespace made by [`Netns::create`].
pub fn set_tap_attached(i: usize, attached: bool) -> Result<(), String> {
    let name = inside_name()?;
    let tap = Netns::tap_name(i);
    let master: &[&str] = if attached {
        &["master", BRIDGE]
    } else {
        &["nomaster"]
    };
    let mut args = vec!["-n", name.as_str(), "link", "set", tap.as_str()];
    args.extend_from_slice(master);
    ip(&args)
}

/// The name of the namespace this test runs inside, or why none.
fn inside_name() -> Result<String, String> {
    std::env::var(INSIDE_ENV).map_err(|_| "only inside a test's own network namespace".to_owned())
}

/// From a test running inside its namespace (through
/// [`Netns::run_inside`]): gives that namespace's bridge, the servers' side
/// of the network, the MAC address `mac` (`02:00:00:00:42:fd`, say), as a
/// replaced machine or a moved address would.
///
/// Fails outside a namespace made by [`Netns::create`].
pub fn set_bridge_mac(mac: &str) -> Result<(), String> {
    let name = inside_name()?;
    ip(&["-n", &name, "link", "set", BRIDGE, "address", mac])
}

/// From a test running inside its namespace (through
/// [`Netns::run_inside`]): adds `addr` to that namespace's bridge (`up`) or
/// removes it. Removed, the address answers nothing any more, not even
/// ARP, and what the namespace's sockets bound to it send is dropped: the
/// machine behind it is gone from the network.
///
/// Fails outside a namespace made by [`Netns::create`], so that a test can
/// never change the machine's own network.
pub fn set_bridge_addr(addr: Ipv4Addr, up: bool) -> Result<(), String> {
    let name = inside_name()?;
    let cidr = format!("{addr}/{}", Netns::PREFIX_LEN);
    let verb = if up { "add" } else { "del" };
    ip(&["-n", &name, "addr", verb, &cidr, "dev", BRIDGE])
}

fn ip(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip")
        .args(args)
        .output()
        .map_err(|e| format!("ip {}: {e}", args.join(" ")))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "ip {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_addresses_are_in_the_namespace_subnet() {
        assert_eq!(Netns::device_addr(0), Ipv4Addr::new(10, 42, 0, 2));
        assert_eq!(Netns::device_addr(2), Ipv4Addr::new(10, 42, 0, 4));
        assert_ne!(Netns::device_addr(0), Netns::HOST_ADDR);
    }

    #[test]
    fn server_addresses_are_in_the_subnet_apart_from_the_devices() {
        assert_eq!(Netns::server_addr(0), Ipv4Addr::new(10, 42, 0, 11));
        assert!((0..3).all(|i| Netns::server_addr(i) != Netns::HOST_ADDR
            && (0..3).all(|d| Netns::server_addr(i) != Netns::device_addr(d))));
    }

    #[test]
    fn bridge_changes_are_refused_outside_a_namespace() {
        assert!(std::env::var_os(INSIDE_ENV).is_none());
        let refused = set_bridge_addr(Netns::server_addr(0), true).unwrap_err();
        assert!(refused.contains("only inside"), "{refused}");
        let refused = set_tap_attached(0, false).unwrap_err();
        assert!(refused.contains("only inside"), "{refused}");
        let refused = set_bridge_mac("02:00:00:00:42:fd").unwrap_err();
        assert!(refused.contains("only inside"), "{refused}");
    }

    #[test]
    fn creates_and_removes_a_namespace_when_possible() {
        if let Some(why) = Netns::unavailable() {
            eprintln!("SKIPPED creates_and_removes_a_namespace_when_possible: {why}");
            return;
        }
        let name = {
            let netns = Netns::create(2).expect("create a namespace");
            let links = Command::new("ip")
                .args(["-n", netns.name(), "-o", "link"])
                .output()
                .expect("list links");
            let links = String::from_utf8_lossy(&links.stdout);
            assert!(
                links.contains("hltap0") && links.contains("hltap1"),
                "{links}"
            );
            netns.name().to_owned()
        };
        let list = Command::new("ip").args(["netns", "list"]).output().unwrap();
        assert!(!String::from_utf8_lossy(&list.stdout).contains(&name));
    }
}
