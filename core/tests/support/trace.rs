//! Recorded traces of one recipe's inputs: made once on the in-memory
//! ZooKeeper with other contenders beside it, then replayed into a fresh
//! recipe. The replay drives the recipe exactly as a transport does, so the
//! zero-allocation test (`no_heap.rs`) and the micro-benchmarks
//! (`benches/recipe_inputs.rs`) measure the same inputs.
#![allow(dead_code)] // each target uses a different part

use herdless_core::election::{Election, ElectionEvent};
use herdless_core::lock::{Lock, LockEvent};
use herdless_core::naming::Guid;
use herdless_core::sim::{Delivery, SessionId, SimZk};
use herdless_core::{Instant, Recipe, RequestId, SessionEvent};

/// What the application asks of a recipe between inputs.
pub trait Command<R> {
    /// Asks it of `recipe`.
    fn apply(&self, recipe: &mut R);
}

/// One thing that happened to the recorded recipe.
#[derive(Clone, Debug)]
pub enum Input<C> {
    /// The application asked something of it.
    Command(C),
    /// The server sent it something (a reply, a notification, a session
    /// change).
    Delivery(Delivery),
}

/// A recorded run of one recipe: its inputs, and what it said back.
pub struct Trace<R: Recipe, C> {
    /// Every input, in order.
    pub inputs: Vec<Input<C>>,
    /// The ids of the requests it sent, in order.
    pub sent: Vec<RequestId>,
    /// The events it reported, in order.
    pub events: Vec<R::Event>,
}

/// A contender's two commands: go in line (`acquire`, `campaign`) with a
/// GUID, and leave it (`release`, `resign`).
#[derive(Clone, Copy, Debug)]
pub enum Turn {
    /// Contend with this GUID.
    Contend(Guid),
    /// Leave.
    Leave,
}

impl Command<Lock> for Turn {
    fn apply(&self, lock: &mut Lock) {
        let _ = match *self {
            Turn::Contend(guid) => lock.acquire(guid),
            Turn::Leave => lock.release(),
        };
    }
}

impl Command<Election> for Turn {
    fn apply(&self, candidate: &mut Election) {
        let _ = match *self {
            Turn::Contend(guid) => candidate.campaign(guid, b"bench"),
            Turn::Leave => candidate.resign(),
        };
    }
}

/// Hands one delivery to `recipe`, as the drivers do.
pub fn handle<R: Recipe>(recipe: &mut R, delivery: &Delivery) {
    let now = Instant::ZERO;
    match delivery {
        Delivery::Reply(id, reply) => reply.with_reply(|r| recipe.handle_reply(now, *id, r)),
        Delivery::Watch(..) => {
            if let Some(event) = delivery.as_watch() {
                recipe.handle_watch(now, event);
            }
        }
        Delivery::Session(event) => recipe.handle_session(now, *event),
    }
}

/// Hands one recorded input to `recipe`.
fn apply<R: Recipe, C: Command<R>>(recipe: &mut R, input: &Input<C>) {
    match input {
        Input::Command(command) => command.apply(recipe),
        Input::Delivery(delivery) => handle(recipe, delivery),
    }
}

/// Replays `inputs` into `recipe`, draining it after each as a driver does:
/// requests, then events (into `events`, which must have room to spare for
/// a replay without allocating), then the timer. Returns the ids of the
/// requests it sent, up to the room `sent` has.
pub fn replay<R: Recipe, C: Command<R>>(
    recipe: &mut R,
    inputs: &[Input<C>],
    sent: &mut Vec<RequestId>,
    events: &mut Vec<R::Event>,
) {
    for input in inputs {
        apply(recipe, input);
        while let Some(out) = recipe.poll_request() {
            if sent.len() < sent.capacity() {
                sent.push(out.id);
            }
            std::hint::black_box(&out.request);
        }
        while let Some(event) = recipe.poll_event() {
            if events.len() < events.capacity() {
                events.push(event);
            }
        }
        std::hint::black_box(recipe.poll_timeout());
    }
}

/// `contenders` recipes on one in-memory server, each turning `turn` into
/// its next command whenever it reports an event, until the first (the
/// recorded one) has made `rounds` commands. Requests are applied and
/// deliveries handed over round-robin, one session at a time.
fn record<R: Recipe, C: Command<R> + Clone>(
    make: impl Fn() -> R,
    contenders: usize,
    rounds: usize,
    first: impl Fn(u32) -> C,
    turn: impl Fn(&R::Event, u32) -> Option<C>,
) -> Trace<R, C> {
    let mut zk = SimZk::new(7);
    let mut peers: Vec<(R, SessionId)> = (0..contenders)
        .map(|_| (make(), zk.open_session()))
        .collect();
    let mut trace = Trace {
        inputs: Vec::new(),
        sent: Vec::new(),
        events: Vec::new(),
    };
    let mut commands = 0usize;
    let mut next_guid = 0u32;
    let mut pending: Vec<Option<C>> = vec![None; contenders];
    for (i, (recipe, session)) in peers.iter_mut().enumerate() {
        let connected = Delivery::Session(SessionEvent::Connected {
            session_id: *session,
        });
        handle(recipe, &connected);
        next_guid += 1;
        pending[i] = Some(first(next_guid));
        if i == 0 {
            trace.inputs.push(Input::Delivery(connected));
        }
    }
    let mut idle_turns = 0;
    while commands < rounds && idle_turns < 3 {
        let mut progressed = false;
        for (i, (recipe, session)) in peers.iter_mut().enumerate() {
            let mut inputs: Vec<Input<C>> = Vec::new();
            let command = pending[i].take();
            // Each input is drained at once, as the replay drains it.
            let mut feed = |recipe: &mut R, zk: &mut SimZk, input: Input<C>| {
                apply(recipe, &input);
                drain_into(
                    recipe,
                    zk,
                    *session,
                    i,
                    &mut trace,
                    &mut pending,
                    &mut next_guid,
                    &turn,
                );
                inputs.push(input);
            };
            if let Some(command) = command {
                feed(recipe, &mut zk, Input::Command(command));
            }
            while zk.apply_next(*session) {}
            while let Some(delivery) = zk.next_delivery(*session) {
                feed(recipe, &mut zk, Input::Delivery(delivery));
            }
            progressed |= !inputs.is_empty();
            if i == 0 {
                commands += inputs
                    .iter()
                    .filter(|input| matches!(input, Input::Command(_)))
                    .count();
                trace.inputs.extend(inputs);
            }
        }
        idle_turns = if progressed { 0 } else { idle_turns + 1 };
    }
    trace
}

/// Sends the recipe's requests and collects its events, turning each event
/// into the contender's next command.
#[allow(clippy::too_many_arguments)]
fn drain_into<R: Recipe, C>(
    recipe: &mut R,
    zk: &mut SimZk,
    session: SessionId,
    index: usize,
    trace: &mut Trace<R, C>,
    pending: &mut [Option<C>],
    next_guid: &mut u32,
    turn: &impl Fn(&R::Event, u32) -> Option<C>,
) {
    while let Some(out) = recipe.poll_request() {
        zk.submit(session, out.id, &out.request);
        if index == 0 {
            trace.sent.push(out.id);
        }
    }
    while let Some(event) = recipe.poll_event() {
        *next_guid += 1;
        if let Some(command) = turn(&event, *next_guid) {
            pending[index] = Some(command);
        }
        if index == 0 {
            trace.events.push(event);
        }
    }
}

/// A GUID made from a counter (the core takes its random bytes from the
/// caller; a trace needs none).
fn guid(n: u32) -> Guid {
    let mut bytes = [0x5a; 16];
    bytes[12..].copy_from_slice(&n.to_be_bytes());
    Guid::from_random_bytes(bytes)
}

/// A fresh lock on the traced directory.
pub fn new_lock() -> Lock {
    Lock::new("/bench/lock").expect("a valid directory")
}

/// A fresh candidate in the traced directory.
pub fn new_candidate() -> Election {
    Election::new("/bench/election").expect("a valid directory")
}

/// `rounds` acquisitions and releases of one lock among `contenders`
/// contenders that do the same.
pub fn lock_trace(contenders: usize, rounds: usize) -> Trace<Lock, Turn> {
    record(
        new_lock,
        contenders,
        rounds,
        |n| Turn::Contend(guid(n)),
        |event, n| match event {
            LockEvent::Acquired => Some(Turn::Leave),
            LockEvent::Released => Some(Turn::Contend(guid(n))),
            _ => None,
        },
    )
}

/// `rounds` campaigns and resignations of one candidate among
/// `contenders` candidates that do the same.
pub fn election_trace(contenders: usize, rounds: usize) -> Trace<Election, Turn> {
    record(
        new_candidate,
        contenders,
        rounds,
        |n| Turn::Contend(guid(n)),
        |event, n| match event {
            ElectionEvent::Leading => Some(Turn::Leave),
            ElectionEvent::Resigned => Some(Turn::Contend(guid(n))),
            _ => None,
        },
    )
}
