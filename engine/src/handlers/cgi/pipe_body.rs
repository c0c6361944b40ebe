//! A CGI program's answer as a producer ([`Produce`] and [`Input`]): the
//! engine registers its three pipes ([`Produce::sources`]) and says
//! which is ready; the request body goes to its input as it arrives (or
//! from a body held whole), its diagnostics go to the error log line by
//! line, and its output goes to the reply object ([`PipeReply`]) until
//! the head is in, then on as the body: as it comes, or decoded from the
//! chunked coding of an `nph-` program's own HTTP/1.1 answer when the
//! sink does not take that answer raw. The same producer serves every
//! protocol; it knows none of them.

use std::fs::File;
use std::io::{self, Read as _};
use std::os::fd::{AsRawFd, OwnedFd};
use std::time::Duration;

use crate::config::Level;
use crate::handlers::pipe::{Pipe, PipeReply, ReplyStart};
use crate::handlers::produce::{Cx, Gave, Input, InputEnd, Produce, Want, Wrote};
use crate::handlers::relay::{Outbox, OutboxError, Unframe};
use crate::http::parse::BodyFraming;
use crate::http::Status;
use crate::log::Logger;
use crate::sys::net::{read_into_spare, write_fd};
/// Longest diagnostics line kept for the error log.
const DIAGNOSTICS_LINE: usize = 4096;
/// What one read of the output asks for at most.
const PIECE: usize = 64 * 1024;

/// Index of the program's input among its [`Produce::sources`].
pub const INPUT: usize = 0;
/// Index of its output.
pub const OUTPUT: usize = 1;
/// Index of its diagnostics.
pub const DIAGNOSTICS: usize = 2;

/// Adds diagnostics `bytes` to the `line` being gathered (at most
/// [`DIAGNOSTICS_LINE`] bytes of it are kept), and calls `done` with it at
/// each line's end.
pub fn gather_lines(line: &mut Vec<u8>, bytes: &[u8], mut done: impl FnMut(&mut Vec<u8>)) {
    for piece in bytes.split_inclusive(|&b| b == b'\n') {
        let line_done = piece.ends_with(b"\n");
        let text = piece.strip_suffix(b"\n").unwrap_or(piece);
        let room = DIAGNOSTICS_LINE.saturating_sub(line.len());
        line.extend_from_slice(&text[..text.len().min(room)]);
        if line_done {
            done(line);
        }
    }
}

/// Logs the diagnostics `line` of the program `label` names, if any, and
/// empties it.
pub fn log_line(label: &str, line: &mut Vec<u8>, log: &mut Logger) {
    if !line.is_empty() {
        let text = String::from_utf8_lossy(line);
        log.log(Level::Error, format_args!("{label}: {text}"));
        line.clear();
    }
}

/// A running CGI program's answer (see the module documentation).
#[derive(Debug)]
pub struct PipeBody {
    input: Option<OwnedFd>,
    output: Option<OwnedFd>,
    diagnostics: Option<File>,
    /// Pipes it is done with, until the engine takes them out of its
    /// watch ([`Produce::retired`]).
    retired: [Option<OwnedFd>; 3],
    /// It was stopped: what is left of a diagnostics line is logged at
    /// the next [`Produce::tend`].
    stopped: bool,
    /// Which of input, output and diagnostics may be ready.
    ready: [bool; 3],
    /// Request body waiting for the input (which closes once it is all
    /// written and no more comes).
    outbox: Outbox,
    /// The output until its head is complete.
    head_buf: Vec<u8>,
    /// The head was given (or, raw, the output passes as it comes).
    started: bool,
    /// Body bytes read with the head, given next.
    rest: Vec<u8>,
    /// Decodes an `nph-` program's chunked body.
    dechunk: Unframe,
    /// `limits.max_header_bytes`: the trailers of a chunked body.
    max_trailers: usize,
    diagnostics_line: Vec<u8>,
    label: String,
    idle_timeout: Duration,
    reply: Box<dyn PipeReply>,
}

impl PipeBody {
    /// The answer of the program `pipe` was started for, before anything
    /// of its output is read; `max_trailers` bounds the trailers of a
    /// chunked body it sends (`limits.max_header_bytes`).
    pub fn new(pipe: Pipe, max_trailers: usize) -> PipeBody {
        let mut outbox = Outbox::new(pipe.held);
        outbox.body_end |= !pipe.has_body;
        PipeBody {
            // (A program that reads no body has its input closed at once.)
            input: pipe.has_body.then_some(pipe.input),
            output: Some(pipe.output),
            diagnostics: Some(File::from(pipe.diagnostics)),
            retired: [None, None, None],
            stopped: false,
            ready: [true; 3],
            outbox,
            head_buf: Vec::new(),
            started: false,
            rest: Vec::new(),
            dechunk: Unframe::default(),
            max_trailers,
            diagnostics_line: Vec::new(),
            label: pipe.label,
            idle_timeout: pipe.idle_timeout,
            reply: pipe.reply,
        }
    }

    /// Logs the diagnostics line gathered so far, if any.
    fn log_line(&mut self, log: &mut Logger) {
        log_line(&self.label, &mut self.diagnostics_line, log);
    }

    /// Reads the diagnostics that arrived, each complete line one
    /// error-log message; at their end the last line is logged.
    fn read_diagnostics(&mut self, log: &mut Logger) {
        let mut buf = [0u8; 1024];
        while self.ready[DIAGNOSTICS] {
            let Some(f) = self.diagnostics.as_mut() else {
                return;
            };
            match f.read(&mut buf) {
                Ok(0) => {
                    self.retire(DIAGNOSTICS);
                    self.log_line(log);
                }
                Ok(n) => {
                    let label = &self.label;
                    gather_lines(&mut self.diagnostics_line, &buf[..n], |line| {
                        log_line(label, line, log)
                    });
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    self.ready[DIAGNOSTICS] = false;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => self.retire(DIAGNOSTICS),
            }
        }
    }

    /// Body bytes the program wrote, now in `buf`: as they are, or
    /// decoded from chunked coding (what follows the last chunk is
    /// dropped).
    fn body(&mut self, buf: &mut Vec<u8>) -> Gave {
        // (Bad coding: what decoded goes out; the answer is cut at the
        // next call.)
        self.dechunk.take(buf);
        Gave::Bytes
    }

    /// Leaves pipe `i` (if still open) for the engine to take out of its
    /// watch and close.
    fn retire(&mut self, i: usize) {
        let fd = match i {
            INPUT => self.input.take(),
            OUTPUT => self.output.take(),
            _ => self.diagnostics.take().map(OwnedFd::from),
        };
        if let Some(fd) = fd {
            self.retired[i] = Some(fd);
        }
    }

    /// The program closed its output.
    fn output_done(&mut self, log: &mut Logger) -> Gave {
        self.retire(OUTPUT);
        // What it wrote to stderr before (a script's last words before
        // `exit 3`) is in the pipe now, whether or not the loop has seen
        // it readable yet: read before the answer ends and the pipe with
        // it (under load the output's end came first, and the reason a
        // 502 was for was lost).
        self.ready[DIAGNOSTICS] = true;
        self.read_diagnostics(log);
        self.log_line(log);
        if self.dechunk.is_short() {
            Gave::Cut("chunked output ended without its last chunk".into())
        } else if self.started {
            Gave::End
        } else {
            let why = "exited without a complete response header";
            Gave::Fail(Status::BAD_GATEWAY, why.into())
        }
    }

    /// The head in the output so far (all of it, when `ended`), or
    /// `None` while it is not complete.
    fn head(&mut self, ended: bool) -> Option<Gave> {
        match self.reply.start(&self.head_buf, ended) {
            ReplyStart::Incomplete => None,
            ReplyStart::Invalid(why) => {
                let why = format!("invalid response header: {why}");
                Some(Gave::Fail(Status::BAD_GATEWAY, why))
            }
            ReplyStart::Redirect(target) => Some(Gave::Redirect(target)),
            ReplyStart::Head(head) => {
                self.started = true;
                if head.chunked {
                    self.dechunk = Unframe::new(BodyFraming::Chunked, self.max_trailers);
                }
                self.rest = self.head_buf.split_off(head.len);
                self.head_buf = Vec::new();
                Some(Gave::Head(head, None))
            }
        }
    }

    /// Closes the input.
    fn close_input(&mut self) {
        self.retire(INPUT);
        self.outbox.clear();
    }
}

impl Produce for PipeBody {
    fn label(&self) -> &str {
        &self.label
    }

    fn idle_timeout(&self, _handler: Duration) -> Duration {
        self.idle_timeout
    }

    fn timeout_why(&self) -> &'static str {
        "timed out; killed"
    }

    fn is_process(&self) -> bool {
        true
    }

    fn next(&mut self, _room: usize, buf: &mut Vec<u8>, cx: &mut Cx<'_>) -> Gave {
        if self.dechunk.is_bad() {
            return Gave::Cut("bad chunked coding in its output".into());
        }
        if !self.rest.is_empty() {
            buf.clear();
            buf.extend_from_slice(&self.rest);
            self.rest = Vec::new();
            return self.body(buf);
        }
        loop {
            if !self.ready[OUTPUT] {
                return Gave::Pending;
            }
            let Some(fd) = self.output.as_ref() else {
                return Gave::Pending;
            };
            buf.clear();
            buf.reserve(PIECE);
            match read_into_spare(fd, buf) {
                // (A head that waited for the output's end, which it
                // may have been all of: its head then goes first, the end
                // at the next call.)
                Ok(0) if !self.started && !self.head_buf.is_empty() => {
                    return match self.head(true) {
                        Some(gave) => gave,
                        None => self.output_done(cx.log),
                    }
                }
                Ok(0) => return self.output_done(cx.log),
                Ok(_) if self.started => return self.body(buf),
                Ok(_) if cx.raw_ok && self.reply.is_raw() => {
                    // (A whole HTTP/1.x answer the sink passes as it is.)
                    self.started = true;
                    return Gave::Bytes;
                }
                Ok(_) => {
                    self.head_buf.extend_from_slice(buf);
                    buf.clear();
                    if let Some(gave) = self.head(false) {
                        return gave;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => self.ready[OUTPUT] = false,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return self.output_done(cx.log),
            }
        }
    }

    fn stop(&mut self) {
        self.stopped = true;
        self.reply.stop();
    }

    fn sources(&self) -> [Option<(std::os::fd::RawFd, Want)>; 3] {
        [
            self.input.as_ref().map(|fd| (fd.as_raw_fd(), Want::Write)),
            self.output.as_ref().map(|fd| (fd.as_raw_fd(), Want::Read)),
            self.diagnostics
                .as_ref()
                .map(|f| (f.as_raw_fd(), Want::Read)),
        ]
    }

    fn ready(&mut self, i: usize) {
        if let Some(r) = self.ready.get_mut(i) {
            *r = true;
        }
    }

    fn retired(&mut self) -> Option<OwnedFd> {
        self.retired.iter_mut().find_map(Option::take)
    }

    fn tend(&mut self, cx: &mut Cx<'_>) {
        self.read_diagnostics(cx.log);
        if self.stopped {
            // (A line it could not end.)
            self.log_line(cx.log);
        }
    }

    fn input(&mut self) -> Option<&mut dyn Input> {
        Some(self)
    }

    fn raw(&self) -> bool {
        self.reply.is_raw()
    }
}

impl Input for PipeBody {
    fn room(&self) -> usize {
        match self.input {
            Some(_) => self.outbox.room(),
            None => usize::MAX,
        }
    }

    fn feed(&mut self, data: &[u8]) {
        if self.input.is_some() {
            self.outbox.push(data, true);
        }
    }

    fn write(&mut self) -> Result<Wrote, InputEnd> {
        let Some(fd) = self.input.as_ref() else {
            return Ok(Wrote::default());
        };
        let wrote = self
            .outbox
            .write_to(&mut self.ready[INPUT], &mut |b| write_fd(fd, b));
        match wrote {
            Ok(wrote) => {
                if self.outbox.done() {
                    self.close_input();
                }
                Ok(wrote)
            }
            Err(OutboxError::Held(e)) => Err(InputEnd::Unreadable(e.to_string())),
            Err(OutboxError::Write(_)) => {
                // The program does not read its input (EPIPE).
                self.close_input();
                Err(InputEnd::Refused)
            }
        }
    }

    fn end(&mut self) {
        self.outbox.body_end = true;
        if self.outbox.is_empty() {
            self.close_input();
        }
    }

    fn close(&mut self) {
        self.close_input();
    }

    fn is_closed(&self) -> bool {
        self.input.is_none()
    }

    fn held(&self) -> bool {
        self.outbox.held()
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;
    use std::io::Write as _;
    use std::rc::Rc;

    use super::*;
    use crate::config::AccessFormat;
    use crate::handlers::pipe::ReplyHead;
    use crate::handlers::relay::INPUT_CAP;
    use crate::handlers::spool::Spool;
    use crate::log::{memory, Memory};
    use crate::sys::spawn::exit_pipe;

    /// A reply protocol for tests: the head is the lines before the
    /// first blank one; `Location: x` redirects, `bad` is invalid, a
    /// last line `chunked` says the body is in chunked coding.
    #[derive(Debug)]
    struct Reply {
        raw: bool,
        stops: Rc<Cell<u32>>,
    }

    impl PipeReply for Reply {
        fn is_raw(&self) -> bool {
            self.raw
        }

        fn start(&mut self, out: &[u8], _ended: bool) -> ReplyStart {
            let Some(end) = out.windows(4).position(|w| w == b"\r\n\r\n") else {
                return ReplyStart::Incomplete;
            };
            let lines = &out[..end + 2];
            if let Some(to) = lines.strip_prefix(b"Location: ") {
                return ReplyStart::Redirect(to[..to.len() - 2].to_vec());
            }
            if lines == b"bad\r\n" {
                return ReplyStart::Invalid("bad head");
            }
            ReplyStart::Head(ReplyHead {
                len: end + 4,
                status: 200,
                reason: None,
                headers: lines.to_vec(),
                content_length: None,
                chunked: lines.ends_with(b"chunked\r\n"),
                own: Default::default(),
            })
        }

        fn stop(&mut self) {
            self.stops.set(self.stops.get() + 1);
        }
    }

    /// A program's pipes seen from its side: what it writes as output
    /// and diagnostics, what it reads as input.
    struct Program {
        output: Option<OwnedFd>,
        diagnostics: Option<OwnedFd>,
        input: File,
        stops: Rc<Cell<u32>>,
    }

    impl Program {
        fn say(&mut self, bytes: &[u8]) {
            File::from(self.output.as_ref().unwrap().try_clone().unwrap())
                .write_all(bytes)
                .unwrap();
        }

        fn complain(&mut self, bytes: &[u8]) {
            File::from(self.diagnostics.as_ref().unwrap().try_clone().unwrap())
                .write_all(bytes)
                .unwrap();
        }
    }

    /// A body for a program reached by pipes, and the program's ends.
    fn started(raw: bool, has_body: bool, held: Option<Spool>) -> (PipeBody, Program) {
        let (out_r, out_w) = exit_pipe().unwrap();
        let (diag_r, diag_w) = exit_pipe().unwrap();
        let (in_r, in_w) = exit_pipe().unwrap();
        let stops = Rc::new(Cell::new(0));
        let pipe = Pipe {
            output: out_r,
            input: in_w,
            diagnostics: diag_r,
            held,
            has_body,
            label: "cgi /x".into(),
            idle_timeout: Duration::from_secs(7),
            reply: Box::new(Reply {
                raw,
                stops: Rc::clone(&stops),
            }),
        };
        let program = Program {
            output: Some(out_w),
            diagnostics: Some(diag_w),
            input: File::from(in_r),
            stops,
        };
        (PipeBody::new(pipe, 8192), program)
    }

    /// What `next` gives now, as text (body bytes in place of `Bytes`).
    fn next(p: &mut PipeBody, m: &Memory, raw_ok: bool) -> String {
        let mut log = m.service.handle();
        let mut cx = Cx {
            log: &mut log,
            raw_ok,
        };
        let mut buf = Vec::new();
        p.ready(OUTPUT);
        let text = match p.next(1024, &mut buf, &mut cx) {
            Gave::Pending => "pending".to_string(),
            Gave::Head(h, _) => format!("head {:?}", String::from_utf8_lossy(&h.headers)),
            Gave::Interim(h) => format!("interim {}", h.status),
            Gave::Bytes => format!("bytes {}", String::from_utf8_lossy(&buf)),
            Gave::Last => format!("last {}", String::from_utf8_lossy(&buf)),
            Gave::End => "end".into(),
            Gave::Cut(why) => format!("cut {why}"),
            Gave::Redirect(to) => format!("redirect {}", String::from_utf8_lossy(&to)),
            Gave::Fail(s, why) => format!("fail {} {why}", s.0),
        };
        log.flush();
        text
    }

    fn logs() -> Memory {
        memory(AccessFormat::Common, Level::Info, 16)
    }

    /// What the error log holds once `m` is shut down.
    fn errors(m: Memory) -> String {
        m.service.shutdown();
        let text = String::from_utf8_lossy(&m.error.lock().unwrap()).into_owned();
        text
    }

    #[test]
    fn the_head_then_the_body_as_it_comes_then_the_end() {
        let m = logs();
        let (mut p, mut prog) = started(false, false, None);
        assert_eq!(next(&mut p, &m, false), "pending");
        prog.say(b"X: 1\r");
        assert_eq!(next(&mut p, &m, false), "pending");
        prog.say(b"\n\r\nhel");
        assert_eq!(next(&mut p, &m, false), "head \"X: 1\\r\\n\"");
        assert_eq!(next(&mut p, &m, false), "bytes hel");
        assert_eq!(next(&mut p, &m, false), "pending");
        prog.say(b"lo");
        prog.output = None;
        assert_eq!(next(&mut p, &m, false), "bytes lo");
        assert_eq!(next(&mut p, &m, false), "end");
        assert_eq!(p.idle_timeout(Duration::ZERO), Duration::from_secs(7));
        assert_eq!(p.label(), "cgi /x");
    }

    #[test]
    fn a_bad_head_or_none_is_a_502_and_a_location_a_redirect() {
        let m = logs();
        let (mut p, mut prog) = started(false, false, None);
        prog.say(b"bad\r\n\r\n");
        assert_eq!(
            next(&mut p, &m, false),
            "fail 502 invalid response header: bad head"
        );
        let (mut p, mut prog) = started(false, false, None);
        prog.say(b"X: 1\r\n");
        prog.output = None;
        assert_eq!(
            next(&mut p, &m, false),
            "fail 502 exited without a complete response header"
        );
        let (mut p, mut prog) = started(false, false, None);
        prog.say(b"Location: /y\r\n\r\n");
        assert_eq!(next(&mut p, &m, false), "redirect /y");
        p.stop();
        assert_eq!(prog.stops.get(), 1);
    }

    #[test]
    fn a_chunked_body_is_decoded_unless_it_passes_raw() {
        let m = logs();
        let answer = b"chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n";
        let (mut p, mut prog) = started(true, false, None);
        prog.say(answer);
        prog.output = None;
        assert_eq!(next(&mut p, &m, false), "head \"chunked\\r\\n\"");
        assert_eq!(next(&mut p, &m, false), "bytes abcde");
        assert_eq!(next(&mut p, &m, false), "end");
        assert!(p.raw());
        // (A sink that takes it raw gets the program's bytes as they are.)
        let (mut p, mut prog) = started(true, false, None);
        prog.say(answer);
        let raw = String::from_utf8_lossy(answer);
        assert_eq!(next(&mut p, &m, true), format!("bytes {raw}"));
        // Bad coding: what decoded goes, then the answer is cut.
        let (mut p, mut prog) = started(true, false, None);
        prog.say(b"chunked\r\n\r\n3\r\nabc\r\nzz\r\n");
        next(&mut p, &m, false);
        assert_eq!(next(&mut p, &m, false), "bytes abc");
        assert_eq!(
            next(&mut p, &m, false),
            "cut bad chunked coding in its output"
        );
        // An end without the last chunk: what came went out, then the cut.
        let (mut p, mut prog) = started(true, false, None);
        prog.say(b"chunked\r\n\r\n3\r\nabc\r\n");
        prog.output = None;
        next(&mut p, &m, false);
        assert_eq!(next(&mut p, &m, false), "bytes abc");
        assert_eq!(
            next(&mut p, &m, false),
            "cut chunked output ended without its last chunk"
        );
    }

    /// A program that wrote its reason to stderr and exited without a
    /// head: the reason is logged with the 502, though the loop saw only
    /// the output's end (the order a loaded machine gives).
    #[test]
    fn diagnostics_written_before_the_output_ends_are_logged_with_it() {
        let m = logs();
        let (mut p, mut prog) = started(false, false, None);
        prog.complain(b"noheader: missing settings file\n");
        prog.output = None;
        assert_eq!(
            next(&mut p, &m, false),
            "fail 502 exited without a complete response header"
        );
        let text = errors(m);
        assert!(
            text.lines()
                .any(|l| l.ends_with("cgi /x: noheader: missing settings file")),
            "{text}"
        );
    }

    #[test]
    fn diagnostics_go_to_the_log_line_by_line() {
        let m = logs();
        let (mut p, mut prog) = started(false, false, None);
        let mut log = m.service.handle();
        prog.complain(b"one\ntw");
        p.ready(DIAGNOSTICS);
        p.tend(&mut Cx {
            log: &mut log,
            raw_ok: false,
        });
        prog.complain(b"o\nthree");
        prog.diagnostics = None;
        p.ready(DIAGNOSTICS);
        p.tend(&mut Cx {
            log: &mut log,
            raw_ok: false,
        });
        assert!(p.sources()[DIAGNOSTICS].is_none());
        log.flush();
        drop(log);
        let text = errors(m);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3, "{text}");
        for (line, want) in lines
            .iter()
            .zip(["cgi /x: one", "cgi /x: two", "cgi /x: three"])
        {
            assert!(line.ends_with(want), "{text}");
        }
    }

    #[test]
    fn the_body_goes_to_the_input_and_it_closes_at_the_end() {
        let (mut p, mut prog) = started(false, true, None);
        let sources = p.sources();
        assert_eq!(sources[INPUT].map(|s| s.1), Some(Want::Write));
        assert_eq!(sources[OUTPUT].map(|s| s.1), Some(Want::Read));
        let input = p.input().unwrap();
        assert_eq!(input.room(), INPUT_CAP);
        input.feed(b"abc");
        assert_eq!(input.room(), INPUT_CAP - 3);
        assert_eq!(
            input.write(),
            Ok(Wrote {
                moved: true,
                client: 3
            })
        );
        assert!(!input.is_closed() && !input.held());
        input.feed(b"de");
        input.end();
        assert_eq!(
            input.write(),
            Ok(Wrote {
                moved: true,
                client: 2
            })
        );
        assert!(input.is_closed());
        assert_eq!(input.room(), usize::MAX);
        // (It ends for the program once the engine lets it go.)
        assert!(p.sources()[INPUT].is_none());
        while p.retired().is_some() {}
        let mut got = String::new();
        prog.input.read_to_string(&mut got).unwrap();
        assert_eq!(got, "abcde");
    }

    #[test]
    fn a_held_body_is_written_without_credit_and_none_means_closed() {
        let mut held = Spool::default();
        held.push(b"whole", std::path::Path::new("/nonexistent"));
        let (mut p, mut prog) = started(false, true, Some(held));
        let input = p.input().unwrap();
        assert!(input.held());
        assert_eq!(
            input.write(),
            Ok(Wrote {
                moved: true,
                client: 0
            })
        );
        assert!(input.is_closed());
        while p.retired().is_some() {}
        let mut got = String::new();
        prog.input.read_to_string(&mut got).unwrap();
        assert_eq!(got, "whole");
        let (mut p, _) = started(false, false, None);
        assert!(p.sources()[INPUT].is_none());
        assert!(p.input().unwrap().is_closed());
    }

    #[test]
    fn a_program_that_does_not_read_refuses_its_input() {
        let (mut p, prog) = started(false, true, None);
        drop(prog.input);
        let input = p.input().unwrap();
        input.feed(b"abc");
        assert_eq!(input.write(), Err(InputEnd::Refused));
        assert!(input.is_closed());
        input.feed(b"dropped");
        assert_eq!(input.room(), usize::MAX);
    }

    #[test]
    fn a_stopped_program_has_its_unended_line_logged() {
        let m = logs();
        let (mut p, mut prog) = started(false, false, None);
        let mut log = m.service.handle();
        prog.complain(b"half a li");
        p.ready(DIAGNOSTICS);
        p.tend(&mut Cx {
            log: &mut log,
            raw_ok: false,
        });
        p.stop();
        p.tend(&mut Cx {
            log: &mut log,
            raw_ok: false,
        });
        log.flush();
        drop(log);
        assert!(errors(m).ends_with("cgi /x: half a li\n"));
        assert_eq!(prog.stops.get(), 1);
    }

    #[test]
    fn closed_pipes_wait_for_the_engine_to_let_them_go() {
        let m = logs();
        let (mut p, mut prog) = started(false, true, None);
        assert!(p.retired().is_none());
        p.input().unwrap().close();
        prog.output = None;
        assert_eq!(
            next(&mut p, &m, false),
            "fail 502 exited without a complete response header"
        );
        let sources = p.sources();
        assert!(sources[INPUT].is_none() && sources[OUTPUT].is_none());
        // Both are still open, for the engine to take out of its watch.
        let mut kept = 0;
        while let Some(fd) = p.retired() {
            assert!(fd.as_raw_fd() >= 0);
            kept += 1;
        }
        assert_eq!(kept, 2);
        // (The program sees its input's end once they are dropped.)
        let mut got = Vec::new();
        prog.input.read_to_end(&mut got).unwrap();
        assert!(got.is_empty());
    }
}
