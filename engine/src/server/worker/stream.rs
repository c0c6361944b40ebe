//! Streamed and later answers of embedded handlers in the event loop
//! (see [`crate::handlers::stream`]): a body produced in pieces on this
//! thread is asked for more only while the connection's output has room;
//! an answer given later by another thread is taken when that thread
//! wakes the worker (the connection comes through the worker's channel).
//! Either is framed as a pipe's output is: by its length, chunked
//! (HTTP/1.1) or by closing (HTTP/1.0).

use std::fs::File;
use std::rc::Rc;
use std::sync::Arc;

#[cfg(feature = "http2")]
mod h2;
#[cfg(feature = "http2")]
pub use self::h2::HandlerBody;

use super::{answering, Worker};
use crate::config::Level;
use crate::handlers::compress::Squeeze;
use crate::handlers::pipe::ReplyHead;
use crate::handlers::stream::{Channel, Source, Streamed};
use crate::http::request::Field;
use crate::http::response::Encoder;
use crate::http::{Method, Status, Version};
use crate::server::conn::Conn;
use crate::server::h1::{stream_head, State, StreamFor};
use crate::server::waits::Held;

/// Output buffered for the client before the producer is asked for more.
const OUT_CAP: usize = 256 * 1024;
/// What a local stream is asked for at a time.
const PIECE: usize = 64 * 1024;

/// A handler's answer being streamed on a connection.
#[derive(Debug)]
pub struct StreamRun {
    source: Source,
    /// The head, until it is written (a later answer's arrives with it).
    head: Option<ReplyHead>,
    /// Header lines set before the answer was deferred, and `[[headers]]`
    /// rules: sent with the later answer's head.
    early_headers: Vec<u8>,
    /// Frames the body once the head is written.
    encoder: Option<Encoder>,
    /// Compresses the body on its way (`[compress]`), when it is.
    squeeze: Squeeze,
    /// The connection's byte position where the body begins.
    body_from: u64,
    status: u16,
    wanted: bool,
    keep: bool,
    version: Version,
    head_only: bool,
    /// The request (for the log).
    request: Held,
    /// Names the handler in log lines.
    label: String,
    /// The response must not be reused after this (cut short).
    broken: bool,
}

impl Worker {
    /// Starts answering the current request on `c` with `streamed`:
    /// `plan` is the handler's status (for a local stream), its header
    /// lines are in the scratch buffer.
    pub(super) fn start_stream(&mut self, c: &mut Conn, plan_status: Status, streamed: Streamed) {
        let req = &self.current.req;
        let (head, early_headers) =
            first_head(&streamed, plan_status, &self.current.scratch.headers);
        let run = StreamRun {
            source: streamed.source,
            head,
            early_headers,
            encoder: None,
            squeeze: Squeeze::default(),
            body_from: c.queued_end(),
            status: 0,
            wanted: req.keep_alive(),
            keep: false,
            version: req.version(),
            head_only: req.method() == Method::Head,
            request: self.hold(0),
            label: streamed.label,
            broken: false,
        };
        c.h1.set(State::Streaming(Box::new(run)), self.clock.now);
    }

    /// Takes the connections whose later answers have moved, and drives
    /// each.
    pub(super) fn take_streams(&mut self) {
        while let Some(idx) = self.wakeups.next_stream() {
            let streaming = matches!(self.conns.get(idx), Some(c) if matches!(c.h1.state(), State::Streaming(_)) || c.speaks_h2());
            if streaming {
                self.on_event(idx, false);
            }
        }
    }

    /// Moves a streamed answer forward while the client keeps up.
    /// Returns whether anything moved.
    pub(super) fn pump_stream(&mut self, c: &mut Conn) -> bool {
        let mut moved = false;
        while c.out.buffered() < OUT_CAP {
            let Some(s) = c.h1.stream() else { break };
            let local = matches!(s.source, Source::Local(_));
            let no_head = s.head.is_none() && s.encoder.is_none();
            let step = step(&mut s.source, no_head, &mut self.pools.pipe_buf);
            match step {
                Step::Nothing => break,
                Step::Data(head, data, end) => {
                    moved = true;
                    if let Some(h) = head {
                        s.head = Some(h);
                    }
                    self.stream_output(c, &data, true);
                    if local {
                        self.pools.pipe_buf = data;
                    }
                    if end {
                        self.stream_done(c);
                        break;
                    }
                }
                Step::File(head, file, len) => {
                    moved = true;
                    if let Some(h) = head {
                        s.head = Some(h);
                    }
                    // The head goes out now; the file follows it in the
                    // queue, sent as static files are.
                    // (Never compressed: it goes by sendfile as it is.)
                    self.stream_output(c, &[], false);
                    if let Some(s) = c.h1.stream() {
                        if let Some(Encoder::Length(left)) = s.encoder.as_mut() {
                            let n = len.min(*left);
                            c.out.push_file(Rc::new(file), 0, n);
                            *left -= n;
                        }
                    }
                    self.stream_done(c);
                    break;
                }
                Step::Fail(why) => {
                    moved = true;
                    self.logger
                        .log(Level::Error, format_args!("{}: {why}", s.label));
                    self.stream_fail(c, Status::INTERNAL_SERVER_ERROR);
                    break;
                }
            }
        }
        if moved && c.h1.stream().is_some() {
            c.h1.touch(self.clock.now);
        }
        moved
    }

    /// Writes the head if it is due (compressed if `may_compress` and
    /// `[compress]` says so), then `data` framed.
    fn stream_output(&mut self, c: &mut Conn, data: &[u8], may_compress: bool) {
        let served = c.h1.served();
        let Some(s) = c.h1.stream() else { return };
        let start = c.out.buf_mut().len();
        if s.encoder.is_none() {
            let Some(mut head) = s.head.take() else {
                return;
            };
            if !s.early_headers.is_empty() {
                let mut lines = std::mem::take(&mut s.early_headers);
                lines.extend_from_slice(&head.headers);
                head.headers = lines;
            }
            if may_compress {
                let accept = s.request.req.field(Field::AcceptEncoding);
                let cfg = &self.settings.cfg.site(s.request.req.site()).compress;
                s.squeeze = Squeeze::start(cfg, accept, &mut head, s.head_only);
            }
            let to = StreamFor {
                served,
                wanted: s.wanted,
                version: s.version,
                head_only: s.head_only,
            };
            let cx = answering(&self.settings, &self.clock, self.drain.mode);
            let stream = stream_head(&head, to, c.out.buf_mut(), &cx);
            s.keep = stream.keep;
            s.status = head.status;
            s.body_from = c.sent + c.out.unsent() + (c.out.buf_mut().len() - start) as u64;
            s.encoder = Some(stream.encoder);
        }
        if let Some(e) = s.encoder.as_mut() {
            e.encode(s.squeeze.squeeze(data), c.out.buf_mut());
        }
        c.out.commit(start);
    }

    /// The body is complete: end it (a short one is cut).
    fn stream_done(&mut self, c: &mut Conn) {
        let Some(s) = c.h1.stream() else { return };
        if let Some(e) = s.encoder.as_mut() {
            if !super::pipe::finish_body(&mut s.squeeze, e, &mut c.out, &mut self.logger, &s.label)
            {
                s.broken = true;
            }
        }
        self.stream_end(c);
    }

    /// Answers `status` if nothing was sent yet (else cuts the answer
    /// short), and ends the stream.
    pub(super) fn stream_fail(&mut self, c: &mut Conn, status: Status) {
        let Some(s) = c.h1.stream() else { return };
        if let Source::Later(ch) = &s.source {
            ch.abandon();
        }
        if s.encoder.is_some() {
            s.broken = true;
        } else {
            s.keep = false;
            s.status = status.0;
            let (head_only, site) = (s.head_only, s.request.req.site());
            let body_from = self.fail_unstarted(c, status, head_only, site);
            if let Some(s) = c.h1.stream() {
                s.body_from = body_from;
            }
        }
        self.stream_end(c);
    }

    /// An answer that made no progress for `timeouts.handler`.
    pub(super) fn stream_timeout(&mut self, c: &mut Conn) {
        if let Some(s) = c.h1.stream() {
            self.logger.log(
                Level::Error,
                format_args!("{}: no progress for timeouts.handler; given up", s.label),
            );
        }
        self.stream_fail(c, Status::GATEWAY_TIMEOUT);
    }

    /// The connection goes away: the answering thread is told.
    pub(super) fn stream_abandon(&mut self, c: &mut Conn) {
        if let Some(s) = c.h1.stream() {
            if let Source::Later(ch) = &s.source {
                ch.abandon();
            }
            s.broken = true;
            if s.encoder.is_none() {
                s.status = 499;
            }
        }
        self.stream_end(c);
    }

    /// Logs the request and lets the connection go on (or close).
    fn stream_end(&mut self, c: &mut Conn) {
        let Some(s) = c.h1.end_stream(self.clock.now) else {
            return;
        };
        self.log_produced(c, &s.request, s.status, s.body_from);
        if s.broken || !s.keep {
            c.h1.close();
        }
    }
}

/// What a stream gave this time.
enum Step {
    /// Nothing now (a later answer not yet given).
    Nothing,
    /// A head (a later answer's first), body bytes, and whether the body
    /// is complete.
    Data(Option<ReplyHead>, Vec<u8>, bool),
    /// A later answer's head (unless taken before) and its whole body as
    /// a file of this length ([`crate::handlers::stream::Later::send_file`]).
    File(Option<ReplyHead>, File, u64),
    /// The answer failed: the reason, for the log.
    Fail(String),
}

/// A streamed answer's head and early header lines as its handler left
/// them (`status`, and its header lines `headers`): a body in pieces has
/// its head now, with the length it gave; a later answer's head comes
/// with the answer, and the lines set before it was deferred go with it.
fn first_head(streamed: &Streamed, status: Status, headers: &[u8]) -> (Option<ReplyHead>, Vec<u8>) {
    match streamed.source {
        Source::Local(_) => {
            let head = ReplyHead {
                len: 0,
                status: status.0,
                reason: None,
                headers: headers.to_vec(),
                content_length: streamed.length,
                chunked: false,
            };
            (Some(head), Vec::new())
        }
        Source::Later(_) => (None, headers.to_vec()),
    }
}

/// What `source` gives now: a local body is asked for its next piece,
/// written into `buf` (the worker's spare buffer, handed on as the
/// step's data: give it back when done with it); a later answer's
/// thread gives what it has (`no_head`: its head has not come yet).
fn step(source: &mut Source, no_head: bool, buf: &mut Vec<u8>) -> Step {
    match source {
        Source::Later(ch) => take_later(ch, no_head),
        Source::Local(body) => {
            buf.clear();
            match body.fill(buf, PIECE) {
                Ok(true) if buf.is_empty() => {
                    Step::Fail("produced nothing but said more follows".into())
                }
                Ok(more) => Step::Data(None, std::mem::take(buf), !more),
                Err(why) => Step::Fail(why),
            }
        }
    }
}

/// Takes what a later answer's thread has given; `no_head` says its head
/// has not come yet.
fn take_later(ch: &Arc<Channel>, no_head: bool) -> Step {
    let given = ch.take();
    match (given.head, given.end) {
        (None, Some(false)) if no_head => {
            Step::Fail("the later answer was dropped without an answer".into())
        }
        (_, Some(false)) => Step::Fail("the later answer was dropped unfinished".into()),
        (head, _) if given.file.is_some() => match given.file {
            Some((file, len)) => Step::File(head, file, len),
            None => Step::Nothing,
        },
        (None, None) if given.data.is_empty() => Step::Nothing,
        (head, end) => Step::Data(head, given.data, end == Some(true)),
    }
}
