//! The listing cache of PROPFIND: a collection's members as `Depth: 1`
//! found them (`sys::listing`: names, `statx`, whether each has extended
//! attributes), kept so that the next PROPFIND of the collection spends
//! no `getdents64` and no `statx` a member. Only what the filesystem says
//! is kept: the answer is written afresh each time (what is asked, the
//! href, the locks and their remaining time), so it is byte for byte the
//! one an uncached listing gives while the entry holds.
//!
//! When a kept listing serves is [`crate::handlers::listings`]'s rule
//! (the same directory, unchanged, nothing written by brisk since, no
//! older than the rule's `listing_cache`); a listing made without
//! members' extended attributes does not serve a request that wants
//! them. Bounded: [`MAX_ENTRIES`] collections, [`MAX_BYTES`] in all;
//! only collections of [`MIN_MEMBERS`] members or more are kept.

use std::sync::Arc;
use std::time::Duration;

use crate::handlers::listings::Shelf;
pub use crate::handlers::listings::{changed, off_loop, stamp, Stamp};
use crate::sys::fs::Meta;
use crate::sys::listing::Listing;

/// The most collections kept.
pub const MAX_ENTRIES: usize = 64;
/// The most bytes of listings kept (a collection of 10,000 members takes
/// about 1 MB).
pub const MAX_BYTES: usize = 32 << 20;
/// Smaller collections are listed each time (a few `statx`).
pub const MIN_MEMBERS: usize = 32;

/// Listings by the collection's (device, inode).
static CACHE: Shelf<(u64, u64), Listing> = Shelf::new(MAX_ENTRIES, MAX_BYTES);

/// The kept listing of the collection `meta` describes (as `stat` says
/// now), with members' extended attributes looked for if `xattrs`, no
/// older than `age`.
pub fn get(meta: &Meta, xattrs: bool, age: Duration) -> Option<Arc<Listing>> {
    CACHE.get(&(meta.dev, meta.ino), meta, u8::from(xattrs), age)
}

/// Keeps `listing` (begun at `stamp`, members' extended attributes
/// looked for if `xattrs`) for `age`, if it is worth it and fits.
pub fn put(listing: &Arc<Listing>, stamp: Stamp, xattrs: bool, age: Duration) {
    if listing.entries.len() < MIN_MEMBERS {
        return;
    }
    let meta = &listing.meta;
    let key = (meta.dev, meta.ino);
    CACHE.put(
        key,
        listing,
        listing.bytes(),
        meta,
        u8::from(xattrs),
        stamp,
        age,
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::fs::Root;

    /// How many collections are kept, and their bytes.
    fn kept() -> (usize, usize) {
        CACHE.kept()
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
