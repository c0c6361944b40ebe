//! An HTTP/1.1 connection that became a byte tunnel (a 101 answer,
//! RFC 9110 §7.8: a WebSocket through the reverse proxy): what the
//! connection holds for it ([`crate::server::conn::Proto::Tunnel`]), in
//! place of its HTTP/1.1 state, the exchange that answered it and the
//! request it held (issue #27: 10,000 idle tunnels, bytes per tunnel).
//! The producer that carries the bytes (`handlers/proxy/tunnel.rs`) is
//! kept as it is; of the request, only what its access-log line says
//! ([`Logged`]), which is written when the tunnel closes. The worker
//! drives it (`worker/tunnel.rs`).

use std::net::SocketAddr;
use std::time::{Instant, SystemTime};

use crate::handlers::produce::Produce;
use crate::http::request::{Field, OwnedRequest};
use crate::http::{TlsSession, Version};
use crate::log::AccessRecord;

/// A connection's tunnel (see the module documentation).
#[derive(Debug)]
pub struct Tunnel {
    /// Carries the bytes both ways: the client's to its input, the
    /// upstream's from `next`.
    pub producer: Box<dyn Produce>,
    /// Its access-log line's fields.
    pub logged: Logged,
    /// The connection's byte position where the tunnel's bytes (the
    /// answer's body) begin, after the 101's head.
    pub body_from: u64,
    /// The client's end was passed on to the producer's input.
    pub client_done: bool,
}

/// What the access log says of a tunnel's request, kept in one buffer
/// of exactly their size: its method, target, `Referer`, `User-Agent`,
/// user and `Host`, one after the other. (Its version is HTTP/1.1's: only
/// an HTTP/1.1 request becomes a tunnel, RFC 9110 §7.8.)
#[derive(Debug)]
pub struct Logged {
    text: Box<[u8]>,
    /// Where each of those but the last ends in `text`.
    ends: [u32; 5],
    /// Which of the four optional ones the request had (bit 0:
    /// `Referer`, 1: `User-Agent`, 2: the user, 3: `Host`).
    has: u8,
    /// The client (as trusted proxies named it; port 0 when they did
    /// not say).
    pub remote: SocketAddr,
    /// Whether the client spoke HTTPS (`$scheme`).
    pub https: bool,
    /// When the request's first byte came.
    pub started: Instant,
    /// The answer's status (101).
    pub status: u16,
}

impl Logged {
    /// What the log will say of `req` from `remote` (over HTTPS if
    /// `https`), begun at `started`, answered `status`.
    pub fn new(
        req: &OwnedRequest,
        (remote, https): (SocketAddr, bool),
        started: Instant,
        status: u16,
    ) -> Logged {
        let pieces = [
            Some(req.method_token()),
            Some(req.original_target()),
            req.field(Field::Referer),
            req.field(Field::UserAgent),
            req.user(),
            req.host(),
        ];
        debug_assert_eq!(req.version(), Version::Http11);
        let mut text = Vec::with_capacity(pieces.iter().flatten().map(|p| p.len()).sum());
        let mut ends = [0u32; 5];
        let mut has = 0u8;
        for (i, piece) in pieces.iter().enumerate() {
            if let Some(p) = piece {
                text.extend_from_slice(p);
                if i >= 2 {
                    has |= 1 << (i - 2);
                }
            }
            if let Some(end) = ends.get_mut(i) {
                // (A head is far shorter than 4 GiB.)
                *end = text.len() as u32;
            }
        }
        Logged {
            text: text.into_boxed_slice(),
            ends,
            has,
            remote,
            https,
            started,
            status,
        }
    }

    /// Piece `i` (see [`Logged::new`]).
    fn piece(&self, i: usize) -> &[u8] {
        let from = match i {
            0 => 0,
            i => self.ends[i - 1] as usize,
        };
        let to = self
            .ends
            .get(i)
            .map_or(self.text.len(), |&end| end as usize);
        &self.text[from..to]
    }

    /// Optional piece `i`, if the request had it.
    fn optional(&self, i: usize) -> Option<&[u8]> {
        (self.has & (1 << (i - 2)) != 0).then(|| self.piece(i))
    }

    /// The request's method, as sent.
    pub fn method(&self) -> &[u8] {
        self.piece(0)
    }

    /// Its access-log record at `time` (`tls`: what its connection's TLS
    /// negotiated), its bytes, duration and upstream to be filled in.
    pub fn record(&self, time: SystemTime, tls: Option<TlsSession>) -> AccessRecord<'_> {
        AccessRecord {
            remote: self.remote.ip(),
            remote_port: self.remote.port(),
            https: self.https,
            tls,
            time,
            method: self.method(),
            target: self.piece(1),
            version: Version::Http11.as_str(),
            status: self.status,
            bytes: 0,
            referer: self.optional(2),
            user_agent: self.optional(3),
            user: self.optional(4),
            host: self.optional(5),
            duration_us: 0,
            upstream: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(head: &[u8]) -> OwnedRequest {
        let mut req = OwnedRequest::default();
        let limits = crate::http::parse::Limits {
            max_request_line: 8192,
            max_head: 8192,
            max_headers: 100,
        };
        assert!(req.parse(head, &limits).unwrap().is_some());
        req
    }

    #[test]
    fn the_log_fields_of_a_request_are_kept_and_only_they() {
        let req = request(
            b"GET /ws/chat?room=1 HTTP/1.1\r\nHost: example.org:8080\r\n\
              User-Agent: curl/8\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
              Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n",
        );
        let now = Instant::now();
        let client: SocketAddr = "192.0.2.7:50123".parse().unwrap();
        let l = Logged::new(&req, (client, true), now, 101);
        assert_eq!(&*l.text, b"GET/ws/chat?room=1curl/8example.org:8080");
        let rec = l.record(SystemTime::UNIX_EPOCH, None);
        assert_eq!(rec.method, b"GET");
        assert_eq!(rec.target, b"/ws/chat?room=1");
        assert_eq!(rec.version, "HTTP/1.1");
        assert_eq!((rec.status, rec.remote), (101, client.ip()));
        assert_eq!((rec.remote_port, rec.https), (50123, true));
        assert_eq!(rec.referer, None);
        assert_eq!(rec.user_agent, Some(&b"curl/8"[..]));
        assert_eq!(rec.user, None);
        assert_eq!(rec.host, Some(&b"example.org:8080"[..]));
        assert_eq!(l.started, now);
    }

    #[test]
    fn empty_fields_that_were_sent_stay_sent() {
        let req = request(b"GET / HTTP/1.1\r\nHost: x\r\nReferer: \r\n\r\n");
        let l = Logged::new(
            &req,
            ("[::1]:1".parse().unwrap(), false),
            Instant::now(),
            101,
        );
        let rec = l.record(SystemTime::UNIX_EPOCH, None);
        assert_eq!(rec.referer, Some(&b""[..]));
        assert_eq!((rec.user_agent, rec.host), (None, Some(&b"x"[..])));
    }
}
