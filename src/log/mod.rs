//! Access log and error log, written by a background thread so that the
//! event loops never block on a disk.
//!
//! STUB: signatures are the contract; bodies are filled in by the log work.

use std::net::IpAddr;
use std::time::SystemTime;

use crate::config::{Level, LogConfig};

/// One finished request, as the access log records it.
#[derive(Debug, Clone, Copy)]
pub struct AccessRecord<'a> {
    pub remote: IpAddr,
    /// When the request head was complete.
    pub time: SystemTime,
    /// The request line pieces as sent (escaped when written).
    pub method: &'a [u8],
    pub target: &'a [u8],
    pub version: &'a str,
    pub status: u16,
    /// Body bytes sent (not counting the head).
    pub bytes: u64,
    pub referer: Option<&'a [u8]>,
    pub user_agent: Option<&'a [u8]>,
    /// Authenticated user, if any.
    pub user: Option<&'a [u8]>,
    /// Time from head complete to last byte queued, in microseconds.
    pub duration_us: u64,
}

/// Failed to open a log file at start-up.
#[derive(Debug)]
pub struct LogError {
    pub message: String,
}

impl std::fmt::Display for LogError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// The shared log service: owns the writer thread.
pub struct LogService {
    _private: (),
}

impl LogService {
    /// Opens the configured targets and starts the writer thread.
    pub fn start(config: &LogConfig) -> Result<LogService, LogError> {
        let _ = config;
        todo!()
    }

    /// A handle for one worker thread (or the main thread).
    pub fn handle(&self) -> Logger {
        todo!()
    }

    /// Reopens log files (after rotation; on SIGUSR1).
    pub fn reopen(&self) {
        todo!()
    }

    /// Flushes everything still queued and stops the writer thread.
    pub fn shutdown(self) {
        todo!()
    }
}

/// A per-thread logger. Lines are formatted into a local buffer and handed
/// to the writer thread by [`Logger::flush`], which never blocks.
pub struct Logger {
    _private: (),
}

impl Logger {
    /// Whether messages at `level` are written at all (check before
    /// formatting anything costly).
    pub fn enabled(&self, level: Level) -> bool {
        let _ = level;
        todo!()
    }

    /// Whether the access log is on.
    pub fn access_enabled(&self) -> bool {
        todo!()
    }

    /// Records an error-log message at `level`:
    /// `2026/11/22 01:50:00 [warn] message` (control bytes escaped).
    pub fn log(&mut self, level: Level, args: std::fmt::Arguments<'_>) {
        let _ = (level, args);
        todo!()
    }

    /// Records one access-log line in the configured format.
    pub fn access(&mut self, rec: &AccessRecord<'_>) {
        let _ = rec;
        todo!()
    }

    /// Hands buffered lines to the writer thread without blocking (called
    /// once per event-loop iteration). If the writer is behind, lines are
    /// dropped and counted, never waited for.
    pub fn flush(&mut self) {
        todo!()
    }
}
