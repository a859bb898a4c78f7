//! A recipe of a driver, borrowed with the driver so its async calls can
//! run the session.

use core::cell::Cell;
use core::future::{poll_fn, Future};
use core::pin::pin;
use core::task::Poll;

use herdless_core::wire::{DEFAULT_WATCHES, DEFAULT_WATCH_BYTES};
use herdless_core::Recipe;

use crate::error::Error;
use crate::transport::Transport;
use crate::zk::{RecipeId, Until, Zk};

/// One recipe of a [`Zk`] together with the driver, from [`Zk::handle`].
///
/// The recipe-specific calls (`acquire`, `release`, `campaign`, ...) are
/// methods of `Handle` for that recipe's type; the generic ones here read
/// the recipe's events while the session runs.
pub struct Handle<
    'z,
    'a,
    T: Transport,
    R,
    const K: usize,
    const WATCHES: usize = DEFAULT_WATCHES,
    const WATCH_BYTES: usize = DEFAULT_WATCH_BYTES,
> {
    pub(crate) zk: &'z mut Zk<'a, T, K, WATCHES, WATCH_BYTES>,
    pub(crate) id: RecipeId<R>,
}

impl<'a, T: Transport, const K: usize, const WATCHES: usize, const WATCH_BYTES: usize>
    Zk<'a, T, K, WATCHES, WATCH_BYTES>
{
    /// The recipe `id` names, with this driver, for its async calls.
    pub fn handle<R>(&mut self, id: RecipeId<R>) -> Handle<'_, 'a, T, R, K, WATCHES, WATCH_BYTES> {
        Handle { zk: self, id }
    }
}

impl<
        'z,
        'a,
        T: Transport,
        R: Recipe + 'static,
        const K: usize,
        const WATCHES: usize,
        const WATCH_BYTES: usize,
    > Handle<'z, 'a, T, R, K, WATCHES, WATCH_BYTES>
{
    /// The recipe itself.
    pub fn recipe(&mut self) -> Result<&mut R, Error> {
        self.zk.recipe(self.id)
    }

    /// The recipe itself, for as long as the driver is borrowed (for calls
    /// that hand out data borrowed from the recipe).
    pub(crate) fn into_recipe(self) -> Result<&'z mut R, Error> {
        self.zk.recipe(self.id)
    }

    /// The driver.
    pub fn zk(&mut self) -> &mut Zk<'a, T, K, WATCHES, WATCH_BYTES> {
        self.zk
    }

    /// The recipe's next event if one is waiting, without running the
    /// session.
    pub fn poll_event(&mut self) -> Result<Option<R::Event>, Error> {
        Ok(self.recipe()?.poll_event())
    }

    /// Runs the session until the recipe has an event, and returns it.
    ///
    /// Cancel-safe: an event is only taken from the recipe when returned.
    pub async fn next_event(&mut self) -> Result<R::Event, Error> {
        let id = self.id;
        self.zk.recipe(id)?;
        let mut event = None;
        self.zk
            .drive(Until::Done(&mut |zk| {
                event = zk.recipe(id).ok().and_then(|r| r.poll_event());
                event.is_some()
            }))
            .await?;
        // Always an event: `drive` ends well only once `done` found one.
        event.ok_or(Error::Lost)
    }

    /// Drops the events an earlier round left unread, if the recipe is
    /// `idle` (that round is over), and returns the last of them (that
    /// round's outcome): a call starting a new round waits for its own
    /// round's events, and an old `Lost` would end that wait with an error
    /// while the new round went on, to lead or hold unbeknownst to the
    /// application. A recipe that is not idle keeps its events (the call
    /// is refused).
    pub(crate) fn forget_past_rounds(
        &mut self,
        idle: impl FnOnce(&R) -> bool,
    ) -> Result<Option<R::Event>, Error> {
        let recipe = self.recipe()?;
        let mut last = None;
        if idle(recipe) {
            while let Some(event) = recipe.poll_event() {
                last = Some(event);
            }
        }
        Ok(last)
    }

    /// Readies the recipe for a call that starts a round: waits until the
    /// last round, if it is `winding_up` (deleting its node after a loss,
    /// say), is `idle`, failing with what `failed` makes of its outcome,
    /// then drops its unread events. Refusing instead would have a program
    /// that starts again on `Lost` spin on the refusal without ever
    /// driving the session that finishes the cleanup.
    pub(crate) async fn start_round(
        &mut self,
        idle: impl Fn(&R) -> bool + Copy,
        winding_up: impl FnOnce(&R) -> bool,
        failed: impl FnOnce(R::Event) -> Option<Error>,
    ) -> Result<(), Error> {
        if winding_up(self.recipe()?) {
            self.until_wound_up(Ok(()), idle, failed).await?;
        }
        self.forget_past_rounds(idle)?;
        Ok(())
    }

    /// Runs the session until the recipe is `idle` again, after a call
    /// that winds its round up (resign, release, cancel, leave), and
    /// answers the error `failed` makes of the event the round ended with;
    /// `asked` is how asking the recipe to wind up went, and an error
    /// there is the answer at once. (Taken here so that those calls can
    /// return this future instead of being `async fn`s around it, whose
    /// state machines measured 200 B more herdless code in the STM32
    /// firmware, scripts/firmware-size.sh.)
    ///
    /// Idleness, not an event, ends the wait: a `Lost` still unread may
    /// have been reported before the wind-up was asked for, while the
    /// round's cleanup still runs, and returning on it would return before
    /// the cleanup the call promises. The round's events are all consumed;
    /// the one reported last (when it went idle) is its outcome.
    pub(crate) async fn until_wound_up(
        &mut self,
        asked: Result<(), Error>,
        idle: impl Fn(&R) -> bool,
        failed: impl FnOnce(R::Event) -> Option<Error>,
    ) -> Result<(), Error> {
        asked?;
        let id = self.id;
        self.zk
            .drive(Until::Done(&mut |zk| {
                zk.recipe(id).ok().is_some_and(|r| idle(r))
            }))
            .await?;
        // The same loop as `forget_past_rounds` without its idle check;
        // calling that instead measured 230 B more herdless code in the
        // STM32 firmware (scripts/firmware-size.sh), whose `release` runs
        // this.
        let recipe = self.recipe()?;
        let mut outcome = None;
        while let Some(event) = recipe.poll_event() {
            outcome = Some(event);
        }
        outcome.and_then(failed).map_or(Ok(()), Err)
    }

    /// Runs `work` while driving the session, and stops it (dropping
    /// `work`) with the error `stop` makes of one of the recipe's events;
    /// the events `stop` passes over (`None`) are consumed.
    ///
    /// `work` is first polled once the timers a pause left due have fired
    /// and the session has been driven, and once `in_doubt` no longer
    /// holds of the recipe: a driver left alone for longer than the
    /// session's read timeout (the application busy elsewhere) has timers
    /// due whose firing may end what `work` relies on, and `work` must not
    /// start on a lock or a leadership that is gone, or may be, until the
    /// session answers. One drive does both, the wait and the watch: a
    /// second drive loop for the wait cost 556 B of flash in the STM32
    /// firmware.
    pub(crate) async fn work_unless<F: Future>(
        &mut self,
        work: F,
        in_doubt: fn(&R) -> bool,
        mut stop: impl FnMut(R::Event) -> Option<Error>,
    ) -> Result<F::Output, Error> {
        let id = self.id;
        self.zk.fire_timers();
        let sure = Cell::new(false);
        let why = Cell::new(None);
        let mut done = |zk: &mut Zk<'a, T, K, WATCHES, WATCH_BYTES>| {
            let Ok(recipe) = zk.recipe(id) else {
                return false;
            };
            while let Some(event) = recipe.poll_event() {
                if let Some(e) = stop(event) {
                    why.set(Some(e));
                    return true;
                }
            }
            sure.set(sure.get() || !in_doubt(recipe));
            false
        };
        let mut stopped = pin!(self.zk.drive(Until::Done(&mut done)));
        let mut work = pin!(work);
        // The work is polled after the drive, every time, so it sees the
        // gate as the drive left it: nothing but that drive opens the
        // gate, and the drive's own waker wakes both. One `poll_fn` rather
        // than `select` over the drive and a second one for the gated
        // work: 108 B less flash in the STM32 firmware, 6 B of it herdless
        // (scripts/firmware-size.sh).
        poll_fn(|cx| {
            if let Poll::Ready(stopped) = stopped.as_mut().poll(cx) {
                // `done` ends the drive only with a reason kept in `why`.
                return Poll::Ready(stopped.and(Err(why.get().unwrap_or(Error::Lost))));
            }
            if sure.get() {
                work.as_mut().poll(cx).map(Ok)
            } else {
                Poll::Pending
            }
        })
        .await
    }
}

/// An attempt's outcome as "did it come": `false` when it gave up
/// ([`Error::NotAcquired`]), other errors passed on.
pub(crate) fn granted(outcome: Result<(), Error>) -> Result<bool, Error> {
    match outcome {
        Ok(()) => Ok(true),
        Err(Error::NotAcquired) => Ok(false),
        Err(e) => Err(e),
    }
}
