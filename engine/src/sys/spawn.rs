//! Starting CGI programs (RFC 3875) and cleaning up after them.
//!
//! A child runs in its own process group, so a timeout can kill it and
//! everything it started (`kill_group`). Our ends of its pipes are
//! non-blocking, ready to register in an event loop. Nothing here waits:
//! the loop reaps with [`try_reap`] when it sees the pipes close.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use super::{cvt, cvt_size};

/// A running CGI program and our ends of its standard streams.
#[derive(Debug)]
pub struct CgiChild {
    /// Process id, also its process group id.
    pub pid: i32,
    /// Write end of the child's stdin (the request body), non-blocking.
    pub stdin: OwnedFd,
    /// Read end of the child's stdout (the response), non-blocking.
    pub stdout: OwnedFd,
    /// Read end of the child's stderr (for the error log), non-blocking.
    pub stderr: OwnedFd,
}

/// A program to start, as every layer that starts one passes it on
/// (the CGI handler, the launchers, [`spawn`]).
#[derive(Debug, Clone, Copy)]
pub struct Command<'a> {
    /// What to execute (`argv[0]`).
    pub program: &'a Path,
    /// The arguments after `argv[0]`.
    pub args: &'a [PathBuf],
    /// Exactly the environment it gets, each entry `NAME=value`.
    pub env: &'a [CString],
    /// The directory it starts in.
    pub cwd: &'a Path,
}

/// Starts `cmd.program` with `cmd.args`, exactly the environment
/// `cmd.env`, in `cmd.cwd`, as the leader of a new process group.
///
/// It uses `posix_spawn`, which glibc implements with
/// `clone(CLONE_VM | CLONE_VFORK)`: no page tables are copied and the
/// worker is held only until the child has called exec, which makes a CGI
/// request markedly cheaper than with fork. The child starts with an empty
/// signal mask and every signal at its default disposition, whatever the
/// server blocks (it blocks SIGINT/SIGTERM/SIGHUP/SIGUSR1 in every
/// thread). It inherits only its three pipes (every other descriptor is
/// closed in the child, also any the server inherited). A program that
/// cannot be executed is an error here (glibc reports the exec's errno).
pub fn spawn(cmd: Command<'_>) -> io::Result<CgiChild> {
    let Command {
        program,
        args,
        env,
        cwd,
    } = cmd;
    let c = |p: &Path| {
        CString::new(p.as_os_str().as_bytes())
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "NUL in a path"))
    };
    if env.iter().any(|e| !e.as_bytes().contains(&b'=')) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "env entry without '='",
        ));
    }
    let prog = c(program)?;
    let cwd = c(cwd)?;
    let argv_owned: Vec<CString> = args.iter().map(|a| c(a)).collect::<io::Result<_>>()?;
    let mut argv: Vec<*mut libc::c_char> = Vec::with_capacity(args.len() + 2);
    argv.push(prog.as_ptr() as *mut libc::c_char);
    argv.extend(argv_owned.iter().map(|a| a.as_ptr() as *mut libc::c_char));
    argv.push(std::ptr::null_mut());
    let mut envp: Vec<*mut libc::c_char> = env
        .iter()
        .map(|e| e.as_ptr() as *mut libc::c_char)
        .collect();
    envp.push(std::ptr::null_mut());

    let (stdin_r, stdin_w) = pipe()?;
    let (stdout_r, stdout_w) = pipe()?;
    let (stderr_r, stderr_w) = pipe()?;
    for fd in [&stdin_w, &stdout_r, &stderr_r] {
        set_nonblocking(fd.as_raw_fd())?;
    }
    let mut pid: libc::pid_t = 0;
    // SAFETY: the attribute and file-action objects are initialised before
    // use and destroyed after; every pointer passed (program, argv, envp,
    // cwd) points to NUL-terminated data that outlives the call, and argv
    // and envp end with a null pointer.
    let ret = unsafe {
        let mut actions: libc::posix_spawn_file_actions_t = std::mem::zeroed();
        let mut attr: libc::posix_spawnattr_t = std::mem::zeroed();
        libc::posix_spawn_file_actions_init(&mut actions);
        libc::posix_spawnattr_init(&mut attr);
        let mut rc = 0;
        for (from, to) in [(&stdin_r, 0), (&stdout_w, 1), (&stderr_w, 2)] {
            if rc == 0 {
                rc = libc::posix_spawn_file_actions_adddup2(&mut actions, from.as_raw_fd(), to);
            }
        }
        // Nothing but the three pipes: not even a descriptor the server
        // inherited without close-on-exec (glibc ≥ 2.34). musl has no
        // such action; there `process::cloexec_inherited` marked every
        // inherited descriptor close-on-exec at start, and brisk opens
        // all of its own that way.
        #[cfg(target_env = "gnu")]
        if rc == 0 {
            rc = libc::posix_spawn_file_actions_addclosefrom_np(&mut actions, 3);
        }
        if rc == 0 {
            rc = libc::posix_spawn_file_actions_addchdir_np(&mut actions, cwd.as_ptr());
        }
        let mut empty: libc::sigset_t = std::mem::zeroed();
        let mut all: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut empty);
        libc::sigfillset(&mut all);
        let flags = libc::POSIX_SPAWN_SETSIGMASK
            | libc::POSIX_SPAWN_SETSIGDEF
            | libc::POSIX_SPAWN_SETPGROUP;
        if rc == 0 {
            rc = libc::posix_spawnattr_setflags(&mut attr, flags as libc::c_short);
        }
        if rc == 0 {
            rc = libc::posix_spawnattr_setsigmask(&mut attr, &empty);
        }
        if rc == 0 {
            rc = libc::posix_spawnattr_setsigdefault(&mut attr, &all);
        }
        if rc == 0 {
            rc = libc::posix_spawnattr_setpgroup(&mut attr, 0);
        }
        if rc == 0 {
            rc = libc::posix_spawn(
                &mut pid,
                prog.as_ptr(),
                &actions,
                &attr,
                argv.as_ptr(),
                envp.as_ptr(),
            );
        }
        libc::posix_spawn_file_actions_destroy(&mut actions);
        libc::posix_spawnattr_destroy(&mut attr);
        rc
    };
    if ret != 0 {
        return Err(io::Error::from_raw_os_error(ret));
    }
    // The child's ends are closed here as they drop; ours stay.
    drop((stdin_r, stdout_w, stderr_w));
    Ok(CgiChild {
        pid,
        stdin: stdin_w,
        stdout: stdout_r,
        stderr: stderr_r,
    })
}

/// A close-on-exec pipe whose read end does not block: (read end,
/// write end). The CGI launcher tells a worker through one how the
/// program it started ended (see [`read_exit`]).
pub fn exit_pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let (r, w) = pipe()?;
    set_nonblocking(r.as_raw_fd())?;
    Ok((r, w))
}

/// Writes the raw wait `status` of a reaped child into an [`exit_pipe`]'s
/// write end (four bytes: a pipe takes them whole or not at all).
pub fn write_exit(w: &OwnedFd, status: i32) {
    let b = status.to_ne_bytes();
    // SAFETY: `b` is valid for its length; a failure (the reader is
    // gone) needs no handling.
    unsafe { libc::write(w.as_raw_fd(), b.as_ptr().cast(), b.len()) };
}

/// Reads what [`write_exit`] wrote: `Ok(Some(status))`, `Ok(None)` while
/// nothing is there yet, `Err` once it never will be (the write end
/// closed without a status).
pub fn read_exit(r: &OwnedFd) -> io::Result<Option<i32>> {
    let mut b = [0u8; 4];
    // SAFETY: `b` is valid for its length.
    match cvt_size(unsafe { libc::read(r.as_raw_fd(), b.as_mut_ptr().cast(), b.len()) }) {
        Ok(4) => Ok(Some(i32::from_ne_bytes(b))),
        Ok(_) => Err(io::Error::from(io::ErrorKind::UnexpectedEof)),
        Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(None),
        Err(e) => Err(e),
    }
}

/// A close-on-exec pipe: (read end, write end).
fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two descriptors pipe2 writes.
    cvt(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) })?;
    // SAFETY: both descriptors were just created and are owned by nobody else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

fn set_nonblocking(fd: RawFd) -> io::Result<()> {
    // SAFETY: `fd` is an open descriptor we own; F_GETFL takes no argument.
    let flags = cvt(unsafe { libc::fcntl(fd, libc::F_GETFL) })?;
    // SAFETY: as above; F_SETFL takes an int of flags.
    cvt(unsafe { libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) })?;
    Ok(())
}

/// Sends SIGKILL to the process group `pid` (the child and whatever it
/// started). A group that is already gone is not an error. A `pid` below
/// 2 is ignored: `kill(0)` or `kill(-1)` would hit the server itself or
/// every process it may signal.
pub fn kill_group(pid: i32) {
    if pid < 2 {
        return;
    }
    // SAFETY: plain syscall; the negative pid names one process group.
    // Errors (ESRCH: already gone) need no handling.
    unsafe { libc::kill(-pid, libc::SIGKILL) };
}

/// Reaps the child `pid` if it has exited: `Some(raw wait status)` once
/// reaped (see [`Exit::from_status`]), `None` while it runs. After
/// `Some`, the pid is free for reuse: never signal or reap it again.
pub fn try_reap(pid: i32) -> io::Result<Option<i32>> {
    if pid < 2 {
        // waitpid(0) or waitpid(-1) would reap someone else's child.
        return Err(io::Error::from(io::ErrorKind::InvalidInput));
    }
    let mut status = 0;
    // SAFETY: `status` is a valid out-pointer; WNOHANG never blocks.
    let r = cvt(unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) })?;
    Ok(if r == 0 { None } else { Some(status) })
}

/// The raw wait status of the child `pid` if it has exited (as
/// [`try_reap`] gives it), `None` while it runs; but the child is left
/// unreaped, a zombie, until [`try_reap`] takes it. Until then its pid,
/// which is also its process group's id, cannot go to another process:
/// [`kill_group`] can reach only what is left of the group it led.
pub fn peek_exit(pid: i32) -> io::Result<Option<i32>> {
    if pid < 2 {
        return Err(io::Error::from(io::ErrorKind::InvalidInput));
    }
    // SAFETY: plain old data, filled by the kernel.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    let flags = libc::WEXITED | libc::WNOHANG | libc::WNOWAIT;
    // SAFETY: `info` is a valid out-pointer; WNOHANG never blocks, and
    // WNOWAIT leaves the child waitable.
    cvt(unsafe { libc::waitid(libc::P_PID, pid as libc::id_t, &mut info, flags) })?;
    // SAFETY: waitid filled the fields of a child's state change, or left
    // `si_pid` 0 when none has happened (it was zeroed).
    let (who, code, value) = unsafe { (info.si_pid(), info.si_code, info.si_status()) };
    if who == 0 {
        return Ok(None);
    }
    // The status as wait(2) would encode it (what `Exit::from_status`
    // and the launcher's exit pipe take).
    Ok(Some(match code {
        libc::CLD_EXITED => (value & 0xff) << 8,
        libc::CLD_DUMPED => (value & 0x7f) | 0x80,
        _ => value & 0x7f,
    }))
}

/// How a reaped child ended, for the error log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// It called `exit` with this code.
    Code(i32),
    /// A signal killed it.
    Signal(i32),
}

impl Exit {
    /// Whether it ended well (exit code 0).
    pub fn success(self) -> bool {
        self == Exit::Code(0)
    }

    /// Decodes a raw status from [`try_reap`].
    pub fn from_status(status: i32) -> Exit {
        if libc::WIFSIGNALED(status) {
            Exit::Signal(libc::WTERMSIG(status))
        } else {
            Exit::Code(libc::WEXITSTATUS(status))
        }
    }
}

impl std::fmt::Display for Exit {
    /// `exited with status 3`, `was killed by signal 11 (SIGSEGV)`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            Exit::Code(c) => write!(f, "exited with status {c}"),
            Exit::Signal(s) => {
                write!(f, "was killed by signal {s}")?;
                let name = match s {
                    libc::SIGHUP => "SIGHUP",
                    libc::SIGINT => "SIGINT",
                    libc::SIGQUIT => "SIGQUIT",
                    libc::SIGILL => "SIGILL",
                    libc::SIGABRT => "SIGABRT",
                    libc::SIGBUS => "SIGBUS",
                    libc::SIGFPE => "SIGFPE",
                    libc::SIGKILL => "SIGKILL",
                    libc::SIGSEGV => "SIGSEGV",
                    libc::SIGPIPE => "SIGPIPE",
                    libc::SIGALRM => "SIGALRM",
                    libc::SIGTERM => "SIGTERM",
                    libc::SIGXCPU => "SIGXCPU",
                    libc::SIGXFSZ => "SIGXFSZ",
                    libc::SIGSYS => "SIGSYS",
                    _ => return Ok(()),
                };
                write!(f, " ({name})")
            }
        }
    }
}

/// What a CGI script needs from the server's user.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// To be read by an interpreter.
    Read,
    /// To be executed directly.
    Execute,
}

/// Whether this process's effective user and groups may read or execute
/// the file open (`O_PATH` suffices) at `fd`, by its permission bits
/// alone (like `access(2)` with `AT_EACCESS`; ACLs are not consulted).
/// Root may read anything and execute what has any execute bit.
pub fn permitted(fd: BorrowedFd<'_>, access: Access) -> io::Result<bool> {
    // SAFETY: plain old data written by the kernel.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: `fd` is open and `st` is a valid out-pointer.
    cvt(unsafe { libc::fstat(fd.as_raw_fd(), &mut st) })?;
    let mode = st.st_mode;
    let (any, owner, group, other) = match access {
        Access::Read => (0o444, 0o400, 0o040, 0o004),
        Access::Execute => (0o111, 0o100, 0o010, 0o001),
    };
    // SAFETY: plain syscalls without arguments; they cannot fail.
    let (uid, gid) = unsafe { (libc::geteuid(), libc::getegid()) };
    if uid == 0 {
        return Ok(access == Access::Read || mode & any != 0);
    }
    if st.st_uid == uid {
        return Ok(mode & owner != 0);
    }
    if st.st_gid == gid || in_groups(st.st_gid)? {
        return Ok(mode & group != 0);
    }
    Ok(mode & other != 0)
}

/// Whether `gid` is one of this process's supplementary groups.
fn in_groups(gid: libc::gid_t) -> io::Result<bool> {
    // SAFETY: a size of 0 asks for the count only; the pointer is unused.
    let n = cvt(unsafe { libc::getgroups(0, std::ptr::null_mut()) })?;
    let mut groups: Vec<libc::gid_t> = vec![0; n as usize];
    // SAFETY: `groups` has room for `n` entries.
    let n = cvt(unsafe { libc::getgroups(n, groups.as_mut_ptr()) })?;
    Ok(groups[..n as usize].contains(&gid))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::time::{Duration, Instant};

    fn sh(script: &str, env: &[&str]) -> CgiChild {
        let env: Vec<CString> = env.iter().map(|e| CString::new(*e).unwrap()).collect();
        spawn(Command {
            program: Path::new("/bin/sh"),
            args: &[PathBuf::from("-c"), PathBuf::from(script)],
            env: &env,
            cwd: Path::new("/tmp"),
        })
        .unwrap()
    }

    /// Reads a non-blocking descriptor to EOF (giving up after 10 s).
    fn read_all(fd: OwnedFd) -> Vec<u8> {
        let mut f = std::fs::File::from(fd);
        let mut out = Vec::new();
        let mut buf = [0u8; 4096];
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            match f.read(&mut buf) {
                Ok(0) => return out,
                Ok(n) => out.extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    assert!(Instant::now() < deadline, "no EOF");
                    std::thread::sleep(Duration::from_millis(5));
                }
                Err(e) => panic!("{e}"),
            }
        }
    }

    /// Polls [`try_reap`] until the child is reaped.
    fn reap(pid: i32) -> i32 {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(status) = try_reap(pid).unwrap() {
                return status;
            }
            assert!(Instant::now() < deadline, "child {pid} not reaped");
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    fn proc_status(pid: i32) -> Option<String> {
        std::fs::read_to_string(format!("/proc/{pid}/status")).ok()
    }

    #[test]
    fn clean_environment_cwd_and_stdin() {
        let c = sh(
            "echo \"$FOO|$HOME|$(pwd)\"; cat; echo err >&2; exit 3",
            &["FOO=a=b", "PATH=/bin:/usr/bin"],
        );
        let mut stdin = std::fs::File::from(c.stdin);
        stdin.write_all(b"body bytes\n").unwrap();
        drop(stdin);
        let tmp = std::fs::canonicalize("/tmp").unwrap();
        let out = read_all(c.stdout);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            format!("a=b||{}\nbody bytes\n", tmp.display())
        );
        assert_eq!(read_all(c.stderr), b"err\n");
        assert_eq!(Exit::from_status(reap(c.pid)), Exit::Code(3));
        assert!(proc_status(c.pid).is_none(), "zombie left behind");
        assert!(try_reap(c.pid).is_err(), "reaped twice");
    }

    #[test]
    fn pipes_are_non_blocking_and_child_has_only_three_fds() {
        // As `process::run` does at start (musl cannot close them in the child).
        crate::sys::process::cloexec_inherited().unwrap();
        let c = sh("ls /proc/self/fd", &[]);
        for fd in [&c.stdin, &c.stdout, &c.stderr] {
            // SAFETY: test-only fcntl query on an open descriptor.
            let flags = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_GETFL) };
            assert_ne!(flags & libc::O_NONBLOCK, 0);
        }
        // ls sees 0, 1, 2 and its own directory descriptor.
        let out = String::from_utf8(read_all(c.stdout)).unwrap();
        assert_eq!(out.split_whitespace().count(), 4, "{out}");
        reap(c.pid);
    }

    #[test]
    fn signal_mask_is_empty_and_sigpipe_and_sigxfsz_default() {
        let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
        let mut old: libc::sigset_t = unsafe { std::mem::zeroed() };
        // SAFETY: test-only: block what the server blocks, in this thread.
        unsafe {
            libc::sigemptyset(&mut set);
            for s in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGUSR1] {
                libc::sigaddset(&mut set, s);
            }
            assert_eq!(libc::pthread_sigmask(libc::SIG_BLOCK, &set, &mut old), 0);
            // (And ignore what the server ignores: `signal::block`.)
            libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
        }
        let c = spawn(Command {
            program: Path::new("/bin/sleep"),
            args: &[PathBuf::from("10")],
            env: &[],
            cwd: Path::new("/"),
        });
        // SAFETY: restore the test thread's mask.
        unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut()) };
        let c = c.unwrap();
        let status = proc_status(c.pid).unwrap();
        let field = |name: &str| {
            let line = status.lines().find(|l| l.starts_with(name)).unwrap();
            u64::from_str_radix(line[name.len()..].trim(), 16).unwrap()
        };
        assert_eq!(field("SigBlk:"), 0, "{status}");
        for s in [libc::SIGPIPE, libc::SIGXFSZ] {
            assert_eq!(field("SigIgn:") & (1 << (s - 1)), 0, "{s}: {status}");
        }
        // Its own process group.
        // SAFETY: plain syscall.
        assert_eq!(unsafe { libc::getpgid(c.pid) }, c.pid);
        kill_group(c.pid);
        assert_eq!(Exit::from_status(reap(c.pid)), Exit::Signal(libc::SIGKILL));
    }

    #[test]
    fn kill_group_takes_grandchildren_too() {
        let c = sh("sleep 30 & echo $!; wait", &[]);
        // Read the grandchild's pid (the first line) without waiting for EOF.
        let mut f = std::fs::File::from(c.stdout);
        let mut line = Vec::new();
        let deadline = Instant::now() + Duration::from_secs(10);
        while !line.ends_with(b"\n") {
            let mut b = [0u8; 64];
            match f.read(&mut b) {
                Ok(0) => panic!("EOF before the pid"),
                Ok(n) => line.extend_from_slice(&b[..n]),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    assert!(Instant::now() < deadline);
                    std::thread::sleep(Duration::from_millis(5));
                }
                Err(e) => panic!("{e}"),
            }
        }
        let grandchild: i32 = std::str::from_utf8(&line).unwrap().trim().parse().unwrap();
        assert!(proc_status(grandchild).is_some());
        kill_group(c.pid);
        assert_eq!(Exit::from_status(reap(c.pid)), Exit::Signal(libc::SIGKILL));
        // The grandchild is not ours to reap: it is gone, or a zombie
        // waiting for init.
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            match proc_status(grandchild) {
                None => break,
                Some(s) if s.contains("State:\tZ") => break,
                Some(_) => assert!(Instant::now() < deadline, "grandchild survived"),
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        kill_group(c.pid); // already gone: no error, no effect
    }

    #[test]
    fn running_child_is_not_reaped_and_bad_pids_are_refused() {
        let c = sh("sleep 10", &[]);
        assert_eq!(try_reap(c.pid).unwrap(), None);
        kill_group(c.pid);
        reap(c.pid);
        assert!(try_reap(0).is_err());
        assert!(try_reap(-1).is_err());
        kill_group(0);
        kill_group(-1);
    }

    #[test]
    fn an_exit_is_seen_without_reaping_the_child() {
        // A code, then a signal: the status each time as try_reap gives
        // it, while the child stays a zombie (its pid held) until reaped.
        for (script, want) in [
            ("exit 3", Exit::Code(3)),
            ("kill -TERM $$", Exit::Signal(libc::SIGTERM)),
        ] {
            let c = sh(script, &[]);
            let deadline = Instant::now() + Duration::from_secs(10);
            let status = loop {
                if let Some(status) = peek_exit(c.pid).unwrap() {
                    break status;
                }
                assert!(Instant::now() < deadline, "{script}: no exit");
                std::thread::sleep(Duration::from_millis(5));
            };
            assert_eq!(Exit::from_status(status), want, "{script}");
            assert!(
                proc_status(c.pid).unwrap().contains("State:\tZ"),
                "{script}"
            );
            assert_eq!(peek_exit(c.pid).unwrap(), Some(status), "seen again");
            assert_eq!(try_reap(c.pid).unwrap(), Some(status), "{script}");
            assert!(proc_status(c.pid).is_none(), "{script}: reaped");
        }
        let c = sh("sleep 10", &[]);
        assert_eq!(peek_exit(c.pid).unwrap(), None, "still running");
        kill_group(c.pid);
        reap(c.pid);
        assert!(peek_exit(0).is_err() && peek_exit(-1).is_err());
    }

    #[test]
    fn missing_program_fails_to_spawn() {
        let run = |program: &str, env: &[CString]| {
            spawn(Command {
                program: Path::new(program),
                args: &[],
                env,
                cwd: Path::new("/"),
            })
        };
        let e = run("/no/such/program", &[]).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::NotFound);
        let bad = [CString::new("NOEQUALS").unwrap()];
        let e = run("/bin/true", &bad).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
    }

    #[test]
    fn permissions_by_mode() {
        let dir = std::env::temp_dir().join(format!("brisk-spawn-perm-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let check = |mode: u32| {
            use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
            let p = dir.join(format!("f{mode:o}"));
            std::fs::write(&p, b"x").unwrap();
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
            // O_PATH: no read permission is needed to look at the mode.
            let f = std::fs::OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_PATH)
                .open(&p)
                .unwrap();
            (
                permitted(f.as_fd(), Access::Read).unwrap(),
                permitted(f.as_fd(), Access::Execute).unwrap(),
            )
        };
        use std::os::fd::AsFd;
        // SAFETY: plain syscall.
        let root = unsafe { libc::geteuid() } == 0;
        assert_eq!(check(0o755), (true, true));
        assert_eq!(check(0o644), (true, false));
        // Owner bits decide for the owner, even when others may do more.
        assert_eq!(check(0o077), (root, root));
        assert_eq!(check(0o001), (root, root));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
