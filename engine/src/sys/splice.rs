//! Zero-copy relay between sockets: a pipe filled from one socket with
//! `splice(2)` and emptied into another the same way, the bytes never in
//! the server's memory (the kernel moves page references; nginx has no
//! such path, HAProxy does); and from a socket into a file (a WebDAV
//! PUT's body: the kernel copies it once, into the file's pages, where
//! a `read` and a `write` copy it twice).
//!
//! Pipes come from a pool per worker thread, bounded ([`MAX_PIPES`]
//! open at once, [`MAX_IDLE`] of them kept idle for the next answers):
//! when none can be had, the caller copies as before. A pipe goes back
//! to the pool when it is dropped empty; one dropped with bytes in it
//! (a client that left mid-answer) is closed, its bytes with it.

use std::cell::RefCell;
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

use super::{cvt, cvt_size};

/// Most pipes a worker holds open at once, lent or idle (two descriptors
/// each): past it, bodies are copied.
pub const MAX_PIPES: usize = 64;

/// Most idle pipes a worker keeps for the next answers. (A pipe's size
/// counts towards its user's `/proc/sys/fs/pipe-user-pages-soft`, 64 MiB
/// by default, shared with the user's other programs: past it, pipes are
/// made small. Idle pipes are kept few for that.)
pub const MAX_IDLE: usize = 8;

/// The size asked for each pipe (`F_SETPIPE_SZ`; the default is 64 KiB):
/// the HTTP/1.1 sink's queue in one or two pipes, so that a piece goes
/// out in one `splice`. Where the system refuses it (past
/// `/proc/sys/fs/pipe-user-pages-soft`), the size it gives.
pub const PIPE_SIZE: usize = 256 * 1024;

/// A pipe's read end, write end and size.
#[derive(Debug)]
struct Ends {
    read: OwnedFd,
    write: OwnedFd,
    size: usize,
}

/// A worker's pipes: those idle, and how many are open.
struct Pool {
    idle: Vec<Ends>,
    open: usize,
}

thread_local! {
    static POOL: RefCell<Pool> = const {
        RefCell::new(Pool {
            idle: Vec::new(),
            open: 0,
        })
    };
}

/// A pipe lent by the worker's pool, and how many bytes it holds.
#[derive(Debug)]
pub struct Pipe {
    /// Its ends (taken when it is dropped).
    ends: Option<Ends>,
    held: usize,
}

impl Pipe {
    /// An empty pipe: an idle one of the pool, or a new one while the
    /// worker holds fewer than [`MAX_PIPES`]; none past that (or when
    /// the system gives none: the caller copies).
    pub fn take() -> Option<Pipe> {
        POOL.try_with(|pool| {
            let mut pool = pool.borrow_mut();
            if let Some(ends) = pool.idle.pop() {
                return Some(Pipe {
                    ends: Some(ends),
                    held: 0,
                });
            }
            if pool.open >= MAX_PIPES {
                return None;
            }
            let ends = new_pipe().ok()?;
            pool.open += 1;
            Some(Pipe {
                ends: Some(ends),
                held: 0,
            })
        })
        .ok()
        .flatten()
    }

    /// The bytes it holds.
    pub fn held(&self) -> usize {
        self.held
    }

    /// How many more bytes it takes (pages permitting: bytes spliced
    /// from a socket may fill its slots with less).
    pub fn room(&self) -> usize {
        self.ends.as_ref().map_or(0, |e| e.size) - self.held
    }

    /// Moves at most `max` bytes that wait in `sock` into the pipe
    /// (never blocking); how many (0: the peer closed its side).
    pub fn fill_from(&mut self, sock: &impl AsRawFd, max: usize) -> io::Result<usize> {
        let flags = libc::SPLICE_F_MOVE | libc::SPLICE_F_NONBLOCK;
        let max = max.min(self.room());
        let n = splice(sock.as_raw_fd(), self.end(1), max, flags)?;
        self.held += n;
        Ok(n)
    }

    /// Moves at most `max` of the bytes it holds into `sock` (never
    /// blocking; `more`: other output follows, as `MSG_MORE`); how many
    /// went. Follow with [`Pipe::sent`].
    pub fn send_to(&self, sock: &impl AsRawFd, max: usize, more: bool) -> io::Result<usize> {
        let more = if more { libc::SPLICE_F_MORE } else { 0 };
        let flags = libc::SPLICE_F_MOVE | libc::SPLICE_F_NONBLOCK | more;
        let max = max.min(self.held);
        splice(self.end(0), sock.as_raw_fd(), max, flags)
    }

    /// Moves every byte it holds into `file`, at the file's position
    /// (which moves on), as `write` would. On an error, what it still
    /// holds stays in it (and goes with the pipe when dropped).
    pub fn empty_into(&mut self, file: &File) -> io::Result<()> {
        while self.held > 0 {
            match splice(
                self.end(0),
                file.as_raw_fd(),
                self.held,
                libc::SPLICE_F_MOVE,
            ) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => self.held -= n.min(self.held),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Its read end (0) or write end (1).
    fn end(&self, which: usize) -> RawFd {
        match (&self.ends, which) {
            (Some(e), 0) => e.read.as_raw_fd(),
            (Some(e), _) => e.write.as_raw_fd(),
            (None, _) => -1,
        }
    }

    /// `n` of its bytes went ([`Pipe::send_to`]).
    pub fn sent(&mut self, n: usize) {
        self.held -= n.min(self.held);
    }
}

impl Drop for Pipe {
    fn drop(&mut self) {
        let Some(ends) = self.ends.take() else { return };
        let held = self.held;
        let _ = POOL.try_with(|pool| {
            let mut pool = pool.borrow_mut();
            if held == 0 && pool.idle.len() < MAX_IDLE {
                pool.idle.push(ends);
            } else {
                // (Closed here, with what it held.)
                pool.open -= 1;
            }
        });
    }
}

/// How many pipes this worker holds open, lent or idle (for tests).
pub fn open() -> usize {
    POOL.try_with(|pool| pool.borrow().open).unwrap_or(0)
}

/// A new non-blocking pipe of [`PIPE_SIZE`] if it may be that large.
fn new_pipe() -> io::Result<Ends> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: `fds` has room for the two descriptors pipe2 writes.
    cvt(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) })?;
    // SAFETY: pipe2 succeeded: both are new descriptors owned by no one else.
    let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    let fd = write.as_raw_fd();
    // SAFETY: fcntl on an open descriptor, with an int argument.
    let grown = cvt(unsafe { libc::fcntl(fd, libc::F_SETPIPE_SZ, PIPE_SIZE as libc::c_int) });
    let size = match grown {
        Ok(size) => size,
        // SAFETY: fcntl on an open descriptor, with no argument.
        Err(_) => cvt(unsafe { libc::fcntl(fd, libc::F_GETPIPE_SZ) })?,
    };
    Ok(Ends {
        read,
        write,
        size: size as usize,
    })
}

/// `splice(from, NULL, to, NULL, len, flags)`.
fn splice(
    from: libc::c_int,
    to: libc::c_int,
    len: usize,
    flags: libc::c_uint,
) -> io::Result<usize> {
    // SAFETY: both descriptors are open for the call; no offsets are
    // passed (null pointers: sockets and pipes have none).
    cvt_size(unsafe {
        libc::splice(
            from,
            std::ptr::null_mut(),
            to,
            std::ptr::null_mut(),
            len,
            flags,
        )
    })
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};
    use std::os::unix::net::UnixStream;

    use super::*;

    // (Each test runs on a thread of its own: a pool of its own.)

    #[test]
    fn bytes_pass_through_and_an_empty_pipe_is_kept_a_full_one_closed() {
        let (mut from, upstream) = UnixStream::pair().unwrap();
        let (client, mut to) = UnixStream::pair().unwrap();
        upstream.set_nonblocking(true).unwrap();
        from.write_all(b"hello world").unwrap();
        let mut p = Pipe::take().unwrap();
        assert_eq!(open(), 1);
        assert!(p.room() >= 64 * 1024, "{} bytes", p.room());
        assert_eq!(p.fill_from(&upstream, 5).unwrap(), 5);
        assert_eq!(p.held(), 5);
        let n = p.send_to(&client, 3, true).unwrap();
        p.sent(n);
        let n = p.send_to(&client, 100, false).unwrap();
        p.sent(n);
        assert_eq!(p.held(), 0);
        let mut got = [0u8; 5];
        to.read_exact(&mut got).unwrap();
        assert_eq!(&got, b"hello");
        drop(p);
        assert_eq!(open(), 1, "an empty pipe is kept");
        let mut p = Pipe::take().unwrap();
        assert_eq!(open(), 1, "and lent again");
        assert_eq!(p.fill_from(&upstream, 100).unwrap(), 6);
        let e = p.fill_from(&upstream, 100).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::WouldBlock);
        drop(p);
        assert_eq!(open(), 0, "a pipe dropped with bytes in it is closed");
        drop(from);
        let mut p = Pipe::take().unwrap();
        assert_eq!(p.fill_from(&upstream, 100).unwrap(), 0, "the end");
    }

    #[test]
    fn held_bytes_go_into_a_file_at_its_position() {
        use std::io::{Seek, SeekFrom};
        let (mut from, sock) = UnixStream::pair().unwrap();
        sock.set_nonblocking(true).unwrap();
        let mut file = tempfile();
        file.write_all(b"0123").unwrap();
        file.seek(SeekFrom::Start(2)).unwrap();
        from.write_all(b"abcdef").unwrap();
        let mut p = Pipe::take().unwrap();
        assert_eq!(p.fill_from(&sock, 100).unwrap(), 6);
        p.empty_into(&file).unwrap();
        assert_eq!(p.held(), 0);
        // (At the file's position, which moved on past them.)
        assert_eq!(file.stream_position().unwrap(), 8);
        let mut got = String::new();
        file.seek(SeekFrom::Start(0)).unwrap();
        file.read_to_string(&mut got).unwrap();
        assert_eq!(got, "01abcdef");
        // A file that takes nothing keeps the bytes in the pipe.
        from.write_all(b"more").unwrap();
        assert_eq!(p.fill_from(&sock, 100).unwrap(), 4);
        let read_only = File::open("/dev/null").unwrap();
        assert!(p.empty_into(&read_only).is_err());
        assert_eq!(p.held(), 4);
    }

    /// An unnamed file in the system's temporary directory.
    fn tempfile() -> File {
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_TMPFILE)
            .open(std::env::temp_dir())
            .unwrap()
    }

    #[test]
    fn a_worker_holds_a_bounded_number() {
        let lent: Vec<Pipe> = std::iter::from_fn(Pipe::take).take(MAX_PIPES + 1).collect();
        assert_eq!((lent.len(), open()), (MAX_PIPES, MAX_PIPES));
        drop(lent);
        assert_eq!(open(), MAX_IDLE, "those past the idle bound are closed");
    }
}
