//! Static files: path mapping, index files, directory listings,
//! precompressed sidecars, conditional and range requests.

use crate::ascii::IgnoreCase;
use std::io;
use std::os::fd::OwnedFd;
use std::sync::Arc;

use super::autoindex::View;
use super::cgi::{self, Programs};
#[cfg(feature = "compress")]
use super::compress;
use super::file_cache::{Entry, FileCache};
use super::protected::Protected;
use super::refusal::lookup_status;
use super::stream::{BodyStream, Later, Source as StreamSource, Streamed};
use super::{autoindex, Body, Plan, Refusal, Scratch, Seg};
use crate::config::{Config, Dotfiles, SiteConfig};
use crate::http::conditional::{self, Precondition, Preconditions, Validators};
use crate::http::mime::{self, MimeTable};
use crate::http::range::{self, RangeOutcome};
use crate::http::request::{Field, OwnedRequest};
use crate::http::{encoding, grammar, path, Method, Status};
use crate::sys::fs::{Kind, Meta, Root};
use std::rc::Rc;

/// What static files answer to `Allow` (on 405 and OPTIONS).
pub const ALLOW: &[u8] = b"GET, HEAD, OPTIONS";

/// Sidecar encodings in order of preference (on equal weights in
/// `Accept-Encoding`): coding, file suffix.
const SIDECARS: [(&str, &[u8]); 3] = [("br", b".br"), ("zstd", b".zst"), ("gzip", b".gz")];

/// The static handler's settings: the document root (held open), the
/// MIME table, and which files are CGI programs; shared by all workers of
/// a configuration (immutable).
#[derive(Debug)]
pub struct StaticFiles {
    /// The configuration they come from.
    pub cfg: Arc<Config>,
    /// Which of its sites (0: the default site; see [`Config::site`]).
    pub site: usize,
    root: Arc<Root>,
    mime: MimeTable,
    /// The files that are CGI programs: their source is never served.
    programs: Programs,
    /// The files brisk itself reads: never served (see `protected`).
    protected: Arc<Protected>,
    /// Their paths beneath this tree (relative, without a leading `/`):
    /// refused by name too, with their siblings (see [`own_name`]).
    own_names: Arc<[Box<[u8]>]>,
    /// Compressed variants of files (`[compress]`), when enabled.
    #[cfg(feature = "compress")]
    variants: Option<compress::cache::Variants>,
}

impl StaticFiles {
    /// Opens the document root of the configuration's site `site`, whose
    /// files `protected` are never served.
    pub fn new(
        cfg: Arc<Config>,
        site: usize,
        protected: Arc<Protected>,
    ) -> io::Result<StaticFiles> {
        let sc = cfg.site(site);
        let root = Root::open(&sc.root, sc.static_files.symlinks_outside_root)?;
        let programs = Programs::new(&sc.cgi, &sc.root)?;
        let tree = sc.root.clone();
        StaticFiles::with_root(cfg, site, protected, (root, &tree), programs)
    }

    /// The files of another tree than the site's root, served by the
    /// site's rules (a `[[webdav]]` root: no symlink leads out of it,
    /// whatever `symlinks_outside_root` says, and no CGI program is in it).
    pub fn beneath(
        cfg: Arc<Config>,
        site: usize,
        protected: Arc<Protected>,
        root: &std::path::Path,
    ) -> io::Result<StaticFiles> {
        let opened = Root::open(root, false)?;
        StaticFiles::with_root(cfg, site, protected, (opened, root), Programs::default())
    }

    fn with_root(
        cfg: Arc<Config>,
        site: usize,
        protected: Arc<Protected>,
        (root, tree): (Root, &std::path::Path),
        programs: Programs,
    ) -> io::Result<StaticFiles> {
        let own_names = own_names_beneath(&cfg, tree);
        let sc = cfg.site(site);
        let st = &sc.static_files;
        let file_types = st.mime_types.as_ref().map_or(&[][..], |f| &f.types[..]);
        let mime = MimeTable::with_file(&sc.mime, file_types, &st.default_type);
        #[cfg(feature = "compress")]
        let variants = match sc.compress.enable {
            true => Some(compress::cache::Variants::new(&sc.compress)?),
            false => None,
        };
        Ok(StaticFiles {
            cfg,
            site,
            root: Arc::new(root),
            mime,
            programs,
            protected,
            own_names: own_names.into(),
            #[cfg(feature = "compress")]
            variants,
        })
    }

    /// The tree the files are in.
    pub fn root(&self) -> &Root {
        &self.root
    }

    /// The settings of the site these files are.
    pub fn site(&self) -> &SiteConfig {
        self.cfg.site(self.site)
    }

    /// The files brisk itself reads, never served.
    pub fn protected(&self) -> &Arc<Protected> {
        &self.protected
    }

    /// Whether `e` is one of the files brisk itself reads.
    #[inline]
    fn own(&self, e: &Entry) -> bool {
        self.protected.contains(&e.meta)
    }

    /// Whether `rel` (beneath the tree) is the path of one of the files
    /// brisk itself reads, or of a sibling of one (see [`own_name`]).
    #[inline]
    fn own_path(&self, rel: &[u8]) -> bool {
        own_path(&self.own_names, rel)
    }

    /// What lists its directories on another thread.
    fn lister(&self) -> Lister {
        Lister {
            cfg: Arc::clone(&self.cfg),
            site: self.site,
            root: Arc::clone(&self.root),
            protected: Arc::clone(&self.protected),
            own_names: Arc::clone(&self.own_names),
        }
    }

    /// A line for whoever starts brisk when `/` can only answer 403 (what a
    /// first `brisk` in a source tree meets): the root holds none of the
    /// index files, listings are off, and no CGI or FastCGI rule takes
    /// `/` (a FastCGI `fallback`, or its `index` there: PHP's
    /// `index.php`).
    pub fn root_hint(&self) -> Option<String> {
        let st = &self.site().static_files;
        let cgi_takes_root = cgi::takes_root(&self.site().cgi);
        let file_at_root = |name: &str| {
            self.root
                .stat(name.as_bytes())
                .is_ok_and(|(_, meta)| meta.kind == Kind::File)
        };
        let has_index = st.index.iter().any(|name| file_at_root(name));
        let fastcgi_takes_root = self.site().fastcgi.iter().any(|rule| {
            let index = rule.index.as_deref().filter(|name| {
                let path = format!("/{name}");
                // (Beneath a root of the rule's own, taken to be there.)
                rule.matches.matches(path.as_bytes()) && (rule.root.is_some() || file_at_root(name))
            });
            index.is_some() || (rule.fallback.is_some() && rule.matches.matches(b"/"))
        });
        if st.autoindex || cgi_takes_root || has_index || fastcgi_takes_root {
            return None;
        }
        let root = self.site().root.display();
        let (missing, add) = match &st.index[..] {
            [] => (
                format!("no index files are configured ([static] index) for {root}"),
                "an index file".to_string(),
            ),
            [one] => (format!("no {one} in {root}"), format!("an {one}")),
            many => (
                format!("none of {} in {root}", many.join(", ")),
                "one of them".to_string(),
            ),
        };
        Some(format!(
            "{missing} and directory listings are off, so / answers 403 Forbidden: add {add}, or list directories with --autoindex (autoindex = true in [static])"
        ))
    }
}

/// Answers a request for a static file; `s.path` holds its decoded path
/// (the router puts it there).
pub fn serve(
    files: &StaticFiles,
    req: &OwnedRequest,
    s: &mut Scratch,
    cache: &mut FileCache,
) -> Plan {
    serve_beneath(files, req, s, cache, 1)
}

/// [`serve`], the file being `s.path` without its first `skip` bytes
/// (1: its `/`; a `[[webdav]]` rule's prefix) beneath the files' root.
pub fn serve_beneath(
    files: &StaticFiles,
    req: &OwnedRequest,
    s: &mut Scratch,
    cache: &mut FileCache,
    skip: usize,
) -> Plan {
    let skip = skip.min(s.path.len());
    // A path that cannot be read is the request's fault whatever its
    // method: not a 405 that says PUT is never taken here.
    if let (Err(e), false) = (req.path(), req.method() == Method::Options) {
        return Plan::error(e.status, s);
    }
    match req.method() {
        Method::Get | Method::Head => {}
        Method::Options => {
            s.header("Allow", ALLOW);
            return Plan {
                status: Status::OK,
                body: Body::Empty,
                close: false,
            };
        }
        Method::Other => return Plan::error(Status::NOT_IMPLEMENTED, s),
        _ => {
            s.header("Allow", ALLOW);
            return Plan::error(Status::METHOD_NOT_ALLOWED, s);
        }
    }
    let (raw_path, query) = path::split_target(req.target());
    // (`s.path` is the request's decoded path: see `Scratch::path`.)
    if files.site().static_files.dotfiles.refuses(&s.path) {
        s.rel.clear();
        s.rel.extend_from_slice(&s.path[skip..]);
        return refused(Refusal::Dotfile, dotfile_status(files), s);
    }
    s.rel.clear();
    s.rel.extend_from_slice(&s.path[skip..]);
    if let Some(q) = query {
        // MrHTTPD's QUERY_HACK: what `wget --mirror` saved as `page.html?x=1`.
        let prefixes = &files.site().static_files.query_in_filename;
        if prefixes.iter().any(|p| s.path.starts_with(p.as_bytes())) {
            s.rel.push(b'?');
            s.rel.extend_from_slice(q);
            // The query is the end of the file name and may hold a `/`
            // (wget saves `a?b/c` in a directory `a?b`), but it is
            // checked as the path is: a `..` or `.` segment would lead
            // out of the prefix, to a file that the access and auth
            // rules, decided on the path alone, never judged; a dotfile
            // is refused as in the path.
            if q.split(|&b| b == b'/')
                .skip(1)
                .any(|seg| seg == b"." || seg == b"..")
            {
                return refused(Refusal::Lookup(libc::ENOENT), Status::NOT_FOUND, s);
            }
            let whole = [&s.path[..], b"?", q].concat();
            if files.site().static_files.dotfiles.refuses(&whole) {
                return refused(Refusal::Dotfile, dotfile_status(files), s);
            }
        }
    }
    if files.own_path(&s.rel) {
        // Before the file is opened: a log brisk made unreadable is a 404
        // as well, not a 403 that says it is there.
        return refused(Refusal::OwnFile, Status::NOT_FOUND, s);
    }
    match cache.lookup(&files.root, &s.rel) {
        // As for a missing file (the same answer, and `try_files`).
        Ok(e) if files.own(&e) => refused(Refusal::OwnFile, Status::NOT_FOUND, s),
        Ok(e) if e.meta.kind == Kind::File && files.programs.contains(&s.rel) => {
            refused(Refusal::ScriptSource, Status::FORBIDDEN, s)
        }
        Ok(e) if e.meta.kind == Kind::File => {
            let chosen = negotiate(files, req, s, cache, Some(e));
            serve_file(files, req, s, chosen)
        }
        Ok(e) if e.meta.kind == Kind::Dir => serve_dir(files, req, s, cache, raw_path, query),
        Ok(_) => refused(Refusal::NotRegular, Status::FORBIDDEN, s),
        // `CHANGES` may exist only as `CHANGES.gz` (nginx's gzip_static).
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) && files.programs.contains(&s.rel) => {
            lookup_failed(&e, s)
        }
        Err(e)
            if e.raw_os_error() == Some(libc::ENOENT)
                && files.site().static_files.precompressed =>
        {
            let chosen = negotiate(files, req, s, cache, None);
            serve_file(files, req, s, chosen)
        }
        Err(e) => lookup_failed(&e, s),
    }
}

/// Serves the file at `s.rel` (request path `s.path`) if it is a
/// regular file that is not a CGI program; `None` otherwise (a
/// `try_files` candidate that is not there).
pub(super) fn serve_found(
    files: &StaticFiles,
    req: &OwnedRequest,
    s: &mut Scratch,
    cache: &mut FileCache,
) -> Option<Plan> {
    if files.own_path(&s.rel) {
        return None;
    }
    match cache.lookup(&files.root, &s.rel) {
        Ok(e)
            if e.meta.kind == Kind::File && !files.programs.contains(&s.rel) && !files.own(&e) =>
        {
            s.headers.clear();
            s.why = None;
            let chosen = negotiate(files, req, s, cache, Some(e));
            Some(serve_file(files, req, s, chosen))
        }
        _ => None,
    }
}

#[cfg(feature = "cold-lookups")]
/// Looks up `rel` beneath `root` from the disk, off the event loop, as a
/// request for it would ([`FileCache::lookup`]; the worker's cache keeps
/// what is found, [`FileCache::install`]): the path, its precompressed
/// variants if `precompressed`, and for a directory its `index` files
/// with theirs. `known`: the versions of these paths the worker's cache
/// holds ([`FileCache::known`]), which are not opened again.
pub fn look(
    root: &Root,
    rel: &[u8],
    st: &crate::config::StaticConfig,
    known: &[(Vec<u8>, Meta)],
) -> Vec<super::file_cache::Looked> {
    use super::file_cache::{find, Found, Looked};
    let known = |rel: &[u8]| known.iter().find(|(p, _)| p == rel).map(|(_, m)| m);
    let side = |path: Vec<u8>| {
        let found = find(root, &path, known(&path));
        (path, found)
    };
    let one = |rel: Vec<u8>| {
        let was = known(&rel);
        // On a remote filesystem each lookup is a round trip to the
        // server: the variants are asked for beside the file, not after
        // it (four round trips in the time of one).
        let (found, mut sidecars) = match st.precompressed && root.remote(&rel) {
            true => std::thread::scope(|scope| {
                let asked: Vec<_> = variants(&rel)
                    .map(|path| {
                        let builder = std::thread::Builder::new().stack_size(64 << 10);
                        builder.spawn_scoped(scope, || side(path)).ok()
                    })
                    .collect();
                let found = find(root, &rel, was);
                let sidecars: Vec<_> = asked
                    .into_iter()
                    .flatten()
                    .filter_map(|h| h.join().ok())
                    .collect();
                (found, sidecars)
            }),
            false => (find(root, &rel, was), Vec::new()),
        };
        let kind = match &found {
            Found::Same => was.map(|m| m.kind),
            Found::Now(Ok((m, _))) => Some(m.kind),
            Found::Now(Err(_)) => None,
        };
        if !st.precompressed || kind == Some(Kind::Dir) {
            sidecars.clear();
        } else if sidecars.len() < SIDECARS.len() {
            // (Not all asked beside it: each, one after the other.)
            sidecars = variants(&rel).map(side).collect();
        }
        (
            Looked {
                rel,
                found,
                sidecars,
            },
            kind,
        )
    };
    let mut paths = candidates(rel, st);
    let Some((first, kind)) = paths.next().map(one) else {
        return Vec::new();
    };
    let mut all = vec![first];
    if kind == Some(Kind::Dir) {
        all.extend(paths.map(|path| one(path).0));
    }
    all
}

#[cfg(feature = "cold-lookups")]
/// The paths [`look`] looks at for `rel`, whose versions the worker's
/// cache may hold: `rel`, a directory's index files, and each one's
/// precompressed variants.
pub fn looked_at(rel: &[u8], st: &crate::config::StaticConfig) -> Vec<Vec<u8>> {
    let mut paths = Vec::new();
    for path in candidates(rel, st) {
        if st.precompressed {
            paths.extend(variants(&path));
        }
        paths.push(path);
    }
    paths
}

#[cfg(feature = "cold-lookups")]
/// The paths a request for `rel` may look up, in order: `rel`, then,
/// were it a directory, each of its index files.
fn candidates<'a>(
    rel: &'a [u8],
    st: &'a crate::config::StaticConfig,
) -> impl Iterator<Item = Vec<u8>> + 'a {
    let index = st.index.iter().map(move |name| {
        let mut path = rel.to_vec();
        if !path.is_empty() && !path.ends_with(b"/") {
            path.push(b'/');
        }
        path.extend_from_slice(name.as_bytes());
        path
    });
    std::iter::once(rel.to_vec()).chain(index)
}

#[cfg(feature = "cold-lookups")]
/// The paths of `rel`'s precompressed variants.
fn variants(rel: &[u8]) -> impl Iterator<Item = Vec<u8>> + '_ {
    SIDECARS
        .iter()
        .map(move |(_, suffix)| [rel, suffix].concat())
}

/// The body of the file at `rel` (an `[errors]` page) and its length,
/// or why it cannot be sent.
pub(super) fn open_page(
    files: &StaticFiles,
    cache: &mut FileCache,
    rel: &[u8],
) -> Result<(super::Source, u64), String> {
    match cache.lookup(&files.root, rel) {
        Ok(e) if e.meta.kind == Kind::File => match e.source.clone() {
            Some(src) => Ok((src, e.meta.size)),
            None => Err("not a regular file".to_string()),
        },
        Ok(_) => Err("not a regular file".to_string()),
        Err(e) => Err(e.to_string()),
    }
}

impl StaticFiles {
    /// The `Content-Type` of a file at `path` by the site's type table.
    pub fn content_type(&self, path: &[u8]) -> &str {
        self.mime.lookup(path)
    }

    /// The site's table of types.
    #[cfg(feature = "webdav")]
    pub fn mime(&self) -> &MimeTable {
        &self.mime
    }
}

/// An error answer, with the reason recorded for the debug log.
fn refused(why: Refusal, status: Status, s: &mut Scratch) -> Plan {
    s.refuse(why);
    Plan::error(status, s)
}

/// The answer to a failed lookup of `s.rel` (see [`lookup_status`]).
fn lookup_failed(e: &io::Error, s: &mut Scratch) -> Plan {
    refused(Refusal::lookup(e), lookup_status(e), s)
}

/// The `Location` of a redirect from `raw_path` (as sent, still
/// percent-encoded) to the collection it names: the path with a `/`
/// appended, then `query`. RFC 9110 §10.2.2 allows a relative reference;
/// the path is never sent back starting `//` or `/\`, which a browser
/// reads as another host (`//evil.example` would send it there: an open
/// redirect).
pub fn with_slash(raw_path: &[u8], query: Option<&[u8]>) -> Vec<u8> {
    let mut loc = Vec::with_capacity(raw_path.len() + 4 + query.map_or(0, |q| q.len()));
    let mut rest = raw_path;
    while let [b'/', b'/', ..] = rest {
        rest = &rest[1..];
    }
    if let [b'/', b'\\', tail @ ..] = rest {
        loc.extend_from_slice(b"/%5C");
        rest = tail;
    }
    loc.extend_from_slice(rest);
    loc.push(b'/');
    if let Some(q) = query {
        loc.push(b'?');
        loc.extend_from_slice(q);
    }
    loc
}

/// What a path with a dot segment answers (`[static] dotfiles`): 403 when
/// they are denied, else 404 (when ignored, and for brisk's own names
/// when dotfiles are allowed).
pub fn dotfile_status(files: &StaticFiles) -> Status {
    match files.site().static_files.dotfiles {
        Dotfiles::Deny => Status::FORBIDDEN,
        _ => Status::NOT_FOUND,
    }
}

fn serve_dir(
    files: &StaticFiles,
    req: &OwnedRequest,
    s: &mut Scratch,
    cache: &mut FileCache,
    raw_path: &[u8],
    query: Option<&[u8]>,
) -> Plan {
    if !s.path.ends_with(b"/") {
        let loc = with_slash(raw_path, query);
        s.header("Location", &loc);
        apply_header_rules(files, s);
        // (The body is brisk's page, of its type, whatever a rule says.)
        remove_field(&mut s.headers, 0, "Content-Type");
        return Plan::error(Status::MOVED_PERMANENTLY, s);
    }
    let dir_rel_len = s.rel.len();
    let dir_path_len = s.path.len();
    for index in &files.site().static_files.index {
        s.rel.truncate(dir_rel_len);
        s.rel.extend_from_slice(index.as_bytes());
        if files.own_path(&s.rel) {
            continue;
        }
        // (The path the answer is for, from here: its type and its
        // `[[headers]]` decide whether it is compressed.)
        s.path.truncate(dir_path_len);
        s.path.extend_from_slice(index.as_bytes());
        let chosen = match cache.lookup(&files.root, &s.rel) {
            Ok(e) if files.own(&e) => continue,
            Ok(e) if e.meta.kind == Kind::File => negotiate(files, req, s, cache, Some(e)),
            // An index that exists only precompressed (`gzip -r` replaces
            // the files) is the index all the same.
            Err(e)
                if e.raw_os_error() == Some(libc::ENOENT)
                    && files.site().static_files.precompressed =>
            {
                match negotiate(files, req, s, cache, None) {
                    chosen if chosen.varies => chosen,
                    _ => continue,
                }
            }
            // A directory of that name is no index file: the next one,
            // or the listing (as lighttpd does).
            Ok(e) if e.meta.kind == Kind::Dir => continue,
            // An index that is there but cannot be served (a FIFO or a
            // device; unreadable, a link out of the root, no descriptor
            // left) stands in front of the directory all the same: the
            // answer is the one the index itself would get (403, 503),
            // as nginx's, never the listing it was put there to hide.
            Ok(_) => {
                s.path.truncate(dir_path_len);
                return refused(Refusal::NotRegular, Status::FORBIDDEN, s);
            }
            Err(e) if lookup_status(&e) == Status::NOT_FOUND => continue,
            Err(e) => {
                s.path.truncate(dir_path_len);
                return lookup_failed(&e, s);
            }
        };
        if files.programs.contains(&s.rel) {
            s.path.truncate(dir_path_len);
            return refused(Refusal::ScriptSource, Status::FORBIDDEN, s);
        }
        return serve_file(files, req, s, chosen);
    }
    s.rel.truncate(dir_rel_len);
    s.path.truncate(dir_path_len);
    if !files.site().static_files.autoindex {
        return refused(Refusal::NoIndex, Status::FORBIDDEN, s);
    }
    let view = match autoindex::view::choose(query, req.header("Accept")) {
        Ok(view) => view,
        Err(bad) => {
            s.body.clear();
            s.body
                .extend_from_slice(b"Bad Request: the listing parameter ");
            s.body.extend_from_slice(bad.name.as_bytes());
            s.body.extend_from_slice(b" takes ");
            s.body.extend_from_slice(bad.allowed.as_bytes());
            s.body.extend_from_slice(b".\n");
            s.header("Content-Type", b"text/plain; charset=utf-8");
            return Plan {
                status: Status::BAD_REQUEST,
                body: Body::Buffer,
                close: false,
            };
        }
    };
    let pre = Preconditions {
        if_match: req.field(Field::IfMatch),
        if_none_match: req.field(Field::IfNoneMatch),
        if_modified_since: None,
        if_unmodified_since: None,
    };
    match conditional::evaluate_unvalidated(&pre, req.method()) {
        Precondition::Proceed => {}
        Precondition::NotModified => {
            apply_header_rules(files, s);
            return Plan {
                status: Status::NOT_MODIFIED,
                body: Body::Empty,
                close: false,
            };
        }
        Precondition::Failed => return Plan::error(Status::PRECONDITION_FAILED, s),
    }
    // (Stated now, not taken from the open-file cache: a page kept for
    // the directory serves only while its times are these.)
    let dir = match files.root.stat(&s.rel) {
        Ok((_, dir)) => dir,
        Err(e) => return lookup_failed(&e, s),
    };
    // The page is shared by the requests for this directory while it is
    // unchanged (see `autoindex::pages`): each answer only points at it.
    // One not kept is made off the event loop (see `handlers::listings`),
    // the directory opened here, so that one that cannot be read is
    // refused as any file is.
    let age = files.site().static_files.open_file_cache_valid;
    let key = autoindex::pages::Key::new(&files.cfg, files.site, &dir, &s.path, view);
    let kept = autoindex::pages::kept(&key, &dir, age);
    let fd = match kept {
        Some(_) => None,
        None => match files.root.open_dir(&s.rel) {
            Ok(fd) => Some(fd),
            Err(e) => return lookup_failed(&e, s),
        },
    };
    s.header(
        "Content-Type",
        match view.format {
            autoindex::Format::Html => b"text/html; charset=utf-8",
            autoindex::Format::Json => b"application/json",
        },
    );
    if view.by_accept {
        s.header("Vary", b"Accept");
    }
    apply_header_rules(files, s);
    let Some(page) = kept else {
        let accept = req.field(Field::AcceptEncoding).map(<[u8]>::to_vec);
        return Rendering::plan(files, s, fd, (view, dir, key), Coding::Undecided(accept));
    };
    // A listing is compressed as a handler's whole body is (nginx's
    // `gzip` takes its autoindex pages too): one of /usr/share/doc is
    // 97 KB of HTML, about 10 once gzipped. Once per coding, too.
    #[cfg(feature = "compress")]
    {
        let cfg = &files.site().compress;
        let accept = req.field(Field::AcceptEncoding);
        let len = Some(page.len() as u64);
        if let Some(coding) = compress::stream::decide(cfg, accept, 200, &mut s.headers, len) {
            let coded = key.coded(coding.index());
            let Some(page) = autoindex::pages::kept(&coded, &dir, age) else {
                let what = (view, dir, key);
                return Rendering::plan(files, s, None, what, Coding::Decided(page, coding));
            };
            return page_plan(page);
        }
    }
    page_plan(page)
}

/// The answer with listing `page`, made or kept.
fn page_plan(page: Arc<[u8]>) -> Plan {
    let len = page.len() as u64;
    Plan {
        status: Status::OK,
        body: Body::File {
            src: super::file_cache::Source::Mem(page),
            offset: 0,
            len,
        },
        close: false,
    }
}

/// What lists a tree's directories, apart from its [`StaticFiles`]: sent
/// to the thread that makes a listing.
struct Lister {
    cfg: Arc<Config>,
    site: usize,
    root: Arc<Root>,
    protected: Arc<Protected>,
    own_names: Arc<[Box<[u8]>]>,
}

/// Whether a listing's page is compressed, and how.
enum Coding {
    /// The page is not made yet: once it is, it is compressed if its
    /// request accepts (its `Accept-Encoding`) a coding `[compress]`
    /// allows for its length.
    Undecided(#[cfg_attr(not(feature = "compress"), allow(dead_code))] Option<Vec<u8>>),
    /// The page (kept) is compressed with the coding chosen for it.
    #[cfg(feature = "compress")]
    Decided(Arc<[u8]>, crate::config::Coding),
}

/// A listing to make off the event loop (see `handlers::listings`), and
/// what its answer says.
struct Rendering {
    lister: Lister,
    /// The directory, opened (none when the page is made already).
    fd: Option<OwnedFd>,
    /// The directory, beneath the tree, and the URL path it is listed at.
    rel: Vec<u8>,
    path: Vec<u8>,
    view: View,
    /// Its metadata, as stated when it was asked for.
    dir: Meta,
    key: autoindex::pages::Key,
    coding: Coding,
    /// The answer's header lines.
    headers: Vec<u8>,
}

impl Rendering {
    /// The answer with the listing of `s.rel` (opened as `fd`) at
    /// `s.path`, in `view`, its page under `key`, with the header lines
    /// in `s`: it comes once the page is made.
    fn plan(
        files: &StaticFiles,
        s: &mut Scratch,
        fd: Option<OwnedFd>,
        (view, dir, key): (View, Meta, autoindex::pages::Key),
        coding: Coding,
    ) -> Plan {
        let label = format!("listing of {}", String::from_utf8_lossy(&s.path));
        let rendering = Rendering {
            lister: files.lister(),
            fd,
            rel: s.rel.clone(),
            path: s.path.clone(),
            view,
            dir,
            key,
            coding,
            headers: std::mem::take(&mut s.headers),
        };
        Plan {
            status: Status::OK,
            body: Body::Stream(Box::new(Streamed {
                source: StreamSource::Start(Box::new(|later| {
                    super::listings::off_loop(later, |later| rendering.make(later))
                })),
                length: None,
                label,
                patient: true,
            })),
            close: false,
        }
    }

    /// Makes the page, keeps it, and answers with it through `later`.
    fn make(self, later: Later) {
        let l = &self.lister;
        let age = l.cfg.site(l.site).static_files.open_file_cache_valid;
        let (key, dir) = (&self.key, &self.dir);
        let page = match self.coding {
            #[cfg(feature = "compress")]
            Coding::Decided(ref page, _) => Ok(Arc::clone(page)),
            Coding::Undecided(_) => autoindex::pages::page(key.clone(), &l.cfg, dir, age, || {
                let fd = self.fd.ok_or(io::ErrorKind::NotFound)?;
                render_listing(l, fd, &self.rel, &self.path, &self.view)
            }),
        };
        let page = match page {
            Ok(page) => page,
            // (Dropped unanswered, it is a 500 and a line in the error
            // log: the directory was opened, so reading it failed.)
            Err(_) => return,
        };
        #[cfg(not(feature = "compress"))]
        let headers = self.headers;
        #[cfg(feature = "compress")]
        let mut headers = self.headers;
        #[cfg(feature = "compress")]
        let page = {
            let cfg = &l.cfg.site(l.site).compress;
            let coding = match &self.coding {
                Coding::Decided(_, coding) => Some(*coding),
                // (Not compressed, the head is left as it is: the engine
                // decides the same for the answer, and says it varies.)
                Coding::Undecided(accept) => {
                    let len = Some(page.len() as u64);
                    let mut coded = headers.clone();
                    let coding =
                        compress::stream::decide(cfg, accept.as_deref(), 200, &mut coded, len);
                    if coding.is_some() {
                        headers = coded;
                    }
                    coding
                }
            };
            match coding {
                Some(coding) => {
                    let coded = key.coded(coding.index());
                    let compressed = autoindex::pages::page(coded, &l.cfg, dir, age, || {
                        let mut z = page.to_vec();
                        compress::stream::whole_with(cfg, coding, &mut z);
                        Ok(z)
                    });
                    // (In memory it cannot fail.)
                    compressed.unwrap_or(page)
                }
                None => page,
            }
        };
        let _ = later.answer_lines(Status::OK, headers, page.to_vec());
    }
}

/// Lists the directory `rel` (opened as `fd`, listed at `path`) as `view` asks: what could
/// be served of it, rendered.
fn render_listing(
    l: &Lister,
    fd: OwnedFd,
    rel: &[u8],
    path: &[u8],
    view: &View,
) -> io::Result<Vec<u8>> {
    let st = &l.cfg.site(l.site).static_files;
    let max = match st.autoindex_max_entries {
        0 => usize::MAX,
        n => n,
    };
    let (entries, more) = l.root.list_opened(fd, rel, max)?;
    let hide_dot = st.dotfiles != Dotfiles::Allow;
    // FIFOs, sockets and devices are never served: not listed either; nor
    // are the files brisk itself reads.
    let mut list: Vec<autoindex::Entry> = entries
        .into_iter()
        .filter(|(name, meta)| {
            !(hide_dot && name.starts_with(b".") || path::is_own_name(name))
                && meta.kind != Kind::Special
                && !l.protected.contains(meta)
                && (l.own_names.is_empty() || !own_path(&l.own_names, &[rel, name].concat()))
        })
        .map(|(name, meta)| autoindex::Entry {
            name,
            is_dir: meta.kind == Kind::Dir,
            size: meta.size,
            mtime: meta.mtime,
        })
        .collect();
    let mut out = Vec::new();
    match view.format {
        autoindex::Format::Html => {
            let cut = more.then_some(max);
            autoindex::render(path, &mut list, view, cut, &mut out)
        }
        autoindex::Format::Json => autoindex::json::render(&mut list, view, &mut out),
    }
    Ok(out)
}

/// The representation of a resource chosen for a request (RFC 9110
/// §12.5.3): the identity file or a precompressed sidecar.
struct Chosen {
    /// The file to send; `None` when only sidecars exist and the client
    /// accepts none of them.
    entry: Option<Rc<Entry>>,
    /// The content coding of `entry` (`None`: identity).
    coding: Option<&'static str>,
    /// Sidecars exist, so the choice depended on `Accept-Encoding` and
    /// every answer about this resource says `Vary: Accept-Encoding`
    /// (RFC 9110 §12.5.5), whichever file was sent.
    varies: bool,
    /// The identity file when `entry` is a sidecar of it: a sidecar's
    /// type is the identity's, so content sniffing reads this one.
    identity: Option<Rc<Entry>>,
    /// `entry` is a variant compressed by brisk: no ranges of it are
    /// served (a range request gets the identity's), so it offers none.
    on_the_fly: bool,
    /// The client takes a coding whose stored variant is not ready yet:
    /// `entry` (the identity) goes compressed as it streams (see
    /// [`serve_file`]).
    stream: bool,
}

impl Chosen {
    /// `stream`, known to be false where brisk compresses nothing
    /// (without the feature `compress`), so that the code that streams
    /// is left out of that build.
    #[inline]
    fn streams(&self) -> bool {
        cfg!(feature = "compress") && self.stream
    }
}

/// Chooses the representation to send: a precompressed sidecar, or
/// failing that a variant compressed by brisk (`[compress]`), or the
/// file as it is.
fn negotiate(
    files: &StaticFiles,
    req: &OwnedRequest,
    s: &mut Scratch,
    cache: &mut FileCache,
    identity: Option<Rc<Entry>>,
) -> Chosen {
    let mut chosen = sidecars(files, req, s, cache, identity);
    if chosen.coding.is_none() && chosen.entry.is_some() && svgz(&s.rel) {
        // The file is its gzipped form already: its bytes for everyone
        // (browsers take gzip), never compressed again.
        chosen.coding = Some("gzip");
    }
    #[cfg(feature = "compress")]
    if let Some(variants) = &files.variants {
        on_the_fly(files, variants, req, s, &mut chosen);
    }
    chosen
}

/// Whether the file `name` is a `.svgz` (any case): SVG gzipped, served
/// with `Content-Encoding: gzip` as nginx and Apache users configure it.
/// (Every static answer asks: byte by byte, `| 0x20` folding only `S`
/// and `s` onto `s`, and so on, with no call.)
fn svgz(name: &[u8]) -> bool {
    matches!(name, [.., b'.', s, v, g, z]
        if (s | 0x20, v | 0x20, g | 0x20, z | 0x20) == (b's', b'v', b'g', b'z'))
}

/// Puts a compressed variant of the identity file in `chosen` when the
/// client accepts one, the file is worth compressing and its variant is
/// ready; until it is (a thread is asked to make it), the identity is
/// compressed as it streams (`chosen.stream`). Range requests get the
/// identity's ranges (as nginx).
#[cfg(feature = "compress")]
fn on_the_fly(
    files: &StaticFiles,
    variants: &compress::cache::Variants,
    req: &OwnedRequest,
    s: &Scratch,
    chosen: &mut Chosen,
) {
    use super::file_cache::VariantMemo;
    use compress::cache::{Content, Key, Lookup};
    let cfg = &files.site().compress;
    let Some(e) = chosen.entry.as_ref().filter(|_| chosen.coding.is_none()) else {
        return;
    };
    if e.meta.size < cfg.min_size || e.meta.size > cfg.max_size {
        return;
    }
    // Decided on what the answer's head will say, as the engine decides
    // for a produced answer (`compress::stream::decide`): its
    // `Content-Type` (sniffed, for a name without an extension, when
    // `sniff` is on), and the `[[headers]]` that will join it (one that
    // sets `Content-Encoding`, as for a `.svgz`, or `Cache-Control:
    // no-transform` rules compressing out).
    let content_type = content_type(files, &s.path, chosen, e);
    if !compress::compressible(content_type.as_bytes(), &cfg.types)
        || !header_rules_allow_compression(files, &s.path)
    {
        return;
    }
    chosen.varies = true;
    if req.field(Field::Range).is_some() {
        return;
    }
    let Some(coding) = compress::choose(req.field(Field::AcceptEncoding), &cfg.encodings) else {
        return;
    };
    let epoch = variants.epoch();
    let i = coding.index();
    let memo = e.variants.borrow()[i].clone();
    let variant = match memo {
        VariantMemo::Ready(v, at) if at == epoch => v,
        VariantMemo::Useless(at) if at == epoch => return,
        VariantMemo::Stream(at) if at == epoch => {
            chosen.stream = true;
            return;
        }
        _ => {
            let content = || match &e.source {
                Some(super::Source::Mem(m)) => Ok(Content::Mem(std::sync::Arc::clone(m))),
                Some(super::Source::File(f)) => f.try_clone().map(Content::File),
                None => Err(io::Error::from(io::ErrorKind::InvalidInput)),
            };
            match variants.get(Key::new(&e.meta, coding), content) {
                Lookup::Ready(data) => {
                    let suffix = match coding {
                        crate::config::Coding::Br => "br",
                        crate::config::Coding::Zstd => "zst",
                        crate::config::Coding::Gzip => "gz",
                    };
                    let v = Rc::new(e.variant(data, suffix));
                    e.variants.borrow_mut()[i] = VariantMemo::Ready(Rc::clone(&v), epoch);
                    v
                }
                Lookup::Useless => {
                    e.variants.borrow_mut()[i] = VariantMemo::Useless(epoch);
                    return;
                }
                Lookup::Stream => {
                    e.variants.borrow_mut()[i] = VariantMemo::Stream(epoch);
                    chosen.stream = true;
                    return;
                }
                Lookup::Pending => {
                    chosen.stream = true;
                    return;
                }
            }
        }
    };
    // (Content sniffing reads the identity, not the compressed bytes.)
    chosen.identity = chosen.entry.replace(variant);
    chosen.coding = Some(coding.name());
    chosen.on_the_fly = true;
}

/// Chooses between the file at `s.rel` (`identity`; `None` when it does
/// not exist) and its `.br`/`.zst`/`.gz` sidecars, by the weights of
/// `Accept-Encoding` (RFC 9110 §12.5.3; on a tie, in that order).
/// Sidecars are looked up even when the request has no
/// `Accept-Encoding`, because a cache must learn that the answer
/// varies with it.
fn sidecars(
    files: &StaticFiles,
    req: &OwnedRequest,
    s: &mut Scratch,
    cache: &mut FileCache,
    identity: Option<Rc<Entry>>,
) -> Chosen {
    let mut chosen = Chosen {
        entry: identity,
        coding: None,
        varies: false,
        identity: None,
        on_the_fly: false,
        stream: false,
    };
    if !files.site().static_files.precompressed {
        return chosen;
    }
    // Each sidecar's weight; one the client weighs below identity is not
    // wanted when the file itself exists.
    let (weights, identity_weight) = match req.field(Field::AcceptEncoding) {
        Some(a) => encoding::weights(a, SIDECARS.map(|(name, _)| name.as_bytes())),
        None => ([0; SIDECARS.len()], None),
    };
    let floor = match chosen.entry {
        Some(_) => identity_weight.unwrap_or(0),
        None => 0,
    };
    let wanted = weights.map(|w| w > 0 && w >= floor);
    // Most requests without Accept-Encoding (or with none of these
    // codings) only need to know whether sidecars exist: remembered on
    // the file's cache entry, as fresh as a cached lookup.
    if let Some(e) = &chosen.entry {
        match cache.sidecars_known(e) {
            // Nothing to choose from, whatever the client accepts.
            Some(false) => return chosen,
            Some(true) if wanted == [false; SIDECARS.len()] => {
                chosen.varies = true;
                return chosen;
            }
            _ => {}
        }
    }
    let identity = chosen.entry.clone();
    let base = s.rel.len();
    // Heaviest first; equal weights keep SIDECARS' order.
    let mut order = [0, 1, 2];
    order.sort_by_key(|&i| std::cmp::Reverse(weights[i]));
    for i in order {
        let ((name, suffix), wanted) = (SIDECARS[i], wanted[i]);
        s.rel.extend_from_slice(suffix);
        let side = cache.probe(&files.root, &s.rel);
        s.rel.truncate(base);
        let Ok(side) = side else { continue };
        if side.meta.kind != Kind::File || files.own(&side) {
            continue;
        }
        chosen.varies = true;
        if wanted {
            chosen.entry = Some(side);
            chosen.coding = Some(name);
            break;
        }
    }
    if let Some(e) = &identity {
        cache.remember_sidecars(e, chosen.varies);
    }
    if chosen.coding.is_some() {
        chosen.identity = identity;
    }
    chosen
}

/// Serves the representation `chosen` of the file at `s.rel` (request
/// path `s.path`).
fn serve_file(files: &StaticFiles, req: &OwnedRequest, s: &mut Scratch, chosen: Chosen) -> Plan {
    let vary = |s: &mut Scratch| {
        if chosen.varies {
            s.header("Vary", b"Accept-Encoding");
        }
    };
    let coding = chosen.coding;
    let Some(entry) = chosen.entry.as_ref() else {
        // Only `CHANGES.gz` exists and the client takes no gzip: as
        // nginx's `gzip_static on` without `gunzip`, the resource is not
        // there for it (404, not 406: no other representation exists).
        vary(s);
        let why = match chosen.varies {
            true => Refusal::EncodingNotAccepted,
            false => Refusal::Lookup(libc::ENOENT),
        };
        return refused(why, Status::NOT_FOUND, s);
    };
    let meta = entry.meta;
    let Some(src) = entry.source.clone() else {
        return refused(Refusal::NotRegular, Status::FORBIDDEN, s);
    };
    // A streamed compression's bytes are not the stored variant's (nor
    // the file's): its tag is the file's made weak (RFC 9110 §8.8.1: the
    // same content, other bytes), as nginx's gzip does, so that
    // `If-None-Match` (a weak comparison, §13.1.2) revalidates it while
    // `If-Match` and `If-Range` (strong) never take it for the file.
    let weak;
    let etag = match chosen.streams() {
        true => {
            weak = [b"W/", entry.etag()].concat();
            s.headers.extend_from_slice(b"ETag: ");
            s.headers.extend_from_slice(&weak);
            s.headers.extend_from_slice(b"\r\n");
            // (Then `Last-Modified`, after the `ETag` line.)
            let rest = entry
                .validators
                .get(b"ETag: \r\n".len() + entry.etag().len()..);
            s.headers.extend_from_slice(rest.unwrap_or_default());
            &weak[..]
        }
        false => {
            s.headers.extend_from_slice(&entry.validators);
            entry.etag()
        }
    };
    let v = Validators {
        etag,
        last_modified: meta.mtime,
    };
    let pre = Preconditions {
        if_match: req.field(Field::IfMatch),
        if_none_match: req.field(Field::IfNoneMatch),
        if_modified_since: req.field(Field::IfModifiedSince),
        if_unmodified_since: req.field(Field::IfUnmodifiedSince),
    };
    match conditional::evaluate(&pre, &v, req.method()) {
        Precondition::Proceed => {}
        Precondition::NotModified => {
            vary(s);
            apply_header_rules(files, s);
            return Plan {
                status: Status::NOT_MODIFIED,
                body: Body::Empty,
                close: false,
            };
        }
        Precondition::Failed => {
            s.headers.clear();
            vary(s);
            return Plan::error(Status::PRECONDITION_FAILED, s);
        }
    }
    let ranges = match (req.method(), req.field(Field::Range)) {
        (Method::Get, Some(r)) => match req.field(Field::IfRange) {
            Some(ir) if !conditional::if_range_matches(ir, &v) => RangeOutcome::Ignore,
            _ => range::parse_range(r, meta.size),
        },
        _ => RangeOutcome::Ignore,
    };
    let content_type = content_type(files, &s.path, &chosen, entry);
    if let RangeOutcome::Unsatisfiable = ranges {
        s.headers.clear();
        let mut cr = Vec::with_capacity(32);
        cr.extend_from_slice(b"bytes */");
        crate::http::push_u64(&mut cr, meta.size);
        s.header("Content-Range", &cr);
        vary(s);
        return Plan::error(Status::RANGE_NOT_SATISFIABLE, s);
    }
    let multipart = matches!(&ranges, RangeOutcome::Ranges(set) if set.as_slice().len() > 1);
    // `Content-Type` and `Accept-Ranges` in one go, as most answers have both.
    let ranged: &[u8] = match !chosen.on_the_fly && !chosen.streams() {
        true => b"Accept-Ranges: bytes\r\n",
        false => b"",
    };
    let h = &mut s.headers;
    if !multipart {
        h.reserve(40 + content_type.len());
        h.extend_from_slice(b"Content-Type: ");
        h.extend_from_slice(content_type.as_bytes());
        h.extend_from_slice(b"\r\n");
    }
    h.extend_from_slice(ranged);
    if let Some(c) = coding {
        s.header("Content-Encoding", c.as_bytes());
    }
    if chosen.streams() {
        // The engine compresses it as it passes, as it does a CGI
        // program's output, and writes `Content-Encoding` and `Vary`.
        apply_header_rules(files, s);
        return Plan {
            status: Status::OK,
            body: Body::Stream(Box::new(Streamed {
                source: StreamSource::Local(Box::new(FileStream {
                    src,
                    at: 0,
                    end: meta.size,
                })),
                length: Some(meta.size),
                label: format!("static file {}", String::from_utf8_lossy(&s.path)),
                patient: false,
            })),
            close: false,
        };
    }
    vary(s);
    apply_header_rules(files, s);
    match ranges {
        RangeOutcome::Ranges(set) if multipart => {
            let boundary = boundary(&meta);
            let boundary = std::str::from_utf8(&boundary).unwrap_or("brisk-boundary");
            // (Each part says the file's type; a rule's `Content-Type`
            // is no type of the whole.)
            remove_field(&mut s.headers, 0, "Content-Type");
            s.headers
                .extend_from_slice(b"Content-Type: multipart/byteranges; boundary=");
            s.headers.extend_from_slice(boundary.as_bytes());
            s.headers.extend_from_slice(b"\r\n");
            s.body.clear();
            s.segs.clear();
            for r in set.as_slice() {
                let start = s.body.len();
                range::write_part_header(boundary, content_type, *r, meta.size, &mut s.body);
                s.segs.push(Seg::Bytes {
                    start,
                    len: s.body.len() - start,
                });
                s.segs.push(Seg::File {
                    offset: r.start,
                    len: r.len(),
                });
            }
            let start = s.body.len();
            range::write_multipart_end(boundary, &mut s.body);
            s.segs.push(Seg::Bytes {
                start,
                len: s.body.len() - start,
            });
            Plan {
                status: Status::PARTIAL_CONTENT,
                body: Body::Multipart { src },
                close: false,
            }
        }
        RangeOutcome::Ranges(set) => {
            let r = set.as_slice()[0];
            let mut cr = Vec::with_capacity(48);
            range::write_content_range(r, meta.size, &mut cr);
            s.headers.extend_from_slice(b"Content-Range: ");
            s.headers.extend_from_slice(&cr);
            s.headers.extend_from_slice(b"\r\n");
            Plan {
                status: Status::PARTIAL_CONTENT,
                body: Body::File {
                    src,
                    offset: r.start,
                    len: r.len(),
                },
                close: false,
            }
        }
        _ => Plan {
            status: Status::OK,
            body: Body::File {
                src,
                offset: 0,
                len: meta.size,
            },
            close: false,
        },
    }
}

/// A file's bytes in pieces, for the engine to compress as they pass
/// (the first answers of a file whose stored variant is not ready).
struct FileStream {
    src: super::Source,
    at: u64,
    end: u64,
}

impl BodyStream for FileStream {
    fn fill(&mut self, out: &mut Vec<u8>, room: usize) -> Result<bool, String> {
        let n = (self.end - self.at).min(room.max(4096) as u64) as usize;
        match &self.src {
            super::Source::Mem(m) => out.extend_from_slice(&m[self.at as usize..][..n]),
            super::Source::File(f) => {
                use std::os::unix::fs::FileExt;
                let start = out.len();
                out.resize(start + n, 0);
                // A file that shrank meanwhile cuts the answer short.
                f.read_exact_at(&mut out[start..], self.at)
                    .map_err(|e| format!("reading the file: {e}"))?;
            }
        }
        self.at += n as u64;
        Ok(self.at < self.end)
    }
}

/// The `Content-Type` of the file at `path`: by its extension, else (with
/// `[static] sniff`) by the first bytes of the identity file, read once
/// per cached file, else the default type.
fn content_type<'a>(
    files: &'a StaticFiles,
    path: &[u8],
    chosen: &Chosen,
    entry: &Entry,
) -> &'a str {
    if !files.cfg.site.static_files.sniff || mime::has_extension(path) {
        return files.mime.lookup(path);
    }
    let identity = match chosen.coding {
        Some(_) => chosen.identity.as_deref(),
        None => Some(entry),
    };
    identity
        .and_then(Entry::sniffed_type)
        .unwrap_or_else(|| files.mime.default_type())
}

/// A multipart boundary that cannot occur by chance in the file: derived
/// from the file identity and a per-process counter.
fn boundary(meta: &Meta) -> [u8; 24] {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0x9e37_79b9_7f4a_7c15);
    let n = COUNTER.fetch_add(0x9e37_79b9_7f4a_7c15, Ordering::Relaxed);
    let mix = n ^ meta.ino.rotate_left(17) ^ meta.mtime.rotate_left(41) ^ meta.size;
    let mut out = [0u8; 24];
    out[..8].copy_from_slice(b"brisk-0x");
    out[8..].copy_from_slice(&grammar::hex_u64(mix));
    out
}

/// Whether the `[[headers]]` that match `path` leave its answer
/// compressible (see `compress::stream::allows`).
#[cfg(feature = "compress")]
fn header_rules_allow_compression(files: &StaticFiles, path: &[u8]) -> bool {
    files
        .site()
        .headers
        .iter()
        .filter(|rule| rule.matcher.matches(path))
        .flat_map(|rule| &rule.set)
        .all(|(name, value)| compress::stream::allows(name.as_bytes(), value.as_bytes()))
}

/// Adds the configured `[[headers]]` whose path matches to an answer
/// brisk made from the site's files. A rule's field replaces a field of
/// the same name the head already has, brisk's own (`Content-Type`,
/// `ETag`, …) or an earlier rule's, so each is sent once: two
/// `Content-Disposition` fields make Chromium refuse the download
/// (`ERR_RESPONSE_HEADERS_MULTIPLE_CONTENT_DISPOSITION`), and two
/// `Content-Type` or `ETag` fields are read differently by different
/// clients. `Vary` and `Set-Cookie` are added to, never replaced: the
/// `Vary: Accept-Encoding` brisk sends is what keeps a cache from giving
/// one coding to a client that asked for another.
pub(crate) fn apply_header_rules(files: &StaticFiles, s: &mut Scratch) {
    apply_rules_over(files, s, 0);
}

/// [`apply_header_rules`] for an answer a servlet or an embedded handler
/// made: its own fields (the head's lines so far) are kept, and a rule's
/// field of a name among them is left out (a servlet's `Cache-Control:
/// no-store` is not replaced by a site-wide `max-age`); rules replace one
/// another's as for a file.
pub(crate) fn apply_header_rules_to_handler(files: &StaticFiles, s: &mut Scratch) {
    let own = s.headers.len();
    apply_rules_over(files, s, own);
}

/// Adds the matching rules' fields; the lines of `s.headers` before
/// `keep` are kept, and a rule's field of a name they hold is left out.
fn apply_rules_over(files: &StaticFiles, s: &mut Scratch, keep: usize) {
    for rule in &files.site().headers {
        if rule.matcher.matches(&s.path) {
            for (name, value) in &rule.set {
                let repeats = name.eq_ignore_case("vary") || name.eq_ignore_case("set-cookie");
                if !repeats {
                    if has_field(&s.headers[..keep], name) {
                        continue;
                    }
                    remove_field(&mut s.headers, keep, name);
                }
                s.header(name, value.as_bytes());
            }
        }
    }
}

/// The name of a `Name: value\r\n` head line.
fn line_name(line: &[u8]) -> &[u8] {
    line.split(|&b| b == b':').next().unwrap_or_default()
}

/// Whether the head lines `lines` hold a field named `name` (any case).
fn has_field(lines: &[u8], name: &str) -> bool {
    lines
        .split_inclusive(|&b| b == b'\n')
        .any(|line| line_name(line).eq_ignore_case(name.as_bytes()))
}

/// Removes from the head lines `lines` those named `name` (any case) that
/// start at `from` or later, in place.
pub(super) fn remove_field(lines: &mut Vec<u8>, from: usize, name: &str) {
    let (mut read, mut write) = (from, from);
    while read < lines.len() {
        let end = lines[read..]
            .iter()
            .position(|&b| b == b'\n')
            .map_or(lines.len(), |i| read + i + 1);
        if !line_name(&lines[read..end]).eq_ignore_case(name.as_bytes()) {
            lines.copy_within(read..end, write);
            write += end - read;
        }
        read = end;
    }
    lines.truncate(write);
}

/// The paths beneath `tree` of the files brisk itself reads
/// ([`Config::own_files`], by the paths their directories resolve to),
/// relative and without a leading `/`.
fn own_names_beneath(cfg: &Config, tree: &std::path::Path) -> Box<[Box<[u8]>]> {
    use std::os::unix::ffi::OsStrExt as _;
    let tree = crate::sys::fs::canonical(tree).unwrap_or_else(|_| tree.to_path_buf());
    let mut names: Vec<Box<[u8]>> = Vec::new();
    for (file, _) in cfg.own_files_with(false) {
        let (Some(dir), Some(name)) = (file.parent(), file.file_name()) else {
            continue;
        };
        let dir = crate::sys::fs::canonical(dir).unwrap_or_else(|_| dir.to_path_buf());
        if let Ok(rel) = dir.join(name).strip_prefix(&tree) {
            names.push(rel.as_os_str().as_bytes().into());
        }
    }
    // (The crate's one sort: std's would add its code to small builds.)
    crate::sort::sort_by(&mut names, |a, b| a.cmp(b));
    names.dedup();
    names.into()
}

/// Whether `rel` (beneath a tree) is the path of one of the files brisk
/// itself reads there (`own_names`), or of a sibling of one (see
/// [`own_name`]).
#[inline]
fn own_path(own_names: &[Box<[u8]>], rel: &[u8]) -> bool {
    !own_names.is_empty() && own_names.iter().any(|n| own_name(n, rel))
}

/// Whether `rel` is `own` (a path beneath the tree of one of brisk's own
/// files), or a sibling named after it: `own.` or `own-` followed by
/// more, or `own~` (`access.log.1`, `access.log-20261201.gz`,
/// `htpasswd.tmp`, `brisk.toml~`: rotated logs and the copies tools and
/// editors leave). A file replaced by a rename has a new identity that
/// [`Protected`] learns within half a second; the name covers it at
/// once, and the rotated log a reload forgets.
fn own_name(own: &[u8], rel: &[u8]) -> bool {
    let rel = rel.strip_prefix(b"/").unwrap_or(rel);
    match rel.strip_prefix(own) {
        Some([]) | Some([b'~']) => true,
        Some([b'.' | b'-', rest @ ..]) => !rest.is_empty() && !rest.contains(&b'/'),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::{own_name, svgz};

    #[test]
    fn svgz_is_the_extension_in_any_case_and_nothing_near_it() {
        for name in ["/a.svgz", "/a.SVGZ", "/b/.x.SvGz", ".svgz"] {
            assert!(svgz(name.as_bytes()), "{name}");
        }
        let near = [
            "/a.svg", "/asvgz", "/a.svgzz", "/a.svgy", "/a,svgz", "/a.3vgz", "vgz", "",
        ];
        for name in near {
            assert!(!svgz(name.as_bytes()), "{name}");
        }
        // (`| 0x20` folds no other byte onto a letter here.)
        assert!(!svgz(b"/a.\xd3VGZ"));
        assert!(!svgz(b"/a.\x13vgz"));
    }

    #[test]
    fn an_own_file_and_the_copies_tools_name_after_it() {
        for rel in [
            "logs/access.log",
            "/logs/access.log",
            "logs/access.log.1",
            "logs/access.log.2.gz",
            "logs/access.log-20261201",
            "logs/access.log~",
        ] {
            assert!(own_name(b"logs/access.log", rel.as_bytes()), "{rel}");
        }
        for rel in [
            "logs/access.logbook",
            "logs/access.log.",
            "logs/access.log-",
            "logs/access.log.d/x",
            "logs/access.lo",
            "access.log",
            "x/logs/access.log",
        ] {
            assert!(!own_name(b"logs/access.log", rel.as_bytes()), "{rel}");
        }
    }
}
