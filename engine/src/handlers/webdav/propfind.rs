//! PROPFIND (RFC 4918 §9.1): the live properties of a resource and, with
//! `Depth: 1`, of its members, in a 207 Multi-Status. `Depth: infinity`
//! (and no Depth, which means it) is refused with 403 and the
//! `propfind-finite-depth` precondition (§9.1, §16): a whole tree in one
//! answer is a denial of service for the asking.

use super::lock::{self, SUPPORTEDLOCK};
use super::locks::{self, Lock};
use super::multistatus::{self, escape, push_segment, status_line, Multistatus};
use super::props::{self, element, Name};
use super::xml::{self, Document};
use super::{bare, Dav};
use crate::config::Dotfiles;
use crate::handlers::{Plan, Scratch};
use crate::http::date::{civil_time, format_http_date, HTTP_DATE_LEN};
use crate::http::grammar::push_hex;
use crate::http::{push_u64, Status};
use crate::sys::fs::{Kind, Meta};
use crate::sys::listing::Listing;

/// The largest PROPFIND body read (it is held in memory: never more
/// than the spool keeps there).
pub const MAX_BODY: u64 = crate::handlers::spool::MEMORY as u64;

/// A live property brisk answers, in the `DAV:` namespace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Live {
    CreationDate,
    ResourceType,
    DisplayName,
    ContentLength,
    ContentType,
    Etag,
    LastModified,
    LockDiscovery,
    SupportedLock,
}

/// The live properties in the order `allprop` and `propname` list them
/// (`creationdate` where the filesystem keeps a birth time); the last
/// two, the lock properties (§15.8, §15.10), with locks only.
const LIVE: [Live; 9] = [
    Live::CreationDate,
    Live::ResourceType,
    Live::DisplayName,
    Live::ContentLength,
    Live::ContentType,
    Live::Etag,
    Live::LastModified,
    Live::LockDiscovery,
    Live::SupportedLock,
];

impl Live {
    /// Its local name.
    fn name(self) -> &'static str {
        match self {
            Live::CreationDate => "creationdate",
            Live::ResourceType => "resourcetype",
            Live::DisplayName => "displayname",
            Live::ContentLength => "getcontentlength",
            Live::ContentType => "getcontenttype",
            Live::Etag => "getetag",
            Live::LastModified => "getlastmodified",
            Live::LockDiscovery => "lockdiscovery",
            Live::SupportedLock => "supportedlock",
        }
    }

    /// Whether a resource of that kind has it (a collection has no
    /// content length, type or ETag here; no birth time, no
    /// creationdate).
    fn of(self, dir: bool, born: Option<u64>) -> bool {
        match self {
            Live::CreationDate => born.is_some(),
            Live::ContentLength | Live::ContentType | Live::Etag => !dir,
            _ => true,
        }
    }
}

/// One property a `prop` body names: live, or another (dead, or none).
enum Want<'a> {
    Live(Live),
    Other(&'a Name),
}

/// A PROPFIND's rule, what it asks for, the locks it shows, and the last
/// dates written (members often share one).
struct Ctx<'a> {
    dav: &'a Dav,
    /// The live properties.
    live: &'static [Live],
    /// What a `prop` body names, resolved once.
    wanted: Vec<Want<'a>>,
    /// The locks over the resource and beneath it, and the lock clock.
    held: Vec<Lock>,
    now: u64,
    modified: (u64, [u8; HTTP_DATE_LEN]),
    created: (u64, [u8; 20]),
}

/// One resource: its path relative to the root, what `stat` and the
/// birth time say, its dead properties.
struct Res<'a> {
    path: &'a [u8],
    meta: &'a Meta,
    born: Option<u64>,
    dead: &'a [(Name, Vec<u8>)],
}

/// What the body asks for (§14.20).
#[derive(Debug, PartialEq, Eq)]
pub enum Asked {
    /// `allprop` (or no body): every live property.
    All,
    /// `propname`: the names alone.
    Names,
    /// `prop`: these, as (namespace, local name).
    Some(Vec<(String, String)>),
}

/// What `body` (empty: `allprop`) asks for; `None` for a body that is
/// not a well-formed `propfind` (400).
pub fn asked(body: &[u8]) -> Option<Asked> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Some(Asked::All);
    }
    let doc = xml::parse(body).ok()?;
    if !doc.is_dav(0, "propfind") {
        return None;
    }
    let (i, _) = doc.children(0).find(|(_, e)| e.ns == "DAV:")?;
    match doc.elements[i].name.as_str() {
        "allprop" => Some(Asked::All),
        "propname" => Some(Asked::Names),
        "prop" => Some(Asked::Some(props(&doc, i))),
        _ => None,
    }
}

fn props(doc: &Document, prop: usize) -> Vec<(String, String)> {
    doc.children(prop)
        .map(|(_, e)| (e.ns.clone(), e.name.clone()))
        .collect()
}

/// The Depth of a PROPFIND: 0, 1, or (infinity, none, anything else)
/// an answer at once.
pub fn depth(value: Option<&[u8]>, s: &mut Scratch) -> Result<bool, Plan> {
    match value {
        Some(b"0") => Ok(false),
        Some(b"1") => Ok(true),
        Some(v) if !v.eq_ignore_ascii_case(b"infinity") => Err(bare(Status::BAD_REQUEST)),
        _ => Err(lock::condition(
            s,
            Status::FORBIDDEN,
            "propfind-finite-depth",
            None,
        )),
    }
}

/// The answer to PROPFIND of `rel` (its href `href`, of the decoded
/// path) for `asked`, with its members if `members`.
///
/// Members are listed by `Root::listing` (one `statx` each; in a
/// collection marked as holding members with dead properties, one
/// `listxattrat` each too where the kernel has it, and only a member
/// with extended attributes is opened for them), and written straight
/// into the body.
pub fn propfind(
    dav: &Dav,
    rel: &[u8],
    href: &[u8],
    asked: &Asked,
    members: bool,
    s: &mut Scratch,
) -> Plan {
    let root = dav.files.root();
    let rel = rel.strip_suffix(b"/").unwrap_or(rel);
    let meta = match root.stat(rel) {
        Ok((_, meta)) => meta,
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => return bare(Status::NOT_FOUND),
        Err(_) => return bare(Status::FORBIDDEN),
    };
    let stored = stored(dav, rel);
    // (Members' dead properties are looked for where PROPPATCH or MOVE
    // marked the collection: `props::marked`.)
    let dead = stored.marked
        && !matches!(asked, Asked::Some(list) if list.iter().all(|(ns, _)| ns == "DAV:"));
    let listing = match (members, meta.kind) {
        (true, Kind::Dir) => match root.listing(rel, dead) {
            Ok(list) => Some(list),
            Err(_) => return bare(Status::FORBIDDEN),
        },
        _ => None,
    };
    let live: &'static [Live] = match dav.rule.locks {
        true => &LIVE,
        false => &LIVE[..7],
    };
    let wanted = match asked {
        Asked::Some(list) => list
            .iter()
            .map(
                |p| match live.iter().find(|l| p.0 == "DAV:" && l.name() == p.1) {
                    Some(&l) => Want::Live(l),
                    None => Want::Other(p),
                },
            )
            .collect(),
        _ => Vec::new(),
    };
    let mut ctx = Ctx {
        dav,
        live,
        wanted,
        held: lock::held(dav, rel),
        now: locks::now(),
        modified: (u64::MAX, [0; HTTP_DATE_LEN]),
        created: (u64::MAX, [0; 20]),
    };
    let mut body = std::mem::take(&mut s.body);
    let mut ms = Multistatus::new(&mut body);
    let count = listing.as_ref().map_or(0, |l| l.entries.len());
    // (About what a member takes with allprop: one allocation.)
    ms.out().reserve((count + 1) * 512);
    let mut at = href.strip_suffix(b"/").unwrap_or(href).to_vec();
    let res = Res {
        path: rel,
        meta: &meta,
        born: stored.born,
        dead: &stored.dead,
    };
    response(&mut ctx, &mut ms, &at, &res, asked);
    if let Some(listing) = &listing {
        let dotfiles = dav.files.site().static_files.dotfiles == Dotfiles::Allow;
        let mut path = rel.to_vec();
        for e in &listing.entries {
            let child = listing.name(e);
            if !dotfiles && child.first() == Some(&b'.') {
                continue;
            }
            let (len, plen) = (at.len(), path.len());
            at.push(b'/');
            push_segment(&mut at, child);
            if !path.is_empty() {
                path.push(b'/');
            }
            path.extend_from_slice(child);
            member(&mut ctx, &mut ms, listing, e, (&at, &path), asked);
            at.truncate(len);
            path.truncate(plen);
        }
    }
    ms.end();
    s.body = body;
    multistatus::plan(s)
}

/// The response of member `e` of `listing`, at `href` and `path`: a
/// symlink as what it names beneath the root (one that leads out, or to
/// nothing, is left out), and nothing that is neither a file nor a
/// collection.
fn member(
    ctx: &mut Ctx<'_>,
    ms: &mut Multistatus<'_>,
    listing: &Listing,
    e: &crate::sys::listing::Entry,
    (href, path): (&[u8], &[u8]),
    asked: &Asked,
) {
    let followed;
    let (meta, stored) = match e.link {
        true => match ctx.dav.files.root().stat(path) {
            Ok((_, target)) => {
                followed = target;
                (&followed, stored(ctx.dav, path))
            }
            Err(_) => return,
        },
        false => {
            let dead = match e.xattrs {
                Some(false) => Vec::new(),
                _ => listing.open(e).map(|f| props::dead(&f)).unwrap_or_default(),
            };
            let stored = Stored {
                born: e.born,
                dead,
                marked: false,
            };
            (&e.meta, stored)
        }
    };
    if meta.kind == Kind::Special {
        return;
    }
    let res = Res {
        path,
        meta,
        born: stored.born,
        dead: &stored.dead,
    };
    response(ctx, ms, href, &res, asked);
}

/// What is stored of a resource beyond `Meta`: its birth time (seconds
/// since the epoch), its dead properties, whether its members may have
/// some (`props::marked`).
#[derive(Default)]
struct Stored {
    born: Option<u64>,
    dead: Vec<(Name, Vec<u8>)>,
    marked: bool,
}

/// What is stored of `rel` (nothing if it cannot be opened).
fn stored(dav: &Dav, rel: &[u8]) -> Stored {
    let Ok(file) = dav.files.root().open_any(rel) else {
        return Stored::default();
    };
    let born = file.metadata().and_then(|m| m.created()).ok();
    Stored {
        born: born
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map(|d| d.as_secs()),
        dead: props::dead(&file),
        marked: props::marked(&file),
    }
}

/// `1997-12-01T17:42:21Z` (RFC 4918 §15.1: RFC 3339's date-time).
fn rfc3339(secs: u64) -> [u8; 20] {
    let t = civil_time(secs);
    let mut out = *b"0000-00-00T00:00:00Z";
    let mut put = |at: usize, width: usize, mut v: u32| {
        for i in (at..at + width).rev() {
            out[i] = b'0' + (v % 10) as u8;
            v /= 10;
        }
    };
    put(0, 4, t.year);
    put(5, 2, t.month);
    put(8, 2, t.day);
    put(11, 2, t.hour);
    put(14, 2, t.minute);
    put(17, 2, t.second);
    out
}

/// One resource's `<D:response>`.
fn response(ctx: &mut Ctx<'_>, ms: &mut Multistatus<'_>, href: &[u8], r: &Res<'_>, asked: &Asked) {
    let dir = r.meta.kind == Kind::Dir;
    ms.open(href, dir);
    let out = ms.out();
    out.extend_from_slice(b"<D:propstat><D:prop>");
    let mut missing = 0;
    match asked {
        Asked::All => {
            for &p in ctx.live {
                live(ctx, out, p, r);
            }
            for (n, value) in r.dead {
                element(out, n, Some(value));
            }
        }
        Asked::Names => {
            for p in ctx.live.iter().filter(|p| p.of(dir, r.born)) {
                out.extend_from_slice(b"<D:");
                out.extend_from_slice(p.name().as_bytes());
                out.extend_from_slice(b"/>");
            }
            for (n, _) in r.dead {
                element(out, n, None);
            }
        }
        Asked::Some(_) => {
            for i in 0..ctx.wanted.len() {
                match ctx.wanted[i] {
                    Want::Live(p) if p.of(dir, r.born) => live(ctx, out, p, r),
                    Want::Live(_) => missing += 1,
                    Want::Other(n) => match r.dead.iter().find(|(d, _)| d == n) {
                        Some((n, value)) => element(out, n, Some(value)),
                        None => missing += 1,
                    },
                }
            }
        }
    }
    out.extend_from_slice(b"</D:prop><D:status>");
    status_line(out, Status::OK);
    out.extend_from_slice(b"</D:status></D:propstat>");
    if missing > 0 {
        out.extend_from_slice(b"<D:propstat><D:prop>");
        for w in &ctx.wanted {
            match *w {
                Want::Live(p) if !p.of(dir, r.born) => {
                    element(out, &("DAV:".into(), p.name().into()), None)
                }
                Want::Other(n) if !r.dead.iter().any(|(d, _)| d == n) => element(out, n, None),
                _ => {}
            }
        }
        out.extend_from_slice(b"</D:prop><D:status>");
        status_line(out, Status::NOT_FOUND);
        out.extend_from_slice(b"</D:status></D:propstat>");
    }
    ms.close();
}

/// Writes live property `p` of `r` (nothing if it has none).
fn live(ctx: &mut Ctx<'_>, out: &mut Vec<u8>, p: Live, r: &Res<'_>) {
    let dir = r.meta.kind == Kind::Dir;
    if !p.of(dir, r.born) {
        return;
    }
    let name = r.path.rsplit(|&b| b == b'/').next().unwrap_or(b"");
    match p {
        Live::ResourceType if dir => {
            out.extend_from_slice(b"<D:resourcetype><D:collection/></D:resourcetype>")
        }
        Live::ResourceType => out.extend_from_slice(b"<D:resourcetype/>"),
        Live::DisplayName => {
            out.extend_from_slice(b"<D:displayname>");
            escape(out, String::from_utf8_lossy(name).as_bytes());
            out.extend_from_slice(b"</D:displayname>");
        }
        Live::ContentLength => {
            out.extend_from_slice(b"<D:getcontentlength>");
            push_u64(out, r.meta.size);
            out.extend_from_slice(b"</D:getcontentlength>");
        }
        Live::ContentType => {
            out.extend_from_slice(b"<D:getcontenttype>");
            escape(out, ctx.dav.files.content_type(name).as_bytes());
            out.extend_from_slice(b"</D:getcontenttype>");
        }
        Live::Etag => {
            // (The static handler's ETag, `http::conditional::write_etag`,
            // its quotes escaped.)
            out.extend_from_slice(b"<D:getetag>&quot;");
            push_hex(out, r.meta.mtime);
            out.push(b'-');
            push_hex(out, r.meta.size);
            out.extend_from_slice(b"&quot;</D:getetag>");
        }
        Live::CreationDate => {
            let born = r.born.unwrap_or_default();
            if ctx.created.0 != born {
                ctx.created = (born, rfc3339(born));
            }
            out.extend_from_slice(b"<D:creationdate>");
            out.extend_from_slice(&ctx.created.1);
            out.extend_from_slice(b"</D:creationdate>");
        }
        Live::LastModified => {
            if ctx.modified.0 != r.meta.mtime {
                ctx.modified.0 = r.meta.mtime;
                format_http_date(r.meta.mtime, &mut ctx.modified.1);
            }
            out.extend_from_slice(b"<D:getlastmodified>");
            out.extend_from_slice(&ctx.modified.1);
            out.extend_from_slice(b"</D:getlastmodified>");
        }
        Live::LockDiscovery => lock::lockdiscovery(out, &ctx.held, r.path, ctx.now),
        Live::SupportedLock => out.extend_from_slice(SUPPORTEDLOCK),
    }
}
