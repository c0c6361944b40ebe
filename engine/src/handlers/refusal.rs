//! Why a file was not served: recorded by the handlers on their error
//! paths (a few bytes, no formatting) and written to the error log at
//! `debug` by the worker, so that a 403 or a 404 can be explained (nginx
//! names the file and the errno).

use std::fmt;
use std::io;
use std::path::Path;

use crate::config::Level;
use crate::http::Status;

/// What was wrong with the file a request named.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// Looking the path up or opening it failed with this errno.
    Lookup(i32),
    /// A FIFO, socket or device: never opened.
    NotRegular,
    /// A path segment starts with "." and `dotfiles` is not "allow".
    Dotfile,
    /// The file is a CGI program (its source is never served).
    ScriptSource,
    /// A directory with no index file, and `autoindex` is off.
    NoIndex,
    /// Only precompressed versions exist, in codings the client refuses.
    EncodingNotAccepted,
    /// A CGI directory (or one below it) was asked for: never listed.
    CgiDirectory,
    /// A CGI script the user brisk runs as may not run (or read, with an
    /// interpreter).
    NotRunnable,
    /// One of the files brisk itself reads (the configuration, a password
    /// file, a TLS key, …): never served, answered as a missing file.
    OwnFile,
    /// WebDAV asked to make, replace, move or remove one of those files,
    /// or a directory on the way to one.
    OwnChange,
    /// A WebDAV change (a new file, a collection made or removed, a
    /// copy or a move) the filesystem refused with this errno.
    #[cfg(feature = "webdav")]
    Change(i32),
    /// A member of a COPY or MOVE (named by where it was to go) that
    /// could not be copied there: reading it or writing its copy failed
    /// with this errno.
    #[cfg(feature = "webdav")]
    Copy(i32),
    /// A WebDAV DELETE, MOVE or replacing COPY of a collection that holds
    /// the prefix of another `[[webdav]]` rule (another tree, with its
    /// own `read_only` and locks).
    #[cfg(feature = "webdav")]
    NestedTree,
    /// A PROPPATCH whose properties the resource's extended attributes
    /// could not take: the filesystem refused them with this errno (507).
    #[cfg(feature = "webdav")]
    Properties(i32),
}

impl Refusal {
    /// The refusal for a failed lookup.
    pub fn lookup(e: &io::Error) -> Refusal {
        Refusal::Lookup(errno(e))
    }

    /// The level its explanation is logged at: `warn` for a file that
    /// is there but that brisk may not open or run (its permissions, or
    /// the sandbox), most often a mistake of whoever put it there, which
    /// nginx logs at `error`; `debug` for what the configuration refuses
    /// on purpose and for what is missing.
    /// A file that could not be opened for want of descriptors or memory
    /// (503), or for a reason brisk cannot tell (500), is `error`: the
    /// server's own trouble, which the operator must be told the cause of
    /// (`Too many open files`), not only that a 503 was answered.
    pub fn level(self) -> Level {
        match self {
            Refusal::Lookup(libc::EACCES | libc::EPERM) | Refusal::NotRunnable => Level::Warn,
            #[cfg(feature = "webdav")]
            Refusal::Change(libc::EACCES | libc::EPERM | libc::EROFS)
            | Refusal::Copy(libc::EACCES | libc::EPERM | libc::EROFS)
            | Refusal::Properties(_) => Level::Warn,
            // (A full disk, or what the server cannot tell: 507, 500.)
            #[cfg(feature = "webdav")]
            Refusal::Change(libc::ENOSPC | libc::EDQUOT | libc::EIO)
            | Refusal::Copy(libc::ENOSPC | libc::EDQUOT | libc::EIO) => Level::Error,
            Refusal::Lookup(n) if lookup_status(&io::Error::from_raw_os_error(n)).0 >= 500 => {
                Level::Error
            }
            _ => Level::Debug,
        }
    }
}

/// The errno of `e`, or the closest one for errors made without one.
pub fn errno(e: &io::Error) -> i32 {
    e.raw_os_error().unwrap_or(match e.kind() {
        io::ErrorKind::NotFound => libc::ENOENT,
        io::ErrorKind::PermissionDenied => libc::EACCES,
        _ => libc::EIO,
    })
}

/// The status for a file that could not be looked up or opened, by its
/// errno ([`errno`]): absent → 404; refused (permissions, the sandbox, a
/// symlink out of the root or not followed) → 403; out of descriptors or
/// memory → 503, a passing condition rather than an error in the request
/// or the server (DESIGN.md: 503 or backpressure); anything else → 500.
/// The static handler and the CGI resolver both answer with it.
pub fn lookup_status(e: &io::Error) -> Status {
    match errno(e) {
        libc::ENOENT | libc::ENOTDIR | libc::ENAMETOOLONG => Status::NOT_FOUND,
        libc::EACCES | libc::EPERM | libc::ELOOP | libc::EXDEV => Status::FORBIDDEN,
        libc::EMFILE | libc::ENFILE | libc::ENOMEM => Status::SERVICE_UNAVAILABLE,
        _ => Status::INTERNAL_SERVER_ERROR,
    }
}

/// A refusal with the file it concerns, for the log: `"/srv/www/x":
/// cannot be opened: Permission denied (os error 13)`.
pub struct Explained<'a> {
    /// What was wrong with it.
    pub why: Refusal,
    /// The file as the server looked it up: relative to `root`, or absolute.
    pub file: &'a [u8],
    /// The document root a relative `file` is in.
    pub root: &'a Path,
}

impl fmt::Display for Explained<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let file = String::from_utf8_lossy(self.file);
        if file.starts_with('/') {
            write!(f, "\"{file}\": ")?;
        } else if file.is_empty() {
            write!(f, "\"{}\": ", self.root.display())?;
        } else {
            write!(f, "\"{}/{file}\": ", self.root.display())?;
        }
        match self.why {
            Refusal::Lookup(libc::EXDEV) => f.write_str(
                "a symlink on the way leads outside the document root \
                 (static.symlinks_outside_root is false)",
            ),
            Refusal::Lookup(libc::ELOOP) => f.write_str(
                "a symlink that is not followed (links in a loop or more than 40 on the \
                 way; a WebDAV change follows none)",
            ),
            Refusal::Lookup(n @ (libc::EACCES | libc::EPERM)) => write!(
                f,
                "cannot be opened: {} (file permissions for the user brisk runs as, \
                 or the sandbox)",
                io::Error::from_raw_os_error(n)
            ),
            Refusal::Lookup(n) => {
                write!(f, "cannot be opened: {}", io::Error::from_raw_os_error(n))
            }
            Refusal::NotRegular => {
                f.write_str("not a regular file (a FIFO, socket or device is never served)")
            }
            Refusal::Dotfile => f.write_str("a name starting with \".\" (static.dotfiles)"),
            Refusal::ScriptSource => f.write_str("a CGI program, whose source is never served"),
            Refusal::NoIndex => {
                f.write_str("a directory with no index file, and static.autoindex is off")
            }
            Refusal::EncodingNotAccepted => f.write_str(
                "exists only precompressed (.br/.gz), in codings the client does not accept",
            ),
            Refusal::CgiDirectory => f.write_str("a CGI directory, which is never listed"),
            Refusal::OwnFile => f.write_str(
                "one of the files brisk itself reads or writes (its configuration, a password \
                 file, a TLS key or certificate, a servlet source, the pid or a log file): \
                 never served, answered as a missing file",
            ),
            Refusal::OwnChange => f.write_str(
                "one of the files brisk itself reads or writes, or a directory on the way to \
                 one: WebDAV may not make, replace, move or remove it",
            ),
            #[cfg(feature = "webdav")]
            Refusal::Change(n) | Refusal::Copy(n) => {
                let what = match self.why {
                    Refusal::Copy(_) => "not copied there",
                    _ => "cannot be changed",
                };
                write!(f, "{what}: {}", io::Error::from_raw_os_error(n))?;
                match n {
                    libc::EACCES | libc::EPERM | libc::EROFS => f.write_str(
                        " (file permissions for the user brisk runs as, a read-only mount, \
                         or the sandbox)",
                    ),
                    _ => Ok(()),
                }
            }
            Refusal::NotRunnable => f.write_str(
                "a CGI script the user brisk runs as may not run \
                 (not executable, or not readable with an interpreter)",
            ),
            #[cfg(feature = "webdav")]
            Refusal::Properties(n) => {
                let e = io::Error::from_raw_os_error(n);
                write!(
                    f,
                    "its dead properties cannot be kept as extended attributes: {e}"
                )?;
                f.write_str(match n {
                    libc::EOPNOTSUPP => " (this filesystem keeps none: properties = \"sidecar\" or \"auto\" keeps them in a file beside)",
                    libc::EDQUOT => " (the disk quota of the user brisk runs as)",
                    _ => " (a filesystem keeps only so much a file: about 4 KiB on ext4; properties = \"sidecar\" keeps up to 1 MiB a collection)",
                })
            }
            #[cfg(feature = "webdav")]
            Refusal::NestedTree => f.write_str(
                "holds the prefix of another [[webdav]] rule, whose tree (with its own \
                 read_only and locks) this one may not remove or replace",
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(why: Refusal, file: &[u8]) -> String {
        let root = Path::new("/srv/www");
        Explained { why, file, root }.to_string()
    }

    #[test]
    fn explanations_name_the_file_and_the_errno() {
        assert_eq!(
            text(Refusal::Lookup(libc::ENOENT), b"a/b.txt"),
            "\"/srv/www/a/b.txt\": cannot be opened: No such file or directory (os error 2)"
        );
        assert_eq!(
            text(Refusal::Lookup(libc::EACCES), b"x"),
            "\"/srv/www/x\": cannot be opened: Permission denied (os error 13) (file \
             permissions for the user brisk runs as, or the sandbox)"
        );
        assert!(text(Refusal::Lookup(libc::EXDEV), b"l").contains("outside the document root"));
        assert!(text(Refusal::NotRegular, b"fifo").starts_with("\"/srv/www/fifo\": not a regular"));
        assert!(text(Refusal::NotRunnable, b"/usr/lib/cgi-bin/x")
            .starts_with("\"/usr/lib/cgi-bin/x\": "));
        assert!(text(Refusal::NoIndex, b"").starts_with("\"/srv/www\": "));
    }

    #[cfg(feature = "webdav")]
    #[test]
    fn a_refused_webdav_change_is_explained() {
        assert_eq!(
            text(Refusal::Change(libc::EROFS), b"/srv/dav/new.txt"),
            "\"/srv/dav/new.txt\": cannot be changed: Read-only file system (os error 30) \
             (file permissions for the user brisk runs as, a read-only mount, or the sandbox)"
        );
        assert_eq!(Refusal::Change(libc::EACCES).level(), Level::Warn);
        assert_eq!(Refusal::Change(libc::ENOSPC).level(), Level::Error);
        assert_eq!(
            text(Refusal::Copy(libc::ENOSPC), b"/srv/dav/b/x"),
            "\"/srv/dav/b/x\": not copied there: No space left on device (os error 28)"
        );
        assert_eq!(Refusal::Copy(libc::EACCES).level(), Level::Warn);
        assert_eq!(Refusal::Copy(libc::ENOSPC).level(), Level::Error);
        // (A missing parent, a name taken: the client's, 409 and 405.)
        assert_eq!(Refusal::Change(libc::ENOENT).level(), Level::Debug);
        assert_eq!(Refusal::Change(libc::EEXIST).level(), Level::Debug);
    }

    #[test]
    fn a_server_side_failure_is_explained_at_error() {
        for n in [libc::EMFILE, libc::ENFILE, libc::ENOMEM, libc::EIO] {
            assert_eq!(Refusal::Lookup(n).level(), Level::Error, "errno {n}");
        }
        assert_eq!(Refusal::Lookup(libc::EACCES).level(), Level::Warn);
        assert_eq!(Refusal::Lookup(libc::ENOENT).level(), Level::Debug);
    }

    #[test]
    fn lookup_statuses() {
        let os = io::Error::from_raw_os_error;
        for n in [libc::ENOENT, libc::ENOTDIR, libc::ENAMETOOLONG] {
            assert_eq!(lookup_status(&os(n)), Status::NOT_FOUND, "errno {n}");
        }
        for n in [libc::EACCES, libc::EPERM, libc::ELOOP, libc::EXDEV] {
            assert_eq!(lookup_status(&os(n)), Status::FORBIDDEN, "errno {n}");
        }
        for n in [libc::EMFILE, libc::ENFILE, libc::ENOMEM] {
            assert_eq!(
                lookup_status(&os(n)),
                Status::SERVICE_UNAVAILABLE,
                "errno {n}"
            );
        }
        assert_eq!(lookup_status(&os(libc::EIO)), Status::INTERNAL_SERVER_ERROR);
        let kind = io::Error::from;
        assert_eq!(
            lookup_status(&kind(io::ErrorKind::NotFound)),
            Status::NOT_FOUND
        );
        assert_eq!(
            lookup_status(&kind(io::ErrorKind::PermissionDenied)),
            Status::FORBIDDEN
        );
        assert_eq!(
            lookup_status(&kind(io::ErrorKind::InvalidInput)),
            Status::INTERNAL_SERVER_ERROR
        );
    }

    #[test]
    fn errors_without_an_errno_get_the_closest() {
        assert_eq!(
            errno(&io::Error::from(io::ErrorKind::PermissionDenied)),
            libc::EACCES
        );
        assert_eq!(
            errno(&io::Error::from(io::ErrorKind::NotFound)),
            libc::ENOENT
        );
        assert_eq!(
            errno(&io::Error::from_raw_os_error(libc::EXDEV)),
            libc::EXDEV
        );
    }
}
