//! The listening sockets: what the clients of each speak ([`Speaks`]),
//! every address the configuration lists ([`listen_addrs`]), and the
//! sockets bound for them, one `SO_REUSEPORT` socket per worker
//! ([`Bound`], [`bind_listeners`]). A leaf of `server/`: the worker, the
//! listeners a process is given (`inherited`) and the embedding API all
//! take it from here.

use std::net::{SocketAddr, TcpListener};
use std::time::Duration;

use super::error::Error;
use crate::config::Config;
use crate::sys;
use crate::sys::privileged::Privileged;

/// What the clients of a listener speak.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Speaks {
    /// HTTP (and h2c): `listen`.
    Http,
    /// HTTPS: `[tls] listen`.
    Https,
    /// HTTP behind a PROXY protocol header: `[proxy] listen`.
    Proxy,
    /// HTTPS behind a PROXY protocol header: `[proxy] tls_listen`.
    ProxyTls,
}

impl Speaks {
    /// Whether its connections speak TLS (after the PROXY header, if any).
    pub fn tls(self) -> bool {
        matches!(self, Speaks::Https | Speaks::ProxyTls)
    }

    /// Whether its connections open with a PROXY protocol header.
    pub fn proxied(self) -> bool {
        cfg!(feature = "ops") && matches!(self, Speaks::Proxy | Speaks::ProxyTls)
    }
}

/// The sockets of one `listen` (or `[tls] listen`) entry: one
/// `SO_REUSEPORT` socket per worker. A reload keeps them for every
/// address it still lists, so the port is never closed and no queued
/// connection is lost.
pub(super) struct Bound {
    /// As configured (port 0 stays 0, so a reload recognises it).
    pub(super) wanted: SocketAddr,
    /// As bound.
    pub(super) real: SocketAddr,
    pub(super) sockets: Vec<TcpListener>,
    /// What its clients speak.
    pub(super) speaks: Speaks,
    /// With `[http3] enable`, on a `[tls] listen` address: the UDP
    /// sockets of the same address and port, one per worker (QUIC).
    #[cfg(feature = "http3")]
    pub(super) udp: Vec<std::net::UdpSocket>,
}

/// Every address to listen on: `listen`, `[tls] listen`, then `[proxy]
/// listen`, each with what it speaks.
pub(super) fn listen_addrs(cfg: &Config) -> impl Iterator<Item = (SocketAddr, Speaks)> + '_ {
    let tls = cfg.tls.iter().flat_map(|t| t.listen.iter());
    let plain = cfg.listen.iter().map(|&a| (a, Speaks::Http));
    let proxy = cfg.proxy.listen.iter().map(|&a| (a, Speaks::Proxy));
    let proxy_tls = cfg.proxy.tls_listen.iter().map(|&a| (a, Speaks::ProxyTls));
    plain
        .chain(tls.map(|&a| (a, Speaks::Https)))
        .chain(proxy)
        .chain(proxy_tls)
}

/// Binds every address of `cfg.listen` and `cfg.tls.listen` (through
/// `via`, if given); an address already bound in `keep` gets duplicates
/// of its sockets instead.
pub(super) fn bind_listeners(
    cfg: &Config,
    keep: &[Bound],
    via: Option<&Privileged>,
) -> Result<Vec<Bound>, Error> {
    let workers = cfg.workers.max(1);
    let mut out = Vec::with_capacity(cfg.listen.len());
    for (wanted, speaks) in listen_addrs(cfg) {
        // Port 0 is a port of its own for each entry: the plain and the
        // TLS one are told apart by what they speak.
        let same = |b: &&Bound| b.wanted == wanted && (wanted.port() != 0 || b.speaks == speaks);
        if let Some(b) = keep.iter().find(same) {
            let sockets = b
                .sockets
                .iter()
                .map(TcpListener::try_clone)
                .collect::<Result<Vec<_>, _>>()
                .map_err(|source| Error::ShareSocket {
                    addr: b.real,
                    source,
                })?;
            out.push(Bound {
                wanted,
                real: b.real,
                sockets,
                speaks,
                #[cfg(feature = "http3")]
                udp: quic_sockets(cfg, speaks, (wanted, b.real), &b.udp, workers, via)?,
            });
            continue;
        }
        // (Unsent bytes bounded on plain listeners only: see
        // `sys::net::NOTSENT_LOWAT`.)
        let defer = cfg.timeouts.defer_accept;
        #[cfg(feature = "http3")]
        let mut tries = 0;
        #[cfg_attr(not(feature = "http3"), allow(clippy::never_loop))]
        loop {
            let (real, sockets) = bind_all(wanted, workers, defer, !speaks.tls(), via)
                .map_err(|e| e.configured_at(cfg.listen_origin(wanted)))?;
            #[cfg(feature = "http3")]
            let udp = match quic_sockets(cfg, speaks, (wanted, real), &[], workers, via) {
                // (Port 0: the port the kernel picked for TCP may be taken
                // for UDP. Another pick, a few times, before it is an
                // error.)
                Err(Error::Listen { source, .. })
                    if wanted.port() == 0
                        && source.kind() == std::io::ErrorKind::AddrInUse
                        && tries < 8 =>
                {
                    tries += 1;
                    continue;
                }
                udp => udp?,
            };
            out.push(Bound {
                wanted,
                real,
                sockets,
                speaks,
                #[cfg(feature = "http3")]
                udp,
            });
            break;
        }
    }
    Ok(out)
}

/// The UDP sockets of a TLS address `real` (configured as `wanted`) with
/// `[http3] enable`: those of `kept` (a reload keeps them, so no datagram
/// of a live connection reaches a socket that does not know it), or
/// those an upgrade handed over, or else one per worker, bound with
/// `SO_REUSEPORT` by this process or through `via` (the privileged helper:
/// at a reload, the server's sandbox keeps it from opening sockets, as
/// for TCP). None for any other address.
#[cfg(feature = "http3")]
fn quic_sockets(
    cfg: &Config,
    speaks: Speaks,
    (wanted, real): (SocketAddr, SocketAddr),
    kept: &[std::net::UdpSocket],
    workers: usize,
    via: Option<&Privileged>,
) -> Result<Vec<std::net::UdpSocket>, Error> {
    if !cfg.http3.enable || speaks != Speaks::Https {
        return Ok(Vec::new());
    }
    let fail = |source| Error::Listen {
        addr: real,
        source,
        origin: cfg.listen_origin(wanted),
    };
    if !kept.is_empty() {
        return kept.iter().map(|s| s.try_clone().map_err(fail)).collect();
    }
    // (Those an upgrade handed over, as they are: see `quic_handover`.)
    let handed = super::quic_handover::take(wanted);
    if !handed.is_empty() {
        return Ok(handed);
    }
    let udp = |addr: &SocketAddr| match via {
        Some(helper) => helper.udp(addr),
        None => sys::net::udp(addr, true),
    };
    (0..workers).map(|_| udp(&real).map_err(fail)).collect()
}

/// Binds `addr` once per worker with `SO_REUSEPORT`, by this process or
/// through `via` (the privileged helper). A probe bind without it comes
/// first, so an address already served by another process is an error
/// rather than silently shared; port 0 is resolved by the probe.
fn bind_all(
    addr: SocketAddr,
    workers: usize,
    defer: Duration,
    bound_unsent: bool,
    via: Option<&Privileged>,
) -> Result<(SocketAddr, Vec<TcpListener>), Error> {
    let listen = |addr: &SocketAddr, reuseport, backlog, defer| match via {
        Some(helper) => helper.listen(addr, reuseport, backlog, defer, bound_unsent),
        None => sys::net::listen(addr, reuseport, backlog, defer, bound_unsent),
    };
    let fail = |addr, source| Error::Listen {
        addr,
        source,
        origin: None,
    };
    let probe = listen(&addr, false, 1, Duration::ZERO).map_err(|e| fail(addr, e))?;
    let real = probe.local_addr().map_err(|e| fail(addr, e))?;
    drop(probe);
    let mut out = Vec::with_capacity(workers);
    for _ in 0..workers {
        out.push(listen(&real, true, 4096, defer).map_err(|e| fail(real, e))?);
    }
    Ok((real, out))
}
