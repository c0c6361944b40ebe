//! Request bodies an answer waits for (see [`crate::server::waits`]):
//!
//! - an embedded handler's (see [`crate::handlers::app`]): gathered in
//!   memory, the handler called on this thread once it is in; a worker
//!   holds at most `limits.handler_bodies` of such bodies at once and
//!   answers 503 to the request that would go beyond;
//! - a chunked body on a CGI route, held whole: a chunked body has no
//!   length until its last chunk, and RFC 3875 §4.1.2 says the server
//!   must set `CONTENT_LENGTH` whenever there is a body (CGI.pm, php-cgi
//!   and Python's cgi module read nothing without it): so the body is
//!   held first (in a [`crate::handlers::spool::Spool`]: memory, then an
//!   unnamed temporary file in `temp_dir`), bounded by `limits.max_body`,
//!   and the program starts once it is complete, with its length (what
//!   lighttpd does).
//!
//! A body refused while it arrives (bad chunk framing, too large) is
//! answered 400/413 before any handler or program runs.

use super::Worker;
use crate::config::Level;
use crate::http::Status;
use crate::server::conn::Conn;
use crate::server::h1::Waiting;
use crate::server::waits::{HandlerWait, WholeBody};

impl Worker {
    /// Counts what the body a handler waits for grew by. If the worker
    /// then holds more than `limits.handler_bodies`, the request is
    /// answered 503 (and the connection closed), and false returned:
    /// memory for bodies is bounded however many clients send them at once.
    pub(super) fn keep_handler_body(&mut self, c: &mut Conn) -> bool {
        let Some(wait) = c.h1.handler_wait() else {
            return true;
        };
        self.counts.handler_bodies += (wait.body.len() - wait.counted) as u64;
        wait.counted = wait.body.len();
        if self.counts.handler_bodies <= self.settings.cfg.limits.handler_bodies {
            return true;
        }
        self.logger.log(
            Level::Warn,
            format_args!(
                "client {}: 503: the request bodies held for handlers would exceed limits.handler_bodies",
                c.peer.ip()
            ),
        );
        if let Waiting::Handler(wait) = c.h1.take_waiting() {
            self.finish_handler(c, *wait, Some(Status::SERVICE_UNAVAILABLE));
        }
        false
    }

    /// Stops counting the body of a handler whose connection goes away.
    pub(super) fn forget_handler_body(&mut self, c: &mut Conn) {
        if let Some(wait) = c.h1.handler_wait() {
            self.counts.handler_bodies -= wait.counted as u64;
        }
    }

    /// The body `wait` waited for is in (or, with `error`, cannot be read):
    /// runs the handler, or answers `error` and closes.
    pub(super) fn finish_handler(
        &mut self,
        c: &mut Conn,
        wait: HandlerWait,
        error: Option<Status>,
    ) {
        self.counts.handler_bodies -= wait.counted as u64;
        if let Some(status) = error {
            self.refuse_held(c, wait.held, status);
            return;
        }
        self.resume(wait.held);
        let (router, mut routing) = self.routing(c);
        let plan = router.call_handler(wait.mount, &wait.body, &mut routing);
        self.answer(c, plan, None);
    }

    /// Whether the body being held whole could be kept; if not (the
    /// temporary file could not be made or written), the request is
    /// answered 500 and false returned.
    pub(super) fn keep_whole_body(&mut self, c: &mut Conn) -> bool {
        let Some(e) = c.h1.whole_body().and_then(|whole| whole.body.take_error()) else {
            return true;
        };
        let Waiting::Whole(whole) = c.h1.take_waiting() else {
            return true;
        };
        self.logger.log(
            Level::Error,
            format_args!(
                "{}: cannot hold the request body in {}: {e}",
                whole.resume.label(),
                self.settings.cfg.temp_dir.display()
            ),
        );
        self.refuse_held(c, whole.held, Status::INTERNAL_SERVER_ERROR);
        false
    }

    /// The body held whole is complete: the router answers with it.
    pub(super) fn answer_whole_body(&mut self, c: &mut Conn, whole: WholeBody) {
        let redirects = self.resume(whole.held);
        let (router, mut routing) = self.routing(c);
        let plan = router.answer_whole(&whole.resume, whole.body, &mut routing);
        self.answer_or_pipe(c, plan, None, redirects);
    }
}
