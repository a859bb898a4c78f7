//! Child lists, streamed in one pass without copying.
//!
//! Recipes walk a `getChildren` answer once, keeping O(1) state (the lowest
//! contender, the predecessor, a count), so their memory does not grow with
//! the number of contenders. The names stay where the driver has them: in a
//! `Vec<String>` on tokio, in the receive buffer on embedded.

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
    list: &'a dyn NameList,
    next: usize,
}

impl<'a> Children<'a> {
    /// Streams the names of `list`.
    pub fn new(list: &'a dyn NameList) -> Self {
        Children { list, next: 0 }
    }

    /// Number of names in the reply.
    pub fn count_all(&self) -> usize {
        self.list.len()
    }
}

impl<'a> Iterator for Children<'a> {
    type Item = &'a str;

    fn next(&mut self) -> Option<&'a str> {
        if self.next < self.list.len() {
            let name = self.list.get(self.next);
            self.next += 1;
            Some(name)
        } else {
            None
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = self.list.len().saturating_sub(self.next);
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
}
