//! Arbitrary bytes as a receive buffer: split into frames, and every frame
//! through every decoder, iterating the lazy child lists and multi results
//! to the end. Nothing may panic or read out of bounds.
#![no_main]

use herdless_core::wire::{decode, frame, Expect, Response};
use libfuzzer_sys::fuzz_target;

const EXPECTS: [Expect; 9] = [
    Expect::Create,
    Expect::Create2,
    Expect::Delete,
    Expect::Exists,
    Expect::GetData,
    Expect::SetData,
    Expect::GetChildren,
    Expect::Check,
    Expect::Sync,
];

fn exercise(response: Response<'_>) {
    match response {
        Response::Children(children) => {
            let total = children.count_all();
            assert_eq!(children.count(), total);
        }
        Response::Multi(results) => {
            assert_eq!(results.iter().count(), results.len());
            let _ = results.first_error();
        }
        other => {
            let _ = other.into_reply();
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let mut rest = data;
    while let Ok(Some(f)) = frame::split(rest, 1 << 16) {
        let payload = f.payload;
        let _ = decode::connect_response(payload);
        if let Ok((header, body)) = decode::reply_header(payload) {
            if let Ok(n) = decode::notification(body) {
                let _ = n.watch_event();
            }
            for expect in EXPECTS {
                if let Ok(r) = decode::response(expect, header.err, body) {
                    exercise(r);
                }
                // The same body as a success, whatever the header said.
                if let Ok(r) = decode::response(expect, 0, body) {
                    exercise(r);
                }
            }
            let ops = usize::from(payload.first().copied().unwrap_or(0) % 8);
            if let Ok(r) = decode::response(Expect::Multi { ops }, 0, body) {
                exercise(r);
            }
        }
        rest = rest.get(f.consumed..).unwrap_or(&[]);
    }
});
