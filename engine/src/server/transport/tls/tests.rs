//! The TLS transport over a real loopback socket against a rustls
//! client: the handshake inside `read`, the output queue (bytes and a
//! file range read with `pread`) flushed as records, a throttle's limit,
//! close_notify before the FIN, a file that shrank.

use std::fs::File;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::rc::Rc;
use std::time::Instant;

use super::*;
use crate::tls::testing;

/// A server-side TLS transport and a client, both non-blocking.
struct Pair {
    server: Tls,
    client: std::net::TcpStream,
    tls: rustls::ClientConnection,
    /// Plaintext the server read.
    plain: Vec<u8>,
    /// Plaintext the client read.
    got: Vec<u8>,
    /// The client read close_notify.
    clean_end: bool,
}

impl Pair {
    fn new() -> Pair {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let client =
            std::net::TcpStream::connect(listener.local_addr().expect("addr")).expect("connect");
        let (sock, _) = listener.accept().expect("accept");
        sock.set_nonblocking(true).expect("nonblocking");
        client.set_nonblocking(true).expect("nonblocking");
        let mut tls = crate::config::TlsConfig::testing(&["a"]);
        tls.max_handshakes = 1;
        let cfg = Config {
            tls: Some(tls),
            ..Config::default()
        };
        let sessions = Sessions::new(&cfg, None, &|| unreachable!()).expect("sessions");
        let setup = Setup::new(&cfg, sessions.as_ref())
            .expect("setup")
            .expect("tls");
        let acceptor = Acceptor::new(&setup);
        let slot = acceptor.slot().expect("a slot");
        assert!(acceptor.slot().is_none(), "one handshake at a time");
        let tcp = Tcp::new(mio::net::TcpStream::from_std(sock), false);
        let server = acceptor.wrap(tcp, slot, Instant::now()).expect("wrap");
        Pair {
            server,
            client,
            tls: testing::client_conn(),
            plain: Vec::with_capacity(1 << 16),
            got: Vec::new(),
            clean_end: false,
        }
    }

    /// The client writes what it has, the server reads, the client reads.
    fn turn(&mut self) {
        while self.tls.wants_write() {
            match self.tls.write_tls(&mut self.client) {
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) => panic!("client write: {e}"),
            }
        }
        match self.server.read(&mut self.plain, usize::MAX) {
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(e) => panic!("server read: {e}"),
        }
        self.client_reads();
    }

    fn client_reads(&mut self) {
        loop {
            match self.tls.read_tls(&mut self.client) {
                Ok(0) => return,
                Ok(_) => {
                    self.tls.process_new_packets().expect("client accepts");
                    let mut buf = [0u8; 16384];
                    loop {
                        match self.tls.reader().read(&mut buf) {
                            Ok(0) => {
                                self.clean_end = true;
                                break;
                            }
                            Ok(n) => self.got.extend_from_slice(&buf[..n]),
                            Err(_) => break,
                        }
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) => panic!("client read: {e}"),
            }
        }
    }

    /// Handshake, then `request` from the client, read by the server.
    fn request(&mut self, request: &[u8]) {
        self.request_and(request, false);
    }

    /// [`Pair::request`], the client closing right after it if `close`.
    fn request_and(&mut self, request: &[u8], close: bool) {
        for _ in 0..50 {
            self.turn();
            if !self.tls.is_handshaking() && self.server.deadline().is_none() {
                break;
            }
        }
        assert!(self.server.deadline().is_none(), "the handshake is done");
        let session = self.server.session().expect("negotiated");
        assert_eq!(session.protocol, "TLSv1.3");
        self.tls.writer().write_all(request).expect("request");
        if close {
            self.tls.send_close_notify();
        }
        for _ in 0..50 {
            self.turn();
            if self.plain.len() >= request.len() {
                break;
            }
        }
        assert_eq!(self.plain, request);
    }

    /// Flushes `out` until it is all written (the client reading between).
    fn flush_all(&mut self, out: &mut Out) {
        for _ in 0..10_000 {
            match self.server.flush(out, Limit::NONE, false).expect("flush") {
                Flushed::All if !self.server.has_backlog() => return,
                _ => self.client_reads(),
            }
        }
        panic!("the queue never drained");
    }
}

/// A file of `len` pattern bytes in the temporary directory.
fn temp_file(tag: &str, len: usize) -> (std::path::PathBuf, Vec<u8>) {
    let path = std::env::temp_dir().join(format!("brisk-tls-{tag}-{}", std::process::id()));
    let data: Vec<u8> = (0..len).map(|i| (i * 7 % 253) as u8).collect();
    File::create(&path)
        .and_then(|mut f| f.write_all(&data))
        .expect("temp file");
    (path, data)
}

#[test]
fn bytes_and_a_file_range_go_out_as_records_in_order() {
    let mut p = Pair::new();
    p.request(b"GET /big HTTP/1.1\r\nHost: a.test\r\n\r\n");
    let (path, data) = temp_file("range", 300_000);
    let file = Rc::new(File::open(&path).expect("open"));
    let mut out = Out::with_capacity(1024);
    out.push_bytes(b"head\r\n\r\n");
    out.push_file(Rc::clone(&file), 10, 250_000);
    out.push_bytes(b"tail");
    p.flush_all(&mut out);
    let _ = std::fs::remove_file(&path);
    let mut want = b"head\r\n\r\n".to_vec();
    want.extend_from_slice(&data[10..250_010]);
    want.extend_from_slice(b"tail");
    p.client_reads();
    assert_eq!(p.got.len(), want.len());
    assert!(p.got == want, "the client read the queue's bytes in order");
    assert_eq!(out.written(), want.len() as u64);
}

#[test]
fn a_limit_stops_the_flush_at_that_many_plaintext_bytes() {
    let mut p = Pair::new();
    p.request(b"GET / HTTP/1.1\r\n\r\n");
    let mut out = Out::with_capacity(1024);
    out.push_bytes(&[b'x'; 1000]);
    let limit = Limit {
        bytes: 100,
        throttled: false,
    };
    let flushed = p.server.flush(&mut out, limit, false).expect("flush");
    assert_eq!(flushed, Flushed::Limit);
    assert_eq!(out.written(), 100);
    p.client_reads();
    assert_eq!(p.got, [b'x'; 100]);
}

#[test]
fn shutdown_sends_close_notify_before_the_fin() {
    let mut p = Pair::new();
    p.request(b"GET / HTTP/1.1\r\n\r\n");
    p.server.shutdown_write();
    p.client.set_nonblocking(false).expect("blocking");
    p.client
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    let mut records = Vec::new();
    p.client.read_to_end(&mut records).expect("read to the FIN");
    let mut rd = &records[..];
    while !rd.is_empty() {
        p.tls.read_tls(&mut rd).expect("records");
        p.tls.process_new_packets().expect("accepted");
    }
    let mut buf = [0u8; 16];
    assert_eq!(
        p.tls.reader().read(&mut buf).expect("a clean end"),
        0,
        "close_notify came (an unclean end is an error)"
    );
}

#[test]
fn a_file_shorter_than_its_range_ends_the_connection() {
    let mut p = Pair::new();
    p.request(b"GET / HTTP/1.1\r\n\r\n");
    let (path, _) = temp_file("short", 1000);
    let file = Rc::new(File::open(&path).expect("open"));
    let mut out = Out::with_capacity(1024);
    out.push_file(file, 0, 5000);
    let err = loop {
        match p.server.flush(&mut out, Limit::NONE, false) {
            Ok(_) => p.client_reads(),
            Err(e) => break e,
        }
    };
    let _ = std::fs::remove_file(&path);
    assert_eq!(err.kind(), io::ErrorKind::UnexpectedEof);
    assert_eq!(out.written(), 1000, "what the file had went out");
}

#[test]
fn the_client_closing_after_its_request_is_read_then_said() {
    let mut p = Pair::new();
    p.request_and(b"GET / HTTP/1.1\r\n\r\n", true);
    // The request and close_notify arrived together: the request first,
    // then the end, at the next read.
    let mut buf = Vec::with_capacity(64);
    assert_eq!(p.server.read(&mut buf, usize::MAX).expect("the end"), 0);
    assert!(p.server.tcp().hangup, "the engine reads on until the end");
}

#[test]
fn the_last_answer_takes_close_notify_along() {
    let mut p = Pair::new();
    p.request(b"GET / HTTP/1.1\r\nConnection: close\r\n\r\n");
    let mut out = Out::with_capacity(1024);
    out.push_bytes(b"HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n");
    // Not yet shut down: close_notify went with the answer's records.
    assert_eq!(
        p.server.flush(&mut out, Limit::NONE, true).expect("flush"),
        Flushed::All
    );
    p.client_reads();
    assert_eq!(
        p.got,
        b"HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n"
    );
    assert!(p.clean_end, "close_notify came with the answer");
}
