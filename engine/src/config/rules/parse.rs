//! The parsers of a site's rules: each takes one TOML value, so the
//! same functions read the top level and a `[[site]]`'s tables.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use toml::de::{DeTable, DeValue};
use toml::Spanned;

use super::super::load::{sorted, Loader};
use super::super::ConfigError;
use super::{
    CorsRule, ErrorPage, Origins, Pattern, Piece, Scheme, Target, UrlAction, UrlMatch, UrlRule,
    CORS_KEYS, DEFAULT_CORS_METHODS, REDIRECT_KEYS, REWRITE_KEYS,
};
use crate::http::grammar;

const TARGET_HELP: &str =
    "$1 to $9, $host, $uri, $scheme, $query, $port, $https_port or $$ for a \"$\"";

impl Loader<'_> {
    /// `[[redirect]]` (`action` a redirect) or `[[rewrite]]`.
    pub(in crate::config) fn url_rules(
        &self,
        key: &str,
        v: &Spanned<DeValue<'_>>,
        redirect: bool,
    ) -> Result<Vec<UrlRule>, ConfigError> {
        self.each_table(key, v, |section, item, table| {
            self.url_rule(section, item, table, redirect)
        })
    }

    fn url_rule(
        &self,
        section: &str,
        item: &Spanned<DeValue<'_>>,
        table: &DeTable<'_>,
        redirect: bool,
    ) -> Result<UrlRule, ConfigError> {
        let allowed = if redirect {
            REDIRECT_KEYS
        } else {
            REWRITE_KEYS
        };
        let mut matcher: Option<(UrlMatch, usize)> = None;
        let mut to = None;
        let mut status = 302;
        let mut scheme = None;
        let mut hosts = Vec::new();
        for (key, value) in sorted(table) {
            let name = key.get_ref().as_ref();
            let full = format!("{section}.{name}");
            match name {
                "from" | "exact" | "prefix" => {
                    if matcher.is_some() {
                        return Err(self.fail(key, &full, "give one of from, exact or prefix"));
                    }
                    matcher = Some(self.url_match(name, &full, value)?);
                }
                "to" => to = Some((self.string(&full, value)?, value, full)),
                "status" if redirect => {
                    // (`status = "301"`, a string, is told the same.)
                    status = match self.integer(&full, value, 0, 999).ok() {
                        Some(n @ (301 | 302 | 303 | 307 | 308)) => n as u16,
                        _ => return Err(self.expected(value, &full, "301, 302, 303, 307 or 308")),
                    }
                }
                "scheme" => {
                    let choices = [("http", Scheme::Http), ("https", Scheme::Https)];
                    scheme = Some(self.choice(&full, value, &choices)?);
                }
                "host" => {
                    for (h, item) in self.strings(&full, value)? {
                        let bare = h.strip_prefix("*.").unwrap_or(h);
                        if bare.is_empty()
                            || !bare
                                .bytes()
                                .all(|b| b.is_ascii_alphanumeric() || b"-.:[]".contains(&b))
                        {
                            return Err(self.expected(
                                item,
                                &full,
                                "a host name like \"example.org\" or \"*.example.org\"",
                            ));
                        }
                        hosts.push(h.trim_end_matches('.').to_ascii_lowercase());
                    }
                }
                _ => return Err(self.unknown(key, section, allowed)),
            }
        }
        let Some((matcher, groups)) = matcher else {
            return Err(self.fail(
                item,
                section,
                "needs from = \"^/regex/(.*)$\", exact = \"/path\" or prefix = \"/path/\"",
            ));
        };
        let Some((text, value, full)) = to else {
            return Err(self.fail(item, section, "needs to = \"/new/path\""));
        };
        let to = self.rule_target(text, value, &full, groups, redirect)?;
        Ok(UrlRule {
            matcher,
            to,
            action: match redirect {
                true => UrlAction::Redirect(status),
                false => UrlAction::Rewrite,
            },
            scheme,
            hosts,
            origin: self.at(item.span()),
            at: item.span().start,
        })
    }

    /// A rule's matcher and how many captures it has.
    fn url_match(
        &self,
        name: &str,
        full: &str,
        value: &Spanned<DeValue<'_>>,
    ) -> Result<(UrlMatch, usize), ConfigError> {
        let s = self.string(full, value)?;
        if !grammar::is_field_value(s.as_bytes()) {
            return Err(self.fail(value, full, "control characters are not allowed"));
        }
        if name == "from" {
            return match regex_lite::Regex::new(s) {
                Ok(re) => {
                    let groups = re.captures_len() - 1;
                    Ok((UrlMatch::Regex(Pattern { re }), groups))
                }
                Err(e) => {
                    let why = e.to_string().replace('\n', " ");
                    Err(self.fail(
                        value,
                        full,
                        &format!("not a valid regular expression: {why}"),
                    ))
                }
            };
        }
        if !s.starts_with('/') {
            return Err(self.expected(value, full, "a path starting with \"/\""));
        }
        Ok(match name {
            "exact" => (UrlMatch::Exact(s.to_string()), 0),
            _ => (UrlMatch::Prefix(s.to_string()), 1),
        })
    }

    /// A rule's `to`: a path (or, for a redirect, an absolute URL) with
    /// variables; `groups` is how many captures its matcher has.
    fn rule_target(
        &self,
        text: &str,
        value: &Spanned<DeValue<'_>>,
        full: &str,
        groups: usize,
        redirect: bool,
    ) -> Result<Target, ConfigError> {
        if text.bytes().any(|b| b <= b' ' || b >= 0x7f || b == b'#') {
            return Err(self.fail(
                value,
                full,
                "spaces, control characters, non-ASCII characters and \"#\" are not allowed (percent-encode them: %20, %C3%A9)",
            ));
        }
        let starts_ok = (text.starts_with('/') && !text.starts_with("//"))
            || text.starts_with("$uri")
            || redirect
                && ["http://", "https://", "$scheme://"]
                    .iter()
                    .any(|p| text.starts_with(p));
        if !starts_ok {
            let what = match redirect {
                true => "a path starting with \"/\" or $uri, or an absolute URL (https://…, $scheme://…)",
                false => "a path starting with \"/\" or $uri (a rewrite stays on this server)",
            };
            return Err(self.expected(value, full, what));
        }
        let mut pieces = Vec::new();
        let mut literal = String::new();
        let mut query_from = None;
        let mut rest = text;
        while let Some(c) = rest.chars().next() {
            if c != '$' {
                if c == '?' && query_from.is_none() {
                    literal.push(c);
                    pieces.push(Piece::Literal(std::mem::take(&mut literal)));
                    query_from = Some(pieces.len());
                } else {
                    literal.push(c);
                }
                rest = &rest[c.len_utf8()..];
                continue;
            }
            let after = &rest[1..];
            let (piece, len) = if let Some(d) = after.bytes().next().filter(u8::is_ascii_digit) {
                let n = (d - b'0') as usize;
                if n == 0 || n > groups {
                    let msg = match groups {
                        0 => format!("${n}: this rule's match has no captures"),
                        g => format!("${n}: this rule's match has {g} capture(s): $1 to ${g}"),
                    };
                    return Err(self.fail(value, full, &msg));
                }
                (Some(Piece::Capture(n)), 1)
            } else if after.starts_with('$') {
                literal.push('$');
                (None, 1)
            } else {
                let name: String = after
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                let piece = match name.as_str() {
                    "host" => Piece::Host,
                    "uri" => Piece::Uri,
                    "scheme" => Piece::Scheme,
                    "query" => Piece::Query,
                    "port" => Piece::Port,
                    "https_port" => Piece::HttpsPort,
                    _ => {
                        return Err(self.fail(
                            value,
                            full,
                            &format!("unknown variable ${name}; expected {TARGET_HELP}"),
                        ))
                    }
                };
                (Some(piece), name.len())
            };
            if let Some(p) = piece {
                if !literal.is_empty() {
                    pieces.push(Piece::Literal(std::mem::take(&mut literal)));
                }
                pieces.push(p);
            }
            rest = &after[len..];
        }
        if !literal.is_empty() {
            pieces.push(Piece::Literal(literal));
        }
        Ok(Target {
            pieces,
            query_from,
            text: text.to_string(),
        })
    }

    /// `[errors]`: `404 = "errors/404.html"`, any 4xx or 5xx.
    pub(in crate::config) fn error_pages(
        &self,
        v: &Spanned<DeValue<'_>>,
    ) -> Result<Vec<ErrorPage>, ConfigError> {
        let mut out = Vec::new();
        for (key, value) in sorted(self.table("errors", v)?) {
            let name = key.get_ref().as_ref();
            let full = format!("errors.{name}");
            let status =
                match name.parse::<u16>() {
                    Ok(n) if (400..=599).contains(&n) && name.len() == 3 => n,
                    _ => return Err(self.fail(
                        key,
                        &full,
                        "expected a status from 400 to 599 as the key (404 = \"errors/404.html\")",
                    )),
                };
            let s = self.string(&full, value)?;
            let page = s.trim_start_matches('/');
            let bad = page.is_empty()
                || page.contains('\0')
                || page
                    .split('/')
                    .any(|seg| seg.is_empty() || seg == "." || seg == "..");
            if bad {
                return Err(self.expected(
                    value,
                    &full,
                    "a file under the document root, like \"errors/404.html\" (no \"..\")",
                ));
            }
            out.push(ErrorPage {
                status,
                page: page.to_string(),
                warned: Arc::new(AtomicBool::new(false)),
            });
        }
        Ok(out)
    }

    /// The `[[cors]]` array.
    pub(in crate::config) fn cors_rules(
        &self,
        v: &Spanned<DeValue<'_>>,
    ) -> Result<Vec<CorsRule>, ConfigError> {
        self.each_table("cors", v, |section, item, table| {
            let mut matcher = None;
            let mut origins = None;
            let mut methods = DEFAULT_CORS_METHODS.to_string();
            let mut headers = String::new();
            let mut credentials = None;
            let mut max_age = None;
            let mut expose = String::new();
            for (key, value) in sorted(table) {
                let name = key.get_ref().as_ref();
                let full = format!("{section}.{name}");
                match name {
                    "path" | "pattern" => {
                        self.set_matcher(&mut matcher, key, name, &full, value)?
                    }
                    "origins" => {
                        let list = self.strings(&full, value)?;
                        if list.iter().any(|(s, _)| *s == "*") {
                            if list.len() > 1 {
                                return Err(self.fail(value, &full, "\"*\" stands alone"));
                            }
                            origins = Some(Origins::Any);
                        } else {
                            let mut out = Vec::new();
                            for (s, item) in list {
                                if !is_origin(s) {
                                    return Err(self.expected(
                                        item,
                                        &full,
                                        "\"*\" or origins like \"https://example.org\" or \"http://localhost:3000\" (scheme://host[:port], no path)",
                                    ));
                                }
                                out.push(s.to_string());
                            }
                            origins = Some(Origins::List(out));
                        }
                    }
                    "methods" => methods = self.token_list(&full, value, false)?,
                    "headers" => headers = self.token_list(&full, value, true)?,
                    "expose_headers" => expose = self.token_list(&full, value, true)?,
                    "credentials" => credentials = Some((self.boolean(&full, value)?, key)),
                    "max_age" => {
                        max_age = Some(self.integer(&full, value, 0, 86400 * 7)? as u64);
                    }
                    _ => return Err(self.unknown(key, section, CORS_KEYS)),
                }
            }
            let matcher = self.required_matcher(matcher, item, section)?;
            let Some(origins) = origins else {
                return Err(self.fail(
                    item,
                    section,
                    "needs origins = [\"*\"] or a list like [\"https://example.org\"]",
                ));
            };
            let credentials = match credentials {
                Some((true, key)) if origins == Origins::Any => {
                    return Err(self.fail(
                        key,
                        &format!("{section}.credentials"),
                        "credentials = true needs a list of origins: the Fetch standard refuses \"Access-Control-Allow-Origin: *\" with credentials, and echoing any origin would let every site read credentialed answers",
                    ));
                }
                Some((c, _)) => c,
                None => false,
            };
            if credentials && (headers == "*" || expose == "*" || methods == "*") {
                return Err(self.fail(
                    item,
                    section,
                    "\"*\" in methods, headers or expose_headers is not a wildcard with credentials = true (Fetch standard): list the names",
                ));
            }
            Ok(CorsRule {
                matcher,
                origins,
                methods,
                headers,
                credentials,
                max_age,
                expose,
            })
        })
    }

    /// A list of methods or header names (`*` alone allowed where
    /// `star`), joined with `", "` as the header value.
    fn token_list(
        &self,
        full: &str,
        v: &Spanned<DeValue<'_>>,
        star: bool,
    ) -> Result<String, ConfigError> {
        let list = self.strings(full, v)?;
        let mut out = String::new();
        for (s, item) in list {
            if !(grammar::is_token(s.as_bytes()) || star && s == "*") {
                return Err(self.expected(
                    item,
                    full,
                    "names like \"GET\" or \"Content-Type\" (HTTP tokens)",
                ));
            }
            if !out.is_empty() {
                out.push_str(", ");
            }
            out.push_str(s);
        }
        Ok(out)
    }
}

impl Loader<'_> {
    /// `[static] spa = "index.html"` (one file) or `try_files = ["$uri.html",
    /// "/index.html"]`: paths under the root, `$uri` for the request's.
    pub(in crate::config) fn fallbacks(
        &self,
        full: &str,
        v: &Spanned<DeValue<'_>>,
    ) -> Result<Vec<String>, ConfigError> {
        let spa = full.ends_with(".spa");
        if spa && !matches!(v.get_ref(), DeValue::String(_)) {
            return Err(self.expected(v, full, "a file under the root, like \"index.html\""));
        }
        let mut out = Vec::new();
        for (s, item) in self.strings(full, v)? {
            let path = match s.starts_with('/') || s.starts_with("$uri") {
                true => s.to_string(),
                false => format!("/{s}"),
            };
            let bad = path.contains(['\0', '?', '#'])
                || path.bytes().any(|b| b < b' ' || b == 0x7f)
                || path.split('/').any(|seg| seg == "." || seg == "..")
                || path.replace("$uri", "").contains('$');
            if bad {
                return Err(self.expected(
                    item,
                    full,
                    "paths under the root like \"/index.html\" or \"$uri.html\" ($uri is the request's path; no \"..\", \"?\")",
                ));
            }
            out.push(path);
        }
        if out.is_empty() {
            return Err(self.expected(v, full, "at least one path"));
        }
        Ok(out)
    }

    /// File extensions, without the dot; stored lower case.
    pub(in crate::config) fn extensions(
        &self,
        full: &str,
        v: &Spanned<DeValue<'_>>,
    ) -> Result<Vec<String>, ConfigError> {
        let mut out = Vec::new();
        for (s, item) in self.strings(full, v)? {
            let e = s.strip_prefix('.').unwrap_or(s);
            if e.is_empty()
                || !e
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
            {
                return Err(self.expected(item, full, "extensions like \"js\" or \"css\""));
            }
            out.push(e.to_ascii_lowercase());
        }
        Ok(out)
    }
}

/// `scheme://host[:port]` as browsers send in `Origin` (or `null`).
fn is_origin(s: &str) -> bool {
    if s == "null" {
        return true;
    }
    let Some((scheme, rest)) = s.split_once("://") else {
        return false;
    };
    !scheme.is_empty()
        && scheme
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"+-.".contains(&b))
        && !rest.is_empty()
        && rest
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-.:[]".contains(&b))
}
