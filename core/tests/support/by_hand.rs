//! Driving one recipe by hand, with no server: the requests it wants sent,
//! in a printable form, and the events it reports.
#![allow(dead_code)] // each test file uses a different part

use herdless_core::naming::Guid;
use herdless_core::{Recipe, Request, RequestId};

/// A GUID of sixteen `n` bytes.
pub fn g(n: u8) -> Guid {
    Guid::from_random_bytes([n; 16])
}

/// A request as the protocol tests read it: `create <path> <mode>`,
/// `children <path> watch=<w>`, `getData <path> watch=<w>`,
/// `exists <path> watch=<w>`, `delete <path>`, `setData <path> <data>`.
pub fn describe(request: &Request<'_>) -> String {
    match *request {
        Request::Create { path, mode, .. } => format!("create {path} {mode:?}"),
        Request::GetChildren { path, watch } => format!("children {path} watch={watch}"),
        Request::GetData { path, watch } => format!("getData {path} watch={watch}"),
        Request::Exists { path, watch } => format!("exists {path} watch={watch}"),
        Request::Delete { path, .. } => format!("delete {path}"),
        Request::SetData { path, data, .. } => {
            format!("setData {path} {}", String::from_utf8_lossy(data))
        }
        ref other => format!("{other:?}"),
    }
}

/// Every request the recipe wants sent now, with its id, [described](describe).
pub fn drain<R: Recipe>(recipe: &mut R) -> Vec<(RequestId, String)> {
    std::iter::from_fn(|| {
        recipe
            .poll_request()
            .map(|out| (out.id, describe(&out.request)))
    })
    .collect()
}

/// The descriptions of drained requests, without their ids.
pub fn texts(sent: &[(RequestId, String)]) -> Vec<&str> {
    sent.iter().map(|(_, text)| text.as_str()).collect()
}

/// Every event the recipe has for the application now.
pub fn events<R: Recipe>(recipe: &mut R) -> Vec<R::Event> {
    std::iter::from_fn(|| recipe.poll_event()).collect()
}
