//! Signals, taken synchronously: they are blocked in every thread and the
//! main thread collects them with `sigtimedwait`, so no handler ever runs
//! in the middle of an event loop.

use std::io;
use std::time::Duration;

/// A signal brisk acts on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    /// SIGINT, SIGTERM or SIGQUIT (nginx's graceful stop): stop
    /// gracefully.
    Terminate,
    /// SIGHUP: reload.
    Hangup,
    /// SIGUSR1: reopen log files.
    ReopenLogs,
    /// SIGUSR2: start the new binary and hand it the listeners.
    Upgrade,
}

const HANDLED: [libc::c_int; 6] = [
    libc::SIGINT,
    libc::SIGTERM,
    libc::SIGQUIT,
    libc::SIGHUP,
    libc::SIGUSR1,
    libc::SIGUSR2,
];

fn handled_set() -> libc::sigset_t {
    // SAFETY: sigset_t is plain old data; sigemptyset initialises it.
    let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a valid sigset_t.
    unsafe {
        libc::sigemptyset(&mut set);
        for s in HANDLED {
            libc::sigaddset(&mut set, s);
        }
    }
    set
}

/// Blocks the handled signals in the calling thread; threads spawned
/// afterwards inherit the mask. Call before spawning workers. Also
/// ignores SIGXFSZ for the process: a write past a file-size limit
/// (`ulimit -f`, systemd's `LimitFSIZE=`), a client's upload into a
/// WebDAV tree or `temp_dir`, fails with EFBIG instead of killing the
/// server. (Programs brisk starts get every signal's default back:
/// `spawn`.)
pub fn block() -> io::Result<()> {
    let set = handled_set();
    // SAFETY: `set` is initialised; the old mask is not wanted.
    let r = unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) };
    if r != 0 {
        return Err(io::Error::from_raw_os_error(r));
    }
    // SAFETY: setting a disposition to SIG_IGN installs no handler.
    if unsafe { libc::signal(libc::SIGXFSZ, libc::SIG_IGN) } == libc::SIG_ERR {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Waits up to `timeout` for a handled signal.
pub fn wait(timeout: Duration) -> Option<Signal> {
    let set = handled_set();
    let ts = libc::timespec {
        // `as _`: time_t's width differs between libcs.
        tv_sec: timeout.as_secs().min(i32::MAX as u64) as _,
        tv_nsec: timeout.subsec_nanos() as libc::c_long,
    };
    // SAFETY: `set` and `ts` are valid; siginfo is not wanted.
    let sig = unsafe { libc::sigtimedwait(&set, std::ptr::null_mut(), &ts) };
    match sig {
        libc::SIGINT | libc::SIGTERM | libc::SIGQUIT => Some(Signal::Terminate),
        libc::SIGHUP => Some(Signal::Hangup),
        libc::SIGUSR1 => Some(Signal::ReopenLogs),
        libc::SIGUSR2 => Some(Signal::Upgrade),
        _ => None,
    }
}
