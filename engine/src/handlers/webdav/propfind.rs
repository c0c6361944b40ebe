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
use crate::http::conditional::write_etag;
use crate::http::date::{civil_time, format_http_date, HTTP_DATE_LEN};
use crate::http::Status;
use crate::sys::fs::{Kind, Meta};

/// The largest PROPFIND body read (it is held in memory: never more
/// than the spool keeps there).
pub const MAX_BODY: u64 = crate::handlers::spool::MEMORY as u64;

/// The live properties brisk answers, in the `DAV:` namespace, in the
/// order `allprop` and `propname` list them (`creationdate` where the
/// filesystem keeps a birth time).
const LIVE: &[&str] = LIVE_LOCKS.split_at(7).0;

/// [`LIVE`], and the lock properties (§15.8, §15.10) of a rule with locks.
const LIVE_LOCKS: &[&str] = &[
    "creationdate",
    "resourcetype",
    "displayname",
    "getcontentlength",
    "getcontenttype",
    "getetag",
    "getlastmodified",
    "lockdiscovery",
    "supportedlock",
];

/// A PROPFIND's rule and the locks it shows.
struct Ctx<'a> {
    dav: &'a Dav,
    /// The live properties.
    live: &'static [&'static str],
    /// The locks over the resource and beneath it, and the lock clock.
    held: Vec<Lock>,
    now: u64,
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
    let listed = match (members, meta.kind) {
        (true, Kind::Dir) => match root.list_dir(rel) {
            Ok(list) => list,
            Err(_) => return bare(Status::FORBIDDEN),
        },
        _ => Vec::new(),
    };
    let dotfiles = dav.files.site().static_files.dotfiles == Dotfiles::Allow;
    let ctx = Ctx {
        dav,
        live: if dav.rule.locks { LIVE_LOCKS } else { LIVE },
        held: lock::held(dav, rel),
        now: locks::now(),
    };
    let mut body = std::mem::take(&mut s.body);
    let mut ms = Multistatus::new(&mut body);
    let mut at = href.strip_suffix(b"/").unwrap_or(href).to_vec();
    let mut path = rel.to_vec();
    response(&ctx, &mut ms, &at, &path, &meta, asked, &stored(dav, &path));
    for (child, m) in &listed {
        if m.kind == Kind::Special || !dotfiles && child.first() == Some(&b'.') {
            continue;
        }
        let (len, plen) = (at.len(), path.len());
        at.push(b'/');
        push_segment(&mut at, child);
        if !path.is_empty() {
            path.push(b'/');
        }
        path.extend_from_slice(child);
        response(&ctx, &mut ms, &at, &path, m, asked, &stored(dav, &path));
        at.truncate(len);
        path.truncate(plen);
    }
    ms.end();
    s.body = body;
    multistatus::plan(s)
}

/// What is stored of a resource beyond `Meta`: its birth time (seconds
/// since the epoch), its dead properties.
#[derive(Default)]
struct Stored {
    born: Option<u64>,
    dead: Vec<(Name, Vec<u8>)>,
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
    }
}

/// `1997-12-01T17:42:21Z` (RFC 4918 §15.1: RFC 3339's date-time).
fn rfc3339(out: &mut Vec<u8>, secs: u64) {
    let t = civil_time(secs);
    let text = format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z",
        t.year, t.month, t.day, t.hour, t.minute, t.second
    );
    out.extend_from_slice(text.as_bytes());
}

/// One resource's `<D:response>` (at `path`, relative to the root).
fn response(
    ctx: &Ctx<'_>,
    ms: &mut Multistatus<'_>,
    href: &[u8],
    path: &[u8],
    meta: &Meta,
    asked: &Asked,
    stored: &Stored,
) {
    let dead = &stored.dead;
    let dir = meta.kind == Kind::Dir;
    ms.open(href, dir);
    let out = ms.out();
    out.extend_from_slice(b"<D:propstat><D:prop>");
    let mut missing: Vec<&(String, String)> = Vec::new();
    match asked {
        Asked::All => {
            for prop in ctx.live {
                live(ctx, out, prop, path, meta, stored.born);
            }
            for (n, value) in dead {
                element(out, n, Some(value));
            }
        }
        Asked::Names => {
            for prop in ctx.live.iter().filter(|p| has(p, dir, stored.born)) {
                out.extend_from_slice(format!("<D:{prop}/>").as_bytes());
            }
            for (n, _) in dead {
                element(out, n, None);
            }
        }
        Asked::Some(list) => {
            for p in list {
                let known = p.0 == "DAV:"
                    && ctx.live.contains(&p.1.as_str())
                    && has(&p.1, dir, stored.born);
                let kept = dead.iter().find(|(n, _)| n == p);
                match (known, kept) {
                    (true, _) => live(ctx, out, &p.1, path, meta, stored.born),
                    (false, Some((n, value))) => element(out, n, Some(value)),
                    (false, None) => missing.push(p),
                }
            }
        }
    }
    out.extend_from_slice(b"</D:prop><D:status>");
    status_line(out, Status::OK);
    out.extend_from_slice(b"</D:status></D:propstat>");
    if !missing.is_empty() {
        out.extend_from_slice(b"<D:propstat><D:prop>");
        for n in missing {
            element(out, n, None);
        }
        out.extend_from_slice(b"</D:prop><D:status>");
        status_line(out, Status::NOT_FOUND);
        out.extend_from_slice(b"</D:status></D:propstat>");
    }
    ms.close();
}

/// Whether a resource of that kind has live property `prop` (a
/// collection has no content length, type or ETag here; no birth time,
/// no creationdate).
fn has(prop: &str, dir: bool, born: Option<u64>) -> bool {
    match prop {
        "creationdate" => born.is_some(),
        "getcontentlength" | "getcontenttype" | "getetag" => !dir,
        _ => true,
    }
}

/// Writes live property `prop` of the resource at `path`.
fn live(ctx: &Ctx<'_>, out: &mut Vec<u8>, prop: &str, path: &[u8], meta: &Meta, born: Option<u64>) {
    let name = path.rsplit(|&b| b == b'/').next().unwrap_or(b"");
    let dir = meta.kind == Kind::Dir;
    if !has(prop, dir, born) {
        return;
    }
    let open = |out: &mut Vec<u8>| out.extend_from_slice(format!("<D:{prop}>").as_bytes());
    let close = |out: &mut Vec<u8>| out.extend_from_slice(format!("</D:{prop}>").as_bytes());
    match prop {
        "resourcetype" if dir => {
            out.extend_from_slice(b"<D:resourcetype><D:collection/></D:resourcetype>")
        }
        "resourcetype" => out.extend_from_slice(b"<D:resourcetype/>"),
        "displayname" => {
            open(out);
            escape(out, String::from_utf8_lossy(name).as_bytes());
            close(out);
        }
        "getcontentlength" => {
            open(out);
            out.extend_from_slice(meta.size.to_string().as_bytes());
            close(out);
        }
        "getcontenttype" => {
            open(out);
            escape(out, ctx.dav.files.content_type(name).as_bytes());
            close(out);
        }
        "getetag" => {
            open(out);
            let mut tag = Vec::new();
            write_etag(meta.mtime, meta.size, &mut tag);
            escape(out, &tag);
            close(out);
        }
        "creationdate" => {
            open(out);
            rfc3339(out, born.unwrap_or_default());
            close(out);
        }
        "lockdiscovery" => lock::lockdiscovery(out, &ctx.held, path, ctx.now),
        "supportedlock" => out.extend_from_slice(SUPPORTEDLOCK),
        "getlastmodified" => {
            open(out);
            let mut date = [0u8; HTTP_DATE_LEN];
            format_http_date(meta.mtime, &mut date);
            out.extend_from_slice(&date);
            close(out);
        }
        _ => {}
    }
}
