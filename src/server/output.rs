//! A connection's output queue: header and small-body bytes in one buffer,
//! large file ranges by `sendfile`, flushed in order with as few syscalls
//! as possible (consecutive byte pieces leave in a single write).

use std::collections::VecDeque;
use std::fs::File;
use std::io;
use std::rc::Rc;

use mio::net::TcpStream;

use crate::sys::net;

/// A queued piece of output.
#[derive(Debug)]
enum Piece {
    /// The next `n` bytes of the buffer.
    Bytes(usize),
    /// `len` bytes of `file` from `offset`.
    File {
        file: Rc<File>,
        offset: u64,
        len: u64,
    },
}

/// What a flush achieved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flushed {
    /// Everything queued has been written.
    All,
    /// The byte limit given was reached (throttling); more is queued.
    Limit,
    /// The socket is full; wait for writability.
    Blocked,
}

/// Queued output for one connection (or the per-thread staging queue).
#[derive(Debug, Default)]
pub struct Out {
    buf: Vec<u8>,
    /// Bytes of `buf` already written.
    pos: usize,
    pieces: VecDeque<Piece>,
    /// Bytes written by flushes so far (for logs and tests).
    pub written: u64,
}

impl Out {
    /// An empty queue with room for `cap` bytes.
    pub fn with_capacity(cap: usize) -> Out {
        Out {
            buf: Vec::with_capacity(cap),
            pos: 0,
            pieces: VecDeque::with_capacity(64),
            written: 0,
        }
    }

    /// Whether nothing is waiting to be written.
    pub fn is_empty(&self) -> bool {
        self.pieces.is_empty()
    }

    /// The buffer's capacity (memory held).
    pub fn capacity(&self) -> usize {
        self.buf.capacity()
    }

    /// Bytes waiting in the buffer (not counting file pieces).
    pub fn buffered(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// Appends bytes to the queue.
    pub fn push_bytes(&mut self, bytes: &[u8]) {
        let start = self.buf.len();
        self.buf.extend_from_slice(bytes);
        self.commit(start);
    }

    /// Direct access to the buffer, to write into it; follow with
    /// [`Out::commit`] passing the length the buffer had before.
    pub fn buf_mut(&mut self) -> &mut Vec<u8> {
        &mut self.buf
    }

    /// Queues the bytes appended to the buffer since it was `start` long.
    pub fn commit(&mut self, start: usize) {
        let n = self.buf.len() - start;
        if n == 0 {
            return;
        }
        match self.pieces.back_mut() {
            Some(Piece::Bytes(m)) => *m += n,
            _ => self.pieces.push_back(Piece::Bytes(n)),
        }
    }

    /// Queues `len` bytes of `file` from `offset`.
    pub fn push_file(&mut self, file: Rc<File>, offset: u64, len: u64) {
        if len > 0 {
            self.pieces.push_back(Piece::File { file, offset, len });
        }
    }

    /// Writes as much as the socket takes.
    ///
    /// `fin_follows`: the connection is shut down for writing right after
    /// the last byte, so that byte is sent with `MSG_MORE` and the FIN
    /// leaves in the same segment (one packet, and one ACK, fewer per
    /// closing answer).
    pub fn flush(&mut self, stream: &TcpStream, fin_follows: bool) -> io::Result<Flushed> {
        self.flush_limited(stream, usize::MAX, fin_follows)
    }

    /// Writes as much as the socket takes, but at most `limit` bytes.
    pub fn flush_limited(
        &mut self,
        stream: &TcpStream,
        mut limit: usize,
        fin_follows: bool,
    ) -> io::Result<Flushed> {
        loop {
            if limit == 0 && !self.pieces.is_empty() {
                return Ok(Flushed::Limit);
            }
            let last = self.pieces.len() == 1;
            let Some(piece) = self.pieces.front_mut() else {
                break;
            };
            match piece {
                Piece::Bytes(n) => {
                    let more = !last || (fin_follows && *n <= limit);
                    let end = self.pos + (*n).min(limit);
                    match net::send(stream, &self.buf[self.pos..end], more) {
                        Ok(w) => {
                            limit -= w;
                            self.pos += w;
                            self.written += w as u64;
                            *n -= w;
                            if *n == 0 {
                                self.pieces.pop_front();
                            }
                        }
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                            return Ok(Flushed::Blocked)
                        }
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                        Err(e) => return Err(e),
                    }
                }
                Piece::File { file, offset, len } => {
                    let chunk = ((*len).min(1 << 30) as usize).min(limit);
                    match net::sendfile(stream, &**file, offset, chunk) {
                        Ok(0) => {
                            // The file shrank under us: the promised length
                            // cannot be kept, so the connection must end.
                            return Err(io::Error::new(
                                io::ErrorKind::UnexpectedEof,
                                "file truncated while sending",
                            ));
                        }
                        Ok(w) => {
                            limit -= w;
                            self.written += w as u64;
                            *len -= w as u64;
                            if *len == 0 {
                                self.pieces.pop_front();
                            }
                        }
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                            return Ok(Flushed::Blocked)
                        }
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                        Err(e) => return Err(e),
                    }
                }
            }
        }
        self.buf.clear();
        self.pos = 0;
        Ok(Flushed::All)
    }

    /// Drops everything queued (keeping capacity).
    pub fn clear(&mut self) {
        self.buf.clear();
        self.pos = 0;
        self.pieces.clear();
    }
}
