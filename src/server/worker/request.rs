//! Answering requests: parsing what arrived, routing each request to
//! authentication, CGI or the static handler, queueing the answer, and
//! logging it.

use super::*;

/// A request that waits (for its password check, its body, a CGI
/// program): the request itself, when its first byte arrived, and how
/// many CGI local redirects led to it.
#[derive(Debug)]
pub struct Held {
    pub req: OwnedRequest,
    pub started: Instant,
    pub redirects: u8,
}

/// A request held while its password is hashed off the loop; it is
/// routed again once the outcome is in (`ready`).
#[derive(Debug)]
pub struct AuthWait {
    id: u64,
    held: Held,
    ready: bool,
}

impl Worker {
    /// Paces this connection's output if the request's path (decoded in
    /// `scratch.path` by the handler) matches a `[[throttle]]` rule.
    pub(super) fn throttle_for(&mut self, c: &mut Conn) {
        if self.cfg.throttle.is_empty() || c.throttle.is_some() {
            return;
        }
        let path = &self.scratch.path;
        if let Some((i, rule)) = self
            .cfg
            .throttle
            .iter()
            .enumerate()
            .find(|(_, r)| r.matcher.matches(path))
        {
            let own = rule
                .connection_rate
                .map(|r| crate::access::throttle::Rate::new(r, self.now));
            let shared = self.site.throttles.get(i).cloned().flatten();
            c.throttle = Some(Box::new(crate::access::throttle::Throttle { shared, own }));
        }
    }

    /// Answers the complete requests at the start of `input`; returns how
    /// many bytes were consumed. Bytes from `fresh` on arrived just now
    /// (those before it, in earlier reads).
    pub(super) fn process(&mut self, c: &mut Conn, input: &[u8], fresh: usize) -> usize {
        let mut pos = 0;
        while !c.close_after {
            if let Some(wait) = &c.auth_wait {
                // What follows (its body, pipelined requests) waits too.
                if !wait.ready {
                    return pos;
                }
                let wait = c.auth_wait.take().expect("checked above");
                let redirects = self.resume(wait.held);
                self.dispatch(c, redirects);
                continue;
            }
            if let Some(dec) = c.body.as_mut() {
                // Body bytes go to a pipe's input while it wants them
                // (reading pauses when its buffer is full), else nowhere.
                let forward = c.pipe.as_mut().filter(|p| p.wants_body());
                let room = match &forward {
                    Some(p) => pipe::INPUT_CAP.saturating_sub(p.input_buf.len()),
                    None => usize::MAX,
                };
                if room == 0 {
                    return pos;
                }
                let end = pos + room.min(input.len() - pos);
                let mut buf = forward
                    .map(|p| &mut p.input_buf)
                    .or(c.app.as_mut().map(|a| &mut a.body));
                let mut held = c.whole_body.as_mut().map(|w| &mut w.body);
                let temp_dir = &self.cfg.temp_dir;
                let mut sink = |data: &[u8]| {
                    if let Some(b) = buf.as_mut() {
                        b.extend_from_slice(data);
                    } else if let Some(h) = held.as_mut() {
                        h.push(data, temp_dir);
                    }
                };
                match dec.decode(&input[pos..end], &mut sink) {
                    Ok(n) => {
                        pos += n;
                        if n > 0 {
                            c.since = self.now;
                        }
                    }
                    Err(e) => {
                        c.body = None;
                        if self.logger.enabled(Level::Info) {
                            self.logger.log(
                                Level::Info,
                                format_args!(
                                    "client {}: request body refused: {}",
                                    c.peer.ip(),
                                    e.reason
                                ),
                            );
                        }
                        if let Some(app) = self.take_app(c) {
                            // Not answered yet: the handler never runs.
                            self.finish_app(c, app, Some(e.status));
                        } else if let Some(w) = c.whole_body.take() {
                            // Held whole for a program, which never runs.
                            self.refuse_held(c, w.held, e.status);
                        } else if c.pipe.is_some() {
                            self.pipe_body_refused(c, e.status);
                        } else {
                            // The request was answered already (before its
                            // body arrived); a second answer would be taken
                            // for the next request's, so the connection
                            // just ends.
                            c.close_after = true;
                        }
                        return input.len();
                    }
                }
                let done = dec.is_done();
                if !self.hold_app_body(c) || !self.check_whole_body(c) {
                    c.body = None;
                    return input.len();
                }
                if done {
                    c.body = None;
                    if let Some(app) = self.take_app(c) {
                        self.finish_app(c, app, None);
                    } else if let Some(w) = c.whole_body.take() {
                        self.answer_whole_body(c, *w);
                    }
                } else {
                    return pos;
                }
            }
            // Pipelined requests wait until a piped response is complete.
            if c.pipe.is_some() || pos == input.len() || self.stage.buffered() >= STAGE_CAP {
                return pos;
            }
            // This request's first byte came with this read, or with an
            // earlier one (the connection has been in the Head phase since).
            self.req_start = if pos >= fresh { self.now } else { c.since };
            match self.req.parse(&input[pos..], &self.limits) {
                Ok(None) => return pos,
                Err(e) => {
                    self.reject(c, e.status, e.reason);
                    return input.len();
                }
                Ok(Some(head_len)) => {
                    pos += head_len;
                    c.served += 1;
                    self.dispatch(c, 0);
                }
            }
        }
        pos
    }

    /// Answers a request that could not be parsed, and closes after it.
    pub(super) fn reject(&mut self, c: &mut Conn, status: Status, reason: &str) {
        if self.logger.enabled(Level::Info) {
            self.logger.log(
                Level::Info,
                format_args!("client {}: {} ({})", c.peer.ip(), status.0, reason),
            );
        }
        self.scratch.clear();
        let plan = Plan::error(status, &mut self.scratch);
        let parts = head_parts(&self.cfg, &self.date, Connection::Close, false);
        let body = response::queue(&mut self.stage, plan, &self.scratch, &parts).unwrap_or(0);
        if self.logger.access_enabled() {
            let rec = AccessRecord {
                remote: c.peer.ip(),
                time: self.wall,
                method: b"-",
                target: b"-",
                version: "-",
                status: status.0,
                bytes: 0,
                referer: None,
                user_agent: None,
                user: None,
                duration_us: 0,
            };
            let end = self.queued_end(c);
            access_log::ending(
                &mut self.stage,
                &mut self.logger,
                end,
                body,
                self.req_start,
                &rec,
            );
        }
        c.close_after = true;
    }

    /// Routes the current request (`self.req`; `redirects` counts the
    /// CGI local redirects that led to it) and queues its answer, or
    /// holds it until it can be answered.
    pub(super) fn dispatch(&mut self, c: &mut Conn, redirects: u8) {
        self.scratch.clear();
        let mut decoder = None;
        let plan = match self.req.body() {
            BodyFraming::None => self.route(c, redirects),
            framing => match BodyDecoder::new(framing, &self.body_limits) {
                Ok(d) => {
                    decoder = Some(d);
                    self.route(c, redirects)
                }
                Err(e) => {
                    let mut p = Plan::error(e.status, &mut self.scratch);
                    p.close = true;
                    Some(p)
                }
            },
        };
        self.throttle_for(c);
        match plan {
            Some(plan) => self.answer_or_pipe(c, plan, decoder, redirects),
            // An embedded handler answers once the body is in, or a
            // program once the body is held whole: the body goes to it. A
            // request waiting for its password check leaves its body
            // unread until then.
            None if c.auth_wait.is_none() => c.body = decoder,
            None => {}
        }
    }

    /// Runs the router over the current request: the answer, or `None`
    /// when the request is held (a password check, an embedded handler
    /// waiting for the body, a program waiting for the whole body).
    fn route(&mut self, c: &mut Conn, redirects: u8) -> Option<Plan> {
        let local = || c.local_addr();
        let client = Client {
            peer: c.peer,
            now: self.now,
            local: &local,
        };
        let routed = self
            .router
            .route(&mut self.req, client, &mut self.scratch, &mut self.logger);
        match routed {
            Routed::Answer(plan) => Some(plan),
            Routed::Defer(Deferred::Verify(check)) => self.verify_later(c, redirects, check),
            Routed::Defer(Deferred::Handler { mount }) => {
                self.hold_for_handler(c, mount, redirects);
                None
            }
            Routed::Defer(Deferred::WholeBody(script)) => {
                self.hold_whole_body(c, script, redirects);
                None
            }
        }
    }

    /// Answers with `plan`: a pipe body starts being pumped (the request
    /// body, read by `decoder`, goes to it); anything else is queued.
    pub(super) fn answer_or_pipe(
        &mut self,
        c: &mut Conn,
        plan: Plan,
        decoder: Option<BodyDecoder>,
        redirects: u8,
    ) {
        let Plan {
            status,
            body,
            close,
        } = plan;
        let plan = match body {
            Body::Pipe(pipe) => match self.start_pipe(c, *pipe, redirects) {
                Ok(()) => {
                    c.body = decoder;
                    return;
                }
                Err(plan) => plan,
            },
            body => Plan {
                status,
                body,
                close,
            },
        };
        self.answer(c, plan, decoder);
    }

    /// Takes the current request away to hold it.
    pub(super) fn hold(&mut self, redirects: u8) -> Held {
        Held {
            req: std::mem::take(&mut self.req),
            started: self.req_start,
            redirects,
        }
    }

    /// Makes a held request the current one again; returns its redirects.
    pub(super) fn resume(&mut self, held: Held) -> u8 {
        self.req = held.req;
        self.req_start = held.started;
        self.scratch.clear();
        held.redirects
    }

    /// Queues `plan` as the answer to the current request and logs it;
    /// `decoder` reads the request's body to discard it, if it has one
    /// left to read.
    pub(super) fn answer(&mut self, c: &mut Conn, plan: Plan, decoder: Option<BodyDecoder>) {
        let req = &self.req;
        // A final answer sent without `100 Continue` leaves it open whether
        // the body follows (RFC 9110 §10.1.1), so the connection cannot be reused.
        let expect_unread = req.expect_continue() && decoder.is_some();
        let keep = req.keep_alive()
            && !plan.close
            && !expect_unread
            && c.served < self.cfg.limits.keepalive_requests
            && self.draining == Drain::Serve;
        let status = plan.status;
        let connection = Connection::new(keep, req.version());
        let head_only = req.method() == Method::Head;
        let parts = head_parts(&self.cfg, &self.date, connection, head_only);
        let bytes = match response::queue(&mut self.stage, plan, &self.scratch, &parts) {
            Ok(n) => n,
            Err(e) => {
                self.logger.log(
                    Level::Error,
                    format_args!(
                        "reading {} failed: {e}",
                        String::from_utf8_lossy(self.req.target())
                    ),
                );
                c.close_after = true;
                0
            }
        };
        if status.0 >= 500 && self.logger.enabled(Level::Error) {
            self.logger.log(
                Level::Error,
                format_args!(
                    "{} answering {}",
                    status.0,
                    String::from_utf8_lossy(self.req.target())
                ),
            );
        }
        if self.logger.enabled(Level::Debug) && self.scratch.why.is_some() {
            self.log_refusal(c.peer.ip(), status);
        }
        if self.logger.access_enabled() {
            let end = self.queued_end(c);
            let rec = request_record(c.peer.ip(), self.wall, &self.req, status.0);
            access_log::ending(
                &mut self.stage,
                &mut self.logger,
                end,
                bytes,
                self.req_start,
                &rec,
            );
        }
        if keep {
            c.body = decoder;
        } else {
            c.close_after = true;
        }
        // The answer is queued (copied): the scratch buffers are free.
        self.scratch.trim(SCRATCH_KEEP);
    }

    /// Answers a held request whose body was refused with `status`, and
    /// closes: what is left of the body cannot be told from a next request.
    pub(super) fn refuse_held(&mut self, c: &mut Conn, held: Held, status: Status) {
        self.resume(held);
        let mut plan = Plan::error(status, &mut self.scratch);
        plan.close = true;
        self.answer(c, plan, None);
    }

    /// Logs why the current request was answered `status` (the reason
    /// its handler recorded: the file and what was wrong with it), within
    /// the worker's budget of such lines.
    fn log_refusal(&mut self, ip: std::net::IpAddr, status: Status) {
        let Some(why) = self.scratch.why else {
            return;
        };
        self.report_refusals_not_logged();
        if !self.refusals.allow(self.now) {
            return;
        }
        let file = crate::handlers::refusal::Explained {
            why,
            file: &self.scratch.why_file,
            root: &self.cfg.root,
        };
        self.logger.log(
            Level::Debug,
            format_args!(
                "client {ip}: {} for \"{} {} {}\": {file}",
                status.0,
                String::from_utf8_lossy(self.req.method_token()),
                String::from_utf8_lossy(self.req.target()),
                self.req.version().as_str(),
            ),
        );
    }

    /// Says how many reasons for refusals the budget kept out of the log
    /// in the seconds that ended (called per refusal and once a second).
    pub(super) fn report_refusals_not_logged(&mut self) {
        let n = self.refusals.take_unreported(self.now);
        if n > 0 {
            self.logger.log(
                Level::Debug,
                format_args!(
                    "{n} more refused requests were not explained (at most {} a second per worker are)",
                    self.refusals.per_sec()
                ),
            );
        }
    }

    /// Hands `check` to the hashing threads and holds the request until
    /// its outcome is in (see [`Worker::take_checks`]); without them, hashes
    /// here and routes again.
    fn verify_later(&mut self, c: &mut Conn, redirects: u8, check: Check) -> Option<Plan> {
        let id = self.next_check;
        self.next_check += 1;
        let (tx, waker, idx) = (self.checks_tx.clone(), Arc::clone(&self.waker), c.index);
        let done = Box::new(move |outcome: Checked| {
            let _ = tx.send((idx, id, outcome));
            let _ = waker.wake();
        });
        match self.verifier.submit(check, done) {
            Ok(()) => {
                c.auth_wait = Some(Box::new(AuthWait {
                    id,
                    held: self.hold(redirects),
                    ready: false,
                }));
                None
            }
            Err(check) => {
                self.router.settle(check.run());
                self.route(c, redirects)
            }
        }
    }

    /// Takes the outcomes of finished password checks: each waiting
    /// request is answered at once (so the outcome is used before the
    /// next one arrives); one whose client left only leaves a verified
    /// credential remembered.
    pub(super) fn take_checks(&mut self) {
        while let Ok((idx, id, outcome)) = self.checks_rx.try_recv() {
            let waiting = matches!(
                self.conns.get(idx),
                Some(Some(c)) if c.auth_wait.as_ref().is_some_and(|w| w.id == id)
            );
            if !waiting {
                self.router.remember(outcome);
                continue;
            }
            self.router.settle(outcome);
            if let Some(Some(c)) = self.conns.get_mut(idx) {
                if let Some(w) = c.auth_wait.as_mut() {
                    w.ready = true;
                }
            }
            self.on_event(idx, true, false);
        }
    }
}

/// The access-log record of an answered request (its body bytes and
/// duration are filled in once the answer has left).
pub(super) fn request_record(
    remote: std::net::IpAddr,
    time: SystemTime,
    req: &OwnedRequest,
    status: u16,
) -> AccessRecord<'_> {
    AccessRecord {
        remote,
        time,
        method: req.method_token(),
        target: req.target(),
        version: req.version().as_str(),
        status,
        bytes: 0,
        referer: req.header("referer"),
        user_agent: req.header("user-agent"),
        user: req.user(),
        duration_us: 0,
    }
}
