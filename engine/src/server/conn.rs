//! One client connection: what the worker keeps for it between events.
//! An idle keep-alive connection holds no buffer at all; input and output
//! buffers are lent by the worker only while a request is incomplete or
//! output waits for the socket.
//!
//! What the connection speaks is chosen at the top, as [`Proto`]: every
//! connection starts as HTTP/1.1, and the connection driver switches it
//! to HTTP/2 (`worker/drive.rs`) when its first bytes are the preface,
//! or its first request asks for h2c and may have it. What both
//! protocols share is its [`Life`].

use std::net::SocketAddr;
use std::time::Instant;

use super::exchange::ExchangeId;
use super::h1;
#[cfg(feature = "http2")]
use super::h2::Session;
use super::life::Life;
use super::router::LocalAddr;
use super::transport::{Link, Out, Transport};

/// A client connection.
#[derive(Debug)]
pub struct Conn {
    /// Bytes in and out: plain TCP or TLS.
    pub transport: Link,
    /// The connection's slot in its worker's slab (its token).
    pub index: usize,
    /// The client's address.
    pub peer: SocketAddr,
    /// Input received but not yet consumed (empty, unallocated when idle).
    pub pending: Vec<u8>,
    /// Output the transport has not taken yet (nothing when idle).
    pub out: Out,
    /// Bytes written to the client so far (positions in the output
    /// queue's endings count from here).
    pub sent: u64,
    /// Since when output has waited for the socket to take more (the
    /// send timeout runs from its last progress), while it does.
    pub blocked_since: Option<Instant>,
    /// Paces the output while a throttled response is queued.
    pub throttle: Option<Box<crate::access::throttle::Throttle>>,
    /// Its timer, whether it closes, its lingering close, whether its
    /// PROXY header is still to come.
    pub life: Life,
    /// The protocol it speaks, and where that is.
    pub proto: Proto,
}

/// What a connection speaks.
#[derive(Debug)]
pub enum Proto {
    /// HTTP/1.1: where its exchange is, and what it waits for.
    H1(h1::Conn),
    /// HTTP/2 (it opened with the preface, or upgraded): its streams and
    /// their answers.
    #[cfg(feature = "http2")]
    H2(Box<Session>),
    /// A byte tunnel both ways, once an HTTP/1.1 answer switched
    /// protocols (a 101, RFC 9110 §7.8): the producer that carries it and
    /// what its access-log line needs, nothing of the request or of the
    /// exchange it was (an idle WebSocket costs little).
    #[cfg(feature = "upstreams")]
    Tunnel(Box<super::tunnel::Tunnel>),
    /// HTTP/3 over QUIC: the QUIC connection, its streams and their
    /// answers (see `server::h3`).
    #[cfg(feature = "http3")]
    H3(Box<super::h3::Session>),
}

impl Proto {
    /// The HTTP/1.1 state, if it speaks HTTP/1.1.
    #[inline]
    pub fn h1(&self) -> Option<&h1::Conn> {
        match self {
            Proto::H1(h) => Some(h),
            #[cfg(feature = "http2")]
            Proto::H2(_) => None,
            #[cfg(feature = "upstreams")]
            Proto::Tunnel(_) => None,
            #[cfg(feature = "http3")]
            Proto::H3(_) => None,
        }
    }

    /// The HTTP/1.1 state, to move it, if it speaks HTTP/1.1.
    #[inline]
    pub fn h1_mut(&mut self) -> Option<&mut h1::Conn> {
        match self {
            Proto::H1(h) => Some(h),
            #[cfg(feature = "http2")]
            Proto::H2(_) => None,
            #[cfg(feature = "upstreams")]
            Proto::Tunnel(_) => None,
            #[cfg(feature = "http3")]
            Proto::H3(_) => None,
        }
    }

    /// The HTTP/2 session, if it speaks HTTP/2.
    #[cfg(feature = "http2")]
    #[inline]
    pub fn h2(&self) -> Option<&Session> {
        match self {
            Proto::H2(s) => Some(s),
            Proto::H1(_) => None,
            #[cfg(feature = "upstreams")]
            Proto::Tunnel(_) => None,
            #[cfg(feature = "http3")]
            Proto::H3(_) => None,
        }
    }

    /// The HTTP/2 session, to move it, if it speaks HTTP/2.
    #[cfg(feature = "http2")]
    #[inline]
    pub fn h2_mut(&mut self) -> Option<&mut Session> {
        match self {
            Proto::H2(s) => Some(s),
            Proto::H1(_) => None,
            #[cfg(feature = "upstreams")]
            Proto::Tunnel(_) => None,
            #[cfg(feature = "http3")]
            Proto::H3(_) => None,
        }
    }
}

impl Conn {
    /// Whether the PROXY header is still to come ([`Life::awaiting_proxy`]
    /// the field); never without the cargo feature `ops`, which then
    /// leaves the PROXY protocol's code out.
    #[inline(always)]
    pub fn awaiting_proxy(&self) -> bool {
        cfg!(feature = "ops") && self.life.awaiting_proxy
    }

    /// A new connection, idle since `now`.
    pub fn new(transport: Link, index: usize, peer: SocketAddr, now: Instant) -> Conn {
        Conn {
            transport,
            index,
            peer,
            pending: Vec::new(),
            out: Out::default(),
            sent: 0,
            blocked_since: None,
            throttle: None,
            life: Life::new(now),
            proto: Proto::H1(h1::Conn::new()),
        }
    }

    /// Whether what is queued is the connection's last output, so the
    /// FIN may ride with its final bytes (a piped answer still streaming
    /// must not be held back).
    pub fn fin_follows(&self) -> bool {
        self.life.closing() && !self.proto.h1().is_some_and(h1::Conn::producing)
    }

    /// The connection's byte position at the end of what is queued for
    /// it: sent, and waiting in its queue.
    pub fn queued_end(&self) -> u64 {
        self.sent + self.out.unsent()
    }

    /// Whether the connection waits for a request with nothing under way:
    /// nothing to send, no request in part (HTTP/2: no stream open, no
    /// answer going).
    pub fn idle(&self) -> bool {
        if self.life.lingers() || !self.out.is_empty() || self.transport.has_backlog() {
            return false;
        }
        match &self.proto {
            Proto::H1(h) => matches!(h.state(), h1::State::Idle),
            #[cfg(feature = "http2")]
            Proto::H2(s) => s.conn.open_streams() == 0 && s.answers.is_empty(),
            #[cfg(feature = "upstreams")]
            Proto::Tunnel(_) => false,
            #[cfg(feature = "http3")]
            Proto::H3(s) => s.idle(),
        }
    }

    /// Its tunnel, if it is one (see [`Proto::Tunnel`]).
    #[cfg(feature = "upstreams")]
    #[inline]
    pub fn tunnel(&mut self) -> Option<&mut super::tunnel::Tunnel> {
        match &mut self.proto {
            Proto::Tunnel(t) => Some(t),
            _ => None,
        }
    }

    /// Whether the connection speaks HTTP/2.
    #[inline]
    pub fn speaks_h2(&self) -> bool {
        #[cfg(feature = "http2")]
        return matches!(self.proto, Proto::H2(_));
        #[cfg(not(feature = "http2"))]
        false
    }

    /// Its HTTP/1.1 state, if it speaks HTTP/1.1 (see [`Proto::h1`]).
    #[inline]
    pub fn h1(&self) -> Option<&h1::Conn> {
        self.proto.h1()
    }

    /// Its HTTP/1.1 state, to move it (see [`Proto::h1_mut`]).
    #[inline]
    pub fn h1_mut(&mut self) -> Option<&mut h1::Conn> {
        self.proto.h1_mut()
    }

    /// Its HTTP/2 session, if it speaks HTTP/2 (see [`Proto::h2`]).
    #[cfg(feature = "http2")]
    #[inline]
    pub fn h2(&self) -> Option<&Session> {
        self.proto.h2()
    }

    /// How many answers of its streams are under way (HTTP/2's or
    /// HTTP/3's); `None` for a connection without streams.
    #[cfg(feature = "http2")]
    pub fn streams_under_way(&self) -> Option<usize> {
        #[cfg(feature = "http3")]
        if let Some(s) = self.h3() {
            return Some(s.answers.len());
        }
        self.h2().map(|s| s.answers.len())
    }

    /// Its HTTP/2 session, to move it (see [`Proto::h2_mut`]).
    #[cfg(feature = "http2")]
    #[inline]
    pub fn h2_mut(&mut self) -> Option<&mut Session> {
        self.proto.h2_mut()
    }

    /// Whether its HTTP/1.1 answer is being produced (see
    /// [`h1::Conn::producing`]).
    #[inline]
    pub fn producing(&self) -> bool {
        self.h1().is_some_and(h1::Conn::producing)
    }

    /// Whether a request body is still being read (see
    /// [`h1::Conn::reading_body`]; HTTP/2's bodies come in frames).
    #[inline]
    pub fn reading_body(&self) -> bool {
        self.h1().is_some_and(h1::Conn::reading_body)
    }

    /// The exchange (its HTTP/2 stream; `None`: HTTP/1.1's) whose
    /// request is held in the table's exchange that `f` picks, if one
    /// is. Waits are found, named and let go of by their stream here, and
    /// only here.
    pub fn find_wait(&self, f: impl Fn(ExchangeId) -> bool) -> Option<Option<u32>> {
        match &self.proto {
            Proto::H1(h) => h.wait().filter(|id| f(*id)).map(|_| None),
            #[cfg(feature = "http2")]
            Proto::H2(s) => s.find_wait(f).map(Some),
            #[cfg(feature = "upstreams")]
            Proto::Tunnel(_) => None,
            #[cfg(feature = "http3")]
            Proto::H3(s) => s.find_wait(f).map(Some),
        }
    }

    /// The exchange that produces the answer of stream `id` (HTTP/2 or
    /// HTTP/3), if one does.
    #[cfg(feature = "http2")]
    pub fn stream_run(&mut self, id: u32) -> Option<ExchangeId> {
        match &mut self.proto {
            #[cfg(feature = "http2")]
            Proto::H2(s) => s.answers.iter().find(|a| a.id == id)?.run,
            #[cfg(feature = "http3")]
            Proto::H3(s) => s.answer(id)?.run,
            _ => None,
        }
    }

    /// The exchange in which the request of exchange `stream` is held,
    /// if it is.
    pub fn wait_id(&mut self, stream: Option<u32>) -> Option<ExchangeId> {
        match (&mut self.proto, stream) {
            (Proto::H1(h), _) => h.wait(),
            #[cfg(feature = "http2")]
            (Proto::H2(s), Some(id)) => s.answer(id)?.wait,
            #[cfg(feature = "http2")]
            (Proto::H2(_), None) => None,
            #[cfg(feature = "upstreams")]
            (Proto::Tunnel(_), _) => None,
            #[cfg(feature = "http3")]
            (Proto::H3(s), Some(id)) => s.answer(id)?.wait,
            #[cfg(feature = "http3")]
            (Proto::H3(_), None) => None,
        }
    }

    /// Lets go of the request held on exchange `stream` (see
    /// [`h1::Conn::take_wait`]): its exchange, which the caller takes out
    /// of the table.
    pub fn take_wait(&mut self, stream: Option<u32>) -> Option<ExchangeId> {
        match (&mut self.proto, stream) {
            (Proto::H1(h), _) => h.take_wait(),
            #[cfg(feature = "http2")]
            (Proto::H2(s), Some(id)) => s.take_wait(id),
            #[cfg(feature = "http2")]
            (Proto::H2(_), None) => None,
            #[cfg(feature = "upstreams")]
            (Proto::Tunnel(_), _) => None,
            #[cfg(feature = "http3")]
            (Proto::H3(s), Some(id)) => s.take_wait(id),
            #[cfg(feature = "http3")]
            (Proto::H3(_), None) => None,
        }
    }

    /// Its HTTP/3 session, if it speaks HTTP/3.
    #[cfg(feature = "http3")]
    #[inline]
    pub fn h3(&self) -> Option<&super::h3::Session> {
        match &self.proto {
            Proto::H3(s) => Some(s),
            _ => None,
        }
    }

    /// Its HTTP/3 session, to move it, if it speaks HTTP/3.
    #[cfg(feature = "http3")]
    #[inline]
    pub fn h3_mut(&mut self) -> Option<&mut super::h3::Session> {
        match &mut self.proto {
            Proto::H3(s) => Some(s),
            _ => None,
        }
    }

    /// Whether it is a QUIC connection (HTTP/3).
    #[inline]
    pub fn speaks_h3(&self) -> bool {
        #[cfg(feature = "http3")]
        return matches!(self.proto, Proto::H3(_));
        #[cfg(not(feature = "http3"))]
        false
    }
}

impl LocalAddr for Conn {
    fn local_addr(&self) -> SocketAddr {
        self.transport.local_addr().unwrap_or(self.peer)
    }

    fn server_name(&self) -> Option<&str> {
        self.transport.server_name()
    }
}
