//! A connection's HPACK encoder (RFC 7541 §2.3, §4): the answer fields
//! that repeat from one answer to the next on a connection (`server`,
//! `content-type`, `accept-ranges`, …) enter the dynamic table the
//! client keeps, and are then sent as one-byte indexes; the fields that
//! change (`date` every second, `etag`, `last-modified`,
//! `content-length`, …) go as literals without indexing, so they never
//! push the useful entries out, and the table of a busy connection stops
//! changing (nor allocating) once its few entries are in. The table stays
//! within the size the client allows (SETTINGS_HEADER_TABLE_SIZE), and
//! a change of that size is signalled at the start of the next block.

use super::table::{static_name_index, DynTable};
use super::{encode_field, write_int, write_string};

/// Most bytes of table the encoder uses, whatever the client allows.
const TABLE: usize = 4096;

/// Whether answers on a connection tend to repeat the field `name`.
fn repeats(name: &[u8]) -> bool {
    matches!(
        name,
        b"server"
            | b"content-type"
            | b"accept-ranges"
            | b"vary"
            | b"cache-control"
            | b"content-encoding"
            | b"x-content-type-options"
            | b"strict-transport-security"
            | b"access-control-allow-origin"
    )
}

/// One connection's encoder (see the module documentation).
#[derive(Debug)]
pub struct Encoder {
    table: DynTable,
    /// Size updates owed at the start of the next block: the smallest
    /// size since the last block, and the final one (§4.2).
    update: Option<(usize, usize)>,
}

impl Default for Encoder {
    fn default() -> Encoder {
        Encoder::new()
    }
}

impl Encoder {
    /// An encoder for the protocol's default table size (4096).
    pub fn new() -> Encoder {
        Encoder {
            table: DynTable::new(TABLE),
            update: None,
        }
    }

    /// The client's SETTINGS_HEADER_TABLE_SIZE: the table shrinks to it
    /// (or grows, up to our own bound), and the next block says so.
    pub fn set_limit(&mut self, limit: u32) {
        let max = (limit as usize).min(TABLE);
        if max == self.table.max() {
            return;
        }
        self.table.set_max(max);
        let least = self.update.map_or(max, |(least, _)| least.min(max));
        self.update = Some((least, max));
    }

    /// Starts a header block: the size updates owed, if any.
    pub fn begin(&mut self, out: &mut Vec<u8>) {
        if let Some((least, last)) = self.update.take() {
            if least != last {
                write_int(least, 5, 0x20, out);
            }
            write_int(last, 5, 0x20, out);
        }
    }

    /// Appends a field (`name` in lower case): an index if the table
    /// holds it, else a literal, which enters the table if the field is
    /// one that repeats.
    pub fn field(&mut self, name: &[u8], value: &[u8], out: &mut Vec<u8>) {
        if !repeats(name) || self.table.max() == 0 {
            encode_field(name, value, out);
            return;
        }
        if let Some(i) = self.table.find(name, value) {
            write_int(super::STATIC.len() + i, 7, 0x80, out);
            return;
        }
        // Literal with incremental indexing (§6.2.1).
        match static_name_index(name) {
            Some(i) => write_int(i, 6, 0x40, out),
            None => {
                out.push(0x40);
                write_string(name, out);
            }
        }
        write_string(value, out);
        self.table.insert(name, value);
    }
}

#[cfg(test)]
mod tests {
    use super::super::Decoder;
    use super::*;

    fn decode(d: &mut Decoder, block: &[u8]) -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut v = Vec::new();
        d.decode(block, 1 << 20, &mut |n, val| {
            v.push((n.to_vec(), val.to_vec()))
        })
        .unwrap();
        v
    }

    const ANSWER: [(&str, &str); 5] = [
        ("server", "brisk"),
        ("date", "Mon, 23 Nov 2026 15:40:12 GMT"),
        ("content-type", "text/html; charset=utf-8"),
        ("etag", "\"5f-1a2b\""),
        ("content-length", "95"),
    ];

    fn block(e: &mut Encoder, fields: &[(&str, &str)]) -> Vec<u8> {
        let mut out = Vec::new();
        e.begin(&mut out);
        for (n, v) in fields {
            e.field(n.as_bytes(), v.as_bytes(), &mut out);
        }
        out
    }

    #[test]
    fn repeated_fields_become_indexes_the_client_decodes() {
        let (mut e, mut d) = (Encoder::new(), Decoder::new(4096));
        let first = block(&mut e, &ANSWER);
        let second = block(&mut e, &ANSWER);
        let expected: Vec<(Vec<u8>, Vec<u8>)> = ANSWER
            .iter()
            .map(|(n, v)| (n.as_bytes().to_vec(), v.as_bytes().to_vec()))
            .collect();
        assert_eq!(decode(&mut d, &first), expected);
        assert_eq!(decode(&mut d, &second), expected);
        // server and content-type: one byte each the second time.
        assert!(
            second.len() + 20 < first.len(),
            "{} then {}",
            first.len(),
            second.len()
        );
        assert_eq!(second[0], 0x80 | 63, "server, the older entry");
        // The changing fields (date among them) never entered the table.
        assert_eq!(d.table_size(), e.table.size());
        assert_eq!(e.table.len(), 2);
    }

    #[test]
    fn a_smaller_client_table_is_signalled_and_kept_to() {
        let (mut e, mut d) = (Encoder::new(), Decoder::new(4096));
        decode(&mut d, &block(&mut e, &ANSWER));
        e.set_limit(64);
        e.set_limit(100);
        let b = block(&mut e, &ANSWER);
        // Two updates: the smallest (64), then the final (100).
        assert_eq!(&b[..2], &[0x3f, 0x21]);
        assert_eq!(b[2], 0x3f);
        decode(&mut d, &b);
        assert!(e.table.size() <= 100 && d.table_size() == e.table.size());
        // No table at all: literals only, and the decoder agrees.
        e.set_limit(0);
        let b = block(&mut e, &ANSWER);
        assert_eq!(b[0], 0x20);
        assert_eq!(decode(&mut d, &b).len(), ANSWER.len());
        assert_eq!((e.table.len(), d.table_size()), (0, 0));
    }
}
