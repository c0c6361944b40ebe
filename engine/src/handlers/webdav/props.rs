//! Dead properties (RFC 4918 §4.2, §9.2): stored beside each resource as
//! its extended attributes `user.dav.{NAMESPACE}NAME`, their values as
//! text; or, on a filesystem without user extended attributes (or with
//! `properties = "sidecar"`), in its collection's sidecar store
//! (sidecar.rs), under the same `{NAMESPACE}NAME`. PROPPATCH sets and removes them in document order, all or
//! nothing (§9.2): a failed instruction undoes those before it, which are
//! reported 424 Failed Dependency.

use std::fs::File;

use super::multistatus::{self, escape, status_line, Multistatus};
use super::sidecar::{self, Store};
use super::xml;
use super::{bare, split, Dav};
use crate::config::PropStore;
use crate::handlers::refusal::Refusal;
use crate::handlers::{Plan, Scratch};
use crate::http::Status;
use crate::sys::dir::{xattr_get, xattr_list, xattr_remove, xattr_set};

const PREFIX: &[u8] = b"user.dav.";

/// The extended attribute that marks a collection some of whose members
/// have (or had) dead properties: a PROPFIND `Depth: 1` looks for the
/// members' only where it is set (one system call a member less).
/// PROPPATCH sets it on the resource's collection, MOVE on the
/// destination's when the resource has dead properties.
const MARK: &[u8] = b"user.brisk.dead-members";

/// Whether the collection open as `dir` is marked (see [`MARK`]).
pub fn marked(dir: &File) -> bool {
    matches!(xattr_get(dir, MARK), Ok(Some(_)))
}

/// Marks the collection holding `rel` (see [`MARK`]) if the resource at
/// `rel` has dead properties, or always if `set`.
pub fn mark_collection(dav: &Dav, rel: &[u8], set: bool) {
    if dav.rule.properties == PropStore::Sidecar {
        return;
    }
    let root = dav.files.root();
    let Some(parent) = super::container(rel) else {
        return;
    };
    if !set && root.open_any(rel).map_or(true, |f| dead(&f).is_empty()) {
        return;
    }
    if let Ok(dir) = root.open_any(parent) {
        if !marked(&dir) {
            let _ = xattr_set(&dir, MARK, b"1");
        }
    }
}
/// 424 Failed Dependency (RFC 4918 §11.4).
const FAILED_DEPENDENCY: Status = Status(424);
/// What a stored value that is XML (elements inside, RFC 4918 §4.4)
/// starts with; a text value never does (XML has no NUL character).
const XML_VALUE: &str = "\0";

/// What a stored value whose property had an `xml:lang` (its own or
/// one in force where it was) starts with: this, the language, this
/// again, then the value as it would be without (RFC 4918 §4.3: the
/// language MUST be kept). No value starts with it otherwise (XML has
/// no U+0001), nor holds it a language.
const LANG_VALUE: char = '\u{1}';

/// 409: a name too long for an extended attribute.
const CONFLICT: Status = Status(409);

/// A dead property: namespace, local name.
pub type Name = (String, String);

/// A resource's dead properties, with their values.
pub type Dead = Vec<(Name, Vec<u8>)>;

/// One instruction of a PROPPATCH.
#[derive(Debug)]
pub enum Op {
    /// Set a property to a value: text, or (`true`) XML, which starts
    /// with [`XML_VALUE`].
    Set(Name, String, bool),
    /// Remove a property.
    Remove(Name),
}

impl Op {
    fn name(&self) -> &Name {
        match self {
            Op::Set(n, _, _) | Op::Remove(n) => n,
        }
    }
}

/// The extended attribute's name for property `n`.
fn key((ns, name): &Name) -> Vec<u8> {
    let mut k = PREFIX.to_vec();
    k.push(b'{');
    k.extend_from_slice(ns.as_bytes());
    k.push(b'}');
    k.extend_from_slice(name.as_bytes());
    k
}

/// The property an extended attribute's name stands for.
fn name_of(key: &[u8]) -> Option<Name> {
    parse_key(key.strip_prefix(PREFIX)?)
}

/// The property a `{NAMESPACE}NAME` key stands for.
fn parse_key(key: &[u8]) -> Option<Name> {
    let rest = key.strip_prefix(b"{")?;
    let close = rest.iter().rposition(|&b| b == b'}')?;
    let ns = std::str::from_utf8(&rest[..close]).ok()?;
    let name = std::str::from_utf8(&rest[close + 1..]).ok()?;
    Some((ns.to_string(), name.to_string()))
}

/// Every dead property of `file`, with its value.
pub fn dead(file: &File) -> Dead {
    let keys = xattr_list(file).unwrap_or_default();
    keys.iter()
        .filter_map(|k| Some((name_of(k)?, xattr_get(file, k).ok()??)))
        .collect()
}

/// Whether `dav` keeps the dead properties of `file` (any resource on
/// its filesystem) in the sidecar store: with `properties = "auto"`,
/// where the filesystem has no user extended attributes.
pub fn in_sidecar(dav: &Dav, file: &File) -> bool {
    dav.rule.properties != PropStore::Xattr && xattrs_marked(dav, file).is_none()
}

/// Whether `dav` keeps the dead properties of what is in collection
/// `dir` in the sidecar store (see [`in_sidecar`]).
fn sidecar_in(dav: &Dav, dir: &[u8]) -> bool {
    match dav.rule.properties {
        PropStore::Auto => dav
            .files
            .root()
            .open_any(dir)
            .is_ok_and(|f| in_sidecar(dav, &f)),
        other => other == PropStore::Sidecar,
    }
}

/// The collection whose sidecar store holds `rel`'s properties, and
/// `rel`'s member name there: a collection's own are in its own store
/// (member name empty), a file's in its collection's.
fn spot(rel: &[u8], collection: bool) -> (&[u8], &[u8]) {
    match split(rel) {
        Some(found) if !collection => found,
        _ => (rel, b""),
    }
}

/// The sidecar store of collection `dir` (empty if there is none or it
/// cannot be read).
fn store_of(dav: &Dav, dir: &[u8]) -> Store {
    let dir = dav.files.root().dir(dir);
    dir.and_then(|d| Store::load(&d)).unwrap_or_default()
}

/// The dead properties of `member` in `store`.
pub fn from_store(store: &Store, member: &[u8]) -> Dead {
    store
        .of(member)
        .filter_map(|(k, v)| Some((parse_key(k)?, v.to_vec())))
        .collect()
}

/// Where `dav` keeps the dead properties of `file`: in its extended
/// attributes (`Some`: whether it is marked, see [`MARK`]), or in the
/// sidecar store (`None`). With `properties = "auto"` the one call tells
/// both.
pub fn xattrs_marked(dav: &Dav, file: &File) -> Option<bool> {
    match dav.rule.properties {
        PropStore::Sidecar => None,
        PropStore::Xattr => Some(marked(file)),
        PropStore::Auto => match xattr_get(file, MARK) {
            Err(e) if e.raw_os_error() == Some(libc::EOPNOTSUPP) => None,
            got => Some(matches!(got, Ok(Some(_)))),
        },
    }
}

/// The dead properties of `rel`, open as `file`, from the sidecar store;
/// with them, a collection's store (its members').
pub fn in_store(dav: &Dav, rel: &[u8], file: &File) -> (Dead, Option<Store>) {
    let collection = file.metadata().is_ok_and(|m| m.is_dir());
    let (dir, member) = spot(rel, collection);
    let store = store_of(dav, dir);
    let dead = from_store(&store, member);
    (dead, collection.then_some(store))
}

/// After a MOVE (`from` to `to`), a COPY (`copied`) or a DELETE (`to`
/// `None`) brisk made: the sidecar store's entries follow, where `dav`
/// keeps properties there. A file's are taken along (COPY: copied) to
/// the destination's collection's store, replacing what the name had; a
/// collection's are in its own store, which went along (COPY of one:
/// its own are copied into the new one's, since `Depth: 0` copies no
/// member). What cannot be written is left (the change is made).
pub fn follow(dav: &Dav, from: &[u8], to: Option<&[u8]>, copied: bool) {
    let Some((from_dir, from_name)) = split(from) else {
        return;
    };
    if !sidecar_in(dav, from_dir) {
        return;
    }
    let root = dav.files.root();
    let sync = dav.rule.fsync;
    let collection = to.is_some_and(|to| {
        root.stat(to)
            .is_ok_and(|(_, m)| m.kind == crate::sys::fs::Kind::Dir)
    });
    let mut props = Vec::new();
    if let Ok(d) = root.dir(from_dir) {
        props = match copied {
            true => Store::load(&d)
                .map(|s| owned(&s, from_name))
                .unwrap_or_default(),
            false => sidecar::update(&d, sync, |s| s.take(from_name)).unwrap_or_default(),
        };
    }
    let Some((to_dir, to_name)) = to.and_then(split) else {
        return;
    };
    if collection {
        props.clear();
        if copied {
            let own = owned(&store_of(dav, from), b"");
            if let Ok(d) = root.dir(to.unwrap_or_default()) {
                let _ = sidecar::update(&d, sync, |s| s.replace(b"", &own));
            }
        }
    }
    if let Ok(d) = root.dir(to_dir) {
        let _ = sidecar::update(&d, sync, |s| s.replace(to_name, &props));
    }
}

/// `member`'s records in `store`, owned.
fn owned(store: &Store, member: &[u8]) -> Vec<(Vec<u8>, Vec<u8>)> {
    store
        .of(member)
        .map(|(k, v)| (k.to_vec(), v.to_vec()))
        .collect()
}

/// Gives `to` the dead properties of `from` (a PUT's new file those of
/// the one it replaces: RFC 4918 keeps a resource's dead properties
/// across a PUT, and Windows sets its `Win32*` times before it writes
/// the body; a COPY's copy those of its source, a collection's mark
/// too).
pub fn carry(from: &File, to: &File) -> std::io::Result<()> {
    let kept = |k: &&Vec<u8>| k.starts_with(PREFIX) || k.as_slice() == MARK;
    for key in xattr_list(from)?.iter().filter(kept) {
        if let Some(value) = xattr_get(from, key)? {
            xattr_set(to, key, &value)?;
        }
    }
    Ok(())
}

/// Writes property `n` as an element: empty, or holding `value`.
pub fn element(out: &mut Vec<u8>, (ns, name): &Name, value: Option<&[u8]>) {
    // (No namespace: a prefix may not be bound to none, Namespaces in
    // XML §3, so the default namespace is undeclared instead.)
    let close: &[u8] = match ns.as_str() {
        "DAV:" => b"</D:",
        "" => b"</",
        _ => b"</R:",
    };
    if ns == "DAV:" {
        out.extend_from_slice(b"<D:");
        out.extend_from_slice(name.as_bytes());
    } else if ns.is_empty() {
        out.push(b'<');
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(b" xmlns=\"\"");
    } else {
        out.extend_from_slice(b"<R:");
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(b" xmlns:R=\"");
        escape(out, ns.as_bytes());
        out.push(b'"');
    }
    let Some(mut value) = value else {
        out.extend_from_slice(b"/>");
        return;
    };
    let mark = LANG_VALUE as u8;
    if let Some((lang, rest)) = value.strip_prefix(&[mark]).and_then(|v| {
        v.iter()
            .position(|&b| b == mark)
            .map(|i| (&v[..i], &v[i + 1..]))
    }) {
        out.extend_from_slice(b" xml:lang=\"");
        escape(out, lang);
        out.push(b'"');
        value = rest;
    }
    out.push(b'>');
    match value.strip_prefix(XML_VALUE.as_bytes()) {
        Some(xml) => out.extend_from_slice(xml),
        None => escape(out, value),
    }
    out.extend_from_slice(close);
    out.extend_from_slice(name.as_bytes());
    out.push(b'>');
}

/// The instructions of a `propertyupdate` body, in document order;
/// `None` if it is not one (400).
pub fn ops(body: &[u8]) -> Option<Vec<Op>> {
    let doc = xml::parse(body).ok()?;
    if !doc.is_dav(0, "propertyupdate") {
        return None;
    }
    let mut out = Vec::new();
    for (i, e) in doc.children(0) {
        let set = match (e.ns.as_str(), e.name.as_str()) {
            ("DAV:", "set") => true,
            ("DAV:", "remove") => false,
            _ => continue,
        };
        for (p, _) in doc.children(i).filter(|(p, _)| doc.is_dav(*p, "prop")) {
            for (j, prop) in doc.children(p) {
                let name = (prop.ns.clone(), prop.name.clone());
                let mut value = String::new();
                if let Some(lang) = doc.lang(j).filter(|_| set) {
                    value.push(LANG_VALUE);
                    value.push_str(lang);
                    value.push(LANG_VALUE);
                }
                out.push(match set {
                    true if doc.children(j).next().is_some() => {
                        let xml = doc.fragment(body, j);
                        value.push_str(XML_VALUE);
                        value.push_str(std::str::from_utf8(&xml).ok()?);
                        Op::Set(name, value, true)
                    }
                    true => {
                        value.push_str(&prop.text);
                        Op::Set(name, value, false)
                    }
                    false => Op::Remove(name),
                });
            }
        }
    }
    (!out.is_empty()).then_some(out)
}

/// PROPPATCH of `rel` (href `href`) with `ops`.
pub fn proppatch(dav: &Dav, rel: &[u8], href: &[u8], ops: &[Op], s: &mut Scratch) -> Plan {
    // (Not through a symlink: see `Root::dir`.)
    let file = match dav
        .files
        .root()
        .open_to_change(rel.strip_suffix(b"/").unwrap_or(rel))
    {
        Ok(f) => f,
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => return bare(Status::NOT_FOUND),
        Err(_) => return bare(Status::FORBIDDEN),
    };
    let mut statuses = vec![Status::OK; ops.len()];
    // (What no store takes: the DAV: names, those of the live
    // properties and those this server does not keep, are protected,
    // §16 cannot-modify-protected-property; a value with elements, or a
    // name too long for an extended attribute, is refused.)
    let refused = |op: &Op| match op {
        _ if op.name().0 == "DAV:" => Some(Status::FORBIDDEN),
        _ if key(op.name()).len() > 255 => Some(CONFLICT),
        _ => None,
    };
    let rel = rel.strip_suffix(b"/").unwrap_or(rel);
    let collection = file.metadata().is_ok_and(|m| m.is_dir());
    let failed = match in_sidecar(dav, &file) {
        true => ops
            .iter()
            .enumerate()
            .find_map(|(i, op)| Some((i, refused(op)?)))
            .or_else(|| {
                sidecar_patch(dav, rel, collection, ops)
                    .err()
                    .map(|e| (0, e))
            }),
        false => xattr_patch(&file, ops, refused).map(|(i, status, errno)| {
            // (No room, or none at all: the operator is told why, once
            // per PROPPATCH, with the way out.)
            if let Some(n) = errno.filter(|_| status == Status::INSUFFICIENT_STORAGE) {
                s.refuse_file(Refusal::Properties(n), &super::in_tree(dav, rel));
            }
            (i, status)
        }),
    };
    if let Some((i, status)) = failed {
        // (The others are undone, or were not tried: 424.)
        statuses.fill(FAILED_DEPENDENCY);
        statuses[i] = status;
    }
    if statuses.iter().all(|st| *st == Status::OK) && ops.iter().any(|op| matches!(op, Op::Set(..)))
    {
        mark_collection(dav, rel, true);
    }
    let mut body = std::mem::take(&mut s.body);
    let mut ms = Multistatus::new(&mut body);
    ms.open(href, collection);
    let mut kinds: Vec<Status> = statuses.clone();
    kinds.dedup();
    kinds.sort_by_key(|s| s.0);
    kinds.dedup();
    for status in kinds {
        let out = ms.out();
        out.extend_from_slice(b"<D:propstat><D:prop>");
        for (op, _) in ops.iter().zip(&statuses).filter(|(_, st)| **st == status) {
            element(out, op.name(), None);
        }
        out.extend_from_slice(b"</D:prop><D:status>");
        status_line(out, status);
        out.extend_from_slice(b"</D:status></D:propstat>");
    }
    ms.close();
    ms.end();
    s.body = body;
    multistatus::plan(s)
}

/// The status a store's failure answers for a property.
fn failure(e: &std::io::Error) -> Status {
    match e.raw_os_error() {
        Some(libc::ENOSPC | libc::E2BIG | libc::EOPNOTSUPP | libc::EDQUOT) => {
            Status::INSUFFICIENT_STORAGE
        }
        _ if e.kind() == std::io::ErrorKind::InvalidData => Status::INTERNAL_SERVER_ERROR,
        _ => Status::FORBIDDEN,
    }
}

/// Applies `ops` to `file`'s extended attributes in order; at the first
/// that fails (`refused`, or by the filesystem) those before it are
/// undone: that one's index and status then, and the filesystem's errno.
fn xattr_patch(
    file: &File,
    ops: &[Op],
    refused: impl Fn(&Op) -> Option<Status>,
) -> Option<(usize, Status, Option<i32>)> {
    // (Each applied instruction's old value, to undo it.)
    let mut undo: Vec<(Vec<u8>, Option<Vec<u8>>)> = Vec::new();
    for (i, op) in ops.iter().enumerate() {
        let k = key(op.name());
        let mut errno = None;
        let failed = refused(op).or_else(|| {
            let old = xattr_get(file, &k);
            let done = match op {
                Op::Set(_, value, _) => xattr_set(file, &k, value.as_bytes()),
                Op::Remove(_) => xattr_remove(file, &k),
            };
            match (old, done) {
                (Ok(old), Ok(())) => {
                    undo.push((k, old));
                    None
                }
                (_, Err(e)) => {
                    errno = e.raw_os_error();
                    Some(failure(&e))
                }
                (Err(_), Ok(())) => Some(Status::FORBIDDEN),
            }
        });
        if let Some(status) = failed {
            for (k, old) in undo.drain(..).rev() {
                let _ = match old {
                    Some(v) => xattr_set(file, &k, &v),
                    None => xattr_remove(file, &k),
                };
            }
            return Some((i, status, errno));
        }
    }
    None
}

/// Applies `ops` to `rel`'s entries in its sidecar store, all in one
/// write of the store (so all or none).
fn sidecar_patch(dav: &Dav, rel: &[u8], collection: bool, ops: &[Op]) -> Result<(), Status> {
    let (dir, member) = spot(rel, collection);
    let dir = dav.files.root().dir(dir).map_err(|e| failure(&e))?;
    let apply = |store: &mut Store| {
        for op in ops {
            let k = &key(op.name())[PREFIX.len()..];
            match op {
                Op::Set(_, value, _) => store.set(member, k, Some(value.as_bytes())),
                Op::Remove(_) => store.set(member, k, None),
            }
        }
    };
    sidecar::update(&dir, dav.rule.fsync, apply).map_err(|e| failure(&e))
}
