//! `brisk.shared`: a small dictionary every worker sees (one per
//! process), bounded in bytes, each entry with an optional expiry, as
//! OpenResty's `ngx.shared.DICT`. A value is a string, a number or a
//! boolean. When a new entry does not fit, expired entries are purged
//! first, then the oldest ones make room, as nginx's dictionary evicts
//! the least recently used.

use std::collections::{HashMap, VecDeque};
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

#[derive(Debug, Default)]
struct Dict {
    map: HashMap<Vec<u8>, (Stored, Option<Instant>)>,
    /// Keys in the order they were set (oldest first), for eviction.
    order: VecDeque<Vec<u8>>,
    bytes: usize,
    capacity: usize,
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

/// The value of `key`, if set and not expired.
pub fn get(key: &[u8], now: Instant) -> Option<Stored> {
    let mut d = dict();
    match d.map.get(key) {
        Some((_, Some(exp))) if *exp <= now => {
            d.remove(key);
            None
        }
        Some((v, _)) => Some(v.clone()),
        None => None,
    }
}

/// Sets `key` to `value` (expiring at `expires`); false when it cannot
/// fit even in an empty dictionary.
pub fn set(key: &[u8], value: Stored, expires: Option<Instant>, now: Instant) -> bool {
    let mut d = dict();
    d.remove(key);
    let cost = key.len() + value.size() + ENTRY_COST;
    if cost > d.capacity {
        return false;
    }
    if d.bytes + cost > d.capacity {
        d.purge(now);
    }
    while d.bytes + cost > d.capacity {
        let Some(old) = d.order.pop_front() else {
            break;
        };
        d.remove(&old);
    }
    d.bytes += cost;
    d.order.push_back(key.to_vec());
    d.map.insert(key.to_vec(), (value, expires));
    true
}

/// Removes `key`.
pub fn delete(key: &[u8]) {
    dict().remove(key);
}

/// Adds `by` to the number at `key` (0 if unset or expired) and returns
/// the sum; `None` if it holds something else, or the sum cannot be kept.
pub fn incr(key: &[u8], by: f64, now: Instant) -> Option<f64> {
    let (old, exp) = {
        let d = dict();
        match d.map.get(key) {
            Some((Stored::Num(n), exp)) if exp.is_none_or(|e| e > now) => (*n, *exp),
            Some((_, Some(e))) if *e <= now => (0.0, None),
            Some(_) => return None,
            None => (0.0, None),
        }
    };
    let sum = old + by;
    set(key, Stored::Num(sum), exp, now).then_some(sum)
}

impl Dict {
    fn remove(&mut self, key: &[u8]) {
        if let Some((v, _)) = self.map.remove(key) {
            self.bytes -= key.len() + v.size() + ENTRY_COST;
            if let Some(i) = self.order.iter().position(|k| k == key) {
                self.order.remove(i);
            }
        }
    }

    fn purge(&mut self, now: Instant) {
        let expired: Vec<Vec<u8>> = self
            .map
            .iter()
            .filter(|(_, (_, e))| e.is_some_and(|e| e <= now))
            .map(|(k, _)| k.clone())
            .collect();
        for k in expired {
            self.remove(&k);
        }
    }
}
