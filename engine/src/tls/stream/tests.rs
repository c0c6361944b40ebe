//! The stream over a real (Unix, non-blocking) socket pair against a
//! rustls client: handshake, a request, an answer larger than the
//! socket buffer (records wait, then go), the client's close, plain
//! HTTP, garbage.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::time::Duration;

use super::*;
use crate::tls::conn::PLAIN_HTTP_ANSWER;
use crate::tls::testing;

struct Ends {
    server: UnixStream,
    client: UnixStream,
    stream: TlsStream,
    scratch: Scratch,
    tls: rustls::ClientConnection,
    /// Plaintext the server read.
    plain: Vec<u8>,
    /// Plaintext the client read.
    got: Vec<u8>,
}

impl Ends {
    fn new() -> Ends {
        let (server, client) = UnixStream::pair().expect("pair");
        server.set_nonblocking(true).expect("nonblocking");
        client.set_nonblocking(true).expect("nonblocking");
        Ends {
            server,
            client,
            stream: TlsStream::new(testing::server_conn()),
            scratch: Scratch::default(),
            tls: testing::client_conn(),
            plain: Vec::new(),
            got: Vec::new(),
        }
    }

    /// One turn of each side; returns whether the server saw the end.
    fn turn(&mut self) -> io::Result<bool> {
        while self.tls.wants_write() {
            match self.tls.write_tls(&mut self.client) {
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) => return Err(e),
            }
        }
        let closed = self
            .stream
            .read(&self.server, &mut self.scratch, &mut self.plain, usize::MAX)?
            .closed;
        self.stream.flush(&self.server)?;
        loop {
            match self.tls.read_tls(&mut self.client) {
                Ok(0) => break,
                Ok(_) => {
                    self.tls
                        .process_new_packets()
                        .map_err(|e| io::Error::other(e.to_string()))?;
                    let mut buf = [0u8; 16384];
                    while let Ok(n) = self.tls.reader().read(&mut buf) {
                        if n == 0 {
                            break;
                        }
                        self.got.extend_from_slice(&buf[..n]);
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) => return Err(e),
            }
        }
        Ok(closed)
    }

    fn handshake(&mut self) {
        for _ in 0..20 {
            self.turn().expect("turn");
            if !self.tls.is_handshaking() && !self.stream.conn().is_handshaking() {
                return;
            }
        }
        panic!("no handshake");
    }
}

#[test]
fn a_request_and_an_answer_larger_than_the_socket_buffer() {
    let mut e = Ends::new();
    e.handshake();
    e.tls
        .writer()
        .write_all(b"GET / HTTP/1.1\r\nHost: a.test\r\n\r\n")
        .expect("request");
    for _ in 0..5 {
        e.turn().expect("turn");
    }
    assert_eq!(e.plain, b"GET / HTTP/1.1\r\nHost: a.test\r\n\r\n");

    // 2 MiB: far more than a socket pair buffers, so records wait.
    let body: Vec<u8> = (0..2 << 20).map(|i| (i % 251) as u8).collect();
    let mut sent = 0;
    let mut waited = 0;
    for _ in 0..10_000 {
        // Write until the socket takes no more, then let the client read.
        while sent < body.len() {
            match e.stream.write(&e.server, &mut e.scratch.out, &body[sent..]) {
                Ok(n) => sent += n,
                Err(err) if err.kind() == io::ErrorKind::WouldBlock => break,
                Err(err) => panic!("write: {err}"),
            }
            if e.stream.wants_write() {
                waited += 1;
                break;
            }
        }
        e.turn().expect("turn");
        if e.got.len() == body.len() {
            break;
        }
    }
    assert!(waited > 0, "records waited for the socket at least once");
    assert_eq!(e.got.len(), body.len());
    assert!(e.got == body, "the client read the bytes sent, in order");
    assert!(!e.stream.wants_write());
    e.stream.release();
    assert_eq!(
        e.stream.left_out.capacity(),
        0,
        "the records' buffer is given back once the answer is out"
    );
}

#[test]
fn a_read_stops_at_what_it_wants_and_says_the_socket_may_hold_more() {
    let mut e = Ends::new();
    e.handshake();
    // More records than one socket read takes (rustls's client buffers
    // 64 KiB of plaintext at most).
    let request = vec![b'r'; 48 * 1024];
    e.tls.writer().write_all(&request).expect("request");
    let mut records = Vec::new();
    while e.tls.wants_write() {
        e.tls.write_tls(&mut records).expect("records");
    }
    e.client.set_nonblocking(false).expect("blocking");
    e.client.write_all(&records).expect("send");
    let first = e
        .stream
        .read(&e.server, &mut e.scratch, &mut e.plain, 1)
        .expect("read");
    assert!(
        first.plaintext >= 1 && !first.drained && !first.closed,
        "{first:?}"
    );
    let rest = e
        .stream
        .read(&e.server, &mut e.scratch, &mut e.plain, usize::MAX)
        .expect("read");
    assert!(rest.drained, "{rest:?}");
    assert_eq!(first.plaintext + rest.plaintext, request.len());
    assert!(e.plain == request);
}

#[test]
fn the_clients_close_ends_the_stream() {
    let mut e = Ends::new();
    e.handshake();
    e.tls.send_close_notify();
    let mut closed = false;
    for _ in 0..5 {
        closed |= e.turn().expect("turn");
    }
    assert!(closed, "close_notify is the end");

    let mut f = Ends::new();
    f.handshake();
    drop(f.tls);
    f.client
        .shutdown(std::net::Shutdown::Both)
        .expect("shutdown");
    let got = f
        .stream
        .read(&f.server, &mut f.scratch, &mut f.plain, usize::MAX);
    assert!(matches!(got, Ok(Got { closed: true, .. })), "{got:?}");
}

#[test]
fn plain_http_gets_its_400_on_the_socket() {
    let mut e = Ends::new();
    e.client
        .write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        .expect("write");
    let err = e
        .stream
        .read(&e.server, &mut e.scratch, &mut e.plain, usize::MAX)
        .expect_err("not TLS");
    assert_eq!(err.kind(), io::ErrorKind::InvalidData);
    let mut answer = vec![0u8; PLAIN_HTTP_ANSWER.len()];
    e.client.set_nonblocking(false).expect("blocking");
    e.client.read_exact(&mut answer).expect("the 400");
    assert_eq!(answer, PLAIN_HTTP_ANSWER);
}

#[test]
fn garbage_is_an_error_and_an_alert() {
    let mut e = Ends::new();
    e.client
        // Application data before any handshake: rustls answers with a
        // fatal unexpected_message alert. (Some garbage gets none: a
        // handshake header claiming 6 MB only ends the connection.)
        .write_all(b"\x17\x03\x03\x00\x10abcdefghijklmnop")
        .expect("write");
    let err = e
        .stream
        .read(&e.server, &mut e.scratch, &mut e.plain, usize::MAX)
        .expect_err("garbage");
    assert_eq!(err.kind(), io::ErrorKind::InvalidData);
    let mut alert = [0u8; 7];
    e.client.set_nonblocking(false).expect("blocking");
    e.client
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    e.client.read_exact(&mut alert).expect("a fatal alert");
    assert_eq!(alert[0], 21, "content type alert (RFC 8446 §5.1)");
    assert_eq!(alert[5], 2, "level fatal");
}

#[test]
fn nothing_to_read_keeps_a_partial_record() {
    let mut e = Ends::new();
    e.handshake();
    e.tls.writer().write_all(b"split me").expect("write");
    let mut records = Vec::new();
    e.tls.write_tls(&mut records).expect("records");
    e.client.write_all(&records[..3]).expect("part");
    let drained = |plaintext| Got {
        plaintext,
        drained: true,
        closed: false,
    };
    let read = |e: &mut Ends| {
        e.stream
            .read(&e.server, &mut e.scratch, &mut e.plain, usize::MAX)
            .expect("read")
    };
    assert_eq!(read(&mut e), drained(0));
    assert!(!e.stream.left_in.is_empty(), "the record's start is kept");
    assert_eq!(read(&mut e), drained(0), "nothing more arrived");
    e.client.write_all(&records[3..]).expect("rest");
    assert_eq!(read(&mut e), drained(8));
    assert_eq!(e.plain, b"split me");
    assert_eq!(
        e.stream.left_in.capacity(),
        0,
        "no buffer is kept once the record is complete"
    );
}

#[test]
fn what_comes_with_a_request_waits_for_the_answer() {
    let mut e = Ends::new();
    // The hello, and the server's flight back.
    let mut hello = Vec::new();
    e.tls.write_tls(&mut hello).expect("hello");
    e.client.write_all(&hello).expect("send");
    let got = e
        .stream
        .read(&e.server, &mut e.scratch, &mut e.plain, usize::MAX)
        .expect("hello read");
    assert_eq!(got.plaintext, 0);
    e.client.set_nonblocking(false).expect("blocking");
    while e.tls.is_handshaking() && !e.tls.wants_write() {
        e.tls.read_tls(&mut e.client).expect("flight");
        e.tls.process_new_packets().expect("flight accepted");
    }
    e.client.set_nonblocking(true).expect("nonblocking");
    // TLS 1.3: the client's Finished and its request leave together; the
    // server's session tickets are made when they arrive, and held.
    e.tls
        .writer()
        .write_all(b"GET / HTTP/1.1\r\n\r\n")
        .expect("request");
    let mut records = Vec::new();
    while e.tls.wants_write() {
        e.tls.write_tls(&mut records).expect("records");
    }
    e.client.write_all(&records).expect("send");
    let got = e
        .stream
        .read(&e.server, &mut e.scratch, &mut e.plain, usize::MAX)
        .expect("read");
    assert_eq!(got.plaintext, 18);
    assert!(e.stream.wants_write(), "the tickets are held");
    let mut byte = [0u8; 1];
    assert_eq!(
        e.client
            .read(&mut byte)
            .expect_err("nothing sent yet")
            .kind(),
        io::ErrorKind::WouldBlock
    );
    // The answer takes them along: both arrive, tickets first.
    let answer = b"HTTP/1.1 204 No Content\r\n\r\n";
    assert_eq!(
        e.stream
            .write(&e.server, &mut e.scratch.out, answer)
            .expect("write"),
        answer.len()
    );
    assert!(!e.stream.wants_write());
    e.turn().expect("turn");
    assert_eq!(e.got, answer);
    assert!(
        e.tls.process_new_packets().is_ok(),
        "the tickets were taken in too"
    );
}

#[test]
fn a_held_head_leaves_with_the_next_write() {
    let mut e = Ends::new();
    e.handshake();
    let head = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n";
    let taken = e
        .stream
        .write_held(&e.server, &mut e.scratch.out, head)
        .expect("held");
    assert_eq!(taken, head.len());
    assert!(e.stream.held > 0, "its records wait in the worker's buffer");
    let mut byte = [0u8; 1];
    assert_eq!(
        e.client
            .read(&mut byte)
            .expect_err("nothing sent yet")
            .kind(),
        io::ErrorKind::WouldBlock
    );
    e.stream
        .write(&e.server, &mut e.scratch.out, b"hello")
        .expect("body");
    assert!(!e.stream.wants_write(), "both went in one write");
    e.turn().expect("turn");
    assert_eq!(e.got, [&head[..], b"hello"].concat());

    // Held with no write after it (a throttle's limit): parked in the
    // connection, it leaves first.
    e.stream
        .write_held(&e.server, &mut e.scratch.out, head)
        .expect("held");
    e.stream.park(&mut e.scratch.out);
    assert!(e.stream.wants_write() && e.stream.held == 0);
    e.stream.flush(&e.server).expect("flush");
    e.turn().expect("turn");
    assert_eq!(e.got, [&head[..], b"hello", &head[..]].concat());
}
