//! HTTP/2 in the engine: the second protocol next to `h1`, over the same
//! transport, router and handlers. The protocol itself is `crate::h2`
//! (sans-IO); this holds what a worker keeps per HTTP/2 connection: the
//! answers being sent, stream by stream, as pieces (bytes, or file
//! ranges that leave by `sendfile` behind their DATA frame headers), and
//! the requests that wait for their bodies; and the two translations
//! between the protocols: a request head into the `OwnedRequest` every
//! handler reads ([`request`]), and the head a handler's answer makes
//! into an HPACK block ([`head`]).

mod answer;
pub mod head;
pub mod opening;
pub mod request;
pub mod sink;
pub mod upgrade;

use std::collections::VecDeque;
use std::fs::File;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Instant;

use crate::access::throttle::Rate;
use crate::h2;
use crate::http::response::{Head, Stamp};
use crate::server::exchange::ExchangeId;
use crate::spare::Spare;

pub use answer::Answer;

/// Spare piece lists and log buffers a session keeps (as many as the
/// answers it usually has at once; an HTTP/3 session's too).
pub(crate) const SPARES: usize = 16;

/// Emptied piece lists of answers that ended.
type SparePieces = Spare<VecDeque<Piece>, SPARES, { usize::MAX }>;

/// Emptied log-line buffers of answers that ended.
type SpareText = Spare<Vec<u8>, SPARES, 4096>;

/// One HTTP/2 connection's state in the engine.
#[derive(Debug)]
pub struct Session {
    /// The protocol.
    pub conn: h2::Conn,
    /// Answers with body bytes left, and requests waiting for a body.
    pub answers: Vec<Answer>,
    /// Emptied piece lists and log-line buffers of answers that ended,
    /// for the next ones (a warm connection allocates nothing per answer).
    spare_pieces: SparePieces,
    spare_text: SpareText,
    /// Its own `[[throttle]]` rates and their wake-up.
    pacing: Pacing,
    /// How many programs and upstream requests answer its streams (see
    /// [`Session::programs`]).
    pub programs: u32,
    /// Body bytes held by its requests waiting for their turn, their
    /// connection credit given back (bounded by `connection_window`: see
    /// `Worker::h2_data`).
    pub turn_held: usize,
    /// When its client last brought a request on: a head, body bytes, a
    /// body's end. `timeouts.body` runs from here, not from its last
    /// byte: frames that carry no request (PING, SETTINGS, frames of
    /// types the protocol ignores) held a body that stopped coming, its
    /// memory and the program waiting for it, for ever.
    pub body_at: Instant,
}

impl Session {
    /// A session whose SETTINGS are queued at once.
    pub fn new(limits: Arc<h2::Limits>, now: Instant) -> Session {
        Session {
            conn: h2::Conn::new(limits, now),
            answers: Vec::new(),
            spare_pieces: Spare::default(),
            spare_text: Spare::default(),
            pacing: Pacing::default(),
            programs: 0,
            turn_held: 0,
            body_at: now,
        }
    }

    /// The lowest stream id above `after` (any, if `None`) whose answer
    /// is `wanted`: to go over answers one at a time, in stream order,
    /// while each is taken out and put back (which reorders them), and
    /// with nothing allocated.
    pub fn next_answer(&self, after: Option<u32>, wanted: impl Fn(&Answer) -> bool) -> Option<u32> {
        next_answer(&self.answers, after, wanted)
    }

    /// How many programs answer its streams now (the worker answers a
    /// stream 503 rather than start one more past its limit).
    pub fn programs(&self) -> usize {
        self.programs as usize
    }

    /// A program starts answering one of its streams (`started`), or
    /// one stops.
    pub fn count_program(&mut self, started: bool) {
        if started {
            self.programs += 1;
        } else {
            self.programs = self.programs.saturating_sub(1);
        }
    }

    /// Takes, for the buffers this session does not have (it gave them
    /// back, see [`Session::give_back`]), those of `spare`, a worker's.
    pub fn lend(&mut self, spare: &mut Spares) {
        if self.answers.capacity() == 0 {
            std::mem::swap(&mut self.answers, &mut spare.answers);
        }
        if self.spare_pieces.is_unallocated() {
            std::mem::swap(&mut self.spare_pieces, &mut spare.pieces);
        }
        if self.spare_text.is_unallocated() {
            std::mem::swap(&mut self.spare_text, &mut spare.text);
        }
        self.conn.lend(&mut spare.conn);
    }

    /// Whether the session lacks one of the buffers a worker lends.
    pub fn lacks_buffers(&self) -> bool {
        self.answers.capacity() == 0 || self.conn.lacks_buffers()
    }

    /// Whether it holds none of them.
    pub fn holds_no_buffers(&self) -> bool {
        self.answers.capacity() == 0
            && self.spare_pieces.is_unallocated()
            && self.spare_text.is_unallocated()
            && self.conn.holds_no_buffers()
    }

    /// Gives its buffers into `spare` (empty, as [`Spares::default`]) if
    /// nothing is under way: no stream open, no answer on its way.
    /// Whether it did.
    pub fn give_back(&mut self, spare: &mut Spares) -> bool {
        if !self.answers.is_empty() || !self.conn.give_back(&mut spare.conn) {
            return false;
        }
        std::mem::swap(&mut self.answers, &mut spare.answers);
        std::mem::swap(&mut self.spare_pieces, &mut spare.pieces);
        std::mem::swap(&mut self.spare_text, &mut spare.text);
        true
    }

    /// Gives back what an idle session holds (no stream open): spare
    /// buffers, and the protocol's own (see `h2::Conn::shrink`).
    pub fn rest(&mut self) {
        self.spare_pieces.rest(0);
        self.spare_text.rest(0);
        self.answers = Vec::new();
        self.conn.shrink();
    }

    /// Sends `head` (with `stamp`'s Server and Date) on stream `id`,
    /// encoded by the connection's encoder into `s.block`; `end` when no
    /// body follows. False (and nothing encoded) if the stream can no
    /// longer take it.
    pub fn send_head(
        &mut self,
        id: u32,
        end: bool,
        head: &Head<'_>,
        stamp: &Stamp<'_>,
        s: &mut Scratch,
    ) -> bool {
        if !self.conn.can_send_headers(id) {
            return false;
        }
        let Scratch { block, name, .. } = s;
        block.clear();
        head::encode(head, stamp, block, name, self.conn.encoder());
        self.conn.send_headers(id, block, end)
    }

    /// Sends an interim answer (`100 Continue`) on stream `id`: a HEADERS
    /// frame with its status alone, which does not end the stream (RFC
    /// 9113 §8.1); the final answer's HEADERS follow.
    pub fn send_interim(&mut self, id: u32, interim: (u16, &[u8]), s: &mut Scratch) -> bool {
        if !self.conn.can_send_headers(id) {
            return false;
        }
        let Scratch { block, name, .. } = s;
        block.clear();
        head::encode_interim(interim, block, name, self.conn.encoder());
        self.conn.send_headers(id, block, false)
    }

    /// Ends stream `id` with a HEADERS frame of trailer field `lines`
    /// (RFC 9113 §8.1), after its last DATA. False if the stream cannot
    /// send any more.
    pub fn send_trailers(&mut self, id: u32, lines: &[u8], s: &mut Scratch) -> bool {
        if !self.conn.can_send_headers(id) {
            return false;
        }
        let Scratch { block, name, .. } = s;
        block.clear();
        head::encode_trailers(lines, block, name, self.conn.encoder());
        self.conn.send_headers(id, block, true)
    }

    /// An empty piece list for a new answer.
    pub fn spare_pieces(&mut self) -> VecDeque<Piece> {
        self.spare_pieces.take()
    }

    /// An empty log-line buffer for a new answer.
    pub fn spare_text(&mut self) -> Vec<u8> {
        self.spare_text.take()
    }

    /// Keeps the memory of an answer that ended for the next ones (up to
    /// [`SPARES`] of each).
    pub fn recycle(&mut self, a: &mut Answer) {
        self.spare_pieces.keep(std::mem::take(&mut a.pieces));
        if let Some((text, _)) = a.log.take() {
            self.spare_text.keep(text);
        }
    }

    /// The answer on stream `id`, if it has one.
    pub fn answer(&mut self, id: u32) -> Option<&mut Answer> {
        answer(&mut self.answers, id)
    }

    /// Takes the answer on stream `id` away.
    pub fn take(&mut self, id: u32) -> Option<Answer> {
        take(&mut self.answers, id)
    }

    /// The stream whose request is held in the exchange `f` picks, if
    /// one is.
    pub fn find_wait(&self, f: impl Fn(ExchangeId) -> bool) -> Option<u32> {
        find_wait(&self.answers, f)
    }

    /// Lets go of the request held on stream `id`, if one is held there
    /// (its answer goes with it: it had none yet): its exchange, which
    /// the caller takes out of the table.
    pub fn take_wait(&mut self, id: u32) -> Option<ExchangeId> {
        take_wait(&mut self.answers, id)
    }

    /// The rate of `[[throttle]]` rule `rule` for this connection
    /// (`connection_rate`, `bytes_per_sec`): every stream the rule covers
    /// shares it, so more streams never make a faster download.
    pub fn connection_rate(&mut self, rule: usize, bytes_per_sec: u64, now: Instant) -> Arc<Rate> {
        self.pacing.connection_rate(rule, bytes_per_sec, now)
    }

    /// Whether a wake-up at `when` for throttled answers is owed: none
    /// is set for that time or earlier (one timer is enough).
    pub fn throttle_wake(&mut self, when: Instant, now: Instant) -> bool {
        self.pacing.throttle_wake(when, now)
    }

    /// Bytes of the answer's body buffered, not yet framed.
    pub fn buffered(&self, id: u32) -> u64 {
        self.answers
            .iter()
            .find(|a| a.id == id)
            .map_or(0, |a| a.pieces.iter().map(Piece::len).sum())
    }
}

/// A connection's own `[[throttle]]` rates (HTTP/2's, HTTP/3's): one per
/// rule that has paced one of its streams (`connection_rate`), and when
/// its throttled answers may go on (a timer is set for then).
#[derive(Debug, Default)]
pub struct Pacing {
    rates: Vec<(usize, Arc<Rate>)>,
    wake: Option<Instant>,
}

impl Pacing {
    /// The rate of `[[throttle]]` rule `rule` for this connection
    /// (`bytes_per_sec`): every stream the rule covers shares it, so
    /// more streams never make a faster download.
    pub fn connection_rate(&mut self, rule: usize, bytes_per_sec: u64, now: Instant) -> Arc<Rate> {
        if let Some((_, r)) = self.rates.iter().find(|(i, _)| *i == rule) {
            return Arc::clone(r);
        }
        let r = Arc::new(Rate::new(bytes_per_sec, now));
        self.rates.push((rule, Arc::clone(&r)));
        r
    }

    /// Whether a wake-up at `when` for throttled answers is owed: none
    /// is set for that time or earlier (one timer is enough).
    pub fn throttle_wake(&mut self, when: Instant, now: Instant) -> bool {
        if self.wake.is_some_and(|w| w > now && w <= when) {
            return false;
        }
        self.wake = Some(when);
        true
    }
}

/// The answer on stream `id` among `answers`.
pub fn answer<O>(answers: &mut [Answer<O>], id: u32) -> Option<&mut Answer<O>> {
    answers.iter_mut().find(|a| a.id == id)
}

/// Takes the answer on stream `id` out of `answers`.
pub fn take<O>(answers: &mut Vec<Answer<O>>, id: u32) -> Option<Answer<O>> {
    let i = answers.iter().position(|a| a.id == id)?;
    Some(answers.swap_remove(i))
}

/// The stream of `answers` whose request is held in the exchange `f`
/// picks.
pub fn find_wait<O>(answers: &[Answer<O>], f: impl Fn(ExchangeId) -> bool) -> Option<u32> {
    let a = answers.iter().find(|a| a.wait.is_some_and(&f))?;
    Some(a.id)
}

/// Takes the answer on stream `id` out of `answers` if its request is
/// held: its exchange.
pub fn take_wait<O>(answers: &mut Vec<Answer<O>>, id: u32) -> Option<ExchangeId> {
    let i = answers
        .iter()
        .position(|a| a.id == id && a.wait.is_some())?;
    answers.swap_remove(i).wait
}

/// The lowest stream above `after` (any, if `None`) of `answers` whose
/// answer is `wanted`.
pub fn next_answer<O>(
    answers: &[Answer<O>],
    after: Option<u32>,
    wanted: impl Fn(&Answer<O>) -> bool,
) -> Option<u32> {
    (answers.iter())
        .filter(|a| after.is_none_or(|after| a.id > after) && wanted(a))
        .map(|a| a.id)
        .min()
}

/// A piece of an answer's body.
#[derive(Debug)]
pub enum Piece {
    /// Fixed bytes, from `at`.
    Static(&'static [u8], usize),
    /// Bytes made for this answer, from `at`.
    Bytes(Vec<u8>, usize),
    /// Cached file content: `len` bytes from `at`.
    Mem(std::sync::Arc<[u8]>, usize, usize),
    /// `len` bytes of a file from `offset`.
    File(Rc<File>, u64, u64),
}

impl Piece {
    /// Bytes left.
    pub fn len(&self) -> u64 {
        match self {
            Piece::Static(b, at) => (b.len() - at) as u64,
            Piece::Bytes(b, at) => (b.len() - at) as u64,
            Piece::Mem(_, _, len) => *len as u64,
            Piece::File(_, _, len) => *len,
        }
    }

    /// Whether nothing is left.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The buffers an HTTP/2 connection needs only while streams are open,
/// kept by its worker while the connection has none, and lent to the
/// next one that has (an idle connection holds none of them).
#[derive(Debug, Default)]
pub struct Spares {
    conn: h2::Buffers,
    answers: Vec<Answer>,
    pieces: SparePieces,
    text: SpareText,
}

impl Spares {
    /// Whether it holds no buffer at all.
    pub fn is_empty(&self) -> bool {
        self.conn.is_empty()
            && self.answers.capacity() == 0
            && self.pieces.is_unallocated()
            && self.text.is_unallocated()
    }
}

/// A worker's buffers for HTTP/2 answers, reused from one to the next.
#[derive(Debug, Default)]
pub struct Scratch {
    /// A request head written as HTTP/1.1 ([`request::fill`]).
    pub head: Vec<u8>,
    /// An answer's HPACK block.
    pub block: Vec<u8>,
    /// A field name in lower case.
    pub name: Vec<u8>,
    /// The buffers of body pieces sent ([`Piece::Bytes`]: a produced
    /// answer's body, waiting for its stream's window), for the next
    /// ([`Scratch::copy`]).
    bytes: Spare<Vec<u8>, PIECES, PIECE_BYTES>,
}

/// Buffers of sent pieces kept at most ([`Scratch::give_back`]), none
/// larger than [`PIECE_BYTES`]: 256 KiB a worker at most.
const PIECES: usize = 16;
const PIECE_BYTES: usize = 16 * 1024;

impl Scratch {
    /// `data` in a buffer of a piece sent before, if any.
    pub fn copy(&mut self, data: &[u8]) -> Vec<u8> {
        self.bytes.copy(data)
    }

    /// Keeps the buffer of `piece`, sent, for [`Scratch::copy`] (unless
    /// it is not bytes, or too large, or enough are kept).
    pub fn give_back(&mut self, piece: Option<Piece>) {
        if let Some(Piece::Bytes(b, _)) = piece {
            self.bytes.keep(b);
        }
    }

    /// Frees the kept buffers (a quiet worker rests).
    pub fn rest(&mut self) {
        self.bytes.rest(0);
    }
}
