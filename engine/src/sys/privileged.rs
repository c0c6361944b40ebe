//! `brisk-priv`: a small process that keeps root after the server drops
//! it, for the few things a server started as root must still do as root
//! (what nginx's master process is kept for): open its log files again
//! after a rotation (in a root-owned `/var/log/brisk`, with files that
//! logrotate `create`s as root), bind a listen address a reload adds (a
//! port below 1024, or any port while the server's sandbox keeps it from
//! opening sockets; with HTTP/3, the UDP sockets of a TLS address too),
//! and remove the pid file when the server stops (or
//! dies), if it is still the file the server wrote.
//!
//! It is forked (see `service`) before the `chroot` and the user switch,
//! so it sees the paths as configured, and confines itself at once: only
//! the capabilities it needs, and the caller's sandbox. It answers only
//! for what it was given at the fork: the log files by their paths, one
//! pid file; whatever the server sends, it can open no other file and
//! remove nothing else.
//!
//! Protocol: one `SOCK_SEQPACKET` message per request, an opcode byte and
//! its argument; one answer per request, the `errno` as a native `i32`
//! (0 for success) with the descriptor, if any, as `SCM_RIGHTS`. New
//! errands are a new opcode with its own grant; the TLS certificates and
//! keys of the configuration at start are one: on SIGHUP the server reads
//! them again (a renewal) through a descriptor the helper opens, since
//! a key is often readable by root only.

use std::fs::File;
use std::io;
use std::net::{SocketAddr, TcpListener};
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use super::service::{self, recv, send};
use super::{fs, net};

/// Open a granted log file (append, create 0640); the argument is its path.
const OPEN_LOG: u8 = b'O';
/// Bind a listening socket; the argument: flags (one byte: 1
/// `reuseport`, 2 the bound on unsent bytes), the backlog (`i32`),
/// `TCP_DEFER_ACCEPT` in seconds (`u32`), the address as text.
const LISTEN: u8 = b'L';
/// The server stops: remove the pid file, unless a new brisk (an upgrade
/// that serves) replaced it since (after the answer the helper exits).
const FINISH: u8 = b'F';
/// The server hands over to a new brisk (an upgrade), which owns the pid
/// file now: exit without removing it.
const LEAVE: u8 = b'X';
/// Open a granted TLS file (certificate, key, OCSP response) for reading;
/// the argument is its path.
const READ_TLS: u8 = b'R';
/// Bind a UDP socket with `SO_REUSEPORT` (HTTP/3 on a TLS address a
/// reload adds, or turns HTTP/3 on for), as [`net::udp`] makes it; the
/// argument is the address as text.
const UDP: u8 = b'U';

/// Largest request: a path or an address.
const MAX_REQUEST: usize = 8192;

/// What the helper may do, fixed when it is forked.
#[derive(Debug, Clone, Default)]
pub struct Grants {
    /// Log files it may open (create, append), by these exact paths.
    pub logs: Vec<PathBuf>,
    /// The pid file it removes at the end.
    pub pid_file: Option<PathBuf>,
    /// TLS certificates, keys and OCSP responses it may open for reading,
    /// by these exact paths (those configured at start).
    pub tls: Vec<PathBuf>,
}

/// The server's end of `brisk-priv`.
#[derive(Debug)]
pub struct Privileged {
    sock: Mutex<OwnedFd>,
}

impl Privileged {
    /// Forks the helper. In the child, `confine` runs first (its error is
    /// this call's), then it serves until the server asks it to finish or
    /// goes away. Call only while the process has a single thread.
    pub fn start<E: std::fmt::Display>(
        grants: Grants,
        confine: impl FnOnce() -> Result<(), E>,
    ) -> io::Result<Privileged> {
        // The pid file as this process wrote it: removed only while it is
        // that file (a new brisk, an upgrade, renames its own over it).
        let written = grants.pid_file.as_deref().and_then(fs::identity);
        let (sock, _pid) =
            service::fork(c"brisk-priv", confine, |sock| serve(sock, &grants, written))?;
        Ok(Privileged {
            sock: Mutex::new(sock),
        })
    }

    /// Opens the granted log file `path` for appending (created 0640).
    pub fn open_log(&self, path: &Path) -> io::Result<File> {
        let mut msg = vec![OPEN_LOG];
        msg.extend_from_slice(path.as_os_str().as_encoded_bytes());
        self.ask(&msg)?.map(File::from).ok_or_else(no_descriptor)
    }

    /// A listening socket bound to `addr`, as [`net::listen`] makes it.
    pub fn listen(
        &self,
        addr: &SocketAddr,
        reuseport: bool,
        backlog: i32,
        defer: Duration,
        bound_unsent: bool,
    ) -> io::Result<TcpListener> {
        self.ask(&listen_msg(addr, reuseport, backlog, defer, bound_unsent))?
            .map(TcpListener::from)
            .ok_or_else(no_descriptor)
    }

    /// A UDP socket bound to `addr` with `SO_REUSEPORT`, as [`net::udp`]
    /// makes it (QUIC's, for HTTP/3).
    #[cfg(feature = "http3")]
    pub fn udp(&self, addr: &SocketAddr) -> io::Result<std::net::UdpSocket> {
        let mut msg = vec![UDP];
        msg.extend_from_slice(addr.to_string().as_bytes());
        self.ask(&msg)?
            .map(std::net::UdpSocket::from)
            .ok_or_else(no_descriptor)
    }

    /// The contents of the granted TLS file `path`, read through a
    /// descriptor the helper opened (the server may not open it itself).
    /// `PermissionDenied` for a path that was not granted.
    pub fn read_tls(&self, path: &Path) -> io::Result<Vec<u8>> {
        let mut msg = vec![READ_TLS];
        msg.extend_from_slice(path.as_os_str().as_encoded_bytes());
        let mut file = self.ask(&msg)?.map(File::from).ok_or_else(no_descriptor)?;
        // Plain reads: the server's seccomp filter allows read(2), and a
        // key file is small.
        let mut out = Vec::new();
        let mut buf = [0u8; 4096];
        loop {
            match io::Read::read(&mut file, &mut buf) {
                Ok(0) => return Ok(out),
                Ok(n) => out.extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// Removes the pid file; the helper exits afterwards.
    pub fn finish(&self) -> io::Result<()> {
        self.ask(&[FINISH]).map(drop)
    }

    /// Exits without removing the pid file: a new brisk (an upgrade)
    /// wrote its own pid there.
    pub fn leave(&self) -> io::Result<()> {
        self.ask(&[LEAVE]).map(drop)
    }

    /// Sends one request; on success, the descriptor that came back, if
    /// any.
    fn ask(&self, msg: &[u8]) -> io::Result<Option<OwnedFd>> {
        let sock = self.sock.lock().unwrap_or_else(|e| e.into_inner());
        let gone = || io::Error::other("the privileged helper (brisk-priv) is gone");
        send(sock.as_raw_fd(), msg, &[]).map_err(|_| gone())?;
        let mut reply = [0u8; 4];
        let (n, mut fds) = recv(sock.as_raw_fd(), &mut reply).map_err(|_| gone())?;
        drop(sock);
        if n != 4 {
            return Err(gone());
        }
        match i32::from_ne_bytes(reply) {
            0 => Ok(fds.pop()),
            errno => Err(io::Error::from_raw_os_error(errno)),
        }
    }
}

/// The [`LISTEN`] request for [`Privileged::listen`]'s arguments.
fn listen_msg(
    addr: &SocketAddr,
    reuseport: bool,
    backlog: i32,
    defer: Duration,
    bound_unsent: bool,
) -> Vec<u8> {
    let flags = u8::from(reuseport) | u8::from(bound_unsent) << 1;
    let mut msg = vec![LISTEN, flags];
    msg.extend_from_slice(&backlog.to_ne_bytes());
    let secs = defer.as_secs() + u64::from(defer.subsec_nanos() > 0);
    msg.extend_from_slice(&(secs.min(u32::MAX as u64) as u32).to_ne_bytes());
    msg.extend_from_slice(addr.to_string().as_bytes());
    msg
}

fn no_descriptor() -> io::Error {
    io::Error::other("the privileged helper (brisk-priv) sent no descriptor")
}

/// The helper's loop: one answer per request, until the server finishes
/// or goes away; the pid file is removed either way (if it is still the
/// file `written`).
fn serve(sock: OwnedFd, grants: &Grants, written: Option<(u64, u64)>) {
    let mut buf = vec![0u8; MAX_REQUEST];
    loop {
        let n = match recv(sock.as_raw_fd(), &mut buf) {
            Ok((0, _)) | Err(_) => break,
            Ok((n, _)) => n,
        };
        let (done, answer) = match buf[..n].split_first() {
            Some((&OPEN_LOG, path)) => (false, open_log(grants, path)),
            Some((&LISTEN, arg)) => (false, listen(arg)),
            Some((&UDP, arg)) => (false, udp(arg)),
            Some((&READ_TLS, path)) => (false, open_tls(grants, path)),
            Some((&FINISH, [])) => (true, remove_pid_file(grants, written).map(|()| None)),
            Some((&LEAVE, [])) => (true, Ok(None)),
            _ => (false, Err(io::Error::from_raw_os_error(libc::EINVAL))),
        };
        let (errno, fd) = match answer {
            Ok(fd) => (0, fd),
            Err(e) => (e.raw_os_error().unwrap_or(libc::EIO), None),
        };
        let raw: Vec<_> = fd.iter().map(AsRawFd::as_raw_fd).collect();
        let _ = send(sock.as_raw_fd(), &errno.to_ne_bytes(), &raw);
        if done {
            return;
        }
    }
    // The server went away without a word (killed, crashed).
    let _ = remove_pid_file(grants, written);
}

fn open_log(grants: &Grants, path: &[u8]) -> io::Result<Option<OwnedFd>> {
    let granted = grants
        .logs
        .iter()
        .find(|p| p.as_os_str().as_encoded_bytes() == path)
        .ok_or_else(|| io::Error::from_raw_os_error(libc::EPERM))?;
    Ok(Some(fs::open_log(granted)?.into()))
}

fn open_tls(grants: &Grants, path: &[u8]) -> io::Result<Option<OwnedFd>> {
    let granted = grants
        .tls
        .iter()
        .find(|p| p.as_os_str().as_encoded_bytes() == path)
        .ok_or_else(|| io::Error::from_raw_os_error(libc::EPERM))?;
    Ok(Some(File::open(granted)?.into()))
}

fn listen(arg: &[u8]) -> io::Result<Option<OwnedFd>> {
    let bad = || io::Error::from_raw_os_error(libc::EINVAL);
    if arg.len() < 9 {
        return Err(bad());
    }
    let (reuseport, bound_unsent) = (arg[0] & 1 != 0, arg[0] & 2 != 0);
    let backlog = i32::from_ne_bytes(arg[1..5].try_into().map_err(|_| bad())?);
    let defer = u32::from_ne_bytes(arg[5..9].try_into().map_err(|_| bad())?);
    let addr: SocketAddr = std::str::from_utf8(&arg[9..])
        .ok()
        .and_then(|a| a.parse().ok())
        .ok_or_else(bad)?;
    let defer = Duration::from_secs(defer.into());
    let l = net::listen(&addr, reuseport, backlog, defer, bound_unsent)?;
    Ok(Some(l.into()))
}

fn udp(arg: &[u8]) -> io::Result<Option<OwnedFd>> {
    let addr: SocketAddr = std::str::from_utf8(arg)
        .ok()
        .and_then(|a| a.parse().ok())
        .ok_or_else(|| io::Error::from_raw_os_error(libc::EINVAL))?;
    Ok(Some(net::udp(&addr, true)?.into()))
}

/// Removes the pid file if it is still the file the server wrote (`written`):
/// not one a new brisk (an upgrade) wrote since, naming itself.
fn remove_pid_file(grants: &Grants, written: Option<(u64, u64)>) -> io::Result<()> {
    match &grants.pid_file {
        Some(p) if written.is_some() && fs::identity(p) == written => {
            match std::fs::remove_file(p) {
                Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
                _ => Ok(()),
            }
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the server asks for reaches the socket the helper binds: a
    /// plain listener's connections have the bound on unsent bytes, a TLS
    /// one's the system's (a reload's new address is bound there).
    #[test]
    fn a_listen_request_carries_the_bound_on_unsent_bytes() {
        let addr: SocketAddr = "127.0.0.1:0".parse().unwrap();
        for (bound, want) in [(true, net::NOTSENT_LOWAT), (false, 0)] {
            let msg = listen_msg(&addr, true, 8, Duration::ZERO, bound);
            assert_eq!(msg[0], LISTEN);
            let fd = listen(&msg[1..]).unwrap().expect("a socket");
            let listener = TcpListener::from(fd);
            let _client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
            listener.set_nonblocking(false).unwrap();
            let (conn, _) = listener.accept().unwrap();
            let value =
                net::tests::getsockopt_int(&conn, libc::IPPROTO_TCP, libc::TCP_NOTSENT_LOWAT);
            assert_eq!(value, want, "bound_unsent {bound}");
        }
    }

    /// A UDP request binds the address with `SO_REUSEPORT`, so that the
    /// workers' sockets of one address share its datagrams (HTTP/3 on an
    /// address a reload adds); a request that is no address is refused.
    #[test]
    fn a_udp_request_binds_a_reuseport_socket() {
        let fd = udp(b"127.0.0.1:0").unwrap().expect("a socket");
        let sock = std::net::UdpSocket::from(fd);
        let addr = sock.local_addr().unwrap();
        assert_ne!(addr.port(), 0);
        let value = net::tests::getsockopt_int(&sock, libc::SOL_SOCKET, libc::SO_REUSEPORT);
        assert_eq!(value, 1);
        // (A second one joins it.)
        let again = udp(addr.to_string().as_bytes()).unwrap();
        assert!(again.is_some());
        let bad = udp(b"not an address").unwrap_err();
        assert_eq!(bad.raw_os_error(), Some(libc::EINVAL));
    }
}
