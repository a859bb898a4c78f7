//! Child lists, streamed in one pass without copying.
//!
//! Recipes walk a `getChildren` answer once, keeping O(1) state (the lowest
//! contender, the predecessor, a count), so their memory does not grow with
//! the number of contenders. The names stay where the driver has them: in a
//! `Vec<String>` on tokio, in the receive buffer on embedded (where
//! [`wire`](crate::wire) hands out a `Children` that decodes the reply's
//! jute vector of strings lazily, one name per step).

/// Random access to a list of names, however the driver stores them.
///
/// Implemented for slices of anything that is `AsRef<str>` (`&[String]`,
/// `&[&str]`), which is what hosted drivers and tests have at hand.
pub trait NameList {
    /// Number of names.
    fn len(&self) -> usize;
    /// The `index`-th name (`index < len()`).
    fn get(&self, index: usize) -> &str;
    /// Whether the list is empty.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl<S: AsRef<str>> NameList for &[S] {
    fn len(&self) -> usize {
        <[S]>::len(self)
    }

    fn get(&self, index: usize) -> &str {
        self[index].as_ref()
    }
}

/// A borrowed iterator over the children names of one reply.
#[derive(Clone)]
pub struct Children<'a> {
    source: Source<'a>,
}

/// Where the names are: a list the driver built, or the raw bytes of a
/// reply still in the receive buffer.
#[derive(Clone)]
enum Source<'a> {
    List {
        list: &'a dyn NameList,
        next: usize,
    },
    /// The elements of a jute `vector<ustring>` after its count: each a
    /// 4-byte big-endian length and that many UTF-8 bytes. Only built by
    /// the wire decoder once it has checked every length and every name, so
    /// stepping through it cannot fail.
    Jute {
        rest: &'a [u8],
        left: usize,
        total: usize,
    },
}

impl<'a> Children<'a> {
    /// Streams the names of `list`.
    pub fn new(list: &'a dyn NameList) -> Self {
        Children {
            source: Source::List { list, next: 0 },
        }
    }

    /// Streams `count` names from `elements`, the bytes of a jute vector of
    /// strings after its count. The caller has validated them (see
    /// `wire::jute::Reader::names`).
    pub(crate) fn from_validated_jute(elements: &'a [u8], count: usize) -> Self {
        Children {
            source: Source::Jute {
                rest: elements,
                left: count,
                total: count,
            },
        }
    }

    /// Number of names in the reply.
    pub fn count_all(&self) -> usize {
        match self.source {
            Source::List { list, .. } => list.len(),
            Source::Jute { total, .. } => total,
        }
    }
}

/// One element of a validated jute string vector and the bytes after it;
/// `None` only if the bytes were not validated after all.
fn next_jute_name(rest: &[u8]) -> Option<(&str, &[u8])> {
    let (len, rest) = rest.split_first_chunk::<4>()?;
    // -1 (null) reads as an empty name, like every null string on the wire.
    let len = usize::try_from(i32::from_be_bytes(*len)).unwrap_or(0);
    let (name, rest) = rest.split_at_checked(len)?;
    Some((core::str::from_utf8(name).ok()?, rest))
}

impl<'a> Iterator for Children<'a> {
    type Item = &'a str;

    fn next(&mut self) -> Option<&'a str> {
        match &mut self.source {
            Source::List { list, next } => {
                if *next < list.len() {
                    let name = list.get(*next);
                    *next += 1;
                    Some(name)
                } else {
                    None
                }
            }
            Source::Jute { rest, left, .. } => {
                if *left == 0 {
                    return None;
                }
                match next_jute_name(rest) {
                    Some((name, after)) => {
                        *rest = after;
                        *left -= 1;
                        Some(name)
                    }
                    None => {
                        *left = 0;
                        None
                    }
                }
            }
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = match self.source {
            Source::List { list, next } => list.len().saturating_sub(next),
            Source::Jute { left, .. } => left,
        };
        (left, Some(left))
    }
}

impl core::fmt::Debug for Children<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_list().entries(self.clone()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_any_slice_of_names() {
        let names = ["a", "b", "c"];
        let slice: &[&str] = &names;
        let children = Children::new(&slice);
        assert_eq!(children.count_all(), 3);
        assert_eq!(
            children.collect::<heapless::Vec<_, 4>>().as_slice(),
            &["a", "b", "c"]
        );
    }

    #[test]
    fn a_slice_is_empty_only_without_names() {
        let none: &[&str] = &[];
        let one: &[&str] = &["a"];
        assert!(NameList::is_empty(&none));
        assert!(!NameList::is_empty(&one));
    }

    #[test]
    fn debug_lists_the_names_without_consuming_them() {
        use core::fmt::Write;
        let bytes = [0, 0, 0, 1, b'x', 0, 0, 0, 2, b'y', b'z'];
        let children = Children::from_validated_jute(&bytes, 2);
        let mut shown = heapless::String::<32>::new();
        write!(shown, "{children:?}").unwrap();
        assert_eq!(shown, r#"["x", "yz"]"#);
        assert_eq!(children.count(), 2);
    }

    #[test]
    fn streams_a_validated_jute_vector() {
        let bytes = [0, 0, 0, 1, b'x', 0, 0, 0, 0, 0, 0, 0, 2, b'y', b'z'];
        let mut children = Children::from_validated_jute(&bytes, 3);
        assert_eq!(children.count_all(), 3);
        assert_eq!(children.size_hint(), (3, Some(3)));
        assert_eq!(children.next(), Some("x"));
        assert_eq!(children.size_hint(), (2, Some(2)), "one name taken");
        assert_eq!(children.count_all(), 3, "all names, taken or not");
        assert_eq!(
            children.collect::<heapless::Vec<_, 4>>().as_slice(),
            &["", "yz"]
        );
    }

    #[test]
    fn a_jute_vector_shorter_than_announced_ends_early() {
        let bytes = [0, 0, 0, 5, b'x'];
        assert_eq!(Children::from_validated_jute(&bytes, 2).count(), 0);
    }
}
