//! CGI in the event loop: the child's pipes are registered in the worker's
//! epoll next to the sockets, so a slow or hung script delays only its own
//! client. A request body with a Content-Length streams to the child's
//! stdin as it arrives; a chunked one is held until complete, so that the
//! script is told its length (see `body`). The child's output streams
//! back, framed by its Content-Length, chunked (HTTP/1.1) or by closing
//! (HTTP/1.0).

use std::io;
use std::os::fd::{AsRawFd, OwnedFd};

use mio::unix::SourceFd;
use mio::{Interest, Token};

mod body;
mod output;

pub use body::CgiWait;

use super::{head_parts, Held, Worker, CGI_BASE};
use crate::config::Level;
use crate::handlers::cgi::Script;
use crate::handlers::cgi::{build_env, parse_head, CgiReply, EnvRequest};
use crate::handlers::Plan;
use crate::http::parse::{BodyFraming, Header};
use crate::http::response::{Connection, Encoder, Framing, Head, CONTINUE};
use crate::http::{Method, Status, Version};
use crate::server::conn::{Conn, Phase};
use crate::server::drain::Drain;
use crate::server::response;
use crate::server::spool::Spool;
use crate::sys::spawn;

/// Request-body bytes buffered for a child's stdin before reading from the
/// client pauses.
pub(super) const STDIN_CAP: usize = 64 * 1024;
/// Child output buffered for the client before reading from the child pauses.
const OUT_CAP: usize = 256 * 1024;
/// Longest stderr line kept for the error log.
const STDERR_LINE: usize = 4096;
/// Local redirects followed for one request before giving up (500).
const MAX_REDIRECTS: u8 = 5;

/// Which pipe of a child an event is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Pipe {
    Stdin = 0,
    Stdout = 1,
    Stderr = 2,
}

/// A running CGI request on a connection.
#[derive(Debug)]
pub struct CgiRun {
    pid: i32,
    stdin: Option<OwnedFd>,
    stdout: Option<OwnedFd>,
    stderr: Option<OwnedFd>,
    /// Decoded request body waiting for the child's stdin.
    pub(super) stdin_buf: Vec<u8>,
    /// The rest of a held (chunked) body, fed to stdin as it drains.
    held: Option<Spool>,
    stdin_ready: bool,
    stdout_ready: bool,
    stderr_ready: bool,
    /// The child's output until its header block is complete.
    head_buf: Vec<u8>,
    /// Frames the child's body once its head is sent (an `nph-`
    /// script's whole output passes as it comes).
    encoder: Option<Encoder>,
    /// Bytes of the response (head or body) queued for the client.
    sent_any: bool,
    /// The connection's byte position where the response's body begins
    /// (for an `nph-` script, its whole output).
    body_from: u64,
    status: u16,
    keep_alive: bool,
    version: Version,
    head_only: bool,
    /// The request (for a local redirect and the log).
    request: Held,
    script: String,
    stderr_line: Vec<u8>,
    /// The response must not be reused after this (truncated, aborted).
    broken: bool,
}

impl CgiRun {
    /// Whether the decoded body still has somewhere to go.
    pub(super) fn wants_body(&self) -> bool {
        self.stdin.is_some()
    }
}

fn token(conn: usize, pipe: Pipe) -> Token {
    Token(CGI_BASE + conn * 3 + pipe as usize)
}

/// Maps a CGI token back to its connection and pipe.
pub(super) fn split_token(t: usize) -> (usize, Pipe) {
    let n = t - CGI_BASE;
    let pipe = match n % 3 {
        0 => Pipe::Stdin,
        1 => Pipe::Stdout,
        _ => Pipe::Stderr,
    };
    (n / 3, pipe)
}

fn read_fd(fd: &OwnedFd, buf: &mut Vec<u8>) -> io::Result<usize> {
    crate::sys::net::read_into_spare(fd, buf)
}

impl Worker {
    /// A 503 when this worker runs as many CGI programs as it may.
    fn over_process_limit(&mut self) -> Result<(), Plan> {
        if self.cgi_running < self.cfg.limits.cgi_processes {
            return Ok(());
        }
        self.logger.log(
            Level::Warn,
            format_args!(
                "cgi: {} processes running; refusing another",
                self.cgi_running
            ),
        );
        Err(Plan::error(Status::SERVICE_UNAVAILABLE, &mut self.scratch))
    }

    /// Starts `script` for the current request on connection `c`; its
    /// stdin is `held` (a body held whole) or else the request's body as
    /// it arrives. Returns an error plan when the script cannot be
    /// started.
    pub(super) fn start_cgi(
        &mut self,
        c: &mut Conn,
        script: Script,
        redirects: u8,
        mut held: Option<Spool>,
    ) -> Result<(), Plan> {
        self.over_process_limit()?;
        if let Some(Err(e)) = held.as_mut().map(Spool::rewind) {
            self.logger.log(
                Level::Error,
                format_args!(
                    "cgi: cannot read back the request body held in a temporary file: {e}"
                ),
            );
            return Err(Plan::error(
                Status::INTERNAL_SERVER_ERROR,
                &mut self.scratch,
            ));
        }
        let req = &self.req;
        let local = c.stream.local_addr().unwrap_or(c.peer);
        let host = req.host().unwrap_or_default();
        let server_name = host_without_port(host);
        let local_ip;
        let server_name: &[u8] = if server_name.is_empty() {
            local_ip = local.ip().to_string();
            local_ip.as_bytes()
        } else {
            server_name
        };
        let headers: Vec<Header> = req.headers().collect();
        let env_req = EnvRequest {
            method: req.method_token(),
            raw_target: req.target(),
            query: req.query().unwrap_or_default(),
            version: req.version().as_str(),
            headers: &headers,
            remote: c.peer,
            local,
            server_name,
            document_root: &self.cfg.root,
            // RFC 3875 §4.1.2: set whenever there is a body (a chunked
            // one is held until its length is known).
            content_length: match (&held, req.body()) {
                (Some(body), _) => Some(body.len()),
                (None, BodyFraming::Length(n)) => Some(n),
                (None, _) => None,
            },
            remote_user: req.user(),
            auth_type: req.user().map(|_| &b"Basic"[..]),
        };
        let extra = &self.cfg.cgi[script.rule].env;
        let env = build_env(&script, &env_req, extra);
        let started = match &self.launcher {
            Some(l) => l.spawn(
                &self.cfg.cgi[script.rule].writable,
                &script.program,
                &script.args,
                &env,
                &script.cwd,
            ),
            None => spawn::spawn(&script.program, &script.args, &env, &script.cwd),
        };
        let child = match started {
            Ok(ch) => ch,
            Err(e) => {
                self.logger.log(
                    Level::Error,
                    format_args!("cgi: cannot run {}: {e}", script.script_filename.display()),
                );
                return Err(Plan::error(
                    Status::INTERNAL_SERVER_ERROR,
                    &mut self.scratch,
                ));
            }
        };
        let reg = self.poll.registry();
        let ok = reg
            .register(
                &mut SourceFd(&child.stdout.as_raw_fd()),
                token(c.index, Pipe::Stdout),
                Interest::READABLE,
            )
            .and_then(|_| {
                reg.register(
                    &mut SourceFd(&child.stderr.as_raw_fd()),
                    token(c.index, Pipe::Stderr),
                    Interest::READABLE,
                )
            })
            .and_then(|_| {
                reg.register(
                    &mut SourceFd(&child.stdin.as_raw_fd()),
                    token(c.index, Pipe::Stdin),
                    Interest::WRITABLE,
                )
            });
        if let Err(e) = ok {
            self.kill_child(child.pid);
            self.release_child(child.pid);
            self.logger
                .log(Level::Error, format_args!("cgi: cannot watch pipes: {e}"));
            return Err(Plan::error(
                Status::INTERNAL_SERVER_ERROR,
                &mut self.scratch,
            ));
        }
        self.cgi_running += 1;
        let req = &self.req;
        let has_body = match &held {
            Some(body) => !body.is_empty(),
            None => req.body() != BodyFraming::None,
        };
        let keep_alive = req.keep_alive() && c.served < self.cfg.limits.keepalive_requests;
        let (version, head_only) = (req.version(), req.method() == Method::Head);
        if req.expect_continue() && has_body && held.is_none() {
            // The script will read the body: tell the client to send it
            // (RFC 9110 §10.1.1), ahead of the response.
            self.stage.push_bytes(CONTINUE);
        }
        let run = CgiRun {
            pid: child.pid,
            stdin: Some(child.stdin),
            stdout: Some(child.stdout),
            stderr: Some(child.stderr),
            stdin_buf: Vec::new(),
            held: held.filter(|body| !body.is_empty()),
            stdin_ready: true,
            stdout_ready: true,
            stderr_ready: true,
            head_buf: Vec::new(),
            encoder: script.nph.then_some(Encoder::Close),
            sent_any: false,
            body_from: self.queued_end(c),
            status: 0,
            keep_alive: keep_alive && !script.nph,
            version,
            head_only,
            request: self.hold(redirects),
            script: script.script_filename.display().to_string(),
            stderr_line: Vec::new(),
            broken: false,
        };
        c.cgi = Some(Box::new(run));
        c.phase = Phase::Cgi;
        c.since = self.now;
        if !has_body {
            self.close_stdin(c);
        }
        Ok(())
    }

    /// Records readiness of a child's pipe.
    pub(super) fn cgi_ready(c: &mut Conn, pipe: Pipe) {
        if let Some(g) = c.cgi.as_mut() {
            match pipe {
                Pipe::Stdin => g.stdin_ready = true,
                Pipe::Stdout => g.stdout_ready = true,
                Pipe::Stderr => g.stderr_ready = true,
            }
        }
    }

    /// Moves a CGI request forward: body to stdin, stderr to the log,
    /// stdout to the client (while the client keeps up). Returns whether
    /// anything moved.
    pub(super) fn pump_cgi(&mut self, c: &mut Conn) -> bool {
        let mut moved = false;
        self.pump_stderr(c);
        let since = self.now;
        moved |= self.pump_stdin(c);
        while c
            .cgi
            .as_ref()
            .is_some_and(|g| g.stdout_ready && g.stdout.is_some())
            && c.out.buffered() < OUT_CAP
        {
            let g = c.cgi.as_mut().expect("checked");
            self.cgi_buf.clear();
            let fd = g.stdout.as_ref().expect("checked");
            match read_fd(fd, &mut self.cgi_buf) {
                Ok(0) => {
                    moved = true;
                    self.cgi_output_done(c);
                    break;
                }
                Ok(_) => {
                    moved = true;
                    let data = std::mem::take(&mut self.cgi_buf);
                    self.cgi_output(c, &data);
                    self.cgi_buf = data;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => g.stdout_ready = false,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => {
                    moved = true;
                    self.cgi_output_done(c);
                    break;
                }
            }
        }
        if moved && c.cgi.is_some() {
            // `timeouts.cgi` is an idle timeout: progress restarts it.
            c.since = since;
        }
        moved
    }

    fn pump_stderr(&mut self, c: &mut Conn) {
        loop {
            let Some(g) = c.cgi.as_mut() else { return };
            if !g.stderr_ready {
                return;
            }
            let Some(fd) = g.stderr.as_ref() else { return };
            self.cgi_buf.clear();
            match read_fd(fd, &mut self.cgi_buf) {
                Ok(0) => {
                    if let Some(fd) = g.stderr.take() {
                        let _ = self
                            .poll
                            .registry()
                            .deregister(&mut SourceFd(&fd.as_raw_fd()));
                    }
                    self.flush_stderr_line(c);
                    return;
                }
                Ok(_) => {
                    // Each complete line becomes one error-log message.
                    for piece in self.cgi_buf.split_inclusive(|&b| b == b'\n') {
                        let line_done = piece.ends_with(b"\n");
                        let text = piece.strip_suffix(b"\n").unwrap_or(piece);
                        let room = STDERR_LINE.saturating_sub(g.stderr_line.len());
                        g.stderr_line
                            .extend_from_slice(&text[..text.len().min(room)]);
                        if line_done && !g.stderr_line.is_empty() {
                            self.logger.log(
                                Level::Error,
                                format_args!(
                                    "cgi {}: {}",
                                    g.script,
                                    String::from_utf8_lossy(&g.stderr_line)
                                ),
                            );
                            g.stderr_line.clear();
                        }
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => g.stderr_ready = false,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => {
                    if let Some(fd) = g.stderr.take() {
                        let _ = self
                            .poll
                            .registry()
                            .deregister(&mut SourceFd(&fd.as_raw_fd()));
                    }
                    return;
                }
            }
        }
    }

    /// Releases the child (reaped now or later), logs the request, and
    /// lets the connection go on (or close).
    pub(super) fn cgi_end(&mut self, c: &mut Conn) {
        self.flush_stderr_line(c);
        let Some(g) = self.cgi_release(c) else { return };
        if self.logger.access_enabled() {
            // Logged once the response's last byte has left (or the
            // connection ended), with what was sent.
            let rec = super::request_record(c.peer.ip(), self.wall, &g.request.req, g.status);
            let end = self.queued_end(c);
            let body = end.saturating_sub(g.body_from);
            let log = &mut self.logger;
            super::access_log::ending(&mut c.out, log, end, body, g.request.started, &rec);
            super::settle(&mut self.logger, &mut c.out, c.sent, false);
        }
        if g.broken || !g.keep_alive {
            c.close_after = true;
        }
        c.phase = Phase::Idle;
        c.since = self.now;
    }

    /// A timed-out or abandoned CGI request: kill the child's group.
    pub(super) fn cgi_timeout(&mut self, c: &mut Conn) {
        if let Some(g) = c.cgi.as_ref() {
            self.logger.log(
                Level::Error,
                format_args!("cgi {}: timed out; killed", g.script),
            );
        }
        self.cgi_fail(c, Status::GATEWAY_TIMEOUT);
    }

    /// Kills the child of a connection that is going away.
    pub(super) fn cgi_abandon(&mut self, c: &mut Conn) {
        if let Some(g) = c.cgi.as_mut() {
            self.kill_child(g.pid);
            g.broken = true;
            g.status = if g.sent_any { g.status } else { 499 };
        }
        self.cgi_end(c);
    }

    /// `Location: /local/path` with no body (RFC 3875 §6.2.2): the server
    /// answers as if that had been requested, with GET.
    fn cgi_local_redirect(&mut self, c: &mut Conn, target: &[u8]) {
        let Some(g) = c.cgi.as_mut() else { return };
        self.kill_child(g.pid);
        // The new request: the redirected target with the original header
        // lines (but no body: the method becomes GET).
        let redirected = g.request.req.redirected(target, &self.limits);
        // Other connections' requests may have run since it started.
        let (started, redirects) = (g.request.started, g.request.redirects + 1);
        // The original request is not logged; the redirected one is.
        self.cgi_end_quiet(c);
        let failure = match redirected {
            _ if redirects > MAX_REDIRECTS => {
                self.logger
                    .log(Level::Error, format_args!("cgi: too many local redirects"));
                Status::INTERNAL_SERVER_ERROR
            }
            Some(req) => {
                self.req = req;
                self.req_start = started;
                // A static answer lands in the staging queue, which the
                // connection's loop flushes right after its own queue.
                self.dispatch(c, redirects);
                return;
            }
            None => Status::BAD_GATEWAY,
        };
        self.scratch.clear();
        let plan = Plan::error(failure, &mut self.scratch);
        let parts = head_parts(&self.cfg, &self.date, Connection::Close, false);
        let _ = response::queue(&mut c.out, plan, &self.scratch, &parts);
        c.close_after = true;
    }

    /// Ends a CGI request without an access-log line.
    fn cgi_end_quiet(&mut self, c: &mut Conn) {
        self.cgi_release(c);
    }

    /// Detaches the connection's child: its pipes leave the loop and close,
    /// and it is reaped now or, if still running, later from the zombie
    /// list. Returns what is left of the request, for the log.
    fn cgi_release(&mut self, c: &mut Conn) -> Option<CgiRun> {
        let mut g = *c.cgi.take()?;
        let reg = self.poll.registry();
        for fd in [g.stdin.take(), g.stdout.take(), g.stderr.take()]
            .into_iter()
            .flatten()
        {
            let _ = reg.deregister(&mut SourceFd(&fd.as_raw_fd()));
        }
        self.release_child(g.pid);
        self.cgi_running -= 1;
        Some(g)
    }

    /// Kills the process group of the child `pid`.
    pub(super) fn kill_child(&self, pid: i32) {
        match &self.launcher {
            Some(l) => l.kill_group(pid),
            None => spawn::kill_group(pid),
        }
    }

    /// The request of child `pid` is over: it is reaped now or, if still
    /// running, later (and killed if it outlives the CGI timeout), here
    /// from the zombie list or by the launcher that started it.
    fn release_child(&mut self, pid: i32) {
        match &self.launcher {
            Some(l) => l.release(pid),
            None => {
                if !matches!(spawn::try_reap(pid), Ok(Some(_))) {
                    self.zombies.push((pid, self.now));
                }
            }
        }
    }

    /// Reaps children that outlived their request; kills those that
    /// linger past the CGI timeout; at shutdown (`all`), kills and waits.
    pub(super) fn reap_zombies(&mut self, all: bool) {
        let limit = self.cfg.timeouts.cgi;
        let now = self.now;
        self.zombies.retain(|&(pid, since)| {
            if all || now.saturating_duration_since(since) >= limit {
                spawn::kill_group(pid);
            }
            loop {
                match spawn::try_reap(pid) {
                    Ok(Some(_)) | Err(_) => return false,
                    Ok(None) if all => std::thread::sleep(std::time::Duration::from_millis(5)),
                    Ok(None) => return true,
                }
            }
        });
    }
    fn flush_stderr_line(&mut self, c: &mut Conn) {
        let Some(g) = c.cgi.as_mut() else { return };
        if !g.stderr_line.is_empty() {
            self.logger.log(
                Level::Error,
                format_args!(
                    "cgi {}: {}",
                    g.script,
                    String::from_utf8_lossy(&g.stderr_line)
                ),
            );
            g.stderr_line.clear();
        }
    }
}

/// The host part of a Host value (`example.com:8080` → `example.com`,
/// `[::1]:80` → `[::1]`).
fn host_without_port(host: &[u8]) -> &[u8] {
    if host.starts_with(b"[") {
        return match host.iter().position(|&b| b == b']') {
            Some(end) => &host[..=end],
            None => host,
        };
    }
    match host.iter().rposition(|&b| b == b':') {
        Some(colon) => &host[..colon],
        None => host,
    }
}
