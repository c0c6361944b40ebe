//! A separate process that starts CGI programs, so that the server itself
//! can keep its strict sandbox (seccomp, and Landlock without the system
//! directories) while the programs get what they need to run.
//!
//! It is forked once (see `service`), before the server confines itself
//! and before any thread exists. The workers talk to it over one `SOCK_SEQPACKET` socket:
//! a spawn request carries the program, its working directory, arguments
//! and environment; the answer carries the child's pid and, as
//! `SCM_RIGHTS`, the server's ends of its three pipes and the read end of
//! a fourth, through which the launcher tells how the program ended
//! (its raw wait status, once it exited). The launcher owns
//! the children: it reaps them once a worker released them (not before:
//! a group outlives its leader, and a worker may still have it killed),
//! kills a process group when asked, and kills what a worker released
//! but still runs after the CGI timeout.
//! When the server goes away (the socket closes), it kills every group it
//! started and exits.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::service::{self, recv, send};
use super::spawn::{self, CgiChild, Command};

/// Largest request the launcher reads. The environment holds the
/// request's header lines; a message the socket cannot carry (its send
/// buffer, about 200 KiB by default) fails to send, and that request gets
/// an error answer.
const MAX_MESSAGE: usize = 1 << 20;

const SPAWN: u8 = b'S';
const KILL: u8 = b'K';
const RELEASE: u8 = b'R';

/// The server's end of the launcher's socket.
#[derive(Debug)]
pub struct Launcher {
    sock: Mutex<OwnedFd>,
}

impl Launcher {
    /// Forks the launcher. In the child, `confine` runs first (the
    /// programs' sandbox; its error is this call's), then it serves until
    /// the socket closes, killing released children still running after
    /// `cgi_timeout`. Call only while the process has a single thread.
    pub fn start<E: std::fmt::Display>(
        cgi_timeout: Duration,
        confine: impl FnOnce() -> Result<(), E>,
    ) -> io::Result<Launcher> {
        let (sock, _pid) = service::fork(c"brisk-cgi", confine, |sock| serve(sock, cgi_timeout))?;
        Ok(Launcher {
            sock: Mutex::new(sock),
        })
    }

    /// Starts `cmd` as [`spawn::spawn`] would, in the launcher; with the
    /// child, the pipe that will carry its exit status (see
    /// [`spawn::read_exit`]).
    pub fn spawn(&self, cmd: Command<'_>) -> io::Result<(CgiChild, OwnedFd)> {
        let mut msg = vec![SPAWN];
        let mut field = |b: &[u8]| {
            msg.extend_from_slice(b);
            msg.push(0);
        };
        field(cmd.program.as_os_str().as_bytes());
        field(cmd.cwd.as_os_str().as_bytes());
        field(cmd.args.len().to_string().as_bytes());
        for a in cmd.args {
            field(a.as_os_str().as_bytes());
        }
        for e in cmd.env {
            field(e.as_bytes());
        }
        let sock = self.sock.lock().unwrap_or_else(|e| e.into_inner());
        send(sock.as_raw_fd(), &msg, &[])?;
        let mut reply = [0u8; 8];
        let (n, fds) = recv(sock.as_raw_fd(), &mut reply)?;
        drop(sock);
        if n != 8 {
            return Err(io::Error::other("the CGI launcher is gone"));
        }
        let pid = i32::from_ne_bytes(reply[..4].try_into().expect("4 bytes"));
        let errno = i32::from_ne_bytes(reply[4..].try_into().expect("4 bytes"));
        if errno != 0 {
            return Err(io::Error::from_raw_os_error(errno));
        }
        let [stdin, stdout, stderr, exit]: [OwnedFd; 4] = fds
            .try_into()
            .map_err(|_| io::Error::other("the CGI launcher sent no pipes"))?;
        let child = CgiChild {
            pid,
            stdin,
            stdout,
            stderr,
        };
        Ok((child, exit))
    }

    /// Kills the process group of `pid` now.
    pub fn kill_group(&self, pid: i32) {
        self.notify(KILL, pid);
    }

    /// The server is done with `pid`: the launcher reaps it when it exits,
    /// and kills its group if it still runs after the CGI timeout.
    pub fn release(&self, pid: i32) {
        self.notify(RELEASE, pid);
    }

    fn notify(&self, what: u8, pid: i32) {
        let mut msg = [what, 0, 0, 0, 0];
        msg[1..].copy_from_slice(&pid.to_ne_bytes());
        let sock = self.sock.lock().unwrap_or_else(|e| e.into_inner());
        let _ = send(sock.as_raw_fd(), &msg, &[]);
    }
}

/// The CGI launchers of a server, one per set of `writable` directories:
/// a Landlock sandbox belongs to a process and every child inherits it,
/// so programs that may write to different places must start from
/// different launchers (one, with no writable directory, in the common
/// case).
#[derive(Debug, Default)]
pub struct Launchers {
    all: Vec<(Vec<PathBuf>, Launcher)>,
}

impl Launchers {
    /// Adds the launcher whose programs may write beneath `writable`.
    pub fn add(&mut self, writable: Vec<PathBuf>, launcher: Launcher) {
        self.all.push((writable, launcher));
    }

    /// Starts a program that may write beneath `writable` (exactly the
    /// set some launcher was started for), as [`Launcher::spawn`].
    pub fn spawn(&self, writable: &[PathBuf], cmd: Command<'_>) -> io::Result<(CgiChild, OwnedFd)> {
        match self.all.iter().find(|(w, _)| w.as_slice() == writable) {
            Some((_, l)) => l.spawn(cmd),
            None => Err(io::Error::other(
                "no CGI launcher was started for these writable paths (they changed since start; restart brisk)",
            )),
        }
    }

    /// Kills the process group of `pid` now. Every launcher is told; each
    /// acts only on its own children.
    pub fn kill_group(&self, pid: i32) {
        for (_, l) in &self.all {
            l.kill_group(pid);
        }
    }

    /// The server is done with `pid` (see [`Launcher::release`]).
    pub fn release(&self, pid: i32) {
        for (_, l) in &self.all {
            l.release(pid);
        }
    }
}

/// A child the launcher started: when the server released it, whether
/// its group was killed since, whether it exited, and where its exit
/// status goes.
struct Child {
    pid: i32,
    released: Option<Instant>,
    killed: bool,
    /// It exited and its status went to the server, but it is not
    /// reaped until the server releases it (see `serve`).
    exited: bool,
    exit: OwnedFd,
}

/// The launcher's loop.
fn serve(sock: OwnedFd, cgi_timeout: Duration) {
    let mut children: Vec<Child> = Vec::new();
    let mut buf = vec![0u8; MAX_MESSAGE];
    loop {
        let mut pfd = libc::pollfd {
            fd: sock.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd; a timeout bounds the wait so that
        // children are reaped and timed out without a signal handler.
        let ready = unsafe { libc::poll(&mut pfd, 1, 200) };
        if ready > 0 {
            match recv(sock.as_raw_fd(), &mut buf) {
                Ok((0, _)) | Err(_) => break,
                Ok((n, _)) => handle(&sock, &buf[..n], &mut children),
            }
        }
        let now = Instant::now();
        // A program that exited stays a zombie, its status told, until
        // the server releases it: what it started may still run in its
        // group (a background job holding its output), which the server
        // may yet have killed (its timeout, its client gone). The group's
        // id is the zombie's pid, which the kernel gives no other process
        // while the zombie is unreaped, so kill(-pid) can reach nothing
        // but what is left of that group. Reaped at once, as before, the
        // pid would be free, and the server's kill ignored (or, were it
        // sent, could hit a stranger's group once all of this one died).
        // Without the sandbox the worker holds its children the same way
        // (see `handlers::cgi::process`).
        children.retain_mut(|c| {
            if !c.exited {
                match spawn::peek_exit(c.pid) {
                    Ok(Some(status)) => {
                        spawn::write_exit(&c.exit, status);
                        c.exited = true;
                    }
                    Ok(None) => return true,
                    Err(_) => return false,
                }
            }
            if c.released.is_none() {
                return true;
            }
            // Released: reaped now, and forgotten.
            !matches!(spawn::try_reap(c.pid), Ok(Some(_)) | Err(_))
        });
        for c in &mut children {
            if !c.killed
                && c.released
                    .is_some_and(|t| now.duration_since(t) >= cgi_timeout)
            {
                spawn::kill_group(c.pid);
                c.killed = true;
            }
        }
    }
    // The server is gone: nothing it started outlives it.
    for c in &children {
        spawn::kill_group(c.pid);
    }
    for c in &children {
        let mut status = 0;
        // SAFETY: `status` is a valid out-pointer; the child was killed.
        unsafe { libc::waitpid(c.pid, &mut status, 0) };
    }
}

fn handle(sock: &OwnedFd, msg: &[u8], children: &mut Vec<Child>) {
    match msg.split_first() {
        Some((&SPAWN, rest)) => {
            let started = spawn::exit_pipe().and_then(|exit| Ok((start(rest)?, exit)));
            let (pid, errno, fds) = match started {
                Ok((child, (exit_r, exit_w))) => {
                    children.push(Child {
                        pid: child.pid,
                        released: None,
                        killed: false,
                        exited: false,
                        exit: exit_w,
                    });
                    let fds = vec![child.stdin, child.stdout, child.stderr, exit_r];
                    (child.pid, 0, fds)
                }
                Err(e) => (0, e.raw_os_error().unwrap_or(libc::EIO), Vec::new()),
            };
            let mut reply = [0u8; 8];
            reply[..4].copy_from_slice(&pid.to_ne_bytes());
            reply[4..].copy_from_slice(&errno.to_ne_bytes());
            let raw: Vec<RawFd> = fds.iter().map(AsRawFd::as_raw_fd).collect();
            let _ = send(sock.as_raw_fd(), &reply, &raw);
            // Our copies of the server's ends close here.
        }
        Some((&what, rest)) if rest.len() == 4 && (what == KILL || what == RELEASE) => {
            let pid = i32::from_ne_bytes(rest.try_into().expect("4 bytes"));
            // Only our own children: a pid that is not one is ignored.
            // (One that exited is still ours until it is released: see
            // `serve`.)
            if let Some(c) = children.iter_mut().find(|c| c.pid == pid) {
                if what == KILL {
                    spawn::kill_group(pid);
                    c.killed = true;
                } else {
                    c.released = Some(Instant::now());
                }
            }
        }
        _ => {}
    }
}

/// Decodes a spawn request and starts the program.
fn start(rest: &[u8]) -> io::Result<CgiChild> {
    let bad = || io::Error::from_raw_os_error(libc::EINVAL);
    let mut fields = rest.split(|&b| b == 0);
    let mut path = || {
        fields
            .next()
            .map(|f| PathBuf::from(std::ffi::OsStr::from_bytes(f)))
            .ok_or_else(bad)
    };
    let program = path()?;
    let cwd = path()?;
    let nargs: usize = path()?
        .to_str()
        .and_then(|s| s.parse().ok())
        .ok_or_else(bad)?;
    let mut args = Vec::with_capacity(nargs.min(64));
    for _ in 0..nargs {
        args.push(path()?);
    }
    // Every field ends with a NUL, so the split leaves one empty piece.
    let mut env = Vec::new();
    for f in fields {
        if !f.is_empty() {
            env.push(CString::new(f).map_err(|_| bad())?);
        }
    }
    spawn::spawn(Command {
        program: &program,
        args: &args,
        env: &env,
        cwd: &cwd,
    })
}
