//! An answer's head as an HPACK block: the same [`Head`] the HTTP/1.1
//! writer takes (status, the handler's header lines, the framing) and
//! the worker's [`Stamp`] (Server, Date), encoded straight into the
//! block through the connection's encoder (fields that repeat become
//! table indexes), without an HTTP/1.1 text in between. Each handler
//! line goes in with its name in lower case (RFC 9113 §8.2.1), less
//! those HTTP/2 forbids (§8.2.2: Connection and the fields it names);
//! the length is `content-length`, and nothing else frames the body.

use crate::h2::hpack;
use crate::http::grammar::{find_byte, trim_ows};
use crate::http::response::{Framing, Head, Stamp};
use crate::http::u64_digits;

/// Appends to `block` the HPACK encoding, by the connection's encoder
/// `enc`, of `head` stamped with `stamp`; `name` is scratch space. The
/// block must be sent before any other the encoder makes.
pub fn encode(
    head: &Head<'_>,
    stamp: &Stamp<'_>,
    block: &mut Vec<u8>,
    name: &mut Vec<u8>,
    enc: &mut hpack::Encoder,
) {
    // (An answer with its own Date, among its lines, keeps the table's
    // second: the stamp's date is what ages it.)
    match stamp.date {
        b"" => enc.begin(block),
        date => enc.begin_at(block, date),
    }
    // Everything but the length encodes as it did for the last answer
    // made of the same parts while the table is the same (the same file
    // asked for again within the second): copied, a few bytes.
    let status = head.status.to_be_bytes();
    let key: [&[u8]; 4] = [&status, stamp.server, stamp.date, head.headers];
    if !enc.repeat(&key, block) {
        let mark = enc.mark(block);
        encode_fields(head, stamp, block, name, enc);
        enc.remember(&key, mark, block);
    }
    if let Framing::Length(n) = head.framing {
        enc.field(b"content-length", u64_digits(n, &mut [0; 20]), block);
    }
}

/// The fields of `head` and `stamp` but the length, encoded.
fn encode_fields(
    head: &Head<'_>,
    stamp: &Stamp<'_>,
    block: &mut Vec<u8>,
    name: &mut Vec<u8>,
    enc: &mut hpack::Encoder,
) {
    hpack::encode_status(head.status, block);
    // `server_header = ""` hides the software name entirely.
    if !stamp.server.is_empty() {
        enc.field(b"server", stamp.server, block);
    }
    if !stamp.date.is_empty() {
        enc.field(b"date", stamp.date, block);
    }
    // (The same for every answer of a connection: the block cached by
    // `enc.remember` stays right.)
    #[cfg(feature = "http3")]
    if !stamp.alt_svc.is_empty() {
        enc.field(b"alt-svc", stamp.alt_svc, block);
    }
    encode_lines(head.headers, block, name, enc);
}

/// Appends to `block` the HPACK encoding of an interim answer's head
/// (RFC 9113 §8.1): its status and field `lines` (`100 Continue` has
/// none; an upstream's `103 Early Hints` its `Link` fields).
pub fn encode_interim(
    (status, lines): (u16, &[u8]),
    block: &mut Vec<u8>,
    name: &mut Vec<u8>,
    enc: &mut hpack::Encoder,
) {
    enc.begin(block);
    hpack::encode_status(status, block);
    encode_lines(lines, block, name, enc);
}

/// Appends to `block` the HPACK encoding of a trailer section's field
/// `lines` (`Name: value` CRLF each), as a stream's last HEADERS
/// (RFC 9113 §8.1): the same lines as a head's, with no pseudo-field.
pub fn encode_trailers(
    lines: &[u8],
    block: &mut Vec<u8>,
    name: &mut Vec<u8>,
    enc: &mut hpack::Encoder,
) {
    enc.begin(block);
    encode_lines(lines, block, name, enc);
}

/// Each of the field `lines` (`Name: value` CRLF each), its name in
/// lower case, less those HTTP/2 forbids, encoded.
fn encode_lines(lines: &[u8], block: &mut Vec<u8>, name: &mut Vec<u8>, enc: &mut hpack::Encoder) {
    each_field(lines, name, &mut |n, v| enc.field(n, v, block));
}

/// Calls `f` with each of the field `lines` (`Name: value` CRLF each),
/// its name in lower case (in `name`, scratch space) and its value
/// trimmed, less the connection-specific fields HTTP/2 and HTTP/3 forbid
/// (RFC 9113 §8.2.2, RFC 9114 §4.2): `TE` too, which only a request may
/// carry there (and then only `trailers`), so never an answer (a servlet
/// could set it).
pub fn each_field(lines: &[u8], name: &mut Vec<u8>, f: &mut dyn FnMut(&[u8], &[u8])) {
    let mut rest = lines;
    while !rest.is_empty() {
        let end = find_byte(rest, b'\n').unwrap_or(rest.len());
        let line = &rest[..end];
        rest = rest.get(end + 1..).unwrap_or_default();
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let Some(colon) = find_byte(line, b':') else {
            continue;
        };
        name.clear();
        name.extend(line[..colon].iter().map(u8::to_ascii_lowercase));
        if matches!(
            &name[..],
            b"connection"
                | b"keep-alive"
                | b"proxy-connection"
                | b"te"
                | b"transfer-encoding"
                | b"upgrade"
        ) {
            continue;
        }
        f(name, trim_ows(&line[colon + 1..]));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::response::Connection;

    /// The fields `head` and `stamp` encode to, decoded back.
    fn fields(head: &Head<'_>, stamp: &Stamp<'_>) -> Vec<(String, String)> {
        let (mut block, mut name) = (Vec::new(), Vec::new());
        encode(
            head,
            stamp,
            &mut block,
            &mut name,
            &mut hpack::Encoder::new(),
        );
        let block = &block[..];
        let mut fields = Vec::new();
        hpack::Decoder::new(4096)
            .decode(block, 1 << 20, &mut |n, v| {
                fields.push((
                    String::from_utf8(n.to_vec()).unwrap(),
                    String::from_utf8(v.to_vec()).unwrap(),
                ))
            })
            .unwrap();
        fields
    }

    #[test]
    fn trailers_become_a_block_without_pseudo_fields() {
        let (mut block, mut name) = (Vec::new(), Vec::new());
        let mut enc = hpack::Encoder::new();
        let lines = b"Grpc-Status: 0\r\ngrpc-message:  ok \r\nConnection: x\r\n";
        encode_trailers(lines, &mut block, &mut name, &mut enc);
        let mut fields = Vec::new();
        hpack::Decoder::new(4096)
            .decode(&block, 1 << 20, &mut |n, v| {
                fields.push(format!(
                    "{}: {}",
                    String::from_utf8_lossy(n),
                    String::from_utf8_lossy(v)
                ))
            })
            .unwrap();
        assert_eq!(fields, ["grpc-status: 0", "grpc-message: ok"]);
    }

    #[test]
    fn a_head_becomes_a_block() {
        let head = Head {
            status: 206,
            reason: b"Partial Content",
            headers: b"Content-Type: text/plain\r\nConnection: close\r\nX-Long-Name:  spaced \r\n",
            framing: Framing::Length(5),
            connection: Connection::Close,
        };
        let stamp = Stamp {
            server: b"brisk",
            date: b"Mon, 23 Nov 2026 15:40:12 GMT",
            #[cfg(feature = "http3")]
            alt_svc: b"",
        };
        let got = fields(&head, &stamp);
        let got: Vec<(&str, &str)> = got.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
        assert_eq!(
            got,
            [
                (":status", "206"),
                ("server", "brisk"),
                ("date", "Mon, 23 Nov 2026 15:40:12 GMT"),
                ("content-type", "text/plain"),
                ("x-long-name", "spaced"),
                ("content-length", "5")
            ]
        );
        // No server field when it is hidden; no length on a bodiless status.
        let head = Head {
            status: 304,
            headers: b"",
            framing: Framing::Bodiless,
            ..head
        };
        let stamp = Stamp {
            server: b"",
            ..stamp
        };
        let got = fields(&head, &stamp);
        assert_eq!(got.len(), 2, "{got:?}");
        assert_eq!(got[1].0, "date");
    }

    #[test]
    fn a_repeated_head_is_copied_and_decodes_the_same() {
        let (mut enc, mut dec) = (hpack::Encoder::new(), hpack::Decoder::new(4096));
        let (mut block, mut name) = (Vec::new(), Vec::new());
        let stamp = Stamp {
            server: b"brisk",
            date: b"Mon, 23 Nov 2026 15:40:12 GMT",
            #[cfg(feature = "http3")]
            alt_svc: b"",
        };
        let head = |headers: &'static [u8], n| Head {
            status: 200,
            reason: b"",
            headers,
            framing: Framing::Length(n),
            connection: Connection::Default,
        };
        let a: &[u8] = b"Content-Type: text/html\r\nETag: \"1-a\"\r\n";
        let b: &[u8] = b"Content-Type: text/html\r\nETag: \"2-b\"\r\n";
        let mut blocks = Vec::new();
        // a (entries enter), a (indexes: kept), a (copied), b (its etag
        // enters), a (the table changed: encoded again), 304 for b.
        for (headers, n, status) in [
            (a, 5, 200),
            (a, 7, 200),
            (a, 9, 200),
            (b, 5, 200),
            (a, 5, 200),
            (b, 0, 304),
        ] {
            block.clear();
            let h = Head {
                status,
                ..head(headers, n)
            };
            encode(&h, &stamp, &mut block, &mut name, &mut enc);
            let mut got = Vec::new();
            dec.decode(&block, 1 << 20, &mut |n, v| {
                got.push(format!(
                    "{}: {}",
                    String::from_utf8_lossy(n),
                    String::from_utf8_lossy(v)
                ))
            })
            .unwrap();
            let etag = if headers == a { "\"1-a\"" } else { "\"2-b\"" };
            assert_eq!(
                got,
                [
                    format!(":status: {status}"),
                    "server: brisk".into(),
                    "date: Mon, 23 Nov 2026 15:40:12 GMT".into(),
                    "content-type: text/html".into(),
                    format!("etag: {etag}"),
                    format!("content-length: {n}"),
                ]
            );
            blocks.push(block.clone());
        }
        // The third is the second but its length: one-byte indexes, and
        // content-length as a literal (4 bytes).
        assert_eq!(blocks[1][..5], blocks[2][..5]);
        assert_eq!(blocks[2].len(), 5 + 4, "{:?}", blocks[2]);
    }
}
