//! For unit tests: what a value's `Display` writes, without an allocator.

use core::fmt::{self, Write};

/// The text `value` displays (up to 128 bytes).
pub(crate) fn shown(value: &dyn fmt::Display) -> heapless::String<128> {
    let mut text = heapless::String::new();
    write!(text, "{value}").unwrap();
    text
}
