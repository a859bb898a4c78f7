//! Which library wrote a contender's node, and for which role, from its
//! name alone: what an operator's inspection shows for every node of a
//! directory shared by herdless, Curator and Kazoo clients.

use crate::naming::{Flavour, NodeKind};
use crate::Sequence;

/// A contender's node name taken apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Recognised<'a> {
    /// The role its marker names. Kazoo writes one marker (`__lock__`) for
    /// its `Lock`, `WriteLock` and `Election`, and Curator's
    /// `LeaderSelector` is a lock (`-lock-`): both read as
    /// [`NodeKind::Lock`]; the directory says which recipe it is.
    pub kind: NodeKind,
    /// The library layout the name follows; `None` for a name with a
    /// recipe marker but no GUID (`lock-0000000003`, `n_0000000004` as
    /// ZooKeeper's own `LeaderElectionSupport` writes).
    pub flavour: Option<Flavour>,
    /// The GUID as written in the name (hyphenated or plain hex), if any.
    pub guid: Option<&'a str>,
    /// The sequence number the server appended.
    pub sequence: Sequence,
}

/// Markers that end a contender's prefix, the role each names, and the
/// layouts that write it.
const MARKERS: &[(&str, NodeKind)] = &[
    ("-__READ__", NodeKind::Read),
    ("-__WRIT__", NodeKind::Write),
    ("__rlock__", NodeKind::Read),
    ("__lock__", NodeKind::Lock),
    ("-latch-", NodeKind::Candidate),
    ("-write-", NodeKind::Write),
    ("-read-", NodeKind::Read),
    ("-lock-", NodeKind::Lock),
    ("-n_", NodeKind::Candidate),
    ("lock-", NodeKind::Lock),
    ("n_", NodeKind::Candidate),
];

/// `name` taken apart as a contender's node, whichever library wrote it;
/// `None` for anything else (an acknowledgement, a queue item, a stray
/// node).
///
/// ```
/// use herdless_core::naming::{recognise, Flavour, NodeKind};
///
/// let curator = recognise("_c_0b4c1e57-6c6e-4b39-a0a2-2f7f3f5cf3a1-__READ__0000000004").unwrap();
/// assert_eq!((curator.kind, curator.flavour), (NodeKind::Read, Some(Flavour::Curator)));
/// let kazoo = recognise("0b4c1e576c6e4b39a0a22f7f3f5cf3a1__lock__0000000005").unwrap();
/// assert_eq!((kazoo.kind, kazoo.flavour), (NodeKind::Lock, Some(Flavour::Kazoo)));
/// let herdless = recognise("0b4c1e57-6c6e-4b39-a0a2-2f7f3f5cf3a1-n_0000000006").unwrap();
/// assert_eq!((herdless.kind, herdless.sequence.value()), (NodeKind::Candidate, 6));
/// assert_eq!(recognise("leader"), None);
/// ```
pub fn recognise(name: &str) -> Option<Recognised<'_>> {
    let marker_of = |prefix: &str| {
        MARKERS
            .iter()
            .find(|(marker, _)| prefix.ends_with(marker))
            .copied()
    };
    // The marker tells a negative eleven-character suffix from a positive
    // one after a `-`, as for the recipes' own contenders.
    let (prefix, sequence) = Sequence::split_where(name, |p| marker_of(p).is_some()).ok()?;
    let (marker, kind) = marker_of(prefix)?;
    let head = &prefix[..prefix.len() - marker.len()];
    let (flavour, guid) = layout(head, marker);
    Some(Recognised {
        kind,
        flavour,
        guid,
        sequence,
    })
}

/// Which layout `head` (the name before its marker) follows, and its GUID.
fn layout<'a>(head: &'a str, marker: &str) -> (Option<Flavour>, Option<&'a str>) {
    let curator_marker = matches!(marker, "-lock-" | "-__READ__" | "-__WRIT__" | "-latch-");
    let recipes_marker = matches!(marker, "-lock-" | "-read-" | "-write-" | "-n_");
    let kazoo_marker = matches!(marker, "__lock__" | "__rlock__");
    if let Some(guid) = head.strip_prefix("_c_") {
        if curator_marker && is_hyphenated(guid) {
            return (Some(Flavour::Curator), Some(guid));
        }
    }
    if recipes_marker && is_hyphenated(head) {
        return (Some(Flavour::Recipes), Some(head));
    }
    if kazoo_marker && head.len() == 32 && head.bytes().all(|b| b.is_ascii_hexdigit()) {
        return (Some(Flavour::Kazoo), Some(head));
    }
    (None, None)
}

/// Whether `text` is a GUID in the hyphenated 8-4-4-4-12 form.
fn is_hyphenated(text: &str) -> bool {
    text.len() == 36
        && text.bytes().enumerate().all(|(i, b)| match i {
            8 | 13 | 18 | 23 => b == b'-',
            _ => b.is_ascii_hexdigit(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::naming::Guid;
    use heapless::String;

    const KINDS: [NodeKind; 4] = [
        NodeKind::Lock,
        NodeKind::Read,
        NodeKind::Write,
        NodeKind::Candidate,
    ];

    /// Every name herdless writes, in every flavour, is recognised as the
    /// flavour and kind that wrote it (Kazoo's one marker for three roles
    /// reads as a lock), with its sequence number, including negative ones
    /// after the counter wrapped.
    #[test]
    fn every_name_written_is_recognised() {
        let guid = Guid::from_random_bytes([0x5a; 16]);
        for flavour in [Flavour::Recipes, Flavour::Curator, Flavour::Kazoo] {
            for kind in KINDS {
                for seq in [0, 7, 1_000_000_005, -1_000_000_005, i32::MIN] {
                    let mut name: String<96> = String::new();
                    flavour.write_prefix(kind, &guid, &mut name).unwrap();
                    let suffix = if seq < 0 {
                        std::format!("{seq:011}")
                    } else {
                        std::format!("{seq:010}")
                    };
                    name.push_str(&suffix).unwrap();
                    let got = recognise(&name).unwrap_or_else(|| panic!("{name}"));
                    let expected_kind = match (flavour, kind) {
                        (Flavour::Kazoo, NodeKind::Write | NodeKind::Candidate) => NodeKind::Lock,
                        _ => kind,
                    };
                    assert_eq!(got.kind, expected_kind, "{name}");
                    assert_eq!(got.flavour, Some(flavour), "{name}");
                    assert_eq!(got.sequence.value(), seq, "{name}");
                    assert!(got.guid.is_some(), "{name}");
                }
            }
        }
    }

    #[test]
    fn names_without_a_guid_or_a_marker() {
        let bare = recognise("lock-0000000003").unwrap();
        assert_eq!((bare.kind, bare.flavour), (NodeKind::Lock, None));
        let les = recognise("n_0000000004").unwrap();
        assert_eq!((les.kind, les.flavour), (NodeKind::Candidate, None));
        for other in [
            "leader",
            "qn-0000000001",
            "",
            "lock-",
            "readers",
            "x-lock-12",
        ] {
            assert_eq!(recognise(other), None, "{other}");
        }
        // Almost a library's layout is none: not a GUID, a GUID one
        // character short or with a letter out of place, Curator's prefix
        // with a marker only the recipes page writes.
        for name in [
            "_c_not-a-guid-lock-0000000001",
            "0b4c1e57-6c6e-4b39-a0a2-2f7f3f5cf3a-lock-0000000001",
            "0b4c1e57-6c6e-4b39-a0a2-2f7f3f5cf3ax-lock-0000000001",
            "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx-lock-0000000001",
            "_c_0b4c1e57-6c6e-4b39-a0a2-2f7f3f5cf3a1-n_0000000001",
        ] {
            let r = recognise(name).unwrap_or_else(|| panic!("{name}"));
            assert_eq!((r.flavour, r.guid), (None, None), "{name}");
        }
        // A hyphenated GUID with a Kazoo marker is no library's layout.
        let odd = recognise("0b4c1e57-6c6e-4b39-a0a2-2f7f3f5cf3a1__lock__0000000001").unwrap();
        assert_eq!(odd.flavour, None);
    }
}
