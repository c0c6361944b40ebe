//! A connection's output queue: header and small-body bytes in one buffer,
//! large file ranges by `sendfile` (or copied: see `file_copy`), flushed in
//! order with as few syscalls as possible (consecutive byte pieces leave in
//! a single write).
//!
//! The queue also knows where each answer ends, with its access-log line
//! drafted: the line is completed with the bytes actually sent once the
//! answer's last byte is written or the connection ends. Positions count
//! the bytes of the connection (see `Conn::sent`), so they stay true when
//! a queue moves from the worker's staging queue to the connection.

use std::collections::VecDeque;
use std::fs::File;
use std::io;
use std::rc::Rc;
use std::time::Instant;

use mio::net::TcpStream;

use super::file_copy::Copied;
use crate::log::Draft;
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
    /// A file range copied through memory (`[static] sendfile = false`).
    Copy(Box<Copied>),
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

/// Where a queued answer ends, for its access-log line.
#[derive(Debug, Clone, Copy)]
pub struct Ending {
    /// The connection's byte count (`Conn::sent`) once its last byte is out.
    pub end: u64,
    /// The connection's byte count where its body begins.
    pub body_from: u64,
    /// When the first byte of its request arrived.
    pub started: Instant,
    /// Its line, drafted in [`Out`]'s draft buffer.
    pub draft: Draft,
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
    /// The ends of answers queued here (boxed: an idle connection's
    /// queue holds none, and a queue once used keeps its box).
    endings: Option<Box<Endings>>,
}

/// The answers whose last byte is queued in an [`Out`], in order, with
/// their drafted log lines back to back.
#[derive(Debug, Default)]
struct Endings {
    list: VecDeque<Ending>,
    drafts: Vec<u8>,
    /// Bytes of `drafts` that belong to endings already settled.
    done: usize,
}

impl Out {
    /// An empty queue with room for `cap` bytes.
    pub fn with_capacity(cap: usize) -> Out {
        Out {
            buf: Vec::with_capacity(cap),
            pos: 0,
            pieces: VecDeque::with_capacity(64),
            written: 0,
            endings: None,
        }
    }

    /// Bytes in the queue not yet written (including any appended to the
    /// buffer and not committed yet).
    pub fn unsent(&self) -> u64 {
        let files: u64 = self
            .pieces
            .iter()
            .map(|p| match p {
                Piece::File { len, .. } => *len,
                Piece::Copy(copy) => copy.unsent(),
                Piece::Bytes(_) => 0,
            })
            .sum();
        (self.buf.len() - self.pos) as u64 + files
    }

    /// Records that an answer ends at connection position `end` (its
    /// body from `body_from`); `draft` appends its log line to the buffer
    /// it is given.
    pub fn push_ending(
        &mut self,
        end: u64,
        body_from: u64,
        started: Instant,
        draft: impl FnOnce(&mut Vec<u8>) -> Draft,
    ) {
        let e = self.endings.get_or_insert_with(Box::default);
        let draft = draft(&mut e.drafts);
        e.list.push_back(Ending {
            end,
            body_from,
            started,
            draft,
        });
    }

    /// Whether an answer's end waits here.
    pub fn has_endings(&self) -> bool {
        self.endings.as_ref().is_some_and(|e| !e.list.is_empty())
    }

    /// Hands every answer that has ended to `done` with its line and the
    /// body bytes it sent, given that the connection has sent `sent`
    /// bytes; with `all` (the connection is ending), every answer, cut
    /// short or not.
    pub fn settle(&mut self, sent: u64, all: bool, mut done: impl FnMut(&[u8], &Ending, u64)) {
        let Some(endings) = self.endings.as_mut() else {
            return;
        };
        while let Some(e) = endings.list.front() {
            if e.end > sent && !all {
                break;
            }
            let bytes = sent.min(e.end).saturating_sub(e.body_from);
            let len = e.draft.len as usize;
            done(&endings.drafts[endings.done..endings.done + len], e, bytes);
            endings.done += len;
            endings.list.pop_front();
        }
        if endings.list.is_empty() {
            endings.drafts.clear();
            endings.done = 0;
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

    /// The bytes waiting in the buffer (file ranges are not in it).
    pub fn buffered_bytes(&self) -> &[u8] {
        &self.buf[self.pos..]
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

    /// Queues `len` bytes of `file` from `offset`, to be copied through
    /// memory rather than sent by `sendfile` (see [`super::file_copy`]).
    pub fn push_copy(&mut self, file: Rc<File>, offset: u64, len: u64) {
        if len > 0 {
            let copied = Copied::new(file, offset, len);
            self.pieces.push_back(Piece::Copy(Box::new(copied)));
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
        let throttled = limit != usize::MAX;
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
                Piece::Copy(copy) => {
                    match copy.send(stream, limit, !last, fin_follows, throttled) {
                        Ok(w) => {
                            limit -= w;
                            self.written += w as u64;
                            if copy.is_done() {
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

    /// Drops everything queued (keeping capacity). Endings should be
    /// settled first; any left are dropped.
    pub fn clear(&mut self) {
        self.buf.clear();
        self.pos = 0;
        self.pieces.clear();
        if let Some(e) = self.endings.as_mut() {
            e.list.clear();
            e.drafts.clear();
            e.done = 0;
        }
    }
}
