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
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let Ok((mut conn, _)) = listener.accept() else {
            return;
        };
        conn.set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        let mut got = 0;
        let mut piece = [0u8; 4096];
        while let Ok(n @ 1..) = conn.read(&mut piece) {
            got += n;
        }
        let _ = tx.send(got);
    });
    (addr, rx)
}

/// A POST to `path` whose client sends 10 of its 100 bytes and stops,
/// through brisk configured with `rule` (its `to` the silent upstream's
/// address, `{up}`) and `timeouts.body = 1s`: what the client got to
/// the close, how many bytes the upstream got before its connection
/// closed, and the server's log.
fn stalled_upload(rule: &str, path: &str, files: &[(&str, &[u8])]) -> (String, usize, Server) {
    let (up, upstream_got) = silent_upstream();
    let mut b = Builder::new();
    for (name, body) in files {
        b.file(name, body);
    }
    b.config(&format!(
        "[log]\nlevel = \"info\"\n[timeouts]\nbody = \"1s\"\n{}",
        rule.replace("{up}", &up.to_string())
    ));
    let s = b.start();
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
    let rule = "[[fastcgi]]\npattern = \"*.php\"\nto = \"{up}\"\nread_timeout = \"60s\"\n";
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
