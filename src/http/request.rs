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

use super::parse::{self, BodyFraming, Header, Limits, ParseError, Request};
use super::path::{self, PathError};
use super::{Method, Version};

/// Where a piece of the head lies in [`OwnedRequest`]'s buffer.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Span {
    start: u32,
    end: u32,
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
            host: None,
            body: BodyFraming::None,
            keep_alive: false,
            expect_continue: false,
            path: Vec::new(),
            path_error: None,
            user: Vec::new(),
            authed: false,
        }
    }
}

impl OwnedRequest {
    /// Parses the request head at the start of `input` into `self`
    /// (whatever it held before is replaced; its buffers are reused).
    ///
    /// `Ok(None)`: the head is not complete yet, `self` is unchanged.
    /// `Ok(Some(n))`: the head took the first `n` bytes of `input`.
    /// `Err`: it can never be a valid head (see [`parse::parse_request`]).
    pub fn parse(&mut self, input: &[u8], limits: &Limits) -> Result<Option<usize>, ParseError> {
        let mut storage = [Header::EMPTY; MAX_HEADERS];
        let Some(req) = parse::parse_request(input, limits, &mut storage)? else {
            return Ok(None);
        };
        self.fill(input, &req);
        Ok(Some(req.head_len))
    }

    /// Copies `req`, parsed from the start of `input`.
    fn fill(&mut self, input: &[u8], req: &Request<'_>) {
        self.bytes.clear();
        self.bytes.extend_from_slice(&input[..req.head_len]);
        self.head_len = req.head_len;
        self.method = req.method;
        self.method_token = self.span(req.method_token);
        self.target = self.span(req.target);
        self.version = req.version;
        self.headers.clear();
        for h in req.headers {
            let field = (self.span(h.name), self.span(h.value));
            self.headers.push(field);
        }
        self.host = req.host.map(|h| self.span(h));
        self.body = req.body;
        self.keep_alive = req.keep_alive;
        self.expect_continue = req.expect_continue;
        self.user.clear();
        self.authed = false;
        let target = self.target;
        let (raw_path, _) =
            path::split_target(&self.bytes[target.start as usize..target.end as usize]);
        self.path_error = path::decode_and_normalize(raw_path, &mut self.path).err();
    }

    /// Where `piece` (a slice of the head in `bytes`, or a piece the
    /// parser made up) lies; a made-up piece is copied behind the head.
    fn span(&mut self, piece: &[u8]) -> Span {
        let head = &self.bytes[..self.head_len];
        let (base, at) = (head.as_ptr() as usize, piece.as_ptr() as usize);
        let start = if at >= base && at + piece.len() <= base + head.len() {
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

    /// The request target in origin-form, as [`Request::target`] says.
    pub fn target(&self) -> &[u8] {
        self.get(self.target)
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
    pub fn headers(&self) -> impl Iterator<Item = Header<'_>> + '_ {
        self.headers.iter().map(|&(name, value)| Header {
            name: self.get(name),
            value: self.get(value),
        })
    }

    /// The value of the first header with this name (ASCII case-insensitive).
    pub fn header(&self, name: &str) -> Option<&[u8]> {
        self.headers()
            .find(|h| h.name.eq_ignore_ascii_case(name.as_bytes()))
            .map(|h| h.value)
    }

    /// The host, as [`Request::host`] says.
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

    /// The request a CGI local redirect (RFC 3875 §6.2.2) makes of this
    /// one: `GET target` with the same version and header fields, less
    /// the body's framing (the new request has none). `None` if that
    /// does not parse (a target no request could have).
    pub fn redirected(&self, target: &[u8], limits: &Limits) -> Option<OwnedRequest> {
        let mut head = Vec::with_capacity(self.head_len + target.len());
        head.extend_from_slice(b"GET ");
        head.extend_from_slice(target);
        head.push(b' ');
        head.extend_from_slice(self.version.as_str().as_bytes());
        head.extend_from_slice(b"\r\n");
        for h in self.headers() {
            if h.name.eq_ignore_ascii_case(b"content-length")
                || h.name.eq_ignore_ascii_case(b"transfer-encoding")
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
            Ok(Some(_)) => Some(req),
            _ => None,
        }
    }
}

/// Most header fields a request may have (the parser's storage is on the
/// stack); `limits.max_headers` may only lower it.
pub const MAX_HEADERS: usize = 128;

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
}
