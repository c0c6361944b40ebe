//! The PROXY protocol header (HAProxy's "PROXY protocol" specification,
//! versions 1 and 2), sans-IO: bytes in, the client's address out.
//!
//! A load balancer that speaks it (HAProxy's `send-proxy` and
//! `send-proxy-v2`, AWS NLB, GCP's TCP proxy) writes one header at the
//! very start of each connection, before the client's first byte, naming
//! the client's address and the address it connected to. On a listener
//! configured for it the header is mandatory: anything else is refused,
//! since a client reaching such a port directly could otherwise claim any
//! address.
//!
//! Version 1 is a line of text (`PROXY TCP4 192.0.2.1 198.51.100.1 56324
//! 443\r\n`, at most 107 bytes); version 2 a binary block behind a
//! 12-byte signature, whose optional TLVs are skipped. Both are bounded:
//! [`MAX_HEADER`] bytes at most are looked at.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// The version 2 signature (§2.2).
const V2_SIGNATURE: &[u8; 12] = b"\r\n\r\n\0\r\nQUIT\n";
/// Version 1 starts with this (§2.1).
const V1_PREFIX: &[u8] = b"PROXY ";
/// The longest version 1 line, CRLF included (§2.1: "107 bytes").
pub const MAX_V1: usize = 107;
/// The most bytes a header may take: version 2's fixed 16 and its
/// addresses and TLVs. Real balancers send well under this (AWS adds a
/// VPC endpoint id, GCP nothing; HAProxy's SSL TLVs stay small); a
/// larger length field is refused rather than buffered.
pub const MAX_HEADER: usize = 16 + 2048;

/// What the start of a connection holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Parsed {
    /// Not the whole header yet: read more (within [`MAX_HEADER`]).
    Incomplete,
    /// A whole header of `len` bytes: what follows is the client's.
    Done {
        /// Bytes the header took.
        len: usize,
        /// The client's address, when the header names one: `None` for
        /// version 1's `UNKNOWN`, version 2's `LOCAL` command (the
        /// balancer's own health check) and for families that carry no
        /// IP address (`UNSPEC`, `UNIX`): the connection's own peer
        /// address then stands.
        source: Option<SocketAddr>,
        /// The address the client connected to, when named.
        destination: Option<SocketAddr>,
    },
}

/// Why the bytes are not a PROXY header (the connection is then closed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Malformed(pub &'static str);

impl std::fmt::Display for Malformed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0)
    }
}

/// Parses the PROXY header at the start of `input`.
pub fn parse(input: &[u8]) -> Result<Parsed, Malformed> {
    match input.first() {
        None => Ok(Parsed::Incomplete),
        Some(b'P') => v1(input),
        Some(b'\r') => v2(input),
        Some(_) => Err(Malformed("no PROXY protocol header")),
    }
}

/// `input` is shorter than `full` and a prefix of it.
fn prefix_of(input: &[u8], full: &[u8]) -> bool {
    input.len() < full.len() && full.starts_with(input)
}

fn v1(input: &[u8]) -> Result<Parsed, Malformed> {
    if prefix_of(input, V1_PREFIX) {
        return Ok(Parsed::Incomplete);
    }
    if !input.starts_with(V1_PREFIX) {
        return Err(Malformed("no PROXY protocol header"));
    }
    let window = &input[..input.len().min(MAX_V1)];
    // (The line ends at its first CR or LF: a bare LF is no end, and
    // reading on would take what follows as part of the line.)
    let Some(cr) = window.iter().position(|&b| b == b'\r' || b == b'\n') else {
        if window.len() < MAX_V1 {
            return Ok(Parsed::Incomplete);
        }
        return Err(Malformed(
            "PROXY v1 line longer than 107 bytes or without CRLF",
        ));
    };
    if window[cr] == b'\n' {
        return Err(Malformed("PROXY v1 line ends with a bare LF, not CRLF"));
    }
    match window.get(cr + 1) {
        None => return Ok(Parsed::Incomplete),
        Some(b'\n') => {}
        Some(_) => return Err(Malformed("PROXY v1 line with a bare CR")),
    }
    let line = &window[V1_PREFIX.len()..cr];
    let len = cr + 2;
    let mut fields = line.split(|&b| b == b' ');
    let proto = fields.next().unwrap_or_default();
    if proto == b"UNKNOWN" {
        // §2.1: the receiver ignores whatever follows UNKNOWN.
        return Ok(Parsed::Done {
            len,
            source: None,
            destination: None,
        });
    }
    let v6 = match proto {
        b"TCP4" => false,
        b"TCP6" => true,
        _ => return Err(Malformed("PROXY v1 protocol is not TCP4, TCP6 or UNKNOWN")),
    };
    let mut next = || fields.next().ok_or(Malformed("PROXY v1 line too short"));
    let (src, dst) = (v1_ip(next()?, v6)?, v1_ip(next()?, v6)?);
    let (sport, dport) = (v1_port(next()?)?, v1_port(next()?)?);
    if fields.next().is_some() {
        return Err(Malformed("PROXY v1 line has extra fields"));
    }
    Ok(Parsed::Done {
        len,
        source: Some(SocketAddr::new(src, sport)),
        destination: Some(SocketAddr::new(dst, dport)),
    })
}

fn v1_ip(field: &[u8], v6: bool) -> Result<IpAddr, Malformed> {
    let text = std::str::from_utf8(field).map_err(|_| Malformed("PROXY v1 address"))?;
    let ip = if v6 {
        text.parse::<Ipv6Addr>().map(IpAddr::V6)
    } else {
        text.parse::<Ipv4Addr>().map(IpAddr::V4)
    };
    ip.map_err(|_| Malformed("PROXY v1 address is not one of its protocol"))
}

fn v1_port(field: &[u8]) -> Result<u16, Malformed> {
    let bad = Malformed("PROXY v1 port is not a number from 0 to 65535");
    // §2.1: decimal, no leading zero (but "0" itself).
    if field.is_empty() || field.len() > 5 || (field.len() > 1 && field[0] == b'0') {
        return Err(bad);
    }
    let mut n: u32 = 0;
    for &b in field {
        if !b.is_ascii_digit() {
            return Err(bad);
        }
        n = n * 10 + u32::from(b - b'0');
    }
    u16::try_from(n).map_err(|_| bad)
}

fn v2(input: &[u8]) -> Result<Parsed, Malformed> {
    if prefix_of(input, V2_SIGNATURE) {
        return Ok(Parsed::Incomplete);
    }
    if !input.starts_with(V2_SIGNATURE) {
        return Err(Malformed("no PROXY protocol header"));
    }
    if input.len() < 16 {
        return Ok(Parsed::Incomplete);
    }
    let (ver_cmd, fam, len) = (
        input[12],
        input[13],
        usize::from(u16::from_be_bytes([input[14], input[15]])),
    );
    if ver_cmd >> 4 != 2 {
        return Err(Malformed("PROXY v2 header of another version"));
    }
    let local = match ver_cmd & 0x0f {
        0 => true,
        1 => false,
        _ => return Err(Malformed("PROXY v2 command is neither LOCAL nor PROXY")),
    };
    let total = 16 + len;
    if total > MAX_HEADER {
        return Err(Malformed("PROXY v2 header larger than 2064 bytes"));
    }
    if input.len() < total {
        return Ok(Parsed::Incomplete);
    }
    let body = &input[16..total];
    let family = fam >> 4;
    if fam & 0x0f > 2 || family > 3 {
        return Err(Malformed("PROXY v2 address family or protocol unknown"));
    }
    // §2.2: the address block's size by family; TLVs may follow it.
    let need = match family {
        1 => 12,
        2 => 36,
        3 => 216,
        _ => 0,
    };
    if body.len() < need {
        return Err(Malformed("PROXY v2 header shorter than its addresses"));
    }
    let (source, destination) = match family {
        // LOCAL: the balancer speaks for itself; the addresses, if any,
        // are to be ignored (§2.2).
        _ if local => (None, None),
        1 => {
            let ip = |at: usize| {
                IpAddr::V4(Ipv4Addr::new(
                    body[at],
                    body[at + 1],
                    body[at + 2],
                    body[at + 3],
                ))
            };
            let port = |at: usize| u16::from_be_bytes([body[at], body[at + 1]]);
            (
                Some(SocketAddr::new(ip(0), port(8))),
                Some(SocketAddr::new(ip(4), port(10))),
            )
        }
        2 => {
            let ip = |at: usize| {
                let mut o = [0u8; 16];
                o.copy_from_slice(&body[at..at + 16]);
                IpAddr::V6(Ipv6Addr::from(o))
            };
            let port = |at: usize| u16::from_be_bytes([body[at], body[at + 1]]);
            (
                Some(SocketAddr::new(ip(0), port(32))),
                Some(SocketAddr::new(ip(16), port(34))),
            )
        }
        // UNSPEC or UNIX: no IP address to take.
        _ => (None, None),
    };
    Ok(Parsed::Done {
        len: total,
        source,
        destination,
    })
}

#[cfg(test)]
mod tests;
