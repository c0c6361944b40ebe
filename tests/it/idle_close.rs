//! Idle connections close the way their protocols ask (issue #25, points
//! 3 and 4), with the bytes on the wire checked: at the keep-alive
//! timeout and at SIGTERM, an HTTP/2 connection hears a GOAWAY (NO_ERROR,
//! the last stream it opened: RFC 9113 §6.8), a TLS one a close_notify
//! (RFC 8446 §6.1), in that order, then the FIN; the server lingers for
//! the client's own close_notify instead of resetting it. And the
//! keep-alive time starts when the client has read its answer, not when
//! the answer was handed to the kernel: a slow reader keeps its
//! connection, one that never reads is still closed (`timeouts.send`).

use crate::common;

use std::io::Read;
use std::os::fd::AsRawFd;
use std::time::Duration;

use common::*;

/// The file a slow reader reads: most of it waits in the server's
/// socket (the client's receive buffer is small), none in the server.
const BIG: usize = 500_000;

/// A site on a plain listener (`addrs[0]`) and, with TLS, a TLS one
/// (`addrs[1]`), with `[timeouts]` keys `timeouts`.
fn site(timeouts: &str) -> Server {
    let mut b = Builder::new();
    b.file("index.html", b"<h1>hello</h1>\n")
        .file("big.bin", &pattern(BIG));
    #[cfg(feature = "tls")]
    b.config(&format!(
        "[timeouts]\n{timeouts}\n{}",
        common::tls::section(&["a"], "")
    ))
    .listeners(2);
    #[cfg(not(feature = "tls"))]
    b.config(&format!("[timeouts]\n{timeouts}\n"));
    b.start()
}

#[cfg(any(feature = "tls", feature = "http2"))]
/// What makes an idle connection close.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Trigger {
    /// `timeouts.keepalive` (1 s here).
    KeepAlive,
    /// SIGTERM, before the keep-alive timeout (15 s, the default).
    Sigterm,
}

#[cfg(any(feature = "tls", feature = "http2"))]
fn site_for(trigger: Trigger) -> Server {
    match trigger {
        Trigger::KeepAlive => site("keepalive = \"1s\""),
        Trigger::Sigterm => site(""),
    }
}

#[cfg(any(feature = "tls", feature = "http2"))]
/// Once the client's connection is idle: SIGTERM if that is the trigger
/// (the keep-alive timeout needs nothing).
fn pull(server: &Server, trigger: Trigger) {
    if trigger == Trigger::Sigterm {
        server.signal(libc::SIGTERM);
    }
}

#[cfg(any(feature = "tls", feature = "http2"))]
/// After SIGTERM, the server exits (its idle connections closed).
fn exits(mut server: Server, trigger: Trigger) {
    if trigger == Trigger::Sigterm {
        assert!(
            server.wait_exit(Duration::from_secs(10)).is_some(),
            "brisk did not exit after SIGTERM"
        );
    }
}

/// The GOAWAY frame that closes an idle HTTP/2 connection whose client
/// opened streams up to `last`: NO_ERROR, no debug data.
#[cfg(feature = "http2")]
fn goaway(last: u32) -> Vec<u8> {
    let mut f = vec![0, 0, 8, 7, 0, 0, 0, 0, 0];
    f.extend_from_slice(&last.to_be_bytes());
    f.extend_from_slice(&[0, 0, 0, 0]);
    f
}

#[cfg(feature = "tls")]
/// The client's socket: the server's FIN arrived (CLOSE_WAIT), and no
/// reset since, once what the client sent last was acknowledged.
fn assert_not_reset(local: std::net::SocketAddr, peer: std::net::SocketAddr) {
    wait_until("the client's last bytes to be acknowledged", || {
        tcp_socket(local, peer).is_none_or(|t| t.tx_queue == 0)
    });
    let state = tcp_socket(local, peer).map(|t| t.state);
    assert_eq!(
        state,
        Some(TCP_CLOSE_WAIT),
        "the client's socket after its close_notify (7 is CLOSE: reset)"
    );
}

#[cfg(feature = "tls")]
mod tls_end {
    use super::*;
    use rustls::ClientConnection;
    use std::io::{ErrorKind, Write};
    use std::net::TcpStream;

    /// How a TLS connection ended, as its client read it to the end.
    #[derive(Debug, Default)]
    pub struct Ending {
        /// Every byte of plaintext the server sent.
        pub plaintext: Vec<u8>,
        /// A close_notify alert came, after all of it.
        pub close_notify: bool,
        /// Bytes (records) that came after the close_notify.
        pub after: usize,
        /// The TCP connection ended with a FIN, not a reset.
        pub fin: bool,
    }

    /// Reads records until the server's FIN (or a reset).
    pub fn read_to_end(conn: &mut ClientConnection, tcp: &mut TcpStream) -> Ending {
        let mut end = Ending::default();
        loop {
            match conn.read_tls(tcp) {
                Ok(0) => {
                    end.fin = true;
                    return end;
                }
                Ok(n) => {
                    if end.close_notify {
                        end.after += n;
                        continue;
                    }
                    let state = conn.process_new_packets().expect("records");
                    let mut buf = vec![0; state.plaintext_bytes_to_read()];
                    conn.reader().read_exact(&mut buf).expect("plaintext");
                    end.plaintext.extend_from_slice(&buf);
                    end.close_notify = state.peer_has_closed();
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => {
                    assert_ne!(e.kind(), ErrorKind::WouldBlock, "read timed out: {end:?}");
                    return end;
                }
            }
        }
    }

    /// A TLS 1.3 connection to `a.test` offering `alpn`, its handshake done.
    pub fn connect(addr: std::net::SocketAddr, alpn: &[u8]) -> (ClientConnection, TcpStream) {
        let mut config = (*common::tls::client_config(&[&rustls::version::TLS13])).clone();
        config.alpn_protocols = vec![alpn.to_vec()];
        let mut conn = common::tls::client_conn_with(std::sync::Arc::new(config), "a.test");
        let mut tcp = TcpStream::connect(addr).expect("connect");
        tcp.set_read_timeout(Some(IO_TIMEOUT)).expect("timeout");
        while conn.is_handshaking() {
            conn.complete_io(&mut tcp).expect("TLS handshake");
        }
        assert_eq!(conn.alpn_protocol(), Some(alpn), "ALPN");
        (conn, tcp)
    }

    /// Sends `bytes` as records.
    pub fn send(conn: &mut ClientConnection, tcp: &mut TcpStream, bytes: &[u8]) {
        conn.writer().write_all(bytes).expect("plaintext");
        while conn.wants_write() {
            conn.write_tls(tcp).expect("send");
        }
    }

    /// `GET /index.html`, and its whole answer, read.
    pub fn get_index(conn: &mut ClientConnection, tcp: &mut TcpStream) {
        send(
            conn,
            tcp,
            b"GET /index.html HTTP/1.1\r\nHost: a.test\r\n\r\n",
        );
        let mut answer = Vec::new();
        while !answer.ends_with(b"<h1>hello</h1>\n") {
            let mut buf = [0; 4096];
            match conn.reader().read(&mut buf) {
                Ok(n) => answer.extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == ErrorKind::WouldBlock => {
                    conn.read_tls(tcp).expect("records");
                    conn.process_new_packets().expect("records");
                }
                Err(e) => panic!("{e}"),
            }
        }
        assert!(answer.starts_with(b"HTTP/1.1 200 OK\r\n"));
    }

    /// The client's close_notify, as OpenSSL's clients send theirs when
    /// they read the server's: the server must still hold the socket
    /// (it lingers) and read it, not reset the connection.
    pub fn answer_close_notify(conn: &mut ClientConnection, tcp: &mut TcpStream) {
        // (Kept now: a reset socket forgets its peer.)
        let (local, peer) = (
            tcp.local_addr().expect("local"),
            tcp.peer_addr().expect("peer"),
        );
        conn.send_close_notify();
        while conn.wants_write() {
            conn.write_tls(tcp).expect("the client's close_notify");
        }
        assert_not_reset(local, peer);
    }
}

/// An idle HTTP/1.1 connection over TLS: its answer, then close_notify,
/// then the FIN; no reset when the client answers with its own.
#[cfg(feature = "tls")]
fn tls_http1(trigger: Trigger) {
    let server = site_for(trigger);
    let (mut conn, mut tcp) = tls_end::connect(server.addrs[1], b"http/1.1");
    // The answer first (read before the trigger: the connection is idle).
    tls_end::get_index(&mut conn, &mut tcp);
    pull(&server, trigger);
    let end = tls_end::read_to_end(&mut conn, &mut tcp);
    assert_eq!(
        String::from_utf8_lossy(&end.plaintext),
        "",
        "nothing after the answer"
    );
    assert!(end.close_notify, "no close_notify before the end: {end:?}");
    assert_eq!(end.after, 0, "bytes after the close_notify");
    assert!(end.fin, "reset, not closed: {end:?}");
    tls_end::answer_close_notify(&mut conn, &mut tcp);
    exits(server, trigger);
}

/// A client that closes first (its close_notify, or only its FIN) after
/// its answer gets the server's close_notify before the FIN (RFC 8446
/// §6.1: each party sends one before closing its write side).
#[cfg(feature = "tls")]
#[test]
fn a_tls_client_that_closes_first_gets_close_notify_then_the_fin() {
    let server = site("keepalive = \"60s\"");
    for close_notify in [true, false] {
        let (mut conn, mut tcp) = tls_end::connect(server.addrs[1], b"http/1.1");
        tls_end::get_index(&mut conn, &mut tcp);
        if close_notify {
            conn.send_close_notify();
            while conn.wants_write() {
                conn.write_tls(&mut tcp).expect("the client's close_notify");
            }
        } else {
            tcp.shutdown(std::net::Shutdown::Write).expect("FIN");
        }
        let end = tls_end::read_to_end(&mut conn, &mut tcp);
        assert!(end.close_notify, "{close_notify}: no close_notify: {end:?}");
        assert_eq!(end.after, 0, "bytes after the close_notify");
        assert!(end.fin, "reset, not closed: {end:?}");
    }
}

#[cfg(feature = "tls")]
#[test]
fn an_idle_tls_connection_gets_close_notify_then_the_fin_at_the_keepalive_timeout() {
    tls_http1(Trigger::KeepAlive);
}

#[cfg(feature = "tls")]
#[test]
fn an_idle_tls_connection_gets_close_notify_then_the_fin_at_sigterm() {
    tls_http1(Trigger::Sigterm);
}

/// An idle HTTP/2 connection over TLS (ALPN h2) that opened streams 1
/// and 3: the GOAWAY naming 3, then close_notify, then the FIN.
#[cfg(all(feature = "tls", feature = "http2"))]
fn tls_h2(trigger: Trigger) {
    use brisk::h2::frame;
    let server = site_for(trigger);
    let (mut conn, mut tcp) = tls_end::connect(server.addrs[1], b"h2");
    let mut out = brisk::h2::PREFACE.to_vec();
    frame::write_settings(&mut out, &[]);
    for id in [1, 3] {
        let block = common::h2::H2::block("GET", "/index.html", &[]);
        frame::write_headers(&mut out, id, &block, true, 16_384);
    }
    tls_end::send(&mut conn, &mut tcp, &out);
    // Both answers, then idle: read what comes until stream 3's DATA
    // (END_STREAM) has arrived.
    let mut frames = Vec::new();
    let answered = |frames: &[u8]| {
        let mut at = 0;
        while frames.len() >= at + 9 {
            let len = u32::from_be_bytes([0, frames[at], frames[at + 1], frames[at + 2]]) as usize;
            let (kind, flags) = (frames[at + 3], frames[at + 4]);
            let id = u32::from_be_bytes(frames[at + 5..at + 9].try_into().unwrap());
            if kind == 0 && flags & 1 != 0 && id == 3 && frames.len() >= at + 9 + len {
                return Some(at + 9 + len);
            }
            at += 9 + len;
        }
        None
    };
    let answers_end = loop {
        if let Some(end) = answered(&frames) {
            break end;
        }
        conn.read_tls(&mut tcp).expect("records");
        let state = conn.process_new_packets().expect("records");
        let mut buf = vec![0; state.plaintext_bytes_to_read()];
        conn.reader().read_exact(&mut buf).expect("plaintext");
        frames.extend_from_slice(&buf);
    };
    pull(&server, trigger);
    let end = tls_end::read_to_end(&mut conn, &mut tcp);
    frames.extend_from_slice(&end.plaintext);
    let rest = &frames[answers_end..];
    // (A SETTINGS acknowledgement may come between.)
    assert!(
        rest.ends_with(&goaway(3)),
        "not the GOAWAY naming stream 3 last: {rest:02x?}"
    );
    assert!(
        end.close_notify,
        "no close_notify after the GOAWAY: {end:?}"
    );
    assert_eq!(end.after, 0, "bytes after the close_notify");
    assert!(end.fin, "reset, not closed: {end:?}");
    tls_end::answer_close_notify(&mut conn, &mut tcp);
    exits(server, trigger);
}

#[cfg(all(feature = "tls", feature = "http2"))]
#[test]
fn an_idle_h2_connection_over_tls_gets_goaway_close_notify_and_the_fin_at_the_keepalive_timeout() {
    tls_h2(Trigger::KeepAlive);
}

#[cfg(all(feature = "tls", feature = "http2"))]
#[test]
fn an_idle_h2_connection_over_tls_gets_goaway_close_notify_and_the_fin_at_sigterm() {
    tls_h2(Trigger::Sigterm);
}

/// An idle HTTP/1.1 connection over TLS still open when a reload's
/// `timeouts.reload_drain` runs out (before its keep-alive timeout): the
/// previous worker's exit closes it with close_notify before the FIN, no
/// longer bare.
#[cfg(feature = "tls")]
#[test]
fn an_idle_tls_connection_closed_by_the_reload_drain_gets_close_notify_then_the_fin() {
    let server = site("keepalive = \"60s\"\nreload_drain = \"1s\"");
    let (mut conn, mut tcp) = tls_end::connect(server.addrs[1], b"http/1.1");
    tls_end::get_index(&mut conn, &mut tcp);
    server.signal(libc::SIGHUP);
    let end = tls_end::read_to_end(&mut conn, &mut tcp);
    assert_eq!(end.plaintext, b"", "nothing after the answer");
    assert!(end.close_notify, "no close_notify before the end: {end:?}");
    assert_eq!(end.after, 0, "bytes after the close_notify");
    assert!(end.fin, "reset, not closed: {end:?}");
}

/// An HTTP/2 connection over TLS whose answer cannot end (the client
/// gives it no window) when `timeouts.shutdown` runs out after SIGTERM:
/// after the two GOAWAYs of the graceful stop, its stream is cancelled
/// (RST_STREAM CANCEL) and close_notify comes before the FIN. The
/// worker's deadline used to close it bare, which a client cannot tell
/// from a cut by an attacker (RFC 8446 §6.1).
#[cfg(all(feature = "tls", feature = "http2"))]
#[test]
fn an_h2_answer_cut_by_the_stop_deadline_is_cancelled_then_close_notify_and_the_fin() {
    use brisk::h2::frame;
    let server = site("shutdown = \"1s\"");
    let (mut conn, mut tcp) = tls_end::connect(server.addrs[1], b"h2");
    let mut out = brisk::h2::PREFACE.to_vec();
    // No window: the answer's head comes, never a byte of its body.
    frame::write_settings(&mut out, &[(frame::setting::INITIAL_WINDOW_SIZE, 0)]);
    let block = common::h2::H2::block("GET", "/big.bin", &[]);
    frame::write_headers(&mut out, 1, &block, true, 16_384);
    tls_end::send(&mut conn, &mut tcp, &out);
    let mut frames = Vec::new();
    let kinds = |frames: &[u8]| {
        let mut at = 0;
        let mut seen = Vec::new();
        while frames.len() >= at + 9 {
            let len = u32::from_be_bytes([0, frames[at], frames[at + 1], frames[at + 2]]) as usize;
            if frames.len() < at + 9 + len {
                break;
            }
            let id = u32::from_be_bytes(frames[at + 5..at + 9].try_into().unwrap());
            seen.push((frames[at + 3], id, frames[at + 9..at + 9 + len].to_vec()));
            at += 9 + len;
        }
        seen
    };
    while !kinds(&frames).iter().any(|(k, id, _)| *k == 1 && *id == 1) {
        conn.read_tls(&mut tcp).expect("records");
        let state = conn.process_new_packets().expect("records");
        let mut buf = vec![0; state.plaintext_bytes_to_read()];
        conn.reader().read_exact(&mut buf).expect("plaintext");
        frames.extend_from_slice(&buf);
    }
    server.signal(libc::SIGTERM);
    let end = tls_end::read_to_end(&mut conn, &mut tcp);
    frames.extend_from_slice(&end.plaintext);
    // What came after the head, but for the SETTINGS acknowledgement and
    // the PING of the graceful stop: both GOAWAYs (the first names any
    // stream), then stream 1 cancelled.
    let after: Vec<_> = kinds(&frames)
        .into_iter()
        .skip_while(|(k, _, _)| *k != 1)
        .skip(1)
        .filter(|(k, _, _)| ![4, 6].contains(k))
        .collect();
    let cancel = (brisk::h2::ErrorCode::Cancel as u32).to_be_bytes().to_vec();
    assert_eq!(
        after,
        [
            (7, 0, goaway(0x7fff_ffff)[9..].to_vec()),
            (7, 0, goaway(1)[9..].to_vec()),
            (3, 1, cancel),
        ],
        "after the head: {after:02x?}"
    );
    assert!(end.close_notify, "no close_notify: {end:?}");
    assert_eq!(end.after, 0, "bytes after the close_notify");
    assert!(end.fin, "reset, not closed: {end:?}");
    exits(server, Trigger::Sigterm);
}

/// An idle h2c connection that opened streams 1 and 3: the GOAWAY
/// naming 3, then the FIN.
#[cfg(feature = "http2")]
fn h2c(trigger: Trigger) {
    let server = site_for(trigger);
    let mut c = common::h2::H2::connect(server.addr(), &[], 0);
    let ids = [c.get("/index.html", &[]), c.get("/index.html", &[])];
    assert_eq!(ids, [1, 3]);
    for a in c.answers(&ids) {
        assert_eq!(a.status(), "200");
    }
    pull(&server, trigger);
    let mut rest = std::mem::take(&mut c.buf);
    let mut chunk = [0; 4096];
    loop {
        match c.sock.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => rest.extend_from_slice(&chunk[..n]),
            Err(e) => panic!("{e} (not a FIN) after {rest:02x?}"),
        }
    }
    // (A SETTINGS acknowledgement may come before.)
    assert!(
        rest.ends_with(&goaway(3)),
        "not the GOAWAY naming stream 3 last: {rest:02x?}"
    );
    exits(server, trigger);
}

#[cfg(feature = "http2")]
#[test]
fn an_idle_h2c_connection_gets_goaway_then_the_fin_at_the_keepalive_timeout() {
    h2c(Trigger::KeepAlive);
}

#[cfg(feature = "http2")]
#[test]
fn an_idle_h2c_connection_gets_goaway_then_the_fin_at_sigterm() {
    h2c(Trigger::Sigterm);
}

/// A server with `[timeouts]` keys `timeouts`, and a client with a small
/// receive buffer that has asked it for the large file.
fn slow_client(timeouts: &str) -> (Server, Client) {
    let server = site(timeouts);
    let mut c = server.connect();
    let size: libc::c_int = 16 * 1024;
    // SAFETY: `size` lives across the call and its size is passed exactly.
    let rc = unsafe {
        libc::setsockopt(
            c.stream.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVBUF,
            (&size as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    assert_eq!(rc, 0, "SO_RCVBUF");
    c.send(b"GET /big.bin HTTP/1.1\r\nHost: localhost\r\n\r\n");
    (server, c)
}

#[test]
fn a_slow_reader_keeps_its_connection_past_the_keepalive_timeout() {
    // Issue #25 point 4: the whole answer was in the kernel at once, the
    // keep-alive time ran out while the client still read it, and its
    // next request met a FIN. 500 KB read 4 KiB every 25 ms: about 3 s,
    // three times the keep-alive time.
    let (_server, mut c) = slow_client("keepalive = \"1s\"");
    let mut got = Vec::new();
    let mut buf = [0; 4096];
    while find(&got, b"\r\n\r\n").is_none_or(|h| got.len() < h + 4 + BIG) {
        let n = c.stream.read(&mut buf).expect("read");
        assert!(n > 0, "closed after {} bytes", got.len());
        got.extend_from_slice(&buf[..n]);
        std::thread::sleep(Duration::from_millis(25));
    }
    assert_whole_download(&got, "HTTP/1.1 200 OK\r\n", &pattern(BIG));
    c.send(b"GET /index.html HTTP/1.1\r\nHost: localhost\r\n\r\n");
    let r = c.response();
    assert_eq!(r.status, 200);
    assert_eq!(r.body, b"<h1>hello</h1>\n");
}

#[test]
fn a_client_that_never_reads_its_answer_is_closed_after_the_send_timeout() {
    // Its answer waits in the server's socket, unread: the keep-alive
    // time waits for it, but not beyond `timeouts.send`.
    let (_server, c) = slow_client("keepalive = \"1s\"\nsend = \"2s\"");
    let (local, peer) = c.ends();
    wait_until_within(
        Duration::from_secs(15),
        "the server to close the connection",
        || tcp_socket(peer, local).is_none_or(|t| t.inode == 0),
    );
}
