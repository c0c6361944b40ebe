//! What a worker counts for the built-in `metrics` and `status` handlers
//! (see [`crate::handlers::stats`]): each answer (method, status class,
//! duration), and once a second its gauges. Its own counters only: no
//! shared atomics on the request path.

use super::*;

impl Worker {
    /// Counts the answer `status` to `req`, whose first byte came at
    /// `started`.
    pub(super) fn count_answer(&self, req: &OwnedRequest, status: u16, started: Instant) {
        let took = self.clock.now.saturating_duration_since(started);
        self.stats.answered(req.method_token(), status, took);
    }

    /// Publishes the gauges: open connections, idle keep-alive ones, CGI
    /// processes running.
    pub(super) fn publish_stats(&self) {
        let idle = self
            .conns
            .iter()
            .flatten()
            .filter(|c| matches!(c.h1.state(), State::Idle) && c.out.is_empty() && !c.speaks_h2())
            .count();
        self.stats
            .publish(self.live, idle, self.router.cgi_running());
    }
}
