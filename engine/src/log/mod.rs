//! Access log and error log, written by a background thread so that the
//! event loops never block on a disk.
//!
//! Each worker owns a [`Logger`] that formats lines into its own buffer
//! (no locks, no allocation once warm). [`Logger::flush`], once per
//! event-loop iteration, hands the buffer to the writer thread with a
//! non-blocking `try_send` and takes back an empty one that the writer
//! returned earlier. When the writer cannot keep up, lines are dropped and
//! counted rather than waited for; the writer then logs how many were lost.

pub mod budget;
pub mod console;
mod format;
mod settings;
mod writer;

#[cfg(test)]
mod tests;

use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::TrySendError;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::SystemTime;

use crate::channel::{self as mpsc, Receiver, Sender as SyncSender};
use crate::http::TlsSession;
pub use settings::{AccessFormat, Level, LogConfig, LogField, LogPiece, LogTarget, LogVar};

use format::Clock;
pub use format::Draft;
pub use writer::Opener;
use writer::{Batch, Msg, Sink, Writer};

/// Batches that may wait for the writer before loggers start dropping.
const QUEUE: usize = 1024;

/// Empty buffers a logger keeps for reuse; more come back only when the
/// writer fell behind, and those are freed.
const SPARES: usize = 4;

/// A logger flushes by itself once its buffer reaches this, so that a loop
/// iteration that logs a lot cannot grow the buffer without bound.
const AUTO_FLUSH: usize = 64 * 1024;

/// One finished request, as the access log records it.
#[derive(Debug, Clone, Copy)]
pub struct AccessRecord<'a> {
    /// The client's address.
    pub remote: IpAddr,
    /// The client's port (0 when a trusted proxy named the client
    /// without one).
    pub remote_port: u16,
    /// Whether the client spoke HTTPS: to brisk (TLS or QUIC), or to the
    /// trusted proxy that said so (`$scheme`).
    pub https: bool,
    /// When the request was answered (its head complete).
    pub time: SystemTime,
    /// The request line pieces as sent (escaped when written). An empty
    /// method means no request line was parsed; the line then shows `"-"`.
    pub method: &'a [u8],
    /// The request target as sent.
    pub target: &'a [u8],
    /// The protocol version, e.g. `HTTP/1.1`.
    pub version: &'a str,
    /// The response status code.
    pub status: u16,
    /// Body bytes written to the client (not counting the head; chunk
    /// framing counts): nginx's `$body_bytes_sent`. An answer cut short
    /// counts what left.
    pub bytes: u64,
    /// The `Referer` header, if sent.
    pub referer: Option<&'a [u8]>,
    /// The `User-Agent` header, if sent.
    pub user_agent: Option<&'a [u8]>,
    /// Authenticated user, if any.
    pub user: Option<&'a [u8]>,
    /// The host the request named, as sent (the `vhost` field shows it
    /// lower case, without the port).
    pub host: Option<&'a [u8]>,
    /// What TLS negotiated, for a request that came over TLS (the
    /// `tls_version` and `tls_cipher` fields).
    pub tls: Option<TlsSession>,
    /// From the first byte of the request to the last byte of the answer
    /// written, in microseconds.
    pub duration_us: u64,
    /// The upstream that answered, for a proxied request.
    pub upstream: Option<Upstream<'a>>,
}

/// Where an upstream is (formatted only when a line says it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Peer<'a> {
    /// A TCP address.
    Tcp(std::net::SocketAddr),
    /// A unix socket's path.
    Unix(&'a std::path::Path),
}

/// What the access log says of the upstream that answered a proxied
/// request (the `upstream_*` fields).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Upstream<'a> {
    /// Written `127.0.0.1:9001`, `[::1]:9001`, `unix:/run/app.sock`.
    pub addr: Peer<'a>,
    /// The status it answered.
    pub status: u16,
    /// From the start of its exchange to its answer's head, in
    /// microseconds.
    pub header_us: u64,
    /// From the start of its exchange to its answer's end (or to when it
    /// was given up), in microseconds; none while the answer goes on (a
    /// line drafted at the head has a hole for it, filled by
    /// [`Draft::put_upstream_time`]).
    pub response_us: Option<u64>,
    /// Without the feature `upstreams` there is none (no value can be
    /// made): the code that writes the fields is left out.
    #[cfg(not(feature = "upstreams"))]
    pub none: std::convert::Infallible,
}

/// Failed to open a log file at start-up.
#[derive(Debug)]
pub struct LogError {
    /// What failed and why, naming the file.
    pub message: String,
}

impl std::fmt::Display for LogError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for LogError {}

/// What every logger needs to know, fixed at start.
#[derive(Clone)]
struct Settings {
    level: Level,
    format: AccessFormat,
    /// `[log] fields`, after the format's own.
    fields: Arc<[LogField]>,
    /// A line of the user's own (`AccessFormat::Custom`).
    template: Arc<[LogPiece]>,
    access_on: bool,
    error_on: bool,
}

impl Settings {
    fn new(config: &LogConfig) -> Settings {
        Settings {
            level: config.level,
            format: config.format,
            fields: config.fields.as_slice().into(),
            template: config.template.as_slice().into(),
            access_on: config.access != LogTarget::Off,
            error_on: config.error != LogTarget::Off && config.level != Level::Off,
        }
    }
}

/// The shared log service: owns the writer thread.
pub struct LogService {
    tx: SyncSender<Msg>,
    dropped: Arc<AtomicU64>,
    settings: Settings,
    thread: Option<JoinHandle<()>>,
}

/// Log files opened but not yet written: the writer thread starts later,
/// so that it can be created after the process confined itself (threads
/// inherit a sandbox only from the thread that creates them).
pub struct OpenLogs {
    access: Sink,
    error: Sink,
    config: LogConfig,
}

impl OpenLogs {
    /// Reopens the log files (on SIGUSR1) through `opener` rather than by
    /// this process itself: after the switch to an unprivileged user, it
    /// can no longer open files in a root-owned log directory.
    pub fn reopen_through(&mut self, opener: Opener) {
        self.access.reopen_through(&opener);
        self.error.reopen_through(&opener);
    }

    /// The paths of the log files, for whatever reopens them.
    pub fn files(&self) -> Vec<std::path::PathBuf> {
        [&self.config.access, &self.config.error]
            .into_iter()
            .filter_map(|t| match t {
                LogTarget::File(p) => Some(p.clone()),
                _ => None,
            })
            .collect()
    }

    /// Starts the writer thread.
    pub fn start(self) -> Result<LogService, LogError> {
        LogService::start_with(self.access, self.error, &self.config, QUEUE)
    }
}

impl LogService {
    /// Opens the configured targets and starts the writer thread.
    pub fn start(config: &LogConfig) -> Result<LogService, LogError> {
        LogService::open(config)?.start()
    }

    /// Opens the configured targets without starting the writer thread.
    pub fn open(config: &LogConfig) -> Result<OpenLogs, LogError> {
        LogService::open_from(config, [None, None])
    }

    /// [`LogService::open`], an error naming where the access or the
    /// error log was set (`origins`, in that order: `site.toml:9:
    /// log.access`).
    pub fn open_from(config: &LogConfig, origins: [Option<&str>; 2]) -> Result<OpenLogs, LogError> {
        Ok(OpenLogs {
            access: Sink::open(&config.access, "access log", origins[0])?,
            error: Sink::open(&config.error, "error log", origins[1])?,
            config: config.clone(),
        })
    }

    /// Starts the writer with open sinks and a queue of `queue` batches.
    fn start_with(
        access: Sink,
        error: Sink,
        config: &LogConfig,
        queue: usize,
    ) -> Result<LogService, LogError> {
        let settings = Settings::new(config);
        let (tx, rx) = mpsc::sync_channel(queue);
        let dropped = Arc::new(AtomicU64::new(0));
        let writer = Writer {
            rx,
            access,
            error,
            level: config.level,
            dropped: dropped.clone(),
            pending: Vec::with_capacity(64),
            own: Vec::new(),
            clock: Clock::new(),
            failed: false,
        };
        let thread = std::thread::Builder::new()
            .name("brisk-log".to_string())
            .spawn(move || writer.run())
            .map_err(|e| LogError {
                message: format!("cannot start the log writer thread: {e}"),
            })?;
        Ok(LogService {
            tx,
            dropped,
            settings,
            thread: Some(thread),
        })
    }

    /// A handle for one worker thread (or the main thread).
    pub fn handle(&self) -> Logger {
        self.handle_with(self.settings.clone())
    }

    /// A handle that logs at `config`'s level and access-log format, for
    /// workers started by a reload. The targets stay the service's own:
    /// `config` must name the same ones.
    pub fn handle_for(&self, config: &LogConfig) -> Logger {
        self.handle_with(Settings::new(config))
    }

    fn handle_with(&self, settings: Settings) -> Logger {
        Logger::new(self.tx.clone(), self.dropped.clone(), settings)
    }

    /// Reopens log files (after rotation; on SIGUSR1). Lines flushed before
    /// the call go to the old files, lines flushed after it to the new ones.
    pub fn reopen(&self) {
        self.reopen_on("SIGUSR1");
    }

    /// [`LogService::reopen`] for `why` (`reload (SIGHUP)`: a reload
    /// reopens them too), which the lines about it begin with.
    pub fn reopen_on(&self, why: &'static str) {
        // A full queue means a writer far behind; waiting here would stall
        // the signal handling thread, so the request waits in line instead.
        if let Err(TrySendError::Full(msg)) = self.tx.try_send(Msg::Reopen(why)) {
            let tx = self.tx.clone();
            let _ = std::thread::Builder::new()
                .name("brisk-log-reopen".to_string())
                .spawn(move || tx.send(msg));
        }
    }

    /// Flushes everything still queued and stops the writer thread. Loggers
    /// should be flushed first; what they send afterwards is dropped.
    pub fn shutdown(mut self) {
        self.stop();
    }

    fn stop(&mut self) {
        if let Some(thread) = self.thread.take() {
            let _ = self.tx.send(Msg::Stop);
            let _ = thread.join();
        }
    }
}

impl Drop for LogService {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A log service writing to memory, for unit tests anywhere in the
/// crate: what it wrote is in `access` and `error` once its lines are
/// flushed and the service is shut down.
#[cfg(test)]
pub(crate) struct Memory {
    pub(crate) service: LogService,
    pub(crate) access: Arc<std::sync::Mutex<Vec<u8>>>,
    pub(crate) error: Arc<std::sync::Mutex<Vec<u8>>>,
}

/// Starts a [`Memory`] log service.
#[cfg(test)]
pub(crate) fn memory(format: AccessFormat, level: Level, queue: usize) -> Memory {
    let access = Arc::new(std::sync::Mutex::new(Vec::new()));
    let error = Arc::new(std::sync::Mutex::new(Vec::new()));
    let config = LogConfig {
        access: LogTarget::Stdout,
        format,
        fields: Vec::new(),
        template: Vec::new(),
        level,
        error: LogTarget::Stderr,
    };
    let service = LogService::start_with(
        Sink::Memory(access.clone()),
        Sink::Memory(error.clone()),
        &config,
        queue,
    )
    .unwrap();
    Memory {
        service,
        access,
        error,
    }
}

/// A per-thread logger. Lines are formatted into a local buffer and handed
/// to the writer thread by [`Logger::flush`], which never blocks.
pub struct Logger {
    batch: Batch,
    tx: SyncSender<Msg>,
    home_tx: SyncSender<Batch>,
    /// Emptied buffers coming back from the writer.
    home_rx: Receiver<Batch>,
    dropped: Arc<AtomicU64>,
    settings: Settings,
    // Two clocks: access times come from records, error times from now,
    // and they need not be in the same second.
    access_clock: Clock,
    error_clock: Clock,
}

impl Logger {
    /// Another handle to the same logs, at the same settings (for a
    /// thread of its own).
    pub fn sibling(&self) -> Logger {
        Logger::new(self.tx.clone(), self.dropped.clone(), self.settings.clone())
    }

    fn new(tx: SyncSender<Msg>, dropped: Arc<AtomicU64>, settings: Settings) -> Logger {
        let (home_tx, home_rx) = mpsc::sync_channel(SPARES);
        Logger {
            batch: Batch::new(home_tx.clone()),
            tx,
            home_tx,
            home_rx,
            dropped,
            settings,
            access_clock: Clock::new(),
            error_clock: Clock::new(),
        }
    }

    /// Whether messages at `level` are written at all (check before
    /// formatting anything costly).
    pub fn enabled(&self, level: Level) -> bool {
        self.settings.error_on && level != Level::Off && level <= self.settings.level
    }

    /// Whether the access log is on.
    pub fn access_enabled(&self) -> bool {
        self.settings.access_on
    }

    /// Records an error-log message at `level`:
    /// `2026/11/22 01:50:00 [warn] message` (control bytes escaped).
    #[inline]
    pub fn log(&mut self, level: Level, args: std::fmt::Arguments<'_>) {
        if self.enabled(level) {
            self.write_error(level, args);
        }
    }

    /// [`Logger::log`]'s line, out of line: inlined, it took 13.9 KB at
    /// its 30 callers (8.6 at the configuration's loader alone).
    #[inline(never)]
    fn write_error(&mut self, level: Level, args: std::fmt::Arguments<'_>) {
        format::error_line(
            &mut self.batch.error,
            &mut self.error_clock,
            SystemTime::now(),
            level,
            args,
        );
        self.batch.lines += 1;
        self.flush_if_big();
    }

    /// Records one access-log line in the configured format.
    pub fn access(&mut self, rec: &AccessRecord<'_>) {
        if !self.settings.access_on {
            return;
        }
        format::access_line(
            &mut self.batch.access,
            &mut self.access_clock,
            (
                self.settings.format,
                &self.settings.fields,
                &self.settings.template,
            ),
            rec,
        );
        self.batch.lines += 1;
        self.flush_if_big();
    }

    /// Appends `rec`'s line to `buf` without its byte count and duration
    /// (`rec.bytes` and `rec.duration_us` are not used), for
    /// [`Logger::finish`] once they are known. Nothing is drafted when the
    /// access log is off (check [`Logger::access_enabled`] first).
    pub fn draft(&mut self, rec: &AccessRecord<'_>, buf: &mut Vec<u8>) -> Draft {
        let layout = (
            self.settings.format,
            &*self.settings.fields,
            &*self.settings.template,
        );
        format::access_draft(buf, &mut self.access_clock, layout, rec)
    }

    /// Records the line drafted as `text` by [`Logger::draft`] with its
    /// byte count and duration.
    pub fn finish(&mut self, text: &[u8], draft: Draft, bytes: u64, duration_us: u64) {
        if !self.settings.access_on {
            return;
        }
        format::finish_line(&mut self.batch.access, text, draft, bytes, duration_us);
        self.batch.lines += 1;
        self.flush_if_big();
    }

    fn flush_if_big(&mut self) {
        if self.batch.access.len() + self.batch.error.len() >= AUTO_FLUSH {
            self.flush();
        }
    }

    /// Hands what is buffered to the writer and frees the buffers kept
    /// for reuse (a worker does so when it has been quiet a while; the
    /// next lines grow new ones).
    pub fn rest(&mut self) {
        self.flush();
        while self.home_rx.try_recv().is_ok() {}
        if self.batch.lines == 0 {
            self.batch.access = Vec::new();
            self.batch.error = Vec::new();
        }
    }

    /// Hands buffered lines to the writer thread without blocking (called
    /// once per event-loop iteration). If the writer is behind, lines are
    /// dropped and counted, never waited for.
    pub fn flush(&mut self) {
        if self.batch.lines == 0 {
            return;
        }
        // A returned buffer if there is one; a new one only while warming up
        // or after the writer fell behind, sized like the one that goes so
        // that it does not grow line by line (two allocations, not a dozen).
        let spare = match self.home_rx.try_recv() {
            Ok(b) => b,
            Err(_) => Batch::with_capacity(
                self.home_tx.clone(),
                self.batch.access.capacity(),
                self.batch.error.capacity(),
            ),
        };
        let full = std::mem::replace(&mut self.batch, spare);
        match self.tx.try_send(Msg::Batch(full)) {
            Ok(()) => {}
            Err(
                TrySendError::Full(Msg::Batch(mut b))
                | TrySendError::Disconnected(Msg::Batch(mut b)),
            ) => {
                self.dropped.fetch_add(b.lines, Ordering::Relaxed);
                b.clear();
                // Keep the buffer that already has capacity.
                let spare = std::mem::replace(&mut self.batch, b);
                let _ = self.home_tx.try_send(spare);
            }
            Err(_) => {}
        }
    }
}

impl Drop for Logger {
    /// Lines logged just before a worker exits are not lost.
    fn drop(&mut self) {
        self.flush();
    }
}
