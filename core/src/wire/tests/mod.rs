//! Byte-exact tests of the codec against layouts derived from the protocol
//! reference.
#![allow(clippy::indexing_slicing)]

mod decode;
mod encode;

extern crate std;

use std::vec::Vec;

/// Bytes from a string of hex pairs separated by spaces.
fn hex(s: &str) -> Vec<u8> {
    s.split_whitespace()
        .map(|b| u8::from_str_radix(b, 16).unwrap())
        .collect()
}
