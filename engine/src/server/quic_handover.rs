//! HTTP/3 across a zero-downtime upgrade (SIGUSR2).
//!
//! The kernel hands each datagram to one socket of an `SO_REUSEPORT`
//! group by a hash of its 4-tuple, so a connection's datagrams all go to
//! one socket. Had the new brisk bound sockets of its own into the group,
//! the old one's connections whose hash now picks a new socket would have
//! lost every datagram until they timed out: the new process cannot know
//! them (another process's keys and state).
//!
//! So the old brisk hands its UDP sockets over with the TCP ones, and the
//! new one binds none of its own for those addresses: the group stays as
//! it was. The new one reads them only once the old one has gone, which
//! it learns from the readiness pipe: it keeps its writing end, the old
//! brisk keeps the reading end until its workers are done, and the
//! kernel then reports the writing end in error (`EPOLLERR`: a pipe
//! with no reader, pipe(7)). Meanwhile the old brisk answers
//! its connections to their end and refuses new ones
//! (CONNECTION_REFUSED: clients go on over TCP, to the new brisk, until
//! its QUIC sockets open).

use std::net::{SocketAddr, UdpSocket};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};

/// The UDP sockets the previous brisk handed over, by the configured
/// address each served; taken by the first binding of that address.
static HANDED: Mutex<Vec<(SocketAddr, UdpSocket)>> = Mutex::new(Vec::new());

/// Shut while the previous brisk lives (see the module documentation).
static GATE: OnceLock<Gate> = OnceLock::new();

/// Set once this brisk hands its sockets over: no new QUIC connection.
static RETIRED: AtomicBool = AtomicBool::new(false);

/// Whether the previous brisk has gone, told by the readiness pipe's
/// writing end.
pub(crate) struct Gate {
    open: AtomicBool,
    fd: OwnedFd,
}

impl Gate {
    /// Whether the previous brisk is gone, as far as known.
    pub(crate) fn is_open(&self) -> bool {
        self.open.load(Ordering::Acquire)
    }

    /// It is: every worker may read the handed sockets.
    pub(crate) fn opened(&self) {
        self.open.store(true, Ordering::Release);
    }

    /// The descriptor a worker watches (writable, and in error once the
    /// previous brisk has closed the reading end).
    pub(crate) fn fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

/// Takes the UDP sockets `udp` the previous brisk handed over (each with
/// the address it was configured for), shut until `lives` (the
/// readiness pipe's writing end) reports that brisk gone.
#[cfg(feature = "ops")]
pub(crate) fn hand(udp: Vec<(UdpSocket, SocketAddr)>, lives: OwnedFd) {
    if udp.is_empty() {
        return;
    }
    let mut handed = HANDED.lock().unwrap_or_else(|e| e.into_inner());
    handed.extend(udp.into_iter().map(|(s, a)| (a, s)));
    let _ = GATE.set(Gate {
        open: AtomicBool::new(false),
        fd: lives,
    });
}

/// The handed sockets of configured address `wanted` (none if it had
/// none, or they were taken already).
pub(super) fn take(wanted: SocketAddr) -> Vec<UdpSocket> {
    let mut handed = HANDED.lock().unwrap_or_else(|e| e.into_inner());
    let (mine, rest) = std::mem::take(&mut *handed)
        .into_iter()
        .partition(|(a, _)| *a == wanted);
    *handed = rest;
    mine.into_iter().map(|(_, s)| s).collect()
}

/// Closes the handed sockets no address took (HTTP/3 turned off, or
/// the address gone from the configuration): left open and unread in
/// their group they would swallow the datagrams the kernel hashed to
/// them; closed, a client hears that nothing listens there and goes on
/// over TCP.
pub(crate) fn close_unclaimed() {
    HANDED.lock().unwrap_or_else(|e| e.into_inner()).clear();
}

/// The gate, while shut (`None` once open, or with nothing handed).
pub(crate) fn gate() -> Option<&'static Gate> {
    GATE.get().filter(|g| !g.is_open())
}

/// The gate, open or not (`None` with nothing handed).
pub(crate) fn gate_any() -> Option<&'static Gate> {
    GATE.get()
}

/// This brisk has handed its sockets to a new one.
pub(super) fn retire() {
    RETIRED.store(true, Ordering::Release);
}

/// Whether new QUIC connections are the new brisk's.
pub(crate) fn retired() -> bool {
    RETIRED.load(Ordering::Acquire)
}
