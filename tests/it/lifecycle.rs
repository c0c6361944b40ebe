//! Timeouts and graceful shutdown.

use crate::common;

use common::*;
use std::io::{Read, Write};
use std::time::Duration;

fn timeout_site(cfg: &str) -> Server {
    let mut b = Builder::new();
    b.file("a.txt", b"AAAA");
    b.config(cfg);
    b.start()
}

#[test]
fn stalled_head_gets_408() {
    let s = timeout_site("[timeouts]\nheader = \"1s\"\n");
    let mut c = s.connect();
    c.send(b"GET /a.txt HTTP/1.1\r\nHost: x\r\n");
    let r = c.response();
    assert_error(&r, 408, "Request Timeout", "", Conn::Close);
    c.expect_closed();
}

#[test]
fn dripped_head_still_times_out() {
    // Slowloris: each byte resets nothing; the whole head has 1 s.
    let s = timeout_site("[timeouts]\nheader = \"1s\"\n");
    let mut c = s.connect();
    c.send(b"GET /a.txt HTTP/1.1\r\n");
    for i in 0..20 {
        // The slow client is what is tested: a header line every 200 ms,
        // 4 s in all unless the server stops it (after 1 s).
        std::thread::sleep(Duration::from_millis(200));
        if c.stream
            .write_all(format!("X-{i}: y\r\n").as_bytes())
            .is_err()
        {
            break;
        }
    }
    let raw = c.read_to_end();
    let text = String::from_utf8_lossy(&raw);
    assert!(
        text.starts_with("HTTP/1.1 408 Request Timeout\r\n"),
        "{text:?}"
    );
    assert!(
        text.ends_with(&error_page(408, "Request Timeout")),
        "{text:?}"
    );
}

#[test]
fn idle_keep_alive_connection_is_closed() {
    let s = timeout_site("[timeouts]\nkeepalive = \"1s\"\n");
    let mut c = s.connect();
    c.send(b"GET /a.txt HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_file(
        &c.response(),
        b"AAAA",
        "text/plain; charset=utf-8",
        "",
        Conn::None,
    );
    // Closed within the 5 s read timeout, silently.
    c.expect_closed();
}

#[test]
fn connection_that_never_sends_is_closed() {
    // Deferred by the kernel for about a second (timeouts.defer_accept),
    // then handed over and timed out like any other.
    let s = timeout_site("[timeouts]\nkeepalive = \"1s\"\nheader = \"1s\"\n");
    let mut c = s.connect();
    let raw = c.read_to_end();
    // Silently, or with a 408: either way no other bytes.
    if !raw.is_empty() {
        let text = String::from_utf8_lossy(&raw);
        assert!(
            text.starts_with("HTTP/1.1 408 Request Timeout\r\n"),
            "{text:?}"
        );
    }
}

#[test]
fn default_keepalive_is_not_tiny() {
    // Counterpart of the tests above: without a short timeout the
    // connection stays open for a while.
    let s = timeout_site("");
    let mut c = s.connect();
    c.send(b"GET /a.txt HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_eq!(c.response().status, 200);
    c.expect_silence(Duration::from_millis(1500));
    c.send(b"GET /a.txt HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    assert_eq!(c.response().status, 200);
}

#[test]
fn stalled_body_is_closed_without_a_second_response() {
    let s = timeout_site("[timeouts]\nbody = \"1s\"\n");
    let mut c = s.connect();
    c.send(b"POST /a.txt HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n0123456789");
    let r = c.response();
    assert!(
        r.status == 405 || r.status == 408,
        "unexpected status {}",
        r.status
    );
    let rest = c.read_to_end();
    if r.status == 405 {
        // The answer went out already; the stalled body just ends the
        // connection.
        assert!(
            rest.is_empty(),
            "a second response: {:?}",
            String::from_utf8_lossy(&rest)
        );
    }
}

#[test]
fn graceful_shutdown_completes_a_large_response() {
    let big = pattern(20 * 1024 * 1024);
    let mut b = Builder::new();
    b.file("big.bin", &big);
    b.file("a.txt", b"AAAA");
    b.config("[timeouts]\nshutdown = \"30s\"\n");
    let mut s = b.start();
    let port = s.port;
    let mut c = s.connect();
    c.send(b"GET /big.bin HTTP/1.1\r\nHost: x\r\n\r\n");
    // Read a little, so that most of the body is still to come.
    c.read_at_least(256 * 1024);
    s.signal(libc::SIGTERM);
    // The rest is read while the server drains.
    wait_until("new connections to be refused", || s.refuses_connections());
    assert_whole_download(&c.read_to_end(), "HTTP/1.1 200 OK\r\n", &big);
    let st = s
        .wait_exit(Duration::from_secs(20))
        .expect("brisk did not exit");
    assert!(st.success(), "exit status {st:?}; stderr: {}", s.stderr());
    // The port can be bound again at once.
    let mut b = Builder::new();
    b.file("a.txt", b"again");
    b.listen(&format!("127.0.0.1:{port}"));
    let s2 = b.start();
    assert_eq!(s2.port, port);
    assert_eq!(s2.get("/a.txt").body, b"again");
}

/// A second SIGINT (or SIGTERM) while a stop drains ends the drain: the
/// download it waited for is cut, and brisk exits long before
/// `timeouts.shutdown` (as Caddy's second Ctrl-C; nginx's SIGINT is a
/// fast stop at once).
#[test]
fn a_second_sigint_ends_the_drain_at_once() {
    let big = pattern(20 * 1024 * 1024);
    let mut b = Builder::new();
    b.file("big.bin", &big);
    b.config("[timeouts]\nshutdown = \"600s\"\n");
    let mut s = b.start();
    let mut c = s.connect();
    c.send(b"GET /big.bin HTTP/1.1\r\nHost: x\r\n\r\n");
    c.read_at_least(256 * 1024);
    s.signal(libc::SIGINT);
    s.wait_stderr_line("shutting down; draining for up to 600s");
    assert!(s.is_running(), "the drain ended before the download did");
    s.signal(libc::SIGINT);
    s.wait_stderr_line("second stop signal: closing every connection now");
    let st = s
        .wait_exit(Duration::from_secs(20))
        .expect("brisk did not exit");
    assert!(st.success(), "exit status {st:?}; stderr: {}", s.stderr());
    let got = c.read_to_end();
    assert!(got.len() < big.len(), "the download was not cut");
}

#[test]
fn sigterm_refuses_new_connections_while_a_download_finishes() {
    // Behind a load balancer, a stopping server must refuse new
    // connections at once (so they go elsewhere) rather than let the
    // kernel queue them for nobody, as nginx does; what is in flight
    // still completes.
    let big = pattern(20 * 1024 * 1024);
    let mut b = Builder::new();
    b.file("big.bin", &big);
    b.workers(2);
    b.config("[timeouts]\nshutdown = \"60s\"\n");
    let mut s = b.start();
    let mut c = s.connect();
    c.send(b"GET /big.bin HTTP/1.1\r\nHost: x\r\n\r\n");
    // Most of the body is still to come: the drain lasts until it is read.
    c.read_at_least(256 * 1024);
    s.signal(libc::SIGTERM);
    wait_until("new connections to be refused", || s.refuses_connections());
    assert!(s.is_running(), "the drain ended before the download did");
    assert_whole_download(&c.read_to_end(), "HTTP/1.1 200 OK\r\n", &big);
    let st = s
        .wait_exit(Duration::from_secs(20))
        .expect("brisk did not exit");
    assert!(st.success(), "exit status {st:?}; stderr: {}", s.stderr());
}

#[test]
fn shutdown_closes_idle_connections_at_once() {
    let mut b = Builder::new();
    b.file("a.txt", b"AAAA");
    b.workers(2);
    // Without deferral, so that the silent connection is brisk's at once
    // (the deferred case is the next test).
    b.config("[timeouts]\ndefer_accept = 0\n");
    let mut s = b.start();
    let mut used = s.connect();
    used.send(b"GET /a.txt HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_eq!(used.response().status, 200);
    let mut fresh = s.connect();
    // The fresh connection is brisk's before the signal.
    fresh.wait_until_accepted();
    s.signal(libc::SIGTERM);
    // Both close well before the 15 s keep-alive timeout.
    used.expect_closed();
    let raw = fresh.read_to_end();
    assert!(
        raw.is_empty() || raw.starts_with(b"HTTP/1.1 "),
        "{:?}",
        String::from_utf8_lossy(&raw)
    );
    let st = s
        .wait_exit(Duration::from_secs(10))
        .expect("brisk did not exit");
    assert!(st.success(), "exit status {st:?}; stderr: {}", s.stderr());
}

#[test]
fn deferred_silent_connection_is_never_served_after_shutdown() {
    // By default (timeouts.defer_accept = 1s) a connection that has sent
    // nothing stays with the kernel: brisk cannot close it at shutdown,
    // but nothing is served on it once brisk is gone: its first request
    // is answered with a reset by the kernel.
    let mut b = Builder::new();
    b.file("a.txt", b"AAAA");
    let mut s = b.start();
    let mut silent = s.connect();
    // The kernel holds it for brisk (deferred: not accepted) before the
    // signal.
    wait_until("the kernel to hold the silent connection", || {
        silent.server_side().is_some()
    });
    s.signal(libc::SIGTERM);
    let st = s
        .wait_exit(Duration::from_secs(10))
        .expect("brisk did not exit");
    assert!(st.success(), "exit status {st:?}; stderr: {}", s.stderr());
    // Not closed by brisk: it never had it.
    silent.expect_silence(Duration::from_millis(300));
    let _ = silent
        .stream
        .write_all(b"GET /a.txt HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_eq!(silent.read_to_end(), b"");
}

#[test]
fn sigint_also_stops_cleanly() {
    let mut b = Builder::new();
    b.file("a.txt", b"AAAA");
    let mut s = b.start();
    assert_eq!(s.get("/a.txt").status, 200);
    s.signal(libc::SIGINT);
    let st = s
        .wait_exit(Duration::from_secs(10))
        .expect("brisk did not exit");
    assert!(st.success(), "exit status {st:?}");
}

/// SIGQUIT, nginx's graceful stop (and its image's STOPSIGNAL), drains
/// and stops as SIGTERM does: not the default action's abrupt end, which
/// cut the responses in flight and logged nothing.
#[test]
fn sigquit_stops_gracefully_too() {
    let mut b = Builder::new();
    b.file("a.txt", b"AAAA");
    let mut s = b.start();
    let mut c = s.connect();
    c.send(b"GET /a.txt HTTP/1.1\r\nHost: x\r\n");
    c.wait_until_read();
    s.signal(libc::SIGQUIT);
    s.wait_stderr_line("shutting down");
    // The request in flight, if its head ends in time, is answered (as
    // in the SIGTERM test below), and the connection closed.
    let _ = c.stream.write_all(b"\r\n");
    let raw = c.read_to_end();
    if !raw.is_empty() {
        let text = String::from_utf8_lossy(&raw);
        assert!(text.starts_with("HTTP/1.1 200 OK\r\n"), "{text:?}");
        assert!(text.ends_with("\r\n\r\nAAAA"), "{text:?}");
    }
    let st = s
        .wait_exit(Duration::from_secs(10))
        .expect("brisk did not exit");
    assert!(st.success(), "exit status {st:?}");
    assert!(s.stderr().contains("[info] stopped"), "{}", s.stderr());
}

#[test]
fn request_in_flight_at_shutdown_is_answered_with_close() {
    let mut b = Builder::new();
    b.file("a.txt", b"AAAA");
    b.config("[timeouts]\nshutdown = \"10s\"\n");
    let mut s = b.start();
    let mut c = s.connect();
    // Half a head: the connection is busy, not idle.
    c.send(b"GET /a.txt HTTP/1.1\r\nHost: x\r\n");
    c.wait_until_read();
    s.signal(libc::SIGTERM);
    // The head ends during the drain: once the listeners are closed, the
    // worker knows.
    wait_until("new connections to be refused", || s.refuses_connections());
    let _ = c.stream.write_all(b"\r\n");
    let raw = c.read_to_end();
    if !raw.is_empty() {
        let text = String::from_utf8_lossy(&raw);
        assert!(text.starts_with("HTTP/1.1 200 OK\r\n"), "{text:?}");
        assert!(text.contains("\r\nConnection: close\r\n"), "{text:?}");
        assert!(text.ends_with("\r\n\r\nAAAA"), "{text:?}");
    }
    let st = s
        .wait_exit(Duration::from_secs(15))
        .expect("brisk did not exit");
    assert!(st.success(), "exit status {st:?}");
}

#[test]
fn second_request_stalling_gets_408() {
    let s = timeout_site("[timeouts]\nheader = \"1s\"\nkeepalive = \"10s\"\n");
    let mut c = s.connect();
    c.send(b"GET /a.txt HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_eq!(c.response().status, 200);
    c.send(b"GET /a.txt HTTP/1.1\r\nHo");
    assert_error(&c.response(), 408, "Request Timeout", "", Conn::Close);
    c.expect_closed();
}

/// Waits until the server has reloaded on SIGHUP, or exited (as the
/// default action of SIGHUP would make it); fails if it exited.
fn wait_reload_or_exit(s: &mut Server) {
    wait_until("the reload (or the end of the server)", || {
        s.stderr().contains("SIGHUP: configuration reloaded") || !s.is_running()
    });
    if let Some(st) = s.wait_exit(Duration::ZERO) {
        panic!("exited on SIGHUP: {st:?}; stderr: {}", s.stderr());
    }
}

#[test]
fn sighup_does_not_stop_the_server() {
    let mut b = Builder::new();
    b.file("a.txt", b"AAAA");
    let mut s = b.start();
    // Serving already (see also the test below for the start-up window).
    assert_eq!(s.get("/a.txt").status, 200);
    s.signal(libc::SIGHUP);
    wait_reload_or_exit(&mut s);
    assert_eq!(s.get("/a.txt").status, 200);
}

#[test]
fn sighup_right_after_start_up_does_not_stop_the_server() {
    // A supervisor may signal as soon as the server says it listens.
    let mut b = Builder::new();
    b.file("a.txt", b"AAAA");
    let mut s = b.start();
    s.signal(libc::SIGHUP);
    wait_reload_or_exit(&mut s);
    assert_eq!(s.get("/a.txt").status, 200);
}

#[test]
fn sigterm_right_after_start_up_exits_cleanly() {
    let mut b = Builder::new();
    b.file("a.txt", b"AAAA");
    let mut s = b.start();
    s.signal(libc::SIGTERM);
    let st = s
        .wait_exit(Duration::from_secs(10))
        .expect("brisk did not exit");
    assert!(st.success(), "exit status {st:?}; stderr: {}", s.stderr());
}

#[test]
fn second_sigterm_during_the_drain_is_not_fatal() {
    // While the main thread waits for the drain, a repeated SIGTERM (a
    // supervisor retrying, Ctrl-C twice) must still be handled by brisk,
    // not by the default action that kills the process on the spot.
    let big = pattern(20 * 1024 * 1024);
    let mut b = Builder::new();
    b.file("big.bin", &big);
    b.config("[timeouts]\nshutdown = \"30s\"\n");
    let mut s = b.start();
    let mut c = s.connect();
    c.send(b"GET /big.bin HTTP/1.1\r\nHost: x\r\n\r\n");
    let mut buf = [0u8; 64 * 1024];
    let n = c.stream.read(&mut buf).expect("read");
    assert!(n > 0);
    s.signal(libc::SIGTERM);
    // Taken (not still pending, where a second one would merge with it):
    // the second comes during the drain.
    s.wait_stderr_line("shutting down; draining");
    s.signal(libc::SIGTERM);
    // Were the second fatal, the kernel would end the process at once and
    // the reads below would end early: no need to wait for anything.
    // Drain what is left so that the server can finish.
    let mut total = n;
    loop {
        match c.stream.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(k) => total += k,
        }
    }
    let st = s
        .wait_exit(Duration::from_secs(20))
        .expect("brisk did not exit");
    assert!(
        st.code().is_some(),
        "killed by a signal ({st:?}) after reading {total} bytes"
    );
}
