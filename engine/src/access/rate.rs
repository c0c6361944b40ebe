//! Request rates per client (`[[rate_limit]]`, nginx's `limit_req`): a
//! leaky bucket per client and rule, kept in one fixed-size table that
//! every worker shares without a lock.
//!
//! Each bucket is a GCRA cell (as `throttle`'s byte rates): its
//! "theoretical arrival time", the moment the bucket is empty again. A
//! request at `now` moves it to `max(tat, now) + interval`; it is refused
//! (and does not move it) when `max(tat, now) - now` is more than
//! `burst × interval`, that is when the bucket already holds `burst + 1`
//! requests. A quiet client may so send `burst + 1` requests at once,
//! then one per `interval`, as under nginx's `limit_req … burst=N
//! nodelay`; a refused one is told when the next would pass.
//!
//! The table has [`SETS`] sets of [`WAYS`] buckets (one cache line a
//! set): 32,768 buckets, 256 KiB, allocated when a configuration has a
//! rule and never more, whatever the number of clients. A bucket is one
//! `AtomicU64`, its set chosen by a keyed hash (a folded multiply, keys
//! drawn at start, so that nobody can aim addresses at one set) of the rule, the
//! client and (with `key = "address+path"`) the path; 16 more bits of
//! the hash tag it, the 48 others hold the arrival time in microseconds
//! (8.9 years). A client not in its set takes the bucket whose arrival
//! time is the earliest: an empty or drained one first, else the one
//! closest to draining. A flood of new addresses so only evicts buckets
//! that hold less than the flood's own do, and a client being limited
//! (its bucket full) keeps its bucket; memory stays at 256 KiB.
//!
//! Every update is one compare-and-swap, tried again until it holds. Two
//! workers that add the same new client to a set at the same moment may
//! give it two buckets (one request goes uncounted), and two clients
//! whose hashes agree in 28 bits share a bucket (about one chance in 2^16
//! for a client whose set is full): small errors, in exchange for no lock
//! on the request path.

use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Buckets a set holds (one cache line of `AtomicU64`s).
pub const WAYS: usize = 8;
/// Sets in the table (a power of two).
pub const SETS: usize = 4096;
/// The bytes the table takes.
pub const TABLE_BYTES: usize = SETS * WAYS * 8;

/// Bits of a bucket that hold its arrival time.
const TIME_BITS: u32 = 48;
const TIME_MASK: u64 = (1 << TIME_BITS) - 1;

#[repr(align(64))]
struct Set([AtomicU64; WAYS]);

/// The buckets every worker of a server shares.
pub struct RateTable {
    sets: Box<[Set]>,
    /// The hash's keys, drawn at start.
    keys: [u64; 4],
    base: Instant,
}

impl std::fmt::Debug for RateTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RateTable")
    }
}

/// A rule's limit: the time a request takes to leak out, and how many
/// requests beyond the rate a bucket holds.
#[derive(Debug, Clone, Copy)]
pub struct Limit {
    /// 1 s / N for `N/s`.
    pub interval: Duration,
    /// Requests allowed at once beyond the rate.
    pub burst: u32,
}

impl Default for RateTable {
    fn default() -> RateTable {
        RateTable::new()
    }
}

impl RateTable {
    /// An empty table (its pages are only touched as buckets fill).
    pub fn new() -> RateTable {
        let sets = (0..SETS)
            .map(|_| Set(std::array::from_fn(|_| AtomicU64::new(0))))
            .collect();
        // (The standard library's per-process random keys, through the
        // one door it opens to them.)
        let random = RandomState::new();
        RateTable {
            sets,
            keys: std::array::from_fn(|i| random.hash_one(i)),
            base: Instant::now(),
        }
    }

    /// The key of rule `rule`'s bucket for `client` (an IPv4 address, an
    /// IPv6 one by its /64, an IPv4-mapped one as its IPv4 address) and,
    /// when given, `path`.
    pub fn key(&self, rule: u64, client: IpAddr, path: Option<&[u8]>) -> u64 {
        let [k0, k1, k2, k3] = self.keys;
        let (family, addr) = match client.to_canonical() {
            IpAddr::V4(a) => (0, u64::from(u32::from(a))),
            // One subscriber usually holds a whole /64.
            IpAddr::V6(a) => (1 << 63, (u128::from(a) >> 64) as u64),
        };
        let mut h = fold(addr ^ k0, rule ^ family ^ k1);
        if let Some(path) = path {
            let mut chunks = path.chunks_exact(8);
            for c in &mut chunks {
                h = fold(h ^ u64::from_le_bytes(c.try_into().unwrap_or_default()), k2);
            }
            let mut last = [0u8; 8];
            last[..chunks.remainder().len()].copy_from_slice(chunks.remainder());
            h = fold(h ^ u64::from_le_bytes(last), k2 ^ path.len() as u64);
        }
        fold(h, k3)
    }

    /// Counts a request of the bucket `key` at `now` under `limit`:
    /// `Ok(())`, or `Err(wait)`, how long until a request would pass.
    pub fn take(&self, key: u64, limit: Limit, now: Instant) -> Result<(), Duration> {
        let now_us = micros(now.saturating_duration_since(self.base)).min(TIME_MASK);
        let interval = micros(limit.interval).max(1);
        let tolerance = interval.saturating_mul(u64::from(limit.burst));
        let set = &self.sets[key as usize & (SETS - 1)].0;
        let tag = (key >> TIME_BITS).max(1);
        // Until the compare-and-swap holds: a request is never let through
        // uncounted. (Capped at eight tries, four threads on one bucket
        // let 101 requests through a limit of 100, one run in eight on a
        // busy machine.) Each failure is another worker's success, and a
        // full bucket refuses without a swap, so this ends.
        loop {
            // The bucket of `key`, or the one to take over.
            let mut found = None;
            let mut stalest = (0, u64::MAX, 0);
            for (i, slot) in set.iter().enumerate() {
                let word = slot.load(Ordering::Relaxed);
                let tat = word & TIME_MASK;
                if word >> TIME_BITS == tag {
                    found = Some((i, word, tat));
                    break;
                }
                if tat < stalest.1 {
                    stalest = (i, tat, word);
                }
            }
            let (slot, old, tat) = match found {
                Some((i, word, tat)) => (i, word, tat.max(now_us)),
                None => (stalest.0, stalest.2, now_us),
            };
            let ahead = tat - now_us;
            if ahead > tolerance {
                return Err(Duration::from_micros(ahead - tolerance));
            }
            let new = tag << TIME_BITS | (tat + interval).min(TIME_MASK);
            if set[slot]
                .compare_exchange(old, new, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
            {
                return Ok(());
            }
            std::hint::spin_loop();
        }
    }

    /// Undoes a [`RateTable::take`] of `key` that let a request through
    /// (at `limit`'s pace), for a request another rule refused: its
    /// bucket is as if it had not come. Nothing if the bucket went.
    pub fn give_back(&self, key: u64, limit: Limit) {
        let interval = micros(limit.interval).max(1);
        let set = &self.sets[key as usize & (SETS - 1)].0;
        let tag = (key >> TIME_BITS).max(1);
        loop {
            let found = set
                .iter()
                .enumerate()
                .map(|(i, slot)| (i, slot.load(Ordering::Relaxed)))
                .find(|(_, word)| word >> TIME_BITS == tag);
            let Some((slot, old)) = found else {
                return;
            };
            let new = tag << TIME_BITS | (old & TIME_MASK).saturating_sub(interval);
            if set[slot]
                .compare_exchange(old, new, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
            {
                return;
            }
            std::hint::spin_loop();
        }
    }

    /// Buckets in use (not drained) at `now`, for the tests.
    #[cfg(test)]
    fn live(&self, now: Instant) -> usize {
        let now_us = now.saturating_duration_since(self.base).as_micros() as u64;
        self.sets
            .iter()
            .flat_map(|s| s.0.iter())
            .filter(|b| b.load(Ordering::Relaxed) & TIME_MASK > now_us)
            .count()
    }
}

/// A keyed hash's step (the "folded multiply" of wyhash and foldhash):
/// the two halves of the 128-bit product, xored. With keys nobody knows,
/// nobody can choose addresses that fall in one set.
#[inline]
fn fold(a: u64, b: u64) -> u64 {
    let p = u128::from(a) * u128::from(b);
    p as u64 ^ (p >> 64) as u64
}

/// Whole microseconds in `d` (without `as_micros`'s 128-bit division).
#[inline]
fn micros(d: Duration) -> u64 {
    d.as_secs() * 1_000_000 + u64::from(d.subsec_micros())
}

/// Whole seconds until `wait` has passed, at least 1, for `Retry-After`
/// (RFC 9110 §10.2.3: a delay in seconds).
pub fn retry_after_secs(wait: Duration) -> u64 {
    (wait.as_secs() + u64::from(wait.subsec_nanos() > 0)).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    const FIVE_A_SECOND: Limit = Limit {
        interval: Duration::from_millis(200),
        burst: 2,
    };

    #[test]
    fn a_bucket_lets_burst_plus_one_through_then_the_rate() {
        let t = RateTable::new();
        let now = Instant::now();
        let k = t.key(0, ip("192.0.2.1"), None);
        for _ in 0..3 {
            assert_eq!(t.take(k, FIVE_A_SECOND, now), Ok(()));
        }
        // Full: the next passes 200 ms on (what leaked out in between).
        assert_eq!(
            t.take(k, FIVE_A_SECOND, now),
            Err(Duration::from_millis(200))
        );
        let later = now + Duration::from_millis(50);
        assert_eq!(
            t.take(k, FIVE_A_SECOND, later),
            Err(Duration::from_millis(150))
        );
        let then = now + Duration::from_millis(200);
        assert_eq!(t.take(k, FIVE_A_SECOND, then), Ok(()));
        assert!(t.take(k, FIVE_A_SECOND, then).is_err());
        // Another client, another rule: buckets of their own.
        assert_eq!(
            t.take(t.key(0, ip("192.0.2.2"), None), FIVE_A_SECOND, now),
            Ok(())
        );
        assert_eq!(
            t.take(t.key(1, ip("192.0.2.1"), None), FIVE_A_SECOND, now),
            Ok(())
        );
        // Quiet long enough, the bucket is empty again.
        let quiet = now + Duration::from_secs(10);
        for _ in 0..3 {
            assert_eq!(t.take(k, FIVE_A_SECOND, quiet), Ok(()));
        }
        assert!(t.take(k, FIVE_A_SECOND, quiet).is_err());
    }

    #[test]
    fn clients_are_ipv4_addresses_and_ipv6_slash_64s() {
        let t = RateTable::new();
        assert_eq!(
            t.key(3, ip("192.0.2.1"), None),
            t.key(3, ip("::ffff:192.0.2.1"), None)
        );
        assert_eq!(
            t.key(3, ip("2001:db8:1:2::1"), None),
            t.key(3, ip("2001:db8:1:2:ffff::9"), None)
        );
        assert_ne!(
            t.key(3, ip("2001:db8:1:2::1"), None),
            t.key(3, ip("2001:db8:1:3::1"), None)
        );
        assert_ne!(
            t.key(3, ip("192.0.2.1"), Some(b"/a")),
            t.key(3, ip("192.0.2.1"), Some(b"/b"))
        );
    }

    #[test]
    fn retry_after_rounds_up() {
        assert_eq!(retry_after_secs(Duration::from_millis(1)), 1);
        assert_eq!(retry_after_secs(Duration::ZERO), 1);
        assert_eq!(retry_after_secs(Duration::from_millis(2001)), 3);
        assert_eq!(retry_after_secs(Duration::from_secs(2)), 2);
    }

    /// A million new addresses fill the table, which keeps its size, and
    /// the client being limited stays limited.
    #[test]
    fn what_is_given_back_may_be_taken_again() {
        let t = RateTable::new();
        let limit = Limit {
            interval: Duration::from_secs(60),
            burst: 0,
        };
        let now = Instant::now();
        let key = t.key(0, ip("192.0.2.1"), None);
        assert_eq!(t.take(key, limit, now), Ok(()));
        assert!(t.take(key, limit, now).is_err());
        t.give_back(key, limit);
        assert_eq!(t.take(key, limit, now), Ok(()));
        assert!(t.take(key, limit, now).is_err());
        // A bucket that is not there: nothing.
        t.give_back(t.key(0, ip("192.0.2.2"), None), limit);
        assert_eq!(t.live(now), 1);
    }

    #[test]
    fn a_flood_of_addresses_evicts_no_full_bucket() {
        let t = RateTable::new();
        let limit = Limit {
            interval: Duration::from_secs(1),
            burst: 10,
        };
        let now = Instant::now();
        let victim = t.key(0, ip("198.51.100.7"), None);
        for _ in 0..11 {
            assert_eq!(t.take(victim, limit, now), Ok(()));
        }
        assert!(t.take(victim, limit, now).is_err());
        for i in 0..1_000_000u32 {
            let key = t.key(0, IpAddr::V4((0x0a00_0000 | i).into()), None);
            let _ = t.take(key, limit, now);
        }
        assert_eq!(t.live(now), SETS * WAYS);
        assert_eq!(std::mem::size_of::<Set>() * t.sets.len(), TABLE_BYTES);
        assert_eq!(t.take(victim, limit, now), Err(Duration::from_secs(1)));
    }

    #[test]
    fn workers_together_never_pass_more_than_the_limit() {
        let t = std::sync::Arc::new(RateTable::new());
        let limit = Limit {
            interval: Duration::from_secs(3600),
            burst: 99,
        };
        let now = Instant::now();
        let key = t.key(0, ip("192.0.2.1"), None);
        let passed: usize = (0..4)
            .map(|_| {
                let t = std::sync::Arc::clone(&t);
                std::thread::spawn(move || {
                    (0..1000)
                        .filter(|_| t.take(key, limit, now).is_ok())
                        .count()
                })
            })
            .collect::<Vec<_>>()
            .into_iter()
            .map(|h| h.join().unwrap())
            .sum();
        assert_eq!(passed, 100);
    }
}
