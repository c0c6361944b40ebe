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
