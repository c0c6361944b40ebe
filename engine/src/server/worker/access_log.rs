//! Access-log lines of answers, completed once they have left: a line is
//! drafted when its answer is queued, with the answer's end in the output
//! queue, and finished with the body bytes actually written and the time
//! from the request's first byte to the answer's last when that end is
//! written, or when the connection ends first (an aborted download logs
//! what it sent, as nginx does). An answer that leaves in one write costs
//! no system call more than before.

use std::time::Instant;

use crate::log::{AccessRecord, Draft, Logger};
use crate::server::conn::Conn;
use crate::server::transport::Out;

/// Records that an answer, whose request began to arrive at `started`,
/// ends with what is queued for its connection so far (`end`, from
/// [`Conn::queued_end`](crate::server::conn::Conn::queued_end)), its last `body` bytes being its body; `out` is
/// the queue holding its last byte, the connection has sent `sent`
/// bytes, and `draft` writes the answer's line (from its record with
/// [`Logger::draft`], or copied: an HTTP/2 answer's is drafted when its
/// head is sent). Only called with the access log on.
#[allow(clippy::too_many_arguments)]
pub(super) fn push(
    out: &mut Out,
    logger: &mut Logger,
    sent: u64,
    end: u64,
    body: u64,
    started: Instant,
    draft: impl FnOnce(&mut Logger, &mut Vec<u8>) -> Draft,
) {
    out.push_ending(end, end.saturating_sub(body), started, |buf| {
        draft(logger, buf)
    });
    settle(logger, out, sent, false);
}

/// Records that the answer `rec` (begun at `started`) on `c`, whose body
/// began at the connection's byte `body_from`, ends with what is queued
/// for `c` now (see [`push`]).
pub(super) fn push_record(
    c: &mut Conn,
    logger: &mut Logger,
    rec: &AccessRecord<'_>,
    body_from: u64,
    started: Instant,
) {
    let end = c.queued_end();
    let body = end.saturating_sub(body_from);
    let sent = c.sent;
    push(&mut c.out, logger, sent, end, body, started, |l, buf| {
        l.draft(rec, buf)
    });
}

/// Logs the answers of `out` that have ended, the connection having sent
/// `sent` bytes; with `all` (it is ending), every one, cut short or not.
/// An answer may end after its last byte has left (a HEAD request's
/// program exiting later, a stream reset once its frames were out): its
/// line is pushed then with nothing left to write, so every push settles
/// at once rather than waiting for the connection's next write, which an
/// idle connection may never make.
pub(super) fn settle(logger: &mut Logger, out: &mut Out, sent: u64, all: bool) {
    if !out.has_endings() {
        return;
    }
    // (The clock is read only when an answer has ended.)
    let mut now = None;
    out.settle(sent, all, |text, e, bytes| {
        let now = *now.get_or_insert_with(Instant::now);
        let us = now.saturating_duration_since(e.started).as_micros() as u64;
        logger.finish(text, e.draft, bytes, us);
    });
}
