//! A pipe body's input: the request body on its way to the process.
//!
//! With a Content-Length the body streams to the input as it arrives
//! (reading from the client pauses while [`INPUT_CAP`] bytes wait). A
//! body held whole before the process started (see `held`) is read back
//! into the same buffer as the input drains. The input closes once the
//! whole body is written, or at once when there is none.

use std::io;

use super::{refill, unwatch, PipeRun};
use crate::config::Level;
use crate::http::Status;
use crate::server::conn::Conn;
use crate::server::worker::Worker;

/// Why a process's input must close.
pub(super) enum InputEnd {
    /// The process does not read it (EPIPE).
    Refused,
    /// The body held in a temporary file cannot be read back.
    Unreadable(io::Error),
}

impl PipeRun {
    /// Writes what waits for the input (refilled from a held body as it
    /// drains), while the pipe takes it. Whether anything moved, or why
    /// the input must close.
    pub(super) fn write_input(&mut self) -> Result<bool, InputEnd> {
        let mut moved = false;
        while self.input_ready && self.input.is_some() {
            if self.input_buf.is_empty() {
                match refill(&mut self.held, &mut self.input_buf) {
                    Ok(true) => {}
                    Ok(false) => break,
                    Err(e) => return Err(InputEnd::Unreadable(e)),
                }
            }
            let Some(fd) = self.input.as_ref() else { break };
            match crate::sys::net::write_fd(fd, &self.input_buf) {
                Ok(n) => {
                    self.input_buf.drain(..n);
                    moved = true;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => self.input_ready = false,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return Err(InputEnd::Refused),
            }
        }
        Ok(moved)
    }
}

impl Worker {
    /// Closes the process's input (its request body is complete, or it
    /// does not read it).
    pub(in crate::server::worker) fn close_input(&mut self, c: &mut Conn) {
        if let Some(p) = c.h1.pipe() {
            unwatch(self.poll.registry(), p.input.take());
            p.input_buf = Vec::new();
            p.held = None;
        }
    }

    /// Writes what waits for the process's input (refilled from a held
    /// body as it drains); closes the input once the whole body is in.
    /// Returns whether anything moved.
    pub(super) fn pump_input(&mut self, c: &mut Conn) -> bool {
        let reading_body = c.h1.reading_body();
        let Some(p) = c.h1.pipe() else {
            return false;
        };
        let moved = match p.write_input() {
            Ok(moved) => moved,
            Err(InputEnd::Refused) => {
                // The process does not read its input (EPIPE): the rest
                // of the body is read from the client and dropped.
                self.close_input(c);
                return true;
            }
            Err(InputEnd::Unreadable(e)) => {
                self.logger.log(
                    Level::Error,
                    format_args!(
                        "{}: cannot read back the request body held in a temporary file: {e}",
                        p.label
                    ),
                );
                self.pipe_fail(c, Status::INTERNAL_SERVER_ERROR);
                return true;
            }
        };
        let body_done = !reading_body && p.held.is_none();
        if body_done && p.input_buf.is_empty() && p.input.is_some() {
            self.close_input(c);
        }
        moved
    }

    /// A body streaming to a running process was refused (`status`). If
    /// the process has not answered yet, it is stopped and the client
    /// gets `status` instead of its output. If it has started answering,
    /// that answer cannot be taken back: the process is stopped and the
    /// connection closed, with the response cut short (the client can
    /// tell from its framing), and a log line says why.
    pub(in crate::server::worker) fn pipe_body_refused(&mut self, c: &mut Conn, status: Status) {
        if let Some(p) = c.h1.pipe().filter(|p| p.sent_any) {
            self.logger.log(
                Level::Info,
                format_args!(
                    "{}: request body refused ({}) after the program started answering; response cut short",
                    p.label, status.0
                ),
            );
        }
        self.pipe_fail(c, status);
    }
}
