//! `brisk.shared`: a small dictionary every worker sees (one per
//! process, each site's keys apart: [`site_key`]), bounded in bytes, each entry with an optional expiry, as
//! OpenResty's `ngx.shared.DICT`. A value is a string, a number or a
//! boolean. When a new entry does not fit, expired entries are purged
//! first, then the least recently used ones (read or written) make room,
//! as nginx's dictionary does: entries sit on a list in the order they
//! were last used, linked through their slots, so that a read moves one
//! to the end without allocating.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::Instant;

/// A stored value.
#[derive(Debug, Clone, PartialEq)]
pub enum Stored {
    /// A string (bytes).
    Str(Vec<u8>),
    /// A number.
    Num(f64),
    /// A boolean.
    Bool(bool),
}

impl Stored {
    fn size(&self) -> usize {
        match self {
            Stored::Str(s) => s.len(),
            _ => 8,
        }
    }
}

/// Bytes an entry costs besides its key and value (its bookkeeping).
const ENTRY_COST: usize = 64;

/// No slot (the ends of the list).
const NIL: usize = usize::MAX;

#[derive(Debug)]
struct Slot {
    key: Vec<u8>,
    value: Stored,
    expires: Option<Instant>,
    /// Used less recently (towards the list's head).
    prev: usize,
    /// Used more recently.
    next: usize,
}

#[derive(Debug)]
struct Dict {
    map: HashMap<Vec<u8>, usize>,
    slots: Vec<Slot>,
    /// Slots no entry holds.
    free: Vec<usize>,
    /// The least recently used entry.
    head: usize,
    /// The most recently used entry.
    tail: usize,
    bytes: usize,
    capacity: usize,
}

impl Default for Dict {
    fn default() -> Dict {
        Dict {
            map: HashMap::new(),
            slots: Vec::new(),
            free: Vec::new(),
            head: NIL,
            tail: NIL,
            bytes: 0,
            capacity: 0,
        }
    }
}

/// `key` of the site whose host names are `site` (joined): each site's
/// entries are its own (one dictionary, one `shared_memory`, for all):
/// the length of `site`, `site`, then `key`.
pub fn site_key(site: &[u8], key: &[u8]) -> Vec<u8> {
    let mut k = Vec::with_capacity(4 + site.len() + key.len());
    k.extend_from_slice(&u32::try_from(site.len()).unwrap_or(u32::MAX).to_le_bytes());
    k.extend_from_slice(site);
    k.extend_from_slice(key);
    k
}

static SHARED: OnceLock<Mutex<Dict>> = OnceLock::new();

fn dict() -> MutexGuard<'static, Dict> {
    SHARED
        .get_or_init(Mutex::default)
        .lock()
        // A panic while holding it left plain data, consistent per step.
        .unwrap_or_else(|e| e.into_inner())
}

/// Sets the capacity in bytes (`servlets.shared_memory`); entries beyond
/// a smaller one are evicted at the next `set`.
pub fn set_capacity(bytes: u64) {
    dict().capacity = usize::try_from(bytes).unwrap_or(usize::MAX);
}

/// The value of `key`, if set and not expired (it becomes the most
/// recently used).
pub fn get(key: &[u8], now: Instant) -> Option<Stored> {
    dict().get(key, now)
}

/// Sets `key` to `value` (expiring at `expires`); false when it cannot
/// fit even in an empty dictionary.
pub fn set(key: &[u8], value: Stored, expires: Option<Instant>, now: Instant) -> bool {
    dict().set(key, value, expires, now)
}

/// Removes `key`.
pub fn delete(key: &[u8]) {
    let mut d = dict();
    if let Some(&i) = d.map.get(key) {
        d.remove(i);
    }
}

/// Adds `by` to the number at `key` (0 if unset or expired) and returns
/// the sum; `None` if it holds something else, or the sum cannot be kept.
pub fn incr(key: &[u8], by: f64, now: Instant) -> Option<f64> {
    let mut d = dict();
    let (old, exp) = match d.get(key, now) {
        Some(Stored::Num(n)) => (n, d.map.get(key).and_then(|&i| d.slots[i].expires)),
        Some(_) => return None,
        None => (0.0, None),
    };
    let sum = old + by;
    d.set(key, Stored::Num(sum), exp, now).then_some(sum)
}

fn cost(key: &[u8], value: &Stored) -> usize {
    key.len() + value.size() + ENTRY_COST
}

impl Dict {
    fn get(&mut self, key: &[u8], now: Instant) -> Option<Stored> {
        let i = *self.map.get(key)?;
        if self.slots[i].expires.is_some_and(|e| e <= now) {
            self.remove(i);
            return None;
        }
        self.unlink(i);
        self.push_back(i);
        Some(self.slots[i].value.clone())
    }

    fn set(&mut self, key: &[u8], value: Stored, expires: Option<Instant>, now: Instant) -> bool {
        if let Some(&i) = self.map.get(key) {
            self.remove(i);
        }
        let cost = cost(key, &value);
        if cost > self.capacity {
            return false;
        }
        if self.bytes + cost > self.capacity {
            self.purge(now);
        }
        while self.bytes + cost > self.capacity && self.head != NIL {
            self.remove(self.head);
        }
        self.bytes += cost;
        let slot = Slot {
            key: key.to_vec(),
            value,
            expires,
            prev: NIL,
            next: NIL,
        };
        let i = match self.free.pop() {
            Some(i) => {
                self.slots[i] = slot;
                i
            }
            None => {
                self.slots.push(slot);
                self.slots.len() - 1
            }
        };
        self.push_back(i);
        self.map.insert(key.to_vec(), i);
        true
    }

    /// Takes the entry in slot `i` out of the list and the map.
    fn remove(&mut self, i: usize) {
        self.unlink(i);
        let slot = &mut self.slots[i];
        let key = std::mem::take(&mut slot.key);
        let value = std::mem::replace(&mut slot.value, Stored::Bool(false));
        self.bytes -= cost(&key, &value);
        self.map.remove(&key);
        self.free.push(i);
    }

    fn unlink(&mut self, i: usize) {
        let (prev, next) = (self.slots[i].prev, self.slots[i].next);
        match prev {
            NIL => self.head = next,
            p => self.slots[p].next = next,
        }
        match next {
            NIL => self.tail = prev,
            n => self.slots[n].prev = prev,
        }
        self.slots[i].prev = NIL;
        self.slots[i].next = NIL;
    }

    /// Makes slot `i` the most recently used.
    fn push_back(&mut self, i: usize) {
        self.slots[i].prev = self.tail;
        self.slots[i].next = NIL;
        match self.tail {
            NIL => self.head = i,
            t => self.slots[t].next = i,
        }
        self.tail = i;
    }

    fn purge(&mut self, now: Instant) {
        let mut i = self.head;
        while i != NIL {
            let next = self.slots[i].next;
            if self.slots[i].expires.is_some_and(|e| e <= now) {
                self.remove(i);
            }
            i = next;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn str(s: &str) -> Stored {
        Stored::Str(s.as_bytes().to_vec())
    }

    #[test]
    fn the_least_recently_used_entry_makes_room() {
        let now = Instant::now();
        let mut d = Dict {
            capacity: 3 * cost(b"a", &str("1")),
            ..Dict::default()
        };
        for k in ["a", "b", "c"] {
            assert!(d.set(k.as_bytes(), str("1"), None, now));
        }
        // `a` is read, so `b` is now the least recently used.
        assert_eq!(d.get(b"a", now), Some(str("1")));
        assert!(d.set(b"d", str("1"), None, now));
        assert_eq!(d.get(b"b", now), None);
        for k in ["a", "c", "d"] {
            assert_eq!(d.get(k.as_bytes(), now), Some(str("1")), "{k}");
        }
        // Now `a` is the oldest used; a write counts as a use too.
        assert!(d.set(b"a", str("2"), None, now));
        assert!(d.set(b"e", str("1"), None, now));
        assert_eq!(d.get(b"c", now), None);
        assert_eq!(d.get(b"a", now), Some(str("2")));
        assert_eq!(d.map.len(), 3);
        assert_eq!(d.bytes, 3 * cost(b"a", &str("1")));
    }

    #[test]
    fn expired_entries_go_first_and_freed_slots_are_reused() {
        let now = Instant::now();
        let later = now + Duration::from_secs(10);
        let mut d = Dict {
            capacity: 3 * cost(b"old", &Stored::Num(1.0)),
            ..Dict::default()
        };
        assert!(d.set(b"old", Stored::Bool(true), None, now));
        assert!(d.set(
            b"tmp",
            Stored::Num(1.0),
            Some(now + Duration::from_secs(1)),
            now
        ));
        assert!(d.set(b"new", Stored::Num(2.0), None, now));
        // Full: the expired `tmp` makes room, not the least recent `old`.
        assert!(d.set(b"x", Stored::Num(3.0), None, later));
        assert_eq!(d.get(b"old", later), Some(Stored::Bool(true)));
        assert_eq!(d.get(b"tmp", later), None);
        assert_eq!(d.slots.len(), 3, "the freed slot was used again");
        // Too big for the whole dictionary: refused, nothing evicted.
        assert!(!d.set(b"huge", Stored::Str(vec![0; 1000]), None, later));
        assert_eq!(d.map.len(), 3);
    }
}
