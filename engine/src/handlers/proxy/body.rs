//! An upstream's answer as a producer ([`Produce`] and [`Input`]): one
//! non-blocking socket (TCP or unix) per request, watched by the engine
//! for reading and writing at once ([`Want::Both`]). The request head
//! ([`super::request::write_head`]) goes first, then the request body as
//! the engine feeds it, framed again by brisk (by its length, or in a
//! chunked coding brisk writes itself); the answer's head is read as
//! strictly as a request ([`parse_response`]; interim 1xx answers are
//! skipped), given as a [`ReplyHead`] without its hop-by-hop fields, and
//! its body follows as it comes: by length, chunked (decoded), or to the
//! close. The producer knows no protocol of the client's.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::time::Duration;

use super::link::Link;
use super::pool::Keep;
use super::request::{BodyOut, HOP_BY_HOP};
use crate::config::{HeaderEdits, ServerMode};
use crate::handlers::pipe::{Own, ReplyHead};
use crate::handlers::produce::{Cx, Gave, Input, InputEnd, Produce, Want, Wrote};
use crate::handlers::relay::{Outbox, OutboxError, Unframe};
use crate::http::grammar::has_token;
use crate::http::parse::response::{parse_response, ResponseFraming, ResponseHead};
use crate::http::parse::{BodyFraming, Header, Limits};
use crate::http::Status;

/// What one read of the socket asks for at most.
const PIECE: usize = 64 * 1024;

/// Beside the hop-by-hop fields ([`HOP_BY_HOP`]), the one of an answer
/// that brisk writes itself: the framing.
const OWN: [&str; 1] = ["content-length"];

/// How the answer is passed on (from the rule).
#[derive(Debug, Clone, Default)]
pub struct Answer {
    /// `response_headers`: fields set and removed.
    pub edits: HeaderEdits,
    /// `via`: `Via: 1.1 brisk` is added.
    pub via: bool,
    /// `server`: the upstream's `Server` passes (if it sent one), or
    /// brisk's own replaces it.
    pub server: ServerMode,
}

/// What a [`ProxyBody`] is started with besides its socket.
#[derive(Debug, Clone)]
pub struct Options {
    /// Names it in log lines (`proxy http://127.0.0.1:9001`).
    pub label: String,
    /// How the request body goes (its head says so already).
    pub body: BodyOut,
    /// The request is a HEAD: the answer has no body.
    pub head_request: bool,
    /// `connect_timeout`: until the upstream took the first byte.
    pub connect_timeout: Duration,
    /// `read_timeout`: the longest silence of the upstream after that.
    pub read_timeout: Duration,
    /// The answer head's limits (those of requests).
    pub limits: Limits,
    /// The limit of a chunked answer's trailers.
    pub max_trailers: usize,
    /// How the answer's head is edited.
    pub answer: Answer,
    /// Where the connection goes once the answer ended exactly and the
    /// upstream keeps it open (none: it closes).
    pub keep: Option<Keep>,
}

/// An upstream's answer to one request (see the module documentation).
#[derive(Debug)]
pub struct ProxyBody {
    sock: Option<OwnedFd>,
    /// Bytes as they are, or TLS.
    link: Link,
    /// The socket once it is done with, until the engine takes it out
    /// of its watch ([`Produce::retired`]).
    retired: Option<OwnedFd>,
    readable: bool,
    writable: bool,
    /// The upstream took a byte: the connection is up.
    connected: bool,
    /// The request head, then its body (in the coding it goes in).
    outbox: Outbox,
    /// More request body may come (see [`Input::is_closed`]).
    body_open: bool,
    /// Why the upstream could not be written to before it took a byte:
    /// the answer is a 502.
    unreachable: Option<String>,
    /// The answer until its head is complete.
    head_buf: Vec<u8>,
    /// The head was given.
    started: bool,
    /// Body bytes read with the head, given next.
    rest: Vec<u8>,
    /// Takes the body out of its framing (none: to the close).
    unframe: Unframe,
    /// The body ended.
    finished: bool,
    /// The upstream keeps the connection open after this answer.
    keep_alive: bool,
    /// It ended exactly, the request all written: the socket goes to
    /// the pool when the answer is dropped (after the engine took it
    /// out of its watch).
    reusable: bool,
    opts: Options,
}

impl ProxyBody {
    /// The answer to the request whose `head` (from
    /// [`super::request::write_head`]) goes on `sock`, a socket
    /// connected, or connecting, to the upstream, non-blocking.
    pub fn new(sock: OwnedFd, head: &[u8], opts: Options) -> ProxyBody {
        let mut outbox = Outbox::new(None);
        outbox.push(head, false);
        let body_open = opts.body != BodyOut::None;
        outbox.body_end = !body_open;
        ProxyBody {
            sock: Some(sock),
            link: Link::Plain,
            retired: None,
            readable: true,
            writable: true,
            connected: false,
            outbox,
            body_open,
            unreachable: None,
            head_buf: Vec::new(),
            started: false,
            rest: Vec::new(),
            unframe: Unframe::default(),
            finished: false,
            keep_alive: false,
            reusable: false,
            opts,
        }
    }

    /// Over `link` (TLS to an https upstream) rather than plain bytes.
    pub fn with_link(mut self, link: Link) -> ProxyBody {
        self.link = link;
        self
    }

    /// The socket is a kept connection, up already: the upstream's
    /// silence is bounded by `read_timeout` from the start.
    pub fn on_kept_connection(mut self) -> ProxyBody {
        self.connected = true;
        self
    }

    /// Leaves the socket for the engine to take out of its watch and
    /// close.
    fn retire(&mut self) {
        if let Some(fd) = self.sock.take() {
            self.retired = Some(fd);
        }
        self.body_open = false;
        self.outbox.clear();
    }

    /// The body ended exactly: the socket may carry another request if
    /// the upstream keeps it, the request went whole and nothing
    /// followed the answer (it stays watched until the answer is
    /// dropped, then goes to the pool); else it closes.
    fn finish(&mut self) {
        self.finished = true;
        self.reusable = self.keep_alive
            && self.opts.keep.is_some()
            && self.outbox.done()
            && self.rest.is_empty()
            && !self.unframe.had_extra();
        if !self.reusable {
            self.retire();
        }
    }

    /// The answer so far in `head_buf`: its head if complete (interim
    /// answers skipped), none if more is needed, or its failure.
    fn read_head(&mut self) -> Option<Gave> {
        loop {
            let mut fields: Vec<Header<'_>> = Vec::new();
            let parsed = parse_response(
                &self.head_buf,
                &self.opts.limits,
                self.opts.head_request,
                &mut |f| fields.push(f),
            );
            let h = match parsed {
                Err(e) => {
                    let why = format!("malformed answer: {}", e.reason);
                    return Some(Gave::Fail(Status::BAD_GATEWAY, why));
                }
                Ok(None) => return None,
                Ok(Some(h)) => h,
            };
            if h.status == 101 {
                // (Only asked for with Upgrade, which is not sent yet.)
                let why = "101 Switching Protocols to a request that asked for none";
                return Some(Gave::Fail(Status::BAD_GATEWAY, why.into()));
            }
            if h.status < 200 {
                // An interim answer (100 Continue, 103): the final one follows.
                let len = h.head_len;
                self.head_buf.drain(..len);
                continue;
            }
            let head = reply_head(&h, &fields, &self.opts.answer);
            let framing = match h.framing {
                ResponseFraming::None => BodyFraming::Length(0),
                ResponseFraming::Length(n) => BodyFraming::Length(n),
                ResponseFraming::Chunked => BodyFraming::Chunked,
                ResponseFraming::Close => BodyFraming::None,
            };
            drop(fields);
            self.unframe = Unframe::new(framing, self.opts.max_trailers);
            self.started = true;
            self.keep_alive = h.keep_alive;
            self.rest = self.head_buf.split_off(h.head_len);
            self.head_buf = Vec::new();
            if self.unframe.is_done() {
                self.finish();
            }
            return Some(Gave::Head(head, None));
        }
    }

    /// Body bytes read into `buf`, taken out of their framing: what to
    /// give, or none when they held nothing (a chunk's framing alone).
    fn body(&mut self, buf: &mut Vec<u8>) -> Option<Gave> {
        self.unframe.take(buf);
        if self.unframe.is_done() {
            self.finish();
            return Some(Gave::Last);
        }
        (!buf.is_empty()).then_some(Gave::Bytes)
    }

    /// The upstream closed its side (or the socket failed with `e`).
    fn closed(&mut self, e: Option<io::Error>) -> Gave {
        self.retire();
        if let Some(why) = self.unreachable.take() {
            return Gave::Fail(Status::BAD_GATEWAY, why);
        }
        if self.started {
            return if self.unframe.is_short() {
                Gave::Cut("the upstream closed before the answer's end".into())
            } else {
                self.finished = true;
                Gave::End
            };
        }
        let why = match (e, self.head_buf.is_empty()) {
            (Some(e), _) => format!("cannot reach the upstream: {e}"),
            (None, true) => "the upstream closed without answering".into(),
            (None, false) => "the upstream closed in its answer's head".into(),
        };
        Gave::Fail(Status::BAD_GATEWAY, why)
    }
}

/// The head the client gets for the upstream's answer `h` with its
/// `fields`: the hop-by-hop ones and those `Connection` names left out,
/// then the rule's edits. Its `Server` is the upstream's (none if it sent
/// none) unless `server = "brisk"`, its `Date` the upstream's if it sent
/// one (else brisk's), as nginx does: the sinks leave out their own.
fn reply_head(h: &ResponseHead<'_>, fields: &[Header<'_>], answer: &Answer) -> ReplyHead {
    let is = |name: &[u8], known: &str| name.eq_ignore_ascii_case(known.as_bytes());
    let named_by_connection = |name: &[u8]| {
        fields
            .iter()
            .filter(|f| is(f.name, "connection"))
            .any(|f| has_token(f.value, name))
    };
    let brisk_server = answer.server == ServerMode::Brisk;
    let mut headers = Vec::new();
    let mut own = Own {
        server: !brisk_server,
        date: false,
    };
    for f in fields {
        if HOP_BY_HOP.iter().chain(&OWN).any(|n| is(f.name, n))
            || (brisk_server && is(f.name, "server"))
            || named_by_connection(f.name)
            || answer.edits.remove.iter().any(|n| is(f.name, n))
            || answer.edits.set.iter().any(|(n, _)| is(f.name, n))
        {
            continue;
        }
        own.date |= is(f.name, "date");
        for part in [f.name, b": ", f.value, b"\r\n"] {
            headers.extend_from_slice(part);
        }
    }
    if answer.via {
        headers.extend_from_slice(b"Via: 1.1 brisk\r\n");
    }
    for (name, value) in &answer.edits.set {
        own.server |= is(name.as_bytes(), "server");
        own.date |= is(name.as_bytes(), "date");
        for part in [name.as_bytes(), b": ", value.as_bytes(), b"\r\n"] {
            headers.extend_from_slice(part);
        }
    }
    ReplyHead {
        len: h.head_len,
        status: h.status,
        reason: (!h.reason.is_empty()).then(|| h.reason.to_vec()),
        headers,
        content_length: match h.framing {
            ResponseFraming::Length(n) => Some(n),
            _ => None,
        },
        chunked: false,
        own,
    }
}

impl Produce for ProxyBody {
    fn label(&self) -> &str {
        &self.opts.label
    }

    fn idle_timeout(&self, _handler: Duration) -> Duration {
        if self.connected {
            self.opts.read_timeout
        } else {
            self.opts.connect_timeout
        }
    }

    fn timeout_why(&self) -> &'static str {
        if self.connected {
            "the upstream was silent for read_timeout; given up"
        } else {
            "no connection to the upstream within connect_timeout; given up"
        }
    }

    fn next(&mut self, _room: usize, buf: &mut Vec<u8>, _cx: &mut Cx<'_>) -> Gave {
        if self.unframe.is_bad() {
            self.retire();
            return Gave::Cut("bad chunked coding in the upstream's answer".into());
        }
        if self.finished {
            return Gave::End;
        }
        if !self.rest.is_empty() {
            buf.clear();
            std::mem::swap(buf, &mut self.rest);
            if let Some(gave) = self.body(buf) {
                return gave;
            }
        }
        if let (false, Some(why)) = (self.started, self.unreachable.take()) {
            self.retire();
            return Gave::Fail(Status::BAD_GATEWAY, why);
        }
        loop {
            if !self.readable {
                return Gave::Pending;
            }
            let Some(fd) = self.sock.as_ref() else {
                return Gave::Pending;
            };
            buf.clear();
            buf.reserve(PIECE);
            match self.link.read(fd, buf) {
                Ok(0) => return self.closed(None),
                Ok(_) if self.started => {
                    if let Some(gave) = self.body(buf) {
                        return gave;
                    }
                }
                Ok(_) => {
                    self.connected = true;
                    self.head_buf.extend_from_slice(buf);
                    buf.clear();
                    if let Some(gave) = self.read_head() {
                        return gave;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => self.readable = false,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return self.closed(Some(e)),
            }
        }
    }

    fn stop(&mut self) {
        self.reusable = false;
        self.retire();
    }

    fn sources(&self) -> [Option<(RawFd, Want)>; 3] {
        [
            self.sock.as_ref().map(|s| (s.as_raw_fd(), Want::Both)),
            None,
            None,
        ]
    }

    fn ready(&mut self, i: usize) {
        if i == 0 {
            self.readable = true;
            self.writable = true;
        }
    }

    fn retired(&mut self) -> Option<OwnedFd> {
        self.retired.take()
    }

    fn input(&mut self) -> Option<&mut dyn Input> {
        Some(self)
    }
}

impl Drop for ProxyBody {
    fn drop(&mut self) {
        if let (true, Some(sock), Some(keep)) =
            (self.reusable, self.sock.take(), self.opts.keep.as_ref())
        {
            let link = std::mem::take(&mut self.link);
            keep.pool
                .borrow_mut()
                .put(keep, sock, link, std::time::Instant::now());
        }
    }
}

impl Input for ProxyBody {
    fn room(&self) -> usize {
        match self.body_open {
            true => self.outbox.room(),
            false => usize::MAX,
        }
    }

    fn feed(&mut self, data: &[u8]) {
        if !self.body_open || data.is_empty() {
            return;
        }
        if self.opts.body == BodyOut::Chunked {
            self.outbox.push_chunk(data);
        } else {
            self.outbox.push(data, true);
        }
    }

    fn write(&mut self) -> Result<Wrote, InputEnd> {
        let Some(fd) = self.sock.as_ref() else {
            return Ok(Wrote::default());
        };
        let link = &mut self.link;
        // (What TLS has to send of its own, its handshake, goes first.)
        let flushed = match link.flush(fd) {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(()),
            other => other,
        };
        let wrote = flushed.map_err(OutboxError::Write).and_then(|()| {
            self.outbox
                .write_to(&mut self.writable, &mut |b| link.send(fd, b))
        });
        match wrote {
            Ok(wrote) => {
                self.connected |= self.link.is_up(wrote.moved);
                if self.outbox.done() {
                    self.body_open = false;
                }
                Ok(wrote)
            }
            Err(OutboxError::Held(e)) => Err(InputEnd::Unreadable(e.to_string())),
            Err(OutboxError::Write(e)) => {
                if !self.connected {
                    self.unreachable = Some(format!("cannot reach the upstream: {e}"));
                }
                // (It may have answered already: its answer is read on.)
                self.body_open = false;
                self.outbox.clear();
                Err(InputEnd::Refused)
            }
        }
    }

    fn end(&mut self) {
        if !self.body_open || self.outbox.body_end {
            return;
        }
        if self.opts.body == BodyOut::Chunked {
            // The last chunk, and no trailers.
            self.outbox.push(b"0\r\n\r\n", false);
        }
        self.outbox.body_end = true;
    }

    fn close(&mut self) {
        // (A request cut short: the upstream cannot be given the rest.)
        self.body_open = false;
        self.outbox.clear();
    }

    fn is_closed(&self) -> bool {
        !self.body_open
    }

    fn held(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests;
