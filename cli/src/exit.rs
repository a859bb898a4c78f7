//! The exit statuses of `herdless`, documented in the README: a script
//! tells "the command failed" (its own status, passed through) from "the
//! lock was busy", "the wait timed out" and "the lock was lost".

use std::process::{ExitCode, ExitStatus};

/// How `herdless` ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exit {
    /// The verb did its work.
    Success,
    /// The command run under the lock or leadership exited with this
    /// status (128 + N when signal N killed it).
    Child(u8),
    /// `-n`: the lock is held by someone else (or `-E`'s code).
    Conflict(u8),
    /// `-w`: the wait ran out (or `-E`'s code).
    Timeout(u8),
    /// The lock or leadership was lost while the command ran; the command
    /// was stopped.
    Lost,
    /// Bad arguments or an invalid path.
    Usage,
    /// ZooKeeper could not be reached, the session ended, or it refused a
    /// request.
    Unavailable,
    /// Nothing to act on (`break` without a holder, `queue take -n` on an
    /// empty queue, `config get` of a missing node).
    NotFound,
    /// The command could not be started: not found (127) or not
    /// executable (126), as shells report it.
    CannotRun(u8),
    /// The operator answered no to a confirmation (exit 1).
    Declined,
    /// Interrupted by SIGINT or SIGTERM (128 + the signal) while waiting;
    /// nothing of this process is left in ZooKeeper.
    Interrupted(u8),
}

/// `-n` without `-E`.
pub const CONFLICT: u8 = 73;
/// `-w` without `-E`.
pub const TIMEOUT: u8 = 74;
/// The lock or leadership was lost.
pub const LOST: u8 = 75;
/// Usage errors (sysexits' `EX_USAGE`).
pub const USAGE: u8 = 64;
/// Nothing to act on (sysexits' `EX_NOINPUT`).
pub const NOT_FOUND: u8 = 66;
/// ZooKeeper unavailable (sysexits' `EX_UNAVAILABLE`).
pub const UNAVAILABLE: u8 = 69;

impl Exit {
    /// Interrupted by `signal`.
    pub fn interrupted(signal: i32) -> Exit {
        Exit::Interrupted(u8::try_from(128 + signal).unwrap_or(255))
    }

    /// The process exit status.
    pub fn code(self) -> u8 {
        match self {
            Exit::Success => 0,
            Exit::Child(code)
            | Exit::Conflict(code)
            | Exit::Timeout(code)
            | Exit::CannotRun(code)
            | Exit::Interrupted(code) => code,
            Exit::Declined => 1,
            Exit::Lost => LOST,
            Exit::Usage => USAGE,
            Exit::Unavailable => UNAVAILABLE,
            Exit::NotFound => NOT_FOUND,
        }
    }
}

impl From<Exit> for ExitCode {
    fn from(exit: Exit) -> ExitCode {
        ExitCode::from(exit.code())
    }
}

/// A shell's view of a status: the exit code, or 128 + the signal.
pub fn status_code(status: ExitStatus) -> u8 {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => u8::try_from(code & 0xff).unwrap_or(1),
        (None, Some(signal)) => u8::try_from(128 + signal).unwrap_or(255),
        (None, None) => 1,
    }
}
