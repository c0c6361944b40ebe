//! Proxied answer bodies relayed zero-copy (`splice(2)`, upstream ->
//! pipe -> client) on plain HTTP/1.1: every byte arrives in order
//! whatever the pieces the upstream writes, to a slow client too, a
//! short answer is still cut, HEAD has no body, the connection is kept
//! after a spliced answer, and a client that leaves mid-answer leaves no
//! pipe behind. That the pipes are used shows in the server's
//! descriptors: the worker keeps the pipes it used for the next answers.

use crate::common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::thread;
use std::time::Duration;

use common::*;

/// The answer bodies' bytes: byte `i` is `i % 251` (a prime, so that a
/// byte lost or repeated anywhere shows).
fn pattern(from: usize, len: usize) -> Vec<u8> {
    (from..from + len).map(|i| (i % 251) as u8).collect()
}

/// How an answer's body is written.
#[derive(Clone, Copy, PartialEq)]
enum Pieces {
    /// At once.
    Whole,
    /// In pieces of uneven sizes (1 to 9,999 bytes), each its own segment.
    Uneven,
    /// In pieces of 100 bytes, each its own segment (a pipe's slots fill
    /// before its bytes do).
    Tiny,
}

/// Writes `len` pattern bytes as `pieces` says.
fn write_body(conn: &mut TcpStream, len: usize, pieces: Pieces) -> std::io::Result<()> {
    if pieces == Pieces::Whole {
        return conn.write_all(&pattern(0, len));
    }
    conn.set_nodelay(true)?;
    let (mut at, mut step) = (0, 1);
    while at < len {
        let n = match pieces {
            Pieces::Tiny => 100,
            _ => step,
        };
        let n = n.min(len - at);
        conn.write_all(&pattern(at, n))?;
        at += n;
        step = (step * 7 + 13) % 10_000;
    }
    Ok(())
}

/// An upstream answering by path: `/api/big/N` N bytes (by length),
/// `/api/uneven/N` the same in uneven pieces, `/api/tiny/N` in pieces of
/// 100 bytes, `/api/close/N` N bytes to
/// the close, `/api/short` 300,000 bytes of a promised 1 MiB then the
/// close, `/api/small` five bytes; a HEAD the head alone.
fn upstream() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { return };
            thread::spawn(move || {
                conn.set_read_timeout(Some(IO_TIMEOUT)).unwrap();
                let mut buf = Vec::new();
                let mut chunk = [0u8; 4096];
                loop {
                    while let Some(end) = find(&buf, b"\r\n\r\n") {
                        let head = String::from_utf8_lossy(&buf[..end]).into_owned();
                        buf.drain(..end + 4);
                        if answer(&mut conn, &head).is_err() {
                            return;
                        }
                    }
                    match conn.read(&mut chunk) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    }
                }
            });
        }
    });
    addr
}

/// Answers one request (its `head`) on `conn`; an error ends the connection.
fn answer(conn: &mut TcpStream, head: &str) -> std::io::Result<()> {
    let line = head.lines().next().unwrap_or_default();
    let is_head = line.starts_with("HEAD ");
    let path = line.split(' ').nth(1).unwrap_or_default();
    let size = |prefix: &str| path.strip_prefix(prefix).and_then(|n| n.parse().ok());
    let framed = [
        ("/api/big/", Pieces::Whole),
        ("/api/uneven/", Pieces::Uneven),
        ("/api/tiny/", Pieces::Tiny),
    ];
    for (prefix, pieces) in framed {
        if let Some(n) = size(prefix) {
            write!(conn, "HTTP/1.1 200 OK\r\nContent-Length: {n}\r\n\r\n")?;
            if !is_head {
                write_body(conn, n, pieces)?;
            }
            return Ok(());
        }
    }
    if let Some(n) = size("/api/close/") {
        conn.write_all(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n")?;
        write_body(conn, n, Pieces::Whole)?;
        return Err(std::io::ErrorKind::ConnectionAborted.into());
    }
    if path == "/api/short" {
        conn.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 1048576\r\n\r\n")?;
        write_body(conn, 300_000, Pieces::Whole)?;
        return Err(std::io::ErrorKind::ConnectionAborted.into());
    }
    conn.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello")
}

/// brisk proxying `/api/` to `to`, with an access log of each answer's
/// path, status and body bytes sent.
fn brisk(to: SocketAddr) -> Server {
    let mut b = Builder::new();
    b.file("index.html", b"static\n");
    b.access_log_from_config();
    b.config(&format!(
        "[log]\naccess = \"access.log\"\nformat = '$request_uri $status $body_bytes_sent'\n\n\
         [[reverse_proxy]]\npath = \"/api/\"\nto = \"http://{to}\"\n"
    ));
    b.start()
}

/// Most idle pipes a worker keeps (`sys::splice::MAX_IDLE`), two ends each.
const KEPT_ENDS: usize = 2 * 8;

/// The access log's line for `path`: its status and body bytes.
fn logged(s: &Server, path: &str) -> String {
    let prefix = format!("{path} ");
    let line = s.wait_access_line(|l| l.starts_with(prefix.as_bytes()));
    String::from_utf8(line).unwrap()[prefix.len()..].to_string()
}

#[test]
fn large_answers_arrive_byte_for_byte_through_pipes_and_the_connection_is_kept() {
    let s = brisk(upstream());
    let before = s.pipe_ends();
    let mut c = s.connect();
    let paths = [
        "/api/big/3000000",
        "/api/uneven/1500000",
        "/api/tiny/400000",
        "/api/small",
    ];
    for path in paths {
        c.send(format!("GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes());
        let r = c.response();
        assert_eq!(r.status, 200, "{path}");
        let n = r.body.len();
        let want: &[u8] = match path {
            "/api/small" => b"hello",
            _ => &pattern(0, path.rsplit('/').next().unwrap().parse().unwrap()),
        };
        assert!(r.body == want, "{path}: {n} bytes, not those sent");
        assert_eq!(logged(&s, path), format!("200 {}", want.len()));
    }
    // The worker relayed the large bodies through pipes it keeps.
    let after = s.pipe_ends();
    assert!(
        after > before,
        "no pipe used: {before} pipe ends, then {after}"
    );
    assert!(
        after - before <= KEPT_ENDS,
        "{after} pipe ends kept ({before} before)"
    );
}

#[test]
fn an_answer_to_the_close_arrives_whole_and_ends_with_the_connection() {
    let s = brisk(upstream());
    let mut c = s.connect();
    c.send(b"GET /api/close/2000000 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    let r = c.response();
    assert_eq!(r.status, 200);
    assert!(r.header("content-length").is_none() && r.header("transfer-encoding").is_none());
    assert!(r.body == pattern(0, 2_000_000), "{} bytes", r.body.len());
    assert_eq!(logged(&s, "/api/close/2000000"), "200 2000000");
}

#[test]
fn a_slow_client_gets_every_byte() {
    let s = brisk(upstream());
    let mut c = s.connect();
    c.stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    c.send(b"GET /api/big/4000000 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    // Reads a little at a time at first, so that the server waits for
    // the client with its queue (and pipes) full, then the rest.
    let mut got = Vec::new();
    let mut chunk = vec![0u8; 16 * 1024];
    for _ in 0..40 {
        thread::sleep(Duration::from_millis(10));
        let n = c.stream.read(&mut chunk).unwrap();
        assert!(n > 0, "closed early");
        got.extend_from_slice(&chunk[..n]);
    }
    c.stream.read_to_end(&mut got).unwrap();
    let at = find(&got, b"\r\n\r\n").expect("a head") + 4;
    let head = String::from_utf8_lossy(&got[..at]).into_owned();
    assert!(head.contains("\r\nContent-Length: 4000000\r\n"), "{head}");
    assert!(
        got[at..] == pattern(0, 4_000_000)[..],
        "{} body bytes",
        got.len() - at
    );
}

#[test]
fn an_answer_the_upstream_cuts_short_is_cut_short() {
    let s = brisk(upstream());
    let mut c = s.connect();
    c.send(b"GET /api/short HTTP/1.1\r\nHost: x\r\n\r\n");
    let mut got = Vec::new();
    c.stream.read_to_end(&mut got).unwrap();
    let at = find(&got, b"\r\n\r\n").expect("a head") + 4;
    let head = String::from_utf8_lossy(&got[..at]).into_owned();
    assert!(head.starts_with("HTTP/1.1 200 OK\r\n"), "{head}");
    assert!(head.contains("\r\nContent-Length: 1048576\r\n"), "{head}");
    // What came, and then the close: the client sees it is short.
    assert!(
        got[at..] == pattern(0, 300_000)[..],
        "{} bytes",
        got.len() - at
    );
    assert_eq!(logged(&s, "/api/short"), "200 300000");
}

#[test]
fn a_head_request_gets_the_head_alone_and_the_connection_goes_on() {
    let s = brisk(upstream());
    let mut c = s.connect();
    c.send(b"HEAD /api/big/1048576 HTTP/1.1\r\nHost: x\r\n\r\n");
    let r = c.head_response();
    assert_eq!(r.status, 200);
    // The length a GET would have (RFC 9110 §8.6), as the upstream said.
    assert_eq!(r.header("Content-Length"), Some("1048576"), "{}", r.head);
    c.send(b"GET /api/big/1048576 HTTP/1.1\r\nHost: x\r\n\r\n");
    let r = c.response();
    assert!(r.body == pattern(0, 1_048_576), "{} bytes", r.body.len());
    c.send(b"GET /api/small HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_eq!(c.response().body, b"hello");
}

/// Over HTTP/2 too: the upstream's `content-length`, and no DATA.
#[cfg(feature = "http2")]
#[test]
fn a_head_request_over_http_2_gets_the_upstreams_length() {
    let s = brisk(upstream());
    let mut c = common::h2::H2::connect(s.addr(), &[], 0);
    let id = c.request("HEAD", "/api/big/1048576", &[], None);
    let a = c.answers(&[id]).remove(0);
    assert_eq!(a.status(), "200");
    assert_eq!(a.field("content-length"), Some("1048576"), "{:?}", a.fields);
    assert!(a.body.is_empty());
}

#[test]
fn clients_that_leave_mid_answer_leave_no_pipe_or_socket_behind() {
    let s = brisk(upstream());
    let base = s.pipe_ends();
    // Warm: the pipes and buffers of a whole answer.
    let mut c = s.connect();
    c.send(b"GET /api/big/2000000 HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_eq!(c.response().body.len(), 2_000_000);
    drop(c);
    let sockets = |s: &Server| s.fd_count() - s.pipe_ends();
    wait_until("the warm connection closed", || s.held_connections() == 0);
    let (fds, kept) = (sockets(&s), s.pipe_ends());
    for _ in 0..20 {
        let mut c = s.connect();
        c.send(b"GET /api/big/8000000 HTTP/1.1\r\nHost: x\r\n\r\n");
        let mut first = vec![0u8; 100_000];
        c.stream.read_exact(&mut first).unwrap();
        // (Gone with the server's queue full: its pipes hold bytes.)
        drop(c);
    }
    wait_until("the connections closed", || s.held_connections() == 0);
    // Every pipe that held bytes was closed; those kept are bounded.
    wait_until("the sockets closed", || sockets(&s) <= fds);
    let now = s.pipe_ends();
    assert!(
        now - base <= KEPT_ENDS,
        "{now} pipe ends open ({base} at first, {kept} after the warm answer)"
    );
    // And the next answer is whole.
    let mut c = s.connect();
    c.send(b"GET /api/uneven/700000 HTTP/1.1\r\nHost: x\r\n\r\n");
    assert!(c.response().body == pattern(0, 700_000));
}
