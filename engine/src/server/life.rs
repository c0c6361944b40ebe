//! What a connection's life holds whatever protocol it speaks: when its
//! current timer started, whether it closes once its output is out,
//! whether it waits for its client to read its last answer, its
//! lingering close, and whether its PROXY header is still to come.
//! HTTP/1.1 ([`crate::server::h1`]) moves it as it reads
//! and answers; HTTP/2's connections use it as they are (see
//! `server/conn.rs`).

use std::num::NonZeroU32;
use std::time::Instant;

/// A connection's life (see the module documentation).
#[derive(Debug)]
pub struct Life {
    /// When the current timer started.
    since: Instant,
    /// The connection closes once the queued output is out: nothing more
    /// is read as a request.
    closing: bool,
    /// Idle, its keep-alive time up, but its client has not read its last
    /// answer yet (see [`Life::wait_unread`]).
    unread: bool,
    /// What its client may still send of a request body not read to
    /// its end, at most, in MiB rounded up (see
    /// [`Life::close_body_unread`]); 0: none. (A byte, so that `Life`
    /// takes no more room.)
    body_unread: u8,
    /// The answer (or a fatal TLS alert, or HTTP/2's GOAWAY) is out and
    /// the write side shut: what the client still sends is read and
    /// dropped until it closes (linger timeout, from when the socket's
    /// send queue last moved), so that closing does not reset the
    /// connection under the answer. No protocol reads any more.
    linger: Option<Linger>,
    /// A `[proxy] listen` connection whose PROXY header has not come
    /// yet: its peer is still the balancer, counted in the total number
    /// of connections but not against any address. (Here, not beside
    /// the connection's other fields, where it would take a word of its
    /// own.)
    pub awaiting_proxy: bool,
    /// Requests read on the connection (HTTP/1.1 counts them, against
    /// `limits.keepalive_requests`).
    pub served: u32,
}

/// A lingering close's bounds (see [`Life::linger`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Linger {
    /// The bytes the client may still send before the close, as nginx's
    /// lingering close bounds its time (never none: it closes at that).
    /// (Nonzero, so that an `Option` of it takes no more room.)
    pub left: NonZeroU32,
    /// The bytes the socket's send queue held at the last look.
    pub unsent: u32,
}

impl Life {
    /// A new connection's, its timer started at `now`.
    pub fn new(now: Instant) -> Life {
        Life {
            since: now,
            closing: false,
            unread: false,
            body_unread: 0,
            linger: None,
            awaiting_proxy: false,
            served: 0,
        }
    }

    /// When the current timer started.
    pub fn since(&self) -> Instant {
        self.since
    }

    /// Restarts the current timer (progress was made, or the client has
    /// read its last answer).
    pub fn touch(&mut self, now: Instant) {
        self.since = now;
        self.unread = false;
    }

    /// Whether the connection closes once its output is out.
    pub fn closing(&self) -> bool {
        self.closing
    }

    /// Closes the connection once its output is out.
    pub fn close(&mut self) {
        self.closing = true;
    }

    /// Closes the connection once its output is out, a request body
    /// not read to its end (refused for its length, or not needed by
    /// an answer that ends the connection), of which its client may
    /// still send `left` bytes (`None`: unknown, chunked): the close
    /// lingers for them even if the socket looked drained. Else the
    /// close would reset the connection under the answer, and a
    /// browser still uploading (over TLS, whose failed write ends the
    /// session) would never show it.
    pub fn close_body_unread(&mut self, left: Option<u64>) {
        self.closing = true;
        self.leave_body_unread(left);
    }

    /// A request body will not be read to its end (refused as it came;
    /// `left` as for [`Life::close_body_unread`]): whenever the
    /// connection closes, the close lingers for it.
    pub fn leave_body_unread(&mut self, left: Option<u64>) {
        // (A body whose length is unknown counts as 1 MiB.)
        let mib = left.map_or(1, |n| n.div_ceil(1 << 20).clamp(1, u8::MAX.into()));
        self.body_unread = self.body_unread.max(mib as u8);
    }

    /// What its client may still send of a request body not read to its
    /// end, at most (a whole number of MiB; 0: none was left unread).
    pub fn body_unread(&self) -> u64 {
        u64::from(self.body_unread) << 20
    }

    /// The keep-alive time is up but the client has not read the last
    /// answer (the kernel still holds some of it): the connection waits
    /// for that, its timer still running from when the answer was handed
    /// over, and its idle time starts again once it has ([`Life::touch`]).
    pub fn wait_unread(&mut self) {
        self.unread = true;
    }

    /// Whether it waits for its client to read the last answer.
    pub fn unread(&self) -> bool {
        self.unread
    }

    /// Starts the lingering close (`linger`'s bounds), its timer at
    /// `now`.
    pub fn linger(&mut self, linger: Linger, now: Instant) {
        self.linger = Some(linger);
        self.touch(now);
    }

    /// The lingering close's bounds, if it lingers.
    pub fn lingering(&mut self) -> Option<&mut Linger> {
        self.linger.as_mut()
    }

    /// Whether it lingers.
    pub fn lingers(&self) -> bool {
        self.linger.is_some()
    }

    /// Requests read on the connection so far.
    pub fn served(&self) -> u32 {
        self.served
    }
}
