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

/// The static index of the first entry named `name` (lower case), if any.
pub fn static_name_index(name: &[u8]) -> Option<usize> {
    // (Told apart by length first: most lengths have one or two names.)
    STATIC
        .iter()
        .position(|(n, _)| n.len() == name.len() && n.as_bytes() == name)
        .map(|i| i + 1)
}

/// An entry's bytes in [`DynTable::bytes`]: the name, then the value.
#[derive(Debug, Clone, Copy)]
struct Entry {
    start: usize,
    name: usize,
    value: usize,
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

    /// The index (1: the newest) of the entry `name: value`, if held.
    pub fn find(&self, name: &[u8], value: &[u8]) -> Option<usize> {
        let n = self.entries.len();
        (1..=n).find(|&i| self.get(i) == Some((name, value)))
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
        let name = &self.bytes[e.start..e.start + e.name];
        let value = &self.bytes[e.start + e.name..e.start + e.name + e.value];
        Some((name, value))
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
            self.size -= e.name + e.value + 32;
        }
        if self.entries.is_empty() {
            self.bytes.clear();
        }
    }

    /// Adds an entry (§4.4): older ones are evicted to make room; one
    /// larger than the table empties it and is not added.
    pub fn insert(&mut self, name: &[u8], value: &[u8]) {
        let size = name.len() + value.len() + 32;
        if size > self.max {
            self.evict_to(0);
            return;
        }
        self.evict_to(self.max - size);
        let live = self.entries.front().map_or(self.bytes.len(), |e| e.start);
        // Compact once the dead bytes at the front outweigh the table:
        // the buffer stays within about twice the table's size.
        if live > 0 && self.bytes.len() + name.len() + value.len() > 2 * self.max {
            self.bytes.drain(..live);
            for e in self.entries.iter_mut() {
                e.start -= live;
            }
        }
        let start = self.bytes.len();
        self.bytes.extend_from_slice(name);
        self.bytes.extend_from_slice(value);
        self.entries.push_back(Entry {
            start,
            name: name.len(),
            value: value.len(),
        });
        self.size += size;
    }
}
