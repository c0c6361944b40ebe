//! Which site answers a request: its host (the `Host` field, HTTP/2's
//! `:authority`, or an absolute-form target's authority, RFC 9112
//! §3.2.2, as the parser chose) against every site's `hosts`, compared
//! as RFC 9110 §4.2.3 and §7.2 say: case-insensitive, without the port,
//! and with a fully qualified name's trailing dot ignored.
//!
//! Built once per configuration; a lookup allocates nothing (the name is
//! lower-cased into a buffer on the stack). With one site, the router
//! never asks.

use std::collections::HashMap;
use std::sync::Arc;

use crate::config::{Config, SiteConfig, UnknownHost};
use crate::handlers::app::Mount;
use crate::handlers::static_files::StaticFiles;
use crate::http::host::{canonical, MAX_NAME};

/// Each site's static files, by site (0: the default site): what every
/// worker of a configuration shares.
pub type SiteFiles = Arc<[StaticFiles]>;

/// Each site's mounts (embedded and named handlers, then the site's
/// servlets), by site.
pub type SiteMounts = Arc<[Arc<[Mount]>]>;

/// The sites' names, each with the index of its site (0: the default
/// site, `i`: the configuration's `sites[i - 1]`).
#[derive(Debug, Default)]
pub struct Sites {
    /// Exact names (`example.org`, `[::1]`).
    exact: HashMap<Box<[u8]>, usize>,
    /// Wildcards by the suffix they cover (`.example.org` for
    /// `*.example.org`).
    below: HashMap<Box<[u8]>, usize>,
    /// What a host that names no site gets.
    unknown: UnknownHost,
}

/// What the host of a request chose.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pick {
    /// The site with this index.
    Site(usize),
    /// No site has the name and `unknown_host` refuses it with this status.
    Refuse(u16),
}

impl Sites {
    /// The names of every site of `cfg`.
    pub fn new(cfg: &Config) -> Sites {
        let mut sites = Sites {
            unknown: cfg.unknown_host,
            ..Sites::default()
        };
        for (i, site) in SiteConfig::all(cfg).enumerate() {
            for name in &site.hosts {
                let (map, key) = match name.strip_prefix('*') {
                    Some(suffix) => (&mut sites.below, suffix),
                    None => (&mut sites.exact, name.as_str()),
                };
                // (The loader refuses a name twice; the first would win.)
                map.entry(key.as_bytes().into()).or_insert(i);
            }
        }
        sites
    }

    /// Whether every request goes to the default site whatever its host:
    /// the router then does not look.
    pub fn only_default(&self) -> bool {
        self.exact.is_empty() && self.below.is_empty() && self.unknown == UnknownHost::Default
    }

    /// The site whose `hosts` name `host` (as sent: any case, maybe with
    /// a port or a trailing dot), if one does.
    pub fn find(&self, host: &[u8]) -> Option<usize> {
        let mut buf = [0u8; MAX_NAME];
        let name = canonical(host, &mut buf)?;
        if let Some(&i) = self.exact.get(name) {
            return Some(i);
        }
        // `*.example.org` covers one label more: `www.example.org`, not
        // `example.org` nor `a.b.example.org` (as certificates do, RFC
        // 6125 §6.4.3).
        let dot = name.iter().position(|&b| b == b'.')?;
        if dot == 0 {
            return None;
        }
        self.below.get(&name[dot..]).copied()
    }

    /// The site for a request whose host is `host` (`None`: it named
    /// none, as HTTP/1.0 may).
    pub fn pick(&self, host: Option<&[u8]>) -> Pick {
        match host.and_then(|h| self.find(h)) {
            Some(i) => Pick::Site(i),
            None => match self.unknown {
                UnknownHost::Default => Pick::Site(0),
                UnknownHost::Refuse(status) => Pick::Refuse(status),
            },
        }
    }

    /// The site the TLS server name `sni` (lower case already) selects,
    /// for the check that a request's host names the same one: the
    /// default site for a name no site has.
    pub fn for_server_name(&self, sni: &str) -> usize {
        self.find(sni.as_bytes()).unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sites(unknown: UnknownHost, names: &[&[&str]]) -> Sites {
        let mut cfg = Config {
            unknown_host: unknown,
            ..Config::default()
        };
        for (i, hosts) in names.iter().enumerate() {
            let site = if i == 0 {
                &mut cfg.site
            } else {
                cfg.sites.push(cfg.site.inherit());
                cfg.sites.last_mut().unwrap()
            };
            site.hosts = hosts.iter().map(|h| h.to_string()).collect();
        }
        Sites::new(&cfg)
    }

    #[test]
    fn names_match_whatever_their_case_port_or_trailing_dot() {
        let s = sites(
            UnknownHost::Default,
            &[
                &[],
                &["example.org", "*.example.org"],
                &["b.test", "[::1]", "127.0.0.1"],
            ],
        );
        for host in [
            "example.org",
            "EXAMPLE.org",
            "example.org.",
            "Example.Org.:8080",
            "example.org:443",
            "www.example.org",
            "WWW.example.org.:80",
        ] {
            assert_eq!(s.find(host.as_bytes()), Some(1), "{host}");
        }
        for host in ["b.test", "B.TEST:1", "[::1]", "[::1]:8080", "127.0.0.1:80"] {
            assert_eq!(s.find(host.as_bytes()), Some(2), "{host}");
        }
        for host in [
            "a.b.example.org",
            "xexample.org",
            "example.org..",
            "org",
            ".example.org",
            "",
            "[::2]",
            "b.test.evil",
        ] {
            assert_eq!(s.find(host.as_bytes()), None, "{host}");
            assert_eq!(s.pick(Some(host.as_bytes())), Pick::Site(0), "{host}");
        }
        assert_eq!(s.pick(None), Pick::Site(0));
        assert!(!s.only_default());
        let long = format!("{}.example.org", "a".repeat(300));
        assert_eq!(s.find(long.as_bytes()), None);
    }

    #[test]
    fn an_exact_name_wins_over_a_wildcard_and_the_default_site_may_have_names() {
        let s = sites(
            UnknownHost::Refuse(421),
            &[&["main.test"], &["*.example.org"], &["www.example.org"]],
        );
        assert_eq!(s.pick(Some(b"www.example.org")), Pick::Site(2));
        assert_eq!(s.pick(Some(b"cdn.example.org")), Pick::Site(1));
        assert_eq!(s.pick(Some(b"main.test:80")), Pick::Site(0));
        assert_eq!(s.pick(Some(b"other.test")), Pick::Refuse(421));
        assert_eq!(s.pick(None), Pick::Refuse(421));
        assert_eq!(s.for_server_name("cdn.example.org"), 1);
        assert_eq!(s.for_server_name("other.test"), 0);
    }

    #[test]
    fn one_site_never_looks() {
        assert!(sites(UnknownHost::Default, &[&[]]).only_default());
        assert!(!sites(UnknownHost::Refuse(404), &[&["a.test"]]).only_default());
    }
}
