//! The size of a handle's future, for the tests that keep a waiting
//! contender's memory small.

/// The size of what `make` returns, without calling it: `make` can build
/// its receiver with `unreachable!()`, as only its type is used.
pub(crate) fn size_of_output<F>(_make: impl FnOnce() -> F) -> usize {
    std::mem::size_of::<F>()
}
