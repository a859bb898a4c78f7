//! Queues and priority queues on tokio.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use herdless_core::queue::{Consumer, ConsumerEvent, Producer, ProducerEvent};
use tokio::sync::Mutex;

use crate::driver::channel;
use crate::driver::undo::Undo;
use crate::driver::{self, Counters, DriverHandle, Source};
use crate::{Connection, Error};

/// Largest item, in bytes (64 KiB), that [`Queue::put`] writes and
/// [`Queue::take`] and [`Queue::peek`] read. A larger item written by
/// another client (Curator, Kazoo, `zkCli.sh`) is passed over, not taken:
/// it stays in the queue for a consumer that can hold it, a warning
/// names its node (`tracing`), and the take goes on to the next item.
pub const MAX_ITEM: usize = 64 * 1024;

type CoreProducer = Producer<MAX_ITEM, 512>;
type CoreConsumer = Consumer<32, MAX_ITEM, 512>;

/// An item taken from a queue.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Item {
    /// The item's data.
    pub data: Vec<u8>,
    /// The item's node: its full path, as it was in the queue.
    pub node: String,
    /// False when the delete's answer was lost and the item was gone
    /// afterwards: another consumer may have taken it too (at least once).
    pub certain: bool,
}

/// What a driver reports back for one operation.
enum Outcome {
    Put(String),
    Taken(Item),
    Peeked(Item),
    Empty,
    Failed(Error),
}

/// A queue (or priority queue) at a directory: put, take, peek.
///
/// Each handle runs one producer and one consumer over the connection; its
/// operations run one at a time (use several handles for concurrency).
///
/// ```no_run
/// # async fn run(client: herdless_std::Client) -> Result<(), herdless_std::Error> {
/// use std::time::Duration;
/// use herdless_std::queue::Queue;
///
/// let queue = Queue::new(&client, "/jobs").await?;
/// queue.put(b"resize img-7").await?;
/// let item = queue.take().await?;                  // waits for an item
/// assert_eq!(item.data, b"resize img-7");
/// let none = queue.take_timeout(Duration::from_millis(100)).await?;
/// assert!(none.is_none());
/// # Ok(()) }
/// ```
pub struct Queue {
    /// Where the GUIDs of its items come from.
    source: Source,
    producer: DriverHandle<CoreProducer>,
    consumer: DriverHandle<CoreConsumer>,
    produced: Mutex<channel::Receiver<Outcome>>,
    consumed: Mutex<channel::Receiver<Outcome>>,
    dir: String,
    priority: bool,
}

impl fmt::Debug for Queue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Queue")
            .field("dir", &self.dir)
            .field("priority", &self.priority)
            .finish()
    }
}

impl Queue {
    /// The queue at `dir`, created with its ancestors if missing.
    pub async fn new(conn: &impl Connection, dir: &str) -> Result<Queue, Error> {
        Self::open(conn, dir, false).await
    }

    /// The priority queue at `dir`: [`put_with_priority`] orders items,
    /// and the consumer re-reads the queue on every change so an urgent item
    /// added later is taken first.
    ///
    /// [`put_with_priority`]: Queue::put_with_priority
    pub async fn priority(conn: &impl Connection, dir: &str) -> Result<Queue, Error> {
        Self::open(conn, dir, true).await
    }

    async fn open(conn: &impl Connection, dir: &str, priority: bool) -> Result<Queue, Error> {
        let queue = Self::spawn(conn, dir, priority)?;
        let acl = conn.acl();
        conn.source()
            .across(
                None,
                |backend| async move { backend.ensure_dir(dir, acl).await },
            )
            .await?;
        Ok(queue)
    }

    /// Builds the cores and hands them to their drivers. Each core holds a
    /// 64 KiB item buffer: built here, outside any future, they never sit
    /// in a caller's poll frame (`Queue::new` overflowed a 2 MiB thread
    /// stack when they did). The drivers send nothing until asked, so the
    /// directory is made after, and a bad path fails before any request.
    #[inline(never)]
    fn spawn(conn: &impl Connection, dir: &str, priority: bool) -> Result<Queue, Error> {
        let acl = conn.acl();
        let producer = boxed(|| CoreProducer::new(dir).map(|p| p.with_acl(acl)))?;
        let consumer = boxed(|| {
            if priority {
                CoreConsumer::priority(dir)
            } else {
                CoreConsumer::new(dir)
            }
        })?;
        let (produced_tx, produced_rx) = channel::unbounded();
        let (consumed_tx, consumed_rx) = channel::unbounded();
        let producer = driver::spawn_on(
            conn.source(),
            producer,
            Arc::new(Counters::default()),
            move |p: &CoreProducer, event| {
                let outcome = match event {
                    ProducerEvent::Put => Outcome::Put(p.item().to_owned()),
                    ProducerEvent::Failed(e) => Outcome::Failed(e.into()),
                    _ => return,
                };
                let _ = produced_tx.unbounded_send(outcome);
            },
            |p: &CoreProducer| !p.is_busy(),
        );
        let mut passed_over = String::new();
        let consumer = driver::spawn_on(
            conn.source(),
            consumer,
            Arc::new(Counters::default()),
            move |c: &CoreConsumer, event| {
                if c.passed_over() != passed_over {
                    passed_over = c.passed_over().to_owned();
                    tracing::warn!(
                        node = passed_over.as_str(),
                        limit = MAX_ITEM,
                        "queue item over the size limit passed over: left in the queue"
                    );
                }
                let item = |certain| Item {
                    data: c.item().to_vec(),
                    node: c.item_name().to_owned(),
                    certain,
                };
                let outcome = match event {
                    ConsumerEvent::Taken { certain } => Outcome::Taken(item(certain)),
                    ConsumerEvent::Peeked => Outcome::Peeked(item(true)),
                    ConsumerEvent::Empty => Outcome::Empty,
                    ConsumerEvent::Failed(e) => Outcome::Failed(e.into()),
                    _ => return,
                };
                let _ = consumed_tx.unbounded_send(outcome);
            },
            |c: &CoreConsumer| !c.is_busy(),
        );
        Ok(Queue {
            source: conn.source(),
            producer,
            consumer,
            produced: Mutex::new(produced_rx),
            consumed: Mutex::new(consumed_rx),
            dir: dir.to_owned(),
            priority,
        })
    }

    /// Adds a persistent item; returns its node. At least once: if the
    /// create's answer is lost and a consumer takes the item before it is
    /// found again, it is added a second time.
    pub async fn put(&self, data: &[u8]) -> Result<String, Error> {
        self.put_item(data, None, false).await
    }

    /// Adds an ephemeral item (it goes with this session, as the recipes
    /// page describes).
    pub async fn put_ephemeral(&self, data: &[u8]) -> Result<String, Error> {
        self.put_item(data, None, true).await
    }

    /// Adds an item with a priority: 0 is taken first, 99 last.
    pub async fn put_with_priority(&self, data: &[u8], priority: u8) -> Result<String, Error> {
        self.put_item(data, Some(priority), false).await
    }

    async fn put_item(
        &self,
        data: &[u8],
        priority: Option<u8>,
        ephemeral: bool,
    ) -> Result<String, Error> {
        let mut produced = self.produced.lock().await;
        // Outcomes of puts whose futures were dropped are stale.
        while produced.try_recv().is_ok() {}
        let guid = self.source.backend().guid();
        let data = data.to_vec();
        self.producer
            .call(move |p: &mut CoreProducer| p.put(guid, &data, priority, ephemeral))
            .await??;
        match produced.next().await.ok_or(Error::DriverGone)? {
            Outcome::Put(node) => Ok(node),
            Outcome::Failed(e) => Err(e),
            _ => Err(Error::InvalidState),
        }
    }

    /// Takes the lowest item, waiting for one.
    ///
    /// Cancel-safe up to the delete: a dropped take that has not yet sent
    /// its delete leaves the item in the queue; one whose delete is on its
    /// way finishes in the background and the item is gone (taken, with
    /// nobody to hand it to: drop takes only under a deadline you can
    /// afford, or use [`take_timeout`](Queue::take_timeout)).
    pub async fn take(&self) -> Result<Item, Error> {
        match self.consume(Op::Take(None)).await? {
            Outcome::Taken(item) => Ok(item),
            Outcome::Failed(e) => Err(e),
            _ => Err(Error::InvalidState),
        }
    }

    /// Takes the lowest item, waiting at most `timeout`; `None` if none came.
    /// As Curator's timed `poll`, it looks once whatever the timeout: an
    /// item already there is taken even with a zero timeout.
    pub async fn take_timeout(&self, timeout: Duration) -> Result<Option<Item>, Error> {
        match self.consume(Op::Take(Some(timeout))).await? {
            Outcome::Taken(item) => Ok(Some(item)),
            Outcome::Empty => Ok(None),
            Outcome::Failed(e) => Err(e),
            _ => Err(Error::InvalidState),
        }
    }

    /// Reads the lowest item without taking it; `None` if the queue is
    /// empty.
    pub async fn peek(&self) -> Result<Option<Item>, Error> {
        match self.consume(Op::Peek).await? {
            Outcome::Peeked(item) => Ok(Some(item)),
            Outcome::Empty => Ok(None),
            Outcome::Failed(e) => Err(e),
            _ => Err(Error::InvalidState),
        }
    }

    async fn consume(&self, op: Op) -> Result<Outcome, Error> {
        let mut consumed = self.consumed.lock().await;
        // Outcomes of operations whose futures were dropped are stale.
        while consumed.try_recv().is_ok() {}
        let deadline = match op {
            Op::Take(Some(timeout)) => Some(self.consumer.deadline_in(timeout)),
            _ => None,
        };
        self.consumer
            .call(move |c: &mut CoreConsumer| match op {
                Op::Peek => c.peek(),
                Op::Take(_) => c.take(deadline),
            })
            .await??;
        let undo = Undo::new(&self.consumer, |c: &mut CoreConsumer| {
            c.cancel();
        });
        let outcome = consumed.next().await.ok_or(Error::DriverGone);
        undo.disarm();
        outcome
    }
}

#[derive(Clone, Copy)]
enum Op {
    Take(Option<Duration>),
    Peek,
}

/// Builds a core straight into a box, in a frame of its own, so that the
/// caller's frame holds no copy of its 64 KiB item buffer.
#[inline(never)]
fn boxed<T, E>(make: impl FnOnce() -> Result<T, E>) -> Result<Box<T>, E> {
    make().map(Box::new)
}
