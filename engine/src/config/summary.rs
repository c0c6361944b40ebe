//! What `--check-config` prints: the verdict, the report of what will
//! serve (with the feature `ops`, [`super::report`]), then the warnings,
//! which every build gives.

use super::Config;

/// The whole answer; `source` names the configuration document.
pub(super) fn summary(config: &Config, source: &str) -> String {
    let mut s = format!("configuration OK ({source})\n");
    // The report is 46 KiB of the binary: left out of builds without
    // `ops` (#12's 2.5 MiB for the `tls` build), which say so.
    #[cfg(feature = "ops")]
    super::report::report(config, &mut s);
    #[cfg(not(feature = "ops"))]
    s.push_str("(the report of what will serve is in builds with the feature `ops`)\n");
    for warning in warnings(config) {
        s.push_str("warning: ");
        s.push_str(&warning);
        s.push('\n');
    }
    s
}

/// What may be a mistake though the configuration is valid: brisk's own
/// files beneath a root, private keys other users can read, ports this
/// brisk cannot bind, WebDAV trees its workers could not write.
fn warnings(config: &Config) -> Vec<String> {
    let mut own = config.warnings();
    own.extend(privileged_ports(config));
    // (At start, a file made and removed in each tree says it: see
    // `webdav.md`.)
    #[cfg(feature = "webdav")]
    own.extend(super::webdav::unwritable_trees(config));
    own
}

/// Listen addresses whose port is below the kernel's first unprivileged
/// one (`net.ipv4.ip_unprivileged_port_start`, 1024 unless lowered), for
/// a brisk that could not bind them: not root, without
/// `CAP_NET_BIND_SERVICE`, and given no sockets by systemd. The start
/// would fail at its first bind; said here, where the check is run.
/// (Only by `--check-config`: an upgrade or systemd hands the sockets
/// over at start.)
fn privileged_ports(config: &Config) -> Option<String> {
    /// `CAP_NET_BIND_SERVICE`, from linux/capability.h.
    const CAP_NET_BIND_SERVICE: u32 = 10;
    let euid = crate::sys::privileges::euid();
    if euid == 0
        || crate::sys::privileges::has_capability(CAP_NET_BIND_SERVICE)
        || std::env::var_os("LISTEN_FDS").is_some()
    {
        return None;
    }
    let first: u16 = std::fs::read_to_string("/proc/sys/net/ipv4/ip_unprivileged_port_start")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(1024);
    let tls = config.tls.iter().flat_map(|t| &t.listen);
    let proxy = config.proxy.listen.iter().chain(&config.proxy.tls_listen);
    let low: Vec<String> = config
        .listen
        .iter()
        .chain(tls)
        .chain(proxy)
        .filter(|a| a.port() != 0 && a.port() < first)
        .map(|a| a.to_string())
        .collect();
    if low.is_empty() {
        return None;
    }
    Some(format!(
        "listen: {}: ports below {first} need privileges, which brisk, running as uid {euid} \
         without CAP_NET_BIND_SERVICE, has not: the start will fail to bind them (start it as \
         root, and it drops to `user` once bound; or give the binary the capability; or let \
         systemd bind the ports; or listen on a port from {first} up)",
        low.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_verdict_then_the_report_or_what_has_it() {
        let s = summary(&Config::default(), "brisk.toml");
        let (verdict, rest) = s.split_once('\n').unwrap();
        assert_eq!(verdict, "configuration OK (brisk.toml)");
        let report = "(the report of what will serve is in builds with the feature `ops`)\n";
        assert_eq!(rest == report, !cfg!(feature = "ops"), "{s}");
        if cfg!(feature = "ops") {
            assert!(rest.starts_with("listen: "), "{s}");
        }
    }
}
