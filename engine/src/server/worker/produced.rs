//! Produced answers in the event loop (see [`crate::server::run`]): an
//! embedded handler's body in pieces, asked for more only while the
//! client keeps up, or its answer given later by another thread, taken
//! when that thread wakes the worker (the connection comes through the
//! worker's channel). One [`Run`] drives either into the sink of the
//! connection's protocol; the protocol is chosen only where the sink is
//! built ([`Worker::pump_produced`] for HTTP/1.1, `h2_pump_run` for
//! HTTP/2) and where the answer ends (logged, and the connection or the
//! stream goes on).

use super::{answering, Worker};
use crate::config::Config;
use crate::handlers::produce::Produce;
use crate::http::{Method, Status};
use crate::log::Logger;
use crate::server::conn::Conn;
use crate::server::h1::sink::{Framing, H1Sink, Producing};
use crate::server::h1::State;
use crate::server::run::{Outcome, PumpCx, Run, Sink};

/// What is done to a produced answer with its sink (see [`pump`],
/// [`time_out`]).
type Drive = fn(&mut Run, &mut dyn Sink, &Config, &mut Vec<u8>, &mut Logger) -> Outcome;

/// Gives `run` up for `timeouts.handler` (504 before its head).
fn time_out(
    run: &mut Run,
    sink: &mut dyn Sink,
    _: &Config,
    _: &mut Vec<u8>,
    log: &mut Logger,
) -> Outcome {
    let why = "no progress for timeouts.handler; given up";
    run.fail(sink, Status::GATEWAY_TIMEOUT, why, log)
}

/// Pumps `run` into `sink`: the one place where any protocol's produced
/// answer moves.
fn pump(
    run: &mut Run,
    sink: &mut dyn Sink,
    cfg: &Config,
    buf: &mut Vec<u8>,
    log: &mut Logger,
) -> Outcome {
    let compress = &cfg.site(run.request.req.site()).compress;
    let mut cx = PumpCx { buf, log, compress };
    run.pump(sink, &mut cx)
}

impl Worker {
    /// Starts answering the current request (which `redirects` CGI local
    /// redirects led to) with `producer`: on `c`'s HTTP/1.1 exchange
    /// (`stream` none) or on its HTTP/2 stream.
    pub(super) fn start_produced(
        &mut self,
        c: &mut Conn,
        stream: Option<u32>,
        producer: Box<dyn Produce>,
        redirects: u8,
    ) {
        let run = Run::new(producer, self.hold(redirects));
        let Some(id) = stream else {
            let framing = Framing::new(&run.request.req, c.queued_end());
            let p = Producing { run, framing };
            c.h1.set(State::Streaming(Box::new(p)), self.clock.now);
            return;
        };
        #[cfg(feature = "http2")]
        self.h2_start_run(c, id, Box::new(run));
        #[cfg(not(feature = "http2"))]
        let _ = id;
    }

    /// Takes the connections whose later answers have moved, and drives
    /// each.
    pub(super) fn take_streams(&mut self) {
        while let Some(idx) = self.wakeups.next_stream() {
            let streaming = matches!(self.conns.get(idx), Some(c) if matches!(c.h1.state(), State::Streaming(_)) || c.speaks_h2());
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

    /// An HTTP/1.1 produced answer that made no progress for
    /// `timeouts.handler`: 504, or cut short once started.
    pub(super) fn produced_timeout(&mut self, c: &mut Conn) {
        self.h1_with_sink(c, time_out);
    }

    /// Runs `drive` on `c`'s HTTP/1.1 produced answer and a sink for it,
    /// and carries out what it came to; whether anything moved.
    fn h1_with_sink(&mut self, c: &mut Conn, drive: Drive) -> bool {
        let served = c.h1.served();
        let Some(p) = c.h1.produced() else {
            return false;
        };
        let cx = answering(&self.settings, &self.clock, self.drain.mode);
        let mut sink = H1Sink {
            out: &mut c.out,
            framing: &mut p.framing,
            served,
            sent: c.sent,
            cx: &cx,
        };
        let (buf, log) = (&mut self.pools.pipe_buf, &mut self.logger);
        let outcome = drive(&mut p.run, &mut sink, &self.settings.cfg, buf, log);
        self.h1_outcome(c, outcome)
    }

    /// What an HTTP/1.1 pump came to; whether anything moved.
    fn h1_outcome(&mut self, c: &mut Conn, outcome: Outcome) -> bool {
        match outcome {
            Outcome::Idle => return false,
            Outcome::Moved => c.h1.touch(self.clock.now),
            Outcome::Ended => self.h1_produced_end(c, None),
            Outcome::Fail(status) => self.h1_produced_end(c, Some(status)),
            // (No handler's producer redirects.)
            Outcome::Redirect(_) => self.h1_produced_end(c, Some(Status::INTERNAL_SERVER_ERROR)),
        }
        true
    }

    /// Ends `c`'s HTTP/1.1 produced answer, answered `fail` instead if
    /// its head did not go out; logs it, and lets the connection go on
    /// (or close).
    fn h1_produced_end(&mut self, c: &mut Conn, fail: Option<Status>) {
        let failed = match (fail, c.h1.produced()) {
            (Some(status), Some(p)) => {
                let req = &p.run.request.req;
                let (head_only, site) = (req.method() == Method::Head, req.site());
                Some((status.0, self.fail_unstarted(c, status, head_only, site)))
            }
            _ => None,
        };
        let Some(p) = c.h1.end_produced(self.clock.now) else {
            return;
        };
        let (status, body_from) = failed.unwrap_or((p.run.status(), p.framing.body_from));
        self.log_produced(c, &p.run.request, status, body_from);
        if failed.is_some() || p.framing.broken || !p.framing.keep {
            c.h1.close();
        }
    }

    /// The connection goes away under its HTTP/1.1 produced answer: the
    /// producer is stopped and the request logged (499 if nothing of
    /// its answer went out).
    pub(super) fn abandon_produced(&mut self, c: &mut Conn) {
        let Some(mut p) = c.h1.end_produced(self.clock.now) else {
            return;
        };
        let status = p.run.stop();
        self.log_produced(c, &p.run.request, status, p.framing.body_from);
        c.h1.close();
    }
}

#[cfg(feature = "http2")]
mod h2 {
    use super::{pump, time_out, Drive};
    use crate::http::Status;
    use crate::server::conn::Conn;
    use crate::server::h2::sink::{queued, H2Sink};
    use crate::server::h2::Answer;
    use crate::server::run::{Outcome, Run};
    use crate::server::worker::{answering, Worker};

    impl Worker {
        /// Starts answering stream `id` of `c` with `run`.
        pub(super) fn h2_start_run(&mut self, c: &mut Conn, id: u32, run: Box<Run>) {
            let mut a = Answer::waiting(id, run.request.started);
            a.open = true;
            a.progress = self.clock.now;
            a.run = Some(run);
            a.throttle = self.h2_throttle(c);
            match c.h2.as_mut() {
                Some(s) => s.answers.push(a),
                None => self.h2_run_abandon(c, &mut a, false),
            }
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
        /// carries out what it came to.
        fn h2_with_sink(&mut self, c: &mut Conn, mut a: Answer, drive: Drive) -> Option<Answer> {
            let Some(mut run) = a.run.take() else {
                return Some(a);
            };
            let Some(s) = c.h2.as_mut() else {
                a.run = Some(run);
                return Some(a);
            };
            let started = run.started();
            let stamp = answering(&self.settings, &self.clock, self.drain.mode).stamp;
            let mut sink = H2Sink {
                session: s,
                answer: &mut a,
                scratch: &mut self.pools.h2_scratch,
                stamp: &stamp,
                head_only: run.head_only(),
            };
            let (buf, log) = (&mut self.pools.pipe_buf, &mut self.logger);
            let outcome = drive(&mut run, &mut sink, &self.settings.cfg, buf, log);
            if !started && run.started() {
                a.log = self.h2_head_log(c, &run.request.req, run.status());
            }
            match outcome {
                Outcome::Idle => {
                    a.run = Some(run);
                    Some(a)
                }
                Outcome::Moved => {
                    a.progress = self.clock.now;
                    a.run = Some(run);
                    Some(a)
                }
                Outcome::Ended => {
                    a.open = false;
                    if !a.pieces.is_empty() {
                        // (It ends once what it queued is framed.)
                        return Some(a);
                    }
                    self.h2_pipe_close(c, a);
                    None
                }
                Outcome::Fail(status) => {
                    self.h2_give_up(c, a, false, run.request, status);
                    None
                }
                // (No handler's producer redirects.)
                Outcome::Redirect(_) => {
                    let status = Status::INTERNAL_SERVER_ERROR;
                    self.h2_give_up(c, a, false, run.request, status);
                    None
                }
            }
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
            let Some(mut run) = a.run.take() else { return };
            let status = run.stop();
            if log && !run.started() {
                self.log_produced(c, &run.request, status, c.queued_end());
            }
        }

        /// Produced answers that gave nothing for `timeouts.handler`
        /// while nothing of theirs waited for the client: answered 504
        /// (or reset). Whether any was.
        pub(in crate::server::worker) fn h2_run_timeouts(&mut self, c: &mut Conn) -> bool {
            let (now, limit) = (self.clock.now, self.settings.cfg.timeouts.handler);
            let Some(s) = c.h2.as_mut() else { return false };
            let mut late = Vec::new();
            for a in s.answers.iter_mut().filter(|a| a.run.is_some()) {
                if !a.pieces.is_empty() {
                    // Waiting for the client (its window), not the producer.
                    a.progress = now;
                } else if now.saturating_duration_since(a.progress) >= limit {
                    late.push(a.id);
                }
            }
            for id in &late {
                let Some(a) = c.h2.as_mut().and_then(|s| s.take(*id)) else {
                    continue;
                };
                let left = self.h2_with_sink(c, a, time_out);
                if let (Some(a), Some(s)) = (left, c.h2.as_mut()) {
                    s.conn.set_remaining(a.id, queued(&a.pieces));
                    s.answers.push(a);
                }
            }
            !late.is_empty()
        }
    }
}
