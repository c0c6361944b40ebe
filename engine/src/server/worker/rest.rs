//! Giving memory back once a worker has been quiet for a while: a burst
//! of connections leaves a long connection slab, spare queues and
//! buffers, a full open-file cache (with small files' content), file
//! mappings (`sys::mapped`) and log buffers behind, and the allocator keeps whatever is freed unless told
//! to return it (see [`crate::sys::memory`]). None of this is on the
//! request path: after a rest, the first requests grow what they need
//! again.

use std::time::Duration;

use super::Worker;
use crate::config::Level;

/// Quiet time (no event on any socket or pipe) before a worker rests.
pub(super) const REST_AFTER: Duration = Duration::from_secs(3);

impl Worker {
    /// Called at each timer tick: rests once the worker has been quiet
    /// for [`REST_AFTER`] since it last worked.
    pub(super) fn maybe_rest(&mut self) {
        if self.timers.rest_due(self.clock.now, REST_AFTER) {
            self.rest();
        }
    }

    /// Frees what only a busier moment needed (the request buffers
    /// too) and hands the allocator's
    /// free pages back to the system.
    fn rest(&mut self) {
        self.pools.free_spares();
        // The slab keeps the slots of connections still open; the tail
        // that only closed connections used goes.
        self.conns.shrink();
        self.timers.shrink();
        self.router.rest();
        // (And the file mappings HTTP/2 sends from, with the files they
        // keep open.)
        crate::sys::mapped::forget_all();
        if let Some(tls) = &self.listen.tls {
            tls.rest();
        }
        if self.logger.enabled(Level::Debug) {
            self.logger.log(
                Level::Debug,
                format_args!(
                    "quiet for {}s: spare buffers and caches freed, free memory returned to the system",
                    REST_AFTER.as_secs()
                ),
            );
        }
        self.logger.rest();
        // The per-thread buffers too (nothing is staged between events):
        // freed before the trim and allocated again after it, they hold
        // no page until a request writes to them.
        self.pools.free_all();
        crate::sys::memory::give_back();
        self.pools.refill();
    }
}
