//! The 207 Multi-Status body (RFC 4918 §13): one writer, every href
//! percent-encoded from the names' raw bytes and every text escaped.

use crate::handlers::{Body, Plan, Scratch};
use crate::http::Status;

/// 207 Multi-Status.
pub const MULTI_STATUS: Status = Status(207);

/// A multistatus document being written into a buffer.
pub struct Multistatus<'a> {
    out: &'a mut Vec<u8>,
    responses: usize,
    /// The first member [`Multistatus::failed`] listed (its href) and its
    /// errno, for the error log.
    pub first: Option<(Vec<u8>, i32)>,
}

impl<'a> Multistatus<'a> {
    /// Starts the document in `out` (emptied first).
    pub fn new(out: &'a mut Vec<u8>) -> Multistatus<'a> {
        out.clear();
        out.extend_from_slice(
            b"<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<D:multistatus xmlns:D=\"DAV:\">\n",
        );
        Multistatus {
            out,
            responses: 0,
            first: None,
        }
    }

    /// Goes on with a document whose start is written already (a part
    /// of a streamed one, in `out`).
    pub fn continuing(out: &'a mut Vec<u8>) -> Multistatus<'a> {
        Multistatus {
            out,
            responses: 0,
            first: None,
        }
    }

    /// A `<D:response>` for a member a change failed on, with the status
    /// `e` makes; the first is kept for the log ([`Multistatus::first`]).
    pub fn failed(&mut self, href: &[u8], collection: bool, e: &std::io::Error) {
        if self.first.is_none() {
            self.first = Some((href.to_vec(), crate::handlers::refusal::errno(e)));
        }
        self.status(href, collection, super::status_of(e));
    }

    /// A `<D:response>` for `href` (percent-encoded already; a
    /// collection's gets its trailing slash) with one status.
    pub fn status(&mut self, href: &[u8], collection: bool, status: Status) {
        self.open(href, collection);
        self.out.extend_from_slice(b"<D:status>");
        status_line(self.out, status);
        self.out.extend_from_slice(b"</D:status></D:response>\n");
    }

    /// Opens a `<D:response>` with its href; what follows is the caller's
    /// (propstats) until [`Multistatus::close`].
    pub fn open(&mut self, href: &[u8], collection: bool) {
        self.responses += 1;
        self.out.extend_from_slice(b"<D:response><D:href>");
        escape(self.out, href);
        if collection && !href.ends_with(b"/") {
            self.out.push(b'/');
        }
        self.out.extend_from_slice(b"</D:href>");
    }

    /// Closes what [`Multistatus::open`] opened.
    pub fn close(&mut self) {
        self.out.extend_from_slice(b"</D:response>\n");
    }

    /// The buffer, to write a response's inside.
    pub fn out(&mut self) -> &mut Vec<u8> {
        self.out
    }

    /// How many responses it holds.
    pub fn count(&self) -> usize {
        self.responses
    }

    /// Ends the document; whether it holds any response.
    pub fn end(self) -> bool {
        self.out.extend_from_slice(b"</D:multistatus>\n");
        self.responses > 0
    }
}

/// The answer once a change is over: the 207 in `s.body` if `any`
/// member failed, else `status` (and no body).
pub fn settle(any: bool, s: &mut Scratch, status: Status) -> Plan {
    if any {
        return plan(s);
    }
    s.body.clear();
    super::bare(status)
}

/// `HTTP/1.1 404 Not Found`, as a `<D:status>` holds it.
pub fn status_line(out: &mut Vec<u8>, status: Status) {
    out.extend_from_slice(b"HTTP/1.1 ");
    crate::http::push_u64(out, status.0.into());
    out.push(b' ');
    out.extend_from_slice(status.reason().as_bytes());
}

/// The 207 answer whose body is the document in `s.body`.
pub fn plan(s: &mut Scratch) -> Plan {
    s.header("Content-Type", b"application/xml; charset=utf-8");
    Plan {
        status: MULTI_STATUS,
        body: Body::Buffer,
        close: false,
    }
}

/// Appends `text` with XML's five special characters escaped (runs
/// without one in one copy).
pub fn escape(out: &mut Vec<u8>, text: &[u8]) {
    let special = |b: &u8| matches!(b, b'&' | b'<' | b'>' | b'"' | b'\'');
    if !text.iter().any(special) {
        out.extend_from_slice(text);
        return;
    }
    let mut from = 0;
    for (i, &b) in text.iter().enumerate() {
        let with: &[u8] = match b {
            b'&' => b"&amp;",
            b'<' => b"&lt;",
            b'>' => b"&gt;",
            b'"' => b"&quot;",
            b'\'' => b"&apos;",
            _ => continue,
        };
        out.extend_from_slice(&text[from..i]);
        out.extend_from_slice(with);
        from = i + 1;
    }
    out.extend_from_slice(&text[from..]);
}

/// Appends one path segment (raw bytes) percent-encoded: all but
/// RFC 3986's unreserved characters (runs of those in one copy).
pub fn push_segment(out: &mut Vec<u8>, segment: &[u8]) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    let mut from = 0;
    for (i, &b) in segment.iter().enumerate() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            continue;
        }
        out.extend_from_slice(&segment[from..i]);
        out.extend_from_slice(&[b'%', HEX[usize::from(b >> 4)], HEX[usize::from(b & 15)]]);
        from = i + 1;
    }
    out.extend_from_slice(&segment[from..]);
}

/// The decoded path `path` (`/a b/c`) as an href (`/a%20b/c`).
pub fn href(path: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(path.len() + 16);
    push_href(&mut out, path);
    out
}

/// Appends the decoded path `path` (`/a b/c`) as an href (`/a%20b/c`).
pub fn push_href(out: &mut Vec<u8>, path: &[u8]) {
    for (i, segment) in path.split(|&b| b == b'/').enumerate() {
        if i > 0 {
            out.push(b'/');
        }
        push_segment(out, segment);
    }
}
