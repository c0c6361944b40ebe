//! Answering requests: parsing what arrived, routing each request to
//! authentication, CGI or the static handler, queueing the answer, and
//! logging it.

use super::*;

/// A request held while its password is hashed off the loop; it is
/// answered from its head once the outcome is in (`ready`).
#[derive(Debug)]
pub struct AuthWait {
    id: u64,
    /// When the request's first byte arrived.
    started: Instant,
    head: Vec<u8>,
    redirects: u8,
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
                self.req_start = wait.started;
                let mut storage = [Header::EMPTY; MAX_HEADERS];
                match parse::parse_request(&wait.head, &self.limits, &mut storage) {
                    Ok(Some(req)) => self.respond_to(c.index, c, &req, &wait.head, wait.redirects),
                    // It parsed when it arrived; the same bytes parse the same.
                    _ => c.close_after = true,
                }
                continue;
            }
            if let Some(dec) = c.body.as_mut() {
                // Body bytes go to a CGI child's stdin while it wants them
                // (reading pauses when its buffer is full), else nowhere.
                let forward = c.cgi.as_mut().filter(|g| g.wants_body());
                let room = match &forward {
                    Some(g) => cgi::STDIN_CAP.saturating_sub(g.stdin_buf.len()),
                    None => usize::MAX,
                };
                if room == 0 {
                    return pos;
                }
                let end = pos + room.min(input.len() - pos);
                let mut buf = forward
                    .map(|g| &mut g.stdin_buf)
                    .or(c.app.as_mut().map(|a| &mut a.body));
                let mut held = c.cgi_wait.as_mut().map(|w| &mut w.body);
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
                        } else if let Some(w) = c.cgi_wait.take() {
                            // Held for a CGI program, which never runs.
                            self.refuse_held_cgi(c, *w, e.status);
                        } else if c.cgi.is_some() {
                            self.cgi_body_refused(c, e.status);
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
                if !self.hold_app_body(c) || !self.check_held_cgi_body(c) {
                    c.body = None;
                    return input.len();
                }
                if done {
                    c.body = None;
                    if let Some(app) = self.take_app(c) {
                        self.finish_app(c, app, None);
                    } else if let Some(w) = c.cgi_wait.take() {
                        self.start_held_cgi(c, *w);
                    }
                } else {
                    return pos;
                }
            }
            // Pipelined requests wait until a CGI response is complete.
            if c.cgi.is_some() || pos == input.len() || self.stage.buffered() >= STAGE_CAP {
                return pos;
            }
            // This request's first byte came with this read, or with an
            // earlier one (the connection has been in the Head phase since).
            self.req_start = if pos >= fresh { self.now } else { c.since };
            let mut storage = [Header::EMPTY; MAX_HEADERS];
            match parse::parse_request(&input[pos..], &self.limits, &mut storage) {
                Ok(None) => return pos,
                Err(e) => {
                    self.reject(c, e.status, e.reason);
                    return input.len();
                }
                Ok(Some(req)) => {
                    let head = &input[pos..pos + req.head_len];
                    pos += req.head_len;
                    c.served += 1;
                    self.respond_to(c.index, c, &req, head, 0);
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

    /// Answers one parsed request (`head` is its raw head; `redirects`
    /// counts CGI local redirects that led here).
    pub(super) fn respond_to(
        &mut self,
        idx: usize,
        c: &mut Conn,
        req: &Request,
        head: &[u8],
        redirects: u8,
    ) {
        self.scratch.clear();
        let mut decoder = None;
        let plan = match req.body {
            BodyFraming::None => self.route(idx, c, req, head, redirects),
            framing => match BodyDecoder::new(framing, &self.body_limits) {
                Ok(d) => {
                    decoder = Some(d);
                    self.route(idx, c, req, head, redirects)
                }
                Err(e) => {
                    let mut p = Plan::error(e.status, &mut self.scratch);
                    p.close = true;
                    Some(p)
                }
            },
        };
        self.throttle_for(c);
        let Some(plan) = plan else {
            // A CGI child or an embedded handler answers; the body (if
            // any) goes to it. A request waiting for its password check
            // leaves its body unread until then.
            if c.auth_wait.is_none() {
                c.body = decoder;
            }
            return;
        };
        self.answer(c, req, plan, decoder);
    }

    /// Queues `plan` as the answer to `req` and logs it; `decoder` reads
    /// the request's body to discard it, if it has one left to read.
    pub(super) fn answer(
        &mut self,
        c: &mut Conn,
        req: &Request,
        plan: Plan,
        decoder: Option<BodyDecoder>,
    ) {
        // A final answer sent without `100 Continue` leaves it open whether
        // the body follows (RFC 9110 §10.1.1), so the connection cannot be reused.
        let expect_unread = req.expect_continue && decoder.is_some();
        let keep = req.keep_alive
            && !plan.close
            && !expect_unread
            && c.served < self.cfg.limits.keepalive_requests
            && self.draining == Drain::Serve;
        let status = plan.status;
        let connection = Connection::new(keep, req.version);
        let parts = head_parts(
            &self.cfg,
            &self.date,
            connection,
            req.method == Method::Head,
        );
        let bytes = match response::queue(&mut self.stage, plan, &self.scratch, &parts) {
            Ok(n) => n,
            Err(e) => {
                self.logger.log(
                    Level::Error,
                    format_args!(
                        "reading {} failed: {e}",
                        String::from_utf8_lossy(req.target)
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
                    String::from_utf8_lossy(req.target)
                ),
            );
        }
        if self.logger.enabled(Level::Debug) && self.scratch.why.is_some() {
            self.log_refusal(c.peer.ip(), req, status);
        }
        if self.logger.access_enabled() {
            let end = self.queued_end(c);
            let user = self.authed.then_some(&self.auth_user[..]);
            let rec = request_record(c.peer.ip(), self.wall, req, status.0, 0, user, 0);
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

    /// Runs `f` for a request held while its body arrived: `head` is
    /// parsed again (it parsed when it arrived; the same bytes parse the
    /// same), and `user` is again the one it authenticated as (other
    /// connections' requests ran in between).
    pub(super) fn with_held(
        &mut self,
        c: &mut Conn,
        head: &[u8],
        user: Option<&[u8]>,
        started: Instant,
        f: impl FnOnce(&mut Worker, &mut Conn, &Request),
    ) {
        let mut storage = [Header::EMPTY; MAX_HEADERS];
        let Ok(Some(req)) = parse::parse_request(head, &self.limits, &mut storage) else {
            c.close_after = true;
            return;
        };
        self.req_start = started;
        self.authed = user.is_some();
        if let Some(u) = user {
            self.auth_user.clear();
            self.auth_user.extend_from_slice(u);
        }
        self.scratch.clear();
        f(self, c, &req);
    }

    /// Answers a held request whose body was refused with `status`, and
    /// closes: what is left of the body cannot be told from a next request.
    pub(super) fn refuse_held(
        &mut self,
        c: &mut Conn,
        head: &[u8],
        user: Option<&[u8]>,
        started: Instant,
        status: Status,
    ) {
        self.with_held(c, head, user, started, |me, c, req| {
            let mut plan = Plan::error(status, &mut me.scratch);
            plan.close = true;
            me.answer(c, req, plan, None);
        });
    }

    /// Logs why `req` was answered `status` (the reason its handler
    /// recorded: the file and what was wrong with it), within the
    /// worker's budget of such lines.
    fn log_refusal(&mut self, ip: std::net::IpAddr, req: &Request, status: Status) {
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
                String::from_utf8_lossy(req.method_token),
                String::from_utf8_lossy(req.target),
                req.version.as_str(),
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
    fn verify_later(
        &mut self,
        idx: usize,
        c: &mut Conn,
        req: &Request,
        head: &[u8],
        redirects: u8,
        check: crate::access::Check,
    ) -> Option<Plan> {
        let id = self.next_check;
        self.next_check += 1;
        let (tx, waker) = (self.checks_tx.clone(), Arc::clone(&self.waker));
        let done = Box::new(move |outcome: Checked| {
            let _ = tx.send((idx, id, outcome));
            let _ = waker.wake();
        });
        match self.verifier.submit(check, done) {
            Ok(()) => {
                c.auth_wait = Some(Box::new(AuthWait {
                    id,
                    started: self.req_start,
                    head: head.to_vec(),
                    redirects,
                    ready: false,
                }));
                None
            }
            Err(check) => {
                if let Some(auth) = self.auth.as_mut() {
                    auth.settle(check.run());
                }
                self.route(idx, c, req, head, redirects)
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
            let Some(auth) = self.auth.as_mut() else {
                continue;
            };
            if !waiting {
                auth.remember(outcome);
                continue;
            }
            auth.settle(outcome);
            if let Some(Some(c)) = self.conns.get_mut(idx) {
                if let Some(w) = c.auth_wait.as_mut() {
                    w.ready = true;
                }
            }
            self.on_event(idx, true, false);
        }
    }

    /// Chooses the handler: a CGI script (started here; `None` returned)
    /// or a static file (its plan returned).
    fn route(
        &mut self,
        idx: usize,
        c: &mut Conn,
        req: &Request,
        head: &[u8],
        redirects: u8,
    ) -> Option<Plan> {
        self.authed = false;
        // Auth rules, mounts and CGI rules match the decoded, normalised
        // path (in `scratch.path`), so no spelling of a path (`/%70rivate/`,
        // `//private/./`) slips by. One that does not decode is the static
        // handler's 400.
        let decoded = (self.auth.is_some() || !self.mounts.is_empty() || self.cgi.is_some())
            && path::decode_and_normalize(path::split_target(req.target).0, &mut self.scratch.path)
                .is_ok();
        if let Some(auth) = self.auth.as_mut() {
            if decoded {
                let ip = c.peer.ip();
                match auth.check(
                    &self.scratch.path,
                    req.header("authorization"),
                    ip,
                    self.now,
                ) {
                    Verdict::Open => {}
                    Verdict::Allowed { user } => {
                        self.auth_user.clear();
                        self.auth_user.extend_from_slice(user);
                        self.authed = true;
                    }
                    Verdict::Challenge {
                        realm_header,
                        failure,
                    } => {
                        if let Some(f) = failure {
                            self.logger
                                .log(Level::Warn, format_args!("{}", f.log_line(ip)));
                        }
                        self.scratch.header("WWW-Authenticate", realm_header);
                        return Some(Plan::error(Status::UNAUTHORIZED, &mut self.scratch));
                    }
                    Verdict::Verify(check) => {
                        return self.verify_later(idx, c, req, head, redirects, check);
                    }
                    Verdict::TooManyFailures { retry_after_secs } => {
                        self.logger.log(
                            Level::Warn,
                            format_args!("auth: {ip} is over its failed-attempt limit; 429"),
                        );
                        let mut v = Vec::with_capacity(20);
                        crate::http::push_u64(&mut v, retry_after_secs);
                        self.scratch.header("Retry-After", &v);
                        return Some(Plan::error(Status::TOO_MANY_REQUESTS, &mut self.scratch));
                    }
                }
            }
            for w in auth.take_warnings() {
                self.logger.log(Level::Warn, format_args!("auth: {w}"));
            }
        }
        if decoded && !self.mounts.is_empty() {
            if let Some(answer) = self.route_app(c, req, head) {
                return answer;
            }
        }
        // Every method reaches a script (WebDAV's PROPFIND, MKCOL, QUERY, …:
        // REQUEST_METHOD is what was sent, RFC 3875 §4.1.12); the static
        // handler answers 405 or 501 only where no script covers the path.
        if let (Some(resolver), true) = (&self.cgi, decoded) {
            let path = &mut self.scratch.path;
            if !(self.cfg.static_files.dotfiles != Dotfiles::Allow
                && path::has_dotfile_segment(path))
            {
                let mut resolved = resolver.resolve(path);
                let base = path.len();
                if matches!(resolved, Resolved::NotCgi) && path.ends_with(b"/") {
                    // An index file may itself be a script (`index.cgi`).
                    for index in &self.cfg.static_files.index {
                        path.truncate(base);
                        path.extend_from_slice(index.as_bytes());
                        if let found @ Resolved::Cgi(_) = resolver.resolve(path) {
                            resolved = found;
                            break;
                        }
                    }
                }
                match resolved {
                    // The static handler goes on from the decoded path.
                    Resolved::NotCgi => path.truncate(base),
                    Resolved::Denied(d) => {
                        let file = d.file.as_os_str().as_encoded_bytes();
                        self.scratch.refuse_file(d.why, file);
                        return Some(Plan::error(d.status, &mut self.scratch));
                    }
                    Resolved::Cgi(script) if req.body == BodyFraming::Chunked => {
                        return self.hold_cgi_body(c, req, head, script, redirects);
                    }
                    Resolved::Cgi(script) => {
                        return self
                            .start_cgi(idx, c, req, head, script, redirects, None)
                            .err();
                    }
                }
            }
        }
        Some(static_files::serve(
            &self.site,
            req,
            &mut self.scratch,
            &mut self.files,
        ))
    }
}

/// The access-log record of an answered request.
pub(super) fn request_record<'a>(
    remote: std::net::IpAddr,
    time: SystemTime,
    req: &Request<'a>,
    status: u16,
    bytes: u64,
    user: Option<&'a [u8]>,
    duration_us: u64,
) -> AccessRecord<'a> {
    AccessRecord {
        remote,
        time,
        method: req.method_token,
        target: req.target,
        version: req.version.as_str(),
        status,
        bytes,
        referer: req.header("referer"),
        user_agent: req.header("user-agent"),
        user,
        duration_us,
    }
}
