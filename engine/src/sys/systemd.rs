//! systemd's two interfaces for services, without libsystemd: socket
//! activation (`sd_listen_fds(3)`: listening sockets passed as
//! descriptors 3, 4, … with `LISTEN_PID`, `LISTEN_FDS` and
//! `LISTEN_FDNAMES`) and the notification socket (`sd_notify(3)`:
//! `READY=1`, `RELOADING=1`, `STOPPING=1`, `WATCHDOG=1` as datagrams to
//! `$NOTIFY_SOCKET`). Both are small, documented protocols
//! (systemd.io/ and the man pages), cheaper to speak than to link.

use std::io;
use std::net::{TcpListener, UdpSocket};
use std::os::fd::{FromRawFd, RawFd};
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{self as unix, UnixDatagram};
use std::time::Duration;

use super::cvt;

/// The first descriptor passed (`SD_LISTEN_FDS_START`).
const LISTEN_FDS_START: RawFd = 3;

/// A listening socket passed by the service manager.
#[derive(Debug)]
pub struct Passed {
    /// The socket (non-blocking, close-on-exec from now on).
    pub socket: TcpListener,
    /// Its name (`FileDescriptorName=` in the socket unit, else the
    /// unit's name); empty without `LISTEN_FDNAMES`.
    pub name: String,
}

/// The listening sockets passed to this process (`LISTEN_PID` names it),
/// taken once: the variables are removed, so that no child sees them.
/// Empty when none were passed. An error for a descriptor that is not a
/// listening TCP socket (a `ListenDatagram=` or `ListenFIFO=` unit, say):
/// brisk serves TCP only.
pub fn listen_fds() -> io::Result<Vec<Passed>> {
    let pid = std::env::var("LISTEN_PID").ok();
    let fds = std::env::var("LISTEN_FDS").ok();
    let names = std::env::var("LISTEN_FDNAMES").unwrap_or_default();
    // (Single-threaded here: nothing reads the environment meanwhile.)
    for var in ["LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES"] {
        std::env::remove_var(var);
    }
    let (Some(pid), Some(fds)) = (pid, fds) else {
        return Ok(Vec::new());
    };
    // Meant for another process (inherited through a fork): not ours.
    if pid.parse::<u32>().ok() != Some(std::process::id()) {
        return Ok(Vec::new());
    }
    let n: RawFd = fds
        .parse()
        .ok()
        .filter(|n| (0..=4096).contains(n))
        .ok_or_else(|| io::Error::other(format!("LISTEN_FDS={fds:?} is not a count")))?;
    let mut names = names.split(':');
    let mut out = Vec::with_capacity(n as usize);
    for fd in LISTEN_FDS_START..LISTEN_FDS_START + n {
        let name = names.next().unwrap_or_default().to_string();
        // (Unnamed without LISTEN_FDNAMES: the number alone.)
        let named = match name.is_empty() {
            true => format!("descriptor {fd}"),
            false => format!("descriptor {fd} ({name})"),
        };
        out.push(Passed {
            socket: adopt(fd).map_err(|e| io::Error::new(e.kind(), format!("{named}: {e}")))?,
            name,
        });
    }
    Ok(out)
}

/// Takes descriptor `fd` as a listening TCP socket, or says why not.
pub fn adopt(fd: RawFd) -> io::Result<TcpListener> {
    check(fd, libc::SOCK_STREAM)?;
    // SAFETY: the descriptor was passed to this process for it to own (the
    // protocol says so), and is a socket, checked above; nothing else
    // takes it, since the variables that named it are gone.
    let socket = unsafe { TcpListener::from_raw_fd(fd) };
    socket.set_nonblocking(true)?;
    cloexec(fd)?;
    Ok(socket)
}

/// Takes descriptor `fd` as a bound UDP socket (QUIC's, handed over by
/// an upgrade), or says why not.
pub fn adopt_udp(fd: RawFd) -> io::Result<UdpSocket> {
    check(fd, libc::SOCK_DGRAM)?;
    // SAFETY: as in `adopt`: handed to this process to own, a socket.
    let socket = unsafe { UdpSocket::from_raw_fd(fd) };
    socket.set_nonblocking(true)?;
    cloexec(fd)?;
    Ok(socket)
}

fn cloexec(fd: RawFd) -> io::Result<()> {
    // SAFETY: F_SETFD on a descriptor this process owns.
    cvt(unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) }).map(drop)
}

/// Whether `fd` is an IPv4 or IPv6 socket of `kind`: a listening TCP
/// socket (`SOCK_STREAM`) or a UDP one (`SOCK_DGRAM`).
fn check(fd: RawFd, kind: libc::c_int) -> io::Result<()> {
    let int = |opt| -> io::Result<libc::c_int> {
        let mut v: libc::c_int = 0;
        let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
        // SAFETY: `v` and `len` are valid out-pointers of the sizes given;
        // a descriptor that is not a socket fails with ENOTSOCK.
        cvt(unsafe {
            libc::getsockopt(
                fd,
                libc::SOL_SOCKET,
                opt,
                (&mut v as *mut libc::c_int).cast(),
                &mut len,
            )
        })?;
        Ok(v)
    };
    let stream = kind == libc::SOCK_STREAM;
    let listening = int(libc::SO_ACCEPTCONN)? == 1;
    let domain = int(libc::SO_DOMAIN)?;
    if listening != stream
        || int(libc::SO_TYPE)? != kind
        || !(domain == libc::AF_INET || domain == libc::AF_INET6)
    {
        let not = if stream {
            "not a listening TCP socket"
        } else {
            "not a UDP socket"
        };
        return Err(io::Error::other(not));
    }
    Ok(())
}

/// The service manager's notification socket (`$NOTIFY_SOCKET`),
/// connected at start, while the process may still do so (the sandbox
/// then keeps only `send`).
#[derive(Debug)]
pub struct Notifier {
    sock: UnixDatagram,
}

impl Notifier {
    /// Connects to `$NOTIFY_SOCKET` (a path, or `@name` in the abstract
    /// namespace); `None` when it is not set (not started by systemd
    /// with `Type=notify`). The variable stays, for a process brisk
    /// starts to replace itself (an upgrade) to say it is ready.
    pub fn from_env() -> io::Result<Option<Notifier>> {
        let Some(path) = std::env::var_os("NOTIFY_SOCKET") else {
            return Ok(None);
        };
        let bytes = path.as_encoded_bytes();
        let addr = match bytes.strip_prefix(b"@") {
            Some(name) => unix::SocketAddr::from_abstract_name(name)?,
            None => unix::SocketAddr::from_pathname(&path)?,
        };
        let sock = UnixDatagram::unbound()?;
        sock.connect_addr(&addr)?;
        Ok(Some(Notifier { sock }))
    }

    /// Sends one notification (`READY=1`, or several `KEY=value` lines).
    pub fn send(&self, state: &str) -> io::Result<()> {
        self.sock.send(state.as_bytes()).map(drop)
    }
}

/// How often the service manager wants `WATCHDOG=1` (`$WATCHDOG_USEC`,
/// for this process if `$WATCHDOG_PID` names one): `None` when the
/// watchdog is off.
pub fn watchdog() -> Option<Duration> {
    if let Ok(pid) = std::env::var("WATCHDOG_PID") {
        if pid.parse::<u32>().ok() != Some(std::process::id()) {
            return None;
        }
    }
    let usec: u64 = std::env::var("WATCHDOG_USEC").ok()?.parse().ok()?;
    (usec > 0).then(|| Duration::from_micros(usec))
}

/// `CLOCK_MONOTONIC` in microseconds, as `MONOTONIC_USEC=` wants it.
pub fn monotonic_usec() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid out-pointer; CLOCK_MONOTONIC always exists.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000 + ts.tv_nsec as u64 / 1000
}
