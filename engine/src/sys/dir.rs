//! Writing beneath a root (WebDAV's `[[webdav]]` trees): a directory
//! opened beneath the root by the kernel-enforced rules of `fs::Root`
//! (`openat2` with `RESOLVE_BENEATH`, or the no-symlink walk), and every
//! change made by name inside it with the `*at` calls, never following a
//! symlink at the last component: a symlink is removed, renamed or
//! replaced as itself, and nothing is ever written through one.

use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use super::cvt;
use super::fs::{meta_of, read_dir, with_cstr, Meta};

/// A directory beneath a root, open as a path (`O_PATH`).
#[derive(Debug)]
pub struct Dir(pub(super) OwnedFd);

/// How a file made by [`Dir::stage`] waits for its name.
#[derive(Debug)]
pub enum Staged {
    /// Without a name (`O_TMPFILE`), or placed already: no name of it to
    /// remove.
    Unnamed,
    /// Under this temporary name of brisk's own.
    Named(Vec<u8>),
}

/// A name no other file of this process has, and of brisk's own
/// (`.brisk-put.PID.N`: `http::path::is_own_name` says so): for the
/// moment a new file waits for its real name.
fn temp_name() -> Vec<u8> {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let mut name = PART_PREFIX.to_vec();
    name.extend_from_slice(format!("{}.{n}", std::process::id()).as_bytes());
    name
}

/// How [`temp_name`]s start.
const PART_PREFIX: &[u8] = b".brisk-put.";

/// How long a temporary name stays untouched before [`Dir::sweep_once`]
/// takes it for a crash's leftover.
pub const STALE_PART: std::time::Duration = std::time::Duration::from_secs(3600);

/// Directories swept at most, a process (see [`Dir::sweep_once`]).
const SWEPT: usize = 4096;

/// Whether `name` is one plain component: not empty, no `/` or NUL, not
/// `.` or `..`.
pub fn is_name(name: &[u8]) -> bool {
    !name.is_empty() && name != b"." && name != b".." && !name.contains(&b'/') && !name.contains(&0)
}

fn checked(name: &[u8]) -> io::Result<&[u8]> {
    match is_name(name) {
        true => Ok(name),
        false => Err(io::Error::from(io::ErrorKind::InvalidInput)),
    }
}

impl Dir {
    /// What `name` is, not following a symlink (one is `Kind::Special`).
    pub fn stat(&self, name: &[u8]) -> io::Result<Meta> {
        // SAFETY: plain old data written by the kernel.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        with_cstr(checked(name)?, |c| {
            // SAFETY: an open directory, a NUL-terminated name, a valid out-pointer.
            cvt(unsafe {
                libc::fstatat(
                    self.0.as_raw_fd(),
                    c.as_ptr(),
                    &mut st,
                    libc::AT_SYMLINK_NOFOLLOW,
                )
            })
        })?;
        Ok(meta_of(&st))
    }

    /// The directory `name` inside this one (not a symlink to one).
    pub fn sub(&self, name: &[u8]) -> io::Result<Dir> {
        let flags = libc::O_PATH | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC;
        self.open_at(checked(name)?, flags, 0).map(Dir)
    }

    /// Opens the regular file `name` for reading (not through a symlink).
    pub fn open_file(&self, name: &[u8]) -> io::Result<File> {
        let flags = libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NOCTTY | libc::O_CLOEXEC;
        self.open_at(checked(name)?, flags, 0).map(File::from)
    }

    /// Creates `name` as a new, empty regular file (`O_EXCL`: never an
    /// existing one, never through a symlink).
    pub fn create(&self, name: &[u8]) -> io::Result<File> {
        let flags =
            libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC;
        self.open_at(checked(name)?, flags, 0o644).map(File::from)
    }

    /// A new file in this directory, with the permission bits `mode`
    /// (less the process's umask), that nobody sees until
    /// [`Dir::place`] names it: one without a name (`O_TMPFILE`), which
    /// vanishes with its descriptor if it never is; where the
    /// filesystem makes none (FUSE mounts such as exFAT's and NTFS's on
    /// a USB disk, vfat, NFS: `EOPNOTSUPP`), one under a temporary name
    /// of brisk's own (`.brisk-put.*`, never served nor listed), which
    /// [`Dir::unstage`] removes if it is not placed.
    pub fn stage(&self, mode: u32) -> io::Result<(File, Staged)> {
        let flags = libc::O_RDWR | libc::O_TMPFILE | libc::O_CLOEXEC;
        match self.open_at(b".", flags, mode & 0o777) {
            // (EISDIR: a kernel older than O_TMPFILE, which reads it as
            // O_DIRECTORY.)
            Err(e) if matches!(e.raw_os_error(), Some(libc::EOPNOTSUPP | libc::EISDIR)) => {
                self.stage_named(mode)
            }
            other => other.map(|fd| (File::from(fd), Staged::Unnamed)),
        }
    }

    /// [`Dir::stage`]'s file under a temporary name.
    pub(crate) fn stage_named(&self, mode: u32) -> io::Result<(File, Staged)> {
        self.sweep_once();
        let flags =
            libc::O_RDWR | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC;
        loop {
            // (Taken: one left by a crashed brisk whose number this
            // process now has. The next number.)
            let name = temp_name();
            match self.open_at(&name, flags, mode & 0o777) {
                Err(e) if e.raw_os_error() == Some(libc::EEXIST) => continue,
                other => return other.map(|fd| (File::from(fd), Staged::Named(name))),
            }
        }
    }

    /// Removes the temporary names a crashed process left here (a file
    /// named `.brisk-put.*` untouched for [`STALE_PART`]: a living upload
    /// writes to its file all along, and one that stalls is cut far
    /// sooner), the first time this process stages a named file in this
    /// directory (of the first [`SWEPT`] directories).
    fn sweep_once(&self) {
        use std::sync::Mutex;
        static SWEPT_DIRS: Mutex<Vec<(u64, u64)>> = Mutex::new(Vec::new());
        let Ok(me) = super::fs::fstat(self.0.as_raw_fd()) else {
            return;
        };
        {
            let mut swept = SWEPT_DIRS.lock().unwrap_or_else(|e| e.into_inner());
            if swept.len() >= SWEPT || swept.contains(&(me.dev, me.ino)) {
                return;
            }
            swept.push((me.dev, me.ino));
        }
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let Ok(entries) = self.entries() else {
            return;
        };
        for (name, meta) in entries {
            let stale = meta.mtime.saturating_add(STALE_PART.as_secs()) < now;
            if name.starts_with(PART_PREFIX) && meta.kind == super::fs::Kind::File && stale {
                let _ = self.remove(&name, false);
            }
        }
    }

    /// Names `file`, made by [`Dir::stage`] as `staged`, `name`:
    /// replacing what has that name if `replace`, else failing with
    /// `EEXIST` when something does. In one step either way: whoever
    /// looks finds the old file or the new one whole, never a part.
    pub fn place(
        &self,
        file: &File,
        staged: &Staged,
        name: &[u8],
        replace: bool,
    ) -> io::Result<()> {
        match staged {
            Staged::Unnamed if !replace => self.link(file, name),
            Staged::Unnamed => {
                // (No call replaces a name with an unnamed file: it is
                // named aside first, then renamed over the old one.)
                let tmp = temp_name();
                self.link(file, &tmp)?;
                let renamed = self.rename(&tmp, self, name, false);
                if renamed.is_err() {
                    let _ = self.remove(&tmp, false);
                }
                renamed
            }
            Staged::Named(tmp) if replace => self.rename(tmp, self, name, false),
            Staged::Named(tmp) => match self.rename(tmp, self, name, true) {
                // A filesystem without RENAME_NOREPLACE (FUSE ones whose
                // driver has no `rename2`): a hard link, which never
                // replaces; without those either (exfat-fuse), the name
                // checked, then a plain rename (another writer in between
                // could be replaced: there, no call rules it out).
                Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
                    match self.link_name(tmp, name) {
                        Ok(()) => {
                            let _ = self.remove(tmp, false);
                            Ok(())
                        }
                        Err(e) if e.raw_os_error() == Some(libc::EEXIST) => Err(e),
                        Err(_) => match self.stat(name) {
                            Ok(_) => Err(io::Error::from_raw_os_error(libc::EEXIST)),
                            Err(e) if e.raw_os_error() != Some(libc::ENOENT) => Err(e),
                            Err(_) => self.rename(tmp, self, name, false),
                        },
                    }
                }
                other => other,
            },
        }
    }

    /// Removes what [`Dir::stage`] made if it has a name here (a file that
    /// was never placed; nothing once placed, nothing for an unnamed one).
    pub fn unstage(&self, staged: &Staged) {
        if let Staged::Named(tmp) = staged {
            let _ = self.remove(tmp, false);
        }
    }

    /// A second name `to` for the file named `from` here (`EEXIST` when
    /// `to` is taken).
    fn link_name(&self, from: &[u8], to: &[u8]) -> io::Result<()> {
        let dir = self.0.as_raw_fd();
        with_cstr(checked(from)?, |f| {
            with_cstr(checked(to)?, |t| {
                // SAFETY: an open directory, NUL-terminated names.
                cvt(unsafe { libc::linkat(dir, f.as_ptr(), dir, t.as_ptr(), 0) })
            })
        })
        .map(drop)
    }

    /// Gives `file`, an unnamed one, the name `name` here (which must
    /// not exist). `AT_EMPTY_PATH` first; where the kernel
    /// wants a capability for that, through `/proc/self/fd`.
    fn link(&self, file: &File, name: &[u8]) -> io::Result<()> {
        let name = checked(name)?;
        let dir = self.0.as_raw_fd();
        let empty = with_cstr(name, |to| {
            // SAFETY: open descriptors, NUL-terminated strings.
            cvt(unsafe {
                libc::linkat(
                    file.as_raw_fd(),
                    c"".as_ptr(),
                    dir,
                    to.as_ptr(),
                    libc::AT_EMPTY_PATH,
                )
            })
        });
        match empty {
            Err(e) if matches!(e.raw_os_error(), Some(libc::ENOENT | libc::EPERM)) => {}
            other => return other.map(drop),
        }
        let proc = format!("/proc/self/fd/{}", file.as_raw_fd());
        with_cstr(proc.as_bytes(), |from| {
            with_cstr(name, |to| {
                // SAFETY: NUL-terminated strings, an open directory.
                cvt(unsafe {
                    libc::linkat(
                        libc::AT_FDCWD,
                        from.as_ptr(),
                        dir,
                        to.as_ptr(),
                        libc::AT_SYMLINK_FOLLOW,
                    )
                })
            })
        })
        .map(drop)
    }

    /// Makes the directory `name`.
    pub fn mkdir(&self, name: &[u8]) -> io::Result<()> {
        with_cstr(checked(name)?, |c| {
            // SAFETY: an open directory, a NUL-terminated name.
            cvt(unsafe { libc::mkdirat(self.0.as_raw_fd(), c.as_ptr(), 0o755) })
        })
        .map(drop)
    }

    /// Removes `name`: an empty directory if `dir`, else anything but a
    /// directory (a symlink itself, not what it names).
    pub fn remove(&self, name: &[u8], dir: bool) -> io::Result<()> {
        let flags = if dir { libc::AT_REMOVEDIR } else { 0 };
        with_cstr(checked(name)?, |c| {
            // SAFETY: an open directory, a NUL-terminated name.
            cvt(unsafe { libc::unlinkat(self.0.as_raw_fd(), c.as_ptr(), flags) })
        })
        .map(drop)
    }

    /// Renames `from` here to `to` in `dest` (replacing what is there
    /// unless `keep`: then EEXIST), in one step (`renameat2`).
    pub fn rename(&self, from: &[u8], dest: &Dir, to: &[u8], keep: bool) -> io::Result<()> {
        let flags = if keep { libc::RENAME_NOREPLACE } else { 0 };
        let (from, to) = (checked(from)?, checked(to)?);
        with_cstr(from, |f| {
            with_cstr(to, |t| {
                // SAFETY: open directories, NUL-terminated names.
                let r = unsafe {
                    libc::syscall(
                        libc::SYS_renameat2,
                        self.0.as_raw_fd(),
                        f.as_ptr(),
                        dest.0.as_raw_fd(),
                        t.as_ptr(),
                        flags,
                    )
                };
                cvt(r as libc::c_int)
            })
        })
        .map(drop)
    }

    /// Each entry: its name and its own metadata (a symlink is
    /// `Kind::Special`, not what it names).
    pub fn entries(&self) -> io::Result<Vec<(Vec<u8>, Meta)>> {
        let fd = OwnedFd::from(self.open()?);
        Ok(read_dir(fd, usize::MAX)?
            .0
            .into_iter()
            .map(|(n, m, _)| (n, m))
            .collect())
    }

    /// The directory's identity: its device and inode.
    pub fn identity(&self) -> io::Result<(u64, u64)> {
        let meta = super::fs::fstat(self.0.as_raw_fd())?;
        Ok((meta.dev, meta.ino))
    }

    /// The directory itself, open for reading (its entries, its
    /// extended attributes).
    pub fn open(&self) -> io::Result<File> {
        let flags = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC;
        self.open_at(b".", flags, 0).map(File::from)
    }

    /// An exclusive `flock` on the directory, held until the file given
    /// back is dropped: against another process (an upgrade's old and new
    /// brisk) changing what is kept here at the same time. It waits for
    /// the holder. `None` where the filesystem has no such lock on a
    /// directory (NFS emulates `flock` with byte ranges, refused on a
    /// directory opened for reading).
    pub fn lock(&self) -> io::Result<Option<File>> {
        let dir = self.open()?;
        loop {
            // SAFETY: an open descriptor.
            match cvt(unsafe { libc::flock(dir.as_raw_fd(), libc::LOCK_EX) }) {
                Ok(_) => return Ok(Some(dir)),
                Err(e) => match e.raw_os_error() {
                    Some(libc::EINTR) => continue,
                    Some(libc::EBADF | libc::ENOLCK | libc::EOPNOTSUPP | libc::EINVAL) => {
                        return Ok(None)
                    }
                    _ => return Err(e),
                },
            }
        }
    }

    /// Makes what was renamed or made here survive a crash (`fsync` of
    /// the directory).
    pub fn sync(&self) -> io::Result<()> {
        self.open()?.sync_all()
    }

    fn open_at(&self, name: &[u8], flags: libc::c_int, mode: libc::c_uint) -> io::Result<OwnedFd> {
        let fd = with_cstr(name, |c| {
            // SAFETY: an open directory, a NUL-terminated name.
            cvt(unsafe { libc::openat(self.0.as_raw_fd(), c.as_ptr(), flags, mode) })
        })?;
        // SAFETY: `fd` was just opened and is owned by nobody else.
        Ok(unsafe { OwnedFd::from_raw_fd(fd) })
    }
}

/// The extended attribute `name` of the open file `file`; `None` when
/// it has none of that name.
pub fn xattr_get(file: &File, name: &[u8]) -> io::Result<Option<Vec<u8>>> {
    let got = with_cstr(name, |c| {
        sized(|buf| {
            // SAFETY: an open descriptor, a NUL-terminated name, a buffer of that length.
            unsafe {
                libc::fgetxattr(
                    file.as_raw_fd(),
                    c.as_ptr(),
                    buf.as_mut_ptr().cast(),
                    buf.len(),
                )
            }
        })
    });
    match got {
        Ok(v) => Ok(Some(v)),
        Err(e) if e.raw_os_error() == Some(libc::ENODATA) => Ok(None),
        Err(e) => Err(e),
    }
}

/// Sets the extended attribute `name` of `file` to `value`.
pub fn xattr_set(file: &File, name: &[u8], value: &[u8]) -> io::Result<()> {
    with_cstr(name, |c| {
        // SAFETY: an open descriptor, a NUL-terminated name, a value of that length.
        let r = unsafe {
            libc::fsetxattr(
                file.as_raw_fd(),
                c.as_ptr(),
                value.as_ptr().cast(),
                value.len(),
                0,
            )
        };
        cvt(r)
    })
    .map(drop)
}

/// Removes the extended attribute `name` of `file` (none is no error).
pub fn xattr_remove(file: &File, name: &[u8]) -> io::Result<()> {
    let r = with_cstr(name, |c| {
        // SAFETY: an open descriptor, a NUL-terminated name.
        cvt(unsafe { libc::fremovexattr(file.as_raw_fd(), c.as_ptr()) })
    });
    match r {
        Err(e) if e.raw_os_error() == Some(libc::ENODATA) => Ok(()),
        other => other.map(drop),
    }
}

/// The names of `file`'s extended attributes.
pub fn xattr_list(file: &File) -> io::Result<Vec<Vec<u8>>> {
    let names = sized(|buf| {
        // SAFETY: an open descriptor, a buffer of that length.
        unsafe { libc::flistxattr(file.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) }
    })?;
    Ok(names
        .split(|&b| b == 0)
        .filter(|n| !n.is_empty())
        .map(<[u8]>::to_vec)
        .collect())
}

/// What `call` writes into a buffer it is given, the buffer grown (up to
/// 64 KiB, the kernel's bound on an attribute) while it is too small.
fn sized(mut call: impl FnMut(&mut [u8]) -> isize) -> io::Result<Vec<u8>> {
    let mut buf = vec![0u8; 4096];
    loop {
        match cvt_size(call(&mut buf)) {
            Ok(n) => {
                buf.truncate(n);
                return Ok(buf);
            }
            Err(e) if e.raw_os_error() == Some(libc::ERANGE) && buf.len() < 1 << 16 => {
                buf.resize(buf.len() * 4, 0)
            }
            Err(e) => return Err(e),
        }
    }
}

fn cvt_size(r: isize) -> io::Result<usize> {
    usize::try_from(r).map_err(|_| io::Error::last_os_error())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::fs::{Kind, Root};
    use std::io::{Read, Write};

    fn temp() -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!(
            "brisk-dir-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn names(d: &std::path::Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn a_crash_s_part_files_are_swept_once_stale() {
        let d = temp();
        for (name, age) in [
            (".brisk-put.1.0", 7200),
            (".brisk-put.1.1", 0),
            ("keep", 7200),
        ] {
            std::fs::write(d.join(name), b"part").unwrap();
            let when = std::time::SystemTime::now() - std::time::Duration::from_secs(age);
            let f = std::fs::File::options()
                .write(true)
                .open(d.join(name))
                .unwrap();
            f.set_modified(when).unwrap();
        }
        let root = Root::open(&d, false).unwrap();
        let dir = root.dir(b"").unwrap();
        let (_f, staged) = dir.stage_named(0o600).unwrap();
        dir.unstage(&staged);
        assert_eq!(names(&d), [".brisk-put.1.1", "keep"]);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_staged_file_is_seen_only_once_placed_whole() {
        let d = temp();
        let root = Root::open(&d, false).unwrap();
        let dir = root.dir(b"").unwrap();
        // Unnamed (this filesystem has O_TMPFILE), and under a temporary
        // name (as on one without).
        for named in [false, true] {
            let stage = || match named {
                false => dir.stage(0o640),
                true => dir.stage_named(0o640),
            };
            let (mut f, staged) = stage().unwrap();
            assert_eq!(matches!(staged, Staged::Named(_)), named);
            f.write_all(b"hello").unwrap();
            let seen = names(&d)
                .into_iter()
                .filter(|n| !n.starts_with("a"))
                .collect::<Vec<_>>();
            match &staged {
                Staged::Unnamed => assert!(seen.is_empty()),
                Staged::Named(tmp) => {
                    let tmp = String::from_utf8(tmp.clone()).unwrap();
                    assert!(tmp.starts_with(".brisk-put."), "{tmp}");
                    assert_eq!(seen, [tmp]);
                }
            }
            dir.place(&f, &staged, b"a", false).unwrap();
            assert_eq!(names(&d), ["a"]);
            assert_eq!(std::fs::read(d.join("a")).unwrap(), b"hello");
            use std::os::unix::fs::PermissionsExt as _;
            let mode = std::fs::metadata(d.join("a")).unwrap().permissions().mode();
            assert_eq!(mode & 0o777 & !0o640, 0);
            // Not over an existing name, unless asked to replace.
            let (mut g, staged) = stage().unwrap();
            g.write_all(b"world").unwrap();
            let e = dir.place(&g, &staged, b"a", false).unwrap_err();
            assert_eq!(e.raw_os_error(), Some(libc::EEXIST));
            assert_eq!(std::fs::read(d.join("a")).unwrap(), b"hello");
            dir.place(&g, &staged, b"a", true).unwrap();
            assert_eq!(std::fs::read(d.join("a")).unwrap(), b"world");
            assert_eq!(names(&d), ["a"]);
            // Never placed: nothing left once unstaged and closed.
            let (g, staged) = stage().unwrap();
            dir.unstage(&staged);
            drop(g);
            assert_eq!(names(&d), ["a"]);
            std::fs::remove_file(d.join("a")).unwrap();
        }
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_temporary_name_left_by_a_crash_is_stepped_over() {
        let d = temp();
        let root = Root::open(&d, false).unwrap();
        let dir = root.dir(b"").unwrap();
        let (_, first) = dir.stage_named(0o600).unwrap();
        let Staged::Named(first) = first else {
            unreachable!()
        };
        // The next names, as if a crashed process with this one's number
        // had left them.
        let n: u64 = std::str::from_utf8(first.rsplit(|&b| b == b'.').next().unwrap())
            .unwrap()
            .parse()
            .unwrap();
        for k in 1..4 {
            let left = format!(".brisk-put.{}.{}", std::process::id(), n + k);
            std::fs::write(d.join(left), b"old").unwrap();
        }
        let (_, next) = dir.stage_named(0o600).unwrap();
        let Staged::Named(next) = next else {
            unreachable!()
        };
        assert!(!next.is_empty() && next != first);
        assert_eq!(
            std::fs::metadata(d.join(std::str::from_utf8(&next).unwrap()))
                .unwrap()
                .len(),
            0
        );
        for k in 1..4 {
            let left = format!(".brisk-put.{}.{}", std::process::id(), n + k);
            assert_eq!(std::fs::read(d.join(left)).unwrap(), b"old");
        }
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_lock_keeps_another_open_of_the_directory_out_until_dropped() {
        let d = temp();
        let root = Root::open(&d, false).unwrap();
        let dir = root.dir(b"").unwrap();
        // (Another process's lock: its own open of the directory.)
        let other = std::fs::File::open(&d).unwrap();
        let try_other = || {
            // SAFETY: an open descriptor.
            let r = unsafe { libc::flock(other.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
            let taken = r == 0;
            if taken {
                // SAFETY: as above.
                unsafe { libc::flock(other.as_raw_fd(), libc::LOCK_UN) };
            }
            taken
        };
        let held = dir.lock().unwrap().expect("a local filesystem has flock");
        assert!(!try_other());
        drop(held);
        assert!(try_other());
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn extended_attributes_round_trip_where_the_filesystem_has_them() {
        let d = temp();
        std::fs::write(d.join("f"), b"x").unwrap();
        let root = Root::open(&d, false).unwrap();
        let f = root.open_any(b"f").unwrap();
        match xattr_set(&f, b"user.brisk.test", b"v") {
            Err(e) if e.raw_os_error() == Some(libc::EOPNOTSUPP) => {
                crate::test_skip::skip("the temporary directory's filesystem has no user xattrs");
                return;
            }
            r => r.unwrap(),
        }
        assert_eq!(
            xattr_get(&f, b"user.brisk.test").unwrap(),
            Some(b"v".to_vec())
        );
        assert!(xattr_list(&f)
            .unwrap()
            .contains(&b"user.brisk.test".to_vec()));
        xattr_remove(&f, b"user.brisk.test").unwrap();
        xattr_remove(&f, b"user.brisk.test").unwrap();
        assert_eq!(xattr_get(&f, b"user.brisk.test").unwrap(), None);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn changes_never_go_through_a_symlink() {
        let d = temp();
        let outside = temp().with_extension("out");
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("f"), b"keep").unwrap();
        std::os::unix::fs::symlink(outside.join("f"), d.join("link")).unwrap();
        std::os::unix::fs::symlink(&outside, d.join("dirlink")).unwrap();
        let root = Root::open(&d, false).unwrap();
        let dir = root.dir(b"").unwrap();
        assert_eq!(dir.stat(b"link").unwrap().kind, Kind::Special);
        assert!(dir.open_file(b"link").is_err());
        assert!(dir.create(b"link").is_err());
        assert!(dir.sub(b"dirlink").is_err());
        assert!(root.dir(b"dirlink").is_err(), "out of the root");
        dir.remove(b"link", false).unwrap();
        let mut keep = String::new();
        File::open(outside.join("f"))
            .unwrap()
            .read_to_string(&mut keep)
            .unwrap();
        assert_eq!(keep, "keep");
        for bad in [&b""[..], b".", b"..", b"a/b"] {
            assert!(dir.mkdir(bad).is_err(), "{bad:?}");
        }
        dir.mkdir(b"c").unwrap();
        assert_eq!(
            dir.mkdir(b"c").unwrap_err().raw_os_error(),
            Some(libc::EEXIST)
        );
        assert_eq!(
            dir.rename(b"c", &dir, b"dirlink", true)
                .unwrap_err()
                .raw_os_error(),
            Some(libc::EEXIST)
        );
        let names: Vec<_> = dir.entries().unwrap().into_iter().map(|(n, _)| n).collect();
        assert!(names.contains(&b"c".to_vec()) && names.contains(&b"dirlink".to_vec()));
        // Nor through one that stays beneath the root, with or without
        // openat2 (ELOOP both ways: a 403, not the 409 of a missing
        // collection); read through as before.
        std::os::unix::fs::symlink("c", d.join("inlink")).unwrap();
        std::fs::write(d.join("c/f"), b"x").unwrap();
        let mut walked = Root::open(&d, false).unwrap();
        walked.force_fallback();
        for root in [&root, &walked] {
            assert!(root.dir(b"c").is_ok());
            let e = root.dir(b"inlink").map(drop).unwrap_err();
            assert_eq!(e.raw_os_error(), Some(libc::ELOOP));
            let e = root.open_to_change(b"inlink/f").unwrap_err();
            assert_eq!(e.raw_os_error(), Some(libc::ELOOP));
            assert!(root.open_to_change(b"c/f").is_ok());
            assert!(root.stat(b"inlink/f").is_ok());
        }
        std::fs::remove_dir_all(&d).unwrap();
        std::fs::remove_dir_all(&outside).unwrap();
    }
}
