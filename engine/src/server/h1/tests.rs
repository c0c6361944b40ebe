//! The protocol driven by byte scripts, without sockets: a small driver
//! feeds bytes the way a worker does (what a read did not consume waits
//! for the next one) and answers each request as a router would.

use std::path::Path;
use std::time::{Duration, Instant};

use super::*;
use crate::handlers::pipe::ReplyHead;
use crate::handlers::{Body, Plan, Scratch};
use crate::http::body::BodyLimits;
use crate::http::response::{Encoder, Stamp};
use crate::http::{Status, Version};
use crate::server::exchange::{Exchange, Exchanges, Task};
use crate::server::transport::Out;
use crate::server::waits::{AuthWait, HandlerWait, Held, Wait};

const LIMITS: Limits = Limits {
    max_request_line: 8192,
    max_head: 8192,
    max_headers: 100,
};

const BODY_LIMITS: BodyLimits = BodyLimits {
    max_body: 1 << 20,
    max_chunk_ext: 4096,
    max_trailers: 8192,
};

/// A connection and the server around it: requests for `/upload` are
/// held until their body is in and answered `got N`; anything else is
/// answered `ok` at once (its body, if any, is read and dropped).
struct Script {
    conn: Conn,
    life: Life,
    req: OwnedRequest,
    pending: Vec<u8>,
    out: Out,
    scratch: Scratch,
    max_requests: u32,
    draining: bool,
    now: Instant,
    /// What the server was asked to do, in order.
    seen: Vec<String>,
    /// Where held requests wait (a worker's table).
    exchanges: Exchanges,
}

impl Script {
    fn new() -> Script {
        let now = Instant::now();
        Script {
            conn: Conn::new(),
            life: Life::new(now),
            req: OwnedRequest::default(),
            pending: Vec::new(),
            out: Out::with_capacity(1024),
            scratch: Scratch::default(),
            max_requests: 100,
            draining: false,
            now,
            seen: Vec::new(),
            exchanges: Exchanges::new(),
        }
    }

    fn answering(&self) -> Answering<'static> {
        Answering {
            stamp: Stamp {
                server: b"brisk",
                date: b"<date>",
                #[cfg(feature = "http3")]
                alt_svc: b"",
            },
            max_requests: self.max_requests,
            draining: self.draining,
            now: self.now,
        }
    }

    /// Bytes arrive; everything they make possible happens.
    fn feed(&mut self, bytes: &[u8]) {
        let mut input = std::mem::take(&mut self.pending);
        input.extend_from_slice(bytes);
        let mut pos = 0;
        loop {
            let cx = Reading {
                limits: &LIMITS,
                temp_dir: Path::new("/nonexistent"),
                output: self.out.buffered(),
                paced: false,
                now: self.now,
            };
            let ex = &mut self.exchanges;
            match self
                .conn
                .read(&mut self.life, &input, &mut pos, &mut self.req, &cx, ex)
            {
                Event::Stall => break,
                Event::Request => self.route(),
                Event::Invalid(e) => {
                    self.seen.push(format!("invalid {}", e.status.0));
                    let plan = Plan::error(e.status, &mut self.scratch);
                    let cx = self.answering();
                    self.conn
                        .reject(&mut self.life, plan, &self.scratch, &mut self.out, &cx);
                }
                Event::BodyGrew => {}
                Event::BodyDone(BodyOver::Wait(id)) => {
                    let Some(Wait::Handler(h)) = self.exchanges.take_wait(id) else {
                        unreachable!("only handlers wait here")
                    };
                    self.seen.push(format!("handler got {}", h.body.len()));
                    self.req = h.held.req;
                    let text = format!("got {}", h.body.len());
                    self.reply(text.as_bytes(), None);
                }
                Event::BodyDone(_) => self.seen.push("body dropped".into()),
                Event::BodyRefused(e, waiting) => {
                    let whose = match waiting {
                        BodyOver::Wait(_) => "handler",
                        BodyOver::Nothing => "nobody",
                        _ => "other",
                    };
                    self.seen
                        .push(format!("body refused {} ({whose})", e.status.0));
                    self.life.close();
                }
            }
        }
        if !self.life.closing() {
            self.pending = input[pos..].to_vec();
        }
        self.conn
            .settle(&mut self.life, !self.pending.is_empty(), self.now);
    }

    fn route(&mut self) {
        let target = String::from_utf8_lossy(self.req.target()).into_owned();
        self.seen.push(format!(
            "{} {target}",
            String::from_utf8_lossy(self.req.method_token())
        ));
        let decoder = match self.req.body() {
            crate::http::parse::BodyFraming::None => None,
            framing => Some(BodyDecoder::new(framing, &BODY_LIMITS).unwrap()),
        };
        if target == "/private" {
            // Its password is checked off the loop (see `checked`).
            let held = Held {
                req: std::mem::take(&mut self.req),
                started: self.now,
                redirects: 0,
                body_max: u64::MAX,
                #[cfg(feature = "cold-lookups")]
                colds: 0,
            };
            let wait = Wait::Check(AuthWait::new(held, false));
            let id = self.hold(wait);
            self.conn.hold(&mut self.life, id, self.now);
            return;
        }
        if target == "/upload" {
            if let Some(decoder) = decoder {
                let expect = self.req.expect_continue();
                let wait = HandlerWait {
                    mount: 0,
                    held: Held {
                        req: std::mem::take(&mut self.req),
                        started: self.now,
                        redirects: 0,
                        body_max: u64::MAX,
                        #[cfg(feature = "cold-lookups")]
                        colds: 0,
                    },
                    body: Vec::new(),
                    counted: 0,
                };
                let to = self.hold(Wait::Handler(wait));
                self.conn.wait_for_body(
                    &mut self.life,
                    expect,
                    decoder,
                    to,
                    &mut self.out,
                    self.now,
                );
                return;
            }
        }
        match target.as_str() {
            // What a conditional GET of an unchanged file gets.
            "/unchanged" => self.reply_with(Status::NOT_MODIFIED, Body::Empty, decoder),
            _ => self.reply(b"ok", decoder),
        }
    }

    /// Keeps `wait` in the table, as the worker does (connection 7).
    fn hold(&mut self, wait: Wait) -> ExchangeId {
        self.exchanges.insert(Exchange {
            conn: 7,
            stream: None,
            task: Task::Wait(wait),
        })
    }

    /// What the request held waits for, taken out of the table.
    fn take_wait(&mut self) -> Option<Wait> {
        let id = self.conn.take_wait()?;
        self.exchanges.take_wait(id)
    }

    fn reply(&mut self, body: &[u8], decoder: Option<BodyDecoder>) {
        self.scratch.clear();
        self.scratch.body.extend_from_slice(body);
        self.reply_with(Status::OK, Body::Buffer, decoder);
    }

    fn reply_with(&mut self, status: Status, body: Body, decoder: Option<BodyDecoder>) {
        let plan = Plan {
            status,
            body,
            close: false,
        };
        let cx = self.answering();
        let out = &mut self.out;
        self.conn
            .answer(
                &mut self.life,
                &self.req,
                plan,
                &self.scratch,
                decoder,
                out,
                &cx,
            )
            .unwrap();
    }

    /// What was written since the last call.
    fn output(&mut self) -> String {
        let text = String::from_utf8(self.out.buffered_bytes().to_vec()).unwrap();
        self.out.clear();
        text
    }

    fn seen(&mut self) -> Vec<String> {
        std::mem::take(&mut self.seen)
    }

    /// The password check of the request held is done: the driver takes
    /// it and answers it (as the worker routes it again), then goes on.
    fn checked(&mut self) {
        let conn = self
            .conn
            .wait()
            .and_then(|id| self.exchanges.get(id))
            .map(|ex| ex.conn);
        match self.take_wait() {
            Some(Wait::Check(w)) => {
                self.seen.push(format!("checked {}", conn.unwrap()));
                self.req = w.held.req;
            }
            other => panic!("{other:?}"),
        }
        self.reply(b"ok", None);
        self.feed(b"");
    }
}

/// A 200 with body `body`, and the `Connection` line given (if any).
fn ok(body: &str, connection: &str) -> String {
    format!(
        "HTTP/1.1 200 OK\r\nServer: brisk\r\nDate: <date>\r\nContent-Length: {}\r\n{connection}\r\n{body}",
        body.len()
    )
}

const CLOSE: &str = "Connection: close\r\n";

#[test]
fn pipelined_requests_are_answered_in_order_in_one_batch() {
    let mut s = Script::new();
    s.feed(b"GET /a HTTP/1.1\r\nHost: x\r\n\r\nGET /b HTTP/1.1\r\nHost: x\r\n\r\nGET /c HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_eq!(s.seen(), ["GET /a", "GET /b", "GET /c"]);
    assert_eq!(s.output(), ok("ok", "").repeat(3));
    assert_eq!(s.life.served(), 3);
    assert!(matches!(s.conn.state(), State::Idle));
    assert!(!s.life.closing());
}

#[test]
fn a_head_that_arrives_in_pieces_is_answered_once_whole() {
    let req = b"GET /split HTTP/1.1\r\nHost: x\r\nUser-Agent: t\r\n\r\n";
    for cut in 1..req.len() {
        let mut s = Script::new();
        s.feed(&req[..cut]);
        assert!(s.seen().is_empty(), "cut at {cut}");
        assert!(matches!(s.conn.state(), State::Head), "cut at {cut}");
        assert_eq!(s.conn.timer(), Timer::Head);
        let started = s.life.since();
        s.now += Duration::from_millis(5);
        s.feed(b"");
        assert_eq!(s.life.since(), started, "the head's timer runs on");
        s.feed(&req[cut..]);
        assert_eq!(s.seen(), ["GET /split"], "cut at {cut}");
        assert_eq!(s.output(), ok("ok", ""));
        assert_eq!(s.conn.timer(), Timer::Idle);
    }
}

#[test]
fn a_pipelined_request_cut_short_waits_for_the_rest() {
    let mut s = Script::new();
    s.feed(b"GET /a HTTP/1.1\r\nHost: x\r\n\r\nGET /b HT");
    assert_eq!(s.seen(), ["GET /a"]);
    assert!(matches!(s.conn.state(), State::Head));
    s.feed(b"TP/1.1\r\nHost: x\r\n\r\n");
    assert_eq!(s.seen(), ["GET /b"]);
    assert_eq!(s.output(), ok("ok", "").repeat(2));
}

#[test]
fn a_body_in_one_byte_pieces_reaches_its_handler_whole() {
    for (head, body) in [
        (
            &b"POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\n"[..],
            &b"hello"[..],
        ),
        (
            &b"POST /upload HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"[..],
            &b"3\r\nhel\r\n2;x=y\r\nlo\r\n0\r\nTrailer: t\r\n\r\n"[..],
        ),
    ] {
        let mut s = Script::new();
        s.feed(head);
        assert_eq!(s.seen(), ["POST /upload"]);
        assert_eq!(s.conn.timer(), Timer::Body);
        for (i, b) in body.iter().enumerate() {
            assert!(s.output().is_empty(), "nothing answered before byte {i}");
            assert!(s.conn.reading_body());
            s.feed(&[*b]);
        }
        assert_eq!(s.seen(), ["handler got 5"]);
        assert_eq!(s.output(), ok("got 5", ""));
        assert!(!s.conn.reading_body());
        // The connection goes on with the next request.
        s.feed(b"GET /next HTTP/1.1\r\nHost: x\r\n\r\n");
        assert_eq!(s.seen(), ["GET /next"]);
    }
}

#[test]
fn a_client_that_leaves_mid_body_leaves_its_handler_unrun() {
    let mut s = Script::new();
    s.feed(b"POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nabcd");
    assert_eq!(s.seen(), ["POST /upload"]);
    // The client closes here: the body can never be complete. The driver
    // sees that a body is in flight and drops what waits for it.
    assert!(s.conn.reading_body());
    match s.take_wait() {
        Some(Wait::Handler(h)) => assert_eq!(h.body, b"abcd"),
        other => panic!("{other:?}"),
    }
    assert!(s.output().is_empty(), "the handler never ran");
    assert!(!s.conn.reading_body());
}

#[test]
fn the_body_of_an_answered_request_is_read_and_dropped() {
    let mut s = Script::new();
    s.feed(b"POST /form HTTP/1.1\r\nHost: x\r\nContent-Length: 6\r\n\r\nab");
    assert_eq!(s.seen(), ["POST /form"]);
    assert_eq!(s.output(), ok("ok", ""), "answered before its body");
    assert!(s.conn.reading_body());
    s.feed(b"cdefGET /b HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_eq!(s.seen(), ["body dropped", "GET /b"]);
    assert_eq!(s.output(), ok("ok", ""));
}

#[test]
fn a_bad_body_refuses_what_waits_for_it() {
    let mut s = Script::new();
    s.feed(b"POST /upload HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcX");
    assert_eq!(s.seen(), ["POST /upload", "body refused 400 (handler)"]);
    assert!(s.life.closing());
}

#[test]
fn an_invalid_head_is_answered_and_nothing_after_it_is_read() {
    let mut s = Script::new();
    s.feed(b"GET /a HTTP/1.1\r\nHost: x\r\n\r\nGET /b HTTP/1.1\nHost: x\r\n\r\nGET /c HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_eq!(s.seen(), ["GET /a", "invalid 400"]);
    let out = s.output();
    assert!(out.starts_with(&ok("ok", "")));
    assert!(out.contains("HTTP/1.1 400 Bad Request\r\n"));
    assert!(out.contains(CLOSE));
    assert!(s.life.closing());
    s.feed(b"GET /d HTTP/1.1\r\nHost: x\r\n\r\n");
    assert!(s.seen().is_empty(), "a closing connection reads no request");
}

#[test]
fn http_1_0_closes_unless_it_asks_to_keep_alive() {
    let mut s = Script::new();
    s.feed(b"GET /a HTTP/1.0\r\n\r\n");
    assert_eq!(s.output(), ok("ok", CLOSE));
    assert!(s.life.closing());

    let mut s = Script::new();
    s.feed(b"GET /a HTTP/1.0\r\nConnection: keep-alive\r\n\r\nGET /b HTTP/1.0\r\n\r\n");
    assert_eq!(s.seen(), ["GET /a", "GET /b"]);
    assert_eq!(
        s.output(),
        ok("ok", "Connection: keep-alive\r\n") + &ok("ok", CLOSE)
    );
}

#[test]
fn connection_close_is_the_last_request_read() {
    let mut s = Script::new();
    s.feed(b"GET /a HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\nGET /b HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_eq!(s.seen(), ["GET /a"]);
    assert_eq!(s.output(), ok("ok", CLOSE));
    assert!(s.life.closing());
}

#[test]
fn keepalive_requests_caps_the_requests_of_a_connection() {
    let mut s = Script::new();
    s.max_requests = 2;
    s.feed(b"GET /a HTTP/1.1\r\nHost: x\r\n\r\n".repeat(3).as_slice());
    assert_eq!(s.seen(), ["GET /a", "GET /a"]);
    assert_eq!(s.output(), ok("ok", "") + &ok("ok", CLOSE));
    assert!(s.life.closing());
}

#[test]
fn an_unread_body_after_expect_continue_closes_the_connection() {
    // Answered without 100 Continue: whether the body follows is open
    // (RFC 9110 §10.1.1), so nothing after it can be read as a request.
    let mut s = Script::new();
    s.feed(b"POST /form HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n");
    assert_eq!(s.output(), ok("ok", CLOSE));
    assert!(s.life.closing());
}

#[test]
fn expect_continue_is_answered_when_the_body_is_wanted() {
    let mut s = Script::new();
    s.feed(
        b"POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nExpect: 100-continue\r\n\r\n",
    );
    assert_eq!(s.output(), "HTTP/1.1 100 Continue\r\n\r\n");
    s.feed(b"hi");
    assert_eq!(s.output(), ok("got 2", ""));
    assert!(!s.life.closing());
}

#[test]
fn a_draining_server_closes_after_each_answer() {
    let mut s = Script::new();
    s.feed(b"GET /a HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_eq!(s.output(), ok("ok", ""));
    s.draining = true;
    s.feed(b"GET /b HTTP/1.1\r\nHost: x\r\n\r\nGET /c HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_eq!(s.seen(), ["GET /a", "GET /b"]);
    assert_eq!(s.output(), ok("ok", CLOSE));
    assert!(s.life.closing());
}

#[test]
fn pipelined_requests_wait_while_much_output_does() {
    let mut s = Script::new();
    s.out.push_bytes(&vec![b'x'; OUTPUT_CAP]);
    s.feed(b"GET /a HTTP/1.1\r\nHost: x\r\n\r\n");
    assert!(s.seen().is_empty());
    s.out.clear();
    s.feed(b"");
    assert_eq!(s.seen(), ["GET /a"]);
}

#[test]
fn streamed_answers_are_framed_by_what_the_process_said() {
    let cx = Script::new().answering();
    let head = |content_length, status| ReplyHead {
        len: 0,
        status,
        reason: None,
        headers: b"Content-Type: text/plain\r\n".to_vec(),
        content_length,
        chunked: false,
        own: Default::default(),
    };
    let to = |wanted, version, head_only| StreamFor {
        served: 1,
        wanted,
        version,
        head_only,
        trailers: false,
    };
    let cases = [
        // A length is kept, and so is the connection.
        (
            head(Some(3), 200),
            to(true, Version::Http11, false),
            "Content-Length: 3\r\n",
            true,
            Encoder::Length(3),
        ),
        // No length: chunked where the connection may stay open...
        (
            head(None, 200),
            to(true, Version::Http11, false),
            "Transfer-Encoding: chunked\r\n",
            true,
            Encoder::Chunked,
        ),
        // ...else delimited by closing it.
        (
            head(None, 200),
            to(true, Version::Http10, false),
            CLOSE,
            false,
            Encoder::Close,
        ),
        (
            head(None, 200),
            to(false, Version::Http11, false),
            CLOSE,
            false,
            Encoder::Close,
        ),
        // A HEAD answer has no body to delimit.
        (
            head(None, 200),
            to(true, Version::Http11, true),
            "",
            true,
            Encoder::Discard,
        ),
        (
            head(None, 304),
            to(true, Version::Http11, false),
            "",
            true,
            Encoder::Discard,
        ),
    ];
    for (head, to, line, keep, encoder) in cases {
        let mut buf = Vec::new();
        let stream = stream_head(&head, to, &mut buf, &cx);
        let text = String::from_utf8(buf).unwrap();
        assert!(
            text.ends_with(&format!("Content-Type: text/plain\r\n{line}\r\n")),
            "{text}"
        );
        assert_eq!((stream.keep, stream.encoder), (keep, encoder), "{text}");
    }
    let mut draining = cx;
    draining.draining = true;
    let stream = stream_head(
        &head(Some(1), 200),
        to(true, Version::Http11, false),
        &mut Vec::new(),
        &draining,
    );
    assert!(!stream.keep);
}

#[test]
fn a_head_answer_has_no_body_and_keeps_the_connection() {
    let mut s = Script::new();
    s.feed(b"HEAD /a HTTP/1.1\r\nHost: x\r\n\r\nGET /b HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_eq!(s.seen(), ["HEAD /a", "GET /b"]);
    // The length of the body a GET would get (RFC 9110 §9.3.2), no body.
    let head = ok("ok", "");
    let head = head.strip_suffix("ok").unwrap();
    assert_eq!(s.output(), head.to_string() + &ok("ok", ""));
    assert!(!s.life.closing());
}

#[test]
fn a_304_has_no_length_nor_body_and_keeps_the_connection() {
    let mut s = Script::new();
    s.feed(b"GET /unchanged HTTP/1.1\r\nHost: x\r\n\r\nGET /b HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_eq!(s.seen(), ["GET /unchanged", "GET /b"]);
    // RFC 9110 §8.6, §15.4.5: a 304 ends at its head.
    let not_modified = "HTTP/1.1 304 Not Modified\r\nServer: brisk\r\nDate: <date>\r\n\r\n";
    assert_eq!(s.output(), not_modified.to_string() + &ok("ok", ""));
    assert!(!s.life.closing());
}

#[test]
fn a_streamed_answer_without_a_length_is_chunked_on_a_kept_connection() {
    let cx = Script::new().answering();
    let head = ReplyHead {
        len: 0,
        status: 200,
        reason: None,
        headers: Vec::new(),
        content_length: None,
        chunked: false,
        own: Default::default(),
    };
    let stream_for = |version| StreamFor {
        served: 1,
        wanted: true,
        version,
        head_only: false,
        trailers: false,
    };
    // HTTP/1.1: chunks (RFC 9112 §7.1), ended by the last chunk; the
    // connection goes on.
    let mut buf = Vec::new();
    let mut stream = stream_head(&head, stream_for(Version::Http11), &mut buf, &cx);
    for piece in [&b"hel"[..], b"", b"lo"] {
        stream.encoder.encode(piece, &mut buf);
    }
    assert_eq!(stream.encoder.finish(&mut buf), 0);
    assert_eq!(
        String::from_utf8(buf).unwrap(),
        "HTTP/1.1 200 OK\r\nServer: brisk\r\nDate: <date>\r\nTransfer-Encoding: chunked\r\n\r\n\
         3\r\nhel\r\n2\r\nlo\r\n0\r\n\r\n"
    );
    assert!(stream.keep);
    // HTTP/1.0 knows no chunks: the body ends where the connection does.
    let mut buf = Vec::new();
    let mut stream = stream_head(&head, stream_for(Version::Http10), &mut buf, &cx);
    stream.encoder.encode(b"hello", &mut buf);
    stream.encoder.finish(&mut buf);
    assert_eq!(
        String::from_utf8(buf).unwrap(),
        "HTTP/1.1 200 OK\r\nServer: brisk\r\nDate: <date>\r\nConnection: close\r\n\r\nhello"
    );
    assert!(!stream.keep);
}

#[test]
fn waiting_for_the_client_to_read_keeps_the_timer_and_ends_with_the_next_progress() {
    let start = Instant::now();
    let later = start + Duration::from_secs(3);
    let mut c = Conn::new();
    let mut life = Life::new(start);
    life.wait_unread();
    assert!(life.unread());
    // (The timer still runs from when the answer was handed over.)
    assert_eq!((c.timer(), life.since()), (Timer::Idle, start));
    life.touch(later);
    assert!(!life.unread());
    assert_eq!(life.since(), later);
    life.wait_unread();
    c.settle(&mut life, true, later);
    assert!(
        !life.unread(),
        "a new state (a head arriving) ends the wait"
    );
}

#[test]
fn a_request_held_for_its_password_check_holds_back_what_follows_it() {
    let mut s = Script::new();
    s.feed(b"GET /private HTTP/1.1\r\nHost: x\r\n\r\nGET /next HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_eq!(s.seen(), ["GET /private"]);
    assert!(s.output().is_empty());
    // No timer runs out on it (the check finishes), and the pipelined
    // request waits behind it, unread.
    assert_eq!(s.conn.timer(), Timer::Never);
    let held = s.conn.wait().and_then(|id| s.exchanges.wait(id));
    assert!(matches!(held, Some(Wait::Check(_))));
    s.feed(b"");
    assert_eq!(s.seen(), Vec::<String>::new());
    s.checked();
    assert_eq!(s.seen(), ["checked 7", "GET /next"]);
    assert_eq!(s.output(), ok("ok", "").repeat(2));
    assert!(s.conn.wait().is_none());
    assert_eq!(s.conn.timer(), Timer::Idle);
}
