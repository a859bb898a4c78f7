//! Leader election (the recipes page's "Leader Election"), as state machines:
//! a [`Election`] that volunteers, and an [`Observer`] for everyone else.
//!
//! # The candidate's protocol
//!
//! 1. create `<dir>/<guid>-n_` ephemeral and sequential (the candidate's data
//!    as its data) and, in the same flight, list `<dir>`; once the create
//!    is answered, read the own node with a watch (`getData`), so that its
//!    deletion by anyone is heard, and before the predecessor's (one
//!    session's notifications come in the order of the changes);
//! 2. if another candidate has a lower sequence number, watch only the
//!    next-lower one (no herd) and report [`ElectionEvent::Following`];
//!    when the watched one goes, list again (or, if it was the lowest, go
//!    straight on: sequence numbers only grow);
//! 3. once the own node is the lowest, make sure its `ephemeralOwner` is the
//!    *current* session: a node left by an earlier session of the same
//!    process, or put in its place by someone else, is not a claim to lead
//!    (CURATOR-696). The read of step 1 answers that, unless a reconnect or
//!    a change to the node sent it again, and then the answer to that read
//!    is waited for. A node found to be another session's is deleted, and
//!    the candidate volunteers again with a new node (under a new GUID);
//! 4. report [`ElectionEvent::Leading`] and, in the same instant, write the
//!    **acknowledgement node** `<dir>/leader`, ephemeral, whose data is
//!    `<own node name>\n<candidate data>` (the recipes page's note: "the
//!    znode having no preceding znode … does not imply that the creator …
//!    is aware that it is the current leader"). So "who leads now" has one
//!    answer that observers and operators can read, and it only ever names
//!    a candidate that knows it leads. Its answer is not waited for: who
//!    leads is settled by the lowest node, not by the acknowledgement, and
//!    waiting would add a round trip to every hand-off. Other sessions see
//!    it once the server has applied it. An acknowledgement left by an
//!    earlier leader (one that names another node, or one too large for an
//!    embedded driver's receive buffer, which no candidate writes) is
//!    replaced; one naming the own node (a create whose reply was lost) is
//!    adopted; should the
//!    write be refused (an ACL) or be taken over again and again, leadership
//!    is given up with [`ElectionEvent::Lost`].
//!
//! While leading, a connection loss is reported at once as
//! [`ElectionEvent::Suspended`] ("not sure I lead any more"; CURATOR-460),
//! not when the session expires. After a reconnect the own node's
//! `ephemeralOwner` is checked against the session again before
//! [`ElectionEvent::Resumed`]; a reconnect onto another session is
//! [`ElectionEvent::Lost`], and so is a suspension that outlasts the session
//! timeout given to [`Election::set_lost_after`], even if the expiry itself
//! is never heard (CURATOR-220).
//!
//! Resigning (at any stage) deletes the acknowledgement, then the own node,
//! and is reported once both are confirmed gone; a deadline does the same.
//! Where the acknowledgement's delete may not have landed (a connection
//! lost on the way) or leadership was lost, the acknowledgement is read
//! behind a no-op write, so that a server that reconnected the client
//! shows this session's last writes, and deleted at the version read only
//! if it names this candidate; the own node goes after it. After a
//! connection loss during the create, the own node is found by its GUID
//! rather than created twice.
//!
//! A candidate is built on the [`Lock`](crate::lock::Lock)'s machine: the
//! steps above that the two share (create and list, wait behind the next
//! one, confirm the own node, suspend, verify, delete) are the lock's, so
//! a firmware with both carries them once.
//!
//! # The observer
//!
//! An [`Observer`] reads and watches the acknowledgement node only: one watch
//! per observer, one notification per change of leader, whatever the number
//! of candidates.

mod candidate;
mod observer;

pub use candidate::{Election, ElectionEvent, ElectionState};
pub use observer::{Observer, ObserverEvent};

/// Name of the acknowledgement node inside the election directory.
///
/// It has no sequence suffix, so no library counts it as a candidate.
pub const ACK_NAME: &str = "leader";

/// Default capacity, in bytes, of the paths an election stores.
pub const DEFAULT_PATH_CAPACITY: usize = 128;

/// Default capacity, in bytes, of an acknowledgement's data (the leader's
/// node name, a newline and the candidate's data).
pub const DEFAULT_DATA_CAPACITY: usize = 192;

/// What the acknowledgement node says: which candidate leads, and its data.
///
/// ```
/// use herdless_core::election::Acknowledgement;
///
/// let ack = Acknowledgement::parse(b"1f-n_0000000007\ngateway-3").unwrap();
/// assert_eq!(ack.node, "1f-n_0000000007");
/// assert_eq!(ack.data, b"gateway-3");
/// assert_eq!(ack.sequence().map(|s| s.value()), Some(7));
/// assert!(Acknowledgement::parse(b"no newline").is_none());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Acknowledgement<'a> {
    /// The leader's candidate node name (not a path).
    pub node: &'a str,
    /// The leader's data (its participant id, an address...).
    pub data: &'a [u8],
}

impl<'a> Acknowledgement<'a> {
    /// Reads an acknowledgement node's data: the node name, a newline, the
    /// candidate's data. `None` if it is not in that form (another writer,
    /// or not UTF-8).
    pub fn parse(raw: &'a [u8]) -> Option<Acknowledgement<'a>> {
        let newline = raw.iter().position(|b| *b == b'\n')?;
        let node = core::str::from_utf8(&raw[..newline]).ok()?;
        if node.is_empty() || crate::path::validate_name(node).is_err() {
            return None;
        }
        Some(Acknowledgement {
            node,
            data: &raw[newline + 1..],
        })
    }

    /// Whether `raw` is an acknowledgement naming `node`, the bytes of a
    /// valid node name: what `parse(raw).is_some_and(|a| a.node == node)`
    /// says, read from the bytes. The candidate asks only this, and
    /// parsing measured 157 B more herdless code and 424 B more flash in
    /// the STM32 firmware (checking the name as a path segment, character
    /// by character).
    pub(crate) fn names(raw: &[u8], node: &[u8]) -> bool {
        !node.is_empty() && raw.starts_with(node) && raw.get(node.len()) == Some(&b'\n')
    }

    /// The leader's sequence number, if its node name carries one.
    pub fn sequence(&self) -> Option<crate::Sequence> {
        crate::naming::contender_sequence(crate::naming::NodeKind::Candidate, self.node)
    }
}

/// Errors of this recipe: the one error type of every recipe.
pub use crate::Error;

#[cfg(test)]
mod tests {
    extern crate std;
    use std::vec::Vec;

    use super::Acknowledgement;

    fn parsed_names(raw: &[u8], node: &str) -> bool {
        Acknowledgement::parse(raw).is_some_and(|a| a.node == node)
    }

    #[test]
    fn names_says_what_parse_says() {
        let node = "1f-n_0000000007";
        let cases: [&[u8]; 9] = [
            b"1f-n_0000000007\ngateway",
            b"1f-n_0000000007\n",
            b"1f-n_0000000007",
            b"1f-n_00000000071\nx",
            b"1f-n_000000000\nx",
            b"1f-n_0000000007\n1f-n_0000000007\n",
            b"x\n1f-n_0000000007\n",
            b"\n",
            b"",
        ];
        for raw in cases {
            assert_eq!(
                Acknowledgement::names(raw, node.as_bytes()),
                parsed_names(raw, node),
                "{raw:?}"
            );
        }
        assert!(Acknowledgement::names(cases[0], node.as_bytes()));
        assert!(
            !Acknowledgement::names(b"\nx", b""),
            "an empty name is no one's"
        );
    }

    proptest::proptest! {
        /// Differential: for any data, naming the node, naming it with
        /// more after it, or anything at all, the byte check and the
        /// parse agree.
        #[test]
        fn names_agrees_with_parse(
            node in "[a-z0-9_-]{1,20}",
            rest in proptest::collection::vec(proptest::num::u8::ANY, 0..40),
            shape in 0u8..3,
        ) {
            let raw: Vec<u8> = match shape {
                0 => [node.as_bytes(), b"\n", &rest].concat(),
                1 => [node.as_bytes(), &rest].concat(),
                _ => rest,
            };
            proptest::prop_assert_eq!(
                Acknowledgement::names(&raw, node.as_bytes()),
                parsed_names(&raw, &node)
            );
        }
    }
}
