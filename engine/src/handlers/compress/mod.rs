//! On-the-fly compression (`[compress]`): which coding a request gets
//! (RFC 9110 §12.5.3, by its `Accept-Encoding` weights, ties broken by
//! the configured order), which answers are worth compressing (a
//! compressible `Content-Type`, at least `min_size` bytes, no
//! `Content-Encoding` already, not a range, a 206 or a 304), the static
//! files' variants (`cache`, made on threads and shared by the workers)
//! and streamed output (`coding::StreamCoder`, for CGI, servlets,
//! handlers and the first answers of a static file whose variant is not
//! ready yet).
//!
//! Ranges: as nginx, a request with `Range` gets ranges of the file as it
//! is, never of a compressed variant, and its answer says
//! `Vary: Accept-Encoding` all the same.

#[cfg(feature = "compress")]
pub mod cache;
#[cfg(feature = "compress")]
pub mod coding;
#[cfg(feature = "compress")]
pub mod stream;

use crate::ascii::IgnoreCase;
use crate::config::{Coding, CompressConfig};
use crate::handlers::pipe::ReplyHead;
use crate::http::encoding;

/// A produced answer's streamed compression (see `stream`), or none:
/// the engine passes each piece of body through it. Without the cargo
/// feature `compress` it is always off.
#[derive(Debug, Default)]
pub struct Squeeze {
    #[cfg(feature = "compress")]
    active: Option<Box<stream::Active>>,
}

impl Squeeze {
    /// Decides for the answer with `head` to a request that accepts
    /// `accept` (see `stream::start_stream`), rewriting its head when it
    /// is compressed.
    #[allow(unused_variables)]
    pub fn start(
        cfg: &CompressConfig,
        accept: Option<&[u8]>,
        head: &mut ReplyHead,
        head_only: bool,
    ) -> Squeeze {
        Squeeze {
            #[cfg(feature = "compress")]
            active: stream::start_stream(cfg, accept, head, head_only),
        }
    }

    /// Whether the body is being compressed.
    pub fn is_on(&self) -> bool {
        #[cfg(feature = "compress")]
        return self.active.is_some();
        #[cfg(not(feature = "compress"))]
        false
    }

    /// The bytes that go out for `data`: itself, or compressed.
    pub fn squeeze<'a>(&'a mut self, data: &'a [u8]) -> &'a [u8] {
        #[cfg(feature = "compress")]
        if let Some(a) = self.active.as_mut() {
            return a.squeeze(data);
        }
        data
    }

    /// Ends the body: its last bytes (none when not compressed); `Err`
    /// with how many bytes the producer promised and did not give (the
    /// answer is cut short).
    pub fn finish(&mut self) -> Result<&[u8], u64> {
        #[cfg(feature = "compress")]
        if let Some(a) = self.active.as_mut() {
            return a.finish();
        }
        Ok(&[])
    }
}

/// The codings a client's `Accept-Encoding` lets brisk choose, among
/// `offered` (in brisk's order of preference): the one of highest weight,
/// the first of `offered` on a tie, and none when the client weighs
/// `identity` (or `*`) more, or sent no header (RFC 9110 §12.5.3 lets a
/// server send identity then).
pub fn choose(accept: Option<&[u8]>, offered: &[Coding]) -> Option<Coding> {
    let accept = accept?;
    let (weights, identity) = encoding::weights(accept, Coding::ALL.map(|c| c.name().as_bytes()));
    let mut best: Option<(Coding, u16)> = None;
    for &c in offered {
        let w = weights[c.index()];
        if w > 0 && best.is_none_or(|(_, bw)| w > bw) {
            best = Some((c, w));
        }
    }
    match best {
        Some((_, w)) if identity.is_some_and(|i| i > w) => None,
        Some((c, _)) => Some(c),
        None => None,
    }
}

/// Whether `content_type` (parameters allowed) is one of `types`
/// (`type/subtype`, or `type/*`), case-insensitively.
pub fn compressible(content_type: &[u8], types: &[String]) -> bool {
    let end = content_type
        .iter()
        .position(|&b| b == b';')
        .unwrap_or(content_type.len());
    let ct = crate::http::grammar::trim_ows(&content_type[..end]);
    types.iter().any(|t| match t.strip_suffix("/*") {
        Some(major) => {
            ct.len() > major.len() + 1
                && ct[..major.len()].eq_ignore_case(major.as_bytes())
                && ct[major.len()] == b'/'
        }
        None => ct.eq_ignore_case(t.as_bytes()),
    })
}

/// Whether a body of `len` bytes with `content_type` is worth compressing
/// under `cfg` (its length, when it is known).
pub fn worth(cfg: &CompressConfig, content_type: &[u8], len: Option<u64>) -> bool {
    cfg.enable && len.is_none_or(|n| n >= cfg.min_size) && compressible(content_type, &cfg.types)
}

#[cfg(test)]
mod tests {
    use super::*;
    use Coding::*;

    #[test]
    fn choice_by_weight_then_preference() {
        let all = [Br, Zstd, Gzip];
        assert_eq!(choose(None, &all), None);
        assert_eq!(choose(Some(b"gzip, br"), &all), Some(Br));
        assert_eq!(choose(Some(b"gzip, br"), &[Gzip, Br]), Some(Gzip));
        assert_eq!(choose(Some(b"gzip;q=1, br;q=0.5"), &all), Some(Gzip));
        assert_eq!(choose(Some(b"br;q=0, gzip"), &all), Some(Gzip));
        assert_eq!(choose(Some(b"*"), &all), Some(Br));
        assert_eq!(
            choose(Some(b"*;q=0.5, br;q=0"), &all),
            Some(Zstd),
            "a tie with identity compresses"
        );
        assert_eq!(choose(Some(b"identity"), &all), None);
        assert_eq!(choose(Some(b"gzip;q=0.5, identity"), &all), None);
        assert_eq!(choose(Some(b"gzip;q=0.5, identity;q=0"), &all), Some(Gzip));
        assert_eq!(choose(Some(b"deflate"), &all), None);
        assert_eq!(choose(Some(b"zstd"), &[Br, Gzip]), None);
    }

    #[test]
    fn compressible_types() {
        let types: Vec<String> = ["text/*", "application/json", "image/svg+xml"]
            .map(String::from)
            .to_vec();
        assert!(compressible(b"text/html; charset=utf-8", &types));
        assert!(compressible(b"TEXT/CSS", &types));
        assert!(compressible(b"application/json", &types));
        assert!(compressible(b"image/svg+xml", &types));
        assert!(!compressible(b"image/png", &types));
        assert!(!compressible(b"text", &types));
        assert!(!compressible(b"textual/x", &types));
        assert!(!compressible(b"application/json-seq", &types));
    }
}
