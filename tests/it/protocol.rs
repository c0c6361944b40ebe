//! HTTP/1.1 framing on the wire: parse errors, keep-alive, pipelining,
//! request bodies, limits.

use crate::common;

use common::*;

fn site() -> Server {
    let mut b = Builder::new();
    b.file("a.txt", b"AAAA");
    b.file("b.html", b"<b>bb</b>");
    b.file("c.css", b"c{}");
    b.start()
}

fn txt(r: &Response, body: &[u8], conn: Conn) {
    assert_file(r, body, "text/plain; charset=utf-8", "", conn);
}

/// Sends `raw` on a fresh connection and expects `code reason` with
/// `Connection: close`, then the close.
fn expect_rejected(s: &Server, raw: &[u8], code: u16, reason: &str) {
    let mut c = s.connect();
    c.send(raw);
    let r = c.response();
    assert_error(&r, code, reason, "", Conn::Close);
    c.expect_closed();
}

#[test]
fn missing_host_on_http11_is_400() {
    let s = site();
    expect_rejected(&s, b"GET /a.txt HTTP/1.1\r\n\r\n", 400, "Bad Request");
    // HTTP/1.0 needs no Host.
    let r = s.request(b"GET /a.txt HTTP/1.0\r\n\r\n");
    txt(&r, b"AAAA", Conn::Close);
}

#[test]
fn http2_version_is_505() {
    let s = site();
    expect_rejected(
        &s,
        b"GET /a.txt HTTP/2.0\r\nHost: x\r\n\r\n",
        505,
        "HTTP Version Not Supported",
    );
}

#[test]
fn malformed_requests_are_400_and_close() {
    let s = site();
    let cases: &[&[u8]] = &[
        b"HELLO\r\n\r\n",
        b"GET /a.txt\r\nHost: x\r\n\r\n",
        b"GET  /a.txt HTTP/1.1\r\nHost: x\r\n\r\n",
        b"GET /a.txt HTTP/1.1\r\nHost: x\r\nBad Header: y\r\n\r\n",
        b"GET /a.txt HTTP/1.1\r\nHost: x\r\nX-A: 1\r\n  folded\r\n\r\n",
        b"GET /a.txt HTTP/1.1\r\nHost: x\r\nNo-Colon\r\n\r\n",
        b"GET /a.txt HTTP/1.1\r\nHost: x\r\nX: a\rb\r\n\r\n",
        b"GET /a\x01.txt HTTP/1.1\r\nHost: x\r\n\r\n",
        b"GET /a.txt http/1.1\r\nHost: x\r\n\r\n",
        b"POST /a.txt HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello",
        b"POST /a.txt HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n",
        b"POST /a.txt HTTP/1.1\r\nHost: x\r\nContent-Length: 1x\r\n\r\nhello",
    ];
    for raw in cases {
        let mut c = s.connect();
        c.send(raw);
        let r = c.response();
        assert_eq!(r.status, 400, "request {:?}", String::from_utf8_lossy(raw));
        assert_error(&r, 400, "Bad Request", "", Conn::Close);
        c.expect_closed();
    }
}

#[test]
fn leading_empty_lines_are_ignored() {
    let s = site();
    let r = s.request(b"\r\n\r\nGET /a.txt HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    txt(&r, b"AAAA", Conn::Close);
}

#[test]
fn long_request_line_is_414() {
    let s = site();
    let target = format!("/{}", "a".repeat(9000));
    expect_rejected(
        &s,
        format!("GET {target} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes(),
        414,
        "URI Too Long",
    );
    // The limit is configurable.
    let mut b = Builder::new();
    b.file("a.txt", b"AAAA");
    b.config("[limits]\nmax_request_line = 64\n");
    let s = b.start();
    let long = format!("GET /{} HTTP/1.1\r\nHost: x\r\n\r\n", "b".repeat(80));
    expect_rejected(&s, long.as_bytes(), 414, "URI Too Long");
    let r = s.request(b"GET /a.txt HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    txt(&r, b"AAAA", Conn::Close);
}

#[test]
fn large_header_block_is_431() {
    let s = site();
    let big = format!(
        "GET /a.txt HTTP/1.1\r\nHost: x\r\nX-Big: {}\r\n\r\n",
        "v".repeat(20_000)
    );
    expect_rejected(&s, big.as_bytes(), 431, "Request Header Fields Too Large");
    let mut many = String::from("GET /a.txt HTTP/1.1\r\nHost: x\r\n");
    for i in 0..150 {
        many.push_str(&format!("X-H{i}: {i}\r\n"));
    }
    many.push_str("\r\n");
    expect_rejected(&s, many.as_bytes(), 431, "Request Header Fields Too Large");
    // Below the limits: served.
    let ok = format!(
        "GET /a.txt HTTP/1.1\r\nHost: x\r\nX-Big: {}\r\nConnection: close\r\n\r\n",
        "v".repeat(8_000)
    );
    txt(&s.request(ok.as_bytes()), b"AAAA", Conn::Close);
}

#[test]
fn unknown_transfer_coding_is_501() {
    let s = site();
    expect_rejected(
        &s,
        b"POST /a.txt HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: foo, chunked\r\n\r\n0\r\n\r\n",
        501,
        "Not Implemented",
    );
}

/// A POST, PUT or PATCH with neither Content-Length nor
/// Transfer-Encoding has no body (RFC 9112 §6.3 ¶7), as over HTTP/2: its
/// program runs with no CONTENT_LENGTH, and what follows it on the
/// connection is the next request. (It was answered 411, which `curl -X
/// POST` and body-less webhooks met where nginx and Caddy answer.)
#[test]
fn a_post_with_neither_length_nor_coding_has_no_body() {
    use std::os::unix::fs::PermissionsExt;
    let mut b = Builder::new();
    b.file("a.txt", b"AAAA");
    let echo = b.base().join("cgi-bin/echo.sh");
    write_file(
        &echo,
        b"#!/bin/sh\necho 'Content-Type: text/plain'\necho\necho \"$REQUEST_METHOD [${CONTENT_LENGTH-unset}]\"\ncat\n",
    );
    std::fs::set_permissions(&echo, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    b.config("[[cgi]]\nurl = \"/cgi-bin/\"\ndir = \"cgi-bin\"\n");
    let s = b.start();
    let mut c = s.connect();
    c.send(
        b"POST /cgi-bin/echo.sh HTTP/1.1\r\nHost: x\r\n\r\n\
          PATCH /cgi-bin/echo.sh HTTP/1.1\r\nHost: x\r\n\r\n\
          PUT /a.txt HTTP/1.1\r\nHost: x\r\n\r\n\
          GET /a.txt HTTP/1.1\r\nHost: x\r\n\r\n",
    );
    for method in ["POST", "PATCH"] {
        let r = c.response();
        assert_eq!(r.status, 200, "{}", r.head);
        assert_eq!(r.text(), format!("{method} [unset]\n"));
    }
    assert_eq!(c.response().status, 405);
    txt(&c.response(), b"AAAA", Conn::None);
}

#[test]
fn body_over_max_body_is_413() {
    let mut b = Builder::new();
    b.file("a.txt", b"AAAA");
    b.config("[limits]\nmax_body = 100\n");
    let s = b.start();
    let body = "z".repeat(101);
    expect_rejected(
        &s,
        format!("POST /a.txt HTTP/1.1\r\nHost: x\r\nContent-Length: 101\r\n\r\n{body}").as_bytes(),
        413,
        "Content Too Large",
    );
    // Exactly at the limit: accepted (405 on a static file) and kept alive.
    let mut c = s.connect();
    let body = "z".repeat(100);
    c.send(
        format!("POST /a.txt HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{body}").as_bytes(),
    );
    assert_error(
        &c.response(),
        405,
        "Method Not Allowed",
        "Allow: GET, HEAD, OPTIONS\r\n",
        Conn::None,
    );
}

#[test]
fn unsupported_expectation_is_417() {
    let s = site();
    expect_rejected(
        &s,
        b"GET /a.txt HTTP/1.1\r\nHost: x\r\nExpect: the-unexpected\r\n\r\n",
        417,
        "Expectation Failed",
    );
}

#[test]
fn content_length_with_transfer_encoding_never_smuggles() {
    let s = site();
    let mut c = s.connect();
    // Either framing could hide "GET /b.html" as a second request; RFC 9112
    // §6.1 says to close the connection after answering such a request.
    c.send(
        b"POST /a.txt HTTP/1.1\r\nHost: x\r\nContent-Length: 30\r\nTransfer-Encoding: chunked\r\n\r\n\
          0\r\n\r\nGET /b.html HTTP/1.1\r\nHost: x\r\n\r\n",
    );
    let r = c.response();
    assert!(
        r.status == 400 || r.status == 405,
        "unexpected status {}",
        r.status
    );
    assert_eq!(r.header("connection"), Some("close"), "{:?}", r.head);
    c.expect_closed();
}

#[test]
fn keep_alive_is_the_http11_default() {
    let s = site();
    let mut c = s.connect();
    for _ in 0..3 {
        c.send(b"GET /a.txt HTTP/1.1\r\nHost: x\r\n\r\n");
        txt(&c.response(), b"AAAA", Conn::None);
    }
    c.send(b"GET /a.txt HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    txt(&c.response(), b"AAAA", Conn::Close);
    c.expect_closed();
}

#[test]
fn connection_close_is_case_insensitive_and_a_list() {
    let s = site();
    let mut c = s.connect();
    c.send(b"GET /a.txt HTTP/1.1\r\nHost: x\r\nConnection: Keep-Alive, CLOSE\r\n\r\n");
    txt(&c.response(), b"AAAA", Conn::Close);
    c.expect_closed();
}

#[test]
fn http10_closes_unless_keep_alive_is_asked() {
    let s = site();
    let mut c = s.connect();
    c.send(b"GET /a.txt HTTP/1.0\r\n\r\n");
    txt(&c.response(), b"AAAA", Conn::Close);
    c.expect_closed();

    let mut c = s.connect();
    c.send(b"GET /a.txt HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
    txt(&c.response(), b"AAAA", Conn::KeepAlive);
    c.send(b"HEAD /a.txt HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
    let h = c.head_response();
    assert_eq!(
        h.masked_head(),
        head(
            "200 OK",
            &format!(
                "{}Content-Length: 4\r\nConnection: keep-alive\r\n",
                file_headers(4, "text/plain; charset=utf-8")
            )
        )
    );
    c.send(b"GET /a.txt HTTP/1.0\r\n\r\n");
    txt(&c.response(), b"AAAA", Conn::Close);
    c.expect_closed();
}

#[test]
fn keepalive_requests_limit_closes_on_the_nth() {
    let mut b = Builder::new();
    b.file("a.txt", b"AAAA");
    b.config("[limits]\nkeepalive_requests = 3\n");
    let s = b.start();
    let mut c = s.connect();
    c.send(b"GET /a.txt HTTP/1.1\r\nHost: x\r\n\r\n");
    txt(&c.response(), b"AAAA", Conn::None);
    c.send(b"GET /a.txt HTTP/1.1\r\nHost: x\r\n\r\n");
    txt(&c.response(), b"AAAA", Conn::None);
    c.send(b"GET /a.txt HTTP/1.1\r\nHost: x\r\n\r\n");
    txt(&c.response(), b"AAAA", Conn::Close);
    c.expect_closed();
    // Pipelined past the limit: the rest is not answered.
    let mut c = s.connect();
    c.send(
        b"GET /a.txt HTTP/1.1\r\nHost: x\r\n\r\nGET /a.txt HTTP/1.1\r\nHost: x\r\n\r\n\
          GET /a.txt HTTP/1.1\r\nHost: x\r\n\r\nGET /a.txt HTTP/1.1\r\nHost: x\r\n\r\n",
    );
    txt(&c.response(), b"AAAA", Conn::None);
    txt(&c.response(), b"AAAA", Conn::None);
    txt(&c.response(), b"AAAA", Conn::Close);
    c.expect_closed();
}

#[test]
fn pipelined_requests_are_answered_in_order() {
    let s = site();
    let raw = b"GET /a.txt HTTP/1.1\r\nHost: x\r\n\r\n\
HEAD /b.html HTTP/1.1\r\nHost: x\r\n\r\n\
GET /missing HTTP/1.1\r\nHost: x\r\n\r\n\
POST /a.txt HTTP/1.1\r\nHost: x\r\nContent-Length: 11\r\n\r\nGET /b.html\
GET /c.css HTTP/1.1\r\nHost: x\r\n\r\n\
OPTIONS /a.txt HTTP/1.1\r\nHost: x\r\n\r\n\
GET /b.html HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    let (mut c, rs) = exchange(&s, raw, &[false, true, false, false, false, false, false]);
    txt(&rs[0], b"AAAA", Conn::None);
    assert_eq!(
        rs[1].masked_head(),
        head(
            "200 OK",
            &format!(
                "{}Content-Length: 9\r\n",
                file_headers(9, "text/html; charset=utf-8")
            )
        )
    );
    assert_error(&rs[2], 404, "Not Found", "", Conn::None);
    assert_error(
        &rs[3],
        405,
        "Method Not Allowed",
        "Allow: GET, HEAD, OPTIONS\r\n",
        Conn::None,
    );
    assert_file(&rs[4], b"c{}", "text/css; charset=utf-8", "", Conn::None);
    assert_eq!(rs[5].status, 200);
    assert_eq!(rs[5].header("allow"), Some("GET, HEAD, OPTIONS"));
    assert_file(
        &rs[6],
        b"<b>bb</b>",
        "text/html; charset=utf-8",
        "",
        Conn::Close,
    );
    c.expect_closed();
}

#[test]
fn pipelined_chunked_body_then_request() {
    let s = site();
    let raw = b"PUT /a.txt HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n\
5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nX-Trailer: t\r\n\r\n\
GET /a.txt HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    let (mut c, rs) = exchange(&s, raw, &[false, false]);
    assert_error(
        &rs[0],
        405,
        "Method Not Allowed",
        "Allow: GET, HEAD, OPTIONS\r\n",
        Conn::None,
    );
    txt(&rs[1], b"AAAA", Conn::Close);
    c.expect_closed();
}

#[test]
fn many_pipelined_requests_in_one_write() {
    let s = site();
    let mut raw = Vec::new();
    let n = 200;
    for i in 0..n {
        let close = if i == n - 1 {
            "Connection: close\r\n"
        } else {
            ""
        };
        raw.extend_from_slice(format!("GET /a.txt HTTP/1.1\r\nHost: x\r\n{close}\r\n").as_bytes());
    }
    let mut c = s.connect();
    c.send(&raw);
    for i in 0..n {
        let conn = if i == n - 1 { Conn::Close } else { Conn::None };
        txt(&c.response(), b"AAAA", conn);
    }
    c.expect_closed();
}

#[test]
fn request_split_across_writes() {
    let s = site();
    let mut c = s.connect();
    let raw = b"GET /a.txt HTTP/1.1\r\nHost: x\r\nUser-Agent: slow\r\nConnection: close\r\n\r\n";
    for piece in raw.chunks(7) {
        c.send(piece);
        // Each piece is a read of its own.
        c.wait_until_read();
    }
    txt(&c.response(), b"AAAA", Conn::Close);
    c.expect_closed();
    // A body that arrives in pieces, then the next request.
    let mut c = s.connect();
    c.send(b"POST /a.txt HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nhel");
    let r = c.response();
    assert_eq!(r.status, 405);
    c.send(b"lo wor");
    c.wait_until_read();
    c.send(b"lGET /a.txt HTTP/1.1\r\nHost: x\r\n\r\n");
    txt(&c.response(), b"AAAA", Conn::None);
}

#[test]
fn a_bad_request_does_not_disturb_other_connections() {
    let s = site();
    let mut good = s.connect();
    good.send(b"GET /a.txt HTTP/1.1\r\nHost: x\r\n\r\n");
    txt(&good.response(), b"AAAA", Conn::None);
    let mut bad = s.connect();
    bad.send(b"\x00\x01\x02garbage\r\n\r\n");
    assert_eq!(bad.response().status, 400);
    bad.expect_closed();
    good.send(b"GET /a.txt HTTP/1.1\r\nHost: x\r\n\r\n");
    txt(&good.response(), b"AAAA", Conn::None);
}

#[test]
fn many_concurrent_connections() {
    let mut b = Builder::new();
    b.file("a.txt", b"AAAA");
    b.workers(2);
    let s = b.start();
    let mut clients: Vec<Client> = (0..64).map(|_| s.connect()).collect();
    for c in clients.iter_mut() {
        c.send(b"GET /a.txt HTTP/1.1\r\nHost: x\r\n\r\n");
    }
    for c in clients.iter_mut() {
        txt(&c.response(), b"AAAA", Conn::None);
    }
    for c in clients.iter_mut() {
        c.send(b"GET /a.txt HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
        txt(&c.response(), b"AAAA", Conn::Close);
        c.expect_closed();
    }
}

#[test]
fn ipv6_loopback_listener() {
    if std::net::TcpListener::bind("[::1]:0").is_err() {
        skip("no IPv6 loopback here");
        return;
    }
    let mut b = Builder::new();
    b.file("a.txt", b"AAAA");
    b.arg("--listen");
    b.arg("[::1]:0");
    let s = b.start();
    assert_eq!(s.addrs.len(), 2, "{:?}", s.addrs);
    assert!(s.addrs[1].is_ipv6(), "{:?}", s.addrs);
    let mut c = Client::connect(s.addrs[1]);
    c.send(b"GET /a.txt HTTP/1.1\r\nHost: [::1]\r\nConnection: close\r\n\r\n");
    txt(&c.response(), b"AAAA", Conn::Close);
    c.expect_closed();
    // The IPv4 listener serves as well.
    txt(&s.get("/a.txt"), b"AAAA", Conn::Close);
}

#[test]
fn duplicate_or_invalid_host_is_400() {
    let s = site();
    expect_rejected(
        &s,
        b"GET /a.txt HTTP/1.1\r\nHost: x\r\nHost: y\r\n\r\n",
        400,
        "Bad Request",
    );
    expect_rejected(
        &s,
        b"GET /a.txt HTTP/1.1\r\nHost: a b\r\n\r\n",
        400,
        "Bad Request",
    );
}

#[test]
fn options_asterisk() {
    let s = site();
    let r = s.request(b"OPTIONS * HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    assert_eq!(
        r.masked_head(),
        head(
            "200 OK",
            "Allow: GET, HEAD, OPTIONS\r\nContent-Length: 0\r\nConnection: close\r\n"
        )
    );
}

#[test]
fn http10_keep_alive_error_response() {
    let s = site();
    let mut c = s.connect();
    c.send(b"GET /missing HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
    assert_error(&c.response(), 404, "Not Found", "", Conn::KeepAlive);
    c.send(b"GET /a.txt HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
    txt(&c.response(), b"AAAA", Conn::KeepAlive);
}

#[test]
fn bodies_on_get_and_empty_bodies_are_framed() {
    let s = site();
    let raw = b"GET /a.txt HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n\
GET /a.txt HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n\r\nGET \
POST /a.txt HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n\
GET /c.css HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    let (mut c, rs) = exchange(&s, raw, &[false, false, false, false]);
    txt(&rs[0], b"AAAA", Conn::None);
    txt(&rs[1], b"AAAA", Conn::None);
    assert_error(
        &rs[2],
        405,
        "Method Not Allowed",
        "Allow: GET, HEAD, OPTIONS\r\n",
        Conn::None,
    );
    assert_file(&rs[3], b"c{}", "text/css; charset=utf-8", "", Conn::Close);
    c.expect_closed();
}

#[test]
fn expect_continue_with_an_unwanted_body() {
    let s = site();
    let mut c = s.connect();
    c.send(b"POST /a.txt HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n");
    let mut r = c.response();
    if r.status == 100 {
        c.send(b"hello");
        r = c.response();
    }
    assert_eq!(r.status, 405);
    if r.header("connection") == Some("close") {
        c.expect_closed();
    } else {
        // Kept open: the server must then read the body as such.
        c.send(b"helloGET /a.txt HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
        txt(&c.response(), b"AAAA", Conn::Close);
    }
}

#[test]
fn pipeline_larger_than_the_read_buffer() {
    let mut b = Builder::new();
    b.file("a.txt", b"AAAA");
    b.config("[limits]\nkeepalive_requests = 100000\n");
    let s = b.start();
    let mut raw = Vec::new();
    let n = 3000;
    for i in 0..n {
        // Varying lengths so that requests straddle buffer boundaries.
        let pad = "p".repeat(i % 37);
        let close = if i == n - 1 {
            "Connection: close\r\n"
        } else {
            ""
        };
        raw.extend_from_slice(
            format!("GET /a.txt HTTP/1.1\r\nHost: x\r\nX-Pad: {pad}\r\n{close}\r\n").as_bytes(),
        );
    }
    assert!(raw.len() > 128 * 1024);
    // Write from another thread so that a server that answers while we
    // are still writing cannot deadlock the test.
    let mut c = s.connect();
    let mut w = c.stream.try_clone().expect("clone");
    let writer = std::thread::spawn(move || {
        use std::io::Write;
        w.write_all(&raw).expect("write pipeline");
    });
    for i in 0..n {
        let conn = if i == n - 1 { Conn::Close } else { Conn::None };
        txt(&c.response(), b"AAAA", conn);
    }
    c.expect_closed();
    writer.join().expect("writer");
}

#[test]
fn pipelined_output_larger_than_the_socket_buffers() {
    let body = pattern(10 * 1024);
    let mut b = Builder::new();
    b.file("m.bin", &body);
    let s = b.start();
    let n = 150;
    let mut raw = Vec::new();
    for i in 0..n {
        let close = if i == n - 1 {
            "Connection: close\r\n"
        } else {
            ""
        };
        raw.extend_from_slice(format!("GET /m.bin HTTP/1.1\r\nHost: x\r\n{close}\r\n").as_bytes());
    }
    let mut c = s.connect();
    c.send(&raw);
    // Read only once the output has backed up in the server: the
    // client's buffer full, answers waiting.
    let (client, server) = c.ends();
    wait_until("the answers to back up in the server", || {
        let client_full = tcp_socket(client, server).is_some_and(|t| t.rx_queue > 0);
        client_full && tcp_socket(server, client).is_some_and(|t| t.tx_queue > 0)
    });
    for i in 0..n {
        let conn = if i == n - 1 { Conn::Close } else { Conn::None };
        assert_file(&c.response(), &body, "application/octet-stream", "", conn);
    }
    c.expect_closed();
}

#[test]
fn max_headers_is_configurable() {
    let mut b = Builder::new();
    b.file("a.txt", b"AAAA");
    b.config("[limits]\nmax_headers = 5\nmax_header_bytes = 300\n");
    let s = b.start();
    expect_rejected(
        &s,
        b"GET /a.txt HTTP/1.1\r\nHost: x\r\nA: 1\r\nB: 2\r\nC: 3\r\nD: 4\r\nE: 5\r\n\r\n",
        431,
        "Request Header Fields Too Large",
    );
    let big = format!(
        "GET /a.txt HTTP/1.1\r\nHost: x\r\nX: {}\r\n\r\n",
        "v".repeat(300)
    );
    expect_rejected(&s, big.as_bytes(), 431, "Request Header Fields Too Large");
    let ok = b"GET /a.txt HTTP/1.1\r\nHost: x\r\nA: 1\r\nB: 2\r\nC: 3\r\nConnection: close\r\n\r\n";
    txt(&s.request(ok), b"AAAA", Conn::Close);
}

#[test]
fn max_connections_refuses_the_excess_and_recovers() {
    let big = pattern(8 << 20);
    let mut b = Builder::new();
    b.file("a.txt", b"AAAA").file("big.bin", &big);
    b.config("[limits]\nmax_connections = 2\n");
    let s = b.start();
    let get = b"GET /a.txt HTTP/1.1\r\nHost: x\r\n\r\n";
    let mut c1 = s.connect();
    let mut c2 = s.connect();
    for c in [&mut c1, &mut c2] {
        c.send(get);
        txt(&c.response(), b"AAAA", Conn::None);
    }
    // Both idle: the one idle longest gives its place to a third (as
    // nginx closes reusable connections), which is served; the other
    // is untouched.
    let mut c3 = s.connect();
    c3.send(get);
    txt(&c3.response(), b"AAAA", Conn::None);
    c1.expect_closed();
    s.wait_stderr_line(
        "limits.max_connections reached: 1 idle keep-alive connections closed to make room",
    );
    c2.send(get);
    txt(&c2.response(), b"AAAA", Conn::None);
    // With an answer under way on each (a large file the client has
    // begun to read), none gives way: the next is closed at once (or
    // told 503), never served.
    for c in [&mut c2, &mut c3] {
        c.send(b"GET /big.bin HTTP/1.1\r\nHost: x\r\n\r\n");
        c.read_at_least(1);
    }
    let mut c4 = s.connect();
    let _ = std::io::Write::write_all(&mut c4.stream, get);
    let raw = c4.read_to_end();
    let text = String::from_utf8_lossy(&raw);
    assert!(
        raw.is_empty() || text.starts_with("HTTP/1.1 503 Service Unavailable\r\n"),
        "{text:?}"
    );
    // The warning names the setting.
    s.wait_stderr_line("refused connection from 127.0.0.1: limits.max_connections reached");
    // The open ones are unaffected.
    for c in [&mut c2, &mut c3] {
        assert!(c.response().body == big, "the large file, whole");
    }
    c3.send(get);
    txt(&c3.response(), b"AAAA", Conn::None);
    // Once one closes, a new connection is served.
    c2.send(b"GET /a.txt HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    txt(&c2.response(), b"AAAA", Conn::Close);
    c2.expect_closed();
    drop(c2);
    // Retried while the server takes in the close.
    wait_until("a connection to be served after one closed", || {
        let mut c = s.connect();
        let _ = std::io::Write::write_all(
            &mut c.stream,
            b"GET /a.txt HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        );
        c.read_to_end().starts_with(b"HTTP/1.1 200 OK\r\n")
    });
}

#[test]
fn oversized_chunked_body_gets_one_answer() {
    let mut b = Builder::new();
    b.file("a.txt", b"AAAA");
    b.config("[limits]\nmax_body = 100\n");
    let s = b.start();
    // A chunked body that grows over the limit: one answer (413, or the
    // 405 the static file gives before the body was read), then the close;
    // never a second, unsolicited response.
    let mut c = s.connect();
    c.send(b"POST /a.txt HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n");
    let chunk = format!("40\r\n{}\r\n", "y".repeat(64));
    c.send(chunk.as_bytes());
    c.send(chunk.as_bytes());
    c.send(b"0\r\n\r\nGET /a.txt HTTP/1.1\r\nHost: x\r\n\r\n");
    let r = c.response();
    match r.status {
        413 => assert_error(&r, 413, "Content Too Large", "", Conn::Close),
        405 => assert_eq!(r.header("allow"), Some("GET, HEAD, OPTIONS")),
        other => panic!("unexpected status {other}"),
    }
    let rest = c.read_to_end();
    assert!(
        rest.is_empty(),
        "more after the answer to an oversized chunked body: {:?}",
        String::from_utf8_lossy(&rest)
    );
}

/// A request body held for its handler (a WebDAV PUT) that stops coming
/// is answered 408 after `timeouts.body`, and the connection closes, as
/// over HTTP/2 and as a streamed body is; the connection used to close
/// without a word, in either log.
#[cfg(feature = "webdav")]
#[test]
fn a_stalled_request_body_is_answered_408() {
    let mut b = Builder::new();
    let dav = b.base().join("dav");
    std::fs::create_dir(&dav).unwrap();
    b.config(&format!(
        "[timeouts]\nbody = \"1s\"\n\n[[webdav]]\npath = \"/dav/\"\nroot = \"{}\"\n",
        dav.display()
    ));
    let s = b.start();
    let mut c = s.connect();
    c.send(b"PUT /dav/x.txt HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nabc");
    let r = c.response();
    assert_error(&r, 408, "Request Timeout", "", Conn::Close);
    c.expect_closed();
    assert!(!dav.join("x.txt").exists());
    s.wait_stderr_line("request body refused: no progress for timeouts.body (408)");
}

/// A flood of requests that cannot be read is not a flood of error-log
/// lines: at most 20 a second per worker say what a client did wrong,
/// then one line counts those left out (each answer is still in the
/// access log).
#[test]
fn a_flood_of_bad_requests_is_not_a_flood_of_error_lines() {
    let mut b = Builder::new();
    b.file("a.txt", b"AAAA");
    b.workers(1);
    let s = b.start();
    for _ in 0..300 {
        let mut c = s.connect();
        c.send(b"G@T / HTTP/1.1\r\nHost: x\r\n\r\n");
        assert_eq!(c.response().status, 400);
    }
    // Nor is one of what is neither HTTP/1.x nor HTTP/2 (closed unanswered;
    // without HTTP/2, such a request line is a 400 as any other).
    #[cfg(feature = "http2")]
    for _ in 0..300 {
        let mut c = s.connect();
        c.send(b"GET / ICE/1.0\r\n\r\n");
        c.expect_closed();
    }
    // A window later, the next one says how many were left out.
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let mut c = s.connect();
    c.send(b"G@T / HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_eq!(c.response().status, 400);
    s.wait_stderr_line(
        "lines about clients' unreadable, slow or refused requests were not written",
    );
    let err = s.stderr();
    let lines = err.matches("client 127.0.0.1: 400 (").count();
    assert!(lines < 300, "{lines} lines for 301 bad requests");
    #[cfg(feature = "http2")]
    {
        let lines = err
            .matches("neither an HTTP/1.x request nor the HTTP/2 preface")
            .count();
        assert!(lines < 300, "{lines} lines for 300 connections of garbage");
    }
}
