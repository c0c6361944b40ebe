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

/// A connection's last head, encoded: the next answer made of the same
/// parts (the same file asked for again within the second) copies it
/// rather than encoding it again (no dynamic table: the same fields
/// always encode the same).
#[derive(Debug, Default)]
pub struct Cache {
    status: u16,
    server: Vec<u8>,
    date: Vec<u8>,
    headers: Vec<u8>,
    length: Option<u64>,
    section: Vec<u8>,
}

impl Cache {
    fn holds(&self, head: &Head<'_>, stamp: &Stamp<'_>) -> bool {
        !self.section.is_empty()
            && self.status == head.status
            && self.length == length(head)
            && self.date == stamp.date
            && self.headers == head.headers
            && self.server == stamp.server
    }
}

/// Appends to `out` the HEADERS frame of `head` stamped with `stamp`;
/// `name` is scratch space, `cache` the connection's last
/// head, if it keeps one.
pub fn encode(
    head: &Head<'_>,
    stamp: &Stamp<'_>,
    out: &mut Vec<u8>,
    name: &mut Vec<u8>,
    cache: Option<&mut Cache>,
) {
    let mut fresh = Cache::default();
    let cache = cache.unwrap_or(&mut fresh);
    if !cache.holds(head, stamp) {
        let section = &mut cache.section;
        section.clear();
        qpack::begin(section);
        qpack::status(head.status, section);
        if !stamp.server.is_empty() {
            qpack::field(b"server", stamp.server, section);
        }
        if !stamp.date.is_empty() {
            qpack::field(b"date", stamp.date, section);
        }
        each_field(head.headers, name, &mut |n, v| qpack::field(n, v, section));
        if let Some(n) = length(head) {
            qpack::field(b"content-length", u64_digits(n, &mut [0; 20]), section);
        }
        cache.status = head.status;
        cache.length = length(head);
        for (to, from) in [
            (&mut cache.server, stamp.server),
            (&mut cache.date, stamp.date),
            (&mut cache.headers, head.headers),
        ] {
            to.clear();
            to.extend_from_slice(from);
        }
    }
    frame(HEADERS, &cache.section, out);
}

/// The body length `head` says, if it says one.
fn length(head: &Head<'_>) -> Option<u64> {
    match head.framing {
        Framing::Length(n) => Some(n),
        _ => None,
    }
}

/// Appends to `out` the HEADERS frame of an interim answer (RFC 9114
/// §4.1): its status and field `lines` (none for `100 Continue`).
pub fn encode_interim(
    (status, lines): (u16, &[u8]),
    out: &mut Vec<u8>,
    block: &mut Vec<u8>,
    name: &mut Vec<u8>,
) {
    block.clear();
    qpack::begin(block);
    qpack::status(status, block);
    each_field(lines, name, &mut |n, v| qpack::field(n, v, block));
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
        let (mut out, mut name) = (Vec::new(), Vec::new());
        let mut cache = Cache::default();
        encode(&head, &stamp, &mut out, &mut name, Some(&mut cache));
        // The same head again: copied from the cache, the same bytes; with
        // another length, only that differs.
        let mut again = Vec::new();
        encode(&head, &stamp, &mut again, &mut name, Some(&mut cache));
        assert_eq!(again, out);
        let mut other = Vec::new();
        let long = Head {
            framing: Framing::Length(70_000),
            ..head
        };
        encode(&long, &stamp, &mut other, &mut name, Some(&mut cache));
        let mut fresh = Vec::new();
        encode(&long, &stamp, &mut fresh, &mut name, None);
        assert_eq!(other, fresh);
        // HEADERS (0x01), its length, then the section.
        assert_eq!(out[0], 0x01);
        assert_eq!(out[1] as usize, out.len() - 2);
        let mut fields = Vec::new();
        qpack::decode(
            &out[2..],
            4096,
            &qpack::Table::default(),
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
