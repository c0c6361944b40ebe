//! The reverse proxy against clients that misbehave (slow bodies,
//! stalled uploads): what the client is answered, and that the upstream
//! is not the one blamed.

use crate::common;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::mpsc;
use std::time::Duration;

use common::*;

/// An upstream that reads one request and never answers; it says how
/// many bytes it got once brisk closes the connection.
fn silent_upstream() -> (std::net::SocketAddr, mpsc::Receiver<usize>) {
    upstream_saying(b"")
}

/// An upstream that reads one request, says `say` as it comes and no
/// more; it says how many bytes it got once brisk closes the connection.
fn upstream_saying(say: &'static [u8]) -> (std::net::SocketAddr, mpsc::Receiver<usize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let Ok((mut conn, _)) = listener.accept() else {
            return;
        };
        conn.set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        let _ = conn.write_all(say);
        let mut got = 0;
        let mut piece = [0u8; 4096];
        while let Ok(n @ 1..) = conn.read(&mut piece) {
            got += n;
        }
        let _ = tx.send(got);
    });
    (addr, rx)
}

/// brisk serving `files` and `/f.txt`, configured with `rule` (its
/// `to` the upstream's address `up`, written `{up}`), `timeouts.body =
/// 1s` and info lines in its log.
fn brisk_to(up: std::net::SocketAddr, rule: &str, files: &[(&str, &[u8])]) -> Server {
    let mut b = Builder::new();
    b.file("f.txt", b"still here");
    for (name, body) in files {
        b.file(name, body);
    }
    b.config(&format!(
        "[log]\nlevel = \"info\"\n[timeouts]\nbody = \"1s\"\n{}",
        rule.replace("{up}", &up.to_string())
    ));
    b.start()
}

/// A POST to `path` whose client sends 10 of its 100 bytes and stops,
/// through brisk configured with `rule` (its `to` the silent upstream's
/// address, `{up}`) and `timeouts.body = 1s`: what the client got to
/// the close, how many bytes the upstream got before its connection
/// closed, and the server's log.
fn stalled_upload(rule: &str, path: &str, files: &[(&str, &[u8])]) -> (String, usize, Server) {
    let (up, upstream_got) = silent_upstream();
    let s = brisk_to(up, rule, files);
    let mut c = TcpStream::connect(s.addr()).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let head = format!("POST {path} HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n");
    c.write_all(format!("{head}0123456789").as_bytes()).unwrap();
    let mut answer = Vec::new();
    c.read_to_end(&mut answer)
        .expect("an answer, then the close");
    let got = upstream_got
        .recv_timeout(Duration::from_secs(20))
        .expect("the upstream's connection closed");
    (String::from_utf8_lossy(&answer).into_owned(), got, s)
}

#[test]
fn a_client_that_stops_sending_its_body_is_answered_408_and_the_upstream_is_not_blamed() {
    // It was answered 504 after the rule's read_timeout, and the error
    // log said "the upstream was silent for read_timeout": the upstream
    // waited for the body, as it should.
    let rule = "[[reverse_proxy]]\npath = \"/p/\"\nto = \"http://{up}\"\nread_timeout = \"60s\"\n";
    let (answer, got, s) = stalled_upload(rule, "/p/up", &[]);
    assert!(
        answer.starts_with("HTTP/1.1 408 Request Timeout\r\n"),
        "{answer}"
    );
    assert!(answer.contains("\r\nConnection: close\r\n"), "{answer}");
    // The upstream had the head and the 10 bytes, then its connection
    // closed (the request cut short cannot go on).
    assert!(got > 10, "{got} bytes upstream");
    let err = s.stderr();
    assert!(!err.contains("read_timeout"), "{err}");
    assert!(!err.contains("[error]"), "{err}");
}

#[test]
fn a_fastcgi_client_that_stops_sending_its_body_is_answered_408_too() {
    // The application server read the request's records and waits for
    // the rest of its body: the client is the slow one.
    // (Its body streams: held whole, it would never reach the server.)
    let rule = "[[fastcgi]]\npattern = \"*.php\"\nto = \"{up}\"\nread_timeout = \"60s\"\n\
                buffer_request = false\n";
    let script: &[u8] = b"<?php echo 'never';\n";
    let (answer, got, s) = stalled_upload(rule, "/form.php", &[("form.php", script)]);
    assert!(
        answer.starts_with("HTTP/1.1 408 Request Timeout\r\n"),
        "{answer}"
    );
    assert!(got > 10, "{got} bytes upstream");
    let err = s.stderr();
    assert!(!err.contains("read_timeout"), "{err}");
}

/// [`stalled_upload`] over HTTP/2, the upstream saying `say`: stream 1
/// POSTs to `path` 10 bytes of the 100 its `content-length` says (its
/// HEADERS and DATA without END_STREAM) and sends no more; once it
/// ended, stream 3 GETs `/f.txt`. Both answers, how many bytes the
/// upstream got before its connection closed, and the server.
#[cfg(feature = "http2")]
fn stalled_h2_upload(
    rule: &str,
    say: &'static [u8],
    path: &str,
    files: &[(&str, &[u8])],
) -> (h2::Answer, h2::Answer, usize, Server) {
    use brisk::h2::frame;
    let (up, upstream_got) = upstream_saying(say);
    let s = brisk_to(up, rule, files);
    let mut c = h2::H2::connect(s.addr(), &[], 0);
    c.sock
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let block = h2::H2::block("POST", path, &[("content-length", "100")]);
    let mut out = Vec::new();
    frame::write_headers(&mut out, 1, &block, false, 16_384);
    out.extend_from_slice(&frame::data_head(1, 10, false));
    out.extend_from_slice(b"0123456789");
    c.send(&out);
    c.next = 3;
    let stalled = c.answers(&[1]).remove(0);
    let id = c.get("/f.txt", &[]);
    let other = c.answers(&[id]).remove(0);
    let got = upstream_got
        .recv_timeout(Duration::from_secs(20))
        .expect("the upstream's connection closed");
    (stalled, other, got, s)
}

#[cfg(feature = "http2")]
#[test]
fn an_http_2_client_that_stops_sending_a_proxied_body_is_answered_408_on_its_stream() {
    // It waited read_timeout (60 s), then 504 and the upstream blamed.
    let rule = "[[reverse_proxy]]\npath = \"/p/\"\nto = \"http://{up}\"\nread_timeout = \"60s\"\n";
    let (stalled, other, got, s) = stalled_h2_upload(rule, b"", "/p/up", &[]);
    assert_eq!(stalled.status(), "408", "{stalled:?}");
    assert_eq!(stalled.reset, None, "{stalled:?}");
    // The connection goes on: its next stream is answered.
    assert_eq!(
        (other.status(), &other.body[..]),
        ("200", &b"still here"[..])
    );
    // The upstream had the head and the 10 bytes, then its connection
    // closed (not kept: the request was cut short).
    assert!(got > 10, "{got} bytes upstream");
    let err = s.stderr();
    assert!(!err.contains("read_timeout"), "{err}");
    assert!(!err.contains("[error]"), "{err}");
}

#[cfg(feature = "http2")]
#[test]
fn an_http_2_stream_whose_answer_began_is_reset_when_its_client_stops_sending() {
    // The upstream answers before it has the body (its head and a
    // first chunk went to the client): too late for a 408.
    let say = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n";
    let rule = "[[reverse_proxy]]\npath = \"/p/\"\nto = \"http://{up}\"\nread_timeout = \"60s\"\n";
    let (stalled, other, got, s) = stalled_h2_upload(rule, say, "/p/up", &[]);
    assert_eq!(stalled.status(), "200", "{stalled:?}");
    assert_eq!(stalled.body, b"hello");
    assert_eq!(stalled.reset, Some(2), "INTERNAL_ERROR: {stalled:?}");
    assert_eq!(other.status(), "200");
    assert!(got > 10, "{got} bytes upstream");
    let err = s.stderr();
    assert!(!err.contains("read_timeout"), "{err}");
}

#[cfg(feature = "http2")]
#[test]
fn an_http_2_fastcgi_client_that_stops_sending_its_body_is_answered_408_on_its_stream() {
    // (Its body streams: held whole, it would never reach the server.)
    let rule = "[[fastcgi]]\npattern = \"*.php\"\nto = \"{up}\"\nread_timeout = \"60s\"\n\
                buffer_request = false\n";
    let script: &[u8] = b"<?php echo 'never';\n";
    let (stalled, other, got, s) =
        stalled_h2_upload(rule, b"", "/form.php", &[("form.php", script)]);
    assert_eq!(stalled.status(), "408", "{stalled:?}");
    assert_eq!(other.status(), "200");
    assert!(got > 10, "{got} bytes upstream");
    let err = s.stderr();
    assert!(!err.contains("read_timeout"), "{err}");
}
