//! LOCK and UNLOCK (RFC 4918 §9.10, §9.11), the `If` header's checks
//! (§10.4) and the lock properties (`lockdiscovery`, `supportedlock`,
//! §15.8, §15.10). The table itself is locks.rs's.
//!
//! A change (PUT, DELETE, MKCOL, PROPPATCH, MOVE, COPY's destination, a
//! LOCK that creates its resource) of a locked resource, or of the
//! membership of a locked collection (§7.5), needs the lock's token in
//! the `If` header: else 423 with `lock-token-submitted` (§12.1.1). The
//! `If` header is evaluated first: when it does not hold, 412.
//!
//! A lock is tied to the user whose LOCK made it (`[[auth]]`, §6.4): a
//! token serves only that user's requests (to change, refresh or
//! UNLOCK: 423, 412, 403 otherwise). A lock made without authentication
//! serves whoever submits its token.

use super::ifheader::{self, State};
use super::locks::{self, Lock, Locks, MAX_LOCKS, MAX_OWNER};
use super::multistatus::escape;
use super::xml;
use super::{bare, destination, parent, split, Dav, CONFLICT, CREATED};
use crate::ascii::IgnoreCase;
use crate::handlers::protected::Way;
use crate::handlers::{Body, Plan, Scratch};
use crate::http::conditional::write_etag;
use crate::http::request::OwnedRequest;
use crate::http::Status;
use crate::sys::fs::Kind;

/// 423 Locked (RFC 4918 §11.3).
pub const LOCKED: Status = Status(423);

/// What a request changes, for the locks it needs the tokens of: the
/// resource at `path` (relative to the root, no trailing slash) and, if
/// `deep`, everything beneath it.
#[derive(Debug, Clone, Copy)]
pub struct Changed<'a> {
    /// The resource.
    pub path: &'a [u8],
    /// With all it holds (DELETE, MOVE, an overwritten destination).
    pub deep: bool,
}

/// `rel` without its trailing slash.
pub fn trim(rel: &[u8]) -> &[u8] {
    rel.strip_suffix(b"/").unwrap_or(rel)
}

/// The collection holding `rel` (`None` for the root): adding or
/// removing a member changes it (§7.5).
pub fn container(rel: &[u8]) -> Option<&[u8]> {
    split(rel).map(|(dir, _)| dir)
}

/// A resource as the `If` header's conditions see it.
struct Res<'a> {
    dav: &'a Dav,
    path: Vec<u8>,
    locks: &'a Locks,
}

impl State for Res<'_> {
    fn locked_by(&self, token: &[u8]) -> bool {
        self.locks
            .covering(&self.path)
            .any(|l| l.token[..] == *token)
    }

    fn tagged(&self, etag: &[u8]) -> bool {
        // A resource brisk serves no client (a dotfile it refuses, one of
        // its own files) has no entity tag here either, whatever the
        // guess: no way to test its size and date.
        let url = [self.dav.rule.path.as_bytes(), &self.path].concat();
        let dotfiles = self.dav.files.site().static_files.dotfiles;
        if dotfiles.refuses(&url) || super::own_way(self.dav, &self.path).0 == Way::File {
            return false;
        }
        let Ok((_, meta)) = self.dav.files.root().stat(&self.path) else {
            return false;
        };
        let mut tag = Vec::new();
        write_etag(meta.mtime_secs(), meta.mtime_nsec(), meta.size, &mut tag);
        tag == etag
    }
}

/// Where the `If` header's resource tag `tag` is, relative to the root
/// (`None`: not beneath this rule, or not on this host).
fn resolve(dav: &Dav, tag: &[u8], host: Option<&[u8]>) -> Option<Vec<u8>> {
    let mut path = Vec::new();
    destination(tag, host, &mut path).ok()?;
    let skip = dav.takes(&path)?;
    Some(trim(&path[skip.min(path.len())..]).to_vec())
}

/// Checks the request's `If` header (§10.4: 400 when malformed, 412 when
/// it does not hold) and, with locks on, that it submits a token of
/// every lock over what it `changes` (423). `rel` is the request's
/// resource.
pub fn guard(
    dav: &Dav,
    req: &OwnedRequest,
    rel: &[u8],
    changes: &[Changed<'_>],
    s: &mut Scratch,
) -> Result<(), Plan> {
    let value = req.header("If");
    if value.is_none() && (!dav.rule.locks || changes.is_empty()) {
        return Ok(());
    }
    let lists = match value.map(ifheader::parse) {
        Some(Some(lists)) => lists,
        Some(None) => return Err(bare(Status::BAD_REQUEST)),
        None => Vec::new(),
    };
    let host = req.host();
    let mut check = |table: &mut Locks| -> Result<(), Plan> {
        let holds = ifheader::holds(&lists, |tag| {
            let path = match tag {
                None => trim(rel).to_vec(),
                Some(t) => resolve(dav, t, host)?,
            };
            Some(Res {
                dav,
                path,
                locks: table,
            })
        });
        if !lists.is_empty() && !holds {
            return Err(bare(Status::PRECONDITION_FAILED));
        }
        let tokens = ifheader::submitted(&lists);
        let user = req.user();
        for c in changes {
            if let Some(l) = unheld(table, c, &tokens, user) {
                return Err(condition(s, LOCKED, "lock-token-submitted", Some(&l.href)));
            }
        }
        Ok(())
    };
    match dav.rule.locks {
        true => locks::with(&dav.rule.root, check),
        false => check(&mut Locks::default()),
    }
}

/// A lock over change `c` that none of `tokens` holds for `user`. (Of
/// several shared locks on one resource, one token is enough; a token
/// serves only its lock's creator, §6.4.)
fn unheld<'a>(
    table: &'a Locks,
    c: &Changed<'a>,
    tokens: &[&[u8]],
    user: Option<&[u8]>,
) -> Option<&'a Lock> {
    let mut over = table.guarding(c.path, c.deep);
    over.find(|l| {
        !table
            .guarding(c.path, c.deep)
            .any(|m| m.root == l.root && tokens.contains(&&m.token[..]) && m.usable_by(user))
    })
}

/// What a PUT's end checks again (see `Put::finish`): whether a lock
/// was taken on its resource while its body came, which the request
/// holds no token of (its `If` header's, for its user).
#[derive(Debug)]
pub struct Recheck {
    root: std::path::PathBuf,
    path: Vec<u8>,
    tokens: Vec<Vec<u8>>,
    user: Option<Vec<u8>>,
}

impl Recheck {
    /// For request `req` of resource `rel` (`None` with locks off).
    pub fn of(dav: &Dav, req: &OwnedRequest, rel: &[u8]) -> Option<Recheck> {
        if !dav.rule.locks {
            return None;
        }
        let lists = req
            .header("If")
            .and_then(ifheader::parse)
            .unwrap_or_default();
        Some(Recheck {
            root: dav.rule.root.clone(),
            path: trim(rel).to_vec(),
            tokens: (ifheader::submitted(&lists).iter())
                .map(|t| t.to_vec())
                .collect(),
            user: req.user().map(<[u8]>::to_vec),
        })
    }

    /// Whether a lock is over the resource now (or, when the PUT makes
    /// it, `new`, over its collection, whose members it changes: §7.5)
    /// that the request holds no token of.
    pub fn locked(&self, new: bool) -> bool {
        let tokens: Vec<&[u8]> = self.tokens.iter().map(Vec::as_slice).collect();
        let user = self.user.as_deref();
        let here = Changed {
            path: &self.path,
            deep: false,
        };
        let collection = container(&self.path)
            .filter(|_| new)
            .map(|path| Changed { path, deep: false });
        locks::with(&self.root, |t| {
            (std::iter::once(here).chain(collection))
                .any(|c| unheld(t, &c, &tokens, user).is_some())
        })
    }
}

/// An error answer with a precondition element (RFC 4918 §16) holding
/// `href` if given: `<D:error><D:NAME><D:href>…` as XML.
pub fn condition(s: &mut Scratch, status: Status, name: &str, href: Option<&[u8]>) -> Plan {
    let out = &mut s.body;
    out.clear();
    out.extend_from_slice(
        b"<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<D:error xmlns:D=\"DAV:\"><D:",
    );
    out.extend_from_slice(name.as_bytes());
    match href {
        Some(href) => {
            out.extend_from_slice(b"><D:href>");
            escape(out, href);
            out.extend_from_slice(b"</D:href></D:");
            out.extend_from_slice(name.as_bytes());
            out.push(b'>');
        }
        None => out.extend_from_slice(b"/>"),
    }
    out.extend_from_slice(b"</D:error>\n");
    xml_answer(s, status)
}

/// An answer of `status` whose body is the XML document in `s.body`.
fn xml_answer(s: &mut Scratch, status: Status) -> Plan {
    s.header("Content-Type", b"application/xml; charset=utf-8");
    Plan {
        status,
        body: Body::Buffer,
        close: false,
    }
}

/// What a LOCK body asks for (§14.11 `lockinfo`).
#[derive(Debug, PartialEq, Eq)]
pub struct Asked {
    /// `exclusive` (else `shared`).
    pub exclusive: bool,
    /// The `owner` element's inside, as XML to give back.
    pub owner: Vec<u8>,
}

/// The `lockinfo` of `body`; `None` when it is not one, asks for a lock
/// of another type than `write`, or has too long an owner (400).
pub fn asked(body: &[u8]) -> Option<Asked> {
    let doc = xml::parse(body).ok()?;
    if !doc.is_dav(0, "lockinfo") {
        return None;
    }
    let (mut exclusive, mut write, mut owner) = (None, false, Vec::new());
    for (i, e) in doc.children(0).filter(|(_, e)| e.ns == "DAV:") {
        let first = doc.children(i).find(|(_, c)| c.ns == "DAV:");
        match (e.name.as_str(), first.map(|(_, c)| c.name.as_str())) {
            ("lockscope", Some("exclusive")) => exclusive = Some(true),
            ("lockscope", Some("shared")) => exclusive = Some(false),
            ("locktype", Some("write")) => write = true,
            // (Given back as it came, as a dead property's value is:
            // §14.17, §4.4; inside `D:owner`, where `D` is `DAV:`.)
            ("owner", _) => owner = doc.fragment_in(body, i, &[("D", "DAV:")]),
            _ => {}
        }
    }
    if owner.len() > MAX_OWNER || !write {
        return None;
    }
    Some(Asked {
        exclusive: exclusive?,
        owner,
    })
}

/// LOCK of `rel` (its href `href`) with body `body` (`None`: a refresh,
/// §9.10.2): 200 with the lock's `lockdiscovery` and (a new lock) its
/// `Lock-Token`; 201 when it created the resource (§9.10.4: an unmapped
/// URL gets an empty file); 423 when another lock is in the way
/// (`no-conflicting-lock`); 412 when a refresh names no lock of it;
/// 503 when the root holds [`MAX_LOCKS`] locks.
pub fn lock(
    dav: &Dav,
    rel: &[u8],
    href: &[u8],
    req: &OwnedRequest,
    body: Option<&[u8]>,
    s: &mut Scratch,
) -> Plan {
    let path = trim(rel);
    let now = locks::now();
    let expires = now + locks::timeout(req.header("Timeout"));
    let Some(body) = body.filter(|b| !b.iter().all(u8::is_ascii_whitespace)) else {
        let lists = req.header("If").and_then(ifheader::parse);
        let Some(lists) = lists else {
            return bare(Status::BAD_REQUEST);
        };
        let tokens = ifheader::submitted(&lists);
        let refreshed = locks::with(&dav.rule.root, |t| {
            t.refresh(path, &tokens, req.user(), expires).cloned()
        });
        return match refreshed {
            Some(lock) => discovered(s, &lock, now, Status::OK),
            None => bare(Status::PRECONDITION_FAILED),
        };
    };
    let Some(asked) = asked(body) else {
        return bare(Status::BAD_REQUEST);
    };
    let infinite = match req.header("Depth") {
        None => true,
        Some(d) if d.eq_ignore_case(b"infinity") => true,
        Some(b"0") => false,
        Some(_) => return bare(Status::BAD_REQUEST),
    };
    let folded = dav.folds(path);
    let lock = Lock {
        token: locks::new_token(),
        root: Lock::kept(path, folded).into_owned(),
        folded,
        href: href.strip_suffix(b"/").unwrap_or(href).to_vec(),
        exclusive: asked.exclusive,
        infinite,
        owner: asked.owner,
        expires,
        principal: req.user().map(<[u8]>::to_vec),
    };
    let taken = locks::with(&dav.rule.root, |t| {
        if let Some(other) = t.conflict(path, lock.exclusive, lock.infinite) {
            return Err(Taken::Conflict(other.href.clone()));
        }
        if t.len() >= MAX_LOCKS {
            return Err(Taken::Full);
        }
        // (Made while the table is held: no other LOCK comes between.)
        let created = create(dav, path)?;
        t.add(lock.clone(), MAX_LOCKS).map_err(|_| Taken::Full)?;
        Ok(created)
    });
    let status = match taken {
        Ok(true) => CREATED,
        Ok(false) => Status::OK,
        Err(Taken::Conflict(href)) => {
            return condition(s, LOCKED, "no-conflicting-lock", Some(&href));
        }
        Err(Taken::Full) => return bare(Status::SERVICE_UNAVAILABLE),
        Err(Taken::Status(status)) => return bare(status),
    };
    let mut value = Vec::with_capacity(locks::TOKEN_LEN + 2);
    value.push(b'<');
    value.extend_from_slice(&lock.token);
    value.push(b'>');
    s.header("Lock-Token", &value);
    discovered(s, &lock, now, status)
}

/// Why a lock was not taken.
enum Taken {
    /// This lock (its root's href) is in the way.
    Conflict(Vec<u8>),
    /// The table is full.
    Full,
    /// The resource could not be made.
    Status(Status),
}

/// Makes `path` an empty file if nothing has that name (a LOCK of an
/// unmapped URL, §7.3); whether it did.
fn create(dav: &Dav, path: &[u8]) -> Result<bool, Taken> {
    let Some((dir, name)) = split(path) else {
        return Ok(false);
    };
    let dir = parent(dav, dir).map_err(Taken::Status)?;
    match dir.stat(name) {
        Ok(_) => return Ok(false),
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => {}
        Err(_) => return Err(Taken::Status(Status::FORBIDDEN)),
    }
    match dir.create(name) {
        Ok(_) => Ok(true),
        Err(e) if e.raw_os_error() == Some(libc::EEXIST) => Ok(false),
        Err(e) => Err(Taken::Status(super::status_of(&e))),
    }
}

/// The answer to a LOCK: `<D:prop><D:lockdiscovery>` with `lock`.
fn discovered(s: &mut Scratch, lock: &Lock, now: u64, status: Status) -> Plan {
    let out = &mut s.body;
    out.clear();
    out.extend_from_slice(
        b"<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<D:prop xmlns:D=\"DAV:\"><D:lockdiscovery>",
    );
    activelock(out, lock, now);
    out.extend_from_slice(b"</D:lockdiscovery></D:prop>\n");
    xml_answer(s, status)
}

/// One `<D:activelock>` (§14.1), its timeout what is left of it at `now`.
pub fn activelock(out: &mut Vec<u8>, lock: &Lock, now: u64) {
    out.extend_from_slice(b"<D:activelock><D:locktype><D:write/></D:locktype><D:lockscope>");
    out.extend_from_slice(match lock.exclusive {
        true => b"<D:exclusive/>",
        false => b"<D:shared/>",
    });
    out.extend_from_slice(b"</D:lockscope><D:depth>");
    out.extend_from_slice(match lock.infinite {
        true => b"infinity",
        false => b"0",
    });
    out.extend_from_slice(b"</D:depth>");
    if !lock.owner.is_empty() {
        out.extend_from_slice(b"<D:owner>");
        out.extend_from_slice(&lock.owner);
        out.extend_from_slice(b"</D:owner>");
    }
    out.extend_from_slice(b"<D:timeout>Second-");
    let left = lock.expires.saturating_sub(now).max(1);
    out.extend_from_slice(left.to_string().as_bytes());
    out.extend_from_slice(b"</D:timeout><D:locktoken><D:href>");
    out.extend_from_slice(&lock.token);
    out.extend_from_slice(b"</D:href></D:locktoken><D:lockroot><D:href>");
    escape(out, &lock.href);
    out.extend_from_slice(b"</D:href></D:lockroot></D:activelock>");
}

/// `<D:lockdiscovery>` of the resource at `path`: the locks of `held`
/// that apply to it.
pub fn lockdiscovery(out: &mut Vec<u8>, held: &[Lock], path: &[u8], now: u64) {
    let mut any = false;
    for lock in held.iter().filter(|l| l.covers(path)) {
        if !any {
            out.extend_from_slice(b"<D:lockdiscovery>");
            any = true;
        }
        activelock(out, lock, now);
    }
    match any {
        true => out.extend_from_slice(b"</D:lockdiscovery>"),
        false => out.extend_from_slice(b"<D:lockdiscovery/>"),
    }
}

/// `<D:supportedlock>` (§15.10): exclusive and shared write locks.
pub const SUPPORTEDLOCK: &[u8] = b"<D:supportedlock>\
    <D:lockentry><D:lockscope><D:exclusive/></D:lockscope><D:locktype><D:write/></D:locktype></D:lockentry>\
    <D:lockentry><D:lockscope><D:shared/></D:lockscope><D:locktype><D:write/></D:locktype></D:lockentry>\
    </D:supportedlock>";

/// The locks that apply to `path` or lie beneath it (what a PROPFIND of
/// it and its members shows), as they are now; none without locks.
pub fn held(dav: &Dav, path: &[u8]) -> Vec<Lock> {
    if !dav.rule.locks {
        return Vec::new();
    }
    locks::with(&dav.rule.root, |t| {
        t.guarding(path, true).cloned().collect()
    })
}

/// UNLOCK of `rel` (§9.11): 204; 400 without a `Lock-Token`; 409 with
/// `lock-token-matches-request-uri` when no lock of that token applies
/// to `rel` (§9.11.1).
pub fn unlock(dav: &Dav, rel: &[u8], req: &OwnedRequest, s: &mut Scratch) -> Plan {
    let token = req
        .header("Lock-Token")
        .map(<[u8]>::trim_ascii)
        .and_then(|t| t.strip_prefix(b"<")?.strip_suffix(b">"));
    let Some(token) = token else {
        return bare(Status::BAD_REQUEST);
    };
    let path = trim(rel);
    match locks::with(&dav.rule.root, |t| t.unlock(path, token, req.user())) {
        Some(true) => bare(Status::NO_CONTENT),
        // (Another principal's lock, §9.11.1.)
        Some(false) => bare(Status::FORBIDDEN),
        None => condition(s, CONFLICT, "lock-token-matches-request-uri", None),
    }
}

/// The locks on what a successful DELETE or MOVE removed from `rel`.
pub fn forget(dav: &Dav, rel: &[u8]) {
    if dav.rule.locks {
        locks::with(&dav.rule.root, |t| t.forget(trim(rel)));
    }
}

/// Whether `rel` names nothing yet (a PUT or LOCK there adds a member to
/// its collection).
pub fn is_new(dav: &Dav, rel: &[u8]) -> bool {
    matches!(dav.files.root().stat(trim(rel)), Err(e) if e.raw_os_error() == Some(libc::ENOENT))
}

/// Whether `rel` is a collection.
pub fn is_collection(dav: &Dav, rel: &[u8]) -> bool {
    matches!(dav.files.root().stat(trim(rel)), Ok((_, m)) if m.kind == Kind::Dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lockinfo_bodies() {
        let body = br#"<?xml version="1.0"?><D:lockinfo xmlns:D="DAV:"><D:lockscope><D:exclusive/></D:lockscope><D:locktype><D:write/></D:locktype><D:owner><D:href>mailto:a@b</D:href> x &amp; y</D:owner></D:lockinfo>"#;
        assert_eq!(
            asked(body),
            Some(Asked {
                exclusive: true,
                owner: b"<D:href>mailto:a@b</D:href> x &amp; y".to_vec()
            })
        );
        let shared = br#"<lockinfo xmlns="DAV:"><lockscope><shared/></lockscope><locktype><write/></locktype><owner><o xmlns="urn:x">me</o></owner></lockinfo>"#;
        assert_eq!(
            asked(shared),
            Some(Asked {
                exclusive: false,
                owner: b"<o xmlns=\"urn:x\">me</o>".to_vec()
            })
        );
        let no_type =
            br#"<D:lockinfo xmlns:D="DAV:"><D:lockscope><D:shared/></D:lockscope></D:lockinfo>"#;
        assert_eq!(asked(no_type), None);
        // Text, attributes and order as sent.
        let mixed = br#"<D:lockinfo xmlns:D="DAV:"><D:lockscope><D:shared/></D:lockscope><D:locktype><D:write/></D:locktype><D:owner>text &amp; <z:who xmlns:z="urn:z" z:attr="1">me</z:who> tail</D:owner></D:lockinfo>"#;
        assert_eq!(
            String::from_utf8(asked(mixed).unwrap().owner).unwrap(),
            r#"text &amp; <z:who xmlns:z="urn:z" z:attr="1">me</z:who> tail"#
        );
        let no_scope =
            br#"<D:lockinfo xmlns:D="DAV:"><D:locktype><D:write/></D:locktype></D:lockinfo>"#;
        assert_eq!(asked(no_scope), None);
        let long = format!(
            r#"<D:lockinfo xmlns:D="DAV:"><D:lockscope><D:shared/></D:lockscope><D:locktype><D:write/></D:locktype><D:owner>{}</D:owner></D:lockinfo>"#,
            "x".repeat(MAX_OWNER + 1)
        );
        assert_eq!(asked(long.as_bytes()), None);
        assert_eq!(asked(b"<D:propfind xmlns:D=\"DAV:\"/>"), None);
    }

    #[test]
    fn activelock_is_byte_exact() {
        let lock = Lock {
            token: *b"urn:uuid:12121212-1212-4212-9212-121212121212",
            root: b"a b".to_vec(),
            folded: false,
            href: b"/dav/a%20b".to_vec(),
            exclusive: false,
            infinite: true,
            owner: b"me".to_vec(),
            expires: 70,
            principal: None,
        };
        let mut out = Vec::new();
        activelock(&mut out, &lock, 10);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "<D:activelock><D:locktype><D:write/></D:locktype><D:lockscope><D:shared/></D:lockscope>\
             <D:depth>infinity</D:depth><D:owner>me</D:owner><D:timeout>Second-60</D:timeout>\
             <D:locktoken><D:href>urn:uuid:12121212-1212-4212-9212-121212121212</D:href></D:locktoken>\
             <D:lockroot><D:href>/dav/a%20b</D:href></D:lockroot></D:activelock>"
        );
        let mut out = Vec::new();
        lockdiscovery(&mut out, std::slice::from_ref(&lock), b"elsewhere", 10);
        assert_eq!(out, b"<D:lockdiscovery/>");
        assert_eq!(container(b"a/b/"), Some(&b"a"[..]));
        assert_eq!(container(b"a"), Some(&b""[..]));
        assert_eq!(container(b""), None);
    }
}
