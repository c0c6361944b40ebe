//! Event loops, listeners, connections, timers, shutdown.
//!
//! [`run`] binds every listener first (one `SO_REUSEPORT` socket per
//! address per worker), opens the logs, confines the process (chroot,
//! user switch, sandbox: see [`confine`]), starts the workers, then waits
//! for signals on the main thread: SIGINT/SIGTERM drain and stop, SIGUSR1
//! reopens the logs.

pub mod confine;
pub mod conn;
pub mod output;
pub mod response;
pub mod worker;

use std::io::Write;
use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::config::{Config, Level};
use crate::handlers::static_files::Site;
use crate::log::LogService;
use crate::sys::{self, signal::Signal};
use worker::{Worker, WorkerInit};

/// Binds `addr` once per worker with `SO_REUSEPORT`. A probe bind without
/// it comes first, so an address already served by another process is an
/// error rather than silently shared; port 0 is resolved by the probe.
fn bind_all(
    addr: SocketAddr,
    workers: usize,
    defer: Duration,
) -> Result<(SocketAddr, Vec<TcpListener>), String> {
    let probe = sys::net::listen(&addr, false, 1, Duration::ZERO)
        .map_err(|e| format!("cannot listen on {addr}: {e}"))?;
    let real = probe
        .local_addr()
        .map_err(|e| format!("cannot listen on {addr}: {e}"))?;
    drop(probe);
    let mut out = Vec::with_capacity(workers);
    for _ in 0..workers {
        out.push(
            sys::net::listen(&real, true, 4096, defer)
                .map_err(|e| format!("cannot listen on {real}: {e}"))?,
        );
    }
    Ok((real, out))
}

fn url(addr: &SocketAddr) -> String {
    match addr {
        SocketAddr::V4(a) => format!("http://{}:{}/", a.ip(), a.port()),
        SocketAddr::V6(a) => format!("http://[{}]:{}/", a.ip(), a.port()),
    }
}

/// A bound server, not yet serving: the listeners exist, so the
/// addresses (with port 0 resolved) are known.
pub struct Server {
    cfg: Arc<Config>,
    site: Arc<Site>,
    per_worker: Vec<Vec<TcpListener>>,
    addrs: Vec<SocketAddr>,
}

impl Server {
    /// Opens the document root and binds every listen address, one
    /// `SO_REUSEPORT` socket per worker.
    pub fn bind(cfg: Config) -> Result<Server, String> {
        let cfg = Arc::new(cfg);
        let _ = sys::process::raise_nofile_limit();
        let site = Arc::new(
            Site::new(Arc::clone(&cfg))
                .map_err(|e| format!("cannot open root {}: {e}", cfg.root.display()))?,
        );
        let workers = cfg.workers.max(1);
        let mut per_worker: Vec<Vec<TcpListener>> = (0..workers).map(|_| Vec::new()).collect();
        let mut addrs = Vec::new();
        for addr in &cfg.listen {
            let (real, listeners) = bind_all(*addr, workers, cfg.timeouts.defer_accept)?;
            addrs.push(real);
            for (w, l) in listeners.into_iter().enumerate() {
                per_worker[w].push(l);
            }
        }
        Ok(Server {
            cfg,
            site,
            per_worker,
            addrs,
        })
    }

    /// Replaces the configuration with `cfg` (the same one as seen from
    /// inside a chroot) and opens the document root again by its path
    /// there. Call it after `chroot` and before [`Server::start`].
    pub fn rebase(&mut self, cfg: Config) -> Result<(), String> {
        let cfg = Arc::new(cfg);
        let site = Site::new(Arc::clone(&cfg)).map_err(|e| {
            format!(
                "cannot open root {} inside the chroot: {e}",
                cfg.root.display()
            )
        })?;
        self.site = Arc::new(site);
        self.cfg = cfg;
        Ok(())
    }

    /// The configuration being served.
    pub fn config(&self) -> &Config {
        &self.cfg
    }

    /// The bound addresses, in the order of `listen`.
    pub fn local_addrs(&self) -> &[SocketAddr] {
        &self.addrs
    }

    /// Starts the worker threads; each logs through `logs`.
    pub fn start(self, logs: &LogService) -> Result<Running, String> {
        let shutdown = Arc::new(AtomicBool::new(false));
        let mut wakers = Vec::new();
        let mut threads = Vec::new();
        for (id, listeners) in self.per_worker.into_iter().enumerate() {
            let (poll, waker) =
                worker::poll_and_waker().map_err(|e| format!("cannot create event loop: {e}"))?;
            let init = WorkerInit {
                id,
                site: Arc::clone(&self.site),
                listeners,
                logger: logs.handle(),
                shutdown: Arc::clone(&shutdown),
                poll,
            };
            let t = std::thread::Builder::new()
                .name(format!("brisk-worker-{id}"))
                .spawn(move || match Worker::new(init) {
                    Ok(w) => w.run(),
                    Err(e) => eprintln!("brisk: cannot start worker {id}: {e}"),
                })
                .map_err(|e| format!("cannot start worker thread: {e}"))?;
            wakers.push(waker);
            threads.push(t);
        }
        Ok(Running {
            cfg: self.cfg,
            shutdown,
            wakers,
            threads,
        })
    }
}

/// Serving workers.
pub struct Running {
    cfg: Arc<Config>,
    shutdown: Arc<AtomicBool>,
    wakers: Vec<mio::Waker>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Running {
    /// How many worker threads serve.
    pub fn workers(&self) -> usize {
        self.threads.len()
    }

    /// Whether a worker has stopped on its own (it should not).
    pub fn worker_died(&self) -> bool {
        self.threads.iter().any(|t| t.is_finished())
    }

    /// Graceful stop: no new connections, in-flight responses get up to
    /// `timeouts.shutdown` to finish; returns when every worker is done.
    pub fn stop(self) {
        self.shutdown.store(true, Ordering::Relaxed);
        for w in &self.wakers {
            let _ = w.wake();
        }
        for t in self.threads {
            let _ = t.join();
        }
    }

    /// The configuration being served.
    pub fn config(&self) -> &Config {
        &self.cfg
    }
}

/// Serves `cfg` until SIGINT or SIGTERM; returns after a graceful drain.
pub fn run(mut cfg: Config) -> Result<(), String> {
    // Blocked before any thread exists (the log writer included), so that
    // every thread inherits the mask and a signal can only ever be taken
    // by the main thread's sigtimedwait, never by a default action.
    sys::signal::block().map_err(|e| format!("cannot block signals: {e}"))?;
    if let Some(note) = confine::default_user(&mut cfg) {
        eprintln!("brisk: {note}");
    }
    confine::check_identity(&cfg)?;
    let mut server = Server::bind(cfg)?;
    let cfg = Arc::clone(&server.cfg);
    {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "brisk: serving {}", cfg.root.display());
        for a in server.local_addrs() {
            let _ = writeln!(out, "brisk: listening on {}", url(a));
        }
        let _ = out.flush();
    }
    if cfg.daemon {
        sys::process::daemonize().map_err(|e| format!("cannot daemonize: {e}"))?;
    }
    if let Some(pid_file) = &cfg.pid_file {
        std::fs::write(pid_file, format!("{}\n", sys::process::pid()))
            .map_err(|e| format!("cannot write pid file {}: {e}", pid_file.display()))?;
    }
    let mut open_logs = LogService::open(&cfg.log).map_err(|e| e.to_string())?;
    // Everything is open: confine the process before any thread exists,
    // so that every thread (and every CGI child) inherits the result.
    let mut notes = confine::Notes::new();
    if confine::enter_jail(&cfg)? {
        let inside = cfg.in_jail();
        confine::note_outside_jail(&cfg, &inside, &mut notes);
        open_logs.set_paths(&inside.log);
        server.rebase(inside)?;
    }
    confine::switch_user(&cfg, &mut notes)?;
    let cfg = Arc::clone(&server.cfg);
    if cfg.sandbox {
        confine::sandbox(&cfg, &mut notes);
    }
    let logs = open_logs.start().map_err(|e| e.to_string())?;
    let running = server.start(&logs)?;
    let mut main_log = logs.handle();
    for (level, note) in &notes {
        main_log.log(*level, format_args!("{note}"));
    }
    main_log.log(
        Level::Info,
        format_args!("started {} workers", running.workers()),
    );
    main_log.flush();
    loop {
        match sys::signal::wait(Duration::from_millis(500)) {
            Some(Signal::Terminate) => break,
            Some(Signal::ReopenLogs) => logs.reopen(),
            Some(Signal::Hangup) => {
                main_log.log(
                    Level::Warn,
                    format_args!("SIGHUP: reload is not supported yet; restart to apply changes"),
                );
                main_log.flush();
            }
            None => {}
        }
        if running.worker_died() {
            main_log.log(
                Level::Error,
                format_args!("a worker stopped unexpectedly; shutting down"),
            );
            main_log.flush();
            break;
        }
    }
    main_log.log(
        Level::Info,
        format_args!(
            "shutting down; draining for up to {:?}",
            cfg.timeouts.shutdown
        ),
    );
    main_log.flush();
    running.stop();
    main_log.log(Level::Info, format_args!("stopped"));
    main_log.flush();
    drop(main_log);
    logs.shutdown();
    if let Some(pid_file) = &cfg.pid_file {
        let _ = std::fs::remove_file(pid_file);
    }
    Ok(())
}
