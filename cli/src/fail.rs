//! Errors of a verb: a message for stderr and the exit status that goes
//! with it.

use herdless_std::{Error, ZkError};

use crate::exit::Exit;

/// Why a verb stopped short.
#[derive(Debug)]
pub struct Fail {
    /// How the process ends.
    pub exit: Exit,
    /// What to tell the operator.
    pub message: String,
}

impl Fail {
    /// A failure with its own message.
    pub fn new(exit: Exit, message: impl Into<String>) -> Fail {
        Fail {
            exit,
            message: message.into(),
        }
    }

    /// A herdless error while doing `what`: a bad path is a usage error, a
    /// missing node "not found", the rest ZooKeeper being unavailable.
    pub fn of(what: &str, e: Error) -> Fail {
        let exit = match &e {
            Error::Path(_)
            | Error::TooLarge { .. }
            | Error::BadPriority
            | Error::Recipe(herdless_core::Error::NotALockNode) => Exit::Usage,
            Error::Zk(ZkError::NoNode) => Exit::NotFound,
            _ => Exit::Unavailable,
        };
        Fail::new(exit, format!("{what}: {e}"))
    }
}

/// A verb's result.
pub type Outcome = Result<Exit, Fail>;
