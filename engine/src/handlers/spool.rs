//! A request body held whole before the program that reads it starts: a
//! chunked body on a CGI route, whose length (`CONTENT_LENGTH`, RFC 3875
//! §4.1.2) is known only once its last chunk is in.
//!
//! The first [`MEMORY`] bytes stay in memory; a larger body moves to an
//! unnamed temporary file (`O_TMPFILE`) in `temp_dir`, so that a worker
//! holding many uploads at once holds at most [`MEMORY`] of each in RAM
//! (what nginx's `client_body_buffer_size` and lighttpd's upload
//! directories do). The file has no name: nothing is left behind, whatever
//! happens to the request or the process, and the sandbox needs no right
//! to create, name or remove files there, only to open what it created.

use std::fs::{File, OpenOptions};
use std::io::{self, Seek, SeekFrom, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use crate::sys::splice::Pipe;

/// Bytes of a held body kept in memory before it moves to a file.
pub const MEMORY: usize = 64 * 1024;

/// A body being held, then read back.
#[derive(Debug, Default)]
pub struct Spool {
    /// The body while it fits in [`MEMORY`]; what is left to read back.
    mem: Vec<u8>,
    /// The body once it outgrew memory.
    file: Option<File>,
    /// Bytes held so far.
    len: u64,
    /// Why the body could not be kept (the file could not be created or
    /// written); later bytes are dropped.
    failed: Option<io::Error>,
    /// The body goes into its file from its first byte ([`Spool::into_file`]),
    /// by `write` or from a pipe ([`Spool::take_from`]).
    direct: bool,
}

impl Spool {
    /// A body written into `file` from its first byte (a WebDAV PUT's
    /// unnamed file in the target's directory), never held in memory.
    pub fn into_file(file: File) -> Spool {
        Spool {
            file: Some(file),
            direct: true,
            ..Spool::default()
        }
    }

    /// Whether the body's next bytes may come in a pipe
    /// ([`Spool::take_from`]): it goes into its file from its first byte,
    /// and nothing failed.
    pub fn takes_pipe(&self) -> bool {
        self.direct && self.file.is_some() && self.failed.is_none()
    }

    /// Adds the bytes `pipe` holds to the body, moved from the pipe into
    /// the file by the kernel (`splice(2)`: never in the server's memory).
    /// A failure is kept as [`Spool::push`]'s are.
    pub fn take_from(&mut self, pipe: &mut Pipe) {
        let Some(file) = self.file.as_ref().filter(|_| self.takes_pipe()) else {
            return;
        };
        let n = pipe.held() as u64;
        match pipe.empty_into(file) {
            Ok(()) => self.len += n,
            Err(e) => {
                self.failed = Some(e);
                self.file = None;
            }
        }
    }

    /// The file the body went to, once it is all in.
    pub fn take_file(&mut self) -> Option<File> {
        self.file.take()
    }

    /// Adds `data` to the body; the first bytes past [`MEMORY`] move it
    /// into a new temporary file in `dir`.
    pub fn push(&mut self, data: &[u8], dir: &Path) {
        if self.failed.is_some() || data.is_empty() {
            return;
        }
        self.len += data.len() as u64;
        if self.file.is_none() && self.mem.len() + data.len() <= MEMORY {
            self.mem.extend_from_slice(data);
            return;
        }
        if let Err(e) = self.write(data, dir) {
            self.failed = Some(e);
            self.file = None;
            self.mem = Vec::new();
        }
    }

    fn write(&mut self, data: &[u8], dir: &Path) -> io::Result<()> {
        let file = match &mut self.file {
            Some(f) => f,
            None => {
                let mut f = create(dir)?;
                f.write_all(&self.mem)?;
                self.mem = Vec::new();
                self.file.insert(f)
            }
        };
        file.write_all(data)
    }

    /// The length of the body held.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether nothing is held.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether the body went to a file.
    pub fn spilled(&self) -> bool {
        self.file.is_some()
    }

    /// Why the body could not be kept, if it could not.
    pub fn take_error(&mut self) -> Option<io::Error> {
        self.failed.take()
    }

    /// Ends writing: from now on [`Spool::read_into`] reads the body back
    /// from its start.
    pub fn rewind(&mut self) -> io::Result<()> {
        match &mut self.file {
            Some(f) => f.seek(SeekFrom::Start(0)).map(drop),
            None => Ok(()),
        }
    }

    /// Moves more of the body to the end of `buf`: up to `max` bytes, or
    /// from a file up to `buf`'s spare capacity if that is larger. Returns
    /// how many (0 once it has all been read).
    pub fn read_into(&mut self, buf: &mut Vec<u8>, max: usize) -> io::Result<usize> {
        let Some(file) = &self.file else {
            let n = self.mem.len().min(max);
            buf.extend(self.mem.drain(..n));
            return Ok(n);
        };
        buf.reserve(max);
        loop {
            match crate::sys::net::read_into_spare(file, buf) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                other => return other,
            }
        }
    }
}

/// An answer read ahead of a slow client, in the order it came: the
/// first [`MEMORY`] bytes held in memory, more in an unnamed file in
/// `temp_dir` (nginx's `fastcgi_buffering` with its temporary files), so
/// that the application that wrote it is free while the client takes it.
/// Bytes are taken from the front as they are pushed at the back; the
/// file is a ring of at most `cap` bytes, written again from its start
/// as its front is taken, so it never grows past what it may hold
/// however long the answer.
#[cfg(feature = "upstreams")]
#[derive(Debug)]
pub struct Ahead {
    /// Bytes in memory, taken from `at` on: all older than the file's.
    mem: Vec<u8>,
    at: usize,
    /// The file, once memory was full: `len` bytes from `start` on
    /// (wrapping at `cap`); its position is where the next go, `(start +
    /// len) % cap`.
    file: Option<File>,
    start: u64,
    len: u64,
    cap: u64,
}

#[cfg(feature = "upstreams")]
impl Ahead {
    /// Holding at most `cap` bytes in its file.
    pub fn new(cap: u64) -> Ahead {
        Ahead {
            mem: Vec::new(),
            at: 0,
            file: None,
            start: 0,
            len: 0,
            cap: cap.max(1),
        }
    }

    /// How many bytes it holds.
    pub fn held(&self) -> u64 {
        (self.mem.len() - self.at) as u64 + self.len
    }

    /// Adds `data` at the back: in memory while it fits there and the
    /// file holds nothing, else in the file (made in `dir` the first
    /// time). On an error, nothing of `data` is held.
    pub fn push(&mut self, data: &[u8], dir: &Path) -> io::Result<()> {
        if self.len == 0 && self.mem.len() - self.at + data.len() <= MEMORY {
            if self.mem.len() + data.len() > MEMORY {
                self.mem.drain(..self.at);
                self.at = 0;
            }
            self.mem.extend_from_slice(data);
            return Ok(());
        }
        if self.len + data.len() as u64 > self.cap {
            return Err(io::Error::other("more than it may hold"));
        }
        let file = match &mut self.file {
            Some(f) => f,
            None => self.file.insert(create(dir)?),
        };
        // (By `write` at the file's position and `lseek`, as the sandbox
        // allows, not `pwrite`.)
        let was = (self.start + self.len) % self.cap;
        let (mut at, mut rest, mut wrote) = (was, data, 0);
        let went = loop {
            let n = rest.len().min((self.cap - at) as usize);
            if let Err(e) = file.write_all(&rest[..n]) {
                break Err(e);
            }
            (rest, at, wrote) = (&rest[n..], at + n as u64, wrote + n as u64);
            if at == self.cap {
                if let Err(e) = file.seek(SeekFrom::Start(0)) {
                    break Err(e);
                }
                at = 0;
            }
            if rest.is_empty() {
                break Ok(());
            }
        };
        match went {
            Ok(()) => self.len += wrote,
            // (Where the next bytes go, as if none of these had.)
            Err(_) => drop(file.seek(SeekFrom::Start(was))),
        }
        went
    }

    /// Moves up to `max` bytes from the front to the end of `buf`;
    /// how many (0: it holds none).
    pub fn take(&mut self, buf: &mut Vec<u8>, max: usize) -> io::Result<usize> {
        use std::os::unix::fs::FileExt;
        if self.at < self.mem.len() {
            let n = (self.mem.len() - self.at).min(max);
            buf.extend_from_slice(&self.mem[self.at..self.at + n]);
            self.at += n;
            if self.at == self.mem.len() {
                self.mem.clear();
                self.at = 0;
            }
            return Ok(n);
        }
        let Some(mut file) = self.file.as_ref().filter(|_| self.len > 0) else {
            return Ok(0);
        };
        // (Up to the ring's end: the rest at its start, next time.)
        let n = (self.len.min(self.cap - self.start) as usize).min(max);
        let from = buf.len();
        buf.resize(from + n, 0);
        let got = loop {
            match file.read_at(&mut buf[from..], self.start) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Ok(0) => break Err(io::ErrorKind::UnexpectedEof.into()),
                other => break other,
            }
        };
        buf.truncate(from + *got.as_ref().unwrap_or(&0));
        let got = got? as u64;
        (self.start, self.len) = ((self.start + got) % self.cap, self.len - got);
        if self.len == 0 && file.seek(SeekFrom::Start(0)).is_ok() {
            self.start = 0;
        }
        Ok(got as usize)
    }
}

/// A client that takes less than this in a second while the application
/// or upstream has more for it is slow: its answer is held ahead of it in
/// `temp_dir` (`buffer_answer`). At 1 MiB/s, a 10 MiB answer would keep
/// the other side waiting 10 s; a faster one frees it soon enough that
/// the copy through a file (a write and a read of every byte) is not
/// worth its CPU.
#[cfg(feature = "upstreams")]
pub const SLOW: u64 = 1 << 20;

/// The state of an answer read ahead of a slow client (`buffer_answer`
/// of `[[fastcgi]]` and `[[reverse_proxy]]`; see
/// [`super::produce::Produce::hold_ahead`]): what is held, how much may
/// be, and how the answer ended once it did.
#[cfg(feature = "upstreams")]
#[derive(Debug)]
pub struct ReadAhead {
    held: Ahead,
    /// The most held for a slow client (0: nothing is read ahead).
    hold: u64,
    /// Its client took less than [`SLOW`] in a second while the other
    /// side had more for it: up to `hold` is held from now on (before,
    /// nothing: an answer to a client that keeps up goes as it did, by
    /// splice where it can, with no copy through memory or a file).
    slow: bool,
    /// Body bytes given, and how many at the last tick (`u64::MAX`: none
    /// yet, the first tick only counts).
    given: u64,
    given_at_tick: u64,
    /// How the answer read ahead ended (`End`, or `Cut`), once it did:
    /// given after what is held.
    pub after: Option<Box<super::produce::Gave>>,
    /// The pieces read ahead, on their way in.
    pub buf: Vec<u8>,
    /// Bytes read ahead that could not be held (`temp_dir` failed):
    /// given after what is.
    unheld: Vec<u8>,
}

#[cfg(feature = "upstreams")]
impl ReadAhead {
    /// Up to `hold` bytes (none without a `temp_dir` to hold them in).
    pub fn new(hold: u64, temp: Option<&crate::config::Config>) -> ReadAhead {
        ReadAhead {
            // (The ring's room: two pieces of slack past the bound.)
            held: Ahead::new(hold.saturating_add(2 * 64 * 1024)),
            hold: if temp.is_some() { hold } else { 0 },
            slow: false,
            given: 0,
            given_at_tick: u64::MAX,
            after: None,
            buf: Vec::new(),
            unheld: Vec::new(),
        }
    }

    /// How many bytes it holds.
    pub fn held(&self) -> u64 {
        self.held.held() + self.unheld.len() as u64
    }

    /// Called at each chance to read ahead, when the other side has
    /// more than the client took (`tick`: a second went by): the most it
    /// may hold now (0 when nothing is to be read ahead: the client is
    /// not slow, reading ahead is off, or the answer ended).
    pub fn most(&mut self, tick: bool) -> u64 {
        if self.is_off() {
            return 0;
        }
        if tick {
            let took = self.given.wrapping_sub(self.given_at_tick);
            self.slow |= self.given_at_tick != u64::MAX && took < SLOW;
            self.given_at_tick = self.given;
        }
        match self.slow {
            true => self.hold,
            false => 0,
        }
    }

    /// Reading ahead is off now (`temp_dir` failed) or the answer ended.
    pub fn is_off(&self) -> bool {
        self.hold == 0 || self.after.is_some()
    }

    /// Holds `data`, past [`MEMORY`] in `temp`'s `temp_dir`. Where
    /// `temp_dir` cannot take it (said once in the error log, as coming
    /// from `label`), it is kept in memory to be given after what is
    /// held, and nothing more is read ahead ([`ReadAhead::is_off`]).
    pub fn push(
        &mut self,
        data: &[u8],
        temp: Option<&crate::config::Config>,
        label: &str,
        log: &mut crate::log::Logger,
    ) {
        let held = match temp.filter(|_| self.hold > 0) {
            Some(cfg) => self.held.push(data, &cfg.temp_dir).map_err(|e| {
                let dir = cfg.temp_dir.display();
                log.log(
                    crate::log::Level::Warn,
                    format_args!("{label}: cannot hold the answer ahead of the client in {dir}: {e}; it goes on as the client takes it"),
                );
            }),
            None => Err(()),
        };
        if held.is_err() {
            self.hold = 0;
            self.unheld.extend_from_slice(data);
        }
    }

    /// Moves up to `max` held bytes to `buf` (cleared first; past `max`
    /// for what could not be held); how many (0: it holds none).
    pub fn take(&mut self, buf: &mut Vec<u8>, max: usize) -> io::Result<usize> {
        buf.clear();
        let mut n = self.held.take(buf, max)?;
        if n == 0 {
            buf.append(&mut self.unheld);
            n = buf.len();
        }
        self.given += n as u64;
        Ok(n)
    }

    /// `n` body bytes were given from elsewhere (read as the client takes
    /// them).
    pub fn gave(&mut self, n: usize) {
        self.given += n as u64;
    }
}

/// An unnamed file in `dir`, readable and writable by this process only.
fn create(dir: &Path) -> io::Result<File> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .mode(0o600)
        .custom_flags(libc::O_TMPFILE)
        .open(dir)
}

/// Checks that unnamed temporary files can be made in `dir` (by this
/// process, as it now is: its user, its sandbox); the error says why not.
pub fn probe(dir: &Path) -> io::Result<()> {
    create(dir).map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_all(s: &mut Spool, step: usize) -> Vec<u8> {
        s.rewind().unwrap();
        let mut out = Vec::new();
        loop {
            let before = out.len();
            let n = s.read_into(&mut out, step).unwrap();
            assert_eq!(out.len() - before, n);
            assert!(n <= step.max(out.capacity()));
            if n == 0 {
                return out;
            }
        }
    }

    #[test]
    fn small_bodies_stay_in_memory() {
        let dir = Path::new("/nonexistent-brisk-dir");
        let mut s = Spool::default();
        s.push(b"hello ", dir);
        s.push(b"", dir);
        s.push(b"world", dir);
        assert!(s.take_error().is_none());
        assert!(!s.spilled());
        assert_eq!(s.len(), 11);
        assert_eq!(read_all(&mut s, 4), b"hello world");
    }

    #[test]
    fn large_bodies_go_to_an_unnamed_file() {
        let dir = std::env::temp_dir();
        let data: Vec<u8> = (0..MEMORY as u32 * 3).map(|i| (i % 251) as u8).collect();
        let mut s = Spool::default();
        for piece in data.chunks(7001) {
            s.push(piece, &dir);
        }
        assert!(s.take_error().is_none());
        assert!(s.spilled());
        assert_eq!(s.len(), data.len() as u64);
        assert_eq!(read_all(&mut s, MEMORY), data);
    }

    #[cfg(feature = "upstreams")]
    #[test]
    fn an_answer_held_ahead_comes_out_in_order_through_memory_and_a_ring() {
        let dir = std::env::temp_dir();
        let data: Vec<u8> = (0..MEMORY as u32 * 5).map(|i| (i % 251) as u8).collect();
        // A ring smaller than the answer: written round several times.
        let cap = 3 * MEMORY as u64 + 12345;
        let mut a = Ahead::new(cap);
        let (mut out, mut pushed) = (Vec::new(), 0);
        for round in 0..2 {
            for piece in data.chunks(9001) {
                while a.held() + piece.len() as u64 > cap {
                    a.take(&mut out, 5000).unwrap();
                }
                a.push(piece, &dir).unwrap();
                pushed += piece.len();
                if pushed % 3 == 0 {
                    a.take(&mut out, 5000).unwrap();
                }
                assert_eq!(a.held(), (pushed - out.len()) as u64);
                let size = a.file.as_ref().map_or(0, |f| f.metadata().unwrap().len());
                assert!(size <= cap, "{size}");
            }
            while a.take(&mut out, 7000).unwrap() > 0 {}
            assert_eq!(a.held(), 0);
            assert_eq!(out.len(), data.len() * (round + 1));
        }
        assert_eq!(out[..data.len()], data[..]);
        assert_eq!(out[data.len()..], data[..]);
        assert_eq!(a.take(&mut out, 10).unwrap(), 0);
        // More than the ring holds is refused, nothing of it held.
        a.push(&[1; MEMORY], &dir).unwrap();
        let e = a.push(&vec![2; cap as usize + 1], &dir).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::Other);
        assert_eq!(a.held(), MEMORY as u64);
        // Small answers never make a file.
        let mut b = Ahead::new(1 << 20);
        let nowhere = Path::new("/nonexistent-brisk-dir");
        b.push(b"hello", nowhere).unwrap();
        let mut got = Vec::new();
        b.take(&mut got, 2).unwrap();
        b.push(b" world", nowhere).unwrap();
        while b.take(&mut got, 4).unwrap() > 0 {}
        assert_eq!(got, b"hello world");
        let e = b.push(&[0; MEMORY + 1], nowhere);
        assert_eq!(e.unwrap_err().kind(), io::ErrorKind::NotFound);
        assert_eq!(b.held(), 0);
    }

    #[test]
    fn a_directory_that_cannot_hold_it_is_an_error() {
        let mut s = Spool::default();
        s.push(&[1; MEMORY], Path::new("/nonexistent-brisk-dir"));
        assert!(s.take_error().is_none(), "still in memory");
        s.push(b"x", Path::new("/nonexistent-brisk-dir"));
        let e = s.take_error().expect("no directory");
        assert_eq!(e.kind(), io::ErrorKind::NotFound);
        assert!(probe(Path::new("/nonexistent-brisk-dir")).is_err());
        assert!(probe(&std::env::temp_dir()).is_ok());
    }
}
