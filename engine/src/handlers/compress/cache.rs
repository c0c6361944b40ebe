//! Static files' compressed variants, shared by every worker: a map
//! keyed by the file's identity and version (device, inode, size,
//! modification and change times) and the coding, bounded in bytes, and
//! filled by a small pool of threads so that no event loop compresses a
//! file. Until a variant is ready its file is compressed as it streams
//! (see `static_files::serve_file`): a worker never waits for a thread
//! (waiting would tie every first request for a file to the pool's
//! queue; brotli at level 11 takes tens of milliseconds for 100 KiB).
//!
//! Eviction is oldest-first; each eviction moves an epoch on, which the
//! workers' own shortcuts to variants (kept on their file-cache entries)
//! check, so an evicted variant's memory is freed once the requests
//! that hold it are done, whatever the workers remember.

use crate::channel as mpsc;
use std::collections::{HashMap, VecDeque};
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use super::coding;
use crate::config::{Coding, CompressConfig, Levels};
use crate::sys::fs::Meta;

/// Files waiting for a compression thread at most; beyond it a file goes
/// out uncompressed and is asked for again by a later request.
const QUEUE: usize = 256;

/// A file's version and a coding: what a variant is of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Key {
    dev: u64,
    ino: u64,
    size: u64,
    mtime_ns: i64,
    ctime_ns: i64,
    coding: Coding,
}

impl Key {
    /// The key of `coding` of the file `meta` describes.
    pub fn new(meta: &Meta, coding: Coding) -> Key {
        Key {
            dev: meta.dev,
            ino: meta.ino,
            size: meta.size,
            mtime_ns: meta.mtime_ns,
            ctime_ns: meta.ctime_ns,
            coding,
        }
    }
}

/// Where a variant stands.
#[derive(Debug, Clone)]
pub enum Lookup {
    /// Its bytes.
    Ready(Arc<[u8]>),
    /// Compressed, it was no smaller: the file goes out as it is.
    Useless,
    /// Never kept (larger than the whole cache, or the cache has no
    /// room at all: `cache_size = 0`): the file is compressed as it
    /// streams, each time.
    Stream,
    /// Not ready yet (being made, or the queue was full).
    Pending,
}

#[derive(Debug)]
enum Slot {
    Pending,
    Ready(Arc<[u8]>),
    Useless,
    Stream,
}

#[derive(Debug, Default)]
struct Map {
    slots: HashMap<Key, Slot>,
    /// Keys of finished slots, oldest first.
    order: VecDeque<Key>,
    bytes: u64,
    queued: usize,
}

#[derive(Debug)]
struct Shared {
    map: Mutex<Map>,
    epoch: AtomicU64,
    capacity: u64,
    levels: Levels,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Map> {
        // A thread that panicked while holding it left the map
        // consistent: every change is made in one step.
        self.map.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Records the result of a job.
    fn finish(&self, key: Key, result: Option<Vec<u8>>) {
        let mut m = self.lock();
        m.queued = m.queued.saturating_sub(1);
        let slot = match result {
            Some(v) if (v.len() as u64) <= self.capacity => Slot::Ready(v.into()),
            // (Worth sending compressed, but it cannot be kept.)
            Some(_) => Slot::Stream,
            None => Slot::Useless,
        };
        if let Slot::Ready(v) = &slot {
            m.bytes += v.len() as u64;
        }
        m.slots.insert(key, slot);
        m.order.push_back(key);
        let mut evicted = false;
        while m.bytes > self.capacity {
            let Some(old) = m.order.pop_front() else {
                break;
            };
            if let Some(Slot::Ready(v)) = m.slots.remove(&old) {
                m.bytes -= v.len() as u64;
            }
            evicted = true;
        }
        // Useless markers cost a few bytes each: bounded by count too.
        while m.order.len() > 65_536 {
            if let Some(old) = m.order.pop_front() {
                if let Some(Slot::Ready(v)) = m.slots.remove(&old) {
                    m.bytes -= v.len() as u64;
                }
                evicted = true;
            }
        }
        if evicted {
            self.epoch.fetch_add(1, Ordering::Release);
        }
    }
}

/// What a compression thread is asked to do.
struct Job {
    key: Key,
    content: Content,
}

/// A file's content for a job.
pub enum Content {
    /// Already in memory (a small file the file cache holds).
    Mem(Arc<[u8]>),
    /// To be read from this descriptor (its own; read with `pread`).
    File(File),
}

/// The cache of variants and its threads (see the module documentation).
#[derive(Debug)]
pub struct Variants {
    shared: Arc<Shared>,
    jobs: Mutex<Option<mpsc::Sender<Job>>>,
}

impl Variants {
    /// A cache of `cfg.cache_size` bytes and `cfg.threads` threads.
    pub fn new(cfg: &CompressConfig) -> io::Result<Variants> {
        let shared = Arc::new(Shared {
            map: Mutex::new(Map::default()),
            epoch: AtomicU64::new(0),
            capacity: cfg.cache_size,
            levels: cfg.static_levels,
        });
        let (tx, rx) = mpsc::channel::<Job>();
        let rx = Arc::new(Mutex::new(rx));
        for _ in 0..cfg.threads {
            let rx = Arc::clone(&rx);
            let shared = Arc::clone(&shared);
            std::thread::Builder::new()
                .name("brisk-compress".to_string())
                .spawn(move || work(&shared, &rx))?;
        }
        Ok(Variants {
            shared,
            jobs: Mutex::new(Some(tx)),
        })
    }

    /// The current epoch: it moves on whenever a variant is evicted.
    pub fn epoch(&self) -> u64 {
        self.shared.epoch.load(Ordering::Acquire)
    }

    /// Where the variant `key` stands; when it is unknown, a thread is
    /// asked to make it from what `content` gives (called only then).
    pub fn get(&self, key: Key, content: impl FnOnce() -> io::Result<Content>) -> Lookup {
        if self.shared.capacity == 0 {
            // Nothing could be kept: no variant is made.
            return Lookup::Stream;
        }
        let mut m = self.shared.lock();
        match m.slots.get(&key) {
            Some(Slot::Ready(v)) => return Lookup::Ready(Arc::clone(v)),
            Some(Slot::Useless) => return Lookup::Useless,
            Some(Slot::Stream) => return Lookup::Stream,
            Some(Slot::Pending) => return Lookup::Pending,
            None if m.queued >= QUEUE => return Lookup::Pending,
            None => {}
        }
        let Ok(content) = content() else {
            return Lookup::Pending;
        };
        let jobs = self.jobs.lock().unwrap_or_else(|e| e.into_inner());
        let sent = jobs
            .as_ref()
            .is_some_and(|tx| tx.send(Job { key, content }).is_ok());
        if sent {
            m.slots.insert(key, Slot::Pending);
            m.queued += 1;
        }
        Lookup::Pending
    }
}

impl Drop for Variants {
    fn drop(&mut self) {
        // The threads end once the queue is closed and drained.
        self.jobs.lock().unwrap_or_else(|e| e.into_inner()).take();
    }
}

/// How much lower the compression threads' priority is than the event
/// loops' (a nice value, added to the process's).
pub const NICER: i32 = 10;

/// A compression thread: takes jobs until the queue closes. It runs at a
/// lower priority ([`NICER`]) than the event loops: a level-11 brotli
/// run takes seconds of a core for a few MiB, and a client that makes a
/// site's variants be made again and again (more compressible bytes than
/// `cache_size`, asked in turn) must not take the cores from serving.
fn work(shared: &Shared, rx: &Mutex<mpsc::Receiver<Job>>) {
    // (A failure leaves it as it was.)
    let _ = crate::sys::process::nicer_thread(NICER);
    loop {
        let job = match rx.lock().unwrap_or_else(|e| e.into_inner()).recv() {
            Ok(job) => job,
            Err(_) => return,
        };
        let level = shared.levels[job.key.coding.index()];
        let result = match job.content {
            Content::Mem(m) => coding::compress(job.key.coding, level, &m).ok(),
            Content::File(f) => read_whole(&f, job.key.size)
                .and_then(|data| coding::compress(job.key.coding, level, &data))
                .ok(),
        };
        // Worth keeping only if it is smaller.
        let result = result.filter(|v| (v.len() as u64) < job.key.size);
        shared.finish(job.key, result);
    }
}

/// Reads `size` bytes of `f` from its start (`pread`: the worker's own
/// descriptor shares the offset, which this leaves alone).
fn read_whole(f: &File, size: u64) -> io::Result<Vec<u8>> {
    let mut data = vec![0u8; size as usize];
    f.read_exact_at(&mut data, 0)?;
    Ok(data)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(ino: u64, size: u64) -> Meta {
        Meta {
            kind: crate::sys::fs::Kind::File,
            size,
            mtime: 0,
            dev: 0,
            ino,
            mtime_ns: 0,
            ctime_ns: 0,
        }
    }

    fn wait_ready(v: &Variants, key: Key) -> Lookup {
        for _ in 0..500 {
            match v.get(key, || unreachable!("asked once")) {
                Lookup::Pending => std::thread::sleep(std::time::Duration::from_millis(10)),
                done => return done,
            }
        }
        panic!("variant never ready");
    }

    #[test]
    fn made_once_bounded_and_evicted_oldest_first() {
        let text: Arc<[u8]> = (0..3000u32)
            .flat_map(|i| format!("<li>{}</li>", i.wrapping_mul(7919) % 100_003).into_bytes())
            .collect::<Vec<_>>()
            .into();
        let mut cfg = crate::config::Config::default().site.compress;
        let size = |c: Coding| {
            coding::compress(c, cfg.static_levels[c.index()], &text)
                .unwrap()
                .len() as u64
        };
        let (gz, zst) = (size(Coding::Gzip), size(Coding::Zstd));
        // Room for the gzip variant and one zstd one, not a second.
        cfg.cache_size = gz + zst + zst / 2;
        cfg.threads = 1;
        let v = Variants::new(&cfg).unwrap();
        let a = Key::new(&meta(1, text.len() as u64), Coding::Gzip);
        let first = v.get(a, || Ok(Content::Mem(Arc::clone(&text))));
        assert!(matches!(first, Lookup::Pending));
        let Lookup::Ready(made) = wait_ready(&v, a) else {
            panic!("compressible text is kept")
        };
        assert_eq!(made.len() as u64, gz);
        let epoch = v.epoch();
        // Random bytes do not compress: marked, not kept.
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let noise: Arc<[u8]> = (0..4000)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x >> 32) as u8
            })
            .collect::<Vec<_>>()
            .into();
        let b = Key::new(&meta(2, noise.len() as u64), Coding::Br);
        v.get(b, || Ok(Content::Mem(Arc::clone(&noise))));
        assert!(matches!(wait_ready(&v, b), Lookup::Useless));
        // Two zstd variants overflow the cache: the oldest goes, and
        // the epoch says so.
        for ino in [3, 4] {
            let k = Key::new(&meta(ino, text.len() as u64), Coding::Zstd);
            v.get(k, || Ok(Content::Mem(Arc::clone(&text))));
            wait_ready(&v, k);
        }
        let total = v.shared.lock().bytes;
        assert_eq!(total, 2 * zst);
        assert!(v.epoch() > epoch);
        assert!(matches!(
            v.get(a, || Ok(Content::Mem(Arc::clone(&text)))),
            Lookup::Pending
        ));
        // A variant larger than the whole cache is not kept: its file
        // streams compressed.
        let c = Key::new(&meta(5, text.len() as u64), Coding::Zstd);
        cfg.cache_size = zst - 1;
        let small = Variants::new(&cfg).unwrap();
        small.get(c, || Ok(Content::Mem(Arc::clone(&text))));
        assert!(matches!(wait_ready(&small, c), Lookup::Stream));
        assert_eq!(small.shared.lock().bytes, 0);
    }

    #[test]
    fn no_cache_no_variants() {
        let mut cfg = crate::config::Config::default().site.compress;
        cfg.cache_size = 0;
        let v = Variants::new(&cfg).unwrap();
        let k = Key::new(&meta(1, 10_000), Coding::Br);
        assert!(matches!(
            v.get(k, || unreachable!("nothing is made")),
            Lookup::Stream
        ));
    }
}
