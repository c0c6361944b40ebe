//! An HTTP/2 request head as the `OwnedRequest` every handler reads: it
//! is written out as an HTTP/1.1 head and parsed by the same strict
//! parser, so the path is decoded and checked once, the fields the
//! server reads are found, and the same limits apply (a head over
//! `limits.max_header_bytes` is 431 either way); then it is made an
//! HTTP/2 request again (`OwnedRequest::as_http2`).
//!
//! RFC 9113 §8.3.1: `:authority` is the host, ahead of any `host`
//! field; §8.2.3: `cookie` fields, which HTTP/2 lets a client split,
//! are joined with "; " as HTTP/1.1 wants them.
//!
//! An extended CONNECT for a WebSocket (RFC 8441 §5: `:method CONNECT`,
//! `:protocol websocket`) becomes the HTTP/1.1 handshake it stands for
//! (RFC 6455 §4.1): `GET :path` with `Connection: upgrade`, `Upgrade:
//! websocket` and a `Sec-WebSocket-Key` of its own (HTTP/2 has none); its
//! stream's DATA are the tunnel's bytes, no body. Only a reverse proxy
//! rule takes it; elsewhere it is answered 501 as any handshake. Another
//! protocol is answered 501 at once.

use crate::ascii::IgnoreCase;
use base64ct::{Base64, Encoding};

use crate::h2::Request;
use crate::http::parse::{BodyFraming, Limits, ParseError};
use crate::http::request::OwnedRequest;
use crate::http::Status;

/// Fills `req` from the HTTP/2 request `r` (`end_stream`: it has no
/// body), writing the head in `head`.
pub fn fill(
    req: &mut OwnedRequest,
    r: &Request,
    end_stream: bool,
    limits: &Limits,
    head: &mut Vec<u8>,
) -> Result<(), ParseError> {
    head.clear();
    // (Over HTTP/3: over the field section size, and not read. Over
    // HTTP/2 such a head was answered already.)
    if r.too_large() {
        return Err(ParseError {
            status: Status::HEADER_FIELDS_TOO_LARGE,
            reason: "field section over the size limit",
        });
    }
    let websocket = match r.protocol() {
        None => false,
        Some(p) if p.eq_ignore_case(b"websocket") => true,
        Some(_) => {
            return Err(ParseError {
                status: Status::NOT_IMPLEMENTED,
                reason: "extended CONNECT for a protocol other than websocket",
            })
        }
    };
    match r.method() {
        b"CONNECT" if websocket => head.extend_from_slice(b"GET "),
        m => {
            head.extend_from_slice(m);
            head.push(b' ');
        }
    }
    match r.method() {
        b"CONNECT" if !websocket => head.extend_from_slice(r.authority().unwrap_or_default()),
        // RFC 9113 §8.3.1 (RFC 9114 §4.3.1): `:path` is an absolute path
        // and query, or `*` for OPTIONS. Written into the request line,
        // `http://other.example/` would be read as HTTP/1.1's
        // absolute-form, whose host wins over :authority: the request
        // would go to a site other than the one it names (nginx: 400).
        _ if !(r.path().starts_with(b"/") || r.method() == b"OPTIONS" && r.path() == b"*") => {
            return Err(ParseError {
                status: Status::BAD_REQUEST,
                reason: ":path neither an absolute path nor * for OPTIONS",
            });
        }
        _ => head.extend_from_slice(r.path()),
    }
    head.extend_from_slice(b" HTTP/1.1\r\n");
    let authority = r.authority();
    if let Some(a) = authority {
        // RFC 9113 §8.3.1: a Host that names another entity than
        // :authority makes the request malformed (nginx: 400); read
        // leniently, the site :authority picks and the one a program
        // behind a proxy reads from Host could differ.
        let other = r
            .fields()
            .any(|(n, v)| n == b"host" && !same_authority(v, a, r.scheme()));
        if other {
            return Err(ParseError {
                status: Status::BAD_REQUEST,
                reason: "a Host field naming another authority than :authority",
            });
        }
    }
    match authority {
        Some(a) => field(head, b"host", a),
        // HTTP/2 lets a request have no authority at all (§8.3.1), where
        // HTTP/1.1 wants Host, if empty (RFC 9112 §3.2).
        None if !r.fields().any(|(n, _)| n == b"host") => field(head, b"host", b""),
        None => {}
    }
    let mut length_written = false;
    for (name, value) in r.fields() {
        match name {
            b"host" if authority.is_some() => continue,
            // Joined below. (`te`, which the codec let through only as
            // `trailers`, stays: the client takes trailers, RFC 9110
            // §10.1.4, which a proxied request tells its upstream.)
            b"cookie" => continue,
            // (Repeats agree: the protocol checked.)
            b"content-length" if length_written => continue,
            b"content-length" => length_written = true,
            _ => {}
        }
        field(head, name, value);
    }
    let mut cookies = r.fields().filter(|(n, _)| *n == b"cookie").peekable();
    if cookies.peek().is_some() {
        head.extend_from_slice(b"cookie: ");
        for (i, (_, v)) in cookies.enumerate() {
            if i > 0 {
                head.extend_from_slice(b"; ");
            }
            head.extend_from_slice(v);
        }
        head.extend_from_slice(b"\r\n");
    }
    if websocket {
        head.extend_from_slice(b"connection: upgrade\r\nupgrade: websocket\r\n");
        if !r.fields().any(|(n, _)| n == b"sec-websocket-key") {
            // (16 random bytes, RFC 6455 §4.1: 24 in base64.)
            let mut key = [0u8; 24];
            let nonce = crate::access::auth::random_secret();
            if let Ok(key) = Base64::encode(&nonce, &mut key) {
                field(head, b"sec-websocket-key", key.as_bytes());
            }
        }
    }
    // The body is framed by the protocol: the head says nothing of it but
    // a content-length the client sent (RFC 9113 §8.1.1: optional).
    let body = match (end_stream, r.content_length()) {
        _ if websocket => BodyFraming::None,
        (true, _) => BodyFraming::None,
        (false, Some(n)) => BodyFraming::Length(n),
        (false, None) => BodyFraming::Chunked,
    };
    head.extend_from_slice(b"\r\n");
    match req.parse(head, limits)? {
        Some(_) => {
            req.as_http2(body);
            Ok(())
        }
        None => Err(ParseError::bad_request("incomplete request head")),
    }
}

fn field(head: &mut Vec<u8>, name: &[u8], value: &[u8]) {
    head.extend_from_slice(name);
    head.extend_from_slice(b": ");
    head.extend_from_slice(value);
    head.extend_from_slice(b"\r\n");
}

/// Whether a `Host` value and `:authority` name the same authority once
/// normalised (RFC 9113 §8.3.1 asks for RFC 3986 §6.2's): the case of
/// the host (§6.2.2.1), and a port that is `scheme`'s default or empty
/// (§6.2.3: `main.test:80` is `main.test` over http).
fn same_authority(host: &[u8], authority: &[u8], scheme: &[u8]) -> bool {
    let default: &[u8] = match scheme {
        b"http" => b":80",
        b"https" => b":443",
        _ => b":",
    };
    let bare = |a: &'_ [u8]| -> usize {
        let a = a.strip_suffix(default).unwrap_or(a);
        a.strip_suffix(b":").unwrap_or(a).len()
    };
    let (host, authority) = (host.trim_ascii(), authority);
    let (h, a) = (&host[..bare(host)], &authority[..bare(authority)]);
    h.eq_ignore_case(a)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::h2::hpack;

    /// The request block of `fields`, decoded; whether it is malformed.
    fn decoded(fields: &[(&str, &str)]) -> (Request, Option<&'static str>) {
        let mut block = Vec::new();
        for (n, v) in fields {
            hpack::encode_field(n.as_bytes(), v.as_bytes(), &mut block);
        }
        let mut r = Request::default();
        r.clear(1 << 16, false);
        hpack::Decoder::new(4096)
            .decode(&block, 1 << 20, &mut |n, v| r.field(n, v))
            .unwrap();
        let malformed = r.finish();
        (r, malformed)
    }

    fn h2_request(fields: &[(&str, &str)]) -> Request {
        let (r, malformed) = decoded(fields);
        assert_eq!(malformed, None);
        r
    }

    const LIMITS: Limits = Limits {
        max_request_line: 8192,
        max_head: 8192,
        max_headers: 100,
    };

    #[test]
    fn a_scheme_other_than_http_or_https_is_malformed() {
        for (scheme, malformed) in [
            ("https", None),
            ("http", None),
            ("HTTPS", None),
            ("ftp", Some("a :scheme other than http or https")),
            ("", Some("a :scheme other than http or https")),
            ("https2", Some("a :scheme other than http or https")),
        ] {
            let fields = [
                (":method", "GET"),
                (":scheme", scheme),
                (":path", "/"),
                (":authority", "a.test"),
            ];
            assert_eq!(decoded(&fields).1, malformed, "{scheme:?}");
        }
    }

    #[test]
    fn an_http2_request_becomes_an_owned_request() {
        let r = h2_request(&[
            (":method", "POST"),
            (":scheme", "https"),
            (":path", "/up%20load?x=1"),
            (":authority", "example.org"),
            ("host", "Example.ORG"),
            ("cookie", "a=1"),
            ("user-agent", "t"),
            ("cookie", "b=2"),
        ]);
        let (mut req, mut head) = (OwnedRequest::default(), Vec::new());
        fill(&mut req, &r, false, &LIMITS, &mut head).unwrap();
        assert_eq!(req.version(), crate::http::Version::Http2);
        assert_eq!(req.method_token(), b"POST");
        assert_eq!(req.path(), Ok(&b"/up load"[..]));
        assert_eq!(req.host(), Some(&b"example.org"[..]), ":authority wins");
        assert_eq!(
            req.header("cookie"),
            Some(&b"a=1; b=2"[..]),
            "cookies joined"
        );
        assert_eq!(req.body(), BodyFraming::Chunked, "a body of unknown length");
        assert_eq!(req.header("transfer-encoding"), None);
        assert!(req.keep_alive() && !req.expect_continue());
        // A Host naming another authority: malformed (RFC 9113 §8.3.1).
        let r = h2_request(&[
            (":method", "GET"),
            (":scheme", "https"),
            (":path", "/"),
            (":authority", "main.test"),
            ("host", "a.test"),
        ]);
        let e = fill(&mut req, &r, true, &LIMITS, &mut head).unwrap_err();
        assert_eq!(e.status, Status::BAD_REQUEST);
        // The same authority however spelt (RFC 3986 §6.2): the case, a
        // default or empty port; another port is another authority.
        for (scheme, authority, host, same) in [
            ("http", "main.test:80", "main.test", true),
            ("http", "Main.Test", "main.test:", true),
            ("https", "main.test", "MAIN.test:443", true),
            ("https", "[::1]:443", "[::1]", true),
            ("http", "main.test:443", "main.test", false),
            ("https", "main.test:8443", "main.test", false),
            ("http", "main.test:8", "main.test", false),
        ] {
            let r = h2_request(&[
                (":method", "GET"),
                (":scheme", scheme),
                (":path", "/"),
                (":authority", authority),
                ("host", host),
            ]);
            let filled = fill(&mut req, &r, true, &LIMITS, &mut head);
            assert_eq!(filled.is_ok(), same, "{scheme} {authority} {host}");
        }
        // A :path that is no absolute path (§8.3.1) is malformed too: as
        // HTTP/1.1's absolute-form, its host would win over :authority.
        for (method, path) in [("GET", "http://a.test/"), ("GET", "*"), ("OPTIONS", "x")] {
            let r = h2_request(&[
                (":method", method),
                (":scheme", "http"),
                (":path", path),
                (":authority", "main.test"),
            ]);
            let e = fill(&mut req, &r, true, &LIMITS, &mut head).unwrap_err();
            assert_eq!(e.status, Status::BAD_REQUEST, "{method} {path}");
        }
        let r = h2_request(&[
            (":method", "OPTIONS"),
            (":scheme", "http"),
            (":path", "*"),
            (":authority", "main.test"),
        ]);
        fill(&mut req, &r, true, &LIMITS, &mut head).unwrap();
        assert_eq!(req.target(), b"*");
        // With a length, and without a body.
        let r = h2_request(&[
            (":method", "PUT"),
            (":scheme", "http"),
            (":path", "/"),
            ("content-length", "3"),
        ]);
        fill(&mut req, &r, false, &LIMITS, &mut head).unwrap();
        assert_eq!(req.body(), BodyFraming::Length(3));
        let r = h2_request(&[(":method", "GET"), (":scheme", "http"), (":path", "/../x")]);
        fill(&mut req, &r, true, &LIMITS, &mut head).unwrap();
        assert_eq!(req.body(), BodyFraming::None);
        assert_eq!(req.host(), Some(&b""[..]), "no authority at all is allowed");
        assert!(req.path().is_err(), "the path is checked as any other");
        // A head past the HTTP/1.1 limits is refused the same way.
        let big = "v".repeat(9000);
        let r = h2_request(&[
            (":method", "GET"),
            (":scheme", "http"),
            (":path", "/"),
            ("x-big", &big),
        ]);
        let e = fill(&mut req, &r, true, &LIMITS, &mut head).unwrap_err();
        assert_eq!(e.status.0, 431);
    }

    #[test]
    fn a_post_whose_stream_ends_with_its_head_has_an_empty_body() {
        // END_STREAM on the HEADERS: a body known to be empty, with or
        // without content-length (RFC 9113 §8.1.1). It used to be written
        // as an HTTP/1.1 POST without a length, and answered 411.
        let (mut req, mut head) = (OwnedRequest::default(), Vec::new());
        for method in ["POST", "PUT", "PATCH", "DELETE"] {
            let r = h2_request(&[
                (":method", method),
                (":scheme", "https"),
                (":path", "/form"),
                (":authority", "example.org"),
            ]);
            fill(&mut req, &r, true, &LIMITS, &mut head).unwrap();
            assert_eq!(req.method_token(), method.as_bytes());
            assert_eq!(req.body(), BodyFraming::None, "{method}");
            assert_eq!(
                req.header("content-length"),
                None,
                "{method}: the field is gone"
            );
        }
        let r = h2_request(&[
            (":method", "POST"),
            (":scheme", "https"),
            (":path", "/form"),
            ("content-length", "0"),
        ]);
        fill(&mut req, &r, true, &LIMITS, &mut head).unwrap();
        assert_eq!(req.body(), BodyFraming::None);
        assert_eq!(
            req.header("content-length"),
            Some(&b"0"[..]),
            "the client's own stays"
        );
    }

    #[test]
    fn an_extended_connect_for_a_websocket_is_its_http1_handshake() {
        let connect = |protocol: &str| {
            h2_request(&[
                (":method", "CONNECT"),
                (":protocol", protocol),
                (":scheme", "https"),
                (":path", "/chat?room=1"),
                (":authority", "example.org"),
                ("sec-websocket-version", "13"),
            ])
        };
        let (mut req, mut head) = (OwnedRequest::default(), Vec::new());
        fill(&mut req, &connect("websocket"), false, &LIMITS, &mut head).unwrap();
        assert_eq!(req.method_token(), b"GET");
        assert_eq!(req.target(), b"/chat?room=1");
        assert_eq!(req.body(), BodyFraming::None, "its DATA are the tunnel's");
        assert_eq!(req.header("upgrade"), Some(&b"websocket"[..]));
        assert_eq!(req.header("connection"), Some(&b"upgrade"[..]));
        let key = req.header("sec-websocket-key").expect("a key of brisk's");
        assert_eq!((key.len(), &key[22..]), (24, &b"=="[..]));
        let mut again = OwnedRequest::default();
        fill(&mut again, &connect("websocket"), false, &LIMITS, &mut head).unwrap();
        assert_ne!(again.header("sec-websocket-key"), Some(key), "a nonce each");
        let e = fill(&mut req, &connect("connect-udp"), false, &LIMITS, &mut head).unwrap_err();
        assert_eq!(e.status.0, 501);
        // (RFC 8441 §4: `:protocol` only on a CONNECT with all the others.)
        for fields in [
            &[
                (":method", "GET"),
                (":protocol", "websocket"),
                (":scheme", "http"),
                (":path", "/"),
            ][..],
            &[
                (":method", "CONNECT"),
                (":protocol", "websocket"),
                (":authority", "a"),
            ][..],
        ] {
            assert_eq!(decoded(fields).1, Some("malformed extended CONNECT"));
        }
    }
}
