//! The engine and the embedding API: listeners, event loops, connections,
//! timers, draining.
//!
//! The engine in layers (README: "The engine"): [`worker`] (the event
//! loop) drives each connection's [`transport`] (bytes and readiness) and
//! its [`h1`] protocol state (sans-IO HTTP/1.1), asks the [`router`] who
//! answers each request, and pumps the body the handler chose.
//!
//! [`Server::bind`] binds every listener (one `SO_REUSEPORT` socket per
//! address per worker) and opens the document root; [`Server::start`]
//! starts one set of workers (a generation); [`Running::reload`] starts a
//! new set on the same listening sockets while the previous one retires
//! (see [`drain`]); [`Running::stop`] drains them all. What a process does
//! around them (signals, daemon, pid file, chroot, user switch, sandbox,
//! the CGI launcher) is [`crate::process`]'s, through the hooks
//! [`Server::rebase`], [`Server::set_launchers`] and
//! [`Server::set_privileged`].

pub mod conn;
pub mod counters;
pub mod drain;
mod error;
pub mod exchange;
pub mod h1;
#[cfg(feature = "http2")]
pub mod h2;
#[cfg(feature = "http3")]
pub mod h3;
mod inherited;
pub mod life;
pub mod lifecycle;
mod listen;
#[cfg(feature = "http3")]
pub(crate) mod quic_handover;
pub mod router;
pub mod run;
pub mod sites;
pub mod transport;
#[cfg(feature = "upstreams")]
pub mod tunnel;
pub mod waits;
pub mod worker;

use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;
use std::time::Duration;

use crate::access::verify::Verifier;
use crate::config::{Config, Level, SiteConfig};
use crate::handlers::app::{Handler, Init, Mount};
use crate::handlers::protected::Protected;
use crate::handlers::static_files::StaticFiles;
use crate::log::{console, LogService, Logger};
use crate::server::sites::{SiteFiles, SiteMounts};
use crate::sys;
use crate::sys::launcher::Launchers;
use crate::sys::privileged::Privileged;
use counters::Counters;
use drain::{Drain, DrainOrder};
use transport::{Sessions, Setup};
use worker::{Worker, WorkerInit};

pub use error::Error;
pub use inherited::Inherited;
use lifecycle::Heartbeat;
pub use lifecycle::Lifecycle;
pub use listen::Speaks;
use listen::{bind_listeners, Bound};

/// Opens the document root of every site of `cfg`, where the files
/// `protected` are never served; `in_chroot` says where, for the error.
fn open_root(
    cfg: &Arc<Config>,
    in_chroot: bool,
    protected: &Arc<Protected>,
) -> Result<SiteFiles, Error> {
    let mut all = Vec::with_capacity(1 + cfg.sites.len());
    for (i, site) in SiteConfig::all(cfg).enumerate() {
        let files =
            StaticFiles::new(Arc::clone(cfg), i, Arc::clone(protected)).map_err(|source| {
                Error::OpenRoot {
                    root: site.root.clone(),
                    in_chroot,
                    source,
                }
            })?;
        all.push(files);
    }
    Ok(all.into())
}

/// Makes the handler of one `[[handlers]]` entry: a copy of the
/// registered handler, initialised with the entry's settings.
type Factory = Arc<dyn Fn(&Init<'_>) -> Result<Arc<dyn Handler>, String> + Send + Sync>;

/// Handlers registered by name, in registration order.
#[derive(Clone, Default)]
struct Registry(Vec<(String, Factory)>);

impl Registry {
    fn names(&self) -> Vec<&str> {
        self.0.iter().map(|(n, _)| n.as_str()).collect()
    }

    /// The mounts of `site`'s `[[handlers]]` entries, each handler
    /// initialised; the error names the entry's file, line and key. An
    /// entry whose path a mount before it (one of `code`, or an entry
    /// above) covers could never answer: refused.
    fn mounts(&self, site: &SiteConfig, code: &[Mount]) -> Result<Vec<Mount>, Error> {
        let mut out = Vec::with_capacity(site.handlers.len());
        for rule in &site.handlers {
            let Some((_, make)) = self.0.iter().find(|(n, _)| *n == rule.handler) else {
                let names = self.names();
                return Err(Error::Handler(crate::config::unknown_handler(rule, &names)));
            };
            let init = Init {
                config: &rule.config,
                path: &rule.path,
                root: &site.root,
            };
            let handler = make(&init).map_err(|why| {
                Error::Handler(format!(
                    "{}: the handler \"{}\" at {} did not start: {why}",
                    rule.origin, rule.handler, rule.path
                ))
            })?;
            let mount = Mount::new(&rule.path, handler)?;
            let mut before = code.iter().chain(&out);
            if let Some(before) = before.find(|m| m.rest(&mount.prefix).is_some()) {
                let before = String::from_utf8_lossy(&before.prefix);
                let why = crate::config::shadowed_handler(rule, &before);
                return Err(Error::Handler(why));
            }
            out.push(mount);
        }
        Ok(out)
    }
}

/// A bound server, not yet serving: the listeners exist, so the
/// addresses (with port 0 resolved) are known.
pub struct Server {
    cfg: Arc<Config>,
    files: SiteFiles,
    bound: Vec<Bound>,
    mounts: Vec<Mount>,
    registry: Registry,
    launcher: Option<Arc<Launchers>>,
    /// Binds listen addresses a reload adds, when brisk left root.
    privileged: Option<Arc<Privileged>>,
    /// The given sockets that are the listeners (none configured).
    adopted: inherited::Adopted,
    /// Whether a stop has begun, for readiness.
    lifecycle: Arc<Lifecycle>,
}

impl Server {
    /// Opens the document root and binds every listen address, one
    /// `SO_REUSEPORT` socket per worker.
    pub fn bind(cfg: Config) -> Result<Server, Error> {
        Server::bind_inheriting(cfg, Vec::new())
    }

    /// [`Server::bind`], with listening sockets the process was given
    /// (systemd's socket activation, an upgrade): each serves the
    /// configured address it is bound to, and with no listener
    /// configured at all they are the listeners. Addresses no given
    /// socket serves are bound.
    pub fn bind_inheriting(mut cfg: Config, given: Vec<Inherited>) -> Result<Server, Error> {
        let _ = sys::process::raise_nofile_limit();
        let (keep, adopted) = inherited::adopt(&mut cfg, given)?;
        // `[tls]` with no address of its own serves the sockets systemd
        // passes named `https`: none was.
        if cfg.tls.as_ref().is_some_and(|t| t.listen.is_empty()) && cfg.proxy.tls_listen.is_empty()
        {
            return Err(Error::Inherited(
                "[tls] listen = [] serves the sockets systemd passes named https (FileDescriptorName=https), and none was passed: list its addresses in listen, or pass one".to_string(),
            ));
        }
        let cfg = Arc::new(cfg);
        let files = open_root(&cfg, false, &Arc::new(Protected::collect(&cfg)))?;
        let bound = bind_listeners(&cfg, &keep, None)?;
        Ok(Server {
            lifecycle: Arc::default(),
            adopted,
            cfg,
            files,
            bound,
            mounts: Vec::new(),
            registry: Registry::default(),
            launcher: None,
            privileged: None,
        })
    }

    /// Sees the configuration from inside its chroot
    /// ([`Config::rebase_in_jail`]) and opens the document root again by
    /// its path there. Call it after `chroot` and before [`Server::start`].
    pub fn rebase_in_jail(&mut self) -> Result<(), Error> {
        // The files as seen from outside the jail (their identities are
        // the same inside it).
        let protected = Arc::clone(self.files[0].protected());
        // The document roots share the configuration: once they are
        // gone, it is this server's alone to change.
        self.files = Arc::from(Vec::new());
        Arc::get_mut(&mut self.cfg)
            .expect("the configuration is shared before the server starts")
            .rebase_in_jail();
        self.files = open_root(&self.cfg, true, &protected)?;
        Ok(())
    }

    /// Takes the identities of the files brisk reads and writes again
    /// (see [`Protected`]): once the pid file and the logs exist. Call it
    /// before [`Server::rebase`] and [`Server::start`].
    pub fn protect_own_files(&mut self) -> Result<(), Error> {
        self.files = open_root(&self.cfg, false, &Arc::new(Protected::collect(&self.cfg)))?;
        Ok(())
    }

    /// Has CGI programs started by `launchers` (processes forked before
    /// the server confined itself, see [`crate::sys::launcher`]) rather
    /// than by the workers. Call it before [`Server::start`].
    pub fn set_launchers(&mut self, launchers: Arc<Launchers>) {
        self.launcher = Some(launchers);
    }

    /// Has listen addresses that a reload adds bound by `helper` (the
    /// privileged helper, `brisk-priv`), once the process has left root.
    /// Call it before [`Server::start`].
    pub fn set_privileged(&mut self, helper: Arc<Privileged>) {
        self.privileged = Some(helper);
    }

    /// A line for whoever starts brisk when `/` can only answer 403 (see
    /// [`StaticFiles::root_hint`]); ask before `chroot`, while the root can
    /// still be read by its path.
    pub fn root_hint(&self) -> Option<String> {
        self.files[0].root_hint()
    }

    /// The configuration being served.
    pub fn config(&self) -> &Config {
        &self.cfg
    }

    /// The server's life (whether a stop has begun), for handlers that
    /// report on it (readiness).
    pub fn lifecycle(&self) -> Arc<Lifecycle> {
        Arc::clone(&self.lifecycle)
    }

    /// The bound addresses: those of `listen`, `[tls] listen`, then
    /// `[proxy] listen`, each in its order.
    pub fn local_addrs(&self) -> Vec<SocketAddr> {
        self.bound.iter().map(|b| b.real).collect()
    }

    /// [`Server::local_addrs`], each with what its clients speak.
    pub fn listeners(&self) -> Vec<(SocketAddr, Speaks)> {
        self.bound.iter().map(|b| (b.real, b.speaks)).collect()
    }

    /// Mounts `handler` at `prefix`: a path ending in `/` (`/api/`) takes
    /// every path below it, any other (`/status`) exactly that path. It
    /// answers every method there, ahead of CGI and static files; basic
    /// authentication and `[[headers]]` rules apply as to any path. Mounts
    /// are tried in the order they were made; the first match wins, so a
    /// prefix that one made before covers (`/api/x` after `/api/`, or the
    /// same one again) is refused: it could never answer. See
    /// [`crate::handlers::app`].
    pub fn mount(
        &mut self,
        prefix: &str,
        handler: impl Handler + 'static,
    ) -> Result<&mut Self, Error> {
        let mount = Mount::new(prefix, Arc::new(handler))?;
        if let Some(before) = self.mounts.iter().find(|m| m.rest(&mount.prefix).is_some()) {
            let before = String::from_utf8_lossy(&before.prefix).into_owned();
            return Err(crate::handlers::Error::MountShadowed(prefix.to_string(), before).into());
        }
        self.mounts.push(mount);
        Ok(self)
    }

    /// Registers `handler` as `name`, for the configuration's
    /// `[[handlers]]` entries to mount (`handler = "name"`): each entry
    /// gets a copy, initialised with its `config` table by
    /// [`Handler::init`] when the server starts and on every reload.
    /// Entries come after the handlers mounted in code. An error for a
    /// name registered already.
    pub fn register(
        &mut self,
        name: &str,
        handler: impl Handler + Clone + 'static,
    ) -> Result<&mut Self, Error> {
        if self.registry.0.iter().any(|(n, _)| n == name) {
            return Err(Error::HandlerName(name.to_string()));
        }
        let make: Factory = Arc::new(move |init: &Init<'_>| {
            let mut h = handler.clone();
            h.init(init)?;
            Ok(Arc::new(h) as Arc<dyn Handler>)
        });
        self.registry.0.push((name.to_string(), make));
        Ok(self)
    }

    /// Starts the worker threads; each logs through `logs`. An error
    /// (naming the file, line and key) for a `[[handlers]]` entry whose
    /// name is not registered or whose handler's init fails.
    pub fn start(self, logs: &LogService) -> Result<Running, Error> {
        let code: Arc<[Mount]> = self.mounts.into();
        let mounts = all_mounts(&code, &self.registry, &self.cfg)?;
        let shared = Shared {
            code_mounts: code,
            registry: self.registry,
            launcher: self.launcher,
            verifier: Arc::new(Verifier::new(self.cfg.workers.clamp(1, 4))),
            sessions: Sessions::new(&self.cfg, None, &|| logs.handle()).map_err(Error::Tls)?,
            lifecycle: Arc::clone(&self.lifecycle),
        };
        let counters = Arc::new(Counters::new(&self.cfg));
        let serving = (&self.files, &counters);
        let current = Generation::start(serving, &self.bound, &shared, &mounts, &|| logs.handle())?;
        Ok(Running {
            lifecycle: self.lifecycle,
            adopted: self.adopted,
            protected: Arc::clone(self.files[0].protected()),
            cfg: self.cfg,
            counters,
            bound: self.bound,
            shared,
            current,
            retired: Vec::new(),
            privileged: self.privileged,
        })
    }
}

/// Each site's mounts: the handlers mounted in code (every site's), then
/// those of the site's `[[handlers]]` (its own, as its other rules: a
/// guard of the default site's does not cover another's), then the
/// site's servlets.
fn all_mounts(code: &[Mount], registry: &Registry, cfg: &Config) -> Result<SiteMounts, Error> {
    let mut out = Vec::with_capacity(1 + cfg.sites.len());
    for (i, site) in SiteConfig::all(cfg).enumerate() {
        let mut all = code.to_vec();
        all.extend(registry.mounts(site, code)?);
        #[cfg(feature = "servlets")]
        if site.servlets.enable {
            // After every other mount: `.lua` files under the prefixes only.
            let servlets = Arc::new(crate::handlers::servlets::Servlets::new(cfg, i));
            for prefix in &site.servlets.paths {
                all.push(Mount::new(prefix, servlets.clone())?.only_ending(b".lua"));
            }
        }
        #[cfg(not(feature = "servlets"))]
        let _ = (i, site);
        out.push(Arc::<[Mount]>::from(all));
    }
    Ok(out.into())
}

/// What every generation of workers gets, whatever the configuration.
struct Shared {
    /// Embedded handlers mounted in code.
    code_mounts: Arc<[Mount]>,
    /// Handlers registered by name, for `[[handlers]]`.
    registry: Registry,
    /// Starts CGI programs (when the sandbox keeps the server from it).
    launcher: Option<Arc<Launchers>>,
    /// Hashes passwords off the event loops.
    verifier: Arc<Verifier>,
    /// TLS session resumption: the ticket key and the session cache, so
    /// that a client resumes on any worker, and across reloads.
    sessions: Option<Sessions>,
    /// Whether a stop has begun, and what the workers count.
    lifecycle: Arc<Lifecycle>,
}

/// How long a reload waits for the previous workers to close their
/// listening sockets (each does when its loop next wakes: at once, unless
/// it is busy in a handler).
const LET_GO: Duration = Duration::from_secs(5);

/// One set of workers serving one configuration.
struct Generation {
    order: Arc<DrainOrder>,
    wakers: Vec<Arc<mio::Waker>>,
    threads: Vec<std::thread::JoinHandle<()>>,
    /// Each worker's loop's last turn.
    heartbeats: Vec<Arc<Heartbeat>>,
    /// What each worker counts.
    stats: Vec<Arc<crate::handlers::stats::WorkerStats>>,
}

impl Generation {
    /// Starts one worker per socket of each listener; worker `w` accepts
    /// on a duplicate of socket `w` of every address.
    /// `logger` makes each worker's log handle.
    fn start(
        serving: (&SiteFiles, &Arc<Counters>),
        bound: &[Bound],
        shared: &Shared,
        mounts: &SiteMounts,
        logger: &dyn Fn() -> Logger,
    ) -> Result<Generation, Error> {
        let mut generation = Generation {
            order: Arc::new(DrainOrder::default()),
            wakers: Vec::new(),
            threads: Vec::new(),
            heartbeats: Vec::new(),
            stats: Vec::new(),
        };
        let cfg = &serving.0[0].cfg;
        let tls = Setup::new(cfg, shared.sessions.as_ref()).map_err(Error::Tls)?;
        let workers = cfg.workers.max(1);
        for id in 0..workers {
            let started =
                generation.start_worker(id, serving, (bound, &tls), (shared, mounts), logger());
            if let Err(e) = started {
                generation.drain(Drain::Stop, Some(Duration::ZERO));
                generation.join(None);
                return Err(e);
            }
        }
        Ok(generation)
    }

    fn start_worker(
        &mut self,
        id: usize,
        (files, counters): (&SiteFiles, &Arc<Counters>),
        (bound, tls): (&[Bound], &Option<Setup>),
        (shared, mounts): (&Shared, &SiteMounts),
        logger: Logger,
    ) -> Result<(), Error> {
        // Worker `id` takes every `workers`-th socket of an address from
        // its index (more than one only where more were given).
        let workers = files[0].cfg.workers.max(1);
        let listeners = bound
            .iter()
            .flat_map(|b| {
                let mine = b.sockets.iter().skip(id).step_by(workers);
                mine.map(|s| (s, b.speaks))
            })
            .map(|(s, speaks)| s.try_clone().map(|s| (s, speaks)))
            .collect::<Result<Vec<_>, _>>()
            .map_err(Error::ShareListener)?;
        // Its UDP socket of each QUIC address, as its listeners.
        #[cfg(feature = "http3")]
        let udp = bound
            .iter()
            .flat_map(|b| b.udp.iter().skip(id).step_by(workers))
            .map(std::net::UdpSocket::try_clone)
            .collect::<Result<Vec<_>, _>>()
            .map_err(Error::ShareListener)?;
        let (poll, waker) = worker::poll_and_waker().map_err(Error::EventLoop)?;
        let heartbeat = Heartbeat::new();
        self.heartbeats.push(Arc::clone(&heartbeat));
        let stats = shared.lifecycle.worker(id);
        self.stats.push(Arc::clone(&stats));
        let init = WorkerInit {
            stats,
            heartbeat,
            files: Arc::clone(files),
            counters: Arc::clone(counters),
            mounts: Arc::clone(mounts),
            launcher: shared.launcher.clone(),
            verifier: Arc::clone(&shared.verifier),
            waker: Arc::clone(&waker),
            listeners,
            #[cfg(feature = "http3")]
            udp,
            tls: tls.clone(),
            logger,
            order: Arc::clone(&self.order),
            poll,
        };
        // (Its reason in the error log too, before the main thread finds
        // the worker gone and stops.)
        let mut failed = init.logger.sibling();
        let thread = std::thread::Builder::new()
            .name(format!("brisk-worker-{id}"))
            .spawn(move || match Worker::new(init) {
                Ok(worker) => worker.run(),
                Err(e) => {
                    failed.log(Level::Error, format_args!("cannot start worker {id}: {e}"));
                    failed.flush();
                    console::say(format_args!("cannot start worker {id}: {e}"));
                }
            })
            .map_err(Error::WorkerThread)?;
        self.wakers.push(Arc::clone(&waker));
        self.threads.push(thread);
        Ok(())
    }

    /// Asks every worker to wind down (see [`drain`]) within `bound`:
    /// they stop accepting at once and exit when their last connection
    /// is done.
    fn drain(&self, mode: Drain, bound: Option<Duration>) {
        self.order.give(mode, bound);
        for waker in &self.wakers {
            // Fails only when the worker's poll is gone: it has exited.
            let _ = waker.wake();
        }
    }

    fn finished(&self) -> bool {
        self.threads.iter().all(|thread| thread.is_finished())
    }

    /// Waits, at most `bound`, until every worker has closed its
    /// listening sockets after [`Generation::drain`]; whether they did.
    fn wait_listeners_closed(&self, bound: Duration) -> bool {
        self.order
            .wait_listeners_closed(self.threads.len(), bound, || self.finished())
    }

    /// Waits for every worker to exit (after [`Generation::drain`]), but
    /// the one this runs on, if any: a handler that stops the server
    /// cannot wait for its own worker (the join would fail, and panic);
    /// that worker exits once the handler returns, as drained. With
    /// `bound`, no longer than that: a worker still running then (held
    /// by code that does not return to its loop) is left, and counted.
    fn join(&mut self, bound: Option<Duration>) -> usize {
        let me = std::thread::current().id();
        let others_done =
            || (self.threads.iter()).all(|t| t.is_finished() || t.thread().id() == me);
        if let Some(bound) = bound {
            // (No count of listeners is awaited: woken as workers let go
            // of theirs, and in short turns, until the others are done.)
            self.order
                .wait_listeners_closed(usize::MAX, bound, others_done);
        }
        let mut left = 0;
        for thread in self.threads.drain(..) {
            if thread.thread().id() == me {
                continue;
            }
            if bound.is_some() && !thread.is_finished() {
                left += 1;
                continue;
            }
            // A worker that panicked has said so on stderr already.
            let _ = thread.join();
        }
        left
    }
}

/// How long past `timeouts.shutdown` a stop waits for a worker that has
/// not exited (see [`Running::stop`]).
pub const STOP_GRACE: Duration = Duration::from_secs(5);

/// Serving workers.
pub struct Running {
    cfg: Arc<Config>,
    /// What the current workers count in together (a reload carries the
    /// counts over where its limits are unchanged).
    counters: Arc<Counters>,
    bound: Vec<Bound>,
    shared: Shared,
    current: Generation,
    /// Workers of earlier configurations, draining after a reload.
    retired: Vec<Generation>,
    /// Binds listen addresses a reload adds, when brisk left root.
    privileged: Option<Arc<Privileged>>,
    /// The given sockets that are the listeners (none configured).
    adopted: inherited::Adopted,
    /// Whether a stop has begun, for readiness.
    lifecycle: Arc<Lifecycle>,
    /// The files the current workers never serve.
    protected: Arc<Protected>,
}

impl Running {
    /// Learns the identities of the files brisk reads and writes that are
    /// new since the configuration was loaded (a file replaced, a log
    /// file a rotation made anew), so the current workers never serve
    /// them either. Returns false when one could not be kept: a reload
    /// is needed.
    pub fn learn_own_files(&self) -> bool {
        self.protected.learn()
    }

    /// A stop begins (readiness answers 503 from now on); the workers
    /// serve on until [`Running::stop`].
    pub fn begin_stop(&self) {
        self.lifecycle.begin_stop();
    }

    /// Whether every current worker's loop went round within `age` (it
    /// does once a second when idle): none is stuck.
    pub fn responsive(&self, age: Duration) -> bool {
        !self.worker_died() && self.current.heartbeats.iter().all(|h| h.within(age))
    }

    /// Makes the sockets given at start the listeners of `cfg` if it
    /// configures none, as at start (a reload's configuration, before it
    /// is checked against what a reload may change).
    pub fn adopt(&self, cfg: &mut Config) -> Result<(), Error> {
        inherited::serve_adopted(cfg, &self.adopted)
    }

    /// How many worker threads serve.
    pub fn workers(&self) -> usize {
        self.current.threads.len()
    }

    /// Whether a worker has stopped on its own (it should not).
    pub fn worker_died(&self) -> bool {
        self.current
            .threads
            .iter()
            .any(|thread| thread.is_finished())
    }

    /// Serves `cfg` from now on: listeners still listed are kept (new
    /// ones bound), the document root opened, and a new set of workers
    /// started; the previous workers then retire: they finish every
    /// response they have started and answer the next request of each
    /// idle connection with `Connection: close` (see [`drain`]), within
    /// `timeouts.reload_drain` of `cfg` if it sets one. On error nothing
    /// changes. The caller checks
    /// that `cfg` keeps what only a restart can change
    /// ([`Config::restart_only_changes`],
    /// [`crate::process::confine::Sandboxes::refusal`]).
    pub fn reload(&mut self, mut cfg: Config, logs: &LogService) -> Result<(), Error> {
        self.adopt(&mut cfg)?;
        let cfg = Arc::new(cfg);
        // Tickets issued before stay valid: the key is kept (see Sessions).
        self.shared.sessions = Sessions::new(&cfg, self.shared.sessions.as_ref(), &|| {
            logs.handle_for(&cfg.log)
        })
        .map_err(Error::Tls)?;
        let protected = Arc::new(Protected::collect(&cfg));
        let files = open_root(&cfg, false, &protected)?;
        for warning in cfg.warnings() {
            logs.handle_for(&cfg.log)
                .log(Level::Warn, format_args!("reload: {warning}"));
        }
        let mut counters = Counters::new(&cfg);
        counters.carry_over(&self.counters);
        let counters = Arc::new(counters);
        let bound = bind_listeners(&cfg, &self.bound, self.privileged.as_deref())?;
        let serving = (&files, &counters);
        let logger = || logs.handle_for(&cfg.log);
        let mounts = all_mounts(&self.shared.code_mounts, &self.shared.registry, &cfg)?;
        let generation = Generation::start(serving, &bound, &self.shared, &mounts, &logger)?;
        let old = std::mem::replace(&mut self.current, generation);
        old.drain(Drain::Retire, cfg.timeouts.reload_drain);
        // The sockets are shared: until a previous worker has closed its
        // copies it may still accept a new connection (one that arrived
        // while it went through a batch of events), which the previous
        // configuration would serve. The reload is done (and logged,
        // and told to systemd) once none can. (A worker busy for longer
        // than the bound, in an embedded handler say, is not waited for.)
        if !old.wait_listeners_closed(LET_GO) {
            logs.handle_for(&cfg.log).log(
                Level::Warn,
                format_args!(
                    "reload: a previous worker has not closed its listening sockets after {LET_GO:?}; it may still accept a connection"
                ),
            );
        }
        self.lifecycle.reloaded();
        self.retired.push(old);
        // An address no longer listed closes once the old workers have
        // let go of their duplicates of its sockets.
        self.bound = bound;
        self.cfg = cfg;
        self.counters = counters;
        self.protected = protected;
        Ok(())
    }

    /// Joins the workers of earlier configurations that have finished
    /// draining.
    pub fn reap(&mut self) {
        let before = self.retired.len();
        for generation in &mut self.retired {
            if generation.finished() {
                generation.join(None);
                // What its workers counted goes on in the totals.
                self.lifecycle.retire(&generation.stats);
            }
        }
        self.retired
            .retain(|generation| !generation.threads.is_empty());
        if self.retired.len() < before {
            // What the previous workers held is free now, but glibc keeps
            // it in their arenas: hand it back.
            sys::memory::give_back();
        }
    }

    /// Graceful stop: no new connections (the listening sockets close at
    /// once, so new connections are refused rather than left waiting in a
    /// queue nobody serves), in-flight responses get up to
    /// `timeouts.shutdown` to finish; returns when every worker is done,
    /// or [`STOP_GRACE`] after that at the latest: a worker still running
    /// then is held by code that does not return to its loop (a handler
    /// that never returns), and is left. Returns how many were left (a
    /// process that exits ends them). A handler may call it (its worker
    /// finishes the handler's answer, lets its copy of the listening
    /// sockets go and exits once the handler returns: it is not waited
    /// for).
    pub fn stop(self) -> usize {
        self.stop_unless(None)
    }

    /// [`Running::stop`], asking `hurry` (which waits a little, as for a
    /// signal) again and again while the drain lasts: once it says so,
    /// the drain ends now, every connection closed (a second Ctrl-C, as
    /// Caddy's). Not from a worker's thread (a handler's), which the
    /// drain would wait for: [`Running::stop`] there.
    pub fn stop_unless(mut self, hurry: Option<&mut dyn FnMut() -> bool>) -> usize {
        self.lifecycle.begin_stop();
        // The workers close their own copies when they see the order.
        self.bound.clear();
        let drain = |s: &Running, bound| {
            s.current.drain(Drain::Stop, Some(bound));
            for generation in &s.retired {
                generation.drain(Drain::Stop, Some(bound));
            }
        };
        let shutdown = self.cfg.timeouts.shutdown;
        drain(&self, shutdown);
        let until = std::time::Instant::now() + shutdown;
        if let Some(hurry) = hurry {
            while !self.finished() && std::time::Instant::now() < until {
                if hurry() {
                    drain(&self, Duration::ZERO);
                    break;
                }
            }
        }
        let left = until.saturating_duration_since(std::time::Instant::now());
        let bound = Some(left + STOP_GRACE);
        let mut left = self.current.join(bound);
        for generation in &mut self.retired {
            left += generation.join(bound);
        }
        left
    }

    /// Where certificates obtained while running go (ACME's): the same
    /// for every generation of workers. `None` without `[tls]`.
    #[cfg(feature = "tls")]
    pub fn tls_live(&self) -> Option<Arc<crate::tls::sni::Live>> {
        self.shared.sessions.as_ref().map(|s| s.live())
    }

    /// The configuration being served.
    pub fn config(&self) -> &Config {
        &self.cfg
    }

    /// The bound addresses: those of `listen`, `[tls] listen`, then
    /// `[proxy] listen`, each in its order.
    pub fn local_addrs(&self) -> Vec<SocketAddr> {
        self.bound.iter().map(|b| b.real).collect()
    }

    /// [`Running::local_addrs`], each with what its clients speak.
    pub fn listeners(&self) -> Vec<(SocketAddr, Speaks)> {
        self.bound.iter().map(|b| (b.real, b.speaks)).collect()
    }

    /// Every listening socket, with what its clients speak and the
    /// configured address it serves: what an upgrade hands to the new
    /// binary.
    pub fn handover(&self) -> Vec<(&TcpListener, Speaks, SocketAddr)> {
        let mut out = Vec::new();
        for b in &self.bound {
            out.extend(b.sockets.iter().map(|s| (s, b.speaks, b.wanted)));
        }
        out
    }

    /// The UDP sockets of QUIC (with `[http3] enable`), with the
    /// configured address each serves: what an upgrade hands over beside
    /// [`Running::handover`]'s (see `quic_handover`).
    #[cfg(feature = "http3")]
    pub fn handover_quic(&self) -> Vec<(&std::net::UdpSocket, SocketAddr)> {
        let mut out = Vec::new();
        for b in &self.bound {
            out.extend(b.udp.iter().map(|s| (s, b.wanted)));
        }
        out
    }

    /// Ends serving as a reload's previous workers do (see [`drain`]):
    /// they stop accepting and finish what they started, within
    /// `timeouts.reload_drain` if set; the listening sockets are let go
    /// (another process holds them: an upgrade). [`Running::finished`]
    /// says when they are done; [`Running::stop`] hastens and joins them.
    pub fn retire(&mut self) {
        self.lifecycle.begin_stop();
        #[cfg(feature = "http3")]
        quic_handover::retire();
        self.bound.clear();
        let bound = self.cfg.timeouts.reload_drain;
        self.current.drain(Drain::Retire, bound);
        for generation in &self.retired {
            generation.drain(Drain::Retire, bound);
        }
    }

    /// Whether every worker, of every generation, has exited.
    pub fn finished(&self) -> bool {
        self.current.finished() && self.retired.iter().all(Generation::finished)
    }

    /// Whether `addr` (as configured) is one of the bound addresses.
    pub fn listens_on(&self, addr: &SocketAddr) -> bool {
        self.bound.iter().any(|b| b.wanted == *addr)
    }

    /// The bound addresses that answer HTTP/3 too (their UDP sockets').
    #[cfg(feature = "http3")]
    pub fn quic_addrs(&self) -> Vec<SocketAddr> {
        let quic = self.bound.iter().filter(|b| !b.udp.is_empty());
        quic.map(|b| b.real).collect()
    }

    /// Whether `addr` (as configured) is bound with HTTP/3's UDP sockets.
    #[cfg(feature = "http3")]
    pub fn quic_on(&self, addr: &SocketAddr) -> bool {
        self.bound
            .iter()
            .any(|b| b.wanted == *addr && !b.udp.is_empty())
    }
}
