//! Bodies stream through the reverse proxy both ways, in bounded memory:
//! a 1 GiB upload reaches the upstream while the client is still sending
//! it, and a 100 MB answer reaches the client, with brisk's resident set
//! growing by a bounded amount in both (issue #27: nothing spooled, memory
//! per proxied request bounded whatever the body's size).

use crate::common;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::mpsc;
use std::thread;

use common::*;

const GIB: u64 = 1 << 30;
const PIECE: usize = 1 << 20;

/// How much brisk's RSS may grow while one body of any size passes: the
/// HTTP/1.1 sink's queue (256 KiB at most) and the pieces read (64 KiB),
/// with the allocator's rounding. Measured when written: +208 KiB for the
/// upload, +588 KiB for the answer (debug build).
const BOUND_KIB: u64 = 768;

/// A cheap checksum both ends compute (FNV-1a over the bytes).
fn fnv(mut h: u64, bytes: &[u8]) -> u64 {
    for &b in bytes {
        h = (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
    }
    h
}
const FNV0: u64 = 0xcbf2_9ce4_8422_2325;

/// The next request head on `conn` (bodiless requests), or `None` at its
/// end; `rest` keeps what followed it.
fn next_head(conn: &mut TcpStream, rest: &mut Vec<u8>) -> Option<String> {
    let mut chunk = [0u8; 4096];
    loop {
        if let Some(at) = find(rest, b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&rest[..at]).into_owned();
            rest.drain(..at + 4);
            return Some(head);
        }
        match conn.read(&mut chunk) {
            Ok(0) | Err(_) => return None,
            Ok(n) => rest.extend_from_slice(&chunk[..n]),
        }
    }
}

/// Reads a request head from `conn`; returns what followed it.
fn read_head(conn: &mut TcpStream) -> (String, Vec<u8>) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 65536];
    loop {
        if let Some(at) = find(&buf, b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..at]).into_owned();
            return (head, buf[at + 4..].to_vec());
        }
        let n = conn.read(&mut chunk).expect("upstream read");
        assert!(n > 0, "closed before the head");
        buf.extend_from_slice(&chunk[..n]);
    }
}

fn brisk_to(addr: std::net::SocketAddr) -> Server {
    let mut b = Builder::new();
    b.file("index.html", b"static\n");
    b.config(&format!(
        "[limits]\nmax_body = \"2GiB\"\n\n[[reverse_proxy]]\npath = \"/api/\"\nto = \"http://{addr}\"\n"
    ));
    b.start()
}

#[test]
fn a_1_gib_upload_reaches_the_upstream_while_it_is_sent_in_bounded_memory() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let (first, got_first) = mpsc::channel::<()>();
    let upstream = thread::spawn(move || {
        let (mut conn, _) = listener.accept().unwrap();
        conn.set_read_timeout(Some(IO_TIMEOUT)).unwrap();
        let (head, mut body) = read_head(&mut conn);
        assert!(
            head.contains(&format!("\r\nContent-Length: {GIB}")),
            "{head}"
        );
        let (mut n, mut sum, mut told) = (0u64, FNV0, false);
        let mut chunk = vec![0u8; 1 << 16];
        loop {
            n += body.len() as u64;
            sum = fnv(sum, &body);
            if !told && n >= PIECE as u64 {
                first.send(()).unwrap();
                told = true;
            }
            if n >= GIB {
                break;
            }
            let k = conn.read(&mut chunk).expect("upstream read");
            assert!(k > 0, "closed after {n} bytes");
            body = chunk[..k].to_vec();
        }
        let answer = format!("{n} {sum:x}");
        let _ = write!(
            conn,
            "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n{answer}",
            answer.len()
        );
        answer
    });
    let s = brisk_to(addr);
    // Warm: the worker's buffers exist before the measure starts.
    let _ = s.get("/index.html");
    let before = s.rss_kib();
    let mut c = s.connect();
    c.send(format!("POST /api/up HTTP/1.1\r\nHost: x\r\nContent-Length: {GIB}\r\n\r\n").as_bytes());
    let data = pattern(PIECE);
    // Four pieces out of 1,024, then the upstream must already have one:
    // the body is not held until it is whole.
    let (mut sent, mut sum, mut peak) = (0u64, FNV0, before);
    for _ in 0..4 {
        c.send(&data);
        sum = fnv(sum, &data);
        sent += PIECE as u64;
    }
    got_first
        .recv_timeout(IO_TIMEOUT)
        .expect("the upstream had the first MiB while 1,020 more were still to come");
    while sent < GIB {
        c.send(&data);
        sum = fnv(sum, &data);
        sent += PIECE as u64;
        if sent % (64 * PIECE as u64) == 0 {
            peak = peak.max(s.rss_kib());
        }
    }
    let r = c.response();
    assert_eq!(r.status, 200);
    let want = format!("{GIB} {sum:x}");
    assert_eq!(r.text(), want);
    assert_eq!(upstream.join().unwrap(), want);
    eprintln!("1 GiB upload: RSS {before} KiB before, {peak} KiB at most while it passed");
    assert!(
        peak <= before + BOUND_KIB,
        "RSS grew from {before} to {peak} KiB while 1 GiB passed"
    );
}

#[test]
fn a_100_mb_answer_passes_in_bounded_memory() {
    const SIZE: usize = 100_000_000;
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let data = pattern(PIECE);
    // Each connection: requests one after another, by path: /api/warm a
    // few bytes, /api/big the 100 MB (brisk may send both on one kept
    // connection).
    let upstream = {
        let data = data.clone();
        thread::spawn(move || {
            for conn in listener.incoming().take(2) {
                let Ok(mut conn) = conn else { return };
                let data = data.clone();
                thread::spawn(move || {
                    conn.set_read_timeout(Some(IO_TIMEOUT)).unwrap();
                    let mut rest = Vec::new();
                    loop {
                        let head = match next_head(&mut conn, &mut rest) {
                            Some(h) => h,
                            None => return,
                        };
                        if head.starts_with("GET /api/warm ") {
                            let _ =
                                conn.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
                            continue;
                        }
                        write!(conn, "HTTP/1.1 200 OK\r\nContent-Length: {SIZE}\r\n\r\n").unwrap();
                        let mut left = SIZE;
                        while left > 0 {
                            let n = left.min(PIECE);
                            if conn.write_all(&data[..n]).is_err() {
                                return;
                            }
                            left -= n;
                        }
                    }
                });
            }
        })
    };
    let s = brisk_to(addr);
    // Warm: a proxied request first, so that what the first one makes
    // (the worker's buffers, a kept upstream connection) is there before.
    let warm = s.get("/api/warm");
    assert_eq!(warm.text(), "ok");
    let before = s.rss_kib();
    let mut c = s.connect();
    c.send(b"GET /api/big HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    let (head, mut rest) = {
        let mut buf = Vec::new();
        let mut chunk = [0u8; 65536];
        loop {
            if let Some(at) = find(&buf, b"\r\n\r\n") {
                break (
                    String::from_utf8_lossy(&buf[..at]).into_owned(),
                    buf[at + 4..].to_vec(),
                );
            }
            let n = c.stream.read(&mut chunk).unwrap();
            assert!(n > 0);
            buf.extend_from_slice(&chunk[..n]);
        }
    };
    assert!(head.starts_with("HTTP/1.1 200 OK\r\n"), "{head}");
    assert!(
        head.contains(&format!("\r\nContent-Length: {SIZE}\r\n")),
        "{head}"
    );
    let (mut got, mut sum, mut want, mut peak) = (0usize, FNV0, FNV0, before);
    let mut chunk = vec![0u8; 1 << 16];
    let mut next_sample = 0;
    loop {
        got += rest.len();
        sum = fnv(sum, &rest);
        if got >= next_sample {
            peak = peak.max(s.rss_kib());
            next_sample += 8 << 20;
        }
        let n = c.stream.read(&mut chunk).unwrap();
        if n == 0 {
            break;
        }
        rest = chunk[..n].to_vec();
    }
    assert_eq!(got, SIZE);
    let mut left = SIZE;
    while left > 0 {
        let n = left.min(PIECE);
        want = fnv(want, &data[..n]);
        left -= n;
    }
    assert_eq!(sum, want, "the answer, byte for byte");
    drop(upstream);
    eprintln!("100 MB answer: RSS {before} KiB before, {peak} KiB at most while it passed");
    assert!(
        peak <= before + BOUND_KIB,
        "RSS grew from {before} to {peak} KiB while 100 MB passed"
    );
}
