//! An answer's head as an HTTP/3 HEADERS frame: the same [`Head`] the
//! HTTP/1.1 writer and HTTP/2's HPACK take, encoded with QPACK's static
//! table and literals (`crate::h3::qpack`: the server keeps no dynamic
//! table), each handler line with its name in lower case, less the
//! connection-specific fields (RFC 9114 §4.2); the length is
//! `content-length`, and DATA frames carry the body.

use crate::h3::frame::{write_head, DATA, HEADERS};
use crate::h3::qpack;
use crate::http::response::{Framing, Head, Stamp};
use crate::http::u64_digits;
use crate::server::h2::head::each_field;

/// Appends to `out` the HEADERS frame of `head` stamped with `stamp`;
/// `block` and `name` are scratch space.
pub fn encode(
    head: &Head<'_>,
    stamp: &Stamp<'_>,
    out: &mut Vec<u8>,
    block: &mut Vec<u8>,
    name: &mut Vec<u8>,
) {
    block.clear();
    qpack::begin(block);
    qpack::status(head.status, block);
    if !stamp.server.is_empty() {
        qpack::field(b"server", stamp.server, block);
    }
    if !stamp.date.is_empty() {
        qpack::field(b"date", stamp.date, block);
    }
    each_field(head.headers, name, &mut |n, v| qpack::field(n, v, block));
    if let Framing::Length(n) = head.framing {
        qpack::field(b"content-length", u64_digits(n, &mut [0; 20]), block);
    }
    frame(HEADERS, block, out);
}

/// Appends to `out` the HEADERS frame of an interim answer (`100
/// Continue`): its status alone (RFC 9114 §4.1).
pub fn encode_interim(status: u16, out: &mut Vec<u8>, block: &mut Vec<u8>) {
    block.clear();
    qpack::begin(block);
    qpack::status(status, block);
    frame(HEADERS, block, out);
}

/// Appends to `out` the HEADERS frame of a trailer section's field
/// `lines` (RFC 9114 §4.1: after the last DATA).
pub fn encode_trailers(lines: &[u8], out: &mut Vec<u8>, block: &mut Vec<u8>, name: &mut Vec<u8>) {
    block.clear();
    qpack::begin(block);
    each_field(lines, name, &mut |n, v| qpack::field(n, v, block));
    frame(HEADERS, block, out);
}

/// Appends a DATA frame's header for `len` bytes of payload.
pub fn data_head(len: usize, out: &mut Vec<u8>) {
    write_head(DATA, len as u64, out);
}

fn frame(kind: u64, payload: &[u8], out: &mut Vec<u8>) {
    write_head(kind, payload.len() as u64, out);
    out.extend_from_slice(payload);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::response::Connection;

    #[test]
    fn a_head_is_one_headers_frame_of_static_and_literal_fields() {
        let head = Head {
            status: 200,
            reason: b"",
            headers: b"Content-Type: text/plain\r\nConnection: close\r\nX-A:  1 \r\n",
            framing: Framing::Length(5),
            connection: Connection::Default,
        };
        let stamp = Stamp {
            server: b"brisk",
            date: b"d",
            #[cfg(feature = "http3")]
            alt_svc: b"",
        };
        let (mut out, mut block, mut name) = (Vec::new(), Vec::new(), Vec::new());
        encode(&head, &stamp, &mut out, &mut block, &mut name);
        // HEADERS (0x01), its length, then the section.
        assert_eq!(out[0], 0x01);
        assert_eq!(out[1] as usize, out.len() - 2);
        let mut fields = Vec::new();
        qpack::decode(
            &out[2..],
            4096,
            &mut (Vec::new(), Vec::new()),
            &mut |n, v| {
                fields.push(format!(
                    "{}: {}",
                    String::from_utf8_lossy(n),
                    String::from_utf8_lossy(v)
                ))
            },
        )
        .unwrap();
        assert_eq!(
            fields,
            [
                ":status: 200",
                "server: brisk",
                "date: d",
                "content-type: text/plain",
                "x-a: 1",
                "content-length: 5"
            ]
        );
        let mut data = Vec::new();
        data_head(70_000, &mut data);
        assert_eq!(data, [0x00, 0x80, 0x01, 0x11, 0x70]);
    }
}
