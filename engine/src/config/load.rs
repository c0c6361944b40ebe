//! TOML document → [`Config`], with errors that name file, line and key.
//!
//! The document is parsed into toml's spanned tree (`DeTable`) rather than
//! deserialized through serde derives: every value keeps its byte span, so
//! each error can point at its line, and unknown keys, types and ranges are
//! checked by hand with messages that say what is allowed. It also keeps the
//! binary smaller than a derive per section would.

use std::net::SocketAddr;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::time::Duration;

use toml::de::{DeString, DeTable, DeValue};
use toml::Spanned;

use super::units::{self, DURATION_HELP, SIZE_HELP};
use super::{Config, ConfigError, LogTarget};
use crate::http::grammar;

/// One TOML document to load.
pub(crate) struct Source<'a> {
    /// How errors name it: the path as given, or `<built-in>`.
    pub name: &'a str,
    /// The document.
    pub text: &'a str,
    /// Directory that relative paths in the document are relative to.
    pub base: &'a Path,
    /// Says whether a file the configuration names may be read, before it
    /// is (a reload inside the sandbox: why not, naming the way out).
    pub readable: Option<Readable<'a>>,
}

/// See [`Source::readable`]; the error is the caller's (the process
/// layer's sandbox), shown after the file, line and key.
pub(crate) type Readable<'a> = &'a dyn Fn(&Path) -> Result<(), super::Unreadable>;

/// Server-wide keys of the top-level table (those a `[[site]]` may not
/// hold); the top level also takes every key of [`SITE_KEYS`] for the
/// default site: see [`top_keys`].
pub(super) const SERVER_KEYS: &[&str] = &[
    "listen",
    "workers",
    "server_header",
    "daemon",
    "pid_file",
    "log",
    "limits",
    "timeouts",
    "user",
    "group",
    "chroot",
    "allow_root",
    "sandbox",
    "temp_dir",
    "tls",
    "acme",
    "http2",
    "http3",
    "proxy",
    "upgrade",
    "site",
    "vhost",
    "unknown_host",
];

/// Every key of the top-level table, in the order error messages list
/// them: [`SERVER_KEYS`] then [`SITE_KEYS`]. Derived, so that no table
/// the loader takes can be missing from the suggestions.
pub(super) fn top_keys() -> Vec<&'static str> {
    // (Two copies rather than a chained iterator's collect: a tenth of
    // the code.)
    let mut keys = Vec::with_capacity(SERVER_KEYS.len() + SITE_KEYS.len());
    keys.extend_from_slice(SERVER_KEYS);
    keys.extend_from_slice(SITE_KEYS);
    keys
}

/// Keys a `[[site]]` table may hold: `hosts`, and what the top level
/// holds for the default site. Every other top-level key is server-wide.
pub(super) const SITE_KEYS: &[&str] = &[
    "hosts",
    "root",
    "static",
    "mime",
    "headers",
    "cgi",
    "reverse_proxy",
    "fastcgi",
    "webdav",
    "throttle",
    "auth",
    "handlers",
    "servlets",
    "redirect",
    "rewrite",
    "errors",
    "cors",
    "compress",
    "access",
    "rate_limit",
];

/// Keys of `[static]`, `[servlets]` and `[compress]` that size or tune
/// machinery shared by every site (the open-file cache, the socket's
/// sendfile, the Lua state's limits, the compressed variants' cache and
/// its threads): set at the top level only.
pub(super) const SERVER_WIDE_SITE_KEYS: &[&str] = &[
    "static.open_file_cache",
    "static.open_file_cache_valid",
    "static.sendfile",
    "servlets.cpu_time",
    "servlets.memory",
    "servlets.max_output",
    "servlets.shared_memory",
    "compress.cache_size",
    "compress.threads",
];

/// What a refusal of a key of a feature left out says to do.
pub(super) const REMOVE: &str = "remove it, or build with the feature";
/// The same for a switch that turns a feature on.
pub(super) const SET_FALSE: &str = "set it to false, or build with the feature";
/// The subsystems of the cargo features `sites`, `ops` and `upstreams`, as refusals
/// name them.
pub(super) const VHOSTS: &str = "virtual hosts";
/// The subsystem of the cargo feature `upstreams`.
pub(super) const UPSTREAMS: &str = "the reverse proxy and FastCGI";
const PROXY: &str = "the PROXY protocol and trusted proxies";

/// Upper bound for timeouts: anything longer is surely a typo.
pub(super) const MAX_TIMEOUT: Duration = Duration::from_secs(24 * 3600);

pub(super) type Entry<'t, 'i> = (&'t Spanned<DeString<'i>>, &'t Spanned<DeValue<'i>>);

/// Where the settings that are checked against the file system were set,
/// as error prefixes such as `site.toml:4: root`: those checks wait until
/// the command line had its chance to override them.
#[derive(Default)]
pub(crate) struct Origins {
    /// The default site's.
    pub(crate) site: SiteOrigins,
    /// Each `[[site]]`'s, in order.
    pub(crate) sites: Vec<SiteOrigins>,
    pub(crate) daemon: Option<String>,
    pub(crate) pid_file: Option<String>,
    pub(crate) access: Option<String>,
    pub(crate) error: Option<String>,
    pub(crate) user: Option<String>,
    pub(crate) group: Option<String>,
    pub(crate) chroot: Option<String>,
    pub(crate) temp_dir: Option<String>,
    /// Whether the document has a top-level `listen`.
    pub(crate) listen: bool,
    /// Where each address of the top-level `listen` was set.
    pub(crate) listen_at: Vec<(SocketAddr, String)>,
    /// `[tls]`, its certificates not read yet.
    pub(crate) tls: Option<super::tls::TlsSection>,
    /// `[proxy]`, its listeners not checked against the others yet.
    pub(crate) proxy: Option<super::proxy::ProxySection>,
    /// Where `[http3]` is, when the document has one.
    #[cfg(feature = "http3")]
    pub(crate) http3: Option<String>,
    /// `[acme]`, its names not settled yet.
    #[cfg(feature = "acme")]
    pub(crate) acme: Option<super::acme::AcmeSection>,
}

/// [`Origins`] of one site's settings.
#[derive(Default)]
pub(crate) struct SiteOrigins {
    pub(crate) root: Option<String>,
    pub(crate) symlinks: Option<String>,
    /// Per `[[cgi]]` rule: where each path it names was set.
    pub(crate) cgi: Vec<super::cgi::PathOrigins>,
    /// Per `[[webdav]]` rule: where it was set (`file:line: webdav[N].root`).
    pub(crate) webdav: Vec<String>,
    /// Per `[[reverse_proxy]]` and per `[[fastcgi]]` rule: where it was
    /// set (`file:line: fastcgi[N]`).
    pub(crate) reverse_proxy: Vec<String>,
    pub(crate) fastcgi: Vec<String>,
}

/// Loads `src` on top of `config`.
pub(crate) fn load(src: &Source<'_>, config: &mut Config) -> Result<Origins, ConfigError> {
    let doc = DeTable::parse(src.text).map_err(|e| syntax_error(src, &e))?;
    let loader = Loader {
        src,
        prefix: String::new(),
    };
    let mut origins = Origins::default();
    let mut site_tables = Vec::new();
    for (key, value) in sorted(doc.get_ref()) {
        let name = key.get_ref().as_ref();
        match name {
            "listen" => {
                config.listen = loader.addresses("listen", value)?;
                origins.listen = true;
                origins.listen_at = loader.listed("listen", value);
            }
            "tls" => origins.tls = Some(loader.tls(value)?),
            "acme" => {
                require!(loader, "acme", key, name, "automatic HTTPS (ACME)", REMOVE);
                #[cfg(feature = "acme")]
                {
                    origins.acme = Some(loader.acme(value)?);
                }
            }
            "proxy" => {
                require!(loader, "ops", key, name, PROXY, REMOVE);
                origins.proxy = Some(loader.proxy(value)?)
            }
            "http2" => loader.http2(value, &mut config.http2)?,
            "http3" => {
                // (Without the feature nothing of it is compiled in: the
                // `tls` build's size is held to 2.5 MiB.)
                require!(loader, "http3", key, name, "HTTP/3", REMOVE);
                #[cfg(feature = "http3")]
                {
                    loader.http3(value, &mut config.http3)?;
                    origins.http3 = Some(loader.origin(name, key));
                }
            }
            "workers" => config.workers = loader.integer("workers", value, 0, 1024)? as usize,
            "server_header" => {
                let s = loader.string("server_header", value)?;
                if !grammar::is_field_value(s.as_bytes()) {
                    return Err(loader.fail(
                        value,
                        "server_header",
                        "control characters are not allowed",
                    ));
                }
                config.server_header = s.to_string();
            }
            "daemon" => {
                config.daemon = loader.boolean("daemon", value)?;
                origins.daemon = Some(loader.origin("daemon", value));
            }
            "pid_file" => {
                config.pid_file = Some(loader.path("pid_file", value)?);
                origins.pid_file = Some(loader.origin("pid_file", value));
            }
            "log" => loader.log(value, config, &mut origins)?,
            "limits" => loader.limits(value, config)?,
            "timeouts" => loader.timeouts(value, config)?,
            "user" => {
                config.user = Some(loader.user(value)?);
                origins.user = Some(loader.origin("user", value));
            }
            "group" => {
                config.group = Some(loader.group(value)?);
                origins.group = Some(loader.origin("group", value));
            }
            "chroot" => {
                config.chroot = Some(loader.path("chroot", value)?);
                origins.chroot = Some(loader.origin("chroot", value));
            }
            "allow_root" => config.allow_root = loader.boolean("allow_root", value)?,
            "sandbox" => config.sandbox = loader.boolean("sandbox", value)?,
            "upgrade" => {
                config.upgrade = loader.boolean("upgrade", value)?;
                if config.upgrade {
                    let what = "zero-downtime upgrades";
                    require!(loader, "ops", value, name, what, SET_FALSE);
                }
            }
            "temp_dir" => {
                config.temp_dir = loader.path("temp_dir", value)?;
                origins.temp_dir = Some(loader.origin("temp_dir", value));
            }
            "hosts" => {
                require!(loader, "sites", key, name, VHOSTS, REMOVE);
                config.site.hosts = loader.hosts(value, &[])?
            }
            "unknown_host" => {
                require!(loader, "sites", key, name, VHOSTS, REMOVE);
                config.unknown_host = loader.unknown_host(value)?
            }
            // After the top level: a site starts from the default site's
            // settings, wherever in the file they are.
            "site" | "vhost" => {
                require!(loader, "sites", key, name, VHOSTS, REMOVE);
                site_tables.push((name, value))
            }
            _ if SITE_KEYS.contains(&name) && name != "hosts" => {
                loader.site_key(key, value, &mut config.site, &mut origins.site)?
            }
            _ => return Err(loader.unknown(key, "", &top_keys())),
        }
    }
    for (name, value) in site_tables {
        loader.each_table(name, value, |section, item, table| {
            let site = Loader {
                src,
                prefix: format!("{section}."),
            };
            let mut out = config.site.inherit();
            let mut here = SiteOrigins::default();
            for (key, value) in sorted(table) {
                let k = key.get_ref().as_ref();
                match k {
                    "hosts" => {
                        out.hosts = site.hosts(value, &config.sites)?;
                        if let Some(name) = out.hosts.iter().find(|h| config.site.hosts.contains(h)) {
                            let msg = format!("{name} is already a host of the default site (the top-level hosts)");
                            return Err(site.fail(value, "hosts", &msg));
                        }
                    }
                    _ if SITE_KEYS.contains(&k) => site.site_key(key, value, &mut out, &mut here)?,
                    _ if SERVER_KEYS.contains(&k) => {
                        return Err(site.fail(
                            key,
                            k,
                            "is server-wide: set it at the top level of the file, outside every [[site]]",
                        ))
                    }
                    _ => return Err(site.unknown(key, "", SITE_KEYS)),
                }
            }
            if out.hosts.is_empty() {
                return Err(site.fail(item, "hosts", "missing: a [[site]] answers the host names it lists, such as hosts = [\"example.org\", \"*.example.org\"]"));
            }
            if here.root.is_none() {
                return Err(site.fail(item, "root", "missing: every [[site]] names its own document root"));
            }
            config.sites.push(out);
            origins.sites.push(here);
            Ok(())
        })?;
    }
    Ok(origins)
}

/// `site.toml:3:7: <parser message>`.
fn syntax_error(src: &Source<'_>, e: &toml::de::Error) -> ConfigError {
    let msg = e.message().trim_end();
    let message = match e.span() {
        Some(span) => {
            let (line, col) = line_col(src.text, span.start);
            // The parser says "duplicate key" and points at it: name it.
            let named = match src.text.get(span.clone()) {
                Some(key) if msg.starts_with("duplicate") => {
                    let key = key.trim_matches(|c: char| c == '[' || c == ']' || c.is_whitespace());
                    format!("{msg} \"{key}\" (a key may be set once in a table)")
                }
                _ => msg.to_string(),
            };
            format!("{}:{line}:{col}: {named}", src.name)
        }
        None => format!("{}: {msg}", src.name),
    };
    ConfigError { message }
}

/// 1-based line and column (in characters) of a byte offset.
pub(crate) fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let before = text.get(..offset).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let col = before[line_start..].chars().count() + 1;
    (line, col)
}

/// Entries in file order, so that the first error reported is the first in
/// the file whatever order the map keeps.
pub(super) fn sorted<'t, 'i>(table: &'t DeTable<'i>) -> Vec<Entry<'t, 'i>> {
    let mut entries: Vec<Entry<'t, 'i>> = table.iter().collect();
    crate::sort::sort_by_key(&mut entries, |(k, _)| k.span().start);
    entries
}

/// `"maybe"`, `42`, `an array`: how a value is shown in "got …".
#[cold]
fn describe(v: &DeValue<'_>) -> String {
    match v {
        DeValue::String(s) => format!("{:?}", s.as_ref()),
        DeValue::Integer(i) => format!("{i}"),
        DeValue::Float(f) => format!("{f}"),
        DeValue::Boolean(b) => b.to_string(),
        DeValue::Datetime(_) => "a date-time".to_string(),
        DeValue::Array(_) => "an array".to_string(),
        DeValue::Table(_) => "a table".to_string(),
    }
}

/// Reads the values of one config document into a `Config`, section by
/// section (here and in the section modules); it knows the source, so that
/// every error names the file, the line and the key.
pub(super) struct Loader<'s> {
    pub(super) src: &'s Source<'s>,
    /// Put before every key an error names: `site[2].` inside the second
    /// `[[site]]`, empty at the top level.
    pub(super) prefix: String,
}

impl Loader<'_> {
    /// `site.toml:12`.
    #[inline(never)]
    pub(super) fn at(&self, span: Range<usize>) -> String {
        format!(
            "{}:{}",
            self.src.name,
            line_col(self.src.text, span.start).0
        )
    }

    /// `site.toml:12: key`, for errors found after loading.
    #[inline(never)]
    pub(super) fn origin<T>(&self, key: &str, v: &Spanned<T>) -> String {
        format!("{}: {}{key}", self.at(v.span()), self.prefix)
    }

    /// `site.toml:12: key: msg`.
    #[cold]
    #[inline(never)]
    pub(super) fn fail<T>(&self, v: &Spanned<T>, key: &str, msg: &str) -> ConfigError {
        ConfigError {
            message: format!("{}: {}{key}: {msg}", self.at(v.span()), self.prefix),
        }
    }

    /// `site.toml:12: key: this brisk was built without WHAT (the cargo
    /// feature `FEATURE`); FIX`: see [`require!`](crate::config).
    #[cold]
    #[inline(never)]
    pub(super) fn built_without<T>(
        &self,
        v: &Spanned<T>,
        key: &str,
        what: &str,
        feature: &str,
        fix: &str,
    ) -> ConfigError {
        let msg =
            format!("this brisk was built without {what} (the cargo feature `{feature}`); {fix}");
        self.fail(v, key, &msg)
    }

    /// `site.toml:12: key: expected WHAT; got GOT`.
    #[cold]
    #[inline(never)]
    pub(super) fn expected(&self, v: &Spanned<DeValue<'_>>, key: &str, what: &str) -> ConfigError {
        let msg = format!("expected {what}; got {}", describe(v.get_ref()));
        self.fail(v, key, &msg)
    }

    /// Unknown key under `section` (`""` for the top level), with a hint.
    #[cold]
    #[inline(never)]
    pub(super) fn unknown(
        &self,
        key: &Spanned<DeString<'_>>,
        section: &str,
        allowed: &[&str],
    ) -> ConfigError {
        let name = key.get_ref().as_ref();
        let full = if section.is_empty() {
            format!("{}{name}", self.prefix)
        } else {
            format!("{}{section}.{name}", self.prefix)
        };
        let hint = match units::nearest(name, allowed) {
            Some(n) => format!("did you mean \"{n}\"? "),
            None => String::new(),
        };
        ConfigError {
            message: format!(
                "{}: unknown key \"{full}\"; {hint}expected {}",
                self.at(key.span()),
                units::one_of(allowed)
            ),
        }
    }

    /// Calls `f` for each table of the array of tables `[[key]]`, with
    /// its name for errors (`key[1]`, `key[2]`, …), collecting the results.
    pub(super) fn each_table<'t, 'i, T>(
        &self,
        key: &str,
        v: &'t Spanned<DeValue<'i>>,
        mut f: impl FnMut(&str, &'t Spanned<DeValue<'i>>, &'t DeTable<'i>) -> Result<T, ConfigError>,
    ) -> Result<Vec<T>, ConfigError> {
        let DeValue::Array(items) = v.get_ref() else {
            return Err(self.not_an_array(key, v));
        };
        let mut out = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            let section = format!("{key}[{}]", i + 1);
            let table = self.table(&section, item)?;
            out.push(f(&section, item, table)?);
        }
        Ok(out)
    }

    /// `key` is not an array of tables (`[[key]]`). A table of tables
    /// is what `[[site.access]]` (or `[site.static]`) makes with no
    /// `[[site]]` above it: said so, since "got a table" names a table
    /// the file never wrote.
    #[cold]
    #[inline(never)]
    fn not_an_array(&self, key: &str, v: &Spanned<DeValue<'_>>) -> ConfigError {
        let what = format!("an array of tables ([[{key}]])");
        let DeValue::Table(t) = v.get_ref() else {
            return self.expected(v, key, &what);
        };
        let header = t.iter().find_map(|(name, x)| match x.get_ref() {
            DeValue::Table(_) => Some(format!("[{key}.{}]", name.get_ref().as_ref())),
            DeValue::Array(a) if a.iter().all(|i| matches!(i.get_ref(), DeValue::Table(_))) => {
                Some(format!("[[{key}.{}]]", name.get_ref().as_ref()))
            }
            _ => None,
        });
        match header {
            Some(header) => self.fail(
                v,
                key,
                &format!(
                    "expected {what}; got {header} with no [[{key}]] above it: it belongs to \
                     the [[{key}]] written before it, so write that [[{key}]] first"
                ),
            ),
            None => self.expected(v, key, &what),
        }
    }

    /// Where each table of the array of tables `v` (`[[key]]`) starts,
    /// as `file:line: key[N]`.
    #[cfg(feature = "upstreams")]
    pub(super) fn table_origins(&self, key: &str, v: &Spanned<DeValue<'_>>) -> Vec<String> {
        let DeValue::Array(items) = v.get_ref() else {
            return Vec::new();
        };
        let at = |(i, item)| self.origin(&format!("{key}[{}]", i + 1), item);
        items.iter().enumerate().map(at).collect()
    }

    #[inline(never)]
    pub(super) fn table<'t, 'i>(
        &self,
        key: &str,
        v: &'t Spanned<DeValue<'i>>,
    ) -> Result<&'t DeTable<'i>, ConfigError> {
        v.get_ref()
            .as_table()
            .ok_or_else(|| self.expected(v, key, "a table"))
    }

    #[inline(never)]
    pub(super) fn string<'t>(
        &self,
        key: &str,
        v: &'t Spanned<DeValue<'_>>,
    ) -> Result<&'t str, ConfigError> {
        v.get_ref()
            .as_str()
            .ok_or_else(|| self.expected(v, key, "a string"))
    }

    #[inline(never)]
    pub(super) fn boolean(&self, key: &str, v: &Spanned<DeValue<'_>>) -> Result<bool, ConfigError> {
        v.get_ref()
            .as_bool()
            .ok_or_else(|| self.expected(v, key, "true or false"))
    }

    #[inline(never)]
    pub(super) fn integer(
        &self,
        key: &str,
        v: &Spanned<DeValue<'_>>,
        min: i64,
        max: i64,
    ) -> Result<i64, ConfigError> {
        let what = format!("an integer from {min} to {max}");
        let n = match v.get_ref().as_integer() {
            Some(i) => i64::from_str_radix(i.as_str(), i.radix()).ok(),
            None => return Err(self.expected(v, key, &what)),
        };
        match n {
            Some(n) if (min..=max).contains(&n) => Ok(n),
            _ => Err(self.expected(v, key, &what)),
        }
    }

    /// An integer (bytes) or a size string.
    #[inline(never)]
    pub(super) fn size(
        &self,
        key: &str,
        v: &Spanned<DeValue<'_>>,
        min: u64,
        max: u64,
    ) -> Result<u64, ConfigError> {
        let n = match v.get_ref() {
            DeValue::Integer(i) => u64::from_str_radix(i.as_str(), i.radix()).ok(),
            DeValue::String(s) => units::parse_size(s),
            _ => None,
        };
        match n {
            Some(n) if (min..=max).contains(&n) => Ok(n),
            Some(_) => Err(self.expected(v, key, &format!("a size from {min} to {max} bytes"))),
            None => Err(self.expected(v, key, SIZE_HELP)),
        }
    }

    /// An integer (seconds) or a duration string.
    #[inline(never)]
    pub(super) fn duration(
        &self,
        key: &str,
        v: &Spanned<DeValue<'_>>,
        allow_zero: bool,
    ) -> Result<Duration, ConfigError> {
        let d = match v.get_ref() {
            DeValue::Integer(i) => u64::from_str_radix(i.as_str(), i.radix())
                .ok()
                .map(Duration::from_secs),
            DeValue::String(s) => units::parse_duration(s),
            _ => None,
        };
        match d {
            Some(d) if d > MAX_TIMEOUT => {
                Err(self.expected(v, key, "a duration of at most 24 hours"))
            }
            Some(d) if d.is_zero() && !allow_zero => {
                Err(self.expected(v, key, "a duration greater than zero"))
            }
            Some(d) => Ok(d),
            None => Err(self.expected(v, key, DURATION_HELP)),
        }
    }

    /// One of the `(name, value)` choices.
    pub(super) fn choice<T: Copy>(
        &self,
        key: &str,
        v: &Spanned<DeValue<'_>>,
        choices: &[(&str, T)],
    ) -> Result<T, ConfigError> {
        let names: Vec<&str> = choices.iter().map(|(n, _)| *n).collect();
        let s = v.get_ref().as_str();
        match choices.iter().find(|(n, _)| Some(*n) == s) {
            Some((_, t)) => Ok(*t),
            None => Err(self.expected(v, key, &units::one_of(&names))),
        }
    }

    /// A string, or an array of strings; each with its span.
    #[inline(never)]
    pub(super) fn strings<'t, 'i>(
        &self,
        key: &str,
        v: &'t Spanned<DeValue<'i>>,
    ) -> Result<Vec<(&'t str, &'t Spanned<DeValue<'i>>)>, ConfigError> {
        match v.get_ref() {
            DeValue::String(s) => Ok(vec![(s.as_ref(), v)]),
            DeValue::Array(items) => items
                .iter()
                .map(|item| match item.get_ref() {
                    DeValue::String(s) => Ok((s.as_ref(), item)),
                    _ => Err(self.expected(item, key, "a string")),
                })
                .collect(),
            _ => Err(self.expected(v, key, "a string or an array of strings")),
        }
    }

    /// A path, made absolute against the document's directory.
    #[inline(never)]
    pub(super) fn path(&self, key: &str, v: &Spanned<DeValue<'_>>) -> Result<PathBuf, ConfigError> {
        let s = self.string(key, v)?;
        if s.is_empty() || s.contains('\0') {
            return Err(self.expected(v, key, "a non-empty path"));
        }
        Ok(self.src.base.join(s))
    }

    /// An account: a name, or a numeric id written as a string or as a
    /// bare number (`user = 65534`, as container set-ups write it).
    fn account(&self, key: &str, v: &Spanned<DeValue<'_>>) -> Result<String, ConfigError> {
        match v.get_ref() {
            DeValue::Integer(i) => u64::from_str_radix(i.as_str(), i.radix())
                .map(|n| n.to_string())
                .map_err(|_| self.expected(v, key, "a name or a non-negative numeric id")),
            _ => self.string(key, v).map(str::to_string),
        }
    }

    fn user(&self, v: &Spanned<DeValue<'_>>) -> Result<super::User, ConfigError> {
        let name = self.account("user", v)?;
        super::jail::user(&name).map_err(|e| self.fail(v, "user", &e.to_string()))
    }

    fn group(&self, v: &Spanned<DeValue<'_>>) -> Result<super::Group, ConfigError> {
        let name = self.account("group", v)?;
        super::jail::group(&name).map_err(|e| self.fail(v, "group", &e.to_string()))
    }

    /// A log target; `dash` is what `"-"` means for this log.
    #[inline(never)]
    pub(super) fn target(
        &self,
        key: &str,
        v: &Spanned<DeValue<'_>>,
        dash: LogTarget,
    ) -> Result<LogTarget, ConfigError> {
        Ok(match self.string(key, v)? {
            "-" => dash,
            "off" => LogTarget::Off,
            "stdout" => LogTarget::Stdout,
            "stderr" => LogTarget::Stderr,
            _ => LogTarget::File(self.path(key, v)?),
        })
    }
}
