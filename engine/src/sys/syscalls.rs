//! The system calls the running server makes: the seccomp allow-list.
//!
//! The filter is installed once everything is open (listeners, document
//! root, logs) and before any thread starts, so only what the event loops,
//! the log writer and the signal-waiting main thread do afterwards needs
//! to be here. The list was measured, not guessed: the integration suite
//! and a wrk/ab load run (small files, sendfile of large ones, ranges,
//! directory listings, 404s, log reopening on SIGUSR1, SIGHUP, a graceful
//! stop) ran under `strace -f`, and every call made by a brisk thread after
//! its `seccomp()` call was collected (`scripts/trace-syscalls` repeats
//! this). A few calls that those runs did not reach but the code can make
//! are added, each with its reason. Anything else fails with `EPERM`, so
//! a call missing here shows up as an error response or a log line, not as
//! a dead server.
//!
//! Not here on purpose: `execve`, `socket`, `bind`, `connect`, `ptrace`,
//! `mount`, `ioctl` and `setsockopt` (allowed apart, each with one request
//! or option only, see [`GUARDED`]; which also closes the `TIOCSTI`
//! terminal injection trick), and the process and credential calls. With `[[cgi]]` rules, programs start from a separate process
//! (`sys::launcher`) that has no filter, so the server keeps this one.

use super::sandbox::Guard;

/// Allowed system calls.
pub const ALLOWED: &[libc::c_long] = &[
    // Measured: connections and event loops.
    libc::SYS_accept4,
    libc::SYS_epoll_create1,
    libc::SYS_epoll_ctl,
    libc::SYS_eventfd2,
    libc::SYS_read,
    libc::SYS_write,
    libc::SYS_writev,
    libc::SYS_sendto,
    libc::SYS_sendfile,
    libc::SYS_close,
    libc::SYS_fcntl,
    // Measured: files beneath the root (openat2), logs (openat), listings.
    libc::SYS_openat,
    libc::SYS_openat2,
    libc::SYS_pread64,
    // (HTTP/2: a file's DATA frames read in one call, sys::interleave.)
    libc::SYS_preadv,
    libc::SYS_newfstatat,
    libc::SYS_getdents64,
    // Measured: memory, threads, signals, exit.
    libc::SYS_mmap,
    libc::SYS_munmap,
    libc::SYS_mprotect,
    libc::SYS_mremap,
    libc::SYS_madvise,
    libc::SYS_futex,
    libc::SYS_clone3,
    libc::SYS_rseq,
    libc::SYS_set_robust_list,
    libc::SYS_sigaltstack,
    libc::SYS_gettid,
    libc::SYS_prctl,
    libc::SYS_sched_getaffinity,
    libc::SYS_rt_sigaction,
    libc::SYS_rt_sigprocmask,
    libc::SYS_rt_sigtimedwait,
    libc::SYS_exit,
    libc::SYS_exit_group,
    // Not reached by the runs above, but made by the code:
    // the lingering close of a connection with unread input,
    libc::SYS_shutdown,
    // metadata through std and the file cache's fstat (and which file
    // the pid file is, at the end: musl's lstat is the call of its own),
    libc::SYS_fstat,
    libc::SYS_statx,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_lstat,
    libc::SYS_lseek,
    // the main thread's heap, and threads on kernels without clone3,
    libc::SYS_brk,
    libc::SYS_clone,
    // HashMap keys in a new thread, std's sleeps and yields, clocks
    // when the vDSO is unavailable,
    libc::SYS_getrandom,
    libc::SYS_sched_yield,
    libc::SYS_nanosleep,
    libc::SYS_clock_nanosleep,
    libc::SYS_clock_gettime,
    // a sleeping call resumed after SIGSTOP/SIGCONT, signal return,
    libc::SYS_restart_syscall,
    libc::SYS_rt_sigreturn,
    // abort() on a double panic,
    libc::SYS_getpid,
    libc::SYS_tgkill,
    // the pid file's removal and the symlink check (both spellings).
    libc::SYS_unlinkat,
    libc::SYS_readlinkat,
    libc::SYS_epoll_pwait,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_epoll_wait,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_unlink,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_readlink,
    // Servlets: each worker that runs them makes a timer on its own CPU
    // clock, whose signal ends a request's CPU budget
    // (`handlers::servlets::ffi::cpu`), and deletes it when it ends.
    libc::SYS_timer_create,
    libc::SYS_timer_settime,
    libc::SYS_timer_delete,
    // Talking to the CGI launcher: requests, and the pipes it sends back
    // (`SCM_RIGHTS`); HTTP/2's frames in cleartext gathered with the
    // mapped file's bytes (`sys::mapped`, which `mmap`s the files).
    libc::SYS_sendmsg,
    libc::SYS_recvmsg,
    // and checking that a script may run: whose file it is, against the
    // server's user and groups.
    libc::SYS_geteuid,
    libc::SYS_getegid,
    libc::SYS_getgroups,
    // SERVER_ADDR and SERVER_PORT: the connection's local address.
    libc::SYS_getsockname,
    // `[proxy] tls_listen`: the PROXY header is looked at in place
    // (`recv` with `MSG_PEEK`) before TLS reads the socket.
    libc::SYS_recvfrom,
    // Large files' ranges asked about before they are sent (and read in
    // off the loop, by `pread`, when not cached: `sys::cached`).
    libc::SYS_preadv2,
    super::cached::SYS_CACHESTAT,
    // A reload's check of each tree for a filesystem that finds names in
    // any case (`sys::fs::folds_case`: its kind).
    libc::SYS_statfs,
    // and its canonical roots: glibc's realpath(3) checks with
    // access(F_OK) that a directory is there before a `..` goes up from
    // it (`root = "../site"`: every reload was refused); and its
    // fallback where the kernel has no faccessat2 (before 5.8).
    libc::SYS_faccessat2,
    libc::SYS_faccessat,
    // Compression threads lower their own priority below the event
    // loops' as they start (`handlers::compress::cache`), also when a
    // reload starts them; raising it needs CAP_SYS_NICE, which a server
    // that left root does not have.
    libc::SYS_getpriority,
    libc::SYS_setpriority,
    // HTTP/3: a worker reads its UDP socket's datagrams many at a time
    // (`sys::net::recv_batch`).
    #[cfg(feature = "http3")]
    libc::SYS_recvmmsg,
    // musl (the static build) opens and stats with the old calls
    // (`scripts/trace-syscalls x86_64-unknown-linux-musl`).
    #[cfg(target_arch = "x86_64")]
    libc::SYS_open,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_stat,
];

/// The system calls of the privileged helper (`sys::privileged`) once it
/// has confined itself: its socket to the server, opening log files,
/// binding listeners, removing the pid file, memory, and exit. Measured
/// the same way (`strace -f` over the tests that reopen logs, bind on
/// reload and stop).
pub const PRIVILEGED: &[libc::c_long] = &[
    libc::SYS_recvmsg,
    libc::SYS_sendmsg,
    libc::SYS_close,
    // std's check (debug builds) that a descriptor it closes is open,
    libc::SYS_fcntl,
    // closing what it inherited, right after confining itself (without
    // close_range, before Linux 5.9: those /proc/self/fd lists),
    libc::SYS_close_range,
    libc::SYS_getdents64,
    // log files (as root: a symlink or a file root does not own is
    // refused, and a FIFO not waited on),
    libc::SYS_openat,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_open,
    libc::SYS_geteuid,
    // and made the user's brisk serves as (`fs::own_logs_as`),
    libc::SYS_fchown,
    // listeners,
    libc::SYS_socket,
    libc::SYS_setsockopt,
    libc::SYS_bind,
    libc::SYS_listen,
    // the pid file (which file it is before it is removed: still the
    // server's, not one a new brisk renamed over it in an upgrade),
    libc::SYS_unlinkat,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_unlink,
    libc::SYS_statx,
    libc::SYS_newfstatat,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_lstat,
    // (what an opened log is, and its flags: musl's fstat is the call of
    // its own),
    libc::SYS_fstat,
    // memory,
    libc::SYS_brk,
    libc::SYS_mmap,
    libc::SYS_munmap,
    libc::SYS_mremap,
    libc::SYS_madvise,
    // and signals and exit.
    libc::SYS_rt_sigreturn,
    libc::SYS_rt_sigprocmask,
    libc::SYS_restart_syscall,
    libc::SYS_exit,
    libc::SYS_exit_group,
];

/// Added to [`ALLOWED`] when the server forwards requests to upstreams
/// (`[[reverse_proxy]]`): a socket per upstream connection, connected
/// (non-blocking; Landlock then allows only the configured TCP ports),
/// and the pipes its answers are relayed through (`sys::splice`).
pub const UPSTREAMS: &[libc::c_long] = &[
    libc::SYS_socket,
    libc::SYS_connect,
    libc::SYS_pipe2,
    libc::SYS_splice,
];

/// Added to [`ALLOWED`] when a `[[webdav]]` tree is written: the pipes a
/// PUT's body goes through into its file (`sys::splice`; in
/// [`UPSTREAMS`] too).
pub const PIPES: &[libc::c_long] = &[libc::SYS_pipe2, libc::SYS_splice];

/// Added to [`ALLOWED`] when the server writes files shared by a fleet
/// (`[acme]`'s storage, a local CA's included; `[tls] ticket_keys`) or a
/// `[[webdav]]` tree (`unlinkat` is in [`ALLOWED`] already):
/// files written whole (`fsync`, `rename`, `mkdir`) and lock files
/// (`link` puts back a lock broken by mistake).
pub const STORAGE: &[libc::c_long] = &[
    libc::SYS_fsync,
    // (A WebDAV COPY's files, copied by the kernel: `webdav::copymove`.)
    libc::SYS_copy_file_range,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_rename,
    libc::SYS_renameat,
    libc::SYS_renameat2,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_mkdir,
    libc::SYS_mkdirat,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_link,
    libc::SYS_linkat,
];

/// Added to [`ALLOWED`] with a `[[webdav]]` rule: its dead properties
/// are the resources' extended attributes (`handlers::webdav::props`).
pub const XATTRS: &[libc::c_long] = &[
    libc::SYS_fgetxattr,
    libc::SYS_fsetxattr,
    libc::SYS_flistxattr,
    libc::SYS_fremovexattr,
    // listxattrat (Linux 6.13; `libc` does not name it yet): whether a
    // member has any, one call each in a PROPFIND (sys::listing).
    465,
    // The sidecar store's change, one process at a time (`Dir::lock`).
    libc::SYS_flock,
];

/// Added to [`ALLOWED`] (with [`STORAGE`] and [`UPSTREAMS`]) when the ACME
/// thread talks to a CA (`hosts` names a public name): its blocking HTTPS
/// requests (a connect with a timeout waits in `poll` and reads the
/// socket's error with `getsockopt`; read and write timeouts are
/// `setsockopt`).
pub const ACME_CA: &[libc::c_long] = &[
    #[cfg(target_arch = "x86_64")]
    libc::SYS_poll,
    libc::SYS_ppoll,
    libc::SYS_getsockopt,
    libc::SYS_setsockopt,
];

/// Calls allowed with these arguments only (added to [`ALLOWED`]).
pub const GUARDED: &[Guard] = &[
    // `ioctl` with `SIOCOUTQ` (`TIOCOUTQ`'s number; on a terminal it too
    // only reads a count), and nothing else of `ioctl`: how much a
    // socket's send queue holds (`sys::net::unsent`), asked when an idle
    // connection's keep-alive time is up (a slow reader is not idle), and
    // while a closing connection lingers (its answer still there).
    Guard {
        call: libc::SYS_ioctl,
        args: &[(1, libc::TIOCOUTQ as u32)],
    },
    // `TCP_NODELAY` on the connections a worker makes to its upstreams
    // (`handlers::proxy::dial`): with Nagle on, a request body or a
    // tunnel's bytes written while the kernel waits for the upstream's
    // ACK of the last write waited for its delayed ACK (40 ms a piece).
    // (Accepted connections inherit it from their listener.)
    Guard {
        call: libc::SYS_setsockopt,
        args: &[(1, libc::IPPROTO_TCP as u32), (2, libc::TCP_NODELAY as u32)],
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_duplicates_and_nothing_dangerous() {
        for list in [ALLOWED, PRIVILEGED] {
            let mut v = list.to_vec();
            v.sort_unstable();
            v.dedup();
            assert_eq!(v.len(), list.len());
        }
        for bad in [
            libc::SYS_execve,
            libc::SYS_ptrace,
            libc::SYS_setuid,
            libc::SYS_mount,
            libc::SYS_kill,
            libc::SYS_fchmodat,
            libc::SYS_connect,
        ] {
            assert!(!PRIVILEGED.contains(&bad), "{bad}");
        }
        for bad in [
            libc::SYS_execve,
            libc::SYS_execveat,
            libc::SYS_socket,
            libc::SYS_connect,
            libc::SYS_bind,
            libc::SYS_ptrace,
            libc::SYS_ioctl,
            libc::SYS_setuid,
            libc::SYS_mount,
        ] {
            assert!(!ALLOWED.contains(&bad), "{bad}");
        }
    }
}
