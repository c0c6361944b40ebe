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

use super::waits::Held;
use crate::config::{CompressConfig, Level};
use crate::handlers::compress::Squeeze;
use crate::handlers::pipe::ReplyHead;
use crate::handlers::produce::{Cx, Gave, Produce};
use crate::http::request::Field;
use crate::http::{Method, Status};
use crate::log::Logger;

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
    /// head's length came); the answer is cut there.
    fn data(&mut self, bytes: &[u8]) -> bool;
    /// The whole body, as this file from its start (after the head;
    /// never compressed).
    fn file(&mut self, file: File, len: u64);
    /// The body is complete: frames its end. Returns how many bytes the
    /// head's length promised and did not get (the answer is then cut).
    fn finish(&mut self) -> u64;
    /// After the head: the answer cannot be complete, and the client must
    /// learn it (HTTP/1.1: the connection closes after what is queued;
    /// HTTP/2: the stream is reset once what is queued is framed).
    fn cut(&mut self);
    /// As [`Sink::cut`], and what is queued and not framed yet may be
    /// dropped (a producer that failed).
    fn abort(&mut self) {
        self.cut();
    }
}

/// What becomes of a body once its head is out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wanted {
    /// It is pumped (and dropped by the framing of a HEAD answer over
    /// HTTP/1.1, as it always was).
    Body,
    /// None may follow (HEAD or a bodiless status over HTTP/2): the
    /// producer is stopped at once.
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
}

/// One produced answer on its way: the producer, the request it answers,
/// and its streamed compression (decided once, at the head).
#[derive(Debug)]
pub struct Run {
    producer: Box<dyn Produce>,
    /// The request it answers (for the log, and to answer it otherwise).
    pub request: Held,
    squeeze: Squeeze,
    /// The head went to the sink.
    started: bool,
    /// The head's status, once it is out.
    status: u16,
    head_only: bool,
}

impl Run {
    /// `producer` answering `request`.
    pub fn new(producer: Box<dyn Produce>, request: Held) -> Run {
        let head_only = request.req.method() == Method::Head;
        Run {
            producer,
            request,
            squeeze: Squeeze::default(),
            started: false,
            status: 0,
            head_only,
        }
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

    /// The status its head gave (0 before it).
    pub fn status(&self) -> u16 {
        self.status
    }

    /// Moves it forward while `sink` has room: one `next` per piece.
    pub fn pump(&mut self, sink: &mut dyn Sink, cx: &mut PumpCx<'_>) -> Outcome {
        let mut moved = false;
        self.producer.tend(&mut Cx {
            log: cx.log,
            raw_ok: false,
        });
        loop {
            let room = sink.room();
            if room == 0 {
                return if moved { Outcome::Moved } else { Outcome::Idle };
            }
            cx.buf.clear();
            let mut pcx = Cx {
                log: cx.log,
                raw_ok: false,
            };
            let gave = self.producer.next(room, cx.buf, &mut pcx);
            let last = match gave {
                Gave::Pending => {
                    return if moved { Outcome::Moved } else { Outcome::Idle };
                }
                Gave::Head(_, _) | Gave::Redirect(_) if self.started => {
                    let why = "gave a second head";
                    return self.fail(sink, Status::INTERNAL_SERVER_ERROR, why, cx.log);
                }
                Gave::Bytes | Gave::Last | Gave::End if !self.started => {
                    let why = "gave a body before its head";
                    return self.fail(sink, Status::INTERNAL_SERVER_ERROR, why, cx.log);
                }
                Gave::Head(mut head, file) => {
                    moved = true;
                    if file.is_none() {
                        // (A file goes as it is, by sendfile: never compressed.)
                        let accept = self.request.req.field(Field::AcceptEncoding);
                        self.squeeze =
                            Squeeze::start(cx.compress, accept, &mut head, self.head_only);
                    }
                    self.started = true;
                    self.status = head.status;
                    if sink.head(&head) == Wanted::Stop {
                        // No body is sent: the producer is not wanted.
                        self.producer.stop();
                        return Outcome::Ended;
                    }
                    match file {
                        Some((file, len)) => {
                            sink.file(file, len);
                            true
                        }
                        None => continue,
                    }
                }
                Gave::Bytes | Gave::Last => {
                    moved = true;
                    if !sink.data(self.squeeze.squeeze(cx.buf)) {
                        self.producer.stop();
                        sink.cut();
                        return Outcome::Ended;
                    }
                    matches!(gave, Gave::Last)
                }
                Gave::End => true,
                Gave::Redirect(to) => {
                    self.producer.stop();
                    return Outcome::Redirect(to);
                }
                Gave::Fail(status, why) => return self.fail(sink, status, &why, cx.log),
            };
            if last {
                return self.finish(sink, cx.log);
            }
        }
    }

    /// The body is complete: its compression ends, then its framing; one
    /// short of its length is cut.
    fn finish(&mut self, sink: &mut dyn Sink, log: &mut Logger) -> Outcome {
        let missing = match self.squeeze.finish() {
            Ok(last) => {
                if !last.is_empty() {
                    sink.data(last);
                }
                sink.finish()
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
        log.log(Level::Error, format_args!("{}: {why}", self.label()));
        self.producer.stop();
        if self.started {
            sink.abort();
            Outcome::Ended
        } else {
            Outcome::Fail(status)
        }
    }

    /// The client is gone (or the stream was reset): the producer is
    /// stopped. Returns the status for the log: 499 if no head went out.
    pub fn stop(&mut self) -> u16 {
        self.producer.stop();
        if self.started {
            self.status
        } else {
            499
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use super::*;
    use crate::config::AccessFormat;
    use crate::http::request::OwnedRequest;
    use crate::log::memory;

    /// A producer that gives its script, one step a call, and counts its
    /// stops.
    #[derive(Debug)]
    struct Scripted {
        steps: Vec<Step>,
        stops: std::rc::Rc<std::cell::Cell<u32>>,
        tended: std::rc::Rc<std::cell::Cell<u32>>,
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
        Fail(u16),
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
                Step::Fail(s) => Gave::Fail(Status(s), "it broke".into()),
            }
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
    }

    impl Sink for Recording {
        fn room(&self) -> usize {
            self.room
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
        fn finish(&mut self) -> u64 {
            self.seen.push("finish".into());
            self.missing
        }
        fn cut(&mut self) {
            self.seen.push("cut".into());
        }
        fn abort(&mut self) {
            self.seen.push("abort".into());
        }
    }

    fn request(method: &str) -> Held {
        let mut req = OwnedRequest::default();
        let head = format!("{method} /x HTTP/1.1\r\nHost: a\r\nAccept-Encoding: gzip\r\n\r\n");
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
        }
    }

    /// Pumps a scripted producer into `sink` once.
    fn pump(run: &mut Run, sink: &mut Recording, compress: &CompressConfig) -> (Outcome, String) {
        let m = memory(AccessFormat::Common, Level::Info, 16);
        let mut log = m.service.handle();
        let mut buf = Vec::new();
        let mut cx = PumpCx {
            buf: &mut buf,
            log: &mut log,
            compress,
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
        };
        (Run::new(Box::new(p), request(method)), stops)
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
        assert_eq!(pump(&mut run, &mut s, &off()).0, Outcome::Moved);
        assert_eq!(s.seen, ["head 200 None \"X: 1\\r\\n\"", "data ab"]);
        assert!(run.started() && run.status() == 200);
        assert_eq!(pump(&mut run, &mut s, &off()).0, Outcome::Ended);
        assert_eq!(s.seen[2..], ["data cd", "finish"]);
        assert_eq!(stops.get(), 0);
    }

    #[test]
    fn nothing_is_asked_while_the_sink_has_no_room_but_it_is_tended() {
        let tended = std::rc::Rc::default();
        let p = Scripted {
            steps: vec![Step::Fail(500)],
            stops: std::rc::Rc::default(),
            tended: std::rc::Rc::clone(&tended),
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
        assert_eq!(run.stop(), 499);

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
        assert_eq!(run.stop(), 200);
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
    fn a_body_past_what_the_sink_takes_is_cut_there() {
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
        assert_eq!(pump(&mut run, &mut s, &off()).0, Outcome::Ended);
        assert_eq!(s.seen[1..], ["data ab", "data c", "cut"]);
        assert_eq!(stops.get(), 1);
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
