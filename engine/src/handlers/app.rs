//! Embedded handlers: code of the program that embeds brisk, mounted at a
//! path prefix with [`crate::server::Server::mount`].
//!
//! A handler gets the whole request, its body already read (and
//! de-chunked, within `limits.max_body`; a worker holds at most
//! `limits.handler_bodies` of such bodies at once, and answers 503 to the
//! request that would go beyond), and fills in a [`Response`]:
//! a status, header lines and a body. brisk adds what it always adds
//! (`Server`, `Date`, `Content-Length`, `Connection`), leaves the body out
//! for HEAD and for 204/304, applies `[[headers]]` rules, basic
//! authentication and keep-alive as for any other answer, and logs it.
//!
//! Handlers run on the worker thread that owns the connection, like an
//! nginx module's content handler: they must answer quickly and never
//! block (a slow one holds up every other connection of that worker).
//! Slow work goes to a thread of the handler's own, which answers later
//! ([`Response::defer`]); a large body can be produced in pieces as the
//! client takes them ([`Response::stream`]) or be a file the engine sends
//! with `sendfile` ([`Response::send_file`]). A handler that panics gets
//! the client a 500 and the error log a line; the worker goes on.
//!
//! Handlers are mounted by the embedding program at a path
//! ([`crate::server::Server::mount`]), or registered by name
//! ([`crate::server::Server::register`]) and mounted by the
//! configuration's `[[handlers]]` entries, each of which gets its own
//! copy of the handler, initialised with the entry's `config` table
//! ([`Handler::init`]).

use crate::ascii::IgnoreCase;
use std::fs::File;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use super::stream::{Awaited, BodyStream, Channel, Later, Wake};
use super::Scratch;
use crate::config::{Level, Value, FRAMING_HEADERS};
use crate::http::grammar;
use crate::http::parse::{find_header, Header};

/// Code that answers requests under a path prefix.
pub trait Handler: Send + Sync {
    /// Answers `req` by filling in `resp` (initially 200 with no headers
    /// and an empty body).
    fn handle(&self, req: &Request<'_>, resp: &mut Response<'_>);

    /// Prepares a copy of a registered handler for the `[[handlers]]`
    /// entry that mounts it, before it serves (at start, and again on
    /// each reload): the Gerbil httpd's `handler-init!`. An error stops
    /// the start (or refuses the reload) with the entry's file, line and
    /// key. Handlers mounted in code are not initialised.
    fn init(&mut self, init: &Init<'_>) -> Result<(), String> {
        let _ = init;
        Ok(())
    }
}

/// What a named handler is initialised with.
#[derive(Debug, Clone, Copy)]
pub struct Init<'a> {
    /// The entry's `config` table (empty without one).
    pub config: &'a Value,
    /// The path it is mounted at.
    pub path: &'a str,
    /// The document root.
    pub root: &'a Path,
}

/// Plain functions and closures are handlers.
impl<F> Handler for F
where
    F: Fn(&Request<'_>, &mut Response<'_>) + Send + Sync,
{
    fn handle(&self, req: &Request<'_>, resp: &mut Response<'_>) {
        self(req, resp)
    }
}

/// A request as a handler sees it.
#[derive(Debug)]
pub struct Request<'a> {
    /// The method as sent (`GET`, `POST`, …).
    pub method: &'a [u8],
    /// The decoded, normalised path (`/api/items/7`): no `.` or `..`
    /// segments, no `%xx` escapes, no repeated slashes.
    pub path: &'a [u8],
    /// The path below the mount prefix (`items/7` under `/api/`).
    pub rest: &'a [u8],
    /// The query string as sent (without the `?`), if any.
    pub query: Option<&'a [u8]>,
    /// The request target as sent (`/api/items/7?x=1`).
    pub target: &'a [u8],
    /// The header fields in the order they were sent.
    pub headers: &'a [Header<'a>],
    /// The request body, de-chunked (empty without one).
    pub body: &'a [u8],
    /// The client's address.
    pub peer: SocketAddr,
    /// The user an `[[auth]]` rule authenticated, if one applied.
    pub user: Option<&'a [u8]>,
}

impl<'a> Request<'a> {
    /// The value of the first header with this name (ASCII case-insensitive).
    pub fn header(&self, name: &str) -> Option<&'a [u8]> {
        find_header(self.headers, name)
    }
}

/// Why [`Response::header`] refused a header line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidHeader(pub String);

impl std::fmt::Display for InvalidHeader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for InvalidHeader {}

/// Fields of the connection, not of the answer (RFC 9110 §7.6.1, RFC
/// 9112 §7, RFC 9113 §8.2.2) that a handler might set besides
/// `Connection` and `Transfer-Encoding` (brisk's, see
/// [`FRAMING_HEADERS`]): brisk manages the connection, and drops a CGI
/// program's (`cgi::head::DROPPED`). Set by a handler, they went out as
/// set over HTTP/1.1 (a `Keep-Alive` or `Upgrade` that said what the
/// connection was not) while HTTP/2 and HTTP/3 dropped them. (Not
/// among `[[headers]]`'s refused fields: configurations setting them
/// load.)
const CONNECTION_FIELDS: &[&str] = &["keep-alive", "proxy-connection", "te", "trailer", "upgrade"];

/// Checks a header line a handler wants to send: the name must be an
/// HTTP token and the value free of control characters other than tab
/// (so no line breaks: nothing can be smuggled into the head);
/// `Content-Length`, `Transfer-Encoding`, `Connection`, `Date` and
/// `Server` are brisk's to write, and `Keep-Alive`, `Proxy-Connection`,
/// `TE`, `Trailer` and `Upgrade` belong to the connection, which brisk
/// manages.
pub fn check_header(name: &str, value: &str) -> Result<(), InvalidHeader> {
    check_header_bytes(name.as_bytes(), value.as_bytes())
}

/// [`check_header`] for bytes (a valid name is ASCII, so text).
pub fn check_header_bytes(name: &[u8], value: &[u8]) -> Result<(), InvalidHeader> {
    let text = || String::from_utf8_lossy(name);
    if !grammar::is_token(name) {
        return Err(InvalidHeader(format!(
            "{:?} is not a valid header name",
            text()
        )));
    }
    let mut own = FRAMING_HEADERS.iter().chain(&["server"]);
    if own.any(|r| name.eq_ignore_case(r.as_bytes())) {
        return Err(InvalidHeader(format!(
            "{} is written by the server",
            text()
        )));
    }
    if CONNECTION_FIELDS
        .iter()
        .any(|r| name.eq_ignore_case(r.as_bytes()))
    {
        return Err(InvalidHeader(format!(
            "{} belongs to the connection, which the server manages",
            text()
        )));
    }
    if !grammar::is_field_value(value) {
        return Err(InvalidHeader(format!(
            "the value of {} holds a control character",
            text()
        )));
    }
    Ok(())
}

/// The length of `file`, if the engine can send it whole as a body: a
/// regular file it can read. (Else the failure would come once the head
/// is out, and cut the answer short: over HTTP/2 and HTTP/3, with its
/// whole connection.)
pub(crate) fn sendable(file: &File) -> std::io::Result<u64> {
    use std::os::unix::fs::FileExt as _;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "not a regular file",
        ));
    }
    if meta.len() > 0 {
        // (At an offset: the file's position does not move.)
        file.read_at(&mut [0], 0)?;
    }
    Ok(meta.len())
}

/// Where a handler's answer body comes from, when it is not the bytes
/// written into the [`Response`].
pub enum Answer {
    /// The bytes written (the usual case).
    Bytes,
    /// A whole file, sent with `sendfile` when large.
    File(File, u64),
    /// Pieces produced as the client takes them, of this length if known.
    Stream(Box<dyn BodyStream>, Option<u64>),
    /// Given later, by another thread.
    Later(Awaited),
}

impl std::fmt::Debug for Answer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Answer::Bytes => "Bytes",
            Answer::File(..) => "File",
            Answer::Stream(..) => "Stream",
            Answer::Later(_) => "Later",
        })
    }
}

/// What a handler answers; brisk's per-thread buffers back it, so a
/// steady stream of answers allocates nothing.
#[derive(Debug)]
pub struct Response<'a> {
    status: u16,
    scratch: &'a mut Scratch,
    answer: Answer,
    /// How a later answer wakes the worker (`None` where none can be
    /// given: a unit test's response).
    wake: Option<Wake>,
    /// Lines for the error log (see [`Response::log`]).
    logs: Vec<(Level, String)>,
    /// The answer is brisk's own error page (see [`Response::own_error`]).
    own_error: bool,
}

impl<'a> Response<'a> {
    /// A 200 with no header lines and an empty body, written into
    /// `scratch` (cleared first).
    pub(crate) fn new(scratch: &'a mut Scratch) -> Response<'a> {
        scratch.headers.clear();
        scratch.body.clear();
        Response {
            status: 200,
            scratch,
            answer: Answer::Bytes,
            wake: None,
            logs: Vec::new(),
            own_error: false,
        }
    }

    /// [`Response::new`] for a request whose answer may be given later,
    /// waking the worker through `wake`.
    pub(crate) fn wakeable(scratch: &'a mut Scratch, wake: Wake) -> Response<'a> {
        let mut r = Response::new(scratch);
        r.wake = Some(wake);
        r
    }

    /// Has `message` written to the worker's error log at `level` (after
    /// the handler returns, with the handler's path in front).
    pub fn log(&mut self, level: Level, message: String) {
        self.logs.push((level, message));
    }

    /// The lines given to [`Response::log`], taken out.
    pub(crate) fn take_logs(&mut self) -> Vec<(Level, String)> {
        std::mem::take(&mut self.logs)
    }

    /// Replaces the header lines with `lines` (`Name: value\r\n` each,
    /// checked already). (Only servlets use it.)
    #[cfg_attr(not(feature = "servlets"), allow(dead_code))]
    pub(crate) fn raw_headers(&mut self, lines: &[u8]) {
        self.scratch.headers.clear();
        self.scratch.headers.extend_from_slice(lines);
    }

    /// What the body is, taken out (the bytes are in the scratch buffer).
    pub(crate) fn take_answer(&mut self) -> Answer {
        std::mem::replace(&mut self.answer, Answer::Bytes)
    }

    /// Answers with the whole of `file` (from its start to its current
    /// size), sent by `sendfile` when large, with its `Content-Length`.
    /// Set its `Content-Type` yourself. An error (and the answer is left
    /// as it was) when its size cannot be read, when it is not a regular
    /// file (a directory, a device, a pipe) or cannot be read (opened
    /// for writing only).
    pub fn send_file(&mut self, file: File) -> std::io::Result<()> {
        let len = sendable(&file)?;
        self.answer = Answer::File(file, len);
        Ok(())
    }

    /// Answers with a body produced in pieces on this thread as the
    /// client takes them (see [`BodyStream`]); `length`, if known, is
    /// sent as its `Content-Length` (else chunked for HTTP/1.1). The
    /// status and header lines are those set on this response.
    pub fn stream(&mut self, body: impl BodyStream + 'static, length: Option<u64>) {
        self.answer = Answer::Stream(Box::new(body), length);
    }

    /// Answers later, from any thread, through the [`Later`] returned:
    /// the handler returns at once and the worker goes on with its other
    /// connections. Header lines set on this response (and `[[headers]]`
    /// rules) are sent with the later answer; its status and body are
    /// the later answer's. `None` where the request cannot wait (no
    /// worker to wake: a response made outside a server).
    pub fn defer(&mut self) -> Option<Later> {
        let wake = self.wake.clone()?;
        let channel = Arc::new(Channel::default());
        // (An answer replaced, a deferred one included, is dropped: its
        // thread learns that it is not wanted.)
        self.answer = Answer::Later(Awaited::new(Arc::clone(&channel)));
        Some(Later::new(channel, wake))
    }

    /// Sets the status code. Final codes only (200–599); anything else
    /// is answered as a 500 and logged.
    pub fn set_status(&mut self, code: u16) {
        self.status = code;
    }

    /// Marks the answer, an error status with brisk's built-in page
    /// (written by the handler all the same), as brisk's own error
    /// rather than the handler's: a servlet file not found, servlets
    /// stopped or failing. The site's `[errors]` page for that status
    /// replaces it, as for every error brisk answers itself.
    #[cfg(feature = "servlets")]
    pub(crate) fn own_error(&mut self) {
        self.own_error = true;
    }

    /// Whether the answer is brisk's own error (see
    /// [`Response::own_error`]).
    pub(crate) fn is_own_error(&self) -> bool {
        self.own_error
    }

    /// The status code so far.
    pub fn status(&self) -> u16 {
        self.status
    }

    /// Adds a header line. The name must be an HTTP token and the value
    /// free of control characters other than tab (so no line breaks:
    /// nothing can be smuggled into the head); `Content-Length`,
    /// `Transfer-Encoding`, `Connection`, `Date` and `Server` are brisk's
    /// to write, and `Keep-Alive`, `Proxy-Connection`, `TE`, `Trailer`
    /// and `Upgrade` belong to the connection, which brisk manages.
    pub fn header(&mut self, name: &str, value: &str) -> Result<(), InvalidHeader> {
        check_header(name, value)?;
        self.scratch.header(name, value.trim().as_bytes());
        Ok(())
    }

    /// The body so far, to write into (`Vec<u8>` is `std::io::Write`).
    pub fn body(&mut self) -> &mut Vec<u8> {
        &mut self.scratch.body
    }

    /// Appends `bytes` to the body.
    pub fn write(&mut self, bytes: &[u8]) {
        self.scratch.body.extend_from_slice(bytes);
    }
}

/// A handler and the path prefix it answers under.
#[derive(Clone)]
pub struct Mount {
    /// Starts and ends with `/` (`/api/`), or is one exact path (`/status`).
    pub prefix: Vec<u8>,
    /// What answers there.
    pub handler: std::sync::Arc<dyn Handler>,
    /// Only paths ending so (`.lua` for servlets); others go on to CGI
    /// and static files.
    suffix: Option<&'static [u8]>,
}

impl std::fmt::Debug for Mount {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mount")
            .field("prefix", &String::from_utf8_lossy(&self.prefix))
            .finish_non_exhaustive()
    }
}

impl Mount {
    /// A mount at `prefix`: a path that ends in `/` takes everything below
    /// it (`/api/` answers `/api/` and `/api/x/y`), any other exactly that
    /// path (`/status`). It must be a normalised absolute path, as the
    /// paths it is compared with are.
    pub fn new(prefix: &str, handler: std::sync::Arc<dyn Handler>) -> Result<Mount, super::Error> {
        let mut norm = Vec::new();
        let ok = prefix.starts_with('/')
            && crate::http::path::decode_and_normalize(prefix.as_bytes(), &mut norm).is_ok()
            && norm == prefix.as_bytes();
        if !ok {
            return Err(super::Error::MountPrefix(prefix.to_string()));
        }
        Ok(Mount {
            prefix: norm,
            handler,
            suffix: None,
        })
    }

    /// This mount, for paths that end in `suffix` only.
    pub fn only_ending(mut self, suffix: &'static [u8]) -> Mount {
        self.suffix = Some(suffix);
        self
    }

    /// The part of `path` below this mount, if it is under it.
    pub fn rest<'p>(&self, path: &'p [u8]) -> Option<&'p [u8]> {
        if self.suffix.is_some_and(|s| !path.ends_with(s)) {
            return None;
        }
        if self.prefix.ends_with(b"/") {
            path.strip_prefix(&self.prefix[..])
        } else {
            (path == &self.prefix[..]).then_some(&path[path.len()..])
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn noop() -> Arc<dyn Handler> {
        Arc::new(|_: &Request<'_>, _: &mut Response<'_>| {})
    }

    #[test]
    fn prefixes_and_exact_paths() {
        let dir = Mount::new("/api/", noop()).unwrap();
        assert_eq!(dir.rest(b"/api/"), Some(&b""[..]));
        assert_eq!(dir.rest(b"/api/x/y"), Some(&b"x/y"[..]));
        assert_eq!(dir.rest(b"/api"), None);
        assert_eq!(dir.rest(b"/apix/"), None);
        let one = Mount::new("/status", noop()).unwrap();
        assert_eq!(one.rest(b"/status"), Some(&b""[..]));
        assert_eq!(one.rest(b"/status/"), None);
        assert_eq!(one.rest(b"/statusx"), None);
        for bad in ["api/", "/a/../b/", "/a//b", "/%61/", ""] {
            assert!(Mount::new(bad, noop()).is_err(), "{bad}");
        }
    }

    #[test]
    fn header_lines_cannot_break_the_head() {
        let mut scratch = Scratch::default();
        let mut r = Response::new(&mut scratch);
        assert!(r.header("X-Ok", "fine\tvalue").is_ok());
        assert!(r.header("X-Bad", "a\r\nSet-Cookie: x=1").is_err());
        assert!(r.header("X-Bad", "a\nb").is_err());
        assert!(r.header("X Bad", "a").is_err());
        assert!(r.header("", "a").is_err());
        assert!(r.header("content-length", "5").is_err());
        assert!(r.header("Connection", "close").is_err());
        assert_eq!(scratch.headers, b"X-Ok: fine\tvalue\r\n");
    }
}
