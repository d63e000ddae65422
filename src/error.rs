//! The one error type every verb returns, and the exit code each kind maps to.
//!
//! Exit codes are part of headroom's interface: `check` is used as a CI gate,
//! so 0 (fits / nothing wrong), 1 (does not fit) and 2 (bad input) must never
//! be confused with a crash. Anything that came from outside (a file, a flag,
//! a log) and is wrong becomes [`Error::BadInput`] with a one-line message.

use std::path::{Path, PathBuf};

/// Everything that can stop a verb before it produces its report.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The user's input is wrong: malformed YAML, unknown names, absurd sizes.
    #[error("{0}")]
    BadInput(String),
    /// A file the user named could not be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file involved.
        path: PathBuf,
        /// What the operating system said.
        source: std::io::Error,
    },
    /// The environment cannot do what was asked (no cgroup write access, no GPU).
    #[error("{0}")]
    Unsupported(String),
    /// A bug in headroom: reported, never a panic.
    #[error("internal error: {0}")]
    Internal(String),
}

impl Error {
    /// Shorthand for a bad-input error from anything printable.
    pub fn bad(msg: impl Into<String>) -> Self {
        Error::BadInput(msg.into())
    }

    /// Wraps an I/O error with the path it concerns.
    pub fn io(path: impl AsRef<Path>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.as_ref().to_path_buf(),
            source,
        }
    }

    /// The process exit status this error should produce.
    pub fn exit_code(&self) -> u8 {
        match self {
            Error::BadInput(_) | Error::Io { .. } => 2,
            Error::Unsupported(_) => 2,
            Error::Internal(_) => 70, // EX_SOFTWARE
        }
    }
}

/// Result alias used throughout the crate.
pub type Result<T> = std::result::Result<T, Error>;
