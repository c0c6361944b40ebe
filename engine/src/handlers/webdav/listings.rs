//! The listing cache: a collection's members as PROPFIND `Depth: 1`
//! found them (`sys::listing`: names, `statx`, whether each has extended
//! attributes), kept so that the next PROPFIND of the collection spends
//! no `getdents64` and no `statx` a member. Only what the filesystem says
//! is kept: the answer is written afresh each time (what is asked, the
//! href, the locks and their remaining time), so it is byte for byte the
//! one an uncached listing gives while the entry holds.
//!
//! An entry is used only while all of these hold, else the collection is
//! listed again:
//! - the collection is the same directory with the same mtime and ctime
//!   (members that come, go or are renamed change them, whoever does it);
//! - brisk changed nothing anywhere since (every write method, in any
//!   worker, bumps [`GENERATION`] once its change is made);
//! - it is younger than the rule's `listing_cache` (default 1 s): a
//!   member written in place, or its extended attributes changed, by
//!   something beside brisk shows after that at the latest.
//!
//! Shared by the workers (one lock, held to look up or store an `Arc`),
//! bounded: [`MAX_ENTRIES`] collections, [`MAX_BYTES`] in all; only
//! collections of [`MIN_MEMBERS`] members or more are kept.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::sys::fs::Meta;
use crate::sys::listing::Listing;

/// The most collections kept.
pub const MAX_ENTRIES: usize = 64;
/// The most bytes of listings kept (a collection of 10,000 members takes
/// about 1 MB).
pub const MAX_BYTES: usize = 32 << 20;
/// Smaller collections are listed each time (a few `statx`).
pub const MIN_MEMBERS: usize = 32;

/// Bumped by each change brisk makes to a tree, once made.
static GENERATION: AtomicU64 = AtomicU64::new(0);

/// The cache, made by the first PROPFIND that stores.
static CACHE: Mutex<Option<Cache>> = Mutex::new(None);

/// One collection's listing: of which generation, until when it is
/// trusted, whether members' extended attributes were looked for.
struct Kept {
    listing: Arc<Listing>,
    generation: u64,
    /// When it was begun, and until when the rule that made it trusts it.
    at: Instant,
    until: Instant,
    xattrs: bool,
}

/// Listings by the collection's (device, inode).
#[derive(Default)]
struct Cache {
    kept: HashMap<(u64, u64), Kept>,
    bytes: usize,
}

/// Brisk changed something in a tree: no listing made before serves.
pub fn changed() {
    GENERATION.fetch_add(1, Ordering::Release);
}

fn generation() -> u64 {
    GENERATION.load(Ordering::Acquire)
}

/// When a listing was begun: brisk's generation and the time, taken
/// before the directory is read, so that a change made meanwhile leaves
/// the listing unused and its age counts from then.
#[derive(Debug, Clone, Copy)]
pub struct Stamp {
    generation: u64,
    at: Instant,
}

/// The stamp of a listing begun now.
pub fn stamp() -> Stamp {
    Stamp {
        generation: generation(),
        at: Instant::now(),
    }
}

/// The kept listing of the collection `meta` describes (as `stat` says
/// now), with members' extended attributes looked for if `xattrs`, no
/// older than `age` (the asking rule's: two rules over one tree may
/// trust listings for different times).
pub fn get(meta: &Meta, xattrs: bool, age: Duration) -> Option<Arc<Listing>> {
    let cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    let kept = cache.as_ref()?.kept.get(&(meta.dev, meta.ino))?;
    let same =
        kept.listing.meta.mtime_ns == meta.mtime_ns && kept.listing.meta.ctime_ns == meta.ctime_ns;
    let now = Instant::now();
    let fresh = kept.generation == generation() && now < kept.until && now < kept.at + age;
    (same && fresh && (kept.xattrs || !xattrs)).then(|| Arc::clone(&kept.listing))
}

/// Keeps `listing` (begun at `stamp`, members' extended attributes
/// looked for if `xattrs`) for `age`, if it is worth it and fits.
pub fn put(listing: &Arc<Listing>, stamp: Stamp, xattrs: bool, age: Duration) {
    let bytes = listing.bytes();
    if age.is_zero() || listing.entries.len() < MIN_MEMBERS || bytes > MAX_BYTES {
        return;
    }
    let now = Instant::now();
    let mut cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    let cache = cache.get_or_insert_with(Cache::default);
    let key = (listing.meta.dev, listing.meta.ino);
    if let Some(old) = cache.kept.remove(&key) {
        cache.bytes -= old.listing.bytes();
    }
    // (The stale go first, then the soonest to expire.)
    let current = self::generation();
    let before = cache.kept.len();
    cache
        .kept
        .retain(|_, k| k.generation == current && now < k.until);
    if cache.kept.len() != before {
        cache.bytes = cache.kept.values().map(|k| k.listing.bytes()).sum();
    }
    while cache.kept.len() >= MAX_ENTRIES || cache.bytes + bytes > MAX_BYTES {
        let Some(&soonest) = cache
            .kept
            .iter()
            .min_by_key(|(_, k)| k.until)
            .map(|(k, _)| k)
        else {
            break;
        };
        if let Some(gone) = cache.kept.remove(&soonest) {
            cache.bytes -= gone.listing.bytes();
        }
    }
    cache.bytes += bytes;
    let kept = Kept {
        listing: Arc::clone(listing),
        generation: stamp.generation,
        at: stamp.at,
        until: stamp.at + age,
        xattrs,
    };
    cache.kept.insert(key, kept);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::fs::Root;

    /// How many collections are kept, and their bytes.
    fn kept() -> (usize, usize) {
        let cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
        cache.as_ref().map_or((0, 0), |c| (c.kept.len(), c.bytes))
    }

    #[test]
    fn kept_while_unchanged_and_bounded() {
        let d = std::env::temp_dir().join(format!("brisk-listings-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        let dirs = MAX_ENTRIES + 6;
        for i in 0..dirs {
            for j in 0..MIN_MEMBERS {
                let dir = d.join(format!("c{i:03}"));
                std::fs::create_dir_all(&dir).unwrap();
                std::fs::write(dir.join(format!("f{j:02}")), b"x").unwrap();
            }
        }
        std::fs::create_dir_all(d.join("small")).unwrap();
        let root = Root::open(&d, false).unwrap();
        let age = Duration::from_secs(3600);
        let list = |rel: &str| {
            let (_, meta) = root.stat(rel.as_bytes()).unwrap();
            let stamp = stamp();
            (
                meta,
                stamp,
                Arc::new(root.listing(rel.as_bytes(), false).unwrap()),
            )
        };
        // Too small, or no age: not kept.
        let (meta, at, small) = list("small");
        put(&small, at, false, age);
        assert!(get(&meta, false, age).is_none());
        let (meta, at, one) = list("c000");
        put(&one, at, false, Duration::ZERO);
        assert!(get(&meta, false, age).is_none());
        // Kept: found while the collection and brisk's generation are
        // the same; not for a request that wants members' xattrs.
        put(&one, at, false, age);
        assert!(Arc::ptr_eq(&get(&meta, false, age).unwrap(), &one));
        // (Not for a rule that trusts listings less long.)
        assert!(get(&meta, false, Duration::from_nanos(1)).is_none());
        assert!(get(&meta, true, age).is_none());
        // A listing begun before a change brisk made is not used.
        let (meta, at, again) = list("c001");
        changed();
        put(&again, at, false, age);
        assert!(get(&meta, false, age).is_none());
        // The collection changed beside brisk: not used.
        std::fs::write(d.join("c002/new"), b"y").unwrap();
        let (meta, at, fresh) = list("c002");
        put(&fresh, at, false, age);
        std::fs::remove_file(d.join("c002/new")).unwrap();
        let (_, now) = root.stat(b"c002").unwrap();
        assert!(get(&now, false, age).is_none() || now.mtime_ns == meta.mtime_ns);
        // At most MAX_ENTRIES collections, their bytes counted.
        let mut last = None;
        for i in 0..dirs {
            let (meta, at, l) = list(&format!("c{i:03}"));
            put(&l, at, false, age);
            last = Some((meta, l));
        }
        let (n, bytes) = kept();
        assert!(n <= MAX_ENTRIES && n > 0, "{n}");
        assert!(bytes <= MAX_BYTES);
        let (meta, l) = last.unwrap();
        assert!(Arc::ptr_eq(&get(&meta, false, age).unwrap(), &l));
        std::fs::remove_dir_all(&d).unwrap();
    }
}
