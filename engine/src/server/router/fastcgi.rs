//! The FastCGI stage (`[[fastcgi]]`, after the reverse proxy and before
//! CGI): the first rule of the site that takes the request's path names
//! a script, which must exist beneath the rule's root before anything is
//! sent (else a refusal: 404, 403); the router decides what goes (the
//! application server, as the rule's `balance` picks among those up, or
//! a 503 when every one is down; and the parameters), the worker
//! connects and pumps the answer (see `server::worker::upstream`).

use std::os::unix::ffi::OsStrExt;

use super::{dot_segments_refused, Deferred, Resume, Resumed, Router, Routing, Step};
use crate::config::{FastcgiRule, Level};
use crate::handlers::cgi::content_length;
use crate::handlers::fastcgi::body::{BodyIn, Options};
use crate::handlers::fastcgi::script::{Found, Script};
use crate::handlers::fastcgi::{params, FastcgiPlan};
use crate::handlers::proxy::balance::{Group, Shared, Tries};
use crate::handlers::proxy::pool::Keep;
use crate::handlers::relay::with_request;
use crate::handlers::spool::Spool;
use crate::handlers::{Body, Plan};
use crate::http::parse::BodyFraming;
use crate::http::request::OwnedRequest;
use crate::http::Status;

impl Router {
    /// The FastCGI stage: the script of the first rule that takes the
    /// request's path runs, or the request is refused.
    pub(super) fn fastcgi(&mut self, routing: &mut Routing<'_>) -> Step {
        let site = routing.req.site();
        let Some(scripts) = &mut self.sites[site].fastcgi else {
            return Step::Next;
        };
        let st = &self.files[site].site().static_files;
        if st.dotfiles.refuses(&routing.scratch.path) {
            return Step::Next;
        }
        let protected = self.files[site].protected();
        #[cfg(feature = "cold-lookups")]
        scripts.wait_cold(!routing.cold);
        let found = scripts.find(&routing.scratch.path, protected, routing.client.now);
        // (Whatever was found meanwhile: the request is routed again once
        // the lookups that would have waited are made off the loop.)
        #[cfg(feature = "cold-lookups")]
        {
            let went = scripts.went_cold();
            if !went.is_empty() {
                let scripts = super::Looking::Scripts(went);
                return Step::Defer(Deferred::Cold(super::Cold::new(site, scripts)));
            }
        }
        if let Found::Script(script) = &found {
            let rules = &self.cfg.site(site).fastcgi;
            routing.body_max = rules.get(script.rule).and_then(|r| r.max_body);
            if let Some(refused) = dot_segments_refused(routing, "fastcgi: ") {
                return refused;
            }
        }
        let rules = &self.cfg.site(site).fastcgi;
        match found {
            Found::No => Step::Next,
            Found::Refused(status, why, file) => {
                routing
                    .scratch
                    .refuse_file(why, file.as_os_str().as_bytes());
                Step::Answer(Plan::error(status, routing.scratch))
            }
            // The application is told the body's length: a chunked one
            // is held whole first; so is any with `buffer_request`.
            Found::Script(script) if holds_body(rules.get(script.rule), routing.req.body()) => {
                Step::Defer(Deferred::WholeBody(Resume(Resumed::Fastcgi(script))))
            }
            Found::Script(script) => {
                let plan = self.start_fastcgi(&script, None, routing);
                if let Some(scripts) = &mut self.sites[site].fastcgi {
                    scripts.give_back(script);
                }
                Step::Answer(plan)
            }
        }
    }

    /// Hands `script` with the request to an application server of its
    /// rule; its body is `held` (held whole) or else streams as it
    /// arrives.
    pub(super) fn start_fastcgi(
        &mut self,
        script: &Script,
        mut held: Option<Spool>,
        routing: &mut Routing<'_>,
    ) -> Plan {
        let Some(scripts) = &self.sites[routing.req.site()].fastcgi else {
            return Plan::error(Status::INTERNAL_SERVER_ERROR, routing.scratch);
        };
        if let Some(Err(e)) = held.as_mut().map(Spool::rewind) {
            let label = label(&script.filename, routing.req, Vec::new());
            routing.log.log(
                Level::Error,
                format_args!(
                    "{label}: cannot read back the request body held in a temporary file: {e}"
                ),
            );
            return Plan::told_error(Status::INTERNAL_SERVER_ERROR, routing.scratch);
        }
        let rule = &scripts.rules()[script.rule];
        let req = &*routing.req;
        let group = &self.fastcgi_groups[req.site()][script.rule];
        // (The real client, for ip_hash: behind a trusted proxy, the one
        // it names.)
        let client = req
            .forwarded()
            .map_or(routing.client.peer.ip(), |f| f.addr.ip());
        let Some(index) = group.borrow_mut().pick(client, &[], routing.client.now) else {
            return super::upstream::no_live_upstreams("fastcgi", &rule.matches, group, routing);
        };
        let tries = Tries::new(group, index, client);
        let to = &rule.to[index];
        let length = content_length(held.as_ref(), req.body());
        let root = scripts.root(script.rule);
        // (In a buffer an answer before gave back: see `Pool::buffer`.)
        let out = self.upstream_pool.borrow_mut().buffer();
        let params = params(
            script,
            req,
            routing.client.ends(),
            root,
            length,
            &rule.env,
            out,
        );
        let body = match (held, length) {
            (Some(spool), _) => BodyIn::Held(spool),
            (None, None | Some(0)) => BodyIn::None,
            (None, Some(_)) => BodyIn::Stream,
        };
        // (Made in the box of a plan before, if any, where it is written
        // at once: see `Worker::start_fastcgi`.)
        let empty = self.upstream_pool.borrow_mut().boxes.empty();
        let plan = Box::write(
            empty,
            FastcgiPlan {
                tries,
                idempotent: req.method().is_idempotent(),
                params,
                body,
                opts: Options {
                    // (In a buffer an answer before gave back: see
                    // `FastcgiBody`'s drop.)
                    label: label(
                        &script.filename,
                        req,
                        self.upstream_pool.borrow_mut().buffer(),
                    ),
                    connect_timeout: rule.connect_timeout,
                    read_timeout: rule.read_timeout,
                    send_timeout: rule.send_timeout,
                    max_head: self.cfg.limits.cgi_header_bytes,
                    keep: (rule.keepalive > 0).then(|| Keep {
                        pool: std::rc::Rc::clone(&self.upstream_pool),
                        to: to.clone(),
                        max: rule.keepalive,
                        timeout: rule.keepalive_timeout,
                    }),
                    hold: rule.buffer_answer,
                    temp: (rule.buffer_answer > 0).then(|| std::sync::Arc::clone(&self.cfg)),
                },
            },
        );
        Plan {
            // (The status is the application's, from its answer's head.)
            status: Status::OK,
            body: Body::Fastcgi(plan),
            close: false,
        }
    }
}

/// Whether a request with a body framed as `body` waits for it whole
/// before its application is connected to (under `rule`).
fn holds_body(rule: Option<&FastcgiRule>, body: BodyFraming) -> bool {
    match body {
        BodyFraming::None | BodyFraming::Length(0) => false,
        BodyFraming::Chunked => true,
        _ => rule.is_some_and(|r| r.buffer_request),
    }
}

/// The state of `rule`'s servers in one worker.
pub(super) fn group(rule: &FastcgiRule) -> Shared {
    std::rc::Rc::new(std::cell::RefCell::new(Group::fastcgi(rule)))
}

/// The label of request `req` for `script` in the log, which every line
/// about it starts with: `fastcgi FILE ("GET /target")` (see
/// [`with_request`]). Written in `label` (empty).
fn label(script: &std::path::Path, req: &OwnedRequest, mut label: Vec<u8>) -> String {
    let name = script.as_os_str().as_bytes();
    label.reserve(16 + name.len() + req.method_token().len() + req.target().len());
    label.extend_from_slice(b"fastcgi ");
    label.extend_from_slice(name);
    with_request(label, req.method_token(), req.target())
}

#[cfg(test)]
mod tests {
    /// The label: the file's name (decoded lossily when it is not UTF-8),
    /// then the request line's method and target as sent, escaped.
    #[test]
    fn a_label_names_the_file_and_the_request() {
        use std::os::unix::ffi::OsStrExt;
        let mut req = crate::http::request::OwnedRequest::default();
        let limits = crate::http::parse::Limits {
            max_request_line: 8192,
            max_head: 8192,
            max_headers: 100,
        };
        let head = b"GET /it's/caf%C3%A9.php?a=\\ HTTP/1.1\r\nHost: h\r\n\r\n";
        assert!(req.parse(head, &limits).unwrap().is_some());
        let file = std::path::Path::new(std::ffi::OsStr::from_bytes(b"/srv/caf\xe9.php"));
        assert_eq!(
            super::label(file, &req, Vec::new()),
            "fastcgi /srv/caf\u{fffd}.php (\"GET /it\\'s/caf%C3%A9.php?a=\\\\\")"
        );
    }

    /// The plain bytes' way and `escape_debug`'s agree on what each
    /// escapes (the quotes, `\`, controls, other scripts).
    #[test]
    fn a_label_escapes_as_escape_debug_does() {
        for s in [
            &b"/index.php?a=1&b=%20"[..],
            b"/a\"b'c\\d",
            b"/\x01\x7f\t",
            "/caf\u{e9}/\u{301}x".as_bytes(),
            b"/\xff\xfe",
            b"",
        ] {
            let mut out = Vec::new();
            crate::handlers::relay::push_escaped(&mut out, s);
            let want = String::from_utf8_lossy(s).escape_debug().to_string();
            assert_eq!(out, want.as_bytes(), "{s:?}");
        }
    }
}
