//! Produced answers in the event loop (see [`crate::server::run`]): a
//! program's output (see `pipe`), an embedded handler's body in pieces,
//! asked for more only while the client keeps up, or its answer given
//! later by another thread, taken when that thread wakes the worker
//! (the connection comes through the worker's channel). One [`Run`]
//! drives any of them into the sink of the connection's protocol; the
//! protocol is chosen only where the sink is built
//! ([`Worker::pump_produced`] for HTTP/1.1, `h2_pump_run` for HTTP/2) and
//! where the answer ends (logged, and the connection or the stream goes
//! on, or a local redirect is followed).

use super::clock::Clock;
use super::counting::Counts;
use super::{answering, Request, Worker};
use crate::config::Config;
use crate::handlers::produce::Produce;
use crate::handlers::{Body, Plan};
use crate::http::body::BodyDecoder;
use crate::http::request::OwnedRequest;
use crate::http::{Method, Status};
use crate::log::Logger;
use crate::server::conn::Conn;
use crate::server::exchange::{Exchange, ExchangeId, Task};
use crate::server::h1;
use crate::server::h1::sink::{Framing, H1Sink, Producing};
use crate::server::router::Router;
use crate::server::run::{Outcome, PumpCx, Run, Sink};
use crate::server::waits::{Held, Wait};

/// What a drive of a produced answer may use besides its run and sink.
pub(super) struct Tools<'a> {
    pub(super) cfg: &'a Config,
    pub(super) router: &'a Router,
    pub(super) buf: &'a mut Vec<u8>,
    pub(super) log: &'a mut Logger,
}

/// Pumps `run` into `sink`: the one place where any protocol's produced
/// answer moves.
pub(super) fn pump(run: &mut Run, sink: &mut dyn Sink, t: Tools<'_>) -> Outcome {
    let compress = &t.cfg.site(run.request.req.site()).compress;
    let router = t.router;
    let rules = |req: &OwnedRequest, lines: &mut Vec<u8>| router.finish_reply(req, lines);
    let mut cx = PumpCx {
        buf: t.buf,
        log: t.log,
        compress,
        rules: &rules,
    };
    run.pump(sink, &mut cx)
}

impl Worker {
    /// Starts the produced answer `plan` ([`Body::is_produced`]) to
    /// request `r` (which `redirects` CGI local redirects led to) on
    /// `c`'s HTTP/1.1 exchange (`stream` none; `decoder` reads the
    /// request body on its way to a program, and is taken) or on its
    /// HTTP/2 stream. The one place each kind of producer starts, for
    /// every protocol. The answer to queue instead if it cannot start (a
    /// program that cannot be watched, or over the limit of one HTTP/2
    /// connection), or if its body is not produced.
    pub(super) fn start_answer_body(
        &mut self,
        c: &mut Conn,
        r: &mut Request,
        stream: Option<u32>,
        plan: Plan,
        redirects: u8,
        decoder: &mut Option<BodyDecoder>,
    ) -> Result<(), Plan> {
        match plan.body {
            Body::Pipe(pipe) => self.start_pipe(c, r, stream, *pipe, redirects, decoder),
            #[cfg(feature = "upstreams")]
            Body::Upstream(plan) => self.start_upstream(c, r, stream, plan, redirects, decoder),
            #[cfg(feature = "upstreams")]
            Body::Fastcgi(plan) => self.start_fastcgi(c, r, stream, plan, redirects, decoder),
            // (A handler's request body was read before it ran.)
            Body::Stream(streamed) => {
                let producer = streamed.producer(plan.status, &r.scratch.headers);
                self.start_produced(c, r, stream, producer, redirects);
                Ok(())
            }
            // (Not produced: queued as it is.)
            body => Err(Plan { body, ..plan }),
        }
    }

    /// Starts answering request `r` (which `redirects` CGI local
    /// redirects led to; it goes to the run) with `producer`, an embedded
    /// handler's: on `c`'s HTTP/1.1 exchange (`stream` none) or on its
    /// HTTP/2 stream.
    pub(super) fn start_produced(
        &mut self,
        c: &mut Conn,
        r: &mut Request,
        stream: Option<u32>,
        producer: Box<dyn Produce>,
        redirects: u8,
    ) {
        // (Made in its exchange's slot: see `start_watched`.)
        let ex = self.exchanges.insert(Exchange {
            conn: c.index,
            stream,
            task: Task::Run(Run::new(producer, r.hold(redirects))),
        });
        self.pools.refill_held(r);
        self.start_run(c, stream, ex, None, false, &r.scratch.path);
    }

    /// Starts the run of exchange `ex` (`c`'s, put there by the caller)
    /// on `c`'s HTTP/1.1 exchange (`stream` none; `body` reads the
    /// request body on its way to the producer) or on its HTTP/2 stream
    /// (`path`, the path answered, may be throttled); `program`: its
    /// producer is a program (see `pipe`), whose pipes are watched under
    /// its exchange's tokens.
    pub(super) fn start_run(
        &mut self,
        c: &mut Conn,
        stream: Option<u32>,
        ex: ExchangeId,
        body: Option<BodyDecoder>,
        program: bool,
        path: &[u8],
    ) {
        let Some(id) = stream else {
            let Some(run) = self.exchanges.run(ex) else {
                return;
            };
            let framing = Framing::new(&run.request.req, c.queued_end());
            let p = Producing {
                ex,
                framing,
                body,
                trailers: Vec::new(),
            };
            if let Some(h1) = c.proto.h1_mut() {
                let p = self.pools.boxed_producing(p);
                h1.produce(&mut c.life, p, self.clock.now);
            }
            return;
        };
        #[cfg(feature = "http2")]
        self.h2_start_run(c, id, ex, program, path);
        #[cfg(not(feature = "http2"))]
        let _ = (id, program, path);
    }

    /// Takes the connections whose later answers have moved, and drives
    /// each.
    pub(super) fn take_streams(&mut self) {
        while let Some(idx) = self.wakeups.next_stream() {
            let streaming = matches!(self.conns.get(idx), Some(c) if c.producing() || c.speaks_h2() || c.speaks_h3() || c.out.reads_in());
            if streaming {
                self.on_event(idx, false);
            }
        }
    }

    /// Moves `c`'s HTTP/1.1 produced answer forward while the client
    /// keeps up. Returns whether anything moved.
    pub(super) fn pump_produced(&mut self, c: &mut Conn) -> bool {
        self.h1_with_sink(c, pump)
    }

    /// The produced answers, of either protocol, that made no progress
    /// for their idle timeout (a program's own, else `timeouts.handler`):
    /// answered 504, or cut short once started; one sweep over the
    /// exchanges. A connection whose client does not read (its
    /// `timeouts.send` runs) or that lingers is left alone. On HTTP/2, an
    /// in-process producer's timer restarts while what it gave waits for
    /// the client's window; a program's runs on (see
    /// `Produce::is_process`). A producer that waits for the rest of its
    /// request body (a proxied upload the client stopped sending) waits
    /// `timeouts.body`, and the client is answered 408, as for any body
    /// (the upstream was not the one that was silent): over HTTP/1.1 the
    /// connection closes, over HTTP/2 the stream alone ends.
    pub(super) fn run_timeouts(&mut self) {
        let (now, handler) = (self.clock.now, self.settings.cfg.timeouts.handler);
        let body = self.settings.cfg.timeouts.body;
        for index in 0..self.exchanges.slots() {
            let Some(id) = self.exchanges.id_at(index) else {
                continue;
            };
            // (A client that took nothing for a second gets what is
            // held ahead of it from now on: FastCGI's `buffer_answer`.)
            #[cfg(feature = "upstreams")]
            if let Some(run) = self.exchanges.run_mut(id) {
                run.hold_ahead(&mut self.logger, true);
                super::pipe::retire(self.poll.registry(), run);
            }
            let Some(ex) = self.exchanges.get(id) else {
                continue;
            };
            let (i, stream) = (ex.conn, ex.stream);
            let Task::Run(run) = &ex.task else {
                continue;
            };
            let Some(c) = self.conns.get_mut(i) else {
                continue;
            };
            if c.blocked_since.is_some() || c.life.lingers() {
                continue;
            }
            // (An HTTP/2 stream's body comes in frames: the producer
            // knows whether its client's side is open.)
            let client_body = run.awaits_input()
                && (stream.is_some() || c.h1().is_some_and(h1::Conn::reading_body));
            let idle = match client_body {
                true => body,
                false => run.idle_timeout(handler),
            };
            let since = match stream {
                None => Some(c.life.since()),
                #[cfg(feature = "http3")]
                Some(sid) if c.speaks_h3() => {
                    let s = c.h3_mut().expect("speaks HTTP/3");
                    let a = s
                        .answers
                        .iter_mut()
                        .find(|a| a.id == sid && a.run == Some(id));
                    match a {
                        Some(a) if !a.pieces.is_empty() && !run.is_process() => {
                            // Waiting for the client, not the producer.
                            a.progress = now;
                            None
                        }
                        Some(a) => Some(a.progress),
                        None => None,
                    }
                }
                #[cfg(feature = "http2")]
                Some(sid) => {
                    let a = c.proto.h2_mut().and_then(|s| {
                        s.answers
                            .iter_mut()
                            .find(|a| a.id == sid && a.run == Some(id))
                    });
                    match a {
                        Some(a) if !a.pieces.is_empty() && !run.is_process() => {
                            // Waiting for the client (its window), not the producer.
                            a.progress = now;
                            None
                        }
                        // (Its window shut: `timeouts.send` runs instead,
                        // `Worker::h2_send_timeouts`.)
                        Some(a) if a.window_since.is_some() => None,
                        Some(a) => Some(a.progress),
                        None => None,
                    }
                }
                #[cfg(not(feature = "http2"))]
                Some(_) => None,
            };
            if since.is_none_or(|since| now.saturating_duration_since(since) < idle) {
                continue;
            }
            let mut conn = self.conns.take(i).expect("present");
            match stream {
                None if client_body => {
                    self.produced_body_refused(&mut conn, Status::REQUEST_TIMEOUT);
                }
                None => self.produced_timeout(&mut conn),
                #[cfg(feature = "http2")]
                Some(sid) if client_body => {
                    self.h2_run_body_refused(&mut conn, sid, Status::REQUEST_TIMEOUT)
                }
                #[cfg(feature = "http2")]
                Some(sid) => self.h2_run_timeout(&mut conn, sid),
                #[cfg(not(feature = "http2"))]
                Some(_) => {}
            }
            self.conns.put(i, conn);
            self.on_event(i, false);
        }
    }

    /// An HTTP/1.1 produced answer that made no progress for its idle
    /// timeout: 504, or cut short once started.
    fn produced_timeout(&mut self, c: &mut Conn) {
        self.h1_with_sink(c, |run, sink, t| run.time_out(sink, t.log));
    }

    /// The request body of `c`'s HTTP/1.1 produced answer was refused
    /// (`status`): answered `status` if it had not started, else cut
    /// short (and an info line says why).
    pub(super) fn produced_body_refused(&mut self, c: &mut Conn, status: Status) {
        self.h1_with_sink(c, |run, sink, t| run.refuse_body(sink, status, t.log));
    }

    /// Runs `drive` on `c`'s HTTP/1.1 produced answer and a sink for it,
    /// and carries out what it came to; whether anything moved.
    fn h1_with_sink(
        &mut self,
        c: &mut Conn,
        drive: impl FnOnce(&mut Run, &mut dyn Sink, Tools<'_>) -> Outcome,
    ) -> bool {
        let Some(h1) = c.proto.h1_mut() else {
            return false;
        };
        let served = c.life.served();
        let Some(p) = h1.produced() else {
            return false;
        };
        let Some(run) = self.exchanges.run_mut(p.ex) else {
            return false;
        };
        let cx = answering(
            &self.settings,
            &self.clock,
            self.drain.mode,
            (&self.listen, &c.transport),
        );
        let mut sink = H1Sink {
            out: &mut c.out,
            framing: &mut p.framing,
            served,
            sent: c.sent,
            cx: &cx,
            pipes: !c.transport.is_tls(),
        };
        let t = Tools {
            cfg: &self.settings.cfg,
            router: &self.router,
            buf: &mut self.pools.pipe_buf,
            log: &mut self.logger,
        };
        let outcome = drive(run, &mut sink, t);
        if p.framing.tunnel && !p.framing.tunnel_reads {
            // A 101 went: from now on the client's bytes are the
            // producer's, as they come.
            p.framing.tunnel_reads = true;
            p.body = Some(BodyDecoder::tunnel());
        }
        let outcome = super::pipe::rewatch(self.poll.registry(), run, p.ex.index(), outcome);
        let moved = self.h1_outcome(c, outcome);
        #[cfg(feature = "upstreams")]
        self.become_tunnel(c);
        moved
    }

    /// What an HTTP/1.1 pump came to; whether to pump again (something
    /// moved, and more may follow at once).
    fn h1_outcome(&mut self, c: &mut Conn, outcome: Outcome) -> bool {
        match outcome {
            Outcome::Idle => return false,
            Outcome::Moved => c.life.touch(self.clock.now),
            Outcome::Waits => {
                // (Nothing more until its sources' events: the driver
                // goes on to the client's side without pumping again.)
                c.life.touch(self.clock.now);
                return false;
            }
            Outcome::Ended => self.h1_produced_end(c, None),
            Outcome::Fail(status) => self.h1_produced_end(c, Some(status)),
            Outcome::Redirect(target) => {
                if let Some((_, run)) = self.h1_end_run(c) {
                    self.local_redirect(c, None, run.request, &target);
                }
            }
        }
        true
    }

    /// Ends `c`'s HTTP/1.1 produced answer, answered `fail` instead if
    /// its head did not go out; logs it, and lets the connection go on
    /// (or close).
    fn h1_produced_end(&mut self, c: &mut Conn, fail: Option<Status>) {
        let run = c.h1().and_then(h1::Conn::run_ex);
        let run = run.and_then(|id| self.exchanges.run(id));
        let failed = match (fail, run) {
            (Some(status), Some(run)) => {
                let req = &run.request.req;
                let (head_only, site) = (req.method() == Method::Head, req.site());
                Some((status.0, self.fail_unstarted(c, status, head_only, site)))
            }
            _ => None,
        };
        let Some(p) =
            (c.proto.h1_mut()).and_then(|h1| h1.end_produced(&mut c.life, self.clock.now))
        else {
            return;
        };
        // (The run is done with where it lies, and dropped there: see
        // `Exchanges::discard`.)
        let Some(run) = self.exchanges.run_mut(p.ex) else {
            return;
        };
        super::pipe::unwatch_all(self.poll.registry(), run);
        let (status, body_from) = failed.unwrap_or((run.status(), p.framing.body_from));
        let logs = Logs {
            counts: &self.counts,
            clock: &self.clock,
            logger: &mut self.logger,
        };
        logs.produced(c, run, status, body_from);
        self.pools.take_back_held(&mut run.request);
        self.exchanges.discard(p.ex);
        if failed.is_some() || p.framing.broken || !p.framing.keep {
            c.life.close();
        }
        self.pools.take_back_producing(p);
    }

    /// The connection goes away under its HTTP/1.1 produced answer: the
    /// producer is stopped and the request logged (499 if nothing of
    /// its answer went out).
    pub(super) fn abandon_produced(&mut self, c: &mut Conn) {
        let Some((p, mut run)) = self.h1_end_run(c) else {
            return;
        };
        let status = run.stop(&mut self.logger);
        self.log_produced(c, &run, status, p.framing.body_from);
        c.life.close();
    }

    /// Takes `c`'s HTTP/1.1 produced answer away, its run out of the
    /// exchanges and its sources out of the watch (see
    /// [`crate::server::h1::Conn::end_produced`]).
    fn h1_end_run(&mut self, c: &mut Conn) -> Option<(Box<Producing>, Run)> {
        let p = c
            .proto
            .h1_mut()?
            .end_produced(&mut c.life, self.clock.now)?;
        let mut run = self.exchanges.take_run(p.ex)?;
        self.unwatch_run(&mut run);
        Some((p, run))
    }

    /// Queues an error page with `status` in place of a produced answer
    /// that has not started to a request to `site`; the connection
    /// closes after it. Returns where its body starts.
    pub(super) fn fail_unstarted(
        &mut self,
        c: &mut Conn,
        status: Status,
        head_only: bool,
        site: usize,
    ) -> u64 {
        // (Only the scratch buffers are used: the request is the run's.)
        let mut r = self.pools.lend_request(self.clock.now);
        r.scratch.clear();
        let mut plan = Plan::error(status, &mut r.scratch);
        self.router
            .finish_unread(site, &mut plan, &mut r.scratch, &mut self.logger);
        let cx = answering(
            &self.settings,
            &self.clock,
            self.drain.mode,
            (&self.listen, &c.transport),
        );
        let body = h1::Conn::fail(&mut c.life, plan, &r.scratch, head_only, &mut c.out, &cx);
        self.pools.take_back_request(r);
        c.queued_end().saturating_sub(body)
    }

    /// Logs `run`'s answer to its request (`status`, its body from the
    /// connection's byte `body_from` to what is queued now) once its last
    /// byte has left, or the connection ended, with what was sent.
    pub(super) fn log_produced(&mut self, c: &mut Conn, run: &Run, status: u16, body_from: u64) {
        let logs = Logs {
            counts: &self.counts,
            clock: &self.clock,
            logger: &mut self.logger,
        };
        logs.produced(c, run, status, body_from);
    }

    /// Lets go of `wait`, held on exchange `stream` of `c`, whose client
    /// left before it was answered (its body cut short, its stream
    /// reset): its request is logged 499, as a program's that never
    /// answered.
    pub(super) fn abandon_wait(&mut self, c: &mut Conn, stream: Option<u32>, wait: Wait) {
        let held = self.forget_wait(c, stream, wait);
        let logs = Logs {
            counts: &self.counts,
            clock: &self.clock,
            logger: &mut self.logger,
        };
        logs.held(c, &held, None, 499, c.queued_end());
    }
}

/// What logging a produced answer takes of the worker: borrowed apart
/// from its exchanges, so that a run is logged where it lies.
struct Logs<'a> {
    counts: &'a Counts,
    clock: &'a Clock,
    logger: &'a mut Logger,
}

impl Logs<'_> {
    /// See [`Worker::log_produced`].
    fn produced(self, c: &mut Conn, run: &Run, status: u16, body_from: u64) {
        self.held(c, &run.request, Some(run), status, body_from);
    }

    /// Logs request `request` answered `status` (by `run`, if one ran),
    /// its body from byte `body_from` of the connection.
    fn held(self, c: &mut Conn, request: &Held, run: Option<&Run>, status: u16, body_from: u64) {
        (self.counts).answered(&request.req, status, request.started, self.clock.now);
        if self.logger.access_enabled() {
            let mut rec = super::request_record(c, self.clock.wall(), &request.req, status);
            // (Only then: it reads the clock.)
            rec.upstream = run.and_then(Run::upstream);
            super::access_log::push_record(c, self.logger, &rec, body_from, request.started);
        }
    }
}

#[cfg(feature = "http2")]
mod h2 {
    use super::{pump, Tools};
    use crate::h2::ErrorCode;
    use crate::http::Status;
    use crate::server::conn::Conn;
    use crate::server::exchange::{ExchangeId, Exchanges};
    use crate::server::h2::Answer;
    use crate::server::run::{Fed, Outcome, Run, Sink};
    #[cfg(feature = "http3")]
    use crate::server::worker::h2::streams::H3;
    use crate::server::worker::h2::streams::{upstream_time, Drove, H2};
    use crate::server::worker::Worker;

    impl Worker {
        /// Starts answering stream `id` of `c` with the run of exchange
        /// `ex` (a program's if `program`: the session counts it; `path`:
        /// the path answered).
        pub(super) fn h2_start_run(
            &mut self,
            c: &mut Conn,
            id: u32,
            ex: ExchangeId,
            program: bool,
            path: &[u8],
        ) {
            #[cfg(feature = "http3")]
            if c.speaks_h3() {
                if let Some(a) = self.stream_start_run::<H3>(c, (id, ex, program), path) {
                    self.h3_forget(c, a);
                }
                return;
            }
            if let Some(mut a) = self.stream_start_run::<H2>(c, (id, ex, program), path) {
                self.h2_run_abandon(c, &mut a, false);
            }
        }

        /// Body bytes for stream `id`, whose producer reads its request
        /// body: they wait for its input (their credit goes back as it
        /// takes them, see `StreamSink::took_body`), or are dropped (credit
        /// back at once) once it no longer reads; `end_stream` ends the
        /// body, with its trailer field lines if it had any. False if no
        /// producer on the stream reads a body.
        pub(in crate::server::worker) fn h2_run_data(
            c: &mut Conn,
            exchanges: &mut Exchanges,
            id: u32,
            data: &[u8],
            (end_stream, trailers): (bool, Option<&[u8]>),
        ) -> Fed {
            let Some(s) = c.proto.h2_mut() else {
                return Fed::NoInput;
            };
            let Some(run) = s
                .answers
                .iter_mut()
                .filter(|a| a.id == id)
                .find_map(|a| a.run)
                .and_then(|ex| exchanges.run_mut(ex))
            else {
                return Fed::NoInput;
            };
            let end = end_stream.then(|| trailers.unwrap_or_default());
            let fed = run.feed_body(data, end);
            if fed == (Fed::Fed { closed: true }) {
                s.conn.release(id, data.len());
            }
            fed
        }

        /// Moves every produced answer on `c`'s streams forward.
        pub(in crate::server::worker) fn h2_pump_runs(&mut self, c: &mut Conn) {
            self.h2_pump_each(c, |a| a.run.is_some(), Self::h2_pump_run);
        }

        /// Pumps one stream's produced answer while the stream has room;
        /// gives the answer back unless it ended.
        fn h2_pump_run(&mut self, c: &mut Conn, a: Answer) -> Option<Answer> {
            self.h2_with_sink(c, a, pump)
        }

        /// Runs `drive` on the answer's run and a sink for its stream, and
        /// carries out what it came to; the answer back unless it ended.
        /// Once the run is over, what is left of the request body is not
        /// wanted (a program that answered without reading it all, or
        /// failed): it is read and dropped, its credit given back, as
        /// for brisk's own early answers (`h2_refuse_rest`), so that the
        /// client's upload never stalls on windows nobody reopens (RFC
        /// 9113 §8.1, §6.9).
        fn h2_with_sink(
            &mut self,
            c: &mut Conn,
            a: Answer,
            drive: impl FnOnce(&mut Run, &mut dyn Sink, Tools<'_>) -> Outcome,
        ) -> Option<Answer> {
            let id = a.id;
            let framing = (a.run)
                .and_then(|ex| self.exchanges.run(ex))
                .map(|run| run.request.req.body());
            let drove = self.stream_drive::<H2>(c, a, drive);
            if let (Some(framing), false) = (framing, matches!(drove, Drove::Going(_))) {
                self.h2_refuse_rest(c, id, framing);
            }
            match drove {
                Drove::Going(a) => Some(a),
                // (It ends once what it queued is framed.)
                Drove::Ended(a) if !a.pieces.is_empty() => Some(a),
                Drove::Ended(a) => {
                    self.h2_finish_stream(c, a);
                    None
                }
                Drove::Gone => None,
            }
        }

        /// Ends a produced answer's stream whose body is all framed:
        /// END_STREAM (on its trailers' HEADERS if it has any), or
        /// RST_STREAM if it is short (CANCEL for a tunnel the upstream
        /// reset, RFC 8441 §5; nothing if the head ended it).
        pub(in crate::server::worker) fn h2_finish_stream(&mut self, c: &mut Conn, a: Answer) {
            if let Some(s) = c.proto.h2_mut() {
                if a.broken {
                    let code = match a.tunnel {
                        true => ErrorCode::Cancel,
                        false => ErrorCode::Internal,
                    };
                    s.conn.reset(a.id, code);
                } else if !a.trailers.is_empty() {
                    let scratch = &mut self.pools.h2_scratch;
                    s.send_trailers(a.id, &a.trailers, scratch);
                } else if !a.discard {
                    s.conn.send_data(a.id, &[], true);
                }
            }
            self.h2_ended(c, a);
        }

        /// The stream (or its connection) is gone, or its answer is not
        /// wanted: the producer is stopped; with `log`, a request whose
        /// head was never sent is logged (499).
        pub(in crate::server::worker) fn h2_run_abandon(
            &mut self,
            c: &mut Conn,
            a: &mut Answer,
            log: bool,
        ) {
            let Some(mut run) = self.stream_take_run::<H2>(c, a) else {
                return;
            };
            let status = run.stop(&mut self.logger);
            upstream_time(a, &run);
            self.unwatch_run(&mut run);
            if log && !run.started() {
                self.log_produced(c, &run, status, c.queued_end());
            }
        }

        /// The produced answer on stream `id` of `c` gave nothing for its
        /// idle timeout: answered 504 (or reset).
        pub(in crate::server::worker) fn h2_run_timeout(&mut self, c: &mut Conn, id: u32) {
            #[cfg(feature = "http3")]
            if c.speaks_h3() {
                return self.h3_drive_stream(c, id, |run, sink, t| run.time_out(sink, t.log));
            }
            self.h2_drive_stream(c, id, |run, sink, t| run.time_out(sink, t.log));
        }

        /// The request body of stream `id` of `c` is refused with `status`:
        /// its client sent none of what its producer waits for in
        /// `timeouts.body` (408), or more than its route takes (413). It
        /// is answered so (or the stream reset once its head went), the
        /// producer stopped (an upstream's connection closes, the request
        /// cut short) and the rest of the body dropped; the connection's
        /// other streams go on.
        pub(in crate::server::worker) fn h2_run_body_refused(
            &mut self,
            c: &mut Conn,
            id: u32,
            status: Status,
        ) {
            let Some(run) = c.stream_run(id).and_then(|ex| self.exchanges.run(ex)) else {
                return;
            };
            let framing = run.request.req.body();
            #[cfg(feature = "http3")]
            if c.speaks_h3() {
                self.h3_drive_stream(c, id, |run, sink, t| run.refuse_body(sink, status, t.log));
                return self.h2_refuse_rest(c, id, framing);
            }
            self.h2_drive_stream(c, id, |run, sink, t| run.refuse_body(sink, status, t.log));
            self.h2_refuse_rest(c, id, framing);
        }

        /// Runs `drive` on the produced answer of stream `id` of `c`, and
        /// puts it back unless it ended.
        fn h2_drive_stream(
            &mut self,
            c: &mut Conn,
            id: u32,
            drive: impl FnOnce(&mut Run, &mut dyn Sink, Tools<'_>) -> Outcome,
        ) {
            let Some(a) = c.proto.h2_mut().and_then(|s| s.take(id)) else {
                return;
            };
            let left = self.h2_with_sink(c, a, drive);
            if let (Some(a), Some(s)) = (left, c.proto.h2_mut()) {
                s.conn.set_remaining(a.id, a.queued());
                s.answers.push(a);
            }
        }
    }
}
