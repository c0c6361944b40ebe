//! A request's host as names are compared (RFC 9110 §4.2.3, §7.2):
//! lower case, without the port, and without a fully qualified name's
//! trailing dot, an IPv6 literal in RFC 5952 form. What picks the site
//! and what the access log's `vhost` field shows.

/// The longest host name compared (RFC 1035: 253 bytes; an IPv6 literal
/// with brackets and a zone is shorter too); a longer one matches nothing.
pub const MAX_NAME: usize = 255;

/// `host` lower-cased into `buf`, without its port and trailing dot;
/// `None` when it does not fit (no configured name is that long).
pub fn canonical<'b>(host: &[u8], buf: &'b mut [u8; MAX_NAME]) -> Option<&'b [u8]> {
    let name = if host.first() == Some(&b'[') {
        // An IPv6 literal keeps its brackets; what follows `]` is the port.
        let end = host.iter().position(|&b| b == b']')?;
        if let Some(n) = ipv6(&host[1..end], buf) {
            return buf.get(..n);
        }
        &host[..=end]
    } else {
        let name = match host.iter().rposition(|&b| b == b':') {
            Some(colon) => &host[..colon],
            None => host,
        };
        name.strip_suffix(b".").unwrap_or(name)
    };
    let out = buf.get_mut(..name.len())?;
    for (o, &b) in out.iter_mut().zip(name) {
        *o = b.to_ascii_lowercase();
    }
    Some(out)
}

/// The IPv6 address `inner` (between the brackets) written into `buf` in
/// the one form of RFC 5952 (`[0:0::1]` and `[::1]` are one address, RFC
/// 4291 §2.2), brackets included, as the configuration's `hosts` are:
/// its length. `None` for no address (a zone, an IPvFuture: kept as sent).
fn ipv6(inner: &[u8], buf: &mut [u8; MAX_NAME]) -> Option<usize> {
    use std::io::Write;
    let a: std::net::Ipv6Addr = std::str::from_utf8(inner).ok()?.parse().ok()?;
    let mut out = &mut buf[..];
    write!(out, "[{a}]").ok()?;
    Some(MAX_NAME - out.len())
}
