//! The writer thread and the things it writes to.
//!
//! Loggers send whole buffers ([`Batch`]) over a bounded channel; the writer
//! gathers what is queued, writes each log with one `writev`, and sends the
//! emptied buffers back to the logger they came from, so buffers circulate
//! instead of being allocated and freed per flush.

use std::fs::File;
use std::io::{self, IoSlice, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::RecvTimeoutError;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use crate::channel::{Receiver, Sender as SyncSender};

use super::{Level, LogTarget};
use crate::sys::fs;

use super::console;
use super::format::{self, Clock};
use super::LogError;

/// Most batches written by one `writev` (and kept on the stack for it).
const MAX_GATHER: usize = 64;

/// How often an idle writer wakes to report dropped lines.
const IDLE_WAKE: Duration = Duration::from_secs(1);

/// A logger's buffers in transit: access lines, error lines, and the way
/// home to the logger that owns them.
pub(crate) struct Batch {
    pub(crate) access: Vec<u8>,
    pub(crate) error: Vec<u8>,
    /// Lines in both buffers, so that a dropped batch can be counted.
    pub(crate) lines: u64,
    pub(crate) home: SyncSender<Batch>,
}

impl Batch {
    pub(crate) fn new(home: SyncSender<Batch>) -> Batch {
        Batch::with_capacity(home, 0, 0)
    }

    /// A batch whose buffers hold `access` and `error` bytes before they grow.
    pub(crate) fn with_capacity(home: SyncSender<Batch>, access: usize, error: usize) -> Batch {
        Batch {
            access: Vec::with_capacity(access),
            error: Vec::with_capacity(error),
            lines: 0,
            home,
        }
    }

    pub(crate) fn clear(&mut self) {
        self.access.clear();
        self.error.clear();
        self.lines = 0;
    }
}

/// What travels to the writer thread, in order.
pub(crate) enum Msg {
    Batch(Batch),
    /// Reopen the files (after the batches queued before it are written),
    /// on this signal (`SIGUSR1`, `SIGHUP`), which its lines name.
    Reopen(&'static str),
    /// Write what is queued before it, then stop.
    Stop,
}

/// Opens a log file again by its path (on SIGUSR1), for a process that
/// may no longer do it itself: see [`super::OpenLogs::reopen_through`].
pub type Opener = Arc<dyn Fn(&Path) -> io::Result<File> + Send + Sync>;

/// Where one log goes, open.
pub(crate) enum Sink {
    Off,
    Stdout,
    Stderr,
    File {
        path: PathBuf,
        file: File,
        /// Opens `path` again; `None`: this process does it itself.
        opener: Option<Opener>,
    },
    /// A shared buffer, for tests: holding its lock stalls the writer.
    #[cfg(test)]
    Memory(std::sync::Arc<std::sync::Mutex<Vec<u8>>>),
}

impl Sink {
    /// Opens `target`; `what` names the log in the error, after where it
    /// was set (`origin`), if known.
    pub(crate) fn open(
        target: &LogTarget,
        what: &str,
        origin: Option<&str>,
    ) -> Result<Sink, LogError> {
        Ok(match target {
            LogTarget::Off => Sink::Off,
            LogTarget::Stdout => Sink::Stdout,
            LogTarget::Stderr => Sink::Stderr,
            LogTarget::File(path) => match fs::open_log(path) {
                Ok(file) => Sink::File {
                    path: path.clone(),
                    file,
                    opener: None,
                },
                Err(e) => {
                    return Err(LogError {
                        message: format!(
                            "{}{}cannot open the {what} {}: {e}{}",
                            origin.unwrap_or_default(),
                            if origin.is_some() { ": " } else { "" },
                            path.display(),
                            fs::log_open_hint(&e)
                        ),
                    })
                }
            },
        })
    }

    /// Reopens a file sink through `with` from now on.
    pub(crate) fn reopen_through(&mut self, with: &Opener) {
        if let Sink::File { opener, .. } = self {
            *opener = Some(Arc::clone(with));
        }
    }

    /// Reopens a file sink in place (log rotation); returns its path. On
    /// failure the old file stays in use, which is better than losing
    /// lines. `Ok(None)` for what is not a file.
    fn reopen(&mut self) -> Result<Option<&Path>, LogError> {
        let Sink::File { path, file, opener } = self else {
            return Ok(None);
        };
        let new = match opener {
            Some(open) => open(path),
            None => fs::open_log(path),
        };
        match new {
            Ok(new) => *file = new,
            Err(e) => {
                return Err(LogError {
                    message: format!(
                        "cannot reopen {}: {e}{}; still writing to the old file",
                        path.display(),
                        fs::log_open_hint(&e)
                    ),
                })
            }
        }
        Ok(Some(path))
    }

    /// Writes all of `bufs`, as few `writev` calls as the kernel allows.
    fn write_all(&mut self, bufs: &mut [IoSlice<'_>]) -> io::Result<()> {
        match self {
            Sink::Off => Ok(()),
            Sink::Stdout => write_vectored_all(&mut io::stdout().lock(), bufs),
            Sink::Stderr => write_vectored_all(&mut io::stderr().lock(), bufs),
            Sink::File { file, .. } => write_vectored_all(file, bufs),
            #[cfg(test)]
            Sink::Memory(m) => {
                let mut m = m.lock().unwrap_or_else(|e| e.into_inner());
                for b in bufs.iter() {
                    m.extend_from_slice(b);
                }
                Ok(())
            }
        }
    }
}

fn write_vectored_all(w: &mut impl Write, mut bufs: &mut [IoSlice<'_>]) -> io::Result<()> {
    while !bufs.is_empty() {
        match w.write_vectored(bufs) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => IoSlice::advance_slices(&mut bufs, n),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    w.flush()
}

/// The writer thread's state.
pub(crate) struct Writer {
    pub(crate) rx: Receiver<Msg>,
    pub(crate) access: Sink,
    pub(crate) error: Sink,
    /// Error-log level, for the writer's own messages.
    pub(crate) level: Level,
    /// Lines loggers could not hand over; reported and reset here.
    pub(crate) dropped: std::sync::Arc<AtomicU64>,
    /// Batches gathered for the next write; reused, never shrunk.
    pub(crate) pending: Vec<Batch>,
    /// The writer's own error lines (dropped lines, write failures).
    pub(crate) own: Vec<u8>,
    pub(crate) clock: Clock,
    /// A write failure is reported once, not once per batch.
    pub(crate) failed: bool,
}

impl Writer {
    /// The thread body: runs until [`Msg::Stop`] or until every sender is
    /// gone.
    pub(crate) fn run(mut self) {
        loop {
            let first = match self.rx.recv_timeout(IDLE_WAKE) {
                Ok(msg) => Some(msg),
                Err(RecvTimeoutError::Timeout) => None,
                Err(RecvTimeoutError::Disconnected) => break,
            };
            let mut next = first;
            let mut stop = false;
            // Take everything already queued, so one writev carries it all.
            while let Some(msg) = next.take() {
                match msg {
                    Msg::Batch(b) => {
                        self.pending.push(b);
                        if self.pending.len() == MAX_GATHER {
                            self.write_pending();
                        }
                    }
                    Msg::Reopen(signal) => {
                        self.write_pending();
                        self.reopen(signal);
                    }
                    Msg::Stop => {
                        stop = true;
                        break;
                    }
                }
                next = self.rx.try_recv().ok();
            }
            self.write_pending();
            self.report_dropped();
            if stop {
                return;
            }
        }
        self.write_pending();
        self.report_dropped();
    }

    fn write_pending(&mut self) {
        if self.pending.is_empty() && self.own.is_empty() {
            return;
        }
        let mut slices = [IoSlice::new(&[]); MAX_GATHER + 1];
        let n = gather(&mut slices, self.pending.iter().map(|b| &b.access[..]));
        let access = self.access.write_all(&mut slices[..n]);
        let n = gather(
            &mut slices,
            self.pending
                .iter()
                .map(|b| &b.error[..])
                .chain(std::iter::once(&self.own[..])),
        );
        let error = self.error.write_all(&mut slices[..n]);
        self.own.clear();
        for mut b in self.pending.drain(..) {
            b.clear();
            // If its logger is gone or has enough spares, the buffer is freed.
            let home = b.home.clone();
            let _ = home.try_send(b);
        }
        if let Err(e) = access {
            self.write_failed(true, &e);
        }
        if let Err(e) = error {
            self.write_failed(false, &e);
        }
    }

    /// A log could not be written. Standard output or error whose reader
    /// has gone (`brisk | head`: Rust ignores SIGPIPE, so the write fails
    /// with EPIPE) never comes back: that log is turned off, said once,
    /// and the server goes on serving. Any other failure (a full disk) is
    /// said once until the logs are reopened. The access log's trouble
    /// goes to the error log; the error log's to standard error, if that
    /// is still there.
    fn write_failed(&mut self, access: bool, e: &io::Error) {
        let what = if access { "access log" } else { "error log" };
        let sink = if access {
            &mut self.access
        } else {
            &mut self.error
        };
        let message = if e.kind() == io::ErrorKind::BrokenPipe
            && matches!(sink, Sink::Stdout | Sink::Stderr)
        {
            let stream = if matches!(sink, Sink::Stdout) {
                "standard output"
            } else {
                "standard error"
            };
            *sink = Sink::Off;
            format!("the reader of the {what} ({stream}) went away ({e}); the {what} is off until brisk restarts")
        } else if !self.failed {
            self.failed = true;
            format!("writing the {what} failed: {e}; further failures are not reported until the logs are reopened")
        } else {
            return;
        };
        if access && !matches!(self.error, Sink::Off) {
            self.own_line(Level::Error, format_args!("{message}"));
        } else {
            console::say(format_args!("{message}"));
        }
    }

    fn reopen(&mut self, signal: &str) {
        self.failed = false;
        let mut reopened: Vec<String> = Vec::new();
        let mut errors = Vec::new();
        for sink in [&mut self.access, &mut self.error] {
            match sink.reopen() {
                Ok(Some(path)) => {
                    let path = path.display().to_string();
                    if !reopened.contains(&path) {
                        reopened.push(path);
                    }
                }
                Ok(None) => {}
                Err(msg) => errors.push(msg),
            }
        }
        let failed = !errors.is_empty();
        for msg in errors {
            self.own_line(Level::Error, format_args!("{signal}: {msg}"));
        }
        if !reopened.is_empty() {
            let files = reopened.join(" and ");
            self.own_line(Level::Info, format_args!("{signal}: reopened {files}"));
        } else if !failed && signal == "SIGUSR1" {
            // (Said to whoever asked, `brisk --reopen-logs`; a reload,
            // which reopens them too, says nothing of it.)
            self.own_line(
                Level::Info,
                format_args!("{signal}: no log file to reopen (the logs go to standard output or error, or nowhere)"),
            );
        }
        self.write_pending();
    }

    fn report_dropped(&mut self) {
        let n = self.dropped.swap(0, Ordering::Relaxed);
        if n > 0 {
            self.own_line(
                Level::Warn,
                format_args!("{n} log lines dropped: the log writer could not keep up"),
            );
            self.write_pending();
        }
    }

    fn own_line(&mut self, level: Level, args: std::fmt::Arguments<'_>) {
        if level <= self.level && level != Level::Off {
            format::error_line(
                &mut self.own,
                &mut self.clock,
                SystemTime::now(),
                level,
                args,
            );
        }
    }
}

/// Puts the non-empty buffers into `slices`; returns how many.
fn gather<'a>(slices: &mut [IoSlice<'a>], bufs: impl Iterator<Item = &'a [u8]>) -> usize {
    let mut n = 0;
    for b in bufs.filter(|b| !b.is_empty()) {
        slices[n] = IoSlice::new(b);
        n += 1;
    }
    n
}
