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

use std::collections::BTreeMap;
use std::ffi::CString;
use std::net::SocketAddr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use super::resolve::Script;
use super::runner::Ends;
use crate::handlers::spool::Spool;
use crate::http::parse::{BodyFraming, Header};
use crate::http::request::OwnedRequest;
use crate::http::TlsSession;

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

/// The environment for `script`: `NAME=value` entries sorted by name.
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
/// last and overrides anything, `PATH` included. An entry that would hold
/// a NUL byte (impossible for parsed requests) is left out.
pub fn build_env(
    script: &Script,
    req: &EnvRequest<'_>,
    extra: &[(String, String)],
) -> Vec<CString> {
    let mut vars: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
    let mut set = |name: &str, value: &[u8]| {
        vars.insert(name.as_bytes().to_vec(), value.to_vec());
    };
    set("PATH", DEFAULT_PATH.as_bytes());
    set("GATEWAY_INTERFACE", b"CGI/1.1");
    set("SERVER_SOFTWARE", SERVER_SOFTWARE.as_bytes());
    set("SERVER_PROTOCOL", req.version.as_bytes());
    set("SERVER_NAME", req.server_name);
    set(
        "SERVER_ADDR",
        req.local.ip().to_canonical().to_string().as_bytes(),
    );
    set("SERVER_PORT", req.local.port().to_string().as_bytes());
    // Apache's (and nginx's fastcgi_params) names: scripts build their
    // own URLs from REQUEST_SCHEME, and test HTTPS=on.
    // Behind a trusted proxy the scheme is the client's, as it says.
    if req.forwarded_https.unwrap_or(req.tls.is_some()) {
        set("REQUEST_SCHEME", b"https");
        set("HTTPS", b"on");
    } else {
        set("REQUEST_SCHEME", b"http");
    }
    if let Some(tls) = &req.tls {
        set("SSL_PROTOCOL", tls.protocol.as_bytes());
        set("SSL_CIPHER", tls.cipher.as_bytes());
    }
    // No DNS lookups: REMOTE_HOST may be the address (RFC 3875 §4.1.9).
    let remote_ip = req.remote.ip().to_canonical().to_string();
    set("REMOTE_ADDR", remote_ip.as_bytes());
    set("REMOTE_HOST", remote_ip.as_bytes());
    set("REMOTE_PORT", req.remote.port().to_string().as_bytes());
    set("REQUEST_METHOD", req.method);
    set("REQUEST_URI", req.raw_target);
    set("QUERY_STRING", req.query);
    set("SCRIPT_NAME", &script.script_name);
    set(
        "SCRIPT_FILENAME",
        script.script_filename.as_os_str().as_bytes(),
    );
    let root = req.document_root.as_os_str().as_bytes();
    set("DOCUMENT_ROOT", root);
    // PHP's cgi.force_redirect refuses to run without it.
    set("REDIRECT_STATUS", b"200");
    if !script.path_info.is_empty() {
        set("PATH_INFO", &script.path_info);
        // The path info mapped onto the document root, as if it were a
        // URL path of its own (RFC 3875 §4.1.6).
        let mut translated = root.strip_suffix(b"/").unwrap_or(root).to_vec();
        translated.extend_from_slice(&script.path_info);
        set("PATH_TRANSLATED", &translated);
    }
    if let Some(n) = req.content_length {
        set("CONTENT_LENGTH", n.to_string().as_bytes());
    }
    if let Some(t) = req.auth_type {
        set("AUTH_TYPE", t);
    }
    if let Some(u) = req.remote_user {
        set("REMOTE_USER", u);
    }
    let mut content_type = None;
    for h in req.headers {
        if h.name.eq_ignore_ascii_case(b"content-type") && content_type.is_none() {
            content_type = Some(h.value);
        }
        if SKIPPED_HEADERS
            .iter()
            .any(|s| h.name.eq_ignore_ascii_case(s))
            || !h
                .name
                .iter()
                .all(|&b| b.is_ascii_alphanumeric() || b == b'-')
        {
            continue;
        }
        let mut name = b"HTTP_".to_vec();
        name.extend(h.name.iter().map(|&b| match b {
            b'-' => b'_',
            _ => b.to_ascii_uppercase(),
        }));
        let sep: &[u8] = if h.name.eq_ignore_ascii_case(b"cookie") {
            b"; "
        } else {
            b", "
        };
        vars.entry(name)
            .and_modify(|v| {
                v.extend_from_slice(sep);
                v.extend_from_slice(h.value);
            })
            .or_insert_with(|| h.value.to_vec());
    }
    if let Some(t) = content_type {
        vars.insert(b"CONTENT_TYPE".to_vec(), t.to_vec());
    }
    for (name, value) in extra {
        vars.insert(name.as_bytes().to_vec(), value.as_bytes().to_vec());
    }
    vars.into_iter()
        .filter_map(|(mut name, value)| {
            name.push(b'=');
            name.extend_from_slice(&value);
            CString::new(name).ok()
        })
        .collect()
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
    };
    build_env(script, &env_req, extra)
}
