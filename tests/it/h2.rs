//! HTTP/2 with prior knowledge (h2c) against the real binary: a small
//! raw client built on brisk's own frame codec and HPACK (the server's
//! bytes are checked frame by frame), then real clients (curl, nghttp,
//! h2load) and h2spec when they are installed (scripts/test installs
//! them; a missing one is a loud, counted skip).

use crate::common;

use std::io::Write;
use std::process::Command;
use std::time::{Duration, Instant};

use brisk::h2::frame::{self, flag, kind, setting};
use brisk::h2::ErrorCode;
use common::h2::{Next, H2};
use common::*;

fn site() -> (Server, Vec<u8>) {
    let big = pattern(1024 * 1024 + 7);
    let mut b = Builder::new();
    b.file("index.html", b"<h1>hi</h1>\n");
    b.file("big.bin", &big);
    for i in 0..100 {
        b.file(
            &format!("assets/{i}.css"),
            format!("/* asset {i} */\n").repeat(i + 1).as_bytes(),
        );
    }
    b.access_log();
    (b.start(), big)
}

#[test]
fn h2c_serves_files_and_http1_on_the_same_port() {
    let (s, big) = site();
    let mut c = H2::connect(s.addr(), &[], 0);
    let ids = [
        c.get("/index.html", &[]),
        c.get("/big.bin", &[("range", "bytes=100-199")]),
        c.request("HEAD", "/index.html", &[], None),
        c.get("/nothing-here", &[]),
        c.get(
            "/index.html",
            &[("if-none-match", &etag_of(&s, "index.html"))],
        ),
    ];
    let a = c.answers(&ids);
    assert_eq!(a[0].status(), "200");
    assert_eq!(a[0].body, b"<h1>hi</h1>\n");
    assert_eq!(a[0].field("content-length"), Some("12"));
    assert_eq!(a[0].field("server"), Some("brisk"));
    assert!(
        a[0].field("connection").is_none(),
        "no connection-specific fields"
    );
    assert_eq!(a[1].status(), "206");
    assert_eq!(a[1].body, big[100..200]);
    assert_eq!(
        a[1].field("content-range"),
        Some(&*format!("bytes 100-199/{}", big.len()))
    );
    assert_eq!((a[2].status(), a[2].body.len()), ("200", 0));
    assert_eq!(
        a[2].field("content-length"),
        Some("12"),
        "HEAD says the length"
    );
    assert_eq!(a[3].status(), "404");
    assert_eq!((a[4].status(), a[4].body.len()), ("304", 0));
    // HTTP/1.1 on the same port, as before.
    let r = s.request(b"GET /index.html HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    assert!(r.head.starts_with("HTTP/1.1 200 OK\r\n"), "{}", r.head);
    // The access log says HTTP/2.0 for the streams.
    let log = wait_for("five HTTP/2.0 lines", || {
        let log = std::fs::read_to_string(&s.access_path).ok()?;
        (log.matches("HTTP/2.0\"").count() >= 5).then_some(log)
    });
    assert!(log.contains("\"GET /big.bin HTTP/2.0\" 206 100 "), "{log}");
}

#[test]
fn a_repeated_answer_head_is_a_dozen_bytes() {
    // Another answer for the same file within the same second: every
    // field but content-length is an index into the client's table
    // (server, date, content-type, etag, last-modified, accept-ranges),
    // which the client decodes back to the same fields.
    let (s, _) = site();
    let mut c = H2::connect(s.addr(), &[], 0);
    let mut answer = || {
        let id = c.get("/index.html", &[]);
        loop {
            let f = c.frame().expect("frames");
            if f.kind == kind::HEADERS && f.stream == id {
                return (f.payload.len(), f.fields);
            }
        }
    };
    let date = |f: &[(String, String)]| f.iter().find(|(n, _)| n == "date").cloned();
    let mut last = answer();
    // (At most a second boundary between two answers: then the date is
    // a new entry, and the next answer is a dozen bytes again.)
    for _ in 0..3 {
        let next = answer();
        if date(&next.1) == date(&last.1) {
            assert_eq!(next.1, last.1);
            assert!(next.0 <= 12, "{} bytes: {:?}", next.0, next.1);
            return;
        }
        last = next;
    }
    panic!("three answers in three different seconds");
}

fn etag_of(s: &Server, name: &str) -> String {
    let r = s.request(
        format!("GET /{name} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes(),
    );
    let line = r
        .head
        .lines()
        .find(|l| l.starts_with("ETag: "))
        .expect("etag");
    line["ETag: ".len()..].to_string()
}

#[test]
fn a_stop_sends_goaway_and_lets_the_open_stream_finish() {
    let (s, big) = site();
    let mut c = H2::connect(s.addr(), &[], 0);
    let done = c.get("/index.html", &[]);
    assert_eq!(c.answers(&[done])[0].status(), "200");
    // A large answer in flight (the client gives no credit back yet).
    let id = c.get("/big.bin", &[]);
    let first = c.frame().expect("its head");
    assert_eq!((first.kind, first.stream), (kind::HEADERS, id));
    s.signal(libc::SIGTERM);
    // GOAWAY NO_ERROR names the last stream served; that stream's
    // answer still comes whole, and then the connection closes.
    let mut body = Vec::new();
    let mut goaway = None;
    while let Some(f) = c.frame() {
        match f.kind {
            kind::GOAWAY => {
                let last = u32::from_be_bytes(f.payload[..4].try_into().unwrap());
                goaway = Some((
                    last,
                    u32::from_be_bytes(f.payload[4..8].try_into().unwrap()),
                ));
            }
            kind::DATA if f.stream == id => {
                body.extend_from_slice(&f.payload);
                if f.flags & flag::END_STREAM == 0 {
                    let mut out = Vec::new();
                    frame::write_window_update(&mut out, 0, f.payload.len() as u32);
                    frame::write_window_update(&mut out, id, f.payload.len() as u32);
                    // (The server may be gone once the stream is done.)
                    let _ = c.sock.write_all(&out);
                }
            }
            _ => {}
        }
    }
    // (Then the server closed the connection.)
    assert_eq!(goaway, Some((id, ErrorCode::NoError as u32)));
    assert!(body == big, "the open stream finished");
}

#[test]
fn a_stop_sends_goaway_to_a_connection_stalled_on_flow_control() {
    // A client that read the stream's whole window and gives credit to
    // the connection only: the answer cannot go on, and the connection
    // counts as stalled (`timeouts.send`). A stop still owes it GOAWAY
    // at once (RFC 9113 §6.8), so that it opens nothing more; it used to
    // hear nothing until the shutdown grace ended in a bare close.
    let big = pattern(1024 * 1024 + 7);
    let mut b = Builder::new();
    b.file("index.html", b"<h1>hi</h1>\n");
    b.file("big.bin", &big);
    b.workers(1);
    let s = b.start();
    let mut c = H2::connect(s.addr(), &[], 0);
    let id = c.get("/big.bin", &[]);
    let mut body = Vec::new();
    while body.len() < 65_535 {
        let f = c.frame().expect("the first window's DATA");
        if f.kind == kind::DATA && f.stream == id {
            body.extend_from_slice(&f.payload);
        }
    }
    let mut out = Vec::new();
    frame::write_window_update(&mut out, 0, 1 << 20);
    c.send(&out);
    // (The one worker answers another connection meanwhile: the credit,
    // sent first, is at the server before the stop.)
    assert_eq!(s.get("/index.html").status, 200);
    s.signal(libc::SIGTERM);
    // GOAWAY in two steps (RFC 9113 §6.8): 2^31-1 and a PING, then (the
    // PING unanswered) the final one naming the stream.
    let mut goaways = Vec::new();
    while goaways.len() < 2 {
        let f = c.frame().expect("GOAWAY, not a close");
        assert!(matches!(f.kind, kind::GOAWAY | kind::PING), "{f:?}");
        if f.kind == kind::GOAWAY {
            goaways.push((
                u32::from_be_bytes(f.payload[..4].try_into().unwrap()),
                u32::from_be_bytes(f.payload[4..8].try_into().unwrap()),
            ));
        }
    }
    let no_error = ErrorCode::NoError as u32;
    assert_eq!(goaways, [(0x7fff_ffff, no_error), (id, no_error)]);
    // Given credit, the open stream still finishes whole.
    let mut out = Vec::new();
    frame::write_window_update(&mut out, id, big.len() as u32);
    c.send(&out);
    while let Some(f) = c.frame() {
        if f.kind == kind::DATA && f.stream == id {
            body.extend_from_slice(&f.payload);
        }
    }
    assert!(body == big, "the open stream finished");
}

#[test]
fn a_stop_sends_goaway_to_an_idle_connection_too() {
    // Its streams all answered, the connection still hears GOAWAY
    // NO_ERROR (naming the last stream it opened) before the close: the
    // frame used to be left behind when nothing else was queued.
    let (s, _) = site();
    let mut c = H2::connect(s.addr(), &[], 0);
    let id = c.get("/index.html", &[]);
    assert_eq!(c.answers(&[id])[0].status(), "200");
    s.signal(libc::SIGTERM);
    let mut goaway = None;
    while let Some(f) = c.frame() {
        if f.kind == kind::GOAWAY {
            goaway = Some((
                u32::from_be_bytes(f.payload[..4].try_into().unwrap()),
                u32::from_be_bytes(f.payload[4..8].try_into().unwrap()),
            ));
        }
    }
    assert_eq!(goaway, Some((id, ErrorCode::NoError as u32)));
}

#[test]
fn a_page_with_100_assets_comes_over_one_connection() {
    let (s, _) = site();
    let mut c = H2::connect(s.addr(), &[], 0);
    let ids: Vec<u32> = (0..100)
        .map(|i| c.get(&format!("/assets/{i}.css"), &[]))
        .collect();
    let answers = c.answers(&ids);
    for (i, a) in answers.iter().enumerate() {
        assert_eq!(a.status(), "200", "asset {i}");
        assert_eq!(
            a.body,
            format!("/* asset {i} */\n").repeat(i + 1).as_bytes(),
            "asset {i}"
        );
    }
}

#[test]
fn a_large_file_flows_within_the_windows() {
    // The client's window opened wide (as curl's and browsers' are):
    // 1 MiB leaves without waiting for window updates.
    let (s, big) = site();
    let mut c = H2::connect(
        s.addr(),
        &[(setting::INITIAL_WINDOW_SIZE, 16 << 20)],
        16 << 20,
    );
    let id = c.get("/big.bin", &[]);
    assert_eq!(c.answers(&[id])[0].body, big);
    // With the default 64 KiB windows, the client's updates move it on.
    let mut c = H2::connect(s.addr(), &[], 0);
    let id = c.get("/big.bin", &[]);
    assert_eq!(c.answers(&[id])[0].body, big);
}

/// Whether the server has `path` mapped (`/proc/PID/maps`).
fn maps(s: &Server, path: &std::path::Path) -> bool {
    let maps = std::fs::read_to_string(format!("/proc/{}/maps", s.pid())).unwrap_or_default();
    let path = path.canonicalize().unwrap();
    maps.lines().any(|l| l.ends_with(&*path.to_string_lossy()))
}

#[test]
fn a_files_frames_leave_from_a_mapping_byte_exact_and_it_is_let_go_at_rest() {
    // In cleartext, a file's DATA frames are sent from a mapping of it
    // behind their headers (one copy, not two); `sendfile = false` reads
    // them into memory as before. Both byte-exact, in ranges from odd
    // offsets too.
    for sendfile in [true, false] {
        let big = pattern(3 * 1024 * 1024 + 7);
        let mut b = Builder::new();
        b.file("big.bin", &big);
        b.config(&format!("[static]\nsendfile = {sendfile}\n"));
        let s = b.start();
        let mut c = H2::connect(s.addr(), &[], 0);
        let id = c.get("/big.bin", &[]);
        let a = &c.answers(&[id])[0];
        assert!(
            a.body == big,
            "sendfile = {sendfile}: {} bytes",
            a.body.len()
        );
        for (from, to) in [
            (5, 300_000),
            (2 * 1024 * 1024 - 3, 2 * 1024 * 1024 + 70_000),
            (1, big.len() - 2),
        ] {
            let range = format!("bytes={from}-{to}");
            let id = c.get("/big.bin", &[("range", &range)]);
            let a = &c.answers(&[id])[0];
            assert_eq!(a.status(), "206");
            assert!(a.body == big[from..=to], "sendfile = {sendfile}: {range}");
        }
        let file = s.root.join("big.bin");
        assert_eq!(maps(&s, &file), sendfile, "sendfile = {sendfile}: mapped");
        if sendfile {
            wait_until("the worker to let the mapping go at rest", || {
                !maps(&s, &file)
            });
        }
    }
}

#[test]
fn a_file_truncated_while_its_frames_are_sent_ends_the_connection_short() {
    let big = pattern(4 * 1024 * 1024);
    let mut b = Builder::new();
    b.file("big.bin", &big);
    b.file("index.html", b"still here\n");
    let s = b.start();
    // The default 64 KiB windows, not opened: the first frames come.
    let mut c = H2::connect(s.addr(), &[], 0);
    let id = c.get("/big.bin", &[]);
    let mut body = Vec::new();
    while body.len() < 65_535 {
        let f = c.frame().expect("the first frames");
        if f.kind == kind::DATA && f.stream == id {
            body.extend_from_slice(&f.payload);
        }
    }
    let cut: usize = 100_000;
    std::fs::File::options()
        .write(true)
        .open(s.root.join("big.bin"))
        .unwrap()
        .set_len(cut as u64)
        .unwrap();
    let mut out = Vec::new();
    frame::write_window_update(&mut out, 0, 8 << 20);
    frame::write_window_update(&mut out, id, 8 << 20);
    c.send(&out);
    let mut ended = false;
    while let Some(f) = c.frame() {
        if f.kind == kind::DATA && f.stream == id {
            body.extend_from_slice(&f.payload);
            ended |= f.flags & flag::END_STREAM != 0;
        }
    }
    // Short of the file's length and never ended as if whole: the
    // connection ends. What came is the file up to the cut, and zeros
    // after it in the page the cut shares (as with `sendfile`).
    assert!(
        !ended && body.len() < big.len(),
        "{} bytes, ended: {ended}",
        body.len()
    );
    assert!(
        body.len() >= 65_535 && body.len() <= cut.next_multiple_of(4096),
        "{}",
        body.len()
    );
    let upto = body.len().min(cut);
    assert!(body[..upto] == big[..upto], "the file's bytes");
    assert!(body[upto..].iter().all(|&b| b == 0), "zeros past the cut");
    // The worker goes on.
    assert_eq!(s.get("/index.html").body, b"still here\n");
}

#[test]
fn a_client_that_never_opens_its_window_is_timed_out() {
    let mut b = Builder::new();
    b.file("big.bin", &pattern(1 << 20));
    b.config("[timeouts]\nsend = \"1s\"\n");
    let s = b.start();
    let mut c = H2::connect(s.addr(), &[(setting::INITIAL_WINDOW_SIZE, 0)], 0);
    let id = c.get("/big.bin", &[]);
    let started = Instant::now();
    // Headers come, then nothing: the server holds the file open, not
    // its bytes, and closes the connection once the send timeout passes.
    let mut got_headers = false;
    while let Some(f) = c.frame() {
        if f.stream == id && f.kind == kind::HEADERS {
            got_headers = true;
        }
        assert!(
            f.kind != kind::DATA || f.payload.is_empty(),
            "no window, no data"
        );
        assert!(started.elapsed() < Duration::from_secs(8), "not timed out");
    }
    assert!(got_headers);
}

#[test]
fn a_stream_stalled_on_its_window_is_reset_at_the_send_timeout_whatever_pings_come() {
    // A client that opens no window, but sends a PING or a SETTINGS now
    // and then: their acks are no progress of the answer. Each flush of
    // an ack used to start the send timeout again, so the stream (and
    // its file, and an old worker at a reload) was held for as long as
    // they came. Now the stream is reset (CANCEL) at `timeouts.send`,
    // and the connection, left with no stream, hears GOAWAY and closes.
    let mut b = Builder::new();
    b.file("index.html", b"still here\n");
    b.file("big.bin", &pattern(1 << 20));
    b.config("[timeouts]\nsend = \"1s\"\n");
    let s = b.start();
    let mut c = H2::connect(s.addr(), &[(setting::INITIAL_WINDOW_SIZE, 0)], 0);
    let id = c.get("/big.bin", &[]);
    c.sock
        .set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let started = Instant::now();
    let (mut sent, mut acks) = (0, 0);
    let mut seen = Vec::new();
    loop {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "still open after {acks} acks: {seen:?}"
        );
        match c.frame_or_quiet() {
            Next::Closed => break,
            Next::Quiet => {
                // The control frames that used to keep it going.
                let mut out = Vec::new();
                match sent % 2 {
                    0 => frame::write_ping(&mut out, b"keepaliv"),
                    _ => frame::write_settings(&mut out, &[(setting::INITIAL_WINDOW_SIZE, 0)]),
                }
                sent += 1;
                // (The server may have closed meanwhile.)
                let _ = c.sock.write_all(&out);
            }
            Next::Frame(f) if f.flags & flag::ACK != 0 => acks += 1,
            Next::Frame(f) if f.kind == kind::SETTINGS => {
                let mut out = Vec::new();
                frame::write_settings_ack(&mut out);
                c.send(&out);
            }
            // (The server's own connection window.)
            Next::Frame(f) if f.kind == kind::WINDOW_UPDATE => {}
            Next::Frame(f) => seen.push((f.kind, f.stream, f.payload)),
        }
    }
    assert!(acks >= 2, "the control frames were answered meanwhile");
    // The head, then (no DATA: no window) RST_STREAM CANCEL, then
    // GOAWAY NO_ERROR naming the stream, then the close.
    let mut rst = Vec::new();
    frame::write_rst(&mut rst, id, ErrorCode::Cancel);
    let mut goaway = Vec::new();
    frame::write_goaway(&mut goaway, id, ErrorCode::NoError, b"");
    assert_eq!(seen.len(), 3, "{seen:?}");
    assert_eq!((seen[0].0, seen[0].1), (kind::HEADERS, id));
    assert_eq!(seen[1], (kind::RST_STREAM, id, rst[9..].to_vec()));
    assert_eq!(seen[2], (kind::GOAWAY, 0, goaway[9..].to_vec()));
    s.wait_stderr_line(&format!(
        "HTTP/2 stream {id} let nothing of its answer through"
    ));
    // The worker goes on.
    assert_eq!(s.get("/index.html").body, b"still here\n");
}

#[test]
fn rapid_reset_over_the_wire_is_sent_goaway() {
    let (s, _) = site();
    let mut c = H2::connect(s.addr(), &[], 0);
    let mut out = Vec::new();
    for i in 0..300u32 {
        let id = 1 + 2 * i;
        let block = H2::block("GET", "/index.html", &[]);
        frame::write_head(&mut out, block.len(), kind::HEADERS, flag::END_HEADERS, id);
        out.extend_from_slice(&block);
        frame::write_rst(&mut out, id, ErrorCode::Cancel);
    }
    c.send(&out);
    assert_eq!(c.goaway(), Some(ErrorCode::EnhanceYourCalm as u32));
    assert!(c.frame().is_none(), "and the connection is closed");
    // The server is fine: a new connection is served.
    let mut c = H2::connect(s.addr(), &[], 0);
    let id = c.get("/index.html", &[]);
    assert_eq!(c.answers(&[id])[0].status(), "200");
}

#[test]
fn a_request_head_over_the_list_size_gets_431() {
    let (s, _) = site();
    let mut c = H2::connect(s.addr(), &[], 0);
    let big = "x".repeat(70 * 1024);
    let id = c.get("/index.html", &[("x-big", &big)]);
    let a = c.answers(&[id]);
    assert_eq!(a[0].status(), "431");
}

#[test]
fn a_head_the_request_parser_refuses_is_answered_on_its_stream_alone() {
    // A head HPACK lets through but that the HTTP/1.1 parser it is
    // rebuilt for refuses (a control byte in a value: 400; over
    // limits.max_header_bytes, under the header list size: 431), with a
    // user-agent before the fault: the fields read before it pointed
    // into the rebuilt head, not the request's copy, and its log line
    // read them there: a panic (the connection dropped, the download on
    // it cut: "internal error serving"), or the last request's bytes
    // (its request line logged for this one's 400).
    let (s, big) = site();
    let mut c = H2::connect(s.addr(), &[], 0);
    let first = c.get("/index.html?secret=earlier", &[("user-agent", "first")]);
    assert_eq!(c.answers(&[first])[0].status(), "200");
    let download = c.get("/big.bin", &[]);
    let agent = "a-client/1.0 ".repeat(10).trim_end().to_string();
    let bad = c.get(
        "/index.html",
        &[("user-agent", &agent), ("x-bad", "a\u{1}b")],
    );
    let x = "x".repeat(6000);
    let large = c.get(
        "/index.html",
        &[
            ("user-agent", &agent),
            ("x-a", &x),
            ("x-b", &x),
            ("x-c", &x),
        ],
    );
    let a = c.answers(&[download, bad, large]);
    assert_eq!((a[0].status(), a[0].reset), ("200", None));
    assert!(
        a[0].body == big,
        "the download on the same connection is whole"
    );
    assert_eq!(a[1].status(), "400", "{:?}", a[1]);
    assert_eq!(a[2].status(), "431");
    let line = s.wait_access_line(|l| l.windows(5).any(|w| w == b"\" 400"));
    assert_eq!(
        std::str::from_utf8(&line).unwrap().split('"').nth(1),
        Some("-"),
        "no request line of another request's: {:?}",
        String::from_utf8_lossy(&line)
    );
    let line = s.wait_access_line(|l| l.windows(5).any(|w| w == b"\" 431"));
    assert!(!line.windows(6).any(|w| w == b"secret"), "{line:?}");
    assert!(!s.stderr().contains("internal error"), "{}", s.stderr());
}

#[test]
fn streams_answered_but_left_open_by_a_silent_client_end_at_the_body_timeout() {
    // A GET whose HEADERS lacks END_STREAM, a POST whose declared body
    // never comes: each is answered whole (200, 405), and the client,
    // silent after, keeps its half of the stream open. Such a stream
    // counted as work under way, so neither the keep-alive time nor any
    // other ever closed the connection: one HEADERS frame held a
    // connection (a slot of limits.max_connections) forever. It now
    // ends at timeouts.body, as HTTP/1.1's does, with GOAWAY NO_ERROR.
    let mut b = Builder::new();
    b.file("index.html", b"<h1>hi</h1>\n");
    b.config("[timeouts]\nbody = \"1s\"\nkeepalive = \"1s\"\n");
    let s = b.start();
    let body_of = |len: &str| {
        let mut c = H2::connect(s.addr(), &[], 0);
        let block = H2::block("POST", "/index.html", &[("content-length", len)]);
        let mut out = Vec::new();
        frame::write_headers(&mut out, 1, &block, false, 16_384);
        c.send(&out);
        c
    };
    let mut get = H2::connect(s.addr(), &[], 0);
    let mut out = Vec::new();
    frame::write_headers(
        &mut out,
        1,
        &H2::block("GET", "/index.html", &[]),
        false,
        16_384,
    );
    get.send(&out);
    let mut post = body_of("10");
    for (c, status) in [(&mut get, "200"), (&mut post, "405")] {
        let mut a = common::h2::Answer::default();
        while !a.take(c.frame().expect("the answer"), &mut Vec::new()) {}
        assert_eq!(a.status(), status);
        // Then the connection ends by itself: GOAWAY NO_ERROR naming
        // the stream, then the close.
        let mut goaway = None;
        let end = Instant::now() + WAIT_LIMIT;
        loop {
            match c.frame_or_quiet() {
                Next::Frame(f) if f.kind == kind::GOAWAY => goaway = Some(f.payload),
                Next::Frame(_) => {}
                Next::Closed => break,
                Next::Quiet => assert!(Instant::now() < end, "still open ({status})"),
            }
        }
        let goaway = goaway.expect("a GOAWAY before the close");
        assert_eq!(&goaway[..8], &[0, 0, 0, 1, 0, 0, 0, 0], "{status}");
    }
}

#[test]
fn a_password_check_does_not_hold_up_the_other_streams() {
    // bcrypt at cost 10: hashed off the event loop, as over HTTP/1.1.
    let mut b = Builder::new();
    b.file("private/secret.txt", b"the secret");
    b.file("public.txt", b"open");
    let slow = "slow:$2y$10$34Rl/Ysv91EuiTng9PxUSeA32JoBjCFw7vXqKK.Fjw/oWnElaGypu\n";
    write_file(&b.base().join("htpasswd"), slow.as_bytes());
    b.config("[[auth]]\npath = \"/private/\"\nrealm = \"P\"\nhtpasswd = \"htpasswd\"\n");
    b.workers(1);
    let s = b.start();
    let mut c = H2::connect(s.addr(), &[], 0);
    let auth = basic_auth("slow", "correct horse");
    let private = c.get("/private/secret.txt", &[("authorization", &auth)]);
    let public = c.get("/public.txt", &[]);
    // The stream behind the password is answered after the one that
    // came later, which did not wait for the hash.
    let first = c.first_headers();
    assert_eq!(first, public);
    let a = c.answers(&[private]);
    assert_eq!(
        (a[0].status(), a[0].body.as_slice()),
        ("200", &b"the secret"[..])
    );
    let wrong = c.get(
        "/private/secret.txt",
        &[("authorization", &basic_auth("slow", "nope"))],
    );
    assert_eq!(c.answers(&[wrong])[0].status(), "401");
}

#[test]
fn a_password_check_on_a_request_with_a_body_is_off_the_loop_too() {
    // Uploads behind a password (bcrypt at cost 10): the hash runs off
    // the loop while the body is held, so a stream that came later is
    // answered first (hashed on the loop, the upload to a static file
    // would be refused, 405, before it), and a program gets the body
    // whole once the password is known.
    use std::os::unix::fs::PermissionsExt;
    let mut b = Builder::new();
    b.file("public.txt", b"open");
    b.file("p/secret.txt", b"the secret");
    let script = b.base().join("cgi-bin").join("echo.sh");
    write_file(
        &script,
        b"#!/bin/sh\necho 'Content-Type: text/plain'\necho\ncat\n",
    );
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let slow = "slow:$2y$10$34Rl/Ysv91EuiTng9PxUSeA32JoBjCFw7vXqKK.Fjw/oWnElaGypu\n";
    write_file(&b.base().join("htpasswd"), slow.as_bytes());
    b.config("[[auth]]\npath = \"/p/\"\nrealm = \"P\"\nhtpasswd = \"htpasswd\"\n[[cgi]]\nurl = \"/p/cgi/\"\ndir = \"cgi-bin\"\n");
    b.workers(1);
    let s = b.start();
    let mut c = H2::connect(s.addr(), &[], 0);
    let upload = pattern(100_000);
    let len = upload.len().to_string();
    let auth = basic_auth("slow", "correct horse");
    let fields = [("authorization", auth.as_str()), ("content-length", &len)];
    let private = c.request("POST", "/p/secret.txt", &fields, Some(&upload));
    let public = c.get("/public.txt", &[]);
    let first = c.first_headers();
    assert_eq!(first, public);
    assert_eq!(c.answers(&[private])[0].status(), "405");
    let echo = c.request("POST", "/p/cgi/echo.sh", &fields, Some(&upload));
    let a = c.answers(&[echo]);
    assert_eq!(a[0].status(), "200");
    assert!(a[0].body == upload, "{} bytes echoed", a[0].body.len());
    // A wrong password: 401, its body dropped, the connection goes on.
    let wrong = basic_auth("slow", "nope");
    let fields = [("authorization", wrong.as_str()), ("content-length", &len)];
    let id = c.request("POST", "/p/cgi/echo.sh", &fields, Some(&upload));
    assert_eq!(c.answers(&[id])[0].status(), "401");
    let id = c.get("/public.txt", &[]);
    assert_eq!(c.answers(&[id])[0].body, b"open");
}

#[test]
fn a_throttled_answer_never_exceeds_its_rate() {
    let body = pattern(600_000);
    let mut b = Builder::new();
    b.file("v.mp4", &body);
    b.config("[[throttle]]\npattern = \"*.mp4\"\nrate = \"256KiB/s\"\n");
    let s = b.start();
    let rate = 256.0 * 1024.0;
    let mut c = H2::connect(
        s.addr(),
        &[(setting::INITIAL_WINDOW_SIZE, 16 << 20)],
        16 << 20,
    );
    let t0 = Instant::now();
    let id = c.get("/v.mp4", &[]);
    assert_eq!(c.answers(&[id])[0].body, body, "intact");
    // (100 ms of burst allowed, as over HTTP/1.1: tests/it/throttle.rs.)
    let least = Duration::from_secs_f64((600_000.0 - rate / 10.0) / rate);
    assert!(
        t0.elapsed() >= least,
        "600 kB at 256 KiB/s in {:?}",
        t0.elapsed()
    );
}

#[test]
fn a_throttle_paces_its_own_streams_not_the_connections_others() {
    // A throttled video (64 KiB/s) and a large file nobody throttles on
    // one connection: the file comes at full speed meanwhile (the whole
    // connection used to be paced while the video was sent).
    let video = pattern(600_000);
    let big = pattern(2 << 20);
    let mut b = Builder::new();
    b.file("v.mp4", &video);
    b.file("big.bin", &big);
    b.config("[[throttle]]\npattern = \"*.mp4\"\nrate = \"64KiB/s\"\n");
    let s = b.start();
    let mut c = H2::connect(
        s.addr(),
        &[(setting::INITIAL_WINDOW_SIZE, 16 << 20)],
        16 << 20,
    );
    let v = c.get("/v.mp4", &[]);
    let id = c.get("/big.bin", &[]);
    let (mut got, mut video_bytes) = (0, 0);
    while got < big.len() {
        let f = c.frame().expect("frames");
        if f.kind == kind::DATA {
            if f.stream == id {
                got += f.payload.len();
            } else if f.stream == v {
                video_bytes += f.payload.len();
            }
        }
    }
    // (64 KiB/s: 300 kB would take more than four seconds.)
    assert!(
        video_bytes < 300_000,
        "{video_bytes} bytes of the video first"
    );
}

#[test]
fn a_connection_rate_is_shared_by_the_connections_streams() {
    // connection_rate = 128 KiB/s for two 200 kB videos on one
    // connection: 400 kB at 128 KiB/s together (less the 100 ms burst),
    // not each stream at its own 128 KiB/s.
    let video = pattern(200_000);
    let mut b = Builder::new();
    b.file("a.mp4", &video);
    b.file("b.mp4", &video);
    b.config("[[throttle]]\npattern = \"*.mp4\"\nconnection_rate = \"128KiB/s\"\n");
    let s = b.start();
    let mut c = H2::connect(
        s.addr(),
        &[(setting::INITIAL_WINDOW_SIZE, 16 << 20)],
        16 << 20,
    );
    let t0 = Instant::now();
    let ids = [c.get("/a.mp4", &[]), c.get("/b.mp4", &[])];
    let a = c.answers(&ids);
    assert!(a[0].body == video && a[1].body == video, "intact");
    let rate = 128.0 * 1024.0;
    let least = Duration::from_secs_f64((400_000.0 - rate / 10.0) / rate);
    assert!(
        t0.elapsed() >= least,
        "400 kB at 128 KiB/s in {:?}",
        t0.elapsed()
    );
}

/// A site with `/cgi-bin/` scripts (shell) next to its files.
fn cgi_site() -> Server {
    use std::os::unix::fs::PermissionsExt;
    let mut b = Builder::new();
    b.file("sub/a.txt", b"a file\n");
    let scripts = [
        ("hi.sh", "echo 'Content-Type: text/plain'\necho\necho \"hi over $SERVER_PROTOCOL\""),
        ("echo.sh", "echo 'Content-Type: text/plain'\necho\necho \"$REQUEST_METHOD $CONTENT_LENGTH\"\ncat"),
        ("redirect.sh", "echo 'Location: /sub/a.txt'\necho"),
        ("broken.sh", "echo 'no head here' >&2\nexit 3"),
        ("short.sh", "echo 'Content-Type: text/plain'\necho 'Content-Length: 100'\necho\nprintf 'only ten b'"),
        ("big.sh", "echo 'Content-Type: application/octet-stream'\necho\nhead -c 3000000 /dev/zero"),
        // Silent until it is killed (at most 30 s if it is not).
        ("hang.sh", "sleep 30"),
        // Whole HTTP/1.1 responses of their own.
        ("nph-raw.sh", "printf 'HTTP/1.1 201 Created\\r\\nContent-Type: text/plain\\r\\nX-Nph: yes\\r\\nConnection: close\\r\\nContent-Length: 5\\r\\n\\r\\nhello'"),
        ("nph-chunked.sh", "printf 'HTTP/1.1 200 OK\\r\\nContent-Type: text/plain\\r\\nTransfer-Encoding: chunked\\r\\n\\r\\n5\\r\\nhello\\r\\n6\\r\\n world\\r\\n0\\r\\n\\r\\n'"),
        ("nph-cut.sh", "printf 'HTTP/1.1 200 OK\\r\\nTransfer-Encoding: chunked\\r\\n\\r\\n5\\r\\nhello\\r\\n'"),
        ("nph-bad.sh", "printf 'Content-Type: text/plain\\r\\n\\r\\nnot a status line'"),
    ];
    for (name, body) in scripts {
        let path = b.base().join("cgi-bin").join(name);
        write_file(&path, format!("#!/bin/sh\n{body}\n").as_bytes());
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    b.config("[timeouts]\ncgi = \"1s\"\nbody = \"1s\"\n[[cgi]]\nurl = \"/cgi-bin/\"\ndir = \"cgi-bin\"\n");
    b.access_log();
    b.start()
}

#[test]
fn a_program_beyond_the_connections_sixteen_waits_its_turn_with_its_body() {
    // 40 streams at once for a program that leaves a mark and waits:
    // 16 run. The rest used to start their programs too (answered 503
    // after their processes had started), then were refused
    // (REFUSED_STREAM), which Chromium sends again at once, is refused
    // again, and fails as a network error (14 of a page's 30 fetches).
    // Now each waits for its turn, oldest stream first, as one for an
    // upstream does. One with a body was still refused (its body, held
    // with the connection's credit, would have stalled the uploads of
    // the programs under way): Chromium failed such a page's POSTs the
    // same way. Now it waits too, its body held within its stream's
    // window and the connection's credit given back, and its program
    // gets the whole body in its turn; past `http2.connection_window`
    // held so, a stream is refused before anything of it runs.
    use std::os::unix::fs::PermissionsExt;
    let mut b = Builder::new();
    let marks = b.base().join("marks");
    let release = b.base().join("release");
    std::fs::create_dir_all(&marks).unwrap();
    let script = b.base().join("cgi-bin/mark.sh");
    let body = format!(
        "#!/bin/sh\ncat > '{0}'/\"$QUERY_STRING\"\ni=0\n\
         while [ ! -e '{1}' ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done\n\
         echo 'Content-Type: text/plain'\necho\necho ran\ncat '{0}'/\"$QUERY_STRING\"\n",
        marks.display(),
        release.display()
    );
    write_file(&script, body.as_bytes());
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    b.config(&format!(
        "[http2]\nconnection_window = \"64KiB\"\n[[cgi]]\nurl = \"/cgi-bin/\"\ndir = \"cgi-bin\"\n\
         writable = [\"{}\"]\n",
        marks.display()
    ));
    let s = b.start();
    let mut c = H2::connect(s.addr(), &[], 0);
    let gets = |c: &mut H2, ids: &[u32], tag: &str| {
        let mut out = Vec::new();
        for id in ids {
            let block = H2::block("GET", &format!("/cgi-bin/mark.sh?{tag}{id}"), &[]);
            frame::write_headers(&mut out, *id, &block, true, 16_384);
        }
        c.send(&out);
    };
    // Requests with a body of `len` bytes, sent whole at once (in DATA
    // frames of 16 KiB at most).
    let body_of = |id: u32, len: usize| -> Vec<u8> {
        (0..len)
            .map(|i| b'a' + ((i + id as usize) % 26) as u8)
            .collect()
    };
    let posts = |c: &mut H2, ids: &[u32], len: usize| {
        let mut out = Vec::new();
        for id in ids {
            let length = len.to_string();
            let block = H2::block(
                "POST",
                &format!("/cgi-bin/mark.sh?p{id}"),
                &[("content-length", &length)],
            );
            frame::write_headers(&mut out, *id, &block, false, 16_384);
            let data = body_of(*id, len);
            let mut chunks = data.chunks(16_384).peekable();
            while let Some(chunk) = chunks.next() {
                let last = chunks.peek().is_none();
                out.extend_from_slice(&frame::data_head(*id, chunk.len(), last));
                out.extend_from_slice(chunk);
            }
        }
        c.send(&out);
    };
    let marked = || {
        let mut m: Vec<String> = std::fs::read_dir(&marks)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        m.sort();
        m
    };
    let named = |ids: &[u32], tag: &str| {
        let mut m: Vec<String> = ids.iter().map(|id| format!("{tag}{id}")).collect();
        m.sort();
        m
    };
    let ids: Vec<u32> = (0..40).map(|i| 1 + 2 * i).collect();
    gets(&mut c, &ids, "s");
    wait_until("the 16 programs' marks", || marked().len() >= 16);
    // Seven requests with a body of 5,000 bytes beyond the 16: held, not
    // refused, not answered, nothing of them run.
    let with_body: Vec<u32> = (81..95).step_by(2).collect();
    posts(&mut c, &with_body, 5_000);
    // (A PING's answer: every frame before it was read.)
    let mut ping = vec![0, 0, 8, kind::PING, 0, 0, 0, 0, 0];
    ping.extend_from_slice(b"seen all");
    c.send(&ping);
    loop {
        let f = c.frame().expect("the PING's answer");
        assert!(
            !matches!(f.kind, kind::HEADERS | kind::RST_STREAM),
            "no answer, no refusal: {f:?}"
        );
        if f.kind == kind::PING {
            break;
        }
    }
    assert_eq!(marked(), named(&ids[..16], "s"), "the oldest 16 run");
    // Released, the 16 end, and the 24 waiting and the seven with a body
    // run in their turn: all answered, each program with its whole body.
    std::fs::write(&release, b"").unwrap();
    let mut all_ids = ids.clone();
    all_ids.extend(&with_body);
    for (id, a) in all_ids.iter().zip(c.answers(&all_ids)) {
        let mut want = b"ran\n".to_vec();
        if *id > 80 {
            want.extend(body_of(*id, 5_000));
        }
        assert_eq!(
            (a.status(), a.reset),
            ("200", None),
            "stream {id}: {:?}",
            String::from_utf8_lossy(&a.body)
        );
        assert!(a.body == want, "stream {id}: its body, whole");
    }
    let mut all = named(&ids, "s");
    all.extend(named(&with_body, "p"));
    all.sort();
    assert_eq!(marked(), all, "each program ran once");
    // Sixteen running again: requests with bodies of 30,000 bytes beyond
    // them. Two are held (60,000 bytes, within the connection's window of
    // 64 KiB); the third would hold more: refused (REFUSED_STREAM), and
    // it never runs. The two run with their bodies in their turn.
    std::fs::remove_file(&release).unwrap();
    let again: Vec<u32> = (95..127).step_by(2).collect();
    gets(&mut c, &again, "t");
    wait_until("the 16 programs' marks again", || marked().len() >= 16 + 47);
    let refusal = |c: &mut H2, id: u32| {
        let f = loop {
            let f = c.frame().expect("the refusal");
            assert_ne!(f.kind, kind::HEADERS, "no answer before the release");
            if f.kind == kind::RST_STREAM {
                break f;
            }
        };
        let mut rst = Vec::new();
        frame::write_rst(&mut rst, id, ErrorCode::RefusedStream);
        assert_eq!((f.stream, &f.payload[..]), (id, &rst[9..]));
    };
    // A body without a length is read whole before its program starts:
    // refused then (a wait could not give it again), not left waiting.
    let mut out = Vec::new();
    let block = H2::block("POST", "/cgi-bin/mark.sh?p127", &[]);
    frame::write_headers(&mut out, 127, &block, false, 16_384);
    out.extend_from_slice(&frame::data_head(127, 5, true));
    out.extend_from_slice(b"whole");
    c.send(&out);
    refusal(&mut c, 127);
    let big: Vec<u32> = vec![129, 131, 133];
    posts(&mut c, &big, 30_000);
    refusal(&mut c, 133);
    s.wait_stderr_line("past http2.connection_window");
    std::fs::write(&release, b"").unwrap();
    let mut waited = again.clone();
    waited.extend(&big[..2]);
    for (id, a) in waited.iter().zip(c.answers(&waited)) {
        assert_eq!((a.status(), a.reset), ("200", None), "stream {id}");
        let mut want = b"ran\n".to_vec();
        if *id > 127 {
            want.extend(body_of(*id, 30_000));
        }
        assert!(a.body == want, "stream {id}: its body, whole");
    }
    all.extend(named(&again, "t"));
    all.extend(named(&big[..2], "p"));
    all.sort();
    assert_eq!(marked(), all, "the refused one never ran");
}

/// A POST to a program on a new connection to `s`, its body (of
/// unknown length, held whole for the program) stopped after 5 bytes:
/// the connection and the request's stream.
fn stalled_post(s: &Server) -> (H2, u32) {
    let mut c = H2::connect(s.addr(), &[], 0);
    let id = c.next;
    c.next += 2;
    let block = H2::block("POST", "/cgi-bin/echo.sh", &[]);
    let mut out = Vec::new();
    frame::write_headers(&mut out, id, &block, false, 16_384);
    out.extend_from_slice(&frame::data_head(id, 5, false));
    out.extend_from_slice(b"hello");
    c.send(&out);
    (c, id)
}

#[test]
fn a_request_body_that_stops_coming_is_answered_408() {
    // A body of unknown length for a program is held whole; its client
    // sends part of it, then nothing: after timeouts.body, 408.
    let s = cgi_site();
    let (mut c, id) = stalled_post(&s);
    let a = c.answers(&[id]);
    assert_eq!(a[0].status(), "408");
}

#[test]
fn frames_to_ignore_do_not_keep_a_body_from_its_timeout() {
    // As above, then an empty frame of a type the server ignores (RFC
    // 9113 §4.1) every 0.2 s, and a PING: no byte of the body comes, so
    // it is answered 408 at timeouts.body all the same.
    use common::h2::Next;
    let s = cgi_site();
    let (mut c, id) = stalled_post(&s);
    c.sock
        .set_read_timeout(Some(std::time::Duration::from_millis(200)))
        .unwrap();
    // (An unknown type, 0xfa, on the request's stream; a PING.)
    let mut drip = vec![0, 0, 0, 0xfa, 0];
    drip.extend_from_slice(&id.to_be_bytes());
    drip.extend_from_slice(&[0, 0, 8, 6, 0, 0, 0, 0, 0]);
    drip.extend_from_slice(b"pingpong");
    let status = (0..50).find_map(|_| match c.frame_or_quiet() {
        Next::Frame(f) if f.kind == 1 && f.stream == id => f
            .fields
            .iter()
            .find(|(n, _)| n == ":status")
            .map(|(_, v)| v.clone()),
        Next::Frame(_) => None,
        Next::Quiet => {
            c.send(&drip);
            None
        }
        Next::Closed => Some("closed".into()),
    });
    assert_eq!(status.as_deref(), Some("408"));
}

#[test]
fn a_head_redirected_locally_by_a_program_gets_no_data() {
    // `Location: /sub/a.txt` answering a HEAD: the file's HEADERS
    // alone. It used to be followed as a GET, whose DATA went on the
    // HEAD's stream (a client checks them against content-length: 0
    // expected, 7 received).
    let s = cgi_site();
    let mut c = H2::connect(s.addr(), &[], 0);
    let head = c.request("HEAD", "/cgi-bin/redirect.sh", &[], None);
    let get = c.get("/cgi-bin/redirect.sh", &[]);
    let a = c.answers(&[head, get]);
    assert_eq!(a[0].status(), "200");
    assert_eq!(a[0].field("content-length"), Some("7"));
    assert_eq!(a[0].body, b"", "DATA on a HEAD stream");
    assert_eq!(a[0].reset, None);
    assert_eq!(
        (a[1].status(), a[1].body.as_slice()),
        ("200", &b"a file\n"[..])
    );
}

#[test]
fn a_post_without_a_body_or_a_length_reaches_the_program() {
    // A POST whose HEADERS end its stream, with no content-length (curl
    // --http2 -X POST): its body is known to be empty (RFC 9113 §8.1.1).
    // It used to be answered 411 Length Required, as HTTP/1.1 then
    // answered a POST without a length (now one without a body too).
    let s = cgi_site();
    let mut c = H2::connect(s.addr(), &[], 0);
    let ids = [
        c.request("POST", "/cgi-bin/echo.sh", &[], None),
        c.request("PUT", "/cgi-bin/echo.sh", &[], None),
    ];
    let a = c.answers(&ids);
    assert_eq!(
        (a[0].status(), a[0].body.as_slice()),
        ("200", &b"POST \n"[..])
    );
    assert_eq!(
        (a[1].status(), a[1].body.as_slice()),
        ("200", &b"PUT \n"[..])
    );
}

#[test]
fn a_silent_program_is_stopped_and_its_stream_answered_504() {
    let s = cgi_site();
    let mut c = H2::connect(s.addr(), &[], 0);
    let hang = c.get("/cgi-bin/hang.sh", &[]);
    let hi = c.get("/cgi-bin/hi.sh", &[]);
    let a = c.answers(&[hi, hang]);
    assert_eq!(a[0].status(), "200");
    assert_eq!(a[1].status(), "504");
}

#[test]
fn cgi_programs_answer_streams() {
    let s = cgi_site();
    let mut c = H2::connect(
        s.addr(),
        &[(setting::INITIAL_WINDOW_SIZE, 16 << 20)],
        16 << 20,
    );
    // (Within the stream window, 256 KiB: this client does not wait
    // for window updates before it sends.)
    let upload = pattern(200_000);
    let len = upload.len().to_string();
    let ids = [
        c.get("/cgi-bin/hi.sh", &[]),
        c.request(
            "POST",
            "/cgi-bin/echo.sh",
            &[("content-length", &len)],
            Some(&upload),
        ),
        c.get("/cgi-bin/redirect.sh", &[]),
        c.get("/cgi-bin/broken.sh", &[]),
        c.get("/cgi-bin/big.sh", &[]),
        c.request("HEAD", "/cgi-bin/hi.sh", &[], None),
        c.get("/cgi-bin/short.sh", &[]),
        // No content-length: held whole first, then the program is told
        // its length, as over HTTP/1.1.
        c.request("POST", "/cgi-bin/echo.sh", &[], Some(&upload[..50_000])),
    ];
    let a = c.answers(&ids);
    assert_eq!(
        (a[0].status(), a[0].body.as_slice()),
        ("200", &b"hi over HTTP/2.0\n"[..])
    );
    assert_eq!(a[0].field("content-type"), Some("text/plain"));
    // The body streamed to the program, and its output back.
    let mut expected = format!("POST {len}\n").into_bytes();
    expected.extend_from_slice(&upload);
    assert_eq!(a[1].status(), "200");
    assert!(a[1].body == expected, "the upload came back whole");
    assert_eq!(
        (a[2].status(), a[2].body.as_slice()),
        ("200", &b"a file\n"[..]),
        "local redirect"
    );
    assert_eq!(a[3].status(), "502");
    assert_eq!((a[4].status(), a[4].body.len()), ("200", 3_000_000));
    assert_eq!((a[5].status(), a[5].body.len()), ("200", 0), "HEAD");
    // Shorter than its Content-Length: the stream is reset, not ended.
    assert_eq!(a[6].field("content-length"), Some("100"));
    assert_eq!(a[6].body, b"only ten b");
    assert_eq!(a[6].reset, Some(ErrorCode::Internal as u32));
    let mut expected = b"POST 50000\n".to_vec();
    expected.extend_from_slice(&upload[..50_000]);
    assert!(
        a[7].status() == "200" && a[7].body == expected,
        "a body of unknown length"
    );
    let read = || std::fs::read_to_string(&s.access_path).unwrap_or_default();
    let log = poll(WAIT_LIMIT, || {
        let log = read();
        (log.matches("/cgi-bin/").count() >= 7 && log.contains("/sub/a.txt")).then_some(log)
    });
    let log =
        log.unwrap_or_else(|| panic!("not seven CGI lines and the redirected one:\n{}", read()));
    assert!(
        log.contains("\"POST /cgi-bin/echo.sh HTTP/2.0\" 200 "),
        "{log}"
    );
    assert!(
        log.contains("\"GET /cgi-bin/broken.sh HTTP/2.0\" 502 "),
        "{log}"
    );
}

#[test]
fn an_answer_that_ends_after_its_bytes_left_is_logged_at_once() {
    // A HEAD request to a program that goes on after its head: the
    // HEADERS frame (with END_STREAM) leaves at once, and the answer
    // only ends when the program exits, with nothing more to send. Its
    // access-log line must be written then, not when the connection
    // next writes or closes (this one stays open and idle).
    use std::os::unix::fs::PermissionsExt;
    let mut b = Builder::new();
    let path = b.base().join("cgi-bin/lingers.sh");
    write_file(
        &path,
        b"#!/bin/sh\necho 'Content-Type: text/plain'\necho\necho body\nsleep 0.3\n",
    );
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    b.config("[[cgi]]\nurl = \"/cgi-bin/\"\ndir = \"cgi-bin\"\n");
    b.access_log();
    let s = b.start();
    let mut c = H2::connect(s.addr(), &[], 0);
    let id = c.request("HEAD", "/cgi-bin/lingers.sh", &[], None);
    let a = c.answers(&[id]);
    assert_eq!((a[0].status(), a[0].body.len()), ("200", 0));
    let read = || std::fs::read_to_string(&s.access_path).unwrap_or_default();
    let logged = poll(WAIT_LIMIT, || {
        read()
            .contains("\"HEAD /cgi-bin/lingers.sh HTTP/2.0\" 200 ")
            .then_some(())
    });
    assert!(
        logged.is_some(),
        "no line while the connection is open: {:?}",
        read()
    );
    drop(c);
}

#[test]
fn nph_programs_answer_streams_from_their_own_head() {
    // An nph- program writes a whole HTTP/1.1 response; over HTTP/2 its
    // status line and fields become the stream's head (less what HTTP/2
    // forbids), and a chunked body is decoded.
    let s = cgi_site();
    let mut c = H2::connect(s.addr(), &[], 0);
    let ids = [
        c.get("/cgi-bin/nph-raw.sh", &[]),
        c.get("/cgi-bin/nph-chunked.sh", &[]),
        c.get("/cgi-bin/nph-cut.sh", &[]),
        c.get("/cgi-bin/nph-bad.sh", &[]),
    ];
    let a = c.answers(&ids);
    assert_eq!((a[0].status(), &a[0].body[..]), ("201", &b"hello"[..]));
    assert_eq!(a[0].field("x-nph"), Some("yes"));
    assert_eq!(a[0].field("content-length"), Some("5"));
    assert_eq!(a[0].field("connection"), None);
    assert_eq!(
        (a[1].status(), &a[1].body[..]),
        ("200", &b"hello world"[..])
    );
    assert_eq!(a[1].field("transfer-encoding"), None);
    assert_eq!(a[1].reset, None);
    // Without its last chunk the answer is incomplete: reset, not ended.
    assert_eq!(a[2].body, b"hello");
    assert_eq!(a[2].reset, Some(ErrorCode::Internal as u32));
    assert_eq!(a[3].status(), "502");
    // Over HTTP/1.1 the output still passes as it is.
    let r = s.request(b"GET /cgi-bin/nph-raw.sh HTTP/1.1\r\nHost: x\r\n\r\n");
    assert!(r.head.starts_with("HTTP/1.1 201 Created\r\n"), "{}", r.head);
}

#[test]
fn a_body_nobody_wants_is_read_and_dropped() {
    // A 900 kB upload to a static file is answered 405 and its body read
    // and dropped (its credit given back), so a client that sends its
    // whole body before it reads (past its 256 KiB window, even) still
    // gets the answer; one over limits.max_body (1 MiB) is answered 413
    // the same way, as HTTP/1.1 refuses it before it is routed.
    let s = cgi_site();
    let mut c = H2::connect(s.addr(), &[], 0);
    let body = pattern(2_000_000);
    let (small, large) = (900_000.to_string(), body.len().to_string());
    let ids = [
        c.request(
            "POST",
            "/sub/a.txt",
            &[("content-length", &small)],
            Some(&body[..900_000]),
        ),
        c.request(
            "POST",
            "/cgi-bin/echo.sh",
            &[("content-length", &large)],
            Some(&body),
        ),
    ];
    let a = c.answers(&ids);
    assert_eq!((a[0].status(), a[0].reset), ("405", None));
    assert_eq!((a[1].status(), a[1].reset), ("413", None));
    let id = c.get("/sub/a.txt", &[]);
    assert_eq!(
        c.answers(&[id])[0].body,
        b"a file\n",
        "the connection goes on"
    );
}

#[test]
fn a_window_that_does_not_open_holds_up_only_its_own_program() {
    // The client's stream windows stay at 64 KiB and it gives no credit
    // back (the connection's is wide): the big program's stream stops at
    // its window (its output waits in its pipe), and the other program's
    // stream is answered meanwhile.
    let s = cgi_site();
    let mut c = H2::connect(s.addr(), &[], 16 << 20);
    let big = c.get("/cgi-bin/big.sh", &[]);
    let hi = c.get("/cgi-bin/hi.sh", &[]);
    let mut seen = 0usize;
    let mut hi_done = false;
    while !hi_done {
        let f = c.frame().expect("frames");
        if f.stream == big && f.kind == kind::DATA {
            seen += f.payload.len();
        }
        hi_done = f.stream == hi && f.flags & flag::END_STREAM != 0;
    }
    assert!(seen <= 65_535, "no more than the window: {seen}");
}

#[test]
fn a_program_that_does_not_read_its_body_does_not_stall_the_upload_or_the_connection() {
    // Programs that answer without reading their request body (one
    // well, one with a bad head: 502, one not at all: 504 at
    // timeouts.cgi) while the client's upload fills the stream's
    // window: the rest of the body is read and dropped, the
    // credit of what the program never read given back (RFC 9113 §8.1,
    // §6.9), so the upload completes and the connection's window is not
    // eaten: a 1 MiB upload after each, on the same connection, to a
    // program that counts it, goes through. (Each program waits for its
    // gate until the window is full.)
    use std::os::unix::fs::PermissionsExt;
    let mut b = Builder::new();
    let bin = b.base().join("cgi-bin");
    let gated = |then: &str| {
        format!(
            "#!/bin/sh\ni=0\nwhile [ ! -e {}/gate.$QUERY_STRING ] && [ $i -lt 500 ]; do sleep 0.02; i=$((i+1)); done\n{then}\n",
            bin.display()
        )
    };
    let scripts = [
        (
            "noread.sh",
            gated("printf 'Content-Type: text/plain\\r\\n\\r\\nnot read\\n'"),
        ),
        ("garbage.sh", gated("echo 'not a header'\necho")),
        ("silent.sh", gated("exec sleep 30")),
        (
            "count.sh",
            "#!/bin/sh\nprintf 'Content-Type: text/plain\\r\\n\\r\\n'\nwc -c\n".to_string(),
        ),
    ];
    for (name, text) in scripts {
        let path = bin.join(name);
        write_file(&path, text.as_bytes());
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    b.config(
        "[limits]\nmax_body = \"8MiB\"\n[timeouts]\ncgi = \"2s\"\n\
         [[cgi]]\nurl = \"/cgi-bin/\"\ndir = \"cgi-bin\"\n",
    );
    let s = b.start();
    let mut u = common::h2::Uploader::connect(s.addr());
    let body = pattern(1 << 20);
    // Five rounds: enough for the lost credit to eat the connection's
    // 1 MiB window if the first stream did not stall already.
    for round in 0..5 {
        let (script, status) = match round % 3 {
            0 => ("noread.sh", "200"),
            1 => ("garbage.sh", "502"),
            _ => ("silent.sh", "504"),
        };
        let (local, peer) = (
            u.c.sock.local_addr().unwrap(),
            u.c.sock.peer_addr().unwrap(),
        );
        let gate = bin.join(format!("gate.{round}"));
        let a = u.post(&format!("/cgi-bin/{script}?{round}"), &body, true, || {
            // The window's worth is with the server before the program answers.
            wait_until("the server to read the upload so far", || {
                tcp_socket(local, peer).is_some_and(|t| t.tx_queue == 0)
                    && tcp_socket(peer, local).is_some_and(|t| t.rx_queue == 0)
            });
            write_file(&gate, b"");
        });
        assert_eq!(a.status(), status, "{script}: {a:?}");
        assert!(
            a.reset.is_none_or(|code| code == ErrorCode::NoError as u32),
            "{script}: {a:?}"
        );
        let a = u.post("/cgi-bin/count.sh", &body, true, || {});
        assert_eq!(
            (a.status(), String::from_utf8_lossy(&a.body).trim()),
            ("200", "1048576"),
            "round {round}: the next upload on the connection"
        );
    }
}

/// A site served over TLS only (the test certificate `a.test`).
#[cfg(feature = "tls")]
fn tls_site(extra: &str) -> (Server, Vec<u8>) {
    let big = pattern(1024 * 1024 + 7);
    let mut b = Builder::new();
    b.file("index.html", b"<h1>hi</h1>\n");
    b.file("big.bin", &big);
    b.tls();
    if !extra.is_empty() {
        b.config(extra);
    }
    (b.start(), big)
}

#[cfg(feature = "tls")]
#[test]
fn alpn_h2_serves_http2_over_tls_and_http1_to_the_others() {
    let (s, big) = tls_site("");
    let url = format!("https://127.0.0.1:{}/big.bin", s.port);
    let fetch = |flag: &str| {
        run(Command::new("curl")
            .args([
                "-sS",
                "-k",
                "--fail",
                flag,
                "-w",
                "%{http_version}",
                "-o",
                "-",
            ])
            .arg(&url))
    };
    let Some(o) = fetch("--http2") else {
        skip("curl not installed");
        return;
    };
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let (body, version) = o.stdout.split_at(o.stdout.len() - 1);
    assert_eq!(version, b"2", "h2 chosen by ALPN");
    assert!(body == big, "byte exact");
    let o = fetch("--http1.1").expect("curl");
    let (body, version) = o.stdout.split_at(o.stdout.len() - 3);
    assert_eq!(version, b"1.1", "http/1.1 chosen by ALPN");
    assert!(body == big);
    // With [http2] enable = false, h2 is not offered.
    let (s, _) = tls_site("[http2]\nenable = false\n");
    let url = format!("https://127.0.0.1:{}/index.html", s.port);
    let o = run(Command::new("curl")
        .args([
            "-sS",
            "-k",
            "--http2",
            "-w",
            "%{http_version}",
            "-o",
            "/dev/null",
        ])
        .arg(&url))
    .expect("curl");
    assert_eq!(o.stdout, b"1.1");
}

#[cfg(feature = "tls")]
#[test]
fn h2spec_passes_over_tls() {
    let (s, _) = tls_site("");
    let Some((summary, _, text)) = h2spec(&["-t", "-k"], s.port) else {
        return;
    };
    assert!(
        summary.contains("145 tests, 145 passed, 0 skipped, 0 failed"),
        "{text}"
    );
}

/// Runs h2spec (with `extra` arguments) against `port`: its summary line,
/// the cases that failed, and its whole report; `None` (a counted skip)
/// if it is not installed.
fn h2spec(extra: &[&str], port: u16) -> Option<(String, Vec<String>, String)> {
    let h2spec = std::env::var("H2SPEC").unwrap_or_else(|_| "h2spec".into());
    let args = ["-h", "127.0.0.1", "--timeout", "3", "-p"];
    let Some(o) = run(Command::new(&h2spec)
        .args(extra)
        .args(args)
        .arg(port.to_string()))
    else {
        skip("h2spec not installed (scripts/test installs it with go)");
        return None;
    };
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    let summary = text
        .lines()
        .rev()
        .find(|l| l.contains(" tests, "))
        .unwrap_or("")
        .to_string();
    let failed = text
        .lines()
        .filter(|l| l.trim_start().starts_with('×'))
        .map(|l| l.trim().to_string())
        .collect();
    Some((summary, failed, text))
}

/// Runs `cmd` (at most 60 s); `None` if the tool is not installed.
fn run(cmd: &mut Command) -> Option<std::process::Output> {
    run_for(cmd, Duration::from_secs(60))
}

#[test]
fn curl_with_prior_knowledge_fetches_byte_exact() {
    let (s, big) = site();
    let url = format!("http://127.0.0.1:{}/big.bin", s.port);
    let Some(o) = run(Command::new("curl")
        .args([
            "-sS",
            "--fail",
            "--http2-prior-knowledge",
            "-w",
            "%{http_version}",
            "-o",
            "-",
        ])
        .arg(&url))
    else {
        skip("curl not installed");
        return;
    };
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let (body, version) = o.stdout.split_at(o.stdout.len() - 1);
    assert_eq!(version, b"2", "spoken over HTTP/2");
    assert!(body == big, "byte exact");
}

#[test]
fn a_sparse_gigabyte_arrives_whole() {
    let b = Builder::new();
    let path = b.root().join("sparse.img");
    std::fs::File::create(&path)
        .unwrap()
        .set_len(1 << 30)
        .unwrap();
    let s = b.start();
    let url = format!("http://127.0.0.1:{}/sparse.img", s.port);
    let script = format!("curl -sS --fail --http2-prior-knowledge {url} | sha256sum");
    let Some(o) = run(Command::new("bash").args(["-o", "pipefail", "-c", &script])) else {
        skip("bash not installed");
        return;
    };
    if String::from_utf8_lossy(&o.stderr).contains("curl: not found")
        || o.status.code() == Some(127)
    {
        skip("curl not installed");
        return;
    }
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // SHA-256 of 1 GiB of zeros.
    assert!(
        o.stdout
            .starts_with(b"49bc20df15e412a64472421e13fe86ff1c5165e18b2afccf160d4dc19fe68a14"),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
}

#[test]
fn nghttp_fetches_over_h2c() {
    let (s, _) = site();
    let url = format!("http://127.0.0.1:{}/index.html", s.port);
    let Some(o) = run(Command::new("nghttp").args(["-n", "-s"]).arg(&url)) else {
        skip("nghttp not installed (Debian's nghttp2-client)");
        return;
    };
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let Some(o) = run(Command::new("nghttp").arg(&url)) else {
        return;
    };
    assert_eq!(o.stdout, b"<h1>hi</h1>\n");
}

/// What brisk answers an `Upgrade: h2c` request it takes, byte for byte.
const SWITCHING: &[u8] =
    b"HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n";

/// An HTTP/1.1 GET of `path` asking to upgrade to h2c, with
/// `HTTP2-Settings: settings` and `extra` header lines.
fn upgrade_request(path: &str, settings: &str, extra: &str) -> Vec<u8> {
    format!(
        "GET {path} HTTP/1.1\r\nHost: x\r\nConnection: Upgrade, HTTP2-Settings\r\n\
         Upgrade: h2c\r\nHTTP2-Settings: {settings}\r\n{extra}\r\n"
    )
    .into_bytes()
}

#[test]
fn an_upgrade_to_h2c_answers_on_stream_1_with_the_clients_settings() {
    let (s, big) = site();
    let mut c = H2::raw(s.addr());
    // HTTP2-Settings: SETTINGS_INITIAL_WINDOW_SIZE = 100 (00 04 00 00 00
    // 64, in base64url).
    c.send(&upgrade_request("/big.bin", "AAQAAABk", ""));
    while !c.buf.starts_with(SWITCHING) {
        assert!(
            SWITCHING.starts_with(&c.buf[..c.buf.len().min(SWITCHING.len())]),
            "{:?}",
            String::from_utf8_lossy(&c.buf)
        );
        let mut chunk = [0u8; 4096];
        let n = std::io::Read::read(&mut c.sock, &mut chunk).expect("read the 101");
        assert!(n > 0, "closed: {:?}", String::from_utf8_lossy(&c.buf));
        c.buf.extend_from_slice(&chunk[..n]);
    }
    c.buf.drain(..SWITCHING.len());
    // The client's preface, its SETTINGS frame (empty) and a PING.
    let mut out = brisk::h2::PREFACE.to_vec();
    frame::write_settings(&mut out, &[]);
    out.extend_from_slice(&[0, 0, 8, kind::PING, 0, 0, 0, 0, 0]);
    out.extend_from_slice(b"pingping");
    c.send(&out);
    c.next = 3;
    // The server's preface comes first; the one SETTINGS ack is the
    // frame's (settings that came in HTTP2-Settings are acknowledged by
    // the 101); stream 1's DATA keeps to the window of 100 they set.
    let first = c.frame().expect("the server's SETTINGS");
    assert_eq!((first.kind, first.flags & flag::ACK), (kind::SETTINGS, 0));
    let (mut acks, mut head, mut body) = (0, Vec::new(), Vec::new());
    loop {
        let f = c.frame().expect("frames up to the PING's ack");
        match (f.kind, f.stream) {
            (kind::SETTINGS, 0) if f.flags & flag::ACK != 0 => acks += 1,
            (kind::PING, 0) if f.flags & flag::ACK != 0 => break,
            (kind::HEADERS, 1) => head = f.fields,
            (kind::DATA, 1) => {
                assert!(
                    f.payload.len() <= 100,
                    "{} bytes in a window of 100",
                    f.payload.len()
                );
                body.extend_from_slice(&f.payload);
            }
            _ => {}
        }
    }
    assert_eq!(acks, 1);
    assert!(head.contains(&(":status".into(), "200".into())), "{head:?}");
    let mut rest = Vec::new();
    frame::write_window_update(&mut rest, 1, big.len() as u32);
    frame::write_window_update(&mut rest, 0, big.len() as u32);
    c.send(&rest);
    let a = c.answers(&[1]);
    body.extend_from_slice(&a[0].body);
    assert!(
        body == big,
        "stream 1's body: {} bytes of {}",
        body.len(),
        big.len()
    );
    // The connection goes on in HTTP/2.
    let id = c.get("/index.html", &[]);
    assert_eq!(id, 3);
    let a = c.answers(&[id]);
    assert_eq!(
        (a[0].status(), a[0].body.as_slice()),
        ("200", &b"<h1>hi</h1>\n"[..])
    );
}

#[test]
fn an_upgrade_to_h2c_that_cannot_be_taken_is_answered_over_http1() {
    let (s, _) = site();
    let bad = [
        // A body (RFC 7540 §3.2 would have it sent before the switch).
        upgrade_request("/index.html", "AAQAAABk", "Content-Length: 3\r\n")
            .into_iter()
            .chain(*b"abc")
            .collect::<Vec<u8>>(),
        // Settings that are not base64url, or not a SETTINGS payload.
        upgrade_request("/index.html", "not base64!", ""),
        upgrade_request("/index.html", "AAQA", ""),
        // HTTP2-Settings not named in Connection.
        b"GET /index.html HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: h2c\r\nHTTP2-Settings: AAQAAABk\r\n\r\n".to_vec(),
    ];
    for raw in bad {
        let mut c = s.connect();
        c.send(&raw);
        let r = c.response();
        assert!(r.head.starts_with("HTTP/1.1 "), "{}", r.head);
        assert!(!r.head.starts_with("HTTP/1.1 101"), "{}", r.head);
    }
    // With h2c off, the upgrade is ignored too.
    let mut b = Builder::new();
    b.file("index.html", b"<h1>hi</h1>\n");
    b.config("[http2]\ncleartext = false\n");
    let off = b.start();
    let mut c = off.connect();
    c.send(&upgrade_request("/index.html", "AAQAAABk", ""));
    let r = c.response();
    assert!(r.head.starts_with("HTTP/1.1 200 OK\r\n"), "{}", r.head);
    assert_eq!(r.body, b"<h1>hi</h1>\n");
}

#[test]
fn nghttp_and_curl_upgrade_to_h2c() {
    let (s, big) = site();
    let url = format!("http://127.0.0.1:{}/big.bin", s.port);
    let Some(o) = run(Command::new("nghttp").arg("-u").arg(&url)) else {
        skip("nghttp not installed (Debian's nghttp2-client)");
        return;
    };
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(
        o.stdout == big,
        "nghttp -u: {} bytes of {}",
        o.stdout.len(),
        big.len()
    );
    let Some(o) = run(Command::new("curl")
        .args(["-s", "--http2", "-w", "%{http_version}"])
        .arg(&url))
    else {
        skip("curl not installed");
        return;
    };
    let (body, version) = o.stdout.split_at(o.stdout.len() - 1);
    assert_eq!(version, b"2");
    assert!(
        body == big,
        "curl --http2: {} bytes of {}",
        body.len(),
        big.len()
    );
    let log = wait_for("two HTTP/2.0 lines", || {
        let log = std::fs::read_to_string(&s.access_path).ok()?;
        (log.matches("\"GET /big.bin HTTP/2.0\" 200").count() >= 2).then_some(log)
    });
    assert!(!log.contains("HTTP/1.1"), "{log}");
}

#[test]
fn h2load_gets_every_answer() {
    let (s, _) = site();
    let url = format!("http://127.0.0.1:{}/index.html", s.port);
    let Some(o) = run(Command::new("h2load")
        .args(["-n", "2000", "-c", "4", "-m", "10"])
        .arg(&url))
    else {
        skip("h2load not installed (Debian's nghttp2-client)");
        return;
    };
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("2000 succeeded, 0 failed, 0 errored"),
        "{text}"
    );
    assert!(text.contains("status codes: 2000 2xx"), "{text}");
}

#[test]
fn h2spec_passes_over_h2c() {
    let (s, _) = site();
    let Some((summary, failed, text)) = h2spec(&[], s.port) else {
        return;
    };
    assert!(failed.is_empty(), "{summary}\n{text}");
    assert!(
        summary.contains("145 tests, 145 passed, 0 skipped, 0 failed"),
        "{summary}"
    );
}

#[test]
fn a_failed_preface_closes_and_http1_mistakes_still_get_400() {
    let (s, _) = site();
    // Not HTTP/1.x (no `HTTP/` version) nor the preface: h2spec's
    // invalid preface gets no answer, only the close (RFC 9113 §3.4).
    let mut c = s.connect();
    c.send(b"INVALID CONNECTION PREFACE\r\n\r\n");
    c.expect_closed();
    // The preface's own line, then something else: HTTP/2's error.
    let mut c = H2::raw(s.addr());
    c.send(b"PRI * HTTP/2.0\r\n\r\nXX\r\n\r\n");
    assert_eq!(c.goaway(), Some(ErrorCode::Protocol as u32));
    // HTTP/1.1 with a mistake in its version is still answered 400.
    let r = s.request(b"GET /index.html http/1.1\r\nHost: x\r\n\r\n");
    assert_eq!(r.status, 400);
    // And without h2c on the port, the line is a bad HTTP/1.1 request.
    let mut b = Builder::new();
    b.file("index.html", b"hi");
    b.config("[http2]\ncleartext = false\n");
    let s = b.start();
    let r = s.request(b"INVALID CONNECTION PREFACE\r\n\r\n");
    assert_eq!(r.status, 400);
}

/// Sends `n` GETs of distinct files `/f/{first + i}.bin` on `c` and reads
/// until each has its HEADERS or its RST_STREAM: how many of each came,
/// and the RST_STREAM codes.
fn answered_or_refused(c: &mut H2, first: usize, n: usize) -> (usize, Vec<u32>) {
    let ids: Vec<u32> = (first..first + n)
        .map(|i| c.get(&format!("/f/{i}.bin"), &[]))
        .collect();
    let (mut heads, mut codes) = (0, Vec::new());
    while heads + codes.len() < n {
        let f = c.frame().expect("the connection stays open");
        if !ids.contains(&f.stream) {
            continue;
        }
        match f.kind {
            kind::HEADERS => {
                // (Not 503: a file failing to open for want of a
                // descriptor.)
                assert_eq!(f.fields[0], (":status".into(), "200".into()));
                heads += 1;
            }
            kind::RST_STREAM => codes.push(u32::from_be_bytes(f.payload[..4].try_into().unwrap())),
            _ => assert!(
                f.kind != kind::DATA || f.payload.is_empty(),
                "no window, no data"
            ),
        }
    }
    (heads, codes)
}

#[test]
fn streams_that_never_get_a_window_cannot_take_every_descriptor() {
    // Every answer of a stream whose client never opens its window
    // holds its file open until `timeouts.send`. Two connections opening
    // streams of distinct large files used to take every descriptor the
    // process had: files then failed to open (503) and no new client was
    // accepted. Now the worker's streams share half the descriptors
    // (64 of 128 here): past it, a connection with 8 answers under way
    // has its new streams refused (REFUSED_STREAM, to send again), and
    // a new client is served.
    let mut b = Builder::new();
    for i in 0..200 {
        b.file(&format!("f/{i}.bin"), &pattern(20 << 10));
    }
    b.file("index.html", b"still here\n");
    b.config("[static]\nopen_file_cache = 0\n");
    b.nofile(128);
    let s = b.start();
    let no_window = [(setting::INITIAL_WINDOW_SIZE, 0)];
    let mut one = H2::connect(s.addr(), &no_window, 0);
    let (heads, refused) = answered_or_refused(&mut one, 0, 100);
    assert_eq!((heads, refused.len()), (64, 36), "{refused:?}");
    assert!(refused
        .iter()
        .all(|&code| code == ErrorCode::RefusedStream as u32));
    // A second connection has its fair share answered, no more.
    let mut two = H2::connect(s.addr(), &no_window, 0);
    let (heads, refused) = answered_or_refused(&mut two, 100, 100);
    assert_eq!((heads, refused.len()), (8, 92), "{refused:?}");
    // Descriptors are left for everyone else.
    for _ in 0..3 {
        let r = s.get("/index.html");
        assert_eq!((r.status, &r.body[..]), (200, &b"still here\n"[..]));
    }
    // (The worker writes its error log in batches: wait for the line.)
    s.wait_stderr_line(
        "8 or more streams of this HTTP/2 connection are answered while the worker's connections have 64 under way",
    );
}

#[test]
fn a_header_block_dripped_ends_at_the_header_timeout() {
    // A request's header block sent in steps, one every 0.2 s: in
    // one-byte CONTINUATION frames (each valid, the block under every
    // size limit), or as one HEADERS frame a byte at a time. It never
    // ends within timeouts.header: the connection is closed then
    // (GOAWAY), as HTTP/1.1 answers a head that does not come, and as
    // HTTP/3 closes at the same timeout. (Continuations are allowed past
    // what the drip sends: the timeout, not their count, ends it.)
    let mut b = Builder::new();
    b.file("index.html", b"hello\n");
    b.config(
        "[timeouts]\nheader = \"1s\"\nkeepalive = \"60s\"\n[http2]\nmax_continuations = 1000\n",
    );
    let s = b.start();
    let long = "a".repeat(300);
    let block = H2::block("GET", "/index.html", &[("x-long", &long)]);
    for (max_frame, step) in [(16_384, 1), (1, 10)] {
        let mut c = H2::connect(s.addr(), &[], 0);
        c.sock
            .set_read_timeout(Some(Duration::from_millis(200)))
            .unwrap();
        let mut frames = Vec::new();
        frame::write_headers(&mut frames, c.next, &block, true, max_frame);
        let ended = frames.chunks(step).take(50).find_map(|piece| {
            c.send(piece);
            match c.frame_or_quiet() {
                Next::Frame(f) if f.kind == kind::GOAWAY => Some("goaway"),
                Next::Closed => Some("closed"),
                Next::Frame(_) | Next::Quiet => None,
            }
        });
        assert!(ended.is_some(), "still open, frames of {max_frame}");
    }
    assert!(s.get("/index.html").status == 200);
}

#[test]
fn an_idle_connection_closes_at_the_keepalive_timeout_however_the_client_pings() {
    // A GET answered, then a PING every 0.2 s and nothing else: closed
    // (GOAWAY) at timeouts.keepalive, as over HTTP/3.
    let mut b = Builder::new();
    b.file("index.html", b"hello\n");
    b.config("[timeouts]\nkeepalive = \"1s\"\n");
    let s = b.start();
    let mut c = H2::connect(s.addr(), &[], 0);
    let id = c.get("/index.html", &[]);
    assert_eq!(c.answers(&[id])[0].status(), "200");
    c.sock
        .set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let mut ping = Vec::new();
    frame::write_head(&mut ping, 8, kind::PING, 0, 0);
    ping.extend_from_slice(b"pingpong");
    let ended = (0..50).find_map(|_| match c.frame_or_quiet() {
        Next::Frame(f) if f.kind == kind::GOAWAY => Some("goaway"),
        Next::Closed => Some("closed"),
        Next::Frame(_) => None,
        Next::Quiet => {
            c.send(&ping);
            None
        }
    });
    assert!(ended.is_some(), "still open");
}
