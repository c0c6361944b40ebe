//! Whether a file's bytes are in the page cache, asked without waiting
//! for the disk; and reading them in, which waits.
//!
//! `sendfile` (or `pread`) of bytes the page cache lacks waits for the
//! disk inside the call, the socket's non-blocking mode notwithstanding:
//! an event loop that sends a large file from a slow or cold disk (a
//! router's USB drive, 30 MB/s: 66 ms for one connection's turn of
//! 2 MiB) stops every other connection of its worker meanwhile. The
//! worker asks first ([`probe`]); a range not cached is read in on a
//! thread ([`warm`]), and sent once it is (`server::worker::warm`).
//!
//! Two ways to ask, the first the filesystem takes:
//! - `preadv2(RWF_NOWAIT)` of the range's last byte: `EAGAIN` unless
//!   that page is cached and read (ext4, XFS, btrfs; any kernel since
//!   4.14);
//! - `cachestat(2)` (Linux 6.5) of the whole range: any filesystem with
//!   a page cache (vfat, exFAT, NTFS through FUSE, tmpfs), counting pages
//!   still being read as cached (a `sendfile` then waits for the read
//!   already under way, never for one it starts).
//!
//! Neither (an older kernel, a filesystem with no page cache): the file
//! is sent as before, the disk's wait on the loop.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// `cachestat(2)`'s number (the same on every architecture since 6.5,
/// offset on MIPS as all its calls are).
#[cfg(target_arch = "mips")]
pub(crate) const SYS_CACHESTAT: libc::c_long = 4451;
#[cfg(target_arch = "mips64")]
pub(crate) const SYS_CACHESTAT: libc::c_long = 5451;
#[cfg(not(any(target_arch = "mips", target_arch = "mips64")))]
pub(crate) const SYS_CACHESTAT: libc::c_long = 451;

/// Whether `len` bytes of `file` from `offset` (`len` > 0) are cached,
/// asked the first way the filesystem answers (see the module
/// documentation); true when neither answers (the bytes are sent as
/// before, whatever they cost).
pub fn probe(file: &File, offset: u64, len: u64) -> bool {
    let fd = file.as_raw_fd();
    let mut byte = 0u8;
    let iov = libc::iovec {
        iov_base: (&raw mut byte).cast(),
        iov_len: 1,
    };
    let at = (offset + len - 1) as libc::off_t;
    // SAFETY: one iovec of one byte, on the stack, for this call.
    let r = unsafe { libc::preadv2(fd, &iov, 1, at, libc::RWF_NOWAIT) };
    if r >= 0 {
        // (0: past the end, the file shrank; the send says so.)
        return true;
    }
    if io::Error::last_os_error().raw_os_error() == Some(libc::EAGAIN) {
        return false;
    }
    // (Refused by the filesystem, or an older kernel: the other way.)
    // nr_cache, nr_dirty, nr_writeback, nr_evicted, nr_recently_evicted
    let mut stat = [0u64; 5];
    let range = [offset, len];
    // SAFETY: the range (offset, length) and the result are ours, of the
    // sizes cachestat(2) reads and writes; flags 0.
    let r = unsafe { libc::syscall(SYS_CACHESTAT, fd, range.as_ptr(), stat.as_mut_ptr(), 0) };
    r != 0 || stat[0] >= (offset + len).div_ceil(PAGE) - offset / PAGE
}

#[cfg(feature = "cold-lookups")]
/// Reads `buf.len()` bytes of `file` from its start, from the page cache
/// alone: `WouldBlock` if any of them would be read from the disk
/// (`preadv2(RWF_NOWAIT)`). Where the filesystem cannot be asked so, it
/// reads them as `pread` does, waiting.
pub fn read_cached(file: &File, buf: &mut [u8]) -> io::Result<()> {
    let fd = file.as_raw_fd();
    let mut got = 0;
    while got < buf.len() {
        let iov = libc::iovec {
            iov_base: buf[got..].as_mut_ptr().cast(),
            iov_len: buf.len() - got,
        };
        // SAFETY: one iovec over the rest of `buf`, for this call.
        let r = unsafe { libc::preadv2(fd, &iov, 1, got as libc::off_t, libc::RWF_NOWAIT) };
        match r {
            0 => return Err(io::Error::from(io::ErrorKind::UnexpectedEof)),
            n if n > 0 => got += n as usize,
            _ => match io::Error::last_os_error() {
                e if e.raw_os_error() == Some(libc::EAGAIN) => {
                    return Err(io::Error::from(io::ErrorKind::WouldBlock))
                }
                e if e.kind() == io::ErrorKind::Interrupted => {}
                // (Refused by the filesystem, or an older kernel.)
                _ => {
                    return std::os::unix::fs::FileExt::read_exact_at(
                        file,
                        &mut buf[got..],
                        got as u64,
                    )
                }
            },
        }
    }
    Ok(())
}

/// The shortest range asked about: smaller ones are sent at once (one
/// more call an answer costs about 0.5 µs, under 0.2 % of what sending
/// 256 KiB does; and a small file's wait for the disk is short).
pub const ASKED_FROM: u64 = 256 << 10;

/// What is known of a queued file range's bytes in the page cache.
#[derive(Debug, Default)]
pub struct Warmth {
    /// The bytes before this offset were found cached, or read in.
    to: u64,
    /// A read in under way.
    reading: Option<Arc<Reading>>,
}

/// A read in under way ([`warm`]): how far it has read, and where it
/// stops.
#[derive(Debug)]
pub struct Reading {
    done: AtomicU64,
    end: u64,
}

/// What to do with a file range (see [`Warmth::next`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// Send at most so many of its bytes: they are cached (`u64::MAX`:
    /// a range too short to ask about).
    Send(u64),
    /// Wait: its next bytes are being read in.
    Wait,
    /// Have them read in: [`Warmth::read`] says what, then [`warm`] does.
    Read,
}

impl Warmth {
    /// What to do with the `len` bytes of `file` from `offset` that are
    /// queued next, `turn` of them to be sent at most before the next
    /// question.
    pub fn next(&mut self, file: &File, offset: u64, len: u64, turn: u64) -> Next {
        if let Some(r) = &self.reading {
            let done = r.done.load(Ordering::Acquire);
            if offset < done {
                return Next::Send(done - offset);
            }
            if done < r.end {
                return Next::Wait;
            }
            self.reading = None;
        }
        if offset < self.to {
            return Next::Send(self.to - offset);
        }
        if len < ASKED_FROM {
            return Next::Send(u64::MAX);
        }
        let n = len.min(turn);
        if !probe(file, offset, n) {
            return Next::Read;
        }
        self.to = offset + n;
        Next::Send(n)
    }

    /// After [`Next::Read`]: the read in of `len` bytes from `offset`
    /// (for [`warm`] to do), under way from now on.
    pub fn read(&mut self, offset: u64, len: u64) -> Arc<Reading> {
        let r = Arc::new(Reading {
            done: AtomicU64::new(offset),
            end: offset + len,
        });
        self.reading = Some(Arc::clone(&r));
        r
    }

    /// Whether it waits for a read in.
    pub fn is_reading(&self) -> bool {
        self.reading.is_some()
    }
}

/// Pages as `cachestat` counts them (a larger page counts as more than
/// one: a range of them is then never short by this count).
const PAGE: u64 = 4096;

/// Reads what `reading` names of `file` into the page cache, waiting
/// for the disk (on a thread of its own: see the module documentation),
/// in steps of `buf`'s length; `moved` is called after each (with the
/// new bytes counted in `reading` first). An error ends it at once, as if
/// all was read: the send that follows meets the error. It stops before
/// its next step once nothing else holds `reading` (the [`Warmth`] that
/// asked for it went with its answer or its connection): a client that
/// asks and goes costs the disk one step, not a turn.
pub fn warm(file: &File, reading: &Arc<Reading>, buf: &mut [u8], moved: impl Fn()) {
    use std::os::unix::fs::FileExt;
    let mut at = reading.done.load(Ordering::Relaxed);
    while at < reading.end && Arc::strong_count(reading) > 1 {
        let want = (reading.end - at).min(buf.len() as u64) as usize;
        at = match file.read_at(&mut buf[..want], at) {
            Ok(n) if n > 0 => at + n as u64,
            _ => reading.end,
        };
        reading.done.store(at, Ordering::Release);
        moved();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// A file of `n` bytes, dropped from the page cache (where the
    /// filesystem lets it: clean pages of a file synced to disk).
    fn cold_file(name: &str, n: usize) -> File {
        let path = std::env::temp_dir().join(format!("brisk-{name}-{}", std::process::id()));
        let mut f = File::create(&path).unwrap();
        f.write_all(&vec![7u8; n]).unwrap();
        f.sync_all().unwrap();
        drop(f);
        let f = File::open(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        // SAFETY: advice on an open descriptor.
        unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
        f
    }

    #[test]
    fn a_range_read_in_is_cached_and_one_dropped_is_not_where_the_kernel_tells() {
        let f = cold_file("probed", 1 << 20);
        let before = probe(&f, 512 << 10, 256 << 10);
        let mut warmth = Warmth::default();
        let reading = warmth.read(512 << 10, 256 << 10);
        let steps = std::cell::Cell::new(0);
        warm(&f, &reading, &mut [0u8; 64 << 10], || {
            steps.set(steps.get() + 1)
        });
        assert_eq!(steps.get(), 4);
        assert!(probe(&f, 512 << 10, 256 << 10));
        drop(warmth);
        if before {
            // (A filesystem that keeps every file in memory is never
            // cold; nor can an older kernel tell: said, not failed.)
            eprintln!("SKIPPED: a file dropped from the page cache counts as cached here");
        }
    }

    #[cfg(feature = "cold-lookups")]
    #[test]
    fn a_small_file_is_read_from_the_page_cache_alone_or_not_at_all() {
        let f = cold_file("small", 10_000);
        let mut buf = vec![0u8; 10_000];
        match read_cached(&f, &mut buf) {
            Err(e) => assert_eq!(e.kind(), io::ErrorKind::WouldBlock),
            // (See above: a filesystem that keeps every file in memory.)
            Ok(()) => {
                eprintln!("SKIPPED: a file dropped from the page cache counts as cached here")
            }
        }
        std::os::unix::fs::FileExt::read_exact_at(&f, &mut buf, 0).unwrap();
        buf.fill(0);
        read_cached(&f, &mut buf).unwrap();
        assert!(buf.iter().all(|&b| b == 7));
        // Past the end: as `read_exact_at`.
        let mut more = vec![0u8; 10_001];
        let e = read_cached(&f, &mut more).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::UnexpectedEof);
    }

    #[test]
    fn a_read_in_nobody_waits_for_any_more_stops() {
        let f = cold_file("forsaken", 256 << 10);
        let mut warmth = Warmth::default();
        let reading = warmth.read(0, 256 << 10);
        let steps = std::cell::Cell::new(0);
        // Its answer goes after the first step.
        let asked = std::cell::RefCell::new(Some(warmth));
        warm(&f, &reading, &mut [0u8; 64 << 10], || {
            steps.set(steps.get() + 1);
            asked.borrow_mut().take();
        });
        assert_eq!(steps.get(), 1);
        assert_eq!(reading.done.load(Ordering::Relaxed), 64 << 10);
        // One gone before it starts reads nothing.
        let reading = Warmth::default().read(0, 256 << 10);
        warm(&f, &reading, &mut [0u8; 64 << 10], || panic!("read"));
        assert_eq!(reading.done.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn a_range_being_read_in_is_sent_as_far_as_it_was_read() {
        let f = cold_file("read-in", 4096);
        let (mib, turn) = (1 << 20, 2 << 20);
        let mut w = Warmth::default();
        let r = w.read(0, mib);
        assert!(w.is_reading());
        assert_eq!(w.next(&f, 0, mib, turn), Next::Wait);
        r.done.store(300 << 10, Ordering::Release);
        assert_eq!(w.next(&f, 0, mib, turn), Next::Send(300 << 10));
        assert_eq!(w.next(&f, 300 << 10, mib - (300 << 10), turn), Next::Wait);
        r.done.store(mib, Ordering::Release);
        assert_eq!(
            w.next(&f, 300 << 10, mib - (300 << 10), turn),
            Next::Send(mib - (300 << 10))
        );
        // Read to its end: what follows is asked about again (a range
        // too short to ask about is sent).
        assert_eq!(w.next(&f, mib, 4096, turn), Next::Send(u64::MAX));
        assert!(!w.is_reading());
    }
}
