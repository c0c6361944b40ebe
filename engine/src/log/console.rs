//! Messages for whoever started brisk, on its standard error: start-up
//! lines, refusals, last-resort reports. Unlike `eprintln!`, which panics
//! when the stream is a pipe whose reader has gone (Rust ignores SIGPIPE,
//! so the write fails with EPIPE), these never fail: a message nobody can
//! read any more is dropped.

use std::io::Write;

/// Writes `brisk: ` and `args` as one line to standard error, ignoring
/// any failure (one `write` for the whole line: stderr is unbuffered).
pub fn say(args: std::fmt::Arguments<'_>) {
    let line = format!("brisk: {args}\n");
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
}
