//! Transports: bytes in, bytes out, and readiness, below the protocol.
//!
//! A transport owns the connection's socket and decides how the output
//! queue ([`Out`]: byte runs and file ranges, in order) reaches it. Plain
//! TCP ([`Tcp`]) sends byte runs with `send` and file ranges with
//! `sendfile` (or copies them, `[static] sendfile = false`). The protocol
//! above ([`crate::server::h1`]) only ever sees plaintext bytes and fills
//! the queue; handlers never see a transport at all.
//!
//! TLS ([`Tls`], cargo feature `tls`) is the second implementation of
//! [`Transport`]: rustls makes the handshake and brisk's own sans-IO
//! record layer ([`crate::tls::record`]) the records; `read` reads
//! records from the socket and hands back the plaintext they carry;
//! `flush` takes the queue's front piece (a file range is read with
//! `pread`, never `sendfile`), encrypts it into records, and writes
//! those, saying how much of the piece it consumed; `shutdown_write`
//! sends `close_notify` before the FIN. Nothing above the transport
//! changes: a connection holds a [`Link`], either of the two. (kTLS,
//! which would keep `sendfile`, is not built: see the book, docs/src/https.md.)

mod copy;
mod queue;
mod tcp;
#[cfg(feature = "tls")]
mod tls;
#[cfg(not(feature = "tls"))]
#[path = "no_tls.rs"]
mod tls;

use std::io;
use std::net::SocketAddr;
use std::time::Instant;

use crate::http::TlsSession;

pub use copy::CHUNK;
pub use queue::{Ending, FileRange, Front, NextFile, Out};
pub use tcp::Tcp;
pub use tls::{Acceptor, Sessions, Setup, Slot, Tls};

/// What a flush achieved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flushed {
    /// Everything queued has been written.
    All,
    /// The byte limit given was reached (a throttle's share, or the
    /// connection's turn); more is queued.
    Limit,
    /// The peer takes no more now; wait for writability.
    Blocked,
}

/// How much one flush may write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limit {
    /// Most bytes (`usize::MAX`: no limit).
    pub bytes: usize,
    /// A throttle set it: the next bytes wait for the throttle, so none
    /// are held back for them (no `MSG_MORE` at the limit).
    pub throttled: bool,
}

impl Limit {
    /// No limit.
    pub const NONE: Limit = Limit {
        bytes: usize::MAX,
        throttled: false,
    };
}

/// Bytes in and out of one connection.
pub trait Transport {
    /// Reads what has arrived into the spare capacity of `buf`, at most
    /// `max` bytes (`usize::MAX`: as much as it holds), growing its
    /// length; returns how many bytes (0: the peer closed its side).
    fn read(&mut self, buf: &mut Vec<u8>, max: usize) -> io::Result<usize>;

    /// Writes as much of `out` as the peer takes now, at most `limit`'s
    /// bytes (a throttle's share, or what is left of the connection's
    /// turn: see `worker::drive`).
    ///
    /// `fin_follows`: the write side is shut right after the last byte,
    /// so that byte may wait for the FIN and leave in the same segment
    /// (one packet, and one ACK, fewer per closing answer).
    fn flush(&mut self, out: &mut Out, limit: Limit, fin_follows: bool) -> io::Result<Flushed>;

    /// Whether bytes the transport took wait for the socket (TLS records
    /// it made, during the handshake too): the connection then waits for
    /// writability and flushes, even with nothing queued.
    fn has_backlog(&self) -> bool {
        false
    }

    /// Ends the write side, after what was flushed.
    fn shutdown_write(&mut self);

    /// The address the client connected to.
    fn local_addr(&self) -> Option<SocketAddr>;
}

/// One connection's transport: plain TCP, or TLS over it (boxed: a plain
/// connection does not pay for the larger state).
#[derive(Debug)]
pub enum Link {
    /// Plain TCP.
    Tcp(Tcp),
    /// TLS over TCP.
    Tls(Box<Tls>),
    /// QUIC (feature `http3`): the connection's bytes go through its
    /// streams, in the protocol's state (`server::h3::Session`); this
    /// holds only what the router asks of a transport.
    #[cfg(feature = "http3")]
    Quic(Box<Quic>),
}

/// What a QUIC connection's transport tells the router: the address the
/// client sent to, and the server name it asked for.
#[cfg(feature = "http3")]
#[derive(Debug)]
pub struct Quic {
    /// The address the client sent to.
    pub local: SocketAddr,
    /// The server name (SNI) the client asked for, lower case.
    pub server_name: Option<Box<str>>,
}

impl Link {
    /// The socket and what epoll said about it.
    pub fn tcp(&self) -> &Tcp {
        match self {
            Link::Tcp(t) => t,
            Link::Tls(t) => t.tcp(),
            #[cfg(feature = "http3")]
            Link::Quic(_) => unreachable!("a QUIC connection is driven by its worker's QUIC side"),
        }
    }

    /// The socket and what epoll said about it.
    pub fn tcp_mut(&mut self) -> &mut Tcp {
        match self {
            Link::Tcp(t) => t,
            Link::Tls(t) => t.tcp_mut(),
            #[cfg(feature = "http3")]
            Link::Quic(_) => unreachable!("a QUIC connection is driven by its worker's QUIC side"),
        }
    }

    /// When the TLS handshake must be done by, while it is not.
    pub fn deadline(&self) -> Option<Instant> {
        match self {
            Link::Tcp(_) => None,
            Link::Tls(t) => t.deadline(),
            #[cfg(feature = "http3")]
            Link::Quic(_) => None,
        }
    }

    /// Whether a TLS handshake stalled before the ClientHello was whole
    /// (a read drained the socket): it may give its place to a new one.
    pub fn hello_stalled(&self) -> bool {
        match self {
            Link::Tls(t) => t.hello_stalled(),
            _ => false,
        }
    }

    /// What TLS negotiated; `None` over plain TCP.
    pub fn session(&self) -> Option<TlsSession> {
        match self {
            Link::Tcp(_) => None,
            Link::Tls(t) => t.session(),
            // (quinn-proto does not say which suite; QUIC is TLS 1.3.)
            #[cfg(feature = "http3")]
            Link::Quic(_) => Some(TlsSession {
                protocol: "TLSv1.3",
                cipher: "",
            }),
        }
    }

    /// The server name (SNI) a TLS client asked for, lower case.
    pub fn server_name(&self) -> Option<&str> {
        match self {
            Link::Tcp(_) => None,
            Link::Tls(t) => t.server_name(),
            #[cfg(feature = "http3")]
            Link::Quic(q) => q.server_name.as_deref(),
        }
    }

    /// Gives back what an idle connection can build again when it wakes
    /// (TLS: the expanded keys); the worker calls it after a second idle.
    pub fn rest(&mut self) {
        match self {
            Link::Tcp(_) => {}
            Link::Tls(t) => t.rest(),
            #[cfg(feature = "http3")]
            Link::Quic(_) => {}
        }
    }

    /// Whether the connection speaks TLS.
    pub fn is_tls(&self) -> bool {
        match self {
            Link::Tcp(_) => false,
            Link::Tls(_) => true,
            #[cfg(feature = "http3")]
            Link::Quic(_) => true,
        }
    }

    /// Whether the client chose HTTP/2 by ALPN (TLS only).
    pub fn alpn_h2(&self) -> bool {
        match self {
            Link::Tcp(_) => false,
            Link::Tls(t) => t.alpn_h2(),
            #[cfg(feature = "http3")]
            Link::Quic(_) => false,
        }
    }
}

impl Transport for Link {
    fn read(&mut self, buf: &mut Vec<u8>, max: usize) -> io::Result<usize> {
        match self {
            Link::Tcp(t) => t.read(buf, max),
            Link::Tls(t) => t.read(buf, max),
            #[cfg(feature = "http3")]
            Link::Quic(_) => Err(io::ErrorKind::WouldBlock.into()),
        }
    }

    fn flush(&mut self, out: &mut Out, limit: Limit, fin_follows: bool) -> io::Result<Flushed> {
        match self {
            Link::Tcp(t) => t.flush(out, limit, fin_follows),
            Link::Tls(t) => t.flush(out, limit, fin_follows),
            // (Nothing goes through the queue: see `server::h3`.)
            #[cfg(feature = "http3")]
            Link::Quic(_) => {
                let _ = (out, limit, fin_follows);
                Ok(Flushed::All)
            }
        }
    }

    fn has_backlog(&self) -> bool {
        match self {
            Link::Tcp(t) => t.has_backlog(),
            Link::Tls(t) => t.has_backlog(),
            #[cfg(feature = "http3")]
            Link::Quic(_) => false,
        }
    }

    fn shutdown_write(&mut self) {
        match self {
            Link::Tcp(t) => t.shutdown_write(),
            Link::Tls(t) => t.shutdown_write(),
            #[cfg(feature = "http3")]
            Link::Quic(_) => {}
        }
    }

    fn local_addr(&self) -> Option<SocketAddr> {
        match self {
            Link::Tcp(t) => t.local_addr(),
            Link::Tls(t) => t.local_addr(),
            #[cfg(feature = "http3")]
            Link::Quic(q) => Some(q.local),
        }
    }
}
