//! Helper processes: forked before any thread exists, each serves the
//! server over one `SOCK_SEQPACKET` socket, one message per request and
//! per answer, with descriptors passed along as `SCM_RIGHTS`. The CGI
//! launcher (`launcher`) and the privileged helper (`privileged`) are
//! built on this.
//!
//! A helper confines itself first and then tells the server whether that
//! worked, so a sandbox that cannot be applied stops the start-up instead
//! of leaving a helper running unconfined.

use std::ffi::CStr;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

use super::{cvt, cvt_size, process};

/// First message of a helper that confined itself and serves.
const READY: u8 = b'R';
/// First message of a helper that could not confine itself; the rest is
/// the reason.
const FAILED: u8 = b'E';

/// Forks a helper named `name` (at most 15 bytes). In the child, `confine`
/// runs first (its error, whatever its type, reaches the parent as text),
/// then every descriptor but the socket is closed and `serve`
/// runs until it returns; the child then exits. Returns the server's end
/// of the socket and the child's pid once the child said it is ready; an
/// error carries the child's reason when `confine` failed. Call only while
/// the process has a single thread.
pub fn fork<E: std::fmt::Display>(
    name: &CStr,
    confine: impl FnOnce() -> Result<(), E>,
    serve: impl FnOnce(OwnedFd),
) -> io::Result<(OwnedFd, i32)> {
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
    let (ours, theirs) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    // SAFETY: the caller guarantees a single thread, so the child is a
    // faithful copy that may run ordinary code.
    let pid = cvt(unsafe { libc::fork() })?;
    if pid == 0 {
        drop(ours);
        // SAFETY: PR_SET_NAME reads a NUL-terminated name of at most
        // 16 bytes.
        unsafe { libc::prctl(libc::PR_SET_NAME, name.as_ptr()) };
        if let Err(why) = confine() {
            let mut msg = vec![FAILED];
            msg.extend_from_slice(why.to_string().as_bytes());
            let _ = send(theirs.as_raw_fd(), &msg, &[]);
            // SAFETY: leaving the child without running the parent's
            // destructors or atexit handlers.
            unsafe { libc::_exit(1) };
        }
        close_all_but(theirs.as_raw_fd());
        if send(theirs.as_raw_fd(), &[READY], &[]).is_ok() {
            serve(theirs);
        }
        // SAFETY: as above.
        unsafe { libc::_exit(0) };
    }
    drop(theirs);
    let mut first = vec![0u8; 4096];
    let failure = match recv(ours.as_raw_fd(), &mut first) {
        Ok((n, _)) if n > 0 && first[0] == READY => return Ok((ours, pid)),
        Ok((n, _)) if n > 0 && first[0] == FAILED => {
            String::from_utf8_lossy(&first[1..n]).into_owned()
        }
        Ok(_) => "it exited before it was ready".to_string(),
        Err(e) => format!("no word from it: {e}"),
    };
    drop(ours);
    let mut status = 0;
    // SAFETY: `status` is a valid out-pointer; the child has exited or
    // exits now that its socket is closed.
    unsafe { libc::waitpid(pid, &mut status, 0) };
    Err(io::Error::other(failure))
}

/// Closes every descriptor but `keep` (and the standard three).
fn close_all_but(keep: RawFd) {
    let keep = keep as libc::c_uint;
    if keep > 3 {
        let _ = process::close_range(3, keep - 1, 0);
    }
    let _ = process::close_range(keep + 1, libc::c_uint::MAX, 0);
}

/// Sends one message with `fds` attached (`SCM_RIGHTS`, at most 8).
pub fn send(sock: RawFd, data: &[u8], fds: &[RawFd]) -> io::Result<()> {
    let mut iov = libc::iovec {
        iov_base: data.as_ptr() as *mut libc::c_void,
        iov_len: data.len(),
    };
    let mut cbuf = [0u64; 8];
    let fds = &fds[..fds.len().min(8)];
    // SAFETY: msghdr is plain old data; every pointer set below stays
    // valid for the call, and the control buffer (64 bytes, aligned for
    // cmsghdr) holds one header with up to 8 descriptors.
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
pub fn recv(sock: RawFd, buf: &mut [u8]) -> io::Result<(usize, Vec<OwnedFd>)> {
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
