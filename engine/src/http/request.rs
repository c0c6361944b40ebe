//! One request head, owned: its bytes, parsed once, and its path decoded
//! once, when it is made. Whatever routes or answers the request reads it
//! from here, however long the request waits (for its body, a password
//! check, a CGI program): nothing parses the head again, and nothing has
//! to know whether the path was decoded yet. The router records in it
//! who the request authenticated as.
//!
//! A worker fills one `OwnedRequest` again and again (its buffers keep
//! their capacity, so the steady state allocates nothing); a request that
//! has to wait takes it along and leaves an empty one behind.

use super::parse::{self, BodyFraming, Header, Limits, ParseError, RequestHead};
use super::path::{self, PathError};
use super::{Method, Version};
use crate::ascii::IgnoreCase;

/// Where a piece of the head lies in [`OwnedRequest`]'s buffer.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Span {
    start: u32,
    end: u32,
}

impl Span {
    fn len(self) -> usize {
        (self.end - self.start) as usize
    }
}

/// Header fields the server itself reads, found once when the head is
/// parsed (most requests are looked up for several of them: the static
/// handler's conditionals and ranges, the access log's referer).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    /// `Accept-Encoding`.
    AcceptEncoding,
    /// `Authorization`.
    Authorization,
    /// `If-Match`.
    IfMatch,
    /// `If-Modified-Since`.
    IfModifiedSince,
    /// `If-None-Match`.
    IfNoneMatch,
    /// `If-Range`.
    IfRange,
    /// `If-Unmodified-Since`.
    IfUnmodifiedSince,
    /// `Range`.
    Range,
    /// `Referer`.
    Referer,
    /// `Upgrade` (looked at for every request: h2c, a WebSocket).
    Upgrade,
    /// `User-Agent`.
    UserAgent,
}

/// How many [`Field`]s there are.
const FIELDS: usize = 11;

/// How many [`Field`]s are joined when sent on several lines (see
/// [`Field::list`]).
const JOINED: usize = 8;

impl Field {
    /// Where a field whose lines are joined is in
    /// [`OwnedRequest::joined`]: the list fields (`Upgrade` among them,
    /// RFC 9110 §7.8), and the date fields,
    /// `If-Range` and `Range`, which are not lists (see
    /// [`OwnedRequest::field`]).
    #[inline(always)]
    fn list(self) -> Option<usize> {
        match self {
            Field::IfMatch => Some(0),
            Field::IfNoneMatch => Some(1),
            Field::AcceptEncoding => Some(2),
            Field::IfModifiedSince => Some(3),
            Field::IfUnmodifiedSince => Some(4),
            Field::IfRange => Some(5),
            Field::Range => Some(6),
            Field::Upgrade => Some(7),
            _ => None,
        }
    }

    /// The field a name (ASCII case-insensitive) is, if one of these.
    fn of(name: &[u8]) -> Option<Field> {
        // Each field of every request: the standard library's inlined
        // compare, not `IgnoreCase`'s out-of-line loop (crate::ascii).
        let is = |known: &str| name.eq_ignore_ascii_case(known.as_bytes());
        // (Told apart by length first: most names are none of these.)
        let field = match name.len() {
            5 if is("range") => Field::Range,
            7 if is("referer") => Field::Referer,
            7 if is("upgrade") => Field::Upgrade,
            8 if is("if-match") => Field::IfMatch,
            8 if is("if-range") => Field::IfRange,
            10 if is("user-agent") => Field::UserAgent,
            13 if is("if-none-match") => Field::IfNoneMatch,
            13 if is("authorization") => Field::Authorization,
            15 if is("accept-encoding") => Field::AcceptEncoding,
            17 if is("if-modified-since") => Field::IfModifiedSince,
            19 if is("if-unmodified-since") => Field::IfUnmodifiedSince,
            _ => return None,
        };
        Some(field)
    }
}

/// A request head owned by the server: see the module documentation.
#[derive(Debug)]
pub struct OwnedRequest {
    /// The head as received, then any piece the parser made up rather
    /// than found in it (the `/` of `GET http://host HTTP/1.1`).
    bytes: Vec<u8>,
    /// Bytes of the head in `bytes`.
    head_len: usize,
    method: Method,
    method_token: Span,
    target: Span,
    version: Version,
    headers: Vec<(Span, Span)>,
    /// Where each [`Field`] is first in `headers`, plus one (0: absent).
    fields: [u8; FIELDS],
    /// `If-Match`, `If-None-Match`, `Accept-Encoding`,
    /// `If-Modified-Since`, `If-Unmodified-Since`, `If-Range`, `Range` and
    /// `Upgrade` (in that order; see [`Field::list`]) when sent on several lines: their
    /// values joined into one list, as RFC 9110 §5.3 combines them, in
    /// `bytes` after the head.
    joined: [Option<Span>; JOINED],
    host: Option<Span>,
    body: BodyFraming,
    keep_alive: bool,
    expect_continue: bool,
    /// The decoded, normalised path, unless it does not decode.
    path: Vec<u8>,
    path_error: Option<PathError>,
    /// The user an `[[auth]]` rule authenticated (valid when `authed`).
    user: Vec<u8>,
    authed: bool,
    /// The client as trusted proxies named it, if they did.
    forwarded: Option<Forwarded>,
    /// The target as sent, once a `[[rewrite]]` rule replaced it.
    original: Option<Span>,
    /// The site answering it (0: the default site), as the router chose.
    site: usize,
    /// Its `[[rate_limit]]` buckets have counted it (a request routed
    /// again after its password check is not counted twice).
    rate_counted: bool,
}

/// The client of a request as trusted proxies name it (`Forwarded`,
/// `X-Forwarded-For`, `X-Forwarded-Proto`; see `access::proxy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Forwarded {
    /// Its address (port 0 when they did not say).
    pub addr: std::net::SocketAddr,
    /// Whether it spoke HTTPS to them, when they said.
    pub https: Option<bool>,
    /// The trusted proxy that said so (the connection's peer): the hop
    /// a proxied request's `X-Forwarded-For` and `Forwarded` append.
    pub by: std::net::IpAddr,
}

impl Default for OwnedRequest {
    fn default() -> Self {
        OwnedRequest {
            bytes: Vec::new(),
            head_len: 0,
            method: Method::Get,
            method_token: Span::default(),
            target: Span::default(),
            version: Version::Http11,
            headers: Vec::new(),
            fields: [0; FIELDS],
            joined: [None; JOINED],
            host: None,
            body: BodyFraming::None,
            keep_alive: false,
            expect_continue: false,
            path: Vec::new(),
            path_error: None,
            user: Vec::new(),
            authed: false,
            forwarded: None,
            original: None,
            site: 0,
            rate_counted: false,
        }
    }
}

impl OwnedRequest {
    /// Whether it has buffers to parse into (it held a request), not a
    /// new one's empty ones.
    pub fn has_buffers(&self) -> bool {
        self.bytes.capacity() > 0
    }

    /// Bytes its buffers hold room for (the head's and the path's).
    pub fn buffer_bytes(&self) -> usize {
        self.bytes.capacity() + self.path.capacity()
    }

    /// Trades buffers (and what is in them) with `other`, and nothing
    /// else: a request done with gives them to the next without the
    /// rest of it being copied.
    pub fn swap_buffers(&mut self, other: &mut OwnedRequest) {
        std::mem::swap(&mut self.bytes, &mut other.bytes);
        std::mem::swap(&mut self.headers, &mut other.headers);
        std::mem::swap(&mut self.path, &mut other.path);
        std::mem::swap(&mut self.user, &mut other.user);
    }

    /// Parses the request head at the start of `input` into `self`
    /// (whatever it held before is replaced; its buffers are reused).
    ///
    /// `Ok(None)`: the head is not complete yet. `Ok(Some(n))`: the head
    /// took the first `n` bytes of `input`. `Err`: it can never be a
    /// valid head (see [`parse::parse_request`]). Unless it returns
    /// `Ok(Some(_))`, what `self` held is lost.
    pub fn parse(&mut self, input: &[u8], limits: &Limits) -> Result<Option<usize>, ParseError> {
        self.headers.clear();
        self.fields = [0; FIELDS];
        self.joined = [None; JOINED];
        let mut lists = 0u8;
        let base = input.as_ptr() as usize;
        let at = |piece: &[u8]| Span {
            start: (piece.as_ptr() as usize - base) as u32,
            end: (piece.as_ptr() as usize - base + piece.len()) as u32,
        };
        let (headers, fields) = (&mut self.headers, &mut self.fields);
        let mut field = |h: Header<'_>| {
            if let Some(f) = Field::of(h.name) {
                if fields[f as usize] == 0 {
                    // (At most MAX_HEADERS fields: an index fits.)
                    fields[f as usize] = (headers.len() + 1) as u8;
                } else if let Some(i) = Field::list(f) {
                    lists |= 1 << i;
                }
            }
            headers.push((at(h.name), at(h.value)));
        };
        // (The fields read before a head fails or stops point into
        // `input`, not into `bytes`, which still holds the last request's
        // head, or nothing: none of them may be read as this request's.)
        let head = match parse::parse_head(input, limits, MAX_HEADERS, &mut field) {
            Ok(Some(head)) => head,
            Ok(None) => {
                self.headers.clear();
                self.fields = [0; FIELDS];
                return Ok(None);
            }
            Err(e) => {
                // Nor anything of the last request (the log line of this
                // one's 400 or 431 over HTTP/2 and HTTP/3).
                self.forget();
                return Err(e);
            }
        };
        self.fill(input, &head);
        if lists != 0 {
            self.join_lists(lists);
        }
        Ok(Some(head.head_len))
    }

    /// Joins the lines of each field `lists` marks (bit `i`: the field
    /// whose [`Field::list`] is `i`) into one value behind the head, with
    /// `, ` between them (RFC 9110 §5.3).
    fn join_lists(&mut self, lists: u8) {
        for (i, name) in [
            (0, "if-match"),
            (1, "if-none-match"),
            (2, "accept-encoding"),
            (3, "if-modified-since"),
            (4, "if-unmodified-since"),
            (5, "if-range"),
            (6, "range"),
            (7, "upgrade"),
        ] {
            if lists & (1 << i) == 0 {
                continue;
            }
            let start = self.bytes.len();
            for k in 0..self.headers.len() {
                let (n, v) = self.headers[k];
                if !self.get(n).eq_ignore_case(name.as_bytes()) {
                    continue;
                }
                if self.bytes.len() > start {
                    self.bytes.extend_from_slice(b", ");
                }
                self.bytes
                    .extend_from_within(v.start as usize..v.end as usize);
            }
            self.joined[i] = Some(Span {
                start: start as u32,
                end: self.bytes.len() as u32,
            });
        }
    }

    /// Empties the request (a head that failed to parse): no method,
    /// target or field, as a new one; its buffers are kept.
    fn forget(&mut self) {
        let mut bytes = std::mem::take(&mut self.bytes);
        let mut headers = std::mem::take(&mut self.headers);
        let mut path = std::mem::take(&mut self.path);
        let mut user = std::mem::take(&mut self.user);
        bytes.clear();
        headers.clear();
        path.clear();
        user.clear();
        *self = OwnedRequest {
            bytes,
            headers,
            path,
            user,
            ..OwnedRequest::default()
        };
    }

    /// Copies `head`, parsed from the start of `input` (its fields are
    /// in `headers` already).
    fn fill(&mut self, input: &[u8], head: &RequestHead<'_>) {
        self.bytes.clear();
        self.bytes.extend_from_slice(&input[..head.head_len]);
        self.head_len = head.head_len;
        self.method = head.method;
        self.method_token = self.span_in(input, head.method_token);
        self.target = self.span_in(input, &head.target);
        self.version = head.version;
        self.host = head.host.map(|h| self.span_in(input, h));
        self.body = head.body;
        self.keep_alive = head.keep_alive;
        self.expect_continue = head.expect_continue;
        self.user.clear();
        self.authed = false;
        self.forwarded = None;
        self.original = None;
        self.rate_counted = false;
        self.site = 0;
        let target = self.target;
        let (raw_path, _) =
            path::split_target(&self.bytes[target.start as usize..target.end as usize]);
        self.path_error = path::decode_and_normalize(raw_path, &mut self.path).err();
    }

    /// Where `piece` (a slice of the head in `input`, or a piece the
    /// parser made up) lies in `bytes`, the head's copy; a made-up piece
    /// is copied behind the head.
    fn span_in(&mut self, input: &[u8], piece: &[u8]) -> Span {
        let (base, at) = (input.as_ptr() as usize, piece.as_ptr() as usize);
        let start = if at >= base && at + piece.len() <= base + self.head_len {
            at - base
        } else {
            let start = self.bytes.len();
            self.bytes.extend_from_slice(piece);
            start
        };
        Span {
            start: start as u32,
            end: (start + piece.len()) as u32,
        }
    }

    fn get(&self, span: Span) -> &[u8] {
        &self.bytes[span.start as usize..span.end as usize]
    }

    /// The head as received (request line, fields, final CRLF).
    pub fn head(&self) -> &[u8] {
        &self.bytes[..self.head_len]
    }

    /// The method, for dispatch.
    pub fn method(&self) -> Method {
        self.method
    }

    /// The method as sent (for logs and CGI).
    pub fn method_token(&self) -> &[u8] {
        self.get(self.method_token)
    }

    /// The request target in origin-form, as [`parse::Request::target`] says.
    pub fn target(&self) -> &[u8] {
        self.get(self.target)
    }

    /// The target as the client sent it, whatever `[[rewrite]]` rules
    /// made of it since (the access log's and `REQUEST_URI`).
    pub fn original_target(&self) -> &[u8] {
        self.get(self.original.unwrap_or(self.target))
    }

    /// Replaces the target with `target` (an origin-form target a
    /// `[[rewrite]]` rule made, already percent-encoded) and decodes its
    /// path again; [`OwnedRequest::original_target`] keeps the one sent.
    /// Each call keeps the new target behind the head (a request is
    /// rewritten a bounded number of times).
    pub fn rewrite(&mut self, target: &[u8]) {
        if self.original.is_none() {
            self.original = Some(self.target);
        }
        let start = self.bytes.len();
        self.bytes.extend_from_slice(target);
        self.target = Span {
            start: start as u32,
            end: (start + target.len()) as u32,
        };
        let (raw_path, _) = path::split_target(target);
        self.path_error = path::decode_and_normalize(raw_path, &mut self.path).err();
    }

    /// The query of the target (without `?`), if it has one.
    pub fn query(&self) -> Option<&[u8]> {
        path::split_target(self.target()).1
    }

    /// The protocol version.
    pub fn version(&self) -> Version {
        self.version
    }

    /// The header fields, in the order they were sent.
    pub fn headers(&self) -> impl Iterator<Item = Header<'_>> + Clone + '_ {
        self.headers.iter().map(|&(name, value)| Header {
            name: self.get(name),
            value: self.get(value),
        })
    }

    /// The value of `field`: its first line's (a list field sent on
    /// several lines, `If-Match`, `If-None-Match`, `Accept-Encoding` or
    /// `Upgrade`: all of them, joined; an `Upgrade` whose first line is
    /// checked and whose whole list goes on would let a protocol past the
    /// check). `If-Modified-Since`, `If-Unmodified-Since` and
    /// `If-Range` sent on several lines are joined too: they are not
    /// lists, so the value is no HTTP-date nor entity tag, and is ignored
    /// (RFC 9110 §5.3, §13.1.3, §13.1.4) or matches nothing (§13.1.5), as
    /// one line holding two dates is; the first line's date was taken
    /// (a 304, a 412, a range of what may be another version). So is
    /// `Range`, one ranges-specifier (§14.2): `bytes=0-4, bytes=9-` is no
    /// range set and is ignored (the whole representation), where the
    /// first line's range was served and a cache in front that read the
    /// last line would have filed it under another.
    pub fn field(&self, field: Field) -> Option<&[u8]> {
        if let Some(span) = Field::list(field).and_then(|i| self.joined[i]) {
            return Some(self.get(span));
        }
        match self.fields[field as usize] {
            0 => None,
            n => self.headers.get(n as usize - 1).map(|&(_, v)| self.get(v)),
        }
    }

    /// The value of the first header with this name (ASCII case-insensitive).
    pub fn header(&self, name: &str) -> Option<&[u8]> {
        let name = name.as_bytes();
        // (Most fields are told apart by their length alone.)
        self.headers
            .iter()
            .find(|(n, _)| n.len() == name.len() && self.get(*n).eq_ignore_case(name))
            .map(|&(_, value)| self.get(value))
    }

    /// The host, as [`parse::Request::host`] says.
    pub fn host(&self) -> Option<&[u8]> {
        self.host.map(|h| self.get(h))
    }

    /// How the body that follows the head is framed.
    pub fn body(&self) -> BodyFraming {
        self.body
    }

    /// Whether the client lets the connection stay open after this request.
    pub fn keep_alive(&self) -> bool {
        self.keep_alive
    }

    /// Whether the client waits for `100 Continue` before its body.
    pub fn expect_continue(&self) -> bool {
        self.expect_continue
    }

    /// The decoded, normalised path (no `%xx`, no `.` or `..` segments,
    /// no repeated slashes), or why the target's path does not decode.
    pub fn path(&self) -> Result<&[u8], PathError> {
        match self.path_error {
            Some(e) => Err(e),
            None => Ok(&self.path),
        }
    }

    /// The user the request authenticated as, if an `[[auth]]` rule
    /// covered it.
    pub fn user(&self) -> Option<&[u8]> {
        self.authed.then_some(&self.user[..])
    }

    /// Records that the request authenticated as `user`.
    pub fn set_user(&mut self, user: &[u8]) {
        self.user.clear();
        self.user.extend_from_slice(user);
        self.authed = true;
    }

    /// The client as trusted proxies named it, if they did.
    pub fn forwarded(&self) -> Option<Forwarded> {
        self.forwarded
    }

    /// Whether the request has no body (none, or one of length 0).
    pub fn bodiless(&self) -> bool {
        matches!(self.body, BodyFraming::None | BodyFraming::Length(0))
    }

    /// Whether the client spoke HTTPS: as trusted proxies said, else
    /// `over_tls` (whether it came to brisk over TLS or QUIC).
    pub fn https(&self, over_tls: bool) -> bool {
        self.forwarded.and_then(|f| f.https).unwrap_or(over_tls)
    }

    /// The site answering the request (0: the default site; see
    /// `server::sites`), once the router chose it.
    pub fn site(&self) -> usize {
        self.site
    }

    /// Records which site answers the request.
    pub fn set_site(&mut self, site: usize) {
        self.site = site;
    }

    /// Whether its `[[rate_limit]]` buckets counted it already.
    pub fn rate_counted(&self) -> bool {
        self.rate_counted
    }

    /// Records that its `[[rate_limit]]` buckets counted it.
    pub fn set_rate_counted(&mut self) {
        self.rate_counted = true;
    }

    /// Records who trusted proxies say the client is.
    pub fn set_forwarded(&mut self, client: Forwarded) {
        self.forwarded = Some(client);
    }

    /// Makes the request just parsed (from a head `server::h2` wrote for
    /// an HTTP/2 request) an HTTP/2 one: its body is framed by the
    /// protocol (`body`: a length, `Chunked` for one of unknown length,
    /// or none), and the connection's life is not the request's
    /// business. `Expect: 100-continue` stays: a client may wait for an
    /// interim 100 before its DATA (RFC 9113 §8.1), sent when its body is
    /// read (none if it ended its stream).
    pub fn as_http2(&mut self, body: BodyFraming) {
        self.version = Version::Http2;
        self.body = body;
        self.keep_alive = true;
        self.expect_continue &= body != BodyFraming::None;
    }

    /// Makes the request just made HTTP/2 (see [`OwnedRequest::as_http2`])
    /// an HTTP/3 one: the same rules, another name (RFC 9114 §4.2).
    #[cfg(feature = "http3")]
    pub fn as_http3(&mut self) {
        self.version = Version::Http3;
    }

    /// The request a CGI local redirect (RFC 3875 §6.2.2) makes of this
    /// one: `GET target` with the same version and header fields, less
    /// the body's framing (the new request has none); `HEAD target` for
    /// a HEAD, whose answer must stay without a body (RFC 9110 §9.3.2),
    /// as Apache keeps a redirected HEAD header-only. `None` if that
    /// does not parse (a target no request could have).
    pub fn redirected(&self, target: &[u8], limits: &Limits) -> Option<OwnedRequest> {
        let mut head = Vec::with_capacity(self.head_len + target.len());
        head.extend_from_slice(match self.method {
            Method::Head => b"HEAD ",
            _ => b"GET ",
        });
        head.extend_from_slice(target);
        head.push(b' ');
        // (An HTTP/2 request is written as HTTP/1.1, then made HTTP/2 again.)
        let version = match self.version {
            Version::Http2 => Version::Http11,
            #[cfg(feature = "http3")]
            Version::Http3 => Version::Http11,
            v => v,
        };
        head.extend_from_slice(version.as_str().as_bytes());
        head.extend_from_slice(b"\r\n");
        for h in self.headers() {
            if h.name.eq_ignore_case(b"content-length")
                || h.name.eq_ignore_case(b"transfer-encoding")
            {
                continue;
            }
            head.extend_from_slice(h.name);
            head.extend_from_slice(b": ");
            head.extend_from_slice(h.value);
            head.extend_from_slice(b"\r\n");
        }
        head.extend_from_slice(b"\r\n");
        let mut req = OwnedRequest::default();
        match req.parse(&head, limits) {
            Ok(Some(_)) => {
                if self.version == Version::Http2 {
                    req.as_http2(BodyFraming::None);
                }
                #[cfg(feature = "http3")]
                if self.version == Version::Http3 {
                    req.as_http2(BodyFraming::None);
                    req.as_http3();
                }
                // (The same client asks, in the same request: its
                // `[[rate_limit]]` buckets do not count it again, as
                // nginx's limit_req counts a request once whatever its
                // internal redirects.)
                req.forwarded = self.forwarded;
                req.rate_counted = self.rate_counted;

                Some(req)
            }
            _ => None,
        }
    }
}

/// Most header fields a request may have (the parser's storage is on the
/// stack); `limits.max_headers` may only lower it.
pub const MAX_HEADERS: usize = 128;

/// Header fields a head usually has at most: where fields are gathered
/// into a slice, an array this long on the stack holds them, and only a
/// head with more fills one of [`MAX_HEADERS`] (4 KiB, whose writing
/// cost ~700 instructions a request when done every time).
pub const FEW_HEADERS: usize = 16;

#[cfg(test)]
mod tests {
    use super::*;

    const LIMITS: Limits = Limits {
        max_request_line: 8192,
        max_head: 8192,
        max_headers: 100,
    };

    fn parsed(input: &[u8]) -> OwnedRequest {
        let mut r = OwnedRequest::default();
        assert!(r.parse(input, &LIMITS).unwrap().is_some());
        r
    }

    #[test]
    fn the_head_is_parsed_once_and_kept() {
        let input = b"POST /a%20b/../c?x=1 HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\nX-A:  1 \r\nx-a: 2\r\n\r\nabcGET";
        let mut r = OwnedRequest::default();
        let n = r.parse(input, &LIMITS).unwrap().unwrap();
        assert_eq!(&input[n..], b"abcGET");
        assert_eq!(r.head(), &input[..n]);
        assert_eq!(r.method(), Method::Post);
        assert_eq!(r.method_token(), b"POST");
        assert_eq!(r.target(), b"/a%20b/../c?x=1");
        assert_eq!(r.query(), Some(&b"x=1"[..]));
        assert_eq!(r.path(), Ok(&b"/c"[..]));
        assert_eq!(r.header("x-a"), Some(&b"1"[..]));
        assert_eq!(r.field(Field::Range), None);
        assert_eq!(r.headers().count(), 4);
        assert_eq!(r.host(), Some(&b"h"[..]));
        assert_eq!(r.body(), BodyFraming::Length(3));
        assert!(r.keep_alive() && !r.expect_continue());
        assert_eq!(r.user(), None);
        r.set_user(b"ann");
        assert_eq!(r.user(), Some(&b"ann"[..]));

        // The next request reuses the buffers and forgets the user.
        assert_eq!(r.parse(b"GET / HTTP/1.0\r\n", &LIMITS), Ok(None));
        assert_eq!(
            r.method(),
            Method::Post,
            "an incomplete head changes nothing"
        );
        r.parse(b"GET /%7e/ HTTP/1.0\r\n\r\n", &LIMITS).unwrap();
        assert_eq!(r.path(), Ok(&b"/~/"[..]));
        assert_eq!((r.version(), r.keep_alive()), (Version::Http10, false));
        assert_eq!(r.user(), None);
        assert_eq!(r.headers().count(), 0);

        // A head that fails leaves nothing of the last one, nor of its
        // own fields (they were read from its input, not kept).
        r.parse(
            b"GET /secret HTTP/1.1\r\nHost: h\r\nReferer: /a\r\n\r\n",
            &LIMITS,
        )
        .unwrap();
        let failed = b"GET / HTTP/1.1\r\nHost: h\r\nUser-Agent: a-long-agent\r\nX-A: a\x01\r\n\r\n";
        assert!(r.parse(failed, &LIMITS).is_err());
        assert_eq!((r.method_token(), r.target()), (&b""[..], &b""[..]));
        assert_eq!(r.field(Field::UserAgent), None);
        assert_eq!(r.field(Field::Referer), None);
        assert_eq!(r.headers().count(), 0);
    }

    #[test]
    fn a_request_done_with_gives_its_buffers_to_the_next() {
        let mut held = parsed(b"GET /a HTTP/1.1\r\nHost: h\r\nX-A: 1\r\n\r\n");
        let (bytes, headers) = (held.bytes.capacity(), held.headers.capacity());
        let mut next = OwnedRequest::default();
        assert!(!next.has_buffers());
        next.swap_buffers(&mut held);
        assert!(next.has_buffers() && !held.has_buffers());
        assert_eq!(
            (next.bytes.capacity(), next.headers.capacity()),
            (bytes, headers)
        );
        next.parse(b"GET /b HTTP/1.1\r\nHost: h\r\n\r\n", &LIMITS)
            .unwrap();
        assert_eq!((next.path(), next.headers().count()), (Ok(&b"/b"[..]), 1));
    }

    #[test]
    fn if_match_and_if_none_match_on_several_lines_are_one_list() {
        // RFC 9110 §5.3: the lines of a list field are one list (and
        // Range's are joined the same way, see the next test).
        let mut r = parsed(
            b"GET / HTTP/1.1\r\nHost: x\r\nIf-None-Match: \"a\"\r\nRange: bytes=1-\r\nif-none-match: \"b\", \"c\"\r\nIf-Match: *\r\nRange: bytes=2-\r\n\r\n",
        );
        assert_eq!(
            r.field(Field::IfNoneMatch),
            Some(&b"\"a\", \"b\", \"c\""[..])
        );
        assert_eq!(r.field(Field::IfMatch), Some(&b"*"[..]));
        assert_eq!(r.field(Field::Range), Some(&b"bytes=1-, bytes=2-"[..]));
        assert_eq!(r.headers().count(), 6, "the lines themselves stay as sent");
        // The next request forgets the joined list.
        r.parse(
            b"GET / HTTP/1.1\r\nHost: x\r\nIf-None-Match: \"z\"\r\n\r\n",
            &LIMITS,
        )
        .unwrap();
        assert_eq!(r.field(Field::IfNoneMatch), Some(&b"\"z\""[..]));
        // So are Upgrade's (RFC 9110 §7.8).
        let r =
            parsed(b"GET / HTTP/1.1\r\nHost: x\r\nUpgrade: foo\r\nupgrade: websocket, bar\r\n\r\n");
        assert_eq!(r.field(Field::Upgrade), Some(&b"foo, websocket, bar"[..]));
    }

    #[test]
    fn date_fields_if_range_and_range_on_several_lines_are_joined() {
        // Not lists: joined, their value is no date (RFC 9110 §5.3), and
        // is ignored, where the first line's date was taken.
        let r = parsed(
            b"GET / HTTP/1.1\r\nHost: x\r\nIf-Modified-Since: a\r\nIf-Unmodified-Since: c\r\nif-modified-since: b\r\nIf-Range: d\r\nIf-Range: e\r\nif-unmodified-since: f\r\n\r\n",
        );
        assert_eq!(r.field(Field::IfModifiedSince), Some(&b"a, b"[..]));
        assert_eq!(r.field(Field::IfUnmodifiedSince), Some(&b"c, f"[..]));
        assert_eq!(r.field(Field::IfRange), Some(&b"d, e"[..]));
        // Nor is Range: joined, it is no range set (§14.2).
        let r = parsed(b"GET / HTTP/1.1\r\nHost: x\r\nRange: bytes=0-4\r\nrange: bytes=9-\r\n\r\n");
        assert_eq!(r.field(Field::Range), Some(&b"bytes=0-4, bytes=9-"[..]));
    }

    #[test]
    fn the_fields_the_server_reads_are_found_once() {
        let r = parsed(
            b"GET / HTTP/1.1\r\nHost: x\r\nrange: bytes=1-\r\nIF-NONE-MATCH: \"a\"\r\nRange: bytes=2-\r\nReferer: r\r\nupGRADE: h2c\r\nUser-Agent: u\r\nIf-Range: \"b\"\r\nIf-Match: *\r\nAuthorization: Basic x\r\nAccept-Encoding: gzip\r\nIf-Modified-Since: m\r\nIf-Unmodified-Since: n\r\n\r\n",
        );
        let fields = [
            (Field::Range, "bytes=1-, bytes=2-"),
            (Field::IfNoneMatch, "\"a\""),
            (Field::Referer, "r"),
            (Field::Upgrade, "h2c"),
            (Field::UserAgent, "u"),
            (Field::IfRange, "\"b\""),
            (Field::IfMatch, "*"),
            (Field::Authorization, "Basic x"),
            (Field::AcceptEncoding, "gzip"),
            (Field::IfModifiedSince, "m"),
            (Field::IfUnmodifiedSince, "n"),
        ];
        for (field, value) in fields {
            assert_eq!(r.field(field), Some(value.as_bytes()), "{field:?}");
        }
        assert_eq!(r.header("range"), Some(&b"bytes=1-"[..]), "the first one");
        let r = parsed(b"GET / HTTP/1.1\r\nHost: x\r\nX-Range: y\r\n\r\n");
        assert_eq!(r.field(Field::Range), None);
    }

    #[test]
    fn pieces_the_parser_makes_up_are_kept_too() {
        let r = parsed(b"GET http://example.org HTTP/1.1\r\nHost: x\r\n\r\n");
        assert_eq!(r.target(), b"/");
        assert_eq!(r.host(), Some(&b"example.org"[..]));
        assert_eq!(r.head().len(), 44);
    }

    #[test]
    fn a_path_that_does_not_decode_says_why() {
        let r = parsed(b"GET /../x HTTP/1.1\r\nHost: x\r\n\r\n");
        assert_eq!(r.path().map_err(|e| e.status.0), Err(400));
        assert_eq!(r.target(), b"/../x");
    }

    #[test]
    fn a_local_redirect_is_a_get_without_a_body() {
        let r =
            parsed(b"POST /form HTTP/1.0\r\nHost: h\r\nContent-Length: 2\r\nCookie: c=1\r\n\r\n");
        let g = r.redirected(b"/next?q=%41", &LIMITS).unwrap();
        assert_eq!(
            g.head(),
            b"GET /next?q=%41 HTTP/1.0\r\nHost: h\r\nCookie: c=1\r\n\r\n"
        );
        assert_eq!(g.body(), BodyFraming::None);
        assert_eq!(g.path(), Ok(&b"/next"[..]));
        assert!(r.redirected(b"/a b", &LIMITS).is_none());
    }

    #[test]
    fn a_local_redirect_of_a_head_stays_a_head() {
        let r = parsed(b"HEAD /cgi HTTP/1.1\r\nHost: h\r\n\r\n");
        let g = r.redirected(b"/file.txt", &LIMITS).unwrap();
        assert_eq!(g.head(), b"HEAD /file.txt HTTP/1.1\r\nHost: h\r\n\r\n");
        assert_eq!(g.method(), Method::Head);
    }
}
