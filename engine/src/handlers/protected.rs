//! The files brisk itself reads or writes ([`Config::own_files`]: the
//! configuration, password files, TLS keys, servlet sources, pid and log
//! files) are never answered with, when they lie under a document root:
//! a request for one gets the 404 a missing file gets (the same bytes),
//! and the debug log says why. Whatever path leads to one (a symlink,
//! `..` resolved, another case on a case-insensitive file system, a hard
//! link), it is the same file: they are told by their identity (device
//! and inode), taken when the configuration is loaded (and again on each
//! reload), and compared with the identity of each file as it is opened,
//! which the open already gave. A file replaced since (an editor's or a
//! tool's write to a new file renamed over the old one, a log rotation)
//! has a new identity: the main thread looks at the paths again twice a
//! second (and at once on SIGUSR1) and learns it.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use crate::config::Config;
use crate::sys::fs::Meta;

/// Identities learnt after the load at most (see [`Protected::learn`]);
/// a reload starts afresh.
pub const LATER: usize = 64;

/// The identities of the files brisk reads (see the module
/// documentation): a handful, so a scan is cheaper than a hash.
#[derive(Debug, Default)]
pub struct Protected {
    ids: Box<[(u64, u64)]>,
    /// The files looked at again by [`Protected::learn`] (servlet sources
    /// aside: the servlets' own set keeps them).
    paths: Box<[PathBuf]>,
    /// Identities learnt since (device, inode), each pair written before
    /// `later_len` counts it: the workers read them without a lock.
    later: Box<[(AtomicU64, AtomicU64)]>,
    later_len: AtomicUsize,
    /// One bit per identity ([`bit`]), set once it is known: most files
    /// are told apart by one load and a test, without the scan.
    filter: AtomicU64,
    /// Each step on the way to one of the files, as its path is written
    /// and as it resolves: the directory (its identity) and the name in
    /// it, and whether that name is the file's own. What WebDAV must not
    /// remove, rename or make anew (see [`Protected::way`]).
    #[cfg(feature = "webdav")]
    ways: Box<[Step]>,
    /// The directories on those ways (identities): aliases of them (a
    /// bind mount) are told by these.
    #[cfg(feature = "webdav")]
    holders: Box<[(u64, u64)]>,
}

/// One step of a way to a protected file: a name in a directory.
#[cfg(feature = "webdav")]
#[derive(Debug)]
struct Step {
    dir: (u64, u64),
    name: Box<[u8]>,
    /// The file's own name (not a directory on its way).
    last: bool,
}

/// What a name is to the protected files (see [`Protected::way`]).
#[cfg(feature = "webdav")]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Way {
    /// Nothing.
    Clear,
    /// One of the files (by its identity, or the name brisk opens it by,
    /// whether or not it exists now).
    File,
    /// A directory (or a symlink) on the way to one.
    Holder,
}

/// An identity's bit in [`Protected::filter`].
#[inline]
fn bit(dev: u64, ino: u64) -> u64 {
    1 << ((ino ^ dev) & 63)
}

impl Protected {
    /// The identities of `cfg`'s own files that exist now.
    pub fn collect(cfg: &Config) -> Protected {
        Protected::collect_with(cfg, true)
    }

    /// [`Protected::collect`], with the servlet sources or without them
    /// (for the servlets, which read them).
    pub fn collect_with(cfg: &Config, servlet_sources: bool) -> Protected {
        use std::os::unix::fs::MetadataExt;
        let mut ids: Vec<(u64, u64)> = cfg
            .own_files_with(servlet_sources)
            .iter()
            .filter_map(|(f, _)| std::fs::metadata(f).ok())
            .map(|m| (m.dev(), m.ino()))
            .collect();
        crate::sort::sort_by(&mut ids, |a, b| a.cmp(b));
        ids.dedup();
        let filter = ids.iter().fold(0, |f, &(dev, ino)| f | bit(dev, ino));
        let paths = cfg.own_files_with(false).into_iter().map(|(f, _)| f);
        #[cfg(feature = "webdav")]
        let (mut ways, mut holders) = (Vec::new(), Vec::new());
        #[cfg(feature = "webdav")]
        for (file, _) in cfg.own_files_with(servlet_sources) {
            let real = crate::sys::fs::canonical(&file).ok();
            for path in std::iter::once(file.as_path()).chain(real.as_deref()) {
                steps(path, &mut ways, &mut holders);
            }
        }
        #[cfg(feature = "webdav")]
        {
            crate::sort::sort_by(&mut holders, |a, b| a.cmp(b));
            holders.dedup();
        }
        Protected {
            ids: ids.into(),
            paths: paths.collect(),
            later: (0..LATER).map(|_| Default::default()).collect(),
            filter: AtomicU64::new(filter),
            #[cfg(feature = "webdav")]
            ways: ways.into(),
            #[cfg(feature = "webdav")]
            holders: holders.into(),
            ..Protected::default()
        }
    }

    /// What `name` in the directory `dir` is to the files, `meta` being
    /// what it is now (not followed, if it is a symlink) when it exists.
    #[cfg(feature = "webdav")]
    pub fn way(&self, dir: &Meta, name: &[u8], meta: Option<&Meta>) -> Way {
        let step = self
            .ways
            .iter()
            .find(|s| s.dir == (dir.dev, dir.ino) && *s.name == *name);
        if let Some(step) = step {
            return if step.last { Way::File } else { Way::Holder };
        }
        match meta {
            Some(m) if self.contains(m) => Way::File,
            Some(m) if self.holders.contains(&(m.dev, m.ino)) => Way::Holder,
            _ => Way::Clear,
        }
    }

    /// Adds the identities the files have now that were not known (a
    /// file replaced, a log file made anew by a rotation), up to
    /// [`LATER`]: only the main thread calls it. Returns false when one
    /// could not be kept (until the next reload).
    pub fn learn(&self) -> bool {
        use std::os::unix::fs::MetadataExt;
        for file in &self.paths {
            let Ok(m) = std::fs::metadata(file) else {
                continue;
            };
            let n = self.later_len.load(Ordering::Acquire);
            if self.known(m.dev(), m.ino()) {
                continue;
            }
            if n == self.later.len() {
                return false;
            }
            self.later[n].0.store(m.dev(), Ordering::Relaxed);
            self.later[n].1.store(m.ino(), Ordering::Relaxed);
            self.later_len.store(n + 1, Ordering::Release);
            // After the count: whoever sees the bit sees the pair.
            self.filter
                .fetch_or(bit(m.dev(), m.ino()), Ordering::Release);
        }
        true
    }

    /// Whether the file `meta` describes is one of them.
    #[inline]
    pub fn contains(&self, meta: &Meta) -> bool {
        self.known(meta.dev, meta.ino)
    }

    #[inline]
    fn known(&self, dev: u64, ino: u64) -> bool {
        if self.filter.load(Ordering::Acquire) & bit(dev, ino) == 0 {
            return false;
        }
        self.ids.contains(&(dev, ino))
            || self.later[..self.later_len.load(Ordering::Acquire)]
                .iter()
                .any(|(d, i)| d.load(Ordering::Relaxed) == dev && i.load(Ordering::Relaxed) == ino)
    }

    /// How many files are protected.
    pub fn len(&self) -> usize {
        self.ids.len() + self.later_len.load(Ordering::Acquire)
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Each step of `path`'s way ([`Step`]) whose directory exists, into
/// `ways`, and those directories into `holders`.
#[cfg(feature = "webdav")]
fn steps(path: &std::path::Path, ways: &mut Vec<Step>, holders: &mut Vec<(u64, u64)>) {
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::MetadataExt;
    let mut last = true;
    let mut at = path;
    while let (Some(parent), Some(name)) = (at.parent(), at.file_name()) {
        let dir = if parent.as_os_str().is_empty() {
            std::path::Path::new(".")
        } else {
            parent
        };
        if let Ok(m) = std::fs::metadata(dir) {
            holders.push((m.dev(), m.ino()));
            ways.push(Step {
                dir: (m.dev(), m.ino()),
                name: name.as_bytes().into(),
                last,
            });
        }
        last = false;
        at = parent;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::fs::Root;

    #[test]
    fn a_file_is_known_by_its_identity_whatever_its_name() {
        let dir = std::env::temp_dir().join(format!("brisk-protected-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("brisk.toml"), "workers = 1\n").unwrap();
        std::fs::write(dir.join("other.txt"), "x").unwrap();
        std::fs::hard_link(dir.join("brisk.toml"), dir.join("hard.txt")).unwrap();
        std::os::unix::fs::symlink("brisk.toml", dir.join("soft.txt")).unwrap();
        let cfg = Config {
            config_file: Some(dir.join("brisk.toml")),
            ..Config::default()
        };
        let p = Protected::collect(&cfg);
        assert_eq!(p.len(), 1);
        let root = Root::open(&dir, false).unwrap();
        for name in ["brisk.toml", "hard.txt", "soft.txt"] {
            let (_, meta) = root.stat(name.as_bytes()).unwrap();
            assert!(p.contains(&meta), "{name}");
        }
        let (_, meta) = root.stat(b"other.txt").unwrap();
        assert!(!p.contains(&meta));
        assert!(!Protected::default().contains(&meta));
        // A file made after the load (a rotated log) is learnt, once; a
        // file replaced by another one renamed over it too, and the file
        // it replaced stays known.
        let mut cfg = cfg;
        cfg.log.error = crate::config::LogTarget::File(dir.join("error.log"));
        let p = Protected::collect(&cfg);
        std::fs::write(dir.join("error.log"), "").unwrap();
        assert!(p.learn() && p.learn());
        assert_eq!(p.len(), 2);
        let (_, meta) = root.stat(b"error.log").unwrap();
        assert!(p.contains(&meta));
        std::fs::write(dir.join("new.toml"), "workers = 2\n").unwrap();
        let (_, fresh) = root.stat(b"new.toml").unwrap();
        assert!(!p.contains(&fresh));
        std::fs::rename(dir.join("new.toml"), dir.join("brisk.toml")).unwrap();
        assert!(p.learn());
        assert!(p.contains(&fresh));
        let (_, old) = root.stat(b"hard.txt").unwrap();
        assert!(p.contains(&old));
        // Beyond LATER identities, a reload is needed.
        let replace = |i: usize| {
            std::fs::write(dir.join("next.toml"), format!("workers = {i}\n")).unwrap();
            // (Kept, so that no inode number comes back.)
            std::fs::hard_link(dir.join("next.toml"), dir.join(format!("{i}.kept"))).unwrap();
            std::fs::rename(dir.join("next.toml"), dir.join("brisk.toml")).unwrap();
        };
        let mut i = 0;
        while p.len() < 1 + LATER {
            replace(i);
            assert!(p.learn(), "{i}");
            i += 1;
        }
        replace(i);
        assert!(!p.learn());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
