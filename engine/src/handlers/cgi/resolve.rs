//! Request path → CGI script (RFC 3875 §3.3: `SCRIPT_NAME` and
//! `PATH_INFO`), or a refusal.
//!
//! The rules are tried in file order and the first whose URL (or, for a
//! pattern, whose glob) applies decides. Files are looked up through
//! [`Root`], so no symlink can lead out of a CGI directory or, for a
//! pattern, out of the document root — even when static files may follow
//! such links. The source of a script is never left for the static
//! handler to serve: under a `dir` rule's URL every failure is a 403 or a
//! 404, and a file matching a `pattern` that cannot run is a 403.

use std::ffi::{CString, OsStr};
use std::io;
use std::os::fd::AsFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use crate::config::{CgiRule, CgiTarget};
use crate::handlers::protected::Protected;
use crate::handlers::refusal::lookup_status;
use crate::handlers::Refusal;
use crate::http::glob;
use crate::http::Status;
use crate::sys::fs::{Kind, Root};
use crate::sys::spawn::{permitted, Access, Command};
use std::sync::Arc;

/// What to do with a request path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resolved {
    /// No CGI rule applies: the static handler serves it.
    NotCgi,
    /// Run this script.
    Cgi(Script),
    /// A CGI rule applies but nothing can run: answer with this status
    /// (403 or 404), never with the file.
    Denied(Denial),
}

/// Why a CGI rule refused a path: the status, and the reason and file
/// for the debug log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Denial {
    pub status: Status,
    pub why: Refusal,
    /// The file or directory concerned (absolute).
    pub file: PathBuf,
}

impl Denial {
    /// A failed lookup of `file`.
    fn lookup(e: &io::Error, file: PathBuf) -> Resolved {
        Resolved::Denied(Denial {
            status: lookup_status(e),
            why: Refusal::lookup(e),
            file,
        })
    }

    /// One of the files brisk itself reads: never run, answered as a
    /// missing file.
    fn own(file: PathBuf) -> Resolved {
        Resolved::Denied(Denial {
            status: Status::NOT_FOUND,
            why: Refusal::OwnFile,
            file,
        })
    }

    /// A 403 for `file`.
    fn forbidden(why: Refusal, file: PathBuf) -> Resolved {
        Resolved::Denied(Denial {
            status: Status::FORBIDDEN,
            why,
            file,
        })
    }
}

/// A script to run, and the names the RFC 3875 environment gives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Script {
    /// Index of the rule in `Config::cgi`, for its interpreter and `env`.
    pub rule: usize,
    /// What to execute: the interpreter if the rule has one, else the script.
    pub program: PathBuf,
    /// Arguments after `argv[0]`: the script path when an interpreter
    /// runs it, else none. (RFC 3875 §4.4's search-string arguments are
    /// deliberately not passed: scripts read `QUERY_STRING`.)
    pub args: Vec<PathBuf>,
    /// The script's absolute path (`SCRIPT_FILENAME`).
    pub script_filename: PathBuf,
    /// The URL path of the script (`SCRIPT_NAME`, RFC 3875 §4.1.13);
    /// empty for a program mapped at `/`.
    pub script_name: Vec<u8>,
    /// The decoded rest of the URL path after the script, starting with
    /// `/`, or empty (`PATH_INFO`, RFC 3875 §4.1.5).
    pub path_info: Vec<u8>,
    /// The script's directory: the working directory it runs in.
    pub cwd: PathBuf,
    /// The file name starts with `nph-`: the script writes the whole HTTP
    /// response itself, status line included (RFC 3875 §5).
    pub nph: bool,
}

impl Script {
    /// How to start the script with the environment `env`.
    pub fn command<'a>(&'a self, env: &'a [CString]) -> Command<'a> {
        Command {
            program: &self.program,
            args: &self.args,
            env,
            cwd: &self.cwd,
        }
    }
}

/// Resolves `path` against `rules` in one go, opening whatever directory
/// the matching rule needs for this call only. A worker resolving many
/// requests should keep a [`Resolver`] instead.
///
/// `path` is the decoded, normalised URL path: it starts with `/` and has
/// no `.` or `..` segments; the dotfile policy was applied by the caller.
pub fn resolve(rules: &[CgiRule], doc_root: &Path, path: &[u8]) -> Resolved {
    Resolver::lazy(rules, doc_root).resolve(path)
}

/// Whether a `dir` or `program` rule's URL covers `/`, so that CGI
/// answers the site's front page (a `pattern` only takes file names).
pub fn takes_root(rules: &[CgiRule]) -> bool {
    rules.iter().any(|rule| match &rule.target {
        CgiTarget::Dir { url, .. } | CgiTarget::Program { url, .. } => under(url, b"/").is_some(),
        CgiTarget::Pattern(_) => false,
    })
}

/// Whether a `dir` or `program` rule's URL covers `path` (a decoded,
/// normalised URL path): the request is that rule's, whether its
/// script exists or not.
pub fn takes_url(rules: &[CgiRule], path: &[u8]) -> bool {
    rules.iter().any(|rule| match &rule.target {
        CgiTarget::Dir { url, .. } | CgiTarget::Program { url, .. } => under(url, path).is_some(),
        CgiTarget::Pattern(_) => false,
    })
}

/// The CGI rules with their directories held open, for one worker.
///
/// A directory renamed or replaced after [`Resolver::new`] is not seen
/// until a new resolver is made (on reload).
#[derive(Debug)]
pub struct Resolver {
    rules: Vec<CgiRule>,
    doc_root: PathBuf,
    /// Per rule: its directory (`dir`) or the document root (`pattern`);
    /// `None` for a program, or when it is to be opened per call.
    roots: Vec<Option<Root>>,
    /// The files brisk itself reads: never run (a `dir` or `pattern`
    /// rule's; a `program` is named by the configuration itself).
    pub(super) protected: Arc<Protected>,
}

impl Resolver {
    /// Opens the directory of every `dir` rule, and the document root if a
    /// `pattern` rule needs it.
    pub fn new(rules: &[CgiRule], doc_root: &Path) -> io::Result<Resolver> {
        let mut roots = Vec::with_capacity(rules.len());
        for rule in rules {
            roots.push(match &rule.target {
                CgiTarget::Dir { dir, .. } => Some(Root::open(dir, false)?),
                CgiTarget::Pattern(_) => Some(Root::open(doc_root, false)?),
                CgiTarget::Program { .. } => None,
            });
        }
        Ok(Resolver {
            rules: rules.to_vec(),
            doc_root: doc_root.to_path_buf(),
            roots,
            protected: Arc::default(),
        })
    }

    /// Has the resolver refuse the files `protected` (see
    /// [`crate::handlers::protected`]).
    pub fn protecting(mut self, protected: Arc<Protected>) -> Resolver {
        self.protected = protected;
        self
    }

    /// The same rules, on descriptors of their own (for a thread).
    #[cfg(feature = "cold-lookups")]
    pub fn try_clone(&self) -> io::Result<Resolver> {
        let roots = self
            .roots
            .iter()
            .map(|root| root.as_ref().map(Root::try_clone));
        Ok(Resolver {
            rules: self.rules.clone(),
            doc_root: self.doc_root.clone(),
            roots: roots.map(Option::transpose).collect::<io::Result<_>>()?,
            protected: Arc::clone(&self.protected),
        })
    }

    /// Whether resolving `path` ([`Resolver::resolve`]) may wait for the
    /// disk: the rule that takes it looks it up beneath a directory on a
    /// network or FUSE filesystem ([`Root::remote`]), or where the kernel
    /// cannot find it from its caches ([`Root::resolves_cached`]).
    #[cfg(feature = "cold-lookups")]
    pub fn would_wait(&self, path: &[u8]) -> bool {
        for (i, rule) in self.rules.iter().enumerate() {
            let (rel, last) = match &rule.target {
                CgiTarget::Program { url, .. } if under(url, path).is_some() => return false,
                CgiTarget::Program { .. } => continue,
                CgiTarget::Dir { url, .. } => match under(url, path) {
                    Some(base) => (&path[base..], true),
                    None => continue,
                },
                // (A pattern's walk may leave the path to the next rule.)
                CgiTarget::Pattern(glob) => match last_matching_end(glob.as_bytes(), path) {
                    Some(end) => (&path[..end], false),
                    None => continue,
                },
            };
            let rel = rel.strip_prefix(b"/").unwrap_or(rel);
            let waits = self.roots[i]
                .as_ref()
                .is_some_and(|root| root.remote(rel) || !root.resolves_cached(rel));
            if waits || last {
                return waits;
            }
        }
        false
    }

    /// A resolver that opens directories when a request needs them.
    fn lazy(rules: &[CgiRule], doc_root: &Path) -> Resolver {
        Resolver {
            rules: rules.to_vec(),
            doc_root: doc_root.to_path_buf(),
            roots: rules.iter().map(|_| None).collect(),
            protected: Arc::default(),
        }
    }

    /// Resolves a decoded, normalised URL path (see [`resolve()`]).
    pub fn resolve(&self, path: &[u8]) -> Resolved {
        for (i, rule) in self.rules.iter().enumerate() {
            match &rule.target {
                CgiTarget::Program { url, program } => {
                    if let Some(base) = under(url, path) {
                        return Resolved::Cgi(self.program(i, program, base, path));
                    }
                }
                CgiTarget::Dir { url, dir } => {
                    if let Some(base) = under(url, path) {
                        return match self.root(i, dir) {
                            Ok(root) => self.walk_dir(i, &root, dir, base, path),
                            Err(e) => Denial::lookup(&e, dir.clone()),
                        };
                    }
                }
                CgiTarget::Pattern(glob) => {
                    if let Some(found) = self.walk_pattern(i, glob.as_bytes(), path) {
                        return found;
                    }
                }
            }
        }
        Resolved::NotCgi
    }

    /// The rule's open directory, or one opened now.
    fn root(&self, i: usize, dir: &Path) -> io::Result<RootRef<'_>> {
        match &self.roots[i] {
            Some(root) => Ok(RootRef::Held(root)),
            None => Root::open(dir, false).map(RootRef::Owned),
        }
    }

    fn program(&self, i: usize, program: &Path, base: usize, path: &[u8]) -> Script {
        let (exe, args) = self.command(i, program);
        Script {
            rule: i,
            program: exe,
            args,
            script_filename: program.to_path_buf(),
            script_name: path[..base].to_vec(),
            path_info: path[base..].to_vec(),
            cwd: parent(program),
            nph: is_nph(program),
        }
    }

    /// `program` and `args` for running `script` under rule `i`.
    fn command(&self, i: usize, script: &Path) -> (PathBuf, Vec<PathBuf>) {
        match &self.rules[i].interpreter {
            Some(interp) => (interp.clone(), vec![script.to_path_buf()]),
            None => (script.to_path_buf(), Vec::new()),
        }
    }

    /// What a regular file must allow for rule `i` to run it.
    fn access(&self, i: usize) -> Access {
        if self.rules[i].interpreter.is_some() {
            Access::Read
        } else {
            Access::Execute
        }
    }

    /// Walks `path[base..]` under a `dir` rule's directory: directories
    /// lead on, the first regular file is the script, and anything else —
    /// ending on a directory, a missing name, a special file, a symlink
    /// out — is refused rather than left to the static handler.
    fn walk_dir(&self, i: usize, root: &Root, dir: &Path, base: usize, path: &[u8]) -> Resolved {
        let mut rel: Vec<u8> = Vec::new();
        let mut pos = base;
        loop {
            // `path[pos..]` is empty or starts with `/`.
            let Some((seg, end)) = segment(path, pos) else {
                // The rule's directory itself, or a subdirectory: no listing.
                return Denial::forbidden(Refusal::CgiDirectory, join(dir, &rel));
            };
            push_segment(&mut rel, seg);
            let (fd, meta) = match root.stat(&rel) {
                Ok(found) => found,
                Err(e) => return Denial::lookup(&e, join(dir, &rel)),
            };
            match meta.kind {
                Kind::Dir => pos = end,
                Kind::Special => return Denial::forbidden(Refusal::NotRegular, join(dir, &rel)),
                Kind::File if self.protected.contains(&meta) => {
                    return Denial::own(join(dir, &rel));
                }
                Kind::File => {
                    return match permitted(fd.as_fd(), self.access(i)) {
                        Ok(true) => Resolved::Cgi(self.script(i, dir, &rel, path, end)),
                        _ => Denial::forbidden(Refusal::NotRunnable, join(dir, &rel)),
                    }
                }
            }
        }
    }

    /// Walks `path` under the document root for a `pattern` rule. `None`
    /// when the rule does not apply (no segment matches, or the walk meets
    /// a non-matching file, a missing non-matching name, or ends on a
    /// directory): the next rule or the static handler decides.
    fn walk_pattern(&self, i: usize, glob: &[u8], path: &[u8]) -> Option<Resolved> {
        // No syscalls for the common case of a path no segment matches.
        let last = last_matching_end(glob, path)?;
        let root = match self.root(i, &self.doc_root) {
            Ok(root) => root,
            Err(e) => return Some(Denial::lookup(&e, self.doc_root.clone())),
        };
        let mut rel: Vec<u8> = Vec::new();
        let mut pos = 0;
        while pos < last {
            let (seg, end) = segment(path, pos)?;
            let matched = glob::matches(glob, seg);
            push_segment(&mut rel, seg);
            let (fd, meta) = match root.stat(&rel) {
                Ok(found) => found,
                // A matching name that cannot be looked up: maybe a symlink
                // out, which the static handler might be allowed to follow.
                Err(e) if matched => return Some(Denial::lookup(&e, join(&self.doc_root, &rel))),
                Err(_) => return None,
            };
            match meta.kind {
                Kind::Dir => pos = end,
                _ if !matched => return None,
                Kind::Special => {
                    return Some(Denial::forbidden(
                        Refusal::NotRegular,
                        join(&self.doc_root, &rel),
                    ))
                }
                Kind::File if self.protected.contains(&meta) => {
                    return Some(Denial::own(join(&self.doc_root, &rel)));
                }
                Kind::File => {
                    return Some(match permitted(fd.as_fd(), self.access(i)) {
                        Ok(true) => Resolved::Cgi(self.script(i, &self.doc_root, &rel, path, end)),
                        _ => Denial::forbidden(Refusal::NotRunnable, join(&self.doc_root, &rel)),
                    })
                }
            }
        }
        None
    }

    /// The script `rel` under `dir`, found at `path[..end]`.
    fn script(&self, i: usize, dir: &Path, rel: &[u8], path: &[u8], end: usize) -> Script {
        let file = dir.join(OsStr::from_bytes(rel));
        let (program, args) = self.command(i, &file);
        Script {
            rule: i,
            program,
            args,
            script_name: path[..end].to_vec(),
            path_info: path[end..].to_vec(),
            cwd: parent(&file),
            nph: is_nph(&file),
            script_filename: file,
        }
    }
}

/// A directory held by the resolver or opened for one call.
enum RootRef<'a> {
    Held(&'a Root),
    Owned(Root),
}

impl std::ops::Deref for RootRef<'_> {
    type Target = Root;
    fn deref(&self) -> &Root {
        match self {
            RootRef::Held(r) => r,
            RootRef::Owned(r) => r,
        }
    }
}

/// If `path` is at or under the URL prefix `url`, the length of the
/// prefix without its trailing `/` (which becomes `SCRIPT_NAME` for a
/// program). `/tool` and `/tool/` both cover `/tool`, `/tool/` and
/// `/tool/x`, never `/toolbox`; `/` covers everything.
fn under(url: &str, path: &[u8]) -> Option<usize> {
    let url = url.as_bytes();
    let base = url.strip_suffix(b"/").unwrap_or(url);
    let rest = path.strip_prefix(base)?;
    (rest.is_empty() || rest[0] == b'/').then_some(base.len())
}

/// The segment of `path` after the `/` at `pos`, and where it ends.
/// `None` at the end of the path or at a trailing `/`.
fn segment(path: &[u8], pos: usize) -> Option<(&[u8], usize)> {
    let start = pos + 1;
    let tail = path.get(start..)?;
    let end = tail
        .iter()
        .position(|&b| b == b'/')
        .map_or(path.len(), |n| start + n);
    (end > start).then(|| (&path[start..end], end))
}

/// Where the last segment matching `glob` ends, if any does.
fn last_matching_end(glob: &[u8], path: &[u8]) -> Option<usize> {
    let mut last = None;
    let mut pos = 0;
    while let Some((seg, end)) = segment(path, pos) {
        if glob::matches(glob, seg) {
            last = Some(end);
        }
        pos = end;
    }
    last
}

fn push_segment(rel: &mut Vec<u8>, seg: &[u8]) {
    if !rel.is_empty() {
        rel.push(b'/');
    }
    rel.extend_from_slice(seg);
}

/// `dir/rel` (for the log).
fn join(dir: &Path, rel: &[u8]) -> PathBuf {
    dir.join(OsStr::from_bytes(rel))
}

fn parent(file: &Path) -> PathBuf {
    file.parent()
        .map_or_else(|| PathBuf::from("/"), Path::to_path_buf)
}

fn is_nph(file: &Path) -> bool {
    file.file_name()
        .is_some_and(|n| n.as_bytes().starts_with(b"nph-"))
}
