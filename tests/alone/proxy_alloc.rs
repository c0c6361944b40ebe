//! Allocations per warm proxied request (issue #27 asks for none, or the
//! profile that shows why not): a keep-alive client, brisk in this
//! process, and an upstream on a thread of its own (not counted), with
//! the upstream connection kept. The count is a ratchet: it may only go
//! down. 4 now, 8 before 2026-12-02, 18 before 2026-11-29. On
//! 2026-12-02: the upstream's reason phrase is copied only for a status
//! brisk has no phrase of its own for (-1: "OK" was copied for every
//! answer, and dropped unused by the writer); the forwarded head, the
//! copy of it kept to send it again (an idempotent method), and the
//! buffer the answer's head is read into come from spare buffers that
//! the answers before gave back to the worker's upstream pool (-3).
//! Before 2026-11-29: the request's buffers come back from the run that
//! held them (-3), the upstream's log label is made once per upstream
//! (-2), an answer body is decoded where it was read rather than into a
//! new buffer (-2), the answer's fields are parsed onto the stack (-1),
//! the head goes to the outbox in its own buffer (-1), and the body read
//! with the head stays where it is (-1); the bytes read with the head no
//! longer take the worker's 64 KiB read buffer along (it grew again for
//! every request).
//!
//! The 4 left (`BRISK_ALLOC_TRACE=1 cargo test --test alone --
//! a_warm_proxied --nocapture` prints each one's backtrace; see
//! `counting::allocs_per`), and why they stay for now: four boxes made
//! per request and dropped at its end, each with a lifetime of its own
//! between the router and the event loop: the plan from the router
//! (`Body::Upstream(Box<UpstreamPlan>)`, `router/upstream.rs`), the
//! producer (`Box<dyn Produce>`, `worker/produced.rs`), the run
//! (`Box<Run>`) and the HTTP/1.1 sink's state (`Box<Producing>`), the
//! last three in `Worker::start_answer_body`. Keeping them for the next
//! request needs a slab of runs per worker and a producer that can be
//! taken back out of its `dyn Produce` (dev/plan-27-front.md).
//! The test's upstream answers with no field but `Content-Length`; one
//! that sends more (`Server`, `Content-Type`, as bench/upstream.c does)
//! costs one more, the buffer of the fields passed on (`ReplyHead`'s
//! `headers`).

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::Duration;

use crate::counting::{allocs_per, not_counted};
use crate::embedded::Embedded;

/// At most this many allocations a proxied request, warm (static files
/// make none: `zero_alloc.rs`).
const RATCHET: u64 = 4;

fn upstream() -> std::net::SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        not_counted(true);
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { return };
            std::thread::spawn(move || {
                not_counted(true);
                let mut buf = Vec::with_capacity(1 << 16);
                let mut chunk = [0u8; 4096];
                loop {
                    while let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                        buf.drain(..end + 4);
                        let answer = b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n";
                        let mut all = answer.to_vec();
                        all.extend_from_slice(&[b'u'; 100]);
                        if conn.write_all(&all).is_err() {
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

/// Reads one answer of 100 body bytes.
fn answer(s: &mut TcpStream, buf: &mut Vec<u8>) {
    let mut chunk = [0u8; 4096];
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            if buf.len() >= end + 4 + 100 {
                buf.drain(..end + 4 + 100);
                return;
            }
        }
        let n = s.read(&mut chunk).unwrap();
        assert!(n > 0, "closed");
        buf.extend_from_slice(&chunk[..n]);
    }
}

#[test]
fn a_warm_proxied_request_allocates_at_most_the_ratchet() {
    let _alone = crate::counting::alone();
    not_counted(true);
    let up = upstream();
    let server = Embedded::start(
        "proxy-alloc",
        &format!(
            "[limits]\nkeepalive_requests = 1000000\n\
             [[reverse_proxy]]\npath = \"/api/\"\nto = \"http://{up}\"\n"
        ),
    );
    let mut s = TcpStream::connect(server.addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let request = b"GET /api/x HTTP/1.1\r\nHost: x\r\n\r\n";
    let mut buf = Vec::with_capacity(1 << 16);
    not_counted(false);
    let per = allocs_per(500, || {
        s.write_all(request).unwrap();
        answer(&mut s, &mut buf);
    });
    println!("a warm proxied request: {per:.2} allocations");
    not_counted(true);
    drop(s);
    server.stop();
    assert!(
        per <= RATCHET as f64,
        "{per:.2} allocations a proxied request, more than {RATCHET}"
    );
}
