//! The WebDAV stage (`[[webdav]]`, after the mounts and before the
//! reverse proxy): the first rule of the site whose prefix the request's
//! path starts with answers it, by `handlers::webdav` (GET and HEAD by
//! the static handler over the rule's root, with the site's rules).

use super::{Deferred, Resume, Resumed, Router, Routing, Step};
use crate::ascii::IgnoreCase;
use crate::handlers::spool::Spool;
use crate::handlers::static_files;
use crate::handlers::stream::{Later, Source, Streamed};
use crate::handlers::webdav::{self, Bodied, Change, Changed, Dav, Put, Started};
use crate::handlers::{Body, Plan};
use crate::http::parse::BodyFraming;
use crate::http::range::parse_content_range;
use crate::http::{path, Method, Status};
use crate::sys::fs::Kind;
use std::sync::Arc;

impl Router {
    /// The WebDAV stage.
    pub(super) fn webdav(&mut self, routing: &mut Routing<'_>) -> Step {
        let site = routing.req.site();
        let Some(rules) = self.webdav.get(site).filter(|r| !r.is_empty()) else {
            return Step::Next;
        };
        let path = &routing.scratch.path;
        let Some((i, skip)) = rules
            .iter()
            .enumerate()
            .find_map(|(i, d)| Some((i, d.takes(path)?)))
        else {
            return Step::Next;
        };
        let dav = &rules[i];
        let s = &mut *routing.scratch;
        let req = &*routing.req;
        if path::has_own_segment(&s.path) {
            // (The sidecar store of dead properties, a PUT's link: never
            // served.)
            return Step::Answer(webdav::bare(Status::NOT_FOUND));
        }
        let dotfiles = dav.files.site().static_files.dotfiles;
        if dotfiles.refuses(&s.path) {
            // (What the static handler answers, whatever the method.)
            s.refuse(crate::handlers::Refusal::Dotfile);
            let status = static_files::dotfile_status(&dav.files);
            return Step::Answer(webdav::bare(status));
        }
        let method = req.method_token();
        let writes = matches!(
            method,
            b"PUT" | b"DELETE" | b"MKCOL" | b"COPY" | b"MOVE" | b"PROPPATCH"
        ) || dav.rule.locks && matches!(method, b"LOCK" | b"UNLOCK");
        // (LOCK and UNLOCK change what a client may do: not on a share
        // that is read only, class 2 or not.)
        if (writes || matches!(method, b"LOCK" | b"UNLOCK")) && dav.rule.read_only {
            s.header("Allow", dav.allow());
            return Step::Answer(webdav::bare(Status::METHOD_NOT_ALLOWED));
        }
        let rel = s.path[skip..].to_vec();
        // (COPY and MOVE: where to, a path beneath this rule.)
        let (mut to, mut to_skip) = (Vec::new(), 0);
        if matches!(method, b"COPY" | b"MOVE") {
            match destination((rules, i), req.header("Destination"), req.host(), &mut to) {
                Ok(skip) => to_skip = skip,
                Err(plan) if plan.status == Status::BAD_GATEWAY => {
                    return Step::Answer(super::destination_refused(routing, plan))
                }
                Err(plan) => return Step::Answer(plan),
            }
        }
        // What DELETE or MOVE takes away, or a COPY or MOVE replaces,
        // may hold another rule's prefix: that tree is not this rule's
        // (its read_only and locks are its own), and its members go only
        // through it (a read of them, COPY's source, passes).
        let nested = |path: &[u8]| {
            let under = |prefix: &[u8]| {
                prefix.len() > path.len()
                    && prefix.starts_with(path)
                    && (path.ends_with(b"/") || prefix[path.len()] == b'/')
            };
            (rules.iter().enumerate()).any(|(j, d)| j != i && under(d.rule.path.as_bytes()))
        };
        if matches!(method, b"DELETE" | b"MOVE") && nested(&s.path)
            || matches!(method, b"COPY" | b"MOVE") && nested(&to)
        {
            s.refuse(crate::handlers::Refusal::NestedTree);
            return Step::Answer(webdav::bare(Status::FORBIDDEN));
        }
        if !matches!(method, b"GET" | b"HEAD" | b"OPTIONS") {
            // (GET and HEAD: the static handler knows them too.)
            if let Some((status, why, file)) = webdav::keeps_own(dav, method, &rel, &to[to_skip..])
            {
                s.refuse_file(why, &file);
                return Step::Answer(webdav::bare(status));
            }
        }
        // (A path that ends in a slash names a collection: a file there
        // is no such resource, to every method as to GET, which answers
        // 404. PROPFIND listed the file under that href and DELETE
        // removed it; Apache answers 400, lighttpd 403.)
        if !matches!(method, b"GET" | b"HEAD" | b"OPTIONS" | b"PUT" | b"MKCOL") {
            if let Some(file) = rel.strip_suffix(b"/").filter(|f| !f.is_empty()) {
                if dav
                    .files
                    .root()
                    .stat(file)
                    .is_ok_and(|(_, m)| m.kind != Kind::Dir)
                {
                    return Step::Answer(webdav::bare(Status::NOT_FOUND));
                }
            }
        }
        let changes = match dav.rule.locks {
            true => changes(dav, method, &rel, &to[to_skip..]),
            false => Vec::new(),
        };
        if let Err(plan) = webdav::guard(dav, req, &rel, &changes, s) {
            return Step::Answer(plan);
        }
        // (Every method's, against the request's resource, RFC 9110
        // §13.1.1, §13.2.1: GET's and HEAD's are the static handler's.)
        if !matches!(method, b"GET" | b"HEAD") {
            if let Some(status) = webdav::precondition(dav, &rel, req) {
                return Step::Answer(webdav::bare(status));
            }
        }
        let plan = match method {
            b"GET" | b"HEAD" => {
                self.cache.for_written_tree(dav.cache_key);
                // (Looked up as the site's files are, off the loop where
                // that would wait; what was looked up for this request
                // just now is what it is served, not asked again.)
                #[cfg(feature = "cold-lookups")]
                {
                    if routing.lent {
                        self.cache.trust_lately();
                    }
                    self.cache.wait_cold(!routing.cold);
                }
                let plan = static_files::serve_beneath(&dav.files, req, s, &mut self.cache, skip);
                #[cfg(feature = "cold-lookups")]
                self.cache.for_written_tree(dav.cache_key);
                #[cfg(feature = "cold-lookups")]
                if let Some(rel) = self.cache.went_cold() {
                    self.cold_seq += 1;
                    let seq = self.cold_seq;
                    let tree = super::Looking::Tree { tree: i, rel, seq };
                    return Step::Defer(Deferred::Cold(super::Cold::new(site, tree)));
                }
                // (A collection's index file is judged as its own path.)
                if let Some(step) = self.guard_index(routing) {
                    return step;
                }
                plan
            }
            b"OPTIONS" => webdav::options(dav, s),
            b"PUT" => {
                let max = dav.rule.max_upload.unwrap_or(self.cfg.limits.max_body);
                // A coded body would be kept as its coding's bytes, and
                // served as if it were the file (RFC 9110 §8.4: 415).
                if req
                    .header("Content-Encoding")
                    .is_some_and(|c| !c.eq_ignore_case(b"identity"))
                {
                    return Step::Answer(webdav::bare(Status::UNSUPPORTED_MEDIA_TYPE));
                }
                // (Two `Content-Range` lines are no single range: RFC 9110
                // §5.3, a field that is not a list. 400, not the first.)
                let ranges = req
                    .headers()
                    .filter(|h| h.name.eq_ignore_case(b"content-range"));
                let range = match (
                    req.header("Content-Range").map(parse_content_range),
                    ranges.count(),
                ) {
                    (None, _) => None,
                    (Some(Some((range, _))), 1) => Some(range),
                    _ => return Step::Answer(webdav::bare(Status::BAD_REQUEST)),
                };
                match webdav::put(
                    dav,
                    &rel,
                    req.body(),
                    max,
                    range,
                    webdav::Conditions::of(req),
                    s,
                ) {
                    Started::Answer(plan) => plan,
                    Started::Upload(put) if req.bodiless() => {
                        let mut put = put;
                        let body = put.take_body();
                        self.finish_put(put, body, routing)
                    }
                    Started::Upload(mut put) => {
                        put.recheck_locks(webdav::Recheck::of(dav, req, &rel));
                        return Step::Defer(Deferred::WholeBody(Resume(Resumed::Put(Some(put)))));
                    }
                }
            }
            b"MKCOL" => {
                let change = Change::Mkcol {
                    rel,
                    framing: req.body(),
                };
                return Step::Answer(self.change_later(dav, change, routing));
            }
            b"DELETE" => {
                let change = Change::Delete {
                    href: webdav::href(&s.path),
                    rel,
                    depth: req.header("Depth").map(<[u8]>::to_vec),
                };
                return Step::Answer(self.change_later(dav, change, routing));
            }
            b"LOCK" if dav.rule.locks => match req.body() {
                BodyFraming::None | BodyFraming::Length(0) => {
                    let href = webdav::href(&s.path);
                    webdav::lock(dav, &rel, &href, req, None, s)
                }
                BodyFraming::Length(n) if n > webdav::MAX_PROPFIND => {
                    webdav::bare(Status::CONTENT_TOO_LARGE)
                }
                _ => return Step::Defer(bodied(i, skip, Bodied::Lock)),
            },
            b"UNLOCK" if dav.rule.locks => webdav::unlock(dav, &rel, req, s),
            b"PROPFIND" => {
                let members = match webdav::depth(
                    req.header("Depth"),
                    || webdav::is_collection(dav, &rel),
                    s,
                ) {
                    Ok(members) => members,
                    Err(plan) => return Step::Answer(plan),
                };
                match req.body() {
                    BodyFraming::None | BodyFraming::Length(0) => {
                        let href = webdav::href(&s.path);
                        let asked = webdav::Asked::All;
                        return Step::Answer(
                            self.propfind(dav, rel, href, asked, members, routing),
                        );
                    }
                    BodyFraming::Length(n) if n > webdav::MAX_PROPFIND => {
                        webdav::bare(Status::CONTENT_TOO_LARGE)
                    }
                    _ => return Step::Defer(bodied(i, skip, Bodied::Propfind { members })),
                }
            }
            b"PROPPATCH" => match req.body() {
                BodyFraming::None | BodyFraming::Length(0) => webdav::bare(Status::BAD_REQUEST),
                BodyFraming::Length(n) if n > webdav::MAX_PROPFIND => {
                    webdav::bare(Status::CONTENT_TOO_LARGE)
                }
                _ => return Step::Defer(bodied(i, skip, Bodied::Proppatch)),
            },
            b"COPY" | b"MOVE" => {
                let change = Change::Transfer {
                    moving: method == b"MOVE",
                    from: rel,
                    to_href: webdav::href(&to),
                    to: to.split_off(to_skip),
                    depth: req.header("Depth").map(<[u8]>::to_vec),
                    overwrite: req.header("Overwrite").map(<[u8]>::to_vec),
                };
                return Step::Answer(self.change_later(dav, change, routing));
            }
            _ => {
                s.header("Allow", dav.allow());
                let status = match req.method() {
                    Method::Other => Status::NOT_IMPLEMENTED,
                    _ => Status::METHOD_NOT_ALLOWED,
                };
                webdav::bare(status)
            }
        };
        if writes {
            // (Made: no listing kept from before serves. A PUT's file is
            // placed later, and says so again then.)
            webdav::changed();
        }
        // (A GET of a collection lists it off the event loop.)
        let mut plan = plan;
        self.start_later(routing, &mut plan);
        Step::Answer(plan)
    }

    /// Ends PUT `put`, whose body is all in `body`, off the event loop
    /// (`webdav::end_put`): its answer comes later, as a handler's can.
    pub(super) fn finish_put(&self, put: Box<Put>, body: Spool, routing: &mut Routing<'_>) -> Plan {
        later(self, routing, |later| webdav::end_put(put, body, later))
    }

    /// PROPFIND of `rel` (its href `href`) for `asked`: of its members
    /// too (`members`) off the event loop (`webdav::propfind_later`),
    /// their answer coming later; of itself alone at once.
    fn propfind(
        &self,
        dav: &Arc<Dav>,
        rel: Vec<u8>,
        href: Vec<u8>,
        asked: webdav::Asked,
        members: bool,
        routing: &mut Routing<'_>,
    ) -> Plan {
        if !members {
            return webdav::propfind(dav, &rel, &href, &asked, None, routing.scratch).plan();
        }
        let dav = Arc::clone(dav);
        let viewer = webdav::Viewer {
            client: routing.client.peer.ip(),
            path: routing.scratch.path.clone(),
        };
        later(self, routing, |later| {
            webdav::propfind_later(dav, (rel, href), asked, viewer, later)
        })
    }

    /// Makes `change` in `dav`'s tree off the event loop
    /// (`webdav::make_later`): its answer comes later.
    fn change_later(&self, dav: &Arc<Dav>, change: Change, routing: &mut Routing<'_>) -> Plan {
        let dav = Arc::clone(dav);
        later(self, routing, |later| {
            webdav::make_later(dav, change, later)
        })
    }
}

impl Router {
    /// PROPFIND or PROPPATCH (`what`) by rule `rule` (of the request's
    /// site), whose path prefix is `skip` bytes, with the request's whole
    /// body `body`.
    pub(super) fn dav_with(
        &self,
        (rule, skip, what): (usize, usize, Bodied),
        mut body: Spool,
        routing: &mut Routing<'_>,
    ) -> Plan {
        let dav = &self.webdav[routing.req.site()][rule];
        let max = webdav::MAX_PROPFIND;
        let mut bytes = Vec::new();
        if body.len() > max || body.take_error().is_some() || body.rewind().is_err() {
            return webdav::bare(Status::CONTENT_TOO_LARGE);
        }
        while matches!(body.read_into(&mut bytes, max as usize), Ok(1..)) {}
        let s = &mut *routing.scratch;
        s.path.clear();
        if let Ok(path) = routing.req.path() {
            s.path.extend_from_slice(path);
        }
        let rel = s.path[skip.min(s.path.len())..].to_vec();
        let href = webdav::href(&s.path);
        if bytes.starts_with(&[0xFF, 0xFE]) || bytes.starts_with(&[0xFE, 0xFF]) {
            // A UTF-16 body (by its byte order mark): read as UTF-8 only
            // (RFC 4918 §8.2), so 415 (RFC 9110 §15.5.16) that says so.
            let why = "A UTF-16 body: WebDAV bodies are read as UTF-8 only.";
            return unread_body(routing, Status::UNSUPPORTED_MEDIA_TYPE, why);
        }
        if std::str::from_utf8(&bytes).is_err() {
            // (Another encoding, ISO-8859-1's: the same.)
            let why = "A body that is not UTF-8: WebDAV bodies are read as UTF-8 only.";
            return unread_body(routing, Status::UNSUPPORTED_MEDIA_TYPE, why);
        }
        const MALFORMED: &str = "An XML body brisk cannot read: not well-formed, or with a \
            DTD, or nested deeper than 32 elements (webdav.md).";
        let plan = match what {
            Bodied::Propfind { members } => match webdav::asked(&bytes) {
                Some(asked) => return self.propfind(dav, rel, href, asked, members, routing),
                None => return unread_body(routing, Status::BAD_REQUEST, MALFORMED),
            },
            Bodied::Proppatch => match webdav::proppatch_ops(&bytes) {
                Some(ops) => {
                    let change = Change::Proppatch { rel, href, ops };
                    return self.change_later(dav, change, routing);
                }
                None => return unread_body(routing, Status::BAD_REQUEST, MALFORMED),
            },
            Bodied::Lock => webdav::lock(dav, &rel, &href, routing.req, Some(&bytes), s),
        };
        if !matches!(what, Bodied::Propfind { .. }) {
            // (Made: no listing kept from before serves.)
            webdav::changed();
        }
        plan
    }
}

/// The answer to `routing`'s request that `start`, handed its [`Later`],
/// gives from another thread, however long that takes (`patient`: the
/// server's own work on its disk).
fn later(
    router: &Router,
    routing: &mut Routing<'_>,
    start: impl FnOnce(Later) + Send + 'static,
) -> Plan {
    let path = String::from_utf8_lossy(routing.req.path().unwrap_or_default());
    let method = String::from_utf8_lossy(routing.req.method_token());
    let mut plan = Plan {
        status: Status::OK,
        body: Body::Stream(Box::new(Streamed {
            source: Source::Start(Box::new(start)),
            length: None,
            label: format!("webdav: {method} {path}"),
            patient: true,
        })),
        close: false,
    };
    router.start_later(routing, &mut plan);
    plan
}

/// The answer `status` to a request whose XML body cannot be read, `why`
/// its text (plain), said at `info` in the log as well: a client's
/// doing, which neither it nor the operator could tell before.
#[cold]
#[inline(never)]
fn unread_body(routing: &mut Routing<'_>, status: Status, why: &str) -> Plan {
    routing.log.log(
        crate::config::Level::Info,
        format_args!(
            "webdav: {} {}: {why} {}",
            String::from_utf8_lossy(routing.req.method_token()),
            String::from_utf8_lossy(routing.req.target()),
            status.0
        ),
    );
    let s = &mut *routing.scratch;
    s.body.clear();
    s.body.extend_from_slice(why.as_bytes());
    s.body.push(b'\n');
    s.header("Content-Type", b"text/plain; charset=utf-8");
    Plan {
        status,
        body: Body::Buffer,
        close: false,
    }
}

/// Waits for the whole body of a PROPFIND or PROPPATCH (`what`) by rule
/// `rule`, whose prefix is `skip` bytes.
fn bodied(rule: usize, skip: usize, what: Bodied) -> Deferred {
    Deferred::WholeBody(Resume(Resumed::Dav { rule, skip, what }))
}

/// The path a COPY or MOVE's `Destination` (`value`) names, into `to`,
/// and the length of its rule prefix: it must be a path of the same host
/// (`host`) that the request's own rule (`rules[i]`) serves, not another
/// rule nested in it (another tree, with its own `read_only` and lock
/// table): else 502, "on another server" (RFC 4918 §9.8.5, §9.9.4), as
/// Apache answers for another repository; and no dotfile unless
/// `[static] dotfiles` allows them.
fn destination(
    (rules, i): (&[Arc<Dav>], usize),
    value: Option<&[u8]>,
    host: Option<&[u8]>,
    to: &mut Vec<u8>,
) -> Result<usize, Plan> {
    let dav = &rules[i];
    let Some(value) = value else {
        return Err(webdav::bare(Status::BAD_REQUEST));
    };
    webdav::destination(value, host, to).map_err(webdav::bare)?;
    let serving = rules.iter().position(|d| d.takes(to).is_some());
    let Some(skip) = dav.takes(to).filter(|_| serving == Some(i)) else {
        return Err(webdav::bare(Status::BAD_GATEWAY));
    };
    if path::has_own_segment(to) {
        return Err(webdav::bare(Status::FORBIDDEN));
    }
    if dav.files.site().static_files.dotfiles.refuses(to) {
        return Err(webdav::bare(static_files::dotfile_status(&dav.files)));
    }
    Ok(skip)
}

/// What `method` on `rel` (COPY and MOVE: to `to`) changes, for the
/// locks it must hold tokens of (RFC 4918 §7.5: a resource, and the
/// membership of the collection a member comes into or leaves).
fn changes<'a>(dav: &Dav, method: &[u8], rel: &'a [u8], to: &'a [u8]) -> Vec<Changed<'a>> {
    let (here, there) = (webdav::trim(rel), webdav::trim(to));
    let mut out = Vec::with_capacity(4);
    let mut member = |path: &'a [u8], deep: bool| {
        out.push(Changed { path, deep });
        if let Some(collection) = webdav::container(path) {
            out.push(Changed {
                path: collection,
                deep: false,
            });
        }
    };
    match method {
        b"PUT" | b"LOCK" if webdav::is_new(dav, here) => member(here, false),
        b"MKCOL" => member(here, false),
        b"DELETE" => member(here, true),
        b"MOVE" => {
            member(here, true);
            member(there, true);
        }
        b"COPY" => member(there, true),
        b"PUT" | b"PROPPATCH" => out.push(Changed {
            path: here,
            deep: false,
        }),
        _ => {}
    }
    out
}

/// Each site's `[[webdav]]` rules in a worker, by site; their files take
/// cache keys after every site's.
pub(super) fn rules(
    files: &crate::server::sites::SiteFiles,
) -> std::io::Result<Vec<Vec<Arc<Dav>>>> {
    let cfg = &files[0].cfg;
    let mut key = files.len();
    let mut out = Vec::with_capacity(files.len());
    for (i, site) in crate::config::SiteConfig::all(cfg).enumerate() {
        let mut dav = Vec::with_capacity(site.webdav.len());
        for rule in &site.webdav {
            dav.push(Arc::new(Dav::new(
                Arc::clone(cfg),
                i,
                rule,
                Arc::clone(files[i].protected()),
                key,
            )?));
            key += 1;
        }
        out.push(dav);
    }
    Ok(out)
}
