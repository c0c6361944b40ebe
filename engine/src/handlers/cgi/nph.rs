//! The head of an `nph-` script's output (RFC 3875 §5): a whole HTTP/1.x
//! response, status line and fields, which HTTP/1.1 passes on as it is.
//! HTTP/2 cannot carry HTTP/1.1 text, so there the head is read into a
//! [`ReplyHead`] like any script's, with the same checks on each field
//! (a folded line, a control byte, a name that is not a token: 502),
//! and the body follows it: by its Content-Length, in chunked coding
//! (decoded by the engine, [`ReplyHead::chunked`]), or to the end of the
//! output. What HTTP/2 frames by itself or forbids (Connection and the
//! fields it names, Transfer-Encoding) and what the server writes (Date,
//! Server) are dropped, as from any script.

use super::head::{field, head_len, parse_length, parse_status, Lines, DROPPED};
use crate::ascii::IgnoreCase;
use crate::handlers::pipe::ReplyHead;

/// Parses the head at the start of `buf` (at most `max` bytes): `Ok(None)`
/// while it is incomplete, `Err` (the reason, for the error log) when it
/// is not an HTTP/1.x response head.
pub fn parse_nph_head(buf: &[u8], max: usize) -> Result<Option<ReplyHead>, &'static str> {
    let Some(len) = head_len(buf, max)? else {
        return Ok(None);
    };
    let mut fields = Lines::of(buf);
    let first = fields.next().ok_or("nph- output without a status line")?;
    let status_line = first
        .strip_prefix(b"HTTP/1.")
        .filter(|rest| rest.first().is_some_and(u8::is_ascii_digit) && rest.get(1) == Some(&b' '))
        .ok_or("nph- output does not start with an HTTP/1.x status line")?;
    let (status, reason) = parse_status(&status_line[2..])
        .map_err(|_| "nph- status is not a 3-digit code from 200 to 599")?;
    let mut headers = Vec::new();
    let (mut content_length, mut chunked) = (None, false);
    for line in fields {
        let (name, value) = field(line)?;
        if name.eq_ignore_case(b"content-length") {
            let n = parse_length(value)?;
            if content_length.is_some_and(|m| m != n) {
                return Err("nph- Content-Length fields disagree");
            }
            content_length = Some(n);
            continue;
        }
        if name.eq_ignore_case(b"transfer-encoding") {
            if !value.eq_ignore_case(b"chunked") {
                return Err("nph- transfer coding other than chunked");
            }
            chunked = true;
            continue;
        }
        if DROPPED.iter().any(|d| name.eq_ignore_case(d.as_bytes())) {
            continue;
        }
        headers.extend_from_slice(name);
        headers.extend_from_slice(b": ");
        headers.extend_from_slice(value);
        headers.extend_from_slice(b"\r\n");
    }
    Ok(Some(ReplyHead {
        len,
        status,
        reason,
        headers,
        // (RFC 9112 §6.3: chunked coding wins over a Content-Length.)
        content_length: content_length.filter(|_| !chunked),
        chunked,
        own: Default::default(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_nph_head_becomes_a_reply_head() {
        let out = b"HTTP/1.1 201 Created\r\nContent-Type: text/plain\r\nConnection: close\r\nDate: x\r\nContent-Length: 5\r\n\r\nhello";
        let h = parse_nph_head(out, 4096).unwrap().unwrap();
        assert_eq!(
            (h.status, h.reason.as_deref()),
            (201, Some(&b"Created"[..]))
        );
        assert_eq!(h.headers, b"Content-Type: text/plain\r\n");
        assert_eq!((h.content_length, h.chunked), (Some(5), false));
        assert_eq!(&out[h.len..], b"hello");
        let chunked =
            b"HTTP/1.0 200 OK\nTransfer-Encoding: chunked\nContent-Length: 9\n\n5\r\nhello";
        let h = parse_nph_head(chunked, 4096).unwrap().unwrap();
        assert_eq!((h.content_length, h.chunked), (None, true));
        assert_eq!(parse_nph_head(b"HTTP/1.1 200 OK\r\nX: y", 4096), Ok(None));
        for bad in [
            &b"Content-Type: text/plain\r\n\r\n"[..],
            b"HTTP/2 200 OK\r\n\r\n",
            b"HTTP/1.1 100 Continue\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n",
            b"HTTP/1.1 200 OK\r\n folded\r\n\r\n",
        ] {
            assert!(
                parse_nph_head(bad, 4096).is_err(),
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
    }
}
