//! The access log's `$upstream_response_time` (nginx's): seconds, with
//! milliseconds, from the start of the upstream exchange to the end of
//! its answer, over HTTP/1.1 (the line written at the end) and h2c (the
//! line drafted at the head, the time put in at the end). The upstream
//! (reverse_proxy.rs's scripted thread) holds its body back until the
//! test has seen the head and waited: the time to the end is at least
//! that wait longer than the time to the head, whatever the machine's
//! load.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::thread;
use std::time::Duration;

use crate::common;
use crate::reverse_proxy::{Say, Upstream};

use common::*;

/// How long the test holds the upstream's body back after the head.
const HOLD: Duration = Duration::from_millis(200);

/// brisk proxying `/api/` to `up` (`before` the rule, `extra` in it).
fn proxying(mut b: Builder, up: &Upstream, before: &str, extra: &str) -> Server {
    b.config(&format!(
        "{before}[[reverse_proxy]]\npath = \"/api/\"\nto = \"http://{}\"\nkeepalive = 0\n{extra}",
        up.addr
    ));
    b.start()
}

/// A connection to `s` that sent `GET path` (closing after it).
fn get(s: &Server, path: &str) -> TcpStream {
    let mut c = TcpStream::connect(s.addr()).unwrap();
    c.set_read_timeout(Some(IO_TIMEOUT)).unwrap();
    c.write_all(format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes())
        .unwrap();
    c
}

/// The two times of the access line of `path`, in milliseconds.
fn times(s: &Server, path: &str) -> (u64, u64) {
    let line = s.wait_access_line(|l| l.starts_with(path.as_bytes()));
    let line = String::from_utf8(line).unwrap();
    let ms = |t: &str| {
        let (secs, ms) = t.split_once('.').unwrap_or_else(|| panic!("{line:?}"));
        assert_eq!(ms.len(), 3, "{line:?}");
        secs.parse::<u64>().unwrap() * 1000 + ms.parse::<u64>().unwrap()
    };
    let parts: Vec<&str> = line.split(' ').collect();
    assert_eq!(parts.len(), 3, "{line:?}");
    (ms(parts[1]), ms(parts[2]))
}

#[test]
fn upstream_response_time_runs_to_the_end_of_the_answer() {
    let up = Upstream::start(vec![
        Say::Bytes(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nab\r\n"),
        Say::Wait,
        Say::Bytes(b"2\r\ncd\r\n0\r\n\r\n"),
    ]);
    let mut b = Builder::new();
    b.access_log_from_config();
    let log = "[log]\naccess = \"access.log\"\n\
         format = '$request_uri $upstream_header_time $upstream_response_time'\n\n";
    let s = proxying(b, &up, log, "");
    // HTTP/1.1: the head, a wait, then the rest.
    let mut c = get(&s, "/api/one");
    let mut got = Vec::new();
    let mut piece = [0u8; 4096];
    while !got.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = c.read(&mut piece).unwrap();
        assert!(n > 0, "closed before the head");
        got.extend_from_slice(&piece[..n]);
    }
    thread::sleep(HOLD);
    up.go.send(()).unwrap();
    c.read_to_end(&mut got).unwrap();
    assert!(got.ends_with(b"abcd"), "{}", String::from_utf8_lossy(&got));
    let (head, end) = times(&s, "/api/one ");
    assert!(end >= head + HOLD.as_millis() as u64 - 1, "{head} {end}");
    // h2c: the line is drafted when the head goes, the time put in later.
    #[cfg(feature = "http2")]
    {
        let mut c = common::h2::H2::connect(s.addr(), &[], 0);
        let two = c.get("/api/two", &[]);
        assert_eq!(c.first_headers(), two);
        thread::sleep(HOLD);
        up.go.send(()).unwrap();
        let a = c.answers(&[two]);
        assert_eq!(a[0].body, b"abcd");
        let (head, end) = times(&s, "/api/two ");
        assert!(end >= head + HOLD.as_millis() as u64 - 1, "{head} {end}");
    }
    // An answer no upstream gave: `-`.
    let r = s.get("/nothing");
    assert_eq!(r.status, 404);
    let line = s.wait_access_line(|l| l.starts_with(b"/nothing "));
    assert_eq!(line, b"/nothing - -");
}

/// An upstream that falls silent for `read_timeout` in the middle of its
/// body: the client's answer is cut short (its head went out), and the
/// error line says so, where it said only "silent for read_timeout", as
/// for the 504 of an upstream silent before its head.
#[test]
fn an_answer_cut_by_read_timeout_is_said_to_be_cut() {
    let up = Upstream::start(vec![
        Say::Bytes(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc"),
        Say::Silence(Duration::from_secs(5)),
    ]);
    let s = proxying(Builder::new(), &up, "", "read_timeout = \"300ms\"\n");
    let mut c = get(&s, "/api/one");
    let mut got = Vec::new();
    c.read_to_end(&mut got).unwrap();
    let got = String::from_utf8_lossy(&got);
    assert!(
        got.starts_with("HTTP/1.1 200 OK\r\n") && got.ends_with("\r\n\r\nabc"),
        "{got}"
    );
    let line = s.wait_stderr_line("the upstream was silent for read_timeout");
    assert!(
        line.ends_with("the upstream was silent for read_timeout; given up, after its answer began (cut short)"),
        "{line}"
    );
}
