//! HTTPS through the engine (issue #12), with a rustls client and bytes
//! on the wire: what a plain listener answers, the TLS listener of the
//! same server answers byte for byte (keep-alive, pipelining, ranges,
//! conditional requests, HEAD, errors, a large file); plain HTTP and
//! garbage on a TLS port; the handshake deadline and cap.
use crate::common;

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::time::Duration;

use common::tls::{client_conn, client_conn_tls12, section};
use common::*;

const BIG: usize = 3 * 1024 * 1024 + 17;

/// A site served on a plain listener (`addrs[0]`) and a TLS one
/// (`addrs[1]`), with `[tls]` keys `extra` and more configuration `more`.
fn both(b: &mut Builder, extra: &str, more: &str) -> Server {
    b.file("index.html", b"<h1>hello</h1>\n")
        .file("big.bin", &pattern(BIG))
        .config(&format!("{more}\n{}", section(&["a"], extra)))
        .listeners(2);
    std::mem::take(b).start()
}

fn tls_addr(s: &Server) -> SocketAddr {
    s.addrs[1]
}

/// What differs from one answer to the next whatever the transport:
/// every `Date:` value, and the random boundary of a multipart answer.
fn masked(raw: &[u8]) -> Vec<u8> {
    let mut out = mask(raw, b"\r\nDate: ", |rest| {
        find(rest, b"\r\n").unwrap_or(rest.len())
    });
    out = mask(&out, b"brisk-0x", |rest| {
        rest.iter().take_while(|b| b.is_ascii_hexdigit()).count()
    });
    out
}

/// `raw` with what follows each `marker` (as long as `len` says) masked.
fn mask(raw: &[u8], marker: &[u8], len: impl Fn(&[u8]) -> usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(raw.len());
    let mut rest = raw;
    while let Some(at) = find(rest, marker) {
        let value = at + marker.len();
        out.extend_from_slice(&rest[..value]);
        out.extend_from_slice(b"<masked>");
        rest = &rest[value + len(&rest[value..])..];
    }
    out.extend_from_slice(rest);
    out
}

/// Sends `requests` (the last one closes) on `c`, returns every byte
/// the server sent until it closed.
fn conversation(mut c: Client, requests: &[u8]) -> Vec<u8> {
    c.send(requests);
    c.read_to_end()
}

#[test]
fn the_tls_listener_answers_what_the_plain_one_answers_byte_for_byte() {
    let server = both(&mut Builder::new(), "", "");
    let etag = etag(BIG);
    let sequences: Vec<Vec<u8>> = vec![
        // Keep-alive, one request after another (each its own write).
        b"GET /index.html HTTP/1.1\r\nHost: a.test\r\n\r\n".to_vec(),
        // Pipelined: 20 requests in one write, answered in order.
        b"GET /index.html HTTP/1.1\r\nHost: a.test\r\n\r\n".repeat(20),
        // HEAD, ranges (one, several, unsatisfiable), a 404.
        b"HEAD /big.bin HTTP/1.1\r\nHost: a.test\r\n\r\n\
          GET /big.bin HTTP/1.1\r\nHost: a.test\r\nRange: bytes=100-199\r\n\r\n\
          GET /big.bin HTTP/1.1\r\nHost: a.test\r\nRange: bytes=-5\r\n\r\n\
          GET /big.bin HTTP/1.1\r\nHost: a.test\r\nRange: bytes=0-9,2000000-2000009\r\n\r\n\
          GET /big.bin HTTP/1.1\r\nHost: a.test\r\nRange: bytes=99999999-\r\n\r\n\
          GET /nothing HTTP/1.1\r\nHost: a.test\r\n\r\n"
            .to_vec(),
        // Conditional requests: 304 by ETag and by date, 412, a range
        // whose If-Range matches.
        format!(
            "GET /big.bin HTTP/1.1\r\nHost: a.test\r\nIf-None-Match: {etag}\r\n\r\n\
             GET /big.bin HTTP/1.1\r\nHost: a.test\r\nIf-Modified-Since: {MTIME_HTTP}\r\n\r\n\
             GET /big.bin HTTP/1.1\r\nHost: a.test\r\nIf-Match: \"nope\"\r\n\r\n\
             GET /big.bin HTTP/1.1\r\nHost: a.test\r\nRange: bytes=5-9\r\nIf-Range: {etag}\r\n\r\n"
        )
        .into_bytes(),
        // A large file, then a bad request that ends the connection.
        b"GET /big.bin HTTP/1.1\r\nHost: a.test\r\n\r\nGET / HTTP/9.9\r\n\r\n".to_vec(),
    ];
    for (i, requests) in sequences.iter().enumerate() {
        let mut all = requests.clone();
        all.extend_from_slice(
            b"GET /index.html HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n",
        );
        let plain = conversation(server.connect(), &all);
        let tls = conversation(server.connect_tls_to(tls_addr(&server)), &all);
        assert!(
            plain.len() > 100 && plain.starts_with(b"HTTP/1.1 "),
            "sequence {i}: {:?}",
            String::from_utf8_lossy(&plain[..plain.len().min(300)])
        );
        let (tls, plain) = (masked(&tls), masked(&plain));
        assert_eq!(
            tls.len(),
            plain.len(),
            "sequence {i}: as many bytes over TLS"
        );
        let differ = tls.iter().zip(&plain).position(|(a, b)| a != b);
        assert!(
            differ.is_none(),
            "sequence {i}: the same bytes over TLS; they differ at {differ:?}: {:?} / {:?}",
            String::from_utf8_lossy(&tls[differ.unwrap_or(0).saturating_sub(100)..][..200]),
            String::from_utf8_lossy(&plain[differ.unwrap_or(0).saturating_sub(100)..][..200]),
        );
    }
    // Keep-alive for real: requests one at a time on one TLS connection.
    let mut c = server.connect_tls_to(tls_addr(&server));
    for _ in 0..50 {
        c.send(b"GET /index.html HTTP/1.1\r\nHost: a.test\r\n\r\n");
        let r = c.response();
        assert_eq!(
            (r.status, r.body.as_slice()),
            (200, &b"<h1>hello</h1>\n"[..])
        );
    }
    let tls = c.tls.as_ref().expect("tls");
    assert_eq!(tls.alpn_protocol(), Some(&b"http/1.1"[..]), "ALPN");
    assert_eq!(
        tls.protocol_version(),
        Some(rustls::ProtocolVersion::TLSv1_3)
    );
}

#[test]
fn tls_1_2_serves_too() {
    let server = both(&mut Builder::new(), "", "");
    let mut c = Client::connect_tls(tls_addr(&server), client_conn_tls12("a.test"));
    c.send(b"GET /big.bin HTTP/1.1\r\nHost: a.test\r\n\r\n");
    let r = c.response();
    assert_eq!(r.status, 200);
    assert!(r.body == pattern(BIG), "the large file, whole");
    let tls = c.tls.as_ref().expect("tls");
    assert_eq!(
        tls.protocol_version(),
        Some(rustls::ProtocolVersion::TLSv1_2)
    );
}

/// RFC 8446 §4.6.3 through the worker: a client's KeyUpdate asking for
/// ours, in each TLS 1.3 suite (SHA-256 and SHA-384 secrets); requests
/// before and after each are answered, under keys derived from the
/// traffic secrets rustls told brisk's key log.
#[test]
fn key_updates_both_ways_in_every_tls_1_3_suite() {
    let server = both(&mut Builder::new(), "", "");
    for suite in [
        rustls::CipherSuite::TLS13_AES_128_GCM_SHA256,
        rustls::CipherSuite::TLS13_AES_256_GCM_SHA384,
        rustls::CipherSuite::TLS13_CHACHA20_POLY1305_SHA256,
    ] {
        let mut provider = rustls::crypto::ring::default_provider();
        provider.cipher_suites.retain(|s| s.suite() == suite);
        let mut roots = rustls::RootCertStore::empty();
        use rustls::pki_types::{pem::PemObject, CertificateDer};
        let ca = CertificateDer::from_pem_file(common::tls::testdata("ca.pem")).expect("ca.pem");
        roots.add(ca).expect("the test CA");
        let config = rustls::ClientConfig::builder_with_provider(std::sync::Arc::new(provider))
            .with_protocol_versions(&[&rustls::version::TLS13])
            .expect("TLS 1.3")
            .with_root_certificates(roots)
            .with_no_client_auth();
        let conn = common::tls::client_conn_with(std::sync::Arc::new(config), "a.test");
        let mut c = Client::connect_tls(tls_addr(&server), conn);
        for i in 0..3 {
            c.send(b"GET /index.html HTTP/1.1\r\nHost: a.test\r\n\r\n");
            let r = c.response();
            assert_eq!(
                (r.status, &r.body[..]),
                (200, &b"<h1>hello</h1>\n"[..]),
                "{suite:?} {i}"
            );
            let tls = c.tls.as_mut().expect("tls");
            assert_eq!(
                tls.negotiated_cipher_suite().map(|s| s.suite()),
                Some(suite)
            );
            tls.refresh_traffic_keys().expect("key update");
        }
        c.send(b"GET /big.bin HTTP/1.1\r\nHost: a.test\r\n\r\n");
        let r = c.response();
        assert!(r.body == pattern(BIG), "{suite:?}: the large file, whole");
    }
}

#[test]
fn plain_http_on_the_tls_port_gets_a_readable_400_and_a_close() {
    let server = both(&mut Builder::new(), "", "");
    let mut c = Client::connect(tls_addr(&server));
    c.send(b"GET / HTTP/1.1\r\nHost: a.test\r\n\r\n");
    let r = c.response();
    assert_eq!(r.status, 400);
    assert_eq!(
        r.text(),
        "This port speaks HTTPS: the plain HTTP request was sent to a TLS port.\n"
    );
    assert_eq!(r.header("connection"), Some("close"));
    c.expect_closed();
}

#[test]
fn garbage_closes_the_connection_and_the_debug_lines_are_capped() {
    let mut b = Builder::new();
    b.arg("--log-level").arg("debug");
    let server = both(&mut b, "", "");
    // Application data before any handshake: a fatal alert, then the end.
    let mut c = Client::connect(tls_addr(&server));
    c.send(b"\x17\x03\x03\x00\x10abcdefghijklmnop");
    let alert = c.read_to_end();
    assert_eq!(alert, b"\x15\x03\x03\x00\x02\x02\x0a", "unexpected_message");
    server.wait_stderr_line("127.0.0.1: TLS error, connection closed");
    // A scan: many more than the worker explains in a second.
    let scan: Vec<TcpStream> = (0..100)
        .map(|_| {
            let mut s = TcpStream::connect(tls_addr(&server)).expect("connect");
            s.write_all(b"\x00\x00\x00\x00\x00\x00\x00\x00")
                .expect("garbage");
            s
        })
        .collect();
    let line = server.wait_stderr_line("more failed TLS connections were not explained");
    assert!(
        line.contains("(at most 10 a second per worker are)"),
        "{line}"
    );
    let explained = server
        .stderr()
        .matches("TLS error, connection closed")
        .count();
    assert!(
        explained < 101,
        "{explained} lines for 101 failures: the budget caps them"
    );
    drop(scan);
    // The server serves on.
    let mut c = server.connect_tls_to(tls_addr(&server));
    c.send(b"GET /index.html HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n");
    assert_eq!(c.response().status, 200);
}

#[test]
fn a_client_that_dribbles_its_hello_is_closed_at_the_handshake_deadline() {
    let server = both(
        &mut Builder::new(),
        "handshake_timeout = \"1s\"",
        "[timeouts]\nkeepalive = \"60s\"\nheader = \"60s\"\n",
    );
    // The first bytes of a ClientHello record, then nothing.
    let mut c = Client::connect(tls_addr(&server));
    c.send(b"\x16\x03\x01");
    c.wait_until_read();
    c.send(b"\x02");
    let (client, srv) = c.ends();
    wait_until_server_closed(client, srv);
    c.expect_closed();
}

#[test]
fn a_slow_handshake_is_timed_by_handshake_timeout_not_keepalive() {
    // A ClientHello in two parts, the second past `timeouts.keepalive`
    // (1 s) but well within `handshake_timeout` (10 s): the handshake
    // goes on and the request is answered. The connection, waiting in
    // HTTP/1.1's idle state meanwhile, used to be closed at keepalive.
    let server = both(
        &mut Builder::new(),
        "handshake_timeout = \"10s\"",
        "[timeouts]\nkeepalive = \"1s\"\n",
    );
    let mut conn = client_conn("a.test");
    let hello = hello_of(&mut conn);
    let mut s = TcpStream::connect(tls_addr(&server)).expect("connect");
    s.set_read_timeout(Some(IO_TIMEOUT)).expect("timeout");
    s.write_all(&hello[..50]).expect("the first part");
    // Past the keep-alive time and the sweep after it.
    std::thread::sleep(Duration::from_millis(2500));
    s.write_all(&hello[50..]).expect("the rest");
    while conn.is_handshaking() {
        conn.complete_io(&mut s).expect("the handshake goes on");
    }
    let mut tls = rustls::Stream::new(&mut conn, &mut s);
    tls.write_all(b"GET /index.html HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n")
        .expect("the request");
    let mut answer = Vec::new();
    let _ = tls.read_to_end(&mut answer);
    assert!(
        answer.starts_with(b"HTTP/1.1 200 "),
        "{}",
        String::from_utf8_lossy(&answer)
    );
}

/// The bytes of a real ClientHello for `a.test`.
fn client_hello() -> Vec<u8> {
    hello_of(&mut client_conn("a.test"))
}

/// The ClientHello `conn` sends first.
fn hello_of(conn: &mut rustls::ClientConnection) -> Vec<u8> {
    let mut hello = Vec::new();
    while conn.wants_write() {
        conn.write_tls(&mut hello).expect("hello");
    }
    hello
}

#[test]
fn a_client_with_no_common_alpn_protocol_hears_why() {
    // RFC 7301 §3.2: no_application_protocol, here after the
    // ServerHello (in TLS 1.3 the alert is encrypted: the client reads
    // it with the handshake keys).
    let server = both(&mut Builder::new(), "", "");
    let mut config = (*common::tls::client_config(&[&rustls::version::TLS13])).clone();
    config.alpn_protocols = vec![b"h9".to_vec()];
    let mut conn = common::tls::client_conn_with(std::sync::Arc::new(config), "a.test");
    let mut s = TcpStream::connect(tls_addr(&server)).expect("connect");
    s.set_read_timeout(Some(IO_TIMEOUT)).expect("timeout");
    let mut error = None;
    for _ in 0..10 {
        match conn.complete_io(&mut s) {
            Ok(_) if conn.is_handshaking() => {}
            Ok(_) => panic!("a handshake without a common protocol"),
            Err(e) => {
                error = Some(e);
                break;
            }
        }
    }
    let error = error.expect("the handshake fails");
    let why = error
        .get_ref()
        .and_then(|e| e.downcast_ref::<rustls::Error>());
    assert_eq!(
        why,
        Some(&rustls::Error::AlertReceived(
            rustls::AlertDescription::NoApplicationProtocol
        )),
        "{error:?}"
    );
}

#[test]
fn a_client_that_leaves_after_its_hello_is_closed_at_once() {
    let server = both(
        &mut Builder::new(),
        "handshake_timeout = \"60s\"",
        "[timeouts]\nkeepalive = \"60s\"\n",
    );
    let mut s = TcpStream::connect(tls_addr(&server)).expect("connect");
    s.set_read_timeout(Some(IO_TIMEOUT)).expect("timeout");
    s.write_all(&client_hello()).expect("hello");
    s.shutdown(Shutdown::Write).expect("half close");
    // The server's flight (ServerHello…) comes, then its close: long
    // before the 60 s deadline, because it saw the FIN.
    let mut got = Vec::new();
    let _ = s.read_to_end(&mut got);
    assert_eq!(got.first(), Some(&0x16), "a handshake record first");
    let (client, srv) = (s.local_addr().expect("local"), tls_addr(&server));
    wait_until_server_closed(client, srv);
}

#[test]
fn handshakes_beyond_the_cap_wait_in_the_queue_until_one_ends() {
    let server = both(&mut Builder::new(), "max_handshakes = 1", "");
    // One handshake in progress (a whole ClientHello, answered, the
    // client's Finished not sent: it has cost the server its CPU)...
    let mut first = Client::connect(tls_addr(&server));
    first.send(&client_hello());
    first
        .stream
        .set_read_timeout(Some(IO_TIMEOUT))
        .expect("timeout");
    let mut flight = [0u8; 1];
    first
        .stream
        .read_exact(&mut flight)
        .expect("the server's hello");
    // ...so a second client's hello waits, unanswered...
    let mut second = TcpStream::connect(tls_addr(&server)).expect("connect");
    second.write_all(&client_hello()).expect("hello");
    second
        .set_read_timeout(Some(Duration::from_millis(500)))
        .expect("timeout");
    let mut byte = [0u8; 1];
    let early = second.read(&mut byte);
    assert!(
        matches!(&early, Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut)),
        "no answer while the cap is reached: {early:?}"
    );
    // ...until the first ends: then it is accepted and answered.
    drop(first);
    second.set_read_timeout(Some(IO_TIMEOUT)).expect("timeout");
    let n = second.read(&mut byte).expect("the server's hello");
    assert_eq!((n, byte[0]), (1, 0x16));
}

#[test]
fn hellos_that_stall_unfinished_beyond_the_cap_do_not_keep_a_new_client_out() {
    // A deadline far beyond the test's patience: only a stalled
    // handshake giving its place lets the client in while they are open.
    let server = both(
        &mut Builder::new(),
        "max_handshakes = 4\nhandshake_timeout = \"60s\"",
        "",
    );
    let addr = tls_addr(&server);
    // Twice the cap of peers that send 11 bytes of a ClientHello and
    // nothing more (the rest wait in the kernel's queue).
    let hello = client_hello();
    let stalled: Vec<TcpStream> = (0..8)
        .map(|_| {
            let mut s = TcpStream::connect(addr).expect("connect");
            s.write_all(&hello[..11]).expect("part of a hello");
            s
        })
        .collect();
    // A real client is served, the stalled peers still connected.
    let mut c = server.connect_tls_to(addr);
    c.send(b"GET /index.html HTTP/1.1\r\nHost: a.test\r\n\r\n");
    assert_eq!(c.response().status, 200);
    drop(stalled);
}

#[test]
fn an_established_client_is_served_while_others_flood_the_port_with_handshakes() {
    let server = both(&mut Builder::new(), "max_handshakes = 4", "");
    let addr = tls_addr(&server);
    let mut established = server.connect_tls_to(addr);
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flooders: Vec<_> = (0..4)
        .map(|_| {
            let stop = std::sync::Arc::clone(&stop);
            std::thread::spawn(move || {
                let mut done = 0u32;
                // Bounded: 300 handshakes per thread at most.
                while !stop.load(std::sync::atomic::Ordering::Relaxed) && done < 300 {
                    let mut c = Client::connect_tls(addr, client_conn("a.test"));
                    drop(c.stream.shutdown(Shutdown::Both));
                    c.tls = None;
                    done += 1;
                }
                done
            })
        })
        .collect();
    for _ in 0..200 {
        established.send(b"GET /index.html HTTP/1.1\r\nHost: a.test\r\n\r\n");
        let r = established.response();
        assert_eq!(r.status, 200);
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let handshakes: u32 = flooders
        .into_iter()
        .map(|t| t.join().expect("flooder"))
        .sum();
    assert!(handshakes > 0, "the flood was served too");
}

/// A CGI script printing what it knows of TLS.
const TLS_ENV_SCRIPT: &str = "#!/bin/sh\nprintf 'Content-Type: text/plain\\r\\n\\r\\n'\n\
printf 'HTTPS=%s SSL_PROTOCOL=%s SSL_CIPHER=%s SERVER_PORT=%s REQUEST_SCHEME=%s' \
\"$HTTPS\" \"$SSL_PROTOCOL\" \"$SSL_CIPHER\" \"$SERVER_PORT\" \"$REQUEST_SCHEME\"\n";

#[test]
fn cgi_scripts_see_https_and_the_session_over_tls() {
    use std::os::unix::fs::PermissionsExt;
    let mut b = Builder::new();
    let script = b.base().join("cgi-bin/tls.sh");
    write_file(&script, TLS_ENV_SCRIPT.as_bytes());
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let server = both(
        &mut b,
        "",
        "[[cgi]]\nurl = \"/cgi-bin/\"\ndir = \"cgi-bin\"\n",
    );
    let get = b"GET /cgi-bin/tls.sh HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n";
    let mut plain = server.connect();
    plain.send(get);
    assert_eq!(
        plain.response().text(),
        format!(
            "HTTPS= SSL_PROTOCOL= SSL_CIPHER= SERVER_PORT={} REQUEST_SCHEME=http",
            server.addrs[0].port()
        )
    );
    let port = tls_addr(&server).port();
    let mut tls13 = server.connect_tls_to(tls_addr(&server));
    tls13.send(get);
    assert_eq!(
        tls13.response().text(),
        format!("HTTPS=on SSL_PROTOCOL=TLSv1.3 SSL_CIPHER=TLS_AES_128_GCM_SHA256 SERVER_PORT={port} REQUEST_SCHEME=https")
    );
    let mut tls12 = Client::connect_tls(tls_addr(&server), client_conn_tls12("a.test"));
    tls12.send(get);
    assert_eq!(
        tls12.response().text(),
        format!("HTTPS=on SSL_PROTOCOL=TLSv1.2 SSL_CIPHER=ECDHE-ECDSA-AES128-GCM-SHA256 SERVER_PORT={port} REQUEST_SCHEME=https")
    );
}

#[test]
fn the_access_log_names_the_tls_version_and_cipher_when_asked() {
    let mut b = Builder::new();
    b.access_log();
    let server = both(
        &mut b,
        "",
        "[log]\nfields = [\"tls_version\", \"tls_cipher\"]\n",
    );
    let get =
        b"GET /index.html HTTP/1.1\r\nHost: a.test\r\nUser-Agent: t\r\nConnection: close\r\n\r\n";
    let mut tls = server.connect_tls_to(tls_addr(&server));
    tls.send(get);
    assert_eq!(tls.response().status, 200);
    let line = server.wait_access_line(|l| !l.is_empty());
    let line = String::from_utf8(line).expect("text");
    assert!(
        line.ends_with("\"GET /index.html HTTP/1.1\" 200 15 \"-\" \"t\" \"TLSv1.3\" \"TLS_AES_128_GCM_SHA256\""),
        "{line}"
    );
    let mut plain = server.connect();
    plain.send(get);
    assert_eq!(plain.response().status, 200);
    let line = server.wait_access_line(|l| l.ends_with(b"\"t\" \"-\" \"-\""));
    assert!(line.starts_with(b"127.0.0.1 - - ["));
}

#[test]
fn basic_auth_over_https() {
    let mut b = Builder::new();
    b.file("private/secret.txt", b"the secret");
    write_file(
        &b.base().join("htpasswd"),
        include_bytes!("../../hash/testdata/vectors.htpasswd"),
    );
    let server = both(
        &mut b,
        "",
        "[[auth]]\npath = \"/private/\"\nrealm = \"R\"\nhtpasswd = \"htpasswd\"\n",
    );
    let mut c = server.connect_tls_to(tls_addr(&server));
    c.send(b"GET /private/secret.txt HTTP/1.1\r\nHost: a.test\r\n\r\n");
    assert_eq!(c.response().status, 401);
    // bcrypt: hashed off the event loop, the answer resumes on this
    // TLS connection; then apr1, on the same connection.
    for user in ["bcrypt4", "apr1"] {
        let auth = basic_auth(user, "correct horse");
        c.send(
            format!(
                "GET /private/secret.txt HTTP/1.1\r\nHost: a.test\r\nAuthorization: {auth}\r\n\r\n"
            )
            .as_bytes(),
        );
        let r = c.response();
        assert_eq!(
            (r.status, r.body.as_slice()),
            (200, &b"the secret"[..]),
            "{user}"
        );
    }
}

#[test]
fn a_throttled_file_over_https_keeps_its_rate() {
    let body = pattern(400_000);
    let mut b = Builder::new();
    b.file("v.mp4", &body);
    let server = both(
        &mut b,
        "",
        "[[throttle]]\npattern = \"*.mp4\"\nrate = \"256KiB/s\"\n",
    );
    let rate = 256.0 * 1024.0;
    let t0 = std::time::Instant::now();
    let mut c = server.connect_tls_to(tls_addr(&server));
    c.send(b"GET /v.mp4 HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n");
    let r = c.response();
    let took = t0.elapsed();
    assert!(r.body == body, "the throttled content, intact");
    // 100 ms of burst at the rate (access::throttle), then the rate: a
    // lower bound the server must keep however fast the machine.
    let least = (body.len() as f64 - rate / 10.0) / rate;
    assert!(
        took.as_secs_f64() >= least,
        "400 kB at 256 KiB/s in {took:?}"
    );
}

/// Reads what the server sends on `s` until it closes: the bytes, and
/// whether the end was a reset rather than a FIN.
fn read_until_closed(s: &mut TcpStream) -> (Vec<u8>, bool) {
    s.set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return (got, false),
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return (got, true),
            Err(e) => panic!("reading the server's last bytes: {e}"),
        }
    }
}

/// A fatal alert is not lost to a reset when the client has sent more
/// than the server read: the server shuts its write side after the
/// alert and reads what still comes until the client closes (a
/// lingering close, as nginx's), before the handshake and after it.
#[test]
fn a_fatal_alert_reaches_a_client_that_sent_more_than_was_read() {
    let server = both(&mut Builder::new(), "", "");
    let junk = vec![0x17u8; 96 * 1024];
    // Before the handshake: the plaintext alert, byte for byte.
    let mut s = TcpStream::connect(tls_addr(&server)).expect("connect");
    let mut first = b"\x17\x03\x03\x00\x10abcdefghijklmnop".to_vec();
    first.extend_from_slice(&junk);
    let _ = s.write_all(&first);
    let (got, reset) = read_until_closed(&mut s);
    assert_eq!(got, b"\x15\x03\x03\x00\x02\x02\x0a", "unexpected_message");
    assert!(!reset, "the connection ends with a FIN, not a reset");
    // After it: a record with a bad MAC, then more; the client reads the
    // encrypted bad_record_mac.
    let mut s = TcpStream::connect(tls_addr(&server)).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    let mut conn = client_conn("a.test");
    while conn.is_handshaking() {
        conn.complete_io(&mut s).expect("handshake");
    }
    conn.writer()
        .write_all(b"GET / HTTP/1.1\r\nHost: a.test\r\n\r\n")
        .expect("request");
    let mut wire = Vec::new();
    conn.write_tls(&mut wire).expect("records");
    let last = wire.len() - 1;
    wire[last] ^= 1;
    wire.extend_from_slice(&junk);
    let _ = s.write_all(&wire);
    let (got, reset) = read_until_closed(&mut s);
    assert!(!reset, "the connection ends with a FIN, not a reset");
    let mut rd = &got[..];
    while !rd.is_empty() {
        conn.read_tls(&mut rd).expect("client reads");
    }
    assert_eq!(
        conn.process_new_packets().err(),
        Some(rustls::Error::AlertReceived(
            rustls::AlertDescription::BadRecordMac
        ))
    );
}
