//! The access log: combined (default), common and JSON lines; escaping.

use crate::common;

use common::*;

fn contains(hay: &[u8], needle: &str) -> bool {
    find(hay, needle.as_bytes()).is_some()
}

/// Checks `[22/Nov/2026:01:50:00 +0000]` at the start of `s`; returns the rest.
fn strip_clf_time(s: &str) -> &str {
    let b = s.as_bytes();
    assert!(b.len() > 28, "{s}");
    assert_eq!(b[0], b'[', "{s}");
    let t = &s[1..27];
    let months = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let digits = |r: std::ops::Range<usize>| t[r].bytes().all(|c| c.is_ascii_digit());
    assert!(digits(0..2), "day in {t}");
    assert_eq!(&t[2..3], "/", "{t}");
    assert!(months.contains(&&t[3..6]), "month in {t}");
    assert_eq!(&t[6..7], "/", "{t}");
    assert!(digits(7..11), "year in {t}");
    assert_eq!(&t[11..12], ":", "{t}");
    assert!(
        digits(12..14) && digits(15..17) && digits(18..20),
        "time in {t}"
    );
    assert_eq!(&t[14..15], ":", "{t}");
    assert_eq!(&t[17..18], ":", "{t}");
    assert_eq!(&t[20..], " +0000", "{t}");
    assert_eq!(b[27], b']', "{s}");
    &s[28..]
}

#[test]
fn combined_line_for_a_request() {
    let mut b = Builder::new();
    b.file("hello.txt", b"hello, world\n");
    b.access_log();
    let s = b.start();
    let r = s.get_with(
        "/hello.txt?q=1",
        "User-Agent: itest/1.0\r\nReferer: http://ref.example/page\r\n",
    );
    assert_eq!(r.status, 200);
    let line = s.wait_access_line(|l| contains(l, "/hello.txt?q=1"));
    let line = String::from_utf8(line).expect("utf-8 log line");
    let rest = line
        .strip_prefix("127.0.0.1 - - ")
        .unwrap_or_else(|| panic!("{line}"));
    let rest = strip_clf_time(rest);
    assert_eq!(
        rest,
        " \"GET /hello.txt?q=1 HTTP/1.1\" 200 13 \"http://ref.example/page\" \"itest/1.0\""
    );
}

#[test]
fn errors_and_head_are_logged() {
    let mut b = Builder::new();
    b.file("a.txt", b"AAAA");
    b.access_log();
    let s = b.start();
    let r = s.get("/missing");
    let page_len = r.body.len();
    let line = s.wait_access_line(|l| contains(l, "/missing"));
    let line = String::from_utf8(line).expect("utf-8");
    assert!(
        line.ends_with(&format!(
            "\"GET /missing HTTP/1.1\" 404 {page_len} \"-\" \"-\""
        )),
        "{line}"
    );
    let mut c = s.connect();
    c.send(b"HEAD /a.txt HTTP/1.0\r\n\r\n");
    assert_eq!(c.head_response().status, 200);
    let line = s.wait_access_line(|l| contains(l, "HEAD /a.txt"));
    let line = String::from_utf8(line).expect("utf-8");
    assert!(
        line.ends_with("\"HEAD /a.txt HTTP/1.0\" 200 0 \"-\" \"-\""),
        "{line}"
    );
    // A request that could not be parsed still leaves a line.
    let mut c = s.connect();
    c.send(b"GET /x HTTP/2.0\r\nHost: x\r\n\r\n");
    assert_eq!(c.response().status, 505);
    let line = s.wait_access_line(|l| contains(l, "\" 505 "));
    assert!(line.starts_with(b"127.0.0.1 - - ["), "{line:?}");
}

/// A request refused 400 for a bad field line keeps its request line in
/// the access log (as nginx's does); one whose request line itself is
/// bad is logged `"- - -"`.
#[test]
fn a_400_for_a_field_line_logs_the_request_line() {
    let mut b = Builder::new();
    b.file("a.txt", b"a");
    b.access_log();
    let s = b.start();
    let r = s.request(b"GET /some/page?id=42 HTTP/1.1\r\nHost: x\r\nX-Trace: a\x01b\r\n\r\n");
    assert_eq!(r.status, 400);
    let line = s.wait_access_line(|l| contains(l, " 400 "));
    let line = String::from_utf8_lossy(&line);
    assert!(
        line.contains("\"GET /some/page?id=42 HTTP/1.1\" 400 "),
        "{line}"
    );
    let r = s.request(b"GET /a b HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_eq!(r.status, 400);
    let lines = || std::fs::read_to_string(&s.access_path).unwrap_or_default();
    wait_until("the second 400", || lines().matches(" 400 ").count() == 2);
    assert!(lines().contains("\"- - -\" 400 "), "{}", lines());
}

#[test]
fn control_bytes_and_quotes_are_escaped() {
    let mut b = Builder::new();
    b.access_log();
    let s = b.start();
    let mut c = s.connect();
    c.send(
        b"GET /log\"q HTTP/1.1\r\nHost: x\r\nUser-Agent: a\tb\"c\\d\xff\r\nReferer: /\x85\x9b\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(c.response().status, 404);
    let line = s.wait_access_line(|l| contains(l, "/log"));
    // Hex digits in either case.
    let text = String::from_utf8_lossy(&line).to_ascii_lowercase();
    assert!(
        line.iter().all(|&b| (0x20..0x7f).contains(&b)),
        "raw control or non-ASCII bytes in the log line: {line:?}"
    );
    assert!(
        text.contains("\\x85") && text.contains("\\x9b"),
        "high bytes not escaped: {text}"
    );
    assert!(text.contains("a\\x09b"), "tab not escaped: {text}");
    assert!(text.contains("\\xff"), "0xff not escaped: {text}");
    // A quote inside a quoted field is escaped, so the field cannot end early.
    assert!(
        text.contains("/log\\\"q") || text.contains("/log\\x22q"),
        "quote not escaped: {text}"
    );
    assert!(
        text.contains("b\\\"c") || text.contains("b\\x22c"),
        "quote not escaped: {text}"
    );
}

#[test]
fn access_log_from_the_config_file_in_common_format() {
    let mut b = Builder::new();
    b.file("a.txt", b"AAAA");
    b.access_log_from_config();
    b.config("[log]\naccess = \"access.log\"\nformat = \"common\"\n");
    let s = b.start();
    let r = s.get_with("/a.txt", "User-Agent: not-in-common\r\n");
    assert_eq!(r.status, 200);
    let line = s.wait_access_line(|l| contains(l, "/a.txt"));
    let line = String::from_utf8(line).expect("utf-8");
    let rest = line
        .strip_prefix("127.0.0.1 - - ")
        .unwrap_or_else(|| panic!("{line}"));
    assert_eq!(strip_clf_time(rest), " \"GET /a.txt HTTP/1.1\" 200 4");
}

#[test]
fn json_format_is_one_object_per_line() {
    let mut b = Builder::new();
    b.file("a.txt", b"AAAA");
    b.access_log_from_config();
    b.config("[log]\naccess = \"access.log\"\nformat = \"json\"\n");
    let s = b.start();
    assert_eq!(s.get_with("/a.txt", "User-Agent: j\"son\r\n").status, 200);
    let line = s.wait_access_line(|l| contains(l, "a.txt"));
    let v: serde_json::Value = serde_json::from_slice(&line)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {:?}", String::from_utf8_lossy(&line)));
    let obj = v.as_object().expect("a JSON object");
    let values: Vec<String> = obj.values().map(|v| v.to_string()).collect();
    // Numbers as numbers or as strings.
    let has = |n: &str| values.iter().any(|v| v == n || *v == format!("\"{n}\""));
    assert!(has("200"), "{v}");
    assert!(has("4"), "{v}");
    assert!(values.iter().any(|v| v.contains("/a.txt")), "{v}");
    assert!(
        obj.values().any(|v| v.as_str() == Some("j\"son")),
        "user agent: {v}"
    );
}

#[test]
fn no_access_log_when_off() {
    let mut b = Builder::new();
    b.file("a.txt", b"AAAA");
    let mut s = b.start();
    assert_eq!(s.get("/a.txt").status, 200);
    // Once brisk has stopped, everything it would log is written.
    s.signal(libc::SIGTERM);
    let st = s.wait_exit(WAIT_LIMIT).expect("brisk did not exit");
    assert!(st.success(), "exit status {st:?}; stderr: {}", s.stderr());
    assert!(!s.access_path.exists());
    assert!(!s.stderr().contains("GET /a.txt"), "{}", s.stderr());
}

#[test]
fn bytes_field_counts_body_bytes_sent() {
    let mut b = Builder::new();
    b.file("d.txt", b"0123456789");
    b.access_log();
    let s = b.start();
    assert_eq!(s.get_with("/d.txt?r", "Range: bytes=2-4\r\n").status, 206);
    let line = s.wait_access_line(|l| contains(l, "/d.txt?r "));
    assert!(
        line.ends_with(b"\"GET /d.txt?r HTTP/1.1\" 206 3 \"-\" \"-\""),
        "{:?}",
        String::from_utf8_lossy(&line)
    );
    let tag = etag(10);
    let r = s.get_with("/d.txt?c", &format!("If-None-Match: {tag}\r\n"));
    assert_eq!(r.status, 304);
    let line = s.wait_access_line(|l| contains(l, "/d.txt?c "));
    assert!(
        line.ends_with(b"\"GET /d.txt?c HTTP/1.1\" 304 0 \"-\" \"-\""),
        "{:?}",
        String::from_utf8_lossy(&line)
    );
}

#[test]
fn sigusr1_reopens_the_access_log() {
    let mut b = Builder::new();
    b.file("a.txt", b"AAAA");
    b.access_log();
    let s = b.start();
    assert_eq!(s.get("/a.txt?before").status, 200);
    s.wait_access_line(|l| contains(l, "/a.txt?before"));
    let rotated = s.rotate_access_log();
    assert_eq!(s.get("/a.txt?after").status, 200);
    s.wait_access_line(|l| contains(l, "/a.txt?after"));
    let fresh = std::fs::read(&s.access_path).expect("new access log");
    assert!(!contains(&fresh, "?before"), "old lines in the new file");
    let old = std::fs::read(&rotated).expect("rotated");
    assert!(contains(&old, "/a.txt?before"));
}

/// With its logs on standard output and error (a service manager's
/// journal) there is no file to reopen: SIGUSR1 (`brisk --reopen-logs`,
/// which says "its error log says how it went") says so rather than
/// nothing.
#[test]
fn sigusr1_with_no_log_file_says_so() {
    let mut b = Builder::new();
    b.file("a.txt", b"AAAA");
    let s = b.start();
    s.signal(libc::SIGUSR1);
    let line = s.wait_stderr_line("SIGUSR1:");
    assert!(
        line.ends_with("[info] SIGUSR1: no log file to reopen (the logs go to standard output or error, or nowhere)"),
        "{line}"
    );
    assert_eq!(s.get("/a.txt").status, 200);
}

/// The byte count of a common/combined line (the field after the status).
fn logged_bytes(line: &[u8]) -> u64 {
    let text = String::from_utf8_lossy(line).into_owned();
    let after = text.split("\" ").nth(1).unwrap_or_else(|| panic!("{text}"));
    let mut fields = after.split(' ');
    let _status = fields.next();
    fields
        .next()
        .and_then(|b| b.parse().ok())
        .unwrap_or_else(|| panic!("no byte count in {text}"))
}

/// Requests `path`, reads 256 KiB or more of a 200 answer and goes away
/// with the rest unread (the kernel then resets the connection); returns
/// the body bytes read.
fn read_some_then_leave(s: &Server, path: &str) -> u64 {
    let mut c = s.connect();
    c.send(format!("GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes());
    c.read_at_least(256 * 1024);
    let got = c.unread();
    assert!(got.starts_with(b"HTTP/1.1 200 OK\r\n"));
    let head = find(got, b"\r\n\r\n").expect("head") + 4;
    (got.len() - head) as u64
}

#[test]
fn an_aborted_download_logs_the_bytes_sent() {
    // nginx logs what it sent, not what the answer would have held.
    let size = 20 * 1024 * 1024;
    let mut b = Builder::new();
    b.file("big.bin", &pattern(size));
    b.access_log();
    let s = b.start();
    let read = read_some_then_leave(&s, "/big.bin");
    let line = s.wait_access_line(|l| contains(l, "/big.bin"));
    let bytes = logged_bytes(&line);
    assert!(
        bytes >= read && bytes < size as u64,
        "logged {bytes}; the client read {read} of {size}: {}",
        String::from_utf8_lossy(&line)
    );
}

/// The JSON object of the access-log line about `path`.
fn json_line(s: &Server, path: &str) -> serde_json::Value {
    let line = s.wait_access_line(|l| contains(l, path));
    serde_json::from_slice(&line)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&line)))
}

#[test]
fn a_throttled_download_logs_how_long_it_took() {
    // The throttle makes the transfer slow by design: the duration logged
    // (first byte of the request to last byte of the answer) cannot be
    // less than the rate allows, whatever the machine.
    let body = pattern(300_000);
    let rate = 256 * 1024;
    let mut b = Builder::new();
    b.file("v.mp4", &body);
    b.access_log_from_config();
    b.config(
        "[log]\naccess = \"access.log\"\nformat = \"json\"\n\
         [[throttle]]\npattern = \"*.mp4\"\nrate = \"256KiB/s\"\n",
    );
    let s = b.start();
    assert_eq!(s.get("/v.mp4").body, body);
    let v = json_line(&s, "/v.mp4");
    assert_eq!(v["bytes"], 300_000, "{v}");
    // 100 ms of burst go at once (see access::throttle); the rest at the rate.
    let floor_us = (body.len() as u64 - rate / 10) * 1_000_000 / rate;
    let took = v["duration_us"].as_u64().unwrap_or_else(|| panic!("{v}"));
    assert!(took >= floor_us, "{took} µs < {floor_us} µs: {v}");
}

#[test]
fn a_cgi_answer_cut_short_logs_the_bytes_sent() {
    let size: u64 = 16 * 1024 * 1024;
    let mut b = Builder::new();
    let dir = b.base().join("cgi-bin");
    std::fs::create_dir_all(&dir).expect("cgi-bin");
    let script = dir.join("big.sh");
    write_file(
        &script,
        format!(
            "#!/bin/sh\nprintf 'Content-Type: application/octet-stream\\r\\nContent-Length: {size}\\r\\n\\r\\n'\nexec head -c {size} /dev/zero\n"
        )
        .as_bytes(),
    );
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    b.access_log();
    b.config("[[cgi]]\nurl = \"/cgi-bin/\"\ndir = \"cgi-bin\"\n");
    let s = b.start();
    let read = read_some_then_leave(&s, "/cgi-bin/big.sh");
    let line = s.wait_access_line(|l| contains(l, "/cgi-bin/big.sh"));
    let bytes = logged_bytes(&line);
    assert!(
        bytes >= read && bytes < size,
        "logged {bytes}; the client read {read} of {size}: {}",
        String::from_utf8_lossy(&line)
    );
}

/// A format of one's own: `$scheme` and `$remote_port`, as nginx's.
const PORT_AND_SCHEME: &str =
    "[log]\naccess = \"access.log\"\nformat = '$scheme $remote_addr $remote_port \"$request\"'\n";

/// `$remote_port` is the client's port, `$scheme` `http` over plain
/// HTTP; behind a trusted proxy, the client and scheme it names (no port
/// named: `-`).
#[test]
fn remote_port_and_scheme_variables() {
    let mut b = Builder::new();
    b.file("a.txt", b"AAAA");
    b.access_log_from_config();
    // (`[proxy]` is the feature `ops`'s: without it, plain HTTP alone.)
    let proxy = match cfg!(feature = "ops") {
        true => "[proxy]\ntrusted = [\"127.0.0.1\"]\n",
        false => "",
    };
    b.config(&format!("{PORT_AND_SCHEME}{proxy}"));
    let s = b.start();
    let mut c = s.connect();
    c.send(b"GET /a.txt?plain HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    assert_eq!(c.response().status, 200);
    let port = c.ends().0.port();
    let line = s.wait_access_line(|l| contains(l, "?plain"));
    assert_eq!(
        String::from_utf8_lossy(&line),
        format!("http 127.0.0.1 {port} \"GET /a.txt?plain HTTP/1.1\"")
    );
    if cfg!(feature = "ops") {
        let r = s.get_with(
            "/a.txt?proxied",
            "X-Forwarded-For: 203.0.113.9\r\nX-Forwarded-Proto: https\r\n",
        );
        assert_eq!(r.status, 200);
        let line = s.wait_access_line(|l| contains(l, "?proxied"));
        assert_eq!(
            String::from_utf8_lossy(&line),
            "https 203.0.113.9 - \"GET /a.txt?proxied HTTP/1.1\""
        );
    }
}

/// Over TLS, `$scheme` is `https`.
#[cfg(feature = "tls")]
#[test]
fn scheme_is_https_over_tls() {
    let mut b = Builder::new();
    b.file("a.txt", b"AAAA");
    b.access_log_from_config();
    b.config(PORT_AND_SCHEME);
    b.tls();
    let s = b.start();
    let mut c = s.connect_tls();
    c.send(b"GET /a.txt?tls HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n");
    assert_eq!(c.response().status, 200);
    let port = c.ends().0.port();
    let line = s.wait_access_line(|l| contains(l, "?tls"));
    assert_eq!(
        String::from_utf8_lossy(&line),
        format!("https 127.0.0.1 {port} \"GET /a.txt?tls HTTP/1.1\"")
    );
}
