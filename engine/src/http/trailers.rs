//! Trailer fields passed on (RFC 9110 §6.5): those of a chunked body
//! (RFC 9112 §7.1.2) or of an HTTP/2 stream's trailing HEADERS (RFC 9113
//! §8.1), kept as field lines (`Name: value` CRLF each) and carried to
//! the other side, less the fields a trailer must not hold.

use super::grammar::{find_byte, trim_ows};
use crate::ascii::IgnoreCase;

/// Fields a sender must not put in a trailer section, or that a
/// recipient must not take from one (RFC 9110 §6.5.1): the message's
/// framing, routing, request modifiers (controls, conditionals),
/// authentication, response control data, how the content is to be
/// handled (`Content-*`, and `Trailer` itself), and the hop-by-hop
/// fields (§7.6.1). Lower case; `content-*` and `if-*` are matched as
/// prefixes by [`allowed`].
const NOT_IN_TRAILERS: [&str; 26] = [
    "transfer-encoding",
    "host",
    "cache-control",
    "expect",
    "max-forwards",
    "pragma",
    "range",
    "te",
    "authorization",
    "proxy-authorization",
    "proxy-authenticate",
    "www-authenticate",
    "cookie",
    "set-cookie",
    "age",
    "date",
    "expires",
    "location",
    "retry-after",
    "vary",
    "warning",
    "trailer",
    "connection",
    "keep-alive",
    "proxy-connection",
    "upgrade",
];

/// Whether a field named `name` may pass in a trailer section.
pub fn allowed(name: &[u8]) -> bool {
    let starts = |p: &[u8]| name.len() >= p.len() && name[..p.len()].eq_ignore_case(p);
    !name.is_empty()
        && name[0] != b':'
        && !starts(b"content-")
        && !starts(b"if-")
        && !NOT_IN_TRAILERS
            .iter()
            .any(|n| name.eq_ignore_case(n.as_bytes()))
}

/// Each field line of `lines` (`Name: value`, CRLF or LF ended) as its
/// name and its value without the whitespace around it.
pub fn fields(lines: &[u8]) -> impl Iterator<Item = (&[u8], &[u8])> {
    lines.split(|&b| b == b'\n').filter_map(|line| {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let colon = find_byte(line, b':')?;
        Some((&line[..colon], trim_ows(&line[colon + 1..])))
    })
}

/// Appends to `out` the field lines of `lines` that may pass
/// ([`allowed`]), each as `Name: value` CRLF.
pub fn keep_allowed(lines: &[u8], out: &mut Vec<u8>) {
    keep(lines, out, allowed);
}

/// Appends to `out` the field lines of `lines` whose name `pass`es, each
/// as `Name: value` CRLF.
pub fn keep(lines: &[u8], out: &mut Vec<u8>, pass: impl Fn(&[u8]) -> bool) {
    for (name, value) in fields(lines).filter(|(n, _)| pass(n)) {
        for part in [name, b": ", value, b"\r\n"] {
            out.extend_from_slice(part);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_a_trailer_must_not_hold_are_dropped() {
        let lines = b"grpc-status: 0\r\ngrpc-message:  all good \r\nContent-Length: 5\r\n\
                      content-type: x\r\nHost: evil\r\nTransfer-Encoding: chunked\r\n\
                      Set-Cookie: a=b\r\nAuthorization: x\r\nIf-Match: *\r\nConnection: close\r\n\
                      Trailer: x\r\nX-Checksum: abc\r\n";
        let mut out = Vec::new();
        keep_allowed(lines, &mut out);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "grpc-status: 0\r\ngrpc-message: all good\r\nX-Checksum: abc\r\n"
        );
        assert!(allowed(b"X-Content-Hash") && allowed(b"server-timing"));
        assert!(!allowed(b"") && !allowed(b":status") && !allowed(b"CONTENT-ENCODING"));
    }

    #[test]
    fn no_fields_give_nothing() {
        let mut out = Vec::new();
        keep_allowed(b"", &mut out);
        keep_allowed(b"no colon here\r\n", &mut out);
        assert!(out.is_empty());
        assert_eq!(out.capacity(), 0);
    }
}
