//! The files brisk itself reads or writes ([`Config::own_files`]: the
//! configuration, password files, TLS keys, servlet sources, pid and log
//! files) are never answered with, when they lie under a document root:
//! a request for one gets the 404 a missing file gets (the same bytes),
//! and the debug log says why. Whatever path leads to one (a symlink,
//! `..` resolved, another case on a case-insensitive file system, a hard
//! link), it is the same file: they are told by their identity (device
//! and inode), taken when the configuration is loaded (and again on each
//! reload, and the new ones on SIGUSR1, after a log rotation), and
//! compared with the identity of each file as it is opened, which the
//! open already gave.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use crate::config::Config;
use crate::sys::fs::Meta;

/// Identities learnt after the load at most (see [`Protected::learn`]).
const LATER: usize = 8;

/// The identities of the files brisk reads (see the module
/// documentation): a handful, so a scan is cheaper than a hash.
#[derive(Debug, Default)]
pub struct Protected {
    ids: Box<[(u64, u64)]>,
    /// Identities learnt since (device, inode), each pair written before
    /// `later_len` counts it: the workers read them without a lock.
    later: [(AtomicU64, AtomicU64); LATER],
    later_len: AtomicUsize,
    /// One bit per identity ([`bit`]), set once it is known: most files
    /// are told apart by one load and a test, without the scan.
    filter: AtomicU64,
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
        Protected {
            ids: ids.into(),
            filter: AtomicU64::new(filter),
            ..Protected::default()
        }
    }

    /// Adds the identities `cfg`'s own files have now that were not known
    /// (a log file made anew by a rotation), up to a few: only the
    /// thread that handles signals calls it.
    pub fn learn(&self, cfg: &Config) {
        use std::os::unix::fs::MetadataExt;
        for (file, _) in cfg.own_files_with(false) {
            let Ok(m) = std::fs::metadata(&file) else {
                continue;
            };
            let n = self.later_len.load(Ordering::Acquire);
            if self.known(m.dev(), m.ino()) || n == LATER {
                continue;
            }
            self.later[n].0.store(m.dev(), Ordering::Relaxed);
            self.later[n].1.store(m.ino(), Ordering::Relaxed);
            self.later_len.store(n + 1, Ordering::Release);
            // After the count: whoever sees the bit sees the pair.
            self.filter
                .fetch_or(bit(m.dev(), m.ino()), Ordering::Release);
        }
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
        // A file made after the load (a rotated log) is learnt, once.
        let mut cfg = cfg;
        cfg.log.error = crate::config::LogTarget::File(dir.join("error.log"));
        std::fs::write(dir.join("error.log"), "").unwrap();
        p.learn(&cfg);
        p.learn(&cfg);
        assert_eq!(p.len(), 2);
        let (_, meta) = root.stat(b"error.log").unwrap();
        assert!(p.contains(&meta));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
