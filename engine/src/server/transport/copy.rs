//! `[static] sendfile = false`: a large file range goes out through the
//! worker's memory, one chunk at a time (`pread`, then `send`), instead
//! of by `sendfile`.
//!
//! Why it exists: `sendfile` hands the socket references to the page
//! cache, so bytes already "sent" are read again when they leave; a file
//! truncated (or rewritten) in place meanwhile goes out as zeros (or new
//! bytes) under the old `Content-Length`, a complete-looking 200. Copied
//! bytes are the file as it was when they were read; when the file turns
//! out shorter than the length promised, the connection ends short, so
//! the client sees a truncated response, never made-up bytes. The cost
//! is a copy of every byte through user space (see the book, docs/src/performance.md).
//!
//! Memory: one chunk per connection while it sends a range, freed as
//! soon as the range is done.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::rc::Rc;

use mio::net::TcpStream;

use super::queue::FileRange;
use crate::sys::net;

/// Bytes read from the file at a time (nginx's `output_buffers` are 2 × 32 KiB).
pub const CHUNK: usize = 64 * 1024;

/// How the bytes of one `send` go.
#[derive(Debug, Clone, Copy)]
pub struct Sending {
    /// Most bytes to send.
    pub limit: usize,
    /// Other output follows this range in the queue.
    pub more: bool,
    /// The connection is shut down for writing after the last byte.
    pub fin_follows: bool,
    /// A throttle decides when the next bytes go.
    pub throttled: bool,
}

/// The chunk of a range read and not sent yet: `held[pos..end]` are the
/// bytes of `file` from `at`. It belongs to the queue's front range while
/// `at` is where that range goes on.
#[derive(Debug)]
pub struct Chunk {
    file: Rc<File>,
    at: u64,
    /// Allocated (zeroed) once per range, at its first read, then read
    /// into again without clearing.
    held: Vec<u8>,
    pos: usize,
    end: usize,
}

impl Chunk {
    /// Sends the next bytes of `range` (reading the next chunk when none
    /// is held for it) in one `send`; returns how many the socket took.
    /// A file that ends before the range does is an `UnexpectedEof`
    /// error: the length promised cannot be kept, the connection must end.
    /// `chunk` is the one kept for the connection: a chunk of another
    /// range is dropped, and the chunk of a finished range given back.
    pub fn send(
        chunk: &mut Option<Box<Chunk>>,
        stream: &TcpStream,
        range: &FileRange,
        how: Sending,
    ) -> io::Result<usize> {
        let current = chunk
            .as_ref()
            .is_some_and(|c| Rc::ptr_eq(&c.file, &range.file) && c.at == range.offset);
        if !current {
            *chunk = None;
        }
        let c = match chunk.take() {
            Some(c) if c.pos < c.end => chunk.insert(c),
            old => chunk.insert(Chunk::fill(old, range)?),
        };
        let end = c.pos + (c.end - c.pos).min(how.limit);
        let finishing = end - c.pos == range.len as usize;
        // MSG_MORE lets the kernel fill segments; never on the last
        // bytes of an answer (unless a FIN rides with them), nor when a
        // throttle decides when the next bytes go.
        let msg_more = how.more
            || if finishing {
                how.fin_follows
            } else {
                !how.throttled
            };
        let w = net::send(stream, &c.held[c.pos..end], msg_more)?;
        c.pos += w;
        c.at += w as u64;
        if w as u64 == range.len {
            // The range is done: its chunk is given back at once.
            *chunk = None;
        }
        Ok(w)
    }

    /// Reads the next chunk of `range`, into the memory of `old` if given.
    fn fill(old: Option<Box<Chunk>>, range: &FileRange) -> io::Result<Box<Chunk>> {
        let size = range.len.min(CHUNK as u64) as usize;
        let mut c = match old {
            Some(c) if c.held.len() >= size => c,
            _ => Box::new(Chunk {
                file: Rc::clone(&range.file),
                at: range.offset,
                held: vec![0; size],
                pos: 0,
                end: 0,
            }),
        };
        let n = range.file.read_at(&mut c.held[..size], range.offset)?;
        if n == 0 && size > 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "file truncated while sending",
            ));
        }
        (c.at, c.pos, c.end) = (range.offset, 0, n);
        Ok(c)
    }
}
