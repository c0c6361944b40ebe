//! A stream's answer, HTTP/2's and HTTP/3's alike: the protocols that
//! frame bodies themselves keep the same things of an answer until its
//! last byte has gone (its pieces, length, log line, waits, producer,
//! flags and trailers), and each adds what its own framing needs in
//! [`Answer::own`] (nothing for HTTP/2; for HTTP/3 the framed bytes its
//! QUIC stream has not taken yet).

use std::collections::VecDeque;
use std::time::Instant;

use super::Piece;
use crate::access::throttle::Throttle;
use crate::log::Draft;
use crate::server::exchange::ExchangeId;
use crate::sys::cached::Warmth;

/// What a stream's answer holds until its last byte is framed, with
/// `O`, what its protocol keeps of its own.
#[derive(Debug)]
pub struct Answer<O = ()> {
    /// The stream (HTTP/3: its index among the client's bidirectional
    /// streams).
    pub id: u32,
    /// The body left to frame.
    pub pieces: VecDeque<Piece>,
    /// Body bytes in all.
    pub body_len: u64,
    /// Its access-log line, drafted (text and draft).
    pub log: Option<(Vec<u8>, Draft)>,
    /// When the request's head arrived.
    pub started: Instant,
    /// The exchange of the request, while it waits (for its password
    /// check off the loop, for its body for a handler, or for its body
    /// held whole for its program).
    pub wait: Option<ExchangeId>,
    /// The `[[throttle]]` rates that pace it (its rule's, shared by all
    /// clients, and its connection's), if a rule covers it: its frames
    /// wait for them, the connection's other streams do not.
    pub throttle: Option<Box<Throttle>>,
    /// A produced answer (a program's output, an upstream's, an embedded
    /// handler's body in pieces, or its later answer), while it comes:
    /// its exchange (`Task::Run`, the producer there).
    pub run: Option<ExchangeId>,
    /// Its producer is a program or an upstream (counted in its
    /// session's `programs`).
    pub program: bool,
    /// More body may come from the producer: the stream does not end
    /// when the pieces run out.
    pub open: bool,
    /// The answer cannot be complete (a producer that stopped short):
    /// the stream is reset instead of ended.
    pub broken: bool,
    /// It is a WebSocket's tunnel (an extended CONNECT whose upstream
    /// switched): a cut one is reset with CANCEL, the TCP reset it
    /// stands for (RFC 8441 §5), not INTERNAL_ERROR.
    pub tunnel: bool,
    /// The producer's output is read and dropped (a HEAD request, a
    /// bodiless status): the stream ended with the HEADERS.
    pub discard: bool,
    /// Last progress of the producer (its idle timeout runs from here).
    pub progress: Instant,
    /// Since when its bytes have waited for the client's flow-control
    /// windows, none of them let through (HTTP/2: `timeouts.send` runs
    /// from here, see `Worker::h2_send_timeouts`); `None` while they
    /// move, or wait for something else.
    pub window_since: Option<Instant>,
    /// The body's length, if the producer said it.
    pub expect: Option<u64>,
    /// The producer's trailer fields (field lines; empty: none): a
    /// HEADERS frame ends the stream after the last DATA.
    pub trailers: Vec<u8>,
    /// Whether its file's next bytes are in the page cache (HTTP/2 and
    /// HTTP/3: `worker::warm`).
    pub warmth: Warmth,
    /// What its protocol keeps of its own.
    pub own: O,
}

impl<O: Default> Answer<O> {
    /// An answer that has nothing yet: its request waits.
    pub fn waiting(id: u32, started: Instant) -> Answer<O> {
        Answer {
            id,
            pieces: VecDeque::new(),
            body_len: 0,
            log: None,
            started,
            wait: None,
            throttle: None,
            run: None,
            program: false,
            open: false,
            broken: false,
            tunnel: false,
            discard: false,
            progress: started,
            window_since: None,
            expect: None,
            trailers: Vec::new(),
            warmth: Warmth::default(),
            own: O::default(),
        }
    }
}

impl<O> Answer<O> {
    /// Body bytes queued in its pieces.
    pub fn queued(&self) -> u64 {
        self.pieces.iter().map(Piece::len).sum()
    }

    /// Takes its front piece, all sent (for [`super::Scratch::give_back`]),
    /// and forgets what was known of its bytes being cached (its `warmth`
    /// compares offsets only: a multipart answer's next range may be of
    /// the same file, elsewhere).
    pub fn piece_sent(&mut self) -> Option<super::Piece> {
        self.warmth = Warmth::default();
        self.pieces.pop_front()
    }
}
