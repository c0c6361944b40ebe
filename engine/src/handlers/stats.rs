//! What the server counts for the built-in `metrics` and `status`
//! handlers, and whether a stop has begun (for `ready`).
//!
//! Counting costs nothing shared on the request path: each worker thread
//! has a [`WorkerStats`] of its own, written by it alone (a load and a
//! store, never a locked read-modify-write, since nobody else writes it),
//! read by whoever renders the metrics. Gauges (open and idle
//! connections, CGI processes) are published by each worker once a
//! second, so they lag by at most that. When a generation of workers has
//! exited (after a reload), its counts are folded into the totals, so
//! that every counter only ever grows.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

/// Methods counted apart; the rest are `other`.
pub const METHODS: [&str; 5] = ["GET", "HEAD", "POST", "PUT", "other"];
/// Status classes.
pub const CLASSES: [&str; 5] = ["1xx", "2xx", "3xx", "4xx", "5xx"];
/// Upper bounds of the request-duration histogram, in microseconds
/// (integers: no floating point on the request path).
pub const BUCKETS: [u64; 10] = [
    500, 1_000, 2_500, 5_000, 10_000, 50_000, 100_000, 500_000, 1_000_000, 5_000_000,
];

const CELLS: usize = METHODS.len() * CLASSES.len();

/// One worker's counters and gauges.
#[derive(Debug, Default)]
pub struct WorkerStats {
    requests: [AtomicU64; CELLS],
    /// Per bucket (the last is +Inf), not cumulative.
    duration: [AtomicU64; BUCKETS.len() + 1],
    duration_us: AtomicU64,
    sent: AtomicU64,
    throttled: AtomicU64,
    auth_failures: AtomicU64,
    auth_hashes: AtomicU64,
    open: AtomicU64,
    idle: AtomicU64,
    cgi: AtomicU64,
}

/// Adds `n` to a counter only its worker writes: no locked instruction.
fn bump(a: &AtomicU64, n: u64) {
    a.store(a.load(Ordering::Relaxed).wrapping_add(n), Ordering::Relaxed);
}

fn get(a: &AtomicU64) -> u64 {
    a.load(Ordering::Relaxed)
}

/// Which of [`METHODS`] `method` is.
fn method_index(method: &[u8]) -> usize {
    match method {
        b"GET" => 0,
        b"HEAD" => 1,
        b"POST" => 2,
        b"PUT" => 3,
        _ => 4,
    }
}

impl WorkerStats {
    /// A request answered `status` after `took` (from its first byte to
    /// its answer being queued).
    pub fn answered(&self, method: &[u8], status: u16, took: Duration) {
        let class = usize::from(status / 100).clamp(1, 5) - 1;
        bump(
            &self.requests[method_index(method) * CLASSES.len() + class],
            1,
        );
        let us = took.as_micros() as u64;
        let bucket = BUCKETS
            .iter()
            .position(|&b| us <= b)
            .unwrap_or(BUCKETS.len());
        bump(&self.duration[bucket], 1);
        bump(&self.duration_us, us);
    }

    /// Bytes written to clients (heads, bodies, framing).
    pub fn sent(&self, bytes: u64) {
        bump(&self.sent, bytes);
    }

    /// Bytes written under a `[[throttle]]` rate.
    pub fn throttled(&self, bytes: u64) {
        bump(&self.throttled, bytes);
    }

    /// A failed login (a wrong password, or a client over its limit).
    pub fn auth_failed(&self) {
        bump(&self.auth_failures, 1);
    }

    /// A password hashed for a login (not one answered by an identical
    /// check's verdict, or from the cache).
    pub fn auth_hashed(&self) {
        bump(&self.auth_hashes, 1);
    }

    /// The worker's gauges now: open connections, idle ones, CGI
    /// processes running.
    pub fn publish(&self, open: usize, idle: usize, cgi: usize) {
        self.open.store(open as u64, Ordering::Relaxed);
        self.idle.store(idle as u64, Ordering::Relaxed);
        self.cgi.store(cgi as u64, Ordering::Relaxed);
    }

    fn snapshot(&self) -> Counts {
        Counts {
            requests: self.requests.each_ref().map(get),
            duration: self.duration.each_ref().map(get),
            duration_us: get(&self.duration_us),
            sent: get(&self.sent),
            throttled: get(&self.throttled),
            auth_failures: get(&self.auth_failures),
            auth_hashes: get(&self.auth_hashes),
            open: get(&self.open),
            idle: get(&self.idle),
            cgi: get(&self.cgi),
        }
    }
}

/// A worker's numbers at one moment (or the sum of several).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counts {
    /// Requests by method and class (method-major, see [`METHODS`]).
    pub requests: [u64; CELLS],
    /// Requests per duration bucket, not cumulative.
    pub duration: [u64; BUCKETS.len() + 1],
    /// Sum of the durations, in microseconds.
    pub duration_us: u64,
    /// Bytes written to clients.
    pub sent: u64,
    /// Bytes written under a throttle.
    pub throttled: u64,
    /// Failed logins.
    pub auth_failures: u64,
    /// Passwords hashed for logins.
    pub auth_hashes: u64,
    /// Open connections (a gauge).
    pub open: u64,
    /// Idle keep-alive connections (a gauge).
    pub idle: u64,
    /// CGI processes running (a gauge).
    pub cgi: u64,
}

impl Counts {
    fn add(&mut self, o: &Counts) {
        for (a, b) in self.requests.iter_mut().zip(&o.requests) {
            *a += b;
        }
        for (a, b) in self.duration.iter_mut().zip(&o.duration) {
            *a += b;
        }
        self.duration_us += o.duration_us;
        self.sent += o.sent;
        self.throttled += o.throttled;
        self.auth_failures += o.auth_failures;
        self.auth_hashes += o.auth_hashes;
        self.open += o.open;
        self.idle += o.idle;
        self.cgi += o.cgi;
    }

    /// Requests answered, all methods and classes.
    pub fn requests_total(&self) -> u64 {
        self.requests.iter().sum()
    }
}

/// The server's life and numbers, shared by its workers and the built-in
/// handlers.
#[derive(Debug)]
pub struct Lifecycle {
    stopping: AtomicBool,
    reloads: AtomicU64,
    started: Instant,
    started_wall: SystemTime,
    /// The stats of every worker thread that runs, and what exited ones
    /// counted.
    workers: Mutex<Workers>,
}

/// The stats of every worker thread that runs, with its index; per
/// index, what exited threads of that index counted.
#[derive(Debug, Default)]
struct Workers {
    live: Vec<(usize, Arc<WorkerStats>)>,
    folded: Vec<Counts>,
}

impl Default for Lifecycle {
    fn default() -> Self {
        Lifecycle {
            stopping: AtomicBool::new(false),
            reloads: AtomicU64::new(0),
            started: Instant::now(),
            started_wall: SystemTime::now(),
            workers: Mutex::default(),
        }
    }
}

impl Lifecycle {
    /// Whether a stop has begun (SIGTERM, within `timeouts.stop_delay`
    /// and the drain after it).
    pub fn stopping(&self) -> bool {
        self.stopping.load(Ordering::Relaxed)
    }

    /// A stop begins: from now on, readiness says no.
    pub fn begin_stop(&self) {
        self.stopping.store(true, Ordering::Relaxed);
    }

    /// A reload took effect.
    pub fn reloaded(&self) {
        self.reloads.fetch_add(1, Ordering::Relaxed);
    }

    /// Reloads that took effect.
    pub fn reloads(&self) -> u64 {
        self.reloads.load(Ordering::Relaxed)
    }

    /// How long the server has served.
    pub fn uptime(&self) -> Duration {
        self.started.elapsed()
    }

    /// When it started.
    pub fn started(&self) -> SystemTime {
        self.started_wall
    }

    /// The stats a new worker thread of index `id` counts in.
    pub fn worker(&self, id: usize) -> Arc<WorkerStats> {
        let stats = Arc::new(WorkerStats::default());
        let mut w = self.workers.lock().unwrap_or_else(|e| e.into_inner());
        w.live.push((id, Arc::clone(&stats)));
        stats
    }

    /// Folds the counts of worker threads that have exited (`stats`) into
    /// the totals of their index; their gauges are gone with them.
    pub fn retire(&self, stats: &[Arc<WorkerStats>]) {
        let mut w = self.workers.lock().unwrap_or_else(|e| e.into_inner());
        let Workers { live, folded } = &mut *w;
        live.retain(|(id, s)| {
            if !stats.iter().any(|r| Arc::ptr_eq(r, s)) {
                return true;
            }
            let mut c = s.snapshot();
            (c.open, c.idle, c.cgi) = (0, 0, 0);
            if folded.len() <= *id {
                folded.resize(id + 1, Counts::default());
            }
            folded[*id].add(&c);
            false
        });
    }

    /// Each worker index's numbers (threads of every generation of that
    /// index, exited ones included), in index order.
    pub fn per_worker(&self) -> Vec<Counts> {
        let w = self.workers.lock().unwrap_or_else(|e| e.into_inner());
        let Workers { live, folded } = &*w;
        let n = live
            .iter()
            .map(|(id, _)| id + 1)
            .max()
            .unwrap_or(0)
            .max(folded.len());
        let mut out = folded.clone();
        out.resize(n, Counts::default());
        for (id, s) in live {
            out[*id].add(&s.snapshot());
        }
        out
    }
}

/// Microseconds written as decimal seconds, as `{}` writes `us as f64 / 1e6`
/// ("0.0005", "2.5", "1"), with integers only: formatting an `f64` would
/// link core's float printing (Grisu and Dragon4, about 12 KiB) for these
/// two lines alone.
struct Seconds(u64);

impl std::fmt::Display for Seconds {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (whole, mut frac) = (self.0 / 1_000_000, self.0 % 1_000_000);
        if frac == 0 {
            return write!(f, "{whole}");
        }
        let mut digits = 6;
        while frac % 10 == 0 {
            frac /= 10;
            digits -= 1;
        }
        write!(f, "{whole}.{frac:0digits$}")
    }
}

/// The Prometheus text exposition (version 0.0.4) of `life`.
pub fn prometheus(life: &Lifecycle) -> String {
    let workers = life.per_worker();
    let mut s = String::with_capacity(4096);
    let _ = writeln!(
        s,
        "# HELP brisk_requests_total Requests answered, by worker, method and status class.\n# TYPE brisk_requests_total counter"
    );
    for (w, c) in workers.iter().enumerate() {
        for (m, method) in METHODS.iter().enumerate() {
            for (k, class) in CLASSES.iter().enumerate() {
                let n = c.requests[m * CLASSES.len() + k];
                if n > 0 {
                    let _ = writeln!(
                        s,
                        "brisk_requests_total{{worker=\"{w}\",method=\"{method}\",code=\"{class}\"}} {n}"
                    );
                }
            }
        }
    }
    type Family = (&'static str, &'static str, &'static str, fn(&Counts) -> u64);
    let simple: [Family; 7] = [
        (
            "brisk_sent_bytes_total",
            "counter",
            "Bytes written to clients (heads, bodies, framing).",
            |c| c.sent,
        ),
        (
            "brisk_throttled_bytes_total",
            "counter",
            "Bytes written under a [[throttle]] rate.",
            |c| c.throttled,
        ),
        (
            "brisk_auth_failures_total",
            "counter",
            "Failed logins: wrong credentials, or a client over limits.auth_failures.",
            |c| c.auth_failures,
        ),
        (
            "brisk_auth_hashes_total",
            "counter",
            "Passwords hashed to check logins (identical checks at once share one).",
            |c| c.auth_hashes,
        ),
        (
            "brisk_open_connections",
            "gauge",
            "Open client connections (published by each worker once a second).",
            |c| c.open,
        ),
        (
            "brisk_idle_connections",
            "gauge",
            "Idle keep-alive connections (published by each worker once a second).",
            |c| c.idle,
        ),
        (
            "brisk_cgi_processes",
            "gauge",
            "CGI processes running (published by each worker once a second).",
            |c| c.cgi,
        ),
    ];
    for (name, kind, help, value) in simple {
        let _ = writeln!(s, "# HELP {name} {help}\n# TYPE {name} {kind}");
        for (w, c) in workers.iter().enumerate() {
            let _ = writeln!(s, "{name}{{worker=\"{w}\"}} {}", value(c));
        }
    }
    let mut all = Counts::default();
    for c in &workers {
        all.add(c);
    }
    let name = "brisk_request_duration_seconds";
    let _ = writeln!(
        s,
        "# HELP {name} Time from a request's first byte to its answer being queued.\n# TYPE {name} histogram"
    );
    let mut cumulative = 0;
    for (i, b) in BUCKETS.iter().enumerate() {
        cumulative += all.duration[i];
        let _ = writeln!(s, "{name}_bucket{{le=\"{}\"}} {cumulative}", Seconds(*b));
    }
    cumulative += all.duration[BUCKETS.len()];
    let _ = writeln!(s, "{name}_bucket{{le=\"+Inf\"}} {cumulative}");
    let _ = writeln!(s, "{name}_sum {}", Seconds(all.duration_us));
    let _ = writeln!(s, "{name}_count {cumulative}");
    let _ = writeln!(
        s,
        "# HELP brisk_reloads_total Configuration reloads that took effect.\n# TYPE brisk_reloads_total counter\nbrisk_reloads_total {}",
        life.reloads()
    );
    let _ = writeln!(
        s,
        "# HELP brisk_uptime_seconds Seconds since the server started.\n# TYPE brisk_uptime_seconds gauge\nbrisk_uptime_seconds {}",
        life.uptime().as_secs()
    );
    let _ = writeln!(
        s,
        "# HELP brisk_stopping Whether a stop has begun (readiness answers 503).\n# TYPE brisk_stopping gauge\nbrisk_stopping {}",
        u8::from(life.stopping())
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_counted_by_method_class_and_duration() {
        let life = Lifecycle::default();
        let w = life.worker(0);
        w.answered(b"GET", 200, Duration::from_micros(300));
        w.answered(b"GET", 404, Duration::from_micros(500));
        w.answered(b"PROPFIND", 207, Duration::from_micros(501));
        w.answered(b"POST", 503, Duration::from_secs(9));
        w.sent(1000);
        let c = &life.per_worker()[0];
        assert_eq!(c.requests[1], 1, "GET 2xx");
        assert_eq!(c.requests[3], 1, "GET 4xx");
        assert_eq!(c.requests[4 * CLASSES.len() + 1], 1, "other 2xx");
        assert_eq!(c.requests[2 * CLASSES.len() + 4], 1, "POST 5xx");
        // 500 µs is in the first bucket (le), 501 µs in the second; 9 s
        // only in +Inf.
        assert_eq!(&c.duration[..3], &[2, 1, 0]);
        assert_eq!(c.duration[BUCKETS.len()], 1);
        let text = prometheus(&life);
        assert!(text.contains("brisk_requests_total{worker=\"0\",method=\"GET\",code=\"2xx\"} 1\n"));
        assert!(
            text.contains("brisk_request_duration_seconds_bucket{le=\"0.0005\"} 2\n"),
            "{text}"
        );
        assert!(text.contains("brisk_request_duration_seconds_bucket{le=\"+Inf\"} 4\n"));
        assert!(text.contains("brisk_request_duration_seconds_count 4\n"));
        assert!(text.contains("brisk_sent_bytes_total{worker=\"0\"} 1000\n"));
    }

    #[test]
    fn seconds_are_written_as_a_float_would_be() {
        let samples = [
            0, 1, 9, 10, 500, 501, 1_000, 2_500, 999_999, 1_000_000, 1_000_001,
        ]
        .into_iter()
        .chain(BUCKETS)
        .chain([2_500_000, 123_456_789, 86_400_000_000, 3_000_000_007]);
        for us in samples {
            assert_eq!(
                Seconds(us).to_string(),
                (us as f64 / 1e6).to_string(),
                "{us}"
            );
        }
    }

    #[test]
    fn counts_of_exited_workers_are_kept_and_their_gauges_dropped() {
        let life = Lifecycle::default();
        let old = life.worker(0);
        old.answered(b"GET", 200, Duration::ZERO);
        old.publish(5, 3, 1);
        let new = life.worker(0);
        new.answered(b"GET", 200, Duration::ZERO);
        assert_eq!(life.per_worker()[0].requests_total(), 2);
        assert_eq!(life.per_worker()[0].open, 5);
        life.retire(&[old]);
        let c = &life.per_worker()[0];
        assert_eq!((c.requests_total(), c.open, c.idle, c.cgi), (2, 0, 0, 0));
        life.reloaded();
        assert!(prometheus(&life).contains("brisk_reloads_total 1\n"));
    }
}
