//! What the outside may ask of a serving brisk's life: whether a stop has
//! begun (readiness answers 503 from then on) and what it counted (both in
//! [`Lifecycle`], shared with the built-in handlers), and whether every
//! worker's loop still turns (the service manager's watchdog is fed only
//! then).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

pub use crate::handlers::stats::Lifecycle;

/// When a worker's loop last went round its once-a-second timer pass.
#[derive(Debug)]
pub struct Heartbeat(AtomicU64);

/// The instant heartbeats count from.
fn base() -> Instant {
    static BASE: OnceLock<Instant> = OnceLock::new();
    *BASE.get_or_init(Instant::now)
}

impl Heartbeat {
    /// A heartbeat that beat now.
    pub fn new() -> Arc<Heartbeat> {
        let h = Arc::new(Heartbeat(AtomicU64::new(0)));
        h.beat(Instant::now());
        h
    }

    /// The loop went round at `now`.
    pub fn beat(&self, now: Instant) {
        let ms = now.saturating_duration_since(base()).as_millis() as u64;
        self.0.store(ms, Ordering::Relaxed);
    }

    /// Whether it beat within `age` of now.
    pub fn within(&self, age: Duration) -> bool {
        let now = Instant::now().saturating_duration_since(base()).as_millis() as u64;
        now.saturating_sub(self.0.load(Ordering::Relaxed)) <= age.as_millis() as u64
    }
}
