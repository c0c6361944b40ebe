//! What a worker counts for the built-in `metrics` and `status` handlers
//! (see [`crate::handlers::stats`]): each answer (method, status class,
//! duration), and once a second its gauges. Its own counters only: no
//! shared atomics on the request path.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Instant;

use super::{Worker, REFUSALS_PER_SEC};
use crate::handlers::stats::WorkerStats;
use crate::http::request::OwnedRequest;
use crate::log::budget::LineBudget;
use crate::server::counters::Counters;
use crate::server::h1::State;

/// What a worker counts: shared with the other workers (connections,
/// throttles), published (its stats), or its own.
pub(super) struct Counts {
    /// What the workers of this configuration count in together.
    pub(super) counters: Arc<Counters>,
    /// What it counts (for the built-in `metrics` and `status`).
    pub(super) stats: Arc<WorkerStats>,
    /// Caps the debug lines that explain 403s and 404s.
    pub(super) refusals: LineBudget,
    /// Caps the info lines about what a client did wrong (see
    /// [`Worker::client_info`]).
    pub(super) client_lines: LineBudget,
    /// Bytes of request bodies held for embedded handlers (all connections).
    pub(super) handler_bodies: u64,
    /// HTTP/2 and HTTP/3 answers under way on the worker's other connections, as
    /// counted for connection `.1` at `.0` (see `Worker::crowded`):
    /// counted again for another connection or a later pass of the loop.
    #[cfg(feature = "http2")]
    pub(super) stream_tally: (Instant, usize, usize),
}

impl Counts {
    /// Counts the answer (`status`) to `req`, which started at `started`
    /// (`now` now).
    pub(super) fn answered(&self, req: &OwnedRequest, status: u16, started: Instant, now: Instant) {
        let took = now.saturating_duration_since(started);
        self.stats.answered(req.method_token(), status, took);
    }

    /// Counts from `now` on, into `counters` and `stats`.
    pub(super) fn new(counters: Arc<Counters>, stats: Arc<WorkerStats>, now: Instant) -> Counts {
        Counts {
            counters,
            stats,
            refusals: LineBudget::new(REFUSALS_PER_SEC, now),
            client_lines: LineBudget::new(REFUSALS_PER_SEC, now),
            handler_bodies: 0,
            #[cfg(feature = "http2")]
            stream_tally: (now, usize::MAX, 0),
        }
    }

    /// Uncounts a connection from `ip` that was admitted: against its
    /// address, or in the total only while it `awaits_proxy` (its client
    /// not known yet).
    pub(super) fn release(&self, ip: IpAddr, awaits_proxy: bool) {
        match awaits_proxy {
            true => self.counters.conn_limits.release_total(),
            false => self.counters.conn_limits.release(ip),
        }
    }
}

impl Worker {
    /// Counts the answer `status` to `req`, whose first byte came at
    /// `started`.
    pub(super) fn count_answer(&self, req: &OwnedRequest, status: u16, started: Instant) {
        self.counts.answered(req, status, started, self.clock.now);
    }

    /// Publishes the gauges: open connections, idle keep-alive ones, CGI
    /// processes running.
    pub(super) fn publish_stats(&self) {
        let idle = self
            .conns
            .iter()
            .filter(|c| {
                let idle = c.h1().is_some_and(|h| matches!(h.state(), State::Idle));
                idle && c.out.is_empty() && !c.life.lingers()
            })
            .count();
        self.counts
            .stats
            .publish(self.conns.live(), idle, self.router.cgi_running());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;

    #[test]
    fn a_connection_is_released_where_it_was_counted() {
        let mut cfg = Config::default();
        cfg.limits.max_connections = 10;
        cfg.limits.max_connections_per_ip = 1;
        let counts = Counts::new(
            Arc::new(Counters::new(&cfg)),
            Arc::default(),
            Instant::now(),
        );
        let limits = &counts.counters.conn_limits;
        let ip: IpAddr = [192, 0, 2, 1].into();
        limits.admit(ip).unwrap();
        assert!(limits.admit(ip).is_err());
        counts.release(ip, false);
        assert_eq!(limits.open(), 0);
        // Counted in the total only (behind a PROXY header): its address
        // keeps no count to take back.
        limits.admit(ip).unwrap();
        limits.admit_total().unwrap();
        counts.release(ip, true);
        assert_eq!(limits.open(), 1);
        assert!(limits.admit(ip).is_err());
    }
}
