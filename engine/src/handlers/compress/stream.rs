//! Streamed compression of produced answers (CGI, servlets, embedded
//! handlers), over HTTP/1.1 (chunked) and HTTP/2 (DATA frames): decided
//! once the answer's head is known, then applied to each piece of body
//! as it passes, in bounded memory (the coder's window and one piece).

use super::coding::StreamCoder;
use super::{choose, compressible};
use crate::ascii::IgnoreCase;
use crate::config::CompressConfig;
use crate::handlers::pipe::ReplyHead;

/// A produced answer's body being compressed: the coder, the bytes it
/// made of the last piece, and what is left of the length the producer
/// promised (its body is held to it, as it would be uncompressed).
#[derive(Debug)]
pub struct Active {
    coder: Option<StreamCoder>,
    out: Vec<u8>,
    left: Option<u64>,
    failed: bool,
    _slot: Slot,
}

/// Answers a worker compresses as they stream at once, at most: each
/// holds a coder (about 0.3 MB for gzip and brotli, 1.4 MB for zstd, with
/// its window and tables) for as long as it lasts, and each HTTP/2
/// connection may open 128 streams, so a client that asks for many
/// compressible answers and reads none could otherwise make a worker
/// hold gigabytes (4 connections: 740 MB, measured). Past it answers go as they are (a client must take
/// identity, RFC 9110 §12.5.3), with `Vary: Accept-Encoding` all the
/// same.
pub const MAX_STREAMS_PER_WORKER: usize = 128;

thread_local! {
    /// Live coders of this worker (see [`MAX_STREAMS_PER_WORKER`]).
    static LIVE: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// One of the worker's [`MAX_STREAMS_PER_WORKER`] places, given back
/// when the answer ends (or is dropped half-way).
#[derive(Debug)]
struct Slot;

impl Slot {
    fn take() -> Option<Slot> {
        LIVE.with(|n| {
            (n.get() < MAX_STREAMS_PER_WORKER).then(|| {
                n.set(n.get() + 1);
                Slot
            })
        })
    }

    fn free() -> bool {
        LIVE.with(|n| n.get() < MAX_STREAMS_PER_WORKER)
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        LIVE.with(|n| n.set(n.get().saturating_sub(1)));
    }
}

impl Active {
    /// `data` compressed (flushed, so a slow producer's output reaches the
    /// client as it comes), cut at the promised length.
    pub fn squeeze(&mut self, data: &[u8]) -> &[u8] {
        self.out.clear();
        let data = match &mut self.left {
            Some(left) => {
                let n = (data.len() as u64).min(*left) as usize;
                *left -= n as u64;
                &data[..n]
            }
            None => data,
        };
        if let Some(c) = self.coder.as_mut() {
            if !data.is_empty() && c.push(data, &mut self.out).is_err() {
                self.failed = true;
            }
        }
        &self.out
    }

    /// The stream's last bytes; `Err` with how many bytes the producer
    /// promised and did not give (or 1 if compressing failed): the
    /// answer is cut short.
    pub fn finish(&mut self) -> Result<&[u8], u64> {
        self.out.clear();
        if let Some(c) = self.coder.take() {
            if c.finish(&mut self.out).is_err() {
                self.failed = true;
            }
        }
        match (self.left, self.failed) {
            (_, true) => Err(1),
            (Some(n), _) if n > 0 => Err(n),
            _ => Ok(&self.out),
        }
    }
}

/// Decides whether the answer with `head` to a request that accepts
/// `accept` is compressed, and if so rewrites its head (see [`decide`];
/// its `Content-Length` goes: the engine chunks the body, or ends the
/// HTTP/2 stream) and returns the coder. `head_only` (HEAD) gets the
/// head a GET would, and no coder.
pub fn start_stream(
    cfg: &CompressConfig,
    accept: Option<&[u8]>,
    head: &mut ReplyHead,
    head_only: bool,
) -> Option<Box<Active>> {
    if head.chunked {
        return None;
    }
    // With every place taken, the answer (and a HEAD's, to say what a GET
    // gets) is decided as for a client that takes no coding.
    let accept = accept.filter(|_| Slot::free());
    let coding = decide(
        cfg,
        accept,
        head.status,
        &mut head.headers,
        head.content_length,
    )?;
    let left = head.content_length.take();
    if head_only {
        return None;
    }
    let slot = Slot::take()?;
    let coder = StreamCoder::new(coding, cfg.levels[coding.index()]).ok()?;
    Some(Box::new(Active {
        coder: Some(coder),
        out: Vec::new(),
        left,
        failed: false,
        _slot: slot,
    }))
}

/// Compresses a whole body held in memory (`body`, an embedded
/// handler's or a servlet's) when [`decide`] says so; its head lines are
/// `headers`.
pub fn whole(
    cfg: &CompressConfig,
    accept: Option<&[u8]>,
    status: u16,
    headers: &mut Vec<u8>,
    body: &mut Vec<u8>,
) {
    let len = Some(body.len() as u64);
    let Some(coding) = decide(cfg, accept, status, headers, len) else {
        return;
    };
    whole_with(cfg, coding, body);
}

/// Compresses `body`, held whole in memory, with `coding` (as
/// [`decide`] chose) at `cfg`'s level for it.
pub fn whole_with(cfg: &CompressConfig, coding: crate::config::Coding, body: &mut Vec<u8>) {
    match super::coding::compress(coding, cfg.levels[coding.index()], body) {
        Ok(z) => *body = z,
        // (In memory it cannot fail; were it to, the head says a
        // coding the body lacks: better no answer than a wrong one.)
        Err(_) => body.clear(),
    }
}

/// Decides whether an answer (`status`, header lines `headers`, a body
/// of `len` bytes if known) to a request that accepts `accept` is
/// compressed, and with which coding; if so its head gets a
/// `Content-Encoding`, a strong `ETag` is made weak (RFC 9110
/// §8.8.1: the bytes differ, the content does not; as nginx does), and
/// an `Accept-Ranges` goes (the ranges offered are the identity body's).
/// Every answer that could have been compressed says
/// `Vary: Accept-Encoding`.
///
/// Never compressed: a head that already has a `Content-Encoding`, says
/// `Cache-Control: no-transform` (RFC 9110 §7.7), has an incompressible
/// or no `Content-Type`, a body shorter than `min_size`, or a status
/// without a compressible body (1xx, 204, 206, 304).
pub fn decide(
    cfg: &CompressConfig,
    accept: Option<&[u8]>,
    status: u16,
    headers: &mut Vec<u8>,
    len: Option<u64>,
) -> Option<crate::config::Coding> {
    if cfg.enable && status == 304 {
        not_modified(cfg, accept, headers);
        return None;
    }
    if !cfg.enable
        || status < 200
        || matches!(status, 204 | 206 | 304)
        || len.is_some_and(|n| n < cfg.min_size)
    {
        return None;
    }
    let mut content_type = None;
    for line in headers.split(|&b| b == b'\n') {
        let Some((name, value)) = field(line) else {
            continue;
        };
        if !allows(name, value) {
            return None;
        }
        if name.eq_ignore_case(b"content-type") {
            content_type = Some(value);
        }
    }
    if !content_type.is_some_and(|ct| compressible(ct, &cfg.types)) {
        return None;
    }
    let Some(coding) = choose(accept, &cfg.encodings) else {
        headers.extend_from_slice(b"Vary: Accept-Encoding\r\n");
        return None;
    };
    let mut out = Vec::with_capacity(headers.len() + 64);
    for line in headers.split_inclusive(|&b| b == b'\n') {
        match field(line) {
            Some((name, value)) if is_strong_etag(name, value) => weak_etag(&mut out, value),
            // The ranges an upstream (or a program) offers are of its
            // identity body, not of the coded one brisk sends: a client
            // that resumed this download with `Range` would get the
            // other's bytes (nginx's gzip clears it too).
            Some((name, _)) if name.eq_ignore_case(b"accept-ranges") => {}
            _ => out.extend_from_slice(line),
        }
    }
    out.extend_from_slice(b"Content-Encoding: ");
    out.extend_from_slice(coding.name().as_bytes());
    out.extend_from_slice(b"\r\nVary: Accept-Encoding\r\n");
    *headers = out;
    Some(coding)
}

/// Whether `name: value` is a strong `ETag`.
fn is_strong_etag(name: &[u8], value: &[u8]) -> bool {
    name.eq_ignore_case(b"etag") && value.first() == Some(&b'"')
}

/// Appends an `ETag` line with the strong tag `value` made weak.
fn weak_etag(out: &mut Vec<u8>, value: &[u8]) {
    out.extend_from_slice(b"ETag: W/");
    out.extend_from_slice(value);
    out.extend_from_slice(b"\r\n");
}

/// Gives a 304 (header lines `headers`) the `ETag` and `Vary` that the
/// 200 it stands for would have had (RFC 9110 §15.4.5): a client that
/// accepts a coding holds the compressed answer under the weak tag
/// [`decide`] gave it, and a strong one in the 304 is not the same
/// validator to a cache (RFC 9111 §4.3.4), which would not freshen its
/// copy by it. A program's 304 seldom says its type: without one it is
/// taken as compressible (a weak tag matches a stored strong one too, by
/// the weak comparison); with an incompressible one, a
/// `Content-Encoding` or `no-transform`, the head stays as it is.
fn not_modified(cfg: &CompressConfig, accept: Option<&[u8]>, headers: &mut Vec<u8>) {
    let mut strong = false;
    for line in headers.split(|&b| b == b'\n') {
        let Some((name, value)) = field(line) else {
            continue;
        };
        if !allows(name, value)
            || (name.eq_ignore_case(b"content-type") && !compressible(value, &cfg.types))
        {
            return;
        }
        strong |= is_strong_etag(name, value);
    }
    if strong && choose(accept, &cfg.encodings).is_some() {
        let mut out = Vec::with_capacity(headers.len() + 32);
        for line in headers.split_inclusive(|&b| b == b'\n') {
            match field(line) {
                Some((name, value)) if is_strong_etag(name, value) => weak_etag(&mut out, value),
                _ => out.extend_from_slice(line),
            }
        }
        *headers = out;
    }
    headers.extend_from_slice(b"Vary: Accept-Encoding\r\n");
}

/// Whether a head with the field `name: value` may be compressed: not
/// when it says a `Content-Encoding` already (a `.svgz`, a program's own
/// gzip), nor `Cache-Control: no-transform` (RFC 9110 §7.7).
pub fn allows(name: &[u8], value: &[u8]) -> bool {
    if name.eq_ignore_case(b"content-encoding") {
        return false;
    }
    !(name.eq_ignore_case(b"cache-control")
        && value
            .split(|&b| b == b',')
            .any(|d| crate::http::grammar::trim_ows(d).eq_ignore_case(b"no-transform")))
}

/// A header line's name and value (`Name: value\r\n`).
fn field(line: &[u8]) -> Option<(&[u8], &[u8])> {
    let colon = line.iter().position(|&b| b == b':')?;
    let value = &line[colon + 1..];
    let value = value.strip_suffix(b"\n").unwrap_or(value);
    let value = value.strip_suffix(b"\r").unwrap_or(value);
    Some((&line[..colon], crate::http::grammar::trim_ows(value)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(headers: &str, len: Option<u64>) -> ReplyHead {
        ReplyHead {
            len: 0,
            status: 200,
            reason: None,
            headers: headers.as_bytes().to_vec(),
            content_length: len,
            chunked: false,
            own: Default::default(),
        }
    }

    fn cfg() -> CompressConfig {
        let mut c = crate::config::Config::default().site.compress;
        c.enable = true;
        c
    }

    #[test]
    fn the_head_is_rewritten_once_compressed() {
        let mut h = reply(
            "Content-Type: text/html\r\nETag: \"v1\"\r\nX-A: b\r\n",
            Some(4000),
        );
        let a = start_stream(&cfg(), Some(b"gzip"), &mut h, false);
        assert!(a.is_some());
        assert_eq!(
            String::from_utf8_lossy(&h.headers),
            "Content-Type: text/html\r\nETag: W/\"v1\"\r\nX-A: b\r\n\
             Content-Encoding: gzip\r\nVary: Accept-Encoding\r\n"
        );
        assert_eq!(h.content_length, None);
    }

    #[test]
    fn a_compressed_answer_offers_no_ranges_of_its_identity_body() {
        let mut h = reply(
            "Content-Type: text/html\r\nAccept-Ranges: bytes\r\nX-A: b\r\n",
            Some(4000),
        );
        assert!(start_stream(&cfg(), Some(b"gzip"), &mut h, false).is_some());
        assert_eq!(
            String::from_utf8_lossy(&h.headers),
            "Content-Type: text/html\r\nX-A: b\r\n\
             Content-Encoding: gzip\r\nVary: Accept-Encoding\r\n"
        );
        // Not compressed: its ranges stay.
        let mut h = reply(
            "Content-Type: text/html\r\nAccept-Ranges: bytes\r\n",
            Some(4000),
        );
        assert!(start_stream(&cfg(), Some(b"identity"), &mut h, false).is_none());
        assert_eq!(
            String::from_utf8_lossy(&h.headers),
            "Content-Type: text/html\r\nAccept-Ranges: bytes\r\nVary: Accept-Encoding\r\n"
        );
    }

    #[test]
    fn what_is_never_compressed() {
        let c = cfg();
        for (headers, len, status) in [
            (
                "Content-Type: text/html\r\nContent-Encoding: br\r\n",
                None,
                200,
            ),
            ("Content-Type: image/png\r\n", None, 200),
            ("X-A: b\r\n", None, 200),
            ("Content-Type: text/html\r\n", Some(100), 200),
            (
                "Content-Type: text/html\r\nCache-Control: public, no-transform\r\n",
                None,
                200,
            ),
            ("Content-Type: text/html\r\n", None, 206),
            ("Content-Type: image/png\r\nETag: \"a\"\r\n", None, 304),
            ("Content-Type: text/html\r\n", None, 204),
        ] {
            let mut h = reply(headers, len);
            h.status = status;
            assert!(
                start_stream(&c, Some(b"gzip"), &mut h, false).is_none(),
                "{headers}"
            );
            assert_eq!(h.headers, headers.as_bytes(), "{headers}: untouched");
        }
        // Compressible, but the client takes none: identity that varies.
        let mut h = reply("Content-Type: text/plain\r\n", None);
        assert!(start_stream(&c, Some(b"identity"), &mut h, false).is_none());
        assert!(h.headers.ends_with(b"Vary: Accept-Encoding\r\n"));
        // A 304 has no body, but the validators its 200 would have had
        // (RFC 9110 §15.4.5): a weak tag when a coding is chosen, Vary.
        for (accept, want) in [
            (
                &b"gzip"[..],
                "ETag: W/\"a\"\r\nContent-Type: text/html\r\nVary: Accept-Encoding\r\n",
            ),
            (
                b"identity",
                "ETag: \"a\"\r\nContent-Type: text/html\r\nVary: Accept-Encoding\r\n",
            ),
        ] {
            let mut h = reply("ETag: \"a\"\r\nContent-Type: text/html\r\n", None);
            h.status = 304;
            assert!(start_stream(&c, Some(accept), &mut h, false).is_none());
            assert_eq!(String::from_utf8_lossy(&h.headers), want);
        }
    }

    #[test]
    fn a_worker_compresses_so_many_streams_at_once_then_sends_them_as_they_are() {
        let mut c = cfg();
        c.levels = [4, 3, 1];
        let start = |c: &CompressConfig| {
            let mut h = reply("Content-Type: text/plain\r\n", Some(4000));
            let a = start_stream(c, Some(b"gzip"), &mut h, false);
            (a, h)
        };
        let live: Vec<Box<Active>> = (0..MAX_STREAMS_PER_WORKER)
            .map(|_| start(&c).0.expect("compressed"))
            .collect();
        let (over, h) = start(&c);
        assert!(over.is_none());
        assert_eq!(
            String::from_utf8_lossy(&h.headers),
            "Content-Type: text/plain\r\nVary: Accept-Encoding\r\n",
            "identity, still varying"
        );
        assert_eq!(h.content_length, Some(4000), "its length kept");
        drop(live);
        let (again, h) = start(&c);
        assert!(again.is_some(), "places are given back");
        assert!(h
            .headers
            .ends_with(b"Content-Encoding: gzip\r\nVary: Accept-Encoding\r\n"));
    }

    #[test]
    fn the_promised_length_still_holds() {
        let mut h = reply("Content-Type: text/plain\r\n", Some(600));
        let mut a = start_stream(&cfg(), Some(b"gzip"), &mut h, false).unwrap();
        a.squeeze(&[b'a'; 500]);
        assert_eq!(a.finish().err(), Some(100), "100 bytes short");
        let mut h = reply("Content-Type: text/plain\r\n", Some(600));
        let mut a = start_stream(&cfg(), Some(b"gzip"), &mut h, false).unwrap();
        let mut out = a.squeeze(&[b'a'; 700]).to_vec();
        out.extend_from_slice(a.finish().unwrap());
        let mut plain = Vec::new();
        std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&out[..]), &mut plain)
            .unwrap();
        assert_eq!(plain, [b'a'; 600], "cut at the promised length");
    }
}
