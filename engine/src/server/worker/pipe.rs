//! Programs (CGI) in the event loop: a program's answer is a producer
//! ([`PipeBody`]) that one [`Run`] drives into the sink of the request's
//! protocol (see `produced`), like any produced answer. What is left
//! here is what only a process has: its pipes ([`Run::sources`]) are
//! registered in the worker's epoll next to the sockets, each under a
//! token of its own that names its connection, its slot (0: the
//! HTTP/1.1 answer; 1 to [`H2_PIPES`]: an HTTP/2 stream's) and which
//! pipe it is, so a slow or hung program delays only its own client;
//! they leave the watch before they close. And a program may answer
//! with a local redirect, followed here.

use std::os::fd::{AsRawFd, RawFd};

use mio::unix::SourceFd;
use mio::{Interest, Token};

use super::{answering, Worker, PIPE_BASE};
use crate::config::Level;
use crate::handlers::cgi::pipe_body::PipeBody;
use crate::handlers::pipe::Pipe;
use crate::handlers::produce::Want;
use crate::handlers::Plan;
use crate::http::body::BodyDecoder;
use crate::http::Status;
use crate::server::conn::Conn;
use crate::server::exchange::Exchanges;
use crate::server::run::Run;
use crate::server::waits::Held;

/// Most programs answering one HTTP/2 connection's streams at once (a
/// stream beyond them is answered 503).
const H2_PIPES: usize = 16;
/// Local redirects followed for one request before giving up (500).
const MAX_REDIRECTS: u8 = 5;
/// Pipe slots per connection: 0 for an HTTP/1.1 answer, the others for
/// HTTP/2 streams.
const SLOTS: usize = 1 + H2_PIPES;

/// The token of source `i` (input, output, diagnostics) of the program
/// in `slot` of connection `conn`.
fn token_at(conn: usize, slot: usize, i: usize) -> Token {
    Token(PIPE_BASE + (conn * SLOTS + slot) * 3 + i)
}

/// Maps a pipe token back to its connection, slot and source.
pub(super) fn split_token(t: usize) -> (usize, usize, usize) {
    let n = t - PIPE_BASE;
    let process = n / 3;
    (process / SLOTS, process % SLOTS, n % 3)
}

/// A slot of `c`'s for a program answering one of its HTTP/2 streams,
/// if one is free.
fn free_slot(c: &Conn) -> Option<usize> {
    #[cfg(feature = "http2")]
    if let Some(s) = c.h2.as_ref() {
        return first_free(|k| s.answers.iter().any(|a| a.run.is_some() && a.slot == k));
    }
    let _ = c;
    None
}

/// The first HTTP/2 slot (1 to [`H2_PIPES`]) not `taken`: none once
/// [`H2_PIPES`] programs answer the connection (its next stream is
/// answered 503).
#[cfg_attr(not(feature = "http2"), allow(dead_code))]
fn first_free(taken: impl Fn(usize) -> bool) -> Option<usize> {
    (1..=H2_PIPES).find(|k| !taken(*k))
}

/// Takes the sources `run` is done with out of `registry`'s watch, and
/// lets them close.
pub(super) fn retire(registry: &mio::Registry, run: &mut Run) {
    while let Some(fd) = run.retired() {
        unwatch(registry, fd.as_raw_fd());
    }
}

/// Takes source `fd` out of the watch (it closes next).
fn unwatch(registry: &mio::Registry, fd: RawFd) {
    // (It fails only for a pipe not registered; closing it, as the
    // drop does next, takes it out of epoll anyway.)
    let _ = registry.deregister(&mut SourceFd(&fd));
}

impl Worker {
    /// Starts the program `pipe` answering the current request on `c`:
    /// its HTTP/1.1 exchange (`stream` none; the request body, read by
    /// `decoder`, goes to its input, and the decoder is taken) or HTTP/2
    /// stream `stream`. `redirects` local redirects led to it. The error
    /// to answer instead when it cannot be watched, or when
    /// [`H2_PIPES`] programs answer the connection already (503); the
    /// program is stopped then.
    pub(super) fn start_pipe(
        &mut self,
        c: &mut Conn,
        stream: Option<u32>,
        pipe: Pipe,
        redirects: u8,
        decoder: &mut Option<BodyDecoder>,
    ) -> Result<(), Plan> {
        let mut body = PipeBody::new(pipe, self.settings.cfg.limits.max_header_bytes);
        let slot = match stream {
            None => Some(0),
            Some(_) => free_slot(c),
        };
        let Some(slot) = slot else {
            crate::handlers::produce::Produce::stop(&mut body);
            self.logger.log(
                Level::Warn,
                format_args!(
                    "{}: {H2_PIPES} programs already answer this HTTP/2 connection; 503",
                    crate::handlers::produce::Produce::label(&body)
                ),
            );
            return Err(Plan::error(
                Status::SERVICE_UNAVAILABLE,
                &mut self.current.scratch,
            ));
        };
        let run = Run::new(Box::new(body), self.hold(redirects)).rules_at_head();
        let mut run = Box::new(run);
        if let Err(e) = self.watch(&run, c.index, slot) {
            self.logger.log(
                Level::Error,
                format_args!("{}: cannot watch pipes: {e}", run.label()),
            );
            run.stop(&mut self.logger);
            self.unwatch_run(&mut run);
            self.resume(run.request);
            return Err(Plan::error(
                Status::INTERNAL_SERVER_ERROR,
                &mut self.current.scratch,
            ));
        }
        self.start_run(c, stream, run, decoder.take(), slot);
        Ok(())
    }

    /// Registers the sources of `run`, the program in `slot` of
    /// connection `conn`.
    fn watch(&self, run: &Run, conn: usize, slot: usize) -> std::io::Result<()> {
        let reg = self.poll.registry();
        for (i, source) in run.sources().into_iter().enumerate() {
            let Some((fd, want)) = source else { continue };
            let interest = match want {
                Want::Read => Interest::READABLE,
                Want::Write => Interest::WRITABLE,
            };
            reg.register(&mut SourceFd(&fd), token_at(conn, slot, i), interest)?;
        }
        Ok(())
    }

    /// Takes the sources `run` is done with out of the watch, and lets
    /// them close.
    pub(super) fn unwatch_retired(&self, run: &mut Run) {
        retire(self.poll.registry(), run);
    }

    /// Takes every source of `run` out of the watch (it is dropped next,
    /// which closes them).
    pub(super) fn unwatch_run(&self, run: &mut Run) {
        self.unwatch_retired(run);
        for (fd, _) in run.sources().into_iter().flatten() {
            unwatch(self.poll.registry(), fd);
        }
    }

    /// Records readiness of source `i` of the program in `slot` of `c`.
    pub(super) fn pipe_ready(c: &mut Conn, exchanges: &mut Exchanges, slot: usize, i: usize) {
        if slot == 0 {
            if let Some(run) = c.h1.run_ex().and_then(|id| exchanges.run_mut(id)) {
                run.ready(i);
            }
        } else {
            Self::h2_pipe_ready(c, exchanges, slot, i);
        }
    }

    /// Records readiness of source `i` of the program answering an
    /// HTTP/2 stream of `c` in `slot`.
    fn h2_pipe_ready(c: &mut Conn, exchanges: &mut Exchanges, slot: usize, i: usize) {
        #[cfg(feature = "http2")]
        if let Some(s) = c.h2.as_mut() {
            let ex = s
                .answers
                .iter()
                .filter(|a| a.slot == slot)
                .find_map(|a| a.run);
            if let Some(run) = ex.and_then(|ex| exchanges.run_mut(ex)) {
                run.ready(i);
            }
        }
        #[cfg(not(feature = "http2"))]
        let _ = (c, exchanges, slot, i);
    }

    /// A local redirect (a CGI `Location: /path` with no body, RFC 3875
    /// §6.2.2) of the program that answered `request` on `c`'s HTTP/1.1
    /// exchange (`stream` none) or HTTP/2 stream: the server answers as
    /// if that had been requested, with GET (its program was stopped).
    /// The original request is not logged; the redirected one is.
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
        let failure = match redirected {
            _ if redirects > MAX_REDIRECTS => {
                self.logger
                    .log(Level::Error, format_args!("cgi: too many local redirects"));
                Status::INTERNAL_SERVER_ERROR
            }
            Some(req) => {
                self.current.req = req;
                self.current.start = started;
                match stream {
                    None => self.dispatch(c, redirects),
                    #[cfg(feature = "http2")]
                    Some(id) => {
                        if let Some(plan) = self.route(c, Some(id), redirects, &mut None) {
                            self.h2_answer(c, id, plan, redirects);
                        }
                    }
                    #[cfg(not(feature = "http2"))]
                    Some(_) => {}
                }
                return;
            }
            None => Status::BAD_GATEWAY,
        };
        self.resume(request);
        self.current.scratch.clear();
        let plan = Plan::error(failure, &mut self.current.scratch);
        match stream {
            None => {
                let cx = answering(&self.settings, &self.clock, self.drain.mode);
                c.h1.fail(plan, &self.current.scratch, false, &mut c.out, &cx);
            }
            #[cfg(feature = "http2")]
            Some(id) => self.h2_answer(c, id, plan, redirects),
            #[cfg(not(feature = "http2"))]
            Some(_) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn at_most_sixteen_programs_answer_one_http2_connection() {
        assert_eq!(first_free(|_| false), Some(1));
        assert_eq!(first_free(|k| k != 7), Some(7));
        assert_eq!(first_free(|k| k <= H2_PIPES), None);
        assert_eq!(H2_PIPES, 16);
    }

    #[test]
    fn a_token_names_its_connection_slot_and_pipe() {
        for (conn, slot, i) in [(0, 0, 0), (3, 16, 2), (1000, 5, 1)] {
            let Token(t) = token_at(conn, slot, i);
            assert!(t >= PIPE_BASE);
            assert_eq!(split_token(t), (conn, slot, i));
        }
        // (Slots of neighbouring connections do not meet.)
        assert_ne!(token_at(0, 16, 2), token_at(1, 0, 0));
        assert_eq!(token_at(0, 16, 2).0 + 1, token_at(1, 0, 0).0);
    }
}
