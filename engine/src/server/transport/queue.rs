//! A connection's output queue, sans-IO: header and small-body bytes in
//! one buffer, large file ranges as ranges, in order; whichever
//! transport sends them takes the front piece and says how much went.
//! Body bytes relayed from an upstream may wait in a pipe instead
//! ([`Pipe`], `splice(2)`: never in the server's memory), on plain TCP
//! only. Consecutive byte pieces merge, so a head and a small body (or a batch
//! of pipelined answers) leave in a single write.
//!
//! The queue also knows where each answer ends, with its access-log line
//! drafted: the line is completed with the bytes actually sent once the
//! answer's last byte is written or the connection ends. Positions count
//! the bytes of the connection (see `Conn::sent`).
//!
//! The queue's memory is lent by the worker while output waits: an idle
//! connection's [`Out`] holds nothing (one pointer), and taking a queue
//! from the spares or giving it back moves only that pointer.

use std::collections::VecDeque;
use std::fs::File;
use std::rc::Rc;
use std::time::Instant;

use crate::log::Draft;
use crate::sys::cached::Warmth;
use crate::sys::mapped::{Mapped, Part, MAX_IOV};
use crate::sys::splice::Pipe;

/// A queued piece of output.
#[derive(Debug)]
enum Piece {
    /// The next `n` bytes of the buffer.
    Bytes(usize),
    /// A file range: what of it is not sent yet.
    File(FileRange),
    /// Bytes held in a pipe (what of them is not sent yet).
    Pipe(Pipe),
    /// A file range sent from a mapping of it (plain TCP only).
    Mapped(Mapped),
}

impl Piece {
    /// The bytes of it not sent yet.
    fn left(&self) -> u64 {
        match self {
            Piece::Bytes(n) => *n as u64,
            Piece::File(range) => range.len,
            Piece::Pipe(pipe) => pipe.held() as u64,
            Piece::Mapped(m) => m.len as u64,
        }
    }
}

/// The part of a queued file range not sent yet: `len` bytes of `file`
/// from `offset`. The queue moves it on as bytes are sent; a transport
/// that caches what it read of the file checks its cache against it.
#[derive(Debug)]
pub struct FileRange {
    /// The file.
    pub file: Rc<File>,
    /// Where the bytes to send start.
    pub offset: u64,
    /// How many are left to send.
    pub len: u64,
}

/// The file range a flush reaches first (see [`Out::next_file`]).
pub struct NextFile<'a> {
    /// The range.
    pub range: &'a FileRange,
    /// What is known of whether its bytes are cached.
    pub warmth: &'a mut Warmth,
    /// The bytes queued before it.
    pub before: u64,
    /// Another file range is queued behind it.
    pub more: bool,
}

/// The piece at the front of a queue, for a transport to send.
#[derive(Debug)]
pub enum Front<'a> {
    /// Bytes.
    Bytes(&'a [u8]),
    /// A file range.
    File(&'a FileRange),
    /// Bytes in a pipe, for `splice` (plain TCP only: the sinks queue
    /// none on a TLS connection).
    Pipe(&'a Pipe),
    /// A file range in a mapping, sent with the bytes around it by
    /// [`Out::gather`] (plain TCP only, as pipes).
    Mapped(&'a Mapped),
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
    /// Its line, drafted in the queue's draft buffer.
    pub draft: Draft,
}

/// Queued output for one connection (see the module documentation).
#[derive(Debug, Default)]
pub struct Out(Option<Box<Queue>>);

/// What an [`Out`] holds while it is lent.
#[derive(Debug)]
struct Queue {
    buf: Vec<u8>,
    /// Bytes of `buf` already written.
    pos: usize,
    pieces: VecDeque<Piece>,
    /// Bytes taken by transports so far.
    written: u64,
    /// The ends of answers queued here (boxed: most queues never log).
    endings: Option<Box<Endings>>,
    /// Whether the first file range's next bytes are in the page cache
    /// (see `server::worker::warm`; a flush never goes past a file range
    /// before it is all sent).
    warmth: Warmth,
    /// How many file ranges are queued (most queues hold none: then
    /// [`Out::next_file`] looks no further).
    files: u32,
}

/// The answers whose last byte is queued, in order, with their drafted
/// log lines back to back.
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
        Out(Some(Box::new(Queue {
            buf: Vec::with_capacity(cap),
            pos: 0,
            pieces: VecDeque::with_capacity(64),
            written: 0,
            endings: None,
            warmth: Warmth::default(),
            files: 0,
        })))
    }

    /// The queue, made if this `Out` holds none (the worker lends one
    /// before anything is written, so this does not allocate then).
    fn queue(&mut self) -> &mut Queue {
        self.0.get_or_insert_with(|| {
            let Out(q) = Out::with_capacity(0);
            q.unwrap_or_else(|| unreachable!("with_capacity makes a queue"))
        })
    }

    /// Bytes in the queue not yet written (including any appended to the
    /// buffer and not committed yet). (Out of line: its callers are not
    /// on a request's path, and they are many.)
    #[inline(never)]
    pub fn unsent(&self) -> u64 {
        let Some(q) = &self.0 else { return 0 };
        // (Bytes are counted from the buffer, with those not committed.)
        let files: u64 = q
            .pieces
            .iter()
            .filter(|p| !matches!(p, Piece::Bytes(_)))
            .map(Piece::left)
            .sum();
        (q.buf.len() - q.pos) as u64 + files
    }

    /// Bytes taken by transports since the queue was made.
    pub fn written(&self) -> u64 {
        self.0.as_ref().map_or(0, |q| q.written)
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
        let e = self.queue().endings.get_or_insert_with(Box::default);
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
        let endings = self.0.as_ref().and_then(|q| q.endings.as_ref());
        endings.is_some_and(|e| !e.list.is_empty())
    }

    /// Hands every answer that has ended to `done` with its line and the
    /// body bytes it sent, given that the connection has sent `sent`
    /// bytes; with `all` (the connection is ending), every answer, cut
    /// short or not.
    pub fn settle(&mut self, sent: u64, all: bool, mut done: impl FnMut(&[u8], &Ending, u64)) {
        let Some(endings) = self.0.as_mut().and_then(|q| q.endings.as_mut()) else {
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
        self.0.as_ref().is_none_or(|q| q.pieces.is_empty())
    }

    /// The buffer's capacity (memory held; 0 when no queue is lent).
    pub fn capacity(&self) -> usize {
        self.0.as_ref().map_or(0, |q| q.buf.capacity())
    }

    /// Bytes waiting in the buffer (not counting file ranges).
    pub fn buffered(&self) -> usize {
        self.0.as_ref().map_or(0, |q| q.buf.len() - q.pos)
    }

    /// Bytes waiting in pipes.
    pub fn piped(&self) -> usize {
        let Some(q) = &self.0 else { return 0 };
        let held = |p: &Piece| match p {
            Piece::Pipe(pipe) => pipe.held(),
            Piece::Bytes(_) | Piece::File(_) | Piece::Mapped(_) => 0,
        };
        q.pieces.iter().map(held).sum()
    }

    /// The bytes waiting in the buffer (file ranges are not in it).
    pub fn buffered_bytes(&self) -> &[u8] {
        self.0.as_ref().map_or(&[], |q| &q.buf[q.pos..])
    }

    /// Makes room for `extra` more bytes without growing the buffer
    /// where dropping what was written already from its front is
    /// enough (a queue that is sent a part at a time while it is
    /// appended to would otherwise grow past what waits in it).
    pub fn make_room(&mut self, extra: usize) {
        if let Some(q) = self.0.as_mut() {
            if q.pos > 0 && q.buf.len() + extra > q.buf.capacity() {
                q.buf.drain(..q.pos);
                q.pos = 0;
            }
        }
    }

    /// Appends bytes to the queue.
    pub fn push_bytes(&mut self, bytes: &[u8]) {
        let start = self.buf_mut().len();
        self.buf_mut().extend_from_slice(bytes);
        self.commit(start);
    }

    /// Direct access to the buffer, to write into it; follow with
    /// [`Out::commit`] passing the length the buffer had before.
    pub fn buf_mut(&mut self) -> &mut Vec<u8> {
        &mut self.queue().buf
    }

    /// Queues the bytes appended to the buffer since it was `start` long.
    pub fn commit(&mut self, start: usize) {
        let q = self.queue();
        let n = q.buf.len() - start;
        if n == 0 {
            return;
        }
        match q.pieces.back_mut() {
            Some(Piece::Bytes(m)) => *m += n,
            _ => q.pieces.push_back(Piece::Bytes(n)),
        }
    }

    /// Queues `len` bytes of `file` from `offset`.
    pub fn push_file(&mut self, file: Rc<File>, offset: u64, len: u64) {
        if len > 0 {
            let range = FileRange { file, offset, len };
            let q = self.queue();
            q.pieces.push_back(Piece::File(range));
            q.files += 1;
        }
    }

    /// Queues the bytes `pipe` holds (an empty one goes back at once).
    pub fn push_pipe(&mut self, pipe: Pipe) {
        if pipe.held() > 0 {
            self.queue().pieces.push_back(Piece::Pipe(pipe));
        }
    }

    /// Queues a mapped file range (an empty one is dropped).
    pub fn push_mapped(&mut self, m: Mapped) {
        if m.len > 0 {
            self.queue().pieces.push_back(Piece::Mapped(m));
        }
    }

    /// Whether the front pieces are for [`Out::gather`]: a mapped range,
    /// or bytes with one behind them.
    pub fn gathers(&self) -> bool {
        let Some(q) = &self.0 else { return false };
        matches!(
            (q.pieces.front(), q.pieces.get(1)),
            (Some(Piece::Mapped(_)), _) | (Some(Piece::Bytes(_)), Some(Piece::Mapped(_)))
        )
    }

    /// The byte and mapped pieces at the front, in order, into `parts`
    /// (as many as it holds); how many, and whether they are all that is
    /// queued. Follow with [`Out::advance_across`].
    pub fn gather<'a>(&'a self, parts: &mut [Part<'a>; MAX_IOV]) -> (usize, bool) {
        let Some(q) = &self.0 else { return (0, true) };
        let (mut n, mut pos) = (0, q.pos);
        for piece in q.pieces.iter().take(MAX_IOV) {
            parts[n] = match piece {
                Piece::Bytes(m) => {
                    pos += m;
                    Part::Bytes(&q.buf[pos - m..pos])
                }
                Piece::Mapped(m) => Part::Mapped(m),
                Piece::File(_) | Piece::Pipe(_) => break,
            };
            n += 1;
        }
        (n, n == q.pieces.len())
    }

    /// `n` bytes of the front pieces were sent, across as many pieces as
    /// they fill.
    pub fn advance_across(&mut self, mut n: usize) {
        while n > 0 {
            let Some(left) = self
                .0
                .as_ref()
                .and_then(|q| q.pieces.front())
                .map(Piece::left)
            else {
                return;
            };
            let step = n.min(usize::try_from(left).unwrap_or(usize::MAX));
            self.advance(step);
            n -= step;
        }
    }

    /// The file range a flush reaches first, unless a pipe or mapped
    /// range comes before it: the front piece, or the one behind bytes;
    /// with the bytes before it, and whether another file range is
    /// queued behind it (a multipart answer's next part).
    pub fn next_file(&mut self) -> Option<NextFile<'_>> {
        let q = self.0.as_mut().filter(|q| q.files > 0)?;
        let before = match q.pieces.front() {
            Some(Piece::Bytes(n)) => Some(*n as u64),
            _ => None,
        };
        match q.pieces.get(usize::from(before.is_some())) {
            Some(Piece::File(range)) => Some(NextFile {
                range,
                warmth: &mut q.warmth,
                before: before.unwrap_or(0),
                more: q.files > 1,
            }),
            _ => None,
        }
    }

    /// Whether the file range a flush reaches first waits for its bytes
    /// to be read in (see [`Out::next_file`]).
    pub fn reads_in(&self) -> bool {
        self.0.as_ref().is_some_and(|q| q.warmth.is_reading())
    }

    /// The piece to send next, and whether it is the last one queued.
    pub fn front(&self) -> Option<(Front<'_>, bool)> {
        let q = self.0.as_ref()?;
        let last = q.pieces.len() == 1;
        let front = match q.pieces.front()? {
            Piece::Bytes(n) => Front::Bytes(&q.buf[q.pos..q.pos + n]),
            Piece::File(range) => Front::File(range),
            Piece::Pipe(pipe) => Front::Pipe(pipe),
            Piece::Mapped(m) => Front::Mapped(m),
        };
        Some((front, last))
    }

    /// `n` bytes of the front piece were sent.
    pub fn advance(&mut self, n: usize) {
        let Some(q) = self.0.as_mut() else { return };
        q.written += n as u64;
        let done = match q.pieces.front_mut() {
            Some(Piece::Bytes(m)) => {
                q.pos += n;
                *m -= n;
                *m == 0
            }
            Some(Piece::File(range)) => {
                range.offset += n as u64;
                range.len -= n as u64;
                if range.len == 0 {
                    q.warmth = Warmth::default();
                    q.files -= 1;
                }
                range.len == 0
            }
            Some(Piece::Pipe(pipe)) => {
                pipe.sent(n);
                pipe.held() == 0
            }
            Some(Piece::Mapped(m)) => {
                m.sent(n);
                m.len == 0
            }
            None => false,
        };
        if done {
            q.pieces.pop_front();
        }
        if q.pieces.is_empty() {
            q.buf.clear();
            q.pos = 0;
        }
    }

    /// Drops everything queued (keeping the memory). Endings should be
    /// settled first; any left are dropped.
    pub fn clear(&mut self) {
        let Some(q) = self.0.as_mut() else { return };
        q.buf.clear();
        q.pos = 0;
        q.pieces.clear();
        q.warmth = Warmth::default();
        q.files = 0;
        if let Some(e) = q.endings.as_mut() {
            e.list.clear();
            e.drafts.clear();
            e.done = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_leave_in_order_and_bytes_merge() {
        let out = Out::default();
        assert!(
            out.is_empty() && out.capacity() == 0,
            "an idle queue holds nothing"
        );
        let mut out = Out::with_capacity(64);
        out.push_bytes(b"head ");
        out.push_bytes(b"body");
        let file = Rc::new(File::open("/dev/null").unwrap());
        out.push_file(Rc::clone(&file), 10, 5);
        out.push_bytes(b"tail");
        assert_eq!(out.unsent(), 18);
        let Some((Front::Bytes(b), false)) = out.front() else {
            panic!("bytes first")
        };
        assert_eq!(b, b"head body", "consecutive bytes merge");
        out.advance(5);
        assert!(matches!(out.front(), Some((Front::Bytes(b"body"), false))));
        out.advance(4);
        let Some((Front::File(range), false)) = out.front() else {
            panic!("then the file range")
        };
        assert_eq!((range.offset, range.len), (10, 5));
        out.advance(2);
        let Some((Front::File(range), false)) = out.front() else {
            panic!("still the file range")
        };
        assert_eq!((range.offset, range.len), (12, 3));
        out.advance(3);
        assert!(matches!(out.front(), Some((Front::Bytes(b"tail"), true))));
        out.advance(4);
        assert!(out.is_empty() && out.front().is_none());
        assert_eq!((out.written(), out.unsent(), out.buffered()), (18, 0, 0));
    }

    #[test]
    fn mapped_ranges_gather_with_the_bytes_around_them_and_advance_across() {
        use std::io::Read;
        use std::os::unix::net::UnixStream;

        use crate::sys::mapped;

        let path = std::env::temp_dir().join(format!("brisk-queue-map-{}", std::process::id()));
        let data: Vec<u8> = (0..50_000u32).map(|i| (i % 251) as u8).collect();
        std::fs::write(&path, &data).unwrap();
        let file = Rc::new(File::open(&path).unwrap());
        let m = Mapped::new(&file, 100, 30_000).unwrap();
        let mut out = Out::with_capacity(64);
        out.push_bytes(b"h1");
        assert!(!out.gathers(), "bytes alone go as before");
        out.push_mapped(m.part(100, 10_000));
        out.push_bytes(b"h2");
        out.push_mapped(m.part(10_100, 20_000));
        out.push_file(Rc::clone(&file), 0, 10);
        out.push_bytes(b"tail");
        assert_eq!(out.unsent(), 2 + 10_000 + 2 + 20_000 + 10 + 4);
        assert!(out.gathers());
        let mut parts = [Part::Bytes(&[]); MAX_IOV];
        let (n, all) = out.gather(&mut parts);
        assert_eq!((n, all), (4, false), "up to the file range");
        let (a, mut b) = UnixStream::pair().unwrap();
        // A part of them, ending inside the second mapped range.
        let sent = mapped::send(&a, &parts[..n], 2 + 10_000 + 2 + 5, false).unwrap();
        assert_eq!(sent, 10_009);
        out.advance_across(sent);
        let Some((Front::Mapped(rest), false)) = out.front() else {
            panic!("the rest of the second range")
        };
        assert_eq!((rest.offset, rest.len), (10_105, 19_995));
        let mut parts = [Part::Bytes(&[]); MAX_IOV];
        let (n, _) = out.gather(&mut parts);
        let sent2 = mapped::send(&a, &parts[..n], usize::MAX, false).unwrap();
        out.advance_across(sent2);
        assert!(matches!(out.front(), Some((Front::File(_), false))));
        let mut got = vec![0; sent + sent2];
        b.read_exact(&mut got).unwrap();
        let mut want = b"h1".to_vec();
        want.extend_from_slice(&data[100..10_100]);
        want.extend_from_slice(b"h2");
        want.extend_from_slice(&data[10_100..30_100]);
        assert!(got == want, "in order, byte for byte");
        assert_eq!(out.written(), (sent + sent2) as u64);
        std::fs::remove_file(&path).unwrap();
    }

    #[cfg(feature = "upstreams")]
    #[test]
    fn pipes_are_counted_sent_in_order_and_dropped_with_the_queue() {
        use std::io::Write;
        use std::os::unix::net::UnixStream;

        use crate::sys::splice;

        let (mut upstream, from) = UnixStream::pair().unwrap();
        upstream.write_all(b"0123456789").unwrap();
        let fill = |n| {
            let mut pipe = Pipe::take().unwrap();
            assert_eq!(pipe.fill_from(&from, n).unwrap(), n);
            pipe
        };
        let mut out = Out::with_capacity(64);
        out.push_bytes(b"head ");
        out.push_pipe(fill(4));
        out.push_bytes(b" mid ");
        out.push_pipe(fill(6));
        out.push_pipe(Pipe::take().unwrap());
        assert_eq!((out.unsent(), out.piped(), out.buffered()), (20, 10, 10));
        assert!(matches!(out.front(), Some((Front::Bytes(b"head "), false))));
        out.advance(5);
        let Some((Front::Pipe(p), false)) = out.front() else {
            panic!("then the pipe")
        };
        assert_eq!(p.held(), 4);
        out.advance(4);
        assert_eq!(splice::open(), 3, "empty pipes go back, still open");
        assert!(matches!(out.front(), Some((Front::Bytes(b" mid "), false))));
        out.advance(5);
        let Some((Front::Pipe(p), true)) = out.front() else {
            panic!("then the other pipe, the last piece (an empty one is not queued)")
        };
        assert_eq!(p.held(), 6);
        out.advance(2);
        assert_eq!((out.unsent(), out.piped(), out.written()), (4, 4, 16));
        // The client leaves: the pipe that holds bytes is closed.
        out.clear();
        assert_eq!((out.unsent(), splice::open()), (0, 2));
    }
}
