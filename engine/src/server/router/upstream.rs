//! The reverse-proxy stage (`[[reverse_proxy]]`, after the mounts and
//! before CGI): the first rule of the site whose `path` or `pattern`
//! matches forwards the request. The router decides what goes: the
//! upstream (each in turn), the re-framed request head with who the
//! client is, and how the answer is passed on; the worker connects and
//! pumps it (see `server::worker::upstream`).

use crate::ascii::IgnoreCase;
use std::borrow::Cow;

use super::{refused_400, Deferred, Resume, Resumed, Router, Routing, Step};
use crate::config::{HostMode, PathMatch, ProxyRule, Upstream};
use crate::handlers::proxy::balance::{Group, Shared};
use crate::handlers::proxy::body::{Answer, Options, Relocate, Turn};
use crate::handlers::proxy::dial;
use crate::handlers::proxy::pool::Keep;
use crate::handlers::proxy::request::{switches_to_http, write_head, BodyOut, Forward};
use crate::handlers::proxy::UpstreamPlan;
use crate::handlers::spool::Spool;
use crate::handlers::{Body, Plan};
use crate::http::grammar::{has_token, hex_value};
use crate::http::parse::{self, BodyFraming};
use crate::http::path::{decode_and_normalize, has_dot_segment, read_otherwise, split_target};
use crate::http::request::{Field, OwnedRequest, MAX_HEADERS};
use crate::http::{Method, Status, Version};
use crate::sys::boxes::Empty;

/// A request for what a rule's `path` names without its final `/`
/// (`/api` where `path = "/api/"`) that no rule takes: redirected to the
/// path with the slash, as nginx does for such a location, so that
/// `https://example.com/app` reaches the application at `/app/`; 301 for
/// GET and HEAD, 308 otherwise (which keeps the method and the body,
/// RFC 9110 §15.4.9). Any other request: the next stage's.
fn slash_redirect(rules: &[ProxyRule], routing: &mut Routing<'_>) -> Step {
    let path = routing.scratch.path.as_slice();
    let named = |r: &ProxyRule| matches!(&r.matches, PathMatch::Prefix(p) if p.as_bytes().strip_suffix(b"/") == Some(path));
    if !rules.iter().any(named) {
        return Step::Next;
    }
    let (raw_path, query) = split_target(routing.req.target());
    let location = crate::handlers::static_files::with_slash(raw_path, query);
    routing.scratch.header("Location", &location);
    let status = match routing.req.method() {
        Method::Get | Method::Head => Status::MOVED_PERMANENTLY,
        _ => Status::PERMANENT_REDIRECT,
    };
    Step::Answer(Plan::error(status, routing.scratch))
}

impl Router {
    /// Whether the `[[reverse_proxy]]` rule of the request's site that
    /// takes its path takes a WebSocket handshake (so it goes there, not
    /// refused). Over HTTP/1.1 a rule with `websocket = false` sends it
    /// as a plain request, whose answer the client sees is no switch;
    /// an HTTP/2 or HTTP/3 extended CONNECT sent so would take a 200 for
    /// an open tunnel (RFC 8441 §5): refused.
    pub(super) fn proxies(&self, routing: &Routing<'_>) -> bool {
        let rules = &self.cfg.site(routing.req.site()).reverse_proxy;
        let framed = !matches!(routing.req.version(), Version::Http10 | Version::Http11);
        rules
            .iter()
            .find(|r| r.matches.matches(&routing.scratch.path))
            .is_some_and(|r| r.websocket || !framed)
    }

    /// The reverse-proxy stage: the request goes to an upstream of the
    /// first rule that matches its path; with `buffer_request`, once its
    /// body is held whole.
    pub(super) fn reverse_proxy(&mut self, routing: &mut Routing<'_>) -> Step {
        let rules = &self.cfg.site(routing.req.site()).reverse_proxy;
        let Some((i, rule)) = rules
            .iter()
            .enumerate()
            .find(|(_, r)| r.matches.matches(&routing.scratch.path))
        else {
            return slash_redirect(rules, routing);
        };
        routing.body_max = rule.max_body;
        let body = routing.req.body();
        if rule.buffer_request && !matches!(body, BodyFraming::None | BodyFraming::Length(0)) {
            return Step::Defer(Deferred::WholeBody(Resume(Resumed::Proxy { rule: i })));
        }
        self.proxy_by(i, None, routing)
    }

    /// The request goes to an upstream of the site's `[[reverse_proxy]]`
    /// rule `i`, with its body `held` whole (sent with its length) or
    /// else as it arrives.
    pub(super) fn proxy_by(
        &mut self,
        i: usize,
        mut held: Option<Spool>,
        routing: &mut Routing<'_>,
    ) -> Step {
        // (Read back from its start: it was written to the end.)
        if let Some(Err(e)) = held.as_mut().map(Spool::rewind) {
            routing.log.log(
                crate::config::Level::Error,
                format_args!(
                    "reverse proxy: cannot read back the request body held in a temporary file: {e}"
                ),
            );
            return Step::Answer(Plan::told_error(
                Status::INTERNAL_SERVER_ERROR,
                routing.scratch,
            ));
        }
        let cfg = std::sync::Arc::clone(&self.cfg);
        let site = routing.req.site();
        let Some(rule) = cfg.site(site).reverse_proxy.get(i) else {
            return Step::Next;
        };
        let Some(group) = self.proxy_groups.get(site).and_then(|g| g.get(i)) else {
            return Step::Next;
        };
        if matches!(routing.req.method(), Method::Trace) || routing.req.method_token() == b"TRACK" {
            // TRACE would echo the request as the upstream got it: the
            // rule's `headers.set` (a token for the upstream) and the
            // client's cookies with it. Refused as nginx refuses it (501:
            // for every resource, so no `Allow` to name).
            return Step::Answer(Plan::error(Status::NOT_IMPLEMENTED, routing.scratch));
        }
        // An upstream must see the path brisk's rules matched (Orange
        // Tsai's "Breaking Parser Logic", Black Hat 2018).
        let raw = split_target(routing.req.target()).0;
        let otherwise = if has_dot_segment(raw) {
            Some("dot segments, which it may not resolve")
        } else if read_otherwise(&routing.scratch.path) {
            Some("dot segments behind ';' or '\\'")
        } else if guarded_otherwise(cfg.site(site), &routing.scratch.path) {
            Some("';' parameters, which it may drop, guarded otherwise")
        } else {
            None
        };
        if let Some(why) = otherwise {
            return refused_400(
                routing,
                "reverse proxy: ",
                format_args!(": an upstream could read its path as another ({why}); 400"),
            );
        }
        // (The real client: behind a trusted proxy, the one it names.)
        let client = match routing.req.forwarded() {
            Some(f) => f.addr.ip(),
            None => routing.client.peer.ip(),
        };
        let picked = group.borrow_mut().pick(client, &[], routing.client.now);
        let Some(index) = picked else {
            return Step::Answer(no_live_upstreams(
                "reverse proxy",
                &rule.matches,
                group,
                routing,
            ));
        };
        let to = &rule.to[index];
        let target = match strip(rule, routing.req.target(), &routing.scratch.path) {
            Ok(target) => target,
            Err(why) => {
                return refused_400(
                    routing,
                    "reverse proxy: cannot strip_prefix from ",
                    format_args!(": {why}; 400"),
                )
            }
        };
        let label = group.borrow().labels[index].clone();
        let held_len = held.as_ref().map(Spool::len);
        // (The head in a buffer an answer before gave back: see
        // `Pool::buffer`.)
        let head = self.upstream_pool.borrow_mut().buffer();
        // (Made in the box of a plan before, if any: see `ProxyBody::on`.)
        let empty = self.upstream_pool.borrow_mut().boxes.empty();
        let mut plan = upstream_plan(
            rule, to, label, &target, routing, &cfg, held_len, head, empty,
        );
        plan.held = held;
        if rule.buffer_answer > 0 {
            plan.opts.hold = rule.buffer_answer;
            plan.opts.temp = Some(std::sync::Arc::clone(&cfg));
        }
        plan.opts.keep = (rule.keepalive > 0).then(|| Keep {
            pool: std::rc::Rc::clone(&self.upstream_pool),
            to: to.clone(),
            max: rule.keepalive,
            timeout: rule.keepalive_timeout,
        });
        plan.opts.turn = Some(Turn {
            group: std::rc::Rc::clone(group),
            index,
            client,
            idempotent: routing.req.method().is_idempotent(),
            host_upstream: rule.host == HostMode::Upstream,
        });
        Step::Answer(Plan {
            // (The status is the upstream's, from its answer's head.)
            status: Status::OK,
            body: Body::Upstream(plan),
            close: false,
        })
    }
}

/// Every upstream of the `kind` rule that `matches` the request of
/// `routing` (the reverse proxy's, FastCGI's) is down, `group` says: a
/// 503, and one error line naming the rule, the request, and why each is
/// down (nginx's "no live upstreams while connecting to upstream").
pub(super) fn no_live_upstreams(
    kind: &str,
    matches: &PathMatch,
    group: &Shared,
    routing: &mut Routing<'_>,
) -> Plan {
    routing.log.log(
        crate::config::Level::Error,
        format_args!(
            "{kind} {matches}: {} {}: no live upstreams ({}); 503",
            String::from_utf8_lossy(routing.req.method_token()),
            String::from_utf8_lossy(routing.req.target()),
            group.borrow().why_down(routing.client.now)
        ),
    );
    Plan::told_error(Status::SERVICE_UNAVAILABLE, routing.scratch)
}

/// The state of `rule`'s upstreams in one worker.
pub(super) fn group(rule: &ProxyRule) -> Shared {
    std::rc::Rc::new(std::cell::RefCell::new(Group::new(rule)))
}

/// What the request `routing` holds is sent to upstream `to` of `rule`
/// (named `label` in log lines), its head written in `head` (empty).
#[allow(clippy::too_many_arguments)]
fn upstream_plan(
    rule: &ProxyRule,
    to: &Upstream,
    label: std::rc::Rc<str>,
    target: &[u8],
    routing: &Routing<'_>,
    cfg: &crate::config::Config,
    held_len: Option<u64>,
    mut head: Vec<u8>,
    empty: Empty<UpstreamPlan>,
) -> Box<UpstreamPlan> {
    let req: &OwnedRequest = routing.req;
    let body = match (held_len, req.body()) {
        (Some(n), _) => BodyOut::Length(n),
        // (`Content-Length: 0` is no body: a WebSocket handshake that
        // says so is one still.)
        (None, BodyFraming::None | BodyFraming::Length(0)) => BodyOut::None,
        (None, BodyFraming::Length(n)) => BodyOut::Length(n),
        (None, BodyFraming::Chunked) => BodyOut::Chunked,
    };
    let limits = &cfg.limits;
    let https = req
        .forwarded()
        .and_then(|f| f.https)
        .unwrap_or(routing.client.tls.is_some());
    // The host the client asked for; where it named none (HTTP/1.0, an
    // HTTP/2 request without `:authority`), the site's name or the
    // address it came to, for every protocol alike: never the upstream's
    // address passed off as the client's.
    let mut fallback = [0; 54];
    let names = &cfg.site(req.site()).hosts;
    let local = || routing.client.local_addr();
    let port = if https { 443 } else { 80 };
    let client_host = crate::http::host_or(req.host(), names, &local, port, &mut fallback);
    let own_host;
    let host: &[u8] = match rule.host {
        HostMode::Client => client_host,
        _ => {
            own_host = dial::own_host(to);
            own_host.as_bytes()
        }
    };
    // A switch of protocols (RFC 9110 §7.8: `Upgrade`, named by
    // `Connection`) goes on where the rule lets it, for a request with
    // no body, unless it is to a protocol that carries HTTP on;
    // otherwise the request goes without its `Upgrade`. (An HTTP/2
    // request has an `Upgrade` only as an extended CONNECT's handshake:
    // see `server::h2::request`.)
    // (`Upgrade` on several lines is one list, RFC 9110 §5.3: all of it
    // is checked, and all of it goes on; one that names no protocol asks
    // for nothing.)
    let upgrade = req.field(Field::Upgrade).filter(|u| {
        rule.websocket
            && req.version() != Version::Http10
            && body == BodyOut::None
            && u.split(|&b| b == b',').any(|p| !p.trim_ascii().is_empty())
            && !switches_to_http(u)
            && req
                .headers()
                .filter(|h| h.name.eq_ignore_case(b"connection"))
                .any(|h| has_token(h.value, b"upgrade"))
    });
    let forwarded = req.forwarded();
    let f = Forward {
        target,
        host,
        client_host,
        hop: forwarded.map_or(routing.client.peer.ip(), |f| f.by),
        https,
        trusted: forwarded.is_some(),
        via: rule.via,
        body,
        upgrade,
        set: &rule.headers.set,
        remove: &rule.headers.remove,
    };
    // (Room for the client's head and what brisk adds, the forwarding
    // fields and the rule's own: one allocation, not one per doubling.)
    let set: usize = rule
        .headers
        .set
        .iter()
        .map(|(n, v)| n.len() + v.len() + 4)
        .sum();
    head.reserve(req.head().len() + host.len() + set + 256);
    write_head(&mut head, req, &f);
    // (Made where it goes, not on the stack and copied there.)
    Box::write(
        empty,
        UpstreamPlan {
            to: to.clone(),
            head,
            opts: Options {
                label,
                body,
                head_request: req.method() == Method::Head,
                connect_timeout: rule.connect_timeout,
                read_timeout: rule.read_timeout,
                send_timeout: rule.send_timeout,
                limits: parse::Limits {
                    max_request_line: limits.max_request_line,
                    max_head: limits.max_header_bytes,
                    max_headers: limits.max_headers.min(MAX_HEADERS),
                },
                max_trailers: limits.max_header_bytes,
                forward: rule.headers.clone(),
                answer: Answer {
                    edits: rule.response_headers.clone(),
                    via: rule.via,
                    server: rule.server,
                    relocate: Some(Relocate {
                        upstream: to.clone(),
                        prefix: match &rule.matches {
                            PathMatch::Prefix(p) if rule.strip_prefix => {
                                p.strip_suffix('/').unwrap_or(p).into()
                            }
                            _ => "".into(),
                        },
                    }),
                },
                keep: None,
                upgrade: upgrade.map(Box::from),
                connect: upgrade.is_some() && req.version() == Version::Http2,
                turn: None,
                hold: 0,
                temp: None,
            },
            #[cfg(feature = "tls")]
            tls: rule.tls_client.clone(),
            #[cfg(not(feature = "tls"))]
            tls: (),
            held: None,
        },
    )
}

/// Whether an upstream that drops each segment's `;` parameters before
/// it routes (Tomcat, Jetty, Spring) would read `path` as one that a
/// rule of `site`'s `[[access]]`, `[[auth]]` or `[[rate_limit]]` guards
/// otherwise than brisk judged it: `/admin;x/secret`, which `path =
/// "/admin/"` does not cover, is `/admin/secret` to it. (Parameters that
/// change nothing, `/cart;jsessionid=1`, go on.)
fn guarded_otherwise(site: &crate::config::SiteConfig, path: &[u8]) -> bool {
    if !path.contains(&b';') {
        return false;
    }
    let bare = crate::http::path::without_params(path);
    let folding = &site.folding;
    let differs = |m: &crate::http::glob::PathMatch| {
        m.matches_in(path, folding) != m.matches_in(&bare, folding)
    };
    let rules = &site.admission;
    rules.access.iter().any(|r| differs(&r.matcher))
        || rules.rate.iter().any(|r| differs(&r.matcher))
        || site.auth.iter().any(|r| differs(&r.matcher))
}

/// The target sent: the client's, without the rule's `path` with
/// `strip_prefix` (its `/` kept: `/api/x` under `/api/` goes as `/x`);
/// `path` is the decoded and normalised path that matched the rule.
///
/// The prefix is taken off the raw target as the client spelt it, its
/// escapes decoded one byte at a time (`/%61pi/x` goes as `/x`, and
/// `/api%2Fx` as `/x`: the slash ends the prefix), and the rest goes as
/// it came, never decoded and encoded again (`/api/a%2Fb` goes as
/// `/a%2Fb`). That rest must mean, once normalised, what followed the
/// prefix in `path`, so that the upstream sees under its root what the
/// rule matched: a path that reaches the prefix only through dot
/// segments or doubled slashes (`/x/../api/y`, `//api/y`), or whose rest
/// climbs out of it (`/api/../api/y`, whose rest `/../api/y` would leave
/// the upstream's root), is refused (the error says why).
fn strip<'a>(
    rule: &ProxyRule,
    target: &'a [u8],
    path: &[u8],
) -> Result<Cow<'a, [u8]>, &'static str> {
    let PathMatch::Prefix(prefix) = &rule.matches else {
        return Ok(Cow::Borrowed(target));
    };
    if !rule.strip_prefix {
        return Ok(Cow::Borrowed(target));
    }
    let keep = prefix.strip_suffix('/').unwrap_or(prefix).as_bytes();
    let (raw, query) = split_target(target);
    let Some(after) = spelt_prefix(raw, keep) else {
        return Err("its path reaches the prefix through dot segments or doubled slashes");
    };
    let rest = &raw[after..];
    let rest = match rest {
        [] => &b""[..],
        [b'/', ..] => rest,
        [b'%', b'2', b'f' | b'F', tail @ ..] => tail,
        // (`/apix` under `path = "/api"`: not the prefix as a segment.)
        _ => return Ok(Cow::Borrowed(target)),
    };
    let mut sent = Vec::with_capacity(target.len() + 1);
    if !rest.starts_with(b"/") {
        sent.push(b'/');
    }
    sent.extend_from_slice(rest);
    let meant = match &path[keep.len().min(path.len())..] {
        [] => &b"/"[..],
        meant => meant,
    };
    let mut normal = Vec::new();
    if decode_and_normalize(&sent, &mut normal).is_err() || normal != meant {
        return Err("the rest of its path leaves the prefix (dot segments)");
    }
    if let Some(q) = query {
        sent.push(b'?');
        sent.extend_from_slice(q);
    }
    Ok(Cow::Owned(sent))
}

/// Where `keep` ends in the raw path `raw` spelt with escapes or not
/// (each `%XX` one byte), if `raw` starts with it.
fn spelt_prefix(raw: &[u8], keep: &[u8]) -> Option<usize> {
    let mut i = 0;
    for &want in keep {
        let got = match raw.get(i)? {
            b'%' => {
                let hi = hex_value(*raw.get(i + 1)?)?;
                let lo = hex_value(*raw.get(i + 2)?)?;
                i += 3;
                hi << 4 | lo
            }
            &b => {
                i += 1;
                b
            }
        };
        if got != want {
            return None;
        }
    }
    Some(i)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `path = "/api/"`, `strip_prefix = true`.
    fn api_rule() -> ProxyRule {
        ProxyRule {
            matches: PathMatch::Prefix("/api/".into()),
            strip_prefix: true,
            ..ProxyRule::default()
        }
    }

    /// What `target` goes as under `path = "/api/"`, `strip_prefix`.
    fn stripped(rule: &ProxyRule, target: &str) -> Result<String, &'static str> {
        let (raw, _) = split_target(target.as_bytes());
        let mut path = Vec::new();
        decode_and_normalize(raw, &mut path).unwrap();
        assert!(rule.matches.matches(&path), "{target} is the rule's");
        let sent = strip(rule, target.as_bytes(), &path)?;
        Ok(String::from_utf8(sent.into_owned()).unwrap())
    }

    #[test]
    fn strip_prefix_keeps_the_slash() {
        let rule = api_rule();
        assert_eq!(stripped(&rule, "/api/users?id=3").unwrap(), "/users?id=3");
        assert_eq!(stripped(&rule, "/api/").unwrap(), "/");
        let kept = ProxyRule {
            strip_prefix: false,
            ..rule.clone()
        };
        assert_eq!(stripped(&kept, "/api/users").unwrap(), "/api/users");
        let bare = ProxyRule {
            matches: PathMatch::Prefix("/api".into()),
            ..rule
        };
        assert_eq!(stripped(&bare, "/api").unwrap(), "/");
        assert_eq!(stripped(&bare, "/api?q").unwrap(), "/?q");
        assert_eq!(stripped(&bare, "/apix/y").unwrap(), "/apix/y");
    }

    #[test]
    fn strip_prefix_takes_an_encoded_prefix_off_and_sends_the_rest_as_written() {
        let rule = api_rule();
        let ok = |t| stripped(&rule, t).unwrap();
        assert_eq!(ok("/%61pi/users?id=%61"), "/users?id=%61");
        assert_eq!(ok("/%61%70%69%2fusers"), "/users");
        assert_eq!(ok("/api%2Fusers"), "/users");
        // The rest is never decoded: an encoded slash or letter stays so.
        assert_eq!(ok("/%61pi/a%2Fb/%63"), "/a%2Fb/%63");
        assert_eq!(ok("/api/%2Fb"), "/%2Fb");
        // Dot segments within the rest stay within it.
        assert_eq!(ok("/%61pi/x/../y"), "/x/../y");
        assert_eq!(ok("/api/x/%2e%2e/y"), "/x/%2e%2e/y");
        for refused in [
            "/api/../api/x",
            "/api/%2e%2e/api/x",
            "/api/..%2Fapi/x",
            "/%61pi/./../api/x",
            "/x/../api/y",
            "//api/y",
            "/./api/y",
        ] {
            assert!(stripped(&rule, refused).is_err(), "{refused}");
        }
    }
}
