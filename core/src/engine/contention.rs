//! One contender's place in a directory of ephemeral sequential nodes: the
//! lock's (every kind, and the election's candidate, built on the lock).
//!
//! Both create `<dir>/<guid-prefix><sequence>` and list the directory in one
//! flight, find their node by GUID when a create's answer was lost, stand
//! behind the next-lower node they wait for, and go in when none is left.
//! The decisions made on top (the lock's steps, the election's
//! acknowledgement over them) stay in the recipes; the state and the
//! one-pass reading of listings live here, once.

use heapless::String;

use crate::engine::ancestors;
use crate::engine::contender_op::Op;
use crate::naming::{Flavour, Guid, NodeKind};
use crate::path::{self, PathError};
use crate::{Acl, CreateMode, Error, Request, RequestId, Sequence, Version, ZkError};

/// The widest sequence suffix a server writes: `-2147483648` after the
/// counter wrapped.
const WIDEST_SUFFIX: usize = 11;

/// The longest name a node of `kind` named in `flavour` can get.
fn longest_name(flavour: Flavour, kind: NodeKind) -> usize {
    flavour.prefix_len(kind) + WIDEST_SUFFIX
}

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
    /// The listing being read, if its last part has not come yet.
    scan: Option<Scan>,
    /// Searches for a create in doubt begun by winding up in this attempt.
    searches: u8,
}

/// How many searches for a create in doubt winding up may begin in one
/// attempt: each follows a failure, a search whose listing was refused or
/// unreadable among them.
const MAX_SEARCHES: u8 = 8;

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

/// Where the own node stands in a listing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Standing {
    /// The own node is in the listing.
    pub(crate) present: bool,
    /// The lowest sequence among the nodes waited for, the own one included.
    pub(crate) lowest: Sequence,
    /// A node waited for is lower than the own node: the next-lower one's
    /// path is in [`predecessor`](Contention::predecessor), or did not fit
    /// there (`Err`); `Ok(true)` if it is the only one lower.
    pub(crate) predecessor: Option<Result<bool, PathError>>,
}

/// How a listing is read, decided when its first part comes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ScanMode {
    /// Search the own node by GUID (a create in doubt).
    Find,
    /// Say where the known own node stands.
    Stand,
    /// Nothing to learn from it.
    Ignore,
}

/// What a whole listing said.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Scanned {
    /// Searched by GUID: whether the own node was found (and stored).
    Found(bool),
    /// Where the own node stands.
    Stood(Standing),
    /// Read in [`ScanMode::Ignore`].
    Ignored,
}

/// A listing read so far: it may come in parts (a driver whose receive
/// buffer holds less than the whole reply), so the one pass over it is a
/// fold whose state lives here between parts.
#[derive(Clone, Copy, Debug)]
struct Scan {
    /// The listing's request.
    id: RequestId,
    mode: ScanMode,
    /// Find: a name with the GUID was seen; Stand: the own node was.
    seen: bool,
    /// Find: that name's path was stored, to be the own node's once the
    /// listing is read to the end.
    stored: bool,
    /// Stand: the own node's sequence; Find: the stored node's.
    own: Sequence,
    /// Stand: nodes waited for below the own one.
    lower: u32,
    lowest: Sequence,
    /// Stand: the highest sequence below the own one so far; its path is
    /// in `predecessor`, unless it needs the `overflow` bytes (not 0).
    nearest: Option<Sequence>,
    overflow: usize,
}

/// What a refused create means for the contender.
pub(crate) enum CreateRefusal {
    /// The directory is missing (and the retry bound allows another try):
    /// create the ancestors, then the own node and the listing again.
    NoDirectory,
    /// The connection or the session is gone: a loss like any other
    /// request's (a lost create is marked as possibly applied).
    Lost,
    /// Applied, but its answer (the node's path) did not fit the
    /// transport's receive buffer: the node is there, to be found by GUID
    /// and deleted.
    Unread,
    /// ZooKeeper refused it for good.
    Refused(ZkError),
}

impl<const N: usize> Contention<N> {
    /// A contender of `kind` in `dir` (not the root), naming its nodes in
    /// `flavour`. Refused with `TooLong` when its node's path could never
    /// fit `N`: every GUID is written at the same length, so the check
    /// need not wait for the first attempt's.
    pub(crate) fn new(dir: &str, flavour: Flavour, kind: NodeKind) -> Result<Self, Error> {
        path::validate(dir)?;
        if dir == "/" {
            return Err(Error::Path(PathError::BadName));
        }
        let needed = dir.len() + 1 + longest_name(flavour, kind);
        if needed > N {
            return Err(Error::Path(PathError::TooLong {
                needed,
                capacity: N,
            }));
        }
        let mut stored = String::new();
        // Cannot fail: the node's path, longer, fits.
        let _ = stored.push_str(dir);
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
            scan: None,
            searches: 0,
        })
    }

    pub(crate) fn dir(&self) -> &str {
        &self.dir
    }

    pub(crate) fn flavour(&self) -> Flavour {
        self.flavour
    }

    /// The kind of node the contender creates.
    pub(crate) fn kind(&self) -> NodeKind {
        self.kind
    }

    /// The current attempt's GUID.
    pub(crate) fn guid(&self) -> Guid {
        self.guid
    }

    /// The longest name the own node can get (with any GUID). Its path
    /// fits `N`: [`new`](Self::new) checked it.
    pub(crate) fn name_len(&self) -> usize {
        longest_name(self.flavour, self.kind)
    }

    /// A new attempt with `guid`: nothing is known of a node yet.
    pub(crate) fn begin(&mut self, guid: Guid) {
        self.guid = guid;
        self.forget_own();
        self.directory_retries.reset();
        self.searches = 0;
    }

    /// Whether winding up is to search for a create in doubt (again):
    /// counts the search; false with no create in doubt, or once the
    /// bound is reached.
    pub(crate) fn search_again(&mut self) -> bool {
        let allowed = self.own == Own::InDoubt && self.searches < MAX_SEARCHES;
        self.searches += u8::from(allowed);
        allowed
    }

    /// An ancestor's create was answered: a later `NoNode` is the
    /// directory vanishing again.
    pub(crate) fn directory_answered(&mut self) {
        self.directory_retries.answered();
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
        match self.stash_own(name) {
            Some(seq) => {
                self.own = Own::Known(seq);
                true
            }
            None => {
                self.forget_own();
                false
            }
        }
    }

    /// Writes the path of `name` where the own node's goes if it is this
    /// attempt's node and fits, and returns its sequence; what is known of
    /// the own node does not change (the path is read only once it is
    /// `Known`).
    fn stash_own(&mut self, name: &str) -> Option<Sequence> {
        let seq = self.flavour.own_sequence(self.kind, &self.guid, name)?;
        path::join_into(&mut self.own_path, &self.dir, name).ok()?;
        Some(seq)
    }

    /// Whether the listing `id` is being read (a part of it came).
    pub(crate) fn is_scanning(&self, id: RequestId) -> bool {
        self.scan.is_some_and(|scan| scan.id == id)
    }

    /// Starts reading the listing `id` in `mode` (a stand without a known
    /// own node learns nothing), dropping any listing read before.
    pub(crate) fn begin_scan(&mut self, id: RequestId, mode: ScanMode) {
        let own = self.own_sequence();
        let mode = match (mode, own) {
            (ScanMode::Stand, None) => ScanMode::Ignore,
            (mode, _) => mode,
        };
        let own = own.unwrap_or(Sequence::new(0));
        self.scan = Some(Scan {
            id,
            mode,
            seen: false,
            stored: false,
            own,
            lower: 0,
            lowest: own,
            nearest: None,
            overflow: 0,
        });
    }

    /// Reads one name of the listing; `waits` is its sequence if it is a
    /// node this contender waits for.
    pub(crate) fn scan_name(&mut self, name: &str, waits: Option<Sequence>) {
        // In place: a copy of the fold and back costs flash on every name.
        let Some(scan) = self.scan.as_mut() else {
            return;
        };
        match scan.mode {
            ScanMode::Ignore => {}
            // The node found is adopted only at the last part: a listing
            // cut off by a lost connection leaves the create in doubt, and
            // the search starts over.
            ScanMode::Find => {
                if !scan.seen && self.flavour.is_own(self.kind, &self.guid, name) {
                    scan.seen = true;
                    let found = self.stash_own(name);
                    if let (Some(scan), Some(seq)) = (self.scan.as_mut(), found) {
                        scan.stored = true;
                        scan.own = seq;
                    }
                }
            }
            ScanMode::Stand => {
                if name == path::basename(&self.own_path) {
                    scan.seen = true;
                } else if let Some(seq) = waits {
                    if seq.precedes(scan.lowest) {
                        scan.lowest = seq;
                    }
                    // A server never gives two children one sequence, but
                    // another client may name a node by hand: one of the
                    // own sequence counts as ahead, as Curator's and Kazoo's
                    // orders may put it, so that no two see themselves
                    // first.
                    if !scan.own.precedes(seq) {
                        scan.lower = scan.lower.saturating_add(1);
                        if scan.nearest.is_none_or(|best| best.precedes(seq)) {
                            scan.nearest = Some(seq);
                            // The name is gone with its part: keep its path.
                            scan.overflow =
                                match path::join_into(&mut self.predecessor, &self.dir, name) {
                                    Ok(()) => 0,
                                    Err(_) => path::joined_len(&self.dir, name),
                                };
                        }
                    }
                }
            }
        }
    }

    /// The listing's last part was read: what it said.
    pub(crate) fn end_scan(&mut self) -> Scanned {
        let Some(scan) = self.scan.take() else {
            return Scanned::Ignored;
        };
        match scan.mode {
            ScanMode::Ignore => Scanned::Ignored,
            ScanMode::Find => {
                if scan.stored {
                    self.own = Own::Known(scan.own);
                }
                Scanned::Found(scan.stored)
            }
            ScanMode::Stand => Scanned::Stood(Standing {
                present: scan.seen,
                lowest: scan.lowest,
                predecessor: scan.nearest.map(|_| match scan.overflow {
                    0 => Ok(scan.lower == 1),
                    needed => Err(PathError::TooLong {
                        needed,
                        capacity: N,
                    }),
                }),
            }),
        }
    }

    /// Waits for the node a listing found next-lower (in
    /// [`predecessor`](Self::predecessor)); `only_lower` if it is the only
    /// node ahead.
    pub(crate) fn wait_behind(&mut self, only_lower: bool) {
        self.predecessor_is_lowest = only_lower;
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
        } else if e == ZkError::ReplyTooLarge {
            // Every refusal fits any buffer (a header alone): only a
            // success can be too large.
            self.create_lost();
            CreateRefusal::Unread
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

    /// The request for `op`, a create of the own node holding `data`,
    /// written into `scratch` where it needs a path made up. Cannot fail:
    /// every path was sized when stored (the directory and the own node's
    /// widest name in [`new`](Self::new), its name in `store_own`, the
    /// predecessor in `wait_for`).
    ///
    /// The candidate's acknowledgement is its own to write: given one of
    /// its ops, which the election materialises itself, this makes a
    /// harmless read, whose answer the lock fails as a bad reply.
    pub(crate) fn request<'a>(
        &'a self,
        op: Op,
        scratch: &'a mut String<N>,
        data: &'a [u8],
        acl: Acl<'a>,
    ) -> Request<'a> {
        match op {
            Op::Ensure(level) => ancestors::create(&self.dir, level, scratch, acl),
            Op::Create => self.create_request(scratch, data, acl),
            Op::List => self.list_request(),
            Op::CatchUp => self.catch_up_request(),
            Op::WatchPredecessor => self.predecessor_watch(),
            Op::WatchOwn => self.own_watch(),
            Op::Delete => self.own_delete(),
            Op::CheckOwn
            | Op::Ack
            | Op::ReadAck
            | Op::ReplaceAck
            | Op::DeleteAck
            | Op::ClearAck
            | Op::DropAck => self.own_exists(),
        }
    }

    /// The create of the own node, holding `data`: its path
    /// (`<dir>/<prefix>`, the server appends the sequence) is written into
    /// `scratch`. Cannot fail: [`new`](Self::new) measured the widest
    /// name.
    pub(crate) fn create_request<'a>(
        &self,
        scratch: &'a mut String<N>,
        data: &'a [u8],
        acl: Acl<'a>,
    ) -> Request<'a> {
        scratch.clear();
        // heapless' `String` refuses a push that does not fit whole. The
        // slash as a `str`: `push` of a `char` encodes it as UTF-8, code
        // the firmware has no other use for (56 B of herdless code in the
        // STM32 firmware, scripts/firmware-size.sh).
        let _ = scratch.push_str(&self.dir);
        let _ = scratch.push_str("/");
        let _ = self.flavour.write_prefix(self.kind, &self.guid, scratch);
        Request::Create {
            path: scratch,
            data,
            acl,
            mode: CreateMode::EphemeralSequential,
        }
    }

    /// The no-op write ahead of a search by GUID.
    pub(crate) fn catch_up_request(&self) -> Request<'_> {
        crate::engine::catch_up::request(&self.dir)
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
    use core::fmt::Write as _;

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
    fn a_directory_whose_node_path_would_not_fit_is_refused_at_once() {
        // "/d/", then the GUID (36), "-lock-" and the widest sequence
        // (11: a counter past i32::MAX is written negative).
        assert!(matches!(
            Contention::<40>::new("/d", Flavour::Recipes, NodeKind::Lock),
            Err(Error::Path(PathError::TooLong {
                capacity: 40,
                needed: 56
            }))
        ));
        assert!(Contention::<55>::new("/d", Flavour::Recipes, NodeKind::Lock).is_err());
        let fits = Contention::<56>::new("/d", Flavour::Recipes, NodeKind::Lock).unwrap();
        assert_eq!(fits.name_len(), name(0).len() + 1);
        // Every flavour and kind is measured with its own prefix:
        // "_c_", the GUID, "-__WRIT__".
        assert!(Contention::<61>::new("/d", Flavour::Curator, NodeKind::Write).is_err());
        assert!(Contention::<62>::new("/d", Flavour::Curator, NodeKind::Write).is_ok());
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
        assert_eq!(c.own_path(), Some(expected.as_str()));
        c.forget_own();
        assert!(!c.has_own());
    }

    /// Reads `parts` as one listing (each part a slice of names).
    fn scan(c: &mut Contention<128>, mode: ScanMode, parts: &[&[&str]]) -> Scanned {
        let id = crate::RequestIds::new().next_id();
        c.begin_scan(id, mode);
        for part in parts {
            for name in *part {
                c.scan_name(
                    name,
                    crate::naming::contender_sequence(NodeKind::Lock, name),
                );
            }
        }
        assert!(c.is_scanning(id));
        let scanned = c.end_scan();
        assert!(!c.is_scanning(id));
        scanned
    }

    #[test]
    fn a_listing_gives_the_next_lower_node_and_whether_it_is_the_only_one() {
        let mut c = contention();
        assert_eq!(scan(&mut c, ScanMode::Stand, &[]), Scanned::Ignored);
        let own = name(5);
        let found = scan(
            &mut c,
            ScanMode::Find,
            &[&["x-lock-0000000001"], &[own.as_str()]],
        );
        assert_eq!(found, Scanned::Found(true));
        let names = [
            "a-lock-0000000001",
            "b-lock-0000000003",
            own.as_str(),
            "c-lock-0000000007",
        ];
        let stood =
            |c: &mut Contention<128>, parts: &[&[&str]]| match scan(c, ScanMode::Stand, parts) {
                Scanned::Stood(s) => s,
                other => panic!("{other:?}"),
            };
        // However the listing is cut into parts, it says the same.
        for cut in 0..=names.len() {
            let (a, b) = names.split_at(cut);
            let s = stood(&mut c, &[a, b]);
            assert!(s.present);
            assert_eq!(s.predecessor, Some(Ok(false)));
            assert_eq!(c.predecessor(), "/d/b-lock-0000000003");
            assert_eq!(s.lowest, Sequence::new(1));
        }
        let s = stood(&mut c, &[&names[3..], &names[1..3]]);
        assert_eq!(s.predecessor, Some(Ok(true)));
        assert_eq!(c.predecessor(), "/d/b-lock-0000000003");
        let s = stood(&mut c, &[&names[3..]]);
        assert!(!s.present && s.predecessor.is_none());
        assert_eq!(s.lowest, Sequence::new(5));
    }

    #[test]
    fn a_predecessor_whose_path_does_not_fit_is_an_error_unless_a_nearer_one_fits() {
        let mut c = contention();
        let own = name(9);
        assert_eq!(
            scan(&mut c, ScanMode::Find, &[&[own.as_str()]]),
            Scanned::Found(true)
        );
        let long: std::string::String = "x".repeat(130) + "-lock-0000000007";
        let Scanned::Stood(s) = scan(&mut c, ScanMode::Stand, &[&[long.as_str(), own.as_str()]])
        else {
            panic!("stood");
        };
        assert!(matches!(
            s.predecessor,
            Some(Err(PathError::TooLong { .. }))
        ));
        let Scanned::Stood(s) = scan(
            &mut c,
            ScanMode::Stand,
            &[
                &[long.as_str()],
                &["a-lock-0000000008"],
                &["b-lock-0000000002"],
            ],
        ) else {
            panic!("stood");
        };
        assert_eq!(s.predecessor, Some(Ok(false)), "the nearer fits");
        assert_eq!(c.predecessor(), "/d/a-lock-0000000008");
    }

    #[test]
    fn a_search_by_guid_stores_the_first_name_carrying_it() {
        let mut c = contention();
        c.doubt_create();
        let (a, b) = (name(3), name(4));
        assert_eq!(
            scan(
                &mut c,
                ScanMode::Find,
                &[&["z-lock-0000000001"], &[a.as_str(), b.as_str()]]
            ),
            Scanned::Found(true)
        );
        assert_eq!(c.own_name(), Some(a.as_str()));
        c.doubt_create();
        assert_eq!(
            scan(&mut c, ScanMode::Find, &[&["z-lock-0000000001"], &[]]),
            Scanned::Found(false)
        );
        assert!(!c.has_own());
    }

    #[test]
    fn a_new_listing_drops_the_one_read_before() {
        let mut c = contention();
        let own = name(5);
        assert!(c.store_own(&own));
        let mut ids = crate::RequestIds::new();
        let (first, second) = (ids.next_id(), ids.next_id());
        c.begin_scan(first, ScanMode::Stand);
        c.scan_name("a-lock-0000000001", Sequence::new(1).into());
        c.begin_scan(second, ScanMode::Stand);
        assert!(!c.is_scanning(first) && c.is_scanning(second));
        c.scan_name(&own, Some(Sequence::new(5)));
        let Scanned::Stood(s) = c.end_scan() else {
            panic!("stood");
        };
        assert_eq!((s.present, s.predecessor), (true, None));
        assert_eq!(c.end_scan(), Scanned::Ignored, "read once");
    }

    #[test]
    fn a_create_refused_for_a_missing_directory_is_retried_a_bounded_number_of_times() {
        let mut c = contention();
        let mut retries = 0;
        while matches!(
            c.create_refused(ZkError::NoNode),
            CreateRefusal::NoDirectory
        ) {
            // The ancestors are made each time, and vanish again.
            c.directory_answered();
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
