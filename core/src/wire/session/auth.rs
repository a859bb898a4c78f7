//! The credentials a session re-sends on every new connection
//! (authentication is per connection, not per session).

use heapless::{String, Vec};

use super::error::AuthError;

/// Credentials one session keeps.
pub const MAX_AUTHS: usize = 2;
/// Longest scheme name kept, in bytes.
pub const MAX_AUTH_SCHEME: usize = 16;
/// Longest credential kept, in bytes.
pub const MAX_AUTH_CREDENTIAL: usize = 128;

#[derive(Clone, Debug)]
pub(crate) struct Credential {
    pub(crate) scheme: String<MAX_AUTH_SCHEME>,
    pub(crate) credential: Vec<u8, MAX_AUTH_CREDENTIAL>,
}

#[derive(Clone, Debug, Default)]
pub(crate) struct AuthList(Vec<Credential, MAX_AUTHS>);

impl AuthList {
    pub(crate) const fn new() -> Self {
        AuthList(Vec::new())
    }

    pub(crate) fn add(&mut self, scheme: &str, credential: &[u8]) -> Result<(), AuthError> {
        let scheme = String::try_from(scheme).map_err(|_| AuthError::TooLong)?;
        let credential = Vec::from_slice(credential).map_err(|_| AuthError::TooLong)?;
        self.0
            .push(Credential { scheme, credential })
            .map_err(|_| AuthError::TooMany)
    }

    pub(crate) fn get(&self, index: usize) -> Option<&Credential> {
        self.0.get(index)
    }

    pub(crate) fn len(&self) -> usize {
        self.0.len()
    }
}
