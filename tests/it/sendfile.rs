//! `[static] sendfile`: what a client receives when the file it is
//! downloading is truncated in place. With `sendfile = false` bytes are
//! copied when they are queued, so what was sent is the file as it was,
//! and a file that became shorter than the promised length ends the
//! connection short; with `sendfile = true` (the default) the socket
//! holds references to the page cache, as nginx's `sendfile on` does.

use crate::common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::fd::AsRawFd;
use std::time::Duration;

use common::*;

/// A client socket with a receive buffer of `rcvbuf` bytes.
fn connect_with_rcvbuf(s: &Server, rcvbuf: i32) -> TcpStream {
    connect_rcvbuf(s.addr(), rcvbuf, false).expect("SO_RCVBUF")
}

/// Bytes waiting in the socket's receive queue.
fn unread_bytes(stream: &TcpStream) -> usize {
    let mut n: libc::c_int = 0;
    // SAFETY: FIONREAD writes one int to a valid pointer.
    let r = unsafe { libc::ioctl(stream.as_raw_fd(), libc::FIONREAD, &mut n) };
    assert_eq!(r, 0, "FIONREAD");
    n as usize
}

/// Sends a GET and reads the head byte by byte (the body stays in the
/// socket); returns the Content-Length.
fn get_head(stream: &mut TcpStream, path: &str) -> usize {
    let req = format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    stream.write_all(req.as_bytes()).expect("send");
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        assert_eq!(
            stream.read(&mut byte).expect("read head"),
            1,
            "closed in the head"
        );
        head.push(byte[0]);
    }
    let head = String::from_utf8(head).expect("head");
    assert!(head.starts_with("HTTP/1.1 200 OK\r\n"), "{head}");
    head.lines()
        .find_map(|l| l.strip_prefix("Content-Length: "))
        .and_then(|v| v.parse().ok())
        .expect("Content-Length")
}

fn read_body(stream: &mut TcpStream) -> Vec<u8> {
    let mut body = Vec::new();
    // A reset after the last byte still ends the body.
    let _ = stream.read_to_end(&mut body);
    body
}

fn site(sendfile: bool, name: &str, data: &[u8]) -> Server {
    let mut b = Builder::new();
    b.file(name, data);
    b.config(&format!("[static]\nsendfile = {sendfile}\n"));
    b.start()
}

/// The whole answer is in the client's receive queue when the file is
/// truncated to 1000 bytes.
fn truncated_after_sending(sendfile: bool) -> (Vec<u8>, Vec<u8>) {
    let data = pattern(100 * 1024);
    let s = site(sendfile, "f.bin", &data);
    let mut stream = connect_with_rcvbuf(&s, 1 << 20);
    let len = get_head(&mut stream, "/f.bin");
    assert_eq!(len, data.len());
    wait_until("the whole body to be in the client's buffer", || {
        unread_bytes(&stream) == data.len()
    });
    let f = std::fs::File::options()
        .write(true)
        .open(s.root.join("f.bin"))
        .expect("open");
    f.set_len(1000).expect("truncate");
    (read_body(&mut stream), data)
}

#[test]
fn copied_bytes_are_the_file_as_it_was() {
    let (body, data) = truncated_after_sending(false);
    assert_eq!(body.len(), data.len());
    assert!(body == data, "bytes changed after they were sent");
}

#[test]
fn with_sendfile_the_socket_shares_the_page_cache() {
    // Today's behaviour, as nginx's with `sendfile on`: the full
    // Content-Length arrives, but the bytes after the cut that shared the
    // cut page are now zeros (what the book documents, docs/src/static.md).
    let (body, data) = truncated_after_sending(true);
    assert_eq!(body.len(), data.len(), "a complete-looking 200");
    assert_eq!(&body[..1000], &data[..1000]);
    assert!(
        body[1000..4096].iter().all(|&b| b == 0),
        "expected zeros after the cut in the shared page"
    );
}

/// The most a socket's send buffer grows to (`tcp_wmem`'s maximum).
fn max_send_buffer() -> usize {
    std::fs::read_to_string("/proc/sys/net/ipv4/tcp_wmem")
        .ok()
        .and_then(|s| s.split_whitespace().nth(2)?.parse().ok())
        .unwrap_or(4 << 20)
}

/// A download read slowly; the file is truncated in place to half its
/// size after 1 MiB has been read. The file is large enough that what
/// can be in flight then (the 1 MiB, the server's send buffer, the
/// client's 64 KiB receive buffer) ends before the cut.
fn truncated_while_downloading(sendfile: bool) {
    let data = pattern(2 * (max_send_buffer() + (4 << 20)));
    let s = site(sendfile, "big.bin", &data);
    let mut stream = connect_with_rcvbuf(&s, 64 * 1024);
    let len = get_head(&mut stream, "/big.bin");
    assert_eq!(len, data.len());
    let mut first = vec![0u8; 1 << 20];
    stream.read_exact(&mut first).expect("first MiB");
    let cut = data.len() / 2 + 1000;
    let f = std::fs::File::options()
        .write(true)
        .open(s.root.join("big.bin"))
        .expect("open");
    f.set_len(cut as u64).expect("truncate");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    let mut body = first;
    body.extend(read_body(&mut stream));
    // Short of the promised length, so the client knows it is incomplete,
    // and every byte it got is the file's (less than half the file was
    // in flight at the cut: no byte came from after it).
    assert_eq!(body.len(), cut, "sendfile = {sendfile}");
    assert!(body == data[..cut], "bytes differ (sendfile = {sendfile})");
}

#[test]
fn a_copied_download_truncated_midway_ends_short() {
    truncated_while_downloading(false);
}

#[test]
fn a_sendfile_download_truncated_midway_ends_short() {
    truncated_while_downloading(true);
}

#[test]
fn copied_ranges_and_multipart_are_byte_exact() {
    let data = pattern(300 * 1024 + 7);
    let s = site(false, "r.bin", &data);
    let r = s.get("/r.bin");
    assert_eq!(r.status, 200);
    assert!(r.body == data, "whole file");
    let r = s.get_with("/r.bin", "Range: bytes=70000-250000\r\n");
    assert_eq!(r.status, 206);
    assert!(r.body == data[70000..=250000], "one range");
    let r = s.get_with("/r.bin", "Range: bytes=0-99, 100000-199999\r\n");
    assert_eq!(r.status, 206);
    let text = r.body.clone();
    assert!(find(&text, &data[100000..200000]).is_some(), "second part");
    assert!(find(&text, &data[..100]).is_some(), "first part");
    // Pipelined: two large answers and a small one, in order.
    let raw = b"GET /r.bin HTTP/1.1\r\nHost: x\r\n\r\nGET /r.bin HTTP/1.1\r\nHost: x\r\n\r\n\
                GET /nope HTTP/1.1\r\nHost: x\r\n\r\n";
    let (_c, rs) = exchange(&s, raw, &[false, false, false]);
    assert!(rs[0].body == data && rs[1].body == data);
    assert_eq!(rs[2].status, 404);
}

#[test]
fn a_throttled_copied_download_is_byte_exact() {
    let data = pattern(200 * 1024 + 3);
    let mut b = Builder::new();
    b.file("t.bin", &data);
    b.config(
        "[static]\nsendfile = false\n[[throttle]]\npattern = \"*.bin\"\nconnection_rate = \"2MiB/s\"\n",
    );
    let s = b.start();
    let r = s.get("/t.bin");
    assert_eq!(r.status, 200);
    assert!(r.body == data, "throttled copy differs");
}
