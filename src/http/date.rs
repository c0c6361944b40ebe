//! HTTP dates (RFC 9110 §5.6.7) and the per-second `Date` cache.
//!
//! STUB: signatures are the contract; bodies are filled in by the semantics work.

use std::time::SystemTime;

/// Length of an IMF-fixdate: `Sun, 06 Nov 1994 08:49:37 GMT`.
pub const HTTP_DATE_LEN: usize = 29;

/// Formats seconds since the Unix epoch as an IMF-fixdate.
pub fn format_http_date(secs: u64, out: &mut [u8; HTTP_DATE_LEN]) {
    let _ = (secs, out);
    todo!()
}

/// Parses any of the three HTTP-date formats; `None` if invalid.
pub fn parse_http_date(value: &[u8]) -> Option<u64> {
    let _ = value;
    todo!()
}

/// The current time as an IMF-fixdate, re-formatted at most once a second.
#[derive(Debug)]
pub struct DateCache {
    secs: u64,
    buf: [u8; HTTP_DATE_LEN],
}

impl DateCache {
    /// A cache holding the current time.
    pub fn new() -> DateCache {
        todo!()
    }

    /// Brings the cache up to `now`; cheap when the second has not changed.
    pub fn update(&mut self, now: SystemTime) {
        let _ = now;
        todo!()
    }

    /// The cached date, for a `Date` header value.
    pub fn get(&self) -> &[u8; HTTP_DATE_LEN] {
        &self.buf
    }

    /// The cached time in seconds since the epoch.
    pub fn secs(&self) -> u64 {
        self.secs
    }
}

impl Default for DateCache {
    fn default() -> Self {
        DateCache::new()
    }
}
