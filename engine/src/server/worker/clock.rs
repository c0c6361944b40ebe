//! The worker's clock: read once per pass of the event loop, so that
//! everything a pass does sees one time (and a `Date` header formatted
//! at most once a second).
//!
//! A pass reads the monotonic clock only: the wall clock is read when the
//! second it was last read in is over (for the `Date` header), and in
//! between is that reading moved on by the monotonic time passed
//! ([`Clock::wall`], for the access log). One clock read a pass instead
//! of two, and no wall-clock arithmetic unless a line is logged; a step of
//! the wall clock shows within a second.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::http::date::DateCache;

/// The time of the current pass of the event loop.
pub(super) struct Clock {
    /// Monotonic: timers, timeouts, durations.
    pub(super) now: Instant,
    /// The wall clock as last read, and the monotonic time it was read at.
    read: (SystemTime, Instant),
    /// When the second of that reading is over.
    next_second: Instant,
    /// The wall clock as an HTTP date (the `Date` header).
    pub(super) date: DateCache,
}

impl Clock {
    /// A clock reading the current time.
    pub(super) fn new(now: Instant) -> Clock {
        let wall = SystemTime::now();
        let mut clock = Clock {
            now,
            read: (wall, now),
            next_second: now,
            date: DateCache::new(),
        };
        clock.set(now, wall);
        clock
    }

    /// Reads the time again (once per pass of the loop).
    pub(super) fn tick(&mut self) {
        let now = Instant::now();
        if now >= self.next_second {
            self.set(now, SystemTime::now());
        } else {
            self.set_now(now);
        }
    }

    /// The pass's time, for the worker and its producers
    /// ([`crate::handlers::produce::now`]).
    fn set_now(&mut self, now: Instant) {
        self.now = now;
        crate::handlers::produce::set_pass_time(now);
    }

    /// Sets the time to `now`, and the wall clock, read then, to `wall`.
    fn set(&mut self, now: Instant, wall: SystemTime) {
        self.set_now(now);
        self.read = (wall, now);
        self.date.update(wall);
        let into = wall
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        self.next_second = now + Duration::from_nanos(u64::from(1_000_000_000 - into));
    }

    /// The wall-clock time of this pass: the access log's times.
    pub(super) fn wall(&self) -> SystemTime {
        self.read.0 + self.now.saturating_duration_since(self.read.1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_moves_every_reading_together() {
        let start = Instant::now();
        let mut clock = Clock::new(start);
        let wall = UNIX_EPOCH + Duration::from_secs(784_111_777);
        clock.set(start + Duration::from_secs(5), wall);
        assert_eq!(clock.now, start + Duration::from_secs(5));
        assert_eq!(clock.wall(), wall);
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

    #[test]
    fn the_wall_clock_is_read_again_when_its_second_is_over() {
        let start = Instant::now();
        let mut clock = Clock::new(start);
        // Read at 08:49:37.75: until 08:49:38 the wall clock moves with
        // the monotonic one, unread.
        let wall = UNIX_EPOCH + Duration::from_millis(784_111_777_750);
        clock.set(start, wall);
        assert_eq!(clock.next_second, start + Duration::from_millis(250));
        clock.now = start + Duration::from_millis(200);
        assert_eq!(clock.wall(), wall + Duration::from_millis(200));
        assert_eq!(clock.date.secs(), 784_111_777);
        // Past it, a tick reads the wall clock (now, the real one).
        clock.next_second = start;
        clock.tick();
        let secs = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs();
        assert!(clock.date.secs().abs_diff(secs) <= 1);
        assert!(clock.next_second > clock.now);
    }
}
