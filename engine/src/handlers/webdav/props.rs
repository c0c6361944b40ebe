//! Dead properties (RFC 4918 §4.2, §9.2): stored beside each resource as
//! its extended attributes `user.dav.{NAMESPACE}NAME`, their values as
//! text. PROPPATCH sets and removes them in document order, all or
//! nothing (§9.2): a failed instruction undoes those before it, which are
//! reported 424 Failed Dependency.

use std::fs::File;

use super::multistatus::{self, escape, status_line, Multistatus};
use super::xml;
use super::{bare, Dav};
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
/// 409: a value brisk cannot keep (one with elements inside).
const CONFLICT: Status = Status(409);
/// 507: the filesystem has no room (or no user xattrs).
const INSUFFICIENT_STORAGE: Status = Status(507);

/// A dead property: namespace, local name.
pub type Name = (String, String);

/// One instruction of a PROPPATCH.
#[derive(Debug)]
pub enum Op {
    /// Set a property to a text value; `complex` if it held elements.
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
    let rest = key.strip_prefix(PREFIX)?.strip_prefix(b"{")?;
    let close = rest.iter().rposition(|&b| b == b'}')?;
    let ns = std::str::from_utf8(&rest[..close]).ok()?;
    let name = std::str::from_utf8(&rest[close + 1..]).ok()?;
    Some((ns.to_string(), name.to_string()))
}

/// Every dead property of `file`, with its value.
pub fn dead(file: &File) -> Vec<(Name, Vec<u8>)> {
    let keys = xattr_list(file).unwrap_or_default();
    keys.iter()
        .filter_map(|k| Some((name_of(k)?, xattr_get(file, k).ok()??)))
        .collect()
}

/// Gives `to` the dead properties of `from` (a PUT's new file those of
/// the one it replaces: RFC 4918 keeps a resource's dead properties
/// across a PUT, and Windows sets its `Win32*` times before it writes
/// the body).
pub fn carry(from: &File, to: &File) -> std::io::Result<()> {
    for key in xattr_list(from)?.iter().filter(|k| k.starts_with(PREFIX)) {
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
    let Some(value) = value else {
        out.extend_from_slice(b"/>");
        return;
    };
    out.push(b'>');
    escape(out, value);
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
                out.push(match set {
                    true => Op::Set(name, prop.text.clone(), doc.children(j).next().is_some()),
                    false => Op::Remove(name),
                });
            }
        }
    }
    (!out.is_empty()).then_some(out)
}

/// PROPPATCH of `rel` (href `href`) with `ops`.
pub fn proppatch(dav: &Dav, rel: &[u8], href: &[u8], ops: &[Op], s: &mut Scratch) -> Plan {
    let file = match dav
        .files
        .root()
        .open_any(rel.strip_suffix(b"/").unwrap_or(rel))
    {
        Ok(f) => f,
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => return bare(Status::NOT_FOUND),
        Err(_) => return bare(Status::FORBIDDEN),
    };
    let mut statuses = vec![Status::OK; ops.len()];
    // (Each applied instruction's old value, to undo it.)
    let mut undo: Vec<(Vec<u8>, Option<Vec<u8>>)> = Vec::new();
    for (i, op) in ops.iter().enumerate() {
        let k = key(op.name());
        let failed = if op.name().0 == "DAV:" {
            // (§16 cannot-modify-protected-property: the DAV: names are
            // the live properties' and those this server does not keep.)
            Some(Status::FORBIDDEN)
        } else if matches!(op, Op::Set(_, _, true)) || k.len() > 255 {
            Some(CONFLICT)
        } else {
            let old = xattr_get(&file, &k);
            let done = match op {
                Op::Set(_, value, _) => xattr_set(&file, &k, value.as_bytes()),
                Op::Remove(_) => xattr_remove(&file, &k),
            };
            match (old, done) {
                (Ok(old), Ok(())) => {
                    undo.push((k, old));
                    None
                }
                (_, Err(e))
                    if matches!(
                        e.raw_os_error(),
                        Some(libc::ENOSPC | libc::E2BIG | libc::EOPNOTSUPP | libc::EDQUOT)
                    ) =>
                {
                    Some(INSUFFICIENT_STORAGE)
                }
                _ => Some(Status::FORBIDDEN),
            }
        };
        if let Some(status) = failed {
            statuses[i] = status;
            for st in statuses.iter_mut().filter(|st| **st == Status::OK) {
                *st = FAILED_DEPENDENCY;
            }
            for (k, old) in undo.drain(..).rev() {
                let _ = match old {
                    Some(v) => xattr_set(&file, &k, &v),
                    None => xattr_remove(&file, &k),
                };
            }
            // (Those after it are not tried: 424 too.)
            for st in statuses.iter_mut().skip(i + 1) {
                *st = FAILED_DEPENDENCY;
            }
            break;
        }
    }
    if statuses.iter().all(|st| *st == Status::OK) && ops.iter().any(|op| matches!(op, Op::Set(..)))
    {
        mark_collection(dav, rel.strip_suffix(b"/").unwrap_or(rel), true);
    }
    let collection = file.metadata().is_ok_and(|m| m.is_dir());
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
