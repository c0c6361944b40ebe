//! What a worker's generation of the configuration says, with the limits
//! its parsers take worked out once from it.

use std::sync::Arc;

use crate::config::{Config, SiteConfig};
use crate::http::body::BodyLimits;
use crate::http::parse;
use crate::http::request::MAX_HEADERS;

/// How much a chunk extension may hold (bytes, per chunk).
const MAX_CHUNK_EXT: usize = 4096;

/// A worker's configuration and the limits derived from it.
pub(super) struct Settings {
    /// The configuration (of its generation: a reload starts new workers).
    pub(super) cfg: Arc<Config>,
    /// The request head parser's limits.
    pub(super) limits: parse::Limits,
    /// The request body decoder's limits, before routing: `max_body` is
    /// the largest any request may have (`limits.max_body`, or above it
    /// a `[[webdav]]` rule's `max_upload` or another rule's `max_body`);
    /// the route then bounds each body by its own (`Worker::route`).
    pub(super) body_limits: BodyLimits,
    /// The HTTP/2 limits of its connections (`[http2]`'s), shared.
    #[cfg(feature = "http2")]
    pub(super) h2_limits: Option<Arc<crate::h2::Limits>>,
    /// Answers the worker's HTTP/2 streams may have under way at once
    /// before a connection past its fair share is refused more (see
    /// `Worker::crowded`): half the descriptors the process may open,
    /// divided among the workers.
    #[cfg(feature = "http2")]
    pub(super) stream_budget: usize,
}

impl Settings {
    /// The settings of `cfg`.
    pub(super) fn new(cfg: Arc<Config>) -> Settings {
        let limits = parse::Limits {
            max_request_line: cfg.limits.max_request_line,
            max_head: cfg.limits.max_header_bytes,
            max_headers: cfg.limits.max_headers.min(MAX_HEADERS),
        };
        let mut max_body = cfg.limits.max_body;
        for s in SiteConfig::all(&cfg) {
            let writable = s
                .webdav
                .iter()
                .filter(|r| !r.read_only)
                .map(|r| r.max_upload);
            let cgi = s.cgi.iter().map(|r| r.max_body);
            for m in writable.chain(cgi).flatten() {
                max_body = max_body.max(m);
            }
            #[cfg(feature = "upstreams")]
            for m in (s.reverse_proxy.iter().map(|r| r.max_body))
                .chain(s.fastcgi.iter().map(|r| r.max_body))
                .flatten()
            {
                max_body = max_body.max(m);
            }
        }
        let body_limits = BodyLimits {
            max_body,
            max_chunk_ext: MAX_CHUNK_EXT,
            max_trailers: cfg.limits.max_header_bytes,
        };
        Settings {
            limits,
            body_limits,
            #[cfg(feature = "http2")]
            h2_limits: None,
            #[cfg(feature = "http2")]
            stream_budget: stream_budget(crate::sys::process::nofile_limit(), cfg.workers),
            cfg,
        }
    }
}

/// The answers a worker's HTTP/2 streams may have under way at once
/// while connections past their fair share open more (see
/// `Worker::crowded`): half of `nofile` descriptors (the other half
/// for connections, the open-file cache, logs and programs), divided
/// among `workers`.
#[cfg(feature = "http2")]
fn stream_budget(nofile: u64, workers: usize) -> usize {
    let half = usize::try_from(nofile / 2).unwrap_or(usize::MAX);
    (half / workers.max(1)).max(super::h2::FAIR_SHARE)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_parsers_limits_come_from_the_configuration() {
        let mut cfg = Config::default();
        cfg.limits.max_request_line = 1000;
        cfg.limits.max_header_bytes = 2000;
        cfg.limits.max_headers = 30;
        cfg.limits.max_body = 3000;
        let s = Settings::new(Arc::new(cfg));
        assert_eq!(s.limits.max_request_line, 1000);
        assert_eq!(s.limits.max_head, 2000);
        assert_eq!(s.limits.max_headers, 30);
        assert_eq!(s.body_limits.max_body, 3000);
        assert_eq!(s.body_limits.max_chunk_ext, MAX_CHUNK_EXT);
        assert_eq!(s.body_limits.max_trailers, 2000);
    }

    #[test]
    fn header_count_is_capped_by_the_parsers_table() {
        let mut cfg = Config::default();
        cfg.limits.max_headers = MAX_HEADERS + 1;
        let s = Settings::new(Arc::new(cfg));
        assert_eq!(s.limits.max_headers, MAX_HEADERS);
    }
}
