//! Answering requests: the connection's protocol finds them in what
//! arrived (see [`crate::server::h1`]); each is routed (see
//! [`crate::server::router`]), and its answer queued and logged, or the
//! request held until it can be answered.

use std::sync::Arc;
use std::time::SystemTime;

use super::clock::Clock;
use super::listen::Listen;
use super::proxied::client_of;
use super::settings::Settings;
use super::{access_log, Request, Worker, SCRATCH_KEEP};
use crate::access::throttle::{Rate, Throttle};
use crate::config::Level;
use crate::handlers::{Body, Plan};
use crate::http::body::BodyDecoder;
use crate::http::parse::{BodyFraming, ParseError};
use crate::http::request::{Field, OwnedRequest};
use crate::http::response::Stamp;
use crate::http::Status;
use crate::log::AccessRecord;
use crate::server::conn::Conn;
use crate::server::drain::Drain;
use crate::server::h1::{Answering, BodyOver, Event, Reading};
#[cfg(feature = "http2")]
use crate::server::h2::upgrade;
use crate::server::router::{Client, Room, Router, Routing};
use crate::server::transport::Link;

/// What HTTP/1.1 made of the input ([`Worker::process`]).
pub(super) enum Processed {
    /// The bytes it consumed.
    Consumed(usize),
    /// The bytes it consumed, up to the end of a request that asks to go
    /// on in h2c (`Upgrade: h2c`, RFC 7540 §3.2) and may: the SETTINGS
    /// payload it carries ([`upgrade::settings`]), and the request, not
    /// answered: the connection driver switches the
    /// protocol (see `Worker::h2c_upgrade`), or answers it over HTTP/1.1.
    #[cfg(feature = "http2")]
    Upgrade(usize, Vec<u8>, Box<Request>),
}

impl Worker {
    /// Paces this connection's output if the path answered for `r` (its
    /// request's, decoded in `scratch.path` by the router, or the file a
    /// handler chose) matches a `[[throttle]]` rule of its site.
    pub(super) fn throttle_for(&mut self, c: &mut Conn, r: &Request) {
        if c.throttle.is_some() {
            return;
        }
        let site = r.req.site();
        if let Some((_, connection_rate, shared)) = self.matching_throttle(site, &r.scratch.path) {
            let own = connection_rate.map(|r| Arc::new(Rate::new(r, self.clock.now)));
            c.throttle = Some(Box::new(Throttle::new(shared, own)));
        }
    }

    /// The first `[[throttle]]` rule of `site` that `path` (the path
    /// answered) matches: its index among every site's rules, its
    /// `connection_rate`, and its `rate`, shared by every worker.
    pub(super) fn matching_throttle(
        &self,
        site: usize,
        path: &[u8],
    ) -> Option<(usize, Option<u64>, Option<Arc<Rate>>)> {
        let rules = &self.settings.cfg.site(site).throttle;
        if rules.is_empty() {
            return None;
        }
        let (i, rule) = rules
            .iter()
            .enumerate()
            .find(|(_, r)| r.matcher.matches(path))?;
        // (Counters number every site's rules in a row.)
        let before: usize = (0..site)
            .map(|s| self.settings.cfg.site(s).throttle.len())
            .sum();
        let i = before + i;
        let shared = self.counts.counters.throttles.get(i).cloned().flatten();
        Some((i, rule.connection_rate, shared))
    }

    /// Handles the bytes at the start of `input` on HTTP/1.1 connection
    /// `c`: answers the complete requests in it, feeds bodies to where
    /// they go. Says how many bytes were consumed. Bytes from `fresh` on
    /// arrived just now (those before it, in earlier reads).
    pub(super) fn process(&mut self, c: &mut Conn, input: &[u8], fresh: usize) -> Processed {
        use Processed::Consumed;
        self.take_checked(c);
        let mut pos = 0;
        loop {
            // A request's first byte came with this read, or with an
            // earlier one (the connection has been reading its head since).
            let started = if pos >= fresh {
                self.clock.now
            } else {
                c.life.since()
            };
            let cx = Reading {
                limits: &self.settings.limits,
                temp_dir: &self.settings.cfg.temp_dir,
                output: c.out.buffered(),
                paced: c.throttle.is_some() && !c.out.is_empty(),
                now: self.clock.now,
            };
            // (The buffers of a request whose head is read: it is
            // answered, or held, with them, and they come back after.)
            let mut r = self.pools.lend_request(started);
            let ex = &mut self.exchanges;
            let Some(h1) = c.proto.h1_mut() else {
                self.pools.take_back_request(r);
                return Consumed(0);
            };
            let at = pos;
            let event = h1.read(&mut c.life, input, &mut pos, &mut r.req, &cx, ex);
            if let Event::Request | Event::Invalid(_) = event {
                match self.answer_head(c, r, event, pos, (input.len(), &input[at..])) {
                    Some(done) => return done,
                    None => continue,
                }
            }
            self.pools.take_back_request(r);
            match event {
                Event::Stall => return Consumed(pos),
                // (Answered above.)
                Event::Request | Event::Invalid(_) => {}
                Event::BodyGrew => {
                    if !self.body_grew(c, None) {
                        return Consumed(input.len());
                    }
                }
                Event::BodyDone(BodyOver::Wait(id)) => {
                    if let Some(w) = self.exchanges.take_wait(id) {
                        self.body_in(c, None, w);
                    }
                }
                Event::BodyDone(BodyOver::Nothing | BodyOver::Pipe) => {}
                Event::BodyRefused(e, waiting) => {
                    self.body_refused(c, e, waiting);
                    return Consumed(input.len());
                }
            }
        }
    }

    /// The head `event` (a request, or one that can never be valid) was
    /// read into `r` on `c`, up to `pos` of the `len` bytes of input (the
    /// head from the start of `head`): answers it (or holds it), and
    /// takes `r` back. Returns what
    /// [`Worker::process`] returns if that ends the input: a rejected
    /// request (the connection closes after it), or one that asks to go
    /// on in h2c and may, which the driver takes with `r`.
    fn answer_head(
        &mut self,
        c: &mut Conn,
        mut r: Box<Request>,
        event: Event,
        pos: usize,
        (len, head): (usize, &[u8]),
    ) -> Option<Processed> {
        if let Event::Invalid(e) = event {
            #[cfg(feature = "http2")]
            let preface = e.is_not_http1() && self.h2_failed_preface(c);
            #[cfg(not(feature = "http2"))]
            let preface = false;
            if !preface {
                self.reject(c, &mut r, e.status, (e.reason, head));
            }
            self.pools.take_back_request(r);
            return Some(Processed::Consumed(len));
        }
        // (An upgrade takes the rest of the connection: a client waits
        // for the 101 before its preface.)
        #[cfg(feature = "http2")]
        if pos == len {
            let cleartext = self.settings.cfg.http2.cleartext;
            let (tls, draining) = (c.transport.is_tls(), self.drain.mode != Drain::Serve);
            if let Some(settings) = upgrade::settings(&r.req, cleartext, tls, draining) {
                return Some(Processed::Upgrade(pos, settings, r));
            }
        }
        // (Past its head, what is not its body is the next request's.)
        r.followed = match r.req.body() {
            BodyFraming::None => pos < len,
            BodyFraming::Length(n) => (len - pos) as u64 > n,
            BodyFraming::Chunked => false,
        };
        self.dispatch(c, &mut r, 0);
        self.pools.take_back_request(r);
        None
    }

    /// A request body can never be complete (`e`): whatever waited for it
    /// is answered `e.status` instead.
    pub(super) fn body_refused(&mut self, c: &mut Conn, e: ParseError, waiting: BodyOver) {
        self.client_info(format_args!(
            "client {}: request body refused: {}",
            c.peer.ip(),
            e.reason
        ));
        // (What is left of the body may still come: the close lingers.)
        c.life.leave_body_unread(None);
        match waiting {
            // Not answered yet: the handler (or the program the body is
            // held whole for) never runs.
            BodyOver::Wait(id) => {
                if let Some(w) = self.exchanges.take_wait(id) {
                    self.refuse_wait(c, None, w, e.status);
                }
            }
            BodyOver::Pipe => self.produced_body_refused(c, e.status),
            // The request was answered already (before its body arrived);
            // a second answer would be taken for the next request's, so
            // the connection just ends.
            BodyOver::Nothing => c.life.close(),
        }
    }

    /// Answers a request that could not be parsed (or whose head did not
    /// arrive in time), and closes after it.
    /// (`head`: the bytes it came in, whose request line, if it is one,
    /// the access log has, as nginx's: a bad field line is no reason to
    /// lose which page was asked for.)
    pub(super) fn reject(
        &mut self,
        c: &mut Conn,
        r: &mut Request,
        status: Status,
        (reason, head): (&str, &[u8]),
    ) {
        // (Counted as `other`: a head that could not be read names no
        // method it can be trusted for.)
        let took = self.clock.now.saturating_duration_since(r.start);
        self.counts.stats.answered(b"", status.0, took);
        self.client_info(format_args!(
            "client {}: {} ({})",
            c.peer.ip(),
            status.0,
            reason
        ));
        self.lend_out(c);
        r.scratch.clear();
        let mut plan = Plan::error(status, &mut r.scratch);
        self.router
            .finish_unread(0, &mut plan, &mut r.scratch, &mut self.logger);
        let cx = answering(
            &self.settings,
            &self.clock,
            self.drain.mode,
            (&self.listen, &c.transport),
        );
        let body = match c.proto.h1_mut() {
            Some(h1) => h1.reject(&mut c.life, plan, &r.scratch, &mut c.out, &cx),
            None => 0,
        };
        if self.logger.access_enabled() {
            let tls = c.transport.session();
            let (method, target, version) = crate::http::parse::request_line(head)
                .map_or((&b"-"[..], &b"-"[..], "-"), |(m, t, v)| (m, t, v.as_str()));
            let rec = AccessRecord {
                remote: c.peer.ip(),
                remote_port: c.peer.port(),
                https: tls.is_some(),
                time: self.clock.wall(),
                method,
                target,
                version,
                status: status.0,
                bytes: 0,
                referer: None,
                user_agent: None,
                user: None,
                host: None,
                duration_us: 0,
                upstream: None,
                tls,
            };
            let end = c.queued_end();
            access_log::push(
                &mut c.out,
                &mut self.logger,
                c.sent,
                end,
                body,
                r.start,
                |l, buf| l.draft(&rec, buf),
            );
        }
    }

    /// Routes request `r` (`redirects` counts the CGI local redirects
    /// that led to it) and queues its answer, or holds it until it can be
    /// answered.
    pub(super) fn dispatch(&mut self, c: &mut Conn, r: &mut Request, redirects: u8) {
        let seen = self.see_through_proxies(c, &mut r.req);
        r.scratch.clear();
        self.lend_out(c);
        let mut decoder = None;
        // (Answered without its body, which is on its way all the same:
        // a 400 for its forwarding header, a 413 for its length.)
        let unread = match r.req.body() {
            BodyFraming::None | BodyFraming::Length(0) => None,
            BodyFraming::Length(n) => Some(Some(n)),
            BodyFraming::Chunked => Some(None),
        };
        let mut refused = false;
        let plan = match r.req.body() {
            _ if seen.is_err() => {
                let mut p = Plan::error(Status::BAD_REQUEST, &mut r.scratch);
                p.close = true;
                refused = true;
                Some(p)
            }
            BodyFraming::None => self.route(c, r, None, redirects, &mut decoder),
            framing => match BodyDecoder::new(framing, &self.settings.body_limits) {
                Ok(d) => {
                    decoder = Some(d);
                    self.route(c, r, None, redirects, &mut decoder)
                }
                Err(e) => {
                    if e.status == Status::CONTENT_TOO_LARGE {
                        let max = self.settings.body_limits.max_body;
                        self.body_too_large(c, &r.req, max);
                    }
                    let mut p = Plan::error(e.status, &mut r.scratch);
                    p.close = true;
                    refused = true;
                    Some(p)
                }
            },
        };
        self.throttle_for(c, r);
        if let Some(plan) = plan {
            self.answer_or_pipe(c, r, plan, decoder, redirects);
        }
        if let (true, Some(left)) = (refused, unread) {
            c.life.close_body_unread(left);
        }
    }

    /// The router, and request `r` on its way to it, from `c`.
    pub(super) fn routing<'a>(
        &'a mut self,
        c: &'a Conn,
        r: &'a mut Request,
    ) -> (&'a mut Router, Routing<'a>) {
        let peer = client_of(c, &r.req);
        let routing = Routing {
            req: &mut r.req,
            client: Client {
                conn: c.index,
                peer,
                now: self.clock.now,
                local: c,
                bound: match &c.transport {
                    // (Its socket's address: bound to one, see `quic.rs`.)
                    #[cfg(feature = "http3")]
                    crate::server::transport::Link::Quic(q) => Some(q.local),
                    t => self.listen.bound_of(t.tcp()),
                },
                tls: c.transport.session(),
            },
            scratch: &mut r.scratch,
            log: &mut self.logger,
            body_max: None,
            #[cfg(feature = "cold-lookups")]
            cold: r.colds < super::warm::COLD_WAITS,
            #[cfg(feature = "cold-lookups")]
            lent: (1..super::warm::COLD_WAITS).contains(&r.colds),
            programs: match super::pipe::programs_full(c) {
                true => Room::Full,
                false => Room::Free,
            },
        };
        (&mut self.router, routing)
    }

    /// Answers `r` with `plan`: a pipe body starts being pumped (the
    /// request body, read by `decoder`, goes to it); anything else is
    /// queued.
    pub(super) fn answer_or_pipe(
        &mut self,
        c: &mut Conn,
        r: &mut Request,
        mut plan: Plan,
        mut decoder: Option<BodyDecoder>,
        redirects: u8,
    ) {
        // (Every other answer is finished where it is queued, in `answer`.)
        if matches!(plan.body, Body::Stream(_)) {
            self.router
                .finish(&r.req, &mut plan, &mut r.scratch, &mut self.logger);
        }
        if plan.body.is_produced() {
            match self.start_answer_body(c, r, None, plan, redirects, &mut decoder) {
                Ok(()) => return,
                Err(failed) => plan = failed,
            }
        }
        self.answer(c, r, plan, decoder);
    }

    /// Queues `plan` as the answer to request `r` and logs it; `decoder`
    /// reads the request's body to drop it, if it has one left to read.
    pub(super) fn answer(
        &mut self,
        c: &mut Conn,
        r: &mut Request,
        mut plan: Plan,
        decoder: Option<BodyDecoder>,
    ) {
        self.router
            .finish(&r.req, &mut plan, &mut r.scratch, &mut self.logger);
        self.lend_out(c);
        let status = plan.status;
        // Winding down, each answer closes its connection, but for one
        // that another request read with it follows (pipelined): that one
        // is answered too, rather than dropped for the client to retry
        // (RFC 9112 §9.3.2), and the last one read closes.
        let mode = match r.followed {
            true => Drain::Serve,
            false => self.drain.mode,
        };
        let cx = answering(
            &self.settings,
            &self.clock,
            mode,
            (&self.listen, &c.transport),
        );
        // (HTTP/2's answers go through `h2_answer`.)
        let Some(h1) = c.proto.h1_mut() else {
            return;
        };
        let queued = h1.answer(
            &mut c.life,
            &r.req,
            plan,
            &r.scratch,
            decoder,
            &mut c.out,
            &cx,
        );
        let bytes = match queued {
            Ok(n) => n,
            Err(e) => {
                self.logger.log(
                    Level::Error,
                    format_args!(
                        "reading {} failed: {e}",
                        String::from_utf8_lossy(r.req.target())
                    ),
                );
                0
            }
        };
        self.log_answer(r, client_of(c, &r.req).ip(), status);
        if self.logger.access_enabled() {
            let end = c.queued_end();
            let rec = request_record(c, self.clock.wall(), &r.req, status.0);
            access_log::push(
                &mut c.out,
                &mut self.logger,
                c.sent,
                end,
                bytes,
                r.start,
                |l, buf| l.draft(&rec, buf),
            );
        }
        // The answer is queued (copied): the scratch buffers are free.
        r.scratch.trim(SCRATCH_KEEP);
    }

    /// Logs what the answer `status` to request `r` says about the
    /// server: a 5xx at `error` (unless a line said why already,
    /// [`Scratch::told`](crate::handlers::Scratch)), but not a 501, and
    /// why a file was refused at `debug`.
    pub(super) fn log_answer(&mut self, r: &Request, ip: std::net::IpAddr, status: Status) {
        self.count_answer(&r.req, status.0, r.start);
        // (A file refused for the server's own trouble is explained at
        // `error` below, within the budget of such lines.) A 501 says
        // what the client asked for (a method, a WebSocket upgrade) is
        // not served, as a 4xx would: no trouble of the server's, and a
        // line for each would let any client flood the log.
        let explained = r.scratch.why.is_some_and(|w| w.level() == Level::Error);
        let trouble = status.0 >= 500 && status != Status::NOT_IMPLEMENTED;
        if trouble && !r.scratch.told && !explained && self.logger.enabled(Level::Error) {
            self.logger.log(
                Level::Error,
                format_args!(
                    "{} answering {}",
                    status.0,
                    String::from_utf8_lossy(r.req.target())
                ),
            );
        }
        if let Some(why) = r.scratch.why {
            if self.logger.enabled(why.level()) {
                self.log_refusal(r, ip, status);
            }
        }
    }

    /// Logs why request `r` was answered `status` (the reason its
    /// handler recorded: the file and what was wrong with it), within the
    /// worker's budget of such lines.
    fn log_refusal(&mut self, r: &Request, ip: std::net::IpAddr, status: Status) {
        let Some(why) = r.scratch.why else {
            return;
        };
        self.report_refusals_not_logged();
        if !self.counts.refusals.allow_at(self.clock.now, why.level()) {
            return;
        }
        let file = crate::handlers::refusal::Explained {
            why,
            file: &r.scratch.why_file,
            root: &self.settings.cfg.site(r.req.site()).root,
        };
        self.logger.log(
            why.level(),
            format_args!(
                "client {ip}: {} for \"{} {} {}\": {file}",
                status.0,
                String::from_utf8_lossy(r.req.method_token()),
                String::from_utf8_lossy(r.req.target()),
                r.req.version().as_str(),
            ),
        );
    }

    /// Says how many reasons for refusals the budget kept out of the log
    /// in the seconds that ended (called per refusal and once a second).
    pub(super) fn report_refusals_not_logged(&mut self) {
        let what = "refused requests were not explained";
        self.counts
            .refusals
            .report_refused(self.clock.now, &mut self.logger, what);
    }

    /// Logs at `info` a line about what one client did wrong (a request
    /// that could not be read or came too slowly, a body refused or cut
    /// short, a PROXY header missing), within a budget of lines a second
    /// per worker, and then one line counting those left out: a flood of
    /// garbage is not a flood of lines (the access log has each answer).
    /// Logs (as [`Worker::client_info`], rate-limited) that the body of
    /// `c`'s request `req` is over `max` bytes, the limit it is refused
    /// for with 413: `length` if its head said so (`Content-Length`),
    /// else once it grew past it. (nginx: "client intended to send too
    /// large body".)
    pub(super) fn body_too_large(&mut self, c: &Conn, req: &OwnedRequest, max: u64) {
        let length = match req.body() {
            BodyFraming::Length(n) => Some(n),
            _ => None,
        };
        self.body_too_large_as(c, (req.method_token(), req.target()), length, max);
    }

    /// [`Worker::body_too_large`] for a request line `(method, target)`.
    pub(super) fn body_too_large_as(
        &mut self,
        c: &Conn,
        (method, target): (&[u8], &[u8]),
        length: Option<u64>,
        max: u64,
    ) {
        let target = String::from_utf8_lossy(target);
        let method = String::from_utf8_lossy(method);
        let ip = c.peer.ip();
        match length {
            Some(n) => self.client_info(format_args!(
                "client {ip}: request body of {n} bytes is over the limit of {max} bytes: 413 \"{method} {target}\""
            )),
            None => self.client_info(format_args!(
                "client {ip}: request body is over the limit of {max} bytes: 413 \"{method} {target}\""
            )),
        }
    }

    pub(super) fn client_info(&mut self, line: std::fmt::Arguments<'_>) {
        if !self.logger.enabled(Level::Info) {
            return;
        }
        let now = self.clock.now;
        let what = "lines about clients' unreadable, slow or refused requests were not written";
        let budget = &mut self.counts.client_lines;
        budget.report_refused_at(now, &mut self.logger, Level::Info, what);
        if budget.allow(now) {
            self.logger.log(Level::Info, line);
        }
    }
}

/// How answers are written: the stamp, the keep-alive limit, whether the
/// worker winds down, and the clock; `to`, the connection's transport
/// and its worker's listeners (for the `Alt-Svc` of HTTPS with HTTP/3 on).
#[inline]
pub(super) fn answering<'a>(
    settings: &'a Settings,
    clock: &'a Clock,
    draining: Drain,
    to: (&'a Listen, &Link),
) -> Answering<'a> {
    #[cfg(not(feature = "http3"))]
    let _ = to;
    Answering {
        stamp: Stamp {
            server: settings.cfg.server_header.as_bytes(),
            date: clock.date.get(),
            #[cfg(feature = "http3")]
            alt_svc: to.0.alt_svc(to.1),
        },
        max_requests: settings.cfg.limits.keepalive_requests,
        draining: draining != Drain::Serve,
        now: clock.now,
    }
}

/// The access-log record of an answered request (its body bytes and
/// duration are filled in once the answer has left).
pub(super) fn request_record<'a>(
    c: &Conn,
    time: SystemTime,
    req: &'a OwnedRequest,
    status: u16,
) -> AccessRecord<'a> {
    let client = client_of(c, req);
    let tls = c.transport.session();
    AccessRecord {
        remote: client.ip(),
        remote_port: client.port(),
        https: req.https(tls.is_some()),
        tls,
        time,
        method: req.method_token(),
        target: req.original_target(),
        version: req.version().as_str(),
        status,
        bytes: 0,
        referer: req.field(Field::Referer),
        user_agent: req.field(Field::UserAgent),
        user: req.user(),
        host: req.host(),
        duration_us: 0,
        upstream: None,
    }
}
