//! Node names: the GUID, the naming flavours, and contender recognition.
//!
//! A contender's node is `<prefix><sequence>`, where the prefix carries a
//! GUID so the creator can find its node again after a lost create reply.
//! Which prefix a node has depends on the library that wrote it; herdless
//! writes one of several [`Flavour`]s and *recognises all of them*, so a lock
//! shared with Curator or Kazoo clients orders everyone by sequence number.

use core::fmt::{self, Write};

pub use super::recognise::{recognise, Recognised};

/// The 16 random bytes that make a contender's node name unique.
///
/// The core has no random number generator: the caller supplies the bytes
/// (`uuid::Uuid::new_v4().into_bytes()` on std, the hardware RNG on a
/// microcontroller). Use fresh bytes for every acquisition attempt: a node
/// left by an earlier attempt must never be mistaken for the current one
/// (CURATOR-498).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Guid(pub [u8; 16]);

impl Guid {
    /// A GUID from 16 bytes. The version/variant bits are set as for a
    /// random (v4) UUID, so names look like the ones Curator writes.
    pub const fn from_random_bytes(mut bytes: [u8; 16]) -> Self {
        bytes[6] = (bytes[6] & 0x0f) | 0x40;
        bytes[8] = (bytes[8] & 0x3f) | 0x80;
        Guid(bytes)
    }

    /// Writes the hyphenated form (`xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`).
    pub fn write_hyphenated(&self, out: &mut dyn Write) -> fmt::Result {
        self.write_hex(out, true)
    }

    /// Writes the plain hex form (`uuid4().hex`, as Kazoo names nodes).
    pub fn write_simple(&self, out: &mut dyn Write) -> fmt::Result {
        self.write_hex(out, false)
    }

    /// The length of what [`write_hex`](Self::write_hex) writes.
    const fn hex_len(hyphens: bool) -> usize {
        if hyphens {
            36
        } else {
            32
        }
    }

    /// The bytes in lower-case hex, with the hyphens of the canonical form
    /// if `hyphens`, a digit at a time. Not with `{:02x}` for each byte:
    /// its formatting machinery (`core`'s) measured 292 B more flash in the
    /// STM32 firmware; nor gathered into a `heapless::String` first, whose
    /// `push` encodes each digit as UTF-8 (32 B more herdless code and
    /// flash; scripts/firmware-size.sh).
    fn write_hex(&self, out: &mut dyn Write, hyphens: bool) -> fmt::Result {
        const DIGITS: &str = "0123456789abcdef";
        for (i, b) in self.0.iter().enumerate() {
            if hyphens && matches!(i, 4 | 6 | 8 | 10) {
                out.write_str("-")?;
            }
            for digit in [usize::from(b >> 4), usize::from(b & 0xf)] {
                out.write_str(DIGITS.get(digit..=digit).unwrap_or_default())?;
            }
        }
        Ok(())
    }
}

impl fmt::Display for Guid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.write_hyphenated(f)
    }
}

/// The role a node plays in a recipe, which selects the marker in its name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum NodeKind {
    /// A contender for an exclusive lock.
    Lock,
    /// A reader of a shared (read/write) lock.
    Read,
    /// A writer of a shared (read/write) lock.
    Write,
    /// A candidate of a leader election.
    Candidate,
}

/// How herdless names the nodes it creates.
///
/// | kind | `Recipes` | `Curator` | `Kazoo` |
/// |---|---|---|---|
/// | [`NodeKind::Lock`] | `<guid>-lock-` | `_c_<guid>-lock-` | `<hex>__lock__` |
/// | [`NodeKind::Read`] | `<guid>-read-` | `_c_<guid>-__READ__` | `<hex>__rlock__` |
/// | [`NodeKind::Write`] | `<guid>-write-` | `_c_<guid>-__WRIT__` | `<hex>__lock__` |
/// | [`NodeKind::Candidate`] | `<guid>-n_` (the recipes page's `guid-n_`) | `_c_<guid>-latch-` (`LeaderLatch`) | `<hex>__lock__` (Kazoo's `Election` is its `Lock`) |
///
/// (Kazoo's `WriteLock`, `Lock` and `Election` write the same name.)
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum Flavour {
    /// The ZooKeeper recipes page: `<guid>-lock-0000000007`,
    /// `<guid>-read-0000000008`, `<guid>-write-0000000009`,
    /// `<guid>-n_0000000010`.
    #[default]
    Recipes,
    /// Curator's protected names: `_c_<guid>-lock-0000000007`, for its
    /// `InterProcessReadWriteLock` `_c_<guid>-__READ__0000000008` and
    /// `_c_<guid>-__WRIT__0000000009`, for `LeaderLatch`
    /// `_c_<guid>-latch-0000000010`.
    Curator,
    /// Kazoo's: `<guid hex>__lock__0000000007` (`Lock`, `WriteLock` and
    /// `Election`) and `<guid hex>__rlock__0000000008` (`ReadLock`).
    Kazoo,
}

impl Flavour {
    /// Writes the prefix of a new node of `kind` for `guid` (everything
    /// before the sequence number the server appends).
    ///
    /// ```
    /// use herdless_core::naming::{Flavour, Guid, NodeKind};
    ///
    /// let guid = Guid::from_random_bytes([0xab; 16]);
    /// let mut name = heapless::String::<64>::new();
    /// Flavour::Curator.write_prefix(NodeKind::Read, &guid, &mut name).unwrap();
    /// assert_eq!(name.as_str(), "_c_abababab-abab-4bab-abab-abababababab-__READ__");
    /// ```
    pub fn write_prefix(self, kind: NodeKind, guid: &Guid, out: &mut dyn Write) -> fmt::Result {
        let (lead, hyphens, marker) = self.prefix_parts(kind);
        out.write_str(lead)?;
        guid.write_hex(out, hyphens)?;
        out.write_str(marker)
    }

    /// The length of every prefix [`write_prefix`](Self::write_prefix)
    /// writes for `kind`, whatever the GUID.
    pub(crate) const fn prefix_len(self, kind: NodeKind) -> usize {
        let (lead, hyphens, marker) = self.prefix_parts(kind);
        lead.len() + Guid::hex_len(hyphens) + marker.len()
    }

    /// A prefix's pieces: what comes before the GUID, whether the GUID is
    /// hyphenated, and the marker after it.
    ///
    /// The markers are read from a table: the nested match they were
    /// compiled to measured 88 B more herdless code in the STM32 firmware
    /// (scripts/firmware-size.sh). The indices come from exhaustive
    /// matches, so a new flavour or kind needs its index given here, and
    /// `every_prefix_is_the_documented_one` reads every cell.
    const fn prefix_parts(self, kind: NodeKind) -> (&'static str, bool, &'static str) {
        const MARKERS: [[&str; 4]; 3] = [
            ["-lock-", "-read-", "-write-", "-n_"],
            ["-lock-", "-__READ__", "-__WRIT__", "-latch-"],
            ["__lock__", "__rlock__", "__lock__", "__lock__"],
        ];
        let (row, lead, hyphens) = match self {
            Flavour::Recipes => (0, "", true),
            Flavour::Curator => (1, "_c_", true),
            Flavour::Kazoo => (2, "", false),
        };
        let column = match kind {
            NodeKind::Lock => 0,
            NodeKind::Read => 1,
            NodeKind::Write => 2,
            NodeKind::Candidate => 3,
        };
        (lead, hyphens, MARKERS[row][column])
    }

    /// Whether `name` is the node this flavour created for `guid`.
    pub fn is_own(self, kind: NodeKind, guid: &Guid, name: &str) -> bool {
        self.own_sequence(kind, guid, name).is_some()
    }

    /// The sequence number of `name` if it is the node this flavour created
    /// for `guid`.
    pub fn own_sequence(self, kind: NodeKind, guid: &Guid, name: &str) -> Option<crate::Sequence> {
        let is_prefix = |prefix: &str| {
            let mut matcher = PrefixMatcher {
                rest: prefix,
                ok: true,
            };
            let written = self.write_prefix(kind, guid, &mut matcher).is_ok();
            written && matcher.ok && matcher.rest.is_empty()
        };
        crate::Sequence::split_where(name, is_prefix)
            .ok()
            .map(|(_, seq)| seq)
    }
}

/// Compares written text with a target without buffering it.
struct PrefixMatcher<'a> {
    rest: &'a str,
    ok: bool,
}

impl Write for PrefixMatcher<'_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        // Once a piece differs the answer is no, whatever follows.
        match self.rest.strip_prefix(s) {
            Some(rest) => self.rest = rest,
            None => self.ok = false,
        }
        Ok(())
    }
}

/// Markers that end the prefix of a lock contender, whoever wrote it: the
/// recipes page and Curator (`…lock-NNNNNNNNNN`) and Kazoo
/// (`…__lock__NNNNNNNNNN`). Anything else in a lock directory (a sub-lock, a
/// stray node) is not a contender and must not block the lock (CURATOR-43).
const LOCK_MARKERS: &[&str] = &["lock-", "__lock__"];

/// Markers of a shared lock's writers, whoever wrote them: the recipes
/// page's `write-`, Curator's `__WRIT__`, and every exclusive-lock marker
/// (Kazoo's `WriteLock` writes `__lock__`, and an exclusive lock sharing the
/// directory must exclude readers like a writer does).
const WRITE_MARKERS: &[&str] = &["write-", "__WRIT__", "lock-", "__lock__"];

/// Markers of a shared lock's readers: the recipes page's `read-`,
/// Curator's `__READ__`, Kazoo's `__rlock__`.
const READ_MARKERS: &[&str] = &["read-", "__READ__", "__rlock__"];

/// Markers that end the prefix of an election candidate, whoever wrote it:
/// the recipes page (`…n_NNNNNNNNNN`, also ZooKeeper's own
/// `LeaderElectionSupport`), Curator's `LeaderLatch` (`…latch-NNNNNNNNNN`)
/// and `LeaderSelector` (a mutex: `…lock-NNNNNNNNNN`), and Kazoo's
/// `Election` (a lock: `…__lock__NNNNNNNNNN`). The acknowledgement node
/// (`leader`) and anything else without such a suffix is not a candidate.
const CANDIDATE_MARKERS: &[&str] = &["n_", "latch-", "lock-", "__lock__"];

/// The sequence number of `name` if it is a contender of `kind`, whichever
/// library created it.
///
/// For [`NodeKind::Write`] this includes exclusive-lock nodes (`lock-`,
/// `__lock__`): in a shared lock's directory they exclude like writers.
///
/// ```
/// use herdless_core::naming::{contender_sequence, NodeKind};
///
/// let seq = |kind, name| contender_sequence(kind, name).map(|s| s.value());
/// assert_eq!(seq(NodeKind::Read, "_c_0c1d-__READ__0000000004"), Some(4));
/// assert_eq!(seq(NodeKind::Write, "0c1d__lock__0000000005"), Some(5));
/// assert_eq!(seq(NodeKind::Write, "0c1d__rlock__0000000006"), None);
/// ```
pub fn contender_sequence(kind: NodeKind, name: &str) -> Option<crate::Sequence> {
    let markers = match kind {
        NodeKind::Lock => LOCK_MARKERS,
        NodeKind::Read => READ_MARKERS,
        NodeKind::Write => WRITE_MARKERS,
        NodeKind::Candidate => CANDIDATE_MARKERS,
    };
    // The marker tells a negative eleven-character suffix from a positive
    // one after a `-` (`lock--1000000005` against `lock-1000000005`).
    let after_marker = |prefix: &str| markers.iter().any(|m| prefix.ends_with(m));
    crate::Sequence::split_where(name, after_marker)
        .ok()
        .map(|(_, seq)| seq)
}

/// Whether `name` is a reader or a writer of a shared lock (whichever
/// library wrote it), with its sequence number; `None` for anything else in
/// the directory, which takes no part in the lock (CURATOR-43).
///
/// ```
/// use herdless_core::naming::{shared_contender, NodeKind};
///
/// let kind = |name| shared_contender(name).map(|(kind, _)| kind);
/// assert_eq!(kind("0c1d-read-0000000001"), Some(NodeKind::Read));
/// assert_eq!(kind("0c1d-write-0000000002"), Some(NodeKind::Write));
/// assert_eq!(kind("0c1d__rlock__0000000003"), Some(NodeKind::Read));
/// assert_eq!(kind("leases"), None);
/// ```
pub fn shared_contender(name: &str) -> Option<(NodeKind, crate::Sequence)> {
    if let Some(seq) = contender_sequence(NodeKind::Write, name) {
        Some((NodeKind::Write, seq))
    } else {
        contender_sequence(NodeKind::Read, name).map(|seq| (NodeKind::Read, seq))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use heapless::String;

    const G: Guid = Guid([
        0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0x4d, 0xef, 0x81, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd,
        0xef,
    ]);

    fn prefix(f: Flavour) -> String<80> {
        let mut s = String::new();
        f.write_prefix(NodeKind::Lock, &G, &mut s).unwrap();
        s
    }

    #[test]
    fn flavours_write_the_names_each_library_uses() {
        assert_eq!(
            prefix(Flavour::Recipes).as_str(),
            "12345678-9abc-4def-8123-456789abcdef-lock-"
        );
        assert_eq!(
            prefix(Flavour::Curator).as_str(),
            "_c_12345678-9abc-4def-8123-456789abcdef-lock-"
        );
        assert_eq!(
            prefix(Flavour::Kazoo).as_str(),
            "123456789abc4def8123456789abcdef__lock__"
        );
    }

    #[test]
    fn own_node_is_recognised_only_with_its_guid_and_a_suffix() {
        for f in [Flavour::Recipes, Flavour::Curator, Flavour::Kazoo] {
            let mut name: String<80> = prefix(f);
            assert!(!f.is_own(NodeKind::Lock, &G, &name));
            name.push_str("0000000003").unwrap();
            assert!(f.is_own(NodeKind::Lock, &G, &name));
            assert!(!f.is_own(NodeKind::Lock, &Guid([0; 16]), &name));
        }
        assert!(!Flavour::Recipes.is_own(
            NodeKind::Lock,
            &G,
            "x12345678-9abc-4def-8123-456789abcdef-lock-0000000003"
        ));
    }

    #[test]
    fn contenders_of_every_library_are_recognised() {
        let seq = |n| contender_sequence(NodeKind::Lock, n).map(|s| s.value());
        assert_eq!(
            seq("12345678-9abc-4def-8123-456789abcdef-lock-0000000005"),
            Some(5)
        );
        assert_eq!(
            seq("_c_12345678-9abc-4def-8123-456789abcdef-lock-0000000004"),
            Some(4)
        );
        assert_eq!(
            seq("0123456789abcdef0123456789abcdef__lock__0000000003"),
            Some(3)
        );
        assert_eq!(seq("lock-0000000002"), Some(2));
        assert_eq!(seq("x__rlock__0000000002"), None);
        assert_eq!(seq("sub-lock-dir"), None);
        assert_eq!(seq("leases"), None);
        assert_eq!(seq("abc-0000000001"), None);
    }

    fn prefix_of(f: Flavour, kind: NodeKind) -> String<80> {
        let mut s = String::new();
        f.write_prefix(kind, &G, &mut s).unwrap();
        s
    }

    #[test]
    fn shared_lock_names_follow_each_library() {
        let cases = [
            (
                Flavour::Recipes,
                NodeKind::Read,
                "12345678-9abc-4def-8123-456789abcdef-read-",
            ),
            (
                Flavour::Recipes,
                NodeKind::Write,
                "12345678-9abc-4def-8123-456789abcdef-write-",
            ),
            (
                Flavour::Curator,
                NodeKind::Read,
                "_c_12345678-9abc-4def-8123-456789abcdef-__READ__",
            ),
            (
                Flavour::Curator,
                NodeKind::Write,
                "_c_12345678-9abc-4def-8123-456789abcdef-__WRIT__",
            ),
            (
                Flavour::Kazoo,
                NodeKind::Read,
                "123456789abc4def8123456789abcdef__rlock__",
            ),
            (
                Flavour::Kazoo,
                NodeKind::Write,
                "123456789abc4def8123456789abcdef__lock__",
            ),
        ];
        for (flavour, kind, expected) in cases {
            let written = prefix_of(flavour, kind);
            assert_eq!(written.as_str(), expected);
            let mut name: String<80> = written.clone();
            name.push_str("0000000042").unwrap();
            assert!(flavour.is_own(kind, &G, &name));
            assert_eq!(
                shared_contender(&name).map(|(k, s)| (k, s.value())),
                Some((kind, 42)),
                "{name}"
            );
            // A reader's name is never taken for a writer's, nor the reverse.
            let other = if kind == NodeKind::Read {
                NodeKind::Write
            } else {
                NodeKind::Read
            };
            assert_eq!(contender_sequence(other, &name), None, "{name}");
        }
    }

    #[test]
    fn exclusive_lock_nodes_count_as_writers_of_a_shared_lock() {
        for name in [
            "12345678-9abc-4def-8123-456789abcdef-lock-0000000001",
            "_c_12345678-9abc-4def-8123-456789abcdef-lock-0000000001",
            "123456789abc4def8123456789abcdef__lock__0000000001",
        ] {
            assert_eq!(
                shared_contender(name).map(|(k, _)| k),
                Some(NodeKind::Write),
                "{name}"
            );
        }
        // The exclusive lock itself still ignores readers (as Kazoo's does).
        assert_eq!(
            contender_sequence(NodeKind::Lock, "x-read-0000000001"),
            None
        );
        assert_eq!(shared_contender("sub-read-dir"), None);
        assert_eq!(shared_contender("x-0000000001"), None);
    }

    #[test]
    fn candidates_are_named_as_each_library_names_them() {
        let candidate = |f: Flavour| {
            let mut s: String<80> = String::new();
            f.write_prefix(NodeKind::Candidate, &G, &mut s).unwrap();
            s
        };
        assert_eq!(
            candidate(Flavour::Recipes).as_str(),
            "12345678-9abc-4def-8123-456789abcdef-n_"
        );
        assert_eq!(
            candidate(Flavour::Curator).as_str(),
            "_c_12345678-9abc-4def-8123-456789abcdef-latch-"
        );
        assert_eq!(
            candidate(Flavour::Kazoo).as_str(),
            "123456789abc4def8123456789abcdef__lock__"
        );
        for f in [Flavour::Recipes, Flavour::Curator, Flavour::Kazoo] {
            let mut name = candidate(f);
            name.push_str("0000000009").unwrap();
            assert!(f.is_own(NodeKind::Candidate, &G, &name));
            assert_eq!(
                contender_sequence(NodeKind::Candidate, &name).map(|s| s.value()),
                Some(9)
            );
        }
        let seq = |n| contender_sequence(NodeKind::Candidate, n).map(|s| s.value());
        assert_eq!(seq("n_0000000001"), Some(1), "LeaderElectionSupport");
        assert_eq!(seq("_c_x-lock-0000000002"), Some(2), "LeaderSelector");
        assert_eq!(seq("leader"), None);
        assert_eq!(seq("status-0000000003"), None);
        // An election's candidates are not lock contenders.
        assert_eq!(
            contender_sequence(NodeKind::Lock, "12345678-n_0000000004"),
            None
        );
    }

    #[test]
    fn every_prefix_is_the_documented_one() {
        // The table of `Flavour`'s docs, written out: the names other
        // libraries' clients look for.
        let guid = Guid([0xab; 16]);
        let hyphenated = "abababab-abab-abab-abab-abababababab";
        let hex = "abababababababababababababababab";
        let expected = [
            (
                Flavour::Recipes,
                NodeKind::Lock,
                std::format!("{hyphenated}-lock-"),
            ),
            (
                Flavour::Recipes,
                NodeKind::Read,
                std::format!("{hyphenated}-read-"),
            ),
            (
                Flavour::Recipes,
                NodeKind::Write,
                std::format!("{hyphenated}-write-"),
            ),
            (
                Flavour::Recipes,
                NodeKind::Candidate,
                std::format!("{hyphenated}-n_"),
            ),
            (
                Flavour::Curator,
                NodeKind::Lock,
                std::format!("_c_{hyphenated}-lock-"),
            ),
            (
                Flavour::Curator,
                NodeKind::Read,
                std::format!("_c_{hyphenated}-__READ__"),
            ),
            (
                Flavour::Curator,
                NodeKind::Write,
                std::format!("_c_{hyphenated}-__WRIT__"),
            ),
            (
                Flavour::Curator,
                NodeKind::Candidate,
                std::format!("_c_{hyphenated}-latch-"),
            ),
            (
                Flavour::Kazoo,
                NodeKind::Lock,
                std::format!("{hex}__lock__"),
            ),
            (
                Flavour::Kazoo,
                NodeKind::Read,
                std::format!("{hex}__rlock__"),
            ),
            (
                Flavour::Kazoo,
                NodeKind::Write,
                std::format!("{hex}__lock__"),
            ),
            (
                Flavour::Kazoo,
                NodeKind::Candidate,
                std::format!("{hex}__lock__"),
            ),
        ];
        for (flavour, kind, want) in expected {
            let mut prefix: String<64> = String::new();
            flavour.write_prefix(kind, &guid, &mut prefix).unwrap();
            assert_eq!(prefix.as_str(), want, "{flavour:?} {kind:?}");
        }
    }

    #[test]
    fn every_prefix_is_as_long_as_measured() {
        let guid = Guid(core::array::from_fn(|i| i as u8 * 17));
        for flavour in [Flavour::Recipes, Flavour::Curator, Flavour::Kazoo] {
            for kind in [
                NodeKind::Lock,
                NodeKind::Read,
                NodeKind::Write,
                NodeKind::Candidate,
            ] {
                let mut prefix: String<64> = String::new();
                flavour.write_prefix(kind, &guid, &mut prefix).unwrap();
                assert_eq!(
                    prefix.len(),
                    flavour.prefix_len(kind),
                    "{flavour:?} {kind:?}"
                );
            }
        }
    }

    #[test]
    fn guid_from_random_bytes_is_a_v4_uuid() {
        let g = Guid::from_random_bytes([0xff; 16]);
        let mut s: String<40> = String::new();
        g.write_hyphenated(&mut s).unwrap();
        assert_eq!(&s[14..15], "4");
        assert!(matches!(&s[19..20], "8" | "9" | "a" | "b"));
    }

    #[test]
    fn guid_displays_hyphenated() {
        let g = Guid(core::array::from_fn(|i| i as u8 * 17));
        assert_eq!(
            crate::shown::shown(&g),
            "00112233-4455-6677-8899-aabbccddeeff"
        );
    }
}
