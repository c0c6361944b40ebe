//! Which files under the document root are CGI programs, so that the
//! static handler never serves a program's source: the files of a `dir`
//! rule's directory when it lies inside the root (whatever URL reaches
//! them), and the files a `pattern` rule's glob claims.

use std::io;
use std::path::Path;

use crate::config::{CgiRule, CgiTarget};
use crate::http::glob;

/// The CGI programs among the files of a document root.
#[derive(Debug, Default)]
pub struct Programs {
    /// `dir` rules' directories inside the root, relative to it.
    dirs: Vec<Vec<u8>>,
    /// `pattern` rules' globs on file names.
    patterns: Vec<Vec<u8>>,
}

impl Programs {
    /// The programs `rules` make of the files under `root`.
    pub fn new(rules: &[CgiRule], root: &Path) -> io::Result<Programs> {
        let root = crate::sys::fs::canonical(root)?;
        let mut programs = Programs::default();
        for rule in rules {
            match &rule.target {
                CgiTarget::Dir { dir, .. } => {
                    if let Ok(rel) = dir.strip_prefix(&root) {
                        programs
                            .dirs
                            .push(rel.as_os_str().as_encoded_bytes().to_vec());
                    }
                }
                CgiTarget::Pattern(p) => programs.patterns.push(p.as_bytes().to_vec()),
                CgiTarget::Program { .. } => {}
            }
        }
        Ok(programs)
    }

    /// Whether `rel` (relative to the root) is, or is inside, a CGI
    /// directory, or names a file a CGI pattern claims.
    pub fn contains(&self, rel: &[u8]) -> bool {
        let in_dir = self.dirs.iter().any(|d| {
            d.is_empty() || rel == &d[..] || (rel.starts_with(d) && rel.get(d.len()) == Some(&b'/'))
        });
        // (The name is looked for only when a pattern may claim it: with
        // none, a static file's request pays nothing here.)
        in_dir
            || !self.patterns.is_empty() && {
                let name = rel.rsplit(|&b| b == b'/').next().unwrap_or(rel);
                self.patterns.iter().any(|p| glob::matches(p, name))
            }
    }
}
