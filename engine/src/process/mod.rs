//! The process around the engine: what `brisk` does between its command
//! line and [`crate::server`].
//!
//! [`run`] takes a loaded configuration and, in this order: blocks the
//! signals (before any thread exists), fills in the default user and
//! checks the identity, binds the listeners and opens the document root
//! ([`Server::bind`]), prints where it serves, daemonizes, writes the pid
//! file, opens the logs, confines the process (the privileged helper,
//! `chroot`, the user switch, the CGI launchers, the sandbox: see
//! [`confine`]), starts the workers, then waits for signals on the main
//! thread: SIGINT/SIGTERM drain and stop, SIGUSR1 reopens the logs,
//! SIGHUP reloads the configuration (`reload.rs`).

mod command;
pub mod confine;
mod error;
mod pid_file;
mod reload;
mod systemd;
mod upgrade;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use crate::config::{Config, Level, Reload};
use crate::handlers::spool;
use crate::log::{console, LogService};
use crate::server::{Inherited, Running, Server, Speaks};
use crate::sys::upgrade::{Program, Upgrader};
use crate::sys::{self, signal::Signal};

pub use command::command;
pub use error::Error;
pub use pid_file::signal_running;

/// `http://addr/` (`https://` for a TLS listener; a PROXY protocol one
/// says so), as the start-up and reload lines show an address.
fn url((addr, speaks): &(SocketAddr, Speaks)) -> String {
    let (scheme, note) = match speaks {
        Speaks::Http => ("http", ""),
        Speaks::Https => ("https", ""),
        Speaks::Proxy => ("http", " (PROXY protocol)"),
        Speaks::ProxyTls => ("https", " (PROXY protocol)"),
    };
    match addr {
        SocketAddr::V4(a) => format!("{scheme}://{}:{}/{note}", a.ip(), a.port()),
        SocketAddr::V6(a) => format!("{scheme}://[{}]:{}/{note}", a.ip(), a.port()),
    }
}

/// A worker whose loop has not gone round its once-a-second pass for
/// this long is stuck: the watchdog is no longer fed.
const STUCK: Duration = Duration::from_secs(10);

/// Why the main loop ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stop {
    /// SIGTERM or SIGINT.
    Asked,
    /// A worker is gone: stop at once.
    WorkerDied,
    /// SIGUSR2: a new brisk serves on the sockets.
    Upgraded,
}

/// The program to start again on SIGUSR2: this one's path, arguments and
/// working directory; `None` when the path cannot be told (upgrades
/// then say so).
fn this_program() -> Option<Program> {
    Some(Program {
        path: std::env::current_exe().ok()?,
        args: std::env::args_os().collect(),
        cwd: std::env::current_dir().ok()?,
    })
}

/// Whether brisk serves under its own init as pid 1's child (`sys::init`).
fn under_init() -> bool {
    #[cfg(feature = "ops")]
    return sys::init::under_init();
    #[cfg(not(feature = "ops"))]
    false
}

/// SIGUSR2: starts the new binary through `helper` unless an upgrade is
/// under way already; returns the upgrade under way.
fn start_upgrade(
    helper: Option<&Upgrader>,
    pending: Option<upgrade::Pending>,
    running: &Running,
    log: &mut crate::log::Logger,
) -> Option<upgrade::Pending> {
    if let Some(p) = pending {
        log.log(
            Level::Warn,
            format_args!(
                "SIGUSR2: an upgrade is under way already (pid {}); this one is ignored",
                p.pid()
            ),
        );
        log.flush();
        return Some(p);
    }
    let Some(helper) = helper else {
        let why = match under_init() {
            true => "brisk is its container's first process (pid 1, which stays as init for it): the old brisk's end would end the container, so it is not upgraded in place; restart it with the new binary",
            false => "upgrades are off (upgrade = false), or brisk cannot tell its own path",
        };
        log.log(Level::Warn, format_args!("SIGUSR2: {why}; nothing done"));
        log.flush();
        return None;
    };
    let started = match upgrade::begin(helper, running) {
        Ok(p) => {
            log.log(
                Level::Info,
                format_args!(
                    "SIGUSR2: started the new binary (pid {}) with the listening sockets; waiting for it to serve",
                    p.pid()
                ),
            );
            Some(p)
        }
        Err(e) => {
            log.log(
                Level::Error,
                format_args!(
                    "SIGUSR2: cannot start the new binary {}: {e}; still serving",
                    helper.program().display()
                ),
            );
            None
        }
    };
    log.flush();
    started
}

/// After an upgrade: the workers retire as after a reload, while signals
/// are still heard (SIGTERM or SIGINT hastens them to a stop).
fn retire(running: &mut Running, logs: &LogService, log: &mut crate::log::Logger) {
    running.retire();
    log.flush();
    while !running.finished() {
        match sys::signal::wait(Duration::from_millis(100)) {
            Some(Signal::Terminate) => return,
            Some(Signal::ReopenLogs) => logs.reopen(),
            Some(_) | None => {}
        }
    }
}

/// `timeouts.stop_delay`: readiness says no from now on, while the
/// listeners stay open and every request is served, so that load
/// balancers take brisk out of rotation before it stops accepting (the
/// Kubernetes pre-stop pattern). A second SIGTERM or SIGINT ends the
/// delay; SIGUSR1 still reopens the logs.
fn delay_stop(
    running: &Running,
    manager: &mut systemd::Manager,
    logs: &LogService,
    log: &mut crate::log::Logger,
) {
    running.begin_stop();
    let delay = running.config().timeouts.stop_delay;
    if delay.is_zero() {
        return;
    }
    log.log(
        Level::Info,
        format_args!("stopping in {delay:?}: still serving meanwhile, readiness answers 503"),
    );
    log.flush();
    let until = Instant::now() + delay;
    loop {
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return;
        }
        match sys::signal::wait(manager.wait_at_most(left.min(Duration::from_millis(500)))) {
            Some(Signal::Terminate) => {
                log.log(
                    Level::Info,
                    format_args!("second stop signal: stopping now"),
                );
                return;
            }
            Some(Signal::ReopenLogs) => logs.reopen(),
            Some(Signal::Hangup | Signal::Upgrade) => log.log(
                Level::Info,
                format_args!("SIGHUP or SIGUSR2 while stopping: nothing done"),
            ),
            None => {}
        }
        manager.tick(running.responsive(STUCK), log);
    }
}

/// The banner, on stderr (stdout is the access log by default, and a
/// consumer of a JSON log must not meet lines of prose first). Said once
/// nothing at the start can fail but the workers' start, so that
/// "listening on" is not followed by a refusal (a log file or an htpasswd
/// file the serving user cannot open); a daemon says it before its
/// stderr goes (a later failure is said by the process that started it),
/// a server in a chroot before entering it (its paths change there).
#[inline(never)]
fn banner(server: &Server) {
    let cfg = server.config();
    console::say(format_args!("serving {}", cfg.site.root.display()));
    for site in &cfg.sites {
        console::say(format_args!(
            "serving {} for {}",
            site.root.display(),
            site.hosts.join(", ")
        ));
    }
    for a in &server.listeners() {
        console::say(format_args!("listening on {}", url(a)));
    }
}

/// What a start that fails leaves undone: the pid file it wrote (the
/// path as configured, and which file it wrote), and a daemon's parent
/// still waiting to hear.
#[derive(Default)]
struct Undo {
    pid_file: Option<(std::path::PathBuf, pid_file::Written)>,
    daemon: Option<sys::process::Daemon>,
}

/// Serves `cfg` until SIGINT or SIGTERM; returns after a graceful drain.
/// SIGHUP reloads through `reload` (see `reload.rs`); without it, SIGHUP is
/// logged and ignored. A start that fails after it wrote the pid file
/// removes it; one that fails after it daemonized tells the process
/// that started brisk why (its stderr is /dev/null by then), which says
/// it and exits 1.
pub fn run(cfg: Config, reload: Option<Reload>) -> Result<(), Error> {
    let mut undo = Undo::default();
    let served = serve(cfg, reload, &mut undo);
    if let Err(e) = &served {
        if let Some((path, written)) = undo.pid_file.take() {
            pid_file::discard(&path, written);
        }
        if let Some(daemon) = undo.daemon.take() {
            daemon.failed(&e.to_string());
        }
    }
    served
}

fn serve(mut cfg: Config, reload: Option<Reload>, undo: &mut Undo) -> Result<(), Error> {
    // As a container's pid 1, the server is pid 1's child, pid 1 its init
    // (orphans reaped, signals passed on): before anything else.
    #[cfg(feature = "ops")]
    sys::init::stand_in().map_err(Error::Init)?;
    // Blocked before any thread exists (the log writer included), so that
    // every thread inherits the mask and a signal can only ever be taken
    // by the main thread's sigtimedwait, never by a default action.
    sys::signal::block().map_err(Error::Signals)?;
    // Socket activation: taken (and their variables removed) before
    // anything else runs.
    let passed = sys::systemd::listen_fds().map_err(Error::SocketActivation)?;
    // (Only a build with zero-downtime upgrades, the cargo feature `ops`,
    // takes sockets handed over by the brisk it replaces.)
    // (Gated, not `cfg!`: its code was kept, as dead, in the builds
    // without it, 4 KiB.)
    #[cfg(feature = "ops")]
    let mut handover = sys::upgrade::handed_over().map_err(Error::Handover)?;
    #[cfg(not(feature = "ops"))]
    let handover = None::<std::convert::Infallible>;
    let mut manager = systemd::Manager::connect().map_err(Error::Notify)?;
    // What an upgrade starts again, as brisk was started (before a
    // daemon moves to /).
    let program = this_program();
    sys::memory::one_arena();
    // Best effort: without /proc on a kernel before 5.11, inherited
    // descriptors stay as they were.
    let _ = sys::process::cloexec_inherited();
    // As loaded, before a default user is filled in: what a reload's
    // configuration is compared with.
    let loaded = cfg.restart_only();
    if let Some(note) = confine::default_user(&mut cfg) {
        console::say(format_args!("{note}"));
    }
    confine::check_identity(&cfg)?;
    if let (Some(path), None) = (&cfg.pid_file, &handover) {
        pid_file::check_free(path)?;
    }
    #[cfg(feature = "ops")]
    let mut given: Vec<Inherited> = handover
        .as_mut()
        .map(upgrade::inherited)
        .unwrap_or_default();
    #[cfg(not(feature = "ops"))]
    let mut given: Vec<Inherited> = Vec::new();
    // Where they listen: an address the configuration no longer lists
    // closes with the previous brisk, which is said.
    #[cfg(feature = "ops")]
    let handed_at: Vec<(SocketAddr, Speaks)> = (given.iter())
        .filter_map(|g| Some((g.socket.local_addr().ok()?, g.speaks?)))
        .collect();
    given.extend(
        passed
            .into_iter()
            .map(|p| Inherited::from_systemd(p.socket, &p.name)),
    );
    // QUIC's handed sockets, read once the previous brisk has gone (its
    // end of the readiness pipe closed: see `server::quic_handover`).
    #[cfg(all(feature = "http3", feature = "ops"))]
    if let Some(h) = handover.as_mut() {
        let udp = std::mem::take(&mut h.udp);
        if !udp.is_empty() {
            let lives = h.ready.try_clone().map_err(Error::Handover)?;
            crate::server::quic_handover::hand(udp, lives.into());
        }
    }
    let mut server = Server::bind_inheriting(cfg, given)?;
    #[cfg(feature = "http3")]
    crate::server::quic_handover::close_unclaimed();
    // The built-in handlers `[[handlers]]` may name (as listed in
    // config::BUILT_IN_HANDLERS, which the configuration was checked with).
    server.register("echo", crate::handlers::builtin::Echo::default())?;
    #[cfg(feature = "ops")]
    {
        let life = server.lifecycle();
        use crate::handlers::health;
        use std::sync::Arc;
        server.register("health", health::Health)?;
        server.register("ready", health::Ready(Arc::clone(&life)))?;
        server.register("metrics", health::Metrics(Arc::clone(&life)))?;
        server.register("status", health::Status(life))?;
    }
    // Looked at while the root can still be read by its path.
    let hint = server.root_hint();
    let cfg = server.config();
    // In the foreground the pid file is there before the banner says the
    // server listens (whoever waits for that line may signal it at once);
    // a daemon's pid is known only once it has forked.
    if let (Some(path), false) = (&cfg.pid_file, cfg.daemon) {
        undo.pid_file = Some((path.clone(), pid_file::write(path)?));
    }
    // (The process that started brisk waits until `ready` below.)
    if cfg.daemon {
        banner(&server);
        undo.daemon = Some(sys::process::daemonize().map_err(Error::Daemonize)?);
        if let Some(path) = &cfg.pid_file {
            undo.pid_file = Some((path.clone(), pid_file::write(path)?));
        }
    }
    // Started as root to serve as another user: the logs it makes are
    // that user's, as under systemd (logrotate's `su brisk adm`).
    if let (Some(user), 0) = (&cfg.user, sys::privileges::euid()) {
        sys::fs::own_logs_as(user.uid, cfg.group.as_ref().map(|g| g.gid).or(user.gid));
    }
    let origins = cfg.log_origins.each_ref().map(Option::as_deref);
    let mut open_logs = LogService::open_from(&cfg.log, origins)?;
    // Once the pid file and the logs exist, and while their paths can
    // still be read from outside a chroot.
    server.protect_own_files()?;
    let warnings = server.config().warnings();
    let cfg = server.config();
    // Forked while brisk is as it started (identity, no sandbox, no
    // chroot), before any thread exists.
    let upgrader = match (
        cfg!(feature = "ops") && cfg.upgrade && !under_init(),
        program,
    ) {
        (true, Some(p)) => Some(Upgrader::start(p).map_err(Error::UpgradeHelper)?),
        _ => None,
    };
    #[cfg(feature = "acme")]
    let (acme, storage_note) = match prepare_acme(server.config())? {
        Some((a, note)) => (Some(a), note),
        None => (None, None),
    };
    // (Read while /proc/sys can be: the ticket keys' lock names it.)
    #[cfg(feature = "ops")]
    sys::fs::lock_holder();
    // (The mount table, opened while /proc can be: a chroot hides it.)
    #[cfg(feature = "webdav")]
    let mut mounts = sys::fs::MountWatch::new();
    // (Paths as configured: in a chroot they change.)
    let jailed = cfg.chroot.is_some() && !cfg.daemon;
    if jailed {
        banner(&server);
    }
    let mut confined = confine::confine(&mut server, &mut open_logs)?;
    if let Some(hint) = hint {
        confined.notes.insert(0, (Level::Info, hint));
    }
    confined
        .notes
        .extend(warnings.into_iter().map(|w| (Level::Warn, w)));
    #[cfg(feature = "acme")]
    confined
        .notes
        .extend(storage_note.map(|n| (Level::Info, n)));
    #[cfg(feature = "ops")]
    if handover.is_some() {
        let serving = server.local_addrs();
        let handed = handed_at.iter().filter(|a| serving.contains(&a.0)).count();
        confined.notes.push((
            Level::Info,
            format!(
                "upgrade: serving on the {handed} listening socket{} the previous brisk handed over",
                if handed == 1 { "" } else { "s" }
            ),
        ));
        for (i, a) in handed_at.iter().enumerate() {
            if !serving.contains(&a.0) && !handed_at[..i].contains(a) {
                confined.notes.push((
                    Level::Info,
                    format!(
                        "upgrade: no longer listening on {} (the configuration does not list it)",
                        url(a)
                    ),
                ));
            }
        }
    }
    let cfg = server.config();
    // (Each connection takes a descriptor: past the process's limit,
    // max_connections cannot be reached. nginx warns so of its
    // worker_connections.)
    let nofile = sys::process::nofile_limit();
    if cfg.limits.max_connections as u64 >= nofile {
        confined.notes.push((
            Level::Warn,
            format!(
                "limits.max_connections = {} is more than the {nofile} descriptors the process \
                 may open (ulimit -n, systemd's LimitNOFILE): near {nofile} connections new \
                 ones wait and files fail to open (EMFILE); raise that limit, or lower \
                 max_connections",
                cfg.limits.max_connections
            ),
        ));
    }
    if cfg.holds_bodies() {
        // Now as the server will run (its user, its sandbox): a directory
        // it cannot use would otherwise show only on the first large
        // chunked upload.
        spool::probe(&cfg.temp_dir).map_err(|source| Error::TempDir {
            origin: cfg.temp_dir_origin.clone(),
            dir: cfg.temp_dir.clone(),
            source,
        })?;
    } else if cfg.holds_answers() {
        #[cfg(feature = "upstreams")]
        if let Err(e) = spool::probe(&cfg.temp_dir) {
            confined.notes.push((
                Level::Warn,
                format!(
                    "{}: {}: {e}: answers of [[reverse_proxy]] rules cannot be read ahead \
                     of slow clients (buffer_answer) and go as each client takes them; set \
                     temp_dir to a directory the server can write to (inside its chroot), or \
                     buffer_answer = false",
                    cfg.temp_dir_origin
                        .as_deref()
                        .unwrap_or(error::DEFAULT_TEMP_DIR),
                    cfg.temp_dir.display()
                ),
            ));
        }
    }
    // (And each htpasswd file, which every worker reads again whenever it
    // changes: one the server cannot read would stop each worker as it
    // starts, after the banner said brisk listens.)
    probe_htpasswd(cfg)?;
    // (Likewise a WebDAV tree it cannot write: said, not refused, since
    // a disk may be mounted or mended later.)
    #[cfg(feature = "webdav")]
    confined.notes.extend(
        crate::handlers::webdav::unwritable(cfg)
            .into_iter()
            .map(|line| (Level::Warn, line)),
    );
    // The pid file as seen from where the server runs (inside the chroot).
    let pid_file = cfg.pid_file.clone();
    if !jailed && !cfg.daemon {
        banner(&server);
    }
    let logs = open_logs.start()?;
    let mut running = server.start(&logs)?;
    let mut main_log = logs.handle();
    for (level, note) in &confined.notes {
        main_log.log(*level, format_args!("{note}"));
    }
    main_log.log(
        Level::Info,
        format_args!(
            "started {} {}",
            running.workers(),
            if running.workers() == 1 {
                "worker"
            } else {
                "workers"
            }
        ),
    );
    main_log.flush();
    #[cfg(feature = "acme")]
    let mut acme_thread = acme
        .clone()
        .and_then(|a| start_acme(&running, a, logs.handle(), &mut main_log));
    #[cfg(feature = "acme")]
    let mut acme_started = running.config().acme().cloned();
    manager.ready("serving", &mut main_log);
    if let Some(d) = undo.daemon.take() {
        d.ready();
    }
    // Serving: the pid file is removed at the end (see pid_file::remove).
    let mut written = undo.pid_file.take().and_then(|(_, written)| written);
    #[cfg_attr(not(feature = "ops"), allow(unused_mut))]
    let mut stop = None;
    #[cfg(feature = "ops")]
    if let Some(h) = handover.take() {
        // The previous brisk waits for this to retire.
        if let Err(e) = sys::upgrade::say_ready(&h.ready) {
            main_log.log(
                Level::Error,
                format_args!("the previous brisk gave up on this upgrade ({e}); stopping"),
            );
            stop = Some(Stop::WorkerDied);
        }
    }
    let mut pending: Option<upgrade::Pending> = None;
    // Whether brisk's own files were replaced more often than it can
    // remember since the last load (said once until the next).
    let mut own_files_full = false;
    // Where each symlinked root was last seen to lead (said once a move).
    let mut moved: Vec<(std::path::PathBuf, std::path::PathBuf)> = Vec::new();
    let stop = match stop {
        Some(s) => s,
        None => loop {
            let wait = match pending {
                Some(_) => Duration::from_millis(100),
                None => Duration::from_millis(500),
            };
            let signal = sys::signal::wait(manager.wait_at_most(wait));
            #[cfg(feature = "webdav")]
            if signal.is_none() && mounts.changed() && folding_moved(running.config()) {
                refold(&mut running, &logs, &mut main_log);
            }
            if signal.is_none() {
                roots_moved(running.config(), &mut moved, &mut main_log);
            }
            match signal {
                Some(Signal::Terminate) => break Stop::Asked,
                Some(Signal::ReopenLogs) => {
                    // (logrotate's `create` made the new files already.)
                    learn_own_files(&running, &mut own_files_full, &mut main_log);
                    logs.reopen();
                }
                Some(Signal::Hangup) => {
                    // A reload reopens the logs too, as nginx's does: a
                    // logrotate snippet whose postrotate reloads would
                    // otherwise leave brisk writing to the rotated file,
                    // lost once logrotate compresses and removes it.
                    learn_own_files(&running, &mut own_files_full, &mut main_log);
                    logs.reopen_on("reload (SIGHUP)");
                    own_files_full = false;
                    manager.reloading(&mut main_log);
                    let done = reload::on_hangup(
                        reload.as_ref(),
                        &loaded,
                        &confined,
                        &mut running,
                        &logs,
                        &mut main_log,
                    );
                    manager.ready(done, &mut main_log);
                    // A reload that changed `[acme]` (names added, the CA's
                    // address resolved again) starts its thread anew.
                    #[cfg(feature = "acme")]
                    if let Some(a) = acme
                        .as_ref()
                        .filter(|_| running.config().acme() != acme_started.as_ref())
                    {
                        drop(acme_thread.take());
                        acme_started = running.config().acme().cloned();
                        acme_thread = start_acme(&running, a.clone(), logs.handle(), &mut main_log);
                    }
                }
                Some(Signal::Upgrade) if cfg!(feature = "ops") => {
                    pending = start_upgrade(upgrader.as_ref(), pending, &running, &mut main_log)
                }
                Some(Signal::Upgrade) => {
                    let why = "this brisk was built without upgrades (the cargo feature `ops`)";
                    main_log.log(Level::Info, format_args!("SIGUSR2: {why}; nothing done"));
                    main_log.flush();
                }
                None => {}
            }
            if let Some(p) = pending.as_mut() {
                match p.progress() {
                    upgrade::Progress::Waiting => {}
                    upgrade::Progress::Ready => {
                        main_log.log(
                            Level::Info,
                            format_args!(
                                "SIGUSR2: the new brisk (pid {}) serves; this one finishes its requests and exits",
                                p.pid()
                            ),
                        );
                        break Stop::Upgraded;
                    }
                    upgrade::Progress::Failed(why) => {
                        let pid = p.pid();
                        let done = pending.take().map(|p| p.abandon(upgrader.as_ref()));
                        main_log.log(
                            Level::Error,
                            format_args!(
                                "SIGUSR2: upgrade failed: {why}; {}; still serving",
                                done.unwrap_or_default()
                            ),
                        );
                        // A new brisk that wrote its pid before it failed.
                        if let Some(path) = pid_file.as_deref() {
                            pid_file::reclaim(path, pid, &mut written, &mut main_log);
                        }
                    }
                }
                main_log.flush();
            }
            learn_own_files(&running, &mut own_files_full, &mut main_log);
            running.reap();
            if running.worker_died() {
                main_log.log(
                    Level::Error,
                    format_args!("a worker stopped unexpectedly; shutting down"),
                );
                main_log.flush();
                break Stop::WorkerDied;
            }
            manager.tick(running.responsive(STUCK), &mut main_log);
        },
    };
    if stop == Stop::Upgraded {
        // The sockets are the new brisk's now: no STOPPING for the service
        // manager, no stop delay, the pid file stays (it names the new one).
        retire(&mut running, &logs, &mut main_log);
    } else {
        manager.stopping("stopping", &mut main_log);
        if stop == Stop::Asked {
            delay_stop(&running, &mut manager, &logs, &mut main_log);
        }
        main_log.log(
            Level::Info,
            format_args!(
                "shutting down; draining for up to {:?}",
                running.config().timeouts.shutdown
            ),
        );
        main_log.flush();
    }
    // (A new brisk still starting gets as long as the drain may take.)
    let drained_by = Instant::now() + running.config().timeouts.shutdown;
    // (A second SIGTERM or SIGINT ends the drain: every connection is
    // closed at once.)
    let left = running.stop_unless(Some(
        &mut || match sys::signal::wait(Duration::from_millis(50)) {
            Some(Signal::Terminate) => {
                main_log.log(
                    Level::Info,
                    format_args!("second stop signal: closing every connection now"),
                );
                main_log.flush();
                true
            }
            Some(Signal::ReopenLogs) => {
                logs.reopen();
                false
            }
            Some(_) | None => false,
        },
    ));
    if left > 0 {
        // (Held by code that never returns to its loop: the process's
        // exit ends them; waiting would never end.)
        main_log.log(
            Level::Error,
            format_args!(
                "{left} worker(s) still running {:?} after the drain ended; stopping without them",
                crate::server::STOP_GRACE
            ),
        );
    }
    // Stopped while an upgrade was under way: a new brisk that serves by
    // the end of the drain's time has the sockets (and the pid file); one
    // that does not would find nobody waiting, or hold the sockets for
    // ever if stuck: killed.
    if let Some(mut p) = pending.take().filter(|_| stop != Stop::Upgraded) {
        let line = match p.progress_by(drained_by) {
            upgrade::Progress::Ready => format!(
                "SIGUSR2: the new brisk (pid {}) serves; this one stops",
                p.pid()
            ),
            upgrade::Progress::Waiting | upgrade::Progress::Failed(_) => {
                let pid = p.pid();
                let line = format!(
                    "SIGUSR2: the upgrade is given up as brisk stops: {}",
                    p.abandon(upgrader.as_ref())
                );
                if let Some(path) = pid_file.as_deref() {
                    pid_file::reclaim(path, pid, &mut written, &mut main_log);
                }
                line
            }
        };
        main_log.log(Level::Info, format_args!("{line}"));
    }
    drop(upgrader);
    match (stop, confined.privileged.as_deref()) {
        (Stop::Upgraded, Some(helper)) => {
            let _ = helper.leave();
        }
        (Stop::Upgraded, None) => {}
        _ => pid_file::remove(
            confined.privileged.as_deref(),
            loaded.pid_file.as_deref(),
            pid_file.as_deref(),
            written,
            &mut main_log,
        ),
    }
    main_log.log(Level::Info, format_args!("stopped"));
    main_log.flush();
    drop(main_log);
    logs.shutdown();
    // (Not a stop anyone asked for: a service manager restarts a brisk
    // that exits with a failure, and `Restart=on-failure` only that one.)
    match stop {
        Stop::WorkerDied => Err(Error::WorkerDied),
        Stop::Asked | Stop::Upgraded => Ok(()),
    }
}

/// Opens each `[[auth]]` rule's htpasswd file as the server runs (its
/// user, its sandbox): the first it cannot read is an error naming the
/// rule, the file and the user. (The configuration was loaded as brisk
/// started, as root maybe: the file was readable then.)
fn probe_htpasswd(cfg: &Config) -> Result<(), Error> {
    use crate::config::SiteConfig;
    for (prefix, site) in SiteConfig::all_keyed(cfg) {
        for (i, rule) in site.auth.iter().enumerate() {
            if let Err(source) = std::fs::File::open(&rule.htpasswd) {
                return Err(Error::Htpasswd {
                    setting: match rule.origin.is_empty() {
                        true => format!("{prefix}auth[{}].htpasswd", i + 1),
                        false => rule.origin.clone(),
                    },
                    path: rule.htpasswd.clone(),
                    user: cfg.user.as_ref().map(|u| u.name.clone()),
                    uid: sys::privileges::euid(),
                    source,
                });
            }
        }
    }
    Ok(())
}

/// Whether the trees of `cfg`'s sites now find names whatever their
/// case in other places than `cfg` was loaded with (a USB stick plugged
/// in beneath a share: see `SiteConfig::folding`).
#[cfg(feature = "webdav")]
fn folding_moved(cfg: &Config) -> bool {
    use crate::config::SiteConfig;
    SiteConfig::all(cfg).any(|site| {
        let now = site.folding_areas().into_iter().map(|(_, _, area)| area);
        !now.eq(site.folding.areas().map(str::to_string))
    })
}

/// A filesystem that finds names whatever their case was mounted (or one
/// unmounted) beneath a tree: the running configuration is served again,
/// its rules matching paths there in any case. Not the file read again,
/// which may hold an edit waiting for a restart, or an error: refused,
/// that left `/disk/SECRET/` unguarded by `path = "/disk/secret/"`.
#[cfg(feature = "webdav")]
fn refold(running: &mut Running, logs: &crate::log::LogService, log: &mut crate::log::Logger) {
    let said = "a filesystem that finds names whatever their case was mounted (or one unmounted) beneath a tree brisk serves";
    if running.config().chroot.is_some() {
        log.log(
            Level::Error,
            format_args!("{said}, and a chroot'ed brisk cannot serve its configuration again: its rules match paths there as spelt until a restart"),
        );
        log.flush();
        return;
    }
    let mut cfg = running.config().clone();
    let _ = cfg.fold_case(|_, _, dir, why| {
        log.log(
            Level::Error,
            format_args!("{} is on a filesystem that finds a name whatever its case (exFAT, vfat, SMB), and {why}: a start would refuse this; fix it and restart", dir.display()),
        );
        Ok::<(), ()>(())
    });
    match running.reload(cfg, logs) {
        Ok(()) => log.log(
            Level::Warn,
            format_args!("{said}: serving the configuration again, its rules matching paths there in any case"),
        ),
        Err(e) => log.log(
            Level::Error,
            format_args!("{said}, and serving the configuration again failed ({e}): its rules match paths there as spelt"),
        ),
    }
    log.flush();
}

/// Says, once each time, when a document root written as a symlink (a
/// deploy's `current -> releases/N`) leads elsewhere than the directory
/// brisk serves, which it opened at load: nginx follows the link at each
/// request, brisk at a reload (or, with the sandbox on, whose Landlock
/// rules name the directory, at `brisk --upgrade`). `seen` holds what
/// was said.
fn roots_moved(
    cfg: &Config,
    seen: &mut Vec<(std::path::PathBuf, std::path::PathBuf)>,
    log: &mut crate::log::Logger,
) {
    use crate::config::SiteConfig;
    // (A chroot'ed server sees neither the links nor their targets.)
    if cfg.chroot.is_some() {
        return;
    }
    for site in SiteConfig::all(cfg) {
        let Some(link) = &site.root_link else {
            continue;
        };
        // (Gone for a moment, as `ln -sfn` leaves it: looked at again.)
        let Ok(now) = crate::sys::fs::canonical(link) else {
            continue;
        };
        let said = seen.iter().position(|(l, _)| l == link);
        if now == site.root || said.is_some_and(|i| seen[i].1 == now) {
            continue;
        }
        match said {
            Some(i) => seen[i].1 = now.clone(),
            None => seen.push((link.clone(), now.clone())),
        }
        let how = match cfg.sandbox {
            true => "brisk --upgrade (SIGUSR2), since the sandbox's Landlock rules name the directory served",
            false => "a reload (brisk --reload, SIGHUP)",
        };
        log.log(
            Level::Warn,
            format_args!(
                "the document root {} now leads to {}; brisk serves {} (where it led when the configuration was loaded) until {how}",
                link.display(),
                now.display(),
                site.root.display()
            ),
        );
        log.flush();
    }
}

/// Looks at brisk's own files again (see [`Running::learn_own_files`]),
/// twice a second and on SIGUSR1; says once when a reload is needed.
fn learn_own_files(running: &Running, full: &mut bool, log: &mut crate::log::Logger) {
    if running.learn_own_files() || *full {
        return;
    }
    *full = true;
    log.log(
        Level::Warn,
        format_args!(
            "brisk's own files under a document root were replaced more than {} times since the configuration was loaded: reload (brisk --reload) so that the newest are never served either",
            crate::handlers::protected::LATER
        ),
    );
    log.flush();
}

/// What the ACME thread is given, made before the sandbox and the
/// privilege drop: its storage (0700, owned by the user brisk will run
/// as), its HTTPS client (the roots it trusts, read now), and this
/// server's name for the storage's locks.
#[cfg(feature = "acme")]
#[derive(Clone)]
struct AcmePrepared {
    client: crate::acme::http::Client,
    holder: String,
}

/// Prepares the ACME thread of `[acme]`, if any, with a line to log if
/// its storage changed hands; an error names the key.
#[cfg(feature = "acme")]
fn prepare_acme(cfg: &Config) -> Result<Option<(AcmePrepared, Option<String>)>, Error> {
    use std::os::unix::fs::DirBuilderExt as _;
    let Some(acme) = cfg.acme() else {
        return Ok(None);
    };
    let fail = |what: String| {
        Error::Config(crate::config::ConfigError {
            message: format!("{}: {what}", acme.origin),
        })
    };
    let dir = &acme.storage;
    // (Its parents as `mkdir -p` makes them, open to look through: made
    // 0700 by root, they kept the user brisk serves as out of its own
    // storage. The storage itself is the user's alone.)
    let existed = dir.exists();
    let note = make_parents(dir)
        .and_then(|()| {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)
        })
        .and_then(|()| match (&cfg.user, sys::privileges::euid()) {
            (Some(user), 0) => {
                let gid = cfg.group.as_ref().map(|g| g.gid).or(user.gid);
                give_storage(dir, existed, (user.uid, gid))
            }
            _ => Ok(None),
        })
        .map_err(|e| fail(format!("storage {}: {e}", dir.display())))?;
    let cas: Vec<&std::path::Path> = acme.ca_roots.iter().map(|p| p.as_path()).collect();
    let roots = crate::tls::client::roots(&cas).map_err(|e| {
        Error::Config(crate::config::ConfigError {
            message: format!("{}: {e}", acme.ca_roots_origin),
        })
    })?;
    let client = crate::acme::http::Client::new(roots, Duration::from_secs(30)).map_err(fail)?;
    let prepared = AcmePrepared {
        client,
        holder: sys::fs::lock_holder().to_string(),
    };
    Ok(Some((prepared, note)))
}

/// Gives the ACME storage `dir` to the user brisk serves as (`to`), as
/// root: one brisk made now is its own; one that `existed` and is that
/// user's stays as it is. Another owner's is taken only if it is private
/// (no group or other permission bits: a storage brisk made while it
/// served as another user, whose keys the new one must read), with what
/// that owner has in it (directories, and files with one link: never
/// through a symlink, nor a file linked from elsewhere); a directory
/// others may enter or write (`/tmp`, `/var/lib`) is refused, not made
/// the user's. Returns a line to log when it changed hands.
#[cfg(feature = "acme")]
fn give_storage(
    dir: &std::path::Path,
    existed: bool,
    (uid, gid): (u32, Option<u32>),
) -> std::io::Result<Option<String>> {
    use std::os::unix::fs::{lchown, MetadataExt as _};
    let meta = std::fs::metadata(dir)?;
    if !existed {
        lchown(dir, Some(uid), gid)?;
        return Ok(None);
    }
    if meta.uid() == uid {
        return Ok(None);
    }
    let (was, mode) = (meta.uid(), meta.mode() & 0o7777);
    if mode & 0o077 != 0 {
        return Err(std::io::Error::other(format!(
            "owned by uid {was} with mode {mode:o}, which other users may enter: brisk keeps \
             private keys there and gives its storage to the user it serves as (uid {uid}); \
             name a directory of its own (brisk makes a missing one, 0700)"
        )));
    }
    fn walk(
        dir: &std::path::Path,
        was: u32,
        to: (u32, Option<u32>),
        depth: u32,
    ) -> std::io::Result<()> {
        for entry in std::fs::read_dir(dir)? {
            let path = entry?.path();
            let m = std::fs::symlink_metadata(&path)?;
            if m.uid() != was {
                continue;
            }
            if m.is_dir() && depth < 8 {
                walk(&path, was, to, depth + 1)?;
                lchown(&path, Some(to.0), to.1)?;
            } else if m.is_file() && m.nlink() == 1 {
                lchown(&path, Some(to.0), to.1)?;
            }
        }
        Ok(())
    }
    walk(dir, was, (uid, gid), 0)?;
    lchown(dir, Some(uid), gid)?;
    Ok(Some(format!(
        "acme: storage {}: given to uid {uid}, the user brisk serves as (it was uid {was}'s)",
        dir.display()
    )))
}

/// Makes the missing directories above `dir`, each 0755 whatever the
/// umask (`mkdir -p`'s, under the usual one).
#[cfg(feature = "acme")]
fn make_parents(dir: &std::path::Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt as _;
    let missing: Vec<&std::path::Path> = dir
        .ancestors()
        .skip(1)
        .take_while(|up| !up.as_os_str().is_empty() && !up.exists())
        .collect();
    for up in missing.into_iter().rev() {
        match std::fs::create_dir(up) {
            Ok(()) => std::fs::set_permissions(up, std::fs::Permissions::from_mode(0o755))?,
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Starts the ACME thread (its failures are logged: the server serves
/// what it can meanwhile).
#[cfg(feature = "acme")]
fn start_acme(
    running: &Running,
    prepared: AcmePrepared,
    log: crate::log::Logger,
    main_log: &mut crate::log::Logger,
) -> Option<crate::acme::manager::Thread> {
    use crate::acme::manager;
    let live = running.tls_live()?;
    let Some(acme) = running.config().acme() else {
        // (A reload took `[acme]` out: none of its certificates is served
        // any more, as after a restart.)
        live.keep_only(&[], false);
        return None;
    };
    let mut client = prepared.client;
    if let (host, port, Some(addr)) = &acme.directory_addr {
        client.pin(host, *port, *addr);
    }
    let settings = manager::Settings {
        directory: acme.directory.clone(),
        email: acme.email.clone(),
        names: acme.hosts.clone(),
        local: acme.local.clone(),
        kinds: acme.challenges.clone(),
        storage: acme.storage.clone(),
        jail: running.config().chroot.clone(),
        holder: prepared.holder,
        key_type: acme.key_type,
        eab: acme.eab.clone(),
    };
    match manager::spawn(settings, client, live, log) {
        Ok(thread) => Some(thread),
        Err(e) => {
            main_log.log(
                Level::Error,
                format_args!("acme: cannot start its thread: {e}; no certificate will be ordered"),
            );
            None
        }
    }
}
