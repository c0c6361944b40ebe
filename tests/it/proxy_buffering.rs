//! `buffer_request = true`: a request's body is held whole before the
//! upstream hears of the request, and goes to it with its length (a
//! chunked upload included); without it, the body streams as it comes.

use crate::common;

use std::net::TcpListener;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;

use common::*;

use super::reverse_proxy::{brisk, read_request};

/// An upstream that counts the connections it accepted and keeps each
/// request it read whole; it answers `ok`.
struct Counting {
    url: String,
    accepted: Arc<AtomicUsize>,
    got: Arc<Mutex<Vec<String>>>,
}

impl Counting {
    fn start() -> Counting {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let accepted = Arc::new(AtomicUsize::new(0));
        let got = Arc::new(Mutex::new(Vec::new()));
        let (a, g) = (Arc::clone(&accepted), Arc::clone(&got));
        thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(mut conn) = conn else { return };
                a.fetch_add(1, Ordering::SeqCst);
                let g = Arc::clone(&g);
                thread::spawn(move || {
                    use std::io::Write;
                    conn.set_read_timeout(Some(IO_TIMEOUT)).unwrap();
                    loop {
                        let request = read_request(&mut conn);
                        if request.is_empty() {
                            return;
                        }
                        g.lock()
                            .unwrap()
                            .push(String::from_utf8_lossy(&request).into_owned());
                        let answer = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
                        if conn.write_all(answer).is_err() {
                            return;
                        }
                    }
                });
            }
        });
        Counting { url, accepted, got }
    }
}

#[test]
fn a_held_body_reaches_the_upstream_whole_with_its_length_and_only_then() {
    let up = Counting::start();
    let s = brisk(&up.url, "buffer_request = true");
    let mut slow = s.connect();
    slow.send(
        b"POST /api/upload HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n",
    );
    // Another client's request, answered through the same worker: by
    // then the first one's bytes were read, and held.
    assert_eq!(s.get("/api/other").text(), "ok");
    assert_eq!(up.accepted.load(Ordering::SeqCst), 1, "only the other's");
    assert_eq!(up.got.lock().unwrap().len(), 1);
    slow.send(b"6\r\n world\r\n0\r\n\r\n");
    let r = slow.response();
    assert_eq!((r.status, r.text()), (200, "ok".to_string()), "{}", r.head);
    let got = up.got.lock().unwrap().clone();
    let upload = got.iter().find(|r| r.starts_with("POST")).unwrap();
    let (head, body) = upload.split_once("\r\n\r\n").unwrap();
    assert!(head.contains("\r\nContent-Length: 11"), "{head}");
    assert!(
        !head.to_ascii_lowercase().contains("transfer-encoding"),
        "{head}"
    );
    assert_eq!(body, "hello world");
}

#[test]
fn without_it_the_body_streams_to_the_upstream_as_it_comes() {
    let up = Counting::start();
    let s = brisk(&up.url, "");
    let mut slow = s.connect();
    slow.send(
        b"POST /api/upload HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n",
    );
    assert_eq!(s.get("/api/other").text(), "ok");
    // (The upload's connection is open already, its body on its way.)
    assert_eq!(up.accepted.load(Ordering::SeqCst), 2);
    slow.send(b"6\r\n world\r\n0\r\n\r\n");
    let r = slow.response();
    assert_eq!(r.status, 200, "{}", r.head);
    let got = up.got.lock().unwrap().clone();
    let upload = got.iter().find(|r| r.starts_with("POST")).unwrap();
    assert!(upload.contains("Transfer-Encoding: chunked"), "{upload}");
}

#[test]
fn a_body_over_the_limit_is_refused_before_the_upstream_hears_of_it() {
    let up = Counting::start();
    let s = brisk(&up.url, "buffer_request = true\n[limits]\nmax_body = 10");
    let r = s.request(
        b"POST /api/upload HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n\
          c\r\nhello world!\r\n0\r\n\r\n",
    );
    assert_eq!(r.status, 413, "{}", r.head);
    assert_eq!(up.accepted.load(Ordering::SeqCst), 0);
}

#[test]
fn a_held_body_larger_than_memory_goes_whole_from_its_temporary_file() {
    // (It was read back from the file's end: the upstream got the head
    // and nothing of the body, and the answer was a 502.)
    let up = Counting::start();
    let s = brisk(&up.url, "buffer_request = true");
    let body: Vec<u8> = (0..200_000u32).map(|i| b'a' + (i % 26) as u8).collect();
    let mut c = s.connect();
    let mut request =
        b"POST /api/big HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
    request.extend_from_slice(&chunked_body(&body, 30_000));
    c.send(&request);
    let r = c.response();
    assert_eq!((r.status, r.text()), (200, "ok".to_string()), "{}", r.head);
    let got = up.got.lock().unwrap().clone();
    let (head, sent) = got[0].split_once("\r\n\r\n").unwrap();
    assert!(head.contains("\r\nContent-Length: 200000"), "{head}");
    assert!(sent.as_bytes() == body.as_slice(), "{} bytes", sent.len());
}
