//! Winding a worker down on the main thread's order (see
//! [`crate::server::drain`]).

use std::sync::Arc;
#[cfg(feature = "http2")]
use std::time::Duration;
use std::time::Instant;

use super::Worker;
#[cfg(feature = "http2")]
use super::TICK;
use crate::server::drain::{Drain, DrainOrder};

/// Where a worker is in winding down.
pub(super) struct Draining {
    /// The main thread's order to its generation.
    pub(super) order: Arc<DrainOrder>,
    /// The order being carried out (`Serve` until one comes).
    pub(super) mode: Drain,
    /// When the worker exits whatever its connections still hold.
    pub(super) until: Option<Instant>,
    /// When the sweep first saw the order to wind down.
    #[cfg(feature = "http2")]
    since: Option<Instant>,
}

impl Draining {
    /// Serving, until `order` says otherwise.
    pub(super) fn new(order: Arc<DrainOrder>) -> Draining {
        Draining {
            order,
            mode: Drain::Serve,
            until: None,
            #[cfg(feature = "http2")]
            since: None,
        }
    }

    /// Takes an order's deadline: the earliest one given holds.
    fn bound(&mut self, until: Option<Instant>) {
        if let Some(u) = until {
            self.until = Some(self.until.map_or(u, |d| d.min(u)));
        }
    }

    /// Whether the worker is done: winding down, with no connection
    /// left or its deadline passed.
    pub(super) fn done(&self, now: Instant, live: usize) -> bool {
        self.mode != Drain::Serve && (live == 0 || self.until.is_some_and(|u| now >= u))
    }

    /// At the sweep at `now`, whether HTTP/2 connections hear GOAWAY now,
    /// busy or not: at a stop; at a reload, `keepalive` after it, or when
    /// the deadline is about to come (time for both steps first).
    /// `None`: serving.
    #[cfg(feature = "http2")]
    pub(super) fn goaway_at_once(&mut self, now: Instant, keepalive: Duration) -> Option<bool> {
        match self.mode {
            Drain::Serve => None,
            Drain::Stop => Some(true),
            Drain::Retire => {
                let since = *self.since.get_or_insert(now);
                let ending = self.until.is_some_and(|u| {
                    u.saturating_duration_since(now) <= crate::h2::GOAWAY_WAIT + TICK
                });
                Some(ending || now.saturating_duration_since(since) >= keepalive)
            }
        }
    }
}

impl Worker {
    /// Reads the generation's order and carries out what is new in it.
    pub(super) fn take_order(&mut self) {
        let (mode, until) = self.drain.order.get();
        if mode > self.drain.mode {
            self.begin_drain(mode);
        }
        self.drain.bound(until);
    }

    /// Stops accepting (the listening sockets close, so that once every
    /// copy is gone new connections are refused, not queued); at a stop,
    /// also closes the idle connections. The rest finish as they would:
    /// each answer from now on says `Connection: close`.
    fn begin_drain(&mut self, mode: Drain) {
        let first = self.drain.mode == Drain::Serve;
        self.drain.mode = mode;
        if first {
            if mode == Drain::Stop {
                // Connections the kernel completed already, with their
                // request (TCP_DEFER_ACCEPT) or without, would be reset
                // when the socket closes: serve them instead.
                for i in 0..self.listen.listeners.len() {
                    self.accept_all(i);
                }
            }
            self.listen.close(self.poll.registry());
            // (Closed: the main thread says a reload is done only once
            // every previous worker has told it so, so that no connection
            // made after that is accepted here.)
            self.drain.order.listeners_closed();
        }
        if mode == Drain::Stop {
            for i in 0..self.conns.slots() {
                match self.conns.get(i) {
                    Some(c) if c.life.lingers() && c.out.is_empty() && !c.speaks_h2() => {
                        self.close(i)
                    }
                    // (HTTP/2 connections get their GOAWAY in two steps
                    // at the sweep instead, idle or not, so that requests
                    // already on the wire are served; open streams finish.)
                    Some(c) if c.idle() && !c.speaks_h2() => self.close_idle(i),
                    _ => {}
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn draining(mode: Drain) -> Draining {
        let mut d = Draining::new(Arc::new(DrainOrder::default()));
        d.mode = mode;
        d
    }

    #[test]
    fn the_earliest_deadline_holds() {
        let now = Instant::now();
        let mut d = draining(Drain::Retire);
        d.bound(None);
        assert_eq!(d.until, None);
        d.bound(Some(now + Duration::from_secs(10)));
        d.bound(Some(now + Duration::from_secs(20)));
        assert_eq!(d.until, Some(now + Duration::from_secs(10)));
        d.bound(Some(now + Duration::from_secs(5)));
        d.bound(None);
        assert_eq!(d.until, Some(now + Duration::from_secs(5)));
    }

    #[test]
    fn done_once_winding_down_with_nothing_left_or_at_the_deadline() {
        let now = Instant::now();
        let mut d = draining(Drain::Serve);
        assert!(!d.done(now, 0));
        d.mode = Drain::Retire;
        assert!(d.done(now, 0));
        assert!(!d.done(now, 3));
        d.bound(Some(now + Duration::from_secs(1)));
        assert!(!d.done(now, 3));
        assert!(d.done(now + Duration::from_secs(1), 3));
    }

    #[cfg(feature = "http2")]
    #[test]
    fn goaway_at_a_stop_at_once_at_a_reload_after_keepalive() {
        let now = Instant::now();
        let keepalive = Duration::from_secs(60);
        assert_eq!(draining(Drain::Serve).goaway_at_once(now, keepalive), None);
        assert_eq!(
            draining(Drain::Stop).goaway_at_once(now, keepalive),
            Some(true)
        );
        let mut d = draining(Drain::Retire);
        assert_eq!(d.goaway_at_once(now, keepalive), Some(false));
        // (Counted from the first sweep that saw the order.)
        let later = now + Duration::from_secs(59);
        assert_eq!(d.goaway_at_once(later, keepalive), Some(false));
        assert_eq!(d.goaway_at_once(now + keepalive, keepalive), Some(true));
    }

    #[cfg(feature = "http2")]
    #[test]
    fn goaway_at_a_reload_once_its_deadline_comes_near() {
        let now = Instant::now();
        let mut d = draining(Drain::Retire);
        let left = crate::h2::GOAWAY_WAIT + TICK;
        d.bound(Some(now + left + Duration::from_secs(1)));
        assert_eq!(d.goaway_at_once(now, Duration::from_secs(60)), Some(false));
        let near = now + Duration::from_secs(1);
        assert_eq!(d.goaway_at_once(near, Duration::from_secs(60)), Some(true));
    }
}
