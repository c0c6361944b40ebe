//! What an applied sandbox allows, and whether a configuration loaded
//! again (SIGHUP) fits in it: the kernel cannot widen a sandbox, so a
//! reload that needs more needs a restart, and the refusal says which
//! setting and path.

use std::path::{Path, PathBuf};

use super::sandbox::{landlock_rules, Rule};
use crate::config::{Config, SiteConfig, Upstream};
use crate::process::Error;
use crate::sys::sandbox::{self, fs_access};

/// What an applied sandbox allows, to check a reload against.
#[derive(Debug, Clone)]
pub struct Allowed {
    /// Canonical path, whether it is a directory, effective rights;
    /// `None` without Landlock (any path goes).
    pub(super) files: Option<Vec<(PathBuf, bool, u64)>>,
    /// The Landlock ABI the rights were masked with.
    pub(super) abi: u32,
    /// The upstreams' TCP ports it may connect to (`[[reverse_proxy]]`);
    /// `None`: it makes no socket at all (seccomp).
    pub(super) upstreams: Option<Vec<u16>>,
    /// Whether the ACME thread may talk to its CA (seccomp's `ACME_CA`);
    /// the CA's port is among `upstreams` then.
    pub(super) asks_ca: bool,
}

/// The rights a rule really grants: those the kernel knows, and on a
/// file only the file rights.
pub(super) fn effective(abi: u32, is_dir: bool, rights: u64) -> u64 {
    let known = rights & sandbox::landlock_rights(abi);
    if is_dir {
        known
    } else {
        known & fs_access::FILE_RIGHTS
    }
}

impl Allowed {
    /// The rules of `rules` this sandbox does not allow: a reload that
    /// needs one of them needs a restart, since the kernel cannot widen a
    /// sandbox.
    fn missing<'r>(&self, rules: &'r [Rule]) -> Vec<&'r Rule> {
        let Some(files) = &self.files else {
            return Vec::new();
        };
        let covered = |rule: &Rule| {
            let Ok(path) = crate::sys::fs::canonical(&rule.path) else {
                // A path that went away is found missing by what opens it.
                return true;
            };
            let need = effective(self.abi, path.is_dir(), rule.rights);
            let mut have = 0;
            for (p, dir, rights) in files {
                if *p == path || (*dir && path.starts_with(p)) {
                    have |= rights;
                }
            }
            need & !have == 0
        };
        rules.iter().filter(|r| !covered(r)).collect()
    }

    /// The upstreams of `new` (`key = to`) this sandbox does not let the
    /// server reach: any, when it makes no socket; a TCP port not among
    /// those Landlock allows (where it restricts TCP, ABI 4).
    fn missing_upstreams(&self, new: &Config) -> Vec<String> {
        if !cfg!(feature = "upstreams") {
            return Vec::new();
        }
        let mut named = Vec::new();
        let net = self.files.is_some() && self.abi >= 4;
        for (prefix, site) in SiteConfig::all_keyed(new) {
            let proxied = site.reverse_proxy.iter().map(|r| ("reverse_proxy", &r.to));
            let fastcgi = site.fastcgi.iter().map(|r| ("fastcgi", &r.to));
            let mut nth = [0, 0];
            for (kind, list) in proxied.chain(fastcgi) {
                let i = &mut nth[usize::from(kind == "fastcgi")];
                *i += 1;
                for to in list {
                    let (allowed, text) = match (to, &self.upstreams) {
                        (Upstream::Tcp { addr, .. }, Some(ports)) => {
                            (!net || ports.contains(&addr.port()), addr.to_string())
                        }
                        (Upstream::Tcp { addr, .. }, None) => (false, addr.to_string()),
                        (Upstream::Unix(p), ports) => {
                            (ports.is_some(), format!("unix:{}", p.display()))
                        }
                    };
                    if !allowed {
                        named.push(format!("{prefix}{kind}[{i}].to = {text}"));
                    }
                }
            }
        }
        named
    }

    /// The `[acme]` setting of `new` this sandbox does not let the ACME
    /// thread reach its CA for: a public name added to a server started
    /// with only local ones (it connects to nothing), or a CA on a port
    /// Landlock does not allow (ABI 4).
    fn missing_ca(&self, new: &Config) -> Option<String> {
        let acme = new.acme().filter(|_| new.asks_a_ca())?;
        if !self.asks_ca {
            let hosts: Vec<String> = acme.hosts.iter().map(|h| format!("{h:?}")).collect();
            return Some(format!("acme.hosts = [{}]", hosts.join(", ")));
        }
        let net = self.files.is_some() && self.abi >= 4;
        let port = acme.directory_addr.1;
        let reached = self
            .upstreams
            .as_ref()
            .is_some_and(|ports| !net || ports.contains(&port));
        (!reached).then(|| format!("acme.directory = {}", acme.directory))
    }
}

/// What the sandboxes applied at start allow: the server's, and the CGI
/// launchers' if there are any. A reload has to fit in them.
#[derive(Debug, Clone)]
pub struct Sandboxes {
    /// The server's own.
    pub server: Allowed,
    /// The CGI launchers', each with the `writable` set of the rules it
    /// starts programs for (none when brisk started without CGI).
    pub launchers: Vec<(Vec<PathBuf>, Allowed)>,
    /// Whether a privileged helper reopens the logs.
    pub privileged: bool,
}

impl Sandboxes {
    /// Whether the server's sandbox lets it read `file` (a file a reloaded
    /// configuration names); if not, why, and the way out.
    pub fn readable(&self, file: &Path) -> Result<(), Error> {
        let rule = Rule::new(file, fs_access::READ_FILE, "");
        if self.server.missing(std::slice::from_ref(&rule)).is_empty() {
            return Ok(());
        }
        Err(Error::SandboxUnreadable(file.to_path_buf()))
    }

    /// Why `new` cannot be served without a restart, naming the settings;
    /// `None` when it fits.
    pub fn refusal(&self, new: &Config) -> Option<Error> {
        if new.any_cgi() && self.launchers.is_empty() {
            return Some(Error::SandboxNoLauncher);
        }
        let mut missing = self
            .server
            .missing(&landlock_rules(new, None, self.privileged))
            .into_iter()
            .cloned()
            .collect::<Vec<_>>();
        let mut named: Vec<String> = Vec::new();
        let rules = SiteConfig::all_keyed(new).flat_map(|(prefix, site)| {
            site.cgi
                .iter()
                .enumerate()
                .map(move |(i, r)| (format!("{prefix}cgi[{}]", i + 1), r))
        });
        for (key, rule) in rules {
            match self.launchers.iter().find(|(set, _)| *set == rule.writable) {
                Some((set, launcher)) => {
                    let programs = landlock_rules(new, Some(set), self.privileged);
                    missing.extend(launcher.missing(&programs).into_iter().cloned());
                }
                // A launcher's writable directories are its sandbox's.
                None => named.push(format!(
                    "{key}.writable = [{}]",
                    rule.writable
                        .iter()
                        .map(|p| format!("{:?}", p.display().to_string()))
                        .collect::<Vec<_>>()
                        .join(", ")
                )),
            }
        }
        // One mention per setting: a file and its directory are one.
        for rule in &missing {
            let key = rule.what.trim_end_matches(" (its directory)");
            if !named.iter().any(|n| n.starts_with(&format!("{key} = "))) {
                named.push(format!("{key} = {}", rule.path.display()));
            }
        }
        named.extend(self.server.missing_upstreams(new));
        named.extend(self.server.missing_ca(new));
        if named.is_empty() {
            return None;
        }
        Some(Error::SandboxNotAllowed(named))
    }
}

#[cfg(all(test, feature = "upstreams"))]
mod tests {
    use std::path::Path;

    use super::*;
    use std::time::Duration;

    use crate::config::{FastcgiRule, ProxyRule};

    fn with_upstreams(to: Vec<Upstream>) -> Config {
        Config {
            site: SiteConfig {
                reverse_proxy: vec![ProxyRule {
                    to,
                    ..ProxyRule::default()
                }],
                ..Config::default().site
            },
            ..Config::default()
        }
    }

    fn tcp(port: u16) -> Upstream {
        Upstream::Tcp {
            addr: ([127, 0, 0, 1], port).into(),
            host: "127.0.0.1".into(),
            also: [].into(),
            reached: Default::default(),
            tls: false,
        }
    }

    #[test]
    fn a_reload_cannot_reach_upstreams_the_sandbox_was_not_opened_for() {
        let unix = Upstream::Unix(Path::new("/run/app.sock").into());
        let new = with_upstreams(vec![tcp(9001), tcp(9002), unix]);
        // Started without upstreams: no socket at all.
        let none = Allowed {
            files: Some(Vec::new()),
            abi: 4,
            upstreams: None,
            asks_ca: false,
        };
        assert_eq!(
            none.missing_upstreams(&new),
            [
                "reverse_proxy[1].to = 127.0.0.1:9001",
                "reverse_proxy[1].to = 127.0.0.1:9002",
                "reverse_proxy[1].to = unix:/run/app.sock"
            ]
        );
        // Started with one port: Landlock (ABI 4) allows only that one.
        let one = Allowed {
            upstreams: Some(vec![9001]),
            ..none.clone()
        };
        assert_eq!(
            one.missing_upstreams(&new),
            ["reverse_proxy[1].to = 127.0.0.1:9002"]
        );
        // Without Landlock's TCP rules, any port goes.
        let old_kernel = Allowed { abi: 3, ..one };
        assert!(old_kernel.missing_upstreams(&new).is_empty());
        assert!(none.missing_upstreams(&Config::default()).is_empty());
    }

    #[test]
    fn fastcgi_servers_count_as_upstreams() {
        let mut new = with_upstreams(vec![tcp(9001)]);
        let rule = FastcgiRule {
            matches: crate::config::PathMatch::Glob("*.php".into()),
            to: vec![tcp(9000)],
            index: None,
            split_path: None,
            fallback: None,
            root: None,
            env: Vec::new(),
            balance: crate::config::Balance::RoundRobin,
            connect_timeout: Duration::from_secs(5),
            read_timeout: Duration::from_secs(60),
            send_timeout: Duration::from_secs(60),
            fail_timeout: Duration::from_secs(10),
            max_fails: 1,
            keepalive: 0,
            keepalive_timeout: Duration::from_secs(60),
            max_body: None,
            buffer_request: true,
            buffer_answer: crate::config::BUFFER_ANSWER,
        };
        new.site.fastcgi = vec![rule.clone(), rule];
        let one = Allowed {
            files: Some(Vec::new()),
            abi: 4,
            upstreams: Some(vec![9001]),
            asks_ca: false,
        };
        assert_eq!(
            one.missing_upstreams(&new),
            [
                "fastcgi[1].to = 127.0.0.1:9000",
                "fastcgi[2].to = 127.0.0.1:9000"
            ]
        );
    }
}
