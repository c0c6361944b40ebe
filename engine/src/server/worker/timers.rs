//! A worker's timers: connections to drive again at a given time (a
//! throttled connection waiting for its rate, an HTTP/2 connection's
//! final GOAWAY), the once-a-second sweep, and how long it has been
//! quiet (see [`rest`](super::rest)).

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::TICK;
use crate::server::lifecycle::Heartbeat;

/// When a worker has something to do besides its events.
pub(super) struct Timers {
    /// Connections to drive again: when, and which.
    wakes: Vec<(Instant, usize)>,
    /// When the next sweep is due.
    pub(super) next_tick: Instant,
    /// Since when no socket or pipe has had an event, if the worker has
    /// worked since it last rested.
    quiet_since: Option<Instant>,
    /// Told at each sweep.
    heartbeat: Arc<Heartbeat>,
}

impl Timers {
    /// No timer yet, the first sweep a [`TICK`] after `now`.
    pub(super) fn new(now: Instant, heartbeat: Arc<Heartbeat>) -> Timers {
        Timers {
            wakes: Vec::new(),
            next_tick: now + TICK,
            quiet_since: None,
            heartbeat,
        }
    }

    /// Drives connection `idx` again at `when`.
    pub(super) fn wake_at(&mut self, when: Instant, idx: usize) {
        self.wakes.push((when, idx));
    }

    /// Drives connection `idx` again at `when`, unless it is to be by
    /// then already: a connection at the end of its turn is set again
    /// each time it is driven, by its event and by its timer (set twice,
    /// it would be driven twice the next pass, and set four times...).
    pub(super) fn wake_once(&mut self, when: Instant, idx: usize) {
        if !self.wakes.iter().any(|&(w, i)| i == idx && w <= when) {
            self.wakes.push((when, idx));
        }
    }

    /// Whether no connection waits for its time.
    pub(super) fn is_empty(&self) -> bool {
        self.wakes.is_empty()
    }

    /// When the first connection's time comes.
    pub(super) fn earliest(&self) -> Option<Instant> {
        self.wakes.iter().map(|t| t.0).min()
    }

    /// Takes the connections whose time has come by `now`, in the order
    /// they were set.
    pub(super) fn due(&mut self, now: Instant) -> Vec<usize> {
        let mut due = Vec::new();
        self.wakes.retain(|&(when, idx)| {
            if when <= now {
                due.push(idx);
                false
            } else {
                true
            }
        });
        due
    }

    /// Whether the sweep is due at `now`.
    pub(super) fn sweep_due(&self, now: Instant) -> bool {
        now >= self.next_tick
    }

    /// The sweep at `now`: the next one a [`TICK`] later; the heartbeat
    /// says the loop goes round.
    pub(super) fn swept(&mut self, now: Instant) {
        self.next_tick = now + TICK;
        self.heartbeat.beat(now);
    }

    /// The worker worked at `now` (an event, a connection driven).
    pub(super) fn worked(&mut self, now: Instant) {
        self.quiet_since = Some(now);
    }

    /// Whether the worker, having worked since it last rested, has been
    /// quiet for `after` at `now`; if so, it counts as rested from now.
    pub(super) fn rest_due(&mut self, now: Instant, after: Duration) -> bool {
        let due = self
            .quiet_since
            .is_some_and(|since| now.saturating_duration_since(since) >= after);
        if due {
            self.quiet_since = None;
        }
        due
    }

    /// Frees the room of timers gone.
    pub(super) fn shrink(&mut self) {
        self.wakes.shrink_to_fit();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn timers(now: Instant) -> Timers {
        Timers::new(now, Heartbeat::new())
    }

    #[test]
    fn earliest_is_the_first_time_whatever_the_order_set() {
        let now = Instant::now();
        let mut t = timers(now);
        assert!(t.is_empty());
        assert_eq!(t.earliest(), None);
        t.wake_at(now + Duration::from_millis(30), 1);
        t.wake_at(now + Duration::from_millis(10), 2);
        t.wake_at(now + Duration::from_millis(20), 3);
        assert!(!t.is_empty());
        assert_eq!(t.earliest(), Some(now + Duration::from_millis(10)));
    }

    #[test]
    fn a_connection_set_once_is_driven_once() {
        let now = Instant::now();
        let mut t = timers(now);
        t.wake_once(now, 1);
        t.wake_once(now, 1);
        t.wake_once(now + Duration::from_millis(10), 1);
        t.wake_once(now, 2);
        assert_eq!(t.due(now + Duration::from_millis(20)), vec![1, 2]);
        t.wake_at(now + Duration::from_millis(10), 3);
        t.wake_once(now, 3);
        assert_eq!(t.due(now), vec![3], "set sooner");
    }

    #[test]
    fn due_takes_the_connections_whose_time_came_and_keeps_the_rest() {
        let now = Instant::now();
        let mut t = timers(now);
        t.wake_at(now + Duration::from_millis(30), 1);
        t.wake_at(now + Duration::from_millis(10), 2);
        t.wake_at(now + Duration::from_millis(20), 3);
        t.wake_at(now + Duration::from_millis(10), 2);
        assert_eq!(t.due(now), Vec::<usize>::new());
        assert_eq!(t.due(now + Duration::from_millis(20)), vec![2, 3, 2]);
        assert_eq!(t.earliest(), Some(now + Duration::from_millis(30)));
        assert_eq!(t.due(now + Duration::from_secs(1)), vec![1]);
        assert!(t.is_empty());
    }

    #[test]
    fn a_sweep_each_tick() {
        let now = Instant::now();
        let mut t = timers(now);
        assert!(!t.sweep_due(now));
        assert!(t.sweep_due(now + TICK));
        t.swept(now + TICK);
        assert!(!t.sweep_due(now + TICK));
        assert_eq!(t.next_tick, now + TICK + TICK);
    }

    #[test]
    fn rest_is_due_once_per_quiet_spell() {
        let now = Instant::now();
        let after = Duration::from_secs(3);
        let mut t = timers(now);
        // (Never worked: nothing to give back.)
        assert!(!t.rest_due(now + after, after));
        t.worked(now);
        assert!(!t.rest_due(now + Duration::from_secs(2), after));
        assert!(t.rest_due(now + after, after));
        assert!(!t.rest_due(now + after + after, after));
        t.worked(now + after);
        assert!(t.rest_due(now + after + after, after));
    }
}
