//! The response-head parser, for answers that come from an upstream
//! (an application behind brisk): as strict as the request parser,
//! because a proxy that reads an answer differently from its client is
//! where response splitting and desynchronised connections start.
//!
//! Every error is a 502 (Bad Gateway) for the client: nothing of a
//! malformed answer is ever passed on. Refused, beyond what the request
//! parser refuses in a head: a status line that is not
//! `HTTP/1.x DDD reason`, a status outside 100–599, both Content-Length
//! and Transfer-Encoding (RFC 9112 §6.3 item 3), two Content-Length
//! fields, a transfer coding other than a final `chunked` (which only a
//! close could delimit, RFC 9112 §6.3 item 4: brisk does not guess),
//! and obs-fold (§5.2 allows a proxy to refuse it with 502).

use super::fields::Semantics;
use super::{field_lines, find_line_end, parse_version, Header, Limits, LineEnd, ParseError};
use crate::http::{Status, Version};

/// How the body of an answer is delimited (RFC 9112 §6.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResponseFraming {
    /// No body: an answer to HEAD, a 1xx, 204 or 304 (§6.3 item 1),
    /// whatever its fields say.
    None,
    /// `Content-Length: n`.
    Length(u64),
    /// `Transfer-Encoding: chunked`.
    Chunked,
    /// Neither: the body ends when the upstream closes (§6.3 item 8);
    /// the connection cannot be reused.
    Close,
}

/// A parsed response head, borrowed from the input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResponseHead<'a> {
    /// The status code (100–599).
    pub status: u16,
    /// The reason phrase (possibly empty; for logs only, RFC 9112 §4).
    pub reason: &'a [u8],
    /// The upstream's protocol version.
    pub version: Version,
    /// Bytes of the input taken by the head, its final CRLF included.
    pub head_len: usize,
    /// How the body that follows is delimited.
    pub framing: ResponseFraming,
    /// An answer to HEAD: the `Content-Length` the upstream gave, the
    /// length a GET would have had (RFC 9110 §8.6), passed on as it is.
    pub head_length: Option<u64>,
    /// Whether the upstream connection may carry another request after
    /// this answer's body.
    pub keep_alive: bool,
}

/// An error in an upstream's answer: 502, with what was wrong for the
/// error log.
const fn bad(reason: &'static str) -> ParseError {
    ParseError {
        status: Status::BAD_GATEWAY,
        reason,
    }
}

/// The request parser's verdict on a line or field, as an upstream's
/// error: the same reason, status 502, and "request" not named.
fn upstream(e: ParseError) -> ParseError {
    bad(match e.reason {
        "bare LF in request head" => "bare LF in upstream head",
        "bare CR in request head" => "bare CR in upstream head",
        "obsolete line folding" => "obsolete line folding in upstream head",
        "request head too large" => "upstream head too large",
        "too many header fields" => "too many header fields in upstream head",
        "Transfer-Encoding in an HTTP/1.0 request" => "Transfer-Encoding in an HTTP/1.0 answer",
        reason => reason,
    })
}

/// Parses the response head at the start of `buf`, the answer to a
/// request whose method was HEAD if `head_request`, handing each field
/// to `on_field` in order (at most `limits.max_headers`; fields handed
/// out before an error or an incomplete head are to be forgotten).
/// `Ok(None)`: incomplete and within limits. An interim answer (1xx) is
/// returned like any other: its caller reads the next head after it.
pub fn parse_response<'a>(
    buf: &'a [u8],
    limits: &Limits,
    head_request: bool,
    on_field: &mut dyn FnMut(Header<'a>),
) -> Result<Option<ResponseHead<'a>>, ParseError> {
    let too_large = || bad("upstream head too large");
    let (line, next) = match find_line_end(buf, 0).map_err(upstream)? {
        LineEnd::Complete { end, next } => (&buf[..end], next),
        LineEnd::Partial { end } if end > limits.max_request_line => return Err(too_large()),
        LineEnd::Partial { end } => {
            status_line(&buf[..end], false)?;
            return Ok(None);
        }
    };
    if line.len() > limits.max_request_line {
        return Err(too_large());
    }
    let Some((version, status, reason)) = status_line(line, true)? else {
        return Err(bad("malformed upstream status line"));
    };

    let mut sem = Semantics::default();
    let fields = field_lines(buf, next, limits, usize::MAX, |field| {
        sem.apply_response(&field, version)?;
        on_field(field);
        Ok(())
    });
    let Some(head_len) = fields.map_err(upstream)? else {
        return Ok(None);
    };
    if sem.te_present && (sem.te_other || !sem.te_chunked) {
        return Err(bad("upstream transfer coding other than chunked"));
    }
    let framing = if head_request || status < 200 || status == 204 || status == 304 {
        ResponseFraming::None
    } else if sem.te_chunked {
        ResponseFraming::Chunked
    } else if let Some(n) = sem.content_length {
        ResponseFraming::Length(n)
    } else {
        ResponseFraming::Close
    };
    let head_length = sem
        .content_length
        .filter(|_| head_request && (200..300).contains(&status) && status != 204);
    let keep_alive = framing != ResponseFraming::Close
        && !sem.conn_close
        && (version == Version::Http11 || sem.conn_keep_alive);
    Ok(Some(ResponseHead {
        status,
        reason,
        version,
        head_len,
        framing,
        head_length,
        keep_alive,
    }))
}

/// Checks `HTTP/1.x SP DDD [SP reason]` (RFC 9112 §4). With `complete ==
/// false` only the prefix is checked, and `Ok(None)` means "fine so far".
/// The space after the code is required by the grammar but missing from
/// some servers' `HTTP/1.1 200` lines: it is accepted when nothing
/// follows.
#[allow(clippy::type_complexity)]
fn status_line(line: &[u8], complete: bool) -> Result<Option<(Version, u16, &[u8])>, ParseError> {
    let version_part = &line[..line.len().min(8)];
    let version = match parse_version(version_part, complete && line.len() >= 8) {
        Ok(Some(v)) => v,
        Ok(None) => return Ok(None),
        Err(_) => return Err(bad("upstream answer is not HTTP/1.x")),
    };
    let rest = &line[8..];
    let code_ok = |i: usize, b: u8| match i {
        0 => b == b' ',
        1 => (b'1'..=b'5').contains(&b),
        2 | 3 => b.is_ascii_digit(),
        _ => true,
    };
    if let Some((i, _)) = rest
        .iter()
        .take(4)
        .enumerate()
        .find(|&(i, &b)| !code_ok(i, b))
    {
        return Err(bad(if i == 0 {
            "malformed upstream status line"
        } else {
            "upstream status is not a code from 100 to 599"
        }));
    }
    if rest.len() < 4 {
        return if complete {
            Err(bad("malformed upstream status line"))
        } else {
            Ok(None)
        };
    }
    let status = rest[1..4]
        .iter()
        .fold(0u16, |n, &d| n * 10 + u16::from(d - b'0'));
    let reason = match rest.get(4) {
        None => b"".as_slice(),
        Some(b' ') => &rest[5..],
        Some(_) => return Err(bad("malformed upstream status line")),
    };
    // reason-phrase = *( HTAB / SP / VCHAR / obs-text )
    if reason
        .iter()
        .any(|&b| b != b'\t' && (b < 0x20 || b == 0x7f))
    {
        return Err(bad("control character in upstream reason phrase"));
    }
    Ok(complete.then_some((version, status, reason)))
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMITS: Limits = Limits {
        max_request_line: 256,
        max_head: 1024,
        max_headers: 8,
    };

    fn parse(buf: &[u8], head: bool) -> Result<Option<(ResponseHead<'_>, usize)>, &'static str> {
        let mut fields = 0;
        parse_response(buf, &LIMITS, head, &mut |_| fields += 1)
            .map(|h| h.map(|h| (h, fields)))
            .map_err(|e| {
                assert_eq!(e.status, Status::BAD_GATEWAY);
                e.reason
            })
    }

    fn framing(buf: &[u8]) -> ResponseFraming {
        parse(buf, false).unwrap().unwrap().0.framing
    }

    #[test]
    fn a_plain_answer_is_read_with_its_fields() {
        let buf = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-A: b\r\n\r\nhello";
        let (head, fields) = parse(buf, false).unwrap().unwrap();
        assert_eq!(
            head,
            ResponseHead {
                status: 200,
                reason: b"OK",
                version: Version::Http11,
                head_len: buf.len() - 5,
                framing: ResponseFraming::Length(5),
                head_length: None,
                keep_alive: true,
            }
        );
        assert_eq!(fields, 2);
    }

    #[test]
    fn an_answer_to_head_keeps_its_length_but_no_body() {
        fn head(buf: &[u8], head_request: bool) -> (ResponseFraming, Option<u64>) {
            let h = parse(buf, head_request).unwrap().unwrap().0;
            (h.framing, h.head_length)
        }
        let none = ResponseFraming::None;
        let ok = b"HTTP/1.1 200 OK\r\nContent-Length: 12345\r\n\r\n";
        assert_eq!(head(ok, true), (none, Some(12345)));
        assert_eq!(head(ok, false), (ResponseFraming::Length(12345), None));
        let not_modified = b"HTTP/1.1 304 Not Modified\r\nContent-Length: 12345\r\n\r\n";
        assert_eq!(head(not_modified, true), (none, None));
        let chunked = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
        assert_eq!(head(chunked, true), (none, None));
    }

    #[test]
    fn every_prefix_of_a_valid_head_is_incomplete() {
        let buf = b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n";
        for n in 0..buf.len() {
            assert_eq!(parse(&buf[..n], false), Ok(None), "{n} bytes");
        }
        assert_eq!(framing(buf), ResponseFraming::Length(0));
    }

    #[test]
    fn framing_follows_rfc_9112_section_6_3() {
        assert_eq!(framing(b"HTTP/1.1 200 OK\r\n\r\n"), ResponseFraming::Close);
        assert_eq!(
            framing(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"),
            ResponseFraming::Chunked
        );
        for status in ["204", "304", "100", "101", "103"] {
            let buf = format!("HTTP/1.1 {status} X\r\nContent-Length: 9\r\n\r\n");
            assert_eq!(framing(buf.as_bytes()), ResponseFraming::None, "{status}");
        }
        let buf = b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n";
        assert_eq!(
            parse(buf, true).unwrap().unwrap().0.framing,
            ResponseFraming::None
        );
    }

    #[test]
    fn keep_alive_is_what_the_version_and_connection_say() {
        let ka = |buf: &[u8]| parse(buf, false).unwrap().unwrap().0.keep_alive;
        assert!(ka(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"));
        assert!(!ka(
            b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"
        ));
        assert!(!ka(b"HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n"));
        assert!(ka(
            b"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n"
        ));
        // A body delimited by the close leaves nothing to reuse.
        assert!(!ka(b"HTTP/1.1 200 OK\r\n\r\n"));
    }

    #[test]
    fn a_status_line_without_reason_is_accepted() {
        let (head, _) = parse(b"HTTP/1.1 200\r\nContent-Length: 0\r\n\r\n", false)
            .unwrap()
            .unwrap();
        assert_eq!((head.status, head.reason), (200, b"".as_slice()));
        let (head, _) = parse(b"HTTP/1.1 503 \r\n\r\n", false).unwrap().unwrap();
        assert_eq!((head.status, head.reason), (503, b"".as_slice()));
    }

    #[test]
    fn ambiguous_or_malformed_answers_are_refused() {
        let cases: &[(&[u8], &str)] = &[
            (
                b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n",
                "both Content-Length and Transfer-Encoding",
            ),
            (
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n",
                "both Content-Length and Transfer-Encoding",
            ),
            (
                b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\n",
                "more than one Content-Length",
            ),
            (
                b"HTTP/1.1 200 OK\r\nContent-Length: 3x\r\n\r\n",
                "invalid Content-Length",
            ),
            (
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n",
                "upstream transfer coding other than chunked",
            ),
            (
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, gzip\r\n\r\n",
                "transfer coding after chunked",
            ),
            (
                b"HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
                "Transfer-Encoding in an HTTP/1.0 answer",
            ),
            (
                b"HTTP/1.1 200 OK\r\nX: a\r\n b\r\n\r\n",
                "obsolete line folding in upstream head",
            ),
            (b"HTTP/1.1 200 OK\nX: a\r\n\r\n", "bare LF in upstream head"),
            (
                b"HTTP/1.1 200 OK\r\nX: a\rb\r\n\r\n",
                "bare CR in upstream head",
            ),
            (
                b"HTTP/1.1 200 OK\r\nX : a\r\n\r\n",
                "whitespace between header name and colon",
            ),
            (
                b"HTTP/1.1 200 OK\r\nX: a\x00\r\n\r\n",
                "invalid character in header value",
            ),
            (
                b"HTTP/1.1 200 O\x01K\r\n\r\n",
                "control character in upstream reason phrase",
            ),
            (
                b"HTTP/1.1 600 Odd\r\n\r\n",
                "upstream status is not a code from 100 to 599",
            ),
            (
                b"HTTP/1.1 20 OK\r\n\r\n",
                "upstream status is not a code from 100 to 599",
            ),
            (
                b"HTTP/1.1 2000 OK\r\n\r\n",
                "malformed upstream status line",
            ),
            (
                b"HTTP/1.1  200 OK\r\n\r\n",
                "upstream status is not a code from 100 to 599",
            ),
            (b"HTTP/2 200\r\n\r\n", "upstream answer is not HTTP/1.x"),
            (b"ICY 200 OK\r\n\r\n", "upstream answer is not HTTP/1.x"),
            (b"HTTP/1.1\r\n\r\n", "malformed upstream status line"),
        ];
        for (buf, reason) in cases {
            assert_eq!(
                parse(buf, false),
                Err(*reason),
                "{}",
                String::from_utf8_lossy(buf)
            );
        }
    }

    #[test]
    fn a_bad_status_line_is_refused_before_it_ends() {
        assert_eq!(parse(b"ICY", false), Err("upstream answer is not HTTP/1.x"));
        assert_eq!(
            parse(b"HTTP/1.1 7", false),
            Err("upstream status is not a code from 100 to 599")
        );
    }

    #[test]
    fn limits_bound_the_head() {
        let long = [b"HTTP/1.1 200 ".as_slice(), &[b'x'; 300]].concat();
        assert_eq!(parse(&long, false), Err("upstream head too large"));
        let mut many = b"HTTP/1.1 200 OK\r\n".to_vec();
        for _ in 0..9 {
            many.extend_from_slice(b"X: y\r\n");
        }
        many.extend_from_slice(b"\r\n");
        assert_eq!(
            parse(&many, false),
            Err("too many header fields in upstream head")
        );
        let mut big = b"HTTP/1.1 200 OK\r\nX: ".to_vec();
        big.extend_from_slice(&[b'y'; 1100]);
        assert_eq!(parse(&big, false), Err("upstream head too large"));
    }
}
