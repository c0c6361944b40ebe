//! One HTTP/2 connection, server side, sans-IO: fed the bytes that
//! arrived, it checks the preface and every frame, keeps the streams'
//! states (§5.1) and both directions' flow-control windows (§5.2, §6.9),
//! answers what the protocol answers by itself (SETTINGS ack, PING ack,
//! WINDOW_UPDATE, RST_STREAM and GOAWAY on errors, 431 for a head over
//! the header list size), and reports requests, their bodies and
//! cancellations as [`Event`]s. Answers are written back through it:
//! [`Conn::send_headers`], [`Conn::send_data`], within the windows.
//!
//! Defences, each with a budget in [`Limits`] (counted per
//! `flood_window`): rapid reset (CVE-2023-44487), CONTINUATION floods,
//! HPACK bombs, SETTINGS/PING/PRIORITY floods, empty frames, too many
//! concurrent streams, stream id reuse and frames on closed streams.
//! Going over a budget ends the connection with GOAWAY
//! ENHANCE_YOUR_CALM.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::frame::{self, kind, setting, Frame, FrameError, Head, HEAD_LEN};
use super::hpack::{self, Decoder};
use super::request::Request;
use super::{ErrorCode, Limits, PREFACE};

mod flood;
mod headers;
mod send;
mod upgrade;

/// What [`Conn::read`] found.
#[derive(Debug, PartialEq, Eq)]
pub enum Event<'a> {
    /// Nothing more can be done with this input: more is needed.
    Stall,
    /// A request head on `stream` ([`Conn::request`] holds it):
    /// `end_stream` when it has no body.
    Request {
        /// Its stream.
        stream: u32,
        /// No body follows.
        end_stream: bool,
    },
    /// Request body bytes (give the window back with [`Conn::release`]
    /// once they are used); `end_stream` ends the body (trailers end it
    /// too, with no data).
    Data {
        /// Its stream.
        stream: u32,
        /// The bytes.
        data: &'a [u8],
        /// The body is complete.
        end_stream: bool,
        /// It ended with a trailer block (RFC 9113 §8.1), no data: its
        /// fields are [`Conn::request`]'s until the next block is read.
        trailers: bool,
    },
    /// The stream is gone (the client cancelled it, or it was reset on
    /// an error): drop what answers it.
    Reset {
        /// Its stream.
        stream: u32,
    },
    /// The client sent GOAWAY: it opens no more streams.
    GoAway,
    /// The connection failed: a GOAWAY is queued; send it and close.
    Close,
}

/// A stream's halves (§5.1: open, half-closed, closed).
#[derive(Debug)]
struct Stream {
    id: u32,
    /// The client may still send on it (not half-closed remote).
    recv_open: bool,
    /// Our answer has not ended (not half-closed local).
    send_open: bool,
    /// What the client may still send before a WINDOW_UPDATE.
    recv_window: i64,
    /// Bytes used since the last WINDOW_UPDATE we sent for it.
    recv_unacked: u32,
    /// What we may send.
    send_window: i64,
    /// The request's content-length and the body bytes received.
    content_length: Option<u64>,
    received: u64,
    /// Bytes of the answer not yet framed (the scheduler's key).
    remaining: u64,
    /// The request's body is not wanted: this much more of it is read
    /// and dropped, then the stream is reset (see [`Conn::discard_body`]).
    discard: Option<u64>,
    /// The caller holds its answer back for now (a throttle): the
    /// scheduler passes it over until [`Conn::resume_all`].
    paused: bool,
}

/// A connection's buffers that only matter while it has streams open
/// (see [`Conn::lend`], [`Conn::give_back`]): empty until a connection
/// has used them.
#[derive(Debug, Default)]
pub struct Buffers {
    streams: Vec<Stream>,
    request: Option<Box<Request>>,
    out: Vec<u8>,
    /// The decoder's, for literals.
    literals: (Vec<u8>, Vec<u8>),
}

impl Buffers {
    /// Whether it holds no buffer at all.
    pub fn is_empty(&self) -> bool {
        self.streams.capacity() == 0
            && self.request.is_none()
            && self.out.capacity() == 0
            && self.literals.0.capacity() == 0
            && self.literals.1.capacity() == 0
    }
}

/// The request of a connection that holds none (see [`Conn::request`]).
static NO_REQUEST: Request = Request::EMPTY;

/// Whether frames of type `kind` carry a header block.
fn is_head(kind: u8) -> bool {
    matches!(kind, kind::HEADERS | kind::CONTINUATION)
}

/// A header block in HEADERS + CONTINUATION frames, being gathered.
#[derive(Debug)]
struct Block {
    stream: u32,
    end_stream: bool,
    /// Continuations so far.
    frames: u32,
    /// What to do once it is complete.
    then: Then,
}

/// What a header block being gathered is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Then {
    /// A new stream's request.
    Open,
    /// Trailers of an open stream.
    Trailers,
    /// Decoded to keep HPACK in step, then refused with this code.
    Refuse(ErrorCode),
    /// Decoded to keep HPACK in step, then dropped (a stream we reset,
    /// or one past our GOAWAY).
    Drop,
}

/// Counters of the flood budgets, over the current window.
#[derive(Debug)]
struct Flood {
    since: Instant,
    resets: u32,
    control: u32,
    empty: u32,
}

/// Most RST_STREAM and WINDOW_UPDATE frames on closed streams taken
/// uncounted (see `Conn::crossings`): a 16 MiB window's worth of 4 KiB
/// DATA frames.
const MAX_CROSSINGS: u32 = 4096;

/// The peer's settings that matter to us.
#[derive(Debug)]
struct Peer {
    max_frame: u32,
    initial_window: i64,
}

/// The last stream id a first GOAWAY names (§6.8: 2^31-1, every
/// stream the client may have opened).
pub const ANY_STREAM: u32 = 0x7fff_ffff;

/// The data of the PING that follows the first GOAWAY: its answer says
/// the client has read that GOAWAY, so opens no stream after it.
pub const GOAWAY_PING: [u8; 8] = *b"goaway!\0";

/// How long the final GOAWAY waits for the answer to [`GOAWAY_PING`]
/// before it goes anyway (a client that never answers).
pub const GOAWAY_WAIT: Duration = Duration::from_secs(1);

/// Our graceful GOAWAY (RFC 9113 §6.8), in two steps, so that the
/// requests a client sent before it read the first one are served.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Goaway {
    /// None sent: serving.
    No,
    /// The first GOAWAY (naming [`ANY_STREAM`]) and [`GOAWAY_PING`]
    /// were queued then: every stream opened until the PING's answer
    /// (or [`GOAWAY_WAIT`]) is served.
    Announced(Instant),
    /// The final GOAWAY was queued: streams above this one are not served.
    Final(u32),
}

/// Where the connection is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Waiting for the client's preface (§3.4).
    Preface,
    /// Exchanging frames.
    Frames,
    /// A connection error was sent: nothing more is read.
    Failed,
}

/// One HTTP/2 connection (see the module documentation).
#[derive(Debug)]
pub struct Conn {
    /// (Shared by a worker's connections: the same for each.)
    limits: Arc<Limits>,
    phase: Phase,
    peer: Peer,
    decoder: Decoder,
    /// Encodes our answers' heads (its table is the client's to keep);
    /// `None` while the connection rests (see [`Conn::shrink`]): made
    /// again for the next answer.
    encoder: Option<Box<hpack::Encoder>>,
    /// The client's SETTINGS_HEADER_TABLE_SIZE, for an encoder made again.
    table_limit: u32,
    /// The encoder was dropped at a rest: the client's copy of its
    /// table is to be emptied.
    rested: bool,
    streams: Vec<Stream>,
    /// The highest stream the client opened, and when it did (when the
    /// connection started, before one).
    last_stream: u32,
    last_opened: Instant,
    /// Streams we reset lately: frames already in flight on them are
    /// dropped, not errors (§5.4.2).
    reset_lately: [u32; 8],
    reset_next: usize,
    /// Streams that ended lately: HEADERS on one is STREAM_CLOSED
    /// (§5.1); on an id never used, PROTOCOL_ERROR (§5.1.1).
    closed_lately: [u32; 8],
    closed_next: usize,
    /// RST_STREAM and WINDOW_UPDATE frames on closed streams taken
    /// without counting, as many as may cross a stream's end (§5.1,
    /// §6.9): one for each DATA frame sent (a client that gives credit
    /// back for every one, and got a stream's last frames at once, sends
    /// their WINDOW_UPDATEs after it ended) and one for each stream that
    /// ended (a cancel), at most [`MAX_CROSSINGS`].
    crossings: u32,
    recv_window: i64,
    recv_unacked: u32,
    /// Connection credit given back early, to keep back from the next
    /// given back (see [`Conn::owe`]).
    owed: u32,
    send_window: i64,
    /// The header block being gathered, and its bytes.
    block: Option<Block>,
    block_buf: Vec<u8>,
    /// Since when a header block has been coming and is not whole (see
    /// [`Conn::head_since`]).
    head_since: Option<Instant>,
    /// The last request head (lent, see [`Conn::lend`]).
    request: Option<Box<Request>>,
    /// Frames to send (control frames, heads, small bodies).
    out: Vec<u8>,
    flood: Flood,
    /// Our graceful GOAWAY, where it is.
    goaway: Goaway,
    /// The client sent GOAWAY.
    peer_goaway: bool,
    /// Why the connection failed, for the log.
    failure: Option<&'static str>,
    /// Stream 1 holds a request that came by `Upgrade: h2c`, to report
    /// after the client's preface (see [`Conn::upgrade`]).
    upgraded: bool,
}

impl Conn {
    /// A connection held to `limits`, at `now`; our SETTINGS and the
    /// connection window's opening are queued at once (§3.4: the
    /// server's preface may go before the client's arrives).
    pub fn new(limits: impl Into<Arc<Limits>>, now: Instant) -> Conn {
        let limits = limits.into();
        let mut out = Vec::with_capacity(64);
        let mut params = vec![
            (
                setting::MAX_CONCURRENT_STREAMS,
                limits.max_concurrent_streams,
            ),
            (setting::INITIAL_WINDOW_SIZE, limits.stream_window),
            (setting::MAX_HEADER_LIST_SIZE, limits.max_header_list_size),
        ];
        if limits.max_frame_size != frame::DEFAULT_MAX_FRAME {
            params.push((setting::MAX_FRAME_SIZE, limits.max_frame_size));
        }
        if limits.header_table_size != 4096 {
            params.push((setting::HEADER_TABLE_SIZE, limits.header_table_size));
        }
        if limits.connect_protocol {
            params.push((setting::ENABLE_CONNECT_PROTOCOL, 1));
        }
        frame::write_settings(&mut out, &params);
        let opening = limits.connection_window.saturating_sub(65_535);
        if opening > 0 {
            frame::write_window_update(&mut out, 0, opening);
        }
        Conn {
            phase: Phase::Preface,
            peer: Peer {
                max_frame: frame::DEFAULT_MAX_FRAME,
                initial_window: 65_535,
            },
            decoder: Decoder::new(limits.header_table_size as usize),
            encoder: None,
            table_limit: 4096,
            rested: false,
            streams: Vec::new(),
            last_stream: 0,
            last_opened: now,
            reset_lately: [0; 8],
            reset_next: 0,
            closed_lately: [0; 8],
            closed_next: 0,
            crossings: 0,
            recv_window: 65_535 + opening as i64,
            recv_unacked: 0,
            owed: 0,
            send_window: 65_535,
            block: None,
            head_since: None,
            block_buf: Vec::new(),
            request: None,
            out,
            flood: Flood {
                since: now,
                resets: 0,
                control: 0,
                empty: 0,
            },
            goaway: Goaway::No,
            peer_goaway: false,
            failure: None,
            upgraded: false,
            limits,
        }
    }

    /// The request head of the last [`Event::Request`].
    pub fn request(&self) -> &Request {
        self.request.as_deref().unwrap_or(&NO_REQUEST)
    }

    /// The encoder of our answers' heads: every block it starts goes out
    /// in the order it was made (the client's table follows ours).
    pub fn encoder(&mut self) -> &mut hpack::Encoder {
        let (limit, rested) = (self.table_limit, std::mem::take(&mut self.rested));
        self.encoder.get_or_insert_with(|| {
            // A connection's first encoder starts as the client's table
            // does (with the size the client's SETTINGS asked for); one
            // made again after a rest starts with a size update to 0 and
            // back, which empties the client's copy of the table the rest
            // forgot (RFC 7541 §4.2, §6.3).
            let mut e = Box::new(hpack::Encoder::new());
            if rested {
                e.set_limit(0);
            }
            if rested || limit != 4096 {
                e.set_limit(limit);
            }
            e
        })
    }

    /// Frames waiting to be sent.
    pub fn out(&self) -> &[u8] {
        &self.out
    }

    /// Takes the frames waiting to be sent, appending them to `to`.
    pub fn drain_out(&mut self, to: &mut Vec<u8>) {
        to.extend_from_slice(&self.out);
        self.out.clear();
    }

    /// Why the connection failed, if it did.
    pub fn failure(&self) -> Option<&'static str> {
        self.failure
    }

    /// Whether the connection failed (a GOAWAY is queued: send it, close).
    pub fn failed(&self) -> bool {
        self.phase == Phase::Failed
    }

    /// Whether the client's preface has arrived.
    pub fn started(&self) -> bool {
        self.phase != Phase::Preface
    }

    /// Streams open now.
    pub fn open_streams(&self) -> usize {
        self.streams.len()
    }

    /// Whether every stream still open has had its whole answer sent:
    /// only the client keeps them open (a request body it has not ended).
    pub fn all_answered(&self) -> bool {
        self.streams.iter().all(|s| !s.send_open)
    }

    /// When the client last opened a stream (when the connection started,
    /// if it has opened none).
    pub fn last_opened(&self) -> Instant {
        self.last_opened
    }

    /// Whether this side has said GOAWAY (a graceful shutdown, or a
    /// connection error).
    pub fn shutting_down(&self) -> bool {
        self.goaway != Goaway::No || self.failed()
    }

    /// Whether a (final) GOAWAY went either way and no stream is left:
    /// the connection may close.
    pub fn finished(&self) -> bool {
        let ours = matches!(self.goaway, Goaway::Final(_));
        (ours || self.peer_goaway || self.failed()) && self.streams.is_empty()
    }

    /// Since when a header block (a request's head, or trailers) has
    /// been coming, in part, and is not whole yet: a HEADERS frame not
    /// all read, or without END_HEADERS and waiting for the last of its
    /// CONTINUATION frames. The engine holds it to `timeouts.header`,
    /// as it holds an HTTP/1.1 head: each frame being valid and the
    /// block under every size limit, a client dripping it held the
    /// connection as long as it liked.
    pub fn head_since(&self) -> Option<Instant> {
        self.head_since
    }

    /// Reads frames from `input[*pos..]`, moving `pos` past those it
    /// consumed, until one makes an event (see [`Event`]).
    pub fn read<'a>(&mut self, input: &'a [u8], pos: &mut usize, now: Instant) -> Event<'a> {
        loop {
            let rest = &input[*pos..];
            match self.phase {
                Phase::Failed => return Event::Stall,
                Phase::Preface => {
                    let n = rest.len().min(PREFACE.len());
                    if rest[..n] != PREFACE[..n] {
                        return self.fail(ErrorCode::Protocol, "not the HTTP/2 preface");
                    }
                    if n < PREFACE.len() {
                        return Event::Stall;
                    }
                    *pos += n;
                    self.phase = Phase::Frames;
                    if let Some(ev) = self.open_upgraded(now) {
                        return ev;
                    }
                    continue;
                }
                Phase::Frames => {}
            }
            let Some(head) = rest.get(..HEAD_LEN) else {
                // (Its type is known from the fourth byte on.)
                if rest.get(3).is_some_and(|&k| is_head(k)) {
                    self.head_since.get_or_insert(now);
                }
                return Event::Stall;
            };
            let head = Head::read(head.try_into().unwrap_or(&[0; HEAD_LEN]));
            if head.len > self.limits.max_frame_size {
                return self.fail(
                    ErrorCode::FrameSize,
                    "frame larger than SETTINGS_MAX_FRAME_SIZE",
                );
            }
            let end = HEAD_LEN + head.len as usize;
            let Some(payload) = rest.get(HEAD_LEN..end) else {
                if is_head(head.kind) {
                    self.head_since.get_or_insert(now);
                }
                return Event::Stall;
            };
            *pos += end;
            let ev = self.frame(&head, payload, now);
            self.head_since = match self.block {
                Some(_) => Some(self.head_since.unwrap_or(now)),
                None => None,
            };
            if let Some(ev) = ev {
                return ev;
            }
        }
    }

    /// Handles one frame.
    fn frame<'a>(&mut self, head: &Head, payload: &'a [u8], now: Instant) -> Option<Event<'a>> {
        // §6.10: nothing but the block's CONTINUATION frames may come
        // between a HEADERS without END_HEADERS and its end.
        if self.block.is_some() && head.kind != kind::CONTINUATION {
            return Some(self.fail(ErrorCode::Protocol, "frame inside a header block"));
        }
        let frame = match frame::decode(head, payload) {
            Ok(f) => f,
            Err(FrameError::Connection(code, why)) => return Some(self.fail(code, why)),
            Err(FrameError::Stream(id, code, _)) => return self.fault_stream(id, code, now),
        };
        match frame {
            Frame::Data {
                stream,
                data,
                flow,
                end_stream,
            } => self.data(stream, data, flow, end_stream, now),
            Frame::Headers {
                stream,
                block,
                priority,
                end_stream,
                end_headers,
            } => {
                let self_dep = priority.is_some_and(|p| p.depends_on == stream);
                self.headers(stream, block, self_dep, end_stream, end_headers, now)
            }
            Frame::Continuation {
                stream,
                block,
                end_headers,
            } => self.continuation(stream, block, end_headers, now),
            Frame::Priority { stream, priority } => {
                if let Some(ev) = self.spend_control(now) {
                    return Some(ev);
                }
                if priority.depends_on == stream {
                    // §5.3.1: a stream cannot depend on itself.
                    return self.fault_stream(stream, ErrorCode::Protocol, now);
                }
                None
            }
            Frame::RstStream { stream, .. } => self.rst_stream(stream, now),
            Frame::Settings { ack, params } => self.settings(ack, params, now),
            Frame::Ping { ack, data } => {
                if ack {
                    if data == GOAWAY_PING {
                        // The client has read the first GOAWAY: it
                        // opened every stream it will open.
                        self.final_goaway();
                    }
                    return None;
                }
                if let Some(ev) = self.spend_control(now) {
                    return Some(ev);
                }
                frame::write_ping_ack(&mut self.out, &data);
                None
            }
            Frame::GoAway { .. } => {
                self.peer_goaway = true;
                Some(Event::GoAway)
            }
            Frame::WindowUpdate { stream, increment } => self.window_update(stream, increment, now),
            Frame::PushPromise { .. } => {
                Some(self.fail(ErrorCode::Protocol, "PUSH_PROMISE from a client"))
            }
            Frame::Unknown => None,
        }
    }

    fn stream(&mut self, id: u32) -> Option<&mut Stream> {
        self.streams.iter_mut().find(|s| s.id == id)
    }

    fn remove(&mut self, id: u32) {
        let before = self.streams.len();
        self.streams.retain(|s| s.id != id);
        if self.streams.len() < before {
            self.crossing();
            self.closed_lately[self.closed_next] = id;
            self.closed_next = (self.closed_next + 1) % self.closed_lately.len();
        }
    }

    /// One more frame may cross a stream's end (see `crossings`).
    fn crossing(&mut self) {
        self.crossings = (self.crossings + 1).min(MAX_CROSSINGS);
    }

    /// An RST_STREAM or WINDOW_UPDATE on a closed stream: taken while
    /// what was sent leaves room for one to have crossed its end, else
    /// counted as a frame on a closed stream.
    fn crossed<'a>(&mut self, now: Instant) -> Option<Event<'a>> {
        if self.crossings > 0 {
            self.crossings -= 1;
            return None;
        }
        self.spend_empty(now)
    }

    /// Whether `id` is a stream we reset lately.
    fn was_reset(&self, id: u32) -> bool {
        self.reset_lately.contains(&id)
    }

    fn data<'a>(
        &mut self,
        id: u32,
        data: &'a [u8],
        flow: u32,
        end_stream: bool,
        now: Instant,
    ) -> Option<Event<'a>> {
        // The connection window is charged whatever the stream's state (§6.9).
        self.recv_window -= flow as i64;
        if self.recv_window < 0 {
            return Some(self.fail(ErrorCode::FlowControl, "DATA beyond the connection window"));
        }
        let known = self.streams.iter().position(|s| s.id == id);
        let Some(i) = known else {
            // Never to be used: give the connection window back now.
            self.release_conn(flow);
            if id > self.last_stream {
                return Some(self.fail(ErrorCode::Protocol, "DATA on an idle stream"));
            }
            if let Some(ev) = self.spend_empty(now) {
                return Some(ev);
            }
            if self.was_reset(id) {
                return None;
            }
            return self.reset_stream(id, ErrorCode::StreamClosed);
        };
        let s = &mut self.streams[i];
        if !s.recv_open {
            self.release_conn(flow);
            return self.fault_stream(id, ErrorCode::StreamClosed, now);
        }
        if s.discard.is_some() && data.is_empty() && !end_stream {
            // Nothing to drop, and no allowance spent: an empty frame,
            // counted as one whatever becomes of the body (its padding's
            // credit goes back at once).
            s.recv_window -= flow as i64;
            self.release(id, flow as usize);
            return self.spend_empty(now);
        }
        if s.discard.is_some() {
            // (Discarded or not, a body must match its content-length:
            // §8.1.1 makes a mismatch malformed.)
            s.received += data.len() as u64;
            let wrong = match s.content_length {
                Some(n) => s.received > n || (end_stream && s.received != n),
                None => false,
            };
            if wrong {
                self.release_conn(flow);
                return self.fault_stream(id, ErrorCode::Protocol, now);
            }
        }
        if let Some(left) = s.discard.as_mut() {
            // A body nobody wants: its credit goes back at once, and past
            // the allowance the client is asked to stop (RFC 9113 §8.1).
            *left = left.saturating_sub(flow as u64);
            let over = *left == 0 && !end_stream;
            s.recv_window -= flow as i64;
            if end_stream {
                s.recv_open = false;
            }
            let done = end_stream && !s.send_open;
            self.release(id, flow as usize);
            if done {
                self.remove(id);
            }
            if over {
                return self.reset_stream(id, ErrorCode::NoError);
            }
            return None;
        }
        s.recv_window -= flow as i64;
        if s.recv_window < 0 {
            self.release_conn(flow);
            return self.fault_stream(id, ErrorCode::FlowControl, now);
        }
        s.received += data.len() as u64;
        if s.content_length.is_some_and(|n| s.received > n) {
            self.release_conn(flow);
            return self.fault_stream(id, ErrorCode::Protocol, now);
        }
        // Padding is never handed on: its credit comes back at once.
        let padding = flow - data.len() as u32;
        if padding > 0 {
            self.release(id, padding as usize);
        }
        if data.is_empty() && !end_stream {
            if let Some(ev) = self.spend_empty(now) {
                return Some(ev);
            }
            return None;
        }
        if end_stream {
            return self.end_body(id, data, false, now);
        }
        Some(Event::Data {
            stream: id,
            data,
            end_stream: false,
            trailers: false,
        })
    }

    /// The body of stream `id` ends (with `data`, its last bytes; or
    /// with a trailer block).
    fn end_body<'a>(
        &mut self,
        id: u32,
        data: &'a [u8],
        trailers: bool,
        now: Instant,
    ) -> Option<Event<'a>> {
        let s = self.stream(id)?;
        s.recv_open = false;
        if s.content_length.is_some_and(|n| n != s.received) {
            return self.fault_stream(id, ErrorCode::Protocol, now);
        }
        if !s.send_open {
            self.remove(id);
        }
        Some(Event::Data {
            stream: id,
            data,
            end_stream: true,
            trailers,
        })
    }

    fn rst_stream<'a>(&mut self, id: u32, now: Instant) -> Option<Event<'a>> {
        if id > self.last_stream {
            return Some(self.fail(ErrorCode::Protocol, "RST_STREAM on an idle stream"));
        }
        if self.block.is_some() {
            return Some(self.fail(ErrorCode::Protocol, "RST_STREAM inside a header block"));
        }
        if self.stream(id).is_none() {
            // A frame on a closed stream: one that crossed its end is
            // taken, a flood of them counted.
            return self.crossed(now);
        }
        self.remove(id);
        // Rapid reset: every stream a client opens and cancels costs a
        // request's work; past the budget the connection ends.
        if let Some(ev) = self.spend_reset(now) {
            return Some(ev);
        }
        Some(Event::Reset { stream: id })
    }

    fn settings<'a>(&mut self, ack: bool, params: &[u8], now: Instant) -> Option<Event<'a>> {
        if ack {
            return None;
        }
        if let Some(ev) = self.spend_control(now) {
            return Some(ev);
        }
        for (id, value) in frame::settings(params) {
            match id {
                setting::ENABLE_PUSH if value > 1 => {
                    return Some(self.fail(ErrorCode::Protocol, "SETTINGS_ENABLE_PUSH not 0 or 1"));
                }
                setting::INITIAL_WINDOW_SIZE => {
                    if value as i64 > frame::MAX_WINDOW {
                        return Some(self.fail(
                            ErrorCode::FlowControl,
                            "SETTINGS_INITIAL_WINDOW_SIZE too large",
                        ));
                    }
                    // §6.9.2: the change applies to every open stream's
                    // window, which may go negative, never past the maximum.
                    let delta = value as i64 - self.peer.initial_window;
                    self.peer.initial_window = value as i64;
                    for s in &mut self.streams {
                        s.send_window += delta;
                        if s.send_window > frame::MAX_WINDOW {
                            return Some(
                                self.fail(ErrorCode::FlowControl, "a stream window grew too large"),
                            );
                        }
                    }
                }
                setting::MAX_FRAME_SIZE => {
                    if !(frame::DEFAULT_MAX_FRAME..=frame::MAX_MAX_FRAME).contains(&value) {
                        return Some(
                            self.fail(ErrorCode::Protocol, "SETTINGS_MAX_FRAME_SIZE out of range"),
                        );
                    }
                    self.peer.max_frame = value;
                }
                setting::HEADER_TABLE_SIZE => {
                    // (No encoder is made for it: the next one is made
                    // with this size.)
                    self.table_limit = value;
                    if let Some(e) = &mut self.encoder {
                        e.set_limit(value);
                    }
                }
                // Unknown settings are ignored (§6.5.2).
                _ => {}
            }
        }
        frame::write_settings_ack(&mut self.out);
        None
    }

    fn window_update<'a>(&mut self, id: u32, increment: u32, now: Instant) -> Option<Event<'a>> {
        if id == 0 {
            if increment == 0 {
                return Some(self.fail(ErrorCode::Protocol, "WINDOW_UPDATE of 0"));
            }
            self.send_window += increment as i64;
            if self.send_window > frame::MAX_WINDOW {
                return Some(self.fail(ErrorCode::FlowControl, "connection window too large"));
            }
            return None;
        }
        if id > self.last_stream {
            return Some(self.fail(ErrorCode::Protocol, "WINDOW_UPDATE on an idle stream"));
        }
        let Some(s) = self.stream(id) else {
            // A closed stream's (§6.9: its credit may still be in flight
            // when it ends; a flood of them is counted).
            return self.crossed(now);
        };
        if increment == 0 {
            return self.fault_stream(id, ErrorCode::Protocol, now);
        }
        s.send_window += increment as i64;
        if s.send_window > frame::MAX_WINDOW {
            return self.fault_stream(id, ErrorCode::FlowControl, now);
        }
        None
    }

    /// A connection error (§5.4.1): GOAWAY, then nothing more is read.
    fn fail<'a>(&mut self, code: ErrorCode, why: &'static str) -> Event<'a> {
        if self.phase != Phase::Failed {
            frame::write_goaway(&mut self.out, self.last_stream, code, why.as_bytes());
            self.phase = Phase::Failed;
            self.failure = Some(why);
            self.streams.clear();
        }
        Event::Close
    }

    /// A stream error the client caused (§5.4.2). Counted with resets:
    /// a client can open streams and make us reset them as cheaply as
    /// it can cancel them ("MadeYouReset", CVE-2025-8671).
    fn fault_stream<'a>(&mut self, id: u32, code: ErrorCode, now: Instant) -> Option<Event<'a>> {
        if let Some(ev) = self.spend_reset(now) {
            return Some(ev);
        }
        self.reset_stream(id, code)
    }

    /// A stream error (§5.4.2): RST_STREAM; the application hears of it
    /// if the stream was open.
    fn reset_stream<'a>(&mut self, id: u32, code: ErrorCode) -> Option<Event<'a>> {
        frame::write_rst(&mut self.out, id, code);
        self.reset_lately[self.reset_next] = id;
        self.reset_next = (self.reset_next + 1) % self.reset_lately.len();
        let open = self.streams.iter().any(|s| s.id == id);
        self.remove(id);
        open.then_some(Event::Reset { stream: id })
    }
}
