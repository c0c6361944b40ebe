//! The client behind trusted proxies, from `Forwarded` (RFC 7239) or
//! `X-Forwarded-For` and `X-Forwarded-Proto`, sans-IO.
//!
//! Each proxy on the way appends the address it got the request from,
//! so the list reads from the original client (left) to the last proxy's
//! peer (right), and only the entries added by proxies we trust are
//! worth anything: anything to their left may be made up by the client.
//! So the list is walked from the right, starting at the connection's
//! peer (trusted, or nothing is read at all): while the address reached
//! is a trusted proxy, the entry it added names the next one; the first
//! address that is not trusted is the client (nginx's `real_ip_recursive
//! on`, Apache's `mod_remoteip`). An entry that is no address
//! (`unknown`, an obfuscated `_name`, garbage) stops the walk at the
//! proxy that added it.
//!
//! One header is read, the one `[proxy] header` names ([`By`]): a proxy
//! appends to its own header and passes the other on as the client
//! wrote it, so reading the other (or preferring it when both came)
//! would let a client name itself (nginx's `real_ip_header` and Caddy's
//! `client_ip_headers` name one too); several header lines of one name
//! are one list, in order (RFC 9110 §5.3).
//!
//! A `Forwarded` value whose quoted string is never closed, or is
//! followed by more than a `;` or `,`, is malformed, and so is the
//! request ([`Malformed`]: a 400): read leniently, a client's unclosed
//! `x="` would swallow the element the proxy appended after it and
//! leave the client's own `for=` as the last word.

use crate::ascii::IgnoreCase;
use std::net::{IpAddr, SocketAddr};

use super::Trusted;

/// Who a request comes from once trusted proxies are seen through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Client {
    /// The client's address (port 0 when the proxies did not say).
    pub addr: SocketAddr,
    /// Whether the client spoke HTTPS to the first trusted proxy:
    /// `proto=` of its `Forwarded` element, else the last
    /// `X-Forwarded-Proto` value; `None` when not said.
    pub https: Option<bool>,
}

/// The header trusted proxies name the client in (`[proxy] header`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum By {
    /// `X-Forwarded-For`, with `X-Forwarded-Proto` (nginx's
    /// `$proxy_add_x_forwarded_for`, HAProxy's `option forwardfor`, cloud
    /// balancers and CDNs).
    #[default]
    XForwardedFor,
    /// `Forwarded` (RFC 7239), with its `proto=`.
    Forwarded,
}

/// A `Forwarded` field from a trusted peer that cannot be read as RFC
/// 7239 §4 writes it (a quoted string not closed, or followed by more
/// than `;` or `,`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Malformed;

/// The client of a request from `peer` with `headers` (name, value), as
/// header `by` names it, or `None` when `peer` is not trusted or the
/// header says no more than the connection does; an error for a
/// malformed `Forwarded` from a trusted peer.
pub fn client<'h>(
    trusted: &Trusted,
    by: By,
    peer: SocketAddr,
    headers: impl Iterator<Item = (&'h [u8], &'h [u8])> + Clone,
) -> Result<Option<Client>, Malformed> {
    if trusted.is_empty() || !trusted.contains(peer.ip()) {
        return Ok(None);
    }
    let named = |name: &'static str| {
        headers
            .clone()
            .filter(move |(n, _)| n.eq_ignore_case(name.as_bytes()))
            .map(|(_, v)| v)
    };
    let (hops, proto_header) = if by == By::XForwardedFor {
        let hops: Vec<Hop> = named("x-forwarded-for")
            .flat_map(|v| v.split(|&b| b == b','))
            .map(trim)
            // (Empty list elements do not count: RFC 9110 §5.6.1.)
            .filter(|item| !item.is_empty())
            .map(|item| Hop {
                addr: node(item),
                https: None,
            })
            .collect();
        let proto = named("x-forwarded-proto")
            .flat_map(|v| v.split(|&b| b == b','))
            .map(trim)
            .filter(|p| !p.is_empty())
            .last()
            .and_then(scheme);
        (hops, proto)
    } else {
        let mut hops = Vec::new();
        for value in named("forwarded") {
            hops.extend(forwarded_hops(value).ok_or(Malformed)?);
        }
        (hops, None)
    };
    if hops.is_empty() && proto_header.is_none() {
        return Ok(None);
    }
    let mut at = peer;
    let mut https = proto_header;
    for hop in hops.iter().rev() {
        if !trusted.contains(at.ip()) {
            break;
        }
        let Some(addr) = hop.addr else { break };
        at = addr;
        if hop.https.is_some() {
            https = hop.https;
        }
    }
    Ok(Some(Client { addr: at, https }))
}

/// One entry of the list: the address it names (None: not an address)
/// and, from `Forwarded`, its `proto=`.
#[derive(Debug)]
struct Hop {
    addr: Option<SocketAddr>,
    https: Option<bool>,
}

fn trim(b: &[u8]) -> &[u8] {
    b.trim_ascii()
}

/// `http` / `https` (case-insensitive), else not said.
fn scheme(v: &[u8]) -> Option<bool> {
    if v.eq_ignore_case(b"https") {
        Some(true)
    } else if v.eq_ignore_case(b"http") {
        Some(false)
    } else {
        None
    }
}

/// The elements of one `Forwarded` value (RFC 7239 §4): comma-separated,
/// each `;`-separated `name=value` pairs, a value a token or a quoted
/// string (which may hold `,` and `;`); `None` when a quoted string is
/// not closed, or more than white space follows it before `;` or `,`.
fn forwarded_hops(value: &[u8]) -> Option<Vec<Hop>> {
    let mut hops = Vec::new();
    let mut hop = Hop {
        addr: None,
        https: None,
    };
    let mut i = 0;
    let n = value.len();
    loop {
        // One pair: name, '=', value.
        while i < n && matches!(value[i], b' ' | b'\t') {
            i += 1;
        }
        let name_start = i;
        while i < n && !matches!(value[i], b'=' | b';' | b',') {
            i += 1;
        }
        let name = trim(&value[name_start..i]);
        let mut pair_value: Vec<u8> = Vec::new();
        if i < n && value[i] == b'=' {
            i += 1;
            if i < n && value[i] == b'"' {
                i += 1;
                while i < n && value[i] != b'"' {
                    if value[i] == b'\\' && i + 1 < n {
                        i += 1;
                    }
                    pair_value.push(value[i]);
                    i += 1;
                }
                if i >= n {
                    return None; // never closed
                }
                i += 1; // the closing quote
                while i < n && matches!(value[i], b' ' | b'\t') {
                    i += 1;
                }
                if i < n && !matches!(value[i], b';' | b',') {
                    return None;
                }
            } else {
                let start = i;
                while i < n && !matches!(value[i], b';' | b',') {
                    i += 1;
                }
                pair_value.extend_from_slice(trim(&value[start..i]));
            }
        }
        if name.eq_ignore_case(b"for") {
            hop.addr = node(&pair_value);
        } else if name.eq_ignore_case(b"proto") {
            hop.https = scheme(&pair_value);
        }
        if i >= n || value[i] == b',' {
            if !name.is_empty() || hop.addr.is_some() {
                hops.push(hop);
            }
            hop = Hop {
                addr: None,
                https: None,
            };
            if i >= n {
                return Some(hops);
            }
        }
        i += 1;
    }
}

/// A node (RFC 7239 §6) or an `X-Forwarded-For` item: an IPv4 address,
/// a bracketed IPv6 address, either with `:port`, or a bare IPv6
/// address; `unknown` and obfuscated names are not addresses.
fn node(text: &[u8]) -> Option<SocketAddr> {
    let text = std::str::from_utf8(text).ok()?;
    if let Ok(ip) = text.parse::<IpAddr>() {
        return Some(SocketAddr::new(canonical(ip), 0));
    }
    if let Some(rest) = text.strip_prefix('[') {
        let (ip, after) = rest.split_once(']')?;
        let ip: IpAddr = ip.parse().ok()?;
        let port = match after {
            "" => 0,
            p => p.strip_prefix(':')?.parse().ok()?,
        };
        return Some(SocketAddr::new(canonical(ip), port));
    }
    let (ip, port) = text.split_once(':')?;
    let ip: std::net::Ipv4Addr = ip.parse().ok()?;
    Some(SocketAddr::new(IpAddr::V4(ip), port.parse().ok()?))
}

/// An IPv4-mapped IPv6 address as the IPv4 address it is.
pub(super) fn canonical(ip: IpAddr) -> IpAddr {
    ip.to_canonical()
}

#[cfg(test)]
mod tests;
