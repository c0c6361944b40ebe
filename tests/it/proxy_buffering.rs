//! `buffer_request = true`: a request's body is held whole before the
//! upstream hears of the request, and goes to it with its length (a
//! chunked upload included); without it, the body streams as it comes.
//! `buffer_answer` (on by default): an answer is read on ahead of a
//! client slower than the upstream and held for it.

use crate::common;

use std::net::TcpListener;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;

use common::*;

use super::reverse_proxy::{brisk, read_request, Say, Upstream};

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

/// `mb` MiB of a pattern that shows a byte lost, doubled or moved.
fn long(mb: usize) -> Vec<u8> {
    (0..mb << 20).map(|i| (i % 251) as u8).collect()
}

/// An upstream that answers one connection at a time, each with `mb`
/// MiB of [`long`]'s pattern (chunked, or with its length), then closes
/// it: while one answer is not taken whole, no other is answered.
fn one_at_a_time(mb: usize, chunked: bool) -> Upstream {
    let body = long(mb);
    let mut answer = b"HTTP/1.1 200 OK\r\nConnection: close\r\n".to_vec();
    if chunked {
        answer.extend_from_slice(b"Transfer-Encoding: chunked\r\n\r\n");
        answer.extend_from_slice(&chunked_body(&body, 50_000));
    } else {
        answer.extend_from_slice(format!("Content-Length: {}\r\n\r\n", body.len()).as_bytes());
        answer.extend_from_slice(&body);
    }
    Upstream::start(vec![Say::Bytes(Vec::leak(answer))])
}

/// A client that reads its answer slowly, or not at all for a while,
/// holds no upstream connection meanwhile: what it has not taken is
/// read on ahead of it and held (nginx's `proxy_buffering`, on by
/// default there too), so that an upstream that serves one connection
/// at a time answers the next request; the slow client then gets its
/// 40 MiB whole, byte for byte. Over HTTP/1.1 (its socket full; the
/// answer with its length, which brisk otherwise splices) and HTTP/2
/// (its stream's window spent; the answer chunked).
#[test]
fn a_client_slow_to_read_its_answer_holds_no_upstream_connection() {
    let up = one_at_a_time(40, false);
    let s = brisk(&format!("http://{}", up.addr), "keepalive = 0");
    let mut slow = s.connect();
    slow.send(b"GET /api/long HTTP/1.1\r\nHost: t\r\n\r\n");
    slow.read_at_least(1000);
    let r = s.get("/api/other");
    assert_eq!(r.status, 200);
    assert!(r.body == long(40), "{} bytes", r.body.len());
    let r = slow.response();
    assert_eq!(r.status, 200);
    assert!(r.body == long(40), "{} bytes", r.body.len());

    let up = one_at_a_time(40, true);
    let s = brisk(&format!("http://{}", up.addr), "keepalive = 0");
    // (The stream's window is HTTP/2's default, 65,535 bytes, and not
    // given back before the other request is answered.)
    #[cfg(feature = "http2")]
    {
        let mut h2 = common::h2::H2::connect(s.addr(), &[], 1 << 30);
        let answer = h2.slow_get("/api/long", || {
            let r = s.get("/api/other");
            assert!(r.body == long(40), "{} bytes", r.body.len());
        });
        assert_eq!(answer.status(), "200");
        assert!(answer.body == long(40), "{} bytes", answer.body.len());
    }
    let log = s.stderr();
    assert!(!log.contains("cannot hold"), "{log}");
}

/// With `buffer_answer` at a size, no more than that is held ahead of a
/// slow client; the answer still comes whole. A `temp_dir` that cannot
/// take the answer (here: none) is said once, and the answer comes
/// whole all the same, as the client takes it. With `buffer_answer =
/// false`, nothing is read ahead: the upstream waits for the client.
#[test]
fn an_answer_held_ahead_is_bounded_and_never_lost() {
    let up = one_at_a_time(20, true);
    let to = format!("http://{}", up.addr);
    let dir = TempDir::new("proxy-tmp");
    let top = format!("temp_dir = \"{}\"\n", dir.path.display());
    let config = |more: &str| {
        let mut b = Builder::new();
        b.config(&format!(
            "{top}[[reverse_proxy]]\npath = \"/api/\"\nto = \"{to}\"\nkeepalive = 0\n{more}"
        ));
        b.start()
    };
    let s = config("buffer_answer = \"1MiB\"\n");
    let r = held_one_mib(&s, &dir.path, "/api/long");
    assert!(r.body == long(20), "{} bytes", r.body.len());
    drop(s);

    // (Gone once brisk serves, its sandbox made: no unnamed file can be
    // made there.)
    let s = config("");
    assert!(s.get("/").status < 500);
    std::fs::remove_dir(&dir.path).unwrap();
    let mut slow = s.connect();
    slow.send(b"GET /api/long HTTP/1.1\r\nHost: t\r\n\r\n");
    slow.read_at_least(1000);
    s.wait_stderr_line("cannot hold the answer ahead of the client");
    let r = slow.response();
    assert!(r.body == long(20), "{} bytes", r.body.len());
}

/// A kept upstream connection goes back to its pool as soon as the
/// answer it carried was read whole, also when that answer was read on
/// ahead of a slow client still taking it: the next request goes on
/// the same connection (nginx, too, frees an upstream connection once
/// its answer is buffered), and the slow client still gets its answer
/// whole.
#[test]
fn a_connection_whose_answer_was_read_ahead_whole_carries_the_next_request() {
    use std::io::Write;
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    // (Each connection's two ends, once it carried a long answer whole.)
    let (sent, written) = std::sync::mpsc::channel();
    let accepted = Arc::new(AtomicUsize::new(0));
    let a = Arc::clone(&accepted);
    thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { return };
            a.fetch_add(1, Ordering::SeqCst);
            let sent = sent.clone();
            thread::spawn(move || {
                let ends = (conn.local_addr().unwrap(), conn.peer_addr().unwrap());
                loop {
                    let request = read_request(&mut conn);
                    let (long, body) = match request.starts_with(b"GET /api/long ") {
                        true => (true, long(20)),
                        false if request.is_empty() => return,
                        false => (false, b"ok".to_vec()),
                    };
                    let head = format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n", body.len());
                    if conn.write_all(head.as_bytes()).is_err() || conn.write_all(&body).is_err() {
                        return;
                    }
                    if long {
                        let _ = sent.send(ends);
                    }
                }
            });
        }
    });
    let s = brisk(&url, "");
    let mut slow = s.connect();
    slow.send(b"GET /api/long HTTP/1.1\r\nHost: t\r\n\r\n");
    slow.read_at_least(1000);
    // The upstream wrote its answer whole, and brisk read it all: it
    // holds what its client did not take yet.
    let (up, brisk_end) = written.recv_timeout(IO_TIMEOUT).unwrap();
    wait_for("brisk to read the whole answer", || {
        let theirs = tcp_socket(up, brisk_end)?;
        let ours = tcp_socket(brisk_end, up)?;
        (theirs.tx_queue == 0 && ours.rx_queue == 0).then_some(())
    });
    for _ in 0..3 {
        let r = s.get("/api/other");
        assert_eq!((r.status, &r.body[..]), (200, &b"ok"[..]));
    }
    assert_eq!(
        accepted.load(Ordering::SeqCst),
        1,
        "one upstream connection"
    );
    let r = slow.response();
    assert_eq!(r.status, 200);
    assert!(r.body == long(20), "{} bytes", r.body.len());
}
