//! HTTP/2 connections in the worker (feature `http2`): a plain
//! connection whose first bytes are the HTTP/2 preface (`[http2]
//! cleartext`) becomes an h2c session; its frames go through
//! `crate::h2::Conn`, each request through the same router as HTTP/1.1,
//! and each answer back as HEADERS and DATA frames within the client's
//! windows, the smallest answer first. File ranges leave by `sendfile`
//! behind their 9-byte frame headers (or are copied, small ones and
//! with `[static] sendfile = false`), so the output queue holds frame
//! headers and ranges, never a copy of a large file.
//!
//! CGI programs answer streams as they answer HTTP/1.1 requests, as
//! producers (`worker/pipe.rs`, `worker/produced.rs`; a body of unknown
//! length is held whole first, as over HTTP/1.1); an `nph-` program's
//! own HTTP/1.1 response is read into a head and a body like any
//! other's. Their output, embedded handlers' bodies in pieces and later
//! answers (and so servlets' streamed writes) go as DATA frames as they
//! come (`worker/produced.rs`, through `server::h2::sink`). A `[[throttle]]` rule paces the frames of the
//! streams it covers, never the connection's other streams; its
//! `connection_rate` is shared by the connection's streams it covers.
//! A password check runs off the loop as for
//! HTTP/1.1, the request's body held meanwhile within its window.

use crate::ascii::IgnoreCase;
use std::collections::VecDeque;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::clock::Clock;
use super::counting::Counts;
use super::dispatch::{answering, request_record};
use super::pipe::NoRoom;
use super::timers::Timers;
use super::{access_log, Request, Worker, OUT_KEEP, SCRATCH_KEEP};
use crate::access::throttle::Throttle;
use crate::config::{Level, SiteConfig};
use crate::h2::frame::HEAD_LEN;
use crate::h2::{self as proto, ErrorCode, Event as H2Event};
use crate::handlers::file_cache::SMALL_FILE;
use crate::handlers::{Body, Plan, Seg, Source};
use crate::http::parse::BodyFraming;
use crate::http::request::OwnedRequest;
use crate::http::Status;
use crate::log::{Draft, Logger};
use crate::server::conn::{Conn, Proto};
use crate::server::drain::Drain;
use crate::server::h1::{self, State, OUTPUT_CAP};
pub(super) use crate::server::h2::opening::Opening;
use crate::server::h2::opening::{opening, prior_knowledge};
use crate::server::h2::{request, Answer, Piece, Session};
use crate::server::transport::Out;
use crate::sys::interleave::{read_behind_prefixes, MAX_PIECES};
use crate::sys::mapped::{self, Mapped};

mod body;
pub(super) mod streams;

/// Most of a file's body framed for a stream at once (read in one call
/// behind its frames' headers).
const FILE_BATCH: usize = 256 * 1024;

/// Streams of one connection that may be under way at once whatever the
/// worker's load (see [`Worker::crowded`]): a browser's first burst
/// of a page's assets gets this many answered while a crowd is served.
pub(super) const FAIR_SHARE: usize = 8;

/// Whether plain connection `c` is fresh for [`opening`]: it has served
/// no request and is not reading one beyond its head.
fn fresh(c: &Conn) -> bool {
    let head = c
        .h1()
        .is_some_and(|h| matches!(h.state(), State::Idle | State::Head));
    c.life.served() == 0 && head
}

impl Worker {
    /// Whether connection `c` speaks HTTP/2: its client chose `h2` by
    /// ALPN, or `input`, the first bytes of a plain connection, open it
    /// with prior knowledge (RFC 9113 §3.3).
    pub(super) fn h2_opening(&self, c: &Conn, input: &[u8]) -> Opening {
        let t = &c.transport;
        let handshaking = t.deadline().is_some();
        let cleartext = self.settings.cfg.http2.cleartext;
        opening(
            t.alpn_h2(),
            handshaking,
            cleartext,
            t.is_tls(),
            fresh(c),
            input,
        )
    }

    /// The first bytes of plain connection `c` are neither an HTTP/1.x
    /// request line nor the HTTP/2 preface: where it may open as h2c
    /// ([`prior_knowledge`]), a failed preface, and the connection closes
    /// without a word (RFC 9113 §3.4). Whether it was closed so.
    pub(super) fn h2_failed_preface(&mut self, c: &mut Conn) -> bool {
        if !prior_knowledge(
            self.settings.cfg.http2.cleartext,
            c.transport.is_tls(),
            fresh(c),
        ) {
            return false;
        }
        self.client_info(format_args!(
            "client {}: neither an HTTP/1.x request nor the HTTP/2 preface; closed",
            c.peer.ip()
        ));
        c.life.close();
        true
    }

    /// Handles what arrived on HTTP/2 connection `c`; returns the bytes
    /// consumed (a frame not complete yet waits for more).
    pub(super) fn process_h2(&mut self, c: &mut Conn, input: &[u8]) -> usize {
        self.h2_lend(c);
        // (At a reload, the sweep says when; see `Worker::sweep`.)
        if self.drain.mode == Drain::Stop {
            if let Some(s) = c.proto.h2_mut() {
                shut_down(s, c.index, self.clock.now, &mut self.timers);
            }
        }
        // Requests whose password check is done are routed again, and
        // the body that came meanwhile goes where the route says.
        self.take_checked(c);
        let mut pos = 0;
        loop {
            // Reading waits while output does not leave (a client that
            // sends PINGs but reads nothing holds a bounded queue).
            if c.out.unsent() >= OUTPUT_CAP as u64 {
                break;
            }
            let Some(s) = c.proto.h2_mut() else { break };
            let before = pos;
            let event = s.conn.read(input, &mut pos, self.clock.now);
            // (Frames that bring no request on, PING, SETTINGS,
            // WINDOW_UPDATE, PRIORITY and types the protocol ignores, are
            // read on to a stall: they do not restart the connection's
            // timers, or a client that sends them held an idle
            // connection, or a stalled one, for ever.)
            if pos > before && !matches!(event, H2Event::Stall) {
                c.life.touch(self.clock.now);
            }
            match event {
                H2Event::Stall => break,
                H2Event::Close => {
                    let why = s.conn.failure().unwrap_or("error");
                    self.client_info(format_args!(
                        "client {}: HTTP/2 connection closed: {why}",
                        c.peer.ip()
                    ));
                    pos = input.len();
                    break;
                }
                H2Event::Request { stream, end_stream } => {
                    s.body_at = self.clock.now;
                    let mut r = self.pools.lend_request(self.clock.now);
                    self.h2_request(c, &mut r, stream, end_stream);
                    self.pools.take_back_request(r);
                }
                H2Event::Data {
                    stream,
                    data,
                    end_stream,
                    trailers,
                } => {
                    if !data.is_empty() || end_stream {
                        s.body_at = self.clock.now;
                    }
                    // (A producer's input may pass trailers on.)
                    let trailers = trailers.then(|| request_trailers(s));
                    self.h2_data(c, stream, data, end_stream, trailers.as_deref())
                }
                H2Event::Reset { stream } => {
                    if let Some(a) = s.take(stream) {
                        self.h2_forget(c, a);
                    }
                }
                H2Event::GoAway => {}
            }
        }
        self.h2_send(c);
        self.h2_take_back(c);
        pos
    }

    /// A new HTTP/2 session, held to the configuration's limits: one
    /// copy of them for the worker's connections (made again if a reload
    /// changed them), not one each.
    pub(super) fn h2_session(&mut self) -> Box<Session> {
        let mut limits = proto::Limits::from(&self.settings.cfg.http2);
        // RFC 8441: WebSockets over HTTP/2 where a rule takes them.
        limits.connect_protocol = cfg!(feature = "upstreams")
            && SiteConfig::all(&self.settings.cfg)
                .any(|site| site.reverse_proxy.iter().any(|r| r.websocket));
        let limits = match &self.settings.h2_limits {
            Some(l) if **l == limits => Arc::clone(l),
            _ => Arc::clone(self.settings.h2_limits.insert(Arc::new(limits))),
        };
        Box::new(Session::new(limits, self.clock.now))
    }

    /// Request `r`, just read on plain HTTP/1.1 connection `c`, asks to go
    /// on in h2c (`Upgrade: h2c`, RFC 7540 §3.2), and may (TLS, h2c off,
    /// a request body and a stop under way were ruled out by
    /// [`crate::server::h2::upgrade::settings`], which gave its SETTINGS
    /// payload `settings`): `101 Switching Protocols` and our SETTINGS
    /// are queued, the connection speaks HTTP/2 from the next byte on
    /// (the client's preface), after which the request is answered on
    /// stream one. Whether it was taken so; if not (settings or a field
    /// HTTP/2 refuses), the caller answers the request over HTTP/1.1,
    /// the upgrade ignored, as RFC 9110 §7.8 allows.
    pub(super) fn h2c_upgrade(&mut self, c: &mut Conn, r: &Request, settings: &[u8]) -> bool {
        let mut session = self.h2_session();
        let req = &r.req;
        let taken = session.conn.upgrade(settings, self.clock.now, |r| {
            r.field(b":method", req.method_token());
            r.field(b":scheme", b"http");
            if let Some(host) = req.host() {
                r.field(b":authority", host);
            }
            r.field(b":path", req.original_target());
            let mut name = Vec::new();
            for h in req.headers() {
                name.clear();
                name.extend(h.name.iter().map(u8::to_ascii_lowercase));
                // Connection-specific fields go (RFC 9113 §8.2.2); Host
                // became :authority.
                let hop = matches!(
                    &name[..],
                    b"connection"
                        | b"upgrade"
                        | b"http2-settings"
                        | b"keep-alive"
                        | b"proxy-connection"
                        | b"transfer-encoding"
                        | b"host"
                );
                if !hop && (name != b"te" || h.value.eq_ignore_case(b"trailers")) {
                    r.field(&name, h.value);
                }
            }
        });
        match taken {
            Ok(()) => {}
            Err(why) => {
                if self.logger.enabled(Level::Debug) {
                    self.logger.log(
                        Level::Debug,
                        format_args!(
                            "client {}: Upgrade: h2c ignored ({why}); answered over HTTP/1.1",
                            c.peer.ip()
                        ),
                    );
                }
                return false;
            }
        };
        self.lend_out(c);
        c.out.push_bytes(
            b"HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n",
        );
        c.proto = Proto::H2(session);
        self.h2_queue_control(c);
        true
    }

    /// Lends connection `c` the buffers its streams need, from the
    /// worker's spares, if it has none.
    fn h2_lend(&mut self, c: &mut Conn) {
        let Some(s) = c.proto.h2_mut().filter(|s| s.lacks_buffers()) else {
            return;
        };
        let Some(mut spare) = self.pools.lend_h2() else {
            return;
        };
        s.lend(&mut spare);
        if !spare.is_empty() {
            self.pools.take_back_h2(spare);
        }
    }

    /// Takes back, for the next connection, the buffers of `c` if it has
    /// no stream open and nothing under way: an idle connection holds
    /// none (beyond [`SPARES`](super::SPARES) kept, they are freed).
    pub(super) fn h2_take_back(&mut self, c: &mut Conn) {
        let Some(s) = c.proto.h2_mut().filter(|s| !s.holds_no_buffers()) else {
            return;
        };
        let mut spare = Default::default();
        if s.give_back(&mut spare) {
            self.pools.take_back_h2(spare);
        }
    }

    /// A request head arrived on stream `id`: read into `r` (the
    /// buffers lent for it), and answered or held.
    fn h2_request(&mut self, c: &mut Conn, r: &mut Request, id: u32, end_stream: bool) {
        r.scratch.clear();
        if self.crowded(c) {
            let why = NoRoom::Crowded {
                client: c.peer.ip(),
                budget: self.settings.stream_budget,
            };
            self.refuse_stream(c, id, why);
            return;
        }
        let Some(s) = c.proto.h2() else { return };
        let built = request::fill(
            &mut r.req,
            s.conn.request(),
            end_stream,
            &self.settings.limits,
            &mut self.pools.h2_scratch.head,
        );
        let Some(plan) = self.stream_plan(c, r, id, built) else {
            return;
        };
        self.h2_answer(c, r, id, plan, 0);
        self.h2_body_unless_read(c, id, end_stream, r.req.body());
    }

    /// Whether a new stream of `c` (HTTP/2's or HTTP/3's) is to be
    /// refused (HTTP/2's RST_STREAM REFUSED_STREAM, HTTP/3's
    /// H3_REQUEST_REJECTED: a client may send it again) rather than
    /// answered: `c` has [`FAIR_SHARE`] answers under way or more, and
    /// the worker's connections have `stream_budget` (half the process's
    /// descriptors, shared among the workers). Each answer under way may
    /// hold a descriptor (a large file, a program's pipe, an upstream's
    /// socket) until the client's flow-control window lets its last
    /// bytes go, so without this a few connections that open every
    /// stream they may and never open a window would hold every
    /// descriptor the process has until `timeouts.send`: no one else's
    /// connection accepted, no file opened. A connection within its fair
    /// share is answered whatever the load.
    pub(super) fn crowded(&mut self, c: &Conn) -> bool {
        let Some(mine) = c.streams_under_way() else {
            return false;
        };
        if mine < FAIR_SHARE {
            return false;
        }
        // (`c` is out of the slab while it is served: the others are
        // counted, once per connection and pass of the loop.)
        let (now, index) = (self.clock.now, c.index);
        let tally = &mut self.counts.stream_tally;
        if (tally.0, tally.1) != (now, index) {
            let others = (self.conns.iter())
                .filter_map(|c| c.streams_under_way())
                .sum();
            *tally = (now, index, others);
        }
        tally.2 + mine >= self.settings.stream_budget
    }

    /// How request `r` of stream `id` (HTTP/2's or HTTP/3's) is
    /// answered, once `built` from its fields: an error, or what the
    /// router says; `None` if it is held (see [`Worker::route`]).
    pub(super) fn stream_plan(
        &mut self,
        c: &mut Conn,
        r: &mut Request,
        id: u32,
        built: Result<(), crate::http::parse::ParseError>,
    ) -> Option<Plan> {
        // (The largest bound any request may have: the route bounds its
        // own, `Worker::route`.)
        let max = self.settings.body_limits.max_body;
        let seen = match built {
            Ok(()) => self.see_through_proxies(c, &mut r.req),
            Err(_) => Ok(()),
        };
        match built {
            Err(e) => Some(Plan::error(e.status, &mut r.scratch)),
            Ok(()) if seen.is_err() => Some(Plan::error(Status::BAD_REQUEST, &mut r.scratch)),
            // (As HTTP/1.1 refuses a Content-Length over the limit.)
            Ok(()) if matches!(r.req.body(), BodyFraming::Length(n) if n > max) => {
                self.body_too_large(c, &r.req, max);
                Some(Plan::error(Status::CONTENT_TOO_LARGE, &mut r.scratch))
            }
            Ok(()) => self.route(c, r, Some(id), 0, &mut None),
        }
    }

    /// Stream `id` was answered: unless it has no body (`no_body`) or a
    /// process reads it, its body (`framing`: its request's) is not
    /// wanted (a static file, an error answered without it).
    pub(super) fn h2_body_unless_read(
        &mut self,
        c: &mut Conn,
        id: u32,
        no_body: bool,
        framing: BodyFraming,
    ) {
        #[cfg(feature = "http3")]
        if c.speaks_h3() {
            return self.h3_body_unless_read(c, id, no_body, framing);
        }
        // (A request held for its turn takes its body with it.)
        if no_body {
            self.stream_tunnel_ended::<streams::H2>(c, id);
        } else if !self.stream_reads_body::<streams::H2>(c, id) {
            self.h2_refuse_rest(c, id, framing);
        }
    }

    /// Forgets an answer whose stream (or connection) is gone: its log
    /// line says what it sent, and a process still answering is stopped.
    pub(super) fn h2_forget(&mut self, c: &mut Conn, mut a: Answer) {
        if let Some(w) = a.wait.take().and_then(|id| self.exchanges.take_wait(id)) {
            self.abandon_wait(c, Some(a.id), w);
        }
        // (A process or handler that never answered is logged as 499.
        // One that did has its upstream's whole time put in its line,
        // which is why the line is taken only after the run stopped.)
        let drafted = a.log.is_some();
        self.h2_run_abandon(c, &mut a, !drafted);
        let Some((text, draft)) = a.log.take() else {
            return;
        };
        self.lend_out(c);
        let framed = a.body_len - a.queued();
        let end = c.queued_end();
        let (out, log) = (&mut c.out, &mut self.logger);
        access_log::push(out, log, c.sent, end, framed, a.started, |_, buf| {
            buf.extend_from_slice(&text);
            draft
        });
    }

    /// Answers stream `id` of `c` with `plan` (for request `r`, which
    /// `redirects` CGI local redirects led to).
    pub(super) fn h2_answer(
        &mut self,
        c: &mut Conn,
        r: &mut Request,
        id: u32,
        plan: Plan,
        redirects: u8,
    ) {
        #[cfg(feature = "http3")]
        if c.speaks_h3() {
            return self.h3_answer(c, r, id, plan, redirects);
        }
        let Some((answer, head)) = self.stream_ready::<streams::H2>(c, r, id, plan, redirects)
        else {
            return;
        };
        let Some(s) = c.proto.h2_mut() else { return };
        let end = answer.pieces.is_empty();
        let stamp = answering(
            &self.settings,
            &self.clock,
            self.drain.mode,
            (&self.listen, &c.transport),
        )
        .stamp;
        if !s.send_head(id, end, &head, &stamp, &mut self.pools.h2_scratch) {
            return;
        }
        if end {
            self.h2_ended(c, answer);
        } else {
            s.conn.set_remaining(id, answer.body_len);
            s.answers.push(answer);
        }
        r.scratch.trim(SCRATCH_KEEP);
    }

    /// The rates that pace an answer on `c` to a request to `site` for
    /// `path` (the path answered), if a `[[throttle]]` rule covers it:
    /// the rule's `rate` (all clients) and the connection's
    /// `connection_rate` for that rule, which every stream of the
    /// connection the rule covers shares. Only the stream's own frames
    /// wait for them.
    pub(in crate::server::worker) fn h2_throttle(
        &mut self,
        c: &mut Conn,
        site: usize,
        path: &[u8],
    ) -> Option<Box<Throttle>> {
        let (rule, connection_rate, shared) = self.matching_throttle(site, path)?;
        let now = self.clock.now;
        let own = match connection_rate {
            #[cfg(feature = "http3")]
            Some(r) if c.speaks_h3() => Some(c.h3_mut()?.pacing.connection_rate(rule, r, now)),
            Some(r) => Some(c.proto.h2_mut()?.connection_rate(rule, r, now)),
            None => None,
        };
        Some(Box::new(Throttle::new(shared, own)))
    }

    /// Moves forward, with `pump`, every answer on `c`'s streams that
    /// `has` a producer (a process, a handler's stream): each is taken
    /// out, pumped, and put back unless it ended, the scheduler told how
    /// much of it is buffered.
    pub(in crate::server::worker) fn h2_pump_each(
        &mut self,
        c: &mut Conn,
        has: fn(&Answer) -> bool,
        pump: fn(&mut Worker, &mut Conn, Answer) -> Option<Answer>,
    ) {
        let Some(s) = c.proto.h2() else { return };
        if !s.answers.iter().any(has) {
            return;
        }
        let mut last = None;
        while let Some(id) = c.proto.h2().and_then(|s| s.next_answer(last, has)) {
            last = Some(id);
            let Some(a) = c.proto.h2_mut().and_then(|s| s.take(id)) else {
                continue;
            };
            if let Some(a) = pump(self, c, a) {
                let buffered = a.queued();
                if let Some(s) = c.proto.h2_mut() {
                    s.conn.set_remaining(id, buffered);
                    s.answers.push(a);
                }
            }
        }
    }

    /// An answer's last frame is queued: its log line waits for it to leave.
    pub(super) fn h2_ended(&mut self, c: &mut Conn, mut a: Answer) {
        self.lend_out(c);
        if let Some(s) = c.proto.h2_mut() {
            let start = c.out.buf_mut().len();
            s.conn.drain_out(c.out.buf_mut());
            c.out.commit(start);
        }
        if let Some((text, draft)) = &a.log {
            let end = c.queued_end();
            let (out, log, body) = (&mut c.out, &mut self.logger, a.body_len);
            access_log::push(out, log, c.sent, end, body, a.started, |_, buf| {
                buf.extend_from_slice(text);
                *draft
            });
        }
        if let Some(s) = c.proto.h2_mut() {
            s.recycle(&mut a);
        }
    }

    /// Frames the answers' bodies as the windows allow, smallest first,
    /// until the output queue holds enough for now.
    pub(super) fn h2_send(&mut self, c: &mut Conn) {
        let index = c.index;
        self.lend_out(c);
        self.h2_pump_runs(c);
        // Throttled answers over their rates wait (paused) for the
        // earliest moment one may go on; the others are not held up.
        let mut wake: Option<Instant> = None;
        // (Whether any answer's bytes were framed: the client let some
        // through the connection's window.)
        let mut moved = false;
        if let Some(s) = c.proto.h2_mut() {
            s.conn.resume_all();
        }
        loop {
            if c.out.unsent() >= OUTPUT_CAP as u64 {
                break;
            }
            let Some(s) = c.proto.h2_mut() else { return };
            let Some(id) = s.conn.next_stream() else {
                break;
            };
            let frame = s.conn.sendable(id);
            let Some(a) = s.answers.iter_mut().find(|a| a.id == id) else {
                s.conn.reset(id, ErrorCode::Internal);
                continue;
            };
            let last = a.pieces.len() == 1;
            let Some(piece) = a.pieces.front_mut() else {
                s.conn.reset(id, ErrorCode::Internal);
                continue;
            };
            // A file's bytes go by `sendfile` one large frame at a time
            // where the client takes large frames, else they are read
            // behind their frames' headers, many frames at once.
            let zero_copy = self.settings.cfg.site.static_files.sendfile;
            let sendfile = frame as u64 > SMALL_FILE && zero_copy;
            // Else, on plain TCP, they are sent from a mapping of the file
            // behind their frames' headers (`sys::mapped`: one copy, not
            // two); over TLS they are read to be sealed.
            let map = zero_copy && !sendfile && !c.transport.is_tls();
            let batch = matches!(piece, Piece::File(..)) && !sendfile;
            // (A batch fills the output queue up to its cap, not past it
            // by more than a frame: its buffer, compacted as it fills,
            // stays within the size a worker keeps for reuse.)
            let queue_room = OUTPUT_CAP.saturating_sub(c.out.unsent() as usize);
            let room = match batch {
                true => s
                    .conn
                    .window_room(id)
                    .min(FILE_BATCH)
                    .min(queue_room)
                    .min(s.conn.max_frame() * MAX_PIECES)
                    .max(frame.min(FILE_BATCH)),
                false => frame,
            };
            let mut n = (piece.len() as usize).min(room);
            if let (true, Piece::File(_, offset, _)) = (map, &piece) {
                // (A batch within one mapping.)
                n = n.min(mapped::room(*offset) as usize);
            }
            if let Piece::File(file, offset, len) = &*piece {
                // (Not before its bytes are read in, off the loop, if they
                // are not cached: the other answers go on meanwhile.)
                match self.warm(index, file, &mut a.warmth, *offset, *len) {
                    0 => {
                        s.conn.pause(id);
                        continue;
                    }
                    ready => n = n.min(ready),
                }
            }
            if let Some(t) = &a.throttle {
                match t.take(self.clock.now, n) {
                    Ok(allowed) => n = allowed,
                    Err(when) => {
                        s.conn.pause(id);
                        wake = Some(wake.map_or(when, |w| w.min(when)));
                        continue;
                    }
                }
            }
            // (A process's answer ends when it has, and not if short.)
            // (Trailers end it instead, after the last DATA.)
            let end =
                last && n as u64 == piece.len() && !a.open && !a.broken && a.trailers.is_empty();
            let sent = match piece {
                Piece::Static(b, at) => {
                    frame_bytes(&mut s.conn, &mut c.out, id, &b[*at..*at + n], end);
                    *at += n;
                    Ok(())
                }
                Piece::Bytes(b, at) => {
                    frame_bytes(&mut s.conn, &mut c.out, id, &b[*at..*at + n], end);
                    *at += n;
                    Ok(())
                }
                Piece::Mem(m, at, len) => {
                    frame_bytes(&mut s.conn, &mut c.out, id, &m[*at..*at + n], end);
                    *at += n;
                    *len -= n;
                    Ok(())
                }
                Piece::File(file, offset, len) => {
                    // The frames' headers, in order (one with `sendfile`).
                    let mut heads = [([0u8; HEAD_LEN], 0usize); MAX_PIECES];
                    let (mut k, mut left, max) = (0, n, frame.max(1));
                    while left > 0 && k < MAX_PIECES {
                        let f = left.min(max);
                        left -= f;
                        heads[k] = (s.conn.data_head(id, f, end && left == 0), f);
                        k += 1;
                    }
                    // The frames queued before these go first.
                    let copy = if map { 0 } else { n };
                    make_room(&mut c.out, copy + HEAD_LEN * k + s.conn.out().len());
                    let mut start = c.out.buf_mut().len();
                    s.conn.drain_out(c.out.buf_mut());
                    let mapped = match map {
                        true => Mapped::new(file, *offset, n).ok(),
                        false => None,
                    };
                    let copied = if sendfile {
                        c.out.buf_mut().extend_from_slice(&heads[0].0);
                        Ok(())
                    } else if let Some(m) = mapped {
                        c.out.commit(start);
                        let mut at = *offset;
                        for (head, f) in &heads[..k] {
                            c.out.push_bytes(head);
                            c.out.push_mapped(m.part(at, *f));
                            at += *f as u64;
                        }
                        start = c.out.buf_mut().len();
                        Ok(())
                    } else {
                        let mut pieces = [(&[][..], 0usize); MAX_PIECES];
                        for (p, (h, f)) in pieces.iter_mut().zip(&heads[..k]) {
                            *p = (&h[..], *f);
                        }
                        // On an error nothing of these frames is queued:
                        // never a frame of made-up bytes; the connection
                        // ends (below).
                        read_behind_prefixes(c.out.buf_mut(), file, *offset, &pieces[..k])
                    };
                    c.out.commit(start);
                    if sendfile {
                        c.out.push_file(Rc::clone(file), *offset, n as u64);
                    }
                    *offset += n as u64;
                    *len -= n as u64;
                    copied
                }
            };
            if let Err(e) = sent {
                // The frame's header promised bytes that cannot be read:
                // the connection cannot go on.
                self.logger.log(
                    Level::Error,
                    format_args!("reading a file for HTTP/2 failed: {e}"),
                );
                let gone = c.proto.h2_mut().map(|s| std::mem::take(&mut s.answers));
                for a in gone.into_iter().flatten() {
                    self.h2_forget(c, a);
                }
                // (The session goes: nothing more of it may be sent.)
                c.proto = Proto::H1(h1::Conn::new());
                c.life.close();
                return;
            }
            if n > 0 {
                moved = true;
                a.window_since = None;
            }
            if piece.is_empty() {
                self.pools.h2_scratch.give_back(a.piece_sent());
            }
            let ran_out = a.pieces.is_empty() && !a.open;
            if end {
                if let Some(a) = s.take(id) {
                    self.h2_ended(c, a);
                }
            } else if ran_out {
                // A produced answer that ended (reset if it stopped short).
                if let Some(a) = s.take(id) {
                    self.h2_finish_stream(c, a);
                }
            }
        }
        if let Some(s) = c.proto.h2_mut() {
            if wake.is_some_and(|when| s.throttle_wake(when, self.clock.now)) {
                self.timers.wake_at(wake.unwrap_or(self.clock.now), c.index);
            }
            let start = c.out.buf_mut().len();
            s.conn.drain_out(c.out.buf_mut());
            c.out.commit(start);
            // An answer whose bytes wait for a window the client keeps
            // shut is timed out (`timeouts.send`, from the last of its
            // bytes let through: see `Worker::h2_send_timeouts`), whatever
            // else the client sends meanwhile (PINGs, SETTINGS: their
            // acks are no progress of the answer). One waiting for the
            // connection's window is, if no other answer got any of it.
            let now = self.clock.now;
            for a in &mut s.answers {
                if !s.conn.waits_for_window(a.id, !moved) {
                    a.window_since = None;
                } else if a.window_since.is_none() {
                    a.window_since = Some(now);
                }
            }
        }
    }

    /// The answers on `c` that waited `send` (`timeouts.send`) for a
    /// window the client kept shut, none of their bytes let through
    /// (what else it sent meanwhile, PINGs or SETTINGS, does not count):
    /// their streams are reset, RST_STREAM CANCEL (RFC 9113 §6.4, §7:
    /// the stream is no longer wanted), and each answer is logged with
    /// what it sent, its file or program let go of, as nginx resets a
    /// stream at its `send_timeout`.
    /// A connection left with no stream open then closes gracefully
    /// (GOAWAY NO_ERROR naming the last stream, close_notify over TLS:
    /// [`Worker::close_gracefully`]), as the docs say of a client that
    /// never opens its window; one with other streams goes on. Whether
    /// any was reset (the caller drives `c` then).
    pub(in crate::server::worker) fn h2_send_timeouts(
        &mut self,
        c: &mut Conn,
        send: Duration,
    ) -> bool {
        let now = self.clock.now;
        let late = |a: &Answer| {
            a.window_since
                .is_some_and(|t| now.saturating_duration_since(t) >= send)
        };
        let mut any = false;
        while let Some(id) = c.proto.h2().and_then(|s| s.next_answer(None, late)) {
            let Some(a) = c.proto.h2_mut().and_then(|s| {
                s.conn.reset(id, ErrorCode::Cancel);
                s.take(id)
            }) else {
                break;
            };
            if self.logger.enabled(Level::Info) {
                self.logger.log(
                    Level::Info,
                    format_args!(
                        "client {}: HTTP/2 stream {id} let nothing of its answer through its \
                         window for timeouts.send; reset (CANCEL)",
                        c.peer.ip()
                    ),
                );
            }
            self.h2_forget(c, a);
            any = true;
        }
        let idle = c
            .proto
            .h2()
            .is_some_and(|s| s.conn.open_streams() == 0 && s.answers.is_empty());
        if any && idle {
            Self::close_gracefully(c);
        }
        any
    }

    /// Moves the frames the protocol has queued by itself (control
    /// frames, a GOAWAY) to the output queue; whether there were any.
    pub(super) fn h2_queue_control(&mut self, c: &mut Conn) -> bool {
        let Some(s) = c.proto.h2_mut() else {
            return false;
        };
        // (The final GOAWAY, if its wait for the client is over.)
        s.conn.goaway_due(self.clock.now);
        if s.conn.out().is_empty() {
            return false;
        }
        self.lend_out(c);
        if let Some(s) = c.proto.h2_mut() {
            let start = c.out.buf_mut().len();
            s.conn.drain_out(c.out.buf_mut());
            c.out.commit(start);
        }
        true
    }

    /// Whether an HTTP/2 connection is done: failed, or winding down
    /// with every stream answered.
    pub(super) fn h2_done(&self, c: &Conn) -> bool {
        c.proto
            .h2()
            .is_some_and(|s| s.conn.failed() || s.conn.finished())
    }
}

/// The fields of the trailer block that just ended a request body on
/// session `s` (RFC 9113 §8.1), those that may pass (see
/// [`crate::http::trailers`]), as field lines.
fn request_trailers(s: &Session) -> Vec<u8> {
    let mut lines = Vec::new();
    for (name, value) in s.conn.request().fields() {
        if crate::http::trailers::allowed(name) {
            for part in [name, b": ", value, b"\r\n"] {
                lines.extend_from_slice(part);
            }
        }
    }
    lines
}

/// Winding down: the first GOAWAY of session `s`, connection `index`'s
/// (see [`proto::Conn::shut_down`]; once), and a timer for its final one.
pub(super) fn shut_down(s: &mut Session, index: usize, now: Instant, timers: &mut Timers) {
    if s.conn.shutting_down() {
        return;
    }
    s.conn.shut_down(now);
    if let Some(due) = s.conn.goaway_due(now) {
        timers.wake_at(due, index);
    }
}

/// Makes room in `out` for `extra` more bytes: what was written already
/// leaves the front of its buffer first; if that is not enough, the
/// buffer grows to the size a worker keeps for reuse ([`OUT_KEEP`]) at
/// once, not by doubling past it (a queue that outgrows it is freed,
/// and the next answer would allocate another).
fn make_room(out: &mut Out, extra: usize) {
    out.make_room(extra);
    let buf = out.buf_mut();
    if buf.len() + extra > buf.capacity() {
        buf.reserve_exact(extra.max(OUT_KEEP.saturating_sub(buf.len())));
    }
}

/// Queues `bytes` as one DATA frame of stream `id` straight into the
/// output queue `out`, after the frames the protocol queued before it
/// (heads, control frames), which thus keep their order.
fn frame_bytes(conn: &mut proto::Conn, out: &mut Out, id: u32, bytes: &[u8], end: bool) {
    let head = conn.data_head(id, bytes.len(), end);
    make_room(out, HEAD_LEN + bytes.len() + conn.out().len());
    let start = out.buf_mut().len();
    conn.drain_out(out.buf_mut());
    out.buf_mut().extend_from_slice(&head);
    out.buf_mut().extend_from_slice(bytes);
    out.commit(start);
}

/// Puts the pieces of a body, in order, into `v`.
pub(super) fn fill_pieces(v: &mut VecDeque<Piece>, body: Body, s: &crate::handlers::Scratch) {
    let from = |src: &Source, offset: u64, len: u64, v: &mut VecDeque<Piece>| match src {
        Source::Mem(m) => v.push_back(Piece::Mem(Arc::clone(m), offset as usize, len as usize)),
        Source::File(f) => v.push_back(Piece::File(Rc::clone(f), offset, len)),
    };
    match body {
        Body::Empty | Body::Pipe(_) | Body::Stream(_) => {}
        #[cfg(feature = "upstreams")]
        Body::Upstream(_) | Body::Fastcgi(_) => {}
        Body::Static(b) => v.push_back(Piece::Static(b, 0)),
        Body::Buffer => v.push_back(Piece::Bytes(s.body.clone(), 0)),
        Body::File { src, offset, len } => from(&src, offset, len, v),
        Body::Multipart { src } => {
            for seg in &s.segs {
                match *seg {
                    Seg::Bytes { start, len } => {
                        v.push_back(Piece::Bytes(s.body[start..start + len].to_vec(), 0))
                    }
                    Seg::File { offset, len } => from(&src, offset, len, v),
                }
            }
        }
    }
    v.retain(|p| !p.is_empty());
}

/// Counts the answer to `req` whose head (`status`) went out on `c` now
/// (timed from `routed`, when the stream's request was routed), and
/// drafts its access-log line in `text` (empty; finished when its stream
/// ends). (Of the
/// worker's parts, not of the worker: the answer's run is borrowed from
/// its exchanges meanwhile.)
pub(in crate::server::worker) fn head_log(
    (counts, clock, routed): (&Counts, &Clock, Instant),
    logger: &mut Logger,
    c: &Conn,
    req: &OwnedRequest,
    (status, upstream): (u16, Option<crate::log::Upstream<'_>>),
    mut text: Vec<u8>,
) -> Option<(Vec<u8>, Draft)> {
    counts.answered(req, status, routed, clock.now);
    logger.access_enabled().then(|| {
        let mut rec = request_record(c, clock.wall(), req, status);
        rec.upstream = upstream;
        let draft = logger.draft(&rec, &mut text);
        (text, draft)
    })
}
