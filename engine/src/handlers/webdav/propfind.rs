//! PROPFIND (RFC 4918 §9.1): the live properties of a resource and, with
//! `Depth: 1`, of its members, in a 207 Multi-Status. `Depth: infinity`
//! (and no Depth, which means it) is refused with 403 and the
//! `propfind-finite-depth` precondition (§9.1, §16): a whole tree in one
//! answer is a denial of service for the asking.

use super::listings;
use super::lock::{self, SUPPORTEDLOCK};
use super::locks::{self, Lock};
use super::multistatus::{self, escape, push_segment, status_line, Multistatus};
use super::props::{self, element, Name};
use super::sidecar::Store;
use super::xml::{self, Document};
use super::{bare, Dav};
use crate::ascii::IgnoreCase;
use crate::config::Dotfiles;
use crate::handlers::protected::Protected;
use crate::handlers::stream::{BodyStream, Later, Source, Streamed};
use crate::handlers::Body;
use crate::handlers::{Plan, Scratch};
use crate::http::date::{civil_time, format_http_date, HTTP_DATE_LEN};
use crate::http::grammar::push_hex;
use crate::http::mime::{self, MimeTable};
use crate::http::{push_u64, Status};
use crate::sys::fs::{Kind, Meta};
use crate::sys::listing::{Entry, Listing};
use std::sync::Arc;

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
enum Want {
    Live(Live),
    Other(Name),
}

/// What a PROPFIND's answer needs of its rule, what it asks for, the
/// locks it shows, and the last dates written (members often share one).
struct Ctx {
    /// The site's types, for `getcontenttype`.
    mime: Arc<MimeTable>,
    /// The live properties.
    live: &'static [Live],
    /// What a `prop` body names, resolved once.
    wanted: Vec<Want>,
    /// The locks over the resource and beneath it, and the lock clock.
    held: Vec<Lock>,
    now: u64,
    modified: (u64, [u8; HTTP_DATE_LEN]),
    created: (u64, [u8; 20]),
    /// The last extension looked up (`None`: none yet) and its type,
    /// escaped: members mostly share a few.
    typed: (Option<Vec<u8>>, Vec<u8>),
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
    // (The first of the three it may hold, wherever it is: an `include`
    // before `allprop`, or an element of a later extension, is passed
    // over, RFC 4918 §17, as Apache and lighttpd do.)
    let asked = doc
        .children(0)
        .filter(|(_, e)| e.ns == "DAV:")
        .find_map(|(i, e)| match e.name.as_str() {
            "allprop" => Some(Asked::All),
            "propname" => Some(Asked::Names),
            "prop" => Some(Asked::Some(props(&doc, i))),
            _ => None,
        });
    asked
}

fn props(doc: &Document, prop: usize) -> Vec<(String, String)> {
    doc.children(prop)
        .map(|(_, e)| (e.ns.clone(), e.name.clone()))
        .collect()
}

/// The Depth of a PROPFIND: 0, 1, or (anything else, infinity or none
/// of a collection) an answer at once. Infinity (or none) of what is no
/// collection (`collection` says, asked only then) is its Depth 0: it
/// has no members (RFC 4918 §9.1; litmus's `propwformed` asks so).
pub fn depth(
    value: Option<&[u8]>,
    collection: impl FnOnce() -> bool,
    s: &mut Scratch,
) -> Result<bool, Plan> {
    match value {
        Some(b"0") => Ok(false),
        Some(b"1") => Ok(true),
        Some(v) if !v.eq_ignore_case(b"infinity") => Err(bare(Status::BAD_REQUEST)),
        _ if !collection() => Ok(false),
        _ => Err(lock::condition(
            s,
            Status::FORBIDDEN,
            "propfind-finite-depth",
            None,
        )),
    }
}

/// Members past this many are streamed (chunked, 64 KiB at a time as the
/// client takes them) rather than answered whole: memory stays bounded
/// whatever the collection holds.
const STREAM_PAST: usize = 256;

/// The answer to PROPFIND of `rel` (its href `href`, of the decoded
/// path) for `asked`, with its members if `members` says who lists them
/// (a member the guards would refuse them is left out: [`Viewer`]).
///
/// Members are listed by `Root::listing` (one `statx` each; in a
/// collection marked as holding members with dead properties, one
/// `listxattrat` each too where the kernel has it, and only a member
/// with extended attributes is opened for them), and written straight
/// into the body; past [`STREAM_PAST`] of them, as the client reads.
pub fn propfind(
    dav: &Dav,
    rel: &[u8],
    href: &[u8],
    asked: &Asked,
    members: Option<&Viewer>,
    s: &mut Scratch,
) -> Found {
    let root = dav.files.root();
    let rel = rel.strip_suffix(b"/").unwrap_or(rel);
    let meta = match root.stat(rel) {
        Ok((_, meta)) => meta,
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => {
            return Found::Whole(bare(Status::NOT_FOUND))
        }
        Err(_) => return Found::Whole(bare(Status::FORBIDDEN)),
    };
    let mut stored = stored_of(dav, rel);
    // (Members' dead properties are looked for where PROPPATCH or MOVE
    // marked the collection: `props::marked`.)
    let dead = stored.marked
        && !matches!(asked, Asked::Some(list) if list.iter().all(|(ns, _)| ns == "DAV:"));
    let listing = match (members, meta.kind) {
        (Some(_), Kind::Dir) => match listing(dav, rel, &meta, dead) {
            Some(list) => Some(list),
            None => return Found::Whole(bare(Status::FORBIDDEN)),
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
                    None => Want::Other(p.clone()),
                },
            )
            .collect(),
        _ => Vec::new(),
    };
    let mut m = Members {
        ctx: Ctx {
            mime: Arc::clone(&dav.mime),
            live,
            wanted,
            held: lock::held(dav, rel),
            now: locks::now(),
            modified: (u64::MAX, [0; HTTP_DATE_LEN]),
            created: (u64::MAX, [0; 20]),
            typed: (None, Vec::new()),
        },
        asked: match asked {
            Asked::All => Asked::All,
            Asked::Names => Asked::Names,
            Asked::Some(_) => Asked::Some(Vec::new()),
        },
        links: Vec::new(),
        dotfiles: dav.files.site().static_files.dotfiles == Dotfiles::Allow,
        own: Arc::clone(dav.files.protected()),
        next: 0,
        at: href.strip_suffix(b"/").unwrap_or(href).to_vec(),
        path: rel.to_vec(),
        listing: None,
        side: stored.side.take(),
        hidden: Vec::new(),
    };
    // (Symlinks are followed beneath the root now, while the rule is at
    // hand: the stream has the listing only.)
    if let Some(listing) = &listing {
        for (i, e) in listing.entries.iter().enumerate().filter(|(_, e)| e.link) {
            let path = m.member_path(listing.name(e));
            if let Ok((_, target)) = root.stat(&path) {
                m.links.push((i, target, stored_of(dav, &path)));
            }
        }
    }
    if let (Some(listing), Some(viewer)) = (&listing, members) {
        m.hidden = viewer.refused(dav.files.site(), listing);
    }
    let mut body = std::mem::take(&mut s.body);
    let mut ms = Multistatus::new(&mut body);
    let res = Res {
        path: rel,
        meta: &meta,
        born: stored.born,
        dead: &stored.dead,
    };
    response(&mut m.ctx, &mut ms, &m.at, &res, &m.asked);
    let count = listing.as_ref().map_or(0, |l| l.entries.len());
    m.listing = listing;
    if count > STREAM_PAST {
        s.header("Content-Type", b"application/xml; charset=utf-8");
        return Found::Streaming(Box::new(Streaming {
            first: Some(body),
            members: m,
        }));
    }
    m.write(&mut ms, usize::MAX);
    ms.end();
    s.body = body;
    Found::Whole(multistatus::plan(s))
}

/// A PROPFIND's answer.
pub enum Found {
    /// Whole, its body in the scratch buffers.
    Whole(Plan),
    /// A 207 of a large collection's members, its header lines in the
    /// scratch buffers: written as the client takes it.
    Streaming(Box<dyn BodyStream + Send>),
}

impl Found {
    /// The answer, as the worker that made it gives it.
    pub fn plan(self) -> Plan {
        match self {
            Found::Whole(plan) => plan,
            Found::Streaming(body) => Plan {
                status: multistatus::MULTI_STATUS,
                body: Body::Stream(Box::new(Streamed {
                    source: Source::Local(body),
                    length: None,
                    label: "webdav PROPFIND".to_string(),
                    patient: false,
                })),
                close: false,
            },
        }
    }
}

/// PROPFIND of `rel` (its href `href`) and its members, for `asked` and
/// `viewer`, made off the event loop (see [`crate::handlers::listings`]):
/// its answer goes to `later`; a large collection's members are written
/// by the worker as the client takes them.
pub fn propfind_later(
    dav: Arc<Dav>,
    (rel, href): (Vec<u8>, Vec<u8>),
    asked: Asked,
    viewer: Viewer,
    later: Later,
) {
    listings::off_loop(later, move |later| {
        let mut s = Scratch::default();
        let _ = match propfind(&dav, &rel, &href, &asked, Some(&viewer), &mut s) {
            Found::Whole(plan) => super::answer_later(later, plan, s),
            Found::Streaming(body) => later.stream(multistatus::MULTI_STATUS, s.headers, body),
        };
    });
}

/// The members of collection `rel` (`meta`, as `stat` found it now),
/// their extended attributes looked for if `xattrs`: kept ones while
/// they serve (`listings`), else listed now and kept.
fn listing(dav: &Dav, rel: &[u8], meta: &Meta, xattrs: bool) -> Option<Arc<Listing>> {
    let age = dav.rule.listing_cache;
    if !age.is_zero() {
        if let Some(kept) = listings::get(meta, xattrs, age) {
            return Some(kept);
        }
    }
    let stamp = listings::stamp();
    let listing = Arc::new(dav.files.root().listing(rel, xattrs).ok()?);
    listings::put(&listing, stamp, xattrs, age);
    Some(listing)
}

/// Who lists a collection's members (`Depth: 1`), so that those the
/// site's guards would refuse them are left out, as Apache's mod_dav
/// and mod_autoindex leave out what a subrequest would be refused: a
/// member an `[[access]]` rule refuses the client (`pattern = "*.key"`,
/// deny all), and one an `[[auth]]` rule guards with another login than
/// the collection's (its htpasswd file: the credentials that let the
/// listing in are checked against that file only), as `try_files`
/// candidates are judged. The collection itself was judged as any path
/// is; a member is never the reason a listing is refused.
#[derive(Debug)]
pub struct Viewer {
    /// The client's address.
    pub client: std::net::IpAddr,
    /// The collection's decoded URL path.
    pub path: Vec<u8>,
}

impl Viewer {
    /// The entries of `listing` the guards of `site` would refuse to this
    /// viewer, in order (empty where no rule could: nearly always).
    fn refused(&self, site: &crate::config::SiteConfig, listing: &Listing) -> Vec<usize> {
        use crate::http::glob::Reach;
        let access = &site.admission.access;
        if access.is_empty() && site.auth.is_empty() {
            return Vec::new();
        }
        // (A rule's login is its file's: the first rule that covers a
        // path for PROPFIND decides, as the auth stage judges.)
        let login = |path: &[u8]| {
            site.auth
                .iter()
                .find(|r| {
                    r.methods.covers(b"PROPFIND") && r.matcher.matches_in(path, &site.folding)
                })
                .map(|r| (&r.htpasswd, r.allow_plaintext))
        };
        let own = login(&self.path);
        let mut url = self.path.clone();
        if url.last() != Some(&b'/') {
            url.push(b'/');
        }
        let at = url.len();
        let refused = |i: &usize| {
            url.truncate(at);
            url.extend_from_slice(listing.name(&listing.entries[*i]));
            let member = (&url[..], Reach::Own);
            crate::access::admission::judge(access, member, &site.folding, self.client).is_err()
                || login(&url).is_some_and(|l| own != Some(l))
        };
        (0..listing.entries.len()).filter(refused).collect()
    }
}

/// The members of a PROPFIND, written in turn.
struct Members {
    ctx: Ctx,
    /// What is asked (a `prop` body's names are in `ctx.wanted`).
    asked: Asked,
    listing: Option<Arc<Listing>>,
    /// The symlinks among them that lead somewhere beneath the root: by
    /// entry, what they name.
    links: Vec<(usize, Meta, Stored)>,
    dotfiles: bool,
    /// brisk's own files, never listed.
    own: Arc<Protected>,
    /// The next entry to write.
    next: usize,
    /// The collection's href and path (a member's while it is written).
    at: Vec<u8>,
    path: Vec<u8>,
    /// The collection's sidecar store, where its members' dead
    /// properties are kept there.
    side: Option<Store>,
    /// The entries the viewer's guards refuse, in order ([`Viewer`]).
    hidden: Vec<usize>,
}

impl Members {
    /// The path of member `name`.
    fn member_path(&self, name: &[u8]) -> Vec<u8> {
        let mut path = self.path.clone();
        if !path.is_empty() {
            path.push(b'/');
        }
        path.extend_from_slice(name);
        path
    }

    /// Writes members into `ms` until its buffer holds `room` bytes or
    /// none is left; whether some are left.
    fn write(&mut self, ms: &mut Multistatus<'_>, room: usize) -> bool {
        let Some(listing) = &self.listing else {
            return false;
        };
        while self.next < listing.entries.len() && ms.out().len() < room {
            let i = self.next;
            self.next += 1;
            let e = &listing.entries[i];
            let child = listing.name(e);
            if !self.dotfiles && child.first() == Some(&b'.')
                || crate::http::path::is_own_name(child)
                || !crate::http::path::is_nameable(child)
                || self.hidden.binary_search(&i).is_ok()
            {
                continue;
            }
            // (In entry order: found by halves.)
            let link = match e.link {
                true => self.links.binary_search_by_key(&i, |l| l.0).ok(),
                false => None,
            };
            let link = link.map(|k| &self.links[k]);
            // brisk's own files (or a symlink to one): as missing.
            if self.own.contains(&e.meta) || link.is_some_and(|l| self.own.contains(&l.1)) {
                continue;
            }
            let (len, plen) = (self.at.len(), self.path.len());
            self.at.push(b'/');
            push_segment(&mut self.at, child);
            if !self.path.is_empty() {
                self.path.push(b'/');
            }
            self.path.extend_from_slice(child);
            let here = (self.at.as_slice(), self.path.as_slice());
            let side = self.side.as_ref();
            member(
                &mut self.ctx,
                ms,
                (listing, side),
                e,
                link,
                here,
                &self.asked,
            );
            self.at.truncate(len);
            self.path.truncate(plen);
        }
        self.next < listing.entries.len()
    }
}

/// A large PROPFIND's body, as the client takes it.
struct Streaming {
    /// The document's start and the collection's own response.
    first: Option<Vec<u8>>,
    members: Members,
}

impl BodyStream for Streaming {
    fn fill(&mut self, out: &mut Vec<u8>, room: usize) -> Result<bool, String> {
        if let Some(first) = self.first.take() {
            out.extend_from_slice(&first);
        }
        let mut ms = Multistatus::continuing(out);
        if self.members.write(&mut ms, room) {
            return Ok(true);
        }
        ms.end();
        Ok(false)
    }
}

/// The response of member `e` of `listing`, at `href` and `path`: a
/// symlink as what it names beneath the root (`link`; one that leads
/// out, or to nothing, is left out), and nothing that is neither a file
/// nor a collection.
fn member(
    ctx: &mut Ctx,
    ms: &mut Multistatus<'_>,
    (listing, side): (&Listing, Option<&Store>),
    e: &Entry,
    link: Option<&(usize, Meta, Stored)>,
    (href, path): (&[u8], &[u8]),
    asked: &Asked,
) {
    let own;
    let (meta, stored) = match (e.link, link) {
        (true, Some((_, target, stored))) => (target, stored),
        (true, None) => return,
        (false, _) => {
            let dead = match e.xattrs {
                _ if side.is_some() => side
                    .map(|s| props::from_store(s, listing.name(e)))
                    .unwrap_or_default(),
                Some(false) => Vec::new(),
                _ => listing.open(e).map(|f| props::dead(&f)).unwrap_or_default(),
            };
            own = Stored {
                born: e.born,
                dead,
                ..Stored::default()
            };
            (&e.meta, &own)
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
    /// A collection's sidecar store, where its properties are kept there.
    side: Option<Store>,
}

/// What is stored of `rel` (nothing if it cannot be opened).
fn stored_of(dav: &Dav, rel: &[u8]) -> Stored {
    let Ok(file) = dav.files.root().open_any(rel) else {
        return Stored::default();
    };
    let born = crate::sys::listing::born(&file);
    match props::xattrs_marked(dav, &file) {
        None => {
            let (dead, side) = props::in_store(dav, rel, &file);
            Stored {
                born,
                dead,
                marked: false,
                side,
            }
        }
        Some(marked) => Stored {
            born,
            dead: props::dead(&file),
            marked,
            side: None,
        },
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
fn response(ctx: &mut Ctx, ms: &mut Multistatus<'_>, href: &[u8], r: &Res<'_>, asked: &Asked) {
    let dir = r.meta.kind == Kind::Dir;
    ms.open(href, dir);
    let out = ms.out();
    let propstat = out.len();
    out.extend_from_slice(b"<D:propstat><D:prop>");
    let found = out.len();
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
                let p = match &ctx.wanted[i] {
                    Want::Live(p) => *p,
                    Want::Other(n) => {
                        match r.dead.iter().find(|(d, _)| d == n) {
                            Some((n, value)) => element(out, n, Some(value)),
                            None => missing += 1,
                        }
                        continue;
                    }
                };
                match p.of(dir, r.born) {
                    true => live(ctx, out, p, r),
                    false => missing += 1,
                }
            }
        }
    }
    if out.len() == found && missing > 0 {
        // Nothing found: no empty 200 propstat, only the 404 one
        // (RFC 4918 §9.1: each property in the propstat of its status).
        out.truncate(propstat);
    } else {
        out.extend_from_slice(b"</D:prop><D:status>");
        status_line(out, Status::OK);
        out.extend_from_slice(b"</D:status></D:propstat>");
    }
    if missing > 0 {
        out.extend_from_slice(b"<D:propstat><D:prop>");
        for w in &ctx.wanted {
            match w {
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
fn live(ctx: &mut Ctx, out: &mut Vec<u8>, p: Live, r: &Res<'_>) {
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
            // (A name XML cannot carry as it is, not UTF-8 or with a
            // character no document may hold (U+FFFE, U+FFFF; XML 1.0
            // §2.2), with U+FFFD in their place: the href says it
            // exactly, percent-encoded.)
            match std::str::from_utf8(name) {
                Ok(n) if n.chars().all(super::xml::is_char) => escape(out, name),
                _ => {
                    let shown: String = String::from_utf8_lossy(name)
                        .chars()
                        .map(|c| {
                            if super::xml::is_char(c) {
                                c
                            } else {
                                '\u{FFFD}'
                            }
                        })
                        .collect();
                    escape(out, shown.as_bytes());
                }
            }
            out.extend_from_slice(b"</D:displayname>");
        }
        Live::ContentLength => {
            out.extend_from_slice(b"<D:getcontentlength>");
            push_u64(out, r.meta.size);
            out.extend_from_slice(b"</D:getcontentlength>");
        }
        Live::ContentType => {
            // (The type is the extension's alone: `mime::extension`.)
            let ext = mime::extension(name).unwrap_or_default();
            let (last, typed) = &mut ctx.typed;
            if last.as_deref() != Some(ext) {
                let last = last.get_or_insert_with(Vec::new);
                last.clear();
                last.extend_from_slice(ext);
                typed.clear();
                escape(typed, ctx.mime.lookup(name).as_bytes());
            }
            out.extend_from_slice(b"<D:getcontenttype>");
            out.extend_from_slice(typed);
            out.extend_from_slice(b"</D:getcontenttype>");
        }
        Live::Etag => {
            // (The static handler's ETag, `http::conditional::write_etag`,
            // its quotes escaped.)
            out.extend_from_slice(b"<D:getetag>&quot;");
            push_hex(out, r.meta.mtime);
            let nsec = r.meta.mtime_nsec();
            if nsec != 0 {
                out.push(b'.');
                push_hex(out, u64::from(nsec));
            }
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
