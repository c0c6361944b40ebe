//! A worker's buffers, reused from one request and one connection to the
//! next: its read buffers, the buffers of the request being answered
//! (lent to it, [`Request`], and passed by argument while it is
//! answered), and the spare output queues, input buffers and HTTP/2
//! buffers that connections borrow while they need them. A pool keeps at
//! most [`SPARES`] of each, and no output queue larger than [`OUT_KEEP`]
//! nor input buffer larger than [`READ_BUF`].

use std::time::Instant;

use super::{OUT_KEEP, READ_BUF, SPARES};

/// Most buffers a pool keeps of those each answer under way holds (a
/// held request's, an HTTP/1.1 produced answer's state): as many as
/// answers run at once, as a rule. With one kept, fifty clients at once
/// made each request grow new request buffers and a new box.
const UNDER_WAY: usize = 64;

/// Largest request buffers kept among them (a request with a long head
/// grew them): at most 1 MiB kept until the worker rests.
const HELD_BYTES: usize = 16 * 1024;

/// Size of the sockets' read buffer (one a worker): with WebDAV, 256 KiB,
/// so that a PUT's body comes in reads of up to 256 KiB and goes to its
/// file in writes of as much (a PUT of 1 MiB: 5 reads and 6 writes rather
/// than 17 and 18, and a quarter less time in `write`, by `strace -T`
/// under bench/dav's PUTs); else [`READ_BUF`]. Its pages are
/// touched only by reads that fill them.
const SOCKET_READ: usize = if cfg!(feature = "webdav") {
    256 * 1024
} else {
    READ_BUF
};
use crate::handlers::Scratch;
use crate::http::request::OwnedRequest;
use crate::server::transport::Out;
use crate::server::waits::Held;

/// A request being answered and the buffers its answer is made in, lent
/// by the pool ([`Pools::lend_request`]) to one request at a time and
/// passed by argument to whatever answers it: one box, so that lending
/// it moves a pointer, not the request.
pub(super) struct Request {
    /// The request (its buffers reused from one to the next).
    pub(super) req: OwnedRequest,
    /// When its first byte arrived (kept here rather than in every
    /// connection: only a request that waits, for its body, a password
    /// check or a CGI program, keeps its own).
    pub(super) start: Instant,
    /// Buffers its handler writes the answer's head and body in.
    pub(super) scratch: Scratch,
    /// The largest body its route takes (set by `Worker::route`).
    pub(super) body_max: u64,
    /// Whether the bytes read with it hold the start of another request
    /// after it (pipelined): a server winding down answers that one too
    /// before it closes (see `Worker::answer`).
    pub(super) followed: bool,
    /// The times it waited for a cold disk's lookups (see
    /// `Worker::cold_later`).
    #[cfg(feature = "cold-lookups")]
    pub(super) colds: u8,
}

impl Request {
    /// No request yet.
    fn new(now: Instant) -> Request {
        Request {
            req: OwnedRequest::default(),
            start: now,
            scratch: Scratch::default(),
            body_max: u64::MAX,
            followed: false,
            #[cfg(feature = "cold-lookups")]
            colds: 0,
        }
    }

    /// New buffers, in a box of their own (out of line: a warm worker
    /// lends the ones it has).
    #[cold]
    #[inline(never)]
    fn new_boxed(now: Instant) -> Box<Request> {
        Box::new(Request::new(now))
    }

    /// Takes the request away to hold it (`redirects`: the CGI local
    /// redirects that led to it); its buffers go with it.
    pub(super) fn hold(&mut self, redirects: u8) -> Held {
        Held {
            req: std::mem::take(&mut self.req),
            started: self.start,
            redirects,
            body_max: self.body_max,
            #[cfg(feature = "cold-lookups")]
            colds: self.colds,
        }
    }

    /// Makes held request `held` the one answered here again; returns
    /// its redirects.
    pub(super) fn resume(&mut self, held: Held) -> u8 {
        self.req = held.req;
        self.start = held.started;
        self.body_max = held.body_max;
        #[cfg(feature = "cold-lookups")]
        {
            self.colds = held.colds;
        }
        self.scratch.clear();
        held.redirects
    }
}

/// The buffers a worker lends.
pub(super) struct Pools {
    /// Read buffer of the sockets ([`SOCKET_READ`]).
    pub(super) rbuf: Vec<u8>,
    /// Read buffer of pipe bodies.
    pub(super) pipe_buf: Vec<u8>,
    /// The buffers of the request being answered, while none is (see
    /// [`Request`]).
    request: Option<Box<Request>>,
    /// Emptied output queues: a connection borrows one while it has
    /// output waiting.
    outs: Vec<Out>,
    /// Emptied input buffers: a connection borrows one while it holds a
    /// request's start.
    bufs: Vec<Vec<u8>>,
    /// Buffers of HTTP/2 connections that have no stream open, for the
    /// next that opens one.
    #[cfg(feature = "http2")]
    h2_spares: Vec<crate::server::h2::Spares>,
    /// Buffers for HTTP/2 heads.
    #[cfg(feature = "http2")]
    pub(super) h2_scratch: crate::server::h2::Scratch,
    /// The boxes of HTTP/1.1 produced answers' state that ended, for the
    /// next ([`Pools::boxed_producing`]).
    #[allow(
        clippy::vec_box,
        reason = "the boxes are what is kept, handed out again"
    )]
    producing: Vec<Box<crate::server::h1::sink::Producing>>,
    /// Buffers of held requests that were logged while the request
    /// buffers at hand had their own ([`Pools::take_back_held`]).
    held: Vec<OwnedRequest>,
}

impl Pools {
    /// The read buffers and one output queue.
    pub(super) fn new() -> Pools {
        Pools {
            rbuf: Vec::with_capacity(SOCKET_READ),
            pipe_buf: Vec::with_capacity(READ_BUF),
            request: None,
            outs: vec![Out::with_capacity(READ_BUF)],
            bufs: Vec::new(),
            #[cfg(feature = "http2")]
            h2_spares: Vec::new(),
            #[cfg(feature = "http2")]
            h2_scratch: Default::default(),
            producing: Vec::new(),
            held: Vec::new(),
        }
    }

    /// `p` in a box: the last one given back, if any.
    pub(super) fn boxed_producing(
        &mut self,
        p: crate::server::h1::sink::Producing,
    ) -> Box<crate::server::h1::sink::Producing> {
        match self.producing.pop() {
            Some(mut spare) => {
                *spare = p;
                spare
            }
            None => Box::new(p),
        }
    }

    /// Keeps the box of an HTTP/1.1 produced answer that ended, for the
    /// next.
    pub(super) fn take_back_producing(&mut self, p: Box<crate::server::h1::sink::Producing>) {
        if self.producing.len() < UNDER_WAY {
            self.producing.push(p);
        }
    }

    /// The buffers for a request (whose first byte arrived `now`, unless
    /// the caller says otherwise), the ones the last request used if they
    /// came back: they are lent once a request, and come back
    /// ([`Pools::take_back_request`]) once it is answered or held. (New
    /// ones are made after a rest, and after a panic struck while they
    /// were lent: they went with the stack it unwound.)
    #[inline]
    pub(super) fn lend_request(&mut self, now: Instant) -> Box<Request> {
        match self.request.take() {
            Some(mut r) => {
                r.start = now;
                r.body_max = u64::MAX;
                r.followed = false;
                #[cfg(feature = "cold-lookups")]
                {
                    r.colds = 0;
                }
                r
            }
            None => Request::new_boxed(now),
        }
    }

    /// Once request `r` is held ([`Request::hold`], which took its
    /// buffers), gives it those of a request held and logged before, if
    /// any are kept: the next request parses into them.
    #[inline]
    pub(super) fn refill_held(&mut self, r: &mut Request) {
        if !self.held.is_empty() && !r.req.has_buffers() {
            self.held_buffers(r);
        }
    }

    /// [`Pools::refill_held`]'s work, out of line.
    #[inline(never)]
    fn held_buffers(&mut self, r: &mut Request) {
        if let Some(mut spare) = self.held.pop() {
            r.req.swap_buffers(&mut spare);
        }
    }

    /// Takes back the buffers lent for a request.
    #[inline]
    pub(super) fn take_back_request(&mut self, r: Box<Request>) {
        self.request = Some(r);
    }

    /// Takes back the buffers of request `held`, which a run held while
    /// it answered and which is logged now, if the request buffers at
    /// hand have none (they were taken when it was held): the next
    /// request parses into them instead of growing new ones.
    /// Else they are kept for a request whose buffers were taken so.
    pub(super) fn take_back_held(&mut self, held: &mut Held) {
        match self.request.as_mut() {
            Some(r) if !r.req.has_buffers() => r.req.swap_buffers(&mut held.req),
            _ => self.keep_held(held),
        }
    }

    /// Keeps the buffers of request `held` for a later request, up to the
    /// bounds (out of line, as [`Pools::held_buffers`]).
    #[inline(never)]
    fn keep_held(&mut self, held: &mut Held) {
        let req = &mut held.req;
        if req.has_buffers() && req.buffer_bytes() <= HELD_BYTES && self.held.len() < UNDER_WAY {
            self.held.push(std::mem::take(req));
        }
    }

    /// An output queue, a spare one if there is one.
    pub(super) fn lend_out(&mut self) -> Out {
        self.outs
            .pop()
            .unwrap_or_else(|| Out::with_capacity(READ_BUF))
    }

    /// Takes back output queue `out` (emptied), unless the pool is full
    /// or it grew too large.
    pub(super) fn take_back_out(&mut self, mut out: Out) {
        out.clear();
        if self.outs.len() < SPARES && out.capacity() <= OUT_KEEP {
            self.outs.push(out);
        }
    }

    /// An input buffer, a spare one if there is one.
    pub(super) fn lend_buf(&mut self) -> Vec<u8> {
        self.bufs.pop().unwrap_or_default()
    }

    /// Takes back input buffer `buf` (emptied), unless the pool is full
    /// or it grew too large.
    pub(super) fn take_back_buf(&mut self, mut buf: Vec<u8>) {
        buf.clear();
        if self.bufs.len() < SPARES && buf.capacity() <= READ_BUF {
            self.bufs.push(buf);
        }
    }

    /// A spare set of HTTP/2 buffers, if there is one.
    #[cfg(feature = "http2")]
    pub(super) fn lend_h2(&mut self) -> Option<crate::server::h2::Spares> {
        self.h2_spares.pop()
    }

    /// Takes back HTTP/2 buffers, unless the pool is full.
    #[cfg(feature = "http2")]
    pub(super) fn take_back_h2(&mut self, spare: crate::server::h2::Spares) {
        if self.h2_spares.len() < SPARES {
            self.h2_spares.push(spare);
        }
    }

    /// After a panic: the read buffers lent out (`mem::take`) when it
    /// struck must not stay empty for every later connection.
    pub(super) fn restore(&mut self) {
        if self.rbuf.capacity() == 0 {
            self.rbuf = Vec::with_capacity(SOCKET_READ);
        }
        if self.pipe_buf.capacity() == 0 {
            self.pipe_buf = Vec::with_capacity(READ_BUF);
        }
    }

    /// Frees the spares and the request buffers (a quiet worker rests):
    /// the next request grows them again.
    pub(super) fn free_spares(&mut self) {
        self.request = None;
        self.producing = Vec::new();
        self.held = Vec::new();
        self.outs = Vec::new();
        self.bufs = Vec::new();
        #[cfg(feature = "http2")]
        {
            self.h2_spares = Vec::new();
            self.h2_scratch.rest();
        }
    }

    /// Frees the read buffers and the spares too, before the allocator
    /// gives its free pages back ([`Pools::refill`] after).
    pub(super) fn free_all(&mut self) {
        self.outs = Vec::new();
        self.rbuf = Vec::new();
        self.pipe_buf = Vec::new();
    }

    /// Allocates again what [`Pools::new`] has (no page is held until a
    /// request writes to them).
    pub(super) fn refill(&mut self) {
        self.outs = vec![Out::with_capacity(READ_BUF)];
        self.rbuf = Vec::with_capacity(SOCKET_READ);
        self.pipe_buf = Vec::with_capacity(READ_BUF);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::panic::{catch_unwind, AssertUnwindSafe};

    #[test]
    fn output_queues_come_back_emptied_up_to_the_caps() {
        let mut pools = Pools::new();
        let mut out = pools.lend_out();
        assert_eq!(out.capacity(), READ_BUF);
        assert!(pools.outs.is_empty());
        // (A fresh one when the pool is empty.)
        assert_eq!(pools.lend_out().capacity(), READ_BUF);
        out.push_bytes(b"HTTP/1.1 200 OK\r\n\r\n");
        pools.take_back_out(out);
        assert_eq!(pools.outs.len(), 1);
        assert!(pools.lend_out().is_empty());
        pools.take_back_out(Out::with_capacity(OUT_KEEP + 1));
        assert!(pools.outs.is_empty());
        for _ in 0..SPARES + 3 {
            pools.take_back_out(Out::with_capacity(READ_BUF));
        }
        assert_eq!(pools.outs.len(), SPARES);
    }

    #[test]
    fn input_buffers_come_back_emptied_up_to_the_caps() {
        let mut pools = Pools::new();
        assert_eq!(pools.lend_buf().capacity(), 0);
        let mut buf = Vec::with_capacity(100);
        buf.extend_from_slice(b"GET / HT");
        pools.take_back_buf(buf);
        let again = pools.lend_buf();
        assert!(again.is_empty());
        assert_eq!(again.capacity(), 100);
        pools.take_back_buf(Vec::with_capacity(READ_BUF + 1));
        assert!(pools.bufs.is_empty());
        for _ in 0..SPARES + 3 {
            pools.take_back_buf(Vec::with_capacity(10));
        }
        assert_eq!(pools.bufs.len(), SPARES);
    }

    #[cfg(feature = "http2")]
    #[test]
    fn http2_buffers_are_kept_up_to_the_cap() {
        let mut pools = Pools::new();
        assert!(pools.lend_h2().is_none());
        for _ in 0..SPARES + 3 {
            pools.take_back_h2(Default::default());
        }
        assert_eq!(pools.h2_spares.len(), SPARES);
        assert!(pools.lend_h2().is_some());
        assert_eq!(pools.h2_spares.len(), SPARES - 1);
    }

    #[test]
    fn read_buffers_lent_out_when_a_panic_struck_are_restored() {
        let mut pools = Pools::new();
        let struck = catch_unwind(AssertUnwindSafe(|| {
            let _rbuf = std::mem::take(&mut pools.rbuf);
            let _pipe_buf = std::mem::take(&mut pools.pipe_buf);
            panic!("a handler's bug");
        }));
        assert!(struck.is_err());
        assert_eq!(pools.rbuf.capacity(), 0);
        pools.restore();
        assert_eq!(pools.rbuf.capacity(), SOCKET_READ);
        assert_eq!(pools.pipe_buf.capacity(), READ_BUF);
        // What was not lent stays as it is.
        pools.rbuf.extend_from_slice(b"kept");
        pools.restore();
        assert_eq!(pools.rbuf, b"kept");
    }

    #[test]
    fn request_buffers_are_lent_and_come_back_with_what_they_grew() {
        let mut pools = Pools::new();
        let t0 = Instant::now();
        let mut r = pools.lend_request(t0);
        assert_eq!(r.start, t0);
        assert!(pools.request.is_none());
        r.scratch.headers.extend_from_slice(&[b'x'; 4096]);
        let at = &*r as *const Request;
        pools.take_back_request(r);
        // The same box, its buffers kept, its start the new request's.
        let t1 = t0 + std::time::Duration::from_secs(1);
        let r = pools.lend_request(t1);
        assert_eq!(&*r as *const Request, at);
        assert!(r.scratch.headers.capacity() >= 4096);
        assert_eq!(r.start, t1);
    }

    /// Requests held at once (answers under way on many connections):
    /// each one's buffers, once it is logged, go to a later request
    /// rather than to the allocator, up to the bound, and none is kept
    /// once the worker rests.
    #[test]
    fn buffers_of_requests_held_at_once_serve_the_next_ones() {
        let limits = crate::http::parse::Limits {
            max_request_line: 64 * 1024,
            max_head: 64 * 1024,
            max_headers: 100,
        };
        let mut pools = Pools::new();
        let t0 = Instant::now();
        let mut held = Vec::new();
        for _ in 0..3 {
            let mut r = pools.lend_request(t0);
            let head = b"GET /a HTTP/1.1\r\nHost: a\r\n\r\n";
            assert!(r.req.parse(head, &limits).unwrap().is_some());
            held.push(r.hold(0));
            pools.refill_held(&mut r);
            pools.take_back_request(r);
        }
        // (The last request's buffers went with it: those at hand are
        // new and empty until the first held one is logged.)
        for h in &mut held {
            pools.take_back_held(h);
        }
        assert_eq!(pools.held.len(), 2, "one went to the buffers at hand");
        for _ in 0..3 {
            let mut r = pools.lend_request(t0);
            assert!(r.req.has_buffers());
            let _ = r.hold(0);
            pools.refill_held(&mut r);
            pools.take_back_request(r);
        }
        assert!(pools.held.is_empty());
        // A long head's buffers are not kept.
        let mut r = pools.lend_request(t0);
        let long = format!(
            "GET /{} HTTP/1.1\r\nHost: a\r\n\r\n",
            "a".repeat(HELD_BYTES)
        );
        assert!(r.req.parse(long.as_bytes(), &limits).unwrap().is_some());
        let mut long_held = r.hold(0);
        pools.refill_held(&mut r);
        pools.take_back_request(r);
        let mut r = pools.lend_request(t0);
        let short = b"GET / HTTP/1.1\r\nHost: a\r\n\r\n";
        assert!(r.req.parse(short, &limits).unwrap().is_some());
        pools.take_back_request(r);
        pools.take_back_held(&mut long_held);
        assert!(pools.held.is_empty());
        held.truncate(0);
        pools.free_spares();
        assert!(pools.held.is_empty() && pools.producing.is_empty());
    }

    #[test]
    fn a_request_held_takes_its_buffers_and_comes_back_on_resume() {
        let t0 = Instant::now();
        let mut r = Request::new(t0);
        r.scratch.path.extend_from_slice(b"/a");
        let held = r.hold(3);
        assert_eq!((held.started, held.redirects), (t0, 3));
        r.start = t0 + std::time::Duration::from_secs(1);
        assert_eq!(r.resume(held), 3);
        assert_eq!(r.start, t0);
        assert!(r.scratch.path.is_empty());
    }

    #[test]
    fn request_buffers_lent_when_a_panic_struck_are_made_again() {
        let mut pools = Pools::new();
        pools.take_back_request(Box::new(Request::new(Instant::now())));
        let struck = catch_unwind(AssertUnwindSafe(|| {
            let _r = pools.lend_request(Instant::now());
            panic!("a handler's bug");
        }));
        assert!(struck.is_err());
        assert!(pools.request.is_none());
        let r = pools.lend_request(Instant::now());
        assert!(r.req.target().is_empty());
    }

    #[test]
    fn a_rest_frees_the_request_buffers_grown() {
        let mut pools = Pools::new();
        let mut r = pools.lend_request(Instant::now());
        r.scratch.headers.extend_from_slice(&[b'x'; 4096]);
        r.scratch.body.extend_from_slice(&[b'y'; 4096]);
        pools.take_back_request(r);
        pools.free_spares();
        assert!(pools.request.is_none());
        let r = pools.lend_request(Instant::now());
        assert_eq!(r.scratch.headers.capacity(), 0);
        assert_eq!(r.scratch.body.capacity(), 0);
    }

    #[test]
    fn a_rest_frees_everything_and_refill_allocates_again() {
        let mut pools = Pools::new();
        pools.take_back_buf(Vec::with_capacity(10));
        pools.free_spares();
        assert!(pools.outs.is_empty() && pools.bufs.is_empty());
        pools.free_all();
        assert_eq!(pools.rbuf.capacity(), 0);
        assert_eq!(pools.pipe_buf.capacity(), 0);
        pools.refill();
        assert_eq!(pools.rbuf.capacity(), SOCKET_READ);
        assert_eq!(pools.pipe_buf.capacity(), READ_BUF);
        assert_eq!(pools.outs.len(), 1);
    }
}
