//! Handlers decide *what* to send: a status, header lines and a body
//! source. They never touch a socket; the server decides how bytes leave
//! (one write for a head and a small body, `sendfile` for large ones).

pub mod app;
pub mod autoindex;
pub mod builtin;
pub mod cgi;
pub mod compress;
pub mod cors;
mod error;
pub mod error_page;
pub mod fallback;
#[cfg(feature = "upstreams")]
pub mod fastcgi;
pub mod file_cache;
pub mod health;
pub mod listings;
pub mod pipe;
pub mod produce;
pub mod protected;
#[cfg(feature = "upstreams")]
pub mod proxy;
pub mod refusal;
pub mod relay;
pub mod rewrite;
#[cfg(feature = "servlets")]
pub mod servlets;
pub mod spool;
pub mod static_files;
pub mod stats;
pub mod stream;
#[cfg(feature = "webdav")]
pub mod webdav;

pub use error::Error;
pub use file_cache::Source;
pub use refusal::Refusal;

use crate::http::Status;

/// One piece of a composite body (multipart/byteranges).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Seg {
    /// `len` bytes of [`Scratch::body`] starting at `start`.
    Bytes {
        /// Where they start in [`Scratch::body`].
        start: usize,
        /// How many.
        len: usize,
    },
    /// `len` bytes of the plan's file from `offset`.
    File {
        /// Where they start in the file.
        offset: u64,
        /// How many.
        len: u64,
    },
}

/// Where a response body comes from.
#[derive(Debug)]
pub enum Body {
    /// No body at all (304, and the `Content-Length: 0` of OPTIONS).
    Empty,
    /// Fixed bytes (error pages).
    Static(&'static [u8]),
    /// The bytes in [`Scratch::body`] (directory listings, redirects).
    Buffer,
    /// A range of a file.
    File {
        /// The file (its content, when small).
        src: Source,
        /// Where the range starts.
        offset: u64,
        /// Its length.
        len: u64,
    },
    /// The pieces in [`Scratch::segs`], over this file.
    Multipart {
        /// The file the pieces' ranges are of.
        src: Source,
    },
    /// What a process writes into a pipe, head included (CGI): the
    /// engine pumps it (see [`pipe`]).
    Pipe(Box<pipe::Pipe>),
    /// An embedded handler's body in pieces, or its answer given later
    /// (see [`stream`]): the engine pumps it.
    Stream(Box<stream::Streamed>),
    /// An upstream's answer (`[[reverse_proxy]]`): the engine connects
    /// to it and pumps its answer (see [`proxy`]).
    #[cfg(feature = "upstreams")]
    Upstream(Box<proxy::UpstreamPlan>),
    /// A FastCGI application's answer (`[[fastcgi]]`): the engine
    /// connects to it and pumps its answer (see [`fastcgi`]).
    #[cfg(feature = "upstreams")]
    Fastcgi(Box<fastcgi::FastcgiPlan>),
}

/// What a handler decided to send.
#[derive(Debug)]
pub struct Plan {
    /// The status (a pipe's process gives its own in its head).
    pub status: Status,
    /// The body; its header lines are in [`Scratch::headers`].
    pub body: Body,
    /// The connection must close after this response.
    pub close: bool,
}

/// Per-thread buffers a handler writes into, reused across requests so
/// the steady state allocates nothing.
#[derive(Debug, Default)]
pub struct Scratch {
    /// Header lines (`Name: value\r\n`…) beyond those the server writes
    /// itself (status line, Server, Date, Content-Length, Connection).
    pub headers: Vec<u8>,
    /// Body bytes for [`Body::Buffer`] and the part headers of multipart bodies.
    pub body: Vec<u8>,
    /// The pieces of a [`Body::Multipart`].
    pub segs: Vec<Seg>,
    /// The path being answered: the request's decoded path (the router
    /// puts it here before any handler runs), extended by a handler that
    /// answers with another file (a directory's index file). Header
    /// rules and throttles match it.
    pub path: Vec<u8>,
    /// A path relative to the document root.
    pub rel: Vec<u8>,
    /// Why the file asked for was not served (logged at `debug`)...
    pub why: Option<Refusal>,
    /// ...and which file: relative to the document root, or absolute.
    pub why_file: Vec<u8>,
    /// The error log has said why the answer is a server error (see
    /// [`Plan::told_error`]): no line of the worker's repeats it.
    pub told: bool,
}

impl Scratch {
    /// Empties every buffer, keeping its capacity.
    pub fn clear(&mut self) {
        self.headers.clear();
        self.body.clear();
        self.segs.clear();
        self.path.clear();
        self.rel.clear();
        self.why = None;
        self.why_file.clear();
        self.told = false;
    }

    /// Records why the file at [`Scratch::rel`] is not served.
    pub fn refuse(&mut self, why: Refusal) {
        self.why = Some(why);
        self.why_file.clear();
        self.why_file.extend_from_slice(&self.rel);
    }

    /// Records why `file` (absolute, or relative to the root) is not served.
    pub fn refuse_file(&mut self, why: Refusal, file: &[u8]) {
        self.why = Some(why);
        self.why_file.clear();
        self.why_file.extend_from_slice(file);
    }

    /// Gives back the memory of a buffer that one large answer (a long
    /// directory listing, a handler's big body) grew beyond `keep` bytes,
    /// so a worker does not hold it for good.
    pub fn trim(&mut self, keep: usize) {
        for b in [&mut self.headers, &mut self.body] {
            if b.capacity() > keep {
                b.clear();
                b.shrink_to(keep);
            }
        }
    }

    /// Appends a header line.
    pub fn header(&mut self, name: &str, value: &[u8]) {
        push_header(&mut self.headers, name, value);
    }
}

/// Appends the header line `name: value` to `lines`.
pub fn push_header(lines: &mut Vec<u8>, name: &str, value: &[u8]) {
    lines.extend_from_slice(name.as_bytes());
    lines.extend_from_slice(b": ");
    lines.extend_from_slice(value);
    lines.extend_from_slice(b"\r\n");
}

impl Body {
    /// Whether the engine pumps it (a program's output, a handler's
    /// pieces or later answer) rather than queueing it whole.
    pub fn is_produced(&self) -> bool {
        matches!(self, Body::Pipe(_) | Body::Stream(_)) || self.is_upstream()
    }

    /// Whether it is an upstream's answer (a proxied request, FastCGI):
    /// never without the cargo feature `upstreams`.
    pub fn is_upstream(&self) -> bool {
        #[cfg(feature = "upstreams")]
        if let Body::Upstream(_) | Body::Fastcgi(_) = self {
            return true;
        }
        false
    }
}

impl Plan {
    /// The body length in bytes (what `Content-Length` says).
    pub fn body_len(&self, scratch: &Scratch) -> u64 {
        match &self.body {
            Body::Empty => 0,
            Body::Static(b) => b.len() as u64,
            Body::Buffer => scratch.body.len() as u64,
            Body::File { len, .. } => *len,
            // (Its length is in its own head, if anywhere.)
            Body::Pipe(_) | Body::Stream(_) => 0,
            #[cfg(feature = "upstreams")]
            Body::Upstream(_) | Body::Fastcgi(_) => 0,
            Body::Multipart { .. } => scratch
                .segs
                .iter()
                .map(|s| match s {
                    Seg::Bytes { len, .. } => *len as u64,
                    Seg::File { len, .. } => *len,
                })
                .sum(),
        }
    }

    /// An error response with brisk's small HTML page. Any header lines
    /// already in `scratch` (such as `Allow`) are kept.
    pub fn error(status: Status, scratch: &mut Scratch) -> Plan {
        scratch.header("Content-Type", b"text/html; charset=utf-8");
        Plan {
            status,
            body: Body::Static(error_page::page(status)),
            close: false,
        }
    }

    /// [`Plan::error`] for a failure whose line the error log has already
    /// (an upstream that failed, none up, a rewrite loop): one line says
    /// what failed and why, without a second, bare `503 answering /x`.
    pub fn told_error(status: Status, scratch: &mut Scratch) -> Plan {
        scratch.told = true;
        Plan::error(status, scratch)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trim_gives_back_only_what_grew_large() {
        let mut s = Scratch::default();
        s.body.extend_from_slice(&[b'x'; 1 << 20]);
        s.headers.extend_from_slice(b"A: b\r\n");
        let small = s.headers.capacity();
        s.trim(64 * 1024);
        assert!(s.body.capacity() <= 64 * 1024);
        assert_eq!(s.headers.capacity(), small);
        assert_eq!(s.headers, b"A: b\r\n");
    }
}
