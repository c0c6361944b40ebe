//! One produced answer on its way ([`Run`]), and where it goes ([`Sink`]).
//!
//! A [`Produce`]r gives a head, then body pieces; a [`Run`] pulls it
//! while the protocol's [`Sink`] has room, decides the answer's streamed
//! compression once, at the head, and ends it: complete, cut short, or
//! given back to the worker to be answered otherwise (a failure before
//! the head, a local redirect). It is written once for every protocol;
//! each protocol implements one sink (HTTP/1.1: `h1::sink`, framing on
//! the connection's output; HTTP/2: `h2::sink`, HEADERS and DATA within
//! the windows), and a third protocol would add one sink and nothing else.

use std::fs::File;
use std::os::fd::{OwnedFd, RawFd};
use std::time::Duration;

use super::waits::Held;
use crate::config::{CompressConfig, Level};
use crate::handlers::compress::Squeeze;
use crate::handlers::pipe::ReplyHead;
#[cfg(feature = "upstreams")]
use crate::handlers::produce::Gone;
use crate::handlers::produce::{Cx, Gave, Input, InputEnd, Produce, Spliced, Want};
use crate::http::request::{Field, OwnedRequest};
use crate::http::{Method, Status};
use crate::log::Logger;
use crate::sys::splice::Pipe;

/// Where a produced answer goes: one implementation per protocol.
pub trait Sink {
    /// How many more body bytes it takes before the producer is asked
    /// again (0: the client must read first).
    fn room(&self) -> usize;
    /// Sends the head (after compression was decided). Returns whether
    /// a body may follow.
    fn head(&mut self, head: &ReplyHead) -> Wanted;
    /// Body bytes, as they go out (compressed when the answer is).
    /// False: it took only part of them and takes no more (more than the
    /// head's length came); the answer ends there (whole, and logged).
    fn data(&mut self, bytes: &[u8]) -> bool;
    /// The whole body, as this file from its start (after the head;
    /// never compressed).
    fn file(&mut self, file: File, len: u64);
    /// Whether it takes body bytes in a pipe now ([`Sink::pipe`]), to go
    /// out by `splice`: only a plain connection can, and only a framing
    /// that passes the bytes as they are.
    fn takes_pipes(&self) -> bool {
        false
    }
    /// Body bytes in a pipe (never compressed), when it takes them
    /// ([`Sink::takes_pipes`]). False as for [`Sink::data`]: more came
    /// than the head's length (the pipe is dropped, the answer cut).
    fn pipe(&mut self, _pipe: Pipe) -> bool {
        false
    }
    /// The body is complete: frames its end, with the producer's
    /// `trailers` (field lines; empty: none) where the protocol can carry
    /// them. Returns how many bytes the head's length promised and did
    /// not get (the answer is then cut).
    fn finish(&mut self, trailers: &[u8]) -> u64;
    /// After the head: the answer cannot be complete, and the client must
    /// learn it (HTTP/1.1: the connection closes after what is queued;
    /// HTTP/2: the stream is reset once what is queued is framed).
    fn cut(&mut self);
    /// As [`Sink::cut`], and what is queued and not framed yet may be
    /// dropped (a producer that failed).
    fn abort(&mut self) {
        self.cut();
    }
    /// It passes a raw producer's bytes (a whole HTTP/1.x answer of an
    /// `nph-` program) as they come, with no head of its own (HTTP/1.1:
    /// the connection closes after them). Else the producer parses them.
    fn takes_raw(&self) -> bool {
        false
    }
    /// A raw producer's bytes (see [`Sink::takes_raw`]).
    fn raw(&mut self, bytes: &[u8]) {
        let _ = bytes;
    }
    /// An interim answer (1xx) before the head, with its field `lines`
    /// (`Name: value` CRLF each): `100` with none when the producer will
    /// read the request body the client was told to wait with (`Expect:
    /// 100-continue`, RFC 9110 §10.1.1), or an upstream's `103 Early
    /// Hints` (RFC 8297). Never to an HTTP/1.0 client (RFC 9110 §15.2).
    fn interim(&mut self, status: u16, lines: &[u8]) {
        let _ = (status, lines);
    }
    /// The producer took `n` of the client's request-body bytes: HTTP/2
    /// gives their window credit back, so a slow reader holds at most a
    /// window of body.
    fn took_body(&mut self, n: usize) {
        let _ = n;
    }
}

/// What becomes of a body once its head is out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wanted {
    /// It is pumped (and dropped by the framing of a HEAD answer over
    /// HTTP/1.1, as it always was).
    Body,
    /// None may follow (HEAD or a bodiless status over HTTP/2): an
    /// in-process producer is stopped at once, a process's output is
    /// read and dropped until it ends.
    Stop,
}

/// What a [`Run::pump`] came to.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Nothing moved: the producer waits for a wake-up, or the sink for
    /// the client.
    Idle,
    /// Something moved; more later.
    Moved,
    /// Something moved, then the producer had nothing more to give: it
    /// waits for its sources, whose events wake it (pumped again before
    /// one came, it would give nothing: HTTP/1.1's driver does not).
    Waits,
    /// The answer is over (complete, or cut short through the sink).
    Ended,
    /// It failed before its head: answer this status instead.
    Fail(Status),
    /// A local redirect, before any head: answer this path instead.
    Redirect(Vec<u8>),
}

/// What pumping needs besides the sink.
pub struct PumpCx<'a> {
    /// The worker's spare buffer, lent to the producer.
    pub buf: &'a mut Vec<u8>,
    /// The error log.
    pub log: &'a mut Logger,
    /// The request's site's `[compress]`.
    pub compress: &'a CompressConfig,
    /// The site's rules for an answer's head (CORS), for a producer whose
    /// head the rules did not see when it was planned (a program's).
    pub rules: &'a dyn Fn(&OwnedRequest, &mut Vec<u8>),
}

/// A run's producer: given back to itself when the run is done with it
/// ([`Produce::recycle`]), for the box it came in. (Without upstreams,
/// whose producers alone keep their boxes, the box itself.)
#[cfg(feature = "upstreams")]
#[derive(Debug)]
struct Producer(Box<dyn Produce>);

#[cfg(not(feature = "upstreams"))]
type Producer = Box<dyn Produce>;

/// `p` as a run holds it.
#[inline]
fn held(p: Box<dyn Produce>) -> Producer {
    #[cfg(feature = "upstreams")]
    return Producer(p);
    #[cfg(not(feature = "upstreams"))]
    p
}

#[cfg(feature = "upstreams")]
impl std::ops::Deref for Producer {
    type Target = dyn Produce;

    fn deref(&self) -> &(dyn Produce + 'static) {
        &*self.0
    }
}

#[cfg(feature = "upstreams")]
impl std::ops::DerefMut for Producer {
    fn deref_mut(&mut self) -> &mut (dyn Produce + 'static) {
        &mut *self.0
    }
}

#[cfg(feature = "upstreams")]
impl Drop for Producer {
    fn drop(&mut self) {
        std::mem::replace(&mut self.0, Box::new(Gone)).recycle();
    }
}

/// One produced answer on its way: the producer, the request it answers,
/// and its streamed compression (decided once, at the head).
#[derive(Debug)]
pub struct Run {
    producer: Producer,
    /// The request it answers (for the log, and to answer it otherwise).
    pub request: Held,
    squeeze: Squeeze,
    /// The head went to the sink (or raw bytes did).
    started: bool,
    /// The head's status, once it is out.
    status: u16,
    head_only: bool,
    /// The site's rules apply to the head when it comes ([`PumpCx::rules`]).
    rules_at_head: bool,
    /// Whether the sink was told about an expected body yet.
    asked: bool,
    /// The producer's bytes pass raw ([`Sink::takes_raw`]).
    raw: bool,
    /// No body is wanted, but the producer (a process) runs to its end:
    /// what it gives is dropped.
    draining: bool,
    /// Request body bytes fed to the producer ([`Run::feed_body`]).
    fed: u64,
    /// Bytes of the client's fed to an open input whose flow-control
    /// credit has not gone back yet ([`Sink::took_body`]): they wait in
    /// the input, or it dropped them (see [`Run::take_uncredited`]).
    owed: usize,
}

/// What became of request body bytes offered to a run
/// ([`Run::feed_body`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fed {
    /// Its producer reads no body.
    NoInput,
    /// Fed.
    Fed {
        /// The producer's input was closed already: they were dropped.
        closed: bool,
    },
    /// Not fed: they would take the body past its route's largest
    /// (`Held::body_max`); the request is to be refused (413).
    TooLarge,
}

impl Run {
    /// The upstream that answered, for the access log (a proxied
    /// request whose answer's head came).
    pub fn upstream(&self) -> Option<crate::log::Upstream<'_>> {
        self.producer.upstream()
    }

    /// `producer` answering `request`.
    pub fn new(producer: Box<dyn Produce>, request: Held) -> Run {
        let head_only = request.req.method() == Method::Head;
        Run {
            producer: held(producer),
            request,
            squeeze: Squeeze::default(),
            started: false,
            status: 0,
            head_only,
            rules_at_head: false,
            asked: false,
            raw: false,
            draining: false,
            fed: 0,
            owed: 0,
        }
    }

    /// Feeds request body `data` to the producer's input, and the body's
    /// end with `trailers` if `end` has them: for the protocols whose
    /// bodies come in frames (HTTP/2, HTTP/3; HTTP/1.1's decoder is
    /// bounded itself), whose body with no length is bounded here.
    pub fn feed_body(&mut self, data: &[u8], end: Option<&[u8]>) -> Fed {
        let max = self.request.body_max;
        let Some(input) = self.producer.input() else {
            return Fed::NoInput;
        };
        // (An extended CONNECT's DATA are a tunnel's bytes, no body: its
        // request is the WebSocket handshake it stands for. Bytes for an
        // input already closed are dropped: nothing to refuse.)
        let closed = input.is_closed();
        self.fed += data.len() as u64;
        if !closed && self.fed > max && self.request.req.field(Field::Upgrade).is_none() {
            return Fed::TooLarge;
        }
        input.feed(data);
        if !closed {
            self.owed += data.len();
        }
        if let Some(trailers) = end {
            input.end_with(trailers);
        }
        Fed::Fed { closed }
    }

    /// The client's request-body bytes it was fed and whose flow-control
    /// credit has not gone back through a sink (they wait in its input):
    /// to give back when the run is over, as its input goes with it.
    /// Counted as given back from then on.
    pub fn take_uncredited(&mut self) -> usize {
        std::mem::take(&mut self.owed)
    }

    /// The site's rules apply to its head when it comes (a program's
    /// head, which they could not see when the answer was planned).
    pub fn rules_at_head(mut self) -> Run {
        self.rules_at_head = true;
        self
    }

    /// Names the producer in log lines.
    pub fn label(&self) -> &str {
        self.producer.label()
    }

    /// Whether its head went out.
    pub fn started(&self) -> bool {
        self.started
    }

    /// Whether it answers a HEAD request.
    pub fn head_only(&self) -> bool {
        self.head_only
    }

    /// The status its head gave (0 before it, and for raw bytes).
    pub fn status(&self) -> u16 {
        self.status
    }

    /// How long it may make no progress (`handler`: `timeouts.handler`).
    pub fn idle_timeout(&self, handler: Duration) -> Duration {
        self.producer.idle_timeout(handler)
    }

    /// Its producer waits for more of the request body (see
    /// [`Produce::awaits_input`]).
    pub fn awaits_input(&self) -> bool {
        self.producer.awaits_input()
    }

    /// Its producer is a process running on its own (see
    /// [`Produce::is_process`]).
    pub fn is_process(&self) -> bool {
        self.producer.is_process()
    }

    /// The event sources to watch for it.
    pub fn sources(&self) -> [Option<(RawFd, Want)>; 3] {
        self.producer.sources()
    }

    /// Its source 0, new, to watch in place of the old one (see
    /// [`Produce::renewed`]).
    pub fn renewed(&mut self) -> Option<(RawFd, Want)> {
        self.producer.renewed()
    }

    /// Where it keeps the token of its source 0 (see
    /// [`Produce::watch_slot`]).
    pub fn watch_slot(&mut self) -> Option<&mut Option<usize>> {
        self.producer.watch_slot()
    }

    /// A source it is done with, to take out of the watch and close.
    pub fn retired(&mut self) -> Option<OwnedFd> {
        self.producer.retired()
    }

    /// Source `i` is ready to be read or written (see
    /// [`Produce::ready_for`]).
    pub fn ready_for(&mut self, i: usize, read: bool, write: bool) {
        self.producer.ready_for(i, read, write);
    }

    /// Takes it apart once its answer became a byte tunnel (see
    /// `crate::server::tunnel`): its producer, and the request it answers.
    #[cfg(feature = "upstreams")]
    pub fn into_tunnel(mut self) -> (Box<dyn Produce>, Held) {
        let producer = std::mem::replace(&mut self.producer.0, Box::new(Gone));
        (producer, self.request)
    }

    /// Where the request body goes, if the producer reads one.
    pub fn input(&mut self) -> Option<&mut dyn Input> {
        self.producer.input()
    }

    /// Lets the producer read ahead of a slow client (see
    /// [`Produce::hold_ahead`]).
    #[cfg(feature = "upstreams")]
    pub fn hold_ahead(&mut self, log: &mut Logger, tick: bool) {
        self.producer
            .hold_ahead(&mut Cx { log, raw_ok: false }, tick);
    }

    /// Whether the producer reads the request body (a program does,
    /// whether or not it has one).
    pub fn takes_body(&mut self) -> bool {
        self.producer.input().is_some()
    }

    /// Moves it forward while `sink` has room: the request body to the
    /// producer's input, then one `next` per piece.
    pub fn pump(&mut self, sink: &mut dyn Sink, cx: &mut PumpCx<'_>) -> Outcome {
        self.producer.tend(&mut Cx {
            log: cx.log,
            raw_ok: false,
        });
        let mut moved = match self.pump_input(sink, cx.log) {
            Ok(moved) => moved,
            Err(outcome) => return outcome,
        };
        let raw_ok = sink.takes_raw();
        loop {
            let room = sink.room();
            if room == 0 {
                return if moved { Outcome::Moved } else { Outcome::Idle };
            }
            cx.buf.clear();
            let mut pcx = Cx {
                log: cx.log,
                raw_ok,
            };
            // (Bytes that pass as they are may go by splice.)
            let as_is = self.started && !self.raw && !self.draining && !self.squeeze.is_on();
            let piped = match as_is && sink.takes_pipes() {
                true => self.producer.splice(room),
                false => None,
            };
            let gave = match piped {
                Some(Spliced::Pipe(pipe, last)) => {
                    moved = true;
                    if !sink.pipe(pipe) {
                        self.halt(cx.log);
                        sink.cut();
                        return Outcome::Ended;
                    }
                    if last {
                        return self.finish(sink, cx.log);
                    }
                    continue;
                }
                Some(Spliced::Gave(gave)) => gave,
                None => self.producer.next(room, cx.buf, &mut pcx),
            };
            let last = match gave {
                Gave::Pending => {
                    if let Some(next) = self.producer.successor() {
                        // (Its successor may have something at once.)
                        self.producer = held(next);
                        return if moved { Outcome::Moved } else { Outcome::Idle };
                    }
                    return if moved { Outcome::Waits } else { Outcome::Idle };
                }
                Gave::Interim(head) => {
                    // (None after the head: one that came late is dropped.)
                    if !self.started {
                        moved = true;
                        sink.interim(head.status, &head.headers);
                    }
                    continue;
                }
                Gave::Head(_, _) | Gave::Redirect(_) if self.started => {
                    let why = "gave a second head";
                    return self.fail(sink, Status::INTERNAL_SERVER_ERROR, why, cx.log);
                }
                Gave::Bytes | Gave::Last if !self.started && raw_ok && self.producer.raw() => {
                    // A whole HTTP/1.x answer of its own, passed as it is.
                    moved = true;
                    self.started = true;
                    self.raw = true;
                    sink.raw(cx.buf);
                    matches!(gave, Gave::Last)
                }
                Gave::Bytes | Gave::Last | Gave::End if !self.started => {
                    let why = "gave a body before its head";
                    return self.fail(sink, Status::INTERNAL_SERVER_ERROR, why, cx.log);
                }
                Gave::Head(mut head, file) => {
                    moved = true;
                    if self.rules_at_head {
                        (cx.rules)(&self.request.req, &mut head.headers);
                    }
                    if file.is_none() {
                        // (A file goes as it is, by sendfile: never compressed.)
                        let accept = self.request.req.field(Field::AcceptEncoding);
                        self.squeeze =
                            Squeeze::start(cx.compress, accept, &mut head, self.head_only);
                    }
                    self.started = true;
                    self.status = head.status;
                    // (HTTP/1.1's sink wants the body of a bodiless answer,
                    // and drops it: see `stops_at_bodiless_head`.)
                    let bodiless = self.head_only || Status(head.status).is_bodiless();
                    let stops = bodiless && self.producer.stops_at_bodiless_head();
                    let wanted = sink.head(&head);
                    #[cfg(feature = "upstreams")]
                    self.producer.head_written(head.headers);
                    if wanted == Wanted::Stop || stops {
                        if !self.producer.is_process() || file.is_some() {
                            // No body is sent: the producer is not wanted.
                            self.halt(cx.log);
                            return Outcome::Ended;
                        }
                        // (A process runs to its end; its body is dropped.)
                        self.draining = true;
                    }
                    match file {
                        Some((file, len)) => {
                            sink.file(file, len);
                            true
                        }
                        None => continue,
                    }
                }
                Gave::Bytes | Gave::Last if self.draining => {
                    moved = true;
                    if matches!(gave, Gave::Last) {
                        return Outcome::Ended;
                    }
                    continue;
                }
                Gave::Bytes | Gave::Last if self.raw => {
                    moved = true;
                    sink.raw(cx.buf);
                    matches!(gave, Gave::Last)
                }
                Gave::Bytes | Gave::Last => {
                    moved = true;
                    if !sink.data(self.squeeze.squeeze(cx.buf)) {
                        // More than the head's length: the answer ends
                        // there, whole, the same over every protocol
                        // (HTTP/2 and HTTP/3 reset the stream, which a
                        // browser shows as no page at all, HTTP/1.1
                        // dropped the rest silently), and the error log
                        // says so, as for an embedded handler's answer.
                        cx.log.log(
                            Level::Error,
                            format_args!(
                                "{}: body longer than its Content-Length; cut there",
                                self.label()
                            ),
                        );
                        let ended = self.finish(sink, cx.log);
                        if !self.producer.is_process() {
                            self.halt(cx.log);
                            return ended;
                        }
                        // (A process runs to its end, as over HTTP/1.1
                        // before: what it does after its output is not
                        // cut short; the rest of its output is dropped.)
                        self.draining = true;
                        moved = true;
                        if matches!(gave, Gave::Last) {
                            return ended;
                        }
                        continue;
                    }
                    matches!(gave, Gave::Last)
                }
                Gave::End if self.draining => return Outcome::Ended,
                Gave::End => true,
                Gave::Redirect(to) => {
                    self.halt(cx.log);
                    return Outcome::Redirect(to);
                }
                Gave::Cut(why) if self.started => {
                    self.say((&why, ""), cx.log);
                    self.halt(cx.log);
                    if !self.draining {
                        sink.cut();
                    }
                    return Outcome::Ended;
                }
                Gave::Cut(why) => return self.fail(sink, Status::BAD_GATEWAY, &why, cx.log),
                Gave::Fail(status, why) => return self.fail(sink, status, &why, cx.log),
            };
            if last {
                return self.finish(sink, cx.log);
            }
        }
    }

    /// Writes the request body that waits to the producer's input (its
    /// client bytes credited through `sink`), the first time telling
    /// `sink` the body is expected. Whether anything moved, or how the
    /// answer ended (a body held whole that cannot be read back).
    fn pump_input(&mut self, sink: &mut dyn Sink, log: &mut Logger) -> Result<bool, Outcome> {
        let expects = self.request.req.expect_continue();
        let Some(input) = self.producer.input() else {
            return Ok(false);
        };
        if !self.asked {
            self.asked = true;
            if expects && !input.is_closed() && !input.held() {
                // It reads the body the client waits to send.
                sink.interim(100, b"");
            }
        }
        match input.write() {
            Ok(wrote) => {
                if wrote.client > 0 {
                    self.owed = self.owed.saturating_sub(wrote.client);
                    sink.took_body(wrote.client);
                }
                Ok(wrote.moved)
            }
            // It does not read its input: the rest is dropped, and so the
            // credit of what waited in it goes back now (HTTP/2: else the
            // stream's and the connection's windows would stay short of
            // it for good, RFC 9113 §6.9).
            Err(InputEnd::Refused) => {
                let dropped = std::mem::take(&mut self.owed);
                if dropped > 0 {
                    sink.took_body(dropped);
                }
                Ok(true)
            }
            Err(InputEnd::Unreadable(e)) => {
                let why =
                    format!("cannot read back the request body held in a temporary file: {e}");
                Err(self.fail(sink, Status::INTERNAL_SERVER_ERROR, &why, log))
            }
        }
    }

    /// The body is complete: its compression ends, then its framing
    /// (with the producer's trailers, if any); one short of its length is
    /// cut.
    fn finish(&mut self, sink: &mut dyn Sink, log: &mut Logger) -> Outcome {
        let missing = match self.squeeze.finish() {
            Ok(last) => {
                if !last.is_empty() {
                    sink.data(last);
                }
                let trailers = self.producer.trailers();
                sink.finish(trailers.as_deref().unwrap_or_default())
            }
            // (Compressed, the body has no last chunk: the client sees it cut.)
            Err(missing) => missing,
        };
        if missing > 0 {
            log.log(
                Level::Error,
                format_args!(
                    "{}: body {missing} bytes shorter than its Content-Length",
                    self.label()
                ),
            );
            sink.cut();
        }
        Outcome::Ended
    }

    /// Gives the answer up (`why` goes to the error log with the
    /// producer's label): the producer is stopped; an answer whose head
    /// went out is cut short, one whose head did not comes back as
    /// [`Outcome::Fail`] with `status` (500; 504 for a timeout).
    pub fn fail(
        &mut self,
        sink: &mut dyn Sink,
        status: Status,
        why: &str,
        log: &mut Logger,
    ) -> Outcome {
        // (Whether the client got a head first: a 504 it did not get, or
        // an answer cut short, is not the same failure to the operator.)
        let then = match self.started {
            true => ", after its answer began (cut short)",
            false => "",
        };
        self.say((why, then), log);
        self.halt(log);
        if self.started {
            sink.abort();
            Outcome::Ended
        } else {
            Outcome::Fail(status)
        }
    }

    /// The client is gone (or the stream was reset): the producer is
    /// stopped. Returns the status for the log: 499 if no head went out.
    pub fn stop(&mut self, log: &mut Logger) -> u16 {
        self.halt(log);
        if self.started {
            self.status
        } else {
            499
        }
    }

    /// Gives it up for its idle timeout (504 before its head, or what
    /// the producer says; unless it goes on otherwise).
    pub fn time_out(&mut self, sink: &mut dyn Sink, log: &mut Logger) -> Outcome {
        let why = self.producer.timeout_why();
        match self.producer.timed_out() {
            Some(status) => self.fail(sink, status, why, log),
            // (It went on otherwise: its timer starts again.)
            None => Outcome::Moved,
        }
    }

    /// The request body it reads was refused (`status`: too large, bad
    /// framing). Before its head the client gets `status` instead; after
    /// it the answer cannot be taken back: it is cut short, and an info
    /// line says why.
    pub fn refuse_body(
        &mut self,
        sink: &mut dyn Sink,
        status: Status,
        log: &mut Logger,
    ) -> Outcome {
        self.halt(log);
        if !self.started {
            return Outcome::Fail(status);
        }
        log.log(
            Level::Info,
            format_args!(
                "{}: request body refused ({}) after the program started answering; response cut short",
                self.label(),
                status.0
            ),
        );
        sink.cut();
        Outcome::Ended
    }

    /// Logs why it gives up (with its producer's label), after what the
    /// producer noted on its way (an upstream tried before the one that
    /// failed): a request's lines in the order things happened.
    #[cold]
    #[inline(never)]
    fn say(&mut self, (why, then): (&str, &str), log: &mut Logger) {
        self.producer.tend(&mut Cx { log, raw_ok: false });
        log.log(Level::Error, format_args!("{}: {why}{then}", self.label()));
    }

    /// Stops the producer, and lets it log what it still holds.
    fn halt(&mut self, log: &mut Logger) {
        self.producer.stop();
        self.producer.tend(&mut Cx { log, raw_ok: false });
    }
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use super::*;
    use crate::config::AccessFormat;
    use crate::handlers::produce::Wrote;
    use crate::log::memory;

    /// A producer that gives its script, one step a call, and counts its
    /// stops.
    #[derive(Debug)]
    struct Scripted {
        steps: Vec<Step>,
        stops: std::rc::Rc<std::cell::Cell<u32>>,
        tended: std::rc::Rc<std::cell::Cell<u32>>,
        /// A process (see [`Produce::is_process`]), its output raw.
        process: bool,
        raw: bool,
        /// Its input: what it was fed, what it writes at each call
        /// (client bytes, or a failure), whether it is closed and held.
        input: Option<Feed>,
    }

    /// A scripted [`Input`].
    #[derive(Debug, Default)]
    struct Feed {
        fed: Vec<u8>,
        writes: Vec<Result<Wrote, InputEnd>>,
        closed: bool,
        held: bool,
    }

    impl Input for Feed {
        fn room(&self) -> usize {
            usize::MAX
        }
        fn feed(&mut self, data: &[u8]) {
            self.fed.extend_from_slice(data);
        }
        fn write(&mut self) -> Result<Wrote, InputEnd> {
            match self.writes.is_empty() {
                true => Ok(Wrote::default()),
                false => self.writes.remove(0),
            }
        }
        fn end(&mut self) {}
        fn close(&mut self) {
            self.closed = true;
        }
        fn is_closed(&self) -> bool {
            self.closed
        }
        fn held(&self) -> bool {
            self.held
        }
    }

    /// One step of a [`Scripted`] producer.
    #[derive(Debug)]
    enum Step {
        Pending,
        Head(u16, Option<u64>, &'static [u8]),
        File(u16, &'static [u8]),
        Bytes(&'static [u8]),
        Last(&'static [u8]),
        End,
        Redirect(&'static [u8]),
        Cut,
        Fail(u16),
        /// What [`Produce::trailers`] gives (after the end).
        Trailers(&'static [u8]),
    }

    impl Produce for Scripted {
        fn label(&self) -> &str {
            "scripted"
        }

        fn next(&mut self, _room: usize, buf: &mut Vec<u8>, _cx: &mut Cx<'_>) -> Gave {
            let head = |status, len, headers: &[u8]| ReplyHead {
                len: 0,
                status,
                reason: None,
                headers: headers.to_vec(),
                content_length: len,
                chunked: false,
                own: Default::default(),
            };
            match self.steps.remove(0) {
                Step::Pending => Gave::Pending,
                Step::Head(status, len, lines) => Gave::Head(head(status, len, lines), None),
                Step::File(status, bytes) => {
                    let file = file_with(bytes);
                    let len = bytes.len() as u64;
                    let lines = b"Content-Type: text/plain\r\n";
                    Gave::Head(head(status, Some(len), lines), Some((file, len)))
                }
                Step::Bytes(b) => {
                    buf.extend_from_slice(b);
                    Gave::Bytes
                }
                Step::Last(b) => {
                    buf.extend_from_slice(b);
                    Gave::Last
                }
                Step::End => Gave::End,
                Step::Redirect(to) => Gave::Redirect(to.to_vec()),
                Step::Cut => Gave::Cut("it stopped short".into()),
                Step::Fail(s) => Gave::Fail(Status(s), "it broke".into()),
                Step::Trailers(_) => panic!("asked for more after the end"),
            }
        }

        fn trailers(&mut self) -> Option<Vec<u8>> {
            match self.steps.first() {
                Some(Step::Trailers(t)) => {
                    let t = t.to_vec();
                    self.steps.remove(0);
                    Some(t)
                }
                _ => None,
            }
        }

        fn is_process(&self) -> bool {
            self.process
        }

        fn raw(&self) -> bool {
            self.raw
        }

        fn input(&mut self) -> Option<&mut dyn Input> {
            self.input.as_mut().map(|i| i as &mut dyn Input)
        }

        fn stop(&mut self) {
            self.stops.set(self.stops.get() + 1);
        }

        fn tend(&mut self, _cx: &mut Cx<'_>) {
            self.tended.set(self.tended.get() + 1);
        }
    }

    /// A file holding `bytes`.
    fn file_with(bytes: &[u8]) -> File {
        let mut f = tempfile_in(std::env::temp_dir());
        std::io::Write::write_all(&mut f, bytes).unwrap();
        f
    }

    fn tempfile_in(dir: std::path::PathBuf) -> File {
        use std::sync::atomic::{AtomicU32, Ordering};
        static N: AtomicU32 = AtomicU32::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        let path = dir.join(format!("brisk-run-{}-{n}", std::process::id()));
        let f = std::fs::OpenOptions::new()
            .create_new(true)
            .read(true)
            .write(true)
            .open(&path)
            .unwrap();
        let _ = std::fs::remove_file(&path);
        f
    }

    /// A sink that writes down what it is given.
    #[derive(Default)]
    struct Recording {
        room: usize,
        seen: Vec<String>,
        stop_at_head: bool,
        /// `data` takes at most this much in all.
        limit: Option<usize>,
        taken: usize,
        missing: u64,
        takes_raw: bool,
        /// What `data` took is taken from `room`.
        fills: bool,
    }

    impl Sink for Recording {
        fn room(&self) -> usize {
            match self.fills {
                true => self.room.saturating_sub(self.taken),
                false => self.room,
            }
        }
        fn head(&mut self, head: &ReplyHead) -> Wanted {
            let lines = String::from_utf8_lossy(&head.headers);
            let len = head.content_length;
            self.seen
                .push(format!("head {} {len:?} {lines:?}", head.status));
            if self.stop_at_head {
                Wanted::Stop
            } else {
                Wanted::Body
            }
        }
        fn data(&mut self, bytes: &[u8]) -> bool {
            let n = self
                .limit
                .map_or(bytes.len(), |l| (l - self.taken).min(bytes.len()));
            self.taken += n;
            self.seen
                .push(format!("data {}", String::from_utf8_lossy(&bytes[..n])));
            n == bytes.len()
        }
        fn file(&mut self, mut file: File, len: u64) {
            let mut s = String::new();
            std::io::Seek::rewind(&mut file).unwrap();
            std::io::Read::read_to_string(&mut file, &mut s).unwrap();
            self.seen.push(format!("file {len} {}", &s[..5]));
        }
        fn finish(&mut self, trailers: &[u8]) -> u64 {
            match trailers.is_empty() {
                true => self.seen.push("finish".into()),
                false => self
                    .seen
                    .push(format!("finish {}", String::from_utf8_lossy(trailers))),
            }
            self.missing
        }
        fn cut(&mut self) {
            self.seen.push("cut".into());
        }
        fn abort(&mut self) {
            self.seen.push("abort".into());
        }
        fn takes_raw(&self) -> bool {
            self.takes_raw
        }
        fn raw(&mut self, bytes: &[u8]) {
            self.seen
                .push(format!("raw {}", String::from_utf8_lossy(bytes)));
        }
        fn interim(&mut self, status: u16, lines: &[u8]) {
            let lines = String::from_utf8_lossy(lines);
            self.seen.push(match status {
                100 => "continue".into(),
                _ => format!("interim {status} {lines}"),
            });
        }
        fn took_body(&mut self, n: usize) {
            self.seen.push(format!("took {n}"));
        }
    }

    fn request(method: &str) -> Held {
        request_with(method, "")
    }

    fn request_with(method: &str, lines: &str) -> Held {
        let mut req = OwnedRequest::default();
        let head =
            format!("{method} /x HTTP/1.1\r\nHost: a\r\nAccept-Encoding: gzip\r\n{lines}\r\n");
        let limits = crate::http::parse::Limits {
            max_request_line: 8192,
            max_head: 8192,
            max_headers: 100,
        };
        assert!(req.parse(head.as_bytes(), &limits).unwrap().is_some());
        Held {
            req,
            started: Instant::now(),
            redirects: 0,
            body_max: u64::MAX,
            #[cfg(feature = "cold-lookups")]
            colds: 0,
        }
    }

    /// Pumps a scripted producer into `sink` once.
    fn pump(run: &mut Run, sink: &mut Recording, compress: &CompressConfig) -> (Outcome, String) {
        let m = memory(AccessFormat::Common, Level::Info, 16);
        let mut log = m.service.handle();
        let mut buf = Vec::new();
        let rules = |_: &OwnedRequest, lines: &mut Vec<u8>| lines.extend_from_slice(b"R: 1\r\n");
        let mut cx = PumpCx {
            buf: &mut buf,
            log: &mut log,
            compress,
            rules: &rules,
        };
        let outcome = run.pump(sink, &mut cx);
        log.flush();
        drop(log);
        m.service.shutdown();
        let error = String::from_utf8_lossy(&m.error.lock().unwrap()).into_owned();
        (outcome, error)
    }

    fn scripted(steps: Vec<Step>, method: &str) -> (Run, std::rc::Rc<std::cell::Cell<u32>>) {
        let stops = std::rc::Rc::default();
        let p = Scripted {
            steps,
            stops: std::rc::Rc::clone(&stops),
            tended: std::rc::Rc::default(),
            process: false,
            raw: false,
            input: None,
        };
        (Run::new(Box::new(p), request(method)), stops)
    }

    /// A log nobody reads.
    fn quiet() -> Logger {
        memory(AccessFormat::Common, Level::Info, 16)
            .service
            .handle()
    }

    /// A scripted process (or in-process producer) with `input`.
    fn process(
        steps: Vec<Step>,
        held: Held,
        raw: bool,
        input: Option<Feed>,
    ) -> (Run, std::rc::Rc<std::cell::Cell<u32>>) {
        let stops = std::rc::Rc::default();
        let p = Scripted {
            steps,
            stops: std::rc::Rc::clone(&stops),
            tended: std::rc::Rc::default(),
            process: true,
            raw,
            input,
        };
        (Run::new(Box::new(p), held), stops)
    }

    #[test]
    fn raw_bytes_pass_only_to_a_sink_that_takes_them() {
        let steps = vec![Step::Bytes(b"HTTP/1.1 200 OK\r\n\r\nhi"), Step::End];
        let (mut run, _) = process(steps, request("GET"), true, None);
        let mut s = Recording {
            takes_raw: true,
            ..sink(10)
        };
        assert_eq!(pump(&mut run, &mut s, &on()).0, Outcome::Ended);
        assert_eq!(s.seen, ["raw HTTP/1.1 200 OK\r\n\r\nhi", "finish"]);
        assert!(run.started() && run.status() == 0);
        // (A sink that does not gets a head: the producer parses it.)
        let steps = vec![Step::Head(201, None, b""), Step::Last(b"hi")];
        let (mut run, _) = process(steps, request("GET"), true, None);
        let mut s = sink(10);
        assert_eq!(pump(&mut run, &mut s, &off()).0, Outcome::Ended);
        assert_eq!(s.seen[1..], ["data hi", "finish"]);
    }

    #[test]
    fn trailers_go_with_the_end_of_the_body() {
        for end in [Step::Last(b"hi"), Step::End] {
            let last = matches!(end, Step::Last(_));
            let mut steps = vec![Step::Head(200, None, b"")];
            if !last {
                steps.push(Step::Bytes(b"hi"));
            }
            steps.extend([end, Step::Trailers(b"X-Sum: 1\r\n")]);
            let (mut run, _) = scripted(steps, "GET");
            let mut s = sink(10);
            assert_eq!(pump(&mut run, &mut s, &off()).0, Outcome::Ended);
            assert_eq!(s.seen[1..], ["data hi", "finish X-Sum: 1\r\n"]);
        }
    }

    #[test]
    fn a_process_whose_body_is_not_wanted_runs_to_its_end() {
        let steps = vec![
            Step::Head(200, Some(4), b""),
            Step::Bytes(b"ab"),
            Step::Pending,
            Step::Bytes(b"cd"),
            Step::End,
        ];
        let (mut run, stops) = process(steps, request("HEAD"), false, None);
        let mut s = Recording {
            stop_at_head: true,
            ..sink(10)
        };
        assert_eq!(pump(&mut run, &mut s, &off()).0, Outcome::Waits);
        assert_eq!(pump(&mut run, &mut s, &off()).0, Outcome::Ended);
        // Its body dropped, no framing of an end, not stopped.
        assert_eq!(s.seen, ["head 200 Some(4) \"\""]);
        assert_eq!(stops.get(), 0);
    }

    #[test]
    fn the_rules_see_a_head_that_comes_late_when_asked_to() {
        let steps = vec![Step::Head(200, None, b"X: 1\r\n"), Step::End];
        let (run, _) = process(steps, request("GET"), false, None);
        let mut run = run.rules_at_head();
        let mut s = sink(10);
        pump(&mut run, &mut s, &off());
        assert_eq!(s.seen[0], "head 200 None \"X: 1\\r\\nR: 1\\r\\n\"");
        let (mut run, _) = scripted(vec![Step::Head(200, None, b""), Step::End], "GET");
        let mut s = sink(10);
        pump(&mut run, &mut s, &off());
        assert_eq!(s.seen[0], "head 200 None \"\"");
    }

    #[test]
    fn the_body_goes_in_with_its_continue_once_and_its_credit_back() {
        let feed = Feed {
            writes: vec![
                Ok(Wrote {
                    moved: true,
                    client: 3,
                }),
                Ok(Wrote {
                    moved: true,
                    client: 0,
                }),
            ],
            ..Feed::default()
        };
        let held = request_with("POST", "Expect: 100-continue\r\nContent-Length: 3\r\n");
        let (mut run, _) = process(vec![Step::Pending, Step::Pending], held, false, Some(feed));
        assert!(run.takes_body());
        let mut s = sink(10);
        assert_eq!(pump(&mut run, &mut s, &off()).0, Outcome::Waits);
        assert_eq!(s.seen, ["continue", "took 3"]);
        // (Held bytes move without credit; no second 100 Continue.)
        assert_eq!(pump(&mut run, &mut s, &off()).0, Outcome::Waits);
        assert_eq!(s.seen.len(), 2);
        // A body held whole, or no body: the client is not told to send.
        let feed = Feed {
            held: true,
            ..Feed::default()
        };
        let held = request_with("POST", "Expect: 100-continue\r\nContent-Length: 3\r\n");
        let (mut run, _) = process(vec![Step::Pending], held, false, Some(feed));
        let mut s = sink(10);
        assert_eq!(pump(&mut run, &mut s, &off()).0, Outcome::Idle);
        assert!(s.seen.is_empty());
    }

    #[test]
    fn the_credit_of_body_bytes_an_input_dropped_goes_back() {
        // Fed 10 bytes, the input writes 4, then refuses the rest (a
        // program that closed its input): the 6 it dropped are credited
        // back at once, not only the 4 it wrote.
        let feed = Feed {
            writes: vec![
                Ok(Wrote {
                    moved: true,
                    client: 4,
                }),
                Err(InputEnd::Refused),
            ],
            ..Feed::default()
        };
        let held = request_with("POST", "Content-Length: 20\r\n");
        let (mut run, _) = process(vec![Step::Pending, Step::Pending], held, false, Some(feed));
        assert_eq!(
            run.feed_body(b"0123456789", None),
            Fed::Fed { closed: false }
        );
        let mut s = sink(10);
        pump(&mut run, &mut s, &off());
        pump(&mut run, &mut s, &off());
        assert_eq!(s.seen, ["took 4", "took 6"]);
        assert_eq!(run.take_uncredited(), 0, "nothing is owed");
        // Bytes still in the input when the run is over: whoever takes
        // the run gives their credit back, once.
        let feed = Feed {
            writes: vec![Ok(Wrote {
                moved: true,
                client: 4,
            })],
            ..Feed::default()
        };
        let held = request_with("POST", "Content-Length: 20\r\n");
        let (mut run, _) = process(vec![Step::Pending], held, false, Some(feed));
        run.feed_body(b"0123456789", None);
        let mut s = sink(10);
        pump(&mut run, &mut s, &off());
        assert_eq!(s.seen, ["took 4"]);
        assert_eq!((run.take_uncredited(), run.take_uncredited()), (6, 0));
    }

    #[test]
    fn an_input_that_cannot_be_read_back_fails_the_answer() {
        let feed = Feed {
            writes: vec![Err(InputEnd::Unreadable("gone".into()))],
            ..Feed::default()
        };
        let (mut run, stops) = process(
            vec![],
            request_with("POST", "Content-Length: 3\r\n"),
            false,
            Some(feed),
        );
        let mut s = sink(10);
        let (outcome, error) = pump(&mut run, &mut s, &off());
        assert_eq!(outcome, Outcome::Fail(Status::INTERNAL_SERVER_ERROR));
        assert!(
            error.contains(
                "scripted: cannot read back the request body held in a temporary file: gone"
            ),
            "{error}"
        );
        assert_eq!(stops.get(), 1);
    }

    #[test]
    fn a_refused_body_cuts_a_started_answer_and_says_so() {
        let steps = vec![Step::Head(200, None, b""), Step::Pending];
        let (mut run, stops) = process(
            steps,
            request_with("POST", "Content-Length: 3\r\n"),
            false,
            None,
        );
        let mut s = sink(10);
        pump(&mut run, &mut s, &off());
        let m = memory(AccessFormat::Common, Level::Info, 16);
        let mut log = m.service.handle();
        let outcome = run.refuse_body(&mut s, Status(413), &mut log);
        assert_eq!(outcome, Outcome::Ended);
        assert_eq!(s.seen.last().unwrap(), "cut");
        assert_eq!(stops.get(), 1);
        log.flush();
        drop(log);
        m.service.shutdown();
        let error = String::from_utf8_lossy(&m.error.lock().unwrap()).into_owned();
        assert!(error.contains("scripted: request body refused (413) after the program started answering; response cut short"), "{error}");
        // Before the head: answered the status instead.
        let (mut run, _) = process(
            vec![],
            request_with("POST", "Content-Length: 3\r\n"),
            false,
            None,
        );
        let outcome = run.refuse_body(&mut s, Status(413), &mut quiet());
        assert_eq!(outcome, Outcome::Fail(Status(413)));
    }

    #[test]
    fn a_cut_keeps_what_went_before_and_is_a_502_before_the_head() {
        let steps = vec![Step::Head(200, None, b""), Step::Bytes(b"ab"), Step::Cut];
        let (mut run, stops) = process(steps, request("GET"), false, None);
        let mut s = sink(10);
        let (outcome, error) = pump(&mut run, &mut s, &off());
        assert_eq!(outcome, Outcome::Ended);
        assert_eq!(s.seen[1..], ["data ab", "cut"]);
        assert!(error.contains("scripted: it stopped short"), "{error}");
        assert_eq!(stops.get(), 1);
        let (mut run, _) = process(vec![Step::Cut], request("GET"), false, None);
        let outcome = pump(&mut run, &mut sink(10), &off()).0;
        assert_eq!(outcome, Outcome::Fail(Status::BAD_GATEWAY));
    }

    #[test]
    fn a_timeout_says_what_the_producer_says() {
        let (mut run, _) = process(vec![], request("GET"), false, None);
        assert_eq!(
            run.idle_timeout(std::time::Duration::from_secs(3))
                .as_secs(),
            3
        );
        let outcome = run.time_out(&mut sink(10), &mut quiet());
        assert_eq!(outcome, Outcome::Fail(Status::GATEWAY_TIMEOUT));
    }

    fn off() -> CompressConfig {
        crate::config::Config::default().site.compress
    }

    fn on() -> CompressConfig {
        CompressConfig {
            enable: true,
            ..off()
        }
    }

    fn sink(room: usize) -> Recording {
        Recording {
            room,
            ..Recording::default()
        }
    }

    #[test]
    fn a_body_goes_head_first_then_piece_by_piece_then_ends() {
        let steps = vec![
            Step::Head(200, None, b"X: 1\r\n"),
            Step::Bytes(b"ab"),
            Step::Pending,
            Step::Last(b"cd"),
        ];
        let (mut run, stops) = scripted(steps, "GET");
        let mut s = sink(10);
        assert_eq!(pump(&mut run, &mut s, &off()).0, Outcome::Waits);
        assert_eq!(s.seen, ["head 200 None \"X: 1\\r\\n\"", "data ab"]);
        assert!(run.started() && run.status() == 200);
        assert_eq!(pump(&mut run, &mut s, &off()).0, Outcome::Ended);
        assert_eq!(s.seen[2..], ["data cd", "finish"]);
        assert_eq!(stops.get(), 0);
    }

    #[test]
    fn a_full_sink_is_pumped_again_a_producer_that_waits_is_not() {
        // (Moved: the driver pumps again once the client took some;
        // Waits: not before an event of the producer's sources.)
        let steps = vec![
            Step::Head(200, None, b""),
            Step::Bytes(b"abcd"),
            Step::Bytes(b"ef"),
            Step::Pending,
            Step::Last(b"gh"),
        ];
        let (mut run, _) = scripted(steps, "GET");
        let mut s = Recording {
            room: 4,
            fills: true,
            ..Recording::default()
        };
        assert_eq!(pump(&mut run, &mut s, &off()).0, Outcome::Moved);
        assert_eq!(s.seen[1..], ["data abcd"]);
        s.room = 10;
        assert_eq!(pump(&mut run, &mut s, &off()).0, Outcome::Waits);
        assert_eq!(s.seen[2..], ["data ef"]);
        assert_eq!(pump(&mut run, &mut s, &off()).0, Outcome::Ended);
        assert_eq!(s.seen[3..], ["data gh", "finish"]);
    }

    #[test]
    fn nothing_is_asked_while_the_sink_has_no_room_but_it_is_tended() {
        let tended = std::rc::Rc::default();
        let p = Scripted {
            steps: vec![Step::Fail(500)],
            stops: std::rc::Rc::default(),
            tended: std::rc::Rc::clone(&tended),
            process: false,
            raw: false,
            input: None,
        };
        let mut run = Run::new(Box::new(p), request("GET"));
        let mut s = sink(0);
        assert_eq!(pump(&mut run, &mut s, &off()).0, Outcome::Idle);
        assert!(s.seen.is_empty());
        assert_eq!(tended.get(), 1);
    }

    #[test]
    fn an_end_of_its_own_finishes_the_framing() {
        let steps = vec![Step::Head(200, None, b""), Step::Bytes(b"ab"), Step::End];
        let (mut run, _) = scripted(steps, "GET");
        let mut s = sink(10);
        assert_eq!(pump(&mut run, &mut s, &off()).0, Outcome::Ended);
        assert_eq!(s.seen[1..], ["data ab", "finish"]);
    }

    #[test]
    fn a_failure_before_the_head_comes_back_and_after_it_cuts() {
        let (mut run, stops) = scripted(vec![Step::Pending, Step::Fail(500)], "GET");
        let mut s = sink(10);
        assert_eq!(pump(&mut run, &mut s, &off()).0, Outcome::Idle);
        let (outcome, error) = pump(&mut run, &mut s, &off());
        assert_eq!(outcome, Outcome::Fail(Status::INTERNAL_SERVER_ERROR));
        assert!(error.contains("scripted: it broke"), "{error}");
        assert!(s.seen.is_empty());
        assert_eq!(stops.get(), 1);
        // (Stopped before its head: logged as 499.)
        assert_eq!(run.stop(&mut quiet()), 499);

        let steps = vec![
            Step::Head(200, None, b""),
            Step::Bytes(b"ab"),
            Step::Fail(500),
        ];
        let (mut run, stops) = scripted(steps, "GET");
        let mut s = sink(10);
        assert_eq!(pump(&mut run, &mut s, &off()).0, Outcome::Ended);
        assert_eq!(s.seen[1..], ["data ab", "abort"]);
        assert_eq!(stops.get(), 1);
        assert_eq!(run.stop(&mut quiet()), 200);
    }

    #[test]
    fn a_timeout_is_a_504_before_the_head() {
        let (mut run, stops) = scripted(vec![Step::Pending], "GET");
        let mut s = sink(10);
        let m = memory(AccessFormat::Common, Level::Info, 16);
        let mut log = m.service.handle();
        let why = "no progress for timeouts.handler; given up";
        let outcome = run.fail(&mut s, Status::GATEWAY_TIMEOUT, why, &mut log);
        assert_eq!(outcome, Outcome::Fail(Status::GATEWAY_TIMEOUT));
        assert_eq!(stops.get(), 1);
    }

    #[test]
    fn a_sink_that_wants_no_body_stops_the_producer_at_the_head() {
        let steps = vec![Step::Head(200, Some(2), b""), Step::Last(b"ab")];
        let (mut run, stops) = scripted(steps, "HEAD");
        let mut s = Recording {
            stop_at_head: true,
            ..sink(10)
        };
        assert_eq!(pump(&mut run, &mut s, &off()).0, Outcome::Ended);
        assert_eq!(s.seen, ["head 200 Some(2) \"\""]);
        assert_eq!(stops.get(), 1);
    }

    #[test]
    fn a_body_past_what_the_sink_takes_ends_there_whole_and_is_logged() {
        let steps = vec![
            Step::Head(200, Some(3), b""),
            Step::Bytes(b"ab"),
            Step::Bytes(b"cd"),
        ];
        let (mut run, stops) = scripted(steps, "GET");
        let mut s = Recording {
            limit: Some(3),
            ..sink(10)
        };
        let (outcome, error) = pump(&mut run, &mut s, &off());
        assert_eq!(outcome, Outcome::Ended);
        // (Finished, not cut: HTTP/2 and HTTP/3 reset a cut stream.)
        assert_eq!(s.seen[1..], ["data ab", "data c", "finish"]);
        assert_eq!(stops.get(), 1);
        assert!(
            error.contains("scripted: body longer than its Content-Length; cut there"),
            "{error}"
        );
    }

    #[test]
    fn a_body_short_of_its_length_is_cut_and_logged() {
        let steps = vec![Step::Head(200, Some(5), b""), Step::Last(b"ab")];
        let (mut run, _) = scripted(steps, "GET");
        let mut s = Recording {
            missing: 3,
            ..sink(10)
        };
        let (outcome, error) = pump(&mut run, &mut s, &off());
        assert_eq!(outcome, Outcome::Ended);
        assert_eq!(s.seen[1..], ["data ab", "finish", "cut"]);
        assert!(
            error.contains("scripted: body 3 bytes shorter than its Content-Length"),
            "{error}"
        );
    }

    #[test]
    fn a_file_goes_with_its_head_and_is_never_compressed() {
        let (mut run, _) = scripted(vec![Step::File(200, &[b'a'; 4096])], "GET");
        let mut s = sink(10);
        assert_eq!(pump(&mut run, &mut s, &on()).0, Outcome::Ended);
        let head = "head 200 Some(4096) \"Content-Type: text/plain\\r\\n\"";
        assert_eq!(s.seen, [head, "file 4096 aaaaa", "finish"]);
    }

    #[test]
    fn a_redirect_before_the_head_comes_back() {
        let (mut run, stops) = scripted(vec![Step::Redirect(b"/y")], "GET");
        let mut s = sink(10);
        assert_eq!(
            pump(&mut run, &mut s, &off()).0,
            Outcome::Redirect(b"/y".to_vec())
        );
        assert_eq!(stops.get(), 1);
    }

    #[test]
    fn a_body_before_its_head_or_a_second_head_is_a_failure() {
        let (mut run, _) = scripted(vec![Step::Bytes(b"ab")], "GET");
        let mut s = sink(10);
        let (outcome, error) = pump(&mut run, &mut s, &off());
        assert_eq!(outcome, Outcome::Fail(Status::INTERNAL_SERVER_ERROR));
        assert!(error.contains("gave a body before its head"), "{error}");
        let steps = vec![Step::Head(200, None, b""), Step::Head(200, None, b"")];
        let (mut run, _) = scripted(steps, "GET");
        assert_eq!(pump(&mut run, &mut s, &off()).0, Outcome::Ended);
        assert_eq!(s.seen.last().unwrap(), "abort");
    }

    #[cfg(feature = "compress")]
    #[test]
    fn compression_is_decided_once_at_the_head() {
        let body: &'static [u8] = &[b'a'; 4096];
        let steps = vec![
            Step::Head(200, None, b"Content-Type: text/plain\r\n"),
            Step::Last(body),
        ];
        let (mut run, _) = scripted(steps, "GET");
        let mut s = sink(1 << 20);
        assert_eq!(pump(&mut run, &mut s, &on()).0, Outcome::Ended);
        assert!(s.seen[0].contains("Content-Encoding: gzip"), "{:?}", s.seen);
        let sent: usize = s.seen[1..s.seen.len() - 1]
            .iter()
            .map(|d| d.len() - 5)
            .sum();
        assert!(sent < 1000, "{:?}", s.seen);
    }
}
