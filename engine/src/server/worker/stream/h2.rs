//! Streamed and later answers of embedded handlers (and so Lua
//! servlets' streamed writes) on HTTP/2 streams: the head goes as
//! HEADERS once it is known (at once for a body in pieces; when the
//! answering thread gives it, for a later answer), and the body as DATA
//! frames within the windows. A body produced on the worker thread is
//! asked for more only while less than [`STREAM_OUT_CAP`] of it waits
//! for a window, so a client that reads slowly holds a bounded amount;
//! a later answer is taken when its thread wakes the worker. HTTP/2
//! frames the body itself: no chunked coding, and the connection stays
//! open. A body that ends short of (or goes past) the length the
//! handler gave resets the stream (INTERNAL_ERROR) instead of ending
//! it, so the client knows; an answer that fails before its head is
//! answered 500 (504 after `timeouts.handler` without progress).

use std::rc::Rc;

use super::{first_head, step, Step};
use crate::config::Level;
use crate::handlers::compress::Squeeze;
use crate::handlers::pipe::ReplyHead;
use crate::handlers::stream::{Source, Streamed};
use crate::http::request::Field;
use crate::http::{Method, Status};
use crate::server::conn::Conn;
use crate::server::h2::{Answer, Piece};
use crate::server::waits::Held;
use crate::server::worker::Worker;

/// A stream's body buffered for its window before its producer is
/// asked for more.
const STREAM_OUT_CAP: u64 = 64 * 1024;

/// What a handler's producer gave this time (see [`Step`]).
enum Gave {
    /// Body bytes, and whether the body is complete.
    Bytes(Vec<u8>, bool),
    /// The whole body as a file of this length.
    File(std::fs::File, u64),
}

/// A handler's body in pieces, or its later answer, on an HTTP/2 stream.
#[derive(Debug)]
pub struct HandlerBody {
    source: Source,
    /// The head, until it is sent (a later answer's arrives with it).
    head: Option<ReplyHead>,
    /// Header lines set before the answer was deferred, and
    /// `[[headers]]` rules: sent with the later answer's head.
    early_headers: Vec<u8>,
    /// The head has been sent.
    started: bool,
    /// The request (for the log, and a 500 if it fails before its head).
    request: Held,
    /// Names the handler in log lines.
    label: String,
    /// Compresses the body on its way (`[compress]`), when it is.
    squeeze: Squeeze,
}

impl Worker {
    /// Starts answering stream `id` of `c` with `streamed`, for the
    /// current request: `status` is the handler's (for a body in
    /// pieces), its header lines are in the scratch buffer.
    pub(in crate::server::worker) fn h2_start_stream(
        &mut self,
        c: &mut Conn,
        id: u32,
        status: Status,
        streamed: Streamed,
        redirects: u8,
    ) {
        let (head, early_headers) = first_head(&streamed, status, &self.current.scratch.headers);
        let run = HandlerBody {
            source: streamed.source,
            head,
            early_headers,
            started: false,
            request: self.hold(redirects),
            label: streamed.label,
            squeeze: Squeeze::default(),
        };
        let mut a = Answer::waiting(id, run.request.started);
        a.open = true;
        a.progress = self.clock.now;
        a.stream = Some(Box::new(run));
        a.throttle = self.h2_throttle(c);
        match c.h2.as_mut() {
            Some(s) => s.answers.push(a),
            None => self.h2_stream_abandon(c, &mut a, false),
        }
    }

    /// Moves every handler's answer on `c`'s streams forward.
    pub(in crate::server::worker) fn h2_pump_streams(&mut self, c: &mut Conn) {
        self.h2_pump_each(c, |a| a.stream.is_some(), Self::h2_stream_pump);
    }

    /// Takes what one answer's producer gives while its stream has room;
    /// gives the answer back unless it ended.
    fn h2_stream_pump(&mut self, c: &mut Conn, mut a: Answer) -> Option<Answer> {
        loop {
            if a.pieces.iter().map(Piece::len).sum::<u64>() >= STREAM_OUT_CAP {
                return Some(a);
            }
            let Some(h) = a.stream.as_mut() else {
                return Some(a);
            };
            let no_head = !h.started && h.head.is_none();
            let (head, gave) = match step(&mut h.source, no_head, &mut self.pools.pipe_buf) {
                Step::Nothing => return Some(a),
                Step::Fail(why) => {
                    self.logger
                        .log(Level::Error, format_args!("{}: {why}", h.label));
                    return self.h2_stream_fail(c, a, Status::INTERNAL_SERVER_ERROR);
                }
                Step::Data(head, data, end) => (head, Gave::Bytes(data, end)),
                Step::File(head, file, len) => (head, Gave::File(file, len)),
            };
            a.progress = self.clock.now;
            if head.is_some() {
                h.head = head;
            }
            if !h.started {
                let Some(mut head) = h.head.take() else {
                    // (A later answer's body never comes before its head.)
                    return Some(a);
                };
                if !h.early_headers.is_empty() {
                    let mut lines = std::mem::take(&mut h.early_headers);
                    lines.extend_from_slice(&head.headers);
                    head.headers = lines;
                }
                h.started = true;
                let head_only = h.request.req.method() == Method::Head;
                // (A file the handler gives goes as it is: never compressed.)
                if matches!(gave, Gave::Bytes(..)) {
                    let accept = h.request.req.field(Field::AcceptEncoding);
                    let cfg = &self.settings.cfg.site(h.request.req.site()).compress;
                    h.squeeze = Squeeze::start(cfg, accept, &mut head, head_only);
                }
                let (ends, log) = self.h2_reply_head(c, a.id, &head, &h.request.req, head_only);
                a.discard = ends;
                a.expect = head.content_length;
                a.log = log;
                if ends {
                    // No body is sent: the producer is not wanted.
                    self.h2_stream_abandon(c, &mut a, false);
                    self.h2_ended(c, a);
                    return None;
                }
            }
            let (mut data, end) = match gave {
                Gave::Bytes(data, end) => (data, end),
                // The whole body: DATA frames read from the file
                // as a static file's are.
                Gave::File(file, len) => {
                    a.body_len += len;
                    a.pieces.push_back(Piece::File(Rc::new(file), 0, len));
                    return self.h2_stream_done(c, a);
                }
            };
            // A body past the length the handler gave is cut there.
            let over = a
                .expect
                .map_or(0, |n| (a.body_len + data.len() as u64).saturating_sub(n));
            if over > 0 {
                data.truncate(data.len() - over as usize);
                a.broken = true;
            }
            if h.squeeze.is_on() {
                data = h.squeeze.squeeze(&data).to_vec();
            }
            if !data.is_empty() {
                a.body_len += data.len() as u64;
                a.pieces.push_back(Piece::Bytes(data, 0));
            }
            if end || over > 0 {
                return self.h2_stream_done(c, a);
            }
        }
    }

    /// The handler's body is complete: the stream ends once what it gave
    /// is framed (reset if that is not the length it said).
    fn h2_stream_done(&mut self, c: &mut Conn, mut a: Answer) -> Option<Answer> {
        let Some(mut h) = a.stream.take() else {
            return Some(a);
        };
        a.open = false;
        if let Err(missing) = a.end_squeezed(&mut h.squeeze) {
            let line = format!(
                "{}: gave {missing} body bytes fewer than its length said",
                h.label
            );
            self.logger.log(Level::Error, format_args!("{line}"));
        }
        if let Some(n) = a.expect.filter(|&n| n != a.body_len) {
            self.logger.log(
                Level::Error,
                format_args!(
                    "{}: gave {} body bytes where its length said {n}",
                    h.label, a.body_len
                ),
            );
            a.broken = true;
        }
        if !a.pieces.is_empty() {
            return Some(a);
        }
        self.h2_pipe_close(c, a);
        None
    }

    /// The answer failed: the client gets `status` if its head was not
    /// sent yet, else its stream is reset.
    fn h2_stream_fail(&mut self, c: &mut Conn, mut a: Answer, status: Status) -> Option<Answer> {
        let h = a.stream.take()?;
        if let Source::Later(ch) = &h.source {
            ch.abandon();
        }
        self.h2_give_up(c, a, h.started, h.request, status);
        None
    }

    /// The stream (or its connection) is gone, or its body is not wanted:
    /// a later answer's thread is told; with `log`, a request whose head
    /// was never sent is logged (499).
    pub(in crate::server::worker) fn h2_stream_abandon(
        &mut self,
        c: &mut Conn,
        a: &mut Answer,
        log: bool,
    ) {
        let Some(h) = a.stream.take() else { return };
        if let Source::Later(ch) = &h.source {
            ch.abandon();
        }
        if log && !h.started {
            self.log_produced(c, &h.request, 499, c.queued_end());
        }
    }

    /// Handlers' answers that gave nothing for `timeouts.handler` while
    /// nothing of theirs waited for the client: answered 504 (or reset).
    /// Whether any was.
    pub(in crate::server::worker) fn h2_stream_timeouts(&mut self, c: &mut Conn) -> bool {
        let (now, limit) = (self.clock.now, self.settings.cfg.timeouts.handler);
        let Some(s) = c.h2.as_mut() else { return false };
        let mut late = Vec::new();
        for a in s.answers.iter_mut().filter(|a| a.stream.is_some()) {
            if !a.pieces.is_empty() {
                // Waiting for the client (its window), not the handler.
                a.progress = now;
            } else if now.saturating_duration_since(a.progress) >= limit {
                late.push(a.id);
            }
        }
        for id in &late {
            let Some(a) = c.h2.as_mut().and_then(|s| s.take(*id)) else {
                continue;
            };
            if let Some(h) = a.stream.as_ref() {
                self.logger.log(
                    Level::Error,
                    format_args!("{}: no progress for timeouts.handler; given up", h.label),
                );
            }
            self.h2_stream_fail(c, a, Status::GATEWAY_TIMEOUT);
        }
        !late.is_empty()
    }
}
