//! One client connection: what the worker keeps for it between events.
//! An idle keep-alive connection holds no buffer at all; input and output
//! buffers are lent by the worker only while a request is incomplete or
//! output waits for the socket.

use std::net::SocketAddr;
use std::time::Instant;

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

    /// Whether a request of this connection waits for password check `id`.
    pub fn waits_for_check(&self, id: u64) -> bool {
        #[cfg(feature = "http2")]
        if let Some(s) = &self.h2 {
            return s.waits_for_check(id);
        }
        self.h1.waits_for_check(id)
    }

    /// Password check `id` is done: its request may be routed again.
    pub fn check_done(&mut self, id: u64) {
        #[cfg(feature = "http2")]
        if let Some(s) = &mut self.h2 {
            s.check_done(id);
            return;
        }
        let _ = id;
        self.h1.check_done();
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
