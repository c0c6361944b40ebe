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

use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use crate::config::FastcgiRule;
use crate::handlers::protected::Protected;
use crate::handlers::refusal::lookup_status;
use crate::handlers::Refusal;
use crate::http::Status;
use crate::sys::fs::{Kind, Root};

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
}

impl Scripts {
    /// Opens the roots of `rules` (the site's `root` for those without
    /// one); `static_index` are the site's `[static] index` names.
    pub fn new(
        rules: &[FastcgiRule],
        site_root: &Path,
        static_index: &[String],
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
        })
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
    /// run.
    pub fn find(&self, path: &[u8], protected: &Protected) -> Found {
        for (i, rule) in self.rules.iter().enumerate() {
            let found = self.under_rule(i, rule, path, protected);
            if found != Found::No {
                return found;
            }
        }
        Found::No
    }

    fn under_rule(
        &self,
        i: usize,
        rule: &FastcgiRule,
        path: &[u8],
        protected: &Protected,
    ) -> Found {
        let mut script = match &rule.split_path {
            Some(end) => split(path, end.as_bytes()),
            None => Some((path.to_vec(), Vec::new())),
        };
        if path.ends_with(b"/") {
            let rel = &path[1..];
            let has_static_index = self.static_index.iter().any(|name| {
                let file = [rel, name.as_bytes()].concat();
                matches!(self.site.stat(&file), Ok((_, m)) if m.kind == Kind::File)
            });
            if has_static_index {
                return Found::No;
            }
            script = rule
                .index
                .as_ref()
                .map(|index| ([path, index.as_bytes()].concat(), Vec::new()));
        }
        if let Some((name, info)) = script.filter(|(name, _)| rule.matches.matches(name)) {
            return match self.lookup(i, &name, protected) {
                Ok(filename) => Found::Script(Script {
                    rule: i,
                    filename,
                    name,
                    path_info: info,
                }),
                Err(Found::Refused(Status::NOT_FOUND, ..)) if rule.fallback.is_some() => {
                    self.fallback(i, rule, protected)
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
        match self.site.stat(rel) {
            Ok((_, m)) if m.kind == Kind::File => Found::No,
            Ok((_, m)) if m.kind == Kind::Dir && !path.ends_with(b"/") => Found::No,
            _ => self.fallback(i, rule, protected),
        }
    }

    /// The rule's `fallback` script; a 404 when it is missing too.
    fn fallback(&self, i: usize, rule: &FastcgiRule, protected: &Protected) -> Found {
        let Some(name) = &rule.fallback else {
            return Found::No;
        };
        match self.lookup(i, name.as_bytes(), protected) {
            Ok(filename) => Found::Script(Script {
                rule: i,
                filename,
                name: name.as_bytes().to_vec(),
                path_info: Vec::new(),
            }),
            Err(refused) => refused,
        }
    }

    /// The regular file at URL path `name` under rule `i`'s root.
    fn lookup(&self, i: usize, name: &[u8], protected: &Protected) -> Result<PathBuf, Found> {
        let (root, dir) = &self.roots[i];
        let rel = name.strip_prefix(b"/").unwrap_or(name);
        let file = dir.join(std::ffi::OsStr::from_bytes(rel));
        let refused = |status, why| Err(Found::Refused(status, why, file.clone()));
        match root.stat(rel) {
            Err(e) => refused(lookup_status(&e), Refusal::lookup(&e)),
            Ok((_, meta)) if protected.contains(&meta) => {
                refused(Status::NOT_FOUND, Refusal::OwnFile)
            }
            Ok((_, meta)) => match meta.kind {
                Kind::File => Ok(file),
                // (A directory is no script: `/a.php/` names none.)
                Kind::Dir => refused(Status::NOT_FOUND, Refusal::Lookup(libc::ENOENT)),
                Kind::Special => refused(Status::FORBIDDEN, Refusal::NotRegular),
            },
        }
    }
}

/// `path` split after the first segment that ends with `end` (the
/// script, and `PATH_INFO`); none when no segment does.
pub fn split(path: &[u8], end: &[u8]) -> Option<(Vec<u8>, Vec<u8>)> {
    let mut pos = 0;
    while pos < path.len() {
        let stop = path[pos + 1..]
            .iter()
            .position(|&b| b == b'/')
            .map_or(path.len(), |n| pos + 1 + n);
        let segment = &path[pos + 1..stop];
        if segment.len() > end.len() && segment.ends_with(end) {
            return Some((path[..stop].to_vec(), path[stop..].to_vec()));
        }
        pos = stop;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::split;

    fn parts(path: &str) -> Option<(String, String)> {
        let (a, b) = split(path.as_bytes(), b".php")?;
        Some((String::from_utf8(a).unwrap(), String::from_utf8(b).unwrap()))
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
}
