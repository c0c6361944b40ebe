//! Byte scripts for the HTTP/2 connection: a client's frames in, the
//! server's frames and events out. Each defence has a test that fails
//! without it (the script goes past the budget by one, and also stays
//! within it by one where that shows the budget is the line).

use std::time::{Duration, Instant};

use super::frame::{self, flag, kind, setting, Head, HEAD_LEN};
use super::hpack;
use super::{Conn, ErrorCode, Event, Limits, PREFACE};

mod defences;

/// A frame the server sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Sent {
    kind: u8,
    flags: u8,
    stream: u32,
    payload: Vec<u8>,
}

impl Sent {
    fn code(&self) -> u32 {
        let at = if self.kind == kind::GOAWAY { 4 } else { 0 };
        u32::from_be_bytes(self.payload[at..at + 4].try_into().unwrap())
    }
}

/// What the server sent, as frames.
pub(super) fn frames(mut b: &[u8]) -> Vec<Sent> {
    let mut v = Vec::new();
    while b.len() >= HEAD_LEN {
        let h = Head::read(b[..HEAD_LEN].try_into().unwrap());
        let end = HEAD_LEN + h.len as usize;
        v.push(Sent {
            kind: h.kind,
            flags: h.flags,
            stream: h.stream,
            payload: b[HEAD_LEN..end].to_vec(),
        });
        b = &b[end..];
    }
    assert!(b.is_empty(), "whole frames");
    v
}

/// A connection and its clock, with the preface and SETTINGS exchanged.
struct Script {
    conn: Conn,
    now: Instant,
    /// Events seen, as text (streams and data lengths).
    events: Vec<String>,
}

impl Script {
    fn new(limits: Limits) -> Script {
        let now = Instant::now();
        let mut s = Script {
            conn: Conn::new(limits, now),
            now,
            events: Vec::new(),
        };
        let mut input = PREFACE.to_vec();
        frame::write_settings(&mut input, &[]);
        s.feed(&input);
        s.take();
        s
    }

    /// Feeds `input` whole; records every event; returns whether the
    /// connection failed.
    fn feed(&mut self, input: &[u8]) -> bool {
        let mut pos = 0;
        loop {
            let ev = self.conn.read(input, &mut pos, self.now);
            match ev {
                Event::Stall => break,
                Event::Close => {
                    self.events.push("close".into());
                    return true;
                }
                Event::Request { stream, end_stream } => {
                    self.events.push(format!("request {stream} {end_stream}"))
                }
                Event::Data {
                    stream,
                    data,
                    end_stream,
                    trailers,
                } => {
                    let with = if trailers { " trailers" } else { "" };
                    let n = data.len();
                    self.events
                        .push(format!("data {stream} {n} {end_stream}{with}"))
                }
                Event::Reset { stream } => self.events.push(format!("reset {stream}")),
                Event::GoAway => self.events.push("goaway".into()),
            }
        }
        assert_eq!(pos, input.len(), "all consumed");
        false
    }

    /// The frames the server has queued, taken.
    fn take(&mut self) -> Vec<Sent> {
        let mut out = Vec::new();
        self.conn.drain_out(&mut out);
        frames(&out)
    }
}

fn get(path: &str) -> Vec<u8> {
    let mut b = vec![0x82, 0x86]; // :method GET, :scheme http
    b.push(0x04); // :path, literal without indexing
    b.push(path.len() as u8);
    b.extend_from_slice(path.as_bytes());
    b.extend_from_slice(&[0x01, 0x01, b'h']); // :authority h
    b
}

fn headers(out: &mut Vec<u8>, stream: u32, block: &[u8], flags: u8) {
    frame::write_head(out, block.len(), kind::HEADERS, flags, stream);
    out.extend_from_slice(block);
}

fn data(out: &mut Vec<u8>, stream: u32, bytes: &[u8], flags: u8) {
    frame::write_head(out, bytes.len(), kind::DATA, flags, stream);
    out.extend_from_slice(bytes);
}

fn rst(out: &mut Vec<u8>, stream: u32) {
    frame::write_rst(out, stream, ErrorCode::Cancel);
}

const END: u8 = flag::END_STREAM | flag::END_HEADERS;

fn goaway_code(sent: &[Sent]) -> Option<u32> {
    sent.iter().find(|f| f.kind == kind::GOAWAY).map(Sent::code)
}

fn rst_codes(sent: &[Sent]) -> Vec<(u32, u32)> {
    sent.iter()
        .filter(|f| f.kind == kind::RST_STREAM)
        .map(|f| (f.stream, f.code()))
        .collect()
}

#[test]
fn settings_come_first_and_are_acknowledged() {
    let now = Instant::now();
    let c = Conn::new(Limits::default(), now);
    let first = frames(c.out());
    assert_eq!(first[0].kind, kind::SETTINGS);
    let params: Vec<_> = frame::settings(&first[0].payload).collect();
    assert!(params.contains(&(setting::MAX_CONCURRENT_STREAMS, 128)));
    assert!(params.contains(&(setting::INITIAL_WINDOW_SIZE, 256 * 1024)));
    // The connection window opened to 1 MiB at once.
    assert_eq!(first[1].kind, kind::WINDOW_UPDATE);
    assert_eq!(first[1].code() as i64, 1024 * 1024 - 65_535);

    let mut s = Script::new(Limits::default());
    let mut input = Vec::new();
    frame::write_settings(&mut input, &[(setting::INITIAL_WINDOW_SIZE, 1000)]);
    frame::write_head(&mut input, 8, kind::PING, 0, 0);
    input.extend_from_slice(b"12345678");
    s.feed(&input);
    let sent = s.take();
    assert_eq!((sent[0].kind, sent[0].flags), (kind::SETTINGS, flag::ACK));
    assert_eq!((sent[1].kind, sent[1].flags), (kind::PING, flag::ACK));
    assert_eq!(sent[1].payload, b"12345678");
}

#[test]
fn a_bad_preface_is_a_connection_error() {
    let mut c = Conn::new(Limits::default(), Instant::now());
    let mut pos = 0;
    assert_eq!(
        c.read(b"GET / HTTP/1.1\r\n", &mut pos, Instant::now()),
        Event::Close
    );
    let mut out = Vec::new();
    c.drain_out(&mut out);
    assert_eq!(goaway_code(&frames(&out)), Some(ErrorCode::Protocol as u32));
    // A preface that arrives in pieces is fine.
    let mut c = Conn::new(Limits::default(), Instant::now());
    let mut pos = 0;
    assert_eq!(
        c.read(&PREFACE[..10], &mut pos, Instant::now()),
        Event::Stall
    );
    assert_eq!(pos, 0);
}

#[test]
fn a_request_is_answered_within_the_windows() {
    let mut s = Script::new(Limits::default());
    let mut input = Vec::new();
    headers(&mut input, 1, &get("/index.html"), END);
    s.feed(&input);
    assert_eq!(s.events, ["request 1 true"]);
    let r = s.conn.request();
    assert_eq!(
        (r.method(), r.scheme(), r.path()),
        (&b"GET"[..], &b"http"[..], &b"/index.html"[..])
    );
    assert_eq!(r.authority(), Some(&b"h"[..]));
    let mut block = Vec::new();
    hpack::encode_status(200, &mut block);
    assert!(s.conn.send_headers(1, &block, false));
    s.conn.set_remaining(1, 100_000);
    assert_eq!(s.conn.next_stream(), Some(1));
    // The peer's default window (65535) bounds what goes.
    let mut sent = 0;
    while let Some(id) = s.conn.next_stream() {
        let n = s.conn.sendable(id).min(100_000 - sent);
        s.conn.send_data(id, &vec![b'x'; n], sent + n == 100_000);
        sent += n;
    }
    assert_eq!(sent, 65_535);
    assert!(s.conn.waits_for_window(1, true));
    let mut input = Vec::new();
    frame::write_window_update(&mut input, 0, 40_000);
    frame::write_window_update(&mut input, 1, 40_000);
    s.feed(&input);
    assert!(!s.conn.waits_for_window(1, true));
    while let Some(id) = s.conn.next_stream() {
        let n = s.conn.sendable(id).min(100_000 - sent);
        s.conn.send_data(id, &vec![b'x'; n], sent + n == 100_000);
        sent += n;
    }
    assert_eq!(sent, 100_000);
    let out = s.take();
    assert_eq!(out[0].kind, kind::HEADERS);
    assert!(
        out.iter().all(|f| f.payload.len() <= 16_384),
        "frames within the peer's max"
    );
    assert_eq!(out.last().unwrap().flags, flag::END_STREAM);
    assert_eq!(s.conn.open_streams(), 0, "closed both ways");
}

#[test]
fn continuation_and_padding_are_assembled() {
    let mut s = Script::new(Limits::default());
    let block = get("/a");
    let mut input = Vec::new();
    // HEADERS, padded, with the block's first 3 bytes; two CONTINUATIONs.
    let first = &block[..3];
    frame::write_head(
        &mut input,
        1 + first.len() + 4,
        kind::HEADERS,
        flag::PADDED,
        1,
    );
    input.push(4);
    input.extend_from_slice(first);
    input.extend_from_slice(&[0; 4]);
    frame::write_head(&mut input, 2, kind::CONTINUATION, 0, 1);
    input.extend_from_slice(&block[3..5]);
    frame::write_head(
        &mut input,
        block.len() - 5,
        kind::CONTINUATION,
        flag::END_HEADERS,
        1,
    );
    input.extend_from_slice(&block[5..]);
    // A padded DATA frame: 3 bytes of data, 10 of padding.
    frame::write_head(
        &mut input,
        14,
        kind::DATA,
        flag::PADDED | flag::END_STREAM,
        1,
    );
    input.push(10);
    input.extend_from_slice(b"abc");
    input.extend_from_slice(&[0; 10]);
    s.feed(&input);
    assert_eq!(s.events, ["request 1 false", "data 1 3 true"]);
    assert_eq!(s.conn.request().path(), b"/a");

    // Padding as long as the payload: PROTOCOL_ERROR.
    let mut s = Script::new(Limits::default());
    let mut input = Vec::new();
    headers(&mut input, 1, &get("/"), flag::END_HEADERS);
    frame::write_head(&mut input, 3, kind::DATA, flag::PADDED, 1);
    input.extend_from_slice(&[3, 0, 0]);
    assert!(s.feed(&input));
    assert_eq!(goaway_code(&s.take()), Some(ErrorCode::Protocol as u32));
}

#[test]
fn a_frame_inside_a_header_block_is_a_connection_error() {
    let mut s = Script::new(Limits::default());
    let mut input = Vec::new();
    headers(&mut input, 1, &get("/")[..2], 0);
    frame::write_head(&mut input, 8, kind::PING, 0, 0);
    input.extend_from_slice(&[0; 8]);
    assert!(s.feed(&input));
    assert_eq!(goaway_code(&s.take()), Some(ErrorCode::Protocol as u32));
}

/// A connection whose windows are 65,535 bytes (stream and connection),
/// stream 1 of which sent 48,000 body bytes, none of them used yet.
fn uploading_48_000() -> Script {
    let limits = Limits {
        stream_window: 65_535,
        connection_window: 65_535,
        ..Limits::default()
    };
    let mut s = Script::new(limits);
    let mut input = Vec::new();
    headers(&mut input, 1, &get("/up"), flag::END_HEADERS);
    for _ in 0..3 {
        data(&mut input, 1, &[b'a'; 16_000], 0);
    }
    s.feed(&input);
    s
}

#[test]
fn credit_given_back_early_is_owed_and_kept_back_once() {
    // A body held while its request waits for its turn has its
    // connection credit back at once, its stream's held; given to its
    // program later, its use gives credit back again: that much is kept
    // back, once, so the connection's window stays what it is.
    let mut s = uploading_48_000();
    s.conn.release_conn(48_000);
    let updates = |sent: Vec<_>| -> Vec<(u32, u32)> {
        let sent: Vec<Sent> = sent;
        (sent.iter())
            .filter(|f| f.kind == kind::WINDOW_UPDATE)
            .map(|f| (f.stream, f.code()))
            .collect()
    };
    assert_eq!(updates(s.take()), [(0, 48_000)], "the connection's only");
    s.conn.owe(48_000);
    s.conn.release(1, 48_000);
    assert_eq!(updates(s.take()), [(1, 48_000)], "the stream's only: owed");
    let mut input = Vec::new();
    for _ in 0..4 {
        data(&mut input, 1, &[b'a'; 10_000], 0);
    }
    assert!(!s.feed(&input), "within both windows");
    s.conn.release(1, 40_000);
    assert_eq!(
        updates(s.take()),
        [(0, 40_000), (1, 40_000)],
        "paid: both again"
    );
}

#[test]
fn request_windows_are_enforced_and_given_back() {
    let mut s = uploading_48_000();
    assert_eq!(s.events.len(), 4);
    assert!(
        s.take().is_empty(),
        "nothing given back before the bytes are used"
    );
    s.conn.release(1, 48_000);
    let sent = s.take();
    let updates: Vec<_> = sent
        .iter()
        .filter(|f| f.kind == kind::WINDOW_UPDATE)
        .map(|f| (f.stream, f.code()))
        .collect();
    assert_eq!(
        updates,
        [(0, 48_000), (1, 48_000)],
        "half a window or more: given back"
    );
    // Past the connection's window: FLOW_CONTROL_ERROR, GOAWAY.
    let mut input = Vec::new();
    for _ in 0..5 {
        data(&mut input, 1, &[b'a'; 16_000], 0);
    }
    assert!(s.feed(&input));
    assert_eq!(goaway_code(&s.take()), Some(ErrorCode::FlowControl as u32));
    // Past a stream's window only: FLOW_CONTROL_ERROR on the stream.
    let mut s = Script::new(Limits {
        stream_window: 65_535,
        ..Limits::default()
    });
    let mut input = Vec::new();
    headers(&mut input, 1, &get("/up"), flag::END_HEADERS);
    for _ in 0..5 {
        data(&mut input, 1, &[b'a'; 16_000], 0);
    }
    assert!(!s.feed(&input));
    assert_eq!(rst_codes(&s.take()), [(1, ErrorCode::FlowControl as u32)]);
}

#[test]
fn a_body_nobody_wants_is_dropped_with_its_credit_given_back() {
    let mut s = Script::new(Limits::default());
    let mut input = Vec::new();
    headers(&mut input, 1, &get("/up"), flag::END_HEADERS);
    s.feed(&input);
    s.conn.send_headers(1, &[0x88], true);
    s.conn.discard_body(1, 40_000);
    s.take();
    let mut input = Vec::new();
    for _ in 0..2 {
        data(&mut input, 1, &[b'a'; 16_000], 0);
    }
    s.feed(&input);
    assert_eq!(
        s.events,
        ["request 1 false"],
        "no body reaches the application"
    );
    // The stream's credit comes back (half its window is 128 KiB: not
    // yet); past the allowance the client is asked to stop.
    let mut input = Vec::new();
    data(&mut input, 1, &[b'a'; 16_000], 0);
    s.feed(&input);
    assert_eq!(rst_codes(&s.take()), [(1, ErrorCode::NoError as u32)]);
    // With a body that ends within the allowance, nothing is reset.
    let mut s = Script::new(Limits {
        stream_window: 65_535,
        ..Limits::default()
    });
    let mut input = Vec::new();
    headers(&mut input, 1, &get("/up"), flag::END_HEADERS);
    s.feed(&input);
    s.conn.send_headers(1, &[0x88], true);
    s.conn.discard_body(1, 1 << 20);
    s.take();
    let mut input = Vec::new();
    for i in 0..4 {
        data(
            &mut input,
            1,
            &[b'a'; 16_000],
            if i == 3 { flag::END_STREAM } else { 0 },
        );
    }
    s.feed(&input);
    let sent = s.take();
    assert!(rst_codes(&sent).is_empty());
    assert!(
        sent.iter()
            .any(|f| f.kind == kind::WINDOW_UPDATE && f.stream == 1),
        "the stream's credit came back"
    );
    assert_eq!(s.conn.open_streams(), 0, "closed both ways");
}

#[test]
fn window_updates_are_checked() {
    let mut s = Script::new(Limits::default());
    let mut input = Vec::new();
    headers(&mut input, 1, &get("/"), END);
    frame::write_window_update(&mut input, 1, 0x7fff_ffff);
    s.feed(&input);
    assert_eq!(rst_codes(&s.take()), [(1, ErrorCode::FlowControl as u32)]);
    let mut input = Vec::new();
    frame::write_window_update(&mut input, 0, 0);
    assert!(s.feed(&input));
    assert_eq!(goaway_code(&s.take()), Some(ErrorCode::Protocol as u32));
    // SETTINGS_INITIAL_WINDOW_SIZE moves every open stream's window.
    let mut s = Script::new(Limits::default());
    let mut input = Vec::new();
    headers(&mut input, 1, &get("/"), END);
    frame::write_settings(&mut input, &[(setting::INITIAL_WINDOW_SIZE, 1)]);
    s.feed(&input);
    s.conn.send_headers(1, &[0x88], false);
    assert_eq!(s.conn.sendable(1), 1);
}

#[test]
fn malformed_requests_are_stream_errors() {
    let cases: [&[u8]; 5] = [
        // An upper-case name.
        &[
            0x82, 0x86, 0x84, 0x41, 0x01, b'h', 0x00, 0x01, b'X', 0x01, b'y',
        ],
        // A connection-specific field.
        &[
            0x82, 0x86, 0x84, 0x00, 0x0a, b'c', b'o', b'n', b'n', b'e', b'c', b't', b'i', b'o',
            b'n', 0x01, b'y',
        ],
        // No :path.
        &[0x82, 0x86, 0x41, 0x01, b'h'],
        // A pseudo-header field after a regular one.
        &[0x82, 0x86, 0x00, 0x01, b'a', 0x01, b'b', 0x84],
        // te: gzip.
        &[
            0x82, 0x86, 0x84, 0x00, 0x02, b't', b'e', 0x04, b'g', b'z', b'i', b'p',
        ],
    ];
    for (i, block) in cases.iter().enumerate() {
        let mut s = Script::new(Limits::default());
        let mut input = Vec::new();
        headers(&mut input, 1, block, END);
        s.feed(&input);
        assert!(s.events.is_empty(), "case {i}: {:?}", s.events);
        assert_eq!(
            rst_codes(&s.take()),
            [(1, ErrorCode::Protocol as u32)],
            "case {i}"
        );
    }
}

#[test]
fn trailers_end_the_body_and_content_length_must_match() {
    let mut s = Script::new(Limits::default());
    let mut input = Vec::new();
    headers(&mut input, 1, &get("/"), flag::END_HEADERS);
    data(&mut input, 1, b"abc", 0);
    headers(&mut input, 1, &[0x00, 0x01, b'x', 0x01, b'y'], END);
    s.feed(&input);
    assert_eq!(
        s.events,
        [
            "request 1 false",
            "data 1 3 false",
            "data 1 0 true trailers"
        ]
    );
    // (Their fields are the request's until the next block.)
    let fields: Vec<_> = s.conn.request().fields().collect();
    assert_eq!(fields, [(&b"x"[..], &b"y"[..])]);
    // Trailers without END_STREAM.
    let mut s = Script::new(Limits::default());
    let mut input = Vec::new();
    headers(&mut input, 1, &get("/"), flag::END_HEADERS);
    headers(
        &mut input,
        1,
        &[0x00, 0x01, b'x', 0x01, b'y'],
        flag::END_HEADERS,
    );
    s.feed(&input);
    assert_eq!(rst_codes(&s.take()), [(1, ErrorCode::Protocol as u32)]);
    // content-length: 5 and 3 bytes of DATA.
    let mut s = Script::new(Limits::default());
    let mut block = get("/");
    block.extend_from_slice(&[0x0f, 0x0d, 0x01, b'5']); // content-length (28)
    let mut input = Vec::new();
    headers(&mut input, 1, &block, flag::END_HEADERS);
    data(&mut input, 1, b"abc", flag::END_STREAM);
    s.feed(&input);
    assert_eq!(s.events, ["request 1 false", "reset 1"]);
    assert_eq!(rst_codes(&s.take()), [(1, ErrorCode::Protocol as u32)]);
}

#[test]
fn the_smallest_answer_goes_first() {
    let mut s = Script::new(Limits::default());
    let mut input = Vec::new();
    for id in [1, 3, 5] {
        headers(&mut input, id, &get("/"), END);
    }
    s.feed(&input);
    for (id, left) in [(1, 1_000_000), (3, 500), (5, 40_000)] {
        s.conn.send_headers(id, &[0x88], false);
        s.conn.set_remaining(id, left);
    }
    assert_eq!(s.conn.next_stream(), Some(3));
    s.conn.send_data(3, &[0; 500], true);
    assert_eq!(s.conn.next_stream(), Some(5));
    // A paused answer (throttled) is passed over, and is no window stall.
    s.conn.pause(5);
    assert_eq!(s.conn.next_stream(), Some(1));
    s.conn.pause(1);
    assert_eq!(s.conn.next_stream(), None);
    assert!(!s.conn.waits_for_window(1, true) && !s.conn.waits_for_window(5, true));
    s.conn.resume_all();
    assert_eq!(s.conn.next_stream(), Some(5));
}

/// The bytes of a GOAWAY NO_ERROR naming `last`, without debug data.
fn goaway_bytes(last: u32) -> Vec<u8> {
    let mut b = vec![0, 0, 8, kind::GOAWAY, 0, 0, 0, 0, 0];
    b.extend_from_slice(&last.to_be_bytes());
    b.extend_from_slice(&[0, 0, 0, 0]);
    b
}

/// A PING (or its answer, `ack`) carrying `data`.
fn ping(out: &mut Vec<u8>, data: &[u8; 8], ack: bool) {
    frame::write_head(out, 8, kind::PING, if ack { flag::ACK } else { 0 }, 0);
    out.extend_from_slice(data);
}

#[test]
fn goaway_comes_in_two_steps_and_serves_what_was_on_the_wire() {
    // RFC 9113 §6.8: first a GOAWAY naming 2^31-1 and a PING; the
    // streams the client opened before it read that GOAWAY (HEADERS
    // already on the wire) are served; once it answers the PING, the
    // final GOAWAY names the last of them, byte for byte.
    let mut s = Script::new(Limits::default());
    let mut input = Vec::new();
    headers(&mut input, 1, &get("/"), END);
    s.feed(&input);
    s.conn.shut_down(s.now);
    let mut out = Vec::new();
    s.conn.drain_out(&mut out);
    let mut first = goaway_bytes(0x7fff_ffff);
    ping(&mut first, b"goaway!\0", false);
    assert_eq!(out, first);
    assert_eq!(
        (super::ANY_STREAM, super::GOAWAY_PING),
        (0x7fff_ffff, *b"goaway!\0")
    );
    assert!(s.conn.shutting_down());
    // Requests sent before the client read it: served.
    let mut input = Vec::new();
    headers(&mut input, 3, &get("/a"), END);
    headers(&mut input, 5, &get("/b"), END);
    s.feed(&input);
    assert_eq!(
        s.events,
        ["request 1 true", "request 3 true", "request 5 true"]
    );
    assert!(
        s.take().is_empty(),
        "no final GOAWAY before the PING's answer"
    );
    // Answers to other PINGs do not count.
    let mut input = Vec::new();
    ping(&mut input, b"12345678", true);
    s.feed(&input);
    assert!(s.take().is_empty());
    // The answer to ours: the final GOAWAY names stream 5.
    let mut input = Vec::new();
    ping(&mut input, b"goaway!\0", true);
    s.feed(&input);
    let mut out = Vec::new();
    s.conn.drain_out(&mut out);
    assert_eq!(out, goaway_bytes(5));
    // A stream opened after it is not served (HPACK stays in step), and
    // the connection is done once streams 1, 3 and 5 are answered.
    let mut input = Vec::new();
    headers(&mut input, 7, &get("/x"), END);
    assert!(!s.feed(&input));
    assert_eq!(s.events.len(), 3, "{:?}", s.events);
    for id in [1, 3, 5] {
        assert!(!s.conn.finished(), "stream {id} is still being answered");
        s.conn.send_headers(id, &[0x88], true);
    }
    assert!(s.conn.finished());
    let sent = s.take();
    assert!(sent.iter().all(|f| f.kind == kind::HEADERS), "{sent:?}");
    // Neither step is sent twice.
    s.conn.shut_down(s.now);
    let mut input = Vec::new();
    ping(&mut input, b"goaway!\0", true);
    s.feed(&input);
    assert_eq!(s.conn.goaway_due(s.now + super::GOAWAY_WAIT), None);
    assert!(s.take().is_empty());
}

#[test]
fn the_last_stream_opened_is_timed() {
    // (A reload's GOAWAY waits until a connection opens no more streams.)
    let mut s = Script::new(Limits::default());
    let t0 = s.now;
    assert_eq!(s.conn.last_opened(), t0);
    s.now = t0 + Duration::from_secs(5);
    let mut input = Vec::new();
    frame::write_window_update(&mut input, 0, 1000);
    ping(&mut input, b"12345678", false);
    s.feed(&input);
    assert_eq!(s.conn.last_opened(), t0, "other frames do not count");
    let mut input = Vec::new();
    headers(&mut input, 1, &get("/"), END);
    s.feed(&input);
    assert_eq!(s.conn.last_opened(), t0 + Duration::from_secs(5));
}

#[test]
fn the_final_goaway_does_not_wait_past_its_bound() {
    // A client that never answers the PING still gets the final GOAWAY
    // (naming the last stream it opened) once GOAWAY_WAIT has passed;
    // until then the connection is not done, even with no stream open.
    let mut s = Script::new(Limits::default());
    let t0 = s.now;
    s.conn.shut_down(t0);
    s.take();
    assert!(
        !s.conn.finished(),
        "no stream open, but the final GOAWAY is to come"
    );
    let mut input = Vec::new();
    headers(&mut input, 1, &get("/"), END);
    s.feed(&input);
    let due = t0 + super::GOAWAY_WAIT;
    let almost = due - Duration::from_millis(1);
    assert_eq!(s.conn.goaway_due(almost), Some(due));
    assert!(s.take().is_empty());
    assert_eq!(s.conn.goaway_due(due), None);
    let mut out = Vec::new();
    s.conn.drain_out(&mut out);
    assert_eq!(out, goaway_bytes(1));
    s.conn.send_headers(1, &[0x88], true);
    assert!(s.conn.finished());
    // A connection error meanwhile sends its own GOAWAY, and no final one.
    let mut s = Script::new(Limits::default());
    s.conn.shut_down(s.now);
    s.take();
    let mut input = Vec::new();
    headers(&mut input, 2, &get("/"), END);
    assert!(s.feed(&input));
    assert_eq!(goaway_code(&s.take()), Some(ErrorCode::Protocol as u32));
    assert_eq!(s.conn.goaway_due(s.now + super::GOAWAY_WAIT), None);
    assert!(s.take().is_empty());
}

#[test]
fn push_promise_and_oversized_frames_are_connection_errors() {
    let mut s = Script::new(Limits::default());
    let mut input = Vec::new();
    frame::write_head(&mut input, 4, kind::PUSH_PROMISE, flag::END_HEADERS, 1);
    input.extend_from_slice(&[0, 0, 0, 2]);
    assert!(s.feed(&input));
    assert_eq!(goaway_code(&s.take()), Some(ErrorCode::Protocol as u32));
    let mut s = Script::new(Limits::default());
    let mut input = Vec::new();
    frame::write_head(&mut input, 16_385, kind::DATA, 0, 1);
    input.extend_from_slice(&[0; 16_385]);
    assert!(s.feed(&input));
    assert_eq!(goaway_code(&s.take()), Some(ErrorCode::FrameSize as u32));
}

/// The head of an answer on `stream`, encoded by the connection's
/// encoder (its `server` field enters the table), and the HEADERS
/// block it sent.
fn answer_head(s: &mut Script, stream: u32) -> Vec<u8> {
    let mut block = Vec::new();
    let e = s.conn.encoder();
    e.begin(&mut block);
    hpack::encode_status(200, &mut block);
    e.field(b"server", b"brisk", &mut block);
    assert!(s.conn.send_headers(stream, &block, true));
    let sent = s.take();
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(sent[0].kind, kind::HEADERS);
    sent[0].payload.clone()
}

/// The fields a client's decoder finds in `block`.
fn decoded(client: &mut hpack::Decoder, block: &[u8]) -> Vec<(String, String)> {
    let mut v = Vec::new();
    client
        .decode(block, 1 << 16, &mut |n, val| {
            v.push((
                String::from_utf8_lossy(n).into_owned(),
                String::from_utf8_lossy(val).into_owned(),
            ))
        })
        .expect("a valid block");
    v
}

#[test]
fn a_rested_connections_next_head_empties_the_clients_copy_of_the_table_first() {
    let mut s = Script::new(Limits::default());
    let mut client = hpack::Decoder::new(4096);
    let mut input = Vec::new();
    headers(&mut input, 1, &get("/a"), END);
    s.feed(&input);
    let first = answer_head(&mut s, 1);
    assert_eq!(
        first[0], 0x88,
        "no size update on a first head: {first:02x?}"
    );
    let fields = decoded(&mut client, &first);
    // At rest the encoder and its table are dropped; the next head's
    // encoder is new, and its block opens with a size update to 0 then
    // 4096 (RFC 7541 §4.2): the client's copy of the table is emptied
    // as ours was, and the same fields decode the same.
    s.conn.shrink();
    input.clear();
    headers(&mut input, 3, &get("/b"), END);
    s.feed(&input);
    let second = answer_head(&mut s, 3);
    assert_eq!(&second[..4], &[0x20, 0x3f, 0xe1, 0x1f], "{second:02x?}");
    assert_eq!(decoded(&mut client, &second), fields);
    // A head without a rest in between uses the table: no update, and
    // `server` is an index into it.
    input.clear();
    headers(&mut input, 5, &get("/c"), END);
    s.feed(&input);
    let third = answer_head(&mut s, 5);
    assert_eq!(third, [0x88, 0xbe], "{third:02x?}");
    assert_eq!(decoded(&mut client, &third), fields);
}

#[test]
fn the_clients_header_table_size_holds_for_an_encoder_made_after_it() {
    let now = Instant::now();
    let mut s = Script {
        conn: Conn::new(Limits::default(), now),
        now,
        events: Vec::new(),
    };
    // SETTINGS_HEADER_TABLE_SIZE 1024 comes before any answer (the
    // encoder is made for the first): that answer's block says so.
    let mut input = PREFACE.to_vec();
    frame::write_settings(&mut input, &[(setting::HEADER_TABLE_SIZE, 1024)]);
    headers(&mut input, 1, &get("/a"), END);
    s.feed(&input);
    s.take();
    let mut client = hpack::Decoder::new(1024);
    let first = answer_head(&mut s, 1);
    assert_eq!(&first[..3], &[0x3f, 0xe1, 0x07], "{first:02x?}");
    decoded(&mut client, &first);
    // After a rest: emptied, then back to 1024, not to 4096.
    s.conn.shrink();
    input.clear();
    headers(&mut input, 3, &get("/b"), END);
    s.feed(&input);
    let second = answer_head(&mut s, 3);
    assert_eq!(&second[..4], &[0x20, 0x3f, 0xe1, 0x07], "{second:02x?}");
    decoded(&mut client, &second);
}

/// A connection that took an `Upgrade: h2c` GET of `/up` with
/// `settings` (a SETTINGS payload), before the client's preface.
fn upgraded(settings: &[(u16, u32)]) -> (Conn, Instant) {
    let now = Instant::now();
    let mut c = Conn::new(Limits::default(), now);
    let mut payload = Vec::new();
    frame::write_settings(&mut payload, settings);
    let took = c.upgrade(&payload[HEAD_LEN..], now, |r| {
        r.field(b":method", b"GET");
        r.field(b":scheme", b"http");
        r.field(b":authority", b"h");
        r.field(b":path", b"/up");
        r.field(b"accept", b"*/*");
    });
    assert_eq!(took, Ok(()));
    (c, now)
}

#[test]
fn an_upgraded_request_is_stream_1_reported_after_the_preface() {
    let (c, now) = upgraded(&[(setting::INITIAL_WINDOW_SIZE, 10)]);
    let mut s = Script {
        conn: c,
        now,
        events: Vec::new(),
    };
    // Our SETTINGS are queued, and no ack for HTTP2-Settings (RFC 7540
    // §3.2.1: the 101 acknowledges them).
    let sent = s.take();
    assert_eq!((sent[0].kind, sent[0].flags), (kind::SETTINGS, 0));
    assert!(sent.iter().all(|f| f.flags & flag::ACK == 0), "{sent:?}");
    // Nothing is reported before the preface; then stream 1, half-closed
    // (remote), ahead of the frames after it.
    let mut pos = 0;
    assert_eq!(s.conn.read(&PREFACE[..10], &mut pos, now), Event::Stall);
    let mut input = PREFACE.to_vec();
    frame::write_settings(&mut input, &[]);
    s.feed(&input);
    assert_eq!(s.events, ["request 1 true"]);
    let r = s.conn.request();
    assert_eq!((r.method(), r.path()), (&b"GET"[..], &b"/up"[..]));
    assert_eq!(
        r.fields().collect::<Vec<_>>(),
        [(&b"accept"[..], &b"*/*"[..])]
    );
    let sent = s.take();
    assert_eq!((sent[0].kind, sent[0].flags), (kind::SETTINGS, flag::ACK));
    // The window HTTP2-Settings set holds stream 1's answer.
    let mut block = Vec::new();
    hpack::encode_status(200, &mut block);
    assert!(s.conn.send_headers(1, &block, false));
    s.conn.set_remaining(1, 100);
    assert_eq!(s.conn.sendable(1), 10);
    // The client may not send on it (a stream error, §5.1); the next
    // stream it opens is 3.
    let mut input = Vec::new();
    data(&mut input, 1, b"late", 0);
    headers(&mut input, 3, &get("/next"), END);
    s.feed(&input);
    assert_eq!(s.events, ["request 1 true", "reset 1", "request 3 true"]);
    assert_eq!(rst_codes(&s.take()), [(1, ErrorCode::StreamClosed as u32)]);
}

#[test]
fn an_upgrade_with_settings_or_a_head_http2_refuses_is_not_taken() {
    let now = Instant::now();
    let plain = |r: &mut super::request::Request| {
        r.field(b":method", b"GET");
        r.field(b":scheme", b"http");
        r.field(b":path", b"/");
    };
    // Not whole settings; a value out of range.
    for settings in [&[0, 4, 0, 0][..], &[0, 2, 0, 0, 0, 2]] {
        let mut c = Conn::new(Limits::default(), now);
        assert!(c.upgrade(settings, now, plain).is_err(), "{settings:?}");
    }
    // A field HTTP/2 refuses (upper case, connection-specific).
    for (name, value) in [(&b"Accept"[..], &b"*/*"[..]), (b"connection", b"close")] {
        let mut c = Conn::new(Limits::default(), now);
        let took = c.upgrade(&[], now, |r| {
            plain(r);
            r.field(name, value);
        });
        assert!(took.is_err(), "{name:?}");
    }
    // Once only, and never after the preface.
    let (mut c, now) = upgraded(&[]);
    assert!(c.upgrade(&[], now, plain).is_err());
    let mut c = Conn::new(Limits::default(), now);
    let mut pos = 0;
    let _ = c.read(PREFACE, &mut pos, now);
    assert!(c.upgrade(&[], now, plain).is_err());
}
