//! Reaching an upstream: a non-blocking connect, and what names it (in
//! log lines, and in the `Host` sent with `host = "upstream"`).

use std::io;
use std::os::fd::OwnedFd;

use crate::config::Upstream;

/// A non-blocking connection to `to`, under way (TCP) or made (a unix
/// socket connects at once, or fails).
pub fn connect(to: &Upstream) -> io::Result<OwnedFd> {
    match to {
        Upstream::Tcp { addr, .. } => {
            let sock = mio::net::TcpStream::connect(*addr)?;
            let _ = sock.set_nodelay(true);
            Ok(OwnedFd::from(std::net::TcpStream::from(sock)))
        }
        Upstream::Unix(path) => {
            let sock = mio::net::UnixStream::connect(path)?;
            Ok(OwnedFd::from(std::os::unix::net::UnixStream::from(sock)))
        }
    }
}

/// How log lines name the answers of `to`: `proxy http://127.0.0.1:9001`.
pub fn label(to: &Upstream) -> String {
    match to {
        Upstream::Tcp {
            addr, tls: true, ..
        } => format!("proxy https://{addr}"),
        Upstream::Tcp { addr, .. } => format!("proxy http://{addr}"),
        Upstream::Unix(p) => format!("proxy unix:{}", p.display()),
    }
}

/// How the access log names `to` (`upstream_addr`): its address, as
/// nginx's `$upstream_addr` does, or `unix:` and its path.
pub fn addr(to: &Upstream) -> String {
    match to {
        Upstream::Tcp { addr, .. } => addr.to_string(),
        Upstream::Unix(path) => format!("unix:{}", path.display()),
    }
}

/// The upstream's own `Host` (`host = "upstream"`): its name, with
/// `:PORT` unless the scheme's default; `localhost` for a unix socket.
pub fn own_host(to: &Upstream) -> String {
    match to {
        Upstream::Tcp { addr, host, tls } => {
            let default = if *tls { 443 } else { 80 };
            match addr.port() {
                p if p == default => host.clone(),
                p => format!("{host}:{p}"),
            }
        }
        Upstream::Unix(_) => "localhost".into(),
    }
}
