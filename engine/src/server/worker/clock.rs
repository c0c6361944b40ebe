//! The worker's clock: read once per pass of the event loop, so that
//! everything a pass does sees one time (and a `Date` header formatted
//! at most once a second).

use std::time::{Instant, SystemTime};

use crate::http::date::DateCache;

/// The time of the current pass of the event loop.
pub(super) struct Clock {
    /// Monotonic: timers, timeouts, durations.
    pub(super) now: Instant,
    /// Wall-clock: the access log's times.
    pub(super) wall: SystemTime,
    /// `wall` as an HTTP date (the `Date` header).
    pub(super) date: DateCache,
}

impl Clock {
    /// A clock reading the current time.
    pub(super) fn new(now: Instant) -> Clock {
        Clock {
            now,
            wall: SystemTime::now(),
            date: DateCache::new(),
        }
    }

    /// Reads the time again (once per pass of the loop).
    pub(super) fn tick(&mut self) {
        self.set(Instant::now(), SystemTime::now());
    }

    /// Sets the time to `now` and `wall`.
    fn set(&mut self, now: Instant, wall: SystemTime) {
        self.now = now;
        self.wall = wall;
        self.date.update(wall);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, UNIX_EPOCH};

    #[test]
    fn set_moves_every_reading_together() {
        let start = Instant::now();
        let mut clock = Clock::new(start);
        let wall = UNIX_EPOCH + Duration::from_secs(784_111_777);
        clock.set(start + Duration::from_secs(5), wall);
        assert_eq!(clock.now, start + Duration::from_secs(5));
        assert_eq!(clock.wall, wall);
        assert_eq!(clock.date.secs(), 784_111_777);
        assert_eq!(clock.date.get(), b"Sun, 06 Nov 1994 08:49:37 GMT");
    }

    #[test]
    fn tick_reads_the_time_again() {
        let start = Instant::now();
        let mut clock = Clock::new(start);
        clock.tick();
        assert!(clock.now >= start);
        let secs = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs();
        assert!(clock.date.secs().abs_diff(secs) <= 1);
    }
}
