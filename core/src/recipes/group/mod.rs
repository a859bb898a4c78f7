//! Group membership, one recipe with two roles: a [`member`] keeps its
//! ephemeral node in the group while it is in, an [`observer`] follows
//! who is in. Published as `herdless_core::member` and
//! `herdless_core::members`.

pub mod member;
pub mod observer;
mod roster;
