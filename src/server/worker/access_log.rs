//! Access-log lines of answers, completed once they have left: a line is
//! drafted when its answer is queued, with the answer's end in the output
//! queue, and finished with the body bytes actually written and the time
//! from the request's first byte to the answer's last when that end is
//! written, or when the connection ends first (an aborted download logs
//! what it sent, as nginx does). An answer that leaves in one write costs
//! no system call more than before.

use super::*;
use crate::server::transport::Out;

/// Records that the answer to `rec`, whose request began to arrive at
/// `started`, ends with what is queued for its connection so far (`end`,
/// from [`Conn::queued_end`]), its last `body` bytes being its body;
/// `out` is the queue holding its last byte.
pub(super) fn ending(
    out: &mut Out,
    logger: &mut Logger,
    end: u64,
    body: u64,
    started: Instant,
    rec: &AccessRecord<'_>,
) {
    if logger.access_enabled() {
        out.push_ending(end, end.saturating_sub(body), started, |buf| {
            logger.draft(rec, buf)
        });
    }
}

/// Logs the answers of `out` that have ended, the connection having sent
/// `sent` bytes; with `all` (it is ending), every one, cut short or not.
pub(super) fn settle(logger: &mut Logger, out: &mut Out, sent: u64, all: bool) {
    if !out.has_endings() {
        return;
    }
    let now = Instant::now();
    out.settle(sent, all, |text, e, bytes| {
        let us = now.saturating_duration_since(e.started).as_micros() as u64;
        logger.finish(text, e.draft, bytes, us);
    });
}
