//! The router: one chain of stages over one [`OwnedRequest`], in the
//! style of h2o's handler chain. Each stage looks at the request and
//! answers it (Answer), defers it until something is in (Defer: a
//! password check, its body; see [`Deferred`]), or leaves it to the next
//! stage (Next):
//!
//! 0. **rules**: `[[redirect]]` and `[[rewrite]]` (a redirect answers;
//!    a rewrite changes the request every later stage sees, so no
//!    rewrite can get round `[[auth]]`), then (after the admission
//!    stage below) the CORS preflight of a `[[cors]]` rule (answered
//!    before auth: a preflight carries no credentials);
//! 1. **admission**, on the client's real address (after `[proxy]`
//!    has named it): `[[access]]` (403), then `[[rate_limit]]` (429 with
//!    `Retry-After`); after the rewrites, so that no rewrite gets round
//!    them, and before the CORS preflight and auth, so that a refused
//!    client learns nothing more and costs no password check;
//! 2. **auth**: `[[auth]]` rules (401, 429, or the user recorded in the
//!    request);
//! 3. **mounts**: embedded handlers (see [`crate::handlers::app`]);
//! 4. **reverse proxy**: `[[reverse_proxy]]` rules (the request goes to
//!    an upstream: `router::upstream`);
//!    **FastCGI**: `[[fastcgi]]` rules (a script beneath the rule's root
//!    goes to an application server, or a refusal: `router::fastcgi`);
//! 5. **CGI**: `[[cgi]]` rules (a script, or a refusal: a script's source
//!    is never left to the static handler);
//! 6. **static files**, which answer everything that reaches them
//!    (with `try_files` / `spa` where a file is missing).
//!
//! Whatever answers, [`Router::finish`] then makes a built-in error page
//! the site's own (`[errors]`) and adds a `[[cors]]` rule's headers.
//!
//! Every stage matches the request's decoded, normalised path, so no
//! spelling of a path (`/%70rivate/`, `//private/./`) slips by one. A
//! path that does not decode goes straight to the static stage, whose
//! answer is 400.

use crate::ascii::IgnoreCase;
use std::io;
use std::net::SocketAddr;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::rc::Rc;
use std::sync::Arc;
use std::time::Instant;

use crate::access::rate::RateTable;
use crate::access::{Auth, Check, Checked, SharedFailures, Verdict};
use crate::config::{Config, Level, SiteConfig};
use crate::handlers::app::{self, Answer, Mount, Response};
use crate::handlers::cgi::{Cgi, Ends, Resolved, Script};
use crate::handlers::fallback;
use crate::handlers::file_cache::FileCache;
use crate::handlers::spool::Spool;
use crate::handlers::static_files::{self, apply_header_rules_to_handler};
use crate::handlers::stream::{Awaited, Channel, Later, Source, Streamed, Wake};
use crate::handlers::Source as FileSource;
use crate::handlers::{Body, Plan, Scratch};
use crate::http::glob::Reach;
use crate::http::parse::{BodyFraming, Header};
use crate::http::request::{Field, OwnedRequest, FEW_HEADERS, MAX_HEADERS};
use crate::http::{Status, TlsSession};
use crate::log::Logger;
use crate::server::sites::{Pick, SiteFiles, SiteMounts, Sites};
use crate::sys::launcher::Launchers;

mod admission;
#[cfg(feature = "upstreams")]
mod fastcgi;
mod rules;
#[cfg(feature = "upstreams")]
mod upstream;
#[cfg(feature = "webdav")]
mod webdav;

/// What the chain makes of a request.
#[derive(Debug)]
pub enum Routed {
    /// Answer with this plan (its header lines and body bytes in the
    /// scratch buffers).
    Answer(Plan),
    /// Not answerable yet: see [`Deferred`].
    Defer(Deferred),
}

/// Why a request cannot be answered yet, and who answers it once it can.
#[derive(Debug)]
pub enum Deferred {
    /// Its password must be hashed off the event loop first; once the
    /// outcome is settled ([`Router::settle`]) the request is routed
    /// again from the start.
    Verify(Check),
    /// The handler of mount `mount` answers once the request's body is in
    /// ([`Router::call_handler`]).
    Handler {
        /// Index of the mount, in mount order.
        mount: usize,
    },
    /// The answer needs the request's whole body first, held
    /// ([`Router::answer_whole`]): a chunked body for a CGI or FastCGI
    /// script, which must be told the body's length.
    WholeBody(Resume),
    /// The file it asks for would be looked up (or its content read)
    /// from the disk, not the kernel's caches: that is done off the event
    /// loop first ([`Router::cold_lookups`]), then the request is routed
    /// again from the start.
    #[cfg(feature = "cold-lookups")]
    Cold(Cold),
}

/// Lookups a request needs that would wait for the disk: its site's,
/// and which.
#[cfg(feature = "cold-lookups")]
#[derive(Debug)]
pub struct Cold {
    site: usize,
    what: Looking,
    /// What names them among the lookups under way, for the requests
    /// that need the same to join them ([`Looking::key`]).
    key: Vec<u8>,
}

/// Which lookups a [`Cold`] is.
#[cfg(feature = "cold-lookups")]
#[derive(Debug)]
enum Looking {
    /// A static file's (path relative to the site's root): the path, its
    /// precompressed variants, a directory's index files.
    File(Vec<u8>),
    /// A FastCGI rule's: beneath which root, each path.
    #[cfg(feature = "upstreams")]
    Scripts(Vec<(crate::handlers::fastcgi::script::Under, Vec<u8>)>),
    /// The `[[cgi]]` rules' resolving of a URL path.
    Cgi(Vec<u8>),
    /// A file of the site's `[[webdav]]` rule `tree`, for one request
    /// (`seq`, a number no other request's has: what a tree clients
    /// write serves must have been looked up after the request came, so
    /// no request joins another's lookups there).
    #[cfg(feature = "webdav")]
    Tree { tree: usize, rel: Vec<u8>, seq: u64 },
}

#[cfg(feature = "cold-lookups")]
impl Looking {
    /// A byte for the kind, then what tells two of a kind apart.
    fn key(&self) -> Vec<u8> {
        match self {
            Looking::File(rel) => [&[0u8][..], rel].concat(),
            #[cfg(feature = "upstreams")]
            Looking::Scripts(paths) => {
                let first = paths.first().map(|(_, rel)| &rel[..]).unwrap_or_default();
                [&[1u8][..], first].concat()
            }
            Looking::Cgi(path) => [&[2u8][..], path].concat(),
            #[cfg(feature = "webdav")]
            Looking::Tree { rel, seq, .. } => [&[3u8][..], &seq.to_le_bytes(), rel].concat(),
        }
    }
}

#[cfg(feature = "cold-lookups")]
impl Cold {
    fn new(site: usize, what: Looking) -> Cold {
        let key = what.key();
        Cold { site, what, key }
    }

    /// The lookups of the static file `rel` of site `site`.
    fn file(site: usize, rel: Vec<u8>) -> Cold {
        Cold::new(site, Looking::File(rel))
    }

    /// The site.
    pub fn site(&self) -> usize {
        self.site
    }

    /// What names the lookups among those under way.
    pub fn key(&self) -> &[u8] {
        &self.key
    }
}

/// What the lookups of a [`Cold`] found, off the loop: its site's, for
/// [`Router::install_cold`].
#[cfg(feature = "cold-lookups")]
#[derive(Debug, Default)]
pub struct Looks {
    site: usize,
    looked: Vec<crate::handlers::file_cache::Looked>,
    /// A FastCGI rule's lookups' ([`Looking::Scripts`]).
    #[cfg(feature = "upstreams")]
    statted: Vec<crate::handlers::fastcgi::script::Statted>,
    /// The `[[cgi]]` rules' ([`Looking::Cgi`]): each URL path, and what it
    /// resolved to.
    resolved: Vec<(Vec<u8>, Resolved)>,
    /// Whose files `looked` are: the site's, or its `[[webdav]]` rule's.
    #[cfg(feature = "webdav")]
    tree: Option<usize>,
}

/// Who answers a request once its whole body is held; the engine only
/// holds it and hands it back.
#[derive(Debug)]
pub struct Resume(Resumed);

/// A script that waits for its request's whole body.
#[derive(Debug)]
enum Resumed {
    Cgi(Script),
    #[cfg(feature = "upstreams")]
    Fastcgi(crate::handlers::fastcgi::script::Script),
    /// `[[reverse_proxy]]` rule `rule` of the request's site, with
    /// `buffer_request`.
    #[cfg(feature = "upstreams")]
    Proxy {
        rule: usize,
    },
    /// A `[[webdav]]` PUT, its body written into its file as it arrives
    /// (taken once the body is in: it ends on another thread).
    #[cfg(feature = "webdav")]
    Put(Option<Box<crate::handlers::webdav::Put>>),
    /// A `[[webdav]]` PROPFIND or PROPPATCH with a body: by rule `rule`
    /// of the site, whose prefix is `skip` bytes.
    #[cfg(feature = "webdav")]
    Dav {
        rule: usize,
        skip: usize,
        what: crate::handlers::webdav::Bodied,
    },
}

impl Resume {
    /// Names the answer's producer in log lines (`cgi /srv/cgi-bin/x`).
    pub fn label(&self) -> String {
        match &self.0 {
            Resumed::Cgi(s) => format!("cgi {}", s.script_filename.display()),
            #[cfg(feature = "upstreams")]
            Resumed::Fastcgi(s) => format!("fastcgi {}", s.filename.display()),
            #[cfg(feature = "upstreams")]
            Resumed::Proxy { .. } => "reverse proxy".to_string(),
            #[cfg(feature = "webdav")]
            Resumed::Put(_) => "webdav PUT".to_string(),
            #[cfg(feature = "webdav")]
            Resumed::Dav { .. } => "webdav".to_string(),
        }
    }

    /// Where its body is written, for log lines: a PUT's own file, else
    /// a spool in `temp_dir`.
    pub fn body_home(&self, temp_dir: &std::path::Path) -> String {
        match &self.0 {
            #[cfg(feature = "webdav")]
            Resumed::Put(_) => "the file it makes".to_string(),
            _ => temp_dir.display().to_string(),
        }
    }

    /// The largest body it takes, when not `limits.max_body`: a
    /// `[[webdav]]` PUT's `max_upload`.
    pub fn body_max(&self) -> Option<u64> {
        match &self.0 {
            #[cfg(feature = "webdav")]
            Resumed::Put(put) => put.as_ref().map(|p| p.max()),
            _ => None,
        }
    }

    /// Where the body goes as it arrives: a PUT's own file, else a new
    /// spool (memory, then a file in `temp_dir`).
    pub fn take_body(&mut self) -> Spool {
        match &mut self.0 {
            #[cfg(feature = "webdav")]
            Resumed::Put(put) => put.as_mut().map(|p| p.take_body()).unwrap_or_default(),
            _ => Spool::default(),
        }
    }
}

/// What one stage makes of a request.
enum Step {
    Answer(Plan),
    Defer(Deferred),
    Next,
}

/// A stage of the chain before the static one (which always answers).
type Stage = fn(&mut Router, &mut Routing<'_>) -> Step;

/// One request on its way through the chain: the request, who sent it,
/// where its answer goes, and the log. Every entry point of the router
/// and every stage takes it whole.
pub struct Routing<'a> {
    /// The request (the auth stage records its user in it).
    pub req: &'a mut OwnedRequest,
    /// Who sent it, and when it is routed.
    pub client: Client<'a>,
    /// The answer's header lines and body bytes, and the path answered.
    pub scratch: &'a mut Scratch,
    /// The worker's error log.
    pub log: &'a mut Logger,
    /// The largest body the rule that takes the request lets in, when
    /// not `limits.max_body` (a `[[cgi]]`, `[[fastcgi]]` or
    /// `[[reverse_proxy]]` rule's `max_body`): set by its stage.
    pub body_max: Option<u64>,
    /// Whether a static file lookup that would wait for the disk may be
    /// made off the loop, the request routed again after it
    /// ([`Deferred::Cold`]); else it waits on the loop (a request routed
    /// again that still finds the disk cold, a few times).
    #[cfg(feature = "cold-lookups")]
    pub cold: bool,
    /// Whether the request is routed again after lookups made off the
    /// loop for it ([`Deferred::Cold`]) in this turn of the loop: a tree
    /// clients write trusts what they found (not asking the disk again),
    /// for this request.
    #[cfg(feature = "cold-lookups")]
    pub lent: bool,
    /// Whether the connection may start one more program: set by the
    /// worker, `Full` when as many as HTTP/2 and HTTP/3 let answer one
    /// connection's streams at once already do. The CGI stage refuses a
    /// request then, before anything starts, and says so here.
    pub programs: Room,
}

/// Whether a connection has room for one more program (see
/// [`Routing::programs`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Room {
    /// It may start one.
    Free,
    /// It may not.
    Full,
    /// It may not, and the request was refused for it (answered 503,
    /// which the worker may turn into a refused stream): no program
    /// started.
    Refused,
}

/// One worker's router: the stages and what they hold, per site.
pub struct Router {
    cfg: Arc<Config>,
    /// Each site's files (index: the site, 0 the default one).
    files: SiteFiles,
    /// Which site a host names.
    hosts: Sites,
    /// Whether the host is looked at at all (not with one site).
    by_host: bool,
    /// The configured certificates by name, to tell whether the one a
    /// TLS connection was set up with is also for a request's host (then
    /// the host may name another site than the server name did); `None`
    /// without TLS, or with ACME, whose certificates come and go.
    #[cfg(feature = "tls")]
    certificates: Option<crate::tls::sni::ByName>,
    /// Each site's stages, in the order of `files`.
    sites: Vec<SiteStages>,
    /// The static handler's open files, every site's (keyed by site).
    cache: FileCache,
    /// The CGI programs every site's rules started (one count, the
    /// worker's); `None` without `[[cgi]]` rules.
    programs: Option<Cgi>,
    /// A directory path with an index file name appended, tried as a
    /// CGI script.
    index_path: Vec<u8>,
    /// Wakes the worker when a handler's later answer moves.
    wake: Wake,
    /// Where failed logins are counted (the worker's stats).
    stats: Option<Arc<crate::handlers::stats::WorkerStats>>,
    /// A site has `[[redirect]]`, `[[rewrite]]`, `[errors]` or
    /// `[[cors]]` rules (without, the request path does nothing new).
    has_rules: bool,
    /// A redirect's `Location`, or a rewritten target, being made.
    target: Vec<u8>,
    /// A site has `[[access]]` or `[[rate_limit]]` rules.
    has_admission: bool,
    /// A site has authentication, handlers, WebDAV, proxy, FastCGI or
    /// CGI rules (without, no stage but the static files' answers).
    has_stages: bool,
    /// The last number a request's lookups in a `[[webdav]]` tree took
    /// ([`Looking::Tree`]).
    #[cfg(all(feature = "cold-lookups", feature = "webdav"))]
    cold_seq: u64,
    /// The `[[rate_limit]]` buckets every worker shares.
    rates: Option<Arc<RateTable>>,
    /// Each site's reverse-proxy rules' upstreams in this worker (their
    /// balancing and health), by site then rule.
    #[cfg(feature = "upstreams")]
    proxy_groups: Vec<Vec<crate::handlers::proxy::balance::Shared>>,
    /// Each site's `[[fastcgi]]` rules' servers in this worker (their
    /// balancing and passive health), by site then rule.
    #[cfg(feature = "upstreams")]
    fastcgi_groups: Vec<Vec<crate::handlers::proxy::balance::Shared>>,
    /// The worker's idle upstream connections.
    #[cfg(feature = "upstreams")]
    upstream_pool: crate::handlers::proxy::pool::Shared,
    /// Each site's `[[webdav]]` rules, by site.
    #[cfg(feature = "webdav")]
    webdav: Vec<Vec<std::sync::Arc<crate::handlers::webdav::Dav>>>,
}

/// What the stages of one site hold.
struct SiteStages {
    /// Basic authentication (`None` without `[[auth]]` rules).
    auth: Option<Auth>,
    /// Embedded handlers, named handlers and the site's servlets, in
    /// mount order.
    mounts: Arc<[Mount]>,
    /// CGI scripts (`None` without `[[cgi]]` rules).
    cgi: Option<Cgi>,
    /// FastCGI scripts (`None` without `[[fastcgi]]` rules).
    #[cfg(feature = "upstreams")]
    fastcgi: Option<crate::handlers::fastcgi::script::Scripts>,
}

impl std::fmt::Debug for Router {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Router")
            .field("sites", &self.sites.len())
            .finish_non_exhaustive()
    }
}

/// Who a request comes from, and when it is routed.
#[derive(Clone, Copy)]
pub struct Client<'a> {
    /// The connection's slot in its worker (for an answer given later).
    pub conn: usize,
    /// The client's address.
    pub peer: SocketAddr,
    /// Now (the event loop's clock).
    pub now: Instant,
    /// The connection it came on, for the address the client connected
    /// to (asked only when needed: it costs a system call).
    pub local: &'a dyn LocalAddr,
    /// That address, when the listener that accepted the connection is
    /// bound to one address (not `0.0.0.0` or `[::]`): known without
    /// asking.
    pub bound: Option<SocketAddr>,
    /// What TLS negotiated, on a TLS connection.
    pub tls: Option<TlsSession>,
}

/// A connection that can say which of the server's addresses the client
/// connected to.
pub trait LocalAddr {
    /// The address the client connected to.
    fn local_addr(&self) -> SocketAddr;

    /// The server name (SNI) a TLS client asked for, lower case; `None`
    /// over plain HTTP or when the client named none.
    fn server_name(&self) -> Option<&str> {
        None
    }
}

impl Client<'_> {
    fn ends(&self) -> Ends {
        Ends {
            remote: self.peer,
            local: self.local_addr(),
            tls: self.tls,
        }
    }

    /// The address the client connected to: the listener's, or asked
    /// of the connection.
    fn local_addr(&self) -> SocketAddr {
        self.bound.unwrap_or_else(|| self.local.local_addr())
    }
}

impl Router {
    /// The router of one worker, for the configuration of `files` (one
    /// per site): `mounts` are each site's handlers; `failures` counts
    /// failed logins with the other workers; CGI programs are started by
    /// `launcher` if given. Passwords are hashed off the loop (see
    /// [`Deferred::Verify`]). An error when an htpasswd file or a CGI
    /// directory cannot be opened.
    pub fn new(
        files: SiteFiles,
        mounts: SiteMounts,
        failures: SharedFailures,
        launcher: Option<Arc<Launchers>>,
        wake: Wake,
    ) -> io::Result<Router> {
        let cfg = Arc::clone(&files[0].cfg);
        let mut sites = Vec::with_capacity(files.len());
        // One count of running programs for every site's.
        let mut first_cgi: Option<Cgi> = None;
        for (i, site) in SiteConfig::all(&cfg).enumerate() {
            let cgi = match (site.cgi.is_empty(), &first_cgi) {
                (true, _) => None,
                (false, Some(first)) => Some(first.for_site(i)?),
                (false, None) => {
                    first_cgi = Some(Cgi::new(&cfg, i, launcher.clone(), files[i].protected())?);
                    first_cgi.as_ref().map(|c| c.for_site(i)).transpose()?
                }
            };
            let auth = Auth::sharing(&site.auth, i, failures.clone()).map_err(io::Error::other)?;
            let auth = auth.is_active().then_some(auth).map(|mut a| {
                a.offload();
                #[cfg(feature = "webdav")]
                a.fold_beneath(site.folding.clone());
                a
            });
            sites.push(SiteStages {
                auth,
                mounts: Arc::clone(&mounts[i]),
                cgi,
                #[cfg(feature = "upstreams")]
                fastcgi: match site.fastcgi.is_empty() {
                    true => None,
                    false => Some(crate::handlers::fastcgi::script::Scripts::new(
                        &site.fastcgi,
                        &site.root,
                        &site.static_files.index,
                        &site.cgi,
                        (
                            cfg.site.static_files.open_file_cache,
                            cfg.site.static_files.open_file_cache_valid,
                        ),
                    )?),
                },
            });
        }
        let hosts = Sites::new(&cfg);
        let has_rules = SiteConfig::all(&cfg).any(|site| !site.rules.is_empty());
        let has_admission = SiteConfig::all(&cfg).any(|site| !site.admission.is_empty());
        let by_host = !hosts.only_default();
        let cache = FileCache::new(
            cfg.site.static_files.open_file_cache,
            cfg.site.static_files.open_file_cache_valid,
        );
        #[cfg(feature = "upstreams")]
        let proxy_groups = SiteConfig::all(&cfg)
            .map(|site| site.reverse_proxy.iter().map(upstream::group).collect())
            .collect();
        #[cfg(feature = "upstreams")]
        let fastcgi_groups = SiteConfig::all(&cfg)
            .map(|site| site.fastcgi.iter().map(fastcgi::group).collect())
            .collect();
        #[cfg(feature = "webdav")]
        let webdav = webdav::rules(&files)?;
        // (Without any, a request goes from the path to the files.)
        let has_stages = sites.iter().any(|s| {
            #[cfg(feature = "upstreams")]
            if s.fastcgi.is_some() {
                return true;
            }
            s.auth.is_some() || !s.mounts.is_empty() || s.cgi.is_some()
        });
        #[cfg(feature = "upstreams")]
        let has_stages =
            has_stages || SiteConfig::all(&cfg).any(|site| !site.reverse_proxy.is_empty());
        #[cfg(feature = "webdav")]
        let has_stages = has_stages || webdav.iter().any(|r| !r.is_empty());
        #[cfg(feature = "tls")]
        let certificates = {
            #[cfg(feature = "acme")]
            let acme = cfg.acme.is_some();
            #[cfg(not(feature = "acme"))]
            let acme = false;
            match (&cfg.tls, acme) {
                (Some(tls), false) if by_host => {
                    Some(crate::tls::sni::ByName::new(&tls.certificates))
                }
                _ => None,
            }
        };
        Ok(Router {
            #[cfg(feature = "tls")]
            certificates,
            has_stages,
            #[cfg(all(feature = "cold-lookups", feature = "webdav"))]
            cold_seq: 0,
            #[cfg(feature = "webdav")]
            webdav,
            has_rules,
            has_admission,
            rates: None,
            target: Vec::new(),
            cfg,
            hosts,
            by_host,
            programs: first_cgi,
            files,
            sites,
            cache,
            index_path: Vec::new(),
            wake,
            stats: None,
            #[cfg(feature = "upstreams")]
            proxy_groups,
            #[cfg(feature = "upstreams")]
            fastcgi_groups,
            #[cfg(feature = "upstreams")]
            upstream_pool: Rc::default(),
        })
    }

    /// Whether a site has rules (`has_rules`); never without the cargo
    /// feature `sites`, which then leaves the rules' code out.
    #[inline(always)]
    fn has_rules(&self) -> bool {
        cfg!(feature = "sites") && self.has_rules
    }

    /// Counts failed logins in `stats` (the worker's).
    pub fn count_in(&mut self, stats: Arc<crate::handlers::stats::WorkerStats>) {
        self.stats = Some(stats);
    }

    /// Counts `[[rate_limit]]` requests in `table` (the one every worker
    /// shares); without it, no request is rate-limited.
    pub fn share_rates(&mut self, table: Option<Arc<RateTable>>) {
        self.rates = table;
    }

    /// CGI processes this router's worker runs now.
    pub fn cgi_running(&self) -> usize {
        self.programs.as_ref().map_or(0, Cgi::running)
    }

    /// Starts the work of `plan` if it answers off the event loop (a
    /// listing: [`Source::Start`]), handing it the [`Later`] through which
    /// it answers `routing`'s request.
    /// (The test inlined where each answer passes; the work out of line.)
    #[inline]
    pub(super) fn start_later(&self, routing: &Routing<'_>, plan: &mut Plan) {
        if let Body::Stream(streamed) = &mut plan.body {
            self.start_streamed(routing, streamed);
        }
    }

    /// What has the worker look at connection `conn` from another thread.
    pub fn wake_for(&self, conn: usize) -> Wake {
        let mut wake = self.wake.clone();
        wake.conn = conn;
        wake
    }

    /// [`Router::start_later`]'s work, for a streamed answer.
    #[inline(never)]
    fn start_streamed(&self, routing: &Routing<'_>, streamed: &mut Streamed) {
        if !matches!(streamed.source, Source::Start(_)) {
            return;
        }
        let wake = self.wake_for(routing.client.conn);
        let channel = Arc::new(Channel::default());
        let later = Later::new(Arc::clone(&channel), wake);
        let awaited = Source::Later(Awaited::new(channel));
        if let Source::Start(start) = std::mem::replace(&mut streamed.source, awaited) {
            start(later);
        }
    }

    /// Runs the chain over the request. The answer's header lines and
    /// body go to the scratch buffers, whose `path` is set to the
    /// request's path first (a stage may then extend it with an index
    /// file name).
    pub fn route(&mut self, routing: &mut Routing<'_>) -> Routed {
        #[cfg(feature = "acme")]
        if let Some(plan) = acme_http01(routing) {
            return Routed::Answer(plan);
        }
        let site = match self.pick_site(routing) {
            Ok(site) => site,
            Err(status) => return Routed::Answer(Plan::error(status, routing.scratch)),
        };
        routing.req.set_site(site);
        self.cache.for_site(site);
        if self.has_rules() {
            if let Some(plan) = self.url_rules(routing) {
                return Routed::Answer(plan);
            }
        }
        if self.has_admission {
            if let Some(plan) = self.admit(routing) {
                return Routed::Answer(plan);
            }
        }
        if self.has_rules() {
            if let Some(plan) = self.preflight(routing) {
                return Routed::Answer(plan);
            }
        }
        routing.scratch.path.clear();
        if let Ok(path) = routing.req.path() {
            routing.scratch.path.extend_from_slice(path);
        }
        if wants_websocket(routing.req) && !self.proxies(routing) {
            return Routed::Answer(refuse_upgrade(routing.scratch));
        }
        let decoded = routing.req.path().is_ok();
        if decoded && self.has_stages {
            #[cfg(feature = "upstreams")]
            let stages: [Stage; 6] = [
                Router::auth,
                Router::mounts,
                Router::webdav,
                Router::reverse_proxy,
                Router::fastcgi,
                Router::cgi,
            ];
            #[cfg(not(feature = "upstreams"))]
            let stages: [Stage; 4] = [Router::auth, Router::mounts, Router::webdav, Router::cgi];
            for stage in stages {
                match stage(self, routing) {
                    Step::Next => continue,
                    Step::Answer(plan) => return Routed::Answer(plan),
                    Step::Defer(why) => return Routed::Defer(why),
                }
            }
        }
        let files = &self.files[site];
        #[cfg(feature = "cold-lookups")]
        self.cache.wait_cold(!routing.cold);
        let mut plan = static_files::serve(files, routing.req, routing.scratch, &mut self.cache);
        if !cfg!(feature = "sites") || files.site().static_files.try_files.is_empty() {
            #[cfg(feature = "cold-lookups")]
            if let Some(rel) = self.cache.went_cold() {
                return Routed::Defer(Deferred::Cold(Cold::file(site, rel)));
            }
            match self.guard_index(routing) {
                Some(Step::Defer(why)) => return Routed::Defer(why),
                Some(Step::Answer(refused)) => plan = refused,
                _ => self.start_later(routing, &mut plan),
            }
            return Routed::Answer(plan);
        }
        // The guards judge the file a fallback serves as they judged the
        // request's path: `try_files = ["$uri.html"]` must not serve
        // `/members/page.html`, behind a login, to `/members/page`,
        // which no rule names.
        let cfg = self.cfg.site(site);
        let auth = self.sites[site].auth.as_ref();
        let (req, client) = (&*routing.req, routing.client.peer.ip());
        let guarded = |candidate: &[u8]| {
            // (`$uri/index.html` of `/docs/` is `/docs//index.html`.)
            let mut p = candidate.to_vec();
            p.dedup_by(|a, b| *a == b'/' && *b == b'/');
            let own = (p.as_slice(), Reach::Own);
            let refused =
                crate::access::admission::judge(&cfg.admission.access, own, &cfg.folding, client)
                    .is_err();
            let path = req.path().unwrap_or_default();
            refused || auth.is_some_and(|a| !a.lets_through(path, &p, req.method_token()))
        };
        let mut plan = fallback::try_files(
            files,
            routing.req,
            routing.scratch,
            &mut self.cache,
            plan,
            &guarded,
        );
        #[cfg(feature = "cold-lookups")]
        if let Some(rel) = self.cache.went_cold() {
            return Routed::Defer(Deferred::Cold(Cold::file(site, rel)));
        }
        match self.guard_index(routing) {
            Some(Step::Defer(why)) => return Routed::Defer(why),
            Some(Step::Answer(refused)) => plan = refused,
            _ => self.start_later(routing, &mut plan),
        }
        Routed::Answer(plan)
    }

    /// Whether looking up site `site`'s page for the error `plan`
    /// (`[errors]`, which [`Router::finish`] puts in its body) would wait
    /// for the disk: then what looks it up off the loop first, as the
    /// request's own files are.
    #[cfg(feature = "cold-lookups")]
    #[inline]
    pub fn page_cold(&mut self, site: usize, plan: &Plan) -> Option<Cold> {
        if !self.has_rules() || plan.status.0 < 400 {
            return None;
        }
        self.page_went_cold(site, plan)
    }

    /// [`Router::page_cold`]'s work.
    #[cfg(feature = "cold-lookups")]
    #[cold]
    fn page_went_cold(&mut self, site: usize, plan: &Plan) -> Option<Cold> {
        let page = fallback::page_for(&self.cfg.site(site).rules.errors, plan)?;
        self.cache.for_site(site);
        self.cache.wait_cold(false);
        let _ = self
            .cache
            .lookup(self.files[site].root(), page.page.as_bytes());
        self.cache.went_cold().map(|rel| Cold::file(site, rel))
    }

    /// What makes the lookups of `cold` from the disk, on a thread
    /// ([`static_files::look`]: the path, its precompressed variants and,
    /// for a directory, its index files, what the request's routing again
    /// looks up first), and returns what they found for
    /// [`Router::install_cold`]; `None` if the site's root cannot be
    /// handed over (out of descriptors).
    #[cfg(feature = "cold-lookups")]
    pub fn cold_lookups(&mut self, cold: Cold) -> Option<Box<dyn FnOnce() -> Looks + Send>> {
        let site = cold.site;
        let (rel, tree) = match cold.what {
            Looking::File(rel) => (rel, None),
            #[cfg(feature = "webdav")]
            Looking::Tree { tree, rel, .. } => (rel, Some(tree)),
            Looking::Cgi(path) => {
                let cgi = self.sites[site].cgi.as_ref()?;
                let index = self.cfg.site(site).static_files.index.clone();
                let job = cgi.cold_lookups(path, index)?;
                return Some(Box::new(move || Looks {
                    site,
                    resolved: job(),
                    ..Looks::default()
                }));
            }
            #[cfg(feature = "upstreams")]
            Looking::Scripts(paths) => {
                let scripts = self.sites[site].fastcgi.as_ref()?;
                let job = scripts.cold_lookups(paths)?;
                return Some(Box::new(move || Looks {
                    site,
                    statted: job(),
                    ..Looks::default()
                }));
            }
        };
        let (files, key) = self.tree_of(site, tree)?;
        let root = files.root().try_clone().ok()?;
        let cfg = Arc::clone(&self.cfg);
        let st = &cfg.site(site).static_files;
        let known: Vec<_> = static_files::looked_at(&rel, st)
            .into_iter()
            .filter_map(|path| self.cache.known(key, &path).map(|meta| (path, meta)))
            .collect();
        Some(Box::new(move || {
            let st = &cfg.site(site).static_files;
            Looks {
                site,
                looked: static_files::look(&root, &rel, st, &known),
                #[cfg(feature = "webdav")]
                tree,
                ..Looks::default()
            }
        }))
    }

    /// The files of site `site`, or of its `[[webdav]]` rule `tree`, and
    /// their key in the file cache.
    #[cfg(feature = "cold-lookups")]
    fn tree_of(
        &self,
        site: usize,
        tree: Option<usize>,
    ) -> Option<(&static_files::StaticFiles, usize)> {
        match tree {
            #[cfg(feature = "webdav")]
            Some(i) => {
                let dav = self.webdav.get(site)?.get(i)?;
                Some((&dav.files, dav.cache_key))
            }
            _ => Some((&self.files[site], site)),
        }
    }

    /// Keeps what a request's cold lookups found ([`Router::cold_lookups`])
    /// in the file cache (or a FastCGI rule's, from `now`): routed again,
    /// it finds them there.
    #[cfg(feature = "cold-lookups")]
    pub fn install_cold(&mut self, looks: Looks, now: std::time::Instant) {
        #[cfg(feature = "webdav")]
        let tree = looks.tree;
        #[cfg(not(feature = "webdav"))]
        let tree = None;
        if let Some((_, key)) = self.tree_of(looks.site, tree) {
            for looked in looks.looked {
                self.cache.install(key, looked);
            }
        }
        if let Some(cgi) = self.sites[looks.site].cgi.as_mut() {
            if !looks.resolved.is_empty() {
                let valid = self.cfg.site(looks.site).static_files.open_file_cache_valid;
                cgi.install(looks.resolved, now, valid);
            }
        }
        #[cfg(feature = "upstreams")]
        if let Some(scripts) = self.sites[looks.site].fastcgi.as_mut() {
            if !looks.statted.is_empty() {
                scripts.install(looks.statted, now);
            }
        }
        let _ = now;
    }

    /// The site that answers the request: the one its host names (RFC
    /// 9110 §7.2: `Host`, `:authority` or an absolute-form target), else
    /// the default site or the `unknown_host` status. Over TLS, a host
    /// that names another site than the client's server name (SNI)
    /// selected is misdirected (RFC 9110 §15.5.20): the connection's
    /// certificate and the site's settings are another site's, unless
    /// that certificate is the host's too (see
    /// [`Router::certificate_is_for`]). With one site, nothing is looked
    /// at.
    fn pick_site(&self, routing: &Routing<'_>) -> Result<usize, Status> {
        if !(cfg!(feature = "sites") && self.by_host) {
            return Ok(0);
        }
        let host = routing.req.host().filter(|h| !h.is_empty());
        let named = host.and_then(|h| self.hosts.find(h));
        let site = match (named, self.hosts.pick(host)) {
            (Some(i), _) | (None, Pick::Site(i)) => i,
            (None, Pick::Refuse(status)) => return Err(Status(status)),
        };
        if let (Some(i), Some(sni)) = (named, routing.client.local.server_name()) {
            if self.hosts.for_server_name(sni) != i && !self.certificate_is_for(sni, host) {
                return Err(Status::MISDIRECTED_REQUEST);
            }
        }
        Ok(site)
    }

    /// Whether the certificate the connection was set up with for `sni`
    /// is also for `host` (as sent): a browser that verified it for both
    /// names sends the second one's requests on the first one's
    /// connection (HTTP/2 and HTTP/3 connection reuse), which a 421
    /// would only make it open again.
    #[cfg(feature = "tls")]
    fn certificate_is_for(&self, sni: &str, host: Option<&[u8]>) -> bool {
        let (Some(by), Some(host)) = (&self.certificates, host) else {
            return false;
        };
        let mut buf = [0u8; crate::http::host::MAX_NAME];
        let name = crate::http::host::canonical(host, &mut buf);
        let name = name.and_then(|n| std::str::from_utf8(n).ok());
        name.is_some_and(|n| by.one_for_both(sni, n))
    }

    #[cfg(not(feature = "tls"))]
    fn certificate_is_for(&self, _: &str, _: Option<&[u8]>) -> bool {
        false
    }

    /// Whether a `[[reverse_proxy]]` rule takes the request: never
    /// without the cargo feature `upstreams`.
    #[cfg(not(feature = "upstreams"))]
    fn proxies(&self, _: &Routing<'_>) -> bool {
        false
    }

    /// The auth stage: 401 without valid credentials, 429 for a client
    /// over its failure limit, the user recorded in the request otherwise.
    fn auth(&mut self, routing: &mut Routing<'_>) -> Step {
        let site = routing.req.site();
        let Some(auth) = self.sites[site].auth.as_mut() else {
            return Step::Next;
        };
        let ip = routing.client.peer.ip();
        // Authorization holds one credential, never a list (RFC 9110
        // §11.6.2, §5.3): with two, the login checked would depend on
        // which one a reader takes (the first here, the last in a proxy
        // or an application before or behind brisk). nginx answers 400.
        let two = routing
            .req
            .headers()
            .filter(|h| h.name.eq_ignore_case(b"authorization"))
            .nth(1)
            .is_some();
        if two {
            return Step::Answer(Plan::error(Status::BAD_REQUEST, routing.scratch));
        }
        let mut also = Vec::new();
        let dav = &self.cfg.site(site).webdav;
        // A Destination that cannot be judged (unreadable, or another
        // server's) is answered once the request's own path is: a client
        // without credentials is asked for them first (401), not told
        // what a share would have made of its Destination.
        let (reach, refused) = match judged_too(routing.req, dav, &mut also) {
            Ok(reach) => (reach, None),
            Err(status) => (Reach::Own, Some(status)),
        };
        let verdict = auth.check_both(
            (&routing.scratch.path, reach),
            &also,
            routing.req.method_token(),
            routing.req.field(Field::Authorization),
            ip,
            routing.client.now,
        );
        let step = match verdict {
            Verdict::Open => Step::Next,
            Verdict::Allowed { user } => {
                routing.req.set_user(user);
                Step::Next
            }
            Verdict::Challenge {
                realm_header,
                failure,
            } => {
                if let Some(f) = failure {
                    routing
                        .log
                        .log(Level::Warn, format_args!("{}", f.log_line(ip)));
                    if let Some(s) = &self.stats {
                        s.auth_failed();
                    }
                }
                routing.scratch.header("WWW-Authenticate", realm_header);
                Step::Answer(Plan::error(Status::UNAUTHORIZED, routing.scratch))
            }
            Verdict::Verify(check) => return Step::Defer(Deferred::Verify(check)),
            Verdict::TooManyFailures { retry_after_secs } => {
                if let Some(s) = &self.stats {
                    s.auth_failed();
                }
                routing.log.log(
                    Level::Warn,
                    format_args!("auth: {ip} is over its failed-attempt limit; 429"),
                );
                let mut v = Vec::with_capacity(20);
                crate::http::push_u64(&mut v, retry_after_secs);
                routing.scratch.header("Retry-After", &v);
                Step::Answer(Plan::error(Status::TOO_MANY_REQUESTS, routing.scratch))
            }
        };
        for w in auth.take_warnings() {
            routing.log.log(Level::Warn, format_args!("auth: {w}"));
        }
        match (step, refused) {
            (Step::Next, Some(status)) => {
                let plan = Plan::error(status, routing.scratch);
                Step::Answer(destination_refused(routing, plan))
            }
            (step, _) => step,
        }
    }

    /// The guards judge the index file a directory's URL is answered with
    /// (`s.path` then names it: `/members/index.html` for `/members/`)
    /// as they judge a request for that file: `[[auth]] pattern =
    /// "/members/*.html"` guards `/members/` when its index is what it
    /// serves, as nginx's `index` (an internal redirect, matched against
    /// the locations again) and Apache's `DirectoryIndex` (a subrequest)
    /// do. `None`: serve it; else what answers instead (403, 401, 429, or
    /// the password check, after which the request is routed again).
    fn guard_index(&mut self, routing: &mut Routing<'_>) -> Option<Step> {
        let asked = routing.req.path().ok()?;
        let s = &routing.scratch.path;
        if s.len() <= asked.len() || !s.starts_with(asked) || !asked.ends_with(b"/") {
            return None;
        }
        let site = routing.req.site();
        let cfg = self.cfg.site(site);
        let ip = routing.client.peer.ip();
        let index = (&routing.scratch.path[..], Reach::Own);
        let refused =
            crate::access::admission::judge(&cfg.admission.access, index, &cfg.folding, ip);
        // (The file's answer is not sent if they refuse it: its fields go.)
        let fields = std::mem::take(&mut routing.scratch.headers);
        let step = match refused {
            Err(rule) => {
                let path = std::mem::take(&mut routing.scratch.path);
                let to = (&mut *routing.log, &mut *routing.scratch);
                let plan = admission::access_refused(to, ip, (&path, ""), &rule.origin);
                routing.scratch.path = path;
                Step::Answer(plan)
            }
            // The auth stage, at the index's path (`s.path`), with the
            // request's credentials.
            Ok(()) if self.sites[site].auth.is_some() => self.auth(routing),
            Ok(()) => Step::Next,
        };
        if let Step::Next = step {
            routing.scratch.headers = fields;
            return None;
        }
        routing.scratch.body.clear();
        Some(step)
    }

    /// Hands the outcome of a password check run off the loop to the auth
    /// stage, for the request that waited for it (routed again next).
    pub fn settle(&mut self, outcome: Checked) {
        if let Some(auth) = self.checked(&outcome) {
            auth.settle(outcome);
        }
    }

    /// Keeps the outcome of a check whose request is gone, so that the
    /// same credential is not hashed again.
    pub fn remember(&mut self, outcome: Checked) {
        if let Some(auth) = self.checked(&outcome) {
            auth.remember(outcome);
        }
    }

    /// Counts the hash `outcome` cost, if any: the auth stage it is for.
    #[inline(never)]
    fn checked(&mut self, outcome: &Checked) -> Option<&mut Auth> {
        if let (true, Some(s)) = (outcome.hashed(), &self.stats) {
            s.auth_hashed();
        }
        let site = outcome.site();
        self.sites.get_mut(site).and_then(|s| s.auth.as_mut())
    }

    /// The mounts stage: the first mount the path is under answers, now
    /// if the request has no body, else once it is in.
    fn mounts(&mut self, routing: &mut Routing<'_>) -> Step {
        let path = &routing.scratch.path;
        let mounts = &self.sites[routing.req.site()].mounts;
        let Some(mount) = mounts.iter().position(|m| m.rest(path).is_some()) else {
            return Step::Next;
        };
        if matches!(
            routing.req.body(),
            BodyFraming::None | BodyFraming::Length(0)
        ) {
            return Step::Answer(self.call_handler(mount, &[], routing));
        }
        Step::Defer(Deferred::Handler { mount })
    }

    /// Calls the handler of mount `i` for the request, with its `body`,
    /// and turns what it answered into a plan: a handler that panics or
    /// answers with a status that is not final is logged and answered 500.
    pub fn call_handler(&mut self, i: usize, body: &[u8], routing: &mut Routing<'_>) -> Plan {
        let site = routing.req.site();
        let mount = &self.sites[site].mounts[i];
        // The fields as a slice: in an array of 16 when they fit (most
        // requests), so the 128 of the large one (4 KiB) are not all
        // written for each (about 700 instructions; callgrind, bench
        // scenario 9).
        let mut small = [Header::EMPTY; FEW_HEADERS];
        let mut large;
        let slots: &mut [Header<'_>] = if routing.req.headers().nth(FEW_HEADERS).is_none() {
            &mut small
        } else {
            large = [Header::EMPTY; MAX_HEADERS];
            &mut large
        };
        let mut n = 0;
        for (slot, h) in slots.iter_mut().zip(routing.req.headers()) {
            *slot = h;
            n += 1;
        }
        let headers = &slots[..n];
        let path = routing.req.path().unwrap_or_default();
        // (Header rules match it, as for any answer.)
        routing.scratch.path.clear();
        routing.scratch.path.extend_from_slice(path);
        let areq = app::Request {
            method: routing.req.method_token(),
            path,
            rest: mount.rest(path).unwrap_or_default(),
            query: routing.req.query(),
            target: routing.req.target(),
            headers,
            body,
            peer: routing.client.peer,
            user: routing.req.user(),
        };
        let wake = self.wake_for(routing.client.conn);
        let mut resp = Response::wakeable(routing.scratch, wake);
        let ran = catch_unwind(AssertUnwindSafe(|| mount.handler.handle(&areq, &mut resp)));
        let status = resp.status();
        let own_error = resp.is_own_error();
        let answer = resp.take_answer();
        for (level, line) in resp.take_logs() {
            routing.log.log(level, format_args!("{line}"));
        }
        let later = matches!(answer, Answer::Later(_));
        let failure = match ran {
            Err(_) => Some("panicked".to_string()),
            Ok(()) if !later && !(200..=599).contains(&status) => {
                Some(format!("answered with status {status}, not a final one"))
            }
            Ok(()) => None,
        };
        let label = || format!("handler at {}", String::from_utf8_lossy(&mount.prefix));
        // A 503 a handler chose (`ready` while stopping, a maintenance
        // switch) is its answer, not a failure the error log must repeat
        // for every probe.
        routing.scratch.told |= failure.is_none() && status == 503;
        if let Some(why) = failure {
            routing.log.log(
                Level::Error,
                format_args!(
                    "{} {why} for {}",
                    label(),
                    String::from_utf8_lossy(routing.req.target())
                ),
            );
            routing.scratch.headers.clear();
            routing.scratch.body.clear();
            return Plan::told_error(Status::INTERNAL_SERVER_ERROR, routing.scratch);
        }
        if own_error && matches!(answer, Answer::Bytes) && status >= 400 {
            // (brisk's error, not the handler's: a servlet not found, say;
            // finishing it puts the site's page for it in.)
            routing.scratch.headers.clear();
            routing.scratch.body.clear();
            return Plan::error(Status(status), routing.scratch);
        }
        apply_header_rules_to_handler(&self.files[site], routing.scratch);
        let streamed = |source, length| {
            Body::Stream(Box::new(Streamed {
                source,
                length,
                label: label(),
                patient: false,
            }))
        };
        let body = match answer {
            Answer::Bytes => {
                #[cfg(feature = "compress")]
                crate::handlers::compress::stream::whole(
                    &self.files[site].site().compress,
                    routing.req.field(Field::AcceptEncoding),
                    status,
                    &mut routing.scratch.headers,
                    &mut routing.scratch.body,
                );
                Body::Buffer
            }
            Answer::File(file, len) => Body::File {
                src: FileSource::File(Rc::new(file)),
                offset: 0,
                len,
            },
            Answer::Stream(body, length) => streamed(Source::Local(body), length),
            Answer::Later(channel) => streamed(Source::Later(channel), None),
        };
        Plan {
            status: Status(status),
            body,
            close: false,
        }
    }

    /// The CGI stage. Every method reaches a script (WebDAV's PROPFIND,
    /// MKCOL, QUERY, …: REQUEST_METHOD is what was sent, RFC 3875
    /// §4.1.12); the static handler answers 405 or 501 only where no
    /// script covers the path. A directory's index file may itself be a
    /// script (`index.cgi`).
    fn cgi(&mut self, routing: &mut Routing<'_>) -> Step {
        let site = routing.req.site();
        let Some(cgi) = &self.sites[site].cgi else {
            return Step::Next;
        };
        let st = &self.files[site].site().static_files;
        if st.dotfiles.refuses(&routing.scratch.path) {
            return Step::Next;
        }
        let now = routing.client.now;
        // (A directory's index files are resolved beneath the same root.)
        #[cfg(feature = "cold-lookups")]
        if routing.cold && cgi.would_wait(&routing.scratch.path, now) {
            let cgi = Looking::Cgi(routing.scratch.path.clone());
            return Step::Defer(Deferred::Cold(Cold::new(site, cgi)));
        }
        let mut resolved = cgi.resolve(&routing.scratch.path, now);
        if matches!(resolved, Resolved::NotCgi) && routing.scratch.path.ends_with(b"/") {
            for index in &st.index {
                self.index_path.clear();
                self.index_path.extend_from_slice(&routing.scratch.path);
                self.index_path.extend_from_slice(index.as_bytes());
                if let found @ Resolved::Cgi(_) = cgi.resolve(&self.index_path, now) {
                    resolved = found;
                    std::mem::swap(&mut routing.scratch.path, &mut self.index_path);
                    break;
                }
            }
        }
        if let Resolved::Cgi(script) = &resolved {
            let rules = &self.cfg.site(routing.req.site()).cgi;
            routing.body_max = rules.get(script.rule).and_then(|r| r.max_body);
            if let Some(refused) = dot_segments_refused(routing, "cgi: ") {
                return refused;
            }
        }
        match resolved {
            Resolved::NotCgi => Step::Next,
            Resolved::Denied(d) => {
                let file = d.file.as_os_str().as_encoded_bytes();
                routing.scratch.refuse_file(d.why, file);
                Step::Answer(Plan::error(d.status, routing.scratch))
            }
            // A 503 at once if the program could not start now anyway,
            // rather than after the whole upload.
            Resolved::Cgi(script) if routing.req.body() == BodyFraming::Chunked => {
                match cgi.over_limit(routing.log) {
                    Some(status) => Step::Answer(Plan::error(status, routing.scratch)),
                    None => Step::Defer(Deferred::WholeBody(Resume(Resumed::Cgi(script)))),
                }
            }
            Resolved::Cgi(script) => Step::Answer(self.start_cgi(&script, None, routing)),
        }
    }

    /// Answers the request, whose whole body is `body`, as `resume` says.
    pub fn answer_whole(
        &mut self,
        resume: &mut Resume,
        body: Spool,
        routing: &mut Routing<'_>,
    ) -> Plan {
        match &mut resume.0 {
            Resumed::Cgi(script) => self.start_cgi(script, Some(body), routing),
            #[cfg(feature = "upstreams")]
            Resumed::Fastcgi(script) => self.start_fastcgi(script, Some(body), routing),
            #[cfg(feature = "upstreams")]
            Resumed::Proxy { rule } => match self.proxy_by(*rule, Some(body), routing) {
                crate::server::router::Step::Answer(plan) => plan,
                _ => Plan::error(Status::INTERNAL_SERVER_ERROR, routing.scratch),
            },
            #[cfg(feature = "webdav")]
            Resumed::Put(put) => match put.take() {
                Some(put) => self.finish_put(put, body, routing),
                None => Plan::error(Status::INTERNAL_SERVER_ERROR, routing.scratch),
            },
            #[cfg(feature = "webdav")]
            Resumed::Dav { rule, skip, what } => {
                self.dav_with((*rule, *skip, *what), body, routing)
            }
        }
    }

    /// Starts `script` for the request; its input is `held` (a body held
    /// whole) or else the request's body as it arrives. The answer is a
    /// pipe body, or an error when the script cannot be started.
    /// (Not when the connection has no room for one more program: the
    /// request is refused before the program is started, never after.)
    fn start_cgi(&self, script: &Script, held: Option<Spool>, routing: &mut Routing<'_>) -> Plan {
        let Some(cgi) = &self.sites[routing.req.site()].cgi else {
            return Plan::error(Status::INTERNAL_SERVER_ERROR, routing.scratch);
        };
        if routing.programs != Room::Free {
            routing.programs = Room::Refused;
            return Plan::error(Status::SERVICE_UNAVAILABLE, routing.scratch);
        }
        match cgi.start(
            script,
            routing.req,
            routing.client.ends(),
            held,
            routing.log,
        ) {
            Ok(pipe) => Plan {
                // (The status is the program's, from the pipe's head.)
                status: Status::OK,
                body: Body::Pipe(Box::new(pipe)),
                close: false,
            },
            Err(status) => Plan::error(status, routing.scratch),
        }
    }

    /// A read event came under `token`, which idle upstream connections
    /// may still be watched under (see [`crate::handlers::proxy::pool`]).
    #[cfg(feature = "upstreams")]
    pub fn stir_pool(&self, token: usize) {
        self.upstream_pool.borrow_mut().stir(token);
    }

    /// Reaps CGI programs that outlived their request; with `all` (the
    /// worker ends), kills and waits for every one. Logs how programs
    /// that failed ended.
    pub fn reap(&self, now: Instant, all: bool, log: &mut Logger) {
        if let Some(cgi) = &self.programs {
            cgi.reap(now, all, log);
        }
        // (Idle upstream connections past their keepalive_timeout close;
        // the active health checks move on, unless the worker ends.)
        #[cfg(feature = "upstreams")]
        {
            self.upstream_pool.borrow_mut().prune(now);
            for group in self.proxy_groups.iter().flatten().filter(|_| !all) {
                let mut group = group.borrow_mut();
                group.check(now);
                for (down, line) in group.take_news() {
                    let level = match down {
                        true => crate::config::Level::Warn,
                        false => crate::config::Level::Info,
                    };
                    log.log(level, format_args!("{line}"));
                }
            }
        }
    }

    /// The WebDAV stage: none without the cargo feature `webdav`.
    #[cfg(not(feature = "webdav"))]
    fn webdav(&mut self, _: &mut Routing<'_>) -> Step {
        Step::Next
    }

    /// Moves the static handler's clock on (once per loop iteration).
    pub fn set_now(&mut self, now: Instant) {
        self.cache.set_now(now);
    }

    /// Forgets the open files, and frees the upstream pool's large read
    /// buffer (a worker that has been quiet a while).
    pub fn rest(&mut self) {
        self.cache.clear();
        #[cfg(feature = "upstreams")]
        self.upstream_pool.borrow_mut().rest();
        if let Some(cgi) = &self.programs {
            cgi.shrink();
        }
    }
}

/// The decoded, normalised paths a request names beside its own, which
/// `[[access]]` and `[[auth]]` judge as they judge the request's own
/// path, into `also`: a COPY's or MOVE's `Destination` (where it also
/// writes), and with WebDAV the resources the `If` header's tagged lists
/// name (RFC 4918 §10.4.3: what their entity tags and locks are is read,
/// so a client that may not reach a resource cannot test guesses of its
/// tag through a resource it may). A `Destination` that cannot be read,
/// or names another host, is the answer's status (400, 502: what WebDAV
/// answers), so that nothing behind brisk reads it another way; a tag
/// that cannot be read, or names another host, is left to the handler,
/// which takes its list for one that does not hold.
///
/// With them, how far beneath its paths the request reaches (RFC 4918:
/// a COPY, §9.8.3, or a LOCK, §9.10.3, unless `Depth: 0`; a MOVE,
/// §9.9.2, or a DELETE, §9.6.1, always; a PROPFIND by its `Depth`,
/// §9.1, infinity when there is none), which the guards judge too:
/// what a collection holds goes with it (a Destination's too, which a
/// COPY or MOVE replaces).
/// (Only where a `[[webdav]]` rule of the site, `dav`, serves the path:
/// elsewhere these methods are an application's, whose paths are names.)
pub(super) fn judged_too(
    req: &OwnedRequest,
    dav: &crate::config::DavRules,
    also: &mut Vec<Vec<u8>>,
) -> Result<Reach, Status> {
    also.clear();
    let served = cfg!(feature = "webdav")
        && dav
            .iter()
            .any(|r| req.path().is_ok_and(|p| r.takes(p).is_some()));
    let reach = match (req.method_token(), req.header("Depth")) {
        _ if !served => Reach::Own,
        // (A listing's members the guards refuse are left out of it
        // instead: `webdav::Viewer`.)
        (b"COPY" | b"LOCK" | b"PROPFIND", Some(b"0")) | (b"PROPFIND", Some(b"1")) => Reach::Own,
        (b"COPY" | b"MOVE" | b"DELETE" | b"LOCK" | b"PROPFIND", _) => Reach::All,
        _ => Reach::Own,
    };
    if let Some(value) = req
        .header("Destination")
        .filter(|_| matches!(req.method_token(), b"COPY" | b"MOVE"))
    {
        let mut to = Vec::new();
        crate::http::path::destination(value, req.host(), &mut to)?;
        also.push(to);
    }
    // A file holds nothing: a DELETE, COPY or MOVE of one (onto no
    // collection) reaches its own path alone, so that a pattern without
    // `/` (`*.key`) judges it by its own name, not by what a collection
    // might hold.
    #[cfg(feature = "webdav")]
    let reach = match req.path() {
        Ok(path) if reach != Reach::Own && holds_nothing(dav, path) => {
            match also
                .first()
                .filter(|_| matches!(req.method_token(), b"COPY" | b"MOVE"))
            {
                Some(to) if !holds_nothing(dav, to) => reach,
                _ => Reach::Own,
            }
        }
        _ => reach,
    };
    #[cfg(feature = "webdav")]
    if let Some(lists) = req
        .header("If")
        .and_then(crate::handlers::webdav::ifheader::parse)
    {
        for tag in lists.iter().filter_map(|l| l.tag) {
            let mut at = Vec::new();
            if crate::http::path::destination(tag, req.host(), &mut at).is_ok()
                && !also.contains(&at)
            {
                also.push(at);
            }
        }
    }
    Ok(reach)
}

/// Whether `path`, beneath the `[[webdav]]` rule of `dav` that serves
/// it, is no collection: a file (or a symlink, which a change does not
/// follow), or nothing yet. A collection, or what cannot be told (a path
/// ending in `/`, a lookup refused), is not.
#[cfg(feature = "webdav")]
fn holds_nothing(dav: &crate::config::DavRules, path: &[u8]) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Some((rule, skip)) = dav.iter().find_map(|r| Some((r, r.takes(path)?))) else {
        return false;
    };
    let rel = path[skip..].strip_prefix(b"/").unwrap_or(&path[skip..]);
    if rel.is_empty() || rel.ends_with(b"/") {
        return false;
    }
    match std::fs::symlink_metadata(rule.root.join(std::ffi::OsStr::from_bytes(rel))) {
        Ok(meta) => !meta.is_dir(),
        Err(e) => e.kind() == std::io::ErrorKind::NotFound,
    }
}

/// `plan`, the answer to a COPY or MOVE whose `Destination` is refused (400: it
/// cannot be read; 502: another server's, or a path no `[[webdav]]` rule
/// of this one serves, RFC 4918 §9.8.5), said in the log at `info`: the
/// client's doing, not the server's trouble that a bare `502 answering`
/// at `error` would say it is (and any client could flood the log with).
#[cold]
#[inline(never)]
pub(super) fn destination_refused(routing: &mut Routing<'_>, plan: Plan) -> Plan {
    // (The Destination itself is not written: a client's text kept out
    // of a line at `info`, and the size-bound builds' bytes.)
    routing.log.log(
        Level::Info,
        format_args!(
            "webdav: {}: its Destination is another server's, a path no WebDAV rule of this site serves, or unreadable; {}",
            String::from_utf8_lossy(routing.req.target()),
            plan.status.0
        ),
    );
    routing.scratch.told = true;
    plan
}

/// A 400 for a request to a program that reads its `REQUEST_URI` as
/// sent (a CGI script, a FastCGI application) when that path has dot
/// segments: a framework that routes on it would not resolve the dot
/// segments brisk resolved before its rules matched (`/admin/../app`
/// passed brisk's rules as `/app`). No browser sends them (RFC 3986
/// §5.2.4). `who` starts the info line. See the reverse proxy's.
fn dot_segments_refused(routing: &mut Routing<'_>, who: &str) -> Option<Step> {
    if !crate::http::path::has_dot_segment(crate::http::path::split_target(routing.req.target()).0)
    {
        return None;
    }
    Some(refused_400(
        routing,
        who,
        format_args!(
            ": the program could read its path as another \
             (dot segments, which it may not resolve); 400"
        ),
    ))
}

/// Refuses the request of `routing` with 400 before it reaches an
/// application (the reverse proxy's, FastCGI's, a CGI script), with an
/// info line: `before`, the target as sent, then `after`.
fn refused_400(routing: &mut Routing<'_>, before: &str, after: std::fmt::Arguments<'_>) -> Step {
    let target = String::from_utf8_lossy(routing.req.target());
    routing
        .log
        .log(Level::Info, format_args!("{before}{target:?}{after}"));
    Step::Answer(Plan::error(Status::BAD_REQUEST, routing.scratch))
}

/// Whether `req` asks to become a WebSocket (RFC 6455 §4.1: `Upgrade:
/// websocket` that `Connection` names, RFC 9110 §7.8), which only a
/// `[[reverse_proxy]]` rule takes (see `Router::proxies`): elsewhere
/// answered as such, not as a plain request the client could not use.
/// (`h2c` is taken before routing, where it may be; other upgrades, and
/// an `Upgrade` no `Connection` names, are ignored and the request is
/// answered over HTTP/1.1, as RFC 9110 §7.8 lets a server do.)
fn wants_websocket(req: &OwnedRequest) -> bool {
    use crate::http::grammar::has_token;
    req.field(Field::Upgrade)
        .is_some_and(|v| has_token(v, b"websocket"))
        && req
            .headers()
            .filter(|h| h.name.eq_ignore_case(b"connection"))
            .any(|h| has_token(h.value, b"upgrade"))
}

/// 501 for a WebSocket handshake (RFC 6455 §4.2.2: a server that does
/// not take the connection answers with an HTTP error): no 101, and a
/// body that says why.
fn refuse_upgrade(scratch: &mut Scratch) -> Plan {
    scratch.header("Content-Type", b"text/plain; charset=utf-8");
    Plan {
        status: Status::NOT_IMPLEMENTED,
        body: Body::Static(
            b"501 Not Implemented: brisk does not handle WebSocket connections \
              (Upgrade: websocket) at this address\n",
        ),
        close: false,
    }
}

/// An http-01 validation (RFC 8555 §8.3): a GET of
/// `/.well-known/acme-challenge/TOKEN` for a token brisk's ACME thread
/// is having validated now is answered with its key authorization, on
/// any listener and for any host, before every rule. Other paths there
/// (a token of another client's, such as certbot's webroot) are routed
/// as usual.
#[cfg(feature = "acme")]
fn acme_http01(routing: &mut Routing<'_>) -> Option<Plan> {
    let path = routing.req.path().ok()?;
    let token = path.strip_prefix(b"/.well-known/acme-challenge/")?;
    let token = std::str::from_utf8(token).ok()?;
    let answer = crate::acme::manager::http01_answer(token)?;
    routing.scratch.body.clear();
    routing.scratch.body.extend_from_slice(answer.as_bytes());
    routing
        .scratch
        .header("Content-Type", b"application/octet-stream");
    Some(Plan {
        status: Status::OK,
        body: Body::Buffer,
        close: false,
    })
}
