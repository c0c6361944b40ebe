//! Process-wide set-up: descriptor limits, daemonizing.

use std::io;

use super::cvt;

/// Raises the soft limit on open descriptors to the hard limit (so 10,000
/// connections fit) and returns the new soft limit.
pub fn raise_nofile_limit() -> io::Result<u64> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `lim` is a valid out-pointer.
    cvt(unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) })?;
    if lim.rlim_cur < lim.rlim_max {
        lim.rlim_cur = lim.rlim_max;
        // SAFETY: `lim` is a valid rlimit.
        cvt(unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &lim) })?;
    }
    Ok(lim.rlim_cur)
}

/// Marks every descriptor above the standard three close-on-exec, so that
/// none inherited from whoever started brisk reaches a CGI program (where
/// the C library cannot close them in the child, as musl's cannot).
/// Linux ≥ 5.11 (`close_range`); older kernels keep them as they were.
pub fn cloexec_inherited() -> io::Result<()> {
    const CLOSE_RANGE_CLOEXEC: libc::c_uint = 1 << 2;
    close_range(3, libc::c_uint::MAX, CLOSE_RANGE_CLOEXEC)
}

/// `close_range(2)` (Linux ≥ 5.11): closes descriptors `first..=last`, or
/// with `CLOSE_RANGE_CLOEXEC` in `flags` marks them close-on-exec.
pub(crate) fn close_range(
    first: libc::c_uint,
    last: libc::c_uint,
    flags: libc::c_uint,
) -> io::Result<()> {
    // SAFETY: plain syscall on this process's own descriptors; callers
    // choose ranges that hold no descriptor still owned by Rust code that
    // will use it.
    let r = unsafe { libc::syscall(libc::SYS_close_range, first, last, flags) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Detaches from the terminal: fork, `setsid`, fork again, standard
/// streams to /dev/null. Must run before any thread is spawned.
pub fn daemonize() -> io::Result<()> {
    for round in 0..2 {
        // SAFETY: no other threads exist yet (the caller's contract), so
        // the child is a faithful copy.
        let pid = cvt(unsafe { libc::fork() })?;
        if pid > 0 {
            // SAFETY: the parent leaves at once without running destructors
            // that could flush shared buffers twice.
            unsafe { libc::_exit(0) };
        }
        if round == 0 {
            // SAFETY: plain syscall.
            cvt(unsafe { libc::setsid() })?;
        }
    }
    let devnull = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/null")?;
    use std::os::fd::AsRawFd;
    for fd in 0..3 {
        // SAFETY: both descriptors are open; dup2 replaces the standard one.
        cvt(unsafe { libc::dup2(devnull.as_raw_fd(), fd) })?;
    }
    Ok(())
}

/// This process's id.
pub fn pid() -> u32 {
    std::process::id()
}

/// Sends `signal` to process `pid` (> 1: never a group, never init).
pub fn signal(pid: i32, signal: i32) -> io::Result<()> {
    if pid < 2 {
        return Err(io::Error::from(io::ErrorKind::InvalidInput));
    }
    // SAFETY: kill(2) takes plain integers; `pid` names one process.
    cvt(unsafe { libc::kill(pid, signal) }).map(|_| ())
}
