//! ZooKeeper path validation and allocation-free composition.
//!
//! The rules are the server's (`PathUtils.validatePath` in ZooKeeper 3.8):
//! absolute, no empty segments, no trailing slash (except the root), no `.`
//! or `..` segments, no control or private-use characters. Checking them in
//! the client turns a server round trip ending in `BadArguments` into a typed
//! error at the call site.

use core::fmt;
use heapless::String;

/// Why a path was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum PathError {
    /// The path is empty.
    Empty,
    /// The path does not start with `/`.
    NotAbsolute,
    /// The path ends with `/` (only the root may).
    TrailingSlash,
    /// The path contains `//` (an empty segment) at this byte offset.
    EmptySegment {
        /// Byte offset of the second slash.
        at: usize,
    },
    /// The path contains a `.` or `..` segment starting at this byte offset.
    RelativeSegment {
        /// Byte offset of the segment.
        at: usize,
    },
    /// The path contains a character the server refuses (NUL, a control
    /// character, U+007F–U+009F, U+E000–U+F8FF, U+FFF0–U+FFFF, or any
    /// character outside the Basic Multilingual Plane, which Java would
    /// encode as surrogates) at this byte offset.
    ForbiddenChar {
        /// Byte offset of the character.
        at: usize,
    },
    /// The composed path needs `needed` bytes but the buffer holds `capacity`.
    TooLong {
        /// Bytes the path needs.
        needed: usize,
        /// Bytes the buffer can hold.
        capacity: usize,
    },
    /// A node name (one segment) is empty or contains `/`.
    BadName,
}

impl fmt::Display for PathError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PathError::Empty => f.write_str("path is empty"),
            PathError::NotAbsolute => f.write_str("path must start with '/'"),
            PathError::TrailingSlash => f.write_str("path must not end with '/'"),
            PathError::EmptySegment { at } => write!(f, "empty path segment at byte {at}"),
            PathError::RelativeSegment { at } => {
                write!(f, "'.' or '..' segment at byte {at}")
            }
            PathError::ForbiddenChar { at } => write!(f, "forbidden character at byte {at}"),
            PathError::TooLong { needed, capacity } => {
                write!(
                    f,
                    "path needs {needed} bytes but the buffer holds {capacity}"
                )
            }
            PathError::BadName => f.write_str("node name is empty or contains '/'"),
        }
    }
}

/// The byte offset of the first character the server refuses in a path:
/// U+0000..U+001F, U+007F..U+009F, U+E000..U+F8FF and U+FFF0 on (the
/// server refuses U+FFF0..U+FFFF, and any character beyond them reaches
/// it as a surrogate pair).
///
/// Read from the UTF-8 bytes by each character's lead byte (and the one or
/// two after it) rather than from decoded `char`s: the decoding measured
/// 40 B more herdless code in the STM32 firmware
/// (scripts/firmware-size.sh). A continuation byte (0x80..=0xbf) never
/// matches a lead byte below.
fn first_forbidden(bytes: &[u8]) -> Option<usize> {
    let at = |i: usize| bytes.get(i).copied().unwrap_or(0);
    (0..bytes.len()).find(|&i| match at(i) {
        0x00..=0x1f | 0x7f | 0xee | 0xf0..=0xff => true,
        0xc2 => at(i + 1) <= 0x9f,
        0xef => at(i + 1) <= 0xa3 || (at(i + 1) == 0xbf && at(i + 2) >= 0xb0),
        _ => false,
    })
}

/// Checks `path` against the server's rules for an existing node's path.
pub fn validate(path: &str) -> Result<(), PathError> {
    validate_inner(path, false)
}

/// Checks the path given to a sequential create, which may end in `/`
/// (`/queue/` creates `/queue/0000000007`).
pub fn validate_sequential_prefix(path: &str) -> Result<(), PathError> {
    validate_inner(path, true)
}

fn validate_inner(path: &str, sequential: bool) -> Result<(), PathError> {
    let bytes = path.as_bytes();
    match bytes.first() {
        None => return Err(PathError::Empty),
        Some(b'/') => {}
        Some(_) => return Err(PathError::NotAbsolute),
    }
    if bytes.len() == 1 {
        return Ok(());
    }
    if !sequential && bytes[bytes.len() - 1] == b'/' {
        return Err(PathError::TrailingSlash);
    }
    if let Some(at) = first_forbidden(bytes) {
        return Err(PathError::ForbiddenChar { at });
    }
    // Segments between slashes; with a sequential prefix the last one may be empty.
    // Split as bytes: `str::split` searches word by word, which costs
    // flash where paths are short.
    let mut start = 1;
    for segment in bytes[1..].split(|&b| b == b'/') {
        let is_last = start + segment.len() == path.len();
        if segment.is_empty() && !(sequential && is_last) {
            return Err(PathError::EmptySegment { at: start });
        }
        if segment == b"." || segment == b".." {
            return Err(PathError::RelativeSegment { at: start });
        }
        start += segment.len() + 1;
    }
    Ok(())
}

/// Checks one node name (a path segment).
pub fn validate_name(name: &str) -> Result<(), PathError> {
    // Bytes rather than `str::contains`, whose word-at-a-time search
    // costs flash for names of some tens of bytes.
    if name.is_empty() || name.bytes().any(|b| b == b'/') {
        return Err(PathError::BadName);
    }
    if name == "." || name == ".." {
        return Err(PathError::RelativeSegment { at: 0 });
    }
    match first_forbidden(name.as_bytes()) {
        Some(at) => Err(PathError::ForbiddenChar { at }),
        None => Ok(()),
    }
}

/// The last segment of a path (`"/a/b"` gives `"b"`, `"/"` gives `""`).
pub fn basename(path: &str) -> &str {
    match last_slash(path) {
        Some(i) => path.get(i + 1..).unwrap_or_default(),
        None => path,
    }
}

/// Where the last `/` of `path` is. A plain scan from the end: paths are
/// short, and `str::rfind`'s word-at-a-time search costs some 200 bytes
/// of flash wherever it is inlined.
fn last_slash(path: &str) -> Option<usize> {
    path.bytes().rposition(|b| b == b'/')
}

/// The parent of a path (`"/a/b"` gives `"/a"`, `"/a"` gives `"/"`), or
/// `None` for the root.
pub fn parent(path: &str) -> Option<&str> {
    match last_slash(path) {
        _ if path == "/" => None,
        Some(0) => Some("/"),
        Some(i) => Some(&path[..i]),
        None => None,
    }
}

/// Writes `parts` one after the other into a fresh `heapless::String<N>`,
/// failing with [`PathError::TooLong`] instead of truncating.
pub fn concat<const N: usize>(parts: &[&str]) -> Result<String<N>, PathError> {
    let mut out = String::new();
    concat_into(&mut out, parts)?;
    Ok(out)
}

/// Replaces the content of `out` with `parts` concatenated, failing with
/// [`PathError::TooLong`] (and leaving `out` empty) if they do not fit.
pub fn concat_into<const N: usize>(out: &mut String<N>, parts: &[&str]) -> Result<(), PathError> {
    out.clear();
    let needed: usize = parts.iter().map(|p| p.len()).sum();
    if needed > N {
        return Err(PathError::TooLong {
            needed,
            capacity: N,
        });
    }
    for part in parts {
        // Cannot fail: the total length was checked above.
        let _ = out.push_str(part);
    }
    Ok(())
}

/// The length of [`join`]`(dir, name)`: no separator is added after a `dir`
/// that ends with one (the root).
pub fn joined_len(dir: &str, name: &str) -> usize {
    // The slash as a `str` here and in `join_into`: as a `char` pattern
    // it took 14 B more herdless code and 32 B more flash in the STM32
    // firmware (scripts/firmware-size.sh).
    dir.len() + usize::from(!dir.ends_with("/")) + name.len()
}

/// `dir + "/" + name` (or `"/" + name` when `dir` is the root) into a
/// `heapless::String<N>`, failing with [`PathError::TooLong`] instead of
/// truncating. Only the length is checked: check the parts with
/// [`validate`] and [`validate_name`] first.
pub fn join<const N: usize>(dir: &str, name: &str) -> Result<String<N>, PathError> {
    let mut out = String::new();
    join_into(&mut out, dir, name)?;
    Ok(out)
}

/// [`join`] into an existing buffer.
pub fn join_into<const N: usize>(
    out: &mut String<N>,
    dir: &str,
    name: &str,
) -> Result<(), PathError> {
    let sep = if dir.ends_with("/") { "" } else { "/" };
    concat_into(out, &[dir, sep, name])
}

/// Byte index where the `level`-th ancestor of `dir` ends (`level` 1 is the
/// topmost component; the deepest is `dir` itself): what recipes create,
/// one level after the other, when their directory is missing.
pub(crate) fn nth_ancestor_end(dir: &str, level: u8) -> usize {
    // A byte scan, as in `validate_name`: with these two, nothing in a
    // firmware running the lock and the election needs `str`'s searches.
    let mut ends_before = level.saturating_sub(1);
    for (i, b) in dir.bytes().enumerate().skip(1) {
        if b == b'/' {
            if ends_before == 0 {
                return i;
            }
            ends_before -= 1;
        }
    }
    dir.len()
}

/// Number of components of an absolute path (`/a/b` has 2).
pub(crate) fn depth(dir: &str) -> u8 {
    u8::try_from(dir.bytes().filter(|&b| b == b'/').count()).unwrap_or(u8::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The server's rule, character by character: the oracle for
    /// `first_forbidden`'s reading of bytes.
    fn forbidden(c: char) -> bool {
        matches!(c,
            '\u{0}'..='\u{1f}'
            | '\u{7f}'..='\u{9f}'
            | '\u{e000}'..='\u{f8ff}'
            | '\u{fff0}'..=char::MAX)
    }

    fn first_forbidden_char(text: &str) -> Option<usize> {
        text.char_indices()
            .find(|&(_, c)| forbidden(c))
            .map(|(at, _)| at)
    }

    #[test]
    fn every_character_is_judged_as_the_server_does() {
        let mut buf = [0u8; 8];
        for c in (0..=u32::from(char::MAX)).filter_map(char::from_u32) {
            // Behind a harmless character, so that the offset counts too.
            buf[0] = b'a';
            let text = &*c.encode_utf8(&mut buf[1..]);
            let len = 1 + text.len();
            let expected = forbidden(c).then_some(1);
            assert_eq!(first_forbidden(&buf[..len]), expected, "{c:?}");
        }
    }

    proptest::proptest! {
        /// Differential: any text, the first refused character found in
        /// its bytes is the one found among its characters.
        #[test]
        fn the_byte_reading_agrees_with_the_characters(text in r"\PC*|[\x00-\x7f\u{80}-\u{a0}\u{d7ff}\u{e000}\u{e001}\u{f8fe}-\u{f900}\u{ffef}-\u{fff1}\u{10000}]{0,12}") {
            proptest::prop_assert_eq!(first_forbidden(text.as_bytes()), first_forbidden_char(&text));
        }
    }

    #[test]
    fn joined_len_is_the_length_of_the_join() {
        for (dir, name) in [("/", "a"), ("/q", "item"), ("/a/b", "c")] {
            let joined: String<16> = join(dir, name).unwrap();
            assert_eq!(joined_len(dir, name), joined.len(), "{dir} + {name}");
        }
    }

    #[test]
    fn accepts_the_servers_valid_paths() {
        for p in [
            "/",
            "/a",
            "/a/b",
            "/zookeeper/quota",
            "/a/.b",
            "/a/..b",
            "/ü/日本",
        ] {
            assert_eq!(validate(p), Ok(()), "{p}");
        }
    }

    #[test]
    fn refuses_what_the_server_refuses() {
        assert_eq!(validate(""), Err(PathError::Empty));
        assert_eq!(validate("a/b"), Err(PathError::NotAbsolute));
        assert_eq!(validate("/a/"), Err(PathError::TrailingSlash));
        assert_eq!(validate("/a//b"), Err(PathError::EmptySegment { at: 3 }));
        assert_eq!(
            validate("/a/./b"),
            Err(PathError::RelativeSegment { at: 3 })
        );
        assert_eq!(validate("/a/.."), Err(PathError::RelativeSegment { at: 3 }));
        assert_eq!(validate("/a\0"), Err(PathError::ForbiddenChar { at: 2 }));
        assert_eq!(validate("/a\u{1}"), Err(PathError::ForbiddenChar { at: 2 }));
        assert_eq!(validate("/\u{85}"), Err(PathError::ForbiddenChar { at: 1 }));
        assert_eq!(
            validate("/\u{e000}"),
            Err(PathError::ForbiddenChar { at: 1 })
        );
        assert_eq!(
            validate("/\u{fff5}"),
            Err(PathError::ForbiddenChar { at: 1 })
        );
        assert_eq!(
            validate("/\u{1f600}"),
            Err(PathError::ForbiddenChar { at: 1 })
        );
    }

    #[test]
    fn a_name_is_one_valid_segment() {
        assert_eq!(validate_name("lock-0000000001"), Ok(()));
        assert_eq!(validate_name("..."), Ok(()));
        assert_eq!(validate_name(""), Err(PathError::BadName));
        assert_eq!(validate_name("a/b"), Err(PathError::BadName));
        assert_eq!(validate_name("/"), Err(PathError::BadName));
        assert_eq!(
            validate_name("."),
            Err(PathError::RelativeSegment { at: 0 })
        );
        assert_eq!(
            validate_name(".."),
            Err(PathError::RelativeSegment { at: 0 })
        );
        assert_eq!(
            validate_name("ab\u{7f}"),
            Err(PathError::ForbiddenChar { at: 2 })
        );
    }

    #[test]
    fn forbidden_ranges_end_where_the_servers_do() {
        let refused = |c: char| {
            let mut path: String<8> = String::new();
            path.push('/').unwrap();
            path.push(c).unwrap();
            validate(&path).is_err()
        };
        for c in [
            '\u{1f}', '\u{7f}', '\u{9f}', '\u{e000}', '\u{f8ff}', '\u{fff0}',
        ] {
            assert!(refused(c), "{c:?}");
        }
        for c in ['\u{ffff}', '\u{10000}', char::MAX] {
            assert!(refused(c), "{c:?}");
        }
        for c in [' ', '~', '\u{a0}', '\u{d7ff}', '\u{f900}', '\u{ffef}'] {
            assert!(!refused(c), "{c:?}");
        }
    }

    #[test]
    fn sequential_prefix_may_end_in_slash() {
        assert_eq!(validate_sequential_prefix("/q/"), Ok(()));
        assert_eq!(validate_sequential_prefix("/q/x-"), Ok(()));
        assert_eq!(
            validate_sequential_prefix("/q//"),
            Err(PathError::EmptySegment { at: 3 })
        );
    }

    #[test]
    fn composition_errors_instead_of_truncating() {
        let ok: String<8> = join("/a", "bcd").unwrap();
        assert_eq!(ok.as_str(), "/a/bcd");
        let root: String<8> = join("/", "x").unwrap();
        assert_eq!(root.as_str(), "/x");
        let parts: String<8> = concat(&["/a", "", "/b"]).unwrap();
        assert_eq!(parts.as_str(), "/a/b");
        let mut out: String<4> = concat(&["/old"]).unwrap();
        assert_eq!(
            concat_into(&mut out, &["/a", "/b", "/c"]),
            Err(PathError::TooLong {
                needed: 6,
                capacity: 4
            })
        );
        assert_eq!(out.as_str(), "", "nothing left behind on failure");
        let err = join::<6>("/a", "bcdef");
        assert_eq!(
            err,
            Err(PathError::TooLong {
                needed: 8,
                capacity: 6
            })
        );
    }

    #[test]
    fn parent_and_basename() {
        assert_eq!(parent("/a/b"), Some("/a"));
        assert_eq!(parent("/a"), Some("/"));
        assert_eq!(parent("/"), None);
        assert_eq!(basename("/a/b"), "b");
    }
}
