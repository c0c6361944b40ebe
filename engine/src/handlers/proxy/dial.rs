//! Reaching an upstream: a non-blocking connect, and what names it (in
//! log lines, and in the `Host` sent with `host = "upstream"`).

use std::io;
use std::os::fd::OwnedFd;

use crate::config::{Tried, Upstream};

/// A non-blocking connection to `to` (at its address `tried`), under
/// way (TCP) or made (a unix socket connects at once, or fails).
pub fn connect(to: &Upstream, tried: Tried) -> io::Result<OwnedFd> {
    match to {
        Upstream::Tcp { addr, .. } => connect_tcp(to.address(tried).unwrap_or(*addr)),
        Upstream::Unix(path) => {
            let sock = mio::net::UnixStream::connect(path).map_err(unix_refused)?;
            Ok(OwnedFd::from(std::os::unix::net::UnixStream::from(sock)))
        }
    }
}

/// A unix socket's `EACCES` and `EAGAIN` say what to change. `EACCES`:
/// the socket belongs to the application's user (Debian's php-fpm makes
/// its socket `www-data:www-data 0660`), and brisk serves as another
/// (`nobody` when started as root with no `user`). `EAGAIN`: its listen
/// queue is full (every process of the application busy, and as many
/// connections waiting as its backlog holds: unix(7)).
fn unix_refused(e: io::Error) -> io::Error {
    let hint = match e.raw_os_error() {
        Some(libc::EACCES) => {
            "the user brisk serves as may not write to the socket; let it (php-fpm: \
             listen.owner, listen.group and listen.mode in the pool), or serve as a user or \
             group that may (user = \"www-data\")"
        }
        Some(libc::EAGAIN) => {
            "its listen queue is full: every process of the application is busy and as \
             many connections wait as its backlog holds (php-fpm: pm.max_children, \
             listen.backlog; the system's net.core.somaxconn)"
        }
        _ => return e,
    };
    // (Not `WouldBlock` for `EAGAIN`: the connection failed, it is not
    // to be waited for.)
    let kind = match e.kind() {
        io::ErrorKind::WouldBlock => io::ErrorKind::Other,
        kind => kind,
    };
    io::Error::new(kind, format!("{e}: {hint}"))
}

/// A non-blocking TCP connection to `addr`, under way.
pub fn connect_tcp(addr: std::net::SocketAddr) -> io::Result<OwnedFd> {
    let sock = mio::net::TcpStream::connect(addr)?;
    let _ = sock.set_nodelay(true);
    Ok(OwnedFd::from(std::net::TcpStream::from(sock)))
}

/// How log lines name the answers of `to`: `proxy http://127.0.0.1:9001`.
pub fn label(to: &Upstream) -> String {
    match to {
        // (By its name as written, as `to` has it, with the port it
        // resolved to: `https://localhost:8443`, not `127.0.0.1:8443`
        // beside a certificate's error about the name.)
        Upstream::Tcp {
            addr, host, tls, ..
        } => {
            let scheme = if *tls { "https" } else { "http" };
            format!("proxy {scheme}://{host}:{}", addr.port())
        }
        Upstream::Unix(p) => format!("proxy unix:{}", p.display()),
    }
}

/// Where an upstream is, as the access log names it (`upstream_addr`):
/// its address, as nginx's `$upstream_addr` does, or its socket's path.
/// (Kept as it is, formatted only when a line says it: no allocation
/// per request for a TCP upstream.)
#[derive(Debug, Clone)]
pub enum Addr {
    /// A TCP address.
    Tcp(std::net::SocketAddr),
    /// A unix socket's path.
    Unix(std::sync::Arc<std::path::Path>),
}

impl Addr {
    /// As the access log takes it.
    pub fn logged(&self) -> crate::log::Peer<'_> {
        match self {
            Addr::Tcp(addr) => crate::log::Peer::Tcp(*addr),
            Addr::Unix(path) => crate::log::Peer::Unix(path),
        }
    }
}

impl std::fmt::Display for Addr {
    /// As the access log writes it: `127.0.0.1:9000`, `unix:/run/php.sock`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Addr::Tcp(addr) => write!(f, "{addr}"),
            Addr::Unix(path) => write!(f, "unix:{}", path.display()),
        }
    }
}

/// Where `to` is (see [`Addr`]): the address a new connection goes to.
pub fn addr(to: &Upstream) -> Addr {
    addr_at(to, to.tried())
}

/// Where `to` is, at its address `tried`.
pub fn addr_at(to: &Upstream, tried: Tried) -> Addr {
    match to {
        Upstream::Tcp { addr, .. } => Addr::Tcp(to.address(tried).unwrap_or(*addr)),
        Upstream::Unix(path) => Addr::Unix(std::sync::Arc::clone(path)),
    }
}

/// The upstream's own `Host` (`host = "upstream"`): its name, with
/// `:PORT` unless the scheme's default; `localhost` for a unix socket.
pub fn own_host(to: &Upstream) -> String {
    match to {
        Upstream::Tcp {
            addr, host, tls, ..
        } => {
            let default = if *tls { 443 } else { 80 };
            match addr.port() {
                p if p == default => host.to_string(),
                p => format!("{host}:{p}"),
            }
        }
        Upstream::Unix(_) => "localhost".into(),
    }
}
