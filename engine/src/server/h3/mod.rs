//! HTTP/3 in the engine (feature `http3`): the third protocol next to
//! `h1` and `h2`, over the same router and producers. A QUIC connection
//! is a [`Conn`](crate::server::conn::Conn) of its worker's slab like a
//! TCP one (so every wait, exchange and produced answer names it by its
//! slot), whose transport is QUIC (`Link::Quic`) and whose protocol is
//! a [`Session`]: the quinn-proto connection, its HTTP/3 streams
//! (`crate::h3::conn`, sans-IO) and the answers being sent, stream by
//! stream, as pieces (bytes, or file ranges read as they go), framed as
//! DATA into each stream only as fast as the stream takes them (its
//! flow-control credit and quinn-proto's send window), so a large file
//! is never held in memory.
//!
//! Streams are named here by their index among the client's
//! bidirectional streams (`StreamId::index`), a `u32`, as HTTP/2's are:
//! exchanges and sinks name a stream so whatever the protocol.

pub mod head;
pub mod sink;

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use quinn_proto::{ConnectionHandle, Dir, ReadError, Side, StreamId, VarInt};

use crate::h3::conn::{Conn as H3, Failure, Limits};
use crate::h3::Code;
use crate::server::exchange::ExchangeId;
use crate::server::h2::{self, Pacing};
use crate::spare::Spare;

/// Most of a body framed for a stream at once, ahead of what the stream
/// has taken: one DATA frame (its payload read from the file or copied
/// then) waits in [`Framed::bytes`] until the stream takes it all.
pub const FRAME: usize = 32 * 1024;

/// One QUIC connection's state in the engine.
#[derive(Debug)]
pub struct Session {
    /// The QUIC connection (quinn-proto, sans-IO).
    pub quic: quinn_proto::Connection,
    /// What its streams say in HTTP/3.
    pub h3: H3,
    /// Its handle in its worker's endpoint.
    pub handle: ConnectionHandle,
    /// The worker's UDP socket its datagrams came in by (and go out by).
    pub socket: usize,
    /// Its deadline as filed in the worker's QUIC timers.
    pub deadline: Option<Instant>,
    /// Answers with body bytes left, and requests waiting for a body.
    pub answers: Vec<Answer>,
    /// Answers were left after the last pass over them (see
    /// `Worker::h3_send`): the next begins one further on.
    pub rotate: bool,
    /// Request streams whose answer went whole into the stream, which
    /// quinn-proto holds until the client acknowledged it all (or stopped
    /// it): until then the connection is not done with them, and a close
    /// would throw their last bytes away.
    pub unacked: Vec<u32>,
    /// How many ACK frames the client had sent when last looked at
    /// ([`Session::acknowledging`]).
    pub acks: u64,
    /// Since when it has sent no ACK frame while `unacked` waited (see
    /// [`Session::acknowledging`]).
    pub acked_at: Instant,
    /// Its control stream (for GOAWAY), once open.
    pub control: Option<StreamId>,
    /// Its QPACK decoder stream, once it had something to say.
    pub decoder: Option<StreamId>,
    /// One past the index of the last request stream it opened.
    pub next_request: u32,
    /// When it last opened a request stream.
    pub last_opened: Instant,
    /// When a request stream last brought it bytes (`timeouts.body`
    /// runs from here, as from an HTTP/2 connection's last read).
    pub last_read: Instant,
    /// When the worker's sweep last saw it busy (not [`Session::idle`]):
    /// its keep-alive time runs from the latest of this, `last_opened`
    /// and `last_read` (see [`Session::idle_due`]).
    pub busy_at: Instant,
    /// Winding down (a reload or a stop) was asked: a GOAWAY goes on its
    /// control stream as soon as the stream takes it (see
    /// [`Session::flush_control`]), and it closes once its answers are
    /// done.
    pub winding_down: bool,
    /// The GOAWAY it was sent, once it went into the control stream: the
    /// first request stream that is not served (RFC 9114 §5.2).
    pub going_away: Option<u32>,
    /// Its GOAWAY went because it was idle ([`Session::idle_due`]), not
    /// for a reload or a stop: its CONNECTION_CLOSE says so.
    pub idle_close: bool,
    /// The GOAWAY's bytes its control stream has not taken yet.
    control_out: Vec<u8>,
    /// How many programs and upstream requests answer its streams.
    pub programs: u32,
    /// Its own `[[throttle]]` rates and their wake-up.
    pub pacing: Pacing,
    /// Its last answer's head, encoded (see [`head::Cache`]).
    pub heads: head::Cache,
    /// Framed-bytes buffers of answers that ended, for the next ones.
    pub(crate) spare: Spare<Vec<u8>, { h2::SPARES }, { 2 * FRAME }>,
    /// Piece lists of answers that ended, for the next ones.
    pub(crate) spare_pieces: Spare<VecDeque<h2::Piece>, { h2::SPARES }, 8>,
    /// Request streams whose body is not wanted (their answer did not
    /// need it), with how much more of it is read and dropped (see
    /// [`Session::refuse_rest`]).
    pub unwanted: Vec<(StreamId, u64)>,
    /// Request streams reset for the client's fault (malformed, or a
    /// body past its content-length): counted with its cancels (see
    /// `worker::quic::Budget`), as a client can make us reset streams
    /// as cheaply as it can cancel them ("MadeYouReset", CVE-2025-8671).
    pub faults: u64,
    /// Streams the client reset (RESET_STREAM) that brisk had not
    /// stopped, as read from them: counted with its cancels. (A client
    /// answers brisk's STOP_SENDING with RESET_STREAM, RFC 9000 §3.5:
    /// quinn-proto drops that one unread, as brisk let go of the stream,
    /// so a stream brisk stopped or refused is not counted a second time
    /// for it; and one the client reset but brisk never read holds its
    /// place, so it cannot be repeated unread.)
    pub resets: u64,
    /// The flow-control credit that the bodies of its requests waiting
    /// for their turn may take, unread (see `Worker::wait_turn`).
    pub turn_held: u64,
    /// Why brisk closed the connection with an error (the client broke
    /// the protocol, or flooded it), until the worker says it in the log
    /// (`Worker::drive_h3`), as HTTP/2's closes are.
    pub closed_for: Option<&'static str>,
}

impl Session {
    /// A session for connection `quic` (handle `handle`, socket `socket`).
    pub fn new(
        quic: quinn_proto::Connection,
        handle: ConnectionHandle,
        socket: usize,
        limits: Limits,
        now: Instant,
    ) -> Session {
        Session {
            quic,
            h3: H3::new(limits),
            handle,
            socket,
            deadline: None,
            answers: Vec::new(),
            rotate: false,
            unacked: Vec::new(),
            acks: 0,
            acked_at: now,
            control: None,
            decoder: None,
            next_request: 0,
            last_opened: now,
            last_read: now,
            busy_at: now,
            winding_down: false,
            going_away: None,
            idle_close: false,
            control_out: Vec::new(),
            programs: 0,
            pacing: Pacing::default(),
            heads: head::Cache::default(),
            spare: Spare::default(),
            spare_pieces: Spare::default(),
            unwanted: Vec::new(),
            faults: 0,
            resets: 0,
            turn_held: 0,
            closed_for: None,
        }
    }

    /// The rest of request stream `id`'s body is not wanted: its answer
    /// is complete without it (RFC 9114 §4.1.1). Up to `allowance` more
    /// bytes of it are read and dropped (their credit given back), so
    /// that a client that sends its whole body before it reads the
    /// answer still gets it, as over HTTP/2 (`h2_refuse_rest`); beyond
    /// that the client is asked to stop sending (STOP_SENDING,
    /// H3_NO_ERROR). Asking at once is what the RFC suggests, but
    /// Chromium, asked before its upload is done, resets the upload and
    /// never reads the answer: the request hangs. What it reads is
    /// `drop_unwanted`'s to tell.
    pub fn refuse_rest(&mut self, id: StreamId, allowance: u64) -> Result<(), Failure> {
        match self.unwanted.iter_mut().find(|(u, _)| *u == id) {
            Some((_, left)) => *left = (*left).min(allowance),
            None => self.unwanted.push((id, allowance)),
        }
        self.drop_unwanted(id).unwrap_or(Ok(()))
    }

    /// Reads and drops what stream `id`, whose body is not wanted, has
    /// received, its frames still read as any request's: one that ends
    /// inside a frame (RFC 9114 §7.1) or with a body other than its
    /// content-length (§4.1.2) fails as it would with its body read (it
    /// was answered, and left open). Stops it once its allowance is
    /// spent. None if the stream is not one of those.
    pub fn drop_unwanted(&mut self, id: StreamId) -> Option<Result<(), Failure>> {
        let i = self.unwanted.iter().position(|(u, _)| *u == id)?;
        let key = u64::from(id);
        let mut left = self.unwanted[i].1;
        let mut failed = Ok(());
        let (h3, resets) = (&mut self.h3, &mut self.resets);
        let mut recv = self.quic.recv_stream(id);
        let over = match recv.read(true) {
            Ok(mut chunks) => {
                let over = loop {
                    let (bytes, fin) = match chunks.next(usize::MAX) {
                        Ok(Some(chunk)) if chunk.bytes.len() as u64 <= left => {
                            left -= chunk.bytes.len() as u64;
                            (chunk.bytes, false)
                        }
                        Ok(Some(_)) => break Some(true),
                        Err(ReadError::Blocked) => break None,
                        Ok(None) => (bytes::Bytes::new(), true),
                        Err(ReadError::Reset(_)) => {
                            *resets += 1;
                            break Some(false);
                        }
                    };
                    // (A stream whose request has ended is read no more.)
                    if h3.reads(key) {
                        failed = h3.request_data(key, &bytes, fin, &mut |_| {});
                    }
                    if fin || failed.is_err() {
                        break Some(false);
                    }
                };
                let _ = chunks.finalize();
                over
            }
            Err(_) => Some(false),
        };
        match over {
            None => self.unwanted[i].1 = left,
            Some(stop) => {
                self.unwanted.swap_remove(i);
                if stop {
                    let code = VarInt::from_u32(Code::NO_ERROR.0);
                    let _ = self.quic.recv_stream(id).stop(code);
                }
                // (Read no further: the decoder is told, RFC 9204 §4.4.2.)
                self.h3.forget(key);
            }
        }
        Some(failed)
    }

    /// The answer on stream `id`, if it has one.
    pub fn answer(&mut self, id: u32) -> Option<&mut Answer> {
        h2::answer(&mut self.answers, id)
    }

    /// Takes the answer on stream `id` away. If the client stopped the
    /// stream (STOP_SENDING: the worker takes its answer away then), it is
    /// reset with the client's code, as RFC 9000 §3.5 requires: quinn-proto
    /// frees a stream, and gives the client credit for a new one, only
    /// once both halves are done, so a stream stopped and never reset
    /// (one whose answer had not begun, or was produced) was held for the
    /// connection's life, and a hundred of them left it no stream to open.
    pub fn take(&mut self, id: u32) -> Option<Answer> {
        let mut send = self.quic.send_stream(stream(id));
        if let Ok(Some(code)) = send.stopped() {
            let _ = send.reset(code);
        }
        h2::take(&mut self.answers, id)
    }

    /// The stream whose request is held in the exchange `f` picks.
    pub fn find_wait(&self, f: impl Fn(ExchangeId) -> bool) -> Option<u32> {
        h2::find_wait(&self.answers, f)
    }

    /// Lets go of the request held on stream `id`, if one is held there:
    /// its exchange.
    pub fn take_wait(&mut self, id: u32) -> Option<ExchangeId> {
        h2::take_wait(&mut self.answers, id)
    }

    /// The lowest stream above `after` (any, if `None`) whose answer is
    /// `wanted`.
    pub fn next_answer(&self, after: Option<u32>, wanted: impl Fn(&Answer) -> bool) -> Option<u32> {
        h2::next_answer(&self.answers, after, wanted)
    }

    /// Sends what its QPACK decoder stream has to say (RFC 9204 §4.4):
    /// acknowledgements of what the client's encoder inserted and of the
    /// sections that used it, opening the stream the first time. What
    /// the stream does not take now waits for the next call.
    pub fn flush_decoder(&mut self) {
        if self.h3.decoder_bytes().is_empty() {
            return;
        }
        if self.decoder.is_none() {
            self.decoder = self.open_critical();
        }
        let Some(id) = self.decoder else { return };
        if let Ok(n) = self.quic.send_stream(id).write(self.h3.decoder_bytes()) {
            self.h3.decoder_sent(n);
        }
    }

    /// Whether nothing is under way: its handshake done, no answer, no
    /// request held, every answer acknowledged. (A connection closed in
    /// its handshake is closed in a Handshake packet, where the
    /// application's code and reason cannot go: RFC 9000 §10.2.3.)
    pub fn idle(&self) -> bool {
        self.answers.is_empty() && self.unacked.is_empty() && !self.quic.is_handshaking()
    }

    /// Whether it has been idle too long at `now` and is to close, as an
    /// HTTP/1.1 or HTTP/2 connection is: nothing under way and no request
    /// opened or read for `keepalive`, or (a body nobody wants still
    /// coming) for `body`; with a request head begun and not finished,
    /// `header` after its stream opened, however slowly its bytes come
    /// (a client that sends PINGs would otherwise hold it, and its
    /// connection, for ever: QUIC's idle timeout counts any packet).
    pub fn idle_due(
        &self,
        now: Instant,
        (header, keepalive, body): (Duration, Duration, Duration),
    ) -> bool {
        if !self.idle() {
            return false;
        }
        let opened = self.busy_at.max(self.last_opened);
        let (since, limit) = match (self.h3.heads_pending(), self.unwanted.is_empty()) {
            (true, _) => (opened, header),
            (false, true) => (opened.max(self.last_read), keepalive),
            (false, false) => (opened.max(self.last_read), body),
        };
        now.saturating_duration_since(since) >= limit
    }

    /// Whether its client still acknowledges what it was sent at `now`:
    /// false once answers all in their streams have waited `send`
    /// (`timeouts.send`) with no ACK frame from it, whatever else it
    /// sent meanwhile (PINGs, new requests): as a TCP client whose socket
    /// takes nothing for `timeouts.send`, it is closed then. (quinn-proto
    /// retransmits them for as long as any packet of the client's puts
    /// off QUIC's idle timeout, holding its buffers.)
    pub fn acknowledging(&mut self, now: Instant, send: Duration) -> bool {
        if self.unacked.is_empty() {
            return true;
        }
        let acks = self.quic.stats().frame_rx.acks;
        if acks != self.acks {
            self.acks = acks;
            self.acked_at = now;
        }
        now.saturating_duration_since(self.acked_at) < send
    }

    /// Answer `id` went whole into its stream: the connection holds it
    /// until the client acknowledges it all (or stops it).
    pub fn finished(&mut self, id: u32, now: Instant) {
        if self.unacked.is_empty() {
            // (Its clock starts now, not at the client's last ACK.)
            self.acked_at = now;
        }
        self.unacked.push(id);
    }

    /// Stream `id` is done with: acknowledged whole, or stopped.
    pub fn acknowledged(&mut self, id: StreamId) {
        if let Some(i) = u32::try_from(id.index())
            .ok()
            .and_then(|i| self.unacked.iter().position(|&u| u == i))
        {
            self.unacked.swap_remove(i);
        }
    }

    /// Opens one of its own critical unidirectional streams (control,
    /// QPACK decoder): its bytes go before any answer's (a higher
    /// priority), so that a GOAWAY or an acknowledgement is not queued
    /// behind megabytes of DATA.
    pub fn open_critical(&mut self) -> Option<StreamId> {
        let id = self.quic.streams().open(Dir::Uni)?;
        let _ = self.quic.send_stream(id).set_priority(CRITICAL);
        Some(id)
    }

    /// Whether `id` is one of its own critical streams (control, QPACK
    /// decoder), which may not be closed (§6.2.1, RFC 9204 §4.2).
    pub fn critical(&self, id: StreamId) -> bool {
        self.control == Some(id) || self.decoder == Some(id)
    }

    /// Winding down (a reload or a stop): GOAWAY on its control stream,
    /// naming the first request stream it has not opened by the time the
    /// frame goes (those it opened are answered; later ones are refused
    /// with `H3_REQUEST_REJECTED`, which a client sends again on a new
    /// connection). Once; whether it was asked now (the caller then
    /// drives the connection, which sends it).
    pub fn go_away(&mut self) -> bool {
        // (Its control stream opens once its handshake is done.)
        if self.winding_down || self.control.is_none() {
            return false;
        }
        self.winding_down = true;
        self.flush_control();
        true
    }

    /// Writes what its control stream has to say: the GOAWAY, once
    /// winding down was asked, as far as the stream takes it. quinn-proto's
    /// send window is the connection's: while answers fill it a write is
    /// refused (Blocked), so the frame waits here for the next turn with
    /// room, and requests are refused for it only once it is in the stream
    /// (RFC 9114 §5.2: the client must hear which requests were not
    /// processed). The stream's priority sends it before the answers'
    /// bytes held with it.
    pub fn flush_control(&mut self) {
        let Some(control) = self.control else { return };
        let fresh = self.winding_down && self.going_away.is_none();
        if fresh {
            self.control_out.clear();
            let id = stream(self.next_request);
            crate::h3::frame::write_goaway(u64::from(id), &mut self.control_out);
        }
        if self.control_out.is_empty() {
            return;
        }
        let Ok(n) = self.quic.send_stream(control).write(&self.control_out) else {
            return;
        };
        self.control_out.drain(..n);
        // (Once a byte of it went, it names that stream for good.)
        if fresh && n > 0 {
            self.going_away = Some(self.next_request);
        }
    }

    /// Writes `bytes` (a whole HEADERS frame) on stream `id`; false if
    /// the stream did not take it all (it is then reset: a frame cut in
    /// two cannot be finished later without keeping it).
    pub fn send_frame(&mut self, id: u32, bytes: &[u8]) -> bool {
        let sid = stream(id);
        let mut s = self.quic.send_stream(sid);
        match s.write(bytes) {
            Ok(n) if n == bytes.len() => true,
            _ => {
                let _ = s.reset(quinn_proto::VarInt::from_u32(
                    crate::h3::Code::INTERNAL_ERROR.0,
                ));
                false
            }
        }
    }
}

/// The priority of its critical streams' bytes (answers' are 0).
const CRITICAL: i32 = 1;

/// The QUIC stream id of the client's bidirectional stream `index`.
pub fn stream(index: u32) -> StreamId {
    StreamId::new(Side::Client, Dir::Bi, u64::from(index))
}

/// What a stream's answer holds until its last byte has gone into the
/// stream: what HTTP/2's does, and its framed bytes.
pub type Answer = h2::Answer<Framed>;

/// What HTTP/3 keeps of an answer of its own: the bytes framed (a DATA
/// frame, or a HEADERS one) that its stream has not taken yet.
#[derive(Debug, Default)]
pub struct Framed {
    /// Framed bytes the stream has not taken yet, from [`Framed::at`].
    pub bytes: Vec<u8>,
    /// How much of `bytes` the stream took.
    pub at: usize,
    /// Body bytes framed so far.
    pub body_sent: u64,
    /// Its producer took some of the request body: its stream is read
    /// on (see `worker/h3.rs`'s `h3_read`).
    pub read_more: bool,
}

impl Framed {
    /// Framed bytes the stream has not taken.
    pub fn left(&self) -> u64 {
        (self.bytes.len() - self.at) as u64
    }
}
