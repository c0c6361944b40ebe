//! The files brisk itself reads or writes ([`Config::own_files`]: the
//! configuration, password files, TLS keys, servlet sources, pid and log
//! files) are never answered with, when they lie under a document root:
//! a request for one gets the 404 a missing file gets (the same bytes),
//! and the debug log says why. Whatever path leads to one (a symlink,
//! `..` resolved, another case on a case-insensitive file system, a hard
//! link), it is the same file: they are told by their identity (device
//! and inode), taken when the configuration is loaded (and again on each
//! reload), and compared with the identity of each file as it is opened,
//! which the open already gave.

use crate::config::Config;
use crate::sys::fs::Meta;

/// The identities of the files brisk reads (see the module
/// documentation): a handful, so a scan is cheaper than a hash.
#[derive(Debug, Default, Clone)]
pub struct Protected {
    ids: Box<[(u64, u64)]>,
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
        ids.sort_unstable();
        ids.dedup();
        Protected { ids: ids.into() }
    }

    /// Whether the file `meta` describes is one of them.
    #[inline]
    pub fn contains(&self, meta: &Meta) -> bool {
        self.ids
            .iter()
            .any(|&(dev, ino)| dev == meta.dev && ino == meta.ino)
    }

    /// How many files are protected.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
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
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
