//! The request an upstream gets: written anew from what brisk parsed,
//! never passed through as it came. Its framing is brisk's own (one
//! `Content-Length` or `Transfer-Encoding: chunked`, from the body brisk
//! reads), so a request the client framed ambiguously never reaches
//! the upstream (that one was answered 400 by the parser already); the
//! hop-by-hop fields (RFC 9110 §7.6.1: `Connection` and every field it
//! names, `Keep-Alive`, `Proxy-Connection`, `TE`, `Trailer`,
//! `Transfer-Encoding`, `Upgrade`, `Proxy-Authorization`) stay on the
//! client's hop, brisk writing its own for its hop where they still mean
//! something (`TE: trailers` when the client takes trailers, as brisk
//! passes an answer's on; `Trailer` naming the client's trailer fields
//! brisk sends at the end of a chunked body); and who the client is goes in `X-Forwarded-For`,
//! `X-Forwarded-Proto`, `X-Forwarded-Host` and `Forwarded` (RFC 7239).
//!
//! Those four say what brisk saw, replacing what the client sent,
//! unless the request came through proxies `[proxy] trusted` names
//! (then what they said is kept and brisk's hop is appended): an
//! untrusted client cannot make the application believe it is someone
//! else.

use crate::ascii::IgnoreCase;
use std::net::IpAddr;

use crate::http::grammar::{has_token, is_token};
use crate::http::request::OwnedRequest;
use crate::http::trailers;
use crate::http::{ip_text, push_u64, Method, Version};

/// How the request body goes upstream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyOut {
    /// No body.
    None,
    /// Exactly this many bytes (`Content-Length`).
    Length(u64),
    /// In chunked coding, its length not known yet (a chunked request,
    /// an HTTP/2 request without `content-length`).
    Chunked,
}

/// What the forwarded request says beyond the client's request.
#[derive(Debug, Clone, Copy)]
pub struct Forward<'a> {
    /// The target to ask for (the client's, or with a prefix stripped).
    pub target: &'a [u8],
    /// The `Host` to send: the client's by default, or the upstream's.
    pub host: &'a [u8],
    /// The host the client asked for (`X-Forwarded-Host`, `Forwarded`'s
    /// `host=`): see `http::host_or`.
    pub client_host: &'a [u8],
    /// Who brisk got the request from (the connection's peer: the client,
    /// or the trusted proxy in front of it), the hop `X-Forwarded-For`
    /// and `Forwarded`'s `for=` add (RFC 7239 §5.2).
    pub hop: IpAddr,
    /// The client spoke HTTPS (to brisk, or to the trusted proxy).
    pub https: bool,
    /// The request came through trusted proxies: their forwarding
    /// fields are kept, and brisk's hop appended.
    pub trusted: bool,
    /// Append brisk's hop to `Via` (RFC 9110 §7.6.3).
    pub via: bool,
    /// The body's framing upstream.
    pub body: BodyOut,
    /// Ask the upstream to switch protocols (`Upgrade`, RFC 9110 §7.8:
    /// a WebSocket) to this list, the client's `Upgrade` as checked (all
    /// its lines, joined): it goes on, with `Connection: upgrade`.
    pub upgrade: Option<&'a [u8]>,
    /// Fields to set (replacing the client's of the same name).
    pub set: &'a [(Box<str>, Box<str>)],
    /// Fields to leave out (names, any case).
    pub remove: &'a [Box<str>],
}

/// Fields that belong to one hop (RFC 9110 §7.6.1), both ways
/// (`Proxy-Authorization` too, on requests).
pub(super) const HOP_BY_HOP: [&str; 7] = [
    "connection",
    "keep-alive",
    "proxy-connection",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
];

/// Beside [`HOP_BY_HOP`], fields not passed on: those brisk writes
/// itself (framing, `Host`, the forwarding fields, `Expect`, which brisk
/// answers itself before it reads a body).
const NOT_PASSED: [&str; 8] = [
    "proxy-authorization",
    "content-length",
    "host",
    "expect",
    "x-forwarded-for",
    "x-forwarded-proto",
    "x-forwarded-host",
    "forwarded",
];

/// Whether the `Upgrade` list `value` asks for a protocol that carries
/// HTTP requests on: `h2c` (or `h2`), `HTTP/x` or `TLS/x` (RFC 2817).
/// Such a switch is never passed on: through the tunnel it opens, a
/// client would send requests straight to the upstream, past every rule
/// brisk holds them to (its `[[auth]]`, access and rate rules, its
/// paths), the "h2c smuggling" attack. A list that is not one of
/// protocols (RFC 9110 §7.8: `name[/version]`, tokens: not `h2c;` or
/// `"h2c"`, which an upstream's lax reader might take for `h2c`) counts
/// as one: nothing unclear is passed on.
pub fn switches_to_http(value: &[u8]) -> bool {
    value.split(|&b| b == b',').any(|p| {
        let p = p.trim_ascii();
        let mut parts = p.splitn(2, |&b| b == b'/');
        let name = parts.next().unwrap_or(p);
        let version_ok = parts.next().is_none_or(is_token);
        let valid = p.is_empty() || (is_token(name) && version_ok);
        !valid || ["h2c", "h2", "http", "tls"].iter().any(|n| is(name, n))
    })
}

/// Whether the client's field `name` goes on to the upstream, in the
/// head or in a trailer section: not one brisk writes or drops itself,
/// nor one the rule `set`s or `remove`s (any case, an `_` read as `-`),
/// nor `Via` when brisk adds its own. (Trailers too: an application that
/// merges them into the head, as Apache's `MergeTrailers`, would
/// otherwise take the client's `X-Forwarded-For` or a removed field.)
pub fn passes(name: &[u8], set: &[(Box<str>, Box<str>)], remove: &[Box<str>], via: bool) -> bool {
    let is = |known: &str| spelt_as(name, known);
    !(HOP_BY_HOP.iter().chain(&NOT_PASSED).any(|n| is(n))
        || remove.iter().any(|n| is(n))
        || set.iter().any(|(n, _)| is(n))
        || (via && is("via")))
}

/// Whether the client's field `name` is `known` (any case), an `_` in
/// it read as `-`. Many application servers read fields as CGI variables
/// do (`X-Forwarded-For` and `X_Forwarded_For` both `HTTP_X_FORWARDED_FOR`),
/// and some let the last one win: a client's `X_Forwarded_For` could
/// stand for the one brisk writes (as Puma's CVE-2024-45614 showed; nginx
/// drops every field with `_` for this). So a field spelt so is left
/// out wherever brisk writes, drops or sets the field it stands for.
fn spelt_as(name: &[u8], known: &str) -> bool {
    name.len() == known.len()
        && (name.iter().zip(known.bytes()))
            .all(|(&a, b)| a.eq_ignore_ascii_case(&b) || (a == b'_' && b == b'-'))
}

fn is(name: &[u8], known: &str) -> bool {
    name.eq_ignore_case(known.as_bytes())
}

/// Appends `name: v1, v2` for every `name` field of `req` (several lines
/// are one list, RFC 9110 §5.3), then `, extra` (or just `extra`).
/// Writes nothing when `keep` is false and there is no extra.
fn list_field(
    out: &mut Vec<u8>,
    req: &OwnedRequest,
    name: &str,
    keep: bool,
    extra: &mut dyn FnMut(&mut Vec<u8>),
) {
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(b": ");
    let start = out.len();
    if keep {
        for h in req.headers().filter(|h| is(h.name, name)) {
            if out.len() > start {
                out.extend_from_slice(b", ");
            }
            out.extend_from_slice(h.value);
        }
    }
    if out.len() > start {
        out.extend_from_slice(b", ");
    }
    extra(out);
    out.extend_from_slice(b"\r\n");
}

/// Appends a field whose value is `req`'s own if `keep` and it has one,
/// else `value`.
fn kept_or(out: &mut Vec<u8>, req: &OwnedRequest, name: &str, keep: bool, value: &[u8]) {
    let value = keep.then(|| req.header(name)).flatten().unwrap_or(value);
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(b": ");
    out.extend_from_slice(value);
    out.extend_from_slice(b"\r\n");
}

/// Appends the client's address, `text` ([`ip_text`]'s), as
/// `Forwarded`'s `for=` wants it (RFC 7239 §6: an IPv6 address
/// bracketed, and quoted).
fn node(out: &mut Vec<u8>, text: &[u8], v6: bool) {
    if v6 {
        out.extend_from_slice(b"\"[");
        out.extend_from_slice(text);
        out.extend_from_slice(b"]\"");
    } else {
        out.extend_from_slice(text);
    }
}

/// Appends `s` as a quoted-string (RFC 9110 §5.6.4).
pub(super) fn quoted(out: &mut Vec<u8>, s: &[u8]) {
    out.push(b'"');
    // (Copied in runs between the bytes escaped: a host has none.)
    let mut rest = s;
    while let Some(i) = rest.iter().position(|&b| b == b'"' || b == b'\\') {
        out.extend_from_slice(&rest[..i]);
        out.extend_from_slice(&[b'\\', rest[i]]);
        rest = &rest[i + 1..];
    }
    out.extend_from_slice(rest);
    out.push(b'"');
}

/// Writes the head of the request for the upstream into `out`.
pub fn write_head(out: &mut Vec<u8>, req: &OwnedRequest, f: &Forward<'_>) {
    out.extend_from_slice(req.method_token());
    out.push(b' ');
    out.extend_from_slice(f.target);
    out.extend_from_slice(b" HTTP/1.1\r\nHost: ");
    out.extend_from_slice(f.host);
    out.extend_from_slice(b"\r\n");
    let named_by_connection = |name: &[u8]| {
        req.headers()
            .filter(|h| is(h.name, "connection"))
            .any(|h| has_token(h.value, name))
    };
    for h in req.headers() {
        if !passes(h.name, f.set, f.remove, f.via) || named_by_connection(h.name) {
            continue;
        }
        out.extend_from_slice(h.name);
        out.extend_from_slice(b": ");
        out.extend_from_slice(h.value);
        out.extend_from_slice(b"\r\n");
    }
    let proto: &[u8] = if f.https { b"https" } else { b"http" };
    let client_host = f.client_host;
    // A field of brisk's own that the rule sets (its value replaces
    // brisk's, below) or removes is not written: one field, never two
    // that disagree (an application that reads the first
    // `X-Forwarded-Proto` would see `http` beside the `https` set).
    let own = |name: &str| {
        !(f.set.iter().any(|(n, _)| is(n.as_bytes(), name))
            || f.remove.iter().any(|n| is(n.as_bytes(), name)))
    };
    // (The hop's address as text once, for both fields that name it.)
    let ip = f.hop.to_canonical();
    let mut text = [0; 45];
    let client = ip_text(ip, &mut text);
    if own("X-Forwarded-For") {
        list_field(out, req, "X-Forwarded-For", f.trusted, &mut |out| {
            out.extend_from_slice(client);
        });
    }
    if own("X-Forwarded-Proto") {
        kept_or(out, req, "X-Forwarded-Proto", f.trusted, proto);
    }
    if own("X-Forwarded-Host") {
        kept_or(out, req, "X-Forwarded-Host", f.trusted, client_host);
    }
    if own("Forwarded") {
        list_field(out, req, "Forwarded", f.trusted, &mut |out| {
            out.extend_from_slice(b"for=");
            node(out, client, ip.is_ipv6());
            out.extend_from_slice(b";proto=");
            out.extend_from_slice(proto);
            out.extend_from_slice(b";host=");
            quoted(out, client_host);
        });
    }
    if f.via && own("Via") {
        let received: &[u8] = match req.version() {
            Version::Http10 => b"1.0",
            Version::Http11 => b"1.1",
            Version::Http2 => b"2",
            #[cfg(feature = "http3")]
            Version::Http3 => b"3",
        };
        list_field(out, req, "Via", true, &mut |out| {
            out.extend_from_slice(received);
            out.extend_from_slice(b" brisk");
        });
    }
    for (name, value) in f.set {
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(value.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    match f.body {
        BodyOut::Length(n) => {
            out.extend_from_slice(b"Content-Length: ");
            push_u64(out, n);
            out.extend_from_slice(b"\r\n");
        }
        BodyOut::Chunked => out.extend_from_slice(b"Transfer-Encoding: chunked\r\n"),
        // RFC 9110 §8.6: a request whose method means a body says
        // when it has none.
        BodyOut::None if matches!(req.method(), Method::Post | Method::Put | Method::Patch) => {
            out.extend_from_slice(b"Content-Length: 0\r\n");
        }
        BodyOut::None => {}
    }
    if f.body == BodyOut::Chunked {
        announce_trailers(out, req, f);
    }
    // The client takes trailers (RFC 9110 §10.1.4; an HTTP/2 client's
    // `te: trailers`, as gRPC's): so does brisk, which passes them on.
    // `TE` belongs to one hop: the `Connection` option names it.
    let te = req
        .headers()
        .any(|h| is(h.name, "te") && has_token(h.value, b"trailers"));
    if te {
        out.extend_from_slice(b"TE: trailers\r\n");
    }
    let upgrade = f.upgrade;
    match (te, upgrade.is_some()) {
        (false, false) => {}
        (true, false) => out.extend_from_slice(b"Connection: TE\r\n"),
        (false, true) => out.extend_from_slice(b"Connection: upgrade\r\n"),
        (true, true) => out.extend_from_slice(b"Connection: TE, upgrade\r\n"),
    }
    if let Some(upgrade) = upgrade {
        out.extend_from_slice(b"Upgrade: ");
        out.extend_from_slice(upgrade);
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"\r\n");
}

/// Appends `Trailer` (RFC 9110 §6.6.2) naming the fields the client's
/// `Trailer` announced that may pass in a trailer section
/// ([`trailers::allowed`] and [`passes`]: those brisk sends on at the
/// chunked body's end, the others being dropped there); nothing when
/// none is left.
fn announce_trailers(out: &mut Vec<u8>, req: &OwnedRequest, f: &Forward<'_>) {
    let start = out.len();
    let names = req
        .headers()
        .filter(|h| is(h.name, "trailer"))
        .flat_map(|h| h.value.split(|&b| b == b','))
        .map(<[u8]>::trim_ascii)
        .filter(|n| is_token(n) && trailers::allowed(n) && passes(n, f.set, f.remove, f.via));
    for name in names {
        out.extend_from_slice(if out.len() == start {
            b"Trailer: "
        } else {
            b", "
        });
        out.extend_from_slice(name);
    }
    if out.len() > start {
        out.extend_from_slice(b"\r\n");
    }
}
