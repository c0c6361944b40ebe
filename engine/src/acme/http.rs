//! The ACME client's HTTPS: one blocking request at a time, on a thread
//! of its own (an ACME server is asked a few dozen times a day at most;
//! nothing here runs on a worker's event loop). Each request opens a
//! connection and closes it after the answer (`Connection: close`), with
//! a timeout on the connect and on each read and write; answers are
//! parsed by the strict response parser the reverse proxy uses, and
//! bounded in size.
//!
//! `http://` URLs are taken too, for tests and for CAs on the same host;
//! RFC 8555 §6.1 wants HTTPS between client and server.

use crate::ascii::IgnoreCase;
use std::io::Write as _;
use std::net::ToSocketAddrs as _;
use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::ServerName;
use rustls::{ClientConfig, ClientConnection, StreamOwned};

use crate::http::body::{BodyDecoder, BodyLimits};
use crate::http::parse::response::{parse_response, ResponseFraming};
use crate::http::parse::{BodyFraming, Limits};

/// Most bytes of an answer (a certificate chain is a few KiB; a
/// directory or an order less).
pub const MAX_ANSWER: usize = 1024 * 1024;

/// How long one request may take in all, connection to last byte: a CA
/// that answers a byte at a time never trips the timeout of each read,
/// and would hold the ACME thread (every name) for ever.
pub const REQUEST_DEADLINE: Duration = Duration::from_secs(60);

/// An answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    /// Its status code.
    pub status: u16,
    /// Its fields, names lower-cased.
    pub fields: Vec<(String, String)>,
    /// Its body, decoded from its framing.
    pub body: Vec<u8>,
}

impl Answer {
    /// The first field `name` (lower case).
    pub fn field(&self, name: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The targets of its `Link` fields with relation `rel` (RFC 8288:
    /// `<URL>;rel="up"`), such as an order's alternate chains.
    pub fn links(&self, rel: &str) -> Vec<String> {
        let want = [format!("rel=\"{rel}\""), format!("rel={rel}")];
        self.fields
            .iter()
            .filter(|(n, _)| n == "link")
            .flat_map(|(_, v)| v.split(','))
            .filter_map(|link| {
                let (target, params) = link.trim().split_once('>')?;
                let ok = params
                    .split(';')
                    .any(|p| want.iter().any(|w| p.trim() == w));
                ok.then(|| target.trim_start_matches('<').to_string())
            })
            .collect()
    }
}

/// A URL split into what a request needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Url {
    /// `https` or `http`.
    pub tls: bool,
    /// The host as written (an IPv6 address in brackets).
    pub host: String,
    /// The port, the scheme's by default.
    pub port: u16,
    /// The path and query, `/` at least.
    pub path: String,
}

impl Url {
    /// Parses `https://host[:port][/path]` (or `http://`).
    pub fn parse(url: &str) -> Result<Url, String> {
        let bad = || format!("{url:?} is not an http:// or https:// URL");
        let (tls, rest) = if let Some(r) = url.strip_prefix("https://") {
            (true, r)
        } else if let Some(r) = url.strip_prefix("http://") {
            (false, r)
        } else {
            return Err(bad());
        };
        let (authority, path) = match rest.find(['/', '?']) {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, "/"),
        };
        let default = if tls { 443 } else { 80 };
        let (host, port) = match authority.rsplit_once(':') {
            Some((h, p)) if !p.contains(']') => (h, p.parse().map_err(|_| bad())?),
            _ => (authority, default),
        };
        // (A name, an IPv4 address, or an IPv6 one in brackets: RFC 3986
        // §3.2.2, no more.)
        let host_ok = match host.strip_prefix('[') {
            Some(v6) => v6
                .strip_suffix(']')
                .is_some_and(|a| a.parse::<std::net::Ipv6Addr>().is_ok()),
            None => host
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.'),
        };
        if host.is_empty() || !host_ok || path.bytes().any(|b| b <= b' ') {
            return Err(bad());
        }
        let path = if path.starts_with('?') {
            format!("/{path}")
        } else {
            path.to_string()
        };
        Ok(Url {
            tls,
            host: host.to_string(),
            port,
            path,
        })
    }
}

/// Why a request failed (the text names the URL).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpError(pub String);

impl std::fmt::Display for HttpError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// The client: its TLS configuration (the roots it trusts) and timeout.
#[derive(Clone)]
pub struct Client {
    tls: Arc<ClientConfig>,
    timeout: Duration,
    /// The whole of a request, at most ([`REQUEST_DEADLINE`]).
    deadline: Duration,
    /// Hosts whose address is known already (resolved when the
    /// configuration loaded: inside the sandbox there is no resolver).
    pinned: Vec<(String, u16, std::net::SocketAddr)>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl Client {
    /// A client that trusts `roots` (the system's and extra ones, see
    /// `tls::client::roots`), waiting `timeout` at most for a connection,
    /// and for each read or write.
    pub fn new(roots: rustls::RootCertStore, timeout: Duration) -> Result<Client, String> {
        let tls = ClientConfig::builder_with_provider(Arc::new(crate::tls::provider()))
            .with_safe_default_protocol_versions()
            .map_err(|e| e.to_string())?
            .with_root_certificates(roots)
            .with_no_client_auth();
        Ok(Client {
            tls: Arc::new(tls),
            timeout,
            deadline: REQUEST_DEADLINE,
            pinned: Vec::new(),
        })
    }

    /// Gives each request `deadline` in all, rather than
    /// [`REQUEST_DEADLINE`].
    pub fn set_deadline(&mut self, deadline: Duration) {
        self.deadline = deadline;
    }

    /// Connects to `addr` for `host` and `port`, without asking the
    /// resolver.
    pub fn pin(&mut self, host: &str, port: u16, addr: std::net::SocketAddr) {
        let host = host.trim_start_matches('[').trim_end_matches(']');
        self.pinned.push((host.to_ascii_lowercase(), port, addr));
    }

    /// `GET url`.
    pub fn get(&self, url: &str) -> Result<Answer, HttpError> {
        self.request("GET", url, None)
    }

    /// `HEAD url`.
    pub fn head(&self, url: &str) -> Result<Answer, HttpError> {
        self.request("HEAD", url, None)
    }

    /// `POST url` with a JWS body (`application/jose+json`, RFC 8555
    /// §6.2).
    pub fn post_jose(&self, url: &str, body: &[u8]) -> Result<Answer, HttpError> {
        self.request("POST", url, Some(body))
    }

    /// One request, on a connection of its own.
    pub fn request(
        &self,
        method: &str,
        url: &str,
        body: Option<&[u8]>,
    ) -> Result<Answer, HttpError> {
        let err = |what: &str, e: &dyn std::fmt::Display| {
            HttpError(format!("{method} {url}: {what}: {e}"))
        };
        let started = std::time::Instant::now();
        let u = Url::parse(url).map_err(|e| HttpError(e.to_string()))?;
        let host = u.host.trim_start_matches('[').trim_end_matches(']');
        let pinned = self
            .pinned
            .iter()
            .find(|(h, p, _)| h.eq_ignore_case(host) && *p == u.port);
        let addrs: Vec<std::net::SocketAddr> = match pinned {
            Some((_, _, a)) => vec![*a],
            None => (host, u.port)
                .to_socket_addrs()
                .map_err(|e| {
                    let why = "cannot resolve its name (brisk resolves the CA's name when it \
                               starts, and inside the sandbox cannot ask again: restart it once \
                               the network is up)";
                    err(why, &e)
                })?
                .collect(),
        };
        let mut last = None;
        let mut sock = None;
        for addr in addrs {
            match crate::sys::net::connect_within(&addr, self.timeout) {
                Ok(s) => {
                    sock = Some(s);
                    break;
                }
                Err(e) => last = Some(e),
            }
        }
        let sock = match (sock, last) {
            (Some(s), _) => s,
            (None, Some(e)) => return Err(err("cannot connect", &e)),
            (None, None) => return Err(err("cannot connect", &"no address")),
        };
        let _ = sock.set_read_timeout(Some(self.timeout));
        let _ = sock.set_write_timeout(Some(self.timeout));
        let _ = sock.set_nodelay(true);
        let mut head = format!(
            "{method} {} HTTP/1.1\r\nHost: {}\r\nUser-Agent: brisk/{} (ACME)\r\n\
             Accept: */*\r\nConnection: close\r\n",
            u.path,
            if (u.tls && u.port == 443) || (!u.tls && u.port == 80) {
                u.host.clone()
            } else {
                format!("{}:{}", u.host, u.port)
            },
            env!("CARGO_PKG_VERSION"),
        );
        if let Some(b) = body {
            head.push_str(&format!(
                "Content-Type: application/jose+json\r\nContent-Length: {}\r\n",
                b.len()
            ));
        }
        head.push_str("\r\n");
        let mut raw = Vec::new();
        let io = |e: std::io::Error| match e.kind() {
            // (A read timeout is EAGAIN on Linux: "Resource temporarily
            // unavailable" would tell the operator nothing.)
            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut => err(
                "connection",
                &format!("timed out (nothing came for {} s)", self.timeout.as_secs()),
            ),
            _ => err("connection", &e),
        };
        let until = Until {
            at: started + self.deadline,
            total: self.deadline,
            each: self.timeout,
            sock: sock.try_clone().map_err(io)?,
        };
        if u.tls {
            let name =
                ServerName::try_from(host.to_string()).map_err(|e| err("server name", &e))?;
            let conn =
                ClientConnection::new(Arc::clone(&self.tls), name).map_err(|e| err("TLS", &e))?;
            let mut s = StreamOwned::new(conn, sock);
            s.write_all(head.as_bytes()).map_err(io)?;
            s.write_all(body.unwrap_or_default()).map_err(io)?;
            s.flush().map_err(io)?;
            until.read_all(&mut s, &mut raw).map_err(io)?;
        } else {
            let mut s = sock;
            s.write_all(head.as_bytes()).map_err(io)?;
            s.write_all(body.unwrap_or_default()).map_err(io)?;
            until.read_all(&mut s, &mut raw).map_err(io)?;
        }
        parse(&raw, method == "HEAD").map_err(|e| err("bad answer", &e))
    }
}

/// A request's deadline: when it ends, how long it is in all, each
/// read's timeout, and the socket they are set on.
struct Until {
    at: std::time::Instant,
    total: Duration,
    each: Duration,
    sock: std::net::TcpStream,
}

impl Until {
    /// Reads until the peer closes, [`MAX_ANSWER`] at most, by the
    /// deadline. A TLS peer that closes without close_notify is taken as
    /// closed: the answer's own framing says whether it came whole.
    fn read_all(&self, s: &mut impl std::io::Read, raw: &mut Vec<u8>) -> std::io::Result<()> {
        use std::io::ErrorKind;
        let mut buf = [0u8; 16 * 1024];
        loop {
            let left = self.at.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                return Err(std::io::Error::other(format!(
                    "timed out (the answer not whole after {} s)",
                    self.total.as_secs()
                )));
            }
            self.sock.set_read_timeout(Some(self.each.min(left)))?;
            match s.read(&mut buf) {
                Ok(0) => return Ok(()),
                Ok(n) if raw.len() + n > MAX_ANSWER => {
                    return Err(std::io::Error::other("answer too large"));
                }
                Ok(n) => raw.extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == ErrorKind::UnexpectedEof => return Ok(()),
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                // (The deadline's: said above.)
                Err(e)
                    if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut)
                        && std::time::Instant::now() >= self.at => {}
                Err(e) => return Err(e),
            }
        }
    }
}

/// The answer in `raw` (the whole connection's bytes); interim answers
/// skipped.
pub fn parse(mut raw: &[u8], head_request: bool) -> Result<Answer, String> {
    let limits = Limits {
        max_request_line: 8 * 1024,
        max_head: 64 * 1024,
        max_headers: 100,
    };
    loop {
        let mut fields = Vec::new();
        let head = parse_response(raw, &limits, head_request, &mut |h| {
            fields.push((
                String::from_utf8_lossy(h.name).to_ascii_lowercase(),
                String::from_utf8_lossy(h.value).into_owned(),
            ))
        })
        .map_err(|e| e.reason.to_string())?
        .ok_or("the answer's head was cut short")?;
        let rest = &raw[head.head_len..];
        if head.status < 200 {
            raw = rest;
            continue;
        }
        let body = match head.framing {
            ResponseFraming::None => Vec::new(),
            ResponseFraming::Close => rest.to_vec(),
            ResponseFraming::Length(n) => {
                let n = usize::try_from(n).unwrap_or(usize::MAX);
                rest.get(..n)
                    .ok_or("the answer's body was cut short")?
                    .to_vec()
            }
            ResponseFraming::Chunked => {
                let limits = BodyLimits {
                    max_body: MAX_ANSWER as u64,
                    max_chunk_ext: 1024,
                    max_trailers: 8 * 1024,
                };
                let mut dec = BodyDecoder::new(BodyFraming::Chunked, &limits)
                    .map_err(|e| e.reason.to_string())?;
                let mut out = Vec::new();
                dec.decode(rest, &mut |b| out.extend_from_slice(b))
                    .map_err(|e| e.reason.to_string())?;
                if !dec.is_done() {
                    return Err("the answer's body was cut short".into());
                }
                out
            }
        };
        return Ok(Answer {
            status: head.status,
            fields,
            body,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A CA that answers a byte at a time: each read gets one in time,
    /// the request as a whole does not; one that says nothing more.
    #[test]
    fn a_request_has_a_deadline_in_all_and_a_hang_is_said_as_timed_out() {
        use std::io::{Read as _, Write as _};
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/dir", l.local_addr().unwrap());
        std::thread::spawn(move || {
            for (i, sock) in l.incoming().enumerate() {
                let mut sock = sock.unwrap();
                let _ = sock.read(&mut [0u8; 1024]);
                std::thread::spawn(move || {
                    let _ = sock.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n");
                    // The first drips, the second hangs.
                    for _ in 0..100 {
                        if i == 0 && sock.write_all(b" ").is_err() {
                            return;
                        }
                        std::thread::sleep(Duration::from_millis(300));
                    }
                });
            }
        });
        let mut c = Client::new(rustls::RootCertStore::empty(), Duration::from_secs(1)).unwrap();
        c.set_deadline(Duration::from_secs(2));
        let e = c.get(&url).unwrap_err().0;
        let want = format!("GET {url}: connection: timed out (the answer not whole after 2 s)");
        assert_eq!(e, want);
        c.set_deadline(REQUEST_DEADLINE);
        let e = c.get(&url).unwrap_err().0;
        let want = format!("GET {url}: connection: timed out (nothing came for 1 s)");
        assert_eq!(e, want);
    }

    #[test]
    fn urls() {
        let u = Url::parse("https://acme.example:14000/dir?x=1").unwrap();
        assert_eq!(
            (u.tls, u.host.as_str(), u.port, u.path.as_str()),
            (true, "acme.example", 14000, "/dir?x=1")
        );
        let u = Url::parse("http://[::1]/").unwrap();
        assert_eq!((u.tls, u.host.as_str(), u.port), (false, "[::1]", 80));
        let u = Url::parse("https://[::1]:8443").unwrap();
        assert_eq!(
            (u.host.as_str(), u.port, u.path.as_str()),
            ("[::1]", 8443, "/")
        );
        for bad in [
            "ftp://x/",
            "https://",
            "https://u@h/",
            "https://h:x/",
            "https://h/a b",
            "https://[::1/dir",
            "https://[::1:99/dir",
            "https://[nope]/dir",
            "https://a_b!/dir",
        ] {
            assert!(Url::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn answers_by_length_chunked_or_close_and_interim_ones_skipped() {
        let a = parse(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nReplay-Nonce: n1\r\nContent-Length: 2\r\nLink: <https://x/dir>;rel=\"index\", <https://x/alt/1>; rel=\"alternate\"\r\nLink: <https://x/alt/2>;rel=alternate\r\n\r\n{}", false).unwrap();
        assert_eq!((a.status, a.body.as_slice()), (201, &b"{}"[..]));
        assert_eq!(a.field("replay-nonce"), Some("n1"));
        assert_eq!(a.links("alternate"), ["https://x/alt/1", "https://x/alt/2"]);
        assert_eq!(a.links("index"), ["https://x/dir"]);
        let a = parse(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
            false,
        )
        .unwrap();
        assert_eq!(a.body, b"abc");
        let a = parse(b"HTTP/1.1 200 OK\r\n\r\nuntil close", false).unwrap();
        assert_eq!(a.body, b"until close");
        let a = parse(b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n", true).unwrap();
        assert!(a.body.is_empty());
        for cut in [
            &b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nabc"[..],
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n",
            b"HTTP/1.1 200 OK\r\nContent-Le",
            b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab",
        ] {
            assert!(
                parse(cut, false).is_err(),
                "{}",
                String::from_utf8_lossy(cut)
            );
        }
    }
}
