//! Process-wide set-up: descriptor limits, daemonizing.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use super::cvt;

/// Lowers the calling thread's priority: its nice value goes up by `by`
/// (to 19 at most). On Linux a nice value is a thread's own, and raising
/// it needs no privilege.
pub fn nicer_thread(by: i32) -> io::Result<()> {
    // (getpriority may return -1 as a value: errno tells, cleared first.)
    // SAFETY: errno is this thread's; plain calls with no memory passed.
    let now = unsafe {
        *libc::__errno_location() = 0;
        libc::getpriority(libc::PRIO_PROCESS, 0)
    };
    if now == -1 && io::Error::last_os_error().raw_os_error() != Some(0) {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: as above.
    cvt(unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, now.saturating_add(by).min(19)) })
        .map(drop)
}

/// Raises the soft limit on open descriptors to the hard limit (so 10,000
/// connections fit) and returns the new soft limit.
pub fn raise_nofile_limit() -> io::Result<u64> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `lim` is a valid out-pointer.
    cvt(unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) })?;
    NOFILE.store(lim.rlim_cur, std::sync::atomic::Ordering::Relaxed);
    if lim.rlim_cur < lim.rlim_max {
        lim.rlim_cur = lim.rlim_max;
        // SAFETY: `lim` is a valid rlimit.
        cvt(unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &lim) })?;
        NOFILE.store(lim.rlim_cur, std::sync::atomic::Ordering::Relaxed);
    }
    Ok(lim.rlim_cur)
}

/// The soft limit on open descriptors [`raise_nofile_limit`] set (read
/// before the sandbox, which refuses `getrlimit`), 0 before it ran.
static NOFILE: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// The soft limit on open descriptors, as [`raise_nofile_limit`] left it
/// (`u64::MAX` where it is unlimited or was never read).
pub fn nofile_limit() -> u64 {
    match NOFILE.load(std::sync::atomic::Ordering::Relaxed) {
        0 => u64::MAX,
        n => n,
    }
}

/// `close_range(2)`'s flag: mark the descriptors close-on-exec instead.
const CLOSE_RANGE_CLOEXEC: libc::c_uint = 1 << 2;

/// Marks every descriptor above the standard three close-on-exec, so that
/// none inherited from whoever started brisk reaches a CGI program (where
/// the C library cannot close them in the child, as musl's cannot).
pub fn cloexec_inherited() -> io::Result<()> {
    close_range(3, libc::c_uint::MAX, CLOSE_RANGE_CLOEXEC)
}

/// Closes descriptors `first..=last`, or with `CLOSE_RANGE_CLOEXEC` in
/// `flags` marks them close-on-exec: `close_range(2)` where the kernel has
/// it (closing Linux 5.9, marking 5.11), else one call a descriptor, those
/// open found in /proc/self/fd. (A helper forked without it kept every
/// listening socket open: after a stop or a reload that dropped an
/// address, connections were still taken in by the kernel, and never
/// answered.) Docker's seccomp profile before 20.10 refused the call
/// (EPERM): the same way then.
pub(crate) fn close_range(
    first: libc::c_uint,
    last: libc::c_uint,
    flags: libc::c_uint,
) -> io::Result<()> {
    // SAFETY: plain syscall on this process's own descriptors; callers
    // choose ranges that hold no descriptor still owned by Rust code that
    // will use it.
    let r = unsafe { libc::syscall(libc::SYS_close_range, first, last, flags) };
    match r {
        0 => Ok(()),
        _ => close_each(first, last, flags),
    }
}

/// [`close_range`] one descriptor at a time.
fn close_each(first: libc::c_uint, last: libc::c_uint, flags: libc::c_uint) -> io::Result<()> {
    for fd in open_descriptors() {
        if fd < first || fd > last {
            continue;
        }
        let fd = fd as libc::c_int;
        // SAFETY: as above: this process's own descriptors.
        unsafe {
            match flags & CLOSE_RANGE_CLOEXEC != 0 {
                true => {
                    let was = libc::fcntl(fd, libc::F_GETFD);
                    if was >= 0 {
                        libc::fcntl(fd, libc::F_SETFD, was | libc::FD_CLOEXEC);
                    }
                }
                false => {
                    libc::close(fd);
                }
            }
        }
    }
    Ok(())
}

/// The descriptors open in this process (that of the listing itself
/// closed again before it returns); without /proc, those open below the
/// soft limit on descriptors (65,536 at most).
fn open_descriptors() -> Vec<libc::c_uint> {
    let mut fds: Vec<libc::c_uint> = Vec::new();
    // (The C library's reader: it is linked already, where std's adds
    // 2 KiB for this one list.)
    // SAFETY: a NUL-terminated path; each entry is read before the next
    // readdir and the stream is closed once.
    unsafe {
        let dir = libc::opendir(c"/proc/self/fd".as_ptr());
        if dir.is_null() {
            fds.extend(0..nofile_limit().min(1 << 16) as libc::c_uint);
        } else {
            loop {
                let entry = libc::readdir(dir);
                if entry.is_null() {
                    break;
                }
                let name = std::ffi::CStr::from_ptr((*entry).d_name.as_ptr());
                if let Some(fd) = name.to_str().ok().and_then(|n| n.parse().ok()) {
                    fds.push(fd);
                }
            }
            libc::closedir(dir);
        }
    }
    // (The listing's own descriptor, closed by now, is among them: one
    // not open any more is left alone.)
    // SAFETY: F_GETFD only asks whether the descriptor is open.
    fds.retain(|&fd| unsafe { libc::fcntl(fd as libc::c_int, libc::F_GETFD) } >= 0);
    fds
}

/// Detaches from the terminal: fork, `setsid`, fork again, standard
/// streams to /dev/null. Must run before any thread is spawned.
///
/// The process that was started waits until the daemon says it serves
/// ([`Daemon::ready`]: its pid file written, its workers started), then
/// exits 0; if the daemon fails first ([`Daemon::failed`]), it prints
/// the daemon's reason on its stderr (the daemon's is /dev/null by then)
/// and exits 1; if the daemon ends without a word, it exits 1 and says
/// so.
/// So whoever started brisk (a shell, systemd's `Type=forking`) finds the
/// pid file and a serving server once it returns, or a failure.
pub fn daemonize() -> io::Result<Daemon> {
    let mut ends = [0; 2];
    // SAFETY: pipe2 writes two descriptors into `ends`.
    cvt(unsafe { libc::pipe2(ends.as_mut_ptr(), libc::O_CLOEXEC) })?;
    // SAFETY: both were just made and are owned by nobody else.
    let (read, write) = unsafe { (OwnedFd::from_raw_fd(ends[0]), OwnedFd::from_raw_fd(ends[1])) };
    for round in 0..2 {
        // SAFETY: no other threads exist yet (the caller's contract), so
        // the child is a faithful copy.
        let pid = cvt(unsafe { libc::fork() })?;
        if pid > 0 && round == 0 {
            drop(write);
            // "R" (it serves), or "E" and the reason it failed, until the
            // end of the pipe.
            let mut said = Vec::new();
            let mut buf = [0u8; 1024];
            loop {
                // SAFETY: reads into a buffer of that length.
                let n = unsafe { libc::read(read.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
                match n {
                    1.. => said.extend_from_slice(&buf[..n as usize]),
                    0 => break,
                    _ if io::Error::last_os_error().kind() == io::ErrorKind::Interrupted => {}
                    _ => break,
                }
                if said.first() == Some(&b'R') || said.len() > 64 * 1024 {
                    break;
                }
            }
            if said.first() == Some(&b'R') {
                // SAFETY: the parent leaves at once without running
                // destructors that could flush shared buffers twice.
                unsafe { libc::_exit(0) };
            }
            let msg = match said.split_first() {
                Some((b'E', why)) => [b"brisk: ", why, b"\n"].concat(),
                _ => b"brisk: the daemon stopped before it served; its error log may say why\n"
                    .to_vec(),
            };
            // SAFETY: writes the message to stderr, then leaves.
            unsafe {
                libc::write(2, msg.as_ptr().cast(), msg.len());
                libc::_exit(1)
            };
        }
        if pid > 0 {
            // SAFETY: as above (the middle process).
            unsafe { libc::_exit(0) };
        }
        if round == 0 {
            // SAFETY: plain syscall.
            cvt(unsafe { libc::setsid() })?;
        }
    }
    drop(read);
    let devnull = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/null")?;
    for fd in 0..3 {
        // SAFETY: both descriptors are open; dup2 replaces the standard one.
        cvt(unsafe { libc::dup2(devnull.as_raw_fd(), fd) })?;
    }
    Ok(Daemon { ready: write })
}

/// A daemon's line back to the process that started it (see
/// [`daemonize`]).
#[derive(Debug)]
pub struct Daemon {
    ready: OwnedFd,
}

impl Daemon {
    /// Tells the process that started brisk that it serves: it exits 0.
    /// (Dropped without it, the daemon failed: that process exits 1.)
    pub fn ready(self) {
        // SAFETY: a one-byte write to the pipe's write end, owned here.
        let _ = unsafe { libc::write(self.ready.as_raw_fd(), b"R".as_ptr().cast(), 1) };
    }

    /// Tells the process that started brisk why the daemon failed before
    /// it served: it prints `why` on its stderr and exits 1.
    pub fn failed(self, why: &str) {
        let msg = [b"E", why.as_bytes()].concat();
        // SAFETY: a write from a buffer of that length to the pipe's write
        // end, owned here (at most 64 KiB: the pipe takes it whole).
        let _ = unsafe {
            libc::write(
                self.ready.as_raw_fd(),
                msg.as_ptr().cast(),
                msg.len().min(64 * 1024),
            )
        };
    }
}

/// This process's id.
pub fn pid() -> u32 {
    std::process::id()
}

/// Sends `signal` to process `pid` (> 0: never a group; process 1 may
/// be a brisk in a container, which the caller checks).
pub fn signal(pid: i32, signal: i32) -> io::Result<()> {
    if pid < 1 {
        return Err(io::Error::from(io::ErrorKind::InvalidInput));
    }
    // SAFETY: kill(2) takes plain integers; `pid` names one process.
    cvt(unsafe { libc::kill(pid, signal) }).map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn is_open(fd: libc::c_int) -> bool {
        // SAFETY: F_GETFD only asks.
        unsafe { libc::fcntl(fd, libc::F_GETFD) >= 0 }
    }

    /// Without `close_range` (Linux before 5.9, an old Docker profile),
    /// the descriptors of the range are closed (or marked) one by one,
    /// and no other.
    #[test]
    fn without_close_range_each_descriptor_of_the_range_is_closed_or_marked() {
        let file = std::fs::File::open("/dev/null").unwrap();
        // (High numbers, which no other test running beside this one holds.)
        for fd in 900..904 {
            // SAFETY: dup2 onto numbers nothing else uses.
            assert_eq!(unsafe { libc::dup2(file.as_raw_fd(), fd) }, fd);
        }
        close_each(900, 902, 0).unwrap();
        assert!(!is_open(900) && !is_open(901) && !is_open(902));
        assert!(is_open(903) && is_open(file.as_raw_fd()));
        // SAFETY: F_GETFD only asks.
        assert_eq!(
            unsafe { libc::fcntl(903, libc::F_GETFD) } & libc::FD_CLOEXEC,
            0
        );
        close_each(903, 903, CLOSE_RANGE_CLOEXEC).unwrap();
        assert!(is_open(903));
        // SAFETY: as above.
        assert_ne!(
            unsafe { libc::fcntl(903, libc::F_GETFD) } & libc::FD_CLOEXEC,
            0
        );
        // SAFETY: 903 is this test's.
        unsafe { libc::close(903) };
    }
}
