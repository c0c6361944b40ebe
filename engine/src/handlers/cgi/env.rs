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
use crate::http::{ip_text, u64_digits, TlsSession};

/// `PATH` for scripts unless the rule's `env` sets its own.
pub const DEFAULT_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// `SERVER_SOFTWARE` (RFC 3875 §4.1.17).
pub const SERVER_SOFTWARE: &str = concat!("brisk/", env!("CARGO_PKG_VERSION"));

/// A slice's header fields, as [`EnvRequest`] takes them by default (it
/// takes any iterator over fields that can go over them again: a parsed
/// request's too).
pub type SliceHeaders<'a> = std::iter::Copied<std::slice::Iter<'a, Header<'a>>>;

/// What the environment needs to know about the request and connection.
#[derive(Debug, Clone)]
pub struct EnvRequest<'a, H = SliceHeaders<'a>> {
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
    pub headers: H,
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

/// Where [`vars`] puts a script's variables, as it finds them: each name
/// once, its final value (no buffer in between: a FastCGI request's go
/// straight into PARAMS records).
pub trait VarSink {
    /// The variables go to a FastCGI application, not to a program brisk
    /// starts: `Authorization` goes as `HTTP_AUTHORIZATION` (PHP derives
    /// `PHP_AUTH_USER` from it, as behind nginx), and brisk's `PATH`
    /// stays out (only a program brisk starts looks for others with it;
    /// the rule's `env` may still set one).
    const APPLICATION: bool;

    /// Takes variable `name` with `value`.
    fn var(&mut self, name: &[u8], value: &[u8]);
}

/// An environment: each variable as a `NAME=value` entry, but for any
/// that would hold a NUL byte, which no environment can.
impl VarSink for Vec<CString> {
    const APPLICATION: bool = false;

    fn var(&mut self, name: &[u8], value: &[u8]) {
        let mut entry = Vec::with_capacity(name.len() + value.len() + 2);
        entry.extend_from_slice(name);
        entry.push(b'=');
        entry.extend_from_slice(value);
        if let Ok(entry) = CString::new(entry) {
            self.push(entry);
        }
    }
}

/// The environment for `script` ([`vars`]).
pub fn build_env(
    script: &Script,
    req: &EnvRequest<'_>,
    extra: &[(String, String)],
) -> Vec<CString> {
    let mut env = Vec::with_capacity(32 + extra.len());
    vars(Names::of(script), req, extra, &mut env);
    env
}

/// [`VarSink`] but for the names the rule's `env` sets: those come last,
/// over any other.
struct Unless<'s, S> {
    sink: &'s mut S,
    extra: &'s [(String, String)],
}

impl<S: VarSink> Unless<'_, S> {
    // (Called ~30 times a request: inlined, each call site grew by the
    // look through `extra`.)
    #[inline(never)]
    fn var(&mut self, name: &[u8], value: &[u8]) {
        if !self.extra.iter().any(|(set, _)| set.as_bytes() == name) {
            self.sink.var(name, value);
        }
    }
}

/// `HTTP_` and a header field's name in upper case, `-` as `_` (RFC 3875
/// §4.1.18), handed to `f`.
fn with_http_name<R>(field: &[u8], f: impl FnOnce(&[u8]) -> R) -> R {
    let upper = |b: &u8| match b {
        b'-' => b'_',
        _ => b.to_ascii_uppercase(),
    };
    let mut buf = [0u8; 64];
    let len = 5 + field.len();
    if len > buf.len() {
        let mut name = b"HTTP_".to_vec();
        name.extend(field.iter().map(upper));
        return f(&name);
    }
    buf[..5].copy_from_slice(b"HTTP_");
    for (to, from) in buf[5..len].iter_mut().zip(field) {
        *to = upper(from);
    }
    f(&buf[..len])
}

/// The variables of the script `names` name, into `out`.
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
/// last and overrides anything, `PATH` included. Neither an environment
/// nor FastCGI's PARAMS has an order.
///
/// None holds a NUL byte unless `names`, `req` or `extra` do: a parsed
/// request's fields and target, a decoded path, a configured `env` and a
/// configured root (canonical) hold none. An environment would drop such
/// a variable ([`build_env`]); a FastCGI parameter may hold one.
pub fn vars<'a, S: VarSink>(
    names: Names<'_>,
    req: &EnvRequest<'a, impl Iterator<Item = Header<'a>> + Clone>,
    extra: &[(String, String)],
    out: &mut S,
) {
    let mut v = Unless { sink: out, extra };
    if !S::APPLICATION {
        v.var(b"PATH", DEFAULT_PATH.as_bytes());
    }
    v.var(b"GATEWAY_INTERFACE", b"CGI/1.1");
    v.var(b"SERVER_SOFTWARE", SERVER_SOFTWARE.as_bytes());
    v.var(b"SERVER_PROTOCOL", req.version.as_bytes());
    v.var(b"SERVER_NAME", req.server_name);
    let (local, remote) = (req.local, req.remote);
    v.var(b"SERVER_ADDR", ip_text(local.ip(), &mut [0; 45]));
    v.var(
        b"SERVER_PORT",
        u64_digits(local.port().into(), &mut [0; 20]),
    );
    // Apache's (and nginx's fastcgi_params) names: scripts build their
    // own URLs from REQUEST_SCHEME, and test HTTPS=on.
    // Behind a trusted proxy the scheme is the client's, as it says.
    if req.forwarded_https.unwrap_or(req.tls.is_some()) {
        v.var(b"REQUEST_SCHEME", b"https");
        v.var(b"HTTPS", b"on");
    } else {
        v.var(b"REQUEST_SCHEME", b"http");
    }
    if let Some(tls) = &req.tls {
        v.var(b"SSL_PROTOCOL", tls.protocol.as_bytes());
        v.var(b"SSL_CIPHER", tls.cipher.as_bytes());
    }
    // No DNS lookups: REMOTE_HOST may be the address (RFC 3875 §4.1.9).
    let mut text = [0; 45];
    let remote_ip = ip_text(remote.ip(), &mut text);
    v.var(b"REMOTE_ADDR", remote_ip);
    v.var(b"REMOTE_HOST", remote_ip);
    v.var(
        b"REMOTE_PORT",
        u64_digits(remote.port().into(), &mut [0; 20]),
    );
    v.var(b"REQUEST_METHOD", req.method);
    v.var(b"REQUEST_URI", req.raw_target);
    v.var(b"QUERY_STRING", req.query);
    v.var(b"SCRIPT_NAME", names.name);
    v.var(b"SCRIPT_FILENAME", names.filename.as_os_str().as_bytes());
    let root = req.document_root.as_os_str().as_bytes();
    v.var(b"DOCUMENT_ROOT", root);
    // PHP's cgi.force_redirect refuses to run without it.
    v.var(b"REDIRECT_STATUS", b"200");
    if !names.path_info.is_empty() {
        v.var(b"PATH_INFO", names.path_info);
        // The path info mapped onto the document root, as if it were a
        // URL path of its own (RFC 3875 §4.1.6).
        let translated = [root.strip_suffix(b"/").unwrap_or(root), names.path_info].concat();
        v.var(b"PATH_TRANSLATED", &translated);
    }
    if let Some(n) = req.content_length {
        v.var(b"CONTENT_LENGTH", u64_digits(n, &mut [0; 20]));
    }
    if let Some(t) = req.auth_type {
        v.var(b"AUTH_TYPE", t);
    }
    if let Some(u) = req.remote_user {
        v.var(b"REMOTE_USER", u);
    }
    header_vars(&mut v, req.headers.clone(), S::APPLICATION);
    for (i, (name, value)) in extra.iter().enumerate() {
        // (A later one of the same name wins.)
        if !extra[i + 1..].iter().any(|(later, _)| later == name) {
            v.sink.var(name.as_bytes(), value.as_bytes());
        }
    }
}

/// The `HTTP_*` variables of `headers` ([`vars`]) and `CONTENT_TYPE`;
/// `HTTP_AUTHORIZATION` if `authorization`.
fn header_vars<'a, S: VarSink>(
    v: &mut Unless<'_, S>,
    headers: impl Iterator<Item = Header<'a>> + Clone,
    authorization: bool,
) {
    // A field's name sent twice sets one bit twice: without that, no
    // variable needs joining, nor any look at the fields before or after.
    let (mut bits, mut twice) = (0u64, false);
    for h in headers.clone() {
        let last = h.name.last().map_or(0, u8::to_ascii_lowercase);
        let bit = 1 << ((h.name.len() + usize::from(last)) & 63);
        twice |= bits & bit != 0;
        bits |= bit;
    }
    let mut content_type = None;
    for (i, h) in headers.clone().enumerate() {
        if content_type.is_none() && h.name.eq_ignore_case(b"content-type") {
            content_type = Some(h.value);
        }
        let passed = authorization && h.name.eq_ignore_case(b"authorization");
        if !passed && SKIPPED_HEADERS.iter().any(|s| h.name.eq_ignore_case(s))
            || !h
                .name
                .iter()
                .all(|&b| b.is_ascii_alphanumeric() || b == b'-')
        {
            continue;
        }
        let same = |other: &Header| other.name.eq_ignore_case(h.name);
        let joined;
        let value = if !twice {
            h.value
        } else if headers.clone().take(i).any(|e| same(&e)) {
            continue; // (Joined to the first of its name.)
        } else {
            // The first of its name: the later ones' values join it.
            let sep: &[u8] = if h.name.eq_ignore_case(b"cookie") {
                b"; "
            } else {
                b", "
            };
            let mut value = h.value.to_vec();
            for later in headers.clone().skip(i + 1).filter(same) {
                value.extend_from_slice(sep);
                value.extend_from_slice(later.value);
            }
            joined = value;
            &joined
        };
        with_http_name(h.name, |name| v.var(name, value));
    }
    if let Some(t) = content_type {
        v.var(b"CONTENT_TYPE", t);
    }
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
    let mut env = Vec::with_capacity(32 + extra.len());
    let names = Names::of(script);
    request_vars(
        names,
        req,
        ends,
        document_root,
        content_length,
        extra,
        &mut env,
    );
    env
}

/// The variables ([`vars`]) of the script `names` name run for `req`, as
/// [`request_env`] has them, into `out`.
pub fn request_vars(
    names: Names<'_>,
    req: &OwnedRequest,
    ends: Ends,
    document_root: &Path,
    content_length: Option<u64>,
    extra: &[(String, String)],
    out: &mut impl VarSink,
) {
    let server_name = crate::http::host_without_port(req.host().unwrap_or_default());
    let mut local_ip = [0; 45];
    let server_name: &[u8] = if server_name.is_empty() {
        ip_text(ends.local.ip(), &mut local_ip)
    } else {
        server_name
    };
    let env_req = EnvRequest {
        method: req.method_token(),
        raw_target: req.original_target(),
        query: req.query().unwrap_or_default(),
        version: req.version().as_str(),
        headers: req.headers(),
        remote: ends.remote,
        local: ends.local,
        tls: ends.tls,
        server_name,
        document_root,
        content_length,
        remote_user: req.user(),
        auth_type: req.user().map(|_| &b"Basic"[..]),
        forwarded_https: req.forwarded().and_then(|f| f.https),
    };
    vars(names, &env_req, extra, out);
}
