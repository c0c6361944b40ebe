//! Connection limits shared by all workers: a global count and a count per
//! client IP, both lock-free. Per-IP counts live in a fixed table of
//! atomic counters indexed by a hash of the address, so memory is bounded
//! whatever the number of clients; two addresses that share a slot share a
//! limit (rare with 65,536 slots, and only ever stricter). The hash is
//! keyed, its keys drawn at start: with a hash anyone can compute, an
//! attacker would pick an address of its own whose slot is a victim's
//! and hold that slot's connections, keeping the victim out. An IPv6 client
//! counts by its /64, as `[[rate_limit]]` and the failed-login count see
//! it: one subscriber usually holds a whole /64, and could otherwise open
//! connections from as many of its addresses as it likes.

use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::net::IpAddr;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};

const SLOTS: usize = 1 << 16;

/// Counts of open connections.
#[derive(Debug)]
pub struct ConnLimits {
    max: usize,
    per_ip_max: u32,
    open: AtomicUsize,
    per_ip: Box<[AtomicU32]>,
    /// The keys of the slots' hash (SipHash's), drawn at start.
    keys: RandomState,
}

/// Why a connection was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// `limits.max_connections` reached.
    Total,
    /// `limits.max_connections_per_ip` reached for this address.
    PerIp,
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Refused::Total => "limits.max_connections reached",
            Refused::PerIp => "limits.max_connections_per_ip reached for its address",
        })
    }
}

/// What an address counts by: an IPv4 one (an IPv4-mapped IPv6 one as its
/// IPv4 address) whole, an IPv6 one by its /64.
fn client(ip: IpAddr) -> (bool, u64) {
    match ip.to_canonical() {
        IpAddr::V4(a) => (false, u64::from(u32::from(a))),
        IpAddr::V6(a) => (true, (u128::from(a) >> 64) as u64),
    }
}

impl ConnLimits {
    /// Limits of `max` connections in all, `per_ip_max` per address (0: none).
    pub fn new(max: usize, per_ip_max: u32) -> ConnLimits {
        let slots = if per_ip_max == 0 { 0 } else { SLOTS };
        ConnLimits {
            max,
            per_ip_max,
            open: AtomicUsize::new(0),
            per_ip: (0..slots).map(|_| AtomicU32::new(0)).collect(),
            keys: RandomState::new(),
        }
    }

    /// The slot of `ip`'s count.
    fn slot(&self, ip: IpAddr) -> usize {
        (self.keys.hash_one(client(ip)) as usize) & (SLOTS - 1)
    }

    /// Counts a new connection from `ip`, or refuses it.
    pub fn admit(&self, ip: IpAddr) -> Result<(), Refused> {
        self.admit_total()?;
        self.admit_ip(ip).inspect_err(|_| self.release_total())
    }

    /// Counts a new connection whose client is not known yet (a PROXY
    /// protocol header will say): in the total only, until
    /// [`ConnLimits::admit_ip`].
    pub fn admit_total(&self) -> Result<(), Refused> {
        if self.open.fetch_add(1, Ordering::Relaxed) >= self.max {
            self.open.fetch_sub(1, Ordering::Relaxed);
            return Err(Refused::Total);
        }
        Ok(())
    }

    /// Counts a connection admitted by [`ConnLimits::admit_total`]
    /// against its client `ip` too, or refuses it (it then still counts
    /// in the total until released by [`ConnLimits::release_total`]).
    pub fn admit_ip(&self, ip: IpAddr) -> Result<(), Refused> {
        if self.per_ip_max > 0 {
            let s = &self.per_ip[self.slot(ip)];
            if s.fetch_add(1, Ordering::Relaxed) >= self.per_ip_max {
                s.fetch_sub(1, Ordering::Relaxed);
                return Err(Refused::PerIp);
            }
        }
        Ok(())
    }

    /// Uncounts a connection from `ip` that was admitted.
    pub fn release(&self, ip: IpAddr) {
        self.release_total();
        if self.per_ip_max > 0 {
            self.per_ip[self.slot(ip)].fetch_sub(1, Ordering::Relaxed);
        }
    }

    /// Uncounts a connection counted in the total only.
    pub fn release_total(&self) {
        self.open.fetch_sub(1, Ordering::Relaxed);
    }

    /// Connections open now.
    pub fn open(&self) -> usize {
        self.open.load(Ordering::Relaxed)
    }

    /// Whether a client whose address is not proven (a QUIC Initial,
    /// which anyone can send with a victim's address as its source) must
    /// prove it before it is counted: when connections count per address
    /// (counted unproven, spoofed Initials would lock the address's owner
    /// out), and while half of `limits.max_connections` or more are open
    /// (Initials from made-up addresses could otherwise fill the rest).
    pub fn needs_proof(&self) -> bool {
        self.per_ip_max > 0 || self.open() >= self.max.div_ceil(2)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn total_and_per_ip_limits() {
        let l = ConnLimits::new(3, 2);
        let a: IpAddr = "192.0.2.1".parse().unwrap();
        let b: IpAddr = "192.0.2.2".parse().unwrap();
        assert_eq!(l.admit(a), Ok(()));
        assert_eq!(l.admit(a), Ok(()));
        assert_eq!(l.admit(a), Err(Refused::PerIp));
        assert_eq!(l.admit(b), Ok(()));
        assert_eq!(l.admit(b), Err(Refused::Total));
        l.release(a);
        assert_eq!(l.open(), 2);
        assert_eq!(l.admit(b), Ok(()));
        let mapped: IpAddr = "::ffff:192.0.2.1".parse().unwrap();
        assert_eq!(l.admit(mapped), Err(Refused::Total));
        l.release(b);
        assert_eq!(l.admit(mapped), Ok(()));
        l.release(b);
        assert_eq!(
            l.admit(mapped),
            Err(Refused::PerIp),
            "mapped address counts as its IPv4"
        );
    }

    #[test]
    fn an_ipv6_client_counts_by_its_64() {
        let l = ConnLimits::new(100, 2);
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        assert_eq!(l.admit(ip("2001:db8:0:1::1")), Ok(()));
        assert_eq!(l.admit(ip("2001:db8:0:1:ffff::2")), Ok(()));
        assert_eq!(
            l.admit(ip("2001:db8:0:1:1234:5678:9abc:def0")),
            Err(Refused::PerIp),
            "the same /64"
        );
        assert_eq!(l.admit(ip("2001:db8:0:2::1")), Ok(()), "another /64");
        l.release(ip("2001:db8:0:1::99"));
        assert_eq!(l.admit(ip("2001:db8:0:1::3")), Ok(()));
    }

    #[test]
    fn a_client_named_later_counts_in_the_total_first() {
        let l = ConnLimits::new(2, 1);
        let a: IpAddr = "192.0.2.1".parse().unwrap();
        assert_eq!(l.admit_total(), Ok(()));
        assert_eq!(l.admit_total(), Ok(()));
        assert_eq!(l.admit_total(), Err(Refused::Total));
        assert_eq!(l.admit_ip(a), Ok(()));
        assert_eq!(l.admit_ip(a), Err(Refused::PerIp));
        l.release_total();
        assert_eq!(l.open(), 1);
        l.release(a);
        assert_eq!((l.open(), l.admit(a)), (0, Ok(())));
    }

    #[test]
    fn an_unproven_address_must_prove_itself_with_a_per_ip_limit_or_half_the_total_open() {
        let a: IpAddr = "192.0.2.1".parse().unwrap();
        assert!(ConnLimits::new(10, 1).needs_proof());
        let l = ConnLimits::new(4, 0);
        assert!(!l.needs_proof());
        l.admit(a).unwrap();
        assert!(!l.needs_proof());
        l.admit(a).unwrap();
        assert!(l.needs_proof(), "half of the total open");
        l.release(a);
        assert!(!l.needs_proof());
    }

    #[test]
    fn no_per_ip_table_without_a_limit() {
        let l = ConnLimits::new(10, 0);
        let a: IpAddr = "::1".parse().unwrap();
        for _ in 0..10 {
            assert!(l.admit(a).is_ok());
        }
        assert_eq!(l.admit(a), Err(Refused::Total));
    }
}
