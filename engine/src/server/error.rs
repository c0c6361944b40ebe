//! The embedding API's error: what [`Server::bind`](super::Server::bind),
//! [`Server::mount`](super::Server::mount), [`Server::start`](super::Server::start)
//! and [`Running::reload`](super::Running::reload) return.

use std::io;
use std::net::SocketAddr;
use std::path::PathBuf;

/// Why the server could not bind, mount, start or reload.
pub enum Error {
    /// A listen address could not be bound.
    Listen {
        /// The address, with port 0 resolved once the probe bound it.
        addr: SocketAddr,
        /// What the kernel said.
        source: io::Error,
        /// Where the address was configured (`site.toml:3: listen`,
        /// `--listen`), put before the message; none for a configuration
        /// built in code.
        origin: Option<String>,
    },
    /// A reload could not duplicate the sockets of an address it keeps.
    ShareSocket {
        /// The address as bound.
        addr: SocketAddr,
        /// What the kernel said.
        source: io::Error,
    },
    /// A worker's duplicate of a listening socket could not be made.
    ShareListener(io::Error),
    /// The document root could not be opened.
    OpenRoot {
        /// As configured (or as seen from inside the chroot).
        root: PathBuf,
        /// Opened again after `chroot` ([`Server::rebase`](super::Server::rebase)).
        in_chroot: bool,
        /// Why.
        source: io::Error,
    },
    /// A handler could not be mounted.
    Mount(crate::handlers::Error),
    /// A `[[handlers]]` entry names no registered handler, or its
    /// handler's init failed: the message names the file, line and key.
    Handler(String),
    /// A name registered twice with [`Server::register`](super::Server::register).
    HandlerName(String),
    /// A worker's epoll (or its waker) could not be made.
    EventLoop(io::Error),
    /// A worker thread could not be started.
    WorkerThread(io::Error),
    /// TLS could not be set up with the configured certificates.
    Tls(String),
    /// A listening socket given to the process (socket activation, an
    /// upgrade) does not fit the configuration.
    Inherited(String),
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Listen {
                addr,
                source,
                origin,
            } => {
                if let Some(origin) = origin {
                    write!(f, "{origin}: ")?;
                }
                write!(f, "cannot listen on {addr}: {source}")?;
                f.write_str(listen_hint(addr, source))
            }
            Error::ShareSocket { addr, source } => {
                write!(f, "cannot share the socket of {addr}: {source}")
            }
            Error::ShareListener(e) => write!(f, "cannot share a listening socket: {e}"),
            Error::OpenRoot {
                root,
                in_chroot,
                source,
            } => write!(
                f,
                "cannot open root {}{}: {source}",
                root.display(),
                if *in_chroot { " inside the chroot" } else { "" }
            ),
            Error::Mount(e) => e.fmt(f),
            Error::Handler(why) => f.write_str(why),
            Error::HandlerName(name) => {
                write!(f, "a handler is registered as \"{name}\" already")
            }
            Error::EventLoop(e) => write!(f, "cannot create event loop: {e}"),
            Error::WorkerThread(e) => write!(f, "cannot start worker thread: {e}"),
            Error::Tls(e) => write!(f, "tls: {e}"),
            Error::Inherited(why) => f.write_str(why),
        }
    }
}

impl Error {
    /// A [`Error::Listen`] that says where its address was configured.
    pub(crate) fn configured_at(self, at: Option<String>) -> Error {
        match self {
            Error::Listen {
                addr,
                source,
                origin: None,
            } => Error::Listen {
                addr,
                source,
                origin: at,
            },
            e => e,
        }
    }
}

/// What to do about a refused `bind`: the ways out a user cannot guess
/// from the kernel's word alone.
fn listen_hint(addr: &SocketAddr, e: &io::Error) -> &'static str {
    match e.kind() {
        // Below net.ipv4.ip_unprivileged_port_start (1024 unless lowered),
        // binding needs CAP_NET_BIND_SERVICE.
        io::ErrorKind::PermissionDenied if addr.port() < 1024 => {
            " (ports below 1024 need privileges: start brisk as root, and it \
             drops to `user` once bound; or give the binary the capability, \
             `setcap cap_net_bind_service=+ep $(command -v brisk)`; or let \
             systemd bind the port (socket activation, brisk.socket); or \
             listen on a port above 1023, such as 8080)"
        }
        io::ErrorKind::AddrInUse => {
            " (another program, or another brisk, listens there: \
             `ss -ltnp` names it)"
        }
        io::ErrorKind::AddrNotAvailable => " (no interface of this machine has that address)",
        _ => "",
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Listen { source, .. }
            | Error::ShareSocket { source, .. }
            | Error::OpenRoot { source, .. } => Some(source),
            Error::ShareListener(e) | Error::EventLoop(e) | Error::WorkerThread(e) => Some(e),
            Error::Mount(e) => Some(e),
            Error::Tls(_) | Error::Inherited(_) => None,
            Error::Handler(_) | Error::HandlerName(_) => None,
        }
    }
}

impl From<crate::handlers::Error> for Error {
    fn from(e: crate::handlers::Error) -> Error {
        Error::Mount(e)
    }
}

/// Its message, as [`Display`](std::fmt::Display) gives it: the variants'
/// derived form said no more and cost 1 KB of the binary.
impl std::fmt::Debug for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(self, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_listen_names_the_ways_out() {
        let denied = || io::Error::from(io::ErrorKind::PermissionDenied);
        let low: SocketAddr = "0.0.0.0:80".parse().unwrap();
        let msg = Error::Listen {
            addr: low,
            source: denied(),
            origin: None,
        }
        .to_string();
        assert!(msg.starts_with("cannot listen on 0.0.0.0:80: permission denied (ports below 1024 need privileges: start brisk as root"), "{msg}");
        for way in [
            "setcap cap_net_bind_service=+ep",
            "socket activation",
            "8080",
        ] {
            assert!(msg.contains(way), "{msg}");
        }
        // Above 1023 the refusal is something else (a sandbox, an LSM):
        // no advice about privileged ports.
        let high: SocketAddr = "0.0.0.0:8080".parse().unwrap();
        let msg = Error::Listen {
            addr: high,
            source: denied(),
            origin: None,
        }
        .to_string();
        assert_eq!(msg, "cannot listen on 0.0.0.0:8080: permission denied");
        let in_use = io::Error::from(io::ErrorKind::AddrInUse);
        let msg = Error::Listen {
            addr: high,
            source: in_use,
            origin: None,
        }
        .to_string();
        assert!(
            msg.ends_with("listens there: `ss -ltnp` names it)"),
            "{msg}"
        );
    }

    /// The messages are those brisk printed before it had this type
    /// (scripts and the tests of the binary read them).
    #[test]
    fn messages_read_as_before() {
        let e = || io::Error::other("in use");
        let addr: SocketAddr = "127.0.0.1:80".parse().unwrap();
        let cases = [
            (
                Error::Listen {
                    addr,
                    source: e(),
                    origin: None,
                },
                "cannot listen on 127.0.0.1:80: in use",
            ),
            (
                Error::ShareSocket { addr, source: e() },
                "cannot share the socket of 127.0.0.1:80: in use",
            ),
            (
                Error::ShareListener(e()),
                "cannot share a listening socket: in use",
            ),
            (
                Error::OpenRoot {
                    root: "/srv/www".into(),
                    in_chroot: false,
                    source: e(),
                },
                "cannot open root /srv/www: in use",
            ),
            (
                Error::OpenRoot {
                    root: "/www".into(),
                    in_chroot: true,
                    source: e(),
                },
                "cannot open root /www inside the chroot: in use",
            ),
            (
                Error::Mount(crate::handlers::Error::MountPrefix("api".into())),
                "cannot mount a handler at \"api\": expected a normalised absolute path such as \"/api/\" or \"/status\"",
            ),
            (
                Error::EventLoop(e()),
                "cannot create event loop: in use",
            ),
            (
                Error::WorkerThread(e()),
                "cannot start worker thread: in use",
            ),
        ];
        for (error, text) in cases {
            assert_eq!(error.to_string(), text);
        }
    }
}
