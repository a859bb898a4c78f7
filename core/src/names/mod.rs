//! Names and paths: validating and composing paths, sequence suffixes, child
//! lists (streamed name by name), and the node names of every library
//! (GUIDs, Curator's and Kazoo's flavours). Re-exported at the crate root.

pub mod children;
pub mod naming;
pub mod path;
mod recognise;
pub mod sequence;
