//! The unbounded channels between a driver and its handles: commands into
//! the recipe's task, events out of it.
//!
//! futures-channel's rather than tokio's: every waiting contender holds
//! two of them for as long as it waits, and a tokio channel's first
//! allocation is a 32-slot block beside a cache-padded shared state
//! (1,056 B for the commands, 1,312 B for a lock's events, measured with
//! DHAT), where futures-channel's is its shared state and one empty queue
//! node (about 100 B). Messages are few and far between on these
//! channels (a handful per acquisition), so the node allocated per message
//! costs nothing that shows.
//!
//! Receive with [`StreamExt::next`](futures::StreamExt::next), which is
//! cancel-safe like tokio's `recv`.

pub(crate) use futures::channel::mpsc::{
    unbounded, UnboundedReceiver as Receiver, UnboundedSender as Sender,
};
