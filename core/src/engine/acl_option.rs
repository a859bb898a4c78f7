//! The ACL option every recipe that creates nodes offers, written once.

/// Expands, inside a recipe's `impl` block, to its `with_acl` and `acl`
/// methods over a field `acl: Acl<'static>` (or the field named, such as
/// `lock.acl` for a recipe built on a lock).
macro_rules! acl_option {
    () => {
        $crate::engine::acl_option::acl_option!(acl);
    };
    ($($field:ident).+) => {
        /// Creates every node of the recipe (its own nodes, its directory
        /// and the ancestors it creates) with `acl` instead of
        /// [`Acl::OPEN`](crate::Acl::OPEN): see [`Acl`](crate::Acl) for
        /// what guards a recipe's nodes and how a refused create is
        /// reported.
        pub fn with_acl(mut self, acl: $crate::Acl<'static>) -> Self {
            self.$($field).+ = acl;
            self
        }

        /// The ACL of the nodes the recipe creates
        /// ([`Acl::OPEN`](crate::Acl::OPEN) unless set with
        /// [`with_acl`](Self::with_acl)).
        pub fn acl(&self) -> $crate::Acl<'static> {
            self.$($field).+
        }
    };
}
pub(crate) use acl_option;
