//! HTTP/1.1 on one connection, sans-IO: fed the bytes that arrived, it
//! finds the requests in them (pipelined ones in order), reads their
//! bodies into wherever they go, and writes the answers it is given
//! into the connection's output queue: heads through
//! [`crate::http::response`], bodies framed, the one keep-alive decision
//! made once per answer. It never touches a socket; whoever drives it
//! (a worker, or a unit test with a byte script) routes each request
//! and hands the answer back.
//!
//! A connection is always in one [`State`], which holds whatever it
//! waits for, and each state has its own timer ([`Conn::timer`]):
//!
//! ```text
//!   Idle ──first byte──▶ Head ──head──▶ (answered) ──▶ Idle
//!                                  ├──▶ Body (its body: dropped, or for a handler / held whole)
//!                                  ├──▶ Waiting (a password check) ──▶ routed again
//!                                  └──▶ Streaming (a producer answers: a program, a handler's
//!                                       pieces or its later answer) ──▶ Idle
//!   any ──answer says close, output out──▶ (the connection's lingering close)
//! ```
//!
//! What the connection's life holds whatever its protocol (its timer's
//! start, whether it closes, its lingering close) is its
//! [`Life`](super::life::Life), which the methods that move it are
//! given.

pub mod sink;
mod write;

#[cfg(test)]
mod tests;

use std::path::Path;
use std::time::Instant;

pub use write::{keeps_alive, stream_head, Answering, Stream, StreamFor};

use super::exchange::{ExchangeId, Exchanges};
use super::life::Life;
use super::waits::Wait;
use crate::handlers::spool::Spool;
use crate::http::body::BodyDecoder;
use crate::http::parse::{Limits, ParseError};
use crate::http::request::OwnedRequest;

/// Stop reading pipelined requests once this much output waits, and let
/// it go out first (bounds memory per connection).
pub const OUTPUT_CAP: usize = 256 * 1024;

/// Where a connection is in its life (see the module documentation).
#[derive(Debug)]
pub enum State {
    /// Waiting for the next request (keep-alive timeout).
    Idle,
    /// Part of a request head has arrived (header timeout, against
    /// slowloris).
    Head,
    /// A request body is being read (body timeout, from last progress).
    Body(BodyRead),
    /// A request waits, its body not being read: for its password check
    /// (no timeout: it finishes). The exchange holds it.
    Waiting(ExchangeId),
    /// A producer answers: a program (its own idle timeout, from last
    /// progress), whose request body, while it arrives, goes to its
    /// input; an embedded handler's answer in pieces, or later from
    /// another thread (`timeouts.handler`), whose body was read before
    /// the handler ran.
    Streaming(Box<sink::Producing>),
}

/// A request body being read, and where it goes.
#[derive(Debug)]
pub struct BodyRead {
    /// Reads the body's framing (Content-Length or chunked).
    pub decoder: BodyDecoder,
    /// The exchange that waits for the body (an embedded handler, or an
    /// answer that needs it whole); none: the request was answered
    /// already, and the body is dropped.
    pub to: Option<ExchangeId>,
}

/// What waited for a request body that ended (or was refused).
#[derive(Debug)]
pub enum BodyOver {
    /// Nothing: the request was answered already.
    Nothing,
    /// The exchange of a request held for it ([`Wait::Handler`] or
    /// [`Wait::Whole`]).
    Wait(ExchangeId),
    /// The producer reading it (still in [`State::Streaming`]).
    Pipe,
}

/// Which timeout applies to a connection now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Timer {
    /// `timeouts.keepalive` (and a stop closes it at once).
    Idle,
    /// `timeouts.header`: the connection is answered 408.
    Head,
    /// `timeouts.body`.
    Body,
    /// None.
    Never,
}

/// What [`Conn::read`] found in the input.
#[derive(Debug)]
pub enum Event {
    /// Nothing more can happen with this input now: more is needed, a
    /// wait holds the connection, or output must drain first.
    Stall,
    /// A request head is complete, in the request given to `read`:
    /// answer it ([`Conn::answer`]) or hold it ([`Conn::wait_for_body`],
    /// [`Conn::hold`], [`Conn::produce`]).
    Request,
    /// A request head that can never be valid: answer it with
    /// [`Conn::reject`].
    Invalid(ParseError),
    /// More of a body for a handler, or held whole, arrived: see whether
    /// it may be kept before reading on.
    BodyGrew,
    /// The request body is complete.
    BodyDone(BodyOver),
    /// The request body can never be complete (bad chunk framing, too
    /// large): what waited for it gets the status instead.
    BodyRefused(ParseError, BodyOver),
}

/// What reading needs to know besides the input.
#[derive(Debug, Clone, Copy)]
pub struct Reading<'a> {
    /// Limits on request heads.
    pub limits: &'a Limits,
    /// Where bodies held whole go once they outgrow memory.
    pub temp_dir: &'a Path,
    /// Output waiting on the connection (reading pauses above
    /// [`OUTPUT_CAP`]).
    pub output: usize,
    /// A throttled answer is still queued: the next request waits until
    /// it has left, so that each answer is paced by its own rule (read
    /// at once, a request for a file under a slower rule, pipelined
    /// behind one under a faster rule, went at the faster rate).
    pub paced: bool,
    /// Now.
    pub now: Instant,
}

/// One connection's HTTP/1.1 state (its [`Life`] aside).
#[derive(Debug)]
pub struct Conn {
    state: State,
}

impl Default for Conn {
    fn default() -> Conn {
        Conn::new()
    }
}

impl Conn {
    /// A new connection, idle.
    pub fn new() -> Conn {
        Conn { state: State::Idle }
    }

    /// The state.
    pub fn state(&self) -> &State {
        &self.state
    }

    /// The state, to work on what it holds.
    pub fn state_mut(&mut self) -> &mut State {
        &mut self.state
    }

    /// Moves to `state`, starting its timer (`life`'s) at `now`. A
    /// request held is let go of first ([`Conn::take_wait`]): its
    /// exchange must leave the worker's table with it.
    pub fn set(&mut self, state: State, life: &mut Life, now: Instant) {
        debug_assert!(self.wait().is_none(), "an exchange left behind");
        self.state = state;
        life.touch(now);
    }

    /// Whether a request body is still being read (a client that leaves
    /// now cuts it short).
    pub fn reading_body(&self) -> bool {
        match &self.state {
            State::Body(_) => true,
            State::Streaming(p) => p.body.is_some(),
            _ => false,
        }
    }

    /// How many more body bytes its producer's input takes now, while
    /// the body streams to it (`None`: no such limit). The engine reads
    /// no more than that from the socket: a read beyond it would only be
    /// copied aside until the input has room again.
    pub fn body_room(&self, exchanges: &mut Exchanges) -> Option<usize> {
        match &self.state {
            State::Streaming(p) if p.body.is_some() => {
                Some(exchanges.run_mut(p.ex)?.input()?.room())
            }
            _ => None,
        }
    }

    /// Whether an answer is being produced: queued output is not the
    /// connection's last.
    pub fn producing(&self) -> bool {
        matches!(self.state, State::Streaming(_))
    }

    /// Answers with `p` (`now`); the request body, if `p.body` reads
    /// one, goes to its producer's input as it arrives.
    pub fn produce(&mut self, life: &mut Life, p: Box<sink::Producing>, now: Instant) {
        self.set(State::Streaming(p), life, now);
    }

    /// The exchange of the produced answer, if one is.
    pub fn run_ex(&self) -> Option<ExchangeId> {
        match &self.state {
            State::Streaming(p) => Some(p.ex),
            _ => None,
        }
    }

    /// The produced answer (a handler's streamed or later one), if one is.
    pub fn produced(&mut self) -> Option<&mut sink::Producing> {
        match &mut self.state {
            State::Streaming(p) => Some(p),
            _ => None,
        }
    }

    /// Takes the produced answer away (it has ended); the connection is
    /// idle again, or reads and drops what is left of the request body.
    pub fn end_produced(&mut self, life: &mut Life, now: Instant) -> Option<Box<sink::Producing>> {
        match std::mem::replace(&mut self.state, State::Idle) {
            State::Streaming(mut p) => {
                // What is left of a request body is read and dropped.
                if let Some(decoder) = p.body.take() {
                    self.state = State::Body(BodyRead { decoder, to: None });
                }
                life.touch(now);
                Some(p)
            }
            other => {
                self.state = other;
                None
            }
        }
    }

    /// After the input of one event is consumed: an idle connection with
    /// input left over is in the middle of a head (`pending`), and a
    /// head's timer keeps running while more of it trickles in.
    pub fn settle(&mut self, life: &mut Life, pending: bool, now: Instant) {
        match (&self.state, pending) {
            (State::Idle, true) => self.set(State::Head, life, now),
            (State::Head, false) | (State::Idle, false) => self.set(State::Idle, life, now),
            _ => {}
        }
    }

    /// Which timeout applies now.
    pub fn timer(&self) -> Timer {
        match &self.state {
            State::Idle => Timer::Idle,
            State::Head => Timer::Head,
            State::Body(_) => Timer::Body,
            // (A produced answer's idle timeout is its run's: the
            // worker's sweep over its exchanges keeps it.)
            State::Waiting(_) | State::Streaming(_) => Timer::Never,
        }
    }

    /// Reads from `input[*pos..]`, moving `pos` past what it consumed,
    /// and says what it found (see [`Event`]). A request head goes into
    /// `req`. Nothing is read once `life` is closing.
    pub fn read(
        &mut self,
        life: &mut Life,
        input: &[u8],
        pos: &mut usize,
        req: &mut OwnedRequest,
        cx: &Reading,
        exchanges: &mut Exchanges,
    ) -> Event {
        if life.closing() {
            return Event::Stall;
        }
        match &mut self.state {
            State::Body(_) => return self.read_body(life, input, pos, cx, exchanges),
            State::Streaming(p) if p.body.is_some() => {
                return self.read_body(life, input, pos, cx, exchanges)
            }
            // What follows a request held for its password check (its
            // body, pipelined requests) waits too (the worker takes the
            // check's outcome, see `Conn::take_wait`), as do pipelined
            // requests behind a produced answer.
            State::Waiting(_) | State::Streaming(_) => return Event::Stall,
            State::Idle | State::Head => {}
        }
        if *pos == input.len() || cx.output >= OUTPUT_CAP || cx.paced {
            return Event::Stall;
        }
        match req.parse(&input[*pos..], cx.limits) {
            Ok(None) => Event::Stall,
            Err(e) => {
                *pos = input.len();
                Event::Invalid(e)
            }
            Ok(Some(n)) => {
                *pos += n;
                life.served += 1;
                Event::Request
            }
        }
    }

    /// Whether [`Conn::read`] of no input would come to nothing (a
    /// [`Event::Stall`], no wait to take): between requests, or while a
    /// producer answers one whose body is all read.
    pub fn idles_without_input(&self) -> bool {
        match &self.state {
            State::Idle => true,
            State::Streaming(p) => p.body.is_none(),
            State::Head | State::Body(_) | State::Waiting(_) => false,
        }
    }

    /// A body is being read, and all of it is in (what waits for it is
    /// told at the next [`Conn::read`]).
    pub fn body_is_done(&self) -> bool {
        matches!(&self.state, State::Body(b) if b.decoder.is_done())
    }

    /// The body being read, framed by its length and not complete, when
    /// it is held whole in a file that takes its bytes from a pipe (a
    /// WebDAV PUT's: `Worker::splice_body`): its decoder, and where it
    /// goes.
    pub fn body_to_pipe<'e>(
        &mut self,
        exchanges: &'e mut Exchanges,
    ) -> Option<(&mut BodyDecoder, &'e mut Spool)> {
        let State::Body(b) = &mut self.state else {
            return None;
        };
        b.decoder.length_left().filter(|&n| n > 0)?;
        match exchanges.wait_mut(b.to?)? {
            Wait::Whole(w) if w.body.takes_pipe() => Some((&mut b.decoder, &mut w.body)),
            _ => None,
        }
    }

    /// Reads body bytes into where the body goes (a wait: in
    /// `exchanges`).
    fn read_body(
        &mut self,
        life: &mut Life,
        input: &[u8],
        pos: &mut usize,
        cx: &Reading,
        exchanges: &mut Exchanges,
    ) -> Event {
        let (decoder, mut feed, mut to, trailers) = match &mut self.state {
            State::Body(b) => (
                &mut b.decoder,
                None,
                b.to.and_then(|id| exchanges.wait_mut(id)),
                None,
            ),
            State::Streaming(p) => {
                match (&mut p.body, exchanges.run_mut(p.ex).and_then(|r| r.input())) {
                    // (A producer's input may pass the body's trailers on.)
                    // (Only an upstream takes them: none kept without.)
                    (Some(d), Some(feed)) => {
                        let trailers = cfg!(feature = "upstreams").then_some(&mut p.trailers);
                        (d, Some(feed), None, trailers)
                    }
                    _ => return Event::Stall,
                }
            }
            _ => return Event::Stall,
        };
        // Body bytes go to a producer's input while it wants them (reading
        // pauses when its buffer is full), else where the state says.
        let room = match &feed {
            Some(i) => i.room(),
            None => usize::MAX,
        };
        if room == 0 {
            return Event::Stall;
        }
        let end = *pos + room.min(input.len() - *pos);
        let grows = to.is_some();
        let mut sink = |data: &[u8]| match (&mut feed, &mut to) {
            (Some(i), _) => i.feed(data),
            (None, Some(w)) => w.push(data, cx.temp_dir),
            _ => {}
        };
        let result = decoder.decode_keeping(&input[*pos..end], &mut sink, trailers);
        let done = decoder.is_done();
        match result {
            Err(e) => {
                *pos = input.len();
                Event::BodyRefused(e, self.body_over(exchanges))
            }
            Ok(n) => {
                *pos += n;
                if n > 0 {
                    life.touch(cx.now);
                }
                if n > 0 && grows {
                    Event::BodyGrew
                } else if done {
                    Event::BodyDone(self.body_over(exchanges))
                } else {
                    Event::Stall
                }
            }
        }
    }

    /// The client of a tunnel (a produced answer that switched protocols)
    /// sent its last byte: the producer's input ends, which it passes on
    /// (a half-close). `Some(true)` when it ends now, `Some(false)` when
    /// it had already; `None` when the connection is no tunnel.
    pub fn tunnel_client_done(&mut self, exchanges: &mut Exchanges) -> Option<bool> {
        let State::Streaming(p) = &self.state else {
            return None;
        };
        if !p.framing.tunnel {
            return None;
        }
        let now = p.body.is_some();
        if now {
            self.body_over(exchanges);
        }
        Some(now)
    }

    /// The body is over (read or refused): what waited for it.
    pub(crate) fn body_over(&mut self, exchanges: &mut Exchanges) -> BodyOver {
        match std::mem::replace(&mut self.state, State::Idle) {
            State::Body(b) => match b.to {
                None => BodyOver::Nothing,
                Some(w) => BodyOver::Wait(w),
            },
            State::Streaming(mut p) if p.body.is_some() => {
                // (No more comes: the input closes once it is written.)
                p.body = None;
                let mut trailers = Vec::new();
                if !p.trailers.is_empty() {
                    crate::http::trailers::keep_allowed(&p.trailers, &mut trailers);
                    p.trailers = Vec::new();
                }
                if let Some(input) = exchanges.run_mut(p.ex).and_then(|r| r.input()) {
                    input.end_with(&trailers);
                }
                self.state = State::Streaming(p);
                BodyOver::Pipe
            }
            other => {
                self.state = other;
                BodyOver::Nothing
            }
        }
    }

    /// The exchange of the request held, if one is (for its body, or in
    /// [`State::Waiting`]).
    pub fn wait(&self) -> Option<ExchangeId> {
        match &self.state {
            State::Body(BodyRead { to: Some(id), .. }) | State::Waiting(id) => Some(*id),
            _ => None,
        }
    }

    /// Lets go of the request held (its outcome is in, or it is answered
    /// otherwise: over a limit, its body could not be kept): its exchange,
    /// which the caller takes out of the table; the connection is idle
    /// again. A body left unread cannot be told from a next request, so
    /// the caller closes the connection after answering one taken from
    /// [`State::Body`].
    pub fn take_wait(&mut self) -> Option<ExchangeId> {
        self.wait()?;
        match std::mem::replace(&mut self.state, State::Idle) {
            State::Body(BodyRead { to, .. }) => to,
            State::Waiting(id) => Some(id),
            _ => None,
        }
    }

    /// Holds the request (in exchange `id`), its body not read meanwhile
    /// (for its password check).
    pub fn hold(&mut self, life: &mut Life, id: ExchangeId, now: Instant) {
        self.set(State::Waiting(id), life, now);
    }
}
