//! The machinery recipes are built on, private to the crate: a contender's
//! place in a directory of sequential nodes, creating a recipe's
//! ancestors, the request pipeline, the event queue, the session's life,
//! the sessions whose ephemeral nodes are its own, the ACL option and
//! reads that must see other clients' writes.

pub(crate) mod acl_option;
pub(crate) mod ancestors;
pub(crate) mod catch_up;
pub(crate) mod contender_op;
pub(crate) mod contention;
pub(crate) mod contention_flow;
pub(crate) mod deadline;
pub(crate) mod event_queue;
pub(crate) mod link;
pub(crate) mod pipeline;
pub(crate) mod sessions;
