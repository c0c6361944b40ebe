//! A directory's entries as PROPFIND `Depth: 1` lists them, at one or
//! two system calls an entry: `getdents64` in batches, then for each
//! name one `statx` beside it (size, times, birth time included) and,
//! where the kernel has it (Linux 6.13), one `listxattrat` that says
//! whether it has extended attributes (dead properties) at all, so that
//! only those that do are opened.

use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};

use super::fs::{Kind, Meta};

/// `listxattrat(2)` (Linux 6.13; one number on every architecture since
/// the tables were unified, 5.1); `libc` does not name it yet.
const SYS_LISTXATTRAT: libc::c_long = 465;

/// The kernel (or the seccomp filter) has no `listxattrat`.
static NO_LISTXATTRAT: AtomicBool = AtomicBool::new(false);

/// One entry: where its name is in [`Listing::name`]'s buffer, what
/// `statx` says of it (of a symlink itself: [`Entry::link`]).
#[derive(Debug, Clone, Copy)]
pub struct Entry {
    name: (u32, u32),
    /// Its metadata (a symlink's own: `Kind::Special`).
    pub meta: Meta,
    /// Its birth time (seconds since the epoch), where the filesystem
    /// keeps one.
    pub born: Option<u64>,
    /// It is a symlink.
    pub link: bool,
    /// Whether it has extended attributes: `None` when not known (no
    /// `listxattrat`: open it and ask).
    pub xattrs: Option<bool>,
}

/// A directory's entries (`.` and `..` left out), in the order the
/// filesystem gives them.
#[derive(Debug)]
pub struct Listing {
    dir: OwnedFd,
    /// What `fstat` said of the directory before it was read: the
    /// identity and times a cached listing is kept under.
    pub meta: Meta,
    names: Vec<u8>,
    /// The entries.
    pub entries: Vec<Entry>,
}

impl Listing {
    /// Entry `e`'s name.
    pub fn name(&self, e: &Entry) -> &[u8] {
        &self.names[e.name.0 as usize..e.name.1 as usize]
    }

    /// About how many bytes of memory it holds.
    pub fn bytes(&self) -> usize {
        self.names.capacity() + self.entries.capacity() * std::mem::size_of::<Entry>()
    }

    /// Opens entry `e` (not through a symlink; never blocking) to read
    /// its extended attributes.
    pub fn open(&self, e: &Entry) -> io::Result<File> {
        let flags = libc::O_RDONLY | libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_NOFOLLOW;
        let name = &self.names[e.name.0 as usize..e.name.1 as usize + 1];
        let name = std::ffi::CStr::from_bytes_with_nul(name)
            .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
        // SAFETY: an open directory, a NUL-terminated name.
        let fd = super::cvt(unsafe {
            libc::openat(self.dir.as_raw_fd(), name.as_ptr(), flags | libc::O_CLOEXEC)
        })?;
        // SAFETY: `fd` was just opened and is owned by nobody else.
        Ok(File::from(unsafe { OwnedFd::from_raw_fd(fd) }))
    }
}

/// Lists the directory open (for reading) as `dir`; each entry's
/// extended attributes are looked for if `xattrs`. An entry that
/// vanishes meanwhile is left out.
pub fn list(dir: OwnedFd, xattrs: bool) -> io::Result<Listing> {
    let meta = super::fs::fstat(dir.as_raw_fd())?;
    let mut out = Listing {
        dir,
        meta,
        names: Vec::new(),
        entries: Vec::new(),
    };
    let fd = out.dir.as_raw_fd();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        // SAFETY: an open directory, a writable buffer of that length.
        let n = unsafe { libc::syscall(libc::SYS_getdents64, fd, buf.as_mut_ptr(), buf.len()) };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        if n == 0 {
            break;
        }
        let mut at = 0usize;
        while at < n as usize {
            // (struct linux_dirent64: d_ino u64, d_off i64, d_reclen u16,
            // d_type u8, then the NUL-terminated name.)
            let reclen = usize::from(u16::from_ne_bytes([buf[at + 16], buf[at + 17]]));
            let raw = &buf[at + 19..at + reclen];
            at += reclen;
            let len = raw.iter().position(|&b| b == 0).unwrap_or(raw.len());
            let name = &raw[..len];
            if name == b"." || name == b".." || len == raw.len() {
                continue;
            }
            let start = out.names.len();
            out.names.extend_from_slice(&raw[..=len]);
            let cname = raw.as_ptr().cast::<libc::c_char>();
            let Some((meta, born, link)) = statx(fd, cname, 0) else {
                out.names.truncate(start);
                continue;
            };
            let xattrs = match xattrs && !link {
                true => has_xattrs(fd, cname),
                false => Some(false),
            };
            out.entries.push(Entry {
                name: (start as u32, (start + len) as u32),
                meta,
                born,
                link,
                xattrs,
            });
        }
    }
    Ok(out)
}

/// The birth time of `file` (seconds since the epoch), where the
/// filesystem keeps one: `statx` itself, as [`list`] asks it, since the
/// standard library's `created()` has it only on glibc (not on musl).
pub fn born(file: &File) -> Option<u64> {
    statx(file.as_raw_fd(), c"".as_ptr(), libc::AT_EMPTY_PATH).and_then(|(_, born, _)| born)
}

/// What `statx` says of `name` in `dir` (not following a symlink): its
/// metadata, birth time, whether it is a symlink.
fn statx(
    dir: libc::c_int,
    name: *const libc::c_char,
    flags: libc::c_int,
) -> Option<(Meta, Option<u64>, bool)> {
    // SAFETY: plain old data written by the kernel.
    let mut st: libc::statx = unsafe { std::mem::zeroed() };
    let mask = libc::STATX_BASIC_STATS | libc::STATX_BTIME;
    // SAFETY: an open directory, a NUL-terminated name, a valid out-pointer.
    let flags = flags | libc::AT_SYMLINK_NOFOLLOW;
    let r = unsafe { libc::statx(dir, name, flags, mask, &mut st) };
    if r != 0 {
        return None;
    }
    let mode = u32::from(st.stx_mode) & libc::S_IFMT;
    let kind = match mode {
        libc::S_IFREG => Kind::File,
        libc::S_IFDIR => Kind::Dir,
        _ => Kind::Special,
    };
    let ns =
        |t: libc::statx_timestamp| t.tv_sec.saturating_mul(1_000_000_000) + i64::from(t.tv_nsec);
    let meta = Meta {
        kind,
        size: st.stx_size,
        mtime: st.stx_mtime.tv_sec.max(0) as u64,
        dev: libc::makedev(st.stx_dev_major, st.stx_dev_minor),
        ino: st.stx_ino,
        mtime_ns: ns(st.stx_mtime),
        ctime_ns: ns(st.stx_ctime),
    };
    let born = (st.stx_mask & libc::STATX_BTIME != 0).then(|| st.stx_btime.tv_sec.max(0) as u64);
    Some((meta, born, mode == libc::S_IFLNK))
}

/// Whether `name` in `dir` has extended attributes (`None`: unknown).
fn has_xattrs(dir: libc::c_int, name: *const libc::c_char) -> Option<bool> {
    if NO_LISTXATTRAT.load(Ordering::Relaxed) {
        return None;
    }
    // SAFETY: an open directory, a NUL-terminated name; no buffer (size
    // 0: the size the names would take).
    let n = unsafe {
        libc::syscall(
            SYS_LISTXATTRAT,
            dir,
            name,
            libc::AT_SYMLINK_NOFOLLOW as libc::c_uint,
            std::ptr::null_mut::<libc::c_char>(),
            0usize,
        )
    };
    if n >= 0 {
        return Some(n > 0);
    }
    // (ENOSYS from the kernel, EPERM from an older seccomp filter.)
    let e = io::Error::last_os_error().raw_os_error();
    if matches!(e, Some(libc::ENOSYS | libc::EPERM)) {
        NO_LISTXATTRAT.store(true, Ordering::Relaxed);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::dir::xattr_set;
    use crate::sys::fs::Root;
    use std::os::unix::fs::MetadataExt;

    #[test]
    fn entries_are_what_stat_says_with_birth_times_and_xattrs() {
        let d = std::env::temp_dir().join(format!("brisk-listing-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(d.join("sub")).unwrap();
        std::fs::write(d.join("plain"), b"hello").unwrap();
        std::fs::write(d.join("tagged"), b"x").unwrap();
        std::os::unix::fs::symlink("plain", d.join("link")).unwrap();
        let tagged = File::open(d.join("tagged")).unwrap();
        let xattrs = xattr_set(&tagged, b"user.dav.{urn:x}p", b"v").is_ok();
        let root = Root::open(&d, false).unwrap();
        let listing = root.listing(b"", true).unwrap();
        let mut names: Vec<&[u8]> = listing.entries.iter().map(|e| listing.name(e)).collect();
        names.sort();
        assert_eq!(names, [&b"link"[..], b"plain", b"sub", b"tagged"]);
        for e in &listing.entries {
            let name = listing.name(e);
            let path = d.join(std::str::from_utf8(name).unwrap());
            let m = std::fs::symlink_metadata(&path).unwrap();
            assert_eq!(
                (e.meta.size, e.meta.ino, e.meta.dev),
                (m.len(), m.ino(), m.dev())
            );
            assert_eq!(
                (e.meta.mtime_ns, e.link),
                (m.mtime() * 1_000_000_000 + m.mtime_nsec(), m.is_symlink())
            );
            // (Asked of the kernel directly: std's `created()` answers
            // only on glibc, and the suite runs on musl too.)
            let cpath = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
            // SAFETY: plain old data the kernel fills.
            let mut st: libc::statx = unsafe { std::mem::zeroed() };
            let (flags, mask) = (libc::AT_SYMLINK_NOFOLLOW, libc::STATX_BTIME);
            // SAFETY: a NUL-terminated path and a valid out-pointer.
            let r = unsafe { libc::statx(libc::AT_FDCWD, cpath.as_ptr(), flags, mask, &mut st) };
            assert_eq!(r, 0);
            let born = (st.stx_mask & libc::STATX_BTIME != 0).then_some(st.stx_btime.tv_sec as u64);
            assert_eq!(e.born, born);
            let kind = match name {
                b"sub" => Kind::Dir,
                b"link" => Kind::Special,
                _ => Kind::File,
            };
            assert_eq!(e.meta.kind, kind);
            // (Unknown without listxattrat: the caller then opens it. A
            // system may give every file some: SELinux's labels.)
            let has = match e.link {
                true => false,
                false => !crate::sys::dir::xattr_list(&File::open(&path).unwrap())
                    .unwrap()
                    .is_empty(),
            };
            assert!(e.xattrs.is_none() || e.xattrs == Some(has), "{name:?}");
            assert!(name != b"tagged" || !xattrs || has);
            if name == b"tagged" && xattrs {
                let f = listing.open(e).unwrap();
                assert_eq!(
                    crate::sys::dir::xattr_list(&f).unwrap(),
                    [b"user.dav.{urn:x}p".to_vec()]
                );
            }
        }
        // Without xattrs asked for, none are looked for.
        let listing = root.listing(b"", false).unwrap();
        assert!(listing.entries.iter().all(|e| e.xattrs == Some(false)));
        assert!(root.listing(b"plain", false).is_err());
        std::fs::remove_dir_all(&d).unwrap();
    }
}
