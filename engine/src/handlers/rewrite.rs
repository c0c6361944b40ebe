//! `[[redirect]]` and `[[rewrite]]` rules applied to a request, before
//! any other stage of the router sees it (nginx's rewrite phase runs
//! before its access phase: a redirect is answered without a login, and
//! `[[auth]]`, CGI and the static files see the rewritten path).
//!
//! Rules run in file order over the decoded, normalised path; the first
//! that matches acts. A redirect answers. A rewrite replaces the target
//! and the rules run again from the first over the new path (nginx's
//! `rewrite … last`), until none matches or a rewrite leaves the target
//! as it was; after [`MAX_REWRITES`] the request is answered 500.

use crate::ascii::IgnoreCase;
use crate::config::rules::{Piece, Scheme, Target, UrlAction, UrlMatch, UrlRule, MAX_REWRITES};
use crate::http::request::OwnedRequest;

/// What the rules made of a request.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    /// No redirect: route it (rewritten or not).
    Route,
    /// Answer with this redirect status; the `Location` value is in the
    /// buffer given to [`apply`].
    Redirect(u16),
    /// The rewrites went on past [`MAX_REWRITES`]; the rule that made the
    /// last is at this origin (`brisk.toml:12`).
    Loop(String),
}

/// The request's side of the rules' conditions and variables.
#[derive(Clone, Copy)]
pub struct Context<'a> {
    /// The scheme the client used (TLS here, or as a trusted proxy said).
    pub scheme: Scheme,
    /// The port of the first `[tls] listen` address, if any (`$https_port`).
    pub https_port: Option<u16>,
    /// The address the client connected to (`$port`; `$host` of a
    /// request that names none), asked only when a target needs it (it
    /// costs a system call).
    pub local: &'a dyn Fn() -> std::net::SocketAddr,
    /// The site's `hosts`: the first name is `$host` of a request that
    /// names none.
    pub hosts: &'a [String],
}

/// Applies `rules` to `req`: rewrites it in place, or writes a
/// redirect's `Location` into `location`. Nothing is allocated unless a
/// rule matches.
pub fn apply(
    rules: &[UrlRule],
    req: &mut OwnedRequest,
    cx: Context<'_>,
    location: &mut Vec<u8>,
) -> Outcome {
    let mut last = "";
    for _ in 0..=MAX_REWRITES {
        let Ok(path) = req.path() else {
            return Outcome::Route;
        };
        let host = host_name(req.host().unwrap_or_default());
        let Some((rule, caps)) = rules.iter().find_map(|r| {
            let ok = r.scheme.is_none_or(|s| s == cx.scheme) && host_matches(&r.hosts, host);
            ok.then(|| matches(&r.matcher, path).map(|c| (r, c)))
                .flatten()
        }) else {
            return Outcome::Route;
        };
        location.clear();
        expand(&rule.to, &caps, req, cx, location);
        if location.starts_with(b"//") {
            // A capture that starts with "/" must not make a
            // scheme-relative URL (an open redirect): one slash.
            let extra = location.iter().take_while(|&&b| b == b'/').count() - 1;
            location.drain(..extra);
        }
        match rule.action {
            UrlAction::Redirect(status) => return Outcome::Redirect(status),
            UrlAction::Rewrite if location[..] == *req.target() => return Outcome::Route,
            UrlAction::Rewrite => {
                req.rewrite(location);
                last = &rule.origin;
            }
        }
    }
    Outcome::Loop(last.to_string())
}

/// The host name of a `Host` value: no port, no trailing dot.
fn host_name(host: &[u8]) -> &[u8] {
    let name = crate::http::host_without_port(host);
    name.strip_suffix(b".").unwrap_or(name)
}

/// Whether `host` is one of `hosts` (`*.example.org`: a subdomain).
fn host_matches(hosts: &[String], host: &[u8]) -> bool {
    hosts.is_empty()
        || hosts.iter().any(|h| match h.strip_prefix("*.") {
            Some(suffix) => {
                host.len() > suffix.len() + 1
                    && host[host.len() - suffix.len()..].eq_ignore_case(suffix.as_bytes())
                    && host[host.len() - suffix.len() - 1] == b'.'
            }
            None => host.eq_ignore_case(h.as_bytes()),
        })
}

/// Up to nine captures, as byte ranges of the path (`None`: a group
/// that took no part in the match).
type Captures = [Option<(usize, usize)>; 10];

/// Whether `m` matches `path`, and its captures.
fn matches(m: &UrlMatch, path: &[u8]) -> Option<Captures> {
    let mut caps: Captures = [None; 10];
    match m {
        UrlMatch::Exact(p) => (path == p.as_bytes()).then_some(caps),
        UrlMatch::Prefix(p) => {
            let rest = path.strip_prefix(p.as_bytes())?;
            caps[1] = Some((path.len() - rest.len(), path.len()));
            Some(caps)
        }
        UrlMatch::Regex(pattern) => {
            // (A path that is not UTF-8 matches no regular expression.)
            let text = std::str::from_utf8(path).ok()?;
            let found = pattern.re.captures(text)?;
            for (i, slot) in caps.iter_mut().enumerate().skip(1) {
                *slot = found.get(i).map(|m| (m.start(), m.end()));
            }
            Some(caps)
        }
    }
}

/// Writes `to` with its variables filled in: captures and `$uri` are
/// percent-encoded for where they land (path or query), so the result is
/// a valid target or `Location` whatever the path held.
fn expand(to: &Target, caps: &Captures, req: &OwnedRequest, cx: Context<'_>, out: &mut Vec<u8>) {
    let path = req.path().unwrap_or_default();
    let query = req.query();
    for (i, piece) in to.pieces.iter().enumerate() {
        let in_query = to.query_from.is_some_and(|q| i >= q);
        match piece {
            Piece::Literal(s) => out.extend_from_slice(s.as_bytes()),
            Piece::Capture(n) => {
                if let Some((a, b)) = caps.get(*n).copied().flatten() {
                    encode(&path[a..b], in_query, out);
                }
            }
            Piece::Uri => encode(path, in_query, out),
            Piece::Host => {
                let mut buf = [0; 54];
                let host = crate::http::host_or(req.host(), cx.hosts, cx.local, 0, &mut buf);
                let host = host_name(host);
                for &b in host {
                    out.push(b.to_ascii_lowercase());
                }
                // (The parser let only a valid host through; encode the
                // rest all the same.)
                let start = out.len() - host.len();
                if !out[start..]
                    .iter()
                    .all(|&b| b.is_ascii_alphanumeric() || b"-.:[]".contains(&b))
                {
                    let raw = out.split_off(start);
                    encode(&raw, true, out);
                }
            }
            Piece::Scheme => out.extend_from_slice(cx.scheme.as_str().as_bytes()),
            // (The query as sent: it was valid in the request target.)
            Piece::Query => out.extend_from_slice(query.unwrap_or_default()),
            Piece::Port => crate::http::push_u64(out, (cx.local)().port().into()),
            Piece::HttpsPort => match cx.https_port {
                Some(443) | None => {}
                Some(port) => out.extend_from_slice(format!(":{port}").as_bytes()),
            },
        }
    }
    match (to.query_from, query) {
        (None, Some(q)) if !q.is_empty() => {
            out.push(b'?');
            out.extend_from_slice(q);
        }
        // A lone `?` at the end: no query at all.
        (Some(_), _) if out.ends_with(b"?") => {
            out.pop();
        }
        _ => {}
    }
}

/// Percent-encodes `bytes` for a path (`/` and the sub-delimiters stay)
/// or, `in_query`, for a query value (`&`, `=`, `+`, `;` encoded too).
fn encode(bytes: &[u8], in_query: bool, out: &mut Vec<u8>) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    for &b in bytes {
        let keep = b.is_ascii_alphanumeric()
            || b"-._~/".contains(&b)
            || b"!$'()*,:@".contains(&b)
            || !in_query && b"&=+;".contains(&b);
        if keep {
            out.push(b);
        } else {
            out.extend_from_slice(&[b'%', HEX[(b >> 4) as usize], HEX[(b & 15) as usize]]);
        }
    }
}

// (Through the configuration, whose rules need the cargo feature `sites`.)
#[cfg(all(test, feature = "sites"))]
mod tests;
