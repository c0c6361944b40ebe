//! Allocations per warm proxied request (issue #27 asks for none, or the
//! profile that shows why not): a keep-alive client, brisk in this
//! process, and an upstream on a thread of its own (not counted), with
//! the upstream connection kept. None now (with fields passed on, and
//! with both heads edited, too; for clients over h2c, HTTPS and h2
//! over TLS as well). 2 (3 with fields) before 2026-12-06,
//! 8 before 2026-12-02, 18 before 2026-11-29. On 2026-12-06: the two
//! boxes every proxied request made, the router's plan
//! (`Body::Upstream(Box<UpstreamPlan>)`) and the producer (`Box<dyn
//! Produce>`), are the boxes of the answers before, which the worker's
//! upstream pool keeps emptied (`sys::boxes`, `Produce::recycle`: a run
//! hands its producer back when done with it, and the producer its
//! plan's box), and the buffer of the fields passed on is a spare one,
//! given back once the sink wrote them (`Produce::head_written`). On
//! 2026-12-02: the HTTP/1.1 sink's state is kept in the box the last
//! answer's came in (`Pools::boxed_producing`, -1); the run goes to its exchange by value, not in a box
//! that was emptied there at once (-1); the upstream's reason phrase is copied only for a status
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
//! (`BRISK_ALLOC_TRACE=1 cargo test --test alone -- a_warm_proxied
//! --nocapture` prints the backtrace of each one, should one come back;
//! see `counting::allocs_per`.)
//! The first test's upstream answers with no field but `Content-Length`.
//! The second's answers as bench/upstream.c does (`Server`,
//! `Content-Type`): 3 before 2026-12-06, 8 before 2026-12-02, when the
//! buffer of the fields passed on grew field by field.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::Duration;

use brisk::config::AccessFormat;

use crate::counting::{allocs_per, not_counted};
use crate::embedded::Embedded;

/// At most this many allocations a proxied request, warm (static files
/// make none either: `zero_alloc.rs`).
const RATCHET: u64 = 0;

/// The same with an answer that has fields to pass on, as bench/proxy's
/// upstream (bench/upstream.c) sends (their buffer is a spare one too).
const RATCHET_FIELDS: u64 = 0;

/// The test's upstream's answer's head: `Content-Length: 100` only.
const BARE: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n";
/// bench/upstream.c's.
const FIELDS: &[u8] = b"HTTP/1.1 200 OK\r\nServer: upstream\r\n\
    Content-Type: application/octet-stream\r\nContent-Length: 100\r\n\r\n";

/// An upstream that answers every request with `head` and 100 bytes.
fn upstream(head: &'static [u8]) -> std::net::SocketAddr {
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
                        let mut all = head.to_vec();
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
fn answer(s: &mut impl Read, buf: &mut Vec<u8>) {
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

/// Allocations per warm request of a keep-alive client proxied to an
/// upstream that answers with `head` and 100 bytes, by a rule with
/// `more` keys.
fn allocations_with(head: &'static [u8], more: &str) -> f64 {
    allocations_logged(head, more, None)
}

/// As [`allocations_with`], the access log written in the format `logged`
/// names, if any.
fn allocations_logged(head: &'static [u8], more: &str, logged: Option<AccessFormat>) -> f64 {
    let _alone = crate::counting::alone();
    let server = proxying("", head, more, logged);
    let mut s = TcpStream::connect(server.addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let request = b"GET /api/x HTTP/1.1\r\nHost: x\r\n\r\n";
    let mut buf = Vec::with_capacity(1 << 16);
    not_counted(false);
    let per = allocs_per(500, || {
        s.write_all(request).unwrap();
        answer(&mut s, &mut buf);
    });
    not_counted(true);
    drop(s);
    let log = server.stop();
    // (The requests were logged, with their upstream: 1,000 and more.)
    let lines = (log.lines())
        .filter(|l| {
            l.contains("\"target\":\"/api/x\",") && l.contains("\"upstream_addr\":\"127.0.0.1:")
        })
        .count();
    assert_eq!(lines >= 1000, logged.is_some(), "{lines} lines logged");
    per
}

/// A server whose `/api/` goes to an upstream that answers with `head`
/// and 100 bytes, by a rule with `more` keys, its access log written in
/// the format `logged` names, if any, and the sections `top` in its
/// configuration too (counting off until the caller turns it on).
fn proxying(top: &str, head: &'static [u8], more: &str, logged: Option<AccessFormat>) -> Embedded {
    not_counted(true);
    let up = upstream(head);
    Embedded::start_logging(
        "proxy-alloc",
        &format!(
            "{top}[limits]\nkeepalive_requests = 1000000\n\
             [[reverse_proxy]]\npath = \"/api/\"\nto = \"http://{up}\"\n{more}"
        ),
        logged,
    )
}

/// With its access log written as JSON (the upstream's address, status
/// and times in each line): none either.
#[test]
fn a_warm_proxied_request_logged_allocates_nothing() {
    let per = allocations_logged(FIELDS, "", Some(AccessFormat::Json));
    println!("a warm proxied request, logged: {per:.2} allocations");
    assert!(
        per <= RATCHET as f64,
        "{per:.2} allocations a logged proxied request, more than {RATCHET}"
    );
}

/// An HTTP/2 client proxied to an HTTP/1.1 upstream (issue #27's common
/// case): none either, as for a static file over h2c (`zero_alloc.rs`).
/// 5 before 2026-12-06 16:00 UTC: the request's buffers (its fields, its
/// target, its path) went with the run instead of back to the worker's
/// pools (3); the answer's body, copied for the stream to send as its
/// window allows (`StreamSink::data`, `Piece::Bytes`, two pieces here),
/// now goes into the buffers of pieces sent before (`h2::Scratch::copy`,
/// 2 more); and the stream's list of pieces is the list of an answer that
/// ended, as a static answer's is (`Session::spare_pieces`; the list's
/// first push had made it), so is its log line's buffer.
#[cfg(feature = "http2")]
#[test]
fn a_warm_request_of_an_h2_client_proxied_allocates_nothing() {
    let _alone = crate::counting::alone();
    let server = proxying("", FIELDS, "", Some(AccessFormat::Combined));
    let mut c = crate::zero_alloc::h2_client(server.addr);
    let request = crate::zero_alloc::block("/api/x");
    not_counted(false);
    let per = allocs_per(500, || assert_eq!(c.get(&[&request]), 100));
    not_counted(true);
    drop(c);
    let log = server.stop();
    let lines = log.lines().filter(|l| l.contains("GET /api/x")).count();
    assert!(lines >= 1000, "{lines} lines logged");
    println!("a warm proxied request over h2c: {per:.2} allocations");
    assert!(
        per <= RATCHET as f64,
        "{per:.2} allocations a proxied request over h2c, more than {RATCHET}"
    );
}

/// A server as [`proxying`]'s with a `[tls]` listener too (its second
/// address), its access log in the combined format.
#[cfg(feature = "tls")]
fn proxying_over_tls() -> Embedded {
    let top = format!(
        "[tls]\nlisten = [\"127.0.0.1:0\"]\n[[tls.certificate]]\n{}",
        crate::zero_alloc::tls::certificate_keys()
    );
    proxying(&top, FIELDS, "", Some(AccessFormat::Combined))
}

/// Stops `server` and checks that its access log has the warm requests
/// of a test (1,000 and more).
#[cfg(feature = "tls")]
fn logged_all(server: Embedded) {
    let log = server.stop();
    let lines = log.lines().filter(|l| l.contains("GET /api/x")).count();
    assert!(lines >= 1000, "{lines} lines logged");
}

/// A client over HTTPS (HTTP/1.1) proxied to a plain HTTP/1.1 upstream:
/// none either, as for a static file over TLS (`zero_alloc.rs`). (The
/// test's thread, rustls's client, is left out of the count.)
#[cfg(feature = "tls")]
#[test]
fn a_warm_request_of_a_tls_client_proxied_allocates_nothing() {
    let _alone = crate::counting::alone();
    let server = proxying_over_tls();
    let mut s = crate::zero_alloc::tls::connect(server.addrs[1]);
    let request = b"GET /api/x HTTP/1.1\r\nHost: x\r\n\r\n";
    let mut buf = Vec::with_capacity(1 << 16);
    let per = allocs_per(500, || {
        s.write_all(request).unwrap();
        answer(&mut s, &mut buf);
    });
    drop(s);
    logged_all(server);
    println!("a warm proxied request over TLS: {per:.2} allocations");
    assert!(
        per <= RATCHET as f64,
        "{per:.2} allocations a proxied request over TLS, more than {RATCHET}"
    );
}

/// An HTTP/2 client over TLS (h2 by ALPN, as browsers) proxied to an
/// HTTP/1.1 upstream: none either.
#[cfg(all(feature = "tls", feature = "http2"))]
#[test]
fn a_warm_request_of_an_h2_client_over_tls_proxied_allocates_nothing() {
    let _alone = crate::counting::alone();
    let server = proxying_over_tls();
    let s = crate::zero_alloc::tls::connect_offering(server.addrs[1], &[b"h2"]);
    let mut c = crate::zero_alloc::h2_over(s);
    let request = crate::zero_alloc::block("/api/x");
    let per = allocs_per(500, || assert_eq!(c.get(&[&request]), 100));
    drop(c);
    logged_all(server);
    println!("a warm proxied request over h2 (TLS): {per:.2} allocations");
    assert!(
        per <= RATCHET as f64,
        "{per:.2} allocations a proxied request over h2 (TLS), more than {RATCHET}"
    );
}

#[test]
fn a_warm_proxied_request_allocates_at_most_the_ratchet() {
    let per = allocations_with(BARE, "");
    println!("a warm proxied request: {per:.2} allocations");
    assert!(
        per <= RATCHET as f64,
        "{per:.2} allocations a proxied request, more than {RATCHET}"
    );
}

#[test]
fn a_warm_proxied_answer_with_fields_allocates_at_most_its_ratchet() {
    let per = allocations_with(FIELDS, "");
    println!("a warm proxied request, fields passed on: {per:.2} allocations");
    assert!(
        per <= RATCHET_FIELDS as f64,
        "{per:.2} allocations a proxied request with fields, more than {RATCHET_FIELDS}"
    );
}

/// A rule that edits both heads costs no more than an answer with fields
/// (the one field it sets needs their buffer): the edits are the rule's,
/// shared with each request, not copied into it (each name and value was
/// an allocation a request: 13 in all here before 2026-12-05).
#[test]
fn a_rule_s_header_edits_are_not_copied_for_each_request() {
    let per = allocations_with(
        BARE,
        "headers = { set = { \"X-App\" = \"brisk\" }, remove = [\"X-Powered-By\"] }\n\
         response_headers = { set = { \"X-Frame-Options\" = \"DENY\" }, \
         remove = [\"Server-Timing\"] }\n",
    );
    println!("a warm proxied request, both heads edited: {per:.2} allocations");
    assert!(
        per <= RATCHET_FIELDS as f64,
        "{per:.2} allocations a proxied request with edits, more than {RATCHET_FIELDS}"
    );
}
