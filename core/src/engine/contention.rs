//! One contender's place in a directory of ephemeral sequential nodes: what
//! the lock (every kind) and the election candidate share.
//!
//! Both create `<dir>/<guid-prefix><sequence>` and list the directory in one
//! flight, find their node by GUID when a create's answer was lost, stand
//! behind the next-lower node they wait for, and go in when none is left.
//! The decisions each recipe makes on top (report `Acquired` or confirm the
//! owner and write an acknowledgement first) stay in the recipe; the state
//! and the one-pass reading of listings live here, once.

use core::fmt::Write;

use heapless::String;

use crate::engine::ancestors;
use crate::naming::{Flavour, Guid, NodeKind};
use crate::path::{self, PathError};
use crate::{Acl, Children, CreateMode, Error, Request, Sequence, Version, ZkError};

/// The widest sequence suffix a server writes: `-2147483648` after the
/// counter wrapped.
const WIDEST_SUFFIX: usize = 11;

/// A contender in `dir`: its own node, once known, and the node it waits for.
pub(crate) struct Contention<const N: usize> {
    dir: String<N>,
    flavour: Flavour,
    kind: NodeKind,
    guid: Guid,
    /// Full path of the own node, once known (else empty). Kept apart from
    /// `own`, not inside it, to save the tag's padding.
    own_path: String<N>,
    /// What is known of the own node: `Known` exactly when `own_path` is
    /// set.
    own: Own,
    /// Full path of the watched predecessor.
    predecessor: String<N>,
    /// The predecessor was the only node ahead: its deletion means first in
    /// line, with no listing needed (sequence numbers only grow).
    predecessor_is_lowest: bool,
    /// Bounds re-creating a missing directory.
    pub(crate) directory_retries: ancestors::Retries,
}

/// What a contender knows of its own node in the current attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Own {
    /// None was made, or the one made is gone.
    Absent,
    /// A create was sent and its answer lost (or garbled): it may have been
    /// applied, and only a listing searched by GUID can tell.
    InDoubt,
    /// Made, with this sequence.
    Known(Sequence),
}

/// Where the own node stands in a listing, read in one pass.
pub(crate) struct Standing<'c> {
    /// The own node is in the listing.
    pub(crate) present: bool,
    /// The lowest sequence among the nodes waited for, the own one included.
    pub(crate) lowest: Sequence,
    /// The next-lower node waited for, and whether it is the only one lower.
    pub(crate) predecessor: Option<(&'c str, bool)>,
}

/// What a refused create means for the contender.
pub(crate) enum CreateRefusal {
    /// The directory is missing (and the retry bound allows another try):
    /// create the ancestors, then the own node and the listing again.
    NoDirectory,
    /// The connection or the session is gone: a loss like any other
    /// request's (a lost create is marked as possibly applied).
    Lost,
    /// ZooKeeper refused it for good.
    Refused(ZkError),
}

impl<const N: usize> Contention<N> {
    /// A contender of `kind` in `dir` (not the root), naming its nodes in
    /// `flavour`.
    pub(crate) fn new(dir: &str, flavour: Flavour, kind: NodeKind) -> Result<Self, Error> {
        path::validate(dir)?;
        if dir == "/" {
            return Err(Error::Path(PathError::BadName));
        }
        let mut stored = String::new();
        path::concat_into(&mut stored, &[dir])?;
        Ok(Contention {
            dir: stored,
            flavour,
            kind,
            guid: Guid::default(),
            own_path: String::new(),
            own: Own::Absent,
            predecessor: String::new(),
            predecessor_is_lowest: false,
            directory_retries: ancestors::Retries::default(),
        })
    }

    pub(crate) fn dir(&self) -> &str {
        &self.dir
    }

    pub(crate) fn flavour(&self) -> Flavour {
        self.flavour
    }

    /// The longest name the own node can get with `guid`, once checked that
    /// its path fits the buffers.
    pub(crate) fn name_room(&self, guid: &Guid) -> Result<usize, Error> {
        let mut measure = path::Measure::default();
        let _ = self.flavour.write_prefix(self.kind, guid, &mut measure);
        let name_len = measure.0 + WIDEST_SUFFIX;
        let needed = self.dir.len() + 1 + name_len;
        if needed > N {
            return Err(Error::Path(PathError::TooLong {
                needed,
                capacity: N,
            }));
        }
        Ok(name_len)
    }

    /// A new attempt with `guid`: nothing is known of a node yet.
    pub(crate) fn begin(&mut self, guid: Guid) {
        self.guid = guid;
        self.forget_own();
        self.directory_retries.reset();
    }

    /// What is known of the own node.
    pub(crate) fn own(&self) -> Own {
        self.own
    }

    pub(crate) fn has_own(&self) -> bool {
        matches!(self.own, Own::Known(_))
    }

    pub(crate) fn own_path(&self) -> Option<&str> {
        self.has_own().then_some(self.own_path.as_str())
    }

    pub(crate) fn own_name(&self) -> Option<&str> {
        self.own_path().map(path::basename)
    }

    pub(crate) fn own_sequence(&self) -> Option<Sequence> {
        match self.own {
            Own::Known(seq) => Some(seq),
            _ => None,
        }
    }

    /// The own node is gone (deleted, or its session ended).
    pub(crate) fn forget_own(&mut self) {
        self.own_path.clear();
        self.own = Own::Absent;
    }

    /// Hands over the own node's path (to delete it later), forgetting it.
    pub(crate) fn take_own_path(&mut self) -> Option<String<N>> {
        self.own_sequence()?;
        self.own = Own::Absent;
        Some(core::mem::take(&mut self.own_path))
    }

    /// A fresh GUID for a new node of the same attempt, derived from the
    /// caller's (the core has no RNG): a node of an earlier try is never
    /// mistaken for the new one (CURATOR-498).
    pub(crate) fn next_guid(&mut self) {
        let mut tail = [0u8; 4];
        tail.copy_from_slice(&self.guid.0[12..]);
        let bumped = u32::from_be_bytes(tail).wrapping_add(1).to_be_bytes();
        self.guid.0[12..].copy_from_slice(&bumped);
    }

    /// A search by GUID is over (or the own node is confirmed): no create
    /// of this attempt is in doubt any more.
    pub(crate) fn settle(&mut self) {
        if self.own == Own::InDoubt {
            self.own = Own::Absent;
        }
    }

    /// The answer to a create could not be used (a name without the GUID,
    /// or one too long to store): whatever it made can only be found by
    /// GUID.
    pub(crate) fn doubt_create(&mut self) {
        self.forget_own();
        self.own = Own::InDoubt;
    }

    /// Whether `path` is the own node's full path.
    pub(crate) fn is_own_path(&self, path: &str) -> bool {
        self.own_path() == Some(path)
    }

    /// Stores `name` as the own node if it is this attempt's (prefix and
    /// GUID) and its path fits the buffers.
    pub(crate) fn store_own(&mut self, name: &str) -> bool {
        let Some(seq) = self.flavour.own_sequence(self.kind, &self.guid, name) else {
            return false;
        };
        if path::join_into(&mut self.own_path, &self.dir, name).is_err() {
            self.forget_own();
            return false;
        }
        self.own = Own::Known(seq);
        true
    }

    /// One pass over the children, looking for the own node by GUID.
    pub(crate) fn find_own(&mut self, children: Children<'_>) -> bool {
        for name in children {
            if self.flavour.is_own(self.kind, &self.guid, name) {
                return self.store_own(name);
            }
        }
        false
    }

    /// Reads a listing in one pass: whether the own node is there, and the
    /// next-lower of the nodes `waits_for` gives a sequence to. `None` while
    /// the own node is unknown.
    pub(crate) fn stand<'c>(
        &self,
        children: Children<'c>,
        waits_for: impl Fn(&str) -> Option<Sequence>,
    ) -> Option<Standing<'c>> {
        let own_seq = &self.own_sequence()?;
        let own_name = path::basename(&self.own_path);
        let mut present = false;
        let mut lower = 0usize;
        let mut lowest = *own_seq;
        let mut predecessor: Option<(&str, Sequence)> = None;
        for name in children {
            if name == own_name {
                present = true;
                continue;
            }
            let Some(seq) = waits_for(name) else {
                continue;
            };
            if seq.precedes(lowest) {
                lowest = seq;
            }
            if seq.precedes(*own_seq) {
                lower += 1;
                if predecessor.is_none_or(|(_, best)| best.precedes(seq)) {
                    predecessor = Some((name, seq));
                }
            }
        }
        Some(Standing {
            present,
            lowest,
            predecessor: predecessor.map(|(name, _)| (name, lower == 1)),
        })
    }

    /// Waits for `name` from now on; `only_lower` if it is the only node
    /// ahead.
    pub(crate) fn wait_for(&mut self, name: &str, only_lower: bool) -> Result<(), PathError> {
        path::join_into(&mut self.predecessor, &self.dir, name)?;
        self.predecessor_is_lowest = only_lower;
        Ok(())
    }

    /// Full path of the node waited for.
    pub(crate) fn predecessor(&self) -> &str {
        &self.predecessor
    }

    /// Whether the node waited for was the only one ahead.
    pub(crate) fn predecessor_is_lowest(&self) -> bool {
        self.predecessor_is_lowest
    }

    /// What a refused create means; a lost one is marked as possibly
    /// applied.
    pub(crate) fn create_refused(&mut self, e: ZkError) -> CreateRefusal {
        if e == ZkError::NoNode && self.directory_retries.take() {
            CreateRefusal::NoDirectory
        } else if e.is_connection_loss() || e.is_session_gone() {
            if e.is_connection_loss() {
                self.create_lost();
            }
            CreateRefusal::Lost
        } else {
            CreateRefusal::Refused(e)
        }
    }

    /// The requests of a create in flight were lost with the connection:
    /// unless the own node is known, the create may have been applied.
    pub(crate) fn create_lost(&mut self) {
        if !self.has_own() {
            self.own = Own::InDoubt;
        }
    }

    /// The create of the own node, holding `data`: its path
    /// (`<dir>/<prefix>`, the server appends the sequence) is written into
    /// `scratch`. Cannot fail once [`name_room`](Self::name_room) accepted
    /// the GUID.
    pub(crate) fn create_request<'a>(
        &self,
        scratch: &'a mut String<N>,
        data: &'a [u8],
        acl: Acl<'a>,
    ) -> Request<'a> {
        scratch.clear();
        // heapless' `String` refuses a write that does not fit whole.
        let _ = write!(scratch, "{}/", self.dir);
        let _ = self.flavour.write_prefix(self.kind, &self.guid, scratch);
        Request::Create {
            path: scratch,
            data,
            acl,
            mode: CreateMode::EphemeralSequential,
        }
    }

    /// The listing of the directory, without a watch: a waiter watches its
    /// predecessor alone.
    pub(crate) fn list_request(&self) -> Request<'_> {
        Request::GetChildren {
            path: &self.dir,
            watch: false,
        }
    }

    /// The watch on the node waited for: `getData`, not `exists`. On a node
    /// that is already gone `getData` registers nothing, while `exists`
    /// would leave a creation watch behind on a name that will never be
    /// created again (CURATOR-107).
    pub(crate) fn predecessor_watch(&self) -> Request<'_> {
        Request::GetData {
            path: &self.predecessor,
            watch: true,
        }
    }

    /// A read of the own node with a watch: its deletion by anyone is heard.
    pub(crate) fn own_watch(&self) -> Request<'_> {
        Request::GetData {
            path: self.own_path().unwrap_or(""),
            watch: true,
        }
    }

    /// Whether the own node still exists (no watch).
    pub(crate) fn own_exists(&self) -> Request<'_> {
        Request::Exists {
            path: self.own_path().unwrap_or(""),
            watch: false,
        }
    }

    /// The delete of the own node, whatever its version.
    pub(crate) fn own_delete(&self) -> Request<'_> {
        Request::Delete {
            path: self.own_path().unwrap_or(""),
            version: Version::Any,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const G: Guid = Guid([7; 16]);

    fn contention() -> Contention<128> {
        let mut c = Contention::new("/d", Flavour::Recipes, NodeKind::Lock).unwrap();
        c.begin(G);
        c
    }

    fn name(seq: u32) -> String<128> {
        let mut s = String::new();
        Flavour::Recipes
            .write_prefix(NodeKind::Lock, &G, &mut s)
            .unwrap();
        write!(s, "{seq:010}").unwrap();
        s
    }

    #[test]
    fn the_root_and_invalid_directories_are_refused() {
        assert!(Contention::<128>::new("/", Flavour::Recipes, NodeKind::Lock).is_err());
        assert!(Contention::<128>::new("d", Flavour::Recipes, NodeKind::Lock).is_err());
        assert!(Contention::<8>::new("/far/too/long", Flavour::Recipes, NodeKind::Lock).is_err());
    }

    #[test]
    fn a_guid_whose_path_would_not_fit_is_refused_before_anything_is_created() {
        let c = Contention::<40>::new("/d", Flavour::Recipes, NodeKind::Lock).unwrap();
        assert!(matches!(
            c.name_room(&G),
            Err(Error::Path(PathError::TooLong { capacity: 40, .. }))
        ));
        assert_eq!(contention().name_room(&G).unwrap(), name(0).len() + 1);
    }

    #[test]
    fn only_a_name_carrying_this_attempts_guid_is_stored_as_the_own_node() {
        let mut c = contention();
        assert!(!c.store_own("0c1d-lock-0000000001"));
        assert!(!c.has_own());
        assert!(c.store_own(&name(4)));
        assert_eq!(c.own_name(), Some(name(4).as_str()));
        assert!(c.is_own_path(&path::join::<128>("/d", &name(4)).unwrap()));
        assert!(!c.is_own_path(&name(4)));
    }

    #[test]
    fn the_next_guid_finds_none_of_the_earlier_nodes() {
        let mut c = contention();
        let first = name(1);
        c.next_guid();
        assert!(
            !c.store_own(&first),
            "a node of the earlier GUID is not ours"
        );
        let mut s: String<128> = String::new();
        Flavour::Recipes
            .write_prefix(NodeKind::Lock, &c.guid, &mut s)
            .unwrap();
        s.push_str("0000000002").unwrap();
        assert!(c.store_own(&s));
        let expected = path::join::<128>("/d", &s).unwrap();
        assert_eq!(c.take_own_path(), Some(expected));
        assert!(!c.has_own());
    }

    #[test]
    fn a_listing_gives_the_next_lower_node_and_whether_it_is_the_only_one() {
        let mut c = contention();
        let empty: [&str; 0] = [];
        assert!(c.stand(Children::new(&&empty[..]), |_| None).is_none());
        let own = name(5);
        assert!(c.find_own(Children::new(&&["x-lock-0000000001", own.as_str()][..])));
        let names = [
            "a-lock-0000000001",
            "b-lock-0000000003",
            own.as_str(),
            "c-lock-0000000007",
        ];
        let waits = |n: &str| crate::naming::contender_sequence(NodeKind::Lock, n);
        let all = &names[..];
        let s = c.stand(Children::new(&all), waits).unwrap();
        assert!(s.present);
        assert_eq!(s.predecessor, Some(("b-lock-0000000003", false)));
        assert_eq!(s.lowest, Sequence::new(1));
        let from_b = &names[1..];
        let s = c.stand(Children::new(&from_b), waits).unwrap();
        assert_eq!(s.predecessor, Some(("b-lock-0000000003", true)));
        let from_c = &names[3..];
        let s = c.stand(Children::new(&from_c), waits).unwrap();
        assert!(!s.present && s.predecessor.is_none());
    }

    #[test]
    fn a_create_refused_for_a_missing_directory_is_retried_a_bounded_number_of_times() {
        let mut c = contention();
        let mut retries = 0;
        while matches!(
            c.create_refused(ZkError::NoNode),
            CreateRefusal::NoDirectory
        ) {
            retries += 1;
            assert!(retries < 100, "unbounded");
        }
        assert!(retries > 0);
        assert_eq!(c.own(), Own::Absent);
        assert!(matches!(
            c.create_refused(ZkError::ConnectionLoss),
            CreateRefusal::Lost
        ));
        assert_eq!(c.own(), Own::InDoubt, "a lost create may have been applied");
        c.settle();
        assert_eq!(c.own(), Own::Absent);
        c.begin(G);
        assert!(matches!(
            c.create_refused(ZkError::NoNode),
            CreateRefusal::NoDirectory
        ));
        assert!(matches!(
            c.create_refused(ZkError::NoAuth),
            CreateRefusal::Refused(ZkError::NoAuth)
        ));
        assert!(matches!(
            c.create_refused(ZkError::SessionExpired),
            CreateRefusal::Lost
        ));
    }
}
