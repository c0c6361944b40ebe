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

pub mod confine;
mod error;
mod pid_file;
mod reload;
mod systemd;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use crate::config::{Config, Level, Reload};
use crate::handlers::spool;
use crate::log::{console, LogService};
use crate::server::{Inherited, Running, Server, Speaks};
use crate::sys::{self, signal::Signal};

pub use error::Error;

/// `http://addr/` (`https://` for a TLS listener; a PROXY protocol one
/// says so), as the start-up and reload lines show an address.
fn url((addr, speaks): &(SocketAddr, Speaks)) -> String {
    let (scheme, note) = match speaks {
        Speaks::Http => ("http", ""),
        Speaks::Https => ("https", ""),
        Speaks::Proxy => ("http", " (PROXY protocol)"),
    };
    match addr {
        SocketAddr::V4(a) => format!("{scheme}://{}:{}/{note}", a.ip(), a.port()),
        SocketAddr::V6(a) => format!("{scheme}://[{}]:{}/{note}", a.ip(), a.port()),
    }
}

/// Warnings about the TLS key files: one readable by every user (its
/// secret is the server's identity; nginx's guides say 600 or 640).
#[cfg(feature = "tls")]
fn tls_notes(cfg: &Config) -> confine::Notes {
    cfg.tls
        .iter()
        .flat_map(|tls| &tls.certificates)
        .filter_map(|c| crate::tls::certs::key_warning(&c.files.key))
        .map(|w| (Level::Warn, w))
        .collect()
}

/// None without TLS: such a build refuses `[tls]` when it loads the
/// configuration.
#[cfg(not(feature = "tls"))]
fn tls_notes(_: &Config) -> confine::Notes {
    confine::Notes::new()
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
            Some(Signal::Hangup) => log.log(
                Level::Info,
                format_args!("SIGHUP while stopping: not reloaded"),
            ),
            None => {}
        }
        manager.tick(running.responsive(STUCK), log);
    }
}

/// Serves `cfg` until SIGINT or SIGTERM; returns after a graceful drain.
/// SIGHUP reloads through `reload` (see `reload.rs`); without it, SIGHUP is
/// logged and ignored.
pub fn run(mut cfg: Config, reload: Option<Reload>) -> Result<(), Error> {
    // Blocked before any thread exists (the log writer included), so that
    // every thread inherits the mask and a signal can only ever be taken
    // by the main thread's sigtimedwait, never by a default action.
    sys::signal::block().map_err(Error::Signals)?;
    // Socket activation: taken (and their variables removed) before
    // anything else runs.
    let passed = sys::systemd::listen_fds().map_err(Error::SocketActivation)?;
    let mut manager = systemd::Manager::connect().map_err(Error::Notify)?;
    let tls_notes = tls_notes(&cfg);
    sys::memory::one_arena();
    // Best effort: a kernel without close_range (before 5.11) leaves
    // inherited descriptors as they were.
    let _ = sys::process::cloexec_inherited();
    // As loaded, before a default user is filled in: what a reload's
    // configuration is compared with.
    let loaded = cfg.clone();
    if let Some(note) = confine::default_user(&mut cfg) {
        console::say(format_args!("{note}"));
    }
    confine::check_identity(&cfg)?;
    let given = passed
        .into_iter()
        .map(|p| Inherited::from_systemd(p.socket, &p.name))
        .collect();
    let mut server = Server::bind_inheriting(cfg, given)?;
    // The built-in handlers `[[handlers]]` may name (as listed in
    // config::BUILT_IN_HANDLERS, which the configuration was checked with).
    server.register("echo", crate::handlers::builtin::Echo::default())?;
    // Looked at while the root can still be read by its path.
    let hint = server.root_hint();
    let cfg = server.config();
    // The banner goes to stderr: stdout is the access log by default, and
    // a consumer of a JSON log must not meet two lines of prose first.
    console::say(format_args!("serving {}", cfg.root.display()));
    for a in &server.listeners() {
        console::say(format_args!("listening on {}", url(a)));
    }
    if cfg.daemon {
        sys::process::daemonize().map_err(Error::Daemonize)?;
    }
    if let Some(path) = &cfg.pid_file {
        pid_file::write(path)?;
    }
    let mut open_logs = LogService::open(&cfg.log)?;
    let mut confined = confine::confine(&mut server, &mut open_logs)?;
    if let Some(hint) = hint {
        confined.notes.insert(0, (Level::Info, hint));
    }
    confined.notes.extend(tls_notes);
    let cfg = server.config();
    if !cfg.cgi.is_empty() {
        // Now as the server will run (its user, its sandbox): a directory
        // it cannot use would otherwise show only on the first large
        // chunked upload.
        spool::probe(&cfg.temp_dir).map_err(|source| Error::TempDir {
            dir: cfg.temp_dir.clone(),
            source,
        })?;
    }
    // The pid file as seen from where the server runs (inside the chroot).
    let pid_file = cfg.pid_file.clone();
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
    manager.ready("serving", &mut main_log);
    let stop = loop {
        match sys::signal::wait(manager.wait_at_most(Duration::from_millis(500))) {
            Some(Signal::Terminate) => break Stop::Asked,
            Some(Signal::ReopenLogs) => logs.reopen(),
            Some(Signal::Hangup) => {
                manager.reloading(&mut main_log);
                let before = running.listeners();
                match reload::reload_config(
                    reload.as_ref(),
                    &loaded,
                    confined.sandboxes.as_ref(),
                    confined.privileged.as_deref(),
                    &mut running,
                    &logs,
                ) {
                    Ok(()) => {
                        main_log.flush();
                        main_log = logs.handle_for(&running.config().log);
                        main_log.log(
                        Level::Info,
                        format_args!(
                            "SIGHUP: configuration reloaded; {} {}, the previous ones finish their requests",
                            running.workers(),
                            if running.workers() == 1 { "new worker serves" } else { "new workers serve" }
                        ),
                        );
                        for a in running.listeners() {
                            if !before.contains(&a) {
                                main_log.log(
                                    Level::Info,
                                    format_args!("SIGHUP: now also listening on {}", url(&a)),
                                );
                            }
                        }
                        manager.ready("serving (configuration reloaded)", &mut main_log);
                    }
                    Err(e) => {
                        main_log.log(
                            Level::Error,
                            format_args!("SIGHUP: {e}; still serving the previous configuration"),
                        );
                        manager.ready(
                            "serving (a reload failed: see the error log)",
                            &mut main_log,
                        );
                    }
                }
                main_log.flush();
            }
            None => {}
        }
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
    };
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
    running.stop();
    pid_file::remove(
        confined.privileged.as_deref(),
        loaded.pid_file.as_deref(),
        pid_file.as_deref(),
        &mut main_log,
    );
    main_log.log(Level::Info, format_args!("stopped"));
    main_log.flush();
    drop(main_log);
    logs.shutdown();
    Ok(())
}
