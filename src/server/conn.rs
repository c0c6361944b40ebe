//! One client connection: its state and the little it owns between
//! events. An idle keep-alive connection holds no buffer at all; input and
//! output buffers are per-thread and only what cannot be finished at once
//! (a partial request, a response the socket would not take) is kept here.

use std::net::SocketAddr;
use std::time::Instant;

use mio::net::TcpStream;

use super::output::Out;
use crate::http::body::BodyDecoder;

/// Where a connection is in its life; each phase has its own timeout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Waiting for the next request (keep-alive timeout).
    Idle,
    /// Part of a request head has arrived (header timeout, against slowloris).
    Head,
    /// Reading a request body to discard it (body timeout, from last progress).
    Body,
    /// The socket would not take more output (send timeout, from last progress).
    Writing,
    /// A process is producing the response through a pipe (its idle
    /// timeout, from its last progress).
    Pipe,
    /// A password is being hashed off the loop (no timeout: it finishes).
    Verifying,
    /// Output done, write side shut; draining what the client still sends
    /// so that closing does not reset the connection under the response.
    Lingering,
}

/// A client connection.
#[derive(Debug)]
pub struct Conn {
    pub stream: TcpStream,
    /// The connection's slot in its worker's slab (its token).
    pub index: usize,
    /// A pipe body being pumped (boxed: most connections never have one).
    pub pipe: Option<Box<super::worker::PipeRun>>,
    /// A request for an embedded handler whose body is still arriving.
    pub app: Option<Box<super::worker::app::AppCall>>,
    /// A request whose (chunked) body is still arriving, held whole.
    pub whole_body: Option<Box<super::worker::WholeBody>>,
    /// A request waiting for its password check.
    pub auth_wait: Option<Box<super::worker::AuthWait>>,
    pub peer: SocketAddr,
    /// Input received but not yet consumed (empty, unallocated when idle).
    pub pending: Vec<u8>,
    /// Output the socket has not taken yet (empty, unallocated when idle).
    pub out: Out,
    /// A request body being read (for a CGI child or an embedded handler)
    /// or discarded.
    pub body: Option<BodyDecoder>,
    pub phase: Phase,
    /// When the current phase's timer started.
    pub since: Instant,
    /// Requests answered on this connection.
    pub served: u32,
    /// Bytes written to the client so far (positions in the output
    /// queues' endings count from here).
    pub sent: u64,
    /// Close once the queued output is written.
    pub close_after: bool,
    /// Edge-triggered polling: the socket may still hold unread bytes.
    pub read_more: bool,
    /// The client has shut its write side.
    pub eof: bool,
    /// epoll reported the peer's FIN (or an error): read until EOF.
    pub hangup: bool,
    /// Registered with epoll for writability (only while output waits).
    pub writable_interest: bool,
    /// Paces the output while a throttled response is queued.
    pub throttle: Option<Box<crate::access::throttle::Throttle>>,
}

impl Conn {
    /// Whether what is queued is the connection's last output, so the
    /// FIN may ride with its final bytes (a piped answer still streaming
    /// must not be held back).
    pub fn fin_follows(&self) -> bool {
        self.close_after && self.pipe.is_none()
    }

    /// The address the client connected to.
    pub fn local_addr(&self) -> SocketAddr {
        self.stream.local_addr().unwrap_or(self.peer)
    }

    /// A new connection, idle since `now`.
    pub fn new(stream: TcpStream, index: usize, peer: SocketAddr, now: Instant) -> Conn {
        Conn {
            stream,
            index,
            pipe: None,
            app: None,
            whole_body: None,
            auth_wait: None,
            peer,
            pending: Vec::new(),
            out: Out::default(),
            body: None,
            phase: Phase::Idle,
            since: now,
            served: 0,
            sent: 0,
            close_after: false,
            read_more: true,
            eof: false,
            hangup: false,
            writable_interest: false,
            throttle: None,
        }
    }
}
