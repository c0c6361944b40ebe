//! WebDAV (RFC 4918) beneath a `[[webdav]]` rule's root: what to answer
//! to OPTIONS, PUT, MKCOL, DELETE, PROPFIND (propfind.rs, its bodies read
//! by xml.rs), COPY and MOVE (copymove.rs), LOCK and UNLOCK (lock.rs, the
//! table in locks.rs, the `If` header in ifheader.rs); GET and HEAD are
//! the static handler's, over the rule's root (`static_files::serve_beneath`).
//!
//! Every change is made by name in a directory opened beneath the root
//! by the kernel-enforced rules of static files (`sys::dir`): no `..`, no
//! symlink out of the root, nothing written through a symlink.

use crate::ascii::IgnoreCase;
use std::fs::File;
use std::io;
use std::sync::{Arc, Condvar, Mutex};

use crate::config::{Config, Folding, WebdavRule};
use crate::handlers::protected::{Protected, Way};
use crate::handlers::refusal::errno;
use crate::handlers::spool::Spool;
use crate::handlers::static_files::StaticFiles;
use crate::handlers::stream::Later;
use crate::handlers::Refusal;
use crate::handlers::{Body, Plan, Scratch};
use crate::http::conditional::{self, write_etag, Precondition, Preconditions, Validators};
use crate::http::parse::BodyFraming;
use crate::http::range::ByteRange;
use crate::http::request::{Field, OwnedRequest};
use crate::http::Method;
use crate::http::Status;
use crate::offload::{Job, Offload};
use crate::sys::dir::{Dir, Staged};
use crate::sys::fs::{Kind, Meta};

mod change;
mod copymove;
pub mod ifheader;
mod listings;
mod lock;
pub mod locks;
mod multistatus;
mod propfind;
mod props;
mod sidecar;
pub mod xml;

pub use crate::http::path::destination;
pub use change::{make_later, Change};
pub use listings::changed;
pub use lock::{
    asked as lockinfo, container, forget, guard, is_collection, is_new, lock, trim, unlock,
    Changed, Recheck, LOCKED,
};
pub use propfind::{
    asked, depth, propfind, propfind_later, Asked, Viewer, MAX_BODY as MAX_PROPFIND,
};
pub use props::{follow as follow_props, mark_collection, ops as proppatch_ops, proppatch};

pub use multistatus::{href, push_href, Multistatus};

/// 201 Created.
const CREATED: Status = Status(201);
/// 409 Conflict (RFC 9110 §15.5.10): a collection on the way is missing.
const CONFLICT: Status = Status(409);

/// How deep DELETE goes into a tree before it reports what is below as
/// not removed.
const MAX_DEPTH: usize = 64;

/// One `[[webdav]]` rule in a worker: its settings and its tree.
#[derive(Debug)]
pub struct Dav {
    /// The rule.
    pub rule: WebdavRule,
    /// Its root, served by the site's static rules (GET, HEAD).
    pub files: StaticFiles,
    /// The key of its files in the worker's file cache (another than
    /// every site's: see `FileCache::for_site`).
    pub cache_key: usize,
    /// The site's types (`getcontenttype`), shared with streamed answers.
    pub mime: Arc<crate::http::mime::MimeTable>,
    /// Where the site's trees find names whatever their case.
    folding: Folding,
}

impl Dav {
    /// Rule `rule` of site `site`, whose files take cache key `cache_key`.
    pub fn new(
        cfg: Arc<Config>,
        site: usize,
        rule: &WebdavRule,
        protected: Arc<Protected>,
        cache_key: usize,
    ) -> io::Result<Dav> {
        let cfg_folding = cfg.site(site).folding.clone();
        let files = StaticFiles::beneath(cfg, site, protected, &rule.root)?;
        Ok(Dav {
            mime: Arc::new(files.mime().clone()),
            folding: cfg_folding,
            files,
            rule: rule.clone(),
            cache_key,
        })
    }

    /// Whether the resource at `rel` (relative to the root, without a
    /// trailing slash) lies where names are found whatever their case.
    pub fn folds(&self, rel: &[u8]) -> bool {
        !self.folding.is_empty()
            && self
                .folding
                .covers(&[self.rule.path.as_bytes(), rel].concat())
    }

    /// How many bytes of `path` (a decoded, normalised request path) are
    /// the rule's prefix, if the rule takes it: `/dav/x` and `/dav` (the
    /// collection itself, without its slash) for `/dav/`.
    pub fn takes(&self, path: &[u8]) -> Option<usize> {
        self.rule.takes(path)
    }

    /// The methods the rule answers, for `Allow`.
    pub fn allow(&self) -> &'static [u8] {
        match (self.rule.read_only, self.rule.locks) {
            (true, _) => b"OPTIONS, GET, HEAD, PROPFIND",
            (false, false) => {
                b"OPTIONS, GET, HEAD, PROPFIND, PUT, DELETE, MKCOL, COPY, MOVE, PROPPATCH"
            }
            (false, true) => {
                b"OPTIONS, GET, HEAD, PROPFIND, PUT, DELETE, MKCOL, COPY, MOVE, PROPPATCH, LOCK, UNLOCK"
            }
        }
    }
}

/// A method whose body is read whole before it is answered.
#[derive(Debug, Clone, Copy)]
pub enum Bodied {
    /// PROPFIND, with the members if `members`.
    Propfind {
        /// `Depth: 1`.
        members: bool,
    },
    /// PROPPATCH.
    Proppatch,
    /// LOCK (a new lock: a refresh has no body).
    Lock,
}

/// What a DAV method makes of a request.
#[derive(Debug)]
pub enum Started {
    /// Answered now.
    Answer(Plan),
    /// A PUT whose body goes into its file as it arrives; answered by
    /// [`Put::finish`] once it is all in.
    Upload(Box<Put>),
}

/// Splits `rel` (relative to the root, maybe ending in `/`) into its
/// directory and last name; `None` for the root itself.
fn split(rel: &[u8]) -> Option<(&[u8], &[u8])> {
    let rel = rel.strip_suffix(b"/").unwrap_or(rel);
    if rel.is_empty() {
        return None;
    }
    Some(match rel.iter().rposition(|&b| b == b'/') {
        Some(i) => (&rel[..i], &rel[i + 1..]),
        None => (&b""[..], rel),
    })
}

/// The status a failed change of the tree answers.
pub(super) fn status_of(e: &io::Error) -> Status {
    match e.raw_os_error() {
        Some(libc::ENOENT | libc::ENOTDIR) => CONFLICT,
        Some(libc::ENOSPC | libc::EDQUOT) => Status::INSUFFICIENT_STORAGE,
        Some(libc::EEXIST | libc::ENOTEMPTY) => Status::METHOD_NOT_ALLOWED,
        _ if e.kind() == io::ErrorKind::InvalidInput => Status::BAD_REQUEST,
        _ => Status::FORBIDDEN,
    }
}

/// [`status_of`] for a change of `rel` that failed with `e`, its reason
/// recorded in `s` for the error log (`warn` when the server may not
/// write there, `error` for a full disk: [`Refusal::level`]).
fn refused_change(dav: &Dav, rel: &[u8], e: &io::Error, s: &mut Scratch) -> Status {
    s.refuse_file(Refusal::Change(errno(e)), &in_tree(dav, rel));
    status_of(e)
}

/// `rel` (beneath `dav`'s root) as an absolute path, for the log.
fn in_tree(dav: &Dav, rel: &[u8]) -> Vec<u8> {
    use std::os::unix::ffi::OsStrExt;
    [dav.rule.root.as_os_str().as_bytes(), b"/", trim(rel)].concat()
}

/// An answer with no body (Content-Length: 0).
pub fn bare(status: Status) -> Plan {
    Plan {
        status,
        body: Body::Empty,
        close: false,
    }
}

/// Answers `later` with `plan`, made on another thread, its header lines
/// and body in `s`.
fn answer_later(
    later: Later,
    plan: Plan,
    s: Scratch,
) -> Result<(), crate::handlers::stream::LaterError> {
    let body = match plan.body {
        Body::Buffer => s.body,
        Body::Static(bytes) => bytes.to_vec(),
        _ => Vec::new(),
    };
    if let Some(why) = s.why {
        let file = &s.why_file;
        // (Its file is absolute: `in_tree`.)
        let root = std::path::Path::new("/");
        let text = crate::handlers::refusal::Explained { why, file, root }.to_string();
        later.note(why.level(), text);
    }
    later.answer_lines(plan.status, s.headers, body)
}

/// The directory `dir` beneath `dav`'s root; a missing one is 409
/// (RFC 4918 §9.7.1, §9.3.1: "intermediate collections").
fn parent(dav: &Dav, dir: &[u8]) -> Result<Dir, Status> {
    dav.files
        .root()
        .dir(dir)
        .map_err(|e| match e.raw_os_error() {
            Some(libc::ENOENT | libc::ENOTDIR) => CONFLICT,
            _ => Status::FORBIDDEN,
        })
}

/// The directory `dir` beneath `dav`'s root and what its `name` is: 404
/// when either is missing.
fn existing(dav: &Dav, dir: &[u8], name: &[u8]) -> Result<(Dir, Kind), Status> {
    let missing = |e: &io::Error| e.raw_os_error() == Some(libc::ENOENT);
    let dir = match dav.files.root().dir(dir) {
        Ok(d) => d,
        Err(e) if missing(&e) => return Err(Status::NOT_FOUND),
        Err(_) => return Err(Status::FORBIDDEN),
    };
    match dir.stat(name) {
        Ok(m) => Ok((dir, m.kind)),
        Err(e) if missing(&e) => Err(Status::NOT_FOUND),
        Err(e) => Err(status_of(&e)),
    }
}

/// What `method` may not do to brisk's own files (`Protected`: its
/// configuration, password files, keys, logs, …) when they lie beneath
/// the rule's root, with `rel` and (COPY, MOVE) `to`: one of them is
/// missing to every method (404), which may not make it anew (PUT,
/// MKCOL, LOCK: 403); a directory on the way to one may not be removed or
/// renamed (DELETE, MOVE: 403); nothing of theirs is a destination (403).
/// (A COPY of a collection leaves them out: `copy_tree`.) Else `None`;
/// with the refusal, the file refused, as an absolute path (for the log).
pub fn keeps_own(
    dav: &Dav,
    method: &[u8],
    rel: &[u8],
    to: &[u8],
) -> Option<(Status, Refusal, Vec<u8>)> {
    let changes = |rel| Some((Status::FORBIDDEN, Refusal::OwnChange, in_tree(dav, rel)));
    let makes = matches!(method, b"PUT" | b"MKCOL" | b"LOCK");
    match own_way(dav, rel) {
        (Way::File, _) if makes => return changes(rel),
        (Way::File, _) => return Some((Status::NOT_FOUND, Refusal::OwnFile, in_tree(dav, rel))),
        // (A LOCK of a collection there is harmless; of a missing name,
        // it would make a file.)
        (Way::Holder, exists)
            if makes && !exists || matches!(method, b"PUT" | b"DELETE" | b"MOVE") =>
        {
            return changes(rel)
        }
        _ => {}
    }
    match method {
        b"COPY" | b"MOVE" if own_way(dav, to).0 != Way::Clear => changes(to),
        _ => None,
    }
}

/// What `rel` (beneath `dav`'s root) is to brisk's own files, and
/// whether it exists.
fn own_way(dav: &Dav, rel: &[u8]) -> (Way, bool) {
    let Some((dir, name)) = split(rel) else {
        return (Way::Clear, true);
    };
    let root = dav.files.root();
    let Ok((_, dir)) = root.stat(dir) else {
        return (Way::Clear, false);
    };
    let meta = root.stat(trim(rel)).ok().map(|(_, m)| m);
    let way = dav.files.protected().way(&dir, name, meta.as_ref());
    (way, meta.is_some())
}

/// What the server, as it runs (its user, its sandbox), cannot write
/// in: each writable `[[webdav]]` rule whose root refuses a new file
/// (a USB disk mounted for root only, a read-only mount), as a line for
/// the log (`site[2].webdav[1]` naming the rule). Its writes would be
/// 403 (507 for a full disk) until that is fixed.
pub fn unwritable(cfg: &Config) -> Vec<String> {
    use crate::config::SiteConfig;
    let mut lines = Vec::new();
    for (prefix, site) in SiteConfig::all_keyed(cfg) {
        for (j, rule) in site.webdav.iter().enumerate() {
            if rule.read_only {
                continue;
            }
            if let Err(e) = try_write(&rule.root) {
                lines.push(format!(
                    "{prefix}webdav[{}] (path \"{}\"): cannot make a file in {} as the server runs: {e}; its writes will be refused until it can",
                    j + 1,
                    rule.path,
                    rule.root.display()
                ));
            }
        }
    }
    lines
}

/// Makes a file in `root` as a PUT would (`Dir::stage`), and removes it.
fn try_write(root: &std::path::Path) -> io::Result<()> {
    let dir = crate::sys::fs::Root::open(root, false)?.dir(b"")?;
    let (file, staged) = dir.stage(0o600)?;
    dir.unstage(&staged);
    drop(file);
    Ok(())
}

/// Whether the request's `If-Match`, `If-None-Match` or
/// `If-Unmodified-Since` (RFC 9110 §13) fail against `rel` as it is now
/// (by the ETag GET gives it): `Some(412)` then. A missing resource fails
/// only `If-Match` (`If-None-Match: *` is how a client asks for a new one).
pub fn precondition(dav: &Dav, rel: &[u8], req: &OwnedRequest) -> Option<Status> {
    let pre = Preconditions {
        if_match: req.field(Field::IfMatch),
        if_none_match: req.field(Field::IfNoneMatch),
        if_modified_since: None,
        if_unmodified_since: req.field(Field::IfUnmodifiedSince),
    };
    if pre.if_match.is_none() && pre.if_none_match.is_none() && pre.if_unmodified_since.is_none() {
        return None;
    }
    let meta = dav.files.root().stat(rel.strip_suffix(b"/").unwrap_or(rel));
    fails(&pre, meta.ok().map(|(_, m)| m), req.method()).then_some(Status::PRECONDITION_FAILED)
}

/// Whether `pre` fails against a resource that is `meta` (`None`:
/// missing, which fails only `If-Match`).
fn fails(pre: &Preconditions, meta: Option<Meta>, method: Method) -> bool {
    let Some(meta) = meta else {
        return pre.if_match.is_some();
    };
    let mut etag = Vec::new();
    write_etag(meta.mtime_secs(), meta.mtime_nsec(), meta.size, &mut etag);
    let v = Validators {
        etag: &etag,
        last_modified: meta.mtime,
    };
    conditional::evaluate(pre, &v, method) != Precondition::Proceed
}

/// What [`Put::finish`] fails with when the conditions fail as it ends
/// (412).
const FAILED: &str = "the PUT's preconditions failed as it ended";
/// Why a PUT's end is 423 (see [`Put::recheck_locks`]).
const LOCKED_NOW: &str = "the PUT's resource was locked as it ended";

/// A PUT's `If-Match`, `If-None-Match` and `If-Unmodified-Since`, kept
/// to be judged again when its file takes its name: its body may take
/// minutes to come, and another PUT may have made or changed the file
/// meanwhile (`If-None-Match: *`, "only if nobody has made it", holds
/// for one of two clients making the same name at once).
#[derive(Debug, Default)]
pub struct Conditions {
    if_match: Option<Vec<u8>>,
    if_none_match: Option<Vec<u8>>,
    if_unmodified_since: Option<Vec<u8>>,
}

impl Conditions {
    /// The request's, `None` when it has none.
    pub fn of(req: &OwnedRequest) -> Option<Conditions> {
        let c = Conditions {
            if_match: req.field(Field::IfMatch).map(<[u8]>::to_vec),
            if_none_match: req.field(Field::IfNoneMatch).map(<[u8]>::to_vec),
            if_unmodified_since: req.field(Field::IfUnmodifiedSince).map(<[u8]>::to_vec),
        };
        let any = c.if_match.is_some() || c.if_none_match.is_some();
        (any || c.if_unmodified_since.is_some()).then_some(c)
    }

    /// Whether they ask for a new resource only (`If-None-Match: *`).
    fn new_only(&self) -> bool {
        self.if_none_match.as_deref().map(<[u8]>::trim_ascii) == Some(b"*")
    }

    /// Whether they fail against what is now `name` in `dir`.
    fn fail_at(&self, dir: &Dir, name: &[u8]) -> bool {
        let pre = Preconditions {
            if_match: self.if_match.as_deref(),
            if_none_match: self.if_none_match.as_deref(),
            if_modified_since: None,
            if_unmodified_since: self.if_unmodified_since.as_deref(),
        };
        fails(&pre, dir.stat(name).ok(), Method::Put)
    }
}

/// The names whose PUT is being ended, each by its directory's identity
/// (device, inode): one PUT at a time ends at a name, from its look at
/// what is there (its conditions judged again, a partial PUT's old bytes
/// read) to its rename. Else two partial PUTs at once each copied the
/// old file around their range and the last rename dropped the other's
/// bytes (both answered 204), and two PUTs with `If-None-Match: *` both
/// made the file (201).
static ENDING_AT: Mutex<Vec<(u64, u64, Vec<u8>)>> = Mutex::new(Vec::new());
static ENDED: Condvar = Condvar::new();

/// A name claimed in [`ENDING_AT`], freed when dropped.
#[derive(Debug)]
pub struct Claim((u64, u64, Vec<u8>));

impl Claim {
    /// Claims `name` in `dir`, waiting for the PUT that has it; `None`
    /// when the directory cannot be told (the PUT then ends unclaimed).
    fn take(dir: &Dir, name: &[u8]) -> Option<Claim> {
        let (dev, ino) = dir.identity().ok()?;
        let key = (dev, ino, name.to_vec());
        let mut held = ENDING_AT.lock().unwrap_or_else(|e| e.into_inner());
        while held.contains(&key) {
            held = ENDED.wait(held).unwrap_or_else(|e| e.into_inner());
        }
        held.push(key.clone());
        Some(Claim(key))
    }
}

impl Drop for Claim {
    fn drop(&mut self) {
        let mut held = ENDING_AT.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(i) = held.iter().position(|k| *k == self.0) {
            held.swap_remove(i);
        }
        drop(held);
        ENDED.notify_all();
    }
}

/// OPTIONS: the DAV classes (2: with locks) and the methods.
pub fn options(dav: &Dav, s: &mut Scratch) -> Plan {
    s.header("DAV", if dav.rule.locks { b"1, 2" } else { b"1" });
    s.header("Allow", dav.allow());
    s.header("MS-Author-Via", b"DAV");
    bare(Status::OK)
}

/// PUT of `rel`: a new file in the target's directory, unseen until
/// whole (`Dir::stage`), which the body is written into as it arrives
/// (`framing`); the old file stays whole until the new one replaces it. 409 when the directory is
/// missing, 405 onto a collection, 413 past `max_upload`.
///
/// With `range` (a `Content-Range`: a partial PUT, RFC 9110 §14.5) the
/// body is written at its place in the new file, and the old file's
/// bytes around it are copied in once it is all in (`Put::finish`): the
/// old file changed in that range, in one step as a whole PUT is; a body
/// that is not the range's length is 400, a range that ends past
/// `max_upload` 413.
pub fn put(
    dav: &Arc<Dav>,
    rel: &[u8],
    framing: BodyFraming,
    max: u64,
    range: Option<ByteRange>,
    conditions: Option<Conditions>,
    s: &mut Scratch,
) -> Started {
    use std::io::{Seek, SeekFrom};
    let answer = |status| Started::Answer(bare(status));
    let Some((dir_rel, name)) = split(rel).filter(|_| !rel.ends_with(b"/")) else {
        return answer(Status::METHOD_NOT_ALLOWED);
    };
    if let BodyFraming::Length(n) = framing {
        if n > max {
            return answer(Status::CONTENT_TOO_LARGE);
        }
    }
    if let Some(r) = range {
        if r.end >= max {
            return answer(Status::CONTENT_TOO_LARGE);
        }
        if matches!(framing, BodyFraming::Length(n) if n != r.len()) {
            return answer(Status::BAD_REQUEST);
        }
    }
    let dir = match parent(dav, dir_rel) {
        Ok(d) => d,
        Err(status) => return answer(status),
    };
    let (existed, replaces_file) = match dir.stat(name) {
        Ok(m) if m.kind == Kind::Dir => return answer(Status::METHOD_NOT_ALLOWED),
        Ok(m) => (true, m.kind == Kind::File),
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => (false, false),
        Err(e) => return answer(refused_change(dav, rel, &e, s)),
    };
    let staged = dir.stage(0o644).and_then(|(mut file, staged)| {
        // (The body goes to its place: what is before it, a hole until
        // the old bytes are copied in.)
        if let Some(r) = range {
            if let Err(e) = file.seek(SeekFrom::Start(r.start)) {
                dir.unstage(&staged);
                return Err(e);
            }
        }
        Ok((file, staged))
    });
    match staged {
        Ok((file, staged)) => Started::Upload(Box::new(Put {
            dir,
            at: (Arc::clone(dav), dir_rel.to_vec()),
            staged,
            name: name.to_vec(),
            existed,
            replaces_file,
            max,
            fsync: dav.rule.fsync,
            range,
            conditions,
            recheck: None,
            body: Some(Spool::into_file(file)),
        })),
        Err(e) => answer(refused_change(dav, rel, &e, s)),
    }
}

/// A PUT under way: the staged file its body goes into, and where it
/// goes once whole. Dropped before then (the client left), the file
/// vanishes and the old one is untouched.
#[derive(Debug)]
pub struct Put {
    dir: Dir,
    /// The rule and the path of `dir` beneath its root: where the file
    /// is to be found once named.
    at: (Arc<Dav>, Vec<u8>),
    /// How the file waits for its name (removed when dropped unplaced).
    staged: Staged,
    name: Vec<u8>,
    existed: bool,
    /// What it replaces is a regular file (whose dead properties the new
    /// one takes).
    replaces_file: bool,
    max: u64,
    /// `fsync`: the file and its directory are synced before the answer.
    fsync: bool,
    /// A partial PUT's range (see [`put`]).
    range: Option<ByteRange>,
    /// The request's conditions, judged again as it ends.
    conditions: Option<Conditions>,
    /// With locks on: a lock taken while its body came is checked for
    /// as it ends (see [`Put::recheck_locks`]).
    recheck: Option<Recheck>,
    body: Option<Spool>,
}

impl Put {
    /// The largest body it takes (`max_upload`, else `limits.max_body`).
    pub fn max(&self) -> u64 {
        self.max
    }

    /// A lock taken on its resource (or, for a new one, its collection)
    /// while its body came, which `r` holds no token of, makes its end
    /// 423, the body dropped: the lock's holder finds the resource as it
    /// locked it (the check at its start saw no lock).
    pub fn recheck_locks(&mut self, r: Option<Recheck>) {
        self.recheck = r;
    }

    /// The spool the engine writes the body into.
    pub fn take_body(&mut self) -> Spool {
        self.body.take().unwrap_or_default()
    }

    /// The body is all in `body`: the file is synced, named, put in
    /// place of the old one in one rename, and the directory synced (no
    /// syncs with `fsync = false`).
    /// 201 for a new file, 204 for a replaced one; with it the file
    /// replaced, still open: the caller closes it after answering. (Its
    /// last close frees its pages and blocks, which the rename would do
    /// otherwise: a rename over 1 MiB on ext4, four PUTs syncing at once,
    /// takes 3.6 ms, 0.05 with the old file open, by `strace -T` under
    /// bench/dav's PUTs.)
    pub fn finish(&mut self, mut body: Spool) -> Result<(Status, Option<File>), io::Error> {
        if let Some(e) = body.take_error() {
            return Err(e);
        }
        if body.len() > self.max {
            return Err(io::Error::from_raw_os_error(libc::EFBIG));
        }
        if self.range.is_some_and(|r| body.len() != r.len()) {
            // (The request's fault, answered 400 without a log line.)
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "a body not as long as its Content-Range",
            ));
        }
        let Some(file) = body.take_file() else {
            return Err(io::Error::other("the body's file is gone"));
        };
        // (From here to the rename, no other PUT ends at this name: what
        // is there now is what this one replaces.)
        let _claim = Claim::take(&self.dir, &self.name);
        if self
            .conditions
            .as_ref()
            .is_some_and(|c| c.fail_at(&self.dir, &self.name))
        {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, FAILED));
        }
        match self.dir.stat(&self.name) {
            Ok(m) if m.kind == Kind::Dir => return Err(io::Error::from_raw_os_error(libc::EISDIR)),
            Ok(m) => (self.existed, self.replaces_file) = (true, m.kind == Kind::File),
            Err(_) => (self.existed, self.replaces_file) = (false, false),
        }
        if (self.recheck.as_ref()).is_some_and(|r| r.locked(!self.existed)) {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, LOCKED_NOW));
        }
        let old = match self.replaces_file {
            true => self.dir.open_file(&self.name).ok(),
            false => None,
        };
        if let (Some(r), Some(old)) = (self.range, &old) {
            around(old, &file, r)?;
        }
        if let Some(old) = &old {
            // (Its dead properties stay: see `props::carry`. Where they
            // cannot be read or written, the PUT goes on without them.)
            let _ = props::carry(old, &file);
        }
        if self.fsync {
            file.sync_all()?;
        }
        let placed = self.place(&file);
        listings::changed();
        placed?;
        if self.fsync {
            self.dir.sync()?;
        }
        if !self.existed {
            // A new resource has no dead properties, though its
            // collection's store may still hold some under its name, a
            // file's removed beside brisk.
            let left =
                sidecar::Store::load(&self.dir).is_ok_and(|s| s.of(&self.name).next().is_some());
            if left {
                let _ = sidecar::update(&self.dir, self.fsync, |s| s.take(&self.name));
            }
        }
        let status = if self.existed {
            Status::NO_CONTENT
        } else {
            CREATED
        };
        Ok((status, old))
    }

    /// Names `file` `self.name`, in one step (see `Dir::place`), if its
    /// collection is still where the request's URL leads: one moved
    /// (or removed) while the body came would have it land where no URL
    /// of the client's leads, unchecked by the rules and locks of where
    /// it is now (ENOENT: 409, as for a missing collection).
    fn place(&mut self, file: &File) -> io::Result<()> {
        let (dav, rel) = &self.at;
        let here = dav.files.root().dir(rel).and_then(|d| d.identity());
        if here.ok() != self.dir.identity().ok() {
            return Err(io::Error::from_raw_os_error(libc::ENOENT));
        }
        let new_only = self.conditions.as_ref().is_some_and(Conditions::new_only);
        let placed = match self.dir.place(file, &self.staged, &self.name, self.existed) {
            // (One came meanwhile, by a COPY or MOVE or beside brisk:
            // replaced, as a PUT does, unless this one asked for a new
            // resource only.)
            Err(e) if e.raw_os_error() == Some(libc::EEXIST) && new_only => {
                Err(io::Error::new(io::ErrorKind::InvalidInput, FAILED))
            }
            Err(e) if e.raw_os_error() == Some(libc::EEXIST) => {
                self.dir.place(file, &self.staged, &self.name, true)
            }
            other => other,
        };
        if placed.is_ok() {
            // (No temporary name of it is left for `Drop` to remove.)
            self.staged = Staged::Unnamed;
        }
        placed
    }
}

impl Drop for Put {
    /// A file staged under a temporary name and never placed (the client
    /// left, or the end failed) is removed.
    fn drop(&mut self) {
        self.dir.unstage(&self.staged);
    }
}

/// Copies the bytes of `old` before and after `r` into `new`, at the
/// same places (a partial PUT's file, whose body is `r`).
fn around(old: &File, new: &File, r: ByteRange) -> io::Result<()> {
    use std::io::{Read, Seek, SeekFrom};
    let len = old.metadata()?.len();
    let (mut from, mut out) = (old, new);
    for (at, end) in [(0, r.start.min(len)), (r.end + 1, len)] {
        if at < end {
            from.seek(SeekFrom::Start(at))?;
            out.seek(SeekFrom::Start(at))?;
            copymove::copy(&mut (&mut from).take(end - at), &mut out)?;
        }
    }
    Ok(())
}

/// Threads that end PUTs ([`PUT_THREADS`] of them, shared by every
/// worker, started by the first PUT): a PUT's `fsync`s and rename wait
/// on the disk (milliseconds each here, seconds on a slow card), and
/// the event loop goes on meanwhile. Several at once let the
/// filesystem commit their metadata together.
static ENDING: Offload<Ending> = Offload::new("brisk-put", PUT_THREADS);

/// How many PUTs are ended at once (see [`ENDING`]); more wait their turn.
/// Eight: this machine's ext4 made 201 and 205 durable replacements of
/// 1 MiB a second with four writers, 238 and 278 with eight, 220 and 257
/// with sixteen (bench/dav-sync.c); a thread also closes the replaced
/// file after the answer (its blocks freed, 3-7 ms), which with four
/// could keep a fifth PUT waiting. See bench/RESULTS.md, "WebDAV".
pub const PUT_THREADS: usize = 8;

/// A PUT whose body is all in, to end off the event loop.
struct Ending {
    put: Box<Put>,
    body: Spool,
    later: Later,
}

impl Job for Ending {
    /// Syncs and names the file, and answers: 201 or 204; 413 past
    /// `max_upload`; 400 for a partial PUT's body not its range's length;
    /// 507 when the disk is full; 400 or 409 for a name the filesystem
    /// refuses; 500 for other errors (logged).
    fn run(self) {
        let Ending {
            mut put,
            body,
            later,
        } = self;
        // (An answer whose client left is not taken: the file is in
        // place all the same, its body being whole.)
        let _ = match put.finish(body) {
            Ok((status, replaced)) => {
                let answered = later.answer(status.0, &[], b"");
                // (Closed once answered: see `Put::finish`.)
                drop(replaced);
                answered
            }
            Err(e) if e.raw_os_error() == Some(libc::EFBIG) => {
                later.answer(Status::CONTENT_TOO_LARGE.0, &[], b"")
            }
            Err(e) if e.kind() == io::ErrorKind::InvalidInput && e.to_string() == FAILED => {
                later.answer(Status::PRECONDITION_FAILED.0, &[], b"")
            }
            Err(e) if e.kind() == io::ErrorKind::InvalidInput && e.to_string() == LOCKED_NOW => {
                later.answer(LOCKED.0, &[], b"")
            }
            Err(e) if e.kind() == io::ErrorKind::InvalidInput && e.raw_os_error().is_none() => {
                later.answer(Status::BAD_REQUEST.0, &[], b"")
            }
            Err(e) => {
                let (status, why) = match (status_of(&e), e.raw_os_error()) {
                    (Status::INSUFFICIENT_STORAGE, _) => (Status::INSUFFICIENT_STORAGE, ""),
                    // A name this filesystem cannot hold (`a:b` on exFAT
                    // or vfat: EINVAL, or ENOENT from exfat-fuse), or its
                    // directory gone meanwhile: the name's fault, not the
                    // server's (400, 409).
                    (status, Some(libc::EINVAL | libc::ENOENT)) => (
                        status,
                        ": a name this filesystem cannot hold (exFAT and FAT refuse \
                         \\ : * ? \" < > |), or its directory was removed meanwhile",
                    ),
                    _ => (Status::INTERNAL_SERVER_ERROR, ""),
                };
                later.fail(status, format!("{e}{why}; {}", status.0))
            }
        };
    }
}

/// Ends `put`, whose body is all in `body`, on one of the [`ENDING`]
/// threads (here, if none can be started); its answer goes to `later`.
/// With `fsync = false` too: its link and rename, and the replaced
/// file's last close (which frees its blocks), took 1 to 7 ms each on
/// the event loop here under a stream of 1 MiB PUTs (`strace -T`), where
/// the handoff to a thread and back costs tens of microseconds.
pub fn end_put(put: Box<Put>, body: Spool, later: Later) {
    if let Err(ending) = ENDING.submit(Ending { put, body, later }) {
        ending.run();
    }
}

/// MKCOL of `rel` (RFC 4918 §9.3): 201; 405 when something has the
/// name; 409 when the parent is missing; 415 with a body.
pub fn mkcol(dav: &Dav, rel: &[u8], framing: BodyFraming, s: &mut Scratch) -> Plan {
    if !matches!(framing, BodyFraming::None | BodyFraming::Length(0)) {
        return bare(Status::UNSUPPORTED_MEDIA_TYPE);
    }
    let Some((dir, name)) = split(rel) else {
        return bare(Status::METHOD_NOT_ALLOWED);
    };
    let dir = match parent(dav, dir) {
        Ok(d) => d,
        Err(status) => return bare(status),
    };
    let sync = |()| if dav.rule.fsync { dir.sync() } else { Ok(()) };
    match dir.mkdir(name).and_then(sync) {
        Ok(()) => bare(CREATED),
        Err(e) => bare(refused_change(dav, rel, &e, s)),
    }
}

/// DELETE of `rel` (RFC 4918 §9.6): 204; a collection with all it holds
/// (depth-first, never following a symlink); what could not go is
/// listed in a 207 with its own status, the rest is gone. A collection's
/// `depth` may only be `infinity` (§9.6.1): another is 400, and nothing
/// goes (not more than the client meant).
pub fn delete(dav: &Dav, rel: &[u8], depth: Option<&[u8]>, href: &[u8], s: &mut Scratch) -> Plan {
    let Some((dir, name)) = split(rel) else {
        return bare(Status::FORBIDDEN);
    };
    let (dir, kind) = match existing(dav, dir, name) {
        Ok(found) => found,
        Err(status) => return bare(status),
    };
    if kind == Kind::Dir && depth.is_some_and(|d| !d.eq_ignore_case(b"infinity")) {
        return bare(Status::BAD_REQUEST);
    }
    let mut failed = Multistatus::new(&mut s.body);
    let mut at = href.strip_suffix(b"/").unwrap_or(href).to_vec();
    let mut refused = None;
    let gone = match kind {
        Kind::Dir => remove_tree(&dir, name, &mut at, &mut failed, 0),
        _ => dir
            .remove(name, false)
            .map_err(|e| refused = Some(e))
            .is_ok(),
    };
    let first = failed.first.take();
    let any = failed.end();
    if let Some(e) = refused {
        let status = refused_change(dav, rel, &e, s);
        return bare(status);
    }
    // (The 207 names each member that stayed; the log, why the first.)
    if let Some(first) = first.filter(|_| !gone) {
        log_member(dav, (rel, href), &first, Refusal::Change, s);
    }
    if gone {
        props::follow(dav, rel, None, false);
        if dav.rule.fsync {
            let _ = dir.sync();
        }
        return multistatus::settle(false, s, Status::NO_CONTENT);
    }
    multistatus::settle(any, s, Status::FORBIDDEN)
}

/// Records for the error log why the first member of a 207 failed
/// (`first`: its href, beneath `href`, the collection's whose path
/// relative to the root is `rel`, and its errno), as `why` with its file.
pub(super) fn log_member(
    dav: &Dav,
    (rel, href): (&[u8], &[u8]),
    (member, n): &(Vec<u8>, i32),
    why: fn(i32) -> Refusal,
    s: &mut Scratch,
) {
    let mut file = in_tree(dav, rel);
    let base = href.strip_suffix(b"/").unwrap_or(href);
    let under = member.get(base.len()..).unwrap_or_default();
    crate::http::form::percent_decode(under, false, &mut file);
    s.refuse_file(why(*n), &file);
}

/// Removes the collection `name` in `dir` and all it holds; `at` is its
/// href (without a trailing slash), each failure goes into `failed`.
/// Whether it is gone.
pub(super) fn remove_tree(
    dir: &Dir,
    name: &[u8],
    at: &mut Vec<u8>,
    failed: &mut Multistatus<'_>,
    depth: usize,
) -> bool {
    let sub = match (depth < MAX_DEPTH).then(|| dir.sub(name)) {
        Some(Ok(sub)) => sub,
        Some(Err(e)) => {
            failed.failed(at, true, &e);
            return false;
        }
        None => {
            failed.status(at, true, Status::FORBIDDEN);
            return false;
        }
    };
    let entries = match sub.entries() {
        Ok(e) => e,
        Err(e) => {
            failed.failed(at, true, &e);
            return false;
        }
    };
    let mut all = true;
    for (child, meta) in entries {
        let len = at.len();
        at.push(b'/');
        multistatus::push_segment(at, &child);
        let gone = match meta.kind {
            Kind::Dir => remove_tree(&sub, &child, at, failed, depth + 1),
            _ => match sub.remove(&child, false) {
                Ok(()) => true,
                Err(e) => {
                    failed.failed(at, false, &e);
                    false
                }
            },
        };
        all &= gone;
        at.truncate(len);
    }
    // (A collection that keeps a member is not reported itself: the
    // member's failure says why, RFC 4918 §9.6.1.)
    all && match dir.remove(name, true) {
        Ok(()) => true,
        Err(e) => {
            failed.failed(at, true, &e);
            false
        }
    }
}

#[cfg(test)]
mod tests;
