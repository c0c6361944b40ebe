//! Programs (CGI) in the event loop: a program's answer is a producer
//! ([`PipeBody`]) that one [`Run`] drives into the sink of the request's
//! protocol (see `produced`), like any produced answer. What is left
//! here is what only a process has: its pipes ([`Run::sources`]) are
//! registered in the worker's epoll next to the sockets, each under a
//! token of its own that names its exchange (its slot in the worker's
//! exchanges) and which pipe it is, so a slow or hung program delays
//! only its own client;
//! they leave the watch before they close. And a program may answer
//! with a local redirect, followed here.

use std::os::fd::{AsRawFd, RawFd};

use mio::unix::SourceFd;
use mio::{Interest, Token};

#[cfg(feature = "http2")]
use super::h2::FAIR_SHARE;
use super::{answering, Request, Worker, PIPE_BASE};
use crate::config::Level;
use crate::handlers::cgi::pipe_body::PipeBody;
use crate::handlers::pipe::Pipe;
use crate::handlers::produce::{Produce, Want};
use crate::handlers::Plan;
use crate::http::body::BodyDecoder;
use crate::http::Status;
use crate::server::conn::Conn;
use crate::server::exchange::{Exchange, Task};
use crate::server::h1;
use crate::server::run::{Outcome, Run};
use crate::server::waits::Held;

/// Most programs (CGI) and upstream requests (the reverse proxy,
/// FastCGI) answering one HTTP/2 connection's streams at once: each holds
/// a process or an upstream connection. A request beyond them for a
/// program or an upstream waits for its turn (`Worker::wait_turn`), as
/// an HTTP/1.1 client's next request waits for the one before, over
/// HTTP/2 with its body held (`Worker::h2_data`); over HTTP/3 one with
/// a body is rejected before anything starts for it
/// (H3_REQUEST_REJECTED: see [`Worker::refuse_stream`]).
pub(super) const H2_PIPES: usize = 16;
/// Local redirects followed for one request before giving up (500).
const MAX_REDIRECTS: u8 = 5;
/// The token of source `i` (input, output, diagnostics) of the program
/// answering the exchange in slot `index` of the worker's exchanges.
pub(super) fn token_at(index: usize, i: usize) -> Token {
    Token(PIPE_BASE + index * 3 + i)
}

/// Maps a pipe token back to its exchange's slot and its source.
pub(super) fn split_token(t: usize) -> (usize, usize) {
    let n = t - PIPE_BASE;
    (n / 3, n % 3)
}

/// Why a stream found no room, for the log line.
#[derive(Clone, Copy)]
pub(super) enum NoRoom<'a> {
    /// Its program or upstream request (which this names): the
    /// connection runs [`H2_PIPES`] already.
    Programs(&'a dyn std::fmt::Display),
    /// The worker's streams have `budget` answers under way, and this
    /// client's connection its fair share (see `Worker::crowded`).
    #[cfg(feature = "http2")]
    Crowded {
        /// The client.
        client: std::net::IpAddr,
        /// The worker's `stream_budget`.
        budget: usize,
    },
}

/// Whether `c` may start no more programs or upstream requests for its
/// streams: [`H2_PIPES`] answer its HTTP/2 or HTTP/3 connection already.
/// (Never an HTTP/1.1 connection: its one exchange at a time.)
pub(super) fn programs_full(c: &Conn) -> bool {
    #[cfg(feature = "http2")]
    if let Some(s) = c.h2() {
        return !room_in(s);
    }
    #[cfg(feature = "http3")]
    if let Some(s) = c.h3() {
        return s.programs as usize >= H2_PIPES;
    }
    let _ = c;
    false
}

/// Whether one more program may answer a stream of session `s`.
#[cfg(feature = "http2")]
pub(super) fn room_in(s: &crate::server::h2::Session) -> bool {
    s.programs() < H2_PIPES
}

/// Takes the sources `run` is done with out of `registry`'s watch, and
/// lets them close.
pub(super) fn retire(registry: &mio::Registry, run: &mut Run) {
    while let Some(fd) = run.retired() {
        unwatch(registry, fd.as_raw_fd());
    }
}

/// Takes every source of `run` out of `registry`'s watch (see
/// [`Worker::unwatch_run`]).
pub(super) fn unwatch_all(registry: &mio::Registry, run: &mut Run) {
    retire(registry, run);
    for (fd, _) in run.sources().into_iter().flatten() {
        unwatch(registry, fd);
    }
}

/// Takes the sources `run` (the answer of the exchange in slot `index`)
/// is done with out of `registry`'s watch, and watches the one that
/// replaced them, if any (an upstream's new connection): `outcome`, the
/// pump's, is then progress (the new connection's timer starts).
pub(super) fn rewatch(
    registry: &mio::Registry,
    run: &mut Run,
    index: usize,
    outcome: Outcome,
) -> Outcome {
    retire(registry, run);
    let Some((fd, want)) = run.renewed() else {
        return outcome;
    };
    // (Should it fail, the answer times out as any silent one.)
    let token = token_at(index, 0);
    if registry
        .register(&mut SourceFd(&fd), token, interest(want))
        .is_ok()
    {
        if let Some(slot) = run.watch_slot() {
            *slot = Some(token.0);
        }
    }
    match outcome {
        Outcome::Idle | Outcome::Waits => Outcome::Moved,
        outcome => outcome,
    }
}

/// Registers the sources of `run`, the program answering the exchange
/// in slot `index`. A kept upstream connection still in the watch
/// from its last answer ([`Run::watch_slot`]) costs nothing when its
/// token is this one (the pool and the exchanges' slots both give
/// the last freed first, so it often is), one change of its token
/// otherwise.
fn watch(reg: &mio::Registry, run: &mut Run, index: usize) -> std::io::Result<()> {
    for (i, source) in run.sources().into_iter().enumerate() {
        let Some((fd, want)) = source else { continue };
        let (token, interest) = (token_at(index, i), interest(want));
        let was = match run.watch_slot().filter(|_| i == 0) {
            Some(slot) => slot.replace(token.0),
            None => None,
        };
        match was {
            Some(t) if t == token.0 => continue,
            Some(_) => reg.reregister(&mut SourceFd(&fd), token, interest)?,
            None => match reg.register(&mut SourceFd(&fd), token, interest) {
                // (A kept connection watched still, whose token was
                // not kept: watched anew, under this token.)
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    reg.reregister(&mut SourceFd(&fd), token, interest)?
                }
                other => other?,
            },
        }
    }
    Ok(())
}

/// What epoll waits for on a source that wants `want`.
pub(super) fn interest(want: Want) -> Interest {
    match want {
        Want::Read => Interest::READABLE,
        Want::Write => Interest::WRITABLE,
        Want::Both => Interest::READABLE | Interest::WRITABLE,
    }
}

/// Takes source `fd` out of the watch (it closes next).
fn unwatch(registry: &mio::Registry, fd: RawFd) {
    // (It fails only for a pipe not registered; closing it, as the
    // drop does next, takes it out of epoll anyway.)
    let _ = registry.deregister(&mut SourceFd(&fd));
}

impl Worker {
    /// Starts the program `pipe` answering request `r` on `c`:
    /// its HTTP/1.1 exchange (`stream` none; the request body, read by
    /// `decoder`, goes to its input, and the decoder is taken) or HTTP/2
    /// stream `stream`. `redirects` local redirects led to it. The error
    /// to answer instead when it cannot be watched, or when
    /// [`H2_PIPES`] programs answer the connection already (503); the
    /// program is stopped then.
    pub(super) fn start_pipe(
        &mut self,
        c: &mut Conn,
        r: &mut Request,
        stream: Option<u32>,
        pipe: Pipe,
        redirects: u8,
        decoder: &mut Option<BodyDecoder>,
    ) -> Result<(), Plan> {
        let body = PipeBody::new(pipe, self.settings.cfg.limits.max_header_bytes);
        self.start_watched(c, r, stream, Box::new(body), redirects, decoder)
    }

    /// Starts `body`, a producer whose sources the worker watches (a
    /// program's pipes, an upstream's socket), answering request `r` on
    /// `c` as [`Worker::start_pipe`] says.
    pub(super) fn start_watched(
        &mut self,
        c: &mut Conn,
        r: &mut Request,
        stream: Option<u32>,
        mut body: Box<dyn Produce>,
        redirects: u8,
        decoder: &mut Option<BodyDecoder>,
    ) -> Result<(), Plan> {
        if let Err(full) = self.room_for(c, stream, &*body, r) {
            body.stop();
            return Err(full);
        }
        // (Made in its exchange's slot, not moved there: a run is a few
        // hundred bytes. Its sources are watched under the slot's tokens.)
        let ex = self.exchanges.insert(Exchange {
            conn: c.index,
            stream,
            task: Task::Run(Run::new(body, r.hold(redirects)).rules_at_head()),
        });
        self.pools.refill_held(r);
        let watched = match self.exchanges.run_mut(ex) {
            Some(run) => watch(self.poll.registry(), run, ex.index()),
            None => Ok(()),
        };
        if let Err(e) = watched {
            if let Some(mut run) = self.exchanges.take_run(ex) {
                self.logger.log(
                    Level::Error,
                    format_args!("{}: cannot watch its sources: {e}", run.label()),
                );
                run.stop(&mut self.logger);
                self.unwatch_run(&mut run);
                r.resume(run.request);
            }
            return Err(Plan::told_error(
                Status::INTERNAL_SERVER_ERROR,
                &mut r.scratch,
            ));
        }
        self.start_run(c, stream, ex, decoder.take(), true, &r.scratch.path);
        Ok(())
    }

    /// The token the next exchange's first source will be watched under
    /// (its slot is the vacant one): a kept upstream connection still
    /// watched under it is taken first, its watch unchanged.
    #[cfg(feature = "upstreams")]
    pub(super) fn next_watch_token(&self) -> usize {
        token_at(self.exchanges.vacant(), 0).0
    }

    /// Whether one more program or upstream request may answer `stream`
    /// of `c` (none: an HTTP/1.1 exchange, always): not once [`H2_PIPES`]
    /// answer its HTTP/2 or HTTP/3 connection (see [`programs_full`]);
    /// then the 503 to answer, logged with `label` (which names the
    /// program or the upstream).
    pub(super) fn room_for(
        &mut self,
        c: &Conn,
        stream: Option<u32>,
        body: &dyn Produce,
        r: &mut Request,
    ) -> Result<(), Plan> {
        if stream.is_none() || !programs_full(c) {
            return Ok(());
        }
        // (Asked only here: a proxied request's label is made when first
        // asked.)
        Err(self.no_room_503(c, &body.label(), r))
    }

    /// The 503 for request `r`, which found no room for its program or
    /// upstream request (`label` names it), logged as
    /// [`Worker::refuse_stream`] says.
    pub(super) fn no_room_503(
        &mut self,
        c: &Conn,
        label: &dyn std::fmt::Display,
        r: &mut Request,
    ) -> Plan {
        let proto = if c.speaks_h3() { "HTTP/3" } else { "HTTP/2" };
        self.log_no_room(NoRoom::Programs(label), proto, format_args!("503"));
        Plan::told_error(Status::SERVICE_UNAVAILABLE, &mut r.scratch)
    }

    /// Refuses stream `id` of `c`, which found no room for one more
    /// program or upstream request ([`programs_full`]), before anything
    /// started for it: over HTTP/2, RST_STREAM REFUSED_STREAM, which
    /// tells the client that nothing of it was processed, so that it may
    /// send it again (RFC 9113 §8.7; browsers and curl do). Such a
    /// refusal counts toward `http2.max_resets` as the client's own
    /// resets do: a client that keeps sending streams beyond the room
    /// ends with GOAWAY ENHANCE_YOUR_CALM, not a flood of refusals.
    /// Over HTTP/3 the same with H3_REQUEST_REJECTED (RFC 9114 §4.1.1:
    /// the request was not processed, the client may retry it; §8.1),
    /// counted with the resets the connection made us make (`faults`).
    /// Logged with `label` at `warn`, within the worker's budget of
    /// refusals' lines. Whether it was refused so (false: an HTTP/1.1
    /// exchange, whose caller answers 503: [`Worker::room_for`]).
    pub(super) fn refuse_stream(&mut self, c: &mut Conn, id: u32, why: NoRoom<'_>) -> bool {
        #[cfg(feature = "http3")]
        if self.h3_reject(c, id) {
            let what = "rejected (H3_REQUEST_REJECTED: the client may send it again)";
            self.log_no_room(why, "HTTP/3", format_args!("stream {id} {what}"));
            return true;
        }
        #[cfg(feature = "http2")]
        if let Some(s) = c.proto.h2_mut() {
            s.conn.refuse(id, self.clock.now);
            // (A request held on it before, for a password check or its
            // turn, is let go of, unlogged: the client may send it again.)
            if let Some(mut a) = s.take(id) {
                self.let_go(c, id, a.wait.take());
                self.h2_forget(c, a);
            }
            let what = "refused (REFUSED_STREAM: the client may send it again)";
            self.log_no_room(why, "HTTP/2", format_args!("stream {id} {what}"));
            return true;
        }
        let _ = (c, id, why);
        false
    }

    /// Logs that a stream of a `proto` connection found no room (`why`)
    /// and `what` became of it, within the worker's budget of refusals'
    /// lines (a client that opens a hundred streams at once is not a
    /// hundred lines).
    pub(super) fn log_no_room(
        &mut self,
        why: NoRoom<'_>,
        proto: &str,
        what: std::fmt::Arguments<'_>,
    ) {
        self.report_refusals_not_logged();
        if !self.logger.enabled(Level::Warn) || !self.counts.refusals.allow(self.clock.now) {
            return;
        }
        match why {
            NoRoom::Programs(label) => self.logger.log(
                Level::Warn,
                format_args!(
                    "{label}: {H2_PIPES} programs and upstream requests already answer this \
                     {proto} connection; {what}"
                ),
            ),
            #[cfg(feature = "http2")]
            NoRoom::Crowded { client, budget } => self.logger.log(
                Level::Warn,
                format_args!(
                    "client {client}: {FAIR_SHARE} or more streams of this {proto} connection \
                     are answered while the worker's connections have {budget} under way (half \
                     the open-file limit, shared among the workers); {what}"
                ),
            ),
        }
    }

    /// Takes every source of `run` out of the watch (it is dropped next,
    /// which closes them). (A kept upstream connection is no longer
    /// among them: its pool has it, watched.)
    pub(super) fn unwatch_run(&self, run: &mut Run) {
        unwatch_all(self.poll.registry(), run);
    }

    /// A local redirect (a CGI `Location: /path` with no body, RFC 3875
    /// §6.2.2) of the program that answered `request` on `c`'s HTTP/1.1
    /// exchange (`stream` none) or HTTP/2 stream: the server answers as
    /// if that had been requested, with GET (its program was stopped).
    /// The original request is not logged; the redirected one is (both
    /// in the request buffers lent for it).
    pub(super) fn local_redirect(
        &mut self,
        c: &mut Conn,
        stream: Option<u32>,
        request: Held,
        target: &[u8],
    ) {
        // The new request: the redirected target with the original
        // header lines (but no body: the method becomes GET).
        let redirected = request.req.redirected(target, &self.settings.limits);
        // (Other connections' requests may have run since it started.)
        let (started, redirects) = (request.started, request.redirects + 1);
        let mut r = self.pools.lend_request(started);
        let failure = match redirected {
            _ if redirects > MAX_REDIRECTS => {
                // (Naming where it went: which script looped.)
                self.logger.log(
                    Level::Error,
                    format_args!(
                        "cgi: too many local redirects (the last to {})",
                        String::from_utf8_lossy(target)
                    ),
                );
                Status::INTERNAL_SERVER_ERROR
            }
            Some(req) => {
                r.req = req;
                match stream {
                    None => self.dispatch(c, &mut r, redirects),
                    #[cfg(feature = "http2")]
                    Some(id) => {
                        if let Some(plan) = self.route(c, &mut r, Some(id), redirects, &mut None) {
                            self.h2_answer(c, &mut r, id, plan, redirects);
                        }
                    }
                    #[cfg(not(feature = "http2"))]
                    Some(_) => {}
                }
                self.pools.take_back_request(r);
                return;
            }
            None => Status::BAD_GATEWAY,
        };
        r.resume(request);
        r.scratch.clear();
        let plan = Plan::error(failure, &mut r.scratch);
        match stream {
            None => {
                let cx = answering(
                    &self.settings,
                    &self.clock,
                    self.drain.mode,
                    (&self.listen, &c.transport),
                );
                h1::Conn::fail(&mut c.life, plan, &r.scratch, false, &mut c.out, &cx);
            }
            #[cfg(feature = "http2")]
            Some(id) => self.h2_answer(c, &mut r, id, plan, redirects),
            #[cfg(not(feature = "http2"))]
            Some(_) => {}
        }
        self.pools.take_back_request(r);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(feature = "http2")]
    #[test]
    fn at_most_sixteen_programs_answer_one_http2_connection() {
        use crate::server::h2::Session;
        let limits = std::sync::Arc::new(crate::h2::Limits::default());
        let mut s = Session::new(limits, std::time::Instant::now());
        assert_eq!(H2_PIPES, 16);
        for _ in 0..H2_PIPES {
            assert!(room_in(&s));
            s.count_program(true);
        }
        assert_eq!(s.programs(), 16);
        assert!(!room_in(&s), "the 17th is answered 503");
        s.count_program(false);
        assert!(room_in(&s), "room again once one ends");
    }

    #[test]
    fn a_token_names_its_exchange_and_pipe() {
        for (index, i) in [(0, 0), (3, 2), (1000, 1)] {
            let Token(t) = token_at(index, i);
            assert!(t >= PIPE_BASE);
            assert_eq!(split_token(t), (index, i));
        }
        // (Neighbouring exchanges' tokens do not meet.)
        assert_eq!(token_at(0, 2).0 + 1, token_at(1, 0).0);
    }
}
