//! Queues and priority queues on the driver: put items, take them.

use embassy_time::Duration;
use herdless_core::naming::Guid;
use herdless_core::queue::{Consumer, ConsumerEvent, Producer, ProducerEvent};

use crate::error::Error;
use crate::handle::Handle;
use crate::transport::Transport;

/// An item taken (or peeked) from a queue, borrowed from the consumer
/// (and so from the driver) until the next call on the driver.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Item<'c> {
    /// The item's data.
    pub data: &'c [u8],
    /// The item's node: its full path, as it was in the queue.
    pub node: &'c str,
    /// False when the delete's answer was lost and the item was gone
    /// afterwards: another consumer may have taken it too (at least once).
    pub certain: bool,
}

impl<
        'z,
        T: Transport,
        const K: usize,
        const WATCHES: usize,
        const WATCH_BYTES: usize,
        const D: usize,
        const N: usize,
    > Handle<'z, '_, T, Producer<D, N>, K, WATCHES, WATCH_BYTES>
{
    /// Puts `data` into the queue (with a `priority`, 0 first to 99 last,
    /// for a priority queue) and waits until the item exists; returns its
    /// node. `guid` must be fresh random bytes for every put (the hardware
    /// RNG): it finds the item again if the create's answer is lost.
    ///
    /// Takes the handle, so the node's name can borrow from the driver.
    /// Events of an earlier put still unread are dropped (the item of a
    /// dropped put stays in the queue).
    pub async fn put(
        mut self,
        guid: Guid,
        data: &[u8],
        priority: Option<u8>,
    ) -> Result<&'z str, Error> {
        self.forget_past_rounds(|producer| !producer.is_busy())?;
        self.recipe()?.put(guid, data, priority, false)?;
        loop {
            match self.next_event().await? {
                ProducerEvent::Put => return Ok(self.into_recipe()?.item()),
                ProducerEvent::Failed(e) => return Err(Error::Recipe(e)),
                _ => continue,
            }
        }
    }
}

impl<
        'z,
        T: Transport,
        const K: usize,
        const WATCHES: usize,
        const WATCH_BYTES: usize,
        const B: usize,
        const D: usize,
        const N: usize,
    > Handle<'z, '_, T, Consumer<B, D, N>, K, WATCHES, WATCH_BYTES>
{
    /// Takes the lowest item, waiting for one while the queue is empty.
    /// Takes the handle, so the item can borrow from the driver:
    /// `let item = zk.handle(jobs).take().await?;`.
    ///
    /// Not cancel-safe: a dropped call leaves the take going; call
    /// `cancel()` on the [`recipe`](Self::recipe) (which refuses once the
    /// item's delete is on its way). An item such a take went on to take
    /// is handed out by the next `take` or `take_timeout`, so it is not
    /// lost; other events of earlier calls still unread are dropped.
    pub async fn take(mut self) -> Result<Item<'z>, Error> {
        if let Some(certain) = self.taken_unread()? {
            return self.item(certain);
        }
        self.recipe()?.take(None)?;
        match self.until_done().await? {
            Some(certain) => self.item(certain),
            None => Err(Error::Recipe(herdless_core::Error::InvalidState)),
        }
    }

    /// Takes the lowest item, waiting at most `timeout` for one; `None` if
    /// none came. It looks once whatever the timeout: an item already there
    /// is taken even with a zero timeout. Hands out an item a dropped take
    /// took first, as [`take`](Self::take) does.
    pub async fn take_timeout(mut self, timeout: Duration) -> Result<Option<Item<'z>>, Error> {
        if let Some(certain) = self.taken_unread()? {
            return self.item(certain).map(Some);
        }
        let deadline = self.zk.deadline_in(timeout);
        self.recipe()?.take(Some(deadline))?;
        match self.until_done().await? {
            Some(certain) => self.item(certain).map(Some),
            None => Ok(None),
        }
    }

    /// Reads the lowest item without taking it; `None` if the queue is
    /// empty. Events of earlier calls still unread are dropped, an item a
    /// dropped take went on to take among them: hand that out with
    /// [`take`](Self::take) before peeking.
    pub async fn peek(mut self) -> Result<Option<Item<'z>>, Error> {
        self.taken_unread()?;
        self.recipe()?.peek()?;
        match self.until_done().await? {
            Some(_) => self.item(true).map(Some),
            None => Ok(None),
        }
    }

    /// Drops the events earlier calls left unread, while no take or peek
    /// runs: `Some(certain)` when the last of them says an item was taken
    /// (by a take dropped once its delete was on the way), still in
    /// [`Consumer::item`]. A call starting a new take or peek must not read
    /// them as its own outcome: a stale `Taken` would hand out the old
    /// item while the new take went on to take another, unseen.
    fn taken_unread(&mut self) -> Result<Option<bool>, Error> {
        let last = self.forget_past_rounds(|consumer| !consumer.is_busy())?;
        Ok(match last {
            Some(ConsumerEvent::Taken { certain }) => Some(certain),
            _ => None,
        })
    }

    /// `Some(certain)` for an item taken or peeked, `None` for an empty
    /// queue.
    async fn until_done(&mut self) -> Result<Option<bool>, Error> {
        loop {
            match self.next_event().await? {
                ConsumerEvent::Taken { certain } => return Ok(Some(certain)),
                ConsumerEvent::Peeked => return Ok(Some(true)),
                ConsumerEvent::Empty => return Ok(None),
                ConsumerEvent::Failed(e) => return Err(Error::Recipe(e)),
                _ => continue,
            }
        }
    }

    fn item(self, certain: bool) -> Result<Item<'z>, Error> {
        let consumer = self.into_recipe()?;
        Ok(Item {
            data: consumer.item(),
            node: consumer.item_name(),
            certain,
        })
    }
}
