//! The request-head parser: strict RFC 9112, zero-copy, zero-allocation.
//!
//! STUB: signatures are the contract; bodies are filled in by the parser work.

use super::{Method, Status, Version};

/// Size limits applied while parsing a request head.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Longest request line (method, target, version) in bytes; longer → 414.
    pub max_request_line: usize,
    /// Largest whole head (request line + header fields + final CRLF); larger → 431.
    pub max_head: usize,
    /// Most header fields; more → 431.
    pub max_headers: usize,
}

/// One header field line, name and value as they appeared (value trimmed of OWS).
#[derive(Debug, Clone, Copy)]
pub struct Header<'a> {
    pub name: &'a [u8],
    pub value: &'a [u8],
}

impl Header<'_> {
    /// An empty header, for initialising storage arrays.
    pub const EMPTY: Header<'static> = Header {
        name: b"",
        value: b"",
    };
}

/// How the request body is framed (RFC 9112 §6).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyFraming {
    /// No body.
    None,
    /// `Content-Length: n` (n may be 0).
    Length(u64),
    /// `Transfer-Encoding: chunked`.
    Chunked,
}

/// A parsed request head. Borrows from the input buffer.
#[derive(Debug)]
pub struct Request<'a> {
    pub method: Method,
    /// The method as sent (for logs and CGI).
    pub method_token: &'a [u8],
    /// The request target in origin-form (`/path?query`), or `*` for
    /// `OPTIONS *`, or the authority for CONNECT. An absolute-form target
    /// is reduced to its origin-form part (RFC 9112 §3.2.2).
    pub target: &'a [u8],
    pub version: Version,
    pub headers: &'a [Header<'a>],
    /// Bytes of the buffer taken by the head, including the final CRLF
    /// (and any leading empty lines that were skipped).
    pub head_len: usize,
    /// The host: from an absolute-form target if there was one, else the
    /// Host header. `None` only for HTTP/1.0 without Host.
    pub host: Option<&'a [u8]>,
    pub body: BodyFraming,
    /// Whether the connection may stay open after this request
    /// (version default, overridden by `Connection: close` / `keep-alive`).
    pub keep_alive: bool,
    /// `Expect: 100-continue` was sent.
    pub expect_continue: bool,
}

impl<'a> Request<'a> {
    /// The value of the first header with this name (ASCII case-insensitive).
    pub fn header(&self, name: &str) -> Option<&'a [u8]> {
        self.headers
            .iter()
            .find(|h| h.name.eq_ignore_ascii_case(name.as_bytes()))
            .map(|h| h.value)
    }
}

/// Why a request was rejected, and with which status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParseError {
    pub status: Status,
    /// A short human explanation, for the error log (never sent raw).
    pub reason: &'static str,
}

/// Parses one request head from the start of `buf`.
///
/// Returns `Ok(None)` when the head is incomplete and within limits,
/// `Ok(Some(request))` when complete, `Err` when it can never be valid.
pub fn parse_request<'a>(
    buf: &'a [u8],
    limits: &Limits,
    storage: &'a mut [Header<'a>],
) -> Result<Option<Request<'a>>, ParseError> {
    let _ = (buf, limits, storage);
    todo!()
}
