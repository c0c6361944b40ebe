//! The environment a CGI script runs with (RFC 3875 §4.1).
//!
//! It is built from scratch: nothing of the server's own environment
//! leaks through except what is listed here. Besides the RFC's variables
//! it has the ones scripts commonly expect from Apache and nginx
//! (`REQUEST_URI`, `SCRIPT_FILENAME`, `DOCUMENT_ROOT`, `REMOTE_PORT`,
//! `SERVER_ADDR`, `REDIRECT_STATUS`, `REQUEST_SCHEME`; over TLS `HTTPS=on`
//! and mod_ssl's `SSL_PROTOCOL` and `SSL_CIPHER`), and
//! `PATH=/usr/local/bin:/usr/bin:/bin` so that `#!/usr/bin/env perl`
//! finds its interpreter.

use crate::ascii::IgnoreCase;
use std::ffi::CString;
use std::net::SocketAddr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use super::resolve::Script;
use super::runner::Ends;
use crate::handlers::spool::Spool;
use crate::http::parse::{BodyFraming, Header};
use crate::http::request::OwnedRequest;
use crate::http::{push_ip, push_u64, TlsSession};

/// `PATH` for scripts unless the rule's `env` sets its own.
pub const DEFAULT_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// `SERVER_SOFTWARE` (RFC 3875 §4.1.17).
pub const SERVER_SOFTWARE: &str = concat!("brisk/", env!("CARGO_PKG_VERSION"));

/// What the environment needs to know about the request and connection.
#[derive(Debug, Clone, Copy)]
pub struct EnvRequest<'a> {
    /// The method as sent (`REQUEST_METHOD`).
    pub method: &'a [u8],
    /// The request target as sent, query included (`REQUEST_URI`).
    pub raw_target: &'a [u8],
    /// The query without its `?`, still percent-encoded; empty if none
    /// (`QUERY_STRING`, RFC 3875 §4.1.7).
    pub query: &'a [u8],
    /// `HTTP/1.1` or `HTTP/1.0` (`SERVER_PROTOCOL`).
    pub version: &'a str,
    /// The request's header fields, in the order sent.
    pub headers: &'a [Header<'a>],
    /// The client's address (`REMOTE_ADDR`, `REMOTE_PORT`).
    pub remote: SocketAddr,
    /// The address the request came in on (`SERVER_ADDR`, `SERVER_PORT`).
    pub local: SocketAddr,
    /// What TLS negotiated, if the request came over TLS (`HTTPS`,
    /// `SSL_PROTOCOL`, `SSL_CIPHER`; `REQUEST_SCHEME`).
    pub tls: Option<TlsSession>,
    /// The Host without its port, or the local IP (`SERVER_NAME`).
    pub server_name: &'a [u8],
    /// The document root (`DOCUMENT_ROOT`, and the base of `PATH_TRANSLATED`).
    pub document_root: &'a Path,
    /// Length of the body the script will read on stdin. `None` when
    /// there is no body, or when its length is unknown (a chunked request
    /// the server decodes as it streams): `CONTENT_LENGTH` is then unset.
    pub content_length: Option<u64>,
    /// The authenticated user (`REMOTE_USER`), if any.
    pub remote_user: Option<&'a [u8]>,
    /// The authentication scheme (`AUTH_TYPE`, e.g. `Basic`), if any.
    pub auth_type: Option<&'a [u8]>,
    /// Whether the client spoke HTTPS to the trusted proxy in front, when
    /// it says (`X-Forwarded-Proto`, `Forwarded: proto=`): it decides
    /// `HTTPS` and `REQUEST_SCHEME` over the connection's own.
    pub forwarded_https: Option<bool>,
    /// `Authorization` goes as `HTTP_AUTHORIZATION`: a FastCGI
    /// application's (PHP derives `PHP_AUTH_USER` from it, as behind
    /// nginx), not a CGI script's.
    pub authorization: bool,
}

/// Request headers never passed as `HTTP_*`: the two with variables of
/// their own (RFC 3875 §4.1.2, §4.1.3); credentials, which Apache does not
/// hand to scripts either; and `Proxy`, which would become `HTTP_PROXY`
/// and steer a script's outgoing requests ("httpoxy").
const SKIPPED_HEADERS: &[&[u8]] = &[
    b"content-length",
    b"content-type",
    b"authorization",
    b"proxy-authorization",
    b"proxy",
];

/// The names a script's variables give it: `SCRIPT_NAME`,
/// `SCRIPT_FILENAME`, `PATH_INFO` (a CGI [`Script`]'s, or a FastCGI
/// one's).
#[derive(Debug, Clone, Copy)]
pub struct Names<'a> {
    /// The script's URL path (`SCRIPT_NAME`).
    pub name: &'a [u8],
    /// Its absolute path (`SCRIPT_FILENAME`).
    pub filename: &'a Path,
    /// The rest of the URL path after it, or empty (`PATH_INFO`).
    pub path_info: &'a [u8],
}

impl<'a> Names<'a> {
    /// Those of a CGI script.
    pub fn of(script: &'a Script) -> Names<'a> {
        Names {
            name: &script.script_name,
            filename: &script.script_filename,
            path_info: &script.path_info,
        }
    }
}

/// A script's variables ([`vars`]): each `NAME=value` in one buffer, so
/// that building them allocates twice, not twice a variable.
#[derive(Debug)]
pub struct Vars {
    buf: Vec<u8>,
    /// Where each variable is in `buf`: its start, where its name ends
    /// (at the `=`), and its end; in the order set. One replaced by a
    /// later one of the same name is none.
    at: Vec<Option<(usize, usize, usize)>>,
}

impl Vars {
    /// The name of entry `(start, eq, _)`.
    fn name_at(&self, (start, eq, _): (usize, usize, usize)) -> &[u8] {
        &self.buf[start..eq]
    }

    /// Where the live variable `name` is, looking from entry `from` on.
    fn find(&self, name: &[u8], from: usize) -> Option<usize> {
        (from..self.at.len()).find(|&i| self.at[i].is_some_and(|e| self.name_at(e) == name))
    }

    /// Starts a variable `name`: its value is written into `buf` next,
    /// then [`Vars::end`] ends it.
    fn start(&mut self, name: &[u8]) -> (usize, usize) {
        let start = self.buf.len();
        self.buf.extend_from_slice(name);
        let eq = self.buf.len();
        self.buf.push(b'=');
        (start, eq)
    }

    /// Ends the variable [`Vars::start`] started.
    fn end(&mut self, (start, eq): (usize, usize)) {
        self.at.push(Some((start, eq, self.buf.len())));
    }

    /// Adds `name` (none of that name is set yet).
    fn add(&mut self, name: &[u8], value: &[u8]) {
        let at = self.start(name);
        self.buf.extend_from_slice(value);
        self.end(at);
    }

    /// Adds `name` with a value written by `value`.
    fn add_with(&mut self, name: &[u8], value: impl FnOnce(&mut Vec<u8>)) {
        let at = self.start(name);
        value(&mut self.buf);
        self.end(at);
    }

    /// Sets `name`, replacing any set from entry `from` on; with `sep`,
    /// joins `value` to the value it had (`a, b`) instead.
    fn set(&mut self, name: &[u8], value: &[u8], from: usize, sep: Option<&[u8]>) {
        let old = self.find(name, from);
        let at = self.start(name);
        if let (Some(i), Some(sep)) = (old, sep) {
            let (_, eq, end) = self.at[i].expect("a live variable");
            self.buf.extend_from_within(eq + 1..end);
            self.buf.extend_from_slice(sep);
        }
        self.buf.extend_from_slice(value);
        self.end(at);
        if let Some(i) = old {
            self.at[i] = None;
        }
    }

    /// How many bytes they hold, with an `=` each (about what PARAMS
    /// records of them take).
    pub fn bytes(&self) -> usize {
        self.buf.len()
    }

    /// Name and value of each variable.
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], &[u8])> {
        self.at
            .iter()
            .flatten()
            .map(|&(start, eq, end)| (&self.buf[start..eq], &self.buf[eq + 1..end]))
    }

    /// Each variable as `NAME=value`.
    pub fn entries(&self) -> impl Iterator<Item = &[u8]> {
        self.at
            .iter()
            .flatten()
            .map(|&(start, _, end)| &self.buf[start..end])
    }
}

/// The environment for `script`: `NAME=value` entries (see [`vars`]),
/// but for any that would hold a NUL byte, which no environment can.
pub fn build_env(
    script: &Script,
    req: &EnvRequest<'_>,
    extra: &[(String, String)],
) -> Vec<CString> {
    let vars = vars(Names::of(script), req, extra);
    let entries = vars.entries().filter_map(|e| CString::new(e).ok());
    entries.collect()
}

/// The variables of the script `names` name.
///
/// Variables that do not apply are unset rather than empty: `AUTH_TYPE`,
/// `REMOTE_USER`, `CONTENT_LENGTH`, `CONTENT_TYPE`, and `PATH_INFO` /
/// `PATH_TRANSLATED` when there is no path info. `QUERY_STRING` is always
/// set (RFC 3875 §4.1.7). Each request header becomes `HTTP_NAME`
/// (upper case, `-` → `_`; RFC 3875 §4.1.18), repeated headers joined with
/// `, ` (`; ` for `Cookie`, RFC 6265 §5.4). Headers whose names hold
/// anything but letters, digits and `-` are dropped: with `_` allowed,
/// `X-User` and `X_User` would both claim `HTTP_X_USER` and a client could
/// forge the one a proxy in front set. `extra` (the rule's `env`) comes
/// last and overrides anything, `PATH` included. They stay in the order
/// set: neither an environment nor FastCGI's PARAMS has an order.
///
/// None holds a NUL byte unless `names`, `req` or `extra` do: a parsed
/// request's fields and target, a decoded path, a configured `env` and a
/// configured root (canonical) hold none. An environment would drop such
/// a variable ([`build_env`]); a FastCGI parameter may hold one.
pub fn vars(names: Names<'_>, req: &EnvRequest<'_>, extra: &[(String, String)]) -> Vars {
    let headers: usize = req
        .headers
        .iter()
        .map(|h| h.name.len() + h.value.len() + 8)
        .sum();
    let mut v = Vars {
        buf: Vec::with_capacity(768 + headers + req.raw_target.len() * 2),
        at: Vec::with_capacity(32 + req.headers.len() + extra.len()),
    };
    // (Each name below is set once: added without looking for it.)
    v.add(b"PATH", DEFAULT_PATH.as_bytes());
    v.add(b"GATEWAY_INTERFACE", b"CGI/1.1");
    v.add(b"SERVER_SOFTWARE", SERVER_SOFTWARE.as_bytes());
    v.add(b"SERVER_PROTOCOL", req.version.as_bytes());
    v.add(b"SERVER_NAME", req.server_name);
    let local = req.local;
    v.add_with(b"SERVER_ADDR", |b| push_ip(b, local.ip()));
    v.add_with(b"SERVER_PORT", |b| push_u64(b, local.port().into()));
    // Apache's (and nginx's fastcgi_params) names: scripts build their
    // own URLs from REQUEST_SCHEME, and test HTTPS=on.
    // Behind a trusted proxy the scheme is the client's, as it says.
    if req.forwarded_https.unwrap_or(req.tls.is_some()) {
        v.add(b"REQUEST_SCHEME", b"https");
        v.add(b"HTTPS", b"on");
    } else {
        v.add(b"REQUEST_SCHEME", b"http");
    }
    if let Some(tls) = &req.tls {
        v.add(b"SSL_PROTOCOL", tls.protocol.as_bytes());
        v.add(b"SSL_CIPHER", tls.cipher.as_bytes());
    }
    // No DNS lookups: REMOTE_HOST may be the address (RFC 3875 §4.1.9).
    let remote = req.remote;
    for name in [&b"REMOTE_ADDR"[..], b"REMOTE_HOST"] {
        v.add_with(name, |b| push_ip(b, remote.ip()));
    }
    v.add_with(b"REMOTE_PORT", |b| push_u64(b, remote.port().into()));
    v.add(b"REQUEST_METHOD", req.method);
    v.add(b"REQUEST_URI", req.raw_target);
    v.add(b"QUERY_STRING", req.query);
    v.add(b"SCRIPT_NAME", names.name);
    v.add(b"SCRIPT_FILENAME", names.filename.as_os_str().as_bytes());
    let root = req.document_root.as_os_str().as_bytes();
    v.add(b"DOCUMENT_ROOT", root);
    // PHP's cgi.force_redirect refuses to run without it.
    v.add(b"REDIRECT_STATUS", b"200");
    if !names.path_info.is_empty() {
        v.add(b"PATH_INFO", names.path_info);
        // The path info mapped onto the document root, as if it were a
        // URL path of its own (RFC 3875 §4.1.6).
        v.add_with(b"PATH_TRANSLATED", |b| {
            b.extend_from_slice(root.strip_suffix(b"/").unwrap_or(root));
            b.extend_from_slice(names.path_info);
        });
    }
    if let Some(n) = req.content_length {
        v.add_with(b"CONTENT_LENGTH", |b| push_u64(b, n));
    }
    if let Some(t) = req.auth_type {
        v.add(b"AUTH_TYPE", t);
    }
    if let Some(u) = req.remote_user {
        v.add(b"REMOTE_USER", u);
    }
    let first_header = v.at.len();
    let mut content_type = None;
    // (Room for most names: `HTTP_` and the field's.)
    let mut name = Vec::with_capacity(64);
    for h in req.headers {
        if h.name.eq_ignore_case(b"content-type") && content_type.is_none() {
            content_type = Some(h.value);
        }
        let passed = req.authorization && h.name.eq_ignore_case(b"authorization");
        if !passed && SKIPPED_HEADERS.iter().any(|s| h.name.eq_ignore_case(s))
            || !h
                .name
                .iter()
                .all(|&b| b.is_ascii_alphanumeric() || b == b'-')
        {
            continue;
        }
        name.clear();
        name.extend_from_slice(b"HTTP_");
        name.extend(h.name.iter().map(|&b| match b {
            b'-' => b'_',
            _ => b.to_ascii_uppercase(),
        }));
        let sep: &[u8] = if h.name.eq_ignore_case(b"cookie") {
            b"; "
        } else {
            b", "
        };
        // (Only another header's can have its name.)
        v.set(&name, h.value, first_header, Some(sep));
    }
    if let Some(t) = content_type {
        v.add(b"CONTENT_TYPE", t);
    }
    for (name, value) in extra {
        v.set(name.as_bytes(), value.as_bytes(), 0, None);
    }
    v
}

/// `CONTENT_LENGTH` for a request framed `framing` whose body is `held`
/// whole, if it is: set whenever there is a body (RFC 3875 §4.1.2; a
/// chunked one is held until its length is known).
pub fn content_length(held: Option<&Spool>, framing: BodyFraming) -> Option<u64> {
    match (held, framing) {
        (Some(body), _) => Some(body.len()),
        (None, BodyFraming::Length(n)) => Some(n),
        (None, _) => None,
    }
}

/// The environment for `script` run for `req`, which came from `ends`
/// ([`build_env`]): `document_root` is `DOCUMENT_ROOT`, `content_length`
/// the body's length if it has one, `extra` the rule's `env`.
pub fn request_env(
    script: &Script,
    req: &OwnedRequest,
    ends: Ends,
    document_root: &Path,
    content_length: Option<u64>,
    extra: &[(String, String)],
) -> Vec<CString> {
    let vars = request_vars(
        Names::of(script),
        req,
        ends,
        document_root,
        content_length,
        extra,
        false,
    );
    let entries = vars.entries().filter_map(|e| CString::new(e).ok());
    entries.collect()
}

/// The variables ([`vars`]) of the script `names` name run for `req`, as
/// [`request_env`] has them; with `HTTP_AUTHORIZATION` if `authorization`.
pub fn request_vars(
    names: Names<'_>,
    req: &OwnedRequest,
    ends: Ends,
    document_root: &Path,
    content_length: Option<u64>,
    extra: &[(String, String)],
    authorization: bool,
) -> Vars {
    let server_name = crate::http::host_without_port(req.host().unwrap_or_default());
    let local_ip;
    let server_name: &[u8] = if server_name.is_empty() {
        local_ip = ends.local.ip().to_string();
        local_ip.as_bytes()
    } else {
        server_name
    };
    let headers: Vec<Header> = req.headers().collect();
    let env_req = EnvRequest {
        method: req.method_token(),
        raw_target: req.original_target(),
        query: req.query().unwrap_or_default(),
        version: req.version().as_str(),
        headers: &headers,
        remote: ends.remote,
        local: ends.local,
        tls: ends.tls,
        server_name,
        document_root,
        content_length,
        remote_user: req.user(),
        auth_type: req.user().map(|_| &b"Basic"[..]),
        forwarded_https: req.forwarded().and_then(|f| f.https),
        authorization,
    };
    vars(names, &env_req, extra)
}
