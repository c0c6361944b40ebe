//! Pipe bodies in the event loop (see [`crate::handlers::pipe`]): the
//! process's pipes are registered in the worker's epoll next to the
//! sockets, so a slow or hung process delays only its own client. The
//! request body streams to its input as it arrives (or from a body held
//! whole, see `input`); its diagnostics go to the error log line by line;
//! its output goes to the reply object until the head is in, and is then
//! framed as the response body: by its Content-Length, chunked
//! (HTTP/1.1) or by closing (HTTP/1.0).

use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::time::Duration;

use mio::unix::SourceFd;
use mio::{Interest, Registry, Token};

#[cfg(feature = "http2")]
mod h2;
mod input;

/// Most processes answering one HTTP/2 connection's streams at once (a
/// stream beyond them is answered 503).
const H2_PIPES: usize = 16;

use super::{answering, Worker, PIPE_BASE};
use crate::config::Level;
use crate::handlers::cgi::pipe_body::{gather_lines, log_line, refill, INPUT_CAP};
use crate::handlers::compress::Squeeze;
use crate::handlers::pipe::{Pipe, PipeReply, ReplyHead, ReplyStart};
use crate::handlers::spool::Spool;
use crate::handlers::Plan;
use crate::http::body::BodyDecoder;
use crate::http::request::Field;
use crate::http::response::{Encoder, CONTINUE};
use crate::http::{Method, Status, Version};
use crate::log::Logger;
use crate::server::conn::Conn;
use crate::server::h1::{stream_head, State, StreamFor};
use crate::server::transport::Out;
use crate::server::waits::Held;

/// Output buffered for the client before reading from the process pauses.
const OUT_CAP: usize = 256 * 1024;
/// Local redirects followed for one request before giving up (500).
const MAX_REDIRECTS: u8 = 5;

/// Which pipe of a process an event is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum End {
    Input = 0,
    Output = 1,
    Diagnostics = 2,
}

/// A pipe body being pumped for a connection.
#[derive(Debug)]
pub struct PipeRun {
    input: Option<OwnedFd>,
    output: Option<OwnedFd>,
    diagnostics: Option<OwnedFd>,
    /// Decoded request body waiting for the process's input.
    pub(super) input_buf: Vec<u8>,
    /// The rest of a held body, fed to the input as it drains.
    held: Option<Spool>,
    input_ready: bool,
    output_ready: bool,
    diagnostics_ready: bool,
    /// The output until its head is complete.
    head_buf: Vec<u8>,
    /// Frames the body once the head is sent (a raw reply's whole output
    /// passes as it comes).
    encoder: Option<Encoder>,
    /// Compresses the body on its way (`[compress]`), when it is.
    pub(super) squeeze: Squeeze,
    /// Bytes of the response (head or body) queued for the client.
    sent_any: bool,
    /// The connection's byte position where the response's body begins
    /// (for a raw reply, its whole output).
    body_from: u64,
    status: u16,
    /// The request lets the connection stay open (and the reply is not
    /// a whole response of its own).
    wanted: bool,
    /// The connection stays open after the answer (decided with its head).
    keep: bool,
    version: Version,
    head_only: bool,
    /// The request (for a local redirect and the log).
    request: Held,
    /// Names the process in log lines.
    label: String,
    idle_timeout: Duration,
    diagnostics_line: Vec<u8>,
    /// The response must not be reused after this (truncated, aborted).
    broken: bool,
    reply: Box<dyn PipeReply>,
    /// Decodes a body the process sent in chunked coding (an `nph-`
    /// script's, over HTTP/2).
    #[cfg(feature = "http2")]
    dechunk: Option<BodyDecoder>,
}

impl PipeRun {
    /// How many more request-body bytes the input buffer takes now
    /// (any number once the input is closed: the rest is dropped).
    pub(crate) fn input_room(&self) -> usize {
        match self.input {
            Some(_) => INPUT_CAP.saturating_sub(self.input_buf.len()),
            None => usize::MAX,
        }
    }

    /// Takes request-body bytes for the input (dropped once it is closed).
    pub(crate) fn feed_input(&mut self, data: &[u8]) {
        if self.input.is_some() {
            self.input_buf.extend_from_slice(data);
        }
    }

    /// Logs the diagnostics line gathered so far, if any.
    fn log_line(&mut self, logger: &mut Logger) {
        log_line(&self.label, &mut self.diagnostics_line, logger);
    }

    /// How long the process may go without progress.
    pub(crate) fn idle_timeout(&self) -> Duration {
        self.idle_timeout
    }

    /// The run of `pipe`, answering `request` (of `version`; `head_only`
    /// for HEAD), before anything of its output is read.
    fn new(pipe: Pipe, request: Held, version: Version, head_only: bool) -> PipeRun {
        PipeRun {
            input: Some(pipe.input),
            output: Some(pipe.output),
            diagnostics: Some(pipe.diagnostics),
            input_buf: Vec::new(),
            held: pipe.held,
            input_ready: true,
            output_ready: true,
            diagnostics_ready: true,
            head_buf: Vec::new(),
            encoder: None,
            squeeze: Squeeze::default(),
            sent_any: false,
            body_from: 0,
            status: 0,
            wanted: false,
            keep: false,
            version,
            head_only,
            request,
            label: pipe.label,
            idle_timeout: pipe.idle_timeout,
            diagnostics_line: Vec::new(),
            broken: false,
            reply: pipe.reply,
            #[cfg(feature = "http2")]
            dechunk: None,
        }
    }

    /// Records that pipe `end` is ready.
    fn ready(&mut self, end: End) {
        match end {
            End::Input => self.input_ready = true,
            End::Output => self.output_ready = true,
            End::Diagnostics => self.diagnostics_ready = true,
        }
    }

    /// Reads the diagnostics that arrived, each complete line one
    /// error-log message (in `buf`, lent); at their end the pipe leaves
    /// the loop and the last line is logged.
    fn read_diagnostics(&mut self, buf: &mut Vec<u8>, logger: &mut Logger, registry: &Registry) {
        while self.diagnostics_ready {
            let Some(fd) = self.diagnostics.as_ref() else {
                return;
            };
            buf.clear();
            match read_fd(fd, buf) {
                Ok(0) => {
                    unwatch(registry, self.diagnostics.take());
                    self.log_line(logger);
                    return;
                }
                Ok(_) => {
                    let label = &self.label;
                    gather_lines(&mut self.diagnostics_line, buf, |line| {
                        log_line(label, line, logger)
                    });
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => self.diagnostics_ready = false,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => {
                    unwatch(registry, self.diagnostics.take());
                    return;
                }
            }
        }
    }

    /// Takes every pipe still open out of the loop and closes it.
    fn unwatch_all(&mut self, registry: &Registry) {
        for fd in [
            self.input.take(),
            self.output.take(),
            self.diagnostics.take(),
        ] {
            unwatch(registry, fd);
        }
    }
}

/// Pipe slots per connection: 0 for an HTTP/1.1 answer, the others for
/// HTTP/2 streams (see `h2`).
const SLOTS: usize = 1 + H2_PIPES;

/// The token of pipe `end` of the process in `slot` of connection `conn`.
fn token_at(conn: usize, slot: usize, end: End) -> Token {
    Token(PIPE_BASE + (conn * SLOTS + slot) * 3 + end as usize)
}

/// Maps a pipe token back to its connection, slot and end.
pub(super) fn split_token(t: usize) -> (usize, usize, End) {
    let n = t - PIPE_BASE;
    let end = match n % 3 {
        0 => End::Input,
        1 => End::Output,
        _ => End::Diagnostics,
    };
    let process = n / 3;
    (process / SLOTS, process % SLOTS, end)
}

/// Takes a pipe out of the loop, if it is still open, and closes it.
fn unwatch(registry: &Registry, fd: Option<OwnedFd>) {
    if let Some(fd) = fd {
        // (It fails only for a pipe not registered; closing it, as the
        // drop does next, takes it out of epoll anyway.)
        let _ = registry.deregister(&mut SourceFd(&fd.as_raw_fd()));
    }
}

/// Ends a produced body (a pipe's, a handler's stream) compressed by
/// `squeeze` and framed by `encoder` into `out`; false (and a line
/// naming `label` in the log) when it is shorter than its
/// Content-Length: the answer is cut short.
pub(super) fn finish_body(
    squeeze: &mut Squeeze,
    encoder: &mut Encoder,
    out: &mut Out,
    log: &mut Logger,
    label: &str,
) -> bool {
    let start = out.buf_mut().len();
    let missing = match squeeze.finish() {
        Ok(last) => {
            encoder.encode(last, out.buf_mut());
            encoder.finish(out.buf_mut())
        }
        // (Compressed, the body has no last chunk: the client sees it cut.)
        Err(missing) => missing,
    };
    out.commit(start);
    if missing > 0 {
        log.log(
            Level::Error,
            format_args!("{label}: body {missing} bytes shorter than its Content-Length"),
        );
    }
    missing == 0
}

fn read_fd(fd: &OwnedFd, buf: &mut Vec<u8>) -> io::Result<usize> {
    crate::sys::net::read_into_spare(fd, buf)
}

impl Worker {
    /// Starts pumping `pipe` as the answer to the current request on
    /// connection `c` (`redirects` led to it); the request body, read by
    /// `decoder`, goes to its input (the decoder is taken). An error plan
    /// when its pipes cannot be watched (the process is stopped).
    pub(super) fn start_pipe(
        &mut self,
        c: &mut Conn,
        mut pipe: Pipe,
        redirects: u8,
        decoder: &mut Option<BodyDecoder>,
    ) -> Result<(), Plan> {
        self.watch(&mut pipe, c.index, 0)?;
        let req = &self.current.req;
        let (version, head_only) = (req.version(), req.method() == Method::Head);
        let has_body = pipe.has_body;
        if req.expect_continue() && has_body && pipe.held.is_none() {
            // The process will read the body: tell the client to send it
            // (RFC 9110 §10.1.1), ahead of the response.
            c.out.push_bytes(CONTINUE);
        }
        let raw = pipe.reply.is_raw();
        let wanted = req.keep_alive() && !raw;
        let mut run = PipeRun::new(pipe, self.hold(redirects), version, head_only);
        run.encoder = raw.then_some(Encoder::Close);
        run.body_from = c.queued_end();
        run.wanted = wanted;
        c.h1.set(State::Piping(Box::new(run), decoder.take()), self.clock.now);
        if !has_body {
            self.close_input(c);
        }
        Ok(())
    }

    /// Registers the pipes of `pipe`, the process in `slot` of connection
    /// `conn`; if they cannot be watched, the process is stopped and the
    /// answer is a 500.
    fn watch(&mut self, pipe: &mut Pipe, conn: usize, slot: usize) -> Result<(), Plan> {
        let reg = self.poll.registry();
        let ends = [
            (&pipe.output, End::Output, Interest::READABLE),
            (&pipe.diagnostics, End::Diagnostics, Interest::READABLE),
            (&pipe.input, End::Input, Interest::WRITABLE),
        ];
        let ok = ends.into_iter().try_for_each(|(fd, end, interest)| {
            reg.register(
                &mut SourceFd(&fd.as_raw_fd()),
                token_at(conn, slot, end),
                interest,
            )
        });
        if let Err(e) = ok {
            pipe.reply.stop();
            self.logger.log(
                Level::Error,
                format_args!("{}: cannot watch pipes: {e}", pipe.label),
            );
            return Err(Plan::error(
                Status::INTERNAL_SERVER_ERROR,
                &mut self.current.scratch,
            ));
        }
        Ok(())
    }

    /// Records readiness of one of a process's pipes.
    pub(super) fn pipe_ready(c: &mut Conn, slot: usize, end: End) {
        if slot > 0 {
            #[cfg(feature = "http2")]
            Self::h2_pipe_ready(c, slot, end);
            return;
        }
        if let Some(p) = c.h1.pipe() {
            p.ready(end);
        }
    }

    /// Moves a pipe body forward: request body to the input, diagnostics
    /// to the log, output to the client (while the client keeps up).
    /// Returns whether anything moved.
    pub(super) fn pump_pipe(&mut self, c: &mut Conn) -> bool {
        let mut moved = false;
        self.pump_diagnostics(c);
        let since = self.clock.now;
        moved |= self.pump_input(c);
        while c.out.buffered() < OUT_CAP {
            let Some(p) = c.h1.pipe().filter(|p| p.output_ready) else {
                break;
            };
            let Some(fd) = p.output.as_ref() else { break };
            self.pools.pipe_buf.clear();
            match read_fd(fd, &mut self.pools.pipe_buf) {
                Ok(0) => {
                    moved = true;
                    self.pipe_output_done(c);
                    break;
                }
                Ok(_) => {
                    moved = true;
                    let data = std::mem::take(&mut self.pools.pipe_buf);
                    self.pipe_output(c, &data);
                    self.pools.pipe_buf = data;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => p.output_ready = false,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => {
                    moved = true;
                    self.pipe_output_done(c);
                    break;
                }
            }
        }
        if moved && c.h1.pipe().is_some() {
            // The pipe's timeout is an idle timeout: progress restarts it.
            c.h1.touch(since);
        }
        moved
    }

    /// Logs each complete line of diagnostics as one error-log message.
    fn pump_diagnostics(&mut self, c: &mut Conn) {
        if let Some(p) = c.h1.pipe() {
            p.read_diagnostics(
                &mut self.pools.pipe_buf,
                &mut self.logger,
                self.poll.registry(),
            );
        }
    }

    /// Logs what is left of a diagnostics line the process did not end.
    fn flush_diagnostics_line(&mut self, c: &mut Conn) {
        if let Some(p) = c.h1.pipe() {
            p.log_line(&mut self.logger);
        }
    }

    /// What every protocol does to a program's head before sending it:
    /// the site's rules' headers (CORS), then the choice of streamed
    /// compression, which may change the head's framing fields.
    pub(super) fn finish_pipe_head(&self, p: &mut PipeRun, head: &mut ReplyHead) {
        self.router.finish_reply(&p.request.req, &mut head.headers);
        let accept = p.request.req.field(Field::AcceptEncoding);
        p.squeeze = Squeeze::start(
            &self.settings.cfg.site(p.request.req.site()).compress,
            accept,
            head,
            p.head_only,
        );
    }

    /// Handles bytes the process wrote to its output.
    fn pipe_output(&mut self, c: &mut Conn, data: &[u8]) {
        let served = c.h1.served();
        let Some(p) = c.h1.pipe() else { return };
        if let Some(encoder) = p.encoder.as_mut() {
            let start = c.out.buf_mut().len();
            encoder.encode(p.squeeze.squeeze(data), c.out.buf_mut());
            c.out.commit(start);
            return;
        }
        p.head_buf.extend_from_slice(data);
        let head = match p.reply.start(&p.head_buf) {
            ReplyStart::Incomplete => return,
            ReplyStart::Invalid(why) => {
                self.logger.log(
                    Level::Error,
                    format_args!("{}: invalid response header: {why}", p.label),
                );
                self.pipe_fail(c, Status::BAD_GATEWAY);
                return;
            }
            ReplyStart::Redirect(target) => {
                self.local_redirect(c, &target);
                return;
            }
            ReplyStart::Head(head) => head,
        };
        let mut head = head;
        self.finish_pipe_head(p, &mut head);
        let to = StreamFor {
            served,
            wanted: p.wanted,
            version: p.version,
            head_only: p.head_only,
        };
        let cx = answering(&self.settings, &self.clock, self.drain.mode);
        let start = c.out.buf_mut().len();
        let stream = stream_head(&head, to, c.out.buf_mut(), &cx);
        p.keep = stream.keep;
        p.status = head.status;
        // (The head is counted, committed or not.)
        p.body_from = c.sent + c.out.unsent();
        let rest = p.head_buf.split_off(head.len);
        p.head_buf = Vec::new();
        let mut encoder = stream.encoder;
        encoder.encode(p.squeeze.squeeze(&rest), c.out.buf_mut());
        p.encoder = Some(encoder);
        p.sent_any = true;
        c.out.commit(start);
    }

    /// The process closed its output: end the response.
    fn pipe_output_done(&mut self, c: &mut Conn) {
        let Some(p) = c.h1.pipe() else { return };
        let Some(encoder) = p.encoder.as_mut() else {
            self.logger.log(
                Level::Error,
                format_args!("{}: exited without a complete response header", p.label),
            );
            self.pipe_fail(c, Status::BAD_GATEWAY);
            return;
        };
        if !finish_body(
            &mut p.squeeze,
            encoder,
            &mut c.out,
            &mut self.logger,
            &p.label,
        ) {
            p.broken = true;
        }
        self.pipe_end(c);
    }

    /// Answers `status` if nothing was sent yet (else cuts the response
    /// short), stops the process, and ends the pipe body.
    pub(super) fn pipe_fail(&mut self, c: &mut Conn, status: Status) {
        let Some(p) = c.h1.pipe() else { return };
        p.reply.stop();
        if p.sent_any {
            p.broken = true;
        } else {
            p.keep = false;
            p.status = status.0;
            let (head_only, site) = (p.head_only, p.request.req.site());
            let body_from = self.fail_unstarted(c, status, head_only, site);
            if let Some(p) = c.h1.pipe() {
                p.body_from = body_from;
                p.sent_any = true;
            }
        }
        self.pipe_end(c);
    }

    /// Queues an error page with `status` in place of a produced answer
    /// that has not started (a pipe's, a handler's stream) to a request
    /// to `site`; the connection closes after it. Returns where its body
    /// starts.
    pub(super) fn fail_unstarted(
        &mut self,
        c: &mut Conn,
        status: Status,
        head_only: bool,
        site: usize,
    ) -> u64 {
        self.current.scratch.clear();
        let mut plan = Plan::error(status, &mut self.current.scratch);
        self.router
            .finish_unread(site, &mut plan, &mut self.current.scratch, &mut self.logger);
        let cx = answering(&self.settings, &self.clock, self.drain.mode);
        let body =
            c.h1.fail(plan, &self.current.scratch, head_only, &mut c.out, &cx);
        c.queued_end().saturating_sub(body)
    }

    /// A process that made no progress for its idle timeout: stopped,
    /// and the client answered 504 (or its response cut short).
    pub(super) fn pipe_timeout(&mut self, c: &mut Conn) {
        if let Some(p) = c.h1.pipe() {
            self.logger
                .log(Level::Error, format_args!("{}: timed out; killed", p.label));
        }
        self.pipe_fail(c, Status::GATEWAY_TIMEOUT);
    }

    /// Stops the process of a connection that is going away.
    pub(super) fn pipe_abandon(&mut self, c: &mut Conn) {
        if let Some(p) = c.h1.pipe() {
            p.reply.stop();
            p.broken = true;
            p.status = if p.sent_any { p.status } else { 499 };
        }
        self.pipe_end(c);
    }

    /// Releases the process (reaped now or later), logs the request, and
    /// lets the connection go on (or close).
    fn pipe_end(&mut self, c: &mut Conn) {
        self.flush_diagnostics_line(c);
        let Some(p) = self.pipe_release(c) else {
            return;
        };
        self.log_produced(c, &p.request, p.status, p.body_from);
        if p.broken || !p.keep {
            c.h1.close();
        }
    }

    /// Logs the answer to `request` (`status`, its body from the
    /// connection's byte `body_from` to what is queued now) once its last
    /// byte has left, or the connection ended, with what was sent: for
    /// answers produced as they go (a pipe's, a handler's stream).
    pub(super) fn log_produced(
        &mut self,
        c: &mut Conn,
        request: &Held,
        status: u16,
        body_from: u64,
    ) {
        self.count_answer(&request.req, status, request.started);
        if self.logger.access_enabled() {
            let rec = super::request_record(c, self.clock.wall, &request.req, status);
            let end = c.queued_end();
            let body = end.saturating_sub(body_from);
            let log = &mut self.logger;
            let sent = c.sent;
            super::access_log::push(
                &mut c.out,
                log,
                sent,
                end,
                body,
                request.started,
                |l, buf| l.draft(&rec, buf),
            );
        }
    }

    /// A local redirect (a CGI `Location: /path` with no body, RFC 3875
    /// §6.2.2): the server answers as if that had been requested, with
    /// GET; the process is stopped.
    fn local_redirect(&mut self, c: &mut Conn, target: &[u8]) {
        let Some(p) = c.h1.pipe() else { return };
        p.reply.stop();
        // The new request: the redirected target with the original header
        // lines (but no body: the method becomes GET).
        let redirected = p.request.req.redirected(target, &self.settings.limits);
        // Other connections' requests may have run since it started.
        let (started, redirects) = (p.request.started, p.request.redirects + 1);
        // The original request is not logged; the redirected one is.
        self.pipe_release(c);
        let failure = match redirected {
            _ if redirects > MAX_REDIRECTS => {
                self.logger
                    .log(Level::Error, format_args!("cgi: too many local redirects"));
                Status::INTERNAL_SERVER_ERROR
            }
            Some(req) => {
                self.current.req = req;
                self.current.start = started;
                self.dispatch(c, redirects);
                return;
            }
            None => Status::BAD_GATEWAY,
        };
        self.current.scratch.clear();
        let plan = Plan::error(failure, &mut self.current.scratch);
        let cx = answering(&self.settings, &self.clock, self.drain.mode);
        c.h1.fail(plan, &self.current.scratch, false, &mut c.out, &cx);
    }

    /// Detaches the connection's pipe body: its pipes leave the loop and
    /// close. Returns what is left of it, for the log (dropping it lets
    /// the process go).
    fn pipe_release(&mut self, c: &mut Conn) -> Option<PipeRun> {
        let mut p = *c.h1.end_pipe(self.clock.now)?;
        p.unwatch_all(self.poll.registry());
        Some(p)
    }
}
