//! Request path → the script a `[[fastcgi]]` rule runs, or a refusal,
//! before anything is sent to the application.
//!
//! The script is the path up to the end of the first segment that ends
//! with the rule's `split_path` (`/app/a.php/b/c`: `/app/a.php`, and
//! `PATH_INFO=/b/c`), or the whole path without `split_path`; a
//! directory's path (ending in `/`) names the rule's `index` when no
//! `[static] index` file is there. It must be a regular file beneath
//! the rule's root, looked up through [`Root`] (no `..`, no symlink
//! leading out): `/uploads/evil.jpg/x.php` is no file (`evil.jpg` is not
//! a directory), so it is a 404 and `evil.jpg` never runs. A path that
//! names no file goes to the rule's `fallback` when it has one.
//!
//! A script found is remembered for `[static] open_file_cache_valid`
//! (see [`Checked`]), as nginx's `open_file_cache` remembers a
//! `try_files` check: the three system calls of the check (`openat2`,
//! `fstat`, `close`) are made once per script and period, not once per
//! request.

use std::collections::HashMap;
use std::io;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::config::{CgiRule, FastcgiRule};
use crate::handlers::protected::Protected;
use crate::handlers::refusal::lookup_status;
use crate::handlers::Refusal;
use crate::hash::FnvMap;
use crate::http::Status;
use crate::spare::Spare;
use crate::sys::fs::{Kind, Meta, Root};

/// A script to run, with the names its parameters give it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Script {
    /// Index of the rule in the site's `fastcgi` rules.
    pub rule: usize,
    /// The script's absolute path (`SCRIPT_FILENAME`).
    pub filename: PathBuf,
    /// Its URL path (`SCRIPT_NAME`).
    pub name: Vec<u8>,
    /// The rest of the URL path after it, or empty (`PATH_INFO`).
    pub path_info: Vec<u8>,
}

/// What a path comes to under the `[[fastcgi]]` rules.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Found {
    /// No rule takes it: the next stage answers.
    No,
    /// Run this script.
    Script(Script),
    /// A rule takes it but nothing can run: this status (404, 403), never
    /// the file; the reason and the file are for the debug log.
    Refused(Status, Refusal, PathBuf),
}

/// One site's `[[fastcgi]]` rules with their roots held open.
#[derive(Debug)]
pub struct Scripts {
    rules: Vec<FastcgiRule>,
    /// Per rule: its root (`root`, or the site's) and where it is.
    roots: Vec<(Root, PathBuf)>,
    /// The site's own root, where `[static] index` files are looked for.
    site: Root,
    /// `[static] index`.
    static_index: Vec<String>,
    /// The site's `[[cgi]]` rules, whose URLs the `fallback` leaves to
    /// them (their stage comes after this one).
    cgi: Vec<CgiRule>,
    /// The scripts found lately.
    checked: Checked,
    /// The buffers of scripts given back ([`Scripts::give_back`]), for
    /// the next names: a warm request makes none of its own.
    spare: Spare<Vec<u8>, SPARES, SPARE_BYTES>,
    /// Lookups that would wait for the disk, made off the event loop.
    #[cfg(feature = "cold-lookups")]
    cold: Cold,
}

/// Buffers kept at most by [`Scripts::give_back`] (a script's name and
/// file name, and the next request's), none over [`SPARE_BYTES`].
const SPARES: usize = 4;
const SPARE_BYTES: usize = 4096;

/// The root a lookup is made beneath: rule `i`'s, or the site's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Under {
    /// Rule `i`'s (`DOCUMENT_ROOT`).
    Rule(usize),
    /// The site's document root.
    Site,
}

/// A path beneath a root, and what looking it up found (a `stat`'s
/// metadata, or its error number).
#[cfg(feature = "cold-lookups")]
pub type Statted = (Under, Vec<u8>, Result<Meta, i32>);

/// What [`Scripts::find`] does with a lookup that would wait for the
/// disk (see `crate::handlers::file_cache::FileCache::wait_cold`): while
/// `check` says so, none is made; each is kept in `went`, to be made
/// off the loop ([`Scripts::cold_lookups`]), and what they find is
/// trusted for the open-file cache's time (`found`).
#[cfg(feature = "cold-lookups")]
#[derive(Debug, Default)]
struct Cold {
    check: bool,
    went: Vec<(Under, Vec<u8>)>,
    /// Per rule, then the site's: each path, what was found and until
    /// when it is trusted.
    found: Vec<Lately>,
}

/// Paths beneath one root, each with what a lookup off the loop found
/// and until when it is trusted.
#[cfg(feature = "cold-lookups")]
type Lately = FnvMap<Box<[u8]>, (Result<Meta, i32>, Instant)>;

#[cfg(feature = "cold-lookups")]
impl Cold {
    /// What lookups off the loop found beneath `under`.
    fn found(&mut self, under: Under) -> &mut Lately {
        let at = match under {
            Under::Rule(i) => i + 1,
            Under::Site => 0,
        };
        if self.found.len() <= at {
            self.found.resize_with(at + 1, FnvMap::default);
        }
        &mut self.found[at]
    }
}

/// Looks `rel` up beneath the root `under` names, for [`Scripts::find`]:
/// from what a lookup off the loop found lately, if any; not at all
/// (`WouldBlock`, the path kept) where it would wait for the disk while
/// [`Scripts::wait_cold`] says so.
fn stat(scripts: &mut Scripts, under: Under, rel: &[u8], now: Instant) -> io::Result<Meta> {
    let root = match under {
        Under::Rule(i) => &scripts.roots[i].0,
        Under::Site => &scripts.site,
    };
    #[cfg(feature = "cold-lookups")]
    {
        let cold = &mut scripts.cold;
        let lately = cold.found(under);
        let found = if lately.is_empty() {
            None
        } else {
            lately.get(rel)
        };
        if let Some((found, until)) = found {
            if now < *until {
                return found.map_err(io::Error::from_raw_os_error);
            }
        }
        if cold.check && (root.remote(rel) || !root.resolves_cached(rel)) {
            if !cold.went.iter().any(|(u, r)| *u == under && r == rel) {
                cold.went.push((under, rel.to_vec()));
            }
            return Err(io::Error::from(io::ErrorKind::WouldBlock));
        }
    }
    let _ = now;
    root.stat(rel).map(|(_, m)| m)
}

/// The scripts of a site found to exist lately, per rule: the URL path
/// relative to the rule's root (the key, with the rule's index) and
/// until when it may be run without looking at the disk again. Only
/// what was found is kept (a missing script is looked for at every
/// request: a 404 is no hot path, and a script created is found at
/// once). A script deleted, renamed or replaced stops being taken for
/// one at most `valid` later, as a static file's change shows in at
/// most that long (and php-fpm, which opens the script by its name,
/// finds it missing at once). What the cache vouches for was checked in
/// full when it was put there (beneath the root, a regular file, none
/// of brisk's own): someone who can swap files in the root meanwhile
/// could as well write a script, which is no more than what they could
/// do without it. Bounded: when `capacity` are held it is emptied and
/// refills; a capacity of 0 (`open_file_cache = 0`) keeps none.
#[derive(Debug)]
struct Checked {
    per_rule: Vec<FnvMap<Box<[u8]>, Instant>>,
    /// Entries at most (every rule's together).
    capacity: usize,
    held: usize,
    valid: Duration,
}

impl Checked {
    /// Whether `rel` was found under rule `rule` lately enough to go by.
    fn fresh(&self, rule: usize, rel: &[u8], now: Instant) -> bool {
        self.per_rule[rule]
            .get(rel)
            .is_some_and(|&until| now < until)
    }

    /// Remembers that `rel` was found under rule `rule` at `now`.
    fn found(&mut self, rule: usize, rel: &[u8], now: Instant) {
        if self.capacity == 0 {
            return;
        }
        let until = now + self.valid;
        if let Some(at) = self.per_rule[rule].get_mut(rel) {
            *at = until;
            return;
        }
        if self.held >= self.capacity {
            self.per_rule.iter_mut().for_each(HashMap::clear);
            self.held = 0;
        }
        self.per_rule[rule].insert(rel.into(), until);
        self.held += 1;
    }

    /// Forgets `rel` under rule `rule` (no longer a script).
    fn forget(&mut self, rule: usize, rel: &[u8]) {
        if self.per_rule[rule].remove(rel).is_some() {
            self.held -= 1;
        }
    }
}

impl Scripts {
    /// Opens the roots of `rules` (the site's `root` for those without
    /// one); `static_index` are the site's `[static] index` names, `cgi`
    /// its `[[cgi]]` rules. Up to `cache` scripts found are remembered,
    /// each for `valid` (`[static] open_file_cache` and
    /// `open_file_cache_valid`).
    pub fn new(
        rules: &[FastcgiRule],
        site_root: &Path,
        static_index: &[String],
        cgi: &[CgiRule],
        (cache, valid): (usize, Duration),
    ) -> io::Result<Self> {
        let mut roots = Vec::with_capacity(rules.len());
        for rule in rules {
            let dir = rule.root.as_deref().unwrap_or(site_root);
            roots.push((Root::open(dir, false)?, dir.to_path_buf()));
        }
        Ok(Scripts {
            rules: rules.to_vec(),
            roots,
            site: Root::open(site_root, false)?,
            static_index: static_index.to_vec(),
            cgi: cgi.to_vec(),
            checked: Checked {
                per_rule: rules.iter().map(|_| HashMap::default()).collect(),
                capacity: cache,
                held: 0,
                valid,
            },
            spare: Spare::default(),
            #[cfg(feature = "cold-lookups")]
            cold: Cold::default(),
        })
    }

    /// Whether the lookups of [`Scripts::find`] may wait for the disk
    /// (`true`, as by default), or are not made where they would (a path
    /// not in the kernel's caches, or any beneath a root on a network or
    /// FUSE filesystem, `Root::remote`), unless made off the loop lately;
    /// those are then said by [`Scripts::went_cold`].
    #[cfg(feature = "cold-lookups")]
    pub fn wait_cold(&mut self, wait: bool) {
        self.cold.check = !wait;
        self.cold.went.clear();
    }

    /// Ends what [`Scripts::wait_cold`] began: the lookups that would have
    /// waited since.
    #[cfg(feature = "cold-lookups")]
    pub fn went_cold(&mut self) -> Vec<(Under, Vec<u8>)> {
        self.cold.check = false;
        std::mem::take(&mut self.cold.went)
    }

    /// What makes the lookups `went` ([`Scripts::went_cold`]) on a
    /// thread, and returns what they found for [`Scripts::install`];
    /// `None` if the roots cannot be handed over (out of descriptors).
    #[cfg(feature = "cold-lookups")]
    pub fn cold_lookups(
        &self,
        went: Vec<(Under, Vec<u8>)>,
    ) -> Option<impl FnOnce() -> Vec<Statted> + Send + 'static> {
        let mut roots = Vec::with_capacity(went.len());
        for (under, _) in &went {
            let root = match *under {
                Under::Rule(i) => &self.roots[i].0,
                Under::Site => &self.site,
            };
            roots.push(root.try_clone().ok()?);
        }
        Some(move || {
            let looked = went.into_iter().zip(roots);
            looked
                .map(|((under, rel), root)| {
                    let found = root.stat(&rel).map(|(_, m)| m);
                    let found = found.map_err(|e| e.raw_os_error().unwrap_or(libc::EIO));
                    (under, rel, found)
                })
                .collect()
        })
    }

    /// Keeps what lookups made off the loop found ([`Scripts::cold_lookups`]),
    /// trusted from `now` for the open-file cache's time (and forgotten
    /// when stale, past as many as that cache holds).
    #[cfg(feature = "cold-lookups")]
    pub fn install(&mut self, found: Vec<Statted>, now: Instant) {
        let until = now + self.checked.valid;
        let held: usize = self.cold.found.iter().map(HashMap::len).sum();
        if held + found.len() > self.checked.capacity.max(16) {
            for paths in &mut self.cold.found {
                paths.retain(|_, (_, at)| now < *at);
            }
        }
        for (under, rel, found) in found {
            self.cold.found(under).insert(rel.into(), (found, until));
        }
    }

    /// The rules.
    pub fn rules(&self) -> &[FastcgiRule] {
        &self.rules
    }

    /// Where rule `i`'s scripts are (`DOCUMENT_ROOT`).
    pub fn root(&self, i: usize) -> &Path {
        &self.roots[i].1
    }

    /// The script the decoded, normalised `path` runs, if a rule takes
    /// it (the first that does, in file order); `protected` files never
    /// run. `now` is the event loop's clock (for the scripts found
    /// lately).
    pub fn find(&mut self, path: &[u8], protected: &Protected, now: Instant) -> Found {
        for i in 0..self.rules.len() {
            let found = self.under_rule(i, path, protected, now);
            if found != Found::No {
                return found;
            }
        }
        Found::No
    }

    /// Keeps the buffers of `script` (once its request went), for the
    /// next scripts' names.
    pub fn give_back(&mut self, script: Script) {
        use std::os::unix::ffi::OsStringExt;
        let file = script.filename.into_os_string().into_vec();
        for buf in [script.name, file, script.path_info] {
            self.spare.keep(buf);
        }
    }

    fn under_rule(&mut self, i: usize, path: &[u8], protected: &Protected, now: Instant) -> Found {
        let cut = match &self.rules[i].split_path {
            Some(end) => split(path, end.as_bytes()),
            None => Some(path.len()),
        };
        let mut script = cut.map(|at| {
            let info = match at < path.len() {
                true => self.spare.copy(&path[at..]),
                false => Vec::new(),
            };
            (self.spare.copy(&path[..at]), info)
        });
        // `/a.php/` is script `/a.php` with `PATH_INFO=/` (as nginx's
        // `fastcgi_split_path_info` splits it), unless `a.php` is a
        // directory: then it is that directory's path, as any other.
        let split_dir = |scripts: &mut Scripts, (name, _): &(Vec<u8>, Vec<u8>)| {
            let rel = name.strip_prefix(b"/").unwrap_or(name);
            matches!(stat(scripts, Under::Rule(i), rel, now), Ok(m) if m.kind == Kind::Dir)
        };
        if path.ends_with(b"/") && script.as_ref().is_none_or(|s| split_dir(self, s)) {
            let rel = &path[1..];
            for at in 0..self.static_index.len() {
                let file = [rel, self.static_index[at].as_bytes()].concat();
                if matches!(stat(self, Under::Site, &file, now), Ok(m) if m.kind == Kind::File) {
                    return Found::No;
                }
            }
            script = self.rules[i]
                .index
                .as_ref()
                .map(|index| ([path, index.as_bytes()].concat(), Vec::new()));
        }
        let rule = &self.rules[i];
        if let Some((name, info)) = script.filter(|(name, _)| rule.matches.matches(name)) {
            let has_fallback = rule.fallback.is_some();
            return match lookup(self, i, &name, protected, now) {
                Ok(filename) => Found::Script(Script {
                    rule: i,
                    filename,
                    name,
                    path_info: info,
                }),
                Err(Found::Refused(Status::NOT_FOUND, ..)) if has_fallback => {
                    self.fallback(i, path, protected, now)
                }
                // (A directory without the rule's index: the static
                // stage's, as any directory.)
                Err(Found::Refused(Status::NOT_FOUND, ..)) if path.ends_with(b"/") => Found::No,
                Err(refused) => refused,
            };
        }
        if !rule.matches.matches(path) || rule.fallback.is_none() {
            return Found::No;
        }
        // A path the rule takes that names no script: a file there is
        // the static stage's (a stylesheet, an image), and so is a
        // directory named without its `/` (redirected to it); anything
        // else (a directory without an index) is the front controller's.
        let rel = path.strip_prefix(b"/").unwrap_or(path);
        match stat(self, Under::Site, rel, now) {
            Ok(m) if m.kind == Kind::File => Found::No,
            Ok(m) if m.kind == Kind::Dir && !path.ends_with(b"/") => Found::No,
            _ => self.fallback(i, path, protected, now),
        }
    }

    /// The rule's `fallback` script for `path`; a 404 when it is missing
    /// too. A path under a `[[cgi]]` rule's `url` is that rule's (as
    /// nginx's `location /cgi-bin/` wins over `location /`): the CGI
    /// stage answers it, running its script or refusing.
    fn fallback(&mut self, i: usize, path: &[u8], protected: &Protected, now: Instant) -> Found {
        let Some(name) = &self.rules[i].fallback else {
            return Found::No;
        };
        if crate::handlers::cgi::takes_url(&self.cgi, path) {
            return Found::No;
        }
        let name = name.as_bytes().to_vec();
        match lookup(self, i, &name, protected, now) {
            Ok(filename) => Found::Script(Script {
                rule: i,
                filename,
                name,
                path_info: Vec::new(),
            }),
            Err(refused) => refused,
        }
    }
}

/// The regular file at URL path `name` beneath rule `i`'s root: from the
/// scripts found lately, or looked up (then remembered, or forgotten).
fn lookup(
    scripts: &mut Scripts,
    i: usize,
    name: &[u8],
    protected: &Protected,
    now: Instant,
) -> Result<PathBuf, Found> {
    let rel = name.strip_prefix(b"/").unwrap_or(name);
    // (As `dir.join(rel)`, in one allocation, if that: a buffer given
    // back before.)
    let mut file = scripts.spare.take();
    let dir = scripts.roots[i].1.as_os_str().as_bytes();
    file.reserve(dir.len() + 1 + rel.len());
    file.extend_from_slice(dir);
    if !dir.ends_with(b"/") {
        file.push(b'/');
    }
    file.extend_from_slice(rel);
    let file = PathBuf::from(std::ffi::OsString::from_vec(file));
    if scripts.checked.fresh(i, rel, now) {
        return Ok(file);
    }
    let refused = match stat(scripts, Under::Rule(i), rel, now) {
        Err(e) => (lookup_status(&e), Refusal::lookup(&e)),
        Ok(meta) if protected.contains(&meta) => (Status::NOT_FOUND, Refusal::OwnFile),
        Ok(meta) => match meta.kind {
            Kind::File => {
                scripts.checked.found(i, rel, now);
                return Ok(file);
            }
            // (A directory is no script: `/a.php/` names none.)
            Kind::Dir => (Status::NOT_FOUND, Refusal::Lookup(libc::ENOENT)),
            Kind::Special => (Status::FORBIDDEN, Refusal::NotRegular),
        },
    };
    scripts.checked.forget(i, rel);
    Err(Found::Refused(refused.0, refused.1, file))
}

/// Where `path` splits, after the first segment that ends with `end`
/// (the script before, `PATH_INFO` after); none when no segment does.
pub fn split(path: &[u8], end: &[u8]) -> Option<usize> {
    let mut pos = 0;
    while pos < path.len() {
        let stop = path[pos + 1..]
            .iter()
            .position(|&b| b == b'/')
            .map_or(path.len(), |n| pos + 1 + n);
        let segment = &path[pos + 1..stop];
        if segment.len() > end.len() && segment.ends_with(end) {
            return Some(stop);
        }
        pos = stop;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::split;

    fn parts(path: &str) -> Option<(String, String)> {
        let at = split(path.as_bytes(), b".php")?;
        Some((path[..at].to_string(), path[at..].to_string()))
    }

    #[test]
    fn the_script_ends_at_the_first_segment_that_ends_with_split_path() {
        let p = |a: &str, b: &str| Some((a.to_string(), b.to_string()));
        assert_eq!(parts("/app/a.php/b/c"), p("/app/a.php", "/b/c"));
        assert_eq!(parts("/a.php"), p("/a.php", ""));
        assert_eq!(parts("/a.php/"), p("/a.php", "/"));
        assert_eq!(parts("/x.php/y.php/z"), p("/x.php", "/y.php/z"));
        // Only a whole segment's end: evil.jpg/x.php is the script's name
        // as a whole (a directory evil.jpg that cannot be).
        assert_eq!(
            parts("/uploads/evil.jpg/x.php"),
            p("/uploads/evil.jpg/x.php", "")
        );
        assert_eq!(parts("/a.php.bak/b"), None);
        assert_eq!(parts("/a.phpx"), None);
        assert_eq!(parts("/.php/b"), None, "a name that is all extension");
        assert_eq!(parts("/"), None);
    }

    /// Rule 0 of a site whose scripts are in a new directory, with
    /// `cache` scripts remembered for a second; the directory.
    #[cfg(all(feature = "sites", feature = "upstreams"))]
    fn scripts(name: &str, cache: usize) -> (super::Scripts, std::path::PathBuf) {
        let dir = std::env::temp_dir().join(format!("brisk-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let dir = dir.canonicalize().unwrap();
        let toml = format!(
            "[[fastcgi]]\npattern = \"*.php\"\nto = \"unix:/run/x.sock\"\nroot = \"{}\"\n",
            dir.display()
        );
        let cfg = crate::config::rules::from_toml(&toml).unwrap();
        let valid = std::time::Duration::from_secs(1);
        let s = super::Scripts::new(&cfg.site.fastcgi, &dir, &[], &[], (cache, valid)).unwrap();
        (s, dir)
    }

    #[cfg(all(feature = "sites", feature = "upstreams"))]
    #[test]
    fn a_script_found_is_taken_for_one_until_valid_is_over_and_no_miss_is_kept() {
        use super::Found;
        use crate::handlers::protected::Protected;
        use crate::http::Status;
        use std::time::{Duration, Instant};
        let runs = |f: &Found| matches!(f, Found::Script(_));
        let missing = |f: &Found| matches!(f, Found::Refused(Status::NOT_FOUND, ..));
        let mine = Protected::default();
        let (mut s, dir) = scripts("fcgi-found", 8);
        let t0 = Instant::now();
        std::fs::write(dir.join("a.php"), "<?php").unwrap();
        assert!(runs(&s.find(b"/a.php", &mine, t0)));
        std::fs::remove_file(dir.join("a.php")).unwrap();
        let soon = t0 + Duration::from_millis(999);
        assert!(runs(&s.find(b"/a.php", &mine, soon)), "found lately");
        let later = t0 + Duration::from_secs(1);
        assert!(
            missing(&s.find(b"/a.php", &mine, later)),
            "looked for again"
        );
        // A miss is not kept: the script created is found at once; and
        // what was looked for again is forgotten.
        std::fs::write(dir.join("a.php"), "<?php").unwrap();
        assert!(runs(&s.find(b"/a.php", &mine, later)));
        assert!(missing(&s.find(b"/b.php", &mine, later)));
        std::fs::write(dir.join("b.php"), "<?php").unwrap();
        assert!(runs(&s.find(b"/b.php", &mine, later)));
        // The classic hole stays closed: no directory, no script.
        std::fs::write(dir.join("evil.jpg"), "<?php").unwrap();
        assert!(missing(&s.find(b"/evil.jpg/x.php", &mine, later)));
        assert_eq!(s.checked.held, 2);
        // A full cache empties and refills.
        for name in ["c", "d", "e", "f", "g", "h", "i"] {
            std::fs::write(dir.join(format!("{name}.php")), "<?php").unwrap();
            assert!(runs(&s.find(
                format!("/{name}.php").as_bytes(),
                &mine,
                later
            )));
        }
        assert_eq!(s.checked.held, 1, "emptied at 8, then i.php");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[cfg(all(feature = "sites", feature = "upstreams"))]
    #[test]
    fn without_an_open_file_cache_every_request_looks_for_its_script() {
        use super::Found;
        use crate::handlers::protected::Protected;
        use std::time::Instant;
        let mine = Protected::default();
        let (mut s, dir) = scripts("fcgi-nocache", 0);
        let now = Instant::now();
        std::fs::write(dir.join("a.php"), "<?php").unwrap();
        assert!(matches!(s.find(b"/a.php", &mine, now), Found::Script(_)));
        std::fs::remove_file(dir.join("a.php")).unwrap();
        assert!(matches!(s.find(b"/a.php", &mine, now), Found::Refused(..)));
        assert_eq!(s.checked.held, 0);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
