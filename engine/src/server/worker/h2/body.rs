//! Request bodies on HTTP/2 streams: DATA frames for a request that
//! waits for its body (an embedded handler's, held in memory; a CGI
//! program's of unknown length, held whole first), bodies nobody wants
//! (read and dropped, their credit given back), and bodies that stop
//! coming (408).

use crate::config::Level;
use crate::handlers::Plan;
use crate::http::parse::BodyFraming;
use crate::http::Status;
use crate::server::conn::Conn;
use crate::server::worker::Worker;

impl Worker {
    /// Body bytes of stream `id` arrived.
    pub(super) fn h2_data(&mut self, c: &mut Conn, id: u32, data: &[u8], end_stream: bool) {
        if Self::h2_pipe_data(c, id, data, end_stream) {
            return;
        }
        let Some(s) = c.h2.as_mut() else { return };
        if let Some(w) = s.answer(id).and_then(|a| a.check.as_mut()) {
            // Its password is being checked: the body waits, its credit
            // held back, so the stream's window bounds it.
            w.body.extend_from_slice(data);
            w.body_done |= end_stream;
            return;
        }
        // Bodies nobody waits for are dropped: their credit goes back now.
        s.conn.release(id, data.len());
        let Some(a) = s.answer(id) else { return };
        if a.whole.is_some() {
            self.h2_hold_body(c, id, data, end_stream);
            return;
        }
        let Some(w) = a.wait.as_mut() else { return };
        let max = self.settings.cfg.limits.max_body;
        self.counts.handler_bodies += data.len() as u64;
        w.body.extend_from_slice(data);
        let over_body = w.body.len() as u64 > max;
        let over_all = self.counts.handler_bodies > self.settings.cfg.limits.handler_bodies;
        if !end_stream && !over_body && !over_all {
            return;
        }
        let Some(mut a) = s.take(id) else { return };
        let Some(w) = a.wait.take() else { return };
        self.counts.handler_bodies -= w.body.len() as u64;
        self.current.req = w.req;
        self.current.start = a.started;
        self.current.scratch.clear();
        let plan = if over_body {
            Plan::error(Status::CONTENT_TOO_LARGE, &mut self.current.scratch)
        } else if over_all {
            Plan::error(Status::SERVICE_UNAVAILABLE, &mut self.current.scratch)
        } else {
            let (router, mut routing) = self.routing(c);
            router.call_handler(w.mount, &w.body, &mut routing)
        };
        self.h2_answer(c, id, plan, 0);
        if !end_stream {
            self.h2_refuse_rest(c, id);
        }
    }

    /// Body bytes of a request held whole before its program starts (a
    /// body of unknown length for CGI, which must be told its length:
    /// as over HTTP/1.1, in memory, then in an unnamed file in
    /// `temp_dir`, up to `limits.max_body`). Once it is all in, the
    /// program starts with it.
    fn h2_hold_body(&mut self, c: &mut Conn, id: u32, data: &[u8], end_stream: bool) {
        let Some(w) =
            c.h2.as_mut()
                .and_then(|s| s.answer(id))
                .and_then(|a| a.whole.as_mut())
        else {
            return;
        };
        w.body.push(data, &self.settings.cfg.temp_dir);
        let too_large = w.body.len() > self.settings.cfg.limits.max_body;
        let error = w.body.take_error();
        if !end_stream && !too_large && error.is_none() {
            return;
        }
        let Some(w) =
            c.h2.as_mut()
                .and_then(|s| s.take(id))
                .and_then(|mut a| a.whole.take())
        else {
            return;
        };
        let label = w.resume.label();
        let redirects = self.resume(w.held);
        let plan = if too_large {
            Plan::error(Status::CONTENT_TOO_LARGE, &mut self.current.scratch)
        } else if let Some(e) = error {
            let dir = self.settings.cfg.temp_dir.display();
            self.logger.log(
                Level::Error,
                format_args!("{label}: cannot hold the request body in {dir}: {e}"),
            );
            Plan::error(Status::INTERNAL_SERVER_ERROR, &mut self.current.scratch)
        } else {
            let (router, mut routing) = self.routing(c);
            router.answer_whole(&w.resume, w.body, &mut routing)
        };
        self.h2_answer(c, id, plan, redirects);
        if !end_stream {
            self.h2_refuse_rest(c, id);
        }
    }

    /// The rest of stream `id`'s request body (of the current request)
    /// is not wanted: it was answered without it. What the client said it
    /// would send (up to 64 MiB), or else `limits.max_body`, is read and
    /// dropped, so that a client that sends its whole body before it
    /// reads still gets the answer; beyond that the stream is reset (see
    /// `h2::Conn::discard_body`).
    pub(super) fn h2_refuse_rest(&mut self, c: &mut Conn, id: u32) {
        let declared = match self.current.req.body() {
            BodyFraming::Length(n) => n.min(64 << 20),
            _ => 0,
        };
        if let Some(s) = c.h2.as_mut() {
            s.conn
                .discard_body(id, declared.max(self.settings.cfg.limits.max_body));
        }
    }

    /// The connection has received nothing for `timeouts.body`: every
    /// request still waiting for its body (for a handler, or held whole
    /// for a program) is answered 408 and the rest of its body dropped.
    /// Whether any was.
    pub(in crate::server::worker) fn h2_body_timeouts(&mut self, c: &mut Conn) -> bool {
        let waiting: Vec<u32> = match c.h2.as_ref() {
            Some(s) => s
                .answers
                .iter()
                .filter(|a| a.wait.is_some() || a.whole.is_some())
                .map(|a| a.id)
                .collect(),
            None => return false,
        };
        for &id in &waiting {
            let Some(mut a) = c.h2.as_mut().and_then(|s| s.take(id)) else {
                continue;
            };
            let req = match (a.wait.take(), a.whole.take()) {
                (Some(w), _) => {
                    self.counts.handler_bodies -= w.body.len() as u64;
                    w.req
                }
                (None, Some(w)) => w.held.req,
                (None, None) => continue,
            };
            self.current.req = req;
            self.current.start = a.started;
            self.current.scratch.clear();
            if self.logger.enabled(Level::Info) {
                self.logger.log(
                    Level::Info,
                    format_args!("client {}: request body timed out (408)", c.peer.ip()),
                );
            }
            let plan = Plan::error(Status::REQUEST_TIMEOUT, &mut self.current.scratch);
            self.h2_answer(c, id, plan, 0);
            self.h2_refuse_rest(c, id);
        }
        !waiting.is_empty()
    }
}
