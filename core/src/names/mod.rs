//! Names and paths: validating and composing paths, sequence suffixes, and
//! the node names of every library (GUIDs, Curator's and Kazoo's
//! flavours). Re-exported at the crate root.

pub mod naming;
pub mod path;
pub mod sequence;
