//! Opening files beneath the document root.
//!
//! Confinement is enforced by the kernel where it can be: `openat2` with
//! `RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS` (Linux ≥ 5.6) refuses any
//! resolution — `..`, an absolute symlink, a symlink leading out — that
//! would leave the root. Where `openat2` is missing (or refused), brisk
//! walks the path itself one name at a time with `O_NOFOLLOW`, reading each
//! symlink it meets and walking its target in its place, never above the
//! root (see [`Root::walk_beneath`]).

use std::ffi::CString;
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use super::cvt;

/// Set once `openat2` has answered ENOSYS: the kernel is older than 5.6.
static NO_OPENAT2: AtomicBool = AtomicBool::new(false);

#[cfg(feature = "cold-lookups")]
/// Set once `openat2` refused `RESOLVE_CACHED`: the kernel is older than
/// 5.12.
static NO_RESOLVE_CACHED: AtomicBool = AtomicBool::new(false);

/// What a path names, from `fstat` on a descriptor that was opened with
/// `O_PATH` (so opening it had no side effect, even for a device).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A regular file.
    File,
    /// A directory.
    Dir,
    /// Device, FIFO, socket: never opened for reading.
    Special,
}

/// The metadata brisk needs of a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Meta {
    /// What the path names.
    pub kind: Kind,
    /// Size in bytes.
    pub size: u64,
    /// Modification time in whole seconds since the epoch.
    pub mtime: u64,
    /// The device it lives on; with `ino`, the file's identity.
    pub dev: u64,
    /// Its inode number.
    pub ino: u64,
    /// Modification time in nanoseconds since the epoch, to notice a
    /// change within the same second (cache revalidation).
    pub mtime_ns: i64,
    /// Status-change time in nanoseconds, likewise: it also moves when
    /// only the metadata changes.
    pub ctime_ns: i64,
}

impl Meta {
    /// The nanoseconds of the modification time past its whole second.
    pub fn mtime_nsec(&self) -> u32 {
        self.mtime_ns.rem_euclid(1_000_000_000) as u32
    }

    /// The modification time in whole seconds since the epoch, negative
    /// before 1970 (where `mtime`, which dates and listings use, says 0):
    /// what the entity tag is made of, so that two versions of a file
    /// dated before 1970 have two tags.
    pub fn mtime_secs(&self) -> i64 {
        match self.mtime {
            0 => self.mtime_ns.div_euclid(1_000_000_000),
            secs => i64::try_from(secs).unwrap_or(i64::MAX),
        }
    }
}

pub(super) fn fstat(fd: RawFd) -> io::Result<Meta> {
    // SAFETY: `st` is plain old data written by the kernel.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: `fd` is open and `st` is a valid out-pointer.
    cvt(unsafe { libc::fstat(fd, &mut st) })?;
    Ok(meta_of(&st))
}

pub(super) fn meta_of(st: &libc::stat) -> Meta {
    let kind = match st.st_mode & libc::S_IFMT {
        libc::S_IFREG => Kind::File,
        libc::S_IFDIR => Kind::Dir,
        _ => Kind::Special,
    };
    Meta {
        kind,
        size: st.st_size.max(0) as u64,
        mtime: st.st_mtime.max(0) as u64,
        dev: st.st_dev,
        ino: st.st_ino,
        mtime_ns: st
            .st_mtime
            .saturating_mul(1_000_000_000)
            .saturating_add(st.st_mtime_nsec),
        ctime_ns: st
            .st_ctime
            .saturating_mul(1_000_000_000)
            .saturating_add(st.st_ctime_nsec),
    }
}

/// A directory that requests are confined to.
#[derive(Debug)]
pub struct Root {
    fd: OwnedFd,
    /// The root's canonical path, to check where a symlink led.
    path: std::path::PathBuf,
    /// Follow symlinks wherever they lead (`symlinks_outside_root = true`).
    follow_outside: bool,
    /// Use the component-walk fallback even if `openat2` exists (tests).
    force_fallback: bool,
    /// On a network or FUSE filesystem ([`Root::remote`]).
    #[cfg(feature = "cold-lookups")]
    remote: bool,
    /// The mount points of such filesystems beneath it, relative to it,
    /// each with a `/` at its end.
    #[cfg(feature = "cold-lookups")]
    remote_beneath: Vec<Box<[u8]>>,
}

impl Root {
    /// Opens the root directory.
    pub fn open(path: &Path, follow_outside: bool) -> io::Result<Root> {
        let c = cstring(path.as_os_str().as_encoded_bytes())?;
        // SAFETY: `c` is a valid NUL-terminated string.
        let fd = cvt(unsafe {
            libc::open(
                c.as_ptr(),
                libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC,
            )
        })?;
        // SAFETY: `fd` was just opened and is owned by nobody else.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        probe_openat2(fd.as_raw_fd());
        let path = canonical(path)?;
        Ok(Root {
            fd,
            #[cfg(feature = "cold-lookups")]
            remote: fs_kind(&path).is_some_and(remote_kind),
            #[cfg(feature = "cold-lookups")]
            remote_beneath: remote_beneath(&path),
            path,
            follow_outside,
            force_fallback: false,
        })
    }

    /// Whether `rel` is on a filesystem whose every lookup may wait for
    /// a server, whatever the kernel's caches hold: NFS, SMB, Ceph, 9p,
    /// AFS, a cluster's, or FUSE (sshfs, rclone, s3fs: the attributes are
    /// asked for again once their time is up, and each open is the
    /// server's). The root's own filesystem is told by `statfs(2)`, those
    /// mounted beneath it by the mount table, both when the root is opened
    /// (a configuration read): one mounted later is seen at the next
    /// reload. (A local disk mounted beneath a remote root is taken for
    /// remote too.)
    #[cfg(feature = "cold-lookups")]
    pub fn remote(&self, rel: &[u8]) -> bool {
        self.remote
            || self
                .remote_beneath
                .iter()
                .any(|point| rel.starts_with(point) || rel == &point[..point.len() - 1])
    }

    /// Takes the root for one on a remote filesystem (tests).
    #[cfg(feature = "cold-lookups")]
    pub fn force_remote(&mut self) {
        self.remote = true;
    }

    /// Forces the no-`openat2` fallback, to test it on any kernel.
    pub fn force_fallback(&mut self) {
        self.force_fallback = true;
    }

    /// Looks up `rel` (a normalised path relative to the root, without a
    /// leading `/`; empty for the root itself) without opening it for I/O.
    pub fn stat(&self, rel: &[u8]) -> io::Result<(OwnedFd, Meta)> {
        // (The walk without openat2 has looked at the last name already.)
        let (fd, seen) = self.open_resolved(rel, libc::O_PATH, true)?;
        let meta = match seen {
            Some(meta) => meta,
            None => fstat(fd.as_raw_fd())?,
        };
        Ok((fd, meta))
    }

    #[cfg(feature = "cold-lookups")]
    /// Whether the kernel can find `rel` beneath the root from its caches
    /// alone (the names on the way and the last one's inode, or that it is
    /// missing): `openat2`'s `RESOLVE_CACHED` (Linux 5.12), which fails
    /// with `EAGAIN` where the lookup would wait for the disk (or, on FUSE
    /// and NFS, ask the server again). True when that cannot be asked (an
    /// older kernel, the fallback walk, `symlinks_outside_root`): the
    /// lookup then runs as it always did. Any other outcome (missing,
    /// refused, a way out) is for the real lookup to answer.
    pub fn resolves_cached(&self, rel: &[u8]) -> bool {
        if self.follow_outside || self.force_fallback || NO_OPENAT2.load(Ordering::Relaxed) {
            return true;
        }
        if NO_RESOLVE_CACHED.load(Ordering::Relaxed) {
            return true;
        }
        let rel: &[u8] = if rel.is_empty() { b"." } else { rel };
        let resolve = libc::RESOLVE_BENEATH | libc::RESOLVE_NO_MAGICLINKS | libc::RESOLVE_CACHED;
        let flags = libc::O_PATH | libc::O_CLOEXEC;
        match with_cstr(rel, |c| openat2_raw(self.fd.as_raw_fd(), c, flags, resolve)) {
            Err(e) if e.raw_os_error() == Some(libc::EAGAIN) => false,
            // (A kernel before 5.12 knows no such flag.)
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
                NO_RESOLVE_CACHED.store(true, Ordering::Relaxed);
                true
            }
            _ => true,
        }
    }

    #[cfg(feature = "cold-lookups")]
    /// [`Root::stat`] from the kernel's caches alone: `None` where the
    /// lookup would wait for the disk (`RESOLVE_CACHED`, as
    /// [`Root::resolves_cached`] asks, in the lookup itself). Where that
    /// cannot be asked, the lookup [`Root::stat`] makes.
    pub fn stat_cached(&self, rel: &[u8]) -> io::Result<Option<(OwnedFd, Meta)>> {
        if self.follow_outside
            || self.force_fallback
            || NO_OPENAT2.load(Ordering::Relaxed)
            || NO_RESOLVE_CACHED.load(Ordering::Relaxed)
        {
            return self.stat(rel).map(Some);
        }
        let path: &[u8] = if rel.is_empty() { b"." } else { rel };
        let resolve = libc::RESOLVE_BENEATH | libc::RESOLVE_NO_MAGICLINKS | libc::RESOLVE_CACHED;
        let flags = libc::O_PATH | libc::O_CLOEXEC;
        match with_cstr(path, |c| {
            openat2_raw(self.fd.as_raw_fd(), c, flags, resolve)
        }) {
            Ok(fd) => {
                let meta = fstat(fd.as_raw_fd())?;
                Ok(Some((fd, meta)))
            }
            Err(e) if e.raw_os_error() == Some(libc::EAGAIN) => Ok(None),
            // (A kernel before 5.12 knows no such flag.)
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
                NO_RESOLVE_CACHED.store(true, Ordering::Relaxed);
                self.stat(rel).map(Some)
            }
            // (No `openat2` at all; or an absolute symlink that may stay
            // beneath the root, which `RESOLVE_BENEATH` refuses: as
            // `Root::stat` finds them.)
            Err(e) if matches!(e.raw_os_error(), Some(libc::ENOSYS | libc::EXDEV)) => {
                self.stat(rel).map(Some)
            }
            Err(e) => Err(e),
        }
    }

    #[cfg(feature = "cold-lookups")]
    /// The same root, on a descriptor of its own (for a thread).
    pub fn try_clone(&self) -> io::Result<Root> {
        Ok(Root {
            fd: self.fd.try_clone()?,
            path: self.path.clone(),
            follow_outside: self.follow_outside,
            force_fallback: self.force_fallback,
            remote: self.remote,
            remote_beneath: self.remote_beneath.clone(),
        })
    }

    /// Opens the regular file `rel` for reading. Anything that is not a
    /// regular file is refused with `PermissionDenied` before it is opened.
    pub fn open_file(&self, rel: &[u8]) -> io::Result<(File, Meta)> {
        let (_, meta) = self.stat(rel)?;
        self.open_stated(rel, &meta)
    }

    /// [`Root::open_file`] of `rel` just stat'ed as `meta` ([`Root::stat`]):
    /// opened only if that is a regular file, and the object opened must be
    /// the one stat'ed (one lookup fewer than [`Root::open_file`], which on
    /// a network filesystem is a round trip to its server).
    pub fn open_stated(&self, rel: &[u8], meta: &Meta) -> io::Result<(File, Meta)> {
        if meta.kind != Kind::File {
            return Err(io::Error::from(io::ErrorKind::PermissionDenied));
        }
        let fd = self.open_flags(rel, libc::O_RDONLY | libc::O_NOCTTY | libc::O_NONBLOCK)?;
        let opened = fstat(fd.as_raw_fd())?;
        // The name may have been replaced between the two opens; only
        // serve the object that was checked.
        if opened.dev != meta.dev || opened.ino != meta.ino || opened.kind != Kind::File {
            return Err(io::Error::from(io::ErrorKind::PermissionDenied));
        }
        Ok((File::from(fd), opened))
    }

    /// Lists the directory `rel`: each entry's name and metadata. A
    /// symlink is followed the way a request for it would be (beneath the
    /// root unless links may lead out), so it shows what it leads to;
    /// one that leads nowhere, out of the root, or into a loop is left
    /// out, as are entries that vanish while listing. At most `limit`
    /// entries are read (in the filesystem's order), and whether there
    /// were more is said.
    pub fn list_dir(&self, rel: &[u8], limit: usize) -> io::Result<Listed> {
        self.list_opened(self.open_dir(rel)?, rel, limit)
    }

    /// Opens the directory `rel` to list it ([`Root::list_opened`]).
    pub fn open_dir(&self, rel: &[u8]) -> io::Result<OwnedFd> {
        self.open_flags(rel, libc::O_RDONLY | libc::O_DIRECTORY)
    }

    /// [`Root::list_dir`] of the directory `rel`, opened as `fd`.
    pub fn list_opened(&self, fd: OwnedFd, rel: &[u8], limit: usize) -> io::Result<Listed> {
        let (mut entries, more) = read_dir(fd, limit)?;
        let mut path = Vec::with_capacity(rel.len() + 64);
        entries.retain_mut(|(name, meta, is_link)| {
            if !*is_link {
                return true;
            }
            path.clear();
            path.extend_from_slice(rel);
            if !path.is_empty() {
                path.push(b'/');
            }
            path.extend_from_slice(name);
            match self.stat(&path) {
                Ok((_, target)) => {
                    *meta = target;
                    true
                }
                Err(_) => false,
            }
        });
        let entries = entries
            .into_iter()
            .map(|(name, meta, _)| (name, meta))
            .collect();
        Ok((entries, more))
    }

    /// The entries of the directory `rel` as PROPFIND lists them (see
    /// [`super::listing`]): symlinks as themselves; whether each has
    /// extended attributes if `xattrs`.
    #[cfg(feature = "webdav")]
    pub fn listing(&self, rel: &[u8], xattrs: bool) -> io::Result<super::listing::Listing> {
        let fd = self.open_flags(rel, libc::O_RDONLY | libc::O_DIRECTORY)?;
        super::listing::list(fd, xattrs)
    }

    /// Opens whatever `rel` is (a file, a directory) for reading its
    /// metadata and extended attributes; never blocks (a FIFO).
    pub fn open_any(&self, rel: &[u8]) -> io::Result<File> {
        let flags = libc::O_RDONLY | libc::O_NONBLOCK | libc::O_NOCTTY;
        self.open_flags(rel, flags).map(File::from)
    }

    /// The directory `rel` (as [`Root::stat`] finds it), to change what
    /// is in it by name (see [`super::dir`]); never beyond the root,
    /// whatever `symlinks_outside_root` says.
    ///
    /// Through no symlink at all, even one that stays beneath the root
    /// (ELOOP): what is changed is what its path names, so a change
    /// through a link is judged by the rules (`[[auth]]`, locks, the
    /// check that a destination does not hold its source) of the path
    /// it was made at.
    pub fn dir(&self, rel: &[u8]) -> io::Result<super::dir::Dir> {
        if self.follow_outside {
            return Err(io::Error::from(io::ErrorKind::PermissionDenied));
        }
        let flags = libc::O_PATH | libc::O_DIRECTORY;
        self.open_unlinked(rel, flags).map(super::dir::Dir)
    }

    /// [`Root::open_any`] through no symlink at all, the last name
    /// included (see [`Root::dir`]): what a change of its properties
    /// opens.
    pub fn open_to_change(&self, rel: &[u8]) -> io::Result<File> {
        if self.follow_outside {
            return Err(io::Error::from(io::ErrorKind::PermissionDenied));
        }
        let flags = libc::O_RDONLY | libc::O_NONBLOCK | libc::O_NOCTTY;
        self.open_unlinked(rel, flags).map(File::from)
    }

    /// Opens `rel` beneath the root through no symlink
    /// (`RESOLVE_NO_SYMLINKS`; without `openat2`, the no-symlink walk).
    fn open_unlinked(&self, rel: &[u8], flags: libc::c_int) -> io::Result<OwnedFd> {
        self.open_resolved(rel, flags, false).map(|(fd, _)| fd)
    }

    fn open_flags(&self, rel: &[u8], flags: libc::c_int) -> io::Result<OwnedFd> {
        self.open_resolved(rel, flags, true).map(|(fd, _)| fd)
    }

    /// Opens `rel` beneath the root, following the symlinks that stay
    /// beneath it if `links` (all of them with `symlinks_outside_root`),
    /// else none. With what is known of the file opened, if the walk
    /// without `openat2` had to look (an `O_PATH` open).
    fn open_resolved(
        &self,
        rel: &[u8],
        flags: libc::c_int,
        links: bool,
    ) -> io::Result<(OwnedFd, Option<Meta>)> {
        let rel: &[u8] = if rel.is_empty() { b"." } else { rel };
        let flags = flags | libc::O_CLOEXEC;
        if self.follow_outside && links {
            return openat(self.fd.as_raw_fd(), rel, flags).map(|fd| (fd, None));
        }
        if !self.force_fallback && !NO_OPENAT2.load(Ordering::Relaxed) {
            let resolve = libc::RESOLVE_BENEATH
                | match links {
                    true => libc::RESOLVE_NO_MAGICLINKS,
                    false => libc::RESOLVE_NO_SYMLINKS,
                };
            match with_cstr(rel, |c| openat2_raw(self.fd.as_raw_fd(), c, flags, resolve)) {
                Err(e) if e.raw_os_error() == Some(libc::ENOSYS) => {
                    NO_OPENAT2.store(true, Ordering::Relaxed)
                }
                // RESOLVE_BENEATH answers EXDEV for any absolute symlink,
                // even one that stays inside the root: the walk follows
                // one that names the root by its path, and judges any
                // other by where the descriptor really is.
                Err(e) if links && e.raw_os_error() == Some(libc::EXDEV) => {
                    return self.walk_beneath(rel, flags, true)
                }
                other => return other.map(|fd| (fd, None)),
            }
        }
        self.walk_beneath(rel, flags, links)
    }

    /// Opens `rel` following symlinks, then accepts the result only if the
    /// kernel says the opened object lies beneath the root (checked on the
    /// descriptor itself, so a rename race cannot fool it). Without /proc
    /// the answer is no.
    fn open_checked(&self, rel: &[u8], flags: libc::c_int) -> io::Result<OwnedFd> {
        let fd = openat(self.fd.as_raw_fd(), rel, flags)?;
        let link = format!("/proc/self/fd/{}", fd.as_raw_fd());
        let real = std::fs::read_link(link)
            .map_err(|_| io::Error::from(io::ErrorKind::PermissionDenied))?;
        if real.starts_with(&self.path) {
            Ok(fd)
        } else {
            // What openat2 says for a way out (a 403, and cached as such).
            Err(io::Error::from_raw_os_error(libc::EXDEV))
        }
    }

    /// The fallback for `openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)`
    /// (Linux before 5.6): the path walked one name at a time, each opened
    /// with `O_NOFOLLOW` from the directory before it, the directories on
    /// the way held open. A symlink met is read (`readlinkat`) and its
    /// target walked in its place; `..` goes back to the directory held
    /// before, and is refused at the root (EXDEV, as `openat2` says), so
    /// nothing the walk opens lies outside it, whatever a link says. An
    /// absolute target beneath the root's own path is walked from the
    /// root (no /proc needed: a chroot jail has none), any other judged
    /// by [`Root::open_checked`]; more than 40 links is ELOOP, the
    /// kernel's own bound. (With `openat2`, what it answers EXDEV, an
    /// absolute link among them, comes here too.) Without `links`, as
    /// `RESOLVE_NO_SYMLINKS`: any symlink met is ELOOP (what
    /// [`Root::dir`] and [`Root::open_to_change`] open).
    /// An `O_PATH` open of the last name says what it found (the
    /// check for a symlink there is an `fstat`).
    fn walk_beneath(
        &self,
        rel: &[u8],
        flags: libc::c_int,
        links: bool,
    ) -> io::Result<(OwnedFd, Option<Meta>)> {
        const MAX_LINKS: usize = 40;
        let mut path = std::borrow::Cow::Borrowed(rel);
        let mut at = 0;
        let mut dirs: Vec<OwnedFd> = Vec::new();
        let mut met = 0;
        if rel.first() == Some(&b'/') {
            return Err(io::Error::from_raw_os_error(libc::EXDEV));
        }
        loop {
            let here = dirs.last().map_or(self.fd.as_raw_fd(), |d| d.as_raw_fd());
            // The next name, and what follows it.
            let rest = &path[at..];
            let end = rest.iter().position(|&b| b == b'/').unwrap_or(rest.len());
            let (name, after) = (&rest[..end], at + end);
            if name.is_empty() || name == b"." {
                if after == path.len() {
                    return openat(here, b".", flags).map(|fd| (fd, None));
                }
                at = after + 1;
                continue;
            }
            if name == b".." {
                if dirs.pop().is_none() {
                    return Err(io::Error::from_raw_os_error(libc::EXDEV));
                }
                at = (after + 1).min(path.len());
                continue;
            }
            // Whether another name follows, and whether a slash (or `.`)
            // asks for a directory after the last.
            let tail = &path[after..];
            let last = tail
                .split(|&b| b == b'/')
                .all(|p| p.is_empty() || p == b".");
            let dir_wanted = !tail.is_empty();
            let f = match (last, dir_wanted) {
                (true, false) => flags | libc::O_NOFOLLOW,
                (true, true) => flags | libc::O_NOFOLLOW | libc::O_DIRECTORY,
                (false, _) => libc::O_PATH | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
            };
            let opened = openat(here, name, f).and_then(|fd| {
                // O_PATH | O_NOFOLLOW opens a symlink at the end as itself.
                if flags & libc::O_PATH == 0 || !last {
                    return Ok((fd, None));
                }
                match lstat_meta(fd.as_raw_fd(), b"")? {
                    None => Err(io::Error::from_raw_os_error(libc::ELOOP)),
                    meta => Ok((fd, meta)),
                }
            });
            match opened {
                Ok(found) if last => return Ok(found),
                Ok((fd, _)) => {
                    dirs.push(fd);
                    at = after + 1;
                    continue;
                }
                // A symlink: ELOOP at the end (O_NOFOLLOW), ENOTDIR where
                // a directory is asked for.
                Err(e)
                    if matches!(e.raw_os_error(), Some(libc::ELOOP | libc::ENOTDIR))
                        && is_symlink_at(here, name) => {}
                Err(e) => return Err(e),
            }
            met += 1;
            if !links || met > MAX_LINKS {
                return Err(io::Error::from_raw_os_error(libc::ELOOP));
            }
            let target = read_link_at(here, name)?;
            let mut next = target;
            next.extend_from_slice(tail);
            if next.first() == Some(&b'/') {
                // An absolute target that names a place beneath the root
                // by the root's own path is walked from the root; any
                // other is judged where it really leads (/proc).
                let root = self.path.as_os_str().as_encoded_bytes();
                match next.strip_prefix(root) {
                    Some(rest) if rest.is_empty() || rest[0] == b'/' || root == b"/" => {
                        next.drain(..root.len());
                        dirs.clear();
                    }
                    _ => return self.open_checked(&next, flags).map(|fd| (fd, None)),
                }
            }
            path = std::borrow::Cow::Owned(next);
            at = 0;
        }
    }
}

/// Who log files brisk makes belong to, when it was started as root and
/// serves as another user (see [`own_logs_as`]).
static LOG_OWNER: std::sync::OnceLock<(u32, Option<u32>)> = std::sync::OnceLock::new();

/// Makes the log files [`open_log`] creates from now on belong to `uid`
/// (and `gid`), the user a root-started brisk serves as: as they are
/// when it runs as that user (under systemd), so that logrotate's `su
/// brisk adm` can rotate and compress them. Set before the privileged
/// helper is forked, which then creates them so too.
pub fn own_logs_as(uid: u32, gid: Option<u32>) {
    let _ = LOG_OWNER.set((uid, gid));
}

/// Opens a log file for appending, creating it (mode 0640: logs hold
/// client addresses) if needed, as [`own_logs_as`] says. Appending, so
/// that concurrent writers (and logrotate's `copytruncate`) never
/// overwrite.
pub fn open_log(path: &Path) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    let made = std::fs::OpenOptions::new()
        .append(true)
        .create_new(true)
        .mode(0o640)
        .open(path);
    match made {
        Ok(file) => {
            if let Some(&(uid, gid)) = LOG_OWNER.get() {
                std::os::unix::fs::fchown(&file, Some(uid), gid)?;
            }
            Ok(file)
        }
        // (One that is there keeps its owner: the operator's choice.)
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => open_existing_log(path),
        Err(e) => Err(e),
    }
}

/// Opens the log file at `path`, which exists, for appending. As root
/// (brisk at start, before it leaves root, and `brisk-priv` at each
/// SIGUSR1), a symlink as its last component is followed only if root
/// owns it, and what is not a regular file only if root owns it: the
/// serving user may write in the log directory (the Debian package's
/// `/var/log/brisk` is brisk's), and a symlink it puts there in place of
/// the log would otherwise have root append lines that clients write into
/// (a User-Agent of `$(…)`) to any file, such as `/root/.bashrc` (nginx's
/// CVE-2016-1247); a FIFO would hang the opener. Refused: `ELOOP` for
/// such a symlink, `ENXIO` for such a file ([`log_open_hint`] says why).
fn open_existing_log(path: &Path) -> io::Result<File> {
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    let open = |flags: libc::c_int| {
        std::fs::OpenOptions::new()
            .append(true)
            .custom_flags(flags)
            .open(path)
    };
    if super::privileges::euid() != 0 {
        return open(0);
    }
    // (Not blocking: a FIFO with no reader answers ENXIO at once.)
    let file = match open(libc::O_NOFOLLOW | libc::O_NONBLOCK) {
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
            if std::fs::symlink_metadata(path)?.uid() != 0 {
                return Err(e);
            }
            open(libc::O_NONBLOCK)?
        }
        other => other?,
    };
    let meta = file.metadata()?;
    if !meta.file_type().is_file() && meta.uid() != 0 {
        return Err(io::Error::from_raw_os_error(libc::ENXIO));
    }
    // Writes block again (a pipe behind a root-owned /dev/stdout link).
    let fd = file.as_raw_fd();
    // SAFETY: plain fcntl calls on a descriptor this function owns.
    let flags = cvt(unsafe { libc::fcntl(fd, libc::F_GETFL) })?;
    // SAFETY: as above.
    cvt(unsafe { libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK) })?;
    Ok(file)
}

/// Why [`open_log`] may have refused a log file with `e` when brisk, or
/// `brisk-priv` for it, runs as root: words to add to the error.
pub fn log_open_hint(e: &io::Error) -> &'static str {
    match e.raw_os_error() {
        Some(libc::ELOOP) => {
            " (brisk running as root follows a symlink in place of a log file only if \
             root owns the link)"
        }
        Some(libc::ENXIO) => {
            " (brisk running as root writes a log to what is not a regular file only if \
             root owns it)"
        }
        Some(libc::EACCES | libc::EPERM) => {
            " (the user brisk runs as must be able to write it, or make it there)"
        }
        _ => "",
    }
}

/// Makes a FIFO at `path` with permissions `mode`: the tests' special
/// file, which must never be opened as content.
#[cfg(test)]
pub(crate) fn make_fifo(path: &Path, mode: u32) -> io::Result<()> {
    let c = cstring(path.as_os_str().as_encoded_bytes())?;
    // SAFETY: `c` is a valid NUL-terminated path.
    cvt(unsafe { libc::mkfifo(c.as_ptr(), mode as libc::mode_t) }).map(drop)
}

fn cstring(bytes: &[u8]) -> io::Result<CString> {
    CString::new(bytes).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))
}

/// Calls `f` with `bytes` as a NUL-terminated C string, built on the
/// stack when it fits (request paths nearly always do), so that a lookup
/// allocates nothing.
pub(super) fn with_cstr<T>(
    bytes: &[u8],
    f: impl FnOnce(&std::ffi::CStr) -> io::Result<T>,
) -> io::Result<T> {
    let mut buf = [0u8; 512];
    if bytes.len() < buf.len() {
        buf[..bytes.len()].copy_from_slice(bytes);
        let c = std::ffi::CStr::from_bytes_with_nul(&buf[..=bytes.len()])
            .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
        f(c)
    } else {
        f(&cstring(bytes)?)
    }
}

/// Whether `name` in the directory `dir` is a symlink (an empty `name`:
/// whether `dir` itself is one, opened with `O_PATH | O_NOFOLLOW`). Asked
/// on error paths and of special files only.
fn is_symlink_at(dir: RawFd, name: &[u8]) -> bool {
    matches!(lstat_meta(dir, name), Ok(None))
}

/// What `name` in `dir` is, not following a symlink (an empty `name`:
/// `dir` itself): None for a symlink.
fn lstat_meta(dir: RawFd, name: &[u8]) -> io::Result<Option<Meta>> {
    // SAFETY: plain old data written by the kernel.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    let empty = if name.is_empty() {
        libc::AT_EMPTY_PATH
    } else {
        0
    };
    with_cstr(name, |c| {
        // SAFETY: an open descriptor, a NUL-terminated name, a valid out-pointer.
        cvt(unsafe { libc::fstatat(dir, c.as_ptr(), &mut st, libc::AT_SYMLINK_NOFOLLOW | empty) })
    })?;
    Ok((st.st_mode & libc::S_IFMT != libc::S_IFLNK).then(|| meta_of(&st)))
}

/// Asks once, of the first root opened, whether `openat2` can be used:
/// not on a kernel before 5.6 (ENOSYS), nor where a seccomp filter older
/// than the call refuses it with EPERM (the default profile of Docker
/// before 20.10, a systemd unit's `SystemCallFilter` list from before it
/// with `SystemCallErrorNumber=EPERM`), which would have made every
/// lookup a 403: the walk serves then, as without the call.
fn probe_openat2(dir: RawFd) {
    static ASKED: std::sync::Once = std::sync::Once::new();
    ASKED.call_once(|| {
        let asked = openat2_raw(
            dir,
            c".",
            libc::O_PATH | libc::O_CLOEXEC,
            libc::RESOLVE_BENEATH,
        );
        if let Err(e) = asked {
            if matches!(e.raw_os_error(), Some(libc::ENOSYS | libc::EPERM)) {
                NO_OPENAT2.store(true, Ordering::Relaxed);
            }
        }
    });
}

/// Whether paths beneath a root are walked by brisk itself rather than
/// confined by the kernel (`openat2`, see [`probe_openat2`]): what
/// `--check-config` says.
pub fn walks_paths_itself() -> bool {
    if let Ok(root) = File::open("/") {
        probe_openat2(root.as_raw_fd());
    }
    NO_OPENAT2.load(Ordering::Relaxed)
}

/// What the symlink `name` in `dir` says (ENOENT for an empty one, as
/// the kernel's walk answers).
fn read_link_at(dir: RawFd, name: &[u8]) -> io::Result<Vec<u8>> {
    let mut buf = vec![0u8; libc::PATH_MAX as usize];
    let n = with_cstr(name, |c| {
        // SAFETY: an open descriptor, a NUL-terminated name, and a buffer
        // of the length passed.
        let n = unsafe { libc::readlinkat(dir, c.as_ptr(), buf.as_mut_ptr().cast(), buf.len()) };
        match n {
            -1 => Err(io::Error::last_os_error()),
            n => Ok(n as usize),
        }
    })?;
    if n == 0 {
        return Err(io::Error::from_raw_os_error(libc::ENOENT));
    }
    buf.truncate(n);
    Ok(buf)
}

fn openat(dir: RawFd, rel: &[u8], flags: libc::c_int) -> io::Result<OwnedFd> {
    // SAFETY: `c` is NUL-terminated and `dir` is an open descriptor.
    let fd = with_cstr(rel, |c| {
        cvt(unsafe { libc::openat(dir, c.as_ptr(), flags, 0) })
    })?;
    // SAFETY: `fd` was just opened and is owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn openat2_raw(
    dir: RawFd,
    c: &std::ffi::CStr,
    flags: libc::c_int,
    resolve: u64,
) -> io::Result<OwnedFd> {
    // SAFETY: open_how is plain old data; zero is valid for every field.
    let mut how: libc::open_how = unsafe { std::mem::zeroed() };
    how.flags = flags as u64;
    how.resolve = resolve;
    // SAFETY: `c` is NUL-terminated, `how` is a valid open_how of the size
    // passed, `dir` is an open descriptor.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_openat2,
            dir,
            c.as_ptr(),
            &how as *const libc::open_how,
            std::mem::size_of::<libc::open_how>(),
        )
    };
    let fd = cvt(ret as libc::c_int)?;
    // SAFETY: `fd` was just opened and is owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Each entry of the directory: its name, its own metadata (`lstat`), and
/// whether it is a symlink.
pub(super) fn read_dir(fd: OwnedFd, limit: usize) -> io::Result<Entries> {
    let mut out = Vec::new();
    let mut more = false;
    each_entry(fd, |dir, name| {
        if out.len() >= limit {
            more = true;
            return false;
        }
        // SAFETY: plain old data written by the kernel.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: an open directory, a NUL-terminated name, a valid out-pointer.
        let r = unsafe { libc::fstatat(dir, name.as_ptr(), &mut st, libc::AT_SYMLINK_NOFOLLOW) };
        if r == 0 {
            let is_link = st.st_mode & libc::S_IFMT == libc::S_IFLNK;
            out.push((name.to_bytes().to_vec(), meta_of(&st), is_link));
        }
        true
    })?;
    Ok((out, more))
}

/// Calls `each` with the directory's descriptor and the name of each of
/// its entries but `.` and `..`, while it says go on. (libc's readdir:
/// std's `read_dir` costs the smallest builds some 2 KiB more.)
fn each_entry(fd: OwnedFd, mut each: impl FnMut(RawFd, &std::ffi::CStr) -> bool) -> io::Result<()> {
    // SAFETY: fdopendir takes ownership of the descriptor on success.
    let dirp = unsafe { libc::fdopendir(fd.as_raw_fd()) };
    if dirp.is_null() {
        return Err(io::Error::last_os_error());
    }
    std::mem::forget(fd); // now owned by `dirp`, closed by closedir
    loop {
        // SAFETY: `dirp` is a valid open directory stream.
        let ent = unsafe { libc::readdir(dirp) };
        if ent.is_null() {
            break;
        }
        // SAFETY: readdir returned a valid dirent whose d_name is NUL-terminated.
        let name = unsafe { std::ffi::CStr::from_ptr((*ent).d_name.as_ptr()) };
        if matches!(name.to_bytes(), b"." | b"..") {
            continue;
        }
        // SAFETY: `dirp` is a valid open directory stream.
        if !each(unsafe { libc::dirfd(dirp) }, name) {
            break;
        }
    }
    // SAFETY: `dirp` is valid and not used afterwards.
    unsafe { libc::closedir(dirp) };
    Ok(())
}

/// A directory's entries as [`Root::list_dir`] lists them (name, what
/// `stat` says), and whether it has more than were read.
pub type Listed = (Vec<(Vec<u8>, Meta)>, bool);

/// A directory's entries as [`read_dir`] reads them (name, what `lstat`
/// says, whether a symlink), and whether it has more than were read.
pub(super) type Entries = (Vec<(Vec<u8>, Meta, bool)>, bool);

/// Which file `path` is (its device and inode), as a pid file written
/// with [`write_whole`] is told from the one a later brisk (an upgrade)
/// renamed over it; `None` when it cannot be looked at (gone).
pub fn identity(path: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt as _;
    std::fs::symlink_metadata(path)
        .ok()
        .map(|m| (m.dev(), m.ino()))
}

/// Writes `path` whole or not at all: a temporary file beside it (made
/// with `mode`, less the umask; no `fchmod`, which the sandbox refuses),
/// synced, renamed over it, the
/// directory synced. A reader never finds it half written or empty (the
/// pid file, ACME's keys and certificates).
pub fn write_whole(path: &Path, bytes: &[u8], mode: u32) -> io::Result<()> {
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("file");
    let tmp = dir.join(format!(".{name}.{}.tmp", unique()));
    let written = (|| {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(mode)
            .open(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)?;
        File::open(dir)?.sync_all()
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

/// A name part no other writer uses at the same time: servers of a fleet
/// on one shared directory may all have one pid (containers'), threads of one
/// process share theirs.
fn unique() -> String {
    static COUNT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = COUNT.fetch_add(1, Ordering::Relaxed);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    format!("{}.{n}.{nanos}", std::process::id())
}

/// Takes the lock file `path` for `holder` (a line naming this server:
/// host, pid), shared by the servers of a fleet on one directory (ACME's
/// per-name locks, the session-ticket keys' rotation): `Ok(Some)` when
/// this server now holds it, `Ok(None)` when another does. A lock is a
/// file made with `O_EXCL`; one older than `stale` (its holder died) is
/// broken: renamed away first, so that of two servers breaking it at
/// once only one succeeds.
pub fn lock(path: &Path, holder: &str, stale: std::time::Duration) -> io::Result<Option<Lock>> {
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    for _ in 0..3 {
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(path)
        {
            Ok(mut f) => {
                f.write_all(format!("{holder}\n").as_bytes())?;
                f.sync_all()?;
                return Ok(Some(Lock {
                    path: path.to_path_buf(),
                }));
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e),
        }
        if !break_if_stale(path, stale)? {
            return Ok(None);
        }
    }
    Ok(None)
}

/// Breaks the lock at `path` if older than `stale`, or left by a process
/// of this machine that is gone (a stop or an upgrade in the middle of
/// an order): true when it is gone (the caller tries again).
fn break_if_stale(path: &Path, stale: std::time::Duration) -> io::Result<bool> {
    use std::time::SystemTime;
    let age = |p: &Path| {
        std::fs::metadata(p)
            .and_then(|m| m.modified())
            .map(|t| SystemTime::now().duration_since(t).unwrap_or_default())
    };
    let orphan = std::fs::read_to_string(path).is_ok_and(|h| holder_is_gone(h.trim()));
    match age(path) {
        Ok(a) if a < stale && !orphan => return Ok(false),
        Ok(_) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(true),
        Err(e) => return Err(e),
    }
    // Renamed first: of two breakers only one moves it.
    let aside = path.with_extension(format!("stale-{}", unique()));
    match std::fs::rename(path, &aside) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(true),
        Err(e) => return Err(e),
    }
    // What was moved may be a lock made a moment ago by another breaker:
    // if it is fresh (and not the orphan), it goes back (unless a third
    // one made another).
    let same = std::fs::read_to_string(&aside).is_ok_and(|h| holder_is_gone(h.trim()));
    if age(&aside).is_ok_and(|a| a < stale) && !same {
        let _ = std::fs::hard_link(&aside, path);
        let _ = std::fs::remove_file(&aside);
        return Ok(false);
    }
    std::fs::remove_file(&aside)?;
    Ok(true)
}

/// This server as a lock's holder: its host name, pid, and when it
/// started (`vm pid 1 started 1764640800.123456789`): a process that
/// comes after it with the same pid (a container restarted, brisk the
/// same pid again) is told from it. Read once, before the sandbox hides
/// `/proc/sys` (`process::run` asks first).
pub fn lock_holder() -> &'static str {
    static HOLDER: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    HOLDER.get_or_init(|| {
        let machine = std::fs::read_to_string("/proc/sys/kernel/hostname")
            .map(|h| h.trim().to_string())
            .unwrap_or_else(|_| "brisk".to_string());
        let started = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        format!(
            "{machine} pid {} started {}.{:09}",
            std::process::id(),
            started.as_secs(),
            started.subsec_nanos()
        )
    })
}

/// The machine and the pid a holder's line ([`lock_holder`]'s words, or
/// an earlier version's `machine pid N`) names.
fn machine_and_pid(holder: &str) -> Option<(&str, &str)> {
    let (machine, rest) = holder.rsplit_once(" pid ")?;
    let pid = rest.split(' ').next()?;
    pid.parse::<u32>().ok()?;
    Some((machine, pid))
}

/// Whether `holder` ([`lock_holder`]'s words) names a process of this
/// machine, not this one, that is no more: one whose pid is not running,
/// or an earlier one with this process's pid (its line is not this
/// process's own). Unknown (another machine, no `/proc` to look in, as
/// inside some sandboxes): no.
fn holder_is_gone(holder: &str) -> bool {
    let ours = lock_holder();
    let (Some((machine, pid)), Some((our_machine, our_pid))) =
        (machine_and_pid(holder), machine_and_pid(ours))
    else {
        return false;
    };
    if machine != our_machine || holder == ours {
        return false;
    }
    if pid == our_pid {
        return true;
    }
    Path::new("/proc/self").exists() && !Path::new("/proc").join(pid).exists()
}

/// A lock held (see [`lock`]): released when dropped.
#[derive(Debug)]
pub struct Lock {
    path: std::path::PathBuf,
}

impl Drop for Lock {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Whether the filesystem of the directory `dir` finds a name whatever
/// its case (`A.txt` opens `a.txt`): vfat and exFAT (by the kernel's
/// drivers, or by FUSE), SMB shares. Told by the kind of filesystem,
/// then, where it could be either (FUSE, SMB), by looking up an entry
/// spelt with its letters' case swapped. Where that cannot be told (an
/// empty directory on such a mount: a USB disk just plugged in), `true`:
/// taken for one that does, rules then cover more, never less. A
/// directory's answer is kept while the same filesystem is there (by
/// its device): what it holds may change (emptied), the answer may not.
pub fn folds_case(dir: &Path) -> bool {
    // (Looked at again while serving only with `webdav`.)
    if !cfg!(feature = "webdav") {
        return probe_case(dir);
    }
    use std::os::unix::fs::MetadataExt;
    static TOLD: std::sync::Mutex<Vec<(PathBuf, u64, bool)>> = std::sync::Mutex::new(Vec::new());
    let dev = std::fs::metadata(dir).map_or(0, |m| m.dev());
    let mut told = TOLD
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(&(_, _, folds)) = told.iter().find(|(d, v, _)| *v == dev && d == dir) {
        return folds;
    }
    let folds = probe_case(dir);
    if told.len() >= 64 {
        told.remove(0);
    }
    told.push((dir.to_path_buf(), dev, folds));
    folds
}

/// FUSE's `statfs` type (`FUSE_SUPER_MAGIC`); SMB's two follow.
const FUSE: i64 = 0x6573_5546;
const CIFS: i64 = 0xff53_4d42_u32 as i64;
const SMB2: i64 = 0xfe53_4d42_u32 as i64;

/// The kind of filesystem `dir` is on (`statfs`'s `f_type`, as in
/// statfs(2)), if it can be told.
fn fs_kind(dir: &Path) -> Option<i64> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
    // SAFETY: plain old data written by the kernel.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: a NUL-terminated path, a valid out-pointer.
    if unsafe { libc::statfs(c.as_ptr(), &mut st) } != 0 {
        return None;
    }
    Some(st.f_type as i64 & 0xffff_ffff)
}

/// Whether a filesystem of `kind` ([`fs_kind`]) asks a server (see
/// [`Root::remote`]): FUSE, NFS, SMB (three types), Ceph, 9p, AFS (two),
/// Coda, GFS2, OCFS2, Lustre, OrangeFS.
#[cfg(feature = "cold-lookups")]
fn remote_kind(kind: i64) -> bool {
    matches!(
        kind,
        FUSE | CIFS
            | SMB2
            | 0x517b
            | 0x6969
            | 0x00c3_6400
            | 0x0102_1997
            | 0x5346_414f
            | 0x6b41_4653
            | 0x7375_7245
            | 0x0116_1970
            | 0x7461_636f
            | 0x0bd0_0bd0
            | 0x2003_0528
    )
}

/// The mount points beneath `tree` (canonical) of filesystems that ask a
/// server ([`Root::remote`]), by the mount table's kinds, relative to
/// `tree`, each with a `/` at its end. (None is asked anything: a hung
/// server's mount would hang a `statfs`.)
#[cfg(feature = "cold-lookups")]
fn remote_beneath(tree: &Path) -> Vec<Box<[u8]>> {
    mount_table().map_or_else(Vec::new, |table| remote_points(&table, tree))
}

/// [`remote_beneath`] in the mount table `table` (`/proc/self/mountinfo`).
#[cfg(feature = "cold-lookups")]
fn remote_points(table: &[u8], tree: &Path) -> Vec<Box<[u8]>> {
    use std::os::unix::ffi::OsStrExt;
    let mut points = Vec::new();
    for line in table.split(|&b| b == b'\n') {
        let mut fields = line.split(|&b| b == b' ');
        let Some(point) = fields.nth(4).map(unescape) else {
            continue;
        };
        let kind = fields.skip_while(|f| *f != b"-").nth(1).unwrap_or_default();
        let remote = kind.starts_with(b"fuse")
            || matches!(
                kind,
                b"nfs"
                    | b"nfs4"
                    | b"cifs"
                    | b"smb3"
                    | b"smbfs"
                    | b"ceph"
                    | b"9p"
                    | b"afs"
                    | b"coda"
                    | b"gfs2"
                    | b"ocfs2"
                    | b"lustre"
                    | b"pvfs2"
                    | b"glusterfs"
                    // (An automount point: the first lookup beneath it
                    // waits for the automounter to mount the share.)
                    | b"autofs"
            );
        let point = Path::new(std::ffi::OsStr::from_bytes(&point));
        match point.strip_prefix(tree) {
            Ok(rel) if remote && !rel.as_os_str().is_empty() => {
                let mut rel = rel.as_os_str().as_bytes().to_vec();
                rel.push(b'/');
                points.push(rel.into());
            }
            _ => {}
        }
    }
    points
}

/// [`folds_case`], told afresh.
fn probe_case(dir: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    const MSDOS: i64 = 0x4d44;
    const EXFAT: i64 = 0x2011_bab0;
    let Some(kind) = fs_kind(dir) else {
        return false;
    };
    if matches!(kind, MSDOS | EXFAT) {
        return true;
    }
    if !matches!(kind, FUSE | CIFS | SMB2) {
        return false;
    }
    let Ok(fd) = std::fs::File::open(dir).map(OwnedFd::from) else {
        return true;
    };
    let mut names: Vec<Vec<u8>> = Vec::new();
    let _ = each_entry(fd, |_, name| {
        names.push(name.to_bytes().to_vec());
        names.len() < 256
    });
    for name in &names {
        let swapped: Vec<u8> = name
            .iter()
            .map(|&b| match b {
                b'a'..=b'z' => b.to_ascii_uppercase(),
                b'A'..=b'Z' => b.to_ascii_lowercase(),
                b => b,
            })
            .collect();
        if swapped == *name || names.contains(&swapped) {
            continue;
        }
        return std::fs::symlink_metadata(dir.join(std::ffi::OsStr::from_bytes(&swapped))).is_ok();
    }
    true
}

/// The directories of the tree `tree` (canonical) beneath which names
/// are found whatever their case ([`folds_case`]): the tree itself, or
/// else each filesystem mounted beneath it that does (a USB stick at
/// `/srv/share/usb`), as the mount table says at the time of the call.
/// (With the cargo feature `webdav` only: the smallest builds look at
/// each tree alone, `SiteConfig::folding_areas`.)
#[cfg(feature = "webdav")]
pub fn folding_dirs(tree: &Path) -> Vec<PathBuf> {
    let table = mount_table();
    if folds_case(tree) {
        return vec![tree.to_path_buf()];
    }
    let Some(table) = table else {
        return Vec::new();
    };
    let mut dirs: Vec<PathBuf> = Vec::new();
    for line in table.split(|&b| b == b'\n') {
        let mut fields = line.split(|&b| b == b' ');
        let Some(point) = fields.nth(4).map(unescape) else {
            continue;
        };
        let kind = fields.skip_while(|f| *f != b"-").nth(1).unwrap_or_default();
        let maybe = matches!(kind, b"vfat" | b"msdos" | b"exfat" | b"cifs" | b"smb3")
            || kind.starts_with(b"fuse");
        let point =
            PathBuf::from(<std::ffi::OsString as std::os::unix::ffi::OsStringExt>::from_vec(point));
        if maybe
            && point != tree
            && point.starts_with(tree)
            && !dirs.iter().any(|d| point.starts_with(d))
            && folds_case(&point)
        {
            dirs.retain(|d| !d.starts_with(&point));
            dirs.push(point);
        }
    }
    dirs
}

/// A mount point as the mount table writes it: space, tab, newline and
/// backslash as `\ooo`.
#[cfg(any(feature = "webdav", feature = "cold-lookups"))]
fn unescape(field: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(field.len());
    let mut i = 0;
    while i < field.len() {
        let code = field
            .get(i + 1..i + 4)
            .filter(|d| d.iter().all(|b| (b'0'..=b'7').contains(b)));
        match (field[i], code) {
            (b'\\', Some(d)) => {
                out.push(d.iter().fold(0u8, |n, b| n.wrapping_mul(8) + (b - b'0')));
                i += 4;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    out
}

/// Tells when this process's mount table changed (a filesystem mounted
/// or unmounted anywhere), by its contents: one read of it a call.
#[cfg(feature = "webdav")]
#[derive(Debug, Default)]
pub struct MountWatch {
    last: Option<Vec<u8>>,
}

#[cfg(feature = "webdav")]
impl MountWatch {
    /// Watches from now on (and opens the table, for later calls made
    /// inside the sandbox).
    pub fn new() -> MountWatch {
        MountWatch {
            last: mount_table(),
        }
    }

    /// Whether the table changed since the last call (or `new`).
    pub fn changed(&mut self) -> bool {
        let now = mount_table();
        std::mem::replace(&mut self.last, now) != self.last
    }
}

/// This process's mount table (`/proc/self/mountinfo`), read whole. The
/// file is opened at the first call, before any sandbox, and read from
/// its start again at each later one: a reload runs where `/proc` is
/// out of reach. `None` when it cannot be read.
#[cfg(any(feature = "webdav", feature = "cold-lookups"))]
fn mount_table() -> Option<Vec<u8>> {
    use std::os::unix::fs::FileExt;
    static TABLE: std::sync::OnceLock<Option<std::fs::File>> = std::sync::OnceLock::new();
    let file = TABLE
        .get_or_init(|| std::fs::File::open("/proc/self/mountinfo").ok())
        .as_ref()?;
    let mut out = Vec::new();
    let mut buf = vec![0; 16 << 10];
    loop {
        match file.read_at(&mut buf, out.len() as u64).ok()? {
            0 => return Some(out),
            n => out.extend_from_slice(&buf[..n]),
        }
    }
}

/// Why `who` (a user id and the groups it will have, its own first: see
/// `privileges::switch_user`; `None`: this process, as it is) may not
/// create and remove names in the directory `dir`, or `None` if it may.
/// For this process the kernel answers (`faccessat` with `AT_EACCESS`:
/// modes, ACLs, a read-only mount); for another user the directory's
/// mode bits do, and a directory with an ACL is said to be beyond telling.
pub fn cannot_write_dir(dir: &Path, who: Option<(u32, &[u32])>) -> Option<String> {
    use std::os::unix::ffi::OsStrExt as _;
    use std::os::unix::fs::MetadataExt as _;
    let c = CString::new(dir.as_os_str().as_bytes()).ok()?;
    let Some((uid, groups)) = who else {
        let mode = libc::W_OK | libc::X_OK;
        // SAFETY: a NUL-terminated path; no pointer is kept.
        let mut r = unsafe { libc::faccessat(libc::AT_FDCWD, c.as_ptr(), mode, libc::AT_EACCESS) };
        if r == -1 && io::Error::last_os_error().raw_os_error() == Some(libc::EPERM) {
            // glibc asks faccessat2 (Linux 5.8), and falls back only on
            // ENOSYS: a seccomp profile older than the call refuses it
            // with EPERM. The call before it answers for the real ids,
            // which are brisk's own (it is no set-user-ID program).
            // SAFETY: as above.
            r = unsafe { libc::syscall(libc::SYS_faccessat, libc::AT_FDCWD, c.as_ptr(), mode) }
                as i32;
        }
        return (r == -1).then(|| io::Error::last_os_error().to_string());
    };
    let meta = match std::fs::metadata(dir) {
        Ok(m) => m,
        Err(e) => return Some(format!("cannot tell: {e}")),
    };
    // SAFETY: an all-zero statvfs is a valid out-value.
    let mut vfs: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: a NUL-terminated path and a valid out-pointer.
    if unsafe { libc::statvfs(c.as_ptr(), &mut vfs) } == 0 && vfs.f_flag & libc::ST_RDONLY != 0 {
        return Some("it is on a read-only mount".to_string());
    }
    if uid == 0 {
        return None;
    }
    // SAFETY: a NUL-terminated path and name; a zero size asks only
    // whether the attribute exists (its size).
    let acl = unsafe {
        libc::getxattr(
            c.as_ptr(),
            c"system.posix_acl_access".as_ptr(),
            std::ptr::null_mut(),
            0,
        )
    };
    let mode = meta.mode();
    let bits = if meta.uid() == uid {
        (mode >> 6) & 0o3
    } else if groups.contains(&meta.gid()) {
        (mode >> 3) & 0o3
    } else {
        mode & 0o3
    };
    let owned = format!(
        "owned by uid {} gid {}, mode {:04o}",
        meta.uid(),
        meta.gid(),
        mode & 0o7777
    );
    match (acl > 0, bits == 0o3) {
        (true, _) => Some(format!(
            "cannot tell: the directory ({owned}) has an ACL (getfacl shows it)"
        )),
        (false, true) => None,
        (false, false) => Some(format!("permission denied ({owned})")),
    }
}

/// `path` made absolute with every symlink, `.` and `..` resolved, as
/// `realpath(3)` (`std::fs::canonicalize`) makes it, which the rest of
/// brisk calls through here. Where a seccomp profile written before
/// Linux 5.8 refuses `faccessat2` with EPERM (Docker's default before
/// 20.10, a systemd `SystemCallFilter=` list with
/// `SystemCallErrorNumber=EPERM`), glibc's realpath fails for a path
/// ending in `/.` (it asks faccessat2, and falls back to faccessat only
/// on ENOSYS): there the kernel resolves it (`resolve`).
#[allow(clippy::disallowed_methods)]
pub fn canonical(path: &Path) -> io::Result<PathBuf> {
    match std::fs::canonicalize(path) {
        Err(e) if e.raw_os_error() == Some(libc::EPERM) => resolve(path),
        done => done,
    }
}

/// [`canonical`]'s own way: the kernel resolves `path` as it opens it
/// (`O_PATH`: symlinks, `..` from where a link led, ENOTDIR, ELOOP, as
/// realpath), and /proc says where it led (without /proc: the error).
fn resolve(path: &Path) -> io::Result<PathBuf> {
    use std::os::unix::fs::OpenOptionsExt as _;
    let fd = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_PATH)
        .open(path)?;
    std::fs::read_link(format!("/proc/self/fd/{}", fd.as_raw_fd()))
}

#[cfg(test)]
mod tests {

    #[test]
    #[cfg(feature = "webdav")]
    fn mount_points_are_read_as_the_table_escapes_them() {
        assert_eq!(unescape(b"/mnt/a\\040b\\134c"), b"/mnt/a b\\c");
        assert_eq!(unescape(b"/x\\9"), b"/x\\9");
        let table = mount_table().expect("the mount table");
        assert!(table
            .split(|&b| b == b'\n')
            .any(|l| l.split(|&b| b == b' ').nth(4) == Some(b"/")));
    }

    /// Run as root, a log whose last component is a symlink the serving
    /// user could have put there (one root does not own) is not followed,
    /// nor is a FIFO that user made waited on; root's own link is.
    #[test]
    fn as_root_a_log_symlink_or_fifo_root_does_not_own_is_refused() {
        use std::io::Write as _;
        if super::super::privileges::euid() != 0 {
            return crate::test_skip::skip("needs root");
        }
        let d = std::env::temp_dir().join(format!("brisk-log-link-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        let victim = d.join("victim");
        std::fs::write(&victim, "secret\n").unwrap();
        let link = d.join("access.log");
        std::os::unix::fs::symlink(&victim, &link).unwrap();
        std::os::unix::fs::lchown(&link, Some(65534), Some(65534)).unwrap();
        let e = open_log(&link).expect_err("a symlink nobody owns is not followed");
        assert_eq!(e.raw_os_error(), Some(libc::ELOOP), "{e}");
        assert!(log_open_hint(&e).contains("only if root owns the link"));
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "secret\n");
        // The operator's own link (root's: /dev/stdout in a container) is.
        std::os::unix::fs::lchown(&link, Some(0), Some(0)).unwrap();
        open_log(&link).unwrap().write_all(b"line\n").unwrap();
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "secret\nline\n");
        // A FIFO that nobody reads: refused at once, not waited on.
        let fifo = d.join("error.log");
        make_fifo(&fifo, 0o666).unwrap();
        std::os::unix::fs::lchown(&fifo, Some(65534), Some(65534)).unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(open_log(&fifo).map(drop).map_err(|e| e.raw_os_error()));
        });
        let opened = rx.recv_timeout(std::time::Duration::from_secs(10));
        assert_eq!(opened, Ok(Err(Some(libc::ENXIO))));
        // A plain file there is opened, as before.
        let plain = d.join("plain.log");
        std::fs::write(&plain, "").unwrap();
        std::os::unix::fs::chown(&plain, Some(65534), Some(65534)).unwrap();
        open_log(&plain).unwrap().write_all(b"ok\n").unwrap();
        assert_eq!(std::fs::read_to_string(&plain).unwrap(), "ok\n");
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_lock_left_by_a_process_of_this_machine_that_is_gone_is_broken() {
        let d = std::env::temp_dir().join(format!("brisk-lock-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        let path = d.join("a.test.lock");
        let stale = std::time::Duration::from_secs(600);
        let machine = lock_holder().rsplit_once(" pid ").unwrap().0.to_string();
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead = child.id();
        child.wait().unwrap();
        // Fresh, but its holder is gone: broken, taken.
        std::fs::write(&path, format!("{machine} pid {dead}\n")).unwrap();
        let held = lock(&path, lock_holder(), stale).unwrap();
        assert!(held.is_some(), "an orphan's lock is taken");
        drop(held);
        // Left by an earlier process with this one's pid (a container
        // restarted: brisk its pid 1 again), whose line is not this
        // process's: broken, taken, at once.
        let earlier = format!("{machine} pid {}", std::process::id());
        for holder in [earlier.clone(), format!("{earlier} started 1.000000001")] {
            std::fs::write(&path, format!("{holder}\n")).unwrap();
            let held = lock(&path, lock_holder(), stale).unwrap();
            assert!(
                held.is_some(),
                "{holder}: an earlier process's lock is taken"
            );
            drop(held);
        }
        // Held by a process that runs (this one), or another machine's:
        // kept until it is stale.
        for holder in [lock_holder().to_string(), format!("elsewhere pid {dead}")] {
            std::fs::write(&path, format!("{holder}\n")).unwrap();
            assert!(lock(&path, "x pid 1", stale).unwrap().is_none(), "{holder}");
            std::fs::remove_file(&path).unwrap();
        }
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_tree_that_tells_case_apart_is_told() {
        let d = std::env::temp_dir().join(format!("brisk-fold-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("Name.txt"), b"x").unwrap();
        assert!(!folds_case(&d));
        std::fs::remove_dir_all(&d).unwrap();
    }

    use super::*;
    use std::os::unix::fs::symlink;
    use std::path::PathBuf;

    struct Tree(PathBuf);

    impl Drop for Tree {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    /// root/inside.txt, root/sub/deep.txt, an outside dir with secret.txt,
    /// and symlinks of every kind.
    fn tree(tag: &str) -> (Tree, PathBuf) {
        let base = std::env::temp_dir().join(format!("brisk-fs-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        let root = base.join("root");
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::create_dir_all(base.join("outside")).unwrap();
        std::fs::write(root.join("inside.txt"), b"in").unwrap();
        std::fs::write(root.join("sub/deep.txt"), b"deep").unwrap();
        std::fs::write(base.join("outside/secret.txt"), b"secret").unwrap();
        symlink("inside.txt", root.join("rel_in")).unwrap();
        symlink(root.join("inside.txt"), root.join("abs_in")).unwrap();
        symlink("../outside/secret.txt", root.join("rel_out")).unwrap();
        symlink(base.join("outside/secret.txt"), root.join("abs_out")).unwrap();
        symlink(base.join("outside"), root.join("dir_out")).unwrap();
        symlink("/etc/passwd", root.join("passwd")).unwrap();
        (Tree(base), root)
    }

    #[cfg(feature = "cold-lookups")]
    #[test]
    fn names_just_looked_up_resolve_from_the_caches() {
        let (_t, root) = tree("cached");
        let r = Root::open(&root, false).unwrap();
        // Following a symlink updates its atime where `relatime` asks it
        // (an atime not after its ctime: a link made in this clock tick,
        // so one run in ten here), which no lookup from the caches may do
        // (the kernel leaves RCU walk for it: EAGAIN). A link's atime
        // after its ctime, as one followed a tick after it was made.
        for link in ["rel_in", "abs_in"] {
            use std::os::unix::ffi::OsStringExt;
            let path = root.join(link).into_os_string().into_vec();
            let path = std::ffi::CString::new(path).unwrap();
            let times = [
                libc::timespec {
                    tv_sec: 4_000_000_000,
                    tv_nsec: 0,
                },
                libc::timespec {
                    tv_sec: 0,
                    tv_nsec: libc::UTIME_OMIT,
                },
            ];
            // SAFETY: a NUL-terminated path and two timespecs, as
            // utimensat(2) reads them.
            let done = unsafe {
                libc::utimensat(
                    libc::AT_FDCWD,
                    path.as_ptr(),
                    times.as_ptr(),
                    libc::AT_SYMLINK_NOFOLLOW,
                )
            };
            assert_eq!(done, 0, "{}", std::io::Error::last_os_error());
        }
        // (An absolute symlink is for the real lookup to follow and judge.)
        for rel in [
            "inside.txt",
            "sub/deep.txt",
            "missing.txt",
            "",
            "rel_in",
            "abs_in",
        ] {
            let _ = r.stat(rel.as_bytes());
            assert!(r.resolves_cached(rel.as_bytes()), "{rel}");
        }
        let c = r.try_clone().unwrap();
        assert_eq!(read(&c, "sub/deep.txt").unwrap(), b"deep");
    }

    /// The mount points beneath a tree of filesystems that ask a server,
    /// from a mount table: FUSE's kinds and the network ones, not a local
    /// disk's; not the tree itself, nor one beside it that starts alike;
    /// a mount point's escaped space read as a space.
    #[cfg(feature = "cold-lookups")]
    #[test]
    fn remote_mounts_beneath_a_root_are_found_by_the_mount_table() {
        let table = b"22 1 8:1 / / rw - ext4 /dev/sda1 rw\n\
            30 22 0:40 / /srv/www rw - ext4 /dev/sdb1 rw\n\
            31 30 0:41 / /srv/www/media rw shared:5 - nfs4 nas:/media rw\n\
            32 30 0:42 / /srv/www/big\\040files rw - fuse.rclone remote: rw\n\
            33 30 0:43 / /srv/www/usb rw - vfat /dev/sdc1 rw\n\
            34 22 0:44 / /srv/www2 rw - cifs //nas/www2 rw\n\
            35 30 0:45 / /srv/www/archive rw - autofs systemd-1 rw,fd=50\n";
        let points = remote_points(table, Path::new("/srv/www"));
        let points: Vec<&[u8]> = points.iter().map(|p| &p[..]).collect();
        assert_eq!(points, [&b"media/"[..], b"big files/", b"archive/"]);
        let (_t, dir) = tree("remote");
        let mut r = Root::open(&dir, false).unwrap();
        if !fs_kind(&dir).is_some_and(remote_kind) {
            assert!(
                !r.remote(b"inside.txt"),
                "a temporary directory on a local disk"
            );
        }
        r.remote_beneath = vec![b"media/"[..].into()];
        assert!(r.remote(b"media/a.jpg") && r.remote(b"media"));
        assert!(!r.remote(b"mediator.txt") && !r.remote(b"inside.txt"));
    }

    fn read(root: &Root, rel: &str) -> io::Result<Vec<u8>> {
        use std::io::Read;
        let (mut f, _) = root.open_file(rel.as_bytes())?;
        let mut v = Vec::new();
        f.read_to_end(&mut v)?;
        Ok(v)
    }

    const ESCAPES: [&str; 8] = [
        "rel_out",
        "abs_out",
        "dir_out/secret.txt",
        "passwd",
        "../outside/secret.txt",
        "sub/../../outside/secret.txt",
        "../../../../../../etc/passwd",
        "/etc/passwd",
    ];

    #[test]
    fn kernel_confinement_refuses_every_escape() {
        let (_t, path) = tree("kernel");
        let root = Root::open(&path, false).unwrap();
        assert_eq!(read(&root, "inside.txt").unwrap(), b"in");
        assert_eq!(read(&root, "sub/deep.txt").unwrap(), b"deep");
        assert_eq!(read(&root, "rel_in").unwrap(), b"in");
        assert_eq!(read(&root, "abs_in").unwrap(), b"in");
        for rel in ESCAPES {
            let err = read(&root, rel).expect_err(rel);
            assert_eq!(err.raw_os_error(), Some(libc::EXDEV), "{rel}: {err}");
        }
    }

    #[test]
    fn fallback_confinement_refuses_every_escape() {
        let (_t, path) = tree("fallback");
        let mut root = Root::open(&path, false).unwrap();
        root.force_fallback();
        assert_eq!(read(&root, "inside.txt").unwrap(), b"in");
        assert_eq!(read(&root, "sub/deep.txt").unwrap(), b"deep");
        // Symlinks that stay beneath the root are followed, as by openat2.
        assert_eq!(read(&root, "rel_in").unwrap(), b"in");
        assert_eq!(read(&root, "abs_in").unwrap(), b"in");
        for rel in ESCAPES {
            let err = read(&root, rel).expect_err(rel);
            assert_eq!(err.raw_os_error(), Some(libc::EXDEV), "{rel}: {err}");
        }
    }

    /// [`canonical`]'s own walk (where realpath is refused) resolves each
    /// path as realpath does: symlinks relative and absolute, `..` after
    /// a link (from where it led), `/.` at the end, loops and what is
    /// missing with realpath's errno.
    #[test]
    #[allow(clippy::disallowed_methods)]
    fn paths_are_resolved_as_realpath_resolves_them() {
        let (_t, root) = tree("resolve");
        let base = root.parent().unwrap().to_path_buf();
        symlink("sub", root.join("sub_link")).unwrap();
        symlink(root.join("sub"), root.join("abs_sub")).unwrap();
        symlink("loop_b", root.join("loop_a")).unwrap();
        symlink("loop_a", root.join("loop_b")).unwrap();
        let cwd = std::env::current_dir().unwrap();
        let relative = pathdiff(&root, &cwd);
        for rel in [
            "",
            ".",
            "/.",
            "inside.txt",
            "sub/.",
            "sub/..",
            "sub/../.",
            "sub_link/deep.txt",
            "sub_link/..",
            "sub_link/../inside.txt",
            "abs_sub/./deep.txt",
            "abs_sub/..",
            "rel_out",
            "dir_out/.",
            "dir_out/../root/.",
            "passwd",
            "//sub//deep.txt/",
            "missing",
            "missing/.",
            "loop_a",
            "loop_a/.",
            "inside.txt/.",
            "sub_link/../../..",
        ] {
            for path in [root.join(rel), relative.join(rel)] {
                let want = std::fs::canonicalize(&path).map_err(|e| e.raw_os_error());
                let got = resolve(&path).map_err(|e| e.raw_os_error());
                assert_eq!(got, want, "{}", path.display());
            }
        }
        assert_eq!(resolve(Path::new("/")).unwrap(), Path::new("/"));
        assert_eq!(
            resolve(&base.join("root/.")).unwrap(),
            std::fs::canonicalize(&root).unwrap()
        );
    }

    /// `to` relative to `from` (both absolute): `../..` up to where they
    /// part, then down.
    fn pathdiff(to: &Path, from: &Path) -> PathBuf {
        let (to, from): (Vec<_>, Vec<_>) = (to.components().collect(), from.components().collect());
        let common = to.iter().zip(&from).take_while(|(a, b)| a == b).count();
        let mut out = PathBuf::new();
        for _ in common..from.len() {
            out.push("..");
        }
        to[common..].iter().for_each(|c| out.push(c));
        out
    }

    /// Without `openat2` (Linux before 5.6, and qemu's user mode) the walk
    /// finds what `openat2` finds: a file named with a slash after it is
    /// no directory (it was opened as the file, so `/pub.txt/` was
    /// served), nor is one on the way; symlinks lead where they lead
    /// beneath the root (none was followed, so a tree of them was 403s),
    /// and nowhere else.
    #[test]
    fn the_fallback_walk_answers_as_openat2_does() {
        let (_t, path) = tree("walk");
        std::fs::create_dir_all(path.join("sub/deeper")).unwrap();
        std::fs::write(path.join("sub/deeper/x.txt"), b"x").unwrap();
        symlink("sub", path.join("sub_link")).unwrap();
        symlink("deeper/../deep.txt", path.join("sub/up_and_down")).unwrap();
        symlink("../inside.txt", path.join("sub/deeper/up")).unwrap();
        symlink("../../inside.txt", path.join("sub/deeper/up2")).unwrap();
        symlink("../../../outside", path.join("sub/deeper/out")).unwrap();
        symlink("sub_link/deeper/", path.join("slash_link")).unwrap();
        symlink("loop_b", path.join("loop_a")).unwrap();
        symlink("loop_a", path.join("loop_b")).unwrap();
        symlink("missing", path.join("dangling")).unwrap();
        symlink(path.join("sub"), path.join("abs_dir")).unwrap();
        // A chain of 40 links is followed, one more is ELOOP (the kernel's
        // bound).
        for i in 1..=41 {
            symlink(format!("chain{}", i - 1), path.join(format!("chain{i}"))).unwrap();
        }
        std::fs::write(path.join("chain0"), b"end").unwrap();
        let root = Root::open(&path, false).unwrap();
        let mut fallback = Root::open(&path, false).unwrap();
        fallback.force_fallback();
        let found = |r: &Root, rel: &str| match r.stat(rel.as_bytes()) {
            Ok((_, meta)) => Ok(meta.kind),
            Err(e) => Err(e.raw_os_error()),
        };
        for rel in [
            "",
            "inside.txt",
            "inside.txt/",
            "inside.txt//",
            "inside.txt/.",
            "inside.txt/more",
            "sub",
            "sub/",
            "sub//deep.txt",
            "sub/deep.txt/",
            "sub/./deep.txt",
            "missing",
            "missing/",
            "missing/more",
            "rel_in",
            "rel_in/",
            "abs_in",
            "abs_out",
            "dir_out/secret.txt",
            "sub_link",
            "sub_link/",
            "sub_link/deep.txt",
            "sub_link/deeper/x.txt",
            "sub_link/deeper/up",
            "sub_link/deeper/up2",
            "sub_link/deeper/out",
            "sub_link/deeper/out/secret.txt",
            "sub/up_and_down",
            "sub/deeper/up",
            "sub/deeper/up2",
            "slash_link",
            "slash_link/x.txt",
            "loop_a",
            "loop_a/x",
            "dangling",
            "dangling/",
            "abs_dir/deep.txt",
            "abs_dir/../inside.txt",
            "chain40",
            "chain41",
        ] {
            assert_eq!(found(&fallback, rel), found(&root, rel), "{rel:?}");
        }
        assert_eq!(found(&root, "inside.txt/"), Err(Some(libc::ENOTDIR)));
        assert_eq!(found(&root, "sub/deeper/up2"), Ok(Kind::File));
        assert_eq!(found(&root, "sub/deeper/out"), Err(Some(libc::EXDEV)));
        assert_eq!(found(&root, "chain41"), Err(Some(libc::ELOOP)));
        assert!(read(&fallback, "inside.txt/").is_err());
        assert_eq!(read(&fallback, "sub/deep.txt").unwrap(), b"deep");
        assert_eq!(read(&fallback, "sub/deeper/up2").unwrap(), b"in");
        assert_eq!(read(&fallback, "chain40").unwrap(), b"end");
        assert_eq!(read(&fallback, "slash_link/x.txt").unwrap(), b"x");
    }

    #[test]
    fn symlinks_may_be_allowed_out() {
        let (_t, path) = tree("follow");
        let root = Root::open(&path, true).unwrap();
        assert_eq!(read(&root, "abs_out").unwrap(), b"secret");
        assert_eq!(read(&root, "dir_out/secret.txt").unwrap(), b"secret");
    }

    #[test]
    fn listings_follow_symlinks_as_opening_would() {
        let (_t, path) = tree("list");
        symlink("sub", path.join("sub_link")).unwrap();
        symlink("missing", path.join("dangling")).unwrap();
        let names = |root: &Root| {
            let mut v: Vec<(String, Kind, u64)> = root
                .list_dir(b"", usize::MAX)
                .unwrap()
                .0
                .into_iter()
                .map(|(n, m)| (String::from_utf8(n).unwrap(), m.kind, m.size))
                .collect();
            v.sort_by(|a, b| a.0.cmp(&b.0));
            v
        };
        let root = Root::open(&path, false).unwrap();
        let f = |n: &str, size| (n.to_string(), Kind::File, size);
        let listed = names(&root);
        let dirs: Vec<&str> = listed
            .iter()
            .filter(|e| e.1 == Kind::Dir)
            .map(|e| &e.0[..])
            .collect();
        assert_eq!(dirs, ["sub", "sub_link"]);
        let files: Vec<_> = listed.into_iter().filter(|e| e.1 == Kind::File).collect();
        assert_eq!(files, [f("abs_in", 2), f("inside.txt", 2), f("rel_in", 2)]);
        // Without openat2, the same.
        let mut fallback = Root::open(&path, false).unwrap();
        fallback.force_fallback();
        assert_eq!(names(&fallback), names(&root));
    }

    #[test]
    fn special_files_are_never_opened() {
        let (_t, path) = tree("special");
        make_fifo(&path.join("fifo"), 0o644).unwrap();
        let root = Root::open(&path, false).unwrap();
        let (_, meta) = root.stat(b"fifo").unwrap();
        assert_eq!(meta.kind, Kind::Special);
        // Opening a FIFO for reading would block; this must return at once.
        assert_eq!(
            read(&root, "fifo").unwrap_err().kind(),
            io::ErrorKind::PermissionDenied
        );
        assert_eq!(root.stat(b"").unwrap().1.kind, Kind::Dir);
    }
}
