//! COPY and MOVE (RFC 4918 §9.8, §9.9): the `Destination` header, which
//! must name the same host and a path beneath the same rule's root;
//! `Depth` and `Overwrite`; a tree copied member by member, a move in one
//! `renameat2` where the filesystem allows.

use crate::ascii::IgnoreCase;
use std::io::{self, Read, Write};

use super::multistatus::{self, Multistatus};
use super::props;
use super::{bare, existing, parent, split, status_of, trim, Dav, CREATED, MAX_DEPTH};
use crate::handlers::protected::Protected;
use crate::handlers::{Plan, Refusal, Scratch};
use crate::http::Status;
use crate::sys::dir::Dir;
use crate::sys::fs::{Kind, Meta};

/// What a COPY or MOVE request asks for.
#[derive(Debug)]
pub struct Transfer<'a> {
    /// MOVE rather than COPY.
    pub moving: bool,
    /// The source, relative to the root.
    pub from: &'a [u8],
    /// Its `Depth`.
    pub depth: Option<&'a [u8]>,
    /// Its `Overwrite`.
    pub overwrite: Option<&'a [u8]>,
}

/// COPY or MOVE of `t.from` to `to` (relative to the same root): 201 when
/// nothing had the name, 204 when it was replaced; 412 with `Overwrite:
/// F` onto an existing resource; 409 when the destination's parent is
/// missing; 403 onto itself, into itself or onto a collection that holds
/// it; 207 for a tree copied in part.
pub fn transfer(dav: &Dav, t: &Transfer<'_>, to: &[u8], to_href: &[u8], s: &mut Scratch) -> Plan {
    // (`"T"` and `"F"` in §10.6's ABNF: either case, RFC 5234 §2.3.)
    let overwrite = match t.overwrite {
        None | Some(b"T" | b"t") => true,
        Some(b"F" | b"f") => false,
        Some(_) => return bare(Status::BAD_REQUEST),
    };
    // (MOVE of a collection is always of all it holds: §9.9.2.)
    let deep = match t.depth {
        None => true,
        Some(d) if d.eq_ignore_case(b"infinity") => true,
        Some(b"0") if !t.moving => false,
        Some(_) => return bare(Status::BAD_REQUEST),
    };
    // (A Destination that ends in `/` names a collection: no place for
    // a file where there is none, which would be made under the name
    // without it, then 404 at the URL the client named; lighttpd's 409.)
    let into_collection = to.ends_with(b"/");
    let (from, to) = (trim(t.from), trim(to));
    if from == to || to.starts_with(from) && to.get(from.len()) == Some(&b'/') || from.is_empty() {
        return bare(Status::FORBIDDEN);
    }
    let (Some((from_dir, from_name)), Some((to_dir, to_name))) = (split(from), split(to)) else {
        return bare(Status::FORBIDDEN);
    };
    let (src, kind) = match existing(dav, from_dir, from_name) {
        Ok(found) => found,
        Err(status) => return bare(status),
    };

    let dest = match parent(dav, to_dir) {
        Ok(d) => d,
        Err(status) => return bare(status),
    };
    let existed = match dest.stat(to_name) {
        // The source itself by another name: what "goes first" below
        // would be the source.
        Ok(m) if same(dav, &m, (&src, from_name), (from, to)) => {
            return onto_itself(
                t.moving,
                (&src, from_name),
                (&dest, to_name),
                dav.rule.fsync,
            )
        }
        Ok(_) if !overwrite => return bare(Status::PRECONDITION_FAILED),
        // A collection that holds the source: "deleted first" would
        // take the source with it (Apache's 403 too).
        Ok(m) if m.kind == Kind::Dir && holds(dav, &m, from, to) => return bare(Status::FORBIDDEN),
        Ok(m) => Some(m.kind),
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => None,
        Err(e) => return bare(super::refused_change(dav, to, &e, s)),
    };
    // (A collection there is replaced by the file: litmus's "COPY
    // overwrites collection".)
    if into_collection && kind != Kind::Dir && existed != Some(Kind::Dir) {
        return bare(super::CONFLICT);
    }
    let done = if existed.is_some() {
        Status::NO_CONTENT
    } else {
        CREATED
    };
    let mut failed = Multistatus::new(&mut s.body);
    let mut at = to_href.strip_suffix(b"/").unwrap_or(to_href).to_vec();
    // What is there goes first (§9.8.4, §9.9.3: as if deleted), unless a
    // file replaces a file, which a rename does in one step.
    let replace_in_place = t.moving && kind != Kind::Dir && existed.is_some_and(|k| k != Kind::Dir);
    if let Some(old) = existed.filter(|_| !replace_in_place) {
        let gone = match old {
            Kind::Dir => super::remove_tree(&dest, to_name, &mut at, &mut failed, 0),
            _ => dest.remove(to_name, false).is_ok(),
        };
        if !gone {
            let first = failed.first.take();
            let any = failed.end();
            // (The log says why the first member that stayed did.)
            if let Some(first) = first {
                super::log_member(dav, (to, to_href), &first, Refusal::Change, s);
            }
            return multistatus::settle(any, s, Status::FORBIDDEN);
        }
    }
    let result = if t.moving {
        match src.rename(from_name, &dest, to_name, false) {
            Err(e) if e.raw_os_error() == Some(libc::EXDEV) => {
                let old = existed.filter(|_| replace_in_place).map(|_| to_name);
                // (The source's href: the request's own path.)
                let mut from_at = multistatus::href(trim(&s.path));
                let how = How {
                    deep: true,
                    sync: dav.rule.fsync,
                    own: dav.files.protected(),
                };
                let ends = (&src, from_name, &dest, to_name);
                move_across(ends, (kind, old, how), (&mut at, &mut from_at), &mut failed)
            }
            r => r,
        }
    } else if kind == Kind::Dir {
        let how = How {
            deep,
            sync: dav.rule.fsync,
            own: dav.files.protected(),
        };
        copy_tree(
            &src,
            from_name,
            (&dest, to_name),
            how,
            &mut at,
            &mut failed,
            0,
        );
        Ok(())
    } else if kind == Kind::File {
        copy_file(&src, from_name, (&dest, to_name, false), dav.rule.fsync)
    } else {
        Err(io::Error::from(io::ErrorKind::PermissionDenied))
    };
    if dav.rule.fsync {
        let _ = dest.sync();
        if t.moving {
            let _ = src.sync();
        }
    }
    let first = failed.first.take();
    let any = failed.end();
    match result {
        Ok(()) => {
            if let Some(first) = first {
                log_first(dav, (from, to, to_href), &first, s);
            }
            multistatus::settle(any, s, done)
        }
        Err(e) => {
            let status = super::refused_change(dav, to, &e, s);
            // (A move across filesystems stopped part-way: the EXDEV
            // that says so is no reason.)
            if let Some(first) = first {
                log_first(dav, (from, to, to_href), &first, s);
            }
            multistatus::settle(any, s, status)
        }
    }
}

/// Records for the error log why the first member of a tree copied or
/// moved in part failed: one not copied, named where it was to go, or,
/// once a move had copied all, one of the source's that could not go.
fn log_first(
    dav: &Dav,
    (from, to, to_href): (&[u8], &[u8], &[u8]),
    first: &(Vec<u8>, i32),
    s: &mut Scratch,
) {
    let base = to_href.strip_suffix(b"/").unwrap_or(to_href);
    let copying = first
        .0
        .strip_prefix(base)
        .is_some_and(|r| r.first().is_none_or(|&b| b == b'/'));
    if copying {
        super::log_member(dav, (to, to_href), first, Refusal::Copy, s);
    } else {
        let href = multistatus::href(trim(&s.path));
        super::log_member(dav, (from, &href), first, Refusal::Change, s);
    }
}

/// Whether `to` (`there`, as `stat` found it) is the source, `from` (its
/// entry `from_name` in `src`), by another name: the same identity (a
/// hard link; a kernel driver's other spelling), or, where a FUSE driver
/// gives each spelling an inode number of its own (exfat-fuse), the same
/// entry by [`same_path`].
fn same(
    dav: &Dav,
    there: &Meta,
    (src, from_name): (&Dir, &[u8]),
    (from, to): (&[u8], &[u8]),
) -> bool {
    src.stat(from_name)
        .is_ok_and(|f| (f.dev, f.ino) == (there.dev, there.ino))
        || same_path(dav, from, to)
}

/// Whether the collection `to` (`there`) is one of the collections above
/// `from`: by what it is, or by [`same_path`], so that `/A/` holds
/// `/a/b` on a filesystem that folds case.
fn holds(dav: &Dav, there: &Meta, from: &[u8], to: &[u8]) -> bool {
    let above = from.iter().enumerate().filter(|&(_, &b)| b == b'/');
    above.map(|(i, _)| &from[..i]).any(|up| {
        same_path(dav, up, to)
            || split(up).is_some_and(|(dir, name)| {
                parent(dav, dir).is_ok_and(|d| {
                    d.stat(name)
                        .is_ok_and(|m| (m.dev, m.ino) == (there.dev, there.ino))
                })
            })
    })
}

/// Whether `a` and `b` (relative to the root) name the same entry: the
/// same path, or paths equal but for case that the filesystem finds as
/// the same spelling (see [`spelling`]).
fn same_path(dav: &Dav, a: &[u8], b: &[u8]) -> bool {
    a == b || folded(a, b) && spelling(dav, a) == spelling(dav, b)
}

fn folded(a: &[u8], b: &[u8]) -> bool {
    String::from_utf8_lossy(a).to_lowercase() == String::from_utf8_lossy(b).to_lowercase()
}

/// `rel` as the filesystem spells what it finds: each name that a
/// directory finds though no entry of it is spelt so (a filesystem that
/// matches names without regard to case: exFAT, vfat) as the entry it
/// matched; the others as they are.
fn spelling(dav: &Dav, rel: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    for name in rel.split(|&b| b == b'/').filter(|n| !n.is_empty()) {
        let found = parent(dav, &out)
            .ok()
            .filter(|d| d.stat(name).is_ok())
            .and_then(|d| d.entries().ok())
            .filter(|entries| !entries.iter().any(|(n, _)| n == name))
            .and_then(|entries| entries.into_iter().find(|(n, _)| folded(n, name)))
            .map_or_else(|| name.to_vec(), |(n, _)| n);
        if !out.is_empty() {
            out.push(b'/');
        }
        out.extend_from_slice(&found);
    }
    out
}

/// Whether an entry of `dir` is spelt `name`, byte for byte.
fn spelt(dir: &Dir, name: &[u8]) -> bool {
    dir.entries()
        .is_ok_and(|e| e.iter().any(|(n, _)| n.as_slice() == name))
}

/// A COPY or MOVE whose destination names the source itself by another
/// name: another spelling on a filesystem that matches names without
/// regard to case (exFAT, vfat: `a.txt` and `A.txt`), or a hard link.
/// COPY: 403 (RFC 4918 §9.8.5, the same resource). MOVE: renamed (a
/// change of case; 201), and where that left both names (hard links,
/// which `rename` leaves alone), the source's removed (204); never is
/// the one file removed.
fn onto_itself(moving: bool, from: (&Dir, &[u8]), to: (&Dir, &[u8]), sync: bool) -> Plan {
    if !moving {
        return bare(Status::FORBIDDEN);
    }
    let ((src, from_name), (dest, to_name)) = (from, to);
    if let Err(e) = src.rename(from_name, dest, to_name, false) {
        return bare(status_of(&e));
    }
    // (Both names, as spelt, still there: two links.)
    let status = if spelt(src, from_name) && spelt(dest, to_name) {
        match src.remove(from_name, false) {
            Ok(()) => Status::NO_CONTENT,
            Err(e) => status_of(&e),
        }
    } else {
        CREATED
    };
    if sync {
        let _ = dest.sync();
        let _ = src.sync();
    }
    bare(status)
}

/// A MOVE that `rename` cannot make (`EXDEV`: the destination is on
/// another filesystem mounted beneath the root) made as RFC 4918 §9.9
/// describes it, a COPY then a DELETE of the source: the source copied
/// whole (its dead properties with it), a file unseen until it replaces
/// `old` (a file there) in one rename, so a copy that fails (a full disk:
/// 507) leaves the old file as it was; the source only then removed. A
/// tree that could not be copied whole is left where it was, and what
/// was copied of it removed (each failure in `failed` at its destination
/// href, `at`); one that could not be removed whole after reports each
/// failure at its own href (`from_at`).
fn move_across(
    (src, from_name, dest, to_name): (&Dir, &[u8], &Dir, &[u8]),
    (kind, old, how): (Kind, Option<&[u8]>, How<'_>),
    (at, from_at): (&mut Vec<u8>, &mut Vec<u8>),
    failed: &mut Multistatus<'_>,
) -> io::Result<()> {
    match kind {
        Kind::File => {
            copy_file(src, from_name, (dest, to_name, old.is_some()), how.sync)?;
            src.remove(from_name, false)
        }
        Kind::Dir => {
            copy_tree(src, from_name, (dest, to_name), how, at, failed, 0);
            if failed.count() > 0 {
                // (Its failures are the 207's; the part copied goes.)
                let mut gone = Vec::new();
                super::remove_tree(dest, to_name, at, &mut Multistatus::new(&mut gone), 0);
                return Err(io::Error::from_raw_os_error(libc::EXDEV));
            }
            if !super::remove_tree(src, from_name, from_at, failed, 0) {
                // (The 207 lists what failed.)
                return Err(io::Error::from_raw_os_error(libc::EXDEV));
            }
            Ok(())
        }
        _ => Err(io::Error::from(io::ErrorKind::PermissionDenied)),
    }
}

/// Copies the regular file `name` of `src` to `to` in `dest` (which has
/// no such name, unless `replace`: then what has it is replaced in one
/// step), with its permission bits (as `cp` keeps them: an executable
/// stays one) and its dead properties kept as extended attributes:
/// written unseen (`Dir::stage`), synced (if `sync`), then named.
fn copy_file(
    src: &Dir,
    name: &[u8],
    (dest, to, replace): (&Dir, &[u8], bool),
    sync: bool,
) -> io::Result<()> {
    use std::os::unix::fs::PermissionsExt as _;
    let mut from = src.open_file(name)?;
    let (mut file, staged) = dest.stage(from.metadata()?.permissions().mode())?;
    let mut write = || {
        copy(&mut from, &mut file)?;
        // (Where the filesystem has none, the sidecar store's entries are
        // copied after: `props::follow`.)
        let _ = props::carry(&from, &file);
        if sync {
            file.sync_all()?;
        }
        dest.place(&file, &staged, to, replace)
    };
    let done = write();
    if done.is_err() {
        dest.unstage(&staged);
    }
    done
}

/// Copies all of `from` into `to`: between two files by the kernel
/// (`copy_file_range(2)`, through the standard library's `io::copy`): no
/// byte passes through brisk, and a filesystem that can share blocks
/// (XFS with reflink, Btrfs) shares them instead of copying; where the call cannot
/// serve (another filesystem beneath the root, FUSE), by reads and
/// writes of 64 KiB (few calls where each is a round trip to a FUSE
/// driver).
pub(super) fn copy(from: &mut impl Read, to: &mut impl Write) -> io::Result<()> {
    let mut to = io::BufWriter::with_capacity(64 * 1024, to);
    io::copy(from, &mut to)?;
    to.flush()
}

/// How a tree is copied.
#[derive(Clone, Copy)]
struct How<'a> {
    /// All it holds, not only the collection.
    deep: bool,
    /// Each file synced, and each directory.
    sync: bool,
    /// brisk's own files: left out, as if missing (`keeps_own`).
    own: &'a Protected,
}

/// Copies the collection `name` of `src` to `to` in `dest`: the
/// collection, and with `how.deep` all it holds; each member that could
/// not be copied goes into `failed` (at its destination href, `at`).
fn copy_tree(
    src: &Dir,
    name: &[u8],
    (dest, to): (&Dir, &[u8]),
    how: How<'_>,
    at: &mut Vec<u8>,
    failed: &mut Multistatus<'_>,
    depth: usize,
) {
    if let Err(e) = dest.mkdir(to) {
        failed.failed(at, true, &e);
        return;
    }
    if let (Ok(from), Ok(into)) = (
        src.sub(name).and_then(|d| d.open()),
        dest.sub(to).and_then(|d| d.open()),
    ) {
        let _ = props::carry(&from, &into);
    }
    if !how.deep {
        return;
    }
    let (from, into) = match (src.sub(name), dest.sub(to)) {
        (Ok(f), Ok(i)) if depth < MAX_DEPTH => (f, i),
        _ => {
            failed.status(at, true, Status::FORBIDDEN);
            return;
        }
    };
    let entries = match from.entries() {
        Ok(e) => e,
        Err(e) => {
            failed.failed(at, true, &e);
            return;
        }
    };
    for (child, meta) in entries {
        let len = at.len();
        at.push(b'/');
        multistatus::push_segment(at, &child);
        match meta.kind {
            Kind::Dir => copy_tree(&from, &child, (&into, &child), how, at, failed, depth + 1),
            // (As missing: no failure reported.)
            Kind::File if how.own.contains(&meta) => {}
            Kind::File => {
                if let Err(e) = copy_file(&from, &child, (&into, &child, false), how.sync) {
                    failed.failed(at, false, &e);
                }
            }
            // (A symlink, a FIFO: not copied, said so.)
            Kind::Special => failed.status(at, false, Status::FORBIDDEN),
        }
        at.truncate(len);
    }
    if how.sync {
        let _ = into.sync();
    }
}
