//! Requests for embedded handlers (see [`crate::handlers::app`]): routed
//! by path, the body gathered first, the handler called on this thread,
//! its answer queued like any other.

use super::*;
use crate::handlers::app::{self, Response};
use crate::handlers::static_files::apply_header_rules;
use crate::handlers::Body;

/// A request whose handler waits for the body.
#[derive(Debug)]
pub struct AppCall {
    /// Index of the mount in the worker's list.
    mount: usize,
    /// The request head, parsed again once the body is in.
    head: Vec<u8>,
    /// The body so far, de-chunked (`limits.max_body` bounds it).
    pub body: Vec<u8>,
    /// How much of it counts against `limits.handler_bodies`.
    counted: usize,
    /// The user `[[auth]]` authenticated for this request.
    user: Option<Vec<u8>>,
    /// When the request's first byte arrived.
    started: Instant,
}

impl Worker {
    /// For a path (decoded in `scratch.path`) under a mount: the answer
    /// (`Some(Some(plan))`), or `Some(None)` when the handler is to run
    /// once the body is in. `None` for any other path.
    pub(super) fn route_app(
        &mut self,
        c: &mut Conn,
        req: &Request,
        head: &[u8],
    ) -> Option<Option<Plan>> {
        let mount = self
            .mounts
            .iter()
            .position(|m| m.rest(&self.scratch.path).is_some())?;
        if matches!(req.body, BodyFraming::None | BodyFraming::Length(0)) {
            return Some(Some(self.call_app(mount, c, req, &[])));
        }
        if req.expect_continue {
            // The handler will read the body (RFC 9110 §10.1.1).
            self.stage.push_bytes(CONTINUE);
        }
        c.app = Some(Box::new(AppCall {
            mount,
            head: head.to_vec(),
            body: Vec::new(),
            counted: 0,
            user: self.authed.then(|| self.auth_user.clone()),
            started: self.req_start,
        }));
        Some(None)
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
        let user = call.user.as_deref();
        if let Some(status) = error {
            self.refuse_held(c, &call.head, user, call.started, status);
            return;
        }
        self.with_held(c, &call.head, user, call.started, |me, c, req| {
            let (raw_path, _) = path::split_target(req.target);
            let _ = path::decode_and_normalize(raw_path, &mut me.scratch.path);
            let plan = me.call_app(call.mount, c, req, &call.body);
            me.answer(c, req, plan, None);
        });
    }

    /// Calls the handler of mount `i` for `req` (whose decoded path is in
    /// `scratch.path`) and turns what it answered into a plan.
    fn call_app(&mut self, i: usize, c: &Conn, req: &Request, body: &[u8]) -> Plan {
        let mount = &self.mounts[i];
        let path = std::mem::take(&mut self.scratch.path);
        let (_, query) = path::split_target(req.target);
        let areq = app::Request {
            method: req.method_token,
            path: &path,
            rest: mount.rest(&path).unwrap_or_default(),
            query,
            target: req.target,
            headers: req.headers,
            body,
            peer: c.peer,
            user: self.authed.then_some(&self.auth_user[..]),
        };
        let mut resp = Response::new(&mut self.scratch);
        let ran = catch_unwind(AssertUnwindSafe(|| mount.handler.handle(&areq, &mut resp)));
        let status = resp.status();
        self.scratch.path = path;
        let failure = match ran {
            Err(_) => Some("panicked".to_string()),
            Ok(()) if !(200..=599).contains(&status) => {
                Some(format!("answered with status {status}, not a final one"))
            }
            Ok(()) => None,
        };
        if let Some(why) = failure {
            self.logger.log(
                Level::Error,
                format_args!(
                    "handler at {} {why} for {}",
                    String::from_utf8_lossy(&self.mounts[i].prefix),
                    String::from_utf8_lossy(req.target)
                ),
            );
            self.scratch.headers.clear();
            self.scratch.body.clear();
            return Plan::error(Status::INTERNAL_SERVER_ERROR, &mut self.scratch);
        }
        apply_header_rules(&self.site, &mut self.scratch);
        Plan {
            status: Status(status),
            body: Body::Buffer,
            close: false,
        }
    }
}
