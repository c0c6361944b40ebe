//! Processes (CGI) answering HTTP/2 streams. Each has a slot among the
//! connection's pipe tokens (at most [`H2_PIPES`] at once; a stream
//! beyond them is answered 503), and the same pumps as an HTTP/1.1
//! answer's process: the request body (DATA frames) to its input, whose
//! window credit goes back to the client only as the process reads it,
//! so a slow process holds at most a window of body; its diagnostics to
//! the error log; its output's head as HEADERS and its body as DATA
//! frames within the windows, reading pausing while
//! [`STREAM_OUT_CAP`] bytes wait for a window that does not open.
//! A body that ends short of the process's Content-Length resets the
//! stream (INTERNAL_ERROR) instead of ending it, so the client knows.

use std::io;

use mio::Registry;

use super::input::InputEnd;
use super::{read_fd, unwatch, End, PipeRun, H2_PIPES, MAX_REDIRECTS};
use crate::config::Level;
use crate::h2::ErrorCode;
use crate::handlers::pipe::{Pipe, ReplyStart};
use crate::handlers::Plan;
use crate::http::body::{BodyDecoder, BodyLimits};
use crate::http::parse::BodyFraming;
use crate::http::{Method, Status, Version};
use crate::server::conn::Conn;
use crate::server::h2::{Answer, Piece};
use crate::server::waits::Held;
use crate::server::worker::Worker;

/// A process's output buffered for its stream before reading it pauses.
const STREAM_OUT_CAP: u64 = 64 * 1024;

/// What a process's output turned its answer into, besides more body.
enum Turn {
    /// Not a response: answer this status instead.
    Fail(Status),
    /// A local redirect to this target (RFC 3875 §6.2.2).
    Redirect(Vec<u8>),
}

impl Worker {
    /// Starts `pipe` as the answer to the current request, on stream
    /// `id` of `c` (`redirects` local redirects led to it), or the
    /// error to answer instead. (An `nph-` script's whole HTTP/1.1
    /// response is read as any script's head and body: see
    /// `handlers::cgi::nph`.)
    pub(in crate::server::worker) fn h2_start_pipe(
        &mut self,
        c: &mut Conn,
        id: u32,
        mut pipe: Pipe,
        redirects: u8,
    ) -> Result<(), Plan> {
        let free = c.h2.as_ref().and_then(|s| {
            (1..=H2_PIPES).find(|k| !s.answers.iter().any(|a| a.pipe.is_some() && a.slot == *k))
        });
        let Some(slot) = free else {
            pipe.reply.stop();
            self.logger.log(
                Level::Warn,
                format_args!(
                    "{}: {H2_PIPES} programs already answer this HTTP/2 connection; 503",
                    pipe.label
                ),
            );
            return Err(Plan::error(
                Status::SERVICE_UNAVAILABLE,
                &mut self.current.scratch,
            ));
        };
        self.watch(&mut pipe, c.index, slot)?;
        let head_only = self.current.req.method() == Method::Head;
        let held_body = pipe.held.is_some();
        let body_done =
            held_body || self.current.req.body() == crate::http::parse::BodyFraming::None;
        let has_body = pipe.has_body;
        let mut run = PipeRun::new(pipe, self.hold(redirects), Version::Http2, head_only);
        if !has_body {
            close_input(&mut run, self.poll.registry());
        }
        let mut a = Answer::waiting(id, run.request.started);
        a.pipe = Some(Box::new(run));
        a.slot = slot;
        a.open = true;
        a.body_done = body_done;
        a.held_body = held_body;
        a.progress = self.clock.now;
        a.throttle = self.h2_throttle(c);
        if let Some(s) = c.h2.as_mut() {
            s.answers.push(a);
        }
        Ok(())
    }

    /// Records readiness of a pipe of the process in `slot` of `c`.
    pub(in crate::server::worker) fn h2_pipe_ready(c: &mut Conn, slot: usize, end: End) {
        let Some(s) = c.h2.as_mut() else { return };
        let run = s
            .answers
            .iter_mut()
            .filter(|a| a.slot == slot)
            .find_map(|a| a.pipe.as_mut());
        if let Some(p) = run {
            p.ready(end);
        }
    }

    /// Body bytes for a stream a process answers: they wait for its
    /// input (their credit goes back as it reads them), or are dropped
    /// (credit back at once) once it no longer reads. False if the
    /// stream has no process.
    pub(in crate::server::worker) fn h2_pipe_data(
        c: &mut Conn,
        id: u32,
        data: &[u8],
        end_stream: bool,
    ) -> bool {
        let Some(s) = c.h2.as_mut() else { return false };
        let Some(a) = s
            .answers
            .iter_mut()
            .find(|a| a.id == id && a.pipe.is_some())
        else {
            return false;
        };
        let Some(p) = a.pipe.as_mut() else {
            return false;
        };
        a.body_done |= end_stream;
        if p.input.is_some() {
            p.feed_input(data);
        } else {
            s.conn.release(id, data.len());
        }
        true
    }

    /// Moves every process answering `c`'s streams forward.
    pub(in crate::server::worker) fn h2_pump_pipes(&mut self, c: &mut Conn) {
        self.h2_pump_each(c, |a| a.pipe.is_some(), Self::h2_pump);
    }

    /// Moves one process forward; gives its answer back unless it ended.
    fn h2_pump(&mut self, c: &mut Conn, mut a: Answer) -> Option<Answer> {
        let Some(p) = a.pipe.as_mut() else {
            return Some(a);
        };
        p.read_diagnostics(
            &mut self.pools.pipe_buf,
            &mut self.logger,
            self.poll.registry(),
        );
        let waiting = p.input_buf.len();
        let mut moved = match p.write_input() {
            Ok(moved) => moved,
            Err(InputEnd::Refused) => {
                // It does not read its input: the rest is dropped.
                close_input(p, self.poll.registry());
                true
            }
            Err(InputEnd::Unreadable(e)) => {
                let why = format!("{}: cannot read back the request body: {e}", p.label);
                self.logger.log(Level::Error, format_args!("{why}"));
                return self.h2_pipe_fail(c, a, Status::INTERNAL_SERVER_ERROR);
            }
        };
        // What left the buffer came from the client's DATA frames, unless
        // the body was held whole (its credit went back as it arrived).
        let written = match a.held_body {
            true => 0,
            false => waiting.saturating_sub(p.input_buf.len()),
        };
        if a.body_done && p.input_buf.is_empty() && p.input.is_some() {
            close_input(p, self.poll.registry());
        }
        if written > 0 {
            if let Some(s) = c.h2.as_mut() {
                s.conn.release(a.id, written);
            }
        }
        loop {
            if a.pieces.iter().map(Piece::len).sum::<u64>() >= STREAM_OUT_CAP {
                break;
            }
            let Some(p) = a.pipe.as_mut().filter(|p| p.output_ready) else {
                break;
            };
            let Some(fd) = p.output.as_ref() else { break };
            self.pools.pipe_buf.clear();
            match read_fd(fd, &mut self.pools.pipe_buf) {
                Ok(0) => return self.h2_pipe_done(c, a),
                Ok(_) => {
                    moved = true;
                    let data = std::mem::take(&mut self.pools.pipe_buf);
                    let turn = self.h2_pipe_output(c, &mut a, &data);
                    self.pools.pipe_buf = data;
                    match turn {
                        Ok(()) => {}
                        Err(Turn::Fail(status)) => return self.h2_pipe_fail(c, a, status),
                        Err(Turn::Redirect(target)) => {
                            self.h2_local_redirect(c, a, &target);
                            return None;
                        }
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => p.output_ready = false,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return self.h2_pipe_done(c, a),
            }
        }
        if moved {
            a.progress = self.clock.now;
        }
        Some(a)
    }

    /// Handles bytes the process wrote: its head, then its body.
    fn h2_pipe_output(&mut self, c: &mut Conn, a: &mut Answer, data: &[u8]) -> Result<(), Turn> {
        let Some(p) = a.pipe.as_mut() else {
            return Ok(());
        };
        if p.sent_any {
            if !a.discard && !data.is_empty() {
                body_piece(a, data);
            }
            return Ok(());
        }
        p.head_buf.extend_from_slice(data);
        let head = match p.reply.start(&p.head_buf) {
            ReplyStart::Incomplete => return Ok(()),
            ReplyStart::Invalid(why) => {
                let line = format!("{}: invalid response header: {why}", p.label);
                self.logger.log(Level::Error, format_args!("{line}"));
                return Err(Turn::Fail(Status::BAD_GATEWAY));
            }
            ReplyStart::Redirect(target) => return Err(Turn::Redirect(target)),
            ReplyStart::Head(head) => head,
        };
        let mut head = head;
        self.finish_pipe_head(p, &mut head);
        let (ends, log) = self.h2_reply_head(c, a.id, &head, &p.request.req, p.head_only);
        p.status = head.status;
        p.sent_any = true;
        a.discard = ends;
        a.expect = head.content_length;
        a.log = log;
        if head.chunked {
            let limits = BodyLimits {
                max_body: u64::MAX,
                max_chunk_ext: 4096,
                max_trailers: self.settings.cfg.limits.max_header_bytes,
            };
            p.dechunk = BodyDecoder::new(BodyFraming::Chunked, &limits).ok();
        }
        let rest = p.head_buf.split_off(head.len);
        p.head_buf = Vec::new();
        if !ends && !rest.is_empty() {
            body_piece(a, &rest);
        }
        Ok(())
    }

    /// The process closed its output: the stream ends once what it wrote
    /// is framed (reset if it wrote less than its Content-Length).
    fn h2_pipe_done(&mut self, c: &mut Conn, mut a: Answer) -> Option<Answer> {
        let Some(mut p) = a.pipe.take() else {
            return Some(a);
        };
        p.log_line(&mut self.logger);
        p.unwatch_all(self.poll.registry());
        if !p.sent_any {
            self.logger.log(
                Level::Error,
                format_args!("{}: exited without a complete response header", p.label),
            );
            a.pipe = Some(p);
            return self.h2_pipe_fail(c, a, Status::BAD_GATEWAY);
        }
        a.open = false;
        if let Err(missing) = a.end_squeezed(&mut p.squeeze) {
            let line = format!(
                "{}: output {missing} bytes shorter than its Content-Length",
                p.label
            );
            self.logger.log(Level::Error, format_args!("{line}"));
        }
        if p.dechunk.as_ref().is_some_and(|d| !d.is_done()) && !a.discard {
            self.logger.log(
                Level::Error,
                format_args!("{}: chunked output ended without its last chunk", p.label),
            );
            a.broken = true;
        }
        if let Some(n) = a.expect.filter(|&n| n != a.body_len && !a.discard) {
            self.logger.log(
                Level::Error,
                format_args!(
                    "{}: output {} bytes shorter than its Content-Length",
                    p.label,
                    n.saturating_sub(a.body_len)
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

    /// Ends a process's stream whose body is all framed: END_STREAM, or
    /// RST_STREAM if it is short (nothing if the head ended it).
    pub(in crate::server::worker) fn h2_pipe_close(&mut self, c: &mut Conn, a: Answer) {
        if let Some(s) = c.h2.as_mut() {
            if a.broken {
                s.conn.reset(a.id, ErrorCode::Internal);
            } else if !a.discard {
                s.conn.send_data(a.id, &[], true);
            }
        }
        self.h2_ended(c, a);
    }

    /// Ends answer `a`, which cannot go on: its stream is reset if its
    /// head went out (`started`: a process's or a handler's), else its
    /// `request` is answered `status`.
    pub(in crate::server::worker) fn h2_give_up(
        &mut self,
        c: &mut Conn,
        mut a: Answer,
        started: bool,
        request: Held,
        status: Status,
    ) {
        if started {
            a.broken = true;
            a.pieces.clear();
            self.h2_pipe_close(c, a);
            return;
        }
        self.resume(request);
        let plan = Plan::error(status, &mut self.current.scratch);
        self.h2_answer(c, a.id, plan, 0);
    }

    /// Stops the process: the client gets `status` if nothing was sent
    /// yet, else its stream is reset.
    fn h2_pipe_fail(&mut self, c: &mut Conn, mut a: Answer, status: Status) -> Option<Answer> {
        let mut p = a.pipe.take()?;
        p.reply.stop();
        p.log_line(&mut self.logger);
        p.unwatch_all(self.poll.registry());
        self.h2_give_up(c, a, p.sent_any, p.request, status);
        None
    }

    /// A local redirect: the process is stopped and the stream answered
    /// as if the target had been asked for, with GET.
    fn h2_local_redirect(&mut self, c: &mut Conn, mut a: Answer, target: &[u8]) {
        let Some(mut p) = a.pipe.take() else { return };
        p.reply.stop();
        p.unwatch_all(self.poll.registry());
        let redirected = p.request.req.redirected(target, &self.settings.limits);
        let (started, redirects) = (p.request.started, p.request.redirects + 1);
        self.resume(p.request);
        let plan = match redirected {
            _ if redirects > MAX_REDIRECTS => {
                self.logger
                    .log(Level::Error, format_args!("cgi: too many local redirects"));
                Plan::error(Status::INTERNAL_SERVER_ERROR, &mut self.current.scratch)
            }
            Some(req) => {
                self.current.req = req;
                self.current.start = started;
                match self.h2_route(c, a.id) {
                    Some(plan) => plan,
                    None => return,
                }
            }
            None => Plan::error(Status::BAD_GATEWAY, &mut self.current.scratch),
        };
        self.h2_answer(c, a.id, plan, redirects);
    }

    /// Stops the process of a stream that is gone (reset, or its
    /// connection closed); with `log`, logs its request (499 if nothing
    /// was sent).
    pub(in crate::server::worker) fn h2_pipe_abandon(
        &mut self,
        c: &mut Conn,
        a: &mut Answer,
        log: bool,
    ) {
        let Some(mut p) = a.pipe.take() else { return };
        p.reply.stop();
        p.log_line(&mut self.logger);
        p.unwatch_all(self.poll.registry());
        if log && self.logger.access_enabled() {
            let status = if p.sent_any { p.status } else { 499 };
            let rec = super::super::request_record(c, self.clock.wall, &p.request.req, status);
            let end = c.queued_end();
            super::super::access_log::push(
                &mut c.out,
                &mut self.logger,
                c.sent,
                end,
                0,
                p.request.started,
                |l, buf| l.draft(&rec, buf),
            );
        }
    }

    /// Processes that made no progress for their idle timeout: stopped,
    /// their streams answered 504 (or reset). Whether any was.
    pub(in crate::server::worker) fn h2_pipe_timeouts(&mut self, c: &mut Conn) -> bool {
        let now = self.clock.now;
        let late: Vec<u32> = match c.h2.as_ref() {
            Some(s) => s
                .answers
                .iter()
                .filter(|a| {
                    a.pipe.as_ref().is_some_and(|p| {
                        now.saturating_duration_since(a.progress) >= p.idle_timeout
                    })
                })
                .map(|a| a.id)
                .collect(),
            None => return false,
        };
        for id in &late {
            let Some(a) = c.h2.as_mut().and_then(|s| s.take(*id)) else {
                continue;
            };
            if let Some(p) = a.pipe.as_ref() {
                self.logger
                    .log(Level::Error, format_args!("{}: timed out; killed", p.label));
            }
            if let Some(a) = self.h2_pipe_fail(c, a, Status::GATEWAY_TIMEOUT) {
                if let Some(s) = c.h2.as_mut() {
                    s.answers.push(a);
                }
            }
        }
        !late.is_empty()
    }
}

/// Queues body bytes the process wrote for its stream: as they are, or
/// decoded from chunked coding (what follows the last chunk is dropped;
/// bad coding ends the answer short, so its stream is reset).
fn body_piece(a: &mut Answer, data: &[u8]) {
    let Some(p) = a.pipe.as_mut() else { return };
    let Some(d) = p.dechunk.as_mut() else {
        // (A chunked body is never compressed: see `Squeeze::start`.)
        let data = p.squeeze.squeeze(data);
        if !data.is_empty() {
            a.body_len += data.len() as u64;
            a.pieces.push_back(Piece::Bytes(data.to_vec(), 0));
        }
        return;
    };
    let (pieces, len) = (&mut a.pieces, &mut a.body_len);
    let decoded = d.decode(data, &mut |bytes| {
        *len += bytes.len() as u64;
        pieces.push_back(Piece::Bytes(bytes.to_vec(), 0));
    });
    if decoded.is_err() {
        a.broken = true;
    }
}

/// Closes a process's input (its body is written, or it does not read it).
fn close_input(p: &mut PipeRun, registry: &Registry) {
    unwatch(registry, p.input.take());
    p.input_buf = Vec::new();
    p.held = None;
}
