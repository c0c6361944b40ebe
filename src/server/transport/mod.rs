//! Transports: bytes in, bytes out, and readiness, below the protocol.
//!
//! A transport owns the connection's socket and decides how the output
//! queue ([`Out`]: byte runs and file ranges, in order) reaches it. Plain
//! TCP ([`Tcp`]) sends byte runs with `send` and file ranges with
//! `sendfile` (or copies them, `[static] sendfile = false`). The protocol
//! above ([`crate::server::h1`]) only ever sees plaintext bytes and fills
//! the queue; handlers never see a transport at all.
//!
//! TLS is meant to be a second implementation of [`Transport`]: with a
//! sans-IO record layer (rustls), `read` reads records from the socket
//! and hands back the plaintext they carry; `flush` takes the queue's
//! front piece (a file range is read with `pread`, never `sendfile`),
//! encrypts it into records, and writes those, saying how much of the
//! piece it consumed; `shutdown_write` sends `close_notify` before the
//! FIN. kTLS would keep `sendfile`. Nothing above the transport changes.

mod copy;
mod queue;
mod tcp;

use std::io;
use std::net::SocketAddr;

pub use copy::CHUNK;
pub use queue::{Ending, FileRange, Front, Out};
pub use tcp::Tcp;

/// What a flush achieved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flushed {
    /// Everything queued has been written.
    All,
    /// The byte limit given was reached (throttling); more is queued.
    Limit,
    /// The peer takes no more now; wait for writability.
    Blocked,
}

/// Bytes in and out of one connection.
pub trait Transport {
    /// Reads what has arrived into the spare capacity of `buf`, growing
    /// its length; returns how many bytes (0: the peer closed its side).
    fn read(&mut self, buf: &mut Vec<u8>) -> io::Result<usize>;

    /// Writes as much of `out` as the peer takes now, at most `limit`
    /// bytes (a throttle's share; `usize::MAX` for no limit).
    ///
    /// `fin_follows`: the write side is shut right after the last byte,
    /// so that byte may wait for the FIN and leave in the same segment
    /// (one packet, and one ACK, fewer per closing answer).
    fn flush(&mut self, out: &mut Out, limit: usize, fin_follows: bool) -> io::Result<Flushed>;

    /// Ends the write side, after what was flushed.
    fn shutdown_write(&mut self);

    /// The address the client connected to.
    fn local_addr(&self) -> Option<SocketAddr>;
}
