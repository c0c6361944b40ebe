//! The per-site keys, read by one function for the top level (the default
//! site) and for each `[[site]]` / `[[vhost]]` table, so that a key added
//! here works in both places; and a site's `hosts`.

use toml::de::{DeString, DeValue};
use toml::Spanned;

use super::load::{Loader, SiteOrigins, REMOVE, SERVER_WIDE_SITE_KEYS, UPSTREAMS};
use super::{ConfigError, SiteConfig};

impl Loader<'_> {
    /// One per-site key (one of `load::SITE_KEYS` but `hosts`) into `site`.
    #[cold]
    pub(super) fn site_key(
        &self,
        key: &Spanned<DeString<'_>>,
        value: &Spanned<DeValue<'_>>,
        site: &mut SiteConfig,
        origins: &mut SiteOrigins,
    ) -> Result<(), ConfigError> {
        let name = key.get_ref().as_ref();
        if !self.prefix.is_empty() {
            self.refuse_server_wide(name, value)?;
        }
        match name {
            "root" => {
                site.root = self.path("root", value)?;
                origins.root = Some(self.origin("root", value));
            }
            "static" => self.static_section(value, site, origins)?,
            "mime" => site.mime = self.mime(value)?,
            "headers" => site.headers = self.headers(value)?,
            "cgi" => {
                let (rules, where_) = self.cgi(value)?;
                site.cgi = rules;
                origins.cgi = where_;
            }
            "throttle" => site.throttle = self.throttles(value)?,
            "auth" => site.auth = self.auth(value)?,
            "handlers" => site.handlers = self.handlers(value)?,
            "servlets" => self.servlets(value, &mut site.servlets)?,
            "redirect" | "rewrite" => {
                let what = "redirect and rewrite rules";
                require!(self, "sites", key, name, what, REMOVE);
                let rules = self.url_rules(name, value, name == "redirect")?;
                site.rules.url.extend(rules);
                super::rules::in_file_order(&mut site.rules.url);
            }
            "errors" => {
                require!(self, "sites", key, name, "error pages", REMOVE);
                site.rules.errors = self.error_pages(value)?
            }
            "cors" => {
                require!(self, "sites", key, name, "CORS rules", REMOVE);
                site.rules.cors = self.cors_rules(value)?
            }
            "reverse_proxy" => {
                require!(self, "upstreams", key, name, UPSTREAMS, REMOVE);
                #[cfg(feature = "upstreams")]
                {
                    site.reverse_proxy = self.reverse_proxies(value)?;
                    origins.reverse_proxy = self.table_origins(name, value);
                }
            }
            "fastcgi" => {
                require!(self, "upstreams", key, name, UPSTREAMS, REMOVE);
                #[cfg(feature = "upstreams")]
                {
                    site.fastcgi = self.fastcgi(value)?;
                    origins.fastcgi = self.table_origins(name, value);
                }
            }
            "webdav" => {
                require!(self, "webdav", key, name, "WebDAV", REMOVE);
                #[cfg(feature = "webdav")]
                {
                    site.webdav = self.each_table(name, value, |s, i, t| {
                        origins.webdav.push(self.origin(&format!("{s}.root"), i));
                        self.webdav_rule(s, i, t)
                    })?
                }
            }
            "compress" => self.compress(value, &mut site.compress)?,
            "access" => site.admission.access = self.access_rules(value)?,
            "rate_limit" => site.admission.rate = self.rate_rules(value)?,
            _ => return Err(self.unknown(key, "", super::load::SITE_KEYS)),
        }
        Ok(())
    }

    /// Inside a `[[site]]`, the keys of a per-site table that tune what
    /// every site shares (`static.open_file_cache`, …) are errors.
    fn refuse_server_wide(
        &self,
        section: &str,
        v: &Spanned<DeValue<'_>>,
    ) -> Result<(), ConfigError> {
        let Some(table) = v.get_ref().as_table() else {
            return Ok(());
        };
        for (key, _) in table.iter() {
            let full = format!("{section}.{}", key.get_ref().as_ref());
            if SERVER_WIDE_SITE_KEYS.contains(&full.as_str()) {
                return Err(self.fail(
                    key,
                    &full,
                    "is server-wide (every site shares it): set it at the top level of the file, outside every [[site]]",
                ));
            }
        }
        Ok(())
    }

    /// `hosts`: a name or a list of names, each made canonical by
    /// [`host_name`]; `taken` are the other sites' names, which none may
    /// repeat.
    pub(super) fn hosts(
        &self,
        v: &Spanned<DeValue<'_>>,
        taken: &[SiteConfig],
    ) -> Result<Vec<String>, ConfigError> {
        let mut out: Vec<String> = Vec::new();
        for (s, item) in self.strings("hosts", v)? {
            let name = host_name(s).map_err(|why| self.expected(item, "hosts", why))?;
            let twice = out.contains(&name);
            let elsewhere = taken.iter().position(|site| site.hosts.contains(&name));
            if twice || elsewhere.is_some() {
                let msg = match elsewhere {
                    Some(i) => format!("{name} is already a host of site[{}]", i + 1),
                    None => format!("{name} is listed twice"),
                };
                return Err(self.fail(item, "hosts", &msg));
            }
            out.push(name);
        }
        if out.is_empty() {
            return Err(self.expected(v, "hosts", "at least one host name"));
        }
        Ok(out)
    }
}

impl Loader<'_> {
    /// `unknown_host`: `"default"`, 421 or 404.
    pub(super) fn unknown_host(
        &self,
        v: &Spanned<DeValue<'_>>,
    ) -> Result<super::UnknownHost, ConfigError> {
        use super::UnknownHost;
        let what = "\"default\" (the top-level site answers), 421 or 404";
        match v.get_ref() {
            DeValue::String(s) if s.as_ref() == "default" => Ok(UnknownHost::Default),
            DeValue::Integer(_) => match self.integer("unknown_host", v, 0, 999) {
                Ok(n @ (404 | 421)) => Ok(UnknownHost::Refuse(n as u16)),
                _ => Err(self.expected(v, "unknown_host", what)),
            },
            _ => Err(self.expected(v, "unknown_host", what)),
        }
    }
}

/// `unknown_host` refusing (421, 404) while the top level names no
/// `hosts`: the default site then answers no request, and with no
/// `[[site]]` every request gets that status. Valid, but said (at start,
/// at a reload and by `--check-config`): sites.md asks for the default
/// site's `hosts` with it.
#[cfg(feature = "sites")]
pub(super) fn unknown_host_warnings(config: &super::Config) -> Vec<String> {
    let super::UnknownHost::Refuse(status) = config.unknown_host else {
        return Vec::new();
    };
    if !config.site.hosts.is_empty() {
        return Vec::new();
    }
    let line = if config.sites.is_empty() {
        format!(
            "unknown_host = {status} and no site names a host (no hosts, no [[site]]): \
             every request is answered {status}; list the names this server answers in \
             hosts = [\"example.org\"], or leave unknown_host out"
        )
    } else {
        format!(
            "unknown_host = {status} and the top level names no hosts: the default site \
             (root {}) answers no request, and a host no [[site]] names gets {status}; \
             list the default site's names in hosts = [\"example.org\"] if it is to answer",
            config.site.root.display()
        )
    };
    vec![line]
}

const HOST_HELP: &str = "a host name such as \"example.org\" or \"*.example.org\", or an IP address, without a port or a scheme";

/// A `hosts` entry as the matcher compares it: lower case (names are
/// case-insensitive, RFC 9110 §4.2.3), without the trailing dot of a fully
/// qualified name, IPv6 addresses in brackets as a `Host` header carries
/// them; `*.` only as the whole first label.
pub(crate) fn host_name(s: &str) -> Result<String, &'static str> {
    if let Ok(v6) = s
        .trim_start_matches('[')
        .trim_end_matches(']')
        .parse::<std::net::Ipv6Addr>()
    {
        return Ok(format!("[{v6}]"));
    }
    let lower = s.to_ascii_lowercase();
    let name = lower.strip_suffix('.').unwrap_or(&lower);
    let labels = name.strip_prefix("*.").unwrap_or(name);
    if !s.is_ascii() {
        return Err("a host name in ASCII: write an internationalised name in its xn-- form");
    }
    let label_ok = |l: &str| {
        !l.is_empty()
            && l.len() <= 63
            && l.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    };
    if name.len() > 253 || !labels.split('.').all(label_ok) {
        return Err(HOST_HELP);
    }
    Ok(name.to_string())
}
