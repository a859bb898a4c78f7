//! Group membership on the driver: a member that joins and leaves, and an
//! observer of who is in a group.

use core::future::Future;

use herdless_core::member::{Member, MemberEvent};
use herdless_core::members;

use crate::error::Error;
use crate::handle::Handle;
use crate::transport::Transport;

impl<
        'z,
        'a,
        T: Transport,
        const K: usize,
        const WATCHES: usize,
        const WATCH_BYTES: usize,
        const D: usize,
        const N: usize,
    > Handle<'z, 'a, T, Member<D, N>, K, WATCHES, WATCH_BYTES>
{
    /// Joins the group with `data` and waits until the member node exists.
    /// Events of an earlier membership still unread are dropped.
    /// The member then stays in the group by itself: after a session
    /// expiry it re-joins on the next session (the recipe reports `Out`,
    /// then `Rejoined`, through [`next_event`](Self::next_event)).
    ///
    /// Not cancel-safe: a dropped call leaves the join going; call
    /// [`leave`](Self::leave) to undo it.
    pub async fn join(&mut self, data: &[u8]) -> Result<(), Error> {
        self.forget_past_rounds(Member::is_idle)?;
        self.recipe()?.join(data)?;
        loop {
            match self.next_event().await? {
                MemberEvent::Joined | MemberEvent::Rejoined => return Ok(()),
                MemberEvent::Failed(e) => return Err(Error::Recipe(e)),
                _ => continue,
            }
        }
    }

    /// Whether the member node is known to exist and the connection is up.
    pub fn is_in(&mut self) -> bool {
        self.recipe().is_ok_and(|m| m.is_in())
    }

    /// Leaves the group and waits until the member node is confirmed
    /// deleted (retried across connection losses).
    ///
    /// The member leaves when this is called; the future only waits.
    pub fn leave(
        &mut self,
    ) -> impl Future<Output = Result<(), Error>> + use<'_, 'z, 'a, T, K, WATCHES, WATCH_BYTES, D, N>
    {
        let asked = self.recipe().and_then(|member| Ok(member.leave()?));
        self.until_wound_up(asked, Member::is_idle, |event| match event {
            MemberEvent::Failed(e) => Some(Error::Recipe(e)),
            _ => None,
        })
    }
}

impl<
        T: Transport,
        const K: usize,
        const WATCHES: usize,
        const WATCH_BYTES: usize,
        const M: usize,
        const L: usize,
        const N: usize,
    > Handle<'_, '_, T, members::Observer<M, L, N>, K, WATCHES, WATCH_BYTES>
{
    /// Waits until the group's member list changes and returns how many
    /// joined and left since the last report (the first call starts the
    /// watch and returns the current members as joined). The names are in
    /// [`recipe`](Self::recipe)`()?.members()`, in name order. `(0, 0)`
    /// when the group directory does not exist (the watch then waits for
    /// it to be created).
    ///
    /// Cancel-safe. Stale and overflow reports are passed over: check
    /// `is_complete()` on the recipe where a large group matters.
    pub async fn changed(&mut self) -> Result<(u32, u32), Error> {
        self.recipe()?.watch();
        loop {
            match self.next_event().await? {
                members::ObserverEvent::Changed { joined, left } => return Ok((joined, left)),
                members::ObserverEvent::NoGroup => return Ok((0, 0)),
                members::ObserverEvent::Failed(e) => return Err(e.into()),
                _ => continue,
            }
        }
    }

    /// Whether `name` is in the group, as last read.
    pub fn contains(&mut self, name: &str) -> bool {
        self.recipe().is_ok_and(|m| m.contains(name))
    }
}
