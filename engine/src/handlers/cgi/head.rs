//! The header block a CGI script prints before its body (RFC 3875 §6).
//!
//! Scripts end lines with LF as often as with CRLF, so both are accepted;
//! what is passed on to the client is always CRLF. Anything a client could
//! be confused by — a folded line, a bare CR, a control byte, a name that
//! is not a token — makes the whole reply invalid (the server answers
//! 502), rather than being passed on or silently repaired.

use crate::ascii::IgnoreCase;
use crate::http::grammar::{find_byte, has_token, is_field_value, is_ows, is_tchar, trim_ows};

/// What kind of reply the script gave (RFC 3875 §6.2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CgiReply {
    /// A document: the body follows the header block (§6.2.1).
    Document,
    /// `Location: /path?query` and nothing else: the server serves that
    /// path instead, as a new GET, and the script's body is discarded
    /// (§6.2.2). Holds the location as sent.
    LocalRedirect(Vec<u8>),
    /// A redirect for the client to follow: `Location` is among
    /// [`CgiHead::headers`] and [`CgiHead::status`] is a 3xx (302 unless
    /// the script said otherwise) (§6.2.3, §6.2.4).
    ClientRedirect,
}

/// A parsed CGI header block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CgiHead {
    /// Bytes of the input taken by the block, including the empty line;
    /// the body starts here.
    pub head_len: usize,
    /// The response status: from `Status`, else 302 for a client
    /// redirect, else 200.
    pub status: u16,
    /// The reason phrase from `Status`, if one was given.
    pub reason: Option<Vec<u8>>,
    /// Document or redirect.
    pub kind: CgiReply,
    /// The header lines to send, `Name: value\r\n` each, in the script's
    /// order: everything but `Status`, `Content-Length`, and the headers
    /// the server owns (see [`DROPPED`]).
    pub headers: Vec<u8>,
    /// The script's `Content-Length`, if it sent one. The server frames
    /// the body itself, so the header is not among [`CgiHead::headers`].
    pub content_length: Option<u64>,
}

/// Headers a script may send but the server owns: framing and connection
/// management (hop-by-hop, RFC 9110 §7.6.1), `Date` and `Server`. They are
/// dropped, not passed on: a script cannot know how the server frames the
/// body or whether the connection stays open.
pub const DROPPED: &[&str] = &[
    "connection",
    "keep-alive",
    "proxy-connection",
    "transfer-encoding",
    "te",
    "trailer",
    "upgrade",
    "date",
    "server",
];

/// Whether a `Connection` line among `lines` names the field `name`: a
/// field of the hop too (RFC 9110 §7.6.1), dropped with it, as the
/// reverse proxy drops an upstream's.
#[inline(never)]
fn named_by_connection(lines: Lines<'_>, name: &[u8]) -> bool {
    lines
        .filter_map(|l| field(l).ok())
        .any(|(n, value)| n.eq_ignore_case(b"connection") && has_token(value, name))
}

/// Parses the header block at the start of `buf`.
///
/// `Ok(None)`: the block is not complete yet (read more). `Err`: the
/// output is not a valid CGI response, or the block is longer than `max`
/// bytes; the reason is for the error log. On success the body (if any)
/// starts at [`CgiHead::head_len`].
pub fn parse_head(buf: &[u8], max: usize) -> Result<Option<CgiHead>, &'static str> {
    parse_head_in(buf, max, false, Vec::new)
}

/// As [`parse_head`], `ended` when the output ended at `buf`'s end (a
/// document with no `Content-Type` is then whole if nothing followed its
/// head), the fields passed on written in the buffer `spare` gives
/// (empty; asked once the block is complete).
pub fn parse_head_in(
    buf: &[u8],
    max: usize,
    ended: bool,
    spare: impl FnOnce() -> Vec<u8>,
) -> Result<Option<CgiHead>, &'static str> {
    let Some(head_len) = head_len(buf, max)? else {
        return Ok(None);
    };
    let lines = Lines::of(buf);

    let mut status: Option<(u16, Option<Vec<u8>>)> = None;
    let mut location: Option<&[u8]> = None;
    let mut content_type = false;
    let mut content_length: Option<u64> = None;
    // (A line passed on grows by two bytes at most, its `: ` and its
    // CRLF, and took three at least: twice the block is room enough.)
    let mut headers = spare();
    headers.reserve(2 * head_len);
    // Header lines passed on other than Location and Content-Type, which
    // decide whether a local redirect is allowed (§6.2.2).
    let mut others = 0;
    let connection = lines
        .clone()
        .any(|l| l.len() > 10 && l[..10].eq_ignore_case(b"connection"));
    for line in lines.clone() {
        let (name, value) = field(line)?;
        if name.eq_ignore_case(b"status") {
            if status.is_some() {
                return Err("CGI Status header repeated");
            }
            status = Some(parse_status(value)?);
            continue;
        }
        if name.eq_ignore_case(b"content-length") {
            let n = parse_length(value)?;
            if content_length.is_some_and(|m| m != n) {
                return Err("CGI Content-Length headers disagree");
            }
            content_length = Some(n);
            continue;
        }
        if DROPPED.iter().any(|d| name.eq_ignore_case(d.as_bytes()))
            || connection && named_by_connection(lines.clone(), name)
        {
            continue;
        }
        if name.eq_ignore_case(b"location") {
            if location.is_some() {
                return Err("CGI Location header repeated");
            }
            if value.is_empty() {
                return Err("CGI Location header empty");
            }
            location = Some(value);
        } else if name.eq_ignore_case(b"content-type") {
            if content_type {
                return Err("CGI Content-Type header repeated");
            }
            content_type = true;
            others += 1;
        } else {
            others += 1;
        }
        headers.extend_from_slice(name);
        headers.extend_from_slice(b": ");
        headers.extend_from_slice(value);
        headers.extend_from_slice(b"\r\n");
    }

    let explicit_status = status.is_some();
    let (mut code, reason) = status.unwrap_or((200, None));
    let kind = match location {
        Some(loc) if loc[0] == b'/' => {
            // §6.2.2: a local redirect is `Location` alone; with a Status
            // or other headers the script meant the client to see it.
            if !explicit_status && others == 0 && content_length.unwrap_or(0) == 0 {
                return Ok(Some(CgiHead {
                    head_len,
                    status: 200,
                    reason: None,
                    kind: CgiReply::LocalRedirect(loc.to_vec()),
                    headers: Vec::new(),
                    content_length,
                }));
            }
            redirect_kind(&mut code, explicit_status)
        }
        Some(loc) if is_absolute_uri(loc) => redirect_kind(&mut code, explicit_status),
        Some(_) => return Err("CGI Location is neither an absolute URI nor a local path"),
        None => CgiReply::Document,
    };
    // RFC 9110 §15.3.6: a 205 has no content, and says so (over
    // HTTP/1.1, with Content-Length: 0): what a program writes after
    // its head is cut there, with the error line of any output past
    // its length.
    if code == 205 {
        content_length = Some(0);
    }
    // §6.3.1: "If an entity body is returned, the script MUST supply a
    // Content-Type". A reply that cannot carry a body, or says it has
    // none, needs none; nor does one whose output ends with its head
    // (git-http-backend's 403 and 404: a Status and cache fields), which
    // is known once the output ended: until then, more is read.
    let bodiless = code < 200 || code == 204 || code == 304 || content_length == Some(0);
    if kind == CgiReply::Document && !content_type && !bodiless {
        if buf.len() > head_len {
            return Err("CGI document without Content-Type");
        }
        if !ended {
            return Ok(None);
        }
        content_length = Some(0);
    }
    Ok(Some(CgiHead {
        head_len,
        status: code,
        reason,
        kind,
        headers,
        content_length,
    }))
}

/// The lines of a header block (without their ends, LF or CRLF), up to
/// its empty line: [`head_len`] found that it has one.
#[derive(Debug, Clone)]
pub(super) struct Lines<'a>(&'a [u8]);

impl<'a> Lines<'a> {
    /// Those of the block at the start of `buf`.
    pub(super) fn of(buf: &'a [u8]) -> Lines<'a> {
        Lines(buf)
    }
}

impl<'a> Iterator for Lines<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        let n = find_byte(self.0, b'\n')?;
        let line = &self.0[..n];
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        self.0 = if line.is_empty() {
            &[]
        } else {
            &self.0[n + 1..]
        };
        (!line.is_empty()).then_some(line)
    }
}

/// The length of the header block at the start of `buf` (LF or CRLF
/// ended lines), its empty line included; `None` while it is
/// incomplete; an error past `max` bytes.
pub(super) fn head_len(buf: &[u8], max: usize) -> Result<Option<usize>, &'static str> {
    const LONG: &str = "CGI header block larger than limits.cgi_header_bytes";
    let mut pos = 0;
    loop {
        let Some(n) = find_byte(&buf[pos..], b'\n') else {
            return if buf.len() > max { Err(LONG) } else { Ok(None) };
        };
        let end = pos + n + 1;
        if end > max {
            return Err(LONG);
        }
        if n == 0 || n == 1 && buf[pos] == b'\r' {
            return Ok(Some(end));
        }
        pos = end;
    }
}

/// A client redirect is a 3xx; with another explicit status (say 201
/// Created and a Location) the reply is a document that has a Location.
fn redirect_kind(code: &mut u16, explicit: bool) -> CgiReply {
    if !explicit {
        *code = 302;
    }
    if (300..400).contains(code) {
        CgiReply::ClientRedirect
    } else {
        CgiReply::Document
    }
}

/// Splits `Name: value`, checking both. Values keep obs-text (bytes ≥ 0x80)
/// but no control bytes other than tab.
pub(super) fn field(line: &[u8]) -> Result<(&[u8], &[u8]), &'static str> {
    if is_ows(line[0]) {
        return Err("CGI header line folded (obs-fold)");
    }
    // (The name's end and its check in one walk.)
    let colon = line
        .iter()
        .position(|&b| !is_tchar(b))
        .unwrap_or(line.len());
    if line.get(colon) != Some(&b':') {
        return Err(if line.contains(&b':') {
            "CGI header name is not a token"
        } else {
            "CGI header line without a colon"
        });
    }
    let name = &line[..colon];
    if name.is_empty() {
        return Err("CGI header name is not a token");
    }
    let value = trim_ows(&line[colon + 1..]);
    if !is_field_value(value) {
        return Err("CGI header value holds a control character");
    }
    Ok((name, value))
}

/// `Status: 404 Not Found` (RFC 3875 §6.3.3): three digits, then an
/// optional reason. Only final statuses: a 1xx from a script would leave
/// the client waiting for a response that never comes.
pub(super) fn parse_status(value: &[u8]) -> Result<(u16, Option<Vec<u8>>), &'static str> {
    const BAD: &str = "CGI Status is not a 3-digit code from 200 to 599";
    let (digits, rest) = value.split_at(value.len().min(3));
    if digits.len() != 3 || !digits.iter().all(u8::is_ascii_digit) {
        return Err(BAD);
    }
    if rest.first().is_some_and(|&b| !is_ows(b)) {
        return Err(BAD);
    }
    let code = digits
        .iter()
        .fold(0u16, |n, &d| n * 10 + u16::from(d - b'0'));
    if !(200..=599).contains(&code) {
        return Err(BAD);
    }
    let reason = trim_ows(rest);
    Ok((code, (!reason.is_empty()).then(|| reason.to_vec())))
}

pub(super) fn parse_length(value: &[u8]) -> Result<u64, &'static str> {
    const BAD: &str = "CGI Content-Length is not a number";
    if value.is_empty() || value.len() > 19 || !value.iter().all(u8::is_ascii_digit) {
        return Err(BAD);
    }
    std::str::from_utf8(value)
        .ok()
        .and_then(|s| s.parse().ok())
        .ok_or(BAD)
}

/// `scheme ":" …` with a scheme per RFC 3986 §3.1 (`http:`, `https:`,
/// `mailto:`…): what RFC 3875 §6.2.3 calls an absolute URI.
fn is_absolute_uri(v: &[u8]) -> bool {
    let Some(colon) = v.iter().position(|&b| b == b':') else {
        return false;
    };
    let scheme = &v[..colon];
    scheme.first().is_some_and(u8::is_ascii_alphabetic)
        && scheme
            .iter()
            .all(|&b| b.is_ascii_alphanumeric() || b"+-.".contains(&b))
}
