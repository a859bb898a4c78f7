//! Arbitrary bytes as a listing's body, read through a receive buffer of
//! arbitrary size by the incremental decoder, as the embedded driver reads
//! a listing larger than its buffer. The names that come out, part by
//! part, must be exactly those of the whole-frame decoder, and the two
//! must fail alike; nothing may panic or read out of bounds.
#![no_main]

use herdless_core::wire::listing::ListingDecoder;
use herdless_core::wire::{decode, Expect, Response};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&window, body)) = data.split_first() else {
        return;
    };
    // 8..=263 bytes: small windows cut names everywhere.
    let window = usize::from(window) + 8;
    let whole: Option<Vec<&str>> = match decode::response(Expect::GetChildren, 0, body) {
        Ok(Response::Children(children)) => Some(children.collect()),
        _ => None,
    };
    let mut decoder = ListingDecoder::new();
    let mut names: Vec<String> = Vec::new();
    let mut at = 0;
    let outcome = loop {
        if decoder.is_done() {
            break Outcome::Done;
        }
        let end = (at + window).min(body.len());
        let Ok(part) = decoder.decode(&body[at..end]) else {
            break Outcome::Corrupt;
        };
        names.extend(part.names.map(String::from));
        if part.consumed == 0 {
            // A name longer than the window, or the body ends inside one.
            break Outcome::Stuck;
        }
        at += part.consumed;
    };
    match (whole, outcome) {
        (Some(expected), Outcome::Done) => assert_eq!(names, expected),
        (Some(expected), Outcome::Stuck) => {
            // Only a name over the window stops a listing the whole
            // decoder reads: every name before it came out the same.
            assert!(expected.iter().any(|n| n.len() + 4 > window));
            assert_eq!(names, expected[..names.len()]);
        }
        (Some(_), Outcome::Corrupt) => panic!("a listing the whole decoder reads was refused"),
        (None, Outcome::Done) => panic!("the incremental decoder read a corrupt listing"),
        (None, Outcome::Stuck | Outcome::Corrupt) => {}
    }
});

enum Outcome {
    Done,
    Stuck,
    Corrupt,
}
