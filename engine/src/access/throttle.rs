//! Byte-rate limits (thttpd's throttles), enforced by the event loop: a
//! connection that has used its allowance is not written to until the
//! moment it may send again; no thread ever sleeps.
//!
//! Each rate is a GCRA token bucket (the "generic cell rate algorithm",
//! ITU-T I.371) over bytes: a single atomic "theoretical arrival time"
//! that every sender advances by `bytes / rate`. It is lock-free, so a
//! rule's rate can be shared by the connections of every worker, and its
//! long-run rate is exact: the only slack is the burst allowance.

use std::cell::Cell;
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

    /// Reserves up to `want` bytes at `now`: [`Grant::Now`]`(n)`, bytes
    /// that may be sent now, or, when the bucket has no room,
    /// [`Grant::At`]`(t, n)`: `n` bytes reserved, to be sent at `t`.
    /// `n` is at least `want` or the burst, whichever is smaller (and at
    /// least 1): a sender told to wait is told when that much may go, not
    /// when the first byte may, so that a paced stream goes in pieces of a
    /// sane size (a TLS connection's in whole records, not one of one byte
    /// after each full one). The reservation is what makes the rate fair:
    /// senders that wait queue up in the order they asked, each behind
    /// the others' reservations, rather than all being woken at the same
    /// moment for the same bytes, which the first one woken would take
    /// every time, starving the rest.
    pub fn reserve(&self, now: Instant, want: usize) -> Grant {
        let now_ns = now.saturating_duration_since(self.base).as_nanos() as u64;
        let burst_ns = BURST.as_nanos() as u64;
        let rate = u128::from(self.bytes_per_sec);
        let burst = (u128::from(burst_ns) * rate / 1_000_000_000) as u64;
        let least = (want as u64).min(burst).max(1);
        let mut tat = self.tat.load(Ordering::Relaxed);
        loop {
            let start = tat.max(now_ns);
            let ahead = start - now_ns;
            let room = (u128::from(burst_ns.saturating_sub(ahead)) * rate / 1_000_000_000) as u64;
            let (n, waits) = match room >= least {
                true => ((want as u64).min(room), false),
                false => (least, true),
            };
            // Rounded up, so that many small reservations never add up to
            // more than the rate.
            let cost = (u128::from(n) * 1_000_000_000).div_ceil(rate) as u64;
            let end = start + cost.max(1);
            match self
                .tat
                .compare_exchange_weak(tat, end, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) if waits => {
                    let at = end.saturating_sub(burst_ns).max(now_ns + 1);
                    return Grant::At(self.base + Duration::from_nanos(at), n as usize);
                }
                Ok(_) => return Grant::Now(n as usize),
                Err(seen) => tat = seen,
            }
        }
    }
}

/// What a [`Rate`] grants a sender.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Grant {
    /// This many bytes may be sent now.
    Now(usize),
    /// This many bytes are reserved, to be sent at that moment.
    At(Instant, usize),
}

/// Bytes a sender was granted by one rate and has not sent yet, and when
/// they may go.
#[derive(Debug, Default)]
struct Credit {
    bytes: Cell<usize>,
    at: Cell<Option<Instant>>,
}

impl Credit {
    /// Up to `want` bytes `rate` lets go now (spent with [`Credit::spend`]),
    /// or when to ask again: granted bytes are used first, and only then is
    /// the rate asked for more.
    fn grant(&self, rate: &Rate, now: Instant, want: usize) -> Result<usize, Instant> {
        if let Some(at) = self.at.get() {
            if now < at {
                return Err(at);
            }
            self.at.set(None);
        }
        if self.bytes.get() == 0 {
            match rate.reserve(now, want) {
                Grant::Now(n) => self.bytes.set(n),
                Grant::At(at, n) => {
                    self.bytes.set(n);
                    self.at.set(Some(at));
                    return Err(at);
                }
            }
        }
        Ok(self.bytes.get().min(want))
    }

    fn spend(&self, n: usize) {
        self.bytes.set(self.bytes.get().saturating_sub(n));
    }
}

/// The limits on one connection's output while a throttled response is
/// queued: the rule's shared rate and/or a rate of its own.
#[derive(Debug)]
pub struct Throttle {
    /// The rule's rate, shared by every connection it paces (all workers).
    shared: Option<std::sync::Arc<Rate>>,
    /// This connection's own rate (over HTTP/2, shared by the
    /// connection's streams the same rule covers).
    own: Option<std::sync::Arc<Rate>>,
    /// What each of the two granted and was not sent yet.
    credits: [Credit; 2],
}

impl Throttle {
    /// Pacing by the rule's `shared` rate and/or a rate of its `own`.
    pub fn new(
        shared: Option<std::sync::Arc<Rate>>,
        own: Option<std::sync::Arc<Rate>>,
    ) -> Throttle {
        Throttle {
            shared,
            own,
            credits: Default::default(),
        }
    }

    /// Bytes that may be written now (at most `want`), or when to try
    /// again. The bytes returned count as sent.
    pub fn take(&self, now: Instant, want: usize) -> Result<usize, Instant> {
        let mut n = want;
        if let Some(own) = &self.own {
            n = self.credits[0].grant(own, now, n)?;
        }
        if let Some(shared) = &self.shared {
            n = self.credits[1].grant(shared, now, n)?;
        }
        for c in &self.credits {
            c.spend(n);
        }
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    /// Bytes granted from `now` on by a sender that always wants `want`
    /// and sends what it is granted when it may, until `end`.
    fn drain(rate: &Rate, mut now: Instant, end: Instant, want: usize) -> (u64, u32) {
        let (mut sent, mut pieces) = (0u64, 0u32);
        while now < end {
            let n = match rate.reserve(now, want) {
                Grant::Now(n) => n,
                Grant::At(t, n) => {
                    now = t;
                    n
                }
            };
            if now < end {
                sent += n as u64;
                pieces += 1;
            }
        }
        (sent, pieces)
    }

    /// Simulated time: a sender that always wants 64 KiB gets, over 10 s,
    /// the configured rate within the burst allowance.
    #[test]
    fn long_run_rate_is_exact() {
        let t0 = Instant::now();
        let rate = Rate::new(200 * 1024, t0);
        let (sent, _) = drain(&rate, t0, t0 + Duration::from_secs(10), 65536);
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
        let rate = Arc::new(Rate::new(100_000, t0));
        let (mut a, mut b) = (0u64, 0u64);
        let (mut wake_a, mut wake_b) = (t0, t0);
        let end = t0 + Duration::from_secs(5);
        let (ta, tb) = (
            Throttle::new(Some(rate.clone()), None),
            Throttle::new(Some(rate), None),
        );
        while wake_a.min(wake_b) < end {
            let (t, wake, sent) = match wake_a <= wake_b {
                true => (&ta, &mut wake_a, &mut a),
                false => (&tb, &mut wake_b, &mut b),
            };
            match t.take(*wake, 4096) {
                Ok(n) => *sent += n as u64,
                Err(at) => *wake = at,
            }
        }
        let total = a + b;
        assert!((500_000..=510_001).contains(&total), "{total}");
        assert!(a > 200_000 && b > 200_000, "{a} {b}");
    }

    /// Connections of one rule that always want more and are woken when
    /// told, the lowest numbered first when several are due at the same
    /// moment (as a timer list may): each gets its share. When a waiter
    /// was told when the bucket would have room, and not given a place in
    /// a queue, all were told the same moment and the first one woken
    /// took the room each time: one connection got it all, the others
    /// not a byte (not even their response's head) for as long as it
    /// downloaded.
    #[test]
    fn senders_woken_at_once_all_get_their_share() {
        let t0 = Instant::now();
        let rate = Arc::new(Rate::new(100 * 1024, t0));
        let throttles: Vec<_> = (0..3)
            .map(|_| Throttle::new(Some(Arc::clone(&rate)), None))
            .collect();
        let mut wake = [t0; 3];
        let mut sent = [0u64; 3];
        let end = t0 + Duration::from_secs(5);
        loop {
            let i = (0..3).min_by_key(|&i| wake[i]).expect("three");
            if wake[i] >= end {
                break;
            }
            match throttles[i].take(wake[i], 16 * 1024) {
                Ok(n) => sent[i] += n as u64,
                Err(at) => wake[i] = at,
            }
        }
        let total: u64 = sent.iter().sum();
        assert!(total <= 100 * 1024 * 5 + 100 * 1024 / 10 + 1, "{sent:?}");
        for s in sent {
            assert!(s >= total / 4, "{sent:?}");
        }
    }

    #[test]
    fn a_waiting_sender_is_told_when() {
        let t0 = Instant::now();
        let rate = Rate::new(10_000, t0);
        // The burst (100 ms = 1000 bytes) goes at once, then 1000 more
        // are reserved for when as much has come again.
        assert_eq!(rate.reserve(t0, 5000), Grant::Now(1000));
        let Grant::At(when, 1000) = rate.reserve(t0, 5000) else {
            panic!("should wait")
        };
        assert!(when > t0 + Duration::from_millis(99) && when <= t0 + Duration::from_millis(101));
        // A sender wanting 10 bytes waits for 10 bytes (1 ms), behind
        // the reservation.
        let Grant::At(soon, 10) = rate.reserve(when, 10) else {
            panic!("should wait")
        };
        assert!(soon > when && soon <= when + Duration::from_millis(2));
        // Through a throttle: told when, then given what was reserved.
        let th = Throttle::new(Some(Arc::new(Rate::new(10_000, t0))), None);
        assert_eq!(th.take(t0, 5000), Ok(1000));
        let Err(at) = th.take(t0, 5000) else {
            panic!("should wait")
        };
        assert_eq!(th.take(at - Duration::from_millis(1), 5000), Err(at));
        assert_eq!(th.take(at, 400), Ok(400));
        assert_eq!(th.take(at, 5000), Ok(600));
        assert!(th.take(at, 5000).is_err());
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
            let n = match rate.reserve(now, 16 * 1024) {
                Grant::Now(n) => n,
                Grant::At(t, n) => {
                    now = t;
                    n
                }
            };
            assert_eq!(n, 16 * 1024, "at {:?}", now - t0);
            sent += n as u64;
            pieces += 1;
        }
        assert!(sent >= 4 * 1024 * 1024, "{sent}");
        assert!(pieces <= 4 * 64 + 16, "{pieces}");
    }

    #[test]
    fn own_and_shared_rates_both_bind() {
        let t0 = Instant::now();
        let th = Throttle::new(
            Some(Arc::new(Rate::new(1_000_000, t0))),
            Some(Arc::new(Rate::new(10_000, t0))),
        );
        assert_eq!(th.take(t0, 50_000), Ok(1000));
        assert!(th.take(t0, 50_000).is_err());
        // The other way round: the shared rate is the slower.
        let th = Throttle::new(
            Some(Arc::new(Rate::new(10_000, t0))),
            Some(Arc::new(Rate::new(1_000_000, t0))),
        );
        assert_eq!(th.take(t0, 50_000), Ok(1000));
        assert!(th.take(t0, 50_000).is_err());
    }
}
