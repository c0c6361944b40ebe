//! brisk as the first process of a PID namespace: a container's PID 1
//! (`ENTRYPOINT ["/brisk"]`, as the project's Containerfile has it).
//!
//! The first process of a namespace is its init: every process whose
//! parent ends is given to it, and only it can reap them. A CGI script
//! that leaves a job running (`cmd &`) ends before its job does; the job
//! is then init's child, and a zombie once it exits until init waits for
//! it. brisk waits for its own children only, so each such job stayed a
//! zombie for the container's life (each holding a pid of the
//! container's limit). Signals differ too: the kernel drops those of
//! PID 1 that it has no handler for.
//!
//! So a brisk that finds itself pid 1 forks first: the child serves, as
//! brisk does anywhere (pid 2, its own signals, helpers and sandbox);
//! pid 1 stays behind as a small init (tini's way): it reaps whatever
//! it is given, passes on every signal it gets to the server (a
//! container's stop, SIGHUP's reload, SIGUSR1's log reopening), and ends
//! with the server's exit status when the server ends (the kernel then
//! ends what is left in the namespace).

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};

use super::cvt;

/// This brisk serves under the init [`stand_in`] left as pid 1.
static UNDER_INIT: AtomicBool = AtomicBool::new(false);

/// Whether this brisk serves under the init of [`stand_in`]: it is not
/// upgraded in place (SIGUSR2), since its exit would end the namespace.
pub fn under_init() -> bool {
    UNDER_INIT.load(Ordering::Relaxed)
}

/// In a process that is pid 1, forks: returns in the child, which serves;
/// this process stays the namespace's init and never returns (see the
/// module documentation). Elsewhere, does nothing. Call before any
/// thread exists and before signals are blocked.
#[cold]
pub fn stand_in() -> io::Result<()> {
    if std::process::id() != 1 {
        return Ok(());
    }
    // Every signal blocked before the fork, so that none the server
    // causes (its end's SIGCHLD) or is sent (a stop) can be lost between
    // the fork and the init's first wait: pending, they wait for it.
    // SAFETY: sigset_t is plain old data; sigfillset fills it.
    let mut all: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: valid sigsets; one thread.
    let mut before: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    unsafe {
        libc::sigfillset(&mut all);
        libc::sigprocmask(libc::SIG_SETMASK, &all, &mut before);
    }
    // The init's name is taken before the fork, and the server takes
    // its own back before it does anything: once the server listens, `ps`
    // (and a test) sees each under its name. (Renamed after the fork, pid
    // 1 could still be "brisk" while the server already answered.)
    let mut own = [0u8; 16];
    // SAFETY: PR_GET_NAME writes at most 16 bytes, NUL-terminated, into
    // `own`; PR_SET_NAME reads a NUL-terminated name.
    unsafe {
        libc::prctl(libc::PR_GET_NAME, own.as_mut_ptr());
        libc::prctl(libc::PR_SET_NAME, c"brisk-init".as_ptr());
    }
    // SAFETY: `own` holds a NUL-terminated name (16 bytes at most).
    let own_name = || unsafe { libc::prctl(libc::PR_SET_NAME, own.as_ptr()) };
    // SAFETY: one thread (the caller's contract): the child may do
    // anything the parent could.
    let server = match cvt(unsafe { libc::fork() }) {
        Ok(pid) => pid,
        Err(e) => {
            own_name();
            // SAFETY: restores the mask read above.
            unsafe { libc::sigprocmask(libc::SIG_SETMASK, &before, std::ptr::null_mut()) };
            return Err(e);
        }
    };
    if server == 0 {
        own_name();
        UNDER_INIT.store(true, Ordering::Relaxed);
        // SAFETY: restores the mask brisk started with.
        unsafe { libc::sigprocmask(libc::SIG_SETMASK, &before, std::ptr::null_mut()) };
        return Ok(());
    }
    init(server, &all)
}

/// Whether a signal that came with `code` (its `si_code`) goes on to the
/// server: not one the kernel sent (a terminal's Ctrl-C, SIGINT to its
/// whole foreground process group: the server has its own already, and a
/// second stop signal would cut short its `stop_delay`).
fn passed_on(code: libc::c_int) -> bool {
    code != libc::SI_KERNEL
}

/// The init's loop: reaps every child it is given, passes every other
/// signal to `server`, and ends as `server` ends.
fn init(server: libc::pid_t, all: &libc::sigset_t) -> ! {
    loop {
        // SAFETY: plain old data, filled by the call.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: `all` is a valid set, all of it blocked; `info` a valid
        // out-pointer.
        let sig = unsafe { libc::sigwaitinfo(all, &mut info) };
        if sig == libc::SIGCHLD {
            loop {
                let mut status = 0;
                // SAFETY: `status` is a valid out-pointer; WNOHANG.
                let pid = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) };
                if pid <= 0 {
                    break;
                }
                if pid == server {
                    let code = match libc::WIFEXITED(status) {
                        true => libc::WEXITSTATUS(status),
                        // (As a shell says a signal's end.)
                        false => 128 + libc::WTERMSIG(status),
                    };
                    // SAFETY: ends this process; nothing of it needs
                    // flushing (it never wrote).
                    unsafe { libc::_exit(code) };
                }
            }
        } else if sig > 0 && passed_on(info.si_code) {
            // SAFETY: a plain signal to the server, its pid still its own
            // (not reaped: its end is this loop's to see).
            unsafe { libc::kill(server, sig) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A signal sent by a process (`kill`: a container's stop, `brisk
    /// --stop`) goes on; one from a terminal reached the server itself.
    #[test]
    fn what_a_process_sent_goes_on_and_a_terminal_s_does_not() {
        assert!(passed_on(libc::SI_USER));
        assert!(passed_on(libc::SI_QUEUE));
        assert!(!passed_on(libc::SI_KERNEL));
    }
}
