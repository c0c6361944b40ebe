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
    /// The most severe level of the lines refused in the current window
    /// ([`LineBudget::allow_at`]; `debug` otherwise), and of those not
    /// yet reported: the report's.
    worst: (Level, Level),
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
            worst: (Level::Debug, Level::Debug),
        }
    }

    fn roll(&mut self, now: Instant) {
        if now.saturating_duration_since(self.window) >= Duration::from_secs(1) {
            self.window = now;
            self.used = 0;
            self.unreported += std::mem::take(&mut self.suppressed);
            self.worst.1 = self
                .worst
                .1
                .min(std::mem::replace(&mut self.worst.0, Level::Debug));
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

    /// [`LineBudget::allow`] for a line at `level`: the report of those
    /// refused is at the most severe of theirs (an `error` line's count
    /// is not hidden at `debug`).
    pub fn allow_at(&mut self, now: Instant, level: Level) -> bool {
        let allowed = self.allow(now);
        if !allowed {
            self.worst.0 = self.worst.0.min(level);
        }
        allowed
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

    /// Says at `debug` (or the level [`LineBudget::allow_at`] saw), in
    /// one line to `log`, how many lines were refused in the windows that
    /// ended by `now`: "N more `what` (at most M a second per worker
    /// are)". Nothing when none was.
    pub fn report_refused(&mut self, now: Instant, log: &mut Logger, what: &str) {
        self.roll(now);
        let level = std::mem::replace(&mut self.worst.1, Level::Debug);
        self.report_refused_at(now, log, level, what);
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

    /// The count of refused lines is said at the most severe level among
    /// them: `error` lines' count shows at `info`, `debug` lines' does
    /// not; each report at its own lines' level.
    #[test]
    fn the_count_is_said_at_its_lines_level() {
        let m = super::super::memory(super::super::AccessFormat::Common, Level::Info, 16);
        let mut log = m.service.handle();
        let t0 = Instant::now();
        let mut b = LineBudget::new(1, t0);
        assert!(b.allow_at(t0, Level::Debug));
        assert!(!b.allow_at(t0, Level::Debug));
        assert!(!b.allow_at(t0, Level::Error));
        let t1 = t0 + Duration::from_secs(1);
        b.report_refused(t1, &mut log, "errors");
        assert!(b.allow_at(t1, Level::Debug));
        assert!(!b.allow_at(t1, Level::Debug));
        b.report_refused(t1 + Duration::from_secs(1), &mut log, "explanations");
        log.flush();
        drop(log);
        m.service.shutdown();
        let error = String::from_utf8_lossy(&m.error.lock().unwrap()).into_owned();
        assert!(
            error.contains("[error] 2 more errors (at most 1 a second per worker are)"),
            "{error}"
        );
        assert!(!error.contains("explanations"), "{error}");
    }
}
