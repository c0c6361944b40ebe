//! Requests for embedded handlers (see [`crate::handlers::app`]) whose
//! body must be gathered first: the request is held with its body until
//! the body is complete, then the router calls the handler on this
//! thread and its answer is queued like any other.

use super::*;

/// A request whose handler waits for the body.
#[derive(Debug)]
pub struct AppCall {
    /// Index of the mount in the router's list.
    mount: usize,
    /// The request.
    held: Held,
    /// The body so far, de-chunked (`limits.max_body` bounds it).
    pub body: Vec<u8>,
    /// How much of it counts against `limits.handler_bodies`.
    counted: usize,
}

impl Worker {
    /// Holds the current request for the handler of `mount` until its
    /// body is in.
    pub(super) fn hold_for_handler(&mut self, c: &mut Conn, mount: usize, redirects: u8) {
        if self.req.expect_continue() {
            // The handler will read the body (RFC 9110 §10.1.1).
            self.stage.push_bytes(CONTINUE);
        }
        c.app = Some(Box::new(AppCall {
            mount,
            held: self.hold(redirects),
            body: Vec::new(),
            counted: 0,
        }));
    }

    /// Takes the connection's pending handler call, if any, and stops
    /// counting its body against `limits.handler_bodies`.
    pub(super) fn take_app(&mut self, c: &mut Conn) -> Option<AppCall> {
        let call = *c.app.take()?;
        self.app_held -= call.counted as u64;
        Some(call)
    }

    /// Counts what the pending call's body grew by. If the worker then
    /// holds more than
    /// `limits.handler_bodies`, the request is answered 503 (and the
    /// connection closed), and false returned: memory for bodies is
    /// bounded however many clients send them at once.
    pub(super) fn hold_app_body(&mut self, c: &mut Conn) -> bool {
        let Some(call) = c.app.as_mut() else {
            return true;
        };
        self.app_held += (call.body.len() - call.counted) as u64;
        call.counted = call.body.len();
        if self.app_held <= self.cfg.limits.handler_bodies {
            return true;
        }
        self.logger.log(
            Level::Warn,
            format_args!(
                "client {}: 503: the request bodies held for handlers would exceed limits.handler_bodies",
                c.peer.ip()
            ),
        );
        if let Some(call) = self.take_app(c) {
            self.finish_app(c, call, Some(Status::SERVICE_UNAVAILABLE));
        }
        false
    }

    /// The body of `call` is in (or, with `error`, cannot be read): runs
    /// the handler, or answers `error` and closes.
    pub(super) fn finish_app(&mut self, c: &mut Conn, call: AppCall, error: Option<Status>) {
        if let Some(status) = error {
            self.refuse_held(c, call.held, status);
            return;
        }
        self.resume(call.held);
        let plan = self.router.call_handler(
            call.mount,
            &self.req,
            &call.body,
            c.peer,
            &mut self.scratch,
            &mut self.logger,
        );
        self.answer(c, plan, None);
    }
}
