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

#[test]
fn a_client_that_stops_sending_its_body_is_answered_408_and_the_upstream_is_not_blamed() {
    // It was answered 504 after the rule's read_timeout, and the error
    // log said "the upstream was silent for read_timeout": the upstream
    // waited for the body, as it should.
    let (up, upstream_got) = silent_upstream();
    let mut b = Builder::new();
    b.config(&format!(
        "[log]\nlevel = \"info\"\n[timeouts]\nbody = \"1s\"\n\
         [[reverse_proxy]]\npath = \"/p/\"\nto = \"http://{up}\"\nread_timeout = \"60s\"\n"
    ));
    let s = b.start();
    let mut c = TcpStream::connect(s.addr()).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let head = "POST /p/up HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n";
    c.write_all(format!("{head}0123456789").as_bytes()).unwrap();
    let mut answer = Vec::new();
    c.read_to_end(&mut answer)
        .expect("an answer, then the close");
    let answer = String::from_utf8_lossy(&answer);
    assert!(
        answer.starts_with("HTTP/1.1 408 Request Timeout\r\n"),
        "{answer}"
    );
    assert!(answer.contains("\r\nConnection: close\r\n"), "{answer}");
    // The upstream had the head and the 10 bytes, then its connection
    // closed (the request cut short cannot go on).
    let got = upstream_got
        .recv_timeout(Duration::from_secs(20))
        .expect("the upstream's connection closed");
    assert!(got > 10, "{got} bytes upstream");
    let err = s.stderr();
    assert!(!err.contains("read_timeout"), "{err}");
    assert!(!err.contains("[error]"), "{err}");
}

#[test]
fn a_fastcgi_client_that_stops_sending_its_body_is_answered_408_too() {
    // The application server read the request's records and waits for
    // the rest of its body: the client is the slow one.
    let (up, upstream_got) = silent_upstream();
    let mut b = Builder::new();
    b.file("form.php", b"<?php echo 'never';\n");
    b.config(&format!(
        "[log]\nlevel = \"info\"\n[timeouts]\nbody = \"1s\"\n\
         [[fastcgi]]\npattern = \"*.php\"\nto = \"{up}\"\nread_timeout = \"60s\"\n"
    ));
    let s = b.start();
    let mut c = TcpStream::connect(s.addr()).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let head = "POST /form.php HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n";
    c.write_all(format!("{head}0123456789").as_bytes()).unwrap();
    let mut answer = Vec::new();
    c.read_to_end(&mut answer)
        .expect("an answer, then the close");
    let answer = String::from_utf8_lossy(&answer);
    assert!(
        answer.starts_with("HTTP/1.1 408 Request Timeout\r\n"),
        "{answer}"
    );
    let got = upstream_got
        .recv_timeout(Duration::from_secs(20))
        .expect("the application server's connection closed");
    assert!(got > 10, "{got} bytes upstream");
    let err = s.stderr();
    assert!(!err.contains("read_timeout"), "{err}");
}
