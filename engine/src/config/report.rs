//! The `--check-config` report (feature `ops`): what the server will
//! actually use, one function per section, every rule set listed (or
//! `none`), so that a rule copied from an example by mistake shows up
//! before it serves. [`super::summary`] wraps it with the verdict and the
//! warnings.
//!
//! A new setting belongs in the function of its section; a new section
//! gets a function of its own, called from [`report`].

use std::fmt::Write as _;
use std::time::Duration;

use super::admission::RateKey;
use super::{
    AuthMethods, Balance, CgiTarget, Config, HeaderEdits, HostMode, Limits, LogTarget, PathMatch,
    ServerMode, SiteConfig, Timeouts, Upstream,
};
use crate::sys::{privileges, sandbox};

/// Every section, in the order of the configuration file's reference.
pub(super) fn report(config: &Config, s: &mut String) {
    let sections: [fn(&Config, &mut String); 13] = [
        server,
        tls,
        acme,
        proxy,
        http2,
        default_site,
        sites,
        limits,
        timeouts,
        logs,
        process,
        identity,
        confinement,
    ];
    for section in sections {
        section(config, s);
    }
}

fn server(c: &Config, s: &mut String) {
    if c.listen.is_empty() {
        let _ = writeln!(s, "listen: none (see tls and proxy)");
    } else {
        let _ = writeln!(s, "listen: {}", joined(&c.listen, ", "));
    }
    let names = match c.site.hosts.is_empty() {
        true => String::new(),
        false => format!(" (hosts {})", c.site.hosts.join(", ")),
    };
    let _ = writeln!(s, "root: {}{names}", c.site.root.display());
    let _ = writeln!(s, "workers: {}", c.workers);
    if c.server_header != Config::default().server_header {
        let _ = writeln!(s, "server header: {:?}", c.server_header);
    }
}

/// `[tls]`: its listeners, each certificate (files, names, expiry; the
/// first is the default), and how sessions resume.
fn tls(c: &Config, s: &mut String) {
    let Some(t) = &c.tls else {
        let _ = writeln!(s, "tls: off");
        return;
    };
    let alpn = if c.http2.enable {
        "h2, http/1.1"
    } else {
        "http/1.1"
    };
    let listen = match t.listen.is_empty() {
        true => "no listen address of its own ([proxy] tls_listen, or the sockets systemd passes named https or tls)".to_string(),
        false => format!("listen {}", joined(&t.listen, ", ")),
    };
    let _ = writeln!(s, "tls: {listen} (TLS 1.3 and 1.2, ALPN {alpn}, no 0-RTT)");
    #[cfg(feature = "tls")]
    for (i, cert) in t.certificates.iter().enumerate() {
        let f = &cert.files;
        let _ = writeln!(
            s,
            "  certificate {}{}: {}, key {}{}; names {}; expires {}",
            i + 1,
            if i == 0 {
                " (default, and for clients without SNI)"
            } else {
                ""
            },
            f.cert.display(),
            f.key.display(),
            f.ocsp
                .as_ref()
                .map_or(String::new(), |o| format!(", OCSP staple {}", o.display())),
            if cert.names.is_empty() {
                "none (served only as the default)".to_string()
            } else {
                cert.names.join(", ")
            },
            crate::tls::certs::utc(cert.not_after)
        );
    }
    let keys = t.ticket_keys();
    let tickets = match (keys, t.session_tickets) {
        (Some(k), true) => format!(
            "session tickets on (keys shared through {}, rotated every {})",
            k.file.display(),
            duration(k.rotation)
        ),
        (None, true) => {
            "session tickets on (one key for all workers, rotated every 6 hours)".to_string()
        }
        (_, false) => "session tickets off".to_string(),
    };
    let _ = writeln!(
        s,
        "  {tickets}, session cache {} entries; handshake timeout {}, at most {} handshakes at once per worker",
        t.session_cache,
        duration(t.handshake_timeout),
        t.max_handshakes
    );
}

/// `[acme]`: what is ordered, from where, how, and where it is kept
/// (nothing without it).
fn acme(c: &Config, s: &mut String) {
    let Some(a) = c.acme() else {
        return;
    };
    let resolved = match &a.directory_addr {
        (_, _, Some(addr)) => format!("at {addr}"),
        (host, _, None) => format!("{host} not resolved now: every try will fail until a restart"),
    };
    // The local CA's names are named too: one certificate for them all,
    // from it rather than from the directory.
    let local = format!("one for {} from brisk's local CA", a.local.join(", "));
    let each = match (a.hosts.is_empty(), a.local.is_empty()) {
        (false, true) => format!("one certificate each for {}", a.hosts.join(", ")),
        (false, false) => format!("one certificate each for {}; {local}", a.hosts.join(", ")),
        (true, false) => format!("no public name; {local}"),
        (true, true) => "no name".to_string(),
    };
    let _ = writeln!(
        s,
        "acme: {} ({resolved}), {}, {each}",
        a.directory,
        a.challenges.join(" then "),
    );
    let _ = writeln!(
        s,
        "  storage {}{}{}",
        a.storage.display(),
        a.email
            .as_ref()
            .map(|e| format!(", contact {e}"))
            .unwrap_or_default(),
        if a.redirect_http {
            ", plain HTTP redirected to HTTPS"
        } else {
            ""
        }
    );
    #[cfg(feature = "acme")]
    if a.key_type != crate::config::KeyType::default() {
        let _ = writeln!(s, "  certificate keys {}", a.key_type.name());
    }
    #[cfg(feature = "acme")]
    if let Some(eab) = &a.eab {
        // (Never the MAC key.)
        let _ = writeln!(
            s,
            "  a new account bound to the external account {:?}",
            eab.kid
        );
    }
}

/// `[proxy]`: the PROXY protocol listeners and whose forwarding headers
/// count.
fn proxy(c: &Config, s: &mut String) {
    let p = &c.proxy;
    // (Always none without the cargo feature `ops`, which refuses [proxy].)
    if !cfg!(feature = "ops")
        || p.listen.is_empty() && p.tls_listen.is_empty() && p.trusted.is_empty()
    {
        let _ = writeln!(s, "proxy: none (the client is the connection's peer)");
        return;
    }
    if !p.listen.is_empty() {
        let _ = writeln!(
            s,
            "proxy: listen {} (a PROXY protocol v1 or v2 header required on every connection)",
            joined(&p.listen, ", ")
        );
    }
    if !p.tls_listen.is_empty() {
        let _ = writeln!(
            s,
            "proxy: tls_listen {} (a PROXY protocol v1 or v2 header, then TLS, on every connection)",
            joined(&p.tls_listen, ", ")
        );
    }
    if p.trusted.is_empty() {
        let _ = writeln!(
            s,
            "proxy: trusted none (Forwarded and X-Forwarded-* are ignored)"
        );
    } else {
        let _ = writeln!(
            s,
            "proxy: trusted {} (their {} names the client)",
            joined(&p.trusted.0, ", "),
            match p.header {
                crate::access::proxy::forwarded::By::XForwardedFor => {
                    "X-Forwarded-For, with X-Forwarded-Proto,"
                }
                crate::access::proxy::forwarded::By::Forwarded => "Forwarded",
            }
        );
    }
}

/// What each site has: a site's section is given the server's
/// configuration and the site's own. (Servlets last: see
/// [`default_servlets`].)
const SITE_SECTIONS: [fn(&Config, &SiteConfig, &mut String); 13] = [
    static_files,
    compress,
    mime,
    headers,
    throttles,
    cgi,
    upstreams,
    webdav,
    admission,
    auth,
    rules,
    handlers,
    servlets,
];

/// The default site's rules (its root is with the server's), unindented.
fn default_site(c: &Config, s: &mut String) {
    for section in SITE_SECTIONS {
        section(c, &c.site, s);
    }
}

/// Each `[[site]]`: its hosts and root, then its sections indented;
/// and what a host no site names gets.
fn sites(c: &Config, s: &mut String) {
    // (Never any without the cargo feature `sites`, which refuses them.)
    // (With no site and no hosts, a host is looked at only to be refused:
    // said too.)
    let refuses = c.unknown_host != super::UnknownHost::Default;
    if !cfg!(feature = "sites") || c.sites.is_empty() && c.site.hosts.is_empty() && !refuses {
        return;
    }
    let unknown = match c.unknown_host {
        super::UnknownHost::Default => "the default site".to_string(),
        super::UnknownHost::Refuse(status) => format!("{status}"),
    };
    let _ = writeln!(
        s,
        "sites: {} besides the default one; a host no site names gets {unknown}",
        c.sites.len()
    );
    for (i, site) in c.sites.iter().enumerate() {
        let _ = writeln!(
            s,
            "site[{}]: hosts {}; root {}",
            i + 1,
            site.hosts.join(", "),
            site.root.display()
        );
        let mut own = String::new();
        for section in SITE_SECTIONS {
            section(c, site, &mut own);
        }
        for line in own.lines() {
            let _ = writeln!(s, "  {line}");
        }
    }
}

fn static_files(c: &Config, site: &SiteConfig, s: &mut String) {
    let st = &site.static_files;
    let on = |b: bool| if b { "on" } else { "off" };
    let dotfiles = match st.dotfiles {
        super::Dotfiles::Deny => "deny (403)",
        super::Dotfiles::Ignore => "ignore (404)",
        super::Dotfiles::Allow => "allow",
    };
    let index = if st.index.is_empty() {
        "none".to_string()
    } else {
        st.index.join(", ")
    };
    let _ = writeln!(
        s,
        "static: index {index}; autoindex {}; dotfiles {dotfiles}; precompressed {}; \
         symlinks outside the root {}",
        on(st.autoindex),
        on(st.precompressed),
        if st.symlinks_outside_root {
            "followed"
        } else {
            "refused"
        },
    );
    let cache = if st.open_file_cache == 0 {
        "off".to_string()
    } else {
        format!(
            "{} files per worker, checked every {}",
            st.open_file_cache,
            duration(st.open_file_cache_valid)
        )
    };
    if std::ptr::eq(site, &c.site) {
        // (Server-wide: one cache per worker for every site.)
        let _ = writeln!(s, "  open-file cache: {cache}");
    }
    let types = match &st.mime_types {
        Some(f) => format!(
            "{} types from {}, then the built-in table",
            f.types.len(),
            f.path.display()
        ),
        None => "the built-in table".to_string(),
    };
    let sniff = match st.sniff {
        true => " (files without an extension: sniffed from their first bytes first)",
        false => "",
    };
    let _ = writeln!(s, "  types: {types}; otherwise {}{sniff}", st.default_type);
    if !st.query_in_filename.is_empty() {
        let _ = writeln!(
            s,
            "  query in the file name under: {}",
            st.query_in_filename.join(", ")
        );
    }
    super::rules::fallback(st, s);
}

fn rules(_: &Config, site: &SiteConfig, s: &mut String) {
    super::rules::describe(&site.rules, s);
}

fn mime(_: &Config, site: &SiteConfig, s: &mut String) {
    rule_set(s, "mime overrides", &site.mime, |(ext, ty)| {
        format!(".{ext}: {ty}")
    });
}

fn headers(_: &Config, site: &SiteConfig, s: &mut String) {
    rule_set(s, "headers", &site.headers, |rule| {
        let set: Vec<String> = rule.set.iter().map(|(n, v)| format!("{n}: {v}")).collect();
        format!("{}: {}", matcher(&rule.matcher), set.join("; "))
    });
}

fn throttles(_: &Config, site: &SiteConfig, s: &mut String) {
    rule_set(s, "throttles", &site.throttle, |rule| {
        let mut rates = Vec::new();
        if let Some(r) = rule.rate {
            rates.push(format!("{}/s shared by all its clients", size(r)));
        }
        if let Some(r) = rule.connection_rate {
            rates.push(format!("{}/s per connection", size(r)));
        }
        format!("{}: {}", matcher(&rule.matcher), rates.join(", "))
    });
}

fn cgi(c: &Config, site: &SiteConfig, s: &mut String) {
    rule_set(s, "cgi", &site.cgi, |rule| {
        let mut line = match &rule.target {
            CgiTarget::Dir { url, dir } => format!("url {url}: scripts in {}", dir.display()),
            CgiTarget::Program { url, program } => {
                format!("url {url}: the program {}", program.display())
            }
            CgiTarget::Pattern(p) => format!("pattern {p}: scripts beneath the root"),
        };
        if let Some(i) = &rule.interpreter {
            let _ = write!(line, ", run by {}", i.display());
        }
        if !rule.env.is_empty() {
            // Names only: values may be secrets.
            let _ = write!(line, ", env {}", joined(rule.env.iter().map(|e| &e.0), " "));
        }
        if !rule.writable.is_empty() {
            let dirs = joined(rule.writable.iter().map(|p| p.display()), ", ");
            let _ = write!(line, ", may write beneath {dirs}");
        }
        if let Some(n) = rule.max_body {
            let _ = write!(line, ", bodies up to {}", size(n));
        }
        line
    });
    if !site.cgi.is_empty() {
        let _ = writeln!(
            s,
            "  chunked request bodies held in {} (past 64 KiB)",
            c.temp_dir.display()
        );
    }
}

/// `[[reverse_proxy]]` and `[[fastcgi]]` (not even `none` without the
/// cargo feature `upstreams`, which refuses them).
fn upstreams(_: &Config, site: &SiteConfig, s: &mut String) {
    if !cfg!(feature = "upstreams") {
        return;
    }
    rule_set(s, "reverse proxy", &site.reverse_proxy, |r| {
        let strip = if r.strip_prefix {
            " (prefix stripped)"
        } else {
            ""
        };
        let mut line = format!(
            "{}{strip}: to {}",
            matcher(&r.matches),
            upstream_list(&r.to, true)
        );
        if r.to.len() > 1 {
            let balance = match r.balance {
                Balance::RoundRobin => "round_robin",
                Balance::LeastConn => "least_conn",
                Balance::IpHash => "ip_hash",
                Balance::First => "first",
            };
            let _ = write!(line, " by {balance}");
        }
        let times = [r.connect_timeout, r.read_timeout, r.send_timeout];
        line.push_str(&timeouts_of(times));
        match r.max_fails {
            0 => line.push_str("; never marked down"),
            // (Skipping a rule's only upstream would turn one failure into
            // fail_timeout of 503s: see `proxy::balance`.)
            _ if r.to.len() == 1 => line.push_str("; never marked down (the only upstream)"),
            n => {
                let failures = if n == 1 { "failure" } else { "failures" };
                let _ = write!(
                    line,
                    "; down after {n} {failures} for {}",
                    duration(r.fail_timeout)
                );
            }
        }
        if let Some(h) = &r.health {
            let _ = write!(
                line,
                "; health GET {} every {}",
                h.path,
                duration(h.interval)
            );
        }
        edits(&mut line, "request headers", &r.headers);
        edits(&mut line, "answer headers", &r.response_headers);
        if r.host == HostMode::Upstream {
            line.push_str("; Host the upstream's");
        }
        if r.server == ServerMode::Brisk {
            line.push_str("; Server brisk's");
        }
        if r.via {
            line.push_str("; Via added");
        }
        if !r.websocket {
            line.push_str("; no WebSocket");
        }
        if r.buffer_request {
            line.push_str("; request bodies held whole first");
        }
        line.push_str(&held_ahead(r.buffer_answer));
        if r.to
            .iter()
            .any(|u| matches!(u, Upstream::Tcp { tls: true, .. }))
        {
            if !r.tls_verify {
                line.push_str("; certificates NOT verified");
            }
            if let Some(ca) = &r.ca {
                let _ = write!(line, "; extra roots from {}", ca.display());
            }
        }
        line.push_str(&kept(r.keepalive, r.keepalive_timeout));
        line.push_str(&bodies(r.max_body));
        line
    });
    rule_set(s, "fastcgi", &site.fastcgi, |r| {
        let mut line = format!(
            "{}: to {}",
            matcher(&r.matches),
            upstream_list(&r.to, false)
        );
        if let Some(index) = &r.index {
            let _ = write!(line, "; index {index}");
        }
        if let Some(split) = &r.split_path {
            let _ = write!(line, "; PATH_INFO after {split}");
        }
        if let Some(fallback) = &r.fallback {
            let _ = write!(line, "; else {fallback}");
        }
        if let Some(root) = &r.root {
            let _ = write!(line, "; scripts in {}", root.display());
        }
        if !r.env.is_empty() {
            // Names only: values may be secrets.
            let _ = write!(line, "; env {}", joined(r.env.iter().map(|e| &e.0), " "));
        }
        line.push_str(&timeouts_of([
            r.connect_timeout,
            r.read_timeout,
            r.send_timeout,
        ]));
        line.push_str(&kept(r.keepalive, r.keepalive_timeout));
        if !r.buffer_request {
            line.push_str("; request bodies streamed");
        }
        line.push_str(&held_ahead(r.buffer_answer));
        line.push_str(&bodies(r.max_body));
        line
    });
}

/// `http://app:80 (10.0.0.5:80), unix:/run/app.sock` (`scheme`: with
/// `http://` or `https://`, as `[[reverse_proxy]]` writes them).
fn upstream_list(to: &[Upstream], scheme: bool) -> String {
    let one = |u: &Upstream| match u {
        Upstream::Unix(p) => format!("unix:{}", p.display()),
        Upstream::Tcp {
            addr,
            also,
            host,
            tls,
            ..
        } => {
            let scheme = match (scheme, tls) {
                (false, _) => "",
                (true, false) => "http://",
                (true, true) => "https://",
            };
            let literal = host.trim_matches(['[', ']']).parse() == Ok(addr.ip());
            let resolved = if literal {
                String::new()
            } else {
                let all: Vec<String> = std::iter::once(addr)
                    .chain(also.iter())
                    .map(|a| a.to_string())
                    .collect();
                format!(" ({})", all.join(", then "))
            };
            format!("{scheme}{host}:{}{resolved}", addr.port())
        }
    };
    to.iter().map(one).collect::<Vec<_>>().join(", ")
}

/// `; timeouts connect 5s, read 60s, send 60s`.
/// `[[webdav]]` (nothing at all without rules, as before the feature).
fn webdav(c: &Config, site: &SiteConfig, s: &mut String) {
    #[cfg(not(feature = "webdav"))]
    let _ = c;
    // (Where names are found whatever their case: see `SiteConfig::folding`.)
    if cfg!(feature = "webdav") && !site.folding.is_empty() {
        let _ = writeln!(
            s,
            "any case: {} (names found whatever their case: rules match paths there in any case)",
            joined(site.folding.areas(), ", ")
        );
    }
    if site.webdav.is_empty() {
        return;
    }
    rule_set(s, "webdav", &site.webdav, |r| {
        let mut line = format!("{} -> {}", r.path, r.root.display());
        #[cfg(feature = "webdav")]
        let refused = super::webdav::cannot_write(c, r).is_some();
        #[cfg(not(feature = "webdav"))]
        let refused = false;
        line.push_str(if r.read_only {
            "; read-only"
        } else if refused {
            // (The warning at the end says why.)
            "; writable by the configuration, but see the warning about it below"
        } else {
            "; writable"
        });
        if let Some(n) = r.max_upload {
            line.push_str("; uploads up to ");
            line.push_str(&size(n));
        }
        if r.locks {
            line.push_str("; locks");
        }
        if r.listing_cache.is_zero() {
            line.push_str("; listings not cached");
        } else if r.listing_cache != crate::config::LISTING_CACHE {
            line.push_str("; listings cached ");
            line.push_str(&duration(r.listing_cache));
        }
        if !r.fsync {
            line.push_str("; no fsync");
        }
        match r.properties {
            crate::config::PropStore::Auto => {}
            crate::config::PropStore::Xattr => line.push_str("; properties in xattrs"),
            crate::config::PropStore::Sidecar => line.push_str("; properties in .brisk-props"),
        }
        line
    });
}

fn timeouts_of([connect, read, send]: [Duration; 3]) -> String {
    format!(
        "; timeouts connect {}, read {}, send {}",
        duration(connect),
        duration(read),
        duration(send)
    )
}

/// `; bodies up to 1GiB` for a rule's own `max_body`.
fn bodies(max: Option<u64>) -> String {
    max.map(|n| format!("; bodies up to {}", size(n)))
        .unwrap_or_default()
}

/// `buffer_answer`, when not the default.
fn held_ahead(n: u64) -> String {
    match n {
        0 => "; answers read as the client takes them".to_string(),
        crate::config::BUFFER_ANSWER => String::new(),
        n => format!("; answers held up to {}", size(n)),
    }
}

/// `; 32 idle connections kept 60s`.
fn kept(n: usize, idle: Duration) -> String {
    match n {
        0 => "; no idle connections kept".to_string(),
        n => format!("; {n} idle connections kept {}", duration(idle)),
    }
}

/// `; request headers set X-A, remove X-B` (names only: values may be
/// secrets).
fn edits(line: &mut String, what: &str, e: &HeaderEdits) {
    if e.is_empty() {
        return;
    }
    let mut parts = Vec::new();
    if !e.set.is_empty() {
        parts.push(format!("set {}", joined(e.set.iter().map(|e| &e.0), ", ")));
    }
    if !e.remove.is_empty() {
        parts.push(format!("remove {}", joined(&e.remove, ", ")));
    }
    let _ = write!(line, "; {what} {}", parts.join(", "));
}

/// `[[access]]` and `[[rate_limit]]`, in the order they are checked.
fn admission(_: &Config, site: &SiteConfig, s: &mut String) {
    rule_set(s, "access", &site.admission.access, |rule| {
        let entries: Vec<String> = rule
            .entries
            .iter()
            .map(|(range, allow)| format!("{} {range}", if *allow { "allow" } else { "deny" }))
            .collect();
        let rest = if rule.rest_allowed { "allow" } else { "deny" };
        let line = rule.origin.rsplit_once(':').map_or("?", |(_, l)| l);
        format!(
            "{}: {}, then {rest} the rest (line {line})",
            matcher(&rule.matcher),
            entries.join(", ")
        )
    });
    rule_set(s, "rate limits", &site.admission.rate, |rule| {
        let by = match rule.key {
            RateKey::Address => "client address",
            RateKey::AddressPath => "client address and path",
        };
        format!(
            "{}: {} per {by}, burst {}",
            matcher(&rule.matcher),
            rule.rate_text,
            rule.burst
        )
    });
}

fn auth(_: &Config, site: &SiteConfig, s: &mut String) {
    rule_set(s, "auth", &site.auth, |rule| {
        let (before, list, after) = match &rule.methods {
            AuthMethods::All => ("", "", ""),
            AuthMethods::Only(list) => (" (", &**list, " only)"),
            AuthMethods::Except(list) => (" (all methods but ", &**list, ")"),
        };
        format!(
            "{}{before}{list}{after}: realm {:?}, users from {}{}",
            matcher(&rule.matcher),
            rule.realm,
            rule.htpasswd.display(),
            if rule.allow_plaintext {
                ", plaintext passwords allowed"
            } else {
                ""
            }
        )
    });
}

/// Named handlers, after the site's rules and before its servlets, as
/// they are mounted.
fn handlers(_: &Config, site: &SiteConfig, s: &mut String) {
    rule_set(s, "handlers", &site.handlers, |rule| {
        // Keys only: values may be secrets (a database password).
        let keys: Vec<&str> = rule.config.keys().collect();
        match keys.is_empty() {
            true => format!("path {}: {}", rule.path, rule.handler),
            false => format!(
                "path {}: {}, config {}",
                rule.path,
                rule.handler,
                keys.join(" ")
            ),
        }
    });
}

fn servlets(_: &Config, site: &SiteConfig, s: &mut String) {
    let v = &site.servlets;
    if !v.enable {
        let _ = writeln!(s, "servlets: off");
        return;
    }
    let keys: Vec<&str> = v.config.keys().collect();
    let _ = writeln!(
        s,
        "servlets: *.lua under {}; per request {} of CPU and {} of output; {} per worker's Lua state; brisk.shared {}{}",
        v.paths.join(", "),
        duration(v.cpu_time),
        size(v.max_output),
        size(v.memory),
        size(v.shared_memory),
        match keys.is_empty() {
            true => String::new(),
            false => format!("; config {}", keys.join(" ")),
        }
    );
}

/// `[limits]` as (key, value) pairs, for the ones that differ from the
/// defaults.
fn limit_values(l: &Limits) -> Vec<(&'static str, String)> {
    vec![
        ("max_request_line", size(l.max_request_line as u64)),
        ("max_header_bytes", size(l.max_header_bytes as u64)),
        ("max_headers", l.max_headers.to_string()),
        ("max_body", size(l.max_body)),
        ("keepalive_requests", l.keepalive_requests.to_string()),
        ("max_connections", l.max_connections.to_string()),
        (
            "max_connections_per_ip",
            l.max_connections_per_ip.to_string(),
        ),
        ("cgi_processes", l.cgi_processes.to_string()),
        ("cgi_header_bytes", size(l.cgi_header_bytes as u64)),
        ("handler_bodies", size(l.handler_bodies)),
        ("auth_failures", l.auth_failures.to_string()),
    ]
}

/// `[timeouts]` as (key, value) pairs.
fn timeout_values(t: &Timeouts) -> Vec<(&'static str, String)> {
    vec![
        ("header", duration(t.header)),
        ("keepalive", duration(t.keepalive)),
        ("send", duration(t.send)),
        ("body", duration(t.body)),
        ("shutdown", duration(t.shutdown)),
        (
            "reload_drain",
            t.reload_drain.map_or("none".to_string(), duration),
        ),
        ("cgi", duration(t.cgi)),
        ("handler", duration(t.handler)),
        ("auth_failure_window", duration(t.auth_failure_window)),
        ("defer_accept", duration(t.defer_accept)),
        ("stop_delay", duration(t.stop_delay)),
    ]
}

/// `[http2]`: where it is spoken, and the limits that differ from the
/// defaults.
fn http2(c: &Config, s: &mut String) {
    let h = &c.http2;
    let on = match (h.enable, h.cleartext) {
        (false, false) => "off",
        (true, false) => "on TLS listeners (ALPN h2); not in cleartext",
        (false, true) => "h2c with prior knowledge on plain listeners; not on TLS",
        (true, true) => "on TLS listeners (ALPN h2) and as h2c with prior knowledge on plain ones",
    };
    let _ = writeln!(s, "http2: {on}");
    // (Said only when on: a UDP service is there only when asked for.)
    #[cfg(feature = "http3")]
    if c.http3.enable {
        let q = &c.http3;
        let _ = writeln!(
            s,
            "http3: QUIC on the UDP port of every TLS listener (ALPN h3); at most {} streams a connection, idle timeout {}, Retry above {} connections a worker, closed past {} streams cancelled (RESET_STREAM, STOP_SENDING) in {}",
            q.max_streams,
            duration(q.idle_timeout),
            q.retry_above,
            q.max_cancels,
            duration(q.flood_window)
        );
    }
    if h.enable || h.cleartext {
        let default = super::http2::defaults();
        changed(
            s,
            "http2 limits",
            super::http2::values(h),
            super::http2::values(&default),
        );
    }
}

/// `[compress]`: off, or what is compressed, how, and the cache.
fn compress(_: &Config, site: &SiteConfig, s: &mut String) {
    let _ = writeln!(s, "{}", super::compress::summary(&site.compress));
}

fn limits(c: &Config, s: &mut String) {
    changed(
        s,
        "limits",
        limit_values(&c.limits),
        limit_values(&Config::default().limits),
    );
}

fn timeouts(c: &Config, s: &mut String) {
    changed(
        s,
        "timeouts",
        timeout_values(&c.timeouts),
        timeout_values(&Config::default().timeouts),
    );
}

/// `name: the defaults`, or the values that differ from them.
fn changed(
    s: &mut String,
    name: &str,
    now: Vec<(&'static str, String)>,
    default: Vec<(&'static str, String)>,
) {
    let diff: Vec<String> = now
        .into_iter()
        .zip(default)
        .filter(|(a, b)| a.1 != b.1)
        .map(|((key, value), (_, was))| format!("{key} {value} (default {was})"))
        .collect();
    if diff.is_empty() {
        let _ = writeln!(s, "{name}: the defaults");
    } else {
        let _ = writeln!(s, "{name}: {}", diff.join(", "));
    }
}

fn logs(c: &Config, s: &mut String) {
    let l = &c.log;
    let fields: Vec<&str> = l.fields.iter().map(|f| f.as_str()).collect();
    let _ = writeln!(
        s,
        "access log: {} ({}{}{})",
        target_name(&l.access),
        l.format.as_str(),
        if fields.is_empty() { "" } else { ", then " },
        fields.join(", ")
    );
    let _ = writeln!(
        s,
        "error log: {} (level {})",
        target_name(&l.error),
        l.level.as_str()
    );
}

fn process(c: &Config, s: &mut String) {
    if c.daemon {
        s.push_str("daemon: yes\n");
    }
    if let Some(p) = &c.pid_file {
        let _ = writeln!(s, "pid file: {}", p.display());
    }
    if let Some(j) = &c.chroot {
        let _ = writeln!(s, "chroot: {}", j.display());
    }
    // (A build without the cargo feature `ops` has no upgrades to mention.)
    if cfg!(feature = "ops") && !c.upgrade {
        s.push_str("upgrade: off (SIGUSR2 starts no new binary)\n");
    }
}

/// Who serves: the configured user, the `nobody` default when started as
/// root, root itself with `allow_root`, or whoever started brisk.
fn identity(c: &Config, s: &mut String) {
    let euid = privileges::euid();
    let user = match (&c.user, c.default_user()) {
        (Some(u), _) => u.clone(),
        (None, Some(nobody)) => {
            let _ = writeln!(
                s,
                "user: nobody (uid {}): started as root with no user set, brisk serves as nobody",
                nobody.uid
            );
            if let Some(gid) = nobody.gid {
                let _ = writeln!(s, "group: gid {gid} (nobody's primary group)");
            }
            return;
        }
        (None, None) if euid == 0 && c.allow_root => {
            s.push_str("user: root (allow_root): brisk serves as root\n");
            return;
        }
        (None, None) if euid == 0 => {
            s.push_str(
                "user: none, and no nobody account: started as root, brisk would refuse to \
                 start; set user = \"NAME\" or allow_root = true\n",
            );
            return;
        }
        (None, None) => {
            let name = privileges::user_name(euid).unwrap_or_else(|| euid.to_string());
            let _ = writeln!(
                s,
                "user: {name} (uid {euid}), the user that started brisk (no switch)"
            );
            return;
        }
    };
    let _ = writeln!(s, "user: {} (uid {})", user.name, user.uid);
    match (&c.group, user.gid) {
        (Some(g), _) => {
            let _ = writeln!(s, "group: {} (gid {})", g.name, g.gid);
        }
        (None, Some(gid)) => {
            let _ = writeln!(s, "group: gid {gid} (the user's primary group)");
        }
        (None, None) => {}
    }
}

/// The sandbox as this kernel will apply it.
fn confinement(c: &Config, s: &mut String) {
    if !c.sandbox {
        s.push_str("sandbox: off: no Landlock, no seccomp filter\n");
        return;
    }
    s.push_str("sandbox: on\n");
    match sandbox::landlock_abi() {
        Some(abi) => {
            let mut reads = vec![match c.sites.is_empty() {
                true => "the document root",
                false => "every site's document root",
            }];
            if c.any_cgi() {
                reads.push("the CGI directories and programs");
            }
            if SiteConfig::all(c).any(|site| !site.auth.is_empty()) {
                reads.push("the htpasswd files' directories");
            }
            if c.config_file.is_some() {
                reads.push("the configuration file's directory");
            }
            if c.tls.is_some() {
                reads.push("the TLS files' directories (brisk-priv's when brisk starts as root)");
            }
            let files = [&c.log.access, &c.log.error]
                .into_iter()
                .any(|t| matches!(t, LogTarget::File(_)));
            let mut places = Vec::new();
            if files {
                places.push("the log files".to_string());
            }
            if c.any_cgi() {
                places.push(format!("unnamed files in {}", c.temp_dir.display()));
            }
            let dav: Vec<_> = SiteConfig::all(c)
                .flat_map(|site| site.webdav.iter())
                .collect();
            if !dav.is_empty() {
                reads.push("the WebDAV trees");
            }
            let writable: Vec<String> = dav
                .iter()
                .filter(|r| !r.read_only)
                .map(|r| r.root.display().to_string())
                .collect();
            if !writable.is_empty() {
                places.push(format!("the WebDAV trees {}", writable.join(", ")));
            }
            // As the running server's line says (`sandbox::writes`).
            if let Some(a) = c.acme() {
                places.push(format!("the ACME storage {}", a.storage.display()));
            }
            if let Some(dir) = c
                .tls
                .as_ref()
                .and_then(|t| t.ticket_keys())
                .and_then(|k| k.file.parent())
            {
                places.push(format!("the ticket keys' directory {}", dir.display()));
            }
            let writes = match places.is_empty() {
                true => "nowhere".to_string(),
                false => format!("only to {}", places.join(" and ")),
            };
            let reads = match reads.split_last() {
                Some((last, rest)) if !rest.is_empty() => {
                    format!("{} and {last}", rest.join(", "))
                }
                _ => reads.join(""),
            };
            let tcp = sandbox::tcp_confinement(abi, c.connect_ports().as_deref());
            let _ = writeln!(
                s,
                "  Landlock (kernel ABI {abi}): reads beneath {reads}; writes {writes}; {tcp}"
            );
        }
        None => s.push_str("  Landlock: not offered by this kernel; brisk runs without it\n"),
    }
    s.push_str(match crate::sys::fs::walks_paths_itself() {
        false => "  paths: opened beneath each root by the kernel (openat2, RESOLVE_BENEATH)\n",
        true => {
            "  paths: walked by brisk one name at a time beneath each root (openat2 is \
             missing: Linux before 5.6, or a seccomp profile that refuses it)\n"
        }
    });
    if sandbox::seccomp_supported() {
        s.push_str("  seccomp: only the system calls brisk makes while serving\n");
    } else {
        s.push_str("  seccomp: no filter for this architecture; brisk runs without it\n");
    }
    if c.any_cgi() {
        s.push_str(
            "  CGI programs start from a launcher process with a sandbox of its own: they may \
             also read and run the system directories, and connect anywhere; no seccomp \
             filter\n",
        );
    }
}

/// `name: none`, or `name: N rule(s)` and one indented line per rule.
fn rule_set<T>(s: &mut String, name: &str, rules: &[T], line: impl Fn(&T) -> String) {
    match rules.len() {
        0 => {
            let _ = writeln!(s, "{name}: none");
        }
        n => {
            let _ = writeln!(s, "{name}: {n} {}", if n == 1 { "rule" } else { "rules" });
            for r in rules {
                let _ = writeln!(s, "  {}", line(r));
            }
        }
    }
}

/// `items` one after the other, `sep` between them.
fn joined<T: std::fmt::Display>(items: impl IntoIterator<Item = T>, sep: &str) -> String {
    let mut out = String::new();
    for (i, item) in items.into_iter().enumerate() {
        if i > 0 {
            out.push_str(sep);
        }
        let _ = write!(out, "{item}");
    }
    out
}

fn matcher(m: &PathMatch) -> String {
    match m {
        PathMatch::Prefix(p) => format!("path {p}"),
        PathMatch::Glob(g) => format!("pattern {g}"),
    }
}

fn target_name(t: &LogTarget) -> String {
    match t {
        LogTarget::Off => "off".to_string(),
        LogTarget::Stdout => "stdout".to_string(),
        LogTarget::Stderr => "stderr".to_string(),
        LogTarget::File(p) => p.display().to_string(),
    }
}

/// Bytes in the config file's own syntax: `16KiB`, `1MiB`, `1000`.
fn size(n: u64) -> String {
    for (unit, shift) in [("GiB", 30), ("MiB", 20), ("KiB", 10)] {
        if n >= 1 << shift && n.is_multiple_of(1 << shift) {
            return format!("{}{unit}", n >> shift);
        }
    }
    n.to_string()
}

/// A duration in the config file's own syntax: `20s`, `250ms`.
fn duration(d: Duration) -> String {
    if d.subsec_millis() == 0 {
        format!("{}s", d.as_secs())
    } else {
        format!("{}ms", d.as_millis())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_read_as_written() {
        assert_eq!(size(16384), "16KiB");
        assert_eq!(size(1 << 20), "1MiB");
        assert_eq!(size(3 << 30), "3GiB");
        assert_eq!(size(1000), "1000");
        assert_eq!(size(0), "0");
        assert_eq!(duration(Duration::from_secs(20)), "20s");
        assert_eq!(duration(Duration::ZERO), "0s");
        assert_eq!(duration(Duration::from_millis(250)), "250ms");
        assert_eq!(duration(Duration::from_millis(1500)), "1500ms");
    }

    #[test]
    fn only_changed_values_are_listed() {
        let mut s = String::new();
        let c = Config::default();
        limits(&c, &mut s);
        assert_eq!(s, "limits: the defaults\n");
        let mut c = Config::default();
        c.limits.max_body = 10 << 20;
        c.timeouts.header = Duration::from_secs(5);
        let mut s = String::new();
        limits(&c, &mut s);
        timeouts(&c, &mut s);
        assert_eq!(
            s,
            "limits: max_body 10MiB (default 1MiB)\ntimeouts: header 5s (default 20s)\n"
        );
        c.timeouts.reload_drain = Some(Duration::from_secs(30));
        let mut s = String::new();
        timeouts(&c, &mut s);
        assert_eq!(
            s,
            "timeouts: header 5s (default 20s), reload_drain 30s (default none)\n"
        );
    }
}
