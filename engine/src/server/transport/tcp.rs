//! Plain TCP: the socket, what epoll said about it, and sending the
//! output queue: byte runs by `send` (with `MSG_MORE` while more
//! follows), file ranges by `sendfile`, bytes in a pipe (a proxied
//! body) by `splice`, mapped file ranges (HTTP/2's DATA frames) with
//! the bytes around them by one `sendmsg`, or file ranges copied through memory with
//! `[static] sendfile = false` (see [`super::copy`]).

use std::io;
use std::net::{Shutdown, SocketAddr};

use mio::net::TcpStream;

use super::copy::{Chunk, Sending};
use super::queue::{Front, Out};
use super::{Flushed, Limit, Transport};
use crate::sys::mapped::{self, Part, MAX_IOV};
use crate::sys::net;

/// A TCP connection.
#[derive(Debug)]
pub struct Tcp {
    stream: TcpStream,
    /// Large file ranges go by `sendfile` (else they are copied).
    sendfile: bool,
    /// The chunk of a file range being copied.
    chunk: Option<Box<Chunk>>,
    /// Edge-triggered polling: the socket may still hold unread bytes.
    pub read_more: bool,
    /// The client has shut its write side.
    pub eof: bool,
    /// epoll reported the peer's FIN (or an error): read until EOF.
    pub hangup: bool,
    /// Registered with epoll for writability (only while output waits).
    pub writable_interest: bool,
    /// Which of its worker's listeners accepted it ([`NO_LISTENER`]: not
    /// known), for the address the client connected to (see
    /// [`Tcp::listener`]).
    listener: u16,
}

/// [`Tcp::listener`] of a connection whose listener is not known.
pub const NO_LISTENER: u16 = u16::MAX;

impl Tcp {
    /// A connection over `stream`; `sendfile` as `[static] sendfile`.
    pub fn new(stream: TcpStream, sendfile: bool) -> Tcp {
        Tcp {
            stream,
            sendfile,
            chunk: None,
            read_more: true,
            eof: false,
            hangup: false,
            writable_interest: false,
            listener: NO_LISTENER,
        }
    }

    /// Accepted by its worker's listener `i`.
    pub fn accepted_by(mut self, i: usize) -> Tcp {
        self.listener = u16::try_from(i).unwrap_or(NO_LISTENER);
        self
    }

    /// Which of its worker's listeners accepted it, if known: a
    /// listener bound to one address (not `0.0.0.0` or `[::]`) tells the
    /// address the client connected to without a `getsockname`.
    pub fn listener(&self) -> Option<usize> {
        (self.listener != NO_LISTENER).then_some(usize::from(self.listener))
    }

    /// The socket, to register it with epoll.
    pub fn source(&mut self) -> &mut TcpStream {
        &mut self.stream
    }

    /// The socket, for a transport over it (TLS).
    pub fn socket(&self) -> &TcpStream {
        &self.stream
    }

    /// The bytes the kernel still holds to send, or sent and not yet
    /// acknowledged by the client (0 if it cannot tell).
    pub fn unsent(&self) -> u32 {
        net::unsent(&self.stream).unwrap_or(0)
    }
}

impl Tcp {
    /// Sends the byte and mapped pieces at the front of `out` in one
    /// call ([`Out::gather`]), at most `limit` bytes; how many went.
    fn gather(&self, out: &Out, limit: usize, fin_follows: bool) -> io::Result<usize> {
        let mut parts = [Part::Bytes(&[]); MAX_IOV];
        let (n, all) = out.gather(&mut parts);
        mapped::send(&self.stream, &parts[..n], limit, !all || fin_follows)
    }
}

impl Transport for Tcp {
    fn read(&mut self, buf: &mut Vec<u8>, max: usize) -> io::Result<usize> {
        net::read_at_most(&self.stream, buf, max)
    }

    fn flush(&mut self, out: &mut Out, limit: Limit, fin_follows: bool) -> io::Result<Flushed> {
        let (mut limit, throttled) = (limit.bytes, limit.throttled);
        loop {
            if limit == 0 && !out.is_empty() {
                return Ok(Flushed::Limit);
            }
            let Some((front, last)) = out.front() else {
                return Ok(Flushed::All);
            };
            let sent = match front {
                // (A mapped file range and the bytes around it: one call,
                // the file's bytes copied once, by the kernel, into the
                // socket; never into the worker's memory.)
                Front::Mapped(_) => self.gather(out, limit, fin_follows),
                Front::Bytes(_) if out.gathers() => self.gather(out, limit, fin_follows),
                Front::Bytes(bytes) => {
                    let more = !last || (fin_follows && bytes.len() <= limit);
                    let end = bytes.len().min(limit);
                    net::send(&self.stream, &bytes[..end], more)
                }
                Front::File(range) if self.sendfile => {
                    let chunk = (range.len.min(1 << 30) as usize).min(limit);
                    let mut offset = range.offset;
                    match net::sendfile(&self.stream, &*range.file, &mut offset, chunk) {
                        // The file shrank under us: the promised length
                        // cannot be kept, so the connection must end.
                        Ok(0) => Err(io::Error::new(
                            io::ErrorKind::UnexpectedEof,
                            "file truncated while sending",
                        )),
                        sent => sent,
                    }
                }
                Front::Pipe(pipe) => {
                    let more = !last || (fin_follows && pipe.held() <= limit);
                    match pipe.send_to(&self.stream, limit, more) {
                        // (It holds bytes: 0 cannot be an end.)
                        Ok(0) => Err(io::ErrorKind::WouldBlock.into()),
                        sent => sent,
                    }
                }
                Front::File(range) => {
                    let how = Sending {
                        limit,
                        more: !last,
                        fin_follows,
                        throttled,
                    };
                    Chunk::send(&mut self.chunk, &self.stream, range, how)
                }
            };
            match sent {
                Ok(w) => {
                    limit -= w;
                    out.advance_across(w);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(Flushed::Blocked),
                Err(e) if e.raw_os_error() == Some(libc::EFAULT) => {
                    // A mapped file shrank under us (sys::mapped): as a
                    // truncated `sendfile`, the connection must end.
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "file truncated while sending",
                    ));
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }

    fn shutdown_write(&mut self) {
        let _ = self.stream.shutdown(Shutdown::Write);
    }

    fn local_addr(&self) -> Option<SocketAddr> {
        self.stream.local_addr().ok()
    }
}
