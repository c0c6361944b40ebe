//! Requests whose answer waits for their whole body: a chunked body on a
//! CGI route. A chunked body has no length until its last chunk, and RFC
//! 3875 §4.1.2 says the server must set `CONTENT_LENGTH` whenever there
//! is a body (CGI.pm, php-cgi and Python's cgi module read nothing
//! without it): so the body is held first ([`WholeBody`], in a [`Spool`]:
//! memory, then an unnamed temporary file in `temp_dir`), bounded by
//! `limits.max_body`, and the router is asked again once it is complete,
//! with its length (what lighttpd does). A body refused while it arrives
//! (bad chunk framing, too large) is answered 400/413 before any program
//! runs.

use super::*;
use crate::handlers::cgi::Script;
use crate::handlers::spool::Spool;

/// A request whose chunked body is still arriving, held whole.
#[derive(Debug)]
pub struct WholeBody {
    /// Who answers once the body is in.
    script: Script,
    /// The request.
    pub(super) held: Held,
    /// The body so far.
    pub(super) body: Spool,
}

impl Worker {
    /// Holds the current request until its body is complete, for `script`.
    pub(super) fn hold_whole_body(&mut self, c: &mut Conn, script: Script, redirects: u8) {
        if self.req.expect_continue() {
            // The body is wanted (RFC 9110 §10.1.1).
            self.stage.push_bytes(CONTINUE);
        }
        c.whole_body = Some(Box::new(WholeBody {
            script,
            held: self.hold(redirects),
            body: Spool::default(),
        }));
    }

    /// Whether the body being held could be kept; if not (the temporary
    /// file could not be made or written), the request is answered 500
    /// and false returned.
    pub(super) fn check_whole_body(&mut self, c: &mut Conn) -> bool {
        let Some(e) = c.whole_body.as_mut().and_then(|w| w.body.take_error()) else {
            return true;
        };
        let Some(w) = c.whole_body.take() else {
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

    /// The held body is complete: the router answers with it.
    pub(super) fn answer_whole_body(&mut self, c: &mut Conn, w: WholeBody) {
        let redirects = self.resume(w.held);
        let local = || c.local_addr();
        let client = Client {
            peer: c.peer,
            now: self.now,
            local: &local,
        };
        let plan = self.router.start_cgi(
            &w.script,
            &self.req,
            client,
            Some(w.body),
            &mut self.scratch,
            &mut self.logger,
        );
        self.answer_or_pipe(c, plan, None, redirects);
    }
}
