//! HPACK's tables: the static one (RFC 7541 Appendix A) and the
//! dynamic one, bounded by the size the peer may use (§4).

use std::collections::VecDeque;

/// The static table (RFC 7541 Appendix A); index `i` is `STATIC[i - 1]`.
pub const STATIC: [(&str, &str); 61] = [
    (":authority", ""),
    (":method", "GET"),
    (":method", "POST"),
    (":path", "/"),
    (":path", "/index.html"),
    (":scheme", "http"),
    (":scheme", "https"),
    (":status", "200"),
    (":status", "204"),
    (":status", "206"),
    (":status", "304"),
    (":status", "400"),
    (":status", "404"),
    (":status", "500"),
    ("accept-charset", ""),
    ("accept-encoding", "gzip, deflate"),
    ("accept-language", ""),
    ("accept-ranges", ""),
    ("accept", ""),
    ("access-control-allow-origin", ""),
    ("age", ""),
    ("allow", ""),
    ("authorization", ""),
    ("cache-control", ""),
    ("content-disposition", ""),
    ("content-encoding", ""),
    ("content-language", ""),
    ("content-length", ""),
    ("content-location", ""),
    ("content-range", ""),
    ("content-type", ""),
    ("cookie", ""),
    ("date", ""),
    ("etag", ""),
    ("expect", ""),
    ("expires", ""),
    ("from", ""),
    ("host", ""),
    ("if-match", ""),
    ("if-modified-since", ""),
    ("if-none-match", ""),
    ("if-range", ""),
    ("if-unmodified-since", ""),
    ("last-modified", ""),
    ("link", ""),
    ("location", ""),
    ("max-forwards", ""),
    ("proxy-authenticate", ""),
    ("proxy-authorization", ""),
    ("range", ""),
    ("referer", ""),
    ("refresh", ""),
    ("retry-after", ""),
    ("server", ""),
    ("set-cookie", ""),
    ("strict-transport-security", ""),
    ("transfer-encoding", ""),
    ("user-agent", ""),
    ("vary", ""),
    ("via", ""),
    ("www-authenticate", ""),
];

/// Longest name in the static table.
const LONGEST: usize = 27;

/// The static table's first index of each name, by the name's length:
/// `BY_LENGTH[len]` lists them (0 ends a list), so a lookup compares a
/// name with the few of its length, not with all 61.
const BY_LENGTH: [[u8; 8]; LONGEST + 1] = {
    let mut t = [[0u8; 8]; LONGEST + 1];
    let mut i = 0;
    while i < STATIC.len() {
        let (name, len) = (STATIC[i].0, STATIC[i].0.len());
        // (Only a name's first entry: `:method GET` and `POST` share one.)
        let first = i == 0 || !eq(STATIC[i - 1].0, name);
        if first {
            let mut k = 0;
            while t[len][k] != 0 {
                k += 1;
            }
            t[len][k] = (i + 1) as u8;
        }
        i += 1;
    }
    t
};

const fn eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// The static index of the first entry named `name` (lower case), if any.
pub fn static_name_index(name: &[u8]) -> Option<usize> {
    let candidates = BY_LENGTH.get(name.len())?;
    candidates
        .iter()
        .take_while(|&&i| i != 0)
        .find(|&&i| STATIC[i as usize - 1].0.as_bytes() == name)
        .map(|&i| i as usize)
}

/// A field's hash, as the encoder's table keeps it (FxHash's mixing over
/// eight bytes at a time): a lookup compares hashes before bytes.
pub fn field_hash(name: &[u8], value: &[u8]) -> u32 {
    const K: u64 = 0x517c_c1b7_2722_0a95;
    let mut h = (name.len() as u64) << 32 | value.len() as u64;
    for part in [name, value] {
        let mut chunks = part.chunks_exact(8);
        for c in &mut chunks {
            let w = u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]);
            h = (h.rotate_left(5) ^ w).wrapping_mul(K);
        }
        for &b in chunks.remainder() {
            h = (h.rotate_left(5) ^ b as u64).wrapping_mul(K);
        }
    }
    (h >> 32) as u32
}

/// An entry's bytes in [`DynTable::bytes`]: the name, then the value.
#[derive(Debug, Clone, Copy)]
struct Entry {
    /// (A table is at most 1 MiB, `[http2] header_table_size`, and its
    /// buffer about twice that: offsets fit.)
    start: u32,
    name: u32,
    value: u32,
    /// [`field_hash`] of it (the encoder's), or 0 (the decoder's).
    hash: u32,
}

/// The dynamic table: entries' bytes back to back in one buffer (oldest
/// first), compacted when the end is reached, so a warm table inserts
/// without allocating and every entry is one contiguous slice.
#[derive(Debug)]
pub struct DynTable {
    bytes: Vec<u8>,
    entries: VecDeque<Entry>,
    /// RFC 7541 §4.1 size of the entries.
    size: usize,
    /// The current maximum size (a size update may lower it).
    max: usize,
}

impl DynTable {
    /// An empty table of at most `max` bytes.
    pub fn new(max: usize) -> DynTable {
        DynTable {
            bytes: Vec::new(),
            entries: VecDeque::new(),
            size: 0,
            max,
        }
    }

    /// The table's size (§4.1).
    pub fn size(&self) -> usize {
        self.size
    }

    /// The current maximum size.
    pub fn max(&self) -> usize {
        self.max
    }

    /// The index (1: the newest) of the entry `name: value`, whose
    /// [`field_hash`] is `hash`, if held (entries inserted with
    /// [`DynTable::insert_hashed`]).
    pub fn find(&self, name: &[u8], value: &[u8], hash: u32) -> Option<usize> {
        self.entries
            .iter()
            .rev()
            .enumerate()
            .filter(|(_, e)| e.hash == hash)
            .map(|(i, _)| i + 1)
            .find(|&i| self.get(i) == Some((name, value)))
    }

    /// Entries held.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// The buffer's capacity (memory held).
    pub fn bytes_capacity(&self) -> usize {
        self.bytes.capacity()
    }

    /// Whether the table is empty.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Entry `i` (1: the newest).
    pub fn get(&self, i: usize) -> Option<(&[u8], &[u8])> {
        let n = self.entries.len();
        if i == 0 || i > n {
            return None;
        }
        let e = self.entries[n - i];
        let (start, name, value) = (e.start as usize, e.name as usize, e.value as usize);
        let name_bytes = &self.bytes[start..start + name];
        let value_bytes = &self.bytes[start + name..start + name + value];
        Some((name_bytes, value_bytes))
    }

    /// Gives back the memory the entries do not use (an idle
    /// connection's table keeps its entries, not the room to churn).
    pub fn shrink(&mut self) {
        let live = self
            .entries
            .front()
            .map_or(self.bytes.len(), |e| e.start as usize);
        if live > 0 {
            self.bytes.drain(..live);
            for e in self.entries.iter_mut() {
                e.start -= live as u32;
            }
        }
        self.bytes.shrink_to_fit();
        self.entries.shrink_to_fit();
    }

    /// Sets the maximum size, evicting what no longer fits (§4.3).
    pub fn set_max(&mut self, max: usize) {
        self.max = max;
        self.evict_to(max);
    }

    fn evict_to(&mut self, room: usize) {
        while self.size > room {
            let Some(e) = self.entries.pop_front() else {
                break;
            };
            self.size -= e.name as usize + e.value as usize + 32;
        }
        if self.entries.is_empty() {
            self.bytes.clear();
        }
    }

    /// Adds an entry (§4.4): older ones are evicted to make room; one
    /// larger than the table empties it and is not added.
    pub fn insert(&mut self, name: &[u8], value: &[u8]) {
        self.insert_hashed(name, value, 0);
    }

    /// Adds an entry that [`DynTable::find`] can find by `hash`, its
    /// [`field_hash`].
    pub fn insert_hashed(&mut self, name: &[u8], value: &[u8], hash: u32) {
        let size = name.len() + value.len() + 32;
        if size > self.max {
            self.evict_to(0);
            return;
        }
        self.evict_to(self.max - size);
        let live = self
            .entries
            .front()
            .map_or(self.bytes.len(), |e| e.start as usize);
        // Compact once the dead bytes at the front outweigh the table:
        // the buffer stays within about twice the table's size.
        if live > 0 && self.bytes.len() + name.len() + value.len() > 2 * self.max {
            self.bytes.drain(..live);
            for e in self.entries.iter_mut() {
                e.start -= live as u32;
            }
        }
        let start = self.bytes.len() as u32;
        self.bytes.extend_from_slice(name);
        self.bytes.extend_from_slice(value);
        // (Both fit: an entry is at most the table's size, a u32.)
        self.entries.push_back(Entry {
            start,
            name: name.len() as u32,
            value: value.len() as u32,
            hash,
        });
        self.size += size;
    }
}
