//! The gateway role: one device of the cell relays for the others (to the
//! plant's upstream systems, in a real installation); every device stands
//! as a candidate so that another takes over when the gateway goes.
//!
//! The device runs the conveyor rounds at the same time, on the same
//! session, so it cannot sit in the election handle's `campaign` (which
//! waits until this device leads). Instead the election runs as a plain
//! recipe on the driver, and [`Gateway::tend`] reads its events between the
//! steps of the other work; the session advances meanwhile whatever the
//! driver is doing, so nothing is missed, only read up to one tick late.

use defmt::{info, warn};
use embassy_stm32::gpio::Output;
use embassy_stm32::peripherals::RNG;
use embassy_stm32::rng::Rng;
use embassy_time::Instant;
use herdless_core::election::{self, Election, ElectionEvent, ElectionState};
use herdless_embassy::{Error, RecipeId};

use crate::config::BACK_OFF;
use crate::{fresh_guid, Driver};

/// This device's part in the gateway election.
pub struct Gateway {
    id: RecipeId<Election>,
    /// Lit while this device is the gateway and not in doubt.
    led: Output<'static>,
    /// What the leader's acknowledgement node will say about this device.
    data: heapless::String<64>,
    /// When to volunteer (again): the device is out of the election then.
    join_at: Option<Instant>,
}

impl Gateway {
    /// A device that volunteers at the first [`tend`](Self::tend).
    pub fn new(id: RecipeId<Election>, led: Output<'static>, data: heapless::String<64>) -> Self {
        Gateway {
            id,
            led,
            data,
            join_at: Some(Instant::now()),
        }
    }

    /// The election on the driver.
    pub fn id(&self) -> RecipeId<Election> {
        self.id
    }

    /// Takes in what the election reported since the last call, and
    /// volunteers when the device is out of the election. Call it at least
    /// every tick: leadership can be lost while the device is busy with the
    /// conveyor, and a gateway that does not know it lost must stop relaying
    /// promptly.
    pub fn tend(&mut self, zk: &mut Driver<'_>, rng: &mut Rng<'static, RNG>) -> Result<(), Error> {
        while let Some(event) = zk.handle(self.id).poll_event()? {
            match event {
                ElectionEvent::Leading => info!("gateway: this device leads the cell"),
                ElectionEvent::Following { leader } => {
                    info!(
                        "gateway: standing by; candidate {=i32} leads",
                        leader.value()
                    );
                }
                ElectionEvent::Suspended => warn!("gateway: connection lost, relaying paused"),
                ElectionEvent::Resumed => info!("gateway: leadership confirmed, relaying again"),
                ElectionEvent::Lost | ElectionEvent::Resigned | ElectionEvent::TimedOut => {
                    // Out of the election: back in at once, behind whoever
                    // took over, so the cell always has a successor ready.
                    warn!(
                        "gateway: out of the election ({}), volunteering again",
                        event
                    );
                    self.join_at = Some(Instant::now());
                }
                ElectionEvent::Failed(e) => {
                    warn!("gateway: campaign failed: {}", e);
                    self.join_at = Some(Instant::now() + BACK_OFF);
                }
                _ => {}
            }
        }

        let election = zk.recipe(self.id)?;
        self.led.set_level(election.is_leading().into());
        if self.join_at.is_some_and(|at| Instant::now() >= at)
            && election.state() == ElectionState::Idle
        {
            match election.campaign(fresh_guid(rng), self.data.as_bytes()) {
                Ok(()) => self.join_at = None,
                // No session at the moment (it expired and the next one is
                // not up yet): try again later.
                Err(election::Error::SessionEnded) => {
                    self.join_at = Some(Instant::now() + BACK_OFF)
                }
                Err(e) => {
                    warn!("gateway: cannot volunteer: {}", e);
                    self.join_at = Some(Instant::now() + BACK_OFF);
                }
            }
        }
        Ok(())
    }
}
