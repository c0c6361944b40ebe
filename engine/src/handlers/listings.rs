//! Listing caches: what was made of a directory (PROPFIND's members as
//! the filesystem gave them, an `autoindex` page as rendered), kept so
//! that the next request for the same unchanged directory is answered
//! from it, and so that requests that come together share one copy
//! rather than each holding its own.
//!
//! A kept value is used only while all of these hold, else the directory
//! is listed again:
//! - the directory is the same one (its device and inode are in the key)
//!   with the same mtime and ctime (members that come, go or are renamed
//!   change them, whoever does it);
//! - brisk changed nothing anywhere since (every write method, in any
//!   worker, bumps [`GENERATION`] once its change is made);
//! - it was made less than the asker's age ago (WebDAV's
//!   `listing_cache`, default 1 s; a listing's `open_file_cache_valid`):
//!   a member written in place, or its extended attributes changed, by
//!   something beside brisk shows after that (and the time the listing
//!   took to make) at the latest. (Counted from when it was made, not
//!   begun: one that takes longer to make than the age, on a loaded
//!   machine, still serves the requests that came meanwhile.)
//!
//! Each [`Shelf`] is shared by the workers (one lock, held to look up or
//! store an `Arc`) and bounded: so many values, so many bytes in all.
//!
//! What is not kept is made off the event loop, on the [`LISTING`]
//! threads ([`off_loop`]): reading a directory takes a `statx` a member,
//! seconds for a large one on a cold or slow disk (a router's USB
//! drive), and rendering it tens of milliseconds more, which every other
//! connection of the worker would wait for.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::handlers::stream::Later;
use crate::http::Status;
use crate::offload::{Job, Offload, Task};
use crate::sys::fs::Meta;

/// Threads that make listings ([`LISTING_THREADS`] of them, shared by
/// every worker, started by the first listing not kept); more wait their
/// turn, so that many asked at once take that many threads' time, not
/// the workers'.
static LISTING: Offload<Task> = Offload::new("brisk-list", LISTING_THREADS);

/// How many listings are made at once (see [`LISTING`]).
pub const LISTING_THREADS: usize = 2;

/// The most listings handed to the threads and not made yet (each holds
/// its request's answer and, for a page, its directory open): past them
/// a listing is refused at once (503), so that clients asking for more
/// than the threads can make hold neither memory nor descriptors.
pub const MAX_WAITING: usize = 64;

/// Listings handed to the threads and not made yet.
static WAITING: AtomicUsize = AtomicUsize::new(0);

/// One of [`WAITING`], until it is made (or dropped).
struct Waiting;

impl Drop for Waiting {
    fn drop(&mut self) {
        WAITING.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Has `make` answer `later` on one of the [`LISTING`] threads (here, if
/// none can be started), unless its client is gone by its turn; with
/// [`MAX_WAITING`] waiting already, answers 503 at once.
pub fn off_loop(later: Later, make: impl FnOnce(Later) + Send + 'static) {
    if WAITING.fetch_add(1, Ordering::AcqRel) >= MAX_WAITING {
        WAITING.fetch_sub(1, Ordering::AcqRel);
        let busy = b"Retry-After: 1\r\n".to_vec();
        let _ = later.answer_lines(Status::SERVICE_UNAVAILABLE, busy, Vec::new());
        return;
    }
    let waiting = Waiting;
    let listed = Task(Box::new(move || {
        let _waiting = waiting;
        if !later.is_gone() {
            make(later);
        }
    }));
    if let Err(listed) = LISTING.submit(listed) {
        listed.run();
    }
}

/// Bumped by each change brisk makes to a tree, once made.
static GENERATION: AtomicU64 = AtomicU64::new(0);

/// Brisk changed something in a tree: no listing made before serves.
pub fn changed() {
    GENERATION.fetch_add(1, Ordering::Release);
}

fn generation() -> u64 {
    GENERATION.load(Ordering::Acquire)
}

/// When a listing was begun: brisk's generation, taken before the
/// directory is read, so that a change brisk made meanwhile leaves the
/// listing unused.
#[derive(Debug, Clone, Copy)]
pub struct Stamp {
    generation: u64,
}

/// The stamp of a listing begun now.
pub fn stamp() -> Stamp {
    Stamp {
        generation: generation(),
    }
}

/// One kept value: of which directory version and generation, until
/// when it is trusted, how much it covers.
struct Kept<V: ?Sized> {
    value: Arc<V>,
    bytes: usize,
    /// The directory's mtime and ctime when it was listed.
    times: (i64, i64),
    /// What it covers: it serves a request that asks for as much or
    /// less (PROPFIND: whether members' extended attributes were read).
    grade: u8,
    generation: u64,
    /// When it was made, and until when the asker that made it trusts it.
    at: Instant,
    until: Instant,
}

/// (A list, not a map: it holds a few dozen at most, and a map's code
/// was 2.7 KB of the `tls` build.)
struct Kepts<K, V: ?Sized> {
    kept: Vec<(K, Kept<V>)>,
    bytes: usize,
}

/// Values of type `V` by key `K` (which names the directory, and
/// whatever else the value depends on): at most `max_entries` of them,
/// `max_bytes` in all.
pub struct Shelf<K, V: ?Sized> {
    max_entries: usize,
    max_bytes: usize,
    /// Made by the first value stored.
    kepts: Mutex<Option<Kepts<K, V>>>,
}

impl<K: Eq, V: ?Sized> Shelf<K, V> {
    /// An empty shelf.
    pub const fn new(max_entries: usize, max_bytes: usize) -> Shelf<K, V> {
        Shelf {
            max_entries,
            max_bytes,
            kepts: Mutex::new(None),
        }
    }

    /// The most bytes it keeps.
    pub fn max_bytes(&self) -> usize {
        self.max_bytes
    }

    /// The value kept under `key`, if made from the directory `dir` as
    /// `stat` says it is now, at least of `grade`, and no older than
    /// `age` (the asker's: two rules over one tree may trust listings
    /// for different times).
    pub fn get(&self, key: &K, dir: &Meta, grade: u8, age: Duration) -> Option<Arc<V>> {
        let kepts = self.kepts.lock().unwrap_or_else(|e| e.into_inner());
        let (_, kept) = kepts.as_ref()?.kept.iter().find(|(k, _)| k == key)?;
        let same = kept.times == (dir.mtime_ns, dir.ctime_ns);
        let now = Instant::now();
        let fresh = kept.generation == generation() && now < kept.until && now < kept.at + age;
        (same && fresh && kept.grade >= grade).then(|| Arc::clone(&kept.value))
    }

    /// Keeps `value` (`bytes` of memory, made just now from the directory
    /// `dir` as `stat` said before it was read, begun at `stamp`, of
    /// `grade`) under `key` for `age`, if it fits; the stale go first,
    /// then the soonest to expire.
    #[allow(clippy::too_many_arguments)]
    pub fn put(
        &self,
        key: K,
        value: &Arc<V>,
        bytes: usize,
        dir: &Meta,
        grade: u8,
        stamp: Stamp,
        age: Duration,
    ) {
        if age.is_zero() || bytes > self.max_bytes {
            return;
        }
        let now = Instant::now();
        let mut kepts = self.kepts.lock().unwrap_or_else(|e| e.into_inner());
        let kepts = kepts.get_or_insert_with(|| Kepts {
            kept: Vec::new(),
            bytes: 0,
        });
        if let Some(i) = kepts.kept.iter().position(|(k, _)| *k == key) {
            kepts.bytes -= kepts.kept.swap_remove(i).1.bytes;
        }
        let current = generation();
        let before = kepts.kept.len();
        kepts
            .kept
            .retain(|(_, k)| k.generation == current && now < k.until);
        if kepts.kept.len() != before {
            kepts.bytes = kepts.kept.iter().map(|(_, k)| k.bytes).sum();
        }
        while kepts.kept.len() >= self.max_entries || kepts.bytes + bytes > self.max_bytes {
            let soonest = kepts
                .kept
                .iter()
                .enumerate()
                .min_by_key(|(_, (_, k))| k.until);
            let Some((i, _)) = soonest else {
                break;
            };
            kepts.bytes -= kepts.kept.swap_remove(i).1.bytes;
        }
        kepts.bytes += bytes;
        let kept = Kept {
            value: Arc::clone(value),
            bytes,
            times: (dir.mtime_ns, dir.ctime_ns),
            grade,
            generation: stamp.generation,
            at: now,
            until: now + age,
        };
        kepts.kept.push((key, kept));
    }

    /// How many values are kept, and their bytes.
    #[cfg(test)]
    pub fn kept(&self) -> (usize, usize) {
        let kepts = self.kepts.lock().unwrap_or_else(|e| e.into_inner());
        kepts.as_ref().map_or((0, 0), |c| (c.kept.len(), c.bytes))
    }
}
