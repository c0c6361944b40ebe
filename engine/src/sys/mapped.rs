//! Files' bytes sent from shared read-only mappings, with `sendmsg(2)`:
//! HTTP/2's DATA frames in cleartext, each header and its part of the
//! file gathered into one call, one copy (the page cache's pages into the
//! socket) where reading them into a buffer first makes two.
//!
//! brisk never reads a mapping itself: only the kernel does, inside the
//! `sendmsg` that names it. So a file truncated under a mapping makes
//! that call fail with `EFAULT` (or stop short) instead of raising
//! `SIGBUS`, and the connection ends as a `sendfile` of a truncated
//! file makes it end; bytes of a page the cut shared read as zeros, as
//! with `sendfile` (docs/src/static.md).
//!
//! A worker keeps its mappings (a few, see [`MAX_WINDOWS`]) for the next
//! answers of the same files: a new mapping pays a page fault for every
//! 16 pages when the kernel first reads it, about what the copy it saves
//! costs; a kept one pays nothing. Each covers [`WINDOW`] bytes of a file
//! from a multiple of it. One whose file the worker's open-file cache
//! dropped goes first; [`forget_all`] drops them all (a worker at rest).

use std::cell::RefCell;
use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::ptr::NonNull;
use std::rc::Rc;

use super::cvt_size;

/// The bytes of a file one mapping covers, from a multiple of it.
pub const WINDOW: u64 = 2 << 20;

/// Most mappings a worker keeps (address space, not memory: the pages are
/// the page cache's, though they count in the process's RSS while the
/// kernel has them mapped).
pub const MAX_WINDOWS: usize = 32;

/// Most pieces one [`send`] gathers.
pub const MAX_IOV: usize = 128;

/// `WINDOW` bytes of a file, mapped shared and read-only; unmapped when
/// the last reference goes.
#[derive(Debug)]
pub struct Window {
    ptr: NonNull<libc::c_void>,
    /// Where in the file it starts.
    start: u64,
}

impl Window {
    /// Maps the window of `file` that holds byte `offset`.
    fn map(file: &File, offset: u64) -> io::Result<Window> {
        let start = offset - offset % WINDOW;
        let off = libc::off_t::try_from(start).map_err(|_| io::ErrorKind::InvalidInput)?;
        // SAFETY: a new mapping at an address the kernel picks, of an open
        // descriptor, read-only; nothing else refers to it. Past the
        // file's end it is mapped too (mmap does not look), but brisk
        // names only bytes an answer promised, and never reads them
        // itself (see the module documentation).
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                WINDOW as usize,
                libc::PROT_READ,
                libc::MAP_SHARED,
                file.as_raw_fd(),
                off,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let ptr = NonNull::new(ptr).ok_or(io::ErrorKind::Other)?;
        Ok(Window { ptr, start })
    }

    /// The file's bytes `offset..offset + len` (within this window), for
    /// a system call to read.
    fn iovec(&self, offset: u64, len: usize) -> libc::iovec {
        let at = (offset - self.start) as usize;
        debug_assert!(at + len <= WINDOW as usize);
        libc::iovec {
            // (A pointer within the mapping; the kernel alone reads it.)
            iov_base: self.ptr.as_ptr().cast::<u8>().wrapping_add(at).cast(),
            iov_len: len,
        }
    }
}

impl Drop for Window {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `map`, of that length; no pointer
        // into it outlives the window (iovecs live for one call).
        unsafe { libc::munmap(self.ptr.as_ptr(), WINDOW as usize) };
    }
}

/// A range of a file in a window, queued to be sent.
#[derive(Debug)]
pub struct Mapped {
    window: Rc<Window>,
    /// Where in the file the bytes not sent yet start.
    pub offset: u64,
    /// How many are left.
    pub len: usize,
}

impl Mapped {
    /// `len` bytes of `file` from `offset`, all within one window (see
    /// [`room`]), mapped or found mapped; an error when the file cannot
    /// be mapped (the caller reads it instead).
    pub fn new(file: &Rc<File>, offset: u64, len: usize) -> io::Result<Mapped> {
        if len as u64 > room(offset) {
            return Err(io::ErrorKind::InvalidInput.into());
        }
        let window = window(file, offset)?;
        Ok(Mapped {
            window,
            offset,
            len,
        })
    }

    /// Its bytes `offset..offset + len` (within it), as a range of their
    /// own in the same window.
    pub fn part(&self, offset: u64, len: usize) -> Mapped {
        debug_assert!(
            offset >= self.offset && offset + len as u64 <= self.offset + self.len as u64
        );
        Mapped {
            window: Rc::clone(&self.window),
            offset,
            len,
        }
    }

    /// `n` of its bytes went.
    pub fn sent(&mut self, n: usize) {
        let n = n.min(self.len);
        self.offset += n as u64;
        self.len -= n;
    }
}

/// How many bytes from `offset` on one window holds.
pub fn room(offset: u64) -> u64 {
    WINDOW - offset % WINDOW
}

/// One piece of output for [`send`].
#[derive(Debug, Clone, Copy)]
pub enum Part<'a> {
    /// Bytes in memory.
    Bytes(&'a [u8]),
    /// Bytes of a mapped file.
    Mapped(&'a Mapped),
}

/// Sends `parts`, in order, in one `sendmsg` (never blocking: the socket
/// is non-blocking), at most `max` bytes; `more`: other output follows
/// (`MSG_MORE`). How many went. A file truncated under a mapping fails it
/// with `EFAULT`, or stops it short (the next call fails).
pub fn send(sock: &impl AsRawFd, parts: &[Part<'_>], max: usize, more: bool) -> io::Result<usize> {
    let mut iov = [libc::iovec {
        iov_base: std::ptr::null_mut(),
        iov_len: 0,
    }; MAX_IOV];
    let (mut n, mut total) = (0, 0usize);
    for part in parts.iter().take(MAX_IOV) {
        if total >= max {
            break;
        }
        let v = match part {
            Part::Bytes(b) => libc::iovec {
                iov_base: b.as_ptr().cast_mut().cast(),
                iov_len: b.len(),
            },
            Part::Mapped(m) => m.window.iovec(m.offset, m.len),
        };
        let len = v.iov_len.min(max - total);
        iov[n] = libc::iovec {
            iov_base: v.iov_base,
            iov_len: len,
        };
        total += len;
        n += 1;
    }
    // SAFETY: an all-zero msghdr is valid (no address, no control data).
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = iov.as_mut_ptr();
    msg.msg_iovlen = n as _;
    let flags = libc::MSG_NOSIGNAL | if more { libc::MSG_MORE } else { 0 };
    // SAFETY: each iovec covers memory valid for the call: a slice
    // borrowed for it, or a window's bytes, mapped while `parts` borrows
    // the window; the kernel only reads them.
    cvt_size(unsafe { libc::sendmsg(sock.as_raw_fd(), &msg, flags) })
}

/// A worker's windows: each with the file it maps (kept open by it).
struct Cache {
    windows: Vec<(Rc<File>, Rc<Window>)>,
}

thread_local! {
    static CACHE: RefCell<Cache> = const { RefCell::new(Cache { windows: Vec::new() }) };
}

/// The window of `file` that holds `offset`: kept, or mapped now (and
/// kept: first dropping those whose file nobody else holds, then the
/// oldest, past [`MAX_WINDOWS`]).
fn window(file: &Rc<File>, offset: u64) -> io::Result<Rc<Window>> {
    let start = offset - offset % WINDOW;
    let kept = CACHE.try_with(|c| {
        let c = c.borrow();
        c.windows
            .iter()
            .find(|(f, w)| Rc::ptr_eq(f, file) && w.start == start)
            .map(|(_, w)| Rc::clone(w))
    });
    if let Ok(Some(w)) = kept {
        return Ok(w);
    }
    let w = Rc::new(Window::map(file, offset)?);
    let _ = CACHE.try_with(|c| {
        let mut c = c.borrow_mut();
        if c.windows.len() >= MAX_WINDOWS {
            c.windows.retain(|(f, _)| Rc::strong_count(f) > 1);
        }
        if c.windows.len() >= MAX_WINDOWS {
            c.windows.remove(0);
        }
        c.windows.push((Rc::clone(file), Rc::clone(&w)));
    });
    Ok(w)
}

/// Drops every window the worker keeps (those still queued stay mapped
/// until sent).
pub fn forget_all() {
    let _ = CACHE.try_with(|c| c.borrow_mut().windows.clear());
}

/// How many windows the worker keeps (for tests).
pub fn kept() -> usize {
    CACHE.try_with(|c| c.borrow().windows.len()).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::os::unix::net::UnixStream;

    // (Each test runs on a thread of its own: a cache of its own.)

    fn file(name: &str, data: &[u8]) -> (std::path::PathBuf, Rc<File>) {
        let path = std::env::temp_dir().join(format!("brisk-mapped-{}-{name}", std::process::id()));
        std::fs::write(&path, data).unwrap();
        let f = Rc::new(File::open(&path).unwrap());
        (path, f)
    }

    #[test]
    fn parts_leave_in_order_from_kept_windows() {
        let data: Vec<u8> = (0..(WINDOW as usize + 50_000))
            .map(|i| (i % 251) as u8)
            .collect();
        let (path, f) = file("order", &data);
        let (a, mut b) = UnixStream::pair().unwrap();
        let first = Mapped::new(&f, 3, 16_384).unwrap();
        let second = Mapped::new(&f, WINDOW, 40_000).unwrap();
        assert_eq!(kept(), 2, "one window each");
        let again = Mapped::new(&f, 20_000, 10).unwrap();
        assert!(
            Rc::ptr_eq(&again.window, &first.window),
            "a kept window is used again"
        );
        assert!(
            Mapped::new(&f, WINDOW - 10, 11).is_err(),
            "a range across two windows is refused"
        );
        let parts = [
            Part::Bytes(b"head"),
            Part::Mapped(&first),
            Part::Bytes(b"-"),
            Part::Mapped(&second),
        ];
        let n = send(&a, &parts, usize::MAX, false).unwrap();
        assert_eq!(n, 4 + 16_384 + 1 + 40_000);
        let mut got = vec![0; n];
        b.read_exact(&mut got).unwrap();
        let mut want = b"head".to_vec();
        want.extend_from_slice(&data[3..16_387]);
        want.push(b'-');
        want.extend_from_slice(&data[WINDOW as usize..WINDOW as usize + 40_000]);
        assert!(got == want, "the bytes, in order");
        // At most `max`.
        assert_eq!(send(&a, &parts, 6, false).unwrap(), 6);
        let mut got = [0; 6];
        b.read_exact(&mut got).unwrap();
        assert_eq!(&got, &[b'h', b'e', b'a', b'd', data[3], data[4]]);
        // Windows whose file nobody else holds go first, past the bound.
        drop(f);
        let (path2, g) = file("other", &data[..100]);
        for i in 0..MAX_WINDOWS as u64 {
            drop(Mapped::new(&g, i * WINDOW, 1).unwrap());
        }
        assert_eq!(kept(), MAX_WINDOWS);
        forget_all();
        assert_eq!(kept(), 0);
        std::fs::remove_file(&path).unwrap();
        std::fs::remove_file(&path2).unwrap();
    }

    #[test]
    fn a_file_truncated_under_its_mapping_fails_the_send_without_a_signal() {
        let data = vec![7u8; 100_000];
        let (path, f) = file("cut", &data);
        let m = Mapped::new(&f, 0, data.len()).unwrap();
        File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len(1000)
            .unwrap();
        // (Over TCP, as brisk sends: a call stops where the bytes end.)
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let a = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let mut b = listener.accept().unwrap().0;
        let reader = std::thread::spawn(move || {
            let mut got = Vec::new();
            let _ = b.read_to_end(&mut got);
            got
        });
        // The page the cut shares reads as zeros past it; the pages after
        // it are gone: the call fails there (what the socket took of
        // whole chunks before the hole, it sends).
        let mut sent = 0;
        let err = loop {
            let m = Mapped {
                window: Rc::clone(&m.window),
                offset: sent as u64,
                len: data.len() - sent,
            };
            match send(&a, &[Part::Mapped(&m)], usize::MAX, false) {
                Ok(n) => sent += n,
                Err(e) => break e,
            }
        };
        assert_eq!(err.raw_os_error(), Some(libc::EFAULT), "{err}");
        assert!(sent <= 4096, "{sent} bytes: none after the cut's page");
        drop(a);
        let got = reader.join().unwrap();
        assert_eq!(got.len(), sent);
        let upto = got.len().min(1000);
        assert!(got[..upto].iter().all(|&b| b == 7) && got[upto..].iter().all(|&b| b == 0));
        std::fs::remove_file(&path).unwrap();
    }
}
