//! One client connection: what the worker keeps for it between events.
//! An idle keep-alive connection holds no buffer at all; input and output
//! buffers are lent by the worker only while a request is incomplete or
//! output waits for the socket.

use std::net::SocketAddr;
use std::time::Instant;

use super::exchange::ExchangeId;
use super::h1;
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
    /// Where its HTTP/1.1 exchange is, and what it waits for.
    pub h1: h1::Conn,
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
    /// A `[proxy] listen` connection whose PROXY header has not come
    /// yet: `peer` is still the balancer, counted in the total number of
    /// connections but not against any address.
    pub awaiting_proxy: bool,
    /// Paces the output while a throttled response is queued.
    pub throttle: Option<Box<crate::access::throttle::Throttle>>,
    /// The connection speaks HTTP/2 (it opened with the preface): its
    /// streams and their answers. `h1` then stays idle.
    #[cfg(feature = "http2")]
    pub h2: Option<Box<super::h2::Session>>,
}

impl Conn {
    /// Whether the PROXY header is still to come ([`Conn::awaiting_proxy`]
    /// the field); never without the cargo feature `ops`, which then
    /// leaves the PROXY protocol's code out.
    #[inline(always)]
    pub fn awaiting_proxy(&self) -> bool {
        cfg!(feature = "ops") && self.awaiting_proxy
    }

    /// A new connection, idle since `now`.
    pub fn new(transport: Link, index: usize, peer: SocketAddr, now: Instant) -> Conn {
        Conn {
            transport,
            index,
            peer,
            h1: h1::Conn::new(now),
            pending: Vec::new(),
            out: Out::default(),
            sent: 0,
            blocked_since: None,
            awaiting_proxy: false,
            throttle: None,
            #[cfg(feature = "http2")]
            h2: None,
        }
    }

    /// Whether what is queued is the connection's last output, so the
    /// FIN may ride with its final bytes (a piped answer still streaming
    /// must not be held back).
    pub fn fin_follows(&self) -> bool {
        self.h1.closing() && !self.h1.producing()
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
        if !matches!(self.h1.state(), h1::State::Idle)
            || !self.out.is_empty()
            || self.transport.has_backlog()
        {
            return false;
        }
        #[cfg(feature = "http2")]
        if let Some(s) = &self.h2 {
            return s.conn.open_streams() == 0 && s.answers.is_empty();
        }
        true
    }

    /// Whether the connection speaks HTTP/2.
    pub fn speaks_h2(&self) -> bool {
        #[cfg(feature = "http2")]
        return self.h2.is_some();
        #[cfg(not(feature = "http2"))]
        false
    }

    /// The exchange (its HTTP/2 stream; `None`: HTTP/1.1's) whose
    /// request is held in the table's exchange that `f` picks, if one
    /// is. Waits are found, named and let go of by their stream here, and
    /// only here.
    pub fn find_wait(&self, f: impl Fn(ExchangeId) -> bool) -> Option<Option<u32>> {
        #[cfg(feature = "http2")]
        if let Some(s) = &self.h2 {
            return s.find_wait(f).map(Some);
        }
        self.h1.wait().filter(|id| f(*id)).map(|_| None)
    }

    /// The exchange in which the request of exchange `stream` is held,
    /// if it is.
    pub fn wait_id(&mut self, stream: Option<u32>) -> Option<ExchangeId> {
        #[cfg(feature = "http2")]
        if let (Some(s), Some(id)) = (&mut self.h2, stream) {
            return s.answer(id)?.wait;
        }
        let _ = stream;
        self.h1.wait()
    }

    /// Lets go of the request held on exchange `stream` (see
    /// [`h1::Conn::take_wait`]): its exchange, which the caller takes out
    /// of the table.
    pub fn take_wait(&mut self, stream: Option<u32>) -> Option<ExchangeId> {
        #[cfg(feature = "http2")]
        if let (Some(s), Some(id)) = (&mut self.h2, stream) {
            return s.take_wait(id);
        }
        let _ = stream;
        self.h1.take_wait()
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
