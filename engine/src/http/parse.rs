//! The request-head parser: strict RFC 9112, zero-copy, zero-allocation
//! (but for one rare target form, `http://host?query`, see
//! [`Request::target`]).
//!
//! The parser is stateless: every call re-reads the head from the start of
//! the buffer (heads are small and bounded by [`Limits::max_head`]). It reads
//! line by line and rejects on the first byte that can never be part of a
//! valid head, so a bad request is refused as soon as the offending bytes
//! arrive, even before the head is complete.

mod fields;
pub mod response;
mod target;

use crate::ascii::IgnoreCase;
use std::borrow::Cow;

use super::grammar::{is_tchar, trim_ows};
use super::{Method, Status, Version};
use fields::Semantics;
use target::parse_target;

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
    /// The field name, as sent (compare it ASCII case-insensitively).
    pub name: &'a [u8],
    /// The field value without leading and trailing whitespace.
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
    /// The method, for dispatch (`Other` for unknown but valid tokens).
    pub method: Method,
    /// The method as sent (for logs and CGI).
    pub method_token: &'a [u8],
    /// The request target in origin-form (`/path?query`), or `*` for
    /// `OPTIONS *`, or the authority for CONNECT. An absolute-form target
    /// is reduced to its origin-form part (RFC 9112 §3.2.2); borrowed
    /// from `buf`, but for `http://host?query`, whose origin-form
    /// `/?query` has a `/` the client did not send (RFC 9110 §4.2.3).
    pub target: Cow<'a, [u8]>,
    /// The protocol version (a higher HTTP/1.x minor is read as 1.1).
    pub version: Version,
    /// The header fields in the order they were sent.
    pub headers: &'a [Header<'a>],
    /// Bytes of the buffer taken by the head, including the final CRLF
    /// (and any leading empty lines that were skipped).
    pub head_len: usize,
    /// The host: from an absolute-form target if there was one, else the
    /// Host header. `None` only for HTTP/1.0 without Host.
    pub host: Option<&'a [u8]>,
    /// How the body that follows the head is framed.
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
        find_header(self.headers, name)
    }
}

/// The value of the first of `headers` named `name` (ASCII case-insensitive).
pub fn find_header<'a>(headers: &[Header<'a>], name: &str) -> Option<&'a [u8]> {
    headers
        .iter()
        .find(|h| h.name.eq_ignore_case(name.as_bytes()))
        .map(|h| h.value)
}

/// Why a request was rejected, and with which status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParseError {
    /// The status to answer with (the connection is then closed).
    pub status: Status,
    /// A short human explanation, for the error log (never sent raw).
    pub reason: &'static str,
}

impl ParseError {
    /// A 400 Bad Request with this reason.
    pub const fn bad_request(reason: &'static str) -> ParseError {
        ParseError {
            status: Status::BAD_REQUEST,
            reason,
        }
    }
}

const fn bad(reason: &'static str) -> ParseError {
    ParseError::bad_request(reason)
}

/// A request line whose third part does not even begin like `HTTP/`
/// (in any case): not HTTP/1.x at all (a port that also speaks HTTP/2
/// takes it for a failed connection preface, see
/// [`ParseError::is_not_http1`]).
pub const NOT_HTTP1: ParseError = bad("not an HTTP/1.x request line");

impl ParseError {
    /// Whether the bytes were not an HTTP/1.x request line at all
    /// ([`NOT_HTTP1`]), rather than a malformed one.
    pub fn is_not_http1(&self) -> bool {
        self.reason == NOT_HTTP1.reason
    }
}

const fn too_large(reason: &'static str) -> ParseError {
    ParseError {
        status: Status::HEADER_FIELDS_TOO_LARGE,
        reason,
    }
}

/// Whether `b` may appear in a request target: visible ASCII except `#`,
/// and any byte >= 0x80. RFC 3986 §2 wants non-ASCII percent-encoded, but
/// curl given a literal `é` sends it raw, and nginx, lighttpd and Caddy
/// accept it in the path and the query: brisk does too, and hands it on
/// as sent (the path module takes bytes >= 0x80 as ordinary; both logs
/// escape them). Controls are not (see [`has_c1_control`] for those
/// written in UTF-8). A fragment (`#…`, RFC 3986 §3.5) is for the client
/// alone and is never sent (RFC 9112 §3.2 has no room for it): one that
/// arrives is a broken or hostile client, and guessing whether `/a#b`
/// means `/a` would make brisk differ from whatever sits in front. The
/// other bytes RFC 3986 leaves out (`"`, `{`, `|`, `\`, …) are accepted,
/// as every common client and server does.
fn is_target_byte(b: u8) -> bool {
    b > 0x20 && b != 0x7f && b != b'#'
}

/// Where the request target at the start of `rest` ends (its first byte
/// that [`is_target_byte`] refuses), and whether it holds a raw byte of
/// 0x80 or more; `None` if every byte is a target byte. ASCII is scanned
/// first, as before such bytes were taken: every target a browser sends
/// ends there, at no more cost than then (a second pass over every target
/// for C1 controls cost ~100 instructions a request, `bench/cost`).
fn find_target_end(rest: &[u8]) -> Option<(usize, bool)> {
    let ascii = rest
        .iter()
        .position(|&b| !(b > 0x20 && b < 0x7f && b != b'#'))?;
    if rest[ascii] < 0x80 {
        return Some((ascii, false));
    }
    let more = rest[ascii..].iter().position(|&b| !is_target_byte(b))?;
    Some((ascii + more, true))
}

/// Whether `target` holds a C1 control (U+0080–U+009F) in UTF-8: a
/// control like the C0 ones, which no URI typed or linked carries (a
/// terminal takes U+009B as CSI), so it is refused with them.
fn has_c1_control(target: &[u8]) -> bool {
    target.contains(&0xc2)
        && target
            .windows(2)
            .any(|w| w[0] == 0xc2 && (0x80..0xa0).contains(&w[1]))
}

/// Why `b` (not a target byte) cannot be in a request target.
fn target_byte_error(b: u8) -> ParseError {
    match b {
        b'#' => bad("fragment (#) in request target"),
        _ => bad("invalid character in request target"),
    }
}

/// Where the line that starts at `start` ends.
enum LineEnd {
    /// The line is `buf[start..end]`; the next one starts at `next`.
    Complete { end: usize, next: usize },
    /// No CRLF yet: the line so far is `buf[start..]` (without a lone CR
    /// at the very end of the buffer, which may be the start of a CRLF).
    Partial { end: usize },
}

/// Finds the CRLF that ends the line starting at `start`. Only CRLF ends a
/// line: a bare LF or a CR not followed by LF is an error (RFC 9112 §2.2
/// lets a recipient reject them, and treating them differently from other
/// parsers is how request smuggling starts).
fn find_line_end(buf: &[u8], start: usize) -> Result<LineEnd, ParseError> {
    let rest = buf.get(start..).unwrap_or_default();
    // (The first CR or LF: the first control byte, as a line has none
    // but them, or else the next one.)
    let mut from = 0;
    let first = loop {
        match super::grammar::first_control(&rest[from..]) {
            Some(i) if matches!(rest[from + i], b'\r' | b'\n') => break Some(from + i),
            Some(i) => from += i + 1,
            None => break None,
        }
    };
    match first {
        None => Ok(LineEnd::Partial { end: buf.len() }),
        Some(i) => {
            let end = start + i;
            if rest[i] == b'\n' {
                return Err(bad("bare LF in request head"));
            }
            match rest.get(i + 1) {
                None => Ok(LineEnd::Partial { end }),
                Some(b'\n') => Ok(LineEnd::Complete { end, next: end + 2 }),
                Some(_) => Err(bad("bare CR in request head")),
            }
        }
    }
}

/// The parts of a request line, all borrowed from it.
struct RequestLine<'a> {
    method: &'a [u8],
    target: &'a [u8],
    version: Version,
}

/// Checks `HTTP/d.d` (or a prefix of it while the line is incomplete).
/// `HTTP-name` is case-sensitive (RFC 9112 §2.3).
fn parse_version(v: &[u8], complete: bool) -> Result<Option<Version>, ParseError> {
    const PATTERN: &[u8; 8] = b"HTTP/1.1";
    // (What nearly every request and answer says, at once; the loop
    // below gives these two the same verdict.)
    match v {
        b"HTTP/1.1" => return Ok(Some(Version::Http11)),
        b"HTTP/1.0" => return Ok(Some(Version::Http10)),
        _ => {}
    }
    if v.len() > PATTERN.len() {
        return Err(bad("malformed HTTP version"));
    }
    for (i, (&b, &p)) in v.iter().zip(PATTERN).enumerate() {
        let ok = match i {
            5 | 7 => b.is_ascii_digit(),
            _ => b == p,
        };
        if !ok {
            return Err(match i < 5 && !b.eq_ignore_ascii_case(&p) {
                true => NOT_HTTP1,
                false => bad("malformed HTTP version"),
            });
        }
    }
    if v.len() < PATTERN.len() {
        return if complete {
            Err(bad("malformed HTTP version"))
        } else {
            Ok(None)
        };
    }
    // RFC 9112 §2.3: a higher minor version of 1.x is answered as 1.1.
    match (v[5], v[7]) {
        (b'1', b'0') => Ok(Some(Version::Http10)),
        (b'1', _) => Ok(Some(Version::Http11)),
        _ => Err(ParseError {
            status: Status::VERSION_NOT_SUPPORTED,
            reason: "HTTP version not supported",
        }),
    }
}

/// Splits and checks `method SP target SP version` (RFC 9112 §3), exactly
/// one SP each. With `complete == false` only the prefix is checked and
/// `Ok(None)` means "fine so far".
fn parse_request_line(line: &[u8], complete: bool) -> Result<Option<RequestLine<'_>>, ParseError> {
    let incomplete = |what: &'static str| if complete { Err(bad(what)) } else { Ok(None) };

    let method_end = line.iter().position(|&b| !is_tchar(b));
    let Some(method_end) = method_end else {
        return incomplete("request line has no target");
    };
    if line[method_end] != b' ' {
        return Err(bad("invalid character in method"));
    }
    if method_end == 0 {
        return Err(bad("empty method"));
    }
    let method = &line[..method_end];

    let rest = &line[method_end + 1..];
    let Some((target_end, raw)) = find_target_end(rest) else {
        // HTTP/0.9 style `GET /` without a version is not served.
        return incomplete("request line has no HTTP version");
    };
    if rest[target_end] != b' ' {
        return Err(target_byte_error(rest[target_end]));
    }
    if target_end == 0 {
        return Err(bad("empty request target"));
    }
    let target = &rest[..target_end];
    if raw && has_c1_control(target) {
        return Err(bad("C1 control character in request target"));
    }

    match parse_version(&rest[target_end + 1..], complete)? {
        Some(version) if complete => Ok(Some(RequestLine {
            method,
            target,
            version,
        })),
        _ => Ok(None),
    }
}

/// The method, target and version of `head`'s first line, when that is a
/// whole, valid request line (however the rest of the head is): what a
/// head refused for a later line is logged with.
pub fn request_line(head: &[u8]) -> Option<(&[u8], &[u8], Version)> {
    let LineEnd::Complete { end, .. } = find_line_end(head, 0).ok()? else {
        return None;
    };
    let line = parse_request_line(&head[..end], true).ok()??;
    Some((line.method, line.target, line.version))
}

/// Parses one field line `name ":" OWS value OWS` (RFC 9112 §5).
/// With `complete == false` only the prefix is checked.
fn parse_field(line: &[u8], complete: bool) -> Result<Option<Header<'_>>, ParseError> {
    let Some(name_end) = line.iter().position(|&b| !is_tchar(b)) else {
        return if complete {
            Err(bad("header line without a colon"))
        } else {
            Ok(None)
        };
    };
    match line[name_end] {
        b':' => {}
        // §5.1: no whitespace is allowed between the name and the colon;
        // a server MUST reject such a request with 400.
        b' ' | b'\t' => return Err(bad("whitespace between header name and colon")),
        _ => return Err(bad("invalid character in header name")),
    }
    if name_end == 0 {
        return Err(bad("empty header name"));
    }
    let value = &line[name_end + 1..];
    if !super::grammar::is_field_value(value) {
        return Err(bad("invalid character in header value"));
    }
    if !complete {
        return Ok(None);
    }
    Ok(Some(Header {
        name: &line[..name_end],
        value: trim_ows(value),
    }))
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
    let mut count = 0;
    let room = storage.len();
    let head = parse_head(buf, limits, room, &mut |field| {
        storage[count] = field;
        count += 1;
    })?;
    let headers: &'a [Header<'a>] = storage;
    Ok(head.map(|h| h.with_headers(&headers[..count])))
}

/// A parsed request head whose header fields went elsewhere (see
/// [`parse_head`]): a [`Request`] without [`Request::headers`].
#[derive(Debug)]
pub struct RequestHead<'a> {
    /// As [`Request::method`].
    pub method: Method,
    /// As [`Request::method_token`].
    pub method_token: &'a [u8],
    /// As [`Request::target`].
    pub target: Cow<'a, [u8]>,
    /// As [`Request::version`].
    pub version: Version,
    /// As [`Request::head_len`].
    pub head_len: usize,
    /// As [`Request::host`].
    pub host: Option<&'a [u8]>,
    /// As [`Request::body`].
    pub body: BodyFraming,
    /// As [`Request::keep_alive`].
    pub keep_alive: bool,
    /// As [`Request::expect_continue`].
    pub expect_continue: bool,
}

impl<'a> RequestHead<'a> {
    /// The request, with these header fields.
    pub fn with_headers(self, headers: &'a [Header<'a>]) -> Request<'a> {
        Request {
            method: self.method,
            method_token: self.method_token,
            target: self.target,
            version: self.version,
            headers,
            head_len: self.head_len,
            host: self.host,
            body: self.body,
            keep_alive: self.keep_alive,
            expect_continue: self.expect_continue,
        }
    }
}

/// Parses one request head from the start of `buf`, as [`parse_request`]
/// does, handing each header field to `on_field` in order instead of
/// storing it (at most `room` of them, and `limits.max_headers`). Fields
/// handed out before an error or an incomplete head are to be forgotten.
pub fn parse_head<'a>(
    buf: &'a [u8],
    limits: &Limits,
    room: usize,
    on_field: &mut dyn FnMut(Header<'a>),
) -> Result<Option<RequestHead<'a>>, ParseError> {
    let head_too_large = || too_large("request head too large");

    // RFC 9112 §2.2: empty lines before the request line are ignored.
    let mut pos = 0;
    loop {
        match (buf.get(pos), buf.get(pos + 1)) {
            (Some(b'\r'), Some(b'\n')) => pos += 2,
            (Some(b'\r'), None) => return Ok(None),
            (Some(b'\r' | b'\n'), _) => return Err(bad("bare CR or LF before request line")),
            _ => break,
        }
        if pos > limits.max_head {
            return Err(head_too_large());
        }
    }

    let line_start = pos;
    let (line, next) = match find_line_end(buf, line_start)? {
        LineEnd::Complete { end, next } => (&buf[line_start..end], Some(next)),
        LineEnd::Partial { end } => (&buf[line_start..end], None),
    };
    if line.len() > limits.max_request_line {
        return Err(ParseError {
            status: Status::URI_TOO_LONG,
            reason: "request line too long",
        });
    }
    let parsed = parse_request_line(line, next.is_some())?;
    let (Some(rl), Some(next)) = (parsed, next) else {
        return if buf.len() > limits.max_head {
            Err(head_too_large())
        } else {
            Ok(None)
        };
    };
    let method = Method::from_token(rl.method);
    let target = parse_target(method, rl.target)?;

    let mut sem = Semantics::default();
    let Some(head_len) = field_lines(buf, next, limits, room, |field| {
        sem.apply(&field, rl.version)?;
        on_field(field);
        Ok(())
    })?
    else {
        return Ok(None);
    };

    if rl.version == Version::Http11 && sem.host_header.is_none() {
        return Err(bad("HTTP/1.1 request without Host"));
    }
    if sem.te_present && !sem.te_chunked {
        return Err(bad("final transfer coding is not chunked"));
    }
    if sem.te_other {
        return Err(ParseError {
            status: Status::NOT_IMPLEMENTED,
            reason: "transfer coding other than chunked",
        });
    }
    let body = match sem.content_length {
        Some(n) => BodyFraming::Length(n),
        None if sem.te_chunked => BodyFraming::Chunked,
        // Neither: no body, whatever the method (RFC 9112 §6.3 ¶7), as
        // over HTTP/2; not 411 (`curl -X POST`, a logout or a webhook
        // sent without one).
        None => BodyFraming::None,
    };
    if sem.expect_other {
        return Err(ParseError {
            status: Status::EXPECTATION_FAILED,
            reason: "unsupported Expect",
        });
    }

    let keep_alive = !sem.conn_close && (rl.version == Version::Http11 || sem.conn_keep_alive);
    Ok(Some(RequestHead {
        method,
        method_token: rl.method,
        target: target.target,
        version: rl.version,
        head_len,
        host: target.authority_host.or(sem.host_header),
        body,
        keep_alive,
        // RFC 9110 §10.1.1: a 100-continue from an HTTP/1.0 client is ignored.
        expect_continue: sem.expect_continue && rl.version == Version::Http11,
    }))
}

/// The field line at `pos` and where the next begins, read in one pass,
/// if it is a plain one: complete (CRLF), a token for a name, a colon,
/// and a value of visible bytes, spaces and obs-text only. Nearly every
/// line is; any other (a tab in its value, a fault, a line not all here
/// yet) is `None` and goes the long way ([`find_line_end`], then
/// [`parse_field`]), which tells each case apart. What it accepts, the
/// long way accepts the same (the test
/// `a_plain_field_line_is_read_as_the_long_way_reads_it`).
#[inline(never)]
fn plain_field_line(buf: &[u8], pos: usize) -> Option<(Header<'_>, usize)> {
    let line = buf.get(pos..)?;
    let name_end = line.iter().position(|&b| !is_tchar(b))?;
    if name_end == 0 || line[name_end] != b':' {
        return None;
    }
    let value = &line[name_end + 1..];
    let cr = super::grammar::first_control(value)?;
    if value[cr] != b'\r' || value.get(cr + 1) != Some(&b'\n') {
        return None;
    }
    let field = Header {
        name: &line[..name_end],
        value: trim_ows(&value[..cr]),
    };
    Some((field, pos + name_end + 1 + cr + 2))
}

/// Reads the field lines of a head from `pos` to the empty line that
/// ends it, handing each field to `on_field` (at most `room` of them, and
/// `limits.max_headers`): where the head ends, or `Ok(None)` while it is
/// incomplete and within limits. Request and response heads share it
/// (see [`response`]), so they are read by the same rules.
fn field_lines<'a>(
    buf: &'a [u8],
    mut pos: usize,
    limits: &Limits,
    room: usize,
    mut on_field: impl FnMut(Header<'a>) -> Result<(), ParseError>,
) -> Result<Option<usize>, ParseError> {
    let head_too_large = || too_large("request head too large");
    let mut count = 0;
    let head_len = loop {
        match buf.get(pos) {
            Some(b'\r') | None => match buf.get(pos..pos + 2) {
                Some(b"\r\n") => break pos + 2,
                Some(_) => return Err(bad("bare CR in request head")),
                None if buf.len() > limits.max_head => return Err(head_too_large()),
                None => return Ok(None),
            },
            Some(b'\n') => return Err(bad("bare LF in request head")),
            // RFC 9112 §5.2: obs-fold in a request → 400 (a proxy may
            // refuse it in a response with 502). Whitespace right after
            // the first line would also hide a field name.
            Some(b' ' | b'\t') => return Err(bad("obsolete line folding")),
            Some(_) => {}
        }
        if count >= limits.max_headers || count >= room {
            return Err(too_large("too many header fields"));
        }
        if let Some((field, next)) = plain_field_line(buf, pos) {
            if next - 2 > limits.max_head {
                return Err(head_too_large());
            }
            on_field(field)?;
            count += 1;
            pos = next;
            continue;
        }
        let (end, next) = match find_line_end(buf, pos)? {
            LineEnd::Complete { end, next } => (end, Some(next)),
            LineEnd::Partial { end } => (end, None),
        };
        if end > limits.max_head {
            return Err(head_too_large());
        }
        let field = parse_field(&buf[pos..end], next.is_some())?;
        let (Some(field), Some(next)) = (field, next) else {
            return Ok(None);
        };
        on_field(field)?;
        count += 1;
        pos = next;
    };
    if head_len > limits.max_head {
        return Err(head_too_large());
    }
    Ok(Some(head_len))
}

#[cfg(test)]
mod tests;
