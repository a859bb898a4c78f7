//! A device on a plant network that shares a conveyor with its peers and
//! stands for the cell's gateway.
//!
//! Runs on a Nucleo-F429ZI (STM32F429ZI, RMII Ethernet through the on-board
//! LAN8742A). It brings the network up and opens one ZooKeeper session to
//! the ensemble in [`config::ZK_SERVERS`], on which two recipes run side by
//! side:
//!
//! * the gateway election ([`gateway`]): the blue LED is lit while this
//!   device is the cell's gateway;
//! * the conveyor lock: round after round the device waits for the lock,
//!   drives the conveyor for a shift (the green LED blinking stands in for
//!   the motor), releases it and rests. The red LED is lit while the last
//!   round failed.
//!
//! The motor only runs while the lock is held *and not in doubt*: when the
//! connection to ZooKeeper drops, the lock may already belong to someone
//! else by the time the session is resumed, so the motor stops at the next
//! tick and starts again only once the lock is confirmed. The gateway
//! relays only while its leadership is not in doubt, for the same reason.
#![no_std]
#![no_main]

mod config;
mod gateway;

use core::fmt::Write as _;

use defmt::{error, info, unwrap, warn};
use embassy_executor::Spawner;
use embassy_futures::select::{select, Either};
use embassy_net::{Ipv4Address, Stack, StackResources, StaticConfigV4};
use embassy_stm32::eth::{Ethernet, GenericPhy, PacketQueue, Sma};
use embassy_stm32::gpio::{Level, Output, Speed};
use embassy_stm32::peripherals::{ETH, ETH_SMA, RNG};
use embassy_stm32::rng::{self, Rng};
use embassy_stm32::time::Hertz;
use embassy_stm32::{bind_interrupts, eth};
use embassy_time::{Duration, Instant, Timer};
use herdless_core::election::Election;
use herdless_core::lock::{Lock, LockEvent};
use herdless_core::naming::Guid;
use herdless_core::wire::SessionConfig;
use herdless_embassy::{Buffers, Error, RecipeId, TcpTransport, Zk};
use static_cell::StaticCell;
use {defmt_rtt as _, panic_probe as _};

use crate::config::{
    BACK_OFF, CONVEYOR_LOCK, GATEWAY_ELECTION, REST, SESSION_TIMEOUT_MS, SHIFT, STATIC_IPV4, TICK,
    ZK_SERVERS,
};
use crate::gateway::Gateway;

bind_interrupts!(struct Irqs {
    ETH => eth::InterruptHandler;
    HASH_RNG => rng::InterruptHandler<RNG>;
});

type Device = Ethernet<'static, ETH, GenericPhy<Sma<'static, ETH_SMA>>>;
type Transport = TcpTransport<'static, 'static>;
/// The driver: two recipes, and no watch table. The lock and the election
/// read again what they watch when the session resumes, so the table that
/// would set their watches again after a move to another server is not
/// needed, and its code and RAM are left out (see `Zk`'s docs).
type Driver<'a> = Zk<'a, Transport, 4, 0, 0>;

/// Sockets the stack keeps: the DHCP client and the ZooKeeper connection.
const SOCKETS: usize = 2;

#[embassy_executor::task]
async fn net_task(mut runner: embassy_net::Runner<'static, Device>) -> ! {
    runner.run().await
}

#[embassy_executor::main]
async fn main(spawner: Spawner) -> ! {
    let p = embassy_stm32::init(clocks());
    info!("herdless firmware on {}", embassy_stm32::uid::uid_hex());

    let motor = Output::new(p.PB0, Level::Low, Speed::Low);
    let mut fault_led = Output::new(p.PB14, Level::Low, Speed::Low);
    let gateway_led = Output::new(p.PB7, Level::Low, Speed::Low);
    let mut rng = Rng::new(p.RNG, Irqs);

    static PACKETS: StaticCell<PacketQueue<4, 4>> = StaticCell::new();
    let device = Ethernet::new(
        PACKETS.init(PacketQueue::new()),
        p.ETH,
        Irqs,
        p.PA1,  // REF_CLK
        p.PA7,  // CRS_DV
        p.PC4,  // RXD0
        p.PC5,  // RXD1
        p.PG13, // TXD0
        p.PB13, // TXD1
        p.PG11, // TX_EN
        mac_address(),
        p.ETH_SMA,
        p.PA2, // MDIO
        p.PC1, // MDC
    );

    let net_config = match STATIC_IPV4 {
        Some(fixed) => embassy_net::Config::ipv4_static(StaticConfigV4 {
            address: fixed.address,
            gateway: fixed.gateway,
            dns_servers: Default::default(),
        }),
        None => embassy_net::Config::dhcpv4(Default::default()),
    };
    // smoltcp draws TCP initial sequence numbers and ephemeral ports from
    // the seed: a constant one would make a rebooted device reuse the port
    // and sequence space of its previous connection, which the server may
    // still hold open.
    let seed = rng.next_u64();
    static RESOURCES: StaticCell<StackResources<SOCKETS>> = StaticCell::new();
    let (stack, runner) = embassy_net::new(
        device,
        net_config,
        RESOURCES.init(StackResources::new()),
        seed,
    );
    spawner.spawn(unwrap!(net_task(runner)));

    let address = wait_for_address(stack).await;

    static SOCKET_RX: StaticCell<[u8; 2048]> = StaticCell::new();
    static SOCKET_TX: StaticCell<[u8; 1024]> = StaticCell::new();
    let mut socket = embassy_net::tcp::TcpSocket::new(
        stack,
        SOCKET_RX.init([0; 2048]),
        SOCKET_TX.init([0; 1024]),
    );
    // A server that vanishes without a reset would otherwise leave a write
    // waiting for window space forever, and the driver with it; after this
    // long without an acknowledgement the socket gives up and the session
    // moves to the next server.
    socket.set_timeout(Some(Duration::from_millis(u64::from(SESSION_TIMEOUT_MS))));
    let transport = TcpTransport::new(socket, &ZK_SERVERS);

    // `rx` bounds the largest reply, a listing of the lock's or the
    // election's directory: about 64 bytes per device, so 2 KiB leaves room
    // for some thirty devices in the cell.
    static FRAME_RX: StaticCell<[u8; 2048]> = StaticCell::new();
    static FRAME_TX: StaticCell<[u8; 512]> = StaticCell::new();
    let buffers = Buffers::new(FRAME_RX.init([0; 2048]), FRAME_TX.init([0; 512]));
    // Declared before the driver, which borrows them for its whole life.
    let mut conveyor_lock: Lock = unwrap!(Lock::new(CONVEYOR_LOCK));
    let mut gateway_election: Election = unwrap!(Election::new(GATEWAY_ELECTION));
    // Each device its own order of servers, so that a fleet neither starts
    // on the first nor piles onto one when a server dies.
    let session =
        SessionConfig::new(ZK_SERVERS.len(), SESSION_TIMEOUT_MS).with_server_seed(rng.next_u32());

    // Operators (and the other devices) read who the gateway is, and where
    // to reach it, from the election's acknowledgement node.
    let mut data = heapless::String::new();
    let _ = write!(data, "{} {}", embassy_stm32::uid::uid_hex(), address);
    let parts = Parts {
        gateway_led,
        data,
        rng,
        motor,
    };
    let mut plant = Plant::new(
        Zk::new(transport, buffers, session),
        &mut conveyor_lock,
        &mut gateway_election,
        parts,
    );
    let election = plant.gateway.id();
    if let Err(e) = plant.zk.connect().await {
        restart(e).await;
    }
    info!(
        "ZooKeeper session {=i64:x}, timeout {=u32} ms",
        plant.zk.session_id(),
        plant.zk.negotiated_timeout_ms()
    );
    // A gateway cut off for longer than the session timeout has been
    // replaced for certain, even if it never hears of its session's expiry.
    let timeout = u64::from(plant.zk.negotiated_timeout_ms());
    unwrap!(plant.zk.recipe(election)).set_lost_after(Some(timeout));

    loop {
        match plant.round().await {
            Ok(()) => {
                fault_led.set_low();
                if let Err(e) = plant.idle(REST).await {
                    restart(e).await;
                }
            }
            Err(e @ Error::SessionOver(_)) => restart(e).await,
            Err(e) => {
                plant.motor.set_low();
                fault_led.set_high();
                warn!("round failed: {}", e);
                if let Err(e) = plant.idle(BACK_OFF).await {
                    restart(e).await;
                }
            }
        }
    }
}

/// The session, what runs on it, and what it controls.
struct Plant<'a> {
    zk: Driver<'a>,
    conveyor: RecipeId<Lock>,
    gateway: Gateway,
    rng: Rng<'static, RNG>,
    motor: Output<'static>,
}

/// What the plant controls besides the session.
struct Parts {
    gateway_led: Output<'static>,
    /// The acknowledgement's data: this device and its address.
    data: heapless::String<64>,
    rng: Rng<'static, RNG>,
    motor: Output<'static>,
}

impl<'a> Plant<'a> {
    /// Puts the recipes on the driver. Not async on purpose: the driver
    /// is borrowed while the recipes are added, and a borrowed local of the
    /// main task keeps its room there for good, so built here it is moved
    /// into the plant and the task holds one driver, not two (some 3.9 KB
    /// of RAM).
    fn new(
        mut zk: Driver<'a>,
        conveyor_lock: &'a mut Lock,
        gateway_election: &'a mut Election,
        parts: Parts,
    ) -> Plant<'a> {
        let conveyor = unwrap!(zk.add(conveyor_lock));
        let election = unwrap!(zk.add(gateway_election));
        Plant {
            zk,
            conveyor,
            gateway: Gateway::new(election, parts.gateway_led, parts.data),
            rng: parts.rng,
            motor: parts.motor,
        }
    }

    /// One round: wait for the lock, drive the conveyor for a shift,
    /// release.
    async fn round(&mut self) -> Result<(), Error> {
        info!("waiting for {=str}", CONVEYOR_LOCK);
        // Started on the recipe rather than with the handle's `acquire`,
        // which would leave the gateway untended for as long as the others
        // keep the conveyor.
        let guid = fresh_guid(&mut self.rng);
        self.zk.recipe(self.conveyor)?.acquire(guid)?;
        loop {
            match self.next_lock_event().await? {
                LockEvent::Acquired => break,
                LockEvent::NotAcquired(_) => return Err(Error::NotAcquired),
                LockEvent::Failed(e) => return Err(Error::Recipe(e)),
                LockEvent::Lost => return Err(Error::Lost),
                _ => {}
            }
        }
        info!("conveyor is ours");

        let mut left = SHIFT;
        while left.as_ticks() > 0 {
            let step = left.min(TICK);
            // `hold_while` fails with `Lost` as soon as the lock is gone for
            // sure; between ticks, `is_held` is false while it is in doubt.
            self.zk
                .handle(self.conveyor)
                .hold_while(Timer::after(step))
                .await?;
            self.gateway.tend(&mut self.zk, &mut self.rng)?;
            if self.zk.recipe(self.conveyor)?.is_held() {
                self.motor.toggle();
            } else {
                self.motor.set_low();
            }
            left -= step;
        }
        self.motor.set_low();

        // One round trip when connected; the gateway waits that long.
        self.zk.handle(self.conveyor).release().await?;
        info!("conveyor released");
        Ok(())
    }

    /// Runs the session until the conveyor lock has news, tending the
    /// gateway every tick meanwhile.
    async fn next_lock_event(&mut self) -> Result<LockEvent, Error> {
        loop {
            // Dropping `next_event` when the tick wins loses nothing: an
            // event stays in the recipe until it is returned.
            let next = select(
                self.zk.handle(self.conveyor).next_event(),
                Timer::after(TICK),
            )
            .await;
            self.gateway.tend(&mut self.zk, &mut self.rng)?;
            if let Either::First(event) = next {
                return event;
            }
        }
    }

    /// Keeps the session and the gateway going for `duration`: the server
    /// needs its pings, or the session expires while the device rests.
    async fn idle(&mut self, duration: Duration) -> Result<(), Error> {
        let until = Instant::now() + duration;
        loop {
            self.gateway.tend(&mut self.zk, &mut self.rng)?;
            let now = Instant::now();
            if now >= until {
                return Ok(());
            }
            self.zk.run_for((until - now).min(TICK)).await?;
        }
    }
}

/// The network is up once DHCP (or the static setting) gave an address;
/// connecting to the ensemble before that only burns through the servers.
async fn wait_for_address(stack: Stack<'static>) -> Ipv4Address {
    info!("waiting for the link and an address");
    loop {
        stack.wait_config_up().await;
        if let Some(config) = stack.config_v4() {
            info!("address {}", config.address);
            return config.address.address();
        }
    }
}

/// A session that is over for good (closed, or credentials refused) cannot
/// be reopened by the driver; a reboot starts from a clean network stack and
/// a new session, and leaves a trace in the log of why.
async fn restart(e: Error) -> ! {
    error!("ZooKeeper session over: {}; restarting", e);
    // Gives defmt-rtt a moment to hand the message to the probe.
    Timer::after(Duration::from_millis(100)).await;
    cortex_m::peripheral::SCB::sys_reset()
}

/// A fresh GUID for every lock attempt and campaign, from the hardware
/// RNG: a node left behind by an earlier attempt (its create's reply lost)
/// must never be taken for the current one's.
fn fresh_guid(rng: &mut Rng<'static, RNG>) -> Guid {
    let mut bytes = [0; 16];
    rng.fill_bytes(&mut bytes);
    Guid::from_random_bytes(bytes)
}

/// A MAC address that is stable across reboots and unique per chip, so a
/// fleet flashed with one image does not collide on the plant network and
/// DHCP hands each device the same lease back. It folds the 96-bit chip id
/// into five bytes behind a locally administered, unicast prefix.
fn mac_address() -> [u8; 6] {
    let uid = embassy_stm32::uid::uid();
    let mut mac = [0x02, 0, 0, 0, 0, 0];
    for (i, byte) in uid.iter().enumerate() {
        mac[1 + i % 5] ^= byte;
    }
    mac
}

/// 168 MHz from the 8 MHz clock the on-board ST-LINK feeds into HSE: the
/// highest system clock that still gives the RNG its 48 MHz (PLL Q) from
/// the same PLL. Ethernet only needs HCLK above 25 MHz.
fn clocks() -> embassy_stm32::Config {
    use embassy_stm32::rcc::{
        AHBPrescaler, APBPrescaler, Hse, HseMode, Pll, PllMul, PllPDiv, PllPreDiv, PllQDiv,
        PllSource, Sysclk,
    };
    let mut config = embassy_stm32::Config::default();
    config.rcc.hse = Some(Hse {
        freq: Hertz::mhz(8),
        mode: HseMode::Bypass,
    });
    config.rcc.pll_src = PllSource::HSE;
    // VCO = 8 MHz / 4 * 168 = 336 MHz; P: / 2 = 168 MHz; Q: / 7 = 48 MHz.
    config.rcc.pll = Some(Pll {
        prediv: PllPreDiv::DIV4,
        mul: PllMul::MUL168,
        divp: Some(PllPDiv::DIV2),
        divq: Some(PllQDiv::DIV7),
        divr: None,
    });
    config.rcc.sys = Sysclk::PLL1_P;
    config.rcc.ahb_pre = AHBPrescaler::DIV1;
    // APB1 at most 42 MHz, APB2 at most 84 MHz.
    config.rcc.apb1_pre = APBPrescaler::DIV4;
    config.rcc.apb2_pre = APBPrescaler::DIV2;
    config
}
