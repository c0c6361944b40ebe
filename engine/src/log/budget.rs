//! A per-worker cap on lines of one kind (the reasons for 403s and 404s
//! at `debug`), so that a scan of a thousand missing paths a second
//! cannot flood the error log: at most `per_sec` such lines in each
//! second, and one line saying how many more there were.

use std::time::{Duration, Instant};

use super::Level;
use super::Logger;

/// Lines allowed per second, and the count of those refused.
#[derive(Debug)]
pub struct LineBudget {
    per_sec: u32,
    /// When the current one-second window began.
    window: Instant,
    used: u32,
    /// Lines refused in the current window.
    suppressed: u64,
    /// Lines refused in windows that have ended, not yet reported.
    unreported: u64,
}

impl LineBudget {
    /// A budget of `per_sec` lines a second, starting at `now`.
    pub fn new(per_sec: u32, now: Instant) -> LineBudget {
        LineBudget {
            per_sec,
            window: now,
            used: 0,
            suppressed: 0,
            unreported: 0,
        }
    }

    fn roll(&mut self, now: Instant) {
        if now.saturating_duration_since(self.window) >= Duration::from_secs(1) {
            self.window = now;
            self.used = 0;
            self.unreported += std::mem::take(&mut self.suppressed);
        }
    }

    /// Whether one more line may be written at `now`; a refused one is
    /// counted, for [`LineBudget::take_unreported`].
    pub fn allow(&mut self, now: Instant) -> bool {
        self.roll(now);
        if self.used < self.per_sec {
            self.used += 1;
            true
        } else {
            self.suppressed += 1;
            false
        }
    }

    /// How many lines were refused in the windows that ended by `now`
    /// (to be reported in one line), and forgets them.
    pub fn take_unreported(&mut self, now: Instant) -> u64 {
        self.roll(now);
        std::mem::take(&mut self.unreported)
    }

    /// The most lines written per second.
    pub fn per_sec(&self) -> u32 {
        self.per_sec
    }

    /// Says at `debug`, in one line to `log`, how many lines were refused
    /// in the windows that ended by `now`: "N more `what` (at most M a
    /// second per worker are)". Nothing when none was.
    pub fn report_refused(&mut self, now: Instant, log: &mut Logger, what: &str) {
        self.report_refused_at(now, log, Level::Debug, what);
    }

    /// As [`LineBudget::report_refused`], at `level` (that of the lines
    /// it counts).
    pub fn report_refused_at(&mut self, now: Instant, log: &mut Logger, level: Level, what: &str) {
        let n = self.take_unreported(now);
        if n > 0 {
            log.log(
                level,
                format_args!(
                    "{n} more {what} (at most {} a second per worker are)",
                    self.per_sec
                ),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_is_capped_and_counted() {
        let t0 = Instant::now();
        let mut b = LineBudget::new(3, t0);
        let allowed = (0..10).filter(|_| b.allow(t0)).count();
        assert_eq!(allowed, 3);
        // Not reported while the window lasts…
        assert_eq!(b.take_unreported(t0 + Duration::from_millis(999)), 0);
        // …and once, after it.
        let t1 = t0 + Duration::from_secs(1);
        assert_eq!(b.take_unreported(t1), 7);
        assert_eq!(b.take_unreported(t1), 0);
        // A new window allows lines again.
        assert!(b.allow(t1));
        assert_eq!(b.per_sec(), 3);
    }
}
