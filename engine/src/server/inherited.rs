//! Listening sockets a process is given rather than binds: by systemd
//! (socket activation: `systemd-socket-activate -l 8080 brisk`, or a
//! `brisk.socket` unit) or by the brisk it replaces (an upgrade). Each is
//! matched to the configured address it serves; with no address
//! configured at all, the given sockets are the listeners.

use std::net::{SocketAddr, TcpListener};

use super::error::Error;
use super::listen::{self, Bound, Speaks};
use crate::config::Config;
use crate::sys;

/// A listening socket this process was given.
#[derive(Debug)]
pub struct Inherited {
    /// The socket.
    pub socket: TcpListener,
    /// What its clients speak, when the giver says (`None`: plain HTTP
    /// unless the configuration lists its address as another kind).
    pub speaks: Option<Speaks>,
    /// The configured address it was bound for (an upgrade's sockets:
    /// port 0 stays 0 there), else `None`.
    pub wanted: Option<SocketAddr>,
}

impl Inherited {
    /// A socket passed by systemd, named `name` (`FileDescriptorName=` in
    /// the socket unit): `https` (or `tls`), `proxy` and `proxy-tls` say
    /// what its clients speak when the configuration does not list it;
    /// anything else is plain HTTP.
    pub fn from_systemd(socket: TcpListener, name: &str) -> Inherited {
        let speaks = match name {
            "https" | "tls" => Some(Speaks::Https),
            "proxy" => Some(Speaks::Proxy),
            "proxy-tls" => Some(Speaks::ProxyTls),
            _ => None,
        };
        Inherited {
            socket,
            speaks,
            wanted: None,
        }
    }
}

/// What the given sockets serve, kept for reloads: with no listen
/// address configured they are the listeners, by these addresses.
pub(super) type Adopted = Vec<(SocketAddr, Speaks)>;

/// Matches `given` to `cfg`'s listeners: each to the configured address
/// it is bound to (the address it was wanted for, in an upgrade), or,
/// with no listener configured at all, as the listeners themselves (then
/// written into `cfg`, and returned for reloads to do the same). The
/// sockets come back as [`Bound`] entries, one socket per worker
/// (duplicates when fewer were given), for [`listen::bind_listeners`] to
/// keep. An error for a socket no configured address matches.
pub(super) fn adopt(
    cfg: &mut Config,
    given: Vec<Inherited>,
) -> Result<(Vec<Bound>, Adopted), Error> {
    if given.is_empty() {
        return Ok((Vec::new(), Vec::new()));
    }
    let mut found = Vec::with_capacity(given.len());
    for g in given {
        let real = g.socket.local_addr().map_err(Error::ShareListener)?;
        found.push((g, real));
    }
    let mut adopted = Adopted::new();
    if cfg.listen_default {
        let unnamed = match cfg.listen_default_tls {
            true => Speaks::Https,
            false => Speaks::Http,
        };
        for (g, real) in &found {
            let speaks = g.speaks.unwrap_or(unnamed);
            if !adopted.contains(&(*real, speaks)) {
                adopted.push((*real, speaks));
            }
        }
        serve_adopted(cfg, &adopted)?;
    }
    let workers = cfg.workers.max(1);
    let configured: Vec<(SocketAddr, Speaks)> = listen::listen_addrs(cfg).collect();
    let mut out: Vec<Bound> = Vec::new();
    for (g, real) in found {
        let matches = |&&(addr, speaks): &&(SocketAddr, Speaks)| {
            let kind = g.speaks.is_none_or(|s| s == speaks);
            kind && (addr == real || g.wanted == Some(addr))
        };
        let Some(&(wanted, speaks)) = configured.iter().find(matches) else {
            if g.wanted.is_some() {
                // Handed over by the brisk this one replaces, for an
                // address the configuration no longer lists: it closes
                // when that one exits.
                continue;
            }
            let named = match g.speaks {
                None => "",
                Some(Speaks::Http) => " (for HTTP)",
                Some(Speaks::Https) => " (named https)",
                Some(Speaks::Proxy) => " (named proxy)",
                Some(Speaks::ProxyTls) => " (named proxy-tls)",
            };
            return Err(Error::Inherited(format!(
                "the listening socket {real}{named} given to brisk is not in the configuration (listen, tls.listen, proxy.listen or proxy.tls_listen): add it there, or stop passing it (the .socket unit's ListenStream=)"
            )));
        };
        // (Tuned as brisk's own listeners are, the bound on unsent bytes
        // for plain ones only: `sys::net::NOTSENT_LOWAT`.)
        sys::net::tune_listener(&g.socket, cfg.timeouts.defer_accept, !speaks.tls()).map_err(
            |source| Error::Listen {
                addr: real,
                source,
                origin: cfg.listen_origin(wanted),
            },
        )?;
        match out
            .iter_mut()
            .find(|b| b.wanted == wanted && b.speaks == speaks)
        {
            Some(b) => b.sockets.push(g.socket),
            None => out.push(Bound {
                wanted,
                real,
                sockets: vec![g.socket],
                speaks,
                #[cfg(feature = "http3")]
                udp: Vec::new(),
            }),
        }
    }
    // One socket per worker at least: a worker takes every `workers`-th
    // one from its index, so a socket given once is shared by all (each
    // watches it in its own epoll), and sockets given beyond the count of
    // workers are all watched too (an upgrade to fewer workers).
    for b in &mut out {
        let given = b.sockets.len();
        for i in given..workers {
            let dup = b.sockets[i % given]
                .try_clone()
                .map_err(|source| Error::ShareSocket {
                    addr: b.real,
                    source,
                })?;
            b.sockets.push(dup);
        }
    }
    Ok((out, adopted))
}

/// Makes the sockets `adopted` the listeners of `cfg` (which configured
/// none): plain ones in `listen`, TLS ones in `[tls] listen`, PROXY ones
/// in `[proxy] listen`. Also for a reload, whose configuration still has
/// none.
pub(super) fn serve_adopted(cfg: &mut Config, adopted: &Adopted) -> Result<(), Error> {
    if !cfg.listen_default || adopted.is_empty() {
        return Ok(());
    }
    cfg.listen.clear();
    // (`--tls-cert` alone had put the default address there.)
    if let Some(tls) = cfg.tls.as_mut().filter(|_| cfg.listen_default_tls) {
        tls.listen.clear();
    }
    let add = |list: &mut Vec<SocketAddr>, addr| {
        if !list.contains(&addr) {
            list.push(addr);
        }
    };
    for &(addr, speaks) in adopted {
        match speaks {
            Speaks::Http => add(&mut cfg.listen, addr),
            Speaks::Proxy | Speaks::ProxyTls if !cfg!(feature = "ops") => {
                return Err(Error::Inherited(format!(
                    "the listening socket {addr} given to brisk is named for the PROXY protocol, but this brisk was built without it (the cargo feature `ops`)"
                )))
            }
            Speaks::Proxy => add(&mut cfg.proxy.listen, addr),
            Speaks::ProxyTls if cfg.tls.is_some() => add(&mut cfg.proxy.tls_listen, addr),
            Speaks::Https | Speaks::ProxyTls => match cfg.tls.as_mut() {
                Some(tls) => add(&mut tls.listen, addr),
                None => {
                    return Err(Error::Inherited(format!(
                        "the listening socket {addr} given to brisk is named for HTTPS, but no certificate is configured ([[tls.certificate]], or --tls-cert and --tls-key)"
                    )))
                }
            },
        }
    }
    Ok(())
}
