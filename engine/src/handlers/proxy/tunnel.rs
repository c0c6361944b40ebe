//! A WebSocket (or any `Upgrade`) tunnel once the upstream switched
//! protocols: what a [`super::body::ProxyBody`] becomes after its 101
//! ([`Produce::successor`]), holding only what a byte tunnel needs (its
//! socket, its link, the client's bytes on their way and the access
//! log's few fields), so that an idle tunnel costs little (issue #27:
//! 10,000 idle tunnels, bytes per tunnel): the request head kept for
//! retries, the answer's parsing state, the balancer's retry state and
//! the buffers they grew go with the `ProxyBody`. The upstream's bytes
//! are read into the engine's buffer (none of its own); the client's
//! wait in a buffer that is freed whenever it has all gone.
//!
//! Bytes pass both ways as they come, unmodified; the client's end is
//! passed on as a half-close (`shutdown(SHUT_WR)`), the upstream's close
//! ends the answer, and its reset cuts it ([`Gave::Cut`]: an HTTP/2
//! stream is reset, RFC 8441 §5). Its idle timeout is the rule's `read_timeout`
//! (`send_timeout` while the client's bytes wait for the upstream).

use std::io;
use std::os::fd::{OwnedFd, RawFd};
use std::time::{Duration, Instant};

use super::balance::Lease;
use super::dial;
use super::link::Link;
use crate::handlers::produce::{Cx, Gave, Input, InputEnd, Produce, Want, Wrote};
use crate::handlers::relay::{Outbox, OutboxError};
use crate::http::Status;
use crate::sys::net::shutdown_write;

/// What one read of the socket asks for at most.
const PIECE: usize = 64 * 1024;

/// An open tunnel to an upstream (see the module documentation).
#[derive(Debug)]
pub struct Tunnel {
    /// The socket, until either side ends the tunnel.
    sock: Option<OwnedFd>,
    /// The socket once done with, until the engine takes it out of its
    /// watch ([`Produce::retired`]).
    retired: Option<OwnedFd>,
    link: Link,
    /// The client's bytes on their way to the upstream, while some wait
    /// (boxed: an idle tunnel holds a pointer, not an empty outbox).
    outbox: Option<Box<Outbox>>,
    /// The client's end came: passed on once its bytes went.
    ended: bool,
    readable: bool,
    writable: bool,
    /// More of the client's bytes may come.
    open: bool,
    /// The client's end was passed on (`shutdown`).
    shut: bool,
    /// The upstream closed: the answer ended.
    finished: bool,
    /// `read_timeout` and `send_timeout` of the rule.
    read_timeout: Duration,
    send_timeout: Duration,
    /// Names it in log lines (`proxy http://127.0.0.1:9001`), no longer
    /// than it is.
    label: std::rc::Rc<str>,
    /// When its exchange began.
    began: Instant,
    /// For the access log: the upstream, its status (101) and after how
    /// long its head came (microseconds).
    addr: Option<dial::Addr>,
    answered: Option<(u16, u64)>,
    /// Its hold on the upstream (`least_conn` counts open tunnels).
    _lease: Option<Lease>,
}

/// What a tunnel is made of (taken from the `ProxyBody` that opened it).
#[derive(Debug)]
pub struct Parts {
    /// The socket, watched by the engine both ways.
    pub sock: OwnedFd,
    /// Its link (plain, or TLS to an https upstream).
    pub link: Link,
    /// The client's bytes that wait for the upstream (and whether they
    /// ended already: `body_end`).
    pub outbox: Outbox,
    /// Whether the socket may be read, and written, now.
    pub readable: bool,
    /// See `readable`.
    pub writable: bool,
    /// More of the client's bytes may come.
    pub open: bool,
    /// The client's end was passed on.
    pub shut: bool,
    /// `read_timeout`, `send_timeout`.
    pub timeouts: (Duration, Duration),
    /// Names it in log lines.
    pub label: std::rc::Rc<str>,
    /// When the exchange began (for `upstream_response_time`).
    pub began: Instant,
    /// The upstream, for the access log.
    pub addr: Option<dial::Addr>,
    /// Its status and time to its head, for the access log.
    pub answered: Option<(u16, u64)>,
    /// Its hold on the upstream.
    pub lease: Option<Lease>,
}

impl Tunnel {
    /// The tunnel made of `parts`.
    pub fn new(parts: Parts) -> Tunnel {
        // (What the head grew the outbox to is not kept.)
        let ended = parts.outbox.body_end;
        let outbox = (!parts.outbox.is_empty()).then(|| Box::new(parts.outbox));
        Tunnel {
            sock: Some(parts.sock),
            retired: None,
            link: parts.link,
            outbox,
            ended,
            readable: parts.readable,
            writable: parts.writable,
            open: parts.open,
            shut: parts.shut,
            finished: false,
            read_timeout: parts.timeouts.0,
            send_timeout: parts.timeouts.1,
            label: parts.label,
            began: parts.began,
            addr: parts.addr,
            answered: parts.answered,
            _lease: parts.lease,
        }
    }

    /// Leaves the socket for the engine to take out of its watch and
    /// close; the client's bytes that wait are dropped.
    fn retire(&mut self) {
        if let Some(fd) = self.sock.take() {
            self.retired = Some(fd);
        }
        self.open = false;
        self.outbox = None;
    }
}

impl Produce for Tunnel {
    fn label(&self) -> &str {
        &self.label
    }

    fn upstream(&self) -> Option<crate::log::Upstream<'_>> {
        let (status, header_us) = self.answered?;
        // (Asked once the tunnel closed, or was given up: its whole time,
        // as nginx counts a WebSocket's.)
        let over = self.finished || self.sock.is_none();
        Some(crate::log::Upstream {
            addr: self.addr.as_ref()?.logged(),
            status,
            header_us,
            response_us: over.then(|| crate::handlers::produce::micros_since(self.began)),
        })
    }

    fn idle_timeout(&self, _handler: Duration) -> Duration {
        match self.outbox.is_none() {
            true => self.read_timeout,
            false => self.send_timeout,
        }
    }

    fn timeout_why(&self) -> &'static str {
        match self.outbox.is_none() {
            true => "the tunnel was idle for read_timeout; closed",
            false => "the upstream took nothing of the tunnel's bytes for send_timeout; closed",
        }
    }

    fn timed_out(&mut self) -> Option<Status> {
        // (Its head went long ago: the tunnel is cut.)
        Some(Status::GATEWAY_TIMEOUT)
    }

    fn next(&mut self, room: usize, buf: &mut Vec<u8>, _cx: &mut Cx<'_>) -> Gave {
        if self.finished {
            return Gave::End;
        }
        let cut = loop {
            let (true, Some(fd)) = (self.readable, self.sock.as_ref()) else {
                return Gave::Pending;
            };
            let want = room.clamp(1, PIECE);
            buf.clear();
            buf.reserve(want);
            match self.link.read(fd, buf, want) {
                Ok(0) => break None,
                Ok(_) => return Gave::Bytes,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => self.readable = false,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                // A reset (or a broken TLS record) is no close: the
                // client is told the tunnel was cut, not that it ended
                // (RFC 8441 §5: an HTTP/2 stream is reset, as a TCP RST
                // stands for), and the error log says why.
                Err(e) => break Some(format!("the upstream broke the tunnel off: {e}")),
            }
        };
        self.retire();
        self.finished = true;
        match cut {
            Some(why) => Gave::Cut(why),
            None => Gave::End,
        }
    }

    fn stop(&mut self) {
        self.retire();
    }

    fn sources(&self) -> [Option<(RawFd, Want)>; 3] {
        crate::handlers::relay::socket_sources(self.sock.as_ref())
    }

    fn ready(&mut self, i: usize) {
        self.ready_for(i, true, true);
    }

    fn ready_for(&mut self, i: usize, read: bool, write: bool) {
        if i == 0 {
            self.readable |= read;
            self.writable |= write;
        }
    }

    fn retired(&mut self) -> Option<OwnedFd> {
        self.retired.take()
    }

    fn input(&mut self) -> Option<&mut dyn Input> {
        Some(self)
    }
}

impl Input for Tunnel {
    fn room(&self) -> usize {
        match self.open {
            true => match self.outbox.as_deref() {
                Some(outbox) => outbox.room(),
                None => Outbox::default().room(),
            },
            false => usize::MAX,
        }
    }

    fn feed(&mut self, data: &[u8]) {
        if self.open && !data.is_empty() {
            self.outbox
                .get_or_insert_with(Box::default)
                .push(data, true);
        }
    }

    fn write(&mut self) -> Result<Wrote, InputEnd> {
        let Some(fd) = self.sock.as_ref() else {
            return Ok(Wrote::default());
        };
        // (None waits: an empty one, which allocates nothing, still
        // writes what TLS has of its own, and passes the end on.)
        let mut none = Outbox::default();
        let outbox = self.outbox.as_deref_mut().unwrap_or(&mut none);
        outbox.body_end = self.ended;
        let written = self
            .link
            .write_outbox(fd, outbox, &mut self.writable, &mut 0);
        let (empty, done) = (outbox.is_empty(), outbox.done());
        match written {
            Ok(wrote) => {
                if empty {
                    // All gone: an idle tunnel holds no buffer.
                    self.outbox = None;
                }
                if done {
                    self.open = false;
                    if !self.shut {
                        // The client sent its last byte: so does brisk,
                        // to the upstream, which may still answer.
                        self.shut = true;
                        let _ = shutdown_write(fd);
                    }
                }
                Ok(wrote)
            }
            Err(OutboxError::Held(e)) => Err(InputEnd::Unreadable(e.to_string())),
            Err(OutboxError::Write(_)) => {
                // (What the upstream sent before is read on.)
                self.open = false;
                self.outbox = None;
                Err(InputEnd::Refused)
            }
        }
    }

    fn end(&mut self) {
        self.ended = true;
    }

    fn close(&mut self) {
        self.open = false;
        self.outbox = None;
    }

    fn is_closed(&self) -> bool {
        !self.open
    }

    fn held(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests;
