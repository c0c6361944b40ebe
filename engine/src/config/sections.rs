//! The sections of the document (`[log]`, `[static]`, `[limits]`,
//! `[timeouts]`, `[mime]`, `[[headers]]`), each checked key by key with the
//! primitives of [`super::load`]. `[[cgi]]` is in [`super::cgi`], `[[auth]]`
//! in [`super::auth`].

use crate::ascii::IgnoreCase;
use toml::de::{DeString, DeTable, DeValue};
use toml::Spanned;

use super::load::{sorted, Loader, Origins, SiteOrigins, REMOVE};

/// `[static] spa`, `try_files` and `fallback_exclude`, as a build without
/// the cargo feature `sites` names them when it refuses them.
const FALLBACKS: &str = "fallback pages (spa, try_files)";
use super::units;
use super::{
    AccessFormat, Config, ConfigError, Dotfiles, HeaderRule, Level, LogField, LogPiece, LogTarget,
    LogVar, PathMatch, SiteConfig,
};
use crate::http::grammar;

pub(super) const LOG_KEYS: &[&str] = &["access", "format", "fields", "level", "error"];
pub(super) const STATIC_KEYS: &[&str] = &[
    "index",
    "autoindex",
    "autoindex_max_entries",
    "dotfiles",
    "query_in_filename",
    "precompressed",
    "symlinks_outside_root",
    "open_file_cache",
    "open_file_cache_valid",
    "default_type",
    "mime_types",
    "sendfile",
    "spa",
    "try_files",
    "fallback_exclude",
    "sniff",
];
pub(super) const LIMIT_KEYS: &[&str] = &[
    "max_request_line",
    "max_header_bytes",
    "max_headers",
    "max_body",
    "keepalive_requests",
    "max_connections",
    "max_connections_per_ip",
    "cgi_processes",
    "cgi_header_bytes",
    "handler_bodies",
    "auth_failures",
];
pub(super) const TIMEOUT_KEYS: &[&str] = &[
    "header",
    "keepalive",
    "send",
    "body",
    "shutdown",
    "reload_drain",
    "cgi",
    "handler",
    "auth_failure_window",
    "defer_accept",
    "stop_delay",
];
pub(super) const HEADER_RULE_KEYS: &[&str] = &["path", "pattern", "set"];

impl Loader<'_> {
    pub(super) fn log(
        &self,
        v: &Spanned<DeValue<'_>>,
        config: &mut Config,
        origins: &mut Origins,
    ) -> Result<(), ConfigError> {
        let log = &mut config.log;
        for (key, value) in sorted(self.table("log", v)?) {
            match key.get_ref().as_ref() {
                "access" => {
                    log.access = self.target("log.access", value, LogTarget::Stdout)?;
                    origins.access = Some(self.origin("log.access", value));
                }
                "error" => {
                    log.error = self.target("log.error", value, LogTarget::Stderr)?;
                    origins.error = Some(self.origin("log.error", value));
                }
                "format" => match value.get_ref() {
                    DeValue::String(s) if s.contains('$') => {
                        log.template = self.log_template(value, s)?;
                        log.format = AccessFormat::Custom;
                    }
                    _ => {
                        let formats = AccessFormat::ALL.map(|f| (f.as_str(), f));
                        log.format = self.choice("log.format", value, &formats).map_err(|mut e| {
                            e.message = e.message.replacen(
                                "; got",
                                ", or a line of your own with $variables (such as \"$remote_addr [$time_local] \\\"$request\\\" $status $body_bytes_sent\"); got",
                                1,
                            );
                            e
                        })?;
                        log.template.clear();
                    }
                },
                "level" => {
                    let levels = Level::ALL.map(|l| (l.as_str(), l));
                    log.level = self.choice("log.level", value, &levels)?;
                }
                "fields" => {
                    let names = LogField::ALL.map(|f| (f.as_str(), f));
                    log.fields.clear();
                    for (_, item) in self.strings("log.fields", value)? {
                        let field = self.choice("log.fields", item, &names)?;
                        if log.fields.contains(&field) {
                            let twice = format!("{} is listed twice", field.as_str());
                            return Err(self.fail(item, "log.fields", &twice));
                        }
                        log.fields.push(field);
                    }
                }
                _ => return Err(self.unknown(key, "log", LOG_KEYS)),
            }
        }
        Ok(())
    }

    pub(super) fn static_section(
        &self,
        v: &Spanned<DeValue<'_>>,
        site: &mut SiteConfig,
        origins: &mut SiteOrigins,
    ) -> Result<(), ConfigError> {
        let st = &mut site.static_files;
        // (A site's [static] may replace the fallback it inherited.)
        let mut fallback_given = false;
        for (key, value) in sorted(self.table("static", v)?) {
            match key.get_ref().as_ref() {
                "index" => {
                    let mut names = Vec::new();
                    for (s, item) in self.strings("static.index", value)? {
                        if s.is_empty() || s == "." || s == ".." || s.contains(['/', '\0']) {
                            return Err(self.expected(
                                item,
                                "static.index",
                                "a plain file name (no \"/\")",
                            ));
                        }
                        names.push(s.to_string());
                    }
                    st.index = names;
                }
                "autoindex" => st.autoindex = self.boolean("static.autoindex", value)?,
                "autoindex_max_entries" => {
                    st.autoindex_max_entries =
                        self.integer("static.autoindex_max_entries", value, 0, 100_000_000)?
                            as usize;
                }
                "dotfiles" => {
                    let choices = [
                        ("deny", Dotfiles::Deny),
                        ("ignore", Dotfiles::Ignore),
                        ("allow", Dotfiles::Allow),
                    ];
                    st.dotfiles = self.choice("static.dotfiles", value, &choices)?;
                }
                "query_in_filename" => {
                    let mut prefixes = Vec::new();
                    for (s, item) in self.strings("static.query_in_filename", value)? {
                        if !s.starts_with('/') {
                            return Err(self.expected(
                                item,
                                "static.query_in_filename",
                                "a URL prefix starting with \"/\"",
                            ));
                        }
                        prefixes.push(s.to_string());
                    }
                    st.query_in_filename = prefixes;
                }
                "precompressed" => {
                    st.precompressed = self.boolean("static.precompressed", value)?
                }
                "symlinks_outside_root" => {
                    st.symlinks_outside_root =
                        self.boolean("static.symlinks_outside_root", value)?;
                    origins.symlinks = Some(self.origin("static.symlinks_outside_root", value));
                }
                "open_file_cache" => {
                    st.open_file_cache =
                        self.integer("static.open_file_cache", value, 0, 1_000_000)? as usize;
                }
                "open_file_cache_valid" => {
                    st.open_file_cache_valid =
                        self.duration("static.open_file_cache_valid", value, true)?;
                }
                "sendfile" => st.sendfile = self.boolean("static.sendfile", value)?,
                "spa" | "try_files" => {
                    let full = format!("static.{}", key.get_ref().as_ref());
                    require!(self, "sites", key, &full, FALLBACKS, REMOVE);
                    if std::mem::replace(&mut fallback_given, true) {
                        return Err(self.fail(
                            key,
                            &full,
                            "give either spa or try_files, not both",
                        ));
                    }
                    st.try_files = self.fallbacks(&full, value)?;
                }
                "fallback_exclude" => {
                    require!(
                        self,
                        "sites",
                        key,
                        "static.fallback_exclude",
                        FALLBACKS,
                        REMOVE
                    );
                    st.fallback_exclude = self.extensions("static.fallback_exclude", value)?
                }
                "sniff" => st.sniff = self.boolean("static.sniff", value)?,
                "default_type" => {
                    let ty = self.string("static.default_type", value)?;
                    if !units::is_media_type(ty) {
                        return Err(self.expected(
                            value,
                            "static.default_type",
                            "a media type like \"text/plain\" or \"text/plain; charset=utf-8\"",
                        ));
                    }
                    st.default_type = ty.to_string();
                }
                "mime_types" => {
                    let key = "static.mime_types";
                    let path = self.path(key, value)?;
                    // A reload inside the sandbox can read only what it
                    // allowed at start.
                    if let Some(readable) = self.src.readable {
                        readable(&path).map_err(|e| self.fail(value, key, &e.to_string()))?;
                    }
                    let types = super::mime_types::read(&path).map_err(|e| {
                        if e.denied() && self.src.readable.is_some() {
                            // Landlock allows the file that was there at
                            // start, not one renamed over it since.
                            let hint = "; with the sandbox on, a mime_types file replaced since start (as by a package upgrade) can only be read after a restart";
                            self.fail(value, key, &format!("{e}{hint}"))
                        } else {
                            self.fail(value, key, &e.to_string())
                        }
                    })?;
                    st.mime_types = Some(super::MimeTypesFile { path, types });
                }
                _ => return Err(self.unknown(key, "static", STATIC_KEYS)),
            }
        }
        Ok(())
    }

    pub(super) fn limits(
        &self,
        v: &Spanned<DeValue<'_>>,
        config: &mut Config,
    ) -> Result<(), ConfigError> {
        const MIB: u64 = 1 << 20;
        let l = &mut config.limits;
        for (key, value) in sorted(self.table("limits", v)?) {
            let name = key.get_ref().as_ref();
            let full = format!("limits.{name}");
            match name {
                "max_request_line" => {
                    l.max_request_line = self.size(&full, value, 16, MIB)? as usize
                }
                "max_header_bytes" => {
                    l.max_header_bytes = self.size(&full, value, 64, 16 * MIB)? as usize
                }
                "max_headers" => l.max_headers = self.integer(&full, value, 1, 10_000)? as usize,
                "max_body" => l.max_body = self.size(&full, value, 0, u64::MAX)?,
                "keepalive_requests" => {
                    l.keepalive_requests =
                        self.integer(&full, value, 1, i64::from(u32::MAX))? as u32;
                }
                "max_connections" => {
                    l.max_connections = self.integer(&full, value, 1, 1_000_000)? as usize
                }
                "max_connections_per_ip" => {
                    l.max_connections_per_ip = self.integer(&full, value, 0, 1_000_000)? as u32
                }
                "cgi_processes" => {
                    l.cgi_processes = self.integer(&full, value, 1, 100_000)? as usize
                }
                "cgi_header_bytes" => {
                    l.cgi_header_bytes = self.size(&full, value, 256, 16 * MIB)? as usize
                }
                "handler_bodies" => l.handler_bodies = self.size(&full, value, 0, u64::MAX)?,
                // 0 turns the limit off.
                "auth_failures" => {
                    l.auth_failures = self.integer(&full, value, 0, 1_000_000)? as u32
                }
                _ => return Err(self.unknown(key, "limits", LIMIT_KEYS)),
            }
        }
        Ok(())
    }

    pub(super) fn timeouts(
        &self,
        v: &Spanned<DeValue<'_>>,
        config: &mut Config,
    ) -> Result<(), ConfigError> {
        let t = &mut config.timeouts;
        for (key, value) in sorted(self.table("timeouts", v)?) {
            let name = key.get_ref().as_ref();
            let full = format!("timeouts.{name}");
            match name {
                "header" => t.header = self.duration(&full, value, false)?,
                "keepalive" => t.keepalive = self.duration(&full, value, false)?,
                "send" => t.send = self.duration(&full, value, false)?,
                "body" => t.body = self.duration(&full, value, false)?,
                // Zero is meaningful here: stop at once, abandoning responses.
                "shutdown" => t.shutdown = self.duration(&full, value, true)?,
                // Zero: the previous workers stop at once, as at shutdown
                // with `shutdown = 0`.
                "reload_drain" => t.reload_drain = Some(self.duration(&full, value, true)?),
                "cgi" => t.cgi = self.duration(&full, value, false)?,
                "handler" => t.handler = self.duration(&full, value, false)?,
                "auth_failure_window" => {
                    t.auth_failure_window = self.duration(&full, value, false)?
                }
                // Zero is meaningful here: no deferral.
                "defer_accept" => t.defer_accept = self.duration(&full, value, true)?,
                // Zero: the drain starts at SIGTERM.
                "stop_delay" => t.stop_delay = self.duration(&full, value, true)?,
                _ => return Err(self.unknown(key, "timeouts", TIMEOUT_KEYS)),
            }
        }
        Ok(())
    }

    pub(super) fn mime(
        &self,
        v: &Spanned<DeValue<'_>>,
    ) -> Result<Vec<(String, String)>, ConfigError> {
        let mut out: Vec<(String, String)> = Vec::new();
        for (key, value) in sorted(self.table("mime", v)?) {
            let ext = key.get_ref().as_ref();
            let full = format!("mime.{ext}");
            if ext.is_empty()
                || ext.contains(['.', '/', '\\'])
                || !grammar::is_field_value(ext.as_bytes())
            {
                return Err(self.fail(
                    key,
                    &full,
                    "expected a file extension without \".\" or \"/\", like html",
                ));
            }
            let ty = self.string(&full, value)?;
            if !units::is_media_type(ty) {
                return Err(self.expected(
                    value,
                    &full,
                    "a media type like \"text/html\" or \"text/plain; charset=utf-8\"",
                ));
            }
            let ext = ext.to_ascii_lowercase();
            if out.iter().any(|(e, _)| *e == ext) {
                return Err(self.fail(
                    key,
                    &full,
                    "this extension is listed twice (extensions are case-insensitive)",
                ));
            }
            out.push((ext, ty.to_string()));
        }
        Ok(out)
    }

    pub(super) fn headers(&self, v: &Spanned<DeValue<'_>>) -> Result<Vec<HeaderRule>, ConfigError> {
        self.each_table("headers", v, |section, item, table| {
            self.header_rule(section, item, table)
        })
    }

    fn header_rule(
        &self,
        section: &str,
        item: &Spanned<DeValue<'_>>,
        table: &DeTable<'_>,
    ) -> Result<HeaderRule, ConfigError> {
        let mut matcher = None;
        let mut set = None;
        for (key, value) in sorted(table) {
            let name = key.get_ref().as_ref();
            let full = format!("{section}.{name}");
            match name {
                "path" | "pattern" => self.set_matcher(&mut matcher, key, name, &full, value)?,
                "set" => {
                    // (`Server` is written as the answer leaves, as
                    // `Date` is: a rule's would be a second one. Handlers
                    // are refused it too.)
                    let why = "Content-Length, Transfer-Encoding, Connection, Date and Server are set by the server and cannot be configured (Server is server_header = \"...\", \"\" for none)";
                    let refused = [units::FRAMING_HEADERS, &["server"]].concat();
                    set = Some(self.header_set(&full, value, &refused, why)?)
                }
                _ => return Err(self.unknown(key, section, HEADER_RULE_KEYS)),
            }
        }
        let matcher = self.required_matcher(matcher, item, section)?;
        let set = set.ok_or_else(|| {
            self.fail(item, section, "needs set = { \"Header-Name\" = \"value\" }")
        })?;
        Ok(HeaderRule { matcher, set })
    }

    /// Records a rule's `path` or `pattern` key in `matcher`; a rule may
    /// have only one of them.
    pub(super) fn set_matcher(
        &self,
        matcher: &mut Option<PathMatch>,
        key: &Spanned<DeString<'_>>,
        name: &str,
        full: &str,
        value: &Spanned<DeValue<'_>>,
    ) -> Result<(), ConfigError> {
        if matcher.is_some() {
            return Err(self.fail(key, full, "give either path or pattern, not both"));
        }
        *matcher = Some(self.path_match(name, full, value)?);
        Ok(())
    }

    /// The rule's matcher, or the error for a rule that has neither
    /// `path` nor `pattern`.
    pub(super) fn required_matcher<T>(
        &self,
        matcher: Option<PathMatch>,
        item: &Spanned<T>,
        section: &str,
    ) -> Result<PathMatch, ConfigError> {
        matcher.ok_or_else(|| {
            self.fail(
                item,
                section,
                "needs path = \"/prefix/\" or pattern = \"*.ext\"",
            )
        })
    }

    /// `path = "/prefix/"` (`name` is "path") or `pattern = "*.ext"`, as
    /// `[[headers]]`, `[[auth]]` and `[[throttle]]` take them.
    pub(super) fn path_match(
        &self,
        name: &str,
        full: &str,
        value: &Spanned<DeValue<'_>>,
    ) -> Result<PathMatch, ConfigError> {
        let s = self.string(full, value)?;
        if !grammar::is_field_value(s.as_bytes()) {
            return Err(self.fail(value, full, "control characters are not allowed"));
        }
        if name == "path" {
            if !s.starts_with('/') {
                return Err(self.expected(value, full, "a URL prefix starting with \"/\""));
            }
            return Ok(PathMatch::Prefix(s.to_string()));
        }
        if s.is_empty() || (s.contains('/') && !s.starts_with('/')) {
            return Err(self.expected(
                value,
                full,
                "a glob like \"*.css\" (last segment) or \"/assets/*.css\" (whole path)",
            ));
        }
        Ok(PathMatch::Glob(s.to_string()))
    }

    /// `set = { "Name" = "value" }`: at least one field, names tokens
    /// (none twice, none of `refused`, lower case, which `why` explains),
    /// values field values.
    pub(super) fn header_set(
        &self,
        full: &str,
        v: &Spanned<DeValue<'_>>,
        refused: &[&str],
        why: &str,
    ) -> Result<Vec<(String, String)>, ConfigError> {
        let entries = sorted(self.table(full, v)?);
        if entries.is_empty() {
            return Err(self.fail(v, full, "expected at least one header"));
        }
        let mut out: Vec<(String, String)> = Vec::with_capacity(entries.len());
        for (key, value) in entries {
            let name = key.get_ref().as_ref();
            let key_name = format!("{full}.{name:?}");
            if !grammar::is_token(name.as_bytes()) {
                return Err(self.fail(
                    key,
                    &key_name,
                    "not a valid header name (letters, digits and !#$%&'*+-.^_`|~ only)",
                ));
            }
            if refused.iter().any(|h| h.eq_ignore_case(name)) {
                return Err(self.fail(key, &key_name, why));
            }
            if out.iter().any(|(n, _)| n.eq_ignore_case(name)) {
                return Err(self.fail(
                    key,
                    &key_name,
                    "this header is set twice (names are case-insensitive)",
                ));
            }
            let s = self.string(&key_name, value)?;
            if !grammar::is_field_value(s.as_bytes()) {
                return Err(self.fail(
                    value,
                    &key_name,
                    "control characters (CR, LF, NUL…) are not allowed in a header value",
                ));
            }
            out.push((name.to_string(), s.to_string()));
        }
        Ok(out)
    }
}

impl Loader<'_> {
    /// A user-defined access-log line (`[log] format` with `$variables`,
    /// or `${variable}` where a name character follows): its pieces.
    /// `$$` is a `$`. Each of the values known only once the answer has
    /// left or ended (`$body_bytes_sent`, `$request_time` or
    /// `$duration_us`, and `$upstream_response_time`) may appear once.
    fn log_template(
        &self,
        v: &Spanned<DeValue<'_>>,
        text: &str,
    ) -> Result<Vec<LogPiece>, ConfigError> {
        let key = "log.format";
        let mut pieces = Vec::new();
        let mut literal = String::new();
        let mut rest = text;
        while let Some(i) = rest.find('$') {
            literal.push_str(&rest[..i]);
            rest = &rest[i + 1..];
            if let Some(after) = rest.strip_prefix('$') {
                literal.push('$');
                rest = after;
                continue;
            }
            let (name, after) = match rest.strip_prefix('{') {
                Some(braced) => match braced.split_once('}') {
                    Some((name, after)) => (name, after),
                    None => return Err(self.fail(v, key, "a ${ without its }")),
                },
                None => {
                    let end = rest
                        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                        .unwrap_or(rest.len());
                    (&rest[..end], &rest[end..])
                }
            };
            let Some(&(_, var)) = LogVar::ALL.iter().find(|(n, _)| *n == name) else {
                let names: Vec<String> = LogVar::ALL.iter().map(|(n, _)| format!("${n}")).collect();
                let msg = format!(
                    "unknown variable ${name}; expected {}, or $$ for a \"$\"",
                    names.join(", ")
                );
                return Err(self.fail(v, key, &msg));
            };
            let hole = |p: &LogPiece| match p {
                LogPiece::Var(LogVar::BodyBytesSent) => Some(0),
                LogPiece::Var(LogVar::RequestTime | LogVar::DurationUs) => Some(1),
                LogPiece::Var(LogVar::UpstreamResponseTime) => Some(2),
                _ => None,
            };
            let this = LogPiece::Var(var);
            if hole(&this).is_some() && pieces.iter().any(|p| hole(p) == hole(&this)) {
                let msg = format!("${name}: $body_bytes_sent, one of $request_time and $duration_us, and $upstream_response_time may each appear once");
                return Err(self.fail(v, key, &msg));
            }
            if !literal.is_empty() {
                pieces.push(LogPiece::Text(std::mem::take(&mut literal)));
            }
            pieces.push(this);
            rest = after;
        }
        literal.push_str(rest);
        if !literal.is_empty() {
            pieces.push(LogPiece::Text(literal));
        }
        if text.contains(['\n', '\r']) {
            return Err(self.fail(v, key, "a line of the access log cannot hold a line break"));
        }
        Ok(pieces)
    }
}
