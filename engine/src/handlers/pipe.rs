//! Pipe bodies: a response that another process writes into a pipe (a
//! CGI program today), as a handler hands it to the engine.
//!
//! The handler starts the process and gives the engine its pipes and a
//! [`PipeReply`], the object that knows the process's reply protocol:
//! it finds the head at the start of the output (status, header lines,
//! length) and stops the process when asked. The engine registers the
//! pipes in its event loop, writes the request body to the input, logs
//! each line of diagnostics, hands the output to the reply object until
//! the head is in, and then frames the rest as the response body. It
//! never needs to know which protocol the process speaks.

use std::fmt;
use std::os::fd::OwnedFd;
use std::time::Duration;

use super::spool::Spool;
use crate::http::response::Stamp;

/// A response body that a process writes into a pipe.
pub struct Pipe {
    /// What the process writes: the response, as [`Pipe::reply`] reads it.
    pub output: OwnedFd,
    /// What the process reads: the request body.
    pub input: OwnedFd,
    /// The process's diagnostics: each line goes to the error log,
    /// after [`Pipe::label`].
    pub diagnostics: OwnedFd,
    /// A request body held whole before the process started: written to
    /// the input first (and none follows from the client).
    pub held: Option<Spool>,
    /// Whether the process reads a body at all: without one, its input
    /// is closed at once.
    pub has_body: bool,
    /// Names the process in log lines (`cgi /srv/cgi-bin/x`).
    pub label: String,
    /// How long the process may go without output or reading input
    /// before it is stopped and the client answered 504.
    pub idle_timeout: Duration,
    /// Reads the head of the output and controls the process.
    pub reply: Box<dyn PipeReply>,
}

impl fmt::Debug for Pipe {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pipe")
            .field("label", &self.label)
            .field("reply", &self.reply)
            .finish_non_exhaustive()
    }
}

/// The head a process put at the start of its output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplyHead {
    /// Bytes of the output the head took; the body starts after them.
    pub len: usize,
    /// The response status.
    pub status: u16,
    /// A reason phrase of the process's own, if it gave one.
    pub reason: Option<Vec<u8>>,
    /// Header lines to send (`Name: value\r\n` each), framing and
    /// connection fields left out: the engine writes those.
    pub headers: Vec<u8>,
    /// The body's length, if the process said it.
    pub content_length: Option<u64>,
    /// The body is in chunked coding, which the engine decodes (an
    /// `nph-` script's own HTTP/1.1 framing, read for HTTP/2).
    pub chunked: bool,
    /// Which of the fields the engine stamps answers with are the
    /// answer's own: among `headers`, or left out on purpose.
    pub own: Own,
}

/// The fields of the engine's [`Stamp`] (`Server`, `Date`) that an answer
/// brings itself (an upstream's, passed on by the reverse proxy): the
/// engine writes not its own then. None for a program's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Own {
    /// `Server`: the answer's, or none if it had none.
    pub server: bool,
    /// `Date`: the answer's (among `headers`).
    pub date: bool,
}

impl Own {
    /// The stamp to write the answer with: `stamp` without the fields
    /// it brings (an empty value is left out, see [`Stamp`]).
    pub fn stamp<'a>(&self, stamp: &Stamp<'a>) -> Stamp<'a> {
        Stamp {
            server: if self.server { b"" } else { stamp.server },
            date: if self.date { b"" } else { stamp.date },
            #[cfg(feature = "http3")]
            alt_svc: stamp.alt_svc,
        }
    }
}

/// What the output so far makes of the head.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReplyStart {
    /// The head is not complete yet.
    Incomplete,
    /// A response: this head, then the body.
    Head(ReplyHead),
    /// No response from the process: the server answers as if this
    /// target had been requested (a CGI local redirect); the output is
    /// not read any further.
    Redirect(Vec<u8>),
    /// Not a valid head (the reason is for the error log).
    Invalid(&'static str),
}

/// The reply protocol of a pipe's process, and its control.
///
/// Dropping it lets the process go: it is reaped now, or later if it
/// still runs (and stopped if it outlives its timeout).
pub trait PipeReply: fmt::Debug {
    /// Whether the output is a whole HTTP response already (an `nph-`
    /// CGI script): over HTTP/1.1 it passes as it comes, with no head to
    /// read, and the connection closes after it; over HTTP/2 its head is
    /// read by [`PipeReply::start`] like any other.
    fn is_raw(&self) -> bool;

    /// Reads the head at the start of `output` (all the output so far;
    /// all there will be, when `ended`).
    fn start(&mut self, output: &[u8], ended: bool) -> ReplyStart;

    /// Stops the process at once: its output is not wanted any more.
    fn stop(&mut self);
}
