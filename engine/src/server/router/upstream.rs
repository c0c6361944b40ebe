//! The reverse-proxy stage (`[[reverse_proxy]]`, after the mounts and
//! before CGI): the first rule of the site whose `path` or `pattern`
//! matches forwards the request. The router decides what goes: the
//! upstream (each in turn), the re-framed request head with who the
//! client is, and how the answer is passed on; the worker connects and
//! pumps it (see `server::worker::upstream`).

use super::{Router, Routing, Step};
use crate::config::{HostMode, PathMatch, ProxyRule, Upstream};
use crate::handlers::proxy::body::{Answer, Options};
use crate::handlers::proxy::pool::Keep;
use crate::handlers::proxy::request::{write_head, BodyOut, Forward};
use crate::handlers::proxy::UpstreamPlan;
use crate::handlers::{Body, Plan};
use crate::http::parse::{self, BodyFraming};
use crate::http::request::{OwnedRequest, MAX_HEADERS};
use crate::http::{Method, Status};

impl Router {
    /// The reverse-proxy stage: the request goes to an upstream of the
    /// first rule that matches its path.
    pub(super) fn reverse_proxy(&mut self, routing: &mut Routing<'_>) -> Step {
        let cfg = std::sync::Arc::clone(&self.cfg);
        let rules = &cfg.site(routing.req.site()).reverse_proxy;
        let Some(rule) = rules
            .iter()
            .find(|r| r.matches.matches(&routing.scratch.path))
        else {
            return Step::Next;
        };
        self.proxy_turn = self.proxy_turn.wrapping_add(1);
        let to = &rule.to[self.proxy_turn % rule.to.len()];
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
        Step::Answer(Plan {
            // (The status is the upstream's, from its answer's head.)
            status: Status::OK,
            body: Body::Upstream(Box::new(plan)),
            close: false,
        })
    }
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
    let host: &[u8] = match (rule.host, to) {
        (HostMode::Client, _) if req.host().is_some() => req.host().unwrap_or_default(),
        (_, Upstream::Tcp { addr, host, tls }) => {
            let default = if *tls { 443 } else { 80 };
            own_host = match addr.port() {
                p if p == default => host.clone(),
                p => format!("{host}:{p}"),
            };
            own_host.as_bytes()
        }
        (_, Upstream::Unix(_)) => b"localhost",
    };
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
        upgrade: false,
        set: &rule.headers.set,
        remove: &rule.headers.remove,
    };
    let mut head = Vec::new();
    write_head(&mut head, req, &f);
    let label = match to {
        Upstream::Tcp { addr, .. } => format!("proxy http://{addr}"),
        Upstream::Unix(p) => format!("proxy unix:{}", p.display()),
    };
    UpstreamPlan {
        to: to.clone(),
        head,
        opts: Options {
            label,
            body,
            head_request: req.method() == Method::Head,
            connect_timeout: rule.connect_timeout,
            read_timeout: rule.read_timeout,
            limits: parse::Limits {
                max_request_line: limits.max_request_line,
                max_head: limits.max_header_bytes,
                max_headers: limits.max_headers.min(MAX_HEADERS),
            },
            max_trailers: limits.max_header_bytes,
            answer: Answer {
                edits: rule.response_headers.clone(),
                via: rule.via,
                server: rule.server,
            },
            keep: None,
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
