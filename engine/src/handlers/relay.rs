//! What the producers that talk to another process share (a CGI
//! program's pipes, an upstream's socket): the request body waiting to
//! be written to it ([`Outbox`]: fed by the engine, refilled from a body
//! held whole, written while it takes it), and its answer's body taken
//! out of its framing ([`Unframe`]: by length, or chunked, its
//! trailer fields kept). Those over one socket (the reverse proxy's,
//! FastCGI's) share its handling ([`Socket`]) and what the access log
//! says of the server ([`Answered`]).

use std::io;

use super::produce::Wrote;
use super::spool::Spool;
use crate::http::body::{BodyDecoder, BodyLimits};
use crate::http::grammar::push_hex;
use crate::http::parse::BodyFraming;
use crate::http::trailers;

/// Request-body bytes buffered for the other side before reading from
/// the client pauses.
pub const INPUT_CAP: usize = 64 * 1024;

#[cfg(feature = "upstreams")]
mod socket;
#[cfg(feature = "upstreams")]
pub use socket::{socket_sources, Answered, Socket};

/// `label` (what answers: `fastcgi FILE`, `proxy URL`) with the request
/// it answers, `LABEL ("GET /target")`: the label alone names no
/// request when one front controller or upstream answers them all; nginx
/// ends its lines with `request: "GET /target HTTP/1.1"`. (The method
/// and target as sent, quoted; the logger escapes what is left; a label
/// that is not UTF-8, a file's name, decoded lossily.)
#[cfg(feature = "upstreams")]
pub fn with_request(mut label: Vec<u8>, method: &[u8], target: &[u8]) -> String {
    label.extend_from_slice(b" (\"");
    push_escaped(&mut label, method);
    label.push(b' ');
    push_escaped(&mut label, target);
    label.extend_from_slice(b"\")");
    // (Checked once whole, as `to_string_lossy` would.)
    String::from_utf8(label).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// Appends `bytes` to `out` escaped as `str::escape_debug` escapes them
/// (lossily decoded). Printable ASCII other than quotes and `\`, what a
/// method and nearly every target are, goes as it is: the formatting
/// machinery took ~1,900 instructions a FastCGI request.
#[cfg(feature = "upstreams")]
pub fn push_escaped(out: &mut Vec<u8>, bytes: &[u8]) {
    use std::io::Write as _;
    match bytes
        .iter()
        .all(|&b| matches!(b, b' '..=b'~') && !matches!(b, b'"' | b'\'' | b'\\'))
    {
        true => out.extend_from_slice(bytes),
        false => {
            let _ = write!(out, "{}", String::from_utf8_lossy(bytes).escape_debug());
        }
    }
}

/// Refills the empty `buf` from a body `held` whole (at most
/// [`INPUT_CAP`] bytes): false once it is all read (the spool is then
/// dropped), or none is held.
pub fn refill(held: &mut Option<Spool>, buf: &mut Vec<u8>) -> io::Result<bool> {
    let Some(spool) = held.as_mut() else {
        return Ok(false);
    };
    let more = spool.read_into(buf, INPUT_CAP)? > 0;
    if !more {
        *held = None;
    }
    Ok(more)
}

/// Which of its three timeouts bounds a relay's wait now: the connect's
/// until the peer is reached, the send's while request bytes wait for
/// it to take them, else the read's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Waiting {
    /// For the connection (`connect_timeout`).
    Connect,
    /// For the peer to take request bytes (`send_timeout`).
    Send,
    /// For the peer's answer (`read_timeout`).
    Read,
}

impl Waiting {
    /// What a relay `connected` (or not) with `outbox` waits for.
    pub fn now(connected: bool, outbox: &Outbox) -> Waiting {
        match (connected, outbox.is_empty()) {
            (false, _) => Waiting::Connect,
            (true, false) => Waiting::Send,
            (true, true) => Waiting::Read,
        }
    }

    /// Of `[connect, send, read]`, the one it stands for.
    pub fn pick<T: Copy>(self, of: [T; 3]) -> T {
        of[self as usize]
    }
}

/// Why [`Outbox::write_to`] stopped short.
#[derive(Debug)]
pub enum OutboxError {
    /// The body held whole could not be read back.
    Held(io::Error),
    /// The other side does not take it any more (EPIPE, a reset).
    Write(io::Error),
}

/// Bytes on their way to another process: the request body (and, for
/// an upstream, the request head and the chunked coding before it).
#[derive(Debug, Default)]
pub struct Outbox {
    buf: Vec<u8>,
    /// How many of the bytes waiting are the client's (their HTTP/2
    /// credit goes back as they are written; a chunk's framing is not).
    client: usize,
    /// The rest of a body held whole, read into `buf` as it drains.
    held: Option<Spool>,
    /// The body was held whole: none comes from the client.
    held_body: bool,
    /// No more body comes.
    pub body_end: bool,
}

impl Outbox {
    /// An outbox whose body is `held` whole, if any (then no more comes).
    pub fn new(held: Option<Spool>) -> Outbox {
        let held_body = held.is_some();
        Outbox {
            held,
            held_body,
            body_end: held_body,
            ..Outbox::default()
        }
    }

    /// An outbox that sends `bytes` first (not the client's: a request
    /// head), in the buffer they are in.
    pub fn starting_with(bytes: Vec<u8>) -> Outbox {
        Outbox {
            buf: bytes,
            ..Outbox::default()
        }
    }

    /// Sends `held`, a body held whole, after what waits: no more comes.
    pub fn hold(&mut self, held: Spool) {
        self.held = Some(held);
        self.held_body = true;
        self.body_end = true;
    }

    /// How many more bytes it takes now.
    pub fn room(&self) -> usize {
        INPUT_CAP.saturating_sub(self.buf.len())
    }

    /// Queues `bytes`, the client's (credited when written) or not.
    pub fn push(&mut self, bytes: &[u8], client: bool) {
        self.buf.extend_from_slice(bytes);
        if client {
            self.client += bytes.len();
        }
    }

    /// Queues the client's `data` as one chunk (RFC 9112 §7.1: its size
    /// in hex, CRLF, the data, CRLF); not empty, which would end the body.
    pub fn push_chunk(&mut self, data: &[u8]) {
        push_hex(&mut self.buf, data.len() as u64);
        self.buf.extend_from_slice(b"\r\n");
        self.push(data, true);
        self.buf.extend_from_slice(b"\r\n");
    }

    /// Puts `bytes` in place of the first `n` bytes that wait (a
    /// request head sent again on another connection).
    pub fn replace_front(&mut self, n: usize, bytes: &[u8]) {
        self.buf
            .splice(..n.min(self.buf.len()), bytes.iter().copied());
    }

    /// Its buffer, for another outbox (what waits in it is dropped).
    pub fn take_buf(&mut self) -> Vec<u8> {
        self.client = 0;
        std::mem::take(&mut self.buf)
    }

    /// Its body was held whole.
    pub fn held(&self) -> bool {
        self.held_body
    }

    /// The bytes its buffer holds room for.
    #[cfg(test)]
    pub fn capacity(&self) -> usize {
        self.buf.capacity()
    }

    /// Nothing waits (nor in a body held whole).
    pub fn is_empty(&self) -> bool {
        self.buf.is_empty() && self.held.is_none()
    }

    /// Everything that came is written and more is owed: the client is
    /// the one who is slow now (see `Produce::awaits_input`).
    pub fn awaits_more(&self) -> bool {
        !self.body_end && self.is_empty()
    }

    /// Everything is written and no more comes.
    pub fn done(&self) -> bool {
        self.body_end && self.is_empty()
    }

    /// Drops what waits.
    pub fn clear(&mut self) {
        self.buf = Vec::new();
        self.client = 0;
        self.held = None;
    }

    /// Writes what waits with `write` while `ready` (cleared when it
    /// would block).
    pub fn write_to(
        &mut self,
        ready: &mut bool,
        write: &mut dyn FnMut(&[u8]) -> io::Result<usize>,
    ) -> Result<Wrote, OutboxError> {
        let mut wrote = Wrote::default();
        while *ready {
            if self.buf.is_empty() {
                match refill(&mut self.held, &mut self.buf) {
                    Ok(true) => {}
                    Ok(false) => break,
                    Err(e) => return Err(OutboxError::Held(e)),
                }
            }
            match write(&self.buf) {
                Ok(n) => {
                    self.buf.drain(..n);
                    wrote.moved |= n > 0;
                    // (A body held whole had its credit back already.)
                    let client = n.min(self.client);
                    self.client -= client;
                    wrote.client += client;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => *ready = false,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(OutboxError::Write(e)),
            }
        }
        Ok(wrote)
    }
}

/// An answer's body taken out of its framing: by length (what follows
/// is dropped) or from chunked coding; none, as it comes.
#[derive(Debug, Default)]
pub struct Unframe {
    decoder: Option<BodyDecoder>,
    /// The framing was bad: the answer is to be cut after what came.
    bad: bool,
    /// Bytes followed the body's end (dropped).
    extra: bool,
    /// A chunked body's trailer field lines, as they came.
    trailers: Vec<u8>,
}

impl Unframe {
    /// Takes bodies framed as `framing` (`BodyFraming::None`: as they
    /// come); a chunked body's trailers take at most `max_trailers`.
    pub fn new(framing: BodyFraming, max_trailers: usize) -> Unframe {
        let limits = BodyLimits {
            max_body: u64::MAX,
            max_chunk_ext: 4096,
            max_trailers,
        };
        let decoder = match framing {
            BodyFraming::None => None,
            framing => BodyDecoder::new(framing, &limits).ok(),
        };
        Unframe {
            decoder,
            ..Unframe::default()
        }
    }

    /// Replaces the body bytes in `buf` with what they hold.
    pub fn take(&mut self, buf: &mut Vec<u8>) {
        let Some(d) = self.decoder.as_mut() else {
            return;
        };
        let len = buf.len();
        match d.decode_in_place(buf, Some(&mut self.trailers)) {
            Ok(n) => self.extra |= n < len,
            // (What decoded goes out; the caller cuts the answer next.)
            Err(_) => self.bad = true,
        }
    }

    /// How many bytes may pass as they are, unread (relayed in a pipe):
    /// to the close, any number; of a body framed by its length, what is
    /// left of it; none of a chunked body (its framing must be read).
    pub fn as_is(&self) -> Option<u64> {
        match &self.decoder {
            None => Some(u64::MAX),
            Some(d) => d.length_left(),
        }
    }

    /// `n` bytes passed as they are ([`Unframe::as_is`]).
    pub fn passed(&mut self, n: usize) {
        if let Some(d) = self.decoder.as_mut() {
            d.skip_length(n as u64);
        }
    }

    /// The framing was bad.
    pub fn is_bad(&self) -> bool {
        self.bad
    }

    /// Bytes followed the end of a framed body.
    pub fn had_extra(&self) -> bool {
        self.extra
    }

    /// The trailer fields of a chunked body that ended, those that may
    /// pass ([`trailers::allowed`]): none when it had none, or none that
    /// may (no allocation then).
    pub fn trailers(&mut self) -> Option<Vec<u8>> {
        if self.trailers.is_empty() || !self.is_done() {
            return None;
        }
        let mut kept = Vec::new();
        trailers::keep_allowed(&std::mem::take(&mut self.trailers), &mut kept);
        (!kept.is_empty()).then_some(kept)
    }

    /// A framed body is complete.
    pub fn is_done(&self) -> bool {
        self.decoder.as_ref().is_some_and(BodyDecoder::is_done)
    }

    /// The body has a framing (a length, chunks), not its close, that
    /// says where it ends.
    pub fn is_framed(&self) -> bool {
        self.decoder.is_some()
    }

    /// A framed body has not ended (its end is owed).
    pub fn is_short(&self) -> bool {
        self.decoder.as_ref().is_some_and(|d| !d.is_done())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chunked_answers_trailers_are_kept_less_those_that_may_not_pass() {
        let mut u = Unframe::new(BodyFraming::Chunked, 1024);
        let mut buf = b"3\r\nabc\r\n0\r\nX-Sum: 1\r\n".to_vec();
        u.take(&mut buf);
        assert_eq!(buf, b"abc");
        assert_eq!(u.trailers(), None, "not before the end");
        let mut buf = b"Content-Length: 3\r\ngrpc-status:0\r\n\r\n".to_vec();
        u.take(&mut buf);
        assert!(buf.is_empty() && u.is_done() && !u.is_bad());
        assert_eq!(
            u.trailers().as_deref(),
            Some(&b"X-Sum: 1\r\ngrpc-status: 0\r\n"[..])
        );
        assert_eq!(u.trailers(), None, "given once");
        // None from an answer without them, or with none that may pass.
        for input in [&b"0\r\n\r\n"[..], b"0\r\nHost: x\r\n\r\n"] {
            let mut u = Unframe::new(BodyFraming::Chunked, 1024);
            u.take(&mut input.to_vec());
            assert!(u.is_done());
            assert_eq!(u.trailers(), None);
        }
    }
}
