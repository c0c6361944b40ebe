//! The router's rules stage and the finishing of every answer: see
//! the module documentation of [`super`].

use super::{Router, Routing};
use crate::config::rules::{Scheme, MAX_REWRITES};
use crate::config::Level;
use crate::handlers::rewrite::{self, Outcome};
use crate::handlers::{cors, fallback, Body, Plan, Scratch};
use crate::http::request::OwnedRequest;
use crate::http::{Method, Status};
use crate::log::Logger;

impl Router {
    /// The rules stage: a redirect or a rewrite loop (500) answers; a
    /// rewrite changes the request.
    pub(super) fn url_rules(&mut self, routing: &mut Routing<'_>) -> Option<Plan> {
        let rules = &self.cfg.site(routing.req.site()).rules;
        if !rules.url.is_empty() {
            let https = routing.req.https(routing.client.tls.is_some());
            let client = routing.client;
            let cx = rewrite::Context {
                scheme: if https { Scheme::Https } else { Scheme::Http },
                https_port: self.cfg.https_port(),
                local: &|| client.local_addr(),
                hosts: &self.cfg.site(routing.req.site()).hosts,
            };
            match rewrite::apply(&rules.url, routing.req, cx, &mut self.target) {
                Outcome::Route => {}
                Outcome::Redirect(status) => {
                    routing.scratch.header("Location", &self.target);
                    return Some(Plan::error(Status(status), routing.scratch));
                }
                Outcome::Loop(origin) => {
                    routing.log.log(
                        Level::Error,
                        format_args!(
                            "{}: rewritten {} times, the last by the rule at {origin}; answered 500 (does a rule's target match its own from?)",
                            String::from_utf8_lossy(routing.req.original_target()),
                            MAX_REWRITES
                        ),
                    );
                    return Some(Plan::told_error(
                        Status::INTERNAL_SERVER_ERROR,
                        routing.scratch,
                    ));
                }
            }
        }
        None
    }

    /// The CORS preflight of a `[[cors]]` rule, which answers.
    pub(super) fn preflight(&mut self, routing: &mut Routing<'_>) -> Option<Plan> {
        let rules = &self.cfg.site(routing.req.site()).rules;
        let path = routing.req.path().ok()?;
        let rule = cors::rule_for(&rules.cors, path)?;
        cors::preflight(rule, routing.req, routing.scratch)
    }

    /// Finishes the answer `plan` to `req` (any answer but a CGI
    /// program's: see [`Router::finish_reply`]): a built-in error page
    /// becomes the site's own (`[errors]`), and a `[[cors]]` rule adds
    /// its headers (the preflight it answered has them).
    pub fn finish(
        &mut self,
        req: &OwnedRequest,
        plan: &mut Plan,
        s: &mut Scratch,
        log: &mut Logger,
    ) {
        if !self.has_rules() || matches!(plan.body, Body::Pipe(_)) || plan.body.is_upstream() {
            return;
        }
        let site = req.site();
        let rules = &self.cfg.site(site).rules;
        if !rules.errors.is_empty() {
            // (The page is a file of the request's site.)
            self.cache.for_site(site);
            let files = &self.files[site];
            fallback::error_page(files, &rules.errors, &mut self.cache, plan, s, log);
        }
        let Ok(path) = req.path() else { return };
        let Some(rule) = cors::rule_for(&rules.cors, path) else {
            return;
        };
        let preflight = req.method() == Method::Options
            && req.header("access-control-request-method").is_some()
            && plan.status == Status::NO_CONTENT;
        if !preflight {
            cors::decorate(rule, req, &mut s.headers);
        }
    }

    /// Adds a `[[cors]]` rule's headers to the head a CGI program wrote
    /// (`lines`), for `req`, unless the program wrote its own.
    pub fn finish_reply(&self, req: &OwnedRequest, lines: &mut Vec<u8>) {
        if !self.has_rules() {
            return;
        }
        let rules = &self.cfg.site(req.site()).rules;
        let Ok(path) = req.path() else { return };
        if let Some(rule) = cors::rule_for(&rules.cors, path) {
            cors::decorate(rule, req, lines);
        }
    }

    /// Finishes an error the engine answers for `site` without a routed
    /// request at hand: one that could not be read (a head too large, a
    /// bad request line: no host, so the default site, 0), or a CGI
    /// program's or a stream's failure before it answered. The site's
    /// page, if it has one.
    pub fn finish_unread(
        &mut self,
        site: usize,
        plan: &mut Plan,
        s: &mut Scratch,
        log: &mut Logger,
    ) {
        if !self.has_rules() {
            return;
        }
        let errors = &self.cfg.site(site).rules.errors;
        if !errors.is_empty() {
            self.cache.for_site(site);
            fallback::error_page(&self.files[site], errors, &mut self.cache, plan, s, log);
        }
    }
}
