//! Requests that wait (see [`crate::server::waits`]), whatever their
//! protocol: each outcome of a wait is handled here once, for the
//! exchange it belongs to (`stream`: the HTTP/2 stream, `None` for the
//! HTTP/1.1 exchange); only the answer at the end goes to the protocol's
//! writer ([`Worker::answer_at`]).
//!
//! - A password check runs off the loop ([`Worker::verify_later`]); its
//!   outcome routes the request again ([`Worker::checked`]).
//! - An embedded handler's body (see [`crate::handlers::app`]) is
//!   gathered in memory, the handler called on this thread once it is in
//!   ([`Worker::finish_handler`]); a worker holds at most
//!   `limits.handler_bodies` of such bodies at once and answers 503 to the
//!   request that would go beyond.
//! - A chunked body on a CGI route is held whole: a chunked body has no
//!   length until its last chunk, and RFC 3875 §4.1.2 says the server
//!   must set `CONTENT_LENGTH` whenever there is a body (CGI.pm, php-cgi
//!   and Python's cgi module read nothing without it): so the body is
//!   held first (in a [`crate::handlers::spool::Spool`]: memory, then an
//!   unnamed temporary file in `temp_dir`), bounded by `limits.max_body`,
//!   and the program starts once it is complete, with its length (what
//!   lighttpd does; [`Worker::answer_whole_body`]).
//!
//! A body refused while it arrives (bad chunk framing, too large) is
//! answered 400/413 before any handler or program runs.
//!
//! What stays per protocol: HTTP/1.1 closes the connection after a
//! request answered before its body was all read (the rest cannot be told
//! from a next request), HTTP/2 drops the rest of the stream's body
//! instead; and a body that stops coming for `timeouts.body` closes an
//! HTTP/1.1 connection (`Timer::Body` in the worker's sweep) but is
//! answered 408 on its HTTP/2 stream (`h2_body_timeouts`, worker/h2/body.rs),
//! since the connection's other streams go on.

use super::pipe::NoRoom;
use super::{Request, Worker};
use crate::access::Check;
use crate::config::Level;
use crate::handlers::Plan;
use crate::http::body::BodyDecoder;
use crate::http::parse::BodyFraming;
use crate::http::Status;
use crate::server::conn::Conn;
use crate::server::exchange::{Exchange, ExchangeId, Task};
#[cfg(feature = "cold-lookups")]
use crate::server::router::Cold;
use crate::server::router::{Deferred, Room, Routed};
use crate::server::waits::{AuthWait, HandlerWait, Held, Wait, WholeBody};

impl Worker {
    /// Runs the router over request `r` (which `redirects` CGI local
    /// redirects led to) for exchange `stream`: the answer, or
    /// `None` when the request is held (a password check, an embedded
    /// handler waiting for the body, a program waiting for the whole
    /// body). Over HTTP/1.1 the body's `decoder` goes with a request held
    /// for its body.
    pub(super) fn route(
        &mut self,
        c: &mut Conn,
        r: &mut Request,
        stream: Option<u32>,
        redirects: u8,
        decoder: &mut Option<BodyDecoder>,
    ) -> Option<Plan> {
        let (router, mut routing) = self.routing(c, r);
        let routed = router.route(&mut routing);
        let rule_max = routing.body_max;
        if routing.programs == Room::Refused {
            return self.refuse_program(c, r, stream, redirects, false);
        }
        // Every body is bounded by `limits.max_body` but a `[[webdav]]`
        // PUT's, by its `max_upload`, and one a `[[cgi]]`, `[[fastcgi]]`
        // or `[[reverse_proxy]]` rule with `max_body` takes, by that
        // (before routing, the largest of them was let in:
        // `Settings::body_limits`). A request waiting for a
        // password check is routed again after it, and bounded then; one
        // answered without its body (a 401, a 404) keeps its answer, its
        // body read and dropped.
        // (The site's page for an error is looked up as the request's own
        // files are: off the loop first where that would wait.)
        #[cfg(feature = "cold-lookups")]
        if let (Routed::Answer(plan), true) = (&routed, r.colds < super::warm::COLD_WAITS) {
            if let Some(cold) = self.router.page_cold(r.req.site(), plan) {
                return self.cold_later(c, r, stream, redirects, cold, decoder);
            }
        }
        let max = rule_max.unwrap_or(self.settings.cfg.limits.max_body);
        let (max, takes_body) = match &routed {
            Routed::Defer(Deferred::Verify(_)) => (self.settings.body_limits.max_body, false),
            #[cfg(feature = "cold-lookups")]
            Routed::Defer(Deferred::Cold(_)) => (self.settings.body_limits.max_body, false),
            Routed::Defer(Deferred::WholeBody(resume)) => (resume.body_max().unwrap_or(max), true),
            Routed::Defer(Deferred::Handler { .. }) => (max, true),
            Routed::Answer(plan) => (max, plan.body.is_produced()),
        };
        if let (true, BodyFraming::Length(n)) = (takes_body, r.req.body()) {
            if n > max {
                self.body_too_large(c, &r.req, max);
                let mut plan = Plan::error(Status::CONTENT_TOO_LARGE, &mut r.scratch);
                plan.close = true;
                return Some(plan);
            }
        }
        if let Some(d) = decoder {
            d.bound(max);
        }
        r.body_max = max;
        let wait = match routed {
            Routed::Answer(plan) => return Some(plan),
            Routed::Defer(Deferred::Verify(check)) => {
                return self.verify_later(c, r, stream, redirects, check, decoder)
            }
            #[cfg(feature = "cold-lookups")]
            Routed::Defer(Deferred::Cold(cold)) => {
                return self.cold_later(c, r, stream, redirects, cold, decoder)
            }
            Routed::Defer(Deferred::Handler { mount }) => Wait::Handler(HandlerWait {
                mount,
                held: r.hold(redirects),
                body: Vec::new(),
                counted: 0,
            }),
            Routed::Defer(Deferred::WholeBody(mut resume)) => Wait::Whole(WholeBody {
                body: resume.take_body(),
                resume: Box::new(resume),
                held: r.hold(redirects),
            }),
        };
        self.pools.refill_held(r);
        let ex = self.exchange(c, stream, wait);
        self.hold_at(c, r, stream, ex, decoder)
    }

    /// Puts `wait`, for exchange `stream` of `c`, in the table.
    fn exchange(&mut self, c: &Conn, stream: Option<u32>, wait: Wait) -> ExchangeId {
        self.exchanges.insert(Exchange {
            conn: c.index,
            stream,
            task: Task::Wait(wait),
        })
    }

    /// Holds request `r` of HTTP/2 or HTTP/3 stream `stream` of `c`
    /// (which `redirects` local redirects led to), bound upstream or for
    /// a CGI program, until its turn: its connection has no room for one
    /// more upstream request or program now (see `Worker::waits_turn`,
    /// `Worker::refuse_program`). Once one of them ends, it is routed
    /// again ([`Worker::take_checked`]), as after a password check. How
    /// many wait is bounded by the connection's streams
    /// (`http2.max_concurrent_streams`; HTTP/3: its streams' limit):
    /// each holds one open stream's request head, and its body:
    ///
    /// - over HTTP/2 what came of it, within its stream's window, the
    ///   connection's credit given back (the bodies held so on a
    ///   connection within `http2.connection_window`: `Worker::h2_data`);
    /// - over HTTP/3 it is not read (`Worker::h3_read`): QUIC gives
    ///   credit back as bytes are read, so the bytes the client sends
    ///   meanwhile wait unread in quinn-proto's receive buffer, their
    ///   stream's credit held. But they take the connection's credit too
    ///   (RFC 9000 §4.1: MAX_DATA bounds the bytes received on all
    ///   streams, and the receiver raises it only as it consumes them),
    ///   which the requests under way need for their own bodies: held
    ///   unread past it, the bodies that wait would starve those whose
    ///   end they wait for. So the credit that waiting bodies may take
    ///   (each its declared length, at most its stream's window; one
    ///   without a length, that window) is at most half the
    ///   connection's window ([`TURN_HELD`]).
    ///
    /// False if it may not wait (a body read whole before, which a wait
    /// could not give again; over HTTP/3, one past that bound): the
    /// caller refuses it.
    #[cfg(feature = "http2")]
    pub(super) fn wait_turn(
        &mut self,
        c: &mut Conn,
        r: &mut Request,
        stream: u32,
        redirects: u8,
        body_read: bool,
    ) -> bool {
        let bodiless = r.req.bodiless();
        if body_read && !bodiless {
            return false;
        }
        #[allow(unused_mut)]
        let mut credit = 0;
        #[cfg(feature = "http3")]
        if let Some(s) = c.h3_mut().filter(|_| !bodiless) {
            let window = u64::from(crate::tls::quic::STREAM_WINDOW);
            credit = match r.req.body() {
                BodyFraming::Length(n) => n.min(window),
                _ => window,
            };
            if s.turn_held + credit > TURN_HELD {
                return false;
            }
            s.turn_held += credit;
        }
        let mut w = AuthWait::new(r.hold(redirects), true);
        self.pools.refill_held(r);
        w.paid = credit as usize;
        let ex = self.exchange(c, Some(stream), Wait::Check(w));
        self.hold_at(c, r, Some(stream), ex, &mut None);
        true
    }

    /// When `c` has room for one more upstream request, the first of its
    /// requests waiting for their turn ([`Worker::wait_turn`]), the one on
    /// the oldest stream, is ready to be routed again (one at a time: the
    /// room it takes is seen before the next).
    #[cfg(feature = "http2")]
    fn give_turn(&mut self, c: &mut Conn) {
        if super::pipe::programs_full(c) {
            return;
        }
        let waits =
            |id| matches!(self.exchanges.wait(id), Some(Wait::Check(w)) if w.turn && !w.ready);
        // (Over HTTP/2 or HTTP/3: the same answers, each protocol's own.)
        let first = match c.h2() {
            Some(s) => s
                .answers
                .iter()
                .filter(|a| a.wait.is_some_and(waits))
                .map(|a| a.id)
                .min(),
            #[cfg(feature = "http3")]
            None => c.h3().and_then(|s| {
                s.answers
                    .iter()
                    .filter(|a| a.wait.is_some_and(waits))
                    .map(|a| a.id)
                    .min()
            }),
            #[cfg(not(feature = "http3"))]
            None => None,
        };
        let Some(stream) = first else {
            return;
        };
        let ex = c.wait_id(Some(stream));
        if let Some(Wait::Check(w)) = ex.and_then(|ex| self.exchanges.wait_mut(ex)) {
            w.ready = true;
        }
    }

    /// What the request held on exchange `stream` of `c` waits for,
    /// taken out of the table.
    pub(super) fn take_wait(&mut self, c: &mut Conn, stream: Option<u32>) -> Option<Wait> {
        let id = c.take_wait(stream)?;
        self.exchanges.take_wait(id)
    }

    /// Hands `check` to the hashing threads and holds request `r` until
    /// its outcome is in (see [`Worker::take_checks`]; without the
    /// threads, it is hashed here and comes in the same way).
    fn verify_later(
        &mut self,
        c: &mut Conn,
        r: &mut Request,
        stream: Option<u32>,
        redirects: u8,
        check: Check,
        decoder: &mut Option<BodyDecoder>,
    ) -> Option<Plan> {
        // (Its outcome comes back with the exchange's id.)
        let ex = self.hold_for_check(c, r, stream, redirects);
        self.wakeups.submit_check(ex, check);
        self.hold_at(c, r, stream, ex, decoder)
    }

    /// Holds request `r` (of exchange `stream` of `c`) for a check made
    /// off the loop, a password's or a cold disk's lookups: the id of
    /// its exchange, which the check's outcome names.
    fn hold_for_check(
        &mut self,
        c: &Conn,
        r: &mut Request,
        stream: Option<u32>,
        redirects: u8,
    ) -> ExchangeId {
        let wait = Wait::Check(AuthWait::new(r.hold(redirects), false));
        self.pools.refill_held(r);
        self.exchange(c, stream, wait)
    }

    /// Holds request `r` while the lookups of `cold` are made from the
    /// disk on a `brisk-look` thread, then routes it again, as after a
    /// password check: the worker's other connections are served
    /// meanwhile. The same lookups already under way for another request
    /// answer this one too. Where no thread can take them (as many reads
    /// are under way as may be), it is routed again at once, its lookups
    /// waiting for the disk on the loop as before.
    #[cfg(feature = "cold-lookups")]
    #[cold]
    #[inline(never)]
    fn cold_later(
        &mut self,
        c: &mut Conn,
        r: &mut Request,
        stream: Option<u32>,
        redirects: u8,
        cold: Cold,
        decoder: &mut Option<BodyDecoder>,
    ) -> Option<Plan> {
        let (site, rel) = (cold.site(), cold.key().to_vec());
        // (None: the same lookups are under way for another request.)
        let job = match self.wakeups.cold_under_way(site, &rel) {
            true => None,
            false => match (super::warm::read_slot(), self.router.cold_lookups(cold)) {
                (Some(slot), Some(lookups)) => Some((slot, lookups)),
                _ => {
                    r.colds = super::warm::COLD_WAITS;
                    return self.route(c, r, stream, redirects, decoder);
                }
            },
        };
        r.colds += 1;
        let ex = self.hold_for_check(c, r, stream, redirects);
        match job {
            None => self.wakeups.join_cold(site, &rel, ex),
            Some((slot, lookups)) => {
                let done = self.wakeups.cold_done(ex, site, rel);
                super::warm::look_up(slot, move || done(lookups()));
            }
        }
        self.hold_at(c, r, stream, ex, decoder)
    }

    /// Takes the requests whose cold lookups were made: what the lookups
    /// found is kept, and each request held for them is routed again (see
    /// [`Worker::cold_later`]).
    #[cfg(feature = "cold-lookups")]
    #[inline(never)]
    pub(super) fn take_colds(&mut self) {
        while let Some((looks, held)) = self.wakeups.next_cold() {
            // (Kept for the requests to come even if these went.)
            self.router.install_cold(looks, self.clock.now);
            for ex in held {
                // (A stale id, of an exchange let go of, names nothing.)
                let Some(Exchange {
                    conn,
                    task: Task::Wait(Wait::Check(w)),
                    ..
                }) = self.exchanges.get_mut(ex)
                else {
                    continue;
                };
                w.ready = true;
                let conn = *conn;
                self.on_event(conn, true);
            }
        }
    }

    /// Keeps exchange `ex` (its wait, which holds request `r` now) on
    /// exchange `stream` of `c` until it is over. Over HTTP/1.1
    /// a request held for its body reads it with `decoder` (telling the
    /// client to send it if it waits to be told, RFC 9110 §10.1.1), and a
    /// password check reads nothing meanwhile (its body, pipelined
    /// requests); over HTTP/2 the stream's DATA frames go to the wait
    /// (`h2_data`), a check's held with their window credit.
    fn hold_at(
        &mut self,
        c: &mut Conn,
        r: &mut Request,
        stream: Option<u32>,
        ex: ExchangeId,
        decoder: &mut Option<BodyDecoder>,
    ) -> Option<Plan> {
        #[cfg(feature = "http2")]
        if let (Some(id), Some(s)) = (stream, c.proto.h2_mut()) {
            let mut a = crate::server::h2::Answer::waiting(id, r.start);
            a.wait = Some(ex);
            s.answers.push(a);
            return None;
        }
        #[cfg(feature = "http3")]
        if let (Some(id), Some(s)) = (stream, c.h3_mut()) {
            let mut a = crate::server::h3::Answer::waiting(id, r.start);
            a.wait = Some(ex);
            s.answers.push(a);
            return None;
        }
        let _ = stream;
        let now = self.clock.now;
        let held = match self.exchanges.wait(ex) {
            Some(Wait::Check(_)) => {
                if let Some(h1) = c.proto.h1_mut() {
                    h1.hold(&mut c.life, ex, now);
                }
                return None;
            }
            Some(Wait::Handler(HandlerWait { held, .. }) | Wait::Whole(WholeBody { held, .. })) => {
                held
            }
            None => return None,
        };
        let expect_continue = held.req.expect_continue();
        let Some(d) = decoder.take() else {
            // (Only a request with a body is held for it.)
            let wait = self.exchanges.take_wait(ex).expect("just put there");
            let held = self.forget_wait(c, stream, wait);
            r.resume(held);
            return Some(Plan::error(Status::INTERNAL_SERVER_ERROR, &mut r.scratch));
        };
        if let Some(h1) = c.proto.h1_mut() {
            h1.wait_for_body(&mut c.life, expect_continue, d, ex, &mut c.out, now);
        }
        None
    }

    /// Takes the outcomes of finished password checks: each waiting
    /// request is answered at once (so the outcome is used before the
    /// next one arrives); one whose client left only leaves a verified
    /// credential remembered.
    pub(super) fn take_checks(&mut self) {
        while let Some((ex, outcome)) = self.wakeups.next_check() {
            // (A stale id, of an exchange let go of, names nothing.)
            let Some(Exchange {
                conn,
                task: Task::Wait(Wait::Check(w)),
                ..
            }) = self.exchanges.get_mut(ex)
            else {
                self.router.remember(outcome);
                continue;
            };
            w.ready = true;
            let conn = *conn;
            self.router.settle(outcome);
            self.on_event(conn, true);
        }
    }

    /// Routes again every request of `c` whose password check is done
    /// (on an HTTP/1.1 connection that closes, none is).
    #[inline]
    pub(super) fn take_checked(&mut self, c: &mut Conn) {
        // (Before each read of an HTTP/1.1 connection: most hold no wait.)
        if c.proto.h1().is_some_and(|h| h.wait().is_none()) {
            return;
        }
        self.take_each_checked(c);
    }

    /// [`Worker::take_checked`]'s work, once a wait may be done (kept
    /// out of line, so that the test before it is inlined where it is
    /// called).
    #[inline(never)]
    fn take_each_checked(&mut self, c: &mut Conn) {
        loop {
            if c.life.closing() && !c.speaks_h2() {
                return;
            }
            #[cfg(feature = "http2")]
            self.give_turn(c);
            let checked = |id| self.exchanges.wait(id).is_some_and(Wait::is_checked);
            let Some(stream) = c.find_wait(checked) else {
                return;
            };
            let Some(wait) = self.take_wait(c, stream) else {
                return;
            };
            if let Wait::Check(w) = wait {
                self.checked(c, stream, w);
            }
        }
    }

    /// The password check of the request `w` held on exchange `stream`
    /// is done (its outcome settled in the router): the request is routed
    /// again, and over HTTP/2 the body that came meanwhile goes where the
    /// route says.
    fn checked(&mut self, c: &mut Conn, stream: Option<u32>, w: AuthWait) {
        let mut r = self.pools.lend_request(self.clock.now);
        let redirects = r.resume(w.held);
        let Some(id) = stream else {
            self.dispatch(c, &mut r, redirects);
            self.pools.take_back_request(r);
            return;
        };
        #[cfg(feature = "http2")]
        {
            let no_body = r.req.body() == crate::http::parse::BodyFraming::None;
            if let Some(plan) = self.route(c, &mut r, stream, redirects, &mut None) {
                self.h2_answer(c, &mut r, id, plan, redirects);
                self.h2_body_unless_read(c, id, no_body, r.req.body());
            }
            self.pools.take_back_request(r);
            // (What had its connection credit back already is owed: the
            // credit its use gives back pays for it. See `AuthWait::paid`.)
            if let Some(s) = c.proto.h2_mut() {
                s.conn.owe(w.paid);
                s.turn_held -= w.paid;
            }
            #[cfg(feature = "http3")]
            if let Some(s) = c.h3_mut() {
                s.turn_held -= w.paid as u64;
            }
            if !w.body.is_empty() || w.body_done {
                self.h2_data(c, id, &w.body, w.body_done, w.trailers.as_deref());
            }
            #[cfg(feature = "http3")]
            self.h3_read_on(c, id);
        }
        let _ = id;
    }

    /// More of the body that the request of exchange `stream` waits for
    /// is in: an embedded handler's counts against
    /// `limits.handler_bodies`, a body held whole must have been kept,
    /// and neither may grow beyond `limits.max_body`. If it may not, the
    /// request is answered (503, 500, 507 when the disk is full, or 413,
    /// also past the filesystem's largest file) and false returned:
    /// memory for bodies is bounded however many clients send them at
    /// once.
    pub(super) fn body_grew(&mut self, c: &mut Conn, stream: Option<u32>) -> bool {
        let max = self.settings.cfg.limits.max_body;
        let id = c.wait_id(stream);
        // (The request line of one over its limit, copied out of the
        // exchanges for its log line.)
        let mut over = None;
        let status = match id.and_then(|id| self.exchanges.wait_mut(id)) {
            Some(Wait::Handler(w)) => {
                self.counts.handler_bodies += (w.body.len() - w.counted) as u64;
                w.counted = w.body.len();
                if w.body.len() as u64 > max {
                    over = Some((
                        w.held.req.method_token().to_vec(),
                        w.held.req.target().to_vec(),
                        max,
                    ));
                    Status::CONTENT_TOO_LARGE
                } else if self.counts.handler_bodies > self.settings.cfg.limits.handler_bodies {
                    self.logger.log(
                        Level::Warn,
                        format_args!(
                            "client {}: 503: the request bodies held for handlers would exceed limits.handler_bodies",
                            c.peer.ip()
                        ),
                    );
                    Status::SERVICE_UNAVAILABLE
                } else {
                    return true;
                }
            }
            Some(Wait::Whole(w)) => {
                if w.body.len() > w.held.body_max {
                    let req = &w.held.req;
                    over = Some((
                        req.method_token().to_vec(),
                        req.target().to_vec(),
                        w.held.body_max,
                    ));
                    Status::CONTENT_TOO_LARGE
                } else if let Some(e) = w.body.take_error() {
                    self.logger.log(
                        Level::Error,
                        format_args!(
                            "{}: cannot hold the request body in {}: {e}",
                            w.resume.label(),
                            w.resume.body_home(&self.settings.cfg.temp_dir)
                        ),
                    );
                    match e.raw_os_error() {
                        Some(libc::ENOSPC | libc::EDQUOT) => Status::INSUFFICIENT_STORAGE,
                        // (Past the filesystem's largest file, or the
                        // process's file-size limit.)
                        Some(libc::EFBIG) => Status::CONTENT_TOO_LARGE,
                        _ => Status::INTERNAL_SERVER_ERROR,
                    }
                } else {
                    return true;
                }
            }
            Some(Wait::Check(_)) | None => return true,
        };
        if let Some((method, target, max)) = over {
            self.body_too_large_as(c, (&method, &target), None, max);
        }
        if let Some(wait) = self.take_wait(c, stream) {
            self.refuse_wait(c, stream, wait, status);
        }
        false
    }

    /// The body `wait` waited for is in: its handler or program answers.
    pub(super) fn body_in(&mut self, c: &mut Conn, stream: Option<u32>, wait: Wait) {
        match wait {
            Wait::Handler(w) => self.finish_handler(c, stream, w, None),
            Wait::Whole(w) => self.answer_whole_body(c, stream, w),
            // (A check's body is the checked request's: see `checked`.)
            Wait::Check(_) => {}
        }
    }

    /// The body `wait` waited for is in (or, with `error`, cannot be
    /// read): runs the handler, or answers `error`.
    pub(super) fn finish_handler(
        &mut self,
        c: &mut Conn,
        stream: Option<u32>,
        wait: HandlerWait,
        error: Option<Status>,
    ) {
        if let Some(status) = error {
            self.refuse_wait(c, stream, Wait::Handler(wait), status);
            return;
        }
        self.counts.handler_bodies -= wait.counted as u64;
        let mut r = self.pools.lend_request(self.clock.now);
        let redirects = r.resume(wait.held);
        let (router, mut routing) = self.routing(c, &mut r);
        let plan = router.call_handler(wait.mount, &wait.body, &mut routing);
        self.answer_at(c, &mut r, stream, plan, redirects);
        self.pools.take_back_request(r);
    }

    /// The body held whole is complete: the router answers with it.
    pub(super) fn answer_whole_body(
        &mut self,
        c: &mut Conn,
        stream: Option<u32>,
        mut whole: WholeBody,
    ) {
        let mut r = self.pools.lend_request(self.clock.now);
        let redirects = r.resume(whole.held);
        let (router, mut routing) = self.routing(c, &mut r);
        let plan = router.answer_whole(&mut whole.resume, whole.body, &mut routing);
        let plan = match routing.programs {
            // (Its body, read whole, went to the program that could not
            // start: refused, not waiting without it.)
            Room::Refused => self.refuse_program(c, &mut r, stream, redirects, true),
            _ => Some(plan),
        };
        if let Some(plan) = plan {
            self.answer_at(c, &mut r, stream, plan, redirects);
        }
        self.pools.take_back_request(r);
    }

    /// The CGI request `r` (which `redirects` local redirects led to)
    /// on `stream` of `c` was refused before its program started: the
    /// connection runs as many as it may (`pipe::H2_PIPES`). Over HTTP/2
    /// and HTTP/3 it waits for its turn, as an upstream request does
    /// ([`Worker::wait_turn`]: Chromium sends a refused or rejected
    /// request again at once, and fails it when that is refused too),
    /// its body held (`Worker::h2_data`; over HTTP/3 left unread); one
    /// that may not wait (its body read whole before, `body_read`: a
    /// body without a length, held for the program, which a wait could
    /// not give again; over HTTP/3, bodies waiting past their bound) is
    /// refused (REFUSED_STREAM, H3_REQUEST_REJECTED). Nothing is to be
    /// answered then (`None`); else (HTTP/1.1) the 503 to answer (see
    /// [`Worker::refuse_stream`]).
    fn refuse_program(
        &mut self,
        c: &mut Conn,
        r: &mut Request,
        stream: Option<u32>,
        redirects: u8,
        body_read: bool,
    ) -> Option<Plan> {
        #[cfg(feature = "http2")]
        if let Some(id) = stream {
            if self.wait_turn(c, r, id, redirects, body_read) {
                return None;
            }
        }
        let _ = (redirects, body_read);
        let label = format!("cgi for {}", String::from_utf8_lossy(r.req.target()));
        match stream {
            Some(id) if self.refuse_stream(c, id, NoRoom::Programs(&label)) => None,
            _ => Some(self.no_room_503(c, &label, r)),
        }
    }

    /// Answers the request `wait` held on exchange `stream` with `status`
    /// instead (its body was refused, or stopped coming).
    pub(super) fn refuse_wait(
        &mut self,
        c: &mut Conn,
        stream: Option<u32>,
        wait: Wait,
        status: Status,
    ) {
        let held = self.forget_wait(c, stream, wait);
        self.refuse_held(c, stream, held, status);
    }

    /// Lets go of `wait`, held on exchange `stream`, whose request goes
    /// unanswered (its client left) or is answered otherwise: a handler's
    /// body no longer counts, and an HTTP/2 check's held body gives its
    /// window credit back. Returns the request.
    pub(super) fn forget_wait(&mut self, c: &mut Conn, stream: Option<u32>, wait: Wait) -> Held {
        match wait {
            Wait::Handler(w) => {
                self.counts.handler_bodies -= w.counted as u64;
                w.held
            }
            Wait::Check(w) => {
                #[cfg(feature = "http2")]
                if let (Some(id), Some(s)) = (stream, c.proto.h2_mut()) {
                    s.conn.release_conn((w.body.len() - w.paid) as u32);
                    s.conn.release_stream(id, w.body.len());
                    s.turn_held -= w.paid;
                }
                #[cfg(feature = "http3")]
                if let Some(s) = c.h3_mut() {
                    s.turn_held -= w.paid as u64;
                }
                let _ = (c, stream);
                w.held
            }
            Wait::Whole(w) => w.held,
        }
    }

    /// Lets go of the request held on stream `id` of `c` for exchange
    /// `ex`, unanswered and unlogged (refused: its client may send it
    /// again).
    #[cfg(feature = "http2")]
    pub(super) fn let_go(&mut self, c: &mut Conn, id: u32, ex: Option<ExchangeId>) {
        if let Some(w) = ex.and_then(|ex| self.exchanges.take_wait(ex)) {
            self.forget_wait(c, Some(id), w);
        }
    }

    /// Answers held request `held` of exchange `stream` with `status`.
    /// Over HTTP/1.1 the connection closes after it: what is left of the
    /// body cannot be told from a next request (over HTTP/2 the caller
    /// drops the rest of the stream's body, `h2_refuse_rest`).
    pub(super) fn refuse_held(
        &mut self,
        c: &mut Conn,
        stream: Option<u32>,
        held: Held,
        status: Status,
    ) {
        let mut r = self.pools.lend_request(self.clock.now);
        let redirects = r.resume(held);
        let mut plan = Plan::error(status, &mut r.scratch);
        plan.close = stream.is_none();
        self.answer_at(c, &mut r, stream, plan, redirects);
        self.pools.take_back_request(r);
    }

    /// Answers request `r` (which `redirects` CGI local redirects led to)
    /// on exchange `stream` with `plan`: over HTTP/1.1 through its writer
    /// (a pipe or a produced body started, anything else queued), over
    /// HTTP/2 as frames on the stream.
    pub(super) fn answer_at(
        &mut self,
        c: &mut Conn,
        r: &mut Request,
        stream: Option<u32>,
        plan: Plan,
        redirects: u8,
    ) {
        #[cfg(feature = "http2")]
        if let Some(id) = stream {
            self.h2_answer(c, r, id, plan, redirects);
            return;
        }
        let _ = stream;
        self.answer_or_pipe(c, r, plan, None, redirects);
    }
}

/// The most flow-control credit that the bodies of an HTTP/3
/// connection's requests waiting for their turn may take unread: half the
/// connection's window, the rest left to the requests under way (see
/// [`Worker::wait_turn`]).
#[cfg(feature = "http3")]
const TURN_HELD: u64 = crate::tls::quic::RECEIVE_WINDOW as u64 / 2;
