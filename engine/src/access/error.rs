//! The access layer's error: an htpasswd file that cannot be used.

use std::io;
use std::path::PathBuf;

use super::htpasswd::{LineError, MAX_FILE};

/// Why an htpasswd file cannot be used. Every message starts with the
/// file's path (and line), as the configuration's errors then show it
/// after their own file, line and key.
#[derive(Debug)]
pub enum Error {
    /// The file could not be opened or read.
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// The path names a directory or a device, not a file.
    NotAFile(PathBuf),
    /// The file is larger than a password file can sensibly be.
    TooLarge(PathBuf),
    /// A line cannot be used.
    Line {
        /// The file.
        path: PathBuf,
        /// The line and what is wrong with it.
        error: LineError,
    },
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Read { path, source } => write!(f, "{}: cannot read: {source}", path.display()),
            Error::NotAFile(path) => write!(f, "{}: not a regular file", path.display()),
            Error::TooLarge(path) => {
                write!(f, "{}: larger than {} MiB", path.display(), MAX_FILE >> 20)
            }
            Error::Line { path, error } => {
                write!(f, "{}:{}: {}", path.display(), error.line, error.message)
            }
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Read { source, .. } => Some(source),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The messages as they were before this type: the configuration's
    /// errors and the reload warnings show them.
    #[test]
    fn messages_name_the_file_and_line() {
        let cases = [
            (
                Error::Read {
                    path: "/etc/pw".into(),
                    source: io::Error::other("why"),
                },
                "/etc/pw: cannot read: why",
            ),
            (Error::NotAFile("/etc".into()), "/etc: not a regular file"),
            (Error::TooLarge("/big".into()), "/big: larger than 16 MiB"),
            (
                Error::Line {
                    path: "/etc/pw".into(),
                    error: LineError {
                        line: 3,
                        message: "empty user name".into(),
                    },
                },
                "/etc/pw:3: empty user name",
            ),
        ];
        for (error, text) in cases {
            assert_eq!(error.to_string(), text);
        }
    }
}
