//! The socket of the producers that talk to another server over one
//! connection (the reverse proxy's, FastCGI's), and what the access log
//! says of that server.

use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::time::Instant;

use crate::handlers::produce::{micros_since, Want};
use crate::handlers::proxy::dial::Addr;

/// The socket of a producer that talks to another server over one
/// connection (an upstream, an application server): watched both ways at
/// once while it has one ([`Socket::sources`]). One it is done with, or
/// that a new connection replaced, waits to be taken out of the watch
/// ([`Socket::retired`]); a new one, to be watched ([`Socket::renewed`]).
/// At most one is watched at a time.
#[derive(Debug)]
pub struct Socket {
    fd: Option<OwnedFd>,
    retired: Option<OwnedFd>,
    /// `fd` is new, not watched yet.
    renewed: bool,
    /// It may be read now (until a read would block).
    pub readable: bool,
    /// It may be written now (until a write would block).
    pub writable: bool,
    /// The token the one in use is watched under, once it is (see
    /// [`Produce::watch_slot`](crate::handlers::produce::Produce::watch_slot)):
    /// a kept connection stays watched in its pool.
    pub watched: Option<usize>,
}

impl Socket {
    /// Over `fd`, if there is one yet (watched when the answer starts).
    /// Nothing can be read before the request goes: the first read waits
    /// for the engine to say the socket is readable. Epoll tells of what
    /// arrives after the request (every arrival, edge-triggered, even on a
    /// kept connection still watched under the same token), and of what
    /// was there when it starts watching a socket; a kept connection's
    /// last answer was read to its end and nothing followed it (else it
    /// was not kept). One failing read less a request.
    pub fn new(fd: Option<OwnedFd>) -> Socket {
        Socket {
            fd,
            retired: None,
            renewed: false,
            readable: false,
            writable: true,
            watched: None,
        }
    }

    /// The one in use.
    pub fn get(&self) -> Option<&OwnedFd> {
        self.fd.as_ref()
    }

    /// The one in use, and whether it may be written now, to write to.
    pub fn for_writing(&mut self) -> Option<(&OwnedFd, &mut bool)> {
        Some((self.fd.as_ref()?, &mut self.writable))
    }

    /// Done with the one in use: out of the watch, then closed.
    pub fn retire(&mut self) {
        if let Some(fd) = self.fd.take() {
            self.let_go(fd);
        }
    }

    /// A new connection, `fd`, in place of the one in use (if any).
    pub fn replace(&mut self, fd: OwnedFd) {
        if let Some(old) = self.fd.replace(fd) {
            self.let_go(old);
        }
        self.renewed = true;
        (self.readable, self.writable) = (true, true);
        self.watched = None;
    }

    /// None of its sockets was watched yet (the engine watches the one
    /// in use when the answer starts): those it let go close now.
    pub fn unwatched(&mut self) {
        self.retired = None;
        self.renewed = false;
    }

    /// The one in use, taken away as it is (to be kept for another
    /// request once the engine no longer watches it).
    pub fn take(&mut self) -> Option<OwnedFd> {
        self.fd.take()
    }

    /// The one in use, taken away to carry another request while it
    /// stays in the watch: with the token it is watched under, none if
    /// the engine never watched it (it replaced another in this round).
    pub fn keep(&mut self) -> Option<(OwnedFd, Option<usize>)> {
        let fd = self.fd.take()?;
        let watched = match std::mem::take(&mut self.renewed) {
            true => None,
            false => self.watched,
        };
        Some((fd, watched))
    }

    /// `fd` lets go: closed at once if the engine never watched it (it
    /// replaced another in this round), else once out of the watch.
    fn let_go(&mut self, fd: OwnedFd) {
        if std::mem::take(&mut self.renewed) {
            drop(fd);
        } else {
            self.retired = Some(fd);
        }
    }

    /// As [`Produce::sources`](crate::handlers::produce::Produce::sources).
    pub fn sources(&self) -> [Option<(RawFd, Want)>; 3] {
        socket_sources(self.fd.as_ref())
    }

    /// Nothing waits to be taken out of the watch or watched anew: the
    /// one in use is watched as it is.
    pub fn is_settled(&self) -> bool {
        self.retired.is_none() && !self.renewed
    }

    /// As [`Produce::ready`](crate::handlers::produce::Produce::ready).
    pub fn ready(&mut self, i: usize) {
        self.ready_for(i, true, true);
    }

    /// As [`Produce::ready_for`](crate::handlers::produce::Produce::ready_for).
    pub fn ready_for(&mut self, i: usize, read: bool, write: bool) {
        if i == 0 {
            self.readable |= read;
            self.writable |= write;
        }
    }

    /// As [`Produce::renewed`](crate::handlers::produce::Produce::renewed).
    pub fn renewed(&mut self) -> Option<(RawFd, Want)> {
        if !std::mem::take(&mut self.renewed) {
            return None;
        }
        self.fd.as_ref().map(|s| (s.as_raw_fd(), Want::Both))
    }

    /// As [`Produce::retired`](crate::handlers::produce::Produce::retired).
    pub fn retired(&mut self) -> Option<OwnedFd> {
        self.retired.take()
    }
}

/// The sources of a producer over socket `sock` (if it has one yet),
/// watched both ways at once.
pub fn socket_sources(sock: Option<&OwnedFd>) -> [Option<(RawFd, Want)>; 3] {
    [sock.map(|s| (s.as_raw_fd(), Want::Both)), None, None]
}

/// What the access log says of the server that answered a request
/// (its `upstream_*` fields): where it is, and once its answer's head
/// came, its status and after how long since the exchange began.
#[derive(Debug)]
pub struct Answered {
    addr: Option<Addr>,
    began: Instant,
    head: Option<(u16, u64)>,
}

impl Answered {
    /// An exchange that begins now, with no server yet.
    pub fn new() -> Answered {
        Answered {
            addr: None,
            began: crate::handlers::produce::now(),
            head: None,
        }
    }

    /// The server it goes to (another after a failed attempt).
    pub fn to(&mut self, addr: Addr) {
        self.addr = Some(addr);
    }

    /// The server it goes to.
    pub fn addr(&self) -> Option<&Addr> {
        self.addr.as_ref()
    }

    /// Where the server is, when the exchange began, and its status and
    /// time to its head if it came: for a producer that goes on with them
    /// (a tunnel after the 101).
    pub fn parts(self) -> (Option<Addr>, Instant, Option<(u16, u64)>) {
        (self.addr, self.began, self.head)
    }

    /// Its answer's head came, with `status`.
    pub fn head(&mut self, status: u16) {
        self.head = Some((status, micros_since(self.began)));
    }

    /// As [`Produce::upstream`](crate::handlers::produce::Produce::upstream),
    /// the answer `over` (ended, or given up) or not yet: its whole time
    /// (`upstream_response_time`) is known only then.
    pub fn upstream(&self, over: bool) -> Option<crate::log::Upstream<'_>> {
        let (status, header_us) = self.head?;
        Some(crate::log::Upstream {
            addr: self.addr.as_ref()?.logged(),
            status,
            header_us,
            response_us: over.then(|| micros_since(self.began)),
        })
    }
}

impl Default for Answered {
    fn default() -> Answered {
        Answered::new()
    }
}
