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
//! is a copy of every byte through user space (see README: Performance).
//!
//! Memory: one chunk per connection while its response is being sent,
//! freed as soon as the range is done.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::rc::Rc;

use mio::net::TcpStream;

use crate::sys::net;

/// Bytes read from the file at a time (nginx's `output_buffers` are 2 × 32 KiB).
pub const CHUNK: usize = 64 * 1024;

/// A file range being copied to a socket.
#[derive(Debug)]
pub struct Copied {
    file: Rc<File>,
    /// The next byte to read.
    offset: u64,
    /// Bytes not read yet.
    left: u64,
    /// The chunk: bytes read and not yet sent are `held[pos..end]`.
    /// Allocated (zeroed) once, at the first read, then read into again
    /// without clearing.
    held: Vec<u8>,
    pos: usize,
    end: usize,
}

impl Copied {
    /// `len` bytes of `file` from `offset`, nothing read yet.
    pub fn new(file: Rc<File>, offset: u64, len: u64) -> Copied {
        Copied {
            file,
            offset,
            left: len,
            held: Vec::new(),
            pos: 0,
            end: 0,
        }
    }

    /// Bytes of the range not sent yet.
    pub fn unsent(&self) -> u64 {
        self.left + (self.end - self.pos) as u64
    }

    /// Whether every byte of the range has been sent.
    pub fn is_done(&self) -> bool {
        self.left == 0 && self.pos == self.end
    }

    /// Reads the next chunk when nothing is held, then makes one `send`
    /// of at most `limit` bytes; returns how many the socket took.
    /// `more`: whether other output follows this range in the queue;
    /// `fin_follows` and `throttled` as in [`super::output::Out::flush_limited`].
    /// A file that ends before the range does is an `UnexpectedEof`
    /// error: the length promised cannot be kept, the connection must end.
    pub fn send(
        &mut self,
        stream: &TcpStream,
        limit: usize,
        more: bool,
        fin_follows: bool,
        throttled: bool,
    ) -> io::Result<usize> {
        if self.pos == self.end {
            self.fill()?;
        }
        let end = self.pos + (self.end - self.pos).min(limit);
        let finishing = self.left == 0 && end == self.end;
        // MSG_MORE lets the kernel fill segments; never on the last
        // bytes of an answer (unless a FIN rides with them), nor when a
        // throttle decides when the next bytes go.
        let msg_more = more || if finishing { fin_follows } else { !throttled };
        let w = net::send(stream, &self.held[self.pos..end], msg_more)?;
        self.pos += w;
        if self.is_done() {
            // The range is done: its chunk is given back at once.
            self.held = Vec::new();
        }
        Ok(w)
    }

    /// Reads the next chunk into `held`.
    fn fill(&mut self) -> io::Result<()> {
        if self.held.is_empty() {
            self.held = vec![0; self.left.min(CHUNK as u64) as usize];
        }
        let want = self.left.min(self.held.len() as u64) as usize;
        let n = self.file.read_at(&mut self.held[..want], self.offset)?;
        if n == 0 && want > 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "file truncated while sending",
            ));
        }
        (self.pos, self.end) = (0, n);
        self.offset += n as u64;
        self.left -= n as u64;
        Ok(())
    }
}
