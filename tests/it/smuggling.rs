//! Request smuggling and parser confusion: every ambiguous framing, bad line
//! ending, malformed field or oversized part of a request is refused with
//! the status RFC 9112 asks for, the connection is closed where it says so,
//! and a request hidden behind the bad one is never answered.

use crate::common;

use common::*;

/// The request hidden behind each bad message. If it is ever answered, the
/// server and a front proxy could disagree about where a message ends.
const SMUGGLED: &[u8] = b"GET /b.html HTTP/1.1\r\nHost: x\r\n\r\n";

fn site() -> Server {
    let mut b = Builder::new();
    b.file("a.txt", b"AAAA");
    b.file("b.html", b"<b>bb</b>");
    b.start()
}

/// Asserts, naming the case, that `r` is exactly the error response
/// `code reason` with `extra` header lines and `conn`.
fn exact_error(r: &Response, code: u16, reason: &str, extra: &str, conn: Conn, case: &str) {
    let want = error_head(code, reason, extra, conn);
    assert_eq!(r.masked_head(), want, "case {case}");
    assert_eq!(r.text(), error_page(code, reason), "case {case}");
}

/// Asserts that nothing more arrives on `c` before the server closes it.
fn nothing_more(c: &mut Client, case: &str) {
    let rest = c.read_to_end();
    assert!(
        rest.is_empty(),
        "case {case}: answered after the refused message: {:?}",
        String::from_utf8_lossy(&rest)
    );
}

fn show(raw: &[u8]) -> String {
    if raw.len() > 120 {
        format!(
            "{}…({} bytes)",
            String::from_utf8_lossy(&raw[..120]),
            raw.len()
        )
    } else {
        String::from_utf8_lossy(raw).into_owned()
    }
}

/// Sends `raw` followed by [`SMUGGLED`] in one write; expects exactly the
/// error `code reason` with `Connection: close`, then the close with
/// nothing more.
fn refused(s: &Server, raw: &[u8], code: u16, reason: &str) {
    let case = show(raw);
    let mut c = s.connect();
    let mut msg = raw.to_vec();
    msg.extend_from_slice(SMUGGLED);
    c.send(&msg);
    let r = c.response();
    exact_error(&r, code, reason, "", Conn::Close, &case);
    nothing_more(&mut c, &case);
}

/// Whether the server still answers a plain request on a new connection.
fn still_serves(s: &Server) {
    let r = s.get("/a.txt");
    assert_file(&r, b"AAAA", "text/plain; charset=utf-8", "", Conn::Close);
}

#[test]
fn content_length_and_transfer_encoding_together() {
    // RFC 9112 §6.1 and §6.3: "ought to be handled as an error"; a server
    // that rejects it MUST close the connection after responding.
    let s = site();
    let cases: &[&[u8]] = &[
        b"POST /a.txt HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        b"POST /a.txt HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n",
        b"GET /a.txt HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        b"POST /a.txt HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 34\r\n\r\n0\r\n\r\n",
    ];
    for raw in cases {
        refused(&s, raw, 400, "Bad Request");
    }
    still_serves(&s);
}

#[test]
fn duplicate_content_length() {
    // RFC 9112 §6.3 item 5: differing values (or a list of them) MUST be
    // treated as an unrecoverable error (400, close). Identical values may
    // be accepted; brisk refuses them too, which is allowed and safer.
    let s = site();
    let cases: &[&[u8]] = &[
        b"POST /a.txt HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\nhello",
        b"POST /a.txt HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 0\r\n\r\nhello",
        b"POST /a.txt HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nContent-Length: 5\r\n\r\nhello",
        b"POST /a.txt HTTP/1.1\r\nHost: x\r\nContent-Length: 5, 5\r\n\r\nhello",
        b"POST /a.txt HTTP/1.1\r\nHost: x\r\nContent-Length: 5,0\r\n\r\nhello",
        b"POST /a.txt HTTP/1.1\r\nHost: x\r\ncontent-length: 5\r\nCONTENT-LENGTH: 6\r\n\r\nhello!",
    ];
    for raw in cases {
        refused(&s, raw, 400, "Bad Request");
    }
    still_serves(&s);
}

#[test]
fn malformed_content_length() {
    let s = site();
    let cases: &[&[u8]] = &[
        b"POST /a.txt HTTP/1.1\r\nHost: x\r\nContent-Length:\r\n\r\n",
        b"POST /a.txt HTTP/1.1\r\nHost: x\r\nContent-Length: \r\n\r\n",
        b"POST /a.txt HTTP/1.1\r\nHost: x\r\nContent-Length: +5\r\n\r\nhello",
        b"POST /a.txt HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\nhello",
        b"POST /a.txt HTTP/1.1\r\nHost: x\r\nContent-Length: 0x5\r\n\r\nhello",
        b"POST /a.txt HTTP/1.1\r\nHost: x\r\nContent-Length: 5 5\r\n\r\nhello",
        b"POST /a.txt HTTP/1.1\r\nHost: x\r\nContent-Length: 5.0\r\n\r\nhello",
        b"POST /a.txt HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999999999\r\n\r\n",
    ];
    for raw in cases {
        refused(&s, raw, 400, "Bad Request");
    }
    still_serves(&s);
}

#[test]
fn transfer_coding_lists() {
    let s = site();
    // §6.3 item 4: chunked not final (or absent) → 400 and close.
    let bad: &[&[u8]] = &[
        b"POST /a.txt HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked, identity\r\n\r\n0\r\n\r\n",
        b"POST /a.txt HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: identity\r\n\r\n0\r\n\r\n",
        b"POST /a.txt HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked, chunked\r\n\r\n0\r\n\r\n",
        b"POST /a.txt HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        b"POST /a.txt HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked;foo=bar\r\n\r\n0\r\n\r\n",
        b"POST /a.txt HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: \"chunked\"\r\n\r\n0\r\n\r\n",
        b"POST /a.txt HTTP/1.1\r\nHost: x\r\nTransfer-Encoding:\r\n\r\n0\r\n\r\n",
        // Not chunked at all: the same MUST, before §6.1's 501 for unknown codings.
        b"POST /a.txt HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: xchunked\r\n\r\n0\r\n\r\n",
        b"POST /a.txt HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: identity\r\n\r\n0\r\n\r\n",
    ];
    for raw in bad {
        refused(&s, raw, 400, "Bad Request");
    }
    // §6.1: a transfer coding the server does not understand → 501 (and the
    // body length is unknown, so the connection closes).
    let unknown: &[&[u8]] = &[
        b"POST /a.txt HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: identity, chunked\r\n\r\n0\r\n\r\n",
        b"POST /a.txt HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n",
    ];
    for raw in unknown {
        refused(&s, raw, 501, "Not Implemented");
    }
    still_serves(&s);
}

#[test]
fn transfer_encoding_on_http10() {
    // RFC 9112 §6.1: an HTTP/1.0 message with Transfer-Encoding has faulty
    // framing; the connection MUST be closed after processing it.
    let s = site();
    let cases: &[&[u8]] = &[
        b"POST /a.txt HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        b"POST /a.txt HTTP/1.0\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        b"POST /a.txt HTTP/1.0\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\nhello",
    ];
    for raw in cases {
        refused(&s, raw, 400, "Bad Request");
    }
    still_serves(&s);
}

#[test]
fn bare_lf_bare_cr_and_obs_fold() {
    // §2.2: bare CR MUST be treated as invalid (or replaced by SP); a bare
    // LF may be accepted, and refusing it is the safe choice. §5.2: obs-fold
    // in a request → 400 (or replaced by SP).
    let s = site();
    let cases: &[&[u8]] = &[
        b"GET /a.txt HTTP/1.1\nHost: x\n\n",
        b"GET /a.txt HTTP/1.1\r\nHost: x\n\r\n",
        b"GET /a.txt HTTP/1.1\r\nHost: x\r\nX-A: 1\nTransfer-Encoding: chunked\r\n\r\n",
        b"GET /a.txt HTTP/1.1\r\nHost: x\r\n\n",
        b"GET /a.txt HTTP/1.1\rHost: x\r\n\r\n",
        b"GET /a.txt HTTP/1.1\r\nHost: x\rX-A: 1\r\n\r\n",
        b"GET /a.txt HTTP/1.1\r\nHost: x\r\nX-A: 1\r\r\n\r\n",
        b"GET /a.txt HTTP/1.1\r\nHost: x\r\n\r\r\n",
        b"\nGET /a.txt HTTP/1.1\r\nHost: x\r\n\r\n",
        b"GET /a.txt HTTP/1.1\r\nHost: x\r\nX-A: 1\r\n folded\r\n\r\n",
        b"GET /a.txt HTTP/1.1\r\nHost: x\r\nX-A: 1\r\n\tfolded\r\n\r\n",
        b"POST /a.txt HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: identity\r\n chunked\r\n\r\n0\r\n\r\n",
        b"GET /a.txt HTTP/1.1\r\n Host: x\r\n\r\n",
        b"GET /a.txt HTTP/1.1\r\n\tHost: x\r\n\r\n",
    ];
    for raw in cases {
        refused(&s, raw, 400, "Bad Request");
    }
    still_serves(&s);
}

#[test]
fn whitespace_before_the_colon() {
    // §5.1: a server MUST reject with 400.
    let s = site();
    let cases: &[&[u8]] = &[
        b"GET /a.txt HTTP/1.1\r\nHost : x\r\n\r\n",
        b"GET /a.txt HTTP/1.1\r\nHost\t: x\r\n\r\n",
        b"POST /a.txt HTTP/1.1\r\nHost: x\r\nContent-Length : 5\r\n\r\nhello",
        b"POST /a.txt HTTP/1.1\r\nHost: x\r\nTransfer-Encoding : chunked\r\n\r\n0\r\n\r\n",
        b"POST /a.txt HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nTransfer-Encoding\t: chunked\r\n\r\n0\r\n\r\n",
    ];
    for raw in cases {
        refused(&s, raw, 400, "Bad Request");
    }
    still_serves(&s);
}

#[test]
fn control_bytes_in_header_values() {
    let s = site();
    let cases: &[&[u8]] = &[
        b"GET /a.txt HTTP/1.1\r\nHost: x\r\nX-A: a\x00b\r\n\r\n",
        b"GET /a.txt HTTP/1.1\r\nHost: x\x00\r\n\r\n",
        b"GET /a.txt HTTP/1.1\r\nHost: x\r\nX-A: \x00\r\n\r\n",
        b"GET /a.txt HTTP/1.1\r\nHost: x\r\nX-A\x00: b\r\n\r\n",
        b"POST /a.txt HTTP/1.1\r\nHost: x\r\nContent-Length: 5\x00\r\n\r\nhello",
        b"GET /a.txt HTTP/1.1\r\nHost: x\r\nX-A: a\x1bb\r\n\r\n",
        b"GET /a.txt HTTP/1.1\r\nHost: x\r\nX-A: a\x7fb\r\n\r\n",
        b"GET /a\x00.txt HTTP/1.1\r\nHost: x\r\n\r\n",
    ];
    for raw in cases {
        refused(&s, raw, 400, "Bad Request");
    }
    still_serves(&s);
}

/// A chunked POST (answered 405 by a static file before its body is read)
/// whose body then turns out to be malformed: the head gets its answer,
/// the body error closes the connection, and the request after the bad
/// body is never answered. (A server that reads the body first would
/// answer 400 with `Connection: close` instead; that is accepted too.)
fn bad_body(s: &Server, body: &[u8]) {
    let mut raw = b"POST /a.txt HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
    raw.extend_from_slice(body);
    let case = show(body);
    let mut c = s.connect();
    raw.extend_from_slice(SMUGGLED);
    c.send(&raw);
    let r = c.response();
    if r.status == 400 {
        exact_error(&r, 400, "Bad Request", "", Conn::Close, &case);
    } else {
        exact_error(
            &r,
            405,
            "Method Not Allowed",
            "Allow: GET, HEAD, OPTIONS\r\n",
            Conn::None,
            &case,
        );
    }
    nothing_more(&mut c, &case);
}

/// The same request with a well-formed body: 405, then the next pipelined
/// request is found and answered.
fn good_body(s: &Server, body: &[u8]) {
    let mut raw = b"POST /a.txt HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
    raw.extend_from_slice(body);
    raw.extend_from_slice(b"GET /b.html HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    let case = show(body);
    let mut c = s.connect();
    c.send(&raw);
    let r = c.response();
    exact_error(
        &r,
        405,
        "Method Not Allowed",
        "Allow: GET, HEAD, OPTIONS\r\n",
        Conn::None,
        &case,
    );
    let r = c.response();
    assert_file(
        &r,
        b"<b>bb</b>",
        "text/html; charset=utf-8",
        "",
        Conn::Close,
    );
    nothing_more(&mut c, &case);
}

#[test]
fn invalid_chunk_sizes() {
    let s = site();
    for body in BAD_CHUNK_FRAMING {
        bad_body(&s, body);
    }
    // Chunk sizes near u64::MAX are beyond any body limit: refused as the
    // size is read (413 or the head's answer), never wrapped around.
    bad_body(&s, b"ffffffffffffffff\r\nhello\r\n0\r\n\r\n");
    bad_body(&s, b"8000000000000000\r\nhello\r\n0\r\n\r\n");
    still_serves(&s);
}

#[test]
fn valid_chunk_syntax_is_accepted() {
    // The RFC 9112 §7.1 grammar, including BWS around the extension, upper
    // and lower case hex, leading zeros and quoted values.
    let s = site();
    let cases: &[&[u8]] = &[
        b"5\r\nhello\r\n0\r\n\r\n",
        b"5 ;a\r\nhello\r\n0\r\n\r\n",
        b"5;a=b;c=\"d;e\\\"\"\r\nhello\r\n0\r\n\r\n",
        b"A\r\n0123456789\r\na\r\n0123456789\r\n0\r\n\r\n",
        b"0005\r\nhello\r\n000\r\n\r\n",
        b"0\r\n\r\n",
    ];
    for body in cases {
        good_body(&s, body);
    }
}

#[test]
fn huge_chunk_extensions_are_refused() {
    let s = site();
    for len in [5_000usize, 70_000, 300_000] {
        let mut body = format!("5;x={}\r\nhello\r\n0\r\n\r\n", "e".repeat(len)).into_bytes();
        bad_body(&s, &body);
        // Many small extensions add up the same way.
        body = format!("5{}\r\nhello\r\n0\r\n\r\n", ";a".repeat(len / 2)).into_bytes();
        bad_body(&s, &body);
    }
    still_serves(&s);
}

#[test]
fn trailers() {
    let s = site();
    // Valid trailers are skipped and the next request is found.
    good_body(&s, b"5\r\nhello\r\n0\r\nX-Trailer: t\r\n\r\n");
    good_body(
        &s,
        b"5\r\nhello\r\n0\r\nX-A: 1\r\nX-B:\r\nX-C:  spaced \r\n\r\n",
    );
    good_body(&s, b"0\r\nContent-Length: 50\r\n\r\n");
    // Malformed trailers end the connection.
    for body in BAD_TRAILERS {
        bad_body(&s, body);
    }
    // An endless trailer section is cut off (431 or the head's answer).
    let mut endless = b"0\r\n".to_vec();
    for i in 0..2_000 {
        endless.extend_from_slice(format!("X-T{i}: {}\r\n", "v".repeat(20)).as_bytes());
    }
    endless.extend_from_slice(b"\r\n");
    bad_body(&s, &endless);
    still_serves(&s);
}

#[test]
fn host_values() {
    let s = site();
    // RFC 9112 §3.2: an invalid Host value or more than one Host → 400.
    let cases: &[&[u8]] = &[
        b"GET /a.txt HTTP/1.1\r\nHost: ..\r\n\r\n",
        b"GET /a.txt HTTP/1.1\r\nHost: a..b\r\n\r\n",
        b"GET /a.txt HTTP/1.1\r\nHost: ../etc\r\n\r\n",
        b"GET /a.txt HTTP/1.1\r\nHost: a/b\r\n\r\n",
        b"GET /a.txt HTTP/1.1\r\nHost: /\r\n\r\n",
        b"GET /a.txt HTTP/1.1\r\nHost: user@x\r\n\r\n",
        b"GET /a.txt HTTP/1.1\r\nHost: @x\r\n\r\n",
        b"GET /a.txt HTTP/1.1\r\nHost: x y\r\n\r\n",
        b"GET /a.txt HTTP/1.1\r\nHost: x:80:80\r\n\r\n",
        b"GET /a.txt HTTP/1.1\r\nHost: x:99999x\r\n\r\n",
        b"GET /a.txt HTTP/1.1\r\nHost: x\\y\r\n\r\n",
        b"GET /a.txt HTTP/1.1\r\nHost: x%2f\r\n\r\n",
        b"GET /a.txt HTTP/1.1\r\nHost: [::1\r\n\r\n",
        b"GET /a.txt HTTP/1.1\r\nHost: x\r\nHost: x\r\n\r\n",
        b"GET /a.txt HTTP/1.1\r\nHost: x\r\nHost: y\r\n\r\n",
        b"GET /a.txt HTTP/1.1\r\nHost: x\r\nhost: \r\n\r\n",
        b"GET /a.txt HTTP/1.1\r\nHost:\r\nHost:\r\n\r\n",
        b"GET /a.txt HTTP/1.0\r\nHost: x\r\nHost: y\r\n\r\n",
        b"GET http://user@x/a.txt HTTP/1.1\r\nHost: x\r\n\r\n",
    ];
    for raw in cases {
        refused(&s, raw, 400, "Bad Request");
    }
    // An empty Host is valid (RFC 9112 §3.2: the authority may be empty).
    for raw in [
        &b"GET /a.txt HTTP/1.1\r\nHost:\r\nConnection: close\r\n\r\n"[..],
        b"GET /a.txt HTTP/1.1\r\nHost: \r\nConnection: close\r\n\r\n",
        b"GET /a.txt HTTP/1.1\r\nHost: [::1]:8080\r\nConnection: close\r\n\r\n",
        b"GET /a.txt HTTP/1.1\r\nHost: a-b.example_1~:80\r\nConnection: close\r\n\r\n",
    ] {
        let mut c = s.connect();
        c.send(raw);
        let r = c.response();
        assert_file(&r, b"AAAA", "text/plain; charset=utf-8", "", Conn::Close);
        c.expect_closed();
    }
}

#[test]
fn oversized_parts() {
    let s = site();
    // Request line over 8 KiB (the default) → 414.
    let line = format!("GET /{} HTTP/1.1\r\nHost: x\r\n\r\n", "a".repeat(9_000));
    refused(&s, line.as_bytes(), 414, "URI Too Long");
    // A request line that never ends is refused as soon as it is too long.
    let endless = format!("GET /{}", "a".repeat(40_000));
    refused(&s, endless.as_bytes(), 414, "URI Too Long");
    // Header block over 16 KiB → 431.
    let block = format!(
        "GET /a.txt HTTP/1.1\r\nHost: x\r\nX-A: {}\r\nX-B: {}\r\n\r\n",
        "v".repeat(9_000),
        "w".repeat(9_000)
    );
    refused(&s, block.as_bytes(), 431, "Request Header Fields Too Large");
    // One header line that never ends.
    let endless = format!(
        "GET /a.txt HTTP/1.1\r\nHost: x\r\nX-A: {}",
        "v".repeat(40_000)
    );
    refused(
        &s,
        endless.as_bytes(),
        431,
        "Request Header Fields Too Large",
    );
    // More than 100 header fields (the default) → 431.
    let mut many = String::from("GET /a.txt HTTP/1.1\r\nHost: x\r\n");
    for i in 0..101 {
        many.push_str(&format!("X-{i}: y\r\n"));
    }
    many.push_str("\r\n");
    refused(&s, many.as_bytes(), 431, "Request Header Fields Too Large");
    // Body over 1 MiB (the default) → 413, whatever follows.
    refused(
        &s,
        b"POST /a.txt HTTP/1.1\r\nHost: x\r\nContent-Length: 1048577\r\n\r\nhello",
        413,
        "Content Too Large",
    );
    refused(
        &s,
        b"POST /a.txt HTTP/1.1\r\nHost: x\r\nContent-Length: 18446744073709551615\r\n\r\n",
        413,
        "Content Too Large",
    );
    // Just under the limits: answered normally.
    let ok = format!(
        "GET /a.txt HTTP/1.1\r\nHost: x\r\nX-A: {}\r\nConnection: close\r\n\r\n",
        "v".repeat(8_000)
    );
    let r = s.request(ok.as_bytes());
    assert_file(&r, b"AAAA", "text/plain; charset=utf-8", "", Conn::Close);
}

#[test]
fn smuggled_request_in_a_later_packet_is_not_answered() {
    // The bad message and the hidden request in separate writes: the
    // server has answered and closed by the time the second one arrives.
    let s = site();
    let mut c = s.connect();
    c.send(b"POST /a.txt HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n");
    let r = c.response();
    exact_error(&r, 400, "Bad Request", "", Conn::Close, "CL+TE");
    // The write may fail (the server closed); either way, no answer.
    use std::io::Write;
    let _ = c.stream.write_all(b"0\r\n\r\n");
    let _ = c.stream.write_all(SMUGGLED);
    nothing_more(&mut c, "CL+TE, later packet");
    still_serves(&s);
}

/// True when `line` holds no byte a terminal or a log reader could take
/// for a control: ASCII controls, DEL, and UTF-8 encoded C1 controls.
fn clean(line: &[u8]) -> bool {
    let ascii_ok = line.iter().all(|&b| b == b'\t' || !(b < 0x20 || b == 0x7f));
    let c1 = String::from_utf8_lossy(line)
        .chars()
        .any(|ch| ('\u{80}'..='\u{9f}').contains(&ch));
    ascii_ok && !c1
}

#[test]
fn control_characters_never_reach_the_logs_raw() {
    let mut b = Builder::new();
    b.file("a.txt", b"AAAA");
    b.access_log();
    let s = b.start();
    // Percent-encoded CR LF: logged as sent, encoded.
    let mut c = s.connect();
    c.send(b"GET /a%0d%0aX HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    // (A decoded CR or LF can name no file: 400 or 404.)
    let st = c.response().status;
    assert!(st == 400 || st == 404, "{st}");
    let line = s.wait_access_line(|l| l.windows(3).any(|w| w == b"/a%"));
    assert!(clean(&line), "{line:?}");
    assert!(
        String::from_utf8_lossy(&line).contains("/a%0d%0aX"),
        "{line:?}"
    );
    // Refused by the parser: a raw ESC in the target, raw ESC in a header
    // value, and C1 CSI (U+009B as UTF-8) in the target (no raw byte
    // >= 0x80 is a URI's). Neither the access log nor the error log
    // (stderr) may carry the raw bytes.
    for (raw, what) in [
        (
            &b"GET /\x1b[31mred HTTP/1.1\r\nHost: x\r\n\r\n"[..],
            "raw ESC",
        ),
        (
            b"GET /esc HTTP/1.1\r\nHost: x\r\nUser-Agent: \x1b[31m\r\n\r\n",
            "ESC in UA",
        ),
        (
            b"GET /csi\xc2\x9b31m HTTP/1.1\r\nHost: x\r\n\r\n",
            "raw C1 in target",
        ),
    ] {
        let mut c = s.connect();
        c.send(raw);
        exact_error(&c.response(), 400, "Bad Request", "", Conn::Close, what);
    }
    // C1 CSI in header values is logged, escaped.
    let mut c = s.connect();
    c.send(b"GET /csi HTTP/1.1\r\nHost: x\r\nUser-Agent: \xc2\x9b31m\r\nReferer: \xc2\x9b\r\nConnection: close\r\n\r\n");
    assert_eq!(c.response().status, 404);
    let line = s.wait_access_line(|l| l.windows(4).any(|w| w == b"/csi"));
    assert!(clean(&line), "{line:?}");
    // Make sure the 400 lines are flushed: one more request after them.
    let _ = s.get("/a.txt");
    s.wait_access_line(|l| l.windows(6).any(|w| w == b"/a.txt"));
    let access = std::fs::read(&s.access_path).unwrap_or_default();
    for l in access.split(|&b| b == b'\n') {
        assert!(clean(l), "access log line {:?}", String::from_utf8_lossy(l));
    }
    let errors = std::fs::read(&s.stderr_path).unwrap_or_default();
    for l in errors.split(|&b| b == b'\n') {
        assert!(clean(l), "error log line {:?}", String::from_utf8_lossy(l));
    }
    assert!(
        errors.windows(3).any(|w| w == b"400"),
        "the refusals are in the error log: {:?}",
        String::from_utf8_lossy(&errors)
    );
}

#[test]
fn c1_controls_from_requests_never_reach_the_error_log_raw() {
    // `\xc2\x9b` is U+009B, the C1 control CSI that some terminals act on
    // like ESC `[`. The access log escapes every byte >= 0x7F; the error
    // log quotes the target of a 5xx answer (percent-encoded: the parser
    // refuses raw bytes >= 0x80 there) and a CGI script's stderr (which
    // may print anything), and must pass no such character through.
    let mut b = Builder::new();
    b.file("a.txt", b"AAAA");
    let dir = b.base().join("cgi-bin");
    let script = |name: &str, text: &str| {
        let p = dir.join(name);
        std::fs::write(&p, text).expect("write script");
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    };
    std::fs::create_dir_all(&dir).expect("cgi dir");
    // An interpreter that does not exist: 500, logged with the target.
    script("broken.cgi", "#!/nonexistent/interpreter\n");
    // A script that reports its query on stderr, after a raw CSI.
    script(
        "echo.cgi",
        "#!/bin/sh\nprintf 'query: \\302\\233%s\\n' \"$QUERY_STRING\" >&2\nprintf 'Content-Type: text/plain\\r\\n\\r\\nok'\n",
    );
    b.config("[[cgi]]\nurl = \"/cgi-bin/\"\ndir = \"cgi-bin\"\n");
    let s = b.start();
    let r = s.request(
        b"GET /cgi-bin/broken.cgi?%C2%9B31mred HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(r.status, 500);
    let r =
        s.request(b"GET /cgi-bin/echo.cgi?31mred HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    assert_eq!(r.status, 200);
    // Both lines are in the error log once the next request is answered
    // (the log is flushed once per loop iteration).
    let _ = s.get("/a.txt");
    let errors = poll(WAIT_LIMIT, || {
        let e = std::fs::read(&s.stderr_path).unwrap_or_default();
        (String::from_utf8_lossy(&e).matches("31mred").count() >= 2).then_some(e)
    })
    .unwrap_or_else(|| panic!("both lines logged: {:?}", s.stderr()));
    let bad: Vec<String> = errors
        .split(|&b| b == b'\n')
        .filter(|l| l.windows(5).any(|w| w == b"31mre") && !clean(l))
        .map(|l| String::from_utf8_lossy(l).into_owned())
        .collect();
    assert!(
        bad.is_empty(),
        "error log lines with a raw C1 control from the request: {bad:?}"
    );
}
