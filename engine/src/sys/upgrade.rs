//! `brisk-upgrade`: a small process that starts a new brisk binary on
//! SIGUSR2 and hands it the listening sockets, so that an upgrade refuses
//! no connection (nginx's binary upgrade, without a master process).
//!
//! It is forked (see `service`) at start, before the server confines
//! itself, switches user or enters a chroot, so that the binary it starts
//! begins as brisk began: the same program path, arguments, working
//! directory, environment and identity, free of the sandbox (Landlock
//! and seccomp are inherited across `execve`, so the helper cannot be
//! confined itself). What the server may ask of it is narrow: take these
//! listening sockets, then start *the* program (the path brisk was
//! started from, fixed at the fork) with them. A compromised server can
//! make it do nothing else.
//!
//! The new brisk finds its sockets in `BRISK_UPGRADE` (`FD KIND ADDR`
//! entries, `;`-separated: the descriptor, what its clients speak, the
//! configured address it serves) and writes one byte to the pipe named
//! by `BRISK_UPGRADE_READY` once it serves; the old brisk reads the other
//! end (which the helper sends back) and then drains. The new process is
//! started through an intermediate child that exits at once, so that it
//! is nobody's child here (init, or the service manager, reaps it when
//! it ends) and outlives the old brisk and its helper, in a process group
//! of its own, so that an upgrade given up kills what it started too.

use std::ffi::OsString;
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::service::{self, recv, send};
use super::{cvt, systemd};

/// Descriptors, with one `KIND ADDR` line each; answered with 0.
const HAND: u8 = b'H';
/// Start the new binary with the descriptors handed; answered with the
/// errno (0), its pid, and the read end of its readiness pipe.
const START: u8 = b'S';
/// Give up the upgrade started last (its pid the argument, a native
/// `i32`): SIGKILL it and wait until it is gone (its descriptors, the
/// listening sockets among them, closed); answered with 0.
const ABANDON: u8 = b'K';

/// How long [`ABANDON`] waits for the killed process to be gone.
const GONE_WITHIN: i32 = 5000;

/// Descriptors per message (what `service::send` carries).
const PER_MESSAGE: usize = 8;

/// Environment variable naming the handed sockets.
pub const SOCKETS_VAR: &str = "BRISK_UPGRADE";
/// Environment variable naming the readiness pipe.
pub const READY_VAR: &str = "BRISK_UPGRADE_READY";
/// Environment variable saying that the previous brisk reads more than
/// "ready" on the pipe: `R` and the pid that serves (after a daemon's
/// fork), or `E` and why the new brisk will not serve.
pub const SAYS_VAR: &str = "BRISK_UPGRADE_SAYS";

/// The program to start, as brisk itself was started.
#[derive(Debug, Clone)]
pub struct Program {
    /// Its path (what `/proc/self/exe` named at start: a binary replaced
    /// since, by a rename, is the new one).
    pub path: PathBuf,
    /// Its arguments, `argv[0]` first.
    pub args: Vec<OsString>,
    /// The directory it started in.
    pub cwd: PathBuf,
}

/// The server's end of `brisk-upgrade`.
#[derive(Debug)]
pub struct Upgrader {
    sock: Mutex<OwnedFd>,
    /// The program it starts, for the lines about it.
    path: PathBuf,
}

/// A new brisk started: its pid, and the pipe it says "ready" on (the
/// read end, non-blocking; end of file: it exited first).
#[derive(Debug)]
pub struct Started {
    /// The new process.
    pub pid: i32,
    /// Readiness: one byte when it serves.
    pub ready: std::fs::File,
}

impl Upgrader {
    /// Forks the helper. Call only while the process has a single thread.
    pub fn start(program: Program) -> io::Result<Upgrader> {
        let (sock, _pid) = service::fork(
            c"brisk-upgrade",
            || Ok::<(), io::Error>(()),
            |sock| serve(sock, &program),
        )?;
        Ok(Upgrader {
            sock: Mutex::new(sock),
            path: program.path,
        })
    }

    /// The path of the program an upgrade starts.
    pub fn program(&self) -> &Path {
        &self.path
    }

    /// Hands the helper `sockets` (each with what its clients speak and
    /// the configured address it serves), then has it start the new
    /// binary with them.
    pub fn upgrade(&self, sockets: &[(RawFd, &str, SocketAddr)]) -> io::Result<Started> {
        let sock = self.sock.lock().unwrap_or_else(|e| e.into_inner());
        let ask = |msg: &[u8], fds: &[RawFd]| ask(sock.as_raw_fd(), msg, fds);
        for chunk in sockets.chunks(PER_MESSAGE) {
            let mut msg = vec![HAND];
            let mut fds = Vec::with_capacity(chunk.len());
            for (socket, kind, addr) in chunk {
                msg.extend_from_slice(format!("{kind} {addr}\n").as_bytes());
                fds.push(*socket);
            }
            ask(&msg, &fds)?;
        }
        let (reply, mut fds) = ask(&[START], &[])?;
        let ready = fds.pop().ok_or_else(gone)?;
        if reply.len() != 8 {
            return Err(gone());
        }
        let pid = i32::from_ne_bytes([reply[4], reply[5], reply[6], reply[7]]);
        let ready = std::fs::File::from(ready);
        set_nonblocking(ready.as_raw_fd())?;
        Ok(Started { pid, ready })
    }

    /// Gives up the new brisk `pid` that [`Upgrader::upgrade`] started:
    /// the helper (which has the identity brisk started with, as the new
    /// process may still have) kills it with SIGKILL and returns once it
    /// is gone, its copies of the listening sockets closed (or after 5 s).
    pub fn abandon(&self, pid: i32) -> io::Result<()> {
        let sock = self.sock.lock().unwrap_or_else(|e| e.into_inner());
        let mut msg = vec![ABANDON];
        msg.extend_from_slice(&pid.to_ne_bytes());
        ask(sock.as_raw_fd(), &msg, &[]).map(drop)
    }
}

fn gone() -> io::Error {
    io::Error::other("the upgrade helper (brisk-upgrade) is gone")
}

/// One request to the helper on `sock`; its answer (the errno first, 0)
/// and the descriptors that came with it.
fn ask(sock: RawFd, msg: &[u8], fds: &[RawFd]) -> io::Result<(Vec<u8>, Vec<OwnedFd>)> {
    send(sock, msg, fds).map_err(|_| gone())?;
    let mut reply = [0u8; 8];
    let (n, fds) = recv(sock, &mut reply).map_err(|_| gone())?;
    if n < 4 {
        return Err(gone());
    }
    match i32::from_ne_bytes([reply[0], reply[1], reply[2], reply[3]]) {
        0 => Ok((reply[..n].to_vec(), fds)),
        errno => Err(io::Error::from_raw_os_error(errno)),
    }
}

/// A new brisk the helper started: its pid, and a pidfd for it (none on
/// a kernel without pidfd_open, before 5.3), taken while it could not
/// have been reaped, so that a kill never reaches a process that reused
/// its pid.
struct Launched {
    pid: i32,
    pidfd: Option<OwnedFd>,
}

/// [`ABANDON`]: kills `launched` if it is the process `pid`, with its
/// process group (what it started: a wrapper script's child, which holds
/// copies of the sockets too), and waits until they are gone.
fn abandon(launched: &mut Option<Launched>, pid: i32) -> io::Result<()> {
    let Some(child) = launched.take_if(|l| l.pid == pid) else {
        return Err(io::Error::from_raw_os_error(libc::ESRCH));
    };
    let sent = match &child.pidfd {
        // SAFETY: pidfd_send_signal(2) with a pidfd this helper owns and
        // no siginfo.
        Some(pidfd) => unsafe {
            libc::syscall(
                libc::SYS_pidfd_send_signal,
                pidfd.as_raw_fd(),
                libc::SIGKILL,
                std::ptr::null::<libc::siginfo_t>(),
                0,
            )
        },
        // SAFETY: kill(2) on the pid this helper started (no pidfd).
        None => unsafe { libc::kill(child.pid, libc::SIGKILL) }.into(),
    };
    // (ESRCH: it has exited already, perhaps leaving its group.)
    let leader = if sent == -1 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    };
    // Its group, whose id is its pid (`spawn` made it a group leader):
    // the number is not given to another process while a member of the
    // group is left, so this reaches the new program's own and nothing
    // else (but for a group of that id made anew once they are all gone).
    // SAFETY: kill(2) with a negative pid signals a process group.
    let group = unsafe { libc::kill(-child.pid, libc::SIGKILL) } == 0;
    if let Some(pidfd) = &child.pidfd {
        // Readable once the process has exited (its descriptors closed).
        let mut poll = libc::pollfd {
            fd: pidfd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd.
        unsafe { libc::poll(&mut poll, 1, GONE_WITHIN) };
    }
    if group {
        // Until the group is empty (its members exited and reaped).
        let since = std::time::Instant::now();
        // SAFETY: signal 0 only asks whether the group has a member.
        while unsafe { libc::kill(-child.pid, 0) } == 0
            && since.elapsed() < std::time::Duration::from_millis(GONE_WITHIN as u64)
        {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }
    match (leader, group) {
        (Err(_), true) => Ok(()),
        (leader, _) => leader,
    }
}

fn set_nonblocking(fd: RawFd) -> io::Result<()> {
    // SAFETY: F_GETFL/F_SETFL on a descriptor this process owns.
    let flags = cvt(unsafe { libc::fcntl(fd, libc::F_GETFL) })?;
    // SAFETY: as above.
    cvt(unsafe { libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) }).map(drop)
}

/// The helper's loop: descriptors accumulate until START, which starts
/// the program with them and forgets them.
fn serve(sock: OwnedFd, program: &Program) {
    let mut handed: Vec<(OwnedFd, String)> = Vec::new();
    let mut launched: Option<Launched> = None;
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let (n, fds) = match recv(sock.as_raw_fd(), &mut buf) {
            Ok((0, _)) | Err(_) => return,
            Ok(got) => got,
        };
        let answer = match buf[..n].split_first() {
            Some((&HAND, lines)) => {
                let lines = String::from_utf8_lossy(lines);
                let lines: Vec<&str> = lines.lines().collect();
                if lines.len() == fds.len() {
                    handed.extend(fds.into_iter().zip(lines.iter().map(|l| l.to_string())));
                    Ok(None)
                } else {
                    Err(io::Error::from_raw_os_error(libc::EINVAL))
                }
            }
            Some((&START, [])) => {
                let started = launch(program, &handed);
                handed.clear();
                started.map(|(child, ready)| {
                    let pid = child.pid;
                    launched = Some(child);
                    Some((pid, ready))
                })
            }
            Some((&ABANDON, pid)) => match <[u8; 4]>::try_from(pid) {
                Ok(pid) => abandon(&mut launched, i32::from_ne_bytes(pid)).map(|()| None),
                Err(_) => Err(io::Error::from_raw_os_error(libc::EINVAL)),
            },
            _ => Err(io::Error::from_raw_os_error(libc::EINVAL)),
        };
        let mut reply = Vec::with_capacity(8);
        let mut fds = Vec::new();
        match answer {
            Ok(None) => reply.extend_from_slice(&0i32.to_ne_bytes()),
            Ok(Some((pid, ready))) => {
                reply.extend_from_slice(&0i32.to_ne_bytes());
                reply.extend_from_slice(&pid.to_ne_bytes());
                fds.push(ready);
            }
            Err(e) => reply.extend_from_slice(&e.raw_os_error().unwrap_or(libc::EIO).to_ne_bytes()),
        }
        let raw: Vec<RawFd> = fds.iter().map(AsRawFd::as_raw_fd).collect();
        let _ = send(sock.as_raw_fd(), &reply, &raw);
    }
}

/// Starts `program` with `handed` through an intermediate child; returns
/// the new process and the read end of its readiness pipe.
fn launch(program: &Program, handed: &[(OwnedFd, String)]) -> io::Result<(Launched, OwnedFd)> {
    let (ready_r, ready_w) = pipe()?;
    let (pid_r, pid_w) = pipe()?;
    // Closed by this helper once it holds a pidfd for the new process:
    // until then the intermediate child waits, so that the new process,
    // still its child, cannot be reaped (and its pid reused) meanwhile.
    let (go_r, go_w) = pipe()?;
    // SAFETY: the helper is single-threaded (forked before any thread
    // existed), so the child is a faithful copy that may run ordinary code.
    let child = cvt(unsafe { libc::fork() })?;
    if child == 0 {
        drop(ready_r);
        drop(pid_r);
        drop(go_w);
        // (A failure as its errno, negated: ENOENT for a binary gone.)
        let pid = spawn(program, handed, ready_w.as_raw_fd())
            .unwrap_or_else(|e| e.raw_os_error().unwrap_or(libc::EIO).wrapping_neg());
        let mut out = std::fs::File::from(pid_w);
        let _ = out.write_all(&pid.to_ne_bytes());
        let _ = std::fs::File::from(go_r).read(&mut [0u8; 1]);
        // SAFETY: leaving the intermediate child at once; the new brisk
        // is reparented.
        unsafe { libc::_exit(0) };
    }
    drop(ready_w);
    drop(pid_w);
    drop(go_r);
    let mut pid = [0u8; 4];
    let read = std::fs::File::from(pid_r).read_exact(&mut pid);
    let pid = i32::from_ne_bytes(pid);
    let pidfd = match (&read, pid) {
        (Ok(()), 1..) => pidfd_open(pid),
        _ => None,
    };
    drop(go_w);
    let mut status = 0;
    // SAFETY: `status` is a valid out-pointer; `child` is ours.
    unsafe { libc::waitpid(child, &mut status, 0) };
    read.map_err(|_| io::Error::other("the new brisk could not be started"))?;
    match pid {
        1.. => Ok((Launched { pid, pidfd }, ready_r)),
        errno => Err(io::Error::from_raw_os_error(match errno {
            0 => libc::EIO,
            _ => errno.wrapping_neg(),
        })),
    }
}

/// A pidfd for process `pid` (none where the kernel has no pidfd_open).
fn pidfd_open(pid: i32) -> Option<OwnedFd> {
    // SAFETY: pidfd_open(2) takes plain integers.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    // SAFETY: a new descriptor, owned by nobody else (pidfds are
    // close-on-exec).
    (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}

/// In the intermediate child: starts the program, its handed sockets and
/// readiness pipe kept open across `execve`.
fn spawn(program: &Program, handed: &[(OwnedFd, String)], ready: RawFd) -> io::Result<i32> {
    let described: Vec<String> = handed
        .iter()
        .map(|(fd, what)| format!("{} {what}", fd.as_raw_fd()))
        .collect();
    let mut keep: Vec<RawFd> = handed.iter().map(|(fd, _)| fd.as_raw_fd()).collect();
    keep.push(ready);
    let mut cmd = std::process::Command::new(&program.path);
    if let Some((argv0, rest)) = program.args.split_first() {
        cmd.arg0(argv0).args(rest);
    }
    // A process group of its own (as a daemon has), so that an upgrade
    // given up kills whatever it started with it (see `abandon`).
    cmd.current_dir(&program.cwd)
        .process_group(0)
        .env(SOCKETS_VAR, described.join(";"))
        .env(READY_VAR, ready.to_string())
        .env(SAYS_VAR, "1");
    // SAFETY: the closure runs in the new child between fork and exec and
    // only calls fcntl and sigprocmask (async-signal-safe).
    unsafe {
        cmd.pre_exec(move || {
            for &fd in &keep {
                if libc::fcntl(fd, libc::F_SETFD, 0) == -1 {
                    return Err(io::Error::last_os_error());
                }
            }
            // The signals brisk blocked at its start (HUP, INT, TERM,
            // USR1, USR2) are blocked in this helper too, and std keeps
            // the mask across its fork and exec: unblocked, so that the
            // new program starts as a program does (a new brisk blocks
            // them again itself) and `kill` stops it until then.
            let mut none = std::mem::MaybeUninit::<libc::sigset_t>::uninit();
            libc::sigemptyset(none.as_mut_ptr());
            if libc::sigprocmask(libc::SIG_SETMASK, none.as_ptr(), std::ptr::null_mut()) == -1 {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        });
    }
    Ok(cmd.spawn()?.id() as i32)
}

fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two descriptors pipe2 writes.
    cvt(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) })?;
    // SAFETY: both were just created and are owned by nobody else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// For a brisk started by an upgrade whose previous brisk reads why it
/// failed ([`SAYS_VAR`]): its own copy of the readiness pipe, for
/// [`say_failed`] (taken before [`handed_over`] takes the pipe, and
/// before the configuration is read, whose errors it says).
pub fn failure_pipe() -> Option<std::fs::File> {
    let fd: RawFd = std::env::var(READY_VAR).ok()?.parse().ok()?;
    std::env::var_os(SAYS_VAR)?;
    // (Single-threaded here: nothing reads the environment meanwhile.)
    std::env::remove_var(SAYS_VAR);
    // SAFETY: F_DUPFD_CLOEXEC makes a new descriptor of `fd` or fails.
    let copy = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 0) };
    // SAFETY: a new descriptor, owned by nobody else.
    (copy >= 0).then(|| unsafe { std::fs::File::from_raw_fd(copy) })
}

/// Tells the previous brisk, on `pipe` ([`failure_pipe`]), why this one
/// will not serve: one write, `E` then `why` (cut to what a pipe writes
/// whole).
pub fn say_failed(pipe: &std::fs::File, why: &str) {
    let mut msg = format!("E{why}").into_bytes();
    msg.truncate(libc::PIPE_BUF);
    let _ = (&*pipe).write(&msg);
}

/// Tells the previous brisk, on its readiness pipe, that this one serves:
/// `R`, then this process's id (a daemon's, after its fork), which a
/// previous brisk that does not ask ([`SAYS_VAR`]) reads as "ready" all
/// the same.
pub fn say_ready(ready: &std::fs::File) -> io::Result<()> {
    // `R`, then the pid's digits, written from the end.
    let mut said = [b'R'; 11];
    let (mut pid, mut at) = (std::process::id(), said.len());
    loop {
        at -= 1;
        said[at] = b'0' + (pid % 10) as u8;
        pid /= 10;
        if pid == 0 {
            break;
        }
    }
    said[at - 1] = b'R';
    (&*ready).write_all(&said[at - 1..])
}

/// What an upgraded brisk was handed (see the module documentation).
#[derive(Debug)]
pub struct Handover {
    /// The sockets: what its clients speak (`http`, `https`, `proxy`) and
    /// the configured address each serves.
    pub sockets: Vec<(TcpListener, String, SocketAddr)>,
    /// QUIC's UDP sockets (kind `h3`), each with the configured address
    /// it serves.
    pub udp: Vec<(std::net::UdpSocket, SocketAddr)>,
    /// Where to say "ready".
    pub ready: std::fs::File,
}

/// The sockets and readiness pipe the previous brisk handed over, if this
/// process was started by an upgrade; the variables are removed.
pub fn handed_over() -> io::Result<Option<Handover>> {
    let sockets = std::env::var(SOCKETS_VAR).ok();
    let ready = std::env::var(READY_VAR).ok();
    // (Single-threaded here: nothing reads the environment meanwhile.)
    std::env::remove_var(SOCKETS_VAR);
    std::env::remove_var(READY_VAR);
    let (Some(sockets), Some(ready)) = (sockets, ready) else {
        return Ok(None);
    };
    let bad = |what: &str| io::Error::other(format!("{SOCKETS_VAR}: {what}"));
    let ready: RawFd = ready
        .parse()
        .map_err(|_| bad("the readiness descriptor is not a number"))?;
    let (mut out, mut udp) = (Vec::new(), Vec::new());
    for entry in sockets.split(';').filter(|e| !e.is_empty()) {
        let mut parts = entry.splitn(3, ' ');
        let (Some(fd), Some(kind), Some(addr)) = (parts.next(), parts.next(), parts.next()) else {
            return Err(bad(&format!("{entry:?} is not \"FD KIND ADDRESS\"")));
        };
        let fd: RawFd = fd
            .parse()
            .map_err(|_| bad(&format!("{entry:?}: not a descriptor")))?;
        let addr: SocketAddr = addr
            .parse()
            .map_err(|_| bad(&format!("{entry:?}: not an address")))?;
        let fail = |e: io::Error| bad(&format!("descriptor {fd}: {e}"));
        if kind == "h3" {
            udp.push((systemd::adopt_udp(fd).map_err(fail)?, addr));
            continue;
        }
        let socket = systemd::adopt(fd).map_err(fail)?;
        out.push((socket, kind.to_string(), addr));
    }
    // SAFETY: F_GETFD only asks whether the descriptor is open.
    cvt(unsafe { libc::fcntl(ready, libc::F_GETFD) })?;
    // SAFETY: the descriptor was handed to this process to own (the
    // variable named it, and is gone).
    let file = unsafe { std::fs::File::from_raw_fd(ready) };
    // SAFETY: F_SETFD on a descriptor this process owns.
    cvt(unsafe { libc::fcntl(ready, libc::F_SETFD, libc::FD_CLOEXEC) })?;
    Ok(Some(Handover {
        sockets: out,
        udp,
        ready: file,
    }))
}
