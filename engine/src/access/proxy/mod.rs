//! Clients behind proxies and load balancers: the PROXY protocol header
//! ([`header`]) on the listeners configured for it (`[proxy] listen`),
//! and the forwarding headers ([`forwarded`]) of the peers configured as
//! trusted (`[proxy] trusted`, address ranges in CIDR notation). Both
//! sans-IO; the engine applies them (see `server/worker/proxied.rs`).

pub mod forwarded;
pub mod header;

use std::fmt;
use std::net::IpAddr;

/// An address range: an address and how many leading bits count
/// (`10.0.0.0/8`, `2001:db8::/32`; a bare address is one host).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cidr {
    addr: IpAddr,
    bits: u8,
}

impl Cidr {
    /// Parses `10.0.0.0/8`, `::1/128` or a bare address; the error says
    /// what is allowed. Bits set beyond the prefix (`10.1.2.3/8`) are
    /// refused: they are usually a typo for a narrower range.
    pub fn parse(text: &str) -> Result<Cidr, String> {
        let help = "an IP address or a CIDR range such as \"10.0.0.0/8\" or \"fd00::/8\"";
        let (ip, bits) = match text.split_once('/') {
            Some((ip, bits)) => (ip, Some(bits)),
            None => (text, None),
        };
        let addr: IpAddr = ip
            .parse()
            .map_err(|_| format!("expected {help}; got {text:?}"))?;
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let bits = match bits {
            None => max,
            Some(b) => match b.parse::<u8>() {
                Ok(n) if n <= max && !b.starts_with('+') => n,
                _ => {
                    return Err(format!(
                        "the prefix length of {text:?} must be a number from 0 to {max}"
                    ))
                }
            },
        };
        let cidr = Cidr { addr, bits };
        if cidr.network() != addr {
            return Err(format!(
                "{text:?} has bits set beyond its /{bits} prefix; did you mean \"{}/{bits}\"?",
                cidr.network()
            ));
        }
        Ok(cidr)
    }

    /// The range as it applies to addresses: an IPv4-mapped IPv6 range
    /// (`::ffff:10.0.0.0/104`) as its IPv4 range (`10.0.0.0/8`), since
    /// [`Cidr::contains`] takes a mapped address as its IPv4 address.
    pub fn unmapped(self) -> Cidr {
        match self.addr {
            IpAddr::V6(a) if self.bits >= 96 => match a.to_ipv4_mapped() {
                Some(v4) => Cidr {
                    addr: IpAddr::V4(v4),
                    bits: self.bits - 96,
                },
                None => self,
            },
            _ => self,
        }
    }

    /// The range's first address (the host bits cleared).
    fn network(&self) -> IpAddr {
        match self.addr {
            IpAddr::V4(a) => IpAddr::V4((u32::from(a) & mask32(self.bits)).into()),
            IpAddr::V6(a) => IpAddr::V6((u128::from(a) & mask128(self.bits)).into()),
        }
    }

    /// Whether `ip` is in the range (an IPv4-mapped IPv6 address counts
    /// as its IPv4 address).
    pub fn contains(&self, ip: IpAddr) -> bool {
        match (self.addr, forwarded::canonical(ip)) {
            (IpAddr::V4(net), IpAddr::V4(a)) => u32::from(a) & mask32(self.bits) == u32::from(net),
            (IpAddr::V6(net), IpAddr::V6(a)) => {
                u128::from(a) & mask128(self.bits) == u128::from(net)
            }
            _ => false,
        }
    }
}

fn mask32(bits: u8) -> u32 {
    u32::MAX.checked_shl(32 - u32::from(bits)).unwrap_or(0)
}

fn mask128(bits: u8) -> u128 {
    u128::MAX.checked_shl(128 - u32::from(bits)).unwrap_or(0)
}

impl fmt::Display for Cidr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.addr, self.bits)
    }
}

/// The peers whose forwarding headers count (`[proxy] trusted`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Trusted(pub Vec<Cidr>);

impl Trusted {
    /// No peer is trusted: forwarding headers are never read.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether `ip` is in one of the ranges.
    pub fn contains(&self, ip: IpAddr) -> bool {
        self.0.iter().any(|c| c.contains(ip))
    }

    /// The ranges that hold every address of their family (`0.0.0.0/0`,
    /// `::/0`): every client is then a trusted proxy, and names itself.
    pub fn everyone(&self) -> impl Iterator<Item = &Cidr> {
        self.0.iter().filter(|c| c.bits == 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges() {
        let c = Cidr::parse("10.0.0.0/8").unwrap();
        assert!(c.contains("10.255.0.1".parse().unwrap()));
        assert!(c.contains("::ffff:10.1.2.3".parse().unwrap()));
        assert!(!c.contains("11.0.0.1".parse().unwrap()));
        assert!(!c.contains("::1".parse().unwrap()));
        let all = Cidr::parse("0.0.0.0/0").unwrap();
        assert!(all.contains("203.0.113.9".parse().unwrap()));
        let host = Cidr::parse("127.0.0.1").unwrap();
        assert_eq!(host.to_string(), "127.0.0.1/32");
        assert!(host.contains("127.0.0.1".parse().unwrap()));
        assert!(!host.contains("127.0.0.2".parse().unwrap()));
        let v6 = Cidr::parse("2001:db8::/32").unwrap();
        assert!(v6.contains("2001:db8:1::5".parse().unwrap()));
        assert!(!v6.contains("2001:db9::5".parse().unwrap()));
        assert!(Cidr::parse("::/0")
            .unwrap()
            .contains("::1".parse().unwrap()));
        let mapped = Cidr::parse("::ffff:10.0.0.0/104").unwrap().unmapped();
        assert_eq!(mapped, Cidr::parse("10.0.0.0/8").unwrap());
        assert!(mapped.contains("10.1.2.3".parse().unwrap()));
        assert_eq!(v6.unmapped(), v6);
    }

    #[test]
    fn bad_ranges_say_what_is_allowed() {
        for bad in [
            "10.0.0.0/33",
            "::/129",
            "10.0.0.0/",
            "10.0.0.0/x",
            "ten",
            "",
            "10.0.0.0/+8",
        ] {
            assert!(Cidr::parse(bad).is_err(), "{bad}");
        }
        let e = Cidr::parse("10.1.2.3/8").unwrap_err();
        assert!(e.contains("did you mean \"10.0.0.0/8\""), "{e}");
    }
}
