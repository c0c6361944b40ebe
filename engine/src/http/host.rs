//! A request's host as names are compared (RFC 9110 §4.2.3, §7.2):
//! lower case, without the port, and without a fully qualified name's
//! trailing dot. What picks the site and what the access log's `vhost`
//! field shows.

/// The longest host name compared (RFC 1035: 253 bytes; an IPv6 literal
/// with brackets and a zone is shorter too); a longer one matches nothing.
pub const MAX_NAME: usize = 255;

/// `host` lower-cased into `buf`, without its port and trailing dot;
/// `None` when it does not fit (no configured name is that long).
pub fn canonical<'b>(host: &[u8], buf: &'b mut [u8; MAX_NAME]) -> Option<&'b [u8]> {
    let name = if host.first() == Some(&b'[') {
        // An IPv6 literal keeps its brackets; what follows `]` is the port.
        let end = host.iter().position(|&b| b == b']')?;
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
