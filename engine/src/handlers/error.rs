//! The handlers layer's error.

/// Why a handler cannot be set up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// [`crate::handlers::app::Mount::new`]: the prefix (as given) is not a
    /// normalised absolute path.
    MountPrefix(String),
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::MountPrefix(prefix) => write!(
                f,
                "cannot mount a handler at {prefix:?}: expected a normalised absolute path such as \"/api/\" or \"/status\""
            ),
        }
    }
}

impl std::error::Error for Error {}
