//! Unit tests for the request-head parser, one byte-exact input per rule.

use super::*;

const LIMITS: Limits = Limits {
    max_request_line: 64,
    max_head: 256,
    max_headers: 8,
};

/// Parses `buf` with fresh storage and hands the outcome to `f`.
fn with<R>(
    buf: &[u8],
    limits: &Limits,
    f: impl FnOnce(Result<Option<Request<'_>>, ParseError>) -> R,
) -> R {
    let mut storage = [Header::EMPTY; 16];
    f(parse_request(buf, limits, &mut storage))
}

/// The complete request, or a panic naming what happened instead.
fn ok<R>(buf: &[u8], f: impl FnOnce(&Request<'_>) -> R) -> R {
    with(buf, &LIMITS, |r| match r {
        Ok(Some(req)) => f(&req),
        other => panic!("{:?} gave {other:?}", String::from_utf8_lossy(buf)),
    })
}

/// 0 for complete, 1 for incomplete, else the error status.
fn code_with(buf: &[u8], limits: &Limits) -> u16 {
    with(buf, limits, |r| match r {
        Ok(Some(_)) => 0,
        Ok(None) => 1,
        Err(e) => {
            assert!(!e.reason.is_empty());
            e.status.0
        }
    })
}

fn code(buf: &[u8]) -> u16 {
    code_with(buf, &LIMITS)
}

#[track_caller]
fn assert_code(buf: &[u8], expected: u16) {
    assert_eq!(
        code(buf),
        expected,
        "input: {:?}",
        String::from_utf8_lossy(buf)
    );
}

const SIMPLE: &[u8] = b"GET /a/b?c=d HTTP/1.1\r\nHost: example.com\r\nAccept:  */* \t\r\n\r\n";

#[test]
fn simple_get() {
    ok(SIMPLE, |r| {
        assert_eq!(r.method, Method::Get);
        assert_eq!(r.method_token, b"GET");
        assert_eq!(&*r.target, b"/a/b?c=d");
        assert_eq!(r.version, Version::Http11);
        assert_eq!(r.headers.len(), 2);
        assert_eq!(r.headers[1].name, b"Accept");
        assert_eq!(r.headers[1].value, b"*/*");
        assert_eq!(r.header("accept"), Some(&b"*/*"[..]));
        assert_eq!(r.header("missing"), None);
        assert_eq!(r.head_len, SIMPLE.len());
        assert_eq!(r.host, Some(&b"example.com"[..]));
        assert_eq!(r.body, BodyFraming::None);
        assert!(r.keep_alive);
        assert!(!r.expect_continue);
    });
}

#[test]
fn every_prefix_is_incomplete() {
    for n in 0..SIMPLE.len() {
        assert_code(&SIMPLE[..n], 1);
    }
}

#[test]
fn leading_empty_lines_are_skipped_and_counted() {
    let buf = b"\r\n\r\nGET / HTTP/1.0\r\n\r\nrest";
    ok(buf, |r| {
        assert_eq!(r.head_len, buf.len() - 4);
        assert_eq!(&*r.target, b"/");
    });
    assert_code(b"\r", 1);
    assert_code(b"\r\n\r", 1);
    assert_code(b"\n", 400);
    assert_code(b"\r\nX", 1);
    assert_code(b"\rGET / HTTP/1.0\r\n\r\n", 400);
    assert_code(b"\n\nGET / HTTP/1.0\r\n\r\n", 400);
    // Empty lines count against the head limit, so they cannot pile up.
    assert_code(&b"\r\n".repeat(200), 431);
}

#[test]
fn request_line_shape() {
    assert_code(b"GET  / HTTP/1.1\r\nHost: a\r\n\r\n", 400);
    assert_code(b"GET /  HTTP/1.1\r\nHost: a\r\n\r\n", 400);
    assert_code(b" GET / HTTP/1.1\r\nHost: a\r\n\r\n", 400);
    assert_code(b"GET\t/ HTTP/1.1\r\nHost: a\r\n\r\n", 400);
    assert_code(b"GET /\t HTTP/1.1\r\nHost: a\r\n\r\n", 400);
    assert_code(b"GET / HTTP/1.1 \r\nHost: a\r\n\r\n", 400);
    assert_code(b"GET /foo bar HTTP/1.1\r\nHost: a\r\n\r\n", 400);
    assert_code(b"GET\r\n\r\n", 400);
    assert_code(b"G@T / HTTP/1.1\r\nHost: a\r\n\r\n", 400);
    // HTTP/0.9 style: no version.
    assert_code(b"GET /\r\n\r\n", 400);
    assert_code(b"GET / \r\n\r\n", 400);
    // Invalid bytes fail before the line is complete.
    assert_code(b"GE(", 400);
    assert_code(b"GET /\x01", 400);
    assert_code(b"GET / HTTX", 400);
}

#[test]
fn target_bytes() {
    assert_code(b"GET /a\x7fb HTTP/1.1\r\nHost: a\r\n\r\n", 400);
    assert_code(b"GET /a\x00b HTTP/1.1\r\nHost: a\r\n\r\n", 400);
    assert_code(b"GET /a\x1bb HTTP/1.1\r\nHost: a\r\n\r\n", 400);
    // Raw bytes >= 0x80 (unencoded UTF-8 or not) are accepted in the path
    // and the query, as nginx, lighttpd and Caddy do, and kept as sent.
    for (t, want) in [
        (
            &b"GET /\xce\xb4\xc2\xb6 HTTP/1.1\r\nHost: a\r\n\r\n"[..],
            &b"/\xce\xb4\xc2\xb6"[..],
        ),
        (b"GET /a?q=\xff HTTP/1.1\r\nHost: a\r\n\r\n", b"/a?q=\xff"),
        (
            b"GET /a?q=\xc3\xa9 HTTP/1.1\r\nHost: a\r\n\r\n",
            b"/a?q=\xc3\xa9",
        ),
        (
            b"GET http://a/\xc3\xa9 HTTP/1.1\r\nHost: a\r\n\r\n",
            b"/\xc3\xa9",
        ),
    ] {
        ok(t, |r| assert_eq!(&*r.target, want));
    }
    // But not in the host, nor a C1 control written in UTF-8.
    assert_code(b"GET http://\xc3\xa9/ HTTP/1.1\r\nHost: a\r\n\r\n", 400);
    for t in [
        &b"GET /\xc2\x9b31m HTTP/1.1\r\nHost: a\r\n\r\n"[..],
        b"GET /a?q=\xc2\x80 HTTP/1.1\r\nHost: a\r\n\r\n",
        b"GET /a?q=\xc2\x9f HTTP/1.1\r\nHost: a\r\n\r\n",
    ] {
        assert_code(t, 400);
        with(t, &LIMITS, |r| {
            assert!(matches!(r, Err(e) if e.reason.contains("C1")), "{r:?}")
        });
    }
    ok(b"GET /a?q=\xc2\xa0\xc2 HTTP/1.1\r\nHost: a\r\n\r\n", |_| ());
    // Percent-encoded, the same bytes are fine.
    ok(b"GET /%CE%B4?q=%FF HTTP/1.1\r\nHost: a\r\n\r\n", |r| {
        assert_eq!(&*r.target, b"/%CE%B4?q=%FF");
    });
    // A fragment is never sent (RFC 9112 §3.2, RFC 3986 §3.5): 400.
    for t in [
        &b"GET /a#b HTTP/1.1\r\nHost: a\r\n\r\n"[..],
        b"GET /a?q=1#frag HTTP/1.1\r\nHost: a\r\n\r\n",
        b"GET /# HTTP/1.1\r\nHost: a\r\n\r\n",
        b"GET http://a/b#c HTTP/1.1\r\n\r\n",
        b"GET http://a#c HTTP/1.1\r\n\r\n",
        b"GET /#",
    ] {
        assert_code(t, 400);
        with(t, &LIMITS, |r| {
            assert!(
                matches!(r, Err(e) if e.reason.contains("fragment")),
                "{r:?}"
            )
        });
    }
    ok(b"GET /%23 HTTP/1.1\r\nHost: a\r\n\r\n", |r| {
        assert_eq!(&*r.target, b"/%23");
    });
    ok(
        b"GET /with_\"q\"|{}?x=\\ HTTP/1.1\r\nHost: a\r\n\r\n",
        |_| (),
    );
}

#[test]
fn versions() {
    ok(b"GET / HTTP/1.0\r\n\r\n", |r| {
        assert_eq!(r.version, Version::Http10);
        assert_eq!(r.host, None);
        assert!(!r.keep_alive);
    });
    // RFC 9112 §2.3: a higher 1.x minor is treated as 1.1.
    ok(b"GET / HTTP/1.2\r\nHost: a\r\n\r\n", |r| {
        assert_eq!(r.version, Version::Http11);
    });
    ok(b"GET / HTTP/1.9\r\nHost: a\r\n\r\n", |r| {
        assert_eq!(r.version, Version::Http11)
    });
    assert_code(b"GET / HTTP/2.0\r\nHost: a\r\n\r\n", 505);
    assert_code(b"GET / HTTP/0.9\r\n\r\n", 505);
    assert_code(b"GET / HTTP/3.0\r\n\r\n", 505);
    // Known to be unsupported before the line ends.
    assert_code(b"GET / HTTP/5.6", 505);
    assert_code(b"GET / HTTP/1.", 1);
    assert_code(b"GET / http/1.1\r\nHost: a\r\n\r\n", 400);
    assert_code(b"GET / HTTP/11.1\r\nHost: a\r\n\r\n", 400);
    assert_code(b"GET / HTTP/1.10\r\nHost: a\r\n\r\n", 400);
    assert_code(b"GET / HTTP/1\r\nHost: a\r\n\r\n", 400);
    assert_code(b"GET / HTTP/a.1\r\nHost: a\r\n\r\n", 400);
    assert_code(b"GET / RTSP/1.0\r\nHost: a\r\n\r\n", 400);
    assert_code(b"GET / ICE/1.0\r\nHost: a\r\n\r\n", 400);
}

#[test]
fn a_line_that_is_not_http1_is_told_from_a_malformed_one() {
    let cases: [(&[u8], bool); 8] = [
        // h2spec's invalid HTTP/2 preface, and other protocols.
        (b"INVALID CONNECTION PREFACE\r\n\r\n", true),
        (b"INVALID CONNECTION P", true),
        (b"GET / RTSP/1.0\r\n\r\n", true),
        (b"GET / FOO\r\n", true),
        // HTTP/1.x with a mistake is malformed, not another protocol.
        (b"GET / http/1.1\r\nHost: a\r\n\r\n", false),
        (b"GET / HTTP/a.1\r\n\r\n", false),
        (b"GET / HTTP/1\r\n\r\n", false),
        (b"GET  / HTTP/1.1\r\n\r\n", false),
    ];
    for (buf, expected) in cases {
        let not_http1 = with(buf, &LIMITS, |r| r.err().map(|e| e.is_not_http1()));
        assert_eq!(
            not_http1,
            Some(expected),
            "{:?}",
            String::from_utf8_lossy(buf)
        );
    }
}

#[test]
fn line_endings_are_crlf_only() {
    assert_code(b"GET / HTTP/1.1\nHost: a\r\n\r\n", 400);
    assert_code(b"GET / HTTP/1.1\rHost: a\r\n\r\n", 400);
    assert_code(b"GET / HTTP/1.1\r\nHost: a\n\r\n", 400);
    assert_code(b"GET / HTTP/1.1\r\nHost: a\r\n\n", 400);
    assert_code(b"GET / HTTP/1.1\r\nHost: a\r\nX: 1\rY: 2\r\n\r\n", 400);
    assert_code(b"GET / HTTP/1.1\r\nHost: a\r\n\rX", 400);
    assert_code(
        b"GET / HTTP/1.1\r\nHost: a\r\nConnection: keep\ralive\r\n\r\n",
        400,
    );
    assert_code(b"GET / HTTP/1.1\r\nHost: a\r\nX:\nY: 1\r\n\r\n", 400);
    // A CR at the very end may still become a CRLF.
    assert_code(b"GET / HTTP/1.1\r", 1);
    assert_code(b"GET / HTTP/1.1\r\nHost: a\r", 1);
    assert_code(b"GET / HTTP/1.1\r\nHost: a\r\n\r", 1);
}

#[test]
fn field_syntax() {
    // RFC 9112 §5.1: whitespace before the colon → 400.
    assert_code(b"GET / HTTP/1.1\r\nHost : a\r\n\r\n", 400);
    assert_code(b"GET / HTTP/1.1\r\nHost: a\r\nX\t: 1\r\n\r\n", 400);
    // §5.2: obs-fold → 400, also right after the request line.
    assert_code(b"GET / HTTP/1.1\r\nHost: a\r\nX: 1\r\n 2\r\n\r\n", 400);
    assert_code(b"GET / HTTP/1.1\r\nHost: a\r\nX: 1\r\n\t2\r\n\r\n", 400);
    assert_code(b"GET / HTTP/1.1\r\n Host: a\r\n\r\n", 400);
    assert_code(b"GET / HTTP/1.1\r\nHost: a\r\n: 1\r\n\r\n", 400);
    assert_code(b"GET / HTTP/1.1\r\nHost: a\r\nNoColon\r\n\r\n", 400);
    assert_code(b"GET / HTTP/1.1\r\nHost: a\r\nF@o: 1\r\n\r\n", 400);
    assert_code(b"GET / HTTP/1.1\r\nHost: a\r\nX: a\x00b\r\n\r\n", 400);
    assert_code(b"GET / HTTP/1.1\r\nHost: a\r\nX: a\x7fb\r\n\r\n", 400);
    assert_code(b"GET / HTTP/1.1\r\nHost: a\r\nX: a\x0cb\r\n\r\n", 400);
    // Fails on the NUL before the line ends.
    assert_code(b"GET / HTTP/1.1\r\nX: a\x00", 400);
    let buf = b"GET / HTTP/1.1\r\nHost: a\r\nE:\r\nT: \t a \tb\t \r\nU: D\xc3\xbcsseldorf\r\n\r\n";
    ok(buf, |r| {
        assert_eq!(r.header("e"), Some(&b""[..]));
        assert_eq!(r.header("t"), Some(&b"a \tb"[..]));
        assert_eq!(r.header("u"), Some(&b"D\xc3\xbcsseldorf"[..]));
    });
}

#[test]
fn request_line_limit_414() {
    let long = format!("GET /{} HTTP/1.1\r\nHost: a\r\n\r\n", "a".repeat(60));
    assert_code(long.as_bytes(), 414);
    // Already known while the line is incomplete.
    assert_code(&long.as_bytes()[..70], 414);
    // Exactly at the limit is fine: 64 bytes of line.
    let exact = format!("GET /{} HTTP/1.1\r\nHost: a\r\n\r\n", "a".repeat(50));
    assert_eq!(exact.find('\r'), Some(64));
    assert_code(exact.as_bytes(), 0);
}

#[test]
fn head_limit_431() {
    let big = format!(
        "GET / HTTP/1.1\r\nHost: a\r\nX: {}\r\n\r\n",
        "v".repeat(230)
    );
    assert_code(big.as_bytes(), 431);
    assert_code(&big.as_bytes()[..255], 1);
    assert_code(&big.as_bytes()[..257], 431);
    let fits = format!(
        "GET / HTTP/1.1\r\nHost: a\r\nX: {}\r\n\r\n",
        "v".repeat(256 - 32)
    );
    assert_eq!(fits.len(), 256);
    assert_code(fits.as_bytes(), 0);
    let over = format!(
        "GET / HTTP/1.1\r\nHost: a\r\nX: {}\r\n\r\n",
        "v".repeat(256 - 31)
    );
    assert_code(over.as_bytes(), 431);
}

#[test]
fn header_count_431() {
    let mut req = b"GET / HTTP/1.1\r\nHost: a\r\n".to_vec();
    for _ in 0..7 {
        req.extend_from_slice(b"X: 1\r\n");
    }
    let mut full = req.clone();
    full.extend_from_slice(b"\r\n");
    assert_code(&full, 0);
    req.extend_from_slice(b"Y");
    assert_code(&req, 431);

    // The caller's storage is a limit too.
    let limits = Limits {
        max_headers: 100,
        ..LIMITS
    };
    let mut storage = [Header::EMPTY; 1];
    let r = parse_request(
        b"GET / HTTP/1.1\r\nHost: a\r\nX: 1\r\n\r\n",
        &limits,
        &mut storage,
    );
    assert_eq!(r.map(|_| ()).unwrap_err().status, Status(431));
}

#[test]
fn host_rules() {
    assert_code(b"GET / HTTP/1.1\r\n\r\n", 400);
    assert_code(b"GET / HTTP/1.1\r\nHost: a\r\nHost: a\r\n\r\n", 400);
    assert_code(b"GET / HTTP/1.1\r\nHost: a\r\nhost: b\r\n", 400);
    ok(b"GET / HTTP/1.1\r\nHost:\r\n\r\n", |r| {
        assert_eq!(r.host, Some(&b""[..]))
    });
    for good in [
        &b"example.com"[..],
        b"example.com:8080",
        b"127.0.0.1:80",
        b"[::1]",
        b"[::1]:8080",
        b"[2001:db8::1.2.3.4]",
        b"0.0.0.0=5000",
        b"a_b-c~d",
        b"host:",
    ] {
        let req = [b"GET / HTTP/1.1\r\nHost: ", good, b"\r\n\r\n"].concat();
        ok(&req, |r| assert_eq!(r.host, Some(good)));
    }
    for bad_host in [
        &b"a/b"[..],
        b"a\\b",
        b"a..b",
        b"..",
        b"a b",
        b"user@a",
        b"a%2eb",
        b"a:80:80",
        b"a:8x",
        b"a:123456",
        b":80",
        b"[::1",
        b"[zz]",
        b"[::1]x",
        b"[v1.x]",
    ] {
        let req = [b"GET / HTTP/1.1\r\nHost: ", bad_host, b"\r\n\r\n"].concat();
        assert_code(&req, 400);
    }
}

#[test]
fn absolute_form() {
    ok(
        b"GET http://Example.com:8080/p?q HTTP/1.1\r\nHost: other\r\n\r\n",
        |r| {
            assert_eq!(&*r.target, b"/p?q");
            assert_eq!(r.host, Some(&b"Example.com:8080"[..]));
        },
    );
    ok(b"GET HTTPS://h HTTP/1.1\r\nHost: h\r\n\r\n", |r| {
        assert_eq!(&*r.target, b"/");
        assert_eq!(r.host, Some(&b"h"[..]));
    });
    ok(b"OPTIONS http://h HTTP/1.1\r\nHost: h\r\n\r\n", |r| {
        assert_eq!(&*r.target, b"*")
    });
    ok(b"GET http://h HTTP/1.0\r\n\r\n", |r| {
        assert_eq!(r.host, Some(&b"h"[..]))
    });
    // The Host header is still required on 1.1 (RFC 9112 §3.2).
    assert_code(b"GET http://h/ HTTP/1.1\r\n\r\n", 400);
    // An empty path before a query is `/` (RFC 3986 §3.3 path-abempty,
    // RFC 9110 §4.2.3), for OPTIONS too: only `OPTIONS http://h` is `*`.
    for method in ["GET", "HEAD", "OPTIONS", "POST"] {
        let req = format!(
            "{method} http://h:8080?q=1&r HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n"
        );
        ok(req.as_bytes(), |r| {
            assert_eq!(&*r.target, b"/?q=1&r");
            assert_eq!(r.host, Some(&b"h:8080"[..]));
        });
    }
    ok(b"GET https://h? HTTP/1.1\r\nHost: h\r\n\r\n", |r| {
        assert_eq!(&*r.target, b"/?")
    });
    assert_code(b"GET http://h?q#f HTTP/1.1\r\nHost: h\r\n\r\n", 400);
    assert_code(b"GET http://h#f HTTP/1.1\r\nHost: h\r\n\r\n", 400);
    assert_code(b"GET ftp://h/ HTTP/1.1\r\nHost: h\r\n\r\n", 400);
    assert_code(b"GET http:/h/ HTTP/1.1\r\nHost: h\r\n\r\n", 400);
    assert_code(b"GET http:///p HTTP/1.1\r\nHost: h\r\n\r\n", 400);
    assert_code(b"GET http://u:p@h/ HTTP/1.1\r\nHost: h\r\n\r\n", 400);
    assert_code(b"GET http://a..b/ HTTP/1.1\r\nHost: h\r\n\r\n", 400);
    assert_code(b"GET foo HTTP/1.1\r\nHost: h\r\n\r\n", 400);
    // Rejected as soon as the target is known.
    assert_code(b"GET foo HTTP/1.1\r\n", 400);
}

#[test]
fn asterisk_and_authority_forms() {
    ok(b"OPTIONS * HTTP/1.1\r\nHost: h\r\n\r\n", |r| {
        assert_eq!(&*r.target, b"*");
        assert_eq!(r.method, Method::Options);
    });
    assert_code(b"GET * HTTP/1.1\r\nHost: h\r\n\r\n", 400);
    ok(
        b"CONNECT h.example:443 HTTP/1.1\r\nHost: h.example:443\r\n\r\n",
        |r| {
            assert_eq!(r.method, Method::Connect);
            assert_eq!(&*r.target, b"h.example:443");
            assert_eq!(r.host, Some(&b"h.example:443"[..]));
        },
    );
    ok(b"CONNECT [::1]:443 HTTP/1.0\r\n\r\n", |_| ());
    assert_code(b"CONNECT h.example HTTP/1.0\r\n\r\n", 400);
    assert_code(b"CONNECT h.example: HTTP/1.0\r\n\r\n", 400);
    assert_code(b"CONNECT /x HTTP/1.0\r\n\r\n", 400);
    assert_code(b"CONNECT http://h/ HTTP/1.0\r\n\r\n", 400);
}

#[test]
fn content_length() {
    ok(
        b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 003\r\n\r\n",
        |r| assert_eq!(r.body, BodyFraming::Length(3)),
    );
    ok(b"GET / HTTP/1.0\r\nconTENT-length:\t 5 \r\n\r\n", |r| {
        assert_eq!(r.body, BodyFraming::Length(5))
    });
    ok(
        b"PUT / HTTP/1.1\r\nHost: a\r\nContent-Length: 18446744073709551615\r\n\r\n",
        |r| assert_eq!(r.body, BodyFraming::Length(u64::MAX)),
    );
    let pre = b"POST / HTTP/1.1\r\nHost: a\r\n";
    for bad_value in [
        &b"Content-Length: 18446744073709551616\r\n\r\n"[..],
        b"Content-Length: 1000000000000000000000\r\n",
        b"Content-Length:\r\n\r\n",
        b"Content-Length:  \r\n\r\n",
        b"Content-Length: +5\r\n\r\n",
        b"Content-Length: -5\r\n\r\n",
        b"Content-Length: 4 2\r\n\r\n",
        b"Content-Length: 5,5\r\n\r\n",
        b"Content-Length: 0x5\r\n\r\n",
        b"Content-Length: 5\r\nContent-Length: 5\r\n\r\n",
        b"Content-Length: 1\r\nContent-Length: 2\r\n",
        b"Content-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n",
        b"Transfer-Encoding: chunked\r\nContent-Length: 1\r\n\r\n",
        b"Content-Length: 1\r\nTransfer-Encoding: identity\r\n\r\n",
        b"Content-Length: 10\r\nTransfer-Encoding:\r\n\r\n",
    ] {
        assert_code(&[&pre[..], bad_value].concat(), 400);
    }
}

#[test]
fn transfer_encoding() {
    let pre = b"POST / HTTP/1.1\r\nHost: a\r\n";
    let with = |te: &[u8]| [&pre[..], te, b"\r\n"].concat();
    for good in [
        &b"Transfer-Encoding: chunked\r\n"[..],
        b"transfer-encoding: CHUNKED\r\n",
        b"Transfer-Encoding: , chunked ,\r\n",
    ] {
        ok(&with(good), |r| assert_eq!(r.body, BodyFraming::Chunked));
    }
    for (te, status) in [
        (&b"Transfer-Encoding: gzip, chunked\r\n"[..], 501),
        (
            b"Transfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n",
            501,
        ),
        (b"Transfer-Encoding: chunked, identity\r\n", 400),
        (b"Transfer-Encoding: chunked, chunked\r\n", 400),
        (
            b"Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n",
            400,
        ),
        (
            b"Transfer-Encoding: chunked\r\nTransfer-Encoding: gzip\r\n",
            400,
        ),
        (b"Transfer-Encoding: chunkedchunked\r\n", 400),
        (b"Transfer-Encoding: gzip\r\n", 400),
        (b"Transfer-Encoding: identity\r\n", 400),
        (b"Transfer-Encoding:\r\n", 400),
        (b"Transfer-Encoding: chunked;x=1\r\n", 400),
        (b"Transfer-Encoding: ch@nked\r\n", 400),
    ] {
        assert_eq!(code(&with(te)), status, "{:?}", String::from_utf8_lossy(te));
    }
    // A 1.0 client cannot have been sent chunked (RFC 9112 §6.1).
    assert_code(
        b"POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n",
        400,
    );
}

/// RFC 9112 §6.3 ¶7: neither Content-Length nor Transfer-Encoding is no
/// body, for every method (a POST, PUT or PATCH was answered 411).
#[test]
fn a_request_with_neither_length_nor_coding_has_no_body() {
    for method in ["POST", "PUT", "PATCH"] {
        let req = format!("{method} / HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n");
        ok(req.as_bytes(), |r| {
            assert_eq!(r.body, BodyFraming::Length(0))
        });
    }
    for method in [
        "POST", "PUT", "PATCH", "GET", "HEAD", "DELETE", "OPTIONS", "TRACE", "PURGE",
    ] {
        let req = format!("{method} / HTTP/1.1\r\nHost: a\r\n\r\n");
        ok(req.as_bytes(), |r| assert_eq!(r.body, BodyFraming::None));
    }
}

#[test]
fn unknown_methods_parse() {
    ok(b"PURGE /x HTTP/1.1\r\nHost: a\r\n\r\n", |r| {
        assert_eq!(r.method, Method::Other);
        assert_eq!(r.method_token, b"PURGE");
    });
}

#[test]
fn connection_tokens() {
    let req = |v: &str, c: &str| format!("GET / HTTP/{v}\r\nHost: a\r\nConnection: {c}\r\n\r\n");
    let ka = |v: &str, c: &str| ok(req(v, c).as_bytes(), |r| r.keep_alive);
    assert!(!ka("1.1", "close"));
    assert!(!ka("1.1", "Keep-Alive, CLOSE"));
    assert!(!ka("1.1", "close\t"));
    assert!(ka("1.1", "keep-alive"));
    assert!(ka("1.1", "upgrade"));
    assert!(ka("1.1", "closed"));
    assert!(ka("1.0", "keep-alive"));
    assert!(ka("1.0", "foo ,Keep-Alive"));
    assert!(!ka("1.0", "keep-alive, close"));
    assert!(!ka("1.0", "foo"));
    ok(
        b"GET / HTTP/1.0\r\nConnection: keep-alive\r\nConnection: close\r\n\r\n",
        |r| assert!(!r.keep_alive),
    );
}

#[test]
fn expect() {
    let req = |v: &str, e: &str| {
        format!("PUT / HTTP/{v}\r\nHost: a\r\nContent-Length: 1\r\nExpect: {e}\r\n\r\n")
    };
    ok(req("1.1", "100-continue").as_bytes(), |r| {
        assert!(r.expect_continue)
    });
    ok(req("1.1", "100-Continue").as_bytes(), |r| {
        assert!(r.expect_continue)
    });
    // RFC 9110 §10.1.1: ignored from an HTTP/1.0 client.
    ok(req("1.0", "100-continue").as_bytes(), |r| {
        assert!(!r.expect_continue)
    });
    assert_code(req("1.1", "200-ok").as_bytes(), 417);
    assert_code(req("1.1", "100-continue, foo").as_bytes(), 417);
    assert_code(req("1.1", "").as_bytes(), 417);
}

#[test]
fn pipelined_heads() {
    let buf: &[u8] = b"GET /1 HTTP/1.1\r\nHost: a\r\n\r\n\
        POST /2 HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n\
        GET /3 HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n";
    let mut pos = 0;
    let mut targets = Vec::new();
    while pos < buf.len() {
        let mut storage = [Header::EMPTY; 4];
        let req = parse_request(&buf[pos..], &LIMITS, &mut storage);
        let Ok(Some(req)) = req else {
            panic!("at {pos}: {req:?}");
        };
        targets.push(req.target.to_vec());
        pos += req.head_len;
    }
    assert_eq!(pos, buf.len());
    assert_eq!(targets, [&b"/1"[..], b"/2", b"/3"]);
}

/// A small deterministic generator, so failures reproduce.
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// The one-pass reading of a plain field line ([`plain_field_line`])
/// accepts only what the long way (`find_line_end`, then `parse_field`)
/// accepts, with the same name, value and next line; and it takes most
/// plain lines (else it would save nothing).
#[test]
fn a_plain_field_line_is_read_as_the_long_way_reads_it() {
    let alphabet = b"aZ09-_.!~:: \t\r\n\r\n\x00\x01\x1f\x7f\x80\xff\"(),;/@[]";
    let mut rng = XorShift(0x2545_f491_4f6c_dd1d);
    let (mut fast, mut plain) = (0, 0);
    for _ in 0..200_000 {
        let len = rng.below(24);
        let mut buf: Vec<u8> = (0..len)
            .map(|_| match rng.below(3) {
                0 => alphabet[rng.below(alphabet.len())],
                _ => b"Content-Type: text/html"[rng.below(23)],
            })
            .collect();
        if rng.below(2) == 0 {
            buf.extend_from_slice(b"\r\n");
        }
        buf.extend_from_slice(&b"X: y\r\n"[..rng.below(7)]);
        let long = match find_line_end(&buf, 0) {
            Ok(LineEnd::Complete { end, next }) => match parse_field(&buf[..end], true) {
                Ok(Some(h)) => Some((h, next)),
                _ => None,
            },
            _ => None,
        };
        let short = plain_field_line(&buf, 0);
        if let Some((h, next)) = &short {
            fast += 1;
            let (lh, lnext) = long.as_ref().expect("the long way refuses it");
            assert_eq!(
                (h.name, h.value, *next),
                (lh.name, lh.value, *lnext),
                "{buf:?}"
            );
        }
        if long
            .as_ref()
            .is_some_and(|(_, next)| !buf[..*next].contains(&b'\t'))
        {
            plain += 1;
            assert!(short.is_some(), "a plain line taken the long way: {buf:?}");
        }
    }
    assert!(fast > 1000, "{fast} lines read in one pass");
    assert_eq!(fast, plain);
}

#[test]
fn random_mutations_never_panic() {
    let seeds: [&[u8]; 4] = [
        SIMPLE,
        b"POST http://h:1/x HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip, chunked\r\nExpect: 100-continue\r\n\r\n",
        b"\r\nOPTIONS * HTTP/1.0\r\nContent-Length: 12\r\nConnection: keep-alive\r\n\r\n",
        b"CONNECT [::1]:80 HTTP/1.1\r\nHost: [::1]:80\r\nX: \xff\r\n\r\n",
    ];
    let interesting = b"\r\n :;,\t\x00\x7f\xff/*[]@.HTTP/1.chunked";
    let mut rng = XorShift(0x9e37_79b9_7f4a_7c15);
    let limits = Limits {
        max_request_line: 48,
        max_head: 120,
        max_headers: 4,
    };
    for _ in 0..20_000 {
        let mut buf = seeds[rng.below(seeds.len())].to_vec();
        for _ in 0..=rng.below(4) {
            let at = rng.below(buf.len() + 1);
            match rng.below(4) {
                0 if at < buf.len() => buf[at] = rng.next() as u8,
                1 if at < buf.len() => buf[at] = interesting[rng.below(interesting.len())],
                2 if at < buf.len() => {
                    buf.remove(at);
                }
                _ => buf.insert(at, interesting[rng.below(interesting.len())]),
            }
        }
        let cut = rng.below(buf.len() + 1);
        for input in [&buf[..], &buf[..cut]] {
            for lim in [&LIMITS, &limits] {
                let mut storage = [Header::EMPTY; 6];
                if let Ok(Some(r)) = parse_request(input, lim, &mut storage) {
                    assert!(r.head_len <= input.len());
                    assert!(r.head_len <= lim.max_head);
                    assert!(r.headers.len() <= lim.max_headers);
                    assert!(
                        r.target.starts_with(b"/")
                            || &*r.target == b"*"
                            || r.method == Method::Connect
                    );
                }
            }
        }
    }
}
