//! A connection's HPACK encoder (RFC 7541 §2.3, §4): the answer fields
//! enter the dynamic table the client keeps, and are then sent as
//! one-byte indexes while they are there: `server`, `content-type`,
//! `accept-ranges` and the like, `date`, a file's `etag` and
//! `last-modified`, for as long as the same files are asked for within
//! the second (each second the table starts afresh, see
//! [`Encoder::begin_at`]). The fields that change with
//! every answer (`content-length`, `content-range`) and `set-cookie` go
//! as literals without indexing, so they never push the others out. A
//! lookup compares each entry's hash before its bytes, so a table of
//! many entries costs little to search. The table stays within the size
//! the client allows (SETTINGS_HEADER_TABLE_SIZE), and a change of that
//! size is signalled at the start of the next block.

use super::table::{field_hash, static_name_index, DynTable};
use super::{encode_field, write_int, write_string};

/// Most bytes of table the encoder uses, whatever the client allows.
const TABLE: usize = 4096;

/// Longest field (name and value) that enters the table: a large one
/// would push many others out for one answer's sake.
const LONGEST_INDEXED: usize = 256;

/// Whether a field with this name is worth a table entry: not those that
/// differ from answer to answer, nor cookies (which a client's table
/// should not keep, RFC 7541 §7.1.3).
fn indexes(name: &[u8], value: &[u8]) -> bool {
    !matches!(
        name,
        b"content-length" | b"content-range" | b"set-cookie" | b"authorization"
    ) && name.len() + value.len() <= LONGEST_INDEXED
}

/// One connection's encoder (see the module documentation).
#[derive(Debug)]
pub struct Encoder {
    table: DynTable,
    /// Size updates owed at the start of the next block: the smallest
    /// size since the last block, and the final one (§4.2).
    update: Option<(usize, usize)>,
    /// The date of the last block's answers (its hash).
    epoch: u32,
    /// Counts the changes of the table (entries in or out, its size): a
    /// field's encoding depends on nothing else.
    changes: u64,
    /// The last run of fields that left the table as it found it.
    memo: Memo,
}

/// A run of fields encoded without changing the table (each was an index,
/// or a literal that does not enter it), kept with what they were encoded
/// from: while the table stays the same, the same fields encode to the
/// same bytes, so a connection that answers the same kind of request
/// again (the same file within the second) copies them instead of
/// parsing, hashing and looking up each field again.
#[derive(Debug, Default)]
struct Memo {
    /// `changes` when the bytes were made (valid while it is the same).
    changes: u64,
    /// The parts of the key, one after the other, and their lengths.
    key: Vec<u8>,
    lens: Vec<usize>,
    /// The encoded fields.
    bytes: Vec<u8>,
}

/// Where [`Encoder::remember`] starts from: the table's state and the
/// block's length before a run of fields.
#[derive(Debug, Clone, Copy)]
pub struct Mark {
    changes: u64,
    at: usize,
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
            epoch: 0,
            changes: 0,
            memo: Memo::default(),
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
        self.changes += 1;
        let least = self.update.map_or(max, |(least, _)| least.min(max));
        self.update = Some((least, max));
    }

    /// Empties the table and gives back its memory (an idle
    /// connection's): the next block starts with a size update to 0,
    /// which empties the client's copy too (RFC 7541 §4.2, §6.3), then
    /// back to the size in force, so the two tables stay the same.
    pub fn forget(&mut self) {
        if self.table.is_empty() && self.table.bytes_capacity() == 0 {
            return;
        }
        let max = self.table.max();
        self.table = DynTable::new(max);
        self.update = Some((0, max));
        self.changes += 1;
        self.memo = Memo::default();
    }

    /// Starts a header block of answers stamped with `date` (formatted
    /// once a second): when it is not the last block's, the table starts
    /// afresh (a size update to 0 and back, which empties the client's
    /// copy too), so the entries of past seconds never pile up and a
    /// busy connection's table, refilled with the same fields each
    /// second, never grows (nor allocates) once warm.
    pub fn begin_at(&mut self, out: &mut Vec<u8>, date: &[u8]) {
        let epoch = field_hash(b"date", date);
        if epoch != self.epoch {
            self.epoch = epoch;
            if !self.table.is_empty() {
                let max = self.table.max();
                self.table.set_max(0);
                self.table.set_max(max);
                self.update = Some((0, max));
                self.changes += 1;
            }
        }
        self.begin(out);
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
    /// holds it, else a literal, which enters the table unless the field
    /// is one that changes with every answer.
    pub fn field(&mut self, name: &[u8], value: &[u8], out: &mut Vec<u8>) {
        if !indexes(name, value) || self.table.max() == 0 {
            encode_field(name, value, out);
            return;
        }
        let hash = field_hash(name, value);
        if let Some(i) = self.table.find(name, value, hash) {
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
        self.table.insert_hashed(name, value, hash);
        self.changes += 1;
    }

    /// Appends the fields last encoded from `key` (the parts they were
    /// made from), if the table is as it was then: whether it did.
    pub fn repeat(&self, key: &[&[u8]], out: &mut Vec<u8>) -> bool {
        let m = &self.memo;
        if m.changes != self.changes || m.lens.len() != key.len() || m.bytes.is_empty() {
            return false;
        }
        let mut at = 0;
        for (part, &len) in key.iter().zip(&m.lens) {
            if part.len() != len || m.key.get(at..at + len) != Some(part) {
                return false;
            }
            at += len;
        }
        out.extend_from_slice(&m.bytes);
        true
    }

    /// Where a run of fields about to be appended to `out` starts.
    pub fn mark(&self, out: &[u8]) -> Mark {
        Mark {
            changes: self.changes,
            at: out.len(),
        }
    }

    /// Keeps the fields appended to `out` since `mark`, made from `key`,
    /// for [`Encoder::repeat`], if they left the table as it was (the
    /// next identical run will then encode to the same bytes).
    pub fn remember(&mut self, key: &[&[u8]], mark: Mark, out: &[u8]) {
        if mark.changes != self.changes {
            return;
        }
        let m = &mut self.memo;
        m.changes = self.changes;
        m.key.clear();
        m.lens.clear();
        for part in key {
            m.key.extend_from_slice(part);
            m.lens.push(part.len());
        }
        m.bytes.clear();
        m.bytes
            .extend_from_slice(out.get(mark.at..).unwrap_or_default());
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
        // Everything but content-length: one byte each the second time,
        // as the date is within its second and the file the same.
        assert_eq!(second.len(), 4 + 5, "{second:?}");
        assert_eq!(second[0], 0x80 | 65, "server, the oldest entry");
        // content-length, which changes with every answer, never entered.
        assert_eq!(d.table_size(), e.table.size());
        assert_eq!(e.table.len(), 4);
    }

    #[test]
    fn a_run_of_fields_is_repeated_only_while_the_table_is_the_same() {
        let mut e = Encoder::new();
        let key: [&[u8]; 2] = [b"200", b"brisk"];
        let run = |e: &mut Encoder, out: &mut Vec<u8>| {
            let mark = e.mark(out);
            e.field(b"server", b"brisk", out);
            e.remember(&key, mark, out);
        };
        let mut out = Vec::new();
        assert!(!e.repeat(&key, &mut out), "nothing kept yet");
        run(&mut e, &mut out);
        assert!(!e.repeat(&key, &mut out), "the run changed the table");
        out.clear();
        run(&mut e, &mut out);
        assert_eq!(out, [0x80 | 62]);
        let mut again = Vec::new();
        assert!(e.repeat(&key, &mut again));
        assert_eq!(again, out, "the same bytes");
        assert!(!e.repeat(&[b"200", b"brisk2"], &mut again), "another key");
        assert!(!e.repeat(&[b"200"], &mut again), "another key");
        // Any change of the table makes the kept run stale.
        e.field(b"etag", b"\"x\"", &mut Vec::new());
        assert!(!e.repeat(&key, &mut again));
        run(&mut e, &mut out);
        e.set_limit(100);
        assert!(!e.repeat(&key, &mut again));
        run(&mut e, &mut out);
        e.forget();
        assert!(!e.repeat(&key, &mut again));
        assert_eq!(e.memo.key.capacity(), 0, "a forgotten table keeps no run");
        assert_eq!(again, out[..1], "nothing appended when not repeated");
    }

    #[test]
    fn a_forgotten_table_is_emptied_on_both_sides() {
        let (mut e, mut d) = (Encoder::new(), Decoder::new(4096));
        decode(&mut d, &block(&mut e, &ANSWER));
        assert!(d.table_size() > 0);
        e.forget();
        assert_eq!(e.table.bytes_capacity(), 0);
        let b = block(&mut e, &ANSWER);
        // Size 0 (the client's copy empties), then 4096 again.
        assert_eq!(&b[..4], &[0x20, 0x3f, 0xe1, 0x1f]);
        assert_eq!(decode(&mut d, &b).len(), ANSWER.len());
        assert_eq!(d.table_size(), e.table.size());
        // The next block indexes again.
        let again = block(&mut e, &ANSWER);
        assert_eq!(decode(&mut d, &again).len(), ANSWER.len());
        assert_eq!(again.len(), 4 + 5);
    }

    #[test]
    fn a_new_second_starts_the_table_afresh_and_it_never_grows() {
        let (mut e, mut d) = (Encoder::new(), Decoder::new(4096));
        let mut capacity = 0;
        for second in 0..20 {
            let date = format!("Mon, 23 Nov 2026 15:40:{second:02} GMT");
            let fields = [
                ("server", "brisk"),
                ("date", date.as_str()),
                ("content-length", "95"),
            ];
            for round in 0..3 {
                let mut out = Vec::new();
                e.begin_at(&mut out, date.as_bytes());
                for (n, v) in fields {
                    e.field(n.as_bytes(), v.as_bytes(), &mut out);
                }
                if second > 0 && round == 0 {
                    assert_eq!(&out[..4], &[0x20, 0x3f, 0xe1, 0x1f], "afresh");
                }
                assert_eq!(decode(&mut d, &out).len(), 3);
                assert_eq!(d.table_size(), e.table.size());
                assert_eq!(e.table.len(), 2, "server and this second's date");
            }
            if second == 1 {
                capacity = e.table.bytes_capacity();
            }
        }
        assert_eq!(e.table.bytes_capacity(), capacity, "no growth once warm");
    }

    #[test]
    fn many_files_churn_the_table_within_its_size_and_the_client_keeps_up() {
        // A thousand files' etags and dates: entries come and go, the
        // client's table stays the encoder's, every block decodes right.
        let (mut e, mut d) = (Encoder::new(), Decoder::new(4096));
        for i in 0..1000 {
            let etag = format!("\"{i:x}-400\"");
            let date = format!("Mon, 23 Nov 2026 15:{:02}:{:02} GMT", i / 60 % 60, i % 60);
            let fields = [
                ("server", "brisk"),
                ("date", date.as_str()),
                ("etag", etag.as_str()),
                ("content-length", "1024"),
            ];
            let got = decode(&mut d, &block(&mut e, &fields));
            let want: Vec<(Vec<u8>, Vec<u8>)> = fields
                .iter()
                .map(|(n, v)| (n.as_bytes().to_vec(), v.as_bytes().to_vec()))
                .collect();
            assert_eq!(got, want);
            assert!(e.table.size() <= 4096);
            assert_eq!(d.table_size(), e.table.size());
        }
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
