//! What the worker does the same for the produced answers of HTTP/2 and
//! HTTP/3, the two protocols whose answers are [`Answer`]s on streams:
//! start one, drive it into its stream's sink ([`StreamSink`], framed
//! by the protocol's [`Frames`]) and carry out what its run came to,
//! take its run out at the end. Each protocol keeps only how its
//! answers leave: HTTP/2 frames them within its windows (`h2_send`),
//! HTTP/3 writes them into QUIC streams (`h3_send`).

use std::collections::VecDeque;

use super::{fill_pieces, head_log};
use crate::handlers::Plan;
use crate::http::request::Field;
use crate::http::response::{Connection, Framing, Head};
use crate::http::Method;
use crate::http::Status;
use crate::server::conn::{Conn, Proto};
use crate::server::exchange::ExchangeId;
use crate::server::h2::sink::{Frames, StreamSink};
use crate::server::h2::Piece;
use crate::server::h2::{Answer, Session};
use crate::server::run::{Outcome, Run, Sink};
use crate::server::waits::Held;
use crate::server::worker::dispatch::answering;
use crate::server::worker::dispatch::request_record;
use crate::server::worker::produced::Tools;
use crate::server::worker::proxied::client_of;
use crate::server::worker::Request;
use crate::server::worker::Worker;

/// A protocol whose answers are [`Answer`]s on streams.
pub(in crate::server::worker) trait Streamed {
    /// What the protocol keeps of an answer of its own.
    type Own: Default;
    /// Its framing of a produced answer's head.
    type Frames<'s>: Frames<Own = Self::Own>;
    /// The framing of `p`'s session, if `p` speaks this protocol.
    fn frames(p: &mut Proto) -> Option<Self::Frames<'_>>;
    /// The answers of `p`'s session and how many of them programs and
    /// upstreams produce, if `p` speaks this protocol.
    fn answers(p: &mut Proto) -> Option<(&mut Vec<Answer<Self::Own>>, &mut u32)>;
    /// An empty piece list for a new answer of `p`'s session (HTTP/2's
    /// and HTTP/3's are kept from the answers that ended), if `p` speaks
    /// this protocol.
    fn spare_pieces(p: &mut Proto) -> Option<VecDeque<Piece>>;
    /// An empty log-line buffer for a new answer of `p`'s session
    /// (HTTP/2's are kept from the answers that ended).
    fn spare_text(p: &mut Proto) -> Vec<u8>;
    /// Gives back the flow-control credit of `n` bytes of stream `id`'s
    /// request body that were received but that no producer will read
    /// (its run is over with them in its input), if `p` speaks this
    /// protocol and the credit did not go back as they were received.
    fn release(p: &mut Proto, id: u32, n: usize);
}

/// HTTP/2.
pub(in crate::server::worker) struct H2;

impl Streamed for H2 {
    type Own = ();
    type Frames<'s> = &'s mut Session;

    fn frames(p: &mut Proto) -> Option<&mut Session> {
        p.h2_mut()
    }

    fn answers(p: &mut Proto) -> Option<(&mut Vec<Answer>, &mut u32)> {
        p.h2_mut().map(|s| (&mut s.answers, &mut s.programs))
    }

    fn spare_pieces(p: &mut Proto) -> Option<VecDeque<Piece>> {
        p.h2_mut().map(Session::spare_pieces)
    }

    fn spare_text(p: &mut Proto) -> Vec<u8> {
        p.h2_mut().map(Session::spare_text).unwrap_or_default()
    }

    fn release(p: &mut Proto, id: u32, n: usize) {
        // (The connection's window too, whether or not the stream is
        // still open: RFC 9113 §6.9.)
        if let Some(s) = p.h2_mut() {
            s.conn.release(id, n);
        }
    }
}

/// HTTP/3.
#[cfg(feature = "http3")]
pub(in crate::server::worker) struct H3;

#[cfg(feature = "http3")]
impl Streamed for H3 {
    type Own = crate::server::h3::Framed;
    type Frames<'s> = crate::server::h3::sink::H3Frames;

    fn frames(p: &mut Proto) -> Option<Self::Frames<'_>> {
        matches!(p, Proto::H3(_)).then_some(crate::server::h3::sink::H3Frames)
    }

    fn answers(p: &mut Proto) -> Option<(&mut Vec<Answer<Self::Own>>, &mut u32)> {
        match p {
            Proto::H3(s) => Some((&mut s.answers, &mut s.programs)),
            _ => None,
        }
    }

    fn spare_pieces(p: &mut Proto) -> Option<VecDeque<Piece>> {
        match p {
            Proto::H3(s) => Some(s.spare_pieces.take()),
            _ => None,
        }
    }

    fn spare_text(_: &mut Proto) -> Vec<u8> {
        Vec::new()
    }

    fn release(_: &mut Proto, _: u32, _: usize) {
        // (QUIC gave the credit back as the bytes were read.)
    }
}

/// What driving a stream's produced answer came to.
pub(in crate::server::worker) enum Drove<O> {
    /// Its run goes on: the answer goes back in its session.
    Going(Answer<O>),
    /// Its run ended: nothing more comes (`open` is false); the stream
    /// ends once what it queued has left.
    Ended(Answer<O>),
    /// The answer went elsewhere: its request is answered an error, or
    /// a local redirect followed.
    Gone,
}

/// The run of answer `a` is over (ended, or given up): its upstream's
/// time to the end goes in its access-log line, drafted at its head.
pub(in crate::server::worker) fn upstream_time<O>(a: &mut Answer<O>, run: &Run) {
    if let Some((text, draft)) = a.log.as_mut() {
        draft.put_upstream_time(text, run.upstream().and_then(|u| u.response_us));
    }
}

impl Worker {
    /// Makes ready the answer `plan` gives stream `id` of `c`, which
    /// speaks `S` (for request `r`, which `redirects` CGI local
    /// redirects led to), unless it is produced (its run starts; if it
    /// cannot, the answer it fails to is made instead): the answer with
    /// its pieces, throttle and log line, and the head to send before
    /// them.
    pub(in crate::server::worker) fn stream_ready<'r, S: Streamed>(
        &mut self,
        c: &mut Conn,
        r: &'r mut Request,
        id: u32,
        mut plan: Plan,
        redirects: u8,
    ) -> Option<(Answer<S::Own>, Head<'r>)> {
        self.router
            .finish(&r.req, &mut plan, &mut r.scratch, &mut self.logger);
        if plan.body.is_produced() {
            if let Err(failed) = self.start_answer_body(c, r, Some(id), plan, redirects, &mut None)
            {
                self.h2_answer(c, r, id, failed, redirects);
            }
            return None;
        }
        let body_len = plan.body_len(&r.scratch);
        let Plan { status, body, .. } = plan;
        let bodiless = status.is_bodiless();
        let framing = match bodiless {
            true => Framing::Bodiless,
            false => Framing::Length(body_len),
        };
        let pieces = S::spare_pieces(&mut c.proto)?;
        let mut text = S::spare_text(&mut c.proto);
        let mut a = Answer::waiting(id, r.start);
        a.pieces = pieces;
        if !(r.req.method() == Method::Head || bodiless || body_len == 0) {
            fill_pieces(&mut a.pieces, body, &r.scratch);
            a.body_len = body_len;
            a.throttle = self.h2_throttle(c, r.req.site(), &r.scratch.path);
        }
        self.log_answer(r, client_of(c, &r.req).ip(), status);
        a.log = self.logger.access_enabled().then(|| {
            let rec = request_record(c, self.clock.wall(), &r.req, status.0);
            let draft = self.logger.draft(&rec, &mut text);
            (text, draft)
        });
        let head = Head {
            status: status.0,
            reason: b"",
            headers: &r.scratch.headers,
            framing,
            connection: Connection::Default,
        };
        Some((a, head))
    }

    /// Starts answering stream `id` of `c`, which speaks `S`, with the
    /// run of exchange `ex` (a program's or an upstream's if `program`:
    /// the session counts it; `path`: the path answered). Gives the
    /// answer back if `c` has no session to keep it in (it is to be
    /// given up).
    pub(in crate::server::worker) fn stream_start_run<S: Streamed>(
        &mut self,
        c: &mut Conn,
        (id, ex, program): (u32, ExchangeId, bool),
        path: &[u8],
    ) -> Option<Answer<S::Own>> {
        let run = self.exchanges.run(ex)?;
        let mut a = Answer::waiting(id, run.request.started);
        let site = run.request.req.site();
        // (The piece list of an answer that ended, if any: see
        // `Session::recycle`.)
        if let Some(pieces) = S::spare_pieces(&mut c.proto) {
            a.pieces = pieces;
        }
        a.throttle = self.h2_throttle(c, site, path);
        a.open = true;
        a.progress = self.clock.now;
        a.program = program;
        a.run = Some(ex);
        let Some((answers, programs)) = S::answers(&mut c.proto) else {
            return Some(a);
        };
        *programs += u32::from(program);
        answers.push(a);
        None
    }

    /// Runs `drive` on the run of answer `a` (out of its session
    /// meanwhile) of `c`, which speaks `S`, with a sink for its stream,
    /// and carries out what it came to as far as both protocols do it
    /// alike.
    pub(in crate::server::worker) fn stream_drive<S: Streamed>(
        &mut self,
        c: &mut Conn,
        mut a: Answer<S::Own>,
        drive: impl FnOnce(&mut Run, &mut dyn Sink, Tools<'_>) -> Outcome,
    ) -> Drove<S::Own> {
        let Some(ex) = a.run else {
            return Drove::Going(a);
        };
        let (Some(frames), Some(run)) = (S::frames(&mut c.proto), self.exchanges.run_mut(ex))
        else {
            return Drove::Going(a);
        };
        let started = run.started();
        let stamp = answering(
            &self.settings,
            &self.clock,
            self.drain.mode,
            (&self.listen, &c.transport),
        )
        .stamp;
        let t = Tools {
            cfg: &self.settings.cfg,
            router: &self.router,
            buf: &mut self.pools.pipe_buf,
            log: &mut self.logger,
        };
        // (The sink, and the session it may borrow, go before the log
        // line reads the connection.)
        let outcome = {
            let mut sink = StreamSink {
                frames,
                answer: &mut a,
                scratch: &mut self.pools.h2_scratch,
                stamp: &stamp,
                head_only: run.head_only(),
            };
            drive(run, &mut sink, t)
        };
        let registry = self.poll.registry();
        let outcome = crate::server::worker::pipe::rewatch(registry, run, ex.index(), outcome);
        if !started && run.started() {
            let parts = (&self.counts, &self.clock, run.request.started);
            let answer = (run.status(), run.upstream());
            // (The log line in the buffer of one that went, if any.)
            let text = match self.logger.access_enabled() {
                true => S::spare_text(&mut c.proto),
                false => Vec::new(),
            };
            a.log = head_log(parts, &mut self.logger, c, &run.request.req, answer, text);
            // A WebSocket's tunnel (an extended CONNECT, RFC 8441, whose
            // upstream switched): open for hours, so it no longer counts
            // among the requests in progress that a connection's other
            // requests wait behind; the stream limit bounds tunnels.
            let tunnel = run.request.req.field(Field::Upgrade).is_some()
                && (200..300).contains(&run.status());
            a.tunnel = tunnel;
            if a.program && tunnel {
                a.program = false;
                if let Some((_, programs)) = S::answers(&mut c.proto) {
                    *programs = programs.saturating_sub(1);
                }
            }
        }
        match outcome {
            Outcome::Idle => return Drove::Going(a),
            Outcome::Moved | Outcome::Waits => {
                a.progress = self.clock.now;
                return Drove::Going(a);
            }
            _ => {}
        }
        let Some(mut run) = self.stream_take_run::<S>(c, &mut a) else {
            return Drove::Going(a);
        };
        upstream_time(&mut a, &run);
        self.unwatch_run(&mut run);
        match outcome {
            Outcome::Fail(status) => self.stream_answer_error(c, a.id, run.request, status),
            Outcome::Redirect(target) => {
                self.local_redirect(c, Some(a.id), run.request, &target);
            }
            _ => {
                a.open = false;
                // (Its request's buffers serve a later one: the run is
                // dropped here.)
                self.pools.take_back_held(&mut run.request);
                return Drove::Ended(a);
            }
        }
        Drove::Gone
    }

    /// An extended CONNECT (a WebSocket, RFC 8441) whose HEADERS ended
    /// stream `id` of `c`: the client's side of its tunnel ended before
    /// it opened, which its producer passes on once it has.
    pub(in crate::server::worker) fn stream_tunnel_ended<S: Streamed>(
        &mut self,
        c: &mut Conn,
        id: u32,
    ) {
        let Some((answers, _)) = S::answers(&mut c.proto) else {
            return;
        };
        let run = answers.iter().find(|a| a.id == id).and_then(|a| a.run);
        let Some(run) = run.and_then(|ex| self.exchanges.run_mut(ex)) else {
            return;
        };
        if run.request.req.field(Field::Upgrade).is_some() {
            if let Some(input) = run.input() {
                input.end();
            }
        }
    }

    /// Whether the request on stream `id` of `c`, which speaks `S`,
    /// has its body read: held (it waits, its body with it), or answered
    /// by a producer that takes it.
    pub(in crate::server::worker) fn stream_reads_body<S: Streamed>(
        &mut self,
        c: &mut Conn,
        id: u32,
    ) -> bool {
        let Some((answers, _)) = S::answers(&mut c.proto) else {
            return false;
        };
        let Some(a) = answers.iter().find(|a| a.id == id) else {
            return false;
        };
        a.wait.is_some()
            || (a.run)
                .and_then(|ex| self.exchanges.run_mut(ex))
                .is_some_and(|run| run.takes_body())
    }

    /// Takes answer `a`'s run out of the exchanges (a program's leaves
    /// the count of `c`'s session, which speaks `S`). The request-body
    /// bytes left in its producer's input are dropped with it: their
    /// flow-control credit goes back.
    pub(in crate::server::worker) fn stream_take_run<S: Streamed>(
        &mut self,
        c: &mut Conn,
        a: &mut Answer<S::Own>,
    ) -> Option<Run> {
        let ex = a.run.take()?;
        if let (true, Some((_, programs))) = (a.program, S::answers(&mut c.proto)) {
            *programs = programs.saturating_sub(1);
        }
        let mut run = self.exchanges.take_run(ex)?;
        let dropped = run.take_uncredited();
        if dropped > 0 {
            S::release(&mut c.proto, a.id, dropped);
        }
        Some(run)
    }

    /// Answers `request`, whose producer failed before its head went, on
    /// stream `id` of `c` with `status`.
    pub(in crate::server::worker) fn stream_answer_error(
        &mut self,
        c: &mut Conn,
        id: u32,
        request: Held,
        status: Status,
    ) {
        let mut r = self.pools.lend_request(self.clock.now);
        r.resume(request);
        // (Run::fail logged why: the answer's line would repeat it.)
        let plan = crate::handlers::Plan::told_error(status, &mut r.scratch);
        self.h2_answer(c, &mut r, id, plan, 0);
        self.pools.take_back_request(r);
    }
}
