//! Failed attempts per client, in a bounded map.
//!
//! A client is an IPv4 address, or an IPv6 /64 (one subscriber usually
//! holds a whole /64, so counting single IPv6 addresses would let one
//! attacker rotate through 2^64 of them). IPv4-mapped IPv6 addresses count
//! as their IPv4 address.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use super::auth::random_secret;

/// Clients tracked; beyond it the oldest window is forgotten.
pub(crate) const MAX_CLIENTS: usize = 8192;

struct Window {
    start: Instant,
    count: u32,
}

/// Failure counters.
pub(crate) struct Failures {
    /// Failures allowed per window; 0 means no limit.
    limit: u32,
    window: Duration,
    capacity: usize,
    map: HashMap<IpAddr, Window>,
}

impl Failures {
    pub(crate) fn new(limit: u32, window: Duration, capacity: usize) -> Failures {
        Failures {
            limit,
            window,
            capacity: capacity.max(1),
            map: HashMap::new(),
        }
    }

    /// If `client` used up its failures in the current window: the seconds
    /// until that window ends (at least 1), for `Retry-After`.
    pub(crate) fn blocked(&self, client: IpAddr, now: Instant) -> Option<u64> {
        if self.limit == 0 {
            return None;
        }
        let w = self.map.get(&key(client))?;
        let elapsed = now.saturating_duration_since(w.start);
        if w.count < self.limit || elapsed >= self.window {
            return None;
        }
        let left = self.window - elapsed;
        Some((left.as_secs() + u64::from(left.subsec_nanos() > 0)).max(1))
    }

    /// Counts one failure. A window starts at a client's first failure and
    /// lasts `window`; successes never reset it (else one valid account
    /// would let its owner guess others' passwords without limit).
    pub(crate) fn record(&mut self, client: IpAddr, now: Instant) {
        if self.limit == 0 {
            return;
        }
        let k = key(client);
        if !self.map.contains_key(&k) && self.map.len() >= self.capacity {
            self.evict(now);
        }
        let window = self.window;
        let w = self.map.entry(k).or_insert(Window {
            start: now,
            count: 0,
        });
        if now.saturating_duration_since(w.start) >= window {
            *w = Window {
                start: now,
                count: 0,
            };
        }
        w.count = w.count.saturating_add(1);
    }

    /// Takes back one failure of `client` counted at `at` (a password
    /// check that was counted when handed out, and verified): nothing if
    /// its window is over.
    pub(crate) fn forgive(&mut self, client: IpAddr, at: Instant) {
        if let Some(w) = self.map.get_mut(&key(client)) {
            if w.start <= at {
                w.count = w.count.saturating_sub(1);
            }
        }
    }

    /// Drops expired windows; if none has expired, the oldest eighth of
    /// the clients at once (the oldest one when there are fewer than 16),
    /// so that the scans here are paid once per that many new clients,
    /// not for each: under a flood of new addresses (IPv6 /64s), with
    /// this under the lock every worker takes for every request under
    /// an `[[auth]]` rule, they made each such request 5 to 10 times
    /// slower, and the workers' other requests with them.
    fn evict(&mut self, now: Instant) {
        let window = self.window;
        self.map
            .retain(|_, w| now.saturating_duration_since(w.start) < window);
        if self.map.len() < self.capacity {
            return;
        }
        let n = (self.capacity / 8).clamp(1, self.map.len());
        // The n-th oldest start, by the engine's one sort (`select_nth_
        // _unstable` built 7.9 KiB of the standard library's selection
        // for this alone); windows that started then too go with it.
        let mut starts: Vec<Instant> = self.map.values().map(|w| w.start).collect();
        crate::sort::sort_by_key(&mut starts, |s| *s);
        let cutoff = starts[n - 1];
        self.map.retain(|_, w| w.start > cutoff);
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.map.len()
    }

    /// The failures counted for `client` in its window (0: none).
    #[cfg(test)]
    pub(crate) fn count(&self, client: IpAddr) -> u32 {
        self.map.get(&key(client)).map_or(0, |w| w.count)
    }
}

/// The failure counters every worker of a server shares, so that more
/// workers do not mean more guesses. The lock is taken once per request
/// under an `[[auth]]` rule, for a map lookup.
#[derive(Clone)]
pub struct SharedFailures(Arc<(Mutex<Failures>, [u8; 16])>);

impl SharedFailures {
    /// Counters allowing `limit` failures (0: no limit) per `window`
    /// (the configuration's `limits.auth_failures` and
    /// `timeouts.auth_failure_window`).
    pub fn new(limit: u32, window: Duration) -> SharedFailures {
        let failures = Failures::new(limit, window, MAX_CLIENTS);
        SharedFailures(Arc::new((Mutex::new(failures), random_secret())))
    }

    /// Keys the digests of credentials (see `Auth`): the same in every
    /// worker, so that identical checks have the same key.
    pub(crate) fn secret(&self) -> [u8; 16] {
        self.0 .1
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, Failures> {
        // The counters stay usable after a panic elsewhere.
        self.0 .0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl std::fmt::Debug for SharedFailures {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SharedFailures")
    }
}

fn key(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(_) => ip,
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => IpAddr::V6((u128::from(v6) & !((1u128 << 64) - 1)).into()),
        },
    }
}
