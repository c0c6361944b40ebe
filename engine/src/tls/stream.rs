//! A TLS connection over a non-blocking socket: [`super::conn::TlsConn`]
//! plus the socket I/O around it, what the engine's TLS transport
//! (`server::transport::tls`) delegates to: read takes ciphertext from
//! the socket and appends the plaintext to the caller's buffer; write
//! takes plaintext, and the records go out to the socket.
//!
//! The working buffers are a worker's ([`Scratch`], reused by every
//! connection of the worker, so no request allocates once they have
//! grown); a connection keeps bytes of its own only when a call ends with
//! some left over: the start of a record that has not fully arrived, or
//! records the socket would not take yet. An idle connection holds
//! neither (two empty vectors) besides its keys.

use std::io;
use std::os::fd::AsRawFd;

use super::conn::{TlsConn, TlsError};
use crate::sys::net;

/// Largest plaintext encrypted per call to [`TlsStream::write`]: four
/// full records, so that what waits for a slow socket stays bounded.
pub const MAX_WRITE: usize = 4 * 16 * 1024;

/// Bytes asked of the socket per read.
const READ_SIZE: usize = 32 * 1024;

/// Records held back to leave with the next ones, at most: beyond it, a
/// write waits for the socket to take what is held first.
const HOLD: usize = 16 * 1024;

/// Socket reads one [`TlsStream::read`] may make without reaching the
/// plaintext it wants: 2 MiB of records carrying less than 64 KiB is
/// not a client sending a request (empty or one-byte records), and one
/// connection must not keep its worker reading for ever.
const MAX_READS: usize = 64;

/// What a write does with its records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Then {
    /// Writes them (after what is held).
    Send,
    /// Holds them for the next write.
    Hold,
    /// Writes them with close_notify after them.
    Close,
}

/// A worker's buffers, lent to each call of each of its connections.
#[derive(Debug, Default)]
pub struct Scratch {
    /// Ciphertext being processed.
    pub incoming: Vec<u8>,
    /// Records being written.
    pub out: Vec<u8>,
    /// Plaintext staged for encryption (a file range read with `pread`).
    pub plain: Vec<u8>,
}

impl Scratch {
    /// Empty buffers (they grow on first use, then stay).
    pub const fn new() -> Scratch {
        Scratch {
            incoming: Vec::new(),
            out: Vec::new(),
            plain: Vec::new(),
        }
    }
}

/// What a [`TlsStream::read`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Got {
    /// Plaintext bytes appended to the caller's buffer.
    pub plaintext: usize,
    /// The socket has nothing more now (a short read, or `EAGAIN`): with
    /// edge-triggered polling, the next arrival raises a new event. When
    /// false, the call stopped because it had the plaintext it wanted,
    /// and the socket may hold more.
    pub drained: bool,
    /// The client has closed: its FIN, or close_notify. No more
    /// plaintext will come (what came before it is counted above).
    pub closed: bool,
}

/// One TLS connection's state between calls.
#[derive(Debug)]
pub struct TlsStream {
    conn: TlsConn,
    /// Ciphertext rustls has not consumed yet: the start of a record
    /// still arriving.
    left_in: Vec<u8>,
    /// Records the socket has not taken yet.
    left_out: Vec<u8>,
    /// Bytes at the start of the worker's records buffer that are this
    /// connection's, held for its next write ([`TlsStream::write_held`]):
    /// valid only until the caller's next write or [`TlsStream::park`].
    held: usize,
    /// A read has drained the socket (the client has said all it had to
    /// say so far).
    drained: bool,
}

/// A TLS failure as an `io::Error` (`InvalidData`), keeping the reason.
pub fn io_error(e: TlsError) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, e.log_line())
}

impl TlsStream {
    /// A stream driving `conn`.
    pub fn new(conn: TlsConn) -> TlsStream {
        TlsStream {
            conn,
            left_in: Vec::new(),
            left_out: Vec::new(),
            held: 0,
            drained: false,
        }
    }

    /// The record layer (protocol version, cipher, handshake state).
    pub fn conn(&self) -> &TlsConn {
        &self.conn
    }

    /// Whether the client stopped before its ClientHello was whole: a
    /// read drained the socket and the hello is still incomplete. Such a
    /// handshake has cost nothing but its place (see
    /// `server::worker::accept`).
    pub fn hello_stalled(&self) -> bool {
        self.drained && self.conn.awaits_hello()
    }

    /// Drops the record layer's expanded keys (an idle connection: they
    /// are built again by the next record).
    pub fn rest(&mut self) {
        self.conn.rest();
    }

    /// Whether records wait for the socket to take them.
    pub fn wants_write(&self) -> bool {
        !self.left_out.is_empty()
    }

    /// Reads what the socket has and appends the plaintext it carries to
    /// `plain`, until the socket is drained, the client has closed, or at
    /// least `want` bytes of plaintext came. Handshake answers (and the
    /// tickets after it) are written to the socket on the way. A TLS
    /// error is `InvalidData`, after the alert (or the readable 400 for
    /// plain HTTP) went to the socket, as far as it takes them.
    pub fn read(
        &mut self,
        sock: &impl AsRawFd,
        s: &mut Scratch,
        plain: &mut Vec<u8>,
        want: usize,
    ) -> io::Result<Got> {
        let start = plain.len();
        for _ in 0..MAX_READS {
            s.incoming.clear();
            s.incoming.extend_from_slice(&self.left_in);
            s.incoming.reserve(READ_SIZE);
            let room = s.incoming.capacity() - s.incoming.len();
            let n = match net::read_into_spare(sock, &mut s.incoming) {
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                // Nothing new: what was left stays for the next call.
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    self.drained = true;
                    return Ok(Got {
                        plaintext: plain.len() - start,
                        drained: true,
                        closed: false,
                    });
                }
                Err(e) => return Err(e),
            };
            s.out.clear();
            let got = self.conn.receive(&mut s.incoming, plain, &mut s.out);
            if got.as_ref().is_ok_and(|g| g.plaintext > 0) {
                // What rustls made while a request came in (TLS 1.3's
                // session tickets, after the client's Finished that the
                // request came with) waits for the answer, to leave in the
                // same write: a packet and a system call fewer.
                self.left_out.extend_from_slice(&s.out);
            } else {
                self.queue(sock, &s.out)?;
            }
            let got = got.map_err(io_error)?;
            self.left_in.clear();
            if s.incoming.is_empty() {
                // An idle connection keeps no buffer.
                self.left_in = Vec::new();
            } else {
                self.left_in.extend_from_slice(&s.incoming);
            }
            let plaintext = plain.len() - start;
            if n == 0 || got.peer_closed {
                return Ok(Got {
                    plaintext,
                    drained: true,
                    closed: true,
                });
            }
            if n < room || plaintext >= want {
                self.drained |= n < room;
                return Ok(Got {
                    plaintext,
                    drained: n < room,
                    closed: false,
                });
            }
        }
        Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "TLS records without data: too many for one read",
        ))
    }

    /// Encrypts up to [`MAX_WRITE`] bytes of `data` (in `out`, a worker's
    /// buffer) and writes the records, after those held; returns the
    /// plaintext bytes taken, 0 while the handshake is still on. While
    /// more than [`HOLD`] bytes of earlier records wait for the socket,
    /// nothing is taken: `WouldBlock`, as for a full socket. Records the
    /// socket does not take wait in the connection.
    pub fn write(
        &mut self,
        sock: &impl AsRawFd,
        out: &mut Vec<u8>,
        data: &[u8],
    ) -> io::Result<usize> {
        self.write_then(sock, out, data, Then::Send)
    }

    /// [`TlsStream::write`] of bytes that more follow at once (a large
    /// file's head): their records stay in `out`, the worker's buffer, to
    /// leave in the next write with the next ones (while what is held
    /// stays under [`HOLD`]; else they are written now). The caller's
    /// next call is a write with the same `out`, or [`TlsStream::park`].
    pub fn write_held(
        &mut self,
        sock: &impl AsRawFd,
        out: &mut Vec<u8>,
        data: &[u8],
    ) -> io::Result<usize> {
        let then = match self.left_out.len() + data.len() < HOLD {
            true => Then::Hold,
            false => Then::Send,
        };
        self.write_then(sock, out, data, then)
    }

    /// [`TlsStream::write`] of the connection's last bytes: close_notify
    /// follows them in the same write (RFC 8446 §6.1), so that the FIN
    /// after them is the only other thing to send. `data` must fit in one
    /// write ([`MAX_WRITE`]); returns 0 as `write` does, and then nothing
    /// was queued.
    pub fn write_last(
        &mut self,
        sock: &impl AsRawFd,
        out: &mut Vec<u8>,
        data: &[u8],
    ) -> io::Result<usize> {
        self.write_then(sock, out, data, Then::Close)
    }

    fn write_then(
        &mut self,
        sock: &impl AsRawFd,
        out: &mut Vec<u8>,
        data: &[u8],
        then: Then,
    ) -> io::Result<usize> {
        if self.left_out.len() > HOLD && !self.flush(sock)? {
            return Err(io::ErrorKind::WouldBlock.into());
        }
        let take = data.len().min(MAX_WRITE);
        out.truncate(self.held);
        let sent = self.conn.send(&data[..take], &mut self.left_in, out);
        if !sent.map_err(io_error)? {
            return Ok(0);
        }
        if then == Then::Close {
            self.conn.close_notify(&mut self.left_in, out);
        }
        if self.left_in.is_empty() {
            self.left_in = Vec::new();
        }
        match then {
            Then::Hold => self.held = out.len(),
            Then::Send | Then::Close => {
                self.held = 0;
                self.queue(sock, out)?;
            }
        }
        Ok(take)
    }

    /// Keeps in the connection the records [`TlsStream::write_held`] left
    /// in `out` when no write follows to take them (a throttle's limit, a
    /// full socket): they leave first when the socket takes more.
    pub fn park(&mut self, out: &mut Vec<u8>) {
        if self.held > 0 {
            self.left_out.extend_from_slice(&out[..self.held]);
            self.held = 0;
            out.clear();
        }
    }

    /// Writes the records that wait; `Ok(true)` once none is left.
    pub fn flush(&mut self, sock: &impl AsRawFd) -> io::Result<bool> {
        while !self.left_out.is_empty() {
            match net::send(sock, &self.left_out, false) {
                Ok(n) => {
                    self.left_out.drain(..n);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(true)
    }

    /// Gives back the memory of the records that waited, once none does
    /// (the answer is out: the connection goes idle). Kept until then,
    /// so that a large download through a slow socket does not allocate
    /// it again at every wait.
    pub fn release(&mut self) {
        if self.left_out.is_empty() {
            self.left_out = Vec::new();
        }
    }

    /// Queues close_notify and writes what it can (before the FIN);
    /// `out` is a worker's buffer.
    pub fn close_notify(&mut self, sock: &impl AsRawFd, out: &mut Vec<u8>) -> io::Result<bool> {
        out.clear();
        self.conn.close_notify(&mut self.left_in, out);
        self.queue(sock, out)?;
        self.flush(sock)
    }

    /// Writes `out` after whatever waits (in the same write, when
    /// something does), keeping what the socket does not take.
    fn queue(&mut self, sock: &impl AsRawFd, out: &[u8]) -> io::Result<()> {
        if !self.left_out.is_empty() {
            self.left_out.extend_from_slice(out);
            self.flush(sock)?;
            return Ok(());
        }
        let mut sent = 0;
        while sent < out.len() {
            match net::send(sock, &out[sent..], false) {
                Ok(n) => sent += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        self.left_out.extend_from_slice(&out[sent..]);
        Ok(())
    }
}

#[cfg(test)]
mod tests;
