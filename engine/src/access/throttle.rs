//! Byte-rate limits (thttpd's throttles), enforced by the event loop: a
//! connection that has used its allowance is not written to until the
//! moment it may send again; no thread ever sleeps.
//!
//! Each rate is a GCRA token bucket (the "generic cell rate algorithm",
//! ITU-T I.371) over bytes: a single atomic "theoretical arrival time"
//! that every sender advances by `bytes / rate`. It is lock-free, so a
//! rule's rate can be shared by the connections of every worker, and its
//! long-run rate is exact: the only slack is the burst allowance.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// How far ahead of real time a bucket may run: the burst a rate allows.
const BURST: Duration = Duration::from_millis(100);

/// A byte rate, shareable between threads.
#[derive(Debug)]
pub struct Rate {
    bytes_per_sec: u64,
    base: Instant,
    /// Nanoseconds after `base` at which the bucket is empty again.
    tat: AtomicU64,
}

impl Rate {
    /// A rate of `bytes_per_sec` (at least 1).
    pub fn new(bytes_per_sec: u64, now: Instant) -> Rate {
        Rate {
            bytes_per_sec: bytes_per_sec.max(1),
            base: now,
            tat: AtomicU64::new(0),
        }
    }

    /// Reserves up to `want` bytes at `now`: `Ok(n)` may be sent now, or
    /// `Err(t)`: not before `t`. `n` is at least `want` or the burst,
    /// whichever is smaller (and at least 1): a sender told to wait is
    /// told when that much has come, not when the first byte has, so
    /// that a paced stream goes in pieces of a sane size (a TLS
    /// connection's in whole records, not one of one byte after each
    /// full one).
    pub fn take(&self, now: Instant, want: usize) -> Result<usize, Instant> {
        let now_ns = now.saturating_duration_since(self.base).as_nanos() as u64;
        let burst_ns = BURST.as_nanos() as u64;
        let rate = u128::from(self.bytes_per_sec);
        let burst = (u128::from(burst_ns) * rate / 1_000_000_000) as u64;
        let least = (want as u64).min(burst).max(1);
        // (Rounded up: that long makes room for `least` bytes.)
        let least_ns = (u128::from(least) * 1_000_000_000).div_ceil(rate) as u64;
        let mut tat = self.tat.load(Ordering::Relaxed);
        loop {
            let start = tat.max(now_ns);
            let ahead = start - now_ns;
            let room = (u128::from(burst_ns.saturating_sub(ahead)) * rate / 1_000_000_000) as u64;
            if room < least {
                let at = (start + least_ns).saturating_sub(burst_ns).max(now_ns + 1);
                return Err(self.base + Duration::from_nanos(at));
            }
            let n = (want as u64).min(room);
            // Rounded up, so that many small reservations never add up to more
            // than the rate.
            let cost = (u128::from(n) * 1_000_000_000).div_ceil(rate) as u64;
            match self.tat.compare_exchange_weak(
                tat,
                start + cost.max(1),
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => return Ok(n as usize),
                Err(seen) => tat = seen,
            }
        }
    }
}

/// The limits on one connection's output while a throttled response is
/// queued: the rule's shared rate and/or a rate of its own.
#[derive(Debug)]
pub struct Throttle {
    /// The rule's rate, shared by every connection it paces (all workers).
    pub shared: Option<std::sync::Arc<Rate>>,
    /// This connection's own rate (over HTTP/2, shared by the
    /// connection's streams the same rule covers).
    pub own: Option<std::sync::Arc<Rate>>,
}

impl Throttle {
    /// Bytes that may be written now (at most `want`), or when to try again.
    pub fn take(&self, now: Instant, want: usize) -> Result<usize, Instant> {
        let mut n = want;
        if let Some(own) = &self.own {
            n = own.take(now, n)?;
        }
        if let Some(shared) = &self.shared {
            n = shared.take(now, n)?;
        }
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Simulated time: a sender that always wants 64 KiB gets, over 10 s,
    /// the configured rate within the burst allowance.
    #[test]
    fn long_run_rate_is_exact() {
        let t0 = Instant::now();
        let rate = Rate::new(200 * 1024, t0);
        let mut now = t0;
        let mut sent = 0u64;
        let end = t0 + Duration::from_secs(10);
        while now < end {
            match rate.take(now, 65536) {
                Ok(n) => sent += n as u64,
                Err(t) => now = t,
            }
        }
        let expected = 200 * 1024 * 10;
        let burst = 200 * 1024 / 10;
        assert!(
            sent >= expected && sent <= expected + burst + 1,
            "{sent} vs {expected}"
        );
    }

    #[test]
    fn shared_between_senders() {
        let t0 = Instant::now();
        let rate = std::sync::Arc::new(Rate::new(100_000, t0));
        let (mut a, mut b) = (0u64, 0u64);
        let mut now = t0;
        let end = t0 + Duration::from_secs(5);
        let mut turn = true;
        while now < end {
            match rate.take(now, 4096) {
                Ok(n) if turn => a += n as u64,
                Ok(n) => b += n as u64,
                Err(t) => {
                    now = t;
                    continue;
                }
            }
            turn = !turn;
        }
        let total = a + b;
        assert!((500_000..=510_001).contains(&total), "{total}");
        assert!(a > 200_000 && b > 200_000, "{a} {b}");
    }

    #[test]
    fn a_waiting_sender_is_told_when() {
        let t0 = Instant::now();
        let rate = Rate::new(10_000, t0);
        // The burst (100 ms = 1000 bytes) goes at once, then nothing
        // until as much has come again.
        assert_eq!(rate.take(t0, 5000), Ok(1000));
        let Err(when) = rate.take(t0, 5000) else {
            panic!("should wait")
        };
        assert!(when > t0 + Duration::from_millis(99) && when <= t0 + Duration::from_millis(101));
        assert_eq!(rate.take(when, 5000), Ok(1000));
        // A sender wanting 10 bytes waits for 10 bytes (1 ms).
        let Err(soon) = rate.take(when, 10) else {
            panic!("should wait")
        };
        assert!(soon > when && soon <= when + Duration::from_millis(2));
        assert_eq!(rate.take(soon, 10), Ok(10));
    }

    /// A paced sender that always wants a TLS record's worth is given
    /// whole records' worth (the burst allows it), not a sliver each
    /// time it is woken: 1928 of 3896 records of a throttled 5 MB over
    /// TLS carried one byte.
    #[test]
    fn a_woken_sender_gets_what_it_waited_for() {
        let t0 = Instant::now();
        let rate = Rate::new(2 * 1024 * 1024, t0);
        let mut now = t0;
        let mut sent = 0u64;
        let mut pieces = 0u32;
        while now < t0 + Duration::from_secs(2) {
            match rate.take(now, 16 * 1024) {
                Ok(n) => {
                    assert_eq!(n, 16 * 1024, "at {:?}", now - t0);
                    sent += n as u64;
                    pieces += 1;
                }
                Err(t) => now = t,
            }
        }
        assert!(sent >= 4 * 1024 * 1024, "{sent}");
        assert!(pieces <= 4 * 64 + 16, "{pieces}");
    }

    #[test]
    fn own_and_shared_rates_both_bind() {
        let t0 = Instant::now();
        let th = Throttle {
            shared: Some(std::sync::Arc::new(Rate::new(1_000_000, t0))),
            own: Some(std::sync::Arc::new(Rate::new(10_000, t0))),
        };
        assert_eq!(th.take(t0, 50_000), Ok(1000));
        assert!(th.take(t0, 50_000).is_err());
    }
}
