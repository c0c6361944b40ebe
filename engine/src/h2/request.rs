//! A request's header block, decoded and checked as RFC 9113 §8.2 and
//! §8.3 require: lower-case names, pseudo-header fields first, each
//! once, only the four a request may have (and `:protocol` with
//! CONNECT, RFC 8441 §4), no connection-specific
//! fields, `te` only as `trailers`; and counted against the header list
//! size (§6.5.2), past which fields are no longer kept and the request
//! is answered 431 instead.

use crate::http::grammar::{is_tchar, parse_u64};

/// Where a name or value lies in [`Request`]'s buffer.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Span {
    start: u32,
    end: u32,
}

/// A decoded request header block (or a trailer block).
#[derive(Debug, Default)]
pub struct Request {
    buf: Vec<u8>,
    fields: Vec<(Span, Span)>,
    method: Option<Span>,
    scheme: Option<Span>,
    authority: Option<Span>,
    path: Option<Span>,
    /// `:protocol` (an extended CONNECT, RFC 8441).
    protocol: Option<Span>,
    /// The list's size so far (§6.5.2: name, value and 32 bytes a field).
    size: usize,
    max_size: usize,
    too_large: bool,
    /// Why the block is malformed (a stream error), once found.
    malformed: Option<&'static str>,
    trailers: bool,
    content_length: Option<u64>,
}

impl Request {
    /// A request with nothing in it, and no memory.
    pub const EMPTY: Request = Request {
        buf: Vec::new(),
        fields: Vec::new(),
        method: None,
        scheme: None,
        authority: None,
        path: None,
        protocol: None,
        size: 0,
        max_size: 0,
        too_large: false,
        malformed: None,
        trailers: false,
        content_length: None,
    };

    /// Empties the request for the next block (a trailer block with
    /// `trailers`), keeping its buffers; at most `max_size` is kept.
    pub fn clear(&mut self, max_size: usize, trailers: bool) {
        self.buf.clear();
        self.fields.clear();
        self.method = None;
        self.scheme = None;
        self.authority = None;
        self.path = None;
        self.protocol = None;
        self.size = 0;
        self.max_size = max_size;
        self.too_large = false;
        self.malformed = None;
        self.trailers = trailers;
        self.content_length = None;
    }

    fn span(&mut self, bytes: &[u8]) -> Span {
        let start = self.buf.len() as u32;
        self.buf.extend_from_slice(bytes);
        Span {
            start,
            end: self.buf.len() as u32,
        }
    }

    fn get(&self, s: Span) -> &[u8] {
        &self.buf[s.start as usize..s.end as usize]
    }

    /// Takes one decoded field.
    pub fn field(&mut self, name: &[u8], value: &[u8]) {
        self.size += name.len() + value.len() + 32;
        if self.size > self.max_size {
            self.too_large = true;
        }
        if self.malformed.is_some() {
            return;
        }
        if let Some(why) = self.check(name, value) {
            self.malformed = Some(why);
            return;
        }
        if self.too_large {
            return;
        }
        if let Some(pseudo) = name.strip_prefix(b":") {
            let span = Some(self.span(value));
            match pseudo {
                b"method" => self.method = span,
                b"scheme" => self.scheme = span,
                b"authority" => self.authority = span,
                b"protocol" => self.protocol = span,
                _ => self.path = span,
            }
            return;
        }
        let n = self.span(name);
        let v = self.span(value);
        self.fields.push((n, v));
    }

    /// Why the field makes the request malformed, if it does.
    fn check(&mut self, name: &[u8], value: &[u8]) -> Option<&'static str> {
        // §8.2.1: no NUL, CR or LF anywhere; no whitespace at either end.
        if value.iter().any(|&b| b == 0 || b == b'\r' || b == b'\n') {
            return Some("CR, LF or NUL in a field value");
        }
        if matches!(value.first(), Some(b' ' | b'\t')) || matches!(value.last(), Some(b' ' | b'\t'))
        {
            return Some("whitespace around a field value");
        }
        if let Some(pseudo) = name.strip_prefix(b":") {
            if self.trailers {
                return Some("pseudo-header field in trailers");
            }
            if !self.fields.is_empty() {
                return Some("pseudo-header field after a regular one");
            }
            let slot = match pseudo {
                b"method" => self.method,
                b"scheme" => self.scheme,
                b"authority" => self.authority,
                b"path" => self.path,
                b"protocol" => self.protocol,
                _ => return Some("unknown pseudo-header field"),
            };
            if slot.is_some() {
                return Some("repeated pseudo-header field");
            }
            if pseudo == b"path" && value.is_empty() {
                return Some("empty :path");
            }
            return None;
        }
        if name.is_empty() || !name.iter().all(|&b| is_tchar(b) && !b.is_ascii_uppercase()) {
            return Some("field name not a lower-case token");
        }
        match name {
            b"connection" | b"keep-alive" | b"proxy-connection" | b"transfer-encoding"
            | b"upgrade" => Some("connection-specific field"),
            b"te" if value != b"trailers" => Some("te other than trailers"),
            b"content-length" => match (parse_u64(value), self.content_length) {
                (None, _) => Some("content-length not a number"),
                (Some(n), Some(m)) if m != n => Some("differing content-length values"),
                (Some(n), _) => {
                    self.content_length = Some(n);
                    None
                }
            },
            _ => None,
        }
    }

    /// Once the block is complete: why it is malformed (a stream error,
    /// PROTOCOL_ERROR), if it is.
    pub fn finish(&mut self) -> Option<&'static str> {
        if self.malformed.is_some() || self.trailers || self.too_large {
            return self.malformed;
        }
        let Some(method) = self.method else {
            return Some("no :method");
        };
        if self.authority.is_some_and(|a| a.start == a.end) {
            // An authority without a host: every request form with one
            // (http and https URIs, RFC 9110 §4.2.1; CONNECT's host and
            // port) must name it. §8.3.1 wants no :authority at all for
            // a target without one (RFC 9114 §4.3.1: not empty either).
            return Some("an empty :authority");
        }
        let connect = self.get(method) == b"CONNECT";
        if self.protocol.is_some() {
            // RFC 8441 §4: an extended CONNECT has all four others.
            if !connect || self.authority.is_none() || self.scheme.is_none() || self.path.is_none()
            {
                return Some("malformed extended CONNECT");
            }
            if !web_scheme(self.scheme()) {
                return Some("a :scheme other than http or https");
            }
            return None;
        }
        if connect {
            // §8.5: CONNECT has :authority and neither :scheme nor :path.
            if self.authority.is_none() || self.scheme.is_some() || self.path.is_some() {
                return Some("malformed CONNECT");
            }
            return None;
        }
        if self.scheme.is_none() || self.path.is_none() {
            return Some("no :scheme or :path");
        }
        if !web_scheme(self.scheme()) {
            return Some("a :scheme other than http or https");
        }
        None
    }

    /// Whether the list outgrew the header list size (answer 431).
    pub fn too_large(&self) -> bool {
        self.too_large
    }

    /// Marks it over the size, unread (an HTTP/3 HEADERS frame too large
    /// to read: see `h3::frame::Event::TooLarge`).
    #[cfg(feature = "http3")]
    pub fn set_too_large(&mut self) {
        self.too_large = true;
    }

    /// `:method`.
    pub fn method(&self) -> &[u8] {
        self.method.map_or(&[][..], |s| self.get(s))
    }

    /// `:scheme`.
    pub fn scheme(&self) -> &[u8] {
        self.scheme.map_or(&[][..], |s| self.get(s))
    }

    /// `:authority`, if sent.
    pub fn authority(&self) -> Option<&[u8]> {
        self.authority.map(|s| self.get(s))
    }

    /// `:path`.
    pub fn path(&self) -> &[u8] {
        self.path.map_or(&[][..], |s| self.get(s))
    }

    /// `:protocol`, if sent (an extended CONNECT: RFC 8441).
    pub fn protocol(&self) -> Option<&[u8]> {
        self.protocol.map(|s| self.get(s))
    }

    /// `content-length`, if sent.
    pub fn content_length(&self) -> Option<u64> {
        self.content_length
    }

    /// The regular fields, in order.
    pub fn fields(&self) -> impl Iterator<Item = (&[u8], &[u8])> + '_ {
        self.fields.iter().map(|&(n, v)| (self.get(n), self.get(v)))
    }
}

/// Whether `scheme` is one brisk serves, `http` or `https` (RFC 3986
/// §3.1: in any case): a request for any other is malformed (RFC 9113
/// §8.3.1, RFC 9114 §4.3.1: brisk is no proxy that could serve it).
fn web_scheme(scheme: &[u8]) -> bool {
    scheme.eq_ignore_ascii_case(b"http") || scheme.eq_ignore_ascii_case(b"https")
}
