//! A separate process that starts CGI programs, so that the server itself
//! can keep its strict sandbox (seccomp, and Landlock without the system
//! directories) while the programs get what they need to run.
//!
//! It is forked once, before the server confines itself and before any
//! thread exists. The workers talk to it over one `SOCK_SEQPACKET` socket:
//! a spawn request carries the program, its working directory, arguments
//! and environment; the answer carries the child's pid and, as
//! `SCM_RIGHTS`, the server's ends of its three pipes. The launcher owns
//! the children: it reaps them, kills a process group when asked, and
//! kills what a worker released but still runs after the CGI timeout.
//! When the server goes away (the socket closes), it kills every group it
//! started and exits.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::process;
use super::spawn::{self, CgiChild};
use super::{cvt, cvt_size};

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
    /// programs' sandbox), then it serves until the socket closes, killing
    /// released children still running after `cgi_timeout`. Call only
    /// while the process has a single thread.
    pub fn start(cgi_timeout: Duration, confine: impl FnOnce()) -> io::Result<Launcher> {
        let mut fds = [0; 2];
        // SAFETY: `fds` has room for the two descriptors socketpair writes.
        cvt(unsafe {
            libc::socketpair(
                libc::AF_UNIX,
                libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC,
                0,
                fds.as_mut_ptr(),
            )
        })?;
        // SAFETY: both descriptors were just created and are owned by nobody else.
        let (ours, theirs) =
            unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        // SAFETY: the caller guarantees a single thread, so the child is a
        // faithful copy that may run ordinary code.
        let pid = cvt(unsafe { libc::fork() })?;
        if pid == 0 {
            drop(ours);
            // SAFETY: PR_SET_NAME reads a NUL-terminated name of at most
            // 16 bytes.
            unsafe { libc::prctl(libc::PR_SET_NAME, c"brisk-cgi".as_ptr()) };
            confine();
            let keep = theirs.as_raw_fd();
            close_all_but(keep);
            serve(theirs, cgi_timeout);
            // SAFETY: leaving the child without running the parent's
            // destructors or atexit handlers.
            unsafe { libc::_exit(0) };
        }
        drop(theirs);
        Ok(Launcher {
            sock: Mutex::new(ours),
        })
    }

    /// Starts `program` as [`spawn::spawn`] would, in the launcher.
    pub fn spawn(
        &self,
        program: &Path,
        args: &[PathBuf],
        env: &[CString],
        cwd: &Path,
    ) -> io::Result<CgiChild> {
        let mut msg = vec![SPAWN];
        let mut field = |b: &[u8]| {
            msg.extend_from_slice(b);
            msg.push(0);
        };
        field(program.as_os_str().as_bytes());
        field(cwd.as_os_str().as_bytes());
        field(args.len().to_string().as_bytes());
        for a in args {
            field(a.as_os_str().as_bytes());
        }
        for e in env {
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
        let [stdin, stdout, stderr]: [OwnedFd; 3] = fds
            .try_into()
            .map_err(|_| io::Error::other("the CGI launcher sent no pipes"))?;
        Ok(CgiChild {
            pid,
            stdin,
            stdout,
            stderr,
        })
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

/// A child the launcher started: when the server released it, and
/// whether its group was killed since.
struct Child {
    pid: i32,
    released: Option<Instant>,
    killed: bool,
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
        children.retain(|c| !matches!(spawn::try_reap(c.pid), Ok(Some(_)) | Err(_)));
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
            let (pid, errno, fds) = match start(rest) {
                Ok(child) => {
                    children.push(Child {
                        pid: child.pid,
                        released: None,
                        killed: false,
                    });
                    (child.pid, 0, vec![child.stdin, child.stdout, child.stderr])
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
    spawn::spawn(&program, &args, &env, &cwd)
}

/// Closes every descriptor but `keep` (and the standard three).
fn close_all_but(keep: RawFd) {
    let keep = keep as libc::c_uint;
    if keep > 3 {
        let _ = process::close_range(3, keep - 1, 0);
    }
    let _ = process::close_range(keep + 1, libc::c_uint::MAX, 0);
}

/// Sends one message with `fds` attached (`SCM_RIGHTS`).
fn send(sock: RawFd, data: &[u8], fds: &[RawFd]) -> io::Result<()> {
    let mut iov = libc::iovec {
        iov_base: data.as_ptr() as *mut libc::c_void,
        iov_len: data.len(),
    };
    let mut cbuf = [0u64; 8];
    // SAFETY: msghdr is plain old data; every pointer set below stays
    // valid for the call, and the control buffer (64 bytes, aligned for
    // cmsghdr) holds one header with up to 3 descriptors.
    unsafe {
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        if !fds.is_empty() {
            let len = std::mem::size_of_val(fds) as libc::c_uint;
            msg.msg_control = cbuf.as_mut_ptr().cast();
            msg.msg_controllen = libc::CMSG_SPACE(len) as _;
            let cmsg = libc::CMSG_FIRSTHDR(&msg);
            (*cmsg).cmsg_level = libc::SOL_SOCKET;
            (*cmsg).cmsg_type = libc::SCM_RIGHTS;
            (*cmsg).cmsg_len = libc::CMSG_LEN(len) as _;
            std::ptr::copy_nonoverlapping(
                fds.as_ptr().cast::<u8>(),
                libc::CMSG_DATA(cmsg),
                len as usize,
            );
        }
        cvt_size(libc::sendmsg(sock, &msg, libc::MSG_NOSIGNAL))?;
    }
    Ok(())
}

/// Receives one message into `buf`; returns its length and the
/// descriptors that came with it (close-on-exec).
fn recv(sock: RawFd, buf: &mut [u8]) -> io::Result<(usize, Vec<OwnedFd>)> {
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    let mut cbuf = [0u64; 8];
    let mut fds = Vec::new();
    // SAFETY: as in `send`; the kernel writes at most `msg_controllen`
    // bytes of control data, and each received descriptor is taken into
    // an OwnedFd exactly once.
    let n = unsafe {
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = cbuf.as_mut_ptr().cast();
        msg.msg_controllen = std::mem::size_of_val(&cbuf) as _;
        let n = loop {
            match cvt_size(libc::recvmsg(sock, &mut msg, libc::MSG_CMSG_CLOEXEC)) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                other => break other?,
            }
        };
        let mut cmsg = libc::CMSG_FIRSTHDR(&msg);
        while !cmsg.is_null() {
            if (*cmsg).cmsg_level == libc::SOL_SOCKET && (*cmsg).cmsg_type == libc::SCM_RIGHTS {
                let data = libc::CMSG_DATA(cmsg);
                let bytes = (*cmsg).cmsg_len as usize - (data as usize - cmsg as usize);
                for i in 0..bytes / std::mem::size_of::<RawFd>() {
                    let fd = std::ptr::read_unaligned(data.cast::<RawFd>().add(i));
                    fds.push(OwnedFd::from_raw_fd(fd));
                }
            }
            cmsg = libc::CMSG_NXTHDR(&msg, cmsg);
        }
        n
    };
    Ok((n, fds))
}
