//! A CGI request's body on its way to the program's stdin.
//!
//! With a Content-Length the body streams to stdin as it arrives. A
//! chunked body has no length until its last chunk, and RFC 3875 §4.1.2
//! says the server must set `CONTENT_LENGTH` whenever there is a body
//! (CGI.pm, php-cgi and Python's cgi module read nothing without it): so
//! the body is held first ([`CgiWait`], in a [`Spool`]: memory, then an
//! unnamed temporary file in `temp_dir`), bounded by `limits.max_body`,
//! and the program starts once it is complete, with its length, reading
//! it from there (what lighttpd does). A body refused while it arrives
//! (bad chunk framing, too large) is answered 400/413 before any program
//! runs.

use super::*;
use crate::server::spool::Spool;

/// A request for a CGI program whose chunked body is still arriving.
#[derive(Debug)]
pub struct CgiWait {
    script: Script,
    /// The request.
    held: Held,
    /// The body so far.
    pub(in crate::server::worker) body: Spool,
}

impl Worker {
    /// Holds the chunked body of the current request for `script` until
    /// it is complete (see the module documentation). A 503 at once if
    /// the program could not start now anyway, rather than after the
    /// whole upload.
    pub(in crate::server::worker) fn hold_cgi_body(
        &mut self,
        c: &mut Conn,
        script: Script,
        redirects: u8,
    ) -> Option<Plan> {
        if let Err(plan) = self.over_process_limit() {
            return Some(plan);
        }
        if self.req.expect_continue() {
            // The body is wanted (RFC 9110 §10.1.1).
            self.stage.push_bytes(CONTINUE);
        }
        c.cgi_wait = Some(Box::new(CgiWait {
            script,
            held: self.hold(redirects),
            body: Spool::default(),
        }));
        None
    }

    /// Whether the body being held could be kept; if not (the temporary
    /// file could not be made or written), the request is answered 500
    /// and false returned.
    pub(in crate::server::worker) fn check_held_cgi_body(&mut self, c: &mut Conn) -> bool {
        let Some(e) = c.cgi_wait.as_mut().and_then(|w| w.body.take_error()) else {
            return true;
        };
        let Some(w) = c.cgi_wait.take() else {
            return true;
        };
        self.logger.log(
            Level::Error,
            format_args!(
                "cgi {}: cannot hold the request body in {}: {e}",
                w.script.script_filename.display(),
                self.cfg.temp_dir.display()
            ),
        );
        self.refuse_held(c, w.held, Status::INTERNAL_SERVER_ERROR);
        false
    }

    /// The held body is complete: starts the program with it.
    pub(in crate::server::worker) fn start_held_cgi(&mut self, c: &mut Conn, w: CgiWait) {
        let redirects = self.resume(w.held);
        if let Err(plan) = self.start_cgi(c, w.script, redirects, Some(w.body)) {
            self.answer(c, plan, None);
        }
    }

    /// The held body was refused (`status`): answered before any program
    /// runs, and the connection closes (the rest of the body cannot be
    /// told from a next request).
    pub(in crate::server::worker) fn refuse_held_cgi(
        &mut self,
        c: &mut Conn,
        w: CgiWait,
        status: Status,
    ) {
        self.refuse_held(c, w.held, status);
    }

    /// A body streaming to a running program was refused (`status`). If
    /// the program has not answered yet, its process group is killed, its
    /// slot freed, and the client gets `status` instead of its output. If
    /// it has started answering, that answer cannot be taken back: the
    /// program is killed and the connection closed, with the response cut
    /// short (the client can tell from its framing), and a log line says
    /// why.
    pub(in crate::server::worker) fn cgi_body_refused(&mut self, c: &mut Conn, status: Status) {
        let answering = c.cgi.as_ref().is_some_and(|g| g.sent_any);
        if answering {
            if let Some(g) = c.cgi.as_ref() {
                self.logger.log(
                    Level::Info,
                    format_args!(
                        "cgi {}: request body refused ({}) after the program started answering; response cut short",
                        g.script, status.0
                    ),
                );
            }
        }
        self.cgi_fail(c, status);
    }

    pub(super) fn close_stdin(&mut self, c: &mut Conn) {
        if let Some(g) = c.cgi.as_mut() {
            if let Some(fd) = g.stdin.take() {
                let _ = self
                    .poll
                    .registry()
                    .deregister(&mut SourceFd(&fd.as_raw_fd()));
            }
            g.stdin_buf = Vec::new();
            g.held = None;
        }
    }

    /// Writes what waits for the child's stdin (refilled from a held body
    /// as it drains); closes stdin once the whole body is in. Returns
    /// whether anything moved.
    pub(super) fn pump_stdin(&mut self, c: &mut Conn) -> bool {
        let Some(g) = c.cgi.as_mut() else {
            return false;
        };
        let mut moved = false;
        let mut unreadable = None;
        while g.stdin_ready && g.stdin.is_some() {
            if g.stdin_buf.is_empty() {
                let Some(held) = g.held.as_mut() else { break };
                match held.read_into(&mut g.stdin_buf, STDIN_CAP) {
                    Ok(0) => {
                        g.held = None;
                        break;
                    }
                    Ok(_) => {}
                    Err(e) => {
                        unreadable = Some(e);
                        break;
                    }
                }
            }
            let Some(fd) = g.stdin.as_ref() else { break };
            match crate::sys::net::write_fd(fd, &g.stdin_buf) {
                Ok(n) => {
                    g.stdin_buf.drain(..n);
                    moved = true;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => g.stdin_ready = false,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => {
                    // The script does not read its input (EPIPE): the rest
                    // of the body is read from the client and dropped.
                    self.close_stdin(c);
                    return true;
                }
            }
        }
        if let Some(e) = unreadable {
            self.logger.log(
                Level::Error,
                format_args!(
                    "cgi {}: cannot read back the request body held in a temporary file: {e}",
                    g.script
                ),
            );
            self.cgi_fail(c, Status::INTERNAL_SERVER_ERROR);
            return true;
        }
        let body_done = c.body.is_none() && g.held.is_none();
        if body_done && g.stdin_buf.is_empty() && g.stdin.is_some() {
            self.close_stdin(c);
        }
        moved
    }
}
