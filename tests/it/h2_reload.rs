//! HTTP/2 across a reload (SIGHUP) and a graceful stop (SIGTERM), issue
//! #25: the GOAWAY comes in two steps (RFC 9113 §6.8), so that requests
//! already on the wire are served, and the close after it lingers while
//! the answer is still in the socket's send queue, so that what the
//! client sends as it reads (WINDOW_UPDATE, PING) does not reset the
//! connection under the answer. Raw h2c clients, frames checked byte
//! for byte.

use crate::common;

use std::io::Read;
use std::process::{Command, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};

use brisk::h2::frame::{self, flag, kind};
use brisk::h2::{ErrorCode, GOAWAY_PING};
use common::h2::H2;
use common::*;

/// The payload of a GOAWAY NO_ERROR naming `last`, without debug data.
fn goaway_payload(last: u32) -> Vec<u8> {
    let mut p = last.to_be_bytes().to_vec();
    p.extend_from_slice(&(ErrorCode::NoError as u32).to_be_bytes());
    p
}

/// A PING with `data`, or its answer (`ack`).
fn ping(data: &[u8], ack: bool) -> Vec<u8> {
    let mut out = Vec::new();
    frame::write_head(&mut out, 8, kind::PING, if ack { flag::ACK } else { 0 }, 0);
    out.extend_from_slice(data);
    out
}

#[test]
fn a_slow_reader_gets_its_whole_answer_and_a_clean_close_across_a_reload() {
    // One stream, a 4 MiB file the client reads slowly while it sends a
    // PING now and then, and a reload meanwhile. The stream counts as
    // done once its last DATA frame is in the kernel, when MiBs may still
    // wait there for the client: the connection used to close 2 s later,
    // and the client's next PING made Linux reset it, which dropped the
    // rest of the answer. Now it lingers while the send queue drains:
    // every byte arrives, then the FIN (no reset).
    slow_reader_across_a_reload(4 * 1024 * 1024 + 7, Duration::ZERO);
}

#[test]
fn a_reader_silent_when_its_answer_is_done_still_gets_it_whole() {
    // The same with a 1 MiB answer, which the socket buffers take whole:
    // its stream is done (and both GOAWAYs queued) while the client
    // sends nothing, so no input was waiting to be read, and the
    // connection used to close at once; the client's first PING after
    // that met a reset. An HTTP/2 connection always lingers.
    slow_reader_across_a_reload(1024 * 1024 + 7, Duration::from_millis(3500));
}

/// A client that asks for a file of `size` bytes with its windows wide
/// open, reads its head, reloads the server, stays silent (reading
/// nothing) for `silent_for`, then reads slowly while it sends a PING
/// now and then (and answers the server's): every byte arrives, both
/// GOAWAYs, then a FIN, and none of its writes meets a reset.
fn slow_reader_across_a_reload(size: usize, silent_for: Duration) {
    let big = pattern(size);
    let mut b = Builder::new();
    b.file("big.bin", &big);
    let s = b.start();
    // Windows wide open: the whole answer may be queued at once.
    let mut c = H2::connect(
        s.addr(),
        &[(frame::setting::INITIAL_WINDOW_SIZE, 0x7fff_ffff)],
        0x7fff_ffff - 65_535,
    );
    let id = c.get("/big.bin", &[]);
    let head = loop {
        let f = c.frame().expect("the answer's head");
        if f.kind == kind::HEADERS {
            break f;
        }
    };
    let status = head.fields.iter().find(|(n, _)| n == ":status");
    assert_eq!(
        (head.stream, status.map(|(_, v)| v.as_str())),
        (id, Some("200"))
    );
    s.signal(libc::SIGHUP);
    sleep(silent_for);
    let (mut body, mut goaways, mut pings) = (Vec::new(), Vec::new(), 0);
    // (A reset can also show as a write's error, and the read after it
    // then sees a bare end.)
    let mut write_error = None;
    let mut send = |c: &mut H2, bytes: &[u8]| {
        if let Err(e) = std::io::Write::write_all(&mut c.sock, bytes) {
            write_error.get_or_insert(e.kind());
        }
    };
    let end = loop {
        // 16 KiB every 16 ms (about 1 MB/s: the MiBs still queued in the
        // kernel when the stream is done take longer than the 2 s linger
        // to drain), and a PING every 64 KiB.
        let mut chunk = [0u8; 16 * 1024];
        let n = match c.sock.read(&mut chunk) {
            Ok(0) => break Ok(()),
            Ok(n) => n,
            Err(e) => break Err(e),
        };
        c.buf.extend_from_slice(&chunk[..n]);
        while let Some(f) = c.buffered_frame() {
            match f.kind {
                kind::DATA if f.stream == id => body.extend_from_slice(&f.payload),
                kind::GOAWAY => goaways.push(f.payload),
                kind::PING if f.flags & flag::ACK == 0 => send(&mut c, &ping(&f.payload, true)),
                _ => {}
            }
        }
        if body.len() / (64 * 1024) > pings {
            pings += 1;
            send(&mut c, &ping(b"client!!", false));
        }
        sleep(Duration::from_millis(16));
    };
    assert_eq!(
        end.map_err(|e| e.kind()),
        Ok(()),
        "the connection ended with a FIN, not a reset ({} of {} bytes)",
        body.len(),
        big.len()
    );
    assert!(body == big, "{} of {} bytes", body.len(), big.len());
    assert_eq!(write_error, None, "the client's PINGs met no reset");
    assert_eq!(goaways, [goaway_payload(0x7fff_ffff), goaway_payload(id)]);
}

/// A connection with one stream answered; then `sig`; then requests on
/// streams 3, 5 and 7 sent right after the first GOAWAY arrives (as if
/// already on the wire when the server sent it), and the PING after it
/// answered (`pong`) or not: every one of them is answered, and the
/// final GOAWAY names stream 7.
fn requests_after_the_first_goaway_are_served(sig: i32, pong_it: bool) {
    let mut b = Builder::new();
    b.file("index.html", b"<h1>hi</h1>\n");
    let s = b.start();
    let mut c = H2::connect(s.addr(), &[], 0);
    let first = c.get("/index.html", &[]);
    assert_eq!(c.answers(&[first])[0].status(), "200");
    s.signal(sig);
    let goaway = loop {
        let f = c.frame().expect("a GOAWAY");
        if f.kind == kind::GOAWAY {
            break f;
        }
    };
    // The first GOAWAY names 2^31-1, and a PING follows it at once.
    assert_eq!(
        (goaway.flags, goaway.stream, goaway.payload),
        (0, 0, goaway_payload(0x7fff_ffff))
    );
    let goaway_ping = c.frame().expect("the PING after the GOAWAY");
    assert_eq!(
        (
            goaway_ping.kind,
            goaway_ping.flags,
            goaway_ping.stream,
            goaway_ping.payload.as_slice()
        ),
        (kind::PING, 0, 0, &b"goaway!\0"[..])
    );
    assert_eq!(GOAWAY_PING, *b"goaway!\0");
    let ids: Vec<u32> = (0..3).map(|_| c.get("/index.html", &[])).collect();
    assert_eq!(ids, [3, 5, 7]);
    if pong_it {
        c.send(&self::ping(&goaway_ping.payload, true));
    }
    // Every frame until the server closes: the answers (the protocol
    // frames them), and the final GOAWAY naming the last of them.
    let (mut answers, mut goaways) = (vec![(String::new(), Vec::new()); 3], Vec::new());
    while let Some(f) = c.frame() {
        let i = ids.iter().position(|&id| id == f.stream);
        match (f.kind, i) {
            (kind::HEADERS, Some(i)) => {
                let status = f.fields.iter().find(|(n, _)| n == ":status");
                answers[i].0 = status.map(|(_, v)| v.clone()).unwrap_or_default();
            }
            (kind::DATA, Some(i)) => answers[i].1.extend_from_slice(&f.payload),
            (kind::GOAWAY, _) => goaways.push((f.flags, f.stream, f.payload)),
            (kind::SETTINGS | kind::WINDOW_UPDATE, None) => {}
            (kind, _) => panic!("frame {kind} on stream {}", f.stream),
        }
    }
    for (id, (status, body)) in ids.iter().zip(&answers) {
        assert_eq!(
            (status.as_str(), body.as_slice()),
            ("200", &b"<h1>hi</h1>\n"[..]),
            "stream {id}"
        );
    }
    assert_eq!(goaways, [(0, 0, goaway_payload(7))]);
}

#[test]
fn requests_sent_after_a_reloads_first_goaway_are_served() {
    requests_after_the_first_goaway_are_served(libc::SIGHUP, true);
}

#[test]
fn requests_sent_after_a_stops_first_goaway_are_served_without_a_ping_answer() {
    // (A client that never answers the PING: the final GOAWAY comes
    // after GOAWAY_WAIT.)
    requests_after_the_first_goaway_are_served(libc::SIGTERM, false);
}

/// A server (with `config`, if given), an h2c connection whose first stream was
/// answered, then a reload done: the server, the connection and the
/// stream.
fn answered_then_reloaded(config: Option<&str>) -> (Server, H2, u32) {
    let mut b = Builder::new();
    b.file("index.html", b"<h1>hi</h1>\n");
    if let Some(config) = config {
        b.config(config);
    }
    let s = b.start();
    let mut c = H2::connect(s.addr(), &[], 0);
    let first = c.get("/index.html", &[]);
    assert_eq!(c.answers(&[first])[0].status(), "200");
    s.signal(libc::SIGHUP);
    s.wait_stderr_line("configuration reloaded");
    (s, c, first)
}

/// Starts a server with `config`, makes an h2c connection to it, has
/// one request answered, reloads, and then sends a request every 100 ms
/// (each answered before the next) for at most `busy`, until a GOAWAY
/// arrives: how many requests went before it, or `None` if none came
/// while the connection was busy. Either way, the connection then goes
/// quiet and gets both GOAWAYs (the first one if it has not yet), the
/// final one once it answers the PING, naming its last stream.
fn goaway_while_busy_after_a_reload(config: &str, busy: Duration) -> Option<usize> {
    let (_s, mut c, first) = answered_then_reloaded(Some(config));
    let start = Instant::now();
    let mut last = first;
    let (mut goaway, mut goaway_ping) = (None, None);
    'busy: while start.elapsed() < busy {
        let id = c.get("/index.html", &[]);
        loop {
            let f = c.frame().expect("the answer");
            match f.kind {
                kind::GOAWAY => goaway = Some(f.payload),
                kind::PING => goaway_ping = Some(f.payload),
                _ => {}
            }
            if f.stream == id && f.flags & flag::END_STREAM != 0 {
                last = id;
                break;
            }
        }
        if goaway.is_some() {
            break 'busy;
        }
        sleep(Duration::from_millis(100));
    }
    let while_busy = goaway.is_some();
    // (Quiet now: the GOAWAY comes within a second or two.)
    let goaway = goaway.or_else(|| loop {
        let f = c.frame()?;
        match f.kind {
            kind::GOAWAY => break Some(f.payload),
            kind::PING => goaway_ping = Some(f.payload),
            _ => {}
        }
    });
    assert_eq!(goaway, Some(goaway_payload(0x7fff_ffff)));
    let goaway_ping = goaway_ping
        .or_else(|| c.frame().map(|f| f.payload))
        .expect("the PING after the GOAWAY");
    assert_eq!(goaway_ping, GOAWAY_PING);
    c.send(&ping(&goaway_ping, true));
    let mut rest = Vec::new();
    while let Some(f) = c.frame() {
        rest.push((f.kind, f.payload));
    }
    assert_eq!(rest, [(kind::GOAWAY, goaway_payload(last))]);
    while_busy.then_some(((last - first) / 2) as usize)
}

#[test]
fn a_reload_lets_a_busy_connection_go_on_and_tells_it_goaway_once_quiet() {
    // A client in the middle of a burst of requests (as h2load, which
    // opens no stream after a GOAWAY and does not connect again) goes on
    // being served by the previous workers; once it is quiet for a
    // second, it hears the GOAWAY (in two steps).
    let goaway = goaway_while_busy_after_a_reload("", Duration::from_millis(2500));
    assert_eq!(goaway, None, "a GOAWAY while the connection was busy");
}

#[test]
fn a_reload_tells_a_busy_connection_goaway_after_the_keepalive_timeout() {
    // ... but not for longer than an idle HTTP/1.1 connection is kept.
    let goaway = goaway_while_busy_after_a_reload(
        "[timeouts]\nkeepalive = \"2s\"\n",
        Duration::from_secs(8),
    );
    assert!(
        goaway.is_some_and(|n| n >= 10),
        "the GOAWAY came while busy, after 2 s of requests: {goaway:?}"
    );
}

#[test]
fn a_reload_tells_a_busy_connection_goaway_before_its_drain_ends() {
    // ... nor past `timeouts.reload_drain`, which closes what is left:
    // the GOAWAY goes early enough for both of its steps.
    let goaway = goaway_while_busy_after_a_reload(
        "[timeouts]\nreload_drain = \"3s\"\n",
        Duration::from_secs(8),
    );
    assert!(goaway.is_some(), "no GOAWAY while busy");
}

#[test]
fn h2load_loses_no_request_across_reloads() {
    // The measure (#25): h2load bursts with reloads in the middle
    // used to lose thousands of requests (the final GOAWAY at once
    // dropped the streams on the wire, and h2load sends nothing more on
    // a connection that got a GOAWAY).
    let mut b = Builder::new();
    b.file("index.html", b"<h1>hi</h1>\n");
    b.workers(2);
    let s = b.start();
    let url = format!("http://127.0.0.1:{}/index.html", s.port);
    let h2load = Command::new("h2load")
        .args(["-n", "100000", "-c", "10", "-m", "8"])
        .arg(&url)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn();
    let Ok(mut h2load) = h2load else {
        skip("h2load not installed (Debian's nghttp2-client)");
        return;
    };
    // Three reloads 200 ms apart while it runs (bounded: 60 s at most).
    let start = Instant::now();
    let mut reloads = 0;
    let status = loop {
        sleep(Duration::from_millis(if reloads == 0 { 50 } else { 200 }));
        if let Some(st) = h2load.try_wait().expect("h2load") {
            break st;
        }
        if reloads < 3 {
            s.signal(libc::SIGHUP);
            reloads += 1;
        }
        if start.elapsed() > Duration::from_secs(60) {
            let _ = h2load.kill();
            panic!("h2load did not finish within 60 s");
        }
    };
    let mut out = String::new();
    h2load
        .stdout
        .take()
        .expect("its output")
        .read_to_string(&mut out)
        .expect("h2load's output");
    assert!(status.success(), "{out}");
    assert!(
        out.contains("100000 succeeded, 0 failed, 0 errored"),
        "{reloads} reloads:\n{out}"
    );
    assert!(
        reloads >= 2,
        "h2load finished before a second reload: a faster machine needs a larger -n\n{out}"
    );
}

#[test]
fn a_reload_tells_a_connection_that_only_pings_goaway_all_the_same() {
    // Frames that open no stream (PING here; WINDOW_UPDATE as a large
    // answer is read) are not a burst of requests: the GOAWAY does not
    // wait for them to stop.
    let (_s, mut c, _) = answered_then_reloaded(None);
    let start = Instant::now();
    let goaway = 'pinging: loop {
        assert!(
            start.elapsed() < Duration::from_secs(6),
            "no GOAWAY within 6 s of pings"
        );
        c.send(&ping(b"client!!", false));
        loop {
            let f = c.frame().expect("the PING's answer");
            match f.kind {
                kind::GOAWAY => break 'pinging f.payload,
                kind::PING if f.flags & flag::ACK != 0 => break,
                _ => {}
            }
        }
        sleep(Duration::from_millis(100));
    };
    assert_eq!(goaway, goaway_payload(0x7fff_ffff));
}
