//! The one contract of every answer body that is neither bytes in hand
//! nor a file: an embedded handler's body in pieces or its later
//! answer, a CGI program's output, and (next) proxy and FastCGI
//! upstreams. A producer yields a head, then body pieces, then its end;
//! the engine pulls it, so back-pressure is simply not asking: it calls
//! [`Produce::next`] only while the protocol's side (the sink, in
//! `server::run`) has room for more. It can be stopped at any time (the
//! client went away, the stream was reset, the answer timed out or its
//! body is not wanted), and it never knows which protocol carries it.
//!
//! The model is h2o's generator (a `proceed` the protocol calls when it
//! can take more, a `stop` when it cannot take anything any more),
//! turned into a pull: `next` is `proceed`, and what it gives comes back
//! as its return value ([`Gave`]) instead of a callback.
//!
//! The order of what `next` gives is a contract the engine relies on:
//!
//! ```text
//!   Pending* ─▶ Head ─▶ (Pending | Bytes)* ─▶ End | Last
//!          ├──▶ Head(with a file) (the whole body: nothing follows)
//!          ├──▶ Redirect (instead of a head)
//!          ├──▶ Cut (after the head: what came goes out, then the answer
//!          │         is cut short; before it, as Fail with 502)
//!          └──▶ Fail (before the head: the engine answers its status;
//!                     after it: the answer is cut short)
//! ```
//!
//! A raw producer ([`Produce::raw`]) whose sink takes raw bytes
//! ([`Cx::raw_ok`]) gives `Bytes` from the start, with no `Head`: they
//! are a whole HTTP/1.x response already.
//!
//! A producer that relays a socket's bytes (an upstream's answer) may
//! give body pieces in a pipe instead of bytes ([`Spliced::Pipe`], see
//! [`Produce::splice`]) when the sink takes them as they are: they go
//! out with `splice(2)`, never copied through the server's memory.
//!
//! A body that ends (`End`, `Last`) may end with trailer fields: the
//! engine asks for them once then ([`Produce::trailers`]), and the sink
//! sends them where its protocol can (HTTP/1.1: in the chunked coding's
//! end, dropped from a body framed by its length; HTTP/2: a HEADERS frame
//! that ends the stream).
//!
//! After `End`, `Last`, `Cut`, `Fail`, `Redirect` or a head with a
//! file, the engine does not call `next` again; after `stop`, it calls
//! nothing but `label`, `tend` (once, to log what it still holds),
//! `sources` and `retired`.

use std::cell::Cell;
use std::fmt;
use std::fs::File;
use std::os::fd::{OwnedFd, RawFd};
use std::time::{Duration, Instant};

use super::pipe::ReplyHead;
use crate::http::Status;
use crate::log::Logger;
use crate::sys::splice::Pipe;

thread_local! {
    /// The time of this thread's worker's pass of its event loop ([`now`]).
    static PASS: Cell<Option<Instant>> = const { Cell::new(None) };
}

/// The time of the current pass of this thread's worker's event loop, as
/// the worker read it once for the pass: what a producer times with (when
/// an upstream exchange began and its head came, when a connection went
/// idle), as the worker's timers do, without a clock read of its own
/// (three a proxied or FastCGI request, ~80 ns each here). The clock
/// itself on a thread with no worker.
pub fn now() -> Instant {
    PASS.with(Cell::get).unwrap_or_else(Instant::now)
}

/// Microseconds from `began` to [`now`] (the `upstream_*` times of the
/// access log).
pub fn micros_since(began: Instant) -> u64 {
    let since = now().saturating_duration_since(began);
    u64::try_from(since.as_micros()).unwrap_or(u64::MAX)
}

/// Sets [`now`] for this thread: the worker, as it starts a pass.
pub fn set_pass_time(time: Instant) {
    PASS.with(|pass| pass.set(Some(time)));
}

/// A body produced as the client takes it (see the module documentation).
///
/// Not `Debug` itself: a supertrait would put each producer's `Debug`
/// (and that of everything it holds) in its vtable, kept in the binary
/// though no log line prints it (7 KiB without HTTP/2). A producer is
/// shown by its label ([`fmt::Debug`] for `dyn Produce` below).
pub trait Produce {
    /// Names it in log lines: `handler at /api/`, `cgi /srv/x`.
    fn label(&self) -> &str;

    /// The upstream that answered, once its answer's head came (a
    /// proxied request): the access log's `upstream_*` fields.
    fn upstream(&self) -> Option<crate::log::Upstream<'_>> {
        None
    }

    /// How long it may make no progress before the engine gives it up
    /// (504 before the head, cut short after): a program has its own
    /// limit, an in-process producer takes `handler` (`timeouts.handler`).
    fn idle_timeout(&self, handler: Duration) -> Duration {
        handler
    }

    /// What the error log says (after the label) when it is given up
    /// for its idle timeout.
    fn timeout_why(&self) -> &'static str {
        "no progress for timeouts.handler; given up"
    }

    /// Its idle timeout passed: the status to answer before its head
    /// (504; after the head the answer is cut short), or none when it
    /// goes on otherwise (a request sent to another upstream), its timer
    /// started again. Called before it is given up.
    fn timed_out(&mut self) -> Option<Status> {
        Some(Status::GATEWAY_TIMEOUT)
    }

    /// It is stopped at the head of an answer that has no body (to HEAD,
    /// or a 204 or 304) whatever the protocol: an embedded handler's
    /// body, which never waits (in pieces on the worker thread, or given
    /// by another thread), and which, asked for a body nobody reads,
    /// would hold the worker (for ever, for one that does not end).
    /// Others run to their end over HTTP/1.1, what they give dropped
    /// (an upstream's connection stays reusable after its answer).
    fn stops_at_bodiless_head(&self) -> bool {
        false
    }

    /// It is a process that runs on its own (a CGI program), not code
    /// the engine calls. Two differences follow, kept from before the
    /// producers were one contract: over HTTP/2 its idle timer runs on
    /// while its output waits for the client's window (an in-process
    /// producer's restarts), and a body that is not wanted (HEAD over
    /// HTTP/2) is read and dropped until it ends, not stopped at the head.
    fn is_process(&self) -> bool {
        false
    }

    /// What it has now (h2o's `proceed`). Body bytes, about `room` of
    /// them (the engine asks again while it has room), go into `buf`,
    /// which the engine lends: it is empty when lent, and the engine
    /// reads it before the next call. A producer that has its bytes in a
    /// vector of its own (a later answer's thread) may swap it in.
    fn next(&mut self, room: usize, buf: &mut Vec<u8>, cx: &mut Cx<'_>) -> Gave;

    /// As [`Produce::next`], asked first (after the head) while the
    /// body's bytes may go out as they are, in a pipe: the sink takes
    /// pipes (plain HTTP/1.1) and the answer is not compressed. None: it
    /// has none to give that way now (the engine calls `next`). Most
    /// producers have none.
    fn splice(&mut self, room: usize) -> Option<Spliced> {
        let _ = room;
        None
    }

    /// The answer is not wanted any more: the client is gone, the stream
    /// was reset, it timed out, or its body will not be sent (a HEAD
    /// request over HTTP/2). A process is killed, a thread is told.
    /// Calling it twice does nothing more.
    fn stop(&mut self);

    /// The body ended ([`Gave::End`], [`Gave::Last`]): its trailer
    /// fields, as field lines (`Name: value` CRLF each), those a trailer
    /// may hold only (see [`crate::http::trailers`]); none for most.
    /// Asked once, after the end.
    fn trailers(&mut self) -> Option<Vec<u8>> {
        None
    }

    /// The event sources the engine watches for it, under its tokens: a
    /// process's output, diagnostics and input. None for a producer in
    /// this process (a later answer's thread wakes the worker itself).
    fn sources(&self) -> [Option<(RawFd, Want)>; 3] {
        [None; 3]
    }

    /// Source `i` of [`Produce::sources`] is ready.
    fn ready(&mut self, i: usize) {
        let _ = i;
    }

    /// Source `i` is ready to be read (`read`: bytes, its end, or an
    /// error came) or written (`write`: room came): for a source watched
    /// both ways ([`Want::Both`]), so that room for a request already
    /// sent does not make it read a socket with nothing to read.
    fn ready_for(&mut self, i: usize, read: bool, write: bool) {
        let _ = (read, write);
        self.ready(i);
    }

    /// Its source 0 is a new descriptor since it was last asked (an
    /// upstream's socket replaced after a failed attempt; the old one
    /// comes out through [`Produce::retired`]): the engine watches it in
    /// its place, for what it wants.
    fn renewed(&mut self) -> Option<(RawFd, Want)> {
        None
    }

    /// Where it keeps the token its source 0 is watched under, for a
    /// producer whose socket stays in the watch between answers (a kept
    /// upstream connection, which the producer gives to its pool, still
    /// watched, once its answer ended: no longer among its sources, the
    /// engine leaves it in the watch): the engine watches it again only
    /// when the token changes, and writes the new one there. An event
    /// for that token while it rests in the pool wakes whatever answer
    /// has the token then, which finds nothing to do. None for the
    /// others (watched anew each time).
    fn watch_slot(&mut self) -> Option<&mut Option<usize>> {
        None
    }

    /// A source it is done with (no longer among its
    /// [`Produce::sources`]), still open: the engine takes it out of its
    /// watch, then closes it by dropping it (a descriptor closed while
    /// watched could stay in the watch through a copy a child holds).
    fn retired(&mut self) -> Option<OwnedFd> {
        None
    }

    /// Work that needs no room in the sink, done before each round of
    /// [`Produce::next`], also while the client is slow: a program's
    /// diagnostics go to the log, so that it never blocks on them. Also
    /// called once after [`Produce::stop`]: what it still holds for the
    /// log (a diagnostics line without its end) is logged then.
    fn tend(&mut self, cx: &mut Cx<'_>) {
        let _ = cx;
    }

    /// Its sources were ready and the engine, given its turn, asked for
    /// nothing more (the client is slower than it), or (`tick`) a second
    /// went by: a producer that relays another server's answer may read
    /// it on ahead of the client now, held for it, so that the server is
    /// free (FastCGI's `buffer_answer`). Most do nothing.
    fn hold_ahead(&mut self, cx: &mut Cx<'_>, tick: bool) {
        let _ = (cx, tick);
    }

    /// The request body's way in, for a producer that reads one (a CGI
    /// program); none for the others (their body was read before).
    fn input(&mut self) -> Option<&mut dyn Input> {
        None
    }

    /// Its output is a whole HTTP/1.x response (an `nph-` program): a
    /// sink that takes raw bytes passes them as they come.
    fn raw(&self) -> bool {
        false
    }

    /// It has written all of the request body that came and waits for
    /// more: while the client sends none, the client is the one who is
    /// slow (`timeouts.body` applies, and answers 408), not the producer.
    fn awaits_input(&self) -> bool {
        false
    }

    /// A smaller producer to go on in its place, asked each time it
    /// waits (an upstream's answer that became a byte tunnel keeps only
    /// what a tunnel needs: an idle tunnel costs little). It takes over
    /// the sources as they are watched, and the answer where it is.
    fn successor(&mut self) -> Option<Box<dyn Produce>> {
        None
    }

    /// The fields of the head it gave ([`ReplyHead::headers`]), once the
    /// sink wrote them: a producer that keeps buffers for the next
    /// answers takes the buffer back. Most let it drop.
    #[cfg(feature = "upstreams")]
    fn head_written(&mut self, headers: Vec<u8>) {
        let _ = headers;
    }

    /// The engine is done with it: it is dropped, by most; one made
    /// once a request and kept in a box of its worker's (an upstream's
    /// answer) drops its value and keeps the box for the next
    /// ([`crate::sys::boxes`]).
    #[cfg(feature = "upstreams")]
    fn recycle(self: Box<Self>) {}
}

/// A producer that holds nothing: what a run holds once its own was
/// taken out ([`Produce::recycle`], a tunnel's). A box of it is no
/// allocation.
#[cfg(feature = "upstreams")]
pub struct Gone;

#[cfg(feature = "upstreams")]
impl Produce for Gone {
    fn label(&self) -> &str {
        "gone"
    }

    fn next(&mut self, _room: usize, _buf: &mut Vec<u8>, _cx: &mut Cx<'_>) -> Gave {
        Gave::End
    }

    fn stop(&mut self) {}
}

impl fmt::Debug for dyn Produce + '_ {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Produce").field(&self.label()).finish()
    }
}

/// What [`Produce::next`] gave.
#[derive(Debug)]
pub enum Gave {
    /// Nothing until a wake-up: a source's readiness, a later answer's
    /// thread, a timer.
    Pending,
    /// The head (once, first). With a file, the whole body is that file
    /// (from its start, this long): it goes as static files do, never
    /// compressed, and nothing follows.
    Head(ReplyHead, Option<(File, u64)>),
    /// An interim answer before the head (an upstream's `103 Early
    /// Hints`): its status and fields go to the client as they are, and
    /// the head follows.
    Interim(ReplyHead),
    /// Body bytes, in the buffer lent to `next`.
    Bytes,
    /// The last body bytes, in the buffer lent to `next`: the body is
    /// complete ([`Gave::Bytes`] and [`Gave::End`] in one, so that its end
    /// does not wait for room the client has not made yet).
    Last,
    /// The body is complete.
    End,
    /// The body cannot be complete (the text says why, for the error
    /// log): what it gave goes out, then the answer is cut short. Before
    /// the head, the client is answered 502.
    Cut(String),
    /// Answer as if this path had been asked for, with GET, instead of
    /// a head (a CGI local redirect, RFC 3875 §6.2.2).
    Redirect(Vec<u8>),
    /// It failed: before the head, the client is answered this status;
    /// after it, the answer is cut short. The text is for the error log.
    Fail(Status, String),
}

/// What [`Produce::splice`] gave.
#[derive(Debug)]
pub enum Spliced {
    /// Body bytes in a pipe; with `true`, the last ones (as [`Gave::Last`]).
    Pipe(Pipe, bool),
    /// Anything else, as [`Produce::next`] gives it (its end, a cut,
    /// `Pending`).
    Gave(Gave),
}

/// What a producer's event source waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Want {
    /// Something to read.
    Read,
    /// Room to write.
    Write,
    /// Either: one descriptor read and written (an upstream's socket),
    /// watched once for both (epoll cannot hold one descriptor twice).
    Both,
}

/// What a producer may use while it gives.
pub struct Cx<'a> {
    /// The error log (a program's diagnostics, lines about the body).
    pub log: &'a mut Logger,
    /// The sink passes a raw reply's bytes as they come
    /// ([`Produce::raw`]); else the producer parses the head out of them.
    pub raw_ok: bool,
}

/// A request body on its way into a producer (a CGI program's input):
/// the engine feeds it what arrives while it has room, and writes it
/// when the input is ready.
pub trait Input {
    /// How many more bytes it takes now (any number once it is closed:
    /// the rest is dropped).
    fn room(&self) -> usize;
    /// Takes body bytes (dropped once it is closed).
    fn feed(&mut self, data: &[u8]);
    /// Writes what waits while the input takes it. Returns what went in
    /// (see [`Wrote`]), or why the input closed.
    fn write(&mut self) -> Result<Wrote, InputEnd>;
    /// The body is complete: the input closes once what waits is written.
    fn end(&mut self);
    /// As [`Input::end`], the body ending with these trailer fields
    /// (field lines that may pass, see [`crate::http::trailers`]; empty:
    /// none): an input that can pass them on (an upstream's, in a chunked
    /// request body) writes them; the others drop them.
    fn end_with(&mut self, trailers: &[u8]) {
        let _ = trailers;
        self.end();
    }
    /// Closes it now; what waits is dropped.
    fn close(&mut self);
    /// Whether it is closed.
    fn is_closed(&self) -> bool;
    /// It is fed from a body held whole (whose credit went back as it
    /// arrived), not from frames still coming.
    fn held(&self) -> bool;
}

/// What one [`Input::write`] wrote.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Wrote {
    /// Bytes went in (progress, whatever their source).
    pub moved: bool,
    /// How many of them were the client's (HTTP/2 gives their window
    /// credit back; none from a body held whole, whose credit went back
    /// as it arrived).
    pub client: usize,
}

/// Why an [`Input`] closed before the body was all written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InputEnd {
    /// The producer stopped reading (a program that closed its input,
    /// EPIPE): the rest of the body is dropped.
    Refused,
    /// The body held whole in a temporary file could not be read back
    /// (the reason): the answer fails.
    Unreadable(String),
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    /// On a thread with no worker, the clock; once a worker set its
    /// pass's time, that time, however long the pass, and the
    /// microseconds from it.
    #[test]
    fn the_time_is_the_passs_once_a_worker_set_it() {
        std::thread::spawn(|| {
            let before = Instant::now();
            let read = super::now();
            assert!(read >= before && read <= Instant::now());
            let pass = before + Duration::from_millis(5);
            super::set_pass_time(pass);
            std::thread::sleep(Duration::from_millis(10));
            assert_eq!(super::now(), pass);
            assert_eq!(super::micros_since(before), 5_000);
            // (A start after the pass's time counts none.)
            assert_eq!(super::micros_since(pass + Duration::from_secs(1)), 0);
        })
        .join()
        .unwrap();
    }
}
