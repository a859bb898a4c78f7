//! Node names: the GUID, the naming flavours, and contender recognition.
//!
//! A contender's node is `<prefix><sequence>`, where the prefix carries a
//! GUID so the creator can find its node again after a lost create reply.
//! Which prefix a node has depends on the library that wrote it; herdless
//! writes one of several [`Flavour`]s and *recognises all of them*, so a lock
//! shared with Curator or Kazoo clients orders everyone by sequence number.

use core::fmt::{self, Write};

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
        for (i, b) in self.0.iter().enumerate() {
            if matches!(i, 4 | 6 | 8 | 10) {
                out.write_char('-')?;
            }
            write!(out, "{b:02x}")?;
        }
        Ok(())
    }

    /// Writes the plain hex form (`uuid4().hex`, as Kazoo names nodes).
    pub fn write_simple(&self, out: &mut dyn Write) -> fmt::Result {
        for b in self.0.iter() {
            write!(out, "{b:02x}")?;
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
    /// A candidate of a leader election.
    Candidate,
}

/// How herdless names the nodes it creates.
///
/// | flavour | [`NodeKind::Lock`] | [`NodeKind::Candidate`] |
/// |---|---|---|
/// | `Recipes` | `<guid>-lock-0000000007` | `<guid>-n_0000000007` (the recipes page's `guid-n_`) |
/// | `Curator` | `_c_<guid>-lock-0000000007` | `_c_<guid>-latch-0000000007` (`LeaderLatch`) |
/// | `Kazoo` | `<hex>__lock__0000000007` | `<hex>__lock__0000000007` (Kazoo's `Election` is its `Lock`) |
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum Flavour {
    /// The ZooKeeper recipes page: `<guid>-lock-0000000007`,
    /// `<guid>-n_0000000007`.
    #[default]
    Recipes,
    /// Curator's protected names: `_c_<guid>-lock-0000000007`,
    /// `_c_<guid>-latch-0000000007`.
    Curator,
    /// Kazoo's: `<guid hex>__lock__0000000007` (for locks and elections).
    Kazoo,
}

impl Flavour {
    /// Writes the prefix of a new node of `kind` for `guid` (everything
    /// before the sequence number the server appends).
    ///
    /// ```
    /// use herdless_core::naming::{Flavour, Guid, NodeKind};
    ///
    /// let mut prefix = heapless::String::<64>::new();
    /// Flavour::Recipes
    ///     .write_prefix(NodeKind::Candidate, &Guid([0x11; 16]), &mut prefix)
    ///     .unwrap();
    /// assert_eq!(prefix.as_str(), "11111111-1111-1111-1111-111111111111-n_");
    /// ```
    pub fn write_prefix(self, kind: NodeKind, guid: &Guid, out: &mut dyn Write) -> fmt::Result {
        match self {
            Flavour::Recipes => {
                guid.write_hyphenated(out)?;
                out.write_str(match kind {
                    NodeKind::Lock => "-lock-",
                    NodeKind::Candidate => "-n_",
                })
            }
            Flavour::Curator => {
                out.write_str("_c_")?;
                guid.write_hyphenated(out)?;
                out.write_str(match kind {
                    NodeKind::Lock => "-lock-",
                    NodeKind::Candidate => "-latch-",
                })
            }
            Flavour::Kazoo => {
                guid.write_simple(out)?;
                out.write_str("__lock__")
            }
        }
    }

    /// Whether `name` is the node this flavour created for `guid`.
    pub fn is_own(self, kind: NodeKind, guid: &Guid, name: &str) -> bool {
        let Ok((prefix, _)) = crate::Sequence::split(name) else {
            return false;
        };
        let mut matcher = PrefixMatcher {
            rest: prefix,
            ok: true,
        };
        let written = self.write_prefix(kind, guid, &mut matcher).is_ok();
        written && matcher.ok && matcher.rest.is_empty()
    }
}

/// Compares written text with a target without buffering it.
struct PrefixMatcher<'a> {
    rest: &'a str,
    ok: bool,
}

impl Write for PrefixMatcher<'_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        match self.rest.strip_prefix(s) {
            Some(rest) if self.ok => self.rest = rest,
            _ => self.ok = false,
        }
        Ok(())
    }
}

/// Markers that end the prefix of a lock contender, whoever wrote it: the
/// recipes page and Curator (`…lock-NNNNNNNNNN`) and Kazoo
/// (`…__lock__NNNNNNNNNN`). Anything else in a lock directory (a sub-lock, a
/// stray node) is not a contender and must not block the lock (CURATOR-43).
const LOCK_MARKERS: &[&str] = &["lock-", "__lock__"];

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
/// ```
/// use herdless_core::naming::{contender_sequence, NodeKind};
///
/// let seq = |name| contender_sequence(NodeKind::Candidate, name).map(|s| s.value());
/// assert_eq!(seq("0f0e-n_0000000004"), Some(4));
/// assert_eq!(seq("_c_0f0e-latch-0000000003"), Some(3));
/// assert_eq!(seq("leader"), None);
/// ```
pub fn contender_sequence(kind: NodeKind, name: &str) -> Option<crate::Sequence> {
    let markers = match kind {
        NodeKind::Lock => LOCK_MARKERS,
        NodeKind::Candidate => CANDIDATE_MARKERS,
    };
    let (prefix, seq) = crate::Sequence::split(name).ok()?;
    markers.iter().any(|m| prefix.ends_with(m)).then_some(seq)
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
    fn guid_from_random_bytes_is_a_v4_uuid() {
        let g = Guid::from_random_bytes([0xff; 16]);
        let mut s: String<40> = String::new();
        g.write_hyphenated(&mut s).unwrap();
        assert_eq!(&s[14..15], "4");
        assert!(matches!(&s[19..20], "8" | "9" | "a" | "b"));
    }
}
