//! A per-worker open-file cache, in the spirit of nginx's
//! `open_file_cache` and lighttpd's stat cache: for each path looked up,
//! the metadata, the pre-formatted `ETag` and `Last-Modified` lines, and
//! either the content (small files) or an open descriptor (large ones).
//!
//! Staleness is bounded: an entry older than `valid` is checked against
//! the disk (one `openat2(O_PATH)` + `fstat`) before it is used again, and
//! reloaded if the file changed (inode, size, mtime or ctime, to the
//! nanosecond). Failed lookups (404s) are cached the same way. When full,
//! the cache is emptied and refills; it never grows past `capacity`.

use crate::hash::FnvMap;
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::fs::File;
use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::fs::FileExt;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::refusal::lookup_status;
use crate::http::conditional;
use crate::http::date::{format_http_date, HTTP_DATE_LEN};
use crate::http::sniff::{self, SNIFF_LEN};
use crate::http::Status;
use crate::sys::fs::{Kind, Meta, Root};

/// Files up to this size are kept in memory by the cache, and file ranges
/// up to it are read into the output buffer behind the head, so that head
/// and body leave in one write; larger ones go by `sendfile`.
pub const SMALL_FILE: u64 = 16 * 1024;
/// At most this much file content is held per worker.
const MEM_BUDGET: usize = 16 << 20;

/// Where a file's bytes come from.
#[derive(Debug, Clone)]
pub enum Source {
    /// An open descriptor (large files: `sendfile`).
    File(Rc<File>),
    /// The whole content, read once (shared: a compressed variant is
    /// made from it, and held, off the worker's thread).
    Mem(Arc<[u8]>),
}

/// What a path names, as cached.
#[derive(Debug)]
pub struct Entry {
    /// What `fstat` said of it.
    pub meta: Meta,
    /// The content of a regular file; `None` for directories and others.
    pub source: Option<Source>,
    /// `ETag: "…"\r\nLast-Modified: …\r\n` for regular files.
    pub validators: Box<[u8]>,
    /// Whether precompressed sidecars of this file exist, and until when
    /// that answer may be used (see [`FileCache::sidecars_known`]).
    sidecars: Cell<Option<(Instant, bool)>>,
    /// The type sniffed from the first bytes (`[static] sniff`), once
    /// asked: the file is read for it once per version, not per request.
    sniffed: Cell<Option<Option<&'static str>>>,
    /// This worker's shortcuts to the file's compressed variants, one
    /// per coding (see `crate::handlers::compress`).
    pub variants: RefCell<[VariantMemo; 3]>,
}

/// What a worker remembers of one compressed variant of a file, and
/// the epoch of the shared cache it saw then (an eviction since makes
/// it ask again).
#[derive(Debug, Clone, Default)]
pub enum VariantMemo {
    /// Not asked yet, or not ready when asked.
    #[default]
    Unknown,
    /// The variant, as an entry of its own.
    Ready(Rc<Entry>, u64),
    /// Compressed, the file was no smaller: sent as it is.
    Useless(u64),
    /// The variant is not kept: the file is compressed as it streams.
    Stream(u64),
}

impl Entry {
    /// The entry of a compressed variant of this file: `data`, with an
    /// entity tag of its own (this one's with `-suffix`, RFC 9110
    /// §8.8.3.3: each representation its own tag) and the same
    /// `Last-Modified`.
    pub fn variant(&self, data: Arc<[u8]>, suffix: &str) -> Entry {
        let etag = self.etag();
        let mut validators = Vec::with_capacity(self.validators.len() + suffix.len() + 1);
        validators.extend_from_slice(b"ETag: ");
        match etag.strip_suffix(b"\"") {
            Some(open) => {
                validators.extend_from_slice(open);
                validators.push(b'-');
                validators.extend_from_slice(suffix.as_bytes());
                validators.push(b'"');
            }
            None => validators.extend_from_slice(etag),
        }
        let rest = &self.validators[(6 + etag.len()).min(self.validators.len())..];
        validators.extend_from_slice(rest);
        Entry {
            meta: Meta {
                size: data.len() as u64,
                ..self.meta
            },
            source: Some(Source::Mem(data)),
            validators: validators.into(),
            sidecars: Cell::new(None),
            sniffed: Cell::new(None),
            variants: RefCell::default(),
        }
    }

    /// The entity tag (with its quotes).
    pub fn etag(&self) -> &[u8] {
        let line = self.validators.strip_prefix(b"ETag: ").unwrap_or_default();
        let end = line.iter().position(|&b| b == b'\r').unwrap_or(line.len());
        &line[..end]
    }

    /// The `Content-Type` the file's first bytes show ([`sniff::sniff`]),
    /// read at the first call and remembered with the entry (which a
    /// changed file replaces). `None` for what they do not show and for
    /// what cannot be read.
    pub fn sniffed_type(&self) -> Option<&'static str> {
        if let Some(known) = self.sniffed.get() {
            return known;
        }
        let whole = self.meta.size <= SNIFF_LEN as u64;
        let ty = match &self.source {
            Some(Source::Mem(m)) => sniff::sniff(&m[..m.len().min(SNIFF_LEN)], whole),
            Some(Source::File(f)) => {
                let mut head = [0u8; SNIFF_LEN];
                let want = (self.meta.size as usize).min(SNIFF_LEN);
                let mut got = 0;
                // A short read is retried; an error leaves the type unknown.
                while got < want {
                    match f.read_at(&mut head[got..want], got as u64) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => got += n,
                    }
                }
                sniff::sniff(&head[..got], whole && got == want)
            }
            None => None,
        };
        self.sniffed.set(Some(ty));
        ty
    }
}

#[derive(Debug)]
struct Slot {
    result: Result<Rc<Entry>, i32>,
    /// Until when the slot is used without asking the disk (the time it
    /// was checked plus `valid`; a comparison is cheaper than a subtraction).
    fresh_until: Instant,
}

/// The cache of one worker thread.
#[derive(Debug)]
pub struct FileCache {
    map: FnvMap<Box<[u8]>, Slot>,
    capacity: usize,
    valid: Duration,
    now: Instant,
    mem: usize,
    /// The site whose files are looked up now (see [`FileCache::for_site`]).
    site: usize,
    /// The key of a file of a site other than the default one, reused.
    key: Vec<u8>,
    /// Every lookup of the current site is checked against the disk (see
    /// [`FileCache::for_written_tree`]).
    #[cfg(feature = "webdav")]
    checked: bool,
    /// A lookup that would wait for the disk is not made (see
    /// [`FileCache::wait_cold`]).
    #[cfg(feature = "cold-lookups")]
    cold_check: bool,
    /// The path whose lookup would have waited for the disk, if one did.
    #[cfg(feature = "cold-lookups")]
    went_cold: Option<Vec<u8>>,
}

impl FileCache {
    /// A cache of up to `capacity` entries (0: no caching), each trusted for `valid`.
    pub fn new(capacity: usize, valid: Duration) -> FileCache {
        FileCache {
            map: HashMap::default(),
            capacity,
            valid,
            now: Instant::now(),
            mem: 0,
            site: 0,
            key: Vec::new(),
            #[cfg(feature = "webdav")]
            checked: false,
            #[cfg(feature = "cold-lookups")]
            cold_check: false,
            #[cfg(feature = "cold-lookups")]
            went_cold: None,
        }
    }

    /// Whether a lookup not answered from this cache may wait for the
    /// disk (`true`, as by default), or fails with `WouldBlock` where it
    /// would (`false`): its path not in the kernel's caches
    /// ([`Root::resolves_cached`]), a small file's content not in the
    /// page cache, or any lookup beneath a root on a network or FUSE
    /// filesystem ([`Root::remote`]). The path that failed is kept
    /// ([`FileCache::went_cold`]). On a local disk, a probe for a file
    /// that is usually not there ([`FileCache::probe`]: a precompressed
    /// variant) is made all the same: it follows the lookup of the file it
    /// would accompany, whose directory was read from the disk by then,
    /// and a name never looked up that does not exist is in no cache
    /// (each such probe would go to a thread).
    #[cfg(feature = "cold-lookups")]
    pub fn wait_cold(&mut self, wait: bool) {
        self.cold_check = !wait;
        self.went_cold = None;
    }

    /// Ends what [`FileCache::wait_cold`] began (lookups wait for the
    /// disk again): the path of the lookup that would have waited since,
    /// if any.
    #[cfg(feature = "cold-lookups")]
    #[inline]
    pub fn went_cold(&mut self) -> Option<Vec<u8>> {
        self.cold_check = false;
        self.went_cold.take()
    }

    /// Forgets every entry (and frees the memory and descriptors they
    /// held): a worker does so when it has been quiet a while.
    pub fn clear(&mut self) {
        self.map = HashMap::default();
        self.mem = 0;
    }

    /// Sets the clock the cache compares against (once per loop iteration).
    pub fn set_now(&mut self, now: Instant) {
        self.now = now;
    }

    /// Makes the next lookups those of site `site` (0: the default site),
    /// whose files are other files than another site's of the same path:
    /// every site's root is one cache, keyed by site and path, so that
    /// a file of one site is never served for another.
    pub fn for_site(&mut self, site: usize) {
        self.site = site;
        #[cfg(feature = "webdav")]
        {
            self.checked = false;
        }
    }

    /// [`FileCache::for_site`] for a tree clients write (a `[[webdav]]`
    /// rule's, through any worker): every lookup checks the entry
    /// against the disk (one `fstatat`), so a GET after a PUT never
    /// answers what the PUT replaced.
    #[cfg(feature = "webdav")]
    pub fn for_written_tree(&mut self, key: usize) {
        self.site = key;
        self.checked = true;
    }

    /// In a tree clients write ([`FileCache::for_written_tree`]), trusts
    /// the entries still fresh (not checked against the disk) until the
    /// next [`FileCache::for_site`] or [`FileCache::for_written_tree`]:
    /// for a request routed again after its own lookups, made off the
    /// loop and kept just now.
    #[cfg(all(feature = "webdav", feature = "cold-lookups"))]
    pub fn trust_lately(&mut self) {
        self.checked = false;
    }

    /// Looks `rel` up beneath `root`, from the cache when it is fresh.
    pub fn lookup(&mut self, root: &Root, rel: &[u8]) -> io::Result<Rc<Entry>> {
        self.lookup_keeping(root, rel, true)
    }

    /// Looks up a file that usually does not exist (a `.br`/`.gz`
    /// sidecar): as [`FileCache::lookup`], but a miss takes no slot. The
    /// file it would accompany remembers that it has none
    /// ([`FileCache::remember_sidecars`]), so a miss is asked again only
    /// as often as a cached lookup is; were misses kept, three slots a
    /// file would empty the cache of a site a third of its size.
    pub fn probe(&mut self, root: &Root, rel: &[u8]) -> io::Result<Rc<Entry>> {
        self.lookup_keeping(root, rel, false)
    }

    fn lookup_keeping(
        &mut self,
        root: &Root,
        rel: &[u8],
        keep_misses: bool,
    ) -> io::Result<Rc<Entry>> {
        if self.capacity == 0 {
            // (Nothing would keep what a thread found: on the loop.)
            #[cfg(feature = "cold-lookups")]
            if self.cold_check && keep_misses && !root.resolves_cached(rel) {
                return Err(cold(&mut self.went_cold, rel));
            }
            return load(root, rel, &mut 0, false);
        }
        if self.site == 0 {
            // The default site's keys are the paths themselves: nothing
            // to build on the single-site path.
            return self.lookup_key(root, rel, rel, keep_misses);
        }
        let mut key = std::mem::take(&mut self.key);
        site_key(self.site, rel, &mut key);
        let found = self.lookup_key(root, rel, &key, keep_misses);
        self.key = key;
        found
    }

    /// The version of `rel` of site `site` (see [`FileCache::for_site`])
    /// the cache holds, if any, fresh or not: for [`find`].
    #[cfg(feature = "cold-lookups")]
    pub fn known(&self, site: usize, rel: &[u8]) -> Option<Meta> {
        match &self.map.get(&*key(site, rel))?.result {
            Ok(e) => Some(e.meta),
            Err(_) => None,
        }
    }

    /// Keeps what the lookups of a request made off the loop found
    /// ([`find`]), each as a lookup here would have, fresh from now:
    /// the path, and its variants' (each miss kept too where one of
    /// them exists or the path has no entry, for a probe to find; where
    /// a file has none, it remembers so, as
    /// [`FileCache::remember_sidecars`]).
    #[cfg(feature = "cold-lookups")]
    pub fn install(&mut self, site: usize, looked: Looked) {
        let file = self.install_one(site, &looked.rel, looked.found, true);
        if looked.sidecars.is_empty() {
            return;
        }
        let some = looked
            .sidecars
            .iter()
            .any(|(_, f)| matches!(f, Found::Same | Found::Now(Ok(_))));
        // (A path not found has no entry to remember it on: a variant
        // alone may be served, each is probed.)
        let keep = some || file.is_none();
        for (rel, found) in looked.sidecars {
            self.install_one(site, &rel, found, keep);
        }
        if let (Some(file), false) = (file, some) {
            file.sidecars.set(Some((self.now + self.valid, false)));
        }
    }

    /// [`FileCache::install`]'s work for one path: its entry, if one is
    /// kept (a miss only if `keep_misses`).
    #[cfg(feature = "cold-lookups")]
    fn install_one(
        &mut self,
        site: usize,
        rel: &[u8],
        found: Found,
        keep_misses: bool,
    ) -> Option<Rc<Entry>> {
        if self.capacity == 0 {
            return None;
        }
        let key = key(site, rel);
        let fresh_until = self.now + self.valid;
        let now = match found {
            Found::Same => {
                let slot = self.map.get_mut(&*key)?;
                slot.fresh_until = fresh_until;
                return slot.result.as_ref().ok().cloned();
            }
            Found::Now(Ok(now)) => Ok(now),
            // (Kept as a lookup here keeps them: see `lookup_key`.)
            Found::Now(Err(e)) => match (e.raw_os_error(), lookup_status(&e)) {
                (Some(errno), Status::NOT_FOUND | Status::FORBIDDEN) if keep_misses => Err(errno),
                _ => return None,
            },
        };
        if let Some(Slot { result: Ok(e), .. }) = self.map.remove(&*key) {
            if let Some(Source::Mem(m)) = &e.source {
                self.mem -= m.len();
            }
        }
        if self.map.len() >= self.capacity {
            self.map.clear();
            self.mem = 0;
        }
        let result = now.map(|(meta, file)| {
            let source = file.map(|(file, content)| match content {
                Some(c) if c.len() <= MEM_BUDGET.saturating_sub(self.mem) => {
                    self.mem += c.len();
                    Source::Mem(c.into())
                }
                _ => Source::File(Rc::new(file)),
            });
            entry(meta, source)
        });
        let kept = result.as_ref().ok().cloned();
        self.map.insert(
            key.into(),
            Slot {
                result,
                fresh_until,
            },
        );
        kept
    }

    /// [`FileCache::lookup_keeping`] with the cache's key for `rel`.
    fn lookup_key(
        &mut self,
        root: &Root,
        rel: &[u8],
        key: &[u8],
        keep_misses: bool,
    ) -> io::Result<Rc<Entry>> {
        #[cfg(feature = "webdav")]
        let fresh = |slot: &Slot| !self.checked && self.now < slot.fresh_until;
        #[cfg(not(feature = "webdav"))]
        let fresh = |slot: &Slot| self.now < slot.fresh_until;
        #[cfg(feature = "cold-lookups")]
        let cold_check = self.cold_check;
        #[cfg(not(feature = "cold-lookups"))]
        let cold_check = false;
        let held = self.map.get_mut(key);
        if let Some(slot) = &held {
            if fresh(slot) {
                return slot.result.clone().map_err(io::Error::from_raw_os_error);
            }
        }
        // What the disk says of the path now (one lookup, which a slot
        // held compares, and the path is then read after).
        let meta = match stat_unless_cold(root, rel, cold_check, keep_misses) {
            Ok(Some((_, m))) => Ok(m),
            #[cfg(feature = "cold-lookups")]
            Ok(None) => return Err(cold(&mut self.went_cold, rel)),
            #[cfg(not(feature = "cold-lookups"))]
            Ok(None) => return Err(io::ErrorKind::WouldBlock.into()),
            Err(e) => Err(e),
        };
        if let Some(slot) = held {
            let unchanged = match (&meta, &slot.result) {
                (Ok(m), Ok(e)) => same_version(m, &e.meta),
                (Err(now), Err(then)) => now.raw_os_error() == Some(*then),
                _ => false,
            };
            if unchanged {
                slot.fresh_until = self.now + self.valid;
                return slot.result.clone().map_err(io::Error::from_raw_os_error);
            }
            if let Some(Slot { result: Ok(e), .. }) = self.map.remove(key) {
                if let Some(Source::Mem(m)) = &e.source {
                    self.mem -= m.len();
                }
            }
        }
        // (A probe's miss takes no slot.)
        let meta = match (meta, keep_misses) {
            (Err(e), false) => return Err(e),
            (meta, _) => meta,
        };
        if self.map.len() >= self.capacity {
            self.map.clear();
            self.mem = 0;
        }
        let mut budget = MEM_BUDGET.saturating_sub(self.mem);
        let result = meta.and_then(|meta| load_stated(root, rel, meta, &mut budget, cold_check));
        self.mem = MEM_BUDGET - budget;
        #[cfg(feature = "cold-lookups")]
        if matches!(&result, Err(e) if e.kind() == io::ErrorKind::WouldBlock) {
            return Err(cold(&mut self.went_cold, rel));
        }
        let cached = match &result {
            Ok(e) => Ok(Rc::clone(e)),
            // Only definite answers about the path (absent: 404, refused:
            // 403) are cached; running out of descriptors or memory says
            // nothing about it.
            Err(e) => match (e.raw_os_error(), lookup_status(e)) {
                (Some(errno), Status::NOT_FOUND | Status::FORBIDDEN) => Err(errno),
                _ => return result,
            },
        };
        self.map.insert(
            key.into(),
            Slot {
                result: cached,
                fresh_until: self.now + self.valid,
            },
        );
        result
    }

    /// Whether sidecars of `entry` were found to exist (or not) recently
    /// enough to answer without looking them up again: no longer ago
    /// than a cached lookup may be trusted.
    pub fn sidecars_known(&self, entry: &Entry) -> Option<bool> {
        match entry.sidecars.get() {
            Some((until, exist)) if self.now < until => Some(exist),
            _ => None,
        }
    }

    /// Remembers whether sidecars of `entry` exist (see [`FileCache::sidecars_known`]).
    pub fn remember_sidecars(&self, entry: &Entry, exist: bool) {
        // (A lookup that would have waited says nothing: it is made again.)
        #[cfg(feature = "cold-lookups")]
        if self.went_cold.is_some() {
            return;
        }
        entry.sidecars.set(Some((self.now + self.valid, exist)));
    }
}

/// The cache's key for `rel` of site `site` (other than the default
/// one, 0, whose keys are the paths themselves), in `key`.
fn site_key(site: usize, rel: &[u8], key: &mut Vec<u8>) {
    // A relative path never starts with NUL: a NUL and the site's
    // number keep other sites' keys apart from the default site's.
    key.clear();
    key.push(0);
    key.extend_from_slice(&site.to_le_bytes());
    key.extend_from_slice(rel);
}

/// The cache's key for `rel` of site `site`.
#[cfg(feature = "cold-lookups")]
fn key(site: usize, rel: &[u8]) -> Vec<u8> {
    if site == 0 {
        return rel.to_vec();
    }
    let mut key = Vec::new();
    site_key(site, rel, &mut key);
    key
}

/// What a lookup made off the event loop found ([`find`]), for the
/// worker's cache to keep ([`FileCache::install`]).
#[cfg(feature = "cold-lookups")]
#[derive(Debug)]
pub enum Found {
    /// The version the cache holds: its entry is trusted again.
    Same,
    /// What the path names now, or why it cannot be looked up.
    Now(io::Result<Opened>),
}

/// What a path names ([`Found::Now`]): its metadata, and for a regular
/// file the file opened and, when small, its content.
#[cfg(feature = "cold-lookups")]
pub type Opened = (Meta, Option<(File, Option<Vec<u8>>)>);

/// What [`find`] found of a path a request looks up (`rel`), and of its
/// precompressed variants (`sidecars`: each path and what was found).
#[cfg(feature = "cold-lookups")]
#[derive(Debug)]
pub struct Looked {
    /// The path (relative to the site's root).
    pub rel: Vec<u8>,
    /// What it names.
    pub found: Found,
    /// Its precompressed variants' paths, and what each names.
    pub sidecars: Vec<(Vec<u8>, Found)>,
}

/// Looks `rel` up beneath `root` as [`FileCache::lookup`] would, off the
/// event loop (a thread's work: nothing of it is the worker's); `known`,
/// the version the worker's cache holds, is not opened again.
#[cfg(feature = "cold-lookups")]
pub fn find(root: &Root, rel: &[u8], known: Option<&Meta>) -> Found {
    let found = || -> io::Result<Option<_>> {
        let (_, meta) = root.stat(rel)?;
        if known.is_some_and(|k| same_version(k, &meta)) {
            return Ok(None);
        }
        if meta.kind != Kind::File {
            return Ok(Some((meta, None)));
        }
        let (file, meta) = root.open_stated(rel, &meta)?;
        let mut content = None;
        if meta.size <= SMALL_FILE {
            let mut bytes = vec![0u8; meta.size as usize];
            file.read_exact_at(&mut bytes, 0)?;
            content = Some(bytes);
        }
        Ok(Some((meta, Some((file, content)))))
    };
    match found() {
        Ok(None) => Found::Same,
        Ok(Some(now)) => Found::Now(Ok(now)),
        Err(e) => Found::Now(Err(e)),
    }
}

/// [`Root::stat`] of `rel` for a lookup not fresh in the cache; with
/// `cold_check`, `Ok(None)` where it would wait: on a network or FUSE
/// filesystem ([`Root::remote`]) any lookup may, unasked (a server is
/// asked again for the attributes and at each open, whatever the
/// kernel's caches hold); elsewhere one whose path is not in the
/// kernel's caches ([`Root::stat_cached`]). A probe for a file that is
/// usually not there (`keep_misses` false) is made all the same on a
/// local disk (see [`FileCache::wait_cold`]).
fn stat_unless_cold(
    root: &Root,
    rel: &[u8],
    cold_check: bool,
    keep_misses: bool,
) -> io::Result<Option<(OwnedFd, Meta)>> {
    #[cfg(feature = "cold-lookups")]
    if cold_check {
        if root.remote(rel) {
            return Ok(None);
        }
        if keep_misses {
            return root.stat_cached(rel);
        }
    }
    let _ = (cold_check, keep_misses);
    root.stat(rel).map(Some)
}

/// `rel`'s lookup would wait for the disk: kept in `went` (the first
/// such), and the error said.
#[cfg(feature = "cold-lookups")]
#[cold]
fn cold(went: &mut Option<Vec<u8>>, rel: &[u8]) -> io::Error {
    if went.is_none() {
        *went = Some(rel.to_vec());
    }
    io::Error::from(io::ErrorKind::WouldBlock)
}

fn same_version(a: &Meta, b: &Meta) -> bool {
    a.kind == b.kind
        && a.dev == b.dev
        && a.ino == b.ino
        && a.size == b.size
        && a.mtime_ns == b.mtime_ns
        && a.ctime_ns == b.ctime_ns
}

/// Reads what `rel` names from the disk; small file contents count
/// against `budget` (bytes still allowed in memory). With `nowait`, a
/// small file's content not all in the page cache is not read: a
/// `WouldBlock` error instead.
pub(super) fn load(
    root: &Root,
    rel: &[u8],
    budget: &mut usize,
    nowait: bool,
) -> io::Result<Rc<Entry>> {
    let (_, meta) = root.stat(rel)?;
    load_stated(root, rel, meta, budget, nowait)
}

/// [`load`] of `rel`, just stat'ed as `meta`.
fn load_stated(
    root: &Root,
    rel: &[u8],
    meta: Meta,
    budget: &mut usize,
    nowait: bool,
) -> io::Result<Rc<Entry>> {
    if meta.kind != Kind::File {
        return Ok(entry(meta, None));
    }
    let (file, meta) = root.open_stated(rel, &meta)?;
    let source = if meta.size <= SMALL_FILE && (meta.size as usize) <= *budget {
        let mut content = vec![0u8; meta.size as usize];
        match nowait {
            #[cfg(feature = "cold-lookups")]
            true => crate::sys::cached::read_cached(&file, &mut content)?,
            _ => file.read_exact_at(&mut content, 0)?,
        }
        *budget -= content.len();
        Source::Mem(content.into())
    } else {
        Source::File(Rc::new(file))
    };
    Ok(entry(meta, Some(source)))
}

/// The entry of what `meta` describes: with its content and validators
/// when it is a regular file (`source`).
fn entry(meta: Meta, source: Option<Source>) -> Rc<Entry> {
    Rc::new(Entry {
        validators: match source {
            Some(_) => validators(&meta),
            None => Box::default(),
        },
        meta,
        source,
        sidecars: Cell::new(None),
        sniffed: Cell::new(None),
        variants: RefCell::default(),
    })
}

/// `ETag: "…"\r\nLast-Modified: …\r\n` for the file `meta` describes.
fn validators(meta: &Meta) -> Box<[u8]> {
    let mut validators = Vec::with_capacity(80);
    validators.extend_from_slice(b"ETag: ");
    conditional::write_etag(
        meta.mtime_secs(),
        meta.mtime_nsec(),
        meta.size,
        &mut validators,
    );
    validators.extend_from_slice(b"\r\nLast-Modified: ");
    let mut date = [0u8; HTTP_DATE_LEN];
    // A file dated in the future says now instead (RFC 9110 §8.8.2.1's
    // MUST): then no date a client sends back matches it, and it is
    // never taken as unmodified (the ETag still names its version).
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    format_http_date(meta.mtime.min(now), &mut date);
    validators.extend_from_slice(&date);
    validators.extend_from_slice(b"\r\n");
    validators.into()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// On a network or FUSE filesystem, every lookup not fresh in the
    /// cache may wait (probes too): none is made while lookups may not
    /// wait. What a thread found is kept, fresh: small content in memory,
    /// a large file's descriptor, its variants' misses where one of them
    /// exists, and that it has none where none does; a version the cache
    /// holds is not opened again.
    #[cfg(feature = "cold-lookups")]
    #[test]
    fn a_remote_root_s_lookups_are_made_off_the_loop_and_kept() {
        let dir = std::env::temp_dir().join(format!("brisk-fremote-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("a.html"), b"a").unwrap();
        std::fs::write(dir.join("a.html.gz"), b"gz").unwrap();
        std::fs::write(dir.join("big"), vec![b'b'; SMALL_FILE as usize + 1]).unwrap();
        let mut root = Root::open(&dir, false).unwrap();
        root.force_remote();
        let mut cache = FileCache::new(16, Duration::from_secs(60));
        let would_wait =
            |r: io::Result<Rc<Entry>>| r.unwrap_err().kind() == io::ErrorKind::WouldBlock;
        cache.wait_cold(false);
        assert!(would_wait(cache.lookup(&root, b"a.html")));
        assert_eq!(cache.went_cold().as_deref(), Some(&b"a.html"[..]));
        cache.wait_cold(false);
        assert!(
            would_wait(cache.probe(&root, b"a.html.br")),
            "a probe waits too"
        );
        assert!(cache.went_cold().is_some());
        let looked = |rel: &[u8], known: Option<&Meta>, sidecars: &[&str]| Looked {
            rel: rel.to_vec(),
            found: find(&root, rel, known),
            sidecars: sidecars
                .iter()
                .map(|s| {
                    let path = [rel, s.as_bytes()].concat();
                    let found = find(&root, &path, None);
                    (path, found)
                })
                .collect(),
        };
        cache.install(0, looked(b"a.html", None, &[".br", ".gz"]));
        cache.install(0, looked(b"big", None, &[".br", ".gz"]));
        cache.wait_cold(false);
        let a = cache.lookup(&root, b"a.html").unwrap();
        assert!(matches!(&a.source, Some(Source::Mem(m)) if &m[..] == b"a"));
        assert_eq!(cache.sidecars_known(&a), None, "one exists: each is probed");
        let br = cache.probe(&root, b"a.html.br").unwrap_err();
        assert_eq!(br.kind(), io::ErrorKind::NotFound, "the miss was kept");
        assert!(cache.probe(&root, b"a.html.gz").is_ok());
        let big = cache.lookup(&root, b"big").unwrap();
        assert!(matches!(&big.source, Some(Source::File(_))));
        assert_eq!(cache.sidecars_known(&big), Some(false), "none exists");
        cache.install(0, looked(b"gone.html", None, &[".br", ".gz"]));
        let gone = cache.lookup(&root, b"gone.html").unwrap_err();
        assert_eq!(gone.kind(), io::ErrorKind::NotFound);
        let gz = cache.probe(&root, b"gone.html.gz").unwrap_err();
        assert_eq!(
            gz.kind(),
            io::ErrorKind::NotFound,
            "a missing file's variants: kept"
        );
        assert!(cache.went_cold().is_none(), "all from the cache");
        // Trusted no longer: asked again, off the loop.
        cache.set_now(Instant::now() + Duration::from_secs(120));
        cache.wait_cold(false);
        assert!(would_wait(cache.lookup(&root, b"big")));
        cache.went_cold();
        let known = cache.known(0, b"big").unwrap();
        assert!(matches!(find(&root, b"big", Some(&known)), Found::Same));
        cache.install(0, looked(b"big", Some(&known), &[]));
        cache.wait_cold(false);
        assert!(
            Rc::ptr_eq(&cache.lookup(&root, b"big").unwrap(), &big),
            "the same entry"
        );
        std::fs::write(dir.join("big"), b"now small").unwrap();
        cache.install(0, looked(b"big", Some(&known), &[]));
        let now = cache.lookup(&root, b"big").unwrap();
        assert!(matches!(&now.source, Some(Source::Mem(m)) if &m[..] == b"now small"));
        assert!(cache.went_cold().is_none());
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// In a tree clients write, on a remote root: every lookup asks the
    /// disk (off the loop), even one just kept; the request whose lookups
    /// those were trusts them once (`trust_lately`), until the tree is
    /// looked up for another.
    #[cfg(all(feature = "cold-lookups", feature = "webdav"))]
    #[test]
    fn a_written_tree_trusts_lookups_made_for_the_request_only() {
        let dir = std::env::temp_dir().join(format!("brisk-fwritten-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("a.html"), b"a").unwrap();
        let mut root = Root::open(&dir, false).unwrap();
        root.force_remote();
        let mut cache = FileCache::new(16, Duration::from_secs(60));
        let looked = Looked {
            rel: b"a.html".to_vec(),
            found: find(&root, b"a.html", None),
            sidecars: Vec::new(),
        };
        cache.install(7, looked);
        cache.for_written_tree(7);
        cache.wait_cold(false);
        let r = cache.lookup(&root, b"a.html");
        assert_eq!(r.unwrap_err().kind(), io::ErrorKind::WouldBlock);
        assert!(cache.went_cold().is_some(), "checked: asked again");
        cache.for_written_tree(7);
        cache.trust_lately();
        cache.wait_cold(false);
        let a = cache.lookup(&root, b"a.html").unwrap();
        assert!(matches!(&a.source, Some(Source::Mem(m)) if &m[..] == b"a"));
        assert!(cache.went_cold().is_none(), "what was looked up for it");
        cache.for_written_tree(7);
        cache.wait_cold(false);
        assert!(cache.lookup(&root, b"a.html").is_err(), "for another");
        assert!(cache.went_cold().is_some());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn probes_that_miss_take_no_slot() {
        let dir = std::env::temp_dir().join(format!("brisk-fcache-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("a.html"), b"a").unwrap();
        std::fs::write(dir.join("b.html.gz"), b"b").unwrap();
        let root = Root::open(&dir, false).unwrap();
        let mut cache = FileCache::new(8, Duration::from_secs(60));
        assert!(cache.lookup(&root, b"a.html").is_ok());
        assert!(cache.lookup(&root, b"missing.html").is_err());
        assert_eq!(cache.map.len(), 2, "lookups keep hits and misses");
        assert!(cache.probe(&root, b"a.html.gz").is_err());
        assert!(cache.probe(&root, b"a.html.br").is_err());
        assert_eq!(cache.map.len(), 2, "a probe that misses takes no slot");
        assert!(cache.probe(&root, b"b.html.gz").is_ok());
        assert_eq!(cache.map.len(), 3, "a probe that finds a file keeps it");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_sniffed_type_is_read_once_per_entry() {
        let dir = std::env::temp_dir().join(format!("brisk-fsniff-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut big = vec![b'x'; SMALL_FILE as usize + 1];
        big[..8].copy_from_slice(b"\x89PNG\r\n\x1a\n");
        std::fs::write(dir.join("big"), &big).unwrap();
        std::fs::write(dir.join("small"), b"%PDF-1.4").unwrap();
        let root = Root::open(&dir, false).unwrap();
        let mut cache = FileCache::new(8, Duration::from_secs(60));
        let big_entry = cache.lookup(&root, b"big").unwrap();
        assert!(matches!(big_entry.source, Some(Source::File(_))));
        assert_eq!(big_entry.sniffed_type(), Some("image/png"));
        let small = cache.lookup(&root, b"small").unwrap();
        assert_eq!(small.sniffed_type(), Some("application/pdf"));
        // Rewritten in place (same size): the entry keeps what it read,
        // so the file is not read again per request.
        big[..6].copy_from_slice(b"GIF89a");
        std::fs::write(dir.join("big"), &big).unwrap();
        assert_eq!(big_entry.sniffed_type(), Some("image/png"));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
