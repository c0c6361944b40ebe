//! Sans-IO HTTP/1.1: parsing, validation, ranges, conditionals, response
//! heads. Nothing in here touches a socket or a file.

pub mod body;
pub mod conditional;
pub mod date;
pub mod encoding;
pub mod form;
pub mod glob;
pub mod grammar;
pub mod host;
pub mod json;
pub mod mime;
pub mod parse;
pub mod path;
pub mod range;
pub mod request;
pub mod response;
pub mod sniff;
pub mod status;
pub mod trailers;

pub use status::Status;

/// What TLS negotiated on the connection a request came on (an `https`
/// request, RFC 9110 §4.2.2), by the names Apache's mod_ssl gives CGI
/// (`SSL_PROTOCOL`, `SSL_CIPHER`) and the access log shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TlsSession {
    /// `TLSv1.3` or `TLSv1.2`.
    pub protocol: &'static str,
    /// The cipher suite, by OpenSSL's name (`TLS_AES_128_GCM_SHA256`,
    /// `ECDHE-ECDSA-AES128-GCM-SHA256`).
    pub cipher: &'static str,
}

/// A request method. The known ones are RFC 9110 §9 plus PATCH (RFC 5789);
/// anything else that is a valid token is `Other` (answered 501).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// `GET` (§9.3.1).
    Get,
    /// `HEAD` (§9.3.2): as GET, without the body.
    Head,
    /// `POST` (§9.3.3).
    Post,
    /// `PUT` (§9.3.4).
    Put,
    /// `DELETE` (§9.3.5).
    Delete,
    /// `CONNECT` (§9.3.6): brisk is no proxy.
    Connect,
    /// `OPTIONS` (§9.3.7).
    Options,
    /// `TRACE` (§9.3.8).
    Trace,
    /// `PATCH` (RFC 5789).
    Patch,
    /// Any other token.
    Other,
}

impl Method {
    /// Maps a method token (case-sensitive, RFC 9110 §9.1) to a `Method`.
    pub fn from_token(token: &[u8]) -> Method {
        match token {
            b"GET" => Method::Get,
            b"HEAD" => Method::Head,
            b"POST" => Method::Post,
            b"PUT" => Method::Put,
            b"DELETE" => Method::Delete,
            b"CONNECT" => Method::Connect,
            b"OPTIONS" => Method::Options,
            b"TRACE" => Method::Trace,
            b"PATCH" => Method::Patch,
            _ => Method::Other,
        }
    }

    /// Whether a request with it may be sent again after a failure
    /// (RFC 9110 §9.2.2: the safe methods, PUT and DELETE).
    pub fn is_idempotent(self) -> bool {
        matches!(
            self,
            Method::Get
                | Method::Head
                | Method::Put
                | Method::Delete
                | Method::Options
                | Method::Trace
        )
    }
}

/// The protocol version of a request. HTTP/1.0 and HTTP/1.1 are parsed
/// here (other versions are rejected by the parser with 505); HTTP/2
/// requests come from `h2` (see `OwnedRequest::as_http2`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Version {
    /// `HTTP/1.0`: no keep-alive unless asked for, no chunked coding.
    Http10,
    /// `HTTP/1.1`.
    Http11,
    /// `HTTP/2` (RFC 9113): framing and connection management are the
    /// protocol's own; `HTTP/2.0` in logs and CGI's SERVER_PROTOCOL.
    Http2,
    /// `HTTP/3` (RFC 9114, feature `http3`): as HTTP/2, framed by the
    /// protocol; `HTTP/3.0` in logs and CGI's SERVER_PROTOCOL.
    #[cfg(feature = "http3")]
    Http3,
}

impl Version {
    /// The version as it appears on a status line.
    pub fn as_str(self) -> &'static str {
        match self {
            Version::Http10 => "HTTP/1.0",
            Version::Http11 => "HTTP/1.1",
            Version::Http2 => "HTTP/2.0",
            #[cfg(feature = "http3")]
            Version::Http3 => "HTTP/3.0",
        }
    }
}

/// The host part of a Host value (`example.com:8080` → `example.com`,
/// `[::1]:80` → `[::1]`).
pub fn host_without_port(host: &[u8]) -> &[u8] {
    if host.starts_with(b"[") {
        return match host.iter().position(|&b| b == b']') {
            Some(end) => &host[..=end],
            None => host,
        };
    }
    match host.iter().rposition(|&b| b == b':') {
        Some(colon) => &host[..colon],
        None => host,
    }
}

/// The dotted-decimal text of `ip` (RFC 1123 §2.1), written in `buf`:
/// without the formatting machinery, a tenth of the instructions (once
/// or twice a proxied request, in its forwarding fields).
pub fn ipv4_text(ip: std::net::Ipv4Addr, buf: &mut [u8; 15]) -> &[u8] {
    let mut len = 0;
    for (i, octet) in ip.octets().into_iter().enumerate() {
        if i > 0 {
            buf[len] = b'.';
            len += 1;
        }
        // (An octet's one to three digits, each written where it goes:
        // through u64_digits and a copy, 250 instructions an address.)
        if octet >= 100 {
            buf[len] = b'0' + octet / 100;
            len += 1;
        }
        if octet >= 10 {
            buf[len] = b'0' + octet / 10 % 10;
            len += 1;
        }
        buf[len] = b'0' + octet % 10;
        len += 1;
    }
    &buf[..len]
}

/// The text of `ip`, written in `buf`: an IPv4 address (an IPv4-mapped
/// IPv6 one included) by hand, an IPv6 one as the standard library writes
/// it (RFC 5952; 45 bytes at most, with an IPv4 tail).
pub fn ip_text(ip: std::net::IpAddr, buf: &mut [u8; 45]) -> &[u8] {
    match ip.to_canonical() {
        std::net::IpAddr::V4(v4) => {
            let (first, _) = buf.split_first_chunk_mut::<15>().expect("45 > 15");
            ipv4_text(v4, first)
        }
        v6 => {
            use std::io::Write as _;
            let mut rest = &mut buf[..];
            let _ = write!(rest, "{v6}");
            let len = 45 - rest.len();
            &buf[..len]
        }
    }
}

/// The host a request is for: its `Host` (HTTP/2's `:authority`),
/// `given`, unless that is missing or empty (HTTP/1.0 may send none);
/// then the first of the site's `names` that is a name (not `*.`), else
/// the address the client connected to (`local`), with its port unless
/// it is `default_port`, written in `buf`. `$host`, the proxy's `Host`
/// and `X-Forwarded-Host` say it, never an empty host (RFC 9110 §4.2.2:
/// an `https` URI has one); nginx's `$host` falls back to its
/// `server_name` alike.
pub fn host_or<'a>(
    given: Option<&'a [u8]>,
    names: &'a [String],
    local: &dyn Fn() -> std::net::SocketAddr,
    default_port: u16,
    buf: &'a mut [u8; 54],
) -> &'a [u8] {
    if let Some(host) = given.filter(|h| !h.is_empty()) {
        return host;
    }
    if let Some(name) = names.iter().find(|n| !n.starts_with("*.")) {
        return name.as_bytes();
    }
    let local = local();
    let mut text = [0; 45];
    let ip = ip_text(local.ip(), &mut text);
    let v6 = local.ip().to_canonical().is_ipv6();
    let mut len = 0;
    let mut put = |bytes: &[u8]| {
        buf[len..len + bytes.len()].copy_from_slice(bytes);
        len += bytes.len();
    };
    if v6 {
        put(b"[");
    }
    put(ip);
    if v6 {
        put(b"]");
    }
    if local.port() != default_port {
        put(b":");
        put(u64_digits(local.port().into(), &mut [0; 20]));
    }
    &buf[..len]
}

/// Appends the decimal digits of `n` (no allocation, no formatting machinery).
pub fn push_u64(out: &mut Vec<u8>, n: u64) {
    out.extend_from_slice(u64_digits(n, &mut [0; 20]));
}

/// The decimal digits of `n`, written at the end of `buf`.
pub fn u64_digits(n: u64, buf: &mut [u8; 20]) -> &[u8] {
    let start = digits_before(buf, 20, n, 1);
    &buf[start..]
}

/// Writes the decimal digits of `n`, at least `min` of them (zeros in
/// front; at least one), to end just before `buf[end]`; returns where
/// they start.
pub fn digits_before(buf: &mut [u8], end: usize, mut n: u64, min: usize) -> usize {
    let mut i = end;
    while n != 0 || end - i < min.max(1) {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::host_or;
    use std::net::Ipv4Addr;

    /// Every octet's digits as the standard library writes them.
    #[test]
    fn ipv4_text_is_dotted_decimal() {
        for octet in 0..=255u8 {
            let ip = Ipv4Addr::new(octet, 255 - octet, octet / 3, 10);
            assert_eq!(
                super::ipv4_text(ip, &mut [0; 15]),
                ip.to_string().as_bytes()
            );
        }
        let widest = Ipv4Addr::new(255, 255, 255, 255);
        assert_eq!(super::ipv4_text(widest, &mut [0; 15]), b"255.255.255.255");
    }

    /// A request that names no host is for the site's first name, else
    /// the address it came to (its port unless the scheme's own).
    #[test]
    fn a_request_without_a_host_is_for_the_site_or_the_address() {
        let v4: std::net::SocketAddr = "192.0.2.7:8080".parse().unwrap();
        let v6: std::net::SocketAddr = "[2001:db8::1]:443".parse().unwrap();
        let names = ["*.example.org".to_string(), "www.example.org".to_string()];
        let host = |given: Option<&[u8]>, names: &[String], at, port| {
            let mut buf = [0; 54];
            String::from_utf8(host_or(given, names, &|| at, port, &mut buf).to_vec()).unwrap()
        };
        assert_eq!(host(Some(b"h:1"), &names, v4, 80), "h:1");
        assert_eq!(host(Some(b""), &names, v4, 80), "www.example.org");
        assert_eq!(host(None, &names[..1], v4, 80), "192.0.2.7:8080");
        assert_eq!(host(None, &[], v4, 8080), "192.0.2.7");
        assert_eq!(host(None, &[], v6, 443), "[2001:db8::1]");
        assert_eq!(host(None, &[], v6, 80), "[2001:db8::1]:443");
        let widest: std::net::SocketAddr = "[1111:2222:3333:4444:5555:6666:7777:8888]:65535"
            .parse()
            .unwrap();
        assert_eq!(
            host(None, &[], widest, 80),
            "[1111:2222:3333:4444:5555:6666:7777:8888]:65535"
        );
    }

    /// IPv6 addresses as the standard library writes them, a mapped IPv4
    /// one as IPv4; the widest fit.
    #[test]
    fn ip_text_is_the_standard_text() {
        for (ip, text) in [
            ("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", None),
            ("::ffff:192.0.2.1", Some("192.0.2.1")),
            ("::", None),
            ("2001:db8::1", None),
            ("fe80::1:2", None),
            ("203.0.113.255", None),
        ] {
            let ip: std::net::IpAddr = ip.parse().unwrap();
            let text = text.map_or_else(|| ip.to_string(), str::to_string);
            assert_eq!(super::ip_text(ip, &mut [0; 45]), text.as_bytes());
        }
    }
}
