//! The handlers layer's error.

/// Why a handler cannot be set up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// [`crate::handlers::app::Mount::new`]: the prefix (as given) is not a
    /// normalised absolute path.
    MountPrefix(String),
    /// [`crate::server::Server::mount`]: a mount made before (the second
    /// prefix) takes every path of this one (the first): it could never
    /// answer.
    MountShadowed(String, String),
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::MountPrefix(prefix) => write!(
                f,
                "cannot mount a handler at {prefix:?}: expected a normalised absolute path such as \"/api/\" or \"/status\""
            ),
            Error::MountShadowed(prefix, before) => write!(
                f,
                "cannot mount a handler at {prefix:?}: the one mounted at {before:?} before it takes every path there (the first match answers: mount the longer prefix first)"
            ),
        }
    }
}

impl std::error::Error for Error {}
