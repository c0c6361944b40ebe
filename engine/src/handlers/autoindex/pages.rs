//! Rendered listings, shared: the requests for the same unchanged
//! directory, in the same view, from every worker, are answered from one
//! rendered page (and one compressed copy of it per coding) that each
//! stream only points at, rather than each rendering and holding its own
//! (a directory of 60,000 entries is a 10 MB page: a hundred HTTP/2
//! streams asking for it at once made a worker hold 1-2 GB and block its
//! event loop for half a minute).
//!
//! Kept on a [`Shelf`] (see [`crate::handlers::listings`] for when a
//! kept page serves): [`MAX_PAGES`] pages, [`MAX_BYTES`] in all, for the
//! site's `open_file_cache_valid` (the most any answer of it lags behind
//! a file changed in place).

use std::io;
use std::sync::{Arc, Weak};
use std::time::Duration;

use super::View;
use crate::config::Config;
use crate::handlers::listings::{self, Shelf};
use crate::sys::fs::Meta;

/// The most pages kept.
pub const MAX_PAGES: usize = 64;
/// The most bytes of pages kept (a directory of 10,000 entries is a
/// page of about 1.8 MB, 200 KB gzipped).
pub const MAX_BYTES: usize = 32 << 20;

/// What a page depends on besides the directory's entries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Key {
    /// The configuration (its address: see [`Page::config`]) and site,
    /// which decide what is left out (dotfiles, brisk's own files) and
    /// how much is listed.
    config: usize,
    site: usize,
    /// The directory.
    dev: u64,
    ino: u64,
    /// The URL path it is listed at (the page's title).
    path: Box<[u8]>,
    view: View,
    /// 0: the page as rendered; else the coding's index + 1.
    coding: usize,
}

impl Key {
    /// The key of the page of directory `dir` of `site` of `config`,
    /// listed at `path` in `view`, as rendered.
    pub fn new(config: &Arc<Config>, site: usize, dir: &Meta, path: &[u8], view: View) -> Key {
        Key {
            config: Arc::as_ptr(config) as usize,
            site,
            dev: dir.dev,
            ino: dir.ino,
            path: path.into(),
            view,
            coding: 0,
        }
    }

    /// The key of the same page compressed with the coding of `index`.
    pub fn coded(&self, index: usize) -> Key {
        Key {
            coding: index + 1,
            ..self.clone()
        }
    }
}

/// A kept page.
#[derive(Debug)]
pub struct Page {
    /// The configuration it was made under: held so that its address,
    /// in the key, is not another's while the page is kept.
    _config: Weak<Config>,
    /// The bytes.
    pub body: Arc<[u8]>,
}

static PAGES: Shelf<Key, Page> = Shelf::new(MAX_PAGES, MAX_BYTES);

/// The page kept under `key` for the directory `dir` (as `stat` says
/// now), if one is, no older than `age`.
pub fn kept(key: &Key, dir: &Meta, age: Duration) -> Option<Arc<[u8]>> {
    match age.is_zero() {
        true => None,
        false => PAGES
            .get(key, dir, 0, age)
            .map(|kept| Arc::clone(&kept.body)),
    }
}

/// The page under `key` for the directory `dir` (as `stat` says now),
/// kept no longer than `age`; else made by `make` and kept.
pub fn page(
    key: Key,
    config: &Arc<Config>,
    dir: &Meta,
    age: Duration,
    make: impl FnOnce() -> io::Result<Vec<u8>>,
) -> io::Result<Arc<[u8]>> {
    if let Some(body) = kept(&key, dir, age) {
        return Ok(body);
    }
    let stamp = listings::stamp();
    let body: Arc<[u8]> = make()?.into();
    let page = Arc::new(Page {
        _config: Arc::downgrade(config),
        body: Arc::clone(&body),
    });
    PAGES.put(key, &page, body.len(), dir, 0, stamp, age);
    Ok(body)
}
