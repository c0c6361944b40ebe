//! The reverse-proxy stage (`[[reverse_proxy]]`, after the mounts and
//! before CGI): the first rule of the site whose `path` or `pattern`
//! matches forwards the request. The router decides what goes: the
//! upstream (each in turn), the re-framed request head with who the
//! client is, and how the answer is passed on; the worker connects and
//! pumps it (see `server::worker::upstream`).

use super::{Router, Routing, Step};
use crate::config::{HostMode, PathMatch, ProxyRule, Upstream};
use crate::handlers::proxy::balance::{Group, Shared};
use crate::handlers::proxy::body::{Answer, Options, Turn};
use crate::handlers::proxy::dial;
use crate::handlers::proxy::pool::Keep;
use crate::handlers::proxy::request::{write_head, BodyOut, Forward};
use crate::handlers::proxy::UpstreamPlan;
use crate::handlers::{Body, Plan};
use crate::http::grammar::has_token;
use crate::http::parse::{self, BodyFraming};
use crate::http::request::{OwnedRequest, MAX_HEADERS};
use crate::http::{Method, Status, Version};

impl Router {
    /// Whether a `[[reverse_proxy]]` rule of the request's site takes
    /// its path (so a WebSocket handshake goes there, not refused).
    pub(super) fn proxies(&self, routing: &Routing<'_>) -> bool {
        let rules = &self.cfg.site(routing.req.site()).reverse_proxy;
        rules
            .iter()
            .any(|r| r.matches.matches(&routing.scratch.path))
    }

    /// The reverse-proxy stage: the request goes to an upstream of the
    /// first rule that matches its path.
    pub(super) fn reverse_proxy(&mut self, routing: &mut Routing<'_>) -> Step {
        let cfg = std::sync::Arc::clone(&self.cfg);
        let site = routing.req.site();
        let rules = &cfg.site(site).reverse_proxy;
        let Some((i, rule)) = rules
            .iter()
            .enumerate()
            .find(|(_, r)| r.matches.matches(&routing.scratch.path))
        else {
            return Step::Next;
        };
        let Some(group) = self.proxy_groups.get(site).and_then(|g| g.get(i)) else {
            return Step::Next;
        };
        // (The real client: behind a trusted proxy, the one it names.)
        let client = match routing.req.forwarded() {
            Some(f) => f.addr.ip(),
            None => routing.client.peer.ip(),
        };
        let picked = group.borrow_mut().pick(client, &[], routing.client.now);
        let Some(index) = picked else {
            routing.log.log(
                crate::config::Level::Error,
                format_args!(
                    "reverse proxy: every upstream for {} is down; 503",
                    String::from_utf8_lossy(&routing.scratch.path)
                ),
            );
            return Step::Answer(Plan::error(Status::SERVICE_UNAVAILABLE, routing.scratch));
        };
        let to = &rule.to[index];
        if matches!(to, Upstream::Tcp { tls: true, .. }) {
            // (https upstreams come with the TLS client: issue #27, S7.)
            routing.log.log(
                crate::config::Level::Error,
                format_args!("reverse proxy: https upstreams are not supported yet; 502"),
            );
            return Step::Answer(Plan::error(Status::BAD_GATEWAY, routing.scratch));
        }
        let mut plan = upstream_plan(rule, to, routing, &cfg.limits);
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
            body: Body::Upstream(Box::new(plan)),
            close: false,
        })
    }
}

/// The state of `rule`'s upstreams in one worker.
pub(super) fn group(rule: &ProxyRule) -> Shared {
    std::rc::Rc::new(std::cell::RefCell::new(Group::new(rule)))
}

/// What the request `routing` holds is sent to upstream `to` of `rule`.
fn upstream_plan(
    rule: &ProxyRule,
    to: &Upstream,
    routing: &Routing<'_>,
    limits: &crate::config::Limits,
) -> UpstreamPlan {
    let req: &OwnedRequest = routing.req;
    let body = match req.body() {
        BodyFraming::None => BodyOut::None,
        BodyFraming::Length(n) => BodyOut::Length(n),
        BodyFraming::Chunked => BodyOut::Chunked,
    };
    let own_host;
    let host: &[u8] = match (rule.host, req.host()) {
        (HostMode::Client, Some(host)) => host,
        _ => {
            own_host = dial::own_host(to);
            own_host.as_bytes()
        }
    };
    // A switch of protocols (RFC 9110 §7.8: `Upgrade`, named by
    // `Connection`) goes on where the rule lets it, for a request with
    // no body; otherwise the request goes without its `Upgrade`. (An
    // HTTP/2 request has an `Upgrade` only as an extended CONNECT's
    // handshake: see `server::h2::request`.)
    let upgrade = rule.websocket
        && req.version() != Version::Http10
        && body == BodyOut::None
        && req.header("upgrade").is_some()
        && req
            .headers()
            .filter(|h| h.name.eq_ignore_ascii_case(b"connection"))
            .any(|h| has_token(h.value, b"upgrade"));
    let forwarded = req.forwarded();
    let https = forwarded
        .and_then(|f| f.https)
        .unwrap_or(routing.client.tls.is_some());
    let f = Forward {
        target: strip(rule, req.target()),
        host,
        client: routing.client.peer,
        https,
        trusted: forwarded.is_some(),
        via: rule.via,
        body,
        upgrade,
        set: &rule.headers.set,
        remove: &rule.headers.remove,
    };
    let mut head = Vec::new();
    write_head(&mut head, req, &f);
    UpstreamPlan {
        to: to.clone(),
        head,
        opts: Options {
            label: dial::label(to),
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
            answer: Answer {
                edits: rule.response_headers.clone(),
                via: rule.via,
            },
            keep: None,
            upgrade,
            connect: upgrade && req.version() == Version::Http2,
            turn: None,
        },
    }
}

/// The target sent: the client's, without the rule's `path` with
/// `strip_prefix` (its `/` kept: `/api/x` under `/api/` goes as `/x`).
/// A target spelt otherwise than the prefix (`/%61pi/x`) goes as it is.
fn strip<'a>(rule: &ProxyRule, target: &'a [u8]) -> &'a [u8] {
    let PathMatch::Prefix(prefix) = &rule.matches else {
        return target;
    };
    if !rule.strip_prefix {
        return target;
    }
    let keep = prefix.strip_suffix('/').unwrap_or(prefix);
    match target.strip_prefix(keep.as_bytes()) {
        Some(rest) if rest.starts_with(b"/") => rest,
        // (`/api` itself: the root.)
        Some([]) => b"/",
        _ => target,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strip_prefix_keeps_the_slash() {
        let rule = ProxyRule {
            matches: PathMatch::Prefix("/api/".into()),
            strip_prefix: true,
            ..ProxyRule::default()
        };
        assert_eq!(strip(&rule, b"/api/users?id=3"), b"/users?id=3");
        assert_eq!(strip(&rule, b"/api"), b"/");
        assert_eq!(strip(&rule, b"/apix/y"), b"/apix/y");
        let kept = ProxyRule {
            strip_prefix: false,
            ..rule
        };
        assert_eq!(strip(&kept, b"/api/users"), b"/api/users");
    }
}
